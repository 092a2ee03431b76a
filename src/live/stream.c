/*
 * stream.c - the live step stream (see stream.h).  The record checks
 * mirror src/model/reader.c's for the fields read here, and the clock
 * conversion is the reader's, so a line's times are report.json's up to
 * the clock refinement the reader applies at the end of the run.
 */
#include "live/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live/followed.h"
#include "live/record_file.h"
#include "live/stream_machine.h"
#include "record_format.h"
#include "render/step_line_json.h"
#include "record_clock.h"
#include "step_line.h"

#define CHUNK 256u
/* Events that start this long before a poll began may still belong to a
 * step that opens later only if the clocks disagree by more: they never do
 * by this much. */
#define NOW_MARGIN_NS 1000000

struct ev {
    int64_t t; /* start, CLOCK_MONOTONIC ns */
    uint64_t a;
    uint32_t name;
    uint16_t kind;
};

struct evbuf {
    struct ev *e;
    size_t n, cap;
};

struct pstep {
    uint64_t index;
    uint32_t name;
    int64_t start, end;
};

struct thread_follow {
    uint64_t seg_off;
    int tid;
    uint64_t next[SPS_RING_COUNT]; /* events of each ring taken so far */
    struct pstep *steps;           /* ended, line not written yet, in the order they ended */
    size_t nsteps, capsteps;
    struct evbuf zones, values;    /* read, possibly owned by a step not written yet */
    int64_t lost_until;            /* zone or value events that started before were overwritten unread */
    int gap;                       /* events were lost just before the next one taken from the ring read now */
};

/* A record as the stream follows it. */
struct rec {
    struct sps__followed r; /* first: the records directory allocates it */
    struct sps__rec_clock clock;
    struct thread_follow *th;
    uint32_t nth;
};

struct sps__live_stream {
    struct sps__followed_dir recs;
    int fd;
    int64_t origin;
    struct sps__stream_machine machine;
    char *out; /* this poll's lines, written at its end */
    size_t outlen, outcap;
    int failed; /* a write failed: nothing more is written */
    struct sps__live_stream_stats stats;
    struct sps_rec_thread seg;
    struct sps_rec_event batch[CHUNK];
    struct sps__step_line line;
    char text[SPS_STEP_LINE_JSON_MAX];
};

/* ------------------------------------------------------------ records */

static int64_t to_ns(const struct rec *f, uint64_t ticks) {
    return sps__rec_clock_ns(&f->clock, ticks);
}

/* The header's mutable part (its anchor read again after, so a pair
 * being rewritten is not used: the copy's anchor_seq is then made odd) and
 * the names published since.  -1 when the record cannot be read now. */
static int refresh(struct rec *f) {
    if (f->r.state == SPS_LIVE_REC_PENDING)
        f->r.state = sps__live_rec_header(f->r.fd, &f->r.h, &f->r.size);
    if (f->r.state != SPS_LIVE_REC_OK || sps__followed_read_header(&f->r) != 0)
        return -1;
    uint32_t again;
    if (sps__live_pread(f->r.fd, &again, sizeof again, offsetof(struct sps_rec_header, anchor_seq)) != 0 ||
        again != f->r.h.anchor_seq)
        f->r.h.anchor_seq = 1; /* odd: the calibrated rate alone */
    sps__rec_clock_setup(&f->clock, &f->r.h);
    return sps__followed_read_names(&f->r);
}

static const char *name_of(void *ctx, uint32_t id) {
    const struct rec *f = ctx;
    return id >= 1 && id <= f->r.nnames ? f->r.name[id - 1] : NULL;
}

/* A known name of this kind? */
static int named(const struct rec *f, const struct sps_rec_event *e, uint32_t kind) {
    return e->name >= 1 && e->name <= f->r.nnames && f->r.kind[e->name - 1] == kind && e->kind == kind;
}

/* ------------------------------------------------------------- output */

static void emit(struct sps__live_stream *st, const char *text, int len) {
    if (len < 0 || st->failed)
        return;
    if (st->outlen + (size_t)len > st->outcap) {
        size_t want = st->outcap ? st->outcap : 65536;
        while (want < st->outlen + (size_t)len)
            want *= 2;
        char *grown = realloc(st->out, want);
        if (!grown) {
            st->stats.write_errors++;
            return;
        }
        st->out = grown;
        st->outcap = want;
    }
    memcpy(st->out + st->outlen, text, (size_t)len);
    st->outlen += (size_t)len;
}

