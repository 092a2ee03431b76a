/*
 * bottleneck.c - what limits the step (see bottleneck.h and
 * docs/analysis.md, "Bottleneck").
 */
#include "analysis/bottleneck.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/run_info.h"
#include "model/run.h"
#include "sampler/sampler.h"
#include "stepscope.h"

/* At most this many zone names count as data loading (the first found). */
#define MAX_DATA_NAMES 64

/* ---------------------------------------------------------------- names */

static const char *const DATA_TOKENS[] = {"data", "dataloader", "dataloading", "loader", "load",
                                          "loading", "fetch", "input", "inputs"};

int sps__bn_is_data_zone(const char *name) {
    /* tokens rather than substrings: "load_batch" and "DataLoader.next"
     * are data loading, "download_weights" and "payload" are not */
    char token[SPS_REC_NAME_LEN];
    size_t len = 0;
    for (const char *c = name;; c++) {
        if (*c && isalnum((unsigned char)*c)) {
            if (len + 1 < sizeof token)
                token[len++] = (char)tolower((unsigned char)*c);
            continue;
        }
        token[len] = '\0';
        for (size_t i = 0; len && i < sizeof DATA_TOKENS / sizeof *DATA_TOKENS; i++)
            if (strcmp(token, DATA_TOKENS[i]) == 0)
                return 1;
        len = 0;
        if (!*c)
            return 0;
    }
}

void sps__bn_evidence_init(struct sps_bn_evidence *e) {
    memset(e, 0, sizeof *e);
    e->step_mean_seconds = e->data_loading_percent = NAN;
    e->gpu_utilization_mean_percent = e->gpu_utilization_p10_percent = e->gpu_utilization_p90_percent = NAN;
    e->gpu_throttled_percent = e->gpu_power_capped_percent = NAN;
    e->gpu_temperature_max_celsius = e->gpu_sm_clock_drop_percent = NAN;
    e->workload_cpu_mean_percent = e->workload_cpu_percent_of_machine = NAN;
    e->system_cpu_mean_percent = e->system_iowait_mean_percent = NAN;
    e->workload_disk_read_mean_bytes_per_second = NAN;
    e->system_memory_total_bytes = e->system_memory_available_min_percent = NAN;
    e->system_swap_used_max_bytes = e->system_swap_growth_bytes = NAN;
    e->workload_run_delay_mean_percent = e->workload_cpu_wait_percent = e->cpu_pressure_some_mean_percent = NAN;
    e->top_zone_percent = NAN;
}

/* ------------------------------------------------------------------ face */

/* Is path's base name a Python interpreter's (python, python3,
 * python3.11, pypy3, python3-dbg)? */
static int is_python(const char *path) {
    if (!path)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "python", 6) == 0 || strncmp(base, "pypy", 4) == 0;
}

enum sps_bn_face sps__bn_face_of(const struct sps_run *run, int argc, char *const *argv) {
    int recorded = 0;
    for (size_t i = 0; run && i < run->nprocs; i++) {
        const struct sps_process_data *p = &run->procs[i];
        if (p->argc > 0 && is_python(p->argv[0]))
            return SPS_BN_FACE_PYTHON;
        recorded = 1;
    }
    if (recorded)
        return SPS_BN_FACE_C;
    return argc > 0 && argv && is_python(argv[0]) ? SPS_BN_FACE_PYTHON : SPS_BN_FACE_UNKNOWN;
}

int sps__bn_torch_seen(const struct sps_run *run) {
    for (size_t i = 0; run && i < run->nprocs; i++)
        if (run->procs[i].hook_zones || run->procs[i].hook_counts)
            return 1;
    static const char *const torch_zones[] = {"forward", "backward", "optimizer", "torch"};
    for (size_t k = 0; run && k < run->nnames; k++) {
        if (run->names[k].kind != SPS_KIND_ZONE)
            continue;
        for (size_t t = 0; t < sizeof torch_zones / sizeof *torch_zones; t++)
            if (strncmp(run->names[k].name, torch_zones[t], strlen(torch_zones[t])) == 0)
                return 1;
    }
    return 0;
}

/* -------------------------------------------------------- sampler evidence */

/* A span of time on the monotonic clock, or the whole sampling.  With
 * fallback, a series with no reading in the span is taken whole: a run
 * shorter than the machine interval has its machine readings around its
 * steps, not among them. */
