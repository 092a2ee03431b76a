/*
 * test_live.c - the live view's data and text: what the peek reads from
 * records whose writers are still running (checked against the full
 * reader on the same file), and the status lines made of it.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "live/peek.h"
#include "live/status.h"
#include "model/run.h"
#include "stats.h"
#include "support.h"

#define WORKLOAD SPS_BIN_DIR "/test_workload"

/* ------------------------------------------------------------ status */

static struct sps__live_steps example_steps(void) {
    struct sps__live_steps st = {.records = 1, .have_step = 1, .pid = 100, .rank = -1};
    strcpy(st.step_name, "step");
    st.count = 412;
    st.last_ns = 312000000;
    st.median_ns = 305400000;
    const char *names[] = {"backward", "forward", "data", "other"};
    const uint64_t self[] = {410, 380, 120, 90};
    for (int i = 0; i < 4; i++) {
        strcpy(st.phase[i].name, names[i]);
        st.phase[i].self_ns = self[i] * 1000000;
    }
    st.nphases = 4;
    st.phase_total_ns = 1000000000;
    return st;
}

static struct sps__sample example_sample(int ngpus) {
    struct sps__sample s;
    sps__sample_clear(&s);
    s.host[SPS_M_WORKLOAD_CPU_PERCENT] = 187.4;
    s.host[SPS_M_WORKLOAD_RSS_BYTES] = 2.1 * 1073741824.0;
    s.ngpus = ngpus;
    for (int g = 0; g < ngpus; g++) {
        s.gpu[g].index = g;
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            s.gpu[g].v[m] = NAN;
        s.gpu[g].v[SPS_M_GPU_UTILIZATION_PERCENT] = g ? 100 : 90;
        s.gpu[g].v[SPS_M_GPU_MEMORY_USED_BYTES] = (g ? 20.0 : 31.2) * 1073741824.0;
        s.gpu[g].v[SPS_M_GPU_MEMORY_TOTAL_BYTES] = 80.0 * 1073741824.0;
        s.gpu[g].v[SPS_M_GPU_TEMPERATURE_CELSIUS] = g ? 71 : 64;
    }
    return s;
}

static void test_format_groups_by_lines(void) {
    struct sps__live_steps st = example_steps();
    struct sps__sample s = example_sample(1);
    struct sps__live_frame fr = {.elapsed_s = 83.4, .steps = &st, .steps_per_s = 3.1, .sample = &s};
    char l[3][SPS_LIVE_LINE_MAX];
    const char *progress = "stepscope 1:23  step 412  3.10 steps/s  last 312 ms  median 305 ms";
    const char *phases = "phases: backward 41%  forward 38%  data 12%  other 9%";
    const char *machine = "CPU 187%  RSS 2.1 GiB  GPU0 90%  mem 31.2/80.0 GiB  64C";
    sps__live_format(&fr, 200, 3, l);
    CHECK(!strcmp(l[0], progress));
    CHECK(!strcmp(l[1], phases));
    CHECK(!strcmp(l[2], machine));
    char want[SPS_LIVE_LINE_MAX];
    sps__live_format(&fr, 200, 2, l);
    snprintf(want, sizeof want, "%s  %s", progress, machine);
    CHECK(!strcmp(l[0], want));
    CHECK(!strcmp(l[1], phases));
    sps__live_format(&fr, 300, 1, l);
    snprintf(want, sizeof want, "%s  %s  %s", progress, machine, phases);
    CHECK_MSG(!strcmp(l[0], want), "one line: '%s'", l[0]);
}

/* A narrow terminal loses whole items from the end of a line, never part
 * of one and never one in the middle. */
