/*
 * export_dir.h - write the files people open into a run directory, or
 * one of them anywhere: what `stepscope run` does after report.json and
 * what `stepscope report` does on demand.  Not thread-safe.
 */
#ifndef SPS_RENDER_EXPORT_DIR_H
#define SPS_RENDER_EXPORT_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

enum sps_export_format {
    SPS_EXPORT_HTML,    /* report.html */
    SPS_EXPORT_CSV,     /* steps.csv and timeline.csv */
    SPS_EXPORT_TRACE,   /* trace.json */
    SPS_EXPORT_JSON,    /* report.json, rendered again from the model */
    SPS_EXPORT_SUMMARY, /* the terminal summary */
    SPS_EXPORT_TENSORBOARD, /* TensorBoard event files, into a directory (render/tensorboard.h) */
    SPS_EXPORT_FORMATS
};

/* "html" -> SPS_EXPORT_HTML; -1 for an unknown name. */
int sps__export_format_parse(const char *name);

/*
 * Write format, rendered from rep (the report of run directory dir), to
 * out_path: a file (for CSV a directory that gets
 * steps.csv and timeline.csv; for TensorBoard a directory, created when
 * missing, that gets the event files), "-" for standard output (not for
 * CSV or TensorBoard), or NULL for the format's usual place in the run
 * directory (TensorBoard has none: out_path is required).  Files are
 * replaced atomically; on failure nothing is half-written and err says why.
 * Returns 0 or an SPS_E* code.  trace.json takes the report's zone
 * events (sps__export_trace_taking_events): render it last.
 */
int sps__export_one(struct sps_report *rep, const char *dir, enum sps_export_format format,
                    const char *out_path, uint64_t trace_max_bytes, char *err, size_t errlen);

/* Every file into the run directory: report.html, steps.csv,
 * timeline.csv, then trace.json, which takes the report's zone events
 * (rep has none afterwards).  Stops at the first failure. */
int sps__export_all(struct sps_report *rep, const char *dir, uint64_t trace_max_bytes, char *err,
                    size_t errlen);

#endif /* SPS_RENDER_EXPORT_DIR_H */
