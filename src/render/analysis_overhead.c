/*
 * analysis_overhead.c - report.json's analysis.overhead for a person: a
 * line under the summary and a small table in report.html.
 */
#include <math.h>
#include <string.h>

#include "render/render.h"
#include "live/guard.h"
#include "render/analysis_views.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

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

/* One cost in ns for a person: "23.1 ns", "1.20 µs". */
static const char *fmt_ns(double ns, char *buf, size_t len) {
    if (isnan(ns))
        snprintf(buf, len, "unknown");
    else if (ns < 1000)
        snprintf(buf, len, "%.1f ns", ns);
    else
        snprintf(buf, len, "%.2f µs", ns * 1e-3);
    return buf;
}

/* The kinds of recording in report.json's recording_by_kind, each with
 * what a person reads for it (the Python kinds are Python's own work on
 * top of the library's, which "zones" and "values" price for every one). */
static const struct {
    const char *key, *label, *prefix, *noun, *how;
} kinds[] = {
    {"zones", "zones", "", "zones", "the library's begin+end, every zone, step and micro-step"},
    {"python_zones", "Python zones", "Python's own work around ", "zones",
     "zone()/step() and their with blocks, beyond the library's"},
    {"instrument_hooks", "instrument's hooks", "instrument's hooks around ", "zones",
     "stepscope.torch.instrument's Python work, per zone it began"},
    {"values", "values", "", "values", "the library's value or count"},
    {"python_values", "record() calls", "Python's own work around ", "record() calls",
     "stepscope.record(), beyond the library's"},
    {"python_counts", "count() calls", "Python's own work around ", "count() calls",
     "stepscope.count(), beyond the library's"},
    {"thinned", "left out", "", "left out", "zones the budget's thin level did not record"},
};

/* How a zone's price was made: " (22.5 ns warm + 300.6 ns the run's
 * caches added, 300 samples)"; "" without the run's samples. */
static void zone_price_text(const json_t *o, char *buf, size_t len) {
    double warm = num(o, "zone_cost_ns"), in_run = num(o, "zone_end_in_run_ns"), base = num(o, "zone_end_warm_ns");
    buf[0] = '\0';
    if (isnan(warm) || isnan(in_run) || isnan(base))
        return;
    char a[32], b[32];
    snprintf(buf, len, " (%s warm + %s the run's caches added, %.0f samples)", fmt_ns(warm, a, sizeof a),
             fmt_ns(in_run > base ? in_run - base : 0, b, sizeof b), num(o, "zone_end_samples"));
}

/* "N noun x cost" of one kind into buf; 0 when it recorded nothing.  An
 * unpriced share says so. */
static int part_text(const json_t *part, size_t k, char *buf, size_t len) {
    double count = num(part, "count"), unpriced = num(part, "unpriced");
    if (!(count > 0))
        return 0;
    char c[32];
    const char *pre = kinds[k].prefix, *noun = kinds[k].noun;
    int n = 0;
    if (count > unpriced)
        n = snprintf(buf, len, "%s%.0f %s x %s", pre, count - unpriced, noun, fmt_ns(num(part, "cost_ns"), c, sizeof c));
    if (unpriced > 0 && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%s%s%.0f %s not priced (not measured in their process)", n ? " + " : "",
                 pre, unpriced, noun);
    return 1;
}

/* The recording cost's parts, " + " between them ("" when none). */
static void breakdown(const json_t *o, char *buf, size_t len) {
    const json_t *by = json_object_get(o, "recording_by_kind");
    size_t used = 0;
    buf[0] = '\0';
    if (!json_is_object(by)) { /* a report from before the kinds: zones and values */
        char z[32], v[32];
        snprintf(buf, len, "%.0f zones x %s + %.0f values x %s", num(o, "zones_recorded"),
                 fmt_ns(num(o, "zone_cost_ns"), z, sizeof z), num(o, "values_recorded"),
                 fmt_ns(num(o, "value_cost_ns"), v, sizeof v));
        return;
    }
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && used < len; k++) {
        char one[256], how[128] = "";
        if (!part_text(json_object_get(by, kinds[k].key), k, one, sizeof one))
            continue;
        if (!strcmp(kinds[k].key, "zones"))
            zone_price_text(o, how, sizeof how);
        int n = snprintf(buf + used, len - used, "%s%s%s", used ? " + " : "", one, how);
        used += n > 0 ? (size_t)n : 0;
    }
}

/* One of stepscope's threads: "sampler 0.150% of one core"; seconds of CPU
 * for a report from before the shares. */
static void thread_text(const json_t *o, const char *what, const char *key, char *buf, size_t len) {
    char t[32], percent_key[64], cpu_key[64];
    snprintf(percent_key, sizeof percent_key, "%s_percent_of_core", key);
    snprintf(cpu_key, sizeof cpu_key, "%s_cpu_s", key);
    if (!isnan(num(o, percent_key)))
        snprintf(buf, len, "%s %s of one core", what, pct(num(o, percent_key), t, sizeof t));
    else
        snprintf(buf, len, "%s %s of CPU", what, sps__fmt_seconds(num(o, cpu_key), t, sizeof t));
}

