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
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv) {
    long steps = 150, leak_kib = 1024, step_ms = 12;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0)
            steps = arg_long(argv[i], argv[i + 1]), i++;
        else if (strcmp(argv[i], "--leak-kib") == 0)
            leak_kib = arg_long(argv[i], argv[i + 1]), i++;
        else if (strcmp(argv[i], "--step-ms") == 0)
            step_ms = arg_long(argv[i], argv[i + 1]), i++;
        else {
            fprintf(stderr, "usage: leaky_train [--steps N] [--leak-kib K] [--step-ms M]\n");
            return 2;
        }
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
    printf("final loss %.6f after %ld steps, %ld KiB kept per step\n", loss, steps, leak_kib);
    for (long step = 0; kept && step < steps; step++)
        free(kept[step]);
    free(kept);
    return 0;
}
