/*
 * test_standalone.c - STEPSCOPE_OUT without `stepscope run`
 * (render/standalone_out.c): the directory never holds a report.json
 * beside another run's HTML, CSV or trace; two processes reporting into one
 * directory both keep their reports; a `stepscope run` directory's report
 * is left to it; one stderr line says where the report went; markers
 * planted by another user, or links at their names, change nothing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"
#include "support.h"

#define WORKLOAD SPS_BIN_DIR "/test_workload"

static char base[600];

static int exists(const char *dir, const char *name) {
    char p[900];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* The step count of DIR/NAME (a report), -1 when it cannot be read. */
static int steps_in(const char *dir, const char *name) {
    char p[900], tmp[900];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    /* report_load takes a directory: give it one holding this file */
    snprintf(tmp, sizeof tmp, "%s/one-%s", base, name);
    mkdir(tmp, 0777);
    char q[1000];
    snprintf(q, sizeof q, "%s/report.json", tmp);
    unlink(q);
    if (link(p, q) != 0)
        return -1;
    json_t *r = report_load(tmp);
    int n = r ? (int)json_num(report_find(r, "zones", "step"), "count") : -1;
    json_decref(r);
    return n;
}

/* The one report-<pid>.json in dir ("" when none or several). */
static void per_process_report(const char *dir, char *name, size_t cap) {
    name[0] = '\0';
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, "report-", 7) == 0 && strstr(e->d_name, ".json")) {
            snprintf(name, cap, "%s", e->d_name);
            n++;
        }
    if (d)
        closedir(d);
    if (n != 1)
        name[0] = '\0';
}

static int run_alone(const char *dir, const char *steps, char *err, size_t errlen) {
    setenv("STEPSCOPE_OUT", dir, 1);
    char *argv[] = {WORKLOAD, "--steps", (char *)steps, NULL};
    int st = run_capture(argv, err, errlen);
    unsetenv("STEPSCOPE_OUT");
    return exit_code_of(st);
}

/* An earlier run's report.html, CSV and trace go when a standalone run
 * writes its report.json there: they described the other run. */
static void test_earlier_exports_are_removed(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/stale", base);
    mkdir(dir, 0777);
    static const char *const old[] = {"report.html", "steps.csv", "timeline.csv", "trace.json"};
    char p[900];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, old[i]);
        write_file(p, "old run\n", 8);
    }
    snprintf(p, sizeof p, "%s/notes.txt", dir); /* not ours: stays */
    write_file(p, "mine\n", 5);
    char err[2048];
    CHECK_EQ_I(run_alone(dir, "3", err, sizeof err), 0);
    for (int i = 0; i < 4; i++)
        CHECK_MSG(!exists(dir, old[i]), "%s is still there", old[i]);
    CHECK(exists(dir, "notes.txt"));
    CHECK_EQ_I(steps_in(dir, "report.json"), 3);
    char want[1024];
    snprintf(want, sizeof want, "stepscope: report written to %s/report.json (`stepscope report %s` makes HTML", dir,
             dir);
    CHECK_STR_HAS(err, want);
    CHECK_EQ_I(count_lines(err), 1);
}

/* STEPSCOPE_OUT whose parents do not exist yet gets them, as run -o
 * does; one that cannot be made says so at exit, in one line, and the
 * workload still runs to its end.  A relative one is made absolute when
 * claimed (the stderr line names the absolute path). */
static void test_directory_made_or_said(void) {
    char dir[800], err[2048];
    snprintf(dir, sizeof dir, "%s/deep/er/run", base);
    CHECK_EQ_I(run_alone(dir, "2", err, sizeof err), 0);
    CHECK_EQ_I(steps_in(dir, "report.json"), 2);
    char file[800];
    snprintf(file, sizeof file, "%s/a-file", base);
    write_file(file, "x", 1);
    snprintf(dir, sizeof dir, "%s/a-file/sub", base);
    CHECK_EQ_I(run_alone(dir, "2", err, sizeof err), 0);
    CHECK_STR_HAS(err, "stepscope: report not written: cannot use STEPSCOPE_OUT ");
    CHECK_STR_HAS(err, "a-file/sub: Not a directory");
    CHECK_EQ_I(count_lines(err), 1);
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(base) == 0);
    CHECK_EQ_I(run_alone("relative", "2", err, sizeof err), 0);
    CHECK(chdir(cwd) == 0);
    char want[1024];
    snprintf(want, sizeof want, "report written to %s/relative/report.json", base);
    CHECK_STR_HAS(err, want);
}

