/*
 * report_read_rows.h - report.json read with its step rows handed to the
 * caller as they stream past instead of kept in the model: a reader that
 * needs a few figures of each of a million rows (stepscope compare keeps
 * the compared step's duration and zone times) holds those, not the rows.
 * Everything else is read into the model as sps__report_read reads it
 * (report.h).  Not thread-safe: one reader, one thread (two reads on two
 * threads are two readers).
 */
#ifndef SPS_REPORT_REPORT_READ_ROWS_H
#define SPS_REPORT_REPORT_READ_ROWS_H

#include <stddef.h>

#include "report/report.h"

/*
 * A consumer of steps.rows.  row is called once a row, in file order, as
 * the row is read (report.json lists the zones before the rows, values,
 * counters and processes after them):
 *   - row->name and row->by_name index rep->run.names as read so far:
 *     by_name holds rep->run.nnames cells at the time of the call (NAN
 *     where the row has none), names met later are not in it, and the
 *     names are put in report.json's order only after the last row;
 *   - row->process is not known yet: pid is the row's pid (0 when it has
 *     none);
 *   - row and its by_name are valid during the call only.
 * It returns 0 to go on, or SPS_ENOMEM, which stops the read (reported as
 * "out of memory").
 */
struct sps_report_rows {
    int (*row)(void *ctx, const struct sps_report *rep, const struct sps_step_row *row, int pid);
    void *ctx;
};

/*
 * sps__report_read (report.h) with every row of steps.rows handed to
 * rows->row instead of kept: the model then has no rows (run.nsteps 0),
 * and everything else report.json holds.  Errors and ownership as
 * sps__report_read's.
 */
int sps__report_read_rows(struct sps_report *rep, const char *path, const struct sps_report_rows *rows, char *err,
                          size_t errlen);

#endif /* SPS_REPORT_REPORT_READ_ROWS_H */
