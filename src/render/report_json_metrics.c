/*
 * report_metrics.c - the machine half of report.json: what the sampler
 * saw.  Every key comes from the metric catalogue; a metric with no
 * reading is written with null statistics and the reason, never as 0.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/json_writer.h"
#include "render/render.h"
#include "sampler/sampler.h"

static const char *kind_label(enum sps_metric_kind k) {
    return k == SPS_TOTAL ? "total" : "gauge";
}

static void write_stats(struct sps_jw *w, const struct sps__series *s) {
    sps__jw_uint(w, "samples", s->n);
    if (s->n) {
        sps__jw_number(w, "mean", s->sum / (double)s->n);
        sps__jw_number(w, "min", s->min);
        sps__jw_number(w, "max", s->max);
        sps__jw_number(w, "last", s->last);
    } else {
        sps__jw_null(w, "mean");
        sps__jw_null(w, "min");
        sps__jw_null(w, "max");
        sps__jw_null(w, "last");
    }
}

/* Why a source gave no reading for a metric. */
static const char *why_none(const struct sps__source_result *src, char *buf, size_t len) {
    if (!src->available)
        return src->reason[0] ? src->reason : "the source is unavailable";
    if (src->last_error[0])
        return src->last_error;
    if (src->note[0])
        return src->note;
    snprintf(buf, len, "the source read no value for it during the run");
    return buf;
}

const char *sps__metric_why_none(const struct sps__sampler_result *r, int host_metric, char *buf, size_t len) {
    return why_none(&r->sources[sps__host_metric_source(host_metric)], buf, len);
}

void sps__gpus_why_none(const struct sps__sampler_result *r, char *buf, size_t len) {
    /* the chain's reasons, in the order it tried them */
    size_t used = 0;
    buf[0] = '\0';
    for (int id = 0; id < SPS_SOURCE_COUNT && used < len; id++) {
        if (!sps__source_get(id)->is_gpu)
            continue;
        const struct sps__source_result *sr = &r->sources[id];
        int n = snprintf(buf + used, len - used, "%s%s: %s", used ? "; " : "", sps__source_get(id)->name,
                         sr->available ? (sr->last_error[0] ? sr->last_error : "found no GPU") : sr->reason);
        if (n > 0)
            used += (size_t)n;
    }
}

/* One metric: its statistics, or nulls and why_none when it has none. */
static void write_metric(struct sps_jw *w, const struct sps_metric_info *m, const struct sps__series *s,
                         const char *source_name, const char *why_none) {
    sps__jw_object(w, m->name);
    sps__jw_string(w, "unit", m->unit);
    sps__jw_string(w, "source", source_name);
    sps__jw_string(w, "kind", kind_label(m->kind));
    write_stats(w, s);
    if (!s->n)
        sps__jw_string(w, "unavailable_reason", why_none);
    sps__jw_end(w, '}');
}

static void write_points(struct sps_jw *w, const struct sps__series *s, uint64_t base_ns) {
    sps__jw_uint(w, "readings_per_point", s->per_point);
    /* every point but the newest holds readings_per_point readings */
    sps__jw_array_flat(w, "t_s");
    for (uint32_t i = 0; i < s->count; i++)
        sps__jw_number(w, NULL, ((double)s->points[i].t_ns - (double)base_ns) / 1e9);
    sps__jw_end(w, ']');
    sps__jw_array_flat(w, "mean");
    for (uint32_t i = 0; i < s->count; i++)
        sps__jw_number(w, NULL, s->points[i].mean);
    sps__jw_end(w, ']');
    sps__jw_array_flat(w, "max");
    for (uint32_t i = 0; i < s->count; i++)
        sps__jw_number(w, NULL, s->points[i].max);
    sps__jw_end(w, ']');
}

/* The newest reading's time (a point's is its first reading's). */
static void write_last(struct sps_jw *w, const struct sps__series *s, uint64_t base_ns) {
    sps__jw_number(w, "last_s", ((double)s->last_ns - (double)base_ns) / 1e9);
}

/* series.processes: each tree process's own RSS series.  They are kept
 * apart from series.metrics, whose entries readers tell apart by metric,
 * gpu and sensor alone: up to 64 more entries of one metric there would
 * read as duplicates to the readers written before them. */
