/*
 * run_finish.c - signals while `stepscope run` writes the report: the
 * first is said and the report finished, a second stops stepscope once
 * report.json is committed (run_finish.h).
 */
#include "run_finish.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char line[PATH_MAX + 256], stop_line[PATH_MAX + 256];
static size_t line_len, stop_len;
static volatile sig_atomic_t signals_seen; /* since the workload ended */
static volatile sig_atomic_t json_written;
static volatile sig_atomic_t held; /* a second signal, waiting for report.json */
static pid_t stepscope_pid;        /* a fork child of stepscope (the cost measurement) is not it */

void sps_run_finish_prepare(const char *out_dir) {
    stepscope_pid = getpid();
    int n = snprintf(line, sizeof line,
                     "stepscope: run: finishing the report in %s before stopping (a second signal stops it as soon "
                     "as report.json is written)\n",
                     out_dir);
    line_len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    n = snprintf(stop_line, sizeof stop_line,
                 "stepscope: run: stopped by a second signal, report.json written: `stepscope report %s` makes "
                 "the other files\n",
                 out_dir);
    stop_len = n < 0 ? 0 : (size_t)n < sizeof stop_line ? (size_t)n : sizeof stop_line - 1;
}

/* Die by sig, as the signal would have done.  In sig's own handler sig is
 * blocked: it strikes when the handler returns. */
static void stop_by(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

/* stop_by for the second signal, report.json written: say what is left
 * to make (report.html and the others may be missing), as no summary
 * will. */
static void stop_written(int sig) {
    ssize_t n = write(STDERR_FILENO, stop_line, stop_len);
    (void)n;
    stop_by(sig);
}

void sps_run_finish_signal(int sig) {
    int saved = errno;
    if (getpid() != stepscope_pid) /* a child forked after the workload: the signal's usual effect */
        stop_by(sig);
    else if (signals_seen++ == 0) {
        ssize_t n = write(STDERR_FILENO, line, line_len);
        (void)n;
    } else if (json_written) {
        stop_written(sig);
    } else {
        held = sig;
    }
    errno = saved;
}

void sps_run_finish_written(void) {
    json_written = 1;
    if (held)
        stop_written(held);
}
