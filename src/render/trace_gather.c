/*
 * trace_gather.c - what there is to draw (trace_parts.h): the report
 * model's processes and threads, their zones, values and counters when it
 * holds the recorded events, its step rows, and the sampler's series.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/torch_ops.h"
#include "render/machine_series.h"
#include "platform/platform.h"
#include "render/trace_parts.h"
#include "stepscope.h"

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

static void *grow_or_fail(struct trace *t, void **arr, size_t *n, size_t *cap, size_t elem) {
    void *slot = grow(arr, n, cap, elem);
    if (!slot)
        t->oom = 1;
    return slot;
}

#define GROW(t, field, count, capacity) \
    ((t)->oom ? NULL : grow_or_fail(t, (void **)&(t)->field, &(t)->count, &(t)->capacity, sizeof *(t)->field))

static int64_t rel_ns(const struct trace *t, int64_t mono_ns) {
    /* events never precede the run's start; clamping keeps nesting (a
     * monotone map) should a clock step say otherwise */
    return mono_ns > t->origin_ns ? mono_ns - t->origin_ns : 0;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* "python train.py --lr 3": argv[0]'s base name and the rest, cut at a
 * character boundary to fit. */
static void command_label(char *out, size_t len, int argc, char *const *argv) {
    size_t used = (size_t)snprintf(out, len, "%s", argc > 0 && argv[0] ? base_name(argv[0]) : "");
    for (int i = 1; i < argc && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, " %s", argv[i] ? argv[i] : "");
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

/* pid: the track's (sps__run_unique_pids); host: named when the run has
 * several (a merged run), else NULL. */
static void add_process(struct trace *t, int pid, const struct sps_process_data *p, const char *host, size_t order,
                        const char *command) {
    char label[TRACE_LABEL_LEN];
    int rank = p->rank;
    if (rank >= 0)
        snprintf(label, sizeof label, "rank %d (pid %d%s%s) %s", rank, p->pid, host ? " on " : "", host ? host : "",
                 command);
    else
        snprintf(label, sizeof label, "pid %d%s%s %s", p->pid, host ? " on " : "", host ? host : "", command);
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
    if (t->nx >= UINT32_MAX) { /* seq's range; far beyond any memory */
        t->oom = 1;
        return NULL;
    }
    struct x_item *x = GROW(t, x, nx, capx);
    if (!x)
        return NULL;
    x->kind = kind;
    x->pid = pid;
    x->tid = tid;
    x->start = start;
    x->end = end > start ? end : start;
    x->seq = (uint32_t)t->nx;
    x->bucket = -1;
    return x;
}

static size_t add_track(struct trace *t, const char *name, const char *key, uint8_t category, int pid, int tid) {
    struct c_track *tr = GROW(t, tracks, ntracks, captracks);
    if (!tr)
        return 0;
    snprintf(tr->name, sizeof tr->name, "%s", name);
    tr->key = key;
    tr->category = category;
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

/* ------------------------------------------------------------ events */

/* Zone events between releases of the ones already copied (taking). */
#define RELEASE_EVERY 65536

/* A thread's zones and micro-steps, as complete events on its track.
 * When the trace takes the report's events, the pages of those already
 * copied go back to the kernel as it goes, so a thread's events and the
 * trace's copy of them are never both held whole. */
static void gather_zones(struct trace *t, const struct sps_process_data *p, size_t pi,
                         const struct sps_thread_data *th) {
    const int pid = t->pids[pi];
    t->n.zones_recorded += th->offered[SPS_RING_ZONES];
    t->n.zones_dropped_by_rings += th->dropped[SPS_RING_ZONES];
    for (size_t i = 0; i < th->nevents[SPS_RING_ZONES] && !t->oom; i++) {
        if (t->taking && i && i % RELEASE_EVERY == 0) /* never read again: freed after this thread */
            sps__platform_release(th->events[SPS_RING_ZONES], i * sizeof(struct sps_event));
        const struct sps_event *e = &th->events[SPS_RING_ZONES][i];
        if ((!sps_kind_is_span(e->kind) && e->kind != SPS_KIND_MICROSTEP) || e->name == 0 || e->name > p->nnames)
            continue;
        enum x_kind kind = e->kind == SPS_KIND_ZONE ? X_ZONE : e->kind == SPS_KIND_WAIT ? X_WAIT : X_MICROSTEP;
        struct x_item *x = add_x(t, kind, pid, th->tid,
                                 rel_ns(t, (int64_t)e->start_ns), rel_ns(t, (int64_t)e->end_ns));
        if (!x)
            break;
        x->name = p->names[e->name - 1].name;
        x->depth = e->depth;
        x->bucket = -1 - (long)pi;
        t->n.zones_in_input++;
    }
}

/* Per value name of a process (by id): which thread recorded it first,
 * whether another did too (a counter track is per process and name, so
 * such tracks carry the tid), its track on the thread being gathered and
 * a counter's running total of the kept increments. */
struct value_names {
    int *first_thread;
    unsigned char *shared;
    size_t *track_of;
    double *running;
};

static void value_names_free(struct value_names *v) {
    free(v->first_thread);
    free(v->shared);
    free(v->track_of);
    free(v->running);
}

static int value_names_init(struct value_names *v, const struct sps_process_data *p) {
    size_t n = (size_t)p->nnames + 1;
    v->first_thread = malloc(n * sizeof *v->first_thread);
    v->shared = calloc(n, 1);
    v->track_of = malloc(n * sizeof *v->track_of);
    v->running = malloc(n * sizeof *v->running);
    if (!v->first_thread || !v->shared || !v->track_of || !v->running) {
        value_names_free(v);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        v->first_thread[k] = -1;
    for (uint32_t ti = 0; ti < p->nthreads; ti++) {
        const struct sps_thread_data *th = &p->threads[ti];
        for (size_t i = 0; i < th->nevents[SPS_RING_VALUES]; i++) {
            uint32_t id = th->events[SPS_RING_VALUES][i].name;
            if (id == 0 || id > p->nnames)
                continue;
            if (v->first_thread[id] < 0)
                v->first_thread[id] = (int)ti;
            else if (v->first_thread[id] != (int)ti)
                v->shared[id] = 1;
        }
    }
    return 0;
}

/* A thread's values (each reading) and counters (the running total), as
 * counter points on tracks of its process. */
static void gather_values(struct trace *t, const struct sps_process_data *p, const struct sps_thread_data *th,
                          struct value_names *v) {
    for (uint32_t k = 0; k <= p->nnames; k++) {
        v->track_of[k] = SIZE_MAX;
        v->running[k] = 0;
    }
    for (size_t i = 0; i < th->nevents[SPS_RING_VALUES] && !t->oom; i++) {
        const struct sps_event *e = &th->events[SPS_RING_VALUES][i];
        if (e->name == 0 || e->name > p->nnames || (e->kind != SPS_KIND_VALUE && e->kind != SPS_KIND_COUNTER))
            continue;
        double value = 0;
        if (e->kind == SPS_KIND_VALUE) {
            memcpy(&value, &e->a, sizeof value);
            if (!isfinite(value)) {
                t->n.values_not_finite++;
                continue;
            }
        }
        if (v->track_of[e->name] == SIZE_MAX) {
            char name[TRACE_LABEL_LEN];
            const char *base = p->names[e->name - 1].name;
            if (v->shared[e->name])
                snprintf(name, sizeof name, "%s (tid %d)", base, th->tid);
            else
                snprintf(name, sizeof name, "%s", base);
            int is_value = e->kind == SPS_KIND_VALUE;
            v->track_of[e->name] =
                add_track(t, name, is_value ? "value" : "total", is_value ? C_VALUE : C_COUNTER,
                          t->pids[p - t->rep->run.procs], th->tid);
        }
        if (e->kind == SPS_KIND_COUNTER) {
            v->running[e->name] += (double)e->a;
            value = v->running[e->name];
        }
        add_point(t, v->track_of[e->name], rel_ns(t, (int64_t)e->start_ns), value);
    }
}

/* The process's deep-capture operators, as complete events: on the
 * window's thread's track, where they nest in its zones (torch_zones.c
 * placed them), on tracks of their own for the profiler's other threads
 * and for device kernels.  They share the zones' budget. */
static void gather_torch_ops(struct trace *t, const struct sps_process_data *p, size_t pi) {
    const struct sps_run *run = &t->rep->run;
    for (size_t i = 0; i < run->ntorch; i++) {
        const struct sps_torch_capture *c = &run->torch[i];
        if (c->pid != p->pid)
            continue;
        const int pid = t->pids[pi];
        int named_gpu = 0;
        for (size_t k = 0; k < c->nops && !t->oom; k++) {
            const struct sps_torch_op *op = &c->ops[k];
            int tid = op->gpu ? TRACE_TORCH_GPU_TID
                      : op->tid > 0 && op->tid <= INT32_MAX ? (int)op->tid
                      : TRACE_TORCH_TID_BASE + (int)(-op->tid % 1000000);
            if (op->gpu && !named_gpu++)
                add_thread(t, pid, tid, "GPU kernels (torch.profiler)");
            struct x_item *x = add_x(t, X_TORCH_OP, pid, tid, rel_ns(t, (int64_t)op->start_ns),
                                     rel_ns(t, (int64_t)op->end_ns));
            if (!x)
                break;
            x->name = c->names[op->name];
            x->depth = UINT16_MAX; /* at equal times, inside the zone */
            x->bucket = -1 - (long)pi;
            t->n.zones_in_input++;
        }
        /* the profiler's own thread numbers, named once each (a handful:
         * autograd's device threads) */
        int64_t named[16];
        size_t nnamed = 0;
        for (size_t k = 0; k < c->nops && !t->oom; k++) {
            int64_t id = c->ops[k].tid;
            if (c->ops[k].gpu || id > 0)
                continue;
            size_t j = 0;
            while (j < nnamed && named[j] != id)
                j++;
            if (j < nnamed)
                continue;
            if (nnamed < sizeof named / sizeof named[0])
                named[nnamed++] = id;
            char label[64];
            snprintf(label, sizeof label, "torch.profiler thread %lld", (long long)-id);
            add_thread(t, pid, TRACE_TORCH_TID_BASE + (int)(-id % 1000000), label);
        }
    }
}

/* The process's GPU spans (its threads' GPU zones, where the GPU ran
 * them), as complete events on one track per stream: "GPU stream 0x..."
 * or "GPU default stream" (the legacy one, handle 0), numbered in the
 * order each stream first appears.  They share the zones' budget. */
static void gather_gpu(struct trace *t, const struct sps_process_data *p, size_t pi) {
    const int pid = t->pids[pi];
    uint64_t *streams = NULL;
    size_t nstreams = 0, cap = 0;
    for (uint32_t ti = 0; ti < p->nthreads && !t->oom; ti++) {
        const struct sps_thread_data *th = &p->threads[ti];
        for (size_t i = 0; i < th->ngpu && !t->oom; i++) {
            const struct sps_event *e = &th->gpu[i];
            if (e->name == 0 || e->name > p->nnames)
                continue;
            size_t k = 0;
            while (k < nstreams && streams[k] != e->a)
                k++;
            if (k == nstreams) {
                if (nstreams == TRACE_GPU_STREAMS_MAX)
                    continue; /* tids must stay apart from the other bases */
                uint64_t *slot = grow((void **)&streams, &nstreams, &cap, sizeof *streams);
                if (!slot) {
                    t->oom = 1;
                    break;
                }
                *slot = e->a;
                char label[64];
                if (e->a)
                    snprintf(label, sizeof label, "GPU stream 0x%llx", (unsigned long long)e->a);
                else
                    snprintf(label, sizeof label, "GPU default stream");
                add_thread(t, pid, TRACE_GPU_STREAM_TID_BASE + (int)k, label);
                /* below the process's threads, in order of appearance */
                add_meta(t, META_THREAD_SORT, pid, TRACE_GPU_STREAM_TID_BASE + (int)k, 1000000000 + (int64_t)k, NULL);
            }
            struct x_item *x = add_x(t, X_GPU, pid, TRACE_GPU_STREAM_TID_BASE + (int)k,
                                     rel_ns(t, (int64_t)e->start_ns), rel_ns(t, (int64_t)e->end_ns));
            if (!x)
                break;
            x->name = p->names[e->name - 1].name;
            x->depth = 0;
            x->bucket = -1 - (long)pi;
            t->n.zones_in_input++;
        }
    }
    free(streams);
}

/* Every process and thread of the model, named; with the recorded events,
 * their zones, values and counters. */
static void gather_processes(struct trace *t) {
    const int several_hosts = sps__run_several_hosts(&t->rep->run);
    const struct sps_run *run = &t->rep->run;
    for (size_t pi = 0; pi < run->nprocs && !t->oom; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        char command[TRACE_LABEL_LEN];
        command_label(command, sizeof command, p->argc, p->argv);
        const int pid = t->pids[pi];
        add_process(t, pid, p, several_hosts ? p->hostname : NULL, pi, command);
        struct value_names v = {0};
        if (t->rep->have_events && value_names_init(&v, p) != 0) {
            t->oom = 1;
            return;
        }
        for (uint32_t ti = 0; ti < p->nthreads && !t->oom; ti++) {
            const struct sps_thread_data *th = &p->threads[ti];
            add_thread(t, pid, th->tid, th->name);
            if (!t->rep->have_events)
                continue;
            gather_zones(t, p, pi, th);
            gather_values(t, p, th, &v);
            if (t->taking) { /* copied into the trace's items: the report's copy goes */
                struct sps_thread_data *own = &t->taking->run.procs[pi].threads[ti];
                free(own->events[SPS_RING_ZONES]);
                own->events[SPS_RING_ZONES] = NULL;
                own->nevents[SPS_RING_ZONES] = 0;
            }
        }
        value_names_free(&v);
        if (t->rep->have_events) {
            gather_torch_ops(t, p, pi);
            gather_gpu(t, p, pi);
        }
    }
}

/* Each step row, as a complete event on its thread's steps track. */
static void gather_steps(struct trace *t) {
    const struct sps_run *run = &t->rep->run;
    for (size_t r = 0; r < run->nsteps && !t->oom; r++) {
        const struct sps_step_row *row = &run->steps[r];
        struct trace_step *s = GROW(t, steps, nsteps, capsteps);
        if (!s)
            return;
        *s = (struct trace_step){
            .pid = row->process < run->nprocs ? t->pids[row->process] : 0,
            .tid = row->tid,
            .index = row->index,
            .name = row->name >= 0 && (size_t)row->name < run->nnames ? run->names[row->name].name : NULL,
            .start = rel_ns(t, (int64_t)row->start_ns),
            .end = rel_ns(t, (int64_t)row->end_ns),
            .warmup = row->warmup,
            .microsteps = row->microsteps,
            .proc = row->process,
        };
        struct x_item *x = add_x(t, X_STEP, s->pid, TRACE_STEPS_TID_BASE + s->tid, s->start, s->end);
        if (x)
            x->step = t->nsteps - 1;
    }
}

/* ------------------------------------------------------------ series */

/* One sampler series as the counter track `name`: each point's mean.  A
 * point's max equals its mean while each point holds one reading; once
 * points merged, the max gets a track of its own.  Returns whether any
 * point was added. */
static int add_series_tracks(struct trace *t, const struct sps__series *s, const char *name, const char *unit) {
    int merged = s->per_point > 1, any = 0;
    for (int which = 0; which < 1 + merged && !t->oom; which++) {
        char track_name[TRACE_LABEL_LEN + 8];
        snprintf(track_name, sizeof track_name, which ? "%s (max)" : "%s", name);
        size_t track = add_track(t, track_name, unit, C_MACHINE, TRACE_MACHINE_PID, TRACE_MACHINE_PID);
        for (uint32_t k = 0; k < s->count && !t->oom; k++) {
            double v = which ? s->points[k].max : s->points[k].mean;
            if (!isfinite(v))
                continue;
            add_point(t, track, rel_ns(t, s->points[k].t_ns), v);
            any = 1;
        }
    }
    return any;
}

/* The sampled metrics (report.json's series.metrics), then each tree
 * process's RSS (series.processes), on the machine process. */
static void gather_series(struct trace *t) {
    const struct sps__sampler_result *r = t->rep->info.sampler;
    struct sps__machine_series list[SPS_MACHINE_SERIES_MAX];
    size_t n = sps__machine_series_list(r, list);
    int any = 0;
    for (size_t i = 0; i < n && !t->oom; i++) {
        char name[TRACE_LABEL_LEN];
        if (list[i].gpu >= 0)
            snprintf(name, sizeof name, "gpu%d %s", list[i].gpu, list[i].metric);
        else if (list[i].sensor)
            snprintf(name, sizeof name, "%s %s", list[i].metric, list[i].sensor);
        else
            snprintf(name, sizeof name, "%s", list[i].metric);
        any |= add_series_tracks(t, list[i].s, name, list[i].unit);
    }
    for (int k = 0; r && k < r->nprocesses && k < SPS_SAMPLER_MAX_PROCESSES && !t->oom; k++) {
        const struct sps__process_series *ps = &r->process[k];
        if (!ps->rss_bytes.count)
            continue;
        char name[TRACE_LABEL_LEN];
        snprintf(name, sizeof name, "process_rss_bytes pid %d (%s)", ps->pid, ps->comm);
        any |= add_series_tracks(t, &ps->rss_bytes, name, "bytes");
    }
    if (any) {
        add_meta(t, META_PROCESS_NAME, TRACE_MACHINE_PID, TRACE_MACHINE_PID, 0, "machine (sampled)");
        add_meta(t, META_PROCESS_SORT, TRACE_MACHINE_PID, TRACE_MACHINE_PID, 2000000, NULL);
        add_meta(t, META_THREAD_NAME, TRACE_MACHINE_PID, TRACE_MACHINE_PID, 0, "sampler");
    }
}

void sps__trace_gather(struct trace *t) {
    t->origin_ns = sps__report_origin_ns(t->rep);
    size_t nprocs = t->rep->run.nprocs;
    if (!(t->pids = malloc((nprocs ? nprocs : 1) * sizeof *t->pids))) {
        t->oom = 1;
        return;
    }
    sps__run_unique_pids(&t->rep->run, t->pids);
    gather_processes(t);
    gather_steps(t);
    gather_series(t);
    t->n.steps_in_input = t->nsteps;
    t->n.points_in_input = t->npoints;
}

/* ------------------------------------------------------------ steps tracks */

struct track_key {
    int pid, tid;
    size_t first; /* the step's index in t->steps */
};

static int track_key_order(const void *pa, const void *pb) {
    const struct track_key *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    return (a->first > b->first) - (a->first < b->first);
}

/*
 * A steps track per (pid, tid) that recorded steps, named "steps", or
 * "steps (tid N)" when several threads of the process recorded steps;
 * named in the order of each track's first step.  The steps sorted by
 * (pid, tid, position) give both at once: a track's first step opens its
 * run, and a process with more than one run has several steps threads.
 */
void sps__trace_name_step_tracks(struct trace *t) {
    if (t->oom || !t->nsteps)
        return;
    struct track_key *keys = malloc(t->nsteps * sizeof *keys);
    unsigned char *label = calloc(t->nsteps, 1); /* by step: 0 none, 1 "steps", 2 "steps (tid N)" */
    if (!keys || !label) {
        free(keys);
        free(label);
        t->oom = 1;
        return;
    }
    for (size_t i = 0; i < t->nsteps; i++)
        keys[i] = (struct track_key){t->steps[i].pid, t->steps[i].tid, i};
    sps__trace_sort(keys, t->nsteps, sizeof *keys, track_key_order);
    for (size_t lo = 0, hi; lo < t->nsteps; lo = hi) {
        int several = 0;
        for (hi = lo + 1; hi < t->nsteps && keys[hi].pid == keys[lo].pid; hi++)
            several |= keys[hi].tid != keys[lo].tid;
        for (size_t k = lo; k < hi; k++)
            if (k == lo || keys[k].tid != keys[k - 1].tid)
                label[keys[k].first] = several ? 2 : 1;
    }
    for (size_t i = 0; i < t->nsteps && !t->oom; i++) {
        if (!label[i])
            continue;
        const struct trace_step *s = &t->steps[i];
        char name[64];
        if (label[i] == 2)
            snprintf(name, sizeof name, "steps (tid %d)", s->tid);
        else
            snprintf(name, sizeof name, "steps");
        add_meta(t, META_THREAD_NAME, s->pid, TRACE_STEPS_TID_BASE + s->tid, 0, name);
        add_meta(t, META_THREAD_SORT, s->pid, TRACE_STEPS_TID_BASE + s->tid, -1, NULL);
    }
    free(keys);
    free(label);
}
