/*
 * report_json_analysis.c - report.json's "analysis" section, rendered
 * from the typed results (the headers in src/analysis/): the bottleneck with its
 * evidence and windows, leaks, energy, throughput and stepscope's own
 * overhead.  The analysis computes; this file only writes what it found
 * (docs/analysis.md documents every key), and src/report/report_read_analysis.c
 * reads it back.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis/analysis.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "sampler/sampler.h"

/* ---------------------------------------------------------- analysis */

void sps__analysis_json(struct sps_jw *w, const struct sps_analysis *a) {
    sps__jw_object(w, "analysis");
    sps__bottleneck_json(w, &a->bottleneck);
    if (a->leaks.computed)
        sps__leaks_json(w, &a->leaks);
    sps__torch_memory_json(w, &a->torch_memory);
    sps__energy_json(w, &a->energy);
    sps__throughput_json(w, &a->throughput);
    sps__overhead_json(w, &a->overhead);
    if (a->straggler.computed)
        sps__straggler_json(w, &a->straggler);
    sps__jw_end(w, '}');
}

/* ---------------------------------------------------------- bottleneck */

static const char *const THROTTLE_NAMES[] = {"gpu_idle",    "applications_clocks", "sw_power_cap",
                                             "hw_slowdown", "sync_boost",          "sw_thermal_slowdown",
                                             "hw_thermal_slowdown", "hw_power_brake", "display_clocks"};

/* Figures written as null, with their reasons, for "unavailable". */
struct missing {
    size_t n;
    const char *key[32];
    const char *why[32];
};

static void num(struct sps_jw *w, struct missing *m, const char *key, double v, const char *why) {
    sps__jw_number(w, key, v); /* NAN is written as null */
    if (isnan(v) && m->n < sizeof m->key / sizeof *m->key) {
        m->key[m->n] = key;
        m->why[m->n++] = why ? why : "not read";
    }
}

/* The figures in sps__bn_evidence_figures' order, each followed by what
 * belongs with it (the top zone's name, the throttle reasons' names). */
static void evidence_json(struct sps_jw *w, const struct sps_bn_evidence *e, int with_reasons) {
    struct missing m = {0};
    struct sps_bn_figure figs[SPS_BN_FIGURES];
    size_t nfigs = sps__bn_evidence_figures(e, figs);
    sps__jw_object(w, "evidence");
    for (size_t i = 0; i < nfigs; i++) {
        const struct sps_bn_figure *f = &figs[i];
        if (f->integral && !isnan(f->value))
            sps__jw_uint(w, f->key, (uint64_t)f->value);
        else
            num(w, &m, f->key, f->value, f->why);
        if (!strcmp(f->key, "top_zone_percent") && sps__bn_known(e->top_zone_percent))
            sps__jw_string(w, "top_zone", e->top_zone);
        if (!strcmp(f->key, "gpu_throttle_reasons_seen") && sps__bn_known(e->gpu_throttled_percent)) {
            sps__jw_array_flat(w, "gpu_throttle_reason_names");
            for (unsigned b = 0; b < sizeof THROTTLE_NAMES / sizeof *THROTTLE_NAMES; b++)
                if (e->gpu_throttle_reasons_seen & (1u << b))
                    sps__jw_string(w, NULL, THROTTLE_NAMES[b]);
            sps__jw_end(w, ']');
        }
    }
    sps__jw_bool(w, "contention_from_whole_run", e->contention_whole_run);
    if (with_reasons) {
        sps__jw_object(w, "unavailable");
        for (size_t i = 0; i < m.n; i++)
            sps__jw_string(w, m.key[i], m.why[i]);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, '}');
}

static void verdict_json(struct sps_jw *w, const struct sps_bn_verdict *v) {
    sps__jw_string(w, "verdict", sps__bn_kind_name(v->kind));
    sps__jw_number(w, "confidence", v->confidence);
    sps__jw_string(w, "reason", v->reason);
    sps__jw_string(w, "recommendation", v->recommendation);
}

