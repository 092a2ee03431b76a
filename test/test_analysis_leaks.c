/* test_analysis_leaks.c - leak detection: the Theil-Sen slope and Sen's
 * interval, the verdict on flat, plateau, sawtooth, one-off and leaking
 * series, the whole analysis on a synthetic Run with its sampler result
 * (warm-up excluded, a GPU with too few readings, per-process series), its
 * JSON and its views, and examples/leaky_train (flagged, also with the leak
 * in a forked worker) and tiny_train (not) under `stepscope run`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/leaks.h"
#include "check.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "model/run.h"
#include "render/analysis_views.h"
#include "sampler/sampler.h"
#include "support.h"

#define MIB (1024.0 * 1024.0)

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A deterministic wobble in [-1, 1]: the readings' noise. */
static double wobble(size_t i) {
    return (double)((i * 7919u) % 101u) / 50.0 - 1.0;
}

static void test_theil_sen_line(void) {
    double x[20], y[20], slope, lo, hi;
    for (int i = 0; i < 20; i++) {
        x[i] = i;
        y[i] = 3.0 * i + 5.0;
    }
    CHECK_EQ_I(sps__theil_sen(x, y, 20, &slope, &lo, &hi), 0);
    CHECK_NEAR(slope, 3.0, 1e-12);
    CHECK_NEAR(lo, 3.0, 1e-12);
    CHECK_NEAR(hi, 3.0, 1e-12);
    /* one outlier moves least squares, not the median of slopes */
    y[19] = 1e6;
    CHECK_EQ_I(sps__theil_sen(x, y, 20, &slope, &lo, &hi), 0);
    CHECK_NEAR(slope, 3.0, 1e-12);
    /* all at one x: no slope */
    for (int i = 0; i < 20; i++)
        x[i] = 4;
    CHECK_EQ_I(sps__theil_sen(x, y, 20, &slope, &lo, &hi), -1);
    CHECK(isnan(slope) && isnan(lo) && isnan(hi));
}

/* n = 10: 45 slopes, C = 1.96 sqrt(10*9*25/18) = 21.91, so the interval is
 * the slopes of ranks floor(11.54) = 11 and ceil(33.46) + 1 = 35. */
static void test_theil_sen_interval_ranks(void) {
    double x[10], y[10], slopes[45], slope, lo, hi;
    for (int i = 0; i < 10; i++) {
        x[i] = i;
        y[i] = 2.0 * i + 3.0 * wobble((size_t)i);
    }
    size_t k = 0;
    for (int i = 0; i < 10; i++)
        for (int j = i + 1; j < 10; j++)
            slopes[k++] = (y[j] - y[i]) / (x[j] - x[i]);
    qsort(slopes, 45, sizeof *slopes, cmp_d);
    CHECK_EQ_I(sps__theil_sen(x, y, 10, &slope, &lo, &hi), 0);
    CHECK_NEAR(slope, slopes[22], 0);
    CHECK_NEAR(lo, slopes[10], 0);
    CHECK_NEAR(hi, slopes[34], 0);
    CHECK(lo < slope && slope < hi);
}

/* Judge y over steps 0..n-1, one reading a step. */
static enum sps_leak_verdict judge(const double *y, size_t n, struct sps_leak_series *out) {
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (double)i;
    memset(out, 0, sizeof *out);
    CHECK_EQ_I(sps__leak_judge(x, y, n, n, 0.0, out), 0);
    free(x);
    return out->verdict;
}

static void test_flat_is_no_leak(void) {
    double y[60];
    for (size_t i = 0; i < 60; i++)
        y[i] = 500 * MIB + 200e3 * wobble(i); /* +-200 kB of noise */
    struct sps_leak_series s;
    CHECK_EQ_I(judge(y, 60, &s), SPS_LEAK_NONE);
    CHECK(s.ci95_low <= 0 && s.ci95_high >= 0);
    CHECK_NEAR(s.median_bytes, 500 * MIB, 200e3);
    CHECK_EQ_I(s.points, 60);
}

/* Memory grows for the first fifth of the steps (caches filling), then
 * stays level: Theil-Sen sees a positive slope, the segments do not. */
static void test_plateau_is_no_leak(void) {
    double y[60];
    for (size_t i = 0; i < 60; i++)
        y[i] = 100 * MIB + (i < 12 ? (double)i : 12.0) * 4 * MIB + 50e3 * wobble(i);
    struct sps_leak_series s;
    CHECK_EQ_I(judge(y, 60, &s), SPS_LEAK_NONE);
    CHECK(s.rising_segments < 4);
}

/* An allocator or garbage collector: grows 2 MiB a step for 10 steps,
 * then drops back, over and over. */
static void test_sawtooth_is_no_leak(void) {
    double y[60];
    for (size_t i = 0; i < 60; i++)
        y[i] = 200 * MIB + (double)(i % 10) * 2 * MIB;
    struct sps_leak_series s;
    CHECK_EQ_I(judge(y, 60, &s), SPS_LEAK_NONE);
    CHECK_MSG(strstr(s.reason, "interval") || strstr(s.reason, "persist"), "reason: %s", s.reason);
    /* and teeth that do not fit the segments (period 7) */
    for (size_t i = 0; i < 60; i++)
        y[i] = 200 * MIB + (double)(i % 7) * 3 * MIB;
    CHECK_EQ_I(judge(y, 60, &s), SPS_LEAK_NONE);
}

/* One allocation of 64 MiB halfway through is a jump, not a leak, although
 * the slope's interval may well lie above zero. */
static void test_one_off_allocation_is_no_leak(void) {
    double y[60];
    for (size_t i = 0; i < 60; i++)
        y[i] = 300 * MIB + (i >= 27 ? 64 * MIB : 0) + 30e3 * wobble(i);
    struct sps_leak_series s;
    CHECK_EQ_I(judge(y, 60, &s), SPS_LEAK_NONE);
    CHECK(s.rising_segments <= 1);
}

