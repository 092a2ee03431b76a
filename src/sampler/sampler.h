/*
 * sampler.h - reads the sources at their intervals, keeps bounded series
 * and publishes the latest sample.
 *
 * Every interval (default 100 ms) it reads the watched tree's CPU time and
 * memory (the SPS_EVERY_INTERVAL metrics), and each tree process's own
 * resident set into a series per process; every machine interval (default
 * 500 ms) everything else (the tree's PSS only when its cost budget allows:
 * SPS_WHEN_DUE): the rest of the host sources (proc, thermal,
 * rapl) and the GPU chain (nvml, else drm, else nvidia-smi: the first that
 * opens serves every GPU).  With the defaults every fifth interval is also
 * a machine tick, so the slower reads share a wake-up.  Every
 * reading is timestamped with CLOCK_MONOTONIC, the clock zones are
 * converted to, so series and zones share one time axis.
 *
 * A sampler may run a thread (sps__sampler_start) or be ticked by its
 * owner (sps__sampler_tick, for fresh reads and tests).  All functions
 * are thread-safe against the sampler's own thread; one owner opens,
 * starts, stops and closes it.
 */
#ifndef SPS_SAMPLER_SAMPLER_H
#define SPS_SAMPLER_SAMPLER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/published.h"
#include "sampler/series.h"
#include "sources/source.h"

#define SPS_SAMPLER_DEFAULT_INTERVAL_MS 100
#define SPS_SAMPLER_DEFAULT_MACHINE_MS 500
#define SPS_SAMPLER_DEFAULT_POINTS 512
/* Processes of the watched tree that get an RSS series of their own: the
 * first this many seen (a run that forks workers by the hundred keeps the
 * first ones and counts the rest). */
#define SPS_SAMPLER_MAX_PROCESSES 64

struct sps__sampler_config {
    const char *root;     /* prefix for /proc and /sys ("" or NULL: the real ones) */
    int tree_pid;         /* root of the watched process tree; 0: none yet */
    int interval_ms; /* 0: SPS_SAMPLER_DEFAULT_INTERVAL_MS */
    int machine_interval_ms;  /* 0: SPS_SAMPLER_DEFAULT_MACHINE_MS */
    uint32_t series_points; /* per metric; 0: SPS_SAMPLER_DEFAULT_POINTS */
    const char *publish_path; /* a file to publish into (created and mapped shared); NULL: memory */
    const char *nvml_path;    /* NULL: libnvidia-ml.so.1 */
    const char *smi_path;     /* NULL: nvidia-smi on PATH */
    int smi_timeout_ms;       /* 0: 2000 */
    const char *cuda_visible_devices; /* NULL: unset */
};

/* What a source did over the run. */
struct sps__source_result {
    int tried;     /* open was attempted (GPU sources past the one in use are not) */
    int available; /* open succeeded */
    int in_use;    /* the sampler reads it */
    int slow;
    char reason[192];     /* why unavailable, or the open's note */
    uint64_t reads, failed_reads;
    uint64_t read_ns_total; /* wall time spent in its reads */
    char last_error[192];   /* the latest failed read's reason ("" if none) */
    char note[192];         /* the latest successful read's note, e.g. a metric it could not read */
};

struct sps__gpu_series {
    int index, source;
    char name[64], uuid[96];
    struct sps__series m[SPS_GPU_METRIC_COUNT];
};

struct sps__sensor_series {
    char label[48];
    int is_cpu;
    struct sps__series celsius;
};

/* One process of the watched tree and its resident set while it was in
 * the tree, read with the tree's sum (same times).  A process that exits
 * keeps its series. */
struct sps__process_series {
    int pid;
    uint64_t start_ticks;         /* with pid, names the process: a reused pid is another process */
    char comm[SPS_PROC_COMM_LEN]; /* its command name at its latest reading */
    int64_t first_seen_ns;        /* its first reading (CLOCK_MONOTONIC) */
    struct sps__series rss_bytes;
};

