/*
 * test_analysis_bottleneck.c - the bottleneck verdict: the classifier on
 * evidence written by hand (one case per verdict, with its confidence),
 * the data-zone names, and Run models plus sampler results built here
 * end to end (evidence numbers, windows, warm-up, JSON, the summary line
 * and the report.html section).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/bottleneck.h"
#include "check.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "model/run.h"
#include "render/analysis_views.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "support.h"

#define MS 1000000ull
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)
#define T0 1000000000ull /* the run's start on the monotonic clock */

/* ------------------------------------------------------------ classifier */

static struct sps_bn_evidence ev(void) {
    struct sps_bn_evidence e;
    sps__bn_evidence_init(&e);
    return e;
}

static void test_classify_input_bound(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.data_loading_percent = 65;
    e.workload_cpu_mean_percent = 100;
    e.cpu_readings = 20;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_INPUT);
    CHECK_NEAR(v.confidence, 0.5 + 0.45 * 35.0 / 70.0, 1e-12);
    CHECK_STR_HAS(v.reason, "65% of step time");
    CHECK_STR_HAS(v.recommendation, "num_workers");
    /* with a GPU the recommendation adds pinned memory */
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 30;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_INPUT);
    CHECK_STR_HAS(v.recommendation, "pin_memory=True");
    CHECK_STR_HAS(v.reason, "GPU was busy 30%");
}

static void test_classify_input_from_idle_gpu(void) {
    /* no data zone, the GPU idle and the CPU busy: the brief's second
     * sign of an input-bound step, with less confidence */
    struct sps_bn_evidence e = ev();
    e.steps = 50;
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 20;
    e.workload_cpu_mean_percent = 150;
    e.cpu_readings = 10;
    e.machine_readings = 5;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_INPUT);
    CHECK_NEAR(v.confidence, 0.45, 1e-12);
    CHECK_STR_HAS(v.recommendation, "SPS_ZONE(\"data\")");
    /* a data zone that takes little time says the CPU work is elsewhere */
    e.data_loading_percent = 3;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK_NEAR(v.confidence, 0.6 + 0.15 + 0.1, 1e-12);
    CHECK_STR_HAS(v.recommendation, "GPU waits on the CPU");
}

static void test_classify_gpu_bound(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.data_loading_percent = 2;
    e.gpus = 2;
    e.gpu_utilization_mean_percent = 95;
    e.gpu_utilization_p10_percent = 90;
    e.gpu_throttled_percent = 0;
    e.gpu_power_capped_percent = 80;
    e.workload_cpu_mean_percent = 100;
    e.cpu_readings = 50;
    e.machine_readings = 10;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_GPU);
    CHECK_NEAR(v.confidence, 0.55 + 0.4 * 15.0 / 20.0, 1e-12);
    CHECK_STR_HAS(v.reason, "busy 95%");
    CHECK_STR_HAS(v.reason, "power cap");
    CHECK_STR_HAS(v.recommendation, "mixed precision");
}

static void test_classify_cpu_bound(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.data_loading_percent = 1;
    e.workload_cpu_mean_percent = 99;
    e.cpu_count = 8;
    e.workload_cpu_percent_of_machine = 99.0 / 8;
    e.cpu_readings = 40;
    e.why_gpu = "no GPU was found";
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK_NEAR(v.confidence, 0.9, 1e-12); /* 0.6, +0.2 no GPU, +0.1 a full core */
    CHECK_STR_HAS(v.reason, "99% of a core (12% of 8 CPUs) with no GPU");
    CHECK_STR_HAS(v.recommendation, "1.0 of 8 cores");
    /* every core busy: the advice changes */
    e.workload_cpu_mean_percent = 790;
    e.workload_cpu_percent_of_machine = 790.0 / 8;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK_STR_HAS(v.recommendation, "every core is busy");
    /* one reading each: the same verdict, less sure */
    e.cpu_readings = 1;
    sps__bn_classify(&e, &v);
    CHECK_NEAR(v.confidence, 0.9 * 0.8, 1e-12);
    /* a crowded machine: the workload gets 60% of a core */
    e.cpu_readings = 40;
    e.machine_readings = 10;
    e.workload_cpu_mean_percent = 60;
    e.system_cpu_mean_percent = 97;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK_NEAR(v.confidence, 0.5, 1e-12);
    CHECK_STR_HAS(v.recommendation, "taskset");
}

static void test_classify_io_bound(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.data_loading_percent = 25;
    e.system_iowait_mean_percent = 20;
    e.workload_disk_read_mean_bytes_per_second = 200 * MIB;
    e.workload_cpu_mean_percent = 30;
    e.cpu_readings = 40;
    e.machine_readings = 10;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_IO);
    CHECK_NEAR(v.confidence, 0.55 + 0.4 * 0.5, 1e-12);
    CHECK_STR_HAS(v.reason, "200.0 MiB/s");
    CHECK_STR_HAS(v.recommendation, "shards");
    /* iowait without the workload reading anything is someone else's */
    e.workload_disk_read_mean_bytes_per_second = 0;
    e.data_loading_percent = 5;
    sps__bn_classify(&e, &v);
    CHECK(v.kind != SPS_BN_IO);
}

static void test_classify_throttled(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 97;
    e.gpu_throttled_percent = 60;
    e.gpu_throttle_reasons_seen = SPS_BN_THROTTLE_HW_THERMAL | SPS_BN_THROTTLE_SW_POWER_CAP;
    e.gpu_temperature_max_celsius = 92;
    e.gpu_sm_clock_drop_percent = 25;
    e.machine_readings = 20;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_THROTTLED);
    CHECK_NEAR(v.confidence, 0.8, 1e-12);
    CHECK_STR_HAS(v.reason, "0x44");
    CHECK_STR_HAS(v.reason, "92 °C");
    /* no throttle reasons (drm, nvidia-smi): hot and slowed clocks */
    e.gpu_throttled_percent = NAN;
    e.why_throttle = "the GPU source gives no throttle reasons (only NVML does)";
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_THROTTLED);
    CHECK_NEAR(v.confidence, 0.5, 1e-12);
    /* cool: a busy GPU is just GPU-bound */
    e.gpu_temperature_max_celsius = 70;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_GPU);
}

static void test_classify_memory_pressure(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.data_loading_percent = 50; /* a symptom: swapping slows loading too */
    e.system_memory_total_bytes = 64 * GIB;
    e.system_memory_available_min_percent = 2;
    e.system_swap_used_max_bytes = 3 * GIB;
    e.system_swap_growth_bytes = 2 * GIB;
    e.machine_readings = 20;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_MEMORY);
    CHECK_NEAR(v.confidence, 0.9, 1e-12);
    CHECK_STR_HAS(v.reason, "2.0% of 64.0 GiB");
    CHECK_STR_HAS(v.reason, "2048 MiB");
    /* swap that was already in use and did not grow is no pressure */
    e.system_memory_available_min_percent = 40;
    e.system_swap_growth_bytes = 0;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_INPUT);
}

static void test_classify_unknown(void) {
    struct sps_bn_evidence e = ev();
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_UNKNOWN);
    CHECK(isnan(v.confidence));
    CHECK_STR_HAS(v.reason, "no steps and no machine readings");
    CHECK(v.recommendation[0] != '\0');
    /* everything idle: waiting on something not sampled */
    e.steps = 10;
    e.data_loading_percent = 5;
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 10;
    e.workload_cpu_mean_percent = 20;
    e.cpu_readings = 10;
    e.machine_readings = 3;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_UNKNOWN);
    CHECK_STR_HAS(v.reason, "not sampled");
    CHECK_STR_HAS(v.recommendation, "collectives");
    CHECK_STR_HAS(sps__bn_kind_name(SPS_BN_UNKNOWN), "unknown");
    CHECK_STR_HAS(sps__bn_kind_name(SPS_BN_MEMORY), "memory-pressure");
}

