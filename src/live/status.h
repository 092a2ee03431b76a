/*
 * status.h - the live view's text: a compact status of a running workload
 * (elapsed, steps, step times, phase split, CPU, memory, GPUs) in one or
 * two lines that fit a terminal's width.
 *
 * Pure: no I/O, no terminal control (tools/cli/live_view.c draws the
 * lines).  Thread-safe.
 */
#ifndef SPS_LIVE_STATUS_H
#define SPS_LIVE_STATUS_H

#include "live/peek.h"
#include "sources/source.h"

#define SPS_LIVE_LINE_MAX 512

struct sps__live_frame {
    double elapsed_s;                   /* since the workload started */
    const struct sps__live_steps *steps; /* NULL: no records read */
    double steps_per_s;                 /* recent completions per second; NAN: not known yet */
    const struct sps__sample *sample;   /* the sampler's latest; NULL: no sampler */
};

/*
 * Write the status as nlines lines (1 to 3) of at most width columns
 * (width is clamped to [20, SPS_LIVE_LINE_MAX - 1]), printable ASCII only.
 * Three groups of items: progress (elapsed, step, steps/s, last and median
 * step time), phases (the split of the stepping thread's time by zone) and
 * machine (workload CPU and RSS, GPU utilisation, memory, temperature).
 * Three lines: one group each; two: progress and machine, then phases;
 * one: all three in that order.  Each item ("step 412", "CPU 187%",
 * "forward 38%") is shown whole or not at all, and once one does not fit
 * its line the line ends, so a narrow terminal loses a line's last items,
 * never half of one and never out of order.  An unknown reading (NAN in
 * the sample) is left out, not shown as 0.
 */
void sps__live_format(const struct sps__live_frame *fr, int width, int nlines, char lines[][SPS_LIVE_LINE_MAX]);

#endif /* SPS_LIVE_STATUS_H */
