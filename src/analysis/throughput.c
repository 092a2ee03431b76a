/*
 * throughput.c - counters as rates, FLOP/s and MFU (see throughput.h; the
 * method and the peak table's sources are in docs/analysis.md,
 * "Throughput and efficiency").
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/throughput.h"
#include "model/run_info.h"
#include "model/run.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "stats.h"

/*
 * Dense (no structured sparsity) tensor-core peaks, in the precision ML
 * training runs in on each part; docs/analysis.md cites the datasheet of
 * each row.  Order matters: the first row whose key occurs in the name as
 * a whole word wins, so variants come before their family, and a variant
 * whose peak differs but is not listed has a row with NAN (unknown) rather
 * than inheriting its family's peak.
 */
static const struct gpu_peak {
    const char *key;
    double flops;
    const char *what;
} gpu_peaks[] = {
    {"H100 PCIe", 756e12, "H100 PCIe, dense BF16/FP16 tensor"},
    {"H100 NVL", NAN, NULL},
    {"H100 80GB HBM3", 989e12, "H100 SXM, dense BF16/FP16 tensor"},
    {"H100 SXM", 989e12, "H100 SXM, dense BF16/FP16 tensor"},
    {"H200 NVL", NAN, NULL},
    {"H200", 989e12, "H200 SXM, dense BF16/FP16 tensor"},
    {"A100", 312e12, "A100, dense BF16/FP16 tensor"},
    {"A10", 125e12, "A10, dense BF16/FP16 tensor"},
    {"L4", 121e12, "L4, dense BF16/FP16 tensor"},
    {"V100S", 130e12, "V100S PCIe, FP16 tensor"},
    {"V100-PCIE", 112e12, "V100 PCIe, FP16 tensor"},
    {"V100", 125e12, "V100 SXM2, FP16 tensor"},
    {"T4", 65e12, "T4, FP16 tensor (FP32 accumulate)"},
    {"RTX 4090", 165.2e12, "GeForce RTX 4090, dense FP16 tensor with FP32 accumulate"},
};

/* Does key occur in name with no letter or digit right before or after
 * it ("A10" is not in "A100" nor in "A10G")?  Case-sensitive, as the
 * driver spells names one way. */
static int has_word(const char *name, const char *key) {
    size_t klen = strlen(key);
    for (const char *p = strstr(name, key); p; p = strstr(p + 1, key)) {
        int before_ok = p == name || !isalnum((unsigned char)p[-1]);
        int after_ok = !isalnum((unsigned char)p[klen]);
        if (before_ok && after_ok)
            return 1;
    }
    return 0;
}

double sps__gpu_peak_flops(const char *gpu_name, const char **what) {
    *what = NULL;
    if (!gpu_name)
        return NAN;
    for (size_t i = 0; i < sizeof gpu_peaks / sizeof gpu_peaks[0]; i++) {
        if (has_word(gpu_name, gpu_peaks[i].key)) {
            *what = gpu_peaks[i].what;
            return gpu_peaks[i].flops;
        }
    }
    return NAN;
}

/*
 * Counters stepscope records about itself rather than the workload's work:
 * auto-instrumentation's count of backward calls whose loss stayed on the
 * GPU (python/stepscope/_auto.py, LOSS_ON_DEVICE), the GPU zones' fates
 * (src/gpu/cuda_zone.c: cuda.gpu_zones_cpu_only, _dropped, _unresolved)
 * and anything in the "stepscope." namespace (its own probes).  They stay
 * in the report's counters, but a rate of them is no throughput ("421
 * loss.on_device/s").
 */
static int diagnostic_counter(const char *name) {
    static const char *const own[] = {"loss.on_device"};
    static const char *const own_prefixes[] = {"stepscope.", "cuda.gpu_zones_"};
    for (size_t i = 0; i < sizeof own_prefixes / sizeof own_prefixes[0]; i++)
        if (strncmp(name, own_prefixes[i], strlen(own_prefixes[i])) == 0)
            return 1;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(name, own[i]) == 0)
            return 1;
    return 0;
}

static int names_flops(const char *name) {
    for (const char *p = name; *p; p++)
        if (tolower((unsigned char)p[0]) == 'f' && tolower((unsigned char)p[1]) == 'l' &&
            tolower((unsigned char)p[2]) == 'o' && tolower((unsigned char)p[3]) == 'p')
            return 1;
    return 0;
}

/* One counter over the step rows.  A thread's rows are contiguous (run.h);
 * a thread whose steps never saw the counter is not one that counts it,
 * and in one that does, a step without it counted nothing (0).  Threads
 * and processes step side by side (data-parallel ranks), so the run's rate
 * adds up each thread's rate. */