static void test_data_zone_names(void) {
    const char *yes[] = {"data", "DataLoader", "data_loading", "fetch_batch", "load", "Input", "next(inputs)",
                         "dataloader.next", "LOAD-IMAGES"};
    const char *no[] = {"forward", "payload", "download_weights", "metadata", "optimizer", "", "datas"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        CHECK_MSG(sps__bn_is_data_zone(yes[i]), "%s is data loading", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        CHECK_MSG(!sps__bn_is_data_zone(no[i]), "%s is not data loading", no[i]);
}

/* ------------------------------------------------------------ Run models */

/* One process, one thread, events written by hand. */
struct builder {
    struct sps_process_data p;
};

static void b_init(struct builder *b) {
    memset(b, 0, sizeof *b);
    b->p.pid = 4242;
    b->p.start_ns = T0;
    b->p.nthreads = 1;
    b->p.threads = calloc(1, sizeof *b->p.threads);
    b->p.threads[0].tid = 4242;
}

static uint32_t b_name(struct builder *b, const char *name, uint32_t kind) {
    for (uint32_t i = 0; i < b->p.nnames; i++)
        if (b->p.names[i].kind == kind && !strcmp(b->p.names[i].name, name))
            return i + 1;
    b->p.names = realloc(b->p.names, (b->p.nnames + 1) * sizeof *b->p.names);
    struct sps_thread_data *t = &b->p.threads[0];
    t->aggs = realloc(t->aggs, (b->p.nnames + 1) * sizeof *t->aggs);
    memset(&b->p.names[b->p.nnames], 0, sizeof *b->p.names);
    memset(&t->aggs[b->p.nnames], 0, sizeof *t->aggs);
    snprintf(b->p.names[b->p.nnames].name, SPS_REC_NAME_LEN, "%s", name);
    b->p.names[b->p.nnames].kind = kind;
    return ++b->p.nnames;
}

static void b_event(struct builder *b, int ring, const char *name, uint32_t kind, uint64_t start, uint64_t end) {
    uint32_t id = b_name(b, name, kind);
    struct sps_thread_data *t = &b->p.threads[0];
    t->events[ring] = realloc(t->events[ring], (t->nevents[ring] + 1) * sizeof *t->events[ring]);
    t->events[ring][t->nevents[ring]] = (struct sps_event){t->nevents[ring], start, end, end - start, id, 0,
                                                           (uint16_t)kind};
    t->nevents[ring]++;
    t->offered[ring]++;
    struct sps_agg *a = &t->aggs[id - 1];
    if (a->count == 0)
        a->min_ns = UINT64_MAX;
    a->kind = kind;
    a->count++;
    a->total_ns += end - start;
    a->self_ns += end - start;
    a->min_ns = a->min_ns < end - start ? a->min_ns : end - start;
    a->max_ns = a->max_ns > end - start ? a->max_ns : end - start;
}

/* n steps from T0: step i lasts step_ms[i] (or step_ms[0] for all when
 * step_ms has one entry), its first data_ms[i] in a "data" zone, the rest
 * in "forward". */
static void build_run(struct sps_run *run, size_t n, const double *step_ms, size_t nstep_ms, const double *data_ms,
                      size_t ndata_ms) {
    struct builder b;
    b_init(&b);
    uint64_t t = T0;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = (uint64_t)(step_ms[i < nstep_ms ? i : nstep_ms - 1] * MS);
        uint64_t dd = data_ms ? (uint64_t)(data_ms[i < ndata_ms ? i : ndata_ms - 1] * MS) : 0;
        b_event(&b, SPS_RING_STEPS, "step", SPS_KIND_STEP, t, t + d);
        if (dd)
            b_event(&b, SPS_RING_ZONES, "data", SPS_KIND_ZONE, t, t + dd);
        b_event(&b, SPS_RING_ZONES, "forward", SPS_KIND_ZONE, t + dd, t + d);
        t += d;
    }
    b.p.closed = 1;
    b.p.end_ns = t;
    memset(run, 0, sizeof *run);
    CHECK(sps__run_add(run, &b.p) == 0);
    CHECK(sps__run_build(run) == 0);
}

/* A sampler result with every reading 100 ms apart from T0 + 50 ms. */
static struct sps__sampler_result *sampler_new(int ngpus) {
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    r->interval_ms = r->machine_interval_ms = 100;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        sps__series_init(&r->host[i], 512);
    r->ngpus = ngpus;
    for (int g = 0; g < ngpus; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            sps__series_init(&r->gpu[g].m[i], 512);
    return r;
}

static int64_t reading_time(int k) {
    return (int64_t)(T0 + 50 * MS + (uint64_t)k * 100 * MS);
}

static void sampler_free(struct sps__sampler_result *r) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        sps__series_free(&r->host[i]);
    for (int g = 0; g < r->ngpus; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            sps__series_free(&r->gpu[g].m[i]);
    free(r);
}

/* The usual quiet machine: 64 GiB, half free, no swap, no iowait. */
static void quiet_machine(struct sps__sampler_result *r, int k, double workload_cpu) {
    int64_t t = reading_time(k);
    sps__series_add(&r->host[SPS_M_WORKLOAD_CPU_PERCENT], t, workload_cpu);
    sps__series_add(&r->host[SPS_M_SYSTEM_CPU_PERCENT], t, 30);
    sps__series_add(&r->host[SPS_M_SYSTEM_IOWAIT_PERCENT], t, 0);
    sps__series_add(&r->host[SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND], t, 0);
    sps__series_add(&r->host[SPS_M_SYSTEM_MEMORY_TOTAL_BYTES], t, 64 * GIB);
    sps__series_add(&r->host[SPS_M_SYSTEM_MEMORY_AVAILABLE_BYTES], t, 32 * GIB);
    sps__series_add(&r->host[SPS_M_SYSTEM_SWAP_USED_BYTES], t, 0);
}

static void gpu_reading(struct sps__sampler_result *r, int g, int k, double util, double reasons, double celsius,
                        double sm_hz) {
    int64_t t = reading_time(k);
    sps__series_add(&r->gpu[g].m[SPS_M_GPU_UTILIZATION_PERCENT], t, util);
    sps__series_add(&r->gpu[g].m[SPS_M_GPU_THROTTLE_REASONS], t, reasons);
    sps__series_add(&r->gpu[g].m[SPS_M_GPU_TEMPERATURE_CELSIUS], t, celsius);
    sps__series_add(&r->gpu[g].m[SPS_M_GPU_SM_CLOCK_HERTZ], t, sm_hz);
}

/* 30 steps of 50 ms (1.5 s), data zones taking 30 ms of each: input-bound
 * with no machine readings at all; 10 windows of 3 steps. */
static void test_run_input_bound_without_sampler(void) {
    struct sps_run run;
    double step = 50, data = 30;
    build_run(&run, 30, &step, 1, &data, 1);
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, NULL, 0, SPS_BN_FACE_C, NULL, &b);
    CHECK(!strcmp(b.main_step, "step"));
    CHECK_EQ_U(b.ndata_zones, 1);
    CHECK(!strcmp(b.data_zones[0], "data"));
    CHECK_EQ_U(b.evidence.steps, 30);
    CHECK_NEAR(b.evidence.step_mean_seconds, 0.05, 1e-12);
    CHECK_NEAR(b.evidence.data_loading_percent, 60, 1e-9);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_INPUT);
    CHECK_NEAR(b.verdict.confidence, 0.5 + 0.45 * 30.0 / 70.0, 1e-9);
    CHECK(isnan(b.evidence.workload_cpu_mean_percent));
    CHECK_STR_HAS(b.evidence.why_cpu, "no sampler ran");
    CHECK_STR_HAS(b.evidence.why_cpu_count, "unknown");
    CHECK_EQ_U(b.nwindows, 10);
    CHECK(b.windows_note == NULL);
    CHECK_EQ_U(b.windows[0].first_step, 0);
    CHECK_EQ_U(b.windows[0].last_step, 2);
    CHECK_EQ_U(b.windows[9].first_step, 27);
    CHECK_EQ_U(b.windows[9].last_step, 29);
    CHECK_NEAR(b.windows[9].start_seconds, 1.35, 1e-9);
    CHECK_NEAR(b.windows[9].end_seconds, 1.5, 1e-9);
    for (size_t i = 0; i < b.nwindows; i++)
        CHECK_EQ_I(b.windows[i].verdict.kind, SPS_BN_INPUT);
    sps__run_free(&run);
}

