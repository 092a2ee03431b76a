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
struct sps__sampler_result;

/* MemoryTracker's allocation timeline (python/stepscope/memory.py): the
 * value its rows are recorded as, each at its own time (sps_value_at),
 * and the name trace.json's counter track and report.html's chart give
 * it. */
#define SPS_TORCH_TIMELINE_VALUE "torch.cuda.timeline.allocated_bytes"
#define SPS_TORCH_TIMELINE_LABEL "GPU memory allocated (torch)"

/* Write report.json to path atomically (a temporary file renamed over it).
 * Returns 0, or SPS_EIO with err set. */
int sps__report_json_write(const struct sps_report *rep, const char *path, char *err, size_t errlen);

/* report.json's text to f (no atomicity: sps__report_json_write is the
 * file).  Errors show in ferror(f). */
void sps__report_json_print(FILE *f, const struct sps_report *rep);

/* The terminal summary: totals, then the zone table sorted by total time.
 * width is the terminal's width in columns (0: 100). */
void sps__summary_print(FILE *f, const struct sps_report *rep, int width);

/* report.json's machine half: metrics, gpus, sensors, sources, series
 * and the sampler's overhead (report_metrics.c).  base_ns is the run's
 * start on the monotonic clock: series times are seconds after it. */
void sps__report_json_metrics(struct sps_jw *w, const struct sps_run_info *info, uint64_t base_ns);
/* report.json's torch_profile section (report_json_torch.c). */
void sps__report_json_torch(struct sps_jw *w, const struct sps_run *run);
/* report.json's "ranks" and "ranks_pooled" (report_json_ranks.c); the
 * summary's per-rank table, printed with two ranks or more, and the line
 * that labels the zone table as pooled (summary_ranks.c). */
void sps__report_json_ranks(struct sps_jw *w, const struct sps_ranks *r);
void sps__summary_ranks(FILE *f, const struct sps_report *rep);
void sps__summary_pooled_note(FILE *f, const struct sps_report *rep);
/* The deep-capture windows: one summary line each (summary_torch.c); a
 * report.html section, nothing without one (html_torch.c). */
void sps__summary_torch(FILE *f, const struct sps_run *run);
void sps__html_torch(FILE *out, const struct sps_run *run);
/* A window's steps for a reader: "steps 3-4 (3:5)" (summary_torch.c). */
struct sps_torch_capture;
void sps__torch_window_label(char *buf, size_t len, const struct sps_torch_capture *c);

/* Why the sampler's result r has no reading of host metric host_metric
 * (enum sps_host_metric): its source's reason, into buf when composed.
 * Returns the reason. */
const char *sps__metric_why_none(const struct sps__sampler_result *r, int host_metric, char *buf, size_t len);

/* Why r read no GPU: each GPU source's reason, in the chain's order. */
void sps__gpus_why_none(const struct sps__sampler_result *r, char *buf, size_t len);

/* The summary's machine lines: peaks and means (summary_metrics.c). */
void sps__summary_metrics(FILE *f, const struct sps_run_info *info);

/* Signal name ("SIGKILL") for a number, or "SIG<n>". */
const char *sps__signal_name(int sig, char *buf, size_t len);

/* The one human-readable duration ("12.30 ms", "22.5 ns") and the one
 * size ("1.2 GiB") every text uses (format.c); "-" for NAN.  Pure. */
const char *sps__fmt_seconds(double s, char *buf, size_t len);
const char *sps__fmt_bytes(double b, char *buf, size_t len);

#endif /* SPS_RENDER_RENDER_H */
