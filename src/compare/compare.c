/*
 * compare.c - BASE against NEW, series by series (see compare.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/compare.h"
#include "compare/ranks.h"
#include "stepscope.h"

/* A side's per-run arrays of one series, as inference.h takes them.  A zone
 * missing from a run is zeros over that run's steps (zeros is long
 * enough for the longest run). */
struct series {
    const double **runs;
    size_t *len;
};

static int series_of(const struct sps_cmp_side *side, const char *zone, const double *zeros, struct series *s) {
    s->runs = malloc((side->nruns ? side->nruns : 1) * sizeof *s->runs);
    s->len = malloc((side->nruns ? side->nruns : 1) * sizeof *s->len);
    if (!s->runs || !s->len) {
        free(s->runs);
        free(s->len);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < side->nruns; i++) {
        const struct sps_cmp_run *run = &side->runs[i];
        const struct sps_cmp_zone *z = zone ? sps__cmp_run_zone(run, zone) : NULL;
        s->runs[i] = !zone ? run->step_s : z ? z->self_s : zeros;
        s->len[i] = run->nsteps;
    }
    return 0;
}

static void series_free(struct series *s) {
    free(s->runs);
    free(s->len);
}

static int compare_series(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side, const char *zone,
                          const double *zeros, const struct sps_compare_params *p, struct sps_comparison *out) {
    struct series sb, sn;
    if (series_of(base, zone, zeros, &sb))
        return SPS_ENOMEM;
    if (series_of(new_side, zone, zeros, &sn)) {
        series_free(&sb);
        return SPS_ENOMEM;
    }
    struct sps_sample_side b = {sb.runs, sb.len, base->nruns}, n = {sn.runs, sn.len, new_side->nruns};
    int rc = sps__compare(&b, &n, p, out);
    series_free(&sb);
    series_free(&sn);
    return rc;
}

static int side_has_zone(const struct sps_cmp_side *side, const char *name) {
    for (size_t i = 0; i < side->nruns; i++)
        if (sps__cmp_run_zone(&side->runs[i], name))
            return 1;
    return 0;
}

/* Whether the zone named name is a collective wait in a run of either side. */
static int zone_is_wait(const struct sps_cmp_side *const sides[2], const char *name) {
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->nruns; i++) {
            const struct sps_cmp_zone *z = sps__cmp_run_zone(&sides[s]->runs[i], name);
            if (z && z->wait)
                return 1;
        }
    return 0;
}

/* Add name to the list of zone names unless it is there. */
static int add_name(char ***names, size_t *n, const char *name) {
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*names)[i], name))
            return 0;
    char **grown = realloc(*names, (*n + 1) * sizeof *grown);
    if (!grown)
        return SPS_ENOMEM;
    *names = grown;
    if (!(grown[*n] = strdup(name)))
        return SPS_ENOMEM;
    (*n)++;
    return 0;
}

static double abs_median_change(const struct sps_cmp_row *r) {
    double b = isfinite(r->c.median_base) ? r->c.median_base : 0, n = isfinite(r->c.median_new) ? r->c.median_new : 0;
    return fabs(n - b);
}

static int cmp_rows(const void *pa, const void *pb) {
    double a = abs_median_change(pa), b = abs_median_change(pb);
    if (a != b)
        return a < b ? 1 : -1;
    return strcmp(((const struct sps_cmp_row *)pa)->name, ((const struct sps_cmp_row *)pb)->name);
}

/* The mean of a run-level figure over the runs that have it (NAN: none). */
static double mean_over_runs(const struct sps_cmp_side *side, size_t offset) {
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < side->nruns; i++) {
        double v = *(const double *)((const char *)&side->runs[i] + offset);
        if (isfinite(v)) {
            sum += v;
            n++;
        }
    }
    return n ? sum / (double)n : NAN;
}

static double mean_rate(const struct sps_cmp_side *side, const char *name) {
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < side->nruns; i++)
        for (size_t k = 0; k < side->runs[i].nrates; k++)
            if (!strcmp(side->runs[i].rates[k].name, name)) {
                sum += side->runs[i].rates[k].per_second;
                n++;
            }
    return n ? sum / (double)n : NAN;
}

/* A run figure; with either_side, also when one side lacks it (shown as
 * not measured there), else only when both sides have it. */
