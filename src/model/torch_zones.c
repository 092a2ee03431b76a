/*
 * torch_zones.c - each deep-capture window against the run's own events
 * (torch_ops.h): its steps' times and costs from the step rows, and the
 * top operators by self time per stepscope zone.  An operator belongs to
 * the innermost zone (step, micro-step or zone) of its thread that holds
 * it, give or take the window's clock alignment bound, or holds most of
 * it; operators of other threads, and those in no zone, belong to none.
 * The operators are fitted to that one timeline: moved into their zone,
 * cut back from zones they partly cover, and nested with each other, so
 * that trace.json leaves none of them out.  Part of building a run; no
 * I/O.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/run.h"
#include "model/torch_ops.h"
#include "stepscope.h"

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The window's span and its steps' mean against the median of the
 * thread's other (not warm-up) steps. */
static int step_costs(const struct sps_run *run, size_t pi, struct sps_torch_capture *c) {
    double *others = malloc((run->nsteps ? run->nsteps : 1) * sizeof *others);
    if (!others)
        return SPS_ENOMEM;
    size_t nothers = 0, nwin = 0;
    double win_sum = 0;
    c->window_step_mean_s = c->other_step_median_s = NAN;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (r->process != pi || r->tid != c->tid || run->names[r->name].kind != SPS_KIND_STEP)
            continue;
        double d = (double)(r->end_ns - r->start_ns) * 1e-9;
        if (r->index >= c->first_step && r->index < c->end_step) {
            if (!nwin || r->start_ns < c->start_ns)
                c->start_ns = r->start_ns;
            if (r->end_ns > c->end_ns)
                c->end_ns = r->end_ns;
            win_sum += d;
            nwin++;
        } else if (!r->warmup) {
            others[nothers++] = d;
        }
    }
    if (nwin)
        c->window_step_mean_s = win_sum / (double)nwin;
    if (nothers) {
        qsort(others, nothers, sizeof *others, by_double);
        c->other_step_median_s = nothers % 2 ? others[nothers / 2]
                                             : (others[nothers / 2 - 1] + others[nothers / 2]) / 2;
    }
    free(others);
    return 0;
}

/* A zone, step or micro-step of the operators' thread. */
struct span {
    uint64_t start_ns, end_ns;
    uint32_t depth;
    long summary; /* index into run->names */
};

/* The thread's spans that overlap [lo, hi]; NULL with *n 0 when none or
 * out of memory (*nomem set). */
static struct span *spans_of(const struct sps_run *run, const struct sps_process_data *p,
                             const struct sps_thread_data *t, uint64_t lo, uint64_t hi, size_t *n, int *nomem) {
    static const int rings[] = {SPS_RING_ZONES, SPS_RING_STEPS};
    size_t cap = t->nevents[SPS_RING_ZONES] + t->nevents[SPS_RING_STEPS];
    *n = 0;
    struct span *s = malloc((cap ? cap : 1) * sizeof *s);
    if (!s) {
        *nomem = 1;
        return NULL;
    }
    for (size_t r = 0; r < sizeof rings / sizeof rings[0]; r++)
        for (size_t k = 0; k < t->nevents[rings[r]]; k++) {
            const struct sps_event *e = &t->events[rings[r]][k];
            if (!sps_kind_is_timed(e->kind))
                continue;
            if (e->end_ns < lo || e->start_ns > hi || !e->name || e->name > p->nnames)
                continue;
            s[(*n)++] = (struct span){e->start_ns, e->end_ns, e->depth, p->summary_of[e->name - 1]};
        }
    (void)run;
    return s;
}

/* An operator's zone and self time, for the sort that sums them. */
struct owned {
    long zone; /* summary index; -1 none */
    uint32_t op;
    uint64_t self_ns;
};

static int by_zone_op(const void *pa, const void *pb) {
    const struct owned *a = pa, *b = pb;
    if (a->zone != b->zone)
        return a->zone < b->zone ? -1 : 1;
    return a->op < b->op ? -1 : a->op > b->op;
}