/* 1 MiB a step over 50 steps, with +-300 kB of noise: found, and the
 * interval holds the true slope. */
static void test_leak_found_in_50_steps(void) {
    double y[50];
    for (size_t i = 0; i < 50; i++)
        y[i] = 800 * MIB + (double)i * MIB + 300e3 * wobble(i);
    struct sps_leak_series s;
    CHECK_EQ_I(judge(y, 50, &s), SPS_LEAK_FOUND);
    CHECK_NEAR(s.slope, MIB, 0.02 * MIB);
    CHECK(s.ci95_low <= MIB && MIB <= s.ci95_high);
    CHECK(s.ci95_low > 0.9 * MIB);
    CHECK_NEAR(s.growth_bytes, 50 * s.slope, 1);
    CHECK_EQ_I(s.rising_segments, 4);
    /* a slow leak whose total stays under 1 MiB does not matter yet */
    for (size_t i = 0; i < 50; i++)
        y[i] = 800 * MIB + (double)i * 16e3;
    CHECK_EQ_I(judge(y, 50, &s), SPS_LEAK_NONE);
    CHECK_STR_HAS(s.reason, "under");
}

static void test_too_few_readings_is_unknown(void) {
    double x[6] = {0, 10, 20, 30, 40, 50}, y[6] = {1, 2, 3, 4, 5, 6};
    struct sps_leak_series s;
    memset(&s, 0, sizeof s);
    CHECK_EQ_I(sps__leak_judge(x, y, 6, 50, 0.0, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_LEAK_UNKNOWN);
    CHECK_STR_HAS(s.reason, "only 6 readings during the 50 steps");
    CHECK(isnan(s.slope));
    /* too few steps after warm-up, however many readings */
    CHECK_EQ_I(judge(y, 6, &s), SPS_LEAK_UNKNOWN);
    CHECK_STR_HAS(s.reason, "only 6 steps after warm-up");
}

/* ------------------------------------------------- a synthetic run */

#define T0 1000000000LL
#define STEP_NS 10000000LL /* 10 ms */

struct fake {
    struct sps_run run;
    struct sps__sampler_result *res;
};

/* nsteps steps of 10 ms, the first `warmup` marked warm-up; RSS read at
 * each step's end by rss(i), into a series of cap points; one GPU read
 * only 3 times. */
static void fake_build(struct fake *f, size_t nsteps, size_t warmup, double (*rss)(size_t), uint32_t cap) {
    memset(f, 0, sizeof *f);
    f->run.nprocs = 1;
    f->run.procs = calloc(1, sizeof *f->run.procs);
    f->run.procs[0].pid = 4242;
    f->run.nnames = 1;
    f->run.names = calloc(1, sizeof *f->run.names);
    strcpy(f->run.names[0].name, "step");
    f->run.nsteps = nsteps;
    f->run.steps = calloc(nsteps, sizeof *f->run.steps);
    for (size_t i = 0; i < nsteps; i++) {
        struct sps_step_row *r = &f->run.steps[i];
        r->index = i;
        r->tid = 4242;
        r->start_ns = (uint64_t)(T0 + (int64_t)i * STEP_NS);
        r->end_ns = r->start_ns + STEP_NS;
        r->warmup = i < warmup;
    }
    f->run.warmup_steps = warmup;
    f->res = calloc(1, sizeof *f->res);
    f->res->tree_pid = 4242;
    struct sps__series *s = &f->res->host[SPS_M_WORKLOAD_RSS_BYTES];
    sps__series_init(s, cap);
    for (size_t i = 0; i < nsteps; i++)
        sps__series_add(s, T0 + (int64_t)(i + 1) * STEP_NS, rss(i));
    f->res->ngpus = 1;
    f->res->gpu[0].index = 0;
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
        sps__series_init(&f->res->gpu[0].m[m], 16);
    for (int k = 0; k < 3; k++)
        sps__series_add(&f->res->gpu[0].m[SPS_M_GPU_MEMORY_USED_BYTES], T0 + k * 20 * STEP_NS, 2e9);
}

/* A process of the tree with a series of its own: pid, comm, read at the
 * end of steps [from, from + n) by rss(i) (i counted from its first). */
static void fake_add_process(struct fake *f, int pid, const char *comm, size_t from, size_t n,
                             double (*rss)(size_t)) {
    struct sps__process_series *ps = &f->res->process[f->res->nprocesses++];
    ps->pid = pid;
    snprintf(ps->comm, sizeof ps->comm, "%s", comm);
    ps->start_ticks = (uint64_t)pid;
    ps->first_seen_ns = T0 + (int64_t)(from + 1) * STEP_NS;
    sps__series_init(&ps->rss_bytes, 512);
    for (size_t i = 0; i < n; i++)
        sps__series_add(&ps->rss_bytes, T0 + (int64_t)(from + i + 1) * STEP_NS, rss(i));
}

static void fake_free(struct fake *f) {
    sps__series_free(&f->res->host[SPS_M_WORKLOAD_RSS_BYTES]);
    sps__series_free(&f->res->host[SPS_M_WORKLOAD_PSS_BYTES]);
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
        sps__series_free(&f->res->gpu[0].m[m]);
    for (int k = 0; k < f->res->nprocesses; k++)
        sps__series_free(&f->res->process[k].rss_bytes);
    free(f->run.procs[0].threads);
    free(f->res);
    free(f->run.procs);
    free(f->run.names);
    free(f->run.steps);
}

/* Warm-up fills 5 MiB a step for 10 steps; then level. */
static double rss_warmup_then_flat(size_t i) {
    return 300 * MIB + (double)(i < 10 ? i : 10) * 5 * MIB + 40e3 * wobble(i);
}

/* The same warm-up, then 1 MiB a step. */
static double rss_warmup_then_leak(size_t i) {
    return 300 * MIB + (double)(i < 10 ? i : 10) * 5 * MIB + (i > 10 ? (double)(i - 10) * MIB : 0);
}

static void test_run_warmup_plateau(void) {
    struct fake f;
    fake_build(&f, 60, 10, rss_warmup_then_flat, 512);
    struct sps_leaks l;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_EQ_I(l.verdict, SPS_LEAK_NONE);
    CHECK_EQ_I(l.warmup_steps, 10);
    CHECK_EQ_I(l.steps_analysed, 50);
    CHECK_EQ_I(l.nseries, 2);
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_NONE);
    /* readings during warm-up are left out; the one at its last step's end
     * is the level the analysed steps start from */
    CHECK_EQ_I(l.series[0].points, 51);
    CHECK_NEAR(l.series[0].first_at, 10.0, 1e-9);
    CHECK_EQ_I(l.series[1].verdict, SPS_LEAK_UNKNOWN); /* 3 GPU readings, 1 inside the steps */
    CHECK_STR_HAS(l.series[1].series, "gpu_memory_used_bytes");
    sps__leaks_free(&l);
    fake_free(&f);
}

