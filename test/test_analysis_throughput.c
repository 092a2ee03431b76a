/*
 * test_analysis_throughput.c - counter rates, FLOP/s and MFU from
 * hand-built Run models with known answers (src/analysis/throughput.c).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/throughput.h"
#include "check.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "model/run.h"
#include "render/analysis_views.h"
#include "sampler/sampler.h"
#include "support.h"

#define S(x) ((uint64_t)((x) * 1e9)) /* seconds to ns */

enum { STEP_NAME, SAMPLES, FLOPS, NNAMES };
static struct sps_name_summary names[NNAMES];
static struct sps_step_row rows[8];
static double cells[8][NNAMES];

static void row(int i, size_t process, int tid, double start, double end, int warmup, double samples,
                double flops) {
    rows[i].process = process;
    rows[i].tid = tid;
    rows[i].name = STEP_NAME;
    rows[i].start_ns = S(start);
    rows[i].end_ns = S(end);
    rows[i].warmup = warmup;
    rows[i].by_name = cells[i];
    cells[i][STEP_NAME] = NAN;
    cells[i][SAMPLES] = samples;
    cells[i][FLOPS] = flops;
}

/*
 * Rank 0 (one thread): a 1 s warm-up step, then five 0.5 s steps counting
 * 100, 100, 100, 100, 200 samples and 1e12 FLOPs (but none in the third).
 * Rank 1: two 1 s steps of 50 samples, no FLOPs.
 */
static struct sps_run two_ranks(void) {
    struct sps_run run;
    memset(&run, 0, sizeof run);
    memset(names, 0, sizeof names);
    snprintf(names[STEP_NAME].name, sizeof names[STEP_NAME].name, "step");
    names[STEP_NAME].kind = SPS_KIND_STEP;
    snprintf(names[SAMPLES].name, sizeof names[SAMPLES].name, "samples");
    names[SAMPLES].kind = SPS_KIND_COUNTER;
    names[SAMPLES].agg.total_ns = 1000;
    snprintf(names[FLOPS].name, sizeof names[FLOPS].name, "model_FLOPs");
    names[FLOPS].kind = SPS_KIND_COUNTER;
    names[FLOPS].agg.total_ns = (uint64_t)5e12;
    row(0, 0, 10, 0.0, 1.0, 1, 10, 1e12);
    row(1, 0, 10, 1.0, 1.5, 0, 100, 1e12);
    row(2, 0, 10, 1.5, 2.0, 0, 100, 1e12);
    row(3, 0, 10, 2.0, 2.5, 0, 100, NAN);
    row(4, 0, 10, 2.5, 3.0, 0, 100, 1e12);
    row(5, 0, 10, 3.0, 3.5, 0, 200, 1e12);
    row(6, 1, 20, 1.0, 2.0, 0, 50, NAN);
    row(7, 1, 20, 2.0, 3.0, 0, 50, NAN);
    run.names = names;
    run.nnames = NNAMES;
    run.steps = rows;
    run.nsteps = 8;
    run.warmup_steps = 1;
    return run;
}

static struct sps__sampler_result *gpus(int n, const char *name) {
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    r->ngpus = n;
    for (int g = 0; g < n; g++) {
        r->gpu[g].index = g;
        snprintf(r->gpu[g].name, sizeof r->gpu[g].name, "%s", name);
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            sps__series_init(&r->gpu[g].m[m], 16);
    }
    return r;
}

static void gpus_free(struct sps__sampler_result *r) {
    for (int g = 0; g < r->ngpus; g++)
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            sps__series_free(&r->gpu[g].m[m]);
    free(r);
}

static json_t *throughput_json(const struct sps_throughput *t) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct sps_jw w;
    sps__jw_init(&w, f);
    sps__jw_object(&w, NULL);
    sps__throughput_json(&w, t);
    sps__jw_end(&w, '}');
    fclose(f);
    json_t *j = json_loads(buf, 0, NULL);
    free(buf);
    return j;
}

static char *printed(const struct sps_throughput *t) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    sps__analysis_throughput_print(f, t);
    fclose(f);
    return out;
}

