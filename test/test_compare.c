/*
 * test_compare.c - `stepscope compare` end to end, on report.json files
 * this test writes from seeded distributions: what it finds, what it
 * prints in each format, its exit codes, and its errors on bad input.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/bottleneck.h"
#include "check.h"
#include "compare/compare.h"
#include "compare/inference.h"
#include "report/jscan.h"
#include "compare/sides.h"
#include "render/render.h"
#include "report/report.h"
#include "report/report_read.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

/* What a synthetic run looks like. */
struct synth {
    uint64_t seed;
    int steps;           /* after warm-up */
    int warmup;          /* leading steps marked warm-up, 3x slower */
    double median_s;     /* of the step */
    double sigma;        /* log-sd of the step time */
    double forward_frac; /* of the step that is the forward zone's self time */
    int outliers;        /* steps 100x longer */
    const char *extra_zone; /* a zone only this run has (NULL: none) */
    double peak_rss;
    double samples_per_s;
    enum sps_bn_kind bottleneck;
    double level;          /* this run's machine state: every step x level (0: 1) */
    double forward_extra_s; /* added to the forward zone (and so the step) of every step */
    const char *command;   /* the report's command, one argument (NULL: none) */
    double started;        /* started_unix_s (0: none) */
    double gpu_peak;       /* the busier of two GPUs' peak memory in use, bytes (0: no GPU read) */
    int ranks;             /* processes of ranks 0..ranks-1 (pid 100 + rank), step i on rank i % ranks (0: one
                              process of no rank) */
    int slow_rank;         /* the rank whose steps take slow_rank_extra_s longer */
    double slow_rank_extra_s;
    int slow_in_data;      /* that rank's extra time is its data zone's self time */
};

static void add_name(struct sps_run *run, const char *name, uint32_t kind, size_t count) {
    struct sps_name_summary *n = &run->names[run->nnames++];
    snprintf(n->name, sizeof n->name, "%s", name);
    n->kind = n->agg.kind = kind;
    n->stats.count = n->agg.count = count;
}

static uint64_t ns_of(double s) {
    return (uint64_t)llround(s * 1e9);
}

/* What the sampler read of two GPUs' memory in use: GPU 1 peaks at peak,
 * GPU 0 lower (their sum is not the figure). */
static struct sps__sampler_result *gpu_machine(double peak, uint64_t start_ns) {
    struct sps__sampler_result *m = calloc(1, sizeof *m);
    m->interval_ms = 100;
    m->machine_interval_ms = 500;
    m->started_ns = (int64_t)start_ns;
    m->ngpus = 2;
    for (int g = 0; g < 2; g++) {
        m->gpu[g].index = g;
        m->gpu[g].source = SPS_SOURCE_NVML;
        snprintf(m->gpu[g].name, sizeof m->gpu[g].name, "NVIDIA H100 80GB HBM3");
        struct sps__series *used = &m->gpu[g].m[SPS_M_GPU_MEMORY_USED_BYTES];
        sps__series_init(used, SPS_SAMPLER_DEFAULT_POINTS);
        for (int i = 0; i < 4; i++)
            sps__series_add(used, (int64_t)start_ns + i * 500000000LL, peak * (g ? 0.5 + i / 6.0 : 0.4 + i / 10.0));
    }
    return m;
}

/* The synthetic run as a report model, analysis included, written by
 * stepscope's own writer (sps__report_json_write): what compare reads is
 * a report as stepscope writes it.  One process (pid 100), one thread. */
static void write_run(const char *dir, const struct synth *s) {
    mkdir(dir, 0755);
    struct sps_rng r;
    sps__rng_seed(&r, s->seed);
    int total = s->warmup + s->steps;
    double *d = calloc((size_t)total + 1, sizeof *d), *step_s = calloc((size_t)total + 1, sizeof *step_s);
    for (int i = 0; i < total; i++) {
        d[i] = s->median_s * exp(s->sigma * sps__rng_normal(&r)) * (s->level > 0 ? s->level : 1);
        if (i < s->warmup)
            d[i] *= 3;
        step_s[i] = d[i] + s->forward_extra_s;
    }
    for (int k = 0; k < s->outliers; k++)
        step_s[s->warmup + (int)sps__rng_below(&r, (uint64_t)s->steps)] = s->median_s * 100;

    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    struct sps_run *run = &rep.run;
    run->start_ns = 5000000000ULL;
    run->names = calloc(4, sizeof *run->names);
    add_name(run, "step", SPS_KIND_STEP, (size_t)total);
    add_name(run, "forward", SPS_KIND_ZONE, (size_t)total);
    add_name(run, "data", SPS_KIND_ZONE, (size_t)total);
    if (s->extra_zone)
        add_name(run, s->extra_zone, SPS_KIND_ZONE, (size_t)total);
    int nprocs = s->ranks > 0 ? s->ranks : 1;
    run->nprocs = (size_t)nprocs;
    run->procs = calloc((size_t)nprocs, sizeof *run->procs);
    for (int k = 0; k < nprocs; k++) {
        struct sps_process_data *p = &run->procs[k];
        char rec[32];
        p->pid = 100 + k;
        p->ppid = 99;
        p->rank = p->local_rank = s->ranks > 0 ? k : -1;
        p->world_size = s->ranks > 0 ? s->ranks : -1;
        snprintf(rec, sizeof rec, "%d-0.sps", p->pid);
        p->path = strdup(rec);
        p->start_ns = run->start_ns;
        p->closed = 1;
        p->ticks_per_second = 1e9;
    }
    run->nsteps = (size_t)total;
    run->steps_recorded = (uint64_t)total;
    run->warmup_steps = (size_t)s->warmup;
    run->steps = calloc((size_t)total + 1, sizeof *run->steps);
    for (int i = 0; i < total; i++) {
        struct sps_step_row *row = &run->steps[i];
        row->index = (uint64_t)(i / nprocs);
        row->process = (size_t)(i % nprocs);
        row->tid = 100 + i % nprocs;
        if (s->ranks > 0 && i % nprocs == s->slow_rank)
            step_s[i] += s->slow_rank_extra_s;
        row->name = 0;
        row->start_ns = run->start_ns + ns_of(0.1 * i);
        row->end_ns = row->start_ns + ns_of(step_s[i]);
        row->warmup = i < s->warmup;
        row->by_name = malloc(run->nnames * sizeof *row->by_name);
        row->by_name[0] = NAN;
        row->by_name[1] = d[i] * s->forward_frac + s->forward_extra_s;
        row->by_name[2] = d[i] * (1 - s->forward_frac) * 0.5;
        if (s->slow_in_data && s->ranks > 0 && i % nprocs == s->slow_rank)
            row->by_name[2] += s->slow_rank_extra_s;
        if (s->extra_zone)
            row->by_name[3] = 0.001;
    }
    free(d);
    free(step_s);

    char *argv[3] = {(char *)s->command, "--steps", NULL};
    rep.info.argc = s->command ? 2 : 0;
    rep.info.argv = s->command ? argv : NULL;
    rep.info.start_realtime_ns = (int64_t)llround(s->started * 1e9);
    rep.info.have_rss = 1;
    rep.info.peak_rss_bytes = (uint64_t)s->peak_rss;
    struct sps__sampler_result *machine = s->gpu_peak > 0 ? gpu_machine(s->gpu_peak, run->start_ns) : NULL;
    rep.info.sampler = machine;

    struct sps_analysis *a = &rep.analysis;
    a->computed = a->bottleneck.computed = 1;
    sps__bn_evidence_init(&a->bottleneck.evidence);
    a->bottleneck.verdict.kind = s->bottleneck;
    a->bottleneck.verdict.confidence = 0.9;
    snprintf(a->bottleneck.main_step, sizeof a->bottleneck.main_step, "step");
    struct sps_energy *e = &a->energy;
    e->total_joules = e->total_kwh = e->co2e_grams = NAN;
    e->step_span_s = e->step_joules = e->step_kwh = e->step_co2e_grams = NAN;
    e->carbon_g_per_kwh = 400;
    e->pue = 1;
    struct sps_throughput *t = &a->throughput;
    t->flops = -1;
    t->flops_per_second = t->mfu = t->peak_flops_total = NAN;
    t->ncounters = 1;
    t->counters = calloc(1, sizeof *t->counters);
    snprintf(t->counters[0].name, sizeof t->counters[0].name, "samples");
    t->counters[0].per_second = s->samples_per_s;
    t->counters[0].steps = (uint64_t)s->steps;

    char path[4200], why[512];
    snprintf(path, sizeof path, "%s/report.json", dir);
    if (sps__report_json_write(&rep, path, why, sizeof why) != 0) {
        fprintf(stderr, "test setup: %s\n", why);
        exit(2);
    }
    rep.info.argv = NULL; /* the report does not own it */
    sps__report_free(&rep);
    if (machine)
        sps__sampler_result_free(machine);
}

