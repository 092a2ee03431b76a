/* html_charts.c - the chart sections of report.html (see html_charts.h). */
#include "render/html_charts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/html_units.h"
#include "render/svg_chart.h"
#include "stepscope.h"

#define CHART_WIDTH 1200.0
#define CHART_HEIGHT 330.0
/* More bars than this would be thinner than two pixels: steps are then
 * drawn in groups of k consecutive rows. */
#define MAX_BARS 600
/* At most this many step boundaries are drawn on a time chart; beyond it
 * every k-th step start is. */
#define MAX_BOUNDARIES 120
/* The phase chart names the zones with the most self time; the rest are
 * summed as "other zones". */
#define MAX_PHASES 7

/* A neutral palette, one hue per series; warm-up is always orange. */
static const char *const PALETTE[] = {"#4e79a7", "#59a14f", "#b07aa1", "#76b7b2", "#e15759",
                                      "#edc948", "#9c755f", "#ff9da7", "#17becf", "#8c564b"};
#define PALETTE_N (sizeof PALETTE / sizeof PALETTE[0])
#define COLOR_STEADY "#4e79a7"
#define COLOR_WARMUP "#f28e2b"
#define COLOR_P50 "#2f7d32"
#define COLOR_P90 "#c62828"
#define COLOR_BOUNDARY "#6b7280"
#define COLOR_OUTSIDE_ZONES "#c7cbd1"
#define COLOR_OTHER "#9aa1ab"

int html_steps_load(const json_t *report, struct html_steps *s) {
    memset(s, 0, sizeof *s);
    json_t *rows = json_object_get(json_object_get(report, "steps"), "rows");
    size_t n = json_array_size(rows);
    if (n == 0)
        return 0;
    s->start_s = malloc(n * sizeof *s->start_s);
    s->duration_s = malloc(n * sizeof *s->duration_s);
    s->warm = malloc(n);
    s->rows = malloc(n * sizeof *s->rows);
    if (!s->start_s || !s->duration_s || !s->warm || !s->rows) {
        html_steps_free(s);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(rows, i);
        s->rows[i] = r;
        s->start_s[i] = html_num(r, "start_s");
        s->duration_s[i] = html_num(r, "duration_s");
        s->warm[i] = json_is_true(json_object_get(r, "warmup"));
        s->nwarm += s->warm[i];
    }
    s->n = n;
    return 0;
}

void html_steps_free(struct html_steps *s) {
    free(s->start_s);
    free(s->duration_s);
    free(s->warm);
    free(s->rows);
    memset(s, 0, sizeof *s);
}

static void section_begin(FILE *out, const char *id, const char *title, const char *what) {
    fprintf(out, "<section id=\"%s\">\n<h2>", id);
    svg_write_escaped(out, title);
    fputs("</h2>\n<p class=\"what\">", out);
    svg_write_escaped(out, what);
    fputs("</p>\n", out);
}

/* Why a chart has nothing to draw, in place of the chart. */
static void write_empty(FILE *out, const char *why) {
    fputs("<p class=\"empty\">", out);
    svg_write_escaped(out, why);
    fputs("</p>\n", out);
}

