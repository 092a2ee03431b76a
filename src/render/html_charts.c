/* html_charts.c - report.html's per-step charts: step time, the recorded
 * values and the phase breakdown (see html_charts.h).  The machine's
 * metrics over time are in html_timelines.c. */
#include "render/html_charts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/bottleneck.h"
#include "render/html_units.h"
#include "render/svg_chart.h"
#include "stepscope.h"

/* More bars than this would be thinner than two pixels: steps are then
 * drawn in groups of k consecutive rows. */
#define MAX_BARS 600
/* The phase chart names the zones with the most self time; the rest are
 * summed as "other zones". */
#define MAX_PHASES 7
/* Values drawn one chart each; the rest are named in a note. */
#define MAX_VALUE_CHARTS 4
#define VALUE_CHART_HEIGHT 240.0

/* A neutral palette, one hue per series; warm-up is always orange. */
static const char *const PALETTE[] = {"#4e79a7", "#59a14f", "#b07aa1", "#76b7b2", "#e15759",
                                      "#edc948", "#9c755f", "#ff9da7", "#17becf", "#8c564b"};
#define PALETTE_N (sizeof PALETTE / sizeof PALETTE[0])
#define COLOR_STEADY "#4e79a7"
#define COLOR_STEADY_P90 "#b4c8de" /* a group's median to p90, the steady hue lightened */
#define COLOR_WARMUP_P90 "#f9c997"
#define COLOR_P50 "#2f7d32"
#define COLOR_P90 "#c62828"
#define COLOR_OUTSIDE_ZONES "#c7cbd1"
#define COLOR_OTHER "#9aa1ab"

const char *html_palette(size_t i) {
    return PALETTE[i % PALETTE_N];
}

int html_steps_load(const struct sps_report *rep, struct html_steps *s) {
    memset(s, 0, sizeof *s);
    const struct sps_run *run = &rep->run;
    size_t n = run->nsteps;
    if (n == 0)
        return 0;
    s->start_s = malloc(n * sizeof *s->start_s);
    s->duration_s = malloc(n * sizeof *s->duration_s);
    s->warm = malloc(n);
    if (!s->start_s || !s->duration_s || !s->warm) {
        html_steps_free(s);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct sps_step_row *r = &run->steps[i];
        s->start_s[i] = ((double)r->start_ns - (double)run->start_ns) * 1e-9;
        s->duration_s[i] = (double)(r->end_ns - r->start_ns) * 1e-9;
        s->warm[i] = r->warmup != 0;
        s->nwarm += s->warm[i];
    }
    s->rows = run->steps;
    s->n = n;
    return 0;
}

void html_steps_free(struct html_steps *s) {
    free(s->start_s);
    free(s->duration_s);
    free(s->warm);
    free(s->owned_rows);
    memset(s, 0, sizeof *s);
}

void html_section_begin(FILE *out, const char *id, const char *title, const char *what) {
    fprintf(out, "<section id=\"%s\">\n<h2>", id);
    svg_write_escaped(out, title);
    fputs("</h2>\n<p class=\"what\">", out);
    svg_write_escaped(out, what);
    fputs("</p>\n", out);
}

void html_write_empty(FILE *out, const char *why) {
    fputs("<p class=\"empty\">", out);
    svg_write_escaped(out, why);
    fputs("</p>\n", out);
}

void html_write_note(FILE *out, const char *note) {
    if (!note || !*note)
        return;
    fputs("<p class=\"note\">", out);
    svg_write_escaped(out, note);
    fputs("</p>\n", out);
}

/* Rows per bar so that at most MAX_BARS bars are drawn. */
static size_t rows_per_bar(size_t n) {
    return n <= MAX_BARS ? 1 : (n + MAX_BARS - 1) / MAX_BARS;
}

/* How the run was recorded, as the bottleneck analysis says: "python",
 * "c" or "unknown" (the language of the hints below). */
static const char *run_face(const struct sps_report *rep) {
    return sps__bn_face_name(rep->analysis.bottleneck.face);
}

