/*
 * test_html.c - report.html: the page `stepscope run` writes for a real
 * run, and pages rendered from report models built in memory (records'
 * tables and a sampler result made here), has every chart with drawn
 * marks, titled axes with units, escaped text, the reason for each chart
 * without data, and no reference to anything on the network.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/torch_memory.h"
#include "check.h"
#include "render/exporters.h"
#include "render/html_units.h"
#include "render/render.h"
#include "render/svg_chart.h"
#include "report/report.h"
#include "sampler/sampler.h"
#include "support.h"

#define WARMUP_FILL "fill=\"#f28e2b\""
#define STEADY_FILL "fill=\"#4e79a7\""
#define STEADY_P90_FILL "fill=\"#b4c8de\""

/* DIR/report.html as `stepscope run` wrote it, in memory (caller frees);
 * NULL when it cannot be read. */
static char *run_page(const char *dir) {
    char path[700];
    snprintf(path, sizeof path, "%s/report.html", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            buf = realloc(buf, cap);
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* report.html of a model, in memory (caller frees); NULL when export failed. */
static char *render_page(const struct sps_report *rep) {
    char err[1024];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = sps__export_html(rep, f, err, sizeof err);
    fclose(f);
    if (rc != 0) {
        fprintf(stderr, "export: %s\n", err);
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

/* The GPU part of a page made on a machine without a GPU: one line with
 * the reason above the machine's charts, and no chart box or note among
 * them repeating it (the energy table has its own GPU row). */
static void check_no_gpu_line(const char *page, const char *why_escaped) {
    const char *line = strstr(page, "<section id=\"gpu\" class=\"line\"><p><strong>No GPU</strong>");
    CHECK_MSG(line != NULL, "no line says there is no GPU");
    if (!line)
        return;
    char *g = section_of(page, "gpu");
    CHECK_MSG(g[0] == '\0', "a GPU chart section besides the line");
    free(g);
    CHECK(strstr(page, "<section id=\"memory\">") > line);
    CHECK_MSG(count_of(line, why_escaped) == 1, "the GPU reason appears %d times", count_of(line, why_escaped));
    CHECK(strstr(page, "GPU utilisation over time") == NULL);
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
    char *page = run_page(dir);
    CHECK(page != NULL);
    if (!page)
        return;
    check_self_contained(page);

    /* wide tables stay readable: no cell keeps a whole column from
     * wrapping between words (only numbers with their units stay on one
     * line), sentences in cells wrap, and a table wider than its section
     * scrolls inside it; html_layout_test.sh measures it in a browser */
    const char *cells = strstr(page, "th,td{");
    CHECK(cells != NULL);
    if (cells) {
        char rule[256];
        const char *end = strchr(cells, '}');
        snprintf(rule, sizeof rule, "%.*s", end ? (int)(end - cells) : 0, cells);
        CHECK_MSG(!strstr(rule, "nowrap"), "every cell: %s", rule);
        CHECK_MSG(!strstr(rule, "anywhere"), "every cell: %s", rule);
    }
    CHECK_STR_HAS(page, "td.num{white-space:nowrap}");
    CHECK_STR_HAS(page, "th.text,td.text{text-align:left;min-width:16em}");
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
    /* the RSS sum is drawn; the PSS line is drawn too when the run lasted
     * long enough for its budget to pay for a read (a read of a 20 MiB
     * tree is paid for after 2 s, which a busy machine can reach), and
     * otherwise the chart says why there is none */
    CHECK_STR_HAS(s, ">workload RSS summed over processes</text>");
    CHECK_MSG(strstr(s, "Not shown: workload PSS: ") || strstr(s, ">workload PSS</text>"),
              "the memory chart neither draws the PSS nor says why not");
    CHECK_STR_HAS(s, "step start");
    CHECK_MSG(count_of(s, "stroke-opacity=\"0.35\"") == 30, "step boundaries: %d",
              count_of(s, "stroke-opacity=\"0.35\""));
    free(s);
    check_chart(page, "cpu", "<polyline", 1);
    s = section_of(page, "cpu");
    CHECK_STR_HAS(s, "CPU utilisation (%)");
    free(s);

    /* GPU and sensors depend on the machine: without a GPU one line says
     * why, with one a chart or the reason */
    json_t *report = report_load(dir);
    if (report && json_array_size(json_object_get(report, "gpus")) == 0) {
        char why[2048];
        html_escape(why, sizeof why, json_string_value(json_object_get(report, "gpus_unavailable_reason")));
        check_no_gpu_line(page, why);
    } else {
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
    CHECK_STR_HAS(s, "<tr><td>step</td><td class=\"kind\">step</td><td class=\"num\">30</td>");
    CHECK_STR_HAS(s, "<tr><td>a</td><td class=\"kind\">zone</td><td class=\"num\">30</td>");
    CHECK_STR_HAS(s, "<tr><td>b</td><td class=\"kind\">zone</td><td class=\"num\">30</td>");
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
    char *page = run_page(dir);
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
    check_no_gpu_line(page, "sampling was turned off (--no-sample))");
    CHECK_STR_HAS(page, "no sampler ran");
    CHECK_STR_HAS(page, "<tr><td>lonely</td>");
    CHECK_EQ_I(count_of(page, "<svg"), 0);
    free(page);
}

#define NASTY_ZONE "x<&\">y"
#define NASTY_ESCAPED "x&lt;&amp;&quot;&gt;y"
#define RAPL_WHY "no RAPL domains under /sys/class/powercap & <fixture>"
#define NVML_WHY "fake <driver> & \"missing\""
#define T0_NS 1000000000ull /* the run's start on the monotonic clock */

/* The fixture's names: columns of every step row. */
enum { COL_NASTY, COL_COMPUTE, COL_STEP, COL_LOSS, NCOLS };

/* Step i of the fixture: 9 ms for the two warm-up steps, then 2, 2.5 and
 * 3 ms in turn. */
static double fixture_duration(size_t i) {
    return i < 2 ? 0.009 : 0.002 + 0.001 * (double)(i % 3) / 2;
}

/* A run of one process and nsteps rows (the first two warm-up), each
 * owning self time of a zone whose name needs escaping and of "compute",
 * and a loss value; the step name has no statistics, so p50 and p90 come
 * from the rows.  Everything on the heap, as sps__run_free expects. */
static void fixture_run(struct sps_run *run, size_t nsteps) {
    memset(run, 0, sizeof *run);
    run->nprocs = 1;
    run->procs = calloc(1, sizeof *run->procs);
    struct sps_process_data *p = &run->procs[0];
    p->pid = p->ppid = 1;
    p->rank = p->local_rank = p->world_size = -1;
    p->path = strdup("fixture.sps");
    p->argc = 2;
    p->argv = calloc(3, sizeof *p->argv);
    p->argv[0] = strdup("/opt/<train>");
    p->argv[1] = strdup("--tag=a&b");
    p->start_ns = T0_NS;
    p->closed = 1;
    run->nnames = NCOLS;
    run->names = calloc(NCOLS, sizeof *run->names);
    static const struct {
        const char *name;
        uint32_t kind;
    } names[NCOLS] = {{NASTY_ZONE, SPS_KIND_ZONE}, {"compute", SPS_KIND_ZONE}, {"train_step", SPS_KIND_STEP},
                      {"loss", SPS_KIND_VALUE}};
    for (size_t k = 0; k < NCOLS; k++) {
        snprintf(run->names[k].name, sizeof run->names[k].name, "%s", names[k].name);
        run->names[k].kind = run->names[k].agg.kind = names[k].kind;
    }
    struct sps_stats *z = &run->names[COL_NASTY].stats;
    z->count = nsteps;
    z->total_s = z->self_s = 0.1;
    z->mean_s = z->p50_s = 0.001;
    z->p90_s = 0.002;
    z->p99_s = 0.003;
    run->start_ns = T0_NS;
    run->nsteps = nsteps;
    run->steps_recorded = nsteps;
    run->warmup_steps = nsteps < 2 ? nsteps : 2;
    run->events_recorded = 100;
    run->steps = calloc(nsteps ? nsteps : 1, sizeof *run->steps);
    for (size_t i = 0; i < nsteps; i++) {
        struct sps_step_row *r = &run->steps[i];
        double dur = fixture_duration(i);
        r->index = i;
        r->tid = 1;
        r->name = COL_STEP;
        r->start_ns = T0_NS + 10000000ull + 4000000ull * i;
        r->end_ns = r->start_ns + (uint64_t)(dur * 1e9);
        r->warmup = i < 2;
        r->by_name = malloc(NCOLS * sizeof *r->by_name);
        r->by_name[COL_NASTY] = dur * 0.6;
        r->by_name[COL_COMPUTE] = dur * 0.3;
        r->by_name[COL_STEP] = NAN;
        r->by_name[COL_LOSS] = 2.0 / (1.0 + (double)i);
    }
}

/* A sampler result: the tree's RSS sum read 20 times (50 MB growing by
 * 1 MB), RAPL and every GPU source unavailable with reasons that need
 * escaping. */
static struct sps__sampler_result *fixture_sampler(void) {
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    r->interval_ms = r->machine_interval_ms = 100;
    r->tree_pid = 1;
    r->started_ns = (int64_t)T0_NS;
    r->thread_cpu_seconds = 0.002;
    r->thread_ns_total = 500000000;
    r->ticks = 20;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        sps__series_init(&r->host[i], SPS_SAMPLER_DEFAULT_POINTS);
    for (int i = 0; i < 20; i++)
        sps__series_add(&r->host[SPS_M_WORKLOAD_RSS_BYTES], (int64_t)T0_NS + 100000000ll * i, 50e6 + 1e6 * i);
    r->sources[SPS_SOURCE_PROC].tried = r->sources[SPS_SOURCE_PROC].available = 1;
    r->sources[SPS_SOURCE_RAPL].tried = 1;
    snprintf(r->sources[SPS_SOURCE_RAPL].reason, sizeof r->sources[0].reason, "%s", RAPL_WHY);
    r->sources[SPS_SOURCE_NVML].tried = 1;
    snprintf(r->sources[SPS_SOURCE_NVML].reason, sizeof r->sources[0].reason, "%s", NVML_WHY);
    snprintf(r->sources[SPS_SOURCE_DRM].reason, sizeof r->sources[0].reason, "no drm");
    snprintf(r->sources[SPS_SOURCE_NVIDIA_SMI].reason, sizeof r->sources[0].reason, "no nvidia-smi");
    return r;
}

/* The fixture as a standalone report: built as sps__report_build builds
 * every model (the analysis computed once), the sampler result borrowed
 * (free it with fixture_free). */
static void fixture_build(struct sps_report *rep, struct sps__sampler_result *r, size_t nsteps) {
    struct sps_run run;
    fixture_run(&run, nsteps);
    struct sps_run_info info = {0};
    info.have_times = 1;
    info.wall_s = 0.5;
    info.user_s = 0.4;
    info.sys_s = 0.05;
    info.have_rss = 1;
    info.peak_rss_bytes = 70000000;
    info.rss_scope = "this process";
    info.start_realtime_ns = 1700000000000000000ll;
    info.start_mono_ns = T0_NS;
    info.standalone_reason = "the recording process itself (sps_report_write)";
    info.sampler = r;
    info.cpu_count = 2;
    CHECK_EQ_I(sps__report_build(rep, &run, &info), 0);
}

static void fixture_free(struct sps_report *rep, struct sps__sampler_result *r) {
    sps__report_free(rep);
    sps__sampler_result_free(r);
}

/* The empty charts' hints speak the run's language: a Python run (the
 * analysis's face) is told about `with stepscope.step():`, never
 * SPS_STEP(). */
static void test_hints_in_python(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 0);
    rep.analysis.bottleneck.face = SPS_BN_FACE_PYTHON;
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (page) {
        check_empty(page, "step-time",
                    "No step was recorded: the program never ended a `with stepscope.step():` block");
        char *s = section_of(page, "step-time");
        CHECK(strstr(s, "SPS_STEP") == NULL);
        free(s);
        s = section_of(page, "phases");
        CHECK(strstr(s, "SPS_STEP") == NULL);
        free(s);
    }
    free(page);
    fixture_free(&rep, r);
}

/* The bottleneck's evidence table says how the run delay and the CPU wait
 * differ: two percentages read alike by name alone. */
static void test_bottleneck_evidence_glosses(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 0);
    rep.analysis.bottleneck.evidence.workload_run_delay_mean_percent = 49.0;
    rep.analysis.bottleneck.evidence.workload_cpu_wait_percent = 50.0;
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (page) {
        CHECK_STR_HAS(page, "<tr><td>workload_run_delay_mean_percent<br><small>time runnable but not running, per "
                            "wall second (percent of one CPU)</small></td><td>49.0%</td>");
        CHECK_STR_HAS(page, "<tr><td>workload_cpu_wait_percent<br><small>of the time the workload was ready to run, "
                            "the share it waited for a CPU: delay / (delay + CPU time)</small></td><td>50.0%</td>");
    }
    free(page);
    fixture_free(&rep, r);
}

static void test_escaping_and_reasons(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 40);
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (!page) {
        fixture_free(&rep, r);
        return;
    }
    check_self_contained(page);
    CHECK_MSG(!strstr(page, NASTY_ZONE), "the zone name is not escaped");
    CHECK_STR_HAS(page, "<tr><td>" NASTY_ESCAPED "</td>");
    CHECK_MSG(!strstr(page, "<train>"), "the command is not escaped");
    CHECK_STR_HAS(page, "/opt/&lt;train&gt; --tag=a&amp;b");
    CHECK_STR_HAS(page, "<title>stepscope: /opt/&lt;train&gt;</title>");
    CHECK_STR_HAS(page, "the process wrote this report itself");
    CHECK_STR_HAS(page, "(report written by the recording process itself (sps_report_write))");
    /* the header's figures in the summary's units */
    CHECK_STR_HAS(page, "<dt>Wall time</dt><dd>500 ms</dd>");
    CHECK_STR_HAS(page, "<dt>Peak RSS</dt><dd>66.8 MiB<small>this process</small>");

    check_chart(page, "step-time", "<rect", 40);
    char *s = section_of(page, "step-time");
    CHECK_STR_HAS(s, "step time (ms)");
    /* the step name has no statistics: nearest rank over the rows */
    CHECK_STR_HAS(s, ">p50 2.50 ms</text>");
    CHECK_STR_HAS(s, ">p90 3.00 ms</text>");
    CHECK_STR_HAS(s, "p50 and p90 are taken over the rows drawn");
    CHECK_EQ_I(count_of(s, WARMUP_FILL), 3); /* the legend and two bars */
    CHECK(strstr(s, "not drawn") == NULL);   /* every step recorded has its row */
    free(s);
    check_chart(page, "phases", "<rect", 80);
    s = section_of(page, "phases");
    CHECK_STR_HAS(s, ">" NASTY_ESCAPED "</text>");
    CHECK_STR_HAS(s, ">compute</text>");
    free(s);
    /* the loss against the step, beside the step time */
    check_chart(page, "values", "<polyline", 1);
    s = section_of(page, "values");
    CHECK_STR_HAS(s, ">loss</text>");
    CHECK_STR_HAS(s, "step (row of the step table)");
    free(s);
    CHECK(strstr(page, "<section id=\"values\">") > strstr(page, "<section id=\"step-time\">"));
    CHECK(strstr(page, "<section id=\"values\">") < strstr(page, "<section id=\"phases\">"));
    check_chart(page, "memory", "<polyline", 1);
    s = section_of(page, "memory");
    CHECK_STR_HAS(s, "memory (MiB)");
    CHECK_STR_HAS(s, "warm-up steps");
    /* a metric with no readings: said, not drawn as 0 */
    CHECK_STR_HAS(s, "Not shown: workload PSS: the source read no value for it during the run; system memory used");
    free(s);
    check_empty(page, "power", "no RAPL domains under /sys/class/powercap &amp; &lt;fixture&gt;");
    /* no GPU: one line with the chain's reasons, said once */
    check_no_gpu_line(page, "nvml: fake &lt;driver&gt; &amp; &quot;missing&quot;; drm: no drm");
    free(page);
    fixture_free(&rep, r);
}

/* The fixture with the tree's PSS: a line of its own beside the RSS sum,
 * and the Peak PSS fact. */
static void test_pss_line(void) {
    struct sps__sampler_result *r = fixture_sampler();
    for (int i = 0; i < 4; i++)
        sps__series_add(&r->host[SPS_M_WORKLOAD_PSS_BYTES], (int64_t)T0_NS + 500000000ll * i, 20e6 + 1e5 * i);
    sps__series_add(&r->host[SPS_M_WORKLOAD_PSS_PEAK_BYTES], (int64_t)T0_NS, 20.3e6);
    struct sps_report rep;
    fixture_build(&rep, r, 20);
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (page) {
        CHECK_STR_HAS(page, "<dt>Peak PSS</dt><dd>19.4 MiB<small>");
        char *s = section_of(page, "memory");
        CHECK_STR_HAS(s, ">workload PSS</text>");
        CHECK_STR_HAS(s, ">workload RSS summed over processes</text>");
        CHECK_MSG(!strstr(s, "Not shown: workload PSS"), "the PSS line is not drawn");
        check_chart(page, "memory", "<polyline", 2);
        free(s);
    }
    free(page);
    fixture_free(&rep, r);
}

/* Give process 0 one thread whose values ring holds n events of the
 * MemoryTracker timeline's value, each timed (depth 0xffff) and zeroed;
 * returns the events for the caller to fill (value bits in a, times). */
static struct sps_event *fixture_timeline(struct sps_report *rep, size_t n) {
    struct sps_process_data *p = &rep->run.procs[0];
    p->nnames = 1;
    p->names = calloc(1, sizeof *p->names);
    snprintf(p->names[0].name, sizeof p->names[0].name, "%s", SPS_TORCH_TIMELINE_VALUE);
    p->names[0].kind = SPS_KIND_VALUE;
    p->nthreads = 1;
    p->threads = calloc(1, sizeof *p->threads);
    struct sps_thread_data *th = &p->threads[0];
    th->events[SPS_RING_VALUES] = calloc(n, sizeof(struct sps_event));
    th->nevents[SPS_RING_VALUES] = n;
    for (size_t i = 0; i < n; i++) {
        th->events[SPS_RING_VALUES][i].name = 1;
        th->events[SPS_RING_VALUES][i].kind = SPS_KIND_VALUE;
        th->events[SPS_RING_VALUES][i].depth = 0xffff;
    }
    return th->events[SPS_RING_VALUES];
}

/* One timeline event: value bytes at t_ns. */
static void timeline_at(struct sps_event *e, uint64_t t_ns, double value) {
    e->start_ns = e->end_ns = t_ns;
    memcpy(&e->a, &value, sizeof e->a);
}

/* stepscope.MemoryTracker's allocation timeline (values recorded at their
 * own times): a chart of its own after the memory chart, one line per
 * process, its points where the values' times put them; none without. */
static void test_torch_memory_timeline(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 20);
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (page)
        CHECK_MSG(!strstr(page, "<section id=\"torch-memory-timeline\">"), "a chart of a timeline nobody recorded");
    free(page);
    static const double mib[] = {0, 4, 20, 16, 18};
    struct sps_event *ev = fixture_timeline(&rep, 5);
    for (size_t i = 0; i < 5; i++) /* recorded out of time order: drawn in it */
        timeline_at(&ev[(i + 2) % 5], T0_NS + 100000000ull * (i + 1), mib[i] * 1048576.0);
    page = render_page(&rep);
    CHECK(page != NULL);
    if (page) {
        check_self_contained(page);
        check_chart(page, "torch-memory-timeline", "<polyline", 1);
        char *sec = section_of(page, "torch-memory-timeline");
        CHECK_STR_HAS(sec, "GPU memory allocated by torch over time");
        CHECK_STR_HAS(sec, ">pid 1</text>");
        CHECK_STR_HAS(sec, "allocated (MiB)");
        /* the line's points: x 0.1 .. 0.5 s (time since the run started),
         * y in MiB, in time order whatever the ring's order */
        const char *pl = strstr(sec, "<polyline");
        const char *pts = pl ? strstr(pl, "points=\"") : NULL;
        CHECK(pts != NULL);
        double xs[5], ys[5];
        int n = 0;
        for (const char *q = pts ? pts + 8 : ""; n < 5 && sscanf(q, "%lf,%lf", &xs[n], &ys[n]) == 2; n++)
            q = strchr(q, ' ') ? strchr(q, ' ') + 1 : "";
        CHECK_EQ_I(n, 5);
        for (int i = 1; i < n; i++)
            CHECK_MSG(xs[i] > xs[i - 1], "point %d is not right of point %d", i, i - 1);
        CHECK_MSG(n == 5 && ys[2] < ys[4] && ys[4] < ys[3] && ys[3] < ys[1] && ys[1] < ys[0],
                  "the y order of 0, 4, 20, 16, 18 MiB (svg y grows downwards)");
        const char *mem = strstr(page, "<section id=\"memory\">"), *tm = strstr(page, "<section id=\"torch-memory-timeline\">");
        const char *cpu = strstr(page, "<section id=\"cpu\">");
        CHECK_MSG(mem && tm && cpu && mem < tm && tm < cpu, "the chart follows the memory chart");
        free(sec);
    }
    free(page);
    fixture_free(&rep, r);
}

/* A MemoryTracker timeline longer than the chart's points: the line
 * keeps each point's largest reading, so a 512 MiB allocation freed at
 * once among 1 MiB ones still reaches 512 MiB (averaged with its
 * neighbours it was drawn at about 256 MiB). */
static void test_torch_memory_timeline_keeps_peaks(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 20);
    enum { N = 9000 };
    struct sps_event *ev = fixture_timeline(&rep, N);
    for (size_t i = 0; i < N; i++) /* 1 MiB after each alloc, 0 after each free; one 512 MiB alloc */
        timeline_at(&ev[i], T0_NS + 10000ull * (i + 1), (i == N / 2 ? 512.0 : (double)(i % 2)) * 1048576.0);
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (page) {
        char *sec = section_of(page, "torch-memory-timeline");
        CHECK_STR_HAS(sec, "GPU memory allocated by torch over time");
        /* the y axis reaches the peak: ticks of 200 MiB up to 600 (the means reached about 256 MiB: up to 300) */
        CHECK_STR_HAS(sec, "dominant-baseline=\"middle\">600</text>");
        CHECK_STR_HAS(sec, "Each line is the largest (so that no peak is averaged away) of the readings");
        free(sec);
    }
    free(page);
    fixture_free(&rep, r);
}

