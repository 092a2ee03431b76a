/*
 * analysis_overhead.c - what stepscope cost, for a person: a line under
 * the summary and a small table in report.html.
 */
#include <math.h>
#include <string.h>

#include "analysis/overhead.h"
#include "model/run.h"
#include "render/render.h"
#include "render/analysis_views.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

static const char *pct(double v, char *buf, size_t len) {
    if (isnan(v))
        snprintf(buf, len, "unknown");
    else
        snprintf(buf, len, v < 0.01 ? "%.4f%%" : v < 1 ? "%.3f%%" : "%.2f%%", v);
    return buf;
}

/* One cost in ns for a person: "23.1 ns", "1.20 µs". */
static const char *fmt_ns(double ns, char *buf, size_t len) {
    if (isnan(ns)) {
        snprintf(buf, len, "unknown");
        return buf;
    }
    return sps__fmt_seconds(ns / 1e9, buf, len);
}

/* The kinds of recording (enum sps_overhead_kind's order), each with
 * what a person reads for it (the Python kinds are Python's own work on
 * top of the library's, which "zones" and "values" price for every one). */
static const struct {
    const char *label, *prefix, *noun, *how;
} kinds[SPS_OH_KINDS] = {
    {"zones", "", "zones", "the library's begin+end, every zone, step and micro-step"},
    {"Python zones", "Python's own work around ", "zones",
     "zone()/step() and their with blocks, beyond the library's"},
    /* the hooks of stepscope.torch.instrument and of the auto-instrumentation
     * record through the same face (instrument_face) and are priced alike */
    {"torch hooks", "the torch hooks around ", "zones",
     "the Python work of stepscope.torch.instrument's or the auto-instrumentation's hooks, per zone they began"},
    {"values", "", "values", "the library's value or count"},
    {"record() calls", "Python's own work around ", "record() calls",
     "stepscope.record(), beyond the library's"},
    {"count() calls", "Python's own work around ", "count() calls",
     "stepscope.count(), beyond the library's"},
    {"left out", "", "left out", "zones the budget's thin level did not record"},
};

/* How a zone's price was made: " (22.5 ns warm + 300.6 ns the run's
 * caches added, 300 samples)"; "" without the run's samples. */
static void zone_price_text(const struct sps_overhead *o, char *buf, size_t len) {
    double warm = o->zone_cost_ns, in_run = o->zone_end_in_run_ns, base = o->zone_end_warm_ns;
    buf[0] = '\0';
    if (isnan(warm) || isnan(in_run) || isnan(base))
        return;
    char a[32], b[32];
    snprintf(buf, len, " (%s warm + %s the run's caches added, %llu sample%s)", fmt_ns(warm, a, sizeof a),
             fmt_ns(in_run > base ? in_run - base : 0, b, sizeof b), (unsigned long long)o->zone_end_samples,
             o->zone_end_samples == 1 ? "" : "s");
}

/* "N noun x cost" of one kind into buf; 0 when it recorded nothing.  An
 * unpriced share says so. */
static int part_text(const struct sps_overhead_part *part, size_t k, char *buf, size_t len) {
    uint64_t count = part->count, unpriced = part->unpriced;
    if (!count)
        return 0;
    char c[32];
    const char *pre = kinds[k].prefix, *noun = kinds[k].noun;
    int n = 0;
    if (count > unpriced)
        n = snprintf(buf, len, "%s%llu %s x %s", pre, (unsigned long long)(count - unpriced), noun,
                     fmt_ns(part->cost_ns, c, sizeof c));
    if (unpriced && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%s%s%llu %s not priced (not measured in their process)", n ? " + " : "",
                 pre, (unsigned long long)unpriced, noun);
    return 1;
}