static struct synth base_run(uint64_t seed) {
    return (struct synth){seed, 200, 5, 0.100, 0.10, 0.4, 0, NULL, 1 << 30, 3200, SPS_BN_INPUT, 1, 0, "train"};
}

/* Three runs of a side, each with its own machine state (levels 3% apart). */
static const double levels[3] = {1.0, 1.03, 0.98};

static char out_path[4200], err[4096], out[1 << 16];

/* Run `stepscope compare ARGS...` with stdout to a file; the exit code. */
static int compare(const char *first, ...) {
    char *argv[32] = {STEPSCOPE, "compare"};
    int argc = 2;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    int status = run_capture_to(argv, out_path, err, sizeof err);
    read_file(out_path, out, sizeof out);
    return exit_code_of(status);
}

/* Three runs a side: BASE, SLOW (the forward zone 30 ms longer: the step
 * 30% slower, the data zone unchanged), SAME (BASE's code again). */
static char base_dir[3][4200], slow_dir[3][4200], same_dir[3][4200], tail_dir[4200];

#define A base_dir[0], base_dir[1], base_dir[2]
#define S slow_dir[0], slow_dir[1], slow_dir[2]
#define SAME same_dir[0], same_dir[1], same_dir[2]

static const char *zone_verdict(json_t *j, const char *zone) {
    size_t i;
    json_t *z;
    json_array_foreach(json_path(j, "zones_self"), i, z) {
        if (!strcmp(json_string_value(json_object_get(z, "name")), zone))
            return json_string_value(json_object_get(z, "verdict"));
    }
    return "";
}

static void test_slowdown(void) {
    CHECK_EQ_I(compare(A, "--vs", S, NULL), 0);
    CHECK_STR_HAS(out, "% slower, speedup 0.7");
    CHECK_STR_HAS(out, "x (median per step, 3+3 runs; 95% interval +");
    CHECK_STR_HAS(out, "5 warm-up left out");
    CHECK_STR_HAS(out, "3 runs, 600 steps");
    CHECK_STR_HAS(out, "drifts "); /* each run's A/A self-check */
    CHECK_STR_HAS(out, "halves differ ");
    CHECK(!strstr(out, "warning")); /* one command throughout */
    CHECK(!strchr(out, '\033'));    /* not a terminal: no colour */
    /* the gate */
    CHECK_EQ_I(compare(A, "--vs", S, "--fail-on", "slower", NULL), 1);
    CHECK_EQ_I(compare(A, "--vs", S, "--fail-on", "20%", NULL), 1);
    CHECK_EQ_I(compare(A, "--vs", S, "--fail-on", "50%", NULL), 0);
    CHECK_EQ_I(compare(S, "--vs", A, "--fail-on", "slower", NULL), 0); /* faster passes */
    CHECK_STR_HAS(out, "faster");
    /* the JSON, every figure where a program finds it */
    CHECK_EQ_I(compare(A, "--vs", S, "--format", "json", NULL), 0);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    CHECK_MSG(j != NULL, "JSON output parses: %s", j ? "" : jerr.text);
    if (j) {
        CHECK(!strcmp(json_string_value(json_path(j, "verdict")), "slower"));
        CHECK(!strcmp(json_string_value(json_path(j, "method")), "run-level t"));
        double ratio = json_num(j, "step.ratio");
        CHECK_MSG(ratio > 1.25 && ratio < 1.35, "median ratio %.4f near 1.30", ratio);
        CHECK_NEAR(json_num(j, "step.speedup"), 1 / ratio, 1e-9);
        CHECK(json_num(j, "step.ratio_ci_low") > 1.02 && json_num(j, "step.ratio_ci_high") > ratio);
        CHECK(json_num(j, "step.p_value") < 0.01);
        CHECK_EQ_I(json_num(j, "step.n_base"), 600);
        CHECK_EQ_I(json_num(j, "step.runs_base"), 3);
        CHECK(json_num(j, "step.df") >= 4);
        /* the runs' levels differ by a few per cent: the between-run sd sees it */
        double between = json_num(j, "step.noise_between");
        CHECK_MSG(between > 0.01 && between < 0.06, "between-run sd %.4f", between);
        CHECK(json_num(j, "step.noise_drift") > 0);
        CHECK(!strcmp(json_string_value(json_path(j, "step.run_statistic")), "median"));
        CHECK(json_is_null(json_path(j, "step.cliffs_delta")));
        CHECK_EQ_I(json_num(j, "base.0.warmup_left_out"), 5);
        CHECK(!strcmp(json_string_value(json_path(j, "base.0.command")), "train --steps"));
        CHECK(json_num(j, "base.1.median_s") > 0.1);   /* the run with level 1.03 */
        CHECK(json_num(j, "base.0.drift") > 0);
        CHECK(fabs(json_num(j, "base.0.halves_change")) < 0.05);
        CHECK_EQ_U(json_array_size(json_path(j, "warnings")), 0);
        CHECK_NEAR(json_num(j, "params.threshold"), 0.02, 1e-12);
        /* only forward changed: it is slower, data is not */
        CHECK_EQ_U(json_array_size(json_path(j, "zones_self")), 2);
        CHECK_STR_HAS(zone_verdict(j, "forward"), "slower");
        CHECK_MSG(strcmp(zone_verdict(j, "data"), "slower") && strcmp(zone_verdict(j, "data"), "faster"),
                  "unchanged data zone: %s", zone_verdict(j, "data"));
        CHECK(json_num(j, "zones_self.0.p_value") >= json_num(j, "zones_self.0.p_value_unadjusted"));
        /* figures: the throughput fell as the steps slowed */
        json_t *figs = json_path(j, "figures");
        int found = 0;
        size_t i;
        json_t *f;
        json_array_foreach(figs, i, f) {
            const char *name = json_string_value(json_object_get(f, "name"));
            if (name && !strcmp(name, "samples/s")) {
                found = 1;
                CHECK_NEAR(json_number_value(json_object_get(f, "base")), 3200, 1e-9);
                CHECK_NEAR(json_number_value(json_object_get(f, "new")), 3050, 1e-9);
                CHECK(json_is_true(json_object_get(f, "higher_is_better")));
            }
            CHECK(strcmp(name, "energy") != 0); /* neither side measured energy: left out */
        }
        CHECK(found);
        /* the busiest GPU's peak, not the sum over the GPUs */
        json_t *gpu = NULL;
        json_array_foreach(figs, i, f) {
            if (!strcmp(json_string_value(json_object_get(f, "name")), "peak GPU memory"))
                gpu = f;
        }
        CHECK(gpu != NULL);
        if (gpu) {
            CHECK_NEAR(json_number_value(json_object_get(gpu, "base")), 8e9, 0);
            CHECK_NEAR(json_number_value(json_object_get(gpu, "new")), 12e9, 0);
        }
        CHECK(!strcmp(json_string_value(json_path(j, "bottleneck.new")), "gpu-bound"));
        json_decref(j);
    }
    /* Markdown for a pull request */
    CHECK_EQ_I(compare(A, "--vs", S, "--format", "markdown", NULL), 0);
    CHECK_STR_HAS(out, "### stepscope compare: step time: ");
    CHECK_STR_HAS(out, "| median per step | base | new | change | 95% interval | p | noise | verdict |");
    CHECK_STR_HAS(out, "| **step** | ");
    CHECK_STR_HAS(out, "**slower** |");
    CHECK_STR_HAS(out, "| bottleneck | input-bound | gpu-bound | changed |");
    /* -o writes a file */
    char file[4300];
    snprintf(file, sizeof file, "%s/cmp.md", base_dir[0]);
    CHECK_EQ_I(compare(A, "--vs", S, "--format", "md", "-o", file, NULL), 0);
    char md[1 << 14];
    CHECK(read_file(file, md, sizeof md) > 0);
    CHECK_STR_HAS(md, "### stepscope compare");
    /* -o a device (through a link to /dev/null): written into, the link
     * and the device left as they are */
    char link[4300];
    snprintf(link, sizeof link, "%s/null-link", base_dir[0]);
    CHECK(symlink("/dev/null", link) == 0);
    CHECK_EQ_I(compare(A, "--vs", S, "-o", link, NULL), 0);
    struct stat lst, dst;
    CHECK(lstat(link, &lst) == 0 && S_ISLNK(lst.st_mode));
    CHECK(stat("/dev/null", &dst) == 0 && S_ISCHR(dst.st_mode));
}

/* One run a side says what it can: never slower or faster, and how many
 * runs a side would tell. */
