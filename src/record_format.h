/*
 * record_format.h - the layout of a record file (format version 2).
 *
 * One record per recording process.  The writer is that process, through a
 * MAP_SHARED mapping, so the pages survive the process however it dies; the
 * reader (src/model/reader.c) validates every offset before using it.
 * docs/record-format.md describes the same layout for humans: change both
 * together and bump SPS_REC_VERSION on any incompatible change.
 *
 * All integers are in the writer's native byte order (the header's
 * endian_check tells); all offsets are bytes from the start of the file.
 */
#ifndef SPS_RECORD_FORMAT_H
#define SPS_RECORD_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "stepscope.h"

#define SPS_REC_MAGIC "SPSREC\r\n" /* 8 bytes, no terminator used */
/* Version 2 added GPU-span events (SPS_REC_KIND_GPU_SPAN): a version-1
 * reader would take a closed record that has one for a corrupted one (an
 * event whose kind is not its name's), so it is told the version instead.
 * Nothing else changed: a version-1 record is read as before. */
#define SPS_REC_VERSION 2u
#define SPS_REC_VERSION_OLDEST 1u
#define SPS_REC_ENDIAN_CHECK 0x01020304u

#define SPS_REC_HEADER_SIZE 4096u
/* The largest capacities a writer uses; a reader rejects anything above. */
#define SPS_REC_MAX_NAMES 65536u
#define SPS_REC_MAX_THREADS 65536u
#define SPS_REC_MAX_RING (1u << 24)
#define SPS_REC_NAME_LEN 120u
#define SPS_REC_FILE_LEN 96u
#define SPS_REC_FUNC_LEN 32u
#define SPS_REC_THREAD_NAME_LEN 32u
#define SPS_REC_AUTO_REASON_LEN 120u
#define SPS_REC_SYNC_REASON_LEN 128u
/* Frame 0 of a thread's stack is a sentinel, so a zone can always add its
 * duration to its parent's child time without a branch. */
#define SPS_REC_STACK_FRAMES 64u
#define SPS_REC_MAX_DEPTH (SPS_REC_STACK_FRAMES - 2u)

/* Histogram: log-linear in nanoseconds.  Values below 2^SUB_BITS have a
 * bucket each; above, every power of two is split into 2^SUB_BITS buckets
 * (so values below 256 ns are still exact), and a bucket is at most 1/128
 * (0.78%) of its lower bound wide. */
#define SPS_HIST_SUB_BITS 7u
#define SPS_HIST_SUB (1u << SPS_HIST_SUB_BITS)
#define SPS_HIST_BUCKETS ((64u - SPS_HIST_SUB_BITS + 1u) * SPS_HIST_SUB) /* 7424 */

enum sps_rec_state {
    SPS_REC_STATE_LIVE = 1,   /* the process was recording when last written */
    SPS_REC_STATE_CLOSED = 2  /* the process exited through exit() */
};

enum sps_rec_ring {
    SPS_RING_ZONES = 0,  /* zones */
    SPS_RING_STEPS = 1,  /* steps (micro-steps go with the zones) */
    SPS_RING_VALUES = 2, /* values and counter increments */
    SPS_RING_COUNT = 3,
    /* Not a ring: the slot of zones inherited across fork(), whose ends
     * must match but whose events the parent records.  Its limit is 0, so
     * nothing is ever stored and the hot path needs no extra test. */
    SPS_RING_DISCARD = 3,
    SPS_RING_SLOTS = 4
};

enum sps_rec_policy {
    SPS_POLICY_KEEP_LATEST = 1, /* a full ring overwrites its oldest event */
    SPS_POLICY_KEEP_FIRST = 2   /* a full ring refuses new events */
};

/*
 * The header: one page.  Fields up to header_crc never change after the
 * record is created and are covered by the CRC; the rest is updated while
 * the process runs.
 */
