/*
 * run.h - the Run model: every record of a run, read and validated, plus
 * what is derived from them (per-name statistics, the step table).
 *
 * Exporters and analysis take a struct sps_run; they never parse records.
 * Everything in it is owned by the run and freed by sps__run_free().  Times
 * are CLOCK_MONOTONIC nanoseconds (event times) or seconds relative to the
 * run's start (derived tables).  Not thread-safe: one thread builds and reads
 * a run.
 */
#ifndef SPS_MODEL_RUN_H
#define SPS_MODEL_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"
#include "stats.h"

struct sps_name_info {
    uint32_t kind; /* enum sps_kind */
    uint32_t line;
    char name[SPS_REC_NAME_LEN];
    char file[SPS_REC_FILE_LEN];
    char func[SPS_REC_FUNC_LEN];
};

/* A recorded event with its times on the monotonic clock. */
struct sps_event {
    uint64_t seq; /* the event's ordinal among all its thread put in its ring */
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t a; /* self ns (zones), value bits (values), increment (counters) */
    uint32_t name; /* id: index into the process's names + 1 */
    uint16_t depth;
    uint16_t kind;
};

struct sps_open_zone {
    uint32_t name;
    uint32_t kind;
    uint64_t start_ns;
};

struct sps_thread_data {
    int tid;
    char name[SPS_REC_THREAD_NAME_LEN];
    int exited;
    uint32_t reuses; /* earlier threads that recorded into this segment */
    uint64_t offered[SPS_RING_COUNT]; /* events the thread recorded */
    uint64_t dropped[SPS_RING_COUNT]; /* of those, not kept by the ring (or unreadable) */
    size_t nevents[SPS_RING_COUNT];
    struct sps_event *events[SPS_RING_COUNT]; /* oldest first */
    /* GPU spans (SPS_REC_KIND_GPU_SPAN events, kept apart from the values
     * ring's values and counters so no reader of those meets them), in the
     * order resolved: start_ns/end_ns where the GPU ran them, a the
     * CUstream handle (0: the legacy default stream), name their zone's */
    size_t ngpu;
    struct sps_event *gpu;
    uint64_t mismatched_ends;
    uint64_t depth_overflows;
    uint32_t zones_thinned; /* not recorded for the thin level, not yet carried into the process's */
    uint32_t nopen;
    struct sps_open_zone open[SPS_REC_MAX_DEPTH];
    struct sps_agg *aggs; /* indexed by name id - 1; count 0 = unused */
};

/* A measurement of a process's clock against rank 0's (the record's
 * clock_sync slots; see record_format.h).  at_ns is on the process's own
 * clock, as recorded. */
struct sps_clock_sync {
    uint32_t state;  /* enum sps_rec_sync_state */
    uint32_t rounds;
    int64_t offset_ns; /* rank 0's clock minus this one's */
    uint64_t error_ns;
    uint64_t at_ns;
};

/* How `stepscope merge` put a process's times on the reference clock
 * (rank 0's host's): src/model/align.h. */
enum sps_align_method {
    SPS_ALIGN_NONE = 0,      /* not merged: the process's own clock */
    SPS_ALIGN_REFERENCE = 1, /* on the reference host: its clock is the reference */
    SPS_ALIGN_MEASURED = 2,  /* by a measured offset (a rank of its host's), error stated */
    SPS_ALIGN_REALTIME = 3   /* by the realtime anchors (its host's and the reference's
                                CLOCK_REALTIME): only as good as their NTP, error unknown */
};

/* A time t on a process's clock maps to t + offset(t) on the reference
 * clock: offset is off0_ns up to at0_ns, off1_ns from at1_ns, linear
 * between (clock drift).  at0 == at1 with off0 == off1: one constant. */
struct sps_align {
    uint32_t method; /* enum sps_align_method */
    int source_rank; /* the rank whose measurement it is (MEASURED), else -1 */
    int64_t at0_ns, off0_ns, at1_ns, off1_ns;
    uint64_t error_ns; /* the stated bound (MEASURED), else 0 */
};

