/*
 * bottleneck.h - what limits the step: the verdict for the run and for a
 * few windows of its steps (docs/analysis.md, "Bottleneck").
 *
 * Two halves, kept apart so each can be tested alone:
 *   1. evidence: numbers taken from the Run model (the share of step time
 *      in data-loading zones) and the sampler's series (GPU utilisation,
 *      the workload's CPU, iowait, disk reads, GPU throttling, memory and
 *      swap) over a span of time;
 *   2. the classifier: a pure function from evidence to a verdict (kind,
 *      confidence, the reason in numbers, one recommendation).
 * A figure that cannot be had is NAN, and the evidence says why.
 *
 * No I/O, no global state; a struct is used by one thread at a time.
 */
#ifndef SPS_ANALYSIS_BOTTLENECK_H
#define SPS_ANALYSIS_BOTTLENECK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "record_format.h"

/* A figure the analysis has (NAN: not read, not computed). */
static inline int sps__bn_known(double x) {
    return !isnan(x);
}

struct sps_run;
struct sps_run_info;
struct sps_jw;
struct sps__sampler_result;

enum sps_bn_kind {
    SPS_BN_UNKNOWN = 0,
    SPS_BN_INPUT,     /* "input-bound": the step waits for its data */
    SPS_BN_GPU,       /* "gpu-bound" */
    SPS_BN_CPU,       /* "cpu-bound" */
    SPS_BN_IO,        /* "io-bound": storage reads */
    SPS_BN_THROTTLED, /* "throttled": the GPU slows itself down */
    SPS_BN_MEMORY,    /* "memory-pressure": memory nearly full, or swapping */
    SPS_BN_CONTENDED  /* "cpu-contended": runnable, but other work held the CPUs */
};

/* "input-bound", ...; "unknown" for anything else.  Static storage. */
const char *sps__bn_kind_name(enum sps_bn_kind kind);

/* The language the advice speaks: how the run was instrumented. */
enum sps_bn_face {
    SPS_BN_FACE_UNKNOWN = 0, /* no record says: advice names both */
    SPS_BN_FACE_C,           /* recorded through the C API (SPS_ZONE, SPS_STEP) */
    SPS_BN_FACE_PYTHON       /* recorded by a Python interpreter (stepscope.zone, stepscope.torch) */
};

/* "c", "python", "unknown".  Static storage. */
const char *sps__bn_face_name(enum sps_bn_face face);

/* NVML clocks-event reason bits (nvml.h nvmlClocksEventReason*). */
#define SPS_BN_THROTTLE_IDLE 0x1u
#define SPS_BN_THROTTLE_APP_CLOCKS 0x2u
#define SPS_BN_THROTTLE_SW_POWER_CAP 0x4u
#define SPS_BN_THROTTLE_HW_SLOWDOWN 0x8u
#define SPS_BN_THROTTLE_SYNC_BOOST 0x10u
#define SPS_BN_THROTTLE_SW_THERMAL 0x20u
#define SPS_BN_THROTTLE_HW_THERMAL 0x40u
#define SPS_BN_THROTTLE_HW_POWER_BRAKE 0x80u
#define SPS_BN_THROTTLE_DISPLAY_CLOCKS 0x100u
/* The bits that mean the GPU is slowed against its will: thermal and
 * hardware slowdowns.  The software power cap alone is left out: a GPU
 * busy at its power limit is GPU-bound, not broken. */
#define SPS_BN_THROTTLE_SLOWDOWN                                                                         \
    (SPS_BN_THROTTLE_HW_SLOWDOWN | SPS_BN_THROTTLE_SW_THERMAL | SPS_BN_THROTTLE_HW_THERMAL |             \
     SPS_BN_THROTTLE_HW_POWER_BRAKE)

/* Everything a verdict may rest on.  NAN (or 0 readings) where unknown;
 * the why_* strings (static storage, NULL when the group is known) say why
 * a group of figures is unknown. */
struct sps_bn_evidence {
    uint64_t steps;            /* step rows judged */
    double step_mean_seconds;  /* their mean duration */
    double data_loading_percent; /* of their time, in data-loading zones (self time, capped at 100) */
    int gpus;                  /* GPUs with utilisation readings */
    double gpu_utilization_mean_percent, gpu_utilization_p10_percent, gpu_utilization_p90_percent;
    double gpu_throttled_percent;    /* of GPU readings with a SLOWDOWN bit */
    double gpu_power_capped_percent; /* of GPU readings at the software power cap */
    uint32_t gpu_throttle_reasons_seen; /* OR of the reasons read (see gpu_throttled_percent) */
    double gpu_temperature_max_celsius;
    double gpu_sm_clock_drop_percent; /* how far the mean SM clock is below its peak, worst GPU */
    double workload_cpu_mean_percent;  /* of one CPU (200 = two busy cores) */
    int cpu_count;                     /* CPUs of the machine; 0: unknown */
    double workload_cpu_percent_of_machine; /* the same, of all CPUs */
    double system_cpu_mean_percent;    /* of all CPUs */
    double system_iowait_mean_percent; /* of all CPUs */
    double workload_disk_read_mean_bytes_per_second;
    double system_memory_total_bytes;
    double system_memory_available_min_percent; /* of the total */
    double system_swap_used_max_bytes;
    double system_swap_growth_bytes; /* largest swap in use minus the first reading of the span */
    double workload_run_delay_mean_percent; /* the tree's run delay per wall second, percent of one CPU */
    double workload_cpu_wait_percent; /* of the tree's runnable time (run delay + CPU time), the share spent
                                         waiting for a CPU: 100 delay / (delay + cpu) */
    double cpu_pressure_some_mean_percent; /* PSI: some task waited for a CPU, percent of the time */
    uint64_t cpu_readings;     /* workload CPU readings used */
    uint64_t machine_readings; /* system CPU readings used (one per machine interval) */
    uint64_t run_delay_readings; /* workload run delay readings used (one per machine interval) */
    int contention_whole_run; /* a window with no run delay reading of its own: the run delay, wait share
                                 and its CPU time are the whole sampling's */
    double top_zone_percent;   /* of step time, the self time of the largest zone not named like data
                                  loading (NAN: no such zone); top_zone names it */
    char top_zone[SPS_REC_NAME_LEN];
    enum sps_bn_face face;     /* the language of the advice (not a figure: no JSON evidence key) */
    int torch;                 /* the records show PyTorch (instrument's hooks, or its zone names): Python
                                  advice may name torch's settings */
    const char *why_steps, *why_data, *why_gpu, *why_throttle, *why_cpu, *why_cpu_count, *why_system, *why_disk,
        *why_memory, *why_run_delay, *why_pressure;
    const char *why_sampler; /* why there are no machine readings at all; NULL when a sampler ran */
};

