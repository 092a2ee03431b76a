/*
 * test_analysis_overhead.c - analysis.overhead: what was recorded, priced
 * with the measured cost of one zone and one value, plus stepscope's own
 * threads; and the same numbers end to end under `stepscope run`, in the
 * summary and in report.html.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/overhead.h"
#include "check.h"
#include "export/report.h"
#include "model/run.h"
#include "sampler/sampler.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

/* A run that recorded 10 + 20 + 30 zone-likes, 5 values and 7 counts. */
static void example_run(struct sps_run *run, struct sps_name_summary names[5]) {
    static const struct {
        uint32_t kind;
        uint64_t count;
    } rows[] = {{SPS_KIND_STEP, 10}, {SPS_KIND_ZONE, 20}, {SPS_KIND_MICROSTEP, 30}, {SPS_KIND_VALUE, 5},
                {SPS_KIND_COUNTER, 7}};
    memset(run, 0, sizeof *run);
    memset(names, 0, 5 * sizeof names[0]);
    for (int i = 0; i < 5; i++) {
        names[i].kind = rows[i].kind;
        names[i].agg.kind = rows[i].kind;
        names[i].agg.count = rows[i].count;
    }
    run->names = names;
    run->nnames = 5;
}

static void test_priced_and_shared(void) {
    struct sps_run run;
    struct sps_name_summary names[5];
    example_run(&run, names);
    struct sps__sampler_result *sampler = calloc(1, sizeof *sampler);
    sampler->thread_cpu_seconds = 0.5;
    struct sps_run_info info = {.have_times = 1, .wall_s = 100, .user_s = 8, .sys_s = 2, .sampler = sampler,
                                .have_record_cost = 1, .zone_cost_ns = 20, .value_cost_ns = 10,
                                .have_live_view = 1, .live_view_cpu_seconds = 0.25};
    struct sps_overhead o;
    sps__overhead_analyze(&run, &info, &o);
    CHECK_EQ_U(o.zones_recorded, 60);
    CHECK_EQ_U(o.values_recorded, 12);
    CHECK_NEAR(o.recording_s, (60 * 20 + 12 * 10) * 1e-9, 1e-18);
    CHECK_NEAR(o.sampler_cpu_s, 0.5, 0);
    CHECK_NEAR(o.live_view_cpu_s, 0.25, 0);
    CHECK_NEAR(o.total_s, 0.75 + 1.32e-6, 1e-15);
    CHECK_NEAR(o.percent_of_workload_cpu, 100 * 1.32e-6 / 10, 1e-15);
    CHECK_NEAR(o.percent_of_wall, 100 * (0.75 + 1.32e-6) / 100, 1e-12);
    CHECK(o.unmeasured_reason == NULL);
    free(sampler);
}

/* What is not known stays unknown: no measured cost, no sampler, no times. */
static void test_unknowns_stay_unknown(void) {
    struct sps_run run;
    struct sps_name_summary names[5];
    example_run(&run, names);
    struct sps_run_info info = {0};
    struct sps_overhead o;
    sps__overhead_analyze(&run, &info, &o);
    CHECK_EQ_U(o.zones_recorded, 60);
    CHECK(isnan(o.zone_cost_ns) && isnan(o.recording_s));
    CHECK(isnan(o.sampler_cpu_s));
    CHECK_NEAR(o.total_s, 0, 0);
    CHECK(isnan(o.percent_of_workload_cpu) && isnan(o.percent_of_wall));
    CHECK_STR_HAS(o.unmeasured_reason, "stepscope run");
    info.record_cost_absent_reason = "the measuring process could not run";
    sps__overhead_analyze(&run, &info, &o);
    CHECK(!strcmp(o.unmeasured_reason, "the measuring process could not run"));
}

static void test_under_stepscope_run(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("overhead"));
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", WORKLOAD, "--steps", "50", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    json_t *r = report_load(dir);
    /* each step: the step, zone a and zone b; a value and a count */
    CHECK_EQ_I(json_num(r, "analysis.overhead.zones_recorded"), 150);
    CHECK_EQ_I(json_num(r, "analysis.overhead.values_recorded"), 100);
    double zone_ns = json_num(r, "analysis.overhead.zone_cost_ns"), value_ns = json_num(r, "analysis.overhead.value_cost_ns");
    CHECK(zone_ns > 0 && value_ns > 0);
    CHECK_NEAR(json_num(r, "analysis.overhead.recording_s"), (150 * zone_ns + 100 * value_ns) * 1e-9, 1e-15);
    CHECK_NEAR(json_num(r, "analysis.overhead.sampler_cpu_s"), json_num(r, "overhead.sampler_cpu_seconds"), 1e-12);
    CHECK(json_num(r, "analysis.overhead.percent_of_workload_cpu") > 0);
    json_decref(r);

    char err[8192], out[700];
    snprintf(out, sizeof out, "%s/summary.txt", dir);
    char *summary[] = {STEPSCOPE, "report", dir, "--format", "summary", "-o", out, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(summary, err, sizeof err)), 0);
    char text[16384];
    read_file(out, text, sizeof text);
    CHECK_STR_HAS(text, "overhead    recording ");
    CHECK_STR_HAS(text, "150 zones x ");
    CHECK_STR_HAS(text, "100 values x ");

    snprintf(out, sizeof out, "%s/report.html", dir);
    static char html[1 << 20];
    read_file(out, html, sizeof html);
    CHECK_STR_HAS(html, "<section id=\"overhead\">");
    CHECK_STR_HAS(html, "150 zones x ");
}

int main(void) {
    RUN_TEST(test_priced_and_shared);
    RUN_TEST(test_unknowns_stay_unknown);
    RUN_TEST(test_under_stepscope_run);
    return check_report();
}
