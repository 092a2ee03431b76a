/*
 * cuda_zone.c - GPU time of zones through CUDA events (the "cuda" source).
 *
 * libcuda is loaded at run time (dlopen), so the library builds and runs
 * where no driver is installed; see cuda_abi.h for the few calls used.
 *
 * A GPU zone records an event on the stream at its begin and another at its
 * end.  The GPU reaches them later than the CPU does, so the pair is left
 * pending and resolved without waiting: cuEventQuery says whether the end
 * event has been reached (CUDA_ERROR_NOT_READY: not yet), and only then is
 * cuEventElapsedTime asked.  Nothing here calls any synchronising entry
 * point: a profiler that waited for the GPU would serialise the CPU and the
 * GPU it is meant to observe.
 *
 * Events are costly to create (a driver call that may allocate), so each
 * thread keeps a pool of pairs created once and reused; the pool belongs to
 * its thread alone, which is why begin and end take no lock.  A pair that
 * an event call refuses is given up and counted, never retried forever.
 *
 * Placement on the GPU's timeline (sps_gpu_spans_since, the record's GPU
 * spans): each pool keeps, per CUDA context, an epoch: an event recorded
 * on the stream of the zone being begun, just before its start event, with
 * the CPU clock read right before that cuEventRecord.  A resolved pair is
 * placed at epoch_cpu + cuEventElapsedTime(epoch, start); its length is
 * cuEventElapsedTime(start, end), exact as before.  The GPU reaches the
 * epoch no earlier than the CPU recorded it (it cannot run what was not
 * yet queued), later by q = the work queued on that stream ahead of it
 * plus the launch latency, so every span of the epoch is placed q early,
 * never late, and spans of one epoch are exact against one another.  q is
 * bounded by the queue the epoch's stream had when it was recorded: it is
 * recorded at a zone's begin, on that zone's stream, which in a loop the
 * CPU keeps a step or so ahead of is at most that; and it is renewed
 * (below) about once a second, so one unlucky epoch does not stay.  Each
 * renewed epoch is placed at its CPU reading or at the previous epoch plus
 * the GPU time between them (less an allowance for the clocks' drift),
 * whichever is later (chain_epoch): q never grows from one epoch to the
 * next (beyond the allowance), and a busy stream's spans keep to one
 * timeline across renewals.  ("placed at epoch_cpu" above is, for a
 * renewed epoch, at that place.)
 *
 * cuEventElapsedTime answers a float of milliseconds: 24 bits, so 61 ns of
 * rounding at 1 s from the epoch but 1 us at 16 s.  The epoch is rotated:
 * two events alternate, a pair remembers which one it measures from, and
 * the older is recorded again (becoming the current one) once the current
 * is over ROTATE_NS old on the CPU or a span landed over ROTATE_NS from
 * it, but only when no pending pair still measures from the older.
 *
 * Fork: CUDA does not survive fork() (a child of a process that
 * initialised the driver must not call it before exec), and the events in
 * a pool belong to the parent's driver state.  The child handler (from
 * the library's load on) drops the forking thread's pool without a driver
 * call and makes the child's GPU zones CPU zones with that reason, also
 * where the parent's libcuda was loaded by another (PyTorch) before this
 * library made a GPU zone; the parent keeps and resolves its own pairs.  The state and the totals are published in the record header
 * (record_format.h: cuda_*) so that the report can say whether GPU zones
 * worked, and why not.
 */
#include "gpu/cuda_zone.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "gpu/cuda_abi.h"
#include "record_format.h"
#include "recorder.h"
#include "stepscope.h"
#include "platform/env_path.h"

typedef sps_cu_result (*cu_init_fn)(unsigned int flags);
typedef sps_cu_result (*cu_version_fn)(int *version);
typedef sps_cu_result (*cu_ctx_current_fn)(sps_cu_context *ctx);
typedef sps_cu_result (*cu_event_create_fn)(sps_cu_event *event, unsigned int flags);
typedef sps_cu_result (*cu_event_record_fn)(sps_cu_event event, sps_cu_stream stream);
typedef sps_cu_result (*cu_event_query_fn)(sps_cu_event event);
typedef sps_cu_result (*cu_event_elapsed_fn)(float *ms, sps_cu_event start, sps_cu_event end);
typedef sps_cu_result (*cu_event_destroy_fn)(sps_cu_event event);
typedef sps_cu_result (*cu_error_string_fn)(sps_cu_result error, const char **text);
typedef sps_cu_result (*cu_mem_info_fn)(size_t *free_bytes, size_t *total_bytes);
typedef sps_cu_result (*cu_ctx_set_fn)(sps_cu_context ctx);

/* Pairs per thread: enough for the GPU to run a few steps of a few dozen
 * zones behind the CPU (the usual queue depth of an asynchronous loop). */
#define POOL_PAIRS 256u
/* Resolve before a begin when fewer pairs than this are free. */
#define POOL_LOW (POOL_PAIRS / 4u)
/* Value sites cached per thread, so resolving takes no lock. */
#define SITE_CACHE 32u
/* Contexts a thread keeps an epoch for; a pair in a further one is timed
 * but not placed. */
#define EPOCH_SLOTS 4u
/* Epoch rotation: the age (CPU) or span offset (GPU) past which it is
 * renewed.  1 s keeps float ms rounding under 61 ns at that offset. */
