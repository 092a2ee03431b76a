/*
 * stepscope.h - the public C API of libstepscope.
 *
 * stepscope records where each step of a training or inference loop spends
 * its time.  Instrument code with zones (named, nested time spans), steps
 * (the loop's iterations), values (a loss) and counters (samples, tokens).
 *
 *     #include <stepscope.h>
 *
 *     for (int i = 0; i < steps; i++) {
 *         SPS_STEP();                       // one training step, scoped
 *         { SPS_ZONE("data");     load_batch(); }
 *         { SPS_ZONE("forward");  loss = forward(); }
 *         { SPS_ZONE("backward"); backward(); }
 *         SPS_VALUE("loss", loss);
 *         SPS_COUNT("samples", batch_size);
 *     }
 *
 * Under `stepscope run -- ./train` everything is recorded into the run
 * directory and the CLI writes the report.  Without it the library records in
 * memory; set STEPSCOPE_OUT=DIR to have the process write DIR/report.json at
 * exit, or call sps_report_write().
 *
 * Cost: a zone's begin+end is two timestamp reads plus a few stores into a
 * per-thread buffer: no locks, no system calls, no allocation after the
 * thread's first event.  Disabled at run time (sps_set_enabled(0) or
 * STEPSCOPE_DISABLE=1 in the environment) a zone costs one predictable
 * branch.  Compiled with -DSTEPSCOPE_DISABLE the macros expand to nothing
 * but still type-check their arguments.
 *
 * Thread safety: every function here may be called from any thread at any
 * time unless its comment says otherwise.  Zones nest per thread.
 *
 * Errors: fallible functions return 0 or a negative SPS_E* code, described
 * by sps_strerror().  Recording functions return nothing: they never fail
 * the program, and count what they had to drop.
 */
#ifndef STEPSCOPE_H
#define STEPSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPS_VERSION_MAJOR 0
#define SPS_VERSION_MINOR 1
#define SPS_VERSION_PATCH 0
#define SPS_VERSION_STRING "0.1.0"

#if defined(__GNUC__) || defined(__clang__)
#define SPS_API __attribute__((visibility("default")))
#else
#define SPS_API
#endif

/* ---------------------------------------------------------------- errors */

enum {
    SPS_OK = 0,
    SPS_EINVAL = -1,   /* an argument is invalid */
    SPS_ENOMEM = -2,   /* out of memory, or the record is full */
    SPS_EIO = -3,      /* a file could not be read or written (see errno) */
    SPS_EFORMAT = -4,  /* a record or report is malformed */
    SPS_EVERSION = -5, /* a record has a format version this build cannot read */
    SPS_ESTATE = -6,   /* the call is not valid in the library's current state */
    SPS_EUNSUPPORTED = -7 /* what the call needs is missing here (no libcuda, a call it lacks) */
};

/* A static, human-readable description of an SPS_E* code. */
SPS_API const char *sps_strerror(int err);

/* ------------------------------------------------------- what is recorded */

/* What a name denotes.  The same text may name a zone and a value: names are
 * interned per (text, kind). */
enum sps_kind {
    SPS_KIND_ZONE = 1,      /* a named span of time; nests */
    SPS_KIND_STEP = 2,      /* one iteration of the training/inference loop */
    SPS_KIND_MICROSTEP = 3, /* one micro-step (gradient accumulation) */
    SPS_KIND_VALUE = 4,     /* a sampled number: loss, learning rate, ... */
    SPS_KIND_COUNTER = 5,   /* a running total: samples, tokens, FLOPs, ... */
    SPS_KIND_WAIT = 6       /* time blocked waiting for peers (a collective: all-reduce,
                               broadcast, barrier, ...); nests like a zone, so the
                               enclosing zone's self time excludes it */
};

/*
 * A call site.  The macros below declare one `static` per call site, so a
 * name is interned once per site, never per event.  `id` is the library's:
 * zero until the site's first use, then the interned name's id.  Sites must
 * outlive the process's recording (static storage, or sps_site_get()).
 */
struct sps_site {
    const char *name;
    const char *file;
    const char *func;
    uint32_t line;
    uint32_t kind; /* enum sps_kind */
    uint32_t id;   /* written by the library; initialise to 0 */
};

/*
 * A site for a name known only at run time (bindings, generated names).
 * Returns a site owned by the library that lives until the process exits;
 * the same (name, kind) always returns the same site.  Thread safe: takes
 * the process's lock (a hash lookup, the same cost however many names came
 * before): call it once and keep the pointer, not once per event.  Returns
 * NULL when out of memory or when name is NULL or empty.
 */
SPS_API struct sps_site *sps_site_get(const char *name, enum sps_kind kind);

/* A zone token: nonzero when the begin was recorded; pass it to the end. */
typedef uint32_t sps_zone_t;

/*
 * Begin a zone, step or micro-step (site->kind says which) on the calling
 * thread.  Returns a token for sps_zone_end(), or 0 when nothing was
 * recorded (recording disabled, nesting deeper than 62, record full).  The
 * macros skip the call entirely while recording is disabled.
 */
SPS_API sps_zone_t sps_zone_begin(struct sps_site *site);

/*
 * End the zone `token` began.  Ends must be properly nested per thread: an
 * end that skips inner zones closes them implicitly (their time stays in the
 * outer zone's self time) and is counted as a mismatched end; a token that
 * is no longer open is counted and ignored.  A token of 0 is ignored.
 */
SPS_API void sps_zone_end(sps_zone_t token);

