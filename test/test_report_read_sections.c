/*
 * test_report_read_sections.c - report.json's machine half and analysis
 * read back into the model (src/report/report_read_machine.c,
 * report_read_analysis.c).  A model of known values (series that halved
 * their resolution, GPUs, sensors, processes, every analysis field) is
 * written with sps__report_json_write, its sections read back through a
 * scanner walking the top level as report_read.c does, compared field by
 * field and written again; so is one without a sampler.  Runs of
 * examples/leaky_train under `stepscope run` (sampled, --no-sample, the
 * leak in a forked worker) read back, write their sections again as
 * stepscope wrote them, print the summary's machine lines stepscope
 * printed, and every analysis rerun on their records with the model read
 * back answers what report.json says.  Malformed, truncated and older
 * report.json files read as they should.
 *
 * report.json writes every double exactly (the fewest digits that read
 * back as the same double, json_writer.c), so everything compares
 * exactly: doubles, integers, times in ns, strings and enums.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "model/run.h"
#include "check.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "report/jscan.h"
#include "report/report.h"
#include "report/report_read.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "support.h"

#define BASE_NS INT64_C(7315123456789) /* a monotonic clock two hours after boot */

/* The same double; NAN equals NAN. */
static int same(double a, double b) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b;
}

#define CHECK_SAME(a, b, what)                                                                                   \
    CHECK_AT(same((a), (b)), __FILE__, __LINE__, "%s: %s %.17g vs %.17g", (what), #a, (double)(a), (double)(b))
#define CHECK_EQ_AT(a, b, what)                                                                                  \
    CHECK_AT((int64_t)(a) == (int64_t)(b), __FILE__, __LINE__, "%s: %s %lld vs %lld", (what), #a,               \
             (long long)(a), (long long)(b))
#define CHECK_STR_SAME(a, b, what)                                                                               \
    CHECK_AT(!strcmp((a) ? (a) : "(null)", (b) ? (b) : "(null)"), __FILE__, __LINE__, "%s: %s \"%s\" vs \"%s\"",  \
             (what), #a, (a) ? (a) : "(null)", (b) ? (b) : "(null)")

/* ---------------------------------------------------------------- driver */

/* The top level of report.json walked as report_read.c walks it, with
 * only the sections under test read (the rest skipped).  Returns 0 or the
 * error code; err gets "LINE:COL: reason". */
static int read_sections(const char *path, struct sps_report *rep, char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    err[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return SPS_EIO;
    }
    struct sps_jscan s;
    int rc = sps__jscan_open(&s, f), more = 1;
    if (!rc)
        rc = sps__jscan_expect(&s, '{');
    for (int first = 1; !rc && !(rc = sps__jscan_member(&s, first, &more)) && more; first = 0) {
        char key[64];
        snprintf(key, sizeof key, "%s", s.str);
        rc = sps__report_read_machine(&s, key, rep);
        if (rc != 1)
            continue;
        if (!strcmp(key, "analysis")) {
            rc = sps__report_read_analysis(&s, rep);
        } else if (!strcmp(key, "started_mono_ns")) {
            /* the top level's: the series' origin in a report.json without one */
            double v;
            if (sps__jscan_peek(&s) == 'n') /* null: a report without the anchor */
                rc = sps__jscan_skip(&s);
            else if (!(rc = sps__jscan_number(&s, &v)))
                rep->run.start_ns = (uint64_t)v;
        } else if (!strcmp(key, "timing")) {
            /* the top level's: the overhead's workload CPU and wall time rest on it */
            rc = sps__jscan_expect(&s, '{');
            for (int f2 = 1, in = 1; !rc && !(rc = sps__jscan_member(&s, f2, &in)) && in; f2 = 0) {
                double *slot = !strcmp(s.str, "wall_s") ? &rep->info.wall_s
                               : !strcmp(s.str, "user_s") ? &rep->info.user_s
                               : !strcmp(s.str, "sys_s")  ? &rep->info.sys_s
                                                          : NULL;
                if (!slot) {
                    rc = sps__jscan_skip(&s);
                } else if (sps__jscan_peek(&s) == 'n') {
                    rc = sps__jscan_skip(&s);
                } else {
                    rc = sps__jscan_number(&s, slot);
                    rep->info.have_times = 1;
                }
            }
        } else if (!strcmp(key, "memory")) {
            rc = sps__jscan_expect(&s, '{');
            for (int f2 = 1, in = 1; !rc && !(rc = sps__jscan_member(&s, f2, &in)) && in; f2 = 0) {
                char inner[64];
                snprintf(inner, sizeof inner, "%s", s.str);
                if ((rc = sps__report_read_tree_memory(&s, inner, rep)) == 1)
                    rc = sps__jscan_skip(&s);
            }
        } else {
            rc = sps__jscan_skip(&s);
        }
    }
    if (!rc)
        rc = sps__jscan_end(&s);
    if (rc)
        snprintf(err, errlen, "%lu:%lu: %s", s.err_line, s.err_col, s.err[0] ? s.err : "out of memory");
    sps__jscan_close(&s);
    fclose(f);
    return rc;
}


/*
 * a and b are the same JSON text: every byte outside numbers alike (keys,
 * strings, nulls, layout), every number the same double.  *differing
 * counts the numbers not alike byte for byte (the check wants none).
 * Returns 1, or 0 with *line and the lines' starts where they part.
 */
static int same_json(const char *a, const char *b, size_t *line, const char **la, const char **lb,
                     size_t *differing) {
    int in_string = 0;
    *line = 1, *la = a, *lb = b, *differing = 0;
    while (*a && *b) {
        if (!in_string && (*a == '-' || (*a >= '0' && *a <= '9'))) {
            char *ea, *eb;
            double x = strtod(a, &ea), y = strtod(b, &eb);
            if (eb == b || !same(x, y))
                return 0;
            *differing += (ea - a != eb - b) || memcmp(a, b, (size_t)(ea - a)) != 0;
            a = ea, b = eb;
            continue;
        }
        if (*a != *b)
            return 0;
        if (*a == '"')
            in_string = !in_string;
        else if (in_string && *a == '\\' && a[1] && a[1] == b[1])
            a++, b++; /* an escaped character, quote included */
        else if (*a == '\n')
            ++*line, *la = a + 1, *lb = b + 1;
        a++, b++;
    }
    return !*a && !*b;
}

static void check_same_json(const char *a, const char *b, const char *what) {
    size_t line, differing;
    const char *la, *lb;
    CHECK_MSG(same_json(a, b, &line, &la, &lb, &differing), "%s differ at line %zu:\n  %.*s\n  %.*s", what, line,
              (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
    CHECK_MSG(differing == 0, "%s: %zu numbers are the same double written differently", what, differing);
}

static void check_same_file(const char *a_path, const char *b_path) {
    size_t alen = 0, blen = 0;
    char *a = read_whole(a_path, &alen), *b = read_whole(b_path, &blen);
    CHECK(a && b);
    if (a && b)
        check_same_json(a, b, b_path);
    free(a);
    free(b);
}

/* The terminal summary's machine lines of info (malloc'd). */
static char *summary_metrics_of(const struct sps_run_info *info) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    sps__summary_metrics(f, info);
    fclose(f);
    return text;
}

/* ------------------------------------------------------------- fixtures */

/* readings of a series at t0 + k * step_ns (+ k % 7 ns: times that are
 * no round number), values f(k) */
static void fill(struct sps__series *s, int64_t t0, int64_t step_ns, int n, double (*f)(int)) {
    for (int k = 0; k < n; k++)
        sps__series_add(s, t0 + k * step_ns + k % 7, f(k));
}

static double wave(int k) {
    return 50.0 + 10.0 * sin(k * 0.1) + k * 1e-3;
}
static double growing(int k) {
    return 1.5e9 + 1048576.0 * k + (k % 3) * 4096.0;
}
static double energy(int k) {
    return 1234.5 + 17.25 * k + sin(k) * 1e-3;
}
static double warm(int k) {
    return 40.0 + (k % 17) * 0.5;
}

/* A sampler result of known values: enough readings that the series
 * halved their resolution (per_point 4 and 2), GPUs with indexes that are
 * not their positions, sensors, processes, every source's counts. */
static struct sps__sampler_result *fixture_sampler(void) {
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        sps__series_init(&r->host[i], SPS_SAMPLER_DEFAULT_POINTS);
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            sps__series_init(&r->gpu[g].m[i], SPS_SAMPLER_DEFAULT_POINTS);
    for (int k = 0; k < SPS_CAPTURE_MAX_SENSORS; k++)
        sps__series_init(&r->sensor[k].celsius, SPS_SAMPLER_DEFAULT_POINTS);
    for (int k = 0; k < SPS_SAMPLER_MAX_PROCESSES; k++)
        sps__series_init(&r->process[k].rss_bytes, SPS_SAMPLER_DEFAULT_POINTS);
    r->interval_ms = 100;
    r->machine_interval_ms = 500;
    r->tree_pid = 4242;
    r->interval_ticks = 1500;
    r->machine_ticks = 300;
    r->ticks = 1520;
    r->tick_ns_total = 1520 * UINT64_C(33333) + 7;
    r->thread_cpu_seconds = 0.0123456789;
    r->thread_ns_total = UINT64_C(151234567890);
    r->started_ns = BASE_NS + 1000003;
    r->pss_reads = 12;
    r->pss_cpu_seconds = 0.000421;
    r->rss_sum_max_pss_current = 3047161856.0;
    for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
        struct sps__source_result *sr = &r->sources[i];
        sr->tried = i != SPS_SOURCE_NVIDIA_SMI;
        sr->available = i != SPS_SOURCE_DRM && sr->tried;
        sr->in_use = sr->available;
        sr->slow = i == SPS_SOURCE_NVML;
        if (!sr->available)
            snprintf(sr->reason, sizeof sr->reason, "source %d: no device (\"quoted\")", i);
        sr->reads = sr->available ? 1000u + (unsigned)i : 0;
        sr->failed_reads = (unsigned)i;
        sr->read_ns_total = sr->reads ? sr->reads * (12345u + (unsigned)i) + 7 : 0;
        if (i == SPS_SOURCE_PROC)
            snprintf(sr->note, sizeof sr->note, "PSS of pid 4243 denied");
        if (i == SPS_SOURCE_RAPL)
            snprintf(sr->last_error, sizeof sr->last_error, "energy_uj: permission denied");
    }
    int64_t t0 = r->started_ns;
    /* 1501 readings: 375 points of 4 and a newest of 1 */
    fill(&r->host[SPS_M_WORKLOAD_CPU_PERCENT], t0, 100000000, 1501, wave);
    fill(&r->host[SPS_M_WORKLOAD_RSS_BYTES], t0, 100000000, 1500, growing);
    fill(&r->host[SPS_M_WORKLOAD_RSS_PEAK_BYTES], t0, 100000000, 1500, growing);
    fill(&r->host[SPS_M_WORKLOAD_PSS_BYTES], t0 + 5, 500000000, 12, growing);
    fill(&r->host[SPS_M_WORKLOAD_PSS_PEAK_BYTES], t0 + 5, 500000000, 12, growing);
    fill(&r->host[SPS_M_SYSTEM_CPU_PERCENT], t0, 500000000, 300, wave);
    fill(&r->host[SPS_M_CPU_PACKAGE_ENERGY_JOULES], t0, 500000000, 300, energy);
    r->ngpus = 2;
    const int indexes[2] = {3, 0};
    for (int g = 0; g < 2; g++) {
        struct sps__gpu_series *gs = &r->gpu[g];
        gs->index = indexes[g];
        gs->source = SPS_SOURCE_NVML;
        snprintf(gs->name, sizeof gs->name, "NVIDIA H100 80GB HBM3 #%d", g);
        snprintf(gs->uuid, sizeof gs->uuid, "GPU-3f1c%d-aaaa-bbbb", g);
        fill(&gs->m[SPS_M_GPU_UTILIZATION_PERCENT], t0 + g, 500000000, 300, wave);
        fill(&gs->m[SPS_M_GPU_ENERGY_JOULES], t0 + g, 500000000, 300, energy);
        fill(&gs->m[SPS_M_GPU_POWER_WATTS], t0 + g, 500000000, 299, warm);
    }
    r->nsensors = 2;
    for (int k = 0; k < 2; k++) {
        snprintf(r->sensor[k].label, sizeof r->sensor[k].label, k ? "nvme Composite" : "coretemp Package id 0");
        r->sensor[k].is_cpu = !k;
        fill(&r->sensor[k].celsius, t0 + 3, 500000000, 300 - k, warm);
    }
    r->nprocesses = 3;
    for (int k = 0; k < 3; k++) {
        struct sps__process_series *p = &r->process[k];
        p->pid = 4242 + k;
        snprintf(p->comm, sizeof p->comm, k ? "worker-%d" : "python3", k);
        p->first_seen_ns = t0 + k * 700000000LL;
        fill(&p->rss_bytes, p->first_seen_ns, 100000000, 1003 - 200 * k, growing); /* 501 of 2, 1 of 1 */
    }
    r->processes_left_out = 5;
    return r;
}

/* The evidence of a span, every figure set or NaN with its reason. */
static void fixture_evidence(struct sps_bn_evidence *e, int seed, int with_reasons) {
    sps__bn_evidence_init(e);
    e->steps = 90u + (unsigned)seed;
    e->step_mean_seconds = 0.0123 + seed * 1e-4;
    e->data_loading_percent = 12.5 + seed;
    e->gpus = 2;
    e->gpu_utilization_mean_percent = 61.25;
    e->gpu_utilization_p10_percent = 20.0 + seed;
    e->gpu_utilization_p90_percent = 99.0;
    e->gpu_throttled_percent = 3.5;
    e->gpu_power_capped_percent = 0.0;
    e->gpu_throttle_reasons_seen = SPS_BN_THROTTLE_SW_POWER_CAP | SPS_BN_THROTTLE_HW_THERMAL;
    e->gpu_temperature_max_celsius = 81.0;
    e->gpu_sm_clock_drop_percent = 7.125;
    e->workload_cpu_mean_percent = 187.3;
    e->cpu_count = 16;
    e->workload_cpu_percent_of_machine = 187.3 / 16;
    e->system_cpu_mean_percent = 14.2;
    e->system_iowait_mean_percent = 0.25;
    e->system_memory_total_bytes = 68719476736.0;
    e->system_memory_available_min_percent = 41.5;
    e->system_swap_used_max_bytes = 0.0;
    e->system_swap_growth_bytes = 0.0;
    e->workload_run_delay_mean_percent = 4.75;
    e->workload_cpu_wait_percent = 2.5;
    e->cpu_readings = 150;
    e->machine_readings = 30;
    e->run_delay_readings = 30;
    e->contention_whole_run = seed & 1;
    e->top_zone_percent = 55.5;
    snprintf(e->top_zone, sizeof e->top_zone, "forward");
    e->face = SPS_BN_FACE_PYTHON;
    /* two groups unknown, with their reasons (the windows' are not written) */
    e->workload_disk_read_mean_bytes_per_second = NAN;
    e->cpu_pressure_some_mean_percent = NAN;
    if (with_reasons) {
        e->why_disk = "the workload's disk reads were not read (an unreadable /proc/PID/io, or no rate yet)";
        e->why_pressure = "no CPU pressure readings (a kernel without PSI)";
    }
}

static void fixture_verdict(struct sps_bn_verdict *v, enum sps_bn_kind kind, int seed) {
    v->kind = kind;
    v->confidence = 0.8125 - seed * 0.0625;
    snprintf(v->reason, sizeof v->reason, "GPU busy %d%% of the time, \"data\" 12.5%% of step time", 61 + seed);
    snprintf(v->recommendation, sizeof v->recommendation, "use a larger batch\nor mixed precision (%d)", seed);
}

/* An analysis with every field the writers write set. */
static void fixture_analysis(struct sps_analysis *a, const struct sps__sampler_result *r) {
    memset(a, 0, sizeof *a);
    a->computed = 1;
    struct sps_bottleneck *b = &a->bottleneck;
    b->computed = 1;
    snprintf(b->main_step, sizeof b->main_step, "train_step");
    b->ndata_zones = 2;
    snprintf(b->data_zones[0], sizeof b->data_zones[0], "data");
    snprintf(b->data_zones[1], sizeof b->data_zones[1], "load_batch");
    b->face = SPS_BN_FACE_PYTHON;
    fixture_evidence(&b->evidence, 0, 1);
    fixture_verdict(&b->verdict, SPS_BN_GPU, 0);
    b->nwindows = 3;
    for (size_t i = 0; i < 3; i++) {
        struct sps_bn_window *w = &b->windows[i];
        w->first_step = 10 + 30 * i;
        w->last_step = 39 + 30 * i;
        w->start_seconds = 1.25 + 3.5 * (double)i;
        w->end_seconds = 4.75 + 3.5 * (double)i;
        fixture_evidence(&w->evidence, (int)i + 1, 0);
        fixture_verdict(&w->verdict, i == 1 ? SPS_BN_INPUT : i == 2 ? SPS_BN_CONTENDED : SPS_BN_GPU, (int)i + 1);
    }

    struct sps_leaks *l = &a->leaks;
    l->computed = 1;
    l->verdict = SPS_LEAK_FOUND;
    snprintf(l->reason, sizeof l->reason, "1 of 3 memory series grows with the step number");
    snprintf(l->step_name, sizeof l->step_name, "step");
    l->pid = 4242;
    l->tid = 4250;
    l->tree_pid = r ? r->tree_pid : 0;
    snprintf(l->tree_note, sizeof l->tree_note, "workload_pss_bytes: read 12 times within the analysed steps");
    l->warmup_steps = 5;
    l->steps_analysed = 95;
    l->warmup_seconds = l->seconds_analysed = NAN;
    l->processes_left_out = 5;
    l->nseries = 3;
    l->series = calloc(3, sizeof *l->series);
    for (int i = 0; i < 3; i++) {
        struct sps_leak_series *s = &l->series[i];
        s->scope = (enum sps_leak_scope)i;
        snprintf(s->series, sizeof s->series, "%s",
                 i == 0 ? "workload_rss_bytes" : i == 1 ? "gpu_workload_memory_bytes" : "process_rss_bytes");
        s->gpu = i == 1 ? 3 : -1;
        s->pid = i == 0 ? 4242 : i == 2 ? 4243 : -1;
        if (i == 2)
            snprintf(s->comm, sizeof s->comm, "worker-1");
        s->verdict = i == 0 ? SPS_LEAK_FOUND : i == 1 ? SPS_LEAK_UNKNOWN : SPS_LEAK_NONE;
        snprintf(s->reason, sizeof s->reason, "reason %d: grows 1.0 MiB a step", i);
        s->points = 90u + (size_t)i;
        s->steps_analysed = 95;
        s->seconds_analysed = NAN;
        s->first_at = 5;
        s->last_at = 99;
        s->slope = i == 1 ? NAN : 1048576.5 * (i + 1);
        s->ci95_low = 1000000.25;
        s->ci95_high = 1100000.75;
        s->growth_bytes = 99614720.0;
        s->median_bytes = 1.5e9;
        s->min_growth_bytes = 15000000.0;
        s->allowance_bytes = i == 0 ? 2097152.0 : 0.0;
        s->first_segment_median_bytes = 1.51e9;
        s->last_segment_median_bytes = 1.6e9;
        s->rising_segments = i == 1 ? -1 : 4;
        /* the tree's leak started mid-run: its last half was judged */
        s->window = i == 0 ? SPS_LEAK_WINDOW_LAST_HALF : SPS_LEAK_WINDOW_ALL;
        s->window_from = i == 0 ? 52 : NAN;
    }

    struct sps_energy *e = &a->energy;
    e->carbon_g_per_kwh = 300.0;
    e->carbon_is_default = 0;
    e->pue = 1.0;
    e->pue_is_default = 1;
    e->ndomains = 4;
    const char *domains[4] = {"gpu", "gpu", "cpu_package", "dram"};
    for (int k = 0; k < 4; k++) {
        struct sps_energy_domain *d = &e->domain[k];
        snprintf(d->domain, sizeof d->domain, "%s", domains[k]);
        d->gpu = k < 2 ? (k ? 0 : 3) : -1;
        if (k < 2)
            snprintf(d->name, sizeof d->name, "NVIDIA H100 80GB HBM3 #%d", k);
        d->method = k == 0 ? SPS_ENERGY_COUNTER : k == 1 ? SPS_ENERGY_INTEGRATED_POWER
                    : k == 2 ? SPS_ENERGY_COUNTER : SPS_ENERGY_UNAVAILABLE;
        if (d->method == SPS_ENERGY_UNAVAILABLE) {
            d->joules = d->span_s = NAN;
            snprintf(d->reason, sizeof d->reason, "rapl: energy_uj: permission denied");
            continue;
        }
        d->joules = 5160.0 + k;
        d->span_s = 149.5;
        d->readings = 300 - (uint64_t)k;
        snprintf(d->source, sizeof d->source, "%s", k < 2 ? "nvml" : "rapl");
        if (r)
            d->series = k == 0   ? &r->gpu[0].m[SPS_M_GPU_ENERGY_JOULES]
                        : k == 1 ? &r->gpu[1].m[SPS_M_GPU_POWER_WATTS]
                                 : &r->host[SPS_M_CPU_PACKAGE_ENERGY_JOULES];
    }
    e->measured = 3;
    e->total_joules = 15483.0;
    e->total_kwh = 15483.0 / 3.6e6;
    e->co2e_grams = e->total_kwh * 300.0;
    e->step_count = 95;
    e->step_span_s = 120.25;
    e->step_joules = 130.5;
    e->step_kwh = 130.5 / 3.6e6;
    e->step_co2e_grams = e->step_kwh * 300.0;

    struct sps_throughput *t = &a->throughput;
    t->warmup_steps = 5;
    t->ncounters = 4;
    t->counters = calloc(4, sizeof *t->counters);
    const char *names[4] = {"samples", "flops", "late", "outside"};
    for (int i = 0; i < 4; i++) {
        struct sps_throughput_counter *c = &t->counters[i];
        snprintf(c->name, sizeof c->name, "%s", names[i]);
        c->total = 6400.0 * (i + 1);
        c->is_flops = i == 1;
        c->in_a_step = i < 3;
        if (i < 2) {
            c->in_steps = 6080.0 * (i + 1);
            c->steps = 95;
            c->threads = 2;
            c->step_seconds = 1.1685;
            c->per_second = 5203.25 * (i + 1);
            c->step_rate_mean = 5210.5;
            c->step_rate_median = 5200.0;
            c->step_rate_min = 4100.75;
            c->step_rate_max = 6000.0;
        } else {
            c->step_seconds = 0;
            c->per_second = c->step_rate_mean = c->step_rate_median = c->step_rate_min = c->step_rate_max = NAN;
        }
    }
    t->flops = 1;
    t->flops_per_second = t->counters[1].per_second;
    t->mfu = 0.41;
    t->peak_flops_total = 1.979e15;
    t->gpus = 2;
    snprintf(t->peak_from, sizeof t->peak_from, "NVIDIA H100 SXM, dense BF16, x2 GPUs");

    struct sps_overhead *o = &a->overhead;
    o->zones_recorded = 1900;
    o->values_recorded = 300;
    o->zone_cost_ns = 23.5;
    o->zone_end_samples = 40;
    o->zone_end_samples_dropped = 1;
    o->zone_end_in_run_ns = 12.25;
    o->zone_end_warm_ns = 11.0;
    o->value_cost_ns = 15.75;
    for (int k = 0; k < SPS_OH_KINDS; k++) {
        o->part[k].count = 100u * (unsigned)(k + 1);
        o->part[k].unpriced = k == SPS_OH_HOOKS ? 10 : 0;
        o->part[k].cost_ns = k == SPS_OH_THINNED ? NAN : 20.0 + k;
        o->part[k].s = o->part[k].count * 1e-9 * (20.0 + k);
    }
    o->recording_s = 0.0000447;
    o->recording_partial = 1;
    o->unmeasured_reason = NULL;
    o->sampler_cpu_s = r ? r->thread_cpu_seconds : NAN;
    o->live_view_cpu_s = 0.031;
    o->total_s = 0.05;
    o->workload_cpu_s = NAN; /* from "timing", which this fixture leaves unknown */
    o->wall_s = NAN;
    o->percent_of_workload_cpu = 0.0011;
    o->percent_of_wall = 0.033;
    o->sampler_percent_of_core = 0.008;
    o->live_view_percent_of_core = 0.02;
    o->guard_percent_of_core = 0.001;
    o->zones_thinned = 77;
    o->thinned_zone_cost_ns = 3.5;
    o->guard_cpu_s = 0.0015;
    o->budget_on = 1;
    o->budget_percent = 1.0;
    o->exceeded = 1;
    o->first_exceeded_s = 2.5;
    o->thin_level = SPS_THIN_PHASES;
    o->thinned_since_s = 2.75;
    o->windows = 40;
    o->windows_over = 3;
    o->peak_window_percent = 1.75;
    o->last_window_percent = 0.5;
    o->over_with_steps_only = 0;
}

/* ---------------------------------------------------------- comparisons */

static void check_series(const struct sps__series *a, const struct sps__series *b, const char *what) {
    CHECK_EQ_AT(a->n, b->n, what);
    CHECK_EQ_AT(a->count, b->count, what);
    CHECK_EQ_AT(a->per_point, b->per_point, what);
    CHECK_EQ_AT(a->cap, b->cap, what);
    if (!a->n)
        return;
    CHECK_SAME(a->sum, b->sum, what);
    CHECK_SAME(a->min, b->min, what);
    CHECK_SAME(a->max, b->max, what);
    CHECK_SAME(a->last, b->last, what);
    if (!a->count || a->count != b->count)
        return;
    CHECK_EQ_AT(a->first_ns, b->first_ns, what);
    CHECK_EQ_AT(a->last_ns, b->last_ns, what);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < a->count; i++) {
        const struct sps__series_point *p = &a->points[i], *q = &b->points[i];
        if (p->t_ns != q->t_ns || p->n != q->n || !same(p->mean, q->mean) || !same(p->max, q->max)) {
            if (!bad++)
                CHECK_MSG(0, "%s: point %u: t %lld/%lld n %u/%u mean %.17g/%.17g max %.17g/%.17g", what, i,
                          (long long)p->t_ns, (long long)q->t_ns, p->n, q->n, p->mean, q->mean, p->max, q->max);
        }
    }
    CHECK_MSG(bad == 0, "%s: %u of %u points differ", what, bad, a->count);
}

static void check_machine(const struct sps__sampler_result *a, const struct sps__sampler_result *b) {
    CHECK(b != NULL);
    if (!b)
        return;
    CHECK_EQ_I(a->interval_ms, b->interval_ms);
    CHECK_EQ_I(a->machine_interval_ms, b->machine_interval_ms);
    CHECK_EQ_I(a->tree_pid, b->tree_pid);
    CHECK_EQ_U(a->interval_ticks, b->interval_ticks);
    CHECK_EQ_U(a->machine_ticks, b->machine_ticks);
    CHECK_EQ_U(a->ticks, b->ticks);
    CHECK_EQ_U(a->tick_ns_total, b->tick_ns_total);
    CHECK_SAME(a->thread_cpu_seconds, b->thread_cpu_seconds, "sampler");
    CHECK_EQ_U(a->thread_ns_total, b->thread_ns_total);
    CHECK_EQ_I(a->started_ns, b->started_ns);
    CHECK_EQ_U(a->pss_reads, b->pss_reads);
    CHECK_SAME(a->pss_cpu_seconds, b->pss_cpu_seconds, "sampler");
    CHECK_SAME(a->rss_sum_max_pss_current, b->rss_sum_max_pss_current, "sampler");
    for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
        const struct sps__source_result *x = &a->sources[i], *y = &b->sources[i];
        const char *what = sps__source_get((enum sps_source_id)i)->name;
        CHECK_EQ_AT(x->tried, y->tried, what);
        CHECK_EQ_AT(x->available, y->available, what);
        CHECK_EQ_AT(x->in_use, y->in_use, what);
        CHECK_EQ_AT(x->slow, y->slow, what);
        CHECK_STR_SAME(x->reason, y->reason, what);
        CHECK_EQ_AT(x->reads, y->reads, what);
        CHECK_EQ_AT(x->failed_reads, y->failed_reads, what);
        CHECK_EQ_AT(x->read_ns_total, y->read_ns_total, what);
        CHECK_STR_SAME(x->last_error, y->last_error, what);
        CHECK_STR_SAME(x->note, y->note, what);
    }
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        check_series(&a->host[i], &b->host[i], sps_host_metric_info(i)->name);
    CHECK_EQ_I(a->ngpus, b->ngpus);
    for (int g = 0; g < a->ngpus && g < b->ngpus; g++) {
        CHECK_EQ_I(a->gpu[g].index, b->gpu[g].index);
        CHECK_EQ_I(a->gpu[g].source, b->gpu[g].source);
        CHECK_STR_SAME(a->gpu[g].name, b->gpu[g].name, "gpu");
        CHECK_STR_SAME(a->gpu[g].uuid, b->gpu[g].uuid, "gpu");
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            check_series(&a->gpu[g].m[i], &b->gpu[g].m[i], sps_gpu_metric_info(i)->name);
    }
    CHECK_EQ_I(a->nsensors, b->nsensors);
    for (int k = 0; k < a->nsensors && k < b->nsensors; k++) {
        CHECK_STR_SAME(a->sensor[k].label, b->sensor[k].label, "sensor");
        CHECK_EQ_I(a->sensor[k].is_cpu, b->sensor[k].is_cpu);
        check_series(&a->sensor[k].celsius, &b->sensor[k].celsius, a->sensor[k].label);
    }
    CHECK_EQ_I(a->nprocesses, b->nprocesses);
    CHECK_EQ_U(a->processes_left_out, b->processes_left_out);
    for (int k = 0; k < a->nprocesses && k < b->nprocesses; k++) {
        CHECK_EQ_I(a->process[k].pid, b->process[k].pid);
        CHECK_STR_SAME(a->process[k].comm, b->process[k].comm, "process");
        CHECK_EQ_I(a->process[k].first_seen_ns, b->process[k].first_seen_ns);
        check_series(&a->process[k].rss_bytes, &b->process[k].rss_bytes, a->process[k].comm);
    }
}

