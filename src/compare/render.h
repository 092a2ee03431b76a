/*
 * render.h - a comparison for a person (a terminal table), for a pull
 * request (Markdown) or for a program (JSON).  docs/compare.md shows each.
 * Not thread-safe (one result, one stream).
 */
#ifndef SPS_COMPARE_RENDER_H
#define SPS_COMPARE_RENDER_H

#include <stdio.h>

#include "compare/compare.h"

enum sps_cmp_format { SPS_CMP_TEXT, SPS_CMP_MARKDOWN, SPS_CMP_JSON };

/* Zones shown in the text and Markdown tables (the JSON has all). */
#define SPS_CMP_ZONES_SHOWN 15
/* Runs of a side listed, each with its median and drift, in the text form. */
#define SPS_CMP_RUNS_SHOWN 8

/*
 * Print r to f.  colour: ANSI colours in the text form (the caller decides:
 * a terminal, NO_COLOR unset).  Returns 0, or SPS_EIO when f could not be
 * written, SPS_ENOMEM.
 */
int sps__cmp_render(FILE *f, enum sps_cmp_format format, int colour, const struct sps_cmp_result *r,
                    const struct sps_cmp_side *base, const struct sps_cmp_side *new_side);

#endif /* SPS_COMPARE_RENDER_H */
