/*
 * test_recover.c - a run's report survives what can happen to stepscope
 * run: report.json deleted, replaced by another run's, or never written
 * (stepscope run killed with SIGKILL: the workload gets SIGTERM, and
 * `stepscope report DIR` rebuilds the report from the records); damaged
 * records skipped and named; signals that arrive while the report is
 * being written finish it rather than lose it.
 *
 * No timing is asserted: every wait is on an event (a pipe byte, a
 * process gone), bounded only to turn a hang into a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

static const char *const outputs[] = {"report.json", "report.html", "steps.csv", "timeline.csv", "trace.json"};

static void path_in(char *buf, size_t len, const char *dir, const char *name) {
    snprintf(buf, len, "%s/%s", dir, name);
}

static int exists(const char *dir, const char *name) {
    char p[1200];
    path_in(p, sizeof p, dir, name);
    struct stat st;
    return stat(p, &st) == 0;
}

/* A run of test_workload with args into a new directory; returns it. */
static const char *workload_run(const char *tag, char **args, int want_exit) {
    static char dir[4][700];
    static int next;
    char *d = dir[next++ % 4];
    snprintf(d, sizeof dir[0], "%s/out", tmpdir_new(tag));
    char *argv[32] = {STEPSCOPE, "run", "-q", "-o", d, "--", WORKLOAD};
    int n = 7;
    for (int i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char err[4096];
    int code = exit_code_of(run_capture(argv, err, sizeof err));
    CHECK_MSG(code == want_exit, "stepscope run: exit %d, want %d: %s", code, want_exit, err);
    return d;
}

/* `stepscope report ARGS...`: exit code, stderr into err, stdout into out_path (NULL: dropped). */
static int report_cmd(char *err, size_t errlen, const char *out_path, const char *a1, const char *a2, const char *a3) {
    char *argv[] = {STEPSCOPE, "report", (char *)a1, (char *)a2, (char *)a3, NULL};
    return exit_code_of(run_capture_to(argv, out_path, err, errlen));
}

/* Every step, zone, value and counter of want is in got with the same figures. */
static void same_tables(json_t *want, json_t *got) {
    CHECK_EQ_I(json_num(got, "steps.count"), json_num(want, "steps.count"));
    CHECK_EQ_I(json_array_size(json_path(got, "steps.rows")), json_array_size(json_path(want, "steps.rows")));
    static const char *const arrays[] = {"zones", "values", "counters"};
    for (size_t a = 0; a < 3; a++) {
        json_t *list = json_object_get(want, arrays[a]);
        CHECK(json_array_size(list) > 0);
        CHECK_EQ_I(json_array_size(json_object_get(got, arrays[a])), json_array_size(list));
        size_t i;
        json_t *w;
        json_array_foreach(list, i, w) {
            const char *name = json_string_value(json_object_get(w, "name"));
            json_t *g = report_find(got, arrays[a], name);
            CHECK_MSG(g != NULL, "%s \"%s\" missing from the rebuilt report", arrays[a], name);
            if (!g)
                continue;
            static const char *const keys[] = {"count", "total_s", "self_s", "p50_s", "max_s", "total", "last", "sum"};
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
                json_t *wv = json_object_get(w, keys[k]), *gv = json_object_get(g, keys[k]);
                if (!wv)
                    continue;
                CHECK_MSG(gv && json_equal(wv, gv), "%s \"%s\".%s: %g rebuilt, %g in the run's report", arrays[a], name,
                          keys[k], json_number_value(gv), json_number_value(wv));
            }
        }
    }
    CHECK_EQ_I(json_array_size(json_object_get(got, "processes")), json_array_size(json_object_get(want, "processes")));
}

/* Whether report r says it was rebuilt, with reason holding because. */
static void says_rebuilt(json_t *r, const char *because) {
    json_t *rb = json_object_get(r, "rebuilt_from_records");
    CHECK(json_is_object(rb));
    CHECK_STR_HAS(json_string_value(json_object_get(rb, "reason")), because);
    json_t *missing = json_object_get(rb, "missing");
    int exit_said = 0, machine_said = 0;
    size_t i;
    json_t *m;
    json_array_foreach(missing, i, m) {
        exit_said |= !strcmp(json_string_value(m), "exit status");
        machine_said |= strstr(json_string_value(m), "machine metrics") != NULL;
    }
    CHECK(exit_said && machine_said);
    CHECK(json_is_null(json_object_get(r, "exit")));
    CHECK(json_is_null(json_path(r, "timing.wall_s")));
}

