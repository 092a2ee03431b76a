/*
 * bench_gpu_spans.c - what placing GPU zones on the GPU's timeline costs
 * on the CPU: GPU zones placed (an epoch check at each begin; at resolve a
 * cuEventQuery of the epoch, a second cuEventElapsedTime, the GPU-span
 * event and the span ring) against the same zones value-only (the resolve
 * path before placement: "<name>.gpu_ms" alone), interleaved in one run.
 *
 * Against the test suite's FAKE libcuda (no GPU here): each of its calls
 * takes a mutex and a few stores, so the figures are the library's part
 * plus a cheap stand-in for the driver's, whose real cost (a few hundred
 * ns a call) is not in them.
 *
 *     STEPSCOPE_LIBCUDA=build/fakes/libfake_cuda.so bench_gpu_spans [--iterations N]
 *
 * Two timings a case: begin+end of the GPU zones of a step (64 of them),
 * and resolving them (sps_gpu_flush once the fake GPU has reached every
 * event), each per zone.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stepscope.h>

#include "gpu/cuda_zone.h"

#define REPEATS 9
#define PER_STEP 64

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void (*complete)(long);

struct timing {
    double record_ns, resolve_ns; /* per zone */
};

/* n zones in steps of PER_STEP, placed or not. */
static struct timing run(struct sps_site *site, unsigned n, int placed) {
    sps__cuda_set_placement(placed);
    uint64_t record = 0, resolve = 0;
    for (unsigned i = 0; i < n; i += PER_STEP) {
        uint64_t t0 = now_ns();
        for (unsigned k = 0; k < PER_STEP; k++)
            sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
        uint64_t t1 = now_ns();
        complete(-1); /* the fake GPU keeps up (not timed) */
        uint64_t t2 = now_ns();
        if (sps_gpu_flush() != 0) {
            fprintf(stderr, "bench_gpu_spans: pairs left pending\n");
            exit(1);
        }
        uint64_t t3 = now_ns();
        record += t1 - t0;
        resolve += t3 - t2;
    }
    return (struct timing){(double)record / n, (double)resolve / n};
}

static void row(const char *what, double *v, int decimals) {
    qsort(v, REPEATS, sizeof v[0], cmp_double);
    printf("%-40s %9.*f %9.*f %9.*f\n", what, decimals, v[REPEATS / 2], decimals, v[0], decimals, v[REPEATS - 1]);
}

int main(int argc, char **argv) {
    unsigned n = 64000;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            n = (unsigned)strtoul(argv[++i], NULL, 10);
    n = (n + PER_STEP - 1) / PER_STEP * PER_STEP;
    const char *path = getenv("STEPSCOPE_LIBCUDA");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (h)
        *(void **)&complete = dlsym(h, "fake_cuda_complete");
    if (!complete) {
        fprintf(stderr, "bench_gpu_spans: set STEPSCOPE_LIBCUDA to the test suite's fake libcuda "
                        "(build/fakes/libfake_cuda.so)\n");
        return 2;
    }
    struct sps_site *site = sps_site_get("bench_gpu_span", SPS_KIND_ZONE);
    run(site, n / 10, 0); /* warm: the segment, the pool, libcuda loaded */
    run(site, n / 10, 1);
    struct sps_cuda_status st;
    sps_cuda_status(&st);
    if (!st.available) {
        fprintf(stderr, "bench_gpu_spans: libcuda unavailable: %s\n", st.reason);
        return 1;
    }
    double rec_v[REPEATS], rec_p[REPEATS], res_v[REPEATS], res_p[REPEATS], ratio_rec[REPEATS], ratio_res[REPEATS];
    for (int r = 0; r < REPEATS; r++) { /* interleaved: drift hits both */
        struct timing v = run(site, n, 0), p = run(site, n, 1);
        rec_v[r] = v.record_ns;
        rec_p[r] = p.record_ns;
        res_v[r] = v.resolve_ns;
        res_p[r] = p.resolve_ns;
        ratio_rec[r] = p.record_ns / v.record_ns;
        ratio_res[r] = p.resolve_ns / v.resolve_ns;
    }
    struct sps_gpu_span last;
    size_t got = sps_gpu_spans_since(0, &last, 1);
    printf("GPU spans against the FAKE libcuda %s (no GPU: the driver's real cost is not in these figures)\n", path);
    printf("%u zones a case, %d interleaved repeats, %d zones a step\n", n, REPEATS, PER_STEP);
    printf("%-40s %9s %9s %9s\n", "per zone (ns)", "median", "min", "max");
    row("begin+end, value-only (baseline)", rec_v, 1);
    row("begin+end, placed", rec_p, 1);
    row("resolve, value-only (baseline)", res_v, 1);
    row("resolve, placed", res_p, 1);
    row("ratio placed / value-only, begin+end", ratio_rec, 2);
    row("ratio placed / value-only, resolve", ratio_res, 2);
    printf("spans kept: %s\n", got ? "yes" : "none (a bug)");
    return got ? 0 : 1;
}
