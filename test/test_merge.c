/*
 * test_merge.c - `stepscope merge`: the clock arithmetic with exact values,
 * the plan (reference host, methods, refusals), records/merge.tsv written
 * and read back, and end to end two "nodes" run on this machine (distinct
 * STEPSCOPE_HOSTNAME, node B's clock shifted by STEPSCOPE_TEST_CLOCK_SHIFT_NS
 * and its ranks storing the offset through sps_clock_offset_set, as a C or
 * MPI program would): the merged report puts every process exactly where
 * the offset says, names both hosts, refuses a tolerance violation with
 * one line, takes --force, and refuses bad input without touching it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "model/align.h"
#include "model/run.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define RANK_SIM SPS_BIN_DIR "/rank_sim"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

/* ------------------------------------------------------------ arithmetic */

static void test_offset_arithmetic(void) {
    struct sps_align a = {.method = SPS_ALIGN_MEASURED, .at0_ns = 1000, .off0_ns = -500, .at1_ns = 3000,
                          .off1_ns = -300};
    CHECK_EQ_I(sps__align_offset_at(&a, 500), -500);  /* before the start measurement: the start's */
    CHECK_EQ_I(sps__align_offset_at(&a, 1000), -500);
    CHECK_EQ_I(sps__align_offset_at(&a, 2000), -400); /* halfway: halfway */
    CHECK_EQ_I(sps__align_offset_at(&a, 2001), -400); /* -399.9 rounds to -400 */
    CHECK_EQ_I(sps__align_offset_at(&a, 2005), -399); /* the change, 100.5, rounds away from zero: 101 */
    CHECK_EQ_I(sps__align_offset_at(&a, 2995), -300); /* 199.5 -> 200 */
    CHECK_EQ_I(sps__align_offset_at(&a, 3000), -300);
    CHECK_EQ_I(sps__align_offset_at(&a, 9000), -300); /* after the end measurement: the end's */
    CHECK_EQ_U(sps__align_map(&a, 2000), 1600);
    CHECK_EQ_U(sps__align_map(&a, 0), 0);   /* "no time" stays */
    CHECK_EQ_U(sps__align_map(&a, 200), 0); /* before the reference clock's 0: 0, never a wrap */
    /* a falling offset rounds its change away from zero too: 100 + (-201 / 2 = -100.5 -> -101) */
    struct sps_align b = {.at0_ns = 10, .off0_ns = 100, .at1_ns = 12, .off1_ns = -101};
    CHECK_EQ_I(sps__align_offset_at(&b, 11), -1);
    /* one measurement: a constant */
    struct sps_align c = {.at0_ns = 5000, .off0_ns = 250000000, .at1_ns = 5000, .off1_ns = 250000000};
    CHECK_EQ_U(sps__align_map(&c, 1), 250000001);
    CHECK_EQ_U(sps__align_map(&c, 1000000000000ull), 1000250000000ull);
    /* drift over an hour: 3.6 s apart, 36 us apart in offset (10 ppm) */
    struct sps_align d = {.at0_ns = 1000000000, .off0_ns = -7000, .at1_ns = 3601000000000, .off1_ns = 29000};
    CHECK_EQ_I(sps__align_offset_at(&d, 1801000000000), 11000);
    /* the widest merge.tsv allows (SPS_ALIGN_NS_MAX either way): the
     * offsets' change (2^63) overflowed int64_t (UBSan) */
    struct sps_align e = {.at0_ns = -SPS_ALIGN_NS_MAX, .off0_ns = -SPS_ALIGN_NS_MAX, .at1_ns = SPS_ALIGN_NS_MAX,
                          .off1_ns = SPS_ALIGN_NS_MAX};
    CHECK_EQ_I(sps__align_offset_at(&e, 0), 0);
    CHECK_EQ_I(sps__align_offset_at(&e, SPS_ALIGN_NS_MAX / 2), SPS_ALIGN_NS_MAX / 2);
    CHECK_EQ_U(sps__align_map(&e, SPS_ALIGN_NS_MAX / 2), (uint64_t)SPS_ALIGN_NS_MAX);
}

/* records/merge.tsv's numbers past what the clock arithmetic holds:
 * refused with the line and the value, never applied. */
