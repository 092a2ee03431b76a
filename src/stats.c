/* stats.c - merging aggregates and deriving statistics (see stats.h). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "record_format.h"
#include "stepscope.h"

int sps__agg_merge(struct sps_agg *dst, const struct sps_agg *src) {
    if (src->count == 0)
        return 0;
    int first = dst->count == 0;
    dst->kind = src->kind;
    if (src->kind == SPS_KIND_VALUE) {
        if (first) {
            dst->first = src->first;
            dst->min = src->min;
            dst->max = src->max;
        }
        dst->sum += src->sum;
        dst->sumsq += src->sumsq;
        dst->min = fmin(dst->min, src->min);
        dst->max = fmax(dst->max, src->max);
        dst->last = src->last;
        dst->count += src->count;
        return 0;
    }
    if (first)
        dst->min_ns = UINT64_MAX;
    dst->count += src->count;
    dst->total_ns += src->total_ns;
    dst->self_ns += src->self_ns;
    dst->sumsq_ns += src->sumsq_ns;
    if (src->min_ns < dst->min_ns)
        dst->min_ns = src->min_ns;
    if (src->max_ns > dst->max_ns)
        dst->max_ns = src->max_ns;
    if (src->hist) {
        if (!dst->hist && !(dst->hist = calloc(SPS_HIST_BUCKETS, sizeof *dst->hist)))
            return SPS_ENOMEM;
        for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++)
            dst->hist[b] += src->hist[b];
    }
    return 0;
}

int sps__agg_from_record(struct sps_agg *d, const struct sps_rec_agg *a) {
    memset(d, 0, sizeof *d);
    d->kind = a->kind;
    d->count = a->count;
    if (a->kind == SPS_KIND_VALUE) {
        d->sum = a->u.v.sum;
        d->sumsq = a->u.v.sumsq;
        d->min = a->u.v.min;
        d->max = a->u.v.max;
        d->first = a->u.v.first;
        d->last = a->u.v.last;
        return 0;
    }
    d->total_ns = a->u.z.total_ns;
    d->self_ns = a->u.z.self_ns;
    d->min_ns = a->u.z.min_ns;
    d->max_ns = a->u.z.max_ns;
    d->sumsq_ns = (unsigned __int128)a->u.z.sumsq_hi << 64 | a->u.z.sumsq_lo;
    if (sps_kind_is_timed(a->kind) && a->count) {
        if (!(d->hist = malloc(SPS_HIST_BUCKETS * sizeof *d->hist)))
            return SPS_ENOMEM;
        memcpy(d->hist, a + 1, SPS_HIST_BUCKETS * sizeof *d->hist);
    }
    return 0;
}

void sps__agg_free(struct sps_agg *a) {
    free(a->hist);
    a->hist = NULL;
}

uint64_t sps__hist_percentile(const uint64_t *hist, uint64_t count, double p, uint64_t min_ns,
                              uint64_t max_ns) {
    if (!hist || count == 0)
        return 0;
    /* nearest rank: the smallest value with at least p% of values <= it */
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)count);
    if (rank < 1)
        rank = 1;
    if (rank > count)
        rank = count;
    uint64_t seen = 0;
    for (uint32_t b = 0; b < SPS_HIST_BUCKETS; b++) {
        seen += hist[b];
        if (seen >= rank) {
            uint64_t low = sps_hist_bucket_low(b), width = sps_hist_bucket_width(b);
            uint64_t v = width == 1 ? low : low + width / 2;
            if (v < min_ns)
                v = min_ns;
            if (v > max_ns)
                v = max_ns;
            return v;
        }
    }
    return max_ns;
}

void sps__value_stats(const struct sps_agg *a, struct sps_stats *out) {
    memset(out, 0, sizeof *out);
    out->count = a->count;
    double mean = a->count ? a->sum / (double)a->count : NAN;
    double var = a->count ? a->sumsq / (double)a->count - mean * mean : NAN;
    out->mean_s = mean;
    out->std_s = var > 0 ? sqrt(var) : var == var ? 0.0 : NAN; /* rounding can make var a hair negative */
}

void sps__stats_compute(const struct sps_agg *a, struct sps_stats *out) {
    memset(out, 0, sizeof *out);
    out->count = a->count;
    if (a->count == 0)
        return;
    double n = (double)a->count;
    out->total_s = (double)a->total_ns / 1e9;
    out->self_s = (double)a->self_ns / 1e9;
    out->mean_s = out->total_s / n;
    /* variance from exact integer sums, in long double to keep the
     * difference of two large numbers meaningful */
    long double mean_ns = (long double)a->total_ns / (long double)a->count;
    long double var = (long double)a->sumsq_ns / (long double)a->count - mean_ns * mean_ns;
    out->std_s = var > 0 ? (double)sqrtl(var) / 1e9 : 0.0;
    out->min_s = (double)a->min_ns / 1e9;
    out->max_s = (double)a->max_ns / 1e9;
    out->p50_s = (double)sps__hist_percentile(a->hist, a->count, 50, a->min_ns, a->max_ns) / 1e9;
    out->p90_s = (double)sps__hist_percentile(a->hist, a->count, 90, a->min_ns, a->max_ns) / 1e9;
    out->p99_s = (double)sps__hist_percentile(a->hist, a->count, 99, a->min_ns, a->max_ns) / 1e9;
}

/* ------------------------------------------------------- sample statistics */

int sps__cmp_double(const void *pa, const void *pb) {
    double x = *(const double *)pa, y = *(const double *)pb;
    return (x > y) - (x < y);
}

static void swap(double *a, double *b) {
    double t = *a;
    *a = *b;
    *b = t;
}

/* The k-th smallest of x[0..n) (0-based), reordering x: Hoare's selection
 * with a median-of-three pivot, O(n) expected.  `stepscope compare`'s bootstrap
 * calls it once per resample, where sorting (n log n) would dominate. */
static double select_kth(double *x, size_t n, size_t k) {
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x[mid] < x[lo])
            swap(&x[mid], &x[lo]);
        if (x[hi] < x[lo])
            swap(&x[hi], &x[lo]);
        if (x[hi] < x[mid])
            swap(&x[hi], &x[mid]);
        double pivot = x[mid];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot)
                i++;
            while (x[j] > pivot)
                j--;
            if (i <= j) {
                swap(&x[i], &x[j]);
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return x[k];
    }
    return x[k];
}

double sps__percentile_inplace(double *x, size_t n, double p) {
    if (n == 0)
        return NAN;
    double at = ceil(p / 100 * (double)n);
    size_t k = at < 1 ? 0 : at > (double)n ? n - 1 : (size_t)at - 1;
    return select_kth(x, n, k);
}

double sps__median_inplace(double *x, size_t n) {
    if (n == 0)
        return NAN;
    double hi = select_kth(x, n, n / 2);
    if (n % 2)
        return hi;
    /* the lower middle is the largest of the half below n/2 */
    double lo = x[0];
    for (size_t i = 1; i < n / 2; i++)
        if (x[i] > lo)
            lo = x[i];
    return (lo + hi) / 2;
}
