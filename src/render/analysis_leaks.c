/*
 * analysis_leaks.c - the leak analysis for a person: a line per
 * leak (or one saying none was found), the processes counted, under the
 * terminal summary; and a table of every series in report.html (see
 * analysis_views.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/leaks.h"
#include "render/analysis_views.h"
#include "sampler/sampler.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

/* Processes named one by one in the terminal; the rest are counted
 * (report.html lists every series). */
#define MAX_PROCESS_LINES 8

static int is_process(const struct sps_leak_series *s) {
    return s->scope == SPS_LEAK_SCOPE_PROCESS;
}

/* "pid 4243 (worker)", or "pid 4243" without a name. */
static void process_label(const struct sps_leak_series *s, char *buf, size_t len) {
    if (s->comm[0])
        snprintf(buf, len, "pid %d (%s)", s->pid, s->comm);
    else
        snprintf(buf, len, "pid %d", s->pid);
}

/* "workload PSS" (or "workload RSS", the sum over processes), "GPU 0
 * workload memory", "torch.cuda allocated (pid 4243)", "pid 4243 (worker)
 * RSS": what a series measures. */
static void series_label(const struct sps_leak_series *s, char *buf, size_t len) {
    const char *name = s->series;
    if (strcmp(name, "workload_pss_bytes") == 0) {
        snprintf(buf, len, "workload PSS");
    } else if (strcmp(name, "workload_rss_bytes") == 0) {
        snprintf(buf, len, "workload RSS");
    } else if (strcmp(name, "gpu_workload_memory_bytes") == 0) {
        snprintf(buf, len, "GPU %d workload memory", s->gpu);
    } else if (strcmp(name, "gpu_memory_used_bytes") == 0) {
        snprintf(buf, len, "GPU %d memory used", s->gpu);
    } else if (s->scope == SPS_LEAK_SCOPE_TORCH) {
        snprintf(buf, len, "torch.cuda allocated (pid %d)", s->pid); /* one series per process */
    } else if (is_process(s)) {
        char who[64];
        process_label(s, who, sizeof who);
        snprintf(buf, len, "%s RSS", who);
    } else {
        snprintf(buf, len, "%s", name);
    }
}

/* The unit of a series' axis as a slope's denominator: "step", or on the
 * time axis the one its analysed time reads best in (s up to 10 minutes,
 * min up to 2 hours, then h: "12.4 MiB/min"), with how many seconds that
 * is. */
static struct html_unit axis_unit(const struct sps_leak_series *s) {
    if (s->axis == SPS_LEAK_AXIS_STEPS)
        return (struct html_unit){1, "step"};
    return html_elapsed_unit(isfinite(s->seconds_analysed) ? s->seconds_analysed : 0);
}

/* What a series was judged over: "50 steps", "3.21 s", "12.5 min"; its
 * last half's "last 95 steps", "last 1.6 s". */
static void fmt_span(const struct sps_leak_series *s, char *buf, size_t len) {
    const char *last = s->window == SPS_LEAK_WINDOW_LAST_HALF ? "last " : "";
    if (s->axis == SPS_LEAK_AXIS_STEPS) {
        snprintf(buf, len, "%s%zu steps", last, s->steps_analysed);
        return;
    }
    struct html_unit u = axis_unit(s);
    snprintf(buf, len, "%s%.3g %s", last, s->seconds_analysed / u.div, u.name);
}

/* Where a late onset's window starts: "step 105", "4.2 s" (time since
 * the sampler's first reading, in the unit that reads best). */
static void fmt_window_from(const struct sps_leak_series *s, char *buf, size_t len) {
    if (s->axis == SPS_LEAK_AXIS_STEPS) {
        snprintf(buf, len, "step %.0f", s->window_from);
        return;
    }
    struct html_unit u = html_elapsed_unit(fabs(s->window_from));
    snprintf(buf, len, "%.3g %s", s->window_from / u.div, u.name);
}

/* slope and its interval in one unit, the one that reads best for the
 * largest of them: "1.02 MiB/step (95% CI 0.98 to 1.05)", "12.40 MiB/s
 * (...)". */
