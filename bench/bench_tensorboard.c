/*
 * bench_tensorboard.c - the TensorBoard event files of a run
 * (sps__export_tensorboard) against steps.csv of the same run
 * (sps__export_steps_csv), the renderer of the same per-step facts that
 * every run already pays for, in the same process.
 *
 * The run is made here as a report model: STEPS steps of one thread, each
 * with 8 phases, a wait, 2 values and 2 counters, and 12 machine series
 * sampled every 100 ms over the run (steps of 50 ms), so each event holds
 * 1 + 8 + 1 + 2 + 2 + 2 + 12 = 28 scalars and each CSV row as many
 * cells and more (the series' maxima).  Both write through the atomic
 * writer (a temporary, fsync, rename) into the same temporary directory.
 *
 * Rounds alternate the two (on a busy machine interleaving shares its
 * noise between them); printed: the median and range of the thread's CPU
 * time and of the wall time of each, the steps (events) per second, and
 * the ratio.
 *
 *     bench_tensorboard [--steps N] [--rounds R]
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_rounds.h"
#include "render/exporters.h"
#include "render/output_file.h"
#include "render/tensorboard.h"
#include "sampler/sampler.h"
#include "stepscope.h"

#define ORIGIN_NS 1000000000ull
#define STEP_NS 50000000ull /* 50 ms */
#define NSERIES 12

enum { NZONES = 8, NNAMES = 1 + NZONES + 1 + 2 + 2 };

struct model {
    struct sps_report rep;
    struct sps_name_summary names[NNAMES];
    struct sps_process_data proc;
    struct sps_step_row *rows;
    double *cells;
    struct sps__sampler_result sampler;
    struct sps__series_point *points[NSERIES];
};

static double wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int model_build(struct model *m, size_t steps) {
    memset(m, 0, sizeof *m);
    static const char *const zones[NZONES] = {"data", "h2d", "forward", "loss", "backward", "all_gather", "optimizer",
                                             "log"};
    int k = 0;
    snprintf(m->names[k].name, sizeof m->names[k].name, "step"), m->names[k++].kind = SPS_KIND_STEP;
    for (int z = 0; z < NZONES; z++)
        snprintf(m->names[k].name, sizeof m->names[k].name, "%s", zones[z]), m->names[k++].kind = SPS_KIND_ZONE;
    snprintf(m->names[k].name, sizeof m->names[k].name, "all_reduce"), m->names[k++].kind = SPS_KIND_WAIT;
    snprintf(m->names[k].name, sizeof m->names[k].name, "loss"), m->names[k++].kind = SPS_KIND_VALUE;
    snprintf(m->names[k].name, sizeof m->names[k].name, "lr"), m->names[k++].kind = SPS_KIND_VALUE;
    snprintf(m->names[k].name, sizeof m->names[k].name, "samples"), m->names[k++].kind = SPS_KIND_COUNTER;
    snprintf(m->names[k].name, sizeof m->names[k].name, "tokens"), m->names[k++].kind = SPS_KIND_COUNTER;
    m->proc = (struct sps_process_data){.pid = 4242, .rank = -1, .hostname = "bench"};
    m->rows = calloc(steps, sizeof *m->rows);
    m->cells = calloc(steps * NNAMES, sizeof *m->cells);
    if (!m->rows || !m->cells)
        return -1;
    for (size_t r = 0; r < steps; r++) {
        double *c = &m->cells[r * NNAMES];
        c[0] = NAN;
        for (int z = 1; z <= NZONES; z++)
            c[z] = 0.005 * (0.5 + (double)((r * 7 + (size_t)z * 13) % 10) / 10);
        c[NZONES + 1] = 0.002;
        c[NZONES + 2] = 2.0 / (1.0 + (double)r / 1000);
        c[NZONES + 3] = 3e-4;
        c[NZONES + 4] = 64;
        c[NZONES + 5] = 64 * 2048;
        uint64_t start = ORIGIN_NS + r * STEP_NS;
        m->rows[r] = (struct sps_step_row){.index = r, .tid = 4242, .name = 0, .start_ns = start,
                                           .end_ns = start + STEP_NS - 1000, .by_name = c};
    }
    m->rep.run = (struct sps_run){.nprocs = 1, .procs = &m->proc, .nnames = NNAMES, .names = m->names,
                                  .nsteps = steps, .steps = m->rows, .start_ns = ORIGIN_NS};
    m->rep.info.start_realtime_ns = 1700000000000000000ll;
    size_t npoints = steps * (STEP_NS / 1000000) / 100 + 1; /* one every 100 ms */
    m->sampler.interval_ms = m->sampler.machine_interval_ms = 100;
    for (int s = 0; s < NSERIES; s++) {
        struct sps__series_point *p = m->points[s] = calloc(npoints, sizeof *p);
        if (!p)
            return -1;
        for (size_t i = 0; i < npoints; i++) {
            double v = 1e6 * (s + 1) + (double)(i % 97);
            p[i] = (struct sps__series_point){.t_ns = (int64_t)(ORIGIN_NS + i * 100000000ull), .mean = v, .max = v + 1,
                                              .n = 1};
        }
        m->sampler.host[s] = (struct sps__series){.points = p, .count = (uint32_t)npoints, .cap = (uint32_t)npoints,
                                                  .per_point = 1, .n = npoints};
    }
    m->rep.info.sampler = &m->sampler;
    return 0;
}

