/*
 * bench_capture.c - what machine readings cost, next to psutil's.
 *
 * The seeds read CPU and GPU memory and temperatures through psutil at
 * every micro-step; stepscope's answer is sps_capture(), a copy of the
 * sampler's latest sample.  This measures, in one run:
 *   - sps_capture() (the latest sample: the O(1) copy)
 *   - sps_capture(SPS_CAPTURE_FRESH) (every source read now)
 *   - one sampler tick at the interval alone (the tree's CPU time and
 *     memory) and one at the machine interval (every source), warm
 *   - the sampler thread's own CPU time over ten seconds at the default
 *     intervals, as a share of one core, beside a bare thread that only
 *     wakes at the same interval (the floor any sampler thread pays)
 * and, as the baseline, the same readings through psutil in a python3
 * child (python3-psutil): virtual_memory(), Process().memory_info(), and
 * the seed's capture (virtual memory, process memory, cpu_percent,
 * sensors_temperatures).  Each case is the minimum of 7 repeats.
 *
 * Then the price of the tree's PSS: one read of every tree process's
 * /proc/PID/smaps_rollup (which walks its page tables) against one read of
 * every statm (the RSS the interval reads), for a python3 + torch process
 * with a DataLoader of 2 worker processes (or, without torch, this process
 * and 2 forked children sharing 256 MiB), the ratio, and how often the
 * sampler's 0.01%-of-a-core PSS budget lets it read such a tree.
 *
 *     bench_capture [--quick]
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sampler/sampler.h"
#include "stepscope.h"

#define REPEATS 7

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct sps_capture cap;

static double per_call(int fresh, long n) {
    double best = INFINITY;
    for (int r = 0; r < REPEATS; r++) {
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            sps_capture(&cap, fresh ? SPS_CAPTURE_FRESH : 0);
        double dt = (now_s() - t0) / (double)n;
        if (dt < best)
            best = dt;
    }
    return best;
}

static double tick_cost(struct sps__sampler *s, int machine, long n) {
    double best = INFINITY;
    for (int r = 0; r < REPEATS; r++) {
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            sps__sampler_tick(s, 1, machine);
        double dt = (now_s() - t0) / (double)n;
        if (dt < best)
            best = dt;
    }
    return best;
}

/* psutil's costs in seconds per call: vmem, process memory, seed capture;
 * 0 when python3 or psutil is missing. */
static int psutil_costs(double out[3]) {
    static const char script[] =
        "import time\n"
        "import psutil\n"
        "p = psutil.Process()\n"
        "def seed():\n"
        "    v = psutil.virtual_memory(); m = p.memory_info(); c = psutil.cpu_percent()\n"
        "    t = psutil.sensors_temperatures() if hasattr(psutil, 'sensors_temperatures') else {}\n"
        "def best(f, n):\n"
        "    r = []\n"
        "    for _ in range(7):\n"
        "        t0 = time.perf_counter()\n"
        "        for _ in range(n): f()\n"
        "        r.append((time.perf_counter() - t0) / n)\n"
        "    return min(r)\n"
        "print(best(psutil.virtual_memory, 2000), best(p.memory_info, 2000), best(seed, 300))\n";
    char path[] = "/tmp/bench_capture_XXXXXX.py";
    int fd = mkstemps(path, 3);
    if (fd < 0)
        return 0;
    if (write(fd, script, sizeof script - 1) != (ssize_t)(sizeof script - 1)) {
        close(fd);
        unlink(path);
        return 0;
    }
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    int ok = p && fscanf(p, "%lf %lf %lf", &out[0], &out[1], &out[2]) == 3;
    if (p)
        pclose(p);
    unlink(path);
    return ok;
}

/* The floor under any sampler: a thread that only wakes every interval_ms
 * (no reads), its CPU time over n wakes, per wake.  On a VM a wake-up alone
 * can cost tens of microseconds. */
struct waker {
    int interval_ms, n;
    double cpu_per_wake;
};

static void *bare_wakes(void *arg) {
    struct waker *w = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int i = 0; i < w->n; i++) {
        next.tv_nsec += (long)w->interval_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
            ;
    }
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    w->cpu_per_wake = ((double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9) / w->n;
    return NULL;
}

static const char *fmt(double s, char *buf, size_t len);

/* ------------------------------------------------ the tree's PSS price */

#define TREE_MAX 8

/* A python3 + torch tree: the parent and its DataLoader's 2 workers, idle
 * until their stdin closes.  Returns the count of pids (0: no torch). */
static const char torch_tree_script[] =
    "import os, sys, torch\n"
    "from torch.utils.data import DataLoader, Dataset\n"
    "class D(Dataset):\n"
    "    def __len__(self): return 1 << 20\n"
    "    def __getitem__(self, i): return torch.randn(64)\n"
    "it = iter(DataLoader(D(), batch_size=32, num_workers=2)); next(it)\n"
    "kids = open('/proc/%d/task/%d/children' % (os.getpid(), os.getpid())).read().split()\n"
    "print(os.getpid(), *kids, flush=True)\n"
    "sys.stdin.read()\n";