/* The leak after warm-up is found, also when the series halved its
 * resolution (cap 16: each point merges 4 readings). */
static void test_run_leak_after_warmup(void) {
    uint32_t caps[] = {512, 16};
    for (size_t c = 0; c < 2; c++) {
        struct fake f;
        fake_build(&f, 60, 10, rss_warmup_then_leak, caps[c]);
        struct sps_leaks l;
        CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
        CHECK_EQ_I(l.verdict, SPS_LEAK_FOUND);
        CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_FOUND);
        CHECK_MSG(fabs(l.series[0].slope - MIB) < 0.01 * MIB, "cap %u: slope %g", caps[c],
                  l.series[0].slope);
        CHECK(l.series[0].ci95_low > 0.9 * MIB && l.series[0].ci95_high < 1.1 * MIB);
        CHECK_EQ_I(l.pid, 4242);
        CHECK_EQ_I(strcmp(l.step_name, "step"), 0);
        sps__leaks_free(&l);
        fake_free(&f);
    }
}

static void test_no_sampler_or_steps_is_unknown(void) {
    struct fake f;
    fake_build(&f, 60, 10, rss_warmup_then_leak, 512);
    struct sps_leaks l;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, NULL, &l), 0);
    CHECK_EQ_I(l.verdict, SPS_LEAK_UNKNOWN);
    CHECK_STR_HAS(l.reason, "no sampler");
    sps__leaks_free(&l);
    /* no step: judged against time instead (test_analysis_leaks_time),
     * where 0.6 s of readings are too few */
    f.run.nsteps = 0;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_EQ_I(l.verdict, SPS_LEAK_UNKNOWN);
    CHECK_EQ_I(l.axis, SPS_LEAK_AXIS_TIME);
    CHECK_STR_HAS(l.reason, "no memory series could be judged against time");
    CHECK_STR_HAS(l.series[0].reason, "only 0.472 s after warm-up (the trend needs 2 s)");
    sps__leaks_free(&l);
    fake_free(&f);
}

/* The tree's PSS, read at every `every`-th step's end from step `from` on
 * by pss(i). */
static void fake_add_pss(struct fake *f, size_t from, size_t every, double (*pss)(size_t)) {
    struct sps__series *s = &f->res->host[SPS_M_WORKLOAD_PSS_BYTES];
    sps__series_free(s); /* an earlier call's */
    sps__series_init(s, 512);
    for (size_t i = from; i < f->run.nsteps; i += every)
        sps__series_add(s, T0 + (int64_t)(i + 1) * STEP_NS, pss(i));
}

/* A loop that forks a worker each step: the RSS sum grows with every copy
 * of the same pages, the PSS stays level. */
static double rss_sum_of_forks(size_t i) {
    return 300 * MIB * (double)(1 + i / 10) + 40e3 * wobble(i);
}

static double pss_level(size_t i) {
    return 310 * MIB + 40e3 * wobble(i);
}

/* The analysis object as report.json has it, as text (caller frees). */
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

/* The tree's slope is its PSS when PSS was read often enough within the
 * analysed steps, else its RSS sum, and the analysis says which and why. */
