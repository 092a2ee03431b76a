/*
 * bench_zone.c - what a stepscope zone costs, next to what it cannot avoid.
 *
 * A zone's begin+end must read the clock twice, so the honest yardstick is
 * two bare timestamp reads (rdtsc on x86) measured in the same process, on
 * the same core, in the same run: the ratio says how much the library adds
 * on top of the clock, independent of how fast this machine's TSC is.
 *
 * Cases, each a tight loop of N iterations timed with CLOCK_MONOTONIC,
 * repeated 7 times (minimum and median reported):
 *   - two TSC reads (the baseline)
 *   - a zone begin+end, recording
 *   - the same zone with recording switched off at run time
 *   - a nested pair of zones (outer + inner) per iteration
 *   - SPS_VALUE and SPS_COUNT
 *   - two clock_gettime(CLOCK_MONOTONIC) calls, for reference
 * Then the baseline and the zone again in one thread per online CPU at once,
 * because a per-thread recorder that secretly shares a cache line or a lock
 * only shows its cost when every core is busy.
 *
 * Then a fresh thread's first 65,536 zones (the events that fill its zone
 * ring the first time) against the next 65,536 on the same thread, on 7
 * fresh threads (each stays alive until the end, so that none inherits an
 * exited thread's segment), with its first zone (the thread's registration)
 * timed alone: in memory, and in a record file in a run directory (this
 * program again, with STEPSCOPE_RUN_DIR set, as under `stepscope run`).
 *
 *     bench_zone [--iterations N] [--quick] [--fresh-only]
 *
 * With STEPSCOPE_RUN_DIR unset (the usual case here) the library records
 * into memory, which is the hot path being measured.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stepscope.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#define BASELINE_NAME "two TSC reads"
static inline uint64_t raw_tick(void) {
    return __rdtsc();
}
#else
/* No user-readable cycle counter we can rely on: the baseline becomes the
 * clock the library itself falls back to, and the output says so. */
#define HAVE_TSC 0
#define BASELINE_NAME "two clock reads"
static inline uint64_t raw_tick(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

#define REPEATS 7
#define DEFAULT_ITERATIONS 2000000u
#define QUICK_ITERATIONS 200000u
#define TARGET_RATIO 1.3

#define NOINLINE __attribute__((noinline))

/* Per thread, so that concurrent threads do not fight over one cache line
 * and charge that to whatever case they are running. */
static _Thread_local volatile uint64_t sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------- cases */

/* Each case is its own non-inlined function so the compiler cannot merge or
 * hoist work between the timed loop and its surroundings. */

static NOINLINE void case_baseline(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = raw_tick();
        uint64_t b = raw_tick();
        sink += a + b;
    }
}

static NOINLINE void case_zone(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        SPS_ZONE_BEGIN(z, "bench");
        SPS_ZONE_END(z);
    }
}

static NOINLINE void case_nested(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        SPS_ZONE_BEGIN(outer, "bench.outer");
        SPS_ZONE_BEGIN(inner, "bench.inner");
        SPS_ZONE_END(inner);
        SPS_ZONE_END(outer);
    }
}

static NOINLINE void case_value(uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        SPS_VALUE("bench.value", (double)i);
}

static NOINLINE void case_count(uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        SPS_COUNT("bench.count", 1);
}

static NOINLINE void case_clock_gettime(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_MONOTONIC, &b);
        sink += (uint64_t)a.tv_nsec + (uint64_t)b.tv_nsec;
    }
}

struct bench_case {
    const char *name;
    void (*fn)(uint64_t);
    int disabled; /* run with recording switched off */
    int records;  /* emits events, so worth checking they were kept */
};