/* A CPU-only loop (no GPU), one core busy out of 8: cpu-bound, as for the
 * bundled tiny_train. */
static void test_run_cpu_bound(void) {
    struct sps_run run;
    double step = 50, data = 1;
    build_run(&run, 30, &step, 1, &data, 1);
    struct sps__sampler_result *r = sampler_new(0);
    for (int k = 0; k < 15; k++)
        quiet_machine(r, k, k % 2 ? 98 : 100);
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, r, 8, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_CPU);
    /* readings at 50, 150, ..., 1450 ms: all 15 inside the steps' span */
    CHECK_EQ_U(b.evidence.cpu_readings, 15);
    CHECK_NEAR(b.evidence.workload_cpu_mean_percent, (8 * 100 + 7 * 98) / 15.0, 1e-9);
    CHECK_NEAR(b.evidence.workload_cpu_percent_of_machine, (8 * 100 + 7 * 98) / 15.0 / 8, 1e-9);
    CHECK_NEAR(b.evidence.data_loading_percent, 2, 1e-9);
    CHECK_EQ_I(b.evidence.gpus, 0);
    CHECK_STR_HAS(b.evidence.why_gpu, "no GPU was found");
    CHECK_NEAR(b.evidence.system_memory_available_min_percent, 50, 1e-9);
    CHECK_NEAR(b.evidence.system_swap_growth_bytes, 0, 0);
    CHECK_NEAR(b.verdict.confidence, 0.9, 1e-9);
    CHECK_STR_HAS(b.verdict.recommendation, "of 8 cores busy");
    /* each 150 ms window holds one or two readings: cpu-bound, less sure */
    CHECK_EQ_U(b.nwindows, 10);
    for (size_t i = 0; i < b.nwindows; i++) {
        CHECK_EQ_I(b.windows[i].verdict.kind, SPS_BN_CPU);
        CHECK(b.windows[i].evidence.cpu_readings >= 1 && b.windows[i].evidence.cpu_readings <= 2);
        CHECK_NEAR(b.windows[i].verdict.confidence, 0.9 * 0.8, 1e-9);
    }
    sampler_free(r);
    sps__run_free(&run);
}

/* A busy GPU for the first half, a hot, thermally throttled one for the
 * second: gpu-bound windows, then throttled windows; the run is throttled
 * (half its readings). */
static void test_run_gpu_then_throttled(void) {
    struct sps_run run;
    double step = 50, data = 1;
    build_run(&run, 30, &step, 1, &data, 1);
    struct sps__sampler_result *r = sampler_new(1);
    for (int k = 0; k < 15; k++) {
        quiet_machine(r, k, 100);
        if (k < 7)
            gpu_reading(r, 0, k, 96, SPS_BN_THROTTLE_SW_POWER_CAP, 70, 1980e6);
        else
            gpu_reading(r, 0, k, 98, SPS_BN_THROTTLE_HW_THERMAL, 91, 1400e6);
    }
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, r, 16, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.evidence.gpus, 1);
    CHECK_NEAR(b.evidence.gpu_utilization_mean_percent, (7 * 96 + 8 * 98) / 15.0, 1e-9);
    CHECK_NEAR(b.evidence.gpu_utilization_p10_percent, 96, 0);
    CHECK_NEAR(b.evidence.gpu_utilization_p90_percent, 98, 0);
    CHECK_NEAR(b.evidence.gpu_throttled_percent, 100 * 8 / 15.0, 1e-9);
    CHECK_NEAR(b.evidence.gpu_power_capped_percent, 100 * 7 / 15.0, 1e-9);
    CHECK_EQ_U(b.evidence.gpu_throttle_reasons_seen, SPS_BN_THROTTLE_SW_POWER_CAP | SPS_BN_THROTTLE_HW_THERMAL);
    CHECK_NEAR(b.evidence.gpu_temperature_max_celsius, 91, 0);
    double mean_clock = (7 * 1980e6 + 8 * 1400e6) / 15;
    CHECK_NEAR(b.evidence.gpu_sm_clock_drop_percent, 100 * (1 - mean_clock / 1980e6), 1e-9);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_THROTTLED);
    CHECK_NEAR(b.verdict.confidence, 0.5 + 0.5 * (800 / 15.0) / 100, 1e-9);
    /* the windows: [0, 150) ms holds the reading at 50, ..., [600, 750)
     * the one at 650 (k = 6, the last unthrottled) and 750 belongs to the
     * next */
    CHECK_EQ_I(b.windows[0].verdict.kind, SPS_BN_GPU);
    CHECK_EQ_I(b.windows[3].verdict.kind, SPS_BN_GPU);
    CHECK_EQ_I(b.windows[5].verdict.kind, SPS_BN_THROTTLED);
    CHECK_EQ_I(b.windows[9].verdict.kind, SPS_BN_THROTTLED);
    sampler_free(r);
    sps__run_free(&run);
}

/* Data loading that waits on the disk: iowait and the workload's reads. */
static void test_run_io_bound(void) {
    struct sps_run run;
    double step = 50, data = 20;
    build_run(&run, 30, &step, 1, &data, 1);
    struct sps__sampler_result *r = sampler_new(0);
    for (int k = 0; k < 15; k++) {
        int64_t t = reading_time(k);
        sps__series_add(&r->host[SPS_M_WORKLOAD_CPU_PERCENT], t, 40);
        sps__series_add(&r->host[SPS_M_SYSTEM_CPU_PERCENT], t, 20);
        sps__series_add(&r->host[SPS_M_SYSTEM_IOWAIT_PERCENT], t, 30);
        sps__series_add(&r->host[SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND], t, 120 * MIB);
    }
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, r, 4, SPS_BN_FACE_C, NULL, &b);
    CHECK_NEAR(b.evidence.data_loading_percent, 40, 1e-9);
    CHECK_NEAR(b.evidence.system_iowait_mean_percent, 30, 1e-9);
    CHECK_NEAR(b.evidence.workload_disk_read_mean_bytes_per_second, 120 * MIB, 1e-3);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_IO);
    CHECK_NEAR(b.verdict.confidence, 0.55 + 0.4 * 30.0 / 40.0, 1e-9);
    sampler_free(r);
    sps__run_free(&run);
}

