/*
 * bench_nvtx.c - what the NVTX hook costs a zone when no tool is injected
 * (the budget: at most 1 ns per zone), and, for information, what
 * a zone costs with a tool injected.
 *
 * The baseline is the same recorder without the hook: CMake builds the
 * recorder's sources twice into two small shared libraries,
 * bench_recorder_hook (as libstepscope is built) and
 * bench_recorder_nohook (the same files with -DSPS_NVTX_HOOK=0, which
 * compiles the hook's check out and nothing else).  This program loads
 * both (dlopen, RTLD_LOCAL: each has its own record and its own thread
 * state) and calls each one's sps_zone_begin/sps_zone_end through a
 * function pointer, so both pay the same call; rounds alternate which goes
 * first (ABBA), each round times N zones of each on the thread's CPU clock,
 * and the difference is taken round by round, then its median and range.
 *
 * With a tool: the program runs itself again with NVTX_INJECTION64_PATH
 * naming the test suite's fake injection library (built with the tests),
 * which accepts every range and writes nothing, so the figure is
 * stepscope's side of a range (the push before the begin's timestamp, the
 * pop after the end's) plus the cheapest tool there can be; Nsight's own
 * cost comes on top.
 *
 *     bench_nvtx [--iterations N] [--rounds R]
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stepscope.h>

#include "bench_rounds.h"

#define BUDGET_NS 1.0

struct recorder {
    const char *label;
    sps_zone_t (*begin)(struct sps_site *);
    void (*end)(sps_zone_t);
    int (*status)(struct sps_status *);
    struct sps_site site; /* each library interns its own */
};

static int load(struct recorder *r, const char *path, const char *label) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "bench_nvtx: %s\n", dlerror());
        return -1;
    }
    *(void **)&r->begin = dlsym(h, "sps_zone_begin");
    *(void **)&r->end = dlsym(h, "sps_zone_end");
    *(void **)&r->status = dlsym(h, "sps_status");
    if (!r->begin || !r->end || !r->status) {
        fprintf(stderr, "bench_nvtx: %s lacks sps_zone_begin/sps_zone_end/sps_status\n", path);
        return -1;
    }
    r->label = label;
    r->site = (struct sps_site){"bench", __FILE__, __func__, __LINE__, SPS_KIND_ZONE, 0};
    return 0;
}

static __attribute__((noinline)) double time_zones(struct recorder *r, uint64_t n) {
    sps_zone_t (*begin)(struct sps_site *) = r->begin;
    void (*end)(sps_zone_t) = r->end;
    struct sps_site *site = &r->site;
    uint64_t t0 = bench_thread_ns();
    for (uint64_t i = 0; i < n; i++)
        end(begin(site));
    return (double)(bench_thread_ns() - t0) / (double)n;
}

/* A zone that does not record (the recorder failed) costs far less than
 * one that does: a benchmark that measured that would flatter the hook. */
static int records(struct recorder *r) {
    sps_zone_t z = r->begin(&r->site);
    r->end(z);
    struct sps_status st;
    return z != 0 && r->status(&st) == 0 && st.events_recorded > 0;
}

struct pair {
    struct bench_summary a, b, diff;
};

/* R rounds of N zones of a and of b, alternating which goes first. */
static struct pair interleave(struct recorder *a, struct recorder *b, uint64_t n, int rounds) {
    double va[BENCH_MAX_ROUNDS], vb[BENCH_MAX_ROUNDS], vd[BENCH_MAX_ROUNDS];
    time_zones(a, n / 4); /* warm both: first-use paths, caches, branch history */
    time_zones(b, n / 4);
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            va[r] = time_zones(a, n);
            vb[r] = time_zones(b, n);
        } else {
            vb[r] = time_zones(b, n);
            va[r] = time_zones(a, n);
        }
        vd[r] = vb[r] - va[r];
    }
    struct pair p = {bench_summarise(va, rounds), bench_summarise(vb, rounds), bench_summarise(vd, rounds)};
    return p;
}

static void print_row(const char *label, struct bench_summary s) {
    printf("  %-44s %8.2f %8.2f %8.2f\n", label, s.median, s.min, s.max);
}

static int run(const char *self, uint64_t n, int rounds, int with_tool) {
    struct recorder without, with;
    if (load(&without, BENCH_RECORDER_NOHOOK, "recorder without the NVTX hook") != 0 ||
        load(&with, BENCH_RECORDER_HOOK, with_tool ? "recorder with the hook, a tool injected"
                                                   : "recorder with the hook, no tool") != 0)
        return 1;
    if (!records(&without) || !records(&with)) {
        fprintf(stderr, "bench_nvtx: a recorder records nothing here: the figures would mean nothing\n");
        return 1;
    }
    struct pair p = interleave(&without, &with, n, rounds);
    printf("%s: ns per zone (begin+end), %llu zones a round, %d rounds interleaved, thread CPU time\n",
           with_tool ? "with an NVTX tool injected (the suite's fake, which keeps nothing)" : "no NVTX tool injected",
           (unsigned long long)n, rounds);
    printf("  %-44s %8s %8s %8s\n", "", "median", "min", "max");
    print_row(without.label, p.a);
    print_row(with.label, p.b);
    print_row("difference, round by round (with - without)", p.diff);
    if (!with_tool) {
        printf("  the hook without a tool: %+.2f ns per zone (budget %.0f ns): %s\n", p.diff.median, BUDGET_NS,
               p.diff.median <= BUDGET_NS ? "within" : "OVER");
#ifdef BENCH_FAKE_NVTX
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("NVTX_INJECTION64_PATH", BENCH_FAKE_NVTX, 1);
            unsetenv("FAKE_NVTX_LOG");
            unsetenv("FAKE_NVTX_MODE");
            char iters[32], nrounds[16];
            snprintf(iters, sizeof iters, "%llu", (unsigned long long)n);
            snprintf(nrounds, sizeof nrounds, "%d", rounds);
            execl(self, self, "--iterations", iters, "--rounds", nrounds, "--with-tool", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_nvtx: the run with a tool failed\n");
            return 1;
        }
#else
        (void)self;
        printf("(with a tool: not measured, the fake NVTX library is built with the tests: SPS_BUILD_TESTS)\n");
#endif
    }
    return 0;
}

int main(int argc, char **argv) {
    uint64_t n = 2000000;
    int rounds = 21, with_tool = 0;
    if (argc > 1 && strcmp(argv[argc - 1], "--with-tool") == 0) {
        with_tool = 1;
        argc--;
    }
    if (bench_parse_rounds("bench_nvtx", argc, argv, &n, &rounds) != 0)
        return 2;
    if (!with_tool && getenv("NVTX_INJECTION64_PATH")) {
        fprintf(stderr, "bench_nvtx: NVTX_INJECTION64_PATH is set: unset it (the bench injects its own tool)\n");
        return 2;
    }
    return run(argv[0], n, rounds, with_tool);
}
