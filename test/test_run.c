/*
 * test_run.c - `stepscope run` end to end: exit codes and signals pass
 * through, signals are forwarded, bad usage gets one line and a non-zero
 * status, several processes are joined, and a workload killed with SIGKILL
 * in the middle of a step still leaves every completed zone in report.json.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "stepscope.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

static char out[600];

static int run_workload(char **extra, char *err, size_t errlen) {
    char *argv[32] = {STEPSCOPE, "run", "-q", "-o", out, "--", WORKLOAD};
    int n = 7;
    for (int i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    return run_capture(argv, err, errlen);
}

static void test_exit_code_passthrough(void) {
    char *args[] = {"--steps", "2", "--exit", "3", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 3);
    json_t *r = report_load(out);
    CHECK(r != NULL);
    CHECK_EQ_I(json_num(r, "exit.code"), 3);
    CHECK(!strcmp(json_string_value(json_path(r, "exit.status")), "exited"));
    CHECK(!strcmp(json_string_value(json_path(r, "schema")), "stepscope.report/1"));
    CHECK(json_num(r, "timing.wall_s") > 0);
    CHECK(json_num(r, "memory.peak_rss_bytes") > 0);
    json_decref(r);
}

static void test_signal_passthrough(void) {
    char *args[] = {"--steps", "1", "--kill-self", "15", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 128 + 15);
    json_t *r = report_load(out);
    CHECK_EQ_I(json_num(r, "exit.signal"), 15);
    CHECK(!strcmp(json_string_value(json_path(r, "exit.signal_name")), "SIGTERM"));
    json_decref(r);
}

/* Send sig to stepscope once the workload is waiting; it must reach the
 * workload, which exits 42. */
static void forwarded(int sig) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    char fd_arg[16];
    snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        char *argv[] = {STEPSCOPE, "run", "-q", "-o", out, "--", WORKLOAD, "--steps", "1", "--wait-term", fd_arg, NULL};
        execv(argv[0], argv);
        _exit(126);
    }
    close(fds[1]);
    char c = 0;
    CHECK(read(fds[0], &c, 1) == 1 && c == 'r');
    close(fds[0]);
    kill(pid, sig);
    int status;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 42, "signal %d: status %d", sig, exit_code_of(status));
}

static void test_signals_forwarded(void) {
    forwarded(SIGTERM);
    forwarded(SIGINT);
}

/* A signal sent to stepscope's whole process group (kill -- -PGID, a
 * scheduler, timeout(1)) reaches the workload once: the workload has a
 * group of its own, and stepscope forwards what it receives. */
static void test_group_signal_reaches_workload_once(void) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    char fd_arg[16];
    snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* stepscope leads a group, like a job */
        close(fds[0]);
        char *argv[] = {STEPSCOPE, "run", "-q", "-o", out, "--", WORKLOAD, "--steps", "1", "--count-int", fd_arg, NULL};
        execv(argv[0], argv);
        _exit(126);
    }
    setpgid(pid, pid);
    close(fds[1]);
    char buf[64] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    CHECK(n > 1 && buf[0] == 'r');
    int workload_pgid = atoi(buf + 1);
    CHECK_MSG(workload_pgid != pid, "the workload runs in its own group (%d), not stepscope's", workload_pgid);
    kill(-pid, SIGINT); /* the whole group stepscope leads */
    char c = 0;
    CHECK(read(fds[0], &c, 1) == 1 && c == 'i');
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    close(fds[0]);
    CHECK_MSG(exit_code_of(status) == 41, "exit %d: the workload saw %d SIGINTs, want 1", exit_code_of(status),
              exit_code_of(status) - 40);
}

static void expect_usage_error(char **argv, int want_code, const char *want_text) {
    char err[2048];
    int code = exit_code_of(run_capture(argv, err, sizeof err));
    CHECK_MSG(code == want_code, "%s %s: exit %d, want %d", argv[1], argv[2] ? argv[2] : "", code, want_code);
    CHECK_MSG(count_lines(err) == 1, "one line expected, got: %s", err);
    CHECK_STR_HAS(err, "stepscope: ");
    CHECK_STR_HAS(err, want_text);
}