static int add_figure_of(struct sps_cmp_result *r, const char *label, const char *unit, double base, double new_,
                         int higher_is_better, int either_side) {
    if (either_side ? !isfinite(base) && !isfinite(new_) : !isfinite(base) || !isfinite(new_))
        return 0; /* nothing to show: a delta needs both sides, unless either_side */
    struct sps_cmp_figure *f = realloc(r->figures, (r->nfigures + 1) * sizeof *f);
    if (!f)
        return SPS_ENOMEM;
    r->figures = f;
    f = &r->figures[r->nfigures++];
    snprintf(f->label, sizeof f->label, "%s", label);
    snprintf(f->unit, sizeof f->unit, "%s", unit);
    f->base = base;
    f->new_ = new_;
    f->higher_is_better = higher_is_better;
    return 0;
}

static int add_figure(struct sps_cmp_result *r, const char *label, const char *unit, double base, double new_,
                      int higher_is_better) {
    return add_figure_of(r, label, unit, base, new_, higher_is_better, 0);
}

/* "input-bound", or "input-bound x2, compute-bound" when runs differ. */
static void bottleneck_of(const struct sps_cmp_side *side, char *out, size_t outlen) {
    out[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < side->nruns; i++) {
        const char *v = side->runs[i].bottleneck;
        if (!*v)
            continue;
        int seen = 0;
        for (size_t k = 0; k < i; k++)
            seen |= !strcmp(side->runs[k].bottleneck, v);
        if (seen)
            continue;
        size_t count = 0;
        for (size_t k = i; k < side->nruns; k++)
            count += !strcmp(side->runs[k].bottleneck, v);
        int n = count > 1 && count < side->nruns
                    ? snprintf(out + used, outlen - used, "%s%s x%zu", used ? ", " : "", v, count)
                    : snprintf(out + used, outlen - used, "%s%s", used ? ", " : "", v);
        if (n < 0 || (size_t)n >= outlen - used)
            break;
        used += (size_t)n;
    }
}

/* Each run's step times summarised, for the per-run lines and the JSON. */
static int run_summaries(const struct sps_cmp_side *side, size_t longest, struct sps_run_summary **out) {
    double *scratch = malloc((longest ? longest : 1) * sizeof *scratch);
    *out = calloc(side->nruns ? side->nruns : 1, sizeof **out);
    if (!scratch || !*out) {
        free(scratch);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < side->nruns; i++)
        sps__run_summarise(side->runs[i].step_s, side->runs[i].nsteps, 0, 1, scratch, &(*out)[i]);
    free(scratch);
    return 0;
}

/* Whether every run of both sides ran one command; when not, a line saying
 * what each side ran (the first run that differs). */
static void command_check(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side, char *out,
                          size_t len) {
    out[0] = '\0';
    const char *first = base->runs[0].command;
    const struct sps_cmp_side *sides[2] = {base, new_side};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->nruns; i++) {
            const char *c = sides[s]->runs[i].command;
            if (!*c || !*first || !strcmp(c, first))
                continue;
            snprintf(out, len, "the runs ran different commands: %s ran \"%.200s\", %s ran \"%.200s\"",
                     base->runs[0].path, first, sides[s]->runs[i].path, c);
            return;
        }
}

/* The earliest and latest start of a side's runs; 0 when a run has none. */
static int start_range(const struct sps_cmp_side *side, double *first, double *last) {
    *first = INFINITY;
    *last = -INFINITY;
    for (size_t i = 0; i < side->nruns; i++) {
        double t = side->runs[i].started_unix_s;
        if (!isfinite(t))
            return 0;
        *first = t < *first ? t : *first;
        *last = t > *last ? t : *last;
    }
    return 1;
}

/* Whether the runs of the two sides were made in two sessions, one after
 * the other, rather than interleaved. */
static void order_check(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side, char *out, size_t len) {
    out[0] = '\0';
    double b0, b1, n0, n1;
    if (base->nruns + new_side->nruns < 3 || !start_range(base, &b0, &b1) || !start_range(new_side, &n0, &n1))
        return;
    if (b1 < n0 || n1 < b0)
        snprintf(out, len,
                 "every %s run started before every %s run: a machine that changed between the two sessions "
                 "looks like a change in the code; interleave them (A B A B A B)",
                 b1 < n0 ? "BASE" : "NEW", b1 < n0 ? "NEW" : "BASE");
}

static size_t longest_run(const struct sps_cmp_side *s) {
    size_t m = 0;
    for (size_t i = 0; i < s->nruns; i++)
        if (s->runs[i].nsteps > m)
            m = s->runs[i].nsteps;
    return m;
}

