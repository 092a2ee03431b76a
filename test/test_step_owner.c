/*
 * test_step_owner.c - which step owns each zone, micro-step, value and
 * counter (docs/report-format.md, "How a step owns events"), on runs built
 * event by event: values after a step's end, before the first step and
 * after the last; other threads, several stepping threads, nested steps,
 * DataLoader-like worker processes, lost and unfinished steps; and the
 * throughput that follows from it.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/throughput.h"
#include "check.h"
#include "model/run.h"
#include "stepscope.h"

#define US 1000ull              /* one microsecond in ns */
#define T0 1000000000ull        /* the runs' first process start */

/* Every process of these runs has the same names, ids 1..NNAMES. */
enum { N_STEP = 1, N_EPOCH, N_WORK, N_MICRO, N_LOSS, N_SAMPLES, NNAMES = N_SAMPLES };
static const struct {
    const char *name;
    uint32_t kind;
} names[NNAMES] = {{"step", SPS_KIND_STEP},        {"epoch", SPS_KIND_STEP}, {"work", SPS_KIND_ZONE},
                   {"microstep", SPS_KIND_MICROSTEP}, {"loss", SPS_KIND_VALUE}, {"samples", SPS_KIND_COUNTER}};

static struct sps_process_data proc_new(int pid, int ppid, const char *host, uint32_t nthreads) {
    struct sps_process_data p;
    memset(&p, 0, sizeof p);
    p.pid = pid;
    p.ppid = ppid;
    snprintf(p.hostname, sizeof p.hostname, "%s", host);
    p.start_ns = T0 + (uint64_t)pid; /* parents (smaller pids here) start first */
    p.closed = 1;
    p.ring_policy = SPS_POLICY_KEEP_FIRST;
    p.nnames = NNAMES;
    p.names = calloc(NNAMES, sizeof *p.names);
    for (uint32_t i = 0; i < NNAMES; i++) {
        snprintf(p.names[i].name, sizeof p.names[i].name, "%s", names[i].name);
        p.names[i].kind = names[i].kind;
    }
    p.nthreads = nthreads;
    p.threads = calloc(nthreads, sizeof *p.threads);
    for (uint32_t t = 0; t < nthreads; t++) {
        p.threads[t].tid = pid * 10 + (int)t;
        p.threads[t].aggs = calloc(NNAMES, sizeof *p.threads[t].aggs);
        for (uint32_t i = 0; i < NNAMES; i++)
            p.threads[t].aggs[i].kind = names[i].kind;
    }
    return p;
}

#define DEPTH_FROM_TIMES 0xffffu /* ev(): work the depth out in build() */

/* An event of name id on thread t, from a to b microseconds after T0 (a
 * value or count: a == b, and x is its value or increment), recorded at
 * the given depth (frames open around it). */
static void ev_at_depth(struct sps_process_data *p, uint32_t t, uint32_t id, double a_us, double b_us, double x,
                        uint16_t depth) {
    uint32_t kind = names[id - 1].kind;
    int ring = kind == SPS_KIND_STEP ? SPS_RING_STEPS : sps_kind_is_timed(kind) ? SPS_RING_ZONES : SPS_RING_VALUES;
    struct sps_thread_data *th = &p->threads[t];
    uint64_t start = T0 + (uint64_t)(a_us * US), end = T0 + (uint64_t)(b_us * US);
    uint64_t a = end - start;
    if (kind == SPS_KIND_VALUE)
        memcpy(&a, &x, sizeof a);
    else if (kind == SPS_KIND_COUNTER)
        a = (uint64_t)x;
    th->events[ring] = realloc(th->events[ring], (th->nevents[ring] + 1) * sizeof *th->events[ring]);
    th->events[ring][th->nevents[ring]] =
        (struct sps_event){th->offered[ring], start, end, a, id, depth, (uint16_t)kind};
    th->nevents[ring]++;
    th->offered[ring]++;
    struct sps_agg *g = &th->aggs[id - 1];
    g->count++;
    g->total_ns += kind == SPS_KIND_COUNTER ? a : end - start;
    g->self_ns += end - start;
    g->max_ns = end - start > g->max_ns ? end - start : g->max_ns;
}

static void ev(struct sps_process_data *p, uint32_t t, uint32_t id, double a_us, double b_us, double x) {
    ev_at_depth(p, t, id, a_us, b_us, x, DEPTH_FROM_TIMES);
}

