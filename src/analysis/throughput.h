/*
 * throughput.h - how much work a run did per second: every counter the
 * workload recorded (SPS_COUNT: samples, tokens, FLOPs ...) as a rate per
 * step and for the run, FLOP/s from a counter named like "flops", and the
 * model FLOP/s utilisation (MFU) when the peak is known (--peak-flops, or
 * the table of GPU peaks below, keyed by the sampler's GPU names).
 *
 * Warm-up steps are left out of every rate (run.h marks them).  Pure
 * functions; not thread-safe per struct.
 */
#ifndef SPS_ANALYSIS_THROUGHPUT_H
#define SPS_ANALYSIS_THROUGHPUT_H

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"

struct sps_run;
struct sps_run_info;
struct sps_analysis_config;
struct sps_jw;

struct sps_throughput_counter {
    char name[SPS_REC_NAME_LEN];
    double total;        /* every count the run recorded, inside steps or not */
    double in_steps;     /* counted inside the post-warm-up steps used */
    uint64_t steps;      /* post-warm-up steps used (of the threads that count it) */
    uint64_t threads;    /* threads (of any process) whose steps saw it */
    double step_seconds; /* the used steps' summed duration */
    double per_second;   /* the run's rate: each thread's in_steps / step_seconds, added up */
    /* over the used steps' own rates (count in the step / its duration) */
    double step_rate_mean, step_rate_median, step_rate_min, step_rate_max;
    int is_flops; /* its name contains "flop", any case */
    int in_a_step; /* some step row owns a count of it (warm-up or not) */
};

struct sps_throughput {
    uint64_t warmup_steps; /* step rows left out as warm-up */
    size_t ncounters;
    struct sps_throughput_counter *counters; /* owned; in the run's name order */
    char reason[160];  /* why ncounters is 0 ("" otherwise) */
    long flops;        /* index into counters of the FLOP counter, or -1 */
    double flops_per_second; /* NAN without one */
    char flops_reason[160];
    /* MFU = flops_per_second / peak_flops_total */
    double mfu;              /* a fraction; NAN when unavailable */
    double peak_flops_total; /* NAN when unknown */
    int gpus;                /* GPUs the peak covers (0: the flag's peak is the machine's) */
    char peak_from[256];     /* where the peak came from */
    char mfu_reason[256];    /* why mfu is NAN ("" otherwise) */
};

/*
 * Fill *out from run's step rows and counters and, for the peak, cfg's
 * peak_flops or info's GPU names (cfg, info and its sampler may be NULL).
 * Returns 0 or SPS_ENOMEM (then *out holds what was done); free with
 * sps__throughput_free either way.
 */
int sps__throughput_analyze(const struct sps_run *run, const struct sps_run_info *info,
                            const struct sps_analysis_config *cfg, struct sps_throughput *out);

/* Why counter c has no rate (static text), or NULL when it has one. */
const char *sps__throughput_counter_why(const struct sps_throughput_counter *c);

/* Write "throughput": {...} (docs/analysis.md lists the keys). */
void sps__throughput_json(struct sps_jw *w, const struct sps_throughput *t);

void sps__throughput_free(struct sps_throughput *t);

/*
 * The dense peak FLOP/s of a GPU from its name as the driver reports it
 * ("NVIDIA H100 80GB HBM3"), from NVIDIA's datasheets (docs/analysis.md).
 * Returns the peak and sets *what (static: the model and precision), or
 * NAN when the name is not in the table.  Thread-safe.
 */
double sps__gpu_peak_flops(const char *gpu_name, const char **what);

#endif /* SPS_ANALYSIS_THROUGHPUT_H */
