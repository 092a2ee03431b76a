/*
 * report_read_machine.c - report.json's machine half into the model
 * (report_read.h): what the sampler saw, rebuilt as the sampler had it
 * (struct sps__sampler_result, rep->machine_owned), so the renderers and
 * the analysis inputs see the series they saw when the run was live.
 *
 * report.json carries each series' whole-run statistics under "metrics",
 * "gpus" and "sensors" and its points under "series"; the two meet here.
 * What report.json does not carry is rebuilt from what it does:
 *   - a point's reading count: every point but the newest holds
 *     readings_per_point readings (series.h: a new point starts only when
 *     the newest is full, and halving merges full points), the newest the
 *     rest of the series' readings;
 *   - a series' first reading time: its first point's time;
 *   - a whole-run sum: mean x readings; a total time: mean x count.
 * Times are the monotonic clock's: series.origin_mono_ns plus each t_s,
 * to the nanosecond (report.json writes every double exactly:
 * json_writer.c), and so does every other number: written again they
 * are the same bytes.
 *
 * Not kept by report.json, so not read back: a series' point capacity
 * (the default, or the points it holds if more), a process's start ticks.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_read.h"
#include "report/report_read_values.h"
#include "sampler/sampler.h"
#include "stepscope.h"

/* rep->strings_owned slot of info.sampler_absent_reason (0-3 are the
 * builder's) */
#define ABSENT_REASON_SLOT 4

#define STR_(x) #x
#define STR(x) STR_(x)

/* The sampler result, made on first use: every series empty, as a
 * sampler's are before its first reading. */
static struct sps__sampler_result *machine(struct sps_report *rep) {
    if (rep->machine_owned)
        return rep->machine_owned;
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        sps__series_init(&r->host[i], SPS_SAMPLER_DEFAULT_POINTS);
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++) {
        r->gpu[g].source = -1;
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            sps__series_init(&r->gpu[g].m[i], SPS_SAMPLER_DEFAULT_POINTS);
    }
    for (int k = 0; k < SPS_CAPTURE_MAX_SENSORS; k++)
        sps__series_init(&r->sensor[k].celsius, SPS_SAMPLER_DEFAULT_POINTS);
    for (int k = 0; k < SPS_SAMPLER_MAX_PROCESSES; k++)
        sps__series_init(&r->process[k].rss_bytes, SPS_SAMPLER_DEFAULT_POINTS);
    rep->machine_owned = r;
    rep->info.sampler = r;
    return r;
}

/* ------------------------------------------------------------ statistics */

/* A series' whole-run statistics as report.json writes them. */
struct stats {
    uint64_t n;
    double mean, min, max, last;
};

#define STATS_NONE {0, NAN, NAN, NAN, NAN}

/* Read key's value into st when key is one of the statistics' keys
 * (prefix "" or "_bytes" for a process's); *taken says whether it was. */
static int stats_member(struct sps_jscan *s, const char *key, const char *suffix, struct stats *st, int *taken) {
    static const char *const names[] = {"mean", "min", "max", "last"};
    double *slots[] = {&st->mean, &st->min, &st->max, &st->last};
    char want[32];
    *taken = 1;
    if (!strcmp(key, *suffix ? "readings" : "samples"))
        return sps__jread_u64(s, key, &st->n);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(want, sizeof want, "%s%s", names[i], suffix);
        if (!strcmp(key, want))
            return sps__jread_number(s, key, slots[i]);
    }
    *taken = 0;
    return 0;
}

static void stats_apply(const struct stats *st, struct sps__series *se) {
    if (!st->n)
        return; /* no reading: the series stays as sps__series_init left it */
    se->n = st->n;
    se->sum = st->mean * (double)st->n;
    se->min = st->min;
    se->max = st->max;
    se->last = st->last;
}

/*
 * One metric of "metrics" or a GPU's "metrics": its statistics into se.
 * The first unavailable_reason is kept in the absent-reason slot: when
 * no sampler ran, every metric carries the reason why (and "series" says
 * no sampler ran, see read_series).
 */