/* A run with torch.cuda's memory per step and a MemoryTracker timeline:
 * both charts, each a section with an id of its own (one id for both was
 * invalid HTML and made #torch-memory name either). */
static void test_torch_memory_sections_have_ids_of_their_own(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 20);
    snprintf(rep.run.names[COL_LOSS].name, sizeof rep.run.names[COL_LOSS].name, "%s", SPS_TORCH_ALLOCATED);
    struct sps_event *ev = fixture_timeline(&rep, 3);
    for (size_t i = 0; i < 3; i++)
        timeline_at(&ev[i], T0_NS + 100000000ull * (i + 1), (double)(i + 1) * 1048576.0);
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (page) {
        CHECK_EQ_I(count_of(page, "<section id=\"torch-memory\""), 1);
        CHECK_EQ_I(count_of(page, "<section id=\"torch-memory-timeline\""), 1);
        char *steps = section_of(page, "torch-memory"), *timeline = section_of(page, "torch-memory-timeline");
        CHECK_STR_HAS(steps, "GPU memory per step (torch.cuda)");
        CHECK_STR_HAS(timeline, "GPU memory allocated by torch over time");
        free(steps);
        free(timeline);
    }
    free(page);
    fixture_free(&rep, r);
}

/* The per-step chart of torch.cuda memory: each step's peak bar stands in
 * its step, [i, i + 1] less the gap, as the step time chart's bars do, so
 * the last step's bar is as wide as the others (centred on the step's end
 * it was cut in half at the axis's end). */