static void test_usage_errors(void) {
    char *no_cmd[] = {STEPSCOPE, "run", NULL};
    expect_usage_error(no_cmd, 2, "no command given");
    char *no_cmd2[] = {STEPSCOPE, "run", "-o", out, "--", NULL};
    expect_usage_error(no_cmd2, 2, "no command given");
    char *bad_flag[] = {STEPSCOPE, "run", "--bogus", "--", "/bin/true", NULL};
    expect_usage_error(bad_flag, 2, "unknown option '--bogus'");
    char *missing_value[] = {STEPSCOPE, "run", "-o", NULL};
    expect_usage_error(missing_value, 2, "needs a value");
    /* "--" is never an option's value: the value was forgotten */
    char *dashes_value[] = {STEPSCOPE, "run", "--prom-textfile", "--", "/bin/true", NULL};
    expect_usage_error(dashes_value, 2, "'--prom-textfile' needs a value before '--'");
    char *bad_number[] = {STEPSCOPE, "run", "--ring-events", "lots", "--", "/bin/true", NULL};
    expect_usage_error(bad_number, 2, "--ring-events");
    char *bad_policy[] = {STEPSCOPE, "run", "--ring-policy", "random", "--", "/bin/true", NULL};
    expect_usage_error(bad_policy, 2, "keep-latest or keep-first");
    char *bad_cmd[] = {STEPSCOPE, "frobnicate", NULL};
    expect_usage_error(bad_cmd, 2, "unknown command 'frobnicate'");
    char *not_found[] = {STEPSCOPE, "run", "-q", "-o", out, "--", "/nonexistent/train", NULL};
    expect_usage_error(not_found, 127, "/nonexistent/train: command not found");
    char not_exec[700];
    snprintf(not_exec, sizeof not_exec, "%s/not-executable", out);
    write_file(not_exec, "data\n", 5);
    char *cannot[] = {STEPSCOPE, "run", "-q", "-o", out, "--", not_exec, NULL};
    expect_usage_error(cannot, 126, "Permission denied");
}

static void test_help(void) {
    char *argv[] = {STEPSCOPE, "--help", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    char *argv2[] = {STEPSCOPE, "run", "--help", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv2, NULL, 0)), 0);
    /* stepscope help CMD: CMD's help; help is a command too, so `help
     * help` (and `help --help`) is the general help, not an error */
    char path[700], err[512];
    snprintf(path, sizeof path, "%s.help", out);
    struct {
        const char *of, *first_line;
    } helps[] = {{"run", "usage: stepscope run "},
                 {"report", "usage: stepscope report "},
                 {"help", "usage: stepscope <command>"},
                 {"--help", "usage: stepscope <command>"},
                 {"-h", "usage: stepscope <command>"}};
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        char *argv3[] = {STEPSCOPE, "help", (char *)helps[i].of, NULL};
        int code = exit_code_of(run_capture_to(argv3, path, err, sizeof err));
        char text[256] = "";
        read_file(path, text, sizeof text);
        CHECK_MSG(code == 0 && !err[0], "stepscope help %s: exit %d, stderr '%s'", helps[i].of, code, err);
        CHECK_MSG(!strncmp(text, helps[i].first_line, strlen(helps[i].first_line)),
                  "stepscope help %s prints '%.60s', want '%s...'", helps[i].of, text, helps[i].first_line);
    }
    unlink(path);
    char *no_such[] = {STEPSCOPE, "help", "nosuch", NULL};
    expect_usage_error(no_such, 2, "no command 'nosuch'");
}