struct span {
    int all;
    int64_t a, b;
    int fallback;
};

/* What one series says over a span. */
struct span_stats {
    uint64_t n; /* readings */
    double mean, min, max, first;
    uint32_t lo, hi; /* the points used: [lo, hi) */
};

/*
 * The points of s that describe span: those whose first reading falls in
 * [a, b].  A span shorter than the series' resolution may hold none; then
 * the first point after b counts, when it follows within one point's
 * length (cover_ns), because a reading (a rate, NVML's utilisation)
 * describes the time just before it.  The whole sampling uses the series'
 * exact statistics.  min is the least point mean (exact while a point
 * holds one reading).
 */
static struct span_stats span_stats_of(const struct sps__series *s, const struct span *sp, int64_t cover_ns) {
    struct span_stats st = {0, NAN, NAN, NAN, NAN, 0, 0};
    if (s->n == 0 || !s->points)
        return st;
    uint32_t lo = 0, hi = s->count;
    if (!sp->all) {
        while (lo < s->count && s->points[lo].t_ns < sp->a)
            lo++;
        hi = lo;
        while (hi < s->count && s->points[hi].t_ns <= sp->b)
            hi++;
        if (lo == hi && lo < s->count && s->points[lo].t_ns - sp->b <= cover_ns * (int64_t)s->per_point)
            hi = lo + 1;
    }
    if (lo == hi && sp->fallback) {
        struct span whole = {1, 0, 0, 0};
        return span_stats_of(s, &whole, cover_ns);
    }
    st.lo = lo;
    st.hi = hi;
    if (lo == hi)
        return st;
    double sum = 0;
    st.min = INFINITY;
    st.max = -INFINITY;
    for (uint32_t i = lo; i < hi; i++) {
        const struct sps__series_point *p = &s->points[i];
        st.n += p->n;
        sum += p->mean * p->n;
        st.min = fmin(st.min, p->mean);
        st.max = fmax(st.max, p->max);
    }
    st.mean = sum / (double)st.n;
    st.first = s->points[lo].mean;
    if (sp->all) { /* exact */
        st.n = s->n;
        st.mean = s->sum / (double)s->n;
        st.min = s->min;
        st.max = s->max;
    }
    return st;
}

static int64_t cover_ns(const struct sps__sampler_result *r, int machine) {
    int ms = machine ? r->machine_interval_ms : r->interval_ms;
    if (ms <= 0)
        ms = machine ? SPS_SAMPLER_DEFAULT_MACHINE_MS : SPS_SAMPLER_DEFAULT_INTERVAL_MS;
    return (int64_t)ms * 1000000;
}

static struct span_stats host_stats(const struct sps__sampler_result *r, int metric, const struct span *sp) {
    const struct sps_metric_info *mi = sps_host_metric_info(metric);
    return span_stats_of(&r->host[metric], sp, cover_ns(r, mi && mi->cadence == SPS_EVERY_MACHINE_INTERVAL));
}

/* The p-th percentile (0..100) of a 1%-bin histogram of percentages. */
static double hist_percentile(const double *bins, double total, double p) {
    double want = total * p / 100, seen = 0;
    for (int i = 0; i <= 100; i++) {
        seen += bins[i];
        if (seen >= want && seen > 0)
            return i;
    }
    return 100;
}

