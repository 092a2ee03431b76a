/*
 * summary_torch.c - the deep-capture window (`stepscope run --torch-profile`)
 * in the terminal summary: one line per process, from the model's
 * captures (torch_ops.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/torch_ops.h"
#include "render/render.h"
/* "steps 3-4 (3:5)", "step 7 (auto, after step 6 at 4.2x the median)". */
void sps__torch_window_label(char *buf, size_t len, const struct sps_torch_capture *c) {
    int n = c->end_step - c->first_step > 1
                ? snprintf(buf, len, "steps %llu-%llu", (unsigned long long)c->first_step,
                           (unsigned long long)c->end_step - 1)
                : snprintf(buf, len, "step %llu", (unsigned long long)c->first_step);
    if (n < 0 || (size_t)n >= len)
        return;
    if (c->have_trigger)
        snprintf(buf + n, len - (size_t)n, " (auto: step %llu took %.1fx the median)",
                 (unsigned long long)c->trigger_step, c->trigger_ratio);
    else
        snprintf(buf + n, len - (size_t)n, " (%s)", c->spec);
}

void sps__summary_torch(FILE *f, const struct sps_run *run) {
    for (size_t i = 0; i < run->ntorch; i++) {
        const struct sps_torch_capture *c = &run->torch[i];
        if (c->unavailable) {
            fprintf(f, "torch profile  pid %d (%s): not captured: %s\n", c->pid, c->spec, c->unavailable);
            continue;
        }
        char win[128], a[32], b[32], x[32];
        sps__torch_window_label(win, sizeof win, c);
        fprintf(f, "torch profile  pid %d %s: %llu ops", c->pid, win,
                (unsigned long long)(c->cpu_ops + c->gpu_ops));
        if (c->ntops)
            fprintf(f, ", top %s %s in %s", c->tops[0].op, sps__fmt_seconds(c->tops[0].self_s, a, sizeof a),
                    c->tops[0].zone ? c->tops[0].zone : "no zone");
        if (isfinite(c->window_step_mean_s) && isfinite(c->other_step_median_s) && c->other_step_median_s > 0)
            fprintf(f, "; steps %s against %s (%.2fx)", sps__fmt_seconds(c->window_step_mean_s, a, sizeof a),
                    sps__fmt_seconds(c->other_step_median_s, b, sizeof b),
                    c->window_step_mean_s / c->other_step_median_s);
        fprintf(f, ", export %s%s%s\n", sps__fmt_seconds(c->export_cost_ns * 1e-9, x, sizeof x),
                c->short_note ? "; " : "", c->short_note ? c->short_note : "");
    }
}

