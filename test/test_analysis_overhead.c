/*
 * test_analysis_overhead.c - analysis.overhead: what was recorded, priced
 * with the measured cost of one zone and one value, plus stepscope's own
 * threads; and the same numbers end to end under `stepscope run`, in the
 * summary and in report.html.  The --max-overhead budget: the guard's
 * decision on synthetic readings, and real runs that exceed it (thinned
 * to phases, then to steps) or keep it, with exact counts of what was
 * left out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/overhead.h"
#include "check.h"
#include "live/guard.h"
#include "record_format.h"
#include "render/render.h"
#include "render/json_writer.h"
#include "model/run.h"
#include "render/analysis_views.h"
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

/* o's summary line.  The caller frees it. */
static char *summary_line(const struct sps_overhead *o) {
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    sps__overhead_print(f, o);
    fclose(f);
    return text;
}

/* Each kind at its own cost: the library's work for every zone and value
 * at the run's measured costs, Python's on top at each process's own
 * (weighted by count across processes), instrument's hooks per zone they
 * began; a process that measured no cost leaves its share unpriced and the
 * total a lower bound.  The sampler's and live status's CPU time as a
 * share of one core over the run. */
static void test_priced_by_kind(void) {
    struct sps_run run;
    struct sps_name_summary names[5];
    example_run(&run, names);
    struct sps_process_data procs[3];
    memset(procs, 0, sizeof procs);
    /* a Python process: 30 of the 60 zones, 4 record()s, 3 count()s */
    /* the recorder's end samples: 300 ns in 2 and 500 ns in 2, 200 ns on
     * average, 150 ns more than warm (50): every zone costs 20 + 150 ns */
    procs[0] = (struct sps_process_data){.end_samples = 2, .end_sample_ns = 300, .end_samples_dropped = 1,
                                         .py_zones = 30, .py_values = 4, .py_counts = 3, .py_zone_ns = 60,
                                         .py_value_ns = 50, .py_count_ns = 70};
    /* its fork child, which measured zones at another cost, and an
     * instrumented loop: 12 zones through the hooks, 2 counts */
    procs[1] = (struct sps_process_data){.end_samples = 2, .end_sample_ns = 500,
                                         .py_zones = 10, .py_zone_ns = 80, .hook_zones = 12, .hook_counts = 2,
                                         .hook_zone_ns = 700};
    /* one that counted but measured nothing */
    procs[2] = (struct sps_process_data){.py_zones = 5, .hook_zones = 3};
    run.procs = procs;
    run.nprocs = 3;
    struct sps__sampler_result *sampler = calloc(1, sizeof *sampler);
    sampler->thread_cpu_seconds = 0.15;
    sampler->thread_ns_total = 50000000000ull; /* it ran 50 of the run's 100 s */
    struct sps_run_info info = {.have_times = 1, .wall_s = 100, .user_s = 8, .sys_s = 2, .sampler = sampler,
                                .have_record_cost = 1, .zone_cost_ns = 20, .value_cost_ns = 10,
                                .thinned_zone_cost_ns = 4, .warm_end_ns = 50, .have_live_view = 1,
                                .live_view_cpu_seconds = 0.02};
    struct sps_overhead o;
    sps__overhead_analyze(&run, &info, &o);
    CHECK_EQ_U(o.zone_end_samples, 4);
    CHECK_EQ_U(o.zone_end_samples_dropped, 1);
    CHECK_NEAR(o.zone_end_in_run_ns, 200, 1e-9);
    CHECK_NEAR(o.zone_end_warm_ns, 50, 0);
    CHECK_NEAR(o.zone_cost_ns, 20, 0); /* the warm measurement, as measured */
    CHECK_EQ_U(o.part[SPS_OH_ZONES].count, 60);
    CHECK_NEAR(o.part[SPS_OH_ZONES].s, 60 * 170e-9, 1e-18);
    CHECK_NEAR(o.part[SPS_OH_ZONES].cost_ns, 170, 1e-9);
    CHECK_EQ_U(o.part[SPS_OH_VALUES].count, 12);
    CHECK_NEAR(o.part[SPS_OH_VALUES].s, 12 * 10e-9, 1e-18);
    CHECK_EQ_U(o.part[SPS_OH_PY_ZONES].count, 45);
    CHECK_EQ_U(o.part[SPS_OH_PY_ZONES].unpriced, 5);
    CHECK_NEAR(o.part[SPS_OH_PY_ZONES].s, (30 * 60 + 10 * 80) * 1e-9, 1e-18);
    CHECK_NEAR(o.part[SPS_OH_PY_ZONES].cost_ns, (30 * 60 + 10 * 80) / 40.0, 1e-9); /* 65 */
    CHECK_EQ_U(o.part[SPS_OH_HOOKS].count, 15);
    CHECK_EQ_U(o.part[SPS_OH_HOOKS].unpriced, 3);
    CHECK_NEAR(o.part[SPS_OH_HOOKS].s, 12 * 700e-9, 1e-18);
    CHECK_NEAR(o.part[SPS_OH_PY_VALUES].s, 4 * 50e-9, 1e-18);
    CHECK_NEAR(o.part[SPS_OH_PY_COUNTS].s, 3 * 70e-9, 1e-18);
    CHECK_EQ_U(o.part[SPS_OH_THINNED].count, 0);
    CHECK(isnan(o.part[SPS_OH_THINNED].cost_ns)); /* none to average */
    CHECK_NEAR(o.thinned_zone_cost_ns, 4, 0);
    double want = (60 * 170 + 12 * 10 + 30 * 60 + 10 * 80 + 12 * 700 + 4 * 50 + 3 * 70) * 1e-9;
    CHECK_NEAR(o.recording_s, want, 1e-18);
    CHECK(o.recording_partial);
    CHECK_NEAR(o.percent_of_workload_cpu, 100 * want / 10, 1e-12);
    CHECK_NEAR(o.sampler_percent_of_core, 0.3, 1e-12);
    CHECK_NEAR(o.live_view_percent_of_core, 0.02, 1e-12);
    CHECK_NEAR(o.guard_percent_of_core, 0, 0);
    /* the summary line, through report.json as `stepscope report` reads it */
    char *line = summary_line(&o);
    CHECK_STR_HAS(line, "overhead    recording at least ");
    CHECK_STR_HAS(line, "(60 zones x 170 ns (20.0 ns warm + 150 ns the run's caches added, 4 samples) + Python's own work around 40 zones x 65.0 ns + Python's own work around "
                        "5 zones not priced (not measured in their process) + the torch hooks around 12 zones x "
                        "700 ns + the torch hooks around 3 zones not priced (not measured in their process) + "
                        "12 values x 10.0 ns + Python's own work around 4 record() calls x 50.0 ns + Python's own "
                        "work around 3 count() calls x 70.0 ns = ");
    CHECK_STR_HAS(line, "21.7 us); sampler 0.300% of one core, live status 0.020% of one core; all of stepscope ");
    free(line);
    /* every process measured its costs: the total is whole */
    procs[2] = (struct sps_process_data){0};
    sps__overhead_analyze(&run, &info, &o);
    CHECK(!o.recording_partial);
    CHECK_EQ_U(o.part[SPS_OH_PY_ZONES].unpriced, 0);
    line = summary_line(&o);
    CHECK(strstr(line, "at least") == NULL && strstr(line, "not priced") == NULL);
    free(line);
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
    CHECK(isnan(o.sampler_percent_of_core) && isnan(o.live_view_percent_of_core));
    CHECK_NEAR(o.total_s, 0, 0);
    CHECK(isnan(o.percent_of_workload_cpu) && isnan(o.percent_of_wall));
    CHECK_STR_HAS(o.unmeasured_reason, "stepscope run");
    info.record_cost_absent_reason = "the measuring process could not run";
    sps__overhead_analyze(&run, &info, &o);
    CHECK(!strcmp(o.unmeasured_reason, "the measuring process could not run"));
    /* some kinds unpriced as well (a Python process that measured no
     * costs, in a report rebuilt from the records): no bound to speak of */
    o.recording_partial = 1;
    char *line = summary_line(&o);
    CHECK_STR_HAS(line, "overhead    recording unknown of the workload's CPU time (the measuring process could not run)");
    CHECK(strstr(line, "at least") == NULL);
    free(line);
}