static void test_merge_file_out_of_range(void) {
    static const char *const lines[] = {
        "record\tr.sps\tmeasured\t0\t0\t-4611686018427387905\t10\t0\t0\n",
        "record\tr.sps\tmeasured\t0\t0\t0\t10\t9223372036854775807\t0\n",
        "record\tr.sps\tmeasured\t0\t-9223372036854775808\t0\t10\t0\t0\n",
        "record\tr.sps\tmeasured\t0\t0\t0\t10\t0\t9223372036854775807\n",
        "record\tr.sps\tmeasured\t0\t0\t0\t10\t0\t-1\n",
    };
    static const char *const says[] = {
        "'-4611686018427387905' is out of range", "'9223372036854775807' is out of range",
        "'-9223372036854775808' is out of range", "'9223372036854775807' is out of range", "'-1' is out of range"};
    const char *dir = tmpdir_new("merge-range");
    char path[1200], text[512], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, SPS_MERGE_FILE);
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        snprintf(text, sizeof text, "stepscope-merge\t1\ninput\t/a\n%s", lines[i]);
        write_file(path, text, strlen(text));
        struct sps_run run;
        memset(&run, 0, sizeof run);
        err[0] = '\0';
        CHECK_EQ_I(sps__merge_file_apply(&run, dir, err, sizeof err), SPS_EFORMAT);
        CHECK_STR_HAS(err, says[i]);
        CHECK_STR_HAS(err, "line 3");
        sps__run_merge_free(&run.merge);
    }
}

static struct sps_process_data proc(const char *host, int rank, int pid) {
    struct sps_process_data p;
    memset(&p, 0, sizeof p);
    snprintf(p.hostname, sizeof p.hostname, "%s", host);
    p.rank = rank;
    p.pid = pid;
    p.align.source_rank = -1;
    return p;
}

static void measured(struct sps_process_data *p, int slot, int64_t off, uint64_t err, uint64_t at) {
    p->clock_sync[slot] = (struct sps_clock_sync){SPS_REC_SYNC_MEASURED, 16, off, err, at};
}

static void test_measured_and_realtime(void) {
    struct sps_process_data p = proc("b", 1, 10);
    struct sps_align a;
    CHECK(sps__align_measured(&a, &p) == -1); /* nothing measured */
    p.clock_sync[SPS_SYNC_START].state = SPS_REC_SYNC_FAILED;
    CHECK(sps__align_measured(&a, &p) == -1); /* failed */
    measured(&p, SPS_SYNC_START, -250000000, 40000, 1000);
    CHECK(sps__align_measured(&a, &p) == 0);
    CHECK_EQ_U(a.method, SPS_ALIGN_MEASURED);
    CHECK_EQ_I(a.source_rank, 1);
    CHECK_EQ_I(a.at1_ns, 1000); /* no end: one constant */
    CHECK_EQ_I(a.off1_ns, -250000000);
    CHECK_EQ_U(a.error_ns, 40000);
    measured(&p, SPS_SYNC_END, -249990000, 70000, 5000);
    CHECK(sps__align_measured(&a, &p) == 0);
    CHECK_EQ_I(a.at1_ns, 5000);
    CHECK_EQ_I(a.off1_ns, -249990000);
    CHECK_EQ_U(a.error_ns, 70000); /* the larger of the two */
    /* realtime: p's (realtime - monotonic) less the reference's */
    struct sps_process_data q = proc("b", 1, 10), ref = proc("a", 0, 11);
    q.start_realtime_ns = 1000000000;
    q.start_ns = 500;
    ref.start_realtime_ns = 999000000;
    ref.start_ns = 100;
    sps__align_realtime(&a, &q, &ref);
    CHECK_EQ_U(a.method, SPS_ALIGN_REALTIME);
    CHECK_EQ_I(a.off0_ns, (1000000000 - 500) - (999000000 - 100));
    CHECK_EQ_U(sps__align_map(&a, 500), 1000100);
}

static void test_process_align(void) {
    struct sps_process_data p = proc("b", 1, 10);
    struct sps_thread_data t;
    memset(&t, 0, sizeof t);
    struct sps_event ev[2] = {{.start_ns = 2000, .end_ns = 2500}, {.start_ns = 3000, .end_ns = 3000}};
    t.events[SPS_RING_ZONES] = ev;
    t.nevents[SPS_RING_ZONES] = 2;
    t.nopen = 1;
    t.open[0].start_ns = 2600;
    p.threads = &t;
    p.nthreads = 1;
    p.start_ns = 1000;
    p.end_ns = 0; /* killed: no end, and it stays none */
    p.clock_sync[0] = (struct sps_clock_sync){SPS_REC_SYNC_MEASURED, 4, -300, 10, 1500};
    struct sps_align a = {.method = SPS_ALIGN_MEASURED, .at0_ns = 1000, .off0_ns = -500, .at1_ns = 3000,
                          .off1_ns = -300};
    sps__process_align(&p, &a);
    CHECK_EQ_U(p.start_ns, 500);
    CHECK_EQ_U(p.end_ns, 0);
    CHECK_EQ_U(ev[0].start_ns, 1600);
    CHECK_EQ_U(ev[0].end_ns, 2500 - 350);
    CHECK_EQ_U(ev[1].start_ns, 2700);
    CHECK_EQ_U(t.open[0].start_ns, 2600 - 340);
    CHECK_EQ_U(p.clock_sync[0].at_ns, 1500); /* as recorded */
    CHECK_EQ_U(p.align.method, SPS_ALIGN_MEASURED);
}