static void counter_rates(const struct sps_run *run, long c, double *rates, struct sps_throughput_counter *out) {
    size_t nrates = 0;
    out->per_second = 0.0;
    for (size_t b = 0; b < run->nsteps;) {
        size_t e = b + 1;
        while (e < run->nsteps && run->steps[e].process == run->steps[b].process &&
               run->steps[e].tid == run->steps[b].tid)
            e++;
        int present = 0;
        for (size_t i = b; i < e && !present; i++)
            present = !isnan(run->steps[i].by_name[c]);
        double counted = 0.0, seconds = 0.0;
        for (size_t i = b; present && i < e; i++) {
            const struct sps_step_row *row = &run->steps[i];
            double dur = (double)(row->end_ns - row->start_ns) * 1e-9;
            if (row->warmup || !(dur > 0.0))
                continue;
            double n = isnan(row->by_name[c]) ? 0.0 : row->by_name[c];
            counted += n;
            seconds += dur;
            rates[nrates++] = n / dur;
        }
        out->in_a_step |= present;
        if (present && seconds > 0.0) {
            out->threads++;
            out->in_steps += counted;
            out->step_seconds += seconds;
            out->per_second += counted / seconds;
        }
        b = e;
    }
    out->steps = nrates;
    if (nrates == 0) {
        out->per_second = out->step_rate_mean = out->step_rate_median = NAN;
        out->step_rate_min = out->step_rate_max = NAN;
        return;
    }
    qsort(rates, nrates, sizeof *rates, sps__cmp_double);
    double sum = 0.0;
    for (size_t i = 0; i < nrates; i++)
        sum += rates[i];
    out->step_rate_mean = sum / (double)nrates;
    out->step_rate_median =
        nrates % 2 ? rates[nrates / 2] : (rates[nrates / 2 - 1] + rates[nrates / 2]) / 2.0;
    out->step_rate_min = rates[0];
    out->step_rate_max = rates[nrates - 1];
}

/* The GPUs the workload used: those it held memory on when the sampler
 * could tell, else every GPU the sampler saw (it honours
 * CUDA_VISIBLE_DEVICES). */
static int gpu_used(const struct sps__sampler_result *r, int g) {
    int any_told = 0, any_used = 0;
    for (int k = 0; k < r->ngpus; k++) {
        const struct sps__series *m = &r->gpu[k].m[SPS_M_GPU_WORKLOAD_MEMORY_BYTES];
        any_told |= m->n > 0;
        any_used |= m->n > 0 && m->max > 0;
    }
    if (!any_told || !any_used)
        return 1;
    const struct sps__series *m = &r->gpu[g].m[SPS_M_GPU_WORKLOAD_MEMORY_BYTES];
    return m->n > 0 && m->max > 0;
}

static void mfu(const struct sps_run_info *info, const struct sps_analysis_config *cfg, struct sps_throughput *out) {
    out->mfu = NAN;
    out->peak_flops_total = NAN;
    const struct sps__sampler_result *r = info ? info->sampler : NULL;
    int ngpus = r ? r->ngpus : 0;
    int used = 0;
    for (int g = 0; g < ngpus; g++)
        used += gpu_used(r, g);
    if (cfg && isfinite(cfg->peak_flops)) {
        out->gpus = used;
        out->peak_flops_total = cfg->peak_flops * (used ? used : 1);
        if (used)
            snprintf(out->peak_from, sizeof out->peak_from, "--peak-flops %.4g per GPU x %d GPU%s", cfg->peak_flops,
                     used, used == 1 ? "" : "s");
        else
            snprintf(out->peak_from, sizeof out->peak_from, "--peak-flops %.4g for the machine (no GPU was seen)",
                     cfg->peak_flops);
    } else if (used == 0) {
        snprintf(out->mfu_reason, sizeof out->mfu_reason,
                 "no GPU was seen and the CPU's peak is not known; pass --peak-flops");
        return;
    } else {
        double total = 0.0;
        const char *first_what = NULL;
        int same = 1;
        for (int g = 0; g < ngpus; g++) {
            if (!gpu_used(r, g))
                continue;
            const char *what;
            double peak = sps__gpu_peak_flops(r->gpu[g].name, &what);
            if (isnan(peak)) {
                snprintf(out->mfu_reason, sizeof out->mfu_reason, "peak unknown for GPU '%s'; pass --peak-flops",
                         r->gpu[g].name);
                return;
            }
            if (first_what && strcmp(first_what, what))
                same = 0;
            if (!first_what)
                first_what = what;
            total += peak;
        }
        out->gpus = used;
        out->peak_flops_total = total;
        snprintf(out->peak_from, sizeof out->peak_from, "table: %s x %d GPU%s", same ? first_what : "mixed GPUs",
                 used, used == 1 ? "" : "s");
    }
    if (isnan(out->flops_per_second)) {
        snprintf(out->mfu_reason, sizeof out->mfu_reason, "%s", out->flops_reason);
        return;
    }
    out->mfu = out->flops_per_second / out->peak_flops_total;
}