static void write_note(FILE *out, const char *note) {
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
static const char *run_face(const json_t *report) {
    const char *face = html_str(json_object_get(json_object_get(report, "analysis"), "bottleneck"), "advice_for");
    return face ? face : "unknown";
}

/* Why the step charts are empty. */
static void steps_missing_reason(const json_t *report, char *buf, size_t len) {
    json_t *steps = json_object_get(report, "steps");
    double count = html_num(steps, "count");
    if (count > 0)
        snprintf(buf, len,
                 "%.0f steps were counted, but no step row was kept (the step rings dropped them), so there is "
                 "nothing to draw per step.",
                 count);
    else if (!strcmp(run_face(report), "python"))
        snprintf(buf, len,
                 "No step was recorded: the program never ended a `with stepscope.step():` block (nor an "
                 "optimizer step under stepscope.torch.instrument), so there is no step time to draw.");
    else if (!strcmp(run_face(report), "c"))
        snprintf(buf, len,
                 "No step was recorded: the program never ended a SPS_STEP() or SPS_STEP_NAMED() "
                 "scope, so there is no step time to draw.");
    else
        snprintf(buf, len,
                 "No step was recorded: the program never ended a step (SPS_STEP() in C, `with "
                 "stepscope.step():` in Python), so there is no step time to draw.");
}

/* The step name with the most completed steps (its zones[] entry), or NULL. */
static const json_t *main_step_zone(const json_t *report) {
    const json_t *best = NULL;
    json_t *zones = json_object_get(report, "zones");
    for (size_t i = 0; i < json_array_size(zones); i++) {
        json_t *z = json_array_get(zones, i);
        const char *kind = html_str(z, "kind");
        if (!kind || strcmp(kind, "step") != 0)
            continue;
        if (!best || html_num(z, "count") > html_num(best, "count"))
            best = z;
    }
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank p50 and p90 of the rows' durations, as report.json defines
 * them, for a report whose zones[] has no statistics for the step. */
static int rows_percentiles(const struct html_steps *s, double *p50, double *p90) {
    double *d = malloc(s->n * sizeof *d);
    if (!d)
        return SPS_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->duration_s[i]))
            d[n++] = s->duration_s[i];
    *p50 = *p90 = NAN;
    if (n) {
        qsort(d, n, sizeof *d, cmp_double);
        size_t r50 = (n * 50 + 99) / 100, r90 = (n * 90 + 99) / 100;
        *p50 = d[(r50 ? r50 : 1) - 1];
        *p90 = d[(r90 ? r90 : 1) - 1];
    }
    free(d);
    return 0;
}

int html_write_step_time(FILE *out, const json_t *report, const struct html_steps *s) {
    section_begin(out, "step-time", "Step time per step",
                  "How long each step took, in the order of the step table. Warm-up steps (the slow first steps "
                  "stepscope detected) are orange; the dashed lines are the median (p50) and the 90th percentile "
                  "(p90) of all steps, with the band between them shaded.");
    if (s->n == 0) {
        char why[256];
        steps_missing_reason(report, why, sizeof why);
        write_empty(out, why);
        fputs("</section>\n", out);
        return 0;
    }
    const json_t *step_zone = main_step_zone(report);
    double p50 = html_num(step_zone, "p50_s"), p90 = html_num(step_zone, "p90_s");
    int from_rows = !isfinite(p50) || !isfinite(p90);
    if (from_rows && rows_percentiles(s, &p50, &p90) != 0)
        return SPS_ENOMEM;
    size_t k = rows_per_bar(s->n), nbars = (s->n + k - 1) / k;
    double max_s = 0;
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->duration_s[i]) && s->duration_s[i] > max_s)
            max_s = s->duration_s[i];
    if (isfinite(p90) && p90 > max_s)
        max_s = p90;
    struct html_unit u = html_duration_unit(max_s);

    char y_title[64], p50_label[64], p90_label[64], v[32];
    snprintf(y_title, sizeof y_title, "step time (%s)", u.name);
    html_fmt_duration(v, sizeof v, p50);
    snprintf(p50_label, sizeof p50_label, "p50 %s", v);
    html_fmt_duration(v, sizeof v, p90);
    snprintf(p90_label, sizeof p90_label, "p90 %s", v);
    struct svg_legend_item legend[4];
    size_t nl = 0;
    legend[nl++] = (struct svg_legend_item){"step", COLOR_STEADY, 0, 0};
    if (s->nwarm)
        legend[nl++] = (struct svg_legend_item){"warm-up step", COLOR_WARMUP, 0, 0};
    if (isfinite(p50))
        legend[nl++] = (struct svg_legend_item){p50_label, COLOR_P50, 1, 1};
    if (isfinite(p90))
        legend[nl++] = (struct svg_legend_item){p90_label, COLOR_P90, 1, 1};
    struct svg_axes axes = {0, (double)s->n, k > 1 ? "step (row of the step table; one bar per group of steps)"
                                                    : "step (row of the step table)",
                            1, 0, max_s / u.div, y_title, 1};
    struct svg_chart c;
    svg_chart_begin(&c, out, CHART_WIDTH, CHART_HEIGHT, "step time per step", &axes, legend, nl);
    if (isfinite(p50) && isfinite(p90))
        svg_chart_yband(&c, p50 / u.div, p90 / u.div, COLOR_P90, 0.07);
    /* a gap between bars while they are wide enough to afford one */
    double bar_px = (c.plot_right - c.plot_left) / (double)nbars;
    double gap = bar_px > 4 ? 0.15 * (double)k : 0;
    for (size_t b = 0; b < nbars; b++) {
        size_t lo = b * k, hi = lo + k < s->n ? lo + k : s->n;
        double longest = NAN;
        int any_warm = 0;
        for (size_t i = lo; i < hi; i++) {
            if (isfinite(s->duration_s[i]) && !(s->duration_s[i] <= longest))
                longest = s->duration_s[i];
            any_warm |= s->warm[i];
        }
        if (isfinite(longest))
            svg_chart_rect(&c, (double)lo + gap / 2, (double)hi - gap / 2, 0, longest / u.div,
                           any_warm ? COLOR_WARMUP : COLOR_STEADY);
    }
    /* the legend names the lines with their values: a label at the line
     * itself would sit on the bars */
    svg_chart_hline(&c, p50 / u.div, COLOR_P50, 1, NULL, 0);
    svg_chart_hline(&c, p90 / u.div, COLOR_P90, 1, NULL, 0);
    svg_chart_end(&c);

    char note[512];
    int len = snprintf(note, sizeof note, "%zu steps drawn, %zu of them warm-up.", s->n, s->nwarm);
    if (k > 1 && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len,
                        " Each bar is %zu consecutive steps and shows the longest of them; it is orange when any of "
                        "them is warm-up.",
                        k);
    const char *name = html_str(step_zone, "name");
    if (len > 0 && (size_t)len < sizeof note) {
        if (from_rows)
            snprintf(note + len, sizeof note - (size_t)len, " p50 and p90 are taken over the rows drawn.");
        else if (name)
            snprintf(note + len, sizeof note - (size_t)len,
                     " p50 and p90 are those of the step \"%s\" in the zone table.", name);
    }
    write_note(out, note);
    fputs("</section>\n", out);
    return 0;
}

