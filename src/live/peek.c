/*
 * peek.c - read the steps of live records with a few small preads (see
 * peek.h).  The checks mirror src/model/reader.c's, limited to the fields
 * followed here; where a live writer can leave something half-done (a
 * header not written yet, an event being overwritten) the value is simply
 * not used this time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "live/peek.h"
#include "live/followed.h"
#include "live/record_file.h"
#include "record_format.h"
#include "stats.h"

/* Step events looked at, newest first, for the latest of the chosen
 * step's name (other step names may be interleaved). */
#define LAST_STEP_SCAN 8u
/* Ranks told apart for the slowest (the rest are not looked at): as
 * followed.h's bounds on records, names and threads, so a huge or hostile
 * run costs the view a bounded amount of work.  Real runs are far below. */
#define MAX_RANKS 1024u

/* The busiest step found so far in one read. */
struct candidate {
    struct sps__followed *rec;
    uint64_t seg_off;
    struct sps_rec_thread seg; /* up to the stack */
    uint32_t id;
    uint64_t agg_off;
    struct sps_rec_agg agg;
};

/* One rank's busiest stepping thread so far. */
struct rank_steps {
    int rank;
    uint64_t count, step_ns, wait_ns;
};

struct sps__live_peek {
    struct sps__followed_dir recs;
    uint32_t nranks;
    struct rank_steps ranks[MAX_RANKS]; /* this read's */
    uint32_t index[SPS_LIVE_MAX_NAMES + 1];      /* scratch: one thread's aggregate index */
    uint32_t best_index[SPS_LIVE_MAX_NAMES + 1]; /* the stepping thread's */
    uint64_t hist[SPS_HIST_BUCKETS];             /* scratch */
    struct sps__live_phase zones[SPS_LIVE_MAX_NAMES];
    /* the previous read's step, to reuse its median and to fall back on
     * the mean of the steps since then when the latest event is not kept */
    const struct sps__followed *prev_rec;
    uint64_t prev_seg_off;
    uint32_t prev_id;
    uint64_t prev_count, prev_total_ns, prev_median_ns, prev_last_ns;
};

/* The part of a thread segment before its stack: all a peek needs. */
#define SEG_HEAD_SIZE offsetof(struct sps_rec_thread, stack)

/* A record's name as the view shows it: cut to SPS_LIVE_NAME_LEN - 1 bytes. */
static void shown_name(char dst[SPS_LIVE_NAME_LEN], const char *name) {
    size_t len = strlen(name);
    if (len >= SPS_LIVE_NAME_LEN)
        len = SPS_LIVE_NAME_LEN - 1;
    memcpy(dst, name, len);
    dst[len] = '\0';
}

/* Read the aggregate of name id at off; -1 unless it is that name's. */
static int read_agg(const struct sps__followed *f, uint64_t off, uint32_t id, struct sps_rec_agg *a) {
    uint32_t kind = f->kind[id - 1];
    if (!sps__followed_in_arena(f, off, sps_rec_agg_size(kind)) || sps__live_pread(f->fd, a, sizeof *a, off) != 0)
        return -1;
    return a->name == id && a->kind == kind ? 0 : -1;
}

/* Is c a better choice of step than best (more completions; then the
 * lower rank, then the lower pid, for a stable choice)? */
static int better(const struct candidate *c, const struct candidate *best) {
    if (!best->rec)
        return 1;
    if (c->agg.count != best->agg.count)
        return c->agg.count > best->agg.count;
    if (c->rec->h.rank != best->rec->h.rank)
        return (uint32_t)c->rec->h.rank < (uint32_t)best->rec->h.rank; /* -1 (no rank) last */
    return c->rec->h.pid < best->rec->h.pid;
}

/* Note thread's steps (its most completed step name's, from the
 * aggregate index in pk->index) and its waits as its rank's, when it has
 * completed more steps than the rank's busiest thread seen so far. */
