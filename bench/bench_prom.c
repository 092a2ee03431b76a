/*
 * bench_prom.c - what one Prometheus exposition of a job costs
 * `stepscope run --serve` (or --prom-textfile): reading N ranks x M zones
 * from the live records (src/live/prom_collect.c) and rendering them
 * (src/render/prom_text.c), against the live view's per-refresh read of
 * the same records (src/live/peek.c), measured in the same run.
 *
 * For each shape it forks N processes (RANK=0..N-1) that record 20 steps
 * of M zones each into one run directory, then, over ROUNDS interleaved
 * rounds, times:
 *   peek     the live view's read (what `stepscope run` does 10 times a
 *            second anyway): the baseline;
 *   cold     a fresh collector's read, every histogram read (the first
 *            snapshot, or one where every aggregate moved since the last);
 *   warm     a read by a collector that has read them before (aggregates
 *            whose count has not moved are not reread);
 *   render   the OpenMetrics text of the snapshot.
 * and prints medians and ranges, the ratios to peek, and the text's size.
 *
 * None of this runs in the workload: the workload's processes write their
 * records as always, and the collector, the renderer and the HTTP server
 * run in `stepscope run`, another process, on threads of their own.  A
 * scrape costs the workload nothing but the CPU the scrape takes from a
 * shared machine (a share of one core: the figures below over the period).
 *
 *     bench_prom [--quick]
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live/peek.h"
#include "live/prom_collect.h"
#include "render/prom_text.h"
#include "stepscope.h"

#define ROUNDS 15
#define REPS 5 /* timed calls per round, per measure */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void record_rank(const char *dir, int rank, int zones) {
    char r[16];
    snprintf(r, sizeof r, "%d", rank);
    setenv("STEPSCOPE_RUN_DIR", dir, 1);
    setenv("RANK", r, 1);
    struct sps_site *step = sps_site_get("step", SPS_KIND_STEP);
    struct sps_site *samples = sps_site_get("samples", SPS_KIND_COUNTER);
    struct sps_site *loss = sps_site_get("loss", SPS_KIND_VALUE);
    struct sps_site *zone[256];
    for (int z = 0; z < zones; z++) {
        char name[32];
        snprintf(name, sizeof name, "zone%d", z);
        zone[z] = sps_site_get(name, SPS_KIND_ZONE);
    }
    for (int i = 0; i < 20; i++) {
        sps_zone_t s = sps_zone_begin(step);
        for (int z = 0; z < zones; z++)
            sps_zone_end(sps_zone_begin(zone[z]));
        sps_count(samples, 32);
        sps_value(loss, 1.0 / (i + 1));
        sps_zone_end(s);
    }
    exit(0);
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stat3 {
    double med, lo, hi;
};

static struct stat3 stats(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, by_double);
    return (struct stat3){v[n / 2], v[0], v[n - 1]};
}

static void shape(int ranks, int zones, int rounds) {
    char dir[] = "/tmp/bench_prom.XXXXXX";
    if (!mkdtemp(dir))
        exit(1);
    char records[64];
    snprintf(records, sizeof records, "%s/records", dir);
    mkdir(records, 0777);
    fflush(stdout); /* the children's exit must not print it again */
    for (int r = 0; r < ranks; r++) {
        pid_t pid = fork();
        if (pid == 0)
            record_rank(dir, r, zones);
        waitpid(pid, NULL, 0);
    }
    double peek[ROUNDS], cold[ROUNDS], warm[ROUNDS], render[ROUNDS];
    size_t text_len = 0, nseries = 0;
    struct sps__live_peek *pk = sps__live_peek_open(records);
    struct sps__prom_collect *kept = sps__prom_collect_open(records);
    struct sps__live_steps st;
    struct sps__prom_snapshot s;
    memset(&s, 0, sizeof s);
    sps__live_peek_read(pk, &st); /* files opened, names cached: as after the view's first refresh */
    sps__prom_collect_read(kept, &s);
    sps__prom_snapshot_free(&s);
    for (int k = 0; k < rounds; k++) {
        double t = now_s();
        for (int i = 0; i < REPS; i++)
            sps__live_peek_read(pk, &st);
        peek[k] = (now_s() - t) / REPS;

        double sum = 0;
        for (int i = 0; i < REPS; i++) {
            struct sps__prom_collect *c = sps__prom_collect_open(records);
            t = now_s();
            sps__prom_collect_read(c, &s);
            sum += now_s() - t;
            sps__prom_snapshot_free(&s);
            sps__prom_collect_close(c);
        }
        cold[k] = sum / REPS;

        t = now_s();
        for (int i = 0; i < REPS; i++) {
            sps__prom_collect_read(kept, &s);
            if (i + 1 < REPS)
                sps__prom_snapshot_free(&s);
        }
        warm[k] = (now_s() - t) / REPS;
        nseries = s.nseries;

        t = now_s();
        for (int i = 0; i < REPS; i++)
            free(sps__prom_render(&s, SPS_PROM_OPENMETRICS, &text_len));
        render[k] = (now_s() - t) / REPS;
        sps__prom_snapshot_free(&s);
    }
    sps__live_peek_close(pk);
    sps__prom_collect_close(kept);
    struct stat3 p = stats(peek, rounds), c = stats(cold, rounds), w = stats(warm, rounds), r = stats(render, rounds);
    printf("%3d ranks x %3d zones: %5zu series, %8zu bytes of OpenMetrics\n", ranks, zones, nseries, text_len);
    printf("  peek (baseline)  %8.1f us  [%.1f .. %.1f]\n", p.med * 1e6, p.lo * 1e6, p.hi * 1e6);
    printf("  collect, cold    %8.1f us  [%.1f .. %.1f]  %5.1fx peek\n", c.med * 1e6, c.lo * 1e6, c.hi * 1e6,
           c.med / p.med);
    printf("  collect, warm    %8.1f us  [%.1f .. %.1f]  %5.1fx peek\n", w.med * 1e6, w.lo * 1e6, w.hi * 1e6,
           w.med / p.med);
    printf("  render           %8.1f us  [%.1f .. %.1f]  %5.1fx peek\n", r.med * 1e6, r.lo * 1e6, r.hi * 1e6,
           r.med / p.med);
    printf("  one exposition (cold collect + render) at the 1 s period: %.3f%% of one core\n",
           (c.med + r.med) * 100.0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_prom: could not remove %s\n", dir);
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    int rounds = quick ? 3 : ROUNDS;
    unsetenv("STEPSCOPE_OUT");
    printf("bench_prom: one Prometheus exposition against the live view's read of the same records\n"
           "(medians over %d interleaved rounds, [min .. max])\n",
           rounds);
    static const int shapes[][2] = {{1, 8}, {8, 8}, {8, 32}, {64, 8}, {64, 32}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        shape(shapes[i][0], shapes[i][1], rounds);
    return 0;
}