static const struct bench_case cases[] = {
    {BASELINE_NAME " (baseline)", case_baseline, 0, 0},
    {"zone begin+end", case_zone, 0, 1},
    {"zone begin+end, disabled", case_zone, 1, 0},
    {"nested zones (outer+inner)", case_nested, 0, 1},
    {"SPS_VALUE", case_value, 0, 1},
    {"SPS_COUNT", case_count, 0, 1},
    {"clock_gettime pair", case_clock_gettime, 0, 0},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* -------------------------------------------------------------- measuring */

struct result {
    double min, median; /* ns per iteration */
};

static double time_once(void (*fn)(uint64_t), uint64_t n) {
    uint64_t t0 = now_ns();
    fn(n);
    uint64_t t1 = now_ns();
    return (double)(t1 - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct result summarise(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    struct result r = {v[0], v[n / 2]};
    return r;
}

static struct result measure(const struct bench_case *c, uint64_t n) {
    double v[REPEATS];
    if (c->disabled)
        sps_set_enabled(0);
    for (int r = 0; r < REPEATS; r++)
        v[r] = time_once(c->fn, n);
    if (c->disabled)
        sps_set_enabled(1);
    return summarise(v, REPEATS);
}

/* A zone that does not record (library failed to start, record full) costs
 * far less than one that does; a benchmark that silently measured that
 * would flatter the library. */
static int zone_records(void) {
    SPS_ZONE_BEGIN(probe, "bench.probe");
    int ok = probe != 0;
    SPS_ZONE_END(probe);
    return ok;
}

static uint64_t events_dropped(void) {
    struct sps_status st;
    return sps_status(&st) == 0 ? st.events_dropped : 0;
}

/* ----------------------------------------------------- a fresh thread */

#define FRESH_THREADS 7
#define FRESH_ZONES 65536u /* the default zone ring */

struct fresh {
    pthread_t thread;
    double first_ns;   /* the thread's first zone: registration included */
    double cold_ns;    /* per zone, its next FRESH_ZONES - 1 (the ring's first pass) */
    double warm_ns;    /* per zone, the FRESH_ZONES after those */
    int recorded;
    int done; /* the fields above are set */
};

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int parked_release;

static void *fresh_main(void *arg) {
    struct fresh *f = arg;
    uint64_t t0 = now_ns();
    case_zone(1);
    uint64_t t1 = now_ns();
    case_zone(FRESH_ZONES - 1);
    uint64_t t2 = now_ns();
    case_zone(FRESH_ZONES);
    uint64_t t3 = now_ns();
    f->first_ns = (double)(t1 - t0);
    f->cold_ns = (double)(t2 - t1) / (FRESH_ZONES - 1);
    f->warm_ns = (double)(t3 - t2) / FRESH_ZONES;
    f->recorded = zone_records();
    __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
    /* stay registered: an exited thread's segment (rings already touched)
     * would go to the next fresh thread */
    pthread_mutex_lock(&park_lock);
    while (!parked_release)
        pthread_cond_wait(&park_cond, &park_lock);
    pthread_mutex_unlock(&park_lock);
    return NULL;
}

static int run_fresh(const char *where) {
    struct fresh f[FRESH_THREADS];
    memset(f, 0, sizeof f);
    double first[FRESH_THREADS], cold[FRESH_THREADS], warm[FRESH_THREADS], ratio[FRESH_THREADS];
    int started = 0, all_recorded = 1;
    for (int i = 0; i < FRESH_THREADS; i++) {
        /* one at a time: each measures alone */
        if (pthread_create(&f[i].thread, NULL, fresh_main, &f[i]) != 0)
            break;
        started++;
        while (!__atomic_load_n(&f[i].done, __ATOMIC_ACQUIRE))
            sched_yield();
        first[i] = f[i].first_ns;
        cold[i] = f[i].cold_ns;
        warm[i] = f[i].warm_ns;
        ratio[i] = f[i].cold_ns / f[i].warm_ns;
        all_recorded &= f[i].recorded;
    }
    pthread_mutex_lock(&park_lock);
    parked_release = 1;
    pthread_cond_broadcast(&park_cond);
    pthread_mutex_unlock(&park_lock);
    for (int i = 0; i < started; i++)
        pthread_join(f[i].thread, NULL);
    if (started < FRESH_THREADS) {
        fprintf(stderr, "bench_zone: pthread_create failed\n");
        return -1;
    }
    struct result rf = summarise(first, FRESH_THREADS), rc = summarise(cold, FRESH_THREADS);
    struct result rw = summarise(warm, FRESH_THREADS), rr = summarise(ratio, FRESH_THREADS);
    printf("\nfresh threads, %s: %d threads, each alone; ns per zone, median [min-max]\n", where, FRESH_THREADS);
    printf("  first zone (registers the thread)  %10.0f ns [%.0f-%.0f]\n", rf.median, first[0],
           first[FRESH_THREADS - 1]);
    printf("  its first %u zones (ring's first pass) %6.1f [%.1f-%.1f]\n", FRESH_ZONES, rc.median, cold[0],
           cold[FRESH_THREADS - 1]);
    printf("  the next %u zones (warm ring)          %6.1f [%.1f-%.1f]\n", FRESH_ZONES, rw.median, warm[0],
           warm[FRESH_THREADS - 1]);
    printf("  first pass vs warm: %.2fx [%.2f-%.2f]%s\n", rr.median, ratio[0], ratio[FRESH_THREADS - 1],
           all_recorded ? "" : "  (a zone did not record!)");
    return 0;
}

/* This program again, in a process of its own (no exited thread's segment
 * to reuse), recording into memory or, with in_file, into a record file in
 * a run directory (STEPSCOPE_RUN_DIR) as under `stepscope run`. */
static int run_fresh_process(const char *self, int in_file) {
    char dir[] = "/tmp/bench_zone.XXXXXX";
    if (in_file && !mkdtemp(dir)) {
        fprintf(stderr, "bench_zone: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (in_file)
            setenv("STEPSCOPE_RUN_DIR", dir, 1);
        else
            unsetenv("STEPSCOPE_RUN_DIR");
        execl(self, self, "--fresh-only", (char *)NULL);
        _exit(127);
    }
    int status = -1;
    if (pid > 0)
        waitpid(pid, &status, 0);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (in_file && system(cmd) != 0)
        fprintf(stderr, "bench_zone: could not remove %s\n", dir);
    return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ------------------------------------------------------ all cores at once */

struct worker {
    pthread_t thread;
    int index;
    int cpu; /* pinned to, or -1 */
    uint64_t n;
    double base_min, zone_min;
    int zone_recorded;
};

static pthread_barrier_t start_line;

static void *worker_main(void *arg) {
    struct worker *w = arg;
    char name[32];
    snprintf(name, sizeof name, "bench-%d", w->index);
    sps_thread_name(name);

    /* The thread's first event allocates its buffer: keep that out of the
     * timed loops, along with the clock ramping up. */
    case_baseline(w->n / 4 + 1);
    case_zone(w->n / 4 + 1);

    /* Every repeat starts at a barrier so that all threads really run the
     * same case at the same time, rather than drifting into solo runs. */
    double base[REPEATS], zone[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        pthread_barrier_wait(&start_line);
        base[r] = time_once(case_baseline, w->n);
        pthread_barrier_wait(&start_line);
        zone[r] = time_once(case_zone, w->n);
    }
    w->base_min = summarise(base, REPEATS).min;
    w->zone_min = summarise(zone, REPEATS).min;
    w->zone_recorded = zone_records();
    return NULL;
}

/* Threads are pinned one per allowed CPU when possible, so "all cores busy"
 * means exactly that instead of whatever the scheduler picked. */
static int run_concurrent(uint64_t n, double *worst_ratio, int *nthreads_out) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    if (ncpu > 1024)
        ncpu = 1024;
    int nthreads = (int)ncpu;
    *nthreads_out = nthreads;

    cpu_set_t allowed;
    int have_mask = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
    int allowed_cpus[CPU_SETSIZE];
    int n_allowed = 0;
    if (have_mask)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &allowed))
                allowed_cpus[n_allowed++] = c;

    struct worker *w = calloc((size_t)nthreads, sizeof *w);
    if (!w) {
        fprintf(stderr, "bench_zone: out of memory\n");
        return -1;
    }
    int rc = pthread_barrier_init(&start_line, NULL, (unsigned)nthreads);
    if (rc != 0) {
        fprintf(stderr, "bench_zone: pthread_barrier_init: %s\n", strerror(rc));
        free(w);
        return -1;
    }

    int started = 0;
    for (int i = 0; i < nthreads; i++) {
        w[i].index = i;
        w[i].n = n;
        w[i].cpu = -1;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (n_allowed > 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(allowed_cpus[i % n_allowed], &one);
            if (pthread_attr_setaffinity_np(&attr, sizeof one, &one) == 0)
                w[i].cpu = allowed_cpus[i % n_allowed];
        }
        rc = pthread_create(&w[i].thread, &attr, worker_main, &w[i]);
        if (rc != 0 && w[i].cpu >= 0) {
            /* Pinning can be refused (containers, cgroups); run unpinned. */
            pthread_attr_destroy(&attr);
            pthread_attr_init(&attr);
            w[i].cpu = -1;
            rc = pthread_create(&w[i].thread, &attr, worker_main, &w[i]);
        }
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            /* The others would wait at the barrier forever. */
            fprintf(stderr, "bench_zone: pthread_create: %s\n", strerror(rc));
            exit(1);
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(w[i].thread, NULL);
    pthread_barrier_destroy(&start_line);

    printf("\nall %d online CPUs busy: each thread measures its own loops, %d repeats of %llu\n",
           nthreads, REPEATS, (unsigned long long)n);
    printf("%-8s %-6s %18s %18s %9s\n", "thread", "cpu", "baseline ns (min)", "zone ns (min)",
           "ratio");
    *worst_ratio = 0.0;
    double sum = 0.0;
    for (int i = 0; i < nthreads; i++) {
        double ratio = w[i].zone_min / w[i].base_min;
        char cpu[16];
        if (w[i].cpu >= 0)
            snprintf(cpu, sizeof cpu, "%d", w[i].cpu);
        else
            snprintf(cpu, sizeof cpu, "-");
        printf("%-8d %-6s %18.2f %18.2f %8.2fx%s\n", i, cpu, w[i].base_min, w[i].zone_min, ratio,
               w[i].zone_recorded ? "" : "  (zone did not record!)");
        sum += ratio;
        if (ratio > *worst_ratio)
            *worst_ratio = ratio;
    }
    printf("concurrent zone vs baseline: mean %.2fx, worst %.2fx\n", sum / nthreads, *worst_ratio);
    free(w);
    return 0;
}

/* -------------------------------------------------------------------- main */

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_zone [--iterations N] [--quick] [--fresh-only]\n"
            "Measures a stepscope zone against two bare timestamp reads.\n"
            "  --iterations N  loop length per repeat (default %u)\n"
            "  --quick         same as --iterations %u\n"
            "  --fresh-only    only a fresh thread's first zones against its next ones\n"
            "                  (where the record is: memory, or STEPSCOPE_RUN_DIR's file)\n",
            DEFAULT_ITERATIONS, QUICK_ITERATIONS);
}

static uint64_t parse_iterations(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || strchr(s, '-') || v == 0 ||
        v > 1000000000000ull) {
        fprintf(stderr, "bench_zone: --iterations needs a positive integer, got '%s'\n", s);
        exit(2);
    }
    return (uint64_t)v;
}

