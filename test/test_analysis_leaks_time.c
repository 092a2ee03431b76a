/* test_analysis_leaks_time.c - the leak analysis of a run with no steps,
 * against time: fixture series of known shape (a steady leak found with
 * its rate, start-up growth then a plateau, sawtooth and garbage-collector
 * patterns, a one-off allocation, a leak that stops), the refusals (too
 * short, too few readings, a hole in the readings), processes that join
 * late, leave early or start up on their own, the tree's PSS, the unit of
 * the slope, report.json, the terminal and report.html; then `stepscope
 * run` of test/helpers/grow.c (records nothing) leaking, holding flat and
 * gone at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/leaks.h"
#include "check.h"
#include "model/run.h"
#include "render/analysis_views.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "sampler/sampler.h"
#include "support.h"

#define MIB (1024.0 * 1024.0)
#define T0 5000000000LL /* the sampler's first reading: 0 s on the axis */
#define MS 1000000LL

/* A deterministic wobble in [-1, 1]: the readings' noise. */
static double wobble(size_t i) {
    return (double)((i * 7919u) % 101u) / 50.0 - 1.0;
}

/* A memory series' value at reading i, t seconds after T0. */
typedef double (*shape_fn)(size_t i, double t);

/* A run that recorded nothing (any command): no steps, no records; the
 * sampler read the tree's RSS every dt_ms for `seconds` (readings at 0,
 * dt, ... up to seconds) by shape. */
static struct sps__sampler_result *sampler_of(double seconds, long dt_ms, shape_fn shape) {
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    r->started_ns = T0;
    r->tree_pid = 777;
    r->interval_ms = (int)dt_ms;
    r->machine_interval_ms = 500;
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++)
        sps__series_init(&r->host[m], 512);
    size_t n = (size_t)llround(seconds * 1000.0 / (double)dt_ms);
    for (size_t i = 0; i <= n; i++) {
        int64_t t = T0 + (int64_t)i * dt_ms * MS;
        sps__series_add(&r->host[SPS_M_WORKLOAD_RSS_BYTES], t, shape(i, (double)(t - T0) * 1e-9));
    }
    return r;
}

/* Add a process of the tree read every dt_ms from from_s to to_s by shape
 * (t counted from T0). */
static void add_process(struct sps__sampler_result *r, int pid, const char *comm, double from_s, double to_s,
                        long dt_ms, shape_fn shape) {
    struct sps__process_series *ps = &r->process[r->nprocesses++];
    ps->pid = pid;
    snprintf(ps->comm, sizeof ps->comm, "%s", comm);
    ps->start_ticks = (uint64_t)pid;
    sps__series_init(&ps->rss_bytes, 512);
    int64_t from = T0 + llround(from_s * 1e9), to = T0 + llround(to_s * 1e9);
    ps->first_seen_ns = from;
    size_t i = 0;
    for (int64_t t = from; t <= to; t += dt_ms * MS, i++)
        sps__series_add(&ps->rss_bytes, t, shape(i, (double)(t - T0) * 1e-9));
}

static void sampler_free(struct sps__sampler_result *r) {
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++)
        sps__series_free(&r->host[m]);
    for (int g = 0; g < r->ngpus; g++)
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            sps__series_free(&r->gpu[g].m[m]);
    for (int k = 0; k < r->nprocesses; k++)
        sps__series_free(&r->process[k].rss_bytes);
    free(r);
}

/* The leak analysis of a run with no steps and sampler r. */
static void analyze(const struct sps__sampler_result *r, struct sps_leaks *l) {
    struct sps_run run;
    memset(&run, 0, sizeof run);
    CHECK_EQ_I(sps__leaks_analyze(&run, r, l), 0);
}

/* ------------------------------------------------------ the shapes */

/* 2 MiB a second from 200 MiB, with +-300 kB of noise. */
static double leak_2mib_s(size_t i, double t) {
    return 200 * MIB + 2 * MIB * t + 300e3 * wobble(i);
}

/* Start-up (imports, caches, pools): 8 MiB a second for 10 s, then level. */
static double startup_then_plateau(size_t i, double t) {
    return 100 * MIB + (t < 10 ? t : 10) * 8 * MIB + 100e3 * wobble(i);
}

/* A garbage collector: 40 MiB of garbage gathered then freed, every
 * period seconds. */
static double gc_period;
static double sawtooth(size_t i, double t) {
    (void)i;
    return 300 * MIB + fmod(t, gc_period) / gc_period * 40 * MIB;
}