static int read_metric(struct sps_jscan *s, struct sps_report *rep, struct sps__series *se) {
    struct stats st = STATS_NONE;
    int rc = sps__jread_open(s, "metric", '{'), taken;
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if ((rc = stats_member(s, key, "", &st, &taken)) || taken)
            continue;
        if (!strcmp(key, "unavailable_reason") && !rep->strings_owned[ABSENT_REASON_SLOT])
            rc = sps__jread_strdup(s, key, &rep->strings_owned[ABSENT_REASON_SLOT]);
        else
            rc = sps__jscan_skip(s); /* unit, source, kind: the catalogue's */
    }
    if (!rc && se)
        stats_apply(&st, se);
    return rc;
}

static int host_metric_id(const char *name) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        if (!strcmp(sps_host_metric_info(i)->name, name))
            return i;
    return -1;
}

static int gpu_metric_id(const char *name) {
    for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
        if (!strcmp(sps_gpu_metric_info(i)->name, name))
            return i;
    return -1;
}

static int source_id(const char *name) {
    for (int i = 0; i < SPS_SOURCE_COUNT; i++)
        if (!strcmp(sps__source_get((enum sps_source_id)i)->name, name))
            return i;
    return -1;
}

/* "metrics": {name: {...}} for the host metrics (unknown names skipped:
 * a newer stepscope's). */
static int read_metrics(struct sps_jscan *s, struct sps_report *rep) {
    struct sps__sampler_result *r = machine(rep);
    if (!r)
        return SPS_ENOMEM;
    int rc = sps__jread_open(s, "metrics", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        int id = host_metric_id(key);
        rc = read_metric(s, rep, id >= 0 ? &r->host[id] : NULL);
    }
    return rc;
}

static int read_gpu_metrics(struct sps_jscan *s, struct sps_report *rep, struct sps__gpu_series *gs) {
    char key[64];
    int rc = sps__jread_open(s, "gpus.metrics", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        int id = gpu_metric_id(key);
        rc = read_metric(s, rep, id >= 0 ? &gs->m[id] : NULL);
    }
    return rc;
}

static int read_gpu(struct sps_jscan *s, struct sps_report *rep, struct sps__gpu_series *gs) {
    int rc = sps__jread_open(s, "gpus", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "index")) {
            rc = sps__jread_i32(s, key, 0, &gs->index);
        } else if (!strcmp(key, "name")) {
            rc = sps__jread_text(s, key, gs->name, sizeof gs->name);
        } else if (!strcmp(key, "uuid")) {
            rc = sps__jread_text(s, key, gs->uuid, sizeof gs->uuid);
        } else if (!strcmp(key, "source")) {
            char name[32];
            if (!(rc = sps__jread_text(s, key, name, sizeof name)))
                gs->source = source_id(name); /* "unknown": -1, as the writer names it */
        } else if (!strcmp(key, "metrics")) {
            rc = read_gpu_metrics(s, rep, gs);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

static int read_gpus(struct sps_jscan *s, struct sps_report *rep) {
    struct sps__sampler_result *r = machine(rep);
    if (!r)
        return SPS_ENOMEM;
    int rc = sps__jread_open(s, "gpus", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (r->ngpus == SPS_CAPTURE_MAX_GPUS)
            return sps__jread_fail(s, "at most " STR(SPS_CAPTURE_MAX_GPUS) " GPUs", "gpus");
        rc = read_gpu(s, rep, &r->gpu[r->ngpus++]);
    }
    return rc;
}

static int read_sensor(struct sps_jscan *s, struct sps__sensor_series *ss) {
    struct stats st = STATS_NONE;
    int rc = sps__jread_open(s, "sensors", '{'), taken;
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if ((rc = stats_member(s, key, "", &st, &taken)) || taken)
            continue;
        if (!strcmp(key, "label"))
            rc = sps__jread_text(s, key, ss->label, sizeof ss->label);
        else if (!strcmp(key, "is_cpu"))
            rc = sps__jread_bool(s, key, &ss->is_cpu);
        else
            rc = sps__jscan_skip(s);
    }
    if (!rc)
        stats_apply(&st, &ss->celsius);
    return rc;
}

