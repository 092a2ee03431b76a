/*
 * html.c - report.html: one self-contained page made from report.json
 * alone (so it works for standalone runs with no records).  A header with
 * what ran and what it cost, the charts (html_charts.c), and the zone
 * table.  The page loads nothing: no script, font or image; the styles are
 * inline and a Content-Security-Policy forbids fetching anything, so it
 * opens the same offline, from a mail attachment or a CI artifact.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */

#include <math.h>
#include <string.h>
#include <time.h>

#include "render/analysis_views.h"
#include "render/exporters.h"
#include "render/html_charts.h"
#include "render/html_units.h"
#include "render/svg_chart.h"
#include "stepscope.h"

/* The zone table lists this many names; report.json has the rest. */
#define MAX_TABLE_ROWS 300

/* default-src 'none' forbids every fetch (scripts, images, fonts,
 * connections); inline styles are the only thing the page needs. */
#define CSP "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

static const char STYLE[] =
    ":root{color-scheme:light}"
    "body{margin:0;background:#f5f6f8;color:#1f2937;"
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}"
    "main{max-width:1240px;margin:0 auto;padding:20px 20px 40px}"
    "h1{font-size:20px;margin:0 0 8px}"
    "h2{font-size:16px;margin:0 0 2px}"
    ".cmd{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:13px;background:#fff;"
    "border:1px solid #e3e5e8;border-radius:6px;padding:6px 10px;margin:0 0 12px;overflow-wrap:anywhere}"
    "dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px;margin:0}"
    ".fact{background:#fff;border:1px solid #e3e5e8;border-radius:6px;padding:8px 10px}"
    ".fact dt{font-size:12px;color:#6b7280}"
    ".fact dd{margin:0;font-size:16px;font-weight:600}"
    ".fact dd small{display:block;font-size:12px;font-weight:400;color:#6b7280}"
    ".fact.bad dd{color:#b91c1c}"
    "section{background:#fff;border:1px solid #e3e5e8;border-radius:8px;padding:14px 16px;margin:16px 0;"
    "overflow-x:auto}"
    "p.what{color:#4b5563;margin:0 0 8px;font-size:13px}"
    "p.note{color:#6b7280;margin:6px 0 0;font-size:12px}"
    "p.empty{margin:8px 0;padding:20px;border:1px dashed #cfd3d9;border-radius:6px;background:#fafbfc;"
    "color:#4b5563}"
    "svg{display:block;width:100%;height:auto;max-width:1200px}"
    "table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}"
    "th,td{padding:4px 8px;border-bottom:1px solid #eef0f2;text-align:right;white-space:nowrap}"
    "th{background:#f8f9fa;font-weight:600;color:#374151;white-space:normal}"
    /* break-word, not anywhere: a first column may wrap between words but
     * never narrows to one character a line ("1–4", a pid) beside wide cells */
    "th:first-child,td:first-child{text-align:left;white-space:normal;overflow-wrap:break-word}"
    /* a sentence in a cell (a reason) wraps instead of widening the page */
    "th.text,td.text{text-align:left;white-space:normal;min-width:16em}"
    "td.kind{color:#6b7280}"
    "footer{color:#6b7280;font-size:12px;margin-top:20px}";

static void write_fact(FILE *out, const char *term, const char *value, const char *detail, int bad) {
    fprintf(out, "<div class=\"fact%s\"><dt>", bad ? " bad" : "");
    svg_write_escaped(out, term);
    fputs("</dt><dd>", out);
    svg_write_escaped(out, value);
    if (detail && *detail) {
        fputs("<small>", out);
        svg_write_escaped(out, detail);
        fputs("</small>", out);
    }
    fputs("</dd></div>\n", out);
}

/* The command, its arguments separated by spaces. */
static void write_command(FILE *out, const json_t *command) {
    if (json_array_size(command) == 0) {
        fputs("(unknown command)", out);
        return;
    }
    for (size_t i = 0; i < json_array_size(command); i++) {
        if (i)
            fputc(' ', out);
        svg_write_escaped(out, json_string_value(json_array_get(command, i)));
    }
}

