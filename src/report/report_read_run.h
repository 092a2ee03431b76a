/*
 * report_read_run.h - the run half of the typed report.json reader
 * (report_read_run.c): zones, values, counters, steps, processes and
 * records_skipped into rep->run, and the typed reads of single values
 * that report_read.c uses for the top level too.
 *
 * report.json writes steps.rows before values, counters and processes,
 * so a row names values and counters the reader has not met yet and its
 * process by pid: the reader collects names as it meets them and sets
 * each row's process and the names' final order (report.json's: zones,
 * values, counters) once everything is read (sps__rr_finish).  Not
 * thread-safe: one reader, one thread.
 */
#ifndef SPS_REPORT_REPORT_READ_RUN_H
#define SPS_REPORT_REPORT_READ_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "report/jscan.h"
#include "report/report_read_values.h"
#include "report/report.h"
#include "report/report_read_rows.h"

/* The run being read: the names met so far and the shape of the rows. */
struct sps_rr {
    struct sps_jscan *s;
    struct sps_report *rep;
    /* names in the order met; each one's place in report.json's order */
    size_t names_cap;
    uint64_t *place;   /* [names_cap]: group << 40 | position in its group's array */
    uint32_t *slots;   /* open-addressed index of names: name index + 1, 0 empty */
    size_t nslots;
    size_t group_count[4];
    /* rows read while fewer names were known have narrower by_name:
     * width w from row from on */
    struct sps_rr_width {
        size_t from, width;
    } *widths;
    size_t nwidths;
    size_t rows_cap;
    /* rows handed to a consumer as they are read, not kept
     * (sps__report_read_rows; NULL: kept); the row's cells, reused */
    const struct sps_report_rows *sink;
    double *sink_cells;
    size_t sink_cells_cap;
};

/* Typed reads of one value are report_read_values.h's (sps__jread_*), the
 * same for every section of the reader. */
/* An array of strings into *argv (NULL-terminated, each malloc'd,
 * appended to *argc of them). */
int sps__rr_command(struct sps_jscan *s, const char *what, int *argc, char ***argv);

/* The '{' or '[' that opens the value at the scanner's position, or a
 * failure naming what was expected there. */
#define SPS_RR_OBJECT(s, what) \
    (sps__jscan_peek(s) == '{' ? sps__jscan_expect(s, '{') : sps__jscan_fail(s, "%s: an object expected", what))
#define SPS_RR_ARRAY(s, what) \
    (sps__jscan_peek(s) == '[' ? sps__jscan_expect(s, '[') : sps__jscan_fail(s, "%s: an array expected", what))

/* A kind's name ("zone", "step", ...) into *kind. */
int sps__rr_kind(struct sps_jscan *s, const char *what, uint32_t *kind);

/* Seconds after the run's start as monotonic ns (run.start_ns + s,
 * rounded to the ns). */
uint64_t sps__rr_mono(const struct sps_rr *rr, double s);

/* One element of processes[] / records_skipped[] appended to the run
 * (report_read_procs.c). */
int sps__rr_process(struct sps_rr *rr);
int sps__rr_skipped(struct sps_rr *rr);

/* Read the value of the top-level key of the run half ("zones", "steps",
 * "values", "counters", "processes", "records_skipped").  Returns 0 when
 * read, 1 when key is not one of these (nothing consumed), or an error as
 * above. */
int sps__rr_section(struct sps_rr *rr, const char *key);

/* After the last key: the names in report.json's order, every row's
 * by_name as wide as the names and its process set (a process that
 * processes[] does not list gets an entry of its own, known by its pid
 * and rank only).  Returns 0 or SPS_ENOMEM. */
int sps__rr_finish(struct sps_rr *rr);

/* Free the reader's own storage (not the run). */
void sps__rr_free(struct sps_rr *rr);

#endif /* SPS_REPORT_REPORT_READ_RUN_H */
