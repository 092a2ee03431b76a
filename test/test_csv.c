/*
 * test_csv.c - steps.csv and timeline.csv (src/render/csv.c): from a real
 * run of the test workload, checked against its report.json, and from a
 * fixture report.json written here, checked byte for byte (quoting, empty
 * cells, the suffix rule for units, the overlap rule for step metrics).
 * Python's csv module reads every file back as an independent RFC 4180
 * parser; pandas too when it is installed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "render/exporters.h"
#include "render/output_file.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"
#define PYTHON "/usr/bin/python3"

/* Reads each CSV file named after the first argument with csv.reader
 * (strict) and writes {"files": {path: rows}, "dtypes": {path: {column:
 * dtype}} or null without pandas} as JSON to stdout. */
static const char python_reader[] =
    "import csv, json, sys\n"
    "files = {}\n"
    "for p in sys.argv[1:]:\n"
    "    with open(p, newline='', encoding='utf-8') as f:\n"
    "        files[p] = list(csv.reader(f, strict=True))\n"
    "try:\n"
    "    import pandas\n"
    "except ImportError:\n"
    "    dtypes = None\n"
    "else:\n"
    "    dtypes = {p: {c: str(t) for c, t in pandas.read_csv(p, keep_default_na=True).dtypes.items()}\n"
    "              for p in sys.argv[1:]}\n"
    "json.dump({'files': files, 'dtypes': dtypes}, sys.stdout)\n";

/* Both files of rep exported into dir through the atomic writer, as the
 * CLI does.  Returns 0 when both were written. */
static int export_model(const struct sps_report *rep, const char *dir) {
    char err[1024];
    int rc = 0;
    const char *names[2] = {"steps.csv", "timeline.csv"};
    for (int i = 0; i < 2 && rc == 0; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct sps_out o;
        rc = sps__out_open(&o, path, err, sizeof err);
        CHECK_MSG(rc == 0, "open %s: %s", path, err);
        if (rc != 0)
            break;
        rc = i == 0 ? sps__export_steps_csv(rep, o.f, err, sizeof err)
                    : sps__export_timeline_csv(rep, o.f, err, sizeof err);
        CHECK_MSG(rc == 0, "export %s: %s", names[i], err);
        if (rc != 0) {
            sps__out_abort(&o);
            break;
        }
        rc = sps__out_commit(&o, err, sizeof err);
        CHECK_MSG(rc == 0, "commit %s: %s", path, err);
    }
    return rc;
}

/* A run directory loaded into the model (its report.json and records),
 * and both files exported into it. */
static int export_both(const char *dir) {
    struct sps_report rep;
    char err[1024];
    int rc = sps__report_load_dir(&rep, dir, err, sizeof err);
    CHECK_MSG(rc == 0, "load %s: %s", dir, err);
    if (rc != 0)
        return rc;
    rc = export_model(&rep, dir);
    sps__report_free(&rep);
    return rc;
}

/* DIR/steps.csv and DIR/timeline.csv parsed by Python: a JSON object
 * {"steps": rows, "timeline": rows, "dtypes": ...}; NULL on failure. */
static json_t *python_parse(const char *dir) {
    char steps[4200], timeline[4200], json_out[4200], err[2048];
    snprintf(steps, sizeof steps, "%s/steps.csv", dir);
    snprintf(timeline, sizeof timeline, "%s/timeline.csv", dir);
    snprintf(json_out, sizeof json_out, "%s/parsed.json", dir);
    char *argv[] = {PYTHON, "-c", (char *)python_reader, steps, timeline, NULL};
    int st = run_capture_to(argv, json_out, err, sizeof err);
    CHECK_MSG(exit_code_of(st) == 0, "python3 could not read the CSV files: %s", err);
    if (exit_code_of(st) != 0)
        return NULL;
    json_error_t jerr;
    json_t *all = json_load_file(json_out, 0, &jerr);
    CHECK_MSG(all != NULL, "%s: %s", json_out, jerr.text);
    if (!all)
        return NULL;
    json_t *files = json_object_get(all, "files");
    json_t *res = json_pack("{s:O, s:O, s:O}", "steps", json_object_get(files, steps), "timeline",
                            json_object_get(files, timeline), "dtypes", json_object_get(all, "dtypes"));
    json_decref(all);
    return res;
}

