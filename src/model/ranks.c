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

/*
 * The phases (zone names) and the wait of a set of rows, in one pass over
 * the rows (a pass per name would read the whole step table again for
 * every name): column c of cols holds name zone[c]'s seconds in each
 * steady row (the last column: the waits'), 0 where the row has none.
 */
struct columns {
    size_t nzones;
    size_t *zone;   /* [nzones] indexes into run.names of kind zone */
    int *present;   /* [nzones] some row of the set holds it */
    double *total;  /* [nzones + 1] over all the rows */
    double *cols;   /* [(nzones + 1) * steady rows] */
};

static void columns_free(struct columns *c) {
    free(c->zone);
    free(c->present);
    free(c->total);
    free(c->cols);
}

static int columns_fill(const struct row_set *set, int all, size_t nsteady, struct columns *c) {
    const struct sps_run *run = set->run;
    memset(c, 0, sizeof *c);
    c->zone = malloc((run->nnames ? run->nnames : 1) * sizeof *c->zone);
    for (size_t k = 0; c->zone && k < run->nnames; k++)
        if (run->names[k].kind == SPS_KIND_ZONE)
            c->zone[c->nzones++] = k;
    c->present = calloc(c->nzones + 1, sizeof *c->present);
    c->total = calloc(c->nzones + 1, sizeof *c->total);
    c->cols = malloc((c->nzones + 1) * (nsteady ? nsteady : 1) * sizeof *c->cols);
    if (!c->zone || !c->present || !c->total || !c->cols)
        return SPS_ENOMEM;
    double *wait_col = c->cols + c->nzones * nsteady;
    for (size_t i = 0, m = 0; i < set->n; i++) {
        const double *by = run->steps[set->rows[i]].by_name;
        int keep = steady(set, i, all);
        for (size_t z = 0; z < c->nzones; z++) {
            double v = by[c->zone[z]];
            c->present[z] |= !isnan(v);
            v = isnan(v) ? 0.0 : v;
            c->total[z] += v;
            if (keep)
                c->cols[z * nsteady + m] = v;
        }
        double wait = 0;
        for (size_t k = 0; k < run->nnames; k++)
            if (run->names[k].kind == SPS_KIND_WAIT && !isnan(by[k]))
                wait += by[k];
        c->total[c->nzones] += wait;
        if (keep)
            wait_col[m++] = wait;
    }
    return 0;
}

static int fill_phases(const struct row_set *set, int all, size_t nsteady, struct sps_rank_view *v) {
    const struct sps_run *run = set->run;
    struct columns c;
    int rc = columns_fill(set, all, nsteady, &c);
    if (!rc && !(v->phases = calloc(c.nzones ? c.nzones : 1, sizeof *v->phases)))
        rc = SPS_ENOMEM;
    for (size_t z = 0; !rc && z < c.nzones; z++) {
        if (!c.present[z])
            continue;
        struct sps_rank_phase *ph = &v->phases[v->nphases++];
        memcpy(ph->name, run->names[c.zone[z]].name, sizeof ph->name);
        ph->self_median_s = sps__median_inplace(c.cols + z * nsteady, nsteady);
        ph->self_total_s = c.total[z];
    }
    int waits = 0; /* a run that recorded no wait measured none: unknown, not 0 */
    for (size_t k = 0; k < run->nnames; k++)
        waits |= run->names[k].kind == SPS_KIND_WAIT;
    if (!rc) {
        v->wait_median_s = waits ? sps__median_inplace(c.cols + c.nzones * nsteady, nsteady) : NAN;
        v->wait_total_s = waits ? c.total[c.nzones] : NAN;
    }
    columns_free(&c);
    return rc;
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
    return fill_phases(set, all, nsteady, v);
}

/* Whether no other process of pi's rank is its parent. */
static int is_root(const struct sps_run *run, const int *proc_rank, size_t pi) {
    for (size_t k = 0; k < run->nprocs; k++)
        if (k != pi && proc_rank[k] == proc_rank[pi] && run->procs[k].pid == run->procs[pi].ppid &&
            !strcmp(run->procs[k].hostname, run->procs[pi].hostname))
            return 0;
    return 1;
}

/* The run's rows grouped by rank, in one pass: the rows of the main step
 * name of rank ranks[i] are order[start[i] .. start[i + 1]), in row
 * order; order[0 .. start[n]) is every rank's (the pool). */
struct grouping {
    int *proc_rank;    /* [nprocs] sps__run_process_rank */
    size_t *proc_rows; /* [nprocs] rows of the main step name each process holds */
    int *ranks;        /* [n] distinct, ascending */
    size_t n;
    size_t *start;     /* [n + 1] */
    size_t *order;     /* [rows] */
    long step_name;    /* index into run.names; -1 without rows */
};

static void grouping_free(struct grouping *g) {
    free(g->proc_rank);
    free(g->proc_rows);
    free(g->ranks);
    free(g->start);
    free(g->order);
}