int sps__throughput_analyze(const struct sps_run *run, const struct sps_run_info *info,
                            const struct sps_analysis_config *cfg, struct sps_throughput *out) {
    memset(out, 0, sizeof *out);
    out->flops = -1;
    out->flops_per_second = NAN;
    out->mfu = NAN;
    out->peak_flops_total = NAN;
    int rc = 0;
    size_t ncounters = 0, ndiagnostic = 0;
    const char *a_diagnostic = NULL;
    for (size_t i = 0; run && i < run->nnames; i++) {
        if (run->names[i].kind != SPS_KIND_COUNTER)
            continue;
        if (diagnostic_counter(run->names[i].name)) {
            ndiagnostic++;
            a_diagnostic = run->names[i].name;
        } else {
            ncounters++;
        }
    }
    for (size_t i = 0; run && i < run->nsteps; i++)
        out->warmup_steps += run->steps[i].warmup != 0;
    /* the hints in the run's language (the bottleneck's advice decides it the same way) */
    enum sps_bn_face face = sps__bn_face_of(run, info ? info->argc : 0, info ? info->argv : NULL);
    const char *count = face == SPS_BN_FACE_PYTHON ? "stepscope.count"
                        : face == SPS_BN_FACE_C    ? "SPS_COUNT"
                                                   : "SPS_COUNT in C, stepscope.count in Python";
    if (ncounters == 0 && ndiagnostic > 0) {
        snprintf(out->reason, sizeof out->reason,
                 "the run counted no work, only stepscope's own %s (count work with %s)", a_diagnostic, count);
    } else if (ncounters == 0) {
        snprintf(out->reason, sizeof out->reason, "the run recorded no counter (count work with %s)", count);
    } else if (run->nsteps == 0) {
        snprintf(out->reason, sizeof out->reason, "the run recorded no steps to divide the counts by");
    } else {
        double *rates = malloc(run->nsteps * sizeof *rates);
        out->counters = calloc(ncounters, sizeof *out->counters);
        if (!rates || !out->counters) {
            free(out->counters);
            out->counters = NULL;
            rc = SPS_ENOMEM;
            snprintf(out->reason, sizeof out->reason, "out of memory");
        }
        for (size_t i = 0; !rc && i < run->nnames; i++) {
            const struct sps_name_summary *n = &run->names[i];
            if (n->kind != SPS_KIND_COUNTER || diagnostic_counter(n->name))
                continue;
            struct sps_throughput_counter *tc = &out->counters[out->ncounters++];
            snprintf(tc->name, sizeof tc->name, "%s", n->name);
            tc->total = (double)n->agg.total_ns; /* a counter's sum (stats.h) */
            tc->is_flops = names_flops(n->name);
            counter_rates(run, (long)i, rates, tc);
            if (tc->is_flops && out->flops < 0 && !isnan(tc->per_second))
                out->flops = (long)(out->ncounters - 1);
        }
        free(rates);
    }
    if (out->flops >= 0)
        out->flops_per_second = out->counters[out->flops].per_second;
    else
        snprintf(out->flops_reason, sizeof out->flops_reason,
                 "no FLOP counter inside the steps (count FLOPs with %s)",
                 face == SPS_BN_FACE_PYTHON ? "stepscope.count(\"flops\", n)"
                 : face == SPS_BN_FACE_C    ? "SPS_COUNT(\"flops\", n)"
                                            : "SPS_COUNT(\"flops\", n) in C, stepscope.count(\"flops\", n) in Python");
    mfu(info, cfg, out);
    return rc;
}

const char *sps__throughput_counter_why(const struct sps_throughput_counter *c) {
    if (c->steps > 0)
        return NULL;
    if (c->in_a_step)
        return "only warm-up steps (or steps of no duration) counted it";
    return "no step owns any of its counts: they came before the first step, or from a thread or process "
           "with no step of its own to join (see \"How a step owns events\" in docs/report-format.md)";
}

void sps__throughput_free(struct sps_throughput *t) {
    free(t->counters);
    t->counters = NULL;
    t->ncounters = 0;
}
