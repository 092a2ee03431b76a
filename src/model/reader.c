/*
 * reader.c - reading one record: validate every field that locates or sizes
 * something before following it, then copy what is there into plain owned
 * structs (struct sps_process_data), with ticks converted to nanoseconds.
 *
 * A record is written by a process that may have died at any instruction,
 * so "odd but possible" states (a half-published name, an anchor being
 * rewritten) are tolerated; anything no writer can produce is corruption and
 * is reported with the file and the offset of the offending field.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32.h"
#include "model/run.h"
#include "record_clock.h"
#include "stepscope.h"

struct reader {
    const unsigned char *data;
    size_t size;
    const char *label;
    char *err;
    size_t errlen;
    const struct sps_rec_header *h;
    int live; /* the writer may still be running (SPS_PARSE_LIVE) */
    int drop_pages; /* data is the reader's own mapping of a file: let go of the pages it has read */
    struct sps__rec_clock clock; /* tick -> monotonic ns */
};

__attribute__((format(printf, 3, 4))) static int fail(struct reader *r, uint64_t offset, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s: offset %llu: %s", r->label, (unsigned long long)offset, what);
    return SPS_EFORMAT;
}

#define HOFF(field) ((uint64_t)offsetof(struct sps_rec_header, field))

/* Is [off, off+len) inside the file? */
static int in_file(const struct reader *r, uint64_t off, uint64_t len) {
    return off <= r->size && len <= r->size - off;
}

static uint64_t to_ns(const struct reader *r, uint64_t ticks) {
    long double d = (long double)(int64_t)(ticks - r->clock.anchor_ticks) * r->clock.ns_per_tick;
    long double ns = (long double)r->clock.anchor_ns + d + 0.5L;
    if (!(ns > 0))
        return 0;
    return ns >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)ns;
}

/* Say what is wrong with a header field for sps__rec_header_check. */
__attribute__((format(printf, 5, 6))) static int bad_field(uint64_t *offset, uint64_t off, char *what, size_t len,
                                                           const char *fmt, ...) {
    *offset = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, len, fmt, ap);
    va_end(ap);
    return SPS_EFORMAT;
}

