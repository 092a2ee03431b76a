/*
 * live_view.h - `stepscope run`'s live status, drawn in the last lines of
 * the terminal while the workload runs.
 *
 * The workload keeps the terminal: its output goes straight to it, not
 * through stepscope (so it still sees a terminal, and a progress bar still
 * works).  The view takes the bottom one to three lines out of the
 * terminal's scrolling region (DECSTBM), so the workload's output scrolls
 * above them and is never overwritten or pushed away by the status, and
 * redraws them at most twice a second, each redraw one write() so it
 * cannot interleave with a write of the workload's.  It draws only while
 * the workload holds the terminal's foreground (not when the job was put
 * in the background) and gives the terminal its whole height back when
 * paused or stopped.
 *
 * One owner (the run command's main thread) calls these functions; the
 * view's own thread only reads the records and the published sample.
 */
#ifndef SPS_CLI_LIVE_VIEW_H
#define SPS_CLI_LIVE_VIEW_H

#include <stdint.h>

#include "sampler/published.h"

struct sps_live_view;

/* Why the view is off for output fd, or NULL when it can be shown: fd
 * must be a terminal and TERM must not be "dumb". */
const char *sps_live_view_unavailable(int fd);

/*
 * Start the view on fd (stderr): its thread reads the records in
 * records_dir and the sampler's published sample (NULL: no sampler) and
 * draws while workload_pgid is the terminal's foreground group.
 * start_ns (CLOCK_MONOTONIC) is when the workload started.  Returns NULL
 * when the view is unavailable or cannot start (the run goes on without
 * it).  The strings and the published area must outlive the view.
 */
struct sps_live_view *sps_live_view_start(int fd, const char *records_dir, const struct sps__published *published,
                                          int workload_pgid, uint64_t start_ns);

/* Erase the status and give the terminal its whole height back, until
 * resume (before stepscope stops for Ctrl-Z, so the shell gets the whole
 * screen).  NULL is a no-op. */
void sps_live_view_pause(struct sps_live_view *v);
void sps_live_view_resume(struct sps_live_view *v);

/* What the view cost: redraws made and its thread's CPU time. */
struct sps_live_view_cost {
    uint64_t refreshes;
    double cpu_seconds;
};

/* Stop the thread, erase the status, give the terminal its whole height
 * back and free v; *cost (may be NULL) receives what it cost.  NULL is a
 * no-op. */
void sps_live_view_stop(struct sps_live_view *v, struct sps_live_view_cost *cost);

#endif /* SPS_CLI_LIVE_VIEW_H */
