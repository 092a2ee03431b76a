/*
 * analysis_bottleneck.c - report.json's analysis.bottleneck for a person:
 * two lines under the terminal summary and a section of report.html.
 */
#include <math.h>
#include <string.h>

#include "render/analysis_views.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

/* "7 cpu-bound, 3 input-bound" into buf when the windows do not all agree
 * with the run's verdict; "" otherwise. */
static void window_tally(const json_t *b, char *buf, size_t len) {
    buf[0] = '\0';
    const json_t *windows = json_object_get(b, "windows");
    const char *run_kind = html_str(b, "verdict");
    const char *kinds[16];
    int counts[16], nkinds = 0, disagree = 0;
    size_t i;
    const json_t *w;
    json_array_foreach(windows, i, w) {
        const char *k = html_str(w, "verdict");
        if (!k)
            continue;
        disagree |= !run_kind || strcmp(k, run_kind) != 0;
        int j = 0;
        while (j < nkinds && strcmp(kinds[j], k) != 0)
            j++;
        if (j == nkinds && nkinds < 16) {
            kinds[nkinds] = k;
            counts[nkinds++] = 0;
        }
        if (j < nkinds)
            counts[j]++;
    }
    if (!disagree)
        return;
    size_t used = 0;
    for (int j = 0; j < nkinds && used < len; j++) {
        int n = snprintf(buf + used, len - used, "%s%d %s", j ? ", " : "", counts[j], kinds[j]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

void sps__analysis_bottleneck_print(FILE *f, const json_t *analysis) {
    const json_t *b = json_object_get(analysis, "bottleneck");
    if (!json_is_object(b))
        return;
    const char *kind = html_str(b, "verdict"), *reason = html_str(b, "reason");
    const char *rec = html_str(b, "recommendation");
    double conf = html_num(b, "confidence");
    sps__analysis_label(f, "bottleneck");
    fputs(kind ? kind : "unknown", f);
    if (isfinite(conf))
        fprintf(f, " (confidence %.2f)", conf);
    fprintf(f, ": %s", reason ? reason : "no reason given");
    char tally[256];
    window_tally(b, tally, sizeof tally);
    if (tally[0])
        fprintf(f, " [windows: %s]", tally);
    fputc('\n', f);
    if (rec) {
        sps__analysis_label(f, "");
        fprintf(f, "try: %s\n", rec);
    }
}

/* One figure of the evidence in its unit (taken from the key's suffix). */
static void fmt_figure(char *buf, size_t len, const char *key, double v) {
    size_t n = strlen(key);
#define ENDS(s) (n >= sizeof(s) - 1 && strcmp(key + n - (sizeof(s) - 1), s) == 0)
    if (!isfinite(v))
        snprintf(buf, len, "–");
    else if (ENDS("_bytes_per_second")) {
        html_fmt_bytes(buf, len, v);
        strncat(buf, "/s", len - strlen(buf) - 1);
    } else if (ENDS("_bytes"))
        html_fmt_bytes(buf, len, v);
    else if (ENDS("_seconds"))
        html_fmt_duration(buf, len, v);
    else if (ENDS("_percent"))
        snprintf(buf, len, "%.1f%%", v);
    else if (ENDS("_celsius"))
        snprintf(buf, len, "%.0f °C", v);
    else if (strcmp(key, "gpu_throttle_reasons_seen") == 0)
        snprintf(buf, len, "0x%llx", (unsigned long long)v);
    else
        snprintf(buf, len, "%.0f", v);
#undef ENDS
}

static void html_cell(FILE *out, const json_t *evidence, const char *key) {
    char buf[64];
    fmt_figure(buf, sizeof buf, key, html_num(evidence, key));
    fputs("<td>", out);
    svg_write_escaped(out, buf);
    fputs("</td>", out);
}

/* What a figure means where its name alone leaves two figures alike: the
 * run delay and the CPU wait read close for one thread that always wants
 * a CPU, and apart otherwise (docs/analysis.md). NULL for the rest. */
static const char *evidence_gloss(const char *key) {
    if (strcmp(key, "workload_run_delay_mean_percent") == 0)
        return "time runnable but not running, per wall second (percent of one CPU)";
    if (strcmp(key, "workload_cpu_wait_percent") == 0)
        return "of the time the workload was ready to run, the share it waited for a CPU: delay / (delay + CPU time)";
    if (strcmp(key, "top_zone_percent") == 0)
        return "of step time, the self time of the largest zone not named like data loading (top_zone)";
    return NULL;
}

void sps__analysis_bottleneck_html(FILE *out, const json_t *analysis) {
    const json_t *b = json_object_get(analysis, "bottleneck");
    if (!json_is_object(b))
        return;
    const char *kind = html_str(b, "verdict"), *reason = html_str(b, "reason");
    const char *rec = html_str(b, "recommendation");
    double conf = html_num(b, "confidence");
    fputs("<section id=\"bottleneck\">\n<h2>Bottleneck</h2>\n<p class=\"what\">What limits the step, judged from "
          "the share of step time in data-loading zones and the machine's readings over the steps after warm-up, "
          "including how long the workload waited for a CPU while other work held them (docs/analysis.md says "
          "how).</p>\n<p><strong>",
          out);
    svg_write_escaped(out, kind ? kind : "unknown");
    fputs("</strong>", out);
    if (isfinite(conf))
        fprintf(out, " (confidence %.2f)", conf);
    fputs(": ", out);
    svg_write_escaped(out, reason ? reason : "");
    fputs("</p>\n", out);
    if (rec) {
        fputs("<p>Try: ", out);
        svg_write_escaped(out, rec);
        fputs("</p>\n", out);
    }

    const json_t *ev = json_object_get(b, "evidence");
    const json_t *unavailable = json_object_get(ev, "unavailable");
    fputs("<table>\n<thead><tr><th>evidence</th><th>value</th></tr></thead>\n<tbody>\n", out);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)ev, key, value) {
        if (!json_is_number(value) && !json_is_null(value))
            continue;
        char buf[64];
        fmt_figure(buf, sizeof buf, key, html_num(ev, key));
        fputs("<tr><td>", out);
        svg_write_escaped(out, key);
        const char *gloss = evidence_gloss(key);
        if (gloss) {
            fputs("<br><small>", out);
            svg_write_escaped(out, gloss);
            fputs("</small>", out);
        }
        fputs("</td><td>", out);
        svg_write_escaped(out, buf);
        const char *why = html_str(unavailable, key);
        if (json_is_null(value) && why) {
            fputs(" <small>(", out);
            svg_write_escaped(out, why);
            fputs(")</small>", out);
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);

    const json_t *windows = json_object_get(b, "windows");
    if (json_array_size(windows) == 0) {
        const char *note = html_str(b, "windows_note");
        fputs("<p class=\"note\">No step windows: ", out);
        svg_write_escaped(out, note ? note : "no steps");
        fputs(".</p>\n</section>\n", out);
        return;
    }
    fputs("<table>\n<thead><tr><th>steps</th><th>from</th><th>to</th><th>verdict</th><th>confidence</th>"
          "<th>data loading</th><th>GPU busy</th><th>workload CPU (% of a core)</th><th>waiting for a CPU (% of "
          "runnable time)</th><th>iowait</th></tr></thead>\n"
          "<tbody>\n",
          out);
    size_t i;
    const json_t *w;
    json_array_foreach(windows, i, w) {
        const json_t *we = json_object_get(w, "evidence");
        char from[48], to[48];
        html_fmt_duration(from, sizeof from, html_num(w, "start_seconds"));
        html_fmt_duration(to, sizeof to, html_num(w, "end_seconds"));
        fprintf(out, "<tr><td>%.0f–%.0f</td><td>", html_num(w, "first_step"), html_num(w, "last_step"));
        svg_write_escaped(out, from);
        fputs("</td><td>", out);
        svg_write_escaped(out, to);
        fputs("</td><td title=\"", out); /* the reason on hover: the table stays narrow */
        svg_write_escaped(out, html_str(w, "reason"));
        fputs("\">", out);
        svg_write_escaped(out, html_str(w, "verdict") ? html_str(w, "verdict") : "unknown");
        double c = html_num(w, "confidence");
        if (isfinite(c))
            fprintf(out, "</td><td>%.2f</td>", c);
        else
            fputs("</td><td>–</td>", out);
        html_cell(out, we, "data_loading_percent");
        html_cell(out, we, "gpu_utilization_mean_percent");
        html_cell(out, we, "workload_cpu_mean_percent");
        html_cell(out, we, "workload_cpu_wait_percent");
        html_cell(out, we, "system_iowait_mean_percent");
        fputs("</tr>\n", out);
    }
    fputs("</tbody>\n</table>\n<p class=\"note\">The steps after warm-up of the main step's busiest thread, cut "
          "into windows of equal step count; each window is judged from the readings inside its time span.</p>\n"
          "</section>\n",
          out);
}