void sps__bottleneck_json(struct sps_jw *w, const struct sps_bottleneck *b) {
    sps__jw_object(w, "bottleneck");
    verdict_json(w, &b->verdict);
    sps__jw_string(w, "advice_for", sps__bn_face_name(b->face));
    if (b->main_step[0])
        sps__jw_string(w, "main_step", b->main_step);
    else
        sps__jw_null(w, "main_step");
    sps__jw_array_flat(w, "data_loading_zones");
    for (size_t i = 0; i < b->ndata_zones; i++)
        sps__jw_string(w, NULL, b->data_zones[i]);
    sps__jw_end(w, ']');
    evidence_json(w, &b->evidence, 1);
    sps__jw_array(w, "windows");
    for (size_t i = 0; i < b->nwindows; i++) {
        const struct sps_bn_window *win = &b->windows[i];
        sps__jw_object(w, NULL);
        sps__jw_uint(w, "first_step", win->first_step);
        sps__jw_uint(w, "last_step", win->last_step);
        sps__jw_number(w, "start_seconds", win->start_seconds);
        sps__jw_number(w, "end_seconds", win->end_seconds);
        verdict_json(w, &win->verdict);
        evidence_json(w, &win->evidence, 0);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
    if (b->windows_note)
        sps__jw_string(w, "windows_note", b->windows_note);
    sps__jw_end(w, '}');
}

/* ---------------------------------------------------------- torch.cuda memory */

void sps__torch_memory_json(struct sps_jw *w, const struct sps_torch_memory *t) {
    if (!t->present)
        return;
    sps__jw_object(w, "torch_cuda_memory");
    sps__jw_int(w, "pid", t->pid);
    sps__jw_int(w, "tid", t->tid);
    sps__jw_uint(w, "processes", t->processes);
    sps__jw_uint(w, "steps", t->steps);
    sps__jw_uint(w, "steps_read", t->steps_read);
    sps__jw_uint(w, "peak_known_steps", t->peak_known);
    sps__jw_number(w, "peak_allocated_bytes", t->peak_allocated_bytes);
    sps__jw_number(w, "peak_reserved_bytes", t->peak_reserved_bytes);
    sps__jw_number(w, "end_allocated_bytes", t->end_allocated_bytes);
    sps__jw_number(w, "end_reserved_bytes", t->end_reserved_bytes);
    sps__jw_number(w, "growth_bytes_per_step", t->growth_bytes_per_step);
    sps__jw_string(w, "leak_verdict", sps__leak_verdict_name(t->verdict));
    sps__jw_end(w, '}');
}

/* ---------------------------------------------------------- leaks */

static void series_json(struct sps_jw *w, const struct sps_leak_series *s) {
    sps__jw_object(w, NULL);
    sps__jw_string(w, "series", s->series);
    sps__jw_string(w, "scope", sps__leak_scope_name(s->scope));
    if (s->pid > 0)
        sps__jw_int(w, "pid", s->pid);
    else
        sps__jw_null(w, "pid");
    if (s->scope == SPS_LEAK_SCOPE_PROCESS)
        sps__jw_string(w, "comm", s->comm);
    else
        sps__jw_null(w, "comm");
    if (s->gpu >= 0)
        sps__jw_int(w, "gpu", s->gpu);
    else
        sps__jw_null(w, "gpu");
    sps__jw_string(w, "verdict", sps__leak_verdict_name(s->verdict));
    sps__jw_string(w, "reason", s->reason);
    if (sps__leak_rule_name(s->rule))
        sps__jw_string(w, "rule", sps__leak_rule_name(s->rule));
    else
        sps__jw_null(w, "rule");
    sps__jw_string(w, "window", sps__leak_window_name(s->window));
    sps__jw_uint(w, "points", s->points);
    /* each axis's keys, the other axis's null: a reader finds every key */
    int on_steps = s->axis == SPS_LEAK_AXIS_STEPS;
    sps__jw_uint(w, "steps_analysed", s->steps_analysed);
    sps__jw_number(w, "seconds_analysed", s->seconds_analysed);
    sps__jw_number(w, "first_step", on_steps ? s->first_at : NAN);
    sps__jw_number(w, "last_step", on_steps ? s->last_at : NAN);
    sps__jw_number(w, "first_seconds", on_steps ? NAN : s->first_at);
    sps__jw_number(w, "last_seconds", on_steps ? NAN : s->last_at);
    sps__jw_number(w, "window_from_step", on_steps ? s->window_from : NAN);
    sps__jw_number(w, "window_from_seconds", on_steps ? NAN : s->window_from);
    sps__jw_number(w, "slope_bytes_per_step", on_steps ? s->slope : NAN);
    sps__jw_number(w, "slope_bytes_per_second", on_steps ? NAN : s->slope);
    sps__jw_number(w, "ci95_low", s->ci95_low);
    sps__jw_number(w, "ci95_high", s->ci95_high);
    sps__jw_number(w, "growth_bytes", s->growth_bytes);
    sps__jw_number(w, "min_growth_bytes", s->min_growth_bytes);
    sps__jw_number(w, "allowance_bytes", s->allowance_bytes);
    sps__jw_number(w, "median_bytes", s->median_bytes);
    sps__jw_number(w, "first_segment_median_bytes", s->first_segment_median_bytes);
    sps__jw_number(w, "last_segment_median_bytes", s->last_segment_median_bytes);
    if (s->rising_segments >= 0)
        sps__jw_int(w, "rising_segments", s->rising_segments);
    else
        sps__jw_null(w, "rising_segments");
    sps__jw_end(w, '}');
}

void sps__leaks_json(struct sps_jw *w, const struct sps_leaks *l) {
    sps__jw_object(w, "leaks");
    sps__jw_string(w, "verdict", sps__leak_verdict_name(l->verdict));
    sps__jw_string(w, "reason", l->reason);
    sps__jw_string(w, "axis", sps__leak_axis_name(l->axis));
    if (l->pid >= 0) {
        sps__jw_object(w, "step_stream");
        sps__jw_string(w, "name", l->step_name);
        sps__jw_int(w, "pid", l->pid);
        sps__jw_int(w, "tid", l->tid);
        sps__jw_end(w, '}');
    } else {
        sps__jw_null(w, "step_stream");
    }
    if (l->tree_note[0])
        sps__jw_string(w, "tree_memory", l->tree_note);
    else
        sps__jw_null(w, "tree_memory");
    sps__jw_uint(w, "warmup_steps", l->warmup_steps);
    sps__jw_uint(w, "steps_analysed", l->steps_analysed);
    sps__jw_number(w, "warmup_seconds", l->warmup_seconds);
    sps__jw_number(w, "seconds_analysed", l->seconds_analysed);
    sps__jw_int(w, "processes_max", SPS_SAMPLER_MAX_PROCESSES);
    sps__jw_uint(w, "processes_left_out", l->processes_left_out);
    sps__jw_object(w, "thresholds");
    sps__jw_int(w, "min_points", SPS_LEAK_MIN_POINTS);
    sps__jw_int(w, "min_steps", SPS_LEAK_MIN_STEPS);
    sps__jw_number(w, "min_growth_bytes", SPS_LEAK_MIN_GROWTH_BYTES);
    sps__jw_number(w, "min_growth_fraction_of_median", SPS_LEAK_MIN_GROWTH_FRACTION);
    sps__jw_int(w, "segments", SPS_LEAK_SEGMENTS);
    sps__jw_number(w, "segment_rise_fraction", SPS_LEAK_SEGMENT_RISE);
    sps__jw_number(w, "late_above_fraction", SPS_LEAK_LATE_ABOVE);
    sps__jw_int(w, "time_min_points", SPS_LEAK_TIME_MIN_POINTS);
    sps__jw_number(w, "time_min_seconds", SPS_LEAK_TIME_MIN_SECONDS);
    sps__jw_number(w, "time_warmup_fraction", SPS_LEAK_TIME_WARMUP_FRACTION);
    sps__jw_number(w, "time_max_gap_fraction", SPS_LEAK_TIME_MAX_GAP_FRACTION);
    sps__jw_end(w, '}');
    sps__jw_array(w, "series");
    for (size_t i = 0; i < l->nseries; i++)
        series_json(w, &l->series[i]);
    sps__jw_end(w, ']');
    sps__jw_end(w, '}');
}

/* ---------------------------------------------------------- energy */

static void write_domain(struct sps_jw *w, const struct sps_energy_domain *d) {
    sps__jw_object(w, NULL);
    sps__jw_string(w, "domain", d->domain);
    if (d->gpu >= 0) {
        sps__jw_int(w, "gpu", d->gpu);
        sps__jw_string(w, "name", d->name);
    }
    sps__jw_number(w, "joules", d->joules);
    sps__jw_number(w, "kwh", d->joules / SPS_JOULES_PER_KWH);
    if (d->method == SPS_ENERGY_UNAVAILABLE) {
        sps__jw_null(w, "method");
        sps__jw_null(w, "evidence");
        sps__jw_string(w, "unavailable_reason", d->reason);
    } else {
        char evidence[256];
        sps__energy_domain_evidence(d, evidence, sizeof evidence);
        sps__jw_string(w, "method", sps__energy_method_name(d->method));
        sps__jw_string(w, "evidence", evidence);
        sps__jw_string(w, "source", d->source);
        sps__jw_number(w, "span_s", d->span_s);
        sps__jw_uint(w, "readings", d->readings);
    }
    sps__jw_end(w, '}');
}

void sps__energy_json(struct sps_jw *w, const struct sps_energy *e) {
    sps__jw_object(w, "energy");
    sps__jw_number(w, "carbon_intensity_g_per_kwh", e->carbon_g_per_kwh);
    sps__jw_string(w, "carbon_intensity_from", sps__energy_carbon_from(e));
    sps__jw_number(w, "pue", e->pue);
    sps__jw_string(w, "pue_from", sps__energy_pue_from(e));
    sps__jw_array(w, "domains");
    for (size_t k = 0; k < e->ndomains; k++)
        write_domain(w, &e->domain[k]);
    sps__jw_end(w, ']');
    sps__jw_uint(w, "domains_measured", e->measured);
    sps__jw_number(w, "joules", e->total_joules);
    sps__jw_number(w, "kwh", e->total_kwh);
    sps__jw_number(w, "co2e_grams", e->co2e_grams);
    if (!e->measured)
        sps__jw_string(w, "unavailable_reason", e->total_reason);
    sps__jw_object(w, "per_step");
    sps__jw_uint(w, "steps", e->step_count);
    sps__jw_number(w, "span_s", e->step_span_s);
    sps__jw_number(w, "joules", e->step_joules);
    sps__jw_number(w, "kwh", e->step_kwh);
    sps__jw_number(w, "co2e_grams", e->step_co2e_grams);
    if (isnan(e->step_joules))
        sps__jw_string(w, "unavailable_reason", e->step_reason);
    else
        sps__jw_string(w, "method",
                       "the measured domains' energy from the first to the last post-warm-up step inside their "
                       "readings, divided by the steps of the stream with the most of them");
    sps__jw_end(w, '}');
    sps__jw_end(w, '}');
}

/* ---------------------------------------------------------- overhead */

void sps__overhead_json(struct sps_jw *w, const struct sps_overhead *o) {
    sps__jw_object(w, "overhead");
    sps__jw_uint(w, "zones_recorded", o->zones_recorded);
    sps__jw_uint(w, "values_recorded", o->values_recorded);
    sps__jw_number(w, "zone_cost_ns", o->zone_cost_ns);
    sps__jw_number(w, "value_cost_ns", o->value_cost_ns);
    sps__jw_uint(w, "zone_end_samples", o->zone_end_samples);
    sps__jw_uint(w, "zone_end_samples_dropped", o->zone_end_samples_dropped);
    sps__jw_number(w, "zone_end_in_run_ns", o->zone_end_in_run_ns);
    sps__jw_number(w, "zone_end_warm_ns", o->zone_end_warm_ns);
    sps__jw_number(w, "recording_s", o->recording_s);
    if (o->unmeasured_reason)
        sps__jw_string(w, "recording_unmeasured_reason", o->unmeasured_reason);
    sps__jw_bool(w, "recording_partial", o->recording_partial);
    sps__jw_object(w, "recording_by_kind");
    for (int k = 0; k < SPS_OH_KINDS; k++) {
        const struct sps_overhead_part *part = &o->part[k];
        sps__jw_object(w, sps__overhead_kind_name((enum sps_overhead_kind)k));
        sps__jw_uint(w, "count", part->count);
        sps__jw_uint(w, "unpriced", part->unpriced);
        sps__jw_number(w, "cost_ns", part->cost_ns);
        sps__jw_number(w, "s", part->s);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, '}');
    sps__jw_uint(w, "zones_thinned", o->zones_thinned);
    sps__jw_number(w, "thinned_zone_cost_ns", o->thinned_zone_cost_ns);
    sps__jw_number(w, "sampler_cpu_s", o->sampler_cpu_s);
    sps__jw_number(w, "sampler_percent_of_core", o->sampler_percent_of_core);
    sps__jw_number(w, "live_view_cpu_s", o->live_view_cpu_s);
    sps__jw_number(w, "live_view_percent_of_core", o->live_view_percent_of_core);
    sps__jw_number(w, "guard_cpu_s", o->guard_cpu_s);
    sps__jw_number(w, "guard_percent_of_core", o->guard_percent_of_core);
    sps__jw_number(w, "total_s", o->total_s);
    sps__jw_number(w, "percent_of_workload_cpu", o->percent_of_workload_cpu);
    sps__jw_number(w, "percent_of_wall", o->percent_of_wall);
    if (o->budget_on) {
        sps__jw_object(w, "budget");
        sps__jw_number(w, "max_percent_of_workload_cpu", o->budget_percent);
        sps__jw_bool(w, "exceeded", o->exceeded);
        sps__jw_number(w, "first_exceeded_s", o->first_exceeded_s);
        sps__jw_string(w, "thin_level", sps__thin_level_name(o->thin_level));
        sps__jw_number(w, "thinned_since_s", o->thinned_since_s);
        sps__jw_uint(w, "windows_judged", o->windows);
        sps__jw_uint(w, "windows_over", o->windows_over);
        sps__jw_number(w, "peak_window_percent", o->peak_window_percent);
        sps__jw_number(w, "last_window_percent", o->last_window_percent);
        sps__jw_bool(w, "over_with_steps_only", o->over_with_steps_only);
        sps__jw_end(w, '}');
    } else {
        sps__jw_null(w, "budget");
    }
    sps__jw_end(w, '}');
}

/* ---------------------------------------------------------- throughput */

static void write_counter(struct sps_jw *w, const struct sps_throughput_counter *c) {
    sps__jw_object(w, NULL);
    sps__jw_string(w, "name", c->name);
    sps__jw_number(w, "total", c->total);
    sps__jw_number(w, "in_steps", c->in_steps);
    sps__jw_uint(w, "steps", c->steps);
    sps__jw_uint(w, "threads", c->threads);
    sps__jw_number(w, "step_seconds", c->step_seconds);
    sps__jw_number(w, "per_second", c->per_second);
    sps__jw_object(w, "per_step_per_second");
    sps__jw_number(w, "mean", c->step_rate_mean);
    sps__jw_number(w, "median", c->step_rate_median);
    sps__jw_number(w, "min", c->step_rate_min);
    sps__jw_number(w, "max", c->step_rate_max);
    sps__jw_end(w, '}');
    sps__jw_bool(w, "is_flops", c->is_flops);
    if (c->steps == 0)
        sps__jw_string(w, "unavailable_reason", sps__throughput_counter_why(c));
    sps__jw_end(w, '}');
}

void sps__throughput_json(struct sps_jw *w, const struct sps_throughput *t) {
    sps__jw_object(w, "throughput");
    sps__jw_string(w, "method",
                   "counts inside post-warm-up steps over those steps' summed duration, per thread, added up over "
                   "threads; per-step rates are each step's count over its duration");
    sps__jw_uint(w, "warmup_steps_excluded", t->warmup_steps);
    sps__jw_array(w, "counters");
    for (size_t i = 0; i < t->ncounters; i++)
        write_counter(w, &t->counters[i]);
    sps__jw_end(w, ']');
    if (t->reason[0])
        sps__jw_string(w, "unavailable_reason", t->reason);
    sps__jw_object(w, "flops");
    if (t->flops >= 0 && (size_t)t->flops < t->ncounters) /* a zeroed analysis (not computed, not read) has none */
        sps__jw_string(w, "counter", t->counters[t->flops].name);
    else
        sps__jw_null(w, "counter");
    sps__jw_number(w, "per_second", t->flops_per_second);
    if (isnan(t->flops_per_second))
        sps__jw_string(w, "unavailable_reason", t->flops_reason);
    sps__jw_end(w, '}');
    sps__jw_object(w, "mfu");
    sps__jw_number(w, "value", t->mfu);
    sps__jw_number(w, "peak_flops", t->peak_flops_total);
    sps__jw_int(w, "gpus", t->gpus);
    if (t->peak_from[0])
        sps__jw_string(w, "peak_from", t->peak_from);
    else
        sps__jw_null(w, "peak_from");
    if (isnan(t->mfu))
        sps__jw_string(w, "unavailable_reason", t->mfu_reason);
    sps__jw_end(w, '}');
    sps__jw_end(w, '}');
}
