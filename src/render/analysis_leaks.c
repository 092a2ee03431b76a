/*
 * analysis_leaks.c - report.json's analysis.leaks for a person: a line per
 * leak (or one saying none was found), the processes counted, under the
 * terminal summary; and a table of every series in report.html (see
 * analysis_views.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/analysis_views.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

/* Processes named one by one in the terminal; the rest are counted
 * (report.html lists every series). */
#define MAX_PROCESS_LINES 8

static int has_scope(const json_t *s, const char *scope) {
    const char *sc = html_str(s, "scope");
    return sc && strcmp(sc, scope) == 0;
}

static int has_verdict(const json_t *s, const char *verdict) {
    const char *v = html_str(s, "verdict");
    return v && strcmp(v, verdict) == 0;
}

/* "pid 4243 (worker)", or "pid 4243" without a name. */
static void process_label(const json_t *s, char *buf, size_t len) {
    const char *comm = html_str(s, "comm");
    if (comm && *comm)
        snprintf(buf, len, "pid %.0f (%s)", html_num(s, "pid"), comm);
    else
        snprintf(buf, len, "pid %.0f", html_num(s, "pid"));
}

/* "workload PSS" (or "workload RSS", the sum over processes), "GPU 0
 * workload memory", "pid 4243 (worker) RSS": what a series measures. */
