/*
 * prom_collect.c - the Prometheus snapshot from live records (see
 * prom_collect.h).  The checks mirror peek.c's, which mirror
 * src/model/reader.c's for the fields read here.
 */
#include "live/prom_collect.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "live/followed.h"
#include "live/record_file.h"
#include "record_format.h"

/* The part of a thread segment before its stack. */
#define SEG_HEAD_SIZE offsetof(struct sps_rec_thread, stack)

/* One (thread, name) aggregate as last read: reread its histogram only
 * when its count moves. */
struct agg_seen {
    uint64_t off;   /* 0: none read yet */
    uint64_t count; /* the aggregate's count at that read */
    uint64_t pending_off;
    uint32_t pending_bucket;
    uint64_t in_hist; /* durations in its histogram (with the pending one) */
    uint64_t bucket[SPS_PROM_BOUNDS + 1]; /* the last: above every bound */
};

struct thread_seen {
    uint64_t seg_off;
    struct agg_seen *agg; /* by name id - 1 */
    uint32_t nagg;
};

/* A record as the collector follows it. */
struct followed {
    struct sps__followed r; /* first: the records directory allocates it */
    struct thread_seen *th;
    uint32_t nth;
    int32_t owner_rank; /* its rank, or its nearest ancestor's among the records; -1: none */
    int ok;             /* read this time */
};

struct sps__prom_collect {
    struct sps__followed_dir recs;
    uint32_t index[SPS_LIVE_MAX_NAMES + 1]; /* scratch: a thread's aggregate index */
    uint64_t hist[SPS_HIST_BUCKETS];        /* scratch */
    uint8_t bound_of[SPS_HIST_BUCKETS];     /* recorder bucket -> exposition bound (SPS_PROM_BOUNDS: +Inf) */
    /* the series being built: an open-addressing index into s->series */
    uint32_t *slot;
    size_t nslots;
    size_t cap_series, cap_procs;
};

static struct followed *rec_at(const struct sps__prom_collect *c, uint32_t i) {
    return (struct followed *)c->recs.rec[i];
}

/* ------------------------------------------------------------ records */

/* ------------------------------------------------------------- series */

static uint64_t key_hash(int kind, int32_t rank, int32_t pid, const char *name) {
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ (uint64_t)kind) * 1099511628211ull;
    h = (h ^ (uint32_t)(rank >= 0 ? rank : pid)) * 1099511628211ull;
    return (h ^ (uint64_t)(rank >= 0)) * 1099511628211ull;
}

static int same_owner(const struct sps__prom_series *x, int32_t rank, int32_t pid) {
    return rank >= 0 ? x->rank == rank : x->rank < 0 && x->pid == pid;
}

static int grow_index(struct sps__prom_collect *c, const struct sps__prom_snapshot *s);

/* The series of (kind, name) owned by the record's rank (or its process
 * without one), made when new.  NULL when out of memory. */
static struct sps__prom_series *series_for(struct sps__prom_collect *c, struct sps__prom_snapshot *s,
                                           const struct followed *f, int kind, uint32_t id) {
    const char *name = f->r.name[id - 1];
    int32_t rank = f->owner_rank, pid = f->r.h.pid;
    if ((s->nseries + 1) * 2 > c->nslots && grow_index(c, s) != 0)
        return NULL;
    size_t mask = c->nslots - 1, i = key_hash(kind, rank, pid, name) & mask;
    for (; c->slot[i]; i = (i + 1) & mask) {
        struct sps__prom_series *x = &s->series[c->slot[i] - 1];
        if (x->kind == kind && same_owner(x, rank, pid) && !strcmp(x->name, name)) {
            if (pid < x->pid)
                x->pid = pid;
            return x;
        }
    }
    if (s->nseries == c->cap_series) {
        size_t want = c->cap_series ? 2 * c->cap_series : 64;
        struct sps__prom_series *grown = realloc(s->series, want * sizeof *grown);
        if (!grown)
            return NULL;
        s->series = grown;
        c->cap_series = want;
    }
    struct sps__prom_series *x = &s->series[s->nseries++];
    memset(x, 0, sizeof *x);
    x->kind = (uint8_t)kind;
    x->rec_kind = f->r.kind[id - 1];
    x->rank = rank;
    x->pid = pid;
    x->value = NAN;
    memcpy(x->name, name, SPS_REC_NAME_LEN);
    memcpy(x->host, f->r.h.hostname, sizeof x->host);
    x->host[sizeof x->host - 1] = '\0';
    c->slot[i] = (uint32_t)s->nseries;
    return x;
}

