/*
 * test_html.c - report.html: exported from a real run of the CLI and from
 * synthetic report.json files, it has every chart with drawn marks, titled
 * axes with units, escaped text, the reason for each chart without data,
 * and no reference to anything on the network.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "render/exporters.h"
#include "render/html_units.h"
#include "render/input.h"
#include "render/svg_chart.h"
#include "support.h"

#define WARMUP_FILL "fill=\"#f28e2b\""

/* report.html of dir, in memory (caller frees); NULL when export failed. */
static char *export_page(const char *dir) {
    struct sps_report_input in;
    char err[1024];
    if (sps__report_input_load(dir, &in, err, sizeof err) != 0) {
        fprintf(stderr, "load %s: %s\n", dir, err);
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = sps__export_html(&in, f, err, sizeof err);
    fclose(f);
    sps__report_input_free(&in);
    if (rc != 0) {
        fprintf(stderr, "export %s: %s\n", dir, err);
        free(buf);
        return NULL;
    }
    return buf;
}

/* The <section id="id"> ... </section> of page, copied (caller frees);
 * "" when there is none. */
static char *section_of(const char *page, const char *id) {
    char open[96];
    snprintf(open, sizeof open, "<section id=\"%s\">", id);
    const char *a = strstr(page, open);
    const char *b = a ? strstr(a, "</section>") : NULL;
    size_t n = a && b ? (size_t)(b - a) : 0;
    char *s = malloc(n + 1);
    memcpy(s, a ? a : "", n);
    s[n] = '\0';
    return s;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* What the page must be for any input: one HTML document that fetches
 * nothing. */
static void check_self_contained(const char *page) {
    CHECK(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    CHECK_STR_HAS(page, "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'");
    CHECK_MSG(!strstr(page, "http://") && !strstr(page, "https://"), "the page names a network address");
    CHECK_MSG(!strstr(page, "src=") && !strstr(page, "href="), "the page references a resource");
    CHECK_MSG(!strstr(page, "url(") && !strstr(page, "@import"), "the style loads something");
    CHECK_MSG(!strstr(page, "<script"), "the page has a script");
    CHECK_EQ_I(count_of(page, "<svg"), count_of(page, "</svg>"));
    CHECK_STR_HAS(page, "</html>\n");
}

/* A chart section with an <svg> that draws at least min_marks of mark. */
static void check_chart(const char *page, const char *id, const char *mark, int min_marks) {
    char *s = section_of(page, id);
    CHECK_MSG(s[0] != '\0', "section %s is missing", id);
    CHECK_MSG(strstr(s, "<svg viewBox=") != NULL, "section %s has no chart", id);
    CHECK_MSG(count_of(s, mark) >= min_marks, "section %s: %d of %s, expected at least %d", id, count_of(s, mark),
              mark, min_marks);
    CHECK_MSG(!strstr(s, "class=\"empty\""), "section %s says it is empty", id);
    free(s);
}

/* A section that has no chart but a sentence containing why. */
static void check_empty(const char *page, const char *id, const char *why) {
    char *s = section_of(page, id);
    CHECK_MSG(s[0] != '\0', "section %s is missing", id);
    CHECK_MSG(!strstr(s, "<svg"), "section %s draws a chart without data", id);
    CHECK_MSG(strstr(s, "<p class=\"empty\">") != NULL, "section %s: no sentence saying why it is empty", id);
    CHECK_MSG(strstr(s, why) != NULL, "section %s does not say \"%s\"", id, why);
    free(s);
}

static void html_escape(char *dst, size_t len, const char *src) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    svg_write_escaped(f, src);
    fclose(f);
    snprintf(dst, len, "%s", buf);
    free(buf);
}

static void test_real_run(void) {
    const char *tmp = tmpdir_new("html");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/run", tmp);
    /* machine interval 100 ms: the tree's first PSS read waits for its
     * second one, and the run lasts under a second */
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", dir, "--machine-interval", "100", "--",
                    SPS_BIN_DIR "/test_workload", "--steps", "30", "--warmup", "3", "--alloc-mb", "16", "--burn-ms",
                    "250", "--sleep-ms", "150", NULL};
    char err[4096];
    int st = run_capture(argv, err, sizeof err);
    CHECK_MSG(exit_code_of(st) == 0, "stepscope run failed: %s", err);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    check_self_contained(page);

    /* wide tables stay readable: a first column wraps between words only
     * (overflow-wrap:anywhere let it narrow to one character a line beside
     * the bottleneck windows' and leaks' wide cells), sentences in cells
     * wrap, and a table wider than its section scrolls inside it */
    const char *first = strstr(page, "th:first-child,td:first-child{");
    CHECK(first != NULL);
    if (first) {
        char rule[256];
        const char *end = strchr(first, '}');
        snprintf(rule, sizeof rule, "%.*s", end ? (int)(end - first) : 0, first);
        CHECK_MSG(!strstr(rule, "anywhere"), "first column: %s", rule);
        CHECK_STR_HAS(rule, "overflow-wrap:break-word");
    }
    CHECK_STR_HAS(page, "th.text,td.text{text-align:left;white-space:normal;");
    CHECK_STR_HAS(page, "overflow-x:auto}");
    char *energy = section_of(page, "energy");
    CHECK_STR_HAS(energy, "<th class=\"text\">evidence or reason</th>");
    CHECK_STR_HAS(energy, "</td><td class=\"text\">");
    free(energy);

    /* header */
    CHECK_STR_HAS(page, "<h1>stepscope report: test_workload</h1>");
    CHECK_STR_HAS(page, "--steps 30 --warmup 3");
    CHECK_STR_HAS(page, "exited with 0");
    CHECK_STR_HAS(page, "<dt>Wall time</dt>");
    CHECK_STR_HAS(page, "<dt>CPU time</dt>");
    CHECK_STR_HAS(page, "<dt>Peak RSS</dt><dd>");
    CHECK_STR_HAS(page, "<dt>Sampler overhead</dt>");
    CHECK_STR_HAS(page, "of one core");

    /* step time: 30 bars (plus legend swatches), warm-up in its colour,
     * the p50 and p90 lines */
    check_chart(page, "step-time", "<rect", 30);
    char *s = section_of(page, "step-time");
    CHECK_STR_HAS(s, "warm-up step");
    CHECK_MSG(count_of(s, WARMUP_FILL) >= 2, "warm-up bars: %d", count_of(s, WARMUP_FILL)); /* legend + bars */
    CHECK_STR_HAS(s, ">p50 ");
    CHECK_STR_HAS(s, ">p90 ");
    CHECK_STR_HAS(s, "step (row of the step table)");
    CHECK_MSG(strstr(s, "step time (µs)") || strstr(s, "step time (ms)"), "step time axis has no unit");
    free(s);

    /* phases: zones a and b in the legend */
    check_chart(page, "phases", "<rect", 30);
    s = section_of(page, "phases");
    CHECK_STR_HAS(s, ">a</text>");
    CHECK_STR_HAS(s, ">b</text>");
    CHECK_STR_HAS(s, "not in a zone");
    free(s);

    /* machine metrics over time, with the steps marked */
    check_chart(page, "memory", "<polyline", 1);
    s = section_of(page, "memory");
    CHECK_MSG(strstr(s, "memory (MiB)") || strstr(s, "memory (GiB)"), "memory axis has no unit");
    CHECK_STR_HAS(s, "time since the run started (s)");
    /* a run under a second: its PSS read waits for its budget (a read of
     * a 20 MiB tree is paid for after 2 s), so the RSS sum stands alone,
     * and the chart says why there is no PSS line */
    CHECK_STR_HAS(s, ">workload RSS summed over processes</text>");
    CHECK_STR_HAS(s, "Not shown: workload PSS: ");
    CHECK_STR_HAS(s, "step start");
    CHECK_MSG(count_of(s, "stroke-opacity=\"0.35\"") == 30, "step boundaries: %d",
              count_of(s, "stroke-opacity=\"0.35\""));
    free(s);
    check_chart(page, "cpu", "<polyline", 1);
    s = section_of(page, "cpu");
    CHECK_STR_HAS(s, "CPU utilisation (%)");
    free(s);

    /* GPU and sensors depend on the machine: a chart, or the report's reason */
    json_t *report = report_load(dir);
    if (report && json_array_size(json_object_get(report, "gpus")) == 0) {
        char why[2048];
        html_escape(why, sizeof why, json_string_value(json_object_get(report, "gpus_unavailable_reason")));
        check_empty(page, "gpu", why);
    } else {
        /* a GPU was read: a chart, or (a GPU without utilisation) the reason */
        char *g = section_of(page, "gpu");
        CHECK_MSG(strstr(g, "<svg") || strstr(g, "<p class=\"empty\">"), "gpu section has neither chart nor reason");
        free(g);
    }
    json_t *temp = json_path(report, "metrics.cpu_temperature_celsius.unavailable_reason");
    if (json_is_string(temp) && json_array_size(json_object_get(report, "gpus")) == 0 &&
        json_array_size(json_object_get(report, "sensors")) == 0) {
        char why[2048];
        html_escape(why, sizeof why, json_string_value(temp));
        check_empty(page, "temperature", why);
    }
    json_decref(report);

    /* zone table */
    s = section_of(page, "zones");
    CHECK_STR_HAS(s, "<th>p99</th><th>share of run</th>");
    CHECK_STR_HAS(s, "<tr><td>step</td><td class=\"kind\">step</td><td>30</td>");
    CHECK_STR_HAS(s, "<tr><td>a</td><td class=\"kind\">zone</td><td>30</td>");
    CHECK_STR_HAS(s, "<tr><td>b</td><td class=\"kind\">zone</td><td>30</td>");
    free(s);
    free(page);
}

/* A run with neither steps nor sampling: each chart says why it is empty. */
static void test_no_steps_no_sampler(void) {
    const char *tmp = tmpdir_new("html-empty");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/run", tmp);
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "--no-sample", "-o", dir, "--",
                    SPS_BIN_DIR "/test_workload", "--steps", "0", "--tag", "lonely", NULL};
    char err[4096];
    int st = run_capture(argv, err, sizeof err);
    CHECK_MSG(exit_code_of(st) == 0, "stepscope run failed: %s", err);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    check_self_contained(page);
    check_empty(page, "step-time", "No step was recorded");
    check_empty(page, "phases", "No step was recorded");
    /* a C program recorded: the hint speaks C */
    CHECK_STR_HAS(page, "never ended a SPS_STEP() or SPS_STEP_NAMED() scope");
    CHECK(strstr(page, "stepscope.step()") == NULL);
    check_empty(page, "memory", "sampling was turned off (--no-sample)");
    check_empty(page, "cpu", "sampling was turned off (--no-sample)");
    check_empty(page, "power", "sampling was turned off (--no-sample)");
    CHECK_STR_HAS(page, "no sampler ran");
    CHECK_STR_HAS(page, "<tr><td>lonely</td>");
    CHECK_EQ_I(count_of(page, "<svg"), 0);
    free(page);
}