static int figures_of(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side, struct sps_cmp_result *r) {
    int rc = add_figure(r, "peak RSS", "bytes", mean_over_runs(base, offsetof(struct sps_cmp_run, peak_rss_bytes)),
                        mean_over_runs(new_side, offsetof(struct sps_cmp_run, peak_rss_bytes)), 0);
    if (!rc)
        rc = add_figure(r, "peak GPU memory", "bytes",
                        mean_over_runs(base, offsetof(struct sps_cmp_run, peak_gpu_bytes)),
                        mean_over_runs(new_side, offsetof(struct sps_cmp_run, peak_gpu_bytes)), 0);
    /* torch's allocator memory (analysis.torch_cuda_memory): shown when
     * either side recorded it, so that a side without it is said ("-") */
    if (!rc)
        rc = add_figure_of(r, "peak torch.cuda allocated", "bytes",
                           mean_over_runs(base, offsetof(struct sps_cmp_run, torch_peak_allocated_bytes)),
                           mean_over_runs(new_side, offsetof(struct sps_cmp_run, torch_peak_allocated_bytes)), 0, 1);
    if (!rc)
        rc = add_figure_of(r, "peak torch.cuda reserved", "bytes",
                           mean_over_runs(base, offsetof(struct sps_cmp_run, torch_peak_reserved_bytes)),
                           mean_over_runs(new_side, offsetof(struct sps_cmp_run, torch_peak_reserved_bytes)), 0, 1);
    if (!rc)
        rc = add_figure(r, "energy per step", "J",
                        mean_over_runs(base, offsetof(struct sps_cmp_run, energy_per_step_j)),
                        mean_over_runs(new_side, offsetof(struct sps_cmp_run, energy_per_step_j)), 0);
    if (!rc)
        rc = add_figure(r, "energy", "J", mean_over_runs(base, offsetof(struct sps_cmp_run, energy_j)),
                        mean_over_runs(new_side, offsetof(struct sps_cmp_run, energy_j)), 0);
    /* every counter's rate that either side has */
    char **names = NULL;
    size_t nnames = 0;
    const struct sps_cmp_side *sides[2] = {base, new_side};
    for (int s = 0; s < 2 && !rc; s++)
        for (size_t i = 0; i < sides[s]->nruns && !rc; i++)
            for (size_t k = 0; k < sides[s]->runs[i].nrates && !rc; k++)
                rc = add_name(&names, &nnames, sides[s]->runs[i].rates[k].name);
    for (size_t i = 0; i < nnames && !rc; i++) {
        char label[96];
        snprintf(label, sizeof label, "%s/s", names[i]);
        rc = add_figure(r, label, "/s", mean_rate(base, names[i]), mean_rate(new_side, names[i]), 1);
    }
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    return rc;
}

/*
 * Many zones are many tests: at alpha 0.05, one in twenty unchanged zones
 * would be called faster or slower by chance.  Holm's adjustment over the
 * zones that could get a verdict keeps the chance of any false verdict
 * among them under alpha.  The step's own test is the headline and is not
 * adjusted.  Zones and GPU zones are two families, each adjusted over its
 * own rows.
 */
static int adjust_p(const struct sps_compare_params *params, struct sps_cmp_row *rows, size_t nrows) {
    double *p = malloc((nrows ? nrows : 1) * sizeof *p);
    size_t *at = malloc((nrows ? nrows : 1) * sizeof *at);
    if (!p || !at) {
        free(p);
        free(at);
        return SPS_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < nrows; i++) {
        rows[i].p_unadjusted = rows[i].c.p;
        if (rows[i].c.verdict != SPS_VERDICT_NONE) {
            p[n] = rows[i].c.p;
            at[n++] = i;
        }
    }
    int rc = sps__holm_adjust(p, n);
    for (size_t k = 0; k < n && !rc; k++) {
        struct sps_comparison *c = &rows[at[k]].c;
        c->p = p[k];
        sps__compare_decide(params, c);
    }
    free(p);
    free(at);
    return rc;
}

/* A side's GPU times of one GPU zone: each run's steps that hold a value,
 * packed (the runs without any left out).  buf holds every step of the
 * side. */
struct gpu_series {
    const double **runs;
    size_t *len;
    size_t nruns;
    double *buf;
};

static void gpu_series_free(struct gpu_series *s) {
    free(s->runs);
    free(s->len);
    free(s->buf);
}

