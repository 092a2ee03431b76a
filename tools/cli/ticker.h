/*
 * ticker.h - a thread of `stepscope run` that calls a function at a
 * fixed period while the workload runs (the live view's redraws, the
 * overhead guard's readings).
 *
 * The period is kept on CLOCK_MONOTONIC; after a stall (stepscope was
 * stopped with Ctrl-Z) the ticker starts afresh instead of calling tick
 * again and again to catch up.  The thread blocks every signal: they are
 * the run command's to forward.
 *
 * One owner starts and stops a ticker; tick runs on the ticker's thread
 * only, never two at once.
 */
#ifndef SPS_CLI_TICKER_H
#define SPS_CLI_TICKER_H

#include <stdint.h>

struct sps_ticker;

/* Call tick(arg) every period_ns, the first time at once when now is
 * set, else one period from now.  Returns NULL when the thread cannot
 * start. */
struct sps_ticker *sps_ticker_start(uint64_t period_ns, int now, void (*tick)(void *arg), void *arg);

/* The period the environment variable var sets, in milliseconds from 10
 * to 10000, as nanoseconds; default_ns when it is unset or empty.  For
 * the test suite, whose tests wait on these threads (docs/cli.md lists the
 * variables); a value that is not such a number is ignored, with a line
 * on stderr.  Reads the environment: call before threads that change it. */
uint64_t sps_ticker_period_from_env(const char *var, uint64_t default_ns);

/* Stop the thread (a tick under way finishes first) and free t; *cpu_seconds
 * (may be NULL) receives the thread's CPU time.  NULL is a no-op. */
void sps_ticker_stop(struct sps_ticker *t, double *cpu_seconds);

#endif /* SPS_CLI_TICKER_H */