/* Why the step charts are empty. */
static void steps_missing_reason(const struct sps_report *rep, char *buf, size_t len) {
    uint64_t count = rep->run.steps_recorded;
    if (count > 0)
        snprintf(buf, len,
                 "%llu steps were counted, but no step row was kept (the step rings dropped them), so there is "
                 "nothing to draw per step.",
                 (unsigned long long)count);
    else if (!strcmp(run_face(rep), "python"))
        snprintf(buf, len,
                 "No step was recorded: the program never ended a `with stepscope.step():` block (nor an "
                 "optimizer step under stepscope.torch.instrument), so there is no step time to draw.");
    else if (!strcmp(run_face(rep), "c"))
        snprintf(buf, len,
                 "No step was recorded: the program never ended a SPS_STEP() or SPS_STEP_NAMED() "
                 "scope, so there is no step time to draw.");
    else
        snprintf(buf, len,
                 "No step was recorded: the program never ended a step (SPS_STEP() in C, `with "
                 "stepscope.step():` in Python), so there is no step time to draw.");
}

/* The step name with the most completed steps, or NULL. */
static const struct sps_name_summary *main_step_name(const struct sps_run *run) {
    const struct sps_name_summary *best = NULL;
    for (size_t i = 0; i < run->nnames; i++) {
        const struct sps_name_summary *n = &run->names[i];
        if (n->kind == SPS_KIND_STEP && (!best || n->stats.count > best->stats.count))
            best = n;
    }
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile p (0..100) of d[0..n), sorted ascending; NAN
 * for none.  The step table's p50 and p90 are defined so too. */
static double nearest_rank(const double *d, size_t n, int p) {
    if (!n)
        return NAN;
    size_t r = (n * (size_t)p + 99) / 100;
    return d[(r ? r : 1) - 1];
}

/* The finite durations of rows [lo, hi), sorted, into d; returns how many. */
static size_t sorted_durations(const struct html_steps *s, size_t lo, size_t hi, double *d) {
    size_t n = 0;
    for (size_t i = lo; i < hi; i++)
        if (isfinite(s->duration_s[i]))
            d[n++] = s->duration_s[i];
    qsort(d, n, sizeof *d, cmp_double);
    return n;
}

/* What the step-time chart says under it: how much it drew, how a group
 * reads, a longest step above the axis (which reaches the tallest group's
 * p90), where p50 and p90 come from, and the steps it could not draw. */
static void step_time_note(const struct sps_report *rep, const struct html_steps *s, size_t k, int from_rows,
                           const char *step_name, double axis_max_s, char *note, size_t len) {
    size_t used = 0;
#define ADD(...)                                                                                                   \
    do {                                                                                                           \
        int n_ = snprintf(note + used, len - used, __VA_ARGS__);                                                   \
        if (n_ > 0)                                                                                                \
            used = used + (size_t)n_ < len ? used + (size_t)n_ : len - 1;                                          \
    } while (0)
    note[0] = '\0';
    ADD("%zu steps drawn, %zu of them warm-up.", s->n, s->nwarm);
    if (k > 1)
        ADD(" Each bar is %zu consecutive steps: its solid part reaches their median and its light part their "
            "90th percentile; it is orange when any of them is warm-up.",
            k);
    double longest = 0;
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->duration_s[i]) && s->duration_s[i] > longest)
            longest = s->duration_s[i];
    if (longest > axis_max_s) {
        char v[32];
        ADD(" The longest step, %s, is above the p90 of every group, and off the axis.",
            html_fmt_duration(v, sizeof v, longest));
    }
    if (from_rows)
        ADD(" p50 and p90 are taken over the rows drawn.");
    else if (step_name)
        ADD(" p50 and p90 are those of the step \"%s\" in the zone table.", step_name);
    uint64_t first = s->rows[0].index;
    uint64_t missing = rep->run.steps_recorded > s->n ? rep->run.steps_recorded - s->n : 0;
    if (first > 0)
        ADD(" The step ring dropped the earliest rows: the first row drawn is step %llu of its thread, so steps 0 "
            "to %llu are not drawn (%llu steps recorded, %zu kept).",
            (unsigned long long)first, (unsigned long long)first - 1, (unsigned long long)rep->run.steps_recorded,
            s->n);
    else if (missing)
        ADD(" %llu of the %llu steps recorded have no row (the step rings dropped them) and are not drawn.",
            (unsigned long long)missing, (unsigned long long)rep->run.steps_recorded);
