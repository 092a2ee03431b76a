/*
 * analysis.h - answers over a finished run: what the bottleneck is,
 * whether memory leaks, what the energy and carbon were, throughput and
 * efficiency, and what stepscope itself cost.
 *
 * Analysis is pure: functions of the Run model and the sampler's result,
 * no I/O (DESIGN.md's data flow).  report.json's writer runs it and writes
 * what it found under "analysis"; the terminal summary and report.html
 * show that part of report.json (src/render/analysis_views.h), so a run
 * directory says the same thing however it is looked at.  Every verdict
 * carries the numbers it rests on.
 *
 * Each part lives in a file of its own (src/analysis/<part>.c) with its
 * result struct, its analysis function and its JSON writer; sps__analyze
 * runs them all.  Not thread-safe per struct; the functions have no global
 * state.
 */
#ifndef SPS_ANALYSIS_ANALYSIS_H
#define SPS_ANALYSIS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/bottleneck.h"
#include "analysis/leaks.h"
#include "analysis/overhead.h"
#include "analysis/energy.h"
#include "analysis/straggler.h"
#include "analysis/throughput.h"
#include "analysis/torch_memory.h"

struct sps_run;
struct sps_run_info;
struct sps_jw;

/* What the user can tell the analysis (stepscope run's flags). */
struct sps_analysis_config {
    double carbon_g_per_kwh; /* grid carbon intensity; NAN: the documented default */
    double pue;              /* data-centre power usage effectiveness; NAN: the default */
    double peak_flops;       /* dense peak FLOP/s per GPU for MFU; NAN: from the GPU's name */
};

/* Every field NAN: the documented defaults apply. */
void sps__analysis_config_default(struct sps_analysis_config *c);

struct sps_analysis {
    int computed; /* sps__analyze ran */
    struct sps_bottleneck bottleneck;
    struct sps_leaks leaks; /* memory growth against the step number, or time without steps */
    struct sps_overhead overhead;
    struct sps_energy energy;
    struct sps_throughput throughput;
    struct sps_straggler straggler; /* which rank the others wait for */
    struct sps_torch_memory torch_memory; /* torch.cuda's allocator memory at step ends (present 0: none) */
    /* Text a read analysis owns: where the parts point at static text (the
     * bottleneck's why_* reasons and windows_note, the overhead's
     * unmeasured_reason), an analysis read from report.json
     * (src/report/report_read_analysis.c) points here.  NULL for a computed
     * one; freed by sps__analysis_free. */
    char **owned_text;
    size_t nowned_text;
};

/* Analyse run (built) with info (its sampler result may be NULL).
 * cfg may be NULL (defaults).  Returns 0 or SPS_ENOMEM; *out is valid
 * (possibly partial) either way and must be freed. */
int sps__analyze(const struct sps_run *run, const struct sps_run_info *info, const struct sps_analysis_config *cfg,
                 struct sps_analysis *out);

/* Write "analysis": {...} into the open report object. */
void sps__analysis_json(struct sps_jw *w, const struct sps_analysis *a);

void sps__analysis_free(struct sps_analysis *a);

#endif /* SPS_ANALYSIS_ANALYSIS_H */