/* Every row has as many fields as the header. */
static void check_rectangular(json_t *rows, const char *what) {
    size_t width = json_array_size(json_array_get(rows, 0)), i;
    json_t *row;
    CHECK_MSG(width > 0, "%s has a header", what);
    json_array_foreach(rows, i, row) {
        CHECK_MSG(json_array_size(row) == width, "%s row %zu has %zu fields, the header %zu", what, i,
                  json_array_size(row), width);
    }
}

/* pandas (when there) reads every column but the text ones as numbers. */
static void check_dtypes(json_t *dtypes, const char *file_suffix) {
    if (json_is_null(dtypes)) {
        printf("note: pandas is not installed: the pandas.read_csv check of %s was skipped\n", file_suffix);
        return;
    }
    const char *path;
    json_t *columns;
    json_object_foreach(dtypes, path, columns) {
        if (!strstr(path, file_suffix))
            continue;
        const char *col;
        json_t *t;
        json_object_foreach(columns, col, t) {
            const char *dtype = json_string_value(t);
            if (!strcmp(col, "step_name"))
                continue;
            CHECK_MSG(dtype && (!strncmp(dtype, "int", 3) || !strncmp(dtype, "float", 5)),
                      "%s column %s is numeric in pandas (%s)", file_suffix, col, dtype ? dtype : "?");
        }
    }
}

static int column_of(json_t *header, const char *name) {
    size_t i;
    json_t *h;
    json_array_foreach(header, i, h) {
        if (!strcmp(json_string_value(h), name))
            return (int)i;
    }
    return -1;
}

static const char *cell(json_t *rows, size_t row, int col) {
    return col < 0 ? NULL : json_string_value(json_array_get(json_array_get(rows, row), (size_t)col));
}

static double cell_num(json_t *rows, size_t row, int col) {
    const char *s = cell(rows, row, col);
    if (!s || !*s)
        return NAN;
    char *end;
    double v = strtod(s, &end);
    return *end ? NAN : v;
}

/* The documented rule for a step's metric statistics, by a plain linear
 * scan (the exporter binary-searches): the points whose span [t_i,
 * t_{i+1}) (the last: readings_per_point intervals) meets [start, end]. */
static int oracle_over(json_t *entry, double start, double end, double *mean, double *max) {
    json_t *t = json_object_get(entry, "t_s"), *m = json_object_get(entry, "mean"), *x = json_object_get(entry, "max");
    size_t n = json_array_size(t);
    double last_span = json_number_value(json_object_get(entry, "interval_ms")) * 1e-3 *
                       json_number_value(json_object_get(entry, "readings_per_point"));
    double sum = 0, top = -INFINITY;
    int used = 0;
    for (size_t i = 0; i < n; i++) {
        double ti = json_number_value(json_array_get(t, i));
        double span_end = i + 1 < n ? json_number_value(json_array_get(t, i + 1)) : ti + last_span;
        if (ti <= end && span_end > start) {
            sum += json_number_value(json_array_get(m, i));
            double v = json_number_value(json_array_get(x, i));
            top = v > top ? v : top;
            used++;
        }
    }
    *mean = used ? sum / used : NAN;
    *max = used ? top : NAN;
    return used;
}

/* A real run: 12 steps of two micro-steps each, two of them warm-up,
 * sampled every 20 ms. */
