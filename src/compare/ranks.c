/*
 * ranks.c - the step time compared rank by rank (see ranks.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/ranks.h"
#include "stats.h"
#include "stepscope.h"

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The distinct ranks of both sides' kept steps, ascending, into *out. */
static int ranks_of(const struct sps_cmp_side *const sides[2], int **out, size_t *n) {
    size_t total = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->nruns; i++)
            total += sides[s]->runs[i].nsteps;
    int *r = malloc((total ? total : 1) * sizeof *r);
    if (!r)
        return SPS_ENOMEM;
    size_t m = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->nruns; i++) {
            const struct sps_cmp_run *run = &sides[s]->runs[i];
            for (size_t k = 0; run->step_rank && k < run->nsteps; k++)
                if (run->step_rank[k] >= 0 && (m == 0 || r[m - 1] != run->step_rank[k]))
                    r[m++] = run->step_rank[k];
        }
    qsort(r, m, sizeof *r, cmp_int);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (!u || r[u - 1] != r[i])
            r[u++] = r[i];
    *out = r;
    *n = u;
    return 0;
}

/* One side's steps of rank, run by run (runs without any left out), as
 * inference.h takes them; the arrays are the caller's to free. */
struct rank_side {
    double **runs;
    size_t *len;
    size_t nruns;
};

static void rank_side_free(struct rank_side *rs) {
    for (size_t i = 0; rs->runs && i < rs->nruns; i++)
        free(rs->runs[i]);
    free(rs->runs);
    free(rs->len);
    memset(rs, 0, sizeof *rs);
}

static int rank_side(const struct sps_cmp_side *side, int rank, struct rank_side *rs) {
    memset(rs, 0, sizeof *rs);
    size_t cap = side->nruns ? side->nruns : 1;
    rs->runs = calloc(cap, sizeof *rs->runs);
    rs->len = calloc(cap, sizeof *rs->len);
    if (!rs->runs || !rs->len) {
        rank_side_free(rs);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < side->nruns; i++) {
        const struct sps_cmp_run *run = &side->runs[i];
        double *d = malloc((run->nsteps ? run->nsteps : 1) * sizeof *d);
        if (!d) {
            rank_side_free(rs);
            return SPS_ENOMEM;
        }
        size_t m = 0;
        for (size_t k = 0; run->step_rank && k < run->nsteps; k++)
            if (run->step_rank[k] == rank)
                d[m++] = run->step_s[k];
        if (m == 0) {
            free(d);
            continue;
        }
        rs->runs[rs->nruns] = d;
        rs->len[rs->nruns++] = m;
    }
    return 0;
}

/* The median of every step of a side's rank (for the side that has it
 * when the other does not). */
static double side_median(const struct rank_side *rs) {
    size_t n = 0;
    for (size_t i = 0; i < rs->nruns; i++)
        n += rs->len[i];
    double *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return NAN;
    size_t m = 0;
    for (size_t i = 0; i < rs->nruns; i++)
        for (size_t k = 0; k < rs->len[i]; k++)
            all[m++] = rs->runs[i][k];
    double med = sps__median_inplace(all, m);
    free(all);
    return med;
}

/* Compare rank's steps of the two sides into row. */
static int compare_rank(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                        const struct sps_compare_params *params, int rank, struct sps_cmp_row *row) {
    char name[32];
    snprintf(name, sizeof name, "rank %d", rank);
    if (!(row->name = strdup(name)))
        return SPS_ENOMEM;
    row->rank = rank;
    struct rank_side b, n;
    if (rank_side(base, rank, &b))
        return SPS_ENOMEM;
    if (rank_side(new_side, rank, &n)) {
        rank_side_free(&b);
        return SPS_ENOMEM;
    }
    int rc = 0;
    if (b.nruns && n.nruns) {
        row->presence = SPS_CMP_BOTH;
        struct sps_sample_side sb = {(const double *const *)b.runs, b.len, b.nruns};
        struct sps_sample_side sn = {(const double *const *)n.runs, n.len, n.nruns};
        rc = sps__compare(&sb, &sn, params, &row->c);
        /* too few steps for a verdict: each side's median still says where the rank stands */
        if (!rc && !isfinite(row->c.median_base))
            row->c.median_base = side_median(&b);
        if (!rc && !isfinite(row->c.median_new))
            row->c.median_new = side_median(&n);
    } else {
        row->presence = b.nruns ? SPS_CMP_BASE_ONLY : SPS_CMP_NEW_ONLY;
        struct sps_comparison *c = &row->c;
        c->median_base = b.nruns ? side_median(&b) : NAN;
        c->median_new = n.nruns ? side_median(&n) : NAN;
        c->mean_base = c->mean_new = c->ratio = c->ratio_lo = c->ratio_hi = NAN;
        c->noise_between = c->noise_drift = NAN;
        c->p = 1;
        c->runs_base = b.nruns;
        c->runs_new = n.nruns;
        c->verdict = SPS_VERDICT_NONE;
        snprintf(c->why, sizeof c->why, "rank %d has no steps in %s", rank, b.nruns ? "NEW" : "BASE");
    }
    row->p_unadjusted = row->c.p;
    rank_side_free(&b);
    rank_side_free(&n);
    return rc;
}

/* Holm over the ranks that got a verdict: many ranks are many tests. */
static int adjust(const struct sps_compare_params *params, struct sps_cmp_row *rows, size_t n) {
    double *p = malloc((n ? n : 1) * sizeof *p);
    size_t *at = malloc((n ? n : 1) * sizeof *at);
    int rc = p && at ? 0 : SPS_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; !rc && i < n; i++)
        if (rows[i].c.verdict != SPS_VERDICT_NONE) {
            p[m] = rows[i].c.p;
            at[m++] = i;
        }
    if (!rc)
        rc = sps__holm_adjust(p, m);
    for (size_t k = 0; !rc && k < m; k++) {
        rows[at[k]].c.p = p[k];
        sps__compare_decide(params, &rows[at[k]].c);
    }
    free(p);
    free(at);
    return rc;
}

int sps__cmp_ranks(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                   const struct sps_compare_params *params, struct sps_cmp_row **rows, size_t *n) {
    const struct sps_cmp_side *const sides[2] = {base, new_side};
    int *ranks = NULL;
    size_t nranks = 0;
    *rows = NULL;
    *n = 0;
    int rc = ranks_of(sides, &ranks, &nranks);
    if (rc || nranks < 2) {
        free(ranks);
        return rc;
    }
    struct sps_cmp_row *out = calloc(nranks, sizeof *out);
    if (!out) {
        free(ranks);
        return SPS_ENOMEM;
    }
    size_t done = 0;
    for (; done < nranks && !rc; done++)
        rc = compare_rank(base, new_side, params, ranks[done], &out[done]);
    if (!rc)
        rc = adjust(params, out, nranks);
    free(ranks);
    if (rc) {
        for (size_t i = 0; i < done; i++)
            free(out[i].name);
        free(out);
        return rc;
    }
    *rows = out;
    *n = nranks;
    return 0;
}
