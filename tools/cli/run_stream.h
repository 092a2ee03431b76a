/*
 * run_stream.h - `stepscope run`'s live step stream, DIR/steps.jsonl
 * (src/live/stream.h): a ticker thread polls the records every 100 ms
 * (STEPSCOPE_STREAM_MS sets another period, for tests), with the
 * sampler's latest published readings; stopping it writes every step
 * left once the workload has ended.
 *
 * One owner starts and stops it.
 */
#ifndef SPS_CLI_RUN_STREAM_H
#define SPS_CLI_RUN_STREAM_H

#include <stdint.h>

struct sps__published;
struct sps_run_stream;

/* Start streaming records_dir's steps into path, times counted from
 * t0_mono_ns; published (may be NULL: no machine readings) is the
 * sampler's.  Returns NULL, after a one-line error, when the file or the
 * thread cannot be made: the run goes on without a stream. */
struct sps_run_stream *sps_run_stream_start(const char *path, const char *records_dir,
                                            const struct sps__published *published, uint64_t t0_mono_ns);

/* The workload has ended: stop polling, write the steps left, close.
 * Call while published is still mapped.  NULL is a no-op. */
void sps_run_stream_stop(struct sps_run_stream *s);

#endif /* SPS_CLI_RUN_STREAM_H */