#define VALUE(p, t, id, at, x) ev((p), (t), (id), (at), (at), (x))

/* Does frame f (a step or zone) enclose event e of the same thread? */
static int encloses(const struct sps_event *f, const struct sps_event *e) {
    if (f == e)
        return 0;
    if (!sps_kind_is_timed(e->kind))
        return f->start_ns <= e->start_ns && e->start_ns < f->end_ns;
    if (f->start_ns == e->start_ns && f->end_ns == e->end_ns)
        return f->kind == SPS_KIND_STEP && e->kind != SPS_KIND_STEP;
    return f->start_ns <= e->start_ns && e->end_ns <= f->end_ns;
}

/* The depth the recorder would have written for each event: the frames
 * (steps, zones, micro-steps, and steps still open) around it. */
static void fix_depths(struct sps_process_data *p) {
    for (uint32_t ti = 0; ti < p->nthreads; ti++) {
        struct sps_thread_data *t = &p->threads[ti];
        for (int r = 0; r < SPS_RING_COUNT; r++)
            for (size_t i = 0; i < t->nevents[r]; i++) {
                struct sps_event *e = &t->events[r][i];
                if (e->depth != DEPTH_FROM_TIMES)
                    continue;
                uint16_t d = 0;
                for (int fr = 0; fr < 2; fr++) {
                    int ring = fr ? SPS_RING_ZONES : SPS_RING_STEPS;
                    for (size_t k = 0; k < t->nevents[ring]; k++)
                        d += encloses(&t->events[ring][k], e);
                }
                for (uint32_t k = 0; k < t->nopen; k++)
                    d += t->open[k].start_ns <= e->start_ns;
                e->depth = d;
            }
    }
}

static void build(struct sps_run *run, struct sps_process_data *procs, size_t n) {
    memset(run, 0, sizeof *run);
    for (size_t i = 0; i < n; i++)
        fix_depths(&procs[i]);
    for (size_t i = 0; i < n; i++)
        CHECK(sps__run_add(run, &procs[i]) == 0);
    CHECK(sps__run_build(run) == 0);
}

/* The cell of the row of process pid's step starting at start_us, for
 * name; -2 when there is no such row (NAN stays NAN). */
static double cell(const struct sps_run *run, int pid, double start_us, const char *name, uint32_t kind) {
    long c = sps__run_find(run, name, kind);
    for (size_t i = 0; c >= 0 && i < run->nsteps; i++)
        if (run->procs[run->steps[i].process].pid == pid && run->steps[i].start_ns == T0 + (uint64_t)(start_us * US))
            return run->steps[i].by_name[c];
    return -2;
}

static const struct sps_step_row *row_at(const struct sps_run *run, int pid, double start_us) {
    for (size_t i = 0; i < run->nsteps; i++)
        if (run->procs[run->steps[i].process].pid == pid && run->steps[i].start_ns == T0 + (uint64_t)(start_us * US))
            return &run->steps[i];
    return NULL;
}

#define LOSS(run, pid, s) cell((run), (pid), (s), "loss", SPS_KIND_VALUE)
#define SAMPLES(run, pid, s) cell((run), (pid), (s), "samples", SPS_KIND_COUNTER)
#define WORK(run, pid, s) cell((run), (pid), (s), "work", SPS_KIND_ZONE)

/* The usual loop: opt.step() ends the step, then the loss is recorded and
 * the samples counted, before the next step begins. */