int sps__rec_header_check(const struct sps_rec_header *h, uint64_t size, uint64_t *offset, char *what,
                          size_t len) {
#define BAD(off, ...) bad_field(offset, (off), what, len, __VA_ARGS__)
    static const char zeros[8];
    if (memcmp(h->magic, zeros, sizeof zeros) == 0)
        return BAD(0, "incomplete record: the process stopped before its header was written");
    if (memcmp(h->magic, SPS_REC_MAGIC, sizeof h->magic) != 0)
        return BAD(0, "not a stepscope record (bad magic)");
    if (h->endian_check != SPS_REC_ENDIAN_CHECK)
        return BAD(HOFF(endian_check), "written with the other byte order, which this build cannot read");
    if (h->version < SPS_REC_VERSION_OLDEST || h->version > SPS_REC_VERSION) {
        BAD(HOFF(version), "record format version %u; this build reads versions %u to %u", h->version,
            SPS_REC_VERSION_OLDEST, SPS_REC_VERSION);
        return SPS_EVERSION;
    }
    if (h->header_crc != sps__crc32(h, offsetof(struct sps_rec_header, header_crc)))
        return BAD(HOFF(header_crc), "header checksum mismatch: the header is corrupted");
    /* The file may be shorter than file_size: a record is cut to the size
     * it used when its process ends (sps_rec_used_size); only what the
     * writer handed out must be there.  (A layout that does not add up is
     * reported below.) */
    uint64_t used_arena = __atomic_load_n(&h->arena_used, __ATOMIC_ACQUIRE);
    if (h->arena_off <= h->file_size && used_arena <= h->file_size - h->arena_off && h->arena_off + used_arena > size)
        return BAD(size, "truncated: the record uses %llu bytes, the file has %llu",
                   (unsigned long long)(h->arena_off + used_arena), (unsigned long long)size);
    if (h->header_size != SPS_REC_HEADER_SIZE || h->hist_buckets != SPS_HIST_BUCKETS)
        return BAD(HOFF(header_size), "header layout does not match format version %u", h->version);
    /* capacities no writer exceeds: also keeps every size below 2^40, so
     * the bounds arithmetic cannot overflow */
    if (h->names_cap == 0 || h->names_cap > SPS_REC_MAX_NAMES)
        return BAD(HOFF(names_cap), "name table capacity %u out of range", h->names_cap);
    if (h->threads_cap == 0 || h->threads_cap > SPS_REC_MAX_THREADS)
        return BAD(HOFF(threads_cap), "thread directory capacity %u out of range", h->threads_cap);
    struct reader bounds = {.size = size};
    if (h->names_off < SPS_REC_HEADER_SIZE || h->names_off % 8 ||
        !in_file(&bounds, h->names_off, (uint64_t)h->names_cap * sizeof(struct sps_rec_name)))
        return BAD(HOFF(names_off), "name table out of bounds or misaligned");
    if (h->threads_off % 8 || !in_file(&bounds, h->threads_off, (uint64_t)h->threads_cap * sizeof(uint64_t)))
        return BAD(HOFF(threads_off), "thread directory out of bounds or misaligned");
    if (h->arena_off > h->file_size || h->arena_off % 8)
        return BAD(HOFF(arena_off), "arena out of bounds or misaligned");
    if (used_arena > h->file_size - h->arena_off)
        return BAD(HOFF(arena_used), "arena use %llu is beyond the %llu-byte record",
                   (unsigned long long)used_arena, (unsigned long long)h->file_size);
    if (h->names_count > h->names_cap)
        return BAD(HOFF(names_count), "%u names in a table of %u", h->names_count, h->names_cap);
    if (h->threads_count > h->threads_cap)
        return BAD(HOFF(threads_count), "%u threads in a directory of %u", h->threads_count, h->threads_cap);
    for (int i = 0; i < SPS_RING_COUNT; i++)
        if (h->ring_cap[i] == 0 || (h->ring_cap[i] & (h->ring_cap[i] - 1)) || h->ring_cap[i] > SPS_REC_MAX_RING)
            return BAD(HOFF(ring_cap) + 4u * (uint64_t)i, "ring capacity %u is not a power of two up to %u",
                       h->ring_cap[i], SPS_REC_MAX_RING);
    if (h->clock_source != SPS_CLOCK_TSC && h->clock_source != SPS_CLOCK_MONOTONIC)
        return BAD(HOFF(clock_source), "unknown clock source %u", h->clock_source);
    if (!(h->ticks_per_second >= 1e6 && h->ticks_per_second <= 1e11))
        return BAD(HOFF(ticks_per_second), "clock rate %g ticks/s is not plausible", h->ticks_per_second);
    return 0;
#undef BAD
}

static int check_header(struct reader *r) {
    if (r->size < SPS_REC_HEADER_SIZE)
        return fail(r, r->size, "truncated: %zu bytes, shorter than the %u-byte header", r->size,
                    SPS_REC_HEADER_SIZE);
    r->h = (const void *)r->data;
    uint64_t offset = 0;
    char what[256];
    int rc = sps__rec_header_check(r->h, r->size, &offset, what, sizeof what);
    if (rc) {
        fail(r, offset, "%s", what);
        return rc;
    }
    return 0;
}

static void setup_clock(struct reader *r, struct sps_process_data *p) {
    sps__rec_clock_setup(&r->clock, r->h);
    p->ticks_per_second = (double)r->clock.ticks_per_second;
}

/* The clock-offset slots: each one's state last-written with release
 * order, so a state read here comes with its fields; a state this reader
 * does not know, or a measurement with no error bound, reads as none. */
static void copy_clock_sync(const struct sps_rec_header *h, struct sps_process_data *p) {
    for (int i = 0; i < 2; i++) {
        const struct sps_rec_clock_sync *s = &h->clock_sync[i];
        struct sps_clock_sync *d = &p->clock_sync[i];
        d->state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        d->rounds = s->rounds;
        d->offset_ns = s->offset_ns;
        d->error_ns = s->error_ns;
        d->at_ns = s->at_ns;
        if (d->state > SPS_REC_SYNC_FAILED || (d->state == SPS_REC_SYNC_MEASURED && d->at_ns == 0))
            memset(d, 0, sizeof *d);
    }
    memcpy(p->clock_sync_reason, h->clock_sync_reason, sizeof p->clock_sync_reason);
    p->clock_sync_reason[sizeof p->clock_sync_reason - 1] = '\0';
    p->align.source_rank = -1;
}

