/*
 * inference.h - did NEW get faster or slower than BASE?  The statistics
 * behind `stepscope compare`, on plain arrays of per-step times.
 *
 * Training steps are not the i.i.d. normal samples a t-test wants: a few
 * steps stall on a checkpoint, a garbage collection or a slow batch, and
 * repeated runs of the same code differ from each other by more than their
 * steps differ within a run.  So everything here is rank- or median-based
 * and resamples whole runs:
 *
 *  - the effect is the ratio of medians, NEW / BASE, whose 95% confidence
 *    interval comes from a bootstrap that, when a side has several runs,
 *    first resamples the runs and then the steps within each (a two-level
 *    bootstrap), so run-to-run variation widens the interval as it should;
 *  - the p-value is the Mann-Whitney U test's (two-sided, normal
 *    approximation with tie and continuity corrections), which outliers
 *    move by at most their count;
 *  - the effect size is Cliff's delta, P(new > base) - P(new < base);
 *  - the verdict needs all three of p < alpha, a confidence interval that
 *    excludes 1, and a median change of at least the noise floor.
 *
 * Everything is deterministic: the bootstrap's generator is seeded.
 * Pure functions of their arguments; thread-safe.
 */
#ifndef SPS_COMPARE_INFERENCE_H
#define SPS_COMPARE_INFERENCE_H

#include <stddef.h>
#include <stdint.h>

/* One side of a comparison: its samples, grouped by run.  Borrowed. */
struct sps_sample_side {
    const double *const *runs; /* runs[i][0..run_len[i]) */
    const size_t *run_len;
    size_t nruns;
};

struct sps_compare_params {
    double threshold;   /* noise floor: a relative median change below it is "no change" (0.02) */
    double alpha;       /* significance level of the U test (0.05) */
    double confidence;  /* of the ratio's interval (0.95) */
    int resamples;      /* bootstrap resamples (2000) */
    uint64_t seed;      /* of the bootstrap's generator */
    size_t min_samples; /* fewer on either side: no verdict (8) */
};

/* The defaults above. */
void sps__compare_params_default(struct sps_compare_params *p);

enum sps_verdict {
    SPS_VERDICT_NONE = 0,   /* not enough samples, or nothing to compare */
    SPS_VERDICT_SAME = 1,   /* no significant change beyond the noise floor */
    SPS_VERDICT_FASTER = 2, /* NEW takes significantly less time */
    SPS_VERDICT_SLOWER = 3  /* NEW takes significantly more time */
};

const char *sps__verdict_name(enum sps_verdict v); /* "none", "same", "faster", "slower" */

struct sps_comparison {
    size_t n_base, n_new;         /* samples on each side */
    size_t runs_base, runs_new;   /* runs on each side */
    double median_base, median_new;
    double mean_base, mean_new;
    double ratio;                 /* median_new / median_base; NAN when median_base is 0 */
    double ratio_lo, ratio_hi;    /* its bootstrap interval; NAN when ratio is */
    double u;                     /* Mann-Whitney U of NEW (pairs new > base, ties half) */
    double p;                     /* two-sided p-value; 1 when every sample is equal */
    double cliffs_delta;          /* P(new > base) - P(new < base), in [-1, 1] */
    enum sps_verdict verdict;
    char why[160];                /* one line: what decided the verdict */
};

/*
 * Compare two sides.  Returns 0, or SPS_ENOMEM / SPS_EINVAL (NULL argument,
 * a non-finite sample, params out of range: threshold < 0, alpha or
 * confidence not in (0, 1), resamples < 100).  A side with fewer than
 * params->min_samples samples is not an error: the verdict is NONE and why
 * says so.
 */
int sps__compare(const struct sps_sample_side *base, const struct sps_sample_side *new_side,
                 const struct sps_compare_params *params, struct sps_comparison *out);

/* Decide c->verdict and c->why again from its fields (after c->p was
 * adjusted for multiple comparisons, say).  A comparison with too few
 * samples keeps its NONE. */
void sps__compare_decide(const struct sps_compare_params *params, struct sps_comparison *c);

/* Holm's step-down adjustment of p[0..n) in place: the family-wise error of
 * n tests stays under alpha when each adjusted p is held to alpha.
 * Returns 0 or SPS_ENOMEM. */
int sps__holm_adjust(double *p, size_t n);

/* --- the pieces, exposed for the tests ----------------------------------- */

/* Mann-Whitney U of b against a (pairs b > a, ties count half) and its
 * two-sided p-value.  Returns 0, SPS_ENOMEM or SPS_EINVAL (an empty side). */
int sps__mann_whitney(const double *a, size_t na, const double *b, size_t nb, double *u_b, double *p);

/* A seeded generator (xoshiro256**); the state is the caller's. */
struct sps_rng {
    uint64_t s[4];
};
void sps__rng_seed(struct sps_rng *r, uint64_t seed);
uint64_t sps__rng_next(struct sps_rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t sps__rng_below(struct sps_rng *r, uint64_t n);
/* Standard normal (Box-Muller), for the tests' synthetic runs. */
double sps__rng_normal(struct sps_rng *r);

#endif /* SPS_COMPARE_INFERENCE_H */
