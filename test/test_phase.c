/*
 * test_phase.c - chained phases (sps_phase, SPS_PHASE, sps_phase_end):
 * one clock read per boundary, exact durations and self times, what owns
 * a phase and what ends it, mismatches, recording off, the overhead
 * guard's thin levels, the nesting limit, fork, and phases read back as
 * zones into report.json.
 *
 * The clock is this file's: the test runs the recorder on CLOCK_MONOTONIC
 * (STEPSCOPE_CLOCK=monotonic) and defines clock_gettime, which the
 * recorder linked into this binary calls, so CLOCK_MONOTONIC reads
 * return a time that moves only when the test advances it, and every read
 * is counted.  Durations are then exact nanoseconds, and "one timestamp
 * per boundary" is a count of reads.  Other clocks are the kernel's.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "record_format.h"
#include "recorder.h"
#include "stepscope.h"
#include "support.h"

/* ------------------------------------------------------------ the clock */

static uint64_t fake_ns = 1000000000u; /* CLOCK_MONOTONIC, as the recorder reads it */
static uint64_t fake_reads;

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (id != CLOCK_MONOTONIC)
        return (int)syscall(SYS_clock_gettime, id, ts);
    uint64_t ns = __atomic_load_n(&fake_ns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&fake_reads, 1, __ATOMIC_RELAXED);
    ts->tv_sec = (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
    return 0;
}

static void advance(uint64_t ns) {
    __atomic_add_fetch(&fake_ns, ns, __ATOMIC_RELAXED);
}