static void test_real_run(void) {
    const char *tmp = tmpdir_new("csvrun");
    char dir[1024], err[2048];
    snprintf(dir, sizeof dir, "%s/out", tmp);
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "--machine-interval", "40", "-o", dir, "--",
                    WORKLOAD, "--steps", "12", "--warmup", "2", "--micro", "2", "--burn-ms", "150",
                    "--sleep-ms", "200", NULL};
    int st = run_capture(argv, err, sizeof err);
    CHECK_MSG(exit_code_of(st) == 0, "run: %s", err);
    json_t *report = report_load(dir);
    if (!report || export_both(dir) != 0) {
        json_decref(report);
        return;
    }
    json_t *parsed = python_parse(dir);
    if (!parsed) {
        json_decref(report);
        return;
    }
    json_t *steps = json_object_get(parsed, "steps"), *timeline = json_object_get(parsed, "timeline");
    json_t *header = json_array_get(steps, 0);
    json_t *rows = json_path(report, "steps.rows");
    check_rectangular(steps, "steps.csv");
    check_rectangular(timeline, "timeline.csv");
    check_dtypes(json_object_get(parsed, "dtypes"), "steps.csv");
    check_dtypes(json_object_get(parsed, "dtypes"), "timeline.csv");

    /* the identifying columns, exactly as documented */
    const char *fixed[] = {"pid", "rank", "tid", "step_name", "step_index", "start_s", "duration_s", "warmup",
                           "microsteps"};
    for (int i = 0; i < 9; i++)
        CHECK_MSG(!strcmp(json_string_value(json_array_get(header, (size_t)i)), fixed[i]), "column %d is %s", i,
                  fixed[i]);
    size_t nrows = json_array_size(steps) - 1;
    CHECK_EQ_U(nrows, json_integer_value(json_path(report, "steps.rows_kept")));
    CHECK_EQ_U(nrows, 12);

    int c_dur = column_of(header, "duration_s"), c_start = column_of(header, "start_s");
    int c_a = column_of(header, "zone:a:self_s"), c_b = column_of(header, "zone:b:self_s");
    int c_loss = column_of(header, "value:loss:last"), c_samples = column_of(header, "counter:samples:sum");
    int c_warm = column_of(header, "warmup"), c_micro = column_of(header, "microsteps");
    int c_index = column_of(header, "step_index"), c_rank = column_of(header, "rank");
    CHECK(c_a >= 0 && c_b >= 0 && c_loss >= 0 && c_samples >= 0);
    int warm = 0;
    for (size_t r = 0; r < nrows; r++) {
        json_t *row = json_array_get(rows, r);
        size_t line = r + 1;
        /* %.15g of a double read from %.15g text gives the same text */
        CHECK_MSG(cell_num(steps, line, c_dur) == json_number_value(json_object_get(row, "duration_s")),
                  "row %zu duration %s", r, cell(steps, line, c_dur));
        CHECK(cell_num(steps, line, c_start) == json_number_value(json_object_get(row, "start_s")));
        CHECK_EQ_I(cell_num(steps, line, c_index), json_integer_value(json_object_get(row, "index")));
        CHECK_MSG(!strcmp(cell(steps, line, c_rank), ""), "no RANK: the rank cell is empty");
        CHECK_EQ_I(cell_num(steps, line, c_micro), 2);
        CHECK_EQ_I(cell_num(steps, line, c_samples), 8);
        CHECK_NEAR(cell_num(steps, line, c_loss), 1.0 / (double)(r + 1), 1e-12);
        CHECK(cell_num(steps, line, c_a) == json_number_value(json_path(row, "zones_self_s.a")));
        int is_warm = json_is_true(json_object_get(row, "warmup"));
        warm += is_warm;
        CHECK_EQ_I(cell_num(steps, line, c_warm), is_warm);
        double zone_sum = 0;
        size_t i;
        json_t *h;
        json_array_foreach(header, i, h) {
            if (!strncmp(json_string_value(h), "zone:", 5) && !isnan(cell_num(steps, line, (int)i)))
                zone_sum += cell_num(steps, line, (int)i);
        }
        CHECK_MSG(zone_sum <= cell_num(steps, line, c_dur), "row %zu: zone self times %.9g within duration %.9g", r,
                  zone_sum, cell_num(steps, line, c_dur));
    }
    CHECK_EQ_I(warm, json_integer_value(json_path(report, "steps.warmup_steps")));

    /* every series has its two columns, named from the catalogue with the
     * unit, in both files, and each step's cells follow the overlap rule */
    size_t s;
    json_t *entry;
    int host_series = 0;
    json_array_foreach(json_path(report, "series.metrics"), s, entry) {
        const char *metric = json_string_value(json_object_get(entry, "metric"));
        if (json_object_get(entry, "gpu") || json_object_get(entry, "sensor"))
            continue; /* no GPU or sensor here: the fixture test covers their names */
        const struct sps_metric_info *info = NULL;
        for (int id = 0; id < SPS_HOST_METRIC_COUNT; id++)
            if (!strcmp(sps_host_metric_info(id)->name, metric))
                info = sps_host_metric_info(id);
        CHECK_MSG(info != NULL, "series %s is in the catalogue", metric);
        if (!info)
            continue;
        host_series++;
        char stem[256], col_mean[300], col_max[300], unit_suffix[64];
        snprintf(unit_suffix, sizeof unit_suffix, "_%s", info->unit);
        size_t ln = strlen(info->name), lu = strlen(unit_suffix);
        int named_with_unit = ln >= lu && !strcmp(info->name + ln - lu, unit_suffix);
        snprintf(stem, sizeof stem, "%s%s", info->name, named_with_unit ? "" : unit_suffix);
        snprintf(col_mean, sizeof col_mean, "%s:mean", stem);
        snprintf(col_max, sizeof col_max, "%s:max", stem);
        int cm = column_of(header, col_mean), cx = column_of(header, col_max);
        CHECK_MSG(cm >= 0 && cx == cm + 1, "steps.csv has %s and %s", col_mean, col_max);
        CHECK_MSG(column_of(json_array_get(timeline, 0), col_mean) >= 0, "timeline.csv has %s", col_mean);
        for (size_t r = 0; r < nrows && cm >= 0; r++) {
            json_t *row = json_array_get(rows, r);
            double start = json_number_value(json_object_get(row, "start_s"));
            double end = start + json_number_value(json_object_get(row, "duration_s"));
            double mean, max;
            if (oracle_over(entry, start, end, &mean, &max)) {
                CHECK_NEAR(cell_num(steps, r + 1, cm), mean, fabs(mean) * 1e-14);
                CHECK(cell_num(steps, r + 1, cx) == max);
            } else {
                CHECK_MSG(!strcmp(cell(steps, r + 1, cm), "") && !strcmp(cell(steps, r + 1, cx), ""),
                          "%s: no point overlaps step %zu: empty cells", metric, r);
            }
        }
    }
    CHECK_MSG(host_series > 0, "the run sampled host metrics (%d series)", host_series);
    CHECK(column_of(header, "workload_rss_bytes:mean") >= 0);

    /* timeline: strictly increasing times, one row per distinct t_s */
    size_t ntimes = json_array_size(timeline) - 1, distinct = 0;
    for (size_t r = 1; r < ntimes; r++)
        CHECK_MSG(cell_num(timeline, r + 1, 0) > cell_num(timeline, r, 0), "timeline row %zu after row %zu", r + 1,
                  r);
    double *all = NULL;
    size_t nall = 0;
    json_array_foreach(json_path(report, "series.metrics"), s, entry) {
        json_t *t = json_object_get(entry, "t_s");
        all = realloc(all, (nall + json_array_size(t) + 1) * sizeof *all);
        for (size_t p = 0; p < json_array_size(t); p++)
            all[nall++] = json_number_value(json_array_get(t, p));
    }
    for (size_t i = 0; i < nall; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = all[j] == all[i];
        distinct += !seen;
    }
    free(all);
    CHECK_EQ_U(ntimes, distinct);
    /* workload_rss_bytes's points all appear at their times */
    json_t *rss = NULL;
    json_array_foreach(json_path(report, "series.metrics"), s, entry) {
        if (!strcmp(json_string_value(json_object_get(entry, "metric")), "workload_rss_bytes"))
            rss = entry;
    }
    int c_rss = column_of(json_array_get(timeline, 0), "workload_rss_bytes:max");
    CHECK(rss != NULL && c_rss > 0);
    size_t found = 0, r = 1;
    for (size_t p = 0; rss && c_rss > 0 && p < json_array_size(json_object_get(rss, "t_s")); p++) {
        double t = json_number_value(json_array_get(json_object_get(rss, "t_s"), p));
        while (r <= ntimes && cell_num(timeline, r, 0) < t)
            r++;
        if (r <= ntimes && cell_num(timeline, r, 0) == t &&
            cell_num(timeline, r, c_rss) == json_number_value(json_array_get(json_object_get(rss, "max"), p)))
            found++;
    }
    CHECK_EQ_U(found, json_array_size(json_object_get(rss, "t_s")));
    json_decref(parsed);
    json_decref(report);
}

