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

/* How a phase of a rank (compare/ranks.h) stands. */
enum sps_cmp_standing {
    SPS_CMP_UNREMARKABLE = 0, /* same, too few steps, or inconclusive */
    SPS_CMP_CONCLUSIVE = 1,   /* slower or faster */
    /* one run a side (no slower or faster possible), yet the change is
     * beyond the runs' own drift, p adjusted: named, and said to be that */
    SPS_CMP_BEYOND_DRIFT = 2
};

enum sps_cmp_standing sps__cmp_phase_standing(const struct sps_compare_params *p, const struct sps_cmp_row *phase);

/* A rank's changes shown on its line (the JSON has every phase). */
#define SPS_CMP_RANK_CHANGES_SHOWN 3

/*
 * The line a rank gets: its phases that stand out, largest change first,
 * each "data 114 us -> 21.0 ms +18321% slower" (markdown: the name
 * escaped, the verdict in bold), up to SPS_CMP_RANK_CHANGES_SHOWN then
 * "; N more"; "no phase or wait changed conclusively"; or "not in new" /
 * "not in base" for a rank one side lacks.  Returns how many stand out.
 */
size_t sps__cmp_rank_line(const struct sps_compare_params *p, const struct sps_cmp_row *rank, int markdown,
                          char *buf, size_t len);

#endif /* SPS_COMPARE_RENDER_H */