static void test_tree_uses_pss(void) {
    struct fake f;
    fake_build(&f, 60, 10, rss_sum_of_forks, 512);
    fake_add_pss(&f, 0, 1, pss_level);
    struct sps_leaks l;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_EQ_I(strcmp(l.series[0].series, "workload_pss_bytes"), 0);
    CHECK_EQ_I(l.series[0].scope, SPS_LEAK_SCOPE_TREE);
    CHECK_EQ_I(l.series[0].pid, 4242);
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_NONE);
    CHECK_EQ_I(l.series[0].points, 51);
    CHECK_NEAR(l.series[0].median_bytes, 310 * MIB, 0.01 * MIB);
    CHECK_STR_HAS(l.tree_note, "PSS: pages the tree's processes share count once (51 readings");
    CHECK_EQ_I(l.verdict, SPS_LEAK_NONE);
    sps__leaks_free(&l);
    /* the same run judged on its RSS sum would call the forks a leak */
    sps__series_free(&f.res->host[SPS_M_WORKLOAD_PSS_BYTES]);
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_EQ_I(strcmp(l.series[0].series, "workload_rss_bytes"), 0);
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_FOUND);
    CHECK_STR_HAS(l.tree_note, "RSS summed over processes: no PSS reading");
    sps__leaks_free(&l);
    /* PSS read every 20 steps: 2 readings within the analysed steps, too
     * few for a trend: the RSS sum, and why */
    fake_add_pss(&f, 0, 20, pss_level);
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_EQ_I(strcmp(l.series[0].series, "workload_rss_bytes"), 0);
    CHECK_STR_HAS(l.tree_note, "RSS summed over processes: PSS was read 2 times within the analysed steps "
                               "(the trend needs 10");
    sps__leaks_free(&l);

    /* report.json says which measure, and so do the views */
    fake_add_pss(&f, 0, 1, pss_level);
    struct sps_analysis a;
    CHECK_EQ_I(sps__analyze(&f.run, &(struct sps_run_info){.sampler = f.res}, NULL, &a), 0);
    size_t len = 0;
    char *buf = analysis_json_text(&a);
    FILE *mem;
    json_error_t jerr;
    json_t *root = json_loads(buf, 0, &jerr);
    free(buf);
    CHECK(root != NULL);
    json_t *leaks = json_path(root, "analysis.leaks");
    CHECK_STR_HAS(json_string_value(json_object_get(leaks, "tree_memory")), "PSS: pages the tree's processes");
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(json_array_get(json_object_get(leaks, "series"), 0),
                                                        "series")),
                      "workload_pss_bytes"),
               0);
    char *text = NULL;
    mem = open_memstream(&text, &len);
    sps__analysis_leaks_print(mem, &a.leaks);
    fclose(mem);
    CHECK_STR_HAS(text, "no leak over 50 steps after warm-up (workload PSS ");
    free(text);
    mem = open_memstream(&text, &len);
    sps__analysis_leaks_html(mem, &a.leaks);
    fclose(mem);
    CHECK_STR_HAS(text, "The tree's memory: PSS: pages the tree&#39;s processes share count once");
    free(text);
    json_decref(root);
    sps__analysis_free(&a);
    fake_free(&f);
}

/* The analysis as report.json has it, and its views. */
static void test_json_and_views(void) {
    struct fake f;
    fake_build(&f, 60, 10, rss_warmup_then_leak, 512);
    struct sps_analysis a;
    CHECK_EQ_I(sps__analyze(&f.run, &(struct sps_run_info){.sampler = f.res}, NULL, &a), 0);
    char *buf = analysis_json_text(&a);
    json_error_t err;
    json_t *report = json_loads(buf, 0, &err);
    CHECK_MSG(report != NULL, "%s: %s", err.text, buf);
    free(buf);
    if (!report) {
        sps__analysis_free(&a);
        fake_free(&f);
        return;
    }
    json_t *leaks = json_path(report, "analysis.leaks");
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(leaks, "verdict")), "leak"), 0);
    CHECK_EQ_I(json_num(leaks, "steps_analysed"), 50);
    CHECK_EQ_I(json_num(leaks, "step_stream.pid"), 4242);
    json_t *rss = json_array_get(json_object_get(leaks, "series"), 0);
    CHECK_NEAR(json_num(rss, "slope_bytes_per_step"), MIB, 0.01 * MIB);
    CHECK_EQ_I(json_num(rss, "pid"), 4242);
    CHECK(json_is_null(json_object_get(rss, "gpu")));
    CHECK(json_is_null(json_object_get(rss, "comm")));
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(rss, "scope")), "workload process tree"), 0);
    json_t *gpu = json_array_get(json_object_get(leaks, "series"), 1);
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(gpu, "verdict")), "unknown"), 0);
    CHECK(json_is_null(json_object_get(gpu, "slope_bytes_per_step"))); /* unknown, not 0 */
    CHECK_EQ_I(json_num(gpu, "gpu"), 0);

    char *text = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&text, &tlen);
    sps__analysis_print(mem, &a);
    fclose(mem);
    /* the part's label padded to 12 columns */
    CHECK_STR_HAS(text,
                  "\nleaks       leak: workload RSS grows 1.00 MiB/step (95% CI 1.00 to 1.00) over 50 steps after "
                  "warm-up (+50.0 MiB)\n");
    free(text);
    mem = open_memstream(&text, &tlen);
    sps__analysis_html(mem, &a);
    fclose(mem);
    CHECK_STR_HAS(text, "<h2>Memory leaks</h2>");
    CHECK_STR_HAS(text, "<td class=\"label\">GPU 0 memory used</td><td class=\"label\">unknown</td>");
    /* the reason of a leak in human units, not bytes with an exponent */
    CHECK_STR_HAS(text, "<td class=\"text\">grows 1.00 MiB/step (95% CI 1.00 to 1.00) over 50 steps, every one of 5 "
                        "segments higher than the last</td>");
    CHECK(strstr(text, "e+0") == NULL);
    free(text);
    sps__analysis_free(&a);
    json_decref(report);
    fake_free(&f);
}

/* ------------------------------------------------- per process */

/* The loop gives back 1 MiB a step from a pool filled before warm-up... */
static double rss_shrinking(size_t i) {
    return 400 * MIB - (double)(i < 10 ? 0 : i - 10) * MIB + 20e3 * wobble(i);
}

/* ...that its worker keeps: the tree's sum stays level. */
static double rss_worker_leaking(size_t i) {
    return 50 * MIB + (double)(i < 10 ? 0 : i - 10) * MIB + 20e3 * wobble(i + 3);
}

static double rss_worker_flat(size_t i) {
    return 50 * MIB + 20e3 * wobble(i + 5);
}

static double rss_flat(size_t i) {
    return 450 * MIB + 40e3 * wobble(i);
}

/* The series of pid in l, or NULL. */
static const struct sps_leak_series *series_of(const struct sps_leaks *l, int pid) {
    for (size_t i = 0; i < l->nseries; i++)
        if (l->series[i].scope == SPS_LEAK_SCOPE_PROCESS && l->series[i].pid == pid)
            return &l->series[i];
    return NULL;
}

/* The loop's record: one thread that recorded 600 zone events (its rings
 * hold them all) and 60 steps. */