#define ROTATE_NS 1000000000ull
static uint64_t rotate_age_ns = ROTATE_NS, rotate_offset_ns = ROTATE_NS; /* tests change them */
static int place_spans = 1; /* 0: value-only, as before placement (bench_gpu_spans) */
/* How much faster than the CPU's the GPU's clock may run, in parts per
 * million: a chained epoch gives up this much of the GPU time it was
 * chained over, so it never lands after the truth (see chain_epoch). */
#define DRIFT_PPM 50.0
static double drift_ppm = DRIFT_PPM; /* tests change it */
/* Resolved spans a thread keeps for sps_gpu_spans_since (a power of 2). */
#define SPAN_RING 1024u

static struct {
    pthread_mutex_t lock;
    int loaded; /* 1 once load() ran; read with acquire */
    int available;
    int driver_version;
    void *lib;
    cu_ctx_current_fn ctx_current;
    cu_event_create_fn event_create;
    cu_event_record_fn event_record;
    cu_event_query_fn event_query;
    cu_event_elapsed_fn event_elapsed;
    cu_event_destroy_fn event_destroy;
    cu_error_string_fn error_string;
    cu_mem_info_fn mem_info; /* optional: NULL where libcuda lacks it */
    cu_ctx_set_fn ctx_set;   /* optional: for sps__cuda_use_context */
    char reason[192];
    /* process totals, added by flush() */
    uint64_t resolved, cpu_only, dropped, unresolved;
    int published;     /* the record header has the state (publish_locked) */
    int in_fork_child; /* this process was forked from one that had this library */
    int cuda_at_fork;  /* libcuda was in the process when it last forked (read before the fork) */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define FORK_REASON "forked from a process that had loaded libcuda: CUDA must not be used in a fork child before exec"

enum pair_state { PAIR_FREE = 0, PAIR_OPEN, PAIR_PENDING };

struct pair {
    sps_cu_event start, end;
    sps_cu_context ctx; /* the context the events were created in; NULL: none yet */
    sps_cu_stream stream;
    struct sps_site *site;
    uint32_t state; /* enum pair_state */
    uint8_t epoch;  /* the pool's epoch slot + 1 it measures from; 0: not placed */
    uint8_t which;  /* which of the slot's two events */
};

/* A thread's epoch in one context: two events that alternate, and the CPU
 * time each was last recorded at.  gen counts recordings; the current
 * event is ev[gen & 1]. */
struct epoch {
    sps_cu_context ctx; /* NULL: slot unused */
    sps_cu_event ev[2];
    uint8_t made[2];
    uint32_t gen;       /* 0: none recorded yet */
    uint32_t users[2];  /* open and pending pairs measuring from each */
    uint64_t cpu_ns[2];     /* sps_clock_ns() right before the record */
    uint64_t cpu_ticks[2];  /* the record clock's ticks, likewise */
    uint64_t at_ns[2];      /* where it is placed: cpu_ns, or later once chained */
    uint64_t at_ticks[2];   /* likewise in ticks */
    int chained;        /* the current one is placed for good (chain_epoch) */
    int rotate;         /* a span landed far from the current one: renew it */
};

struct site_map {
    struct sps_site *zone;
    struct sps_site *value;
};

/* A thread's pool.  free_idx is a stack of free pairs; pending lists the
 * ended ones in the order they ended. */
struct pool {
    struct pair pair[POOL_PAIRS];
    uint32_t free_idx[POOL_PAIRS];
    uint32_t nfree;
    uint32_t pending[POOL_PAIRS];
    uint32_t npending;
    struct site_map sites[SITE_CACHE];
    uint32_t nsites;
    struct epoch epochs[EPOCH_SLOTS];
    uint64_t span_seq; /* spans resolved so far; span[seq % SPAN_RING] */
    struct sps_gpu_span span[SPAN_RING];
};

/* Per-thread state.  The counts are this thread's since its last flush. */
struct gpu_tls {
    struct pool *pool;
    int used; /* began a GPU zone: step ends have something to do */
    uint64_t resolved, cpu_only, dropped, unresolved;
};
static __thread struct gpu_tls TG;

static pthread_key_t pool_key;
static pthread_once_t pool_key_once = PTHREAD_ONCE_INIT;
static int pool_key_made;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* ----------------------------------------------------------------- loading */

static const char *cu_error(sps_cu_result r) {
    const char *text = NULL;
    if (G.error_string && G.error_string(r, &text) == SPS_CUDA_SUCCESS && text && *text)
        return text;
    static _Thread_local char fallback[32];
    snprintf(fallback, sizeof fallback, "CUDA error %d", r);
    return fallback;
}

static void *sym(const char *const *names) {
    for (; *names; names++) {
        void *p = dlsym(G.lib, *names);
        if (p)
            return p;
    }
    return NULL;
}

/* The libcuda this library loads: STEPSCOPE_LIBCUDA, else libcuda.so.1. */
static const char *libcuda_path(void) {
    const char *path = sps__env_path("STEPSCOPE_LIBCUDA");
    return path ? path : "libcuda.so.1";
}

/* Whether libcuda is in the process now (loaded by anyone, PyTorch when
 * it initialises CUDA among them), without loading it. */
static int libcuda_present(void) {
    void *h = dlopen(libcuda_path(), RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    dlclose(h);
    return 1;
}

/* Load libcuda and initialise the driver.  Called with G.lock held. */
static void load_locked(void) {
    const char *path = libcuda_path();
    if (G.in_fork_child && G.cuda_at_fork) {
        /* the parent had libcuda when it forked (PyTorch loads it when it
         * initialises CUDA): the driver was very likely initialised there,
         * and a call into it here is undefined.  (Loaded by this process
         * after its fork, it is this process's own to use.) */
        snprintf(G.reason, sizeof G.reason, "%s", FORK_REASON);
        return;
    }
    G.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!G.lib) {
        const char *e = dlerror();
        snprintf(G.reason, sizeof G.reason, "cannot load %s: %s", path, e ? e : "unknown error");
        return;
    }
    /* versioned names first: cuda.h maps the plain names to these */
    static const char *const n_init[] = {"cuInit", NULL};
    static const char *const n_version[] = {"cuDriverGetVersion", NULL};
    static const char *const n_ctx[] = {"cuCtxGetCurrent", NULL};
    static const char *const n_create[] = {"cuEventCreate", NULL};
    static const char *const n_record[] = {"cuEventRecord", NULL};
    static const char *const n_query[] = {"cuEventQuery", NULL};
    static const char *const n_elapsed[] = {"cuEventElapsedTime_v2", "cuEventElapsedTime", NULL};
    static const char *const n_destroy[] = {"cuEventDestroy_v2", "cuEventDestroy", NULL};
    static const char *const n_error[] = {"cuGetErrorString", NULL};
    /* _v2 only: the unversioned export takes unsigned int outputs */
    static const char *const n_mem_info[] = {"cuMemGetInfo_v2", NULL};
    static const char *const n_ctx_set[] = {"cuCtxSetCurrent", NULL};
    cu_init_fn init = (cu_init_fn)sym(n_init);
    cu_version_fn version = (cu_version_fn)sym(n_version);
    G.ctx_current = (cu_ctx_current_fn)sym(n_ctx);
    G.event_create = (cu_event_create_fn)sym(n_create);
    G.event_record = (cu_event_record_fn)sym(n_record);
    G.event_query = (cu_event_query_fn)sym(n_query);
    G.event_elapsed = (cu_event_elapsed_fn)sym(n_elapsed);
    G.event_destroy = (cu_event_destroy_fn)sym(n_destroy);
    G.error_string = (cu_error_string_fn)sym(n_error); /* optional */
    G.mem_info = (cu_mem_info_fn)sym(n_mem_info);      /* optional: sps_cuda_mem_info says so */
    G.ctx_set = (cu_ctx_set_fn)sym(n_ctx_set);         /* optional, likewise */
    const char *missing = !init ? "cuInit" : !G.ctx_current ? "cuCtxGetCurrent" : !G.event_create ? "cuEventCreate"
                          : !G.event_record ? "cuEventRecord" : !G.event_query ? "cuEventQuery"
                          : !G.event_elapsed ? "cuEventElapsedTime" : !G.event_destroy ? "cuEventDestroy" : NULL;
    if (missing) {
        snprintf(G.reason, sizeof G.reason, "%s lacks %s", path, missing);
        return;
    }
    sps_cu_result r = init(0);
    if (r != SPS_CUDA_SUCCESS) {
        snprintf(G.reason, sizeof G.reason, "cuInit failed: %s", cu_error(r));
        return;
    }
    if (version && version(&G.driver_version) != SPS_CUDA_SUCCESS)
        G.driver_version = 0;
    G.available = 1;
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void register_fork_handlers(void) {
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The handlers are in place from the library's load, not only from its
 * first GPU zone: a child forked before that zone (a DataLoader worker of
 * a process whose PyTorch had already loaded libcuda and initialised the
 * driver) must know that it inherited libcuda (fork_prepare looks, in the
 * parent), so that load_locked() leaves the driver alone there too; a
 * child of a process without libcuda may load and use it. */
__attribute__((constructor)) static void fork_handlers_at_load(void) {
    pthread_once(&fork_once, register_fork_handlers);
}

static int cuda_ready(void) {
    if (__builtin_expect(!__atomic_load_n(&G.loaded, __ATOMIC_ACQUIRE), 0)) {
        /* before G.lock is first taken: a fork while another thread holds
         * it must not leave the child a lock nobody releases */
        pthread_once(&fork_once, register_fork_handlers);
        pthread_mutex_lock(&G.lock);
        if (!G.loaded) {
            load_locked();
            __atomic_store_n(&G.loaded, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&G.lock);
    }
    return G.available;
}

/* Copy the state and the totals into this process's record header, where
 * the report reads them (nothing when the process has no record yet).
 * Called with G.lock held, which serialises the writers; a reader of a
 * live record may see a reason being rewritten and forces a NUL. */
static void publish_locked(void) {
    struct sps_rec_header *h = sps__recorder_header();
    if (!h)
        return;
    h->cuda_driver_version = G.driver_version;
    snprintf(h->cuda_reason, sizeof h->cuda_reason, "%s", G.reason);
    __atomic_store_n(&h->cuda_resolved, G.resolved, __ATOMIC_RELAXED);
    __atomic_store_n(&h->cuda_cpu_only, G.cpu_only, __ATOMIC_RELAXED);
    __atomic_store_n(&h->cuda_dropped, G.dropped, __ATOMIC_RELAXED);
    __atomic_store_n(&h->cuda_unresolved, G.unresolved, __ATOMIC_RELAXED);
    __atomic_store_n(&h->cuda_state, G.available ? SPS_REC_CUDA_AVAILABLE : SPS_REC_CUDA_UNAVAILABLE,
                     __ATOMIC_RELEASE);
    __atomic_store_n(&G.published, 1, __ATOMIC_RELAXED);
}

/* The first reason a GPU zone fell back to the CPU is the one kept: later
 * ones are nearly always the same. */
static void note_reason(const char *text) {
    pthread_mutex_lock(&G.lock);
    if (!G.reason[0]) {
        snprintf(G.reason, sizeof G.reason, "%s", text);
        publish_locked();
    }
    pthread_mutex_unlock(&G.lock);
}

/* ------------------------------------------------------------------- pools */

static void epoch_destroy(struct epoch *e) {
    for (int k = 0; k < 2; k++)
        if (e->made[k])
            G.event_destroy(e->ev[k]);
    memset(e, 0, sizeof *e);
}

static void pool_destroy_events(struct pool *p) {
    if (!G.available)
        return;
    for (uint32_t i = 0; i < POOL_PAIRS; i++) {
        if (p->pair[i].ctx) {
            G.event_destroy(p->pair[i].start);
            G.event_destroy(p->pair[i].end);
        }
    }
    for (uint32_t i = 0; i < EPOCH_SLOTS; i++)
        epoch_destroy(&p->epochs[i]);
}

/* At thread exit.  Pending pairs are abandoned (counted into the process
 * totals): the recorder's own thread state may already be gone, so nothing
 * is recorded from here. */
static void pool_free(void *arg) {
    struct pool *p = arg;
    if (!p)
        return;
    pthread_mutex_lock(&G.lock);
    G.unresolved += p->npending;
    publish_locked();
    pthread_mutex_unlock(&G.lock);
    pool_destroy_events(p);
    free(p);
}

static void make_key(void) {
    pool_key_made = pthread_key_create(&pool_key, pool_free) == 0;
}

static struct pool *pool_get(void) {
    if (TG.pool)
        return TG.pool;
    struct pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    for (uint32_t i = 0; i < POOL_PAIRS; i++)
        p->free_idx[i] = POOL_PAIRS - 1 - i;
    p->nfree = POOL_PAIRS;
    pthread_once(&pool_key_once, make_key);
    (void)pthread_setspecific(pool_key, p);
    TG.pool = p;
    return p;
}

static void release(struct pool *p, uint32_t i) {
    struct pair *q = &p->pair[i];
    if (q->epoch)
        p->epochs[q->epoch - 1].users[q->which]--;
    q->epoch = 0;
    q->state = PAIR_FREE;
    q->site = NULL;
    p->free_idx[p->nfree++] = i;
}

/* ------------------------------------------------------------------ epochs */

/* The thread's epoch slot for ctx: its own, or an unused one, or else one
 * no pair measures from any more (its events, of another context, are
 * destroyed).  NULL when every slot is in use. */
static struct epoch *epoch_slot(struct pool *p, sps_cu_context ctx) {
    struct epoch *unused = NULL, *idle = NULL;
    for (uint32_t i = 0; i < EPOCH_SLOTS; i++) {
        struct epoch *e = &p->epochs[i];
        if (e->ctx == ctx)
            return e;
        if (!e->ctx && !unused)
            unused = e;
        else if (e->ctx && !idle && !(e->users[0] | e->users[1]))
            idle = e;
    }
    struct epoch *spare = unused ? unused : idle;
    if (spare && spare->ctx)
        epoch_destroy(spare);
    if (spare)
        spare->ctx = ctx;
    return spare;
}

/* Record epoch event k of e on stream, reading the CPU clock right before
 * (so the GPU reaches it no earlier than that reading).  0 or -1. */
static int epoch_record(struct epoch *e, int k, sps_cu_stream stream) {
    if (!e->made[k]) {
        if (G.event_create(&e->ev[k], SPS_CU_EVENT_DEFAULT) != SPS_CUDA_SUCCESS)
            return -1;
        e->made[k] = 1;
    }
    uint64_t ns = sps__mono_ns();
    uint64_t ticks = sps__ticks();
    if (G.event_record(e->ev[k], stream) != SPS_CUDA_SUCCESS)
        return -1;
    e->cpu_ns[k] = e->at_ns[k] = ns;
    e->cpu_ticks[k] = e->at_ticks[k] = ticks;
    e->gen++;
    e->chained = e->gen == 1; /* the first has nothing to chain onto */
    e->rotate = 0;
    return 0;
}

/*
 * Place a renewed epoch for good, before the first pair placed from it:
 * where its CPU reading says (the GPU reached it later, by its own q), or
 * where the previous epoch plus the GPU time between them says, whichever
 * is later.  Both are no later than the GPU reached it (the chained one
 * inherits the previous epoch's q, less DRIFT_PPM of the time chained
 * over in case the GPU's clock runs fast), so the later is the nearer:
 * q only shrinks from epoch to epoch, and where a stream stays busy the
 * spans of consecutive epochs keep to one timeline.  Returns NOT_READY
 * while either epoch is not reached; an error leaves the CPU reading.
 * The previous event is not recorded again before this ran (epoch_assign
 * waits for e->chained).
 */
static sps_cu_result chain_epoch(struct epoch *e) {
    int cur = (int)(e->gen & 1u), prev = cur ^ 1;
    float d_ms = 0;
    sps_cu_result r = G.event_query(e->ev[cur]);
    if (r == SPS_CUDA_SUCCESS)
        r = G.event_query(e->ev[prev]);
    if (r == SPS_CUDA_SUCCESS)
        r = G.event_elapsed(&d_ms, e->ev[prev], e->ev[cur]);
    if (r == SPS_CUDA_ERROR_NOT_READY)
        return r;
    e->chained = 1;
    if (r != SPS_CUDA_SUCCESS)
        return SPS_CUDA_SUCCESS;
    double d = (double)d_ms * 1e6;
    double ns = (double)(int64_t)(e->at_ns[prev] - e->at_ns[cur]) + d - (d < 0 ? -d : d) * drift_ppm * 1e-6;
    if (ns > 0) { /* the chained place is the later */
        int64_t later = (int64_t)(ns + 0.5);
        e->at_ns[cur] += (uint64_t)later;
        e->at_ticks[cur] += (uint64_t)(int64_t)((double)later * sps__clock.ticks_per_second * 1e-9 + 0.5);
    }
    return SPS_CUDA_SUCCESS;
}

/* Give pair q, about to record its start on stream, the epoch it will be
 * placed from: the current one, renewed first when it is old and the other
 * event is free.  A pair that gets none is timed, not placed. */
static void epoch_assign(struct pool *p, struct pair *q, sps_cu_context ctx, sps_cu_stream stream) {
    q->epoch = 0;
    if (__builtin_expect(!place_spans, 0))
        return;
    struct epoch *e = epoch_slot(p, ctx);
    if (!e)
        return;
    int cur = (int)(e->gen & 1u);
    /* the age in ticks: a TSC read, no system call, on every begin */
    int due = e->gen && (e->rotate || (double)(sps__ticks() - e->cpu_ticks[cur]) >=
                                          (double)rotate_age_ns * sps__clock.ticks_per_second * 1e-9);
    if (due && !e->chained)
        (void)chain_epoch(e); /* none of its pairs placed yet: the renewal waits for this */
    int renew = e->gen == 0 || (due && e->users[cur ^ 1] == 0 && e->chained);
    if (renew && epoch_record(e, cur ^ 1, stream) != 0 && e->gen == 0)
        return; /* none yet, and none could be recorded */
    /* a failed renewal keeps the current one: placed, if less finely */
    q->which = (uint8_t)(e->gen & 1u);
    q->epoch = (uint8_t)(e - p->epochs + 1);
    e->users[q->which]++;
}

/* The "<zone>.gpu_ms" value site of a zone site. */
static struct sps_site *value_site(struct pool *p, struct sps_site *zone) {
    for (uint32_t i = 0; i < p->nsites; i++)
        if (p->sites[i].zone == zone)
            return p->sites[i].value;
    char name[160];
    snprintf(name, sizeof name, "%s.gpu_ms", zone->name ? zone->name : "?");
    struct sps_site *v = sps_site_get(name, SPS_KIND_VALUE);
    if (v && p->nsites < SITE_CACHE)
        p->sites[p->nsites++] = (struct site_map){zone, v};
    return v;
}

/* ms of cuEventElapsedTime as ns, rounded to the nearest. */
static int64_t ms_to_ns(float ms) {
    double ns = (double)ms * 1e6;
    return (int64_t)(ns < 0 ? ns - 0.5 : ns + 0.5);
}

/* Where pair q ran, from its epoch: *start_ns, and the start and end in
 * the record clock's ticks.  Returns SPS_CUDA_SUCCESS, NOT_READY (the
 * epoch, on another stream, is not reached yet), or another error (the
 * pair is then timed but not placed). */
static sps_cu_result place(struct pool *p, const struct pair *q, int64_t dur_ns, uint64_t *start_ns,
                           uint64_t *start_ticks, uint64_t *end_ticks) {
    struct epoch *e = &p->epochs[q->epoch - 1];
    float off_ms = 0;
    sps_cu_result r = SPS_CUDA_SUCCESS;
    if (!e->chained && q->which == (e->gen & 1u) && (r = chain_epoch(e)) != SPS_CUDA_SUCCESS)
        return r;
    r = G.event_query(e->ev[q->which]);
    if (r == SPS_CUDA_SUCCESS)
        r = G.event_elapsed(&off_ms, e->ev[q->which], q->start);
    if (r != SPS_CUDA_SUCCESS)
        return r;
    int64_t off = ms_to_ns(off_ms);
    if ((uint64_t)(off < 0 ? -off : off) >= rotate_offset_ns && q->which == (e->gen & 1u))
        e->rotate = 1; /* far from the current epoch: the next begin renews it */
    *start_ns = e->at_ns[q->which] + (uint64_t)off;
    double per_ns = sps__clock.ticks_per_second / 1e9;
    double from = (double)off * per_ns, len = (double)dur_ns * per_ns;
    *start_ticks = e->at_ticks[q->which] + (uint64_t)(int64_t)(from < 0 ? from - 0.5 : from + 0.5);
    *end_ticks = *start_ticks + (uint64_t)(len + 0.5);
    return SPS_CUDA_SUCCESS;
}

/* A resolved pair: its "<zone>.gpu_ms" value, its GPU-span event in the
 * record (when placed), and its entry in the thread's span ring. */
static void resolved(struct pool *p, const struct pair *q, float ms, int placed, uint64_t start_ns,
                     uint64_t start_ticks, uint64_t end_ticks) {
    struct sps_site *v = value_site(p, q->site);
    if (v)
        sps_value(v, (double)ms);
    int64_t dur = ms_to_ns(ms);
    if (placed)
        sps__record_gpu_span(q->site, start_ticks, end_ticks, (uint64_t)(uintptr_t)q->stream);
    struct sps_gpu_span *s = &p->span[p->span_seq % SPAN_RING];
    s->seq = ++p->span_seq;
    s->site = q->site;
    s->stream = q->stream;
    s->start_ns = placed ? start_ns : 0;
    s->end_ns = placed ? start_ns + (uint64_t)(dur > 0 ? dur : 0) : 0;
    s->gpu_ms = (double)ms;
    TG.resolved++;
}

/* Resolve the pending pairs whose GPU work is done.  Never waits. */
static void resolve(struct pool *p) {
    uint32_t keep = 0;
    for (uint32_t k = 0; k < p->npending; k++) {
        uint32_t i = p->pending[k];
        struct pair *q = &p->pair[i];
        sps_cu_result r = G.event_query(q->end);
        float ms = 0;
        if (r == SPS_CUDA_SUCCESS)
            r = G.event_elapsed(&ms, q->start, q->end);
        uint64_t start_ns = 0, start_ticks = 0, end_ticks = 0;
        int placed = 0;
        if (r == SPS_CUDA_SUCCESS && q->epoch) {
            sps_cu_result pr = place(p, q, ms_to_ns(ms), &start_ns, &start_ticks, &end_ticks);
            if (pr == SPS_CUDA_ERROR_NOT_READY)
                r = pr;
            placed = pr == SPS_CUDA_SUCCESS;
        }
        if (r == SPS_CUDA_ERROR_NOT_READY) {
            p->pending[keep++] = i; /* later */
            continue;
        }
        if (r == SPS_CUDA_SUCCESS)
            resolved(p, q, ms, placed, start_ns, start_ticks, end_ticks);
        else
            TG.unresolved++;
        release(p, i);
    }
    p->npending = keep;
}

/* Add the thread's counts to the record and the process totals. */
static void flush_counts(void) {
    static const char *const names[] = {"cuda.gpu_zones_cpu_only", "cuda.gpu_zones_dropped",
                                        "cuda.gpu_zones_unresolved"};
    uint64_t *counts[] = {&TG.cpu_only, &TG.dropped, &TG.unresolved};
    for (int i = 0; i < 3; i++)
        if (*counts[i])
            sps_count(sps_site_get(names[i], SPS_KIND_COUNTER), *counts[i]);
    if (!(TG.resolved | TG.cpu_only | TG.dropped | TG.unresolved))
        return;
    pthread_mutex_lock(&G.lock);
    G.resolved += TG.resolved;
    G.cpu_only += TG.cpu_only;
    G.dropped += TG.dropped;
    G.unresolved += TG.unresolved;
    publish_locked();
    pthread_mutex_unlock(&G.lock);
    TG.resolved = TG.cpu_only = TG.dropped = TG.unresolved = 0;
}

static void gpu_step_end(void);

/* Record the start event; returns the pair's index + 1, or 0 for a zone
 * that is CPU-only. */
static uint32_t gpu_begin(struct sps_site *site, sps_cu_stream stream) {
    if (__builtin_expect(!TG.used, 0)) {
        /* this thread's step ends now have GPU zones to resolve: ask the
         * recorder to call back at each one (it never calls up itself) */
        TG.used = 1;
        sps__recorder_set_step_end_hook(gpu_step_end);
    }
    int ready = cuda_ready();
    if (__builtin_expect(!__atomic_load_n(&G.published, __ATOMIC_RELAXED), 0)) {
        /* the process's first GPU zone since it has a record: the report
         * learns whether libcuda works here before any count is flushed */
        pthread_mutex_lock(&G.lock);
        publish_locked();
        pthread_mutex_unlock(&G.lock);
    }
    if (!ready) {
        TG.cpu_only++;
        return 0;
    }
    sps_cu_context ctx = NULL;
    sps_cu_result r = G.ctx_current(&ctx);
    if (r != SPS_CUDA_SUCCESS || !ctx) {
        char why[160];
        snprintf(why, sizeof why, "no current CUDA context on a thread that began a GPU zone%s%s",
                 r != SPS_CUDA_SUCCESS ? ": " : "", r != SPS_CUDA_SUCCESS ? cu_error(r) : "");
        note_reason(why);
        TG.cpu_only++;
        return 0;
    }
    struct pool *p = pool_get();
    if (!p) {
        TG.dropped++;
        return 0;
    }
    if (p->nfree < POOL_LOW)
        resolve(p);
    if (!p->nfree) {
        TG.dropped++; /* the GPU is far behind: never wait for it */
        return 0;
    }
    uint32_t i = p->free_idx[p->nfree - 1];
    struct pair *q = &p->pair[i];
    if (q->ctx != ctx) {
        /* first use, or the thread switched context (another GPU):
         * events belong to the context they were created in */
        if (q->ctx) {
            G.event_destroy(q->start);
            G.event_destroy(q->end);
            q->ctx = NULL;
        }
        r = G.event_create(&q->start, SPS_CU_EVENT_DEFAULT);
        if (r == SPS_CUDA_SUCCESS) {
            r = G.event_create(&q->end, SPS_CU_EVENT_DEFAULT);
            if (r != SPS_CUDA_SUCCESS)
                G.event_destroy(q->start);
        }
        if (r != SPS_CUDA_SUCCESS) {
            char why[160];
            snprintf(why, sizeof why, "cuEventCreate failed: %s", cu_error(r));
            note_reason(why);
            TG.unresolved++;
            return 0;
        }
        q->ctx = ctx;
    }
    epoch_assign(p, q, ctx, stream);
    r = G.event_record(q->start, stream);
    if (r != SPS_CUDA_SUCCESS) {
        if (q->epoch)
            p->epochs[q->epoch - 1].users[q->which]--;
        q->epoch = 0;
        TG.unresolved++;
        return 0;
    }
    p->nfree--;
    q->state = PAIR_OPEN;
    q->stream = stream;
    q->site = site;
    return i + 1;
}

static void gpu_end(uint32_t slot) {
    struct pool *p = TG.pool;
    uint32_t i = slot - 1;
    if (!p || i >= POOL_PAIRS || p->pair[i].state != PAIR_OPEN)
        return; /* ended twice, or on another thread: not this thread's pair */
    struct pair *q = &p->pair[i];
    if (G.event_record(q->end, q->stream) != SPS_CUDA_SUCCESS) {
        TG.unresolved++;
        release(p, i);
        return;
    }
    q->state = PAIR_PENDING;
    p->pending[p->npending++] = i;
}

/* ----------------------------------------------------------------- public */

sps_gpu_zone_t sps_gpu_zone_begin(struct sps_site *site, void *cuda_stream) {
    if (!sps__enabled || !site)
        return 0;
    /* the CPU zone first, so its time includes recording the event */
    sps_zone_t z = sps_zone_begin(site);
    if (!z)
        return 0; /* not recorded (too deep, thinned): no GPU pair either */
    uint32_t slot = gpu_begin(site, (sps_cu_stream)cuda_stream);
    return (sps_gpu_zone_t)slot << 32 | z;
}

void sps_gpu_zone_end(sps_gpu_zone_t token) {
    if (!token)
        return;
    uint32_t slot = (uint32_t)(token >> 32);
    if (slot)
        gpu_end(slot);
    sps_zone_end((sps_zone_t)token);
}

int sps_gpu_flush(void) {
    if (TG.pool && G.available)
        resolve(TG.pool);
    flush_counts();
    return TG.pool ? (int)TG.pool->npending : 0;
}

size_t sps_gpu_spans_since(uint64_t since_seq, struct sps_gpu_span *out, size_t max) {
    struct pool *p = TG.pool;
    if (!p || !out || !max)
        return 0;
    if (G.available)
        resolve(p);
    uint64_t last = p->span_seq;
    if (since_seq >= last)
        return 0;
    uint64_t oldest = last > SPAN_RING ? last - SPAN_RING + 1 : 1;
    uint64_t from = since_seq + 1 > oldest ? since_seq + 1 : oldest;
    size_t n = 0;
    for (uint64_t seq = from; seq <= last && n < max; seq++)
        out[n++] = p->span[(seq - 1) % SPAN_RING];
    return n;
}

#define WAIT_FIRST_NS 50000u    /* the first sleep between polls */
#define WAIT_LONGEST_NS 1000000u /* the longest */

int sps_gpu_wait(double timeout_s) {
    struct pool *p = TG.pool;
    if (!p || !G.available) {
        flush_counts();
        return p ? (int)p->npending : 0;
    }
    /* !(x > 0) also takes NaN; past a day is as good as for ever */
    uint64_t limit = !(timeout_s > 0) ? 0 : timeout_s > 86400.0 ? 86400000000000ull : (uint64_t)(timeout_s * 1e9);
    uint64_t t0 = sps__mono_ns(), nap = WAIT_FIRST_NS;
    for (;;) {
        resolve(p);
        uint64_t waited = sps__mono_ns() - t0;
        if (!p->npending || waited >= limit)
            break;
        uint64_t left = limit - waited, ns = nap < left ? nap : left;
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        nanosleep(&ts, NULL); /* woken early by a signal: just polls sooner */
        nap = nap * 2 < WAIT_LONGEST_NS ? nap * 2 : WAIT_LONGEST_NS;
    }
    flush_counts();
    return (int)p->npending;
}

/* The recorder's step-end hook (registered by gpu_begin): a step end is
 * where a loop's GPU work of earlier steps has usually finished, so the
 * calling thread resolves its finished GPU zones here (never waits).
 * Cheap on a thread that never began one. */
static void gpu_step_end(void) {
    if (__builtin_expect(!TG.used, 1))
        return;
    (void)sps_gpu_flush();
}

int sps_cuda_status(struct sps_cuda_status *out) {
    if (!out)
        return SPS_EINVAL;
    memset(out, 0, sizeof *out);
    (void)cuda_ready();
    pthread_mutex_lock(&G.lock);
    out->available = G.available;
    out->driver_version = G.driver_version;
    snprintf(out->reason, sizeof out->reason, "%s", G.reason);
    out->resolved = G.resolved;
    out->cpu_only = G.cpu_only;
    out->dropped = G.dropped;
    out->unresolved = G.unresolved;
    pthread_mutex_unlock(&G.lock);
    return 0;
}

/* ------------------------------------------------------------ device memory */

/* SPS_EUNSUPPORTED, with why saying what keeps libcuda from use here. */
static int cuda_unavailable(char *why, size_t why_len) {
    pthread_mutex_lock(&G.lock);
    snprintf(why, why_len, "libcuda unavailable: %s", G.reason);
    pthread_mutex_unlock(&G.lock);
    return SPS_EUNSUPPORTED;
}

int sps__cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes, char *why, size_t why_len) {
    char scratch[8];
    if (!why || !why_len) {
        why = scratch;
        why_len = sizeof scratch;
    }
    if (!free_bytes || !total_bytes) {
        snprintf(why, why_len, "free_bytes and total_bytes must not be NULL");
        return SPS_EINVAL;
    }
    if (!cuda_ready())
        return cuda_unavailable(why, why_len);
    if (!G.mem_info) {
        snprintf(why, why_len, "%s lacks cuMemGetInfo_v2", libcuda_path());
        return SPS_EUNSUPPORTED;
    }
    /* asked first: the driver would answer CUDA_ERROR_INVALID_CONTEXT, but
     * a NULL context says it plainly, without a driver error to decode */
    void *ctx = NULL;
    int rc = sps__cuda_context(&ctx, why, why_len);
    if (rc)
        return rc;
    if (!ctx) {
        snprintf(why, why_len, "the calling thread has no current CUDA context");
        return SPS_ESTATE;
    }
    size_t f = 0, t = 0;
    sps_cu_result r = G.mem_info(&f, &t); /* does not wait for the GPU */
    if (r != SPS_CUDA_SUCCESS) {
        snprintf(why, why_len, "cuMemGetInfo_v2 failed: %s", cu_error(r));
        return r == SPS_CUDA_ERROR_INVALID_CONTEXT ? SPS_ESTATE : SPS_EIO;
    }
    *free_bytes = f;
    *total_bytes = t;
    return 0;
}

int sps_cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes) {
    return sps__cuda_mem_info(free_bytes, total_bytes, NULL, 0);
}

int sps__cuda_context(void **ctx, char *why, size_t why_len) {
    if (!cuda_ready())
        return cuda_unavailable(why, why_len);
    sps_cu_context c = NULL;
    sps_cu_result r = G.ctx_current(&c);
    if (r != SPS_CUDA_SUCCESS) {
        snprintf(why, why_len, "cuCtxGetCurrent failed: %s", cu_error(r));
        return SPS_EIO;
    }
    *ctx = c;
    return 0;
}

int sps__cuda_use_context(void *ctx, char *why, size_t why_len) {
    if (!cuda_ready())
        return cuda_unavailable(why, why_len);
    if (!G.ctx_set) {
        snprintf(why, why_len, "%s lacks cuCtxSetCurrent", libcuda_path());
        return SPS_EUNSUPPORTED;
    }
    sps_cu_result r = G.ctx_set((sps_cu_context)ctx);
    if (r != SPS_CUDA_SUCCESS) {
        snprintf(why, why_len, "cuCtxSetCurrent failed: %s", cu_error(r));
        return SPS_EIO;
    }
    return 0;
}

void sps__cuda_reset(void) {
    if (TG.pool) {
        pool_destroy_events(TG.pool);
        free(TG.pool);
        TG.pool = NULL;
        (void)pthread_setspecific(pool_key, NULL);
    }
    memset(&TG, 0, sizeof TG);
    pthread_mutex_lock(&G.lock);
    if (G.lib)
        dlclose(G.lib);
    G.lib = NULL;
    G.available = 0;
    G.driver_version = 0;
    G.reason[0] = 0;
    G.resolved = G.cpu_only = G.dropped = G.unresolved = 0;
    G.published = 0;
    G.ctx_current = NULL;
    G.error_string = NULL;
    G.mem_info = NULL;
    G.ctx_set = NULL;
    __atomic_store_n(&G.loaded, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&G.lock);
}

void sps__cuda_set_rotation(uint64_t cpu_age_ns, uint64_t gpu_offset_ns, double ppm) {
    rotate_age_ns = cpu_age_ns ? cpu_age_ns : ROTATE_NS;
    rotate_offset_ns = gpu_offset_ns ? gpu_offset_ns : ROTATE_NS;
    drift_ppm = ppm >= 0 ? ppm : DRIFT_PPM;
}

void sps__cuda_set_placement(int on) {
    place_spans = on;
}

int sps__cuda_epoch(uint64_t *cpu_ns, uint32_t *gen) {
    sps_cu_context ctx = NULL;
    if (!TG.pool || !G.available || G.ctx_current(&ctx) != SPS_CUDA_SUCCESS)
        return -1;
    for (uint32_t i = 0; i < EPOCH_SLOTS; i++) {
        const struct epoch *e = &TG.pool->epochs[i];
        if (e->ctx == ctx && e->gen) {
            *cpu_ns = e->cpu_ns[e->gen & 1u]; /* the reading; where it is placed may be later */
            *gen = e->gen;
            return 0;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------- fork */

static void fork_prepare(void) {
    /* in the parent, where dlopen may be called: whether the child
     * inherits a libcuda this library has not loaded itself */
    int present = !__atomic_load_n(&G.loaded, __ATOMIC_ACQUIRE) && libcuda_present();
    pthread_mutex_lock(&G.lock); /* the child gets a consistent G */
    G.cuda_at_fork = present;
}

static void fork_parent(void) {
    pthread_mutex_unlock(&G.lock);
}

/* In the child, on the thread that forked (the only one there).  No call
 * into libcuda: the driver's state is the parent's.  The forking thread's
 * pool is freed without destroying its events (the parent still owns and
 * resolves them; counting them here too would count them twice in the
 * run); the other threads' pools are unreachable and left as they are. */
static void fork_child(void) {
    /* this thread took it in fork_prepare: release it as the parent does
     * (re-initialising it instead would leave tools that track lock
     * ownership, TSan among them, believing it held for ever) */
    pthread_mutex_unlock(&G.lock);
    struct pool *p = TG.pool;
    memset(&TG, 0, sizeof TG);
    if (pool_key_made)
        (void)pthread_setspecific(pool_key, NULL);
    free(p);
    G.resolved = G.cpu_only = G.dropped = G.unresolved = 0;
    G.published = 0; /* the child gets a record of its own */
    G.in_fork_child = 1;
    if (G.available) {
        G.available = 0;
        snprintf(G.reason, sizeof G.reason, "%s", FORK_REASON);
    }
    /* not loaded yet: load_locked() looks before it loads; failed to
     * load: the same reason holds in the child */
}