/* The run's terminal summary, as `stepscope report --format summary` prints it. */
static void summary_of(const char *dir, char *text, size_t len) {
    char err[8192], out[700];
    snprintf(out, sizeof out, "%s/summary.txt", dir);
    char *summary[] = {STEPSCOPE, "report", (char *)dir, "--format", "summary", "-o", out, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(summary, err, sizeof err)), 0);
    read_file(out, text, len);
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
    /* 100 zones: fewer than the 4096 between the recorder's end samples,
     * so a zone is priced at the warm cost */
    CHECK_EQ_I(json_num(r, "analysis.overhead.zone_end_samples") + json_num(r, "analysis.overhead.zone_end_samples_dropped"),
               0);
    CHECK(json_is_null(json_path(r, "analysis.overhead.zone_end_in_run_ns")));
    CHECK(json_num(r, "analysis.overhead.zone_end_warm_ns") > 0);
    CHECK_NEAR(json_num(r, "analysis.overhead.recording_by_kind.zones.cost_ns"), zone_ns, 1e-9);
    CHECK_NEAR(json_num(r, "analysis.overhead.recording_s"), (150 * zone_ns + 100 * value_ns) * 1e-9, 1e-15);
    CHECK_NEAR(json_num(r, "analysis.overhead.sampler_cpu_s"), json_num(r, "overhead.sampler_cpu_seconds"), 1e-12);
    CHECK(json_num(r, "analysis.overhead.percent_of_workload_cpu") > 0);
    /* the sampler's share of a core: the figure the sampler reports of itself */
    CHECK_NEAR(json_num(r, "analysis.overhead.sampler_percent_of_core"),
               json_num(r, "overhead.sampler_cpu_percent_of_one_core"), 1e-12);
    /* a C workload: no Python kind */
    CHECK_EQ_I(json_num(r, "analysis.overhead.recording_by_kind.zones.count"), 150);
    CHECK_EQ_I(json_num(r, "analysis.overhead.recording_by_kind.python_zones.count"), 0);
    CHECK_EQ_I(json_num(r, "analysis.overhead.recording_by_kind.instrument_hooks.count"), 0);
    CHECK(json_is_null(json_path(r, "analysis.overhead.budget")));
    CHECK_EQ_I(json_num(r, "analysis.overhead.zones_thinned"), 0);
    json_decref(r);

    char text[16384];
    summary_of(dir, text, sizeof text);
    CHECK_STR_HAS(text, "overhead    recording ");
    CHECK_STR_HAS(text, "150 zones x ");
    CHECK_STR_HAS(text, "100 values x ");
    CHECK_STR_HAS(text, "; sampler ");
    CHECK_STR_HAS(text, "% of one core; all of stepscope ");

    char out[700];
    snprintf(out, sizeof out, "%s/report.html", dir);
    static char html[1 << 20];
    read_file(out, html, sizeof html);
    CHECK_STR_HAS(html, "<section id=\"overhead\">");
    CHECK_STR_HAS(html, "150 zones x ");
}

