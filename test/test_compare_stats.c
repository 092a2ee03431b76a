/*
 * test_compare_stats.c - the statistics of `stepscope compare`
 * (src/compare/inference.c) on arrays with known answers and on synthetic
 * runs made as a busy machine makes them (a level shift per run, AR(1)
 * steps within it), seeded so every run of the test sees the same numbers:
 * the false-alarm and detection rates docs/compare.md quotes.
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

/* Student's t against values computed independently (numerical
 * integration of the density; tables for the quantiles). */
static void test_student_t(void) {
    CHECK_NEAR(sps__t_two_sided_p(2.0, 10), 0.07338803477065, 1e-9);
    CHECK_NEAR(sps__t_two_sided_p(-2.0, 10), 0.07338803477065, 1e-9); /* two-sided */
    CHECK_NEAR(sps__t_two_sided_p(3.0, 4), 0.0399415, 1e-6);
    CHECK_NEAR(sps__t_two_sided_p(0, 3), 1, 1e-12);
    CHECK_NEAR(sps__t_two_sided_p(1.959963985, 1e7), 0.05, 1e-8); /* the normal */
    CHECK_NEAR(sps__t_quantile_two_sided(0.05, 1), 12.7062047, 1e-5);
    CHECK_NEAR(sps__t_quantile_two_sided(0.05, 2), 4.3026527, 1e-5);
    CHECK_NEAR(sps__t_quantile_two_sided(0.05, 4), 2.7764451, 1e-5);
    CHECK_NEAR(sps__t_quantile_two_sided(0.05, 30), 2.0422725, 1e-5);
    CHECK_NEAR(sps__t_quantile_two_sided(0.01, 14), 2.9768427, 1e-5);
    /* the normal past df 1e6, and a tail past the middle */
    CHECK_NEAR(sps__t_quantile_two_sided(0.05, 2e6), 1.9599640, 1e-5);
    CHECK_NEAR(sps__t_quantile_two_sided(0.5, 3), 0.7648923, 1e-5);
}

/* A run summary on numbers worked by hand: 32 steps, 8 blocks of 4. */
static void test_run_summary(void) {
    double x[32], scratch[32];
    /* blocks of 4 with medians 1, 2, ..., 8: each block is {m-0.5, m, m, m+0.5} */
    for (int b = 0; b < 8; b++) {
        x[4 * b] = b + 1 - 0.5;
        x[4 * b + 1] = b + 1;
        x[4 * b + 2] = b + 1;
        x[4 * b + 3] = b + 1 + 0.5;
    }
    struct sps_run_summary s;
    sps__run_summarise(x, 32, 0, 1, scratch, &s);
    CHECK_NEAR(s.center, 4.5, 0);
    CHECK_EQ_U(s.blocks, 8);
    /* 1..8: median 4.5, absolute deviations 0.5 .. 3.5, their median 2 */
    CHECK_NEAR(s.drift_var, pow(2 * 1.482602218505602, 2), 1e-12);
    CHECK_NEAR(s.halves, 6.5 / 2.5 - 1, 1e-12); /* medians of 0.5..4.5 and 4.5..8.5 */
    CHECK_NEAR(x[0], 0.5, 0);                   /* x is left alone */
    sps__run_summarise(x, 32, 1, 1, scratch, &s);  /* means */
    CHECK_NEAR(s.center, 4.5, 1e-12);
    CHECK_NEAR(s.drift_var, pow(2 * 1.482602218505602, 2), 1e-12);
    /* one block of eight stalled 10x: the spread hardly moves */
    double stalled[32];
    for (int i = 0; i < 32; i++)
        stalled[i] = i >= 8 && i < 12 ? 10.0 : 1.0 + 0.01 * (i % 4);
    sps__run_summarise(stalled, 32, 0, 1, scratch, &s);
    CHECK_NEAR(s.center, 1.02, 1e-12);
    CHECK_MSG(sqrt(s.drift_var) < 0.01, "drift with a stalled block: %g", sqrt(s.drift_var));
    /* short runs: fewer blocks, at least 4 steps each; under 8: none */
    sps__run_summarise(x, 12, 0, 1, scratch, &s);
    CHECK_EQ_U(s.blocks, 3);
    sps__run_summarise(x, 7, 0, 1, scratch, &s);
    CHECK_EQ_U(s.blocks, 1);
    CHECK(isnan(s.drift_var));
    CHECK(isnan(s.halves));
}

/*
 * Synthetic runs as a shared machine makes them: each run's level is
 * shifted by its own lognormal factor (sd tau: the machine state the run
 * got), and within the run the log step time is an AR(1) process (each
 * step resembles the one before, coefficient phi) of sd sigma around it.
 */
struct machine {
    double tau, phi, sigma;
};