static void write_process_series(struct sps_jw *w, const struct sps__sampler_result *r, uint64_t base_ns) {
    sps__jw_int(w, "processes_max", SPS_SAMPLER_MAX_PROCESSES);
    sps__jw_uint(w, "processes_left_out", r->processes_left_out);
    sps__jw_array(w, "processes");
    for (int k = 0; k < r->nprocesses; k++) {
        const struct sps__process_series *p = &r->process[k];
        const struct sps__series *s = &p->rss_bytes;
        if (!s->count)
            continue;
        sps__jw_object(w, NULL);
        sps__jw_string(w, "metric", "process_rss_bytes");
        sps__jw_int(w, "pid", p->pid);
        sps__jw_string(w, "comm", p->comm);
        sps__jw_string(w, "unit", "bytes");
        sps__jw_int(w, "interval_ms", r->interval_ms);
        sps__jw_number(w, "first_seen_s", ((double)p->first_seen_ns - (double)base_ns) / 1e9);
        sps__jw_number(w, "last_seen_s", ((double)s->last_ns - (double)base_ns) / 1e9);
        sps__jw_uint(w, "readings", s->n);
        sps__jw_number(w, "mean_bytes", s->sum / (double)s->n);
        sps__jw_number(w, "min_bytes", s->min);
        sps__jw_number(w, "max_bytes", s->max);
        sps__jw_number(w, "last_bytes", s->last);
        write_points(w, s, base_ns);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
}

/* What stepscope run's live view cost (null when it did not run: not a
 * terminal, --quiet, or a standalone report). */
static void write_live_view_cost(struct sps_jw *w, const struct sps_run_info *info) {
    if (info->have_live_view) {
        sps__jw_uint(w, "live_view_refreshes", info->live_view_refreshes);
        sps__jw_number(w, "live_view_cpu_seconds", info->live_view_cpu_seconds);
    } else {
        sps__jw_null(w, "live_view_refreshes");
        sps__jw_null(w, "live_view_cpu_seconds");
    }
}

static void write_unsampled(struct sps_jw *w, const struct sps_run_info *info, const char *reason) {
    static const struct sps__series none; /* no readings */
    sps__jw_object(w, "metrics");
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        const struct sps_metric_info *m = sps_host_metric_info(i);
        write_metric(w, m, &none, m->source, reason);
    }
    sps__jw_end(w, '}');
    sps__jw_array(w, "gpus");
    sps__jw_end(w, ']');
    sps__jw_array(w, "sensors");
    sps__jw_end(w, ']');
    sps__jw_array(w, "sources");
    sps__jw_end(w, ']');
    sps__jw_object(w, "series");
    sps__jw_array(w, "metrics");
    sps__jw_end(w, ']');
    sps__jw_end(w, '}');
    sps__jw_object(w, "overhead");
    sps__jw_null(w, "sampler_cpu_seconds");
    write_live_view_cost(w, info);
    sps__jw_end(w, '}');
}