static void series_label(const json_t *s, char *buf, size_t len) {
    const char *name = html_str(s, "series");
    double gpu = html_num(s, "gpu");
    if (!name)
        name = "";
    if (strcmp(name, "workload_pss_bytes") == 0) {
        snprintf(buf, len, "workload PSS");
    } else if (strcmp(name, "workload_rss_bytes") == 0) {
        snprintf(buf, len, "workload RSS");
    } else if (strcmp(name, "gpu_workload_memory_bytes") == 0) {
        snprintf(buf, len, "GPU %.0f workload memory", gpu);
    } else if (strcmp(name, "gpu_memory_used_bytes") == 0) {
        snprintf(buf, len, "GPU %.0f memory used", gpu);
    } else if (strcmp(name, "process_rss_bytes") == 0) {
        char who[64];
        process_label(s, who, sizeof who);
        snprintf(buf, len, "%s RSS", who);
    } else {
        snprintf(buf, len, "%s", name);
    }
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

/* The first line carries the part's label, the others indent to it. */
static void line_start(FILE *f, int *first) {
    sps__analysis_label(f, *first ? "leaks" : "");
    *first = 0;
}

/* "processes: 3 no leak, 1 not judged (pid 4244 (worker))": the processes
 * not printed on lines of their own, leaking ones aside; and those the
 * sampler did not follow.  Nothing when there are none. */
static void print_other_processes(FILE *f, const json_t *leaks, int *first) {
    const json_t *series = json_object_get(leaks, "series");
    size_t i, clean = 0, unknown = 0, named = 0;
    const json_t *s;
    json_array_foreach(series, i, s) {
        if (!has_scope(s, "process"))
            continue;
        clean += has_verdict(s, "no leak");
        unknown += !has_verdict(s, "no leak") && !has_verdict(s, "leak");
    }
    double left_out = html_num(leaks, "processes_left_out");
    if (!clean && !unknown && !(left_out > 0))
        return;
    line_start(f, first);
    fputs("processes:", f);
    const char *sep = " ";
    if (clean) {
        fprintf(f, "%s%zu no leak", sep, clean);
        sep = ", ";
    }
    if (unknown) {
        fprintf(f, "%s%zu not judged (", sep, unknown);
        json_array_foreach(series, i, s) {
            if (!has_scope(s, "process") || has_verdict(s, "no leak") || has_verdict(s, "leak"))
                continue;
            if (named == MAX_PROCESS_LINES) {
                fprintf(f, ", %zu more", unknown - named);
                break;
            }
            char who[64];
            process_label(s, who, sizeof who);
            fprintf(f, "%s%s", named ? ", " : "", who);
            named++;
        }
        fputc(')', f);
        sep = ", ";
    }
    if (left_out > 0)
        fprintf(f, "%s%.0f more not followed (the sampler keeps %.0f)", sep, left_out,
                html_num(leaks, "processes_max"));
    fputc('\n', f);
}

void sps__analysis_leaks_print(FILE *f, const json_t *leaks) {
    if (!json_is_object(leaks))
        return;
    const char *verdict = html_str(leaks, "verdict");
    const json_t *series = json_object_get(leaks, "series");
    double steps = html_num(leaks, "steps_analysed");
    size_t i;
    const json_t *s;
    char label[96], slope[128];
    int first = 1;
    if (!verdict || strcmp(verdict, "unknown") == 0) {
        const char *reason = html_str(leaks, "reason");
        line_start(f, &first);
        fprintf(f, "unknown (%s)\n", reason ? reason : "no reason given");
        size_t processes = 0;
        json_array_foreach(series, i, s) {
            if (has_scope(s, "process") && processes++ >= MAX_PROCESS_LINES)
                continue;
            series_label(s, label, sizeof label);
            const char *why = html_str(s, "reason");
            line_start(f, &first);
            fprintf(f, "%s: %s\n", label, why ? why : "");
        }
        if (processes > MAX_PROCESS_LINES) {
            line_start(f, &first);
            fprintf(f, "%zu more processes not judged (report.html lists every series)\n",
                    processes - MAX_PROCESS_LINES);
        }
        return;
    }
    if (strcmp(verdict, "leak") == 0) {
        size_t processes = 0;
        json_array_foreach(series, i, s) {
            if (!has_verdict(s, "leak"))
                continue;
            if (has_scope(s, "process") && processes++ >= MAX_PROCESS_LINES)
                continue;
            series_label(s, label, sizeof label);
            fmt_slope(s, slope, sizeof slope);
            char growth[32];
            html_fmt_bytes(growth, sizeof growth, html_num(s, "growth_bytes"));
            line_start(f, &first);
            fprintf(f, "leak: %s grows %s over %.0f steps after warm-up (+%s)\n", label, slope, steps, growth);
        }
        if (processes > MAX_PROCESS_LINES) {
            line_start(f, &first);
            fprintf(f, "%zu more processes leak (report.html lists every series)\n", processes - MAX_PROCESS_LINES);
        }
        print_other_processes(f, leaks, &first);
        return;
    }
    /* no leak: each whole-tree and GPU series' slope, then the processes
     * counted */
    line_start(f, &first);
    fprintf(f, "no leak over %.0f steps after warm-up (", steps);
    const char *sep = "";
    json_array_foreach(series, i, s) {
        if (has_scope(s, "process"))
            continue;
        series_label(s, label, sizeof label);
        if (has_verdict(s, "no leak")) {
            fmt_slope(s, slope, sizeof slope);
            fprintf(f, "%s%s %s", sep, label, slope);
        } else {
            fprintf(f, "%s%s not judged", sep, label);
        }
        sep = "; ";
    }
    fputs(")\n", f);
    print_other_processes(f, leaks, &first);
}

static void html_cell_text(FILE *out, const char *text) {
    fputs("<td>", out);
    svg_write_escaped(out, text ? text : "");
    fputs("</td>", out);
}

/* A sentence (the reason): it wraps in its cell. */
static void html_cell_sentence(FILE *out, const char *text) {
    fputs("<td class=\"text\">", out);
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
    const char *tree = html_str(leaks, "tree_memory");
    if (tree) {
        fputs(". The tree's memory: ", out);
        svg_write_escaped(out, tree);
        fputs(".", out);
    }
    fputs("</p>\n<table>\n<tr><th>series</th><th>verdict</th><th>slope per step (95% CI)</th><th>growth</th>"
          "<th>readings</th><th class=\"text\">why</th></tr>\n",
          out);
    const json_t *series = json_object_get(leaks, "series");
    size_t i;
    const json_t *s;
    json_array_foreach(series, i, s) {
        char label[96], slope[128], growth[32], points[32];
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
        html_cell_sentence(out, html_str(s, "reason"));
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    double left_out = html_num(leaks, "processes_left_out");
    if (left_out > 0) {
        fprintf(out,
                "<p class=\"note\">%.0f more processes of the tree were not followed: the sampler keeps a series "
                "for the first %.0f it sees. They still count in the workload's PSS and RSS.</p>\n",
                left_out, html_num(leaks, "processes_max"));
    }
    fputs("</section>\n", out);
}