static void synth_run(struct sps_rng *r, const struct machine *m, double median, double *x, size_t n) {
    double shift = m->tau * sps__rng_normal(r), e = m->sigma * sps__rng_normal(r);
    double keep = sqrt(1 - m->phi * m->phi);
    for (size_t i = 0; i < n; i++) {
        x[i] = median * exp(shift + e);
        e = m->phi * e + keep * m->sigma * sps__rng_normal(r);
    }
}

enum { MAX_RUNS = 5, STEPS = 300 };

/* k runs a side of n steps; NEW's median is factor x BASE's.  The verdict. */
static enum sps_verdict trial(struct sps_rng *r, const struct machine *m, size_t k, double factor,
                              struct sps_comparison *c) {
    static double b[MAX_RUNS][STEPS], n[MAX_RUNS][STEPS];
    const double *rb[MAX_RUNS], *rn[MAX_RUNS];
    size_t len[MAX_RUNS];
    for (size_t i = 0; i < k; i++) {
        synth_run(r, m, 0.100, b[i], STEPS);
        synth_run(r, m, 0.100 * factor, n[i], STEPS);
        rb[i] = b[i];
        rn[i] = n[i];
        len[i] = STEPS;
    }
    struct sps_sample_side sb = {rb, len, k}, sn = {rn, len, k};
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    if (sps__compare(&sb, &sn, &p, c) != 0)
        return SPS_VERDICT_NONE;
    return c->verdict;
}

/* How often each verdict comes out of trials runs of k a side. */
static void rates(uint64_t seed, const struct machine *m, size_t k, double factor, int trials, int count[5]) {
    struct sps_rng r;
    sps__rng_seed(&r, seed);
    memset(count, 0, 5 * sizeof *count);
    for (int t = 0; t < trials; t++) {
        struct sps_comparison c;
        count[trial(&r, m, k, factor, &c)]++;
    }
}

/* The busy machine of docs/compare.md: runs shifted by 3%, steps 10% apart
 * with an AR(1) coefficient of 0.6. */
static const struct machine busy = {0.03, 0.6, 0.10};

/* Identical code: the false-alarm rate of the gate (a slower or faster
 * verdict), per number of runs a side.  docs/compare.md quotes these. */
static void test_false_alarms(void) {
    int c1[5], c2[5], c3[5];
    rates(99, &busy, 1, 1.0, 400, c1);
    rates(100, &busy, 2, 1.0, 400, c2);
    rates(101, &busy, 3, 1.0, 400, c3);
    /* one run a side never claims slower or faster */
    CHECK_EQ_I(c1[SPS_VERDICT_SLOWER] + c1[SPS_VERDICT_FASTER], 0);
    int a2 = c2[SPS_VERDICT_SLOWER] + c2[SPS_VERDICT_FASTER], a3 = c3[SPS_VERDICT_SLOWER] + c3[SPS_VERDICT_FASTER];
    CHECK_MSG(a2 <= 20, "2 runs a side: %d false alarms in 400", a2); /* at most 5% */
    CHECK_MSG(a3 <= 20, "3 runs a side: %d false alarms in 400", a3);
    printf("identical code, 400 trials each (tau 3%%, AR(1) 0.6, sigma 10%%, 300 steps):\n"
           "  1 run a side: %d slower, %d faster, %d same, %d inconclusive\n"
           "  2 runs a side: %d slower, %d faster, %d same, %d inconclusive\n"
           "  3 runs a side: %d slower, %d faster, %d same, %d inconclusive\n",
           c1[SPS_VERDICT_SLOWER], c1[SPS_VERDICT_FASTER], c1[SPS_VERDICT_SAME], c1[SPS_VERDICT_INCONCLUSIVE],
           c2[SPS_VERDICT_SLOWER], c2[SPS_VERDICT_FASTER], c2[SPS_VERDICT_SAME], c2[SPS_VERDICT_INCONCLUSIVE],
           c3[SPS_VERDICT_SLOWER], c3[SPS_VERDICT_FASTER], c3[SPS_VERDICT_SAME], c3[SPS_VERDICT_INCONCLUSIVE]);
}

/* A real slowdown: found with 3 runs a side; one run a side says it cannot
 * know.  docs/compare.md quotes these rates. */