struct sps_rec_header {
    /* --- immutable, covered by header_crc --- */
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint32_t endian_check;
    uint32_t clock_source; /* enum sps_clock_source */
    uint64_t file_size;
    int32_t pid, ppid;
    int32_t rank, local_rank, world_size; /* -1 when not set */
    uint32_t ring_policy;
    double ticks_per_second;   /* calibrated at process start */
    uint64_t ns_mult;          /* duration_ns = (ticks * ns_mult) >> 32 */
    uint64_t anchor0_ticks;    /* a (ticks, CLOCK_MONOTONIC ns) pair taken */
    uint64_t anchor0_mono_ns;  /* at process start */
    int64_t start_realtime_ns; /* CLOCK_REALTIME at anchor0 */
    uint64_t names_off;
    uint32_t names_cap;
    uint32_t threads_cap;
    uint64_t threads_off; /* array of threads_cap uint64_t segment offsets */
    uint64_t arena_off;   /* first byte of the arena (page-aligned) */
    uint32_t ring_cap[SPS_RING_COUNT];
    uint32_t hist_buckets;
    char hostname[64];
    char cmdline[2048]; /* argv joined with NUL bytes, cmdline_len bytes */
    uint32_t cmdline_len;
    uint32_t header_crc; /* CRC-32 (IEEE) of the bytes before this field */

    /* --- mutable --- */
    uint32_t state;         /* enum sps_rec_state */
    uint32_t names_count;   /* published with release order after the entry */
    uint32_t threads_count; /* likewise */
    uint32_t anchor_seq;    /* odd while anchor1 is being written */
    uint64_t anchor1_ticks; /* the latest (ticks, monotonic ns) pair, to */
    uint64_t anchor1_mono_ns; /* refine the rate over long runs */
    uint64_t arena_used;    /* bytes of the arena handed out */
    uint64_t threads_refused; /* threads not recorded: record full */
    uint64_t names_refused;   /* names not interned (table full), or (thread, name)
                                 aggregates not allocated (record full) */
    uint64_t end_ticks;       /* when state became CLOSED */
    int32_t exit_status_hint; /* reserved: the library cannot see exit codes */
    uint32_t reserved0;
    char problem[256]; /* why something was refused (NUL-terminated), "" if nothing was */
    /* The overhead guard (`stepscope run --max-overhead`) writes these from
     * outside the process; threads reread thin_level at step ends and
     * every SPS_THIN_POLL_EVENTS zones.  Zero in a record nobody thinned
     * (and in one from a writer that predates them). */
    uint32_t thin_level;      /* enum sps_thin_level */
    uint32_t reserved1;
    uint64_t thin_since_mono_ns; /* CLOCK_MONOTONIC when thin_level was first set, 0 never */
    uint64_t zones_thinned;   /* zones not recorded for thin_level, carried from the
                                 threads' 32-bit counters (add each segment's) */
    /* The cuda source of GPU zones (src/gpu/cuda_zone.c), written under its
     * lock once the process has begun a GPU zone and at every flush of its
     * counts.  Zero in a record whose process began none (and in one from
     * a writer that predates them). */
    uint32_t cuda_state;          /* enum sps_rec_cuda_state */
    int32_t cuda_driver_version;  /* cuDriverGetVersion, e.g. 12040; 0 unknown */
    uint64_t cuda_resolved;       /* event pairs whose GPU time was recorded */
    uint64_t cuda_cpu_only;       /* GPU zones timed on the CPU only (no libcuda, no context) */
    uint64_t cuda_dropped;        /* GPU zones begun while the thread's pool was full */
    uint64_t cuda_unresolved;     /* pairs given up: an event call failed */
    char cuda_reason[192];        /* why GPU zones were CPU-only, "" when never (NUL-terminated) */
    /* The Python module (python/src/face.c), so the report can price what
     * each face of the library costs: the zones, values and counts it
     * recorded (also in the aggregates, which do not say who recorded
     * them), and what its own work around one of each costs on top of the
     * library's, measured in the process (ns; 0: not measured).  hook_*
     * are stepscope.torch.instrument's, whose zones are in hook_zones and
     * not in py_zones.  Written under the GIL, by the Python module only;
     * zero in a record of a process without it (and in one from a writer
     * that predates them). */
    uint64_t py_zones;     /* zones, steps and micro-steps begun by Python code */
    uint64_t py_values;    /* stepscope.record() */
    uint64_t py_counts;    /* stepscope.count() */
    uint64_t hook_zones;   /* zones, steps and micro-steps begun by instrument's hooks */
    uint64_t hook_counts;  /* counts and values by the torch hooks (instrument's, auto's) */
    double py_zone_ns;     /* one `with stepscope.zone(name):` beyond the library's begin+end */
    double py_value_ns;    /* one stepscope.record() beyond the library's value */
    double py_count_ns;    /* one stepscope.count() beyond the library's count */
    double hook_zone_ns;   /* instrument's Python work per zone it begins, all of it but the
                              library's begin+end (its counts included) */
    /* What the library's end of a zone cost in this run, with the caches
     * as the workload left them: every SPS_THIN_POLL_EVENTS zones of a
     * thread, the time from the end's timestamp to the end of its
     * bookkeeping (aggregate, histogram, event), on the cold path the end
     * takes there anyway, so nothing is added to the other ends.  A sample over
     * SPS_END_SAMPLE_MAX_NS (a preemption) is dropped, and counted.
     * Added atomically by the sampled threads.  Zero in a record from a
     * writer that predates them. */
    uint64_t end_samples;
    uint64_t end_ns;       /* their sum, ns */
    uint64_t end_samples_dropped;
    /* Which mode records the process's steps (python/src/auto_mode.c):
     * stepscope's auto-instrumentation (py_auto), stepscope.torch.instrument
     * (py_instrument), or else the script's own zones.  Written under the
     * GIL by the Python module only, py_auto last with release order;
     * zero in a record of a process without it (and in one from a writer
     * that predates them). */
    uint32_t py_auto;       /* enum sps_rec_py_auto */
    uint32_t py_instrument; /* 1: stepscope.torch.instrument() was called */
    char py_auto_reason[SPS_REC_AUTO_REASON_LEN]; /* why auto stood aside or turned itself off,
                                                     "" when neither (NUL-terminated) */
    /* This process's clock against rank 0's, measured where
     * torch.distributed is up (python/stepscope/_clocksync.py, through
     * sps_clock_offset_set): one slot at start, one at the end.  Written
     * by the measuring thread only, state last with release order; zero
     * (SPS_REC_SYNC_NONE) in a record nobody measured (and in one from a
     * writer that predates them).  stepscope merge maps this process's
     * times onto rank 0's by them. */
    struct sps_rec_clock_sync {
        uint32_t state;    /* enum sps_rec_sync_state */
        uint32_t rounds;   /* round trips made */
        int64_t offset_ns; /* rank 0's clock minus this one's, at at_ns */
        uint64_t error_ns; /* bound on |offset error|: half the best round trip */
        uint64_t at_ns;    /* this process's monotonic ns (record clock) when measured */
    } clock_sync[2];       /* SPS_SYNC_START, SPS_SYNC_END */
    char clock_sync_reason[SPS_REC_SYNC_REASON_LEN]; /* why a slot is FAILED, "" else (NUL-terminated) */
};