#define NASTY_ZONE "x<&\">y"
#define NASTY_ESCAPED "x&lt;&amp;&quot;&gt;y"

/* A synthetic standalone report.json: n steps of 2-3 ms (the first two
 * warm-up), a zone with a name that needs escaping, a memory series, and
 * RAPL and GPUs unavailable with reasons that need escaping too. */
static void write_fixture(const char *dir, size_t nsteps) {
    json_t *rows = json_array();
    for (size_t i = 0; i < nsteps; i++) {
        double dur = i < 2 ? 0.009 : 0.002 + 0.001 * (double)(i % 3) / 2;
        json_array_append_new(rows, json_pack("{s:I, s:s, s:I, s:I, s:f, s:f, s:b, s:{s:f, s:f}, s:{}, s:{}}",
                                              "index", (json_int_t)i, "name", "train_step", "pid", (json_int_t)1,
                                              "tid", (json_int_t)1, "start_s", 0.01 + 0.004 * (double)i,
                                              "duration_s", dur, "warmup", i < 2, "zones_self_s", NASTY_ZONE,
                                              dur * 0.6, "compute", dur * 0.3, "values", "counters"));
    }
    json_t *t = json_array(), *rss = json_array();
    for (int i = 0; i < 20; i++) {
        json_array_append_new(t, json_real(0.1 * i));
        json_array_append_new(rss, json_real(50e6 + 1e6 * i));
    }
    const char *rapl_why = "no RAPL domains under /sys/class/powercap & <fixture>";
    json_t *metrics = json_pack(
        "{s:{s:s, s:i}, s:{s:s, s:i, s:s}, s:{s:s, s:i, s:s}}", "workload_rss_bytes", "unit", "bytes", "samples", 20,
        "cpu_package_power_watts", "unit", "watts", "samples", 0, "unavailable_reason", rapl_why, "dram_power_watts",
        "unit", "watts", "samples", 0, "unavailable_reason", rapl_why);
    json_t *report = json_pack(
        "{s:s, s:s, s:[s, s], s:s, s:f, s:n, s:{s:f, s:f, s:f}, s:{s:I, s:s}, s:{s:I, s:I}, "
        "s:[{s:s, s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}], s:{s:I, s:I, s:I, s:o}, s:o, s:[], "
        "s:s, s:[], s:{s:i, s:[{s:s, s:s, s:i, s:o, s:o, s:o}]}, s:{s:f, s:f, s:i}}",
        "schema", "stepscope.report/1", "stepscope_version", "0.1.0", "command", "/opt/<train>", "--tag=a&b",
        "written_by", "the recording process itself (sps_report_write)", "started_unix_s", 1.7e9, "exit", "timing",
        "wall_s", 0.5, "user_s", 0.4, "sys_s", 0.05, "memory", "peak_rss_bytes", (json_int_t)70000000,
        "peak_rss_scope", "this process", "recording", "events_recorded", (json_int_t)100, "events_dropped",
        (json_int_t)0, "zones", "name", NASTY_ZONE, "kind", "zone", "count", (json_int_t)nsteps, "total_s", 0.1,
        "self_s", 0.1, "mean_s", 0.001, "p50_s", 0.001, "p90_s", 0.002, "p99_s", 0.003, "share_of_wall", 0.2, "steps",
        "count", (json_int_t)nsteps, "rows_kept", (json_int_t)nsteps, "warmup_steps", (json_int_t)2, "rows", rows,
        "metrics", metrics, "gpus", "gpus_unavailable_reason", "nvml: fake <driver> & \"missing\"", "sensors",
        "series", "interval_ms", 100, "metrics", "metric", "workload_rss_bytes", "unit", "bytes", "interval_ms", 100,
        "t_s", t, "mean", rss, "max", json_deep_copy(rss), "overhead", "sampler_cpu_seconds", 0.002,
        "sampler_cpu_percent_of_one_core", 0.4, "sampler_ticks", 20);
    if (!report) {
        fprintf(stderr, "fixture: json_pack failed\n");
        exit(1);
    }
    char path[700];
    snprintf(path, sizeof path, "%s/report.json", dir);
    if (json_dump_file(report, path, JSON_INDENT(2)) != 0) {
        fprintf(stderr, "fixture: cannot write %s\n", path);
        exit(1);
    }
    json_decref(report);
}

