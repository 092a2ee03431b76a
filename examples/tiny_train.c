/*
 * tiny_train.c - a small but real training loop to profile with stepscope.
 *
 * Trains a multi-layer perceptron (256 -> 64 tanh -> 32 tanh -> 4 softmax)
 * with mini-batch SGD on synthetic data: 4096 points drawn from eight
 * Gaussian blobs in 256 dimensions, two blobs per class, so the classes are
 * not linearly separable and the hidden layers have work to do.  Everything
 * (data, initial weights, batch order) comes from one seeded PRNG, so a run
 * is reproducible bit for bit for a given --seed and build.
 *
 * Each step is instrumented the way a real training loop would be: a step,
 * then the zones "data", "forward", "backward" and "optimizer", then the
 * loss as a value and the batch size as the "samples" counter.
 *
 *     cc -std=c11 -O2 -Iinclude examples/tiny_train.c -Lbuild -lstepscope \
 *        -lpthread -ldl -lm -o tiny_train
 *     stepscope run -- ./tiny_train --steps 300
 *
 * Build with -DSTEPSCOPE_DISABLE to get the same program without profiling.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stepscope.h>

/* ------------------------------------------------------------- problem size */

/* 256 inputs (think of a 16x16 image) rather than a handful: the input layer
 * dominates the arithmetic, and at this width a default run lasts a few
 * tenths of a second, long enough for the zones to show stable times. */
enum {
    N_SAMPLES = 4096,
    N_IN = 256,
    N_H1 = 64,
    N_H2 = 32,
    N_OUT = 4,
    N_BLOBS = 2 * N_OUT
};

/* All weights and biases live in one array so that the optimizer, the
 * gradient reset and the initialisation are single loops. */
enum {
    OFF_W1 = 0,
    OFF_B1 = OFF_W1 + N_H1 * N_IN,
    OFF_W2 = OFF_B1 + N_H1,
    OFF_B2 = OFF_W2 + N_H2 * N_H1,
    OFF_W3 = OFF_B2 + N_H2,
    OFF_B3 = OFF_W3 + N_OUT * N_H2,
    N_PARAMS = OFF_B3 + N_OUT
};

/* Each centre coordinate has standard deviation 2 * BLOB_SPREAD (in units of
 * the unit-variance noise), putting two centres about 4.5 noise deviations
 * apart in 256 dimensions: separable, but not so easily that the loss
 * collapses in a few steps; it falls steadily over the default 300. */
#define BLOB_SPREAD 0.1

/* ---------------------------------------------------------------------- PRNG */

/* splitmix64: tiny, fast, passes BigCrush, and any seed (including 0) is
 * fine, which keeps --seed free of special cases. */
static uint64_t rng_state;

