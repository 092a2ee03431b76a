/*
 * bench_merge.c - what `stepscope merge` costs as a job grows: the time
 * and peak memory of merging two nodes' run directories and writing every
 * file of the merged run (report.json, HTML, CSV, trace), at 8, 16, 32 and
 * 64 simulated ranks.  It must grow linearly with ranks x steps.
 *
 * Each size is real: two `stepscope run -q` "nodes" (STEPSCOPE_HOSTNAME
 * sim0 and sim1), each of ranks/2 processes of test/helpers/rank_sim.c
 * recording --steps steps of two zones, a value and a counter (set up
 * first, not timed).  Then `stepscope merge node0 node1 -o OUT -q` runs
 * --reps times per size, the sizes interleaved (8, 16, 32, 64, 8, ...), so
 * that the machine's load falls on every size alike; the time is its wall
 * time, the memory its peak RSS (wait4's ru_maxrss: exact).
 *
 * The baseline, in the same run and on the same files, interleaved with
 * the merges: reading the inputs' record files once (read(2) into one
 * buffer, the page cache warm as for merge).  Printed per size: the median
 * and range of both, the ratio of merge to that baseline, and the time and
 * memory against the 8-rank size's (linear in ranks: 2, 4, 8); at the end
 * the fitted exponent of time over ranks (least-squares slope of log time
 * on log ranks: 1.0 is linear, 2.0 quadratic).
 *
 *     bench_merge [--sizes 8,16,32,64] [--steps N] [--reps N] [--keep DIR]
 *
 * Benchmarks do not run in CI; the defaults take some 30 s here.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 8
#define MAX_REPS 64

static char bin_dir[PATH_MAX];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run argv quietly; its wall time into *wall, its peak RSS (KiB) into
 * *rss_kib.  Returns its exit status (-1: could not start). */
static int run(char *const argv[], char *const envp_extra[], double *wall, long *rss_kib) {
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        for (char *const *e = envp_extra; e && *e; e++)
            putenv(*e);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR)
            return -1;
    if (wall)
        *wall = now_s() - t0;
    if (rss_kib)
        *rss_kib = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Read every file of dir/node{0,1}/records once; returns the bytes. */
static long long read_records(const char *dir, char *buf, size_t len) {
    long long total = 0;
    for (int node = 0; node < 2; node++) {
        char rec[PATH_MAX + 32];
        snprintf(rec, sizeof rec, "%s/node%d/records", dir, node);
        DIR *d = opendir(rec);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[PATH_MAX + 300];
            snprintf(path, sizeof path, "%s/%s", rec, e->d_name);
            int fd = open(path, O_RDONLY);
            ssize_t n;
            while (fd >= 0 && (n = read(fd, buf, len)) > 0)
                total += n;
            if (fd >= 0)
                close(fd);
        }
        if (d)
            closedir(d);
    }
    return total;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The two nodes of a size: rank_sim under stepscope run, ranks/2 each. */