/* Every 4096th zone end on a thread is timed: 30 steps of 401 zones
 * (a, 200 fine, 200 finer) are 12030 zones, 2 samples; a zone is priced
 * at the warm cost plus what the run's caches added to an end. */
static void test_end_samples_under_stepscope_run(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("end_samples"));
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", WORKLOAD, "--fine", "200", "--steps", "30", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    json_t *r = report_load(dir);
    CHECK_EQ_I(json_num(r, "analysis.overhead.zones_recorded"), 30 * 402);
    CHECK_EQ_I(json_num(r, "analysis.overhead.zone_end_samples") + json_num(r, "analysis.overhead.zone_end_samples_dropped"),
               2);
    double zone_ns = json_num(r, "analysis.overhead.zone_cost_ns");
    double in_run = json_num(r, "analysis.overhead.zone_end_in_run_ns"), warm = json_num(r, "analysis.overhead.zone_end_warm_ns");
    CHECK(warm > 0);
    if (json_num(r, "analysis.overhead.zone_end_samples") > 0) {
        double priced = zone_ns + (in_run > warm ? in_run - warm : 0);
        CHECK_NEAR(json_num(r, "analysis.overhead.recording_by_kind.zones.cost_ns"), priced, 1e-9);
    }
    json_decref(r);
}

