/*
 * step_series.h - the sampler's series (machine_series.h) loaded as
 * doubles on the report's time axis, and the one rule that says what a
 * series read over a step: the points whose span overlaps the step
 * (docs/csv-format.md, "Metric columns"), their mean and their largest
 * maximum.  steps.csv's metric columns and the TensorBoard machine
 * scalars both use it, so they agree to the bit.
 *
 * Everything loaded is owned by the array (sps__step_series_free); the
 * metric, unit and sensor strings point into the report (valid while it
 * is).  Not thread-safe per array (the cache below is written by the
 * caller).
 */
#ifndef SPS_RENDER_STEP_SERIES_H
#define SPS_RENDER_STEP_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

struct sps__step_series {
    const char *metric; /* the catalogue name ("workload_rss_bytes"); "sensor_temperature_celsius" */
    const char *unit;   /* the catalogue unit ("bytes"), "" when none */
    int gpu;            /* the GPU's index; -1: not a GPU metric */
    const char *sensor; /* the sensor's label; NULL: not a sensor */
    char column[256];   /* steps.csv's column stem, e.g. "gpu0:gpu_utilization_percent" */
    size_t n;           /* points */
    double *t, *mean, *max; /* seconds after the origin; NAN where a point has no number */
    double last_span_s;     /* how long the last point covers: readings_per_point intervals */
    /* for the caller: the span of points last formatted and its text
     * (consecutive steps shorter than a sampling interval cover the same
     * points); cached_stop 0: nothing cached */
    size_t cached_first, cached_stop;
    size_t cached_len;
    char cached[72];
};

/* Every machine series of rep, in report.json's order, times in seconds
 * after origin_ns.  *out is malloc'd (free with sps__step_series_free);
 * *n may be 0.  Returns 0 or SPS_ENOMEM (err set). */
int sps__step_series_load(const struct sps_report *rep, int64_t origin_ns, struct sps__step_series **out,
                          size_t *n, char *err, size_t errlen);

void sps__step_series_free(struct sps__step_series *s, size_t n);

/* The points a step over [start, end] (seconds after the origin)
 * covers: [*first, *stop), none when *first == *stop.  Pure. */
void sps__step_series_span(const struct sps__step_series *s, double start, double end, size_t *first,
                           size_t *stop);

/* The mean of the points' means in [first, stop) and the largest of their
 * maxima (points without numbers skipped); both NAN when none counts.
 * Pure. */
void sps__step_series_over(const struct sps__step_series *s, size_t first, size_t stop, double *mean,
                           double *max);

#endif /* SPS_RENDER_STEP_SERIES_H */
