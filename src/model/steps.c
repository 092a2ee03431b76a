/*
 * steps.c - the step table: one row per step a thread ended, and which rows
 * own each zone, micro-step, value and counter increment
 * (docs/report-format.md, "How a step owns events").  Part of building a
 * run (run.h); no I/O.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/run.h"
#include "stepscope.h"

/* An event of a process, with its name's summary and its thread. */
struct evref {
    const struct sps_event *e;
    int32_t summary; /* index into run->names */
    uint32_t thread; /* index into the process's threads */
};

/*
 * The events of one process and ring, all threads, in start order; at equal
 * starts by thread, and a thread's own events in the order it recorded them
 * (a value's "last" must not depend on a sort).  A merge of the threads'
 * streams rather than one sorted array: a thread's events are usually in
 * start order already (zones that do not nest, values), and then nothing is
 * copied; a thread whose are not gets a sorted index of its own.  A million
 * steps of ten zones, or 100 threads of 16,000, would otherwise gather and
 * sort 11 or 17.6 million references at once (16 bytes each, twice).
 */
struct start_key {
    uint64_t start_ns;
    uint32_t index; /* into the thread's events */
};

struct stream {
    const struct sps_event *ev;
    size_t n, next;
    struct start_key *order; /* NULL: ev is in start order */
};

struct merge {
    const struct sps_process_data *p;
    struct stream *s;  /* by thread */
    uint32_t *heap;    /* threads with events left, the earliest first */
    size_t nheap;
};

static int by_key(const void *pa, const void *pb) {
    const struct start_key *a = pa, *b = pb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static const struct sps_event *stream_head(const struct stream *st) {
    return &st->ev[st->order ? st->order[st->next].index : st->next];
}

/* Does thread a's next event come before thread b's? */
static int comes_before(const struct merge *m, uint32_t a, uint32_t b) {
    uint64_t x = stream_head(&m->s[a])->start_ns, y = stream_head(&m->s[b])->start_ns;
    return x != y ? x < y : a < b;
}

static void sift_down(struct merge *m, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < m->nheap && comes_before(m, m->heap[l], m->heap[best]))
            best = l;
        if (r < m->nheap && comes_before(m, m->heap[r], m->heap[best]))
            best = r;
        if (best == i)
            return;
        uint32_t t = m->heap[i];
        m->heap[i] = m->heap[best];
        m->heap[best] = t;
        i = best;
    }
}

static void merge_free(struct merge *m) {
    for (uint32_t t = 0; m->s && t < m->p->nthreads; t++)
        free(m->s[t].order);
    free(m->s);
    free(m->heap);
}

static int merge_open(struct merge *m, const struct sps_process_data *p, int ring) {
    memset(m, 0, sizeof *m);
    m->p = p;
    m->s = calloc(p->nthreads ? p->nthreads : 1, sizeof *m->s);
    m->heap = malloc((p->nthreads ? p->nthreads : 1) * sizeof *m->heap);
    if (!m->s || !m->heap) {
        merge_free(m);
        return SPS_ENOMEM;
    }
    for (uint32_t t = 0; t < p->nthreads; t++) {
        struct stream *st = &m->s[t];
        st->ev = p->threads[t].events[ring];
        st->n = p->threads[t].nevents[ring];
        size_t k = 1;
        while (k < st->n && st->ev[k - 1].start_ns <= st->ev[k].start_ns)
            k++;
        if (k < st->n) {
            st->order = malloc(st->n * sizeof *st->order);
            if (!st->order) {
                merge_free(m);
                return SPS_ENOMEM;
            }
            for (size_t i = 0; i < st->n; i++)
                st->order[i] = (struct start_key){st->ev[i].start_ns, (uint32_t)i};
            qsort(st->order, st->n, sizeof *st->order, by_key);
        }
        if (st->n)
            m->heap[m->nheap++] = t;
    }
    for (size_t i = m->nheap / 2; i-- > 0;)
        sift_down(m, i);
    return 0;
}