void sps__report_json_metrics(struct sps_jw *w, const struct sps_run_info *info, uint64_t base_ns) {
    const struct sps__sampler_result *r = info->sampler;
    if (!r) {
        write_unsampled(w, info, info->sampler_absent_reason ? info->sampler_absent_reason : "no sampler ran");
        return;
    }
    if (!base_ns)
        base_ns = (uint64_t)r->started_ns;

    sps__jw_object(w, "metrics");
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        enum sps_source_id id = sps__host_metric_source(i);
        char buf[256];
        write_metric(w, sps_host_metric_info(i), &r->host[i], sps__source_get(id)->name,
                     r->host[i].n ? NULL : sps__metric_why_none(r, i, buf, sizeof buf));
    }
    sps__jw_end(w, '}');

    sps__jw_array(w, "gpus");
    for (int g = 0; g < r->ngpus; g++) {
        const struct sps__gpu_series *gs = &r->gpu[g];
        const struct sps__source *src = sps__source_get((enum sps_source_id)gs->source);
        const char *src_name = src ? src->name : "unknown";
        sps__jw_object(w, NULL);
        sps__jw_int(w, "index", gs->index);
        sps__jw_string(w, "name", gs->name);
        sps__jw_string(w, "uuid", gs->uuid);
        sps__jw_string(w, "source", src_name);
        sps__jw_object(w, "metrics");
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++) {
            char why[160];
            snprintf(why, sizeof why, "%s does not report it for this GPU", src_name);
            write_metric(w, sps_gpu_metric_info(i), &gs->m[i], src_name, why);
        }
        sps__jw_end(w, '}');
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
    if (r->ngpus == 0) {
        char why[700];
        sps__gpus_why_none(r, why, sizeof why);
        sps__jw_string(w, "gpus_unavailable_reason", why);
    }

    sps__jw_array(w, "sensors");
    for (int k = 0; k < r->nsensors; k++) {
        const struct sps__sensor_series *ss = &r->sensor[k];
        sps__jw_object(w, NULL);
        sps__jw_string(w, "label", ss->label);
        sps__jw_bool(w, "is_cpu", ss->is_cpu);
        sps__jw_string(w, "unit", "celsius");
        write_stats(w, &ss->celsius);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');

    sps__jw_array(w, "sources");
    for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
        const struct sps__source_result *sr = &r->sources[i];
        sps__jw_object(w, NULL);
        sps__jw_string(w, "name", sps__source_get(i)->name);
        sps__jw_bool(w, "tried", sr->tried);
        sps__jw_bool(w, "available", sr->available);
        sps__jw_bool(w, "in_use", sr->in_use);
        sps__jw_bool(w, "slow", sr->slow);
        if (sr->reason[0])
            sps__jw_string(w, "reason", sr->reason);
        else
            sps__jw_null(w, "reason");
        sps__jw_uint(w, "reads", sr->reads);
        sps__jw_uint(w, "failed_reads", sr->failed_reads);
        sps__jw_number(w, "read_mean_s", sr->reads ? (double)sr->read_ns_total / 1e9 / (double)sr->reads : NAN);
        if (sr->last_error[0])
            sps__jw_string(w, "last_error", sr->last_error);
        else
            sps__jw_null(w, "last_error");
        if (sr->note[0])
            sps__jw_string(w, "note", sr->note);
        else
            sps__jw_null(w, "note");
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');

    sps__jw_object(w, "series");
    /* the monotonic time every t_s below counts from, the first tick and
     * the tree the process series belong to: what a reader needs to put
     * the series back on the clock the zones are on */
    sps__jw_uint(w, "origin_mono_ns", base_ns);
    sps__jw_number(w, "sampler_started_s", r->started_ns ? ((double)r->started_ns - (double)base_ns) / 1e9 : NAN);
    sps__jw_int(w, "tree_pid", r->tree_pid);
    sps__jw_int(w, "interval_ms", r->interval_ms);
    sps__jw_int(w, "machine_interval_ms", r->machine_interval_ms);
    sps__jw_array(w, "metrics");
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        if (!r->host[i].count)
            continue;
        const struct sps_metric_info *m = sps_host_metric_info(i);
        sps__jw_object(w, NULL);
        sps__jw_string(w, "metric", m->name);
        sps__jw_string(w, "unit", m->unit);
        sps__jw_int(w, "interval_ms", m->cadence == SPS_EVERY_INTERVAL ? r->interval_ms : r->machine_interval_ms);
        write_last(w, &r->host[i], base_ns);
        write_points(w, &r->host[i], base_ns);
        sps__jw_end(w, '}');
    }
    for (int g = 0; g < r->ngpus; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++) {
            if (!r->gpu[g].m[i].count)
                continue;
            const struct sps_metric_info *m = sps_gpu_metric_info(i);
            sps__jw_object(w, NULL);
            sps__jw_string(w, "metric", m->name);
            sps__jw_int(w, "gpu", r->gpu[g].index);
            sps__jw_string(w, "unit", m->unit);
            sps__jw_int(w, "interval_ms", r->machine_interval_ms);
            write_last(w, &r->gpu[g].m[i], base_ns);
            write_points(w, &r->gpu[g].m[i], base_ns);
            sps__jw_end(w, '}');
        }
    for (int k = 0; k < r->nsensors; k++) {
        if (!r->sensor[k].celsius.count)
            continue;
        sps__jw_object(w, NULL);
        sps__jw_string(w, "metric", "sensor_temperature_celsius");
        sps__jw_string(w, "sensor", r->sensor[k].label);
        sps__jw_string(w, "unit", "celsius");
        sps__jw_int(w, "interval_ms", r->machine_interval_ms);
        write_last(w, &r->sensor[k].celsius, base_ns);
        write_points(w, &r->sensor[k].celsius, base_ns);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
    write_process_series(w, r, base_ns);
    sps__jw_end(w, '}');

    sps__jw_object(w, "overhead");
    double span_s = (double)r->thread_ns_total / 1e9;
    sps__jw_number(w, "sampler_cpu_seconds", r->thread_cpu_seconds);
    sps__jw_number(w, "sampler_cpu_percent_of_one_core",
                   span_s > 0 ? 100.0 * r->thread_cpu_seconds / span_s : NAN);
    sps__jw_number(w, "sampler_thread_wall_seconds", span_s);
    sps__jw_uint(w, "sampler_interval_ticks", r->interval_ticks);
    sps__jw_uint(w, "sampler_machine_ticks", r->machine_ticks);
    sps__jw_uint(w, "sampler_ticks", r->ticks);
    sps__jw_number(w, "sampler_tick_mean_s", r->ticks ? (double)r->tick_ns_total / 1e9 / (double)r->ticks : NAN);
    sps__jw_uint(w, "sampler_pss_reads", r->pss_reads);
    sps__jw_number(w, "sampler_pss_cpu_seconds", r->pss_cpu_seconds);
    write_live_view_cost(w, info);
    sps__jw_end(w, '}');
}
