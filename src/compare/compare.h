/*
 * compare.h - BASE against NEW: the step time, each zone's self time per
 * step, each GPU zone's GPU time per step, and the run-level figures, as `stepscope compare` prints them
 * (docs/compare.md).  sides.h reads the runs, inference.h judges each series,
 * render.h prints the result.  Not thread-safe: one thread builds, prints
 * and frees a result.
 */
#ifndef SPS_COMPARE_COMPARE_H
#define SPS_COMPARE_COMPARE_H

#include <stdio.h>

#include "compare/sides.h"
#include "compare/inference.h"

enum sps_cmp_presence {
    SPS_CMP_BOTH = 0,
    SPS_CMP_BASE_ONLY = 1, /* the zone is in no NEW step: it went away */
    SPS_CMP_NEW_ONLY = 2   /* the zone is in no BASE step: it is new */
};

/* One compared series: the step time, or a zone's self time per step. */
struct sps_cmp_row {
    char *name;
    enum sps_cmp_presence presence;
    struct sps_comparison c; /* per step, seconds; a zone's p is Holm-adjusted */
    double p_unadjusted;     /* the run-level test's own p */
    int wait;                /* a zone row: time blocked in a collective (kind wait) */
    /* a row of compare/ranks.h (else 0, NULL): its rank; the nearest-rank
     * p90 of the rank's steps on each side (NAN where a side lacks it);
     * each zone's self time per step in the rank's steps, phases and
     * collective waits alike, compared the same way (p Holm-adjusted over
     * every rank's phases), largest change of median first; none for a
     * rank one side lacks */
    int rank;
    double p90_base, p90_new;
    size_t nphases;
    struct sps_cmp_row *phases;
};

/* A run-level figure: the mean over each side's runs that have it. */
struct sps_cmp_figure {
    char label[96];   /* "peak RSS", "energy per step", "samples/s" */
    char unit[16];    /* "bytes", "J", "/s" */
    double base, new_; /* NAN where no run of that side has it */
    int higher_is_better;
};

struct sps_cmp_result {
    struct sps_compare_params params;
    struct sps_cmp_row step;
    size_t nzones;
    struct sps_cmp_row *zones; /* largest change of median self time first */
    /* each GPU zone's GPU time per step (its "<zone>.gpu_ms" values, in
     * seconds), over the steps whose row holds one: a step without is
     * absent, not 0 (sides.h says which value a row holds); p
     * Holm-adjusted over the GPU zones; largest change of median first */
    size_t ngpu;
    struct sps_cmp_row *gpu;
    /* the step time rank by rank (compare/ranks.h): rank r of BASE against
     * rank r of NEW, ascending; none unless the sides hold two ranks or
     * more between them (step is then every rank's steps pooled) */
    size_t nranks;
    struct sps_cmp_row *ranks;
    size_t nfigures;
    struct sps_cmp_figure *figures;
    char bottleneck_base[160]; /* "input-bound", or each run's when they differ; "" when none */
    char bottleneck_new[160];
    /* each run's step time, summarised (its median, drift and halves: the
     * A/A self-check), in the order of the side's runs */
    struct sps_run_summary *runs_base, *runs_new;
    /* "" or one line: the runs did not all run the same command */
    char command_warning[640];
    /* "" or one line: every run of one side started before every run of
     * the other (with 3 or more runs: a machine that changed between the
     * sessions looks like a change in the code) */
    char order_warning[320];
};

/*
 * Compare new_side against base.  Returns 0, SPS_ENOMEM, or SPS_EINVAL
 * (bad params; an empty side).  On failure *out holds nothing to free.
 */
int sps__cmp_build(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                   const struct sps_compare_params *params, struct sps_cmp_result *out);

void sps__cmp_result_free(struct sps_cmp_result *r);

/* Whether the result fails a CI gate: the step verdict is slower (never
 * with one run a side) and, with min_change > 0, the change is at least
 * that fraction.  Zones and GPU zones inform; they do not gate. */
int sps__cmp_regressed(const struct sps_cmp_result *r, double min_change);

#endif /* SPS_COMPARE_COMPARE_H */