/* ---------------------------------------------------------- fixture */

/* A report model made by hand: names that need quoting, a row without a
 * name's cell, a process without a rank, and series at two cadences, a
 * GPU and a sensor.  Times are seconds after the run's start at 1 s on
 * the monotonic clock. */
#define FIXTURE_ORIGIN_NS 1000000000ll
#define AT(s) ((uint64_t)(FIXTURE_ORIGIN_NS + (int64_t)llround((s) * 1e9)))

struct fixture {
    struct sps_report rep;
    struct sps_name_summary names[7];
    struct sps_process_data procs[2];
    struct sps_step_row rows[3];
    double cells[3][7];
    struct sps__sampler_result *sampler;
    struct sps__series_point rss[4], nproc[2], gpu[2], temp[1];
};

static int host_metric(const char *name) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        if (!strcmp(sps_host_metric_info(i)->name, name))
            return i;
    return -1;
}

static int gpu_metric(const char *name) {
    for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
        if (!strcmp(sps_gpu_metric_info(i)->name, name))
            return i;
    return -1;
}

/* A series of the points pts (t in seconds after the origin). */
static struct sps__series series_of(struct sps__series_point *pts, size_t n, const double *t, const double *mean,
                                    const double *max) {
    for (size_t i = 0; i < n; i++)
        pts[i] = (struct sps__series_point){.t_ns = (int64_t)AT(t[i]), .mean = mean[i], .max = max[i], .n = 1};
    return (struct sps__series){.points = pts, .count = (uint32_t)n, .cap = (uint32_t)n, .per_point = 1, .n = n};
}

