/*
 * overhead.h - what stepscope itself cost the run: the workload's threads
 * paid for every zone, step and value they recorded (counts from the
 * records times the cost of one, measured on this machine when the run
 * ended), and stepscope's own threads used CPU time to sample the machine
 * and draw the live status.  With a budget (stepscope run --max-overhead)
 * it also says whether the budget was exceeded and what was thinned.
 *
 * Pure; thread-safe on distinct structs.
 */
#ifndef SPS_ANALYSIS_OVERHEAD_H
#define SPS_ANALYSIS_OVERHEAD_H

#include <stdint.h>

struct sps_run;
struct sps_run_info;
struct sps_jw;

struct sps_overhead {
    uint64_t zones_recorded;  /* zones, steps and micro-steps, every process */
    uint64_t values_recorded; /* values and counter increments */
    double zone_cost_ns;      /* one begin+end, measured; NAN: not measured */
    double value_cost_ns;     /* one value or count; NAN: not measured */
    double recording_s;       /* zones x their cost + values x theirs; NAN: not measured */
    double sampler_cpu_s;     /* the sampler thread's CPU time; NAN: no sampler */
    double live_view_cpu_s;   /* the live status's; 0 when it did not run */
    double total_s;           /* recording + sampler + live view (the known parts) */
    double workload_cpu_s;    /* user + sys of the workload; NAN: unknown */
    double wall_s;            /* NAN: unknown */
    double percent_of_workload_cpu; /* recording_s / workload CPU; NAN when either is unknown */
    double percent_of_wall;         /* total_s / wall: as a share of one core; NAN when unknown */
    const char *unmeasured_reason;  /* why the recording cost is unknown; NULL when measured */
    uint64_t zones_thinned;   /* zones the thin level left out, every process (in recording_s
                                 at their own, smaller, measured cost) */
    double thinned_zone_cost_ns; /* NAN: not measured */
    double guard_cpu_s;       /* the overhead guard thread's; 0 when it did not run */
    /* the budget; budget_on 0 when none was set */
    int budget_on;
    double budget_percent;
    int exceeded;             /* a judged window went over it */
    double first_exceeded_s;  /* NAN: never */
    uint32_t thin_level;      /* the highest any record reached (enum sps_thin_level) */
    double thinned_since_s;   /* the earliest record's, run time; NAN: never thinned */
    uint64_t windows, windows_over;
    double peak_window_percent, last_window_percent; /* NAN: no window judged */
    int over_with_steps_only;
};

/* Count what run recorded and price it with info's measured costs. */
void sps__overhead_analyze(const struct sps_run *run, const struct sps_run_info *info, struct sps_overhead *out);

/* Write "overhead": {...} into the open analysis object. */
void sps__overhead_json(struct sps_jw *w, const struct sps_overhead *o);

#endif /* SPS_ANALYSIS_OVERHEAD_H */
