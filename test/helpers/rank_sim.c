/*
 * rank_sim.c - simulated ranks of a distributed job, for the merge tests
 * and bench/bench_merge.c: N processes on this machine, each with RANK,
 * LOCAL_RANK and WORLD_SIZE set as torchrun sets them, each recording
 * small steps.
 *
 *   rank_sim [--ranks N] [--first-rank R] [--world W] [--steps S]
 *            [--spin-us U] [--offset-ns X --error-ns E]
 *
 * Starts N processes (ranks R .. R+N-1 of W, default W = N) and waits for
 * them; exits 0 when every one exited 0.  Each records S steps, each a
 * step holding zone "compute" (U us of CPU, default 50) and zone
 * "exchange" (U/5 us), a value "loss" and a counter "samples".  With
 * --offset-ns, each also stores a clock-offset measurement (offset X ns,
 * error E ns) at its start and end through sps_clock_offset_set, as a
 * C or MPI program that measured its offset to rank 0 would.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stepscope.h"

static void spin_us(long us) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static int rank_main(int steps, long spin, int have_offset, long long offset, unsigned long long error) {
    if (have_offset)
        sps_clock_offset_set(SPS_SYNC_START, offset, error, sps_clock_ns(), 8, NULL);
    for (int i = 0; i < steps; i++) { /* one step per iteration: it ends with the block */
        SPS_STEP();
        {
            SPS_ZONE("compute");
            spin_us(spin);
        }
        {
            SPS_ZONE("exchange");
            spin_us(spin / 5);
        }
        SPS_VALUE("loss", 1.0 / (i + 1));
        SPS_COUNT("samples", 8);
    }
    if (have_offset)
        sps_clock_offset_set(SPS_SYNC_END, offset, error, sps_clock_ns(), 8, NULL);
    return 0;
}

int main(int argc, char **argv) {
    int ranks = 2, first = 0, world = -1, steps = 20, have_offset = 0, child = 0;
    long spin = 50;
    long long offset = 0;
    unsigned long long error = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--ranks") && v) ranks = atoi(argv[++i]);
        else if (!strcmp(a, "--first-rank") && v) first = atoi(argv[++i]);
        else if (!strcmp(a, "--world") && v) world = atoi(argv[++i]);
        else if (!strcmp(a, "--steps") && v) steps = atoi(argv[++i]);
        else if (!strcmp(a, "--spin-us") && v) spin = atol(argv[++i]);
        else if (!strcmp(a, "--offset-ns") && v) { offset = atoll(argv[++i]); have_offset = 1; }
        else if (!strcmp(a, "--error-ns") && v) error = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--child")) child = 1;
        else {
            fprintf(stderr, "rank_sim: unknown argument '%s'\n", a);
            return 2;
        }
    }
    if (child)
        return rank_main(steps, spin, have_offset, offset, error);
    if (ranks < 1 || first < 0)
        return 2;
    if (world < 0)
        world = first + ranks;
    /* each rank execs this program afresh with its environment, as torchrun
     * starts its workers: the parent records nothing */
    for (int r = first; r < first + ranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("rank_sim: fork");
            return 1;
        }
        if (pid == 0) {
            char buf[32];
            snprintf(buf, sizeof buf, "%d", r);
            setenv("RANK", buf, 1);
            snprintf(buf, sizeof buf, "%d", r - first);
            setenv("LOCAL_RANK", buf, 1);
            snprintf(buf, sizeof buf, "%d", world);
            setenv("WORLD_SIZE", buf, 1);
            char **args = calloc((size_t)argc + 2, sizeof *args);
            if (!args)
                _exit(1);
            for (int k = 0; k < argc; k++)
                args[k] = argv[k];
            args[argc] = "--child";
            execv("/proc/self/exe", args);
            perror("rank_sim: exec");
            _exit(127);
        }
    }
    int failed = 0, status;
    for (;;) {
        if (wait(&status) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    return failed ? 1 : 0;
}
