/*
 * render.c - text, Markdown and JSON forms of a comparison (see render.h).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/render.h"
#include "render/render.h"
#include "stepscope.h"

#define RED "\033[31m"
#define GREEN "\033[32m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

/* ---------------------------------------------------------------- units */

/* The one duration formatter (render/format.c), "-" for unknown. */
static void fmt_seconds(double s, char *buf, size_t len) {
    if (!isfinite(s))
        snprintf(buf, len, "-");
    else
        sps__fmt_seconds(s, buf, len);
}

static void fmt_figure(double v, const char *unit, char *buf, size_t len) {
    if (!isfinite(v)) {
        snprintf(buf, len, "-");
        return;
    }
    if (!strcmp(unit, "bytes")) {
        sps__fmt_bytes(v, buf, len); /* the one size formatter */
        return;
    }
    const char *suffix = !strcmp(unit, "J") ? "J" : "/s";
    if (fabs(v) >= 1e9)
        snprintf(buf, len, "%.3gG%s", v / 1e9, suffix);
    else if (fabs(v) >= 1e6)
        snprintf(buf, len, "%.3gM%s", v / 1e6, suffix);
    else if (fabs(v) >= 1e3)
        snprintf(buf, len, "%.3gk%s", v / 1e3, suffix);
    else
        snprintf(buf, len, "%.3g%s", v, suffix);
}

/* "+5.1%" for a ratio, "-" when there is none. */
static void fmt_change(double ratio, char *buf, size_t len) {
    if (!isfinite(ratio))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%+.1f%%", (ratio - 1) * 100);
}

static void fmt_interval(const struct sps_comparison *c, char *buf, size_t len) {
    if (!isfinite(c->ratio_lo) || !isfinite(c->ratio_hi))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%+.1f%% .. %+.1f%%", (c->ratio_lo - 1) * 100, (c->ratio_hi - 1) * 100);
}

static void fmt_p(const struct sps_comparison *c, char *buf, size_t len) {
    if (c->verdict == SPS_VERDICT_NONE)
        snprintf(buf, len, "-");
    else if (c->p < 1e-300) /* the normal tail underflows a double */
        snprintf(buf, len, "<1e-300");
    else if (c->p < 1e-4)
        snprintf(buf, len, "%.1e", c->p);
    else
        snprintf(buf, len, "%.4f", c->p);
}

/* The sd of a run's level that the interval used, relative: "3.1%". */
static double noise_of(const struct sps_comparison *c) {
    return c->noise_used == SPS_NOISE_BETWEEN ? c->noise_between
           : c->noise_used == SPS_NOISE_DRIFT ? c->noise_drift
                                              : NAN;
}

