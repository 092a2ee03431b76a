/*
 * test_wait.c - the wait kind (SPS_KIND_WAIT): SPS_WAIT and its begin/end
 * forms, sps_wait_record with explicit times (cut to the enclosing scope
 * and to now), self times of the enclosing zone without the wait, the
 * kind in report.json ("wait", steps' "waits_s") and back through the
 * typed reader, and steps.csv's "wait:" columns (trace.json's "wait"
 * category: python/tests/test_wait.py, which has records to draw).
 *
 * The clock is this file's, as in test_phase.c: the recorder runs on
 * CLOCK_MONOTONIC (STEPSCOPE_CLOCK=monotonic) and this file defines
 * clock_gettime, so durations are exact nanoseconds and one tick is one.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "record_format.h"
#include "report/report.h"
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

static struct sps_agg agg_of(const char *name, uint32_t kind) {
    struct sps_run run;
    run_of_this_process(&run);
    long i = sps__run_find(&run, name, kind);
    struct sps_agg a;
    memset(&a, 0, sizeof a);
    if (i >= 0)
        a = run.names[i].agg;
    sps__run_free(&run);
    return a;
}

/* A wait inside a zone: the zone's self time is what the wait leaves. */
static void test_scoped_wait(void) {
    {
        SPS_ZONE("sw_backward");
        advance(100);
        {
            SPS_WAIT("sw_all_reduce");
            advance(300);
        }
        advance(50);
    }
    struct sps_agg bw = agg_of("sw_backward", SPS_KIND_ZONE), w = agg_of("sw_all_reduce", SPS_KIND_WAIT);
    CHECK_EQ_U(bw.count, 1);
    CHECK_EQ_U(bw.total_ns, 450);
    CHECK_EQ_U(bw.self_ns, 150);
    CHECK_EQ_U(w.count, 1);
    CHECK_EQ_U(w.total_ns, 300);
    CHECK_EQ_U(w.self_ns, 300);
    /* the same text as a zone is another name */
    CHECK_EQ_U(agg_of("sw_all_reduce", SPS_KIND_ZONE).count, 0);
}

/* The explicit begin/end form, and a wait through sps_zone_begin on a
 * site of kind SPS_KIND_WAIT. */
static void test_begin_end(void) {
    SPS_ZONE_BEGIN(z, "be_zone");
    advance(10);
    SPS_WAIT_BEGIN(w, "be_barrier");
    advance(70);
    SPS_WAIT_END(w);
    struct sps_site *site = sps_site_get("be_broadcast", SPS_KIND_WAIT);
    CHECK(site != NULL);
    sps_zone_t t = sps_zone_begin(site);
    CHECK(t != 0);
    advance(5);
    sps_zone_end(t);
    SPS_ZONE_END(z);
    CHECK_EQ_U(agg_of("be_zone", SPS_KIND_ZONE).self_ns, 10);
    CHECK_EQ_U(agg_of("be_barrier", SPS_KIND_WAIT).total_ns, 70);
    CHECK_EQ_U(agg_of("be_broadcast", SPS_KIND_WAIT).total_ns, 5);
}

/* sps_wait_record: times taken elsewhere, recorded in the open zone and
 * cut to it and to now; an empty or wrongly kinded one records nothing. */
static void test_wait_record(void) {
    struct sps_site *site = sps_site_get("wr_all_reduce", SPS_KIND_WAIT);
    struct sps_site *zone_site = sps_site_get("wr_not_a_wait", SPS_KIND_ZONE);
    uint64_t before = sps_clock_now(); /* before the zone: cut to its start */
    advance(1000);
    {
        SPS_ZONE("wr_backward");
        advance(200);
        uint64_t t0 = sps_clock_now();
        advance(300);
        uint64_t t1 = sps_clock_now();
        advance(100);
        sps_wait_record(site, t0, t1); /* 300 */
        sps_wait_record(site, before, t0 - 150); /* cut to [zone start, t0 - 150): 50 */
        sps_wait_record(site, t1, t1 + 1000000); /* cut to [t1, now): 100 */
        sps_wait_record(site, t1, t0);           /* empty: nothing */
        sps_wait_record(zone_site, t0, t1);      /* not a wait site: nothing */
        sps_wait_record(NULL, t0, t1);
    }
    struct sps_agg w = agg_of("wr_all_reduce", SPS_KIND_WAIT);
    CHECK_EQ_U(w.count, 3);
    CHECK_EQ_U(w.total_ns, 450);
    CHECK_EQ_U(w.min_ns, 50);
    CHECK_EQ_U(w.max_ns, 300);
    struct sps_agg bw = agg_of("wr_backward", SPS_KIND_ZONE);
    CHECK_EQ_U(bw.total_ns, 600);
    CHECK_EQ_U(bw.self_ns, 150);
    CHECK_EQ_U(agg_of("wr_not_a_wait", SPS_KIND_ZONE).count, 0);
    /* recording off: nothing */
    sps_set_enabled(0);
    sps_wait_record(site, sps_clock_now() - 10, sps_clock_now());
    sps_set_enabled(1);
    CHECK_EQ_U(agg_of("wr_all_reduce", SPS_KIND_WAIT).count, 3);
}

