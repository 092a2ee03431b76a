/* Placeholder until the rapl source lands: always unavailable. */
#include "sources/source.h"

#include <stdio.h>

static int open_unbuilt(const struct sps__source_ctx *ctx, void **state, char *reason, size_t cap) {
    (void)ctx;
    *state = NULL;
    snprintf(reason, cap, "not built");
    return -1;
}

static int read_unbuilt(void *state, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                        char *reason, size_t cap) {
    (void)state; (void)ctx; (void)s; (void)now_ns;
    snprintf(reason, cap, "not built");
    return -1;
}

static void close_unbuilt(void *state) { (void)state; }

const struct sps__source sps__source_rapl = {SPS_SOURCE_RAPL, "rapl", "rapl", 0, 0, open_unbuilt, read_unbuilt, close_unbuilt};