/* The empty charts' hints speak the run's language: a Python run (the
 * analysis's advice_for) is told about `with stepscope.step():`, never
 * SPS_STEP(). */
static void test_hints_in_python(void) {
    const char *dir = tmpdir_new("html-python");
    write_fixture(dir, 0);
    char path[700];
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_error_t jerr;
    json_t *report = json_load_file(path, 0, &jerr);
    CHECK(report != NULL);
    if (!report)
        return;
    json_object_set_new(report, "analysis", json_pack("{s:{s:s, s:s}}", "bottleneck", "verdict", "unknown",
                                                      "advice_for", "python"));
    CHECK(json_dump_file(report, path, JSON_INDENT(2)) == 0);
    json_decref(report);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    check_empty(page, "step-time", "No step was recorded: the program never ended a `with stepscope.step():` block");
    CHECK(strstr(page, "SPS_STEP") == NULL);
    free(page);
}

/* The bottleneck's evidence table says how the run delay and the CPU wait
 * differ: two percentages read alike by name alone. */
static void test_bottleneck_evidence_glosses(void) {
    const char *dir = tmpdir_new("html-evidence");
    write_fixture(dir, 0);
    char path[700];
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_error_t jerr;
    json_t *report = json_load_file(path, 0, &jerr);
    CHECK(report != NULL);
    if (!report)
        return;
    json_object_set_new(report, "analysis",
                        json_pack("{s:{s:s, s:s, s:{s:f, s:f}}}", "bottleneck", "verdict", "cpu-contended",
                                  "advice_for", "c", "evidence", "workload_run_delay_mean_percent", 49.0,
                                  "workload_cpu_wait_percent", 50.0));
    CHECK(json_dump_file(report, path, JSON_INDENT(2)) == 0);
    json_decref(report);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    CHECK_STR_HAS(page, "<tr><td>workload_run_delay_mean_percent<br><small>time runnable but not running, per wall "
                        "second (percent of one CPU)</small></td>");
    CHECK_STR_HAS(page, "<tr><td>workload_cpu_wait_percent<br><small>of the time the workload was ready to run, the "
                        "share it waited for a CPU: delay / (delay + CPU time)</small></td>");
    free(page);
}