/* This poll's lines in one write, so a reader never sees half a line
 * (short of a full disk, after which nothing more is written). */
static void flush_out(struct sps__live_stream *st) {
    size_t done = 0;
    while (done < st->outlen && !st->failed) {
        ssize_t w = write(st->fd, st->out + done, st->outlen - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            st->failed = 1;
            st->stats.write_errors++;
            st->stats.write_errno = w < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)w;
    }
    st->outlen = 0;
}

static void lost_line(struct sps__live_stream *st, const struct rec *f, const struct thread_follow *th,
                      uint64_t first, uint64_t count) {
    if (!count)
        return;
    st->stats.steps_lost += count;
    emit(st, st->text, sps__steps_lost_json(count, first, f->r.h.pid, f->r.h.rank, th->tid, st->text, sizeof st->text));
}

/* The first event of b (in start order) that starts at or after t. */
static size_t first_from(const struct evbuf *b, int64_t t) {
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->e[mid].t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Put b in start order, keeping the order of equal starts (values at one
 * time stay in the order recorded).  A zones ring is in end order, which
 * is start order but for zones that enclose others: an insertion sort
 * from the first event it has not sorted moves only those. */
static void sort_from(struct evbuf *b, size_t sorted) {
    for (size_t i = sorted ? sorted : 1; i < b->n; i++) {
        struct ev e = b->e[i];
        size_t j = i;
        while (j > 0 && b->e[j - 1].t > e.t) {
            b->e[j] = b->e[j - 1];
            j--;
        }
        b->e[j] = e;
    }
}

/* The line of pending step p, which owns values until `until` (events
 * in start order: each step looks only at its own). */
static void step_line(struct sps__live_stream *st, const struct rec *f, const struct thread_follow *th,
                      const struct pstep *p, int64_t until) {
    struct sps__step_line *l = &st->line;
    sps__step_line_init(l, p->index, p->name, f->r.h.pid, f->r.h.rank, th->tid, p->start - st->origin,
                        p->end - st->origin);
    for (size_t i = first_from(&th->zones, p->start); i < th->zones.n && th->zones.e[i].t < p->end; i++) {
        const struct ev *e = &th->zones.e[i];
        if (e->kind == SPS_KIND_MICROSTEP)
            l->microsteps++;
        else if (e->kind == SPS_KIND_WAIT)
            sps__step_line_wait(l, e->name, e->t, e->a);
        else
            sps__step_line_zone(l, e->name, e->t, e->a);
    }
    for (size_t i = first_from(&th->values, p->start); i < th->values.n && th->values.e[i].t < until; i++) {
        const struct ev *e = &th->values.e[i];
        if (e->kind == SPS_KIND_VALUE) {
            double v;
            memcpy(&v, &e->a, sizeof v);
            sps__step_line_value(l, e->name, v);
        } else {
            sps__step_line_count(l, e->name, e->a);
        }
    }
    l->partial = p->start < th->lost_until;
    sps__stream_machine_window(&st->machine, p->start, p->end, &l->machine);
    emit(st, st->text, sps__step_line_json(l, name_of, (void *)f, st->text, sizeof st->text));
    st->stats.lines++;
}

/* Write the lines of the first n pending steps; the last of them owns
 * values until last_until. */
static void settle(struct sps__live_stream *st, const struct rec *f, struct thread_follow *th, size_t n,
                   int64_t last_until) {
    if (!n)
        return;
    for (size_t k = 0; k < n; k++)
        step_line(st, f, th, &th->steps[k], k + 1 < th->nsteps ? th->steps[k + 1].start : last_until);
    memmove(th->steps, th->steps + n, (th->nsteps - n) * sizeof *th->steps);
    th->nsteps -= n;
}

/* -------------------------------------------------------------- rings */

static int push_ev(struct evbuf *b, const struct ev *e) {
    if (b->n == b->cap) {
        size_t want = b->cap ? 2 * b->cap : 256;
        struct ev *grown = realloc(b->e, want * sizeof *grown);
        if (!grown)
            return -1;
        b->e = grown;
        b->cap = want;
    }
    b->e[b->n++] = *e;
    return 0;
}

static int push_step(struct thread_follow *th, const struct pstep *p) {
    if (th->nsteps == th->capsteps) {
        size_t want = th->capsteps ? 2 * th->capsteps : 16;
        struct pstep *grown = realloc(th->steps, want * sizeof *grown);
        if (!grown)
            return -1;
        th->steps = grown;
        th->capsteps = want;
    }
    th->steps[th->nsteps++] = *p;
    return 0;
}

/* Steps i .. i+n-1 of the thread did not reach the stream: the steps
 * before them are written first, so every line stays in order. */
static void steps_lost(struct sps__live_stream *st, const struct rec *f, struct thread_follow *th, uint64_t first,
                       uint64_t n) {
    if (!n)
        return;
    settle(st, f, th, th->nsteps, INT64_MAX);
    lost_line(st, f, th, first, n);
}

static void take(struct sps__live_stream *st, struct rec *f, struct thread_follow *th, int ring, uint64_t index,
                 const struct sps_rec_event *e) {
    if (ring == SPS_RING_STEPS) {
        struct pstep p = {index, e->name, to_ns(f, e->start_ticks), to_ns(f, e->end_ticks)};
        if (!named(f, e, SPS_KIND_STEP) || e->end_ticks < e->start_ticks || push_step(th, &p) != 0)
            steps_lost(st, f, th, index, 1); /* the overflow name, or refused as inconsistent */
        return;
    }
    struct ev v = {to_ns(f, e->start_ticks), e->a, e->name, e->kind};
    int ok = ring == SPS_RING_ZONES ? named(f, e, SPS_KIND_ZONE) || named(f, e, SPS_KIND_WAIT) ||
                                          named(f, e, SPS_KIND_MICROSTEP)
                                    : named(f, e, SPS_KIND_VALUE) || named(f, e, SPS_KIND_COUNTER);
    if (ok)
        push_ev(ring == SPS_RING_ZONES ? &th->zones : &th->values, &v);
}

static void lost_until(struct thread_follow *th, int64_t t) {
    if (t > th->lost_until)
        th->lost_until = t;
    th->gap = 0;
}

/* Events of one ring that were overwritten or refused before they were
 * read: steps get their line; zones and values mark the steps they may
 * have belonged to as partial, up to the end of the first event kept
 * after them (a lost event ended before it did, so a step that starts
 * later cannot own one), or up to now when none is. */
static void ring_lost(struct sps__live_stream *st, const struct rec *f, struct thread_follow *th, int ring,
                      uint64_t first, uint64_t n) {
    if (!n)
        return;
    if (ring == SPS_RING_STEPS)
        steps_lost(st, f, th, first, n);
    else
        th->gap = 1;
}

static uint64_t head_now(const struct rec *f, const struct thread_follow *th, int ring) {
    uint64_t h = 0;
    if (sps__live_pread(f->r.fd, &h, sizeof h,
                   th->seg_off + offsetof(struct sps_rec_thread, head) + (uint64_t)ring * sizeof(uint64_t)) != 0)
        return UINT64_MAX;
    return h;
}

/* Take the ring's events from the thread's cursor to head. */
static void read_ring(struct sps__live_stream *st, struct rec *f, struct thread_follow *th, int ring,
                      const struct sps_rec_thread *seg, int64_t now) {
    uint64_t cap = f->r.h.ring_cap[ring], head = seg->head[ring];
    uint64_t ring_off = seg->ring_off[ring];
    if (head <= th->next[ring] || !sps__followed_in_arena(&f->r, ring_off, cap * sizeof(struct sps_rec_event)))
        return;
    int keep_first = f->r.h.ring_policy == SPS_POLICY_KEEP_FIRST;
    uint64_t kept = sps_rec_ring_kept(head, cap, f->r.h.ring_policy);
    uint64_t lo = keep_first ? 0 : head - kept;
    uint64_t hi = keep_first ? (head < seg->limit[ring] ? head : seg->limit[ring]) : head;
    if (keep_first && hi > cap)
        hi = cap;
    uint64_t i = th->next[ring];
    if (i < lo) {
        ring_lost(st, f, th, ring, i, lo - i);
        i = lo;
    }
    while (i < hi) {
        uint64_t n = hi - i < CHUNK ? hi - i : CHUNK;
        uint64_t slot = i & (cap - 1);
        if (slot + n > cap)
            n = cap - slot;
        if (sps__live_pread(f->r.fd, st->batch, n * sizeof *st->batch, ring_off + slot * sizeof *st->batch) != 0)
            break;
        /* the writer may have lapped these slots while they were read */
        uint64_t first_good = i;
        if (!keep_first) {
            uint64_t h2 = head_now(f, th, ring);
            uint64_t safe = h2 == UINT64_MAX ? UINT64_MAX : (h2 >= cap ? h2 - cap + 1 : 0);
            if (safe > first_good)
                first_good = safe < i + n ? safe : i + n;
        }
        if (first_good > i) {
            ring_lost(st, f, th, ring, i, first_good - i);
        }
        for (uint64_t k = first_good - i; k < n; k++) {
            if (th->gap)
                lost_until(th, to_ns(f, st->batch[k].end_ticks));
            take(st, f, th, ring, i + k, &st->batch[k]);
        }
        i += n;
    }
    if (i >= hi && head > hi) /* keep-first refused the rest */
        ring_lost(st, f, th, ring, hi, head - hi);
    if (th->gap)
        lost_until(th, now);
    th->next[ring] = head > i ? head : i;
}

/* ------------------------------------------------------------ threads */

/* The start of the thread's innermost open step; INT64_MAX: none. */
static int64_t open_step_start(const struct rec *f, const struct sps_rec_thread *seg) {
    int64_t start = INT64_MAX;
    uint32_t depth = seg->depth <= SPS_REC_MAX_DEPTH ? seg->depth : 0;
    for (uint32_t k = 1; k <= depth; k++)
        if (seg->stack[k].kind == SPS_KIND_STEP)
            start = to_ns(f, seg->stack[k].start_ticks);
    return start;
}

/* Drop the events no step can own any more: those that start before
 * every step still to be written (pending, open, or beginning later).
 * A step that stays open for millions of events (a whole epoch recorded
 * as one step) would keep them all: past MAX_BUFFERED the oldest half
 * goes, and the steps they belonged to are marked partial. */
#define MAX_BUFFERED (1u << 20)
static void trim(struct evbuf *b, int64_t bound, int64_t *lost_until) {
    size_t w = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->e[i].t >= bound)
            b->e[w++] = b->e[i];
    b->n = w;
    if (b->n > MAX_BUFFERED) {
        size_t drop = b->n / 2;
        if (b->e[drop].t > *lost_until)
            *lost_until = b->e[drop].t;
        memmove(b->e, b->e + drop, (b->n - drop) * sizeof *b->e);
        b->n -= drop;
    }
}

