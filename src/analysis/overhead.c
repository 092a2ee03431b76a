/*
 * overhead.c - stepscope's own cost (see overhead.h).
 */
#include <math.h>

#include "analysis/overhead.h"
#include "model/run_info.h"
#include "model/run.h"
#include "record_format.h"
#include "sampler/sampler.h"

/* report.json's names of the kinds (analysis.overhead.recording_by_kind) */
static const char *const kind_names[SPS_OH_KINDS] = {
    [SPS_OH_ZONES] = "zones",
    [SPS_OH_PY_ZONES] = "python_zones",
    [SPS_OH_HOOKS] = "instrument_hooks",
    [SPS_OH_VALUES] = "values",
    [SPS_OH_PY_VALUES] = "python_values",
    [SPS_OH_PY_COUNTS] = "python_counts",
    [SPS_OH_THINNED] = "thinned",
};

const char *sps__overhead_kind_name(enum sps_overhead_kind kind) {
    return (unsigned)kind < SPS_OH_KINDS ? kind_names[kind] : "unknown";
}

/* Add n of a kind that cost cost_ns each (0 or less: not measured). */
static void add_part(struct sps_overhead_part *part, uint64_t n, double cost_ns) {
    part->count += n;
    if (!(cost_ns > 0))
        part->unpriced += n;
    else
        part->s += (double)n * cost_ns * 1e-9;
}

/* What the run's caches added to a zone: the recorder's samples of an
 * end in the run, pooled over the processes, less the same samples in the
 * warm measurement; 0 when either is missing or the run's came out less. */
static double end_excess_ns(struct sps_overhead *out, const struct sps_run *run, const struct sps_run_info *info) {
    uint64_t ns = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        out->zone_end_samples += run->procs[i].end_samples;
        out->zone_end_samples_dropped += run->procs[i].end_samples_dropped;
        ns += run->procs[i].end_sample_ns;
    }
    out->zone_end_in_run_ns = out->zone_end_samples ? (double)ns / (double)out->zone_end_samples : NAN;
    out->zone_end_warm_ns = info->have_record_cost && info->warm_end_ns > 0 ? info->warm_end_ns : NAN;
    double excess = out->zone_end_in_run_ns - out->zone_end_warm_ns;
    return excess > 0 ? excess : 0;
}

/* The library's work: every process's at the costs measured at run end,
 * a zone's with what the run's caches added to its end. */
static void price_library(struct sps_overhead *out, const struct sps_run *run, const struct sps_run_info *info) {
    double zone = NAN, value = NAN, thinned = NAN;
    double excess = end_excess_ns(out, run, info);
    if (info->have_record_cost) {
        zone = info->zone_cost_ns + excess;
        value = info->value_cost_ns;
        thinned = info->thinned_zone_cost_ns;
    }
    add_part(&out->part[SPS_OH_ZONES], out->zones_recorded, zone);
    add_part(&out->part[SPS_OH_VALUES], out->values_recorded, value);
    add_part(&out->part[SPS_OH_THINNED], out->zones_thinned, thinned);
}

/* Python's work on top: each process at the costs it measured itself. */
static void price_python(struct sps_overhead *out, const struct sps_run *run) {
    for (size_t i = 0; i < run->nprocs; i++) {
        const struct sps_process_data *p = &run->procs[i];
        add_part(&out->part[SPS_OH_PY_ZONES], p->py_zones, p->py_zone_ns);
        add_part(&out->part[SPS_OH_HOOKS], p->hook_zones, p->hook_zone_ns);
        add_part(&out->part[SPS_OH_PY_VALUES], p->py_values, p->py_value_ns);
        add_part(&out->part[SPS_OH_PY_COUNTS], p->py_counts, p->py_count_ns);
    }
}