/* report.json deleted: `stepscope report DIR` makes it and every other
 * file again from the records, with the run's own counts and figures,
 * and says what it could not know. */
static void test_rebuilt_when_missing(void) {
    char *args[] = {"--steps", "7", "--fork", "3", "--exit", "3", NULL};
    const char *dir = workload_run("recover-missing", args, 3);
    json_t *orig = report_load(dir);
    CHECK(orig != NULL);
    if (!orig)
        return;
    CHECK_EQ_I(json_num(orig, "steps.count"), 7);
    CHECK_EQ_I(json_num(report_find(orig, "zones", "child_work"), "count"), 3);
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        char p[1200];
        path_in(p, sizeof p, dir, outputs[i]);
        CHECK(unlink(p) == 0);
    }
    char err[4096];
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 0);
    CHECK_EQ_I(count_lines(err), 1);
    CHECK_STR_HAS(err, "stepscope: report: note: rebuilt from the records alone (report.json was missing)");
    CHECK_STR_HAS(err, "exit status");
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
        CHECK_MSG(exists(dir, outputs[i]), "%s/%s was not made again", dir, outputs[i]);
    json_t *r = report_load(dir);
    CHECK(r != NULL);
    if (r) {
        same_tables(orig, r);
        says_rebuilt(r, "report.json was missing");
        /* the command from the first record */
        CHECK_STR_HAS(json_string_value(json_path(r, "command.0")), "test_workload");
        json_decref(r);
    }
    char html[1200];
    path_in(html, sizeof html, dir, "report.html");
    char *page = read_whole(html, NULL);
    CHECK_STR_HAS(page, "Rebuilt from the records alone");
    free(page);
    /* read back, the report still says so: in the summary's first line */
    char sum[1200];
    path_in(sum, sizeof sum, dir, "summary.txt");
    CHECK_EQ_I(report_cmd(err, sizeof err, sum, dir, "--format", "summary"), 0);
    CHECK_EQ_I(count_lines(err), 0);
    char *text = read_whole(sum, NULL);
    CHECK_STR_HAS(text, "\nstepscope: rebuilt from the records alone (report.json was missing); not known: exit status");
    free(text);
    json_decref(orig);
}

/* A report stepscope run wrote is read, not rebuilt: it knows more. */
static void test_fresh_report_not_rebuilt(void) {
    char *args[] = {"--steps", "3", NULL};
    const char *dir = workload_run("recover-fresh", args, 0);
    char err[4096];
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 0);
    CHECK_EQ_I(count_lines(err), 0);
    json_t *r = report_load(dir);
    CHECK(r && json_is_null(json_object_get(r, "rebuilt_from_records")));
    CHECK(r && json_num(r, "processes.0.record_header_crc") > 0);
    CHECK(r && json_num(r, "timing.wall_s") > 0);
    json_decref(r);
}

/* Replace in dir's report.json the first occurrence of from with to. */
static void edit_report(const char *dir, const char *from, const char *to) {
    char p[1200];
    path_in(p, sizeof p, dir, "report.json");
    size_t len;
    char *text = read_whole(p, &len);
    char *at = text ? strstr(text, from) : NULL;
    CHECK_MSG(at != NULL, "no \"%s\" in %s", from, p);
    if (!at) {
        free(text);
        return;
    }
    size_t head = (size_t)(at - text), nfrom = strlen(from), nto = strlen(to);
    char *edited = malloc(len - nfrom + nto + 1);
    memcpy(edited, text, head);
    memcpy(edited + head, to, nto);
    memcpy(edited + head + nto, at + nfrom, len - head - nfrom + 1);
    write_file(p, edited, strlen(edited));
    free(edited);
    free(text);
}

/* Another run's report.json beside these records: rebuilt from them, in
 * both ways it can be another run's. */