/* One stacked component of the phase chart. */
struct phase {
    const char *name; /* a zone name, or NULL for "other zones" / "not in a zone" */
    const char *label;
    const char *color;
    double total_s;   /* self time over all rows, to rank the zones */
};

static int phase_cmp(const void *a, const void *b) {
    const struct phase *x = a, *y = b;
    if (x->total_s != y->total_s)
        return x->total_s < y->total_s ? 1 : -1;
    return strcmp(x->name, y->name);
}

int html_write_phases(FILE *out, const json_t *report, const struct html_steps *s) {
    section_begin(out, "phases", "Phase breakdown per step",
                  "Where each step's time went: the self time of each zone the step owns, stacked, with the zones "
                  "of least time summed as \"other zones\" and the part of the step outside every zone on top.");
    if (s->n == 0) {
        char why[256];
        steps_missing_reason(report, why, sizeof why);
        write_empty(out, why);
        fputs("</section>\n", out);
        return 0;
    }
    /* every zone name in the rows, with its self time summed */
    struct phase *all = NULL;
    size_t nall = 0, cap = 0;
    for (size_t i = 0; i < s->n; i++) {
        json_t *zs = json_object_get(s->rows[i], "zones_self_s");
        const char *key;
        json_t *val;
        json_object_foreach(zs, key, val) {
            size_t j = 0;
            while (j < nall && strcmp(all[j].name, key) != 0)
                j++;
            if (j == nall) {
                if (nall == cap) {
                    size_t ncap = cap ? cap * 2 : 16;
                    struct phase *grown = realloc(all, ncap * sizeof *all);
                    if (!grown) {
                        free(all);
                        return SPS_ENOMEM;
                    }
                    all = grown;
                    cap = ncap;
                }
                all[nall++] = (struct phase){key, key, NULL, 0};
            }
            if (json_is_number(val))
                all[j].total_s += json_number_value(val);
        }
    }
    if (nall == 0) {
        const char *face = run_face(report);
        char why[256];
        snprintf(why, sizeof why,
                 "The steps own no zone events (no %s inside a step, or the zone rings dropped them), so there is "
                 "no breakdown to draw.",
                 !strcmp(face, "python") ? "`with stepscope.zone(...)` block"
                 : !strcmp(face, "c")    ? "SPS_ZONE()"
                                         : "zone (SPS_ZONE() in C, stepscope.zone in Python)");
        write_empty(out, why);
        free(all);
        fputs("</section>\n", out);
        return 0;
    }
    qsort(all, nall, sizeof *all, phase_cmp);
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
        ph[nph++] = (struct phase){NULL, "other zones", COLOR_OTHER, 0};
    }
    ph[nph++] = (struct phase){NULL, "not in a zone", COLOR_OUTSIDE_ZONES, 0};

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
            json_t *zs = json_object_get(s->rows[i], "zones_self_s");
            double in_zones = 0;
            const char *key;
            json_t *val;
            json_object_foreach(zs, key, val) {
                double v = json_is_number(val) ? json_number_value(val) : 0;
                in_zones += v;
                size_t j = 0;
                while (j < named && strcmp(ph[j].name, key) != 0)
                    j++;
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
    svg_chart_begin(&c, out, CHART_WIDTH, CHART_HEIGHT, "phase breakdown per step", &axes, legend, nph);
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
    write_note(out, note);
    free(stack);
    free(all);
    fputs("</section>\n", out);
    return 0;
}