/* The decision: windows of at least SPS_GUARD_MIN_WINDOW_CPU_S CPU
 * seconds, a raise per window over budget, the window of a raise not
 * judged, never down, nothing past steps. */
static void test_guard_decision(void) {
    struct sps__guard g;
    sps__guard_init(&g, 0.01, 20, 10, 5); /* 1%; 20 ns a zone, 10 ns a value, 5 ns a zone left out */
    CHECK_EQ_I(sps__guard_observe(&g, 0, 0, 0, 0, 0, 0.0), -1); /* the first reading opens a window */
    /* 0.1 s of CPU is too short a window to judge, however costly */
    CHECK_EQ_I(sps__guard_observe(&g, 100, 100000000, 0, 0, 0, 0.1), -1);
    CHECK_EQ_U(g.windows, 0);
    /* the window grows to 0.3 s: 1e8 zones x 20 ns = 2 s >> 1% of 0.3 s */
    CHECK_EQ_I(sps__guard_observe(&g, 300, 100000000, 0, 0, 0, 0.3), SPS_THIN_PHASES);
    CHECK_EQ_U(g.windows, 1);
    CHECK_EQ_U(g.windows_over, 1);
    CHECK_EQ_I(g.first_over_ns, 300);
    /* settling: no zone left out yet, so the level is not in force and
     * nothing is judged, however long or costly */
    CHECK_EQ_I(sps__guard_observe(&g, 600, 200000000, 0, 0, 0, 0.9), -1);
    CHECK_EQ_U(g.windows, 1);
    /* zones are left out now: a new window opens at this reading */
    CHECK_EQ_I(sps__guard_observe(&g, 700, 300000000, 0, 50, 0, 1.0), -1);
    CHECK_EQ_U(g.windows, 1);
    /* under budget: 1e5 zones x 20 ns + 1e5 values x 10 ns + 40 left out
     * x 5 ns = 3.0002 ms of 0.5 s = 0.6% */
    CHECK_EQ_I(sps__guard_observe(&g, 900, 300100000, 100000, 90, 0, 1.5), -1);
    CHECK_EQ_U(g.windows, 2);
    CHECK_NEAR(g.last_share, 3.0002e-3 / 0.5, 1e-12);
    CHECK_EQ_I(g.level, SPS_THIN_PHASES); /* never back down */
    /* over again: 0.3 s x 2% of zones -> steps */
    CHECK_EQ_I(sps__guard_observe(&g, 1200, 300100000 + 300000, 100000, 100, 0, 1.8), SPS_THIN_STEPS);
    CHECK_NEAR(g.last_share, (6e-3 + 50e-9) / 0.3, 1e-12);
    CHECK_NEAR(g.peak_share, 2.0 / 0.3, 1e-12); /* the first window's */
    CHECK_EQ_I(g.first_over_ns, 300); /* the first stays the first */
    /* a level with nothing more to leave out settles after
     * SPS_GUARD_SETTLE_READINGS readings */
    for (int i = 0; i < SPS_GUARD_SETTLE_READINGS - 1; i++)
        CHECK_EQ_I(sps__guard_observe(&g, 1300 + i, 300400000, 100000, 100, 0, 1.9 + 0.01 * i), -1);
    CHECK_EQ_I(g.settling, 1);
    CHECK_EQ_I(sps__guard_observe(&g, 1400, 300400000, 100000, 100, 0, 2.0), -1); /* settled: window opens */
    CHECK_EQ_I(g.settling, 0);
    /* over with steps only, from left-out zones alone (1e6 x 5 ns = 5 ms
     * of 0.3 s): nothing more to give, and said so */
    CHECK_EQ_I(sps__guard_observe(&g, 1800, 300400000, 100000, 1000100, 0, 2.3), -1);
    CHECK_NEAR(g.last_share, 5e-3 / 0.3, 1e-12);
    CHECK_EQ_I(g.level, SPS_THIN_STEPS);
    CHECK(g.over_at_steps);
    CHECK_EQ_U(g.windows_over, 3);
    CHECK_EQ_U(g.windows, 4);
    /* totals that go back (a record unreadable now) restart the window */
    CHECK_EQ_I(sps__guard_observe(&g, 2100, 5, 0, 100, 0, 2.8), -1);
    CHECK_EQ_U(g.windows, 4);
}