static void test_crash_safety_sigkill_mid_step(void) {
    /* killed inside zone "b" of step 12: steps 0..11 completed */
    char *args[] = {"--steps", "20", "--die-at", "12", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 128 + 9);
    json_t *r = report_load(out);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_I(json_num(r, "exit.signal"), 9);
    CHECK(!strcmp(json_string_value(json_path(r, "exit.signal_name")), "SIGKILL"));
    CHECK(!strcmp(json_string_value(json_path(r, "exit.status")), "killed"));
    json_t *step = report_find(r, "zones", "step");
    json_t *a = report_find(r, "zones", "a");
    json_t *b = report_find(r, "zones", "b");
    CHECK(step && a && b);
    CHECK_EQ_I(json_num(step, "count"), 12);
    CHECK_EQ_I(json_num(a, "count"), 13); /* step 12's "a" completed too */
    CHECK_EQ_I(json_num(b, "count"), 12);
    CHECK_EQ_I(json_num(report_find(r, "values", "loss"), "count"), 12);
    CHECK_EQ_I(json_num(report_find(r, "counters", "samples"), "total"), 96);
    CHECK_EQ_I(json_num(r, "steps.count"), 12);
    CHECK_EQ_I(json_array_size(json_path(r, "steps.rows")), 12);
    /* how it ended, and what was open when it did */
    json_t *proc = json_array_get(json_object_get(r, "processes"), 0);
    CHECK_STR_HAS(json_string_value(json_object_get(proc, "ended")), "without exit");
    json_t *open = json_object_get(json_array_get(json_object_get(proc, "threads"), 0), "open_zones");
    CHECK_EQ_I(json_array_size(open), 2);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(open, 0), "name")), "step"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(open, 1), "name")), "b"));
    json_decref(r);
}

/* Killed inside its very first step: the step never completed, so its
 * statistics are null, not zero, and it is listed as open. */
static void test_killed_in_first_step(void) {
    char *args[] = {"--steps", "5", "--die-at", "0", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 137);
    json_t *r = report_load(out);
    if (!r)
        return;
    json_t *step = report_find(r, "zones", "step");
    CHECK(step != NULL);
    CHECK_EQ_I(json_num(step, "count"), 0);
    CHECK(json_is_null(json_object_get(step, "mean_s")));
    CHECK(json_is_null(json_object_get(step, "p50_s")));
    CHECK_EQ_I(json_num(step, "total_s"), 0);
    CHECK_EQ_I(json_num(report_find(r, "zones", "a"), "count"), 1);
    json_decref(r);
}

static void test_processes_joined(void) {
    /* the workload forks a recording child, then execs an instrumented
     * image of itself: three records, one report */
    char *args[] = {"--steps", "2", "--fork", "7", "--exec", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 0);
    json_t *r = report_load(out);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_I(json_array_size(json_object_get(r, "processes")), 3);
    CHECK_EQ_I(json_num(report_find(r, "zones", "child_work"), "count"), 7);
    CHECK_EQ_I(json_num(report_find(r, "zones", "exec_image"), "count"), 1);
    CHECK_EQ_I(json_num(report_find(r, "zones", "step"), "count"), 2 + 3);
    CHECK_EQ_I(json_array_size(json_object_get(r, "records_skipped")), 0);
    json_decref(r);
}

static void test_uninstrumented_command(void) {
    char *argv[] = {STEPSCOPE, "run", "-o", out, "--", "/bin/sh", "-c", "exit 5", NULL};
    char err[4096];
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 5);
    CHECK_STR_HAS(err, "nothing was recorded");
    json_t *r = report_load(out);
    CHECK(r && json_array_size(json_object_get(r, "processes")) == 0);
    json_decref(r);
}

static void test_summary_printed(void) {
    char *argv[] = {STEPSCOPE, "run", "-o", out, "--", WORKLOAD, "--steps", "3", NULL};
    char err[8192];
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    CHECK_STR_HAS(err, "stepscope: exit 0");
    CHECK_STR_HAS(err, "wall ");
    CHECK_STR_HAS(err, "peak RSS");
    CHECK_STR_HAS(err, "zone ");
    /* sorted by total time: the zone with the larger total in report.json
     * comes first ("a" does twice the work of "b", but a busy machine can
     * stretch either, so the order is checked against the totals) */
    json_t *r = report_load(out);
    double ta = json_number_value(json_object_get(report_find(r, "zones", "a"), "total_s"));
    double tb = json_number_value(json_object_get(report_find(r, "zones", "b"), "total_s"));
    json_decref(r);
    const char *pa = strstr(err, "\na "), *pb = strstr(err, "\nb ");
    CHECK(pa && pb && ta > 0 && tb > 0);
    CHECK_MSG(pa && pb && (ta >= tb) == (pa < pb), "summary order vs totals a=%g b=%g", ta, tb);
    CHECK_STR_HAS(err, "report: ");
}