/* One allocation of 64 MiB halfway through (an allocator's arena growing
 * once), otherwise level. */
static double one_off(size_t i, double t) {
    return 300 * MIB + (t >= 17 ? 64 * MIB : 0) + 30e3 * wobble(i);
}

/* 1 MiB a second until 18 s, then level: a rise that does not persist. */
static double rise_then_stop(size_t i, double t) {
    return 300 * MIB + (t < 18 ? t : 18) * MIB + 30e3 * wobble(i);
}

static double flat(size_t i, double t) {
    (void)t;
    return 450 * MIB + 40e3 * wobble(i);
}

/* ------------------------------------------------------ the verdicts */

/* The trend against seconds, straight: a known rate is found with it. */
static void test_judge_time_known_rate(void) {
    double x[40], y[40];
    for (int i = 0; i < 40; i++) {
        x[i] = 2.0 + 0.1 * i;
        y[i] = 50 * MIB + 3 * MIB * x[i] + 200e3 * wobble((size_t)i);
    }
    struct sps_leak_series s;
    memset(&s, 0, sizeof s);
    CHECK_EQ_I(sps__leak_judge_time(x, y, 40, 2.0, 5.9, 0.0, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_LEAK_FOUND);
    CHECK_EQ_I(s.axis, SPS_LEAK_AXIS_TIME);
    CHECK_NEAR(s.slope, 3 * MIB, 0.03 * MIB);
    CHECK(s.ci95_low <= 3 * MIB && 3 * MIB <= s.ci95_high);
    CHECK_NEAR(s.seconds_analysed, 3.9, 1e-12);
    CHECK_NEAR(s.growth_bytes, s.slope * 3.9, 1);
    CHECK_EQ_I(s.steps_analysed, 0);
    CHECK_NEAR(s.first_at, 2.0, 0);
    CHECK_STR_HAS(s.reason, "bytes/s (95% CI");
    CHECK_STR_HAS(s.reason, "over the 3.9 s, every one of 5 segments higher");
}

/* A steady leak of 2 MiB/s over a 30 s run read every 100 ms: the first
 * 6 s are start-up, the other 24 s are judged, and the rate is found. */
static void test_steady_leak_found_with_its_rate(void) {
    struct sps__sampler_result *r = sampler_of(30, 100, leak_2mib_s);
    struct sps_leaks l;
    analyze(r, &l);
    CHECK_EQ_I(l.axis, SPS_LEAK_AXIS_TIME);
    CHECK_EQ_I(l.verdict, SPS_LEAK_FOUND);
    CHECK_STR_HAS(l.reason, "1 of 1 memory series grow over time");
    CHECK_NEAR(l.warmup_seconds, 6.0, 1e-9);
    CHECK_NEAR(l.seconds_analysed, 24.0, 1e-9);
    CHECK_EQ_I(l.steps_analysed, 0);
    CHECK_EQ_I(l.pid, -1);
    CHECK_EQ_I(l.tree_pid, 777);
    CHECK_STR_HAS(l.tree_note, "RSS summed over processes: no PSS reading");
    CHECK_EQ_I(l.nseries, 1);
    const struct sps_leak_series *s = &l.series[0];
    CHECK_EQ_I(strcmp(s->series, "workload_rss_bytes"), 0);
    CHECK_EQ_I(s->verdict, SPS_LEAK_FOUND);
    CHECK_EQ_I(s->rule, SPS_LEAK_RULE_ALL);
    CHECK_MSG(fabs(s->slope - 2 * MIB) < 0.01 * MIB, "slope %g", s->slope);
    CHECK(s->ci95_low > 1.98 * MIB && s->ci95_high < 2.02 * MIB);
    CHECK_EQ_I(s->points, 241); /* 6.0 s to 30.0 s */
    CHECK_NEAR(s->first_at, 6.0, 1e-9);
    CHECK_NEAR(s->last_at, 30.0, 1e-9);
    CHECK_NEAR(s->growth_bytes, 48 * MIB, 0.5 * MIB);
    CHECK_EQ_I(s->rising_segments, 4);
    sps__leaks_free(&l);

    /* the sampler's reading as the command exits (the tree gone: 0 bytes)
     * is not the run's memory, nor its end */
    sps__series_add(&r->host[SPS_M_WORKLOAD_RSS_BYTES], T0 + 30100 * MS, 0.0);
    analyze(r, &l);
    CHECK_NEAR(l.seconds_analysed, 24.0, 1e-9);
    CHECK_EQ_I(l.series[0].points, 241);
    CHECK_NEAR(l.series[0].last_at, 30.0, 1e-9);
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_FOUND);
    sps__leaks_free(&l);
    sampler_free(r);
}