static void test_format_narrow_keeps_whole_items(void) {
    struct sps__live_steps st = example_steps();
    struct sps__sample s = example_sample(1);
    struct sps__live_frame fr = {.elapsed_s = 83.4, .steps = &st, .steps_per_s = 3.1, .sample = &s};
    for (int nlines = 1; nlines <= 3; nlines++) {
        char wide[3][SPS_LIVE_LINE_MAX], narrow[3][SPS_LIVE_LINE_MAX];
        sps__live_format(&fr, SPS_LIVE_LINE_MAX - 1, nlines, wide);
        for (int width = 20; width <= 200; width++) {
            sps__live_format(&fr, width, nlines, narrow);
            for (int i = 0; i < nlines; i++) {
                size_t n = strlen(narrow[i]);
                int prefix = strncmp(wide[i], narrow[i], n) == 0;
                int whole = wide[i][n] == '\0' || (wide[i][n] == ' ' && wide[i][n + 1] == ' ');
                CHECK_MSG(n <= (size_t)width && prefix && whole, "width %d line %d: '%s' of '%s'", width, i,
                          narrow[i], wide[i]);
            }
        }
    }
    char l[3][SPS_LIVE_LINE_MAX];
    sps__live_format(&fr, 40, 3, l);
    CHECK(!strcmp(l[0], "stepscope 1:23  step 412  3.10 steps/s"));
    CHECK(!strcmp(l[2], "CPU 187%  RSS 2.1 GiB  GPU0 90%"));
}

/* Nothing known is shown as nothing, never as 0. */
static void test_format_unknowns_left_out(void) {
    struct sps__live_frame fr = {.elapsed_s = 5.9, .steps = NULL, .steps_per_s = NAN, .sample = NULL};
    char l[3][SPS_LIVE_LINE_MAX];
    sps__live_format(&fr, 100, 3, l);
    CHECK(!strcmp(l[0], "stepscope 0:05  no step recorded yet"));
    CHECK(!strcmp(l[1], ""));
    CHECK(!strcmp(l[2], ""));

    struct sps__live_steps st = example_steps();
    st.last_ns = 0;
    st.nphases = 0;
    struct sps__sample s;
    sps__sample_clear(&s);
    fr = (struct sps__live_frame){.elapsed_s = 3723, .steps = &st, .steps_per_s = NAN, .sample = &s};
    sps__live_format(&fr, 100, 3, l);
    CHECK_MSG(!strcmp(l[0], "stepscope 1:02:03  step 412  median 305 ms"), "'%s'", l[0]);
    CHECK(!strcmp(l[1], ""));
    CHECK(!strcmp(l[2], ""));

    /* a distributed job: the slowest rank once there are two */
    st.nranks = 4;
    st.slowest_rank = 2;
    st.slowest_excess_ms = 20.06;
    sps__live_format(&fr, 100, 3, l);
    CHECK_MSG(!strcmp(l[0], "stepscope 1:02:03  step 412  median 305 ms  slowest rank 2 +20.1 ms"), "'%s'", l[0]);
    st.nranks = 1;
    sps__live_format(&fr, 100, 3, l);
    CHECK_MSG(!strcmp(l[0], "stepscope 1:02:03  step 412  median 305 ms"), "'%s'", l[0]);
}

static void test_format_units_and_gpus(void) {
    struct sps__live_steps st = example_steps();
    st.last_ns = 1250000000;  /* 1.25 s */
    st.median_ns = 31240000; /* 31.2 ms */
    st.phase[3].self_ns = 3000000; /* 0.3%: there, so not "0%" */
    st.phase_total_ns = 913000000;
    struct sps__sample s = example_sample(2);
    struct sps__live_frame fr = {.elapsed_s = 0, .steps = &st, .steps_per_s = 1234.5, .sample = &s};
    char l[3][SPS_LIVE_LINE_MAX];
    sps__live_format(&fr, 200, 3, l);
    CHECK_MSG(!strcmp(l[0], "stepscope 0:00  step 412  1234 steps/s  last 1.25 s  median 31.2 ms"), "'%s'", l[0]);
    CHECK_MSG(!strcmp(l[1], "phases: backward 45%  forward 42%  data 13%  other <1%"), "'%s'", l[1]);
    /* several GPUs: mean utilisation, summed memory, the hottest */
    CHECK_MSG(!strcmp(l[2], "CPU 187%  RSS 2.1 GiB  2 GPUs 95%  mem 51.2/160.0 GiB  max 71C"), "'%s'", l[2]);
    s.gpu[1].v[SPS_M_GPU_UTILIZATION_PERCENT] = NAN; /* one unknown: no mean */
    s.gpu[0].v[SPS_M_GPU_MEMORY_TOTAL_BYTES] = NAN;
    sps__live_format(&fr, 200, 3, l);
    CHECK_MSG(!strcmp(l[2], "CPU 187%  RSS 2.1 GiB  2 GPUs  mem 51.2 GiB  max 71C"), "'%s'", l[2]);
}