static uint64_t reads(void) {
    return __atomic_load_n(&fake_reads, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ reading back */

/* Every test uses names of its own, so totals are its own. */
static struct sps_agg agg_of(const struct sps_run *run, const char *name, uint32_t kind) {
    long i = sps__run_find(run, name, kind);
    struct sps_agg none;
    memset(&none, 0, sizeof none);
    return i < 0 ? none : run->names[i].agg;
}

/* The last zone-ring event of the main thread named name (NULL: none). */
static const struct sps_event *last_event(const struct sps_run *run, const char *name, int ring) {
    long i = sps__run_find(run, name, ring == SPS_RING_STEPS ? SPS_KIND_STEP : SPS_KIND_ZONE);
    if (i < 0)
        return NULL;
    const struct sps_process_data *p = &run->procs[0];
    const struct sps_thread_data *t = &p->threads[0];
    for (size_t k = t->nevents[ring]; k-- > 0;) {
        const struct sps_event *e = &t->events[ring][k];
        if (p->summary_of[e->name - 1] == i)
            return e;
    }
    return NULL;
}

static uint64_t mismatched(void) {
    struct sps_run run;
    run_of_this_process(&run);
    uint64_t n = run.procs[0].threads[0].mismatched_ends;
    sps__run_free(&run);
    return n;
}

/* ------------------------------------------------------------ the tests */

/* Four phases in a step: six clock reads where four zones take ten, each
 * phase's duration exact, the step's self time what no phase covers, and
 * each boundary one timestamp shared by the two sides. */
static void test_chain_in_step(void) {
    uint64_t mm = mismatched();
    uint64_t r0 = reads();
    {
        SPS_STEP_NAMED("ch_step");
        advance(10);
        SPS_PHASE("ch_data");
        advance(100);
        SPS_PHASE("ch_forward");
        advance(200);
        SPS_PHASE("ch_backward");
        advance(300);
        SPS_PHASE("ch_optimizer");
        advance(400);
    }
    uint64_t phase_reads = reads() - r0;
    r0 = reads();
    {
        SPS_STEP_NAMED("ch_zstep");
        { SPS_ZONE("ch_z1"); advance(100); }
        { SPS_ZONE("ch_z2"); advance(200); }
        { SPS_ZONE("ch_z3"); advance(300); }
        { SPS_ZONE("ch_z4"); advance(400); }
    }
    uint64_t zone_reads = reads() - r0;
    CHECK_EQ_U(phase_reads, 6);
    CHECK_EQ_U(zone_reads, 10);

    struct sps_run run;
    run_of_this_process(&run);
    static const char *const names[] = {"ch_data", "ch_forward", "ch_backward", "ch_optimizer"};
    for (int i = 0; i < 4; i++) {
        struct sps_agg a = agg_of(&run, names[i], SPS_KIND_ZONE);
        CHECK_EQ_U(a.count, 1);
        CHECK_EQ_U(a.total_ns, 100u * (i + 1));
        CHECK_EQ_U(a.self_ns, 100u * (i + 1));
    }
    struct sps_agg step = agg_of(&run, "ch_step", SPS_KIND_STEP);
    CHECK_EQ_U(step.count, 1);
    CHECK_EQ_U(step.total_ns, 1010);
    CHECK_EQ_U(step.self_ns, 10);
    const struct sps_event *s = last_event(&run, "ch_step", SPS_RING_STEPS);
    const struct sps_event *e[4];
    for (int i = 0; i < 4; i++)
        e[i] = last_event(&run, names[i], SPS_RING_ZONES);
    CHECK(s && e[0] && e[1] && e[2] && e[3]);
    if (s && e[0] && e[1] && e[2] && e[3]) {
        for (int i = 0; i < 3; i++)
            CHECK_EQ_U(e[i]->end_ns, e[i + 1]->start_ns);
        CHECK_EQ_U(e[3]->end_ns, s->end_ns); /* the step's end closed the last */
        CHECK_EQ_U(e[0]->start_ns, s->start_ns + 10);
        for (int i = 0; i < 4; i++)
            CHECK_EQ_U(e[i]->depth, s->depth + 1);
    }
    CHECK_EQ_U(run.procs[0].threads[0].mismatched_ends, mm);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* A phase's aggregate is a zone's, field for field, for durations that
 * take every branch of the chain's bookkeeping: a new minimum and maximum
 * and neither, squares past 64 bits in sum (a carry into the high half)
 * and a duration past 2^32 ns (a square past 64 bits by itself), short
 * and long histogram buckets; the last phase ended by its step's end. */
static void test_statistics_as_zones(void) {
    static const uint64_t durs[] = {4000000000u, 7, 4100000000u, 5000000000u, 300, 150000, 4000000000u};
    enum { N = sizeof durs / sizeof durs[0] };
    {
        SPS_STEP_NAMED("st_pstep");
        for (int i = 0; i < N; i++) {
            SPS_PHASE("st_phase");
            advance(durs[i]);
        }
    }
    {
        SPS_STEP_NAMED("st_zstep");
        for (int i = 0; i < N; i++) {
            SPS_ZONE("st_zone");
            advance(durs[i]);
        }
    }
    unsigned __int128 sumsq = 0;
    uint64_t total = 0;
    for (int i = 0; i < N; i++) {
        sumsq += (unsigned __int128)durs[i] * durs[i];
        total += durs[i];
    }
    struct sps_run run;
    run_of_this_process(&run);
    struct sps_agg p = agg_of(&run, "st_phase", SPS_KIND_ZONE), z = agg_of(&run, "st_zone", SPS_KIND_ZONE);
    CHECK_EQ_U(p.count, N);
    CHECK_EQ_U(p.total_ns, total);
    CHECK_EQ_U(p.self_ns, total);
    CHECK_EQ_U(p.min_ns, 7);
    CHECK_EQ_U(p.max_ns, 5000000000u);
    CHECK(p.sumsq_ns == sumsq);
    CHECK_EQ_U((uint64_t)(p.sumsq_ns >> 64), (uint64_t)(sumsq >> 64));
    CHECK_EQ_U(z.count, p.count);
    CHECK_EQ_U(z.total_ns, p.total_ns);
    CHECK_EQ_U(z.min_ns, p.min_ns);
    CHECK_EQ_U(z.max_ns, p.max_ns);
    CHECK(z.sumsq_ns == p.sumsq_ns);
    CHECK(p.hist && z.hist);
    if (p.hist && z.hist) {
        uint64_t in_hist = 0;
        for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++) {
            CHECK_EQ_U(p.hist[b], z.hist[b]);
            in_hist += p.hist[b];
        }
        CHECK_EQ_U(in_hist, N);
        CHECK_EQ_U(p.hist[sps_hist_bucket(7)], 1);
        CHECK_EQ_U(p.hist[sps_hist_bucket(4000000000u)], 2);
    }
    sps__run_free(&run);
}

/* A process killed (SIGKILL) anywhere in a chain of phases leaves a
 * record that reads back consistent: every phase ended is counted once,
 * with its exact duration in every statistic (a duration may be in the
 * sums ahead of its count, as a zone's may), its histogram holds its
 * count, and a step's phases are counted as often as the step or once
 * more (ended before the step's end was): at most the open phase is
 * lost.  Kills at several moments, so some land in the bookkeeping. */
static void test_killed_mid_chain(void) {
    const char *dir = tmpdir_new("phase_kill");
    static const char *const names[] = {"kl_a", "kl_b"};
    static const uint64_t durs[] = {100, 300};
    int killed = 0;
    for (int round = 0; round < 8; round++) {
        char sub[600];
        snprintf(sub, sizeof sub, "%s/%d", dir, round);
        CHECK(mkdir(sub, 0777) == 0);
        int ready[2];
        CHECK(pipe(ready) == 0);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("STEPSCOPE_RUN_DIR", sub, 1); /* the child's own record, in a file */
            for (uint64_t i = 0;; i++) {
                {
                    SPS_STEP_NAMED("kl_step");
                    SPS_PHASE("kl_a");
                    advance(durs[0]);
                    SPS_PHASE("kl_b");
                    advance(durs[1]);
                }
                if (i == 0 && write(ready[1], "r", 1) != 1) /* a step is recorded: kill me now */
                    _exit(1);
            }
        }
        CHECK(pid > 0);
        char c;
        CHECK(read(ready[0], &c, 1) == 1);
        close(ready[0]);
        close(ready[1]);
        usleep(1000u * (unsigned)round);
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        killed += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;

        char records[700], err[512];
        snprintf(records, sizeof records, "%s/records", sub);
        struct sps_run run;
        memset(&run, 0, sizeof run);
        int rc = sps__run_load_dir(&run, records, err, sizeof err);
        CHECK_EQ_I(rc, 0);
        if (rc == 0)
            rc = sps__run_build(&run);
        CHECK_EQ_I(rc, 0);
        CHECK_EQ_U(run.nskipped, 0);
        struct sps_agg step = agg_of(&run, "kl_step", SPS_KIND_STEP);
        CHECK(step.count > 0);
        for (int i = 0; i < 2; i++) {
            struct sps_agg a = agg_of(&run, names[i], SPS_KIND_ZONE);
            uint64_t d = durs[i], n = a.count;
            CHECK(n == step.count || n == step.count + 1);
            CHECK(a.total_ns == n * d || a.total_ns == (n + 1) * d);
            CHECK(a.sumsq_ns == (unsigned __int128)n * d * d || a.sumsq_ns == (unsigned __int128)(n + 1) * d * d);
            CHECK_EQ_U(a.min_ns, d);
            CHECK_EQ_U(a.max_ns, d);
            CHECK(a.hist != NULL);
            if (a.hist) {
                CHECK_EQ_U(a.hist[sps_hist_bucket(d)], n);
                uint64_t in_hist = 0;
                for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++)
                    in_hist += a.hist[b];
                CHECK_EQ_U(in_hist, n);
            }
        }
        /* b ends before its step does: never counted more often than a */
        CHECK(agg_of(&run, "kl_b", SPS_KIND_ZONE).count <= agg_of(&run, "kl_a", SPS_KIND_ZONE).count);
        sps__run_free(&run);
    }
    CHECK_EQ_I(killed, 8);
}