/* Steps with a wait: report.json, the typed reader, steps.csv, trace.json. */
static void test_report(void) {
    for (int i = 0; i < 3; i++) {
        SPS_STEP_NAMED("rw_step");
        {
            SPS_ZONE("rw_backward");
            advance(1000);
            {
                SPS_WAIT("rw_all_reduce");
                advance(2000u * (uint64_t)(i + 1));
            }
        }
    }
    const char *dir = tmpdir_new("wait");
    char err[256] = "";
    CHECK_MSG(sps_report_write(dir, err, sizeof err) == 0, "sps_report_write: %s", err);
    json_t *rep = report_load(dir);
    CHECK(rep != NULL);
    if (!rep)
        return;
    json_t *w = report_find(rep, "zones", "rw_all_reduce"), *bw = report_find(rep, "zones", "rw_backward");
    CHECK(w && bw);
    if (w && bw) {
        CHECK_STR_HAS(json_string_value(json_object_get(w, "kind")), "wait");
        CHECK_EQ_U(json_num(w, "count"), 3);
        CHECK(json_num(w, "total_s") == 12000 / 1e9);
        CHECK(json_num(bw, "self_s") == 3000 / 1e9);
    }
    json_t *rows = json_path(rep, "steps.rows");
    int seen = 0;
    for (size_t i = 0; rows && i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        const char *name = json_string_value(json_object_get(row, "name"));
        if (!name || strcmp(name, "rw_step") != 0)
            continue;
        CHECK(json_num(row, "waits_s.rw_all_reduce") == (double)(2000 * (seen + 1)) / 1e9);
        CHECK(json_num(row, "zones_self_s.rw_backward") == 1000 / 1e9);
        CHECK(json_path(row, "zones_self_s.rw_all_reduce") == NULL);
        seen++;
    }
    CHECK_EQ_I(seen, 3);
    json_decref(rep);

    /* the typed reader: the kind and each step's cell come back */
    char path[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    struct sps_report back;
    int rc = sps__report_read(&back, path, err, sizeof err);
    CHECK_MSG(rc == 0, "sps__report_read: %s", err);
    if (rc == 0) {
        long k = sps__run_find(&back.run, "rw_all_reduce", SPS_KIND_WAIT);
        CHECK(k >= 0);
        CHECK(sps__run_find(&back.run, "rw_all_reduce", SPS_KIND_ZONE) < 0);
        int rows_seen = 0;
        for (size_t r = 0; k >= 0 && r < back.run.nsteps; r++) {
            const struct sps_step_row *row = &back.run.steps[r];
            if (row->name < 0 || strcmp(back.run.names[row->name].name, "rw_step") != 0)
                continue;
            CHECK(row->by_name[k] == (double)(2000 * (rows_seen + 1)) / 1e9);
            rows_seen++;
        }
        CHECK_EQ_I(rows_seen, 3);
        sps__report_free(&back);
    }

    /* steps.csv and trace.json, written by the CLI from the report */
    char *argv[] = {SPS_BIN_DIR "/stepscope", "report", (char *)dir, NULL};
    char cerr[512] = "";
    int st = run_capture(argv, cerr, sizeof cerr);
    CHECK_MSG(exit_code_of(st) == 0, "stepscope report: %s", cerr);
    char csvp[1024];
    snprintf(csvp, sizeof csvp, "%s/steps.csv", dir);
    char *csv = read_whole(csvp, NULL);
    CHECK(csv != NULL);
    if (csv)
        CHECK_STR_HAS(csv, "wait:rw_all_reduce:s");
    free(csv);
}

int main(void) {
    unsetenv("STEPSCOPE_RUN_DIR");
    unsetenv("STEPSCOPE_OUT");
    unsetenv("STEPSCOPE_DISABLE");
    setenv("STEPSCOPE_CLOCK", "monotonic", 1);
    sps_thread_name("wait-test");
    RUN_TEST(test_scoped_wait);
    RUN_TEST(test_begin_end);
    RUN_TEST(test_wait_record);
    RUN_TEST(test_report);
    return check_report();
}