enum sps_rec_sync_state {
    SPS_REC_SYNC_NONE = 0,     /* not attempted */
    SPS_REC_SYNC_MEASURED = 1, /* offset_ns and error_ns hold a measurement */
    SPS_REC_SYNC_FAILED = 2    /* attempted, not measured: clock_sync_reason says why */
};

enum sps_rec_py_auto {
    SPS_REC_PY_AUTO_NONE = 0,        /* auto-instrumentation was never installed */
    SPS_REC_PY_AUTO_ACTIVE = 1,      /* installed, and recording */
    SPS_REC_PY_AUTO_STOOD_ASIDE = 2, /* installed, then undone: the script instruments itself */
    SPS_REC_PY_AUTO_TURNED_OFF = 3   /* installed, then undone for a reason of its own (an error in its
                                        hooks): the steps it recorded are still its own */
};

#define SPS_END_SAMPLE_MAX_NS 100000u

enum sps_rec_cuda_state {
    SPS_REC_CUDA_UNUSED = 0,      /* no GPU zone began in this process */
    SPS_REC_CUDA_AVAILABLE = 1,   /* libcuda loaded and cuInit succeeded */
    SPS_REC_CUDA_UNAVAILABLE = 2  /* it did not: cuda_reason says why */
};

/* How much of a thread's nesting the overhead guard lets it record.  Steps
 * and micro-steps are always recorded, so the step table stays whole; the
 * depth of another zone is counted from its innermost enclosing step or
 * micro-step (from the thread's root when it is in none). */
enum sps_thin_level {
    SPS_THIN_NONE = 0,   /* everything (up to SPS_REC_MAX_DEPTH) */
    SPS_THIN_PHASES = 1, /* zones directly inside a step (its phases), and outermost zones */
    SPS_THIN_STEPS = 2   /* steps and micro-steps only */
};
#define SPS_THIN_POLL_EVENTS 4096u /* zone ends between rereads of thin_level */