static int copy_header(struct reader *r, struct sps_process_data *p) {
    const struct sps_rec_header *h = r->h;
    p->pid = h->pid;
    p->header_crc = h->header_crc;
    p->ppid = h->ppid;
    p->rank = h->rank;
    p->local_rank = h->local_rank;
    p->world_size = h->world_size;
    memcpy(p->hostname, h->hostname, sizeof p->hostname);
    p->hostname[sizeof p->hostname - 1] = '\0';
    p->clock_source = h->clock_source;
    p->ring_policy = h->ring_policy;
    memcpy(p->ring_cap, h->ring_cap, sizeof p->ring_cap);
    p->start_realtime_ns = h->start_realtime_ns;
    p->start_ns = h->anchor0_mono_ns;
    p->closed = h->state == SPS_REC_STATE_CLOSED;
    p->end_ns = p->closed ? to_ns(r, h->end_ticks) : 0;
    p->threads_refused = h->threads_refused;
    p->names_refused = h->names_refused;
    memcpy(p->problem, h->problem, sizeof p->problem);
    p->problem[sizeof p->problem - 1] = '\0';
    p->thin_level = h->thin_level;
    p->thin_since_ns = h->thin_since_mono_ns;
    p->zones_thinned = h->zones_thinned; /* the threads' uncarried counts are added below */
    /* written by the cuda source of a live writer: the state last, with
     * release order, so a state read here comes with its fields */
    p->cuda_state = __atomic_load_n(&h->cuda_state, __ATOMIC_ACQUIRE);
    if (p->cuda_state > SPS_REC_CUDA_UNAVAILABLE)
        p->cuda_state = SPS_REC_CUDA_UNUSED; /* not a state this reader knows: as if none */
    p->cuda_driver_version = h->cuda_driver_version;
    p->cuda_resolved = __atomic_load_n(&h->cuda_resolved, __ATOMIC_RELAXED);
    p->cuda_cpu_only = __atomic_load_n(&h->cuda_cpu_only, __ATOMIC_RELAXED);
    p->cuda_dropped = __atomic_load_n(&h->cuda_dropped, __ATOMIC_RELAXED);
    p->cuda_unresolved = __atomic_load_n(&h->cuda_unresolved, __ATOMIC_RELAXED);
    memcpy(p->cuda_reason, h->cuda_reason, sizeof p->cuda_reason);
    p->cuda_reason[sizeof p->cuda_reason - 1] = '\0';
    p->py_zones = h->py_zones;
    p->py_values = h->py_values;
    p->py_counts = h->py_counts;
    p->hook_zones = h->hook_zones;
    p->hook_counts = h->hook_counts;
    p->py_zone_ns = sps_rec_measured_ns(h->py_zone_ns);
    p->py_value_ns = sps_rec_measured_ns(h->py_value_ns);
    p->py_count_ns = sps_rec_measured_ns(h->py_count_ns);
    p->hook_zone_ns = sps_rec_measured_ns(h->hook_zone_ns);
    p->end_samples = __atomic_load_n(&h->end_samples, __ATOMIC_RELAXED);
    p->end_sample_ns = __atomic_load_n(&h->end_ns, __ATOMIC_RELAXED);
    p->end_samples_dropped = __atomic_load_n(&h->end_samples_dropped, __ATOMIC_RELAXED);
    /* the mode's state last-written with release order: its reason comes with it */
    p->py_auto = __atomic_load_n(&h->py_auto, __ATOMIC_ACQUIRE);
    if (p->py_auto > SPS_REC_PY_AUTO_TURNED_OFF)
        p->py_auto = SPS_REC_PY_AUTO_NONE; /* not a state this reader knows: as if none */
    p->py_instrument = h->py_instrument != 0;
    memcpy(p->py_auto_reason, h->py_auto_reason, sizeof p->py_auto_reason);
    p->py_auto_reason[sizeof p->py_auto_reason - 1] = '\0';
    copy_clock_sync(h, p);

    uint32_t len = h->cmdline_len < sizeof h->cmdline ? h->cmdline_len : (uint32_t)sizeof h->cmdline;
    int argc = len ? 1 : 0;
    for (uint32_t i = 0; i < len; i++)
        argc += h->cmdline[i] == '\0';
    p->argv = calloc((size_t)argc + 1, sizeof *p->argv);
    if (!p->argv)
        return SPS_ENOMEM;
    for (uint32_t i = 0, start = 0; i <= len && argc; i++) {
        if (i == len || h->cmdline[i] == '\0') {
            p->argv[p->argc] = strndup(h->cmdline + start, i - start);
            if (!p->argv[p->argc])
                return SPS_ENOMEM;
            p->argc++;
            start = i + 1;
        }
    }

    p->nnames = h->names_count;
    p->names = calloc(p->nnames ? p->nnames : 1, sizeof *p->names);
    if (!p->names)
        return SPS_ENOMEM;
    const struct sps_rec_name *names = (const void *)(r->data + h->names_off);
    for (uint32_t i = 0; i < p->nnames; i++) {
        uint64_t off = h->names_off + (uint64_t)i * sizeof *names;
        if (names[i].kind < SPS_KIND_ZONE || names[i].kind > SPS_KIND_LAST)
            return fail(r, off, "name %u has unknown kind %u", i + 1, names[i].kind);
        if (!memchr(names[i].name, '\0', sizeof names[i].name) || !names[i].name[0])
            return fail(r, off, "name %u is not a terminated string", i + 1);
        p->names[i].kind = names[i].kind;
        p->names[i].line = names[i].line;
        memcpy(p->names[i].name, names[i].name, sizeof names[i].name);
        memcpy(p->names[i].file, names[i].file, sizeof names[i].file);
        memcpy(p->names[i].func, names[i].func, sizeof names[i].func);
        p->names[i].file[sizeof p->names[i].file - 1] = '\0';
        p->names[i].func[sizeof p->names[i].func - 1] = '\0';
    }
    return 0;
}