static void test_after_the_step(void) {
    struct sps_process_data p = proc_new(100, 1, "h", 1);
    VALUE(&p, 0, N_LOSS, 1, 9.0);     /* before the first step: no row's */
    VALUE(&p, 0, N_SAMPLES, 2, 100);  /* likewise */
    double starts[] = {10, 30, 50};
    for (int i = 0; i < 3; i++) {
        double s = starts[i];
        ev(&p, 0, N_STEP, s, s + 10, 0);
        ev(&p, 0, N_WORK, s + 2, s + 8, 0);
        ev(&p, 0, N_MICRO, s + 1, s + 4, 0);
        ev(&p, 0, N_MICRO, s + 5, s + 9, 0);
        VALUE(&p, 0, N_LOSS, s + 5, 50.0); /* inside, then overwritten by the one after the end */
        VALUE(&p, 0, N_LOSS, s + 11, 1.0 + i);
        VALUE(&p, 0, N_SAMPLES, s + 12, 8);
        ev(&p, 0, N_WORK, s + 13, s + 15, 0);  /* a zone after the end: time outside any step */
        ev(&p, 0, N_MICRO, s + 16, s + 17, 0); /* a micro-step too */
    }
    VALUE(&p, 0, N_SAMPLES, 70, 8); /* after the last step: the last step's */
    struct sps_run run;
    build(&run, &p, 1);
    CHECK_EQ_U(run.nsteps, 3);
    for (int i = 0; i < 3; i++) {
        CHECK(LOSS(&run, 100, starts[i]) == 1.0 + i);
        CHECK(SAMPLES(&run, 100, starts[i]) == (i == 2 ? 16 : 8));
        CHECK_NEAR(WORK(&run, 100, starts[i]), 6e-6, 1e-12);
        const struct sps_step_row *r = row_at(&run, 100, starts[i]);
        CHECK(r && r->microsteps == 2);
    }

    /* throughput: every count after a step is in a step */
    struct sps_throughput t;
    CHECK(sps__throughput_analyze(&run, NULL, NULL, &t) == 0);
    CHECK_EQ_U(t.ncounters, 1);
    if (t.ncounters == 1) {
        CHECK_NEAR(t.counters[0].total, 132, 0);
        CHECK_NEAR(t.counters[0].in_steps, 32, 0);
        CHECK_EQ_U(t.counters[0].steps, 3);
        CHECK_NEAR(t.counters[0].per_second, 32 / 30e-6, 1e-3);
    }
    sps__throughput_free(&t);
    sps__run_free(&run);
}

/* A thread with no step of its own lends its events to its process's
 * stepping thread; with two stepping threads, each owns only its own. */
static void test_threads(void) {
    struct sps_process_data procs[2];
    procs[0] = proc_new(100, 1, "h", 2); /* thread 0 steps, thread 1 helps */
    ev(&procs[0], 0, N_STEP, 0, 10, 0);
    ev(&procs[0], 0, N_STEP, 20, 30, 0);
    VALUE(&procs[0], 1, N_SAMPLES, 15, 4); /* helper, between the steps: the first's */
    VALUE(&procs[0], 1, N_LOSS, 25, 2.5);  /* helper, inside the second */
    ev(&procs[0], 1, N_WORK, 21, 24, 0);
    ev(&procs[0], 1, N_WORK, 12, 14, 0); /* a helper's zone between steps: none */

    procs[1] = proc_new(200, 1, "h", 3); /* threads 0 and 1 step side by side, 2 helps */
    ev(&procs[1], 0, N_STEP, 0, 10, 0);
    ev(&procs[1], 1, N_STEP, 0, 10, 0);
    VALUE(&procs[1], 0, N_LOSS, 5, 1.0);
    ev(&procs[1], 0, N_WORK, 2, 4, 0);
    VALUE(&procs[1], 1, N_LOSS, 12, 2.0); /* after thread 1's step: its own */
    ev(&procs[1], 1, N_WORK, 5, 8, 0);
    VALUE(&procs[1], 2, N_SAMPLES, 5, 7); /* which thread's? neither */
    ev(&procs[1], 2, N_WORK, 1, 9, 0);
    struct sps_run run;
    build(&run, procs, 2);

    CHECK(SAMPLES(&run, 100, 0) == 4);
    CHECK(isnan(LOSS(&run, 100, 0)));
    CHECK(LOSS(&run, 100, 20) == 2.5);
    CHECK(isnan(SAMPLES(&run, 100, 20)));
    CHECK(isnan(WORK(&run, 100, 0)));
    CHECK_NEAR(WORK(&run, 100, 20), 3e-6, 1e-12);

    long loss = sps__run_find(&run, "loss", SPS_KIND_VALUE), work = sps__run_find(&run, "work", SPS_KIND_ZONE),
         samples = sps__run_find(&run, "samples", SPS_KIND_COUNTER);
    int seen = 0;
    for (size_t i = 0; i < run.nsteps; i++) {
        const struct sps_step_row *r = &run.steps[i];
        if (run.procs[r->process].pid != 200)
            continue;
        seen++;
        int first = r->tid == 2000;
        CHECK(r->by_name[loss] == (first ? 1.0 : 2.0));
        CHECK_NEAR(r->by_name[work], first ? 2e-6 : 3e-6, 1e-12);
        CHECK(isnan(r->by_name[samples]));
    }
    CHECK_EQ_I(seen, 2);
    sps__run_free(&run);
}