static void follow_thread(struct sps__live_stream *st, struct rec *f, struct thread_follow *th, int64_t now,
                          int final) {
    struct sps_rec_thread *seg = &st->seg;
    if (sps__live_pread(f->r.fd, seg, sizeof *seg, th->seg_off) != 0 || seg->magic != SPS_REC_THREAD_MAGIC)
        return;
    th->tid = seg->tid;
    int64_t open = open_step_start(f, seg);
    int ended = final || seg->state == SPS_REC_THREAD_EXITED || f->r.h.state == SPS_REC_STATE_CLOSED;
    read_ring(st, f, th, SPS_RING_STEPS, seg, now);
    if (!th->nsteps && open == INT64_MAX) {
        /* no step to write and none open when the segment was read: what
         * the thread recorded up to then belongs to no step that can still
         * be written (a DataLoader worker, a helper thread, time between
         * steps), so it is skipped unread */
        th->next[SPS_RING_ZONES] = seg->head[SPS_RING_ZONES];
        th->next[SPS_RING_VALUES] = seg->head[SPS_RING_VALUES];
        th->zones.n = th->values.n = 0;
        return;
    }
    size_t zones_before = th->zones.n, values_before = th->values.n;
    read_ring(st, f, th, SPS_RING_ZONES, seg, now);
    read_ring(st, f, th, SPS_RING_VALUES, seg, now);
    sort_from(&th->zones, zones_before);
    sort_from(&th->values, values_before);
    if (th->nsteps) {
        const struct pstep *last = &th->steps[th->nsteps - 1];
        int next_began = open != INT64_MAX && open >= last->end;
        if (ended || next_began || now - last->end >= SPS_STREAM_GRACE_NS)
            settle(st, f, th, th->nsteps, next_began ? open : INT64_MAX);
        else
            settle(st, f, th, th->nsteps - 1, INT64_MAX);
    }
    int64_t bound = now - NOW_MARGIN_NS;
    if (th->nsteps && th->steps[0].start < bound)
        bound = th->steps[0].start;
    if (open < bound)
        bound = open;
    if (ended && !th->nsteps)
        bound = INT64_MAX;
    trim(&th->zones, bound, &th->lost_until);
    trim(&th->values, bound, &th->lost_until);
}