#undef ADD
}

/* One bar of the step-time chart: a row, or a group of k rows. */
struct step_bar {
    double median, p90; /* of the group's durations (a row's: its duration, twice); NAN: none known */
    int warm;           /* some row of it is warm-up */
};

/* The bars for groups of k rows into *out (malloc'd, (n + k - 1) / k of
 * them); 0 or SPS_ENOMEM. */
static int step_bars(const struct html_steps *s, size_t k, struct step_bar **out) {
    size_t nbars = (s->n + k - 1) / k;
    struct step_bar *bars = malloc(nbars * sizeof *bars);
    double *d = malloc(k * sizeof *d);
    if (!bars || !d) {
        free(bars);
        free(d);
        return SPS_ENOMEM;
    }
    for (size_t b = 0; b < nbars; b++) {
        size_t lo = b * k, hi = lo + k < s->n ? lo + k : s->n;
        bars[b].warm = 0;
        for (size_t i = lo; i < hi; i++)
            bars[b].warm |= s->warm[i];
        size_t n = sorted_durations(s, lo, hi, d);
        bars[b].median = nearest_rank(d, n, 50);
        bars[b].p90 = nearest_rank(d, n, 90);
    }
    free(d);
    *out = bars;
    return 0;
}

/* Draw the bars: the median solid, up to the p90 lighter (groups only). */
static void draw_step_bars(struct svg_chart *c, const struct step_bar *bars, size_t n, size_t k,
                           struct html_unit u) {
    size_t nbars = (n + k - 1) / k;
    /* a gap between bars while they are wide enough to afford one */
    double bar_px = (c->plot_right - c->plot_left) / (double)nbars;
    double gap = bar_px > 4 ? 0.15 * (double)k : 0;
    for (size_t b = 0; b < nbars; b++) {
        if (!isfinite(bars[b].median))
            continue;
        size_t lo = b * k, hi = lo + k < n ? lo + k : n;
        double x0 = (double)lo + gap / 2, x1 = (double)hi - gap / 2;
        svg_chart_rect(c, x0, x1, 0, bars[b].median / u.div, bars[b].warm ? HTML_COLOR_WARMUP : COLOR_STEADY);
        if (k > 1 && bars[b].p90 > bars[b].median)
            svg_chart_rect(c, x0, x1, bars[b].median / u.div, bars[b].p90 / u.div,
                           bars[b].warm ? COLOR_WARMUP_P90 : COLOR_STEADY_P90);
    }
}