/* How much of [start, end] lies in span s. */
static uint64_t held_by(const struct span *s, uint64_t start, uint64_t end) {
    uint64_t lo = s->start_ns > start ? s->start_ns : start, hi = s->end_ns < end ? s->end_ns : end;
    return hi > lo ? hi - lo : 0;
}

/*
 * A CPU operator's zone, or -1: the innermost span that holds it give or
 * take the alignment bound tol, or, when deeper, the innermost one that
 * holds most of it (at least half; an instant: the span it lies in).  The
 * second rule keeps an operator in its zone when the clocks put it across
 * the zone's edge by more than the bound (a preempted bracket), rather
 * than handing it to the step around the zone.
 */
static long span_of(const struct sps_torch_op *op, const struct span *s, size_t n, uint64_t tol) {
    long near = -1, most = -1;
    uint64_t len = op->end_ns - op->start_ns;
    for (size_t k = 0; k < n; k++) {
        int within = s[k].start_ns <= op->start_ns + tol && op->end_ns <= s[k].end_ns + tol;
        int holds_most = len ? 2 * held_by(&s[k], op->start_ns, op->end_ns) >= len
                             : s[k].start_ns <= op->start_ns && op->start_ns <= s[k].end_ns;
        if (within && (near < 0 || s[k].depth > s[near].depth))
            near = (long)k;
        if (holds_most && (most < 0 || s[k].depth > s[most].depth))
            most = (long)k;
    }
    return most >= 0 && (near < 0 || s[most].depth > s[near].depth) ? most : near;
}

/* The operator moved inside span in (when it has one), and cut back from
 * each span it still crosses the edge of (a zone inside its own that it
 * only partly covers): in one timeline an operator and a zone nest or
 * lie apart, or trace.json would have to leave one of them out. */
static void fit_op(struct sps_torch_op *op, const struct span *s, size_t n, long in) {
    if (in >= 0) {
        if (op->start_ns < s[in].start_ns)
            op->start_ns = s[in].start_ns;
        if (op->end_ns > s[in].end_ns)
            op->end_ns = s[in].end_ns;
        if (op->end_ns < op->start_ns)
            op->end_ns = op->start_ns;
    }
    for (size_t k = 0; k < n; k++) {
        if (s[k].start_ns > op->start_ns && s[k].start_ns < op->end_ns && s[k].end_ns > op->end_ns)
            op->end_ns = s[k].start_ns; /* the zone begins inside the operator and outlasts it */
        else if (s[k].end_ns > op->start_ns && s[k].end_ns < op->end_ns && s[k].start_ns < op->start_ns)
            op->start_ns = s[k].end_ns; /* the zone began before it and ends inside it */
    }
}

/* Operators by track (GPU kernels apart, then thread), start, the longer
 * (enclosing) first, then as the file listed them (their place in the
 * array): the order trace.json nests them in. */
static int by_track_start(const void *pa, const void *pb) {
    const struct sps_torch_op *a = *(const struct sps_torch_op *const *)pa;
    const struct sps_torch_op *b = *(const struct sps_torch_op *const *)pb;
    if (a->gpu != b->gpu)
        return a->gpu < b->gpu ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns)
        return a->end_ns > b->end_ns ? -1 : 1;
    return a < b ? -1 : a > b;
}

/*
 * One pass over the CPU operators in by_track_start order (in order[]):
 * an operator that begins inside another and ends after it is made to
 * nest.  torch 1.13 gives an operator's end as its whole-microsecond start
 * plus its whole-microsecond duration, so a child's end can pass its
 * parent's by up to 1 us; an operator mostly inside the other ends with
 * it; one mostly after it begins where it ends (moving a start reorders
 * them: *moved is set and the caller sorts again), unless starts_fixed.
 */
