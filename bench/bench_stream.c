/*
 * bench_stream.c - what the live step stream (DIR/steps.jsonl) costs, and
 * whether it slows the workload.
 *
 * Each round forks a workload that records STEPS steps through the
 * library into a run directory (each step: 8 zones, a value, a counter,
 * and about SPIN_US of arithmetic), twice, in alternating order: once
 * alone (the baseline) and once while this process follows its record
 * with the stream every 100 ms, as `stepscope run` does.  It prints, over
 * ROUNDS rounds, the workload's wall time alone and followed (median and
 * range) and their ratio, and the stream's CPU time per step line and as
 * a share of one core while the workload ran.
 *
 *     bench_stream [--quick]
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live/stream.h"
#include "stepscope.h"

#define ROUNDS 5
#define SPIN_US 20

static int steps = 50000;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile double sink;

static void spin(double us) {
    double end = clock_s(CLOCK_MONOTONIC) + us * 1e-6, x = 1;
    while (clock_s(CLOCK_MONOTONIC) < end)
        for (int i = 0; i < 50; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* The workload: its wall time goes up the pipe. */
static void workload(const char *dir, int fd) {
    setenv("STEPSCOPE_RUN_DIR", dir, 1);
    struct sps_site *step = sps_site_get("step", SPS_KIND_STEP);
    struct sps_site *zone[8];
    for (int z = 0; z < 8; z++) {
        char name[16];
        snprintf(name, sizeof name, "zone%d", z);
        zone[z] = sps_site_get(name, SPS_KIND_ZONE);
    }
    struct sps_site *loss = sps_site_get("loss", SPS_KIND_VALUE);
    struct sps_site *samples = sps_site_get("samples", SPS_KIND_COUNTER);
    sps_zone_end(sps_zone_begin(step)); /* the record exists before the clock starts */
    double t0 = clock_s(CLOCK_MONOTONIC);
    for (int i = 0; i < steps; i++) {
        sps_zone_t s = sps_zone_begin(step);
        for (int z = 0; z < 8; z++) {
            sps_zone_t t = sps_zone_begin(zone[z]);
            spin(SPIN_US / 8.0);
            sps_zone_end(t);
        }
        sps_value(loss, 1.0 / (i + 1));
        sps_count(samples, 32);
        sps_zone_end(s);
    }
    double wall = clock_s(CLOCK_MONOTONIC) - t0;
    if (write(fd, &wall, sizeof wall) != sizeof wall)
        _exit(2);
    exit(0);
}

struct result {
    double wall;       /* the workload's */
    double stream_cpu; /* this thread's, in polls */
    uint64_t lines, lost;
};

static struct result one(int followed) {
    char dir[] = "/tmp/sps-bench-stream-XXXXXX";
    if (!mkdtemp(dir))
        exit(99);
    char records[64], out[64];
    snprintf(records, sizeof records, "%s/records", dir);
    snprintf(out, sizeof out, "%s/steps.jsonl", dir);
    mkdir(records, 0777);
    int p[2];
    if (pipe(p) != 0)
        exit(99);
    uint64_t origin = (uint64_t)(clock_s(CLOCK_MONOTONIC) * 1e9);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        workload(dir, p[1]);
    }
    close(p[1]);
    struct result r = {0};
    struct sps__live_stream *st = followed ? sps__live_stream_open(records, out, origin) : NULL;
    int status;
    while (waitpid(pid, &status, followed ? WNOHANG : 0) == 0) {
        struct timespec period = {0, 100000000};
        nanosleep(&period, NULL);
        double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        sps__live_stream_poll(st, (uint64_t)(clock_s(CLOCK_MONOTONIC) * 1e9), 0);
        r.stream_cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    }
    if (st) {
        double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        sps__live_stream_poll(st, (uint64_t)(clock_s(CLOCK_MONOTONIC) * 1e9), 1);
        r.stream_cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        struct sps__live_stream_stats stats;
        sps__live_stream_close(st, &stats);
        r.lines = stats.lines;
        r.lost = stats.steps_lost;
    }
    if (read(p[0], &r.wall, sizeof r.wall) != sizeof r.wall)
        exit(99);
    close(p[0]);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_stream: could not remove %s\n", dir);
    return r;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}

int main(int argc, char **argv) {
    int rounds = ROUNDS;
    if (argc > 1 && !strcmp(argv[1], "--quick")) {
        steps = 5000;
        rounds = 3;
    }
    uint64_t lost = 0;
    double alone[ROUNDS], followed[ROUNDS], ratio[ROUNDS], per_line[ROUNDS], share[ROUNDS];
    for (int r = 0; r < rounds; r++) {
        struct result a, b;
        if (r % 2) { /* alternate which goes first */
            b = one(1);
            a = one(0);
        } else {
            a = one(0);
            b = one(1);
        }
        if (b.lines + b.lost != (uint64_t)steps + 1) {
            fprintf(stderr, "bench_stream: %llu lines and %llu lost for %d steps\n", (unsigned long long)b.lines,
                    (unsigned long long)b.lost, steps + 1);
            return 1;
        }
        lost += b.lost;
        alone[r] = a.wall;
        followed[r] = b.wall;
        ratio[r] = b.wall / a.wall;
        per_line[r] = b.stream_cpu / (double)b.lines * 1e9;
        share[r] = b.stream_cpu / b.wall * 100;
    }
    double lo = ratio[0], hi = ratio[0];
    for (int r = 1; r < rounds; r++) {
        lo = ratio[r] < lo ? ratio[r] : lo;
        hi = ratio[r] > hi ? ratio[r] : hi;
    }
    printf("workload: %d steps of 8 zones + a value + a counter, ~%d us each; %d rounds, alternating\n", steps,
           SPIN_US, rounds);
    printf("workload wall alone     median %.3f s\n", median(alone, rounds));
    printf("workload wall followed  median %.3f s\n", median(followed, rounds));
    printf("followed / alone        median %.3f (range %.3f-%.3f)\n", median(ratio, rounds), lo, hi);
    printf("steps said lost         %llu (a ring overwrote them between two polls)\n", (unsigned long long)lost);
    printf("stream CPU per line     median %.0f ns\n", median(per_line, rounds));
    printf("stream CPU, %% of a core median %.2f%%\n", median(share, rounds));
    return 0;
}
