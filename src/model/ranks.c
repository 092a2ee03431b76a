/*
 * ranks.c - the run rank by rank (ranks.h): processes grouped by rank,
 * each rank's step rows reduced to its figures, and the same over the
 * pool of every rank's rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/ranks.h"
#include "stats.h"
#include "stepscope.h"

int sps__run_process_rank(const struct sps_run *run, size_t pi) {
    /* a bounded walk: a ppid cycle in hand-made input must end */
    for (size_t hops = 0; pi < run->nprocs && hops <= run->nprocs; hops++) {
        const struct sps_process_data *p = &run->procs[pi];
        if (p->rank >= 0)
            return p->rank;
        size_t parent = run->nprocs;
        for (size_t k = 0; k < run->nprocs; k++)
            if (k != pi && run->procs[k].pid == p->ppid && !strcmp(run->procs[k].hostname, p->hostname)) {
                parent = k;
                break;
            }
        pi = parent;
    }
    return -1;
}

/* The step name with the most rows (the first such in run.names); -1
 * without rows. */
static long main_step_name(const struct sps_run *run) {
    size_t *count = calloc(run->nnames ? run->nnames : 1, sizeof *count);
    long best = -1;
    if (!count) /* without the tally: the first row's name */
        return run->nsteps ? run->steps[0].name : -1;
    for (size_t i = 0; i < run->nsteps; i++)
        if (run->steps[i].name >= 0 && (size_t)run->steps[i].name < run->nnames)
            count[run->steps[i].name]++;
    for (size_t k = 0; k < run->nnames; k++)
        if (count[k] && (best < 0 || count[k] > count[best]))
            best = (long)k;
    free(count);
    return best;
}

/* Reduces a set of rows (indexes into run.steps) to a view's figures. */
struct row_set {
    const struct sps_run *run;
    const size_t *rows;
    size_t n;
    double *scratch; /* [n] */
};

static int steady(const struct row_set *set, size_t i, int all) {
    return all || !set->run->steps[set->rows[i]].warmup;
}

/* The p-th nearest-rank percentile of x[0..n) (sorted in place). */
static double percentile(double *x, size_t n, double p) {
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof *x, sps__cmp_double);
    size_t at = (size_t)ceil(p / 100.0 * (double)n);
    return x[at ? at - 1 : 0];
}

/* Seconds of the names of kind `kind` (name: only that one, else all of
 * the kind) inside row r; 0 when none. */
static double in_row(const struct sps_run *run, const struct sps_step_row *r, uint32_t kind, long name) {
    double sum = 0;
    for (size_t k = name >= 0 ? (size_t)name : 0; k < run->nnames; k++) {
        if (run->names[k].kind == kind && !isnan(r->by_name[k]))
            sum += r->by_name[k];
        if (name >= 0)
            break;
    }
    return sum;
}

/* The median over steady rows and the total over all rows of a name's
 * (or a kind's) time; *present: some row has it. */
static void time_of(const struct row_set *set, int all, uint32_t kind, long name, double *median, double *total,
                    int *present) {
    size_t m = 0;
    *total = 0;
    *present = 0;
    for (size_t i = 0; i < set->n; i++) {
        const struct sps_step_row *r = &set->run->steps[set->rows[i]];
        double v = in_row(set->run, r, kind, name);
        *present |= name >= 0 ? !isnan(r->by_name[name]) : v > 0;
        *total += v;
        if (steady(set, i, all))
            set->scratch[m++] = v;
    }
    *median = sps__median_inplace(set->scratch, m);
}

static int fill_phases(const struct row_set *set, int all, struct sps_rank_view *v) {
    const struct sps_run *run = set->run;
    v->phases = calloc(run->nnames ? run->nnames : 1, sizeof *v->phases);
    if (!v->phases)
        return SPS_ENOMEM;
    for (size_t k = 0; k < run->nnames; k++) {
        if (run->names[k].kind != SPS_KIND_ZONE)
            continue;
        struct sps_rank_phase *ph = &v->phases[v->nphases];
        int present;
        time_of(set, all, SPS_KIND_ZONE, (long)k, &ph->self_median_s, &ph->self_total_s, &present);
        if (!present)
            continue;
        memcpy(ph->name, run->names[k].name, sizeof ph->name);
        v->nphases++;
    }
    return 0;
}

/* The figures of v from the rows of set. */
static int fill_view(const struct row_set *set, struct sps_rank_view *v) {
    size_t nsteady = 0;
    v->steps = set->n;
    v->step_total_s = 0;
    for (size_t i = 0; i < set->n; i++) {
        const struct sps_step_row *r = &set->run->steps[set->rows[i]];
        double d = (double)(r->end_ns - r->start_ns) / 1e9;
        v->warmup_steps += r->warmup != 0;
        v->step_total_s += d;
    }
    int all = v->warmup_steps == v->steps; /* every step warm-up: all of them stand */
    for (size_t i = 0; i < set->n; i++)
        if (steady(set, i, all)) {
            const struct sps_step_row *r = &set->run->steps[set->rows[i]];
            set->scratch[nsteady++] = (double)(r->end_ns - r->start_ns) / 1e9;
        }
    v->step_median_s = sps__median_inplace(set->scratch, nsteady);
    v->step_p90_s = percentile(set->scratch, nsteady, 90);
    int present;
    time_of(set, all, SPS_KIND_WAIT, -1, &v->wait_median_s, &v->wait_total_s, &present);
    if (!set->n)
        v->wait_median_s = NAN;
    return fill_phases(set, all, v);
}

