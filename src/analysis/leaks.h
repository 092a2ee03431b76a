/*
 * leaks.h - does memory grow as the run goes on?  A robust trend
 * (Theil-Sen, with Sen's distribution-free 95% interval) of the workload
 * tree's memory (its PSS, where read often enough, else its RSS sum), of
 * each GPU's memory and of each tree process's own resident memory (a
 * worker's leak can hide in the tree's sum when another process shrinks)
 * against an axis: the main step stream's step number after warm-up when
 * the run recorded steps, else time after a warm-up share of the run (any
 * command: `stepscope run -- sleep 5`); and a verdict that a flat series,
 * a plateau, a sawtooth (allocator or garbage-collector pattern) or a
 * single one-off allocation does not trip.  docs/analysis.md, "Memory
 * leaks", states the rule and its thresholds.
 *
 * Pure: functions of the Run model and the sampler's result, no I/O, no
 * global state.  A struct is used by one thread at a time.
 */
#ifndef SPS_ANALYSIS_LEAKS_H
#define SPS_ANALYSIS_LEAKS_H

#include <stddef.h>
#include <stdint.h>

#include "sources/source.h"

struct sps_run;
struct sps__sampler_result;
struct sps_jw;

/* The value torch.cuda's allocated memory is recorded as at each step's
 * end (python/src/torch_memory.c), and its series' name. */
#define SPS_LEAK_TORCH_VALUE "torch.cuda.allocated_bytes"
#define SPS_LEAK_TORCH_SERIES "torch_cuda_allocated_bytes"

/* The thresholds of the verdict (docs/analysis.md). */
#define SPS_LEAK_MIN_POINTS 10         /* readings within the analysed steps */
#define SPS_LEAK_MIN_STEPS 10          /* analysed (post-warm-up) steps */
#define SPS_LEAK_MIN_GROWTH_BYTES (1024.0 * 1024.0)
#define SPS_LEAK_MIN_GROWTH_FRACTION 0.01 /* of the series' median level */
#define SPS_LEAK_SEGMENTS 5            /* the persistence test's segments */
#define SPS_LEAK_SEGMENT_RISE 0.25     /* each segment rises by this share of the trend's prediction */
/* A late onset (a series the whole run clears, whose last half leaks):
 * the last half's last segment sits above every segment of the first half
 * by this share of the last half's growth (a sawtooth whose teeth are as
 * long as the half does not). */
#define SPS_LEAK_LATE_ABOVE 0.25
/* The time axis (a run with no steps): too few readings or seconds, or a
 * hole in the readings, and the trend is not guessed. */
#define SPS_LEAK_TIME_MIN_POINTS 20      /* readings within the analysed time: 4 a segment */
#define SPS_LEAK_TIME_MIN_SECONDS 2.0    /* analysed (post-warm-up) seconds */
#define SPS_LEAK_TIME_WARMUP_FRACTION 0.2 /* of a series' time in the tree, left out as start-up */
#define SPS_LEAK_TIME_MAX_GAP_FRACTION 0.2 /* of the analysed time: the longest stretch without a reading */

/* What memory is judged against: the step number, or time when the run
 * recorded no step. */
enum sps_leak_axis { SPS_LEAK_AXIS_STEPS = 0, SPS_LEAK_AXIS_TIME, SPS_LEAK_AXIS_COUNT };

/* report.json's names: "steps", "time".  Static storage. */
const char *sps__leak_axis_name(enum sps_leak_axis axis);

enum sps_leak_verdict { SPS_LEAK_UNKNOWN = 0, SPS_LEAK_NONE, SPS_LEAK_FOUND };

/* "unknown", "no leak", "leak". */
const char *sps__leak_verdict_name(enum sps_leak_verdict v);

/* What a series covers. */
enum sps_leak_scope {
    SPS_LEAK_SCOPE_TREE = 0, /* the watched process tree's sum */
    SPS_LEAK_SCOPE_GPU,      /* one GPU */
    SPS_LEAK_SCOPE_PROCESS,  /* one process of the tree */
    SPS_LEAK_SCOPE_TORCH,    /* torch.cuda's allocator in one process, read at its step ends */
    SPS_LEAK_SCOPE_COUNT
};