struct sps_process_data {
    char *path;
    uint32_t header_crc; /* the record header's CRC (record_format.h): with the file name, which
                          * process's record this is, told apart from another run's record of the
                          * same name; 0: unknown (a report.json that predates it) */
    int pid, ppid, rank, local_rank, world_size;
    char hostname[64];
    int argc;
    char **argv;
    uint32_t clock_source; /* enum sps_clock_source */
    double ticks_per_second; /* refined over the run where possible */
    uint32_t ring_policy;
    uint32_t ring_cap[SPS_RING_COUNT];
    int64_t start_realtime_ns;
    uint64_t start_ns; /* monotonic */
    int closed;        /* exited through exit(); else killed (or still running) */
    int running_at_report; /* still running when the report was built (stepscope run saw it): its
                            * numbers stop there */
    uint64_t end_ns;   /* monotonic, when closed */
    uint64_t threads_refused, names_refused;
    char problem[256]; /* why something was refused, "" if nothing was */
    uint32_t thin_level;    /* enum sps_thin_level the overhead guard left (0: never thinned) */
    uint64_t thin_since_ns; /* monotonic, when it began thinning; 0 never */
    uint64_t zones_thinned; /* zones not recorded for it, all threads */
    /* GPU zones (the header's cuda_* fields): state is enum
     * sps_rec_cuda_state, 0 when the process began none */
    uint32_t cuda_state;
    int32_t cuda_driver_version;
    uint64_t cuda_resolved, cuda_cpu_only, cuda_dropped, cuda_unresolved;
    char cuda_reason[192];
    /* the Python module's counts and measured costs (the header's py_* and
     * hook_* fields; 0 in a process without it) */
    uint64_t py_zones, py_values, py_counts, hook_zones, hook_counts;
    double py_zone_ns, py_value_ns, py_count_ns, hook_zone_ns; /* 0: not measured */
    uint64_t end_samples, end_sample_ns; /* the recorder's samples of a zone end's cost in the run (sum) */
    uint64_t end_samples_dropped;
    /* which mode records the steps (the header's py_auto, py_instrument,
     * py_auto_reason; 0 and "" in a process without the Python module) */
    uint32_t py_auto; /* enum sps_rec_py_auto */
    uint32_t py_instrument;
    char py_auto_reason[SPS_REC_AUTO_REASON_LEN];
    /* the clock-offset measurements (the header's clock_sync*) and, in a
     * merged run, how its times were aligned (already applied to every
     * time above and below) */
    struct sps_clock_sync clock_sync[2]; /* SPS_SYNC_START, SPS_SYNC_END */
    char clock_sync_reason[SPS_REC_SYNC_REASON_LEN];
    struct sps_align align;
    uint32_t nnames;
    struct sps_name_info *names;
    long *summary_of; /* by name id - 1: index into run.names (set by sps__run_build) */
    uint32_t nthreads;
    struct sps_thread_data *threads;
};

/* Statistics for one (name, kind) across every thread and process. */
struct sps_name_summary {
    char name[SPS_REC_NAME_LEN];
    uint32_t kind;
    struct sps_agg agg; /* merged */
    struct sps_stats stats;
};

struct sps_step_row {
    uint64_t index;   /* the step's ordinal among its thread's steps, from 0 */
    size_t process;   /* index into run.procs */
    int tid;
    long name;        /* index into run.names of the step's name */
    uint64_t start_ns, end_ns;
    uint32_t microsteps;
    int warmup; /* part of its stream's warm-up (see sps__run_build) */
    /* per name summary index -> seconds (zones: self time inside the step;
     * values: the last value; counters: the sum); NAN where absent */
    double *by_name;
};

struct sps_skipped {
    char *path;
    char *error;
};

/* What `stepscope merge` did (records/merge.tsv, src/model/align.h);
 * inputs 0 in a run that was not merged. */
struct sps_run_merge {
    size_t ninputs;
    char **inputs;          /* the run directories merged, as given */
    char reference_host[64];
    int reference_rank;     /* 0, or -1 when no input held rank 0 (the first input's host) */
    uint64_t tolerance_ns;  /* --max-clock-error */
    int forced;             /* --force, and an error exceeded the tolerance */
    char forced_why[256];   /* which (rank, host, error), "" when not forced */
};

struct sps_run {
    size_t nprocs;
    struct sps_process_data *procs;
    size_t nskipped;
    struct sps_skipped *skipped;

