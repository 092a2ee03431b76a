/*
 * exporters.h - the files people open, each rendered from the report
 * model (report/report.h): the Trace Event Format file for Perfetto and
 * chrome://tracing, the two CSV tables and the self-contained HTML
 * report.
 *
 * Each writes to out (an open stream; the caller commits or aborts it,
 * see sps__out_open) and returns 0, or an SPS_E* code with err set to one
 * line.  None keeps state between calls or changes the report; not
 * thread-safe per report.
 */
#ifndef SPS_RENDER_EXPORTERS_H
#define SPS_RENDER_EXPORTERS_H

#include <stdint.h>
#include <stdio.h>

#include "render/output_file.h"
#include "report/report.h"

/* Default size budget of trace.json (stepscope run --trace-max-mb). */
#define SPS_TRACE_DEFAULT_MAX_BYTES (100u * 1024u * 1024u)

/* trace.json: zones as complete events on their process and thread (when
 * the report holds the recorded events; otherData says why not), steps on
 * a track of their own, values and sampled metrics as counters, kept
 * within max_bytes by the policy in docs/trace-format.md. */
int sps__export_trace(const struct sps_report *rep, FILE *out, uint64_t max_bytes, char *err, size_t errlen);

/* The same trace.json, for the last renderer of a report: the step rows'
 * cells (which the trace does not use) are freed first and each thread's
 * zone events as soon as the trace has copied them, so the run's events
 * and the trace's copy are never both held (a million steps of ten zones:
 * about 530 MiB less at the peak).  Afterwards rep holds no zone events
 * (have_events is 0) and its rows no cells (by_name NULL); everything
 * else in it is untouched. */
int sps__export_trace_taking_events(struct sps_report *rep, FILE *out, uint64_t max_bytes, char *err,
                                    size_t errlen);

/* steps.csv: one row per step (docs/csv-format.md). */
int sps__export_steps_csv(const struct sps_report *rep, FILE *out, char *err, size_t errlen);

/* timeline.csv: the sampled metrics over time (docs/csv-format.md). */
int sps__export_timeline_csv(const struct sps_report *rep, FILE *out, char *err, size_t errlen);

/* report.html: one file, no network, inline SVG charts, made from the
 * report model alone. */
int sps__export_html(const struct sps_report *rep, FILE *out, char *err, size_t errlen);

#endif /* SPS_RENDER_EXPORTERS_H */
