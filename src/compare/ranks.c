/*
 * ranks.c - BASE against NEW rank by rank: each rank's step time, its step
 * p90, and each phase's self time and collective wait in the rank's steps
 * (see ranks.h).
 *
 * Under DDP every rank's step ends at the same all-reduce, so every rank's
 * step time moves together when one rank slows: the step lines cannot say
 * which rank did.  The phases can: the slow rank's own phase grows (its
 * data, say), the others' wait grows.  Each rank's steps are gathered once
 * per side (their indices run by run), and every series of the rank is
 * read through those indices into one scratch buffer a run, so comparing
 * R ranks of Z zones costs about (R + Z) passes over the steps, not a
 * copy of each series.
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

/* One side's steps of a rank, run by run (runs without any left out):
 * where they are, and a buffer a run that gather() fills with one series
 * of them, as inference.h takes them. */
struct rank_side {
    const struct sps_cmp_run **run; /* [nruns] */
    size_t **idx;                   /* [nruns][len] the rank's kept steps in the run */
    double **buf;                   /* [nruns][len] */
    size_t *len;
    size_t nruns;
};

static void rank_side_free(struct rank_side *rs) {
    for (size_t i = 0; i < rs->nruns; i++) {
        free(rs->idx[i]);
        free(rs->buf[i]);
    }
    free(rs->run);
    free(rs->idx);
    free(rs->buf);
    free(rs->len);
    memset(rs, 0, sizeof *rs);
}

static int rank_side(const struct sps_cmp_side *side, int rank, struct rank_side *rs) {
    memset(rs, 0, sizeof *rs);
    size_t cap = side->nruns ? side->nruns : 1;
    rs->run = calloc(cap, sizeof *rs->run);
    rs->idx = calloc(cap, sizeof *rs->idx);
    rs->buf = calloc(cap, sizeof *rs->buf);
    rs->len = calloc(cap, sizeof *rs->len);
    if (!rs->run || !rs->idx || !rs->buf || !rs->len) {
        rank_side_free(rs);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < side->nruns; i++) {
        const struct sps_cmp_run *run = &side->runs[i];
        size_t m = 0;
        for (size_t k = 0; run->step_rank && k < run->nsteps; k++)
            m += run->step_rank[k] == rank;
        if (m == 0)
            continue;
        size_t *idx = malloc(m * sizeof *idx);
        double *buf = malloc(m * sizeof *buf);
        if (!idx || !buf) {
            free(idx);
            free(buf);
            rank_side_free(rs);
            return SPS_ENOMEM;
        }
        m = 0;
        for (size_t k = 0; k < run->nsteps; k++)
            if (run->step_rank[k] == rank)
                idx[m++] = k;
        rs->run[rs->nruns] = run;
        rs->idx[rs->nruns] = idx;
        rs->buf[rs->nruns] = buf;
        rs->len[rs->nruns++] = m;
    }
    return 0;
}

/* Fill the buffers with the rank's step times (zone NULL) or the zone's
 * self time in the rank's steps (0 in a run without the zone).  Whether
 * any of them is above 0. */
static int gather(struct rank_side *rs, const char *zone) {
    int any = 0;
    for (size_t i = 0; i < rs->nruns; i++) {
        const struct sps_cmp_zone *z = zone ? sps__cmp_run_zone(rs->run[i], zone) : NULL;
        const double *src = !zone ? rs->run[i]->step_s : z ? z->self_s : NULL;
        for (size_t k = 0; k < rs->len[i]; k++) {
            double v = src ? src[rs->idx[i][k]] : 0;
            rs->buf[i][k] = v;
            any |= v > 0;
        }
    }
    return any;
}

/* The p-th percentile (50: the median) of every value in the buffers. */
static double pooled_percentile(const struct rank_side *rs, double p) {
    size_t n = 0;
    for (size_t i = 0; i < rs->nruns; i++)
        n += rs->len[i];
    double *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return NAN;
    size_t m = 0;
    for (size_t i = 0; i < rs->nruns; i++) {
        memcpy(all + m, rs->buf[i], rs->len[i] * sizeof *all);
        m += rs->len[i];
    }
    double v = p == 50 ? sps__median_inplace(all, m) : sps__percentile_inplace(all, m, p);
    free(all);
    return v;
}

static int compare_buffers(const struct rank_side *b, const struct rank_side *n,
                           const struct sps_compare_params *params, struct sps_comparison *out) {
    struct sps_sample_side sb = {(const double *const *)b->buf, b->len, b->nruns};
    struct sps_sample_side sn = {(const double *const *)n->buf, n->len, n->nruns};
    return sps__compare(&sb, &sn, params, out);
}

static double abs_median_change(const struct sps_cmp_row *r) {
    double b = isfinite(r->c.median_base) ? r->c.median_base : 0, n = isfinite(r->c.median_new) ? r->c.median_new : 0;
    return fabs(n - b);
}

static int cmp_phases(const void *pa, const void *pb) {
    double a = abs_median_change(pa), b = abs_median_change(pb);
    if (a != b)
        return a < b ? 1 : -1;
    return strcmp(((const struct sps_cmp_row *)pa)->name, ((const struct sps_cmp_row *)pb)->name);
}

