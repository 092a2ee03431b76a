/*
 * bench_report.c - what the offline side costs: the end of `stepscope run`
 * (reading the records, building the model, the analysis, report.json, the
 * summary, HTML, CSV and trace) and `stepscope report DIR` (every file made
 * again from the directory), at growing numbers of steps, with every event
 * kept.  It must grow linearly with the events.
 *
 * Each size is a real run: this program, started as the workload
 * (`--workload STEPS THREADS`), records STEPS steps of 10 zones on each of
 * THREADS threads through the real library under the real
 * `stepscope run -q -o DIR`, with rings big enough to keep every event.
 * The workload writes the CLOCK_MONOTONIC time at which it finished; the end
 * phase is from then until `stepscope run` exits.  Its peak memory is
 * stepscope's VmHWM (polled every 2 ms while it runs: the workload is
 * another process, with its own).  `stepscope report DIR` then runs alone,
 * so its peak is exact (wait4's ru_maxrss).
 *
 * The baseline, in the same run and on the same files: reading the record
 * files once (read(2) into one buffer, page cache warm as for stepscope).
 * Printed per size: seconds, peak MiB, the ratio to that baseline, and the
 * time per million events against the smallest size's (1.0 = linear); at
 * the end the fitted exponent (least squares slope of log time on log
 * events: 1.0 is linear, 2.0 quadratic).
 *
 *     bench_report [--sizes 25000,50000,100000,200000] [--threads N]
 *                  [--big] [--stepscope PATH] [--keep DIR]
 *
 * --big adds the limits: 1,000,000 steps on one thread (at most 10 s
 * and 1 GiB) and 100 threads of 16,000 steps (under 30 s); it takes minutes
 * and about 2 GB of disk.  Benchmarks do not run in CI; the default sizes
 * take some 10-30 s here.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stepscope.h>

#define ZONES_PER_STEP 10
#define MAX_SIZES 16

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- workload */

static volatile uint64_t sink;

/* a little work, varying from step to step so that the statistics and the
 * warm-up search see a spread of times */
static void work(uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        sink += i;
}

#define WORK_ZONE(label, n)                                                                        \
    do {                                                                                           \
        SPS_ZONE_BEGIN(z_, label);                                                                 \
        work(n);                                                                                   \
        SPS_ZONE_END(z_);                                                                          \
    } while (0)

/* All threads start together and stay until all are done: a thread that
 * exited early would hand its segment, and its ring, to the next one. */
static pthread_barrier_t together;

static void *steps_thread(void *arg) {
    uint64_t steps = *(const uint64_t *)arg;
    pthread_barrier_wait(&together);
    for (uint64_t s = 0; s < steps; s++) {
        uint64_t k = 4 + (s * 2654435761u >> 28) % 8;
        SPS_STEP_BEGIN(step);
        WORK_ZONE("data", k);
        WORK_ZONE("h2d", k);
        WORK_ZONE("forward", 2 * k);
        WORK_ZONE("loss", k);
        WORK_ZONE("backward", 3 * k);
        WORK_ZONE("allreduce", k);
        WORK_ZONE("clip", k);
        WORK_ZONE("optimizer", 2 * k);
        WORK_ZONE("zero_grad", k);
        WORK_ZONE("log", k);
        SPS_STEP_END(step);
    }
    pthread_barrier_wait(&together);
    return NULL;
}

static int workload(uint64_t steps, unsigned threads, const char *done_path) {
    pthread_t *t = calloc(threads, sizeof *t);
    if (!t || pthread_barrier_init(&together, NULL, threads) != 0)
        return 1;
    for (unsigned i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, steps_thread, &steps) != 0) {
            fprintf(stderr, "bench_report: workload: pthread_create failed\n");
            return 1;
        }
    for (unsigned i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    free(t);
    struct sps_status st;
    if (sps_status(&st) == 0 && st.events_dropped)
        fprintf(stderr, "bench_report: workload: %llu events dropped (rings too small)\n",
                (unsigned long long)st.events_dropped);
    FILE *f = fopen(done_path, "w");
    if (!f)
        return 1;
    fprintf(f, "%llu\n", (unsigned long long)now_ns());
    return fclose(f) != 0;
}

