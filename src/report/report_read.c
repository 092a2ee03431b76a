/*
 * report_read.c - a run directory's report.json (and its records, when
 * present) into the report model.
 *
 * INTERIM: this reads report.json through jansson's tree and rebuilds
 * the analysis from what it read; it is being replaced by a typed
 * streaming reader that reads every section (issue 16).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/input.h"
#include "report/report.h"
#include "sampler/sampler.h"
#include "stepscope.h"

/* The stats report.json keeps of a metric, as a series with no points:
 * all the summary reads. */
static void stats_from_json(struct sps__series *s, json_t *m) {
    json_int_t n = json_integer_value(json_object_get(m, "samples"));
    if (n <= 0 || !json_is_number(json_object_get(m, "mean")))
        return;
    s->n = (uint64_t)n;
    s->sum = json_number_value(json_object_get(m, "mean")) * (double)n;
    s->min = json_number_value(json_object_get(m, "min"));
    s->max = json_number_value(json_object_get(m, "max"));
    s->last = json_number_value(json_object_get(m, "last"));
}

/* A string of report.json, "" where the key is missing or not a string. */
static const char *str_at(json_t *obj, const char *key) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* An array's string, "" where it is not one. */
static const char *str_at_index(json_t *array, size_t i) {
    const char *s = json_string_value(json_array_get(array, i));
    return s ? s : "";
}