static void check_evidence(const struct sps_bn_evidence *a, const struct sps_bn_evidence *b, const char *what,
                           int with_reasons) {
    CHECK_EQ_AT(a->steps, b->steps, what);
    CHECK_SAME(a->step_mean_seconds, b->step_mean_seconds, what);
    CHECK_SAME(a->data_loading_percent, b->data_loading_percent, what);
    CHECK_EQ_AT(a->gpus, b->gpus, what);
    CHECK_SAME(a->gpu_utilization_mean_percent, b->gpu_utilization_mean_percent, what);
    CHECK_SAME(a->gpu_utilization_p10_percent, b->gpu_utilization_p10_percent, what);
    CHECK_SAME(a->gpu_utilization_p90_percent, b->gpu_utilization_p90_percent, what);
    CHECK_SAME(a->gpu_throttled_percent, b->gpu_throttled_percent, what);
    CHECK_SAME(a->gpu_power_capped_percent, b->gpu_power_capped_percent, what);
    CHECK_EQ_AT(a->gpu_throttle_reasons_seen, b->gpu_throttle_reasons_seen, what);
    CHECK_SAME(a->gpu_temperature_max_celsius, b->gpu_temperature_max_celsius, what);
    CHECK_SAME(a->gpu_sm_clock_drop_percent, b->gpu_sm_clock_drop_percent, what);
    CHECK_SAME(a->workload_cpu_mean_percent, b->workload_cpu_mean_percent, what);
    CHECK_EQ_AT(a->cpu_count, b->cpu_count, what);
    CHECK_SAME(a->workload_cpu_percent_of_machine, b->workload_cpu_percent_of_machine, what);
    CHECK_SAME(a->system_cpu_mean_percent, b->system_cpu_mean_percent, what);
    CHECK_SAME(a->system_iowait_mean_percent, b->system_iowait_mean_percent, what);
    CHECK_SAME(a->workload_disk_read_mean_bytes_per_second, b->workload_disk_read_mean_bytes_per_second, what);
    CHECK_SAME(a->system_memory_total_bytes, b->system_memory_total_bytes, what);
    CHECK_SAME(a->system_memory_available_min_percent, b->system_memory_available_min_percent, what);
    CHECK_SAME(a->system_swap_used_max_bytes, b->system_swap_used_max_bytes, what);
    CHECK_SAME(a->system_swap_growth_bytes, b->system_swap_growth_bytes, what);
    CHECK_SAME(a->workload_run_delay_mean_percent, b->workload_run_delay_mean_percent, what);
    CHECK_SAME(a->workload_cpu_wait_percent, b->workload_cpu_wait_percent, what);
    CHECK_SAME(a->cpu_pressure_some_mean_percent, b->cpu_pressure_some_mean_percent, what);
    CHECK_EQ_AT(a->cpu_readings, b->cpu_readings, what);
    CHECK_EQ_AT(a->machine_readings, b->machine_readings, what);
    CHECK_EQ_AT(a->run_delay_readings, b->run_delay_readings, what);
    CHECK_EQ_AT(a->contention_whole_run, b->contention_whole_run, what);
    CHECK_SAME(a->top_zone_percent, b->top_zone_percent, what);
    if (!isnan(a->top_zone_percent))
        CHECK_STR_SAME(a->top_zone, b->top_zone, what);
    CHECK_EQ_AT(a->face, b->face, what);
    if (!with_reasons)
        return;
    CHECK_STR_SAME(a->why_steps, b->why_steps, what);
    CHECK_STR_SAME(a->why_data, b->why_data, what);
    CHECK_STR_SAME(a->why_gpu, b->why_gpu, what);
    CHECK_STR_SAME(a->why_throttle, b->why_throttle, what);
    CHECK_STR_SAME(a->why_cpu, b->why_cpu, what);
    CHECK_STR_SAME(a->why_cpu_count, b->why_cpu_count, what);
    CHECK_STR_SAME(a->why_system, b->why_system, what);
    CHECK_STR_SAME(a->why_disk, b->why_disk, what);
    CHECK_STR_SAME(a->why_memory, b->why_memory, what);
    CHECK_STR_SAME(a->why_run_delay, b->why_run_delay, what);
    CHECK_STR_SAME(a->why_pressure, b->why_pressure, what);
}

