/*
 * analysis_bottleneck.c - the bottleneck analysis for a person: two lines
 * under the terminal summary and a section of report.html.
 */
#include <math.h>
#include <string.h>

#include "analysis/bottleneck.h"
#include "render/analysis_views.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

/* "7 cpu-bound, 3 input-bound" into buf when the windows do not all agree
 * with the run's verdict; "" otherwise. */
static void window_tally(const struct sps_bottleneck *b, char *buf, size_t len) {
    buf[0] = '\0';
    const char *run_kind = sps__bn_kind_name(b->verdict.kind);
    const char *kinds[16];
    int counts[16], nkinds = 0, disagree = 0;
    for (size_t i = 0; i < b->nwindows; i++) {
        const char *k = sps__bn_kind_name(b->windows[i].verdict.kind);
        disagree |= strcmp(k, run_kind) != 0;
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

void sps__analysis_bottleneck_print(FILE *f, const struct sps_bottleneck *b) {
    const char *rec = b->verdict.recommendation;
    double conf = b->verdict.confidence;
    sps__analysis_label(f, "bottleneck");
    fputs(sps__bn_kind_name(b->verdict.kind), f);
    if (isfinite(conf))
        fprintf(f, " (confidence %.2f)", conf);
    fprintf(f, ": %s", b->verdict.reason);
    char tally[256];
    window_tally(b, tally, sizeof tally);
    if (tally[0])
        fprintf(f, " [windows: %s]", tally);
    fputc('\n', f);
    sps__analysis_label(f, "");
    fprintf(f, "try: %s\n", rec);
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

static void html_cell(FILE *out, const char *key, double v) {
    char buf[64];
    fmt_figure(buf, sizeof buf, key, v);
    fputs("<td class=\"num\">", out);
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

void sps__analysis_bottleneck_html(FILE *out, const struct sps_bottleneck *b) {
    const char *rec = b->verdict.recommendation;
    double conf = b->verdict.confidence;
    fputs("<section id=\"bottleneck\">\n<h2>Bottleneck</h2>\n<p class=\"what\">What limits the step, judged from "
          "the share of step time in data-loading zones and the machine's readings over the steps after warm-up, "
          "including how long the workload waited for a CPU while other work held them (docs/analysis.md says "
          "how).</p>\n<p><strong>",
          out);
    svg_write_escaped(out, sps__bn_kind_name(b->verdict.kind));
    fputs("</strong>", out);
    if (isfinite(conf))
        fprintf(out, " (confidence %.2f)", conf);
    fputs(": ", out);
    svg_write_escaped(out, b->verdict.reason);
    fputs("</p>\n", out);
    fputs("<p>Try: ", out);
    svg_write_escaped(out, rec);
    fputs("</p>\n", out);

    struct sps_bn_figure figs[SPS_BN_FIGURES];
    size_t nfigs = sps__bn_evidence_figures(&b->evidence, figs);
    fputs("<table>\n<thead><tr><th>evidence</th><th>value</th></tr></thead>\n<tbody>\n", out);
    for (size_t i = 0; i < nfigs; i++) {
        char buf[64];
        fmt_figure(buf, sizeof buf, figs[i].key, figs[i].value);
        fputs("<tr><td>", out);
        svg_write_escaped(out, figs[i].key);
        const char *gloss = evidence_gloss(figs[i].key);
        if (gloss) {
            fputs("<br><small>", out);
            svg_write_escaped(out, gloss);
            fputs("</small>", out);
        }
        fputs("</td><td>", out);
        svg_write_escaped(out, buf);
        if (figs[i].why) {
            fputs(" <small>(", out);
            svg_write_escaped(out, figs[i].why);
            fputs(")</small>", out);
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);

    if (b->nwindows == 0) {
        fputs("<p class=\"note\">No step windows: ", out);
        svg_write_escaped(out, b->windows_note ? b->windows_note : "no steps");
        fputs(".</p>\n</section>\n", out);
        return;
    }
    fputs("<table>\n<thead><tr><th>steps</th><th>from</th><th>to</th><th>verdict</th><th>confidence</th>"
          "<th>data loading</th><th>GPU busy</th><th>workload CPU (% of a core)</th><th>waiting for a CPU (% of "
          "runnable time)</th><th>iowait</th></tr></thead>\n"
          "<tbody>\n",
          out);
    for (size_t i = 0; i < b->nwindows; i++) {
        const struct sps_bn_window *w = &b->windows[i];
        const struct sps_bn_evidence *we = &w->evidence;
        char from[48], to[48];
        html_fmt_duration(from, sizeof from, w->start_seconds);
        html_fmt_duration(to, sizeof to, w->end_seconds);
        /* a step range and a verdict are words that must not break
         * ("121–150", "cpu-contended") */
        fprintf(out, "<tr><td class=\"num\">%llu–%llu</td><td class=\"num\">", (unsigned long long)w->first_step,
                (unsigned long long)w->last_step);
        svg_write_escaped(out, from);
        fputs("</td><td class=\"num\">", out);
        svg_write_escaped(out, to);
        fputs("</td><td class=\"label num\" title=\"", out); /* the reason on hover: the table stays narrow */
        svg_write_escaped(out, w->verdict.reason);
        fputs("\">", out);
        svg_write_escaped(out, sps__bn_kind_name(w->verdict.kind));
        double c = w->verdict.confidence;
        if (isfinite(c))
            fprintf(out, "</td><td class=\"num\">%.2f</td>", c);
        else
            fputs("</td><td class=\"num\">–</td>", out);
        html_cell(out, "data_loading_percent", we->data_loading_percent);
        html_cell(out, "gpu_utilization_mean_percent", we->gpu_utilization_mean_percent);
        html_cell(out, "workload_cpu_mean_percent", we->workload_cpu_mean_percent);
        html_cell(out, "workload_cpu_wait_percent", we->workload_cpu_wait_percent);
        html_cell(out, "system_iowait_mean_percent", we->system_iowait_mean_percent);
        fputs("</tr>\n", out);
    }
    fputs("</tbody>\n</table>\n<p class=\"note\">The steps after warm-up of the main step's busiest thread, cut "
          "into windows of equal step count; each window is judged from the readings inside its time span.</p>\n"
          "</section>\n",
          out);
}