/* ------------------------------------------------------------ timelines */

/* The kinds of y axis a timeline chart can have. */
enum axis_kind { AXIS_BYTES, AXIS_PERCENT, AXIS_CELSIUS, AXIS_WATTS };

struct timeline_line {
    const json_t *series; /* a series.metrics[] entry with points */
    char label[96];
    const char *color;
    int filled; /* an area under the line as well */
};

#define MAX_LINES 24

struct timeline {
    const char *id, *title, *what, *y_name;
    enum axis_kind axis;
    struct timeline_line lines[MAX_LINES];
    size_t nlines;
    char missing[2048]; /* "label: reason; ..." for the metrics with no data */
};

/* The series of metric (for GPU gpu_index, or for the sensor labelled
 * sensor), or NULL when report.json has none with points. */
static const json_t *find_series(const json_t *report, const char *metric, int gpu_index, const char *sensor) {
    json_t *list = json_object_get(json_object_get(report, "series"), "metrics");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *m = json_array_get(list, i);
        const char *name = html_str(m, "metric");
        if (!name || strcmp(name, metric) != 0)
            continue;
        json_t *g = json_object_get(m, "gpu");
        if (gpu_index >= 0 ? !json_is_integer(g) || json_integer_value(g) != gpu_index : g != NULL)
            continue;
        const char *lab = html_str(m, "sensor");
        if (sensor ? !lab || strcmp(lab, sensor) != 0 : lab != NULL)
            continue;
        if (json_array_size(json_object_get(m, "t_s")) == 0)
            return NULL;
        return m;
    }
    return NULL;
}

static void add_missing(struct timeline *t, const char *label, const char *reason) {
    size_t len = strlen(t->missing);
    if (len + 8 >= sizeof t->missing)
        return;
    snprintf(t->missing + len, sizeof t->missing - len, "%s%s: %s", len ? "; " : "", label,
             reason ? reason : "no readings in report.json");
}

static void add_line(struct timeline *t, const json_t *series, const char *label, const char *color, int filled,
                     const char *reason_if_missing) {
    if (!series) {
        add_missing(t, label, reason_if_missing);
        return;
    }
    if (t->nlines == MAX_LINES)
        return;
    struct timeline_line *l = &t->lines[t->nlines++];
    l->series = series;
    snprintf(l->label, sizeof l->label, "%s", label);
    l->color = color;
    l->filled = filled;
}

/* A host metric's line, or its unavailable_reason when it has none. */
static void add_host(struct timeline *t, const json_t *report, const char *metric, const char *label,
                     const char *color, int filled) {
    const char *why = html_str(json_object_get(json_object_get(report, "metrics"), metric), "unavailable_reason");
    add_line(t, find_series(report, metric, -1, NULL), label, color, filled, why);
}

/* One line per GPU for metric; with no GPU, the reason there is none. */
static void add_gpus(struct timeline *t, const json_t *report, const char *metric, const char *what,
                     size_t color_base) {
    json_t *gpus = json_object_get(report, "gpus");
    if (json_array_size(gpus) == 0) {
        const char *why = html_str(report, "gpus_unavailable_reason");
        char label[96];
        snprintf(label, sizeof label, "GPU %s", what);
        add_missing(t, label, why ? why : "no GPU was read during the run");
        return;
    }
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        json_t *g = json_array_get(gpus, i);
        int index = (int)json_integer_value(json_object_get(g, "index"));
        char label[96];
        snprintf(label, sizeof label, "GPU %d %s", index, what);
        const char *why = html_str(json_object_get(json_object_get(g, "metrics"), metric), "unavailable_reason");
        add_line(t, find_series(report, metric, index, NULL), label, PALETTE[(color_base + i) % PALETTE_N], 0, why);
    }
}