/* The recorder adds each duration to its histogram one zone late; a
 * thread's last duration is still pending when the histogram holds one
 * fewer than the count. */
static void add_pending(struct sps_agg *a, uint32_t bucket) {
    uint64_t in_hist = 0;
    for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++)
        in_hist += a->hist[b];
    if (in_hist + 1 == a->count && bucket < SPS_HIST_BUCKETS)
        a->hist[bucket]++;
}

static int copy_aggs(struct reader *r, const struct sps_rec_thread *s, uint64_t seg_off, struct sps_thread_data *t,
                     const struct sps_process_data *p) {
    const struct sps_rec_header *h = r->h;
    uint64_t index_len = ((uint64_t)h->names_cap + 2u) * sizeof(uint32_t);
    if (s->agg_index_off < h->arena_off || s->agg_index_off % 8 || !in_file(r, s->agg_index_off, index_len))
        return fail(r, seg_off + offsetof(struct sps_rec_thread, agg_index_off),
                    "aggregate index out of bounds or misaligned");
    const uint32_t *index = (const void *)(r->data + s->agg_index_off);
    t->aggs = calloc(p->nnames ? p->nnames : 1, sizeof *t->aggs);
    if (!t->aggs)
        return SPS_ENOMEM;
    for (uint32_t id = 1; id <= p->nnames; id++) {
        uint64_t off = index[id];
        if (off == 0)
            continue;
        uint32_t kind = p->names[id - 1].kind;
        uint64_t need = sps_rec_agg_size(kind);
        uint64_t where = s->agg_index_off + (uint64_t)id * sizeof(uint32_t);
        if (off < h->arena_off || off % 8 || !in_file(r, off, need))
            return fail(r, where, "aggregate of name %u out of bounds or misaligned", id);
        const struct sps_rec_agg *a = (const void *)(r->data + off);
        if (a->name != id) {
            if (a->name == 0)
                continue; /* the overflow sink: a full record refused this pair */
            return fail(r, off, "aggregate belongs to name %u, indexed as %u", a->name, id);
        }
        if (a->kind != kind)
            return fail(r, off, "aggregate kind %u does not match name %u's kind %u", a->kind, id, kind);
        if (sps__agg_from_record(&t->aggs[id - 1], a) != 0)
            return SPS_ENOMEM;
        if (off == s->pending_agg_off && t->aggs[id - 1].hist)
            add_pending(&t->aggs[id - 1], s->pending_bucket);
    }
    return 0;
}