static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1): the top 53 bits fill a double's mantissa exactly. */
static double rng_uniform(void) {
    return (double)(rng_next() >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n) for n < 2^32, by multiply-shift (no modulo bias
 * worth mentioning at these sizes, and no division). */
static uint32_t rng_below(uint32_t n) {
    return (uint32_t)(((rng_next() >> 32) * (uint64_t)n) >> 32);
}

/* Standard normal by Box-Muller; u1 is kept away from 0 so log() is finite. */
static double rng_normal(void) {
    double u1 = ((double)(rng_next() >> 11) + 1.0) * 0x1.0p-53;
    double u2 = rng_uniform();
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ------------------------------------------------------------------- model */

/* z = W x + b for one sample; W is n_out rows of n_in. */
static void dense_forward(const double *w, const double *b, const double *x, int n_in, int n_out,
                          double *z) {
    for (int o = 0; o < n_out; o++) {
        const double *row = w + (size_t)o * n_in;
        double s = b[o];
        for (int i = 0; i < n_in; i++)
            s += row[i] * x[i];
        z[o] = s;
    }
}

/* Accumulates this sample's dL/dW and dL/db given dL/dz, and writes dL/dx
 * when dx is not NULL (the first layer's input needs no gradient). */
static void dense_backward(const double *w, const double *x, const double *dz, int n_in, int n_out,
                           double *gw, double *gb, double *dx) {
    if (dx)
        memset(dx, 0, (size_t)n_in * sizeof *dx);
    for (int o = 0; o < n_out; o++) {
        const double *row = w + (size_t)o * n_in;
        double *grow = gw + (size_t)o * n_in;
        double d = dz[o];
        gb[o] += d;
        for (int i = 0; i < n_in; i++)
            grow[i] += d * x[i];
        if (dx)
            for (int i = 0; i < n_in; i++)
                dx[i] += row[i] * d;
    }
}

/* Activations of one mini-batch, kept from the forward pass for backward. */
struct batch {
    int size;
    double *x;    /* size x N_IN */
    int *y;       /* size */
    double *h1;   /* size x N_H1, after tanh */
    double *h2;   /* size x N_H2, after tanh */
    double *prob; /* size x N_OUT, softmax output */
};

/* Forward pass and mean cross-entropy over the batch. */
static double forward(const double *theta, struct batch *bt) {
    double loss = 0.0;
    for (int s = 0; s < bt->size; s++) {
        const double *x = bt->x + (size_t)s * N_IN;
        double *h1 = bt->h1 + (size_t)s * N_H1;
        double *h2 = bt->h2 + (size_t)s * N_H2;
        double *p = bt->prob + (size_t)s * N_OUT;

        dense_forward(theta + OFF_W1, theta + OFF_B1, x, N_IN, N_H1, h1);
        for (int j = 0; j < N_H1; j++)
            h1[j] = tanh(h1[j]);
        dense_forward(theta + OFF_W2, theta + OFF_B2, h1, N_H1, N_H2, h2);
        for (int j = 0; j < N_H2; j++)
            h2[j] = tanh(h2[j]);
        dense_forward(theta + OFF_W3, theta + OFF_B3, h2, N_H2, N_OUT, p);

        /* Subtracting the largest logit keeps exp() from overflowing. */
        double max = p[0];
        for (int k = 1; k < N_OUT; k++)
            if (p[k] > max)
                max = p[k];
        double sum = 0.0;
        for (int k = 0; k < N_OUT; k++) {
            p[k] = exp(p[k] - max);
            sum += p[k];
        }
        for (int k = 0; k < N_OUT; k++)
            p[k] /= sum;
        /* Clamped so one confidently wrong sample cannot make the loss inf. */
        double py = p[bt->y[s]];
        loss -= log(py > 1e-300 ? py : 1e-300);
    }
    return loss / bt->size;
}

/* Gradient of the mean cross-entropy with respect to every parameter. */
static void backward(const double *theta, const struct batch *bt, double *grad) {
    memset(grad, 0, N_PARAMS * sizeof *grad);
    const double inv_n = 1.0 / bt->size;
    for (int s = 0; s < bt->size; s++) {
        const double *x = bt->x + (size_t)s * N_IN;
        const double *h1 = bt->h1 + (size_t)s * N_H1;
        const double *h2 = bt->h2 + (size_t)s * N_H2;
        const double *p = bt->prob + (size_t)s * N_OUT;
        double d3[N_OUT], d2[N_H2], d1[N_H1];

        /* Softmax and cross-entropy together differentiate to p - onehot. */
        for (int k = 0; k < N_OUT; k++)
            d3[k] = (p[k] - (k == bt->y[s] ? 1.0 : 0.0)) * inv_n;
        dense_backward(theta + OFF_W3, h2, d3, N_H2, N_OUT, grad + OFF_W3, grad + OFF_B3, d2);
        for (int j = 0; j < N_H2; j++)
            d2[j] *= 1.0 - h2[j] * h2[j];
        dense_backward(theta + OFF_W2, h1, d2, N_H1, N_H2, grad + OFF_W2, grad + OFF_B2, d1);
        for (int j = 0; j < N_H1; j++)
            d1[j] *= 1.0 - h1[j] * h1[j];
        dense_backward(theta + OFF_W1, x, d1, N_IN, N_H1, grad + OFF_W1, grad + OFF_B1, NULL);
    }
}

/* Glorot-uniform weights suit tanh: activations start neither saturated nor
 * vanishing.  Biases start at zero. */
static void init_params(double *theta) {
    static const struct {
        int off, n_in, n_out;
    } layers[] = {{OFF_W1, N_IN, N_H1}, {OFF_W2, N_H1, N_H2}, {OFF_W3, N_H2, N_OUT}};
    memset(theta, 0, N_PARAMS * sizeof *theta);
    for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
        double a = sqrt(6.0 / (layers[l].n_in + layers[l].n_out));
        for (int i = 0; i < layers[l].n_in * layers[l].n_out; i++)
            theta[layers[l].off + i] = (2.0 * rng_uniform() - 1.0) * a;
    }
}

/* Eight blobs, blob b belonging to class b % 4: each class is two separate
 * clusters, which no linear model can separate. */
static void make_data(double *xs, int *ys) {
    double centre[N_BLOBS][N_IN];
    for (int b = 0; b < N_BLOBS; b++)
        for (int i = 0; i < N_IN; i++)
            centre[b][i] = BLOB_SPREAD * 2.0 * rng_normal();
    for (int s = 0; s < N_SAMPLES; s++) {
        int b = (int)rng_below(N_BLOBS);
        ys[s] = b % N_OUT;
        for (int i = 0; i < N_IN; i++)
            xs[(size_t)s * N_IN + i] = centre[b][i] + rng_normal();
    }
}

/* Fisher-Yates; the sampler reshuffles at each epoch so consecutive epochs
 * see the data in different orders. */
static void shuffle(int *perm, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below((uint32_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* --------------------------------------------------------------- arguments */

struct options {
    long steps;
    long batch;
    double lr;
    uint64_t seed;
    long print_every;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: tiny_train [--steps N] [--batch N] [--lr X] [--seed N] [--print-every N]\n"
            "Trains a 256-64-32-4 MLP with SGD on synthetic Gaussian blobs.\n"
            "  --steps N        training steps (default 300)\n"
            "  --batch N        mini-batch size, 1..%d (default 64)\n"
            "  --lr X           learning rate (default 0.2)\n"
            "  --seed N         PRNG seed for data, weights and batch order (default 1)\n"
            "  --print-every N  print the loss every N steps, 0 = never (default 50)\n",
            N_SAMPLES);
}

static void die_usage(const char *what, const char *flag, const char *arg) {
    if (arg)
        fprintf(stderr, "tiny_train: %s %s '%s'\n", flag, what, arg);
    else
        fprintf(stderr, "tiny_train: %s %s\n", flag, what);
    exit(2);
}

static long parse_long(const char *flag, const char *s, long min, long max) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < min || v > max) {
        char what[96];
        snprintf(what, sizeof what, "needs an integer in %ld..%ld, got", min, max);
        die_usage(what, flag, s);
    }
    return v;
}

static uint64_t parse_u64(const char *flag, const char *s) {
    char *end;
    errno = 0;
    /* strtoull accepts "-1" and wraps it; a seed given as negative is a typo. */
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || strchr(s, '-'))
        die_usage("needs a non-negative integer, got", flag, s);
    return (uint64_t)v;
}