    size_t nnames; /* merged across processes, zone-like first by total */
    struct sps_name_summary *names;
    size_t nsteps;
    struct sps_step_row *steps;
    uint64_t steps_recorded; /* exact count; rows may be fewer if rings wrapped */
    size_t warmup_steps;     /* rows marked warm-up, all processes */
    uint64_t start_ns;       /* the earliest process start */
    uint64_t events_recorded, events_dropped;
    struct sps_run_merge merge;
    /* the deep-capture windows (torch_ops.h), one per process that had one */
    size_t ntorch;
    struct sps_torch_capture *torch;
};

/* The writer may still be running (a process reading its own record):
 * inconsistent events are counted as dropped, never an error. */
#define SPS_PARSE_LIVE 1u
/* data is the caller's own read-only shared mapping of a record file: the
 * pages of events already copied are unmapped as the parse goes (they stay
 * in the page cache), so a big record is not held twice.  Never for memory
 * someone writes (a recorder's own record). */
#define SPS_PARSE_OWN_MAP 2u

/*
 * Validate a record's header against a file of size bytes: everything a
 * reader checks before following an offset in it.  Returns 0, or
 * SPS_EFORMAT / SPS_EVERSION with *offset the offending field's and what
 * (len bytes; NULL when len is 0) saying what is wrong.  A header of zeros is "incomplete" (its
 * writer has not written it yet).  Pure; thread-safe.
 */
int sps__rec_header_check(const struct sps_rec_header *h, uint64_t size, uint64_t *offset, char *what,
                          size_t len);

/*
 * Read and validate one record from memory (data stays owned by the caller
 * and may be released after the call).  label names it in errors; flags is
 * 0, SPS_PARSE_LIVE or SPS_PARSE_OWN_MAP.  Returns 0, or SPS_EFORMAT / SPS_EVERSION /
 * SPS_ENOMEM with err set to "<label>: offset <n>: <what>".
 */
int sps__record_parse(const void *data, size_t size, const char *label, unsigned flags,
                      struct sps_process_data *out, char *err, size_t errlen);

/* Read one record file; errors as above, SPS_EIO when it cannot be read.
 * Briefly installs a SIGBUS handler: call from one thread at a time. */
int sps__record_load(const char *path, struct sps_process_data *out, char *err, size_t errlen);

void sps__process_free(struct sps_process_data *p);

/*
 * Load every *.sps file in dir into run, and the deep-capture window's
 * torch-ops-*.tsv files (torch_ops.h).  A record that fails validation is
 * listed in run->skipped with its error and does not fail the load.
 * Returns 0, or SPS_EIO when dir cannot be listed (err says why).
 */
int sps__run_load_dir(struct sps_run *run, const char *dir, char *err, size_t errlen);

/*
 * The record files in dir by name and header CRC only (procs[].path and
 * .header_crc; nothing else is read): enough for
 * sps__report_records_stale, without the cost of reading events.  Files
 * whose header is not whole and valid are left out.  Returns 0, or
 * SPS_EIO when dir cannot be listed, SPS_ENOMEM (err says why; run then
 * holds nothing).  Free with sps__run_free.
 */
int sps__run_load_headers(struct sps_run *run, const char *dir, char *err, size_t errlen);

/*
 * Cut every record in dir whose process has ended to the bytes it used
 * (sps_rec_used_size: the rest is a hole), so the directory copies and
 * uploads at its real size; readers accept cut records.  Records whose
 * pid still runs, and files that are not valid records, are left alone.
 * Returns how many were cut.  For `stepscope run`, after the workload.
 */
int sps__records_trim(const char *dir);

/* List path in run->skipped with its error.  Returns 0 or SPS_ENOMEM. */
int sps__run_add_skipped(struct sps_run *run, const char *path, const char *error);

/* Append an already-parsed process (takes ownership of *p's contents). */
int sps__run_add(struct sps_run *run, struct sps_process_data *p);

/* Whether a directory entry is a record file (ends in ".sps"). */
int sps__is_record_name(const char *file_name);

/* GPU zones over every process of a run (their records' cuda_* fields). */
struct sps_run_cuda {
    uint32_t processes;  /* processes that began a GPU zone */
    uint32_t available;  /* of those, the ones where libcuda loaded and initialised */
    int driver_version;  /* the first process's that knows it; 0 unknown */
    const char *reason;  /* the first non-empty reason in processes[] order, NULL: none
                            (points into the run) */
    int reason_pid;      /* the process it comes from */
    uint64_t resolved, cpu_only, dropped, unresolved; /* summed */
};