/* A number of report.json, NAN where it is absent or not a number. */
static double num_at(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* An array's number, NAN where it is null or not a number. */
static double num_at_index(json_t *array, size_t i) {
    json_t *v = json_array_get(array, i);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Seconds of report.json's time axis in ns; 0 for a missing time or one
 * no int64_t holds (converting those would be undefined). */
static int64_t ns_of_s(double s) {
    return isfinite(s) && fabs(s) < 9e9 ? (int64_t)llround(s * 1e9) : 0;
}

/*
 * Each tree process's RSS series from series.processes, as the sampler had
 * it: the whole-run statistics and the points (times in ns after the run's
 * start).  Without memory for a series' points it keeps its statistics.
 * A report.json from before per-process series has none: nothing to do.
 */
static void processes_from_json(json_t *r, struct sps__sampler_result *sampler, int64_t base) {
    size_t i;
    json_t *e;
    json_array_foreach(sps__json_at(r, "series.processes"), i, e) {
        json_t *ts = json_object_get(e, "t_s"), *mean = json_object_get(e, "mean"), *max = json_object_get(e, "max");
        json_int_t readings = json_integer_value(json_object_get(e, "readings"));
        if (sampler->nprocesses == SPS_SAMPLER_MAX_PROCESSES)
            break;
        if (readings <= 0)
            continue;
        struct sps__process_series *ps = &sampler->process[sampler->nprocesses++];
        ps->pid = (int)json_integer_value(json_object_get(e, "pid"));
        snprintf(ps->comm, sizeof ps->comm, "%s", str_at(e, "comm"));
        ps->first_seen_ns = base + ns_of_s(num_at(e, "first_seen_s"));
        struct sps__series *s = &ps->rss_bytes;
        size_t count = json_array_size(ts);
        sps__series_init(s, count > SPS_SAMPLER_DEFAULT_POINTS ? (uint32_t)count + 1 : SPS_SAMPLER_DEFAULT_POINTS);
        s->n = (uint64_t)readings;
        s->sum = num_at(e, "mean_bytes") * (double)readings;
        s->min = num_at(e, "min_bytes");
        s->max = num_at(e, "max_bytes");
        s->last = num_at(e, "last_bytes");
        s->first_ns = ps->first_seen_ns;
        s->last_ns = base + ns_of_s(num_at(e, "last_seen_s"));
        json_int_t per_point = json_integer_value(json_object_get(e, "readings_per_point"));
        s->per_point = per_point > 0 ? (uint32_t)per_point : 1;
        if (count == 0 || !(s->points = calloc(s->cap, sizeof *s->points)))
            continue;
        for (size_t k = 0; k < count; k++) {
            struct sps__series_point *p = &s->points[s->count++];
            p->t_ns = base + ns_of_s(json_number_value(json_array_get(ts, k)));
            p->mean = json_number_value(json_array_get(mean, k));
            p->max = json_number_value(json_array_get(max, k));
            /* every point holds per_point readings but the last, which
             * holds the rest */
            uint64_t before = (uint64_t)k * s->per_point;
            p->n = k + 1 < count ? s->per_point : (uint32_t)(s->n > before ? s->n - before : 1);
        }
    }
    sampler->processes_left_out = (uint64_t)json_integer_value(sps__json_at(r, "series.processes_left_out"));
}

/* The series of series.metrics (their points, on the monotonic clock:
 * base + t_s) into the sampler's host, GPU and sensor series, which
 * stats_from_json may already hold the statistics of. */
static void metric_series_from_json(json_t *r, struct sps__sampler_result *sampler, int64_t base) {
    json_t *series = json_object_get(r, "series");
    sampler->interval_ms = (int)json_integer_value(json_object_get(series, "interval_ms"));
    sampler->machine_interval_ms = (int)json_integer_value(json_object_get(series, "machine_interval_ms"));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(series, "metrics"), i, e) {
        const char *metric = str_at(e, "metric");
        json_t *gpu = json_object_get(e, "gpu"), *sensor = json_object_get(e, "sensor");
        struct sps__series *s = NULL;
        if (json_is_string(sensor)) {
            for (int k = 0; k < sampler->nsensors && !s; k++)
                if (!strcmp(sampler->sensor[k].label, json_string_value(sensor)))
                    s = &sampler->sensor[k].celsius;
            if (!s && sampler->nsensors < SPS_CAPTURE_MAX_SENSORS) {
                struct sps__sensor_series *ss = &sampler->sensor[sampler->nsensors++];
                snprintf(ss->label, sizeof ss->label, "%s", json_string_value(sensor));
                s = &ss->celsius;
            }
        } else if (json_is_integer(gpu)) {
            for (int g = 0; g < sampler->ngpus && !s; g++)
                if (sampler->gpu[g].index == (int)json_integer_value(gpu))
                    for (int m = 0; m < SPS_GPU_METRIC_COUNT && !s; m++)
                        if (!strcmp(sps_gpu_metric_info(m)->name, metric))
                            s = &sampler->gpu[g].m[m];
        } else {
            for (int m = 0; m < SPS_HOST_METRIC_COUNT && !s; m++)
                if (!strcmp(sps_host_metric_info(m)->name, metric))
                    s = &sampler->host[m];
        }
        json_t *ts = json_object_get(e, "t_s"), *mean = json_object_get(e, "mean"), *max = json_object_get(e, "max");
        size_t count = json_array_size(ts);
        if (!s || s->points || count == 0 || !(s->points = calloc(count, sizeof *s->points)))
            continue;
        s->cap = (uint32_t)count;
        json_int_t per_point = json_integer_value(json_object_get(e, "readings_per_point"));
        s->per_point = per_point > 0 ? (uint32_t)per_point : 1;
        for (size_t k = 0; k < count; k++) {
            struct sps__series_point *p = &s->points[s->count++];
            p->t_ns = base + ns_of_s(json_number_value(json_array_get(ts, k)));
            p->mean = num_at_index(mean, k);
            p->max = num_at_index(max, k);
            p->n = s->per_point;
        }
    }
}

/* The summary's inputs rebuilt from report.json: exit, times, memory, the
 * machine metrics' whole-run statistics, and each tree process's RSS
 * series. */
static void info_from_json(json_t *r, struct sps_run_info *info, struct sps__sampler_result *sampler, int64_t base) {
    json_t *exit_obj = json_object_get(r, "exit");
    if (json_is_object(exit_obj)) {
        info->have_exit = 1;
        info->exit_code = (int)json_integer_value(json_object_get(exit_obj, "code"));
        info->exit_signal = (int)json_integer_value(json_object_get(exit_obj, "signal"));
        info->core_dumped = json_is_true(json_object_get(exit_obj, "core_dumped"));
    }
    json_t *wall = sps__json_at(r, "timing.wall_s");
    if (json_is_number(wall)) {
        info->have_times = 1;
        info->wall_s = json_number_value(wall);
        info->user_s = json_number_value(sps__json_at(r, "timing.user_s"));
        info->sys_s = json_number_value(sps__json_at(r, "timing.sys_s"));
    }
    json_t *rss = sps__json_at(r, "memory.peak_rss_bytes");
    if (json_is_integer(rss)) {
        info->have_rss = 1;
        info->peak_rss_bytes = (uint64_t)json_integer_value(rss);
        info->rss_scope = json_string_value(sps__json_at(r, "memory.peak_rss_scope"));
    }
    info->start_realtime_ns = (int64_t)(json_number_value(json_object_get(r, "started_unix_s")) * 1e9);
    /* the recording cost stepscope run measured: the overhead analysis,
     * recomputed here, prices the records with it */
    json_t *oh = sps__json_at(r, "analysis.overhead");
    if (json_is_number(json_object_get(oh, "zone_cost_ns"))) {
        info->have_record_cost = 1;
        info->zone_cost_ns = num_at(oh, "zone_cost_ns");
        info->value_cost_ns = num_at(oh, "value_cost_ns");
        info->thinned_zone_cost_ns = isnan(num_at(oh, "thinned_zone_cost_ns")) ? 0 : num_at(oh, "thinned_zone_cost_ns");
        info->warm_end_ns = isnan(num_at(oh, "zone_end_warm_ns")) ? 0 : num_at(oh, "zone_end_warm_ns");
    }
    /* what the budget guard did */
    json_t *budget = json_object_get(oh, "budget");
    if (json_is_object(budget)) {
        struct sps_guard_report *g = &info->guard;
        g->on = 1;
        g->budget = num_at(budget, "max_percent_of_workload_cpu") / 100.0;
        g->first_over_s = num_at(budget, "first_exceeded_s");
        g->peak_share = num_at(budget, "peak_window_percent") / 100.0;
        g->last_share = num_at(budget, "last_window_percent") / 100.0;
        g->windows = (uint64_t)json_integer_value(json_object_get(budget, "windows_judged"));
        g->windows_over = (uint64_t)json_integer_value(json_object_get(budget, "windows_over"));
        g->over_at_steps = json_is_true(json_object_get(budget, "over_with_steps_only"));
        g->cpu_seconds = num_at(oh, "guard_cpu_s");
    }

    json_t *metrics = json_object_get(r, "metrics");
    int sampled = 0;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        stats_from_json(&sampler->host[i], json_object_get(metrics, sps_host_metric_info(i)->name));
        sampled |= sampler->host[i].n > 0;
    }
    /* whether the PSS covered the tree's peak (the summary's tree figure) */
    json_t *covered = sps__json_at(r, "memory.workload_rss_covered_by_pss_bytes");
    sampler->rss_sum_max_pss_current = json_is_number(covered) ? json_number_value(covered) : 0;
    json_t *gpus = json_object_get(r, "gpus");
    size_t g;
    json_t *gpu;
    json_array_foreach(gpus, g, gpu) {
        if (g >= SPS_CAPTURE_MAX_GPUS)
            break;
        struct sps__gpu_series *gs = &sampler->gpu[g];
        gs->index = (int)json_integer_value(json_object_get(gpu, "index"));
        const char *name = json_string_value(json_object_get(gpu, "name"));
        snprintf(gs->name, sizeof gs->name, "%s", name ? name : "");
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            stats_from_json(&gs->m[i], json_object_get(json_object_get(gpu, "metrics"), sps_gpu_metric_info(i)->name));
        sampler->ngpus = (int)g + 1;
    }
    processes_from_json(r, sampler, base);
    metric_series_from_json(r, sampler, base);
    if (sampled || sampler->ngpus)
        info->sampler = sampler;
    else
        info->sampler_absent_reason = "no machine metrics in report.json";
}