int html_write_step_time(FILE *out, const struct sps_report *rep, const struct html_steps *s) {
    html_section_begin(out, "step-time", "Step time per step",
                       "How long each step took, in the order of the step table. Warm-up steps (the slow first "
                       "steps stepscope detected) are orange; the dashed lines are the median (p50) and the 90th "
                       "percentile (p90) of all steps, with the band between them shaded.");
    if (s->n == 0) {
        char why[256];
        steps_missing_reason(rep, why, sizeof why);
        html_write_empty(out, why);
        fputs("</section>\n", out);
        return 0;
    }
    const struct sps_name_summary *step_name = main_step_name(&rep->run);
    double p50 = step_name && step_name->stats.count ? step_name->stats.p50_s : NAN;
    double p90 = step_name && step_name->stats.count ? step_name->stats.p90_s : NAN;
    int from_rows = !isfinite(p50) || !isfinite(p90);
    if (from_rows) {
        double *d = malloc(s->n * sizeof *d);
        if (!d)
            return SPS_ENOMEM;
        size_t n = sorted_durations(s, 0, s->n, d);
        p50 = nearest_rank(d, n, 50);
        p90 = nearest_rank(d, n, 90);
        free(d);
    }
    size_t k = rows_per_bar(s->n), nbars = (s->n + k - 1) / k;
    struct step_bar *bars;
    if (step_bars(s, k, &bars) != 0)
        return SPS_ENOMEM;
    /* the axis reaches the tallest bar (a group's p90), or the run's p90 */
    double max_s = 0;
    for (size_t b = 0; b < nbars; b++)
        if (isfinite(bars[b].p90) && bars[b].p90 > max_s)
            max_s = bars[b].p90;
    if (isfinite(p90) && p90 > max_s)
        max_s = p90;
    struct html_unit u = html_duration_unit(max_s);

    char y_title[64], p50_label[64], p90_label[64], v[32];
    snprintf(y_title, sizeof y_title, "step time (%s)", u.name);
    snprintf(p50_label, sizeof p50_label, "p50 %s", html_fmt_duration(v, sizeof v, p50));
    snprintf(p90_label, sizeof p90_label, "p90 %s", html_fmt_duration(v, sizeof v, p90));
    struct svg_legend_item legend[6];
    size_t nl = 0;
    legend[nl++] = (struct svg_legend_item){k > 1 ? "median of a group" : "step", COLOR_STEADY, 0, 0};
    if (k > 1)
        legend[nl++] = (struct svg_legend_item){"p90 of a group", COLOR_STEADY_P90, 0, 0};
    if (s->nwarm)
        legend[nl++] = (struct svg_legend_item){k > 1 ? "group with warm-up steps" : "warm-up step",
                                                HTML_COLOR_WARMUP, 0, 0};
    if (isfinite(p50))
        legend[nl++] = (struct svg_legend_item){p50_label, COLOR_P50, 1, 1};
    if (isfinite(p90))
        legend[nl++] = (struct svg_legend_item){p90_label, COLOR_P90, 1, 1};
    struct svg_axes axes = {0, (double)s->n, k > 1 ? "step (row of the step table; one bar per group of steps)"
                                                    : "step (row of the step table)",
                            1, 0, max_s / u.div, y_title, 1};
    struct svg_chart c;
    svg_chart_begin(&c, out, HTML_CHART_WIDTH, HTML_CHART_HEIGHT, "step time per step", &axes, legend, nl);
    if (isfinite(p50) && isfinite(p90))
        svg_chart_yband(&c, p50 / u.div, p90 / u.div, COLOR_P90, 0.07);
    draw_step_bars(&c, bars, s->n, k, u);
    free(bars);
    /* the legend names the lines with their values: a label at the line
     * itself would sit on the bars */
    svg_chart_hline(&c, p50 / u.div, COLOR_P50, 1, NULL, 0);
    svg_chart_hline(&c, p90 / u.div, COLOR_P90, 1, NULL, 0);
    svg_chart_end(&c);

    char note[1024];
    step_time_note(rep, s, k, from_rows, step_name ? step_name->name : NULL, max_s, note, sizeof note);
    html_write_note(out, note);
    fputs("</section>\n", out);
    return 0;
}

/* ---------------------------------------------------------------- values */

/* One value's chart: its last reading in each step (the mean over a group
 * of k steps) against the step, on the step-time chart's x axis. */
