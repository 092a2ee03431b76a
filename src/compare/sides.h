/*
 * sides.h - what `stepscope compare` reads from each side: the per-step
 * times of every run given (a run directory or its report.json), after
 * warm-up, each zone's self time in those steps, and the run-level figures
 * it shows deltas of (peak memory, energy, throughput, the bottleneck).
 *
 * A side is one or more runs; their steps are kept per run, because the
 * statistics resample runs before steps (compare/inference.h).  Not
 * thread-safe: one thread loads and frees a side.
 */
#ifndef SPS_COMPARE_SIDES_H
#define SPS_COMPARE_SIDES_H

#include <stddef.h>

/* A zone's self seconds in each kept step of one run (0 when the step did
 * not enter it), in step order; or a GPU zone's GPU seconds (run.gpu
 * below: NAN when the step's row holds none). */
struct sps_cmp_zone {
    char *name;
    double *self_s; /* [nsteps] of its run */
    int wait;       /* time blocked in a collective (a span of kind wait; its name ends " (wait)") */
};

/* A counter's run rate (analysis.throughput.counters[].per_second). */
struct sps_cmp_rate {
    char *name;
    double per_second;
};

struct sps_cmp_run {
    char path[4096];          /* the report.json read */
    char step_name[128];      /* the steps compared ("step" unless told) */
    size_t rows;              /* rows of that name in the report */
    size_t skipped;           /* of them left out as warm-up */
    size_t profiled;          /* of them left out as steps of a --torch-profile window (slowed
                                 by torch.profiler on purpose) */
    size_t steps_counted;     /* steps.count: more than rows when rings dropped steps */
    size_t nsteps;
    double *step_s;           /* [nsteps] durations of the kept steps */
    int *step_rank;           /* [nsteps] the rank each is of (model/ranks.h); -1: of no rank */
    size_t nzones;
    struct sps_cmp_zone *zones;
    /* each GPU zone's GPU time in the kept steps: self_s holds the step
     * row's "<zone>.gpu_ms" value in seconds, NAN where the row has none
     * (name: the zone's, without ".gpu_ms").  A row holds the last value
     * of the name recorded in the step (model/steps.c), and a value is
     * recorded when its pair of CUDA events is resolved, usually at a
     * later step's end than the zone's own: so one GPU time per step that
     * resolved one, not the step's total of a zone entered several times */
    size_t ngpu;
    struct sps_cmp_zone *gpu;
    double started_unix_s;    /* when the run started; NAN when the report does not say */
    /* run-level figures; NAN when the report does not have them */
    double peak_rss_bytes;      /* memory.peak_rss_bytes */
    double peak_gpu_bytes;      /* the busiest GPU's gpus[].metrics.gpu_memory_used_bytes.max */
    double energy_j;            /* analysis.energy.joules */
    double energy_per_step_j;   /* analysis.energy.per_step.joules */
    double torch_peak_allocated_bytes; /* analysis.torch_cuda_memory.peak_allocated_bytes */
    double torch_peak_reserved_bytes;  /* analysis.torch_cuda_memory.peak_reserved_bytes */
    size_t nrates;
    struct sps_cmp_rate *rates;
    char bottleneck[64];        /* analysis.bottleneck.verdict ("" when absent) */
    char command[1024];         /* command's arguments joined by spaces ("" when absent) */
};

struct sps_cmp_side {
    size_t nruns;
    struct sps_cmp_run *runs;
};

/* How warm-up is left out: the steps report.json marks (skip < 0), or the
 * first skip steps of each stream (a step name on one thread). */
struct sps_cmp_load_options {
    const char *step_name; /* NULL: "step" */
    long skip;             /* < 0: the report's warm-up marks */
};

/*
 * Load one run (path: a run directory holding report.json, or a report.json
 * file) and append it to *side (zero-initialised before the first call).
 * The report is read by the report model's one reader
 * (report/report_read_rows.h), its rows streamed.  Returns 0, or SPS_EIO /
 * SPS_EFORMAT / SPS_ENOMEM / SPS_EINVAL with err set to one line naming
 * the file and the problem: unreadable; not a report as stepscope writes
 * it (with the line and column: malformed JSON, another schema or none
 * first, a value of the wrong type); no steps of that name; or every step
 * left out as warm-up.
 */
int sps__cmp_side_add(struct sps_cmp_side *side, const char *path, const struct sps_cmp_load_options *opt,
                      char *err, size_t errlen);

/*
 * Load both sides' runs (each a list of paths, as sps__cmp_side_add takes
 * them), BASE on a thread of its own while the calling thread loads NEW: a
 * million-step report takes seconds to read, and the sides do not depend
 * on each other.  base and new_side are zero-initialised by the caller.
 * Returns 0, or the first failing side's error (BASE's when both fail)
 * with *which set to "BASE" or "NEW" and err to its line; the sides then
 * hold what was loaded, for sps__cmp_side_free.
 */
int sps__cmp_sides_load(struct sps_cmp_side *base, const char *const *base_paths, size_t nbase,
                        struct sps_cmp_side *new_side, const char *const *new_paths, size_t nnew,
                        const struct sps_cmp_load_options *opt, const char **which, char *err, size_t errlen);

/* Free everything a side holds; it is then empty. */
void sps__cmp_side_free(struct sps_cmp_side *side);

/* The zone named name in run, or NULL. */
const struct sps_cmp_zone *sps__cmp_run_zone(const struct sps_cmp_run *run, const char *name);

/* The GPU zone named name (without ".gpu_ms") in run, or NULL. */
const struct sps_cmp_zone *sps__cmp_run_gpu_zone(const struct sps_cmp_run *run, const char *name);

#endif /* SPS_COMPARE_SIDES_H */
