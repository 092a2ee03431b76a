/*
 * test_gpu_spans.c - GPU zones placed on the GPU's timeline
 * (sps_gpu_spans_since, sps_gpu_wait), against the fake libcuda's
 * concurrent streams (test/fakes/fake_cuda.c): exact placements on one
 * and two streams, an epoch on another stream not reached yet, epoch
 * rotation over a long run (placement stays exact to well under a
 * microsecond) and its rule (never while a pair measures from the older
 * event), the ring of 1024 spans and its gap, waiting for pending pairs
 * that complete or do not, and never a synchronising call.  The record ->
 * model -> trace.json round trip is test_trace's (test_gpu_tracks).
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stepscope.h>

#include "check.h"
#include "gpu/cuda_zone.h"

#ifndef FAKE_CUDA_PATH
#error "FAKE_CUDA_PATH must name the fake libcuda"
#endif

static struct {
    void (*reset)(void);
    void (*complete)(long);
    long (*calls)(const char *);
    void (*stream_advance)(void *, double);
    long (*stream_complete)(void *, long);
    double (*stream_clock)(void *);
    long (*stream_pending)(void *);
    long (*stream_records)(void *);
} fake;

#define SYM(field, name)                                         \
    do {                                                         \
        *(void **)&fake.field = dlsym(h, name);                  \
        if (!fake.field) {                                       \
            fprintf(stderr, "the fake libcuda lacks %s\n", name); \
            exit(1);                                             \
        }                                                        \
    } while (0)

static void load_fake(void) {
    void *h = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL); /* the instance the library loads */
    if (!h) {
        fprintf(stderr, "cannot load the fake libcuda: %s\n", dlerror());
        exit(1);
    }
    SYM(reset, "fake_cuda_reset");
    SYM(complete, "fake_cuda_complete");
    SYM(calls, "fake_cuda_calls");
    SYM(stream_advance, "fake_cuda_stream_advance");
    SYM(stream_complete, "fake_cuda_stream_complete");
    SYM(stream_clock, "fake_cuda_stream_clock");
    SYM(stream_pending, "fake_cuda_stream_pending");
    SYM(stream_records, "fake_cuda_stream_records");
}

#define SA ((void *)(uintptr_t)0xa000)
#define SB ((void *)(uintptr_t)0xb000)

static void use_fake(void) {
    setenv("STEPSCOPE_LIBCUDA", FAKE_CUDA_PATH, 1);
    sps__cuda_reset();
    sps__cuda_set_rotation(UINT64_MAX, 0, -1); /* renewed by span offsets only: the CPU's pace is the machine's */
    fake.reset();
}

static void check_no_sync(void) {
    CHECK_EQ_I(fake.calls("cuCtxSynchronize"), 0);
    CHECK_EQ_I(fake.calls("cuStreamSynchronize"), 0);
    CHECK_EQ_I(fake.calls("cuEventSynchronize"), 0);
}

/* The thread's current epoch: its CPU reading. */
static uint64_t epoch_ns(uint32_t *gen) {
    uint64_t ns = 0;
    uint32_t g = 0;
    CHECK_EQ_I(sps__cuda_epoch(&ns, &g), 0);
    if (gen)
        *gen = g;
    return ns;
}

/* epoch + ms, in ns, as the library rounds it. */
static uint64_t at(uint64_t epoch, double ms) {
    return epoch + (uint64_t)llround(ms * 1e6);
}

static void check_span(const struct sps_gpu_span *s, uint64_t seq, struct sps_site *site, void *stream,
                       uint64_t start_ns, uint64_t end_ns, double gpu_ms) {
    CHECK_EQ_U(s->seq, seq);
    CHECK(s->site == site);
    CHECK(s->stream == stream);
    CHECK_EQ_U(s->start_ns, start_ns);
    CHECK_EQ_U(s->end_ns, end_ns);
    CHECK_NEAR(s->gpu_ms, gpu_ms, 1e-6);
}

/* Two zones one after the other on one stream: placed exactly, from the
 * epoch recorded at the first begin (between the CPU readings around it). */
