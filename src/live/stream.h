/*
 * stream.h - the live step stream, DIR/steps.jsonl: one JSON line per
 * step a workload thread completes, written by `stepscope run` while the
 * workload runs (docs/stream-format.md).
 *
 * Each poll reads, with pread and never a mapping, only what the records
 * gained since the last one: the new events of each thread's steps, zones
 * and values rings (from a cursor per ring), its segment head and open
 * zones, and new names; never the whole record.  A step's line is written
 * once its owner is settled (docs/report-format.md, "How a step owns
 * events"): when its thread has begun its next step, when its thread or
 * process has ended, or SPS_STREAM_GRACE_NS after the step's end, so a
 * loop that waits between steps still sees each line promptly.  Lines of
 * one thread are written in the order its steps ended, each write whole.
 * Steps a ring overwrote (or refused) before a poll saw them get a
 * "steps_lost" line in their place.
 *
 * Not thread-safe: one thread owns a struct sps__live_stream.
 */
#ifndef SPS_LIVE_STREAM_H
#define SPS_LIVE_STREAM_H

#include <stdint.h>

#include "sources/source.h"

#define SPS_STREAM_GRACE_NS 200000000 /* 200 ms */
#define SPS_STREAM_FILE "steps.jsonl"

struct sps__live_stream;

struct sps__live_stream_stats {
    uint64_t polls;
    uint64_t lines;       /* step lines written */
    uint64_t steps_lost;  /* steps said lost */
    uint64_t write_errors; /* writes that failed (nothing is written after the first: the file
                              keeps the lines before it) */
    int write_errno;       /* the first failed write's errno (0: none, or out of memory) */
};

/* Follow the records in records_dir (which may not exist yet) into a new
 * out_path (made fresh: a file or a link at the name is removed, a link
 * never followed; a device, FIFO, socket or directory there is refused
 * with EEXIST, never removed).  origin_mono_ns is the run's start
 * (CLOCK_MONOTONIC): lines' start_s and end_s count from it.  Returns
 * NULL with errno set when out_path cannot be created, or when out of
 * memory. */
struct sps__live_stream *sps__live_stream_open(const char *records_dir, const char *out_path,
                                               uint64_t origin_mono_ns);

/* Keep the machine readings of s for the lines to come (the sampler's
 * published sample, copied at each poll). */
void sps__live_stream_sample(struct sps__live_stream *st, const struct sps__sample *s);

/* Read what the records gained and write the lines of the steps that are
 * settled at now_mono_ns.  final: the workload has ended (every step
 * left is settled).  Returns the lines written. */
int sps__live_stream_poll(struct sps__live_stream *st, uint64_t now_mono_ns, int final);

/* Close the file, free st, and give what it did (may be NULL).  NULL is
 * a no-op. */
void sps__live_stream_close(struct sps__live_stream *st, struct sps__live_stream_stats *stats);

#endif /* SPS_LIVE_STREAM_H */