static int gpu_series_of(const struct sps_cmp_side *side, const char *name, struct gpu_series *s) {
    size_t total = 0;
    for (size_t i = 0; i < side->nruns; i++)
        total += side->runs[i].nsteps;
    s->nruns = 0;
    s->runs = malloc((side->nruns ? side->nruns : 1) * sizeof *s->runs);
    s->len = malloc((side->nruns ? side->nruns : 1) * sizeof *s->len);
    s->buf = malloc((total ? total : 1) * sizeof *s->buf);
    if (!s->runs || !s->len || !s->buf) {
        gpu_series_free(s);
        return SPS_ENOMEM;
    }
    double *at = s->buf;
    for (size_t i = 0; i < side->nruns; i++) {
        const struct sps_cmp_zone *z = sps__cmp_run_gpu_zone(&side->runs[i], name);
        size_t n = 0;
        /* absent steps (NAN) left out; so is a negative or infinite
         * value, which no GPU time is (and which sps__compare refuses) */
        for (size_t k = 0; z && k < side->runs[i].nsteps; k++)
            if (isfinite(z->self_s[k]) && z->self_s[k] >= 0)
                at[n++] = z->self_s[k];
        if (!n)
            continue;
        s->runs[s->nruns] = at;
        s->len[s->nruns++] = n;
        at += n;
    }
    return 0;
}

/* The level of a side that alone has a GPU zone, as sps__compare would
 * give it (the geometric mean of its runs' medians; their mean when one
 * is 0), with its step count and mean: shown, not judged. */
static int one_side_level(const struct gpu_series *s, double *level, double *mean, size_t *n) {
    size_t longest = 1, total = 0;
    double sum = 0;
    for (size_t i = 0; i < s->nruns; i++) {
        longest = s->len[i] > longest ? s->len[i] : longest;
        total += s->len[i];
        for (size_t k = 0; k < s->len[i]; k++)
            sum += s->runs[i][k];
    }
    double *scratch = malloc(longest * sizeof *scratch);
    if (!scratch)
        return SPS_ENOMEM;
    double logs = 0, plain = 0;
    int positive = 1;
    for (size_t i = 0; i < s->nruns; i++) {
        struct sps_run_summary r;
        sps__run_summarise(s->runs[i], s->len[i], 0, 0, scratch, &r);
        positive &= r.center > 0;
        logs += r.center > 0 ? log(r.center) : 0;
        plain += r.center;
    }
    free(scratch);
    *n = total;
    *mean = total ? sum / (double)total : NAN;
    *level = !s->nruns ? NAN : positive ? exp(logs / (double)s->nruns) : plain / (double)s->nruns;
    return 0;
}

/* One GPU zone's row: its GPU time per step, BASE against NEW. */
static int gpu_row(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                   const struct sps_compare_params *p, struct sps_cmp_row *row) {
    struct gpu_series b = {0}, n = {0};
    int rc = gpu_series_of(base, row->name, &b);
    if (!rc)
        rc = gpu_series_of(new_side, row->name, &n);
    if (!rc) {
        struct sps_sample_side sb = {b.runs, b.len, b.nruns}, sn = {n.runs, n.len, n.nruns};
        row->presence = !n.nruns ? SPS_CMP_BASE_ONLY : !b.nruns ? SPS_CMP_NEW_ONLY : SPS_CMP_BOTH;
        rc = sps__compare(&sb, &sn, p, &row->c);
    }
    if (!rc && row->presence != SPS_CMP_BOTH) {
        /* nothing to judge against: the side that has it, shown */
        struct sps_comparison *c = &row->c;
        if (row->presence == SPS_CMP_BASE_ONLY)
            rc = one_side_level(&b, &c->median_base, &c->mean_base, &c->n_base);
        else
            rc = one_side_level(&n, &c->median_new, &c->mean_new, &c->n_new);
        snprintf(c->why, sizeof c->why, "a GPU zone timed on the GPU in %s only",
                 row->presence == SPS_CMP_BASE_ONLY ? "BASE" : "NEW");
    }
    gpu_series_free(&b);
    gpu_series_free(&n);
    return rc;
}

/* Every GPU zone of either side, compared; p Holm-adjusted among them. */
static int gpu_rows(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                    const struct sps_compare_params *p, struct sps_cmp_result *out) {
    char **names = NULL;
    size_t nnames = 0;
    int rc = 0;
    const struct sps_cmp_side *sides[2] = {base, new_side};
    for (int s = 0; s < 2 && !rc; s++)
        for (size_t i = 0; i < sides[s]->nruns && !rc; i++)
            for (size_t z = 0; z < sides[s]->runs[i].ngpu && !rc; z++)
                rc = add_name(&names, &nnames, sides[s]->runs[i].gpu[z].name);
    if (!rc && nnames && !(out->gpu = calloc(nnames, sizeof *out->gpu)))
        rc = SPS_ENOMEM;
    for (size_t i = 0; i < nnames && !rc; i++) {
        struct sps_cmp_row *row = &out->gpu[out->ngpu++];
        row->name = names[i];
        names[i] = NULL;
        rc = gpu_row(base, new_side, p, row);
    }
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    if (!rc)
        rc = adjust_p(p, out->gpu, out->ngpu);
    if (!rc && out->ngpu)
        qsort(out->gpu, out->ngpu, sizeof *out->gpu, cmp_rows);
    return rc;
}