static void test_escaping_and_reasons(void) {
    const char *dir = tmpdir_new("html-fixture");
    write_fixture(dir, 40);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    check_self_contained(page);
    CHECK_MSG(!strstr(page, NASTY_ZONE), "the zone name is not escaped");
    CHECK_STR_HAS(page, "<tr><td>" NASTY_ESCAPED "</td>");
    CHECK_MSG(!strstr(page, "<train>"), "the command is not escaped");
    CHECK_STR_HAS(page, "/opt/&lt;train&gt; --tag=a&amp;b");
    CHECK_STR_HAS(page, "<title>stepscope: /opt/&lt;train&gt;</title>");
    CHECK_STR_HAS(page, "the process wrote this report itself");

    check_chart(page, "step-time", "<rect", 40);
    char *s = section_of(page, "step-time");
    CHECK_STR_HAS(s, "step time (ms)");
    /* zones[] has no entry for the step: nearest rank over the rows */
    CHECK_STR_HAS(s, ">p50 2.5 ms</text>");
    CHECK_STR_HAS(s, ">p90 3 ms</text>");
    CHECK_STR_HAS(s, "p50 and p90 are taken over the rows drawn");
    CHECK_EQ_I(count_of(s, WARMUP_FILL), 3); /* the legend and two bars */
    free(s);
    check_chart(page, "phases", "<rect", 80);
    s = section_of(page, "phases");
    CHECK_STR_HAS(s, ">" NASTY_ESCAPED "</text>");
    CHECK_STR_HAS(s, ">compute</text>");
    free(s);
    check_chart(page, "memory", "<polyline", 1);
    s = section_of(page, "memory");
    CHECK_STR_HAS(s, "memory (MiB)");
    CHECK_STR_HAS(s, "warm-up steps");
    /* a report.json from before PSS: said, not drawn as 0 */
    CHECK_STR_HAS(s, "Not shown: workload PSS: no readings in report.json; system memory used");
    free(s);
    check_empty(page, "power", "no RAPL domains under /sys/class/powercap &amp; &lt;fixture&gt;");
    check_empty(page, "gpu", "nvml: fake &lt;driver&gt; &amp; &quot;missing&quot;");
    free(page);
}

