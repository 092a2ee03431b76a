/*
 * test_zones.c - zones, steps, values and counters recorded in this process
 * (memory mode) and read back through the real reader: nesting and self
 * time, mismatched ends, depth limits, run-time and compile-time disable.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "model/run.h"
#include "record_format.h"
#include "recorder.h"
#include "stepscope.h"
#include "support.h"

void disabled_tu_exercise(void); /* test_zones_disabled.c */

static const struct sps_name_summary *find(const struct sps_run *run, const char *name, uint32_t kind) {
    long i = sps__run_find(run, name, kind);
    return i < 0 ? NULL : &run->names[i];
}

static uint64_t count_of(const char *name, uint32_t kind) {
    struct sps_run run;
    run_of_this_process(&run);
    const struct sps_name_summary *n = find(&run, name, kind);
    uint64_t c = n ? n->agg.count : 0;
    sps__run_free(&run);
    return c;
}

static double burn(int n) {
    volatile double x = 1;
    for (int i = 0; i < n; i++)
        x = x * 1.000001 + 1e-7;
    return x;
}

static void test_nesting_and_self_time(void) {
    for (int i = 0; i < 5; i++) {
        SPS_ZONE("outer");
        burn(1000);
        for (int k = 0; k < 3; k++) {
            SPS_ZONE("inner");
            burn(2000);
            {
                SPS_ZONE("leaf");
                burn(500);
            }
        }
    }
    struct sps_run run;
    run_of_this_process(&run);
    const struct sps_name_summary *outer = find(&run, "outer", SPS_KIND_ZONE);
    const struct sps_name_summary *inner = find(&run, "inner", SPS_KIND_ZONE);
    const struct sps_name_summary *leaf = find(&run, "leaf", SPS_KIND_ZONE);
    CHECK(outer && inner && leaf);
    if (outer && inner && leaf) {
        CHECK_EQ_U(outer->agg.count, 5);
        CHECK_EQ_U(inner->agg.count, 15);
        CHECK_EQ_U(leaf->agg.count, 15);
        /* self = total minus the direct children's total, exactly */
        CHECK_EQ_U(outer->agg.self_ns + inner->agg.total_ns, outer->agg.total_ns);
        CHECK_EQ_U(inner->agg.self_ns + leaf->agg.total_ns, inner->agg.total_ns);
        CHECK_EQ_U(leaf->agg.self_ns, leaf->agg.total_ns);
        CHECK(outer->agg.min_ns <= outer->agg.max_ns && outer->agg.min_ns > 0);
        /* every duration is in the histogram, the last one (pending in the
         * recorder) included */
        const struct sps_name_summary *all[] = {outer, inner, leaf};
        for (int k = 0; k < 3; k++) {
            uint64_t in_hist = 0;
            for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++)
                in_hist += all[k]->agg.hist[b];
            CHECK_EQ_U(in_hist, all[k]->agg.count);
        }
        CHECK_EQ_U(outer->stats.count, 5);
    }
    /* the events carry their depth, and each outer event's self time
     * equals its duration minus its inner children's */
    const struct sps_thread_data *t = &run.procs[0].threads[0];
    int depth_ok = 1, self_ok = 1, outers = 0;
    for (size_t i = 0; i < t->nevents[SPS_RING_ZONES]; i++) {
        const struct sps_event *e = &t->events[SPS_RING_ZONES][i];
        const char *name = run.procs[0].names[e->name - 1].name;
        int want = !strcmp(name, "outer") ? 0 : !strcmp(name, "inner") ? 1 : !strcmp(name, "leaf") ? 2 : -1;
        if (want >= 0 && e->depth != want)
            depth_ok = 0;
        if (want == 0) {
            outers++;
            uint64_t children = 0;
            for (size_t k = 0; k < i; k++) {
                const struct sps_event *c = &t->events[SPS_RING_ZONES][k];
                if (c->depth == 1 && c->start_ns >= e->start_ns && c->end_ns <= e->end_ns)
                    children += c->end_ns - c->start_ns;
            }
            /* ring times are converted from ticks independently: allow a
             * few ns of rounding per child */
            double expect = (double)(e->end_ns - e->start_ns) - (double)children;
            if (fabs((double)e->a - expect) > 10)
                self_ok = 0;
        }
    }
    CHECK_EQ_I(outers, 5);
    CHECK(depth_ok);
    CHECK(self_ok);
    sps__run_free(&run);
}