/* Memory nearly full and swap growing from 1 to 5 GiB. */
static void test_run_memory_pressure(void) {
    struct sps_run run;
    double step = 50;
    build_run(&run, 30, &step, 1, NULL, 0);
    struct sps__sampler_result *r = sampler_new(0);
    for (int k = 0; k < 15; k++) {
        int64_t t = reading_time(k);
        sps__series_add(&r->host[SPS_M_WORKLOAD_CPU_PERCENT], t, 100);
        sps__series_add(&r->host[SPS_M_SYSTEM_CPU_PERCENT], t, 60);
        sps__series_add(&r->host[SPS_M_SYSTEM_IOWAIT_PERCENT], t, 5);
        sps__series_add(&r->host[SPS_M_SYSTEM_MEMORY_TOTAL_BYTES], t, 16 * GIB);
        sps__series_add(&r->host[SPS_M_SYSTEM_MEMORY_AVAILABLE_BYTES], t, (4 - 0.25 * k) * GIB);
        sps__series_add(&r->host[SPS_M_SYSTEM_SWAP_USED_BYTES], t, (1 + 4.0 * k / 14) * GIB);
    }
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, r, 4, SPS_BN_FACE_C, NULL, &b);
    CHECK(isnan(b.evidence.data_loading_percent));
    CHECK_STR_HAS(b.evidence.why_data, "no zone named like data loading");
    CHECK_EQ_U(b.ndata_zones, 0);
    CHECK_NEAR(b.evidence.system_memory_available_min_percent, 100 * 0.5 / 16, 1e-9);
    CHECK_NEAR(b.evidence.system_swap_used_max_bytes, 5 * GIB, 1);
    CHECK_NEAR(b.evidence.system_swap_growth_bytes, 4 * GIB, 1);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_MEMORY);
    CHECK_NEAR(b.verdict.confidence, 0.9, 1e-9);
    /* the first window (readings at 50 and 150 ms) still had a quarter of
     * the memory free, but swap grew by 4/14 GiB: swapping alone, from two
     * readings; the last window has both signs */
    CHECK_EQ_I(b.windows[0].verdict.kind, SPS_BN_MEMORY);
    CHECK_NEAR(b.windows[0].evidence.system_memory_available_min_percent, 100 * 3.75 / 16, 1e-9);
    CHECK_NEAR(b.windows[0].evidence.system_swap_growth_bytes, 4.0 / 14 * GIB, 1);
    CHECK_NEAR(b.windows[0].verdict.confidence, 0.7 * 0.8, 1e-9);
    CHECK_EQ_I(b.windows[9].verdict.kind, SPS_BN_MEMORY);
    CHECK_NEAR(b.windows[9].verdict.confidence, 0.9 * 0.8, 1e-9); /* two readings */
    sampler_free(r);
    sps__run_free(&run);
}

/* The first step is slow (warm-up) and left out; the data share changes
 * half-way: windows say input-bound, then cpu-bound. */
static void test_run_warmup_and_changing_windows(void) {
    struct sps_run run;
    double steps[31], data[31];
    for (int i = 0; i < 31; i++) {
        steps[i] = i == 0 ? 500 : 50;
        data[i] = i == 0 ? 1 : i <= 15 ? 40 : 2;
    }
    build_run(&run, 31, steps, 31, data, 31);
    CHECK_EQ_U(run.warmup_steps, 1);
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, NULL, 0, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_U(b.evidence.steps, 30);
    CHECK_NEAR(b.evidence.step_mean_seconds, 0.05, 1e-12);
    CHECK_NEAR(b.evidence.data_loading_percent, 100.0 * (15 * 40 + 15 * 2) / (30 * 50), 1e-9);
    CHECK_EQ_U(b.nwindows, 10);
    CHECK_EQ_U(b.windows[0].first_step, 1);
    CHECK_NEAR(b.windows[0].start_seconds, 0.5, 1e-9);
    CHECK_EQ_I(b.windows[0].verdict.kind, SPS_BN_INPUT);
    CHECK_NEAR(b.windows[0].evidence.data_loading_percent, 80, 1e-9);
    CHECK_EQ_I(b.windows[9].verdict.kind, SPS_BN_UNKNOWN); /* 4%, and no readings */
    CHECK_STR_HAS(b.windows[9].verdict.reason, "without machine readings");
    sps__run_free(&run);
}

/* No steps: the run is judged on the whole sampling; no windows.  No steps
 * and no sampler: unknown. */
static void test_run_without_steps(void) {
    struct sps_run run = {0};
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, NULL, 0, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_UNKNOWN);
    CHECK_STR_HAS(b.verdict.reason, "no steps and no machine readings");
    CHECK_EQ_U(b.nwindows, 0);
    CHECK_STR_HAS(b.windows_note, "no steps");
    CHECK(b.main_step[0] == '\0');

    struct sps__sampler_result *r = sampler_new(0);
    for (int k = 0; k < 5; k++)
        quiet_machine(r, k, 390);
    sps__bottleneck_analyze_parts(NULL, r, 4, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_CPU);
    CHECK_EQ_U(b.evidence.cpu_readings, 5);
    CHECK_STR_HAS(b.verdict.recommendation, "every core is busy");
    CHECK_STR_HAS(b.evidence.why_steps, "no steps");
    sampler_free(r);
}

/* ------------------------------------------------- JSON and the views */

static char *json_of(const struct sps_analysis *a) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct sps_jw w;
    sps__jw_init(&w, f);
    sps__jw_object(&w, NULL);
    sps__analysis_json(&w, a);
    sps__jw_end(&w, '}');
    fclose(f);
    return buf;
}

static void test_json_and_views(void) {
    struct sps_run run;
    double step = 50, data = 1;
    build_run(&run, 30, &step, 1, &data, 1);
    struct sps__sampler_result *r = sampler_new(0);
    for (int k = 0; k < 15; k++)
        quiet_machine(r, k, 100);
    struct sps_run_info info = {0};
    info.sampler = r;
    info.cpu_count = 2;
    struct sps_analysis a;
    CHECK(sps__analyze(&run, &info, NULL, &a) == 0);
    char *text = json_of(&a);
    json_error_t jerr;
    json_t *report = json_loads(text, 0, &jerr);
    CHECK_MSG(report != NULL, "report parses: %s", jerr.text);
    free(text);
    json_t *b = json_path(report, "analysis.bottleneck");
    CHECK(json_is_object(b));
    CHECK(!strcmp(json_string_value(json_object_get(b, "verdict")), "cpu-bound"));
    CHECK_NEAR(json_num(b, "confidence"), 0.9, 1e-9);
    CHECK(!strcmp(json_string_value(json_object_get(b, "main_step")), "step"));
    CHECK(!strcmp(json_string_value(json_array_get(json_object_get(b, "data_loading_zones"), 0)), "data"));
    CHECK_NEAR(json_num(b, "evidence.workload_cpu_mean_percent"), 100, 1e-9);
    CHECK_NEAR(json_num(b, "evidence.cpu_count"), 2, 0);
    CHECK_NEAR(json_num(b, "evidence.workload_cpu_percent_of_machine"), 50, 1e-9);
    CHECK(json_is_null(json_path(b, "evidence.gpu_utilization_mean_percent")));
    CHECK_STR_HAS(json_string_value(json_path(b, "evidence.unavailable.gpu_utilization_mean_percent")),
                  "no GPU was found");
    /* a known figure has no reason */
    CHECK(json_path(b, "evidence.unavailable.workload_cpu_mean_percent") == NULL);
    json_t *windows = json_object_get(b, "windows");
    CHECK_EQ_U(json_array_size(windows), 10);
    json_t *w0 = json_array_get(windows, 0);
    CHECK(!strcmp(json_string_value(json_object_get(w0, "verdict")), "cpu-bound"));
    CHECK_NEAR(json_num(w0, "evidence.steps"), 3, 0);
    CHECK(json_object_get(b, "windows_note") == NULL);

    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    /* this part's lines alone: the other parts print theirs too */
    sps__analysis_bottleneck_print(f, &a.bottleneck);
    fclose(f);
    CHECK_STR_HAS(out, "bottleneck  cpu-bound (confidence 0.90): the workload's CPU ran at 100% of a core");
    CHECK_STR_HAS(out, "\n            try: it keeps 1.0 of 2 cores busy");
    CHECK_EQ_I(count_lines(out), 2);
    free(out);

    f = open_memstream(&out, &len);
    sps__analysis_html(f, &a);
    fclose(f);
    CHECK_STR_HAS(out, "<section id=\"bottleneck\">");
    CHECK_STR_HAS(out, "<strong>cpu-bound</strong> (confidence 0.90)");
    CHECK_STR_HAS(out, "<td>workload_cpu_mean_percent</td><td>100.0%</td>");
    CHECK_STR_HAS(out, "<td>gpu_utilization_mean_percent</td><td>– <small>(no GPU was found)</small>");
    CHECK_STR_HAS(out, "<td>system_memory_total_bytes</td><td>64.0 GiB</td>");
    CHECK_STR_HAS(out, "<td class=\"num\">0–2</td>"); /* a step range never breaks */
    CHECK(strstr(out, "<script") == NULL);
    free(out);

    /* windows that disagree are tallied on the summary line */
    a.bottleneck.windows[9].verdict.kind = SPS_BN_INPUT;
    f = open_memstream(&out, &len);
    sps__analysis_print(f, &a);
    fclose(f);
    CHECK_STR_HAS(out, "[windows: 9 cpu-bound, 1 input-bound]");
    free(out);
    sps__analysis_free(&a);

    json_decref(report);
    sampler_free(r);
    sps__run_free(&run);
}

