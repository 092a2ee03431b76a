/*
 * prom_http.h - the HTTP server of `stepscope run --serve HOST:PORT`:
 * libmicrohttpd on a thread of its own (never one of the workload's: the
 * workload is another process), answering GET /metrics with the current
 * snapshot (run_prom.h) in the format the scraper's Accept header asks
 * for: OpenMetrics text, or the Prometheus text format 0.0.4.
 *
 * One owner starts and stops it.
 */
#ifndef SPS_CLI_PROM_HTTP_H
#define SPS_CLI_PROM_HTTP_H

#include <stddef.h>

struct sps_run_prom;
struct sps_prom_http;

/* Listen on addr ("HOST:PORT", "[V6]:PORT" or ":PORT" for every
 * interface; port 0 takes a free one) and serve prom's snapshots.  Says
 * where it serves on stderr unless quiet.  NULL, after one line on stderr
 * (a malformed address, a host that does not resolve, a port in use),
 * when it cannot. */
struct sps_prom_http *sps_prom_http_start(const char *addr, struct sps_run_prom *prom, int quiet);

/* Stop serving (a scrape under way finishes first) and free h.  NULL is
 * a no-op. */
void sps_prom_http_stop(struct sps_prom_http *h);

/* Whether --serve's libmicrohttpd loads here (stepscope doctor): 1 with
 * the file it was loaded from in where, else 0 with a line saying what
 * --serve needs and the loader's reason.  Loads it as --serve does, once
 * per process; thread-safe. */
int sps_prom_http_library(char *where, size_t cap);

#endif /* SPS_CLI_PROM_HTTP_H */