/* recording_s and its flags from the parts. */
static void sum_parts(struct sps_overhead *out, const struct sps_run_info *info) {
    double sum = 0;
    for (int k = 0; k < SPS_OH_KINDS; k++) {
        struct sps_overhead_part *part = &out->part[k];
        uint64_t priced = part->count - part->unpriced;
        part->cost_ns = priced ? part->s * 1e9 / (double)priced : NAN;
        sum += part->s;
        if (part->unpriced && k != SPS_OH_ZONES && k != SPS_OH_VALUES && k != SPS_OH_THINNED)
            out->recording_partial = 1;
    }
    out->zone_cost_ns = out->value_cost_ns = out->recording_s = out->thinned_zone_cost_ns = NAN;
    if (info->have_record_cost) {
        out->zone_cost_ns = info->zone_cost_ns;
        out->value_cost_ns = info->value_cost_ns;
        out->thinned_zone_cost_ns = info->thinned_zone_cost_ns > 0 ? info->thinned_zone_cost_ns : NAN;
        out->recording_s = sum;
    } else {
        out->unmeasured_reason = info->record_cost_absent_reason ? info->record_cost_absent_reason
                                                                 : "not measured: stepscope run measures it when the run ends";
    }
}

void sps__overhead_analyze(const struct sps_run *run, const struct sps_run_info *info, struct sps_overhead *out) {
    *out = (struct sps_overhead){0};
    for (size_t i = 0; i < run->nnames; i++) {
        const struct sps_name_summary *n = &run->names[i];
        if (sps_kind_is_timed(n->kind))
            out->zones_recorded += n->agg.count;
        else
            out->values_recorded += n->agg.count;
    }
    out->thinned_since_s = NAN;
    uint64_t since_ns = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const struct sps_process_data *p = &run->procs[i];
        out->zones_thinned += p->zones_thinned;
        if (p->thin_level > out->thin_level && p->thin_level <= SPS_THIN_STEPS)
            out->thin_level = p->thin_level;
        if (p->thin_since_ns && (!since_ns || p->thin_since_ns < since_ns))
            since_ns = p->thin_since_ns;
    }
    if (since_ns)
        out->thinned_since_s = since_ns >= run->start_ns ? (double)(since_ns - run->start_ns) * 1e-9 : 0;
    price_library(out, run, info);
    price_python(out, run);
    sum_parts(out, info);
    out->sampler_cpu_s = info->sampler ? info->sampler->thread_cpu_seconds : NAN;
    out->live_view_cpu_s = info->have_live_view ? info->live_view_cpu_seconds : 0;
    const struct sps_guard_report *g = &info->guard;
    out->guard_cpu_s = g->on ? g->cpu_seconds : 0;
    out->total_s = (isnan(out->recording_s) ? 0 : out->recording_s) +
                   (isnan(out->sampler_cpu_s) ? 0 : out->sampler_cpu_s) + out->live_view_cpu_s + out->guard_cpu_s;
    out->budget_on = g->on;
    out->budget_percent = g->on ? 100.0 * g->budget : NAN;
    out->exceeded = g->on && g->windows_over > 0;
    out->first_exceeded_s = g->on ? g->first_over_s : NAN;
    out->windows = g->on ? g->windows : 0;
    out->windows_over = g->on ? g->windows_over : 0;
    out->peak_window_percent = g->on && g->windows ? 100.0 * g->peak_share : NAN;
    out->last_window_percent = g->on && g->windows ? 100.0 * g->last_share : NAN;
    out->over_with_steps_only = g->on && g->over_at_steps;
    out->workload_cpu_s = info->have_times ? info->user_s + info->sys_s : NAN;
    out->wall_s = info->have_times ? info->wall_s : NAN;
    out->percent_of_workload_cpu = out->workload_cpu_s > 0 ? 100.0 * out->recording_s / out->workload_cpu_s : NAN;
    out->percent_of_wall = out->wall_s > 0 ? 100.0 * out->total_s / out->wall_s : NAN;
    /* over the time the sampler's thread ran, as report.json's
     * overhead.sampler_cpu_percent_of_one_core (the run's wall time when
     * that is unknown) */
    double sampler_span_s = info->sampler ? (double)info->sampler->thread_ns_total * 1e-9 : 0;
    out->sampler_percent_of_core = sampler_span_s > 0 ? 100.0 * out->sampler_cpu_s / sampler_span_s
                                   : out->wall_s > 0  ? 100.0 * out->sampler_cpu_s / out->wall_s
                                                      : NAN;
    out->live_view_percent_of_core = out->wall_s > 0 ? 100.0 * out->live_view_cpu_s / out->wall_s : NAN;
    out->guard_percent_of_core = out->wall_s > 0 ? 100.0 * out->guard_cpu_s / out->wall_s : NAN;
}