/* ------------------------------------------------------------ contention */

/* The workload, 40% of a core on a 2-CPU machine kept 100% busy by
 * others, waited on a runqueue 0.55 s of every second: cpu-contended. */
static struct sps_bn_evidence contended(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.data_loading_percent = 2;
    e.workload_cpu_mean_percent = 40;
    e.cpu_count = 2;
    e.workload_cpu_percent_of_machine = 20;
    e.system_cpu_mean_percent = 100;
    e.workload_run_delay_mean_percent = 55;
    e.workload_cpu_wait_percent = 100 * 55.0 / 95.0;
    e.cpu_pressure_some_mean_percent = 97;
    e.cpu_readings = 20;
    e.machine_readings = 4;
    e.run_delay_readings = 4;
    e.face = SPS_BN_FACE_C;
    return e;
}

static void test_classify_contended(void) {
    struct sps_bn_evidence e = contended();
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CONTENDED);
    CHECK(!strcmp(sps__bn_kind_name(v.kind), "cpu-contended"));
    CHECK_NEAR(v.confidence, 0.55 + 0.4 * ((100 * 55.0 / 95.0) - 25) / 35, 1e-12);
    CHECK_STR_HAS(v.reason, "the workload was runnable but waiting for a CPU 58% of the time it was ready to run "
                            "(0.55 s of run delay per second against 0.40 s on a CPU)");
    CHECK_STR_HAS(v.reason, "; CPU pressure 97% (some task waited for a CPU 97% of the time)");
    CHECK_STR_HAS(v.reason, "; it ran 40% of a core while the machine's CPUs were 100% busy");
    CHECK_STR_HAS(v.reason, "; data loading took 2% of step time");
    CHECK_STR_HAS(v.recommendation, "taskset");
    /* one run delay reading: the same verdict, less sure */
    e.run_delay_readings = 1;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CONTENDED);
    CHECK_NEAR(v.confidence, 0.8 * (0.55 + 0.4 * ((100 * 55.0 / 95.0) - 25) / 35), 1e-12);
    /* without PSI: said so, not made up */
    e = contended();
    e.cpu_pressure_some_mean_percent = NAN;
    e.why_pressure = "no CPU pressure readings (a kernel without PSI)";
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CONTENDED);
    CHECK_STR_HAS(v.reason, "CPU pressure unknown (no CPU pressure readings (a kernel without PSI))");

    /* below the threshold (a quarter of the runnable time): not contended */
    e = contended();
    e.workload_cpu_mean_percent = 90;
    e.workload_run_delay_mean_percent = 20;
    e.workload_cpu_wait_percent = 100 * 20.0 / 110.0;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK(strstr(v.reason, "waited for a CPU") == NULL);
    /* a mostly idle workload that waits half of its little runnable time
     * loses 4% of a second: not the step's limit */
    e = contended();
    e.workload_cpu_mean_percent = 4;
    e.workload_run_delay_mean_percent = 4;
    e.workload_cpu_wait_percent = 50;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_UNKNOWN);
    CHECK_STR_HAS(v.reason, "and waited for a CPU 50% of the time it was ready to run");
    /* its own threads fill the machine and queue for the cores: cpu-bound,
     * and the reason says why they waited */
    e = contended();
    e.workload_cpu_mean_percent = 196;
    e.workload_cpu_percent_of_machine = 98;
    e.workload_run_delay_mean_percent = 300;
    e.workload_cpu_wait_percent = 100 * 300.0 / 496.0;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK_STR_HAS(v.reason, "its threads waited for a CPU 60% of the time they were ready to run (more runnable "
                            "threads than cores)");
    /* a GPU kept busy is the limit, whatever the CPU side waited */
    e = contended();
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 92;
    e.gpu_utilization_p10_percent = 85;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_GPU);
    /* contention comes before the input verdict: the loader was starved */
    e = contended();
    e.data_loading_percent = 45;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CONTENDED);
    CHECK_STR_HAS(v.reason, "data loading took 45% of step time");
}

/* No run delay (a kernel without schedstat): high CPU pressure on a
 * saturated machine still names contention, with less confidence and the
 * reason the workload's own figure is missing. */
static void test_classify_contended_from_pressure(void) {
    struct sps_bn_evidence e = contended();
    e.workload_run_delay_mean_percent = e.workload_cpu_wait_percent = NAN;
    e.run_delay_readings = 0;
    e.why_run_delay = "the sched source is unavailable (see stepscope doctor)";
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CONTENDED);
    CHECK_NEAR(v.confidence, 0.4, 1e-12);
    CHECK_STR_HAS(v.reason, "the workload's own run delay is unknown (the sched source is unavailable (see stepscope "
                            "doctor)), but the machine was saturated; CPU pressure 97%");
    /* pressure without a saturated machine is not enough */
    e.system_cpu_mean_percent = 60;
    sps__bn_classify(&e, &v);
    CHECK(v.kind != SPS_BN_CONTENDED);
    /* nor is pressure while the workload has its core */
    e = contended();
    e.workload_run_delay_mean_percent = e.workload_cpu_wait_percent = NAN;
    e.workload_cpu_mean_percent = 99;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
}

/* Every rule's sentence, in every face: no "neither no", no NAN printed,
 * no invented 0% for a data share nobody measured; and the advice in the
 * run's language. */
static void check_text(const struct sps_bn_verdict *v, const struct sps_bn_evidence *e, const char *what) {
    CHECK_MSG(v->reason[0] != '\0', "%s: a reason", what);
    CHECK_MSG(v->recommendation[0] != '\0', "%s: a recommendation", what);
    const char *bad[] = {"neither no", "nan", "inf%", "  ", " ;", ";;", " ()"}; /* " ()": an empty aside */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_MSG(strstr(v->reason, bad[i]) == NULL, "%s: reason has \"%s\": %s", what, bad[i], v->reason);
        CHECK_MSG(strstr(v->recommendation, bad[i]) == NULL, "%s: advice has \"%s\": %s", what, bad[i],
                  v->recommendation);
    }
    if (isnan(e->data_loading_percent)) {
        CHECK_MSG(strstr(v->reason, "data loading took") == NULL && strstr(v->reason, "data loading takes") == NULL &&
                      strstr(v->reason, "in data loading") == NULL,
                  "%s: no data share without a data zone: %s", what, v->reason);
    }
    if (e->face == SPS_BN_FACE_PYTHON) {
        CHECK_MSG(strstr(v->recommendation, "SPS_") == NULL, "%s: Python advice without the C API: %s", what,
                  v->recommendation);
        CHECK_MSG(strstr(v->recommendation, "OpenMP") == NULL, "%s: %s", what, v->recommendation);
    }
    if (e->face == SPS_BN_FACE_C) {
        const char *py[] = {"stepscope.", "torch", "DataLoader", "Python", "num_workers"};
        for (size_t i = 0; i < sizeof py / sizeof *py; i++)
            CHECK_MSG(strstr(v->recommendation, py[i]) == NULL, "%s: C advice has \"%s\": %s", what, py[i],
                      v->recommendation);
    }
    if (!e->why_sampler || !strstr(e->why_sampler, "--no-sample"))
        CHECK_MSG(strstr(v->recommendation, "--no-sample") == NULL, "%s: no flag the run did not use: %s", what,
                  v->recommendation);
}

