/*
 * report.h - the report model: everything stepscope says about one run,
 * typed, built once, rendered everywhere.
 *
 *   records (src/model/reader.c) ──► Run (run.c, steps.c) ─┐
 *   the watcher's facts (struct sps_run_info) ─────────────┼─► sps__report_build ─► struct sps_report
 *   the sampler's result (src/sampler) ────────────────────┘        (analysis computed once, here)
 *   report.json ──► sps__report_read (report_read*.c) ───────────────► struct sps_report
 *
 *   struct sps_report ──► renderers (src/render): report.json, the terminal
 *   summary, report.html, steps.csv, timeline.csv, trace.json
 *
 * A report built from records holds the recorded events (have_events);
 * one read from report.json holds the tables report.json carries, and
 * gets events only when its record files are attached
 * (sps__report_load_dir).  Renderers take a const struct
 * sps_report and never parse what stepscope wrote.
 *
 * Not thread-safe: one thread builds, renders and frees a report.
 */
#ifndef SPS_REPORT_REPORT_H
#define SPS_REPORT_REPORT_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "model/ranks.h"
#include "model/run.h"
#include "model/run_info.h"

/*
 * The model.  info's strings and argv, the sampler result (when read from
 * report.json) and the run are owned by the report; a built report
 * borrows the sampler result it was given (the caller keeps the sampler
 * open until sps__report_free).
 */
struct sps_report {
    struct sps_run run;           /* tables; events too when have_events */
    int have_events;              /* run.procs' threads hold the recorded events */
    int have_records;             /* built from, or attached to, record files */
    struct sps_run_info info;     /* info.sampler: the machine (NULL: none ran; info.sampler_absent_reason
                                   * says why); info.analysis: &analysis_config */
    struct sps_analysis_config analysis_config;
    struct sps_analysis analysis; /* computed once by sps__report_build, or read */
    struct sps_ranks ranks;       /* the run rank by rank (model/ranks.h): built by sps__report_build,
                                   * read from report.json's "ranks" (or, in one without them, built
                                   * from the rows it holds) */
    char records_note[512];       /* records that were skipped, or why there are none ("" if neither) */
    char stale_reason[512];       /* set by sps__report_load_dir: why DIR/report.json is not about the
                                   * records DIR/records holds ("" when it is) */
    size_t records_total;         /* record files read (loaded and skipped); 0 when none were read
                                   * (report.json alone: run.nprocs + run.nskipped stand for them) */
    int no_time_anchor;           /* read from a report.json with no monotonic anchor (started_mono_ns,
                                   * series.origin_mono_ns): its times count from 0 */
    /* storage the report owns */
    char **argv_owned;
    char *strings_owned[7]; /* info's strings; [SPS_REPORT_REBUILT_REASON_SLOT]: rebuilt_reason */
    struct sps__sampler_result *machine_owned;
};

/* rep->strings_owned slot of info.rebuilt_reason, for the builder and the
 * reader alike (0-3 are the builder's others, 4-5 the reader's) */
#define SPS_REPORT_REBUILT_REASON_SLOT 6

/*
 * Build the model from a built Run (moved in: *run is emptied and the
 * report frees it) and the watcher's facts (copied; info->sampler is
 * borrowed, see above), and run the analysis once.  Returns 0, or
 * SPS_ENOMEM (the report is still valid, possibly partial, and must be
 * freed).
 */
int sps__report_build(struct sps_report *rep, struct sps_run *run, const struct sps_run_info *info);

/*
 * Read report.json at path into the model, in one pass through a fixed
 * buffer (no document tree): everything it carries, the analysis
 * included, read and never computed again.  No events (have_events 0).
 * A file that cannot be opened, is malformed or of another schema is an
 * error: SPS_EIO, SPS_EFORMAT or SPS_ENOMEM with err set to one line
 * naming the file (and, for malformed JSON or a value of the wrong type,
 * its line and column).  On failure *rep holds nothing to free.
 */