/* Fill *f; returns 0, or -1 when the sampler could not be allocated. */
static int fixture_build(struct fixture *f, int with_sampler) {
    memset(f, 0, sizeof *f);
    static const struct {
        const char *name;
        uint32_t kind;
    } names[7] = {{"train step", SPS_KIND_STEP}, {"eval\nstep", SPS_KIND_STEP}, {"fwd,\"x\"", SPS_KIND_ZONE},
                  {"opt", SPS_KIND_ZONE},        {"late", SPS_KIND_ZONE},        {"loss", SPS_KIND_VALUE},
                  {"samples", SPS_KIND_COUNTER}};
    for (int i = 0; i < 7; i++) {
        snprintf(f->names[i].name, sizeof f->names[i].name, "%s", names[i].name);
        f->names[i].kind = names[i].kind;
    }
    f->procs[0] = (struct sps_process_data){.pid = 100, .rank = 3};
    f->procs[1] = (struct sps_process_data){.pid = 200, .rank = -1};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 7; k++)
            f->cells[r][k] = NAN;
    f->cells[0][2] = 0.06, f->cells[0][3] = 0.01, f->cells[0][5] = 1.5, f->cells[0][6] = 64;
    f->cells[1][3] = 0.02, f->cells[1][6] = 64;
    f->cells[2][4] = 0.001, f->cells[2][5] = 0.25;
    f->rows[0] = (struct sps_step_row){.index = 0, .process = 0, .tid = 101, .name = 0, .start_ns = AT(0.05),
                                       .end_ns = AT(0.15), .microsteps = 2, .warmup = 1, .by_name = f->cells[0]};
    f->rows[1] = (struct sps_step_row){.index = 1, .process = 0, .tid = 101, .name = 0, .start_ns = AT(0.15),
                                       .end_ns = AT(0.25), .by_name = f->cells[1]};
    f->rows[2] = (struct sps_step_row){.index = 0, .process = 1, .tid = 201, .name = 1, .start_ns = AT(0.5),
                                       .end_ns = AT(0.52), .by_name = f->cells[2]};
    f->rep.run = (struct sps_run){.nprocs = 2, .procs = f->procs, .nnames = 7, .names = f->names, .nsteps = 3,
                                  .steps = f->rows, .start_ns = (uint64_t)FIXTURE_ORIGIN_NS};
    if (!with_sampler)
        return 0;
    struct sps__sampler_result *r = f->sampler = calloc(1, sizeof *r);
    int rss = host_metric("workload_rss_bytes"), nproc = host_metric("workload_processes");
    int util = gpu_metric("gpu_utilization_percent");
    CHECK(r && rss >= 0 && nproc >= 0 && util >= 0);
    if (!r || rss < 0 || nproc < 0 || util < 0)
        return -1;
    r->interval_ms = 100;
    r->machine_interval_ms = 500;
    r->host[rss] = series_of(f->rss, 4, (const double[]){0, 0.1, 0.2, 0.3}, (const double[]){1000, 2000, 3000, 4000},
                             (const double[]){1000, 2000, 3000, 4000});
    r->host[nproc] = series_of(f->nproc, 2, (const double[]){0.1, 0.2}, (const double[]){1, 2}, (const double[]){1, 2});
    r->ngpus = 1;
    r->gpu[0].index = 0;
    r->gpu[0].m[util] = series_of(f->gpu, 2, (const double[]){0.05, 0.55}, (const double[]){10.5, 20},
                                  (const double[]){12, 30});
    r->nsensors = 1;
    snprintf(r->sensor[0].label, sizeof r->sensor[0].label, "k10temp Tctl");
    r->sensor[0].celsius = series_of(f->temp, 1, (const double[]){0.05}, (const double[]){40}, (const double[]){41});
    f->rep.info.sampler = r;
    return 0;
}