static void fake_record(struct fake *f) {
    struct sps_process_data *p = &f->run.procs[0];
    p->nthreads = 1;
    p->threads = calloc(1, sizeof *p->threads);
    p->ring_cap[SPS_RING_ZONES] = p->ring_cap[SPS_RING_STEPS] = p->ring_cap[SPS_RING_VALUES] = 1024;
    p->threads[0].offered[SPS_RING_ZONES] = 600;
    p->threads[0].offered[SPS_RING_STEPS] = 60;
}

/* A worker's leak that the tree's sum hides is found in its own series,
 * named by pid and command; the loop that shrinks is no leak; a worker
 * that lived for a few steps only is unknown, and says why, without making
 * the run unknown. */
static void test_process_leak_hidden_in_tree(void) {
    struct fake f;
    fake_build(&f, 60, 10, rss_flat, 512);
    fake_record(&f);
    fake_add_process(&f, 4242, "train", 0, 60, rss_shrinking);
    fake_add_process(&f, 4243, "pt_worker", 0, 60, rss_worker_leaking);
    fake_add_process(&f, 4244, "pt_short", 20, 5, rss_worker_flat);
    f.res->processes_left_out = 3;
    struct sps_leaks l;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_EQ_I(l.verdict, SPS_LEAK_FOUND);
    CHECK_EQ_I(l.nseries, 5); /* tree, GPU, three processes */
    CHECK_EQ_I(l.series[0].verdict, SPS_LEAK_NONE);
    CHECK_EQ_I(l.series[0].scope, SPS_LEAK_SCOPE_TREE);
    CHECK_EQ_I(l.processes_left_out, 3);
    const struct sps_leak_series *loop = series_of(&l, 4242), *worker = series_of(&l, 4243),
                                 *brief = series_of(&l, 4244);
    CHECK(loop && worker && brief);
    if (!loop || !worker || !brief) {
        sps__leaks_free(&l);
        fake_free(&f);
        return;
    }
    CHECK_EQ_I(loop->verdict, SPS_LEAK_NONE);
    CHECK_NEAR(loop->slope, -MIB, 0.01 * MIB);
    CHECK_EQ_I(worker->verdict, SPS_LEAK_FOUND);
    CHECK_EQ_I(strcmp(worker->comm, "pt_worker"), 0);
    CHECK_EQ_I(strcmp(worker->series, "process_rss_bytes"), 0);
    CHECK_NEAR(worker->slope, MIB, 0.01 * MIB);
    CHECK(worker->ci95_low > 0.98 * MIB && worker->ci95_high < 1.02 * MIB);
    CHECK_EQ_I(worker->points, 51);
    CHECK_EQ_I(brief->verdict, SPS_LEAK_UNKNOWN);
    CHECK_EQ_I(brief->points, 5);
    CHECK_STR_HAS(brief->reason, "short-lived: in the tree for 0.04 s of the analysed steps' 0.5 s, read 5 times");
    CHECK_STR_HAS(l.reason, "1 of 5 memory series grow with the step number (2 could not be judged)");

    /* the rings: the tree is allowed all of them, the loop its own record's,
     * the worker (no record of its own) the average record's share */
    double rings = (600.0 + 60.0) * (double)sizeof(struct sps_rec_event);
    CHECK_NEAR(l.series[0].allowance_bytes, rings, 0);
    CHECK_NEAR(loop->allowance_bytes, rings, 0);
    CHECK_NEAR(worker->allowance_bytes, rings / 1.0, 0);
    sps__leaks_free(&l);

    /* two records: the worker's share is the average */
    f.run.nprocs = 2;
    struct sps_process_data *two = calloc(2, sizeof *two);
    two[0] = f.run.procs[0];
    two[1].pid = 4245; /* a record with nothing in its rings */
    struct sps_process_data *one = f.run.procs;
    f.run.procs = two;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_NEAR(series_of(&l, 4243)->allowance_bytes, rings / 2, 0);
    CHECK_NEAR(series_of(&l, 4242)->allowance_bytes, rings, 0);
    sps__leaks_free(&l);
    f.run.procs = one;
    f.run.nprocs = 1;
    free(two);
    fake_free(&f);
}

/* The tree judged without a leak and a short-lived worker unknown: the run
 * is "no leak", the worker listed as not judged. */
static void test_short_lived_worker_keeps_run_known(void) {
    struct fake f;
    fake_build(&f, 60, 10, rss_flat, 512);
    fake_add_process(&f, 4242, "train", 0, 60, rss_flat);
    fake_add_process(&f, 4244, "pt_short", 50, 4, rss_worker_flat);
    struct sps_leaks l;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    CHECK_EQ_I(l.verdict, SPS_LEAK_NONE);
    CHECK_EQ_I(series_of(&l, 4244)->verdict, SPS_LEAK_UNKNOWN);
    CHECK_EQ_I(series_of(&l, 4242)->verdict, SPS_LEAK_NONE);
    CHECK_STR_HAS(l.reason, "2 of 4 memory series judged, none grows");
    sps__leaks_free(&l);
    fake_free(&f);
}

/* A short run read at the machine interval: the tree and its one process
 * read 4 times, the first reading after the first step began and the last
 * before the last step ended.  The process was there all along: it is
 * unknown for too few readings, not "short-lived"; a worker read once says
 * so in words. */
