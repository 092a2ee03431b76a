/*
 * prom_text.h - the Prometheus exposition of a running job
 * (docs/prometheus.md): what `stepscope run --serve` answers on /metrics
 * and what --prom-textfile writes, rendered from one snapshot.
 *
 * The snapshot is plain data filled by the live collector
 * (src/live/prom_collect.h) from the records' exact aggregates and the
 * sampler's published sample; rendering it reads nothing else, allocates
 * only its output and is pure text, so the same snapshot renders the same
 * bytes.  Two formats: OpenMetrics 1.0 text (what Prometheus asks for
 * first) and the Prometheus text format 0.0.4 (node_exporter's textfile
 * collector, promtool, older scrapers).
 *
 * Thread safety: none needed; a snapshot is read-only once filled, so any
 * number of threads may render one at once.
 */
#ifndef SPS_RENDER_PROM_TEXT_H
#define SPS_RENDER_PROM_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"
#include "sources/source.h"

/* The duration histograms' upper bounds, in seconds (1-2.5-5 from 10 us
 * to 100 s; +Inf is implied).  A recorded duration falls into the first
 * bound at or above every value of its recorder histogram bucket, so a
 * duration within 0.78% below a bound may be counted in the next one. */
#define SPS_PROM_BOUNDS 22
extern const double sps__prom_bound_s[SPS_PROM_BOUNDS];

enum sps__prom_kind {
    SPS_PROM_STEP = 1,    /* a step name: duration histogram and a steps counter */
    SPS_PROM_ZONE = 2,    /* a zone, wait or micro-step: duration histogram and self time */
    SPS_PROM_COUNTER = 3, /* a counter: its total */
    SPS_PROM_VALUE = 4    /* a value: the latest one recorded */
};

/* One name of one rank (or of one process without a rank), summed over
 * its threads and, for a rank, over every process of that rank: those
 * with the rank and those without one whose nearest ancestor among the
 * records has it (its DataLoader workers). */
struct sps__prom_series {
    uint8_t kind;      /* enum sps__prom_kind */
    uint8_t rec_kind;  /* enum sps_kind of the name (zone, wait or micro-step for a zone) */
    int32_t rank;      /* -1: not a rank; pid names the series */
    int32_t pid;       /* the process (for a rank: the lowest pid seen with it) */
    char host[64];
    char name[SPS_REC_NAME_LEN];
    uint64_t count;    /* steps and zones: completions in the histogram (their +Inf bucket) */
    uint64_t sum_ns;   /* steps and zones: summed durations */
    uint64_t self_ns;  /* zones: summed self time */
    uint64_t bucket[SPS_PROM_BOUNDS]; /* completions per bound, not cumulative: bucket[i] has
                                         the durations above bound i-1 and at most bound i */
    double value;      /* counters: sum of increments; values: the latest */
};

/* One recording process, for stepscope_process_info. */
struct sps__prom_process {
    int32_t pid, ppid, rank, local_rank, world_size;
    char host[64];
};

struct sps__prom_snapshot {
    struct sps__prom_series *series; /* sorted by kind, name, rank, pid */
    size_t nseries;
    struct sps__prom_process *procs;
    size_t nprocs;
    char host[64];              /* this machine's name (the GPU and machine gauges' Hostname) */
    int have_sample;            /* sample holds the sampler's latest readings */
    struct sps__sample sample;
    double run_start_unix_s;    /* when the run began (CLOCK_REALTIME), 0: unknown */
};

enum sps__prom_format {
    SPS_PROM_OPENMETRICS = 0, /* application/openmetrics-text; version=1.0.0 */
    SPS_PROM_TEXT_004 = 1     /* text/plain; version=0.0.4 */
};

/* The Content-Type header value of a format. */
const char *sps__prom_content_type(enum sps__prom_format f);

/* The format to answer an HTTP Accept header with: OpenMetrics when it
 * names application/openmetrics-text, else the 0.0.4 text (also for a
 * NULL or empty header, as Prometheus's own exporters do). */
enum sps__prom_format sps__prom_negotiate(const char *accept);

/* Render s in format f into a new NUL-terminated buffer (the caller
 * frees it); *len receives its length.  NULL when out of memory. */
char *sps__prom_render(const struct sps__prom_snapshot *s, enum sps__prom_format f, size_t *len);

/* Sort s->series into the order rendering needs (kind, name, rank, pid):
 * the collector calls it once per snapshot. */
void sps__prom_sort(struct sps__prom_snapshot *s);

/* Free what s points to (not s itself).  NULL is a no-op. */
void sps__prom_snapshot_free(struct sps__prom_snapshot *s);

#endif /* SPS_RENDER_PROM_TEXT_H */