static void fmt_noise(const struct sps_comparison *c, char *buf, size_t len) {
    double v = noise_of(c);
    if (!isfinite(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f%%", v * 100);
}

static const char *verdict_word(const struct sps_cmp_row *row) {
    if (row->presence == SPS_CMP_BASE_ONLY)
        return "gone";
    if (row->presence == SPS_CMP_NEW_ONLY)
        return "new";
    return row->c.verdict == SPS_VERDICT_NONE ? "too few" : sps__verdict_name(row->c.verdict);
}

/* What a side is: "runs/a: 1 run, 200 steps (5 warm-up left out)". */
static void describe_side(const struct sps_cmp_side *s, char *buf, size_t len) {
    size_t steps = 0, skipped = 0, dropped = 0, profiled = 0;
    for (size_t i = 0; i < s->nruns; i++) {
        steps += s->runs[i].nsteps;
        skipped += s->runs[i].skipped;
        profiled += s->runs[i].profiled;
        if (s->runs[i].steps_counted > s->runs[i].rows)
            dropped += s->runs[i].steps_counted - s->runs[i].rows;
    }
    int n = snprintf(buf, len, "%s%s: %zu run%s, %zu steps (%zu warm-up left out", s->runs[0].path,
                     s->nruns > 1 ? " and others" : "", s->nruns, s->nruns == 1 ? "" : "s", steps, skipped);
    if (n > 0 && (size_t)n < len && profiled)
        n += snprintf(buf + n, len - (size_t)n, ", %zu --torch-profile step%s left out", profiled,
                      profiled == 1 ? "" : "s");
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, dropped ? "; %zu not in the reports' step rows)" : ")", dropped);
}

/* One run's line: "rA/report.json: median 1.34ms, drifts 6.2%, halves -1.3%". */
static void describe_run(const struct sps_cmp_run *run, const struct sps_run_summary *s, char *buf, size_t len) {
    char med[32];
    fmt_seconds(s->center, med, sizeof med);
    int n = snprintf(buf, len, "%s: median %s", run->path, med);
    if (n > 0 && (size_t)n < len && isfinite(s->drift_var) && s->center > 0)
        n += snprintf(buf + n, len - (size_t)n, ", drifts %.1f%%", sqrt(s->drift_var) / s->center * 100);
    if (n > 0 && (size_t)n < len && isfinite(s->halves))
        snprintf(buf + n, len - (size_t)n, ", halves differ %+.1f%%", s->halves * 100);
}

/* "about 12 runs a side would tell a 2% change from this noise", "" unless
 * the verdict is inconclusive. */
static void advice(const struct sps_cmp_result *r, char *buf, size_t len) {
    const struct sps_comparison *c = &r->step.c;
    buf[0] = '\0';
    if (c->verdict != SPS_VERDICT_INCONCLUSIVE || !c->runs_needed)
        return;
    double noise = noise_of(c);
    if (c->runs_base + c->runs_new < 3)
        snprintf(buf, len,
                 "one run a side cannot measure how runs differ: repeat each side (stepscope compare A1 A2 A3 --vs "
                 "B1 B2 B3); from the runs' own drift alone, a %g%% change needs %zu runs a side or more",
                 r->params.threshold * 100, c->runs_needed < 3 ? (size_t)3 : c->runs_needed);
    else if (c->runs_needed >= 1000)
        snprintf(buf, len,
                 "a run's level varies by %.1f%% here: no practical number of runs a side tells a %g%% change; a "
                 "quieter machine or a larger --threshold would",
                 noise * 100, r->params.threshold * 100);
    else
        snprintf(buf, len,
                 "about %zu runs a side would tell a %g%% change from this noise (a run's level varies by %.1f%%)",
                 c->runs_needed < 2 ? (size_t)2 : c->runs_needed, r->params.threshold * 100, noise * 100);
}

/* The headline: "step time: 30.1% slower, speedup 0.769x (median per step,
 * 3+3 runs; 95% interval +25.0% to +35.3%, p=1.2e-05)". */
static void headline(const struct sps_cmp_result *r, char *buf, size_t len) {
    const struct sps_comparison *c = &r->step.c;
    switch (c->verdict) {
    case SPS_VERDICT_SLOWER:
    case SPS_VERDICT_FASTER: {
        char p[32];
        fmt_p(c, p, sizeof p);
        snprintf(buf, len,
                 "%s time: %.1f%% %s, speedup %.3gx (median per step, %zu+%zu runs; 95%% interval %+.1f%% to "
                 "%+.1f%%, p=%s)",
                 r->step.name, fabs(c->ratio - 1) * 100, sps__verdict_name(c->verdict), 1 / c->ratio, c->runs_base,
                 c->runs_new, (c->ratio_lo - 1) * 100, (c->ratio_hi - 1) * 100, p);
        break;
    }
    case SPS_VERDICT_SAME:
        snprintf(buf, len, "%s time: no change beyond %g%% (%s)", r->step.name, r->params.threshold * 100, c->why);
        break;
    case SPS_VERDICT_INCONCLUSIVE:
        snprintf(buf, len, "%s time: inconclusive (%s)", r->step.name, c->why);
        break;
    default:
        snprintf(buf, len, "%s time: no verdict (%s)", r->step.name, c->why);
    }
}

/* A compared series' cells, as both tables show them. */
struct row_cells {
    char base[32], new_[32], change[32], interval[48], p[32], noise[32];
    const char *verdict;
};

static void row_cells(const struct sps_cmp_row *row, struct row_cells *c) {
    fmt_seconds(row->presence == SPS_CMP_NEW_ONLY ? NAN : row->c.median_base, c->base, sizeof c->base);
    fmt_seconds(row->presence == SPS_CMP_BASE_ONLY ? NAN : row->c.median_new, c->new_, sizeof c->new_);
    fmt_change(row->c.ratio, c->change, sizeof c->change);
    fmt_interval(&row->c, c->interval, sizeof c->interval);
    fmt_p(&row->c, c->p, sizeof c->p);
    fmt_noise(&row->c, c->noise, sizeof c->noise);
    c->verdict = verdict_word(row);
}

/* NEW / BASE of a run figure; NAN when BASE is 0. */
static double figure_ratio(const struct sps_cmp_figure *g) {
    return g->base != 0 ? g->new_ / g->base : NAN;
}

/* A run figure's cells: base, new, change. */
static void figure_cells(const struct sps_cmp_figure *g, char b[32], char n[32], char ch[32]) {
    fmt_figure(g->base, g->unit, b, 32);
    fmt_figure(g->new_, g->unit, n, 32);
    fmt_change(figure_ratio(g), ch, 32);
}

/* ----------------------------------------------------------------- text */

/* A rank one side lacks: said, not judged. */
static void rank_cells(const struct sps_cmp_row *row, struct row_cells *c) {
    row_cells(row, c);
    if (row->presence == SPS_CMP_BASE_ONLY)
        c->verdict = "not in new";
    else if (row->presence == SPS_CMP_NEW_ONLY)
        c->verdict = "not in base";
}

static void text_cells(FILE *f, const struct sps_cmp_row *row, const struct row_cells *c, const char *label,
                       int colour) {
    const char *on = !colour || row->presence != SPS_CMP_BOTH ? ""
                     : row->c.verdict == SPS_VERDICT_SLOWER  ? RED
                     : row->c.verdict == SPS_VERDICT_FASTER ? GREEN
                                                            : "";
    fprintf(f, "%-22.22s %9s %9s %8s %18s %9s %6s  %s%s%s\n", label, c->base, c->new_, c->change, c->interval, c->p,
            c->noise, on, c->verdict, *on ? RESET : "");
}

static void text_row(FILE *f, const struct sps_cmp_row *row, const char *label, int colour) {
    struct row_cells c;
    row_cells(row, &c);
    text_cells(f, row, &c, label, colour);
}

/* Each GPU zone's GPU time per step (its .gpu_ms values), a table of its
 * own: GPU time is not part of the step's CPU time above. */
static void text_gpu(FILE *f, const struct sps_cmp_result *r, int colour) {
    if (!r->ngpu)
        return;
    fprintf(f, "\n%-22s %9s %9s %8s %18s %9s %6s  %s\n", "GPU time per step", "base", "new", "change",
            "95% interval", "p", "noise", "verdict");
    size_t shown = r->ngpu < SPS_CMP_ZONES_SHOWN ? r->ngpu : SPS_CMP_ZONES_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        char label[64];
        snprintf(label, sizeof label, "  %s", r->gpu[i].name);
        text_row(f, &r->gpu[i], label, colour);
    }
    if (r->ngpu > shown)
        fprintf(f, "  ... %zu more GPU zones (--format json lists them all)\n", r->ngpu - shown);
    fputs("(GPU zones: each step's <zone>.gpu_ms, over the steps that hold one, largest change first; p adjusted for "
          "the number of GPU zones)\n",
          f);
}