/* -------------------------------------------------------------- peek */

/* Start the test workload recording into run_dir; it runs args, then
 * waits for SIGTERM (the byte on the pipe says its steps are done). */
static pid_t start_workload(const char *run_dir, char **args, const char *ring_events, const char *policy) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        setenv("STEPSCOPE_RUN_DIR", run_dir, 1);
        setenv("STEPSCOPE_RECORD_MB", "8", 1);
        if (ring_events)
            setenv("STEPSCOPE_STEP_EVENTS", ring_events, 1);
        if (policy)
            setenv("STEPSCOPE_RING_POLICY", policy, 1);
        char fd_arg[16];
        snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
        char *argv[32] = {WORKLOAD};
        int n = 1;
        for (int i = 0; args[i]; i++)
            argv[n++] = args[i];
        argv[n++] = "--wait-term";
        argv[n++] = fd_arg;
        argv[n] = NULL;
        execv(WORKLOAD, argv);
        _exit(127);
    }
    close(fds[1]);
    char b;
    ssize_t got = read(fds[0], &b, 1);
    close(fds[0]);
    return got == 1 ? pid : -1;
}

static int stop_workload(pid_t pid) {
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    return exit_code_of(status);
}

/* The record of pid in dir/records (the recorder names it PID-0.sps),
 * parsed by the full reader. */
static int load_record(const char *dir, pid_t pid, struct sps_process_data *p) {
    char path[700], err[512];
    snprintf(path, sizeof path, "%s/records/%d-0.sps", dir, (int)pid);
    return sps__record_load(path, p, err, sizeof err);
}

static uint32_t name_id(const struct sps_process_data *p, const char *name) {
    for (uint32_t i = 0; i < p->nnames; i++)
        if (!strcmp(p->names[i].name, name))
            return i + 1;
    return 0;
}

/* The peek agrees with the full reader on a record whose writer is alive. */
static void check_against_reader(const char *dir, pid_t pid, const struct sps__live_steps *st, int expect_last) {
    struct sps_process_data p;
    if (load_record(dir, pid, &p) != 0) {
        CHECK_MSG(0, "cannot load the record of %d", (int)pid);
        return;
    }
    uint32_t step = name_id(&p, "step");
    CHECK(step != 0);
    const struct sps_thread_data *t = NULL;
    for (uint32_t i = 0; step && i < p.nthreads; i++)
        if (p.threads[i].aggs[step - 1].count)
            t = &p.threads[i];
    CHECK(t != NULL);
    if (!t) {
        sps__process_free(&p);
        return;
    }
    const struct sps_agg *a = &t->aggs[step - 1];
    CHECK_EQ_U(st->count, a->count);
    CHECK_EQ_U(st->total_ns, a->total_ns);
    CHECK_EQ_U(st->median_ns, sps__hist_percentile(a->hist, a->count, 50.0, a->min_ns, a->max_ns));
    size_t n = t->nevents[SPS_RING_STEPS];
    if (expect_last) {
        CHECK(n > 0);
        const struct sps_event *e = &t->events[SPS_RING_STEPS][n - 1];
        /* the reader converts with the refined rate, the peek with the
         * calibrated multiplier: they agree to well within a microsecond
         * on a step this short */
        CHECK_NEAR((double)st->last_ns, (double)(e->end_ns - e->start_ns), 1000);
    } else {
        CHECK_EQ_U(st->last_ns, 0);
    }
    uint64_t total = 0;
    for (uint32_t id = 1; id <= p.nnames; id++)
        if (sps_kind_is_timed(p.names[id - 1].kind))
            total += t->aggs[id - 1].self_ns;
    CHECK_EQ_U(st->phase_total_ns, total);
    uint64_t sum = 0;
    for (int i = 0; i < st->nphases; i++) {
        sum += st->phase[i].self_ns;
        if (i)
            CHECK(st->phase[i].self_ns <= st->phase[i - 1].self_ns || !strcmp(st->phase[i].name, "other"));
        if (strcmp(st->phase[i].name, "other") != 0) {
            uint32_t id = name_id(&p, st->phase[i].name);
            CHECK_MSG(id && t->aggs[id - 1].self_ns == st->phase[i].self_ns, "phase %s", st->phase[i].name);
        }
    }
    CHECK_EQ_U(sum, total);
    sps__process_free(&p);
}

