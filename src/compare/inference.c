/*
 * inference.c - the Mann-Whitney U test and the two-level
 * bootstrap behind `stepscope compare` (see inference.h and
 * docs/compare.md).
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
    p->resamples = 2000;
    p->seed = 0x5eed5eed2024ULL;
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
     * once the few x that would favour some residues are rejected; the
     * bootstrap draws billions, and a 64-bit division per draw cost a third
     * of its time */
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

/* --------------------------------------------------------- Mann-Whitney */

struct tagged {
    double v;
    int from_b;
};

static int cmp_tagged(const void *pa, const void *pb) {
    double x = ((const struct tagged *)pa)->v, y = ((const struct tagged *)pb)->v;
    return (x > y) - (x < y);
}

int sps__mann_whitney(const double *a, size_t na, const double *b, size_t nb, double *u_b, double *p) {
    if (!a || !b || !u_b || !p || na == 0 || nb == 0)
        return SPS_EINVAL;
    size_t n = na + nb;
    struct tagged *t = malloc(n * sizeof *t);
    if (!t)
        return SPS_ENOMEM;
    for (size_t i = 0; i < na; i++)
        t[i] = (struct tagged){a[i], 0};
    for (size_t i = 0; i < nb; i++)
        t[na + i] = (struct tagged){b[i], 1};
    qsort(t, n, sizeof *t, cmp_tagged);
    /* ranks 1..n, ties sharing their average; the tie term for the variance */
    double rank_sum_b = 0, tie_term = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && t[j].v == t[i].v)
            j++;
        double avg_rank = ((double)(i + 1) + (double)j) / 2;
        size_t in_b = 0;
        for (size_t k = i; k < j; k++)
            in_b += (size_t)t[k].from_b;
        rank_sum_b += avg_rank * (double)in_b;
        double ties = (double)(j - i);
        tie_term += ties * ties * ties - ties;
        i = j;
    }
    free(t);
    double dna = (double)na, dnb = (double)nb, dn = (double)n;
    double u = rank_sum_b - dnb * (dnb + 1) / 2;
    double mean = dna * dnb / 2;
    double var = dna * dnb / 12 * ((dn + 1) - (n > 1 ? tie_term / (dn * (dn - 1)) : 0));
    *u_b = u;
    if (var <= 0) { /* every sample equal: nothing tells the sides apart */
        *p = 1;
        return 0;
    }
    /* continuity correction: half a unit of U toward the mean */
    double d = fabs(u - mean) - 0.5;
    double z = d > 0 ? d / sqrt(var) : 0;
    *p = erfc(z / sqrt(2.0));
    if (*p > 1)
        *p = 1;
    return 0;
}

/* ------------------------------------------------------------ bootstrap */

static size_t side_total(const struct sps_sample_side *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->nruns; i++)
        n += s->run_len[i];
    return n;
}

/* All of a side's samples, pooled, into out (side_total of them). */
static void side_pool(const struct sps_sample_side *s, double *out) {
    size_t at = 0;
    for (size_t i = 0; i < s->nruns; i++) {
        memcpy(out + at, s->runs[i], s->run_len[i] * sizeof *out);
        at += s->run_len[i];
    }
}

/*
 * One bootstrap replicate of a side's median into buf (room for the side's
 * total, plus slack when runs differ in length): with one run, n draws from
 * its steps; with several, as many runs drawn with replacement, and each
 * drawn run's steps drawn with replacement from it.  The replicate's size
 * follows the runs drawn, so buf holds nruns x the longest run.
 */
static double replicate_median(const struct sps_sample_side *s, struct sps_rng *r, double *buf) {
    size_t n = 0;
    for (size_t k = 0; k < s->nruns; k++) {
        size_t run = s->nruns == 1 ? 0 : (size_t)sps__rng_below(r, s->nruns);
        const double *x = s->runs[run];
        size_t len = s->run_len[run];
        for (size_t i = 0; i < len; i++)
            buf[n++] = x[sps__rng_below(r, len)];
    }
    return sps__median_inplace(buf, n);
}

static size_t longest_run(const struct sps_sample_side *s) {
    size_t m = 0;
    for (size_t i = 0; i < s->nruns; i++)
        if (s->run_len[i] > m)
            m = s->run_len[i];
    return m;
}

/* The q-quantile of sorted x[0..n), linear between order statistics. */
static double quantile_sorted(const double *x, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return x[n - 1];
    double f = pos - (double)i;
    return x[i] + f * (x[i + 1] - x[i]);
}

/* The bootstrap interval of median(new) / median(base). */
static int ratio_interval(const struct sps_sample_side *base, const struct sps_sample_side *new_side,
                          const struct sps_compare_params *p, double *lo, double *hi) {
    size_t cap_b = base->nruns * longest_run(base), cap_n = new_side->nruns * longest_run(new_side);
    double *buf = malloc((cap_b > cap_n ? cap_b : cap_n) * sizeof *buf);
    double *ratios = malloc((size_t)p->resamples * sizeof *ratios);
    if (!buf || !ratios) {
        free(buf);
        free(ratios);
        return SPS_ENOMEM;
    }
    struct sps_rng rng;
    sps__rng_seed(&rng, p->seed);
    size_t kept = 0;
    for (int i = 0; i < p->resamples; i++) {
        double mb = replicate_median(base, &rng, buf);
        double mn = replicate_median(new_side, &rng, buf);
        if (mb > 0) /* a replicate whose base median is 0 has no ratio */
            ratios[kept++] = mn / mb;
    }
    free(buf);
    if (kept < 2) {
        *lo = *hi = NAN;
    } else {
        qsort(ratios, kept, sizeof *ratios, sps__cmp_double);
        double tail = (1 - p->confidence) / 2;
        *lo = quantile_sorted(ratios, kept, tail);
        *hi = quantile_sorted(ratios, kept, 1 - tail);
    }
    free(ratios);
    return 0;
}