static void check_verdict(const struct sps_bn_verdict *a, const struct sps_bn_verdict *b, const char *what) {
    CHECK_EQ_AT(a->kind, b->kind, what);
    CHECK_SAME(a->confidence, b->confidence, what);
    CHECK_STR_SAME(a->reason, b->reason, what);
    CHECK_STR_SAME(a->recommendation, b->recommendation, what);
}

static void check_bottleneck(const struct sps_bottleneck *a, const struct sps_bottleneck *b) {
    CHECK_EQ_I(a->computed, b->computed);
    CHECK_STR_SAME(a->main_step, b->main_step, "bottleneck");
    CHECK_EQ_U(a->ndata_zones, b->ndata_zones);
    for (size_t i = 0; i < a->ndata_zones && i < b->ndata_zones; i++)
        CHECK_STR_SAME(a->data_zones[i], b->data_zones[i], "data zones");
    check_evidence(&a->evidence, &b->evidence, "evidence", 1);
    CHECK_STR_SAME(a->evidence.why_sampler, b->evidence.why_sampler, "evidence");
    check_verdict(&a->verdict, &b->verdict, "verdict");
    CHECK_EQ_I(a->face, b->face);
    CHECK_EQ_U(a->nwindows, b->nwindows);
    for (size_t i = 0; i < a->nwindows && i < b->nwindows; i++) {
        const struct sps_bn_window *x = &a->windows[i], *y = &b->windows[i];
        CHECK_EQ_U(x->first_step, y->first_step);
        CHECK_EQ_U(x->last_step, y->last_step);
        CHECK_SAME(x->start_seconds, y->start_seconds, "window");
        CHECK_SAME(x->end_seconds, y->end_seconds, "window");
        check_evidence(&x->evidence, &y->evidence, "window evidence", 0);
        check_verdict(&x->verdict, &y->verdict, "window verdict");
    }
    CHECK_STR_SAME(a->windows_note, b->windows_note, "bottleneck");
}