/*
 * Chained phases: zones that follow one another with nothing between, so
 * that the end of one and the start of the next are one timestamp.
 *
 *     SPS_STEP();
 *     SPS_PHASE("data");      load_batch();
 *     SPS_PHASE("forward");   loss = forward();
 *     SPS_PHASE("backward");  backward();
 *     SPS_PHASE("optimizer"); update();
 *     // the step's end ends "optimizer", at the step's own end
 *
 * sps_phase ends the calling thread's open phase, if any, and begins a
 * phase on site (an SPS_KIND_ZONE site), reading the clock once.  A phase
 * belongs to the innermost open step, micro-step or zone when it began
 * (its owner), or to the thread when nothing was open; ending the owner
 * (sps_zone_end, the end of an SPS_STEP or SPS_ZONE scope) ends its open
 * phase first, at the owner's own end timestamp.  A step of four phases
 * reads the clock six times where four zones in it read it ten.
 *
 * A phase is recorded as an ordinary zone of its name, one level below
 * its owner: its start, end, self time, aggregates and histogram are a
 * zone's, and every output shows it as that zone.  In detail:
 *  - zones begun while a phase is open nest in the phase; a phase call
 *    made while such a zone is still open begins a phase owned by that
 *    zone (ended with it) and leaves the outer phase running;
 *  - a micro-step taken back unrecorded (stepscope.torch's provisional
 *    one) hands its open phase to its step, which ends it;
 *  - a phase of the thread (begun with nothing open) ends at the next
 *    phase or sps_phase_end of the thread, or when the thread exits
 *    (exit() for the thread that calls it);
 *  - ending the owner while a zone inside its phase is still open is a
 *    mismatched end, counted as any other: the phase and the zone are
 *    closed implicitly, not recorded;
 *  - with recording off (sps_set_enabled(0)) SPS_PHASE ends the open
 *    phase and begins none, so the time spent off is in no phase
 *    (sps_phase itself, like sps_zone_begin, leaves the switch to its
 *    caller); with a NULL site or a site of another kind, sps_phase ends
 *    the open phase and begins none;
 *  - the overhead guard's thin levels and the nesting limit treat a phase
 *    as a zone at its depth: a phase directly in a step survives
 *    SPS_THIN_PHASES; one refused is counted, and its predecessor still
 *    ends;
 *  - across fork() the forking thread's open phase is carried like its
 *    open zones: the next phase call in the child ends it (into nothing:
 *    the parent records it) and begins the child's own.
 * Phases read the CPU clock only: a GPU zone (sps_gpu_zone_begin) stays a
 * zone.  Calling thread only, like zones.
 */
SPS_API void sps_phase(struct sps_site *site);

/* End the calling thread's open phase (that of its innermost open step,
 * micro-step or zone, or of the thread), beginning none; nothing when that
 * scope has no open phase.  One clock read. */
SPS_API void sps_phase_end(void);

/* ------------------------------------------------------------------ waits */

/*
 * A wait is a zone of kind SPS_KIND_WAIT: time the thread spent blocked on
 * its peers (an all-reduce, a broadcast, a barrier).  Begun and ended like
 * a zone (sps_zone_begin/sps_zone_end on an SPS_KIND_WAIT site, or the
 * SPS_WAIT macros below), it nests like one: the enclosing zone's self
 * time excludes it, so a `backward` that holds the gradient all-reduce's
 * wait keeps only its compute as self time.  Outputs show waits apart
 * ("kind": "wait" in report.json, a "waits_s" cell per step, a "wait"
 * category in trace.json).
 *
 *     { SPS_ZONE("backward");
 *       compute_grads();
 *       { SPS_WAIT("all_reduce"); all_reduce(grads); } }
 *
 * A wait observed on another thread (a communication library's completion
 * callback) is recorded afterwards with explicit times: take timestamps
 * with sps_clock_now() where the wait starts and ends (any thread), then
 * call sps_wait_record() on the thread that was blocked.
 */

/* A timestamp of the library's clock (the invariant TSC or
 * CLOCK_MONOTONIC: sps_status().clock), in its ticks, comparable across
 * the threads of this process.  Only for sps_wait_record(): its unit is
 * the clock's tick, not a nanosecond.  Any thread; no system call with the
 * TSC. */
SPS_API uint64_t sps_clock_now(void);

/*
 * Record on the calling thread a wait on site (an SPS_KIND_WAIT site) that
 * lasted from start to end, two sps_clock_now() timestamps of this process
 * (taken on any thread).  The wait becomes a child of the calling thread's
 * innermost open zone, step or micro-step, as if it had been begun and
 * ended inside it: it is cut to begin no earlier than that scope began
 * and end no later than now, and its length is taken out of the scope's
 * self time.  A wait that is empty after the cut (end <= start) records
 * nothing.
 *
 * Rules (the caller's, not checked):
 *  - call it while the scope the wait belongs to is still open, from the
 *    thread that opened it (e.g. right after the blocking call returns,
 *    before the enclosing zone ends);
 *  - the wait must not overlap a zone the thread recorded inside the same
 *    scope: its time would be taken out of the scope's self time twice
 *    (the self time stays at least 0);
 *  - the site is the caller's, as for every recording call (static
 *    storage or sps_site_get()); nothing is retained from the call.
 * Thread safety: any thread may call it for its own scopes; timestamps may
 * come from any thread of the process.  Order: the wait enters the
 * thread's ring when recorded, after zones that ended later than it;
 * every reader orders events by their timestamps, so it shows where it
 * happened.  Cost: two clock reads and a zone's begin and end
 * (bench/bench_wait.c: 1.2x a zone).
 * Recording off (sps_set_enabled(0)), a NULL site or one of another kind:
 * nothing is recorded.
 */
SPS_API void sps_wait_record(struct sps_site *site, uint64_t start, uint64_t end);

/* Record a value (site->kind must be SPS_KIND_VALUE), e.g. the loss. */
SPS_API void sps_value(struct sps_site *site, double value);

/*
 * Record a value at an explicit time: t_ns is a timestamp of sps_clock_ns()'s
 * clock (CLOCK_MONOTONIC in ns, the record's time base; sps_clock_now()'s
 * ticks are the same clock in another unit), e.g. a reading another
 * clock took, mapped onto this one (MemoryTracker's allocation timeline).
 * The value joins its name's aggregates (count, sum, min, max) as
 * sps_value's does; its event is stored at t_ns, cut to the record's
 * start and to now, and marked as explicitly timed, so every reader
 * places it by its time alone: a value older than events already recorded
 * lands in the step whose time holds it (or that step's after-end, as any
 * value between two steps), never in the step open when the call was made,
 * and a step's cell keeps the latest value by time.  The aggregate's
 * "first" and "last" are in call order: record a series oldest first.
 * The event goes to the calling thread's value ring, as sps_value's: a
 * burst of them can overwrite that thread's older values under the
 * keep-latest policy (record long series from a thread of their own).
 * site->kind must be SPS_KIND_VALUE (else, or NULL: nothing).  The site is
 * the caller's, as for every recording call; nothing is retained.  Any
 * thread; no lock; about 1.8x sps_value (bench/bench_value_at.c).
 */