static void test_sparse_readings_are_not_short_lived(void) {
    struct fake f;
    fake_build(&f, 60, 0, rss_flat, 512);
    struct sps__series *tree = &f.res->host[SPS_M_WORKLOAD_RSS_BYTES];
    sps__series_free(tree);
    sps__series_init(tree, 512);
    fake_add_process(&f, 4242, "train", 0, 0, rss_flat);
    for (int k = 0; k < 4; k++) {
        int64_t t = T0 + (int64_t)(10 + 15 * k) * STEP_NS + STEP_NS / 2;
        sps__series_add(tree, t, rss_flat((size_t)k));
        sps__series_add(&f.res->process[0].rss_bytes, t, rss_flat((size_t)k));
    }
    fake_add_process(&f, 4244, "pt_worker", 30, 1, rss_worker_flat);
    struct sps_leaks l;
    CHECK_EQ_I(sps__leaks_analyze(&f.run, f.res, &l), 0);
    const struct sps_leak_series *train = series_of(&l, 4242), *worker = series_of(&l, 4244);
    CHECK(train && worker);
    if (train && worker) {
        CHECK_EQ_I(train->verdict, SPS_LEAK_UNKNOWN);
        CHECK_STR_HAS(train->reason, "only 4 readings during the 60 steps after warm-up");
        CHECK(strstr(train->reason, "short-lived") == NULL);
        CHECK_EQ_I(worker->verdict, SPS_LEAK_UNKNOWN);
        CHECK_STR_HAS(worker->reason, "short-lived: in the tree for 0 s of the analysed steps' 0.6 s, read once");
    }
    CHECK_STR_HAS(l.series[0].reason, "only 4 readings during");
    sps__leaks_free(&l);
    fake_free(&f);

    struct sps_leak_series one;
    double x[1] = {3.0}, y[1] = {1.0};
    memset(&one, 0, sizeof one);
    CHECK_EQ_I(sps__leak_judge(x, y, 1, 50, 0.0, &one), 0);
    CHECK_EQ_I(one.verdict, SPS_LEAK_UNKNOWN);
    CHECK_STR_HAS(one.reason, "only 1 reading during the 50 steps");
}

/* analysis.leaks of f as report.json has it, its terminal lines (the
 * leaks part alone) and the report.html section. */
static json_t *analysed_json(struct fake *f, char **text, char **html) {
    struct sps_analysis a;
    CHECK_EQ_I(sps__analyze(&f->run, &(struct sps_run_info){.sampler = f->res}, NULL, &a), 0);
    size_t len = 0;
    char *buf = analysis_json_text(&a);
    FILE *mem;
    json_t *report = json_loads(buf, 0, NULL);
    CHECK_MSG(report != NULL, "%s", buf);
    free(buf);
    mem = open_memstream(text, &len);
    sps__analysis_leaks_print(mem, &a.leaks);
    fclose(mem);
    mem = open_memstream(html, &len);
    sps__analysis_html(mem, &a);
    fclose(mem);
    sps__analysis_free(&a);
    return report;
}

static void test_process_views(void) {
    struct fake f;
    fake_build(&f, 60, 10, rss_flat, 512);
    fake_add_process(&f, 4242, "train", 0, 60, rss_shrinking);
    fake_add_process(&f, 4243, "pt_worker", 0, 60, rss_worker_leaking);
    fake_add_process(&f, 4244, "pt_short", 20, 5, rss_worker_flat);
    f.res->processes_left_out = 3;
    char *text, *html;
    json_t *report = analysed_json(&f, &text, &html);
    json_t *leaks = json_path(report, "analysis.leaks");
    CHECK_EQ_I(json_num(leaks, "processes_left_out"), 3);
    CHECK_EQ_I(json_num(leaks, "processes_max"), SPS_SAMPLER_MAX_PROCESSES);
    json_t *worker = json_array_get(json_object_get(leaks, "series"), 3);
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(worker, "scope")), "process"), 0);
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(worker, "comm")), "pt_worker"), 0);
    CHECK_EQ_I(json_num(worker, "pid"), 4243);
    CHECK(json_is_null(json_object_get(worker, "gpu")));
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(worker, "verdict")), "leak"), 0);

    /* the leaking worker on a line of its own, the others counted */
    CHECK_STR_HAS(text, "leaks       leak: pid 4243 (pt_worker) RSS grows 1.00 MiB/step (95% CI 1.00 to 1.00) over 50 "
                        "steps after warm-up (+50.0 MiB)\n");
    CHECK_STR_HAS(text, "\n            processes: 1 no leak, 1 not judged (pid 4244 (pt_short)), 3 more not followed "
                        "(the sampler keeps 64)\n");
    CHECK(!strstr(text, "leaks:"));
    CHECK_STR_HAS(html, "<td class=\"label\">pid 4243 (pt_worker) RSS</td><td class=\"label\">leak</td>"
                        "<td class=\"label\">1.00 MiB/step (95% CI 1.00 to 1.00)</td>");
    CHECK_STR_HAS(html, "<td class=\"label\">pid 4242 (train) RSS</td><td class=\"label\">no leak</td>");
    CHECK_STR_HAS(html, "<td class=\"label\">pid 4244 (pt_short) RSS</td><td class=\"label\">unknown</td>");
    /* the reason is a sentence that wraps in its cell (the page's td.text) */
    CHECK_STR_HAS(html, "<th class=\"text\">why</th>");
    CHECK_STR_HAS(html, "<td class=\"num\">5</td><td class=\"text\">short-lived: in the tree for");
    CHECK_STR_HAS(html, "3 more processes of the tree were not followed");
    free(text);
    free(html);
    json_decref(report);
    fake_free(&f);

    /* no leak: the tree's and GPU's slopes on the first line, the
     * processes on the next */
    fake_build(&f, 60, 10, rss_flat, 512);
    fake_add_process(&f, 4242, "train", 0, 60, rss_flat);
    fake_add_process(&f, 4244, "pt_short", 50, 4, rss_worker_flat);
    report = analysed_json(&f, &text, &html);
    CHECK_STR_HAS(text, "leaks       no leak over 50 steps after warm-up (workload RSS ");
    CHECK_STR_HAS(text, "; GPU 0 memory used not judged)\n            processes: 1 no leak, 1 not judged (pid 4244 "
                        "(pt_short))\n");
    free(text);
    free(html);
    json_decref(report);
    fake_free(&f);

    /* many leaking workers: 8 named, the rest counted */
    fake_build(&f, 60, 10, rss_flat, 512);
    for (int k = 0; k < 11; k++)
        fake_add_process(&f, 5000 + k, "pt_worker", 0, 60, rss_worker_leaking);
    report = analysed_json(&f, &text, &html);
    CHECK_EQ_I(count_lines(text), 9);
    CHECK_STR_HAS(text, "            leak: pid 5007 (pt_worker) RSS grows");
    CHECK(!strstr(text, "pid 5008"));
    CHECK_STR_HAS(text, "\n            3 more processes leak (report.html lists every series)\n");
    CHECK_STR_HAS(html, "<td class=\"label\">pid 5010 (pt_worker) RSS</td><td class=\"label\">leak</td>");
    free(text);
    free(html);
    json_decref(report);
    fake_free(&f);
}