static int read_sensors(struct sps_jscan *s, struct sps_report *rep) {
    struct sps__sampler_result *r = machine(rep);
    if (!r)
        return SPS_ENOMEM;
    int rc = sps__jread_open(s, "sensors", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (r->nsensors == SPS_CAPTURE_MAX_SENSORS)
            return sps__jread_fail(s, "at most " STR(SPS_CAPTURE_MAX_SENSORS) " sensors", "sensors");
        rc = read_sensor(s, &r->sensor[r->nsensors++]);
    }
    return rc;
}

/* ---------------------------------------------------------------- sources */

static int read_source(struct sps_jscan *s, struct sps__sampler_result *r) {
    struct sps__source_result sr = {0};
    double read_mean_s = NAN;
    int id = -1;
    int rc = sps__jread_open(s, "sources", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "name")) {
            char name[32];
            if (!(rc = sps__jread_text(s, key, name, sizeof name)))
                id = source_id(name);
        } else if (!strcmp(key, "tried")) {
            rc = sps__jread_bool(s, key, &sr.tried);
        } else if (!strcmp(key, "available")) {
            rc = sps__jread_bool(s, key, &sr.available);
        } else if (!strcmp(key, "in_use")) {
            rc = sps__jread_bool(s, key, &sr.in_use);
        } else if (!strcmp(key, "slow")) {
            rc = sps__jread_bool(s, key, &sr.slow);
        } else if (!strcmp(key, "reason")) {
            rc = sps__jread_text(s, key, sr.reason, sizeof sr.reason);
        } else if (!strcmp(key, "reads")) {
            rc = sps__jread_u64(s, key, &sr.reads);
        } else if (!strcmp(key, "failed_reads")) {
            rc = sps__jread_u64(s, key, &sr.failed_reads);
        } else if (!strcmp(key, "read_mean_s")) {
            rc = sps__jread_number(s, key, &read_mean_s);
        } else if (!strcmp(key, "last_error")) {
            rc = sps__jread_text(s, key, sr.last_error, sizeof sr.last_error);
        } else if (!strcmp(key, "note")) {
            rc = sps__jread_text(s, key, sr.note, sizeof sr.note);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    if (rc || id < 0)
        return rc; /* a source this stepscope does not know: nothing to keep */
    if (sr.reads && isfinite(read_mean_s))
        sr.read_ns_total = (uint64_t)llround(read_mean_s * 1e9 * (double)sr.reads);
    r->sources[id] = sr;
    return 0;
}

static int read_sources(struct sps_jscan *s, struct sps_report *rep) {
    int rc = sps__jread_open(s, "sources", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        struct sps__sampler_result *r = machine(rep);
        rc = r ? read_source(s, r) : SPS_ENOMEM;
    }
    return rc;
}

/* ----------------------------------------------------------------- series */

/* A series' points as report.json lists them: three arrays of one length. */
struct points {
    double *v[3]; /* t_s, mean, max */
    size_t n[3], cap[3];
    uint32_t per_point;
    double last_s; /* the newest reading's time; NAN: not written */
};

static void points_free(struct points *p) {
    for (int k = 0; k < 3; k++)
        free(p->v[k]);
}

static int read_numbers(struct sps_jscan *s, const char *key, struct points *p, int k) {
    int rc = sps__jread_open(s, key, '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (p->n[k] == p->cap[k]) {
            size_t cap = p->cap[k] ? 2 * p->cap[k] : 64;
            double *grown = realloc(p->v[k], cap * sizeof *grown);
            if (!grown)
                return SPS_ENOMEM;
            p->v[k] = grown;
            p->cap[k] = cap;
        }
        rc = sps__jread_number(s, key, &p->v[k][p->n[k]++]);
    }
    return rc;
}

/* Read key's value into p when key is one of the points' keys. */
static int points_member(struct sps_jscan *s, const char *key, struct points *p, int *taken) {
    static const char *const arrays[3] = {"t_s", "mean", "max"};
    *taken = 1;
    for (int k = 0; k < 3; k++)
        if (!strcmp(key, arrays[k]))
            return read_numbers(s, key, p, k);
    if (!strcmp(key, "readings_per_point")) {
        int64_t v = 1;
        int rc = sps__jread_int(s, key, 1, UINT32_MAX, 1, &v);
        p->per_point = (uint32_t)v;
        return rc;
    }
    if (!strcmp(key, "last_s") || !strcmp(key, "last_seen_s"))
        return sps__jread_number(s, key, &p->last_s);
    *taken = 0;
    return 0;
}