static void note_rank(struct sps__live_peek *pk, const struct sps__followed *f) {
    struct rank_steps t = {.rank = f->h.rank};
    struct sps_rec_agg a;
    if (t.rank < 0)
        return;
    for (uint32_t id = 1; id <= f->nnames; id++) {
        uint32_t kind = f->kind[id - 1];
        if ((kind != SPS_KIND_STEP && kind != SPS_KIND_WAIT) || pk->index[id] == 0 ||
            read_agg(f, pk->index[id], id, &a) != 0 || a.count == 0)
            continue;
        if (kind == SPS_KIND_WAIT) {
            t.wait_ns += a.u.z.total_ns;
        } else if (a.count > t.count) {
            t.count = a.count;
            t.step_ns = a.u.z.total_ns;
        }
    }
    if (!t.count)
        return;
    uint32_t r = 0;
    while (r < pk->nranks && pk->ranks[r].rank != t.rank)
        r++;
    if (r == pk->nranks && pk->nranks == MAX_RANKS)
        return;
    if (r == pk->nranks)
        pk->ranks[pk->nranks++] = t;
    else if (t.count > pk->ranks[r].count)
        pk->ranks[r] = t;
}

/* The slowest rank (see sps__live_steps) from pk->ranks. */
static void slowest_rank(struct sps__live_peek *pk, struct sps__live_steps *out) {
    out->nranks = (int)pk->nranks;
    out->slowest_rank = -1;
    uint64_t waits = 0;
    for (uint32_t r = 0; r < pk->nranks; r++)
        waits += pk->ranks[r].wait_ns;
    if (pk->nranks < 2 || !waits)
        return;
    double compute[MAX_RANKS], others[MAX_RANKS];
    uint32_t top = 0;
    for (uint32_t r = 0; r < pk->nranks; r++) {
        const struct rank_steps *k = &pk->ranks[r];
        uint64_t busy = k->step_ns > k->wait_ns ? k->step_ns - k->wait_ns : 0;
        compute[r] = (double)busy / (double)k->count / 1e6;
        if (compute[r] > compute[top])
            top = r;
    }
    uint32_t n = 0;
    for (uint32_t r = 0; r < pk->nranks; r++)
        if (r != top)
            others[n++] = compute[r];
    out->slowest_rank = pk->ranks[top].rank;
    out->slowest_excess_ms = compute[top] - sps__median_inplace(others, n);
}

/* Look at every thread of f for step aggregates; keep the best. */
static void scan_threads(struct sps__live_peek *pk, struct sps__followed *f, struct candidate *best,
                         struct sps__live_steps *out) {
    uint32_t n = sps__followed_threads(f);
    uint64_t dir[64];
    for (uint32_t base = 0; base < n; base += 64) {
        uint32_t k = n - base < 64u ? n - base : 64u;
        if (sps__live_pread(f->fd, dir, k * sizeof *dir, f->h.threads_off + (uint64_t)base * sizeof *dir) != 0)
            return;
        for (uint32_t t = 0; t < k; t++) {
            struct candidate c = {.rec = f, .seg_off = dir[t]};
            if (!sps__followed_in_arena(f, c.seg_off, sizeof(struct sps_rec_thread)) ||
                sps__live_pread(f->fd, &c.seg, SEG_HEAD_SIZE, c.seg_off) != 0 || c.seg.magic != SPS_REC_THREAD_MAGIC ||
                c.seg.index != base + t)
                continue;
            out->zones_offered += c.seg.head[SPS_RING_ZONES] + c.seg.head[SPS_RING_STEPS];
            out->values_offered += c.seg.head[SPS_RING_VALUES];
            out->zones_thinned += c.seg.zones_thinned;
            uint64_t index_len = ((uint64_t)f->h.names_cap + 2u) * sizeof(uint32_t);
            if (!f->nnames || !sps__followed_in_arena(f, c.seg.agg_index_off, index_len) ||
                sps__live_pread(f->fd, pk->index, (f->nnames + 1u) * sizeof(uint32_t), c.seg.agg_index_off) != 0)
                continue;
            for (uint32_t id = 1; id <= f->nnames; id++) {
                if (f->kind[id - 1] != SPS_KIND_STEP || pk->index[id] == 0)
                    continue;
                c.id = id;
                c.agg_off = pk->index[id];
                if (read_agg(f, c.agg_off, id, &c.agg) != 0 || c.agg.count == 0 || !better(&c, best))
                    continue;
                *best = c;
                memcpy(pk->best_index, pk->index, (f->nnames + 1u) * sizeof(uint32_t));
            }
            note_rank(pk, f);
        }
    }
}

/* The median of the chosen step's durations, from its histogram (with
 * the latest duration the recorder has not added to it yet). */
