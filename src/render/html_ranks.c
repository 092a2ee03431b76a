/*
 * html_ranks.c - report.html for a run of two ranks or more: the step
 * time drawn as one series a rank (never the ranks strung together as one
 * sequence of steps), the per-rank table beside the pooled row, and the
 * one rank's rows the other per-step charts draw (see html_charts.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/html_charts.h"
#include "render/html_units.h"
#include "render/svg_chart.h"
#include "stepscope.h"

/* Points a rank's line has at most: more steps are drawn as the median
 * of k consecutive ones. */
#define MAX_POINTS 600
/* Ranks named in the legend; more are drawn, and counted in the note. */
#define MAX_LEGEND 12
/* Phases shown as columns of the per-rank table: the pool's largest. */
#define MAX_PHASE_COLUMNS 6

int html_rank_of_row(const struct sps_report *rep, const struct sps_step_row *r) {
    if (r->process >= rep->run.nprocs)
        return -1;
    return sps__run_process_rank(&rep->run, r->process);
}

int html_steps_load_rank(const struct sps_report *rep, int rank, struct html_steps *s) {
    memset(s, 0, sizeof *s);
    const struct sps_run *run = &rep->run;
    size_t n = 0;
    struct sps_step_row *mine = malloc((run->nsteps ? run->nsteps : 1) * sizeof *mine);
    if (!mine)
        return SPS_ENOMEM;
    for (size_t i = 0; i < run->nsteps; i++)
        if (html_rank_of_row(rep, &run->steps[i]) == rank)
            mine[n++] = run->steps[i]; /* by_name stays the report's */
    if (n == 0) {
        free(mine);
        return 0;
    }
    s->start_s = malloc(n * sizeof *s->start_s);
    s->duration_s = malloc(n * sizeof *s->duration_s);
    s->warm = malloc(n);
    if (!s->start_s || !s->duration_s || !s->warm) {
        free(mine);
        html_steps_free(s);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        s->start_s[i] = ((double)mine[i].start_ns - (double)run->start_ns) * 1e-9;
        s->duration_s[i] = (double)(mine[i].end_ns - mine[i].start_ns) * 1e-9;
        s->warm[i] = mine[i].warmup != 0;
        s->nwarm += s->warm[i];
    }
    s->n = n;
    s->rows = s->owned_rows = mine;
    return 0;
}