/* Memory that grows while the program starts up and then holds: not a
 * leak, although the start-up outlasts the warm-up share. */
static void test_startup_plateau_is_no_leak(void) {
    struct sps__sampler_result *r = sampler_of(30, 100, startup_then_plateau);
    struct sps_leaks l;
    analyze(r, &l);
    CHECK_EQ_I(l.verdict, SPS_LEAK_NONE);
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_NONE);
    CHECK_MSG(l.series[0].rising_segments <= 1, "rising %d", l.series[0].rising_segments);
    CHECK_STR_HAS(l.reason, "1 of 1 memory series judged, none grows over time");
    sps__leaks_free(&l);
    sampler_free(r);
}

/* Garbage gathered and freed, with periods from a tenth of a segment to
 * most of one (the segments are 4.8 s): the teeth, not a leak. */
static void test_sawtooth_is_no_leak(void) {
    static const double periods[] = {0.7, 1.5, 3.0};
    for (size_t k = 0; k < sizeof periods / sizeof *periods; k++) {
        gc_period = periods[k];
        struct sps__sampler_result *r = sampler_of(30, 100, sawtooth);
        struct sps_leaks l;
        analyze(r, &l);
        CHECK_MSG(l.series[0].verdict == SPS_LEAK_NONE, "period %g s: %s", periods[k], l.series[0].reason);
        sps__leaks_free(&l);
        sampler_free(r);
    }
}

/* An allocator's one-off growth, and a rise that stops halfway: neither
 * persists through the run. */
static void test_one_off_and_stopping_rise_are_no_leak(void) {
    shape_fn shapes[] = {one_off, rise_then_stop};
    for (size_t k = 0; k < 2; k++) {
        struct sps__sampler_result *r = sampler_of(30, 100, shapes[k]);
        struct sps_leaks l;
        analyze(r, &l);
        CHECK_MSG(l.series[0].verdict == SPS_LEAK_NONE, "shape %zu: %s", k, l.series[0].reason);
        CHECK_EQ_I(l.series[0].rule, SPS_LEAK_RULE_PERSISTENCE);
        sps__leaks_free(&l);
        sampler_free(r);
    }
}

/* Level memory: the interval holds zero. */
static void test_flat_is_no_leak(void) {
    struct sps__sampler_result *r = sampler_of(10, 100, flat);
    struct sps_leaks l;
    analyze(r, &l);
    CHECK_EQ_I(l.verdict, SPS_LEAK_NONE);
    CHECK_EQ_I(l.series[0].rule, SPS_LEAK_RULE_INTERVAL);
    CHECK(l.series[0].ci95_low <= 0 && l.series[0].ci95_high >= 0);
    CHECK_STR_HAS(l.series[0].reason, "bytes/s) does not exclude no growth");
    sps__leaks_free(&l);
    sampler_free(r);
}

/* ------------------------------------------------------ the refusals */

/* Too short a run, too few readings, a hole in the readings: unknown,
 * each with its reason, whatever the memory did. */
static void test_too_little_is_refused(void) {
    struct sps_leaks l;
    /* 1.5 s: 1.2 s after the warm-up share */
    struct sps__sampler_result *r = sampler_of(1.5, 100, leak_2mib_s);
    analyze(r, &l);
    CHECK_EQ_I(l.verdict, SPS_LEAK_UNKNOWN);
    CHECK_STR_HAS(l.series[0].reason, "only 1.2 s after warm-up (the trend needs 2 s)");
    CHECK_STR_HAS(l.reason, "no memory series could be judged against time (each series says why)");
    CHECK(isnan(l.series[0].slope));
    sps__leaks_free(&l);
    sampler_free(r);

    /* 3 s read every 500 ms: 5 readings in the 2.4 s judged */
    r = sampler_of(3, 500, leak_2mib_s);
    analyze(r, &l);
    CHECK_EQ_I(l.verdict, SPS_LEAK_UNKNOWN);
    CHECK_STR_HAS(l.series[0].reason, "only 5 readings during the 2.4 s after warm-up (the trend needs 20)");
    sps__leaks_free(&l);
    sampler_free(r);

    /* 10 s read every 100 ms but for 2.5 s in the middle (a sampler held
     * off the CPUs): a trend across the hole would be a guess */
    r = sampler_of(10, 100, leak_2mib_s);
    struct sps__series *s = &r->host[SPS_M_WORKLOAD_RSS_BYTES], holed;
    sps__series_init(&holed, 512);
    for (uint32_t i = 0; i < s->count; i++) {
        double t = (double)(s->points[i].t_ns - T0) * 1e-9;
        if (t <= 4.0 + 1e-9 || t >= 6.5 - 1e-9)
            sps__series_add(&holed, s->points[i].t_ns, s->points[i].mean);
    }
    sps__series_free(s);
    *s = holed;
    analyze(r, &l);
    CHECK_EQ_I(l.verdict, SPS_LEAK_UNKNOWN);
    CHECK_STR_HAS(l.series[0].reason, "the readings leave 2.5 s of the 8 s after warm-up unread (at most 20% may be)");
    sps__leaks_free(&l);
    sampler_free(r);

    /* nothing read at all (a command gone before the first reading) */
    r = sampler_of(0, 100, flat);
    sps__series_free(&r->host[SPS_M_WORKLOAD_RSS_BYTES]);
    analyze(r, &l);
    CHECK_EQ_I(l.verdict, SPS_LEAK_UNKNOWN);
    CHECK_EQ_I(l.axis, SPS_LEAK_AXIS_TIME);
    CHECK_STR_HAS(l.series[0].reason, "no readings: the metric was unavailable");
    sps__leaks_free(&l);
    sampler_free(r);
}

