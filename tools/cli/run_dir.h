/*
 * run_dir.h - `stepscope run -o DIR`'s hold on its directory: DIR opened
 * without following a link, refused when another user owns it, locked
 * (run_lock.h) for the whole run, and an earlier run's outputs set aside
 * into DIR/.previous/ instead of being deleted before this run has a
 * report of its own.
 *
 * What is set aside: report.json, report.html, steps.csv, timeline.csv,
 * trace.json, steps.jsonl, capture.bin, records/ (whole) and the
 * TensorBoard event files stepscope wrote under DIR, each by renaming it,
 * never through a link.  DIR then holds only this run's files, so that
 * `stepscope report DIR` and `compare` never mix two runs.  Once this
 * run's report is written, .previous/ is removed (only what stepscope
 * put there); when the command could not be started at all the earlier
 * outputs go back in place; when the run ends without a report they stay
 * in .previous/ and one line says so.  DIR/.previous/ holds one run: the
 * next run that finds a report or records in DIR replaces it.  Records
 * with no report.json (a run killed before its report) get their
 * report.json rebuilt first (report_recover.h), so that .previous/ always
 * holds the run just before with a report; unreadable ones never replace
 * a .previous/ that has a report (they are removed instead).
 *
 * One hold per process; not thread-safe.
 */
#ifndef SPS_CLI_RUN_DIR_H
#define SPS_CLI_RUN_DIR_H

#include <limits.h>

#define SPS_RUN_DIR_PREVIOUS ".previous"
/* the .previous found there, while the new run's command starts */
#define SPS_RUN_DIR_OLDER ".previous.older"

struct sps_run_dir_hold {
    int dfd;           /* DIR; -1 before sps_run_dir_take */
    int lock_fd;       /* the lock, held until the process exits */
    int aside;         /* an earlier run's outputs are in DIR/.previous */
    int older;         /* the .previous before that is in DIR/.previous.older */
    int kept;          /* DIR/.previous is older than DIR's last run, which recorded
                          nothing: removed too once this run has a report (and a
                          .previous.older that killed run left, once it ran) */
    const char *shown; /* DIR as the user gave it, for messages */
    char abs[PATH_MAX]; /* DIR, absolute and without links */
};

/* Make dir (with its parents), open it without following a link at its
 * name, refuse it when it is owned by another user than the effective
 * one (root's directories excepted) unless allow_foreign, take its lock
 * for the command cmd[0..argc-1], set an earlier run's outputs aside and
 * make a fresh DIR/records (no link followed, owned as DIR is).  Returns
 * -1 to go on, else the exit status after one line on stderr. */
int sps_run_dir_take(struct sps_run_dir_hold *h, const char *dir, int allow_foreign, char **cmd, int argc);

/* For another directory the run writes into (the value dir of option opt,
 * "--tensorboard"): made with its parents, not a link at its name, and
 * refused when another user owns it unless allow_foreign, as DIR is.
 * Returns -1 to go on, else the exit status after one line. */
int sps_run_dir_check(const char *opt, const char *dir, int allow_foreign);

/* The rule above for a directory any command writes into (report's DIR
 * or -o, run's --prom-textfile's directory), without making it: dir (or,
 * while it does not exist, the nearest directory above it that does) is
 * refused when it is owned by another user than the effective one (root
 * excepted), or lies inside a directory another user can change (owned
 * by another user but root, or writable by all without the sticky bit),
 * by the real path or the path as given: its owner could move it away
 * while stepscope writes there and put a link in its place.  A link at
 * dir's own name is followed (the directory holding it is checked).
 * allow_foreign (--allow-foreign-dir) skips the check.  Returns -1 to go
 * on, else the exit status 1 after one line "stepscope: CMD: WHAT: ...". */
int sps_dir_foreign_check(const char *cmd, const char *what, const char *dir, int allow_foreign);

/* sps_dir_foreign_check for the directory the file path (the value of
 * option opt) is written into; the line names both. */
int sps_file_dir_foreign_check(const char *cmd, const char *opt, const char *path, int allow_foreign);

/* The run is over: when the command never started (started 0) the
 * earlier outputs go back in place; when it ran and DIR/report.json is
 * there (this run's: the earlier one was set aside) .previous is removed;
 * else .previous stays and one line says where.  A failure here is said
 * in one line and changes no exit status. */
void sps_run_dir_end(struct sps_run_dir_hold *h, int started);

#endif /* SPS_CLI_RUN_DIR_H */