static void fmt_slope(const struct sps_leak_series *s, char *buf, size_t len) {
    struct html_unit per = axis_unit(s);
    double slope = s->slope * per.div, lo = s->ci95_low * per.div, hi = s->ci95_high * per.div;
    if (!isfinite(slope)) {
        snprintf(buf, len, "slope unknown");
        return;
    }
    double big = fmax(fabs(slope), fmax(isfinite(lo) ? fabs(lo) : 0, isfinite(hi) ? fabs(hi) : 0));
    struct html_unit u = html_bytes_unit(big);
    snprintf(buf, len, "%.2f %s/%s (95%% CI %.2f to %.2f)", slope / u.div, u.name, per.name, lo / u.div,
             hi / u.div);
}

/* Why a series' verdict is what it is, its figures in human units: the
 * test that decided it (the analysis's reason says the same in bytes, for
 * report.json), or the reason itself for a series not judged. */
static void fmt_why(const struct sps_leak_series *s, char *buf, size_t len) {
    char a[32], b[32], c[32], span[48];
    struct html_unit per = axis_unit(s);
    fmt_span(s, span, sizeof span);
    switch (s->rule) {
    case SPS_LEAK_RULE_INTERVAL:
        snprintf(buf, len, "the slope's 95%% interval (%s to %s per %s) does not exclude no growth",
                 html_fmt_bytes(a, sizeof a, s->ci95_low * per.div), html_fmt_bytes(b, sizeof b, s->ci95_high * per.div),
                 per.name);
        return;
    case SPS_LEAK_RULE_GROWTH: {
        char rings[64] = "";
        if (s->allowance_bytes > 0)
            snprintf(rings, sizeof rings, ", plus %s of stepscope's own rings",
                     html_fmt_bytes(c, sizeof c, s->allowance_bytes));
        snprintf(buf, len,
                 "growth over the %s (%s) is under the %s that matter (the larger of 1 MiB and 1%% of the "
                 "median level%s)",
                 span, html_fmt_bytes(a, sizeof a, s->growth_bytes), html_fmt_bytes(b, sizeof b, s->min_growth_bytes),
                 rings);
        return;
    }
    case SPS_LEAK_RULE_ALL: {
        char slope[128];
        fmt_slope(s, slope, sizeof slope);
        if (s->window == SPS_LEAK_WINDOW_LAST_HALF) {
            char from[48];
            fmt_window_from(s, from, sizeof from);
            snprintf(buf, len,
                     "grows %s since %s, over the run's %s (its last half): every one of %d segments higher "
                     "than the last, and the end above the first half; the whole run's segments do not all rise "
                     "(a leak that starts mid-run)",
                     slope, from, span, SPS_LEAK_SEGMENTS);
            return;
        }
        snprintf(buf, len, "grows %s over %s, every one of %d segments higher than the last", slope, span,
                 SPS_LEAK_SEGMENTS);
        return;
    }
    default:
        snprintf(buf, len, "%s", s->reason);
    }
}

/* The first line carries the part's label, the others indent to it. */
static void line_start(FILE *f, int *first) {
    sps__analysis_label(f, *first ? "leaks" : "");
    *first = 0;
}

/* Why a run's memory was judged against time: "no steps were recorded",
 * or "only 4 steps after warm-up (a trend against steps needs 10)". */
static void time_axis_why(const struct sps_leaks *leaks, char *buf, size_t len) {
    if (leaks->steps_analysed + leaks->warmup_steps == 0)
        snprintf(buf, len, "no steps were recorded");
    else
        snprintf(buf, len, "only %zu step%s after warm-up (a trend against steps needs %d)", leaks->steps_analysed,
                 leaks->steps_analysed == 1 ? "" : "s", SPS_LEAK_MIN_STEPS);
}

/* On the time axis, a line that says so and what the warm-up was:
 * "judged against time: no steps were recorded (the first 20% of each
 * series' time is warm-up: the run's first 0.8 s)". */