static void test_one_run_a_side(void) {
    CHECK_EQ_I(compare(base_dir[0], slow_dir[0], "--fail-on", "slower", NULL), 0);
    CHECK_STR_HAS(out, "step time: inconclusive (+");
    CHECK_STR_HAS(out, "one run a side cannot tell the code from the run");
    CHECK_EQ_I(compare(A, "--vs", SAME, NULL), 0); /* 3 a side, same code: the runs it would take */
    CHECK_STR_HAS(out, " runs a side would tell a 2% change from this noise (a run's level varies by ");
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--fail-on", "slower", NULL), 0);
    CHECK_STR_HAS(out, "step time: inconclusive (");
    CHECK_STR_HAS(out, "one run a side cannot measure how runs differ: repeat each side");
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--format", "json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    if (j) {
        CHECK(!strcmp(json_string_value(json_path(j, "verdict")), "inconclusive"));
        CHECK(!strcmp(json_string_value(json_path(j, "step.noise_used")), "drift"));
        CHECK(json_is_null(json_path(j, "step.noise_between")));
        CHECK(json_num(j, "step.runs_needed") >= 2);
        json_decref(j);
    }
}

static void test_same_and_outliers(void) {
    CHECK_EQ_I(compare(A, "--vs", SAME, "--fail-on", "slower", "--format", "json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    if (j) {
        const char *v = json_string_value(json_path(j, "verdict"));
        CHECK_MSG(!strcmp(v, "same") || !strcmp(v, "inconclusive"), "identical code: %s", v);
        CHECK_STR_HAS(json_string_value(json_path(j, "warnings.0")), "every BASE run started before every NEW run");
        CHECK_NEAR(json_num(j, "new.0.started_unix_s"), 1.9e9, 1e-3);
        json_decref(j);
    }
    CHECK_EQ_I(compare(SAME, "--vs", A, "--fail-on", "slower", NULL), 0);
    CHECK_STR_HAS(out, "warning: every NEW run started before every BASE run: ");
    CHECK_EQ_I(compare(base_dir[0], tail_dir, "--fail-on", "slower", "--format", "json", NULL), 0);
    j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    if (j) {
        CHECK(strcmp(json_string_value(json_path(j, "verdict")), "slower") != 0);
        /* five 100x steps move the mean by half and the median hardly */
        CHECK(json_num(j, "step.mean_new_s") > 1.3 * json_num(j, "step.mean_base_s"));
        CHECK(fabs(json_num(j, "step.ratio") - 1) < 0.05);
        json_decref(j);
    }
    /* --skip 0 keeps the 3x warm-up steps: still compared, and counted */
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--skip", "0", "--format", "json", NULL), 0);
    j = json_loads(out, 0, NULL);
    if (j) {
        CHECK_EQ_I(json_num(j, "step.n_base"), 205);
        CHECK_EQ_I(json_num(j, "base.0.warmup_left_out"), 0);
        json_decref(j);
    }
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--skip", "50", "--format", "json", NULL), 0);
    j = json_loads(out, 0, NULL);
    if (j) {
        CHECK_EQ_I(json_num(j, "step.n_base"), 155);
        json_decref(j);
    }
    /* the options of the bootstrap this replaced are accepted, and said to do nothing */
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--resamples", "500", "--seed", "3", NULL), 0);
    CHECK_STR_HAS(err, "--resamples is ignored");
    CHECK_STR_HAS(err, "--seed is ignored");
}

/* Sides that ran different commands are compared, with a warning. */
static void test_command_warning(const char *root) {
    char other[4300];
    snprintf(other, sizeof other, "%s/other-command", root);
    struct synth s = base_run(30);
    s.command = "train_v2";
    write_run(other, &s);
    CHECK_EQ_I(compare(base_dir[0], other, NULL), 0);
    CHECK_STR_HAS(out, "warning: the runs ran different commands: ");
    CHECK_STR_HAS(out, "ran \"train --steps\", ");
    CHECK_STR_HAS(out, "ran \"train_v2 --steps\"");
    CHECK_EQ_I(compare(base_dir[0], other, "--format", "json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    if (j) {
        CHECK_EQ_U(json_array_size(json_path(j, "warnings")), 1);
        json_decref(j);
    }
    CHECK_EQ_I(compare(base_dir[0], other, "--format", "md", NULL), 0);
    CHECK_STR_HAS(out, "**Warning**: the runs ran different commands");
}

/* Repeated runs per side, each run a unit; a report.json names a run too. */
static void test_pooled_runs(const char *root) {
    char a[3][4300], b[3][4300];
    for (int i = 0; i < 3; i++) {
        snprintf(a[i], sizeof a[i], "%s/a%d", root, i);
        snprintf(b[i], sizeof b[i], "%s/b%d", root, i);
        struct synth s = base_run(100 + (uint64_t)i);
        s.steps = 80;
        write_run(a[i], &s);
        s.seed = 200 + (uint64_t)i;
        s.median_s = 0.110; /* 10% slower */
        write_run(b[i], &s);
    }
    char report_file[4400];
    snprintf(report_file, sizeof report_file, "%s/report.json", b[2]); /* a report.json names a run too */
    CHECK_EQ_I(compare(a[0], a[1], a[2], "--vs", b[0], b[1], report_file, "--format", "json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    if (j) {
        CHECK_EQ_U(json_array_size(json_path(j, "base")), 3);
        CHECK_EQ_U(json_array_size(json_path(j, "new")), 3);
        CHECK_EQ_I(json_num(j, "step.n_new"), 240);
        CHECK(!strcmp(json_string_value(json_path(j, "verdict")), "slower"));
        json_decref(j);
    }
    CHECK_EQ_I(compare(a[0], a[1], a[2], "--vs", b[0], NULL), 0);
    CHECK_STR_HAS(out, "3 runs, 240 steps");
}

/* Ranks paired: rank r of BASE against rank r of NEW, each with its own
 * line; rank 1 of NEW 30 ms a step slower; rank 3 only in NEW; the pooled
 * line stays. */
static void test_ranks_paired(const char *root) {
    char a[3][4300], b[3][4300];
    for (int i = 0; i < 3; i++) {
        snprintf(a[i], sizeof a[i], "%s/ra%d", root, i);
        snprintf(b[i], sizeof b[i], "%s/rb%d", root, i);
        struct synth s = base_run(300 + (uint64_t)i);
        s.steps = 240;
        s.ranks = 3;
        s.level = levels[i];
        write_run(a[i], &s);
        s = base_run(400 + (uint64_t)i);
        s.steps = 320;
        s.ranks = 4;
        s.level = levels[(i + 1) % 3];
        s.slow_rank = 1;
        s.slow_rank_extra_s = 0.030;
        write_run(b[i], &s);
    }
    CHECK_EQ_I(compare(a[0], a[1], a[2], "--vs", b[0], b[1], b[2], "--format", "json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    if (j) {
        json_t *ranks = json_path(j, "ranks");
        CHECK_EQ_U(json_array_size(ranks), 4);
        /* unchanged ranks: not slower nor faster (same or inconclusive: the runs' levels differ by 3%) */
        static const char *const want[4] = {"same|inconclusive", "slower", "same|inconclusive", "none"};
        static const char *const presence[4] = {"both", "both", "both", "new only"};
        for (size_t r = 0; r < 4 && r < json_array_size(ranks); r++) {
            json_t *o = json_array_get(ranks, r);
            CHECK_EQ_I(json_integer_value(json_object_get(o, "rank")), (int)r);
            const char *v = json_string_value(json_object_get(o, "verdict"));
            CHECK_MSG(v && *v && strstr(want[r], v) && !strchr(v, '|'), "rank %zu: %s, want %s", r, v ? v : "(null)",
                      want[r]);
            CHECK(!strcmp(json_string_value(json_object_get(o, "presence")), presence[r]));
            /* every rank's own steps: 80 a run, 3 runs */
            CHECK_EQ_I(json_integer_value(json_object_get(o, "n_new")), r < 3 ? 240 : 0);
        }
        CHECK_NEAR(json_num(j, "ranks.1.ratio"), 1.3, 0.05);
        CHECK_EQ_I(json_num(j, "step.n_new"), 3 * 4 * 80); /* pooled: every rank's steps after warm-up */
        json_decref(j);
    }
    CHECK_EQ_I(compare(a[0], a[1], a[2], "--vs", b[0], b[1], b[2], NULL), 0);
    CHECK_STR_HAS(out, "median per step, rank");
    CHECK_STR_HAS(out, "not in base");
    CHECK_STR_HAS(out, "the \"step\" line above pools every rank's steps");
    CHECK_EQ_I(compare(b[0], "--vs", a[0], "--format", "markdown", NULL), 0);
    CHECK_STR_HAS(out, "| median per step, rank |");
    CHECK_STR_HAS(out, "| rank 3 |");
    CHECK_STR_HAS(out, "| not in new |");
    /* one process of no rank a side: no rank lines */
    CHECK_EQ_I(compare(base_dir[0], "--vs", slow_dir[0], NULL), 0);
    CHECK(!strstr(out, "median per step, rank"));
}

/* The reviewer's DDP case in miniature: 4 ranks a side, 3 runs a side,
 * NEW's rank 2 spends 20 ms more a step in data.  Rank by rank, each
 * phase is compared: rank 2's data is the one conclusive change; no other
 * rank's phase, nor rank 2's forward, is called slower or faster. */
static void test_rank_phases(const char *root) {
    char a[3][4300], b[3][4300];
    for (int i = 0; i < 3; i++) {
        snprintf(a[i], sizeof a[i], "%s/pa%d", root, i);
        snprintf(b[i], sizeof b[i], "%s/pb%d", root, i);
        struct synth s = base_run(500 + (uint64_t)i);
        s.steps = 320;
        s.ranks = 4;
        s.level = levels[i];
        write_run(a[i], &s);
        s = base_run(600 + (uint64_t)i);
        s.steps = 320;
        s.ranks = 4;
        s.level = levels[(i + 1) % 3];
        s.slow_rank = 2;
        s.slow_rank_extra_s = 0.020;
        s.slow_in_data = 1;
        write_run(b[i], &s);
    }
    CHECK_EQ_I(compare(a[0], a[1], a[2], "--vs", b[0], b[1], b[2], "--format", "json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    size_t conclusive = 0;
    for (size_t r = 0; j && r < 4; r++) {
        json_t *o = json_array_get(json_path(j, "ranks"), r);
        json_t *phases = json_object_get(o, "phases");
        CHECK_EQ_U(json_array_size(phases), 2); /* forward, data */
        CHECK_EQ_U(json_array_size(json_object_get(o, "waits")), 0);
        CHECK(json_number_value(json_object_get(o, "step_p90_new_s")) > 0.1);
        size_t k;
        json_t *ph;
        json_array_foreach(phases, k, ph) {
            const char *name = json_string_value(json_object_get(ph, "name"));
            const char *v = json_string_value(json_object_get(ph, "verdict"));
            int is_data = name && !strcmp(name, "data");
            if (r == 2 && is_data) {
                CHECK_MSG(v && !strcmp(v, "slower"), "rank 2 data: %s", v ? v : "(null)");
                /* 30 ms a step before (0.1 s x 0.6 x 0.5), 50 ms after */
                CHECK_NEAR(json_number_value(json_object_get(ph, "ratio")), 50.0 / 30, 0.1);
                CHECK(json_number_value(json_object_get(ph, "p_value")) >=
                      json_number_value(json_object_get(ph, "p_value_unadjusted")));
            }
            conclusive += v && (!strcmp(v, "slower") || !strcmp(v, "faster"));
        }
    }
    CHECK_EQ_U(conclusive, 1);
    json_decref(j);
    CHECK_EQ_I(compare(a[0], a[1], a[2], "--vs", b[0], b[1], b[2], NULL), 0);
    const char *by = strstr(out, "\nby rank ");
    CHECK(by != NULL);
    if (by) {
        const char *r2 = strstr(by, "\nrank 2 "), *r3 = strstr(by, "\nrank 3 ");
        CHECK(r2 && r3);
        if (r2 && r3) {
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(r3 - r2), r2);
            CHECK_STR_HAS(line, "data 29.9 ms -> 50.2 ms +68% slower");
            CHECK_STR_HAS(line, "slower");
            CHECK(!strstr(line, "forward"));
        }
        CHECK_STR_HAS(by, "\nrank 0 ");
        CHECK_STR_HAS(by, "no phase or wait changed conclusively");
    }
    CHECK_EQ_I(compare(a[0], a[1], a[2], "--vs", b[0], b[1], b[2], "--format", "markdown", NULL), 0);
    CHECK_STR_HAS(out, "| rank | p90 base | p90 new |");
    CHECK_STR_HAS(out, " **slower** |");
    /* one run a side: no slower, yet rank 2's data clears the runs' drift */
    CHECK_EQ_I(compare(a[0], "--vs", b[0], NULL), 0);
    by = strstr(out, "\nby rank ");
    CHECK(by && strstr(by, "data 29.") && strstr(by, "beyond drift"));
}

static void test_zone_only_on_one_side(const char *root) {
    char a[4300], b[4300];
    snprintf(a, sizeof a, "%s/za", root);
    snprintf(b, sizeof b, "%s/zb", root);
    struct synth s = base_run(7);
    write_run(a, &s);
    s.seed = 8;
    s.extra_zone = "all_reduce|sync";
    write_run(b, &s);
    CHECK_EQ_I(compare(a, b, NULL), 0);
    CHECK_STR_HAS(out, "all_reduce|sync");
    CHECK_STR_HAS(out, " new\n");
    CHECK_EQ_I(compare(b, a, "--format", "markdown", NULL), 0);
    CHECK_STR_HAS(out, "all\\_reduce\\|sync (self)"); /* escaped for a table cell */
    CHECK_STR_HAS(out, "| gone |");
}

static void test_errors(const char *root) {
    char missing[4300], bad_json[4300], other[4300], empty[4300], warm[4300];
    snprintf(missing, sizeof missing, "%s/nothing-here", root);
    CHECK_EQ_I(compare(base_dir[0], missing, NULL), 2);
    CHECK_STR_HAS(err, "stepscope: compare: NEW: ");
    CHECK_STR_HAS(err, "nothing-here: No such file or directory");
    /* a directory of neither: what it lacks; a run whose stepscope run was
     * killed (records, no report.json): what makes the report */
    CHECK(mkdir(missing, 0777) == 0);
    CHECK_EQ_I(compare(base_dir[0], missing, NULL), 2);
    CHECK_STR_HAS(err, "nothing-here: no report.json in it (is it a run directory?)");
    char killed_records[4400];
    snprintf(killed_records, sizeof killed_records, "%s/records", missing);
    CHECK(mkdir(killed_records, 0777) == 0);
    CHECK_EQ_I(compare(base_dir[0], missing, NULL), 2);
    CHECK_STR_HAS(err, "nothing-here: no report.json in it, only records (a run that did not finish its report?): "
                       "`stepscope report ");
    CHECK_STR_HAS(err, "nothing-here` rebuilds it from them");
    CHECK(strchr(err, '\n') == err + strlen(err) - 1); /* one line */
    CHECK(rmdir(killed_records) == 0 && rmdir(missing) == 0);

    /* a report cut short in its rows (a full disk, a copy stopped) */
    snprintf(bad_json, sizeof bad_json, "%s/bad.json", root);
    static char report[1 << 20];
    char whole[4300];
    snprintf(whole, sizeof whole, "%s/report.json", base_dir[0]);
    long len = read_file(whole, report, sizeof report);
    const char *rows = len > 0 ? strstr(report, "\"rows\": [") : NULL;
    CHECK(rows != NULL);
    write_file(bad_json, report, rows ? (size_t)(rows - report) + 2000 : 0);
    CHECK_EQ_I(compare(bad_json, base_dir[0], NULL), 2);
    CHECK_STR_HAS(err, "stepscope: compare: BASE: ");
    CHECK_STR_HAS(err, "bad.json:");
    CHECK_STR_HAS(err, ": unexpected end of file");
    CHECK(strchr(err, '\n') == err + strlen(err) - 1); /* one line */

    snprintf(other, sizeof other, "%s/other.json", root);
    write_file(other, "{\"schema\": \"something/2\"}", strlen("{\"schema\": \"something/2\"}"));
    CHECK_EQ_I(compare(base_dir[0], other, NULL), 2);
    CHECK_STR_HAS(err, "other.json:1:25: not a stepscope report: schema is \"something/2\", not \"stepscope.report/1\"");

    snprintf(empty, sizeof empty, "%s/empty.json", root);
    const char *no_steps = "{\"schema\": \"stepscope.report/1\", \"steps\": {\"count\": 0, \"rows\": []}}";
    write_file(empty, no_steps, strlen(no_steps));
    CHECK_EQ_I(compare(base_dir[0], empty, NULL), 2);
    CHECK_STR_HAS(err, "empty.json: no \"step\" steps recorded");

    snprintf(warm, sizeof warm, "%s/warm", root);
    struct synth s = base_run(9);
    s.steps = 0;
    write_run(warm, &s);
    CHECK_EQ_I(compare(warm, base_dir[0], NULL), 2);
    CHECK_STR_HAS(err, "all 5 \"step\" steps are warm-up");
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--step", "train_step", NULL), 2);
    CHECK_STR_HAS(err, "no \"train_step\" steps recorded");

    /* too few steps is not an error: no verdict, exit 0 even with a gate */
    char few[4300];
    snprintf(few, sizeof few, "%s/few", root);
    s = base_run(10);
    s.steps = 4;
    s.warmup = 0;
    write_run(few, &s);
    CHECK_EQ_I(compare(few, base_dir[0], "--fail-on", "slower", NULL), 0);
    CHECK_STR_HAS(out, "no verdict (too few samples to judge (4 base, 200 new");

    /* usage */
    CHECK_EQ_I(compare(base_dir[0], NULL), 2);
    CHECK_STR_HAS(err, "needs BASE and NEW");
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], slow_dir[0], NULL), 2);
    CHECK_STR_HAS(err, "put --vs between the sides");
    CHECK_EQ_I(compare(base_dir[0], "--vs", NULL), 2);
    CHECK_STR_HAS(err, "no NEW runs after --vs");
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--threshold", "lots", NULL), 2);
    CHECK_STR_HAS(err, "--threshold: 'lots' is not a percentage");
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--fail-on", "faster", NULL), 2);
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--format", "xml", NULL), 2);
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--frobnicate", NULL), 2);
    CHECK_STR_HAS(err, "unknown option '--frobnicate'");
    CHECK_EQ_I(compare(base_dir[0], same_dir[0], "--skip", NULL), 2);
    CHECK_STR_HAS(err, "option '--skip' needs a value");
    CHECK_EQ_I(compare("--help", NULL), 0);
    CHECK_STR_HAS(out, "usage: stepscope compare BASE NEW");
}

/* One row of the hand-made report of test_reader. */
static void add_row(struct sps_run *run, long name, int tid, double duration_s, int warmup, long zone, double self_s) {
    struct sps_step_row *row = &run->steps[run->nsteps];
    row->index = run->nsteps++;
    row->name = name;
    row->tid = tid;
    row->start_ns = run->start_ns + ns_of(0.5 * (double)row->index);
    row->end_ns = row->start_ns + ns_of(duration_s);
    row->warmup = warmup;
    row->by_name = malloc(run->nnames * sizeof *row->by_name);
    for (size_t k = 0; k < run->nnames; k++)
        row->by_name[k] = NAN;
    if (zone >= 0)
        row->by_name[zone] = self_s;
    row->by_name[run->nnames - 2] = 2.5; /* the value */
    row->by_name[run->nnames - 1] = 64;  /* the counter */
}

/* A report stepscope writes with what compare must pick out of it: rows
 * of another step name, a warm-up row, two threads, zones a row does not
 * enter, values and counters in the rows, a zone name with escapes (one
 * a surrogate pair), a command that is not ASCII. */
static void write_hand_report(const char *path) {
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    struct sps_run *run = &rep.run;
    run->start_ns = 7000000000ULL;
    run->names = calloc(6, sizeof *run->names);
    add_name(run, "step", SPS_KIND_STEP, 4);
    add_name(run, "eval", SPS_KIND_STEP, 1);
    add_name(run, "f\xc3\xa9\"x\xf0\x9f\x98\x80", SPS_KIND_ZONE, 1);
    add_name(run, "g", SPS_KIND_ZONE, 1);
    add_name(run, "loss", SPS_KIND_VALUE, 5);
    add_name(run, "samples", SPS_KIND_COUNTER, 5);
    run->nprocs = 1;
    run->procs = calloc(1, sizeof *run->procs);
    run->procs[0].pid = 100;
    run->procs[0].rank = run->procs[0].local_rank = run->procs[0].world_size = -1;
    run->procs[0].path = strdup("100-0.sps");
    run->steps = calloc(5, sizeof *run->steps);
    add_row(run, 0, 100, 0.25, 0, 2, 1e-3);
    add_row(run, 1, 100, 9, 0, -1, 0);    /* eval: not the step compared */
    add_row(run, 0, 100, 15, 1, -1, 0);   /* warm-up */
    add_row(run, 0, 100, 0.125, 0, 3, 2);
    add_row(run, 0, 101, 0.5, 0, -1, 0);  /* another thread */
    run->steps_recorded = 6;              /* one more than the rows: a ring dropped one */
    run->warmup_steps = 1;
    char *argv[] = {"python3", "t\xc3\xa9st.py", NULL};
    rep.info.argc = 2;
    rep.info.argv = argv;
    char why[512];
    if (sps__report_json_write(&rep, path, why, sizeof why) != 0) {
        fprintf(stderr, "test setup: %s\n", why);
        exit(2);
    }
    rep.info.argv = NULL;
    sps__report_free(&rep);
}

/* What compare reads of a report (through the report model's one reader,
 * the rows streamed), and what it refuses: anything but a report as
 * stepscope writes it, with the file, line and column. */
/* cp (a file copied whole) */
static void copy_file(const char *from, const char *to) {
    size_t len = 0;
    char *data = read_whole(from, &len);
    CHECK_MSG(data != NULL, "cannot read %s", from);
    if (data)
        write_file(to, data, len);
    free(data);
}

/* A run directory whose report.json is another run's (`cp pt/report.json
 * k2/`): refused in one line that says what rebuilds it, not compared as
 * if it were k2's; report.json alone (a file, or a directory without
 * records) and a report.json with a record it does not list (a process
 * that started after it was written) still compare. */
static void test_stale_side(const char *root) {
    char pt[4300], k2[4300], json[4400], k2json[4400], solo[4300], path[4400], extra[4400];
    snprintf(pt, sizeof pt, "%s/stale-pt", root);
    snprintf(k2, sizeof k2, "%s/stale-k2", root);
    char *run_pt[] = {STEPSCOPE, "run", "-q", "-o", pt, "--", WORKLOAD, "--steps", "6", NULL};
    char *run_k2[] = {STEPSCOPE, "run", "-q", "-o", k2, "--", WORKLOAD, "--steps", "9", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(run_pt, err, sizeof err)), 0);
    CHECK_EQ_I(exit_code_of(run_capture(run_k2, err, sizeof err)), 0);
    CHECK_EQ_I(compare(pt, k2, "--format", "json", NULL), 0);
    snprintf(json, sizeof json, "%s/report.json", pt);
    snprintf(k2json, sizeof k2json, "%s/report.json", k2);
    copy_file(json, k2json);
    CHECK_EQ_I(compare(pt, k2, NULL), 2);
    CHECK_STR_HAS(err, "stepscope: compare: NEW: ");
    CHECK_STR_HAS(err, "stale-k2: report.json is another run's: ");
    CHECK_STR_HAS(err, "; `stepscope report ");
    CHECK_STR_HAS(err, "stale-k2` rebuilds it from the records");
    CHECK(strchr(err, '\n') == err + strlen(err) - 1); /* one line */
    CHECK_EQ_I(compare(k2, pt, NULL), 2);
    CHECK_STR_HAS(err, "stepscope: compare: BASE: ");
    /* the file alone is what it says it is */
    CHECK_EQ_I(compare(pt, k2json, NULL), 0);
    snprintf(solo, sizeof solo, "%s/stale-solo", root);
    CHECK(mkdir(solo, 0777) == 0);
    snprintf(path, sizeof path, "%s/report.json", solo);
    copy_file(json, path);
    CHECK_EQ_I(compare(pt, solo, NULL), 0);
    /* rebuilt by `stepscope report`, as the line says: compared again, 9
     * steps against 6 */
    char *rebuild[] = {STEPSCOPE, "report", k2, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(rebuild, err, sizeof err)), 0);
    CHECK_EQ_I(compare(pt, k2, "--format", "json", NULL), 0);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    CHECK_MSG(j != NULL, "%s", jerr.text);
    CHECK(j && json_num(j, "new.0.steps_counted") == 9);
    json_decref(j);
    /* pt's record beside k2's under a name k2's report.json does not list */
    snprintf(path, sizeof path, "%s/records", pt);
    CHECK(files_named(path, "") >= 1);
    char first[4600] = "";
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".sps"))
            snprintf(first, sizeof first, "%s/%s", path, e->d_name);
    if (d)
        closedir(d);
    snprintf(extra, sizeof extra, "%s/records/999999999-0.sps", k2);
    copy_file(first, extra);
    CHECK_EQ_I(compare(pt, k2, NULL), 0);
}

