/*
 * test_compare_stats.c - the statistics of `stepscope compare`
 * (src/compare/inference.c) on arrays with known answers and on synthetic runs
 * of known distributions, seeded so every run of the test sees the same
 * numbers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "compare/inference.h"
#include "stepscope.h"
#include "stats.h"

static int cmp_double(const void *pa, const void *pb) {
    double x = *(const double *)pa, y = *(const double *)pb;
    return (x > y) - (x < y);
}

static void test_median(void) {
    double odd[] = {5, 1, 4, 2, 3};
    CHECK_NEAR(sps__median_inplace(odd, 5), 3, 0);
    double even[] = {10, 1, 7, 3};
    CHECK_NEAR(sps__median_inplace(even, 4), 5, 0);
    double same[] = {2, 2, 2, 2, 2, 2};
    CHECK_NEAR(sps__median_inplace(same, 6), 2, 0);
    CHECK(isnan(sps__median_inplace(NULL, 0)));
    /* against sorting, on many random arrays with many ties */
    struct sps_rng r;
    sps__rng_seed(&r, 7);
    int wrong = 0;
    for (int trial = 0; trial < 500; trial++) {
        size_t n = 1 + (size_t)sps__rng_below(&r, 300);
        double x[300], y[300];
        for (size_t i = 0; i < n; i++)
            x[i] = y[i] = (double)sps__rng_below(&r, 20);
        qsort(y, n, sizeof *y, cmp_double);
        double want = n % 2 ? y[n / 2] : (y[n / 2 - 1] + y[n / 2]) / 2;
        if (sps__median_inplace(x, n) != want)
            wrong++;
    }
    CHECK_EQ_I(wrong, 0);
}

static void test_mann_whitney(void) {
    double u, p;
    /* separated samples: U = 25 of 25; p from the normal approximation
     * with continuity correction (scipy's asymptotic method: 0.012186) */
    double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    CHECK_EQ_I(sps__mann_whitney(a, 5, b, 5, &u, &p), 0);
    CHECK_NEAR(u, 25, 0);
    CHECK_NEAR(p, 0.012185780355344818, 1e-12);
    CHECK_EQ_I(sps__mann_whitney(b, 5, a, 5, &u, &p), 0);
    CHECK_NEAR(u, 0, 0);
    CHECK_NEAR(p, 0.012185780355344818, 1e-12); /* two-sided: symmetric */
    /* ties across the sides: average ranks and the tie-corrected variance */
    double ta[] = {1, 1, 2, 2}, tb[] = {2, 3, 3, 3};
    CHECK_EQ_I(sps__mann_whitney(ta, 4, tb, 4, &u, &p), 0);
    CHECK_NEAR(u, 15, 0);
    CHECK_NEAR(p, 0.04705744628217288, 1e-12);
    /* interleaved: no evidence */
    double ia[] = {1, 2, 3, 4, 5, 6, 7, 8}, ib[] = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5};
    CHECK_EQ_I(sps__mann_whitney(ia, 8, ib, 8, &u, &p), 0);
    CHECK_NEAR(u, 36, 0);
    CHECK_NEAR(p, 0.713191261016072, 1e-12);
    /* all equal: p is 1, not a division by zero */
    double e[] = {3, 3, 3};
    CHECK_EQ_I(sps__mann_whitney(e, 3, e, 3, &u, &p), 0);
    CHECK_NEAR(p, 1, 0);
    CHECK_NEAR(u, 4.5, 0);
    CHECK_EQ_I(sps__mann_whitney(a, 0, b, 5, &u, &p), SPS_EINVAL);
}

/* n lognormal step times with the given median and log-sd, into x */
static void lognormal(struct sps_rng *r, double *x, size_t n, double median, double sigma) {
    for (size_t i = 0; i < n; i++)
        x[i] = median * exp(sigma * sps__rng_normal(r));
}

static struct sps_sample_side one_run(const double **runs, const size_t *len) {
    return (struct sps_sample_side){runs, len, 1};
}