SPS_API void sps_value_at(struct sps_site *site, double value, uint64_t t_ns);

/* Add n to a counter (site->kind must be SPS_KIND_COUNTER). */
SPS_API void sps_count(struct sps_site *site, uint64_t n);

/* Name the calling thread in the record (at most 31 bytes are kept). */
SPS_API void sps_thread_name(const char *name);

/* ---------------------------------------------------------------- GPU zones */

/*
 * A GPU zone: a zone whose GPU time is measured too, by a pair of CUDA
 * events recorded on a stream.  libcuda (libcuda.so.1, or the path in
 * STEPSCOPE_LIBCUDA) is loaded with dlopen on the first GPU zone; it is never
 * linked.  The events use the calling thread's current CUDA context (the one
 * PyTorch or the program made current); the library never creates one.
 *
 * Nothing here waits for the GPU: begin and end only record events.  A
 * pair is resolved later, without synchronising, when the thread ends a
 * step, when its event pool runs low, or at sps_gpu_flush(): a finished
 * pair's elapsed time becomes one value of the series "<zone name>.gpu_ms"
 * (milliseconds, the resolution of cuEventElapsedTime, about 0.5 us); an
 * unfinished one waits for the next chance.  The CPU side is an ordinary
 * zone of the same site, so the report shows both side by side.
 *
 * When libcuda is missing, cuInit fails, or the thread has no current
 * context, a GPU zone is a plain CPU zone: counted, and the reason is kept
 * (sps_cuda_status(), `stepscope doctor`).
 *
 * Thread safety: each thread has its own pool of events (256 pairs,
 * allocated at its first GPU zone, freed when it exits); the end must be
 * called on the thread that began the zone.  Zones of one thread may use
 * different streams and contexts.
 *
 * fork(): CUDA must not be used in a fork child before exec.  The child
 * drops the pool it inherited without calling libcuda (the parent resolves
 * those pairs), and in a child of a process that had loaded libcuda every
 * GPU zone is a CPU zone, with that reason.  Whether libcuda worked, why
 * not, and the totals below go into the process's record and report.json
 * ("cuda").
 */
typedef uint64_t sps_gpu_zone_t; /* 0: nothing to end */

/*
 * Begin a zone on site (an SPS_KIND_ZONE site, or a step) and record its
 * start event on cuda_stream (a CUstream or cudaStream_t; NULL: the legacy
 * default stream; from PyTorch, torch.cuda.current_stream().cuda_stream).
 * Returns a token for sps_gpu_zone_end(), or 0 when nothing was recorded.
 */
SPS_API sps_gpu_zone_t sps_gpu_zone_begin(struct sps_site *site, void *cuda_stream);

/* Record the end event on the begin's stream and end the CPU zone.  Must
 * be called on the thread that began it.  0 is ignored. */
SPS_API void sps_gpu_zone_end(sps_gpu_zone_t token);

/*
 * Resolve the calling thread's finished GPU zones now, without waiting for
 * the GPU, and add its counts to the record.  Returns how many of the
 * thread's pairs are still pending (their GPU work has not finished).
 */
SPS_API int sps_gpu_flush(void);

struct sps_cuda_status {
    int available;          /* 1: libcuda loaded and cuInit succeeded */
    int driver_version;     /* cuDriverGetVersion, e.g. 12040; 0 unknown */
    char reason[192];       /* why GPU zones are (or were) CPU-only; "" when none */
    /* process totals of what the threads have flushed (sps_gpu_flush, step
     * ends, pool refills): */
    uint64_t resolved;      /* pairs whose GPU time was recorded */
    uint64_t cpu_only;      /* GPU zones recorded as CPU zones only (no libcuda, no context) */
    uint64_t dropped;       /* GPU zones begun while the thread's pool was full of pending pairs */
    uint64_t unresolved;    /* pairs given up: an event call failed */
};

/*
 * Fill *out with the state of the cuda source, loading libcuda first if no
 * GPU zone has (so `stepscope doctor` can ask).  Returns 0, or SPS_EINVAL
 * for a NULL out.  Thread-safe.
 */
SPS_API int sps_cuda_status(struct sps_cuda_status *out);

/*
 * GPU spans: where each resolved GPU zone ran on the GPU's timeline, per
 * stream, on this process's clock.
 *
 * Placement: per thread and CUDA context, the library records an epoch
 * event (on the stream of the GPU zone being begun, just before its start
 * event) and reads sps_clock_ns() at that cuEventRecord.  A resolved pair
 * is placed at start = epoch + cuEventElapsedTime(epoch, start event), end
 * = start + cuEventElapsedTime(start event, end event): its duration is
 * exact (the "<name>.gpu_ms" value), and spans of one epoch are exact
 * against each other, whatever their streams (GPU timestamps are the
 * device's).  The epoch is renewed (two alternating events; never while a
 * pending pair still measures from the older one) about once a second and
 * whenever a span lands over a second from it, so the float milliseconds
 * of cuEventElapsedTime stay well under a microsecond of rounding.  A
 * renewed epoch is placed at the later of its own CPU reading and the
 * previous epoch's place plus the GPU time between the two, less 50 ppm of
 * that time (in case the GPU's clock runs faster than the CPU's).
 *
 * Accuracy: the GPU reaches an epoch no earlier than the CPU recorded it:
 * later by q, the work queued on that stream ahead of the epoch plus the
 * launch latency.  Every span of an epoch is placed q too early (the same
 * q for all of them, so durations, gaps and overlaps are exact), never
 * later than it ran.  q is the launch latency alone where the epoch's
 * stream was idle, up to a step or two where the CPU runs that far ahead
 * of it.  A renewal keeps the previous epoch's q (plus the 50 ppm) or
 * takes its own, whichever is smaller: q never grows from one epoch to the
 * next beyond the allowance, and where it shrinks, the spans after the
 * renewal are placed later than those before by what it shrank.  Any span
 * bounds q from both sides: q >= (CPU time its begin recorded the start
 * event) - start_ns, and q <= (CPU time it was found finished) - end_ns.
 *
 * Each placed span also becomes a GPU-span event in the record (its
 * zone's name, its stream), drawn in trace.json on one track per process
 * and stream ("GPU stream 0x...", "GPU default stream").
 */