/* The sampler's share of a core and the other threads of stepscope's that ran. */
static void threads_text(const json_t *o, char *buf, size_t len) {
    char one[96];
    if (!isnan(num(o, "sampler_cpu_s")))
        thread_text(o, "sampler", "sampler", buf, len);
    else
        snprintf(buf, len, "no sampler");
    if (num(o, "live_view_cpu_s") > 0) {
        thread_text(o, "live status", "live_view", one, sizeof one);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, ", %s", one);
    }
    if (num(o, "guard_cpu_s") > 0) {
        thread_text(o, "budget guard", "guard", one, sizeof one);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, ", %s", one);
    }
}

void sps__overhead_print(FILE *f, const json_t *o) {
    if (!json_is_object(o))
        return;
    char a[32], b[32], c[32], parts[2048], threads[256];
    sps__analysis_label(f, "overhead");
    int partial = json_is_true(json_object_get(o, "recording_partial"));
    fprintf(f, "recording %s%s of the workload's CPU time", partial ? "at least " : "",
            pct(num(o, "percent_of_workload_cpu"), a, sizeof a));
    if (!isnan(num(o, "recording_s"))) {
        breakdown(o, parts, sizeof parts);
        fprintf(f, " (%s%s= %s)", parts, parts[0] ? " " : "", sps__fmt_seconds(num(o, "recording_s"), b, sizeof b));
    } else
        fprintf(f, " (%s)", html_str(o, "recording_unmeasured_reason") ? html_str(o, "recording_unmeasured_reason") : "");
    threads_text(o, threads, sizeof threads);
    fprintf(f, "; %s; all of stepscope %s of one core\n", threads, pct(num(o, "percent_of_wall"), c, sizeof c));
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

/* One of stepscope's threads: its CPU time and, where the report has it,
 * its share of one core. */
static void thread_row(FILE *out, const json_t *o, const char *what, const char *key) {
    char v[64], d[128], t[32], percent_key[64], cpu_key[64];
    snprintf(percent_key, sizeof percent_key, "%s_percent_of_core", key);
    snprintf(cpu_key, sizeof cpu_key, "%s_cpu_s", key);
    if (!isnan(num(o, percent_key)))
        snprintf(d, sizeof d, "CPU time of its thread: %s of one core over the run", pct(num(o, percent_key), t, sizeof t));
    else
        snprintf(d, sizeof d, "CPU time of its thread");
    row(out, what, sps__fmt_seconds(num(o, cpu_key), v, sizeof v), d);
}

/* A table row per kind that recorded something, and the threads'. */
static void html_rows(FILE *out, const json_t *o) {
    char v[64], d[512], t[32];
    if (!isnan(num(o, "recording_s"))) {
        const json_t *by = json_object_get(o, "recording_by_kind");
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            const json_t *part = json_object_get(by, kinds[k].key);
            char what[256], how[128] = "";
            if (!part_text(part, k, what, sizeof what))
                continue;
            if (!strcmp(kinds[k].key, "zones"))
                zone_price_text(o, how, sizeof how);
            snprintf(d, sizeof d, "%s: %s%s", kinds[k].how, what, how);
            row(out, kinds[k].label, sps__fmt_seconds(num(part, "s"), v, sizeof v), d);
        }
        snprintf(d, sizeof d, "%s of the workload's CPU time%s", pct(num(o, "percent_of_workload_cpu"), t, sizeof t),
                 json_is_true(json_object_get(o, "recording_partial")) ? " at least: some kinds were not priced" : "");
        row(out, "recording", sps__fmt_seconds(num(o, "recording_s"), v, sizeof v), d);
    } else {
        const char *why = html_str(o, "recording_unmeasured_reason");
        row(out, "recording", "unknown", why ? why : "");
    }
    if (!isnan(num(o, "sampler_cpu_s")))
        thread_row(out, o, "sampler", "sampler");
    else
        row(out, "sampler", "none", "no sampler ran");
    thread_row(out, o, "live status", "live_view");
    if (num(o, "guard_cpu_s") > 0)
        thread_row(out, o, "budget guard", "guard");
}

void sps__overhead_html(FILE *out, const json_t *o) {
    if (!json_is_object(o))
        return;
    char v[64], d[160], t[32];
    fputs("<section id=\"overhead\"><h2>What stepscope cost</h2>\n"
          "<p class=\"what\">Recording is paid by the workload's threads, by kind: what was recorded times the cost "
          "of one (the library's, measured on this machine when the run ended; Python's own work and instrument's "
          "hooks, measured in each process). A zone is priced at a warmed-up call's cost plus what this run's caches "
          "added to its end, as the recorder sampled it; a value and Python's own work at a warmed-up call's, a "
          "floor (docs/analysis.md says how far); instrument's hooks from a small training loop. "
          "The sampler and the live status run on stepscope's own threads: "
          "their CPU time, and its share of one core over the run.</p>\n<table><tr><th>part</th><th>cost</th><th>how</th></tr>\n",
          out);
    html_rows(out, o);
    snprintf(d, sizeof d, "recording, sampler, live status and guard together");
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
