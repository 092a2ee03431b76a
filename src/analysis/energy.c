/*
 * energy.c - energy and carbon of a run (see energy.h; the method and the
 * defaults are documented in docs/analysis.md, "Energy and carbon").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/energy.h"
#include "model/run_info.h"
#include "model/run.h"
#include "sampler/sampler.h"
#include "sources/source.h"


/* The middle of the readings point i holds.  Readings are evenly spaced
 * at the sampler's cadence, so a point of n readings starting at t_ns and
 * followed by the next point at t_next covers n slots of (t_next - t_ns)/n;
 * its mean belongs to the middle of the first and last reading.  The last
 * point ends at the series' last reading. */
static double point_centre_ns(const struct sps__series *s, uint32_t i) {
    const struct sps__series_point *p = &s->points[i];
    if (p->n <= 1)
        return (double)p->t_ns;
    if (i + 1 < s->count) {
        double slot = (double)(s->points[i + 1].t_ns - p->t_ns) / p->n;
        return (double)p->t_ns + slot * (p->n - 1) / 2.0;
    }
    return ((double)p->t_ns + (double)s->last_ns) / 2.0;
}

double sps__energy_series_value_at(const struct sps__series *s, int64_t t_ns) {
    if (!s->points || s->count == 0)
        return NAN;
    double t = (double)t_ns;
    if (t <= point_centre_ns(s, 0))
        return s->points[0].mean;
    for (uint32_t i = 0; i + 1 < s->count; i++) {
        double x0 = point_centre_ns(s, i), x1 = point_centre_ns(s, i + 1);
        if (t <= x1) {
            double y0 = s->points[i].mean, y1 = s->points[i + 1].mean;
            return x1 > x0 ? y0 + (y1 - y0) * (t - x0) / (x1 - x0) : y1;
        }
    }
    return s->points[s->count - 1].mean;
}

/* The integral of the piecewise-linear function over [a, b] (ns), as the
 * sum of trapezoids between consecutive knots clipped to [a, b]; flat
 * beyond the first and last knot. */
double sps__energy_series_integral(const struct sps__series *s, int64_t t0_ns, int64_t t1_ns) {
    if (!s->points || s->count == 0)
        return NAN;
    double a = (double)t0_ns, b = (double)t1_ns;
    if (b <= a)
        return 0.0;
    double sum_value_ns = 0.0;
    double first = point_centre_ns(s, 0), last = point_centre_ns(s, s->count - 1);
    if (a < first)
        sum_value_ns += s->points[0].mean * (fmin(b, first) - a);
    if (b > last)
        sum_value_ns += s->points[s->count - 1].mean * (b - fmax(a, last));
    for (uint32_t i = 0; i + 1 < s->count; i++) {
        double lo = fmax(a, point_centre_ns(s, i)), hi = fmin(b, point_centre_ns(s, i + 1));
        if (hi <= lo)
            continue;
        double ylo = sps__energy_series_value_at(s, (int64_t)lo), yhi = sps__energy_series_value_at(s, (int64_t)hi);
        sum_value_ns += (ylo + yhi) / 2.0 * (hi - lo);
    }
    return sum_value_ns * 1e-9;
}

/* Why a source read nothing for a metric ("rapl: <why>"): its open
 * failure, else its latest read error or note, else its open note. */
static void source_reason(char *out, size_t cap, const struct sps__sampler_result *r, enum sps_source_id id) {
    const struct sps__source_result *sr = &r->sources[id];
    const char *why = !sr->available ? sr->reason
                      : sr->last_error[0] ? sr->last_error
                      : sr->note[0]       ? sr->note
                      : sr->reason[0]     ? sr->reason
                                          : "it read no value during the run";
    snprintf(out, cap, "%s: %s", sps__source_get(id)->name, why[0] ? why : "unavailable");
}

/* Joules from a running total (method counter) or a power series
 * (integrated power); unavailable when neither has two readings. */
static void measure(struct sps_energy_domain *d, const struct sps__series *energy, const struct sps__series *power) {
    if (energy->n >= 2) {
        /* a TOTAL never decreases (the sources count a wrapped or reset
         * counter on), so its smallest reading is its first */
        d->method = SPS_ENERGY_COUNTER;
        d->joules = energy->last - energy->min;
        d->span_s = (double)(energy->last_ns - energy->first_ns) * 1e-9;
        d->readings = energy->n;
        d->series = energy;
    } else if (power->n >= 2 && power->points) {
        d->method = SPS_ENERGY_INTEGRATED_POWER;
        d->joules = sps__energy_series_integral(power, power->first_ns, power->last_ns);
        d->span_s = (double)(power->last_ns - power->first_ns) * 1e-9;
        d->readings = power->n;
        d->series = power;
    }
}