static void test_warmup_and_microsteps(void) {
    char *args[] = {"--steps", "30", "--warmup", "3", "--micro", "4", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 0);
    json_t *r = report_load(out);
    if (!r)
        return;
    json_t *rows = json_path(r, "steps.rows");
    CHECK_EQ_I(json_array_size(rows), 30);
    for (size_t i = 0; i < 3; i++)
        CHECK_MSG(json_is_true(json_object_get(json_array_get(rows, i), "warmup")), "step %zu is warm-up", i);
    CHECK(json_is_false(json_object_get(json_array_get(rows, 29), "warmup")));
    CHECK(json_num(r, "steps.warmup_steps") >= 3 && json_num(r, "steps.warmup_steps") <= 6);
    CHECK_EQ_I(json_num(json_array_get(rows, 10), "microsteps"), 4);
    CHECK_EQ_I(json_num(report_find(r, "zones", "microstep"), "count"), 30 * 4);
    CHECK_EQ_I(json_num(report_find(r, "zones", "a"), "count"), 30 * 4);
    json_decref(r);
}

/* 20 steps = 40 zone events into a ring of 16: aggregates stay exact, the
 * drop is counted, and the policy decides which events are kept.  A
 * wrapped keep-latest ring never shows the slot it writes next: 15 kept. */
static void ring_policy(const char *policy, int expect_first_kept) {
    int kept = expect_first_kept ? 16 : 15;
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", out, "--ring-events", "16", "--ring-policy", (char *)policy, "--",
                    WORKLOAD, "--steps", "20", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    json_t *r = report_load(out);
    if (!r)
        return;
    CHECK_EQ_I(json_num(report_find(r, "zones", "a"), "count"), 20);
    CHECK_EQ_I(json_num(r, "recording.events_dropped"), 40 - kept);
    json_t *thread = json_array_get(json_object_get(json_array_get(json_object_get(r, "processes"), 0), "threads"), 0);
    CHECK_EQ_I(json_num(thread, "events.zones.recorded"), 40);
    CHECK_EQ_I(json_num(thread, "events.zones.kept"), kept);
    CHECK_EQ_I(json_num(thread, "events.zones.dropped"), 40 - kept);
    CHECK(!strcmp(json_string_value(json_path(json_array_get(json_object_get(r, "processes"), 0), "ring_policy")),
                  policy));
    /* steps have a ring of their own: all 20 rows are there; only the rows
     * whose zones were kept show zone times */
    json_t *rows = json_path(r, "steps.rows");
    CHECK_EQ_I(json_array_size(rows), 20);
    int first_has = json_object_get(json_path(json_array_get(rows, 0), "zones_self_s"), "a") != NULL;
    int last_has = json_object_get(json_path(json_array_get(rows, 19), "zones_self_s"), "a") != NULL;
    CHECK_EQ_I(first_has, expect_first_kept);
    CHECK_EQ_I(last_has, !expect_first_kept);
    json_decref(r);
}

static void test_ring_policies(void) {
    ring_policy("keep-latest", 0);
    ring_policy("keep-first", 1);
}

/* 40 steps into a step ring of 16: the rows kept are the last 15 and carry
 * their true step numbers; the lost beginning means no warm-up is claimed. */
static void test_step_rows_after_wrap(void) {
    setenv("STEPSCOPE_STEP_EVENTS", "16", 1);
    char *args[] = {"--steps", "40", "--warmup", "3", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 0);
    unsetenv("STEPSCOPE_STEP_EVENTS");
    json_t *r = report_load(out);
    if (!r)
        return;
    CHECK_EQ_I(json_num(r, "steps.count"), 40);
    CHECK_EQ_I(json_num(r, "steps.rows_kept"), 15);
    CHECK_EQ_I(json_num(r, "steps.warmup_steps"), 0);
    json_t *rows = json_path(r, "steps.rows");
    CHECK_EQ_I(json_num(json_array_get(rows, 0), "index"), 25);
    CHECK_EQ_I(json_num(json_array_get(rows, 14), "index"), 39);
    json_t *row = json_array_get(rows, 14);
    CHECK(!strcmp(json_string_value(json_object_get(row, "name")), "step"));
    CHECK(json_num(row, "tid") > 0);
    CHECK_EQ_I(json_num(row, "tid"), json_num(row, "pid")); /* the main thread */
    CHECK_NEAR(json_num(row, "values.loss"), 1.0 / 40, 1e-12);
    json_decref(r);
}

