/*
 * test_cuda_zone.c - GPU zones through CUDA events, against the fake
 * libcuda the suite builds (test/fakes/fake_cuda.c): exact elapsed times,
 * pairs that are not ready yet and resolve later, failing event calls, no
 * current context, a missing library, a full pool, several threads, fork,
 * what report.json says of them, and that nothing ever synchronises.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stepscope.h>

#include "check.h"
#include "gpu/cuda_abi.h"
#include "gpu/cuda_zone.h"
#include "support.h"

#ifndef FAKE_CUDA_PATH
#error "FAKE_CUDA_PATH must name the fake libcuda"
#endif

static struct {
    void (*reset)(void);
    void (*advance)(double);
    void (*complete)(long);
    void (*set_context)(int);
    void (*fail)(const char *, int, int);
    long (*calls)(const char *);
    long (*live_events)(void);
    void *(*last_stream)(void);
} fake;

static void load_fake(void) {
    /* the same path the library dlopens: one instance, shared state */
    void *h = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot load the fake libcuda: %s\n", dlerror());
        exit(1);
    }
    *(void **)&fake.reset = dlsym(h, "fake_cuda_reset");
    *(void **)&fake.advance = dlsym(h, "fake_cuda_advance");
    *(void **)&fake.complete = dlsym(h, "fake_cuda_complete");
    *(void **)&fake.set_context = dlsym(h, "fake_cuda_set_context");
    *(void **)&fake.fail = dlsym(h, "fake_cuda_fail");
    *(void **)&fake.calls = dlsym(h, "fake_cuda_calls");
    *(void **)&fake.live_events = dlsym(h, "fake_cuda_live_events");
    *(void **)&fake.last_stream = dlsym(h, "fake_cuda_last_stream");
    if (!fake.reset || !fake.last_stream) {
        fprintf(stderr, "the fake libcuda lacks its controls\n");
        exit(1);
    }
}

/* A fresh library state over a fresh fake. */
static void use_fake(void) {
    setenv("STEPSCOPE_LIBCUDA", FAKE_CUDA_PATH, 1);
    unsetenv("FAKE_CUDA_INIT_FAIL");
    sps__cuda_reset();
    fake.reset();
}

static void check_no_sync(void) {
    CHECK_EQ_I(fake.calls("cuCtxSynchronize"), 0);
    CHECK_EQ_I(fake.calls("cuStreamSynchronize"), 0);
    CHECK_EQ_I(fake.calls("cuEventSynchronize"), 0);
}

static struct sps_cuda_status status(void) {
    struct sps_cuda_status s;
    CHECK_EQ_I(sps_cuda_status(&s), 0);
    return s;
}

static json_t *report_now(void) {
    const char *dir = tmpdir_new("cuda");
    char err[256] = "";
    int rc = sps_report_write(dir, err, sizeof err);
    CHECK_MSG(rc == 0, "sps_report_write: %s", err);
    return report_load(dir);
}

