/*
 * run_prom.c - the Prometheus exposition of a running job: snapshots,
 * the textfile, and the server's start and stop (see run_prom.h).
 */
#include "run_prom.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "live/prom_collect.h"
#include "platform/atomic_file.h"
#include "prom_http.h"
#include "render/prom_text.h"
#include "sampler/published.h"
#include "ticker.h"

#define PROM_PERIOD_NS 1000000000u
#define TEXTFILE_PERIOD_NS 5000000000u

/* A snapshot and the scrapes rendering it. */
struct held {
    struct sps__prom_snapshot s;
    int refs; /* under the lock: the current pointer's, and each scrape's */
};

struct sps_run_prom {
    struct sps__prom_collect *collect;
    const struct sps__published *published;
    struct sps_ticker *ticker;
    struct sps_prom_http *http;
    char *textfile;
    int textfile_failed; /* said once */
    uint64_t ticks, textfile_every;
    char host[64];
    double start_unix_s;
    pthread_mutex_t lock; /* guards current and every held's refs */
    struct held *current;
    struct sps__prom_totals totals; /* the sampler's totals as counters */
};

static void held_drop(struct sps_run_prom *p, struct held *h) {
    if (!h)
        return;
    pthread_mutex_lock(&p->lock);
    int last = --h->refs == 0;
    pthread_mutex_unlock(&p->lock);
    if (last) {
        sps__prom_snapshot_free(&h->s);
        free(h);
    }
}

const struct sps__prom_snapshot *sps_run_prom_acquire(struct sps_run_prom *p) {
    pthread_mutex_lock(&p->lock);
    struct held *h = p->current;
    h->refs++;
    pthread_mutex_unlock(&p->lock);
    return &h->s;
}

void sps_run_prom_release(struct sps_run_prom *p, const struct sps__prom_snapshot *s) {
    if (s) /* s is the first member of its held */
        held_drop(p, (struct held *)(void *)s);
}

/* A new snapshot of the records and the latest sample; NULL when out of
 * memory (the current one stays). */
static struct held *collect(struct sps_run_prom *p) {
    struct held *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->refs = 1;
    memcpy(h->s.host, p->host, sizeof h->s.host);
    h->s.run_start_unix_s = p->start_unix_s;
    h->s.have_sample = p->published && sps__published_read(p->published, &h->s.sample, NULL) == 0;
    if (h->s.have_sample)
        sps__prom_totals_apply(&p->totals, &h->s.sample);
    if (sps__prom_collect_read(p->collect, &h->s) != 0) {
        sps__prom_snapshot_free(&h->s);
        free(h);
        return NULL;
    }
    return h;
}

static void publish(struct sps_run_prom *p, struct held *h) {
    if (!h)
        return;
    pthread_mutex_lock(&p->lock);
    struct held *old = p->current;
    p->current = h;
    pthread_mutex_unlock(&p->lock);
    held_drop(p, old);
}

/* The textfile, in the 0.0.4 text format node_exporter's textfile
 * collector reads, replaced atomically.  The first failure says why, once. */
static void write_textfile(struct sps_run_prom *p, const struct sps__prom_snapshot *s, int final) {
    if (!p->textfile)
        return;
    size_t len;
    char err[512] = "";
    char *text = sps__prom_render(s, SPS_PROM_TEXT_004, &len);
    struct sps_atomic_file a;
    int rc = -1;
    if (!text) {
        snprintf(err, sizeof err, "%s: out of memory", p->textfile);
    } else if (sps__atomic_open(&a, p->textfile, err, sizeof err) == 0) {
        size_t done = 0;
        while (done < len) {
            ssize_t w = write(a.fd, text + done, len - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            done += (size_t)w;
        }
        if (done == len) {
            rc = sps__atomic_commit(&a, final ? 0u : SPS_ATOMIC_NO_SYNC, err, sizeof err);
        } else {
            snprintf(err, sizeof err, "%s: %s", p->textfile, strerror(errno ? errno : ENOSPC));
            sps__atomic_abort(&a);
        }
    }
    free(text);
    if (rc != 0 && !p->textfile_failed) {
        p->textfile_failed = 1;
        sps_cli_error("run", "--prom-textfile", err, 0);
    }
}

static void tick(void *arg) {
    struct sps_run_prom *p = arg;
    publish(p, collect(p));
    if (p->textfile && ++p->ticks % p->textfile_every == 0) {
        const struct sps__prom_snapshot *s = sps_run_prom_acquire(p);
        write_textfile(p, s, 0);
        sps_run_prom_release(p, s);
    }
}

static void free_prom(struct sps_run_prom *p) {
    held_drop(p, p->current);
    sps__prom_collect_close(p->collect);
    pthread_mutex_destroy(&p->lock);
    free(p->textfile);
    free(p);
}

struct sps_run_prom *sps_run_prom_start(const struct sps_run_prom_config *cfg) {
    if (!cfg->serve && !cfg->textfile)
        return NULL;
    uint64_t period = sps_ticker_period_from_env("STEPSCOPE_PROM_MS", PROM_PERIOD_NS);
    struct sps_run_prom *p = calloc(1, sizeof *p);
    if (!p || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        sps_cli_error("run", cfg->serve ? "--serve" : "--prom-textfile", strerror(ENOMEM), 0);
        return NULL;
    }
    p->published = cfg->published;
    sps__prom_totals_init(&p->totals);
    p->start_unix_s = cfg->start_unix_s;
    p->textfile_every = TEXTFILE_PERIOD_NS / period ? TEXTFILE_PERIOD_NS / period : 1;
    if (gethostname(p->host, sizeof p->host - 1) != 0)
        strcpy(p->host, "unknown");
    p->collect = sps__prom_collect_open(cfg->records_dir);
    p->textfile = cfg->textfile ? strdup(cfg->textfile) : NULL;
    p->current = calloc(1, sizeof *p->current);
    if (!p->collect || (cfg->textfile && !p->textfile) || !p->current) {
        sps_cli_error("run", cfg->serve ? "--serve" : "--prom-textfile", strerror(ENOMEM), 0);
        free_prom(p);
        return NULL;
    }
    p->current->refs = 1;
    memcpy(p->current->s.host, p->host, sizeof p->host);
    if (cfg->serve)
        p->http = sps_prom_http_start(cfg->serve, p, cfg->quiet);
    if (!p->http && !p->textfile) {
        free_prom(p);
        return NULL;
    }
    p->ticker = sps_ticker_start(period, 1, tick, p);
    if (!p->ticker) {
        sps_cli_error("run", cfg->serve ? "--serve" : "--prom-textfile",
                      "its thread could not start: no Prometheus exposition", 0);
        sps_prom_http_stop(p->http);
        free_prom(p);
        return NULL;
    }
    return p;
}

void sps_run_prom_stop(struct sps_run_prom *p) {
    if (!p)
        return;
    sps_ticker_stop(p->ticker, NULL);
    /* the records as the workload left them: every step it completed */
    publish(p, collect(p));
    if (p->textfile) {
        const struct sps__prom_snapshot *s = sps_run_prom_acquire(p);
        write_textfile(p, s, 1);
        sps_run_prom_release(p, s);
    }
    sps_prom_http_stop(p->http); /* waits for a scrape under way */
    free_prom(p);
}
