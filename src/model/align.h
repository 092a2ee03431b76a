/*
 * align.h - putting the processes of runs recorded on several machines on
 * one clock, for `stepscope merge` (tools/cli/cmd_merge.c).
 *
 * The reference clock is CLOCK_MONOTONIC of rank 0's host.  A process on
 * that host is on it already; a process on another host maps by the
 * offset a rank of its host measured to rank 0 (records' clock_sync
 * slots: start, and end for drift), else by the realtime anchors (its
 * host's CLOCK_REALTIME against the reference host's, only as good as
 * their NTP).  A merged run directory keeps the records as they were
 * written and says how each maps in records/merge.tsv; the reader
 * (sps__run_load_dir) applies it, so `stepscope report` on a merged
 * directory renders the same times.
 *
 * Pure functions over plain data unless said otherwise; thread-safe on
 * distinct arguments.
 */
#ifndef SPS_MODEL_ALIGN_H
#define SPS_MODEL_ALIGN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/run.h"

#define SPS_MERGE_FILE "merge.tsv" /* in a merged run's records/ */
/* The widest time or offset, in ns, records/merge.tsv may hold (146 years
 * either way): the clock arithmetic's products then fit in __int128. */
#define SPS_ALIGN_NS_MAX ((int64_t)1 << 62)
/* The default --max-clock-error: see docs/distributed.md ("Several
 * nodes: merge") for why 1 ms. */
#define SPS_MERGE_DEFAULT_TOLERANCE_NS 1000000u

/* The offset (ns) that maps time t of a's process onto the reference
 * clock: a->off0_ns up to at0, off1_ns from at1, linear between, rounded
 * to the nearest ns (halves away from zero). */
int64_t sps__align_offset_at(const struct sps_align *a, uint64_t t);

/* t on the reference clock (t + its offset; 0 if that is negative; 0
 * stays 0, the model's "no time"). */
uint64_t sps__align_map(const struct sps_align *a, uint64_t t);

/* *a from p's clock_sync: the start slot, with the end slot for drift
 * when it was measured later.  Returns 0, or -1 (nothing filled) when
 * the start slot holds no measurement. */
int sps__align_measured(struct sps_align *a, const struct sps_process_data *p);

/* *a for p by the realtime anchors against ref (a process of the
 * reference host): p's realtime minus monotonic at its start, less
 * ref's. */
void sps__align_realtime(struct sps_align *a, const struct sps_process_data *p, const struct sps_process_data *ref);

/* Map every time of p (its start and end, thinning start, events and open
 * zones) by a, and keep a in p->align.  The clock_sync slots stay as
 * recorded (on p's own clock). */
void sps__process_align(struct sps_process_data *p, const struct sps_align *a);

/* "reference", "measured", "realtime"; NULL for none. */
const char *sps__align_method_name(uint32_t method);

/*
 * The plan of a merge: runs[0..n) are the inputs' loaded runs (dirs[i]
 * names each in errors).  Fills aligns[i][j] for runs[i]->procs[j] (the
 * caller allocates them) and *merge (its inputs stay unset: the caller's).
 * The reference host is rank 0's (the first input's first process's when
 * no input holds rank 0).  Refuses (SPS_EINVAL, err one line) a rank of one
 * host in two inputs, and a measured error above tolerance_ns unless force
 * (then merge->forced and merge->forced_why say which).  Pure.
 */
int sps__merge_plan(const struct sps_run *const *runs, const char *const *dirs, size_t n, uint64_t tolerance_ns,
                    int force, struct sps_align *const *aligns, struct sps_run_merge *merge, char *err,
                    size_t errlen);

/*
 * Write the merge file: merge's facts, then one line per record (file is
 * its name in the merged records/, align its mapping).  Lines are
 * tab-separated; see docs/record-format.md.  Returns 0 or SPS_EIO.
 */
int sps__merge_file_begin(FILE *f, const struct sps_run_merge *merge);
int sps__merge_file_record(FILE *f, const char *file, const struct sps_align *a);

/*
 * Apply dir/merge.tsv, if there is one, to run (loaded from dir): each
 * process whose record file it names is aligned (sps__process_align), and
 * run->merge filled.  Returns 0 (also with no file), SPS_EFORMAT with err
 * "<file>: line N: what", SPS_ENOMEM or SPS_EIO.  Not thread-safe with
 * other users of run.
 */
int sps__merge_file_apply(struct sps_run *run, const char *dir, char *err, size_t errlen);

/* Free what merge owns (its inputs); *merge is zeroed. */
void sps__run_merge_free(struct sps_run_merge *merge);

#endif /* SPS_MODEL_ALIGN_H */