static int has_phase(const struct sps__live_steps *st, const char *name) {
    for (int i = 0; i < st->nphases; i++)
        if (!strcmp(st->phase[i].name, name))
            return 1;
    return 0;
}

static void test_peek_no_records_yet(void) {
    const char *tmp = tmpdir_new("live-none");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/records", tmp); /* does not exist */
    struct sps__live_peek *pk = sps__live_peek_open(dir);
    struct sps__live_steps st;
    CHECK(pk && sps__live_peek_read(pk, &st) == 0);
    CHECK_EQ_I(st.records, 0);
    CHECK_EQ_I(st.have_step, 0);
    CHECK_EQ_I(st.nphases, 0);
    sps__live_peek_close(pk);
}

static void test_peek_reads_a_live_record(void) {
    char dir[600], records[700];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-one"));
    snprintf(records, sizeof records, "%s/records", dir);
    struct sps__live_peek *pk = sps__live_peek_open(records);
    char *args[] = {"--steps", "7", NULL};
    pid_t pid = start_workload(dir, args, NULL, NULL);
    CHECK(pid > 0);
    struct sps__live_steps st;
    sps__live_peek_read(pk, &st);
    CHECK_EQ_I(st.records, 1);
    CHECK_EQ_I(st.have_step, 1);
    CHECK(!strcmp(st.step_name, "step"));
    CHECK_EQ_I(st.pid, pid);
    CHECK_EQ_I(st.rank, -1);
    CHECK_EQ_U(st.count, 7);
    CHECK(st.last_ns > 0 && st.median_ns > 0);
    CHECK(has_phase(&st, "a") && has_phase(&st, "b") && has_phase(&st, "other"));
    check_against_reader(dir, pid, &st, 1);
    /* the writer is gone; its record stays */
    CHECK_EQ_I(stop_workload(pid), 42);
    struct sps__live_steps after;
    sps__live_peek_read(pk, &after);
    CHECK_EQ_U(after.count, 7);
    CHECK_EQ_U(after.median_ns, st.median_ns);
    sps__live_peek_close(pk);
}

/* Of two processes, the one with more steps is shown; a record that
 * appears after the first read is picked up. */
static void test_peek_follows_the_busiest(void) {
    char dir[600], records[700];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-two"));
    snprintf(records, sizeof records, "%s/records", dir);
    struct sps__live_peek *pk = sps__live_peek_open(records);
    char *few[] = {"--steps", "3", NULL}, *many[] = {"--steps", "9", NULL};
    pid_t p1 = start_workload(dir, few, NULL, NULL);
    struct sps__live_steps st;
    sps__live_peek_read(pk, &st);
    CHECK_EQ_I(st.records, 1);
    CHECK_EQ_U(st.count, 3);
    pid_t p2 = start_workload(dir, many, NULL, NULL);
    sps__live_peek_read(pk, &st);
    CHECK_EQ_I(st.records, 2);
    CHECK_EQ_U(st.count, 9);
    CHECK_EQ_I(st.pid, p2);
    check_against_reader(dir, p2, &st, 1);
    CHECK_EQ_I(stop_workload(p1), 42);
    CHECK_EQ_I(stop_workload(p2), 42);
    sps__live_peek_close(pk);
}

/* Two ranks, each waiting in a collective: the one that computes longer
 * (20 ms more a step in zone "b", waiting 1 ms where the other waits 30,
 * so its steps are the shorter ones) is the slowest; without a second
 * rank no slowest is named. */
static void test_peek_names_the_slowest_rank(void) {
    char dir[600], records[700];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-ranks"));
    snprintf(records, sizeof records, "%s/records", dir);
    struct sps__live_peek *pk = sps__live_peek_open(records);
    char *fast[] = {"--steps", "5", "--wait-ms", "30", NULL};
    char *slow[] = {"--steps", "5", "--wait-ms", "1", "--zone-sleep-ms", "20", NULL};
    setenv("RANK", "0", 1);
    pid_t p0 = start_workload(dir, fast, NULL, NULL);
    struct sps__live_steps st;
    sps__live_peek_read(pk, &st);
    CHECK_EQ_I(st.nranks, 1);
    CHECK_EQ_I(st.slowest_rank, -1);
    setenv("RANK", "1", 1);
    pid_t p1 = start_workload(dir, slow, NULL, NULL);
    unsetenv("RANK");
    sps__live_peek_read(pk, &st);
    CHECK_EQ_I(st.nranks, 2);
    CHECK_EQ_I(st.slowest_rank, 1);
    CHECK(st.slowest_excess_ms > 0);
    struct sps__live_frame fr = {.elapsed_s = 3, .steps = &st, .steps_per_s = NAN};
    char l[1][SPS_LIVE_LINE_MAX];
    sps__live_format(&fr, 200, 1, l);
    CHECK_STR_HAS(l[0], "slowest rank 1 +");
    CHECK_EQ_I(stop_workload(p0), 42);
    CHECK_EQ_I(stop_workload(p1), 42);
    sps__live_peek_close(pk);
}

