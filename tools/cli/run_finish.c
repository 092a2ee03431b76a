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

static char line[PATH_MAX + 256];
static size_t line_len;
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

void sps_run_finish_signal(int sig) {
    int saved = errno;
    if (getpid() != stepscope_pid) /* a child forked after the workload: the signal's usual effect */
        stop_by(sig);
    else if (signals_seen++ == 0) {
        ssize_t n = write(STDERR_FILENO, line, line_len);
        (void)n;
    } else if (json_written) {
        stop_by(sig);
    } else {
        held = sig;
    }
    errno = saved;
}

void sps_run_finish_written(void) {
    json_written = 1;
    if (held)
        stop_by(held);
}