static FILE *torch_tree(int *pids, int *n) {
    char path[] = "/tmp/bench_capture_tree_XXXXXX.py";
    int fd = mkstemps(path, 3);
    if (fd < 0)
        return NULL;
    ssize_t w = write(fd, torch_tree_script, sizeof torch_tree_script - 1);
    close(fd);
    if (w != (ssize_t)(sizeof torch_tree_script - 1)) {
        unlink(path);
        return NULL;
    }
    /* its stdout through a file: popen has one direction only */
    char out[] = "/tmp/bench_capture_tree_XXXXXX.txt";
    int ofd = mkstemps(out, 4);
    if (ofd < 0) {
        unlink(path);
        return NULL;
    }
    close(ofd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s > %s 2>/dev/null", path, out);
    FILE *p = popen(cmd, "w");
    *n = 0;
    for (int tries = 0; p && tries < 600 && *n == 0; tries++) { /* torch takes seconds to import */
        struct timespec nap = {0, 100000000};
        nanosleep(&nap, NULL);
        FILE *f = fopen(out, "r");
        while (f && *n < TREE_MAX && fscanf(f, "%d", &pids[*n]) == 1)
            (*n)++;
        if (f)
            fclose(f);
    }
    unlink(path);
    unlink(out);
    if (p && *n == 0) {
        pclose(p);
        p = NULL;
    }
    return p;
}

/* Without torch: this process touches 256 MiB and forks 2 children that
 * share it and wait on a pipe. */
static int shared_tree(int *pids, int *wake_fd) {
    static char *buf;
    size_t size = 256u << 20;
    buf = malloc(size);
    if (!buf)
        return 0;
    for (size_t i = 0; i < size; i += 4096)
        buf[i] = 1;
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    int n = 0;
    pids[n++] = (int)getpid();
    for (int k = 0; k < 2; k++) {
        pid_t c = fork();
        if (c == 0) {
            char b;
            close(fds[1]);
            ssize_t r = read(fds[0], &b, 1);
            _exit(r < 0);
        }
        if (c > 0)
            pids[n++] = (int)c;
    }
    close(fds[0]);
    *wake_fd = fds[1];
    return n;
}

/* The best of `repeats` times one read of `file` of every pid (kept open,
 * each read one pread: what the proc source does), in seconds. */
static double tree_read_cost(const int *pids, int n, const char *file, int reads, int repeats) {
    int fds[TREE_MAX];
    static char text[65536];
    for (int k = 0; k < n; k++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/%s", pids[k], file);
        fds[k] = open(path, O_RDONLY | O_CLOEXEC);
    }
    double best = INFINITY;
    for (int r = 0; r < repeats; r++) {
        double t0 = now_s();
        for (int i = 0; i < reads; i++)
            for (int k = 0; k < n; k++)
                if (fds[k] >= 0 && pread(fds[k], text, sizeof text, 0) < 0)
                    return NAN;
        double dt = (now_s() - t0) / reads;
        if (dt < best)
            best = dt;
    }
    for (int k = 0; k < n; k++)
        if (fds[k] >= 0)
            close(fds[k]);
    return best;
}

static double tree_kib(const int *pids, int n, const char *key) {
    double sum = 0;
    for (int k = 0; k < n; k++) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pids[k]);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, key, strlen(key)) == 0)
                sum += atof(line + strlen(key));
        if (f)
            fclose(f);
    }
    return sum;
}

static void pss_price(int quick) {
    int pids[TREE_MAX], n = 0, wake = -1;
    FILE *torch = torch_tree(pids, &n);
    const char *what = "python3 + torch, DataLoader with 2 workers";
    if (!torch) {
        what = "this process + 2 forked children sharing 256 MiB (no torch)";
        n = shared_tree(pids, &wake);
    }
    if (n == 0) {
        printf("tree PSS price: no tree could be made\n");
        return;
    }
    double statm = tree_read_cost(pids, n, "statm", quick ? 200 : 2000, REPEATS);
    double rollup = tree_read_cost(pids, n, "smaps_rollup", quick ? 2 : 10, quick ? 3 : REPEATS);
    double rss = tree_kib(pids, n, "Rss:"), pss = tree_kib(pids, n, "Pss:");
    char a[32], b[32];
    printf("tree PSS price: %s, %d processes, RSS sum %.0f MiB, PSS %.0f MiB\n", what, n, rss / 1024, pss / 1024);
    printf("  %-44s %s\n", "one tree read of statm (RSS)  [baseline]", fmt(statm, a, sizeof a));
    printf("  %-44s %s\n", "one tree read of smaps_rollup (PSS, USS)", fmt(rollup, b, sizeof b));
    printf("  smaps_rollup / statm: %.0fx; %.1f ns per resident KiB; at the sampler's 0.01%% PSS budget "
           "such a tree is read every %.0f s\n",
           rollup / statm, rollup * 1e9 / rss, rollup / SPS_PSS_CPU_SHARE);
    if (torch)
        pclose(torch); /* closes its stdin: the tree exits */
    if (wake >= 0) {
        close(wake);
        while (wait(NULL) > 0)
            ;
    }
}

