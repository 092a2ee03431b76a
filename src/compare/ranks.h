/*
 * ranks.h - `stepscope compare` rank by rank: the step time of rank r of
 * BASE against rank r of NEW, for every rank either side has, beside the
 * pooled step line (compare.h).  A rank one side lacks is a row saying
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
 * ranks compared, p_unadjusted the rank's own.  Returns 0 or SPS_ENOMEM
 * (then nothing to free).
 */
int sps__cmp_ranks(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                   const struct sps_compare_params *params, struct sps_cmp_row **rows, size_t *n);

#endif /* SPS_COMPARE_RANKS_H */
