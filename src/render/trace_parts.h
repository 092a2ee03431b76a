/*
 * trace_parts.h - the phases of trace.json (exporters.h,
 * sps__export_trace), one file each:
 *
 *   trace_gather.c  what there is: processes, threads, zones, values and
 *                   counters from the report model's events, its step
 *                   rows and the sampler's series, as items
 *   trace_budget.c  what goes in: items ordered, events that would break
 *                   nesting left out, then the size policy of
 *                   docs/trace-format.md ("Size budget")
 *   trace_render.c  the JSON: each item's size (zones counted, the rest
 *                   rendered once), then the chosen items written
 *   trace.c         the export, phase after phase
 *
 * Everything that could go into the file is gathered as items whose exact
 * size in bytes is known before the budget chooses, so the file never
 * exceeds its budget and otherData says exactly what was left out.
 *
 * Times are integer nanoseconds after the run's start until they are
 * written as microseconds with three decimals, so nesting that holds in
 * nanoseconds holds in the file too.
 *
 * Internal to the trace exporter; not thread-safe (one struct trace per
 * export).
 */
#ifndef SPS_RENDER_TRACE_PARTS_H
#define SPS_RENDER_TRACE_PARTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report.h"

/* Steps get a track of their own per recording thread: this tid plus the
 * thread's.  Kernel tids stay below 2^22, so these never collide with one. */
#define TRACE_STEPS_TID_BASE 1000000000
/* torch.profiler's operators of a thread it numbers itself (not the
 * window's main thread): this tid plus its number; device kernels: this
 * tid (docs/trace-format.md, "torch.profiler operators"). */
#define TRACE_TORCH_TID_BASE 1500000000
#define TRACE_TORCH_GPU_TID 1600000000
/* GPU zones' spans on the GPU: one track per process and stream, this tid
 * plus the stream's order of first appearance in the process
 * (docs/trace-format.md, "GPU streams"). */
#define TRACE_GPU_STREAM_TID_BASE 1700000000
#define TRACE_GPU_STREAMS_MAX 100000
/* The sampled machine metrics go on a process of their own (pid and tid). */
#define TRACE_MACHINE_PID 2000000000
/* Zone detail goes first to this many slowest steps, then to this many
 * latest steps (docs/trace-format.md, "Size budget"). */
#define TRACE_SLOWEST_STEPS 10
#define TRACE_LATEST_STEPS 10
#define TRACE_POLICY "steps-counters-slowest-latest-then-time/1"
#define TRACE_FORMAT "stepscope.trace/2"
/* Step zones are searched backwards from the latest step that starts
 * before a zone, at most this far, for one that still contains it. */
#define TRACE_OWNER_SEARCH 64
#define TRACE_LABEL_LEN 320

/* A growable byte buffer; `failed` once an allocation failed. */
struct tbuf {
    char *p;
    size_t len, cap;
    int failed;
};

enum x_kind { X_ZONE, X_MICROSTEP, X_STEP, X_TORCH_OP, X_WAIT, X_GPU };
enum item_state { ITEM_CANDIDATE, ITEM_KEPT, ITEM_OVERLAP, ITEM_BUDGET };

/* A complete event ("X"): a zone, a micro-step or a step.  48 bytes: a
 * big run gathers one per recorded zone. */
struct x_item {
    int64_t start, end; /* ns after the origin, end >= start */
    int pid, tid;       /* the track it is drawn on */
    const char *name;   /* zones; steps are all named "step" */
    union {             /* one of them: a big run has tens of millions of items */
        size_t step;    /* X_STEP: index into trace.steps */
        long bucket;    /* zones: the owning step, or -1 - process entry (none) */
    };
    union {             /* the first until the items are sorted (arrange), the second from measure on */
        uint32_t seq;   /* gathering order: the last tie-breaker (gathering stops at UINT32_MAX items) */
        uint32_t size;  /* bytes, separator included */
    };
    uint16_t depth;
    uint8_t kind, state;
};

_Static_assert(sizeof(struct x_item) <= 48, "an x_item stays at 48 bytes");