int main(int argc, char **argv) {
    uint64_t n = DEFAULT_ITERATIONS;
    int explicit_n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--fresh-only") == 0) {
            const char *run_dir = getenv("STEPSCOPE_RUN_DIR");
            return run_fresh(run_dir && *run_dir ? "record file" : "memory") == 0 ? 0 : 1;
        } else if (strcmp(argv[i], "--quick") == 0) {
            if (!explicit_n)
                n = QUICK_ITERATIONS;
        } else if (strcmp(argv[i], "--iterations") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "bench_zone: --iterations needs a value\n");
                return 2;
            }
            n = parse_iterations(argv[++i]);
            explicit_n = 1;
        } else if (strncmp(argv[i], "--iterations=", 13) == 0) {
            n = parse_iterations(argv[i] + 13);
            explicit_n = 1;
        } else {
            fprintf(stderr, "bench_zone: unknown option '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }

    sps_thread_name("bench-main");
    for (int c = 0; c < N_CASES; c++)
        cases[c].fn(n / 4 + 1);

    struct sps_status st;
    if (sps_status(&st) == 0) {
        static const char *const modes[] = {"uninitialised", "file", "memory", "FAILED"};
        const char *mode = (unsigned)st.mode < 4 ? modes[st.mode] : "?";
        printf("stepscope %s: recording mode %s, clock %s at %.3f GHz%s%s\n", SPS_VERSION_STRING,
               mode, st.clock == SPS_CLOCK_TSC ? "TSC" : "CLOCK_MONOTONIC",
               st.ticks_per_second / 1e9, st.reason[0] ? ", " : "", st.reason);
    }
    if (!HAVE_TSC)
        printf("note: no TSC on this architecture; the baseline is two "
               "clock_gettime(CLOCK_MONOTONIC) reads\n");
    if (!zone_records())
        printf("WARNING: zones are not being recorded; the zone figures below "
               "measure the do-nothing path\n");

    printf("%d repeats of %llu iterations per case; ns per iteration\n", REPEATS,
           (unsigned long long)n);
    printf("%-30s %14s %14s %14s\n", "case", "ns/op (min)", "ns/op (median)", "vs baseline");

    struct result res[N_CASES];
    for (int c = 0; c < N_CASES; c++) {
        uint64_t dropped0 = events_dropped();
        res[c] = measure(&cases[c], n);
        uint64_t dropped = events_dropped() - dropped0;
        int recorded = !cases[c].records || zone_records();
        printf("%-30s %14.2f %14.2f %13.2fx", cases[c].name, res[c].min, res[c].median,
               res[c].min / res[0].min);
        /* Millions of events overflow the in-memory ring; that is expected
         * and still the recording path, unlike a begin that returns 0. */
        if (dropped)
            printf("  (%llu dropped by full ring)", (unsigned long long)dropped);
        if (!recorded)
            printf("  (not recording!)");
        printf("\n");
    }

    double worst = 0.0;
    int nthreads = 0;
    if (run_concurrent(n, &worst, &nthreads) != 0)
        return 1;

    if (sps_status(&st) == 0)
        printf("\nrecorder: %llu events recorded, %llu dropped, %llu threads\n",
               (unsigned long long)st.events_recorded, (unsigned long long)st.events_dropped,
               (unsigned long long)st.threads_recording);

    if (run_fresh_process("/proc/self/exe", 0) != 0 || run_fresh_process("/proc/self/exe", 1) != 0)
        return 1;

    /* cases[1] is the recording zone; cases[0] the baseline. */
    printf("all %d cores busy: zone begin+end worst %.2fx %s (target %.1fx)\n", nthreads, worst,
           BASELINE_NAME, TARGET_RATIO);
    printf("zone begin+end: %.1f ns = %.2fx %s (target %.1fx)\n", res[1].min,
           res[1].min / res[0].min, BASELINE_NAME, TARGET_RATIO);
    return 0;
}