/* The step time rank by rank, under the pooled line. */
static void text_ranks(FILE *f, const struct sps_cmp_result *r, int colour) {
    if (!r->nranks)
        return;
    fprintf(f, "\n%-22s %9s %9s %8s %18s %9s %6s  %s\n", "median per step, rank", "base", "new", "change",
            "95% interval", "p", "noise", "verdict");
    for (size_t i = 0; i < r->nranks; i++) {
        struct row_cells c;
        rank_cells(&r->ranks[i], &c);
        text_cells(f, &r->ranks[i], &c, r->ranks[i].name, colour);
    }
    fprintf(f, "(%s time of rank r of base against rank r of new; the \"%s\" line above pools every rank's steps; "
               "p adjusted for the number of ranks)\n",
            r->step.name, r->step.name);
}

/* Each rank's step p90 and the phases and waits that stand out in it. */
static void text_rank_phases(FILE *f, const struct sps_cmp_result *r, int colour) {
    if (!r->nranks)
        return;
    int drift = 0;
    fprintf(f, "\n%-10s %9s %9s  %s\n", "by rank", "base p90", "new p90",
            "changes of a phase's self time or a collective wait, median per step");
    for (size_t i = 0; i < r->nranks; i++) {
        const struct sps_cmp_row *rk = &r->ranks[i];
        char b[32], n[32], line[1024];
        fmt_seconds(rk->p90_base, b, sizeof b);
        fmt_seconds(rk->p90_new, n, sizeof n);
        size_t named = sps__cmp_rank_line(&r->params, rk, 0, line, sizeof line);
        for (size_t k = 0; k < rk->nphases; k++)
            drift |= sps__cmp_phase_standing(&r->params, &rk->phases[k]) == SPS_CMP_BEYOND_DRIFT;
        fprintf(f, "%-10.10s %9s %9s  %s%s%s\n", rk->name, b, n, colour && named ? BOLD : "", line,
                colour && named ? RESET : "");
    }
    fprintf(f, "(%s p90 of each rank's steps; each phase and wait of rank r against rank r, p adjusted for ranks x "
               "phases%s)\n",
            r->step.name,
            drift ? "; beyond drift: one run a side cannot be slower or faster, but the change clears each run's "
                    "own drift"
                  : "");
}