static void test_every_verdict_text(void) {
    struct {
        const char *name;
        enum sps_bn_kind kind;
        struct sps_bn_evidence e;
    } cases[20];
    size_t n = 0;
    struct sps_bn_evidence e;

    e = ev(); /* nothing at all */
    cases[n++] = (__typeof__(cases[0])){"nothing", SPS_BN_UNKNOWN, e};
    e = ev(); /* memory, total and available unknown */
    e.steps = 10;
    e.machine_readings = 5;
    e.system_swap_growth_bytes = 2048 * MIB;
    cases[n++] = (__typeof__(cases[0])){"memory", SPS_BN_MEMORY, e};
    e = ev(); /* throttled without temperature or clock */
    e.steps = 10;
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 90;
    e.gpu_throttled_percent = 60;
    e.gpu_throttle_reasons_seen = SPS_BN_THROTTLE_HW_THERMAL;
    cases[n++] = (__typeof__(cases[0])){"throttled", SPS_BN_THROTTLED, e};
    e = ev(); /* io without a data zone and without disk figures */
    e.steps = 10;
    e.machine_readings = 5;
    e.system_iowait_mean_percent = 30;
    e.data_loading_percent = 40;
    cases[n++] = (__typeof__(cases[0])){"io", SPS_BN_IO, e};
    e = contended();
    e.data_loading_percent = NAN;
    cases[n++] = (__typeof__(cases[0])){"contended", SPS_BN_CONTENDED, e};
    e = ev();
    e.steps = 10;
    e.data_loading_percent = 60;
    cases[n++] = (__typeof__(cases[0])){"input", SPS_BN_INPUT, e};
    e = ev();
    e.steps = 10;
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 95;
    e.gpu_utilization_p10_percent = 90;
    cases[n++] = (__typeof__(cases[0])){"gpu", SPS_BN_GPU, e};
    e = ev();
    e.steps = 10;
    e.gpus = 1;
    e.gpu_utilization_mean_percent = 20;
    e.workload_cpu_mean_percent = 100;
    e.cpu_readings = 10;
    cases[n++] = (__typeof__(cases[0])){"idle gpu", SPS_BN_INPUT, e};
    e = ev();
    e.steps = 10;
    e.workload_cpu_mean_percent = 100;
    e.cpu_readings = 10;
    cases[n++] = (__typeof__(cases[0])){"cpu", SPS_BN_CPU, e};
    e = ev();
    e.steps = 10;
    e.workload_cpu_mean_percent = 100;
    e.cpu_count = 8;
    e.workload_cpu_percent_of_machine = 12.5;
    e.cpu_readings = 10;
    cases[n++] = (__typeof__(cases[0])){"cpu threads", SPS_BN_CPU, e};
    e = ev();
    e.steps = 10;
    e.workload_cpu_mean_percent = 60;
    e.cpu_readings = 10;
    cases[n++] = (__typeof__(cases[0])){"cpu part", SPS_BN_CPU, e};
    e = ev();
    e.steps = 10;
    e.data_loading_percent = 20;
    e.workload_cpu_mean_percent = 30;
    e.cpu_readings = 10;
    cases[n++] = (__typeof__(cases[0])){"weak input", SPS_BN_INPUT, e};
    e = ev();
    e.steps = 10;
    e.data_loading_percent = 20;
    cases[n++] = (__typeof__(cases[0])){"weak input, nothing read", SPS_BN_INPUT, e};
    e = ev();
    e.steps = 10;
    e.why_sampler = "sampling was turned off (--no-sample)";
    cases[n++] = (__typeof__(cases[0])){"unread, --no-sample", SPS_BN_UNKNOWN, e};
    e = ev();
    e.steps = 10;
    e.why_sampler = "no sampler ran in this process (sps_sampler_start() or sps_capture() starts one)";
    cases[n++] = (__typeof__(cases[0])){"unread, standalone", SPS_BN_UNKNOWN, e};
    e = ev(); /* the report of the issue: no GPU, 34% of a core, no data zone, no contention figures */
    e.steps = 10;
    e.workload_cpu_mean_percent = 34;
    e.cpu_readings = 10;
    e.machine_readings = 3;
    cases[n++] = (__typeof__(cases[0])){"unknown", SPS_BN_UNKNOWN, e};
    const enum sps_bn_face faces[] = {SPS_BN_FACE_C, SPS_BN_FACE_PYTHON, SPS_BN_FACE_UNKNOWN};
    for (size_t i = 0; i < n; i++)
        for (size_t f = 0; f < 3; f++) {
            struct sps_bn_evidence ef = cases[i].e;
            ef.face = faces[f];
            struct sps_bn_verdict v;
            sps__bn_classify(&ef, &v);
            char what[96];
            snprintf(what, sizeof what, "%s (%s)", cases[i].name, sps__bn_face_name(faces[f]));
            CHECK_MSG(v.kind == cases[i].kind, "%s: %s, not %s: %s", what, sps__bn_kind_name(v.kind),
                      sps__bn_kind_name(cases[i].kind), v.reason);
            check_text(&v, &ef, what);
        }
}

/* The case, word for word what it says now, in each language. */
static void test_unknown_text_and_advice(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 10;
    e.workload_cpu_mean_percent = 34;
    e.cpu_readings = 10;
    e.machine_readings = 3;
    e.face = SPS_BN_FACE_PYTHON;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK(!strcmp(v.reason, "nothing sampled is saturated: no GPU, the workload's CPU ran at 34% of a core; no zone "
                            "is named like data loading: the step waits on something not sampled"));
    CHECK_STR_HAS(v.recommendation, "`with stepscope.zone(...):`");
    e.face = SPS_BN_FACE_C;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "SPS_ZONE(...)");
    e.face = SPS_BN_FACE_UNKNOWN;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "SPS_ZONE in C, stepscope.zone in Python");
    /* no steps, no readings: how to mark a step, in the run's language */
    e = ev();
    e.face = SPS_BN_FACE_PYTHON;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "`with stepscope.step():`");
    CHECK_STR_HAS(v.recommendation, "stepscope.torch.instrument");
    e.face = SPS_BN_FACE_C;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "SPS_STEP()");
    /* an input-bound Python run hears about the DataLoader, a C run does not */
    e = ev();
    e.steps = 10;
    e.data_loading_percent = 60;
    e.face = SPS_BN_FACE_PYTHON;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "num_workers");
    e.face = SPS_BN_FACE_C;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "another thread");
    /* no machine readings: the flag is named only when the run used it */
    e = ev();
    e.steps = 10;
    e.face = SPS_BN_FACE_PYTHON;
    e.why_sampler = "sampling was turned off (--no-sample)";
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.reason, "(machine readings: sampling was turned off (--no-sample))");
    CHECK_STR_HAS(v.recommendation, "run again without --no-sample");
    CHECK_STR_HAS(v.recommendation, "`with stepscope.zone(\"data\"):`");
    e.why_sampler = "no sampler ran in this process (sps_sampler_start() or sps_capture() starts one)";
    sps__bn_classify(&e, &v);
    CHECK(strstr(v.recommendation, "--no-sample") == NULL);
    CHECK_STR_HAS(v.recommendation, "stepscope.capture()");
    e.face = SPS_BN_FACE_C;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "sps_sampler_start()");
    CHECK_STR_HAS(v.recommendation, "SPS_ZONE(\"data\")");
}

