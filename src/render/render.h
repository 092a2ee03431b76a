/*
 * render.h - the renderers of the core library: report.json and the
 * terminal summary, each made from the report model (src/report/report.h),
 * and the formatters every renderer shares.  The CLI's renderers (HTML,
 * CSV, trace) are declared in render/exporters.h.
 */
#ifndef SPS_RENDER_RENDER_H
#define SPS_RENDER_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report.h"

struct sps_jw;

/* Write report.json to path atomically (a temporary file renamed over it).
 * Returns 0, or SPS_EIO with err set. */
int sps__report_json_write(const struct sps_report *rep, const char *path, char *err, size_t errlen);

/* The terminal summary: totals, then the zone table sorted by total time.
 * width is the terminal's width in columns (0: 100). */
void sps__summary_print(FILE *f, const struct sps_report *rep, int width);

/* report.json's machine half: metrics, gpus, sensors, sources, series
 * and the sampler's overhead (report_metrics.c).  base_ns is the run's
 * start on the monotonic clock: series times are seconds after it. */
void sps__report_json_metrics(struct sps_jw *w, const struct sps_run_info *info, uint64_t base_ns);

/* The summary's machine lines: peaks and means (summary_metrics.c). */
void sps__summary_metrics(FILE *f, const struct sps_run_info *info);

/* Signal name ("SIGKILL") for a number, or "SIG<n>". */
const char *sps__signal_name(int sig, char *buf, size_t len);

/* Human-readable duration ("12.3 ms") and size ("1.2 GiB"). */
const char *sps__fmt_seconds(double s, char *buf, size_t len);
const char *sps__fmt_bytes(double b, char *buf, size_t len);

#endif /* SPS_RENDER_RENDER_H */
