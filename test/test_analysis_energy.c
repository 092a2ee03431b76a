/*
 * test_analysis_energy.c - energy and carbon from hand-built sampler
 * results and step tables with known answers (src/analysis/energy.c).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/energy.h"
#include "check.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "model/run.h"
#include "render/analysis_views.h"
#include "sampler/sampler.h"
#include "support.h"

#define S(x) ((int64_t)((x) * 1e9)) /* seconds to ns */

static struct sps__sampler_result *result_new(void) {
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++)
        sps__series_init(&r->host[m], 512);
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            sps__series_init(&r->gpu[g].m[m], 512);
    for (int id = 0; id < SPS_SOURCE_COUNT; id++)
        r->sources[id].tried = 1;
    return r;
}

static void result_free(struct sps__sampler_result *r) {
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++)
        sps__series_free(&r->host[m]);
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            sps__series_free(&r->gpu[g].m[m]);
    free(r);
}

/* Steps of two data-parallel ranks side by side: each has a warm-up step
 * (0.2..0.9 s) then four 0.5 s steps from 1 s to 3 s. */
static struct sps_step_row rows[10];
static struct sps_run two_ranks(void) {
    struct sps_run run;
    memset(&run, 0, sizeof run);
    memset(rows, 0, sizeof rows);
    for (int rank = 0; rank < 2; rank++) {
        struct sps_step_row *r = &rows[rank * 5];
        r[0].process = (size_t)rank;
        r[0].tid = 100 + rank;
        r[0].start_ns = (uint64_t)S(0.2);
        r[0].end_ns = (uint64_t)S(0.9);
        r[0].warmup = 1;
        for (int k = 1; k < 5; k++) {
            r[k].index = (uint64_t)k;
            r[k].process = (size_t)rank;
            r[k].tid = 100 + rank;
            r[k].start_ns = (uint64_t)S(1.0 + 0.5 * (k - 1));
            r[k].end_ns = (uint64_t)S(1.0 + 0.5 * k);
        }
    }
    run.steps = rows;
    run.nsteps = 10;
    run.warmup_steps = 2;
    return run;
}

static json_t *energy_json(const struct sps_energy *e) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct sps_jw w;
    sps__jw_init(&w, f);
    sps__jw_object(&w, NULL);
    sps__energy_json(&w, e);
    sps__jw_end(&w, '}');
    fclose(f);
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    if (!j)
        fprintf(stderr, "bad JSON: %s\n%s\n", err.text, buf);
    free(buf);
    return j;
}