static void model_free(struct model *m) {
    free(m->rows);
    free(m->cells);
    for (int s = 0; s < NSERIES; s++)
        free(m->points[s]);
}

static int write_csv(const struct sps_report *rep, const char *path, char *err, size_t errlen) {
    struct sps_out o;
    int rc = sps__out_open(&o, path, err, errlen);
    if (rc != 0)
        return rc;
    rc = sps__export_steps_csv(rep, o.f, err, errlen);
    if (rc != 0) {
        sps__out_abort(&o);
        return rc;
    }
    return sps__out_commit(&o, err, errlen);
}

static void print_case(const char *what, double *cpu, double *wall, int rounds, size_t steps) {
    struct bench_summary c = bench_summarise(cpu, rounds), w = bench_summarise(wall, rounds);
    printf("%-18s cpu %8.2f ms (%.2f-%.2f)  wall %8.2f ms (%.2f-%.2f)  %10.0f events/s (cpu)\n", what, c.median / 1e6,
           c.min / 1e6, c.max / 1e6, w.median / 1e6, w.min / 1e6, w.max / 1e6, (double)steps / (c.median / 1e9));
}

int main(int argc, char **argv) {
    size_t steps = 10000;
    int rounds = 11;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_tensorboard [--steps N] [--rounds R]\n");
            return 2;
        }
    }
    if (steps < 1 || rounds < 3 || rounds > BENCH_MAX_ROUNDS) {
        fprintf(stderr, "bench_tensorboard: --steps >= 1, --rounds 3..%d\n", BENCH_MAX_ROUNDS);
        return 2;
    }
    struct model m;
    if (model_build(&m, steps) != 0) {
        fprintf(stderr, "bench_tensorboard: out of memory\n");
        return 1;
    }
    char dir[] = "/tmp/bench_tensorboard-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench_tensorboard: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    char tb[sizeof dir + 8], csv[sizeof dir + 16], err[1024];
    snprintf(tb, sizeof tb, "%s/tb", dir);
    snprintf(csv, sizeof csv, "%s/steps.csv", dir);
    double tb_cpu[BENCH_MAX_ROUNDS], tb_wall[BENCH_MAX_ROUNDS], csv_cpu[BENCH_MAX_ROUNDS], csv_wall[BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int which = 0; which < 2; which++) {
            int tb_first = r % 2 == 0; /* alternate which goes first */
            int do_tb = which == 0 ? tb_first : !tb_first;
            double w0 = wall_ns();
            uint64_t c0 = bench_thread_ns();
            int rc = do_tb ? sps__export_tensorboard(&m.rep, tb, NULL, err, sizeof err)
                           : write_csv(&m.rep, csv, err, sizeof err);
            double cpu = (double)(bench_thread_ns() - c0), wall = wall_ns() - w0;
            if (rc != 0) {
                fprintf(stderr, "bench_tensorboard: %s\n", err);
                return 1;
            }
            (do_tb ? tb_cpu : csv_cpu)[r] = cpu;
            (do_tb ? tb_wall : csv_wall)[r] = wall;
        }
    }
    struct stat st_csv = {0}, st_tb = {0};
    stat(csv, &st_csv);
    char tb_file[sizeof tb + 96];
    snprintf(tb_file, sizeof tb_file, "%s/events.out.tfevents.1700000000.bench.4242.4242.stepscope", tb);
    stat(tb_file, &st_tb);
    printf("%zu steps, 28 scalars each (8 phases, a wait, 2 values, 2 counters and their rates, 12 series), "
           "median of %d interleaved rounds (range)\n",
           steps, rounds);
    double tb_cpu_med, csv_cpu_med;
    {
        double a[BENCH_MAX_ROUNDS], b[BENCH_MAX_ROUNDS];
        memcpy(a, tb_cpu, sizeof a), memcpy(b, csv_cpu, sizeof b);
        tb_cpu_med = bench_summarise(a, rounds).median;
        csv_cpu_med = bench_summarise(b, rounds).median;
    }
    print_case("tensorboard", tb_cpu, tb_wall, rounds, steps);
    print_case("steps.csv (base)", csv_cpu, csv_wall, rounds, steps);
    printf("tensorboard / steps.csv CPU time: %.2f (event file %lld bytes, steps.csv %lld bytes)\n",
           tb_cpu_med / csv_cpu_med, (long long)st_tb.st_size, (long long)st_csv.st_size);
    char cmd[sizeof dir + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_tensorboard: could not remove %s\n", dir);
    model_free(&m);
    return 0;
}