/* trace.json's track ids: equal pids of different hosts never share one */
static void test_unique_pids(void) {
    struct sps_process_data p[6] = {proc("A", 0, 100), proc("B", 1, 100), proc("A", -1, 101),
                                    proc("B", -1, 100), proc("C", 2, 100), proc("A", -1, 100)};
    struct sps_run run = {.nprocs = 6, .procs = p};
    int ids[6];
    sps__run_unique_pids(&run, ids);
    CHECK_EQ_I(ids[0], 100);
    CHECK_EQ_I(ids[1], 1 << 22);       /* B's 100: the first id above any pid */
    CHECK_EQ_I(ids[2], 101);
    CHECK_EQ_I(ids[3], 1 << 22);       /* B's 100 again (a reused pid): B's track */
    CHECK_EQ_I(ids[4], (1 << 22) + 1); /* C's 100 */
    CHECK_EQ_I(ids[5], 100);
    CHECK(!sps__run_several_hosts(&(struct sps_run){.nprocs = 1, .procs = p}));
    CHECK(sps__run_several_hosts(&run));
}

/* ------------------------------------------------------------------ plan */

struct two_runs {
    struct sps_process_data pa[2], pb[2];
    struct sps_run a, b;
    struct sps_align aa[2], ab[2];
};

static void two_runs(struct two_runs *t) {
    memset(t, 0, sizeof *t);
    t->pa[0] = proc("nodeA", 0, 100);
    t->pa[1] = proc("nodeA", -1, 101); /* a DataLoader worker of rank 0 */
    t->pb[0] = proc("nodeB", 1, 100);  /* the same pid, another host */
    t->pb[1] = proc("nodeB", -1, 102);
    t->a = (struct sps_run){.nprocs = 2, .procs = t->pa};
    t->b = (struct sps_run){.nprocs = 2, .procs = t->pb};
}

static int plan(struct two_runs *t, uint64_t tol, int force, struct sps_run_merge *m, char *err, size_t len) {
    const struct sps_run *runs[2] = {&t->a, &t->b};
    const char *dirs[2] = {"A", "B"};
    struct sps_align *aligns[2] = {t->aa, t->ab};
    memset(m, 0, sizeof *m);
    err[0] = '\0';
    return sps__merge_plan(runs, dirs, 2, tol, force, aligns, m, err, len);
}

static void test_plan(void) {
    struct two_runs t;
    struct sps_run_merge m;
    char err[512];
    two_runs(&t);
    measured(&t.pb[0], 0, -250000000, 40000, 1000);
    CHECK(plan(&t, 1000000, 0, &m, err, sizeof err) == 0);
    CHECK_STR_HAS(m.reference_host, "nodeA");
    CHECK_EQ_I(m.reference_rank, 0);
    CHECK_EQ_U(t.aa[0].method, SPS_ALIGN_REFERENCE);
    CHECK_EQ_U(t.aa[1].method, SPS_ALIGN_REFERENCE);
    CHECK_EQ_U(t.ab[0].method, SPS_ALIGN_MEASURED);
    /* the worker of rank 1 shares its host's clock, so its measurement */
    CHECK_EQ_U(t.ab[1].method, SPS_ALIGN_MEASURED);
    CHECK_EQ_I(t.ab[1].off0_ns, -250000000);
    CHECK_EQ_I(t.ab[1].source_rank, 1);
    CHECK(!m.forced);

    /* over the tolerance: refused, one line naming rank, host, error, tolerance */
    CHECK(plan(&t, 39999, 0, &m, err, sizeof err) == SPS_EINVAL);
    CHECK_STR_HAS(err, "rank 1 on host nodeB: clock offset error 0.04 ms exceeds the tolerance 0.04 ms");
    CHECK(strchr(err, '\n') == NULL);
    CHECK(plan(&t, 39999, 1, &m, err, sizeof err) == 0); /* --force */
    CHECK(m.forced);
    CHECK_STR_HAS(m.forced_why, "rank 1 on host nodeB");
    CHECK(plan(&t, 40000, 0, &m, err, sizeof err) == 0); /* at the tolerance: fine */

    /* two ranks of one host name whose offsets disagree beyond their
     * errors: two machines, refused (--force takes the best) */
    struct sps_process_data third = proc("nodeB", 2, 103);
    measured(&third, 0, -240000000, 30000, 2000);
    struct sps_process_data pb3[3] = {t.pb[0], t.pb[1], third};
    t.b.procs = pb3;
    t.b.nprocs = 3;
    struct sps_align ab3[3];
    {
        const struct sps_run *runs[2] = {&t.a, &t.b};
        const char *dirs[2] = {"A", "B"};
        struct sps_align *aligns[2] = {t.aa, ab3};
        CHECK(sps__merge_plan(runs, dirs, 2, 1000000, 0, aligns, &m, err, sizeof err) == SPS_EINVAL);
        CHECK_STR_HAS(err, "host nodeB: rank 2's and rank 1's measured clock offsets are 10 ms apart");
        CHECK(sps__merge_plan(runs, dirs, 2, 1000000, 1, aligns, &m, err, sizeof err) == 0);
        CHECK_EQ_I(ab3[0].off0_ns, -240000000); /* the best (rank 2's smaller error) for all of the host */
        third.clock_sync[0].offset_ns = -250050000; /* 50 us apart, within 40 + 30 + 100 us */
        pb3[2] = third;
        CHECK(sps__merge_plan(runs, dirs, 2, 1000000, 0, aligns, &m, err, sizeof err) == 0);
    }
    t.b.procs = t.pb;
    t.b.nprocs = 2;

    /* nothing measured: the realtime anchors */
    two_runs(&t);
    t.pa[0].start_realtime_ns = 5000;
    t.pa[0].start_ns = 1000;
    t.pb[0].start_realtime_ns = 5000;
    t.pb[0].start_ns = 3000;
    CHECK(plan(&t, 1000000, 0, &m, err, sizeof err) == 0);
    CHECK_EQ_U(t.ab[0].method, SPS_ALIGN_REALTIME);
    CHECK_EQ_I(t.ab[0].off0_ns, -2000);

    /* no rank 0 anywhere: the first input's host, said so */
    two_runs(&t);
    t.pa[0].rank = 2;
    CHECK(plan(&t, 1000000, 0, &m, err, sizeof err) == 0);
    CHECK_EQ_I(m.reference_rank, -1);
    CHECK_STR_HAS(m.reference_host, "nodeA");

    /* the rank 0 of B's host is the reference even when B comes second */
    two_runs(&t);
    t.pa[0].rank = 1;
    t.pb[0].rank = 0;
    CHECK(plan(&t, 1000000, 0, &m, err, sizeof err) == 0);
    CHECK_STR_HAS(m.reference_host, "nodeB");
    CHECK_EQ_U(t.aa[0].method, SPS_ALIGN_REALTIME);

    /* a rank of one host in two inputs */
    two_runs(&t);
    snprintf(t.pb[0].hostname, sizeof t.pb[0].hostname, "nodeA");
    t.pb[0].rank = 0;
    CHECK(plan(&t, 1000000, 0, &m, err, sizeof err) == SPS_EINVAL);
    CHECK_STR_HAS(err, "rank 0 of host nodeA is in both A and B");
}