static void test_counter_power_and_missing_domains(void) {
    struct sps__sampler_result *r = result_new();
    r->sources[SPS_SOURCE_RAPL].available = 1;
    snprintf(r->sources[SPS_SOURCE_RAPL].reason, sizeof r->sources[SPS_SOURCE_RAPL].reason,
             "no dram domain: dram metrics unavailable");
    r->sources[SPS_SOURCE_NVML].available = 1;
    /* CPU package: a counter of 10 J/s read every second for 4 s (its
     * power series disagrees on purpose: the counter wins) */
    for (int k = 0; k <= 4; k++) {
        sps__series_add(&r->host[SPS_M_CPU_PACKAGE_ENERGY_JOULES], S(k), 10.0 * k);
        sps__series_add(&r->host[SPS_M_CPU_PACKAGE_POWER_WATTS], S(k), 999.0);
    }
    /* GPU 0: power only, 100 W for 4 s */
    r->ngpus = 1;
    r->gpu[0].index = 0;
    r->gpu[0].source = SPS_SOURCE_NVML;
    snprintf(r->gpu[0].name, sizeof r->gpu[0].name, "NVIDIA A100-SXM4-80GB");
    for (int k = 0; k <= 8; k++)
        sps__series_add(&r->gpu[0].m[SPS_M_GPU_POWER_WATTS], S(0.5 * k), 100.0);

    struct sps_run_info info = {0};
    info.sampler = r;
    struct sps_analysis_config cfg;
    sps__analysis_config_default(&cfg);
    cfg.carbon_g_per_kwh = 500.0;
    cfg.pue = 1.5;
    struct sps_run run = two_ranks();
    struct sps_energy e;
    sps__energy_analyze(&run, &info, &cfg, &e);

    CHECK_EQ_U(e.ndomains, 3);
    CHECK(!strcmp(e.domain[0].domain, "gpu"));
    CHECK_EQ_I(e.domain[0].method, SPS_ENERGY_INTEGRATED_POWER);
    CHECK_NEAR(e.domain[0].joules, 400.0, 1e-9);
    CHECK(!strcmp(e.domain[1].domain, "cpu_package"));
    CHECK_EQ_I(e.domain[1].method, SPS_ENERGY_COUNTER);
    CHECK_NEAR(e.domain[1].joules, 40.0, 1e-9);
    CHECK_NEAR(e.domain[1].span_s, 4.0, 1e-9);
    CHECK_EQ_I(e.domain[2].method, SPS_ENERGY_UNAVAILABLE);
    CHECK(isnan(e.domain[2].joules));
    CHECK_STR_HAS(e.domain[2].reason, "rapl: no dram domain");
    CHECK_EQ_U(e.measured, 2);
    CHECK_NEAR(e.total_joules, 440.0, 1e-9);
    CHECK_NEAR(e.total_kwh, 440.0 / 3.6e6, 1e-15);
    CHECK_NEAR(e.co2e_grams, 440.0 / 3.6e6 * 1.5 * 500.0, 1e-12);
    /* per step: 1 s..3 s holds 20 J of CPU and 200 J of GPU over the four
     * steps each rank ran side by side (warm-up left out) */
    CHECK_EQ_U(e.step_count, 4);
    CHECK_NEAR(e.step_span_s, 2.0, 1e-9);
    CHECK_NEAR(e.step_joules, 55.0, 1e-6);
    CHECK_NEAR(e.step_co2e_grams, 55.0 / 3.6e6 * 750.0, 1e-12);

    json_t *j = energy_json(&e);
    json_t *en = json_object_get(j, "energy");
    CHECK_NEAR(json_number_value(json_object_get(en, "joules")), 440.0, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(en, "carbon_intensity_g_per_kwh")), 500.0, 0);
    CHECK(!strcmp(json_string_value(json_object_get(en, "pue_from")), "--pue"));
    json_t *gpu = json_array_get(json_object_get(en, "domains"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(gpu, "method")), "integrated_power"));
    CHECK_STR_HAS(json_string_value(json_object_get(gpu, "evidence")), "nvml: 9 power readings");
    json_t *dram = json_array_get(json_object_get(en, "domains"), 2);
    CHECK(json_is_null(json_object_get(dram, "joules")));
    CHECK(json_is_null(json_object_get(dram, "method")));
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(en, "per_step"), "joules")), 55.0, 1e-6);

    /* the terminal line */
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    sps__analysis_energy_print(f, &e);
    fclose(f);
    CHECK_STR_HAS(line, "energy      0.000122 kWh (GPU0 nvml integrated power 400 J, CPU package rapl counter 40 J, "
                        "DRAM unavailable) = 0.0917 g CO2e at 500 g/kWh, PUE 1.5; 55 J per step");
    free(line);
    json_decref(j);
    result_free(r);
}

static void test_no_sampler(void) {
    struct sps_run_info info = {0};
    info.sampler_absent_reason = "sampling was turned off (--no-sample)";
    struct sps_run run = two_ranks();
    struct sps_energy e;
    sps__energy_analyze(&run, &info, NULL, &e);
    CHECK_EQ_U(e.measured, 0);
    CHECK(isnan(e.total_joules) && isnan(e.total_kwh) && isnan(e.co2e_grams) && isnan(e.step_joules));
    CHECK_STR_HAS(e.total_reason, "gpu: no machine readings: sampling was turned off (--no-sample)");
    CHECK_STR_HAS(e.total_reason, "cpu_package: no machine readings");
    CHECK_NEAR(e.carbon_g_per_kwh, 480.0, 0);
    CHECK_NEAR(e.pue, 1.0, 0);
    CHECK(e.carbon_is_default && e.pue_is_default);
    json_t *j = energy_json(&e);
    json_t *en = json_object_get(j, "energy");
    CHECK(json_is_null(json_object_get(en, "kwh")));
    CHECK(json_is_null(json_object_get(en, "co2e_grams")));
    CHECK_STR_HAS(json_string_value(json_object_get(en, "unavailable_reason")), "--no-sample");
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(en, "per_step"), "unavailable_reason")),
                  "no energy was measured"));
    json_decref(j);
}

