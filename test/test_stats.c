/* test_stats.c - histogram buckets, percentiles and moments against exact
 * computations on the same data. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/run.h"
#include "record_format.h"
#include "stats.h"
#include "stepscope.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rng(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}
static double unit(void) {
    return (double)(rng() >> 11) / 9007199254740992.0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A record aggregate (with its histogram) holding values[0..n). */
static struct sps_rec_agg *make_agg(const uint64_t *values, size_t n) {
    struct sps_rec_agg *a = calloc(1, sizeof *a + SPS_HIST_BUCKETS * sizeof(uint64_t));
    a->kind = SPS_KIND_ZONE;
    a->u.z.min_ns = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        sps_rec_agg_add_zone(a, values[i], values[i] / 2);
        sps_rec_agg_hist(a)[sps_hist_bucket(values[i])]++;
    }
    return a;
}

static void test_bucket_bounds(void) {
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t v = rng() >> (rng() % 64);
        uint32_t b = sps_hist_bucket(v);
        uint64_t low = sps_hist_bucket_low(b), width = sps_hist_bucket_width(b);
        if (b >= SPS_HIST_BUCKETS || v < low || v - low >= width)
            bad++;
        if (low >= SPS_HIST_SUB && (double)width / (double)low > 1.0 / 128 + 1e-12)
            bad++;
    }
    CHECK_EQ_I(bad, 0);
    CHECK_EQ_U(sps_hist_bucket(0), 0);
    CHECK_EQ_U(sps_hist_bucket(127), 127);
    CHECK_EQ_U(sps_hist_bucket(128), 128);
    CHECK_EQ_U(sps_hist_bucket(UINT64_MAX), SPS_HIST_BUCKETS - 1);
    /* buckets are contiguous: the next bucket starts where this one ends */
    for (uint32_t b = 0; b + 1 < SPS_HIST_BUCKETS - 1; b++)
        if (sps_hist_bucket_low(b) + sps_hist_bucket_width(b) != sps_hist_bucket_low(b + 1))
            bad++;
    CHECK_EQ_I(bad, 0);
}

/* Compare every statistic against the exact value for one data set. */
static void check_distribution(const char *label, uint64_t *v, size_t n) {
    struct sps_rec_agg *ra = make_agg(v, n);
    struct sps_agg agg;
    CHECK(sps__agg_from_record(&agg, ra) == 0);
    struct sps_stats s;
    sps__stats_compute(&agg, &s);

    qsort(v, n, sizeof *v, cmp_u64);
    long double sum = 0, sumsq = 0;
    uint64_t self_sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += (long double)v[i];
        self_sum += v[i] / 2;
    }
    long double mean = sum / (long double)n;
    for (size_t i = 0; i < n; i++)
        sumsq += ((long double)v[i] - mean) * ((long double)v[i] - mean);
    double std = (double)sqrtl(sumsq / (long double)n);

    CHECK_EQ_U(s.count, n);
    CHECK_NEAR(s.total_s, (double)sum * 1e-9, (double)sum * 1e-9 * 1e-12);
    CHECK_EQ_U(agg.self_ns, self_sum);
    CHECK_NEAR(s.self_s, (double)self_sum * 1e-9, (double)self_sum * 1e-9 * 1e-12);
    CHECK_NEAR(s.mean_s, (double)mean * 1e-9, (double)mean * 1e-9 * 1e-12);
    CHECK_MSG(fabs(s.std_s - std * 1e-9) <= 1e-9 * std * 1e-6 + 1e-15, "%s: std %.12g vs exact %.12g", label,
              s.std_s, std * 1e-9);
    CHECK_EQ_U((uint64_t)(s.min_s * 1e9 + 0.5), v[0]);
    CHECK_EQ_U((uint64_t)(s.max_s * 1e9 + 0.5), v[n - 1]);
    static const double ps[] = {1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        size_t rank = (size_t)ceil(ps[k] / 100.0 * (double)n);
        uint64_t exact = v[(rank ? rank : 1) - 1];
        uint64_t est = sps__hist_percentile(agg.hist, agg.count, ps[k], agg.min_ns, agg.max_ns);
        double rel = exact ? fabs((double)est - (double)exact) / (double)exact : (double)est;
        CHECK_MSG(rel <= 0.01, "%s: p%g estimate %" PRIu64 " vs exact %" PRIu64 " (%.3f%% off)", label, ps[k], est,
                  exact, rel * 100);
    }
    /* the report's fields agree with the function */
    CHECK_NEAR(s.p50_s * 1e9, (double)sps__hist_percentile(agg.hist, agg.count, 50, agg.min_ns, agg.max_ns), 0.5);
    sps__agg_free(&agg);
    free(ra);
}

