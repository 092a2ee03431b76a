/*
 * run_finish.h - `stepscope run`'s last phase under signals.
 *
 * While the workload runs, stepscope forwards the signals it receives to
 * the workload's process group (cmd_run.c).  Once the workload is gone,
 * those signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) come
 * here instead of stopping stepscope on the spot, which would lose the
 * report: the first prints one line and the report is finished, every
 * file of it; a later one stops stepscope (by that signal) as soon as
 * report.json is committed, leaving the other files as they are, after a
 * line naming `stepscope report DIR` for them (no summary follows).
 *
 * One process, one run: the state is static.  sps_run_finish_signal is
 * async-signal-safe; the others are called from the main thread.
 */
#ifndef SPS_CLI_RUN_FINISH_H
#define SPS_CLI_RUN_FINISH_H

/* Make the line the first signal prints (it names out_dir), before any
 * handler can need it. */
void sps_run_finish_prepare(const char *out_dir);

/* A signal for stepscope itself, with the workload gone (called from its
 * handler, with the other forwarded signals blocked). */
void sps_run_finish_signal(int sig);

/* report.json is committed: a second signal held until now stops
 * stepscope here, and any later one at once. */
void sps_run_finish_written(void);

#endif
