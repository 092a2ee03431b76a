/*
 * overhead_guard.h - `stepscope run --max-overhead PCT`: a thread that
 * watches what recording costs the workload and, when a window of its CPU
 * time goes over the budget, thins the records (the decision is
 * src/live/guard.h's; the thin levels are docs/record-format.md's).
 *
 * Every SPS_OVERHEAD_GUARD_PERIOD_MS it counts the zones and values every
 * workload process has offered (src/live/peek.h) and reads the workload's
 * CPU time from the sampler's published sample; when the guard raises
 * the level it writes it into every record, and into records that appear
 * later (a worker started after).
 *
 * One owner (the run command's main thread) starts and stops it.
 */
#ifndef SPS_CLI_OVERHEAD_GUARD_H
#define SPS_CLI_OVERHEAD_GUARD_H

#include <stdint.h>

#include "render/render.h"
#include "sampler/published.h"

#define SPS_OVERHEAD_GUARD_PERIOD_MS 250
/* For tests (docs/cli.md): another period, and windows of as much CPU
 * time (the default's are 0.25 s, SPS_GUARD_MIN_WINDOW_CPU_S) */
#define SPS_OVERHEAD_GUARD_PERIOD_ENV "STEPSCOPE_GUARD_PERIOD_MS"

struct sps_overhead_guard;

/*
 * Start guarding the records in records_dir with budget (a fraction of the
 * workload's CPU time, in (0, 1]) and the measured costs of one zone, one
 * value and one zone left out.  published is the sampler's sample (it must outlive the
 * guard); start_ns (CLOCK_MONOTONIC) is when the run began.  Returns NULL
 * when the thread cannot start (the run goes on unguarded).
 */
struct sps_overhead_guard *sps_overhead_guard_start(const char *records_dir, const struct sps__published *published,
                                                    double budget, double zone_ns, double value_ns,
                                                    double thinned_ns, uint64_t start_ns);

/* Stop the thread, fill *out with what it did, free g.  NULL is a no-op.
 * (No last reading: the workload has ended, and a level raised now would
 * say the run was thinned when nothing was.) */
void sps_overhead_guard_stop(struct sps_overhead_guard *g, struct sps_guard_report *out);

#endif /* SPS_CLI_OVERHEAD_GUARD_H */
