/*
 * run_prom.h - `stepscope run --serve HOST:PORT` and --prom-textfile PATH:
 * the job's Prometheus exposition (docs/prometheus.md) while it runs.
 *
 * A ticker thread of its own reads the live records (src/live/
 * prom_collect.h) and the sampler's published sample every second
 * (STEPSCOPE_PROM_MS sets another period, for tests) into a new snapshot,
 * and swaps it in under a lock held only for the swap.  The HTTP server
 * (prom_http.h: libmicrohttpd, on its own thread) renders each scrape from
 * the snapshot current when the scrape came: a scrape waits for nothing
 * but that swap, and the workload, which writes its records as always,
 * waits for nothing at all.  The textfile is the same exposition in the
 * text format node_exporter reads, written atomically (a temporary in the
 * same directory, then rename) every 5 s and once more when the job ends.
 *
 * One owner starts and stops it; sps_run_prom_acquire and _release are
 * for the server's thread.
 */
#ifndef SPS_CLI_RUN_PROM_H
#define SPS_CLI_RUN_PROM_H

struct sps__published;
struct sps__prom_snapshot;
struct sps_run_prom;

struct sps_run_prom_config {
    const char *serve;         /* "HOST:PORT" to serve /metrics on; NULL: no server */
    const char *textfile;      /* path of the textfile; NULL: none */
    const char *records_dir;
    const struct sps__published *published; /* the sampler's (NULL: no machine gauges) */
    double start_unix_s;       /* when the run began */
    int quiet;                 /* no "serving" line */
};

/* Start what cfg asks for.  A server that cannot start (a malformed
 * address, a port in use) or a textfile that cannot be written gives one
 * line on stderr and the run goes on without it.  NULL when there is
 * nothing to do (or nothing could start). */
struct sps_run_prom *sps_run_prom_start(const struct sps_run_prom_config *cfg);

/* The workload has ended: stop the ticker, write the textfile one last
 * time from the records as they were left, stop the server, free p.  Call
 * while published is still mapped.  NULL is a no-op. */
void sps_run_prom_stop(struct sps_run_prom *p);

/* The current snapshot, held until released (never NULL once started:
 * an empty one before the first read).  Thread-safe. */
const struct sps__prom_snapshot *sps_run_prom_acquire(struct sps_run_prom *p);
void sps_run_prom_release(struct sps_run_prom *p, const struct sps__prom_snapshot *s);

#endif /* SPS_CLI_RUN_PROM_H */