/* The first rank with steps (the lowest), or the first rank. */
int html_charted_rank(const struct sps_report *rep) {
    const struct sps_ranks *r = &rep->ranks;
    for (size_t i = 0; i < r->n; i++)
        if (r->rank[i].steps)
            return r->rank[i].rank;
    return r->n ? r->rank[0].rank : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One rank's line: the median of each group of k of its steps of the
 * main step name, at the group's first step number.  *n: points. */
static int rank_points(const struct sps_report *rep, int rank, size_t k, double **xs, double **ys, size_t *n) {
    const struct sps_run *run = &rep->run;
    size_t cap = run->nsteps ? run->nsteps : 1, m = 0;
    double *d = malloc(cap * sizeof *d);
    *xs = malloc(cap * sizeof **xs);
    *ys = malloc(cap * sizeof **ys);
    if (!d || !*xs || !*ys) {
        free(d);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (html_rank_of_row(rep, r) == rank && r->name >= 0 &&
            !strcmp(run->names[r->name].name, rep->ranks.step_name))
            d[m++] = (double)(r->end_ns - r->start_ns) * 1e-9;
    }
    *n = 0;
    for (size_t lo = 0; lo < m; lo += k) {
        size_t hi = lo + k < m ? lo + k : m;
        qsort(d + lo, hi - lo, sizeof *d, cmp_double);
        (*xs)[*n] = (double)lo;
        (*ys)[(*n)++] = d[lo + (hi - lo - 1) / 2];
    }
    free(d);
    return 0;
}

static uint64_t most_steps(const struct sps_ranks *r) {
    uint64_t m = 0;
    for (size_t i = 0; i < r->n; i++)
        m = r->rank[i].steps > m ? r->rank[i].steps : m;
    return m;
}

static double highest_p90(const struct sps_ranks *r) {
    double m = 0;
    for (size_t i = 0; i < r->n; i++)
        if (isfinite(r->rank[i].step_p90_s) && r->rank[i].step_p90_s > m)
            m = r->rank[i].step_p90_s;
    return m;
}

/* The lines, one a rank; the axis's top is the highest p90 or the
 * longest point, whichever is lower (a slow first step stays off it). */
static int draw_rank_lines(struct svg_chart *c, const struct sps_report *rep, size_t k, struct html_unit u) {
    for (size_t i = 0; i < rep->ranks.n; i++) {
        double *xs = NULL, *ys = NULL;
        size_t n;
        if (rank_points(rep, rep->ranks.rank[i].rank, k, &xs, &ys, &n) != 0) {
            free(xs);
            free(ys);
            return SPS_ENOMEM;
        }
        svg_chart_line(c, xs, ys, n, 1.0 / u.div, html_palette(i), 1.5, 0);
        free(xs);
        free(ys);
    }
    return 0;
}

int html_write_step_time_ranks(FILE *out, const struct sps_report *rep) {
    const struct sps_ranks *r = &rep->ranks;
    html_section_begin(out, "step-time", "Step time per step, rank by rank",
                       "How long each step took on each rank: one line a rank, against the step's number on that "
                       "rank (the ranks run their steps side by side, so step n of every rank is one step of the "
                       "job). The dashed line is the median of all ranks' steps after warm-up.");
    uint64_t steps = most_steps(r);
    if (steps == 0) {
        html_write_empty(out, "No rank recorded a step, so there is no step time to draw.");
        fputs("</section>\n", out);
        return 0;
    }
    size_t k = steps > MAX_POINTS ? (size_t)((steps + MAX_POINTS - 1) / MAX_POINTS) : 1;
    double max_s = highest_p90(r) * 1.5;
    if (!(max_s > 0))
        max_s = r->pooled.step_total_s;
    struct html_unit u = html_duration_unit(max_s);
    char labels[MAX_LEGEND][32], p50_label[64], v[32], y_title[64];
    struct svg_legend_item legend[MAX_LEGEND + 1];
    size_t nl = 0;
    for (size_t i = 0; i < r->n && nl < MAX_LEGEND; i++, nl++) {
        snprintf(labels[nl], sizeof labels[nl], "rank %d", r->rank[i].rank);
        legend[nl] = (struct svg_legend_item){labels[nl], html_palette(i), 1, 0};
    }
    snprintf(p50_label, sizeof p50_label, "p50 of all ranks %s",
             html_fmt_duration(v, sizeof v, r->pooled.step_median_s));
    legend[nl++] = (struct svg_legend_item){p50_label, "#2f7d32", 1, 1};
    snprintf(y_title, sizeof y_title, "step time (%s)", u.name);
    struct svg_axes axes = {0, steps > 1 ? (double)(steps - 1) : 1.0, k > 1 ? "step on its rank (a point: the median of a group of steps)"
                                                    : "step on its rank",
                            1, 0, max_s / u.div, y_title, 1};
    struct svg_chart c;
    svg_chart_begin(&c, out, HTML_CHART_WIDTH, HTML_CHART_HEIGHT, "step time per step, one line a rank", &axes,
                    legend, nl);
    if (draw_rank_lines(&c, rep, k, u) != 0)
        return SPS_ENOMEM;
    if (isfinite(r->pooled.step_median_s))
        svg_chart_hline(&c, r->pooled.step_median_s / u.div, "#2f7d32", 1, NULL, 0);
    svg_chart_end(&c);
    char note[512];
    int len = snprintf(note, sizeof note,
                       "%zu ranks, \"%s\" steps; warm-up steps are drawn too. The axis reaches 1.5 times the "
                       "highest rank's p90: a longer step is off it.",
                       r->n, r->step_name);
    if (k > 1 && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len, " Each point is the median of %zu consecutive steps.",
                        k);
    if (r->n > MAX_LEGEND && len > 0 && (size_t)len < sizeof note)
        snprintf(note + len, sizeof note - (size_t)len, " The legend names the first %d ranks; colours repeat.",
                 MAX_LEGEND);
    html_write_note(out, note);
    fputs("</section>\n", out);
    return 0;
}

static const struct sps_rank_phase *phase_of(const struct sps_rank_view *v, const char *name) {
    for (size_t i = 0; i < v->nphases; i++)
        if (!strcmp(v->phases[i].name, name))
            return &v->phases[i];
    return NULL;
}

/* Phases drawn in their own colour in the phases-by-rank chart. */
#define MAX_CHART_PHASES 6
#define COLOR_WAIT "#e15759"
#define COLOR_REST "#c7cbd1"

/* One rank's bar: its phases' self time per step (the mean: total over
 * steps, so the parts add up to the mean step), its wait, and the rest of
 * the step, stacked. */
static void draw_rank_bar(struct svg_chart *c, const struct sps_rank_view *v, const struct sps_rank_view *pool,
                          size_t ncols, double x, struct html_unit u) {
    if (!v->steps)
        return;
    double steps = (double)v->steps, y = 0, step_mean = v->step_total_s / steps;
    for (size_t k = 0; k < ncols; k++) {
        const struct sps_rank_phase *ph = phase_of(v, pool->phases[k].name);
        double h = ph ? ph->self_total_s / steps : 0;
        svg_chart_rect(c, x - 0.35, x + 0.35, y / u.div, (y + h) / u.div, html_palette(k));
        y += h;
    }
    double other = 0;
    for (size_t i = 0; i < v->nphases; i++) {
        int shown = 0;
        for (size_t k = 0; k < ncols; k++)
            shown |= !strcmp(v->phases[i].name, pool->phases[k].name);
        other += shown ? 0 : v->phases[i].self_total_s / steps;
    }
    double wait = isfinite(v->wait_total_s) ? v->wait_total_s / steps : 0;
    svg_chart_rect(c, x - 0.35, x + 0.35, y / u.div, (y + other) / u.div, "#9aa1ab");
    y += other;
    svg_chart_rect(c, x - 0.35, x + 0.35, y / u.div, (y + wait) / u.div, COLOR_WAIT);
    y += wait;
    if (step_mean > y)
        svg_chart_rect(c, x - 0.35, x + 0.35, y / u.div, step_mean / u.div, COLOR_REST);
}

/* The phases of each rank side by side: where a slow rank loses its time
 * (a phase the others spend less in), and what the others wait. */
static void write_rank_phases(FILE *out, const struct sps_ranks *r) {
    const struct sps_rank_view *pool = &r->pooled;
    size_t ncols = pool->nphases < MAX_CHART_PHASES ? pool->nphases : MAX_CHART_PHASES;
    double max_s = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->rank[i].steps && r->rank[i].step_total_s / (double)r->rank[i].steps > max_s)
            max_s = r->rank[i].step_total_s / (double)r->rank[i].steps;
    if (!(max_s > 0))
        return;
    struct html_unit u = html_duration_unit(max_s);
    struct svg_legend_item legend[MAX_CHART_PHASES + 3];
    size_t nl = 0;
    for (size_t k = 0; k < ncols; k++)
        legend[nl++] = (struct svg_legend_item){pool->phases[k].name, html_palette(k), 0, 0};
    legend[nl++] = (struct svg_legend_item){"other zones", "#9aa1ab", 0, 0};
    if (isfinite(pool->wait_total_s))
        legend[nl++] = (struct svg_legend_item){"wait (collectives)", COLOR_WAIT, 0, 0};
    legend[nl++] = (struct svg_legend_item){"not in a zone", COLOR_REST, 0, 0};
    char y_title[64];
    snprintf(y_title, sizeof y_title, "time per step, mean (%s)", u.name);
    struct svg_axes axes = {-0.5, (double)r->n - 0.5, "rank: the table's row (the rank's number when they run from 0)", 1,
                            0, max_s / u.div, y_title, 1};
    struct svg_chart c;
    svg_chart_begin(&c, out, HTML_CHART_WIDTH, HTML_CHART_HEIGHT, "each rank's phases per step", &axes, legend, nl);
    for (size_t i = 0; i < r->n; i++)
        draw_rank_bar(&c, &r->rank[i], pool, ncols, (double)i, u);
    svg_chart_end(&c);
    html_write_note(out, "One bar a rank, in the table's order: each phase's self time "
                         "per step and the wait in collectives, as means over all the rank's steps, so the parts "
                         "add up to its mean step. A rank that spends more in a phase than the others, while they "
                         "wait more, is the one they wait for.");
}