/* The fixture with the tree's PSS: a line of its own beside the RSS sum,
 * and the Peak PSS fact. */
static void test_pss_line(void) {
    const char *dir = tmpdir_new("html-pss");
    write_fixture(dir, 20);
    json_t *report = report_load(dir);
    if (!report)
        exit(1);
    json_t *t = json_array(), *pss = json_array();
    for (int i = 0; i < 4; i++) {
        json_array_append_new(t, json_real(0.5 * i));
        json_array_append_new(pss, json_real(20e6 + 1e5 * i));
    }
    json_array_append_new(json_object_get(json_object_get(report, "series"), "metrics"),
                          json_pack("{s:s, s:s, s:i, s:o, s:o, s:o}", "metric", "workload_pss_bytes", "unit", "bytes",
                                    "interval_ms", 500, "t_s", t, "mean", pss, "max", json_deep_copy(pss)));
    json_object_set_new(json_object_get(report, "metrics"), "workload_pss_bytes",
                        json_pack("{s:s, s:i}", "unit", "bytes", "samples", 4));
    json_object_set_new(json_object_get(report, "memory"), "workload_peak_pss_bytes", json_real(20.3e6));
    char path[700];
    snprintf(path, sizeof path, "%s/report.json", dir);
    CHECK_EQ_I(json_dump_file(report, path, JSON_INDENT(2)), 0);
    json_decref(report);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    CHECK_STR_HAS(page, "<dt>Peak PSS</dt><dd>19.4 MiB<small>");
    char *s = section_of(page, "memory");
    CHECK_STR_HAS(s, ">workload PSS</text>");
    CHECK_STR_HAS(s, ">workload RSS summed over processes</text>");
    CHECK_MSG(!strstr(s, "Not shown: workload PSS"), "the PSS line is not drawn");
    check_chart(page, "memory", "<polyline", 2);
    free(s);
    free(page);
}