static uint64_t median_of(struct sps__live_peek *pk, const struct candidate *c) {
    const struct sps__followed *f = c->rec;
    if (sps__live_pread(f->fd, pk->hist, sizeof pk->hist, c->agg_off + sizeof(struct sps_rec_agg)) != 0)
        return 0;
    uint64_t in_hist = 0;
    for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++)
        in_hist += pk->hist[b];
    if (c->seg.pending_agg_off == c->agg_off && in_hist + 1 == c->agg.count &&
        c->seg.pending_bucket < SPS_HIST_BUCKETS) {
        pk->hist[c->seg.pending_bucket]++;
        in_hist++;
    }
    return sps__hist_percentile(pk->hist, in_hist, 50.0, c->agg.u.z.min_ns, c->agg.u.z.max_ns);
}

/* The latest kept event of the chosen step's name: its duration, or 0. */
static uint64_t last_from_ring(const struct candidate *c) {
    const struct sps__followed *f = c->rec;
    uint64_t cap = f->h.ring_cap[SPS_RING_STEPS];
    uint64_t ring_off = c->seg.ring_off[SPS_RING_STEPS];
    uint64_t head = c->seg.head[SPS_RING_STEPS];
    if (!sps__followed_in_arena(f, ring_off, cap * sizeof(struct sps_rec_event)))
        return 0;
    for (uint64_t k = 1; k <= LAST_STEP_SCAN && k <= head; k++) {
        uint64_t i = head - k;
        if (i >= c->seg.limit[SPS_RING_STEPS])
            continue; /* keep-first refused it */
        struct sps_rec_event e;
        if (sps__live_pread(f->fd, &e, sizeof e, ring_off + (i & (cap - 1)) * sizeof e) != 0)
            return 0;
        if (e.name != c->id)
            continue;
        if (e.kind != SPS_KIND_STEP || e.end_ticks < e.start_ticks)
            return 0;
        /* the writer may have lapped the ring while we read: an event it
         * is overwriting cannot be told from a good one, so recheck */
        uint64_t now_head;
        if (sps__live_pread(f->fd, &now_head, sizeof now_head,
                       c->seg_off + offsetof(struct sps_rec_thread, head) + SPS_RING_STEPS * sizeof(uint64_t)) != 0 ||
            now_head - i >= cap - 1u)
            return 0;
        return sps__ticks_to_ns(e.end_ticks - e.start_ticks, f->h.ns_mult);
    }
    return 0;
}

static int by_self_desc(const void *a, const void *b) {
    const struct sps__live_phase *x = a, *y = b;
    return x->self_ns < y->self_ns ? 1 : x->self_ns > y->self_ns ? -1 : strcmp(x->name, y->name);
}

/* Self time by zone on the stepping thread (see struct sps__live_steps). */
static void phases_of(struct sps__live_peek *pk, const struct candidate *c, struct sps__live_steps *out) {
    const struct sps__followed *f = c->rec;
    uint64_t other = 0;
    uint32_t nz = 0;
    for (uint32_t id = 1; id <= f->nnames; id++) {
        struct sps_rec_agg a;
        if (!sps_kind_is_timed(f->kind[id - 1]) || pk->best_index[id] == 0 ||
            read_agg(f, pk->best_index[id], id, &a) != 0 || a.count == 0)
            continue;
        if (id == c->id) {
            other += a.u.z.self_ns;
            continue;
        }
        shown_name(pk->zones[nz].name, f->name[id - 1]);
        pk->zones[nz++].self_ns = a.u.z.self_ns;
    }
    qsort(pk->zones, nz, sizeof *pk->zones, by_self_desc);
    out->phase_total_ns = other;
    for (uint32_t i = 0; i < nz; i++) {
        out->phase_total_ns += pk->zones[i].self_ns;
        if (i < SPS_LIVE_MAX_PHASES - 1u)
            out->phase[out->nphases++] = pk->zones[i];
        else
            other += pk->zones[i].self_ns;
    }
    if (other) {
        struct sps__live_phase *p = &out->phase[out->nphases++];
        strcpy(p->name, "other");
        p->self_ns = other;
    }
}