/* Each zone's self time in the rank's steps, both sides, into row->phases. */
static int compare_phases(struct rank_side *b, struct rank_side *n, const struct sps_compare_params *params,
                          const struct sps_cmp_row *zones, size_t nzones, struct sps_cmp_row *row) {
    if (!nzones)
        return 0;
    if (!(row->phases = calloc(nzones, sizeof *row->phases)))
        return SPS_ENOMEM;
    for (size_t z = 0; z < nzones; z++) {
        struct sps_cmp_row *ph = &row->phases[row->nphases];
        if (!(ph->name = strdup(zones[z].name)))
            return SPS_ENOMEM;
        row->nphases++;
        ph->wait = zones[z].wait;
        ph->rank = row->rank;
        ph->p90_base = ph->p90_new = NAN;
        int in_base = gather(b, zones[z].name), in_new = gather(n, zones[z].name);
        ph->presence = in_base && !in_new ? SPS_CMP_BASE_ONLY : in_new && !in_base ? SPS_CMP_NEW_ONLY : SPS_CMP_BOTH;
        int rc = compare_buffers(b, n, params, &ph->c);
        if (rc)
            return rc;
        ph->p_unadjusted = ph->c.p;
    }
    return 0;
}

/* The rank's row when one side lacks it: each side's median, no verdict. */
static void one_sided(struct rank_side *b, struct rank_side *n, int rank, struct sps_cmp_row *row) {
    row->presence = b->nruns ? SPS_CMP_BASE_ONLY : SPS_CMP_NEW_ONLY;
    struct sps_comparison *c = &row->c;
    c->median_base = b->nruns ? pooled_percentile(b, 50) : NAN;
    c->median_new = n->nruns ? pooled_percentile(n, 50) : NAN;
    c->mean_base = c->mean_new = c->ratio = c->ratio_lo = c->ratio_hi = NAN;
    c->noise_between = c->noise_drift = NAN;
    c->p = 1;
    c->runs_base = b->nruns;
    c->runs_new = n->nruns;
    c->verdict = SPS_VERDICT_NONE;
    snprintf(c->why, sizeof c->why, "rank %d has no steps in %s", rank, b->nruns ? "NEW" : "BASE");
}

/* Compare rank's steps of the two sides into row. */
static int compare_rank(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                        const struct sps_compare_params *params, const struct sps_cmp_row *zones, size_t nzones,
                        int rank, struct sps_cmp_row *row) {
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
    gather(&b, NULL);
    gather(&n, NULL);
    row->p90_base = b.nruns ? pooled_percentile(&b, 90) : NAN;
    row->p90_new = n.nruns ? pooled_percentile(&n, 90) : NAN;
    int rc = 0;
    if (b.nruns && n.nruns) {
        row->presence = SPS_CMP_BOTH;
        rc = compare_buffers(&b, &n, params, &row->c);
        /* too few steps for a verdict: each side's median still says where the rank stands */
        if (!rc && !isfinite(row->c.median_base))
            row->c.median_base = pooled_percentile(&b, 50);
        if (!rc && !isfinite(row->c.median_new))
            row->c.median_new = pooled_percentile(&n, 50);
        if (!rc)
            rc = compare_phases(&b, &n, params, zones, nzones, row);
    } else {
        one_sided(&b, &n, rank, row);
    }
    row->p_unadjusted = row->c.p;
    rank_side_free(&b);
    rank_side_free(&n);
    return rc;
}

/* Holm over the rows that got a verdict: many ranks are many tests, and
 * ranks x phases more.  rows[i] when phases is 0, else every rows[i]'s
 * phases, as one family. */
static int adjust(const struct sps_compare_params *params, struct sps_cmp_row *rows, size_t n, int phases) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += phases ? rows[i].nphases : 1;
    double *p = malloc((total ? total : 1) * sizeof *p);
    struct sps_cmp_row **at = malloc((total ? total : 1) * sizeof *at);
    int rc = p && at ? 0 : SPS_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        size_t k0 = phases ? rows[i].nphases : 1;
        for (size_t k = 0; k < k0; k++) {
            struct sps_cmp_row *row = phases ? &rows[i].phases[k] : &rows[i];
            if (row->c.verdict != SPS_VERDICT_NONE) {
                p[m] = row->c.p;
                at[m++] = row;
            }
        }
    }
    if (!rc)
        rc = sps__holm_adjust(p, m);
    for (size_t k = 0; !rc && k < m; k++) {
        at[k]->c.p = p[k];
        sps__compare_decide(params, &at[k]->c);
    }
    free(p);
    free(at);
    return rc;
}

void sps__cmp_rank_rows_free(struct sps_cmp_row *rows, size_t n) {
    for (size_t i = 0; rows && i < n; i++) {
        for (size_t k = 0; k < rows[i].nphases; k++)
            free(rows[i].phases[k].name);
        free(rows[i].phases);
        free(rows[i].name);
    }
    free(rows);
}

int sps__cmp_ranks(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                   const struct sps_compare_params *params, const struct sps_cmp_row *zones, size_t nzones,
                   struct sps_cmp_row **rows, size_t *n) {
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
    for (size_t i = 0; i < nranks && !rc; i++)
        rc = compare_rank(base, new_side, params, zones, nzones, ranks[i], &out[i]);
    if (!rc)
        rc = adjust(params, out, nranks, 0);
    if (!rc)
        rc = adjust(params, out, nranks, 1);
    for (size_t i = 0; i < nranks && !rc; i++)
        if (out[i].nphases)
            qsort(out[i].phases, out[i].nphases, sizeof *out[i].phases, cmp_phases);
    free(ranks);
    if (rc) {
        sps__cmp_rank_rows_free(out, nranks);
        return rc;
    }
    *rows = out;
    *n = nranks;
    return 0;
}