static double parse_pos_double(const char *flag, const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v <= 0.0)
        die_usage("needs a positive number, got", flag, s);
    return v;
}

static struct options parse_args(int argc, char **argv) {
    struct options o = {300, 64, 0.2, 1, 50};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        /* Accept both "--flag value" and "--flag=value". */
        char flag[32];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) == 0 && eq && (size_t)(eq - a) < sizeof flag) {
            memcpy(flag, a, (size_t)(eq - a));
            flag[eq - a] = '\0';
            val = eq + 1;
        } else if (strlen(a) < sizeof flag) {
            strcpy(flag, a);
        } else {
            fprintf(stderr, "tiny_train: unknown option '%s' (try --help)\n", a);
            exit(2);
        }
        int known = strcmp(flag, "--steps") == 0 || strcmp(flag, "--batch") == 0 ||
                    strcmp(flag, "--lr") == 0 || strcmp(flag, "--seed") == 0 ||
                    strcmp(flag, "--print-every") == 0;
        if (!known) {
            fprintf(stderr, "tiny_train: unknown option '%s' (try --help)\n", a);
            exit(2);
        }
        if (!val) {
            if (i + 1 >= argc)
                die_usage("needs a value", flag, NULL);
            val = argv[++i];
        }
        if (strcmp(flag, "--steps") == 0)
            o.steps = parse_long(flag, val, 1, 100000000L);
        else if (strcmp(flag, "--batch") == 0)
            o.batch = parse_long(flag, val, 1, N_SAMPLES);
        else if (strcmp(flag, "--lr") == 0)
            o.lr = parse_pos_double(flag, val);
        else if (strcmp(flag, "--seed") == 0)
            o.seed = parse_u64(flag, val);
        else
            o.print_every = parse_long(flag, val, 0, 100000000L);
    }
    return o;
}

