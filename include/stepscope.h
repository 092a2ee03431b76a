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
    SPS_ESTATE = -6    /* the call is not valid in the library's current state */
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
    SPS_KIND_COUNTER = 5    /* a running total: samples, tokens, FLOPs, ... */
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
 * the same (name, kind) always returns the same site.  Takes a lock: call it
 * once and keep the pointer, not once per event.  Returns NULL when out of
 * memory or when name is NULL or empty.
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

/* Record a value (site->kind must be SPS_KIND_VALUE), e.g. the loss. */
SPS_API void sps_value(struct sps_site *site, double value);

/* Add n to a counter (site->kind must be SPS_KIND_COUNTER). */
SPS_API void sps_count(struct sps_site *site, uint64_t n);

/* Name the calling thread in the record (at most 31 bytes are kept). */
SPS_API void sps_thread_name(const char *name);

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

/* ------------------------------------------------------------------ reports */

/*
 * Write DIR/report.json for this process now (standalone use; under
 * `stepscope run` the CLI writes the report).  Creates DIR if needed and
 * replaces the file atomically.  Returns 0 or an SPS_E* code; on failure
 * errbuf (when not NULL) receives a one-line reason.  Not async-signal-safe.
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
#define SPS__SCOPED(var, name, kind) SPS__SCOPED2(var, name, kind)
#define SPS__SCOPED2(var, name, kind) \
    SPS__SITE(SPS__CAT(var, _site), name, kind); \
    __attribute__((cleanup(sps__zone_cleanup), unused)) sps_zone_t var = \
        SPS__BEGIN(&SPS__CAT(var, _site))
#endif

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
#define SPS_ZONE(name) SPS__TYPECHECK_NAME(name)
#define SPS_STEP() ((void)0)
#define SPS_STEP_NAMED(name) SPS__TYPECHECK_NAME(name)
#define SPS_MICROSTEP() ((void)0)
#define SPS_VALUE(name, value) (SPS__TYPECHECK_NAME(name), (void)sizeof((double)(value)))
#define SPS_COUNT(name, n) (SPS__TYPECHECK_NAME(name), (void)sizeof((uint64_t)(n)))

#endif /* STEPSCOPE_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* STEPSCOPE_H */