static void test_torch_memory_step_bars(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 20);
    snprintf(rep.run.names[COL_LOSS].name, sizeof rep.run.names[COL_LOSS].name, "%s", SPS_TORCH_ALLOCATED);
    snprintf(rep.run.names[COL_COMPUTE].name, sizeof rep.run.names[COL_COMPUTE].name, "%s",
             SPS_TORCH_PEAK_ALLOCATED);
    rep.run.names[COL_COMPUTE].kind = SPS_KIND_VALUE;
    for (size_t i = 0; i < rep.run.nsteps; i++)
        rep.run.steps[i].by_name[COL_COMPUTE] = 4.0; /* above every step's end (2 / (1 + i)) */
    char *page = render_page(&rep);
    CHECK(page != NULL);
    char *sec = page ? section_of(page, "torch-memory") : NULL;
    double width[20];
    int n = 0;
    const char *first = sec ? strstr(sec, "<rect x=") : NULL; /* the legend's swatch, then the bars */
    for (const char *q = first ? strstr(first + 1, "<rect x=") : NULL; q && n < 20; q = strstr(q + 1, "<rect x=")) {
        const char *w = strstr(q, "width=\"");
        if (w && sscanf(w, "width=\"%lf\"", &width[n]) == 1)
            n++;
    }
    CHECK_EQ_I(n, 20);
    for (int i = 1; i < n; i++)
        CHECK_MSG(fabs(width[i] - width[0]) < 0.02, "bar %d is %.2f px wide, bar 0 %.2f", i, width[i], width[0]);
    free(sec);
    free(page);
    fixture_free(&rep, r);
}