static void test_rates(void) {
    struct sps_run run = two_ranks();
    struct sps_throughput t;
    CHECK_EQ_I(sps__throughput_analyze(&run, NULL, NULL, &t), 0);
    CHECK_EQ_U(t.warmup_steps, 1);
    CHECK_EQ_U(t.ncounters, 2);
    const struct sps_throughput_counter *s = &t.counters[0];
    CHECK(!strcmp(s->name, "samples"));
    CHECK_NEAR(s->total, 1000, 0);
    CHECK_NEAR(s->in_steps, 700, 1e-9);
    CHECK_EQ_U(s->steps, 7);
    CHECK_EQ_U(s->threads, 2);
    CHECK_NEAR(s->step_seconds, 4.5, 1e-9);
    /* rank 0: 600 in 2.5 s = 240/s; rank 1: 100 in 2 s = 50/s; side by side */
    CHECK_NEAR(s->per_second, 290.0, 1e-9);
    /* step rates: 200 200 200 200 400 50 50 */
    CHECK_NEAR(s->step_rate_median, 200.0, 1e-9);
    CHECK_NEAR(s->step_rate_mean, 1300.0 / 7.0, 1e-9);
    CHECK_NEAR(s->step_rate_min, 50.0, 1e-9);
    CHECK_NEAR(s->step_rate_max, 400.0, 1e-9);
    CHECK(!s->is_flops);
    /* FLOPs: rank 1 never counts them, and rank 0's third step counted 0 */
    const struct sps_throughput_counter *fl = &t.counters[1];
    CHECK(fl->is_flops);
    CHECK_EQ_U(fl->threads, 1);
    CHECK_EQ_U(fl->steps, 5);
    CHECK_NEAR(fl->per_second, 4e12 / 2.5, 1);
    CHECK_NEAR(fl->step_rate_median, 2e12, 1);
    CHECK_EQ_I(t.flops, 1);
    CHECK_NEAR(t.flops_per_second, 1.6e12, 1);
    /* no sampler and no flag: no peak */
    CHECK(isnan(t.mfu));
    CHECK(!strcmp(t.mfu_reason, "no GPU was seen and the CPU's peak is not known; pass --peak-flops"));

    json_t *j = throughput_json(&t);
    json_t *c0 = json_array_get(json_path(j, "throughput.counters"), 0);
    CHECK_NEAR(json_number_value(json_object_get(c0, "per_second")), 290.0, 1e-9);
    CHECK(!strcmp(json_string_value(json_path(j, "throughput.flops.counter")), "model_FLOPs"));
    CHECK(json_is_null(json_path(j, "throughput.mfu.value")));
    CHECK_STR_HAS(json_string_value(json_path(j, "throughput.mfu.unavailable_reason")), "pass --peak-flops");
    char *text = printed(&t);
    CHECK_STR_HAS(text, "throughput  290 samples/s (median step 200/s; 7 steps, 1 warm-up left out)\n");
    CHECK_STR_HAS(text, "\n            1.6T model_FLOPs/s (median step 2T/s; 5 steps, 1 warm-up left out)\n");
    CHECK_STR_HAS(text, "efficiency  1.6TFLOP/s; MFU unavailable (no GPU was seen");
    free(text);
    json_decref(j);
    sps__throughput_free(&t);
}

static void test_mfu_from_table_and_flag(void) {
    struct sps_run run = two_ranks();
    /* two A100s, the workload holds memory on GPU 1 only: one GPU used */
    struct sps__sampler_result *r = gpus(2, "NVIDIA A100-SXM4-80GB");
    sps__series_add(&r->gpu[0].m[SPS_M_GPU_WORKLOAD_MEMORY_BYTES], 0, 0);
    sps__series_add(&r->gpu[1].m[SPS_M_GPU_WORKLOAD_MEMORY_BYTES], 0, 4e9);
    struct sps_run_info info = {0};
    info.sampler = r;
    struct sps_throughput t;
    sps__throughput_analyze(&run, &info, NULL, &t);
    CHECK_EQ_I(t.gpus, 1);
    CHECK_NEAR(t.peak_flops_total, 312e12, 0);
    CHECK_NEAR(t.mfu, 1.6e12 / 312e12, 1e-12);
    CHECK_STR_HAS(t.peak_from, "table: A100, dense BF16/FP16 tensor x 1 GPU");
    json_t *j = throughput_json(&t);
    char *text = printed(&t);
    CHECK_STR_HAS(text, "efficiency  1.6TFLOP/s = MFU 0.5% of 312TFLOP/s peak (table: A100");
    free(text);
    json_decref(j);
    sps__throughput_free(&t);

    /* without workload-memory readings every GPU counts; the flag wins */
    struct sps__sampler_result *r2 = gpus(2, "NVIDIA B200");
    info.sampler = r2;
    struct sps_analysis_config cfg;
    sps__analysis_config_default(&cfg);
    sps__throughput_analyze(&run, &info, &cfg, &t);
    CHECK(isnan(t.mfu));
    CHECK(!strcmp(t.mfu_reason, "peak unknown for GPU 'NVIDIA B200'; pass --peak-flops"));
    sps__throughput_free(&t);
    cfg.peak_flops = 4e12;
    sps__throughput_analyze(&run, &info, &cfg, &t);
    CHECK_EQ_I(t.gpus, 2);
    CHECK_NEAR(t.peak_flops_total, 8e12, 0);
    CHECK_NEAR(t.mfu, 0.2, 1e-12);
    CHECK_STR_HAS(t.peak_from, "--peak-flops 4e+12 per GPU x 2 GPUs");
    sps__throughput_free(&t);

    /* CPU only with the flag: the machine's peak */
    sps__throughput_analyze(&run, NULL, &cfg, &t);
    CHECK_EQ_I(t.gpus, 0);
    CHECK_NEAR(t.mfu, 0.4, 1e-12);
    sps__throughput_free(&t);
    gpus_free(r);
    gpus_free(r2);
}