static char *slurp(const char *path) {
    static char buf[1 << 16];
    return read_file(path, buf, sizeof buf) >= 0 ? buf : NULL;
}

/* Byte for byte: quoting, empty cells, the unit suffix, the overlap rule
 * (a step before a series' first point, one after its last point's span,
 * points at the step's start), the union of times. */
static void test_fixture_exact(void) {
    const char *dir = tmpdir_new("csvfix");
    char path[1200];
    struct fixture f;
    int built = fixture_build(&f, 1) == 0;
    if (!built || export_model(&f.rep, dir) != 0) {
        free(f.sampler);
        return;
    }
    free(f.sampler);
    const char *series_cols = "workload_rss_bytes:mean,workload_rss_bytes:max,workload_processes_count:mean,"
                              "workload_processes_count:max,gpu0:gpu_utilization_percent:mean,"
                              "gpu0:gpu_utilization_percent:max,sensor:k10temp Tctl:celsius:mean,"
                              "sensor:k10temp Tctl:celsius:max\n";
    char want[4096];
    snprintf(want, sizeof want,
             "pid,rank,tid,step_name,step_index,start_s,duration_s,warmup,microsteps,\"zone:fwd,\"\"x\"\":self_s\","
             "zone:opt:self_s,zone:late:self_s,value:loss:last,counter:samples:sum,%s"
             "100,3,101,train step,0,0.05,0.1,1,2,0.06,0.01,,1.5,64,1500,2000,1,1,10.5,12,40,41\n"
             "100,3,101,train step,1,0.15,0.1,0,0,,0.02,,,64,2500,3000,1.5,2,10.5,12,40,41\n"
             "200,,201,\"eval\nstep\",0,0.5,0.02,0,0,,,0.001,0.25,,,,,,10.5,12,40,41\n",
             series_cols);
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    const char *got = slurp(path);
    CHECK_MSG(got && !strcmp(got, want), "steps.csv is\n%s\nnot\n%s", got ? got : "(missing)", want);
    snprintf(want, sizeof want,
             "t_s,%s"
             "0,1000,1000,,,,,,\n"
             "0.05,,,,,10.5,12,40,41\n"
             "0.1,2000,2000,1,1,,,,\n"
             "0.2,3000,3000,2,2,,,,\n"
             "0.3,4000,4000,,,,,,\n"
             "0.55,,,,,20,30,,\n",
             series_cols);
    snprintf(path, sizeof path, "%s/timeline.csv", dir);
    got = slurp(path);
    CHECK_MSG(got && !strcmp(got, want), "timeline.csv is\n%s\nnot\n%s", got ? got : "(missing)", want);

    /* and an RFC 4180 reader gets the names back unchanged */
    json_t *parsed = python_parse(dir);
    if (!parsed)
        return;
    json_t *steps = json_object_get(parsed, "steps");
    check_rectangular(steps, "steps.csv");
    check_rectangular(json_object_get(parsed, "timeline"), "timeline.csv");
    CHECK_EQ_U(json_array_size(steps), 4);
    CHECK(column_of(json_array_get(steps, 0), "zone:fwd,\"x\":self_s") == 9);
    CHECK(cell(steps, 3, 3) && !strcmp(cell(steps, 3, 3), "eval\nstep"));
    check_dtypes(json_object_get(parsed, "dtypes"), "steps.csv");
    check_dtypes(json_object_get(parsed, "dtypes"), "timeline.csv");
    json_decref(parsed);
}