/* ------------------------------------------------------------ merge.tsv */

static void test_merge_file(void) {
    const char *dir = tmpdir_new("merge_file");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, SPS_MERGE_FILE);
    FILE *f = fopen(path, "w");
    char *inputs[2] = {"runs/a", "runs/b"};
    struct sps_run_merge m = {.ninputs = 2, .inputs = inputs, .reference_host = "nodeA", .reference_rank = 0,
                              .tolerance_ns = 1000000, .forced = 1, .forced_why = "rank 1 on host nodeB: why"};
    struct sps_align a = {.method = SPS_ALIGN_MEASURED, .source_rank = 1, .at0_ns = 1000, .off0_ns = -500,
                          .at1_ns = 3000, .off1_ns = -300, .error_ns = 7};
    struct sps_align r = {.method = SPS_ALIGN_REFERENCE, .source_rank = -1};
    CHECK(sps__merge_file_begin(f, &m) == 0);
    CHECK(sps__merge_file_record(f, "n1-nodeB-100-0.sps", &a) == 0);
    CHECK(sps__merge_file_record(f, "n0-nodeA-100-0.sps", &r) == 0);
    fclose(f);

    struct sps_process_data procs[2] = {proc("nodeA", 0, 100), proc("nodeB", 1, 100)};
    procs[0].path = "somewhere/n0-nodeA-100-0.sps";
    procs[0].start_ns = 2000;
    procs[1].path = "somewhere/n1-nodeB-100-0.sps";
    procs[1].start_ns = 2000;
    struct sps_run run = {.nprocs = 2, .procs = procs};
    char err[512] = "";
    CHECK_MSG(sps__merge_file_apply(&run, dir, err, sizeof err) == 0, "%s", err);
    CHECK_EQ_U(procs[0].start_ns, 2000);
    CHECK_EQ_U(procs[0].align.method, SPS_ALIGN_REFERENCE);
    CHECK_EQ_U(procs[1].start_ns, 1600);
    CHECK_EQ_U(procs[1].align.error_ns, 7);
    CHECK_EQ_I(procs[1].align.source_rank, 1);
    CHECK_EQ_U(run.merge.ninputs, 2);
    CHECK_STR_HAS(run.merge.inputs[1], "runs/b");
    CHECK_STR_HAS(run.merge.reference_host, "nodeA");
    CHECK_EQ_U(run.merge.tolerance_ns, 1000000);
    CHECK(run.merge.forced);
    CHECK_STR_HAS(run.merge.forced_why, "rank 1 on host nodeB: why");
    sps__run_merge_free(&run.merge);

    /* damaged: one line naming the file and the line */
    const char bad[] = "stepscope-merge\t1\ninput\tx\nrecord\tn0.sps\tmeasured\t1\t1\t2\tthree\t4\t5\n";
    write_file(path, bad, sizeof bad - 1);
    struct sps_run run2 = {.nprocs = 2, .procs = procs};
    CHECK(sps__merge_file_apply(&run2, dir, err, sizeof err) == SPS_EFORMAT);
    CHECK_STR_HAS(err, "merge.tsv: line 3: 'three' is not an integer");
    sps__run_merge_free(&run2.merge);
    const char other[] = "something else\n";
    write_file(path, other, sizeof other - 1);
    CHECK(sps__merge_file_apply(&run2, dir, err, sizeof err) == SPS_EFORMAT);
    CHECK_STR_HAS(err, "line 1: not a stepscope merge file");
}