/* ------------------------------------------------------ processes */

static double worker_leaking(size_t i, double t) {
    return 40 * MIB + (t - 10) * MIB + 20e3 * wobble(i + 3);
}

/* A child that starts up on its own (20 MiB/s for its first second),
 * long after the tree did, then holds. */
static double child_startup(size_t i, double t) {
    double own = t - 10;
    return 30 * MIB + (own < 1 ? own : 1) * 20 * MIB + 20e3 * wobble(i + 7);
}

static const struct sps_leak_series *series_of(const struct sps_leaks *l, int pid) {
    for (size_t i = 0; i < l->nseries; i++)
        if (l->series[i].scope == SPS_LEAK_SCOPE_PROCESS && l->series[i].pid == pid)
            return &l->series[i];
    return NULL;
}

/* Processes come and go in a tree judged against time: each process is
 * judged over its own time in the tree after its own start-up.  A worker
 * that joins at 10 s and leaks is found with its rate over its 16 s after
 * warm-up; a child that starts up late and holds is no leak; one that
 * lived under a second is short-lived; the run stays known. */
static void test_processes_on_their_own_time(void) {
    struct sps__sampler_result *r = sampler_of(30, 100, flat);
    add_process(r, 777, "main", 0, 30, 100, flat);
    add_process(r, 778, "worker", 10, 30, 100, worker_leaking);
    add_process(r, 779, "child", 10, 30, 100, child_startup);
    add_process(r, 780, "brief", 12, 12.8, 100, flat);
    struct sps_leaks l;
    analyze(r, &l);
    CHECK_EQ_I(l.verdict, SPS_LEAK_FOUND);
    CHECK_STR_HAS(l.reason, "1 of 5 memory series grow over time (1 could not be judged)");
    const struct sps_leak_series *main_s = series_of(&l, 777), *worker = series_of(&l, 778),
                                 *child = series_of(&l, 779), *brief = series_of(&l, 780);
    CHECK(main_s && worker && child && brief);
    if (main_s && worker && child && brief) {
        CHECK_EQ_I(main_s->verdict, SPS_LEAK_NONE);
        CHECK_NEAR(main_s->seconds_analysed, 24, 1e-9);
        CHECK_EQ_I(worker->verdict, SPS_LEAK_FOUND);
        CHECK_NEAR(worker->slope, MIB, 0.01 * MIB);
        CHECK_NEAR(worker->seconds_analysed, 16, 1e-9);
        CHECK_NEAR(worker->first_at, 14, 1e-9);
        CHECK_EQ_I(worker->points, 161);
        CHECK_MSG(child->verdict == SPS_LEAK_NONE, "child: %s", child->reason);
        CHECK_EQ_I(brief->verdict, SPS_LEAK_UNKNOWN);
        CHECK_STR_HAS(brief->reason, "short-lived: in the tree for 0.8 s of its 30 s, read 9 times (the trend "
                                     "needs 2 s after the process's own warm-up, and 20 readings)");
    }
    sps__leaks_free(&l);
    sampler_free(r);
}

/* A GPU's workload memory, read every machine interval (500 ms), over
 * the tree's time: 1 MiB a second is found on it while the host holds. */