/* A report with no sampler (no series) still has its step columns and a
 * timeline of its header alone; one without names or rows has the fixed
 * columns. */
static void test_no_series(void) {
    const char *dir = tmpdir_new("csvbare");
    char path[1200];
    struct fixture f;
    fixture_build(&f, 0);
    if (export_model(&f.rep, dir) != 0)
        return;
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    const char *got = slurp(path);
    const char *want = "pid,rank,tid,step_name,step_index,start_s,duration_s,warmup,microsteps,\"zone:fwd,\"\"x\"\":self_s\","
                       "zone:opt:self_s,zone:late:self_s,value:loss:last,counter:samples:sum\n"
                       "100,3,101,train step,0,0.05,0.1,1,2,0.06,0.01,,1.5,64\n"
                       "100,3,101,train step,1,0.15,0.1,0,0,,0.02,,,64\n"
                       "200,,201,\"eval\nstep\",0,0.5,0.02,0,0,,,0.001,0.25,\n";
    CHECK_MSG(got && !strcmp(got, want), "steps.csv is\n%s\nnot\n%s", got ? got : "(missing)", want);
    snprintf(path, sizeof path, "%s/timeline.csv", dir);
    got = slurp(path);
    CHECK(got && !strcmp(got, "t_s\n"));

    struct sps_report empty;
    memset(&empty, 0, sizeof empty);
    if (export_model(&empty, dir) != 0)
        return;
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    got = slurp(path);
    CHECK(got && !strcmp(got, "pid,rank,tid,step_name,step_index,start_s,duration_s,warmup,microsteps\n"));
}

/* A name that a spreadsheet would run as a formula (=, +, -, @, tab, CR
 * first) is written '-prefixed and quoted (OWASP), while a negative
 * number stays a number: pandas still reads the numeric columns as
 * numbers, and a CSV reader gets the name back behind one '. */
static void test_formula_names(void) {
    const char *dir = tmpdir_new("csvformula");
    char path[1200];
    struct fixture f;
    fixture_build(&f, 0);
    snprintf(f.names[0].name, sizeof f.names[0].name, "=HYPERLINK(\"http://evil\",\"x\")");
    snprintf(f.names[1].name, sizeof f.names[1].name, "-2+3");
    snprintf(f.names[3].name, sizeof f.names[3].name, "@SUM(A1)");
    f.cells[0][5] = -1.5;
    if (export_model(&f.rep, dir) != 0)
        return;
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    const char *got = slurp(path);
    const char *want = "pid,rank,tid,step_name,step_index,start_s,duration_s,warmup,microsteps,"
                       "\"zone:fwd,\"\"x\"\":self_s\",zone:@SUM(A1):self_s,zone:late:self_s,"
                       "value:loss:last,counter:samples:sum\n"
                       "100,3,101,\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\",0,0.05,0.1,1,2,0.06,0.01,,-1.5,64\n"
                       "100,3,101,\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\",1,0.15,0.1,0,0,,0.02,,,64\n"
                       "200,,201,\"'-2+3\",0,0.5,0.02,0,0,,,0.001,0.25,\n";
    CHECK_MSG(got && !strcmp(got, want), "steps.csv is\n%s\nnot\n%s", got ? got : "(missing)", want);
    static const char leads[] = {'+', '\t', '\r'};
    for (size_t i = 0; i < sizeof leads; i++) {
        snprintf(f.names[1].name, sizeof f.names[1].name, "%cx", leads[i]);
        if (export_model(&f.rep, dir) != 0)
            return;
        char row[64];
        snprintf(row, sizeof row, "\n200,,201,\"'%cx\",0,", leads[i]);
        got = slurp(path);
        CHECK_MSG(got && strstr(got, row), "a name led by 0x%02x is '-prefixed and quoted:\n%s", leads[i],
                  got ? got : "(missing)");
    }
    json_t *parsed = python_parse(dir);
    if (!parsed)
        return;
    json_t *steps = json_object_get(parsed, "steps");
    check_rectangular(steps, "steps.csv");
    CHECK(cell(steps, 1, 3) && !strcmp(cell(steps, 1, 3), "'=HYPERLINK(\"http://evil\",\"x\")"));
    CHECK(cell(steps, 1, 12) && !strcmp(cell(steps, 1, 12), "-1.5"));
    check_dtypes(json_object_get(parsed, "dtypes"), "steps.csv");
    json_decref(parsed);
}