/* ----------------------------------------------------------- the measurer */

struct size_result {
    uint64_t steps;
    unsigned threads;
    double events;        /* zones + steps */
    double record_mib;    /* the record files' size */
    double read_s;        /* baseline: reading the record files once */
    double end_s;         /* workload exit -> `stepscope run` exit */
    double end_mib;       /* stepscope run's VmHWM */
    double report_s;      /* `stepscope report DIR` */
    double report_mib;    /* its ru_maxrss */
    int ok;
};

static long vm_hwm_kib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Runs argv; returns its exit status (or -1), its peak in KiB (the polled
 * VmHWM when poll, else wait4's ru_maxrss), the time it ended. */
static int spawn(char *const argv[], char *const envp_extra[], int poll, long *peak_kib, uint64_t *end_ns) {
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        for (int i = 0; envp_extra && envp_extra[i]; i++)
            putenv(envp_extra[i]);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
        execv(argv[0], argv);
        fprintf(stderr, "bench_report: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    long hwm = 0;
    for (;;) {
        pid_t r = wait4(pid, &status, poll ? WNOHANG : 0, &ru);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        long now = vm_hwm_kib(pid);
        if (now > hwm)
            hwm = now;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    *end_ns = now_ns();
    *peak_kib = poll ? hwm : ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Reads every record file of dir/records once; returns seconds and MiB. */
static double read_records(const char *dir, double *mib) {
    char records[4096];
    snprintf(records, sizeof records, "%s/records", dir);
    DIR *d = opendir(records);
    *mib = 0;
    if (!d)
        return -1;
    static char buf[1 << 20];
    uint64_t t0 = now_ns();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", records, e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            *mib += (double)n / (1 << 20);
        close(fd);
    }
    closedir(d);
    return (double)(now_ns() - t0) * 1e-9;
}

static uint32_t pow2_at_least(uint64_t n) {
    uint64_t p = 16;
    while (p < n && p < (1u << 24))
        p <<= 1;
    return (uint32_t)p;
}

static int remove_tree(const char *path) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd);
}

static void measure_size(const char *self, const char *stepscope, const char *base, struct size_result *r) {
    char dir[4096], done[4200], steps_arg[32], threads_arg[16];
    snprintf(dir, sizeof dir, "%s/run-%llux%u", base, (unsigned long long)r->steps, r->threads);
    snprintf(done, sizeof done, "%s.done", dir);
    snprintf(steps_arg, sizeof steps_arg, "%llu", (unsigned long long)r->steps);
    snprintf(threads_arg, sizeof threads_arg, "%u", r->threads);
    r->events = (double)r->steps * r->threads * (ZONES_PER_STEP + 1);

    /* rings that keep every event; a record file that holds them */
    uint64_t zone_cap = pow2_at_least(r->steps * ZONES_PER_STEP);
    uint64_t step_cap = pow2_at_least(r->steps);
    uint64_t mb = ((zone_cap + step_cap) * 32u * r->threads >> 20) + 64;
    char ring_env[64], step_env[64], mb_env[64];
    snprintf(ring_env, sizeof ring_env, "STEPSCOPE_RING_EVENTS=%llu", (unsigned long long)zone_cap);
    snprintf(step_env, sizeof step_env, "STEPSCOPE_STEP_EVENTS=%llu", (unsigned long long)step_cap);
    snprintf(mb_env, sizeof mb_env, "STEPSCOPE_RECORD_MB=%llu", (unsigned long long)(mb > 4095 ? 4095 : mb));
    char *env[] = {ring_env, step_env, mb_env, NULL};

    char *run_argv[] = {(char *)stepscope, "run", "-q", "-o", dir, "--", (char *)self, "--workload",
                        steps_arg, threads_arg, done, NULL};
    long peak = 0;
    uint64_t end = 0;
    int rc = spawn(run_argv, env, 1, &peak, &end);
    FILE *f = fopen(done, "r");
    unsigned long long done_ns = 0;
    if (rc != 0 || !f || fscanf(f, "%llu", &done_ns) != 1) {
        fprintf(stderr, "bench_report: %llu steps x %u threads: the run failed (exit %d)\n",
                (unsigned long long)r->steps, r->threads, rc);
        if (f)
            fclose(f);
        return;
    }
    fclose(f);
    r->end_s = (double)(end - done_ns) * 1e-9;
    r->end_mib = (double)peak / 1024.0;

    char *report_argv[] = {(char *)stepscope, "report", dir, NULL};
    uint64_t t0 = now_ns();
    rc = spawn(report_argv, NULL, 0, &peak, &end);
    if (rc != 0) {
        fprintf(stderr, "bench_report: stepscope report %s failed (exit %d)\n", dir, rc);
        return;
    }
    r->report_s = (double)(end - t0) * 1e-9;
    r->report_mib = (double)peak / 1024.0;
    r->read_s = read_records(dir, &r->record_mib);
    r->ok = 1;
}

/* least squares slope of log(y) on log(x) */
static double loglog_slope(const struct size_result *r, int n, int which) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!r[i].ok)
            continue;
        double x = log(r[i].events), y = log(which ? r[i].report_s : r[i].end_s);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        m++;
    }
    if (m < 2)
        return NAN;
    return (m * sxy - sx * sy) / (m * sxx - sx * sx);
}

