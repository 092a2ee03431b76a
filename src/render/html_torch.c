/*
 * html_torch.c - report.html's section on the deep-capture window
 * (`stepscope run --torch-profile`): per process the window, its cost,
 * and per stepscope zone the operators with the most self time, from the
 * model's captures (torch_ops.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/torch_ops.h"
#include "render/html_units.h"
#include "render/render.h"
#include "render/svg_chart.h"

static void html_cost(FILE *out, const struct sps_torch_capture *c) {
    char a[48], b[48], s[48], e[48];
    fprintf(out, "<p class=\"what\">pid %d: ", c->pid);
    if (isfinite(c->window_step_mean_s))
        fprintf(out, "the window's steps took %s on average", html_fmt_duration(a, sizeof a, c->window_step_mean_s));
    if (isfinite(c->window_step_mean_s) && isfinite(c->other_step_median_s) && c->other_step_median_s > 0)
        fprintf(out, " against %s for the other steps (median, %.2fx)",
                html_fmt_duration(b, sizeof b, c->other_step_median_s),
                c->window_step_mean_s / c->other_step_median_s);
    fprintf(out, "; starting the profiler took %s, stopping it %s and exporting %s (all outside the steps). "
                 "Operator times are aligned to stepscope's clock within &plusmn;%s.",
            html_fmt_duration(s, sizeof s, c->start_cost_ns * 1e-9), html_fmt_duration(e, sizeof e, c->stop_cost_ns * 1e-9),
            html_fmt_duration(a, sizeof a, c->export_cost_ns * 1e-9),
            html_fmt_duration(b, sizeof b, c->align_error_ns * 1e-9));
    if (c->short_note) {
        fputs(" ", out);
        svg_write_escaped(out, c->short_note);
        fputc('.', out);
    }
    fputs("</p>\n", out);
}

static void html_capture(FILE *out, const struct sps_torch_capture *c) {
    char win[128], d[48];
    if (c->unavailable) {
        fprintf(out, "<p class=\"note\">pid %d (", c->pid);
        svg_write_escaped(out, c->spec);
        fputs("): not captured: ", out);
        svg_write_escaped(out, c->unavailable);
        fputs("</p>\n", out);
        return;
    }
    sps__torch_window_label(win, sizeof win, c);
    fprintf(out, "<h3>pid %d, ", c->pid);
    svg_write_escaped(out, win);
    fprintf(out, ": %llu operators%s</h3>\n", (unsigned long long)c->cpu_ops,
            c->gpu_ops ? " and device kernels" : "");
    html_cost(out, c);
    if (!c->ntops) {
        fputs("<p class=\"empty\">No operator ran in the window.</p>\n", out);
        return;
    }
    fputs("<table>\n<thead><tr><th>zone</th><th>operator</th><th>count</th><th>self</th></tr></thead>\n<tbody>\n",
          out);
    for (size_t k = 0; k < c->ntops; k++) {
        const struct sps_torch_top *t = &c->tops[k];
        int first = k == 0 || (t->zone ? !c->tops[k - 1].zone || strcmp(t->zone, c->tops[k - 1].zone)
                                       : c->tops[k - 1].zone != NULL);
        fputs("<tr><td>", out);
        if (first)
            svg_write_escaped(out, t->zone ? t->zone : "(no zone)");
        fputs("</td><td>", out);
        svg_write_escaped(out, t->op);
        fprintf(out, "</td><td class=\"num\">%llu</td><td class=\"num\">%s</td></tr>\n", (unsigned long long)t->count,
                html_fmt_duration(d, sizeof d, t->self_s));
    }
    fputs("</tbody>\n</table>\n", out);
}

void sps__html_torch(FILE *out, const struct sps_run *run) {
    if (!run->ntorch)
        return;
    fprintf(out, "<section id=\"torch-profile\">\n<h2>torch.profiler window</h2>\n<p class=\"what\">The steps "
                 "<code>--torch-profile</code> captured with torch.profiler: per stepscope zone (the innermost zone "
                 "of the operator's thread that holds it), the %d operators with the most self CPU time in the "
                 "window. The operators are in trace.json, inside the zones.</p>\n",
            SPS_TORCH_TOP_PER_ZONE);
    for (size_t i = 0; i < run->ntorch; i++)
        html_capture(out, &run->torch[i]);
    fputs("</section>\n", out);
}
