/*
 * trace.c - trace.json in the Trace Event Format (its JSON object form),
 * for Perfetto UI and chrome://tracing.  docs/trace-format.md describes
 * the file: tracks, units, the size budget and what otherData reports.
 *
 * Everything that could go into the file is first gathered as items whose
 * exact size in bytes is known (each is rendered once to measure it); the
 * budget policy then chooses items, and only then is anything written.  So
 * the file never exceeds max_bytes, and otherData can say exactly what was
 * left out.
 *
 * Times are integer nanoseconds after the run's start (the origin of
 * report.json's start_s and series t_s) until they are written as
 * microseconds with three decimals, so nesting that holds in nanoseconds
 * holds in the file too: no floating-point rounding in between.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "render/json_writer.h"
#include "render/exporters.h"
#include "stepscope.h"

/* Steps get a track of their own per recording thread: this tid plus the
 * thread's.  Kernel tids stay below 2^22, so these never collide with one. */
#define TRACE_STEPS_TID_BASE 1000000000
/* The sampled machine metrics go on a process of their own (pid and tid). */
#define TRACE_MACHINE_PID 2000000000
/* Zone detail goes first to this many slowest steps, then to this many
 * latest steps (docs/trace-format.md, "Size budget"). */
#define TRACE_SLOWEST_STEPS 10
#define TRACE_LATEST_STEPS 10
#define TRACE_POLICY "steps-counters-slowest-latest-then-time/1"
#define TRACE_FORMAT "stepscope.trace/1"
/* Step zones are searched backwards from the latest step that starts
 * before a zone, at most this far, for one that still contains it. */
#define TRACE_OWNER_SEARCH 64
#define TRACE_LABEL_LEN 320

/* ------------------------------------------------------------ text */

/* A growable byte buffer; `failed` once an allocation failed. */
struct tbuf {
    char *p;
    size_t len, cap;
    int failed;
};