/* Processes of the tree drawn one line each on the memory chart; the rest
 * are named in its note. */
#define MAX_PROCESS_LINES 8

/* One line per process of series.processes, when the tree had more than
 * one (a lone process's line would repeat the tree's).  A report.json
 * from before per-process series has none: nothing is added. */
static void add_processes(struct timeline *t, const json_t *report, size_t color_base) {
    json_t *list = json_object_get(json_object_get(report, "series"), "processes");
    size_t n = json_array_size(list);
    if (n < 2)
        return;
    size_t drawn = 0;
    for (size_t i = 0; i < n && drawn < MAX_PROCESS_LINES; i++) {
        json_t *p = json_array_get(list, i);
        if (json_array_size(json_object_get(p, "t_s")) == 0)
            continue;
        const char *comm = html_str(p, "comm");
        char label[96];
        snprintf(label, sizeof label, "pid %.0f (%s) RSS", html_num(p, "pid"), comm ? comm : "?");
        add_line(t, p, label, PALETTE[(color_base + drawn) % PALETTE_N], 0, NULL);
        drawn++;
    }
    if (n > drawn) {
        char more[96];
        snprintf(more, sizeof more, "%zu more processes", n - drawn);
        add_missing(t, more, "their series are in report.json (series.processes)");
    }
}

/* The time the charts span: the run's wall time, or the last point. */
static double timeline_end_s(const json_t *report, const struct html_steps *s) {
    double end = html_num(json_object_get(report, "timing"), "wall_s");
    if (!isfinite(end))
        end = 0;
    json_t *list = json_object_get(json_object_get(report, "series"), "metrics");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *ts = json_object_get(json_array_get(list, i), "t_s");
        size_t n = json_array_size(ts);
        if (n && json_number_value(json_array_get(ts, n - 1)) > end)
            end = json_number_value(json_array_get(ts, n - 1));
    }
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->start_s[i]) && isfinite(s->duration_s[i]) && s->start_s[i] + s->duration_s[i] > end)
            end = s->start_s[i] + s->duration_s[i];
    return end > 0 ? end : 1;
}

/* A step-boundary stride of 1, 2 or 5 times a power of ten that leaves at
 * most MAX_BOUNDARIES lines. */
static size_t boundary_stride(size_t n) {
    size_t k = 1;
    while (n / k > MAX_BOUNDARIES) {
        size_t d = k;
        while (d >= 10)
            d /= 10;
        k = d == 1 ? k * 2 : d == 2 ? k / 2 * 5 : k * 2;
    }
    return k;
}

