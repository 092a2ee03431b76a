/*
 * prom_collect.h - the Prometheus snapshot of a running job, read from the
 * records in a run directory while their writers are still running (the
 * data of `stepscope run --serve` and --prom-textfile).
 *
 * It reads, with pread and never a mapping (the way the live view's peek.c
 * and the live stream's stream.c do, through record_file.h), each record's
 * header, names and thread directory, and every thread's exact
 * aggregates: for a step or zone, its count, sums and the part of its
 * histogram between its shortest and longest duration, folded into the
 * exposition's bounds.  An aggregate whose count has not changed since
 * the last read is not read again past its 64-byte header.  Nothing read
 * is trusted: offsets are checked against the file, a record that does
 * not look right yet is tried again next time, a corrupt one is left
 * alone.  The workload is never asked for anything: its processes write
 * their records as always.
 *
 * Not thread-safe: one thread owns a struct sps__prom_collect.
 */
#ifndef SPS_LIVE_PROM_COLLECT_H
#define SPS_LIVE_PROM_COLLECT_H

#include "render/prom_text.h"

struct sps__prom_collect;

/* Follow the records in records_dir (which may not exist yet).  Returns
 * NULL only when out of memory. */
struct sps__prom_collect *sps__prom_collect_open(const char *records_dir);

/* Fill s's series and processes from the records as they are now (new
 * allocations the caller frees with sps__prom_snapshot_free; the machine
 * fields of s are left as they are).  Returns 0, or -1 when out of
 * memory (s then holds what was read before). */
int sps__prom_collect_read(struct sps__prom_collect *c, struct sps__prom_snapshot *s);

/* Close every file and free c.  NULL is a no-op. */
void sps__prom_collect_close(struct sps__prom_collect *c);

/*
 * The sampler's totals as Prometheus counters.  A counter never goes
 * down, or rate() takes the drop for a restart and counts the whole total
 * again; but the tree's totals (CPU seconds, disk bytes, run delay) are
 * sums over its live processes, which drop when a process leaves.  Each
 * total is served as its first reading plus every rise since, so what a
 * process spent stays counted after it has gone.  One owner applies it to
 * each sample in turn.
 */
struct sps__prom_totals {
    double host_served[SPS_HOST_METRIC_COUNT], host_last[SPS_HOST_METRIC_COUNT];
    double gpu_served[SPS_CAPTURE_MAX_GPUS][SPS_GPU_METRIC_COUNT];
    double gpu_last[SPS_CAPTURE_MAX_GPUS][SPS_GPU_METRIC_COUNT];
};

/* No reading yet. */
void sps__prom_totals_init(struct sps__prom_totals *t);

/* Replace every total of s (the catalogue's SPS_TOTAL metrics, the
 * machine's and each GPU's, a GPU by its slot) with its value as a
 * counter; readings that are unavailable stay so. */
void sps__prom_totals_apply(struct sps__prom_totals *t, struct sps__sample *s);

#endif /* SPS_LIVE_PROM_COLLECT_H */