static int grow_index(struct sps__prom_collect *c, const struct sps__prom_snapshot *s) {
    size_t want = c->nslots ? 2 * c->nslots : 256;
    uint32_t *slot = calloc(want, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t k = 0; k < s->nseries; k++) {
        const struct sps__prom_series *x = &s->series[k];
        size_t i = key_hash(x->kind, x->rank, x->pid, x->name) & (want - 1);
        while (slot[i])
            i = (i + 1) & (want - 1);
        slot[i] = (uint32_t)(k + 1);
    }
    free(c->slot);
    c->slot = slot;
    c->nslots = want;
    return 0;
}

/* ------------------------------------------------------------ threads */

/* The histogram of a step or zone aggregate folded into the bounds,
 * reading only the buckets between its shortest and longest duration. */
static void read_hist(struct sps__prom_collect *c, const struct followed *f, const struct sps_rec_thread *seg,
                      const struct sps_rec_agg *a, struct agg_seen *seen) {
    memset(seen->bucket, 0, sizeof seen->bucket);
    seen->in_hist = 0;
    uint32_t lo = sps_hist_bucket(a->u.z.min_ns), hi = sps_hist_bucket(a->u.z.max_ns);
    if (hi >= SPS_HIST_BUCKETS || lo > hi)
        return;
    uint64_t off = seen->off + sizeof(struct sps_rec_agg) + (uint64_t)lo * sizeof(uint64_t);
    if (sps__live_pread(f->r.fd, c->hist + lo, (size_t)(hi - lo + 1u) * sizeof(uint64_t), off) != 0)
        return;
    for (uint32_t b = lo; b <= hi; b++) {
        seen->bucket[c->bound_of[b]] += c->hist[b];
        seen->in_hist += c->hist[b];
    }
    /* the thread's last duration, not in its histogram yet */
    if (seg->pending_agg_off == seen->off && seen->in_hist + 1 == a->count && seg->pending_bucket < SPS_HIST_BUCKETS) {
        seen->bucket[c->bound_of[seg->pending_bucket]]++;
        seen->in_hist++;
    }
}

static void add_timed(struct sps__prom_series *x, const struct sps_rec_agg *a, const struct agg_seen *seen) {
    x->count += seen->in_hist;
    x->sum_ns += a->u.z.total_ns;
    x->self_ns += a->u.z.self_ns;
    for (int i = 0; i < SPS_PROM_BOUNDS; i++)
        x->bucket[i] += seen->bucket[i];
}

/* One aggregate of thread th into the snapshot. */
static int take_agg(struct sps__prom_collect *c, struct sps__prom_snapshot *s, const struct followed *f,
                    const struct sps_rec_thread *seg, struct thread_seen *th, uint32_t id) {
    uint32_t kind = f->r.kind[id - 1];
    uint64_t off = c->index[id];
    struct sps_rec_agg a;
    if (!sps__followed_in_arena(&f->r, off, sps_rec_agg_size(kind)) ||
        sps__live_pread(f->r.fd, &a, sizeof a, off) != 0 || a.name != id || a.kind != kind || a.count == 0)
        return 0;
    int pkind = kind == SPS_KIND_STEP       ? SPS_PROM_STEP
                : sps_kind_is_timed(kind)   ? SPS_PROM_ZONE
                : kind == SPS_KIND_COUNTER  ? SPS_PROM_COUNTER
                                            : SPS_PROM_VALUE;
    struct sps__prom_series *x = series_for(c, s, f, pkind, id);
    if (!x)
        return -1;
    if (pkind == SPS_PROM_COUNTER) {
        x->value = (isnan(x->value) ? 0 : x->value) + (double)a.u.z.total_ns;
        return 0;
    }
    if (pkind == SPS_PROM_VALUE) {
        /* the latest value of the thread that recorded the most of them */
        if (a.count > x->count) {
            x->count = a.count;
            x->value = a.u.v.last;
        }
        return 0;
    }
    struct agg_seen *seen = &th->agg[id - 1];
    if (seen->off != off || seen->count != a.count || seen->pending_off != seg->pending_agg_off ||
        seen->pending_bucket != seg->pending_bucket) {
        seen->off = off;
        seen->count = a.count;
        seen->pending_off = seg->pending_agg_off;
        seen->pending_bucket = seg->pending_bucket;
        read_hist(c, f, seg, &a, seen);
    }
    add_timed(x, &a, seen);
    return 0;
}