static void nest_pass(struct sps_torch_op **order, size_t n, const struct sps_torch_op **stack, int starts_fixed,
                      int *moved) {
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        struct sps_torch_op *x = order[i];
        if (x->gpu)
            break; /* kernels sort last; streams may overlap on the GPU */
        if (i && order[i - 1]->tid != x->tid)
            depth = 0;
        for (;;) {
            while (depth && stack[depth - 1]->end_ns <= x->start_ns)
                depth--;
            const struct sps_torch_op *top = depth ? stack[depth - 1] : NULL;
            if (!top || x->end_ns <= top->end_ns)
                break;
            if (starts_fixed || top->end_ns - x->start_ns >= x->end_ns - top->end_ns) {
                x->end_ns = top->end_ns;
                break;
            }
            x->start_ns = top->end_ns; /* then against the one around top */
            *moved = 1;
        }
        stack[depth++] = x;
    }
}

/* The capture's CPU operators made to nest on each thread's track (see
 * nest_pass).  Returns 0 or SPS_ENOMEM. */
static int nest_ops(struct sps_torch_capture *c) {
    enum { MAX_PASSES = 8 };
    struct sps_torch_op **order = malloc((c->nops ? c->nops : 1) * sizeof *order);
    const struct sps_torch_op **stack = malloc((c->nops ? c->nops : 1) * sizeof *stack);
    if (!order || !stack) {
        free(order);
        free((void *)stack);
        return SPS_ENOMEM;
    }
    int moved = 1;
    for (int pass = 0; moved && pass < MAX_PASSES; pass++) {
        for (size_t k = 0; k < c->nops; k++)
            order[k] = &c->ops[k];
        qsort(order, c->nops, sizeof *order, by_track_start);
        moved = 0;
        nest_pass(order, c->nops, stack, pass == MAX_PASSES - 1, &moved);
    }
    free(order);
    free((void *)stack);
    return 0;
}

/* Each operator of the capture's thread into its zone (span_of) and fitted
 * to it (fit_op), then every thread's operators nested (nest_ops); zone[k]
 * the op's zone (summary index, -1 none) when zone is not NULL.  Returns 0
 * or SPS_ENOMEM. */
static int place(const struct sps_run *run, size_t pi, struct sps_torch_capture *c, long *zone) {
    const struct sps_process_data *p = &run->procs[pi];
    const struct sps_thread_data *t = NULL;
    for (uint32_t k = 0; k < p->nthreads && !t; k++)
        if (p->threads[k].tid == c->tid)
            t = &p->threads[k];
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t k = 0; k < c->nops; k++) {
        if (c->ops[k].start_ns < lo)
            lo = c->ops[k].start_ns;
        if (c->ops[k].end_ns > hi)
            hi = c->ops[k].end_ns;
    }
    uint64_t tol = (uint64_t)c->align_error_ns;
    size_t nspans = 0;
    int nomem = 0;
    struct span *spans = t && c->nops && p->summary_of
                             ? spans_of(run, p, t, lo > tol ? lo - tol : 0, hi + tol, &nspans, &nomem)
                             : NULL;
    if (nomem)
        return SPS_ENOMEM;
    for (size_t k = 0; k < c->nops; k++) {
        struct sps_torch_op *op = &c->ops[k];
        int ours = !op->gpu && op->tid == c->tid;
        long in = ours ? span_of(op, spans, nspans, tol) : -1;
        if (ours)
            fit_op(op, spans, nspans, in);
        if (zone)
            zone[k] = in >= 0 ? spans[in].summary : -1;
    }
    free(spans);
    return nest_ops(c);
}

int sps__torch_place_ops(const struct sps_run *run, struct sps_torch_capture *c) {
    for (size_t pi = 0; pi < run->nprocs; pi++)
        if (run->procs[pi].pid == c->pid)
            return place(run, pi, c, NULL);
    return 0;
}

/* A zone's sums: its name, total self ns and the range of its rows. */
struct zone_sum {
    long zone;
    uint64_t total_ns;
    size_t from, to; /* rows in the reduced array */
};

static int by_total_desc(const void *pa, const void *pb) {
    const struct zone_sum *a = pa, *b = pb;
    return a->total_ns > b->total_ns ? -1 : a->total_ns < b->total_ns;
}

struct reduced {
    long zone;
    uint32_t op;
    uint64_t count, self_ns;
};