/* ------------------------------------------------------------ end to end */

/* One "node": `stepscope run -o dir -- rank_sim ...` with its host name
 * and clock shift.  Returns the exit code. */
static int run_node(const char *dir, const char *host, const char *shift, const char *first, const char *offset) {
    char hostenv[96], shiftenv[96];
    snprintf(hostenv, sizeof hostenv, "STEPSCOPE_HOSTNAME=%s", host);
    snprintf(shiftenv, sizeof shiftenv, "STEPSCOPE_TEST_CLOCK_SHIFT_NS=%s", shift);
    char *argv[] = {"/usr/bin/env", hostenv, shiftenv, STEPSCOPE, "run", "-q", "-o", (char *)dir, "--",
                    RANK_SIM, "--ranks", "2", "--first-rank", (char *)first, "--world", "4", "--steps", "12",
                    offset ? "--offset-ns" : NULL, (char *)offset, "--error-ns", "2000", NULL};
    char err[4096];
    int code = exit_code_of(run_capture(argv, err, sizeof err));
    CHECK_MSG(code == 0, "node %s: %s", host, err);
    return code;
}

/* `stepscope merge ARGS...`: exit code; stderr into err. */
static int merge(char *err, size_t len, char *const *args) {
    char *argv[16] = {STEPSCOPE, "merge"};
    int n = 2;
    while (*args && n < 15)
        argv[n++] = *args++;
    argv[n] = NULL;
    return exit_code_of(run_capture(argv, err, len));
}

/* A process's start on its run's monotonic clock (ns), from report.json. */
static double abs_start_ns(json_t *rep, json_t *p) {
    return json_num(rep, "started_mono_ns") + json_num(p, "start_s") * 1e9;
}

static json_t *process_of_rank(json_t *rep, int rank) {
    json_t *procs = json_path(rep, "processes");
    for (size_t i = 0; procs && i < json_array_size(procs); i++) {
        json_t *p = json_array_get(procs, i);
        json_t *r = json_object_get(p, "rank");
        if (r && json_integer_value(r) == rank)
            return p;
    }
    return NULL;
}

/* Every file under dir, read whole and concatenated with its name (to
 * compare before and after). */
static char *snapshot(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cd '%s' && find . -type f | sort | xargs -d '\\n' sha256sum", dir);
    FILE *p = popen(cmd, "r");
    static char buf[1 << 16];
    size_t n = p ? fread(buf, 1, sizeof buf - 1, p) : 0;
    if (p)
        pclose(p);
    buf[n] = '\0';
    return strdup(buf);
}