/* One figure of the evidence as report.json and report.html show it:
 * key is its report.json key, value NAN when unknown, why (static or in
 * the evidence; NULL when known) the reason; integral for a count. */
struct sps_bn_figure {
    const char *key;
    double value;
    const char *why;
    int integral;
};
#define SPS_BN_FIGURES 29

/* The evidence's figures in report.json's order into out; returns how
 * many.  Pure; thread-safe. */
size_t sps__bn_evidence_figures(const struct sps_bn_evidence *e, struct sps_bn_figure out[SPS_BN_FIGURES]);

/* Every figure unknown, every reason NULL. */
void sps__bn_evidence_init(struct sps_bn_evidence *e);

struct sps_bn_verdict {
    enum sps_bn_kind kind;
    double confidence; /* 0..1; NAN when kind is SPS_BN_UNKNOWN */
    char reason[512];  /* the numbers the verdict rests on, in words */
    char recommendation[320];
};

/* The verdict on e (thresholds in docs/analysis.md; bottleneck_classify.c).
 * Pure; thread-safe. */
void sps__bn_classify(const struct sps_bn_evidence *e, struct sps_bn_verdict *out);

/* The classifier's rule table, in the order the rules are tried (the first
 * that holds gives the verdict; the last always holds): the number of
 * rules, each one's name as docs/analysis.md's classifier table names it
 * (static storage; NULL past the end) and the verdict it gives.  Pure;
 * thread-safe. */
size_t sps__bn_rule_count(void);
const char *sps__bn_rule_name(size_t i);
enum sps_bn_kind sps__bn_rule_kind(size_t i);

/* How run was recorded (the command's argv when there are no records:
 * argc 0 for none).  Python when a recording process, or else the
 * command, is a Python interpreter (python, python3.11, pypy3...); C when
 * a process recorded and none is; unknown otherwise.  Pure; thread-safe. */
enum sps_bn_face sps__bn_face_of(const struct sps_run *run, int argc, char *const *argv);

/* Whether the records show PyTorch in use: a process counted
 * stepscope.torch.instrument's hooks, or a zone is named like its zones
 * ("forward", "backward", "optimizer", "torch..."). Pure; thread-safe. */
int sps__bn_torch_seen(const struct sps_run *run);

/* Whether a zone name means data loading: lower-cased and split at
 * characters other than letters and digits, it has a token "data",
 * "dataloader", "dataloading", "loader", "load", "loading", "fetch",
 * "input" or "inputs".  Pure; thread-safe. */
int sps__bn_is_data_zone(const char *name);

#define SPS_BN_MAX_WINDOWS 10
#define SPS_BN_MAX_DATA_ZONES 8

struct sps_bn_window {
    uint64_t first_step, last_step; /* step indices (the stream's ordinals) */
    double start_seconds, end_seconds; /* after the run's start */
    struct sps_bn_evidence evidence;
    struct sps_bn_verdict verdict;
};

struct sps_bottleneck {
    int computed;
    char main_step[SPS_REC_NAME_LEN]; /* "" when the run has no steps */
    size_t ndata_zones;
    char data_zones[SPS_BN_MAX_DATA_ZONES][SPS_REC_NAME_LEN]; /* the zones counted as data loading */
    struct sps_bn_evidence evidence; /* the run: its post-warm-up steps' span, else the whole sampling */
    struct sps_bn_verdict verdict;
    enum sps_bn_face face;
    size_t nwindows;
    struct sps_bn_window windows[SPS_BN_MAX_WINDOWS];
    const char *windows_note; /* why there are no windows; NULL when there are */
};

/*
 * Judge run (built; NULL: no steps) with info's sampler result and CPU
 * count (info or its sampler may be NULL).  Fills *out completely; needs
 * no freeing and never fails.  Pure; thread-safe on distinct outputs.
 */
void sps__bottleneck_analyze(const struct sps_run *run, const struct sps_run_info *info, struct sps_bottleneck *out);

/* The same from parts: sampler may be NULL, cpu_count 0 (unknown); face
 * as sps__bn_face_of says; why_sampler why sampler is NULL (NULL: "no
 * sampler ran"). */
void sps__bottleneck_analyze_parts(const struct sps_run *run, const struct sps__sampler_result *sampler,
                                   int cpu_count, enum sps_bn_face face, const char *why_sampler,
                                   struct sps_bottleneck *out);

/* Write "bottleneck": {...} into the open analysis object. */
void sps__bottleneck_json(struct sps_jw *w, const struct sps_bottleneck *b);

#endif /* SPS_ANALYSIS_BOTTLENECK_H */