static void add_host_domain(struct sps_energy *out, const struct sps_run_info *info, const char *domain,
                            enum sps_host_metric energy_metric, enum sps_host_metric power_metric) {
    struct sps_energy_domain *d = &out->domain[out->ndomains++];
    snprintf(d->domain, sizeof d->domain, "%s", domain);
    d->gpu = -1;
    d->joules = NAN;
    d->span_s = NAN;
    snprintf(d->source, sizeof d->source, "%s", sps__source_get(SPS_SOURCE_RAPL)->name);
    const struct sps__sampler_result *r = info ? info->sampler : NULL;
    if (!r) {
        snprintf(d->reason, sizeof d->reason, "no machine readings: %s",
                 info && info->sampler_absent_reason ? info->sampler_absent_reason : "no sampler ran");
        return;
    }
    measure(d, &r->host[energy_metric], &r->host[power_metric]);
    if (d->method == SPS_ENERGY_UNAVAILABLE)
        source_reason(d->reason, sizeof d->reason, r, SPS_SOURCE_RAPL);
}

static void add_gpu_domains(struct sps_energy *out, const struct sps_run_info *info) {
    const struct sps__sampler_result *r = info ? info->sampler : NULL;
    if (r && r->ngpus > 0) {
        for (int g = 0; g < r->ngpus && out->ndomains < SPS_ENERGY_MAX_DOMAINS; g++) {
            const struct sps__gpu_series *gs = &r->gpu[g];
            struct sps_energy_domain *d = &out->domain[out->ndomains++];
            snprintf(d->domain, sizeof d->domain, "gpu");
            d->gpu = gs->index;
            snprintf(d->name, sizeof d->name, "%s", gs->name);
            d->joules = NAN;
            d->span_s = NAN;
            const char *src = gs->source >= 0 && gs->source < SPS_SOURCE_COUNT
                                  ? sps__source_get((enum sps_source_id)gs->source)->name
                                  : "gpu";
            snprintf(d->source, sizeof d->source, "%s", src);
            measure(d, &gs->m[SPS_M_GPU_ENERGY_JOULES], &gs->m[SPS_M_GPU_POWER_WATTS]);
            if (d->method == SPS_ENERGY_UNAVAILABLE)
                snprintf(d->reason, sizeof d->reason, "%s read neither energy nor power for GPU %d", src, gs->index);
        }
        return;
    }
    /* No GPU: one unavailable entry that says why, so "no GPU" is stated,
     * not implied by absence. */
    struct sps_energy_domain *d = &out->domain[out->ndomains++];
    snprintf(d->domain, sizeof d->domain, "gpu");
    d->gpu = -1;
    d->joules = NAN;
    d->span_s = NAN;
    if (!r) {
        snprintf(d->reason, sizeof d->reason, "no machine readings: %s",
                 info && info->sampler_absent_reason ? info->sampler_absent_reason : "no sampler ran");
        return;
    }
    size_t len = (size_t)snprintf(d->reason, sizeof d->reason, "no GPU");
    const char *sep = ": ";
    for (int id = 0; id < SPS_SOURCE_COUNT && len < sizeof d->reason; id++) {
        const struct sps__source *src = sps__source_get((enum sps_source_id)id);
        if (!src->is_gpu || !r->sources[id].tried)
            continue;
        const struct sps__source_result *sr = &r->sources[id];
        const char *why = sr->available ? (sr->last_error[0] ? sr->last_error : "found no GPU") : sr->reason;
        int n = snprintf(d->reason + len, sizeof d->reason - len, "%s%s: %s", sep, src->name, why);
        if (n > 0)
            len += (size_t)n;
        sep = "; ";
    }
}

/* Post-warm-up steps inside [lo, hi], the span from the first one's start
 * to the last one's end, and how many steps that is: the most rows any one
 * stream (process, thread, step name) has there.  Data-parallel ranks run
 * their steps side by side, so the machine's energy over the span is the
 * energy of that many global steps, not of the sum over ranks.  The rows
 * of one thread are contiguous (run.h), so streams are counted a thread at
 * a time. */
#define STREAM_NAMES_PER_THREAD 64
static uint64_t steps_inside(const struct sps_run *run, int64_t lo, int64_t hi, int64_t *first_ns, int64_t *last_ns) {
    uint64_t best = 0;
    *first_ns = INT64_MAX;
    *last_ns = INT64_MIN;
    long names[STREAM_NAMES_PER_THREAD];
    uint64_t counts[STREAM_NAMES_PER_THREAD];
    size_t nnames = 0;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *row = &run->steps[i];
        if (i > 0 && (row->process != run->steps[i - 1].process || row->tid != run->steps[i - 1].tid))
            nnames = 0; /* a new thread */
        if (row->warmup || (int64_t)row->start_ns < lo || (int64_t)row->end_ns > hi)
            continue;
        if ((int64_t)row->start_ns < *first_ns)
            *first_ns = (int64_t)row->start_ns;
        if ((int64_t)row->end_ns > *last_ns)
            *last_ns = (int64_t)row->end_ns;
        size_t k = 0;
        while (k < nnames && names[k] != row->name)
            k++;
        if (k == nnames) {
            if (nnames == STREAM_NAMES_PER_THREAD)
                k = nnames - 1; /* more step names on one thread than any loop has: share the last slot */
            else {
                names[nnames] = row->name;
                counts[nnames++] = 0;
            }
        }
        if (++counts[k] > best)
            best = counts[k];
    }
    return best;
}