/* n processes of the tree in r: pid 100 + k, "worker<k>", each growing by
 * k MiB a reading. */
static void add_process_series(struct sps__sampler_result *r, int n) {
    for (int k = 0; k < n; k++) {
        struct sps__process_series *p = &r->process[r->nprocesses++];
        p->pid = 100 + k;
        snprintf(p->comm, sizeof p->comm, "worker%d", k);
        p->first_seen_ns = (int64_t)T0_NS;
        sps__series_init(&p->rss_bytes, SPS_SAMPLER_DEFAULT_POINTS);
        for (int i = 0; i < 20; i++)
            sps__series_add(&p->rss_bytes, (int64_t)T0_NS + 100000000ll * i, 10e6 + 1048576.0 * k * i);
    }
}

/* The memory chart of the fixture with n process series (caller frees). */
static char *memory_with_processes(int n) {
    struct sps__sampler_result *r = fixture_sampler();
    add_process_series(r, n);
    struct sps_report rep;
    fixture_build(&rep, r, 40);
    char *page = render_page(&rep);
    char *s = section_of(page ? page : "", "memory");
    free(page);
    fixture_free(&rep, r);
    return s;
}

/* Each process of the tree gets a line on the memory chart when there are
 * several, up to 8; the others are named in the note.  One process alone
 * is the tree's line already. */