/* Nanoseconds after the series' origin from report.json's seconds. */
static int64_t rel_ns(double t_s) {
    return isfinite(t_s) && fabs(t_s) < 9e9 ? (int64_t)llround(t_s * 1e9) : 0;
}

/* p's points into se, at times relative to the origin (read_series moves
 * them onto the monotonic clock once the whole object is read). */
static int points_apply(struct sps_jscan *s, const char *what, struct points *p, struct sps__series *se) {
    size_t count = p->n[0];
    if (p->n[1] != count || p->n[2] != count)
        return sps__jread_fail(s, "t_s, mean and max of one length", what);
    if (!count)
        return 0;
    if (se->count)
        return sps__jread_fail(s, "one entry per series", what);
    if (count > UINT32_MAX - 1)
        return sps__jread_fail(s, "fewer points", what);
    uint32_t cap = se->cap > count ? se->cap : (uint32_t)(count + (count & 1));
    struct sps__series_point *pts = calloc(cap, sizeof *pts);
    if (!pts)
        return SPS_ENOMEM;
    uint32_t per_point = p->per_point ? p->per_point : 1;
    for (size_t i = 0; i < count; i++)
        pts[i] = (struct sps__series_point){
            .t_ns = rel_ns(p->v[0][i]), .mean = p->v[1][i], .max = p->v[2][i], .n = per_point};
    free(se->points);
    se->points = pts;
    se->count = (uint32_t)count;
    se->cap = cap;
    se->per_point = per_point;
    se->first_ns = pts[0].t_ns;
    se->last_ns = isfinite(p->last_s) ? rel_ns(p->last_s) : pts[count - 1].t_ns;
    return 0;
}

/* The newest point holds what the full ones leave of the series' readings
 * (see the top of the file); idempotent. */
static void settle_newest(struct sps__series *se) {
    if (!se->count)
        return;
    uint64_t full = (uint64_t)se->per_point * (se->count - 1);
    uint64_t rest = se->n > full ? se->n - full : 1;
    se->points[se->count - 1].n = (uint32_t)(rest < se->per_point ? rest : se->per_point);
}