static void write_header(FILE *out, const json_t *report) {
    json_t *command = json_object_get(report, "command");
    const char *program = json_string_value(json_array_get(command, 0));
    const char *base = program ? strrchr(program, '/') : NULL;
    fputs("<header>\n<h1>stepscope report", out);
    if (program) {
        fputs(": ", out);
        svg_write_escaped(out, base ? base + 1 : program);
    }
    fputs("</h1>\n<div class=\"cmd\">", out);
    write_command(out, command);
    fputs("</div>\n<dl class=\"facts\">\n", out);

    char value[128], detail[256];
    json_t *exit_obj = json_object_get(report, "exit");
    const char *status = html_str(exit_obj, "status");
    int bad = 0;
    if (status && strcmp(status, "exited") == 0) {
        double code = html_num(exit_obj, "code");
        snprintf(value, sizeof value, "exited with %.0f", code);
        bad = code != 0;
        detail[0] = '\0';
    } else if (status && strcmp(status, "killed") == 0) {
        const char *sig = html_str(exit_obj, "signal_name");
        snprintf(value, sizeof value, "killed by %s", sig ? sig : "a signal");
        snprintf(detail, sizeof detail, "%s",
                 json_is_true(json_object_get(exit_obj, "core_dumped")) ? "core dumped" : "");
        bad = 1;
    } else {
        snprintf(value, sizeof value, "unknown");
        snprintf(detail, sizeof detail, "the process wrote this report itself, before it ended");
    }
    write_fact(out, "Exit status", value, detail, bad);

    json_t *timing = json_object_get(report, "timing");
    html_fmt_duration(value, sizeof value, html_num(timing, "wall_s"));
    write_fact(out, "Wall time", value, NULL, 0);
    double user = html_num(timing, "user_s"), sys = html_num(timing, "sys_s");
    html_fmt_duration(value, sizeof value, user + sys);
    char u[32], s[32];
    html_fmt_duration(u, sizeof u, user);
    html_fmt_duration(s, sizeof s, sys);
    snprintf(detail, sizeof detail, "user %s, system %s", u, s);
    write_fact(out, "CPU time", value, isfinite(user + sys) ? detail : NULL, 0);

    json_t *memory = json_object_get(report, "memory");
    html_fmt_bytes(value, sizeof value, html_num(memory, "peak_rss_bytes"));
    write_fact(out, "Peak RSS", value, html_str(memory, "peak_rss_scope"), 0);
    if (json_is_number(json_object_get(memory, "workload_peak_pss_bytes"))) {
        html_fmt_bytes(value, sizeof value, html_num(memory, "workload_peak_pss_bytes"));
        write_fact(out, "Peak PSS", value, "the process tree, shared pages counted once", 0);
    }

    json_t *steps = json_object_get(report, "steps");
    double count = html_num(steps, "count"), warm = html_num(steps, "warmup_steps");
    snprintf(value, sizeof value, isfinite(count) ? "%.0f" : "–", count);
    snprintf(detail, sizeof detail, "%.0f warm-up", isfinite(warm) ? warm : 0);
    write_fact(out, "Steps", value, detail, 0);

    json_t *overhead = json_object_get(report, "overhead");
    double cpu = html_num(overhead, "sampler_cpu_seconds");
    double pct = html_num(overhead, "sampler_cpu_percent_of_one_core");
    if (isfinite(cpu)) {
        html_fmt_duration(value, sizeof value, cpu);
        snprintf(value + strlen(value), sizeof value - strlen(value), " CPU");
        if (isfinite(pct))
            snprintf(detail, sizeof detail, "%.3g%% of one core, %.0f reads", pct,
                     html_num(overhead, "sampler_ticks"));
        else
            detail[0] = '\0';
        write_fact(out, "Sampler overhead", value, detail, 0);
    } else {
        write_fact(out, "Sampler overhead", "no sampler ran", "machine metrics were not sampled", 0);
    }

    json_t *recording = json_object_get(report, "recording");
    double recorded = html_num(recording, "events_recorded"), dropped = html_num(recording, "events_dropped");
    snprintf(value, sizeof value, isfinite(dropped) ? "%.0f dropped" : "–", dropped);
    snprintf(detail, sizeof detail, "of %.0f recorded", isfinite(recorded) ? recorded : 0);
    write_fact(out, "Events", value, detail, dropped > 0);

    double started = html_num(report, "started_unix_s");
    if (isfinite(started)) {
        time_t t = (time_t)started;
        struct tm tm;
        if (gmtime_r(&t, &tm) && strftime(value, sizeof value, "%Y-%m-%d %H:%M:%S UTC", &tm) > 0)
            write_fact(out, "Started", value, NULL, 0);
    }
    fputs("</dl>\n</header>\n", out);
}

