/*
 * run_stream.c - the live step stream's thread in `stepscope run` (see
 * run_stream.h).
 */
#include "run_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "live/stream.h"
#include "sampler/published.h"
#include "ticker.h"

#define STREAM_PERIOD_NS 100000000u

struct sps_run_stream {
    struct sps__live_stream *stream;
    const struct sps__published *published;
    struct sps_ticker *ticker;
    char *path; /* for the error line */
    struct sps__sample sample;
};

static void poll_once(struct sps_run_stream *s, int final) {
    if (s->published && sps__published_read(s->published, &s->sample, NULL) == 0)
        sps__live_stream_sample(s->stream, &s->sample);
    sps__live_stream_poll(s->stream, sps__mono_ns(), final);
}

static void tick(void *arg) {
    poll_once(arg, 0);
}

struct sps_run_stream *sps_run_stream_start(const char *path, const char *records_dir,
                                            const struct sps__published *published, uint64_t t0_mono_ns) {
    uint64_t period = sps_ticker_period_from_env("STEPSCOPE_STREAM_MS", STREAM_PERIOD_NS);
    struct sps_run_stream *s = calloc(1, sizeof *s);
    if (!s) {
        sps_cli_error("run", path, strerror(ENOMEM), 0);
        return NULL;
    }
    s->published = published;
    s->path = strdup(path);
    if (!s->path) {
        sps_cli_error("run", path, strerror(ENOMEM), 0);
        free(s);
        return NULL;
    }
    s->stream = sps__live_stream_open(records_dir, path, t0_mono_ns);
    if (!s->stream) {
        sps_cli_error("run", path, strerror(errno), 0);
        free(s->path);
        free(s);
        return NULL;
    }
    s->ticker = sps_ticker_start(period, 0, tick, s);
    if (!s->ticker) {
        sps_cli_error("run", path, "the stream's thread could not start: no live stream", 0);
        sps__live_stream_close(s->stream, NULL);
        free(s->path);
        free(s);
        return NULL;
    }
    return s;
}

void sps_run_stream_stop(struct sps_run_stream *s) {
    if (!s)
        return;
    sps_ticker_stop(s->ticker, NULL);
    poll_once(s, 1);
    struct sps__live_stream_stats stats;
    sps__live_stream_close(s->stream, &stats);
    if (stats.write_errors)
        sps_cli_error("run", s->path,
                      stats.write_errno ? strerror(stats.write_errno) : "out of memory: lines were left out", 0);
    free(s->path);
    free(s);
}