static void test_end_to_end(void) {
    const char *root = tmpdir_new("merge_e2e");
    char a[1024], b[1024], out[1024], out2[1024];
    snprintf(a, sizeof a, "%s/nodeA", root);
    snprintf(b, sizeof b, "%s/nodeB", root);
    snprintf(out, sizeof out, "%s/merged", root);
    snprintf(out2, sizeof out2, "%s/forced", root);
    /* node B's clock runs 250 ms ahead; its ranks measured -250 ms +- 2 us */
    if (run_node(a, "nodeA", "0", "0", NULL) || run_node(b, "nodeB", "250000000", "2", "-250000000"))
        return;
    char *before_a = snapshot(a), *before_b = snapshot(b);
    char err[4096];
    CHECK_MSG(merge(err, sizeof err, (char *[]){a, b, "-o", out, "-q", NULL}) == 0, "%s", err);
    json_t *m = report_load(out), *ra = report_load(a), *rb = report_load(b);
    CHECK(m && ra && rb);
    if (!m || !ra || !rb)
        return;
    CHECK_EQ_U(json_array_size(json_path(m, "processes")), 4);
    for (int rank = 0; rank < 4; rank++) {
        json_t *p = process_of_rank(m, rank), *in = process_of_rank(rank < 2 ? ra : rb, rank);
        CHECK_MSG(p && in, "rank %d in the merged report and its input", rank);
        if (!p || !in)
            continue;
        CHECK_STR_HAS(json_string_value(json_object_get(p, "hostname")), rank < 2 ? "nodeA" : "nodeB");
        const char *method = json_string_value(json_path(p, "clock_alignment.method"));
        CHECK_STR_HAS(method ? method : "", rank < 2 ? "reference" : "measured");
        /* exactly where the offset puts it (to the us report.json's seconds keep) */
        double moved = abs_start_ns(m, p) - abs_start_ns(rank < 2 ? ra : rb, in);
        CHECK_NEAR(moved, rank < 2 ? 0 : -250000000, 1000);
    }
    CHECK_STR_HAS(json_string_value(json_path(m, "merge.reference_host")), "nodeA");
    CHECK(json_is_false(json_path(m, "merge.forced")));
    json_t *r2 = process_of_rank(m, 2);
    CHECK(r2 && json_integer_value(json_path(r2, "clock_sync.start.error_ns")) == 2000);
    CHECK(r2 && json_integer_value(json_path(r2, "clock_sync.start.offset_ns")) == -250000000);
    for (const char *const *f = (const char *const[]){"report.html", "steps.csv", "timeline.csv", "trace.json", NULL};
         *f; f++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", out, *f);
        CHECK_MSG(access(path, R_OK) == 0, "%s written", path);
    }
    char *html = NULL;
    {
        char path[1200];
        snprintf(path, sizeof path, "%s/report.html", out);
        html = read_whole(path, NULL);
    }
    CHECK_STR_HAS(html, "<dt>Merged</dt><dd>2 runs, 2 hosts<small>times on nodeA&#39;s clock; 1 host by measured "
                        "offsets (error &lt;= 0.002 ms)</small>");
    free(html);
    char sum_path[1200];
    snprintf(sum_path, sizeof sum_path, "%s/summary.txt", root);
    char *sargv[] = {STEPSCOPE, "report", out, "--format", "summary", NULL};
    CHECK(exit_code_of(run_capture_to(sargv, sum_path, err, sizeof err)) == 0);
    char *summary = read_whole(sum_path, NULL);
    CHECK_STR_HAS(summary, "merged    2 run(s); times on nodeA's clock (rank 0's host)\n"
                           "          host nodeA: the reference\n"
                           "          host nodeB: offset -250.000 ms (rank 2 measured it, error <= 0.002 ms, "
                           "tolerance 1.000 ms)\n");
    free(summary);
    /* `stepscope report` on the merged directory reads the same times back */
    char *rargv[] = {STEPSCOPE, "report", out, NULL};
    CHECK(exit_code_of(run_capture(rargv, err, sizeof err)) == 0);
    char *jargv[] = {STEPSCOPE, "report", out, "--format", "json", "-o", "-", NULL};
    char again[1200];
    snprintf(again, sizeof again, "%s/again.json", root);
    CHECK(exit_code_of(run_capture_to(jargv, again, err, sizeof err)) == 0);
    json_t *re = json_load_file(again, 0, NULL);
    json_t *p3 = re ? process_of_rank(re, 3) : NULL, *q3 = process_of_rank(m, 3);
    CHECK(p3 && q3 && abs_start_ns(re, p3) == abs_start_ns(m, q3));
    CHECK_STR_HAS(json_string_value(json_path(re, "merge.reference_host")), "nodeA");

    /* the tolerance: one line naming rank, host, error and tolerance; no OUT */
    CHECK(merge(err, sizeof err, (char *[]){a, b, "-o", out2, "--max-clock-error", "0.001", NULL}) == 1);
    CHECK_STR_HAS(err, "clock offset error 0.002 ms exceeds the tolerance 0.001 ms");
    CHECK_STR_HAS(err, "on host nodeB");
    CHECK_EQ_I(count_lines(err), 1);
    CHECK(access(out2, F_OK) != 0);
    CHECK(merge(err, sizeof err, (char *[]){a, b, "-o", out2, "--max-clock-error", "0.001", "--force", "-q", NULL}) ==
          0);
    json_t *forced = report_load(out2);
    CHECK(forced && json_is_true(json_path(forced, "merge.forced")));
    CHECK_STR_HAS(forced ? json_string_value(json_path(forced, "merge.forced_reason")) : "", "rank 2 on host nodeB");

    /* bad input: one line, exit 1, the inputs untouched */
    char c[1024], damaged[1024], norec[1024], cmd[4200];
    snprintf(c, sizeof c, "%s/copyA", root);
    snprintf(damaged, sizeof damaged, "%s/damaged", root);
    snprintf(norec, sizeof norec, "%s/norecords", root);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && cp -r '%s' '%s' && mkdir '%s' && "
                              "f=$(ls '%s'/records/*.sps | head -1) && printf 'garbage!' | dd of=\"$f\" bs=1 seek=0 "
                              "conv=notrunc status=none",
             a, c, a, damaged, norec, damaged);
    CHECK(system(cmd) == 0);
    /* an OUT that does not exist yet inside an input: refused before it is made */
    char inside[1200], inside_records[1200];
    snprintf(inside, sizeof inside, "%s/sub/merged", a);
    snprintf(inside_records, sizeof inside_records, "%s/records/x", a);
    struct {
        char *args[6];
        const char *says;
    } cases[] = {
        {{a, c, "-o", out2, NULL}, "rank 0 of host nodeA is in both"},
        {{a, a, "-o", out2, NULL}, "given twice"},
        {{a, norec, "-o", out2, NULL}, "not a run directory: no records/"},
        {{a, damaged, "-o", out2, NULL}, "damaged record"},
        {{a, "/nonexistent/run", "-o", out2, NULL}, "No such file or directory"},
        {{a, b, "-o", out, NULL}, "exists and is not empty"},
        {{a, b, "-o", a, NULL}, "is an input or inside one"},
        {{a, b, "-o", inside, NULL}, "is an input or inside one"},
        {{a, b, "-o", inside_records, NULL}, "is an input or inside one"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char o2[1200];
        snprintf(o2, sizeof o2, "%s/bad%zu", root, i);
        if (cases[i].args[3] == out2)
            cases[i].args[3] = o2;
        CHECK_MSG(merge(err, sizeof err, cases[i].args) == 1, "case %zu exits 1", i);
        CHECK_STR_HAS(err, cases[i].says);
        CHECK_MSG(count_lines(err) == 1, "case %zu: one line: %s", i, err);
    }
    char *after_a = snapshot(a), *after_b = snapshot(b);
    CHECK(before_a[0] && !strcmp(before_a, after_a));
    CHECK(before_b[0] && !strcmp(before_b, after_b));
    free(before_a), free(before_b), free(after_a), free(after_b);
    json_decref(m), json_decref(ra), json_decref(rb), json_decref(re), json_decref(forced);
}