/* The recording cost's parts, " + " between them ("" when none). */
static void breakdown(const struct sps_overhead *o, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < SPS_OH_KINDS && used < len; k++) {
        char one[256], how[128] = "";
        if (!part_text(&o->part[k], k, one, sizeof one))
            continue;
        if (k == SPS_OH_ZONES)
            zone_price_text(o, how, sizeof how);
        int n = snprintf(buf + used, len - used, "%s%s%s", used ? " + " : "", one, how);
        used += n > 0 ? (size_t)n : 0;
    }
}

/* One of stepscope's threads: "sampler 0.150% of one core"; seconds of CPU
 * when the share is unknown. */
static void thread_text(const char *what, double percent, double cpu_s, char *buf, size_t len) {
    char t[32];
    if (!isnan(percent))
        snprintf(buf, len, "%s %s of one core", what, pct(percent, t, sizeof t));
    else
        snprintf(buf, len, "%s %s of CPU", what, sps__fmt_seconds(cpu_s, t, sizeof t));
}

/* The sampler's share of a core and the other threads of stepscope's that ran. */
static void threads_text(const struct sps_overhead *o, char *buf, size_t len) {
    char one[96];
    if (!isnan(o->sampler_cpu_s))
        thread_text("sampler", o->sampler_percent_of_core, o->sampler_cpu_s, buf, len);
    else
        snprintf(buf, len, "no sampler");
    if (o->live_view_cpu_s > 0) {
        thread_text("live status", o->live_view_percent_of_core, o->live_view_cpu_s, one, sizeof one);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, ", %s", one);
    }
    if (o->guard_cpu_s > 0) {
        thread_text("budget guard", o->guard_percent_of_core, o->guard_cpu_s, one, sizeof one);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, ", %s", one);
    }
}

void sps__overhead_print(FILE *f, const struct sps_overhead *o) {
    char a[32], b[32], c[32], parts[2048], threads[256];
    sps__analysis_label(f, "overhead");
    /* "at least" bounds a known share; an unknown one has no bound */
    int bound = o->recording_partial && !isnan(o->percent_of_workload_cpu);
    fprintf(f, "recording %s%s of the workload's CPU time", bound ? "at least " : "",
            pct(o->percent_of_workload_cpu, a, sizeof a));
    if (!isnan(o->recording_s)) {
        breakdown(o, parts, sizeof parts);
        fprintf(f, " (%s%s= %s)", parts, parts[0] ? " " : "", sps__fmt_seconds(o->recording_s, b, sizeof b));
    } else
        fprintf(f, " (%s)", o->unmeasured_reason ? o->unmeasured_reason : "");
    threads_text(o, threads, sizeof threads);
    fprintf(f, "; %s; all of stepscope %s of one core\n", threads, pct(o->percent_of_wall, c, sizeof c));
    char budget[512];
    if (sps__overhead_budget_text(o, budget, sizeof budget)) {
        sps__analysis_label(f, "");
        fprintf(f, "%s\n", budget);
    }
}

/* What the thin level kept, for a person. */
static const char *kept_by(uint32_t level) {
    const char *name = sps__thin_level_name(level);
    if (!strcmp(name, "phases"))
        return "steps and their phases (zones directly inside a step)";
    if (!strcmp(name, "steps"))
        return "steps only";
    return "everything";
}

int sps__overhead_budget_text(const struct sps_overhead *o, char *buf, size_t len) {
    if (!o->budget_on)
        return 0;
    char a[32], c[32];
    double max = o->budget_percent;
    if (!o->exceeded) {
        if (o->windows > 0)
            snprintf(buf, len, "budget %.3g%%: kept (the costliest window cost %s of its CPU time; nothing thinned)",
                     max, pct(o->peak_window_percent, a, sizeof a));
        else
            snprintf(buf, len, "budget %.3g%%: not judged (the workload used less than %.2g s of CPU time in any "
                               "window; nothing thinned)",
                     max, SPS_GUARD_MIN_WINDOW_CPU_S);
        return 1;
    }
    int n = snprintf(buf, len, "budget %.3g%%: exceeded at %.1f s (a window cost %s); recorded %s from %.1f s, "
                               "%llu zones left out",
                     max, o->first_exceeded_s, pct(o->peak_window_percent, a, sizeof a), kept_by(o->thin_level),
                     o->thinned_since_s, (unsigned long long)o->zones_thinned);
    if (o->over_with_steps_only && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; still over with steps only (latest window %s): steps and values are "
                                           "never thinned",
                 pct(o->last_window_percent, c, sizeof c));
    return 1;
}