static void print_row(const struct size_result *r, const struct size_result *first) {
    if (!r->ok) {
        printf("%9llu x %-3u  failed\n", (unsigned long long)r->steps, r->threads);
        return;
    }
    double per = r->end_s / r->events * 1e6, per0 = first->end_s / first->events * 1e6;
    double rper = r->report_s / r->events * 1e6, rper0 = first->report_s / first->events * 1e6;
    printf("%9llu x %-3u %9.2f %8.0f | %8.3f %7.0f %6.1fx %5.2fx | %8.3f %7.0f %6.1fx %5.2fx\n",
           (unsigned long long)r->steps, r->threads, r->events / 1e6, r->record_mib, r->end_s, r->end_mib,
           r->end_s / r->read_s, per / per0, r->report_s, r->report_mib, r->report_s / r->read_s,
           rper / rper0);
}

static int parse_sizes(const char *s, uint64_t *sizes) {
    int n = 0;
    while (*s && n < MAX_SIZES) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || errno || v == 0 || v > 4000000 || (*end && *end != ','))
            return -1;
        sizes[n++] = v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static void usage(FILE *f) {
    fputs("usage: bench_report [--sizes N,N,...] [--threads N] [--big] [--stepscope PATH] [--keep DIR]\n"
          "Times the end of `stepscope run` and `stepscope report DIR` on runs of N steps of 10\n"
          "zones per thread (default 25000,50000,100000,200000 on 1 thread), every event kept.\n"
          "  --big        also 1,000,000 steps x 1 thread and 16,000 steps x 100 threads\n"
          "  --stepscope  the CLI to measure (default: stepscope beside this program)\n"
          "  --keep DIR   make the runs in DIR and keep them (default: a temporary directory)\n",
          f);
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--workload"))
        return workload(strtoull(argv[2], NULL, 10), (unsigned)strtoul(argv[3], NULL, 10), argv[4]);
    sps_set_enabled(0); /* the measurer records nothing itself */

    uint64_t sizes[MAX_SIZES] = {25000, 50000, 100000, 200000};
    int nsizes = 4, big = 0;
    unsigned threads = 1;
    const char *keep = NULL;
    char self[4096], stepscope[4200];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "bench_report: cannot find my own program: %s\n", strerror(errno));
        return 1;
    }
    self[len] = '\0';
    snprintf(stepscope, sizeof stepscope, "%.*s/stepscope", (int)(strrchr(self, '/') - self), self);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--big")) {
            big = 1;
        } else if (i + 1 < argc && !strcmp(a, "--sizes")) {
            nsizes = parse_sizes(argv[++i], sizes);
            if (nsizes <= 0) {
                fprintf(stderr, "bench_report: --sizes: '%s' is not a list of step counts\n", argv[i]);
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(a, "--threads")) {
            threads = (unsigned)strtoul(argv[++i], NULL, 10);
            if (threads < 1 || threads > 1000) {
                fprintf(stderr, "bench_report: --threads: '%s' is not a number from 1 to 1000\n", argv[i]);
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(a, "--stepscope")) {
            snprintf(stepscope, sizeof stepscope, "%s", argv[++i]);
        } else if (i + 1 < argc && !strcmp(a, "--keep")) {
            keep = argv[++i];
        } else {
            fprintf(stderr, "bench_report: unknown option or missing value '%s' (try --help)\n", a);
            return 2;
        }
    }
    if (access(stepscope, X_OK) != 0) {
        fprintf(stderr, "bench_report: %s: %s (build it, or name it with --stepscope)\n", stepscope,
                strerror(errno));
        return 1;
    }
    char base[4096];
    if (keep) {
        if (mkdir(keep, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "bench_report: %s: %s\n", keep, strerror(errno));
            return 1;
        }
        snprintf(base, sizeof base, "%s", keep);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(base, sizeof base, "%s/bench_report.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(base)) {
            fprintf(stderr, "bench_report: mkdtemp %s: %s\n", base, strerror(errno));
            return 1;
        }
    }

    struct size_result res[MAX_SIZES + 2];
    memset(res, 0, sizeof res);
    for (int i = 0; i < nsizes; i++) {
        res[i].steps = sizes[i];
        res[i].threads = threads;
    }
    int nbig = 0;
    if (big) {
        res[nsizes].steps = 1000000;
        res[nsizes].threads = 1;
        res[nsizes + 1].steps = 16000;
        res[nsizes + 1].threads = 100;
        nbig = 2;
    }

    printf("stepscope %s, %s; steps of %d zones, every event kept\n", SPS_VERSION_STRING, stepscope,
           ZONES_PER_STEP);
    printf("baseline: reading the record files once; 'per ev' = time per event / the first size's\n");
    printf("%9s   %-3s %9s %8s | %-34s | %-34s\n", "steps", "thr", "M events", "rec MiB",
           "end of `stepscope run`", "`stepscope report DIR`");
    printf("%9s   %-3s %9s %8s | %8s %7s %7s %6s | %8s %7s %7s %6s\n", "", "", "", "", "s", "MiB", "/read",
           "per ev", "s", "MiB", "/read", "per ev");
    fflush(stdout);
    for (int i = 0; i < nsizes + nbig; i++) {
        measure_size(self, stepscope, base, &res[i]);
        print_row(&res[i], &res[0]);
        fflush(stdout);
        if (!keep) { /* the big runs need the disk of the ones before */
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/run-%llux%u", base, (unsigned long long)res[i].steps, res[i].threads);
            remove_tree(dir);
        }
    }
    printf("fitted exponent over the %d sizes (1.0 = linear in events): end of run %.2f, report %.2f\n",
           nsizes, loglog_slope(res, nsizes, 0), loglog_slope(res, nsizes, 1));
    int failed = 0;
    for (int i = 0; i < nsizes + nbig; i++)
        failed |= !res[i].ok;
    if (big) {
        const struct size_result *m = &res[nsizes], *t = &res[nsizes + 1];
        printf("1,000,000 steps x 10 zones: end of run %.2f s, %.0f MiB (limits 10 s, 1024 MiB): %s\n", m->end_s,
               m->end_mib, m->ok && m->end_s <= 10 && m->end_mib <= 1024 ? "within" : "OVER");
        printf("100 threads x 16,000 steps: end of run %.2f s (limit 30 s): %s\n", t->end_s,
               t->ok && t->end_s < 30 ? "within" : "OVER");
    }
    if (!keep)
        remove_tree(base);
    return failed;
}