/* Events are taken in start order over all of a process's threads: a
 * value recorded after another but timed before it (clocks read out of
 * order) is not the step's last; at the same time, the lower thread's goes
 * first, so the higher thread's is the last. */
static void test_start_order_across_threads(void) {
    struct sps_process_data p = proc_new(100, 1, "h", 2);
    ev(&p, 0, N_STEP, 0, 100, 0);
    ev(&p, 0, N_STEP, 200, 300, 0);
    VALUE(&p, 0, N_LOSS, 50, 1.0);
    VALUE(&p, 0, N_LOSS, 40, 2.0); /* recorded later, timed earlier */
    VALUE(&p, 0, N_LOSS, 260, 4.0);
    VALUE(&p, 1, N_LOSS, 260, 3.0); /* the helper thread, at the same time */
    struct sps_run run;
    build(&run, &p, 1);
    CHECK(LOSS(&run, 100, 0) == 1.0);
    CHECK(LOSS(&run, 100, 200) == 3.0);
    sps__run_free(&run);
}

/* Steps nest: an epoch step around training steps owns what they own and
 * what falls between them. */
static void test_nested_steps(void) {
    struct sps_process_data p = proc_new(100, 1, "h", 1);
    ev(&p, 0, N_STEP, 0, 10, 0);
    ev(&p, 0, N_STEP, 20, 30, 0);
    ev(&p, 0, N_EPOCH, 0, 100, 0); /* ends after its steps: recorded after them */
    ev(&p, 0, N_STEP, 200, 210, 0);
    ev(&p, 0, N_EPOCH, 200, 300, 0);
    VALUE(&p, 0, N_LOSS, 15, 1.0);  /* after step 0, inside epoch 0 */
    VALUE(&p, 0, N_LOSS, 150, 2.0); /* after step 1 and epoch 0 (validation, say) */
    VALUE(&p, 0, N_LOSS, 250, 3.0); /* after step 2, inside epoch 1 */
    ev(&p, 0, N_WORK, 16, 18, 0);   /* inside epoch 0 only */
    struct sps_run run;
    build(&run, &p, 1);
    CHECK_EQ_U(run.nsteps, 5);
    long epoch = sps__run_find(&run, "epoch", SPS_KIND_STEP), loss = sps__run_find(&run, "loss", SPS_KIND_VALUE),
         work = sps__run_find(&run, "work", SPS_KIND_ZONE);
    double want_step[] = {1.0, 2.0, 3.0}, step_start[] = {0, 20, 200};
    int steps = 0, epochs = 0;
    for (size_t i = 0; i < run.nsteps; i++) {
        const struct sps_step_row *r = &run.steps[i];
        double s = (double)(r->start_ns - T0) / US;
        if (r->name == epoch) {
            epochs++;
            CHECK(r->by_name[loss] == (s == 0 ? 2.0 : 3.0));
            if (s == 0)
                CHECK_NEAR(r->by_name[work], 2e-6, 1e-12);
            else
                CHECK(isnan(r->by_name[work]));
            continue;
        }
        for (int k = 0; k < 3; k++)
            if (s == step_start[k]) {
                steps++;
                CHECK(r->by_name[loss] == want_step[k]);
            }
        CHECK(isnan(r->by_name[work]));
    }
    CHECK_EQ_I(steps, 3);
    CHECK_EQ_I(epochs, 2);
    sps__run_free(&run);
}

/* A process with no step (a DataLoader worker) lends its values and
 * counters, never its zones, to its nearest stepping ancestor on the same
 * host. */
static void test_worker_processes(void) {
    struct sps_process_data procs[5];
    procs[0] = proc_new(100, 1, "h", 1);
    ev(&procs[0], 0, N_STEP, 0, 10, 0);
    ev(&procs[0], 0, N_STEP, 20, 30, 0);
    procs[1] = proc_new(101, 100, "h", 1); /* a worker */
    VALUE(&procs[1], 0, N_SAMPLES, 15, 32);
    VALUE(&procs[1], 0, N_LOSS, 25, 0.5);
    ev(&procs[1], 0, N_WORK, 2, 8, 0);
    procs[2] = proc_new(102, 101, "h", 1); /* the worker's own child */
    VALUE(&procs[2], 0, N_SAMPLES, 5, 16);
    procs[3] = proc_new(103, 100, "other-host", 1); /* same pids, another machine */
    VALUE(&procs[3], 0, N_SAMPLES, 5, 1000);
    procs[4] = proc_new(104, 1, "h", 1); /* not a descendant */
    VALUE(&procs[4], 0, N_SAMPLES, 5, 1000);
    struct sps_run run;
    build(&run, procs, 5);
    CHECK_EQ_U(run.nsteps, 2);
    CHECK(SAMPLES(&run, 100, 0) == 32 + 16);
    CHECK(LOSS(&run, 100, 20) == 0.5);
    CHECK(isnan(SAMPLES(&run, 100, 20)));
    CHECK(isnan(WORK(&run, 100, 0)));
    sps__run_free(&run);
}