/* A while B runs in the same directory: A keeps report.json, B writes
 * report-<pid>.json and says why. */
static void test_two_processes_keep_both_reports(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/shared", base);
    int ready[2], go[2];
    CHECK(pipe(ready) == 0 && pipe(go) == 0);
    char fds[32];
    snprintf(fds, sizeof fds, "%d,%d", ready[1], go[0]);
    setenv("STEPSCOPE_OUT", dir, 1);
    char a_err[800];
    snprintf(a_err, sizeof a_err, "%s/a-stderr.txt", base);
    pid_t a = fork();
    if (a == 0) {
        close(ready[0]);
        close(go[1]);
        int fd = open(a_err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        char *argv[] = {WORKLOAD, "--steps", "3", "--handshake", fds, NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    unsetenv("STEPSCOPE_OUT");
    close(ready[1]);
    close(go[0]);
    char b;
    CHECK(read(ready[0], &b, 1) == 1); /* A has recorded: it owns the directory */
    close(ready[0]);

    char err[2048];
    CHECK_EQ_I(run_alone(dir, "5", err, sizeof err), 0); /* B, while A waits */
    close(go[1]);
    int st;
    CHECK(waitpid(a, &st, 0) == a && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    char name[256];
    per_process_report(dir, name, sizeof name);
    CHECK_MSG(name[0], "one report-<pid>.json in %s", dir);
    CHECK_EQ_I(steps_in(dir, "report.json"), 3); /* A's */
    if (name[0])
        CHECK_EQ_I(steps_in(dir, name), 5); /* B's */
    char want[256];
    snprintf(want, sizeof want, "another running process (pid %d) reports into this directory too", (int)a);
    CHECK_STR_HAS(err, want);
    CHECK_STR_HAS(err, name);
    CHECK_EQ_I(count_lines(err), 1);
    char a_line[1024];
    read_file(a_err, a_line, sizeof a_line);
    snprintf(want, sizeof want, "stepscope: report written to %s/report.json (", dir);
    CHECK_STR_HAS(a_line, want);
    /* both owners' markers are gone */
    CHECK_EQ_I(files_named(dir, ".owner-"), 0);
}

/* A `stepscope run` directory: its report.json goes with its records/,
 * so a standalone process there writes report-<pid>.json. */
static void test_run_directory_keeps_its_report(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/run-dir", base);
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", dir, "--", WORKLOAD, "--steps", "2", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    char err[2048];
    CHECK_EQ_I(run_alone(dir, "4", err, sizeof err), 0);
    CHECK_EQ_I(steps_in(dir, "report.json"), 2);
    CHECK(exists(dir, "report.html")); /* the run's files stay with it */
    char name[256];
    per_process_report(dir, name, sizeof name);
    CHECK(name[0] != '\0');
    if (name[0])
        CHECK_EQ_I(steps_in(dir, name), 4);
    CHECK_STR_HAS(err, "belongs to the `stepscope run` whose records/ are there");
}

/* The marker of an owner that died without removing it neither blocks
 * report.json nor stays. */
static void test_dead_owner_marker(void) {
    char dir[700], marker[800];
    snprintf(dir, sizeof dir, "%s/dead-owner", base);
    mkdir(dir, 0777);
    /* a pid that is not running (pid_max is at most 2^22) */
    snprintf(marker, sizeof marker, "%s/.owner-%d-%llu", dir, 4194304 + 7, 12345ull);
    write_file(marker, "", 0);
    char err[2048];
    CHECK_EQ_I(run_alone(dir, "2", err, sizeof err), 0);
    CHECK_EQ_I(steps_in(dir, "report.json"), 2);
    CHECK(access(marker, F_OK) != 0);
}

/* A link at dir/name to victim, as any user who can write into dir can
 * plant. */
static void plant(const char *dir, const char *name, const char *victim) {
    char p[900];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    CHECK(symlink(victim, p) == 0);
}

/* An empty regular file at dir/name owned by nobody (root only). */
static void plant_foreign_file(const char *dir, const char *name) {
    char p[900];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    write_file(p, "", 0);
    CHECK(chown(p, 65534, 65534) == 0);
}

/* Markers planted in a shared STEPSCOPE_OUT before the process starts, by
 * another user or as links: one at an ancestor's name (this test is the
 * workload's parent), one at a running stranger's name.  Neither is this
 * user's marker: the report is report.json, and nothing planted is
 * followed. */
static void test_planted_markers_do_not_suppress(void) {
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t stranger = fork();
    if (stranger == 0) { /* a running process that is no ancestor */
        struct sps_process_id id = sps__platform_self();
        if (write(pipefd[1], &id, sizeof id) != (ssize_t)sizeof id)
            _exit(1);
        pause();
        _exit(0);
    }
    close(pipefd[1]);
    struct sps_process_id other, self = sps__platform_self();
    CHECK(read(pipefd[0], &other, sizeof other) == (ssize_t)sizeof other);
    close(pipefd[0]);
    char victim[800];
    snprintf(victim, sizeof victim, "%s/victim", base);
    write_file(victim, "keep", 4);
    char ancestor_name[80], other_name[80];
    snprintf(ancestor_name, sizeof ancestor_name, ".owner-%d-%llu", self.pid, self.start);
    snprintf(other_name, sizeof other_name, ".owner-%d-%llu", other.pid, other.start);

    for (int as_file = 0; as_file <= 1; as_file++) {
        if (as_file && geteuid() != 0) {
            printf("note: not root: markers owned by another user are not planted (links are)\n");
            break;
        }
        char dir[700];
        snprintf(dir, sizeof dir, "%s/planted-%d", base, as_file);
        mkdir(dir, 0777);
        if (as_file) {
            plant_foreign_file(dir, ancestor_name);
            plant_foreign_file(dir, other_name);
        } else {
            plant(dir, ancestor_name, victim);
            plant(dir, other_name, victim);
        }
        char err[2048];
        CHECK_EQ_I(run_alone(dir, "3", err, sizeof err), 0);
        CHECK_EQ_I(steps_in(dir, "report.json"), 3);
        char name[256];
        per_process_report(dir, name, sizeof name);
        CHECK_MSG(!name[0], "no report-<pid>.json in %s (found %s)", dir, name);
        CHECK_STR_HAS(err, "report written to");
        CHECK(strstr(err, "another running process") == NULL);
    }
    kill(stranger, SIGKILL);
    waitpid(stranger, NULL, 0);
    char buf[16] = "";
    CHECK_EQ_I((int)read_file(victim, buf, sizeof buf), 4);
    CHECK_STR_HAS(buf, "keep");
}

/* A link planted at the process's own marker name (its pid and start time
 * stay across exec) is not followed: the victim is untouched, the report
 * is report.json and the link is gone. */
static void test_link_at_own_marker_not_followed(void) {
    char dir[700], victim[800], victim_dir[800];
    snprintf(dir, sizeof dir, "%s/own-link", base);
    snprintf(victim, sizeof victim, "%s/own-victim", base);
    snprintf(victim_dir, sizeof victim_dir, "%s/nowhere", base);
    mkdir(dir, 0777);
    write_file(victim, "keep", 4);
    char err_path[800];
    snprintf(err_path, sizeof err_path, "%s/own-link-stderr.txt", base);
    pid_t p = fork();
    if (p == 0) {
        struct sps_process_id me = sps__platform_self();
        char m[900];
        snprintf(m, sizeof m, "%s/.owner-%d-%llu", dir, me.pid, me.start);
        if (symlink(victim, m) != 0)
            _exit(126);
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        setenv("STEPSCOPE_OUT", dir, 1);
        char *argv[] = {WORKLOAD, "--steps", "2", NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ_I(steps_in(dir, "report.json"), 2);
    char buf[16] = "";
    CHECK_EQ_I((int)read_file(victim, buf, sizeof buf), 4);
    CHECK_STR_HAS(buf, "keep");
    CHECK_EQ_I(files_named(dir, ".owner-"), 0);
}

int main(void) {
    snprintf(base, sizeof base, "%s", tmpdir_new("standalone"));
    RUN_TEST(test_earlier_exports_are_removed);
    RUN_TEST(test_directory_made_or_said);
    RUN_TEST(test_two_processes_keep_both_reports);
    RUN_TEST(test_run_directory_keeps_its_report);
    RUN_TEST(test_dead_owner_marker);
    RUN_TEST(test_planted_markers_do_not_suppress);
    RUN_TEST(test_link_at_own_marker_not_followed);
    return check_report();
}