/* Python's own work counts against the budget as the report prices it:
 * a window of 1000 zones (20 us) and 4 ms of Python work in 0.3 s of CPU
 * is 1.34%, over a 1% budget that the zones alone would keep. */
static void test_guard_counts_python(void) {
    struct sps__guard g;
    sps__guard_init(&g, 0.01, 20, 10, 5);
    CHECK_EQ_I(sps__guard_observe(&g, 0, 0, 0, 0, 0, 0.0), -1);
    CHECK_EQ_I(sps__guard_observe(&g, 300, 1000, 0, 0, 4e6, 0.3), SPS_THIN_PHASES);
    CHECK_NEAR(g.last_share, (1000 * 20 + 4e6) * 1e-9 / 0.3, 1e-12);
    /* Python's total going back (a record gone) restarts the window */
    struct sps__guard h;
    sps__guard_init(&h, 0.01, 20, 10, 5);
    CHECK_EQ_I(sps__guard_observe(&h, 0, 0, 0, 0, 5e6, 0.0), -1);
    CHECK_EQ_I(sps__guard_observe(&h, 300, 1000, 0, 0, 1e6, 0.3), -1);
    CHECK_EQ_U(h.windows, 0);
}

/* A shorter window judges as the default one does, only sooner. */
static void test_guard_shorter_window(void) {
    struct sps__guard g;
    sps__guard_init(&g, 0.01, 20, 10, 5);
    CHECK_NEAR(g.min_window_cpu_s, SPS_GUARD_MIN_WINDOW_CPU_S, 0);
    g.min_window_cpu_s = 0.05;
    CHECK_EQ_I(sps__guard_observe(&g, 0, 0, 0, 0, 0, 0.0), -1);
    CHECK_EQ_I(sps__guard_observe(&g, 40, 100, 0, 0, 0, 0.04), -1); /* 0.04 s: too short still */
    CHECK_EQ_U(g.windows, 0);
    /* 0.06 s: 1e6 zones x 20 ns = 20 ms, a third of it */
    CHECK_EQ_I(sps__guard_observe(&g, 60, 1000000, 0, 0, 0, 0.06), SPS_THIN_PHASES);
    CHECK_EQ_U(g.windows, 1);
    CHECK_NEAR(g.last_share, 0.02 / 0.06, 1e-12);
}

/* The runs under a budget below have the guard read every 50 ms and judge
 * windows of 50 ms of CPU time (STEPSCOPE_GUARD_PERIOD_MS, docs/cli.md), a
 * fifth of the default's, and the sampler read the workload's CPU time every
 * 20 ms: each needs a fifth of the default's steps for as many windows. */
#define GUARD_PERIOD_MS "50"

