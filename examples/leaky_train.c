/*
 * leaky_train.c - a training loop that leaks, for stepscope's leak
 * detection to find (docs/analysis.md, "Memory leaks").
 *
 * Each step does a little arithmetic (a tiny linear model fitted by SGD,
 * in the zones "forward", "backward" and "optimizer") and keeps a
 * per-step "activation cache" of --leak-kib KiB (default 1024, 1 MiB)
 * that is kept until training ends: the kind of leak a training loop gets by keeping
 * a reference to every step's tensors (a list of losses that still hold
 * their graphs, say).  The cache is written, so its pages are resident
 * and the process's RSS grows by that much each step.  A step lasts about
 * --step-ms milliseconds (default 12; 150 steps: about 2 s), long enough
 * for the sampler's 100 ms readings to see the trend.
 *
 *     stepscope run -- ./leaky_train --steps 150
 *
 * --leak-kib 0 gives the same loop without the leak.
 *
 * --worker-leak-kib K moves the leak into a data worker: the loop forks a
 * worker (named "leaky_worker") that keeps K KiB for every step the loop
 * hands it, while the loop itself releases K KiB a step from a pool it
 * filled before training.  The tree's total RSS then stays level and only
 * the worker's own series shows the leak, which is what stepscope's
 * per-process check is for:
 *
 *     stepscope run -- ./leaky_train --leak-kib 0 --worker-leak-kib 1024
 *
 * With a worker the loop prints "worker pid N" first.
 */
#define _GNU_SOURCE /* prctl's PR_SET_NAME, MAP_ANONYMOUS */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stepscope.h>

enum { N_FEATURES = 64, BATCH = 32 };