static void render_text(FILE *f, int colour, const struct sps_cmp_result *r, const struct sps_cmp_side *base,
                        const struct sps_cmp_side *new_side) {
    char line[1024];
    if (*r->command_warning)
        fprintf(f, "%swarning: %s%s\n", colour ? BOLD : "", r->command_warning, colour ? RESET : "");
    if (*r->order_warning)
        fprintf(f, "%swarning: %s%s\n", colour ? BOLD : "", r->order_warning, colour ? RESET : "");
    const struct sps_cmp_side *sides[2] = {base, new_side};
    const struct sps_run_summary *sums[2] = {r->runs_base, r->runs_new};
    for (int s = 0; s < 2; s++) {
        describe_side(sides[s], line, sizeof line);
        fprintf(f, "%s%s\n", s ? "new   " : "base  ", line);
        for (size_t i = 0; i < sides[s]->nruns && i < SPS_CMP_RUNS_SHOWN; i++) {
            describe_run(&sides[s]->runs[i], &sums[s][i], line, sizeof line);
            fprintf(f, "      %s\n", line);
        }
        if (sides[s]->nruns > SPS_CMP_RUNS_SHOWN)
            fprintf(f, "      ... %zu more runs (--format json lists them all)\n",
                    sides[s]->nruns - SPS_CMP_RUNS_SHOWN);
    }
    fputc('\n', f);
    headline(r, line, sizeof line);
    const char *on = !colour                                    ? ""
                     : r->step.c.verdict == SPS_VERDICT_SLOWER ? BOLD RED
                     : r->step.c.verdict == SPS_VERDICT_FASTER ? BOLD GREEN
                                                               : BOLD;
    fprintf(f, "%s%s%s\n", on, line, *on ? RESET : "");
    advice(r, line, sizeof line);
    if (*line)
        fprintf(f, "%s\n", line);
    fprintf(f, "\n%-22s %9s %9s %8s %18s %9s %6s  %s\n", "median per step", "base", "new", "change",
            "95% interval", "p", "noise", "verdict");
    text_row(f, &r->step, r->step.name, colour);
    size_t shown = r->nzones < SPS_CMP_ZONES_SHOWN ? r->nzones : SPS_CMP_ZONES_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        char label[64];
        snprintf(label, sizeof label, "  %s", r->zones[i].name);
        text_row(f, &r->zones[i], label, colour);
    }
    if (r->nzones > shown)
        fprintf(f, "  ... %zu more zones (--format json lists them all)\n", r->nzones - shown);
    if (r->nzones)
        fputs("(zones: self time per step, largest change first; p adjusted for the number of zones)\n", f);
    text_gpu(f, r, colour);
    text_ranks(f, r, colour);
    text_rank_phases(f, r, colour);
    if (r->nfigures || *r->bottleneck_base || *r->bottleneck_new) {
        /* 26: "peak torch.cuda allocated" whole */
        fprintf(f, "\n%-26s %12s %12s %8s\n", "run", "base", "new", "change");
        for (size_t i = 0; i < r->nfigures; i++) {
            const struct sps_cmp_figure *g = &r->figures[i];
            char b[32], n[32], ch[32];
            figure_cells(g, b, n, ch);
            fprintf(f, "%-26.26s %12s %12s %8s\n", g->label, b, n, ch);
        }
        if (*r->bottleneck_base || *r->bottleneck_new)
            fprintf(f, "%-26s %12s %12s %8s\n", "bottleneck", *r->bottleneck_base ? r->bottleneck_base : "-",
                    *r->bottleneck_new ? r->bottleneck_new : "-",
                    strcmp(r->bottleneck_base, r->bottleneck_new) ? "changed" : "");
    }
    fprintf(f,
            "\nruns are the unit (docs/compare.md): slower/faster needs 3+ runs in all, p < %g and the 95%% interval "
            "beyond %g%% (--threshold);\nsame: the interval within %g%%; noise: the sd of a run's level, from the "
            "spread between runs or each run's drift\n",
            r->params.alpha, r->params.threshold * 100, r->params.threshold * 100);
}