int sps__report_read(struct sps_report *rep, const char *path, char *err, size_t errlen);

/*
 * Read a run directory into the model: DIR/report.json
 * (sps__report_read), then the recorded events of DIR/records, each
 * record's moved into the process report.json lists with its pid and
 * record file name (have_events; records_note says why there are none,
 * or which were skipped or are not in report.json).  Errors as
 * sps__report_read's, and SPS_EIO naming DIR when it is not a directory
 * holding a report.json.  On failure *rep holds nothing to free.
 */
int sps__report_load_dir(struct sps_report *rep, const char *dir, char *err, size_t errlen);

/* records_note for the records run skipped (how many, the first's
 * error); nothing when it skipped none. */
void sps__report_note_skipped(struct sps_report *rep, const struct sps_run *run);

/*
 * Rebuild the model of run directory DIR from DIR/records alone, for when
 * DIR/report.json is missing or stale (why says which, in a few words; it
 * is copied into info.rebuilt_reason).  What only stepscope run knew (the
 * exit status, times, peak RSS, the sampler's series, the options it was
 * given) is absent and sps__report_missing names it; times count from the
 * first record's start.  Records are read, never trimmed or changed (a
 * process may still be writing one).  Damaged records are skipped and
 * named (run.skipped, records_note).  Errors: SPS_EIO naming DIR/records
 * when it cannot be read or holds no readable record, SPS_ENOMEM.  On
 * failure *rep holds nothing to free.
 */
int sps__report_rebuild_dir(struct sps_report *rep, const char *dir, const char *why, char *err, size_t errlen);

/*
 * Whether report.json (read into reported) is about other records than
 * the ones DIR/records holds (read into recs): 1 with why set when it is
 * stale, i.e. when records/ holds a record file of a name report.json
 * lists but with another header CRC (another process's record under a
 * recycled pid), or when report.json lists records, records/ holds some,
 * and none of them is one it lists.  Record files report.json does not
 * list (a process that started after it was written) do not make it
 * stale: it keeps the exit status and the machine series a rebuild would
 * lose.  Modification times are not used (a record is written through a
 * mapping, whose mtime the kernel updates late, and a copy resets them).
 */
int sps__report_records_stale(const struct sps_run *reported, const struct sps_run *recs, char *why,
                              size_t whylen);

/* What a rebuilt report (info.rebuilt_reason set) lacks, as up to cap
 * phrases into parts ("exit status", ...).  Returns how many. */
size_t sps__report_missing(const struct sps_run_info *info, const char **parts, size_t cap);
/* Add to rep->run.skipped the records recs (DIR/records read again)
 * skipped that it does not list yet (by file name: report.json's paths
 * are the run's), moving them out of recs; records_total becomes the
 * files recs read.  Returns 0 or SPS_ENOMEM. */
int sps__report_merge_skipped(struct sps_report *rep, struct sps_run *recs);

/* "K of N records skipped: FIRST" into buf, FIRST the first skipped
 * record's error (naming its file), for the summary, report.html and the
 * CLI's line on stderr.  Returns 0 (buf "") when no record was skipped. */
int sps__report_skipped_text(const struct sps_report *rep, char *buf, size_t len);

/* "the report was taken while pid P (COMMAND) was still running: its
 * numbers stop at that moment; run `stepscope report --from-records DIR`
 * once it has exited for the whole run" (with "and N other processes" when
 * more were; dir NULL: "`stepscope report --from-records` on this run
 * directory") into buf, for the processes of the run still running when
 * `stepscope run` built the report.  --from-records: a plain `stepscope
 * report DIR` reads report.json, whose numbers stop at that moment.
 * Returns 0 (buf "") when none was. */
int sps__report_running_text(const struct sps_report *rep, const char *dir, char *buf, size_t len);

/* Free everything the report owns; *rep is zeroed.  NULL is a no-op. */
void sps__report_free(struct sps_report *rep);

#endif /* SPS_REPORT_REPORT_H */