static void check_leaks(const struct sps_leaks *a, const struct sps_leaks *b) {
    CHECK_EQ_I(a->computed, b->computed);
    CHECK_EQ_I(a->verdict, b->verdict);
    CHECK_STR_SAME(a->reason, b->reason, "leaks");
    CHECK_STR_SAME(a->step_name, b->step_name, "leaks");
    CHECK_EQ_I(a->pid, b->pid);
    CHECK_EQ_I(a->tid, b->tid);
    CHECK_EQ_I(a->tree_pid, b->tree_pid);
    CHECK_STR_SAME(a->tree_note, b->tree_note, "leaks");
    CHECK_EQ_I(a->axis, b->axis);
    CHECK_EQ_U(a->warmup_steps, b->warmup_steps);
    CHECK_EQ_U(a->steps_analysed, b->steps_analysed);
    CHECK_SAME(a->warmup_seconds, b->warmup_seconds, "leaks");
    CHECK_SAME(a->seconds_analysed, b->seconds_analysed, "leaks");
    CHECK_EQ_U(a->processes_left_out, b->processes_left_out);
    CHECK_EQ_U(a->nseries, b->nseries);
    for (size_t i = 0; i < a->nseries && i < b->nseries; i++) {
        const struct sps_leak_series *x = &a->series[i], *y = &b->series[i];
        CHECK_STR_SAME(x->series, y->series, "leak series");
        CHECK_EQ_I(x->scope, y->scope);
        CHECK_EQ_I(x->gpu, y->gpu);
        CHECK_EQ_I(x->pid, y->pid);
        CHECK_STR_SAME(x->comm, y->comm, x->series);
        CHECK_EQ_I(x->verdict, y->verdict);
        CHECK_STR_SAME(x->reason, y->reason, x->series);
        CHECK_EQ_U(x->points, y->points);
        CHECK_EQ_I(x->axis, y->axis);
        CHECK_EQ_U(x->steps_analysed, y->steps_analysed);
        CHECK_SAME(x->seconds_analysed, y->seconds_analysed, x->series);
        CHECK_SAME(x->first_at, y->first_at, x->series);
        CHECK_SAME(x->last_at, y->last_at, x->series);
        CHECK_SAME(x->slope, y->slope, x->series);
        CHECK_SAME(x->ci95_low, y->ci95_low, x->series);
        CHECK_SAME(x->ci95_high, y->ci95_high, x->series);
        CHECK_SAME(x->growth_bytes, y->growth_bytes, x->series);
        CHECK_SAME(x->median_bytes, y->median_bytes, x->series);
        CHECK_SAME(x->min_growth_bytes, y->min_growth_bytes, x->series);
        CHECK_SAME(x->allowance_bytes, y->allowance_bytes, x->series);
        CHECK_SAME(x->first_segment_median_bytes, y->first_segment_median_bytes, x->series);
        CHECK_SAME(x->last_segment_median_bytes, y->last_segment_median_bytes, x->series);
        CHECK_EQ_I(x->rising_segments, y->rising_segments);
        CHECK_EQ_I(x->window, y->window);
        CHECK_SAME(x->window_from, y->window_from, x->series);
    }
}

