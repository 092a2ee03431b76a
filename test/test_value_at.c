/*
 * test_value_at.c - sps_value_at: a value recorded at an explicit time of
 * sps_clock_ns()'s clock.  The event carries that time (cut to the
 * record's start and to now), the name's aggregates take the value as
 * sps_value's would, and the model places it in the step its time lies in
 * whatever was open when it was recorded (the depth of the call says
 * nothing of it), the latest by time staying a step's cell.
 *
 * The clock is this file's, as in test_wait.c: the recorder runs on
 * CLOCK_MONOTONIC (STEPSCOPE_CLOCK=monotonic) and this file defines
 * clock_gettime, so times are exact nanoseconds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "record_format.h"
#include "stepscope.h"
#include "support.h"

static uint64_t fake_ns = 1000000000u;

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (id != CLOCK_MONOTONIC)
        return (int)syscall(SYS_clock_gettime, id, ts);
    uint64_t ns = __atomic_load_n(&fake_ns, __ATOMIC_RELAXED);
    ts->tv_sec = (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
    return 0;
}

static void advance(uint64_t ns) {
    __atomic_add_fetch(&fake_ns, ns, __ATOMIC_RELAXED);
}

/* The cell of name (a value) in the row of the va_step starting at start. */
static double cell(const struct sps_run *run, uint64_t start, const char *name) {
    long c = sps__run_find(run, name, SPS_KIND_VALUE);
    for (size_t i = 0; c >= 0 && i < run->nsteps; i++)
        if (run->steps[i].start_ns == start)
            return run->steps[i].by_name[c];
    return -2;
}

/* The times of name's events in the record, in ring order. */
static size_t event_times(const struct sps_run *run, const char *name, uint64_t *t, double *v, size_t max) {
    size_t n = 0;
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        for (uint32_t ti = 0; ti < p->nthreads; ti++)
            for (size_t i = 0; i < p->threads[ti].nevents[SPS_RING_VALUES]; i++) {
                const struct sps_event *e = &p->threads[ti].events[SPS_RING_VALUES][i];
                if (e->name && !strcmp(p->names[e->name - 1].name, name) && n < max) {
                    t[n] = e->start_ns;
                    memcpy(&v[n], &e->a, sizeof v[n]);
                    n++;
                }
            }
    }
    return n;
}

/* Values of three steps recorded while the third is open and after all
 * have ended: each lands in the step its time is in. */
static void test_placed_by_time(void) {
    struct sps_site *site = sps_site_get("va_timeline", SPS_KIND_VALUE);
    CHECK(site != NULL);
    uint64_t start[3];
    for (int i = 0; i < 3; i++) {
        {
            SPS_STEP_NAMED("va_step");
            start[i] = sps_clock_ns();
            advance(1000);
            if (i == 2) {
                /* inside step 3: times of steps 1 and 2, the later one first */
                sps_value_at(site, 25.0, start[1] + 600);
                sps_value_at(site, 20.0, start[1] + 500);
                sps_value_at(site, 10.0, start[0] + 500);
            }
        }
        advance(1000); /* a gap between steps */
    }
    advance(5000);
    /* outside every step (depth 0), timed just after step 2 began: step 2's,
     * though a value of the thread's own at that depth and time would be
     * judged recorded before step 2 (a clock read out of order) */
    sps_value_at(site, 22.0, start[1] + 100);
    /* in the gap after step 2, just before step 3 began: step 2's (the
     * after-end of a step), though a value of the thread's own recorded
     * that deep and timed so close to step 3 would be taken as step 3's */
    sps_value_at(site, 27.0, start[2] - 100);
    /* times of step 3: the latest is 31 */
    sps_value_at(site, 31.0, start[2] + 900);
    sps_value_at(site, 30.0, start[2] + 100);

    struct sps_run run;
    run_of_this_process(&run);
    /* the row's cell is the latest value by time in the step */
    CHECK(cell(&run, start[0], "va_timeline") == 10.0);
    CHECK(cell(&run, start[1], "va_timeline") == 27.0);
    CHECK(cell(&run, start[2], "va_timeline") == 31.0);
    uint64_t t[8];
    double v[8];
    size_t n = event_times(&run, "va_timeline", t, v, 8);
    CHECK_EQ_U(n, 7);
    if (n == 7) {
        CHECK_EQ_U(t[0], start[1] + 600);
        CHECK_EQ_U(t[2], start[0] + 500);
        CHECK_EQ_U(t[3], start[1] + 100);
        CHECK(v[3] == 22.0);
    }
    long k = sps__run_find(&run, "va_timeline", SPS_KIND_VALUE);
    CHECK(k >= 0);
    if (k >= 0) {
        CHECK_EQ_U(run.names[k].agg.count, 7);
        CHECK(run.names[k].agg.sum == 165.0);
        CHECK(run.names[k].agg.min == 10.0);
        CHECK(run.names[k].agg.max == 31.0);
    }
    sps__run_free(&run);
}

/* A time before the record began is cut to its start, one after now to
 * now; a NULL site or one of another kind records nothing. */
static void test_cut_and_refused(void) {
    struct sps_site *site = sps_site_get("va_cut", SPS_KIND_VALUE);
    struct sps_site *counter = sps_site_get("va_counter", SPS_KIND_COUNTER);
    advance(100);
    uint64_t now = sps_clock_ns();
    sps_value_at(site, 1.0, 5);
    sps_value_at(site, 2.0, now + 1000000);
    sps_value_at(counter, 3.0, now);
    sps_value_at(NULL, 4.0, now);
    struct sps_run run;
    run_of_this_process(&run);
    uint64_t t[4];
    double v[4];
    CHECK_EQ_U(event_times(&run, "va_cut", t, v, 4), 2);
    CHECK_EQ_U(t[0], run.procs[0].start_ns);
    CHECK(v[0] == 1.0);
    CHECK_EQ_U(t[1], now);
    CHECK_EQ_U(event_times(&run, "va_counter", t, v, 4), 0);
    sps__run_free(&run);
}

int main(void) {
    unsetenv("STEPSCOPE_RUN_DIR");
    unsetenv("STEPSCOPE_OUT");
    unsetenv("STEPSCOPE_DISABLE");
    setenv("STEPSCOPE_CLOCK", "monotonic", 1);
    sps_thread_name("value-at-test");
    RUN_TEST(test_placed_by_time);
    RUN_TEST(test_cut_and_refused);
    return check_report();
}
