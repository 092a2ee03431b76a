/*
 * run_info.h - what the process that watched a run knows beyond its
 * records: the command, how it ended, its times and memory, the sampler's
 * result, the measured recording cost, the live view and the guard.
 *
 * Filled by `stepscope run` (tools/cli/cmd_run.c) or by the library
 * itself in standalone mode (src/render/standalone.c), and copied into
 * the report model (src/report/report.h).  Plain data; the pointers are
 * borrowed by whoever fills it.
 */
#ifndef SPS_MODEL_RUN_INFO_H
#define SPS_MODEL_RUN_INFO_H

#include <stdint.h>

struct sps__sampler_result;

/* What the process that watched the run knows (the CLI, or the library
 * itself in standalone mode).  Fields with a have_ flag may be unknown. */
struct sps_analysis_config;

struct sps_run_info {
    int argc;
    char *const *argv; /* the command; NULL: take it from the first record */
    int have_exit;
    int exit_code;   /* when it exited */
    int exit_signal; /* when a signal killed it (0 otherwise) */
    int core_dumped;
    int have_times;
    double wall_s, user_s, sys_s;
    int have_rss;
    uint64_t peak_rss_bytes; /* the largest resident set of any process in the tree */
    const char *rss_scope;   /* what peak_rss_bytes covers; NULL: the tree's largest process */
    int64_t start_realtime_ns;
    uint64_t start_mono_ns; /* when the run began, CLOCK_MONOTONIC; 0: unknown */
    const char *standalone_reason; /* non-NULL: written by the library itself */
    /* non-NULL: `stepscope report` rebuilt the report from the records
     * alone, and why (report.json was missing, or another run's): what
     * only the watcher knew is absent (sps__report_missing lists it) */
    const char *rebuilt_reason;
    /* the machine metrics; NULL when no sampler ran (then absent_reason
     * says why, e.g. "no sampler ran in this process") */
    const struct sps__sampler_result *sampler;
    const char *sampler_absent_reason;
    /* what the user told the analysis (NULL: the defaults) */
    const struct sps_analysis_config *analysis;
    /* CPUs the workload could use (sysconf when it ran); 0: unknown */
    int cpu_count;
    /* the measured cost of one zone and one value (stepscope run measures
     * them when the run ends); absent_reason says why not otherwise */
    int have_record_cost;
    double zone_cost_ns, value_cost_ns; /* and thinned_zone_cost_ns, below */
    const char *record_cost_absent_reason;
    /* stepscope run's live view: whether it ran, and what it cost */
    int have_live_view;
    uint64_t live_view_refreshes;
    double live_view_cpu_seconds;
    /* the size budget trace.json was made with (stepscope run
     * --trace-max-mb), so `stepscope report` makes it again the same; 0:
     * none given (the default) */
    uint64_t trace_max_bytes;
    /* stepscope run --max-overhead: the budget and what the guard did */
    struct sps_guard_report {
        int on;                 /* a budget was set (the rest is meaningless otherwise) */
        double budget;          /* fraction of the workload's CPU time */
        double first_over_s;    /* run time of the first window over budget; NAN: none */
        double peak_share;      /* the costliest judged window's share of CPU time */
        double last_share;      /* the latest judged window's; NAN: none judged */
        uint64_t windows, windows_over;
        int over_at_steps;      /* still over budget with only steps recorded */
        double cpu_seconds;     /* the guard thread's own CPU time */
    } guard;
    double thinned_zone_cost_ns; /* a zone the thin level leaves out; with have_record_cost */
    double warm_end_ns; /* the recorder's end samples in that measurement (0: none) */
    /* whether stepscope run put the Python startup hook into the workload
     * (enum sps_auto_inject) */
    int auto_inject;
};

/* What stepscope run did about auto-instrumentation (tools/cli/auto_inject.c). */
enum sps_auto_inject {
    SPS_AUTO_INJECT_UNKNOWN = 0, /* not stepscope run's (standalone), or a report that predates it */
    SPS_AUTO_INJECT_ON = 1,      /* the startup hook was first on PYTHONPATH, STEPSCOPE_AUTO=1 */
    SPS_AUTO_INJECT_OFF = 2,     /* --no-auto */
    SPS_AUTO_INJECT_MISSING = 3  /* on, but the hook was not found: nothing was injected */
};

#define SPS_REPORT_SCHEMA "stepscope.report/1"

#endif /* SPS_MODEL_RUN_INFO_H */