static void test_steps_values_counters(void) {
    double values[] = {4.0, 2.5, -1.0, 3.0};
    for (int i = 0; i < 4; i++) {
        SPS_STEP();
        {
            SPS_ZONE("work");
            burn(3000);
        }
        SPS_VALUE("metric", values[i]);
        SPS_COUNT("items", 10 + i);
    }
    struct sps_run run;
    run_of_this_process(&run);
    const struct sps_name_summary *step = find(&run, "step", SPS_KIND_STEP);
    const struct sps_name_summary *metric = find(&run, "metric", SPS_KIND_VALUE);
    const struct sps_name_summary *items = find(&run, "items", SPS_KIND_COUNTER);
    CHECK(step && metric && items);
    if (step && metric && items) {
        CHECK_EQ_U(step->agg.count, 4);
        CHECK_EQ_U(metric->agg.count, 4);
        CHECK(metric->agg.sum == 8.5 && metric->agg.sumsq == 16 + 6.25 + 1 + 9);
        CHECK(metric->agg.min == -1.0 && metric->agg.max == 4.0);
        CHECK(metric->agg.first == 4.0 && metric->agg.last == 3.0);
        CHECK_EQ_U(items->agg.total_ns, 10 + 11 + 12 + 13);
        CHECK_EQ_U(items->agg.count, 4);
    }
    /* one row per step, each with its own zone time, value and count */
    CHECK_EQ_U(run.nsteps, 4);
    long work = sps__run_find(&run, "work", SPS_KIND_ZONE);
    long m = sps__run_find(&run, "metric", SPS_KIND_VALUE);
    long it = sps__run_find(&run, "items", SPS_KIND_COUNTER);
    for (size_t i = 0; i < run.nsteps && i < 4 && work >= 0 && m >= 0 && it >= 0; i++) {
        const struct sps_step_row *row = &run.steps[i];
        CHECK_EQ_U(row->index, i);
        CHECK(row->by_name[work] > 0 && row->by_name[work] * 1e9 <= (double)(row->end_ns - row->start_ns));
        CHECK(row->by_name[m] == values[i]);
        CHECK(row->by_name[it] == 10.0 + (double)i);
    }
    sps__run_free(&run);
}

static void test_mismatched_end(void) {
    SPS_ZONE_BEGIN(a, "mm_a");
    SPS_ZONE_BEGIN(b, "mm_b");
    (void)b;
    SPS_ZONE_END(a); /* skips b: b is closed implicitly, not recorded */
    SPS_ZONE_END(a); /* already closed: ignored */
    struct sps_run run;
    run_of_this_process(&run);
    const struct sps_thread_data *t = &run.procs[0].threads[0];
    CHECK_EQ_U(t->mismatched_ends, 2);
    CHECK_EQ_U(t->nopen, 0);
    const struct sps_name_summary *na = find(&run, "mm_a", SPS_KIND_ZONE);
    CHECK(na && na->agg.count == 1);
    CHECK(find(&run, "mm_b", SPS_KIND_ZONE) && find(&run, "mm_b", SPS_KIND_ZONE)->agg.count == 0);
    sps__run_free(&run);
}

/* A micro-step taken back leaves no event, no aggregate and no name, and
 * the zones inside it count as the step's children; one that is not the
 * innermost open zone is ended as sps_zone_end would. */