static void test_one_stream(void) {
    use_fake();
    struct sps_site *fwd = sps_site_get("sp_fwd", SPS_KIND_ZONE), *bwd = sps_site_get("sp_bwd", SPS_KIND_ZONE);
    uint64_t before = sps_clock_ns();
    sps_gpu_zone_t z = sps_gpu_zone_begin(fwd, SA);
    uint64_t after = sps_clock_ns();
    sps_gpu_zone_end(z);
    sps_gpu_zone_end(sps_gpu_zone_begin(bwd, SA));
    uint64_t e = epoch_ns(NULL);
    CHECK(e >= before && e <= after);
    CHECK_EQ_I(fake.stream_records(SA), 5); /* the epoch, then two pairs */
    struct sps_gpu_span out[8];
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 8), 0); /* nothing reached */
    fake.stream_advance(SA, 1.0);
    CHECK_EQ_I(fake.stream_complete(SA, 2), 2); /* the epoch, fwd's start: 1 ms */
    fake.stream_advance(SA, 3.0);
    fake.stream_complete(SA, 1); /* fwd's end: 4 ms */
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 8), 1);
    check_span(&out[0], 1, fwd, SA, at(e, 0), at(e, 3), 3.0);
    fake.stream_advance(SA, 0.5);
    fake.stream_complete(SA, 1); /* bwd's start: 4.5 ms */
    fake.stream_advance(SA, 2.25);
    fake.stream_complete(SA, 1); /* bwd's end: 6.75 ms */
    CHECK_EQ_I(sps_gpu_flush(), 0);
    CHECK_EQ_U(sps_gpu_spans_since(1, out, 8), 1);
    check_span(&out[0], 2, bwd, SA, at(e, 3.5), at(e, 5.75), 2.25);
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 8), 2);
    CHECK_EQ_U(out[0].seq, 1);
    CHECK_EQ_U(sps_gpu_spans_since(2, out, 8), 0);
    CHECK_EQ_U(sps_gpu_spans_since(0, NULL, 8), 0);
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 0), 0);
    check_no_sync();
}

/* Stream A busy [0, 10) ms and stream B [5, 12) ms after the epoch, which
 * went to A (the first zone's stream).  B's GPU work is reached first,
 * but it cannot be placed before the epoch on A is reached: pending. */
static void test_two_streams_overlap(void) {
    use_fake();
    struct sps_site *a = sps_site_get("sp_a", SPS_KIND_ZONE), *b = sps_site_get("sp_b", SPS_KIND_ZONE);
    sps_gpu_zone_end(sps_gpu_zone_begin(a, SA));
    sps_gpu_zone_end(sps_gpu_zone_begin(b, SB));
    uint64_t e = epoch_ns(NULL);
    CHECK_EQ_I(fake.stream_records(SA), 3);
    CHECK_EQ_I(fake.stream_records(SB), 2); /* one epoch per thread and context, not per stream */
    fake.stream_advance(SB, 5.0);
    fake.stream_complete(SB, 1); /* B's start at 5 */
    fake.stream_advance(SB, 7.0);
    fake.stream_complete(SB, 1); /* B's end at 12 */
    CHECK_EQ_I(sps_gpu_flush(), 2); /* B: done, but its epoch is not reached yet */
    struct sps_gpu_span out[4];
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 4), 0);
    fake.stream_complete(SA, 2); /* the epoch and A's start at 0 */
    fake.stream_advance(SA, 10.0);
    fake.stream_complete(SA, 1); /* A's end at 10 */
    CHECK_EQ_I(fake.stream_pending(SA) + fake.stream_pending(SB), 0);
    CHECK_EQ_I(sps_gpu_wait(0), 0);
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 4), 2);
    /* resolved in the order they ended on the CPU */
    check_span(&out[0], 1, a, SA, at(e, 0), at(e, 10), 10.0);
    check_span(&out[1], 2, b, SB, at(e, 5), at(e, 12), 7.0);
    CHECK_EQ_U(out[0].end_ns - out[1].start_ns, 5000000u); /* the overlap, exactly */
    check_no_sync();
}

/* cuEventElapsedTime's float of ms between two fake GPU times, as ns the
 * way the library rounds it. */
static int64_t float_ns(double from_ms, double to_ms) {
    return llround((double)(float)(to_ms - from_ms) * 1e6);
}

