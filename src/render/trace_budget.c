/*
 * trace_budget.c - what goes into trace.json (trace_parts.h): the items
 * ordered as the file lists them, complete events that would break a
 * track's nesting left out, zones given to the steps that own them, and
 * the size policy of docs/trace-format.md ("Size budget").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "render/trace_parts.h"
#include "stepscope.h"

/* ------------------------------------------------------------ ordering */

void sps__trace_sort(void *base, size_t n, size_t size, int (*order)(const void *, const void *)) {
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
    sps__trace_sort(t->meta, t->nmeta, sizeof *t->meta, meta_order);
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
    size_t cap = 64, depth = 0; /* the deepest nesting, not one slot per item */
    size_t *stack = malloc(cap * sizeof *stack);
    if (!stack)
        return SPS_ENOMEM;
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
        if (depth == cap) {
            size_t *more = realloc(stack, 2 * cap * sizeof *stack);
            if (!more) {
                free(stack);
                return SPS_ENOMEM;
            }
            stack = more;
            cap *= 2;
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
    sps__trace_sort(order, t->nsteps, sizeof *order, key_order);
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
    sps__trace_sort(keys, t->nsteps, sizeof *keys, key_order);
    for (size_t i = 0; i < t->nsteps && i < TRACE_SLOWEST_STEPS; i++)
        b[keys[i].idx].rank = next++;
    for (size_t i = 0; i < t->nsteps; i++)
        keys[i] = (struct sort_key){{-b[i].end, -b[i].start, 0, 0}, i};
    sps__trace_sort(keys, t->nsteps, sizeof *keys, key_order);
    for (size_t i = 0, taken = 0; i < t->nsteps && taken < TRACE_LATEST_STEPS; i++)
        if (!b[keys[i].idx].rank) {
            b[keys[i].idx].rank = next++;
            taken++;
        }
    for (size_t i = 0; i < nb; i++)
        keys[i] = (struct sort_key){{b[i].start, 0, 0, 0}, i};
    sps__trace_sort(keys, nb, sizeof *keys, key_order);
    for (size_t i = 0; i < nb; i++)
        if (!b[keys[i].idx].rank)
            b[keys[i].idx].rank = next++;
}

/*
 * Zones go in by bucket rank, each bucket's in time order (start, the
 * enclosing first, then depth and gathering order) while they fit: the
 * first that does not ends that bucket's detail, so what is kept of a
 * step is its beginning with every enclosing zone, never scattered
 * pieces.  The zones are grouped by bucket with a counting pass and only
 * one bucket's are sorted at a time: sorting keys for every zone of a
 * big run at once took 40 bytes a zone, twice.
 */
static int take_zones(struct trace *t, struct bucket *b, size_t nb, uint64_t *room) {
    size_t *at = calloc(nb + 1, sizeof *at); /* by rank - 1: where its zones begin in idx */
    size_t nz = 0, widest = 0;
    for (size_t i = 0; i < t->nx; i++)
        if (t->x[i].kind != X_STEP && t->x[i].state == ITEM_CANDIDATE)
            nz++;
    size_t *idx = malloc((nz ? nz : 1) * sizeof *idx);
    if (!at || !idx) {
        free(at);
        free(idx);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < t->nx; i++)
        if (t->x[i].kind != X_STEP && t->x[i].state == ITEM_CANDIDATE)
            at[b[bucket_of(t, &t->x[i])].rank]++; /* ranks run from 1 to nb */
    for (size_t r = 1; r <= nb; r++) {
        if (at[r] > widest)
            widest = at[r];
        at[r] += at[r - 1];
    }
    /* at[r - 1]: the first slot of rank r's zones, advanced as they are placed */
    for (size_t i = 0; i < t->nx; i++)
        if (t->x[i].kind != X_STEP && t->x[i].state == ITEM_CANDIDATE)
            idx[at[b[bucket_of(t, &t->x[i])].rank - 1]++] = i;
    struct sort_key *keys = keys_new(widest);
    if (!keys) {
        free(at);
        free(idx);
        return SPS_ENOMEM;
    }
    /* after the placing, at[r - 1] is where rank r's zones end */
    for (size_t r = 0, from = 0; r < nb; from = at[r], r++) {
        size_t n = at[r] - from;
        for (size_t k = 0; k < n; k++) {
            const struct x_item *x = &t->x[idx[from + k]];
            keys[k] = (struct sort_key){{x->start, -x->end, x->depth, 0}, idx[from + k]};
        }
        sps__trace_sort(keys, n, sizeof *keys, key_order);
        int cut = 0;
        for (size_t k = 0; k < n; k++) {
            struct x_item *x = &t->x[keys[k].idx];
            struct bucket *bk = &b[bucket_of(t, x)];
            if (!cut && x->size <= *room) {
                *room -= x->size;
                x->state = ITEM_KEPT;
                bk->kept++;
            } else {
                cut = 1;
                x->state = ITEM_BUDGET;
                bk->dropped++;
                t->n.zones_budget++;
            }
        }
    }
    free(keys);
    free(at);
    free(idx);
    return 0;
}

static int choose_zones(struct trace *t, uint64_t *room) {
    size_t nprocs = t->rep->have_events ? t->rep->run.nprocs : 0;
    size_t nb = t->nsteps + nprocs;
    struct bucket *b = calloc(nb ? nb : 1, sizeof *b);
    struct sort_key *keys = keys_new(nb);
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
    free(keys);
    int rc = take_zones(t, b, nb, room);
    if (rc != 0) {
        free(b);
        return rc;
    }
    for (size_t i = 0; i < t->nsteps; i++) {
        if (b[i].dropped && b[i].kept)
            t->n.buckets_partial++;
        else if (b[i].dropped)
            t->n.buckets_left_out++;
    }
    free(b);
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
int sps__trace_choose(struct trace *t, uint64_t max_bytes, char *err, size_t errlen) {
    uint64_t fixed = sps__trace_fixed_bytes(t, max_bytes);
    if (t->oom)
        return SPS_ENOMEM;
    for (size_t i = 0; i < t->nmeta; i++)
        fixed += t->meta[i].size;
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
    sps__trace_sort(steps, ns, sizeof *steps, key_order);
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


int sps__trace_arrange(struct trace *t) {
    dedupe_meta(t);
    sps__trace_sort(t->points, t->npoints, sizeof *t->points, point_order);
    if (assign_buckets(t) != 0)
        return SPS_ENOMEM;
    sps__trace_sort(t->x, t->nx, sizeof *t->x, x_order);
    return drop_overlapping(t);
}
