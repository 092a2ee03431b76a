/*
 * merge_view.h - what a merged run (stepscope merge) says about its
 * clocks, as report.json and the terminal summary say it: each process's
 * clock-offset measurements and alignment, and the merge itself.  The
 * facts are the model's (struct sps_run_merge, sps_process_data's
 * clock_sync and align; src/model/align.h).
 */
#ifndef SPS_RENDER_MERGE_VIEW_H
#define SPS_RENDER_MERGE_VIEW_H

#include <stdio.h>

#include "model/run.h"
#include "render/json_writer.h"

/* A processes[] entry's "clock_sync" and "clock_alignment"
 * (docs/report-format.md). */
void sps__report_json_process_clock(struct sps_jw *w, const struct sps_process_data *p);

/* report.json's top-level "merge": null in a run that was not merged. */
void sps__report_json_merge(struct sps_jw *w, const struct sps_run *run);

/* The summary's lines for a merged run (nothing for another): the inputs,
 * the reference host, and per host how its clock was aligned. */
void sps__merge_summary_print(FILE *f, const struct sps_run *run);

/* report.html's fact for a merged run: value "2 runs, 2 hosts", detail
 * which clock and how many hosts by each method (the largest measured
 * error; --force when used).  Returns 0 (nothing written) for a run that
 * was not merged. */
int sps__merge_fact(const struct sps_run *run, char *value, size_t vlen, char *detail, size_t dlen);

#endif