struct trace_step {
    int pid, tid;
    uint64_t index;
    const char *name; /* the step's name (its stream); NULL when the row has none */
    int64_t start, end;
    int warmup;
    uint32_t microsteps;
    size_t proc; /* process entry, for zone ownership */
};

/* What a counter track holds: its "cat". */
enum c_category { C_VALUE, C_COUNTER, C_MACHINE };

/* A counter track ("C" events of one name on one process). */
struct c_track {
    char name[TRACE_LABEL_LEN];
    const char *key; /* the one args key: a unit, "value" or "total" */
    int pid, tid;
    uint8_t category; /* enum c_category */
};

struct c_point {
    int64_t t;
    double v;
    size_t track, seq;
    uint32_t size;
    uint8_t state;
};

enum meta_what { META_PROCESS_NAME, META_PROCESS_SORT, META_THREAD_NAME, META_THREAD_SORT };

struct meta {
    int pid, tid;
    uint8_t what;
    int64_t sort;
    size_t seq;
    uint32_t size;
    char label[TRACE_LABEL_LEN];
};

/* Counts for otherData. */
struct trace_counts {
    uint64_t zones_recorded, zones_dropped_by_rings, zones_in_input, zones_written, zones_budget, zones_overlap;
    uint64_t buckets_partial, buckets_left_out;
    uint64_t steps_in_input, steps_written, steps_budget, steps_overlap;
    uint64_t points_in_input, points_written, points_budget, decimation, values_not_finite;
};

struct trace {
    const struct sps_report *rep;
    /* non-NULL (the same report): each thread's zone events are freed
     * once gathered (sps__export_trace_taking_events) */
    struct sps_report *taking;
    int64_t origin_ns; /* monotonic ns of the run's start */
    struct x_item *x;
    size_t nx, capx;
    struct trace_step *steps;
    size_t nsteps, capsteps;
    struct c_track *tracks;
    size_t ntracks, captracks;
    struct c_point *points;
    size_t npoints, cappoints;
    struct meta *meta;
    size_t nmeta, capmeta;
    struct trace_counts n;
    struct tbuf scratch;
    int *pids; /* each process's track id (sps__run_unique_pids) */
    int oom;
};

/* ---- trace_gather.c: every candidate item; t->oom when out of memory */

/* The processes and threads of the model, their zones and values when it
 * holds events, its step rows and the sampler's series. */
void sps__trace_gather(struct trace *t);

/* Each steps track named, and sorted above its process's threads: in
 * O(steps log steps). */
void sps__trace_name_step_tracks(struct trace *t);

/* ---- trace_budget.c: ordering and choosing; 0, SPS_ENOMEM or (choose)
 * SPS_EINVAL with err set */

/* qsort, but nothing to do (and no NULL array passed) under two items. */
void sps__trace_sort(void *base, size_t n, size_t size, int (*order)(const void *, const void *));

/* Metadata sorted, a pid's duplicates (an exec'ed image) dropped; points
 * sorted by track and time; complete events sorted by track and nesting,
 * owned by their steps, and those that partly overlap left out. */
int sps__trace_arrange(struct trace *t);

/* Choose the items that fit max_bytes (each item's size measured). */
int sps__trace_choose(struct trace *t, uint64_t max_bytes, char *err, size_t errlen);

/* ---- trace_render.c */

/* Keep every item's size: a zone's counted, the others' rendered into
 * t->scratch (sps__trace_write checks each kept event against it). */
void sps__trace_measure(struct trace *t);

/* The bytes everything but the events takes: the head and the tail with
 * every count at its widest.  0 and t->oom when out of memory. */
uint64_t sps__trace_fixed_bytes(struct trace *t, uint64_t max_bytes);

/* Write the chosen items.  0, SPS_ENOMEM, or SPS_EIO with err set. */
int sps__trace_write(struct trace *t, FILE *out, uint64_t max_bytes, char *err, size_t errlen);

#endif /* SPS_RENDER_TRACE_PARTS_H */