static uint32_t zone_kind(const char *kind) {
    if (!strcmp(kind, "step"))
        return SPS_KIND_STEP;
    if (!strcmp(kind, "microstep"))
        return SPS_KIND_MICROSTEP;
    return SPS_KIND_ZONE;
}


/*
 * What the summary prints from records, rebuilt from report.json for a
 * directory without them: the per-name statistics (zones, steps, values,
 * counters, in report.json's order, which is the summary's), each process
 * with its threads' open zones, what it refused and its GPU zones' cuda
 * state, the event counts and
 * the records skipped at run time.  No events, histograms or step rows:
 * the summary reads none.  A key report.json lacks reads as 0, and a null
 * statistic of a zone that never completed as 0, as sps__stats_compute
 * leaves it.  Returns 0 or SPS_ENOMEM; free *run with sps__run_free either
 * way.
 */
static int rows_from_json(json_t *r, struct sps_run *run, int64_t base);
static int process_details_from_json(json_t *e, struct sps_process_data *p, int64_t base);

static int run_from_json(json_t *r, struct sps_run *run, int64_t base) {
    json_t *zones = json_object_get(r, "zones"), *values = json_object_get(r, "values");
    json_t *counters = json_object_get(r, "counters"), *procs = json_object_get(r, "processes");
    json_t *skipped = json_object_get(r, "records_skipped");
    memset(run, 0, sizeof *run);
    size_t nnames = json_array_size(zones) + json_array_size(values) + json_array_size(counters);
    /* every array is allocated zeroed and counted at once, so that
     * sps__run_free can free a run left half-built by a failed allocation */
    if (nnames && !(run->names = calloc(nnames, sizeof *run->names)))
        return SPS_ENOMEM;
    run->nnames = nnames;
    struct sps_name_summary *n = run->names;
    size_t i;
    json_t *e;
    json_array_foreach(zones, i, e) {
        snprintf(n->name, sizeof n->name, "%s", str_at(e, "name"));
        n->kind = zone_kind(str_at(e, "kind"));
        struct sps_stats *s = &n->stats;
        s->count = (uint64_t)json_integer_value(json_object_get(e, "count"));
        s->total_s = json_number_value(json_object_get(e, "total_s"));
        s->self_s = json_number_value(json_object_get(e, "self_s"));
        s->mean_s = json_number_value(json_object_get(e, "mean_s"));
        s->std_s = json_number_value(json_object_get(e, "std_s"));
        s->min_s = json_number_value(json_object_get(e, "min_s"));
        s->max_s = json_number_value(json_object_get(e, "max_s"));
        s->p50_s = json_number_value(json_object_get(e, "p50_s"));
        s->p90_s = json_number_value(json_object_get(e, "p90_s"));
        s->p99_s = json_number_value(json_object_get(e, "p99_s"));
        n->agg.kind = n->kind;
        n->agg.count = s->count;
        n++;
    }
    json_array_foreach(values, i, e) {
        snprintf(n->name, sizeof n->name, "%s", str_at(e, "name"));
        n->kind = n->agg.kind = SPS_KIND_VALUE;
        n->agg.count = (uint64_t)json_integer_value(json_object_get(e, "count"));
        n->agg.min = json_number_value(json_object_get(e, "min"));
        n->agg.max = json_number_value(json_object_get(e, "max"));
        n->agg.first = json_number_value(json_object_get(e, "first"));
        n->agg.last = json_number_value(json_object_get(e, "last"));
        n++;
    }
    json_array_foreach(counters, i, e) {
        snprintf(n->name, sizeof n->name, "%s", str_at(e, "name"));
        n->kind = n->agg.kind = SPS_KIND_COUNTER;
        n->agg.total_ns = (uint64_t)json_integer_value(json_object_get(e, "total")); /* a counter's sum */
        n->agg.count = (uint64_t)json_integer_value(json_object_get(e, "increments"));
        n++;
    }

    run->events_recorded = (uint64_t)json_integer_value(sps__json_at(r, "recording.events_recorded"));
    run->events_dropped = (uint64_t)json_integer_value(sps__json_at(r, "recording.events_dropped"));
    size_t nprocs = json_array_size(procs);
    if (nprocs && !(run->procs = calloc(nprocs, sizeof *run->procs)))
        return SPS_ENOMEM;
    run->nprocs = nprocs;
    json_array_foreach(procs, i, e) {
        struct sps_process_data *p = &run->procs[i];
        p->pid = (int)json_integer_value(json_object_get(e, "pid"));
        p->threads_refused = (uint64_t)json_integer_value(json_object_get(e, "threads_refused"));
        p->names_refused = (uint64_t)json_integer_value(json_object_get(e, "names_refused"));
        snprintf(p->problem, sizeof p->problem, "%s", str_at(e, "recording_problem"));
        json_t *cuda = json_object_get(e, "cuda"); /* null: no GPU zone */
        if (json_is_object(cuda)) {
            p->cuda_state = json_is_true(json_object_get(cuda, "available")) ? SPS_REC_CUDA_AVAILABLE
                                                                               : SPS_REC_CUDA_UNAVAILABLE;
            p->cuda_driver_version = (int32_t)json_integer_value(json_object_get(cuda, "driver_version"));
            snprintf(p->cuda_reason, sizeof p->cuda_reason, "%s", str_at(cuda, "reason"));
            p->cuda_resolved = (uint64_t)json_integer_value(json_object_get(cuda, "zones_resolved"));
            p->cuda_cpu_only = (uint64_t)json_integer_value(json_object_get(cuda, "zones_cpu_only"));
            p->cuda_dropped = (uint64_t)json_integer_value(json_object_get(cuda, "zones_dropped"));
            p->cuda_unresolved = (uint64_t)json_integer_value(json_object_get(cuda, "zones_unresolved"));
        }
        if (!(p->path = strdup(str_at(e, "record"))) || process_details_from_json(e, p, base) != 0)
            return SPS_ENOMEM;
        json_t *threads = json_object_get(e, "threads");
        size_t nthreads = json_array_size(threads), nopen = 0, ti;
        json_t *t;
        json_array_foreach(threads, ti, t)
            nopen += json_array_size(json_object_get(t, "open_zones"));
        if ((nthreads && !(p->threads = calloc(nthreads, sizeof *p->threads))) ||
            (nopen && !(p->names = calloc(nopen, sizeof *p->names))))
            return SPS_ENOMEM;
        p->nthreads = (uint32_t)nthreads;
        /* an open zone names its zone by id (index into p->names + 1): each
         * gets a name of its own */
        json_array_foreach(threads, ti, t) {
            struct sps_thread_data *td = &p->threads[ti];
            td->tid = (int)json_integer_value(json_object_get(t, "tid"));
            snprintf(td->name, sizeof td->name, "%s", str_at(t, "name"));
            size_t k;
            json_t *z;
            json_array_foreach(json_object_get(t, "open_zones"), k, z) {
                if (td->nopen >= SPS_REC_MAX_DEPTH)
                    break;
                struct sps_name_info *ni = &p->names[p->nnames++];
                snprintf(ni->name, sizeof ni->name, "%s", str_at(z, "name"));
                ni->kind = zone_kind(str_at(z, "kind"));
                td->open[td->nopen++] = (struct sps_open_zone){.name = p->nnames, .kind = ni->kind};
            }
        }
    }
    size_t nskipped = json_array_size(skipped);
    if (nskipped && !(run->skipped = calloc(nskipped, sizeof *run->skipped)))
        return SPS_ENOMEM;
    run->nskipped = nskipped;
    json_array_foreach(skipped, i, e) {
        run->skipped[i].path = strdup(str_at(e, "record"));
        run->skipped[i].error = strdup(str_at(e, "error"));
        if (!run->skipped[i].path || !run->skipped[i].error)
            return SPS_ENOMEM;
    }
    return rows_from_json(r, run, base);
}