/* Events are copied out of the mapping in runs of this many (1 MiB): the
 * pages of a run are let go of after it, so that reading a record holds
 * about its events once (the copy), not twice (the copy and the mapped
 * file's pages: 350 MiB more at a million steps of ten zones). */
#define DROP_EVERY 32768u

/* With drop_pages: unmap the whole pages of the n events from slot `slot`
 * of the ring at ring_off, which the reader has read (they stay in the
 * page cache; a later touch maps them again). */
static void drop_read(const struct reader *r, uint64_t ring_off, uint64_t slot, uint64_t n) {
    if (!r->drop_pages || n == 0)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)(r->data + ring_off + slot * sizeof(struct sps_rec_event));
    uintptr_t to = from + (uintptr_t)n * sizeof(struct sps_rec_event);
    from = (from + page - 1) & ~(page - 1);
    to &= ~(page - 1);
    if (to > from)
        madvise((void *)from, to - from, MADV_DONTNEED);
}

static int copy_ring(struct reader *r, const struct sps_rec_thread *s, uint64_t seg_off, int ring,
                     struct sps_thread_data *t, const struct sps_process_data *p) {
    const struct sps_rec_header *h = r->h;
    uint64_t cap = h->ring_cap[ring];
    uint64_t ring_off = s->ring_off[ring];
    if (ring_off < h->arena_off || ring_off % 8 || !in_file(r, ring_off, cap * sizeof(struct sps_rec_event)))
        return fail(r, seg_off + offsetof(struct sps_rec_thread, ring_off) + 8u * (uint64_t)ring,
                    "event ring %d out of bounds or misaligned", ring);
    uint64_t head = __atomic_load_n(&s->head[ring], __ATOMIC_ACQUIRE);
    uint64_t kept = sps_rec_ring_kept(head, cap, h->ring_policy);
    uint64_t first = h->ring_policy == SPS_POLICY_KEEP_FIRST ? 0 : head - kept;
    /* A process that did not exit cleanly may have been stopped, or may
     * still be running, while writing: an inconsistent event there is
     * counted as dropped.  In a closed record it is corruption. */
    int tolerant = r->live || h->state != SPS_REC_STATE_CLOSED;
    t->offered[ring] = head;
    t->dropped[ring] = head - kept;
    t->events[ring] = malloc((kept ? kept : 1) * sizeof(struct sps_event));
    if (!t->events[ring])
        return SPS_ENOMEM;
    size_t ngpu = 0;
    const struct sps_rec_event *ev = (const void *)(r->data + ring_off);
    size_t n = 0;
    uint64_t read_from = first; /* events read since the pages were last let go */
    for (uint64_t i = first; i < first + kept; i++) {
        if (i - read_from == DROP_EVERY || (i & (cap - 1)) == 0) {
            drop_read(r, ring_off, read_from & (cap - 1), i - read_from);
            read_from = i;
        }
        const struct sps_rec_event *e = &ev[i & (cap - 1)];
        uint64_t off = ring_off + (i & (cap - 1)) * sizeof *e;
        if (e->name == h->names_cap + 1u) {
            t->dropped[ring]++; /* recorded under the sink: refused for want of room */
            continue;
        }
        const char *bad = NULL;
        int gpu = e->kind == SPS_REC_KIND_GPU_SPAN;
        if (e->name == 0 || e->name > p->nnames)
            bad = "event names an unknown name id";
        else if (gpu && (ring != SPS_RING_VALUES || h->version < 2))
            bad = "GPU span outside a version-2 record's values ring";
        else if (gpu ? p->names[e->name - 1].kind != SPS_KIND_ZONE : e->kind != p->names[e->name - 1].kind)
            bad = "event kind does not match its name's kind";
        else if ((gpu || sps_kind_is_timed(e->kind)) && e->end_ticks < e->start_ticks)
            bad = "event ends before it starts";
        if (bad && tolerant) {
            t->dropped[ring]++;
            continue;
        }
        if (bad)
            return fail(r, off, "%s (name id %u, kind %u)", bad, e->name, e->kind);
        if (gpu && !t->gpu && !(t->gpu = malloc((kept ? kept : 1) * sizeof(struct sps_event))))
            return SPS_ENOMEM;
        struct sps_event *d = gpu ? &t->gpu[ngpu++] : &t->events[ring][n++];
        d->seq = i;
        d->start_ns = to_ns(r, e->start_ticks);
        d->end_ns = gpu || sps_kind_is_timed(e->kind) ? to_ns(r, e->end_ticks) : d->start_ns;
        d->a = e->a;
        d->name = e->name;
        d->depth = e->depth;
        d->kind = e->kind;
    }
    drop_read(r, ring_off, read_from & (cap - 1), first + kept - read_from);
    t->nevents[ring] = n;
    t->ngpu = ngpu;
    return 0;
}

