/*
 * fake_cuda.c - a stand-in for libcuda.so.1 that the GPU-zone tests load
 * through STEPSCOPE_LIBCUDA.  It implements the driver calls the library
 * makes (declared in src/gpu/cuda_abi.h) over a fake GPU the test drives:
 *
 *   - a clock in milliseconds that only fake_cuda_advance() moves;
 *   - one queue of recorded events, in the order they were recorded (all
 *     streams): fake_cuda_complete(n) lets the GPU reach the next n of them
 *     not reached yet at the current clock, so cuEventQuery answers
 *     CUDA_ERROR_NOT_READY until then and cuEventElapsedTime gives exact
 *     differences;
 *   - streams that run concurrently: each stream (a CUstream handle; NULL,
 *     the legacy default stream, is one too) has its own queue of the
 *     events recorded on it and its own clock, the common clock plus what
 *     fake_cuda_stream_advance(stream, ms) added to that stream alone.
 *     fake_cuda_stream_complete(stream, n) lets that stream reach its next
 *     n events (all for n < 0) at its own clock, and returns how many it
 *     reached.  So stream A busy [0, 10) ms and stream B busy [5, 12) ms
 *     is: a GPU zone on A, one on B, then stream_complete(A, 2) (the
 *     library's epoch event, which the first GPU zone of a thread records
 *     on its stream before its start event, and A's start);
 *     stream_advance(B, 5); stream_complete(B, 1); stream_advance(A, 10);
 *     stream_complete(A, 1); stream_advance(B, 7); stream_complete(B, 1).
 *     The handles are plain pointers (ctypes: c_void_p; None or 0 for the
 *     legacy default stream).  fake_cuda_stream_clock(stream) reads a
 *     stream's clock, fake_cuda_stream_pending(stream) how many of its
 *     events are recorded and not reached, fake_cuda_stream_records(stream)
 *     how many records it took (the library's epoch events included).
 *     Both kinds of control may be mixed: an event reached through one
 *     queue is skipped by the other;
 *   - the current context (fake_cuda_set_context: 0 none, 1 or 2; one for
 *     all threads, which cuCtxSetCurrent sets too);
 *   - device memory: cuMemGetInfo_v2 answers the free and total bytes the
 *     test set last (fake_cuda_set_mem(free, total); 0 and 0 before, and
 *     after fake_cuda_reset),
 *     CUDA_ERROR_INVALID_CONTEXT without a current context.  Built with
 *     FAKE_CUDA_NO_MEM_INFO (the fake_cuda_nomem library), it lacks the
 *     call, as a libcuda older than CUDA 3.2 would;
 *   - injected failures (fake_cuda_fail: the next n calls of an entry point
 *     answer an error code);
 *   - call counts, including of the synchronising calls (cuCtxSynchronize,
 *     cuStreamSynchronize, cuEventSynchronize), which it exports only so
 *     that a library calling them is caught: the tests assert 0.
 *
 * FAKE_CUDA_INIT_FAIL=1 in the environment makes cuInit answer
 * CUDA_ERROR_NO_DEVICE.  All state is behind one mutex: threads may call
 * in at once.
 */
#include "gpu/cuda_abi.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_EVENTS 4096