/* -------------------------------------------------------------------- main */

int main(int argc, char **argv) {
    struct options opt = parse_args(argc, argv);
    rng_state = opt.seed;

    const int bsz = (int)opt.batch;
    double *xs = malloc(sizeof(double) * N_SAMPLES * N_IN);
    int *ys = malloc(sizeof(int) * N_SAMPLES);
    int *perm = malloc(sizeof(int) * N_SAMPLES);
    double *theta = malloc(sizeof(double) * N_PARAMS);
    double *grad = malloc(sizeof(double) * N_PARAMS);
    struct batch bt = {
        bsz,
        malloc(sizeof(double) * (size_t)bsz * N_IN),
        malloc(sizeof(int) * (size_t)bsz),
        malloc(sizeof(double) * (size_t)bsz * N_H1),
        malloc(sizeof(double) * (size_t)bsz * N_H2),
        malloc(sizeof(double) * (size_t)bsz * N_OUT),
    };
    if (!xs || !ys || !perm || !theta || !grad || !bt.x || !bt.y || !bt.h1 || !bt.h2 ||
        !bt.prob) {
        fprintf(stderr, "tiny_train: out of memory\n");
        return 1;
    }

    make_data(xs, ys);
    init_params(theta);
    for (int i = 0; i < N_SAMPLES; i++)
        perm[i] = i;
    int cursor = N_SAMPLES; /* forces a shuffle before the first batch */

    double first_loss = 0.0, loss = 0.0;
    for (long step = 0; step < opt.steps; step++) {
        SPS_STEP();
        {
            SPS_ZONE("data");
            if (cursor + bsz > N_SAMPLES) {
                shuffle(perm, N_SAMPLES);
                cursor = 0;
            }
            for (int s = 0; s < bsz; s++) {
                int src = perm[cursor + s];
                memcpy(bt.x + (size_t)s * N_IN, xs + (size_t)src * N_IN, N_IN * sizeof(double));
                bt.y[s] = ys[src];
            }
            cursor += bsz;
        }
        {
            SPS_ZONE("forward");
            loss = forward(theta, &bt);
        }
        {
            SPS_ZONE("backward");
            backward(theta, &bt, grad);
        }
        {
            SPS_ZONE("optimizer");
            for (int i = 0; i < N_PARAMS; i++)
                theta[i] -= opt.lr * grad[i];
        }
        SPS_VALUE("loss", loss);
        SPS_COUNT("samples", bsz);

        if (step == 0)
            first_loss = loss;
        if (opt.print_every > 0 && (step % opt.print_every == 0 || step == opt.steps - 1))
            printf("step %ld loss %.6f\n", step, loss);
    }
    printf("final loss %.6f (first %.6f)\n", loss, first_loss);

    free(bt.x);
    free(bt.y);
    free(bt.h1);
    free(bt.h2);
    free(bt.prob);
    free(grad);
    free(theta);
    free(perm);
    free(ys);
    free(xs);
    return 0;
}