static const char *fmt(double s, char *buf, size_t len) {
    if (s < 1e-6)
        snprintf(buf, len, "%8.1f ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(buf, len, "%8.2f us", s * 1e6);
    else
        snprintf(buf, len, "%8.2f ms", s * 1e3);
    return buf;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    long n_capture = quick ? 20000 : 1000000, n_fresh = quick ? 50 : 500;
    double sampler_run_s = quick ? 1.0 : 10.0;
    char a[32], b[32];

    if (sps_capture(&cap, 0) != SPS_OK) { /* starts this process's sampler */
        fprintf(stderr, "bench_capture: no sampler could start\n");
        return 1;
    }
    double capture = per_call(0, n_capture);
    double fresh = per_call(1, n_fresh);
    sps_sampler_stop();

    struct sps__sampler_config cfg = {.tree_pid = (int)getpid()};
    char err[256];
    struct sps__sampler *s = sps__sampler_open(&cfg, err, sizeof err);
    if (!s) {
        fprintf(stderr, "bench_capture: %s\n", err);
        return 1;
    }
    double tick_interval = tick_cost(s, 0, n_fresh), tick_machine = tick_cost(s, 1, n_fresh);
    sps__sampler_close(s);

    /* the sampler thread at the default intervals, measured by the kernel */
    s = sps__sampler_open(&cfg, err, sizeof err);
    if (!s || sps__sampler_start(s, 0) != 0) {
        fprintf(stderr, "bench_capture: the sampler thread did not start\n");
        return 1;
    }
    double t0 = now_s();
    struct timespec nap = {(time_t)sampler_run_s, (long)((sampler_run_s - (double)(time_t)sampler_run_s) * 1e9)};
    while (nanosleep(&nap, &nap) != 0)
        ;
    sps__sampler_stop(s);
    double span = now_s() - t0;
    const struct sps__sampler_result *r = sps__sampler_result(s);
    double thread_cpu = r->thread_cpu_seconds;
    double share = 100.0 * thread_cpu / span;
    uint64_t ticks = r->interval_ticks;
    sps__sampler_close(s);

    struct waker bare = {SPS_SAMPLER_DEFAULT_INTERVAL_MS, (int)ticks > 0 ? (int)ticks : 10, 0};
    pthread_t wt;
    if (pthread_create(&wt, NULL, bare_wakes, &bare) == 0)
        pthread_join(wt, NULL);

    double py[3];
    int have_py = psutil_costs(py);

    printf("bench_capture: minimum of %d repeats; baseline psutil %s in the same run\n", REPEATS,
           have_py ? "measured" : "unavailable (python3-psutil missing)");
    printf("  %-44s %s\n", "sps_capture() (latest sample)", fmt(capture, a, sizeof a));
    printf("  %-44s %s\n", "sps_capture(SPS_CAPTURE_FRESH)", fmt(fresh, a, sizeof a));
    printf("  %-44s %s\n", "one sampler tick at the interval alone, warm", fmt(tick_interval, a, sizeof a));
    printf("  %-44s %s\n", "one sampler tick at the machine interval, warm", fmt(tick_machine, a, sizeof a));
    if (have_py) {
        printf("  %-44s %s\n", "psutil.virtual_memory()  [baseline]", fmt(py[0], a, sizeof a));
        printf("  %-44s %s\n", "psutil.Process().memory_info()", fmt(py[1], a, sizeof a));
        printf("  %-44s %s\n", "psutil seed capture (vmem+rss+cpu%+temps)", fmt(py[2], a, sizeof a));
        printf("ratios:\n");
        printf("  psutil.virtual_memory() / sps_capture()      %8.0fx  (target >= 100x)\n", py[0] / capture);
        printf("  psutil seed capture / sps_capture()          %8.0fx\n", py[2] / capture);
        printf("  psutil seed capture / sps_capture(FRESH)     %8.2fx  (FRESH reads far more)\n", py[2] / fresh);
    }
    printf("sampler thread at default intervals (%d ms, machine %d ms): %s CPU over %.2f s, %llu wake-ups\n",
           SPS_SAMPLER_DEFAULT_INTERVAL_MS, SPS_SAMPLER_DEFAULT_MACHINE_MS, fmt(thread_cpu, b, sizeof b), span,
           (unsigned long long)ticks);
    printf("  = %.4f%% of one core  (target < 0.1%%); %s per wake-up\n", share,
           fmt(ticks ? thread_cpu / (double)ticks : 0, a, sizeof a));
    printf("baseline: a bare thread waking every %d ms, no reads: %s CPU per wake = %.4f%% of one core\n",
           bare.interval_ms, fmt(bare.cpu_per_wake, b, sizeof b),
           100.0 * bare.cpu_per_wake / (bare.interval_ms * 1e-3));
    printf("  sampler / bare wake: %.2fx\n", ticks && bare.cpu_per_wake > 0 ? thread_cpu / (double)ticks / bare.cpu_per_wake : NAN);
    pss_price(quick);
    return 0;
}
