/*
 * analysis.c - run every part of the analysis (see analysis.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "model/run_info.h"
#include "stepscope.h"

void sps__analysis_config_default(struct sps_analysis_config *c) {
    c->carbon_g_per_kwh = NAN;
    c->pue = NAN;
    c->peak_flops = NAN;
}

int sps__analyze(const struct sps_run *run, const struct sps_run_info *info, const struct sps_analysis_config *cfg,
                 struct sps_analysis *out) {
    struct sps_analysis_config defaults;
    if (!cfg) {
        sps__analysis_config_default(&defaults);
        cfg = &defaults;
    }
    memset(out, 0, sizeof *out);
    int rc = 0;
    sps__bottleneck_analyze(run, info, &out->bottleneck);
    if (sps__leaks_analyze(run, info ? info->sampler : NULL, &out->leaks) != 0)
        rc = SPS_ENOMEM;
    sps__torch_memory_summarize(run, &out->leaks, &out->torch_memory);
    sps__energy_analyze(run, info, cfg, &out->energy);
    if (sps__throughput_analyze(run, info, cfg, &out->throughput) != 0)
        rc = SPS_ENOMEM;
    sps__overhead_analyze(run, info, &out->overhead);
    if (sps__straggler_analyze(run, &out->straggler) != 0)
        rc = SPS_ENOMEM;
    out->computed = 1;
    return rc;
}

void sps__analysis_free(struct sps_analysis *a) {
    for (size_t i = 0; i < a->nowned_text; i++)
        free(a->owned_text[i]);
    free(a->owned_text);
    sps__leaks_free(&a->leaks);
    sps__throughput_free(&a->throughput);
    sps__straggler_free(&a->straggler);
    memset(a, 0, sizeof *a);
}