static void test_discard(void) {
    struct sps_site *step = sps_site_get("discard_step", SPS_KIND_STEP);
    struct sps_site *micro = sps_site_get("discard_micro", SPS_KIND_MICROSTEP);
    struct sps_site *work = sps_site_get("discard_work", SPS_KIND_ZONE);
    for (int i = 0; i < 3; i++) {
        sps_zone_t s = sps_zone_begin(step), m = sps_zone_begin(micro), w = sps_zone_begin(work);
        burn(20000);
        sps_zone_end(w);
        CHECK_EQ_I(sps__zone_discard(m), 1); /* taken back */
        sps_zone_end(s);
    }
    struct sps_site *outer = sps_site_get("discard_outer", SPS_KIND_MICROSTEP);
    sps_zone_t o = sps_zone_begin(outer), in = sps_zone_begin(work);
    (void)in;
    CHECK_EQ_I(sps__zone_discard(o), 0); /* not the innermost: ended, closing "discard_work" implicitly */
    CHECK_EQ_I(sps__zone_discard(0), 0);
    struct sps_run run;
    run_of_this_process(&run);
    const struct sps_name_summary *ns = find(&run, "discard_step", SPS_KIND_STEP);
    const struct sps_name_summary *nw = find(&run, "discard_work", SPS_KIND_ZONE);
    CHECK(find(&run, "discard_micro", SPS_KIND_MICROSTEP) == NULL);
    CHECK(ns && nw);
    if (ns && nw) {
        CHECK_EQ_U(ns->agg.count, 3);
        CHECK_EQ_U(nw->agg.count, 3);
        CHECK_EQ_U(ns->agg.total_ns - ns->agg.self_ns, nw->agg.total_ns); /* the work is the step's child */
    }
    const struct sps_name_summary *no = find(&run, "discard_outer", SPS_KIND_MICROSTEP);
    CHECK(no && no->agg.count == 1);
    CHECK_EQ_U(run.procs[0].threads[0].nopen, 0);
    long st = sps__run_find(&run, "discard_step", SPS_KIND_STEP);
    for (size_t i = 0; i < run.nsteps; i++)
        if (run.steps[i].name == st)
            CHECK_EQ_U(run.steps[i].microsteps, 0);
    sps__run_free(&run);
}

/* Calls a careless program can make must not corrupt the record. */
static void test_bad_calls_are_harmless(void) {
    sps_zone_end(0); /* no zone open: ignored */
    sps_zone_end(0);
    sps_zone_end(12345); /* never issued */
    CHECK_EQ_U(sps_zone_begin(NULL), 0);
    sps_value(NULL, 1.0);
    sps_count(NULL, 1);
    struct sps_site stray = {"stray", "", "", 0, SPS_KIND_ZONE, 77777}; /* id not zeroed */
    sps_zone_end(sps_zone_begin(&stray));
    struct sps_run run;
    run_of_this_process(&run); /* exits the test if the record no longer parses */
    const struct sps_thread_data *t = &run.procs[0].threads[0];
    CHECK_EQ_U(t->nopen, 0);
    const struct sps_name_summary *n = find(&run, "stray", SPS_KIND_ZONE);
    CHECK(n && n->agg.count == 1);
    sps__run_free(&run);
}

static void test_depth_limit(void) {
    struct sps_site *site = sps_site_get("deep", SPS_KIND_ZONE);
    sps_zone_t tokens[70];
    int recorded = 0;
    for (int i = 0; i < 70; i++)
        recorded += (tokens[i] = sps_zone_begin(site)) != 0;
    for (int i = 69; i >= 0; i--)
        sps_zone_end(tokens[i]);
    CHECK_EQ_I(recorded, 62);
    struct sps_run run;
    run_of_this_process(&run);
    const struct sps_thread_data *t = &run.procs[0].threads[0];
    CHECK_EQ_U(t->depth_overflows, 8);
    CHECK_EQ_U(t->nopen, 0);
    const struct sps_name_summary *d = find(&run, "deep", SPS_KIND_ZONE);
    CHECK(d && d->agg.count == 62);
    sps__run_free(&run);
}

static void test_site_get(void) {
    struct sps_site *a = sps_site_get("dynamic", SPS_KIND_ZONE);
    struct sps_site *b = sps_site_get("dynamic", SPS_KIND_ZONE);
    struct sps_site *c = sps_site_get("dynamic", SPS_KIND_VALUE);
    CHECK(a && a == b && c && c != a);
    CHECK(sps_site_get("", SPS_KIND_ZONE) == NULL);
    CHECK(sps_site_get(NULL, SPS_KIND_ZONE) == NULL);
    CHECK(sps_site_get("x", (enum sps_kind)99) == NULL);
    sps_zone_end(sps_zone_begin(a));
    sps_value(c, 7.0);
    sps_value(a, 1.0); /* wrong kind: ignored */
    CHECK_EQ_U(count_of("dynamic", SPS_KIND_ZONE), 1);
    CHECK_EQ_U(count_of("dynamic", SPS_KIND_VALUE), 1);
}

