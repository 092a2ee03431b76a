/*
 * analysis_torch_memory.c - torch.cuda's allocator memory over the run for
 * a person: one line under the terminal summary (report.html shows the
 * same line over its chart, html_torch_memory.c).
 */
#include <math.h>
#include <stdio.h>

#include "analysis/torch_memory.h"
#include "render/analysis_views.h"
#include "render/html_units.h"

int sps__torch_memory_text(const struct sps_torch_memory *t, char *buf, size_t len) {
    if (!t->present)
        return 0;
    char pa[32] = "unknown", pr[32] = "unknown", ea[32] = "unknown", er[32] = "unknown", growth[96] = "";
    if (isfinite(t->peak_allocated_bytes))
        html_fmt_bytes(pa, sizeof pa, t->peak_allocated_bytes);
    if (isfinite(t->peak_reserved_bytes))
        html_fmt_bytes(pr, sizeof pr, t->peak_reserved_bytes);
    if (isfinite(t->end_allocated_bytes))
        html_fmt_bytes(ea, sizeof ea, t->end_allocated_bytes);
    if (isfinite(t->end_reserved_bytes))
        html_fmt_bytes(er, sizeof er, t->end_reserved_bytes);
    if (isfinite(t->growth_bytes_per_step)) {
        char g[32];
        double mag = fabs(t->growth_bytes_per_step);
        html_fmt_bytes(g, sizeof g, mag);
        snprintf(growth, sizeof growth, "; growth %s%s/step (%s)", t->growth_bytes_per_step < 0 ? "-" : "", g,
                 sps__leak_verdict_name(t->verdict));
    } else {
        snprintf(growth, sizeof growth, "; growth per step not judged (see leaks)");
    }
    char who[96] = "";
    if (t->processes > 1) /* each process has its own GPU memory: say whose this is */
        snprintf(who, sizeof who, "pid %d (of %zu processes that read it; leaks judges each): ", t->pid,
                 t->processes);
    snprintf(buf, len,
             "%speak %s allocated, %s reserved; at the end %s allocated, %s reserved%s; peak within the step known "
             "for %zu of %zu steps",
             who, pa, pr, ea, er, growth, t->peak_known, t->steps_read);
    return 1;
}

void sps__analysis_torch_memory_print(FILE *f, const struct sps_torch_memory *t) {
    char line[512];
    if (!sps__torch_memory_text(t, line, sizeof line))
        return;
    sps__analysis_label(f, "torch.cuda");
    fprintf(f, "%s\n", line);
}
