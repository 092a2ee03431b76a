/*
 * summary.c - the terminal summary `stepscope run` prints when the workload
 * ends: how it ended, wall/user/sys time, peak RSS, then one row per zone
 * sorted by total time (steps first: they frame everything else).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/merge_view.h"
#include "render/auto_mode.h"
#include "render/render.h"
#include "stepscope.h"

/* A value's line.  One whose name ends in "_bytes" (torch.cuda.allocated_bytes,
 * a MemoryTracker's peaks) is a size: printed as one, not as 1.08486e+09. */
static void summary_value(FILE *f, const struct sps_name_summary *n) {
    size_t len = strlen(n->name);
    const char *plural = n->agg.count == 1 ? "" : "s";
    if (len > 6 && !strcmp(n->name + len - 6, "_bytes")) {
        char a[32], b[32], c[32], d[32];
        fprintf(f, "value   %-16s first %s  last %s  min %s  max %s  (%llu sample%s)\n", n->name,
                sps__fmt_bytes(n->agg.first, a, sizeof a), sps__fmt_bytes(n->agg.last, b, sizeof b),
                sps__fmt_bytes(n->agg.min, c, sizeof c), sps__fmt_bytes(n->agg.max, d, sizeof d),
                (unsigned long long)n->agg.count, plural);
        return;
    }
    fprintf(f, "value   %-16s first %.6g  last %.6g  min %.6g  max %.6g  (%llu sample%s)\n", n->name, n->agg.first,
            n->agg.last, n->agg.min, n->agg.max, (unsigned long long)n->agg.count, plural);
}

static const char *kind_label(uint32_t kind) {
    return kind == SPS_KIND_STEP        ? "step"
           : kind == SPS_KIND_MICROSTEP ? "microstep"
           : kind == SPS_KIND_WAIT      ? "wait"
                                        : "zone";
}