/* report.json's names: "workload process tree", "gpu", "process",
 * "torch.cuda".  Static storage. */
const char *sps__leak_scope_name(enum sps_leak_scope scope);

/* Which test of the verdict decided it (docs/analysis.md): the renderers
 * say it in words with the figures in human units; OTHER when the series
 * was not judged (reason says why). */
enum sps_leak_rule {
    SPS_LEAK_RULE_OTHER = 0,
    SPS_LEAK_RULE_INTERVAL,    /* no leak: the slope's 95% interval reaches zero */
    SPS_LEAK_RULE_GROWTH,      /* no leak: growth under what matters */
    SPS_LEAK_RULE_PERSISTENCE, /* no leak: the rise does not persist through the segments */
    SPS_LEAK_RULE_ALL          /* leak: every test passed */
};

/* "interval", "growth", "persistence", "all"; NULL for OTHER. */
const char *sps__leak_rule_name(enum sps_leak_rule r);

/* The stretch of the axis a series' figures are of: all of it after
 * warm-up, or its last half, judged when the whole is no leak, and
 * adopted when the last half leaks (a leak that starts mid-run). */
enum sps_leak_window { SPS_LEAK_WINDOW_ALL = 0, SPS_LEAK_WINDOW_LAST_HALF, SPS_LEAK_WINDOW_COUNT };

/* report.json's names: "all", "last half".  Static storage. */
const char *sps__leak_window_name(enum sps_leak_window w);

/* One series' answer.  Figures that could not be computed are NAN
 * (written as null); reason always says why the verdict is what it is. */
struct sps_leak_series {
    char series[48]; /* "workload_pss_bytes" or "workload_rss_bytes", "gpu_workload_memory_bytes", "process_rss_bytes",
                        "torch_cuda_allocated_bytes", ... */
    enum sps_leak_scope scope;
    int gpu;         /* the GPU's index, -1 for a host series */
    int pid;         /* the process's (SPS_LEAK_SCOPE_PROCESS), else -1 */
    char comm[SPS_PROC_COMM_LEN]; /* the process's command name ("" for the other scopes) */
    enum sps_leak_axis axis; /* the run's (struct sps_leaks.axis) */
    enum sps_leak_verdict verdict;
    enum sps_leak_rule rule;
    char reason[240];
    enum sps_leak_window window; /* the stretch the figures below are of */
    double window_from;      /* where that stretch starts on the axis (the last half's first step, or
                                second); NAN for the whole run */
    size_t points;           /* readings analysed (in the window) */
    size_t steps_analysed;   /* steps axis: post-warm-up steps of the main stream (the window's); 0 on the time axis */
    double seconds_analysed; /* time axis: this series' seconds after its warm-up (the window's); NAN on the steps axis */
    /* where the readings lie on the axis: step numbers, or seconds since
     * the sampler's first reading */
    double first_at, last_at;
    /* bytes per step, or per second on the time axis; the interval likewise */
    double slope, ci95_low, ci95_high;
    double growth_bytes;     /* slope x the steps or seconds analysed */
    double median_bytes;     /* the series' median level over the readings */
    double min_growth_bytes; /* what growth must reach to matter */
    double allowance_bytes;  /* of that, stepscope's own record rings filling (RSS series only) */
    double first_segment_median_bytes, last_segment_median_bytes;
    int rising_segments;     /* of SPS_LEAK_SEGMENTS - 1 transitions, those that rose enough */
};