/* The place of rank in g->ranks (bisection); -1 when absent. */
static long rank_place(const struct grouping *g, int rank) {
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->ranks[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n && g->ranks[lo] == rank ? (long)lo : -1;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The ranks of the processes, distinct and ascending. */
static int group_processes(const struct sps_run *run, struct grouping *g) {
    size_t np = run->nprocs ? run->nprocs : 1;
    g->proc_rank = malloc(np * sizeof *g->proc_rank);
    g->proc_rows = calloc(np, sizeof *g->proc_rows);
    g->ranks = malloc(np * sizeof *g->ranks);
    if (!g->proc_rank || !g->proc_rows || !g->ranks)
        return SPS_ENOMEM;
    size_t m = 0;
    for (size_t pi = 0; pi < run->nprocs; pi++)
        if ((g->proc_rank[pi] = sps__run_process_rank(run, pi)) >= 0)
            g->ranks[m++] = g->proc_rank[pi];
    qsort(g->ranks, m, sizeof *g->ranks, cmp_int);
    for (size_t i = 0; i < m; i++)
        if (!g->n || g->ranks[g->n - 1] != g->ranks[i])
            g->ranks[g->n++] = g->ranks[i];
    return 0;
}

/* The main step name's rows of each rank (a counting sort by rank). */
static int group_rows(const struct sps_run *run, struct grouping *g) {
    g->start = calloc(g->n + 2, sizeof *g->start);
    g->order = malloc((run->nsteps ? run->nsteps : 1) * sizeof *g->order);
    long *place = malloc((run->nprocs ? run->nprocs : 1) * sizeof *place);
    if (!g->start || !g->order || !place) {
        free(place);
        return SPS_ENOMEM;
    }
    for (size_t pi = 0; pi < run->nprocs; pi++)
        place[pi] = g->proc_rank[pi] >= 0 ? rank_place(g, g->proc_rank[pi]) : -1;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (r->name != g->step_name || r->process >= run->nprocs || place[r->process] < 0)
            continue;
        g->start[place[r->process] + 2]++;
        g->proc_rows[r->process]++;
    }
    for (size_t k = 2; k < g->n + 2; k++)
        g->start[k] += g->start[k - 1];
    for (size_t i = 0; i < run->nsteps; i++) { /* start[k + 1]: the next free place of rank k */
        const struct sps_step_row *r = &run->steps[i];
        if (r->name == g->step_name && r->process < run->nprocs && place[r->process] >= 0)
            g->order[g->start[place[r->process] + 1]++] = i;
    }
    free(place);
    return 0;
}

/* The rank's main process: the one with the most of its rows, the root
 * of its processes among equals (a rank without rows: its root). */
static size_t main_process(const struct sps_run *run, const struct grouping *g, int rank) {
    size_t best = run->nprocs, best_rows = 0;
    int best_root = 0;
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        if (g->proc_rank[pi] != rank)
            continue;
        size_t mine = g->proc_rows[pi];
        int root = is_root(run, g->proc_rank, pi);
        if (best == run->nprocs || mine > best_rows || (mine == best_rows && root && !best_root)) {
            best = pi;
            best_rows = mine;
            best_root = root;
        }
    }
    return best;
}

/* Rank place k's view (k = n: the pool). */
static int build_rank(const struct sps_run *run, const struct grouping *g, size_t k, struct row_set *set,
                      struct sps_rank_view *v) {
    int rank = k < g->n ? g->ranks[k] : -1;
    set->rows = g->order + (k < g->n ? g->start[k] : 0);
    set->n = k < g->n ? g->start[k + 1] - g->start[k] : g->start[g->n];
    v->rank = rank;
    v->local_rank = v->world_size = -1;
    for (size_t pi = 0; pi < run->nprocs; pi++)
        v->processes += g->proc_rank[pi] >= 0 && (rank < 0 || g->proc_rank[pi] == rank);
    if (rank >= 0) {
        const struct sps_process_data *p = &run->procs[main_process(run, g, rank)];
        v->pid = p->pid;
        v->local_rank = p->local_rank;
        v->world_size = p->world_size;
        memcpy(v->hostname, p->hostname, sizeof v->hostname);
    }
    return fill_view(set, v);
}

int sps__ranks_build(const struct sps_run *run, struct sps_ranks *out) {
    memset(out, 0, sizeof *out);
    struct grouping g = {0};
    double *scratch = malloc((run->nsteps ? run->nsteps : 1) * sizeof *scratch);
    int rc = scratch ? group_processes(run, &g) : SPS_ENOMEM;
    if (!rc && g.n && !(out->rank = calloc(g.n, sizeof *out->rank)))
        rc = SPS_ENOMEM;
    g.step_name = rc ? -1 : main_step_name(run);
    if (!rc)
        rc = group_rows(run, &g);
    if (g.step_name >= 0)
        memcpy(out->step_name, run->names[g.step_name].name, sizeof out->step_name);
    struct row_set set = {run, NULL, 0, scratch};
    for (size_t k = 0; k < g.n && !rc; k++, out->n++)
        rc = build_rank(run, &g, k, &set, &out->rank[k]);
    if (!rc && g.n) {
        out->have_pooled = 1;
        rc = build_rank(run, &g, g.n, &set, &out->pooled);
    }
    grouping_free(&g);
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