static void test_rebuilt_when_stale(void) {
    char *a_args[] = {"--steps", "3", NULL}, *b_args[] = {"--steps", "6", NULL};
    const char *a = workload_run("recover-stale-a", a_args, 0);
    const char *b = workload_run("recover-stale-b", b_args, 0);
    json_t *b_orig = report_load(b);
    char from[1200], to[1200], err[4096];
    /* (1) a's report.json over b's records: none of the records it lists is there */
    path_in(from, sizeof from, a, "report.json");
    path_in(to, sizeof to, b, "report.json");
    size_t len;
    char *a_json = read_whole(from, &len);
    write_file(to, a_json, len);
    free(a_json);
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, b, NULL, NULL), 0);
    CHECK_STR_HAS(err, "report.json is another run's: none of the 1 record(s) it lists is in records/");
    json_t *r = report_load(b);
    if (r && b_orig) {
        same_tables(b_orig, r);
        says_rebuilt(r, "another run's");
        CHECK_EQ_I(json_num(r, "steps.count"), 6);
    }
    json_decref(r);
    /* (2) a record of the name report.json lists, another header (a
     * recycled pid): b's report with its record's CRC changed */
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, b, "--from-records", NULL), 0);
    CHECK_STR_HAS(err, "(asked for with --from-records)");
    json_t *b2 = report_load(b);
    char crc[64], other[64];
    double c = json_num(b2, "processes.0.record_header_crc");
    snprintf(crc, sizeof crc, "\"record_header_crc\": %.0f", c);
    snprintf(other, sizeof other, "\"record_header_crc\": %.0f", c == 1 ? 2.0 : c - 1);
    json_decref(b2);
    edit_report(b, "\"rebuilt_from_records\": {", "\"rebuilt_from_records\": null, \"x\": {");
    edit_report(b, crc, other);
    r = report_load(b);
    CHECK(r && json_is_null(json_object_get(r, "rebuilt_from_records")));
    json_decref(r);
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, b, NULL, NULL), 0);
    CHECK_STR_HAS(err, "is not the record it describes (another process's header)");
    r = report_load(b);
    if (r && b_orig) {
        same_tables(b_orig, r);
        says_rebuilt(r, "another process's header");
    }
    json_decref(r);
    json_decref(b_orig);
}

/* Nothing to rebuild from: one line, exit 1. */
static void test_nothing_to_rebuild(void) {
    const char *dir = tmpdir_new("recover-empty");
    char err[4096];
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 1);
    CHECK_EQ_I(count_lines(err), 1);
    CHECK_STR_HAS(err, "neither report.json nor records/ (is it a run directory?)");
    char records[1200];
    path_in(records, sizeof records, dir, "records");
    CHECK(mkdir(records, 0777) == 0);
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 1);
    CHECK_EQ_I(count_lines(err), 1);
    CHECK_STR_HAS(err, "records holds no record");
    CHECK(strstr(err, ".previous") == NULL);
    /* a stepscope run killed before its process recorded anything, after
     * it set the earlier run's outputs aside: the line says where they are */
    char previous[1200], kept[1300], want[3000];
    path_in(previous, sizeof previous, dir, ".previous");
    CHECK(mkdir(previous, 0777) == 0);
    path_in(kept, sizeof kept, previous, "report.json");
    write_file(kept, "{}", 2);
    snprintf(want, sizeof want, "; the earlier run's report is kept in %s/.previous (stepscope report %s/.previous)",
             dir, dir);
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 1);
    CHECK_EQ_I(count_lines(err), 1);
    CHECK_STR_HAS(err, "records holds no record");
    CHECK_STR_HAS(err, want);
    CHECK(rmdir(records) == 0);
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 1);
    CHECK_EQ_I(count_lines(err), 1);
    CHECK_STR_HAS(err, "neither report.json nor records/");
    CHECK_STR_HAS(err, want);
    /* a file as DIR with --from-records: a usage error */
    char file[1200];
    path_in(file, sizeof file, dir, "x.json");
    write_file(file, "{}", 2);
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, file, "--from-records", "--format"), 2);
}

/* A damaged record: skipped, named on stderr and in records_skipped; the
 * others make the report. */
