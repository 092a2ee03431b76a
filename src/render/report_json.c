/*
 * report_json.c - report.json, schema stepscope.report/1 (documented in
 * docs/report-format.md: add keys freely, never rename or remove one
 * without bumping the schema).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "render/auto_mode.h"
#include "render/merge_view.h"
#include "render/json_writer.h"
#include "platform/atomic_file.h"
#include "render/render.h"
#include "sampler/sampler.h"
#include "stepscope.h"

static const char *kind_name(uint32_t kind) {
    switch (kind) {
    case SPS_KIND_ZONE: return "zone";
    case SPS_KIND_STEP: return "step";
    case SPS_KIND_MICROSTEP: return "microstep";
    case SPS_KIND_VALUE: return "value";
    case SPS_KIND_COUNTER: return "counter";
    case SPS_KIND_WAIT: return "wait";
    default: return "unknown";
    }
}

static const char *ring_name(int ring) {
    return ring == SPS_RING_ZONES ? "zones" : ring == SPS_RING_STEPS ? "steps" : "values";
}

static double rel_s(const struct sps_run *run, uint64_t ns) {
    return ((double)ns - (double)run->start_ns) / 1e9;
}

static void write_command(struct sps_jw *w, const struct sps_run *run, const struct sps_run_info *info) {
    sps__jw_array(w, "command");
    if (info->argv) {
        for (int i = 0; i < info->argc; i++)
            sps__jw_string(w, NULL, info->argv[i]);
    } else if (run->nprocs) {
        for (int i = 0; i < run->procs[0].argc; i++)
            sps__jw_string(w, NULL, run->procs[0].argv[i]);
    }
    sps__jw_end(w, ']');
}

static void write_exit(struct sps_jw *w, const struct sps_run_info *info) {
    if (!info->have_exit) {
        sps__jw_null(w, "exit");
        return;
    }
    char buf[32];
    sps__jw_object(w, "exit");
    if (info->exit_signal) {
        sps__jw_string(w, "status", "killed");
        sps__jw_int(w, "signal", info->exit_signal);
        sps__jw_string(w, "signal_name", sps__signal_name(info->exit_signal, buf, sizeof buf));
        sps__jw_bool(w, "core_dumped", info->core_dumped);
    } else {
        sps__jw_string(w, "status", "exited");
        sps__jw_int(w, "code", info->exit_code);
    }
    sps__jw_end(w, '}');
}

/* A zone that never completed has totals of 0 but no mean, extremes or
 * percentiles: those are null, not a made-up 0. */
static void write_stats(struct sps_jw *w, const struct sps_stats *s) {
    double none = s->count ? 0.0 : NAN;
    sps__jw_uint(w, "count", s->count);
    sps__jw_number(w, "total_s", s->total_s);
    sps__jw_number(w, "self_s", s->self_s);
    sps__jw_number(w, "mean_s", s->mean_s + none);
    sps__jw_number(w, "std_s", s->std_s + none);
    sps__jw_number(w, "min_s", s->min_s + none);
    sps__jw_number(w, "max_s", s->max_s + none);
    sps__jw_number(w, "p50_s", s->p50_s + none);
    sps__jw_number(w, "p90_s", s->p90_s + none);
    sps__jw_number(w, "p99_s", s->p99_s + none);
}