int sps__cmp_build(const struct sps_cmp_side *base, const struct sps_cmp_side *new_side,
                   const struct sps_compare_params *params, struct sps_cmp_result *out) {
    memset(out, 0, sizeof *out);
    if (!base || !new_side || !params || !base->nruns || !new_side->nruns)
        return SPS_EINVAL;
    out->params = *params;
    size_t longest = longest_run(base) > longest_run(new_side) ? longest_run(base) : longest_run(new_side);
    double *zeros = calloc(longest ? longest : 1, sizeof *zeros);
    char **names = NULL;
    size_t nnames = 0;
    int rc = zeros ? 0 : SPS_ENOMEM;
    if (!rc && !(out->step.name = strdup(base->runs[0].step_name)))
        rc = SPS_ENOMEM;
    if (!rc)
        rc = compare_series(base, new_side, NULL, zeros, params, &out->step.c);
    out->step.p_unadjusted = out->step.c.p;
    const struct sps_cmp_side *sides[2] = {base, new_side};
    for (int s = 0; s < 2 && !rc; s++)
        for (size_t i = 0; i < sides[s]->nruns && !rc; i++)
            for (size_t z = 0; z < sides[s]->runs[i].nzones && !rc; z++)
                rc = add_name(&names, &nnames, sides[s]->runs[i].zones[z].name);
    if (!rc && nnames && !(out->zones = calloc(nnames, sizeof *out->zones)))
        rc = SPS_ENOMEM;
    for (size_t i = 0; i < nnames && !rc; i++) {
        struct sps_cmp_row *row = &out->zones[out->nzones++];
        row->name = names[i];
        names[i] = NULL;
        row->presence = !side_has_zone(new_side, row->name)  ? SPS_CMP_BASE_ONLY
                        : !side_has_zone(base, row->name) ? SPS_CMP_NEW_ONLY
                                                          : SPS_CMP_BOTH;
        row->wait = zone_is_wait(sides, row->name);
        rc = compare_series(base, new_side, row->name, zeros, params, &row->c);
    }
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    free(zeros);
    if (!rc)
        rc = adjust_p(params, out->zones, out->nzones);
    if (!rc && out->nzones)
        qsort(out->zones, out->nzones, sizeof *out->zones, cmp_rows);
    if (!rc)
        rc = sps__cmp_ranks(base, new_side, params, out->zones, out->nzones, &out->ranks, &out->nranks);
    if (!rc)
        rc = gpu_rows(base, new_side, params, out);
    if (!rc)
        rc = figures_of(base, new_side, out);
    if (!rc)
        rc = run_summaries(base, longest, &out->runs_base);
    if (!rc)
        rc = run_summaries(new_side, longest, &out->runs_new);
    if (rc) {
        sps__cmp_result_free(out);
        return rc;
    }
    bottleneck_of(base, out->bottleneck_base, sizeof out->bottleneck_base);
    bottleneck_of(new_side, out->bottleneck_new, sizeof out->bottleneck_new);
    command_check(base, new_side, out->command_warning, sizeof out->command_warning);
    order_check(base, new_side, out->order_warning, sizeof out->order_warning);
    return 0;
}

void sps__cmp_result_free(struct sps_cmp_result *r) {
    free(r->step.name);
    for (size_t i = 0; i < r->nzones; i++)
        free(r->zones[i].name);
    free(r->zones);
    for (size_t i = 0; i < r->ngpu; i++)
        free(r->gpu[i].name);
    free(r->gpu);
    sps__cmp_rank_rows_free(r->ranks, r->nranks);
    free(r->figures);
    free(r->runs_base);
    free(r->runs_new);
    memset(r, 0, sizeof *r);
}

int sps__cmp_regressed(const struct sps_cmp_result *r, double min_change) {
    const struct sps_comparison *c = &r->step.c;
    if (c->verdict != SPS_VERDICT_SLOWER)
        return 0;
    return !(min_change > 0) || !isfinite(c->ratio) || c->ratio - 1 >= min_change;
}
