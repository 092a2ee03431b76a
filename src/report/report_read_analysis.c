/*
 * report_read_analysis.c - report.json's "analysis" into the model
 * (report_read.h).  PLACEHOLDER until the typed reader lands (issue 16):
 * skips it.
 */
#include "report/report_read.h"

int sps__report_read_analysis(struct sps_jscan *s, struct sps_report *rep) {
    (void)rep;
    return sps__jscan_skip(s);
}