static void cell(FILE *out, double seconds) {
    char buf[48];
    fprintf(out, "<td class=\"num\">%s</td>", html_fmt_duration(buf, sizeof buf, seconds));
}

static void table_row(FILE *out, const struct sps_rank_view *v, const struct sps_rank_view *pool, size_t ncols) {
    if (v->rank >= 0) {
        fprintf(out, "<tr><td class=\"num\">%d</td><td>", v->rank);
        svg_write_escaped(out, v->hostname);
        fprintf(out, "</td><td class=\"num\">%d</td>", v->pid);
    } else {
        fputs("<tr class=\"pooled\"><td>pooled</td><td></td><td></td>", out);
    }
    fprintf(out, "<td class=\"num\">%u</td><td class=\"num\">%llu</td>", v->processes,
            (unsigned long long)v->steps);
    cell(out, v->step_median_s);
    cell(out, v->step_p90_s);
    cell(out, v->wait_median_s);
    for (size_t c = 0; c < ncols; c++) {
        const struct sps_rank_phase *ph = phase_of(v, pool->phases[c].name);
        cell(out, ph ? ph->self_median_s : NAN);
    }
    fputs("</tr>\n", out);
}

void html_write_rank_table(FILE *out, const struct sps_report *rep) {
    const struct sps_ranks *r = &rep->ranks;
    if (r->n < 2 || !r->have_pooled)
        return;
    const struct sps_rank_view *pool = &r->pooled;
    size_t ncols = pool->nphases < MAX_PHASE_COLUMNS ? pool->nphases : MAX_PHASE_COLUMNS;
    fputs("<section id=\"ranks\">\n<h2>Ranks</h2>\n<p class=\"what\">Each rank's own figures, and the pool of every "
          "rank's steps in the last row. Median and p90 are of the rank's steps after warm-up; wait is the time "
          "blocked in collectives (all-reduce, broadcast, barrier) per step, and each phase its self time per "
          "step, both the median over the rank's steps. Processes counts the rank's own and its workers. "
          "– means none, or not measured (no wait recorded).</p>\n",
          out);
    fputs("<table>\n<thead><tr><th>rank</th><th>host</th><th>pid</th><th>processes</th><th>steps</th>"
          "<th>median</th><th>p90</th><th>wait</th>",
          out);
    for (size_t c = 0; c < ncols; c++) {
        fputs("<th>", out);
        svg_write_escaped(out, pool->phases[c].name);
        fputs("</th>", out);
    }
    fputs("</tr></thead>\n<tbody>\n", out);
    for (size_t i = 0; i < r->n; i++)
        table_row(out, &r->rank[i], pool, ncols);
    table_row(out, pool, pool, ncols);
    fputs("</tbody>\n</table>\n", out);
    write_rank_phases(out, r);
    int charted = html_charted_rank(rep);
    fprintf(out,
            "<p class=\"note\">The charts of values, phases and the machine below draw rank %d's steps "
            "(the ranks' steps are not one sequence).</p>\n</section>\n",
            charted);
}