/* What it exports: the test's controls, then the driver's calls. */
EXPORT void fake_cuda_reset(void);
EXPORT void fake_cuda_advance(double ms);
EXPORT void fake_cuda_complete(long n);
EXPORT void fake_cuda_set_context(int which);
EXPORT void fake_cuda_fail(const char *name, int code, int n);
EXPORT long fake_cuda_calls(const char *name);
EXPORT long fake_cuda_live_events(void);
EXPORT void *fake_cuda_last_stream(void);
EXPORT void fake_cuda_stream_advance(void *stream, double ms);
EXPORT long fake_cuda_stream_complete(void *stream, long n);
EXPORT double fake_cuda_stream_clock(void *stream);
EXPORT long fake_cuda_stream_pending(void *stream);
EXPORT long fake_cuda_stream_records(void *stream);
EXPORT void fake_cuda_set_mem(unsigned long long free_bytes, unsigned long long total_bytes);
EXPORT sps_cu_result cuInit(unsigned int flags);
EXPORT sps_cu_result cuDriverGetVersion(int *version);
EXPORT sps_cu_result cuCtxGetCurrent(sps_cu_context *ctx);
EXPORT sps_cu_result cuCtxSetCurrent(sps_cu_context ctx);
EXPORT sps_cu_result cuEventCreate(sps_cu_event *event, unsigned int flags);
EXPORT sps_cu_result cuEventRecord(sps_cu_event e, sps_cu_stream stream);
EXPORT sps_cu_result cuEventQuery(sps_cu_event e);
EXPORT sps_cu_result cuEventElapsedTime(float *ms, sps_cu_event start, sps_cu_event end);
EXPORT sps_cu_result cuEventElapsedTime_v2(float *ms, sps_cu_event start, sps_cu_event end);
EXPORT sps_cu_result cuEventDestroy_v2(sps_cu_event e);
EXPORT sps_cu_result cuGetErrorString(sps_cu_result error, const char **text);
#ifndef FAKE_CUDA_NO_MEM_INFO
EXPORT sps_cu_result cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes);
#endif
EXPORT sps_cu_result cuCtxSynchronize(void);
EXPORT sps_cu_result cuStreamSynchronize(sps_cu_stream s);
EXPORT sps_cu_result cuEventSynchronize(sps_cu_event e);

struct sps_cu_event {
    int live;      /* created and not destroyed */
    int recorded;  /* recorded at least once */
    int done;      /* the fake GPU reached it */
    double at_ms;  /* when it did */
    sps_cu_stream stream;
    sps_cu_context ctx;
    unsigned gen; /* records so far: a queue entry of an earlier record is stale */
};

enum call { C_INIT, C_CTX, C_CREATE, C_RECORD, C_QUERY, C_ELAPSED, C_DESTROY, C_CTX_SYNC, C_STREAM_SYNC,
            C_EVENT_SYNC, C_MEM_INFO, C_CTX_SET, C_COUNT };