static void test_process_lines(void) {
    char *s = memory_with_processes(3);
    CHECK_EQ_I(count_of(s, "<polyline"), 4); /* the tree and three processes */
    CHECK_STR_HAS(s, "pid 102 (worker2) RSS");
    free(s);

    s = memory_with_processes(11);
    CHECK_EQ_I(count_of(s, "<polyline"), 9);
    CHECK_STR_HAS(s, "pid 107 (worker7) RSS");
    CHECK(!strstr(s, "pid 108"));
    CHECK_STR_HAS(s, "3 more processes: their series are in report.json (series.processes)");
    free(s);

    s = memory_with_processes(1);
    CHECK_EQ_I(count_of(s, "<polyline"), 1);
    free(s);
}

/* The heights of the rects of one fill in an SVG section, into h (at most
 * max); returns how many. */
static size_t rect_heights(const char *svg, const char *fill, double *h, size_t max) {
    size_t n = 0;
    for (const char *p = strstr(svg, "<rect"); p && n < max; p = strstr(p + 1, "<rect")) {
        const char *end = strchr(p, '>');
        const char *f = strstr(p, fill);
        const char *height = strstr(p, "height=\"");
        if (f && end && f < end && height && height < end)
            h[n++] = atof(height + 8);
    }
    return n;
}

