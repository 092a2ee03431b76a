/*
 * run_lock.h - one `stepscope run` per run directory at a time.
 *
 * The run holds an exclusive flock(2) on DIR/.stepscope.lock from before
 * it touches DIR's outputs until it exits (its report written); the file
 * records the holder (pid, host, start time, command line), so that a
 * second run, or a `stepscope report` of DIR meanwhile, is refused with a
 * line that names it.  The lock goes with the process (exit, a kill, a
 * crash): a stale file never blocks a later run.  The file stays in DIR
 * between runs; it is opened without following a link and never made
 * through one.
 *
 * Not thread-safe; one holder per process.
 */
#ifndef SPS_CLI_RUN_LOCK_H
#define SPS_CLI_RUN_LOCK_H

#include <stddef.h>

#define SPS_RUN_LOCK_FILE ".stepscope.lock"

/* Take the lock of the directory open as dfd (named dir in messages) for
 * the command argv[0..argc-1] this process runs.  Returns the lock's
 * descriptor (close-on-exec: the workload does not inherit it; keep it
 * open while the run lasts), or -1 with why set to one line: "in use by
 * stepscope run pid N (CMD), started HH:MM:SS" when another run holds it,
 * else what failed. */
int sps_run_lock_take(int dfd, char **argv, int argc, char *why, size_t whylen);

/* 1 when a run holds dir's lock now, with who set to the holder as
 * above ("stepscope run pid N (CMD), started ..."); 0 when none does (no
 * lock file, or nobody holds it).  Creates nothing. */
int sps_run_lock_held(const char *dir, char *who, size_t wholen);

#endif /* SPS_CLI_RUN_LOCK_H */