static void settle_all(struct sps__sampler_result *r) {
    if (!r)
        return;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        settle_newest(&r->host[i]);
    for (int g = 0; g < r->ngpus; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            settle_newest(&r->gpu[g].m[i]);
    for (int k = 0; k < r->nsensors; k++)
        settle_newest(&r->sensor[k].celsius);
    for (int k = 0; k < r->nprocesses; k++)
        settle_newest(&r->process[k].rss_bytes);
}

/* The series a series.metrics entry names: a host metric, a GPU's (by
 * its index) or a sensor's (by its label); NULL when none matches. */
static struct sps__series *entry_target(struct sps__sampler_result *r, const char *metric, int gpu,
                                        const char *sensor) {
    if (sensor) {
        for (int k = 0; k < r->nsensors; k++)
            if (!strcmp(r->sensor[k].label, sensor))
                return &r->sensor[k].celsius;
        return NULL;
    }
    if (gpu >= 0) {
        int id = gpu_metric_id(metric);
        for (int g = 0; g < r->ngpus && id >= 0; g++)
            if (r->gpu[g].index == gpu)
                return &r->gpu[g].m[id];
        return NULL;
    }
    int id = host_metric_id(metric);
    return id >= 0 ? &r->host[id] : NULL;
}

static int read_series_entry(struct sps_jscan *s, struct sps__sampler_result *r) {
    struct points p = {.last_s = NAN};
    char metric[64] = "", sensor[48] = "";
    int gpu = -1, has_sensor = 0, taken;
    int rc = sps__jread_open(s, "series.metrics", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if ((rc = points_member(s, key, &p, &taken)) || taken)
            continue;
        if (!strcmp(key, "metric"))
            rc = sps__jread_text(s, key, metric, sizeof metric);
        else if (!strcmp(key, "gpu"))
            rc = sps__jread_i32(s, key, -1, &gpu);
        else if (!strcmp(key, "sensor"))
            has_sensor = 1, rc = sps__jread_text(s, key, sensor, sizeof sensor);
        else
            rc = sps__jscan_skip(s); /* unit, interval_ms: the catalogue's and the run's */
    }
    struct sps__series *se = rc ? NULL : entry_target(r, metric, gpu, has_sensor ? sensor : NULL);
    if (!rc && !se && p.n[0])
        rc = sps__jread_fail(s, "a metric, GPU or sensor that \"metrics\", \"gpus\" or \"sensors\" lists",
                             "series.metrics");
    if (se)
        rc = points_apply(s, "series.metrics", &p, se);
    points_free(&p);
    return rc;
}

static int read_process(struct sps_jscan *s, struct sps__process_series *ps) {
    struct points p = {.last_s = NAN};
    struct stats st = STATS_NONE;
    double first_seen_s = NAN;
    int rc = sps__jread_open(s, "series.processes", '{'), taken;
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if ((rc = points_member(s, key, &p, &taken)) || taken)
            continue;
        if ((rc = stats_member(s, key, "_bytes", &st, &taken)) || taken)
            continue;
        if (!strcmp(key, "pid"))
            rc = sps__jread_i32(s, key, 0, &ps->pid);
        else if (!strcmp(key, "comm"))
            rc = sps__jread_text(s, key, ps->comm, sizeof ps->comm);
        else if (!strcmp(key, "first_seen_s"))
            rc = sps__jread_number(s, key, &first_seen_s);
        else
            rc = sps__jscan_skip(s);
    }
    if (!rc) {
        stats_apply(&st, &ps->rss_bytes);
        rc = points_apply(s, "series.processes", &p, &ps->rss_bytes);
        ps->first_seen_ns = rel_ns(first_seen_s);
    }
    points_free(&p);
    return rc;
}

static int read_array(struct sps_jscan *s, const char *key, struct sps__sampler_result *r,
                      int (*each)(struct sps_jscan *, struct sps__sampler_result *)) {
    int rc = sps__jread_open(s, key, '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        rc = each(s, r);
    }
    return rc;
}

static int read_process_element(struct sps_jscan *s, struct sps__sampler_result *r) {
    if (r->nprocesses == SPS_SAMPLER_MAX_PROCESSES)
        return sps__jread_fail(s, "at most " STR(SPS_SAMPLER_MAX_PROCESSES) " processes", "series.processes");
    return read_process(s, &r->process[r->nprocesses++]);
}