static enum sps_verdict verdict_of(const double *b, size_t nb, const double *n, size_t nn,
                                   struct sps_comparison *c) {
    const double *rb[] = {b}, *rn[] = {n};
    size_t lb[] = {nb}, ln[] = {nn};
    struct sps_sample_side sb = one_run(rb, lb), sn = one_run(rn, ln);
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    p.resamples = 500; /* enough for the verdicts below; keeps the 200 trials fast */
    if (sps__compare(&sb, &sn, &p, c) != 0)
        return SPS_VERDICT_NONE;
    return c->verdict;
}

/* A 5% slowdown, 200 steps a side, steps with a 10% spread: found in
 * every one of 50 seeded trials, with the ratio's interval around 1.05. */
static void test_slowdown_is_found(void) {
    struct sps_rng r;
    sps__rng_seed(&r, 2026);
    int found = 0, interval_holds = 0;
    for (int trial = 0; trial < 50; trial++) {
        double b[200], n[200];
        lognormal(&r, b, 200, 0.100, 0.10);
        lognormal(&r, n, 200, 0.105, 0.10);
        struct sps_comparison c;
        if (verdict_of(b, 200, n, 200, &c) == SPS_VERDICT_SLOWER)
            found++;
        if (c.ratio_lo <= 1.05 && 1.05 <= c.ratio_hi)
            interval_holds++;
        if (trial == 0) {
            CHECK(c.p < 0.05);
            CHECK(c.cliffs_delta > 0);
            CHECK_STR_HAS(c.why, "p=");
        }
    }
    CHECK_MSG(found == 50, "a 5%% slowdown was found in %d of 50 trials", found);
    /* a 95% interval should hold the truth in about 95% of trials */
    CHECK_MSG(interval_holds >= 43, "the interval held 1.05 in %d of 50 trials", interval_holds);
    /* and a 10% speed-up is "faster" */
    double b[200], n[200];
    lognormal(&r, b, 200, 0.100, 0.10);
    lognormal(&r, n, 200, 0.090, 0.10);
    struct sps_comparison c;
    CHECK_EQ_I(verdict_of(b, 200, n, 200, &c), SPS_VERDICT_FASTER);
    CHECK(c.ratio < 0.95 && c.ratio_hi < 1);
}

/* Identical distributions: at most 5% false alarms in 200 seeded trials. */
static void test_false_alarms(void) {
    struct sps_rng r;
    sps__rng_seed(&r, 99);
    int alarms = 0, significant = 0;
    for (int trial = 0; trial < 200; trial++) {
        double b[200], n[200];
        lognormal(&r, b, 200, 0.100, 0.10);
        lognormal(&r, n, 200, 0.100, 0.10);
        struct sps_comparison c;
        enum sps_verdict v = verdict_of(b, 200, n, 200, &c);
        if (v != SPS_VERDICT_SAME)
            alarms++;
        if (c.p < 0.05)
            significant++;
    }
    CHECK_MSG(alarms <= 10, "%d false alarms in 200 trials", alarms);
    /* the U test alone errs at about its alpha; a verdict also needs the
     * interval and the noise floor, so its alarms are a subset of those */
    CHECK_MSG(significant >= 2 && significant <= 20, "p < 0.05 in %d of 200 trials", significant);
    printf("identical distributions: %d of 200 trials had p < 0.05, %d false alarms\n", significant, alarms);
}

/* A few huge outlier steps (a checkpoint, a stall) on one side do not
 * flip the verdict, though they move the mean a lot. */
static void test_outliers_do_not_flip(void) {
    struct sps_rng r;
    sps__rng_seed(&r, 5);
    int flipped = 0;
    for (int trial = 0; trial < 20; trial++) {
        double b[200], n[200];
        lognormal(&r, b, 200, 0.100, 0.10);
        lognormal(&r, n, 200, 0.100, 0.10);
        for (int k = 0; k < 5; k++)
            n[sps__rng_below(&r, 200)] = 10.0; /* 100x a step */
        struct sps_comparison c;
        if (verdict_of(b, 200, n, 200, &c) != SPS_VERDICT_SAME)
            flipped++;
        if (trial == 0)
            CHECK_MSG(c.mean_new / c.mean_base > 1.3, "the outliers move the mean (%.3f)",
                      c.mean_new / c.mean_base);
    }
    CHECK_EQ_I(flipped, 0);
    /* and a real 5% slowdown is still found under outliers in the base */
    double b[200], n[200];
    lognormal(&r, b, 200, 0.100, 0.10);
    lognormal(&r, n, 200, 0.105, 0.10);
    for (int k = 0; k < 5; k++)
        b[sps__rng_below(&r, 200)] = 10.0;
    struct sps_comparison c;
    CHECK_EQ_I(verdict_of(b, 200, n, 200, &c), SPS_VERDICT_SLOWER);
}

