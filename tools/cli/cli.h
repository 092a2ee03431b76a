/* cli.h - what the subcommands of the stepscope command share. */
#ifndef SPS_CLI_H
#define SPS_CLI_H

#include <stddef.h>

/* Each subcommand gets argv from its own name on and returns the exit
 * status. */
int sps_cmd_run(int argc, char **argv);
int sps_cmd_snapshot(int argc, char **argv);
int sps_cmd_doctor(int argc, char **argv);
int sps_cmd_report(int argc, char **argv);
int sps_cmd_compare(int argc, char **argv);
int sps_cmd_merge(int argc, char **argv);

/* Print "stepscope: CMD: WHAT: WHY" on stderr and return code. */
int sps_cli_error(const char *cmd, const char *what, const char *why, int code);

/* Print "stepscope: CMD: MESSAGE" for a usage error and return 2. */
int sps_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The note, on stderr, that the TensorBoard event files just written into
 * dir share their directories with that many other event files (nothing
 * when others is 0); cmd_report.c. */
void sps_cli_tensorboard_note(const char *cmd, const char *dir, size_t others);

/* One line on stderr, "stepscope: CMD: warning: ...", for each thing the
 * report rep of the run directory dir lacks: processes still running when
 * it was built, records it skipped (how many of how many, the first's
 * reason).  Nothing when it lacks nothing; report_notes.c. */
struct sps_report;
void sps_cli_report_notes(const char *cmd, const char *dir, const struct sps_report *rep);

/* Mark the processes of run (its records just read) that are still
 * running (running_at_report): a process the workload started that
 * outlived it.  A recycled pid is not taken for the process. */
struct sps_run;
void sps_cli_mark_running(struct sps_run *run);

#endif