/* ------------------------------------------------------------- Markdown */

static void md_row(FILE *f, const struct sps_cmp_row *row, const char *label) {
    struct row_cells c;
    row_cells(row, &c);
    int strong = row->presence == SPS_CMP_BOTH &&
                 (row->c.verdict == SPS_VERDICT_SLOWER || row->c.verdict == SPS_VERDICT_FASTER);
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s%s%s |\n", label, c.base, c.new_, c.change, c.interval, c.p,
            c.noise, strong ? "**" : "", c.verdict, strong ? "**" : "");
}

/* The step time rank by rank: rank r of BASE against rank r of NEW. */
static void md_ranks(FILE *f, const struct sps_cmp_result *r) {
    if (!r->nranks)
        return;
    fputs("\n| median per step, rank | base | new | change | 95% interval | p | noise | verdict |\n", f);
    fputs("|---|--:|--:|--:|--:|--:|--:|---|\n", f);
    for (size_t i = 0; i < r->nranks; i++) {
        struct row_cells c;
        rank_cells(&r->ranks[i], &c);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r->ranks[i].name, c.base, c.new_, c.change,
                c.interval, c.p, c.noise, c.verdict);
    }
}

/* Each rank's step p90 and the phases and waits that stand out in it. */
static void md_rank_phases(FILE *f, const struct sps_cmp_result *r) {
    if (!r->nranks)
        return;
    fputs("\n| rank | p90 base | p90 new | changes of a phase's self time or a collective wait (median per step) |\n",
          f);
    fputs("|---|--:|--:|---|\n", f);
    for (size_t i = 0; i < r->nranks; i++) {
        const struct sps_cmp_row *rk = &r->ranks[i];
        char b[32], n[32], line[1400];
        fmt_seconds(rk->p90_base, b, sizeof b);
        fmt_seconds(rk->p90_new, n, sizeof n);
        sps__cmp_rank_line(&r->params, rk, 1, line, sizeof line);
        fprintf(f, "| %s | %s | %s | %s |\n", rk->name, b, n, line);
    }
}

/* Markdown table cells: a zone name may hold '|' or markup. */
static void md_escape(const char *s, char *out, size_t len) {
    size_t o = 0;
    for (; *s && o + 3 < len; s++) {
        if (strchr("|*_`<>[]\\", *s))
            out[o++] = '\\';
        out[o++] = *s;
    }
    out[o] = '\0';
}

