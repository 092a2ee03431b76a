/*
 * analysis_leaks.c - report.json's analysis.leaks for a person: a line per
 * leak (or one saying none was found) under the terminal summary, and a
 * table in report.html (see analysis_views.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/analysis_views.h"
#include "report/html_units.h"
#include "report/svg_chart.h"

/* "workload RSS", "GPU 0 workload memory": what a series measures. */
static void series_label(const json_t *s, char *buf, size_t len) {
    const char *name = html_str(s, "series");
    double gpu = html_num(s, "gpu");
    if (!name)
        name = "";
    if (strcmp(name, "workload_rss_bytes") == 0)
        snprintf(buf, len, "workload RSS");
    else if (strcmp(name, "gpu_workload_memory_bytes") == 0)
        snprintf(buf, len, "GPU %.0f workload memory", gpu);
    else if (strcmp(name, "gpu_memory_used_bytes") == 0)
        snprintf(buf, len, "GPU %.0f memory used", gpu);
    else
        snprintf(buf, len, "%s", name);
}

/* slope and its interval in one unit, the one that reads best for the
 * largest of them: "1.02 MiB/step (95% CI 0.98-1.05)". */
static void fmt_slope(const json_t *s, char *buf, size_t len) {
    double slope = html_num(s, "slope_bytes_per_step"), lo = html_num(s, "ci95_low"), hi = html_num(s, "ci95_high");
    if (!isfinite(slope)) {
        snprintf(buf, len, "slope unknown");
        return;
    }
    double big = fmax(fabs(slope), fmax(isfinite(lo) ? fabs(lo) : 0, isfinite(hi) ? fabs(hi) : 0));
    struct html_unit u = html_bytes_unit(big);
    snprintf(buf, len, "%.2f %s/step (95%% CI %.2f to %.2f)", slope / u.div, u.name, lo / u.div, hi / u.div);
}

void sps__analysis_leaks_print(FILE *f, const json_t *leaks) {
    if (!json_is_object(leaks))
        return;
    const char *verdict = html_str(leaks, "verdict");
    const json_t *series = json_object_get(leaks, "series");
    double steps = html_num(leaks, "steps_analysed");
    size_t i;
    const json_t *s;
    char label[64], slope[128];
    if (!verdict || strcmp(verdict, "unknown") == 0) {
        const char *reason = html_str(leaks, "reason");
        fprintf(f, "leaks: unknown (%s)\n", reason ? reason : "no reason given");
        json_array_foreach(series, i, s) {
            series_label(s, label, sizeof label);
            const char *why = html_str(s, "reason");
            fprintf(f, "  %s: %s\n", label, why ? why : "");
        }
        return;
    }
    int found = 0;
    json_array_foreach(series, i, s) {
        const char *v = html_str(s, "verdict");
        if (!v || strcmp(v, "leak") != 0)
            continue;
        series_label(s, label, sizeof label);
        fmt_slope(s, slope, sizeof slope);
        char growth[32];
        html_fmt_bytes(growth, sizeof growth, html_num(s, "growth_bytes"));
        fprintf(f, "leak: %s grows %s over %.0f steps after warm-up (+%s)\n", label, slope, steps, growth);
        found++;
    }
    if (found)
        return;
    fprintf(f, "leaks: none found over %.0f steps after warm-up (", steps);
    const char *sep = "";
    json_array_foreach(series, i, s) {
        const char *v = html_str(s, "verdict");
        series_label(s, label, sizeof label);
        if (v && strcmp(v, "no leak") == 0) {
            fmt_slope(s, slope, sizeof slope);
            fprintf(f, "%s%s %s", sep, label, slope);
        } else {
            fprintf(f, "%s%s not judged", sep, label);
        }
        sep = "; ";
    }
    fputs(")\n", f);
}

static void html_cell_text(FILE *out, const char *text) {
    fputs("<td>", out);
    svg_write_escaped(out, text ? text : "");
    fputs("</td>", out);
}

void sps__analysis_leaks_html(FILE *out, const json_t *leaks) {
    if (!json_is_object(leaks))
        return;
    const char *verdict = html_str(leaks, "verdict"), *reason = html_str(leaks, "reason");
    fputs("<section id=\"leaks\">\n<h2>Memory leaks</h2>\n<p class=\"what\">Memory against the step number after "
          "warm-up: a Theil-Sen slope with its 95% interval. A leak needs the interval above zero, growth that "
          "matters and a rise that persists through the run (docs/analysis.md).</p>\n<p><strong>",
          out);
    svg_write_escaped(out, verdict ? verdict : "unknown");
    fputs("</strong>: ", out);
    svg_write_escaped(out, reason ? reason : "");
    fputs("</p>\n<table>\n<tr><th>series</th><th>verdict</th><th>slope per step (95% CI)</th><th>growth</th>"
          "<th>readings</th><th>why</th></tr>\n",
          out);
    const json_t *series = json_object_get(leaks, "series");
    size_t i;
    const json_t *s;
    json_array_foreach(series, i, s) {
        char label[64], slope[128], growth[32], points[32];
        series_label(s, label, sizeof label);
        fmt_slope(s, slope, sizeof slope);
        html_fmt_bytes(growth, sizeof growth, html_num(s, "growth_bytes"));
        snprintf(points, sizeof points, "%.0f", html_num(s, "points"));
        fputs("<tr>", out);
        html_cell_text(out, label);
        html_cell_text(out, html_str(s, "verdict"));
        html_cell_text(out, slope);
        html_cell_text(out, growth);
        html_cell_text(out, points);
        html_cell_text(out, html_str(s, "reason"));
        fputs("</tr>\n", out);
    }
    fputs("</table>\n</section>\n", out);
}