/* A long run: 1000 zones 150 ms apart on the GPU (150 s in all), the epoch
 * renewed once a span lands over 200 ms from it.  The CPU's time between
 * two epochs is far less than the GPU's, so each renewed epoch is placed
 * chained onto the one before (no drift allowance here): every span to the
 * nanosecond of the float milliseconds of its links, all on one timeline,
 * each offset from its own epoch under 0.5 s. */
static void test_rotation_far(void) {
    use_fake();
    sps__cuda_set_rotation(UINT64_MAX, 200000000, 0);
    struct sps_site *site = sps_site_get("sp_far", SPS_KIND_ZONE);
    uint64_t seq = 0, epoch_at = 0, first = 0;
    int64_t worst = 0, drift = 0;
    double epoch_ms = 0;
    uint32_t gen = 0;
    for (int i = 0; i < 1000; i++) {
        sps_gpu_zone_t z = sps_gpu_zone_begin(site, SA);
        sps_gpu_zone_end(z);
        uint32_t g;
        uint64_t e = epoch_ns(&g);
        double start_ms = fake.stream_clock(SA);
        int renewed = g != gen;
        if (i == 0)
            first = epoch_at = e; /* reached at the fake GPU's 0 */
        else if (renewed) /* chained: the last epoch plus the GPU's time since */
            epoch_at += (uint64_t)float_ns(epoch_ms, start_ms);
        if (renewed) {
            CHECK_EQ_I(g, gen + 1);
            epoch_ms = start_ms;
        }
        gen = g;
        CHECK_EQ_I(fake.stream_complete(SA, renewed ? 2 : 1), renewed ? 2 : 1); /* (the epoch and) the start */
        fake.stream_advance(SA, 0.123456);
        fake.stream_complete(SA, 1);
        CHECK_EQ_I(sps_gpu_flush(), 0);
        struct sps_gpu_span s;
        CHECK_EQ_U(sps_gpu_spans_since(seq, &s, 1), 1);
        seq = s.seq;
        int64_t err = (int64_t)(s.start_ns - (epoch_at + (uint64_t)float_ns(epoch_ms, start_ms)));
        if (llabs(err) > worst)
            worst = llabs(err);
        drift = (int64_t)(s.start_ns - first) - llround(start_ms * 1e6);
        CHECK_EQ_U(s.end_ns - s.start_ns, 123456u);
        fake.stream_advance(SA, 150.000321 - 0.123456);
    }
    CHECK_MSG(worst == 0, "placed %lld ns off its chain", (long long)worst);
    CHECK_MSG(llabs(drift) < 10000, "the chain's rounding came to %lld ns over 150 s", (long long)drift);
    CHECK_EQ_I(gen, 334); /* renewed every third zone: at 0, then 450 ms from it */
    check_no_sync();
}

/* Renewal waits while a pending pair measures from the event it would
 * record again; the pairs of each epoch are placed from their own, the
 * second epoch chained onto the first (4096 ms of GPU time after it, far
 * more than the CPU's time between them). */
static void test_rotation_waits_for_older(void) {
    use_fake();
    sps__cuda_set_rotation(1, 0, 0); /* renew at every begin that may; no drift allowance */
    struct sps_site *site = sps_site_get("sp_rot", SPS_KIND_ZONE);
    uint32_t g1, g2, g3, g4;
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA)); /* epoch 1 (event 1), pair 1 */
    uint64_t e1 = epoch_ns(&g1);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA)); /* epoch 2 (event 0), pair 2 */
    epoch_ns(&g2);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA)); /* pair 1 still measures from event 1: kept */
    epoch_ns(&g3);
    CHECK_EQ_I(g1, 1);
    CHECK_EQ_I(g2, 2);
    CHECK_EQ_I(g3, 2);
    CHECK_EQ_I(fake.stream_records(SA), 8); /* two epochs, three pairs */
    /* GPU: epoch1 0, pair1 [0, 1), epoch2 4096, pair2 [4096, 4098), pair3 [4098, 4101) */
    fake.stream_complete(SA, 2);
    fake.stream_advance(SA, 1);
    fake.stream_complete(SA, 1);
    fake.stream_advance(SA, 4095);
    fake.stream_complete(SA, 2);
    fake.stream_advance(SA, 2);
    fake.stream_complete(SA, 2);
    fake.stream_advance(SA, 3);
    fake.stream_complete(SA, 1);
    CHECK_EQ_I(sps_gpu_wait(0), 0);
    struct sps_gpu_span out[4];
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 4), 3);
    check_span(&out[0], 1, site, SA, at(e1, 0), at(e1, 1), 1);
    check_span(&out[1], 2, site, SA, at(e1, 4096), at(e1, 4098), 2);
    check_span(&out[2], 3, site, SA, at(e1, 4098), at(e1, 4101), 3);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA)); /* nothing pending: renewed */
    epoch_ns(&g4);
    CHECK_EQ_I(g4, 3);
    check_no_sync();
}