static void test_gpu_on_time(void) {
    struct sps__sampler_result *r = sampler_of(30, 100, flat);
    r->ngpus = 1;
    r->gpu[0].index = 2;
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
        sps__series_init(&r->gpu[0].m[m], 512);
    for (long ms = 0; ms <= 30000; ms += 500)
        sps__series_add(&r->gpu[0].m[SPS_M_GPU_WORKLOAD_MEMORY_BYTES], T0 + ms * MS,
                        2e9 + MIB * (double)ms * 1e-3 + 20e3 * wobble((size_t)ms));
    struct sps_leaks l;
    analyze(r, &l);
    CHECK_EQ_I(l.nseries, 2);
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_NONE);
    const struct sps_leak_series *g = &l.series[1];
    CHECK_EQ_I(strcmp(g->series, "gpu_workload_memory_bytes"), 0);
    CHECK_EQ_I(g->gpu, 2);
    CHECK_EQ_I(g->verdict, SPS_LEAK_FOUND);
    CHECK_EQ_I(g->points, 49);
    CHECK_NEAR(g->slope, MIB, 0.01 * MIB);
    CHECK_STR_HAS(l.reason, "1 of 2 memory series grow over time");
    sps__leaks_free(&l);
    sampler_free(r);
}

/* ------------------------------------------------------ the tree's PSS */

/* Forked copies of the same pages: the RSS sum grows, the PSS does not. */
static double rss_sum_of_forks(size_t i, double t) {
    return 300 * MIB * (1 + floor(t / 5)) + 40e3 * wobble(i);
}

static double pss_level(size_t i, double t) {
    (void)t;
    return 310 * MIB + 40e3 * wobble(i);
}

/* The tree's PSS, read every every_ms over the run, into r. */
static void add_pss(struct sps__sampler_result *r, double seconds, long every_ms) {
    struct sps__series *s = &r->host[SPS_M_WORKLOAD_PSS_BYTES];
    sps__series_free(s);
    sps__series_init(s, 512);
    for (long ms = every_ms; ms <= (long)(seconds * 1000); ms += every_ms)
        sps__series_add(s, T0 + ms * MS, pss_level((size_t)ms, (double)ms * 1e-3));
}

/* Against time the tree's memory is its PSS where PSS can be judged, else
 * the RSS sum, with the reason PSS could not be. */
static void test_tree_pss_on_time(void) {
    struct sps__sampler_result *r = sampler_of(30, 100, rss_sum_of_forks);
    add_pss(r, 30, 500);
    struct sps_leaks l;
    analyze(r, &l);
    CHECK_EQ_I(strcmp(l.series[0].series, "workload_pss_bytes"), 0);
    CHECK_EQ_I(l.series[0].points, 49); /* 6.0 s to 30.0 s */
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_NONE);
    CHECK_STR_HAS(l.tree_note, "PSS: pages the tree's processes share count once (49 readings after warm-up)");
    sps__leaks_free(&l);
    /* PSS read every 3 s: 9 readings, too few; the RSS sum, which the
     * forks make grow */
    add_pss(r, 30, 3000);
    analyze(r, &l);
    CHECK_EQ_I(strcmp(l.series[0].series, "workload_rss_bytes"), 0);
    CHECK_STR_HAS(l.tree_note, "RSS summed over processes: PSS (read as often as its cost allows) cannot be "
                               "judged: only 9 readings during the 24 s after warm-up");
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_FOUND);
    sps__leaks_free(&l);
    sampler_free(r);
}

/* ------------------------------------------------------ what is written */

static char *analysis_json_text(const struct sps_analysis *a) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    struct sps_jw w;
    sps__jw_init(&w, mem);
    sps__jw_object(&w, NULL);
    sps__analysis_json(&w, a);
    sps__jw_end(&w, '}');
    fclose(mem);
    return buf;
}

/* report.json's analysis.leaks, the terminal's lines and report.html of
 * the analysis of a run with no steps and sampler r. */
static json_t *written(struct sps__sampler_result *r, char **text, char **html) {
    struct sps_run run;
    memset(&run, 0, sizeof run);
    struct sps_analysis a;
    CHECK_EQ_I(sps__analyze(&run, &(struct sps_run_info){.sampler = r}, NULL, &a), 0);
    char *buf = analysis_json_text(&a);
    json_t *root = json_loads(buf, 0, NULL);
    CHECK_MSG(root != NULL, "%s", buf);
    free(buf);
    size_t len = 0;
    FILE *mem = open_memstream(text, &len);
    sps__analysis_leaks_print(mem, &a.leaks);
    fclose(mem);
    mem = open_memstream(html, &len);
    sps__analysis_leaks_html(mem, &a.leaks);
    fclose(mem);
    sps__analysis_free(&a);
    return root;
}