struct sps_gpu_span {
    uint64_t seq;          /* 1, 2, ... per thread, one per resolved pair: a gap is a loss */
    struct sps_site *site; /* the GPU zone's site (owned by its creator) */
    void *stream;          /* the CUstream it was recorded on; NULL: the legacy default stream */
    uint64_t start_ns;     /* on sps_clock_ns()'s clock; start_ns == end_ns == 0: */
    uint64_t end_ns;       /* not placed (no epoch event could be had), gpu_ms still holds */
    double gpu_ms;         /* cuEventElapsedTime(start, end), as "<name>.gpu_ms" */
};

/*
 * Copy the calling thread's resolved GPU spans with seq > since_seq into
 * out (at most max of them), oldest first, resolving the thread's finished
 * pairs first (without waiting, as sps_gpu_flush).  The thread keeps the
 * most recent 1024: a caller that falls further behind sees a gap in seq.
 * Returns how many were copied; pass the last one's seq to go on.  out is
 * the caller's; the spans' sites live as long as their sites do.  Calling
 * thread only: spans are per thread (those of zones begun on another
 * thread are that thread's).  0 (and nothing resolved) when out is NULL
 * or max is 0.
 */
SPS_API size_t sps_gpu_spans_since(uint64_t since_seq, struct sps_gpu_span *out, size_t max);

/*
 * Resolve the calling thread's pending GPU zones, polling cuEventQuery
 * (sleeping 50 us, growing to 1 ms, between polls) until none is pending
 * or timeout_s seconds have passed; then add the thread's counts to the
 * record, as sps_gpu_flush.  Never calls a synchronising entry point, so
 * other threads' CUDA work is not held up.  Returns how many pairs are
 * still pending (0: all resolved).  timeout_s <= 0 (or NaN) polls once.
 * Calling thread only.
 */
SPS_API int sps_gpu_wait(double timeout_s);

/*
 * Device memory of the calling thread's current CUDA context's device:
 * *free_bytes and *total_bytes from cuMemGetInfo_v2, through the libcuda
 * GPU zones load (loading it first if no GPU zone has).  Used = total -
 * free counts every process on the device and the driver's own
 * reservations, not only this one's allocations.  Never synchronises
 * (cuMemGetInfo does not wait for the GPU) and never creates a context.
 * Returns 0, or SPS_EINVAL for a NULL pointer; SPS_EUNSUPPORTED when
 * libcuda is not usable (sps_cuda_status() says why) or lacks
 * cuMemGetInfo_v2; SPS_ESTATE when the thread has no current CUDA context
 * (the driver answered CUDA_ERROR_INVALID_CONTEXT or cuCtxGetCurrent none);
 * SPS_EIO when a driver call failed otherwise.  On an error the outputs are
 * left as they were.  The pointers are the caller's.  Thread-safe: any
 * thread, each about its own current context.
 */
SPS_API int sps_cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes);

/* ------------------------------------------------------------ enable/disable */

/* Nonzero while recording.  Read by the macros without a call; change it
 * only through sps_set_enabled(). */
extern SPS_API volatile int sps__enabled;

/* Turn recording on or off for the whole process; takes effect at the next
 * begin (zones already open still end normally). */
SPS_API void sps_set_enabled(int enabled);
SPS_API int sps_is_enabled(void);

/* ------------------------------------------------------------------- status */

enum sps_mode {
    SPS_MODE_UNINITIALISED = 0, /* nothing recorded yet in this process */
    SPS_MODE_FILE = 1,          /* recording into a file in a run directory */
    SPS_MODE_MEMORY = 2,        /* recording into memory (no run directory) */
    SPS_MODE_FAILED = 3         /* recording is off: see reason */
};

enum sps_clock_source {
    SPS_CLOCK_TSC = 1,      /* invariant x86 time-stamp counter, calibrated */
    SPS_CLOCK_MONOTONIC = 2 /* clock_gettime(CLOCK_MONOTONIC) */
};

struct sps_status {
    enum sps_mode mode;
    enum sps_clock_source clock;
    double ticks_per_second;    /* of the clock above */
    char record_path[512];      /* the record file, "" in memory mode */
    char reason[256];           /* why the mode is what it is, "" when FILE */
    uint64_t events_recorded;   /* by all threads of this process */
    uint64_t events_dropped;    /* overwritten/refused by full rings, all threads */
    uint64_t threads_recording; /* threads that have recorded */
};

/* Fill *out with the calling process's recording state.  Returns 0, or
 * SPS_EINVAL when out is NULL. */
SPS_API int sps_status(struct sps_status *out);

/* ------------------------------------------------------------ clock offsets */

/*
 * The monotonic clock as this process's record sees it, in ns: what the
 * record's anchors and event times are on (CLOCK_MONOTONIC, shifted by the
 * test-only STEPSCOPE_TEST_CLOCK_SHIFT_NS).  A clock-offset measurement
 * (sps_clock_offset_set) takes its timestamps here.  Any thread.
 */
SPS_API uint64_t sps_clock_ns(void);

enum sps_sync_when {
    SPS_SYNC_START = 0, /* measured when the process group came up */
    SPS_SYNC_END = 1    /* measured when it went down (or at exit) */
};

/*
 * Store a measurement of this process's clock against the reference
 * process's (rank 0's) in this process's record, for `stepscope merge`:
 * offset_ns is the reference clock minus sps_clock_ns() at at_ns (this
 * process's sps_clock_ns() when measured), error_ns a bound on its error
 * (half the round trip of the exchange it came from), rounds the round
 * trips made.  With why non-NULL the measurement failed: the slot says
 * "not measured" and why (offset, error and at are ignored).  Writes
 * replace the slot's earlier contents.  Returns 0, SPS_EINVAL for a bad
 * when, or SPS_ESTATE when this process records nothing (nothing is
 * stored).  Any thread; concurrent calls for one slot are the caller's to
 * avoid.
 */