static void print_axis(FILE *f, const struct sps_leaks *leaks, int *first) {
    if (leaks->axis != SPS_LEAK_AXIS_TIME)
        return;
    line_start(f, first);
    char why[96];
    time_axis_why(leaks, why, sizeof why);
    fprintf(f, "judged against time: %s (the first %.0f%% of each series' time is warm-up", why,
            100.0 * SPS_LEAK_TIME_WARMUP_FRACTION);
    if (isfinite(leaks->warmup_seconds)) {
        struct html_unit u = html_elapsed_unit(leaks->warmup_seconds);
        fprintf(f, ": the run's first %.3g %s", leaks->warmup_seconds / u.div, u.name);
    }
    fputs(")\n", f);
}

/* "processes: 3 no leak, 1 not judged (pid 4244 (worker))": the processes
 * not printed on lines of their own, leaking ones aside; and those the
 * sampler did not follow.  Nothing when there are none. */
static void print_other_processes(FILE *f, const struct sps_leaks *leaks, int *first) {
    size_t clean = 0, unknown = 0, named = 0;
    for (size_t i = 0; i < leaks->nseries; i++) {
        const struct sps_leak_series *s = &leaks->series[i];
        if (!is_process(s))
            continue;
        clean += s->verdict == SPS_LEAK_NONE;
        unknown += s->verdict == SPS_LEAK_UNKNOWN;
    }
    uint64_t left_out = leaks->processes_left_out;
    if (!clean && !unknown && !left_out)
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
        for (size_t i = 0; i < leaks->nseries; i++) {
            const struct sps_leak_series *s = &leaks->series[i];
            if (!is_process(s) || s->verdict != SPS_LEAK_UNKNOWN)
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
    if (left_out)
        fprintf(f, "%s%llu more not followed (the sampler keeps %d)", sep, (unsigned long long)left_out,
                SPS_SAMPLER_MAX_PROCESSES);
    fputc('\n', f);
}

void sps__analysis_leaks_print(FILE *f, const struct sps_leaks *leaks) {
    if (!leaks->computed)
        return;
    char label[96], slope[128];
    int first = 1;
    if (leaks->verdict == SPS_LEAK_UNKNOWN) {
        line_start(f, &first);
        fprintf(f, "unknown (%s)\n", leaks->reason);
        print_axis(f, leaks, &first);
        size_t processes = 0;
        for (size_t i = 0; i < leaks->nseries; i++) {
            const struct sps_leak_series *s = &leaks->series[i];
            if (is_process(s) && processes++ >= MAX_PROCESS_LINES)
                continue;
            series_label(s, label, sizeof label);
            line_start(f, &first);
            fprintf(f, "%s: %s\n", label, s->reason);
        }
        if (processes > MAX_PROCESS_LINES) {
            line_start(f, &first);
            fprintf(f, "%zu more processes not judged (report.html lists every series)\n",
                    processes - MAX_PROCESS_LINES);
        }
        return;
    }
    if (leaks->verdict == SPS_LEAK_FOUND) {
        size_t processes = 0;
        for (size_t i = 0; i < leaks->nseries; i++) {
            const struct sps_leak_series *s = &leaks->series[i];
            if (s->verdict != SPS_LEAK_FOUND)
                continue;
            if (is_process(s) && processes++ >= MAX_PROCESS_LINES)
                continue;
            series_label(s, label, sizeof label);
            fmt_slope(s, slope, sizeof slope);
            char growth[32], span[48];
            html_fmt_bytes(growth, sizeof growth, s->growth_bytes);
            fmt_span(s, span, sizeof span);
            line_start(f, &first);
            if (s->window == SPS_LEAK_WINDOW_LAST_HALF) {
                char from[48];
                fmt_window_from(s, from, sizeof from);
                fprintf(f, "leak: %s grows %s since %s, the run's %s (+%s; a late onset: the first half does not rise with it)\n",
                        label, slope, from, span, growth);
            } else {
                fprintf(f, "leak: %s grows %s over %s after warm-up (+%s)\n", label, slope, span, growth);
            }
        }
        if (processes > MAX_PROCESS_LINES) {
            line_start(f, &first);
            fprintf(f, "%zu more processes leak (report.html lists every series)\n", processes - MAX_PROCESS_LINES);
        }
        print_axis(f, leaks, &first);
        print_other_processes(f, leaks, &first);
        return;
    }
    /* no leak: each whole-tree and GPU series' slope, then the processes
     * counted */
    line_start(f, &first);
    if (leaks->axis == SPS_LEAK_AXIS_STEPS) {
        fprintf(f, "no leak over %zu steps after warm-up (", leaks->steps_analysed);
    } else {
        struct html_unit u = html_elapsed_unit(isfinite(leaks->seconds_analysed) ? leaks->seconds_analysed : 0);
        fprintf(f, "no leak over %.3g %s after warm-up (", leaks->seconds_analysed / u.div, u.name);
    }
    const char *sep = "";
    for (size_t i = 0; i < leaks->nseries; i++) {
        const struct sps_leak_series *s = &leaks->series[i];
        if (is_process(s))
            continue;
        series_label(s, label, sizeof label);
        if (s->verdict == SPS_LEAK_NONE) {
            fmt_slope(s, slope, sizeof slope);
            fprintf(f, "%s%s %s", sep, label, slope);
        } else {
            fprintf(f, "%s%s not judged", sep, label);
        }
        sep = "; ";
    }
    fputs(")\n", f);
    print_axis(f, leaks, &first);
    print_other_processes(f, leaks, &first);
}

static void html_cell(FILE *out, const char *cls, const char *text) {
    fprintf(out, "<td class=\"%s\">", cls);
    svg_write_escaped(out, text);
    fputs("</td>", out);
}

void sps__analysis_leaks_html(FILE *out, const struct sps_leaks *leaks) {
    if (!leaks->computed)
        return;
    int on_steps = leaks->axis == SPS_LEAK_AXIS_STEPS;
    fputs("<section id=\"leaks\">\n<h2>Memory leaks</h2>\n<p class=\"what\">", out);
    if (on_steps) {
        fputs("Memory against the step number after warm-up", out);
    } else {
        char why[96];
        time_axis_why(leaks, why, sizeof why);
        fprintf(out, "Memory against time (%s), after a warm-up of the first %.0f%% of each series' time in the tree",
                why, 100.0 * SPS_LEAK_TIME_WARMUP_FRACTION);
    }
    fputs(": a Theil-Sen slope with its 95% interval. A leak needs the interval above zero, growth that "
          "matters and a rise that persists through the run, or through its last half for a leak that starts "
          "mid-run (docs/analysis.md).</p>\n<p><strong>",
          out);
    svg_write_escaped(out, sps__leak_verdict_name(leaks->verdict));
    fputs("</strong>: ", out);
    svg_write_escaped(out, leaks->reason);
    if (leaks->tree_note[0]) {
        fputs(". The tree's memory: ", out);
        svg_write_escaped(out, leaks->tree_note);
        fputs(".", out);
    }
    fprintf(out,
            "</p>\n<table>\n<tr><th>series</th><th>verdict</th><th>slope %s (95%% CI)</th><th>growth</th>"
            "<th>readings</th><th class=\"text\">why</th></tr>\n",
            on_steps ? "per step" : "over time");
    for (size_t i = 0; i < leaks->nseries; i++) {
        const struct sps_leak_series *s = &leaks->series[i];
        char label[96], slope[128], growth[32], points[32], why[512];
        series_label(s, label, sizeof label);
        fmt_slope(s, slope, sizeof slope);
        html_fmt_bytes(growth, sizeof growth, s->growth_bytes);
        snprintf(points, sizeof points, "%zu", s->points);
        fmt_why(s, why, sizeof why);
        fputs("<tr>", out);
        html_cell(out, "label", label);
        html_cell(out, "label", sps__leak_verdict_name(s->verdict));
        html_cell(out, "label", slope);
        html_cell(out, "num", growth);
        html_cell(out, "num", points);
        html_cell(out, "text", why);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    if (leaks->processes_left_out) {
        fprintf(out,
                "<p class=\"note\">%llu more processes of the tree were not followed: the sampler keeps a series "
                "for the first %d it sees. They still count in the workload's PSS and RSS.</p>\n",
                (unsigned long long)leaks->processes_left_out, SPS_SAMPLER_MAX_PROCESSES);
    }
    fputs("</section>\n", out);
}