/* Every time read_series read, from the origin onto the monotonic clock. */
void sps__report_read_shift_series(struct sps__sampler_result *r, int64_t origin) {
    struct sps__series *all[SPS_HOST_METRIC_COUNT + SPS_CAPTURE_MAX_GPUS * SPS_GPU_METRIC_COUNT +
                            SPS_CAPTURE_MAX_SENSORS + SPS_SAMPLER_MAX_PROCESSES];
    size_t n = 0;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        all[n++] = &r->host[i];
    for (int g = 0; g < r->ngpus; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            all[n++] = &r->gpu[g].m[i];
    for (int k = 0; k < r->nsensors; k++)
        all[n++] = &r->sensor[k].celsius;
    for (int k = 0; k < r->nprocesses; k++) {
        all[n++] = &r->process[k].rss_bytes;
        r->process[k].first_seen_ns += origin;
    }
    for (size_t i = 0; i < n; i++) {
        struct sps__series *se = all[i];
        if (!se->count)
            continue;
        for (uint32_t k = 0; k < se->count; k++)
            se->points[k].t_ns += origin;
        se->first_ns += origin;
        se->last_ns += origin;
    }
}

/* No sampler ran: the model says so as the builder's would (info.sampler
 * NULL, the reason every metric gave). */
static int mark_unsampled(struct sps_report *rep) {
    sps__sampler_result_free(rep->machine_owned);
    rep->machine_owned = NULL;
    rep->info.sampler = NULL;
    char **why = &rep->strings_owned[ABSENT_REASON_SLOT];
    if (!*why && !(*why = strdup("no sampler ran")))
        return SPS_ENOMEM;
    rep->info.sampler_absent_reason = *why;
    return 0;
}

/*
 * "series": the points.  A report of a run without a sampler writes no
 * interval_ms here (report_json_metrics.c, write_unsampled): that is how
 * the reader knows none ran.  origin_mono_ns is the monotonic time every
 * t_s counts from; a report.json from before it was written counts from
 * the run's start (started_mono_ns, read by then).
 */
static int read_series(struct sps_jscan *s, struct sps_report *rep) {
    struct sps__sampler_result *r = machine(rep);
    if (!r)
        return SPS_ENOMEM;
    if (r->interval_ms)
        return sps__jread_fail(s, "one \"series\"", "series");
    double origin = NAN, started_s = NAN;
    int rc = sps__jread_open(s, "series", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "origin_mono_ns"))
            rc = sps__jread_number(s, key, &origin);
        else if (!strcmp(key, "sampler_started_s"))
            rc = sps__jread_number(s, key, &started_s);
        else if (!strcmp(key, "tree_pid"))
            rc = sps__jread_i32(s, key, 0, &r->tree_pid);
        else if (!strcmp(key, "interval_ms"))
            rc = sps__jread_i32(s, key, 0, &r->interval_ms);
        else if (!strcmp(key, "machine_interval_ms"))
            rc = sps__jread_i32(s, key, 0, &r->machine_interval_ms);
        else if (!strcmp(key, "metrics"))
            rc = read_array(s, key, r, read_series_entry);
        else if (!strcmp(key, "processes"))
            rc = read_array(s, key, r, read_process_element);
        else if (!strcmp(key, "processes_left_out"))
            rc = sps__jread_u64(s, key, &r->processes_left_out);
        else
            rc = sps__jscan_skip(s); /* processes_max: SPS_SAMPLER_MAX_PROCESSES */
    }
    if (rc)
        return rc;
    if (!r->interval_ms)
        return mark_unsampled(rep);
    /* a sampler ran: the metrics' reasons were theirs, not its absence's */
    if (rep->info.sampler_absent_reason != rep->strings_owned[ABSENT_REASON_SLOT]) {
        free(rep->strings_owned[ABSENT_REASON_SLOT]);
        rep->strings_owned[ABSENT_REASON_SLOT] = NULL;
    }
    if (!(origin >= 0 && origin < 9007199254740992.0))
        origin = (double)rep->run.start_ns;
    sps__report_read_shift_series(r, (int64_t)origin);
    if (isfinite(started_s))
        r->started_ns = (int64_t)origin + rel_ns(started_s);
    /* the run's start as the writer took it for the origin */
    if (!rep->info.start_mono_ns)
        rep->info.start_mono_ns = (uint64_t)origin;
    return 0;
}

/* --------------------------------------------------------------- overhead */

