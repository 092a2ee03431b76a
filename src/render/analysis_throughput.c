/*
 * analysis_throughput.c - the throughput analysis as terminal lines and a
 * report.html section (see analysis_views.h).
 */
#include <math.h>
#include <stdio.h>

#include "analysis/throughput.h"
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

void sps__analysis_throughput_print(FILE *f, const struct sps_throughput *t) {
    int printed = 0;
    for (size_t i = 0; i < t->ncounters && i < PRINTED_COUNTERS; i++) {
        const struct sps_throughput_counter *c = &t->counters[i];
        char rate[32], median[32];
        sps__analysis_label(f, printed++ ? "" : "throughput"); /* one label over the counters' lines */
        if (!isfinite(c->per_second)) { /* said, not left out: a missing line reads as "not counted" */
            const char *why = c->steps == 0 ? sps__throughput_counter_why(c) : NULL;
            fprintf(f, "%s: no rate (%s)\n", c->name, why ? why : "no reason given");
            continue;
        }
        fprintf(f, "%s %s/s (median step %s/s; %llu steps, %llu warm-up left out)\n",
                fmt_si(rate, sizeof rate, c->per_second), c->name, fmt_si(median, sizeof median, c->step_rate_median),
                (unsigned long long)c->steps, (unsigned long long)t->warmup_steps);
    }
    if (!isfinite(t->flops_per_second))
        return;
    char rate[32], peak[32];
    sps__analysis_label(f, "efficiency");
    if (isfinite(t->mfu))
        fprintf(f, "%sFLOP/s = MFU %.1f%% of %sFLOP/s peak (%s)\n", fmt_si(rate, sizeof rate, t->flops_per_second),
                t->mfu * 100.0, fmt_si(peak, sizeof peak, t->peak_flops_total), t->peak_from);
    else
        fprintf(f, "%sFLOP/s; MFU unavailable (%s)\n", fmt_si(rate, sizeof rate, t->flops_per_second),
                t->mfu_reason[0] ? t->mfu_reason : "no reason given");
}

void sps__analysis_throughput_html(FILE *out, const struct sps_throughput *t) {
    fprintf(out,
            "<section id=\"throughput\">\n<h2>Throughput and efficiency</h2>\n<p class=\"what\">Each counter's "
            "count inside the steps over the steps' time, leaving out %llu warm-up step(s); threads that step side "
            "by side add up. Per-step rates are each step's count over its duration.</p>\n",
            (unsigned long long)t->warmup_steps);
    if (t->ncounters == 0) {
        fputs("<p class=\"empty\">", out);
        svg_write_escaped(out, t->reason[0] ? t->reason : "No counter was recorded.");
        fputs("</p>\n", out);
    } else {
        fputs("<table>\n<thead><tr><th>counter</th><th>per second</th><th>step median /s</th><th>step mean /s</th>"
              "<th>step min /s</th><th>step max /s</th><th>steps</th><th>total</th></tr></thead>\n<tbody>\n",
              out);
        for (size_t i = 0; i < t->ncounters; i++) {
            const struct sps_throughput_counter *c = &t->counters[i];
            char a[32], b[32], m[32], lo[32], hi[32], tot[32];
            fputs("<tr><td>", out);
            svg_write_escaped(out, c->name);
            fprintf(out,
                    "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                    "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%llu</td>"
                    "<td class=\"num\">%s</td></tr>\n",
                    fmt_si(a, sizeof a, c->per_second), fmt_si(b, sizeof b, c->step_rate_median),
                    fmt_si(m, sizeof m, c->step_rate_mean), fmt_si(lo, sizeof lo, c->step_rate_min),
                    fmt_si(hi, sizeof hi, c->step_rate_max), (unsigned long long)c->steps,
                    fmt_si(tot, sizeof tot, c->total));
        }
        fputs("</tbody>\n</table>\n", out);
    }
    char rate[32], peak[32];
    fputs("<p>", out);
    if (isfinite(t->flops_per_second)) {
        fprintf(out, "FLOP/s: %s (counter ", fmt_si(rate, sizeof rate, t->flops_per_second));
        svg_write_escaped(out, t->flops >= 0 ? t->counters[t->flops].name : NULL);
        fputs("). ", out);
    } else {
        fputs("FLOP/s unavailable: ", out);
        svg_write_escaped(out, t->flops_reason);
        fputs(". ", out);
    }
    if (isfinite(t->mfu)) {
        fprintf(out, "MFU: %.1f%% of %sFLOP/s (", t->mfu * 100.0, fmt_si(peak, sizeof peak, t->peak_flops_total));
        svg_write_escaped(out, t->peak_from[0] ? t->peak_from : NULL);
        fputs(").", out);
    } else {
        fputs("MFU unavailable: ", out);
        svg_write_escaped(out, t->mfu_reason);
        fputs(".", out);
    }
    fputs("</p>\n</section>\n", out);
}