/* Add n entries to the fixture's series.processes: pid 100 + k, "worker<k>",
 * each growing by k MiB a reading. */
static void add_process_series(const char *dir, int n) {
    char path[700];
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_t *report = report_load(dir);
    if (!report)
        exit(1);
    json_t *list = json_array();
    for (int k = 0; k < n; k++) {
        json_t *t = json_array(), *rss = json_array();
        for (int i = 0; i < 20; i++) {
            json_array_append_new(t, json_real(0.1 * i));
            json_array_append_new(rss, json_real(10e6 + 1048576.0 * k * i));
        }
        char comm[16];
        snprintf(comm, sizeof comm, "worker%d", k);
        json_array_append_new(list, json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:o, s:o, s:o}", "metric",
                                              "process_rss_bytes", "pid", 100 + k, "comm", comm, "unit", "bytes",
                                              "interval_ms", 100, "readings_per_point", 1, "t_s", t, "mean", rss,
                                              "max", json_deep_copy(rss)));
    }
    json_object_set_new(json_object_get(report, "series"), "processes", list);
    if (json_dump_file(report, path, JSON_INDENT(2)) != 0)
        exit(1);
    json_decref(report);
}

/* Each process of the tree gets a line on the memory chart when there are
 * several, up to 8; the others are named in the note.  One process alone
 * is the tree's line already. */