/* "overhead": the sampler's own cost and the live view's. */
static int read_overhead(struct sps_jscan *s, struct sps_report *rep) {
    double cpu = NAN, percent = NAN, tick_mean = NAN, pss_cpu = NAN, wall = NAN, view_cpu = NAN;
    uint64_t interval_ticks = 0, machine_ticks = 0, ticks = 0, pss_reads = 0;
    int64_t refreshes = -1;
    int rc = sps__jread_open(s, "overhead", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "sampler_cpu_seconds"))
            rc = sps__jread_number(s, key, &cpu);
        else if (!strcmp(key, "sampler_cpu_percent_of_one_core"))
            rc = sps__jread_number(s, key, &percent);
        else if (!strcmp(key, "sampler_thread_wall_seconds"))
            rc = sps__jread_number(s, key, &wall);
        else if (!strcmp(key, "sampler_interval_ticks"))
            rc = sps__jread_u64(s, key, &interval_ticks);
        else if (!strcmp(key, "sampler_machine_ticks"))
            rc = sps__jread_u64(s, key, &machine_ticks);
        else if (!strcmp(key, "sampler_ticks"))
            rc = sps__jread_u64(s, key, &ticks);
        else if (!strcmp(key, "sampler_tick_mean_s"))
            rc = sps__jread_number(s, key, &tick_mean);
        else if (!strcmp(key, "sampler_pss_reads"))
            rc = sps__jread_u64(s, key, &pss_reads);
        else if (!strcmp(key, "sampler_pss_cpu_seconds"))
            rc = sps__jread_number(s, key, &pss_cpu);
        else if (!strcmp(key, "live_view_refreshes"))
            rc = sps__jread_int(s, key, 0, INT64_MAX, -1, &refreshes);
        else if (!strcmp(key, "live_view_cpu_seconds"))
            rc = sps__jread_number(s, key, &view_cpu);
        else
            rc = sps__jscan_skip(s);
    }
    if (rc)
        return rc;
    rep->info.have_live_view = refreshes >= 0; /* null: it did not run */
    rep->info.live_view_refreshes = refreshes >= 0 ? (uint64_t)refreshes : 0;
    rep->info.live_view_cpu_seconds = rep->info.have_live_view && isfinite(view_cpu) ? view_cpu : 0;
    if (isnan(cpu))
        return 0; /* no sampler ran: nothing of its own to say */
    struct sps__sampler_result *r = machine(rep);
    if (!r)
        return SPS_ENOMEM;
    r->thread_cpu_seconds = cpu;
    r->interval_ticks = interval_ticks;
    r->machine_ticks = machine_ticks;
    r->ticks = ticks;
    r->tick_ns_total = ticks && isfinite(tick_mean) ? (uint64_t)llround(tick_mean * 1e9 * (double)ticks) : 0;
    r->pss_reads = pss_reads;
    r->pss_cpu_seconds = isfinite(pss_cpu) ? pss_cpu : 0;
    /* the thread's wall time; from a report.json without it, what the
     * share of a core implies (unknown where the sampler used no CPU) */
    double span_s = isfinite(wall) ? wall : percent > 0 ? 100.0 * cpu / percent : 0;
    r->thread_ns_total = (uint64_t)llround(span_s * 1e9);
    return 0;
}

/* ----------------------------------------------------------- entry points */

int sps__report_read_machine(struct sps_jscan *s, const char *key, struct sps_report *rep) {
    int rc;
    if (!strcmp(key, "metrics"))
        rc = read_metrics(s, rep);
    else if (!strcmp(key, "gpus"))
        rc = read_gpus(s, rep);
    else if (!strcmp(key, "gpus_unavailable_reason"))
        rc = sps__jscan_skip(s); /* the GPU sources' reasons, which "sources" holds */
    else if (!strcmp(key, "sensors"))
        rc = read_sensors(s, rep);
    else if (!strcmp(key, "sources"))
        rc = read_sources(s, rep);
    else if (!strcmp(key, "series"))
        rc = read_series(s, rep);
    else if (!strcmp(key, "overhead"))
        rc = read_overhead(s, rep);
    else
        return 1;
    if (!rc)
        settle_all(rep->machine_owned);
    return rc;
}

int sps__report_read_tree_memory(struct sps_jscan *s, const char *key, struct sps_report *rep) {
    if (!strcmp(key, "workload_rss_covered_by_pss_bytes")) {
        double v;
        int rc = sps__jread_number(s, key, &v);
        if (rc || !(v > 0))
            return rc; /* null: PSS was never current (0 in the sampler) */
        struct sps__sampler_result *r = machine(rep);
        if (!r)
            return SPS_ENOMEM;
        r->rss_sum_max_pss_current = v;
        return 0;
    }
    /* the rest of the tree's memory is written from the series and the
     * sources, which hold it: nothing of its own to read */
    static const char *const derived[] = {"workload_peak_pss_bytes", "workload_peak_rss_bytes",
                                          "workload_memory_metric", "workload_pss_unavailable_reason"};
    for (size_t i = 0; i < sizeof derived / sizeof derived[0]; i++)
        if (!strcmp(key, derived[i]))
            return sps__jscan_skip(s);
    return 1;
}