/* A renewed epoch is placed at the later of its CPU reading and the
 * previous epoch plus the GPU time between them, less 50 ppm of it: the
 * CPU's when more CPU time than GPU time passed between them (the earlier
 * epoch's stream had work queued), the chained one when less did. */
static void test_epoch_placed_at_the_later(void) {
    use_fake();
    sps__cuda_set_rotation(1, 0, -1); /* renew at every begin that may; the default allowance */
    struct sps_site *site = sps_site_get("sp_later", SPS_KIND_ZONE);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA)); /* epoch 1, at the GPU's 0 */
    fake.stream_complete(SA, -1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    struct timespec nap = {0, 3000000};
    nanosleep(&nap, NULL); /* 3 ms of CPU time at least */
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA)); /* epoch 2, 1 ms of GPU time after epoch 1 */
    uint32_t g;
    uint64_t c2 = epoch_ns(&g);
    CHECK_EQ_I(g, 2);
    fake.stream_advance(SA, 1);
    fake.stream_complete(SA, 2);
    fake.stream_advance(SA, 2);
    fake.stream_complete(SA, 1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA)); /* epoch 3, 8194 ms of GPU time after epoch 2 */
    epoch_ns(&g);
    CHECK_EQ_I(g, 3);
    fake.stream_advance(SA, 8192);
    fake.stream_complete(SA, 2);
    fake.stream_advance(SA, 1);
    fake.stream_complete(SA, 1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    struct sps_gpu_span out[4];
    CHECK_EQ_U(sps_gpu_spans_since(1, out, 4), 2);
    check_span(&out[0], 2, site, SA, c2, at(c2, 2), 2);   /* the CPU reading: 3 ms > 1 ms - 50 ns */
    uint64_t e3 = at(c2, 8194) - 409700;                  /* chained: 8194 ms less 50 ppm of it */
    check_span(&out[1], 3, site, SA, e3, at(e3, 1), 1);
    check_no_sync();
}

/* More spans than the ring keeps: the oldest go, the seq shows the gap. */
static void test_ring_wrap(void) {
    use_fake();
    struct sps_site *site = sps_site_get("sp_ring", SPS_KIND_ZONE);
    for (int round = 0; round < 11; round++) {
        for (int i = 0; i < 100; i++)
            sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
        fake.complete(-1);
        CHECK_EQ_I(sps_gpu_flush(), 0);
    }
    static struct sps_gpu_span out[2000];
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 2000), 1024);
    CHECK_EQ_U(out[0].seq, 1100 - 1024 + 1);
    CHECK_EQ_U(out[1023].seq, 1100);
    for (size_t i = 1; i < 1024; i++)
        CHECK_EQ_U(out[i].seq, out[i - 1].seq + 1);
    CHECK(out[1023].stream == NULL);
    CHECK_EQ_U(sps_gpu_spans_since(0, out, 5), 5); /* the oldest 5 kept */
    CHECK_EQ_U(out[0].seq, 77);
    CHECK_EQ_U(out[4].seq, 81);
    CHECK_EQ_U(sps_gpu_spans_since(UINT64_MAX, out, 2000), 0); /* after everything: nothing */
    CHECK_EQ_U(sps_gpu_spans_since(1090, out, 2000), 10);
    CHECK_EQ_U(out[0].seq, 1091);
    check_no_sync();
}