static int setup(const char *dir, int ranks, int steps) {
    char stepscope[PATH_MAX + 16], sim[PATH_MAX + 16];
    snprintf(stepscope, sizeof stepscope, "%s/stepscope", bin_dir);
    snprintf(sim, sizeof sim, "%s/rank_sim", bin_dir);
    mkdir(dir, 0777);
    for (int node = 0; node < 2; node++) {
        char out[PATH_MAX + 32], half[16], first[16], world[16], nsteps[16], host[64];
        snprintf(out, sizeof out, "%s/node%d", dir, node);
        snprintf(half, sizeof half, "%d", ranks / 2);
        snprintf(first, sizeof first, "%d", node * ranks / 2);
        snprintf(world, sizeof world, "%d", ranks);
        snprintf(nsteps, sizeof nsteps, "%d", steps);
        snprintf(host, sizeof host, "STEPSCOPE_HOSTNAME=sim%d", node);
        char *argv[] = {stepscope, "run", "-q", "-o", out, "--", sim, "--ranks", half, "--first-rank", first,
                        "--world", world, "--steps", nsteps, "--spin-us", "10", NULL};
        char *env[] = {host, NULL};
        if (run(argv, env, NULL, NULL) != 0) {
            fprintf(stderr, "bench_merge: setting up %d ranks failed\n", ranks);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int sizes[MAX_SIZES] = {8, 16, 32, 64}, nsizes = 4, steps = 200, reps = 5;
    const char *keep = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = 0;
            for (char *s = strtok(argv[++i], ","); s && nsizes < MAX_SIZES; s = strtok(NULL, ","))
                sizes[nsizes++] = atoi(s) / 2 * 2;
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
            keep = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_merge [--sizes 8,16,32,64] [--steps N] [--reps N] [--keep DIR]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || steps < 1 || nsizes < 1)
        return 2;
    ssize_t n = readlink("/proc/self/exe", bin_dir, sizeof bin_dir - 1);
    if (n <= 0)
        return 1;
    bin_dir[n] = '\0';
    *strrchr(bin_dir, '/') = '\0';
    char root[PATH_MAX];
    if (keep)
        snprintf(root, sizeof root, "%s", keep);
    else
        snprintf(root, sizeof root, "%s/bench_merge.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (keep ? (mkdir(root, 0777) != 0 && errno != EEXIST) : !mkdtemp(root)) {
        perror(root);
        return 1;
    }
    printf("bench_merge: %d steps per rank, %d reps per size, sizes interleaved; setting up in %s\n", steps, reps,
           root);
    for (int s = 0; s < nsizes; s++) {
        char dir[PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s/r%d", root, sizes[s]);
        if (setup(dir, sizes[s], steps) != 0)
            return 1;
    }
    static char buf[1 << 20];
    double t[MAX_SIZES][MAX_REPS], base[MAX_SIZES][MAX_REPS], rss[MAX_SIZES][MAX_REPS];
    long long bytes[MAX_SIZES] = {0};
    char stepscope[PATH_MAX + 16];
    snprintf(stepscope, sizeof stepscope, "%s/stepscope", bin_dir);
    for (int r = 0; r < reps; r++)
        for (int s = 0; s < nsizes; s++) {
            char dir[PATH_MAX + 16], in0[PATH_MAX + 32], in1[PATH_MAX + 32], out[PATH_MAX + 32], rm[PATH_MAX + 64];
            snprintf(dir, sizeof dir, "%s/r%d", root, sizes[s]);
            snprintf(in0, sizeof in0, "%s/node0", dir);
            snprintf(in1, sizeof in1, "%s/node1", dir);
            snprintf(out, sizeof out, "%s/merged", dir);
            snprintf(rm, sizeof rm, "rm -rf '%s'", out);
            if (system(rm) != 0)
                return 1;
            double t0 = now_s();
            bytes[s] = read_records(dir, buf, sizeof buf);
            base[s][r] = now_s() - t0;
            char *margv[] = {stepscope, "merge", in0, in1, "-o", out, "-q", NULL};
            long kib = 0;
            if (run(margv, NULL, &t[s][r], &kib) != 0) {
                fprintf(stderr, "bench_merge: stepscope merge failed at %d ranks\n", sizes[s]);
                return 1;
            }
            rss[s][r] = (double)kib / 1024.0;
        }
    printf("%6s %12s %22s %10s %18s %8s %10s %10s\n", "ranks", "rank-steps", "merge+report s (range)", "peak MiB",
           "read records s", "x read", "time/8r", "MiB/8r");
    double t8 = 0, m8 = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int s = 0; s < nsizes; s++) {
        double lo = t[s][0], hi = t[s][0];
        for (int r = 1; r < reps; r++) {
            lo = t[s][r] < lo ? t[s][r] : lo;
            hi = t[s][r] > hi ? t[s][r] : hi;
        }
        double tm = median(t[s], reps), bm = median(base[s], reps), mm = median(rss[s], reps);
        if (s == 0) {
            t8 = tm;
            m8 = mm;
        }
        printf("%6d %12d %8.3f (%.3f-%.3f) %10.1f %11.4f (%4.1fM) %8.1f %10.2f %10.2f\n", sizes[s], sizes[s] * steps,
               tm, lo, hi, mm, bm, (double)bytes[s] / 1048576.0, tm / bm, tm / t8, mm / m8);
        double x = log(sizes[s]), y = log(tm);
        sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    double slope = (nsizes * sxy - sx * sy) / (nsizes * sxx - sx * sx);
    printf("time ~ ranks^%.2f over %d-%d ranks (1.0 = linear); %d ranks x steps go in 1 s\n", slope, sizes[0],
           sizes[nsizes - 1], (int)(sizes[nsizes - 1] * steps / median(t[nsizes - 1], reps)));
    if (!keep) {
        char rm[PATH_MAX + 16];
        snprintf(rm, sizeof rm, "rm -rf '%s'", root);
        if (system(rm) != 0)
            return 1;
    }
    return 0;
}