/* Run the fine-grained workload under a budget; report.json. */
static json_t *budget_run(const char *budget, const char *spin_us, const char *until, const char *after,
                          const char *name) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new(name));
    setenv("STEPSCOPE_GUARD_PERIOD_MS", GUARD_PERIOD_MS, 1);
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "--max-overhead", (char *)budget, "-o", dir, "--",
                    WORKLOAD, "--fine", "200", "--spin-us", (char *)spin_us, "--until-thinned", (char *)until,
                    "--steps", (char *)after, NULL};
    char err[4096];
    int code = exit_code_of(run_capture(argv, err, sizeof err));
    unsetenv("STEPSCOPE_GUARD_PERIOD_MS");
    CHECK_MSG(code == 0, "exit %d: %s", code, err);
    return report_load(dir);
}

static uint64_t zone_count(json_t *r, const char *name) {
    json_t *z = report_find(r, "zones", name);
    return z ? (uint64_t)json_integer_value(json_object_get(z, "count")) : 0;
}

/* Over budget with everything recorded, under it with phases: thinned to
 * phases and no further; every step whole, and exactly the zones inside
 * "a" of the thinned steps left out. */
static void test_budget_thins_to_phases(void) {
    /* A step is 400 nested zones and 400 us of CPU.  The budget goes
     * halfway (geometrically) between what all of it costs and what the
     * phases level costs (2 zones, 400 left out), from the costs this
     * build measures, so that it sits well inside the gap in any build
     * (a sanitizer makes every zone dearer). */
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("budget_costs"));
    char *probe[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", WORKLOAD, "--fine", "200", "--spin-us", "400",
                     "--steps", "20", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(probe, NULL, 0)), 0);
    json_t *costs = report_load(dir);
    double z = json_num(costs, "analysis.overhead.zone_cost_ns"), t = json_num(costs, "analysis.overhead.thinned_zone_cost_ns");
    json_decref(costs);
    CHECK(z > 0 && t > 0);
    double all = 400 * z / (400e3 + 400 * z), phases = (2 * z + 400 * t) / (400e3 + 2 * z + 400 * t);
    char budget[32];
    snprintf(budget, sizeof budget, "%.4f%%", 100 * sqrt(all * phases));
    json_t *r = budget_run(budget, "400", "1", "40", "budget_phases");
    CHECK(json_is_true(json_path(r, "analysis.overhead.budget.exceeded")));
    CHECK(!strcmp(json_string_value(json_path(r, "analysis.overhead.budget.thin_level")), "phases"));
    CHECK(json_is_false(json_path(r, "analysis.overhead.budget.over_with_steps_only")));
    CHECK_NEAR(json_num(r, "analysis.overhead.budget.max_percent_of_workload_cpu"), 100 * sqrt(all * phases), 1e-4);
    double first = json_num(r, "analysis.overhead.budget.first_exceeded_s");
    double since = json_num(r, "analysis.overhead.budget.thinned_since_s");
    CHECK(first > 0 && since >= first);
    CHECK(json_num(r, "analysis.overhead.budget.peak_window_percent") > 100 * sqrt(all * phases));
    uint64_t steps = zone_count(r, "step"), a = zone_count(r, "a");
    uint64_t fine = zone_count(r, "fine"), finer = zone_count(r, "finer");
    uint64_t thinned = (uint64_t)json_num(r, "analysis.overhead.zones_thinned");
    CHECK(steps >= 40 && a == steps);
    CHECK_EQ_U(fine, finer); /* a step is thinned whole or not at all: the level changes at step ends */
    CHECK_EQ_U(fine + finer + thinned, 400 * steps);
    CHECK(thinned >= 400 * 40); /* at least the 40 steps after the level arrived */
    CHECK_EQ_U((uint64_t)json_num(r, "processes.0.zones_thinned"), thinned);
    CHECK(!strcmp(json_string_value(json_path(r, "processes.0.thin_level")), "phases"));
    double zone_ns = json_num(r, "analysis.overhead.recording_by_kind.zones.cost_ns");
    double thin_ns = json_num(r, "analysis.overhead.thinned_zone_cost_ns");
    CHECK(thin_ns > 0);
    CHECK_NEAR(json_num(r, "analysis.overhead.recording_s"),
               ((double)(json_num(r, "analysis.overhead.zones_recorded")) * zone_ns + (double)thinned * thin_ns) * 1e-9,
               1e-12);
    CHECK(json_num(r, "analysis.overhead.guard_cpu_s") > 0);
    json_decref(r);
}

