/*
 * analysis_throughput.c - report.json's analysis.throughput as terminal
 * lines and a report.html section (see analysis_views.h).
 */
#include <math.h>
#include <stdio.h>

#include "render/analysis_views.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

/* A rate with an SI prefix: "15.4k", "1.23T". */
static const char *fmt_si(char *buf, size_t len, double v) {
    static const char prefix[] = {'\0', 'k', 'M', 'G', 'T', 'P', 'E'};
    if (!isfinite(v)) {
        snprintf(buf, len, "–");
        return buf;
    }
    size_t p = 0;
    while (fabs(v) >= 1000.0 && p + 1 < sizeof prefix) {
        v /= 1000.0;
        p++;
    }
    if (p)
        snprintf(buf, len, "%.3g%c", v, prefix[p]);
    else
        snprintf(buf, len, "%.3g", v);
    return buf;
}

/* At most this many counters on the terminal: the rest are in report.json. */
#define PRINTED_COUNTERS 4

void sps__analysis_throughput_print(FILE *f, const json_t *analysis) {
    const json_t *t = json_object_get(analysis, "throughput");
    if (!json_is_object(t))
        return;
    const json_t *counters = json_object_get(t, "counters");
    size_t i;
    json_t *c;
    int printed = 0;
    json_array_foreach(counters, i, c) {
        if (i >= PRINTED_COUNTERS)
            break;
        char rate[32], median[32];
        const char *name = html_str(c, "name");
        double per_second = html_num(c, "per_second");
        sps__analysis_label(f, printed++ ? "" : "throughput"); /* one label over the counters' lines */
        if (!isfinite(per_second)) { /* said, not left out: a missing line reads as "not counted" */
            const char *why = html_str(c, "unavailable_reason");
            fprintf(f, "%s: no rate (%s)\n", name ? name : "?", why ? why : "no reason given");
            continue;
        }
        const json_t *steps = json_object_get(c, "per_step_per_second");
        fprintf(f, "%s %s/s (median step %s/s; %.0f steps, %.0f warm-up left out)\n",
                fmt_si(rate, sizeof rate, per_second), name ? name : "?",
                fmt_si(median, sizeof median, html_num(steps, "median")), html_num(c, "steps"),
                html_num(t, "warmup_steps_excluded"));
    }
    const json_t *flops = json_object_get(t, "flops");
    double fps = html_num(flops, "per_second");
    if (!isfinite(fps))
        return;
    char rate[32], peak[32];
    const json_t *mfu = json_object_get(t, "mfu");
    double value = html_num(mfu, "value");
    sps__analysis_label(f, "efficiency");
    if (isfinite(value))
        fprintf(f, "%sFLOP/s = MFU %.1f%% of %sFLOP/s peak (%s)\n", fmt_si(rate, sizeof rate, fps),
                value * 100.0, fmt_si(peak, sizeof peak, html_num(mfu, "peak_flops")), html_str(mfu, "peak_from"));
    else
        fprintf(f, "%sFLOP/s; MFU unavailable (%s)\n", fmt_si(rate, sizeof rate, fps),
                html_str(mfu, "unavailable_reason") ? html_str(mfu, "unavailable_reason") : "no reason given");
}

void sps__analysis_throughput_html(FILE *out, const json_t *analysis) {
    const json_t *t = json_object_get(analysis, "throughput");
    if (!json_is_object(t))
        return;
    fprintf(out,
            "<section id=\"throughput\">\n<h2>Throughput and efficiency</h2>\n<p class=\"what\">Each counter's "
            "count inside the steps over the steps' time, leaving out %.0f warm-up step(s); threads that step side "
            "by side add up. Per-step rates are each step's count over its duration.</p>\n",
            html_num(t, "warmup_steps_excluded"));
    const json_t *counters = json_object_get(t, "counters");
    if (json_array_size(counters) == 0) {
        fputs("<p class=\"empty\">", out);
        const char *why = html_str(t, "unavailable_reason");
        svg_write_escaped(out, why ? why : "No counter was recorded.");
        fputs("</p>\n", out);
    } else {
        fputs("<table>\n<thead><tr><th>counter</th><th>per second</th><th>step median /s</th><th>step mean /s</th>"
              "<th>step min /s</th><th>step max /s</th><th>steps</th><th>total</th></tr></thead>\n<tbody>\n",
              out);
        size_t i;
        json_t *c;
        json_array_foreach(counters, i, c) {
            const json_t *s = json_object_get(c, "per_step_per_second");
            char a[32], b[32], m[32], lo[32], hi[32], tot[32];
            fputs("<tr><td>", out);
            svg_write_escaped(out, html_str(c, "name"));
            fprintf(out, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.0f</td><td>%s</td></tr>\n",
                    fmt_si(a, sizeof a, html_num(c, "per_second")), fmt_si(b, sizeof b, html_num(s, "median")),
                    fmt_si(m, sizeof m, html_num(s, "mean")), fmt_si(lo, sizeof lo, html_num(s, "min")),
                    fmt_si(hi, sizeof hi, html_num(s, "max")), html_num(c, "steps"),
                    fmt_si(tot, sizeof tot, html_num(c, "total")));
        }
        fputs("</tbody>\n</table>\n", out);
    }
    const json_t *flops = json_object_get(t, "flops");
    const json_t *mfu = json_object_get(t, "mfu");
    char rate[32], peak[32];
    fputs("<p>", out);
    double fps = html_num(flops, "per_second");
    if (isfinite(fps)) {
        fprintf(out, "FLOP/s: %s (counter ", fmt_si(rate, sizeof rate, fps));
        svg_write_escaped(out, html_str(flops, "counter"));
        fputs("). ", out);
    } else {
        fputs("FLOP/s unavailable: ", out);
        svg_write_escaped(out, html_str(flops, "unavailable_reason"));
        fputs(". ", out);
    }
    double value = html_num(mfu, "value");
    if (isfinite(value)) {
        fprintf(out, "MFU: %.1f%% of %sFLOP/s (", value * 100.0, fmt_si(peak, sizeof peak, html_num(mfu, "peak_flops")));
        svg_write_escaped(out, html_str(mfu, "peak_from"));
        fputs(").", out);
    } else {
        fputs("MFU unavailable: ", out);
        svg_write_escaped(out, html_str(mfu, "unavailable_reason"));
        fputs(".", out);
    }
    fputs("</p>\n</section>\n", out);
}