SPS_API int sps_clock_offset_set(enum sps_sync_when when, int64_t offset_ns, uint64_t error_ns, uint64_t at_ns,
                                 uint32_t rounds, const char *why);

/* ------------------------------------------------------------------ metrics */

/*
 * The metric catalogue: every machine metric stepscope knows, one row each:
 * X(ID, "name", "unit", "source", SPS_GAUGE or SPS_TOTAL, cadence,
 * "description").  Report keys, CSV headers and chart labels all come from
 * these rows; the unit is the name's last word(s), except the dimensionless
 * count and bitmask.  A TOTAL counts from when sampling began; its
 * _per_second twin is the rate over the last interval.  The cadence says
 * which of the sampler's two intervals reads the metric (enum sps_cadence).
 *
 * Host metrics: one value per machine (system_*, cpu_*, dram_*) or per
 * watched process tree (workload_*: the process and all its descendants).
 */
#define SPS_HOST_METRICS(X) \
    X(SYSTEM_CPU_PERCENT, "system_cpu_percent", "percent", "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "busy time of all CPUs (user, nice, system, irq, softirq, steal), percent of all CPUs") \
    X(SYSTEM_IOWAIT_PERCENT, "system_iowait_percent", "percent", "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "time CPUs sat idle waiting for I/O, percent of all CPUs") \
    X(SYSTEM_MEMORY_USED_BYTES, "system_memory_used_bytes", "bytes", "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "memory in use: MemTotal - MemAvailable") \
    X(SYSTEM_MEMORY_AVAILABLE_BYTES, "system_memory_available_bytes", "bytes", "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "memory available to new work without swapping (MemAvailable)") \
    X(SYSTEM_MEMORY_TOTAL_BYTES, "system_memory_total_bytes", "bytes", "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "installed memory (MemTotal)") \
    X(SYSTEM_SWAP_USED_BYTES, "system_swap_used_bytes", "bytes", "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "swap in use: SwapTotal - SwapFree") \
    X(SYSTEM_NETWORK_RECEIVE_BYTES, "system_network_receive_bytes", "bytes", "proc", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, \
      "bytes received by all network interfaces but loopback") \
    X(SYSTEM_NETWORK_TRANSMIT_BYTES, "system_network_transmit_bytes", "bytes", "proc", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, \
      "bytes sent by all network interfaces but loopback") \
    X(SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND, "system_network_receive_bytes_per_second", "bytes_per_second", "proc", \
      SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "network receive rate, all interfaces but loopback") \
    X(SYSTEM_NETWORK_TRANSMIT_BYTES_PER_SECOND, "system_network_transmit_bytes_per_second", "bytes_per_second", \
      "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "network send rate, all interfaces but loopback") \
    X(WORKLOAD_CPU_PERCENT, "workload_cpu_percent", "percent", "proc", SPS_GAUGE, SPS_EVERY_INTERVAL, \
      "CPU time used by the process tree, percent of one CPU (200 = two busy cores)") \
    X(WORKLOAD_CPU_SECONDS, "workload_cpu_seconds", "seconds", "proc", SPS_TOTAL, SPS_EVERY_INTERVAL, \
      "user + system CPU time of the tree's processes, each since it started (not since sampling began)") \
    X(WORKLOAD_RSS_BYTES, "workload_rss_bytes", "bytes", "proc", SPS_GAUGE, SPS_EVERY_INTERVAL, \
      "resident memory of the process tree (sum over its processes)") \
    X(WORKLOAD_RSS_PEAK_BYTES, "workload_rss_peak_bytes", "bytes", "proc", SPS_GAUGE, SPS_EVERY_INTERVAL, \
      "largest resident memory of the tree so far: the larger of the sampled sum and any one process's high-water mark") \
    X(WORKLOAD_PSS_BYTES, "workload_pss_bytes", "bytes", "proc", SPS_GAUGE, SPS_WHEN_DUE, \
      "proportional set size of the tree (smaps_rollup Pss, summed): a page shared by n processes counts 1/n in each, " \
      "so pages the tree's processes share copy-on-write count once") \
    X(WORKLOAD_PSS_PEAK_BYTES, "workload_pss_peak_bytes", "bytes", "proc", SPS_GAUGE, SPS_WHEN_DUE, \
      "largest workload_pss_bytes read so far (a peak between two reads is not seen)") \
    X(WORKLOAD_USS_BYTES, "workload_uss_bytes", "bytes", "proc", SPS_GAUGE, SPS_WHEN_DUE, \
      "unique set size of the tree (smaps_rollup Private_Clean + Private_Dirty, summed): pages mapped by one process only") \
    X(WORKLOAD_PROCESSES, "workload_processes", "count", "proc", SPS_GAUGE, SPS_EVERY_INTERVAL, "processes in the tree") \
    X(WORKLOAD_THREADS, "workload_threads", "count", "proc", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "threads of all processes in the tree") \
    X(WORKLOAD_DISK_READ_BYTES, "workload_disk_read_bytes", "bytes", "proc", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, \
      "bytes the tree caused to be read from storage (/proc/PID/io read_bytes)") \
    X(WORKLOAD_DISK_WRITE_BYTES, "workload_disk_write_bytes", "bytes", "proc", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, \
      "bytes the tree caused to be written to storage (/proc/PID/io write_bytes)") \
    X(WORKLOAD_DISK_READ_BYTES_PER_SECOND, "workload_disk_read_bytes_per_second", "bytes_per_second", "proc", \
      SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "storage read rate of the tree") \
    X(WORKLOAD_DISK_WRITE_BYTES_PER_SECOND, "workload_disk_write_bytes_per_second", "bytes_per_second", "proc", \
      SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "storage write rate of the tree") \
    X(CPU_TEMPERATURE_CELSIUS, "cpu_temperature_celsius", "celsius", "thermal", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "hottest CPU sensor (hwmon coretemp/k10temp/zenpower..., else a CPU thermal zone)") \
    X(CPU_PACKAGE_ENERGY_JOULES, "cpu_package_energy_joules", "joules", "rapl", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, \
      "energy used by all CPU packages (RAPL package domains)") \
    X(CPU_PACKAGE_POWER_WATTS, "cpu_package_power_watts", "watts", "rapl", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "power drawn by all CPU packages over the last interval") \
    X(DRAM_ENERGY_JOULES, "dram_energy_joules", "joules", "rapl", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, "energy used by DRAM (RAPL dram domains)") \
    X(DRAM_POWER_WATTS, "dram_power_watts", "watts", "rapl", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "power drawn by DRAM over the last interval") \
    X(CPU_PRESSURE_SOME_PERCENT, "cpu_pressure_some_percent", "percent", "sched", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "share of the last interval in which some runnable task waited for a CPU (PSI: /proc/pressure/cpu \"some\" total)") \
    X(WORKLOAD_RUN_DELAY_SECONDS, "workload_run_delay_seconds", "seconds", "sched", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, \
      "time the tree's threads were runnable but waiting for a CPU (schedstat run delay), each since it started") \
    X(WORKLOAD_RUN_DELAY_PERCENT, "workload_run_delay_percent", "percent", "sched", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "the tree's run delay per second of the last interval, percent of one CPU (100 = one thread kept waiting throughout)")

/* Per-GPU metrics; the source is whichever of nvml, drm and nvidia-smi
 * serves the GPU (struct sps_capture_gpu says which). */
#define SPS_GPU_METRICS(X) \
    X(GPU_MEMORY_USED_BYTES, "gpu_memory_used_bytes", "bytes", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "device memory in use by all processes") \
    X(GPU_MEMORY_TOTAL_BYTES, "gpu_memory_total_bytes", "bytes", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "device memory installed") \
    X(GPU_UTILIZATION_PERCENT, "gpu_utilization_percent", "percent", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "time a kernel was running over the driver's last sample period") \
    X(GPU_MEMORY_UTILIZATION_PERCENT, "gpu_memory_utilization_percent", "percent", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "time device memory was being read or written over the driver's last sample period") \
    X(GPU_TEMPERATURE_CELSIUS, "gpu_temperature_celsius", "celsius", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "GPU die temperature") \
    X(GPU_POWER_WATTS, "gpu_power_watts", "watts", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "power drawn by the board") \
    X(GPU_ENERGY_JOULES, "gpu_energy_joules", "joules", "gpu", SPS_TOTAL, SPS_EVERY_MACHINE_INTERVAL, "energy used by the board") \
    X(GPU_SM_CLOCK_HERTZ, "gpu_sm_clock_hertz", "hertz", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "streaming multiprocessor clock") \
    X(GPU_MEMORY_CLOCK_HERTZ, "gpu_memory_clock_hertz", "hertz", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, "memory clock") \
    X(GPU_THROTTLE_REASONS, "gpu_throttle_reasons", "bitmask", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "why clocks are held down (NVML clocks-event reasons; 0 = not throttled, 1 = idle)") \
    X(GPU_WORKLOAD_MEMORY_BYTES, "gpu_workload_memory_bytes", "bytes", "gpu", SPS_GAUGE, SPS_EVERY_MACHINE_INTERVAL, \
      "device memory used by the watched process tree's own processes")

enum sps_metric_kind {
    SPS_GAUGE = 1, /* a level: mean and max are meaningful */
    SPS_TOTAL = 2  /* a running total since sampling began: last is the total */
};

/*
 * How often the sampler reads a metric.  The workload's own CPU time and
 * memory are read every interval (default 100 ms): they are what a step
 * spends, and the process CPU clock and statm are cheap to read.  Everything
 * about the machine (GPUs, system-wide CPU, memory and network, sensors,
 * energy) and the tree's threads and disk I/O are read every machine
 * interval (default 500 ms): /proc/stat counts in 10 ms ticks, so a 100 ms
 * system CPU percent moves in 5% steps on two cores, and these reads are
 * most of the sampler's cost.  The tree's PSS and USS come from
 * /proc/PID/smaps_rollup, whose read walks every page the process maps
 * (milliseconds for a process with torch loaded): they are read at a machine
 * interval only when the time since the last such read, at 0.01% of one
 * core, pays for the next one's predicted cost (and on every fresh
 * capture), and stand for the tree only while its RSS sum stays within 10%
 * of what it was at that read.
 */
enum sps_cadence {
    SPS_EVERY_INTERVAL = 1,         /* struct sps_sampler_config.interval_ms */
    SPS_EVERY_MACHINE_INTERVAL = 2, /* struct sps_sampler_config.machine_interval_ms */
    SPS_WHEN_DUE = 3 /* at a machine interval when its own cost allows: the tree's PSS, whose read walks every
                        page table of the tree (docs/metrics.md, "The sampler") */
};

#define SPS__METRIC_ENUM(id, name, unit, source, kind, cadence, what) SPS_M_##id,
enum sps_host_metric { SPS_HOST_METRICS(SPS__METRIC_ENUM) SPS_HOST_METRIC_COUNT };
enum sps_gpu_metric { SPS_GPU_METRICS(SPS__METRIC_ENUM) SPS_GPU_METRIC_COUNT };
#undef SPS__METRIC_ENUM

struct sps_metric_info {
    const char *name;        /* "workload_rss_bytes" */
    const char *unit;        /* "bytes" */
    const char *source;      /* "proc", "thermal", "rapl" or "gpu" */
    enum sps_metric_kind kind;
    enum sps_cadence cadence;
    const char *description; /* one line */
};

/* The catalogue row for a host metric (SPS_M_*) or a GPU metric; NULL when
 * id is out of range.  Static storage; thread-safe. */
SPS_API const struct sps_metric_info *sps_host_metric_info(int id);
SPS_API const struct sps_metric_info *sps_gpu_metric_info(int id);

/* Where machine readings come from.  Sources are tried in this order; the
 * GPU sources form a chain: the first that finds a GPU serves them all. */
enum sps_source_id {
    SPS_SOURCE_PROC = 0,      /* /proc: CPU, memory, I/O, the process tree */
    SPS_SOURCE_THERMAL = 1,   /* hwmon and thermal zones */
    SPS_SOURCE_RAPL = 2,      /* powercap energy counters */
    SPS_SOURCE_NVML = 3,      /* libnvidia-ml.so.1, loaded at run time */
    SPS_SOURCE_DRM = 4,       /* /sys/class/drm (amdgpu and others) */
    SPS_SOURCE_NVIDIA_SMI = 5, /* the nvidia-smi command: slow, the last resort */
    SPS_SOURCE_SCHED = 6,     /* CPU pressure (PSI) and the process tree's run delay (schedstat) */
    SPS_SOURCE_COUNT = 7
};

/* One reading: a value in its metric's unit, or unavailable. */
struct sps_reading {
    double value;   /* NAN when unavailable */
    int64_t age_ns; /* how long before the capture it was read; -1 when unavailable */
    int available;  /* 1 when value is a reading, 0 when there is none */
};

#define SPS_CAPTURE_MAX_GPUS 16
#define SPS_CAPTURE_MAX_SENSORS 16

struct sps_capture_gpu {
    int index;                /* as the workload numbers it (CUDA_VISIBLE_DEVICES honoured) */
    enum sps_source_id source; /* which source read it */
    char name[64];            /* "NVIDIA H100 80GB HBM3" */
    char uuid[96];            /* "GPU-..." ("" when unknown) */
    struct sps_reading metric[SPS_GPU_METRIC_COUNT];
};

struct sps_capture_sensor {
    char label[48]; /* "k10temp Tctl", "coretemp Package id 0", "thermal_zone0 x86_pkg_temp" */
    int is_cpu;     /* counted in cpu_temperature_celsius */
    struct sps_reading celsius;
};

/* What sps_capture() fills in.  Large (about 9 KiB): keep one around. */
struct sps_capture {
    int64_t time_ns;  /* CLOCK_MONOTONIC when taken */
    int fresh;        /* 1: read synchronously by this call */
    int published;    /* 1: read from what `stepscope run` published */
    int tree_pid;     /* root of the process tree the workload_* metrics cover */
    struct sps_reading metric[SPS_HOST_METRIC_COUNT]; /* by enum sps_host_metric */
    int gpu_count;    /* entries of gpu[] filled in */
    struct sps_capture_gpu gpu[SPS_CAPTURE_MAX_GPUS];
    int sensor_count; /* entries of sensor[] filled in */
    struct sps_capture_sensor sensor[SPS_CAPTURE_MAX_SENSORS];
    /* The watched tree's memory: metric[SPS_M_WORKLOAD_PSS_BYTES] when it
     * has a reading (pages the tree's processes share copy-on-write count
     * once; read when its cost allows, see its age), else
     * metric[SPS_M_WORKLOAD_RSS_BYTES], the sum over processes (a kernel
     * without smaps_rollup, or a process that denies the read).
     * tree_memory_metric says which. */
    enum sps_host_metric tree_memory_metric;
    struct sps_reading tree_memory;
};

enum {
    SPS_CAPTURE_FRESH = 1 /* read every source now instead of taking the latest sample */
};

/*
 * Fill *out with the latest machine readings.  Under `stepscope run` this
 * copies what the CLI's sampler published into the run directory: O(1), no
 * system call, no thread of its own.  Otherwise the first call starts this
 * process's sampler (sps_sampler_start() with defaults) and later calls copy
 * its latest sample; after sps_sampler_stop() they copy the last sample it
 * took (its readings age) until sps_sampler_start() resumes it.  With
 * SPS_CAPTURE_FRESH every source is read now, on the calling thread (costs
 * what `stepscope doctor` shows), without restarting a stopped sampler.
 *
 * Returns 0, SPS_EINVAL when out is NULL, or SPS_ENOMEM/SPS_EIO when no
 * sampler could be started (then every reading is unavailable).  Never
 * fails for a missing source: its readings are unavailable and
 * sps_source_status() says why.  Thread-safe.
 */
SPS_API int sps_capture(struct sps_capture *out, unsigned flags);

struct sps_source_status {
    enum sps_source_id id;
    const char *name;  /* "proc", "nvml", ... (static) */
    int available;     /* 1: it reads; 0: see reason */
    int in_use;        /* 1: the sampler reads it (a GPU source later in the chain than the one in use is not) */
    int slow;          /* 1: one read costs milliseconds (nvidia-smi) */
    char reason[192];  /* why not available (or notes when available) */
};

/* Status of source id as the sampler behind sps_capture() sees it.
 * Returns 0, SPS_EINVAL for a bad id or NULL out, SPS_ESTATE when no sampler
 * runs or is published. */
SPS_API int sps_source_status(enum sps_source_id id, struct sps_source_status *out);

struct sps_sampler_config {
    int pid;                /* root of the process tree to watch; 0: this process */
    int interval_ms;         /* the tree's CPU time and memory; 0: 100 */
    int machine_interval_ms; /* GPUs, the machine, sensors, the tree's threads and disk I/O; 0: 500 */
};

/*
 * Start this process's sampler thread (config NULL: defaults).  Returns 0,
 * SPS_ESTATE when one already runs or this process is under `stepscope run`
 * (whose sampler is used instead), SPS_ENOMEM, or SPS_EIO when the thread
 * cannot be created.  The sampler's summary joins the report this process
 * writes (sps_report_write, STEPSCOPE_OUT).
 */
SPS_API int sps_sampler_start(const struct sps_sampler_config *config);

/* Stop and join this process's sampler (a no-op when none runs).  Not from
 * a signal handler. */
SPS_API void sps_sampler_stop(void);

/* ------------------------------------------------------------------ reports */

/*
 * Write DIR/report.json for this process now (standalone use; under
 * `stepscope run` the CLI writes the report).  Creates DIR if needed and
 * replaces the file atomically; then removes the report.html, steps.csv,
 * timeline.csv and trace.json an earlier run left in DIR (they described
 * that run).  Returns 0 or an SPS_E* code; on failure errbuf (when not
 * NULL) receives a one-line reason.  Not async-signal-safe.
 */
SPS_API int sps_report_write(const char *dir, char *errbuf, size_t errlen);

/* ------------------------------------------------------------------- macros */

#define SPS__CAT2(a, b) a##b
#define SPS__CAT(a, b) SPS__CAT2(a, b)
#if defined(__COUNTER__)
#define SPS__UNIQUE(prefix) SPS__CAT(prefix, __COUNTER__)
#else
#define SPS__UNIQUE(prefix) SPS__CAT(prefix, __LINE__)
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SPS__LIKELY(x) __builtin_expect(!!(x), 1)
#define SPS__MAYBE_UNUSED __attribute__((unused))
#else
#define SPS__LIKELY(x) (x)
#define SPS__MAYBE_UNUSED
#endif

#ifndef STEPSCOPE_DISABLE

#define SPS__SITE(var, name_, kind_) \
    static struct sps_site var = {(name_), __FILE__, __func__, __LINE__, (kind_), 0}

#define SPS__BEGIN(site) (SPS__LIKELY(sps__enabled) ? sps_zone_begin(site) : (sps_zone_t)0)

/* Explicit form: declares `var` (an sps_zone_t) at the begin. */
#define SPS_ZONE_BEGIN(var, name) SPS__BEGIN_KIND(var, name, SPS_KIND_ZONE)
#define SPS_STEP_BEGIN(var) SPS__BEGIN_KIND(var, "step", SPS_KIND_STEP)
#define SPS_MICROSTEP_BEGIN(var) SPS__BEGIN_KIND(var, "microstep", SPS_KIND_MICROSTEP)
#define SPS__BEGIN_KIND(var, name, kind) \
    SPS__SITE(SPS__CAT(sps__site_, var), name, kind); \
    sps_zone_t var = SPS__BEGIN(&SPS__CAT(sps__site_, var))
#define SPS_ZONE_END(var) \
    do { \
        if (var) \
            sps_zone_end(var); \
    } while (0)
#define SPS_STEP_END(var) SPS_ZONE_END(var)
#define SPS_MICROSTEP_END(var) SPS_ZONE_END(var)
/* A wait (SPS_KIND_WAIT), explicit form: declares `var` at the begin. */
#define SPS_WAIT_BEGIN(var, name) SPS__BEGIN_KIND(var, name, SPS_KIND_WAIT)
#define SPS_WAIT_END(var) SPS_ZONE_END(var)

#if defined(__GNUC__) || defined(__clang__)
static inline void sps__zone_cleanup(sps_zone_t *token) {
    if (*token)
        sps_zone_end(*token);
}
/* Scoped form: the zone ends when the enclosing block is left, by any path
 * (return, break, goto).  gcc and clang only. */
#define SPS_ZONE(name) SPS__SCOPED(SPS__UNIQUE(sps__zone_), name, SPS_KIND_ZONE)
#define SPS_STEP() SPS__SCOPED(SPS__UNIQUE(sps__step_), "step", SPS_KIND_STEP)
#define SPS_STEP_NAMED(name) SPS__SCOPED(SPS__UNIQUE(sps__step_), name, SPS_KIND_STEP)
#define SPS_MICROSTEP() SPS__SCOPED(SPS__UNIQUE(sps__mstep_), "microstep", SPS_KIND_MICROSTEP)
/* A wait, scoped: `{ SPS_WAIT("all_reduce"); all_reduce(...); }` */
#define SPS_WAIT(name) SPS__SCOPED(SPS__UNIQUE(sps__wait_), name, SPS_KIND_WAIT)
#define SPS__SCOPED(var, name, kind) SPS__SCOPED2(var, name, kind)
#define SPS__SCOPED2(var, name, kind) \
    SPS__SITE(SPS__CAT(var, _site), name, kind); \
    __attribute__((cleanup(sps__zone_cleanup), unused)) sps_zone_t var = \
        SPS__BEGIN(&SPS__CAT(var, _site))
#endif

/* A chained phase (sps_phase): ends the open phase and begins `name`.
 * While recording is off it only ends the open phase. */
#define SPS_PHASE(name) \
    do { \
        SPS__SITE(sps__phase_site, name, SPS_KIND_ZONE); \
        if (SPS__LIKELY(sps__enabled)) \
            sps_phase(&sps__phase_site); \
        else \
            sps_phase_end(); \
    } while (0)
#define SPS_PHASE_END() sps_phase_end()

#define SPS_VALUE(name, value) \
    do { \
        SPS__SITE(sps__value_site, name, SPS_KIND_VALUE); \
        if (SPS__LIKELY(sps__enabled)) \
            sps_value(&sps__value_site, (double)(value)); \
    } while (0)

#define SPS_COUNT(name, n) \
    do { \
        SPS__SITE(sps__count_site, name, SPS_KIND_COUNTER); \
        if (SPS__LIKELY(sps__enabled)) \
            sps_count(&sps__count_site, (uint64_t)(n)); \
    } while (0)

#else /* STEPSCOPE_DISABLE: nothing is emitted, arguments still type-check */

#define SPS__TYPECHECK_NAME(name) ((void)sizeof(*(name) == 'x'))
#define SPS_ZONE_BEGIN(var, name) sps_zone_t var = (SPS__TYPECHECK_NAME(name), (sps_zone_t)0)
#define SPS_STEP_BEGIN(var) sps_zone_t var = (sps_zone_t)0
#define SPS_MICROSTEP_BEGIN(var) sps_zone_t var = (sps_zone_t)0
#define SPS_ZONE_END(var) ((void)(var))
#define SPS_STEP_END(var) ((void)(var))
#define SPS_MICROSTEP_END(var) ((void)(var))
#define SPS_WAIT_BEGIN(var, name) sps_zone_t var = (SPS__TYPECHECK_NAME(name), (sps_zone_t)0)
#define SPS_WAIT_END(var) ((void)(var))
#define SPS_WAIT(name) SPS__TYPECHECK_NAME(name)
#define SPS_ZONE(name) SPS__TYPECHECK_NAME(name)
#define SPS_STEP() ((void)0)
#define SPS_STEP_NAMED(name) SPS__TYPECHECK_NAME(name)
#define SPS_MICROSTEP() ((void)0)
#define SPS_PHASE(name) SPS__TYPECHECK_NAME(name)
#define SPS_PHASE_END() ((void)0)
#define SPS_VALUE(name, value) (SPS__TYPECHECK_NAME(name), (void)sizeof((double)(value)))
#define SPS_COUNT(name, n) (SPS__TYPECHECK_NAME(name), (void)sizeof((uint64_t)(n)))

#endif /* STEPSCOPE_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* STEPSCOPE_H */
