/*
 * inference.h - did NEW get faster or slower than BASE?  The statistics
 * behind `stepscope compare`, on plain arrays of per-step times grouped by
 * run (docs/compare.md, "The statistics").
 *
 * The steps of one run are not independent samples: they share that run's
 * machine state (the other work on a shared machine, clocks, placement,
 * caches) and each step resembles the one before it.  Two runs of the same
 * code therefore differ by more than their steps' spread suggests, and a
 * test that pools steps calls that difference significant.  So the unit of
 * evidence here is the run:
 *
 *  - each run is summarised by its median step (its mean for a zone that
 *    most steps do not enter), and cut into up to 8 contiguous blocks whose
 *    medians show how far the run's own level wanders (its drift, a robust
 *    spread: an A/A self-check of the run against itself);
 *  - a side's level is the mean of its runs' logs (the geometric mean of
 *    the run medians), and the change is NEW's level over BASE's;
 *  - how much a run's level varies is estimated twice: between the runs of
 *    a side (when a side has two or more runs), and from the runs' drift,
 *    taken as the floor: a run is assumed to be no more alike another run
 *    than one of its blocks is like another block.  The wider of the two
 *    t intervals is used; with one run a side, only the floor is known;
 *  - a verdict of slower or faster needs 3 or more runs in all (one run a
 *    side cannot measure how runs differ), p < alpha and the whole
 *    interval beyond the threshold; "same" needs the whole interval within
 *    the threshold; anything else is "inconclusive", with the number of
 *    runs a side that would resolve a change of the threshold's size.
 *
 * Every step is touched a constant number of times (selection, not
 * sorting): linear in the steps, no resampling.  Pure functions of their
 * arguments; thread-safe.
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
    double threshold;   /* practical threshold: a smaller relative change is "same" (0.02) */
    double alpha;       /* significance level (0.05) */
    double confidence;  /* of the change's interval (0.95) */
    size_t min_samples; /* fewer steps on either side: no verdict (8) */
};

/* The defaults above. */
void sps__compare_params_default(struct sps_compare_params *p);

enum sps_verdict {
    SPS_VERDICT_NONE = 0,        /* not enough samples, or nothing to compare */
    SPS_VERDICT_SAME = 1,        /* no change as large as the threshold */
    SPS_VERDICT_FASTER = 2,      /* NEW takes significantly less time, by the threshold or more */
    SPS_VERDICT_SLOWER = 3,      /* NEW takes significantly more time, by the threshold or more */
    SPS_VERDICT_INCONCLUSIVE = 4 /* the runs' noise hides whether it changed by the threshold */
};

/* "none", "same", "faster", "slower", "inconclusive" */
const char *sps__verdict_name(enum sps_verdict v);

/* What the noise was estimated from. */
enum sps_noise_source {
    SPS_NOISE_NONE = 0,    /* no estimate: too few steps and runs */
    SPS_NOISE_BETWEEN = 1, /* the spread of run levels within each side */
    SPS_NOISE_DRIFT = 2    /* the floor from each run's own drift */
};

struct sps_comparison {
    size_t n_base, n_new;       /* samples (steps) on each side */
    size_t runs_base, runs_new; /* runs on each side */
    int use_mean;               /* runs summarised by their mean (a zone absent from most steps) */
    int relative;               /* noise on the log scale; 0: absolute (a side's level is 0) */
    double median_base, median_new; /* the side's level: geometric mean of its runs' medians (means) */
    double mean_base, mean_new;     /* of all the side's steps */
    double ratio;               /* median_new / median_base; NAN when median_base is 0 */
    double ratio_lo, ratio_hi;  /* its interval at params.confidence; NAN without a noise estimate */
    double p;                   /* two-sided, of no change; 1 when unknown */
    double noise_between;       /* sd of a run's level from the runs' spread (relative); NAN: one run a side */
    double noise_drift;         /* sd of a run's level from the runs' drift (relative); NAN: none */
    enum sps_noise_source noise_used; /* which gave the interval (the wider) */
    double df;                  /* degrees of freedom of that estimate */
    size_t runs_needed;         /* runs a side to tell a threshold-sized change from this noise; 0: unknown */
    enum sps_verdict verdict;
    char why[320];              /* one line: what decided the verdict */
};

/*
 * Compare two sides.  Returns 0, or SPS_ENOMEM / SPS_EINVAL (NULL argument,
 * a non-finite or negative sample, params out of range: threshold < 0,
 * alpha or confidence not in (0, 1)).  A side with fewer than
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

/* --- the pieces, exposed for compare.c and the tests --------------------- */

/* Blocks a run is cut into to see its drift (fewer when a run is short:
 * each block holds at least SPS_BLOCK_MIN_STEPS steps). */
#define SPS_RUN_BLOCKS 8
#define SPS_BLOCK_MIN_STEPS 4

/* One run of one series, summarised. */
struct sps_run_summary {
    double center;    /* the run's median (mean with use_mean) */
    size_t blocks;    /* contiguous blocks; < 2: no drift estimate */
    double drift_var; /* the blocks' centres' variance, from their median absolute
                       * deviation (x 1.4826, squared), in the samples' unit squared */
    double halves;    /* second half's centre over the first's, minus 1: the A/A self-check; NAN */
};

/* Summarise x[0..n) (n > 0); scratch holds n doubles.  halves: also the
 * A/A of the two halves (else it is NAN).  Pure; thread-safe. */
void sps__run_summarise(const double *x, size_t n, int use_mean, int halves, double *scratch,
                        struct sps_run_summary *out);

/* Student's t: two-sided tail P(|T| > t) with df degrees of freedom (df > 0),
 * and the t with P(|T| > t) = tail. */
double sps__t_two_sided_p(double t, double df);
double sps__t_quantile_two_sided(double tail, double df);

/* A seeded generator (xoshiro256**); the state is the caller's.  For the
 * tests' and the benchmark's synthetic runs. */
struct sps_rng {
    uint64_t s[4];
};
void sps__rng_seed(struct sps_rng *r, uint64_t seed);
uint64_t sps__rng_next(struct sps_rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t sps__rng_below(struct sps_rng *r, uint64_t n);
/* Standard normal (Box-Muller). */
double sps__rng_normal(struct sps_rng *r);

#endif /* SPS_COMPARE_INFERENCE_H */