/* The language comes from the recording processes' command lines, else
 * from the command that was run. */
static void test_face_of(void) {
    char *py[] = {"/usr/bin/python3.11", "train.py"};
    char *c[] = {"./build/tiny_train"};
    char *sh[] = {"bash", "run.sh"};
    char *pypy[] = {"pypy3"};
    struct sps_run run;
    memset(&run, 0, sizeof run);
    CHECK_EQ_I(sps__bn_face_of(&run, 2, py), SPS_BN_FACE_PYTHON);
    CHECK_EQ_I(sps__bn_face_of(NULL, 1, pypy), SPS_BN_FACE_PYTHON);
    CHECK_EQ_I(sps__bn_face_of(&run, 2, sh), SPS_BN_FACE_UNKNOWN);
    CHECK_EQ_I(sps__bn_face_of(&run, 0, NULL), SPS_BN_FACE_UNKNOWN);
    struct sps_process_data procs[2];
    memset(procs, 0, sizeof procs);
    procs[0].argc = 1;
    procs[0].argv = c;
    procs[1].argc = 2;
    procs[1].argv = py;
    run.procs = procs;
    run.nprocs = 1;
    CHECK_EQ_I(sps__bn_face_of(&run, 2, sh), SPS_BN_FACE_C);
    /* a script run by bash that starts Python: the recording process says */
    run.nprocs = 2;
    CHECK_EQ_I(sps__bn_face_of(&run, 2, sh), SPS_BN_FACE_PYTHON);
    CHECK(!strcmp(sps__bn_face_name(SPS_BN_FACE_PYTHON), "python"));
    CHECK(!strcmp(sps__bn_face_name(SPS_BN_FACE_C), "c"));
}

/* End to end: the sampler's run delay and CPU pressure over the steps'
 * span become the evidence (exact means), the verdict and the JSON. */
static void test_run_contended(void) {
    struct sps_run run;
    double step = 50, data = 1;
    build_run(&run, 30, &step, 1, &data, 1);
    struct sps__sampler_result *r = sampler_new(0);
    r->sources[SPS_SOURCE_SCHED].available = 1;
    for (int k = 0; k < 15; k++) {
        quiet_machine(r, k, 40);
        int64_t t = reading_time(k);
        sps__series_add(&r->host[SPS_M_SYSTEM_CPU_PERCENT], t, 100); /* (its 30 too: mean 65) */
        sps__series_add(&r->host[SPS_M_WORKLOAD_RUN_DELAY_PERCENT], t, k % 2 ? 50 : 70);
        sps__series_add(&r->host[SPS_M_CPU_PRESSURE_SOME_PERCENT], t, 90);
    }
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, r, 2, SPS_BN_FACE_PYTHON, NULL, &b);
    double delay = (8 * 70.0 + 7 * 50.0) / 15;
    CHECK_EQ_U(b.evidence.run_delay_readings, 15);
    CHECK_NEAR(b.evidence.workload_run_delay_mean_percent, delay, 1e-9);
    CHECK_NEAR(b.evidence.workload_cpu_wait_percent, 100 * delay / (delay + 40), 1e-9);
    CHECK_NEAR(b.evidence.cpu_pressure_some_mean_percent, 90, 1e-9);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_CONTENDED);
    CHECK_EQ_I(b.face, SPS_BN_FACE_PYTHON);
    for (size_t i = 0; i < b.nwindows; i++)
        CHECK_EQ_I(b.windows[i].verdict.kind, SPS_BN_CONTENDED);

    struct sps_jw w;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sps__jw_init(&w, f);
    sps__jw_object(&w, NULL);
    sps__bottleneck_json(&w, &b);
    sps__jw_end(&w, '}');
    fclose(f);
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    CHECK_MSG(j != NULL, "parses: %s", jerr.text);
    free(text);
    CHECK(!strcmp(json_string_value(json_path(j, "bottleneck.verdict")), "cpu-contended"));
    CHECK(!strcmp(json_string_value(json_path(j, "bottleneck.advice_for")), "python"));
    CHECK_NEAR(json_num(j, "bottleneck.evidence.workload_cpu_wait_percent"), 100 * delay / (delay + 40), 1e-9);
    CHECK_NEAR(json_num(j, "bottleneck.evidence.run_delay_readings"), 15, 0);
    json_decref(j);

    /* the summary's machine lines say how long it waited */
    struct sps_run_info info = {0};
    info.sampler = r;
    char *lines = NULL;
    size_t nlines = 0;
    FILE *mf = open_memstream(&lines, &nlines);
    sps__summary_metrics(mf, &info);
    fclose(mf);
    char want[160];
    snprintf(want, sizeof want,
             "\n          waiting for a CPU: the workload %.0f%% of a core mean / 70%% max (run delay), CPU pressure "
             "90%% mean (some task waiting)\n",
             delay);
    CHECK_STR_HAS(lines, want);
    free(lines);

    /* the same run without the sched source: the figures are null with
     * the reason, and the machine being busy alone is cpu-bound's old
     * crowded case at most, never contention by pressure (none was read) */
    struct sps__sampler_result *q = sampler_new(0);
    for (int k = 0; k < 15; k++) {
        quiet_machine(q, k, 40);
        sps__series_add(&q->host[SPS_M_SYSTEM_CPU_PERCENT], reading_time(k), 100);
    }
    sps__bottleneck_analyze_parts(&run, q, 2, SPS_BN_FACE_C, NULL, &b);
    CHECK(isnan(b.evidence.workload_cpu_wait_percent));
    CHECK_STR_HAS(b.evidence.why_run_delay, "sched source is unavailable");
    CHECK_STR_HAS(b.evidence.why_pressure, "no CPU pressure readings");
    CHECK(b.verdict.kind != SPS_BN_CONTENDED);
    info.sampler = q;
    mf = open_memstream(&lines, &nlines);
    sps__summary_metrics(mf, &info);
    fclose(mf);
    CHECK(strstr(lines, "waiting for a CPU") == NULL); /* nothing read: no line */
    free(lines);

    /* a tree read only after it had gone (a command that ends at once):
     * its memory is unknown, not "0 B" */
    struct sps__sampler_result *gone = sampler_new(0);
    sps__series_add(&gone->host[SPS_M_WORKLOAD_RSS_PEAK_BYTES], reading_time(0), 0);
    info.sampler = gone;
    mf = open_memstream(&lines, &nlines);
    sps__summary_metrics(mf, &info);
    fclose(mf);
    CHECK_STR_HAS(lines, "machine   workload: memory unknown (the command ended before a reading)");
    CHECK(strstr(lines, "0 B") == NULL);
    free(lines);
    sps__sampler_result_free(gone);

    /* run delay read only at the start (a run ending before the next
     * machine reading): the later windows take the whole run's figures
     * and say so, instead of falling to unknown */
    struct sps__sampler_result *p = sampler_new(0);
    p->sources[SPS_SOURCE_SCHED].available = 1;
    for (int k = 0; k < 15; k++) {
        quiet_machine(p, k, 40);
        sps__series_add(&p->host[SPS_M_SYSTEM_CPU_PERCENT], reading_time(k), 100);
        if (k < 3)
            sps__series_add(&p->host[SPS_M_WORKLOAD_RUN_DELAY_PERCENT], reading_time(k), 60);
    }
    sps__bottleneck_analyze_parts(&run, p, 2, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_CONTENDED);
    CHECK(!b.evidence.contention_whole_run);
    CHECK_EQ_U(b.nwindows, 10);
    CHECK(!b.windows[0].evidence.contention_whole_run);
    CHECK(b.windows[9].evidence.contention_whole_run);
    CHECK_NEAR(b.windows[9].evidence.workload_cpu_wait_percent, 60.0, 1e-9);
    for (size_t i = 0; i < b.nwindows; i++)
        CHECK_EQ_I(b.windows[i].verdict.kind, SPS_BN_CONTENDED);
    CHECK_STR_HAS(b.windows[9].verdict.reason, "(over the whole run: no run delay reading in this window)");
    sampler_free(p);
    sampler_free(q);
    sampler_free(r);
    sps__run_free(&run);
}

