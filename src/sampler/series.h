/*
 * series.h - one metric's readings over a run, in bounded memory.
 *
 * A series keeps at most `cap` points.  When it is full it halves its
 * resolution: neighbouring points merge (their means weighted by how many
 * readings each holds, their maxima kept), and from then on each point
 * gathers twice as many readings.  A run of any length therefore costs
 * the same memory, the series always spans the whole run, and the peak is
 * exact: every point's max is the true max of the readings it covers, and
 * the whole-run statistics (count, mean, min, max, last) are kept apart,
 * exactly.
 *
 * Not thread-safe: the sampler appends and readers read under its lock.
 */
#ifndef SPS_SAMPLER_SERIES_H
#define SPS_SAMPLER_SERIES_H

#include <stddef.h>
#include <stdint.h>

struct sps__series_point {
    int64_t t_ns;     /* time of the first reading in the point (monotonic) */
    double mean;      /* of the readings in the point */
    double max;       /* of the readings in the point */
    uint32_t n;       /* readings in the point */
    uint32_t pad_;
};

struct sps__series {
    struct sps__series_point *points; /* owned; NULL until the first reading */
    uint32_t count, cap;
    uint32_t per_point; /* readings a full point holds at this resolution */
    /* whole-run statistics, exact */
    uint64_t n;
    double sum, min, max, last;
    int64_t first_ns, last_ns;
};

/* An empty series of at most cap (>= 2, even) points; allocates nothing yet. */
void sps__series_init(struct sps__series *s, uint32_t cap);

/* Add a reading at t_ns (t_ns never decreasing).  NAN readings are not
 * readings: ignored.  Returns 0, or -1 when the first allocation failed
 * (the whole-run statistics are still kept). */
int sps__series_add(struct sps__series *s, int64_t t_ns, double v);

/* Free the points; the series is empty again. */
void sps__series_free(struct sps__series *s);

#endif /* SPS_SAMPLER_SERIES_H */