static void test_reader(const char *root) {
    char path[4300], why[1024];
    snprintf(path, sizeof path, "%s/hand.json", root);
    write_hand_report(path);
    struct sps_cmp_side side = {0};
    struct sps_cmp_load_options opt = {NULL, -1};
    CHECK_EQ_I(sps__cmp_side_add(&side, path, &opt, why, sizeof why), 0);
    if (side.nruns == 1) {
        const struct sps_cmp_run *r = &side.runs[0];
        CHECK_EQ_U(r->rows, 4);
        CHECK_EQ_U(r->skipped, 1);
        CHECK_EQ_U(r->nsteps, 3);
        CHECK_EQ_U(r->steps_counted, 6);
        CHECK_NEAR(r->step_s[0], 0.25, 0);
        CHECK_NEAR(r->step_s[1], 0.125, 0);
        CHECK_NEAR(r->step_s[2], 0.5, 0);
        CHECK_EQ_U(r->nzones, 2);
        const struct sps_cmp_zone *z = sps__cmp_run_zone(r, "f\xc3\xa9\"x\xf0\x9f\x98\x80");
        CHECK(z != NULL);
        if (z)
            CHECK(z->self_s[0] == 1e-3 && z->self_s[1] == 0 && z->self_s[2] == 0);
        z = sps__cmp_run_zone(r, "g");
        CHECK(z && z->self_s[0] == 0 && z->self_s[1] == 2 && z->self_s[2] == 0); /* not entered: no time */
        CHECK(sps__cmp_run_zone(r, "loss") == NULL && sps__cmp_run_zone(r, "samples") == NULL);
        CHECK_STR_HAS(r->command, "python3 t\xc3\xa9st.py");
    }
    sps__cmp_side_free(&side);
    /* --skip counts per (pid, tid) stream: thread 100 leaves out its 0.25,
     * thread 101 its only step */
    opt.skip = 1;
    CHECK_EQ_I(sps__cmp_side_add(&side, path, &opt, why, sizeof why), 0);
    CHECK(side.nruns == 1 && side.runs[0].nsteps == 2 && side.runs[0].step_s[0] == 15 &&
          side.runs[0].step_s[1] == 0.125 && side.runs[0].skipped == 2);
    sps__cmp_side_free(&side);
    opt.skip = -1;
    /* what it refuses, with where */
    struct {
        const char *doc, *says;
    } bad[] = {
        /* keys in another order than stepscope writes them */
        {"{\"steps\": {\"rows\": []}, \"schema\": \"stepscope.report/1\"}",
         ":1:10: not a stepscope report: schema is missing (report.json begins with \"schema\", this begins with "
         "\"steps\")"},
        {"{\"schema\": \"something/2\"}", ":1:25: not a stepscope report: schema is \"something/2\", not "
                                        "\"stepscope.report/1\""},
        {"", ":1:1: not a stepscope report: the file is empty"},
        {"[1]", ":1:1: not a stepscope report: a JSON object expected, found '['"},
        {"{\"schema\": \"stepscope.report/1\", \"steps\": {\"rows\": [{\"name\": \"step\", \"duration_s\": null}]}}",
         ":1:84: steps.rows[].duration_s: a number of seconds expected"},
        {"{\"schema\": \"stepscope.report/1\", \"steps\": {\"rows\": [{\"name\": \"step\", \"duration_s\": -1}]}}",
         ":1:86: steps.rows[].duration_s: -1 is negative"},
        /* rows of any name are rows: no junk is skipped */
        {"{\"schema\": \"stepscope.report/1\",\n \"steps\": {\"rows\": [{\"name\": \"eval\", \"duration_s\": \"x\"}]}}",
         ":2:52: steps.rows[].duration_s: a number of seconds expected"},
        {"{\"schema\": \"stepscope.report/1\",\n \"steps\": {\"rows\": [7]}}", ":2:21: steps.rows[]: an object expected"},
        {"{\"schema\": \"stepscope.report/1\", \"steps\": {\"rows\": 3}}", ":1:52: steps.rows: an array expected"},
        {"{\"schema\": \"stepscope.report/1\",\n \"steps\": {\"rows\": [{} {}]}}", ":2:24: ',' expected, found '{'"},
        /* a verdict stepscope never writes */
        {"{\"schema\": \"stepscope.report/1\", \"analysis\": {\"bottleneck\": {\"verdict\": \"compute-bound\"}}}",
         ":1:88: \"verdict\": \"compute-bound\" is not a name stepscope writes"},
        {"{\"schema\": \"stepscope.report/1\", \"stepscope_version\": [tru]}", "invalid token (expected true)"},
        {"{\"schema\": \"stepscope.report/1\", \"command\": [\"\\q\"]}", "bad escape '\\q' in a string"},
        {"{\"schema\": \"stepscope.report/1\"} x", "end of file expected after the report"},
        {"{\"schema\": \"stepscope.report/1\",\n \"steps\": {\"rows\": [{\"name\": \"step\", \"duration_s\": 1}",
         ":2:54: unexpected end of file, ',' expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_file(path, bad[i].doc, strlen(bad[i].doc));
        CHECK_MSG(sps__cmp_side_add(&side, path, &opt, why, sizeof why) == SPS_EFORMAT, "refused: %s", bad[i].doc);
        CHECK_STR_HAS(why, path);
        CHECK_STR_HAS(why, bad[i].says);
        CHECK(!strchr(why, '\n'));
        CHECK_EQ_U(side.nruns, 0);
    }
    /* numbers: the fast path and strtod agree on every double printed
     * the ways report writers print them */
    FILE *f = tmpfile();
    struct sps_rng r;
    sps__rng_seed(&r, 77);
    enum { N = 20000 };
    static double want[N];
    for (int i = 0; i < N; i++) {
        double v = exp(40 * (double)(sps__rng_next(&r) >> 11) * 0x1.0p-53 - 25);
        char text[64];
        snprintf(text, sizeof text, i % 3 == 0 ? "%.9g" : i % 3 == 1 ? "%.17g" : "%.6f", v);
        want[i] = strtod(text, NULL);
        fprintf(f, "%s ", text);
    }
    rewind(f);
    struct sps_jscan scan;
    int wrong = 0;
    CHECK_EQ_I(sps__jscan_open(&scan, f), 0);
    for (int i = 0; i < N; i++) {
        double got;
        if (sps__jscan_number(&scan, &got) || memcmp(&got, &want[i], sizeof got))
            wrong++;
    }
    sps__jscan_close(&scan);
    fclose(f);
    CHECK_EQ_I(wrong, 0);
}

/* A run of GPU zones (report_json_write's report, one process, one thread,
 * 25 steps after a warm-up step): name the .gpu_ms values each step holds,
 * in milliseconds.  gpu[k] is "<gpu_names[k]>.gpu_ms"; fn(k, i) gives step
 * i's value, NAN for none.  torch_peak: analysis.torch_cuda_memory's peak
 * allocated (reserved is twice it); 0: no torch_cuda_memory. */
#define GPU_STEPS 25
typedef double (*gpu_value_fn)(int k, int i);

static void write_gpu_report(const char *path, const char *const *gpu_names, int ngpu, gpu_value_fn fn,
                             double torch_peak) {
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    struct sps_run *run = &rep.run;
    run->start_ns = 9000000000ULL;
    run->names = calloc((size_t)ngpu + 3, sizeof *run->names);
    add_name(run, "step", SPS_KIND_STEP, GPU_STEPS + 1);
    add_name(run, "forward", SPS_KIND_ZONE, GPU_STEPS + 1);
    add_name(run, "loss", SPS_KIND_VALUE, GPU_STEPS + 1); /* a value, not a GPU time */
    for (int k = 0; k < ngpu; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s.gpu_ms", gpu_names[k]);
        add_name(run, name, SPS_KIND_VALUE, GPU_STEPS);
    }
    run->nprocs = 1;
    run->procs = calloc(1, sizeof *run->procs);
    run->procs[0].pid = 100;
    run->procs[0].rank = run->procs[0].local_rank = run->procs[0].world_size = -1;
    run->procs[0].path = strdup("100-0.sps");
    run->steps = calloc(GPU_STEPS + 1, sizeof *run->steps);
    for (int i = -1; i < GPU_STEPS; i++) { /* step -1: warm-up, its values far off */
        add_row(run, 0, 100, 0.1 + 0.001 * (i % 3), i < 0, 1, 0.01);
        struct sps_step_row *row = &run->steps[run->nsteps - 1];
        for (int k = 0; k < ngpu; k++)
            row->by_name[3 + k] = i < 0 ? 1000 : fn(k, i);
    }
    run->steps_recorded = GPU_STEPS + 1;
    run->warmup_steps = 1;
    if (torch_peak > 0) {
        struct sps_torch_memory *t = &rep.analysis.torch_memory;
        rep.analysis.computed = 1;
        sps__report_analysis_unknown(&rep.analysis);
        t->present = 1;
        t->pid = 100;
        t->tid = 100;
        t->processes = 1;
        t->steps = t->steps_read = GPU_STEPS + 1;
        t->peak_allocated_bytes = torch_peak;
        t->peak_reserved_bytes = 2 * torch_peak;
        t->end_allocated_bytes = t->end_reserved_bytes = torch_peak / 2;
        t->growth_bytes_per_step = NAN;
    }
    char why[512];
    if (sps__report_json_write(&rep, path, why, sizeof why) != 0) {
        fprintf(stderr, "test setup: %s\n", why);
        exit(2);
    }
    sps__report_free(&rep);
}

/* BASE: forward 1.5, 1.6, 1.7 ms in turn (median 1.6), copy 0.19, 0.2,
 * 0.21, optim in even steps only (0.6 every fourth step, else 0.5: 7 of
 * 0.6 and 6 of 0.5, median 0.6). */
static const char *const gpu_base_names[] = {"forward", "copy", "optim"};
static double gpu_base(int k, int i) {
    return k == 0 ? 1.5 + 0.1 * (i % 3) : k == 1 ? 0.19 + 0.01 * (i % 3) : i % 2 ? NAN : i % 4 ? 0.5 : 0.6;
}

/* NEW: forward 3.0, 3.1, 3.2 (median 3.1), copy as BASE's, no optim,
 * backward 4.0 ms (new). */
static const char *const gpu_new_names[] = {"forward", "copy", "backward"};
static double gpu_new(int k, int i) {
    return k == 0 ? 3.0 + 0.1 * (i % 3) : k == 1 ? 0.19 + 0.01 * (i % 3) : 4.0;
}

/* BASE's, with a negative value in step 3 (no GPU time is negative). */
static double gpu_base_negative(int k, int i) {
    return k == 0 && i == 3 ? -0.5 : gpu_base(k, i);
}

static const struct sps_cmp_row *gpu_row_named(const struct sps_cmp_result *r, const char *name) {
    for (size_t i = 0; i < r->ngpu; i++)
        if (!strcmp(r->gpu[i].name, name))
            return &r->gpu[i];
    return NULL;
}

static const struct sps_cmp_figure *figure_named(const struct sps_cmp_result *r, const char *label) {
    for (size_t i = 0; i < r->nfigures; i++)
        if (!strcmp(r->figures[i].label, label))
            return &r->figures[i];
    return NULL;
}

/* Each GPU zone's GPU time per step (its .gpu_ms values) and torch's
 * allocator memory, read and compared: exact values. */
static void test_gpu_zones(const char *root) {
    char bpath[4300], npath[4300], plain[4300], why[1024];
    snprintf(bpath, sizeof bpath, "%s/gpu_base.json", root);
    snprintf(npath, sizeof npath, "%s/gpu_new.json", root);
    snprintf(plain, sizeof plain, "%s/gpu_none.json", root);
    write_gpu_report(bpath, gpu_base_names, 3, gpu_base, 1073741824.0);
    write_gpu_report(npath, gpu_new_names, 3, gpu_new, 1610612736.0);
    write_gpu_report(plain, NULL, 0, NULL, 0); /* no GPU zones, no torch memory */
    struct sps_cmp_side base = {0}, new_side = {0}, none = {0};
    struct sps_cmp_load_options opt = {NULL, -1};
    CHECK_EQ_I(sps__cmp_side_add(&base, bpath, &opt, why, sizeof why), 0);
    CHECK_EQ_I(sps__cmp_side_add(&new_side, npath, &opt, why, sizeof why), 0);
    CHECK_EQ_I(sps__cmp_side_add(&none, plain, &opt, why, sizeof why), 0);
    if (base.nruns != 1 || new_side.nruns != 1 || none.nruns != 1)
        return;
    /* what is read: seconds, the warm-up step left out, a step without a
     * value NAN (absent), the value "loss" no GPU zone */
    const struct sps_cmp_run *b = &base.runs[0];
    CHECK_EQ_U(b->nsteps, GPU_STEPS);
    CHECK_EQ_U(b->ngpu, 3);
    const struct sps_cmp_zone *z = sps__cmp_run_gpu_zone(b, "forward");
    CHECK(z && z->self_s[0] == 1.5 / 1e3 && z->self_s[1] == 1.6 / 1e3 && z->self_s[24] == 1.5 / 1e3);
    z = sps__cmp_run_gpu_zone(b, "optim");
    CHECK(z && z->self_s[0] == 0.6 / 1e3 && isnan(z->self_s[1]) && z->self_s[2] == 0.5 / 1e3);
    CHECK(sps__cmp_run_gpu_zone(b, "loss") == NULL);
    CHECK(sps__cmp_run_zone(b, "forward") != NULL && sps__cmp_run_zone(b, "forward.gpu_ms") == NULL);
    CHECK_NEAR(b->torch_peak_allocated_bytes, 1073741824.0, 0);
    CHECK_NEAR(b->torch_peak_reserved_bytes, 2147483648.0, 0);
    CHECK_EQ_U(none.runs[0].ngpu, 0);
    CHECK(isnan(none.runs[0].torch_peak_allocated_bytes));

    struct sps_compare_params p;
    sps__compare_params_default(&p);
    struct sps_cmp_result r;
    CHECK_EQ_I(sps__cmp_build(&base, &new_side, &p, &r), 0);
    CHECK_EQ_U(r.ngpu, 4);
    CHECK_EQ_U(r.nzones, 1); /* the CPU zone; GPU times are not zones */
    const struct sps_cmp_row *fw = gpu_row_named(&r, "forward"), *cp = gpu_row_named(&r, "copy"),
                             *op = gpu_row_named(&r, "optim"), *bw = gpu_row_named(&r, "backward");
    CHECK(fw && cp && op && bw);
    if (fw && cp && op && bw) {
        /* the largest change of median first (a side without: 0) */
        CHECK(bw == &r.gpu[0] && fw == &r.gpu[1] && op == &r.gpu[2] && cp == &r.gpu[3]);
        CHECK_EQ_I(fw->presence, SPS_CMP_BOTH);
        CHECK_EQ_U(fw->c.n_base, 25);
        CHECK_EQ_U(fw->c.n_new, 25);
        CHECK_NEAR(fw->c.median_base, 1.6e-3, 1e-15);
        CHECK_NEAR(fw->c.median_new, 3.1e-3, 1e-15);
        CHECK_NEAR(fw->c.ratio, 3.1 / 1.6, 1e-12);
        CHECK_EQ_I(fw->c.verdict, SPS_VERDICT_INCONCLUSIVE); /* one run a side: never slower */
        CHECK_EQ_I(cp->presence, SPS_CMP_BOTH);
        CHECK_NEAR(cp->c.ratio, 1, 1e-12);
        /* Holm over the two judged GPU zones: the smaller p doubled */
        const struct sps_cmp_row *lo = fw->p_unadjusted <= cp->p_unadjusted ? fw : cp;
        const struct sps_cmp_row *hi = lo == fw ? cp : fw;
        CHECK_NEAR(lo->c.p, fmin(1, 2 * lo->p_unadjusted), 1e-15);
        CHECK_NEAR(hi->c.p, fmax(lo->c.p, hi->p_unadjusted), 1e-15);
        /* optim in BASE only, over its 13 steps that hold a value */
        CHECK_EQ_I(op->presence, SPS_CMP_BASE_ONLY);
        CHECK_EQ_I(op->c.verdict, SPS_VERDICT_NONE);
        CHECK_EQ_U(op->c.n_base, 13);
        CHECK_EQ_U(op->c.n_new, 0);
        CHECK_NEAR(op->c.median_base, 0.6e-3, 1e-15);
        CHECK_NEAR(op->c.mean_base, (7 * 0.6e-3 + 6 * 0.5e-3) / 13, 1e-15);
        CHECK_STR_HAS(op->c.why, "in BASE only");
        CHECK_EQ_I(bw->presence, SPS_CMP_NEW_ONLY);
        CHECK_NEAR(bw->c.median_new, 4e-3, 1e-15);
        CHECK_EQ_U(bw->c.n_new, 25);
    }
    const struct sps_cmp_figure *fa = figure_named(&r, "peak torch.cuda allocated"),
                                *fr = figure_named(&r, "peak torch.cuda reserved");
    CHECK(fa && fa->base == 1073741824.0 && fa->new_ == 1610612736.0 && !fa->higher_is_better &&
          !strcmp(fa->unit, "bytes"));
    CHECK(fr && fr->base == 2147483648.0 && fr->new_ == 3221225472.0);
    sps__cmp_result_free(&r);
    /* NEW without GPU zones or torch memory: each GPU zone gone, the
     * figures said with "-" on the side without, not an error */
    CHECK_EQ_I(sps__cmp_build(&base, &none, &p, &r), 0);
    CHECK_EQ_U(r.ngpu, 3);
    for (size_t i = 0; i < r.ngpu; i++)
        CHECK_EQ_I(r.gpu[i].presence, SPS_CMP_BASE_ONLY);
    fa = figure_named(&r, "peak torch.cuda allocated");
    CHECK(fa && fa->base == 1073741824.0 && isnan(fa->new_));
    sps__cmp_result_free(&r);
    /* a negative value is left out, not refused: forward over 24 steps */
    char negpath[4300];
    snprintf(negpath, sizeof negpath, "%s/gpu_negative.json", root);
    write_gpu_report(negpath, gpu_base_names, 3, gpu_base_negative, 0);
    struct sps_cmp_side neg = {0};
    CHECK_EQ_I(sps__cmp_side_add(&neg, negpath, &opt, why, sizeof why), 0);
    CHECK_EQ_I(sps__cmp_build(&neg, &new_side, &p, &r), 0);
    fw = gpu_row_named(&r, "forward");
    CHECK(fw && fw->c.n_base == 24 && fw->c.n_new == 25);
    sps__cmp_result_free(&r);
    sps__cmp_side_free(&neg);
    sps__cmp_side_free(&base);
    sps__cmp_side_free(&new_side);
    sps__cmp_side_free(&none);

    /* the command, each format */
    CHECK_EQ_I(compare(bpath, npath, "--fail-on", "slower", NULL), 0);
    CHECK_STR_HAS(out, "\nGPU time per step           base       new   change");
    CHECK_STR_HAS(out, "\n  backward                     -   4.00 ms        -                  -         -      -  new\n"
                       "  forward                1.60 ms   3.10 ms   +93.7%  +79.8% .. +108.8%");
    CHECK_STR_HAS(out, "\n  optim                   600 us         -        -                  -         -      -  gone\n"
                       "  copy                    200 us    200 us    +0.0%");
    CHECK_STR_HAS(out, "(GPU zones: each step's <zone>.gpu_ms, over the steps that hold one");
    CHECK_STR_HAS(out, "\npeak torch.cuda allocated       1.0 GiB      1.5 GiB   +50.0%\n");
    CHECK_STR_HAS(out, "\npeak torch.cuda reserved        2.0 GiB      3.0 GiB   +50.0%\n");
    CHECK_EQ_I(compare(bpath, plain, NULL), 0);
    CHECK_STR_HAS(out, "\npeak torch.cuda allocated       1.0 GiB            -        -\n");
    CHECK_EQ_I(compare(plain, plain, NULL), 0);
    CHECK(!strstr(out, "GPU time per step") && !strstr(out, "torch.cuda"));
    CHECK_EQ_I(compare(bpath, npath, "--format", "markdown", NULL), 0);
    CHECK_STR_HAS(out, "\n| GPU time per step | base | new | change | 95% interval | p | noise | verdict |\n");
    CHECK_STR_HAS(out, "\n| forward | 1.60 ms | 3.10 ms | +93.7% | +79.8% .. +108.8% |");
    CHECK_STR_HAS(out, "\n| optim | 600 us | - | - | - | - | - | gone |\n");
    CHECK_STR_HAS(out, "\n| peak torch.cuda allocated | 1.0 GiB | 1.5 GiB | +50.0% |\n");
    CHECK_EQ_I(compare(bpath, npath, "--format", "json", NULL), 0);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    CHECK_MSG(j != NULL, "JSON output parses: %s", j ? "" : jerr.text);
    if (!j)
        return;
    json_t *gpu = json_path(j, "zones_gpu");
    CHECK_EQ_U(json_array_size(gpu), 4);
    CHECK(!strcmp(json_string_value(json_path(j, "zones_gpu.1.name")), "forward"));
    CHECK_NEAR(json_num(j, "zones_gpu.1.median_base_s"), 1.6e-3, 1e-15);
    CHECK_NEAR(json_num(j, "zones_gpu.1.median_new_s"), 3.1e-3, 1e-15);
    CHECK_NEAR(json_num(j, "zones_gpu.1.ratio"), 3.1 / 1.6, 1e-9);
    CHECK_EQ_I(json_num(j, "zones_gpu.1.n_base"), 25);
    CHECK(!strcmp(json_string_value(json_path(j, "zones_gpu.1.presence")), "both"));
    /* the keys of zones_self, each */
    json_t *self0 = json_path(j, "zones_self.0"), *gpu0 = json_path(j, "zones_gpu.0");
    const char *key;
    json_t *v;
    CHECK_EQ_U(json_object_size(gpu0), json_object_size(self0));
    json_object_foreach(self0, key, v) CHECK_MSG(json_object_get(gpu0, key) != NULL, "zones_gpu has %s", key);
    size_t i;
    json_t *row;
    int gone = 0, fresh = 0;
    json_array_foreach(gpu, i, row) {
        const char *pres = json_string_value(json_object_get(row, "presence"));
        const char *name = json_string_value(json_object_get(row, "name"));
        gone += !strcmp(pres, "base only") && !strcmp(name, "optim") &&
                json_is_null(json_object_get(row, "median_new_s")) &&
                fabs(json_number_value(json_object_get(row, "median_base_s")) - 0.6e-3) < 1e-15;
        fresh += !strcmp(pres, "new only") && !strcmp(name, "backward");
    }
    CHECK_EQ_I(gone, 1);
    CHECK_EQ_I(fresh, 1);
    int figs = 0;
    json_array_foreach(json_path(j, "figures"), i, row) {
        const char *name = json_string_value(json_object_get(row, "name"));
        if (!strcmp(name, "peak torch.cuda allocated") || !strcmp(name, "peak torch.cuda reserved")) {
            figs++;
            CHECK_NEAR(json_number_value(json_object_get(row, "ratio")), 1.5, 1e-12);
            CHECK(!strcmp(json_string_value(json_object_get(row, "unit")), "bytes"));
        }
    }
    CHECK_EQ_I(figs, 2);
    json_decref(j);
    /* without GPU zones, an empty list */
    CHECK_EQ_I(compare(plain, plain, "--format", "json", NULL), 0);
    j = json_loads(out, 0, &jerr);
    CHECK(j && json_array_size(json_path(j, "zones_gpu")) == 0);
    json_decref(j);
}

/* Colour on a terminal only, and never with NO_COLOR: the command runs on
 * a pseudo-terminal made by script(1) (util-linux, in every Debian). */
static void test_colour(void) {
    if (access("/usr/bin/script", X_OK) != 0) {
        printf("SKIP colour on a terminal: /usr/bin/script is not installed\n");
        return;
    }
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "%s compare %s %s %s --vs %s %s %s", STEPSCOPE, A, S);
    char *argv[] = {"/usr/bin/script", "-qec", cmd, "/dev/null", NULL};
    unsetenv("NO_COLOR");
    setenv("TERM", "xterm", 1);
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out_path, err, sizeof err)), 0);
    read_file(out_path, out, sizeof out);
    CHECK_STR_HAS(out, "\033[1m\033[31mstep time: ");
    setenv("NO_COLOR", "1", 1);
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out_path, err, sizeof err)), 0);
    read_file(out_path, out, sizeof out);
    CHECK_STR_HAS(out, "% slower");
    CHECK(!strchr(out, '\033'));
    unsetenv("NO_COLOR");
}