static void check_energy(const struct sps_energy *a, const struct sps_energy *b) {
    CHECK_SAME(a->carbon_g_per_kwh, b->carbon_g_per_kwh, "energy");
    CHECK_SAME(a->pue, b->pue, "energy");
    CHECK_EQ_I(a->carbon_is_default, b->carbon_is_default);
    CHECK_EQ_I(a->pue_is_default, b->pue_is_default);
    CHECK_EQ_U(a->ndomains, b->ndomains);
    for (size_t k = 0; k < a->ndomains && k < b->ndomains; k++) {
        const struct sps_energy_domain *x = &a->domain[k], *y = &b->domain[k];
        CHECK_STR_SAME(x->domain, y->domain, "domain");
        CHECK_EQ_I(x->gpu, y->gpu);
        CHECK_STR_SAME(x->name, y->name, x->domain);
        CHECK_EQ_I(x->method, y->method);
        CHECK_SAME(x->joules, y->joules, x->domain);
        CHECK_SAME(x->span_s, y->span_s, x->domain);
        CHECK_EQ_U(x->readings, y->readings);
        CHECK_STR_SAME(x->reason, y->reason, x->domain);
        /* an unavailable domain's source is not written (see the reader) */
        if (x->method != SPS_ENERGY_UNAVAILABLE)
            CHECK_STR_SAME(x->source, y->source, x->domain);
        CHECK_MSG(x->series == NULL ? y->series == NULL : y->series != NULL, "%s %zu: series", x->domain, k);
    }
    CHECK_EQ_U(a->measured, b->measured);
    CHECK_SAME(a->total_joules, b->total_joules, "energy");
    CHECK_SAME(a->total_kwh, b->total_kwh, "energy");
    CHECK_SAME(a->co2e_grams, b->co2e_grams, "energy");
    CHECK_STR_SAME(a->total_reason, b->total_reason, "energy");
    CHECK_EQ_U(a->step_count, b->step_count);
    CHECK_SAME(a->step_span_s, b->step_span_s, "energy");
    CHECK_SAME(a->step_joules, b->step_joules, "energy");
    CHECK_SAME(a->step_kwh, b->step_kwh, "energy");
    CHECK_SAME(a->step_co2e_grams, b->step_co2e_grams, "energy");
    CHECK_STR_SAME(a->step_reason, b->step_reason, "energy");
}

static void check_throughput(const struct sps_throughput *a, const struct sps_throughput *b) {
    CHECK_EQ_U(a->warmup_steps, b->warmup_steps);
    CHECK_EQ_U(a->ncounters, b->ncounters);
    for (size_t i = 0; i < a->ncounters && i < b->ncounters; i++) {
        const struct sps_throughput_counter *x = &a->counters[i], *y = &b->counters[i];
        CHECK_STR_SAME(x->name, y->name, "counter");
        CHECK_SAME(x->total, y->total, x->name);
        CHECK_SAME(x->in_steps, y->in_steps, x->name);
        CHECK_EQ_U(x->steps, y->steps);
        CHECK_EQ_U(x->threads, y->threads);
        CHECK_SAME(x->step_seconds, y->step_seconds, x->name);
        CHECK_SAME(x->per_second, y->per_second, x->name);
        CHECK_SAME(x->step_rate_mean, y->step_rate_mean, x->name);
        CHECK_SAME(x->step_rate_median, y->step_rate_median, x->name);
        CHECK_SAME(x->step_rate_min, y->step_rate_min, x->name);
        CHECK_SAME(x->step_rate_max, y->step_rate_max, x->name);
        CHECK_EQ_I(x->is_flops, y->is_flops);
        CHECK_EQ_AT(x->in_a_step, y->in_a_step, x->name);
    }
    CHECK_STR_SAME(a->reason, b->reason, "throughput");
    CHECK_EQ_I(a->flops, b->flops);
    CHECK_SAME(a->flops_per_second, b->flops_per_second, "throughput");
    CHECK_STR_SAME(a->flops_reason, b->flops_reason, "throughput");
    CHECK_SAME(a->mfu, b->mfu, "throughput");
    CHECK_SAME(a->peak_flops_total, b->peak_flops_total, "throughput");
    CHECK_EQ_I(a->gpus, b->gpus);
    CHECK_STR_SAME(a->peak_from, b->peak_from, "throughput");
    CHECK_STR_SAME(a->mfu_reason, b->mfu_reason, "throughput");
}

