/*
 * report_read_merge.h - report.json's clock facts back into the model: a
 * process's "clock_sync" and "clock_alignment", and the top-level "merge"
 * (written by src/render/merge_view.c).  Not thread-safe: one reader.
 */
#ifndef SPS_REPORT_REPORT_READ_MERGE_H
#define SPS_REPORT_REPORT_READ_MERGE_H

#include "model/run.h"
#include "report/jscan.h"

/* The value of processes[]'s key s->str into p when it is "clock_sync" or
 * "clock_alignment": 0 read, 1 not one of these (nothing consumed), or
 * the scanner's error. */
int sps__rr_process_clock(struct sps_jscan *s, struct sps_process_data *p);

/* The value of the top-level "merge" (null: not merged) into *m. */
int sps__rr_merge(struct sps_jscan *s, struct sps_run_merge *m);

#endif
