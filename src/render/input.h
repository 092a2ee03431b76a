/*
 * input.h - what the report exporters (trace.json, steps.csv,
 * timeline.csv, report.html) read: a run directory's report.json, parsed
 * with jansson, and the Run model of its records when it has them.
 *
 * `stepscope run` writes report.json, then regenerates every other file
 * from the directory exactly as `stepscope report DIR` does, so there is
 * one path from a run to what people look at.  A standalone run (the
 * library writing its own report.json) has no records: exporters then use
 * report.json alone and say what they left out.
 *
 * This module and the exporters belong to the CLI (they depend on
 * jansson); the core library does not link them.  Not thread-safe: one
 * thread loads, exports and frees an input.
 */
#ifndef SPS_RENDER_INPUT_H
#define SPS_RENDER_INPUT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "model/run.h"
#include "platform/atomic_file.h"
#include "report/report.h"

struct sps_report_input {
    char dir[4096];
    json_t *report;        /* DIR/report.json; owned; schema stepscope.report/1 */
    int have_records;      /* run holds at least one process from DIR/records */
    struct sps_run run;    /* built from DIR/records; empty when have_records is 0 */
    char records_note[512]; /* why there are no records, or which were skipped ("" if neither) */
    /* TRANSITIONAL (issue 16): the report model of this directory; the
     * renderers move onto it one by one, then this struct goes */
    struct sps_report model;
    int have_model;
};

/*
 * Load DIR/report.json and the record files in DIR/records into *in
 * (which it initialises).  A report.json that is missing, malformed or of another
 * schema is an error: SPS_EIO or SPS_EFORMAT with err set to one line
 * naming the file (and, for malformed JSON, its line and column).
 * Records that cannot be read are not an error: records_note says so.
 * On failure *in holds nothing to free; on success free it with
 * sps__report_input_free.
 */
int sps__report_input_load(const char *dir, struct sps_report_input *in, char *err, size_t errlen);

void sps__report_input_free(struct sps_report_input *in);

/* sps__report_input_load without the model (the interim model reader's own input). */
int sps__report_input_load_raw(const char *dir, struct sps_report_input *in, char *err, size_t errlen);

/*
 * Writing an output file with nothing half-written: a thin stdio face on
 * the atomic writer (platform/atomic_file.h: an exclusive, unpredictably
 * named temporary beside path, never followed through a link; commit
 * flushes, fsyncs and renames over path; abort removes it).  A failed
 * commit leaves any earlier path untouched.
 */
struct sps_out {
    FILE *f; /* write here between open and commit/abort */
    struct sps_atomic_file file;
};

/* Returns 0, or SPS_EIO with err set ("PATH: reason"). */
int sps__out_open(struct sps_out *o, const char *path, char *err, size_t errlen);

/* Returns 0, or SPS_EIO with err set; o is closed either way. */
int sps__out_commit(struct sps_out *o, char *err, size_t errlen);

void sps__out_abort(struct sps_out *o);

/* A JSON value by dotted path ("metrics.workload_rss_bytes.max"); NULL
 * when absent.  Array elements are not addressed. */
json_t *sps__json_at(json_t *root, const char *dotted);

#endif /* SPS_RENDER_INPUT_H */
