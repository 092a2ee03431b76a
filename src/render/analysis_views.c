/*
 * analysis_views.c - show report.json's "analysis" (see analysis_views.h).
 */
#include "render/analysis_views.h"

void sps__analysis_label(FILE *f, const char *label) {
    fprintf(f, "%-*s", SPS_ANALYSIS_LABEL_WIDTH, label);
}

void sps__analysis_print(FILE *f, const json_t *report) {
    const json_t *a = json_object_get(report, "analysis");
    if (!json_is_object(a))
        return;
    sps__analysis_bottleneck_print(f, a);
    sps__analysis_leaks_print(f, json_object_get(a, "leaks"));
    sps__analysis_throughput_print(f, a);
    sps__analysis_energy_print(f, a);
    sps__overhead_print(f, json_object_get(a, "overhead"));
}

void sps__analysis_html(FILE *out, const json_t *report) {
    const json_t *a = json_object_get(report, "analysis");
    if (!json_is_object(a))
        return;
    sps__analysis_bottleneck_html(out, a);
    sps__analysis_leaks_html(out, json_object_get(a, "leaks"));
    sps__analysis_throughput_html(out, a);
    sps__analysis_energy_html(out, a);
    sps__overhead_html(out, json_object_get(a, "overhead"));
}