/* Over budget even with phases: steps only, and still over: said so. */
static void test_budget_thins_to_steps(void) {
    /* 20 us of CPU a step: phases cost ~0.2%, steps alone ~0.1% > 0.02%;
     * 8000 steps after steps-only began (~0.2 s of CPU) give the guard
     * windows to judge at that level */
    json_t *r = budget_run("0.02%", "20", "2", "8000", "budget_steps");
    CHECK(!strcmp(json_string_value(json_path(r, "analysis.overhead.budget.thin_level")), "steps"));
    CHECK(json_is_true(json_path(r, "analysis.overhead.budget.over_with_steps_only")));
    uint64_t steps = zone_count(r, "step"), a = zone_count(r, "a");
    uint64_t fine = zone_count(r, "fine"), thinned = (uint64_t)json_num(r, "analysis.overhead.zones_thinned");
    CHECK(steps >= 8000 && a < steps && fine <= a * 200);
    /* left out: "a" of the steps-only steps, fine and finer of every thinned step */
    CHECK_EQ_U(a + fine + zone_count(r, "finer") + thinned, 401 * steps);
    json_decref(r);
}

/* Under budget: nothing thinned, and the report says it was kept. */
static void test_budget_kept(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("budget_kept"));
    /* 400 steps of 0.5 ms of CPU: four of the short windows */
    setenv("STEPSCOPE_GUARD_PERIOD_MS", GUARD_PERIOD_MS, 1);
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "--max-overhead", "50", "-o", dir, "--", WORKLOAD,
                    "--fine", "10", "--spin-us", "500", "--steps", "400", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    unsetenv("STEPSCOPE_GUARD_PERIOD_MS");
    json_t *r = report_load(dir);
    CHECK(json_is_false(json_path(r, "analysis.overhead.budget.exceeded")));
    CHECK(!strcmp(json_string_value(json_path(r, "analysis.overhead.budget.thin_level")), "none"));
    CHECK_EQ_I(json_num(r, "analysis.overhead.zones_thinned"), 0);
    CHECK_EQ_U(zone_count(r, "fine"), 4000);
    CHECK(json_num(r, "analysis.overhead.budget.windows_judged") >= 1);
    json_decref(r);

    char text[16384];
    summary_of(dir, text, sizeof text);
    CHECK_STR_HAS(text, "\n            budget 50%: kept (the costliest window cost ");
}

/* A run without a budget has "budget": null; bad budgets are usage errors. */
static void test_budget_flags(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("budget_flags"));
    struct {
        const char *value, *extra, *message;
    } bad[] = {{"0", NULL, "--max-overhead: '0' is not a percentage above 0 and at most 100"},
               {"101%", NULL, "'101%' is not a percentage"},
               {"1%%", NULL, "'1%%' is not a percentage"},
               {"x", NULL, "'x' is not a percentage"},
               {"1%", "--no-sample", "--max-overhead needs the sampler"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {STEPSCOPE, "run", "--max-overhead", (char *)bad[i].value, "-o", dir,
                        (char *)(bad[i].extra ? bad[i].extra : "-q"), "--", WORKLOAD, NULL};
        char err[4096];
        CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 2);
        CHECK_STR_HAS(err, bad[i].message);
    }
}

int main(void) {
    RUN_TEST(test_priced_and_shared);
    RUN_TEST(test_priced_by_kind);
    RUN_TEST(test_unknowns_stay_unknown);
    RUN_TEST(test_under_stepscope_run);
    RUN_TEST(test_end_samples_under_stepscope_run);
    RUN_TEST(test_guard_decision);
    RUN_TEST(test_guard_counts_python);
    RUN_TEST(test_guard_shorter_window);
    RUN_TEST(test_budget_thins_to_phases);
    RUN_TEST(test_budget_thins_to_steps);
    RUN_TEST(test_budget_kept);
    RUN_TEST(test_budget_flags);
    return check_report();
}