static void test_process_lines(void) {
    const char *dir = tmpdir_new("html-processes");
    write_fixture(dir, 40);
    add_process_series(dir, 3);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    char *s = section_of(page, "memory");
    CHECK_EQ_I(count_of(s, "<polyline"), 4); /* the tree and three processes */
    CHECK_STR_HAS(s, "pid 102 (worker2) RSS");
    free(s);
    free(page);

    write_fixture(dir, 40);
    add_process_series(dir, 11);
    page = export_page(dir);
    s = section_of(page, "memory");
    CHECK_EQ_I(count_of(s, "<polyline"), 9);
    CHECK_STR_HAS(s, "pid 107 (worker7) RSS");
    CHECK(!strstr(s, "pid 108"));
    CHECK_STR_HAS(s, "3 more processes: their series are in report.json (series.processes)");
    free(s);
    free(page);

    write_fixture(dir, 40);
    add_process_series(dir, 1);
    page = export_page(dir);
    s = section_of(page, "memory");
    CHECK_EQ_I(count_of(s, "<polyline"), 1);
    free(s);
    free(page);
}

/* Thousands of steps are drawn in groups and their boundaries thinned. */
static void test_many_steps(void) {
    const char *dir = tmpdir_new("html-many");
    write_fixture(dir, 5000);
    char *page = export_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    char *s = section_of(page, "step-time");
    int rects = count_of(s, "<rect");
    CHECK_MSG(rects >= 500 && rects <= 610, "step-time bars: %d", rects);
    CHECK_STR_HAS(s, "Each bar is 9 consecutive steps");
    free(s);
    s = section_of(page, "memory");
    int lines = count_of(s, "stroke-opacity=\"0.35\"");
    CHECK_MSG(lines >= 50 && lines <= 120, "step boundaries: %d", lines);
    CHECK_STR_HAS(s, "step start (1 in 50)");
    free(s);
    CHECK_MSG(strlen(page) < 2000000, "page of %zu bytes", strlen(page));
    free(page);
}

static void test_units_and_ticks(void) {
    char buf[64];
    html_fmt_duration(buf, sizeof buf, 0.0123);
    CHECK(strcmp(buf, "12.3 ms") == 0);
    html_fmt_duration(buf, sizeof buf, 12.2e-6);
    CHECK(strcmp(buf, "12.2 µs") == 0);
    html_fmt_duration(buf, sizeof buf, 125);
    CHECK(strcmp(buf, "2 min 05 s") == 0);
    html_fmt_duration(buf, sizeof buf, NAN);
    CHECK(strcmp(buf, "–") == 0);
    html_fmt_bytes(buf, sizeof buf, 1.5 * 1024 * 1024 * 1024);
    CHECK(strcmp(buf, "1.5 GiB") == 0);
    html_fmt_bytes(buf, sizeof buf, 33.9 * 1024 * 1024);
    CHECK(strcmp(buf, "33.9 MiB") == 0);
    double lo, hi, step;
    int n = svg_nice_ticks(0, 97, 6, &lo, &hi, &step);
    CHECK_NEAR(lo, 0, 1e-12);
    CHECK_NEAR(hi, 100, 1e-12);
    CHECK_NEAR(step, 20, 1e-12);
    CHECK_EQ_I(n, 6);
    n = svg_nice_ticks(0.0031, 0.0123, 6, &lo, &hi, &step);
    CHECK_NEAR(step, 0.002, 1e-12);
    CHECK(lo <= 0.0031 && hi >= 0.0123 && n >= 4 && n <= 8);
    n = svg_nice_ticks(42, 42, 6, &lo, &hi, &step); /* one value still gets an axis */
    CHECK(lo < 42 && hi > 42 && n >= 2);
}

int main(void) {
    RUN_TEST(test_units_and_ticks);
    RUN_TEST(test_real_run);
    RUN_TEST(test_no_steps_no_sampler);
    RUN_TEST(test_hints_in_python);
    RUN_TEST(test_bottleneck_evidence_glosses);
    RUN_TEST(test_escaping_and_reasons);
    RUN_TEST(test_many_steps);
    RUN_TEST(test_process_lines);
    RUN_TEST(test_pss_line);
    return check_report();
}