/* ---------------------------------------------- the examples, for real */

static json_t *profile(const char *tag, char *const *cmd) {
    char out[600];
    snprintf(out, sizeof out, "%s/out", tmpdir_new(tag));
    char *argv[32] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", out, "--"};
    size_t n = 6;
    for (size_t i = 0; cmd[i] && n < 31; i++)
        argv[n++] = cmd[i];
    argv[n] = NULL;
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    return report_load(out);
}

static void test_leaky_train_is_flagged(void) {
    char *cmd[] = {SPS_BIN_DIR "/leaky_train", NULL};
    json_t *r = profile("leaky", cmd);
    CHECK(r != NULL);
    if (!r)
        return;
    json_t *leaks = json_path(r, "analysis.leaks");
    const char *v = json_string_value(json_object_get(leaks, "verdict"));
    CHECK_MSG(v && strcmp(v, "leak") == 0, "verdict %s", v ? v : "(none)");
    json_t *rss = json_array_get(json_object_get(leaks, "series"), 0);
    double slope = json_num(rss, "slope_bytes_per_step");
    /* 1 MiB kept a step, plus the step's few record events and page-table growth */
    CHECK_MSG(slope > 0.95 * MIB && slope < 1.15 * MIB, "slope %g", slope);
    CHECK(json_num(rss, "ci95_low") > 0.9 * MIB);
    json_decref(r);
}

/* The first line of text that starts with prefix, into line ("" if none). */
static void line_with(const char *text, const char *prefix, char *line, size_t len) {
    line[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            size_t n = strcspn(p, "\n");
            snprintf(line, len, "%.*s", (int)n, p);
            return;
        }
}

/* leaky_train with its leak moved into a forked worker while the loop
 * gives as much back: the tree's sum stays level, and the worker's own
 * series names it.  100 steps of 10 ms with the workload read every 20 ms
 * (new processes are found at the machine interval, 100 ms): about 50
 * readings of each process in about 1 s. */