/* Fill *out from run (pure). */
void sps__run_cuda(const struct sps_run *run, struct sps_run_cuda *out);

/* Who recorded a run's steps (report.json's steps_recorded_by). */
enum sps_steps_by {
    SPS_STEPS_BY_NONE = 0,       /* no steps */
    SPS_STEPS_BY_CODE = 1,       /* the program's own zones (C, or the Python module's face) */
    SPS_STEPS_BY_INSTRUMENT = 2, /* stepscope.torch.instrument() */
    SPS_STEPS_BY_AUTO = 3        /* stepscope run's auto-instrumentation */
};

/* Auto-instrumentation over every process of a run, and who recorded its
 * steps.  A process's steps are auto's when auto was still active in it
 * at the end or turned itself off, else instrument's when it called
 * instrument(), else its code's; the run's are the first of auto,
 * instrument, code that recorded a step row in some process. */
struct sps_run_auto {
    int inject;              /* enum sps_auto_inject: what stepscope run did */
    uint32_t active;         /* processes where auto was installed and stayed */
    uint32_t stood_aside;    /* processes where it stood aside (the script instruments itself) */
    uint32_t turned_off;     /* processes where it turned itself off (an error in its hooks) */
    const char *reason;      /* the first reason, stood aside before turned off, in processes
                                order (points into the run); NULL: none */
    int reason_pid;
    int steps_by;            /* enum sps_steps_by */
};

/* Fill *out from run and the enum sps_auto_inject stepscope run reported
 * (pure). */
void sps__run_auto(const struct sps_run *run, int inject, struct sps_run_auto *out);

/* "auto", "instrument", "code" for an enum sps_steps_by; NULL for none. */
const char *sps__steps_by_name(int steps_by);

/* The run's auto-instrumentation in one word: "stood_aside", "turned_off",
 * "active" (the first that some process is, in that order),
 * "not_installed" (injected, but no process installed it: none imported
 * torch), "off" (--no-auto), "unavailable" (the hook was not found); NULL
 * when stepscope run did not say and no process had it (standalone). */
const char *sps__auto_state_name(const struct sps_run_auto *a);

/* "none", "phases", "steps" for an enum sps_thin_level; "unknown" else. */
const char *sps__thin_level_name(uint32_t level);

/*
 * Derive names and steps from the loaded processes.  Step rows come per
 * process, then per thread, in order; the steps of one name on one thread
 * are a stream, whose warm-up is its run of leading steps slower than its
 * typical step (sps__warmup_length).  Returns 0 or SPS_ENOMEM.
 */
int sps__run_build(struct sps_run *run);

/*
 * The step rows of a run whose names are built (sps__run_build's second
 * phase, in steps.c): one row per kept step event, per process, per thread,
 * in the order the steps ended, and each row's cells from the events it
 * owns.  Returns 0 or SPS_ENOMEM.
 */
int sps__run_build_steps(struct sps_run *run);

/* Each process's name ids -> its summary in run->names (summary_of), so
 * that an event or an open zone needs no search by name.  Returns 0 or
 * SPS_ENOMEM. */
int sps__run_map_process_names(struct sps_run *run);

void sps__run_free(struct sps_run *run);

/*
 * How many leading steps of durations[0..n) are warm-up: the longest prefix,
 * at most a fifth of the steps, whose every step is slower than the median
 * of the rest by more than max(3 robust deviations, 10% of the median).
 * Steps are kept and marked, never dropped.  Needs at least 5 steps.
 */
size_t sps__warmup_length(const double *durations, size_t n);

/*
 * For each process of run, into out[0..nprocs), an id unique in the run
 * for views that key processes by pid (trace.json's tracks): its pid,
 * unless a process of another host with that pid comes earlier in procs[]
 * (a merged run; containers give every node's trainer the same pid): then
 * the next of 2^22, 2^22 + 1, ... (above any Linux pid), the same for
 * every process of that host with that pid.  O(nprocs^2) comparisons at
 * worst.  Pure.
 */
void sps__run_unique_pids(const struct sps_run *run, int *out);

/* Whether the run's processes come from more than one host. */
int sps__run_several_hosts(const struct sps_run *run);

/* The summary index of (name, kind), or -1. */
long sps__run_find(const struct sps_run *run, const char *name, uint32_t kind);

#endif /* SPS_MODEL_RUN_H */
