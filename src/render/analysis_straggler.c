/*
 * analysis_straggler.c - the straggler verdict as terminal lines and a
 * report.html section (see analysis_views.h).
 */
#include <math.h>
#include <stdio.h>

#include "analysis/straggler.h"
#include "render/analysis_views.h"
#include "render/svg_chart.h"

/* Where a rank runs: " (host)", or "" when the record named none. */
static const char *host_part(const struct sps_straggler_rank *k, char *buf, size_t len) {
    if (k->host[0])
        snprintf(buf, len, " (%s)", k->host);
    else
        buf[0] = '\0';
    return buf;
}

int sps__straggler_text(const struct sps_straggler *s, size_t i, char *buf, size_t len) {
    char host[80];
    if (!s->computed || s->verdict == SPS_STRAGGLER_NOT_DISTRIBUTED)
        return 0;
    if (s->verdict == SPS_STRAGGLER_FOUND) {
        size_t n = 0;
        for (size_t r = 0; r < s->nranks; r++) {
            const struct sps_straggler_rank *k = &s->ranks[r];
            if (!k->slow || n++ != i)
                continue;
            snprintf(buf, len,
                     "rank %d%s loses %.1f ms a step in %s (in %.0f%% of windows, confidence %.1f); the job waits "
                     "%.1f ms a step for it",
                     k->rank, host_part(k, host, sizeof host), k->phase_excess_ms, k->phase, k->share * 100.0,
                     k->confidence, k->excess_ms);
            return 1;
        }
        return 0;
    }
    if (i > 0)
        return 0;
    if (s->verdict == SPS_STRAGGLER_NONE)
        snprintf(buf, len,
                 "none: ranks within %.1f ms of each other's compute a step (%.0f%% of a %.1f ms step); %zu ranks, "
                 "no rank named in %.0f%% of %zu windows of %u steps",
                 s->spread_ms, s->step_ms > 0 ? 100.0 * s->spread_ms / s->step_ms : 0.0, s->step_ms, s->nranks,
                 s->clean_share * 100.0, s->nwindows, s->window_steps);
    else
        snprintf(buf, len, "unknown: %s", s->reason);
    return 1;
}

void sps__analysis_straggler_print(FILE *f, const struct sps_straggler *s) {
    char line[512];
    for (size_t i = 0; sps__straggler_text(s, i, line, sizeof line); i++) {
        sps__analysis_label(f, i ? "" : "straggler");
        fprintf(f, "%s\n", line);
    }
}

static void rank_row(FILE *out, const struct sps_straggler_rank *k) {
    fprintf(out, "<tr%s><td class=\"num\">%d</td><td>", k->slow ? " class=\"slow\"" : "", k->rank);
    svg_write_escaped(out, k->host);
    fprintf(out,
            "</td><td class=\"num\">%d</td><td class=\"num\">%.1f</td><td class=\"num\">%.1f</td>"
            "<td class=\"num\">%.1f</td><td class=\"num\">%+.1f</td><td class=\"num\">%.0f%%</td><td>",
            k->pid, k->step_ms, k->wait_ms, k->compute_ms, k->excess_ms, k->share * 100.0);
    if (k->slow) {
        svg_write_escaped(out, k->phase);
        fprintf(out, " (+%.1f ms)", k->phase_excess_ms);
    }
    fputs("</td></tr>\n", out);
}

void sps__analysis_straggler_html(FILE *out, const struct sps_straggler *s) {
    char line[512];
    if (!sps__straggler_text(s, 0, line, sizeof line))
        return;
    fputs("<section id=\"straggler\">\n<h2>Stragglers</h2>\n<p class=\"what\">A collective ends at the same moment "
          "on every rank, so wall times cannot say who is slow. Each rank's compute is its step less its time "
          "waiting in collectives; a rank is named in a window of steps when the median over the window of its "
          "compute less the other ranks' median is above a threshold both absolute and relative to the noise."
          "</p>\n<p>",
          out);
    for (size_t i = 0; sps__straggler_text(s, i, line, sizeof line); i++) {
        fputs(i ? "<br>\n" : "", out);
        svg_write_escaped(out, line);
    }
    fputs("</p>\n", out);
    if (s->nranks && s->nwindows) {
        fputs("<table>\n<thead><tr><th>rank</th><th>host</th><th>pid</th><th>step ms</th><th>wait ms</th>"
              "<th>compute ms</th><th>excess ms</th><th>windows named</th><th>where it loses time</th></tr></thead>\n"
              "<tbody>\n",
              out);
        for (size_t r = 0; r < s->nranks; r++)
            rank_row(out, &s->ranks[r]);
        fputs("</tbody>\n</table>\n", out);
        fprintf(out, "<p class=\"what\">Medians over %llu steps every rank completed, in %zu windows of %u steps.</p>\n",
                (unsigned long long)s->steps_judged, s->nwindows, s->window_steps);
    }
    fputs("</section>\n", out);
}