static const char *const call_names[C_COUNT] = {
    "cuInit", "cuCtxGetCurrent", "cuEventCreate", "cuEventRecord", "cuEventQuery", "cuEventElapsedTime",
    "cuEventDestroy", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemGetInfo", "cuCtxSetCurrent"};

static struct sps_cu_ctx { int n; } ctx_a = {1}, ctx_b = {2};

#define MAX_STREAMS 32
#define STREAM_QUEUE (MAX_EVENTS * 2)

struct entry {
    struct sps_cu_event *e;
    unsigned gen;
};

/* A stream of the fake GPU: its events in the order recorded on it. */
struct fake_stream {
    int used;
    sps_cu_stream handle;
    double ahead_ms; /* its clock: the common clock plus this */
    long records;
    struct entry queue[STREAM_QUEUE];
    size_t qhead, qtail;
};

static struct {
    pthread_mutex_t lock;
    double clock_ms;
    int context; /* 0 none, 1 ctx_a, 2 ctx_b */
    struct sps_cu_event ev[MAX_EVENTS];
    struct entry queue[MAX_EVENTS * 4];
    size_t qhead, qtail;
    struct fake_stream streams[MAX_STREAMS];
    long calls[C_COUNT];
    int fail_code[C_COUNT], fail_left[C_COUNT];
    long live_events;
    unsigned long long mem_free, mem_total; /* what cuMemGetInfo_v2 answers */
} F = {.lock = PTHREAD_MUTEX_INITIALIZER, .context = 1};

static enum call call_of(const char *name) {
    for (int i = 0; i < C_COUNT; i++)
        if (strcmp(call_names[i], name) == 0)
            return (enum call)i;
    return C_COUNT;
}

/* Count a call; the injected error when one is due, else 0.  Lock held. */
static int enter(enum call c) {
    F.calls[c]++;
    if (F.fail_left[c] > 0) {
        F.fail_left[c]--;
        return F.fail_code[c];
    }
    return 0;
}

static int valid(sps_cu_event e) {
    return e >= F.ev && e < F.ev + MAX_EVENTS && e->live;
}

/* The stream of handle h, made at its first use (NULL when all are in
 * use: the test made too many).  Lock held. */
static struct fake_stream *stream_of(sps_cu_stream h, int make) {
    for (int i = 0; i < MAX_STREAMS; i++)
        if (F.streams[i].used && F.streams[i].handle == h)
            return &F.streams[i];
    if (!make)
        return NULL;
    for (int i = 0; i < MAX_STREAMS; i++) {
        if (!F.streams[i].used) {
            memset(&F.streams[i], 0, sizeof F.streams[i]);
            F.streams[i].used = 1;
            F.streams[i].handle = h;
            return &F.streams[i];
        }
    }
    abort(); /* more streams than the fake keeps */
}

/* Whether queue entry q still waits: its event was not destroyed, not
 * recorded again since, and not reached.  Lock held. */
static int waiting(const struct entry *q) {
    return q->e->live && q->e->gen == q->gen && !q->e->done;
}

/* ------------------------------------------------------- the test's controls */

EXPORT void fake_cuda_reset(void) {
    pthread_mutex_lock(&F.lock);
    F.clock_ms = 0;
    F.context = 1;
    F.qhead = F.qtail = 0;
    memset(F.streams, 0, sizeof F.streams);
    memset(F.calls, 0, sizeof F.calls);
    memset(F.fail_left, 0, sizeof F.fail_left);
    F.mem_free = F.mem_total = 0;
    pthread_mutex_unlock(&F.lock);
}

EXPORT void fake_cuda_advance(double ms) {
    pthread_mutex_lock(&F.lock);
    F.clock_ms += ms;
    pthread_mutex_unlock(&F.lock);
}

/* The GPU reaches the next n recorded events not reached yet, whatever
 * their stream, at the common clock (all of them for n < 0). */
EXPORT void fake_cuda_complete(long n) {
    pthread_mutex_lock(&F.lock);
    while (F.qhead < F.qtail && n != 0) {
        struct entry *q = &F.queue[F.qhead++ % (MAX_EVENTS * 4)];
        if (!waiting(q))
            continue;
        q->e->done = 1;
        q->e->at_ms = F.clock_ms;
        n--;
    }
    pthread_mutex_unlock(&F.lock);
}

/* Move one stream's clock on by ms (the others' stay). */
EXPORT void fake_cuda_stream_advance(void *stream, double ms) {
    pthread_mutex_lock(&F.lock);
    stream_of(stream, 1)->ahead_ms += ms;
    pthread_mutex_unlock(&F.lock);
}

/* The stream reaches its next n events not reached yet at its own clock
 * (all of them for n < 0).  Returns how many it reached. */
EXPORT long fake_cuda_stream_complete(void *stream, long n) {
    long done = 0;
    pthread_mutex_lock(&F.lock);
    struct fake_stream *s = stream_of(stream, 1);
    while (s->qhead < s->qtail && n != 0) {
        struct entry *q = &s->queue[s->qhead++ % STREAM_QUEUE];
        if (!waiting(q))
            continue;
        q->e->done = 1;
        q->e->at_ms = F.clock_ms + s->ahead_ms;
        n--;
        done++;
    }
    pthread_mutex_unlock(&F.lock);
    return done;
}

EXPORT double fake_cuda_stream_clock(void *stream) {
    pthread_mutex_lock(&F.lock);
    double ms = F.clock_ms + stream_of(stream, 1)->ahead_ms;
    pthread_mutex_unlock(&F.lock);
    return ms;
}

/* Events recorded on the stream and not reached yet. */
EXPORT long fake_cuda_stream_pending(void *stream) {
    long n = 0;
    pthread_mutex_lock(&F.lock);
    struct fake_stream *s = stream_of(stream, 0);
    for (size_t i = s ? s->qhead : 0; s && i < s->qtail; i++)
        n += waiting(&s->queue[i % STREAM_QUEUE]);
    pthread_mutex_unlock(&F.lock);
    return n;
}

/* cuEventRecord calls that succeeded on the stream. */
EXPORT long fake_cuda_stream_records(void *stream) {
    pthread_mutex_lock(&F.lock);
    struct fake_stream *s = stream_of(stream, 0);
    long n = s ? s->records : 0;
    pthread_mutex_unlock(&F.lock);
    return n;
}

EXPORT void fake_cuda_set_mem(unsigned long long free_bytes, unsigned long long total_bytes) {
    pthread_mutex_lock(&F.lock);
    F.mem_free = free_bytes;
    F.mem_total = total_bytes;
    pthread_mutex_unlock(&F.lock);
}

EXPORT void fake_cuda_set_context(int which) {
    pthread_mutex_lock(&F.lock);
    F.context = which;
    pthread_mutex_unlock(&F.lock);
}

/* The next n calls of entry point name answer code. */
EXPORT void fake_cuda_fail(const char *name, int code, int n) {
    enum call c = call_of(name);
    if (c == C_COUNT)
        abort(); /* the test misspelt a name */
    pthread_mutex_lock(&F.lock);
    F.fail_code[c] = code;
    F.fail_left[c] = n;
    pthread_mutex_unlock(&F.lock);
}

EXPORT long fake_cuda_calls(const char *name) {
    enum call c = call_of(name);
    if (c == C_COUNT)
        abort();
    pthread_mutex_lock(&F.lock);
    long n = F.calls[c];
    pthread_mutex_unlock(&F.lock);
    return n;
}

EXPORT long fake_cuda_live_events(void) {
    pthread_mutex_lock(&F.lock);
    long n = F.live_events;
    pthread_mutex_unlock(&F.lock);
    return n;
}

/* The stream the most recently recorded event went to. */
static sps_cu_stream last_stream;
EXPORT void *fake_cuda_last_stream(void) {
    pthread_mutex_lock(&F.lock);
    void *s = last_stream;
    pthread_mutex_unlock(&F.lock);
    return s;
}

/* ------------------------------------------------------- the driver's calls */

EXPORT sps_cu_result cuInit(unsigned int flags) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_INIT);
    pthread_mutex_unlock(&F.lock);
    if (flags != 0)
        return SPS_CUDA_ERROR_INVALID_VALUE;
    const char *f = getenv("FAKE_CUDA_INIT_FAIL");
    if (f && *f == '1')
        return SPS_CUDA_ERROR_NO_DEVICE;
    return r;
}