/* Everything the sampler saw; stable once it is stopped. */
struct sps__sampler_result {
    int interval_ms, machine_interval_ms;
    int tree_pid;
    uint64_t interval_ticks, machine_ticks;
    uint64_t ticks;             /* ticks of any kind */
    uint64_t tick_ns_total;     /* wall time of all ticks */
    double thread_cpu_seconds;  /* the sampler threads' own CPU time, summed over every start/stop */
    uint64_t thread_ns_total;   /* wall time the thread ran, summed likewise */
    int64_t started_ns;         /* the first tick */
    uint64_t pss_reads;         /* reads of the tree's PSS (every process's smaps_rollup) */
    double pss_cpu_seconds;     /* their CPU cost, on whichever thread read them */
    double rss_sum_max_pss_current; /* the largest RSS sum read while the published PSS was current (0: never) */
    struct sps__source_result sources[SPS_SOURCE_COUNT];
    struct sps__series host[SPS_HOST_METRIC_COUNT];
    int ngpus;
    struct sps__gpu_series gpu[SPS_CAPTURE_MAX_GPUS];
    int nsensors;
    struct sps__sensor_series sensor[SPS_CAPTURE_MAX_SENSORS];
    /* the tree's processes in the order they were first seen, at most
     * SPS_SAMPLER_MAX_PROCESSES; processes_left_out counts those seen
     * after (each once) */
    int nprocesses;
    uint64_t processes_left_out;
    struct sps__process_series process[SPS_SAMPLER_MAX_PROCESSES];
};

struct sps__sampler;

/* Open every source the sampler uses (the GPU chain up to the first that
 * opens).  Returns NULL only when out of memory (err says so); a publish
 * file that cannot be created is not fatal: the sample is published in
 * memory and err receives a note (err[0] is "" otherwise). */
struct sps__sampler *sps__sampler_open(const struct sps__sampler_config *cfg, char *err, size_t errlen);

/* Change the watched tree's root (stepscope run knows it after fork). */
void sps__sampler_set_tree(struct sps__sampler *s, int pid);

/* Read now: the interval metrics when interval, everything when machine
 * (the SPS_WHEN_DUE ones when their cost budget allows). */
void sps__sampler_tick(struct sps__sampler *s, int interval, int machine);

/* Read everything now, the SPS_WHEN_DUE metrics (the tree's PSS) included:
 * fresh captures and snapshots. */
void sps__sampler_tick_now(struct sps__sampler *s);

/* Tick once (a fresh read, as sps__sampler_tick_now, when fresh), then
 * start the thread (every signal blocked in it).  Returns 0, or -1 with
 * errno when the thread cannot be created. */
int sps__sampler_start(struct sps__sampler *s, int fresh);

/* Stop and join the thread (no-op when none runs).  start() resumes. */
void sps__sampler_stop(struct sps__sampler *s);

/* Is the thread running? */
int sps__sampler_running(const struct sps__sampler *s);

/* The published latest sample (read it with sps__published_read). */
const struct sps__published *sps__sampler_published(const struct sps__sampler *s);

/* The run so far.  Call after sps__sampler_stop (or with no thread). */
const struct sps__sampler_result *sps__sampler_result(const struct sps__sampler *s);

/*
 * The metric that stands for the watched tree's memory in r:
 * SPS_M_WORKLOAD_PSS_BYTES (pages the tree's processes share count once)
 * when PSS was read and was current while the tree's RSS sum was within
 * 10% of its peak, so the PSS peak covers the tree's largest moment; else
 * SPS_M_WORKLOAD_RSS_BYTES, the sum over processes (a kernel without
 * smaps_rollup, a process that denied the read, or a tree that grew after
 * the last PSS read it could afford).  The peak's metric is the matching
 * _PEAK one.  Thread-safe.
 */
enum sps_host_metric sps__tree_memory_metric(const struct sps__sampler_result *r);
enum sps_host_metric sps__tree_memory_peak_metric(const struct sps__sampler_result *r);

/* Free the series' points in r (the struct itself stays). */
void sps__sampler_result_clear(struct sps__sampler_result *r);

/* A result on the heap (the report model reads one from report.json):
 * its series, then r.  NULL is a no-op. */
void sps__sampler_result_free(struct sps__sampler_result *r);

/* Stop, close the sources, unmap the publish file (which stays on disk),
 * free.  NULL is a no-op. */
void sps__sampler_close(struct sps__sampler *s);

#endif /* SPS_SAMPLER_SAMPLER_H */