static int copy_threads(struct reader *r, struct sps_process_data *p) {
    const struct sps_rec_header *h = r->h;
    p->nthreads = h->threads_count;
    /* each segment's rings are its own: more segments than the arena
     * holds share them, and would be copied once per segment */
    uint64_t arena = r->size - h->arena_off;
    if ((uint64_t)p->nthreads * sps_rec_thread_min_bytes(h) > arena) {
        uint32_t n = p->nthreads;
        p->nthreads = 0;
        return fail(r, HOFF(threads_count),
                    "%u thread segments with their rings need %llu bytes, more than the %llu-byte arena (their "
                    "rings overlap)",
                    n, (unsigned long long)n * (unsigned long long)sps_rec_thread_min_bytes(h),
                    (unsigned long long)arena);
    }
    p->threads = calloc(p->nthreads ? p->nthreads : 1, sizeof *p->threads);
    if (!p->threads)
        return SPS_ENOMEM;
    const uint64_t *dir = (const void *)(r->data + h->threads_off);
    for (uint32_t i = 0; i < p->nthreads; i++) {
        uint64_t seg_off = dir[i];
        uint64_t where = h->threads_off + (uint64_t)i * sizeof *dir;
        if (seg_off < h->arena_off || seg_off % 8 || !in_file(r, seg_off, sizeof(struct sps_rec_thread)))
            return fail(r, where, "thread %u's segment offset %llu is out of bounds or misaligned", i,
                        (unsigned long long)seg_off);
        const struct sps_rec_thread *s = (const void *)(r->data + seg_off);
        if (s->magic != SPS_REC_THREAD_MAGIC || s->index != i)
            return fail(r, seg_off, "thread segment %u is corrupted (bad magic or index)", i);
        /* read once: a live writer may change it under us */
        uint32_t depth = __atomic_load_n(&s->depth, __ATOMIC_ACQUIRE);
        if (depth > SPS_REC_MAX_DEPTH)
            return fail(r, seg_off + offsetof(struct sps_rec_thread, depth), "zone depth %u exceeds %u", depth,
                        SPS_REC_MAX_DEPTH);
        struct sps_thread_data *t = &p->threads[i];
        t->tid = s->tid;
        memcpy(t->name, s->name, sizeof t->name);
        t->name[sizeof t->name - 1] = '\0';
        t->exited = s->state == SPS_REC_THREAD_EXITED;
        t->reuses = s->reuses;
        t->mismatched_ends = s->mismatched_ends;
        t->depth_overflows = s->depth_overflows;
        t->zones_thinned = s->zones_thinned;
        p->zones_thinned += s->zones_thinned;
        for (uint32_t d = 1; d <= depth; d++) {
            const struct sps_rec_frame *f = &s->stack[d];
            if (f->name == 0 || (f->name > p->nnames && f->name != h->names_cap + 1u)) {
                if (r->live)
                    continue; /* named after we read the name table */
                return fail(r, seg_off + offsetof(struct sps_rec_thread, stack) + d * sizeof *f,
                            "open zone names unknown name id %u", f->name);
            }
            if (f->name > p->nnames)
                continue;
            t->open[t->nopen].name = f->name;
            t->open[t->nopen].kind = f->kind;
            t->open[t->nopen].start_ns = to_ns(r, f->start_ticks);
            t->nopen++;
        }
        int rc = copy_aggs(r, s, seg_off, t, p);
        for (int ring = 0; rc == 0 && ring < SPS_RING_COUNT; ring++)
            rc = copy_ring(r, s, seg_off, ring, t, p);
        if (rc)
            return rc;
    }
    return 0;
}