/* Whether no other process of pi's rank is its parent. */
static int is_root(const struct sps_run *run, const int *proc_rank, size_t pi) {
    for (size_t k = 0; k < run->nprocs; k++)
        if (k != pi && proc_rank[k] == proc_rank[pi] && run->procs[k].pid == run->procs[pi].ppid &&
            !strcmp(run->procs[k].hostname, run->procs[pi].hostname))
            return 0;
    return 1;
}

/* The rank's main process: the one with the most of its rows, the root
 * of its processes among equals (a rank without rows: its root). */
static size_t main_process(const struct sps_run *run, const int *proc_rank, int rank, const size_t *rows, size_t n) {
    size_t best = run->nprocs, best_rows = 0;
    int best_root = 0;
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        if (proc_rank[pi] != rank)
            continue;
        size_t mine = 0;
        for (size_t i = 0; i < n; i++)
            mine += run->steps[rows[i]].process == pi;
        int root = is_root(run, proc_rank, pi);
        if (best == run->nprocs || mine > best_rows || (mine == best_rows && root && !best_root)) {
            best = pi;
            best_rows = mine;
            best_root = root;
        }
    }
    return best;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The distinct ranks of proc_rank, ascending, into ranks (room for
 * nprocs); returns how many. */
static size_t distinct_ranks(const int *proc_rank, size_t nprocs, int *ranks) {
    size_t n = 0;
    for (size_t pi = 0; pi < nprocs; pi++)
        if (proc_rank[pi] >= 0)
            ranks[n++] = proc_rank[pi];
    qsort(ranks, n, sizeof *ranks, cmp_int);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || ranks[u - 1] != ranks[i])
            ranks[u++] = ranks[i];
    return u;
}

/* The rows of the main step name whose process is of rank (any rank:
 * rank < 0) into rows; returns how many. */
static size_t rows_of(const struct sps_run *run, const int *proc_rank, long step_name, int rank, size_t *rows) {
    size_t n = 0;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (r->name != step_name || r->process >= run->nprocs)
            continue;
        int pr = proc_rank[r->process];
        if (pr >= 0 && (rank < 0 || pr == rank))
            rows[n++] = i;
    }
    return n;
}

static int build_rank(const struct sps_run *run, const int *proc_rank, long step_name, int rank,
                      struct row_set *set, size_t *rows, struct sps_rank_view *v) {
    set->rows = rows;
    set->n = rows_of(run, proc_rank, step_name, rank, rows);
    v->rank = rank;
    v->local_rank = v->world_size = -1;
    for (size_t pi = 0; pi < run->nprocs; pi++)
        v->processes += proc_rank[pi] >= 0 && (rank < 0 || proc_rank[pi] == rank);
    if (rank >= 0) {
        size_t main = main_process(run, proc_rank, rank, rows, set->n);
        const struct sps_process_data *p = &run->procs[main];
        v->pid = p->pid;
        v->local_rank = p->local_rank;
        v->world_size = p->world_size;
        memcpy(v->hostname, p->hostname, sizeof v->hostname);
    }
    return fill_view(set, v);
}

int sps__ranks_build(const struct sps_run *run, struct sps_ranks *out) {
    memset(out, 0, sizeof *out);
    size_t np = run->nprocs ? run->nprocs : 1, ns = run->nsteps ? run->nsteps : 1;
    int *proc_rank = malloc(np * sizeof *proc_rank), *ranks = malloc(np * sizeof *ranks);
    size_t *rows = malloc(ns * sizeof *rows);
    double *scratch = malloc(ns * sizeof *scratch);
    int rc = proc_rank && ranks && rows && scratch ? 0 : SPS_ENOMEM;
    size_t nranks = 0;
    if (!rc) {
        for (size_t pi = 0; pi < run->nprocs; pi++)
            proc_rank[pi] = sps__run_process_rank(run, pi);
        nranks = distinct_ranks(proc_rank, run->nprocs, ranks);
        if (nranks && !(out->rank = calloc(nranks, sizeof *out->rank)))
            rc = SPS_ENOMEM;
    }
    long step_name = rc ? -1 : main_step_name(run);
    if (step_name >= 0)
        memcpy(out->step_name, run->names[step_name].name, sizeof out->step_name);
    struct row_set set = {run, rows, 0, scratch};
    for (size_t i = 0; i < nranks && !rc; i++, out->n++)
        rc = build_rank(run, proc_rank, step_name, ranks[i], &set, rows, &out->rank[i]);
    if (!rc && nranks) {
        out->have_pooled = 1;
        rc = build_rank(run, proc_rank, step_name, -1, &set, rows, &out->pooled);
    }
    free(proc_rank);
    free(ranks);
    free(rows);
    free(scratch);
    if (rc)
        sps__ranks_free(out);
    return rc;
}

void sps__ranks_free(struct sps_ranks *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->rank[i].phases);
    free(r->rank);
    free(r->pooled.phases);
    memset(r, 0, sizeof *r);
}
