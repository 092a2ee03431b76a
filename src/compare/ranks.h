/*
 * ranks.h - `stepscope compare` rank by rank: the step time, step p90,
 * each phase's self time and each collective wait of rank r of BASE
 * against rank r of NEW, for every rank either side has, beside the
 * pooled lines (compare.h).  A rank one side lacks is a row saying
 * so.  Not thread-safe: one result, one thread.
 */
#ifndef SPS_COMPARE_RANKS_H
#define SPS_COMPARE_RANKS_H

#include <stddef.h>

#include "compare/compare.h"

/*
 * One row a rank, ascending, into *rows (*n of them; none when the sides
 * hold fewer than two ranks between them: then the pooled line is the
 * only one).  A row's name is "rank R"; its p is Holm-adjusted over the
 * ranks compared, p_unadjusted the rank's own; p90_base, p90_new its
 * steps' p90 each side.  For a rank both sides have, its phases: each of
 * zones[0..nzones) (the pooled zone rows: their names and wait flags) in
 * the rank's steps, p Holm-adjusted over every rank's phases together.
 * Returns 0 or SPS_ENOMEM (then nothing to free).
 */
int sps__cmp_ranks(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                   const struct sps_compare_params *params, const struct sps_cmp_row *zones, size_t nzones,
                   struct sps_cmp_row **rows, size_t *n);

/* Free rows[0..n) as sps__cmp_ranks made them (their names and phases). */
void sps__cmp_rank_rows_free(struct sps_cmp_row *rows, size_t n);

#endif /* SPS_COMPARE_RANKS_H */