/* Thousands of steps are drawn in groups, each bar its group's median with
 * its p90 above (not the group's longest step, which a spike a group
 * would turn into a wall of spikes), and their boundaries thinned. */
static void test_many_steps(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 5000);
    /* every 9th step a 40 ms spike: one in each group of 9 */
    for (size_t i = 2; i < rep.run.nsteps; i++) {
        struct sps_step_row *row = &rep.run.steps[i];
        row->end_ns = row->start_ns + (i % 9 == 4 ? 40000000ull : 2000000ull);
    }
    char *page = render_page(&rep);
    CHECK(page != NULL);
    if (!page) {
        fixture_free(&rep, r);
        return;
    }
    char *s = section_of(page, "step-time");
    CHECK_STR_HAS(s, "Each bar is 9 consecutive steps: its solid part reaches their median and its light part "
                     "their 90th percentile");
    CHECK_STR_HAS(s, "median of a group");
    CHECK_STR_HAS(s, "p90 of a group");
    static double h[1000];
    size_t medians = rect_heights(s, STEADY_FILL, h, 1000);
    CHECK_MSG(medians >= 500 && medians <= 560, "median bars: %zu", medians);
    /* a 2 ms median on an axis up to 40 ms: under a tenth of the plot */
    double tallest = 0;
    for (size_t i = 1; i < medians; i++) /* h[0] is the legend's swatch */
        tallest = fmax(tallest, h[i]);
    CHECK_MSG(tallest > 0 && tallest < 30, "the tallest median bar is %.1f px: a bucket's maximum, not its median",
              tallest);
    size_t p90s = rect_heights(s, STEADY_P90_FILL, h, 1000);
    CHECK_MSG(p90s >= 500, "p90 parts: %zu", p90s);
    free(s);
    s = section_of(page, "memory");
    int lines = count_of(s, "stroke-opacity=\"0.35\"");
    CHECK_MSG(lines >= 50 && lines <= 120, "step boundaries: %d", lines);
    CHECK_STR_HAS(s, "step start (1 in 50)");
    free(s);
    s = section_of(page, "values");
    CHECK_STR_HAS(s, "Each point is the mean over 9 consecutive steps.");
    free(s);
    CHECK_MSG(strlen(page) < 2000000, "page of %zu bytes", strlen(page));
    free(page);
    fixture_free(&rep, r);
}

