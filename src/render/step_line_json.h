/*
 * step_line_json.h - one step as one line of JSON: a line of the live
 * stream DIR/steps.jsonl, and what stepscope.last_step() parses into a
 * dict.  One writer for both, so they have the same keys
 * (docs/stream-format.md).
 */
#ifndef SPS_RENDER_STEP_LINE_JSON_H
#define SPS_RENDER_STEP_LINE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "step_line.h"

/* The name of id in the record l came from ("" or NULL when unknown). */
typedef const char *(*sps__step_name_fn)(void *ctx, uint32_t id);

/*
 * Write l as one JSON object and a newline into buf (cap bytes, NUL
 * ended).  Returns the length without the NUL, or -1 when cap is too
 * small (SPS_STEP_LINE_JSON_MAX always suffices).  Pure; thread-safe.
 */
#define SPS_STEP_LINE_JSON_MAX 65536
int sps__step_line_json(const struct sps__step_line *l, sps__step_name_fn name_of, void *ctx, char *buf, size_t cap);

/*
 * The line that says steps of a thread never reached the stream (its
 * steps ring overwrote them before they were read, or refused them):
 * {"steps_lost": count, "first_step": first, "last_step": first+count-1,
 * "pid", "rank", "thread"}.  Same return as above.
 */
int sps__steps_lost_json(uint64_t count, uint64_t first, int pid, int rank, int tid, char *buf, size_t cap);

#endif /* SPS_RENDER_STEP_LINE_JSON_H */
