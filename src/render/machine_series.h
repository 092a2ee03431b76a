/*
 * machine_series.h - the sampler's series as report.json lists them
 * (series.metrics): the renderers that draw or tabulate the machine over
 * time (trace.json's counters, steps.csv's and timeline.csv's metric
 * columns) walk this one list, so they agree with report.json and with
 * each other on which series there are, in which order, under which
 * name and unit.
 *
 * Pure functions over a report model; the entries point into it (valid
 * while the report is).  Thread-safe on a report nobody changes.
 */
#ifndef SPS_RENDER_MACHINE_SERIES_H
#define SPS_RENDER_MACHINE_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"
#include "sampler/sampler.h"

/* One entry of report.json's series.metrics. */
struct sps__machine_series {
    const char *metric; /* the catalogue name, "sensor_temperature_celsius" for sensors */
    const char *unit;   /* the catalogue unit, "celsius" for sensors */
    int gpu;            /* the GPU's index; -1: not a GPU metric */
    const char *sensor; /* the sensor's label; NULL: not a sensor */
    int interval_ms;    /* the sampling interval of one reading */
    const struct sps__series *s; /* at least one point */
};

/* At most this many entries: every host metric, every GPU metric of every
 * GPU, every sensor. */
#define SPS_MACHINE_SERIES_MAX \
    (SPS_HOST_METRIC_COUNT + SPS_CAPTURE_MAX_GPUS * SPS_GPU_METRIC_COUNT + SPS_CAPTURE_MAX_SENSORS)

/*
 * The series with points, in report.json's order: host metrics in
 * catalogue order, then each GPU's metrics, then the sensors.  out holds
 * SPS_MACHINE_SERIES_MAX entries; returns how many were filled (0 when r
 * is NULL: no sampler ran).  Each tree process's own RSS series
 * (series.processes) is not among them: r->process[] holds those.
 */
size_t sps__machine_series_list(const struct sps__sampler_result *r, struct sps__machine_series *out);

/*
 * The moment report.json's times count from on the monotonic clock (its
 * started_mono_ns): the run's start, or, in a report that knows none, the
 * sampler's first tick; 0 when neither is known.
 */
int64_t sps__report_origin_ns(const struct sps_report *rep);

#endif /* SPS_RENDER_MACHINE_SERIES_H */