static void test_damaged_record_skipped(void) {
    char *args[] = {"--steps", "5", "--fork", "2", NULL};
    const char *dir = workload_run("recover-damaged", args, 0);
    json_t *orig = report_load(dir);
    CHECK(orig && json_array_size(json_object_get(orig, "processes")) == 2);
    if (!orig)
        return;
    /* the fork child's record: the process whose parent is the other */
    const char *child = NULL;
    for (size_t i = 0; i < 2; i++) {
        json_t *p = json_array_get(json_object_get(orig, "processes"), i);
        json_t *q = json_array_get(json_object_get(orig, "processes"), 1 - i);
        if (json_num(p, "ppid") == json_num(q, "pid"))
            child = json_string_value(json_object_get(p, "record"));
    }
    CHECK(child != NULL);
    if (!child) {
        json_decref(orig);
        return;
    }
    char bad[1200];
    snprintf(bad, sizeof bad, "%s", child);
    int fd = open(bad, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, "garbage!", 8, 0) == 8);
    close(fd);
    char p[1200], err[4096];
    path_in(p, sizeof p, dir, "report.json");
    CHECK(unlink(p) == 0);
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 0);
    CHECK_EQ_I(count_lines(err), 2);
    char named[1300];
    snprintf(named, sizeof named, "stepscope: report: warning: 1 of 2 records skipped: %s", bad);
    CHECK_STR_HAS(err, named);
    json_t *r = report_load(dir);
    if (r) {
        CHECK_EQ_I(json_num(r, "steps.count"), 5);
        CHECK(report_find(r, "zones", "child_work") == NULL);
        CHECK_EQ_I(json_array_size(json_object_get(r, "processes")), 1);
        CHECK_EQ_I(json_array_size(json_object_get(r, "records_skipped")), 1);
        CHECK(!strcmp(json_string_value(json_path(r, "records_skipped.0.record")), bad));
        json_decref(r);
    }
    json_decref(orig);
}

/* ------------------------------------------------ stepscope run's own death */

/* Wait (bounded: a hang becomes a failure) for child pid to end; its raw
 * status, or -1 when it did not end within limit_s (then it is killed). */
static int wait_bounded(pid_t pid, double limit_s) {
    double until = check_now_s() + limit_s;
    for (;;) {
        int status;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return status;
        if (got < 0 && errno != EINTR)
            return -1;
        if (check_now_s() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

/* The only child of process pid (from /proc), 0 when none. */
static pid_t only_child(pid_t pid) {
    char p[96], buf[256];
    snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    if (read_file(p, buf, sizeof buf) <= 0)
        return 0;
    return (pid_t)atoi(buf);
}

/* The child of sps that leads its own process group (the workload; the
 * other child is stepscope's guardian, in stepscope's group), 0 when
 * none. */
static pid_t workload_child(pid_t sps) {
    char p[96], buf[512];
    snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)sps, (int)sps);
    if (read_file(p, buf, sizeof buf) <= 0)
        return 0;
    for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n")) {
        pid_t pid = (pid_t)atoi(tok);
        if (pid > 0 && getpgid(pid) == pid)
            return pid;
    }
    return 0;
}

/* Start argv (a `stepscope run` whose workload writes 'r' to ready[1]
 * once its steps are done and then waits) and return its pid once the
 * workload is waiting. */
static pid_t start_run_until_ready(char **argv, int ready[2]) {
    fflush(NULL);
    pid_t sps = fork();
    if (sps == 0) {
        close(ready[0]);
        execv(argv[0], argv);
        _exit(126);
    }
    close(ready[1]);
    char c = 0;
    CHECK(read(ready[0], &c, 1) == 1 && c == 'r'); /* its steps are done, it waits */
    close(ready[0]);
    return sps;
}

