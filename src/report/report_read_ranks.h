/* report_read_ranks.h - report.json's "ranks" and "ranks_pooled" read
 * back into the report model's per-rank view (model/ranks.h;
 * report_read_ranks.c).  Not thread-safe: one reader, one thread. */
#ifndef SPS_REPORT_REPORT_READ_RANKS_H
#define SPS_REPORT_REPORT_READ_RANKS_H

#include "report/jscan.h"
#include "report/report.h"

/* The value of "ranks" (an array) into rep->ranks.rank[], or of
 * "ranks_pooled" (an object or null) into rep->ranks.pooled, by key.
 * Returns 0 when read, 1 when key is neither (nothing consumed),
 * SPS_EFORMAT (s->err says where) or SPS_ENOMEM. */
int sps__report_read_ranks(struct sps_jscan *s, const char *key, struct sps_report *rep);

#endif
