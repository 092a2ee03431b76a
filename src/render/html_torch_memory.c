/*
 * html_torch_memory.c - report.html's "GPU memory per step (torch.cuda)"
 * section: torch.cuda's allocated and reserved memory at each step's end
 * against the step, on the step time chart's axis, and each step's peak
 * where it is known (a bar from the step's end level up to its peak: how
 * far the step rose above where it ended), with the analysis's one line
 * (analysis/torch_memory.h) over it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/torch_memory.h"
#include "render/analysis_views.h"
#include "render/html_charts.h"
#include "render/html_units.h"
#include "render/svg_chart.h"
#include "stepscope.h"

/* Rows drawn one point each up to this; beyond, groups of k rows (the
 * last reading of the group, the largest peak known in it). */
#define MAX_POINTS 1000
#define CHART_HEIGHT 280.0

static long value_column(const struct sps_run *run, const char *name) {
    for (size_t i = 0; i < run->nnames; i++)
        if (run->names[i].kind == SPS_KIND_VALUE && strcmp(run->names[i].name, name) == 0)
            return (long)i;
    return -1;
}

static double cell(const struct sps_step_row *r, long col) {
    return col >= 0 ? r->by_name[col] : NAN;
}

/* The larger of a and b that is a number (NAN when neither is). */
static double max_finite(double a, double b) {
    return !isfinite(a) ? b : !isfinite(b) ? a : fmax(a, b);
}

/* Group b of k rows: the last finite reading of col, or the largest when
 * largest. */
static double group_value(const struct html_steps *s, size_t from, size_t to, long col, int largest) {
    double v = NAN;
    for (size_t i = from; i < to; i++) {
        double x = cell(&s->rows[i], col);
        if (!isfinite(x))
            continue;
        v = largest && isfinite(v) ? fmax(v, x) : x;
    }
    return v;
}

int html_write_torch_memory(FILE *out, const struct sps_report *rep, const struct html_steps *s) {
    const struct sps_run *run = &rep->run;
    long alloc = value_column(run, SPS_TORCH_ALLOCATED), reserved = value_column(run, SPS_TORCH_RESERVED);
    long peak = value_column(run, SPS_TORCH_PEAK_ALLOCATED);
    if (alloc < 0 || s->n == 0)
        return 0;
    size_t k = s->n <= MAX_POINTS ? 1 : (s->n + MAX_POINTS - 1) / MAX_POINTS, npts = (s->n + k - 1) / k;
    double *x = malloc(npts * sizeof *x), *ya = malloc(npts * sizeof *ya), *yr = malloc(npts * sizeof *yr);
    double *yp = malloc(npts * sizeof *yp);
    if (!x || !ya || !yr || !yp) {
        free(x);
        free(ya);
        free(yr);
        free(yp);
        return SPS_ENOMEM;
    }
    double hi = 0;
    size_t drawn = 0;
    for (size_t b = 0; b < npts; b++) {
        size_t from = b * k, to = from + k < s->n ? from + k : s->n;
        x[b] = (double)to; /* a reading at a step's end stands at the step's index + 1 */
        ya[b] = group_value(s, from, to, alloc, 0);
        yr[b] = group_value(s, from, to, reserved, 0);
        yp[b] = group_value(s, from, to, peak, 1);
        drawn += isfinite(ya[b]);
        hi = max_finite(hi, max_finite(ya[b], max_finite(yr[b], yp[b])));
    }
    html_section_begin(out, "torch-memory", "GPU memory per step (torch.cuda)",
                       "torch.cuda's caching allocator on the device the step ran on, read at each step's end "
                       "without synchronising: memory allocated to tensors and reserved by the allocator, and the "
                       "step's peak where it is known (a bar from where the step ended up to its peak).");
    char line[512];
    if (sps__torch_memory_text(&rep->analysis.torch_memory, line, sizeof line))
        html_write_note(out, line);
    if (!drawn) {
        html_write_empty(out, "no step of the charted stream carries a reading (torch had not initialised CUDA)");
    } else {
        struct html_unit u = html_bytes_unit(hi);
        char ytitle[32];
        snprintf(ytitle, sizeof ytitle, "memory (%s)", u.name);
        struct svg_legend_item legend[3] = {{"allocated", html_palette(0), 1, 0},
                                            {"reserved", html_palette(1), 1, 1},
                                            {"peak within the step", html_palette(4), 0, 0}};
        struct svg_axes axes = {0, (double)s->n, "step (row of the step table)", 1, 0, hi / u.div, ytitle, 1};
        struct svg_chart c;
        svg_chart_begin(&c, out, HTML_CHART_WIDTH, CHART_HEIGHT, "GPU memory per step (torch.cuda)", &axes, legend,
                        peak >= 0 ? 3 : 2);
        /* a bar stands in its steps, [from, to] less a gap, as the step
         * time chart's do (its reading, at to, is the step's end) */
        double bar_px = (c.plot_right - c.plot_left) / (double)npts;
        double gap = bar_px > 4 ? 0.15 * (double)k : 0;
        for (size_t b = 0; b < npts; b++)
            if (isfinite(yp[b]) && isfinite(ya[b]))
                svg_chart_rect(&c, (double)(b * k) + gap / 2, x[b] - gap / 2, ya[b] / u.div, yp[b] / u.div,
                               html_palette(4));
        svg_chart_line(&c, x, yr, npts, 1.0 / u.div, html_palette(1), 2, 1);
        svg_chart_line(&c, x, ya, npts, 1.0 / u.div, html_palette(0), 2, 0);
        svg_chart_end(&c);
        if (k > 1) {
            char note[160];
            snprintf(note, sizeof note,
                     "Each point is the last reading of %zu consecutive steps; each bar the largest peak known "
                     "among them.",
                     k);
            html_write_note(out, note);
        }
    }
    fputs("</section>\n", out);
    free(x);
    free(ya);
    free(yr);
    free(yp);
    return 0;
}