static void check_overhead(const struct sps_overhead *a, const struct sps_overhead *b) {
    CHECK_EQ_U(a->zones_recorded, b->zones_recorded);
    CHECK_EQ_U(a->values_recorded, b->values_recorded);
    CHECK_SAME(a->zone_cost_ns, b->zone_cost_ns, "overhead");
    CHECK_EQ_U(a->zone_end_samples, b->zone_end_samples);
    CHECK_EQ_U(a->zone_end_samples_dropped, b->zone_end_samples_dropped);
    CHECK_SAME(a->zone_end_in_run_ns, b->zone_end_in_run_ns, "overhead");
    CHECK_SAME(a->zone_end_warm_ns, b->zone_end_warm_ns, "overhead");
    CHECK_SAME(a->value_cost_ns, b->value_cost_ns, "overhead");
    for (int k = 0; k < SPS_OH_KINDS; k++) {
        const char *what = sps__overhead_kind_name((enum sps_overhead_kind)k);
        CHECK_EQ_AT(a->part[k].count, b->part[k].count, what);
        CHECK_EQ_AT(a->part[k].unpriced, b->part[k].unpriced, what);
        CHECK_SAME(a->part[k].cost_ns, b->part[k].cost_ns, what);
        CHECK_SAME(a->part[k].s, b->part[k].s, what);
    }
    CHECK_SAME(a->recording_s, b->recording_s, "overhead");
    CHECK_EQ_I(a->recording_partial, b->recording_partial);
    CHECK_SAME(a->sampler_cpu_s, b->sampler_cpu_s, "overhead");
    CHECK_SAME(a->live_view_cpu_s, b->live_view_cpu_s, "overhead");
    CHECK_SAME(a->total_s, b->total_s, "overhead");
    CHECK_SAME(a->workload_cpu_s, b->workload_cpu_s, "overhead");
    CHECK_SAME(a->wall_s, b->wall_s, "overhead");
    CHECK_SAME(a->percent_of_workload_cpu, b->percent_of_workload_cpu, "overhead");
    CHECK_SAME(a->percent_of_wall, b->percent_of_wall, "overhead");
    CHECK_SAME(a->sampler_percent_of_core, b->sampler_percent_of_core, "overhead");
    CHECK_SAME(a->live_view_percent_of_core, b->live_view_percent_of_core, "overhead");
    CHECK_SAME(a->guard_percent_of_core, b->guard_percent_of_core, "overhead");
    CHECK_STR_SAME(a->unmeasured_reason, b->unmeasured_reason, "overhead");
    CHECK_EQ_U(a->zones_thinned, b->zones_thinned);
    CHECK_SAME(a->thinned_zone_cost_ns, b->thinned_zone_cost_ns, "overhead");
    CHECK_SAME(a->guard_cpu_s, b->guard_cpu_s, "overhead");
    CHECK_EQ_I(a->budget_on, b->budget_on);
    if (!a->budget_on)
        return; /* the budget's figures are written only with one */
    CHECK_SAME(a->budget_percent, b->budget_percent, "budget");
    CHECK_EQ_I(a->exceeded, b->exceeded);
    CHECK_SAME(a->first_exceeded_s, b->first_exceeded_s, "budget");
    CHECK_EQ_U(a->thin_level, b->thin_level);
    CHECK_SAME(a->thinned_since_s, b->thinned_since_s, "budget");
    CHECK_EQ_U(a->windows, b->windows);
    CHECK_EQ_U(a->windows_over, b->windows_over);
    CHECK_SAME(a->peak_window_percent, b->peak_window_percent, "budget");
    CHECK_SAME(a->last_window_percent, b->last_window_percent, "budget");
    CHECK_EQ_I(a->over_with_steps_only, b->over_with_steps_only);
}

static void check_analysis(const struct sps_analysis *a, const struct sps_analysis *b) {
    CHECK_EQ_I(b->computed, 1);
    check_bottleneck(&a->bottleneck, &b->bottleneck);
    check_leaks(&a->leaks, &b->leaks);
    check_energy(&a->energy, &b->energy);
    check_throughput(&a->throughput, &b->throughput);
    check_overhead(&a->overhead, &b->overhead);
}

/* ----------------------------------------------------------------- tests */

/* Write rep, read its sections back into *back, write *back: the two
 * files must hold the same bytes. */