static void follow_record(struct sps__live_stream *st, struct rec *f, int64_t now, int final) {
    if (refresh(f) != 0)
        return;
    uint32_t n = sps__followed_threads(&f->r);
    if (n > f->nth) {
        struct thread_follow *grown = realloc(f->th, n * sizeof *grown);
        if (!grown)
            return;
        f->th = grown;
        while (f->nth < n) {
            uint64_t off;
            if (sps__followed_thread_seg(&f->r, f->nth, &off) != 0)
                break; /* published but not readable yet: next time */
            memset(&f->th[f->nth], 0, sizeof f->th[f->nth]);
            f->th[f->nth].seg_off = off;
            f->th[f->nth].lost_until = INT64_MIN;
            f->nth++;
        }
    }
    for (uint32_t t = 0; t < f->nth; t++)
        follow_thread(st, f, &f->th[t], now, final);
}

/* -------------------------------------------------------------- public */

struct sps__live_stream *sps__live_stream_open(const char *records_dir, const char *out_path,
                                               uint64_t origin_mono_ns) {
    struct sps__live_stream *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->fd = -1;
    if (sps__followed_dir_init(&st->recs, records_dir, sizeof(struct rec)) != 0) {
        free(st);
        errno = ENOMEM;
        return NULL;
    }
    /* a fresh file: an earlier stream, or a link planted there, is
     * removed, never opened or followed; O_EXCL|O_NOFOLLOW then refuse
     * anything planted between the two calls.  Anything else at the name
     * (a device, a FIFO, a socket, a directory) is refused, never removed:
     * a caller handing /dev/null here must not delete the device */
    struct stat at;
    if (lstat(out_path, &at) == 0 && !S_ISREG(at.st_mode) && !S_ISLNK(at.st_mode))
        errno = EEXIST;
    else if (unlink(out_path) == 0 || errno == ENOENT)
        st->fd = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC | O_NOCTTY, 0666);
    if (st->fd < 0) {
        int e = errno;
        sps__followed_dir_close(&st->recs);
        free(st);
        errno = e;
        return NULL;
    }
    st->origin = (int64_t)origin_mono_ns;
    return st;
}

void sps__live_stream_sample(struct sps__live_stream *st, const struct sps__sample *s) {
    sps__stream_machine_add(&st->machine, s);
}

int sps__live_stream_poll(struct sps__live_stream *st, uint64_t now_mono_ns, int final) {
    uint64_t before = st->stats.lines;
    st->stats.polls++;
    sps__followed_discover(&st->recs);
    for (uint32_t i = 0; i < st->recs.nrec; i++)
        follow_record(st, (struct rec *)st->recs.rec[i], (int64_t)now_mono_ns, final);
    flush_out(st);
    return (int)(st->stats.lines - before);
}

void sps__live_stream_close(struct sps__live_stream *st, struct sps__live_stream_stats *stats) {
    if (!st)
        return;
    if (stats)
        *stats = st->stats;
    for (uint32_t i = 0; i < st->recs.nrec; i++) {
        struct rec *f = (struct rec *)st->recs.rec[i];
        for (uint32_t t = 0; t < f->nth; t++) {
            free(f->th[t].steps);
            free(f->th[t].zones.e);
            free(f->th[t].values.e);
        }
        free(f->th);
    }
    sps__followed_dir_close(&st->recs);
    free(st->out);
    if (st->fd >= 0)
        close(st->fd);
    free(st);
}
