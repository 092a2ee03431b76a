/*
 * stats.h - exact aggregates and the statistics derived from them.
 *
 * An aggregate is what the recorder keeps per (thread, name): exact count,
 * sums, extremes and a log-linear histogram.  Aggregates merge exactly
 * (threads, processes); percentiles come from the histogram and are within
 * 0.4% of the nearest-rank value of the same data.  Pure functions; no I/O.
 */
#ifndef SPS_STATS_H
#define SPS_STATS_H

#include <stddef.h>
#include <stdint.h>

struct sps_agg {
    uint32_t kind; /* enum sps_kind */
    uint64_t count;
    /* zones, steps, micro-steps (ns); counters use total_ns as their sum */
    uint64_t total_ns, self_ns, min_ns, max_ns;
    unsigned __int128 sumsq_ns;
    uint64_t *hist; /* SPS_HIST_BUCKETS counts, owned; NULL for values/counters */
    /* values */
    double sum, sumsq, min, max, first, last;
};

/* A timed name's statistics in seconds.  A value's keeps its count, mean
 * and std in count, mean_s and std_s (in the value's own unit; NAN without
 * readings): report.json carries those, not the sums they come from. */
struct sps_stats {
    uint64_t count;
    double total_s, self_s, mean_s, std_s, min_s, max_s, p50_s, p90_s, p99_s;
};

/* Add src into dst (same kind).  dst->hist is allocated on demand; returns
 * 0 or SPS_ENOMEM. */
int sps__agg_merge(struct sps_agg *dst, const struct sps_agg *src);

void sps__agg_free(struct sps_agg *a);

struct sps_rec_agg;
/* Copy a record's aggregate (and, for zone-like kinds, the histogram that
 * follows it) into dst.  Returns 0 or SPS_ENOMEM. */
int sps__agg_from_record(struct sps_agg *dst, const struct sps_rec_agg *src);

/* Statistics of a zone-like aggregate.  std is the population standard
 * deviation; percentiles use the nearest-rank definition. */
void sps__stats_compute(const struct sps_agg *a, struct sps_stats *out);

/* A value's count, mean and population std (NAN without readings) into
 * out; the rest of out is 0. */
void sps__value_stats(const struct sps_agg *a, struct sps_stats *out);

/* The nearest-rank p-th percentile (0 < p <= 100) of the histogram's
 * values, in ns: the middle of the bucket holding that rank, clamped to
 * [min_ns, max_ns].  0 when the histogram is empty. */
uint64_t sps__hist_percentile(const uint64_t *hist, uint64_t count, double p, uint64_t min_ns,
                              uint64_t max_ns);

/* Statistics of plain samples (the analysis, `stepscope compare`). */

/* qsort's comparison for doubles, ascending (no NaN). */
int sps__cmp_double(const void *a, const void *b);

/* Median of x[0..n) in O(n) expected time, reordering x; NAN when n is 0.
 * Pure; thread-safe. */
double sps__median_inplace(double *x, size_t n);

/* The nearest-rank p-th percentile (0 < p <= 100) of x[0..n) in O(n)
 * expected time, reordering x; NAN when n is 0.  Pure; thread-safe. */
double sps__percentile_inplace(double *x, size_t n, double p);

#endif /* SPS_STATS_H */