static int round_trip(const struct sps_report *rep, struct sps_report *back, const char *tag) {
    const char *dir = tmpdir_new(tag);
    char first[1200], second[1200], err[512];
    snprintf(first, sizeof first, "%s/report.json", dir);
    snprintf(second, sizeof second, "%s/again.json", dir);
    CHECK_EQ_I(sps__report_json_write(rep, first, err, sizeof err), 0);
    int rc = read_sections(first, back, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", first, err);
    if (rc)
        return rc;
    CHECK_EQ_I(sps__report_json_write(back, second, err, sizeof err), 0);
    check_same_file(first, second);
    return 0;
}

/* The machine half and the analysis of a model of known values: every
 * field back, and the same report.json written again.  With the run's
 * start known, and without (the series count from the first tick). */
static void test_known_model_round_trips(void) {
    for (int with_start = 1; with_start >= 0; with_start--) {
        struct sps__sampler_result *r = fixture_sampler();
        struct sps_report rep;
        memset(&rep, 0, sizeof rep);
        rep.info.sampler = r;
        rep.info.start_mono_ns = with_start ? (uint64_t)BASE_NS : 0;
        rep.info.have_live_view = 1;
        rep.info.live_view_refreshes = 812;
        rep.info.live_view_cpu_seconds = 0.031;
        fixture_analysis(&rep.analysis, r);
        struct sps_report back;
        if (round_trip(&rep, &back, with_start ? "sections-start" : "sections-nostart") == 0) {
            CHECK(back.info.sampler == back.machine_owned);
            check_machine(r, back.info.sampler);
            CHECK(back.info.sampler_absent_reason == NULL);
            CHECK_EQ_I(back.info.have_live_view, 1);
            CHECK_EQ_U(back.info.live_view_refreshes, 812);
            CHECK_SAME(back.info.live_view_cpu_seconds, 0.031, "live view");
            CHECK_EQ_U(back.info.start_mono_ns, with_start ? (uint64_t)BASE_NS : (uint64_t)r->started_ns);
            check_analysis(&rep.analysis, &back.analysis);
            /* the energy domains point at the series read back */
            CHECK(back.analysis.energy.domain[0].series == &back.machine_owned->gpu[0].m[SPS_M_GPU_ENERGY_JOULES]);
            CHECK(back.analysis.energy.domain[2].series ==
                  &back.machine_owned->host[SPS_M_CPU_PACKAGE_ENERGY_JOULES]);
            /* the tree's memory is what it was: PSS current near the RSS peak */
            CHECK_EQ_I(sps__tree_memory_metric(back.info.sampler), sps__tree_memory_metric(r));
            /* the watcher's facts the analysis alone records */
            const struct sps_guard_report *g = &back.info.guard;
            CHECK(g->on && g->windows == 40 && g->windows_over == 3 && g->over_at_steps == 0);
            CHECK_SAME(g->budget, 0.01, "guard");
            CHECK_SAME(g->first_over_s, 2.5, "guard");
            CHECK_SAME(g->peak_share, 0.0175, "guard");
            CHECK_SAME(g->last_share, 0.005, "guard");
            CHECK_SAME(g->cpu_seconds, 0.0015, "guard");
            CHECK(back.info.have_record_cost && back.info.record_cost_absent_reason == NULL);
            CHECK_SAME(back.info.zone_cost_ns, 23.5, "record cost");
            CHECK_SAME(back.info.value_cost_ns, 15.75, "record cost");
            CHECK_SAME(back.info.thinned_zone_cost_ns, 3.5, "record cost");
            CHECK_SAME(back.info.warm_end_ns, 11.0, "record cost");
            CHECK_EQ_I(back.info.cpu_count, 16);
            CHECK(back.info.analysis == &back.analysis_config);
            CHECK_SAME(back.analysis_config.carbon_g_per_kwh, 300.0, "config"); /* --carbon-intensity */
            CHECK(isnan(back.analysis_config.pue) && isnan(back.analysis_config.peak_flops)); /* defaults */
            /* the summary says what it said */
            char *was = summary_metrics_of(&rep.info), *is = summary_metrics_of(&back.info);
            CHECK(was && is && strstr(was, "GPU 3") && !strcmp(was, is));
            free(was);
            free(is);
        }
        sps__report_free(&back);
        sps__analysis_free(&rep.analysis);
        sps__sampler_result_free(r);
    }
}

/* The leak analysis of a run with no steps, against time: the axis, the
 * seconds and the slope per second come back into the same fields, and
 * report.json is the same written again. */
static void test_time_axis_leaks_round_trip(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    rep.info.sampler = r;
    rep.info.start_mono_ns = (uint64_t)BASE_NS;
    fixture_analysis(&rep.analysis, r);
    struct sps_leaks *l = &rep.analysis.leaks;
    l->axis = SPS_LEAK_AXIS_TIME;
    l->step_name[0] = '\0';
    l->pid = l->tid = -1;
    l->warmup_steps = l->steps_analysed = 0;
    l->warmup_seconds = 1.25;
    l->seconds_analysed = 5.0;
    snprintf(l->reason, sizeof l->reason, "1 of 3 memory series grow over time (1 could not be judged)");
    for (size_t i = 0; i < l->nseries; i++) {
        struct sps_leak_series *s = &l->series[i];
        s->axis = SPS_LEAK_AXIS_TIME;
        s->steps_analysed = 0;
        s->seconds_analysed = i == 2 ? 3.5 : 5.0;
        s->first_at = i == 2 ? 2.75 : 1.25;
        s->last_at = 6.25;
        s->window_from = i == 0 ? 3.75 : NAN;
    }
    struct sps_report back;
    if (round_trip(&rep, &back, "sections-time") == 0) {
        check_analysis(&rep.analysis, &back.analysis);
        CHECK_EQ_I(back.analysis.leaks.axis, SPS_LEAK_AXIS_TIME);
        CHECK_SAME(back.analysis.leaks.series[0].slope, 1048576.5, "time slope");
        CHECK(isnan(back.analysis.leaks.series[1].slope)); /* unknown stays unknown */
        CHECK_SAME(back.analysis.leaks.series[2].first_at, 2.75, "time first_at");
        CHECK_EQ_I(back.analysis.leaks.series[0].window, SPS_LEAK_WINDOW_LAST_HALF);
        CHECK_SAME(back.analysis.leaks.series[0].window_from, 3.75, "time window_from");
    }
    sps__report_free(&back);
    sps__analysis_free(&rep.analysis);
    sps__sampler_result_free(r);
}

/* A run without a sampler: info.sampler stays NULL with the reason, the
 * analysis names it, and report.json is the same written again. */
static void test_unsampled_says_why(void) {
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    rep.info.sampler_absent_reason = "sampling was turned off (--no-sample)";
    fixture_analysis(&rep.analysis, NULL);
    rep.analysis.bottleneck.nwindows = 0;
    rep.analysis.bottleneck.windows_note = "fewer than 3 steps after warm-up";
    rep.analysis.bottleneck.evidence.why_sampler = rep.info.sampler_absent_reason;
    rep.analysis.overhead.budget_on = 0;
    rep.analysis.overhead.unmeasured_reason = "stepscope run did not measure the cost of a zone";
    rep.analysis.overhead.recording_s = NAN;
    rep.analysis.throughput.counters[1].is_flops = 0;
    rep.analysis.throughput.flops = -1;
    rep.analysis.throughput.flops_per_second = rep.analysis.throughput.mfu = NAN;
    snprintf(rep.analysis.throughput.flops_reason, sizeof rep.analysis.throughput.flops_reason,
             "no FLOP counter inside the steps");
    snprintf(rep.analysis.throughput.mfu_reason, sizeof rep.analysis.throughput.mfu_reason, "no FLOP/s");
    struct sps_report back;
    if (round_trip(&rep, &back, "sections-unsampled") == 0) {
        CHECK(back.info.sampler == NULL);
        CHECK(back.machine_owned == NULL);
        CHECK_STR_SAME(back.info.sampler_absent_reason, rep.info.sampler_absent_reason, "absent");
        CHECK_EQ_I(back.info.have_live_view, 0);
        CHECK(!back.info.have_record_cost && !back.info.guard.on);
        CHECK_STR_SAME(back.info.record_cost_absent_reason, rep.analysis.overhead.unmeasured_reason, "record cost");
        check_analysis(&rep.analysis, &back.analysis);
        CHECK(back.analysis.energy.domain[0].series == NULL);
    }
    sps__report_free(&back);
    sps__analysis_free(&rep.analysis);
}

static void analyses_agree(const char *out, const struct sps_report *back, uint64_t started_mono_ns);

/*
 * examples/leaky_train under `stepscope run`: real series, sources and
 * analysis.  Read back, the machine half and the analysis are written
 * again as stepscope wrote them, byte for byte, and the tree's memory
 * (written from the sampler) names the same metric.
 */
enum real_run { REAL_SAMPLED, REAL_UNSAMPLED, REAL_WORKER };

static void real_run_writes_again(enum real_run kind) {
    int sample = kind != REAL_UNSAMPLED;
    char out[600], err[512], *summary = malloc(1 << 16);
    snprintf(out, sizeof out, "%s/out",
             tmpdir_new(kind == REAL_SAMPLED ? "sections-real" : sample ? "sections-worker" : "sections-nosample"));
    /* stepscope run --no-live -o OUT -- leaky_train: the summary on stderr */
    char *argv[24] = {SPS_BIN_DIR "/stepscope", "run", "--no-live", "-o", out};
    size_t n = 5;
    if (kind == REAL_UNSAMPLED)
        argv[n++] = "--no-sample";
    if (kind == REAL_WORKER) { /* docs/report-format.md's series.processes example */
        static char *const opts[] = {"--interval", "20", "--machine-interval", "100"};
        for (size_t i = 0; i < 4; i++)
            argv[n++] = opts[i];
    }
    argv[n++] = "--";
    argv[n++] = SPS_BIN_DIR "/leaky_train";
    if (kind == REAL_WORKER) {
        static char *const args[] = {"--leak-kib", "0", "--worker-leak-kib", "1024", "--steps", "100", "--step-ms", "10"};
        for (size_t i = 0; i < 8; i++)
            argv[n++] = args[i];
    }
    argv[n] = NULL;
    CHECK_EQ_I(exit_code_of(run_capture(argv, summary, 1 << 16)), 0);
    char path[700], again[700];
    snprintf(path, sizeof path, "%s/report.json", out);
    snprintf(again, sizeof again, "%s/sections.json", out);
    struct sps_report back;
    int rc = read_sections(path, &back, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", path, err);
    if (rc) {
        sps__report_free(&back);
        free(summary);
        return;
    }
    CHECK(sample ? back.info.sampler != NULL : back.info.sampler == NULL);
    if (!sample) {
        CHECK_STR_SAME(back.info.sampler_absent_reason, "sampling was turned off (--no-sample)", "--no-sample");
        CHECK_EQ_I(back.analysis.leaks.verdict, SPS_LEAK_UNKNOWN);
        CHECK_STR_HAS(back.analysis.bottleneck.evidence.why_cpu, "no sampler ran");
    }
    if (back.info.sampler) {
        const struct sps__sampler_result *r = back.info.sampler;
        CHECK(r->host[SPS_M_WORKLOAD_RSS_BYTES].count > 10);
        CHECK(r->sources[SPS_SOURCE_PROC].reads > 10);
        CHECK(r->nprocesses >= (kind == REAL_WORKER ? 2 : 1) && r->process[0].rss_bytes.count > 10);
        /* the series are on the zones' clock: after the run began */
        CHECK(r->host[SPS_M_WORKLOAD_RSS_BYTES].first_ns >= (int64_t)back.info.start_mono_ns);
        CHECK_EQ_I(back.analysis.leaks.verdict, SPS_LEAK_FOUND);
        /* the series that leaks (the worker's, or the tree's) reads back
         * with its rising slope; which one the verdict leads with depends
         * on how the busy machine sampled them */
        int rising = 0;
        for (size_t i = 0; i < back.analysis.leaks.nseries; i++)
            rising += back.analysis.leaks.series[i].verdict == SPS_LEAK_FOUND &&
                      back.analysis.leaks.series[i].slope > 0;
        CHECK(rising > 0);
        /* the summary's machine lines, from the model read back, are the
         * ones stepscope run printed from the live one */
        char *lines = summary_metrics_of(&back.info);
        CHECK_MSG(lines && lines[0] && strstr(summary, lines), "printed:\n%s\nread back:\n%s", summary,
                  lines ? lines : "");
        free(lines);
    }
    /* the sections as stepscope writes them, indented as in report.json */
    FILE *f = fopen(again, "w");
    struct sps_jw w;
    sps__jw_init(&w, f);
    sps__jw_object(&w, NULL);
    sps__jw_string(&w, "schema", SPS_REPORT_SCHEMA);
    sps__report_json_metrics(&w, &back.info, back.info.start_mono_ns);
    sps__analysis_json(&w, &back.analysis);
    sps__jw_end(&w, '}');
    fclose(f);
    size_t alen = 0, blen = 0;
    char *a = read_whole(path, &alen), *b = read_whole(again, &blen);
    const char *from_a = a ? strstr(a, "\n  \"metrics\": {") : NULL, *from_b = b ? strstr(b, "\n  \"metrics\": {") : NULL;
    CHECK(from_a && from_b);
    if (from_a && from_b)
        check_same_json(from_a, from_b, "the machine half and analysis written again");
    /* the tree's memory metric report.json names, from the sampler read back */
    const char *metric = a ? strstr(a, "\"workload_memory_metric\": \"") : NULL;
    CHECK(sample ? metric != NULL : metric == NULL);
    if (metric && back.info.sampler) {
        metric += strlen("\"workload_memory_metric\": \"");
        const char *name = sps_host_metric_info(sps__tree_memory_metric(back.info.sampler))->name;
        CHECK_MSG(!strncmp(metric, name, strlen(name)) && metric[strlen(name)] == '"', "%.40s vs %s", metric, name);
    }
    const char *started = a ? strstr(a, "\"started_mono_ns\": ") : NULL;
    analyses_agree(out, &back, started ? strtoull(started + strlen("\"started_mono_ns\": "), NULL, 10) : 0);
    free(a);
    free(b);
    free(summary);
    sps__report_free(&back);
}

/*
 * Every analysis run again on the run's records with the model read back
 * (the series, the record costs, the CPU count, the analysis config)
 * answers what report.json says it answered when the run was live: the
 * inputs are the ones the analysis saw.
 */
static void analyses_agree(const char *out, const struct sps_report *back, uint64_t started_mono_ns) {
    char records[700], err[512];
    snprintf(records, sizeof records, "%s/records", out);
    struct sps_run run;
    memset(&run, 0, sizeof run);
    int rc = sps__run_load_dir(&run, records, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", records, err);
    if (rc == 0 && (rc = sps__run_build(&run)) == 0) {
        /* one time origin, as stepscope run sets it (report.json's
         * started_mono_ns; the top level's reader reads it) */
        CHECK(started_mono_ns > 0 && run.start_ns >= started_mono_ns);
        run.start_ns = started_mono_ns;
        struct sps_leaks leaks;
        CHECK_EQ_I(sps__leaks_analyze(&run, back->info.sampler, &leaks), 0);
        check_leaks(&back->analysis.leaks, &leaks);
        sps__leaks_free(&leaks);
        struct sps_energy energy;
        sps__energy_analyze(&run, &back->info, back->info.analysis, &energy);
        check_energy(&back->analysis.energy, &energy);
        /* the bottleneck's evidence over the series, with the CPU count it
         * was judged with (the command's language comes from the records) */
        struct sps_bottleneck bottleneck;
        sps__bottleneck_analyze(&run, &back->info, &bottleneck);
        check_bottleneck(&back->analysis.bottleneck, &bottleneck);
        /* the cost, from the record costs and the sampler's time read back */
        struct sps_overhead overhead;
        sps__overhead_analyze(&run, &back->info, &overhead);
        check_overhead(&back->analysis.overhead, &overhead);
        struct sps_throughput throughput;
        CHECK_EQ_I(sps__throughput_analyze(&run, &back->info, back->info.analysis, &throughput), 0);
        check_throughput(&back->analysis.throughput, &throughput);
        sps__throughput_free(&throughput);
    }
    sps__run_free(&run);
}

static void test_real_run_writes_again(void) {
    real_run_writes_again(REAL_SAMPLED);
}

/* The same under --no-sample: no sampler, and every reason says so. */
static void test_unsampled_run_writes_again(void) {
    real_run_writes_again(REAL_UNSAMPLED);
}

/* The same with the leak in a forked worker, read at 20 ms: several
 * processes' series, and the leak named in the worker's. */
static void test_worker_run_writes_again(void) {
    real_run_writes_again(REAL_WORKER);
}

/*
 * A report.json written before the keys this reader added (series'
 * origin_mono_ns, sampler_started_s, tree_pid and last_s, overhead's
 * sampler_thread_wall_seconds) still reads: the points count from
 * started_mono_ns, a series ends at its last point, the sampler's thread
 * time comes from its share of a core.
 */
static void test_older_report_reads(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    rep.info.sampler = r;
    /* as stepscope run has them: the series count from when the run began,
     * which is started_mono_ns too */
    rep.info.start_mono_ns = rep.run.start_ns = (uint64_t)BASE_NS;
    fixture_analysis(&rep.analysis, r);
    const char *dir = tmpdir_new("sections-older");
    char path[1200], older[1200], err[512];
    snprintf(path, sizeof path, "%s/report.json", dir);
    snprintf(older, sizeof older, "%s/older.json", dir);
    CHECK_EQ_I(sps__report_json_write(&rep, path, err, sizeof err), 0);
    size_t len = 0, kept = 0, dropped = 0;
    char *text = read_whole(path, &len), *out = malloc(len + 1);
    static const char *const added[] = {"\"origin_mono_ns\":", "\"sampler_started_s\":", "\"tree_pid\":",
                                        "\"last_s\":", "\"sampler_thread_wall_seconds\":"};
    for (const char *line = text; line && *line;) {
        size_t l = strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n');
        int drop = 0;
        for (size_t k = 0; k < sizeof added / sizeof added[0]; k++)
            drop |= memmem(line, l, added[k], strlen(added[k])) != NULL;
        if (!drop) {
            memcpy(out + kept, line, l);
            kept += l;
        }
        dropped += (size_t)drop;
        line += l;
    }
    write_file(older, out, kept);
    CHECK(dropped > 10);
    struct sps_report back;
    int rc = read_sections(older, &back, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", older, err);
    if (rc == 0 && back.info.sampler) {
        const struct sps__sampler_result *b = back.info.sampler;
        const struct sps__series *x = &r->host[SPS_M_WORKLOAD_CPU_PERCENT], *y = &b->host[SPS_M_WORKLOAD_CPU_PERCENT];
        CHECK_EQ_U(x->count, y->count);
        CHECK(y->count == x->count && x->points[7].t_ns == y->points[7].t_ns);
        CHECK_EQ_I(y->first_ns, x->first_ns);
        CHECK_EQ_I(y->last_ns, y->points[y->count - 1].t_ns); /* no last_s: the last point's time */
        CHECK_EQ_I(b->tree_pid, 0);
        CHECK_EQ_I(b->started_ns, 0);
        CHECK_NEAR((double)b->thread_ns_total, (double)r->thread_ns_total, 1e3); /* from the share of a core */
        CHECK_EQ_I(b->process[1].first_seen_ns, r->process[1].first_seen_ns);
    }
    CHECK(back.info.sampler != NULL);
    sps__report_free(&back);
    free(text);
    free(out);
    sps__analysis_free(&rep.analysis);
    sps__sampler_result_free(r);
}

/* A malformed section fails with the reason and where, never half-read
 * silently. */
static void test_malformed_sections_fail(void) {
    static const struct {
        const char *json, *says;
    } cases[] = {
        {"{\"series\": {\"interval_ms\": 100, \"metrics\": [{\"metric\": \"workload_cpu_percent\", \"t_s\": [0, 1], "
         "\"mean\": [1], \"max\": [1, 2]}]}}",
         "t_s, mean and max of one length"},
        {"{\"series\": {\"interval_ms\": 100, \"metrics\": [{\"metric\": \"no_such_metric\", \"t_s\": [0], "
         "\"mean\": [1], \"max\": [1]}]}}",
         "lists"},
        {"{\"metrics\": {\"workload_cpu_percent\": {\"samples\": -3}}}",
         "\"samples\": -3 is out of range: a count from 0"},
        {"{\"sources\": [{\"name\": \"proc\", \"tried\": \"yes\"}]}", "true or false"},
        {"{\"analysis\": {\"bottleneck\": {\"verdict\": \"slow\"}}}", "a name stepscope writes"},
        {"{\"analysis\": {\"throughput\": {\"counters\": [], \"flops\": {\"counter\": \"flops\"}}}}",
         "a counter that"},
        {"{\"analysis\": {\"leaks\": {\"series\": [{\"scope\": \"galaxy\"}]}}}", "a name stepscope writes"},
        {"{\"gpus\": [{\"index\": \"zero\"}]}", "an integer or null"},
    };
    const char *dir = tmpdir_new("sections-bad");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1200], err[512];
        snprintf(path, sizeof path, "%s/bad%zu.json", dir, i);
        write_file(path, cases[i].json, strlen(cases[i].json));
        struct sps_report rep;
        int rc = read_sections(path, &rep, err, sizeof err);
        CHECK_MSG(rc == SPS_EFORMAT, "case %zu: rc %d", i, rc);
        CHECK_STR_HAS(err, cases[i].says);
        CHECK_MSG(strncmp(err, "1:", 2) == 0, "case %zu: where: %s", i, err);
        sps__report_free(&rep);
    }
}

/* report.json cut short anywhere in the sections fails with a reason,
 * never a crash, and leaves nothing behind (the sanitizer builds check
 * every error path's frees). */
static void test_truncated_report_fails_cleanly(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    rep.info.sampler = r;
    fixture_analysis(&rep.analysis, r);
    const char *dir = tmpdir_new("sections-cut");
    char path[1200], cut[1200], err[512];
    snprintf(path, sizeof path, "%s/report.json", dir);
    snprintf(cut, sizeof cut, "%s/cut.json", dir);
    CHECK_EQ_I(sps__report_json_write(&rep, path, err, sizeof err), 0);
    size_t len = 0;
    char *text = read_whole(path, &len);
    const char *machine = text ? strstr(text, "\n  \"metrics\": {") : NULL;
    CHECK(machine != NULL);
    size_t from = machine ? (size_t)(machine - text) : len, failed = 0, tried = 0;
    /* every 211th byte from the machine half on: inside keys, strings,
     * numbers, arrays of points and the analysis */
    for (size_t at = from; at < len - 2; at += 211, tried++) {
        write_file(cut, text, at);
        struct sps_report back;
        int rc = read_sections(cut, &back, err, sizeof err);
        failed += rc == SPS_EFORMAT && err[0];
        if (rc != SPS_EFORMAT)
            CHECK_MSG(0, "cut at %zu of %zu: rc %d (%s)", at, len, rc, err);
        sps__report_free(&back);
    }
    CHECK(tried > 100);
    CHECK_EQ_U(failed, tried);
    free(text);
    sps__analysis_free(&rep.analysis);
    sps__sampler_result_free(r);
}

int main(void) {
    RUN_TEST(test_known_model_round_trips);
    RUN_TEST(test_time_axis_leaks_round_trip);
    RUN_TEST(test_unsampled_says_why);
    RUN_TEST(test_malformed_sections_fail);
    RUN_TEST(test_truncated_report_fails_cleanly);
    RUN_TEST(test_older_report_reads);
    RUN_TEST(test_real_run_writes_again);
    RUN_TEST(test_unsampled_run_writes_again);
    RUN_TEST(test_worker_run_writes_again);
    return check_report();
}
