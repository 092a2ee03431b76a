/*
 * summary_metrics.c - the terminal summary's machine lines: the peaks and
 * means a user looks for first (the tree's peak PSS, its RSS sum and the
 * largest process, CPU %, time spent waiting for a CPU, GPU memory,
 * utilisation, temperature, power).  Anything unavailable says so in a word and points
 * at `stepscope doctor`, which says why.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render.h"
#include "sampler/sampler.h"

static double mean_of(const struct sps__series *s) {
    return s->n ? s->sum / (double)s->n : NAN;
}

/* The tree process whose RSS peaked highest; NULL unless two or more
 * have a series (one process is the tree itself). */
static const struct sps__process_series *largest_process(const struct sps__sampler_result *r) {
    const struct sps__process_series *best = NULL;
    int with_series = 0;
    for (int k = 0; k < r->nprocesses; k++) {
        const struct sps__process_series *p = &r->process[k];
        if (!p->rss_bytes.n)
            continue;
        with_series++;
        if (!best || p->rss_bytes.max > best->rss_bytes.max)
            best = p;
    }
    return with_series > 1 ? best : NULL;
}

/* "waiting for a CPU: ..." when the sched source read anything: how much
 * of a core the workload spent runnable but not running, and the
 * machine's CPU pressure.  Left out (with no line) otherwise. */
static void summary_cpu_wait(FILE *f, const struct sps__series *h) {
    const struct sps__series *delay = &h[SPS_M_WORKLOAD_RUN_DELAY_PERCENT], *psi = &h[SPS_M_CPU_PRESSURE_SOME_PERCENT];
    if (!delay->n && !psi->n)
        return;
    fprintf(f, "          waiting for a CPU:");
    if (delay->n)
        fprintf(f, " the workload %.0f%% of a core mean / %.0f%% max (run delay)", mean_of(delay), delay->max);
    if (psi->n)
        fprintf(f, "%s CPU pressure %.0f%% mean (some task waiting)", delay->n ? "," : "", mean_of(psi));
    fputc('\n', f);
}