static int tb_reserve(struct tbuf *b, size_t more) {
    if (b->failed)
        return -1;
    if (b->len + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static void tb_put(struct tbuf *b, const char *s, size_t n) {
    if (tb_reserve(b, n) != 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void tb_puts(struct tbuf *b, const char *s) {
    tb_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void tb_printf(struct tbuf *b, const char *fmt, ...) {
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        tb_put(b, small, (size_t)n);
        return;
    }
    if (tb_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void tbuf_sink(void *ctx, const char *bytes, size_t n) {
    tb_put(ctx, bytes, n);
}

/* A JSON string, escaped as in report.json. */
static void tb_string(struct tbuf *b, const char *s) {
    sps__json_escape(s, tbuf_sink, b);
}

/* v / 10^digits written exactly with `digits` decimals (v >= 0). */
static void tb_fixed(struct tbuf *b, int64_t v, int digits) {
    int64_t scale = 1;
    for (int i = 0; i < digits; i++)
        scale *= 10;
    tb_printf(b, "%" PRId64 ".%0*" PRId64, v / scale, digits, v % scale);
}

/* ------------------------------------------------------------ model */

enum x_kind { X_ZONE, X_MICROSTEP, X_STEP };
enum item_state { ITEM_CANDIDATE, ITEM_KEPT, ITEM_OVERLAP, ITEM_BUDGET };

/* A complete event ("X"): a zone, a micro-step or a step. */
struct x_item {
    int64_t start, end; /* ns after the origin, end >= start */
    int pid, tid;       /* the track it is drawn on */
    const char *name;   /* zones; steps are named from their step */
    size_t step;        /* X_STEP: index into trace.steps */
    long bucket;        /* zones: the owning step, or -1 - process entry (none) */
    size_t seq;         /* gathering order: the last tie-breaker */
    uint32_t size;      /* bytes, separator included */
    uint16_t depth;
    uint8_t kind, state;
};

struct trace_step {
    int pid, tid;
    uint64_t index;
    const char *name;
    int64_t start, end;
    int warmup;
    uint32_t microsteps;
    size_t proc; /* process entry (records only), for zone ownership */
};

/* A counter track ("C" events of one name on one process). */
struct c_track {
    char name[TRACE_LABEL_LEN];
    const char *key; /* the one args key: a unit, "value" or "total" */
    int pid, tid;
};

struct c_point {
    int64_t t;
    double v;
    size_t track, seq;
    uint32_t size;
    uint8_t state;
};

enum meta_what { META_PROCESS_NAME, META_PROCESS_SORT, META_THREAD_NAME, META_THREAD_SORT };

struct meta {
    int pid, tid;
    uint8_t what;
    int64_t sort;
    size_t seq;
    uint32_t size;
    char label[TRACE_LABEL_LEN];
};

/* Counts for otherData. */
struct trace_counts {
    uint64_t zones_recorded, zones_dropped_by_rings, zones_in_input, zones_written, zones_budget, zones_overlap;
    uint64_t buckets_partial, buckets_left_out;
    uint64_t steps_in_input, steps_written, steps_budget, steps_overlap, steps_without_times;
    uint64_t points_in_input, points_written, points_budget, decimation, values_not_finite;
};

struct trace {
    const struct sps_report_input *in;
    int64_t origin_ns; /* monotonic ns of the run's start */
    struct x_item *x;
    size_t nx, capx;
    struct trace_step *steps;
    size_t nsteps, capsteps;
    struct c_track *tracks;
    size_t ntracks, captracks;
    struct c_point *points;
    size_t npoints, cappoints;
    struct meta *meta;
    size_t nmeta, capmeta;
    struct trace_counts n;
    struct tbuf scratch;
    int oom;
};

/* Append one zeroed element to a growable array; NULL when out of memory. */
static void *grow(void **arr, size_t *n, size_t *cap, size_t elem) {
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        void *p = realloc(*arr, ncap * elem);
        if (!p)
            return NULL;
        *arr = p;
        *cap = ncap;
    }
    void *slot = (char *)*arr + (*n)++ * elem;
    memset(slot, 0, elem);
    return slot;
}

#define GROW(t, field, count, capacity) \
    ((t)->oom ? NULL : grow_or_fail(t, (void **)&(t)->field, &(t)->count, &(t)->capacity, sizeof *(t)->field))

static void *grow_or_fail(struct trace *t, void **arr, size_t *n, size_t *cap, size_t elem) {
    void *slot = grow(arr, n, cap, elem);
    if (!slot)
        t->oom = 1;
    return slot;
}

static int64_t rel_ns(const struct trace *t, uint64_t mono_ns) {
    /* events never precede the run's start; clamping keeps nesting (a
     * monotone map) should a clock step say otherwise */
    return (int64_t)mono_ns > t->origin_ns ? (int64_t)mono_ns - t->origin_ns : 0;
}

static int64_t seconds_to_ns(double s) {
    return isfinite(s) && s > 0 ? (int64_t)llround(s * 1e9) : 0;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/*
 * The run's start on the monotonic clock.  A run directory's records hold
 * each process's start, report.json each process's start_s after the run's
 * start (under `stepscope run`, the command's start, which the records do
 * not know): one matching process gives the origin that report.json's
 * times, series t_s included, count from.
 */
static int64_t find_origin(const struct sps_report_input *in) {
    const struct sps_run *run = &in->run;
    json_t *procs = json_object_get(in->report, "processes");
    for (size_t k = 0; k < run->nprocs; k++) {
        const struct sps_process_data *p = &run->procs[k];
        size_t j;
        json_t *jp;
        json_array_foreach(procs, j, jp) {
            const char *record = json_string_value(json_object_get(jp, "record"));
            json_t *start = json_object_get(jp, "start_s");
            if (json_integer_value(json_object_get(jp, "pid")) != p->pid || !record || !json_is_number(start) ||
                !p->path || strcmp(base_name(record), base_name(p->path)) != 0)
                continue;
            return (int64_t)p->start_ns - (int64_t)llround(json_number_value(start) * 1e9);
        }
    }
    return (int64_t)run->start_ns;
}

/* "python train.py --lr 3": argv[0]'s base name and the rest, cut at a
 * character boundary to fit. */
static void command_label(char *out, size_t len, const char *argv0, const char *const *rest, size_t nrest) {
    size_t used = (size_t)snprintf(out, len, "%s", argv0 ? base_name(argv0) : "");
    for (size_t i = 0; i < nrest && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, " %s", rest[i] ? rest[i] : "");
    if (used >= len) {
        size_t end = len - 1;
        while (end > 0 && ((unsigned char)out[end] & 0xC0) == 0x80)
            end--; /* out[end] starts a character: cut before it */
        out[end] = '\0';
    }
}

static void add_meta(struct trace *t, uint8_t what, int pid, int tid, int64_t sort, const char *label) {
    struct meta *m = GROW(t, meta, nmeta, capmeta);
    if (!m)
        return;
    m->what = what;
    m->pid = pid;
    m->tid = tid;
    m->sort = sort;
    m->seq = t->nmeta;
    if (label)
        snprintf(m->label, sizeof m->label, "%s", label);
}

static void add_process(struct trace *t, int pid, int rank, size_t order, const char *command) {
    char label[TRACE_LABEL_LEN];
    if (rank >= 0)
        snprintf(label, sizeof label, "rank %d (pid %d) %s", rank, pid, command);
    else
        snprintf(label, sizeof label, "pid %d %s", pid, command);
    add_meta(t, META_PROCESS_NAME, pid, pid, 0, label);
    /* ranks in rank order; processes without one after them, in start order */
    add_meta(t, META_PROCESS_SORT, pid, pid, rank >= 0 ? rank : 1000000 + (int64_t)order, NULL);
}

static void add_thread(struct trace *t, int pid, int tid, const char *name) {
    char label[TRACE_LABEL_LEN];
    if (name && *name)
        snprintf(label, sizeof label, "%s", name);
    else
        snprintf(label, sizeof label, "thread %d", tid);
    add_meta(t, META_THREAD_NAME, pid, tid, 0, label);
}

static struct x_item *add_x(struct trace *t, uint8_t kind, int pid, int tid, int64_t start, int64_t end) {
    struct x_item *x = GROW(t, x, nx, capx);
    if (!x)
        return NULL;
    x->kind = kind;
    x->pid = pid;
    x->tid = tid;
    x->start = start;
    x->end = end > start ? end : start;
    x->seq = t->nx;
    x->bucket = -1;
    return x;
}

static void add_step(struct trace *t, const struct trace_step *s) {
    struct trace_step *slot = GROW(t, steps, nsteps, capsteps);
    if (!slot)
        return;
    *slot = *s;
    struct x_item *x = add_x(t, X_STEP, s->pid, TRACE_STEPS_TID_BASE + s->tid, s->start, s->end);
    if (x)
        x->step = t->nsteps - 1;
}

static size_t add_track(struct trace *t, const char *name, const char *key, int pid, int tid) {
    struct c_track *tr = GROW(t, tracks, ntracks, captracks);
    if (!tr)
        return 0;
    snprintf(tr->name, sizeof tr->name, "%s", name);
    tr->key = key;
    tr->pid = pid;
    tr->tid = tid;
    return t->ntracks - 1;
}

static void add_point(struct trace *t, size_t track, int64_t time_ns, double v) {
    struct c_point *pt = GROW(t, points, npoints, cappoints);
    if (!pt)
        return;
    pt->track = track;
    pt->t = time_ns;
    pt->v = v;
    pt->seq = t->npoints - 1;
}

/* Processes, threads, zones, steps and values from the records. */
static void gather_records(struct trace *t) {
    const struct sps_run *run = &t->in->run;
    for (size_t pi = 0; pi < run->nprocs && !t->oom; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        char command[TRACE_LABEL_LEN];
        command_label(command, sizeof command, p->argc > 0 ? p->argv[0] : NULL,
                      (const char *const *)(p->argc > 1 ? p->argv + 1 : NULL), p->argc > 1 ? (size_t)p->argc - 1 : 0);
        add_process(t, p->pid, p->rank, pi, command);

        /* which value names more than one thread records: their tracks
         * carry the tid, since a counter track is per process and name */
        int *first_thread = malloc(((size_t)p->nnames + 1) * sizeof *first_thread);
        unsigned char *shared = calloc((size_t)p->nnames + 1, 1);
        size_t *track_of = malloc(((size_t)p->nnames + 1) * sizeof *track_of);
        double *running = malloc(((size_t)p->nnames + 1) * sizeof *running);
        if (!first_thread || !shared || !track_of || !running) {
            free(first_thread);
            free(shared);
            free(track_of);
            free(running);
            t->oom = 1;
            return;
        }
        for (uint32_t k = 0; k <= p->nnames; k++)
            first_thread[k] = -1;
        for (uint32_t ti = 0; ti < p->nthreads; ti++) {
            const struct sps_thread_data *th = &p->threads[ti];
            for (size_t i = 0; i < th->nevents[SPS_RING_VALUES]; i++) {
                uint32_t id = th->events[SPS_RING_VALUES][i].name;
                if (id == 0 || id > p->nnames)
                    continue;
                if (first_thread[id] < 0)
                    first_thread[id] = (int)ti;
                else if (first_thread[id] != (int)ti)
                    shared[id] = 1;
            }
        }

        for (uint32_t ti = 0; ti < p->nthreads && !t->oom; ti++) {
            const struct sps_thread_data *th = &p->threads[ti];
            add_thread(t, p->pid, th->tid, th->name);
            t->n.zones_recorded += th->offered[SPS_RING_ZONES];
            t->n.zones_dropped_by_rings += th->dropped[SPS_RING_ZONES];
            for (size_t i = 0; i < th->nevents[SPS_RING_ZONES] && !t->oom; i++) {
                const struct sps_event *e = &th->events[SPS_RING_ZONES][i];
                if ((e->kind != SPS_KIND_ZONE && e->kind != SPS_KIND_MICROSTEP) || e->name == 0 || e->name > p->nnames)
                    continue;
                struct x_item *x = add_x(t, e->kind == SPS_KIND_ZONE ? X_ZONE : X_MICROSTEP, p->pid, th->tid,
                                         rel_ns(t, e->start_ns), rel_ns(t, e->end_ns));
                if (!x)
                    break;
                x->name = p->names[e->name - 1].name;
                x->depth = e->depth;
                x->bucket = -1 - (long)pi;
                t->n.zones_in_input++;
            }

            for (uint32_t k = 0; k <= p->nnames; k++) {
                track_of[k] = SIZE_MAX;
                running[k] = 0; /* counters: the running total of the kept increments */
            }
            for (size_t i = 0; i < th->nevents[SPS_RING_VALUES] && !t->oom; i++) {
                const struct sps_event *e = &th->events[SPS_RING_VALUES][i];
                if (e->name == 0 || e->name > p->nnames ||
                    (e->kind != SPS_KIND_VALUE && e->kind != SPS_KIND_COUNTER))
                    continue;
                double v;
                if (e->kind == SPS_KIND_VALUE) {
                    memcpy(&v, &e->a, sizeof v);
                    if (!isfinite(v)) {
                        t->n.values_not_finite++;
                        continue;
                    }
                }
                if (track_of[e->name] == SIZE_MAX) {
                    char name[TRACE_LABEL_LEN];
                    const char *base = p->names[e->name - 1].name;
                    if (shared[e->name])
                        snprintf(name, sizeof name, "%s (tid %d)", base, th->tid);
                    else
                        snprintf(name, sizeof name, "%s", base);
                    track_of[e->name] = add_track(t, name, e->kind == SPS_KIND_VALUE ? "value" : "total", p->pid, th->tid);
                }
                if (e->kind == SPS_KIND_COUNTER) {
                    running[e->name] += (double)e->a;
                    v = running[e->name];
                }
                add_point(t, track_of[e->name], rel_ns(t, e->start_ns), v);
            }
        }
        free(first_thread);
        free(shared);
        free(track_of);
        free(running);
    }

    for (size_t r = 0; r < run->nsteps && !t->oom; r++) {
        const struct sps_step_row *row = &run->steps[r];
        struct trace_step s = {
            .pid = run->procs[row->process].pid,
            .tid = row->tid,
            .index = row->index,
            .name = row->name >= 0 ? run->names[row->name].name : "step",
            .start = rel_ns(t, row->start_ns),
            .end = rel_ns(t, row->end_ns),
            .warmup = row->warmup,
            .microsteps = row->microsteps,
            .proc = row->process,
        };
        add_step(t, &s);
    }
}

/* Processes, threads and steps from report.json alone (no records). */
static void gather_report(struct trace *t) {
    json_t *report = t->in->report;
    size_t i, j;
    json_t *jp, *jt;
    json_array_foreach(json_object_get(report, "processes"), i, jp) {
        int pid = (int)json_integer_value(json_object_get(jp, "pid"));
        json_t *rank = json_object_get(jp, "rank");
        json_t *cmd = json_object_get(jp, "command");
        const char *rest[64];
        size_t nrest = 0;
        for (size_t k = 1; k < json_array_size(cmd) && nrest < 64; k++)
            rest[nrest++] = json_string_value(json_array_get(cmd, k));
        char command[TRACE_LABEL_LEN];
        command_label(command, sizeof command, json_string_value(json_array_get(cmd, 0)), rest, nrest);
        add_process(t, pid, json_is_integer(rank) ? (int)json_integer_value(rank) : -1, i, command);
        json_array_foreach(json_object_get(jp, "threads"), j, jt)
            add_thread(t, pid, (int)json_integer_value(json_object_get(jt, "tid")),
                       json_string_value(json_object_get(jt, "name")));
    }
    json_array_foreach(sps__json_at(report, "steps.rows"), i, jp) {
        json_t *start = json_object_get(jp, "start_s"), *dur = json_object_get(jp, "duration_s");
        if (!json_is_number(start) || !json_is_number(dur)) {
            t->n.steps_without_times++;
            continue;
        }
        const char *name = json_string_value(json_object_get(jp, "name"));
        int64_t s0 = seconds_to_ns(json_number_value(start));
        struct trace_step s = {
            .pid = (int)json_integer_value(json_object_get(jp, "pid")),
            .tid = (int)json_integer_value(json_object_get(jp, "tid")),
            .index = (uint64_t)json_integer_value(json_object_get(jp, "index")),
            .name = name ? name : "step",
            .start = s0,
            .end = s0 + seconds_to_ns(json_number_value(dur)),
            .warmup = json_is_true(json_object_get(jp, "warmup")),
            .microsteps = (uint32_t)json_integer_value(json_object_get(jp, "microsteps")),
            .proc = SIZE_MAX,
        };
        add_step(t, &s);
    }
}

/* One series of report.json (its t_s, mean, max) as the counter track
 * name.  A point's max equals its mean while each point holds one reading;
 * after points merged, the max gets a track of its own.  Returns whether
 * any point was added. */
static int add_series_tracks(struct trace *t, json_t *js, const char *name, const char *unit) {
    json_t *ts = json_object_get(js, "t_s"), *mean = json_object_get(js, "mean"), *max = json_object_get(js, "max");
    int merged = json_integer_value(json_object_get(js, "readings_per_point")) > 1, any = 0;
    for (int which = 0; which < 1 + merged && !t->oom; which++) {
        json_t *values = which ? max : mean;
        char track_name[TRACE_LABEL_LEN + 8];
        snprintf(track_name, sizeof track_name, which ? "%s (max)" : "%s", name);
        size_t track = add_track(t, track_name, unit ? unit : "value", TRACE_MACHINE_PID, TRACE_MACHINE_PID);
        for (size_t k = 0; k < json_array_size(ts) && !t->oom; k++) {
            json_t *v = json_array_get(values, k), *when = json_array_get(ts, k);
            if (!json_is_number(v) || !json_is_number(when) || !isfinite(json_number_value(v)))
                continue;
            add_point(t, track, seconds_to_ns(json_number_value(when)), json_number_value(v));
            any = 1;
        }
    }
    return any;
}

/* The sampled metrics of report.json's series, on the machine process:
 * series.metrics, then each tree process's RSS (series.processes, absent
 * from reports made before it). */
static void gather_series(struct trace *t) {
    size_t i;
    json_t *js;
    int any = 0;
    json_array_foreach(sps__json_at(t->in->report, "series.metrics"), i, js) {
        const char *metric = json_string_value(json_object_get(js, "metric"));
        const char *unit = json_string_value(json_object_get(js, "unit"));
        json_t *gpu = json_object_get(js, "gpu");
        const char *sensor = json_string_value(json_object_get(js, "sensor"));
        if (!metric || !json_array_size(json_object_get(js, "t_s")))
            continue;
        char name[TRACE_LABEL_LEN];
        if (json_is_integer(gpu))
            snprintf(name, sizeof name, "gpu%" JSON_INTEGER_FORMAT " %s", json_integer_value(gpu), metric);
        else if (sensor)
            snprintf(name, sizeof name, "%s %s", metric, sensor);
        else
            snprintf(name, sizeof name, "%s", metric);
        any |= add_series_tracks(t, js, name, unit);
    }
    json_array_foreach(sps__json_at(t->in->report, "series.processes"), i, js) {
        const char *metric = json_string_value(json_object_get(js, "metric"));
        const char *comm = json_string_value(json_object_get(js, "comm"));
        json_t *pid = json_object_get(js, "pid");
        if (!metric || !json_is_integer(pid) || !json_array_size(json_object_get(js, "t_s")))
            continue;
        char name[TRACE_LABEL_LEN];
        snprintf(name, sizeof name, "%s pid %" JSON_INTEGER_FORMAT " (%s)", metric, json_integer_value(pid),
                 comm ? comm : "?");
        any |= add_series_tracks(t, js, name, json_string_value(json_object_get(js, "unit")));
    }
    if (any) {
        add_meta(t, META_PROCESS_NAME, TRACE_MACHINE_PID, TRACE_MACHINE_PID, 0, "machine (sampled)");
        add_meta(t, META_PROCESS_SORT, TRACE_MACHINE_PID, TRACE_MACHINE_PID, 2000000, NULL);
        add_meta(t, META_THREAD_NAME, TRACE_MACHINE_PID, TRACE_MACHINE_PID, 0, "sampler");
    }
}

/* Each steps track is named, and sorted above the process's threads. */
static void name_step_tracks(struct trace *t) {
    for (size_t i = 0; i < t->nsteps && !t->oom; i++) {
        const struct trace_step *s = &t->steps[i];
        int seen = 0, others = 0;
        for (size_t j = 0; j < t->nsteps; j++) {
            if (t->steps[j].pid != s->pid)
                continue;
            if (t->steps[j].tid == s->tid && j < i)
                seen = 1;
            if (t->steps[j].tid != s->tid)
                others = 1;
        }
        if (seen)
            continue;
        char label[64];
        if (others)
            snprintf(label, sizeof label, "steps (tid %d)", s->tid);
        else
            snprintf(label, sizeof label, "steps");
        add_meta(t, META_THREAD_NAME, s->pid, TRACE_STEPS_TID_BASE + s->tid, 0, label);
        add_meta(t, META_THREAD_SORT, s->pid, TRACE_STEPS_TID_BASE + s->tid, -1, NULL);
    }
}

/* ------------------------------------------------------------ rendering */

static void render_meta(struct tbuf *b, const struct meta *m) {
    static const char *const names[] = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"};
    tb_printf(b, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{", names[m->what], m->pid, m->tid);
    if (m->what == META_PROCESS_NAME || m->what == META_THREAD_NAME) {
        tb_puts(b, "\"name\":");
        tb_string(b, m->label);
    } else {
        tb_printf(b, "\"sort_index\":%" PRId64, m->sort);
    }
    tb_puts(b, "}}");
}

static void render_x(struct tbuf *b, const struct trace *t, const struct x_item *x) {
    static const char *const cats[] = {"zone", "microstep", "step"};
    tb_printf(b, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cats[x->kind]);
    const struct trace_step *s = x->kind == X_STEP ? &t->steps[x->step] : NULL;
    if (s) {
        char name[SPS_REC_NAME_LEN + 32];
        snprintf(name, sizeof name, "%s %" PRIu64, s->name, s->index);
        tb_string(b, name);
    } else {
        tb_string(b, x->name);
    }
    tb_printf(b, ",\"pid\":%d,\"tid\":%d,\"ts\":", x->pid, x->tid);
    tb_fixed(b, x->start, 3);
    tb_puts(b, ",\"dur\":");
    tb_fixed(b, x->end - x->start, 3);
    if (s) {
        tb_printf(b, ",\"args\":{\"index\":%" PRIu64 ",\"duration_ms\":", s->index);
        tb_fixed(b, s->end - s->start, 6);
        tb_printf(b, ",\"warmup\":%s,\"microsteps\":%" PRIu32 "}", s->warmup ? "true" : "false", s->microsteps);
    }
    tb_puts(b, "}");
}

static void render_point(struct tbuf *b, const struct trace *t, const struct c_point *pt) {
    const struct c_track *tr = &t->tracks[pt->track];
    tb_puts(b, "{\"ph\":\"C\",\"name\":");
    tb_string(b, tr->name);
    tb_printf(b, ",\"pid\":%d,\"tid\":%d,\"ts\":", tr->pid, tr->tid);
    tb_fixed(b, pt->t, 3);
    tb_puts(b, ",\"args\":{");
    tb_string(b, tr->key);
    tb_printf(b, ":%.15g}}", pt->v);
}

static void render_other_data(struct tbuf *b, const struct trace *t, uint64_t max_bytes, const struct trace_counts *n) {
    const struct sps_report_input *in = t->in;
    json_t *started = json_object_get(in->report, "started_unix_s");
    tb_puts(b, "\"otherData\":{\"format\":\"" TRACE_FORMAT "\",\"generator\":\"stepscope " SPS_VERSION_STRING "\"");
    tb_puts(b, ",\"time_origin\":\"the run's start (start_s 0 in report.json); ts and dur in microseconds\"");
    if (json_is_number(started))
        tb_printf(b, ",\"started_unix_s\":%.15g", json_number_value(started));
    tb_printf(b, ",\"budget_bytes\":%" PRIu64 ",\"budget_policy\":\"" TRACE_POLICY "\"", max_bytes);
    tb_printf(b, ",\"zones_available\":%s,\"zones_note\":", in->have_records ? "true" : "false");
    tb_string(b, in->records_note);
    static const char *const keys[] = {
        "zone_events_recorded", "zone_events_dropped_by_rings", "zone_events_in_records", "zone_events_written",
        "zone_events_left_out_for_budget", "zone_events_left_out_overlapping", "steps_with_zones_cut_for_budget",
        "steps_with_zones_left_out_for_budget", "steps_in_input", "steps_written", "steps_left_out_for_budget",
        "steps_left_out_overlapping", "steps_without_times", "counter_points_in_input", "counter_points_written",
        "counter_points_left_out_for_budget", "counter_decimation", "values_not_finite_left_out"};
    const uint64_t vals[] = {n->zones_recorded,  n->zones_dropped_by_rings, n->zones_in_input,
                             n->zones_written,   n->zones_budget,           n->zones_overlap,
                             n->buckets_partial, n->buckets_left_out,       n->steps_in_input,
                             n->steps_written,   n->steps_budget,           n->steps_overlap,
                             n->steps_without_times, n->points_in_input,    n->points_written,
                             n->points_budget,   n->decimation,             n->values_not_finite};
    _Static_assert(sizeof keys / sizeof keys[0] == sizeof vals / sizeof vals[0], "a value per key");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        tb_printf(b, ",\"%s\":%" PRIu64, keys[i], vals[i]);
    tb_puts(b, "}");
}

static const char TRACE_HEAD[] = "{\"traceEvents\":[";

static void render_tail(struct tbuf *b, const struct trace *t, uint64_t max_bytes, const struct trace_counts *n) {
    tb_puts(b, "\n],\"displayTimeUnit\":\"ms\",");
    render_other_data(b, t, max_bytes, n);
    tb_puts(b, "}\n");
}

/* Each event's bytes: ",\n" before it, then the event. */
static uint32_t measured(struct trace *t) {
    if (t->scratch.failed)
        t->oom = 1;
    size_t len = t->scratch.len + 2;
    t->scratch.len = 0;
    return len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
}

static void measure_all(struct trace *t) {
    for (size_t i = 0; i < t->nmeta; i++) {
        render_meta(&t->scratch, &t->meta[i]);
        t->meta[i].size = measured(t);
    }
    for (size_t i = 0; i < t->nx; i++) {
        render_x(&t->scratch, t, &t->x[i]);
        t->x[i].size = measured(t);
    }
    for (size_t i = 0; i < t->npoints; i++) {
        render_point(&t->scratch, t, &t->points[i]);
        t->points[i].size = measured(t);
    }
}

/* ------------------------------------------------------------ ordering */

/* qsort, but nothing to do (and no NULL array passed) under two items. */
static void sort_items(void *base, size_t n, size_t size, int (*order)(const void *, const void *)) {
    if (n > 1)
        qsort(base, n, size, order);
}

static int cmp_i64(int64_t a, int64_t b) {
    return a < b ? -1 : a > b;
}

/* Metadata by process, then kind, then thread; duplicates (a pid shared
 * by an exec'ed image) next to each other, first gathered first. */
static int meta_order(const void *pa, const void *pb) {
    const struct meta *a = pa, *b = pb;
    int c;
    if ((c = cmp_i64(a->pid, b->pid)) || (c = cmp_i64(a->what, b->what)) || (c = cmp_i64(a->tid, b->tid)))
        return c;
    return cmp_i64((int64_t)a->seq, (int64_t)b->seq);
}

/* Track, then start, then the longer (enclosing) event first. */
static int x_order(const void *pa, const void *pb) {
    const struct x_item *a = pa, *b = pb;
    int c;
    if ((c = cmp_i64(a->pid, b->pid)) || (c = cmp_i64(a->tid, b->tid)) || (c = cmp_i64(a->start, b->start)) ||
        (c = cmp_i64(b->end, a->end)) || (c = cmp_i64(a->depth, b->depth)))
        return c;
    return cmp_i64((int64_t)a->seq, (int64_t)b->seq);
}

static int point_order(const void *pa, const void *pb) {
    const struct c_point *a = pa, *b = pb;
    int c;
    if ((c = cmp_i64((int64_t)a->track, (int64_t)b->track)) || (c = cmp_i64(a->t, b->t)))
        return c;
    return cmp_i64((int64_t)a->seq, (int64_t)b->seq);
}

static void dedupe_meta(struct trace *t) {
    sort_items(t->meta, t->nmeta, sizeof *t->meta, meta_order);
    size_t out = 0;
    for (size_t i = 0; i < t->nmeta; i++) {
        const struct meta *m = &t->meta[i];
        if (out && t->meta[out - 1].pid == m->pid && t->meta[out - 1].what == m->what && t->meta[out - 1].tid == m->tid)
            continue;
        t->meta[out++] = *m;
    }
    t->nmeta = out;
}

/*
 * Complete events on one track must nest: each lies inside the one that
 * encloses it or starts after it ends.  Zones of one thread nest by
 * construction, but a thread entry reused by a later thread, an exec'ed
 * image keeping its pid, or ends that did not match can break that: an
 * event that partly overlaps its encloser is left out and counted.
 * t->x must be in x_order.
 */
static int drop_overlapping(struct trace *t) {
    size_t *stack = malloc((t->nx ? t->nx : 1) * sizeof *stack);
    if (!stack)
        return SPS_ENOMEM;
    size_t depth = 0;
    for (size_t i = 0; i < t->nx; i++) {
        struct x_item *x = &t->x[i];
        if (i == 0 || x->pid != t->x[i - 1].pid || x->tid != t->x[i - 1].tid)
            depth = 0;
        while (depth && t->x[stack[depth - 1]].end <= x->start)
            depth--;
        if (depth && x->end > t->x[stack[depth - 1]].end) {
            x->state = ITEM_OVERLAP;
            if (x->kind == X_STEP)
                t->n.steps_overlap++;
            else
                t->n.zones_overlap++;
            continue;
        }
        stack[depth++] = i;
    }
    free(stack);
    return 0;
}

/* ------------------------------------------------------------ budget */

/* Orders for qsort without a global context: up to four keys, ascending,
 * then the index for a total (deterministic) order. */
struct sort_key {
    int64_t k[4];
    size_t idx;
};

static int key_order(const void *pa, const void *pb) {
    const struct sort_key *a = pa, *b = pb;
    for (int i = 0; i < 4; i++) {
        int c = cmp_i64(a->k[i], b->k[i]);
        if (c)
            return c;
    }
    return cmp_i64((int64_t)a->idx, (int64_t)b->idx);
}

static struct sort_key *keys_new(size_t n) {
    return calloc(n ? n : 1, sizeof(struct sort_key));
}

/* Zones are owned by the latest-starting step of their process that
 * contains their start (report.json's rule, so another thread's step can
 * own them); a zone no step owns goes to its process's own bucket. */
static int assign_buckets(struct trace *t) {
    if (!t->nsteps)
        return 0;
    struct sort_key *order = keys_new(t->nsteps);
    if (!order)
        return SPS_ENOMEM;
    for (size_t i = 0; i < t->nsteps; i++)
        order[i] = (struct sort_key){{(int64_t)t->steps[i].proc, t->steps[i].start, 0, 0}, i};
    sort_items(order, t->nsteps, sizeof *order, key_order);
    for (size_t i = 0; i < t->nx; i++) {
        struct x_item *x = &t->x[i];
        if (x->kind == X_STEP)
            continue;
        int64_t proc = -1 - x->bucket;
        /* the first step after (proc, x->start) */
        size_t lo = 0, hi = t->nsteps;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (order[mid].k[0] < proc || (order[mid].k[0] == proc && order[mid].k[1] <= x->start))
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo, tries = 0; k > 0 && tries < TRACE_OWNER_SEARCH; k--, tries++) {
            const struct trace_step *s = &t->steps[order[k - 1].idx];
            if (order[k - 1].k[0] != proc)
                break;
            if (s->end > x->start) {
                x->bucket = (long)order[k - 1].idx;
                break;
            }
        }
    }
    free(order);
    return 0;
}

/* A bucket of zones: a step's, or (after the steps) a process's zones
 * that no step owns. */
struct bucket {
    int64_t start, end;
    int64_t rank; /* 0 until ranked */
    uint64_t kept, dropped;
};

static size_t bucket_of(const struct trace *t, const struct x_item *x) {
    return x->bucket >= 0 ? (size_t)x->bucket : t->nsteps + (size_t)(-1 - x->bucket);
}

/* The slowest steps, then the latest, then every other bucket by start. */
static void rank_buckets(const struct trace *t, struct bucket *b, size_t nb, struct sort_key *keys) {
    int64_t next = 1;
    for (size_t i = 0; i < t->nsteps; i++)
        keys[i] = (struct sort_key){{-(b[i].end - b[i].start), b[i].start, 0, 0}, i};
    sort_items(keys, t->nsteps, sizeof *keys, key_order);
    for (size_t i = 0; i < t->nsteps && i < TRACE_SLOWEST_STEPS; i++)
        b[keys[i].idx].rank = next++;
    for (size_t i = 0; i < t->nsteps; i++)
        keys[i] = (struct sort_key){{-b[i].end, -b[i].start, 0, 0}, i};
    sort_items(keys, t->nsteps, sizeof *keys, key_order);
    for (size_t i = 0, taken = 0; i < t->nsteps && taken < TRACE_LATEST_STEPS; i++)
        if (!b[keys[i].idx].rank) {
            b[keys[i].idx].rank = next++;
            taken++;
        }
    for (size_t i = 0; i < nb; i++)
        keys[i] = (struct sort_key){{b[i].start, 0, 0, 0}, i};
    sort_items(keys, nb, sizeof *keys, key_order);
    for (size_t i = 0; i < nb; i++)
        if (!b[keys[i].idx].rank)
            b[keys[i].idx].rank = next++;
}

static int choose_zones(struct trace *t, uint64_t *room) {
    size_t nprocs = t->in->have_records ? t->in->run.nprocs : 0;
    size_t nb = t->nsteps + nprocs;
    struct bucket *b = calloc(nb ? nb : 1, sizeof *b);
    struct sort_key *keys = keys_new(nb > t->nx ? nb : t->nx);
    if (!b || !keys) {
        free(b);
        free(keys);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < t->nsteps; i++) {
        b[i].start = t->steps[i].start;
        b[i].end = t->steps[i].end;
    }
    for (size_t i = t->nsteps; i < nb; i++)
        b[i].start = INT64_MAX; /* then its earliest zone's start */
    for (size_t i = 0; i < t->nx; i++) {
        const struct x_item *x = &t->x[i];
        size_t bi = x->kind == X_STEP ? 0 : bucket_of(t, x);
        if (x->kind != X_STEP && bi >= t->nsteps && x->start < b[bi].start)
            b[bi].start = x->start;
    }
    rank_buckets(t, b, nb, keys);

    size_t nz = 0;
    for (size_t i = 0; i < t->nx; i++) {
        const struct x_item *x = &t->x[i];
        if (x->kind != X_STEP && x->state == ITEM_CANDIDATE)
            keys[nz++] = (struct sort_key){{b[bucket_of(t, x)].rank, x->start, -x->end, x->depth}, i};
    }
    sort_items(keys, nz, sizeof *keys, key_order);
    /* a bucket takes its zones in time order while they fit: the first that
     * does not ends that bucket's detail, so what is kept of a step is its
     * beginning with every enclosing zone, never scattered pieces */
    size_t cut_bucket = SIZE_MAX;
    for (size_t k = 0; k < nz; k++) {
        struct x_item *x = &t->x[keys[k].idx];
        size_t bi = bucket_of(t, x);
        if (bi != cut_bucket && x->size <= *room) {
            *room -= x->size;
            x->state = ITEM_KEPT;
            b[bi].kept++;
        } else {
            cut_bucket = bi;
            x->state = ITEM_BUDGET;
            b[bi].dropped++;
            t->n.zones_budget++;
        }
    }
    for (size_t i = 0; i < t->nsteps; i++) {
        if (b[i].dropped && b[i].kept)
            t->n.buckets_partial++;
        else if (b[i].dropped)
            t->n.buckets_left_out++;
    }
    free(b);
    free(keys);
    return 0;
}

/* Whether point i is kept when every k-th point of each track is (and
 * each track's last); points are in point_order. */
static int point_in_decimation(const struct trace *t, size_t i, size_t pos, uint64_t k) {
    int last = i + 1 == t->npoints || t->points[i + 1].track != t->points[i].track;
    return pos % k == 0 || last;
}

/* The smallest power of two k whose decimation fits room; then, should even
 * the first and last points of every track not fit, points in track order
 * while they do. */
static void choose_points(struct trace *t, uint64_t room, uint64_t *used) {
    uint64_t k = 1;
    for (;; k *= 2) {
        uint64_t need = 0;
        for (size_t i = 0, pos = 0; i < t->npoints; i++, pos++) {
            if (i && t->points[i].track != t->points[i - 1].track)
                pos = 0;
            if (point_in_decimation(t, i, pos, k))
                need += t->points[i].size;
        }
        if (need <= room || k >= t->npoints)
            break;
    }
    t->n.decimation = k;
    *used = 0;
    for (size_t i = 0, pos = 0; i < t->npoints; i++, pos++) {
        struct c_point *pt = &t->points[i];
        if (i && pt->track != t->points[i - 1].track)
            pos = 0;
        if (point_in_decimation(t, i, pos, k) && *used + pt->size <= room) {
            pt->state = ITEM_KEPT;
            *used += pt->size;
        } else {
            pt->state = ITEM_BUDGET;
            t->n.points_budget++;
        }
    }
}

/*
 * The budget policy (docs/trace-format.md, "Size budget"): metadata and
 * otherData must fit; then step outlines in time order; then counters, with
 * at most half of what is left when there are zones (decimated to fit);
 * then zones, step by step: the slowest steps, the latest, then the rest by
 * time, zones outside every step being a bucket of their own per process.
 */
static int choose(struct trace *t, uint64_t max_bytes, char *err, size_t errlen) {
    struct trace_counts widest;
    memset(&widest, 0xff, sizeof widest); /* every count at its widest */
    render_tail(&t->scratch, t, max_bytes, &widest);
    uint64_t fixed = sizeof TRACE_HEAD - 1 + t->scratch.len;
    t->scratch.len = 0;
    for (size_t i = 0; i < t->nmeta; i++)
        fixed += t->meta[i].size;
    if (t->scratch.failed)
        return SPS_ENOMEM;
    if (fixed > max_bytes) {
        snprintf(err, errlen, "trace.json: a budget of %" PRIu64 " bytes is too small: the metadata alone takes %" PRIu64,
                 max_bytes, fixed);
        return SPS_EINVAL;
    }
    uint64_t room = max_bytes - fixed;

    struct sort_key *steps = keys_new(t->nx);
    if (!steps)
        return SPS_ENOMEM;
    size_t ns = 0;
    int any_zone = 0;
    for (size_t i = 0; i < t->nx; i++) {
        if (t->x[i].state != ITEM_CANDIDATE)
            continue;
        if (t->x[i].kind == X_STEP)
            steps[ns++] = (struct sort_key){{t->x[i].start, 0, 0, 0}, i};
        else
            any_zone = 1;
    }
    sort_items(steps, ns, sizeof *steps, key_order);
    for (size_t k = 0; k < ns; k++) {
        struct x_item *x = &t->x[steps[k].idx];
        if (x->size <= room) {
            room -= x->size;
            x->state = ITEM_KEPT;
        } else {
            x->state = ITEM_BUDGET;
            t->n.steps_budget++;
        }
    }
    free(steps);

    uint64_t used;
    choose_points(t, any_zone ? room / 2 : room, &used);
    room -= used;
    return choose_zones(t, &room);
}

/* ------------------------------------------------------------ output */

struct sink {
    FILE *f;
    uint64_t written;
    size_t events;
    int failed;
};

/* Events are separated by ",\n" (the first by "\n"): measured() counted
 * two bytes for each. */
static void emit(struct sink *s, struct tbuf *b, int is_event) {
    if (is_event) {
        const char *sep = s->events++ ? ",\n" : "\n";
        size_t n = strlen(sep);
        if (fwrite(sep, 1, n, s->f) != n)
            s->failed = 1;
        s->written += n;
    }
    if (b->len && fwrite(b->p, 1, b->len, s->f) != b->len)
        s->failed = 1;
    s->written += b->len;
    b->len = 0;
}

static int write_trace(struct trace *t, FILE *out, uint64_t max_bytes, char *err, size_t errlen) {
    struct sink s = {.f = out};
    struct tbuf *b = &t->scratch;
    tb_puts(b, TRACE_HEAD);
    emit(&s, b, 0);
    for (size_t i = 0; i < t->nmeta; i++) {
        render_meta(b, &t->meta[i]);
        emit(&s, b, 1);
    }
    for (size_t i = 0; i < t->nx; i++) {
        if (t->x[i].state != ITEM_KEPT)
            continue;
        render_x(b, t, &t->x[i]);
        emit(&s, b, 1);
        if (t->x[i].kind == X_STEP)
            t->n.steps_written++;
        else
            t->n.zones_written++;
    }
    for (size_t i = 0; i < t->npoints; i++) {
        if (t->points[i].state != ITEM_KEPT)
            continue;
        render_point(b, t, &t->points[i]);
        emit(&s, b, 1);
        t->n.points_written++;
    }
    render_tail(b, t, max_bytes, &t->n);
    emit(&s, b, 0);
    if (b->failed)
        return SPS_ENOMEM;
    if (fflush(out) != 0 || ferror(out))
        s.failed = 1;
    if (s.failed) {
        snprintf(err, errlen, "trace.json: write failed: %s", strerror(errno ? errno : EIO));
        return SPS_EIO;
    }
    /* the sizes were measured from the same rendering: this cannot fail
     * unless they disagree, and then the caller must not keep the file */
    if (s.written > max_bytes) {
        snprintf(err, errlen, "trace.json: %" PRIu64 " bytes written over a budget of %" PRIu64 " (a bug)", s.written,
                 max_bytes);
        return SPS_EIO;
    }
    return 0;
}

static void trace_free(struct trace *t) {
    free(t->x);
    free(t->steps);
    free(t->tracks);
    free(t->points);
    free(t->meta);
    free(t->scratch.p);
}

int sps__export_trace(const struct sps_report_input *in, FILE *out, uint64_t max_bytes, char *err, size_t errlen) {
    struct trace t;
    memset(&t, 0, sizeof t);
    t.in = in;
    int rc = 0;
    if (in->have_records) {
        t.origin_ns = find_origin(in);
        gather_records(&t);
    } else {
        gather_report(&t);
    }
    gather_series(&t);
    name_step_tracks(&t);
    if (t.oom)
        goto out_of_memory;
    t.n.steps_in_input = t.nsteps;
    t.n.points_in_input = t.npoints;
    dedupe_meta(&t);
    sort_items(t.points, t.npoints, sizeof *t.points, point_order);
    if (assign_buckets(&t) != 0)
        goto out_of_memory;
    sort_items(t.x, t.nx, sizeof *t.x, x_order);
    if (drop_overlapping(&t) != 0)
        goto out_of_memory;
    measure_all(&t);
    if (t.oom)
        goto out_of_memory;
    rc = choose(&t, max_bytes, err, errlen);
    if (rc == SPS_ENOMEM)
        goto out_of_memory;
    if (rc == 0)
        rc = write_trace(&t, out, max_bytes, err, errlen);
    if (rc == SPS_ENOMEM)
        goto out_of_memory;
    trace_free(&t);
    return rc;
out_of_memory:
    snprintf(err, errlen, "trace.json: out of memory");
    trace_free(&t);
    return SPS_ENOMEM;
}
