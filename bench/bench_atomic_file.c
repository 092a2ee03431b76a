/*
 * bench_atomic_file.c - what one output file costs the atomic writer
 * (platform/atomic_file.h) to open, write and commit, three ways in the
 * same run:
 *
 *   before:    the writer as it was before the anonymous temporary: a
 *              named ".NAME.tmp-XXXXXXXXXXXX" (O_CREAT|O_EXCL|O_NOFOLLOW),
 *              write, [fsync], close, rename, [fsync the directory];
 *   named:     today's fallback (SPS_ATOMIC_NAMED_TEMP): the same, plus the
 *              scan for dead writers' temporaries and the flock;
 *   anonymous: today's default: O_TMPFILE, the scan, the flock, and at the
 *              commit a linkat through /proc/self/fd (then a rename, the
 *              target being there).
 *
 * Each writes a 4 KiB file over the same target in a directory holding 16
 * other files (a run directory's outputs), N times a round, the three
 * interleaved file by file (on a busy machine interleaving shares its
 * noise, a disk's stall included).
 * Printed: the median and range over the rounds of the microseconds per
 * file, of the thread's CPU time without the fsyncs (SPS_ATOMIC_NO_SYNC:
 * the sampler's and the Prometheus textfile's commits) and of the wall
 * time with them (every report file), and each one's ratio to before.
 *
 *     bench_atomic_file [--iterations N] [--rounds R]   (default 2000, 9)
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_rounds.h"
#include "platform/atomic_file.h"

enum { BEFORE, NAMED, ANONYMOUS, WAYS };
static const char *const way_name[WAYS] = {"before", "named", "anonymous"};

static char payload[4096];
static char dir[256], target[320];

static uint64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The writer before this change, for the baseline. */
static int write_before(int sync) {
    char tmp[400];
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = wall_ns();
    snprintf(tmp, sizeof tmp, "%s/.out.json.tmp-%012llx", dir, (unsigned long long)(r & 0xFFFFFFFFFFFFull));
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int bad = write(fd, payload, sizeof payload) != (ssize_t)sizeof payload;
    if (sync)
        bad |= fsync(fd) != 0;
    bad |= close(fd) != 0;
    if (bad || rename(tmp, target) != 0) {
        unlink(tmp);
        return -1;
    }
    if (sync) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    return 0;
}

static int write_now(int sync, unsigned open_flags) {
    struct sps_atomic_file a;
    char err[512];
    if (sps__atomic_open_flags(&a, target, NULL, open_flags, err, sizeof err) != 0) {
        fprintf(stderr, "bench_atomic_file: %s\n", err);
        return -1;
    }
    if (write(a.fd, payload, sizeof payload) != (ssize_t)sizeof payload) {
        sps__atomic_abort(&a);
        return -1;
    }
    if (sps__atomic_commit(&a, sync ? 0 : SPS_ATOMIC_NO_SYNC, err, sizeof err) != 0) {
        fprintf(stderr, "bench_atomic_file: %s\n", err);
        return -1;
    }
    return 0;
}

static int write_one(int way, int sync) {
    if (way == BEFORE)
        return write_before(sync);
    return write_now(sync, way == NAMED ? SPS_ATOMIC_NAMED_TEMP : 0);
}

/* One round: n files of each way, the ways interleaved file by file (a
 * disk's stall lands on all three alike); the microseconds per file of
 * each into us[way]: the thread's CPU time, or the wall time when sync. */
static void round_of(int sync, uint64_t n, int first, double us[WAYS]) {
    uint64_t spent[WAYS] = {0};
    for (uint64_t i = 0; i < n; i++)
        for (int k = 0; k < WAYS; k++) {
            int way = (first + k) % WAYS;
            uint64_t t0 = sync ? wall_ns() : bench_thread_ns();
            if (write_one(way, sync) != 0) {
                fprintf(stderr, "bench_atomic_file: %s: %s\n", way_name[way], strerror(errno));
                exit(1);
            }
            spent[way] += (sync ? wall_ns() : bench_thread_ns()) - t0;
        }
    for (int way = 0; way < WAYS; way++)
        us[way] = (double)spent[way] / 1e3 / (double)n;
}

static void run(int sync, uint64_t iterations, int rounds) {
    static double us[WAYS][BENCH_MAX_ROUNDS];
    uint64_t n = sync ? iterations / 20 : iterations; /* an fsync costs ms */
    if (n < 20)
        n = 20;
    double one[WAYS];
    round_of(sync, n / 10 + 1, 0, one); /* warm the caches */
    for (int r = 0; r < rounds; r++) {
        round_of(sync, n, r % WAYS, one); /* each goes first in turn */
        for (int way = 0; way < WAYS; way++)
            us[way][r] = one[way];
    }
    struct bench_summary s[WAYS];
    for (int way = 0; way < WAYS; way++)
        s[way] = bench_summarise(us[way], rounds);
    printf("%s, %llu files a round, %d rounds:\n", sync ? "with fsync (wall time)" : "SPS_ATOMIC_NO_SYNC (CPU time)",
           (unsigned long long)n, rounds);
    for (int way = 0; way < WAYS; way++)
        printf("  %-10s %8.2f us/file (%.2f .. %.2f)  %.2fx\n", way_name[way], s[way].median, s[way].min, s[way].max,
               s[way].median / s[BEFORE].median);
}

int main(int argc, char **argv) {
    uint64_t iterations = 2000;
    int rounds = 9;
    if (bench_parse_rounds("bench_atomic_file", argc, argv, &iterations, &rounds) != 0)
        return 2;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sps-bench-atomic-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(target, sizeof target, "%s/out.json", dir);
    memset(payload, 'x', sizeof payload);
    for (int i = 0; i < 16; i++) { /* the run directory's other files */
        char p[400];
        snprintf(p, sizeof p, "%s/other-%02d.csv", dir, i);
        FILE *f = fopen(p, "w");
        if (f)
            fclose(f);
    }
    printf("bench_atomic_file: 4 KiB files in %s\n", dir);
    run(0, iterations, rounds);
    run(1, iterations, rounds);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