static void test_clock_override_visible(void) {
    setenv("STEPSCOPE_CLOCK", "monotonic", 1);
    char *args[] = {"--steps", "3", NULL};
    CHECK_EQ_I(exit_code_of(run_workload(args, NULL, 0)), 0);
    unsetenv("STEPSCOPE_CLOCK");
    json_t *r = report_load(out);
    if (!r)
        return;
    CHECK(!strcmp(json_string_value(json_path(r, "recording.clock")), "monotonic"));
    CHECK_EQ_I(json_num(r, "recording.clock_ticks_per_second"), 1e9);
    CHECK_EQ_I(json_num(report_find(r, "zones", "a"), "count"), 3);
    json_decref(r);
}

/* Without `stepscope run`: STEPSCOPE_OUT makes the process write its own
 * report at exit, from its in-memory record. */
static void test_standalone_report(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/standalone", out);
    setenv("STEPSCOPE_OUT", dir, 1);
    char *argv[] = {WORKLOAD, "--steps", "6", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    unsetenv("STEPSCOPE_OUT");
    json_t *r = report_load(dir);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_I(json_num(report_find(r, "zones", "step"), "count"), 6);
    CHECK_EQ_I(json_num(report_find(r, "values", "loss"), "count"), 6);
    CHECK(json_num(r, "timing.wall_s") > 0);
    CHECK(json_is_null(json_object_get(r, "exit")));
    CHECK_STR_HAS(json_string_value(json_object_get(r, "written_by")), "recording process itself");
    json_decref(r);
}

/* The exit report reads the process's own record while another thread is
 * still recording (and naming) zones: it must still be written. */
static void test_standalone_report_with_busy_thread(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/standalone-busy", out);
    setenv("STEPSCOPE_OUT", dir, 1);
    char *argv[] = {WORKLOAD, "--steps", "200", "--busy-thread", NULL};
    char err[2048];
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    unsetenv("STEPSCOPE_OUT");
    /* one line, saying where the report went */
    char want[1024];
    snprintf(want, sizeof want, "stepscope: report written to %s/report.json (", dir);
    CHECK_MSG(strncmp(err, want, strlen(want)) == 0 && strchr(err, '\n') == err + strlen(err) - 1, "stderr: %s", err);
    json_t *r = report_load(dir);
    CHECK(r != NULL);
    if (r)
        CHECK_EQ_I(json_num(report_find(r, "zones", "step"), "count"), 200);
    json_decref(r);
}

/* STEPSCOPE_OUT: the first instrumented process writes the report, even
 * when a shell that had the variable started it; a program that process
 * starts (here: itself through sh, after its steps) leaves it alone. */
static void test_standalone_ownership(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/standalone-owner", out);
    setenv("STEPSCOPE_OUT", dir, 1);
    char *argv[] = {"/bin/sh", "-c", WORKLOAD " --steps 4 --spawn '" WORKLOAD " --steps 9'; true", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    unsetenv("STEPSCOPE_OUT");
    json_t *r = report_load(dir);
    CHECK(r != NULL);
    if (r) /* the outer workload's 4 steps, not the inner one's 9 */
        CHECK_EQ_I(json_num(report_find(r, "zones", "step"), "count"), 4);
    json_decref(r);
    CHECK_EQ_I(files_named(dir, ".owner-"), 0);
}

static void test_unwritable_output(void) {
    char file[700];
    snprintf(file, sizeof file, "%s/a-file", out);
    write_file(file, "", 0);
    char *argv[] = {STEPSCOPE, "run", "-o", file, "--", WORKLOAD, NULL};
    char err[1024];
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 1);
    CHECK_EQ_I(count_lines(err), 1);
    CHECK_STR_HAS(err, "stepscope: run: ");
    CHECK_STR_HAS(err, "a-file");
}

/* A run directory the record cannot be created in: the workload still
 * runs and succeeds, and says once on stderr that it records in memory. */
static void test_record_fallback_to_memory(void) {
    char dir[700], blocker[800];
    snprintf(dir, sizeof dir, "%s/blocked", out);
    mkdir(dir, 0777);
    snprintf(blocker, sizeof blocker, "%s/records", dir);
    write_file(blocker, "", 0); /* a file where the records folder goes */
    setenv("STEPSCOPE_RUN_DIR", dir, 1);
    char *argv[] = {WORKLOAD, "--steps", "3", NULL};
    char err[2048];
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    unsetenv("STEPSCOPE_RUN_DIR");
    CHECK_EQ_I(count_lines(err), 1);
    CHECK_STR_HAS(err, "stepscope: cannot create ");
    CHECK_STR_HAS(err, "recording in memory");
}

/* A pid whose 1000 record names are all taken (a process that exec'd
 * itself that often): the image records in memory and says why, naming
 * the pid and the folder, in one line.  The child takes the names itself,
 * so that its own first zone finds none left. */
static void test_record_names_exhausted(void) {
    char dir[700], records[800], errpath[800], expect[2048];
    snprintf(dir, sizeof dir, "%s/exhausted", out);
    mkdir(dir, 0777);
    snprintf(records, sizeof records, "%s/records", dir);
    mkdir(records, 0777);
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    pid_t child = fork();
    if (child == 0) {
        char path[900];
        for (int seq = 0; seq < 1000; seq++) {
            snprintf(path, sizeof path, "%s/%d-%d.sps", records, (int)getpid(), seq);
            write_file(path, "", 0);
        }
        setenv("STEPSCOPE_RUN_DIR", dir, 1);
        int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        for (int i = 0; i < 3; i++)
            sps_zone_end(sps_zone_begin(sps_site_get("after_exhaustion", SPS_KIND_ZONE)));
        fflush(stderr);
        dup2(saved, 2);
        struct sps_status st;
        CHECK_EQ_I(sps_status(&st), 0);
        CHECK_EQ_I(st.mode, SPS_MODE_MEMORY);
        snprintf(expect, sizeof expect, "1000 record files of pid %d already in %s; recording in memory",
                 (int)getpid(), records);
        CHECK_MSG(!strcmp(st.reason, expect), "reason \"%s\"", st.reason);
        struct sps_run run;
        run_of_this_process(&run);
        long i = sps__run_find(&run, "after_exhaustion", SPS_KIND_ZONE);
        CHECK(i >= 0);
        if (i >= 0)
            CHECK_EQ_U(run.names[i].agg.count, 3);
        sps__run_free(&run);
        _exit(check_failures ? 1 : 0);
    }
    int status = -1;
    waitpid(child, &status, 0);
    CHECK_EQ_I(exit_code_of(status), 0);
    char err[2048];
    read_file(errpath, err, sizeof err);
    snprintf(expect, sizeof expect, "stepscope: 1000 record files of pid %d already in %s; recording in memory\n",
             (int)child, records);
    CHECK_MSG(!strcmp(err, expect), "stderr \"%s\"", err);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%d-", (int)child);
    CHECK_EQ_I(files_named(records, prefix), 1000); /* no 1001st file */
}

int main(void) {
    snprintf(out, sizeof out, "%s/out", tmpdir_new("run"));
    RUN_TEST(test_exit_code_passthrough);
    RUN_TEST(test_signal_passthrough);
    RUN_TEST(test_signals_forwarded);
    RUN_TEST(test_group_signal_reaches_workload_once);
    RUN_TEST(test_usage_errors);
    RUN_TEST(test_help);
    RUN_TEST(test_crash_safety_sigkill_mid_step);
    RUN_TEST(test_killed_in_first_step);
    RUN_TEST(test_processes_joined);
    RUN_TEST(test_uninstrumented_command);
    RUN_TEST(test_summary_printed);
    RUN_TEST(test_warmup_and_microsteps);
    RUN_TEST(test_ring_policies);
    RUN_TEST(test_step_rows_after_wrap);
    RUN_TEST(test_clock_override_visible);
    RUN_TEST(test_standalone_report);
    RUN_TEST(test_standalone_report_with_busy_thread);
    RUN_TEST(test_standalone_ownership);
    RUN_TEST(test_unwritable_output);
    RUN_TEST(test_record_fallback_to_memory);
    RUN_TEST(test_record_names_exhausted);
    return check_report();
}