/* SIGKILL to stepscope run sps, seen to end by it. */
static void kill_run(pid_t sps) {
    CHECK(kill(sps, SIGKILL) == 0);
    int status = wait_bounded(sps, 60);
    CHECK(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* Wait (bounded) for pid, which exits 42 from its SIGTERM handler. */
static void exited_from_sigterm(pid_t pid, const char *what) {
    int status = wait_bounded(pid, 60);
    CHECK_MSG(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 42,
              "%s did not get SIGTERM when stepscope died (status %d)", what, status);
}

/* stepscope run killed with SIGKILL while the workload waits: the
 * workload gets SIGTERM (it exits 42 from its handler) instead of running
 * on orphaned, and `stepscope report DIR` rebuilds the report from the
 * records it left. */
static void test_sigkill_of_run(void) {
    /* the orphaned workload becomes this process's child, so its status
     * can be read */
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/out", tmpdir_new("recover-kill"));
    int ready[2];
    CHECK(pipe(ready) == 0);
    char fd_arg[16];
    snprintf(fd_arg, sizeof fd_arg, "%d", ready[1]);
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", WORKLOAD, "--steps", "4", "--wait-term", fd_arg, NULL};
    pid_t sps = start_run_until_ready(argv, ready);
    pid_t workload = workload_child(sps);
    CHECK(workload > 0);
    kill_run(sps);
    CHECK(!exists(dir, "report.json"));
    if (workload > 0)
        exited_from_sigterm(workload, "the workload");
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    char err[4096];
    CHECK_EQ_I(report_cmd(err, sizeof err, NULL, dir, NULL, NULL), 0);
    CHECK_STR_HAS(err, "rebuilt from the records alone (report.json was missing)");
    json_t *r = report_load(dir);
    if (r) {
        CHECK_EQ_I(json_num(r, "steps.count"), 4);
        CHECK_EQ_I(json_num(report_find(r, "zones", "a"), "count"), 4);
        CHECK(!strcmp(json_string_value(json_path(r, "processes.0.ended")), "exit"));
        says_rebuilt(r, "report.json was missing");
        json_decref(r);
    }
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
        CHECK(exists(dir, outputs[i]));
}

/* The same with the workload a shell that started the real one and waits
 * for it: the shell gets its parent-death signal, and the real one, which
 * no parent-death signal reaches, gets SIGTERM from stepscope's guardian
 * (it exits 42 from its handler) instead of running on orphaned. */
static void test_sigkill_of_run_reaches_the_group(void) {
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/out", tmpdir_new("recover-kill-group"));
    int ready[2];
    CHECK(pipe(ready) == 0);
    char script[256];
    snprintf(script, sizeof script, "\"$0\" --steps 3 --wait-term %d & wait", ready[1]);
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", "/bin/sh", "-c", script, WORKLOAD, NULL};
    pid_t sps = start_run_until_ready(argv, ready);
    pid_t shell = workload_child(sps);
    pid_t real = shell > 0 ? only_child(shell) : 0;
    CHECK(shell > 0 && real > 0);
    kill_run(sps);
    /* the shell first: reparented here when stepscope died, it passes the
     * real one on to this process only when it ends itself */
    if (shell > 0)
        (void)wait_bounded(shell, 60);
    if (real > 0)
        exited_from_sigterm(real, "the shell's child");
    while (waitpid(-1, NULL, WNOHANG) > 0) /* the guardian, reparented here */
        ;
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

/* ------------------------------------------ signals while the report is written */

/* Read fd until want appears in what was read (kept in buf), or EOF. */
static int read_until(int fd, char *buf, size_t cap, size_t *len, const char *want) {
    while (!want || !strstr(buf, want)) {
        ssize_t n = read(fd, buf + *len, cap - 1 - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        *len += (size_t)n;
        buf[*len] = '\0';
        if (*len + 1 >= cap) { /* keep the tail: the text sought is a line */
            memmove(buf, buf + *len - cap / 2, cap / 2);
            *len = cap / 2;
            buf[*len] = '\0';
        }
    }
    return 0;
}

/*
 * signals SIGTERMs to stepscope run once its workload has been reaped.
 * stepscope cannot exit without writing to its stderr (the summary at
 * least), and its stderr is a pipe this test has filled: so every signal
 * reaches it while it is still at work, wherever the report phase is.
 * One signal: the report is finished (every file), the exit is the
 * workload's.  Two: stepscope stops by the second as soon as report.json
 * is written.  Either way
 * report.json is whole.
 */
static void signals_while_reporting(int signals) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/out", tmpdir_new("recover-term"));
    int errp[2], ready[2], go[2];
    CHECK(pipe(errp) == 0 && pipe(ready) == 0 && pipe(go) == 0);
    CHECK(fcntl(errp[1], F_SETPIPE_SZ, 4096) > 0);
    char hs[32];
    snprintf(hs, sizeof hs, "%d,%d", ready[1], go[0]);
    fflush(NULL);
    pid_t sps = fork();
    if (sps == 0) {
        dup2(errp[1], 2);
        close(errp[0]);
        close(errp[1]);
        close(ready[0]);
        close(go[1]);
        char *argv[] = {STEPSCOPE, "run", "--no-sample", "-o", dir, "--", WORKLOAD, "--steps", "6", "--handshake", hs,
                        NULL};
        execv(argv[0], argv);
        _exit(126);
    }
    close(ready[1]);
    close(go[0]);
    char c;
    CHECK(read(ready[0], &c, 1) == 1);
    pid_t workload = only_child(sps);
    CHECK(workload > 0);
    /* the test's own way into the pipe, non-blocking (stepscope's stays
     * blocking): take what stepscope wrote so far, then fill it */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", errp[1]);
    int filler = open(self, O_WRONLY | O_NONBLOCK);
    CHECK(filler >= 0);
    close(errp[1]);
    int fl = fcntl(errp[0], F_GETFL);
    fcntl(errp[0], F_SETFL, fl | O_NONBLOCK);
    char sink[4096];
    while (read(errp[0], sink, sizeof sink) > 0)
        ;
    fcntl(errp[0], F_SETFL, fl);
    size_t filled = 0;
    for (ssize_t n; (n = write(filler, "................................", 32)) > 0;)
        filled += (size_t)n;
    close(filler);
    CHECK(filled > 0);
    CHECK(write(go[1], "g", 1) == 1); /* the workload ends */
    close(go[1]);
    close(ready[0]);
    /* reaped by stepscope: no longer its child */
    double until = check_now_s() + 60;
    while (only_child(sps) == workload && check_now_s() < until) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK(only_child(sps) != workload);
    /* two different signals: two of one kind pending at once would be
     * one */
    CHECK(kill(sps, SIGTERM) == 0);
    if (signals > 1)
        CHECK(kill(sps, SIGHUP) == 0);
    static char text[1 << 16];
    size_t len = 0;
    text[0] = '\0';
    CHECK(read_until(errp[0], text, sizeof text, &len, "stepscope: run: finishing the report in ") == 0);
    read_until(errp[0], text, sizeof text, &len, NULL); /* to the end */
    close(errp[0]);
    int status = wait_bounded(sps, 120);
    if (signals == 1) {
        CHECK_MSG(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit %d, want the workload's 0",
                  exit_code_of(status));
        for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
            CHECK_MSG(exists(dir, outputs[i]), "%s: no %s", dir, outputs[i]);
        CHECK_MSG(strstr(text, "\nreport: ") != NULL, "no \"report: \" line: the files were not all made");
        CHECK(strstr(text, "stopped by a second signal") == NULL);
    } else {
        /* by whichever of the two came second (Linux: the lower number first) */
        CHECK_MSG(status != -1 && WIFSIGNALED(status) && (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGHUP),
                  "status %d, want SIGTERM or SIGHUP", exit_code_of(status));
        /* no summary follows: one line says what makes the other files */
        char want[1024];
        snprintf(want, sizeof want,
                 "\nstepscope: run: stopped by a second signal, report.json written: `stepscope report %s` makes the "
                 "other files\n",
                 dir);
        CHECK_MSG(strstr(text, want) != NULL, "stderr:\n%s\nwithout%s", text, want);
    }
    json_t *r = report_load(dir);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_I(json_num(r, "steps.count"), 6);
        CHECK_EQ_I(json_num(r, "exit.code"), 0);
        CHECK(json_is_null(json_object_get(r, "rebuilt_from_records")));
        CHECK(json_is_object(json_object_get(r, "analysis"))); /* the last key: the file is whole */
        json_decref(r);
    }
}

static void test_one_signal_finishes_the_report(void) {
    signals_while_reporting(1);
}

static void test_second_signal_stops_after_report_json(void) {
    signals_while_reporting(2);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    RUN_TEST(test_rebuilt_when_missing);
    RUN_TEST(test_fresh_report_not_rebuilt);
    RUN_TEST(test_rebuilt_when_stale);
    RUN_TEST(test_nothing_to_rebuild);
    RUN_TEST(test_damaged_record_skipped);
    RUN_TEST(test_sigkill_of_run);
    RUN_TEST(test_sigkill_of_run_reaches_the_group);
    RUN_TEST(test_one_signal_finishes_the_report);
    RUN_TEST(test_second_signal_stops_after_report_json);
    return check_report();
}
