/*
 * torch_ops.h - the deep-capture window in the Run model: what
 * torch.profiler saw in each process during `stepscope run
 * --torch-profile` (the records' torch-ops-<pid>.tsv files, written by
 * python/stepscope/_deep.py; docs/record-format.md, "torch-ops files"),
 * and, per stepscope zone, the operators that spent the most self time in
 * it (the innermost zone on the operator's thread that holds it, give or
 * take the clock alignment bound, or holds most of it).
 *
 * Owned by the run (sps__run_free frees it); no I/O but the loader's.
 * Not thread-safe: one thread builds and reads a run.
 */
#ifndef SPS_MODEL_TORCH_OPS_H
#define SPS_MODEL_TORCH_OPS_H

#include <stddef.h>
#include <stdint.h>

struct sps_run;

/* One operator event, on CLOCK_MONOTONIC ns. */
struct sps_torch_op {
    uint64_t start_ns, end_ns;
    uint64_t self_ns; /* torch.profiler's self CPU time; a kernel's duration */
    int64_t tid;      /* the OS thread; < 0: -(torch.profiler's own thread number) */
    uint32_t name;    /* index into the capture's names */
    uint32_t gpu;     /* 1: a device kernel (tid 0) */
};

/* One row of a zone's top operators. */
struct sps_torch_top {
    char *zone; /* the stepscope zone's name; NULL: the operator was in no zone */
    char *op;
    uint64_t count;
    double self_s;
};

#define SPS_TORCH_TOP_PER_ZONE 10

/* One process's window. */
struct sps_torch_capture {
    int pid;
    int tid;       /* its main thread, whose steps the window counts */
    char spec[48]; /* "3:5" or "auto" */
    char *unavailable; /* why nothing was captured; NULL when captured */
    char *short_note;  /* why the window ended early (the process ended in it); NULL */
    uint64_t first_step, end_step; /* steps [first, end) captured */
    int have_trigger;              /* auto: the slow step that triggered it */
    uint64_t trigger_step;
    double trigger_ratio; /* its duration / the median before it */
    double align_error_ns; /* the bound of the clock alignment (+-) */
    double start_cost_ns, stop_cost_ns, export_cost_ns;
    /* from the step rows (sps__run_torch_build); NAN unknown */
    uint64_t start_ns, end_ns;    /* the window's first step's start, last step's end (0: unknown) */
    double window_step_mean_s;    /* its steps' mean duration */
    double other_step_median_s;   /* the median of the thread's other steps, warm-up left out */
    uint64_t cpu_ops, gpu_ops;    /* in the file (still known when read from report.json) */
    uint64_t bad_lines;           /* malformed lines skipped */
    char *problem;                /* the first one's error; NULL none */
    /* the events: only from the file (not in report.json) */
    size_t nops;
    struct sps_torch_op *ops;
    size_t nnames;
    char **names;
    /* per zone, its top operators by self time (zones by their total, the
     * operators by theirs; at most SPS_TORCH_TOP_PER_ZONE each) */
    size_t ntops;
    struct sps_torch_top *tops;
};

/* Whether a directory entry is an operators file ("torch-ops-*.tsv"). */
int sps__is_torch_ops_name(const char *file_name);

/*
 * Parse one operators file's text (len bytes) into *out (zeroed first).
 * label names it in errors.  A file that is not one (wrong first line, no
 * pid, no "end" line: truncated) is SPS_EFORMAT with err "<label>: line
 * <n>: <what>"; a malformed line inside one is skipped, counted in
 * out->bad_lines and its error kept in out->problem, and nothing else is
 * lost.  Returns 0, SPS_EFORMAT or SPS_ENOMEM; *out is to be freed with
 * sps__torch_capture_free either way.
 */
int sps__torch_ops_parse(const char *text, size_t len, const char *label, struct sps_torch_capture *out,
                         char *err, size_t errlen);

/* Read every torch-ops file of dir into run->torch; a file that cannot be
 * read or parsed goes to run->skipped with its error.  Returns 0 or
 * SPS_ENOMEM. */
int sps__run_load_torch(struct sps_run *run, const char *dir);

/* Once the steps are built: each capture's window times and step costs,
 * and its per-zone top operators.  Returns 0 or SPS_ENOMEM. */
int sps__run_torch_build(struct sps_run *run);

/* The capture's operators fitted to one timeline with the zones of its
 * thread, as sps__run_torch_build does: each moved inside the zone it
 * belongs to and cut back from zones it partly covers, and each thread's
 * operators nested (torch 1.13's rounding lets a child end after its
 * parent); for a run whose events were attached after it was built.
 * Returns 0 or SPS_ENOMEM. */
int sps__torch_place_ops(const struct sps_run *run, struct sps_torch_capture *c);

/* Move the events of from (a capture read from its file) into to (the
 * same process's, read from report.json). */
void sps__torch_capture_take_events(struct sps_torch_capture *to, struct sps_torch_capture *from);

void sps__torch_capture_free(struct sps_torch_capture *c);

#endif /* SPS_MODEL_TORCH_OPS_H */
