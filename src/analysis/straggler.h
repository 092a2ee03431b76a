/*
 * straggler.h - which rank of a distributed job the others wait for, and
 * where it loses the time.
 *
 * The trap it avoids: a collective (DDP's gradient all-reduce, a barrier)
 * ends at the same moment on every rank, so every rank's step, and the
 * phase that holds the collective, takes the same wall time; a slow rank
 * cannot be named from them.  What differs is how long each rank computed
 * before it arrived: a step's duration less its time blocked in
 * collectives (zones of kind SPS_KIND_WAIT), which is the arrival time at
 * the step's collectives measured from the step's start.  The slow rank
 * computes longer and waits less; the fast ones wait for it.
 *
 * For each step every rank completed (matched by step number, warm-up
 * left out): each rank's compute time and its excess over the median of
 * the other ranks' compute in that step.  Over windows of
 * SPS_STRAGGLER_WINDOW steps a rank is named when the mean of its excess
 * (what the others wait for it a step; one step in ten trimmed at each
 * end) is above a threshold that is both absolute and relative to how
 * much balanced ranks differ, and the others waited longer than it did
 * (docs/analysis.md: "Stragglers" gives the rule and why).  The
 * run's verdict names the ranks named in at least half of the windows,
 * each with the phase whose self time exceeds the other ranks' median
 * most, what it costs the job a step, the share of windows naming it and
 * a confidence; or "none" with how close the ranks are.
 *
 * Pure: a function of the Run model; no I/O.  Not thread-safe per struct.
 */
#ifndef SPS_ANALYSIS_STRAGGLER_H
#define SPS_ANALYSIS_STRAGGLER_H

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"

struct sps_run;
struct sps_jw;

/* Steps per window (docs/analysis.md says why ten). */
#define SPS_STRAGGLER_WINDOW 10u
/* A window's last steps that are fewer than this join the window before
 * them; a run with fewer judged steps than this is not judged. */
#define SPS_STRAGGLER_MIN_STEPS 5u
/* A window names a rank whose trimmed mean excess compute is above all
 * of: this many ms, this share of the window's median step, and this many
 * standard errors of that mean were the rank balanced (from the other
 * ranks' step-to-step spread of compute over the window). */
#define SPS_STRAGGLER_ABS_MS 1.0
#define SPS_STRAGGLER_REL 0.05
#define SPS_STRAGGLER_SE 3.0
/* A window's trimmed mean leaves out one step in this many at each end. */
#define SPS_STRAGGLER_TRIM_PER 10u
/* The run names the ranks named in at least this share of its windows. */
#define SPS_STRAGGLER_STEADY 0.5

enum sps_straggler_verdict {
    SPS_STRAGGLER_NOT_DISTRIBUTED = 0, /* fewer than two ranks recorded steps */
    SPS_STRAGGLER_NO_WAIT,             /* no rank recorded time waiting in collectives */
    SPS_STRAGGLER_TOO_FEW_STEPS,       /* fewer than SPS_STRAGGLER_MIN_STEPS steps every rank completed */
    SPS_STRAGGLER_NONE,                /* judged: no rank is steadily slower */
    SPS_STRAGGLER_FOUND,               /* judged: ranks[] with slow set */
    SPS_STRAGGLER_VERDICTS
};

/* report.json's word for a verdict ("not_distributed", "no_wait",
 * "too_few_steps", "none", "found"); NULL out of range.  Static. */
const char *sps__straggler_verdict_name(int verdict);

/* The phase name given to compute in no zone (the step's own self time). */
#define SPS_STRAGGLER_OUTSIDE_ZONES "(outside zones)"

/* One rank over the judged steps.  Times in ms a step. */
struct sps_straggler_rank {
    int rank;
    int pid;  /* the process whose steps stand for the rank */
    char host[64];
    uint64_t steps;    /* its step rows (after warm-up) */
    double step_ms;    /* median step duration over the judged steps */
    double wait_ms;    /* mean time waiting in collectives */
    double compute_ms; /* mean of step - wait */
    double excess_ms;  /* mean over the judged steps of compute - the others' median compute */
    uint32_t windows_named; /* windows that named it */
    double share;      /* windows_named / the windows judged */
    int slow;          /* the run names it */
    /* for a slow rank: the phase (a zone's name, or SPS_STRAGGLER_OUTSIDE_ZONES)
     * whose self time exceeds the other ranks' median most on average, by phase_excess_ms;
     * "" and NAN otherwise */
    char phase[SPS_REC_NAME_LEN];
    double phase_excess_ms;
    double threshold_ms; /* the median of its windows' thresholds */
    double confidence;   /* share x min(1, excess / (2 x threshold)); NAN unless slow */
};

/* One window of consecutive judged steps. */
struct sps_straggler_window {
    uint64_t first_step, last_step; /* step numbers (sps_step_row.index), inclusive */
    uint32_t steps;
    double step_ms;      /* median step duration, all ranks */
    int rank;            /* the named rank with the largest excess; -1: none named */
    uint32_t named;      /* ranks named */
    /* rank's trimmed mean excess and threshold; when none was named,
     * those of the rank with the largest excess (top_rank) */
    double excess_ms;
    double threshold_ms;
    int top_rank;
    char phase[SPS_REC_NAME_LEN]; /* where the named rank loses the time; "" when none named */
    double phase_excess_ms;       /* NAN when none named */
};

struct sps_straggler {
    int computed;
    int verdict; /* enum sps_straggler_verdict */
    char reason[200]; /* for the verdicts that were not judged, why */
    size_t nranks;
    struct sps_straggler_rank *ranks; /* owned; by rank number */
    size_t nwindows;
    struct sps_straggler_window *windows; /* owned; in step order */
    uint32_t window_steps;  /* SPS_STRAGGLER_WINDOW */
    uint64_t steps_judged;  /* steps every rank completed, after warm-up */
    double step_ms;         /* median step duration, all ranks, judged steps */
    /* found: the slowest slow rank (index into ranks) and what the job
     * waits for it each step (its mean excess); none: the largest |mean
     * excess| of any rank and the share of windows that named no rank */
    long slowest;
    double cost_ms;
    double spread_ms;
    double clean_share;
};

/* Judge run (built).  Returns 0 or SPS_ENOMEM; *out is valid either way
 * (SPS_ENOMEM leaves it unjudged) and is freed by sps__straggler_free. */
int sps__straggler_analyze(const struct sps_run *run, struct sps_straggler *out);

/* Write "straggler": {...} (docs/analysis.md lists the keys). */
void sps__straggler_json(struct sps_jw *w, const struct sps_straggler *s);

void sps__straggler_free(struct sps_straggler *s);

#endif /* SPS_ANALYSIS_STRAGGLER_H */