EXPORT sps_cu_result cuDriverGetVersion(int *version) {
    if (!version)
        return SPS_CUDA_ERROR_INVALID_VALUE;
    *version = 12040;
    return SPS_CUDA_SUCCESS;
}

EXPORT sps_cu_result cuCtxGetCurrent(sps_cu_context *ctx) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_CTX);
    *ctx = F.context == 1 ? &ctx_a : F.context == 2 ? &ctx_b : NULL;
    pthread_mutex_unlock(&F.lock);
    return r;
}

EXPORT sps_cu_result cuCtxSetCurrent(sps_cu_context ctx) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_CTX_SET);
    if (!r && ctx && ctx != &ctx_a && ctx != &ctx_b)
        r = SPS_CUDA_ERROR_INVALID_CONTEXT;
    if (!r)
        F.context = ctx == &ctx_a ? 1 : ctx == &ctx_b ? 2 : 0;
    pthread_mutex_unlock(&F.lock);
    return r;
}

EXPORT sps_cu_result cuEventCreate(sps_cu_event *event, unsigned int flags) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_CREATE);
    if (!r && flags != SPS_CU_EVENT_DEFAULT)
        r = SPS_CUDA_ERROR_INVALID_VALUE; /* the library must ask for timing events */
    if (!r && !F.context)
        r = SPS_CUDA_ERROR_INVALID_CONTEXT;
    if (!r) {
        r = SPS_CUDA_ERROR_UNKNOWN; /* out of fake events */
        for (int i = 0; i < MAX_EVENTS; i++) {
            if (!F.ev[i].live) {
                memset(&F.ev[i], 0, sizeof F.ev[i]);
                F.ev[i].live = 1;
                F.ev[i].ctx = F.context == 1 ? &ctx_a : &ctx_b;
                *event = &F.ev[i];
                F.live_events++;
                r = 0;
                break;
            }
        }
    }
    pthread_mutex_unlock(&F.lock);
    return r;
}