struct sps_leaks {
    int computed;
    enum sps_leak_axis axis;       /* steps, or time when the run recorded no step */
    enum sps_leak_verdict verdict; /* leak if any series leaks; no leak if every known one does not */
    char reason[240];
    /* the main step stream (steps axis; "" and -1 on the time axis) */
    char step_name[64];
    int pid, tid;
    int tree_pid; /* the watched tree's root (the tree series' scope); 0: unknown */
    /* which measure the tree's series is and why: its PSS when read at least
     * SPS_LEAK_MIN_POINTS times within the analysed steps (on the time axis:
     * when the PSS series can be judged on its own), else its RSS sum */
    char tree_note[240];
    size_t warmup_steps, steps_analysed; /* steps axis; on the time axis the main stream's steps, too few
                                            for a trend against them (0 when none were recorded) */
    /* time axis: the tree's start-up left out and the seconds after it
     * (a process's own are its series'); NAN on the steps axis */
    double warmup_seconds, seconds_analysed;
    uint64_t processes_left_out; /* tree processes the sampler kept no series of (past its limit) */
    size_t nseries;
    struct sps_leak_series *series; /* owned: the tree's PSS or RSS, each GPU, torch.cuda's allocated memory
                                       in each process that recorded it, then each process's RSS */
};

/*
 * Theil-Sen slope of y against x over n points: the median of the slopes
 * of every pair with distinct x, and its 95% confidence interval after
 * Sen (1968): with N such slopes in order and C = 1.96 sqrt(Var S), where
 * Var S = n(n-1)(2n+5)/18 is the variance of Kendall's S without ties,
 * the bounds are the slopes of ranks (N - C)/2 and (N + C)/2 + 1 (rounded
 * outwards, clamped to the ends).  Returns 0, -1 when fewer than 2 pairs
 * have distinct x (outputs NAN), or SPS_ENOMEM: the pairs take
 * n(n-1)/2 doubles, so callers keep n to a few thousand.  Thread-safe.
 */
int sps__theil_sen(const double *x, const double *y, size_t n, double *slope, double *lo, double *hi);

/*
 * The verdict on one series of n readings y at step numbers x (ascending),
 * over steps_analysed steps: fills out's figures, axis, verdict and reason
 * (its series, scope, gpu, pid and comm are left alone).  When the whole
 * is no leak, the last steps_analysed / 2 steps (up to x[n - 1]) are
 * judged by the same rules, and a leak there that ends above the first
 * half's level (SPS_LEAK_LATE_ABOVE) is the verdict, with that window's
 * figures (out->window).  allowance_bytes
 * is growth that is known and bounded, not a leak (stepscope's own rings
 * becoming resident in the workload): it adds to the growth that matters.
 * Returns 0 or SPS_ENOMEM.  Thread-safe.
 */
int sps__leak_judge(const double *x, const double *y, size_t n, size_t steps_analysed, double allowance_bytes,
                    struct sps_leak_series *out);

/*
 * The same against time: n readings y at x seconds (ascending) within the
 * analysed stretch [from_s, to_s] (after the warm-up).  Unknown with too
 * few readings (SPS_LEAK_TIME_MIN_POINTS), too short a stretch
 * (SPS_LEAK_TIME_MIN_SECONDS) or a stretch without readings longer than
 * SPS_LEAK_TIME_MAX_GAP_FRACTION of it; the slope is in bytes per second.
 * The last half, [(from_s + to_s) / 2, to_s], is judged as on steps.
 * Returns 0 or SPS_ENOMEM.  Thread-safe.
 */
int sps__leak_judge_time(const double *x, const double *y, size_t n, double from_s, double to_s,
                         double allowance_bytes, struct sps_leak_series *out);

/*
 * The leak analysis of a built run with its sampler result (NULL: none
 * ran, and only torch.cuda's allocated memory, recorded at step ends, can
 * be judged): against the step number when the run has steps, else
 * against time.  *out is valid (possibly partial) on any
 * return and must be freed.  Returns 0 or SPS_ENOMEM.
 */
int sps__leaks_analyze(const struct sps_run *run, const struct sps__sampler_result *sampler, struct sps_leaks *out);

/* Write "leaks": {...} into the open analysis object. */
void sps__leaks_json(struct sps_jw *w, const struct sps_leaks *l);

void sps__leaks_free(struct sps_leaks *l);

#endif /* SPS_ANALYSIS_LEAKS_H */
