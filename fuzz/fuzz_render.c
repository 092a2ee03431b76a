/*
 * fuzz_render.c - the renderers over a report read from fuzzed input: the
 * values a reader let through must not make any of them misbehave
 * (out-of-range numbers into integer conversions, NaN into tables).
 */
#include <string.h>

#include "fuzz.h"
#include "model/run_info.h"
#include "render/analysis_views.h"
#include "render/exporters.h"
#include "render/render.h"
#include "report/report.h"

void sps_fuzz_render(const struct sps_report *rep) {
    FILE *out = sps_fuzz_sink();
    char err[1024];
    sps__summary_print(out, rep, 0);
    sps__analysis_print(out, &rep->analysis);
    sps__report_json_print(out, rep);
    (void)sps__export_html(rep, out, err, sizeof err);
    (void)sps__export_steps_csv(rep, out, err, sizeof err);
    (void)sps__export_timeline_csv(rep, out, err, sizeof err);
    (void)sps__export_trace(rep, out, 1u << 20, err, sizeof err);
}

void sps_fuzz_load_dir(const char *dir) {
    struct sps_run run;
    memset(&run, 0, sizeof run);
    char err[1024];
    int rc = sps__run_load_dir(&run, dir, err, sizeof err);
    if (rc != 0)
        sps_fuzz_rejected(err);
    else if (run.nskipped)
        sps_fuzz_rejected(run.skipped[0].error);
    if (rc == 0 && sps__run_build(&run) == 0) {
        struct sps_run_info info;
        memset(&info, 0, sizeof info);
        struct sps_report rep;
        if (sps__report_build(&rep, &run, &info) == 0)
            sps_fuzz_render(&rep);
        sps__report_free(&rep);
    }
    sps__run_free(&run);
}