static int write_timeline(FILE *out, const struct html_steps *s, const struct timeline *t,
                          double end_s) {
    section_begin(out, t->id, t->title, t->what);
    if (t->nlines == 0) {
        char why[2200];
        snprintf(why, sizeof why, "No data to draw. %s", t->missing[0] ? t->missing : "report.json has no series.");
        write_empty(out, why);
        fputs("</section>\n", out);
        return 0;
    }
    /* the points, converted once: x in the elapsed unit, y in the metric's */
    double y_min = INFINITY, y_max = -INFINITY;
    size_t npts[MAX_LINES];
    double *xs[MAX_LINES] = {0}, *ys[MAX_LINES] = {0};
    int rc = 0;
    struct html_unit xu = html_elapsed_unit(end_s);
    for (size_t l = 0; l < t->nlines; l++) {
        json_t *tv = json_object_get(t->lines[l].series, "t_s"), *mv = json_object_get(t->lines[l].series, "mean");
        size_t n = json_array_size(tv) < json_array_size(mv) ? json_array_size(tv) : json_array_size(mv);
        npts[l] = n;
        xs[l] = malloc((n ? n : 1) * sizeof(double));
        ys[l] = malloc((n ? n : 1) * sizeof(double));
        if (!xs[l] || !ys[l]) {
            rc = SPS_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *x = json_array_get(tv, i), *y = json_array_get(mv, i);
            xs[l][i] = json_is_number(x) ? json_number_value(x) / xu.div : NAN;
            ys[l][i] = json_is_number(y) ? json_number_value(y) : NAN;
            if (isfinite(ys[l][i])) {
                if (ys[l][i] < y_min)
                    y_min = ys[l][i];
                if (ys[l][i] > y_max)
                    y_max = ys[l][i];
            }
        }
    }
    struct html_unit yu = {1, ""};
    char y_title[96];
    switch (t->axis) {
    case AXIS_BYTES: yu = html_bytes_unit(y_max); break;
    case AXIS_PERCENT: yu = (struct html_unit){1, "%"}; break;
    case AXIS_CELSIUS: yu = (struct html_unit){1, "°C"}; break;
    case AXIS_WATTS: yu = (struct html_unit){1, "W"}; break;
    }
    snprintf(y_title, sizeof y_title, "%s (%s)", t->y_name, yu.name);
    char x_title[64];
    snprintf(x_title, sizeof x_title, "time since the run started (%s)", xu.name);

    struct svg_legend_item legend[MAX_LINES + 2];
    size_t nl = 0;
    for (size_t l = 0; l < t->nlines; l++)
        legend[nl++] = (struct svg_legend_item){t->lines[l].label, t->lines[l].color, 1, 0};
    size_t stride = boundary_stride(s->n);
    char boundary_label[64];
    if (stride == 1)
        snprintf(boundary_label, sizeof boundary_label, "step start");
    else
        snprintf(boundary_label, sizeof boundary_label, "step start (1 in %zu)", stride);
    if (s->n)
        legend[nl++] = (struct svg_legend_item){boundary_label, COLOR_BOUNDARY, 1, 0};
    if (s->nwarm)
        legend[nl++] = (struct svg_legend_item){"warm-up steps", COLOR_WARMUP, 0, 0};

    struct svg_axes axes = {0, end_s / xu.div, x_title, 0, y_min / yu.div, y_max / yu.div, y_title,
                            t->axis != AXIS_CELSIUS};
    struct svg_chart c;
    svg_chart_begin(&c, out, CHART_WIDTH, CHART_HEIGHT, t->title, &axes, legend, nl);
    /* warm-up first, under everything: the span of each run of
     * consecutive warm-up rows */
    for (size_t i = 0; i < s->n;) {
        if (!s->warm[i] || !isfinite(s->start_s[i])) {
            i++;
            continue;
        }
        double lo = s->start_s[i], hi = lo + (isfinite(s->duration_s[i]) ? s->duration_s[i] : 0);
        size_t j = i + 1;
        for (; j < s->n && s->warm[j] && isfinite(s->start_s[j]); j++) {
            double e = s->start_s[j] + (isfinite(s->duration_s[j]) ? s->duration_s[j] : 0);
            if (s->start_s[j] < lo)
                lo = s->start_s[j];
            if (e > hi)
                hi = e;
        }
        svg_chart_xband(&c, lo / xu.div, hi / xu.div, COLOR_WARMUP, 0.22);
        i = j;
    }
    for (size_t i = 0; i < s->n; i += stride)
        svg_chart_vline(&c, s->start_s[i] / xu.div, COLOR_BOUNDARY, 0.35);
    for (size_t l = 0; l < t->nlines; l++)
        if (t->lines[l].filled)
            svg_chart_area(&c, xs[l], ys[l], npts[l], 1 / yu.div, t->lines[l].color, 0.12);
    for (size_t l = 0; l < t->nlines; l++)
        svg_chart_line(&c, xs[l], ys[l], npts[l], 1 / yu.div, t->lines[l].color, 2, 0);
    svg_chart_end(&c);

    char note[2400];
    int len = snprintf(note, sizeof note, "Each line is the mean of the readings in each point of the series.");
    if (s->n && stride > 1 && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len, " %zu steps: one start in %zu is marked.",
                        s->n, stride);
    if (t->missing[0] && len > 0 && (size_t)len < sizeof note)
        snprintf(note + len, sizeof note - (size_t)len, " Not shown: %s.", t->missing);
    write_note(out, note);
    fputs("</section>\n", out);
done:
    for (size_t l = 0; l < t->nlines; l++) {
        free(xs[l]);
        free(ys[l]);
    }
    return rc;
}