void sps__summary_metrics(FILE *f, const struct sps_run_info *info) {
    const struct sps__sampler_result *r = info->sampler;
    if (!r)
        return;
    char a[32], b[32], c[32];
    const struct sps__series *h = r->host;

    if (h[SPS_M_WORKLOAD_RSS_PEAK_BYTES].n) {
        /* the tree's memory is PSS (shared pages once); the RSS sum counts
         * every page once per process that maps it, so it is named apart */
        if (!(h[SPS_M_WORKLOAD_RSS_PEAK_BYTES].max > 0)) /* read only after the tree had gone */
            fprintf(f, "machine   workload: memory unknown (the command ended before a reading)");
        else if (sps__tree_memory_peak_metric(r) == SPS_M_WORKLOAD_PSS_PEAK_BYTES)
            fprintf(f, "machine   workload: peak PSS %s (peak RSS %s summed over processes)",
                    sps__fmt_bytes(h[SPS_M_WORKLOAD_PSS_PEAK_BYTES].max, a, sizeof a),
                    sps__fmt_bytes(h[SPS_M_WORKLOAD_RSS_PEAK_BYTES].max, b, sizeof b));
        else
            fprintf(f, "machine   workload: peak RSS %s summed over processes (%s)",
                    sps__fmt_bytes(h[SPS_M_WORKLOAD_RSS_PEAK_BYTES].max, a, sizeof a),
                    h[SPS_M_WORKLOAD_PSS_BYTES].n ? "PSS last read before the tree grew" : "no PSS reading");
        if (h[SPS_M_WORKLOAD_CPU_PERCENT].n)
            fprintf(f, ", CPU %.0f%% mean / %.0f%% max (100%% = one core)", mean_of(&h[SPS_M_WORKLOAD_CPU_PERCENT]),
                    h[SPS_M_WORKLOAD_CPU_PERCENT].max);
        if (h[SPS_M_WORKLOAD_PROCESSES].n && h[SPS_M_WORKLOAD_PROCESSES].max > 1)
            fprintf(f, ", up to %.0f processes", h[SPS_M_WORKLOAD_PROCESSES].max);
        const struct sps__process_series *big = largest_process(r);
        if (big)
            fprintf(f, " (the largest pid %d %s, %s RSS at peak)", big->pid, big->comm[0] ? big->comm : "?",
                    sps__fmt_bytes(big->rss_bytes.max, b, sizeof b));
        fputc('\n', f);
    } else {
        fprintf(f, "machine   workload: no process-tree readings (see stepscope doctor)\n");
    }
    if (h[SPS_M_SYSTEM_MEMORY_USED_BYTES].n) {
        fprintf(f, "          system: memory %s used at peak of %s", sps__fmt_bytes(h[SPS_M_SYSTEM_MEMORY_USED_BYTES].max, a, sizeof a),
                sps__fmt_bytes(h[SPS_M_SYSTEM_MEMORY_TOTAL_BYTES].last, b, sizeof b));
        if (h[SPS_M_SYSTEM_CPU_PERCENT].n)
            fprintf(f, ", CPU %.0f%% mean of all cores", mean_of(&h[SPS_M_SYSTEM_CPU_PERCENT]));
        if (h[SPS_M_SYSTEM_IOWAIT_PERCENT].n && h[SPS_M_SYSTEM_IOWAIT_PERCENT].max >= 1)
            fprintf(f, ", iowait %.0f%% max", h[SPS_M_SYSTEM_IOWAIT_PERCENT].max);
        if (h[SPS_M_SYSTEM_SWAP_USED_BYTES].n && h[SPS_M_SYSTEM_SWAP_USED_BYTES].max > 0)
            fprintf(f, ", swap %s max", sps__fmt_bytes(h[SPS_M_SYSTEM_SWAP_USED_BYTES].max, c, sizeof c));
        fputc('\n', f);
    }
    summary_cpu_wait(f, h);
    if (h[SPS_M_CPU_TEMPERATURE_CELSIUS].n)
        fprintf(f, "          CPU temperature %.0f C mean / %.0f C max", mean_of(&h[SPS_M_CPU_TEMPERATURE_CELSIUS]),
                h[SPS_M_CPU_TEMPERATURE_CELSIUS].max);
    else
        fprintf(f, "          CPU temperature unavailable");
    if (h[SPS_M_CPU_PACKAGE_POWER_WATTS].n)
        fprintf(f, ", CPU package %.0f W mean / %.0f W max", mean_of(&h[SPS_M_CPU_PACKAGE_POWER_WATTS]),
                h[SPS_M_CPU_PACKAGE_POWER_WATTS].max);
    else
        fprintf(f, ", CPU power unavailable");
    fputc('\n', f);

    if (r->ngpus == 0)
        fprintf(f, "GPUs      none found (see stepscope doctor)\n");
    for (int g = 0; g < r->ngpus; g++) {
        const struct sps__gpu_series *gs = &r->gpu[g];
        const struct sps__series *m = gs->m;
        fprintf(f, "GPU %-5d %s:", gs->index, gs->name[0] ? gs->name : "GPU");
        if (m[SPS_M_GPU_MEMORY_USED_BYTES].n)
            fprintf(f, " memory %s peak", sps__fmt_bytes(m[SPS_M_GPU_MEMORY_USED_BYTES].max, a, sizeof a));
        if (m[SPS_M_GPU_MEMORY_TOTAL_BYTES].n)
            fprintf(f, " of %s", sps__fmt_bytes(m[SPS_M_GPU_MEMORY_TOTAL_BYTES].last, b, sizeof b));
        if (m[SPS_M_GPU_UTILIZATION_PERCENT].n)
            fprintf(f, ", util %.0f%% mean / %.0f%% max", mean_of(&m[SPS_M_GPU_UTILIZATION_PERCENT]),
                    m[SPS_M_GPU_UTILIZATION_PERCENT].max);
        if (m[SPS_M_GPU_TEMPERATURE_CELSIUS].n)
            fprintf(f, ", %.0f C max", m[SPS_M_GPU_TEMPERATURE_CELSIUS].max);
        if (m[SPS_M_GPU_POWER_WATTS].n)
            fprintf(f, ", %.0f W mean / %.0f W max", mean_of(&m[SPS_M_GPU_POWER_WATTS]), m[SPS_M_GPU_POWER_WATTS].max);
        fputc('\n', f);
    }
}
