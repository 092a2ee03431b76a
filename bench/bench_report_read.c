/*
 * bench_report_read.c - reading a big report.json into the report model
 * (sps__report_read: one pass through the pull scanner, no document tree)
 * against the way it was read before (jansson's json_load_file: the whole
 * document as a tree), in time and peak memory.
 *
 * The report is laid out as stepscope writes it: one process, the zones,
 * values and counters lists, and n step rows with four zones' self times,
 * a value and a counter (about 520 bytes a row: 100,000 rows make the
 * 51 MB report of issue 16).  Each case runs in a child process so that
 * its peak RSS (wait4) is its own; the cases alternate, A B A B ..., and
 * the medians and ranges are printed with the ratio.
 *
 *     bench_report_read [ROWS] [REPEATS]     (default 100000 rows, 5 repeats)
 */
#define _GNU_SOURCE

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"
#include "stepscope.h"

static const char *const zone_names[4] = {"forward", "backward", "data", "optimizer"};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int write_report(const char *path, size_t n) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"schema\": \"stepscope.report/1\",\n  \"command\": [\"train\"],\n"
               "  \"started_unix_s\": 1795240121.03401,\n  \"started_mono_ns\": 5000000000,\n"
               "  \"zones\": [\n    {\"name\": \"step\", \"kind\": \"step\", \"count\": %zu, \"total_s\": 1}",
            n);
    for (int k = 0; k < 4; k++)
        fprintf(f, ",\n    {\"name\": \"%s\", \"kind\": \"zone\", \"count\": %zu, \"total_s\": 0.25}", zone_names[k], n);
    fprintf(f, "\n  ],\n  \"steps\": {\n    \"count\": %zu,\n    \"rows_kept\": %zu,\n    \"warmup_steps\": 0,\n"
               "    \"rows\": [\n",
            n, n);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        double d = 0.01 + 1e-7 * (double)(i % 1000);
        fprintf(f,
                "      {\n        \"index\": %zu,\n        \"name\": \"step\",\n        \"pid\": 4242,\n"
                "        \"tid\": 4242,\n        \"start_s\": %.15g,\n        \"duration_s\": %.15g,\n"
                "        \"warmup\": false,\n        \"zones_self_s\": {\n",
                i, t, d);
        for (int k = 0; k < 4; k++)
            fprintf(f, "          \"%s\": %.15g%s\n", zone_names[k], d * (0.1 + 0.2 * k), k < 3 ? "," : "");
        fprintf(f, "        },\n        \"values\": {\n          \"loss\": %.15g\n        },\n"
                   "        \"counters\": {\n          \"samples\": 64\n        }\n      }%s\n",
                1.0 / (double)(i + 1), i + 1 < n ? "," : "");
        t += d;
    }
    fprintf(f, "    ]\n  },\n  \"values\": [{\"name\": \"loss\", \"count\": %zu}],\n"
               "  \"counters\": [{\"name\": \"samples\", \"total\": %zu, \"increments\": %zu}],\n"
               "  \"processes\": [{\"pid\": 4242, \"ppid\": 1, \"record\": \"4242-0.sps\", \"threads\": []}]\n}\n",
            n, 64 * n, n);
    return fclose(f);
}

enum { TYPED, JANSSON };

/* One read in a child: its wall time (via the pipe) and peak RSS. */
static int measure(int which, const char *path, double *secs, long *peak_kb) {
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        double t0 = now_s();
        int ok;
        if (which == TYPED) {
            struct sps_report rep;
            char err[512];
            ok = sps__report_read(&rep, path, err, sizeof err) == 0;
            if (!ok)
                fprintf(stderr, "%s\n", err);
            else
                ok = rep.run.nsteps > 0;
            /* the model is what is kept: measured before it is freed */
        } else {
            json_error_t jerr;
            json_t *root = json_load_file(path, 0, &jerr);
            ok = root != NULL;
        }
        double dt = now_s() - t0;
        if (write(fd[1], &dt, sizeof dt) != (ssize_t)sizeof dt)
            _exit(2);
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    int got = (int)read(fd[0], secs, sizeof *secs);
    close(fd[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (int)sizeof *secs)
        return -1;
    *peak_kb = ru.ru_maxrss;
    return 0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t rows = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    if (rows == 0 || repeats < 1 || repeats > 50) {
        fprintf(stderr, "usage: bench_report_read [ROWS] [REPEATS]\n");
        return 2;
    }
    char path[] = "/tmp/bench-report-read-XXXXXX";
    int tmp = mkstemp(path);
    if (tmp < 0 || close(tmp) != 0 || write_report(path, rows) != 0) {
        perror("bench_report_read: writing the report");
        return 1;
    }
    struct stat sb;
    stat(path, &sb);
    printf("report.json: %zu rows, %.1f MB\n", rows, (double)sb.st_size / 1e6);
    double t[2][50], kb[2][50];
    for (int r = 0; r < repeats; r++)
        for (int w = 0; w < 2; w++) {
            long peak;
            if (measure(w, path, &t[w][r], &peak) != 0) {
                fprintf(stderr, "bench_report_read: the %s read failed\n", w == TYPED ? "typed" : "jansson");
                unlink(path);
                return 1;
            }
            kb[w][r] = (double)peak;
        }
    unlink(path);
    static const char *const label[2] = {"typed reader (sps__report_read)", "jansson tree (before)"};
    double med_t[2], med_kb[2];
    for (int w = 0; w < 2; w++) {
        qsort(t[w], (size_t)repeats, sizeof t[w][0], cmp_d);
        qsort(kb[w], (size_t)repeats, sizeof kb[w][0], cmp_d);
        med_t[w] = t[w][repeats / 2];
        med_kb[w] = kb[w][repeats / 2];
        printf("%-34s time median %.3f s [%.3f .. %.3f]   peak RSS median %.1f MB [%.1f .. %.1f]\n", label[w],
               med_t[w], t[w][0], t[w][repeats - 1], med_kb[w] / 1024, kb[w][0] / 1024, kb[w][repeats - 1] / 1024);
    }
    printf("typed / jansson: time %.2fx, peak RSS %.2fx; peak RSS / file size: typed %.2fx, jansson %.2fx\n",
           med_t[TYPED] / med_t[JANSSON], med_kb[TYPED] / med_kb[JANSSON], med_kb[TYPED] * 1024 / (double)sb.st_size,
           med_kb[JANSSON] * 1024 / (double)sb.st_size);
    return 0;
}