/* ------------------------------------------------------------- compare */

static int params_valid(const struct sps_compare_params *p) {
    return p->threshold >= 0 && isfinite(p->threshold) && p->alpha > 0 && p->alpha < 1 && p->confidence > 0 &&
           p->confidence < 1 && p->resamples >= 100;
}

static int side_valid(const struct sps_sample_side *s) {
    if (!s || (s->nruns && (!s->runs || !s->run_len)))
        return 0;
    for (size_t i = 0; i < s->nruns; i++)
        for (size_t j = 0; j < s->run_len[i]; j++)
            if (!isfinite(s->runs[i][j]))
                return 0;
    return 1;
}

static double mean_of(const double *x, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return n ? sum / (double)n : NAN;
}

void sps__compare_decide(const struct sps_compare_params *p, struct sps_comparison *c) {
    if (c->n_base < p->min_samples || c->n_new < p->min_samples)
        return; /* NONE, and why, were set by sps__compare */
    int pct = (int)lround(p->threshold * 100);
    if (!isfinite(c->ratio)) {
        c->verdict = c->p < p->alpha ? (c->median_new > c->median_base ? SPS_VERDICT_SLOWER : SPS_VERDICT_FASTER)
                                     : SPS_VERDICT_SAME;
        if (c->verdict == SPS_VERDICT_SAME || c->median_new == c->median_base) {
            c->verdict = SPS_VERDICT_SAME;
            snprintf(c->why, sizeof c->why, "base median is 0 and the ranks do not differ significantly (p=%.3g)",
                     c->p);
        } else {
            snprintf(c->why, sizeof c->why, "base median is 0; the ranks differ (p=%.3g)", c->p);
        }
        return;
    }
    double change = c->ratio - 1;
    if (c->p >= p->alpha) {
        c->verdict = SPS_VERDICT_SAME;
        snprintf(c->why, sizeof c->why, "p=%.3g, not significant at %.3g", c->p, p->alpha);
    } else if (!(c->ratio_lo > 1) && !(c->ratio_hi < 1)) {
        c->verdict = SPS_VERDICT_SAME;
        snprintf(c->why, sizeof c->why, "the interval of the ratio holds 1 (%.3f to %.3f)", c->ratio_lo,
                 c->ratio_hi);
    } else if (fabs(change) < p->threshold) {
        c->verdict = SPS_VERDICT_SAME;
        snprintf(c->why, sizeof c->why, "significant (p=%.3g) but %+.1f%% is within the %d%% noise floor", c->p,
                 change * 100, pct);
    } else {
        c->verdict = change > 0 ? SPS_VERDICT_SLOWER : SPS_VERDICT_FASTER;
        snprintf(c->why, sizeof c->why, "%+.1f%% (95%% CI %+.1f%% to %+.1f%%), p=%.3g", change * 100,
                 (c->ratio_lo - 1) * 100, (c->ratio_hi - 1) * 100, c->p);
    }
}

int sps__compare(const struct sps_sample_side *base, const struct sps_sample_side *new_side,
                 const struct sps_compare_params *params, struct sps_comparison *out) {
    if (!base || !new_side || !params || !out || !params_valid(params) || !side_valid(base) ||
        !side_valid(new_side))
        return SPS_EINVAL;
    memset(out, 0, sizeof *out);
    out->median_base = out->median_new = out->mean_base = out->mean_new = NAN;
    out->ratio = out->ratio_lo = out->ratio_hi = out->u = out->cliffs_delta = NAN;
    out->p = 1;
    out->runs_base = base->nruns;
    out->runs_new = new_side->nruns;
    size_t nb = side_total(base), nn = side_total(new_side);
    out->n_base = nb;
    out->n_new = nn;
    if (nb < params->min_samples || nn < params->min_samples) {
        out->verdict = SPS_VERDICT_NONE;
        snprintf(out->why, sizeof out->why, "too few samples to judge (%zu base, %zu new; %zu needed on each side)",
                 nb, nn, params->min_samples);
        return 0;
    }
    double *pb = malloc(nb * sizeof *pb), *pn = malloc(nn * sizeof *pn);
    if (!pb || !pn) {
        free(pb);
        free(pn);
        return SPS_ENOMEM;
    }
    side_pool(base, pb);
    side_pool(new_side, pn);
    out->mean_base = mean_of(pb, nb);
    out->mean_new = mean_of(pn, nn);
    int rc = sps__mann_whitney(pb, nb, pn, nn, &out->u, &out->p);
    out->median_base = sps__median_inplace(pb, nb);
    out->median_new = sps__median_inplace(pn, nn);
    free(pb);
    free(pn);
    if (rc)
        return rc;
    out->cliffs_delta = 2 * out->u / ((double)nb * (double)nn) - 1;
    if (out->median_base > 0) {
        out->ratio = out->median_new / out->median_base;
        rc = ratio_interval(base, new_side, params, &out->ratio_lo, &out->ratio_hi);
        if (rc)
            return rc;
    }
    sps__compare_decide(params, out);
    return 0;
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