static void gpu_evidence(const struct sps__sampler_result *r, const struct span *sp, struct sps_bn_evidence *e) {
    double bins[101] = {0}, util_sum = 0, util_n = 0;
    double thr_n = 0, cap_n = 0, reason_n = 0;
    int64_t machine = cover_ns(r, 1);
    for (int g = 0; g < r->ngpus && g < SPS_CAPTURE_MAX_GPUS; g++) {
        const struct sps__gpu_series *gs = &r->gpu[g];
        struct span_stats u = span_stats_of(&gs->m[SPS_M_GPU_UTILIZATION_PERCENT], sp, machine);
        if (u.n == 0)
            continue;
        e->gpus++;
        util_sum += u.mean * (double)u.n;
        util_n += (double)u.n;
        const struct sps__series *us = &gs->m[SPS_M_GPU_UTILIZATION_PERCENT];
        for (uint32_t i = u.lo; i < u.hi; i++) {
            double m = us->points[i].mean;
            int bin = m <= 0 ? 0 : m >= 100 ? 100 : (int)lrint(m);
            bins[bin] += us->points[i].n;
        }
        struct span_stats t = span_stats_of(&gs->m[SPS_M_GPU_TEMPERATURE_CELSIUS], sp, machine);
        if (t.n)
            e->gpu_temperature_max_celsius = sps__bn_known(e->gpu_temperature_max_celsius)
                                                 ? fmax(e->gpu_temperature_max_celsius, t.max)
                                                 : t.max;
        struct span_stats c = span_stats_of(&gs->m[SPS_M_GPU_SM_CLOCK_HERTZ], sp, machine);
        if (c.n && c.max > 0) {
            double drop = 100 * (1 - c.mean / c.max);
            e->gpu_sm_clock_drop_percent =
                sps__bn_known(e->gpu_sm_clock_drop_percent) ? fmax(e->gpu_sm_clock_drop_percent, drop) : drop;
        }
        /* A point's max stands for its readings' reasons: exact while a
         * point holds one reading (the first 512 machine intervals), an
         * approximation of their OR after the series has merged points. */
        const struct sps__series *ts = &gs->m[SPS_M_GPU_THROTTLE_REASONS];
        struct span_stats tr = span_stats_of(ts, sp, machine);
        for (uint32_t i = tr.lo; tr.n && i < tr.hi; i++) {
            uint32_t bits = (uint32_t)ts->points[i].max;
            e->gpu_throttle_reasons_seen |= bits;
            reason_n += ts->points[i].n;
            if (bits & SPS_BN_THROTTLE_SLOWDOWN)
                thr_n += ts->points[i].n;
            if (bits & SPS_BN_THROTTLE_SW_POWER_CAP)
                cap_n += ts->points[i].n;
        }
    }
    if (e->gpus == 0) {
        e->why_gpu = r->ngpus == 0 ? "no GPU was found" : "no GPU utilisation reading in this span";
        e->why_throttle = e->why_gpu;
        return;
    }
    e->gpu_utilization_mean_percent = util_sum / util_n;
    e->gpu_utilization_p10_percent = hist_percentile(bins, util_n, 10);
    e->gpu_utilization_p90_percent = hist_percentile(bins, util_n, 90);
    if (reason_n > 0) {
        e->gpu_throttled_percent = 100 * thr_n / reason_n;
        e->gpu_power_capped_percent = 100 * cap_n / reason_n;
    } else {
        e->why_throttle = "the GPU source gives no throttle reasons (only NVML does)";
    }
}

/* Run delay and CPU pressure over the span; the share of the tree's
 * runnable time spent waiting, from the run delay and the CPU time over
 * the same span (both rates per wall second). */
static void contention_evidence(const struct sps__sampler_result *r, const struct span *sp,
                                struct sps_bn_evidence *e) {
    struct span_stats delay = host_stats(r, SPS_M_WORKLOAD_RUN_DELAY_PERCENT, sp);
    double busy = e->workload_cpu_mean_percent;
    if (!delay.n && !sp->all && !sp->fallback && r->host[SPS_M_WORKLOAD_RUN_DELAY_PERCENT].n) {
        /* a window shorter than the machine interval, after the last
         * reading: it takes the whole sampling's run delay and CPU, said
         * so, rather than a wait share mixing two spans */
        struct span whole = {1, 0, 0, 0};
        delay = host_stats(r, SPS_M_WORKLOAD_RUN_DELAY_PERCENT, &whole);
        busy = host_stats(r, SPS_M_WORKLOAD_CPU_PERCENT, &whole).mean;
        e->contention_whole_run = 1;
    }
    e->run_delay_readings = delay.n;
    if (delay.n) {
        e->workload_run_delay_mean_percent = delay.mean;
        if (sps__bn_known(busy) && delay.mean + busy > 0)
            e->workload_cpu_wait_percent = 100 * delay.mean / (delay.mean + busy);
    } else {
        e->why_run_delay = r->sources[SPS_SOURCE_SCHED].available
                               ? (r->host[SPS_M_WORKLOAD_RUN_DELAY_PERCENT].n ? "no run delay reading in this span"
                                                                             : "the sched source gave no reading")
                               : "the sched source is unavailable (see stepscope doctor)";
    }
    struct span_stats pressure = host_stats(r, SPS_M_CPU_PRESSURE_SOME_PERCENT, sp);
    e->cpu_pressure_some_mean_percent = pressure.mean;
    if (!pressure.n)
        e->why_pressure = r->host[SPS_M_CPU_PRESSURE_SOME_PERCENT].n
                              ? "no CPU pressure reading in this span"
                              : "no CPU pressure readings (a kernel without PSI, or the sched source is unavailable: "
                                "see stepscope doctor)";
}