/* A significant change smaller than the noise floor is "same", and says so. */
static void test_noise_floor(void) {
    struct sps_rng r;
    sps__rng_seed(&r, 11);
    static double b[5000], n[5000];
    lognormal(&r, b, 5000, 0.100, 0.02);
    lognormal(&r, n, 5000, 0.101, 0.02);
    struct sps_comparison c;
    CHECK_EQ_I(verdict_of(b, 5000, n, 5000, &c), SPS_VERDICT_SAME);
    CHECK(c.p < 1e-6);
    CHECK_STR_HAS(c.why, "within the 2% noise floor");
}

/* Several runs a side: the bootstrap resamples runs first, so runs that
 * differ from each other widen the interval beyond what their steps say. */
static void test_runs_widen_the_interval(void) {
    struct sps_rng r;
    sps__rng_seed(&r, 3);
    enum { RUNS = 4, STEPS = 100 };
    static double b[RUNS][STEPS], n[RUNS][STEPS], pooled_b[RUNS * STEPS], pooled_n[RUNS * STEPS];
    const double *rb[RUNS], *rn[RUNS];
    size_t len[RUNS];
    const double offsets[RUNS] = {0.96, 1.04, 0.98, 1.02}; /* run-to-run spread of +-4% */
    for (int k = 0; k < RUNS; k++) {
        lognormal(&r, b[k], STEPS, 0.100 * offsets[k], 0.05);
        lognormal(&r, n[k], STEPS, 0.100 * offsets[(k + 1) % RUNS], 0.05);
        memcpy(pooled_b + k * STEPS, b[k], sizeof b[k]);
        memcpy(pooled_n + k * STEPS, n[k], sizeof n[k]);
        rb[k] = b[k];
        rn[k] = n[k];
        len[k] = STEPS;
    }
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    struct sps_sample_side sb = {rb, len, RUNS}, sn = {rn, len, RUNS};
    struct sps_comparison runs, flat;
    CHECK_EQ_I(sps__compare(&sb, &sn, &p, &runs), 0);
    const double *fb[] = {pooled_b}, *fn[] = {pooled_n};
    size_t flen[] = {RUNS * STEPS};
    struct sps_sample_side ob = {fb, flen, 1}, on = {fn, flen, 1};
    CHECK_EQ_I(sps__compare(&ob, &on, &p, &flat), 0);
    CHECK_EQ_U(runs.runs_base, RUNS);
    CHECK_EQ_U(runs.n_base, RUNS * STEPS);
    CHECK_NEAR(runs.ratio, flat.ratio, 0); /* the same pooled medians */
    double wide = runs.ratio_hi - runs.ratio_lo, narrow = flat.ratio_hi - flat.ratio_lo;
    CHECK_MSG(wide > 1.5 * narrow, "interval over runs %.4f vs over steps %.4f", wide, narrow);
    CHECK_EQ_I(runs.verdict, SPS_VERDICT_SAME);
    printf("4 runs x 100 steps, +-4%% between runs: interval %.4f wide over runs, %.4f over steps alone\n", wide,
           narrow);
}