void sps__summary_print(FILE *f, const struct sps_report *rep, int width) {
    const struct sps_run *run = &rep->run;
    const struct sps_run_info *info = &rep->info;
    char a[32], b[32], c[32], d[32];
    (void)width;
    /* a report rebuilt from the records knows none of these (its own line
     * below says so), nor does one merged from runs without report.json:
     * no line for them then */
    int known = info->have_exit || info->have_times || info->have_rss;
    fprintf(f, known ? "\nstepscope: " : "\n");
    const char *sep = ""; /* two spaces between the parts, none before the first (a standalone run has no exit) */
    if (info->have_exit) {
        if (info->exit_signal)
            fprintf(f, "killed by %s%s", sps__signal_name(info->exit_signal, a, sizeof a),
                    info->core_dumped ? " (core dumped)" : "");
        else
            fprintf(f, "exit %d", info->exit_code);
        sep = "  ";
    }
    if (info->have_times) {
        fprintf(f, "%swall %s  user %s  sys %s", sep, sps__fmt_seconds(info->wall_s, a, sizeof a),
                sps__fmt_seconds(info->user_s, b, sizeof b), sps__fmt_seconds(info->sys_s, c, sizeof c));
        sep = "  ";
    }
    if (info->have_rss)
        fprintf(f, "%speak RSS %s", sep, sps__fmt_bytes((double)info->peak_rss_bytes, d, sizeof d));
    if (known)
        fputc('\n', f);
    if (info->rebuilt_reason) {
        const char *parts[16];
        size_t n = sps__report_missing(info, parts, sizeof parts / sizeof parts[0]);
        fprintf(f, "stepscope: rebuilt from the records alone (%s); not known: ", info->rebuilt_reason);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%s", i ? "; " : "", parts[i]);
        fputc('\n', f);
    }
    sps__summary_metrics(f, info);
    char mode[SPS_REC_AUTO_REASON_LEN + 128];
    if (sps__auto_sentence(rep, mode, sizeof mode))
        fprintf(f, "%s\n", mode);
    sps__merge_summary_print(f, run);

    /* a name whose every zone was taken back (the auto-instrumentation's
     * steps of a run that never stepped an optimizer) has no row */
    size_t zones = 0;
    for (size_t i = 0; i < run->nnames; i++)
        zones += sps_kind_is_timed(run->names[i].kind) && run->names[i].stats.count;
    if (run->nprocs == 0) {
        fprintf(f, "stepscope: nothing was recorded (the command does not use libstepscope or the stepscope module)\n");
    } else if (zones) {
        sps__summary_pooled_note(f, rep);
        fprintf(f, "%-24s %-9s %9s %10s %10s %10s %10s %10s %6s\n", "zone", "kind", "count", "total", "self", "mean",
                "p50", "p99", "%wall");
        for (size_t i = 0; i < run->nnames; i++) {
            const struct sps_name_summary *n = &run->names[i];
            if (!sps_kind_is_timed(n->kind) || !n->stats.count)
                continue;
            char t[32], s[32], m[32], p50[32], p99[32], share[16] = "-";
            if (info->have_times && info->wall_s > 0)
                snprintf(share, sizeof share, "%.1f", 100.0 * n->stats.total_s / info->wall_s);
            fprintf(f, "%-24.24s %-9s %9llu %10s %10s %10s %10s %10s %6s\n", n->name, kind_label(n->kind),
                    (unsigned long long)n->stats.count, sps__fmt_seconds(n->stats.total_s, t, sizeof t),
                    sps__fmt_seconds(n->stats.self_s, s, sizeof s), sps__fmt_seconds(n->stats.mean_s, m, sizeof m),
                    sps__fmt_seconds(n->stats.p50_s, p50, sizeof p50),
                    sps__fmt_seconds(n->stats.p99_s, p99, sizeof p99), share);
        }
    }
    sps__summary_ranks(f, rep);
    for (size_t i = 0; i < run->nnames; i++) {
        const struct sps_name_summary *n = &run->names[i];
        if (n->kind == SPS_KIND_VALUE && n->agg.count)
            summary_value(f, n);
        else if (n->kind == SPS_KIND_COUNTER)
            fprintf(f, "counter %-16s total %llu\n", n->name, (unsigned long long)n->agg.total_ns);
    }
    struct sps_run_cuda cuda;
    sps__run_cuda(run, &cuda);
    if (cuda.processes) {
        /* whether GPU zones timed the GPU at all, next to the .gpu_ms values */
        fprintf(f, "gpu zones  %s: %llu timed on the GPU, %llu CPU only, %llu dropped, %llu unresolved%s%s\n",
                cuda.available ? "libcuda available" : "libcuda unavailable", (unsigned long long)cuda.resolved,
                (unsigned long long)cuda.cpu_only, (unsigned long long)cuda.dropped,
                (unsigned long long)cuda.unresolved, cuda.reason ? "; " : "", cuda.reason ? cuda.reason : "");
    }
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        for (uint32_t ti = 0; ti < p->nthreads; ti++) {
            const struct sps_thread_data *t = &p->threads[ti];
            if (t->nopen) {
                fprintf(f, "open at the end: pid %d tid %d:", p->pid, t->tid);
                for (uint32_t k = 0; k < t->nopen; k++)
                    fprintf(f, " %s%s", k ? "> " : "", p->names[t->open[k].name - 1].name);
                fputc('\n', f);
            }
        }
    }
    if (run->events_dropped)
        fprintf(f, "note: %llu of %llu events were not kept by full rings (aggregates stay exact)\n",
                (unsigned long long)run->events_dropped, (unsigned long long)run->events_recorded);
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        if (p->threads_refused || p->names_refused)
            fprintf(f, "warning: pid %d: %llu thread(s) and %llu name(s) not recorded: %s\n", p->pid,
                    (unsigned long long)p->threads_refused, (unsigned long long)p->names_refused,
                    p->problem[0] ? p->problem : "the record was full");
    }
    sps__summary_torch(f, run);
    char running[512];
    if (sps__report_running_text(rep, NULL, running, sizeof running))
        fprintf(f, "warning: %s\n", running);
    char skipped[1200];
    if (sps__report_skipped_text(rep, skipped, sizeof skipped))
        fprintf(f, "warning: %s%s\n", skipped,
                run->nskipped > 1 ? " (report.json's records_skipped lists each)" : "");
}