static void sampler_evidence(const struct sps__sampler_result *r, const struct span *sp, int cpu_count,
                             const char *why_sampler, struct sps_bn_evidence *e) {
    e->cpu_count = cpu_count > 0 ? cpu_count : 0;
    if (cpu_count <= 0)
        e->why_cpu_count = "the machine's CPU count is unknown";
    if (!r) {
        e->why_sampler = why_sampler ? why_sampler : "no sampler ran";
        e->why_cpu = e->why_system = e->why_disk = e->why_memory = e->why_gpu = e->why_throttle = e->why_run_delay =
            e->why_pressure = "no machine readings (no sampler ran)";
        return;
    }
    struct span_stats cpu = host_stats(r, SPS_M_WORKLOAD_CPU_PERCENT, sp);
    e->cpu_readings = cpu.n;
    if (cpu.n) {
        e->workload_cpu_mean_percent = cpu.mean;
        if (cpu_count > 0)
            e->workload_cpu_percent_of_machine = cpu.mean / cpu_count;
    } else {
        e->why_cpu = r->host[SPS_M_WORKLOAD_CPU_PERCENT].n ? "no workload CPU reading in this span"
                                                           : "the workload's CPU was not read";
    }
    struct span_stats sys = host_stats(r, SPS_M_SYSTEM_CPU_PERCENT, sp);
    struct span_stats iow = host_stats(r, SPS_M_SYSTEM_IOWAIT_PERCENT, sp);
    e->machine_readings = sys.n;
    e->system_cpu_mean_percent = sys.mean;
    e->system_iowait_mean_percent = iow.mean;
    if (!sys.n || !iow.n)
        e->why_system = r->host[SPS_M_SYSTEM_CPU_PERCENT].n ? "no system CPU reading in this span"
                                                            : "the system's CPU was not read";
    struct span_stats disk = host_stats(r, SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND, sp);
    e->workload_disk_read_mean_bytes_per_second = disk.mean;
    if (!disk.n)
        e->why_disk = r->host[SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND].n
                          ? "no disk read reading in this span"
                          : "the workload's disk reads were not read (an unreadable /proc/PID/io, or no rate yet)";
    struct span_stats total = host_stats(r, SPS_M_SYSTEM_MEMORY_TOTAL_BYTES, sp);
    struct span_stats avail = host_stats(r, SPS_M_SYSTEM_MEMORY_AVAILABLE_BYTES, sp);
    struct span_stats swap = host_stats(r, SPS_M_SYSTEM_SWAP_USED_BYTES, sp);
    if (total.n && total.max > 0) {
        e->system_memory_total_bytes = total.max;
        if (avail.n)
            e->system_memory_available_min_percent = 100 * avail.min / total.max;
    }
    if (swap.n) {
        e->system_swap_used_max_bytes = swap.max;
        e->system_swap_growth_bytes = fmax(0.0, swap.max - swap.first);
    }
    if (!sps__bn_known(e->system_memory_available_min_percent) || !swap.n)
        e->why_memory = r->host[SPS_M_SYSTEM_MEMORY_TOTAL_BYTES].n ? "no memory reading in this span"
                                                                   : "the system's memory was not read";
    contention_evidence(r, sp, e);
    gpu_evidence(r, sp, e);
}

/* ----------------------------------------------------------- step evidence */

/* Which step rows: the main name's, on every stream or on one, after
 * warm-up (or all of them), and of those the from-th to the to-th. */
struct selection {
    long name;
    int one_stream;
    size_t process;
    int tid;
    int with_warmup;
    size_t from, to;
};

struct selected {
    size_t n;
    double seconds, data_seconds;
    uint64_t start_ns, end_ns;
    uint64_t first_index, last_index;
};

/* zone_seconds (run->nnames entries, zeroed by the caller, or NULL): each
 * zone's self time inside the selected steps, capped at each step's length */