/* One interned name; its id is its index + 1 (0 means "no name"). */
struct sps_rec_name {
    uint32_t kind; /* enum sps_kind */
    uint32_t line;
    char name[SPS_REC_NAME_LEN];
    char file[SPS_REC_FILE_LEN];
    char func[SPS_REC_FUNC_LEN];
};

/* An open zone on a thread's stack. */
struct sps_rec_frame {
    uint64_t start_ticks;
    uint64_t child_ns; /* summed durations of the zone's direct children */
    uint32_t name;
    uint16_t ring; /* enum sps_rec_ring the zone's event goes to */
    uint16_t kind; /* enum sps_kind */
    /* ~start_ticks while the frame is a chained phase (sps_phase); 0 or
     * stale otherwise: the recorder clears it when it ends a phase, and a
     * zone begun later on the frame writes a new start_ticks, so even a
     * mark left by a phase ended through a stale zone token matches only
     * if the clock has not moved since (sps_rec_frame_is_phase) */
    uint64_t phase_mark;
};

/* Whether an open frame is a chained phase rather than a zone. */
static inline int sps_rec_frame_is_phase(const struct sps_rec_frame *f) {
    return f->phase_mark == ~f->start_ticks;
}

/*
 * One event, 32 bytes.  Zones, steps and micro-steps: start and end ticks
 * and the zone's self (exclusive) time.  Values and counters: end_ticks
 * equals start_ticks; `a` holds the double's bits or the increment.  An
 * event named the sink id (names_cap + 1) is not data: it was refused for
 * want of room, and counts as dropped.
 */
struct sps_rec_event {
    uint64_t start_ticks;
    uint64_t end_ticks;
    uint64_t a; /* self_ns | value bits | counter increment */
    uint32_t name;
    uint16_t depth; /* nesting depth of a zone, 0 outermost */
    uint16_t kind;  /* enum sps_kind */
};

/*
 * Exact per-(thread, name) aggregates.  Zone-like kinds use the integer
 * fields (nanoseconds) and are followed directly by SPS_HIST_BUCKETS uint64_t
 * bucket counts; values use the double fields; counters use count and
 * total_ns (the sum of increments).
 */
struct sps_rec_agg {
    uint32_t name;
    uint32_t kind;
    uint64_t count;
    union {
        struct {
            uint64_t total_ns;
            uint64_t self_ns;
            uint64_t min_ns;
            uint64_t max_ns;
            uint64_t sumsq_lo; /* sum of squared durations, 128 bits */
            uint64_t sumsq_hi;
        } z;
        struct {
            double sum, sumsq, min, max, first, last;
        } v;
    } u;
};

/* A thread's segment header, followed by the aggregate index and rings. */
struct sps_rec_thread {
    uint32_t magic; /* SPS_REC_THREAD_MAGIC */
    uint32_t index;
    int32_t tid;
    uint32_t state; /* 1 running, 2 exited */
    char name[SPS_REC_THREAD_NAME_LEN];
    uint64_t agg_index_off; /* names_cap + 2 uint32_t, by name id (the last is the
                               sink's): offset of the thread's aggregate, 0 = none */
    uint64_t ring_off[SPS_RING_COUNT];
    /* --- hot, written by the owning thread only --- */
    uint64_t head[SPS_RING_SLOTS];  /* events ever offered to each ring */
    uint64_t limit[SPS_RING_SLOTS]; /* offers beyond this are refused (keep-first) */
    uint32_t depth;                 /* open zones; stack[1..depth] */
    uint32_t reuses;                /* earlier threads that recorded into this segment */
    uint64_t depth_overflows; /* begins refused: nesting too deep */
    uint64_t mismatched_ends; /* ends that did not match the innermost zone */
    /* The last zone's duration, not yet in its histogram: the bucket and the
     * offset of the aggregate.  Incrementing a bucket chosen by the duration
     * just measured stalls the loads that follow it (the CPU cannot tell
     * they do not alias), so each end adds the previous end's bucket. */
    uint64_t pending_agg_off;
    uint32_t pending_bucket;
    uint32_t zones_thinned; /* not recorded for the header's thin_level; carried into
                               the header's zones_thinned before it would wrap */
    struct sps_rec_frame stack[SPS_REC_STACK_FRAMES];
};