static void test_detection(void) {
    int c30[5], c10[5], c5[5], one[5];
    rates(2026, &busy, 3, 1.30, 200, c30);
    rates(2027, &busy, 3, 1.10, 200, c10);
    rates(2028, &busy, 5, 1.05, 200, c5);
    rates(2029, &busy, 1, 1.30, 200, one);
    CHECK_MSG(c30[SPS_VERDICT_SLOWER] >= 190, "30%% slower, 3 runs a side: found in %d of 200",
              c30[SPS_VERDICT_SLOWER]);
    CHECK_EQ_I(c30[SPS_VERDICT_FASTER] + c10[SPS_VERDICT_FASTER] + c5[SPS_VERDICT_FASTER], 0);
    CHECK_MSG(c10[SPS_VERDICT_SLOWER] >= 40, "10%% slower, 3 runs a side: found in %d of 200",
              c10[SPS_VERDICT_SLOWER]);
    CHECK_EQ_I(one[SPS_VERDICT_SLOWER] + one[SPS_VERDICT_FASTER], 0);
    CHECK_MSG(one[SPS_VERDICT_INCONCLUSIVE] == 200, "30%% slower, 1 run a side: inconclusive in %d of 200",
              one[SPS_VERDICT_INCONCLUSIVE]);
    printf("found slower in 200 trials: 30%% with 3 runs a side %d, 10%% with 3 runs %d, 5%% with 5 runs %d; "
           "30%% with 1 run a side %d (inconclusive %d)\n",
           c30[SPS_VERDICT_SLOWER], c10[SPS_VERDICT_SLOWER], c5[SPS_VERDICT_SLOWER], one[SPS_VERDICT_SLOWER],
           one[SPS_VERDICT_INCONCLUSIVE]);
    /* what one run a side says */
    struct sps_rng r;
    sps__rng_seed(&r, 7);
    struct sps_comparison c;
    CHECK_EQ_I(trial(&r, &busy, 1, 1.30, &c), SPS_VERDICT_INCONCLUSIVE);
    CHECK_STR_HAS(c.why, "one run a side cannot tell the code from the run");
    CHECK_EQ_I(c.noise_used, SPS_NOISE_DRIFT);
    CHECK(isnan(c.noise_between));
    CHECK_EQ_I(trial(&r, &busy, 3, 1.30, &c), SPS_VERDICT_SLOWER);
    CHECK(c.ratio_lo > 1.02 && c.ratio > 1.2 && c.ratio < 1.4);
    CHECK(c.p < 0.05);
    CHECK(isfinite(c.noise_between) && isfinite(c.noise_drift));
    CHECK_STR_HAS(c.why, "p=");
}

/* A quiet machine: runs agree to 0.2%, steps to 1%: one run a side can say
 * "same", and a 5% change is found with 2 runs a side. */
static void test_quiet_machine(void) {
    const struct machine quiet = {0.002, 0.3, 0.01};
    struct sps_rng r;
    sps__rng_seed(&r, 12);
    struct sps_comparison c;
    CHECK_EQ_I(trial(&r, &quiet, 1, 1.0, &c), SPS_VERDICT_SAME);
    CHECK_STR_HAS(c.why, "within +-2%");
    CHECK_EQ_I(trial(&r, &quiet, 2, 1.05, &c), SPS_VERDICT_SLOWER);
    CHECK_EQ_I(trial(&r, &quiet, 2, 0.95, &c), SPS_VERDICT_FASTER);
    CHECK(c.ratio_hi < 0.98);
    /* 1% is real but under the 2% threshold: same */
    CHECK_EQ_I(trial(&r, &quiet, 3, 1.01, &c), SPS_VERDICT_SAME);
}

/* Runs the steps say nothing about: the steps of each run are all alike
 * but whole runs differ by 10%.  Steps-as-samples would call any pair
 * different; between the runs of a side the spread shows, and the interval
 * holds it. */
static void test_runs_are_the_unit(void) {
    enum { K = 3, N = 100 };
    static double b[K][N], n[K][N];
    const double *rb[K], *rn[K];
    size_t len[K];
    const double levels_b[K] = {0.100, 0.110, 0.095}, levels_n[K] = {0.108, 0.097, 0.102};
    struct sps_rng r;
    sps__rng_seed(&r, 3);
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < N; i++) {
            b[k][i] = levels_b[k] * exp(0.01 * sps__rng_normal(&r));
            n[k][i] = levels_n[k] * exp(0.01 * sps__rng_normal(&r));
        }
        rb[k] = b[k];
        rn[k] = n[k];
        len[k] = N;
    }
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    struct sps_sample_side sb = {rb, len, K}, sn = {rn, len, K};
    struct sps_comparison c;
    CHECK_EQ_I(sps__compare(&sb, &sn, &p, &c), 0);
    CHECK_EQ_I(c.noise_used, SPS_NOISE_BETWEEN);
    CHECK_MSG(c.noise_between > 0.04, "between-run sd %.4f", c.noise_between);
    CHECK(c.noise_drift < 0.01);
    CHECK_EQ_I(c.verdict, SPS_VERDICT_INCONCLUSIVE);
    CHECK_NEAR(c.df, 4, 0);
    /* the level is the geometric mean of the run medians */
    double gb = 1, gn = 1;
    for (int k = 0; k < K; k++) {
        double sb_[N], sn_[N];
        memcpy(sb_, b[k], sizeof sb_);
        memcpy(sn_, n[k], sizeof sn_);
        gb *= sps__median_inplace(sb_, N);
        gn *= sps__median_inplace(sn_, N);
    }
    CHECK_NEAR(c.median_base, cbrt(gb), 1e-12);
    CHECK_NEAR(c.ratio, cbrt(gn) / cbrt(gb), 1e-12);
    CHECK(c.ratio_lo < 1 && c.ratio_hi > 1);
    CHECK_MSG(c.runs_needed >= 10, "runs needed for 2%% at a 5%% run sd: %zu", c.runs_needed);
    printf("3 runs a side whose levels differ by 10%%: between-run sd %.4f, drift %.4f, interval %.3f to %.3f\n",
           c.noise_between, c.noise_drift, c.ratio_lo, c.ratio_hi);
}