static void row(FILE *out, const char *what, const char *value, const char *detail) {
    fputs("<tr><td>", out);
    svg_write_escaped(out, what);
    fputs("</td><td class=\"num\">", out);
    svg_write_escaped(out, value);
    fputs("</td><td class=\"text\">", out);
    svg_write_escaped(out, detail);
    fputs("</td></tr>\n", out);
}

/* One of stepscope's threads: its CPU time and, where known, its share
 * of one core. */
static void thread_row(FILE *out, const char *what, double percent, double cpu_s) {
    char v[64], d[128], t[32];
    if (!isnan(percent))
        snprintf(d, sizeof d, "CPU time of its thread: %s of one core over the run", pct(percent, t, sizeof t));
    else
        snprintf(d, sizeof d, "CPU time of its thread");
    row(out, what, sps__fmt_seconds(cpu_s, v, sizeof v), d);
}

/* A table row per kind that recorded something, and the threads'. */
static void html_rows(FILE *out, const struct sps_overhead *o) {
    char v[64], d[512], t[32];
    if (!isnan(o->recording_s)) {
        for (size_t k = 0; k < SPS_OH_KINDS; k++) {
            char what[256], how[128] = "";
            if (!part_text(&o->part[k], k, what, sizeof what))
                continue;
            if (k == SPS_OH_ZONES)
                zone_price_text(o, how, sizeof how);
            snprintf(d, sizeof d, "%s: %s%s", kinds[k].how, what, how);
            row(out, kinds[k].label, sps__fmt_seconds(o->part[k].s, v, sizeof v), d);
        }
        snprintf(d, sizeof d, "%s of the workload's CPU time%s", pct(o->percent_of_workload_cpu, t, sizeof t),
                 o->recording_partial ? " at least: some kinds were not priced" : "");
        row(out, "recording", sps__fmt_seconds(o->recording_s, v, sizeof v), d);
    } else {
        row(out, "recording", "unknown", o->unmeasured_reason ? o->unmeasured_reason : "");
    }
    if (!isnan(o->sampler_cpu_s))
        thread_row(out, "sampler", o->sampler_percent_of_core, o->sampler_cpu_s);
    else
        row(out, "sampler", "none", "no sampler ran");
    thread_row(out, "live status", o->live_view_percent_of_core, o->live_view_cpu_s);
    if (o->guard_cpu_s > 0)
        thread_row(out, "budget guard", o->guard_percent_of_core, o->guard_cpu_s);
}

void sps__overhead_html(FILE *out, const struct sps_overhead *o) {
    char v[64], d[160], t[32];
    fputs("<section id=\"overhead\"><h2>What stepscope cost</h2>\n"
          "<p class=\"what\">Recording is paid by the workload's threads, by kind: what was recorded times the cost "
          "of one (the library's, measured on this machine when the run ended; Python's own work and instrument's "
          "hooks, measured in each process). A zone is priced at a warmed-up call's cost plus what this run's caches "
          "added to its end, as the recorder sampled it; a value and Python's own work at a warmed-up call's, a "
          "floor (docs/analysis.md says how far); instrument's hooks from a small training loop. "
          "The sampler and the live status run on stepscope's own threads: "
          "their CPU time, and its share of one core over the run.</p>\n"
          "<table><tr><th>part</th><th>cost</th><th class=\"text\">how</th></tr>\n",
          out);
    html_rows(out, o);
    snprintf(d, sizeof d, "recording, sampler, live status and guard together");
    snprintf(v, sizeof v, "%s of one core", pct(o->percent_of_wall, t, sizeof t));
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