int html_write_timelines(FILE *out, const json_t *report, const struct html_steps *s) {
    double end_s = timeline_end_s(report, s);
    struct timeline *t = calloc(1, sizeof *t);
    if (!t)
        return SPS_ENOMEM;
    int rc = 0;

    *t = (struct timeline){"memory", "Memory over time",
                           "Memory of the watched process tree as its PSS (pages its processes share count once; "
                           "read as often as that read's cost allows) and as its resident memory summed over its "
                           "processes (each shared page once per process), memory in use on the whole machine, "
                           "device memory in use on each GPU, and, when the tree has several processes, each "
                           "one's own resident memory.",
                           "memory", AXIS_BYTES};
    add_host(t, report, "workload_pss_bytes", "workload PSS", PALETTE[0], 1);
    add_host(t, report, "workload_rss_bytes", "workload RSS summed over processes", PALETTE[6 % PALETTE_N], 0);
    add_host(t, report, "system_memory_used_bytes", "system memory used", PALETTE[1], 0);
    add_gpus(t, report, "gpu_memory_used_bytes", "memory used", 2);
    add_processes(t, report, 3);
    rc = write_timeline(out, s, t, end_s);

    if (!rc) {
        *t = (struct timeline){"cpu", "CPU utilisation over time",
                               "CPU time of the watched process tree in percent of one core (200% is two busy "
                               "cores), the time its threads were ready to run but waited for a CPU (run delay, "
                               "also in percent of one core), the busy time of the whole machine in percent of "
                               "all its cores, and CPU pressure: the share of time some task waited for a CPU.",
                               "CPU utilisation", AXIS_PERCENT};
        add_host(t, report, "workload_cpu_percent", "workload CPU (% of one core)", PALETTE[0], 1);
        add_host(t, report, "workload_run_delay_percent", "workload waiting for a CPU (% of one core)", PALETTE[3],
                 0);
        add_host(t, report, "system_cpu_percent", "system CPU (% of all cores)", PALETTE[1], 0);
        add_host(t, report, "cpu_pressure_some_percent", "CPU pressure (some task waiting)", PALETTE[5], 0);
        add_host(t, report, "system_iowait_percent", "system I/O wait (% of all cores)", PALETTE[4], 0);
        rc = write_timeline(out, s, t, end_s);
    }
    if (!rc) {
        *t = (struct timeline){"gpu", "GPU utilisation over time",
                               "The share of time a kernel was running on each GPU, over the driver's sample period.",
                               "GPU utilisation", AXIS_PERCENT};
        add_gpus(t, report, "gpu_utilization_percent", "utilisation", 0);
        rc = write_timeline(out, s, t, end_s);
    }
    if (!rc) {
        *t = (struct timeline){"temperature", "Temperatures over time",
                               "The hottest CPU sensor, every other sensor read, and each GPU's die temperature.",
                               "temperature", AXIS_CELSIUS};
        add_host(t, report, "cpu_temperature_celsius", "CPU (hottest sensor)", PALETTE[4], 0);
        json_t *sensors = json_object_get(report, "sensors");
        for (size_t i = 0; i < json_array_size(sensors); i++) {
            json_t *sn = json_array_get(sensors, i);
            const char *label = html_str(sn, "label");
            if (!label || json_is_true(json_object_get(sn, "is_cpu")))
                continue; /* CPU sensors are summed up by the line above */
            add_line(t, find_series(report, "sensor_temperature_celsius", -1, label), label,
                     PALETTE[(1 + i) % PALETTE_N], 0, "no readings in report.json");
        }
        add_gpus(t, report, "gpu_temperature_celsius", "temperature", 5);
        rc = write_timeline(out, s, t, end_s);
    }
    if (!rc) {
        *t = (struct timeline){"power", "Power over time",
                               "Power drawn by the CPU packages and DRAM (RAPL) and by each GPU board.", "power",
                               AXIS_WATTS};
        add_host(t, report, "cpu_package_power_watts", "CPU packages", PALETTE[4], 0);
        add_host(t, report, "dram_power_watts", "DRAM", PALETTE[2], 0);
        add_gpus(t, report, "gpu_power_watts", "board power", 0);
        rc = write_timeline(out, s, t, end_s);
    }
    free(t);
    return rc;
}