/* A step slower than every group's p90 does not stretch the axis: the
 * note gives it instead. */
static void test_spike_above_axis(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 6000); /* groups of 10: a group's p90 is its second longest step */
    for (size_t i = 0; i < rep.run.nsteps; i++) {
        struct sps_step_row *row = &rep.run.steps[i];
        row->end_ns = row->start_ns + (i == 4321 ? 40000000ull : 2000000ull);
    }
    char *page = render_page(&rep);
    char *s = section_of(page ? page : "", "step-time");
    CHECK_STR_HAS(s, "Each bar is 10 consecutive steps");
    CHECK_STR_HAS(s, "The longest step, 40.0 ms, is above the p90 of every group, and off the axis.");
    CHECK(strstr(s, "step time (ms)") != NULL);
    free(s);
    free(page);
    fixture_free(&rep, r);
}

/* A step ring that kept the latest rows: the chart says the earliest
 * steps are not drawn. */
static void test_dropped_rows(void) {
    struct sps__sampler_result *r = fixture_sampler();
    struct sps_report rep;
    fixture_build(&rep, r, 40);
    for (size_t i = 0; i < rep.run.nsteps; i++)
        rep.run.steps[i].index += 1000;
    rep.run.steps_recorded += 1000;
    char *page = render_page(&rep);
    char *s = section_of(page ? page : "", "step-time");
    CHECK_STR_HAS(s, "The step ring dropped the earliest rows: the first row drawn is step 1000 of its thread, so "
                     "steps 0 to 999 are not drawn (1040 steps recorded, 40 kept).");
    free(s);
    free(page);
    fixture_free(&rep, r);
}