static void test_runtime_disable(void) {
    uint64_t before = count_of("toggled", SPS_KIND_ZONE);
    sps_set_enabled(0);
    CHECK_EQ_I(sps_is_enabled(), 0);
    for (int i = 0; i < 10; i++) {
        SPS_ZONE("toggled");
        SPS_VALUE("toggled_value", i);
    }
    sps_set_enabled(1);
    CHECK_EQ_U(count_of("toggled", SPS_KIND_ZONE), before);
    CHECK_EQ_U(count_of("toggled_value", SPS_KIND_VALUE), 0);
    /* a zone open when recording is turned off still ends normally */
    {
        SPS_ZONE("toggled");
        sps_set_enabled(0);
    }
    sps_set_enabled(1);
    CHECK_EQ_U(count_of("toggled", SPS_KIND_ZONE), before + 1);
}

static void test_compile_time_disable(void) {
    struct sps_status s0, s1;
    sps_status(&s0);
    disabled_tu_exercise();
    sps_status(&s1);
    CHECK_EQ_U(s1.events_recorded, s0.events_recorded);
    CHECK_EQ_U(count_of("compiled_out", SPS_KIND_ZONE), 0);
    CHECK_EQ_U(count_of("compiled_out_phase", SPS_KIND_ZONE), 0);
}

/* Chained phases on the process's real clock (the TSC here): each
 * phase's recorded total is, to the nanosecond, the sum of its events'
 * durations converted as every zone's are (the chain converts with two
 * 64-bit products instead of a 128-bit one: the same bits). */
static void test_phase_durations_on_the_real_clock(void) {
    for (int i = 0; i < 200; i++) {
        SPS_STEP_NAMED("xp_step");
        SPS_PHASE("xp_a");
        burn(100 + 37 * (i % 11));
        SPS_PHASE("xp_b");
        burn(50);
    }
    const void *base;
    size_t size;
    char label[512];
    CHECK(sps__recorder_snapshot(&base, &size, label, sizeof label) == 0);
    const struct sps_rec_header *h = base;
    const unsigned char *b = base;
    const uint64_t *dir = (const uint64_t *)(b + h->threads_off);
    const struct sps_rec_thread *seg = (const struct sps_rec_thread *)(b + dir[0]);
    const struct sps_rec_name *names = (const struct sps_rec_name *)(b + h->names_off);
    const uint32_t *index = (const uint32_t *)(b + seg->agg_index_off);
    uint64_t head = seg->head[SPS_RING_ZONES], cap = h->ring_cap[SPS_RING_ZONES];
    CHECK(head <= cap); /* every event of this test binary is still in the ring */
    const struct sps_rec_event *ring = (const struct sps_rec_event *)(b + seg->ring_off[SPS_RING_ZONES]);
    for (uint32_t id = 1; id <= h->names_count; id++) {
        if (strcmp(names[id - 1].name, "xp_a") != 0 && strcmp(names[id - 1].name, "xp_b") != 0)
            continue;
        uint64_t sum = 0, n = 0;
        for (uint64_t k = 0; k < head && k < cap; k++)
            if (ring[k].name == id) {
                sum += sps__ticks_to_ns(ring[k].end_ticks - ring[k].start_ticks, h->ns_mult);
                n++;
            }
        const struct sps_rec_agg *a = (const struct sps_rec_agg *)(b + index[id]);
        CHECK_EQ_U(n, 200);
        CHECK_EQ_U(a->count, 200);
        CHECK_EQ_U(a->u.z.total_ns, sum);
        CHECK_EQ_U(a->u.z.self_ns, sum);
    }
}

/* Names are the workload's bytes: cut at a character boundary, and any
 * invalid UTF-8 still yields a valid JSON report (U+FFFD in its place). */
static void test_utf8_names(void) {
    char long_name[200] = "";
    for (int i = 0; i < 60; i++)
        strcat(long_name, "\xc3\xa9"); /* 60 x e-acute: 120 bytes */
    sps_zone_end(sps_zone_begin(sps_site_get(long_name, SPS_KIND_ZONE)));
    sps_zone_end(sps_zone_begin(sps_site_get("bad\xff\xfename", SPS_KIND_ZONE)));
    char junk[140];
    memset(junk, 0x80, sizeof junk - 1); /* continuation bytes only: not UTF-8 at all */
    junk[sizeof junk - 1] = '\0';
    sps_zone_end(sps_zone_begin(sps_site_get(junk, SPS_KIND_ZONE)));
    const char *dir = tmpdir_new("utf8");
    char err[512];
    CHECK_EQ_I(sps_report_write(dir, err, sizeof err), 0);
    json_t *r = report_load(dir); /* jansson rejects invalid UTF-8 */
    CHECK(r != NULL);
    if (!r)
        return;
    char kept[200];
    memcpy(kept, long_name, 118); /* 59 whole characters fit in 119 bytes */
    kept[118] = '\0';
    CHECK(report_find(r, "zones", kept) != NULL);
    CHECK(report_find(r, "zones", "bad\xef\xbf\xbd\xef\xbf\xbdname") != NULL);
    char replaced[119 * 3 + 1] = "";
    for (int i = 0; i < 119; i++) /* kept to the limit, each byte U+FFFD */
        strcat(replaced, "\xef\xbf\xbd");
    CHECK(report_find(r, "zones", replaced) != NULL);
    json_decref(r);
}