/* The next event in start order into *r; 0 when there is none left. */
static int merge_next(struct merge *m, struct evref *r) {
    if (!m->nheap)
        return 0;
    uint32_t t = m->heap[0];
    struct stream *st = &m->s[t];
    const struct sps_event *e = stream_head(st);
    *r = (struct evref){e, (int32_t)m->p->summary_of[e->name - 1], t};
    if (++st->next == st->n)
        m->heap[0] = m->heap[--m->nheap];
    sift_down(m, 0);
    return 1;
}

/*
 * Which steps own an event (docs/report-format.md, "How a step owns
 * events"): the steps of one thread, sorted by start, with the innermost
 * step enclosing each one (steps nest per thread) and where the time after
 * its end stops being its own.
 */
#define NO_ROW SIZE_MAX

struct step_span {
    uint64_t start_ns, end_ns;
    uint64_t until_ns; /* the start of the thread's first step that begins at or after end_ns; UINT64_MAX: none */
    size_t row;        /* index into run->steps; NO_ROW for a step still open when the record ends */
    long parent;       /* index of the innermost step enclosing it, -1: none */
    int next_lost;     /* the step the thread ended next is not in the record (a ring refused or
                          dropped it), so when the next step began is not known */
    uint32_t depth;    /* frames open on the thread outside the step */
};

struct thread_steps {
    struct step_span *spans;
    size_t n;
    /* events come in time order: the spans starting at or before the last
     * time asked about, so the next question usually needs no search */
    size_t cursor;
    uint64_t cursor_t;
};

#define NO_STEPPING_THREAD (-1L)
#define SEVERAL_STEPPING_THREADS (-2L)

struct process_steps {
    struct thread_steps *threads; /* by thread index; n = 0 for a thread that recorded no step */
    long stepping;                /* the thread that steps: its index, or one of the two above */
    long lender;                  /* for a process with no step: the ancestor process whose steps own
                                     its values and counters, -1: none */
};

static int thread_has_steps(const struct sps_thread_data *t) {
    if (t->offered[SPS_RING_STEPS] > 0)
        return 1;
    for (uint32_t k = 0; k < t->nopen; k++)
        if (t->open[k].kind == SPS_KIND_STEP)
            return 1;
    return 0;
}

static int span_order(const void *pa, const void *pb) {
    const struct step_span *a = pa, *b = pb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return a->end_ns > b->end_ns ? -1 : a->end_ns < b->end_ns; /* the enclosing one first */
}