/* A process's rank, command and start (base + start_s). */
static int process_details_from_json(json_t *e, struct sps_process_data *p, int64_t base) {
    json_t *rank = json_object_get(e, "rank"), *local = json_object_get(e, "local_rank");
    json_t *world = json_object_get(e, "world_size"), *cmd = json_object_get(e, "command");
    p->rank = json_is_integer(rank) ? (int)json_integer_value(rank) : -1;
    p->local_rank = json_is_integer(local) ? (int)json_integer_value(local) : -1;
    p->world_size = json_is_integer(world) ? (int)json_integer_value(world) : -1;
    p->ppid = (int)json_integer_value(json_object_get(e, "ppid"));
    snprintf(p->hostname, sizeof p->hostname, "%s", str_at(e, "hostname"));
    p->start_ns = (uint64_t)(base + ns_of_s(num_at(e, "start_s")));
    size_t argc = json_array_size(cmd);
    if (argc && !(p->argv = calloc(argc, sizeof *p->argv)))
        return SPS_ENOMEM;
    for (size_t k = 0; k < argc; k++) {
        if (!(p->argv[k] = strdup(str_at_index(cmd, k))))
            return SPS_ENOMEM;
        p->argc = (int)k + 1;
    }
    return 0;
}

/* steps.rows into run->steps: each row's process by pid, its name among
 * the run's step names, its times (base + start_s) and its cells by name.
 * Rows without times are left out. */