/* The record keeps a cut name's bytes as copy_trunc cuts them
 * (record-format.md, conventions): a character that does not fit is
 * dropped whole, found at most 3 bytes back; bytes that are not UTF-8
 * keep the full 119. */
static void test_name_cut_in_record(void) {
    char emoji[200], kept_emoji[200], junk[200], kept_junk[200], stray[200], kept_stray[200];
    memset(emoji, 'a', 117);
    memcpy(emoji + 117, "\xf0\x9f\x98\x80", 5); /* U+1F600 over bytes 117-120 */
    memcpy(kept_emoji, emoji, 117);
    kept_emoji[117] = '\0';
    memset(junk, 0x80, 139); /* continuation bytes only: no lead byte to find */
    junk[139] = '\0';
    memcpy(kept_junk, junk, 119);
    kept_junk[119] = '\0';
    memset(stray, 'b', 115); /* a lead byte 4 back from the cut: too far, kept */
    stray[115] = (char)0xf0;
    memset(stray + 116, 0x80, 10);
    stray[126] = '\0';
    memcpy(kept_stray, stray, 119);
    kept_stray[119] = '\0';
    const char *in[] = {emoji, junk, stray}, *want[] = {kept_emoji, kept_junk, kept_stray};
    for (int k = 0; k < 3; k++)
        sps_zone_end(sps_zone_begin(sps_site_get(in[k], SPS_KIND_ZONE)));
    struct sps_run run;
    run_of_this_process(&run);
    for (int k = 0; k < 3; k++) {
        long i = sps__run_find(&run, want[k], SPS_KIND_ZONE);
        CHECK_MSG(i >= 0, "name %d kept as %zu bytes", k, strlen(want[k]));
        if (i >= 0)
            CHECK_EQ_U(strlen(run.names[i].name), strlen(want[k]));
    }
    sps__run_free(&run);
}

static void test_status(void) {
    struct sps_status s;
    CHECK_EQ_I(sps_status(NULL), SPS_EINVAL);
    CHECK_EQ_I(sps_status(&s), 0);
    CHECK_EQ_I(s.mode, SPS_MODE_MEMORY);
    CHECK_STR_HAS(s.reason, "STEPSCOPE_RUN_DIR unset");
    CHECK(s.events_recorded > 0);
    CHECK_EQ_U(s.threads_recording, 1);
    CHECK(s.clock == SPS_CLOCK_TSC || s.clock == SPS_CLOCK_MONOTONIC);
    CHECK(s.ticks_per_second > 1e6);
    CHECK_STR_HAS(sps_strerror(SPS_EVERSION), "version");
}

static void test_thread_name(void) {
    sps_thread_name("trainer-main");
    struct sps_run run;
    run_of_this_process(&run);
    CHECK_STR_HAS(run.procs[0].threads[0].name, "trainer-main");
    sps__run_free(&run);
}

int main(void) {
    unsetenv("STEPSCOPE_RUN_DIR");
    unsetenv("STEPSCOPE_OUT");
    unsetenv("STEPSCOPE_DISABLE");
    RUN_TEST(test_nesting_and_self_time);
    RUN_TEST(test_steps_values_counters);
    RUN_TEST(test_mismatched_end);
    RUN_TEST(test_discard);
    RUN_TEST(test_bad_calls_are_harmless);
    RUN_TEST(test_depth_limit);
    RUN_TEST(test_site_get);
    RUN_TEST(test_runtime_disable);
    RUN_TEST(test_compile_time_disable);
    RUN_TEST(test_phase_durations_on_the_real_clock);
    RUN_TEST(test_utf8_names);
    RUN_TEST(test_name_cut_in_record);
    RUN_TEST(test_status);
    RUN_TEST(test_thread_name);
    return check_report();
}