static struct selected select_rows(const struct sps_run *run, const struct selection *sel, const long *data,
                                   size_t ndata, double *zone_seconds) {
    struct selected out = {0, 0, 0, UINT64_MAX, 0, 0, 0};
    size_t ordinal = 0;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *row = &run->steps[i];
        if (row->name != sel->name || (row->warmup && !sel->with_warmup))
            continue;
        if (sel->one_stream && (row->process != sel->process || row->tid != sel->tid))
            continue;
        size_t k = ordinal++;
        if (k < sel->from || k >= sel->to)
            continue;
        if (out.n == 0)
            out.first_index = row->index;
        out.last_index = row->index;
        out.n++;
        double d = row->end_ns > row->start_ns ? (double)(row->end_ns - row->start_ns) * 1e-9 : 0.0;
        out.seconds += d;
        double in_data = 0;
        for (size_t z = 0; z < ndata; z++)
            if (row->by_name && sps__bn_known(row->by_name[data[z]]))
                in_data += row->by_name[data[z]];
        /* zones of other threads (loader threads) also start inside the
         * step: the step cannot wait longer than it lasts */
        out.data_seconds += fmin(in_data, d);
        for (size_t z = 0; zone_seconds && row->by_name && z < run->nnames; z++)
            if (run->names[z].kind == SPS_KIND_ZONE && sps__bn_known(row->by_name[z]))
                zone_seconds[z] += fmin(row->by_name[z], d);
        if (row->start_ns < out.start_ns)
            out.start_ns = row->start_ns;
        if (row->end_ns > out.end_ns)
            out.end_ns = row->end_ns;
    }
    return out;
}

static void step_evidence(const struct selected *s, size_t ndata, struct sps_bn_evidence *e) {
    e->steps = s->n;
    if (s->n == 0) {
        e->why_steps = e->why_data = "no steps recorded";
        return;
    }
    e->step_mean_seconds = s->seconds / (double)s->n;
    if (ndata == 0)
        e->why_data = "no zone named like data loading (see docs/analysis.md)";
    else if (s->seconds > 0)
        e->data_loading_percent = 100 * s->data_seconds / s->seconds;
    else
        e->why_data = "the steps took no measurable time";
}

/* ---------------------------------------------------------------- analysis */

void sps__bottleneck_analyze(const struct sps_run *run, const struct sps_run_info *info, struct sps_bottleneck *out) {
    enum sps_bn_face face = sps__bn_face_of(run, info ? info->argc : 0, info ? info->argv : NULL);
    sps__bottleneck_analyze_parts(run, info ? info->sampler : NULL, info ? info->cpu_count : 0, face,
                                  info ? info->sampler_absent_reason : NULL, out);
}

/* The zone (not a data zone) with the most self time in the steps: a step
 * that spends most of its time in one zone while the CPU idles waits there. */
static void top_zone_evidence(const struct sps_run *run, const double *zone_seconds, const long *data,
                              size_t ndata, double step_seconds, struct sps_bn_evidence *e) {
    if (!zone_seconds || !(step_seconds > 0))
        return;
    long best = -1;
    for (size_t k = 0; k < run->nnames; k++) {
        int is_data = 0;
        for (size_t z = 0; z < ndata; z++)
            is_data |= data[z] == (long)k;
        if (!is_data && zone_seconds[k] > 0 && (best < 0 || zone_seconds[k] > zone_seconds[best]))
            best = (long)k;
    }
    if (best < 0)
        return;
    e->top_zone_percent = fmin(100.0, 100 * zone_seconds[best] / step_seconds);
    memcpy(e->top_zone, run->names[best].name, sizeof e->top_zone);
    e->top_zone[sizeof e->top_zone - 1] = '\0';
}