static void write_zones(struct sps_jw *w, const struct sps_run *run, double wall_s) {
    sps__jw_array(w, "zones");
    for (size_t i = 0; i < run->nnames; i++) {
        const struct sps_name_summary *n = &run->names[i];
        if (!sps_kind_is_timed(n->kind))
            continue;
        sps__jw_object(w, NULL);
        sps__jw_string(w, "name", n->name);
        sps__jw_string(w, "kind", kind_name(n->kind));
        write_stats(w, &n->stats);
        sps__jw_number(w, "share_of_wall", wall_s > 0 ? n->stats.total_s / wall_s : NAN);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
}

static void write_values(struct sps_jw *w, const struct sps_run *run) {
    sps__jw_array(w, "values");
    for (size_t i = 0; i < run->nnames; i++) {
        const struct sps_name_summary *n = &run->names[i];
        if (n->kind != SPS_KIND_VALUE)
            continue;
        const struct sps_agg *a = &n->agg;
        sps__jw_object(w, NULL);
        sps__jw_string(w, "name", n->name);
        sps__jw_uint(w, "count", a->count);
        sps__jw_number(w, "mean", n->stats.mean_s); /* sps__value_stats */
        sps__jw_number(w, "std", n->stats.std_s);
        sps__jw_number(w, "min", a->count ? a->min : NAN);
        sps__jw_number(w, "max", a->count ? a->max : NAN);
        sps__jw_number(w, "first", a->count ? a->first : NAN);
        sps__jw_number(w, "last", a->count ? a->last : NAN);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
    sps__jw_array(w, "counters");
    for (size_t i = 0; i < run->nnames; i++) {
        const struct sps_name_summary *n = &run->names[i];
        if (n->kind != SPS_KIND_COUNTER)
            continue;
        sps__jw_object(w, NULL);
        sps__jw_string(w, "name", n->name);
        sps__jw_uint(w, "total", n->agg.total_ns);
        sps__jw_uint(w, "increments", n->agg.count);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
}

/* GPU zones: whether libcuda worked where they were used, why not, and
 * what became of their event pairs.  The counts are what the processes
 * had flushed (step ends, sps_gpu_flush) when their records were read. */
static void write_cuda_counts(struct sps_jw *w, uint64_t resolved, uint64_t cpu_only, uint64_t dropped,
                              uint64_t unresolved) {
    sps__jw_uint(w, "zones_resolved", resolved);
    sps__jw_uint(w, "zones_cpu_only", cpu_only);
    sps__jw_uint(w, "zones_dropped", dropped);
    sps__jw_uint(w, "zones_unresolved", unresolved);
}

static void write_cuda(struct sps_jw *w, const struct sps_run *run) {
    struct sps_run_cuda c;
    sps__run_cuda(run, &c);
    sps__jw_object(w, "cuda");
    sps__jw_bool(w, "used", c.processes > 0);
    if (c.processes)
        sps__jw_bool(w, "available", c.available > 0);
    else
        sps__jw_null(w, "available");
    if (c.driver_version)
        sps__jw_int(w, "driver_version", c.driver_version);
    else
        sps__jw_null(w, "driver_version");
    if (!c.processes)
        sps__jw_string(w, "reason", "no process began a GPU zone (sps_gpu_zone_begin, stepscope.gpu_zone)");
    else if (c.reason)
        sps__jw_string(w, "reason", c.reason);
    else
        sps__jw_null(w, "reason");
    if (c.reason)
        sps__jw_int(w, "reason_pid", c.reason_pid);
    sps__jw_uint(w, "processes", c.processes);
    write_cuda_counts(w, c.resolved, c.cpu_only, c.dropped, c.unresolved);
    sps__jw_end(w, '}');
}

static void write_steps(struct sps_jw *w, const struct sps_run *run) {
    sps__jw_object(w, "steps");
    sps__jw_uint(w, "count", run->steps_recorded);
    sps__jw_uint(w, "rows_kept", run->nsteps);
    sps__jw_uint(w, "warmup_steps", run->warmup_steps);
    sps__jw_array(w, "rows");
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *row = &run->steps[i];
        const struct sps_process_data *p = &run->procs[row->process];
        sps__jw_object(w, NULL);
        sps__jw_uint(w, "index", row->index);
        if (row->name >= 0)
            sps__jw_string(w, "name", run->names[row->name].name);
        sps__jw_int(w, "pid", p->pid);
        sps__jw_int(w, "tid", row->tid);
        if (p->rank >= 0)
            sps__jw_int(w, "rank", p->rank);
        sps__jw_number(w, "start_s", rel_s(run, row->start_ns));
        sps__jw_number(w, "duration_s", (double)(row->end_ns - row->start_ns) / 1e9);
        sps__jw_bool(w, "warmup", row->warmup);
        if (row->microsteps)
            sps__jw_uint(w, "microsteps", row->microsteps);
        static const struct {
            const char *key;
            uint32_t kind;
        } groups[] = {{"zones_self_s", SPS_KIND_ZONE},
                      {"waits_s", SPS_KIND_WAIT},
                      {"values", SPS_KIND_VALUE},
                      {"counters", SPS_KIND_COUNTER}};
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            sps__jw_object(w, groups[g].key);
            for (size_t k = 0; k < run->nnames; k++)
                if (run->names[k].kind == groups[g].kind && !isnan(row->by_name[k]))
                    sps__jw_number(w, run->names[k].name, row->by_name[k]);
            sps__jw_end(w, '}');
        }
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
    sps__jw_end(w, '}');
}

static void write_processes(struct sps_jw *w, const struct sps_run *run) {
    sps__jw_array(w, "processes");
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        sps__jw_object(w, NULL);
        sps__jw_int(w, "pid", p->pid);
        sps__jw_int(w, "ppid", p->ppid);
        if (p->rank >= 0)
            sps__jw_int(w, "rank", p->rank);
        if (p->local_rank >= 0)
            sps__jw_int(w, "local_rank", p->local_rank);
        if (p->world_size >= 0)
            sps__jw_int(w, "world_size", p->world_size);
        sps__jw_string(w, "hostname", p->hostname);
        sps__jw_array(w, "command");
        for (int i = 0; i < p->argc; i++)
            sps__jw_string(w, NULL, p->argv[i]);
        sps__jw_end(w, ']');
        sps__jw_string(w, "record", p->path);
        if (p->header_crc) /* what tells this record from another run's of the same name */
            sps__jw_uint(w, "record_header_crc", p->header_crc);
        else
            sps__jw_null(w, "record_header_crc");
        /* the library marks a record closed in its exit handler; anything
         * else (a signal, _exit, a crash) leaves it live */
        sps__jw_string(w, "ended", p->closed              ? "exit"
                                   : p->running_at_report ? "still running when the report was taken"
                                                          : "without exit (killed, crashed or still running)");
        sps__jw_bool(w, "running_at_report", p->running_at_report);
        sps__jw_number(w, "start_s", rel_s(run, p->start_ns));
        sps__jw_string(w, "clock", p->clock_source == SPS_CLOCK_TSC ? "tsc" : "monotonic");
        sps__jw_number(w, "clock_ticks_per_second", p->ticks_per_second);
        sps__jw_string(w, "ring_policy", p->ring_policy == SPS_POLICY_KEEP_FIRST ? "keep-first" : "keep-latest");
        sps__jw_uint(w, "threads_refused", p->threads_refused);
        sps__jw_uint(w, "names_refused", p->names_refused);
        if (p->problem[0])
            sps__jw_string(w, "recording_problem", p->problem);
        else
            sps__jw_null(w, "recording_problem");
        sps__jw_string(w, "thin_level", sps__thin_level_name(p->thin_level));
        if (p->thin_since_ns)
            sps__jw_number(w, "thinned_since_s", rel_s(run, p->thin_since_ns));
        else
            sps__jw_null(w, "thinned_since_s");
        sps__jw_uint(w, "zones_thinned", p->zones_thinned);
        if (p->cuda_state == SPS_REC_CUDA_UNUSED) {
            sps__jw_null(w, "cuda");
        } else {
            sps__jw_object(w, "cuda");
            sps__jw_bool(w, "available", p->cuda_state == SPS_REC_CUDA_AVAILABLE);
            if (p->cuda_driver_version)
                sps__jw_int(w, "driver_version", p->cuda_driver_version);
            else
                sps__jw_null(w, "driver_version");
            if (p->cuda_reason[0])
                sps__jw_string(w, "reason", p->cuda_reason);
            else
                sps__jw_null(w, "reason");
            write_cuda_counts(w, p->cuda_resolved, p->cuda_cpu_only, p->cuda_dropped, p->cuda_unresolved);
            sps__jw_end(w, '}');
        }
        sps__report_json_process_auto(w, p);
        sps__report_json_process_clock(w, p);
        sps__jw_array(w, "threads");
        for (uint32_t ti = 0; ti < p->nthreads; ti++) {
            const struct sps_thread_data *t = &p->threads[ti];
            sps__jw_object(w, NULL);
            sps__jw_int(w, "tid", t->tid);
            sps__jw_string(w, "name", t->name);
            sps__jw_bool(w, "exited", t->exited);
            /* threads that exited and left this segment to the next one:
             * tid and name are the latest thread's, the counts everyone's */
            sps__jw_uint(w, "earlier_threads", t->reuses);
            sps__jw_object(w, "events");
            for (int r = 0; r < SPS_RING_COUNT; r++) {
                sps__jw_object(w, ring_name(r));
                sps__jw_uint(w, "recorded", t->offered[r]);
                sps__jw_uint(w, "kept", t->offered[r] - t->dropped[r]);
                sps__jw_uint(w, "dropped", t->dropped[r]);
                sps__jw_uint(w, "capacity", p->ring_cap[r]);
                sps__jw_end(w, '}');
            }
            sps__jw_end(w, '}');
            sps__jw_uint(w, "mismatched_ends", t->mismatched_ends);
            sps__jw_uint(w, "depth_overflows", t->depth_overflows);
            sps__jw_uint(w, "zones_thinned", t->zones_thinned);
            sps__jw_array(w, "open_zones");
            for (uint32_t k = 0; k < t->nopen; k++) {
                sps__jw_object(w, NULL);
                sps__jw_string(w, "name", p->names[t->open[k].name - 1].name);
                sps__jw_string(w, "kind", kind_name(t->open[k].kind));
                sps__jw_number(w, "start_s", rel_s(run, t->open[k].start_ns));
                sps__jw_end(w, '}');
            }
            sps__jw_end(w, ']');
            sps__jw_end(w, '}');
        }
        sps__jw_end(w, ']');
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
    sps__jw_array(w, "records_skipped");
    for (size_t i = 0; i < run->nskipped; i++) {
        sps__jw_object(w, NULL);
        sps__jw_string(w, "record", run->skipped[i].path);
        sps__jw_string(w, "error", run->skipped[i].error);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
}

/*
 * The watched tree's memory in memory{}: its peak PSS (pages its processes
 * share count once) and its peak RSS summed over processes (each shared page
 * once per process), which of the two stands for the tree's peak (what the
 * summary and the HTML report use; the leak analysis, which needs a trend,
 * picks by its own count of readings and says so in analysis.leaks), and why
 * there is no PSS when there is none.  Nulls without a sampler.
 */
static void write_tree_memory(struct sps_jw *w, const struct sps__sampler_result *r) {
    const struct sps__series *pss = r ? &r->host[SPS_M_WORKLOAD_PSS_PEAK_BYTES] : NULL;
    const struct sps__series *rss = r ? &r->host[SPS_M_WORKLOAD_RSS_PEAK_BYTES] : NULL;
    sps__jw_number(w, "workload_peak_pss_bytes", pss && pss->n ? pss->max : NAN);
    sps__jw_number(w, "workload_peak_rss_bytes", rss && rss->n ? rss->max : NAN);
    sps__jw_number(w, "workload_rss_covered_by_pss_bytes", r && r->rss_sum_max_pss_current > 0
                                                                ? r->rss_sum_max_pss_current
                                                                : NAN);
    if (!r) {
        sps__jw_null(w, "workload_memory_metric");
        sps__jw_null(w, "workload_pss_unavailable_reason");
        return;
    }
    sps__jw_string(w, "workload_memory_metric", sps_host_metric_info(sps__tree_memory_metric(r))->name);
    if (sps__tree_memory_metric(r) == SPS_M_WORKLOAD_PSS_BYTES) {
        sps__jw_null(w, "workload_pss_unavailable_reason");
        return;
    }
    if (pss->n) {
        sps__jw_string(w, "workload_pss_unavailable_reason",
                       "the tree's RSS sum grew past what it was at the last PSS read the sampler could afford "
                       "(sampler_pss_cpu_seconds): the PSS peak does not cover the tree's largest moment");
        return;
    }
    const struct sps__source_result *src = &r->sources[SPS_SOURCE_PROC];
    const char *why = strstr(src->note, "PSS") ? src->note
                      : !src->available        ? src->reason
                      : r->tree_pid <= 0       ? "no process tree was watched"
                                               : "PSS was not read during the run: a read is due when the time "
                                                 "since the last (or since the tree was first read) pays for its "
                                                 "cost at 0.01% of a core";
    sps__jw_string(w, "workload_pss_unavailable_reason", why);
}

/* Whether `stepscope report` rebuilt this report from the records alone,
 * why, and what it therefore lacks; null in every other report. */
static void write_rebuilt(struct sps_jw *w, const struct sps_run_info *info) {
    if (!info->rebuilt_reason) {
        sps__jw_null(w, "rebuilt_from_records");
        return;
    }
    sps__jw_object(w, "rebuilt_from_records");
    sps__jw_string(w, "reason", info->rebuilt_reason);
    sps__jw_array(w, "missing");
    const char *parts[16];
    size_t n = sps__report_missing(info, parts, sizeof parts / sizeof parts[0]);
    for (size_t i = 0; i < n; i++)
        sps__jw_string(w, NULL, parts[i]);
    sps__jw_end(w, ']');
    sps__jw_end(w, '}');
}

void sps__report_json_print(FILE *f, const struct sps_report *rep) {
    const struct sps_run *run = &rep->run;
    const struct sps_run_info *info = &rep->info;
    struct sps_jw w;
    sps__jw_init(&w, f);
    sps__jw_object(&w, NULL);
    sps__jw_string(&w, "schema", SPS_REPORT_SCHEMA);
    sps__jw_string(&w, "stepscope_version", SPS_VERSION_STRING);
    write_command(&w, run, info);
    if (info->standalone_reason)
        sps__jw_string(&w, "written_by", info->standalone_reason);
    write_rebuilt(&w, info);
    sps__jw_number(&w, "started_unix_s", (double)info->start_realtime_ns / 1e9);
    /* the anchor between the two clocks: events and series are on the
     * monotonic clock, relative to this */
    if (run->start_ns)
        sps__jw_uint(&w, "started_mono_ns", run->start_ns);
    else /* a report read from one without the anchor: null, never a fake 0 */
        sps__jw_null(&w, "started_mono_ns");
    if (info->trace_max_bytes)
        sps__jw_uint(&w, "trace_max_bytes", info->trace_max_bytes);
    else
        sps__jw_null(&w, "trace_max_bytes");
    write_exit(&w, info);

    sps__jw_object(&w, "timing");
    sps__jw_number(&w, "wall_s", info->have_times ? info->wall_s : NAN);
    sps__jw_number(&w, "user_s", info->have_times ? info->user_s : NAN);
    sps__jw_number(&w, "sys_s", info->have_times ? info->sys_s : NAN);
    sps__jw_end(&w, '}');
    sps__jw_object(&w, "memory");
    if (info->have_rss)
        sps__jw_uint(&w, "peak_rss_bytes", info->peak_rss_bytes);
    else
        sps__jw_null(&w, "peak_rss_bytes");
    sps__jw_string(&w, "peak_rss_scope", info->rss_scope ? info->rss_scope : "largest single process of the tree (getrusage)");
    write_tree_memory(&w, info->sampler);
    sps__jw_end(&w, '}');

    sps__jw_object(&w, "recording");
    /* every process of a run inherits the clock choice; each process's own
     * calibration is under processes[] */
    if (run->nprocs) {
        sps__jw_string(&w, "clock", run->procs[0].clock_source == SPS_CLOCK_TSC ? "tsc" : "monotonic");
        sps__jw_number(&w, "clock_ticks_per_second", run->procs[0].ticks_per_second);
    } else {
        sps__jw_null(&w, "clock");
        sps__jw_null(&w, "clock_ticks_per_second");
    }
    sps__jw_uint(&w, "processes", run->nprocs);
    sps__jw_uint(&w, "events_recorded", run->events_recorded);
    sps__jw_uint(&w, "events_dropped", run->events_dropped);
    sps__jw_end(&w, '}');

    write_zones(&w, run, info->have_times ? info->wall_s : NAN);
    write_steps(&w, run);
    sps__report_json_auto(&w, rep);
    write_values(&w, run);
    write_cuda(&w, run);
    write_processes(&w, run);
    sps__report_json_merge(&w, run);
    sps__report_json_torch(&w, run);
    sps__report_json_ranks(&w, &rep->ranks);
    sps__report_json_metrics(&w, info, info->start_mono_ns ? info->start_mono_ns : run->nprocs ? run->start_ns : 0);
    /* the answers last: they rest on everything above */
    sps__analysis_json(&w, &rep->analysis);
    sps__jw_end(&w, '}');
}

int sps__report_json_write(const struct sps_report *rep, const char *path, char *err, size_t errlen) {
    struct sps_atomic_file out;
    if (sps__atomic_open(&out, path, err, errlen) != 0)
        return SPS_EIO;
    FILE *f = sps__atomic_stream(&out, err, errlen);
    if (!f) {
        sps__atomic_abort(&out);
        return SPS_EIO;
    }
    sps__report_json_print(f, rep);
    return sps__atomic_commit(&out, 0, err, errlen);
}

const char *sps__signal_name(int sig, char *buf, size_t len) {
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, len, "SIG%s", abbrev);
    else
        snprintf(buf, len, "SIG%d", sig);
    return buf;
}