/* A zone that most steps do not enter is compared on its mean per step,
 * and one absent from every BASE run has no ratio. */
static void test_sparse_zone(void) {
    enum { K = 3, N = 200 };
    static double b[K][N], n[K][N], zeros[K][N];
    const double *rb[K], *rn[K], *rz[K];
    size_t len[K];
    struct sps_rng r;
    sps__rng_seed(&r, 4);
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < N; i++) {
            b[k][i] = i % 10 ? 0 : 0.050 * exp(0.02 * sps__rng_normal(&r));
            n[k][i] = i % 10 ? 0 : 0.050 * exp(0.02 * sps__rng_normal(&r));
        }
        rb[k] = b[k];
        rn[k] = n[k];
        rz[k] = zeros[k];
        len[k] = N;
    }
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    struct sps_sample_side sb = {rb, len, K}, sn = {rn, len, K}, sz = {rz, len, K};
    struct sps_comparison c;
    CHECK_EQ_I(sps__compare(&sb, &sn, &p, &c), 0);
    CHECK(c.use_mean);
    CHECK(c.relative);
    CHECK_MSG(fabs(c.median_base - 0.005) < 0.0002, "mean per step %.5f", c.median_base);
    CHECK(c.verdict != SPS_VERDICT_SLOWER && c.verdict != SPS_VERDICT_FASTER);
    CHECK_EQ_I(sps__compare(&sz, &sn, &p, &c), 0);
    CHECK(!c.relative);
    CHECK(isnan(c.ratio));
    CHECK_EQ_I(c.verdict, SPS_VERDICT_SLOWER);
    CHECK_STR_HAS(c.why, "from 0 on the base side");
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
    /* identical constant runs: no noise, no change: same */
    double k[16];
    for (int i = 0; i < 16; i++)
        k[i] = 0.25;
    const double *rk[] = {k, k};
    size_t lk[] = {16, 16};
    struct sps_sample_side sk = {rk, lk, 2};
    CHECK_EQ_I(sps__compare(&sk, &sk, &p, &c), 0);
    CHECK_EQ_I(c.verdict, SPS_VERDICT_SAME);
    CHECK_NEAR(c.ratio, 1, 0);
    /* bad input */
    y[3] = NAN;
    CHECK_EQ_I(sps__compare(&sy, &sy, &p, &c), SPS_EINVAL);
    y[3] = -1;
    CHECK_EQ_I(sps__compare(&sy, &sy, &p, &c), SPS_EINVAL);
    y[3] = 4;
    p.alpha = 0;
    CHECK_EQ_I(sps__compare(&sy, &sy, &p, &c), SPS_EINVAL);
    sps__compare_params_default(&p);
    p.confidence = 1;
    CHECK_EQ_I(sps__compare(&sy, &sy, &p, &c), SPS_EINVAL);
    sps__compare_params_default(&p);
    CHECK_EQ_I(sps__compare(NULL, &sy, &p, &c), SPS_EINVAL);
    CHECK(!strcmp(sps__verdict_name(SPS_VERDICT_SLOWER), "slower"));
    CHECK(!strcmp(sps__verdict_name(SPS_VERDICT_INCONCLUSIVE), "inconclusive"));
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

/* The generator's draws below n are in range and roughly uniform. */
static void test_rng(void) {
    struct sps_rng r;
    sps__rng_seed(&r, 1);
    int hist[10] = {0};
    for (int i = 0; i < 100000; i++)
        hist[sps__rng_below(&r, 10)]++;
    for (int k = 0; k < 10; k++)
        CHECK_MSG(hist[k] > 9500 && hist[k] < 10500, "bucket %d holds %d of 100000", k, hist[k]);
}

int main(void) {
    test_median();
    test_student_t();
    test_run_summary();
    test_false_alarms();
    test_detection();
    test_quiet_machine();
    test_runs_are_the_unit();
    test_sparse_zone();
    test_edges();
    test_holm();
    test_rng();
    printf("%d passed, %d failed\n", check_passes, check_failures);
    return check_failures != 0;
}
