/*
 * analysis_overhead.c - report.json's analysis.overhead for a person: a
 * line under the summary and a small table in report.html.
 */
#include <math.h>
#include <string.h>

#include "export/report.h"
#include "live/guard.h"
#include "report/analysis_views.h"
#include "report/html_units.h"
#include "report/svg_chart.h"

static double num(const json_t *o, const char *key) {
    return html_num(o, key);
}

static const char *pct(double v, char *buf, size_t len) {
    if (isnan(v))
        snprintf(buf, len, "unknown");
    else
        snprintf(buf, len, v < 0.01 ? "%.4f%%" : v < 1 ? "%.3f%%" : "%.2f%%", v);
    return buf;
}

void sps__overhead_print(FILE *f, const json_t *o) {
    if (!json_is_object(o))
        return;
    char a[32], b[32], c[32], d[32];
    double zones = num(o, "zones_recorded"), values = num(o, "values_recorded");
    sps__analysis_label(f, "overhead");
    fprintf(f, "recording %s of the workload's CPU time", pct(num(o, "percent_of_workload_cpu"), a, sizeof a));
    if (!isnan(num(o, "recording_s"))) {
        fprintf(f, " (%.0f zones x %.1f ns + %.0f values x %.1f ns", zones, num(o, "zone_cost_ns"), values,
                num(o, "value_cost_ns"));
        if (num(o, "zones_thinned") > 0 && !isnan(num(o, "thinned_zone_cost_ns")))
            fprintf(f, " + %.0f left out x %.1f ns", num(o, "zones_thinned"), num(o, "thinned_zone_cost_ns"));
        fprintf(f, " = %s)", sps__fmt_seconds(num(o, "recording_s"), b, sizeof b));
    } else
        fprintf(f, " (%s)", html_str(o, "recording_unmeasured_reason") ? html_str(o, "recording_unmeasured_reason") : "");
    fprintf(f, "; all of stepscope %s of one core", pct(num(o, "percent_of_wall"), c, sizeof c));
    if (!isnan(num(o, "sampler_cpu_s")))
        fprintf(f, " (sampler %s", sps__fmt_seconds(num(o, "sampler_cpu_s"), d, sizeof d));
    else
        fprintf(f, " (no sampler");
    if (num(o, "live_view_cpu_s") > 0)
        fprintf(f, ", live status %s", sps__fmt_seconds(num(o, "live_view_cpu_s"), a, sizeof a));
    if (num(o, "guard_cpu_s") > 0)
        fprintf(f, ", budget guard %s", sps__fmt_seconds(num(o, "guard_cpu_s"), a, sizeof a));
    fputs(")\n", f);
    char budget[512];
    if (sps__overhead_budget_text(o, budget, sizeof budget)) {
        sps__analysis_label(f, "");
        fprintf(f, "%s\n", budget);
    }
}

/* What the thin level kept, for a person. */
static const char *kept_by(const char *level) {
    if (level && !strcmp(level, "phases"))
        return "steps and their phases (zones directly inside a step)";
    if (level && !strcmp(level, "steps"))
        return "steps only";
    return "everything";
}

int sps__overhead_budget_text(const json_t *o, char *buf, size_t len) {
    const json_t *b = json_object_get(o, "budget");
    if (!json_is_object(b))
        return 0;
    char a[32], c[32];
    double max = num(b, "max_percent_of_workload_cpu");
    if (!json_is_true(json_object_get(b, "exceeded"))) {
        if (num(b, "windows_judged") > 0)
            snprintf(buf, len, "budget %.3g%%: kept (the costliest window cost %s of its CPU time; nothing thinned)",
                     max, pct(num(b, "peak_window_percent"), a, sizeof a));
        else
            snprintf(buf, len, "budget %.3g%%: not judged (the workload used less than %.2g s of CPU time in any "
                               "window; nothing thinned)",
                     max, SPS_GUARD_MIN_WINDOW_CPU_S);
        return 1;
    }
    const char *level = html_str(b, "thin_level");
    int n = snprintf(buf, len, "budget %.3g%%: exceeded at %.1f s (a window cost %s); recorded %s from %.1f s, "
                               "%.0f zones left out",
                     max, num(b, "first_exceeded_s"), pct(num(b, "peak_window_percent"), a, sizeof a), kept_by(level),
                     num(b, "thinned_since_s"), num(o, "zones_thinned"));
    if (json_is_true(json_object_get(b, "over_with_steps_only")) && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; still over with steps only (latest window %s): steps and values are "
                                           "never thinned",
                 pct(num(b, "last_window_percent"), c, sizeof c));
    return 1;
}

static void row(FILE *out, const char *what, const char *value, const char *detail) {
    fputs("<tr><td>", out);
    svg_write_escaped(out, what);
    fputs("</td><td>", out);
    svg_write_escaped(out, value);
    fputs("</td><td>", out);
    svg_write_escaped(out, detail);
    fputs("</td></tr>\n", out);
}

void sps__overhead_html(FILE *out, const json_t *o) {
    if (!json_is_object(o))
        return;
    char v[64], d[160], t[32];
    fputs("<section id=\"overhead\"><h2>What stepscope cost</h2>\n"
          "<p class=\"what\">Recording is paid by the workload's threads (what was recorded times the cost of one, "
          "measured on this machine when the run ended); the sampler and the live status run on stepscope's own "
          "threads.</p>\n<table><tr><th>part</th><th>cost</th><th>how</th></tr>\n",
          out);
    if (!isnan(num(o, "recording_s"))) {
        int n = snprintf(d, sizeof d, "%.0f zones x %.1f ns + %.0f values x %.1f ns", num(o, "zones_recorded"),
                         num(o, "zone_cost_ns"), num(o, "values_recorded"), num(o, "value_cost_ns"));
        if (num(o, "zones_thinned") > 0 && !isnan(num(o, "thinned_zone_cost_ns")) && n > 0 && (size_t)n < sizeof d)
            snprintf(d + n, sizeof d - (size_t)n, " + %.0f left out x %.1f ns", num(o, "zones_thinned"),
                     num(o, "thinned_zone_cost_ns"));
        row(out, "recording", sps__fmt_seconds(num(o, "recording_s"), v, sizeof v), d);
    } else {
        const char *why = html_str(o, "recording_unmeasured_reason");
        row(out, "recording", "unknown", why ? why : "");
    }
    if (!isnan(num(o, "sampler_cpu_s")))
        row(out, "sampler", sps__fmt_seconds(num(o, "sampler_cpu_s"), v, sizeof v), "CPU time of its thread");
    else
        row(out, "sampler", "none", "no sampler ran");
    row(out, "live status", sps__fmt_seconds(num(o, "live_view_cpu_s"), v, sizeof v), "CPU time of its thread");
    if (num(o, "guard_cpu_s") > 0)
        row(out, "budget guard", sps__fmt_seconds(num(o, "guard_cpu_s"), v, sizeof v), "CPU time of its thread");
    snprintf(d, sizeof d, "recording is %s of the workload's CPU time", pct(num(o, "percent_of_workload_cpu"), t, sizeof t));
    snprintf(v, sizeof v, "%s of one core", pct(num(o, "percent_of_wall"), t, sizeof t));
    row(out, "all of it", v, d);
    fputs("</table>\n", out);
    char budget[512];
    if (sps__overhead_budget_text(o, budget, sizeof budget)) {
        fputs("<p><strong>Budget.</strong> ", out);
        svg_write_escaped(out, budget);
        fputs("</p>\n", out);
    }
    fputs("</section>\n", out);
}