/* 64 simulated ranks, two nodes of 32 processes each: the merged report
 * has every rank once, on its host.  (bench/bench_merge.c times it.) */
static void test_64_ranks(void) {
    const char *root = tmpdir_new("merge_64");
    char dirs[2][1024], out[1024], err[4096];
    for (int node = 0; node < 2; node++) {
        snprintf(dirs[node], sizeof dirs[node], "%s/node%d", root, node);
        char host[32], hostenv[64], first[16];
        snprintf(host, sizeof host, "sim%d", node);
        snprintf(hostenv, sizeof hostenv, "STEPSCOPE_HOSTNAME=%s", host);
        snprintf(first, sizeof first, "%d", node * 32);
        char *argv[] = {"/usr/bin/env", hostenv, STEPSCOPE, "run", "-q", "-o", dirs[node], "--", RANK_SIM,
                        "--ranks", "32", "--first-rank", first, "--world", "64", "--steps", "10", "--spin-us", "20",
                        NULL};
        CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == 0, "node %d: %s", node, err);
    }
    snprintf(out, sizeof out, "%s/merged", root);
    CHECK_MSG(merge(err, sizeof err, (char *[]){dirs[0], dirs[1], "-o", out, "-q", NULL}) == 0, "%s", err);
    json_t *m = report_load(out);
    json_t *procs = m ? json_path(m, "processes") : NULL;
    CHECK_EQ_U(json_array_size(procs), 64);
    int seen[64] = {0};
    for (size_t i = 0; i < json_array_size(procs); i++) {
        json_t *p = json_array_get(procs, i);
        json_int_t r = json_integer_value(json_object_get(p, "rank"));
        const char *host = json_string_value(json_object_get(p, "hostname"));
        if (r >= 0 && r < 64) {
            seen[r]++;
            CHECK_STR_HAS(host ? host : "", r < 32 ? "sim0" : "sim1");
        }
    }
    int once = 0;
    for (int r = 0; r < 64; r++)
        once += seen[r] == 1;
    CHECK_EQ_I(once, 64);
    CHECK_EQ_U(json_integer_value(json_path(m, "steps.count")), 640);
    json_decref(m);
}

/* A rank's children inherit RANK (DataLoader workers do): one input holds
 * several processes of one rank, which is no duplicate; the same rank of
 * the same host in two inputs still is. */