static int take_thread(struct sps__prom_collect *c, struct sps__prom_snapshot *s, const struct followed *f,
                       struct thread_seen *th) {
    struct sps_rec_thread seg;
    if (sps__live_pread(f->r.fd, &seg, SEG_HEAD_SIZE, th->seg_off) != 0 || seg.magic != SPS_REC_THREAD_MAGIC)
        return 0;
    uint64_t index_len = ((uint64_t)f->r.h.names_cap + 2u) * sizeof(uint32_t);
    if (!f->r.nnames || !sps__followed_in_arena(&f->r, seg.agg_index_off, index_len) ||
        sps__live_pread(f->r.fd, c->index, (f->r.nnames + 1u) * sizeof(uint32_t), seg.agg_index_off) != 0)
        return 0;
    if (th->nagg < f->r.nnames) {
        struct agg_seen *grown = realloc(th->agg, f->r.nnames * sizeof *grown);
        if (!grown)
            return -1;
        memset(grown + th->nagg, 0, (f->r.nnames - th->nagg) * sizeof *grown);
        th->agg = grown;
        th->nagg = f->r.nnames;
    }
    for (uint32_t id = 1; id <= f->r.nnames; id++)
        if (c->index[id] && take_agg(c, s, f, &seg, th, id) != 0)
            return -1;
    return 0;
}

/* Follow the threads the record has published since the last read. */
static int grow_threads(struct followed *f) {
    uint32_t n = sps__followed_threads(&f->r);
    if (n <= f->nth)
        return 0;
    struct thread_seen *grown = realloc(f->th, n * sizeof *grown);
    if (!grown)
        return -1;
    f->th = grown;
    while (f->nth < n) {
        uint64_t off;
        if (sps__followed_thread_seg(&f->r, f->nth, &off) != 0)
            break; /* published but not readable yet: next time */
        memset(&f->th[f->nth], 0, sizeof f->th[f->nth]);
        f->th[f->nth++].seg_off = off;
    }
    return 0;
}

static int add_process(struct sps__prom_collect *c, struct sps__prom_snapshot *s, const struct followed *f) {
    if (s->nprocs == c->cap_procs) {
        size_t want = c->cap_procs ? 2 * c->cap_procs : 16;
        struct sps__prom_process *grown = realloc(s->procs, want * sizeof *grown);
        if (!grown)
            return -1;
        s->procs = grown;
        c->cap_procs = want;
    }
    struct sps__prom_process *p = &s->procs[s->nprocs++];
    p->pid = f->r.h.pid;
    p->ppid = f->r.h.ppid;
    p->rank = f->r.h.rank;
    p->local_rank = f->r.h.local_rank;
    p->world_size = f->r.h.world_size;
    memcpy(p->host, f->r.h.hostname, sizeof p->host);
    p->host[sizeof p->host - 1] = '\0';
    return 0;
}

/* -------------------------------------------------------------- public */

struct sps__prom_collect *sps__prom_collect_open(const char *records_dir) {
    struct sps__prom_collect *c = calloc(1, sizeof *c);
    if (!c || sps__followed_dir_init(&c->recs, records_dir, sizeof(struct followed)) != 0) {
        free(c);
        return NULL;
    }
    /* a recorder bucket goes to the first bound at or above its highest value */
    uint64_t bound_ns[SPS_PROM_BOUNDS];
    for (int i = 0; i < SPS_PROM_BOUNDS; i++)
        bound_ns[i] = (uint64_t)llround(sps__prom_bound_s[i] * 1e9);
    int k = 0;
    for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++) {
        uint64_t high = sps_hist_bucket_low(b) + (sps_hist_bucket_width(b) - 1u);
        while (k < SPS_PROM_BOUNDS && bound_ns[k] < high)
            k++;
        c->bound_of[b] = (uint8_t)k;
    }
    return c;
}

