/*
 * ranks.h - the run seen rank by rank: for each distributed rank (the
 * RANK its records' headers hold), where it ran, its steps, its step time
 * and each phase's self time per step, and its time blocked in
 * collectives, beside the same figures over every rank pooled.
 *
 * A rank is its processes: those whose record says that rank, and their
 * children that say none (a DataLoader worker started without the
 * environment).  Processes of no rank are no rank.  Steps are the rows of
 * one step name, the run's main one (the name with the most rows).
 *
 * Medians and p90s are exact (sorted rows, not histograms) over the
 * rank's steady steps: its rows not marked warm-up, or all of them when
 * every one is.  Totals are over all its rows.  A phase's or the wait's
 * time in a step without it counts 0 in the median.
 *
 * Built by sps__ranks_build from a Run's step rows (sps__report_build),
 * or read from report.json's "ranks" and "ranks_pooled" (the report
 * reader); everything is owned by the struct and freed by sps__ranks_free.
 * Pure, no I/O; not thread-safe per struct.
 */
#ifndef SPS_MODEL_RANKS_H
#define SPS_MODEL_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/run.h"

/* One phase (a zone of kind zone) as one rank (or the pool) spends it. */
struct sps_rank_phase {
    char name[SPS_REC_NAME_LEN];
    double self_median_s; /* self time per steady step, median */
    double self_total_s;  /* self time summed over all the steps */
};

/* One rank, or every rank pooled (rank -1). */
struct sps_rank_view {
    int rank;         /* -1: the pooled view */
    int local_rank;   /* -1: unknown (and in the pooled view) */
    int world_size;   /* -1: unknown */
    char hostname[64]; /* "" in the pooled view */
    int pid;          /* the rank's main process: the one of its processes holding the most steps (0: pooled) */
    uint32_t processes; /* its processes (the main one, its workers); the pool: every rank's */
    uint64_t steps;        /* its step rows */
    uint64_t warmup_steps; /* of those, marked warm-up */
    double step_median_s, step_p90_s; /* steady steps; NAN without steps */
    double step_total_s;              /* all steps; 0 without */
    /* time blocked in collectives (zones of kind SPS_KIND_WAIT) inside its
     * steps: per steady step (median), and summed over all steps; NAN
     * when the run recorded no wait at all (nothing measured it) */
    double wait_median_s, wait_total_s;
    size_t nphases;
    struct sps_rank_phase *phases; /* in run.names order: largest total first */
};

struct sps_ranks {
    char step_name[SPS_REC_NAME_LEN]; /* the step name the figures are of; "" without steps */
    size_t n;
    struct sps_rank_view *rank;  /* [n], ascending rank */
    int have_pooled;             /* pooled holds the pool (n > 0) */
    struct sps_rank_view pooled; /* every rank's steps as one set */
};

/*
 * The rank process pi belongs to: its record's, or, when it has none, its
 * nearest ancestor's among the run's processes on the same host; -1 when
 * neither has one.  Pure.
 */
int sps__run_process_rank(const struct sps_run *run, size_t pi);

/*
 * Build out from run's processes and step rows (*out zeroed first).
 * Returns 0 or SPS_ENOMEM (then *out holds nothing to free).
 */
int sps__ranks_build(const struct sps_run *run, struct sps_ranks *out);

/* Free what out owns; *out is zeroed.  NULL is a no-op. */
void sps__ranks_free(struct sps_ranks *r);

#endif /* SPS_MODEL_RANKS_H */