/* Each GPU zone's GPU time per step, a table of its own. */
static void md_gpu(FILE *f, const struct sps_cmp_result *r) {
    if (!r->ngpu)
        return;
    fputs("\n| GPU time per step | base | new | change | 95% interval | p | noise | verdict |\n", f);
    fputs("|---|--:|--:|--:|--:|--:|--:|---|\n", f);
    size_t shown = r->ngpu < SPS_CMP_ZONES_SHOWN ? r->ngpu : SPS_CMP_ZONES_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        char name[160];
        md_escape(r->gpu[i].name, name, sizeof name);
        md_row(f, &r->gpu[i], name);
    }
    if (r->ngpu > shown)
        fprintf(f, "\n%zu more GPU zones changed less (`--format json` lists them all).\n", r->ngpu - shown);
}

static void render_markdown(FILE *f, const struct sps_cmp_result *r, const struct sps_cmp_side *base,
                            const struct sps_cmp_side *new_side) {
    char line[1024], name[160];
    headline(r, line, sizeof line);
    fprintf(f, "### stepscope compare: %s\n\n", line);
    advice(r, line, sizeof line);
    if (*line)
        fprintf(f, "%s\n\n", line);
    if (*r->command_warning)
        fprintf(f, "**Warning**: %s\n\n", r->command_warning);
    if (*r->order_warning)
        fprintf(f, "**Warning**: %s\n\n", r->order_warning);
    fputs("| median per step | base | new | change | 95% interval | p | noise | verdict |\n", f);
    fputs("|---|--:|--:|--:|--:|--:|--:|---|\n", f);
    md_escape(r->step.name, name, sizeof name);
    char label[200];
    snprintf(label, sizeof label, "**%s**", name);
    md_row(f, &r->step, label);
    size_t shown = r->nzones < SPS_CMP_ZONES_SHOWN ? r->nzones : SPS_CMP_ZONES_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        md_escape(r->zones[i].name, name, sizeof name);
        snprintf(label, sizeof label, "%s (self)", name);
        md_row(f, &r->zones[i], label);
    }
    if (r->nzones > shown)
        fprintf(f, "\n%zu more zones changed less (`--format json` lists them all).\n", r->nzones - shown);
    md_gpu(f, r);
    md_ranks(f, r);
    md_rank_phases(f, r);
    if (r->nfigures || *r->bottleneck_base || *r->bottleneck_new) {
        fputs("\n| run | base | new | change |\n|---|--:|--:|--:|\n", f);
        for (size_t i = 0; i < r->nfigures; i++) {
            const struct sps_cmp_figure *g = &r->figures[i];
            char b[32], n[32], ch[32];
            figure_cells(g, b, n, ch);
            md_escape(g->label, name, sizeof name);
            fprintf(f, "| %s | %s | %s | %s |\n", name, b, n, ch);
        }
        if (*r->bottleneck_base || *r->bottleneck_new)
            fprintf(f, "| bottleneck | %s | %s | %s |\n", *r->bottleneck_base ? r->bottleneck_base : "-",
                    *r->bottleneck_new ? r->bottleneck_new : "-",
                    strcmp(r->bottleneck_base, r->bottleneck_new) ? "changed" : "");
    }
    char b[1100], n[1100];
    describe_side(base, line, sizeof line);
    md_escape(line, b, sizeof b);
    describe_side(new_side, line, sizeof line);
    md_escape(line, n, sizeof n);
    fprintf(f,
            "\nBase: %s. New: %s. Runs are the unit: slower or faster needs 3 or more runs in all, p < %g, and "
            "the 95%% interval of the change in run level wholly beyond %g%%; noise is the sd of a run's level.\n",
            b, n, r->params.alpha, r->params.threshold * 100);
}

