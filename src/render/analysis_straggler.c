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

/* "none": how close the ranks are when that is little (below the
 * window's floors: 1 ms and 5% of a step); otherwise the rank furthest
 * above the others and how rarely it was named, so that the sentence
 * never calls a large difference "within". */
static void none_text(const struct sps_straggler *s, char *buf, size_t len) {
    char host[80], windows[120];
    snprintf(windows, sizeof windows, "no rank named in %.0f%% of %zu windows of %u steps", s->clean_share * 100.0,
             s->nwindows, s->window_steps);
    const struct sps_straggler_rank *top = NULL;
    for (size_t r = 0; r < s->nranks; r++)
        if (!top || s->ranks[r].excess_ms > top->excess_ms)
            top = &s->ranks[r];
    double floor_ms = fmax(SPS_STRAGGLER_ABS_MS, SPS_STRAGGLER_REL * s->step_ms);
    double pct = s->step_ms > 0 ? 100.0 : 0.0;
    if (!top || !(top->excess_ms > floor_ms))
        snprintf(buf, len, "none: ranks within %.1f ms of each other's compute a step (%.0f%% of a %.1f ms step); %zu "
                 "ranks, %s", s->spread_ms, pct * s->spread_ms / (s->step_ms > 0 ? s->step_ms : 1.0), s->step_ms,
                 s->nranks, windows);
    else
        snprintf(buf, len, "none: rank %d%s computes %.1f ms a step more than the others (%.0f%% of a %.1f ms step) "
                 "but is named in only %.0f%% of windows, not steadily; %zu ranks, %s", top->rank,
                 host_part(top, host, sizeof host), top->excess_ms,
                 pct * top->excess_ms / (s->step_ms > 0 ? s->step_ms : 1.0), s->step_ms, top->share * 100.0,
                 s->nranks, windows);
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
        none_text(s, buf, len);
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
          "waiting in collectives; a rank is named in a window of steps when its compute less the other ranks' "
          "median, averaged over the window (what the others wait for it), is above a threshold both absolute and "
          "relative to how much balanced ranks differ, and the others waited longer than it did."
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
        fprintf(out,
                "<p class=\"what\">Means (step: median) over %llu steps every rank completed, in %zu windows of %u "
                "steps.</p>\n",
                (unsigned long long)s->steps_judged, s->nwindows, s->window_steps);
    }
    fputs("</section>\n", out);
}