/* A value and a count recorded just after each step has ended (the shape
 * of `opt.step(); record("loss", ...)`) belong to that step: in
 * report.json's rows, in steps.csv and in the throughput. */
static void test_values_after_the_step(void) {
    const char *tmp = tmpdir_new("csvafter");
    char dir[1024], err[2048];
    snprintf(dir, sizeof dir, "%s/out", tmp);
    char *argv[] = {STEPSCOPE, "run", "--no-sample", "-o", dir, "--", WORKLOAD, "--steps", "7", "--micro", "2",
                    "--record-after", NULL};
    int st = run_capture(argv, err, sizeof err);
    CHECK_MSG(exit_code_of(st) == 0, "run: %s", err);
    json_t *report = report_load(dir);
    if (!report || export_both(dir) != 0) {
        json_decref(report);
        return;
    }
    json_t *rows = json_path(report, "steps.rows");
    CHECK_EQ_U(json_array_size(rows), 7);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        CHECK_NEAR(json_number_value(json_path(row, "values.loss")), 1.0 / (double)(i + 1), 1e-14); /* %.15g */
        CHECK_EQ_I(json_integer_value(json_path(row, "counters.samples")), 8);
        CHECK_EQ_I(json_integer_value(json_object_get(row, "microsteps")), 2);
    }
    json_t *parsed = python_parse(dir);
    json_t *steps = json_object_get(parsed, "steps"), *header = json_array_get(steps, 0);
    int c_loss = column_of(header, "value:loss:last"), c_samples = column_of(header, "counter:samples:sum");
    CHECK(c_loss >= 0 && c_samples >= 0);
    CHECK_EQ_U(json_array_size(steps), 8);
    for (size_t line = 1; line < json_array_size(steps); line++) {
        CHECK_NEAR(cell_num(steps, line, c_loss), 1.0 / (double)line, 1e-14);
        CHECK_EQ_I(cell_num(steps, line, c_samples), 8);
    }
    json_t *samples = NULL, *c;
    size_t i;
    json_array_foreach(json_path(report, "analysis.throughput.counters"), i, c) {
        if (!strcmp(json_string_value(json_object_get(c, "name")), "samples"))
            samples = c;
    }
    CHECK(samples != NULL);
    size_t warm = (size_t)json_integer_value(json_path(report, "steps.warmup_steps"));
    CHECK_EQ_I(json_integer_value(json_object_get(samples, "steps")), 7 - warm);
    CHECK_EQ_I(json_number_value(json_object_get(samples, "in_steps")), 8 * (7 - warm));
    CHECK(json_number_value(json_object_get(samples, "per_second")) > 0);
    CHECK_MSG(strstr(err, "samples/s") != NULL, "the summary has the samples rate:\n%s", err);
    json_decref(parsed);
    json_decref(report);
}

int main(void) {
    if (access(PYTHON, X_OK) != 0) {
        printf("skipped: %s is not installed, and it is the independent CSV reader these tests use\n", PYTHON);
        return 77;
    }
    RUN_TEST(test_fixture_exact);
    RUN_TEST(test_no_series);
    RUN_TEST(test_formula_names);
    RUN_TEST(test_real_run);
    RUN_TEST(test_values_after_the_step);
    return check_report();
}
