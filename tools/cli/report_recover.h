/*
 * report_recover.h - `stepscope report DIR`'s way into a run directory:
 * its report.json with the records attached, or, when report.json is
 * missing or another run's, a report rebuilt from the records alone.
 */
#ifndef SPS_CLI_REPORT_RECOVER_H
#define SPS_CLI_REPORT_RECOVER_H

#include <stddef.h>

struct sps_report;

/*
 * Read run directory dir into rep.  DIR/report.json and DIR/records
 * (sps__report_load_dir) when report.json is there and about those
 * records; the records alone (sps__report_rebuild_dir, which sets
 * rep->info.rebuilt_reason) when report.json is missing, when it is
 * another run's (report.h: sps__report_records_stale), or when
 * from_records asks for it; *rebuilt says whether it was rebuilt now (a
 * report.json read back may be one rebuilt earlier: its
 * info.rebuilt_reason is set too).  A directory with neither report.json nor
 * records/ is an error.  Returns 0, or an SPS_E* code with err set to
 * one line (*rep then holds nothing to free).
 */
int sps_cli_report_load(struct sps_report *rep, const char *dir, int from_records, int *rebuilt, char *err,
                        size_t errlen);

/* rep (rebuilt) as dir/report.json, written atomically: what `stepscope
 * report DIR` writes first, the other files following from it.  Returns
 * 0, or an SPS_E* code with err set to one line. */
int sps_cli_report_json_write(const struct sps_report *rep, const char *dir, char *err, size_t errlen);

/*
 * dir/report.json rebuilt from dir/records and written, as `stepscope
 * report DIR` does when report.json is missing (sps_cli_report_load, its
 * processes still running marked so, sps_cli_report_json_write); only
 * report.json: the other files can be made from it later.  For
 * `stepscope run`, which finds the records of a run killed before its
 * report.  Returns 0 when written; else an SPS_E* code with err set to
 * one line and *unreadable 1 when the records could not be read (none
 * readable: a run killed before it recorded anything), 0 when reading
 * them ran out of memory or report.json could not be written.
 */
int sps_cli_report_rebuild_json(const char *dir, int *unreadable, char *err, size_t errlen);

/* The note on stderr that rep was rebuilt from the records: why and what
 * it lacks (the skipped records are sps_cli_report_notes' line). */
void sps_cli_report_rebuilt_note(const struct sps_report *rep);

#endif