static void test_written_says_the_axis(void) {
    struct sps__sampler_result *r = sampler_of(30, 100, leak_2mib_s);
    char *text, *html;
    json_t *root = written(r, &text, &html);
    json_t *leaks = json_path(root, "analysis.leaks");
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(leaks, "axis")), "time"), 0);
    CHECK(json_is_null(json_object_get(leaks, "step_stream")));
    CHECK_NEAR(json_num(leaks, "warmup_seconds"), 6.0, 1e-9);
    CHECK_NEAR(json_num(leaks, "seconds_analysed"), 24.0, 1e-9);
    CHECK_EQ_I(json_num(leaks, "steps_analysed"), 0);
    CHECK_EQ_I(json_num(leaks, "thresholds.time_min_points"), SPS_LEAK_TIME_MIN_POINTS);
    CHECK_NEAR(json_num(leaks, "thresholds.time_min_seconds"), SPS_LEAK_TIME_MIN_SECONDS, 0);
    json_t *s = json_array_get(json_object_get(leaks, "series"), 0);
    CHECK_NEAR(json_num(s, "slope_bytes_per_second"), 2 * MIB, 0.01 * MIB);
    CHECK(json_is_null(json_object_get(s, "slope_bytes_per_step")));
    CHECK(json_is_null(json_object_get(s, "first_step")));
    CHECK_NEAR(json_num(s, "first_seconds"), 6.0, 1e-9);
    CHECK_NEAR(json_num(s, "last_seconds"), 30.0, 1e-9);
    CHECK_NEAR(json_num(s, "seconds_analysed"), 24.0, 1e-9);
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(s, "verdict")), "leak"), 0);

    CHECK_STR_HAS(text, "leaks       leak: workload RSS grows 2.00 MiB/s (95% CI ");
    CHECK_STR_HAS(text, ") over 24 s after warm-up (+48.0 MiB)\n            judged against time: no steps were "
                        "recorded (the first 20% of each series' time is warm-up: the run's first 6 s)\n");
    CHECK_STR_HAS(html, "Memory against time (no steps were recorded), after a warm-up of the first 20%");
    CHECK_STR_HAS(html, "<th>slope over time (95% CI)</th>");
    CHECK_STR_HAS(html, "<td class=\"label\">2.00 MiB/s (95% CI ");
    CHECK_STR_HAS(html, " over 24 s, every one of 5 segments higher than the last</td>");
    free(text);
    free(html);
    json_decref(root);
    sampler_free(r);

    /* no leak: the run's time and each series' slope per second */
    r = sampler_of(10, 100, flat);
    root = written(r, &text, &html);
    CHECK_STR_HAS(text, "leaks       no leak over 8 s after warm-up (workload RSS ");
    CHECK_STR_HAS(text, "/s (95% CI ");
    CHECK_STR_HAS(html, "per s) does not exclude no growth");
    free(text);
    free(html);
    json_decref(root);
    sampler_free(r);
}

/* 12 MiB a minute over a 20-minute run read every second: the slope in
 * the unit its time reads best in. */
static double leak_12mib_min(size_t i, double t) {
    return 1024 * MIB + 12 * MIB * t / 60 + 200e3 * wobble(i);
}

static void test_slope_per_minute(void) {
    struct sps__sampler_result *r = sampler_of(1200, 1000, leak_12mib_min);
    char *text, *html;
    json_t *root = written(r, &text, &html);
    CHECK_NEAR(json_num(root, "analysis.leaks.series.0.slope_bytes_per_second"), 0.2 * MIB, 0.002 * MIB);
    CHECK_STR_HAS(text, "leak: workload RSS grows 12.00 MiB/min (95% CI ");
    CHECK_STR_HAS(text, " over 16 min after warm-up (+192.0 MiB)\n");
    CHECK_STR_HAS(text, "warm-up: the run's first 240 s)\n");
    free(text);
    free(html);
    json_decref(root);
    sampler_free(r);
}

/* ------------------------------------------------------ for real */

/* `stepscope run --interval 20 -o OUT -- grow ARGS...`: report.json and the
 * summary the run printed. */