#define SPS_REC_THREAD_MAGIC 0x44524854u /* "THRD" */
#define SPS_REC_THREAD_RUNNING 1u
#define SPS_REC_THREAD_EXITED 2u

_Static_assert(sizeof(struct sps_rec_header) <= SPS_REC_HEADER_SIZE, "header fits a page");
_Static_assert(offsetof(struct sps_rec_header, cuda_state) == 2616 &&
                   offsetof(struct sps_rec_header, cuda_reason) == 2656 &&
                   offsetof(struct sps_rec_header, py_zones) == 2848 &&
                   offsetof(struct sps_rec_header, hook_zone_ns) == 2912 &&
                   offsetof(struct sps_rec_header, end_ns) == 2928 &&
                   offsetof(struct sps_rec_header, py_auto) == 2944 &&
                   offsetof(struct sps_rec_header, py_auto_reason) == 2952 &&
                   offsetof(struct sps_rec_header, clock_sync) == 3072 &&
                   offsetof(struct sps_rec_header, clock_sync_reason) == 3136 && sizeof(struct sps_rec_header) == 3264,
               "header layout as documented");
_Static_assert(sizeof(struct sps_rec_name) == 256, "name entry is 256 bytes");
_Static_assert(sizeof(struct sps_rec_event) == 32, "event is 32 bytes");
_Static_assert(sizeof(struct sps_rec_agg) == 64, "agg header is 64 bytes");
_Static_assert(sizeof(struct sps_rec_frame) == 32, "frame is 32 bytes");
_Static_assert(offsetof(struct sps_rec_thread, stack) == 184, "segment layout as documented");

/* A measured cost from the header's py_* and hook_* cost fields, or 0: a
 * value that is not a finite positive number below 1e12 ns was not
 * measured (the module could not, or the record predates the fields). */
static inline double sps_rec_measured_ns(double ns) {
    return ns > 0 && ns < 1e12 ? ns : 0;
}

/* The bytes of a record its writer has handed out, rounded up to a page:
 * what a record is cut to when its process has ended (the rest of
 * file_size is a hole nobody will write).  Readers accept a file of at
 * least arena_off + arena_used bytes. */
static inline uint64_t sps_rec_used_size(const struct sps_rec_header *h) {
    uint64_t used = h->arena_off + __atomic_load_n(&h->arena_used, __ATOMIC_ACQUIRE);
    used = (used + 4095u) & ~(uint64_t)4095u;
    return used < h->file_size ? used : h->file_size;
}

/* The fewest arena bytes one thread segment takes: its header and its
 * three rings (its aggregate index and sink aggregate come on top).  No
 * two segments share any of it, so threads_count of them fit in the
 * arena; a record with more has segments sharing rings (damaged or
 * crafted), and a reader following each would read the same events once
 * per segment: 200 segments over one ring of 2^20 events made a 36 MB
 * file cost 24 GB.  Readers check threads_count against it. */
static inline uint64_t sps_rec_thread_min_bytes(const struct sps_rec_header *h) {
    uint64_t n = sizeof(struct sps_rec_thread);
    for (int i = 0; i < SPS_RING_COUNT; i++)
        n += (uint64_t)h->ring_cap[i] * sizeof(struct sps_rec_event);
    return n;
}

/* Zones, waits, steps and micro-steps: the kinds that measure time (and
 * carry a histogram); values and counters do not. */
static inline int sps_kind_is_timed(uint32_t kind) {
    return kind == SPS_KIND_ZONE || kind == SPS_KIND_STEP || kind == SPS_KIND_MICROSTEP || kind == SPS_KIND_WAIT;
}

/* Zones and waits: the spans inside a step whose self times fill the step
 * table's cells (a wait is a zone of time blocked on peers). */
static inline int sps_kind_is_span(uint32_t kind) {
    return kind == SPS_KIND_ZONE || kind == SPS_KIND_WAIT;
}

/* The highest enum sps_kind a record may hold. */
#define SPS_KIND_LAST SPS_KIND_WAIT

/*
 * An event kind that is not a site kind (version 2): a GPU zone's span on
 * the GPU (src/gpu/cuda_zone.c), in the values ring, named by its zone's
 * name (a name of kind SPS_KIND_ZONE), start_ticks/end_ticks where it ran
 * (placed from a CPU-timed epoch event: earlier than the ring's order, so
 * a reader walking the values ring by time skips these), `a` the CUstream
 * handle (0: the legacy default stream), depth 0, no aggregate (its length
 * is the "<name>.gpu_ms" value's).  Never a name's kind: no site can be
 * made of it.
 */