int sps__record_parse(const void *data, size_t size, const char *label, unsigned flags,
                      struct sps_process_data *out, char *err, size_t errlen) {
    struct reader r = {.data = data, .size = size, .label = label, .err = err, .errlen = errlen,
                       .live = (flags & SPS_PARSE_LIVE) != 0, .drop_pages = (flags & SPS_PARSE_OWN_MAP) != 0};
    memset(out, 0, sizeof *out);
    int rc = check_header(&r);
    if (rc)
        return rc;
    out->path = strdup(label);
    if (!out->path)
        return SPS_ENOMEM;
    setup_clock(&r, out);
    rc = copy_header(&r, out);
    if (rc == 0)
        rc = copy_threads(&r, out);
    if (rc) {
        if (rc == SPS_ENOMEM && err && errlen)
            snprintf(err, errlen, "%s: out of memory", label);
        sps__process_free(out);
    }
    return rc;
}

static sigjmp_buf sigbus_jump;

static void on_sigbus(int sig) {
    (void)sig;
    siglongjmp(sigbus_jump, 1);
}

int sps__record_load(const char *path, struct sps_process_data *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    /* O_NONBLOCK: a FIFO named like a record must not hang the reader */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SPS_EIO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return SPS_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return SPS_EFORMAT;
    }
    size_t size = (size_t)st.st_size;
    if (size < SPS_REC_HEADER_SIZE) {
        close(fd);
        snprintf(err, errlen, "%s: offset %zu: truncated: %zu bytes, shorter than the %u-byte header", path, size,
                 size, SPS_REC_HEADER_SIZE);
        return SPS_EFORMAT;
    }
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
        return SPS_EIO;
    }
    /* A page the kernel cannot supply (an I/O error, a hole on a full
     * tmpfs) raises SIGBUS on access: report it as an unreadable record
     * rather than dying. */
    struct sigaction guard, saved;
    memset(&guard, 0, sizeof guard);
    guard.sa_handler = on_sigbus;
    sigemptyset(&guard.sa_mask);
    int rc;
    if (sigsetjmp(sigbus_jump, 1) == 0) {
        sigaction(SIGBUS, &guard, &saved);
        rc = sps__record_parse(m, size, path, SPS_PARSE_OWN_MAP, out, err, errlen);
    } else {
        sps__process_free(out);
        snprintf(err, errlen, "%s: cannot read the mapped record (I/O error or full filesystem)", path);
        rc = SPS_EIO;
    }
    sigaction(SIGBUS, &saved, NULL);
    munmap(m, size);
    return rc;
}

void sps__process_free(struct sps_process_data *p) {
    if (!p)
        return;
    for (int i = 0; p->argv && i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    for (uint32_t i = 0; p->threads && i < p->nthreads; i++) {
        struct sps_thread_data *t = &p->threads[i];
        for (uint32_t n = 0; t->aggs && n < p->nnames; n++)
            sps__agg_free(&t->aggs[n]);
        free(t->aggs);
        for (int ring = 0; ring < SPS_RING_COUNT; ring++)
            free(t->events[ring]);
        free(t->gpu);
    }
    free(p->threads);
    free(p->names);
    free(p->summary_of);
    free(p->path);
    memset(p, 0, sizeof *p);
}
