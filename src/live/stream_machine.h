/*
 * stream_machine.h - the sampler's recent readings, kept by the live
 * stream so each step's line can carry the readings of its window.
 *
 * The stream copies the published sample at each poll and keeps every new
 * reading of the metrics a line carries (step_line.h), with the time its
 * source read it, in a bounded history per metric (the latest
 * SPS_STREAM_HISTORY readings: 51 s at the default 100 ms interval).  A
 * window's value is the mean of the readings taken inside it, or the
 * reading nearest to it when none was.  Not thread-safe: one owner.
 */
#ifndef SPS_LIVE_STREAM_MACHINE_H
#define SPS_LIVE_STREAM_MACHINE_H

#include <stdint.h>

#include "sources/source.h"
#include "step_line.h"

#define SPS_STREAM_HISTORY 512

struct sps__reading_history {
    int64_t t[SPS_STREAM_HISTORY]; /* CLOCK_MONOTONIC ns of the read */
    double v[SPS_STREAM_HISTORY];
    uint32_t n, next; /* readings kept; slot of the next one */
};

struct sps__stream_machine {
    int have; /* a sample was added */
    struct sps__reading_history host[SPS_STEP_LINE_HOST_METRICS];
    int ngpus;
    int gpu_index[SPS_STEP_LINE_GPUS];
    struct sps__reading_history gpu_util[SPS_STEP_LINE_GPUS], gpu_mem[SPS_STEP_LINE_GPUS];
};

/* Keep the readings of s that are newer than those kept (a reading is
 * identified by its read time). */
void sps__stream_machine_add(struct sps__stream_machine *m, const struct sps__sample *s);

/* The readings of the window [start_ns, end_ns] (CLOCK_MONOTONIC) into
 * *out. */
void sps__stream_machine_window(const struct sps__stream_machine *m, int64_t start_ns, int64_t end_ns,
                                struct sps__step_machine *out);

#endif /* SPS_LIVE_STREAM_MACHINE_H */
