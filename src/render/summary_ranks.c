/*
 * summary_ranks.c - the terminal summary's per-rank table (two ranks or
 * more): each rank's host, pid, steps, step time median and p90, time
 * waiting in collectives and its largest phases' self time per step, and
 * the pooled row; and the line saying the zone table pools the ranks.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render.h"

/* Phases shown as columns: the pool's largest by total self time. */
#define PHASE_COLUMNS 4

static const struct sps_rank_phase *phase_of(const struct sps_rank_view *v, const char *name) {
    for (size_t i = 0; i < v->nphases; i++)
        if (!strcmp(v->phases[i].name, name))
            return &v->phases[i];
    return NULL;
}

void sps__summary_pooled_note(FILE *f, const struct sps_report *rep) {
    const struct sps_ranks *r = &rep->ranks;
    if (r->n >= 2)
        fprintf(f, "zones: all %zu ranks pooled (each rank's own figures: the ranks table below)\n", r->n);
}

static void print_row(FILE *f, const char *label, const struct sps_rank_view *v, const struct sps_rank_view *pool,
                      size_t ncols) {
    char med[32], p90[32], wait[32], host[24], pid[16];
    snprintf(host, sizeof host, "%s", v->rank >= 0 ? v->hostname : "");
    pid[0] = '\0';
    if (v->rank >= 0)
        snprintf(pid, sizeof pid, "%d", v->pid);
    fprintf(f, "%-6s %-16.16s %8s %7llu %10s %10s %10s", label, host, pid, (unsigned long long)v->steps,
            sps__fmt_seconds(v->step_median_s, med, sizeof med), sps__fmt_seconds(v->step_p90_s, p90, sizeof p90),
            sps__fmt_seconds(v->wait_median_s, wait, sizeof wait));
    for (size_t c = 0; c < ncols; c++) {
        const struct sps_rank_phase *ph = phase_of(v, pool->phases[c].name);
        char t[32];
        fprintf(f, " %10s", sps__fmt_seconds(ph ? ph->self_median_s : NAN, t, sizeof t));
    }
    fputc('\n', f);
}

void sps__summary_ranks(FILE *f, const struct sps_report *rep) {
    const struct sps_ranks *r = &rep->ranks;
    if (r->n < 2 || !r->have_pooled)
        return;
    const struct sps_rank_view *pool = &r->pooled;
    size_t ncols = pool->nphases < PHASE_COLUMNS ? pool->nphases : PHASE_COLUMNS;
    fprintf(f, "ranks: %zu, \"%s\" steps; median and p90 of each rank's steps after warm-up, wait and phases "
               "as self time per step (median)\n",
            r->n, r->step_name[0] ? r->step_name : "no");
    fprintf(f, "%-6s %-16s %8s %7s %10s %10s %10s", "rank", "host", "pid", "steps", "median", "p90", "wait");
    for (size_t c = 0; c < ncols; c++)
        fprintf(f, " %10.10s", pool->phases[c].name);
    fputc('\n', f);
    for (size_t i = 0; i < r->n; i++) {
        char label[16];
        snprintf(label, sizeof label, "%d", r->rank[i].rank);
        print_row(f, label, &r->rank[i], pool, ncols);
    }
    print_row(f, "pooled", pool, pool, ncols);
}