static void test_worker_leak_is_named(void) {
    char out[600], stdout_path[700];
    snprintf(out, sizeof out, "%s/out", tmpdir_new("worker-leak"));
    snprintf(stdout_path, sizeof stdout_path, "%s.stdout", out);
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "--no-live", "-o", out, "--interval", "20", "--machine-interval",
                    "100", "--", SPS_BIN_DIR "/leaky_train", "--leak-kib", "0", "--worker-leak-kib", "1024", "--steps",
                    "100", "--step-ms", "10", NULL};
    static char err[16384]; /* the run's summary */
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, stdout_path, err, sizeof err)), 0);
    char printed[512];
    int worker_pid = -1;
    if (read_file(stdout_path, printed, sizeof printed) > 0)
        sscanf(printed, "worker pid %d", &worker_pid);
    CHECK_MSG(worker_pid > 0, "leaky_train printed: %s", printed);
    json_t *r = report_load(out);
    CHECK(r != NULL);
    if (!r || worker_pid <= 0) {
        json_decref(r);
        return;
    }
    json_t *leaks = json_path(r, "analysis.leaks");
    const char *v = json_string_value(json_object_get(leaks, "verdict"));
    CHECK_MSG(v && strcmp(v, "leak") == 0, "verdict %s", v ? v : "(none)");
    int loop_pid = (int)json_num(leaks, "step_stream.pid");
    json_t *tree = NULL, *worker = NULL, *loop = NULL, *s;
    size_t i;
    json_array_foreach(json_object_get(leaks, "series"), i, s) {
        const char *scope = json_string_value(json_object_get(s, "scope"));
        int pid = (int)json_integer_value(json_object_get(s, "pid"));
        if (scope && strcmp(scope, "workload process tree") == 0)
            tree = s;
        else if (scope && strcmp(scope, "process") == 0 && pid == worker_pid)
            worker = s;
        else if (scope && strcmp(scope, "process") == 0 && pid == loop_pid)
            loop = s;
    }
    CHECK(tree && worker && loop);
    if (tree && worker && loop) {
        /* the worker maps and writes exactly 1 MiB a step (no allocator
         * between it and the kernel, so no sanitizer's shadow or header
         * inflates it); the loop gives 1 MiB back; the sum hides both */
        CHECK_EQ_I(strcmp(json_string_value(json_object_get(worker, "comm")), "leaky_worker"), 0);
        CHECK_EQ_I(strcmp(json_string_value(json_object_get(worker, "verdict")), "leak"), 0);
        double slope = json_num(worker, "slope_bytes_per_step");
        CHECK_MSG(slope > 0.98 * MIB && slope < 1.05 * MIB, "worker slope %g", slope);
        CHECK(json_num(worker, "ci95_low") > 0.95 * MIB);
        CHECK(json_num(worker, "points") >= SPS_LEAK_MIN_POINTS);
        CHECK_EQ_I(strcmp(json_string_value(json_object_get(loop, "verdict")), "no leak"), 0);
        CHECK_NEAR(json_num(loop, "slope_bytes_per_step"), -MIB, 0.03 * MIB);
        /* the tree's sum hides all but the allocators' own bookkeeping: a
         * few KiB a step, more under AddressSanitizer (enough for the tree
         * to be flagged there, so its verdict is not asserted) */
        CHECK_MSG(fabs(json_num(tree, "slope_bytes_per_step")) < 0.05 * slope, "tree slope %g",
                  json_num(tree, "slope_bytes_per_step"));
        fprintf(stderr, "worker leak: pid %d slope %.0f bytes/step (95%% CI %.0f to %.0f); kept 1048576 a step; "
                        "tree slope %.0f\n",
                worker_pid, slope, json_num(worker, "ci95_low"), json_num(worker, "ci95_high"),
                json_num(tree, "slope_bytes_per_step"));
    }
    /* the per-process series came back in report.json, and the terminal
     * names the worker */
    json_t *series = NULL;
    json_array_foreach(json_path(r, "series.processes"), i, s)
        if (json_integer_value(json_object_get(s, "pid")) == worker_pid)
            series = s;
    CHECK(series != NULL);
    CHECK_EQ_I(strcmp(json_string_value(json_object_get(series, "comm")), "leaky_worker"), 0);
    CHECK(json_array_size(json_object_get(series, "t_s")) >= SPS_LEAK_MIN_POINTS);
    char want[128];
    /* (the slope itself is checked above: on a busy machine it may print
     * as 1019 KiB/step as well as 1.00 MiB/step) */
    snprintf(want, sizeof want, "leak: pid %d (leaky_worker) RSS grows ", worker_pid);
    CHECK_STR_HAS(err, want); /* the run's own analysis lines */

    /* `stepscope report` rebuilds the per-process series from report.json
     * alone: its summary names the same largest process as the run's */
    char run_line[512], report_line[512], path[700];
    static char summary[16384];
    line_with(err, "machine   workload:", run_line, sizeof run_line);
    CHECK_STR_HAS(run_line, "up to 2 processes (the largest pid ");
    snprintf(path, sizeof path, "rm -rf '%s/records'", out);
    CHECK_EQ_I(system(path), 0);
    snprintf(path, sizeof path, "%s/summary.txt", out);
    char *report_argv[] = {SPS_BIN_DIR "/stepscope", "report", out, "--format", "summary", "-o", path, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(report_argv, NULL, 0)), 0);
    read_file(path, summary, sizeof summary);
    line_with(summary, "machine   workload:", report_line, sizeof report_line);
    CHECK_MSG(strcmp(run_line, report_line) == 0, "run: %s\nreport: %s", run_line, report_line);

    /* a report.json from before per-process series still loads, and every
     * file is made from it */
    json_t *series_obj = json_object_get(r, "series");
    json_object_del(series_obj, "processes");
    json_object_del(series_obj, "processes_left_out");
    json_object_del(series_obj, "processes_max");
    snprintf(path, sizeof path, "%s/report.json", out);
    CHECK_EQ_I(json_dump_file(r, path, JSON_INDENT(2)), 0);
    char *all_argv[] = {SPS_BIN_DIR "/stepscope", "report", out, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(all_argv, NULL, 0)), 0);
    snprintf(path, sizeof path, "%s/summary.txt", out);
    CHECK_EQ_I(exit_code_of(run_capture(report_argv, NULL, 0)), 0);
    read_file(path, summary, sizeof summary);
    line_with(summary, "machine   workload:", report_line, sizeof report_line);
    CHECK_STR_HAS(report_line, "up to 2 processes");
    CHECK(!strstr(report_line, "the largest"));
    json_decref(r);
}

static void test_tiny_train_is_not_flagged(void) {
    /* ~2 s of CPU (1500 steps; a tenth of them in a sanitizer build, whose
     * arithmetic is ten times slower): enough readings to be judged */
    char steps[32];
    snprintf(steps, sizeof steps, "%d", SPS_TEST_SCALED(1500));
    char *cmd[] = {SPS_BIN_DIR "/tiny_train", "--steps", steps, "--print-every", "0", NULL};
    json_t *r = profile("tiny", cmd);
    CHECK(r != NULL);
    if (!r)
        return;
    const char *v = json_string_value(json_path(r, "analysis.leaks.verdict"));
    const char *why = json_string_value(json_path(r, "analysis.leaks.reason"));
    CHECK_MSG(v && strcmp(v, "no leak") == 0, "verdict %s (%s)", v ? v : "(none)", why ? why : "");
    json_decref(r);
}

int main(void) {
    RUN_TEST(test_theil_sen_line);
    RUN_TEST(test_theil_sen_interval_ranks);
    RUN_TEST(test_flat_is_no_leak);
    RUN_TEST(test_plateau_is_no_leak);
    RUN_TEST(test_sawtooth_is_no_leak);
    RUN_TEST(test_one_off_allocation_is_no_leak);
    RUN_TEST(test_leak_found_in_50_steps);
    RUN_TEST(test_too_few_readings_is_unknown);
    RUN_TEST(test_run_warmup_plateau);
    RUN_TEST(test_run_leak_after_warmup);
    RUN_TEST(test_no_sampler_or_steps_is_unknown);
    RUN_TEST(test_json_and_views);
    RUN_TEST(test_tree_uses_pss);
    RUN_TEST(test_process_leak_hidden_in_tree);
    RUN_TEST(test_short_lived_worker_keeps_run_known);
    RUN_TEST(test_sparse_readings_are_not_short_lived);
    RUN_TEST(test_process_views);
    RUN_TEST(test_leaky_train_is_flagged);
    RUN_TEST(test_worker_leak_is_named);
    RUN_TEST(test_tiny_train_is_not_flagged);
    return check_report();
}