/* Parse "--name VALUE" as a non-negative long; exits on a bad value. */
static long arg_long(const char *name, const char *value) {
    char *end;
    long v = value ? strtol(value, &end, 10) : -1;
    if (!value || *end != '\0' || v < 0) {
        fprintf(stderr, "leaky_train: %s needs a non-negative integer\n", name);
        exit(2);
    }
    return v;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/*
 * The data worker: for every byte the loop writes to `steps_in` (one a
 * step) it keeps `bytes` more, written so that they are resident, until
 * the loop closes the pipe.  It never returns.
 *
 * Each step's bytes are a mapping of their own, not malloc's, and huge
 * pages are declined for them: the worker's resident memory then grows
 * by exactly `bytes` a step whatever the allocator (AddressSanitizer's
 * adds shadow and headers to each malloc, by amounts that differ between
 * its versions) and whatever the kernel's transparent huge page setting.
 * The leak tests assert that exact figure.
 */
static void worker_main(int steps_in, size_t bytes, long steps) {
    prctl(PR_SET_NAME, "leaky_worker", 0, 0, 0);
    char **kept = calloc((size_t)steps + 1, sizeof *kept);
    long n = 0;
    char token;
    while (read(steps_in, &token, 1) == 1) {
        if (!kept || n >= steps)
            continue;
        char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            continue;
        (void)madvise(p, bytes, MADV_NOHUGEPAGE); /* advice: a kernel without THP refuses it harmlessly */
        memset(p, (int)(n & 0x7f) + 1, bytes);
        kept[n++] = p;
    }
    for (long i = 0; kept && i < n; i++)
        munmap(kept[i], bytes);
    free(kept);
    /* _exit: the atexit handlers are the loop's (the library's record) */
    _exit(0);
}

int main(int argc, char **argv) {
    long steps = 150, leak_kib = 1024, step_ms = 12, worker_leak_kib = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0)
            steps = arg_long(argv[i], argv[i + 1]), i++;
        else if (strcmp(argv[i], "--leak-kib") == 0)
            leak_kib = arg_long(argv[i], argv[i + 1]), i++;
        else if (strcmp(argv[i], "--step-ms") == 0)
            step_ms = arg_long(argv[i], argv[i + 1]), i++;
        else if (strcmp(argv[i], "--worker-leak-kib") == 0)
            worker_leak_kib = arg_long(argv[i], argv[i + 1]), i++;
        else {
            fprintf(stderr, "usage: leaky_train [--steps N] [--leak-kib K] [--step-ms M] [--worker-leak-kib K]\n");
            return 2;
        }
    }

    /* the worker, and the pool the loop gives back what the worker keeps
     * from: mapped (not malloc'd) so that each release returns its pages
     * at once, and written so that they are resident before training */
    size_t worker_bytes = (size_t)worker_leak_kib * 1024;
    int to_worker = -1;
    pid_t worker = -1;
    char *pool = NULL;
    size_t pool_bytes = worker_bytes * (size_t)steps;
    if (worker_bytes > 0) {
        long page = sysconf(_SC_PAGESIZE);
        if (page <= 0 || worker_bytes % (size_t)page != 0) {
            fprintf(stderr, "leaky_train: --worker-leak-kib must be a whole number of pages\n");
            return 2;
        }
        int fds[2];
        if (pipe(fds) != 0) {
            perror("leaky_train: pipe");
            return 1;
        }
        fflush(stdout);
        worker = fork();
        if (worker < 0) {
            perror("leaky_train: fork");
            return 1;
        }
        if (worker == 0) {
            close(fds[1]);
            worker_main(fds[0], worker_bytes, steps);
        }
        close(fds[0]);
        to_worker = fds[1];
        printf("worker pid %d\n", (int)worker);
        fflush(stdout);
        pool = mmap(NULL, pool_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (pool == MAP_FAILED) {
            perror("leaky_train: mmap");
            return 1;
        }
        (void)madvise(pool, pool_bytes, MADV_NOHUGEPAGE); /* each release returns exactly its pages */
        memset(pool, 1, pool_bytes);
    }

    /* y = w_true . x, learnt by SGD: deterministic inputs, no PRNG needed */
    double w[N_FEATURES] = {0}, grad[N_FEATURES], x[BATCH][N_FEATURES], y[BATCH], err[BATCH];
    for (int b = 0; b < BATCH; b++) {
        y[b] = 0;
        for (int f = 0; f < N_FEATURES; f++) {
            x[b][f] = (double)((b * 7 + f * 13) % 17) / 17.0 - 0.5;
            y[b] += x[b][f] * (double)(f % 5);
        }
    }

    /* the leak: what one step keeps is released only when training ends
     * (freed then so that LeakSanitizer builds stay quiet; RSS still grows
     * every step, which is what a training-time leak looks like) */
    char **kept = calloc((size_t)steps + 1, sizeof *kept);
    double loss = 0;
    for (long step = 0; step < steps; step++) {
        SPS_STEP();
        {
            SPS_ZONE("forward");
            loss = 0;
            for (int b = 0; b < BATCH; b++) {
                double p = 0;
                for (int f = 0; f < N_FEATURES; f++)
                    p += w[f] * x[b][f];
                err[b] = p - y[b];
                loss += err[b] * err[b] / BATCH;
            }
            if (leak_kib > 0 && kept) {
                size_t bytes = (size_t)leak_kib * 1024;
                kept[step] = malloc(bytes);
                if (kept[step])
                    memset(kept[step], (int)(step & 0x7f) + 1, bytes); /* resident, not just reserved */
            }
            if (to_worker >= 0) {
                /* the worker keeps a step's worth; the loop gives as much back */
                char token = 's';
                if (write(to_worker, &token, 1) != 1)
                    perror("leaky_train: write to worker");
                munmap(pool + (size_t)step * worker_bytes, worker_bytes);
            }
        }
        {
            SPS_ZONE("backward");
            memset(grad, 0, sizeof grad);
            for (int b = 0; b < BATCH; b++)
                for (int f = 0; f < N_FEATURES; f++)
                    grad[f] += 2 * err[b] * x[b][f] / BATCH;
        }
        {
            SPS_ZONE("optimizer");
            for (int f = 0; f < N_FEATURES; f++)
                w[f] -= 0.1 * grad[f];
        }
        {
            SPS_ZONE("data"); /* waiting for the next batch */
            sleep_ms(step_ms);
        }
        SPS_VALUE("loss", loss);
    }
    if (to_worker >= 0) {
        close(to_worker); /* the worker sees the end, releases and exits */
        int status;
        while (waitpid(worker, &status, 0) < 0 && errno == EINTR)
            ;
    }
    printf("final loss %.6f after %ld steps, %ld KiB kept per step\n", loss, steps, leak_kib);
    for (long step = 0; kept && step < steps; step++)
        free(kept[step]);
    free(kept);
    return 0;
}
