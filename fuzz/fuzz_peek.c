/*
 * fuzz_peek.c - the live readers (src/live/): the input is a record file
 * still being written, the only one in a records directory, read as
 * `stepscope run` reads it while the workload runs, by pread and never a
 * mapping: the live view's peek (peek.c, its status lines and the thin
 * level it writes back), the step stream (stream.c, DIR/steps.jsonl, here
 * written to /dev/null) and the Prometheus collector (prom_collect.c) with
 * its exposition; with a header checksum that does not match, also with
 * it made right (fuzz.h).
 */
#include <math.h>
#include <stdlib.h>

#include "fuzz.h"
#include "live/peek.h"
#include "live/prom_collect.h"
#include "live/status.h"
#include "live/stream.h"
#include "render/prom_text.h"

#define ORIGIN_NS 1000000000ull

static void peek(const char *dir) {
    struct sps__live_peek *pk = sps__live_peek_open(dir);
    if (!pk)
        return;
    struct sps__live_steps steps;
    if (sps__live_peek_read(pk, &steps) == 0 && !steps.have_step)
        sps_fuzz_rejected("live peek: no completed step read");
    else {
        struct sps__live_frame fr = {12.5, &steps, NAN, NULL};
        char lines[3][SPS_LIVE_LINE_MAX];
        sps__live_format(&fr, 120, 3, lines);
        fputs(lines[0], sps_fuzz_sink());
    }
    (void)sps__live_peek_set_thin(pk, 1, ORIGIN_NS);
    sps__live_peek_close(pk);
}

static void stream(const char *dir) {
    /* a file of the harness's own (never a device: the stream makes its
     * file fresh, and root's harness must not touch /dev) */
    char out[4200];
    snprintf(out, sizeof out, "%s/steps.jsonl", dir);
    struct sps__live_stream *st = sps__live_stream_open(dir, out, ORIGIN_NS);
    if (!st)
        return;
    (void)sps__live_stream_poll(st, ORIGIN_NS + 10 * ORIGIN_NS, 0);
    (void)sps__live_stream_poll(st, ORIGIN_NS + 20 * ORIGIN_NS, 1);
    sps__live_stream_close(st, NULL);
}

static void prom(const char *dir) {
    struct sps__prom_collect *c = sps__prom_collect_open(dir);
    if (!c)
        return;
    struct sps__prom_snapshot s = {0};
    if (sps__prom_collect_read(c, &s) == 0) {
        size_t len;
        free(sps__prom_render(&s, SPS_PROM_OPENMETRICS, &len));
        free(sps__prom_render(&s, SPS_PROM_TEXT_004, &len));
    }
    sps__prom_snapshot_free(&s);
    sps__prom_collect_close(c);
}

static void read_live(const uint8_t *data, size_t size) {
    const char *dir = sps_fuzz_dir_file("fuzz.sps", data, size);
    peek(dir);
    stream(dir);
    prom(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    read_live(data, size);
    uint8_t *fixed = sps_fuzz_header_crc_fixed(data, size);
    if (fixed) {
        read_live(fixed, size);
        free(fixed);
    }
    return 0;
}