#define SPS_REC_KIND_GPU_SPAN 16u
_Static_assert(SPS_REC_KIND_GPU_SPAN > SPS_KIND_LAST, "an event kind apart from the site kinds");

/* The bytes of a (thread, name) aggregate of this kind: the header, and for
 * timed kinds the histogram that follows it. */
static inline uint64_t sps_rec_agg_size(uint32_t kind) {
    return sizeof(struct sps_rec_agg) + (sps_kind_is_timed(kind) ? SPS_HIST_BUCKETS * sizeof(uint64_t) : 0);
}

/*
 * How many of the head events offered to a ring of cap slots a reader may
 * use.  Keep-first: the first cap.  Keep-latest: once the ring has wrapped,
 * the slot the next event goes into is the oldest kept one, and a writer
 * killed (or still running) mid-event leaves it half-written, so it is
 * never read: cap - 1.  The kept events start at index head - kept under
 * keep-latest, at 0 under keep-first.
 */
static inline uint64_t sps_rec_ring_kept(uint64_t head, uint64_t cap, uint32_t policy) {
    if (head < cap)
        return head;
    return policy == SPS_POLICY_KEEP_FIRST ? cap : cap - 1u;
}

/* The histogram bucket of a duration in ns (see SPS_HIST_SUB_BITS). */
static inline uint32_t sps_hist_bucket(uint64_t ns) {
    if (ns < SPS_HIST_SUB)
        return (uint32_t)ns;
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    unsigned shift = msb - SPS_HIST_SUB_BITS;
    return ((msb - SPS_HIST_SUB_BITS + 1u) << SPS_HIST_SUB_BITS) |
           (uint32_t)((ns >> shift) & (SPS_HIST_SUB - 1u));
}

/* The smallest value in bucket b, and its width. */
static inline uint64_t sps_hist_bucket_low(uint32_t b) {
    if (b < SPS_HIST_SUB)
        return b;
    unsigned octave = (b >> SPS_HIST_SUB_BITS) - 1u; /* shift applied */
    uint64_t sub = b & (SPS_HIST_SUB - 1u);
    return (SPS_HIST_SUB + sub) << octave;
}
static inline uint64_t sps_hist_bucket_width(uint32_t b) {
    if (b < SPS_HIST_SUB)
        return 1;
    return (uint64_t)1 << ((b >> SPS_HIST_SUB_BITS) - 1u);
}

/*
 * Add one zone duration to an aggregate's exact fields (the hot path's
 * update; tests use it to build aggregates of known data).  The histogram
 * is not touched here: the recorder adds each duration to its histogram one
 * zone later (see sps_rec_thread.pending_*), and the reader adds a thread's
 * last pending duration when the histogram is one short of the count.
 * The count goes last: a process killed mid-update may leave one duration
 * in the sums but not in the count.
 */
static inline void sps_rec_agg_add_zone(struct sps_rec_agg *a, uint64_t dur_ns, uint64_t self_ns) {
    a->u.z.total_ns += dur_ns;
    a->u.z.self_ns += self_ns;
    a->u.z.min_ns = dur_ns < a->u.z.min_ns ? dur_ns : a->u.z.min_ns;
    a->u.z.max_ns = dur_ns > a->u.z.max_ns ? dur_ns : a->u.z.max_ns;
    unsigned __int128 sq = ((unsigned __int128)a->u.z.sumsq_hi << 64 | a->u.z.sumsq_lo) +
                           (unsigned __int128)dur_ns * dur_ns;
    a->u.z.sumsq_lo = (uint64_t)sq;
    a->u.z.sumsq_hi = (uint64_t)(sq >> 64);
    /* a release store: the stores above (and the pending bucket before
     * them) happen first, even if the compiler would reorder them */
    __atomic_store_n(&a->count, a->count + 1, __ATOMIC_RELEASE);
}

/* The histogram that follows a zone-like aggregate. */
static inline uint64_t *sps_rec_agg_hist(struct sps_rec_agg *a) {
    return (uint64_t *)(a + 1);
}

#endif /* SPS_RECORD_FORMAT_H */