void sps__bottleneck_analyze_parts(const struct sps_run *run, const struct sps__sampler_result *sampler,
                                   int cpu_count, enum sps_bn_face face, const char *why_sampler,
                                   struct sps_bottleneck *out) {
    memset(out, 0, sizeof *out);
    out->computed = 1;
    out->face = face;
    sps__bn_evidence_init(&out->evidence);
    out->evidence.face = face;

    long data[MAX_DATA_NAMES];
    size_t ndata = 0;
    long main_name = -1;
    size_t main_rows = 0;
    for (size_t k = 0; run && k < run->nnames; k++) {
        const struct sps_name_summary *ns = &run->names[k];
        if (ns->kind == SPS_KIND_ZONE && ndata < MAX_DATA_NAMES && sps__bn_is_data_zone(ns->name)) {
            if (out->ndata_zones < SPS_BN_MAX_DATA_ZONES)
                memcpy(out->data_zones[out->ndata_zones++], ns->name, sizeof ns->name);
            data[ndata++] = (long)k;
        }
        if (ns->kind != SPS_KIND_STEP)
            continue;
        /* the main step: the step name with the most rows (a run's loop
         * has a handful of step names at most) */
        size_t rows = 0;
        for (size_t i = 0; i < run->nsteps; i++)
            rows += run->steps[i].name == (long)k;
        if (rows > main_rows) {
            main_rows = rows;
            main_name = (long)k;
        }
    }

    /* the run: the main step's rows after warm-up, on every stream */
    struct selection sel = {main_name, 0, 0, 0, 0, 0, SIZE_MAX};
    struct selected all = {0, 0, 0, UINT64_MAX, 0, 0, 0};
    double *zone_seconds = run && run->nnames ? calloc(run->nnames, sizeof *zone_seconds) : NULL;
    if (main_name >= 0) {
        memcpy(out->main_step, run->names[main_name].name, sizeof out->main_step);
        all = select_rows(run, &sel, data, ndata, zone_seconds);
        if (all.n == 0) { /* cannot happen (warm-up is at most a fifth); kept for safety */
            sel.with_warmup = 1;
            if (zone_seconds)
                memset(zone_seconds, 0, run->nnames * sizeof *zone_seconds);
            all = select_rows(run, &sel, data, ndata, zone_seconds);
        }
    }
    step_evidence(&all, ndata, &out->evidence);
    top_zone_evidence(run, zone_seconds, data, ndata, all.seconds, &out->evidence);
    free(zone_seconds);
    out->evidence.torch = sps__bn_torch_seen(run);
    struct span sp = {1, 0, 0, 0};
    if (all.n) /* the steps' span: start-up and teardown are not the step's bottleneck */
        sp = (struct span){0, (int64_t)all.start_ns, (int64_t)all.end_ns, 1};
    sampler_evidence(sampler, &sp, cpu_count, why_sampler, &out->evidence);
    sps__bn_classify(&out->evidence, &out->verdict);

    /* the windows: the main stream (the thread with the most main steps),
     * cut by step count into up to SPS_BN_MAX_WINDOWS equal windows of at
     * least 3 steps */
    if (main_name < 0) {
        out->windows_note = "no steps recorded";
        return;
    }
    size_t best = 0, best_process = 0;
    int best_tid = 0;
    for (size_t i = 0; i < run->nsteps;) {
        size_t j = i, n = 0;
        while (j < run->nsteps && run->steps[j].process == run->steps[i].process &&
               run->steps[j].tid == run->steps[i].tid) {
            n += run->steps[j].name == main_name && (!run->steps[j].warmup || sel.with_warmup);
            j++;
        }
        if (n > best) {
            best = n;
            best_process = run->steps[i].process;
            best_tid = run->steps[i].tid;
        }
        i = j;
    }
    size_t nwin = best >= 3 * SPS_BN_MAX_WINDOWS ? SPS_BN_MAX_WINDOWS : best / 3;
    if (nwin == 0) {
        out->windows_note = "fewer than 3 steps after warm-up";
        return;
    }
    for (size_t w = 0; w < nwin; w++) {
        struct selection ws = {main_name, 1, best_process, best_tid, sel.with_warmup, w * best / nwin,
                               (w + 1) * best / nwin};
        double *win_zones = calloc(run->nnames, sizeof *win_zones);
        struct selected s = select_rows(run, &ws, data, ndata, win_zones);
        struct sps_bn_window *win = &out->windows[out->nwindows++];
        win->first_step = s.first_index;
        win->last_step = s.last_index;
        win->start_seconds = (double)((int64_t)s.start_ns - (int64_t)run->start_ns) * 1e-9;
        win->end_seconds = (double)((int64_t)s.end_ns - (int64_t)run->start_ns) * 1e-9;
        sps__bn_evidence_init(&win->evidence);
        win->evidence.face = face;
        win->evidence.torch = out->evidence.torch;
        step_evidence(&s, ndata, &win->evidence);
        top_zone_evidence(run, win_zones, data, ndata, s.seconds, &win->evidence);
        free(win_zones);
        struct span wsp = {0, (int64_t)s.start_ns, (int64_t)s.end_ns, 0};
        sampler_evidence(sampler, &wsp, cpu_count, why_sampler, &win->evidence);
        sps__bn_classify(&win->evidence, &win->verdict);
    }
}