static void write_cell_duration(FILE *out, double seconds) {
    char buf[48];
    html_fmt_duration(buf, sizeof buf, seconds);
    fprintf(out, "<td>%s</td>", buf);
}

static void write_zone_table(FILE *out, const json_t *report) {
    fputs("<section id=\"zones\">\n<h2>Zones</h2>\n<p class=\"what\">Every step, micro-step and zone name, merged "
          "over threads and processes. Total time includes nested zones; self time does not. Share of run is the "
          "total over the wall time (it can exceed 100% when a name runs on several threads at once). "
          "– means unknown.</p>\n",
          out);
    json_t *zones = json_object_get(report, "zones");
    size_t n = json_array_size(zones);
    if (n == 0) {
        fputs("<p class=\"empty\">No zone, step or micro-step was recorded.</p>\n</section>\n", out);
        return;
    }
    fputs("<table>\n<thead><tr><th>name</th><th>kind</th><th>count</th><th>total</th><th>self</th><th>mean</th>"
          "<th>p50</th><th>p90</th><th>p99</th><th>share of run</th></tr></thead>\n<tbody>\n",
          out);
    size_t shown = n < MAX_TABLE_ROWS ? n : MAX_TABLE_ROWS;
    for (size_t i = 0; i < shown; i++) {
        json_t *z = json_array_get(zones, i);
        fputs("<tr><td>", out);
        svg_write_escaped(out, html_str(z, "name"));
        fputs("</td><td class=\"kind\">", out);
        svg_write_escaped(out, html_str(z, "kind"));
        double count = html_num(z, "count");
        fprintf(out, "</td><td>%.0f</td>", isfinite(count) ? count : 0);
        write_cell_duration(out, html_num(z, "total_s"));
        write_cell_duration(out, html_num(z, "self_s"));
        write_cell_duration(out, html_num(z, "mean_s"));
        write_cell_duration(out, html_num(z, "p50_s"));
        write_cell_duration(out, html_num(z, "p90_s"));
        write_cell_duration(out, html_num(z, "p99_s"));
        double share = html_num(z, "share_of_wall");
        if (isfinite(share))
            fprintf(out, "<td>%.3g%%</td></tr>\n", share * 100);
        else
            fputs("<td>–</td></tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);
    if (shown < n)
        fprintf(out, "<p class=\"note\">%zu more names, with the least total time, are in report.json.</p>\n",
                n - shown);
    fputs("</section>\n", out);
}

int sps__export_html(const struct sps_report_input *in, FILE *out, char *err, size_t errlen) {
    const json_t *report = in->report;
    if (!json_is_object(report)) {
        snprintf(err, errlen, "%s: no report.json loaded", in->dir);
        return SPS_EINVAL;
    }
    struct html_steps steps;
    if (html_steps_load(report, &steps) != 0) {
        snprintf(err, errlen, "report.html: out of memory reading the step table");
        return SPS_ENOMEM;
    }
    json_t *command = json_object_get(report, "command");
    const char *program = json_string_value(json_array_get(command, 0));
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"" CSP "\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>stepscope: ",
          out);
    svg_write_escaped(out, program ? program : "report");
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", STYLE);
    write_header(out, report);
    sps__analysis_html(out, report);

    int rc = html_write_step_time(out, report, &steps);
    if (!rc)
        rc = html_write_phases(out, report, &steps);
    if (!rc)
        rc = html_write_timelines(out, report, &steps);
    html_steps_free(&steps);
    if (rc) {
        snprintf(err, errlen, "report.html: out of memory drawing the charts");
        return rc;
    }
    write_zone_table(out, report);

    const char *version = html_str(report, "stepscope_version");
    fputs("<footer>Made by stepscope ", out);
    svg_write_escaped(out, version ? version : "");
    fputs(" from report.json", out);
    const char *written_by = html_str(report, "written_by");
    if (written_by) {
        fputs(" (written by ", out);
        svg_write_escaped(out, written_by);
        fputc(')', out);
    }
    fputs(". This page is self-contained: it loads nothing from the network.</footer>\n</main>\n</body>\n</html>\n",
          out);
    if (ferror(out)) {
        snprintf(err, errlen, "report.html: write error");
        return SPS_EIO;
    }
    return 0;
}