static void test_no_gpu_no_rapl(void) {
    struct sps__sampler_result *r = result_new();
    snprintf(r->sources[SPS_SOURCE_NVML].reason, 192, "libnvidia-ml.so.1 not found");
    snprintf(r->sources[SPS_SOURCE_DRM].reason, 192, "no GPU under /sys/class/drm");
    snprintf(r->sources[SPS_SOURCE_NVIDIA_SMI].reason, 192, "nvidia-smi not found on PATH");
    snprintf(r->sources[SPS_SOURCE_RAPL].reason, 192, "no RAPL domains under /sys/class/powercap");
    struct sps_run_info info = {0};
    info.sampler = r;
    struct sps_energy e;
    sps__energy_analyze(NULL, &info, NULL, &e);
    CHECK_EQ_U(e.measured, 0);
    CHECK_STR_HAS(e.domain[0].reason, "no GPU: nvml: libnvidia-ml.so.1 not found; drm: no GPU under /sys/class/drm; "
                                      "nvidia-smi: nvidia-smi not found on PATH");
    CHECK(!strcmp(e.domain[1].reason, "rapl: no RAPL domains under /sys/class/powercap"));

    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    sps__analysis_energy_print(f, &e);
    fclose(f);
    CHECK(!strcmp(line, "energy      unavailable (no GPU; CPU package, DRAM: rapl: no RAPL domains under "
                        "/sys/class/powercap)\n"));
    free(line);
    result_free(r);
}

/* A series that merged points: readings of 10 J/s every second for 8 s
 * into 4 points of 2.  Each point's mean sits mid-way between its
 * readings, so a linear counter is recovered exactly. */
static void test_merged_series_helpers(void) {
    struct sps__series s;
    sps__series_init(&s, 4);
    for (int k = 0; k < 8; k++)
        sps__series_add(&s, S(k), 10.0 * k);
    CHECK_EQ_U(s.count, 4);
    CHECK_EQ_U(s.points[0].n, 2);
    CHECK_NEAR(sps__energy_series_value_at(&s, S(3.5)), 35.0, 1e-9);
    CHECK_NEAR(sps__energy_series_value_at(&s, S(0.0)), 5.0, 1e-9); /* flat before the first centre */
    CHECK_NEAR(sps__energy_series_integral(&s, S(1), S(3)), 40.0, 1e-9); /* integral of 10 t over [1, 3] */
    CHECK_NEAR(sps__energy_series_integral(&s, S(3), S(1)), 0.0, 0);
    sps__series_free(&s);
    struct sps__series empty;
    sps__series_init(&empty, 4);
    CHECK(isnan(sps__energy_series_value_at(&empty, 0)));
    CHECK(isnan(sps__energy_series_integral(&empty, 0, S(1))));
}

/* stepscope run's flags reach report.json; bad values are usage errors. */
static void test_cli_flags(void) {
    char err[512];
    char *bad_pue[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "--pue", "0.5", "--", "true", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(bad_pue, err, sizeof err)), 2);
    CHECK_STR_HAS(err, "--pue: '0.5' is not a number from 1 to 10");
    char *bad_ci[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "--carbon-intensity", "-3", "--", "true", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(bad_ci, err, sizeof err)), 2);
    char *bad_peak[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "--peak-flops", "12x", "--", "true", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(bad_peak, err, sizeof err)), 2);
    const char *dir = tmpdir_new("energy-flags");
    char *ok[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "--no-sample", "--carbon-intensity", "120", "--pue", "1.25",
                  "--peak-flops", "312e12", "-o", (char *)dir, "--", "true", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(ok, err, sizeof err)), 0);
    json_t *report = report_load(dir);
    CHECK_NEAR(json_num(report, "analysis.energy.carbon_intensity_g_per_kwh"), 120.0, 0);
    CHECK_NEAR(json_num(report, "analysis.energy.pue"), 1.25, 0);
    CHECK_STR_HAS(json_string_value(json_path(report, "analysis.energy.unavailable_reason")), "--no-sample");
    CHECK_NEAR(json_num(report, "analysis.throughput.mfu.peak_flops"), 312e12, 0);
    json_decref(report);
}

int main(void) {
    RUN_TEST(test_counter_power_and_missing_domains);
    RUN_TEST(test_no_sampler);
    RUN_TEST(test_no_gpu_no_rapl);
    RUN_TEST(test_merged_series_helpers);
    RUN_TEST(test_cli_flags);
    return check_report();
}