static json_t *run_grow(const char *tag, char *const *args, char *err, size_t errlen, char *out, size_t outlen) {
    snprintf(out, outlen, "%s/out", tmpdir_new(tag));
    char *argv[32] = {SPS_BIN_DIR "/stepscope", "run", "--no-live", "--interval", "20", "-o", out,
                      "--", SPS_BIN_DIR "/test_grow"};
    size_t n = 9;
    for (size_t i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, errlen)), 0);
    return report_load(out);
}

/* The tree's series in analysis.leaks. */
static json_t *tree_series(json_t *leaks) {
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(leaks, "series"), i, s) {
        const char *scope = json_string_value(json_object_get(s, "scope"));
        if (scope && !strcmp(scope, "workload process tree"))
            return s;
    }
    return NULL;
}

/* A program with no steps that keeps 512 KiB every 20 ms for 150 ticks
 * (75 MiB over at least 3 s: a busy machine only stretches the time, and
 * the sampler reads every 20 ms): a leak, against time. */
static void test_growing_program_is_a_leak(void) {
    static char err[16384];
    char *args[] = {"--kib", "512", "--ticks", "150", "--every-ms", "20", NULL};
    char out[600];
    json_t *r = run_grow("grow-leak", args, err, sizeof err, out, sizeof out);
    CHECK(r != NULL);
    if (!r)
        return;
    json_t *leaks = json_path(r, "analysis.leaks");
    const char *v = json_string_value(json_object_get(leaks, "verdict"));
    CHECK_MSG(v && !strcmp(v, "leak"), "verdict %s (%s)", v ? v : "(none)",
              json_string_value(json_object_get(leaks, "reason")));
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(leaks, "axis")), "time"), 0);
    json_t *tree = tree_series(leaks);
    CHECK(tree != NULL);
    if (tree) {
        CHECK_EQ_I(strcmp(json_string_value(json_object_get(tree, "verdict")), "leak"), 0);
        CHECK(json_num(tree, "ci95_low") > 0);
        CHECK(json_is_null(json_object_get(tree, "slope_bytes_per_step")));
        /* what grew in the time judged: most of the 75 MiB kept, never
         * more than it (and the program's few pages) */
        double growth = json_num(tree, "growth_bytes");
        CHECK_MSG(growth > 20 * MIB && growth < 80 * MIB, "growth %g", growth);
        fprintf(stderr, "grow: %.0f bytes/s (95%% CI %.0f to %.0f) over %.2f s from %.0f readings; grew %.1f MiB\n",
                json_num(tree, "slope_bytes_per_second"), json_num(tree, "ci95_low"), json_num(tree, "ci95_high"),
                json_num(tree, "seconds_analysed"), json_num(tree, "points"), growth / MIB);
    }
    CHECK_STR_HAS(err, "leak: workload ");
    CHECK_STR_HAS(err, "/s (95% CI ");
    CHECK_STR_HAS(err, "judged against time: no steps were recorded");

    /* `stepscope report` reads the axis back from report.json alone and
     * prints the same lines */
    char path[700], cmd[1500];
    static char summary[16384];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/records'", out);
    CHECK_EQ_I(system(cmd), 0);
    snprintf(path, sizeof path, "%s/summary.txt", out);
    char *report_argv[] = {SPS_BIN_DIR "/stepscope", "report", out, "--format", "summary", "-o", path, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(report_argv, NULL, 0)), 0);
    read_file(path, summary, sizeof summary);
    const char *was = strstr(err, "\nleaks "), *is = strstr(summary, "\nleaks ");
    CHECK(was && is);
    if (was && is) {
        const char *was_end = strstr(was, "judged against time"), *is_end = strstr(is, "judged against time");
        CHECK(was_end && is_end && was_end - was == is_end - is && !strncmp(was, is, (size_t)(was_end - was)));
    }
    json_decref(r);
}

/* The same program holding 48 MiB it took at once, then level for 150
 * ticks: no leak, against time. */
static void test_flat_program_is_no_leak(void) {
    static char err[16384];
    char *args[] = {"--hold-mib", "48", "--ticks", "150", "--every-ms", "20", NULL};
    char out[600];
    json_t *r = run_grow("grow-flat", args, err, sizeof err, out, sizeof out);
    CHECK(r != NULL);
    if (!r)
        return;
    json_t *leaks = json_path(r, "analysis.leaks");
    const char *v = json_string_value(json_object_get(leaks, "verdict"));
    CHECK_MSG(v && !strcmp(v, "no leak"), "verdict %s (%s)", v ? v : "(none)",
              json_string_value(json_object_get(leaks, "reason")));
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(leaks, "axis")), "time"), 0);
    CHECK_STR_HAS(err, "leaks       no leak over ");
    CHECK_STR_HAS(err, "judged against time: no steps were recorded");
    json_decref(r);
}