/* ----------------------------------------------------------------- JSON */

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *comparison_json(const struct sps_cmp_row *row) {
    const struct sps_comparison *c = &row->c;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(row->name));
    json_object_set_new(o, "presence", json_string(row->presence == SPS_CMP_BASE_ONLY  ? "base only"
                                                   : row->presence == SPS_CMP_NEW_ONLY ? "new only"
                                                                                       : "both"));
    json_object_set_new(o, "verdict", json_string(sps__verdict_name(c->verdict)));
    json_object_set_new(o, "why", json_string(c->why));
    json_object_set_new(o, "n_base", json_integer((json_int_t)c->n_base));
    json_object_set_new(o, "n_new", json_integer((json_int_t)c->n_new));
    json_object_set_new(o, "median_base_s", num_or_null(c->median_base));
    json_object_set_new(o, "median_new_s", num_or_null(c->median_new));
    json_object_set_new(o, "mean_base_s", num_or_null(c->mean_base));
    json_object_set_new(o, "mean_new_s", num_or_null(c->mean_new));
    json_object_set_new(o, "ratio", num_or_null(c->ratio));
    json_object_set_new(o, "speedup", num_or_null(c->ratio > 0 ? 1 / c->ratio : NAN));
    json_object_set_new(o, "ratio_ci_low", num_or_null(c->ratio_lo));
    json_object_set_new(o, "ratio_ci_high", num_or_null(c->ratio_hi));
    json_object_set_new(o, "p_value", c->verdict == SPS_VERDICT_NONE ? json_null() : json_real(c->p));
    json_object_set_new(o, "p_value_unadjusted",
                        c->verdict == SPS_VERDICT_NONE ? json_null() : json_real(row->p_unadjusted));
    json_object_set_new(o, "runs_base", json_integer((json_int_t)c->runs_base));
    json_object_set_new(o, "runs_new", json_integer((json_int_t)c->runs_new));
    json_object_set_new(o, "run_statistic", json_string(c->use_mean ? "mean" : "median"));
    json_object_set_new(o, "noise_between", num_or_null(c->noise_between));
    json_object_set_new(o, "noise_drift", num_or_null(c->noise_drift));
    json_object_set_new(o, "noise_used", c->noise_used == SPS_NOISE_BETWEEN ? json_string("between")
                                         : c->noise_used == SPS_NOISE_DRIFT ? json_string("drift")
                                                                            : json_null());
    json_object_set_new(o, "df", c->noise_used == SPS_NOISE_NONE ? json_null() : json_real(c->df));
    json_object_set_new(o, "runs_needed", c->runs_needed ? json_integer((json_int_t)c->runs_needed) : json_null());
    /* rank statistics over pooled steps are no longer computed (they
     * treated the steps of a run as independent): kept as null */
    json_object_set_new(o, "mann_whitney_u", json_null());
    json_object_set_new(o, "cliffs_delta", json_null());
    return o;
}

static json_t *side_json(const struct sps_cmp_side *s, const struct sps_run_summary *sums) {
    json_t *runs = json_array();
    for (size_t i = 0; i < s->nruns; i++) {
        const struct sps_cmp_run *r = &s->runs[i];
        json_t *o = json_object();
        json_object_set_new(o, "report", json_string(r->path));
        json_object_set_new(o, "command", *r->command ? json_string(r->command) : json_null());
        json_object_set_new(o, "started_unix_s", num_or_null(r->started_unix_s));
        json_object_set_new(o, "median_s", num_or_null(sums[i].center));
        json_object_set_new(o, "drift", num_or_null(sums[i].center > 0 ? sqrt(sums[i].drift_var) / sums[i].center
                                                                          : NAN));
        json_object_set_new(o, "halves_change", num_or_null(sums[i].halves));
        json_object_set_new(o, "steps", json_integer((json_int_t)r->nsteps));
        json_object_set_new(o, "warmup_left_out", json_integer((json_int_t)r->skipped));
        json_object_set_new(o, "torch_profile_left_out", json_integer((json_int_t)r->profiled));
        json_object_set_new(o, "steps_counted", json_integer((json_int_t)r->steps_counted));
        json_array_append_new(runs, o);
    }
    return runs;
}