static void per_step(const struct sps_run *run, struct sps_energy *out) {
    out->step_joules = out->step_kwh = out->step_co2e_grams = NAN;
    out->step_span_s = NAN;
    if (out->measured == 0) {
        snprintf(out->step_reason, sizeof out->step_reason, "no energy was measured");
        return;
    }
    if (!run || run->nsteps == 0) {
        snprintf(out->step_reason, sizeof out->step_reason, "the run recorded no steps");
        return;
    }
    /* every measured domain must cover the steps, or the sum would leave
     * one out for part of the span */
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    for (size_t k = 0; k < out->ndomains; k++) {
        const struct sps_energy_domain *d = &out->domain[k];
        if (d->method == SPS_ENERGY_UNAVAILABLE)
            continue;
        if (d->series->first_ns > lo)
            lo = d->series->first_ns;
        if (d->series->last_ns < hi)
            hi = d->series->last_ns;
    }
    int64_t first_ns, last_ns;
    out->step_count = steps_inside(run, lo, hi, &first_ns, &last_ns);
    if (out->step_count == 0) {
        snprintf(out->step_reason, sizeof out->step_reason,
                 "no post-warm-up step lies inside the span of the energy readings");
        return;
    }
    double joules = 0.0;
    for (size_t k = 0; k < out->ndomains; k++) {
        const struct sps_energy_domain *d = &out->domain[k];
        if (d->method == SPS_ENERGY_COUNTER)
            joules += sps__energy_series_value_at(d->series, last_ns) - sps__energy_series_value_at(d->series, first_ns);
        else if (d->method == SPS_ENERGY_INTEGRATED_POWER)
            joules += sps__energy_series_integral(d->series, first_ns, last_ns);
    }
    out->step_span_s = (double)(last_ns - first_ns) * 1e-9;
    out->step_joules = joules / (double)out->step_count;
    out->step_kwh = out->step_joules / SPS_JOULES_PER_KWH;
    out->step_co2e_grams = out->step_kwh * out->pue * out->carbon_g_per_kwh;
}

void sps__energy_analyze(const struct sps_run *run, const struct sps_run_info *info,
                         const struct sps_analysis_config *cfg, struct sps_energy *out) {
    memset(out, 0, sizeof *out);
    out->carbon_is_default = !cfg || isnan(cfg->carbon_g_per_kwh);
    out->carbon_g_per_kwh = out->carbon_is_default ? SPS_ENERGY_DEFAULT_CARBON_G_PER_KWH : cfg->carbon_g_per_kwh;
    out->pue_is_default = !cfg || isnan(cfg->pue);
    out->pue = out->pue_is_default ? SPS_ENERGY_DEFAULT_PUE : cfg->pue;

    add_gpu_domains(out, info);
    add_host_domain(out, info, "cpu_package", SPS_M_CPU_PACKAGE_ENERGY_JOULES, SPS_M_CPU_PACKAGE_POWER_WATTS);
    add_host_domain(out, info, "dram", SPS_M_DRAM_ENERGY_JOULES, SPS_M_DRAM_POWER_WATTS);

    out->total_joules = out->total_kwh = out->co2e_grams = NAN;
    double joules = 0.0;
    size_t len = 0;
    for (size_t k = 0; k < out->ndomains; k++) {
        const struct sps_energy_domain *d = &out->domain[k];
        if (d->method != SPS_ENERGY_UNAVAILABLE) {
            joules += d->joules;
            out->measured++;
        } else if (len < sizeof out->total_reason) {
            int n = snprintf(out->total_reason + len, sizeof out->total_reason - len, "%s%s: %s", len ? "; " : "",
                             d->gpu >= 0 ? "gpu" : d->domain, d->reason);
            if (n > 0)
                len += (size_t)n;
        }
    }
    if (out->measured) {
        out->total_reason[0] = '\0';
        out->total_joules = joules;
        out->total_kwh = joules / SPS_JOULES_PER_KWH;
        out->co2e_grams = out->total_kwh * out->pue * out->carbon_g_per_kwh;
    }
    per_step(run, out);
}

const char *sps__energy_method_name(enum sps_energy_method m) {
    return m == SPS_ENERGY_COUNTER ? "counter" : m == SPS_ENERGY_INTEGRATED_POWER ? "integrated_power" : NULL;
}

const char *sps__energy_carbon_from(const struct sps_energy *e) {
    return e->carbon_is_default ? "default: world average, Ember 2024 (electricity in 2023)" : "--carbon-intensity";
}

const char *sps__energy_pue_from(const struct sps_energy *e) {
    return e->pue_is_default ? "default: the machine alone, no facility overhead" : "--pue";
}

void sps__energy_domain_evidence(const struct sps_energy_domain *d, char *buf, size_t len) {
    snprintf(buf, len,
             d->method == SPS_ENERGY_COUNTER ? "%s: last minus first of %llu energy-counter readings over %.3f s"
                                             : "%s: %llu power readings integrated over %.3f s (trapezoids)",
             d->source, (unsigned long long)d->readings, d->span_s);
}