static int by_self_desc(const void *pa, const void *pb) {
    const struct reduced *a = pa, *b = pb;
    return a->self_ns > b->self_ns ? -1 : a->self_ns < b->self_ns;
}

/* The reduced rows (sorted by zone) into c->tops: zones by total, each
 * zone's operators by self time, the first SPS_TORCH_TOP_PER_ZONE. */
static int make_tops(const struct sps_run *run, struct sps_torch_capture *c, struct reduced *red, size_t nred) {
    struct zone_sum *zs = malloc((nred ? nred : 1) * sizeof *zs);
    size_t nz = 0;
    if (!zs)
        return SPS_ENOMEM;
    for (size_t i = 0; i < nred; i++) {
        if (!nz || zs[nz - 1].zone != red[i].zone)
            zs[nz++] = (struct zone_sum){red[i].zone, 0, i, i};
        zs[nz - 1].total_ns += red[i].self_ns;
        zs[nz - 1].to = i + 1;
    }
    qsort(zs, nz, sizeof *zs, by_total_desc);
    c->tops = calloc(nred ? nred : 1, sizeof *c->tops);
    int rc = c->tops ? 0 : SPS_ENOMEM;
    for (size_t z = 0; !rc && z < nz; z++) {
        struct reduced *rows = red + zs[z].from;
        size_t nrows = zs[z].to - zs[z].from;
        qsort(rows, nrows, sizeof *rows, by_self_desc);
        for (size_t k = 0; !rc && k < nrows && k < SPS_TORCH_TOP_PER_ZONE; k++) {
            struct sps_torch_top *t = &c->tops[c->ntops++];
            t->zone = zs[z].zone >= 0 ? strdup(run->names[zs[z].zone].name) : NULL;
            t->op = strdup(c->names[rows[k].op]);
            t->count = rows[k].count;
            t->self_s = (double)rows[k].self_ns * 1e-9;
            if ((zs[z].zone >= 0 && !t->zone) || !t->op)
                rc = SPS_ENOMEM;
        }
    }
    free(zs);
    return rc;
}

/* The capture's operators placed in their zones, and its per-zone top
 * operators. */
static int attribute(const struct sps_run *run, size_t pi, struct sps_torch_capture *c) {
    long *zone = malloc((c->nops ? c->nops : 1) * sizeof *zone);
    struct owned *own = malloc((c->nops ? c->nops : 1) * sizeof *own);
    int rc = zone && own ? place(run, pi, c, zone) : SPS_ENOMEM;
    if (rc) {
        free(zone);
        free(own);
        return rc;
    }
    size_t n = 0;
    for (size_t k = 0; k < c->nops; k++)
        if (!c->ops[k].gpu)
            own[n++] = (struct owned){zone[k], c->ops[k].name, c->ops[k].self_ns};
    free(zone);
    qsort(own, n, sizeof *own, by_zone_op);
    struct reduced *red = malloc((n ? n : 1) * sizeof *red);
    size_t nred = 0;
    if (!red) {
        free(own);
        return SPS_ENOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        if (!nred || red[nred - 1].zone != own[k].zone || red[nred - 1].op != own[k].op)
            red[nred++] = (struct reduced){own[k].zone, own[k].op, 0, 0};
        red[nred - 1].count++;
        red[nred - 1].self_ns += own[k].self_ns;
    }
    free(own);
    rc = make_tops(run, c, red, nred);
    free(red);
    return rc;
}

int sps__run_torch_build(struct sps_run *run) {
    for (size_t i = 0; i < run->ntorch; i++) {
        struct sps_torch_capture *c = &run->torch[i];
        size_t pi = 0;
        while (pi < run->nprocs && run->procs[pi].pid != c->pid)
            pi++;
        c->window_step_mean_s = c->other_step_median_s = NAN;
        if (pi == run->nprocs || !run->procs[pi].summary_of)
            continue; /* no record of the process: its operators stand alone */
        int rc = step_costs(run, pi, c);
        if (!rc && !c->unavailable)
            rc = attribute(run, pi, c);
        if (rc)
            return rc;
    }
    return 0;
}