static void test_rank_with_children(void) {
    const char *root = tmpdir_new("merge_children");
    char dirs[2][1024], out[1024], again[1024], err[4096];
    for (int node = 0; node < 2; node++) {
        snprintf(dirs[node], sizeof dirs[node], "%s/node%d", root, node);
        char hostenv[64], rankenv[32];
        snprintf(hostenv, sizeof hostenv, "STEPSCOPE_HOSTNAME=kids%d", node);
        snprintf(rankenv, sizeof rankenv, "RANK=%d", node);
        char *argv[] = {"/usr/bin/env", hostenv, rankenv, "WORLD_SIZE=2", STEPSCOPE, "run", "-q", "-o", dirs[node],
                        "--", WORKLOAD, "--steps", "4", "--fork", "1", NULL};
        CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == 0, "node %d: %s", node, err);
    }
    snprintf(out, sizeof out, "%s/merged", root);
    CHECK_MSG(merge(err, sizeof err, (char *[]){dirs[0], dirs[1], "-o", out, "-q", NULL}) == 0, "%s", err);
    json_t *m = report_load(out);
    json_t *procs = m ? json_path(m, "processes") : NULL;
    int per_rank[2] = {0, 0};
    for (size_t i = 0; i < json_array_size(procs); i++) {
        json_int_t r = json_integer_value(json_object_get(json_array_get(procs, i), "rank"));
        if (r == 0 || r == 1)
            per_rank[r]++;
    }
    CHECK_MSG(per_rank[0] >= 2 && per_rank[1] >= 2, "each rank with its child: %d and %d processes", per_rank[0],
              per_rank[1]);
    json_decref(m);
    snprintf(again, sizeof again, "%s/again", root);
    CHECK(merge(err, sizeof err, (char *[]){dirs[0], out, "-o", again, NULL}) == 1);
}

/* An input whose stepscope run was killed before report.json (records
 * only): merged from its records, and the summary knows no exit, times or
 * peak RSS, so it has no "stepscope: " line to put them on (it printed an
 * empty one). */
static void test_input_without_report_json(void) {
    const char *root = tmpdir_new("merge_killed");
    char dir[1024], json[1100], out[1024], err[16384];
    snprintf(dir, sizeof dir, "%s/run", root);
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", WORKLOAD, "--steps", "4", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    snprintf(json, sizeof json, "%s/report.json", dir);
    CHECK(unlink(json) == 0);
    snprintf(out, sizeof out, "%s/merged", root);
    CHECK_MSG(merge(err, sizeof err, (char *[]){dir, "-o", out, NULL}) == 0, "%s", err);
    CHECK_STR_HAS(err, "\nmerged    1 run(s)");
    CHECK_MSG(!strstr(err, "stepscope: \n"), "an empty first line:\n%s", err);
    json_t *m = report_load(out);
    CHECK(m && json_num(m, "steps.count") == 4);
    json_decref(m);
}

/* An input whose report.json is another run's (`cp pt/report.json
 * k2/`): refused in one line that says what rebuilds it, OUT not made,
 * instead of a merge of k2's records under pt's command and machine;
 * after `stepscope report k2` the merge is k2's. */
static void test_input_stale_report_json(void) {
    const char *root = tmpdir_new("merge_stale");
    char pt[1024], k2[1024], from[1100], to[1100], out[1024], err[16384];
    snprintf(pt, sizeof pt, "%s/pt", root);
    snprintf(k2, sizeof k2, "%s/k2", root);
    char *run_pt[] = {STEPSCOPE, "run", "-q", "-o", pt, "--", WORKLOAD, "--steps", "4", NULL};
    char *run_k2[] = {STEPSCOPE, "run", "-q", "-o", k2, "--", WORKLOAD, "--steps", "7", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(run_pt, err, sizeof err)), 0);
    CHECK_EQ_I(exit_code_of(run_capture(run_k2, err, sizeof err)), 0);
    snprintf(from, sizeof from, "%s/report.json", pt);
    snprintf(to, sizeof to, "%s/report.json", k2);
    size_t len = 0;
    char *data = read_whole(from, &len);
    CHECK(data != NULL);
    if (data)
        write_file(to, data, len);
    free(data);
    snprintf(out, sizeof out, "%s/m3", root);
    CHECK(merge(err, sizeof err, (char *[]){k2, "-o", out, NULL}) == 1);
    CHECK_STR_HAS(err, "stepscope: merge: ");
    CHECK_STR_HAS(err, "/k2: report.json is another run's: ");
    CHECK_STR_HAS(err, "/k2` rebuilds it from the records");
    CHECK_MSG(count_lines(err) == 1, "one line:\n%s", err);
    struct stat st;
    CHECK(stat(out, &st) != 0);
    char *rebuild[] = {STEPSCOPE, "report", k2, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(rebuild, err, sizeof err)), 0);
    CHECK_MSG(merge(err, sizeof err, (char *[]){k2, "-o", out, NULL}) == 0, "%s", err);
    json_t *m = report_load(out);
    CHECK(m && json_num(m, "steps.count") == 7);
    json_decref(m);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "64")) {
        test_64_ranks();
        printf("test_merge 64: %d passed, %d failed\n", check_passes, check_failures);
        return check_failures ? 1 : 0;
    }
    test_offset_arithmetic();
    test_merge_file_out_of_range();
    test_measured_and_realtime();
    test_process_align();
    test_unique_pids();
    test_plan();
    test_merge_file();
    test_end_to_end();
    test_rank_with_children();
    test_input_without_report_json();
    test_input_stale_report_json();
    printf("test_merge: %d passed, %d failed\n", check_passes, check_failures);
    return check_failures ? 1 : 0;
}