static int rows_from_json(json_t *r, struct sps_run *run, int64_t base) {
    json_t *steps = json_object_get(r, "steps"), *rows = json_object_get(steps, "rows");
    size_t nrows = json_array_size(rows);
    run->steps_recorded = (uint64_t)json_integer_value(json_object_get(steps, "count"));
    run->warmup_steps = (size_t)json_integer_value(json_object_get(steps, "warmup_steps"));
    if (nrows && !(run->steps = calloc(nrows, sizeof *run->steps)))
        return SPS_ENOMEM;
    size_t i;
    json_t *e;
    json_array_foreach(rows, i, e) {
        json_t *start = json_object_get(e, "start_s"), *dur = json_object_get(e, "duration_s");
        if (!json_is_number(start) || !json_is_number(dur))
            continue;
        struct sps_step_row *row = &run->steps[run->nsteps];
        if (run->nnames && !(row->by_name = malloc(run->nnames * sizeof *row->by_name)))
            return SPS_ENOMEM;
        run->nsteps++;
        row->index = (uint64_t)json_integer_value(json_object_get(e, "index"));
        row->tid = (int)json_integer_value(json_object_get(e, "tid"));
        int pid = (int)json_integer_value(json_object_get(e, "pid"));
        row->process = 0;
        for (size_t k = 0; k < run->nprocs; k++)
            if (run->procs[k].pid == pid) {
                row->process = k;
                break;
            }
        const char *name = json_string_value(json_object_get(e, "name"));
        row->name = -1;
        for (size_t k = 0; name && k < run->nnames && row->name < 0; k++)
            if (run->names[k].kind == SPS_KIND_STEP && !strcmp(run->names[k].name, name))
                row->name = (long)k;
        row->start_ns = (uint64_t)(base + ns_of_s(json_number_value(start)));
        row->end_ns = row->start_ns + (uint64_t)ns_of_s(json_number_value(dur));
        row->warmup = json_is_true(json_object_get(e, "warmup"));
        row->microsteps = (uint32_t)json_integer_value(json_object_get(e, "microsteps"));
        for (size_t k = 0; k < run->nnames; k++) {
            const char *group = run->names[k].kind == SPS_KIND_ZONE      ? "zones_self_s"
                                : run->names[k].kind == SPS_KIND_VALUE   ? "values"
                                : run->names[k].kind == SPS_KIND_COUNTER ? "counters"
                                                                         : NULL;
            json_t *v = group ? json_object_get(json_object_get(e, group), run->names[k].name) : NULL;
            row->by_name[k] = json_is_number(v) ? json_number_value(v) : NAN;
        }
    }
    return 0;
}