/* Zones begun in a phase nest in it; a phase called while such a zone is
 * open belongs to that zone, ends with it, and leaves the outer phase
 * running. */
static void test_nesting(void) {
    uint64_t mm = mismatched();
    {
        SPS_STEP_NAMED("ne_step");
        SPS_PHASE("ne_a");
        advance(5);
        {
            SPS_ZONE("ne_zone");
            advance(10);
            SPS_PHASE("ne_x");
            advance(7);
            SPS_PHASE("ne_y");
            advance(3);
        } /* ends ne_y, then the zone, at one timestamp */
        advance(4);
        SPS_PHASE("ne_b");
        advance(1);
    }
    struct sps_run run;
    run_of_this_process(&run);
    struct sps_agg a = agg_of(&run, "ne_a", SPS_KIND_ZONE), z = agg_of(&run, "ne_zone", SPS_KIND_ZONE);
    struct sps_agg x = agg_of(&run, "ne_x", SPS_KIND_ZONE), y = agg_of(&run, "ne_y", SPS_KIND_ZONE);
    struct sps_agg b = agg_of(&run, "ne_b", SPS_KIND_ZONE);
    CHECK_EQ_U(a.total_ns, 5 + 20 + 4);
    CHECK_EQ_U(a.self_ns, 9);
    CHECK_EQ_U(z.total_ns, 20);
    CHECK_EQ_U(z.self_ns, 10);
    CHECK_EQ_U(x.total_ns, 7);
    CHECK_EQ_U(y.total_ns, 3);
    CHECK_EQ_U(b.total_ns, 1);
    const struct sps_event *ey = last_event(&run, "ne_y", SPS_RING_ZONES);
    const struct sps_event *ez = last_event(&run, "ne_zone", SPS_RING_ZONES);
    const struct sps_event *ea = last_event(&run, "ne_a", SPS_RING_ZONES);
    CHECK(ey && ez && ea);
    if (ey && ez && ea) {
        CHECK_EQ_U(ey->end_ns, ez->end_ns);
        CHECK_EQ_U(ea->depth, 1);
        CHECK_EQ_U(ez->depth, 2);
        CHECK_EQ_U(ey->depth, 3);
    }
    CHECK_EQ_U(run.procs[0].threads[0].mismatched_ends, mm);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* A micro-step owns its phases; the step's phase after the last
 * micro-step belongs to the step.  A micro-step taken back
 * (sps__zone_discard) hands its open phase to the step, whose end ends
 * it. */
static void test_microsteps_and_discard(void) {
    {
        SPS_STEP_NAMED("ms_step");
        for (int i = 0; i < 2; i++) {
            SPS_MICROSTEP();
            SPS_PHASE("ms_fwd");
            advance(5 + (uint64_t)i);
            SPS_PHASE("ms_bwd");
            advance(6);
        }
        SPS_PHASE("ms_opt");
        advance(8);
    }
    struct sps_site *step = sps_site_get("ms_dstep", SPS_KIND_STEP);
    struct sps_site *micro = sps_site_get("ms_dmicro", SPS_KIND_MICROSTEP);
    struct sps_site *a = sps_site_get("ms_da", SPS_KIND_ZONE);
    sps_zone_t s = sps_zone_begin(step), m = sps_zone_begin(micro);
    sps_phase(a);
    advance(9);
    CHECK_EQ_I(sps__zone_discard(m), 1);
    advance(2);
    sps_zone_end(s);

    struct sps_run run;
    run_of_this_process(&run);
    struct sps_agg fwd = agg_of(&run, "ms_fwd", SPS_KIND_ZONE), bwd = agg_of(&run, "ms_bwd", SPS_KIND_ZONE);
    struct sps_agg opt = agg_of(&run, "ms_opt", SPS_KIND_ZONE);
    struct sps_agg mic = agg_of(&run, "microstep", SPS_KIND_MICROSTEP);
    CHECK_EQ_U(fwd.count, 2);
    CHECK_EQ_U(fwd.total_ns, 11);
    CHECK_EQ_U(bwd.count, 2);
    CHECK_EQ_U(bwd.total_ns, 12);
    CHECK_EQ_U(opt.total_ns, 8);
    CHECK(mic.count >= 2);
    const struct sps_event *eo = last_event(&run, "ms_opt", SPS_RING_ZONES);
    CHECK(eo && eo->depth == 1);
    struct sps_agg da = agg_of(&run, "ms_da", SPS_KIND_ZONE), ds = agg_of(&run, "ms_dstep", SPS_KIND_STEP);
    CHECK_EQ_U(agg_of(&run, "ms_dmicro", SPS_KIND_MICROSTEP).count, 0);
    CHECK_EQ_U(da.count, 1);
    CHECK_EQ_U(da.total_ns, 11);
    CHECK_EQ_U(ds.total_ns, 11);
    CHECK_EQ_U(ds.self_ns, 0); /* the phase is the step's child now */
    const struct sps_event *ea = last_event(&run, "ms_da", SPS_RING_ZONES);
    const struct sps_event *es = last_event(&run, "ms_dstep", SPS_RING_STEPS);
    CHECK(ea && es && ea->end_ns == es->end_ns && ea->depth == es->depth + 1);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* sps_phase_end ends the innermost scope's phase only; with none open it
 * does nothing. */
static void test_phase_end(void) {
    uint64_t mm = mismatched();
    SPS_PHASE_END(); /* nothing open: nothing */
    {
        SPS_STEP_NAMED("pe_step");
        SPS_PHASE_END(); /* the step has no phase: nothing */
        SPS_PHASE("pe_a");
        advance(5);
        uint64_t r0 = reads();
        SPS_PHASE_END();
        CHECK_EQ_U(reads() - r0, 1);
        advance(3);
        SPS_PHASE("pe_b");
        advance(2);
        {
            SPS_ZONE("pe_zone");
            advance(1);
            SPS_PHASE_END(); /* the zone's, which has none: pe_b goes on */
            advance(1);
        }
        advance(4);
    }
    struct sps_run run;
    run_of_this_process(&run);
    CHECK_EQ_U(agg_of(&run, "pe_a", SPS_KIND_ZONE).total_ns, 5);
    CHECK_EQ_U(agg_of(&run, "pe_b", SPS_KIND_ZONE).total_ns, 8);
    CHECK_EQ_U(agg_of(&run, "pe_b", SPS_KIND_ZONE).self_ns, 6);
    struct sps_agg st = agg_of(&run, "pe_step", SPS_KIND_STEP);
    CHECK_EQ_U(st.total_ns, 16);
    CHECK_EQ_U(st.self_ns, 3);
    CHECK_EQ_U(run.procs[0].threads[0].mismatched_ends, mm);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* Ending a step while a zone inside its phase is open is a mismatched
 * end: the zone and the phase are closed implicitly, unrecorded, and the
 * frames they used are plain again (a zone later begun there is no
 * phase: a phase call then nests in it). */
static void test_mismatch(void) {
    uint64_t mm = mismatched();
    struct sps_site *step = sps_site_get("mi_step", SPS_KIND_STEP);
    struct sps_site *zone = sps_site_get("mi_zone", SPS_KIND_ZONE);
    struct sps_site *a = sps_site_get("mi_a", SPS_KIND_ZONE), *b = sps_site_get("mi_b", SPS_KIND_ZONE);
    sps_zone_t s = sps_zone_begin(step);
    sps_phase(a);
    advance(3);
    sps_zone_t z = sps_zone_begin(zone);
    (void)z;
    advance(4);
    sps_zone_end(s);
    CHECK_EQ_U(mismatched(), mm + 1);

    s = sps_zone_begin(step);
    sps_zone_t z2 = sps_zone_begin(zone); /* on the frame the phase had */
    advance(2);
    sps_phase(b); /* the zone's phase, one frame up */
    advance(6);
    sps_zone_end(z2);
    sps_zone_end(s);

    struct sps_run run;
    run_of_this_process(&run);
    CHECK_EQ_U(agg_of(&run, "mi_a", SPS_KIND_ZONE).count, 0);
    struct sps_agg zz = agg_of(&run, "mi_zone", SPS_KIND_ZONE);
    CHECK_EQ_U(zz.count, 1);
    CHECK_EQ_U(zz.total_ns, 8);
    CHECK_EQ_U(zz.self_ns, 2);
    CHECK_EQ_U(agg_of(&run, "mi_b", SPS_KIND_ZONE).total_ns, 6);
    CHECK_EQ_U(agg_of(&run, "mi_step", SPS_KIND_STEP).count, 2);
    CHECK_EQ_U(run.procs[0].threads[0].mismatched_ends, mm + 1);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* Phases of the thread (nothing open): they chain, sps_phase_end ends
 * them, and the thread's exit ends the last. */
static void *root_phase_thread(void *arg) {
    (void)arg;
    SPS_PHASE("rt_worker");
    advance(70);
    return NULL; /* the thread's exit ends rt_worker */
}

static void test_thread_root(void) {
    SPS_PHASE("rt_load");
    advance(50);
    SPS_PHASE("rt_train");
    advance(60);
    SPS_PHASE_END();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, root_phase_thread, NULL) == 0);
    pthread_join(t, NULL);
    struct sps_run run;
    run_of_this_process(&run);
    struct sps_agg load = agg_of(&run, "rt_load", SPS_KIND_ZONE), train = agg_of(&run, "rt_train", SPS_KIND_ZONE);
    struct sps_agg worker = agg_of(&run, "rt_worker", SPS_KIND_ZONE);
    CHECK_EQ_U(load.total_ns, 50);
    CHECK_EQ_U(train.total_ns, 60);
    CHECK_EQ_U(worker.count, 1);
    CHECK_EQ_U(worker.total_ns, 70);
    const struct sps_event *e = last_event(&run, "rt_load", SPS_RING_ZONES);
    CHECK(e && e->depth == 0);
    sps__run_free(&run);
}

/* Recording off: a phase call ends the open phase and begins none;
 * sps_phase with NULL or a site of another kind does the same. */
static void test_disabled_and_bad_sites(void) {
    {
        SPS_STEP_NAMED("di_step");
        SPS_PHASE("di_a");
        advance(5);
        sps_set_enabled(0);
        SPS_PHASE("di_off"); /* ends di_a */
        advance(100);
        sps_set_enabled(1);
        SPS_PHASE("di_b");
        advance(7);
        sps_phase(NULL); /* ends di_b */
        advance(1);
        SPS_PHASE("di_c");
        advance(2);
        sps_phase(sps_site_get("di_value", SPS_KIND_VALUE)); /* ends di_c */
        advance(1);
        sps_phase(sps_site_get("di_stepsite", SPS_KIND_STEP)); /* nothing open: nothing */
    }
    struct sps_run run;
    run_of_this_process(&run);
    CHECK_EQ_U(agg_of(&run, "di_a", SPS_KIND_ZONE).total_ns, 5);
    CHECK_EQ_U(agg_of(&run, "di_off", SPS_KIND_ZONE).count, 0);
    CHECK_EQ_U(agg_of(&run, "di_b", SPS_KIND_ZONE).total_ns, 7);
    CHECK_EQ_U(agg_of(&run, "di_c", SPS_KIND_ZONE).total_ns, 2);
    CHECK_EQ_U(agg_of(&run, "di_stepsite", SPS_KIND_STEP).count, 0);
    struct sps_agg st = agg_of(&run, "di_step", SPS_KIND_STEP);
    CHECK_EQ_U(st.total_ns, 116);
    CHECK_EQ_U(st.self_ns, 102);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* The nesting limit: a phase one frame past the 62nd is refused and
 * counted; on the 62nd frame phases chain. */
static void test_depth_limit(void) {
    struct sps_site *zone = sps_site_get("dl_zone", SPS_KIND_ZONE);
    struct sps_site *a = sps_site_get("dl_a", SPS_KIND_ZONE), *b = sps_site_get("dl_b", SPS_KIND_ZONE);
    sps_zone_t t[SPS_REC_MAX_DEPTH];
    struct sps_run run;
    run_of_this_process(&run);
    uint64_t over = run.procs[0].threads[0].depth_overflows;
    sps__run_free(&run);
    for (int i = 0; i < (int)SPS_REC_MAX_DEPTH - 1; i++)
        t[i] = sps_zone_begin(zone);
    sps_phase(a); /* frame 62 */
    advance(3);
    sps_phase(b);
    advance(4);
    sps_zone_t deep = sps_zone_begin(zone); /* frame 63: refused */
    CHECK_EQ_U(deep, 0);
    sps_zone_end(t[SPS_REC_MAX_DEPTH - 2]); /* ends dl_b first */
    t[SPS_REC_MAX_DEPTH - 2] = sps_zone_begin(zone); /* frame 61 again */
    sps_zone_t top = sps_zone_begin(zone);           /* frame 62 */
    sps_phase(a);                                    /* frame 63: refused */
    sps_zone_end(top);
    for (int i = (int)SPS_REC_MAX_DEPTH - 2; i >= 0; i--)
        sps_zone_end(t[i]);
    run_of_this_process(&run);
    CHECK_EQ_U(agg_of(&run, "dl_a", SPS_KIND_ZONE).count, 1);
    CHECK_EQ_U(agg_of(&run, "dl_a", SPS_KIND_ZONE).total_ns, 3);
    CHECK_EQ_U(agg_of(&run, "dl_b", SPS_KIND_ZONE).total_ns, 4);
    CHECK_EQ_U(run.procs[0].threads[0].depth_overflows, over + 2);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* The overhead guard's levels, as the guard writes them into the header:
 * a phase directly in a step survives SPS_THIN_PHASES; SPS_THIN_STEPS
 * refuses every phase, and each refused one is counted while its
 * predecessor still ends.  A zone the guard leaves out leaves no frame, so
 * a phase called inside it is taken for a phase of the scope around it
 * (here it ends th_a and runs until th_b). */
static struct sps_rec_header *own_header(void) {
    const void *base;
    size_t size;
    char label[512];
    if (sps__recorder_snapshot(&base, &size, label, sizeof label) != 0) {
        fprintf(stderr, "this process has no record\n");
        exit(1);
    }
    return (struct sps_rec_header *)(uintptr_t)base;
}

static void set_level(uint32_t level) {
    __atomic_store_n(&own_header()->thin_level, level, __ATOMIC_RELAXED);
    SPS_STEP_NAMED("th_empty"); /* its end is where the level is reread */
}

static uint64_t thinned(void) {
    struct sps_run run;
    run_of_this_process(&run);
    uint64_t n = run.procs[0].zones_thinned; /* the header's and every thread's */
    sps__run_free(&run);
    return n;
}

static void test_thinning(void) {
    uint64_t th = thinned();
    set_level(SPS_THIN_PHASES);
    {
        SPS_STEP_NAMED("th_step");
        SPS_PHASE("th_a");
        advance(3);
        {
            SPS_ZONE("th_zone");   /* thinned */
            SPS_PHASE("th_inner"); /* the step's, after th_a */
            advance(1);
        }
        SPS_PHASE("th_b");
        advance(2);
    }
    CHECK_EQ_U(thinned(), th + 1);
    set_level(SPS_THIN_STEPS);
    {
        SPS_STEP_NAMED("th_step");
        SPS_PHASE("th_c"); /* thinned */
        advance(5);
        SPS_PHASE("th_d"); /* thinned */
        advance(5);
    }
    CHECK_EQ_U(thinned(), th + 3);
    set_level(SPS_THIN_NONE);
    struct sps_run run;
    run_of_this_process(&run);
    CHECK_EQ_U(agg_of(&run, "th_a", SPS_KIND_ZONE).total_ns, 3);
    CHECK_EQ_U(agg_of(&run, "th_inner", SPS_KIND_ZONE).total_ns, 1);
    CHECK_EQ_U(agg_of(&run, "th_b", SPS_KIND_ZONE).total_ns, 2);
    CHECK_EQ_U(agg_of(&run, "th_zone", SPS_KIND_ZONE).count, 0);
    CHECK_EQ_U(agg_of(&run, "th_c", SPS_KIND_ZONE).count, 0);
    CHECK_EQ_U(agg_of(&run, "th_d", SPS_KIND_ZONE).count, 0);
    CHECK_EQ_U(agg_of(&run, "th_step", SPS_KIND_STEP).count, 2);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    sps__run_free(&run);
}

/* fork(): the child carries the forking thread's open phase like an open
 * zone; its next phase ends that one (the parent records it) and begins
 * its own; the step's end in the child ends the child's phase. */
static void test_fork(void) {
    struct sps_site *step = sps_site_get("fk_step", SPS_KIND_STEP);
    struct sps_site *a = sps_site_get("fk_a", SPS_KIND_ZONE), *b = sps_site_get("fk_child", SPS_KIND_ZONE);
    sps_zone_t s = sps_zone_begin(step);
    sps_phase(a);
    advance(3);
    pid_t pid = fork();
    if (pid == 0) {
        sps_phase(b);
        advance(11);
        sps_zone_end(s);
        struct sps_run run;
        run_of_this_process(&run);
        int ok = agg_of(&run, "fk_child", SPS_KIND_ZONE).total_ns == 11 &&
                 agg_of(&run, "fk_a", SPS_KIND_ZONE).count == 0 &&
                 agg_of(&run, "fk_step", SPS_KIND_STEP).count == 0 && run.procs[0].threads[0].nopen == 0 &&
                 run.procs[0].threads[0].mismatched_ends == 0;
        if (!ok)
            fprintf(stderr, "child: fk_child %" PRIu64 " ns, fk_a %" PRIu64 ", open %u, mismatched %" PRIu64 "\n",
                    agg_of(&run, "fk_child", SPS_KIND_ZONE).total_ns, agg_of(&run, "fk_a", SPS_KIND_ZONE).count,
                    run.procs[0].threads[0].nopen, run.procs[0].threads[0].mismatched_ends);
        sps__run_free(&run);
        _exit(ok ? 0 : 1);
    }
    CHECK(pid > 0);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    advance(4);
    sps_zone_end(s);
    struct sps_run run;
    run_of_this_process(&run);
    CHECK_EQ_U(agg_of(&run, "fk_a", SPS_KIND_ZONE).total_ns, 7);
    CHECK_EQ_U(agg_of(&run, "fk_child", SPS_KIND_ZONE).count, 0);
    sps__run_free(&run);
}

/* Phases are zones in report.json: their statistics and each step's row
 * carry them, to the nanosecond. */
static void test_report(void) {
    for (int i = 0; i < 3; i++) {
        SPS_STEP_NAMED("rp_step");
        SPS_PHASE("rp_forward");
        advance(1000u * (uint64_t)(i + 1));
        SPS_PHASE("rp_backward");
        advance(2000);
    }
    const char *dir = tmpdir_new("phase");
    char err[256] = "";
    CHECK_MSG(sps_report_write(dir, err, sizeof err) == 0, "sps_report_write: %s", err);
    json_t *rep = report_load(dir);
    CHECK(rep != NULL);
    if (!rep)
        return;
    json_t *fwd = report_find(rep, "zones", "rp_forward"), *bwd = report_find(rep, "zones", "rp_backward");
    CHECK(fwd && bwd);
    if (fwd && bwd) {
        CHECK_EQ_U(json_num(fwd, "count"), 3);
        CHECK(json_num(fwd, "total_s") == 6000 / 1e9);
        CHECK(json_num(fwd, "self_s") == 6000 / 1e9);
        CHECK(json_num(fwd, "max_s") == 3000 / 1e9);
        CHECK(json_num(bwd, "total_s") == 6000 / 1e9);
        CHECK_STR_HAS(json_string_value(json_path(fwd, "kind")), "zone");
    }
    json_t *rows = json_path(rep, "steps.rows");
    int seen = 0;
    for (size_t i = 0; rows && i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        const char *name = json_string_value(json_object_get(row, "name"));
        if (!name || strcmp(name, "rp_step") != 0)
            continue;
        CHECK(json_num(row, "zones_self_s.rp_forward") == (double)(1000 * (seen + 1)) / 1e9);
        CHECK(json_num(row, "zones_self_s.rp_backward") == 2000 / 1e9);
        CHECK(json_num(row, "duration_s") == (double)(1000 * (seen + 3)) / 1e9);
        seen++;
    }
    CHECK_EQ_I(seen, 3);
    json_decref(rep);
}

int main(void) {
    unsetenv("STEPSCOPE_RUN_DIR");
    unsetenv("STEPSCOPE_OUT");
    unsetenv("STEPSCOPE_DISABLE");
    setenv("STEPSCOPE_CLOCK", "monotonic", 1); /* read through clock_gettime, above */
    sps_thread_name("phase-test"); /* opens the record */
    RUN_TEST(test_chain_in_step);
    RUN_TEST(test_statistics_as_zones);
    RUN_TEST(test_killed_mid_chain);
    RUN_TEST(test_nesting);
    RUN_TEST(test_microsteps_and_discard);
    RUN_TEST(test_phase_end);
    RUN_TEST(test_mismatch);
    RUN_TEST(test_thread_root);
    RUN_TEST(test_disabled_and_bad_sites);
    RUN_TEST(test_depth_limit);
    RUN_TEST(test_thinning);
    RUN_TEST(test_fork);
    RUN_TEST(test_report);
    return check_report();
}