/* report.json's "cuda" object, and the one of this process's entry. */
static json_t *report_cuda(json_t *r) {
    json_t *c = json_object_get(r, "cuda");
    CHECK(json_is_object(c));
    json_t *procs = json_object_get(r, "processes");
    CHECK_EQ_U(json_array_size(procs), 1);
    json_t *own = json_object_get(json_array_get(procs, 0), "cuda");
    /* one process: its entry says what the run's says */
    CHECK(json_is_object(own));
    const char *keys[] = {"available", "driver_version", "reason", "zones_resolved", "zones_cpu_only",
                          "zones_dropped", "zones_unresolved"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK_MSG(json_equal(json_object_get(c, keys[i]), json_object_get(own, keys[i])), "processes[0].cuda.%s",
                  keys[i]);
    return c;
}

/* The pair resolves to the fake GPU's exact time between its events, and
 * only once the GPU has reached both. */
static void test_exact_elapsed(void) {
    use_fake();
    struct sps_site *site = sps_site_get("fwd", SPS_KIND_ZONE);
    void *stream = (void *)(uintptr_t)0x5000;
    sps_gpu_zone_t z = sps_gpu_zone_begin(site, stream);
    CHECK(z != 0);
    CHECK(fake.last_stream() == stream);
    sps_gpu_zone_end(z);
    CHECK(fake.last_stream() == stream);
    CHECK_EQ_I(sps_gpu_flush(), 1); /* nothing reached yet */
    fake.advance(1.0);
    fake.complete(2); /* the thread's epoch event (recorded first), the start event, at 1 ms */
    CHECK_EQ_I(sps_gpu_flush(), 1);
    fake.advance(2.5);
    fake.complete(1); /* the end event, at 3.5 ms */
    CHECK_EQ_I(sps_gpu_flush(), 0);
    struct sps_cuda_status s = status();
    CHECK_EQ_I(s.available, 1);
    CHECK_EQ_I(s.driver_version, 12040);
    CHECK_EQ_U(s.resolved, 1);
    CHECK_EQ_U(s.cpu_only, 0);
    CHECK_STR_HAS(s.reason, ""); /* NUL-terminated */
    CHECK_EQ_I(s.reason[0], 0);

    /* a second zone on the legacy default stream: 0.75 ms */
    z = sps_gpu_zone_begin(site, NULL);
    sps_gpu_zone_end(z);
    CHECK(fake.last_stream() == NULL);
    fake.complete(1);
    fake.advance(0.75);
    fake.complete(1);
    CHECK_EQ_I(sps_gpu_flush(), 0);

    json_t *r = report_now();
    json_t *v = report_find(r, "values", "fwd.gpu_ms");
    CHECK(v != NULL);
    CHECK_NEAR(json_num(v, "count"), 2, 0);
    CHECK_NEAR(json_num(v, "first"), 2.5, 1e-9);
    CHECK_NEAR(json_num(v, "last"), 0.75, 1e-9);
    CHECK_NEAR(json_num(v, "max"), 2.5, 1e-9);
    json_t *zone = report_find(r, "zones", "fwd");
    CHECK(zone != NULL);
    CHECK_NEAR(json_num(zone, "count"), 2, 0);
    json_t *c = report_cuda(r);
    CHECK(json_is_true(json_object_get(c, "used")));
    CHECK(json_is_true(json_object_get(c, "available")));
    CHECK_NEAR(json_num(c, "driver_version"), 12040, 0);
    CHECK(json_is_null(json_object_get(c, "reason")));
    CHECK_NEAR(json_num(c, "processes"), 1, 0);
    CHECK_NEAR(json_num(c, "zones_resolved"), 2, 0);
    CHECK_NEAR(json_num(c, "zones_cpu_only") + json_num(c, "zones_dropped") + json_num(c, "zones_unresolved"), 0, 0);
    json_decref(r);
    /* the pool's events were made once and are reused */
    CHECK_EQ_I(fake.calls("cuEventCreate"), 3); /* and the epoch's, recorded once */
    CHECK_EQ_I(fake.calls("cuEventRecord"), 5);
    check_no_sync();
}

/* A pair the GPU has not reached at a step end stays pending; the next
 * step end resolves it. */
static void test_not_ready_then_ready_at_step_end(void) {
    use_fake();
    struct sps_site *step = sps_site_get("gstep", SPS_KIND_STEP);
    struct sps_site *site = sps_site_get("bwd", SPS_KIND_ZONE);
    sps_zone_t s = sps_zone_begin(step);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    sps_zone_end(s); /* the GPU is behind: NOT_READY */
    CHECK_EQ_U(status().resolved, 0);
    CHECK(fake.calls("cuEventQuery") >= 1);
    fake.complete(2); /* the epoch and the start */
    fake.advance(4.0);
    fake.complete(1);
    s = sps_zone_begin(step);
    sps_zone_end(s); /* resolves it */
    CHECK_EQ_U(status().resolved, 1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    json_t *r = report_now();
    json_t *v = report_find(r, "values", "bwd.gpu_ms");
    CHECK(v != NULL);
    CHECK_NEAR(json_num(v, "count"), 1, 0);
    CHECK_NEAR(json_num(v, "last"), 4.0, 1e-9);
    json_decref(r);
    check_no_sync();
}

/* Event calls that fail: the pair is given up and counted, the CPU zone
 * is still recorded. */
static void test_errors(void) {
    use_fake();
    struct sps_site *site = sps_site_get("err", SPS_KIND_ZONE);
    /* the query answers a launch failure: given up, never retried */
    sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    fake.fail("cuEventQuery", SPS_CUDA_ERROR_LAUNCH_FAILED, 1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    /* the elapsed time cannot be had */
    sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    fake.complete(-1);
    fake.fail("cuEventElapsedTime", SPS_CUDA_ERROR_INVALID_HANDLE, 1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    /* the start event cannot be recorded */
    fake.fail("cuEventRecord", SPS_CUDA_ERROR_INVALID_HANDLE, 1);
    sps_gpu_zone_t z = sps_gpu_zone_begin(site, NULL);
    CHECK(z != 0); /* the CPU zone is there */
    sps_gpu_zone_end(z);
    /* the end event cannot be recorded */
    z = sps_gpu_zone_begin(site, NULL);
    fake.fail("cuEventRecord", SPS_CUDA_ERROR_INVALID_HANDLE, 1);
    sps_gpu_zone_end(z);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    CHECK_EQ_U(status().unresolved, 4);
    /* events cannot be created: a fresh pool's first pair */
    sps__cuda_reset();
    fake.fail("cuEventCreate", SPS_CUDA_ERROR_INVALID_CONTEXT, 1);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    CHECK_EQ_I(sps_gpu_flush(), 0);
    struct sps_cuda_status s = status();
    CHECK_EQ_U(s.resolved, 0);
    CHECK_EQ_U(s.unresolved, 1); /* since the reset: the create */
    CHECK_STR_HAS(s.reason, "cuEventCreate failed: invalid device context");
    json_t *r = report_now();
    CHECK(report_find(r, "values", "err.gpu_ms") == NULL);
    json_t *c = report_find(r, "counters", "cuda.gpu_zones_unresolved");
    CHECK(c != NULL);
    CHECK_NEAR(json_num(c, "total"), 5, 0); /* query, elapsed, start, end, create */
    json_t *zone = report_find(r, "zones", "err");
    CHECK(zone != NULL);
    CHECK_NEAR(json_num(zone, "count"), 5, 0);
    json_decref(r);
    check_no_sync();
}

/* No current context: a CPU zone, with the reason kept. */
static void test_no_context(void) {
    use_fake();
    fake.set_context(0);
    struct sps_site *site = sps_site_get("noctx", SPS_KIND_ZONE);
    sps_gpu_zone_t z = sps_gpu_zone_begin(site, NULL);
    CHECK(z != 0);
    CHECK_EQ_U(z >> 32, 0); /* no GPU pair */
    sps_gpu_zone_end(z);
    CHECK_EQ_I(fake.calls("cuEventRecord"), 0);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    struct sps_cuda_status s = status();
    CHECK_EQ_I(s.available, 1);
    CHECK_EQ_U(s.cpu_only, 1);
    CHECK_STR_HAS(s.reason, "no current CUDA context");
    /* a context later (PyTorch made one): GPU zones work */
    fake.set_context(1);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    fake.complete(-1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    CHECK_EQ_U(status().resolved, 1);
    /* another context on the same thread: the events are made anew in it */
    long created = fake.calls("cuEventCreate");
    fake.set_context(2);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    CHECK_EQ_I(fake.calls("cuEventCreate"), created + 3); /* the pair's and an epoch in context 2 */
    CHECK_EQ_I(fake.calls("cuEventDestroy"), 2);          /* context 1's epoch is kept */
    fake.complete(-1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    CHECK_EQ_U(status().resolved, 2);
    /* available, with the reason some zones were CPU zones */
    json_t *r = report_now();
    json_t *c = report_cuda(r);
    CHECK(json_is_true(json_object_get(c, "available")));
    CHECK_STR_HAS(json_string_value(json_object_get(c, "reason")), "no current CUDA context");
    CHECK_NEAR(json_num(c, "zones_cpu_only"), 1, 0);
    CHECK_NEAR(json_num(c, "zones_resolved"), 2, 0);
    json_decref(r);
    check_no_sync();
}

static void test_missing_library(void) {
    use_fake();
    setenv("STEPSCOPE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    sps__cuda_reset();
    struct sps_site *site = sps_site_get("nolib", SPS_KIND_ZONE);
    sps_gpu_zone_t z = sps_gpu_zone_begin(site, NULL);
    CHECK(z != 0);
    sps_gpu_zone_end(z);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    struct sps_cuda_status s = status();
    CHECK_EQ_I(s.available, 0);
    CHECK_EQ_U(s.cpu_only, 1);
    CHECK_STR_HAS(s.reason, "cannot load /nonexistent/libcuda.so.1");
    json_t *r = report_now();
    json_t *zone = report_find(r, "zones", "nolib");
    CHECK(zone != NULL);
    CHECK_NEAR(json_num(zone, "count"), 1, 0);
    CHECK(report_find(r, "counters", "cuda.gpu_zones_cpu_only") != NULL);
    json_t *c = report_cuda(r);
    CHECK(json_is_true(json_object_get(c, "used")));
    CHECK(json_is_false(json_object_get(c, "available")));
    CHECK(json_is_null(json_object_get(c, "driver_version")));
    CHECK_STR_HAS(json_string_value(json_object_get(c, "reason")), "cannot load /nonexistent/libcuda.so.1");
    CHECK_NEAR(json_num(c, "reason_pid"), getpid(), 0);
    CHECK_NEAR(json_num(c, "zones_cpu_only"), 1, 0);
    CHECK_NEAR(json_num(c, "zones_resolved"), 0, 0);
    json_decref(r);
    CHECK_EQ_I(fake.calls("cuInit"), 0);
}

static void test_init_fails(void) {
    use_fake();
    setenv("FAKE_CUDA_INIT_FAIL", "1", 1);
    struct sps_cuda_status s = status(); /* loads it, as `stepscope doctor` does */
    CHECK_EQ_I(s.available, 0);
    CHECK_STR_HAS(s.reason, "cuInit failed: no CUDA-capable device is detected");
    unsetenv("FAKE_CUDA_INIT_FAIL");
}

/* A GPU far behind: the pool fills, further zones are CPU-only and
 * counted, and nothing waits. */
static void test_pool_full(void) {
    use_fake();
    struct sps_site *site = sps_site_get("full", SPS_KIND_ZONE);
    for (int i = 0; i < 300; i++)
        sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    CHECK_EQ_I(sps_gpu_flush(), 256);
    struct sps_cuda_status s = status();
    CHECK_EQ_U(s.dropped, 44);
    CHECK_EQ_I(fake.calls("cuEventCreate"), 513); /* 256 pairs and the epoch */
    fake.complete(-1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    CHECK_EQ_U(status().resolved, 256);
    /* reused, not made again */
    for (int i = 0; i < 10; i++)
        sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
    CHECK_EQ_I(fake.calls("cuEventCreate"), 513); /* 256 pairs and the epoch */
    fake.complete(-1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    CHECK_EQ_U(status().resolved, 266);
    check_no_sync();
}

/* Careless calls: an end twice, a token of 0, a NULL site. */
static void test_careless(void) {
    use_fake();
    struct sps_site *site = sps_site_get("careless", SPS_KIND_ZONE);
    sps_gpu_zone_t z = sps_gpu_zone_begin(site, NULL);
    sps_gpu_zone_end(z);
    sps_gpu_zone_end(z); /* counted by the recorder as a stale end; no second event */
    sps_gpu_zone_end(0);
    CHECK_EQ_U(sps_gpu_zone_begin(NULL, NULL), 0);
    CHECK_EQ_I(fake.calls("cuEventRecord"), 3); /* the epoch, the start, the end */
    fake.complete(-1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    CHECK_EQ_U(status().resolved, 1);
    CHECK_EQ_I(sps_cuda_status(NULL), SPS_EINVAL);
}

/* Threads: each has its own pool; a thread's exit frees its events. */
#define THREADS 4
#define PER_THREAD 100
static void *worker(void *arg) {
    (void)arg;
    struct sps_site *site = sps_site_get("mt", SPS_KIND_ZONE);
    struct sps_site *step = sps_site_get("mtstep", SPS_KIND_STEP);
    for (int i = 0; i < PER_THREAD; i++) {
        sps_zone_t s = sps_zone_begin(step);
        sps_gpu_zone_end(sps_gpu_zone_begin(site, (void *)(uintptr_t)(0x1000 + i % 3)));
        fake.advance(0.5);
        sps_zone_end(s);
    }
    fake.complete(-1);
    /* every event this thread recorded has been reached: none pending */
    return (void *)(intptr_t)sps_gpu_flush();
}

static void test_threads(void) {
    use_fake();
    long live_before = fake.live_events();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ_I(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        void *left = NULL;
        pthread_join(t[i], &left);
        CHECK_EQ_I((intptr_t)left, 0);
    }
    struct sps_cuda_status s = status();
    CHECK_EQ_U(s.resolved, THREADS * PER_THREAD);
    CHECK_EQ_U(s.unresolved + s.dropped + s.cpu_only, 0);
    CHECK_EQ_I(fake.live_events(), live_before); /* the pools' events were destroyed */
    json_t *r = report_now();
    json_t *v = report_find(r, "values", "mt.gpu_ms");
    CHECK(v != NULL);
    CHECK_NEAR(json_num(v, "count"), THREADS * PER_THREAD, 0);
    json_decref(r);
    check_no_sync();
}

/* The driver calls the child of a fork must never make. */
static const char *const driver_calls[] = {"cuInit", "cuCtxGetCurrent", "cuEventCreate", "cuEventRecord",
                                           "cuEventQuery", "cuEventElapsedTime", "cuEventDestroy"};
#define NCALLS (sizeof driver_calls / sizeof driver_calls[0])

static int wait_child(pid_t pid) {
    int st = 0;
    CHECK_EQ_I(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* fork(): the child drops the pool it inherited without a driver call (its
 * events are the parent's) and times its GPU zones on the CPU only, with
 * the reason, in its own record; the parent's pending and open pairs still
 * resolve in the parent, to the exact times. */
static void test_fork(void) {
    use_fake();
    struct sps_site *site = sps_site_get("forked", SPS_KIND_ZONE);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));          /* pair A: pending at the fork */
    sps_gpu_zone_t open = sps_gpu_zone_begin(site, NULL);      /* pair B: open across it */
    CHECK((open >> 32) != 0);
    long before[NCALLS];
    for (size_t i = 0; i < NCALLS; i++)
        before[i] = fake.calls(driver_calls[i]);
    long live = fake.live_events();
    pid_t pid = fork();
    if (pid == 0) {
        int failures = check_failures;
        for (int i = 0; i < 5; i++)
            sps_gpu_zone_end(sps_gpu_zone_begin(site, (void *)(uintptr_t)0x77));
        sps_gpu_zone_end(open); /* the parent's zone, ended here too: no event */
        CHECK_EQ_I(sps_gpu_flush(), 0);
        struct sps_cuda_status s = status();
        CHECK_EQ_I(s.available, 0);
        CHECK_STR_HAS(s.reason, "forked from a process that had loaded libcuda");
        CHECK_EQ_U(s.cpu_only, 5);
        CHECK_EQ_U(s.resolved + s.dropped + s.unresolved, 0); /* the parent's pairs are the parent's */
        for (size_t i = 0; i < NCALLS; i++) /* the fake's copy in this process counts the child's calls */
            CHECK_MSG(fake.calls(driver_calls[i]) == before[i], "the child called %s", driver_calls[i]);
        CHECK_EQ_I(fake.live_events(), live);
        json_t *r = report_now();
        CHECK(report_find(r, "values", "forked.gpu_ms") == NULL);
        json_t *zone = report_find(r, "zones", "forked");
        CHECK(zone != NULL);
        CHECK_NEAR(json_num(zone, "count"), 5, 0); /* the zone open across the fork is the parent's */
        json_t *counter = report_find(r, "counters", "cuda.gpu_zones_cpu_only");
        CHECK(counter != NULL);
        CHECK_NEAR(json_num(counter, "total"), 5, 0);
        json_t *c = report_cuda(r);
        CHECK(json_is_false(json_object_get(c, "available")));
        CHECK_STR_HAS(json_string_value(json_object_get(c, "reason")), "CUDA must not be used in a fork child");
        CHECK_NEAR(json_num(c, "zones_cpu_only"), 5, 0);
        CHECK_NEAR(json_num(c, "zones_resolved"), 0, 0);
        json_decref(r);
        fflush(NULL);
        _exit(check_failures == failures ? 0 : 1);
    }
    CHECK_EQ_I(wait_child(pid), 0);
    /* the parent goes on as if nothing happened */
    fake.complete(2); /* the epoch and A's start at 0 ms */
    fake.advance(2.0);
    fake.complete(1); /* A's end at 2 ms */
    sps_gpu_zone_end(open);
    fake.complete(1); /* B's start at 2 ms */
    fake.advance(0.5);
    fake.complete(1); /* B's end at 2.5 ms */
    CHECK_EQ_I(sps_gpu_flush(), 0);
    struct sps_cuda_status s = status();
    CHECK_EQ_I(s.available, 1);
    CHECK_EQ_I(s.reason[0], 0);
    CHECK_EQ_U(s.resolved, 2);
    CHECK_EQ_U(s.cpu_only + s.dropped + s.unresolved, 0);
    json_t *r = report_now();
    json_t *v = report_find(r, "values", "forked.gpu_ms");
    CHECK(v != NULL);
    CHECK_NEAR(json_num(v, "count"), 2, 0);
    CHECK_NEAR(json_num(v, "first"), 2.0, 1e-9);
    CHECK_NEAR(json_num(v, "last"), 0.5, 1e-9);
    json_t *c = report_cuda(r);
    CHECK(json_is_true(json_object_get(c, "available")));
    CHECK_NEAR(json_num(c, "zones_resolved"), 2, 0);
    json_decref(r);

    /* A fork before this library loaded libcuda, in a process where it is
     * loaded already (here by the test; in PyTorch by its CUDA init): the
     * child will not initialise it either. */
    sps__cuda_reset();
    pid = fork();
    if (pid == 0) {
        int failures = check_failures;
        long init = fake.calls("cuInit");
        sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
        struct sps_cuda_status cs = status();
        CHECK_EQ_I(cs.available, 0);
        CHECK_STR_HAS(cs.reason, "forked from a process that had loaded libcuda");
        CHECK_EQ_I(fake.calls("cuInit"), init);
        fflush(NULL);
        _exit(check_failures == failures ? 0 : 1);
    }
    CHECK_EQ_I(wait_child(pid), 0);
    check_no_sync();
}

int main(void) {
    load_fake();
    RUN_TEST(test_exact_elapsed);
    RUN_TEST(test_not_ready_then_ready_at_step_end);
    RUN_TEST(test_errors);
    RUN_TEST(test_no_context);
    RUN_TEST(test_missing_library);
    RUN_TEST(test_init_fails);
    RUN_TEST(test_pool_full);
    RUN_TEST(test_careless);
    RUN_TEST(test_threads);
    RUN_TEST(test_fork);
    sps__cuda_reset();
    return check_report();
}