static void test_peak_table(void) {
    const char *what;
    CHECK_NEAR(sps__gpu_peak_flops("NVIDIA H100 80GB HBM3", &what), 989e12, 0);
    CHECK_STR_HAS(what, "H100 SXM");
    CHECK_NEAR(sps__gpu_peak_flops("NVIDIA H100 PCIe", &what), 756e12, 0);
    CHECK(isnan(sps__gpu_peak_flops("NVIDIA H100 NVL", &what)));
    CHECK_NEAR(sps__gpu_peak_flops("NVIDIA H200", &what), 989e12, 0);
    CHECK_NEAR(sps__gpu_peak_flops("NVIDIA A100-PCIE-40GB", &what), 312e12, 0);
    CHECK_NEAR(sps__gpu_peak_flops("NVIDIA A10", &what), 125e12, 0);
    CHECK(isnan(sps__gpu_peak_flops("NVIDIA A10G", &what))); /* not an A10, not an A100 */
    CHECK_NEAR(sps__gpu_peak_flops("NVIDIA L4", &what), 121e12, 0);
    CHECK(isnan(sps__gpu_peak_flops("NVIDIA L40S", &what)));
    CHECK_NEAR(sps__gpu_peak_flops("Tesla V100-SXM2-16GB", &what), 125e12, 0);
    CHECK_NEAR(sps__gpu_peak_flops("Tesla V100-PCIE-32GB", &what), 112e12, 0);
    CHECK_NEAR(sps__gpu_peak_flops("Tesla V100S-PCIE-32GB", &what), 130e12, 0);
    CHECK_NEAR(sps__gpu_peak_flops("Tesla T4", &what), 65e12, 0);
    CHECK_NEAR(sps__gpu_peak_flops("NVIDIA GeForce RTX 4090", &what), 165.2e12, 0);
    CHECK(isnan(sps__gpu_peak_flops("AMD Instinct MI300X", &what)) && what == NULL);
    CHECK(isnan(sps__gpu_peak_flops(NULL, &what)));
}

/* A counter no step owns gets no rate, and the terminal says why rather
 * than leaving its line out; one that only warm-up steps counted is told
 * apart. */
static void test_counter_without_steps(void) {
    struct sps_run run = two_ranks();
    for (int i = 0; i < 8; i++) {
        cells[i][SAMPLES] = NAN; /* counted, but before any step */
        cells[i][FLOPS] = i == 0 ? 1e12 : NAN;
        rows[i].warmup = rows[i].process == 0; /* rank 0, the only one counting FLOPs, all warm-up */
    }
    struct sps_throughput t;
    CHECK_EQ_I(sps__throughput_analyze(&run, NULL, NULL, &t), 0);
    CHECK_EQ_U(t.ncounters, 2);
    CHECK(isnan(t.counters[0].per_second) && isnan(t.counters[1].per_second));
    CHECK(!t.counters[0].in_a_step && t.counters[1].in_a_step);
    json_t *j = throughput_json(&t);
    json_t *c0 = json_array_get(json_path(j, "throughput.counters"), 0);
    json_t *c1 = json_array_get(json_path(j, "throughput.counters"), 1);
    CHECK_STR_HAS(json_string_value(json_object_get(c0, "unavailable_reason")), "no step owns any of its counts");
    CHECK_STR_HAS(json_string_value(json_object_get(c1, "unavailable_reason")), "only warm-up steps");
    char *text = printed(&t);
    CHECK_STR_HAS(text, "throughput  samples: no rate (no step owns any of its counts: they came before the first "
                        "step, or from a thread or process with no step of its own to join");
    CHECK_STR_HAS(text, "\n            model_FLOPs: no rate (only warm-up steps");
    free(text);
    json_decref(j);
    sps__throughput_free(&t);
}