/* When the step after one is not in the record (a keep-first ring was
 * full) or has not ended, what follows the kept step is not its own. */
static void test_lost_and_open_steps(void) {
    struct sps_process_data procs[2];
    procs[0] = proc_new(100, 1, "h", 1);
    ev(&procs[0], 0, N_STEP, 0, 10, 0);
    ev(&procs[0], 0, N_STEP, 20, 30, 0);
    procs[0].threads[0].offered[SPS_RING_STEPS]++; /* a third step the ring refused */
    VALUE(&procs[0], 0, N_SAMPLES, 15, 1);
    VALUE(&procs[0], 0, N_SAMPLES, 35, 1000); /* the refused step's, perhaps */

    procs[1] = proc_new(200, 1, "h", 1);
    ev(&procs[1], 0, N_STEP, 0, 10, 0);
    struct sps_thread_data *t = &procs[1].threads[0];
    t->open[0] = (struct sps_open_zone){N_STEP, SPS_KIND_STEP, T0 + 20 * US}; /* killed inside it */
    t->nopen = 1;
    VALUE(&procs[1], 0, N_SAMPLES, 15, 1);
    VALUE(&procs[1], 0, N_SAMPLES, 25, 1000); /* the unfinished step's */
    struct sps_run run;
    build(&run, procs, 2);
    CHECK_EQ_U(run.nsteps, 3);
    CHECK(SAMPLES(&run, 100, 0) == 1);
    CHECK(isnan(SAMPLES(&run, 100, 20)));
    CHECK(SAMPLES(&run, 200, 0) == 1);
    sps__run_free(&run);
}

/* Clock reads out of order across a step boundary: a count made just
 * after a step but timed inside the next one (its depth says it was
 * outside every step) belongs to the step just ended; a value made first
 * thing in a step but timed a little before it (its depth says inside)
 * belongs to that step; one outside every step timed near a step's end
 * belongs to that step. */
static void test_clock_reads_out_of_order(void) {
    struct sps_process_data p = proc_new(100, 1, "h", 1);
    ev(&p, 0, N_STEP, 0, 10, 0);
    ev(&p, 0, N_STEP, 20, 30, 0);
    ev(&p, 0, N_STEP, 40, 50, 0);
    ev_at_depth(&p, 0, N_SAMPLES, 20.01, 20.01, 8, 0); /* after step 0, timed inside step 1 */
    ev_at_depth(&p, 0, N_LOSS, 39.99, 39.99, 7.0, 1);  /* inside step 2, timed before it */
    ev_at_depth(&p, 0, N_LOSS, 29.99, 29.99, 5.0, 0);  /* after step 1, timed inside its end */
    ev_at_depth(&p, 0, N_LOSS, 15, 15, 3.0, 1);        /* deeper, in the gap, far from step 1: a zone's */
    struct sps_run run;
    build(&run, &p, 1);
    CHECK(SAMPLES(&run, 100, 0) == 8);
    CHECK(isnan(SAMPLES(&run, 100, 20)));
    CHECK(LOSS(&run, 100, 0) == 3.0);
    CHECK(LOSS(&run, 100, 20) == 5.0);
    CHECK(LOSS(&run, 100, 40) == 7.0);
    sps__run_free(&run);
}

/* Warm-up is found per stream (one step name on one thread), with two
 * names interleaved on one thread and a second thread of its own. */