/* n steps of 10 ms from T0, each with a zone `zone` of zone_ms at its
 * start and "compute" for 0.5 ms after it; the rest is the step's own. */
static void build_zone_run(struct sps_run *run, size_t n, const char *zone, double zone_ms) {
    struct builder b;
    b_init(&b);
    uint64_t t = T0, d = 10 * MS, z = (uint64_t)(zone_ms * MS);
    for (size_t i = 0; i < n; i++) {
        b_event(&b, SPS_RING_STEPS, "step", SPS_KIND_STEP, t, t + d);
        b_event(&b, SPS_RING_ZONES, zone, SPS_KIND_ZONE, t, t + z);
        b_event(&b, SPS_RING_ZONES, "compute", SPS_KIND_ZONE, t + z, t + z + MS / 2);
        t += d;
    }
    b.p.closed = 1;
    b.p.end_ns = t;
    memset(run, 0, sizeof *run);
    CHECK(sps__run_add(run, &b.p) == 0);
    CHECK(sps__run_build(run) == 0);
}

/* A C loop sleeping in zone "wait" 9.5 ms of each 10 ms step at 5% of a
 * core: the verdict names the zone it waits in, and does not ask for
 * zones around the waits; the run delay, read but absent, is said once. */
static void test_run_waiting_in_a_zone(void) {
    struct sps_run run;
    build_zone_run(&run, 150, "wait", 9.5);
    struct sps__sampler_result *r = sampler_new(0);
    r->sources[SPS_SOURCE_SCHED].available = 1;
    for (int k = 0; k < 15; k++)
        quiet_machine(r, k, 5);
    struct sps_bottleneck b;
    sps__bottleneck_analyze_parts(&run, r, 2, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_UNKNOWN);
    CHECK(!strcmp(b.evidence.top_zone, "wait"));
    CHECK_NEAR(b.evidence.top_zone_percent, 95, 1e-9);
    CHECK(!strcmp(b.verdict.reason, "the step spends 95% of its time in zone 'wait', which the CPU does not account "
                                    "for (the workload ran at 5% of a core, no GPU): it waits there"));
    CHECK_STR_HAS(b.verdict.recommendation, "find what zone 'wait' waits on");
    CHECK(strstr(b.verdict.recommendation, "wrap the waits") == NULL);
    CHECK_EQ_U(b.nwindows, 10);
    for (size_t i = 0; i < b.nwindows; i++)
        CHECK_STR_HAS(b.windows[i].verdict.reason, "in zone 'wait'");
    sps__run_free(&run);
    /* the waits outside every zone (the step's own self time): wrap them */
    build_zone_run(&run, 150, "prep", 1);
    sps__bottleneck_analyze_parts(&run, r, 2, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_UNKNOWN);
    CHECK_NEAR(b.evidence.top_zone_percent, 10, 1e-9);
    CHECK_STR_HAS(b.verdict.recommendation, "wrap the waits");
    /* the run delay was not read: said in one clause, not twice */
    CHECK_STR_HAS(b.verdict.reason, "(run delay unknown: the sched source gave no reading)");
    CHECK(strstr(b.verdict.reason, "run delay is unknown: the workload's run delay") == NULL);
    sps__run_free(&run);
    /* a data zone is not a waiting zone: the wait-zone rule ignores it */
    build_zone_run(&run, 150, "data", 9.5);
    sps__bottleneck_analyze_parts(&run, r, 2, SPS_BN_FACE_C, NULL, &b);
    CHECK_EQ_I(b.verdict.kind, SPS_BN_INPUT);
    CHECK(!strcmp(b.evidence.top_zone, "compute"));
    sampler_free(r);
    sps__run_free(&run);
}

/* Python CPU advice names torch's settings only where torch shows. */
static void test_python_advice_without_torch(void) {
    struct sps_bn_evidence e = ev();
    e.steps = 100;
    e.data_loading_percent = 1;
    e.workload_cpu_mean_percent = 99;
    e.cpu_count = 8;
    e.workload_cpu_percent_of_machine = 99.0 / 8;
    e.cpu_readings = 40;
    e.why_gpu = "no GPU was found";
    e.face = SPS_BN_FACE_PYTHON;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK(strstr(v.recommendation, "torch") == NULL);
    CHECK_STR_HAS(v.recommendation, "1.0 of 8 cores busy: use more processes (multiprocessing)");
    e.torch = 1;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "torch.set_num_threads");
    /* part of a core, a quiet machine */
    e.workload_cpu_mean_percent = 60;
    e.torch = 0;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_CPU);
    CHECK(strstr(v.recommendation, "torch") == NULL);
    CHECK_STR_HAS(v.recommendation, "the step is CPU work: use more processes");
    e.torch = 1;
    sps__bn_classify(&e, &v);
    CHECK_STR_HAS(v.recommendation, "torch.set_num_threads");
    /* what the records say: instrument's hooks, or its zone names */
    struct sps_run run;
    build_zone_run(&run, 5, "wait", 5);
    CHECK_EQ_I(sps__bn_torch_seen(&run), 0);
    run.procs[0].hook_zones = 3;
    CHECK_EQ_I(sps__bn_torch_seen(&run), 1);
    sps__run_free(&run);
    double step = 10;
    build_run(&run, 5, &step, 1, NULL, 0); /* a "forward" zone */
    CHECK_EQ_I(sps__bn_torch_seen(&run), 1);
    sps__run_free(&run);
}

int main(void) {
    RUN_TEST(test_classify_input_bound);
    RUN_TEST(test_classify_input_from_idle_gpu);
    RUN_TEST(test_classify_gpu_bound);
    RUN_TEST(test_classify_cpu_bound);
    RUN_TEST(test_classify_io_bound);
    RUN_TEST(test_classify_throttled);
    RUN_TEST(test_classify_memory_pressure);
    RUN_TEST(test_classify_unknown);
    RUN_TEST(test_data_zone_names);
    RUN_TEST(test_run_input_bound_without_sampler);
    RUN_TEST(test_run_cpu_bound);
    RUN_TEST(test_run_gpu_then_throttled);
    RUN_TEST(test_run_io_bound);
    RUN_TEST(test_run_memory_pressure);
    RUN_TEST(test_run_warmup_and_changing_windows);
    RUN_TEST(test_run_without_steps);
    RUN_TEST(test_json_and_views);
    RUN_TEST(test_classify_contended);
    RUN_TEST(test_classify_contended_from_pressure);
    RUN_TEST(test_every_verdict_text);
    RUN_TEST(test_unknown_text_and_advice);
    RUN_TEST(test_face_of);
    RUN_TEST(test_run_contended);
    RUN_TEST(test_run_waiting_in_a_zone);
    RUN_TEST(test_python_advice_without_torch);
    return check_report();
}
