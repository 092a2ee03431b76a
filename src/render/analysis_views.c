/*
 * analysis_views.c - the analysis for a person (see analysis_views.h).
 */
#include "render/analysis_views.h"

void sps__analysis_label(FILE *f, const char *label) {
    fprintf(f, "%-*s", SPS_ANALYSIS_LABEL_WIDTH, label);
}

void sps__analysis_print(FILE *f, const struct sps_analysis *a) {
    if (!a->computed)
        return;
    sps__analysis_bottleneck_print(f, &a->bottleneck);
    sps__analysis_leaks_print(f, &a->leaks);
    sps__analysis_torch_memory_print(f, &a->torch_memory);
    sps__analysis_throughput_print(f, &a->throughput);
    sps__analysis_straggler_print(f, &a->straggler);
    sps__analysis_energy_print(f, &a->energy);
    sps__overhead_print(f, &a->overhead);
}

void sps__analysis_html(FILE *out, const struct sps_analysis *a) {
    if (!a->computed)
        return;
    sps__analysis_bottleneck_html(out, &a->bottleneck);
    sps__analysis_leaks_html(out, &a->leaks);
    sps__analysis_throughput_html(out, &a->throughput);
    sps__analysis_straggler_html(out, &a->straggler);
    sps__analysis_energy_html(out, &a->energy);
    sps__overhead_html(out, &a->overhead);
}