int sps__report_load_dir(struct sps_report *rep, const char *dir, char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    struct sps_report_input in;
    int rc = sps__report_input_load_raw(dir, &in, err, errlen);
    if (rc != 0)
        return rc;
    struct sps__sampler_result *sampler = calloc(1, sizeof *sampler);
    if (!sampler) {
        sps__report_input_free(&in);
        snprintf(err, errlen, "out of memory");
        return SPS_ENOMEM;
    }
    /* the run's start: what report.json's times count from */
    json_t *started = json_object_get(in.report, "started_mono_ns");
    int64_t base = json_is_integer(started) ? (int64_t)json_integer_value(started) : 0;
    struct sps_run_info info = {0};
    info_from_json(in.report, &info, sampler, base);
    info.start_mono_ns = (uint64_t)base;
    struct sps_run run = {0};
    if (in.have_records) {
        run = in.run;
        memset(&in.run, 0, sizeof in.run);
    } else {
        rc = run_from_json(in.report, &run, base);
    }
    if (base)
        run.start_ns = (uint64_t)base;
    if (rc == 0)
        rc = sps__report_build(rep, &run, &info);
    else
        sps__run_free(&run);
    rep->have_events = in.have_records;
    rep->have_records = in.have_records;
    snprintf(rep->records_note, sizeof rep->records_note, "%s", in.records_note);
    rep->machine_owned = sampler;
    sps__report_input_free(&in);
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}