static int render_json(FILE *f, const struct sps_cmp_result *r, const struct sps_cmp_side *base,
                       const struct sps_cmp_side *new_side) {
    json_t *root = json_object();
    if (!root)
        return SPS_ENOMEM;
    json_object_set_new(root, "schema", json_string("stepscope.compare/1"));
    json_object_set_new(root, "verdict", json_string(sps__verdict_name(r->step.c.verdict)));
    json_t *params = json_object();
    json_object_set_new(params, "threshold", json_real(r->params.threshold));
    json_object_set_new(params, "alpha", json_real(r->params.alpha));
    json_object_set_new(params, "confidence", json_real(r->params.confidence));
    json_object_set_new(params, "min_samples", json_integer((json_int_t)r->params.min_samples));
    json_object_set_new(root, "params", params);
    json_object_set_new(root, "method", json_string("run-level t"));
    json_t *warnings = json_array();
    if (*r->command_warning)
        json_array_append_new(warnings, json_string(r->command_warning));
    if (*r->order_warning)
        json_array_append_new(warnings, json_string(r->order_warning));
    json_object_set_new(root, "warnings", warnings);
    json_object_set_new(root, "base", side_json(base, r->runs_base));
    json_object_set_new(root, "new", side_json(new_side, r->runs_new));
    json_object_set_new(root, "step", comparison_json(&r->step));
    json_t *zones = json_array();
    for (size_t i = 0; i < r->nzones; i++)
        json_array_append_new(zones, comparison_json(&r->zones[i]));
    json_object_set_new(root, "zones_self", zones);
    json_t *gpu = json_array();
    for (size_t i = 0; i < r->ngpu; i++)
        json_array_append_new(gpu, comparison_json(&r->gpu[i]));
    json_object_set_new(root, "zones_gpu", gpu);
    json_t *ranks = json_array();
    for (size_t i = 0; i < r->nranks; i++) {
        json_t *o = comparison_json(&r->ranks[i]);
        json_object_set_new(o, "rank", json_integer(r->ranks[i].rank));
        json_object_set_new(o, "step_p90_base_s", num_or_null(r->ranks[i].p90_base));
        json_object_set_new(o, "step_p90_new_s", num_or_null(r->ranks[i].p90_new));
        json_t *phases = json_array(), *waits = json_array();
        for (size_t k = 0; k < r->ranks[i].nphases; k++) {
            const struct sps_cmp_row *ph = &r->ranks[i].phases[k];
            json_t *p = comparison_json(ph);
            json_object_set_new(p, "beyond_drift",
                                json_boolean(sps__cmp_phase_standing(&r->params, ph) == SPS_CMP_BEYOND_DRIFT));
            json_array_append_new(ph->wait ? waits : phases, p);
        }
        json_object_set_new(o, "phases", phases);
        json_object_set_new(o, "waits", waits);
        json_array_append_new(ranks, o);
    }
    json_object_set_new(root, "ranks", ranks);
    json_t *figures = json_array();
    for (size_t i = 0; i < r->nfigures; i++) {
        const struct sps_cmp_figure *g = &r->figures[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(g->label));
        json_object_set_new(o, "unit", json_string(g->unit));
        json_object_set_new(o, "base", num_or_null(g->base));
        json_object_set_new(o, "new", num_or_null(g->new_));
        json_object_set_new(o, "ratio", num_or_null(figure_ratio(g)));
        json_object_set_new(o, "higher_is_better", json_boolean(g->higher_is_better));
        json_array_append_new(figures, o);
    }
    json_object_set_new(root, "figures", figures);
    json_t *bottleneck = json_object();
    json_object_set_new(bottleneck, "base", *r->bottleneck_base ? json_string(r->bottleneck_base) : json_null());
    json_object_set_new(bottleneck, "new", *r->bottleneck_new ? json_string(r->bottleneck_new) : json_null());
    json_object_set_new(root, "bottleneck", bottleneck);
    int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (rc == 0)
        fputc('\n', f);
    return rc ? SPS_EIO : 0;
}

int sps__cmp_render(FILE *f, enum sps_cmp_format format, int colour, const struct sps_cmp_result *r,
                    const struct sps_cmp_side *base, const struct sps_cmp_side *new_side) {
    int rc = 0;
    if (format == SPS_CMP_JSON)
        rc = render_json(f, r, base, new_side);
    else if (format == SPS_CMP_MARKDOWN)
        render_markdown(f, r, base, new_side);
    else
        render_text(f, colour, r, base, new_side);
    if (fflush(f) != 0 || ferror(f))
        return SPS_EIO;
    return rc;
}