static void test_units_and_ticks(void) {
    char buf[64];
    /* the summary's formatters, signed, and unknown as a dash */
    CHECK(strcmp(html_fmt_duration(buf, sizeof buf, 0.0123), "12.3 ms") == 0);
    CHECK(strcmp(html_fmt_duration(buf, sizeof buf, 12.2e-6), "12.2 us") == 0);
    CHECK(strcmp(html_fmt_duration(buf, sizeof buf, 125), "125 s") == 0);
    CHECK(strcmp(html_fmt_duration(buf, sizeof buf, NAN), "–") == 0);
    CHECK(strcmp(html_fmt_bytes(buf, sizeof buf, 1.5 * 1024 * 1024 * 1024), "1.5 GiB") == 0);
    CHECK(strcmp(html_fmt_bytes(buf, sizeof buf, 33.9 * 1024 * 1024), "33.9 MiB") == 0);
    CHECK(strcmp(html_fmt_bytes(buf, sizeof buf, -3 * 1024 * 1024), "-3.0 MiB") == 0);
    CHECK(strcmp(html_fmt_bytes(buf, sizeof buf, 280000), "273.4 KiB") == 0);
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
    /* figures from a report.json as far apart as doubles go: the span
     * overflowed to inf and the tick count was NaN cast to int (UBSan) */
    n = svg_nice_ticks(-1.7e308, 1.7e308, 6, &lo, &hi, &step);
    CHECK(isfinite(lo) && isfinite(hi) && isfinite(step) && step > 0 && n >= 2 && n <= 12);
    n = svg_nice_ticks(1.7e308, 1.7e308, 6, &lo, &hi, &step);
    CHECK(isfinite(lo) && isfinite(hi) && lo < hi && n >= 2 && n <= 12);
}

/* A page that stresses the tables' layout (html_layout_test.sh measures
 * it in a browser): sentences in the cells of every table that has a
 * column for them, long single-word names, a process in each row of the
 * leaks table, and every kind of recording in the overhead table. */
static int write_stress_page(const char *path) {
    static const char *const long_why =
        "the GPU chain found nothing: nvml: libnvidia-ml.so.1 not found (no NVIDIA driver); drm: no GPU with "
        "utilisation or VRAM files under /sys/class/drm; nvidia-smi: not found on PATH";
    struct sps__sampler_result *r = fixture_sampler();
    add_process_series(r, 12);
    for (int k = 0; k < 12; k++)
        snprintf(r->process[k].comm, sizeof r->process[k].comm, "pt_data_worker%d", k);
    struct sps_report rep;
    fixture_build(&rep, r, 200);
    snprintf(rep.run.names[COL_COMPUTE].name, sizeof rep.run.names[COL_COMPUTE].name, "%s",
             "model.encoder.layers.11.self_attention.scaled_dot_product");
    rep.run.names[COL_COMPUTE].stats = rep.run.names[COL_NASTY].stats;
    struct sps_bn_evidence *e = &rep.analysis.bottleneck.evidence;
    e->why_gpu = e->why_throttle = long_why;
    struct sps_overhead *o = &rep.analysis.overhead;
    for (int k = 0; k < SPS_OH_KINDS; k++) {
        o->part[k] = (struct sps_overhead_part){1234567, 4321, 123.4, 0.152};
    }
    o->recording_s = 1.06;
    o->recording_partial = 1;
    o->zone_end_samples = 301;
    o->zone_end_in_run_ns = 331.2;
    o->zone_end_warm_ns = 22.5;
    char *page = render_page(&rep);
    FILE *f = fopen(path, "w");
    int ok = page && f && fputs(page, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    free(page);
    fixture_free(&rep, r);
    if (!ok)
        fprintf(stderr, "cannot write the stress page to %s\n", path);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--stress-page"))
        return write_stress_page(argv[2]);
    RUN_TEST(test_units_and_ticks);
    RUN_TEST(test_real_run);
    RUN_TEST(test_no_steps_no_sampler);
    RUN_TEST(test_hints_in_python);
    RUN_TEST(test_bottleneck_evidence_glosses);
    RUN_TEST(test_escaping_and_reasons);
    RUN_TEST(test_many_steps);
    RUN_TEST(test_dropped_rows);
    RUN_TEST(test_spike_above_axis);
    RUN_TEST(test_process_lines);
    RUN_TEST(test_pss_line);
    RUN_TEST(test_torch_memory_timeline);
    RUN_TEST(test_torch_memory_timeline_keeps_peaks);
    RUN_TEST(test_torch_memory_sections_have_ids_of_their_own);
    RUN_TEST(test_torch_memory_step_bars);
    return check_report();
}