static void test_edges(void) {
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    double x[5] = {1, 2, 3, 4, 5}, y[20];
    for (int i = 0; i < 20; i++)
        y[i] = i + 1;
    const double *rx[] = {x}, *ry[] = {y};
    size_t lx[] = {5}, ly[] = {20};
    struct sps_sample_side sx = {rx, lx, 1}, sy = {ry, ly, 1};
    struct sps_comparison c;
    CHECK_EQ_I(sps__compare(&sx, &sy, &p, &c), 0);
    CHECK_EQ_I(c.verdict, SPS_VERDICT_NONE);
    CHECK_STR_HAS(c.why, "too few samples to judge (5 base, 20 new; 8 needed on each side)");
    struct sps_sample_side none = {NULL, NULL, 0};
    CHECK_EQ_I(sps__compare(&none, &sy, &p, &c), 0);
    CHECK_EQ_I(c.verdict, SPS_VERDICT_NONE);
    /* a zone that is 0 in every base step: no ratio, the ranks decide */
    double zeros[20] = {0}, ones[20];
    for (int i = 0; i < 20; i++)
        ones[i] = 0.001 * (1 + i % 3);
    const double *rz[] = {zeros}, *ro[] = {ones};
    struct sps_sample_side sz = {rz, ly, 1}, so = {ro, ly, 1};
    CHECK_EQ_I(sps__compare(&sz, &so, &p, &c), 0);
    CHECK(isnan(c.ratio));
    CHECK_EQ_I(c.verdict, SPS_VERDICT_SLOWER);
    CHECK_EQ_I(sps__compare(&sz, &sz, &p, &c), 0);
    CHECK_EQ_I(c.verdict, SPS_VERDICT_SAME);
    /* bad input */
    y[3] = NAN;
    CHECK_EQ_I(sps__compare(&sy, &sy, &p, &c), SPS_EINVAL);
    y[3] = 4;
    p.alpha = 0;
    CHECK_EQ_I(sps__compare(&sy, &sy, &p, &c), SPS_EINVAL);
    sps__compare_params_default(&p);
    p.resamples = 10;
    CHECK_EQ_I(sps__compare(&sy, &sy, &p, &c), SPS_EINVAL);
    CHECK_EQ_I(sps__compare(NULL, &sy, &p, &c), SPS_EINVAL);
    CHECK(!strcmp(sps__verdict_name(SPS_VERDICT_SLOWER), "slower"));
    CHECK(!strcmp(sps__verdict_name(SPS_VERDICT_NONE), "none"));
}

static void test_holm(void) {
    double p[] = {0.01, 0.04, 0.03, 0.005};
    CHECK_EQ_I(sps__holm_adjust(p, 4), 0);
    /* 0.005 x 4, 0.01 x 3, 0.03 x 2, then 0.04 x 1 held up to 0.06 */
    CHECK_NEAR(p[3], 0.02, 1e-15);
    CHECK_NEAR(p[0], 0.03, 1e-15);
    CHECK_NEAR(p[2], 0.06, 1e-15);
    CHECK_NEAR(p[1], 0.06, 1e-15);
    double big[] = {0.5, 0.9};
    CHECK_EQ_I(sps__holm_adjust(big, 2), 0);
    CHECK_NEAR(big[0], 1, 0); /* capped at 1 */
    CHECK_NEAR(big[1], 1, 0);
    double one[] = {0.01};
    CHECK_EQ_I(sps__holm_adjust(one, 1), 0);
    CHECK_NEAR(one[0], 0.01, 0);
}

/* The same seed gives the same interval: CI can rely on a rerun. */
static void test_deterministic(void) {
    struct sps_rng r;
    sps__rng_seed(&r, 1);
    double b[300], n[300];
    lognormal(&r, b, 300, 1, 0.2);
    lognormal(&r, n, 300, 1.03, 0.2);
    struct sps_comparison c1, c2;
    verdict_of(b, 300, n, 300, &c1);
    verdict_of(b, 300, n, 300, &c2);
    CHECK(c1.ratio_lo == c2.ratio_lo && c1.ratio_hi == c2.ratio_hi && c1.p == c2.p);
    /* the generator's draws below n are in range and roughly uniform */
    int hist[10] = {0};
    for (int i = 0; i < 100000; i++)
        hist[sps__rng_below(&r, 10)]++;
    for (int k = 0; k < 10; k++)
        CHECK_MSG(hist[k] > 9500 && hist[k] < 10500, "bucket %d holds %d of 100000", k, hist[k]);
}

int main(void) {
    test_median();
    test_mann_whitney();
    test_slowdown_is_found();
    test_false_alarms();
    test_outliers_do_not_flip();
    test_noise_floor();
    test_runs_widen_the_interval();
    test_edges();
    test_deterministic();
    test_holm();
    printf("%d passed, %d failed\n", check_passes, check_failures);
    return check_failures != 0;
}