/* Index of the first span starting at or after t (n when none). */
static size_t first_starting_from(const struct thread_steps *ts, uint64_t t) {
    size_t lo = 0, hi = ts->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts->spans[mid].start_ns < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Sort a thread's spans, then link each to its enclosing step and find
 * where its time stops. */
static int link_spans(struct thread_steps *ts) {
    if (ts->n == 0)
        return 0;
    size_t k = 1; /* steps that do not nest ended in the order they began: no sort then */
    while (k < ts->n && span_order(&ts->spans[k - 1], &ts->spans[k]) < 0)
        k++;
    if (k < ts->n)
        qsort(ts->spans, ts->n, sizeof *ts->spans, span_order);
    long *stack = malloc(ts->n * sizeof *stack);
    if (!stack)
        return SPS_ENOMEM;
    size_t depth = 0;
    for (size_t i = 0; i < ts->n; i++) {
        struct step_span *s = &ts->spans[i];
        while (depth && ts->spans[stack[depth - 1]].end_ns < s->end_ns)
            depth--; /* ended before s did: not around it */
        s->parent = depth ? stack[depth - 1] : -1;
        stack[depth++] = (long)i;
        size_t next = first_starting_from(ts, s->end_ns);
        s->until_ns = s->next_lost ? s->end_ns : next < ts->n ? ts->spans[next].start_ns : UINT64_MAX;
    }
    free(stack);
    return 0;
}

/* A new row for step event st of thread t of process pi, its cells absent
 * (run->steps has room for it: sps__run_build_steps reserves every row). */
static int add_row(struct sps_run *run, size_t pi, const struct sps_thread_data *t, const struct sps_event *st) {
    double *cells = malloc((run->nnames ? run->nnames : 1) * sizeof *cells);
    if (!cells)
        return SPS_ENOMEM;
    for (size_t k = 0; k < run->nnames; k++)
        cells[k] = NAN;
    struct sps_step_row *row = &run->steps[run->nsteps++];
    memset(row, 0, sizeof *row);
    row->index = st->seq;
    row->process = pi;
    row->tid = t->tid;
    row->name = run->procs[pi].summary_of[st->name - 1];
    row->start_ns = st->start_ns;
    row->end_ns = st->end_ns;
    row->by_name = cells;
    return 0;
}

/* The rows of one thread's kept steps, in the order they ended, and its
 * spans: those steps plus the steps still open when the record ends. */
static int thread_rows(struct sps_run *run, size_t pi, uint32_t ti, struct thread_steps *ts) {
    const struct sps_thread_data *t = &run->procs[pi].threads[ti];
    size_t kept = t->nevents[SPS_RING_STEPS];
    ts->spans = malloc((kept + t->nopen + 1) * sizeof *ts->spans);
    if (!ts->spans)
        return SPS_ENOMEM;
    const struct sps_event *ev = t->events[SPS_RING_STEPS];
    for (size_t si = 0; si < kept; si++) {
        const struct sps_event *st = &ev[si];
        uint64_t next_seq = si + 1 < kept ? ev[si + 1].seq : t->offered[SPS_RING_STEPS];
        ts->spans[ts->n++] = (struct step_span){st->start_ns, st->end_ns, UINT64_MAX, run->nsteps, -1,
                                                next_seq != st->seq + 1, st->depth};
        int rc = add_row(run, pi, t, st);
        if (rc)
            return rc;
    }
    for (uint32_t k = 0; k < t->nopen; k++) /* they own what follows their start, rows or not */
        if (t->open[k].kind == SPS_KIND_STEP)
            ts->spans[ts->n++] = (struct step_span){t->open[k].start_ns, UINT64_MAX, UINT64_MAX, NO_ROW, -1, 0, k};
    return link_spans(ts);
}

/* The spans of every thread of process pi, and which of its threads step. */
static int process_rows(struct sps_run *run, size_t pi, struct process_steps *ps) {
    const struct sps_process_data *p = &run->procs[pi];
    ps->stepping = NO_STEPPING_THREAD;
    ps->lender = -1;
    ps->threads = calloc(p->nthreads ? p->nthreads : 1, sizeof *ps->threads);
    if (!ps->threads)
        return SPS_ENOMEM;
    for (uint32_t ti = 0; ti < p->nthreads; ti++) {
        if (!thread_has_steps(&p->threads[ti]))
            continue;
        ps->stepping = ps->stepping == NO_STEPPING_THREAD ? (long)ti : SEVERAL_STEPPING_THREADS;
        int rc = thread_rows(run, pi, ti, &ps->threads[ti]);
        if (rc)
            return rc;
    }
    return 0;
}

/* The process whose steps own the values and counters of process pi when
 * it has no step of its own (a DataLoader worker): its nearest ancestor in
 * the run (same host; when an exec left several entries with the parent's
 * pid, the latest started before pi) that has one stepping thread. */
static long lender_of(const struct sps_run *run, const struct process_steps *steps, size_t pi) {
    size_t at = pi;
    for (int hops = 0; hops < 16; hops++) { /* a pid cycle cannot hold us */
        const struct sps_process_data *child = &run->procs[at];
        long parent = -1;
        for (size_t q = 0; q < run->nprocs; q++) {
            const struct sps_process_data *c = &run->procs[q];
            if (q == at || c->pid != child->ppid || strcmp(c->hostname, child->hostname) || c->start_ns > child->start_ns)
                continue;
            if (parent < 0 || c->start_ns >= run->procs[parent].start_ns)
                parent = (long)q;
        }
        if (parent < 0 || steps[parent].stepping == SEVERAL_STEPPING_THREADS)
            return -1;
        if (steps[parent].stepping >= 0)
            return parent;
        at = (size_t)parent;
    }
    return -1;
}

/* The steps that may own an event of thread ti of process pi: the thread's
 * own when it steps, else its process's only stepping thread's, else (for
 * values and counters) the lender's; NULL: none. */
static struct thread_steps *owner_steps(const struct process_steps *steps, size_t pi, uint32_t ti, int lend) {
    const struct process_steps *ps = &steps[pi];
    if (ps->threads[ti].n || ps->stepping == (long)ti)
        return &ps->threads[ti];
    if (ps->stepping >= 0)
        return &ps->threads[ps->stepping];
    if (ps->stepping == NO_STEPPING_THREAD && lend && ps->lender >= 0)
        return &steps[ps->lender].threads[steps[ps->lender].stepping];
    return NULL;
}

/* Index of the last span starting at or before t, -1: none. */
static long last_started(struct thread_steps *ts, uint64_t t) {
    if (t < ts->cursor_t)
        ts->cursor = first_starting_from(ts, t + 1);
    while (ts->cursor < ts->n && ts->spans[ts->cursor].start_ns <= t)
        ts->cursor++;
    ts->cursor_t = t;
    return (long)ts->cursor - 1;
}

/*
 * Where the walk over a value's owners starts: the span to begin at, the
 * time to judge it by, and a span that owns it whatever its time says.
 */
struct walk {
    long from;
    uint64_t t;
    long just_ended; /* owns it as the step just ended; -1: none */
};

/* Within this of a step's start, a value deeper than the step is taken to
 * be inside it (see settle). */
#define SETTLE_NS 2000u

/*
 * The owners of a thread's own value or count by time, corrected by its
 * depth (the frames open when it was recorded).  Two clock reads a few
 * nanoseconds apart can come out in the wrong order (rdtsc is not ordered
 * with the instructions around it, and a thread that moves between cores
 * reads another core's counter), so a count made just after a step's
 * end and just before the next step's begin can carry a time inside the
 * next step.  Its depth says it was not: a value recorded inside step s
 * is deeper than s.  So:
 *  - a value no deeper than a step its time lies in was recorded outside
 *    it: before the step when its time is nearer the step's start (it
 *    then belongs to what owned the time just before), else after it (the
 *    step just ended owns it);
 *  - a value deeper than the next step, timed between two steps but within
 *    SETTLE_NS before the next one began and nearer its start than the
 *    last one's end, was recorded inside it.
 * A value recorded inside one step but timed inside its neighbour (the
 * same depth) cannot be told apart; that takes a clock error larger than
 * the time between the two.
 */
static struct walk settle(struct thread_steps *ts, uint64_t t, uint32_t depth) {
    struct walk w = {last_started(ts, t), t, -1};
    for (long j = w.from; j >= 0; j = ts->spans[j].parent) {
        const struct step_span *s = &ts->spans[j];
        if (t >= s->end_ns || depth > s->depth)
            continue;
        if (t - s->start_ns < s->end_ns - t) {
            if (s->start_ns == 0)
                return (struct walk){-1, 0, -1};
            w.t = s->start_ns - 1;
            w.from = last_started(ts, w.t);
            return w;
        }
        return (struct walk){j, s->end_ns, j};
    }
    if (w.from >= 0 && t < ts->spans[w.from].end_ns)
        return w; /* inside the step that began last, and deeper than it: its own */
    size_t next = (size_t)(w.from + 1);
    if (next >= ts->n || depth <= ts->spans[next].depth)
        return w;
    uint64_t to_next = ts->spans[next].start_ns - t;
    uint64_t from_last = w.from >= 0 ? t - ts->spans[w.from].end_ns : UINT64_MAX;
    if (to_next <= SETTLE_NS && to_next < from_last) /* nearer the next step's start than the last one's end */
        return (struct walk){(long)next, ts->spans[next].start_ns, -1};
    return w;
}

/* Add event r to every row that owns it.  Zones and micro-steps belong to
 * the steps they start inside; values and counters also to the step whose
 * end they follow, until the thread's next step begins.  own: the event is
 * of the thread whose steps ts are (its depth means something there). */
static void attribute(struct sps_run *run, struct thread_steps *ts, const struct evref *r, int after_end, int own) {
    const struct sps_event *e = r->e;
    struct walk w = {-1, e->start_ns, -1};
    if (own && after_end && e->depth != SPS_REC_DEPTH_TIMED) /* a value at its own time: by the time alone */
        w = settle(ts, e->start_ns, e->depth);
    else
        w.from = last_started(ts, w.t);
    uint64_t t = w.t;
    for (long k = w.from; k >= 0; k = ts->spans[k].parent) {
        const struct step_span *s = &ts->spans[k];
        int owns = k == w.just_ended || t < s->end_ns || (after_end && t < s->until_ns);
        if (!owns || s->row == NO_ROW)
            continue;
        struct sps_step_row *row = &run->steps[s->row];
        double *cell = &row->by_name[r->summary];
        if (e->kind == SPS_KIND_MICROSTEP) {
            row->microsteps++;
        } else if (e->kind == SPS_KIND_VALUE) {
            memcpy(cell, &e->a, sizeof *cell); /* in start order: the last one stays */
        } else {
            double add = e->kind == SPS_KIND_COUNTER ? (double)e->a : (double)e->a / 1e9;
            *cell = (isnan(*cell) ? 0.0 : *cell) + add;
        }
    }
}

/* Give process pi's zones and values to the rows that own them. */
static int attribute_process(struct sps_run *run, const struct process_steps *steps, size_t pi) {
    const struct sps_process_data *p = &run->procs[pi];
    static const int rings[] = {SPS_RING_ZONES, SPS_RING_VALUES};
    for (size_t i = 0; i < sizeof rings / sizeof *rings; i++) {
        int ring = rings[i];
        struct merge m;
        if (merge_open(&m, p, ring) != 0)
            return SPS_ENOMEM;
        struct evref r;
        while (merge_next(&m, &r)) {
            struct thread_steps *ts = owner_steps(steps, pi, r.thread, ring == SPS_RING_VALUES);
            if (ts && ts->n)
                attribute(run, ts, &r, ring == SPS_RING_VALUES, ts == &steps[pi].threads[r.thread]);
        }
        merge_free(&m);
    }
    return 0;
}

/*
 * One row per step event kept, per process, per thread, in the order the
 * steps ended; then every zone, micro-step, value and counter increment
 * goes to the rows that own it (attribute()): zones contribute their self
 * time, values their last value, counters their sum, micro-steps a count.
 */
int sps__run_build_steps(struct sps_run *run) {
    for (size_t i = 0; i < run->nnames; i++)
        if (run->names[i].kind == SPS_KIND_STEP)
            run->steps_recorded += run->names[i].agg.count;
    struct process_steps *steps = calloc(run->nprocs ? run->nprocs : 1, sizeof *steps);
    if (!steps)
        return SPS_ENOMEM;
    size_t rows = 0;
    for (size_t pi = 0; pi < run->nprocs; pi++)
        for (uint32_t ti = 0; ti < run->procs[pi].nthreads; ti++)
            rows += run->procs[pi].threads[ti].nevents[SPS_RING_STEPS];
    struct sps_step_row *room = realloc(run->steps, (rows ? rows : 1) * sizeof *room);
    if (!room) {
        free(steps);
        return SPS_ENOMEM;
    }
    run->steps = room;
    int rc = 0;
    for (size_t pi = 0; rc == 0 && pi < run->nprocs; pi++)
        rc = process_rows(run, pi, &steps[pi]);
    for (size_t pi = 0; rc == 0 && pi < run->nprocs; pi++)
        if (steps[pi].stepping == NO_STEPPING_THREAD)
            steps[pi].lender = lender_of(run, steps, pi);
    for (size_t pi = 0; rc == 0 && pi < run->nprocs; pi++)
        rc = attribute_process(run, steps, pi);
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        for (uint32_t ti = 0; steps[pi].threads && ti < run->procs[pi].nthreads; ti++)
            free(steps[pi].threads[ti].spans);
        free(steps[pi].threads);
    }
    free(steps);
    return rc;
}