/* What a record's Python face has cost so far (see sps__live_steps). */
static double python_ns(const struct sps_rec_header *h) {
    double sum = 0;
    const struct {
        uint64_t n;
        double ns;
    } parts[] = {{h->py_zones, h->py_zone_ns}, {h->py_values, h->py_value_ns}, {h->py_counts, h->py_count_ns},
                 {h->hook_zones, h->hook_zone_ns}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        sum += (double)parts[i].n * sps_rec_measured_ns(parts[i].ns); /* 0 when not measured */
    return sum;
}

struct sps__live_peek *sps__live_peek_open(const char *records_dir) {
    struct sps__live_peek *pk = calloc(1, sizeof *pk);
    if (!pk || sps__followed_dir_init(&pk->recs, records_dir, sizeof(struct sps__followed)) != 0) {
        free(pk);
        return NULL;
    }
    return pk;
}

int sps__live_peek_read(struct sps__live_peek *pk, struct sps__live_steps *out) {
    memset(out, 0, sizeof *out);
    out->rank = -1;
    pk->nranks = 0;
    sps__followed_discover(&pk->recs);
    struct candidate best = {0};
    for (uint32_t i = 0; i < pk->recs.nrec; i++) {
        struct sps__followed *f = pk->recs.rec[i];
        if (!sps__followed_refresh(f))
            continue;
        if (out->records++ == 0 || f->h.thin_level < out->thin_level)
            out->thin_level = f->h.thin_level;
        out->zones_thinned += f->h.zones_thinned;
        out->python_ns += python_ns(&f->h);
        scan_threads(pk, f, &best, out);
    }
    slowest_rank(pk, out);
    if (!best.rec)
        return 0;
    const struct sps__followed *f = best.rec;
    int same = f == pk->prev_rec && best.seg_off == pk->prev_seg_off && best.id == pk->prev_id;
    out->have_step = 1;
    shown_name(out->step_name, f->name[best.id - 1]);
    out->pid = f->h.pid;
    out->rank = f->h.rank;
    out->count = best.agg.count;
    out->total_ns = best.agg.u.z.total_ns;
    out->median_ns = same && out->count == pk->prev_count ? pk->prev_median_ns : median_of(pk, &best);
    out->last_ns = last_from_ring(&best);
    if (!out->last_ns && same && out->count > pk->prev_count && out->total_ns >= pk->prev_total_ns)
        out->last_ns = (out->total_ns - pk->prev_total_ns) / (out->count - pk->prev_count);
    else if (!out->last_ns && same)
        out->last_ns = pk->prev_last_ns;
    phases_of(pk, &best, out);

    pk->prev_rec = f;
    pk->prev_seg_off = best.seg_off;
    pk->prev_id = best.id;
    pk->prev_count = out->count;
    pk->prev_total_ns = out->total_ns;
    pk->prev_median_ns = out->median_ns;
    pk->prev_last_ns = out->last_ns;
    return 0;
}

int sps__live_peek_set_thin(struct sps__live_peek *pk, uint32_t level, uint64_t since_ns) {
    int written = 0;
    for (uint32_t i = 0; i < pk->recs.nrec; i++) {
        struct sps__followed *f = pk->recs.rec[i];
        if (f->state != SPS_LIVE_REC_OK || f->h.thin_level >= level)
            continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", pk->recs.dir, f->file) >= (int)sizeof path)
            continue;
        /* O_NOFOLLOW and the inode check: write only into the file this
         * peek validated, never through a link planted since */
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
            continue;
        struct stat a, b;
        int same = fstat(fd, &a) == 0 && fstat(f->fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
        uint32_t lvl = level;
        /* the time first, so a reader that sees the level sees when */
        int ok = same &&
                 (f->h.thin_since_mono_ns ||
                  pwrite(fd, &since_ns, sizeof since_ns, offsetof(struct sps_rec_header, thin_since_mono_ns)) ==
                      (ssize_t)sizeof since_ns) &&
                 pwrite(fd, &lvl, sizeof lvl, offsetof(struct sps_rec_header, thin_level)) == (ssize_t)sizeof lvl;
        close(fd);
        if (ok) {
            f->h.thin_level = level;
            if (!f->h.thin_since_mono_ns)
                f->h.thin_since_mono_ns = since_ns;
            written++;
        }
    }
    return written;
}

void sps__live_peek_close(struct sps__live_peek *pk) {
    if (!pk)
        return;
    sps__followed_dir_close(&pk->recs);
    free(pk);
}