/* The fake GPU finishes the work only once the waiting thread has polled
 * a few times: sps_gpu_wait returns when it has, with none pending. */
static void *finish_later(void *arg) {
    long queries = *(long *)arg;
    while (fake.calls("cuEventQuery") < queries + 3) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    fake.stream_advance(SA, 2.0);
    fake.stream_complete(SA, -1);
    return NULL;
}

static void test_wait_completes(void) {
    use_fake();
    struct sps_site *site = sps_site_get("sp_wait", SPS_KIND_ZONE);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA));
    CHECK_EQ_I(sps_gpu_flush(), 1);
    long queries = fake.calls("cuEventQuery");
    pthread_t t;
    CHECK_EQ_I(pthread_create(&t, NULL, finish_later, &queries), 0);
    CHECK_EQ_I(sps_gpu_wait(600), 0);
    pthread_join(t, NULL);
    CHECK(fake.calls("cuEventQuery") >= queries + 3);
    struct sps_gpu_span s;
    CHECK_EQ_U(sps_gpu_spans_since(0, &s, 1), 1);
    CHECK_EQ_U(s.end_ns - s.start_ns, 0u); /* all reached at once, at 2 ms */
    CHECK_EQ_U(s.start_ns, at(epoch_ns(NULL), 0));
    check_no_sync();
}

/* Work the GPU never finishes: the wait gives up, saying how many. */
static void test_wait_times_out(void) {
    use_fake();
    struct sps_site *site = sps_site_get("sp_never", SPS_KIND_ZONE);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA));
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SB));
    long queries = fake.calls("cuEventQuery");
    CHECK_EQ_I(sps_gpu_wait(0.01), 2);
    CHECK(fake.calls("cuEventQuery") >= queries + 2); /* polled */
    CHECK_EQ_I(sps_gpu_wait(0), 2);
    CHECK_EQ_I(sps_gpu_wait(-1), 2);
    CHECK_EQ_I(sps_gpu_wait(NAN), 2);
    struct sps_gpu_span s;
    CHECK_EQ_U(sps_gpu_spans_since(0, &s, 1), 0);
    fake.complete(-1);
    CHECK_EQ_I(sps_gpu_wait(0.01), 0);
    check_no_sync();
}

/* A thread's spans are its own. */
static void *other_thread(void *arg) {
    struct sps_gpu_span s;
    *(size_t *)arg = sps_gpu_spans_since(0, &s, 1);
    return NULL;
}

static void test_spans_per_thread(void) {
    use_fake();
    struct sps_site *site = sps_site_get("sp_mine", SPS_KIND_ZONE);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA));
    fake.complete(-1);
    CHECK_EQ_I(sps_gpu_flush(), 0);
    size_t theirs = 99;
    pthread_t t;
    CHECK_EQ_I(pthread_create(&t, NULL, other_thread, &theirs), 0);
    pthread_join(t, NULL);
    CHECK_EQ_U(theirs, 0);
    struct sps_gpu_span s;
    CHECK_EQ_U(sps_gpu_spans_since(0, &s, 1), 1);
}

/* No libcuda: nothing pending, nothing placed, and waiting returns at once. */
static void test_without_libcuda(void) {
    use_fake();
    setenv("STEPSCOPE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    sps__cuda_reset();
    struct sps_site *site = sps_site_get("sp_nolib", SPS_KIND_ZONE);
    sps_gpu_zone_end(sps_gpu_zone_begin(site, SA));
    CHECK_EQ_I(sps_gpu_wait(10), 0);
    struct sps_gpu_span s;
    CHECK_EQ_U(sps_gpu_spans_since(0, &s, 1), 0);
}

int main(void) {
    load_fake();
    RUN_TEST(test_one_stream);
    RUN_TEST(test_two_streams_overlap);
    RUN_TEST(test_rotation_far);
    RUN_TEST(test_rotation_waits_for_older);
    RUN_TEST(test_epoch_placed_at_the_later);
    RUN_TEST(test_ring_wrap);
    RUN_TEST(test_wait_completes);
    RUN_TEST(test_wait_times_out);
    RUN_TEST(test_spans_per_thread);
    RUN_TEST(test_without_libcuda);
    sps__cuda_reset();
    return check_report();
}
