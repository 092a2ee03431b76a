/*
 * bench_report_read_sections.c - what reading report.json's machine half
 * and analysis into the model costs (src/report/report_read_machine.c,
 * report_read_analysis.c), against two baselines in the same run:
 *
 *   skip     the scanner walking the whole document without keeping
 *            anything (sps__jscan_skip): the floor any streaming reader
 *            pays to see the bytes;
 *   typed    the sections read into the model: series rebuilt point by
 *            point, the analysis field by field (the rest skipped);
 *   jansson  json_load_file of the same file, the document tree the
 *            interim reader parsed before it walked anything.
 *
 * The report is the largest machine half a sampler keeps: every host
 * metric, 16 GPUs of every GPU metric, 16 sensors and 64 processes, each
 * series at its 512-point cap.  The three are interleaved, each repeated
 * (default 15 rounds); medians and ranges are printed with the ratios.
 *
 *     bench_report_read_sections [rounds]
 */
#define _GNU_SOURCE

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "render/render.h"
#include "report/jscan.h"
#include "report/report.h"
#include "report/report_read.h"
#include "sampler/sampler.h"
#include "stepscope.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A series at its cap: 2000 readings, 500 points of 4. */
static void fill(struct sps__series *s, int64_t t0, int64_t step_ns, double scale) {
    sps__series_init(s, SPS_SAMPLER_DEFAULT_POINTS);
    for (int k = 0; k < 2000; k++)
        sps__series_add(s, t0 + k * step_ns + k % 7, scale * (1.0 + 0.25 * sin(k * 0.01)) + k);
}

static struct sps__sampler_result *full_sampler(int64_t t0) {
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->interval_ms = 100;
    r->machine_interval_ms = 500;
    r->tree_pid = 1000;
    r->started_ns = t0;
    r->ticks = r->interval_ticks = 2000;
    r->machine_ticks = 400;
    r->tick_ns_total = 2000 * 40000;
    r->thread_cpu_seconds = 0.25;
    r->thread_ns_total = 200000000000;
    for (int i = 0; i < SPS_SOURCE_COUNT; i++)
        r->sources[i] = (struct sps__source_result){.tried = 1, .available = 1, .in_use = 1, .reads = 2000,
                                                    .read_ns_total = 2000 * 30000};
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        fill(&r->host[i], t0, 100000000, 1e6 * (i + 1));
    r->ngpus = SPS_CAPTURE_MAX_GPUS;
    for (int g = 0; g < r->ngpus; g++) {
        r->gpu[g].index = g;
        r->gpu[g].source = SPS_SOURCE_NVML;
        snprintf(r->gpu[g].name, sizeof r->gpu[g].name, "NVIDIA H100 80GB HBM3");
        snprintf(r->gpu[g].uuid, sizeof r->gpu[g].uuid, "GPU-%08d-0000-0000", g);
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            fill(&r->gpu[g].m[i], t0 + g, 500000000, 100.0 * (i + 1));
    }
    r->nsensors = SPS_CAPTURE_MAX_SENSORS;
    for (int k = 0; k < r->nsensors; k++) {
        snprintf(r->sensor[k].label, sizeof r->sensor[k].label, "sensor %d", k);
        fill(&r->sensor[k].celsius, t0 + 3, 500000000, 40.0);
    }
    r->nprocesses = SPS_SAMPLER_MAX_PROCESSES;
    for (int k = 0; k < r->nprocesses; k++) {
        r->process[k].pid = 1000 + k;
        snprintf(r->process[k].comm, sizeof r->process[k].comm, "worker-%d", k);
        r->process[k].first_seen_ns = t0;
        fill(&r->process[k].rss_bytes, t0, 100000000, 5e8);
    }
    return r;
}

static int skip_all(const char *path) {
    FILE *f = fopen(path, "r");
    struct sps_jscan s;
    int rc = f ? sps__jscan_open(&s, f) : SPS_EIO;
    if (!rc) {
        rc = sps__jscan_skip(&s);
        sps__jscan_close(&s);
    }
    if (f)
        fclose(f);
    return rc;
}

/* The top level walked, the machine half and the analysis read. */
static int read_typed(const char *path, struct sps_report *rep) {
    memset(rep, 0, sizeof *rep);
    FILE *f = fopen(path, "r");
    if (!f)
        return SPS_EIO;
    struct sps_jscan s;
    int rc = sps__jscan_open(&s, f), more = 1;
    if (!rc)
        rc = sps__jscan_expect(&s, '{');
    for (int first = 1; !rc && !(rc = sps__jscan_member(&s, first, &more)) && more; first = 0) {
        char key[64];
        snprintf(key, sizeof key, "%s", s.str);
        if ((rc = sps__report_read_machine(&s, key, rep)) == 1)
            rc = !strcmp(key, "analysis") ? sps__report_read_analysis(&s, rep) : sps__jscan_skip(&s);
    }
    if (rc)
        fprintf(stderr, "bench_report_read_sections: %lu:%lu: %s\n", s.err_line, s.err_col, s.err);
    sps__jscan_close(&s);
    fclose(f);
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summarize(const char *name, double *t, int n, double base_median) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double median = t[n / 2];
    printf("  %-8s median %8.2f ms  range %8.2f .. %8.2f ms", name, median * 1e3, t[0] * 1e3, t[n - 1] * 1e3);
    if (base_median > 0)
        printf("  x%.2f of skip", median / base_median);
    printf("\n");
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    if (rounds < 3)
        rounds = 3;
    char dir[] = "/tmp/sps-bench-sections-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[64], err[256];
    snprintf(path, sizeof path, "%s/report.json", dir);

    int64_t t0 = INT64_C(7315123456789);
    struct sps__sampler_result *r = full_sampler(t0);
    struct sps_run run;
    memset(&run, 0, sizeof run);
    struct sps_run_info info;
    memset(&info, 0, sizeof info);
    info.sampler = r;
    info.start_mono_ns = (uint64_t)t0;
    struct sps_report rep;
    if (!r || sps__report_build(&rep, &run, &info) != 0 || sps__report_json_write(&rep, path, err, sizeof err) != 0) {
        fprintf(stderr, "bench_report_read_sections: could not write the report: %s\n", err);
        return 1;
    }
    struct stat st;
    stat(path, &st);
    printf("report.json with the largest machine half: %.1f MB\n", (double)st.st_size / 1e6);

    double *skip = calloc((size_t)rounds, sizeof *skip), *typed = calloc((size_t)rounds, sizeof *typed);
    double *tree = calloc((size_t)rounds, sizeof *tree);
    for (int i = 0; i < rounds; i++) {
        double a = now_s();
        if (skip_all(path) != 0)
            return 1;
        double b = now_s();
        struct sps_report back;
        if (read_typed(path, &back) != 0)
            return 1;
        double c = now_s();
        sps__report_free(&back);
        double d = now_s();
        json_t *doc = json_load_file(path, 0, NULL);
        double e = now_s();
        if (!doc)
            return 1;
        json_decref(doc);
        skip[i] = b - a;
        typed[i] = c - b;
        tree[i] = e - d;
    }
    printf("%d rounds, interleaved:\n", rounds);
    summarize("skip", skip, rounds, 0);
    double base = skip[rounds / 2];
    summarize("typed", typed, rounds, base);
    summarize("jansson", tree, rounds, base);

    sps__report_free(&rep);
    sps__sampler_result_free(r);
    free(skip);
    free(typed);
    free(tree);
    unlink(path);
    rmdir(dir);
    return 0;
}