/* A process without a rank whose parent (or its parent's parent...) has
 * one belongs to that rank: a DataLoader worker started with a fresh
 * environment is still its rank's, as in the report's per-rank figures. */
static void owner_ranks(struct sps__prom_collect *c) {
    for (uint32_t i = 0; i < c->recs.nrec; i++) {
        struct followed *f = rec_at(c, i);
        f->owner_rank = f->ok && f->r.h.rank >= 0 ? f->r.h.rank : -1;
        int32_t ppid = f->r.h.ppid;
        for (int depth = 0; f->ok && f->owner_rank < 0 && ppid > 1 && depth < 16; depth++) {
            const struct followed *parent = NULL;
            for (uint32_t k = 0; k < c->recs.nrec && !parent; k++)
                if (rec_at(c, k)->ok && rec_at(c, k)->r.h.pid == ppid)
                    parent = rec_at(c, k);
            if (!parent)
                break;
            f->owner_rank = parent->r.h.rank >= 0 ? parent->r.h.rank : -1;
            ppid = parent->r.h.ppid;
        }
    }
}

int sps__prom_collect_read(struct sps__prom_collect *c, struct sps__prom_snapshot *s) {
    s->series = NULL;
    s->procs = NULL;
    s->nseries = s->nprocs = 0;
    c->cap_series = c->cap_procs = 0;
    if (c->slot)
        memset(c->slot, 0, c->nslots * sizeof *c->slot);
    sps__followed_discover(&c->recs);
    for (uint32_t i = 0; i < c->recs.nrec; i++) {
        struct followed *f = rec_at(c, i);
        f->ok = sps__followed_refresh(&f->r);
    }
    owner_ranks(c);
    int rc = 0;
    for (uint32_t i = 0; i < c->recs.nrec && rc == 0; i++) {
        struct followed *f = rec_at(c, i);
        if (!f->ok)
            continue;
        rc = add_process(c, s, f);
        if (rc == 0)
            rc = grow_threads(f);
        for (uint32_t t = 0; t < f->nth && rc == 0; t++)
            rc = take_thread(c, s, f, &f->th[t]);
    }
    sps__prom_sort(s);
    return rc;
}

void sps__prom_collect_close(struct sps__prom_collect *c) {
    if (!c)
        return;
    for (uint32_t i = 0; i < c->recs.nrec; i++) {
        struct followed *f = rec_at(c, i);
        for (uint32_t t = 0; t < f->nth; t++)
            free(f->th[t].agg);
        free(f->th);
    }
    sps__followed_dir_close(&c->recs);
    free(c->slot);
    free(c);
}

/* ------------------------------------------------------------- totals */

void sps__prom_totals_init(struct sps__prom_totals *t) {
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++)
        t->host_served[m] = t->host_last[m] = NAN;
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            t->gpu_served[g][m] = t->gpu_last[g][m] = NAN;
}

static double as_counter(double *served, double *last, double v) {
    if (!isfinite(v))
        return v;
    if (!isfinite(*served))
        *served = v;
    else if (v > *last)
        *served += v - *last;
    *last = v;
    return *served;
}

void sps__prom_totals_apply(struct sps__prom_totals *t, struct sps__sample *s) {
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++)
        if (sps_host_metric_info(m)->kind == SPS_TOTAL)
            s->host[m] = as_counter(&t->host_served[m], &t->host_last[m], s->host[m]);
    int n = s->ngpus < SPS_CAPTURE_MAX_GPUS ? s->ngpus : SPS_CAPTURE_MAX_GPUS;
    for (int g = 0; g < n; g++)
        for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
            if (sps_gpu_metric_info(m)->kind == SPS_TOTAL)
                s->gpu[g].v[m] = as_counter(&t->gpu_served[g][m], &t->gpu_last[g][m], s->gpu[g].v[m]);
}