static void test_percentiles_match_exact(void) {
    enum { N = 20000 };
    uint64_t *v = malloc(N * sizeof *v);
    for (size_t i = 0; i < N; i++) /* uniform 1 us .. 5 ms */
        v[i] = 1000 + rng() % 5000000;
    check_distribution("uniform", v, N);
    for (size_t i = 0; i < N; i++) /* log-normal around 2 ms, heavy tail */
        v[i] = (uint64_t)(2e6 * exp(0.8 * sqrt(-2 * log(unit() + 1e-300)) * cos(6.283185307179586 * unit())));
    check_distribution("lognormal", v, N);
    for (size_t i = 0; i < N; i++) /* bimodal: fast steps and slow checkpoint steps */
        v[i] = (i % 10 == 0) ? 200000000 + rng() % 1000000 : 5000000 + rng() % 100000;
    check_distribution("bimodal", v, N);
    for (size_t i = 0; i < N; i++) /* tiny: exact buckets */
        v[i] = rng() % 300;
    check_distribution("small", v, N);
    for (size_t i = 0; i < N; i++)
        v[i] = 123456789;
    check_distribution("constant", v, N);
    v[0] = 42;
    check_distribution("single", v, 1);
    free(v);
}

static void test_merge_is_exact(void) {
    enum { N = 5000 };
    uint64_t a[N], b[N], all[2 * N];
    for (size_t i = 0; i < N; i++) {
        all[i] = a[i] = 1000 + rng() % 100000;
        all[N + i] = b[i] = 50000 + rng() % 900000;
    }
    struct sps_rec_agg *ra = make_agg(a, N), *rb = make_agg(b, N), *rall = make_agg(all, 2 * N);
    struct sps_agg ma, mb, mall, merged = {0};
    sps__agg_from_record(&ma, ra);
    sps__agg_from_record(&mb, rb);
    sps__agg_from_record(&mall, rall);
    CHECK(sps__agg_merge(&merged, &ma) == 0);
    CHECK(sps__agg_merge(&merged, &mb) == 0);
    CHECK_EQ_U(merged.count, mall.count);
    CHECK_EQ_U(merged.total_ns, mall.total_ns);
    CHECK_EQ_U(merged.self_ns, mall.self_ns);
    CHECK_EQ_U(merged.min_ns, mall.min_ns);
    CHECK_EQ_U(merged.max_ns, mall.max_ns);
    CHECK(merged.sumsq_ns == mall.sumsq_ns);
    CHECK(memcmp(merged.hist, mall.hist, SPS_HIST_BUCKETS * sizeof(uint64_t)) == 0);
    sps__agg_free(&ma);
    sps__agg_free(&mb);
    sps__agg_free(&mall);
    sps__agg_free(&merged);
    free(ra);
    free(rb);
    free(rall);
}

static void test_empty(void) {
    struct sps_agg a = {0};
    struct sps_stats s;
    sps__stats_compute(&a, &s);
    CHECK_EQ_U(s.count, 0);
    CHECK(s.total_s == 0 && s.p99_s == 0);
    CHECK_EQ_U(sps__hist_percentile(NULL, 0, 50, 0, 0), 0);
}

static void test_warmup_detection(void) {
    double d[100];
    for (int i = 0; i < 100; i++) /* steady 10 ms steps with +-2% noise */
        d[i] = 10e6 * (1.0 + 0.02 * sin(i * 1.7));
    CHECK_EQ_U(sps__warmup_length(d, 100), 0);
    d[0] = 900e6; /* compilation in the first step */
    d[1] = 40e6;
    d[2] = 12e6; /* 20% slower: still warming up */
    CHECK_EQ_U(sps__warmup_length(d, 100), 3);
    d[1] = 10e6; /* a fast second step ends the warm-up */
    CHECK_EQ_U(sps__warmup_length(d, 100), 1);
    for (int i = 0; i < 100; i++) /* everything slow: capped at a fifth */
        d[i] = i < 50 ? 50e6 : 10e6;
    CHECK_EQ_U(sps__warmup_length(d, 100), 20);
    CHECK_EQ_U(sps__warmup_length(d, 4), 0); /* too few steps to tell */
    /* a sawtooth (every 10th step checkpoints) is not warm-up unless it
     * starts the run */
    for (int i = 0; i < 100; i++)
        d[i] = i % 10 == 5 ? 80e6 : 10e6;
    CHECK_EQ_U(sps__warmup_length(d, 100), 0);
}

int main(void) {
    RUN_TEST(test_bucket_bounds);
    RUN_TEST(test_percentiles_match_exact);
    RUN_TEST(test_merge_is_exact);
    RUN_TEST(test_empty);
    RUN_TEST(test_warmup_detection);
    return check_report();
}