static void test_nothing_to_count(void) {
    struct sps_run run;
    memset(&run, 0, sizeof run);
    struct sps_throughput t;
    CHECK_EQ_I(sps__throughput_analyze(&run, NULL, NULL, &t), 0);
    CHECK_EQ_U(t.ncounters, 0);
    CHECK_STR_HAS(t.reason, "no counter");
    CHECK(isnan(t.flops_per_second));
    json_t *j = throughput_json(&t);
    CHECK_EQ_U(json_array_size(json_path(j, "throughput.counters")), 0);
    /* nothing recorded and no command known: both languages */
    CHECK_STR_HAS(json_string_value(json_path(j, "throughput.unavailable_reason")),
                  "SPS_COUNT in C, stepscope.count in Python");
    CHECK(json_is_null(json_path(j, "throughput.flops.per_second")));
    char *text = printed(&t);
    CHECK(!strcmp(text, ""));
    free(text);
    json_decref(j);
    sps__throughput_free(&t);
    /* a Python command hears of stepscope.count only */
    char *argv[] = {"/usr/bin/python3", "train.py"};
    struct sps_run_info info = {0};
    info.argc = 2;
    info.argv = argv;
    CHECK_EQ_I(sps__throughput_analyze(&run, &info, NULL, &t), 0);
    CHECK_STR_HAS(t.reason, "(count work with stepscope.count)");
    sps__throughput_free(&t);
}

/* Counters stepscope records about itself (auto's loss.on_device, its own
 * "stepscope." probes) are no unit of work: no rate, no FLOP/s, and a run
 * with only those says it counted no work (an H200 run printed "421
 * loss.on_device/s" as its throughput). */
static void test_stepscopes_own_counters_are_no_throughput(void) {
    struct sps_run run = two_ranks();
    snprintf(names[FLOPS].name, sizeof names[FLOPS].name, "loss.on_device");
    struct sps_throughput t;
    CHECK_EQ_I(sps__throughput_analyze(&run, NULL, NULL, &t), 0);
    CHECK_EQ_U(t.ncounters, 1);
    CHECK(!strcmp(t.counters[0].name, "samples"));
    CHECK_NEAR(t.counters[0].per_second, 290.0, 1e-9);
    char *text = printed(&t);
    CHECK_MSG(!strstr(text, "loss.on_device"), "%s", text);
    free(text);
    sps__throughput_free(&t);

    snprintf(names[FLOPS].name, sizeof names[FLOPS].name, "stepscope.flops_probe");
    CHECK_EQ_I(sps__throughput_analyze(&run, NULL, NULL, &t), 0);
    CHECK_EQ_U(t.ncounters, 1);
    CHECK_EQ_I(t.flops, -1); /* named like FLOPs, but stepscope's: not the model's */
    sps__throughput_free(&t);

    snprintf(names[FLOPS].name, sizeof names[FLOPS].name, "cuda.gpu_zones_dropped");
    CHECK_EQ_I(sps__throughput_analyze(&run, NULL, NULL, &t), 0);
    CHECK_EQ_U(t.ncounters, 1);
    sps__throughput_free(&t);

    /* only stepscope's own: no rate at all, and the reason says why */
    snprintf(names[FLOPS].name, sizeof names[FLOPS].name, "loss.on_device");
    names[SAMPLES].kind = SPS_KIND_VALUE;
    CHECK_EQ_I(sps__throughput_analyze(&run, NULL, NULL, &t), 0);
    CHECK_EQ_U(t.ncounters, 0);
    CHECK_STR_HAS(t.reason, "the run counted no work, only stepscope's own loss.on_device");
    text = printed(&t);
    CHECK_MSG(!strstr(text, "loss.on_device/s"), "%s", text);
    free(text);
    sps__throughput_free(&t);
}

int main(void) {
    RUN_TEST(test_rates);
    RUN_TEST(test_mfu_from_table_and_flag);
    RUN_TEST(test_peak_table);
    RUN_TEST(test_counter_without_steps);
    RUN_TEST(test_nothing_to_count);
    RUN_TEST(test_stepscopes_own_counters_are_no_throughput);
    return check_report();
}
