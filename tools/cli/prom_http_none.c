/*
 * prom_http_none.c - prom_http.h for a CLI built without libmicrohttpd:
 * the one in the pip wheel (setup.py builds it in place of prom_http.c),
 * which links nothing outside the manylinux policy, and libmicrohttpd's
 * TLS dependencies (gnutls, p11-kit, ...) have no static libraries on
 * Debian.  --serve then says so in one line and the job runs on, as with
 * an address that cannot be served; --prom-textfile, which needs no
 * server, works as in every build.
 */
#include "prom_http.h"

#include <stddef.h>

#include "cli.h"

struct sps_prom_http *sps_prom_http_start(const char *addr, struct sps_run_prom *prom, int quiet) {
    (void)addr;
    (void)prom;
    (void)quiet;
    sps_cli_error("run", "--serve",
                  "this stepscope (the pip wheel's) has no HTTP server; --prom-textfile FILE writes the same "
                  "metrics for node_exporter's textfile collector, or build with CMake for --serve",
                  0);
    return NULL;
}

void sps_prom_http_stop(struct sps_prom_http *h) {
    (void)h; /* never started */
}
