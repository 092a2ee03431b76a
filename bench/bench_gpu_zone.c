/*
 * bench_gpu_zone.c - what a GPU zone's begin+end costs on the CPU, next to
 * a plain zone's begin+end measured in the same run.
 *
 * A GPU zone is a plain zone plus two cuEventRecord calls and, now and
 * then, resolving finished pairs.  The driver's own cost cannot be had
 * without a GPU, so this measures the library's part against a fake
 * libcuda (the test suite's, whose calls take a mutex and a few stores):
 * the ratio bounds what stepscope adds, not what the real driver does.
 *
 *     STEPSCOPE_LIBCUDA=build/fakes/libfake_cuda.so bench_gpu_zone [--iterations N]
 *
 * The fake's GPU is told to reach every recorded event before each flush
 * (fake_cuda_complete), so pairs resolve as they would on a GPU that keeps
 * up; a step end every 64 zones resolves them, as in a training loop.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stepscope.h>

#define REPEATS 7
#define PER_STEP 64

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void (*complete)(long);

static double run_plain(struct sps_site *site, struct sps_site *step, unsigned n) {
    double t0 = now_s();
    for (unsigned i = 0; i < n; i += PER_STEP) {
        sps_zone_t s = sps_zone_begin(step);
        for (unsigned k = 0; k < PER_STEP; k++)
            sps_zone_end(sps_zone_begin(site));
        sps_zone_end(s);
    }
    return (now_s() - t0) / n;
}

static double run_gpu(struct sps_site *site, struct sps_site *step, unsigned n) {
    double t0 = now_s();
    for (unsigned i = 0; i < n; i += PER_STEP) {
        sps_zone_t s = sps_zone_begin(step);
        for (unsigned k = 0; k < PER_STEP; k++)
            sps_gpu_zone_end(sps_gpu_zone_begin(site, NULL));
        complete(-1); /* the fake GPU keeps up */
        sps_zone_end(s); /* resolves the step's pairs */
    }
    return (now_s() - t0) / n;
}

int main(int argc, char **argv) {
    unsigned n = 200000;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            n = (unsigned)strtoul(argv[++i], NULL, 10);
    n = (n + PER_STEP - 1) / PER_STEP * PER_STEP;
    const char *path = getenv("STEPSCOPE_LIBCUDA");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (h)
        *(void **)&complete = dlsym(h, "fake_cuda_complete");
    if (!complete) {
        fprintf(stderr, "bench_gpu_zone: set STEPSCOPE_LIBCUDA to the test suite's fake libcuda "
                        "(build/fakes/libfake_cuda.so)\n");
        return 2;
    }
    struct sps_site *plain = sps_site_get("bench_plain", SPS_KIND_ZONE);
    struct sps_site *gpu = sps_site_get("bench_gpu", SPS_KIND_ZONE);
    struct sps_site *step = sps_site_get("bench_step", SPS_KIND_STEP);
    run_plain(plain, step, n / 10); /* warm: the thread's segment, the pool, libcuda loaded */
    run_gpu(gpu, step, n / 10);
    struct sps_cuda_status st;
    sps_cuda_status(&st);
    if (!st.available) {
        fprintf(stderr, "bench_gpu_zone: libcuda unavailable: %s\n", st.reason);
        return 1;
    }
    double p[REPEATS], g[REPEATS];
    for (int r = 0; r < REPEATS; r++) { /* interleaved: drift hits both */
        p[r] = run_plain(plain, step, n);
        g[r] = run_gpu(gpu, step, n);
    }
    qsort(p, REPEATS, sizeof p[0], cmp_double);
    qsort(g, REPEATS, sizeof g[0], cmp_double);
    sps_gpu_flush();
    sps_cuda_status(&st);
    printf("GPU zone against the FAKE libcuda %s (no GPU: the driver's real cost is not in these figures)\n", path);
    printf("%u zones a case, %d repeats, a step end every %d zones\n", n, REPEATS, PER_STEP);
    printf("%-34s %10s %10s\n", "case (begin+end)", "min ns", "median ns");
    printf("%-34s %10.1f %10.1f\n", "plain zone (baseline)", p[0] * 1e9, p[REPEATS / 2] * 1e9);
    printf("%-34s %10.1f %10.1f\n", "GPU zone, resolved at step ends", g[0] * 1e9, g[REPEATS / 2] * 1e9);
    printf("ratio GPU zone / plain zone: %.2fx (min), %.2fx (median)\n", g[0] / p[0],
           g[REPEATS / 2] / p[REPEATS / 2]);
    printf("pairs resolved %llu, dropped %llu, unresolved %llu\n", (unsigned long long)st.resolved,
           (unsigned long long)st.dropped, (unsigned long long)st.unresolved);
    return 0;
}
