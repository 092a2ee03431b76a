/*
 * step_line.h - one completed step as the live stream (DIR/steps.jsonl)
 * and Python's stepscope.last_step() give it: the step's place and times,
 * the self time of each zone and wait it owns, its micro-steps, the last value and
 * the summed increments of each name it owns, and the machine readings of
 * its window.  Which events a step owns is report.json's rule
 * (docs/report-format.md, "How a step owns events"), applied by the
 * callers to the events of the step's own thread.
 *
 * Plain data with fixed room: a step whose names outnumber the room keeps
 * the first ones and counts the events of the rest (names_left_out).  Names are ids of
 * the record's name table; the caller resolves them when it writes the
 * line.  Not thread-safe: one owner per struct.
 */
#ifndef SPS_STEP_LINE_H
#define SPS_STEP_LINE_H

#include <stdint.h>

#define SPS_STEP_LINE_NAMES 64 /* zones, waits, values and counters each */
#define SPS_STEP_LINE_GPUS 16

/* The host readings a line carries, in this order (enum sps_host_metric
 * ids); the JSON keys are their catalogue names. */
#define SPS_STEP_LINE_HOST_METRICS 4
extern const int sps__step_line_host_metric[SPS_STEP_LINE_HOST_METRICS];

/* Readings over a step's window: each the mean of the sampler's readings
 * inside it, or the nearest one when none falls inside; NAN when there is
 * none at all.  have is 0 when nothing at all was read (the line says
 * "machine": null). */
struct sps__step_machine {
    int have;
    double host[SPS_STEP_LINE_HOST_METRICS];
    int ngpus;
    int gpu_index[SPS_STEP_LINE_GPUS];
    double gpu_utilization_percent[SPS_STEP_LINE_GPUS];
    double gpu_memory_used_bytes[SPS_STEP_LINE_GPUS];
};

struct sps__step_named {
    uint32_t name;  /* id in the record's name table */
    uint64_t ns;    /* zones: summed self time; counters: summed increments */
    double last;    /* values: the latest-starting value */
    int64_t first;  /* zones: the earliest start among its events (any clock): lines list zones in this order */
};

struct sps__step_line {
    uint64_t index;     /* ordinal among the steps its thread ended (report.json's steps.rows[].index) */
    uint32_t name;      /* the step's name id */
    int pid, rank, tid; /* rank -1: not set */
    int64_t start_ns, end_ns; /* relative to the run's start (report.json's start_s) */
    uint64_t microsteps;
    int partial;        /* events of its window were overwritten before they were read */
    uint32_t nzones, nwaits, nvalues, ncounters;
    uint32_t names_left_out;
    struct sps__step_named zone[SPS_STEP_LINE_NAMES];
    struct sps__step_named wait[SPS_STEP_LINE_NAMES]; /* waits (SPS_KIND_WAIT), kept as zones are */
    struct sps__step_named value[SPS_STEP_LINE_NAMES];
    struct sps__step_named counter[SPS_STEP_LINE_NAMES];
    struct sps__step_machine machine;
};

/* A line for a step, with nothing owned yet and no machine readings. */
void sps__step_line_init(struct sps__step_line *l, uint64_t index, uint32_t name, int pid, int rank, int tid,
                         int64_t start_ns, int64_t end_ns);

/* What the step owns, one event at a time, values in the order their
 * thread recorded them (the last one given is the step's value). */
void sps__step_line_zone(struct sps__step_line *l, uint32_t name, int64_t start, uint64_t self_ns);
void sps__step_line_wait(struct sps__step_line *l, uint32_t name, int64_t start, uint64_t self_ns);
void sps__step_line_value(struct sps__step_line *l, uint32_t name, double v);
void sps__step_line_count(struct sps__step_line *l, uint32_t name, uint64_t inc);


#endif /* SPS_STEP_LINE_H */