static int write_value_chart(FILE *out, const struct html_steps *s, const struct sps_name_summary *name,
                             size_t column, size_t k, const char *color) {
    size_t npts = (s->n + k - 1) / k;
    double *x = malloc(npts * sizeof *x), *y = malloc(npts * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return SPS_ENOMEM;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (size_t b = 0; b < npts; b++) {
        size_t from = b * k, to = from + k < s->n ? from + k : s->n, m = 0;
        double sum = 0;
        for (size_t i = from; i < to; i++) {
            double v = s->rows[i].by_name[column];
            if (isfinite(v)) {
                sum += v;
                m++;
            }
        }
        x[b] = 0.5 * (double)(from + to);
        y[b] = m ? sum / (double)m : NAN;
        if (m) {
            lo = fmin(lo, y[b]);
            hi = fmax(hi, y[b]);
        }
    }
    struct svg_legend_item legend[1] = {{name->name, color, 1, 0}};
    struct svg_axes axes = {0, (double)s->n, "step (row of the step table)", 1, lo, hi, name->name, 0};
    struct svg_chart c;
    svg_chart_begin(&c, out, HTML_CHART_WIDTH, VALUE_CHART_HEIGHT, name->name, &axes, legend, 1);
    svg_chart_line(&c, x, y, npts, 1, color, 2, 0);
    svg_chart_end(&c);
    free(x);
    free(y);
    return 0;
}

int html_write_values(FILE *out, const struct sps_report *rep, const struct html_steps *s) {
    const struct sps_run *run = &rep->run;
    size_t columns[MAX_VALUE_CHARTS], nvalues = 0, more = 0;
    for (size_t k = 0; k < run->nnames; k++) {
        if (run->names[k].kind != SPS_KIND_VALUE)
            continue;
        if (strncmp(run->names[k].name, "torch.cuda.", 11) == 0)
            continue; /* charted together by html_write_torch_memory */
        int in_a_step = 0;
        for (size_t i = 0; i < s->n && !in_a_step; i++)
            in_a_step = isfinite(s->rows[i].by_name[k]);
        if (!in_a_step)
            continue;
        if (nvalues < MAX_VALUE_CHARTS)
            columns[nvalues++] = k;
        else
            more++;
    }
    if (!nvalues)
        return 0;
    html_section_begin(out, "values", "Recorded values per step",
                       "The values the program recorded (SPS_VALUE, stepscope.record), such as the loss, against "
                       "the step, on the step time chart's axis: each step's last reading.");
    size_t k = rows_per_bar(s->n);
    for (size_t i = 0; i < nvalues; i++)
        if (write_value_chart(out, s, &run->names[columns[i]], columns[i], k, html_palette(i + 1)) != 0)
            return SPS_ENOMEM;
    char note[256] = "";
    int len = 0;
    if (k > 1)
        len = snprintf(note, sizeof note, "Each point is the mean over %zu consecutive steps.", k);
    if (more && len >= 0 && (size_t)len < sizeof note)
        snprintf(note + len, sizeof note - (size_t)len, "%s%zu more values are in report.json and steps.csv.",
                 len ? " " : "", more);
    html_write_note(out, note);
    fputs("</section>\n", out);
    return 0;
}

/* ---------------------------------------------------------------- phases */

/* One stacked component of the phase chart. */
struct phase {
    long column; /* the zone's index in run.names; -1 for "other zones" / "not in a zone" */
    const char *label;
    const char *color;
    double total_s; /* self time over all rows, to rank the zones */
};

static int phase_cmp(const void *a, const void *b) {
    const struct phase *x = a, *y = b;
    if (x->total_s != y->total_s)
        return x->total_s < y->total_s ? 1 : -1;
    return strcmp(x->label, y->label);
}

/* Why the phase chart has no zone to stack, in the run's language. */
static void no_phases_reason(const struct sps_report *rep, char *why, size_t len) {
    const char *face = run_face(rep);
    snprintf(why, len,
             "The steps own no zone events (no %s inside a step, or the zone rings dropped them), so there is "
             "no breakdown to draw.",
             !strcmp(face, "python") ? "`with stepscope.zone(...)` block"
             : !strcmp(face, "c")    ? "SPS_ZONE()"
                                     : "zone (SPS_ZONE() in C, stepscope.zone in Python)");
}

/* Every zone name some row owns time of, with its self time summed over
 * the rows, into *all (malloc'd, ranked); returns how many, or -1 when
 * out of memory. */
static long rank_zones(const struct sps_run *run, const struct html_steps *s, struct phase **all) {
    *all = NULL;
    size_t nall = 0;
    struct phase *list = malloc((run->nnames ? run->nnames : 1) * sizeof *list);
    if (!list)
        return -1;
    for (size_t k = 0; k < run->nnames; k++) {
        if (!sps_kind_is_span(run->names[k].kind)) /* waits are a step's time as zones are */
            continue;
        double total = 0;
        int owned = 0;
        for (size_t i = 0; i < s->n; i++)
            if (!isnan(s->rows[i].by_name[k])) {
                total += s->rows[i].by_name[k];
                owned = 1;
            }
        if (owned)
            list[nall++] = (struct phase){(long)k, run->names[k].name, NULL, total};
    }
    qsort(list, nall, sizeof *list, phase_cmp);
    *all = list;
    return (long)nall;
}

int html_write_phases(FILE *out, const struct sps_report *rep, const struct html_steps *s) {
    const struct sps_run *run = &rep->run;
    html_section_begin(out, "phases", "Phase breakdown per step",
                       "Where each step's time went: the self time of each zone the step owns, stacked, with the "
                       "zones of least time summed as \"other zones\" and the part of the step outside every zone "
                       "on top.");
    char why[256];
    if (s->n == 0) {
        steps_missing_reason(rep, why, sizeof why);
        html_write_empty(out, why);
        fputs("</section>\n", out);
        return 0;
    }
    struct phase *all;
    long ranked = rank_zones(run, s, &all);
    if (ranked < 0)
        return SPS_ENOMEM;
    size_t nall = (size_t)ranked;
    if (nall == 0) {
        no_phases_reason(rep, why, sizeof why);
        html_write_empty(out, why);
        free(all);
        fputs("</section>\n", out);
        return 0;
    }
    size_t named = nall <= MAX_PHASES ? nall : MAX_PHASES - 1;
    struct phase ph[MAX_PHASES + 2];
    size_t nph = 0;
    for (size_t j = 0; j < named; j++) {
        ph[nph] = all[j];
        ph[nph].color = PALETTE[nph % PALETTE_N];
        nph++;
    }
    size_t other = SIZE_MAX, outside = nph + (named < nall);
    if (named < nall) {
        other = nph;
        ph[nph++] = (struct phase){-1, "other zones", COLOR_OTHER, 0};
    }
    ph[nph++] = (struct phase){-1, "not in a zone", COLOR_OUTSIDE_ZONES, 0};

    size_t k = rows_per_bar(s->n), nbars = (s->n + k - 1) / k;
    double *stack = calloc(nbars * nph, sizeof *stack);
    if (!stack) {
        free(all);
        return SPS_ENOMEM;
    }
    /* each bar: the mean over its rows of each component */
    double max_s = 0;
    for (size_t b = 0; b < nbars; b++) {
        size_t lo = b * k, hi = lo + k < s->n ? lo + k : s->n;
        double *row = stack + b * nph, bar_total = 0;
        for (size_t i = lo; i < hi; i++) {
            double in_zones = 0;
            for (size_t j = 0; j < nall; j++) {
                double v = s->rows[i].by_name[all[j].column];
                if (isnan(v))
                    continue;
                in_zones += v;
                row[j < named ? j : other] += v;
            }
            double rest = isfinite(s->duration_s[i]) ? s->duration_s[i] - in_zones : 0;
            row[outside] += rest > 0 ? rest : 0;
        }
        for (size_t j = 0; j < nph; j++) {
            row[j] /= (double)(hi - lo);
            bar_total += row[j];
        }
        if (bar_total > max_s)
            max_s = bar_total;
    }
    struct html_unit u = html_duration_unit(max_s);
    char y_title[64];
    snprintf(y_title, sizeof y_title, "time in the step (%s)", u.name);
    struct svg_legend_item legend[MAX_PHASES + 2];
    for (size_t j = 0; j < nph; j++)
        legend[j] = (struct svg_legend_item){ph[j].label, ph[j].color, 0, 0};
    struct svg_axes axes = {0, (double)s->n, k > 1 ? "step (row of the step table; one bar per group of steps)"
                                                    : "step (row of the step table)",
                            1, 0, max_s / u.div, y_title, 1};
    struct svg_chart c;
    svg_chart_begin(&c, out, HTML_CHART_WIDTH, HTML_CHART_HEIGHT, "phase breakdown per step", &axes, legend, nph);
    double bar_px = (c.plot_right - c.plot_left) / (double)nbars;
    double gap = bar_px > 4 ? 0.15 * (double)k : 0;
    for (size_t b = 0; b < nbars; b++) {
        size_t lo = b * k, hi = lo + k < s->n ? lo + k : s->n;
        double base = 0;
        for (size_t j = 0; j < nph; j++) {
            double v = stack[b * nph + j];
            if (v > 0)
                svg_chart_rect(&c, (double)lo + gap / 2, (double)hi - gap / 2, base / u.div, (base + v) / u.div,
                               ph[j].color);
            base += v;
        }
    }
    svg_chart_end(&c);
    char note[256];
    if (k > 1)
        snprintf(note, sizeof note,
                 "Each bar is %zu consecutive steps and shows their mean. %zu zone names in all; self time "
                 "excludes nested zones, so the stack adds up to the step time.",
                 k, nall);
    else
        snprintf(note, sizeof note,
                 "%zu zone names in all; self time excludes nested zones, so the stack adds up to the step time.",
                 nall);
    html_write_note(out, note);
    free(stack);
    free(all);
    fputs("</section>\n", out);
    return 0;
}