/* ------------------------------------------------------- evidence figures */

/* One figure into the list: its reason only when it is unknown. */
static void figure(struct sps_bn_figure *out, size_t *n, const char *key, double v, const char *why,
                   int integral) {
    out[(*n)++] = (struct sps_bn_figure){key, v, isnan(v) ? (why ? why : "not read") : NULL, integral};
}

size_t sps__bn_evidence_figures(const struct sps_bn_evidence *e, struct sps_bn_figure out[SPS_BN_FIGURES]) {
    size_t n = 0;
    figure(out, &n, "steps", (double)e->steps, NULL, 1);
    figure(out, &n, "step_mean_seconds", e->step_mean_seconds, e->why_steps, 0);
    figure(out, &n, "data_loading_percent", e->data_loading_percent, e->why_data, 0);
    figure(out, &n, "top_zone_percent", e->top_zone_percent,
           e->why_steps ? e->why_steps : "no zone other than data loading zones in the steps", 0);
    figure(out, &n, "gpus", e->gpus, NULL, 1);
    figure(out, &n, "gpu_utilization_mean_percent", e->gpu_utilization_mean_percent, e->why_gpu, 0);
    figure(out, &n, "gpu_utilization_p10_percent", e->gpu_utilization_p10_percent, e->why_gpu, 0);
    figure(out, &n, "gpu_utilization_p90_percent", e->gpu_utilization_p90_percent, e->why_gpu, 0);
    figure(out, &n, "gpu_throttled_percent", e->gpu_throttled_percent, e->why_throttle, 0);
    figure(out, &n, "gpu_power_capped_percent", e->gpu_power_capped_percent, e->why_throttle, 0);
    figure(out, &n, "gpu_throttle_reasons_seen",
           sps__bn_known(e->gpu_throttled_percent) ? (double)e->gpu_throttle_reasons_seen : NAN, e->why_throttle, 1);
    figure(out, &n, "gpu_temperature_max_celsius", e->gpu_temperature_max_celsius,
           e->why_gpu ? e->why_gpu : "the GPU source gives no temperature", 0);
    figure(out, &n, "gpu_sm_clock_drop_percent", e->gpu_sm_clock_drop_percent,
           e->why_gpu ? e->why_gpu : "the GPU source gives no SM clock", 0);
    figure(out, &n, "workload_cpu_mean_percent", e->workload_cpu_mean_percent, e->why_cpu, 0);
    figure(out, &n, "cpu_count", e->cpu_count > 0 ? e->cpu_count : NAN, e->why_cpu_count, 0);
    figure(out, &n, "workload_cpu_percent_of_machine", e->workload_cpu_percent_of_machine,
           e->why_cpu ? e->why_cpu : e->why_cpu_count, 0);
    figure(out, &n, "system_cpu_mean_percent", e->system_cpu_mean_percent, e->why_system, 0);
    figure(out, &n, "system_iowait_mean_percent", e->system_iowait_mean_percent, e->why_system, 0);
    figure(out, &n, "workload_disk_read_mean_bytes_per_second", e->workload_disk_read_mean_bytes_per_second,
           e->why_disk, 0);
    figure(out, &n, "system_memory_total_bytes", e->system_memory_total_bytes, e->why_memory, 0);
    figure(out, &n, "system_memory_available_min_percent", e->system_memory_available_min_percent, e->why_memory, 0);
    figure(out, &n, "system_swap_used_max_bytes", e->system_swap_used_max_bytes, e->why_memory, 0);
    figure(out, &n, "system_swap_growth_bytes", e->system_swap_growth_bytes, e->why_memory, 0);
    figure(out, &n, "workload_run_delay_mean_percent", e->workload_run_delay_mean_percent, e->why_run_delay, 0);
    figure(out, &n, "workload_cpu_wait_percent", e->workload_cpu_wait_percent,
           e->why_run_delay ? e->why_run_delay : e->why_cpu, 0);
    figure(out, &n, "cpu_pressure_some_mean_percent", e->cpu_pressure_some_mean_percent, e->why_pressure, 0);
    figure(out, &n, "cpu_readings", (double)e->cpu_readings, NULL, 1);
    figure(out, &n, "machine_readings", (double)e->machine_readings, NULL, 1);
    figure(out, &n, "run_delay_readings", (double)e->run_delay_readings, NULL, 1);
    return n;
}

