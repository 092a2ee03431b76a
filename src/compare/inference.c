/*
 * inference.c - run-level inference behind `stepscope compare`: each run
 * summarised by its median and its drift, a t interval of the change in
 * level from the spread between runs and from the runs' drift (see
 * inference.h and docs/compare.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/inference.h"
#include "stats.h"
#include "stepscope.h"

void sps__compare_params_default(struct sps_compare_params *p) {
    p->threshold = 0.02;
    p->alpha = 0.05;
    p->confidence = 0.95;
    p->min_samples = 8;
}

const char *sps__verdict_name(enum sps_verdict v) {
    switch (v) {
    case SPS_VERDICT_SAME:
        return "same";
    case SPS_VERDICT_FASTER:
        return "faster";
    case SPS_VERDICT_SLOWER:
        return "slower";
    case SPS_VERDICT_INCONCLUSIVE:
        return "inconclusive";
    default:
        return "none";
    }
}

/* ------------------------------------------------------------------ rng */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sps__rng_seed(struct sps_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t sps__rng_next(struct sps_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t sps__rng_below(struct sps_rng *r, uint64_t n) {
    /* Lemire's multiply-shift: the high half of x * n is uniform in [0, n)
     * once the few x that would favour some residues are rejected */
    unsigned __int128 m = (unsigned __int128)sps__rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = -n % n; /* 2^64 mod n */
        while (low < threshold) {
            m = (unsigned __int128)sps__rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double sps__rng_normal(struct sps_rng *r) {
    /* 53-bit uniforms in (0, 1] and [0, 1) */
    double u1 = ((double)(sps__rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(sps__rng_next(r) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ------------------------------------------------------ Student's t */

/* The continued fraction of the incomplete beta function, evaluated by
 * the modified Lentz method; converges quickly for x < (a+1)/(a+b+2). */
static double beta_fraction(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    d = 1 / (fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 10000; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        for (int half = 0; half < 2; half++) {
            d = 1 + num * d;
            d = 1 / (fabs(d) < tiny ? tiny : d);
            c = 1 + num / c;
            if (fabs(c) < tiny)
                c = tiny;
            h *= d * c;
            num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        }
        if (fabs(d * c - 1) < 1e-15)
            break;
    }
    return h;
}

/* The regularised incomplete beta I_x(a, b). */
static double incomplete_beta(double a, double b, double x) {
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2))
        return front * beta_fraction(a, b, x) / a;
    return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double sps__t_two_sided_p(double t, double df) {
    if (!isfinite(t))
        return isnan(t) ? 1 : 0;
    if (df > 1e6) /* the normal, where the fraction would crawl */
        return erfc(fabs(t) / sqrt(2.0));
    return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double sps__t_quantile_two_sided(double tail, double df) {
    /* P(|T| > t) falls from 1 at t = 0 and is convex for t > 0: Newton's
     * steps (its slope is minus twice the t density) inside a bisection
     * bracket that every evaluation narrows.  Each evaluation is a
     * continued fraction of up to thousands of terms at large df, and a
     * comparison of many ranks' phases asks for many quantiles: Newton
     * needs a handful of evaluations where plain bisection needed about 45. */
    double lo = 0, hi = 1;
    while (sps__t_two_sided_p(hi, df) > tail && hi < 1e12)
        hi *= 2;
    double log_c = lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * M_PI);
    double t = (lo + hi) / 2;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double f = sps__t_two_sided_p(t, df) - tail;
        if (f == 0)
            return t;
        if (f > 0)
            lo = t;
        else
            hi = t;
        double slope = 2 * exp(log_c - (df + 1) / 2 * log1p(t * t / df));
        double next = t + f / slope;
        if (!(next > lo && next < hi))
            next = (lo + hi) / 2;
        if (fabs(next - t) <= 1e-13 * t)
            return next;
        t = next;
    }
    return t;
}

/* ------------------------------------------------------ run summaries */

/* The Gaussian efficiency of the median absolute deviation: its variance
 * estimate is worth this share of the degrees of freedom. */
#define SPS_MAD_EFFICIENCY 0.37

static double mean_of(const double *x, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return n ? sum / (double)n : NAN;
}

/* The centre of x[0..n): its median (selection on a copy in scratch) or
 * its mean. */
static double centre_of(const double *x, size_t n, int use_mean, double *scratch) {
    if (use_mean)
        return mean_of(x, n);
    memcpy(scratch, x, n * sizeof *x);
    return sps__median_inplace(scratch, n);
}

void sps__run_summarise(const double *x, size_t n, int use_mean, int halves, double *scratch,
                        struct sps_run_summary *out) {
    out->center = centre_of(x, n, use_mean, scratch);
    out->blocks = n / SPS_BLOCK_MIN_STEPS < SPS_RUN_BLOCKS ? n / SPS_BLOCK_MIN_STEPS : SPS_RUN_BLOCKS;
    out->drift_var = NAN;
    if (out->blocks >= 2) {
        /* contiguous blocks, as even as whole steps allow; the spread of
         * their centres by the median absolute deviation, so a block or two
         * that hit a stall (a run on a busy machine has them) do not pass
         * for a wandering level: the run's median is as robust to them */
        double centres[SPS_RUN_BLOCKS], dev[SPS_RUN_BLOCKS];
        for (size_t b = 0; b < out->blocks; b++) {
            size_t from = n * b / out->blocks, to = n * (b + 1) / out->blocks;
            centres[b] = centre_of(x + from, to - from, use_mean, scratch);
        }
        memcpy(dev, centres, sizeof dev);
        double mid = sps__median_inplace(dev, out->blocks);
        for (size_t b = 0; b < out->blocks; b++)
            dev[b] = fabs(centres[b] - mid);
        double sd = 1.482602218505602 * sps__median_inplace(dev, out->blocks); /* the normal's sd from its MAD */
        out->drift_var = sd * sd;
    }
    out->halves = NAN;
    if (halves && n >= 2 * SPS_BLOCK_MIN_STEPS) {
        double first = centre_of(x, n / 2, use_mean, scratch);
        double second = centre_of(x + n / 2, n - n / 2, use_mean, scratch);
        if (first > 0)
            out->halves = second / first - 1;
    }
}

/* ------------------------------------------------------------- compare */

static int params_valid(const struct sps_compare_params *p) {
    return p->threshold >= 0 && isfinite(p->threshold) && p->alpha > 0 && p->alpha < 1 && p->confidence > 0 &&
           p->confidence < 1;
}

static int side_valid(const struct sps_sample_side *s) {
    if (!s || (s->nruns && (!s->runs || !s->run_len)))
        return 0;
    for (size_t i = 0; i < s->nruns; i++)
        for (size_t j = 0; j < s->run_len[i]; j++)
            if (!isfinite(s->runs[i][j]) || s->runs[i][j] < 0)
                return 0;
    return 1;
}

static size_t side_total(const struct sps_sample_side *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->nruns; i++)
        n += s->run_len[i];
    return n;
}

static double side_mean(const struct sps_sample_side *s) {
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->nruns; i++) {
        for (size_t j = 0; j < s->run_len[i]; j++)
            sum += s->runs[i][j];
        n += s->run_len[i];
    }
    return n ? sum / (double)n : NAN;
}

/* A side's runs, summarised; the summaries live in the caller's array. */
struct side_runs {
    const struct sps_sample_side *side;
    struct sps_run_summary *runs; /* [nruns], the non-empty runs first */
    size_t n;                     /* non-empty runs */
};

static void summarise_side(struct side_runs *s, int use_mean, double *scratch) {
    s->n = 0;
    for (size_t i = 0; i < s->side->nruns; i++)
        if (s->side->run_len[i] > 0)
            sps__run_summarise(s->side->runs[i], s->side->run_len[i], use_mean, 0, scratch, &s->runs[s->n++]);
}

static int all_centres_positive(const struct side_runs *s) {
    for (size_t i = 0; i < s->n; i++)
        if (!(s->runs[i].center > 0))
            return 0;
    return 1;
}

/* A run's level on the scale of the test: its centre's log (relative), or
 * the centre itself (absolute). */
static double level(const struct sps_run_summary *r, int relative) {
    return relative ? log(r->center) : r->center;
}

/* Its drift variance on that scale: relative to its centre, or absolute. */
static double drift(const struct sps_run_summary *r, int relative) {
    return relative ? r->drift_var / (r->center * r->center) : r->drift_var;
}

/* The estimates the interval comes from: the mean level of each side, the
 * pooled variance of run levels between runs, and the pooled drift. */
struct noise {
    double level_base, level_new;
    double var_between, df_between; /* df 0: one run a side */
    double var_drift, df_drift;     /* df 0: no run had two blocks */
};

static double mean_level(const struct side_runs *s, int relative) {
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += level(&s->runs[i], relative);
    return sum / (double)s->n;
}

static void estimate_noise(const struct side_runs *b, const struct side_runs *n, int relative, struct noise *e) {
    e->level_base = mean_level(b, relative);
    e->level_new = mean_level(n, relative);
    double ss = 0, drift_ss = 0, drift_df = 0;
    const struct side_runs *sides[2] = {b, n};
    const double levels[2] = {e->level_base, e->level_new};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n; i++) {
            const struct sps_run_summary *r = &sides[s]->runs[i];
            double dev = level(r, relative) - levels[s];
            ss += dev * dev;
            if (r->blocks >= 2 && isfinite(r->drift_var)) {
                /* a MAD has the precision of a standard deviation from
                 * 37% as many normal samples */
                drift_ss += SPS_MAD_EFFICIENCY * (double)(r->blocks - 1) * drift(r, relative);
                drift_df += SPS_MAD_EFFICIENCY * (double)(r->blocks - 1);
            }
        }
    e->df_between = (double)(b->n + n->n) - 2;
    e->var_between = e->df_between > 0 ? ss / e->df_between : NAN;
    e->df_drift = drift_df;
    e->var_drift = drift_df > 0 ? drift_ss / drift_df : NAN;
}

/* Two-sided p of a change d whose standard error is se, on df. */
static double p_of(double d, double se, double df) {
    if (se > 0)
        return sps__t_two_sided_p(d / se, df);
    return d == 0 ? 1 : 0; /* no noise at all: any change is real */
}

/*
 * The smallest number of runs a side at which a change of delta (on the
 * test's scale) would be found with 80% power at alpha, given a run's
 * level varies with sd sigma: t_{alpha}(2n-2) + z_{0.8} standard errors of
 * sigma * sqrt(2/n) fit in delta.  0 when unknown; capped at 1000.
 */
static size_t runs_needed(double delta, double sigma, double alpha) {
    if (!(delta > 0) || !isfinite(sigma))
        return 0;
    if (sigma == 0)
        return 2;
    const double z_power = 0.8416212335729143; /* the normal's 80th percentile */
    for (size_t k = 2; k <= 1000; k++) {
        double se = sigma * sqrt(2.0 / (double)k);
        if ((sps__t_quantile_two_sided(alpha, 2.0 * (double)k - 2) + z_power) * se <= delta)
            return k;
    }
    return 1000;
}

/* Fill the interval, p and noise fields of c from e. */
static void interval_from(const struct noise *e, const struct side_runs *b, const struct side_runs *n, int relative,
                          const struct sps_compare_params *p, struct sps_comparison *c) {
    double d = e->level_new - e->level_base;
    double scale = sqrt(1.0 / (double)b->n + 1.0 / (double)n->n);
    double tail = 1 - p->confidence;
    double half = -1;
    c->p = 1;
    c->noise_between = e->df_between > 0 ? sqrt(e->var_between) : NAN;
    c->noise_drift = e->df_drift > 0 ? sqrt(e->var_drift) : NAN;
    if (!relative) { /* reported relative to BASE's level where it has one */
        c->noise_between = e->level_base > 0 ? c->noise_between / e->level_base : NAN;
        c->noise_drift = e->level_base > 0 ? c->noise_drift / e->level_base : NAN;
    }
    double sigma = NAN;
    /* each estimate gives an interval; the wider one is the one to trust,
     * and the larger p */
    if (e->df_between > 0) {
        sigma = sqrt(e->var_between);
        half = sps__t_quantile_two_sided(tail, e->df_between) * sigma * scale;
        c->p = p_of(d, sigma * scale, e->df_between);
        c->noise_used = SPS_NOISE_BETWEEN;
        c->df = e->df_between;
    }
    if (e->df_drift > 0) {
        double s = sqrt(e->var_drift);
        double h = sps__t_quantile_two_sided(tail, e->df_drift) * s * scale;
        double pd = p_of(d, s * scale, e->df_drift);
        if (c->noise_used == SPS_NOISE_NONE || pd > c->p)
            c->p = pd;
        if (h > half) {
            half = h;
            c->noise_used = SPS_NOISE_DRIFT;
            c->df = e->df_drift;
        }
        if (!(sigma >= s))
            sigma = s;
    }
    if (relative) {
        c->ratio = exp(d);
        if (half >= 0) {
            c->ratio_lo = exp(d - half);
            c->ratio_hi = exp(d + half);
        }
        c->runs_needed = runs_needed(log1p(p->threshold), sigma, p->alpha);
    } else if (e->level_base > 0) {
        c->ratio = e->level_new / e->level_base;
        if (half >= 0) {
            c->ratio_lo = (e->level_new - half) / e->level_base;
            c->ratio_hi = (e->level_new + half) / e->level_base;
        }
        c->runs_needed = runs_needed(p->threshold * e->level_base, sigma, p->alpha);
    }
}

int sps__compare(const struct sps_sample_side *base, const struct sps_sample_side *new_side,
                 const struct sps_compare_params *params, struct sps_comparison *out) {
    if (!base || !new_side || !params || !out || !params_valid(params) || !side_valid(base) ||
        !side_valid(new_side))
        return SPS_EINVAL;
    memset(out, 0, sizeof *out);
    out->median_base = out->median_new = out->mean_base = out->mean_new = NAN;
    out->ratio = out->ratio_lo = out->ratio_hi = out->noise_between = out->noise_drift = NAN;
    out->p = 1;
    out->runs_base = base->nruns;
    out->runs_new = new_side->nruns;
    out->n_base = side_total(base);
    out->n_new = side_total(new_side);
    if (out->n_base < params->min_samples || out->n_new < params->min_samples) {
        out->verdict = SPS_VERDICT_NONE;
        snprintf(out->why, sizeof out->why, "too few samples to judge (%zu base, %zu new; %zu needed on each side)",
                 out->n_base, out->n_new, params->min_samples);
        return 0;
    }
    out->mean_base = side_mean(base);
    out->mean_new = side_mean(new_side);
    size_t longest = 1;
    const struct sps_sample_side *sides[2] = {base, new_side};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->nruns; i++)
            if (sides[s]->run_len[i] > longest)
                longest = sides[s]->run_len[i];
    double *scratch = malloc(longest * sizeof *scratch);
    struct sps_run_summary *sums = malloc((base->nruns + new_side->nruns) * sizeof *sums);
    if (!scratch || !sums) {
        free(scratch);
        free(sums);
        return SPS_ENOMEM;
    }
    struct side_runs b = {base, sums, 0}, n = {new_side, sums + base->nruns, 0};
    /* the median per run; a zone that most steps of some run do not enter
     * has a median of 0 there, and is compared on its mean per step */
    summarise_side(&b, 0, scratch);
    summarise_side(&n, 0, scratch);
    if (!all_centres_positive(&b) || !all_centres_positive(&n)) {
        out->use_mean = 1;
        summarise_side(&b, 1, scratch);
        summarise_side(&n, 1, scratch);
    }
    free(scratch);
    /* a side absent from a whole run has a level of 0: no log scale */
    out->relative = all_centres_positive(&b) && all_centres_positive(&n);
    struct noise e;
    estimate_noise(&b, &n, out->relative, &e);
    out->median_base = out->relative ? exp(e.level_base) : e.level_base;
    out->median_new = out->relative ? exp(e.level_new) : e.level_new;
    interval_from(&e, &b, &n, out->relative, params, out);
    free(sums);
    sps__compare_decide(params, out);
    return 0;
}

/* ------------------------------------------------------------- verdict */

static void say_noise(const struct sps_comparison *c, char *buf, size_t len) {
    if (c->noise_used == SPS_NOISE_BETWEEN)
        snprintf(buf, len, "runs differ by %.1f%% (sd of a run's level, from %zu+%zu runs)", c->noise_between * 100,
                 c->runs_base, c->runs_new);
    else if (c->noise_used == SPS_NOISE_DRIFT)
        snprintf(buf, len, "runs drift by %.1f%% within themselves (spread of block medians)", c->noise_drift * 100);
    else
        snprintf(buf, len, "no estimate of the noise");
}

/*
 * The verdict from the interval of the change (at params.confidence) and p
 * (adjusted, for zones):
 *   slower / faster  p < alpha, the whole interval beyond the threshold,
 *                    and a between-run estimate (3 runs or more in all);
 *   same             the whole interval within the threshold;
 *   inconclusive     anything else: the change may or may not be as large
 *                    as the threshold, or one run a side cannot say.
 */
void sps__compare_decide(const struct sps_compare_params *p, struct sps_comparison *c) {
    if (c->n_base < p->min_samples || c->n_new < p->min_samples)
        return; /* NONE, and why, were set by sps__compare */
    int pct = (int)lround(p->threshold * 100);
    char noise[128];
    say_noise(c, noise, sizeof noise);
    int significant = c->p < p->alpha && c->noise_used != SPS_NOISE_NONE;
    int gate_capable = c->runs_base + c->runs_new >= 3; /* a between-run estimate exists */
    double change = c->ratio - 1, thr = p->threshold;
    int known = isfinite(c->ratio_lo) && isfinite(c->ratio_hi);
    char interval[64] = "";
    if (known)
        snprintf(interval, sizeof interval, "%+.1f%% to %+.1f%%", (c->ratio_lo - 1) * 100, (c->ratio_hi - 1) * 100);
    int beyond = known && (c->ratio_lo > 1 + thr || c->ratio_hi < 1 - thr);
    int zero_base = !isfinite(change) && !(c->median_base > 0) && c->median_new > 0;
    if (known && c->ratio_lo > 1 - thr && c->ratio_hi < 1 + thr) {
        c->verdict = SPS_VERDICT_SAME;
        snprintf(c->why, sizeof c->why, "%+.1f%%, interval %s within +-%d%%; %s", change * 100, interval, pct, noise);
    } else if (significant && gate_capable && (beyond || zero_base)) {
        c->verdict = (zero_base || c->ratio_lo > 1) ? SPS_VERDICT_SLOWER : SPS_VERDICT_FASTER;
        if (zero_base)
            snprintf(c->why, sizeof c->why, "from 0 on the base side, p=%.3g; %s", c->p, noise);
        else
            snprintf(c->why, sizeof c->why, "%+.1f%% (%g%% interval %s), p=%.3g; %s", change * 100,
                     100 * p->confidence, interval, c->p, noise);
    } else {
        c->verdict = SPS_VERDICT_INCONCLUSIVE;
        if (significant && !gate_capable)
            snprintf(c->why, sizeof c->why,
                     "%+.1f%% is beyond each run's own drift (%.1f%%), but one run a side cannot tell the code "
                     "from the run: a run's level moves between runs",
                     change * 100, c->noise_drift * 100);
        else if (known && isfinite(change))
            snprintf(c->why, sizeof c->why, "%+.1f%%, but the interval %s is not clear of %d%%%s; %s",
                     change * 100, interval, pct, significant ? "" : " nor of 0", noise);
        else
            snprintf(c->why, sizeof c->why, "p=%.3g; %s", c->p, noise);
    }
}

/* ---------------------------------------------------------------- Holm */

struct indexed_p {
    double p;
    size_t at;
};

static int cmp_indexed_p(const void *pa, const void *pb) {
    const struct indexed_p *a = pa, *b = pb;
    if (a->p != b->p)
        return a->p < b->p ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

int sps__holm_adjust(double *p, size_t n) {
    if (n < 2)
        return 0;
    struct indexed_p *s = malloc(n * sizeof *s);
    if (!s)
        return SPS_ENOMEM;
    for (size_t i = 0; i < n; i++)
        s[i] = (struct indexed_p){p[i], i};
    qsort(s, n, sizeof *s, cmp_indexed_p);
    /* the k-th smallest is multiplied by n - k; a running maximum keeps
     * the adjusted values in the order of the raw ones */
    double running = 0;
    for (size_t k = 0; k < n; k++) {
        double adj = s[k].p * (double)(n - k);
        if (adj > 1)
            adj = 1;
        if (adj < running)
            adj = running;
        running = adj;
        p[s[k].at] = adj;
    }
    free(s);
    return 0;
}
