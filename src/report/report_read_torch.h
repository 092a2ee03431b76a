/* report_read_torch.h - report.json's torch_profile section, read back
 * (report_read_torch.c).  Not thread-safe: one reader, one thread. */
#ifndef SPS_REPORT_REPORT_READ_TORCH_H
#define SPS_REPORT_REPORT_READ_TORCH_H

#include "report/jscan.h"
#include "report/report.h"

/* The value of "torch_profile" into rep->run.torch (appended).  Returns 0,
 * SPS_EFORMAT (s->err says where) or SPS_ENOMEM. */
int sps__report_read_torch(struct sps_jscan *s, struct sps_report *rep);

/* The operator events of recs' captures (loaded from the records) moved
 * into rep's captures of the same pid (after its processes' events, which
 * they are placed among); others are left in recs.  Returns 0 or
 * SPS_ENOMEM. */
int sps__report_attach_torch(struct sps_report *rep, struct sps_run *recs);

#endif