/* A command gone at once: unknown, and why. */
static void test_instant_program_is_unknown(void) {
    static char err[16384];
    char *args[] = {"--ticks", "0", NULL};
    char out[600];
    json_t *r = run_grow("grow-none", args, err, sizeof err, out, sizeof out);
    CHECK(r != NULL);
    if (!r)
        return;
    json_t *leaks = json_path(r, "analysis.leaks");
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(leaks, "verdict")), "unknown"), 0);
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(leaks, "axis")), "time"), 0);
    CHECK_STR_HAS(json_string_value(json_object_get(leaks, "reason")), "no memory series could be judged against time");
    json_t *tree = tree_series(leaks);
    CHECK(tree != NULL);
    if (tree)
        CHECK_STR_HAS(json_string_value(json_object_get(tree, "reason")), "after warm-up (the trend needs 2 s)");
    json_decref(r);
}

/* A run of a few long steps (5, one of them warm-up: too few for a trend
 * against steps) that leaks 2 MiB a second is judged against time, and
 * says why; with enough steps the same memory is judged against them. */
static void test_few_steps_are_judged_against_time(void) {
    struct sps__sampler_result *r = sampler_of(30, 100, leak_2mib_s);
    for (size_t nsteps = 5; nsteps <= 20; nsteps += 15) {
        struct sps_run run;
        memset(&run, 0, sizeof run);
        run.nprocs = 1;
        run.procs = calloc(1, sizeof *run.procs);
        run.procs[0].pid = 777;
        run.nnames = 1;
        run.names = calloc(1, sizeof *run.names);
        strcpy(run.names[0].name, "step");
        run.nsteps = nsteps;
        run.steps = calloc(nsteps, sizeof *run.steps);
        int64_t step_ns = 30000 * MS / (int64_t)nsteps;
        for (size_t i = 0; i < nsteps; i++) {
            struct sps_step_row *row = &run.steps[i];
            row->index = i;
            row->tid = 777;
            row->start_ns = (uint64_t)(T0 + (int64_t)i * step_ns);
            row->end_ns = row->start_ns + (uint64_t)step_ns;
            row->warmup = i == 0;
        }
        run.warmup_steps = 1;
        struct sps_leaks l;
        CHECK_EQ_I(sps__leaks_analyze(&run, r, &l), 0);
        CHECK_EQ_I(l.verdict, SPS_LEAK_FOUND);
        if (nsteps == 5) {
            CHECK_EQ_I(l.axis, SPS_LEAK_AXIS_TIME);
            CHECK_EQ_I(l.steps_analysed, 4);
            CHECK_EQ_I(l.warmup_steps, 1);
            CHECK_EQ_I(l.pid, -1);
            CHECK_NEAR(l.seconds_analysed, 24.0, 1e-9);
            CHECK_MSG(fabs(l.series[0].slope - 2 * MIB) < 0.01 * MIB, "slope %g", l.series[0].slope);
            char *text = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&text, &len);
            sps__analysis_leaks_print(f, &l);
            fclose(f);
            CHECK_STR_HAS(text, "judged against time: only 4 steps after warm-up (a trend against steps needs 10)");
            free(text);
        } else {
            CHECK_EQ_I(l.axis, SPS_LEAK_AXIS_STEPS);
            CHECK_EQ_I(l.steps_analysed, 19);
        }
        sps__leaks_free(&l);
        free(run.steps);
        free(run.names);
        free(run.procs);
    }
    sampler_free(r);
}

int main(void) {
    RUN_TEST(test_judge_time_known_rate);
    RUN_TEST(test_steady_leak_found_with_its_rate);
    RUN_TEST(test_startup_plateau_is_no_leak);
    RUN_TEST(test_sawtooth_is_no_leak);
    RUN_TEST(test_one_off_and_stopping_rise_are_no_leak);
    RUN_TEST(test_flat_is_no_leak);
    RUN_TEST(test_too_little_is_refused);
    RUN_TEST(test_processes_on_their_own_time);
    RUN_TEST(test_gpu_on_time);
    RUN_TEST(test_tree_pss_on_time);
    RUN_TEST(test_written_says_the_axis);
    RUN_TEST(test_slope_per_minute);
    RUN_TEST(test_growing_program_is_a_leak);
    RUN_TEST(test_flat_program_is_no_leak);
    RUN_TEST(test_instant_program_is_unknown);
    RUN_TEST(test_few_steps_are_judged_against_time);
    return check_report();
}