static void test_warmup_per_stream(void) {
    struct sps_process_data p = proc_new(100, 1, "h", 2);
    double t = 0;
    for (int i = 0; i < 10; i++) {
        double d = i == 0 ? 100 : 10; /* "step": one slow step first */
        ev(&p, 0, N_STEP, t, t + d, 0);
        t += d;
        d = i < 2 ? 300 : 30; /* "epoch" (not around the steps here): two slow ones */
        ev(&p, 0, N_EPOCH, t, t + d, 0);
        t += d;
        ev(&p, 1, N_STEP, 5000 + 10.0 * i, 5000 + 10.0 * i + (i < 1 ? 50 : 5), 0);
    }
    struct sps_run run;
    build(&run, &p, 1);
    CHECK_EQ_U(run.nsteps, 30);
    CHECK_EQ_U(run.warmup_steps, 1 + 2 + 1);
    long step = sps__run_find(&run, "step", SPS_KIND_STEP);
    int seen[2][2] = {{0, 0}, {0, 0}}; /* [thread][name is step]: warm-up rows */
    for (size_t i = 0; i < run.nsteps; i++)
        seen[run.steps[i].tid == 1001][run.steps[i].name == step] += run.steps[i].warmup;
    CHECK_EQ_I(seen[0][1], 1);
    CHECK_EQ_I(seen[0][0], 2);
    CHECK_EQ_I(seen[1][1], 1);
    CHECK(run.steps[0].warmup && !run.steps[2].warmup); /* the first rows of thread 0: step, epoch, step */
    sps__run_free(&run);
}

/* Warm-up on many rows: three threads of 20,000 rows each, "step" and
 * "epoch" interleaved in a pseudo-random order, each stream with its own
 * number of slow first steps (thread 2's epochs none); every row's flag is
 * exactly its stream's. */
static void test_warmup_many_rows(void) {
    enum { THREADS = 3, ROWS = 20000 };
    static const int slow[THREADS][2] = {{7, 3}, {1, 12}, {25, 0}}; /* [thread][step, epoch] */
    struct sps_process_data p = proc_new(100, 1, "h", THREADS);
    uint32_t rng = 12345;
    for (uint32_t th = 0; th < THREADS; th++) {
        /* the rows straight into the ring (ev() grows it one event at a
         * time, which the sanitizers' realloc makes quadratic) */
        struct sps_thread_data *td = &p.threads[th];
        td->events[SPS_RING_STEPS] = malloc(ROWS * sizeof *td->events[SPS_RING_STEPS]);
        uint64_t t = T0;
        int made[2] = {0, 0};
        for (int i = 0; i < ROWS; i++) {
            rng = rng * 1103515245u + 12345u;
            int epoch = (rng >> 16) % 3 == 0; /* a third of the rows */
            uint32_t id = epoch ? N_EPOCH : N_STEP;
            uint64_t d = (made[epoch] < slow[th][epoch] ? 100 : 10 + (uint64_t)(made[epoch] % 3)) * US;
            td->events[SPS_RING_STEPS][i] = (struct sps_event){(uint64_t)i, t, t + d, d, id, 0, SPS_KIND_STEP};
            struct sps_agg *g = &td->aggs[id - 1];
            g->count++;
            g->total_ns += d;
            g->self_ns += d;
            g->max_ns = d > g->max_ns ? d : g->max_ns;
            made[epoch]++;
            t += d + US;
        }
        td->nevents[SPS_RING_STEPS] = td->offered[SPS_RING_STEPS] = ROWS;
    }
    struct sps_run run;
    build(&run, &p, 1);
    CHECK_EQ_U(run.nsteps, THREADS * ROWS);
    CHECK_EQ_U(run.warmup_steps, 7 + 3 + 1 + 12 + 25 + 0);
    long step = sps__run_find(&run, "step", SPS_KIND_STEP);
    size_t made[THREADS][2] = {{0, 0}, {0, 0}, {0, 0}}, wrong = 0;
    for (size_t i = 0; i < run.nsteps; i++) {
        const struct sps_step_row *r = &run.steps[i];
        int th = r->tid - 1000, epoch = r->name != step;
        wrong += r->warmup != (made[th][epoch]++ < (size_t)slow[th][epoch]);
    }
    CHECK_EQ_U(wrong, 0);
    sps__run_free(&run);
}

int main(void) {
    RUN_TEST(test_after_the_step);
    RUN_TEST(test_threads);
    RUN_TEST(test_start_order_across_threads);
    RUN_TEST(test_nested_steps);
    RUN_TEST(test_worker_processes);
    RUN_TEST(test_lost_and_open_steps);
    RUN_TEST(test_warmup_per_stream);
    RUN_TEST(test_warmup_many_rows);
    RUN_TEST(test_clock_reads_out_of_order);
    return check_report();
}