/* A ring that wrapped (keep-latest) still gives the latest step; one that
 * refused the latest (keep-first, full) gives no "last" at first, and the
 * mean of the steps since the previous read later. */
static void test_peek_small_rings(void) {
    char dir[600], records[700];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-latest"));
    snprintf(records, sizeof records, "%s/records", dir);
    struct sps__live_peek *pk = sps__live_peek_open(records);
    char *args[] = {"--steps", "40", NULL};
    pid_t pid = start_workload(dir, args, "16", "keep-latest");
    struct sps__live_steps st;
    sps__live_peek_read(pk, &st);
    CHECK_EQ_U(st.count, 40);
    check_against_reader(dir, pid, &st, 1);
    CHECK_EQ_I(stop_workload(pid), 42);
    sps__live_peek_close(pk);

    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-first"));
    snprintf(records, sizeof records, "%s/records", dir);
    pk = sps__live_peek_open(records);
    pid = start_workload(dir, args, "16", "keep-first");
    sps__live_peek_read(pk, &st);
    CHECK_EQ_U(st.count, 40);
    check_against_reader(dir, pid, &st, 0);
    CHECK_EQ_I(stop_workload(pid), 42);
    sps__live_peek_close(pk);
}

/* Files named like records that are not (yet) records are skipped, and
 * the real one beside them is read. */
static void test_peek_skips_what_is_not_a_record(void) {
    char dir[600], records[700], path[800];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-bad"));
    snprintf(records, sizeof records, "%s/records", dir);
    char *args[] = {"--steps", "4", NULL};
    pid_t pid = start_workload(dir, args, NULL, NULL);
    static char zeros[8192];
    snprintf(path, sizeof path, "%s/0-pending.sps", records);
    write_file(path, zeros, sizeof zeros); /* a header not written yet */
    snprintf(path, sizeof path, "%s/1-garbage.sps", records);
    write_file(path, "not a record at all", 19);
    snprintf(path, sizeof path, "%s/2-dir.sps", records);
    mkdir(path, 0700);
    /* a real header with the rest cut off */
    char real[800];
    snprintf(real, sizeof real, "%s/records/%d-0.sps", dir, (int)pid);
    int fd = open(real, O_RDONLY);
    static char head[SPS_REC_HEADER_SIZE + 512];
    CHECK(fd >= 0 && read(fd, head, sizeof head) == (ssize_t)sizeof head);
    if (fd >= 0)
        close(fd);
    snprintf(path, sizeof path, "%s/3-cut.sps", records);
    write_file(path, head, sizeof head);

    struct sps__live_peek *pk = sps__live_peek_open(records);
    struct sps__live_steps st;
    sps__live_peek_read(pk, &st);
    CHECK_EQ_I(st.records, 1);
    CHECK_EQ_U(st.count, 4);
    CHECK_EQ_I(st.pid, pid);
    CHECK_EQ_I(stop_workload(pid), 42);
    sps__live_peek_close(pk);
}

int main(void) {
    RUN_TEST(test_format_groups_by_lines);
    RUN_TEST(test_format_narrow_keeps_whole_items);
    RUN_TEST(test_format_unknowns_left_out);
    RUN_TEST(test_format_units_and_gpus);
    RUN_TEST(test_peek_no_records_yet);
    RUN_TEST(test_peek_reads_a_live_record);
    RUN_TEST(test_peek_follows_the_busiest);
    RUN_TEST(test_peek_names_the_slowest_rank);
    RUN_TEST(test_peek_small_rings);
    RUN_TEST(test_peek_skips_what_is_not_a_record);
    return check_report();
}