EXPORT sps_cu_result cuEventRecord(sps_cu_event e, sps_cu_stream stream) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_RECORD);
    if (!r && !valid(e))
        r = SPS_CUDA_ERROR_INVALID_HANDLE;
    if (!r) {
        e->recorded = 1;
        e->done = 0;
        e->stream = stream;
        last_stream = stream;
        e->gen++;
        F.queue[F.qtail++ % (MAX_EVENTS * 4)] = (struct entry){e, e->gen};
        struct fake_stream *s = stream_of(stream, 1);
        s->queue[s->qtail++ % STREAM_QUEUE] = (struct entry){e, e->gen};
        s->records++;
    }
    pthread_mutex_unlock(&F.lock);
    return r;
}

EXPORT sps_cu_result cuEventQuery(sps_cu_event e) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_QUERY);
    if (!r && !valid(e))
        r = SPS_CUDA_ERROR_INVALID_HANDLE;
    if (!r && e->recorded && !e->done)
        r = SPS_CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&F.lock);
    return r;
}

static sps_cu_result elapsed(float *ms, sps_cu_event start, sps_cu_event end) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_ELAPSED);
    if (!r && (!valid(start) || !valid(end)))
        r = SPS_CUDA_ERROR_INVALID_HANDLE;
    if (!r && (!start->recorded || !end->recorded))
        r = SPS_CUDA_ERROR_INVALID_HANDLE;
    if (!r && (!start->done || !end->done))
        r = SPS_CUDA_ERROR_NOT_READY;
    if (!r)
        *ms = (float)(end->at_ms - start->at_ms);
    pthread_mutex_unlock(&F.lock);
    return r;
}

/* Both names, as a CUDA 12.8 driver exports them. */
EXPORT sps_cu_result cuEventElapsedTime(float *ms, sps_cu_event start, sps_cu_event end) {
    return elapsed(ms, start, end);
}
EXPORT sps_cu_result cuEventElapsedTime_v2(float *ms, sps_cu_event start, sps_cu_event end) {
    return elapsed(ms, start, end);
}

EXPORT sps_cu_result cuEventDestroy_v2(sps_cu_event e) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_DESTROY);
    if (!r && !valid(e))
        r = SPS_CUDA_ERROR_INVALID_HANDLE;
    if (!r) {
        e->live = 0;
        F.live_events--;
    }
    pthread_mutex_unlock(&F.lock);
    return r;
}

#ifndef FAKE_CUDA_NO_MEM_INFO
EXPORT sps_cu_result cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    pthread_mutex_lock(&F.lock);
    int r = enter(C_MEM_INFO);
    if (!r && !F.context)
        r = SPS_CUDA_ERROR_INVALID_CONTEXT;
    if (!r) {
        *free_bytes = (size_t)F.mem_free;
        *total_bytes = (size_t)F.mem_total;
    }
    pthread_mutex_unlock(&F.lock);
    return r;
}
#endif

EXPORT sps_cu_result cuGetErrorString(sps_cu_result error, const char **text) {
    switch (error) {
    case SPS_CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; return 0;
    case SPS_CUDA_ERROR_NOT_READY: *text = "device not ready"; return 0;
    case SPS_CUDA_ERROR_LAUNCH_FAILED: *text = "unspecified launch failure"; return 0;
    case SPS_CUDA_ERROR_INVALID_CONTEXT: *text = "invalid device context"; return 0;
    default: *text = NULL; return SPS_CUDA_ERROR_INVALID_VALUE;
    }
}

/* Synchronising calls: the library must never make them. */
EXPORT sps_cu_result cuCtxSynchronize(void) {
    pthread_mutex_lock(&F.lock);
    enter(C_CTX_SYNC);
    pthread_mutex_unlock(&F.lock);
    return 0;
}
EXPORT sps_cu_result cuStreamSynchronize(sps_cu_stream s) {
    (void)s;
    pthread_mutex_lock(&F.lock);
    enter(C_STREAM_SYNC);
    pthread_mutex_unlock(&F.lock);
    return 0;
}
EXPORT sps_cu_result cuEventSynchronize(sps_cu_event e) {
    (void)e;
    pthread_mutex_lock(&F.lock);
    enter(C_EVENT_SYNC);
    pthread_mutex_unlock(&F.lock);
    return 0;
}
