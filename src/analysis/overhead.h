/*
 * overhead.h - what stepscope itself cost the run: the workload's threads
 * paid for every zone, step and value they recorded, by kind (counts from
 * the records times the cost of one: the library's begin+end measured on
 * this machine when the run ended; the Python module's own work around a
 * zone, a value or a count, and stepscope.torch.instrument's hooks,
 * measured by each process and written into its record), and stepscope's
 * own threads used CPU time to sample the machine and draw the live
 * status, stated as their share of one core over the run.  With a budget (stepscope run --max-overhead)
 * it also says whether the budget was exceeded and what was thinned.
 *
 * Pure; thread-safe on distinct structs.
 */
#ifndef SPS_ANALYSIS_OVERHEAD_H
#define SPS_ANALYSIS_OVERHEAD_H

#include <stdint.h>

/* The budget guard's shortest window (the workload's CPU seconds) it
 * judges (src/live/guard.c); the overhead's text says when none was that
 * long. */
#define SPS_GUARD_MIN_WINDOW_CPU_S 0.25

struct sps_run;
struct sps_run_info;
struct sps_jw;

/* The kinds of recording, each priced at what one costs. */
enum sps_overhead_kind {
    SPS_OH_ZONES,        /* the library's begin+end, every zone, step and micro-step recorded */
    SPS_OH_PY_ZONES,     /* Python's own work around the zones Python code began */
    SPS_OH_HOOKS,        /* stepscope.torch.instrument's hooks, per zone they began */
    SPS_OH_VALUES,       /* the library's value or count, every one recorded */
    SPS_OH_PY_VALUES,    /* Python's own work around stepscope.record() */
    SPS_OH_PY_COUNTS,    /* Python's own work around stepscope.count() */
    SPS_OH_THINNED,      /* zones the thin level left out */
    SPS_OH_KINDS
};

/* report.json's name of a kind (analysis.overhead.recording_by_kind):
 * "zones", "python_zones", ...  Static storage. */
const char *sps__overhead_kind_name(enum sps_overhead_kind kind);

/* One kind: how many, what one costs, and the product. */
struct sps_overhead_part {
    uint64_t count;
    uint64_t unpriced; /* of count, in processes that measured no cost for them */
    double cost_ns;    /* one, averaged over the priced ones by count; NAN: none priced */
    double s;          /* the priced ones x their cost (0 when there are none) */
};

struct sps_overhead {
    uint64_t zones_recorded;  /* zones, steps and micro-steps, every process */
    uint64_t values_recorded; /* values and counter increments */
    double zone_cost_ns;      /* one begin+end, measured warm at run end; NAN: not measured */
    /* A zone end's bookkeeping as the recorder sampled it in the run (every
     * SPS_THIN_POLL_EVENTS zones of a thread) and in the warm measurement: the
     * difference is what the run's caches added to every zone, and the
     * zones are priced at zone_cost_ns plus it (never less). */
    uint64_t zone_end_samples, zone_end_samples_dropped; /* dropped: over SPS_END_SAMPLE_MAX_NS */
    double zone_end_in_run_ns; /* NAN: no sample */
    double zone_end_warm_ns;   /* NAN: not measured */
    double value_cost_ns;     /* one value or count; NAN: not measured */
    struct sps_overhead_part part[SPS_OH_KINDS];
    double recording_s;       /* the priced parts; NAN: the library's costs not measured */
    int recording_partial;    /* some recorded kind had no measured cost: recording_s is a lower bound */
    double sampler_cpu_s;     /* the sampler thread's CPU time; NAN: no sampler */
    double live_view_cpu_s;   /* the live status's; 0 when it did not run */
    double total_s;           /* recording + sampler + live view (the known parts) */
    double workload_cpu_s;    /* user + sys of the workload; NAN: unknown */
    double wall_s;            /* NAN: unknown */
    double percent_of_workload_cpu; /* recording_s / workload CPU; NAN when either is unknown */
    double percent_of_wall;         /* total_s / wall: as a share of one core; NAN when unknown */
    /* each of stepscope's threads' CPU time / wall, in percent of one core,
     * as measured over the run; NAN: unknown (no wall time, or no sampler) */
    double sampler_percent_of_core, live_view_percent_of_core, guard_percent_of_core;
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

/* Count what run recorded and price it: the library's work at info's
 * costs (measured by stepscope run when the run ended), Python's at the
 * costs each process measured and wrote into its record. */
void sps__overhead_analyze(const struct sps_run *run, const struct sps_run_info *info, struct sps_overhead *out);

/* Write "overhead": {...} into the open analysis object. */
void sps__overhead_json(struct sps_jw *w, const struct sps_overhead *o);

#endif /* SPS_ANALYSIS_OVERHEAD_H */