int main(void) {
    char root[4096];
    snprintf(root, sizeof root, "%s", tmpdir_new("compare"));
    snprintf(out_path, sizeof out_path, "%s/stdout", root);
    for (int i = 0; i < 3; i++) {
        snprintf(base_dir[i], sizeof base_dir[i], "%s/base%d", root, i);
        snprintf(slow_dir[i], sizeof slow_dir[i], "%s/slow%d", root, i);
        snprintf(same_dir[i], sizeof same_dir[i], "%s/same%d", root, i);
        struct synth s = base_run(1 + (uint64_t)i);
        s.level = levels[i];
        s.started = 1.8e9 + 20 * i; /* BASE and SLOW interleaved */
        s.gpu_peak = 8e9;
        write_run(base_dir[i], &s);
        s = base_run(11 + (uint64_t)i);
        s.level = levels[(i + 1) % 3];
        s.started = 1.8e9 + 20 * i + 10;
        s.forward_extra_s = 0.030; /* the forward zone 30 ms longer: the step 30% */
        s.samples_per_s = 3050;
        s.bottleneck = SPS_BN_GPU;
        s.gpu_peak = 12e9;
        write_run(slow_dir[i], &s);
        s = base_run(21 + (uint64_t)i); /* test_compare_stats measures the false-alarm rate */
        s.level = levels[(i + 2) % 3];
        s.started = 1.9e9 + 20 * i; /* after every BASE run */
        write_run(same_dir[i], &s);
    }
    snprintf(tail_dir, sizeof tail_dir, "%s/tail", root);
    struct synth s = base_run(4);
    s.outliers = 5;
    write_run(tail_dir, &s);

    test_slowdown();
    test_one_run_a_side();
    test_same_and_outliers();
    test_command_warning(root);
    test_pooled_runs(root);
    test_zone_only_on_one_side(root);
    test_ranks_paired(root);
    test_rank_phases(root);
    test_errors(root);
    test_stale_side(root);
    test_reader(root);
    test_gpu_zones(root);
    test_colour();
    printf("%d passed, %d failed\n", check_passes, check_failures);
    return check_failures != 0;
}
