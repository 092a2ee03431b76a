/*
 * workload.c - an instrumented program for the tests to run under
 * `stepscope run`, with flags that make it end in every way a real
 * workload can.
 *
 *   --steps N        steps to run (default 5); each: zone "a", zone "b",
 *                    value "loss" = 1/(i+1), counter "samples" += 8
 *   --die-at K       in step K, inside zone "b" (after "a" completed),
 *                    kill itself with SIGKILL
 *   --exit CODE      exit with CODE after the steps
 *   --kill-self SIG  kill itself with SIG after the steps
 *   --wait-term FD   after the steps write one byte to FD, then wait for
 *                    SIGTERM or SIGINT and exit 42 on it
 *   --fork N         first fork a child that records N "child_work" zones
 *                    and exits; wait for it
 *   --exec           after the steps exec this program with
 *                    "--steps 3 --tag exec_image"
 *   --tag NAME       record one zone called NAME
 *   --warmup K       the first K steps do ten times the work
 *   --micro N        each step is N micro-steps (zone "a" in each)
 *   --record-after   record "loss" and count "samples" just after each
 *                    step has ended instead of inside it (the shape of
 *                    `opt.step(); record("loss", ...)` when the step ends
 *                    inside the optimizer)
 *   --count-int FD   after the steps write 'r' to FD, then write 'i' for
 *                    every SIGINT, and exit 40 + the number of SIGINTs on
 *                    SIGTERM; also write its process group id first
 *   --spawn CMD      after the steps run CMD with system() (a shell)
 *   --busy-thread    a thread that keeps making new zone names and
 *                    recording them until the process exits
 *   --alloc-mb N     first allocate N MiB and touch every page (kept)
 *   --burn-ms N      first burn N ms of CPU time (measured by the kernel)
 *   --sleep-ms N     after the steps sleep N ms
 *   --zone-sleep-ms N  each step's zone "b" also sleeps N ms
 *   --wait-ms N      each step ends with a wait zone "all_reduce" that
 *                    sleeps N ms (a rank waiting for its peers)
 *   --settle-ms N    after the steps, before --capture, sleep N ms
 *   --capture FILE   after the steps write one sps_capture() to FILE as
 *                    "key value" lines
 *   --print          print "workload step I" on stdout after each step
 *   --handshake R,G  after the steps write one byte to fd R, then wait
 *                    for a byte (or end of file) on fd G, then go on: no
 *                    signal involved
 *   --fine N         instead of the steps above, steps whose zone "a"
 *                    holds N "fine" zones with one "finer" zone in each,
 *                    then --spin-us U of CPU time; --steps of them, or
 *                    with --until-thinned L, steps until the overhead
 *                    guard has set this process's thin level to L or
 *                    more (read from its record), then --steps more
 *                    (exit 3 when that has not happened within 60 s)
 *   --torch-mem      record in each step the values the Python module
 *                    records from torch.cuda's allocator (torch.cuda.
 *                    allocated_bytes: 1 MiB more each step; reserved_bytes
 *                    64 MiB; peak_allocated_bytes 512 KiB above the
 *                    allocated, every other step), for the renderers
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record_format.h"
#include "stepscope.h"

static volatile sig_atomic_t got_term, ints;
static volatile char *kept; /* --alloc-mb's memory */
static int int_fd = -1;
static void on_term(int sig) {
    (void)sig;
    got_term = 1;
}
static void on_int_counted(int sig) {
    (void)sig;
    ints++;
    if (write(int_fd, "i", 1) != 1)
        _exit(5);
}

static void *busy(void *arg) {
    (void)arg;
    char name[32];
    for (unsigned i = 0;; i++) {
        snprintf(name, sizeof name, "busy-%u", i % 3000);
        struct sps_site *site = sps_site_get(name, SPS_KIND_ZONE);
        sps_zone_end(sps_zone_begin(site));
    }
    return NULL;
}

static double spin(int n) {
    volatile double x = 1.0;
    for (int i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms_for(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int write_capture(const char *path) {
    static struct sps_capture c;
    int rc = sps_capture(&c, 0);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "rc %d\npublished %d\nfresh %d\ntree_pid %d\npid %d\n", rc, c.published, c.fresh, c.tree_pid,
            (int)getpid());
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        fprintf(f, "%s %d %.17g %lld\n", sps_host_metric_info(i)->name, c.metric[i].available, c.metric[i].value,
                (long long)c.metric[i].age_ns);
    struct sps_source_status st;
    fprintf(f, "proc_status %d\n", sps_source_status(SPS_SOURCE_PROC, &st) == 0 ? st.available : -1);
    return fclose(f);
}

static double mono_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This process's thin level, as the overhead guard wrote it into its
 * record (-1: no record file). */
static int own_thin_level(void) {
    static int fd = -2;
    if (fd == -2) {
        struct sps_status st;
        fd = sps_status(&st) == 0 && st.record_path[0] ? open(st.record_path, O_RDONLY | O_CLOEXEC) : -1;
    }
    uint32_t level;
    if (fd < 0 || pread(fd, &level, sizeof level, offsetof(struct sps_rec_header, thin_level)) != sizeof level)
        return -1;
    return (int)level;
}

static int fine_steps(int fine, long spin_us, int until_level, int after) {
    int left = until_level > 0 ? -1 : after; /* -1: waiting for the level */
    double deadline = mono_seconds() + 60;
    for (long i = 0; left != 0; i++) {
        {
            SPS_STEP();
            {
                SPS_ZONE("a");
                for (int k = 0; k < fine; k++) {
                    SPS_ZONE("fine");
                    SPS_ZONE("finer");
                }
            }
            double until = cpu_seconds() + (double)spin_us * 1e-6;
            while (cpu_seconds() < until)
                spin(50);
        }
        if (left > 0)
            left--;
        else if ((i & 15) == 15 && own_thin_level() >= until_level)
            left = after;
        if (left < 0 && mono_seconds() > deadline)
            return 3;
    }
    return 0;
}

int main(int argc, char **argv) {
    int steps = 5, die_at = -1, exit_code = 0, kill_sig = 0, wait_fd = -1, fork_n = 0, do_exec = 0;
    int warmup = 0, micro = 0, busy_thread = 0, count_fd = -1, print = 0, ready_fd = -1, go_fd = -1;
    const char *tag = NULL, *spawn = NULL, *capture = NULL;
    long alloc_mb = 0, burn_ms = 0, sleep_ms = 0, settle_ms = 0, zone_sleep_ms = 0, wait_ms = 0;
    int fine = 0, until_thinned = 0, record_after = 0, torch_mem = 0;
    long spin_us = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--steps") && v) steps = atoi(argv[++i]);
        else if (!strcmp(a, "--die-at") && v) die_at = atoi(argv[++i]);
        else if (!strcmp(a, "--exit") && v) exit_code = atoi(argv[++i]);
        else if (!strcmp(a, "--kill-self") && v) kill_sig = atoi(argv[++i]);
        else if (!strcmp(a, "--wait-term") && v) wait_fd = atoi(argv[++i]);
        else if (!strcmp(a, "--fork") && v) fork_n = atoi(argv[++i]);
        else if (!strcmp(a, "--tag") && v) tag = argv[++i];
        else if (!strcmp(a, "--warmup") && v) warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--micro") && v) micro = atoi(argv[++i]);
        else if (!strcmp(a, "--exec")) do_exec = 1;
        else if (!strcmp(a, "--record-after")) record_after = 1;
        else if (!strcmp(a, "--torch-mem")) torch_mem = 1;
        else if (!strcmp(a, "--busy-thread")) busy_thread = 1;
        else if (!strcmp(a, "--print")) print = 1;
        else if (!strcmp(a, "--handshake") && v && sscanf(argv[++i], "%d,%d", &ready_fd, &go_fd) == 2) {}
        else if (!strcmp(a, "--spawn") && v) spawn = argv[++i];
        else if (!strcmp(a, "--count-int") && v) count_fd = atoi(argv[++i]);
        else if (!strcmp(a, "--alloc-mb") && v) alloc_mb = atol(argv[++i]);
        else if (!strcmp(a, "--burn-ms") && v) burn_ms = atol(argv[++i]);
        else if (!strcmp(a, "--sleep-ms") && v) sleep_ms = atol(argv[++i]);
        else if (!strcmp(a, "--zone-sleep-ms") && v) zone_sleep_ms = atol(argv[++i]);
        else if (!strcmp(a, "--wait-ms") && v) wait_ms = atol(argv[++i]);
        else if (!strcmp(a, "--settle-ms") && v) settle_ms = atol(argv[++i]);
        else if (!strcmp(a, "--capture") && v) capture = argv[++i];
        else if (!strcmp(a, "--fine") && v) fine = atoi(argv[++i]);
        else if (!strcmp(a, "--spin-us") && v) spin_us = atol(argv[++i]);
        else if (!strcmp(a, "--until-thinned") && v) until_thinned = atoi(argv[++i]);
        else {
            fprintf(stderr, "workload: bad argument '%s'\n", a);
            return 2;
        }
    }
    if (alloc_mb > 0) {
        size_t len = (size_t)alloc_mb << 20;
        kept = malloc(len); /* reachable till exit: not a leak */
        if (!kept)
            return 7;
        for (size_t off = 0; off < len; off += 4096)
            kept[off] = 1;
    }
    if (burn_ms > 0) {
        double until = cpu_seconds() + (double)burn_ms * 1e-3;
        while (cpu_seconds() < until)
            spin(10000);
    }
    if (busy_thread) {
        pthread_t t;
        pthread_create(&t, NULL, busy, NULL);
    }
    if (tag) {
        struct sps_site *site = sps_site_get(tag, SPS_KIND_ZONE);
        sps_zone_end(sps_zone_begin(site));
    }
    if (fork_n > 0) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0; i < fork_n; i++) {
                SPS_ZONE("child_work");
                spin(1000);
            }
            exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    if (fine > 0)
        return fine_steps(fine, spin_us, until_thinned, steps);
    for (int i = 0; i < steps; i++) {
        {
            SPS_STEP();
            int scale = i < warmup ? 10 : 1;
            for (int m = 0; m < micro; m++) {
                SPS_MICROSTEP();
                SPS_ZONE("a");
                spin(2000 * scale / micro);
            }
            if (!micro) {
                SPS_ZONE("a");
                spin(2000 * scale);
            }
            {
                SPS_ZONE("b");
                spin(1000);
                if (zone_sleep_ms > 0)
                    sleep_ms_for(zone_sleep_ms);
                if (i == die_at)
                    raise(SIGKILL);
            }
            if (wait_ms > 0) {
                SPS_WAIT("all_reduce");
                sleep_ms_for(wait_ms);
            }
            if (torch_mem) {
                double mib = 1024.0 * 1024.0, allocated = (i + 1) * mib;
                SPS_VALUE("torch.cuda.allocated_bytes", allocated);
                SPS_VALUE("torch.cuda.reserved_bytes", 64 * mib);
                if (i % 2 == 0)
                    SPS_VALUE("torch.cuda.peak_allocated_bytes", allocated + 0.5 * mib);
            }
            if (!record_after) {
                SPS_VALUE("loss", 1.0 / (i + 1));
                SPS_COUNT("samples", 8);
            }
        }
        if (record_after) {
            SPS_VALUE("loss", 1.0 / (i + 1));
            SPS_COUNT("samples", 8);
        }
        if (print) {
            printf("workload step %d\n", i);
            fflush(stdout);
        }
    }
    if (ready_fd >= 0) {
        char b = 'r';
        if (write(ready_fd, &b, 1) != 1 || read(go_fd, &b, 1) < 0)
            return 9;
    }
    if (spawn && system(spawn) != 0)
        return 6;
    if (settle_ms > 0)
        sleep_ms_for(settle_ms);
    if (capture && write_capture(capture) != 0)
        return 8;
    if (sleep_ms > 0)
        sleep_ms_for(sleep_ms);
    if (do_exec) {
        char *args[] = {argv[0], "--steps", "3", "--tag", "exec_image", NULL};
        execv(argv[0], args);
        perror("workload: execv");
        return 3;
    }
    if (kill_sig) {
        signal(kill_sig, SIG_DFL);
        raise(kill_sig);
    }
    if (count_fd >= 0) {
        int_fd = count_fd;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        sa.sa_handler = on_int_counted;
        sigaction(SIGINT, &sa, NULL);
        char msg[32];
        int len = snprintf(msg, sizeof msg, "r%d\n", (int)getpgrp());
        if (write(count_fd, msg, (size_t)len) != len)
            return 4;
        sigset_t none;
        sigemptyset(&none);
        while (!got_term)
            sigsuspend(&none);
        return 40 + ints;
    }
    if (wait_fd >= 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigset_t none;
        sigemptyset(&none);
        if (write(wait_fd, "r", 1) != 1)
            return 4;
        while (!got_term)
            sigsuspend(&none);
        return 42;
    }
    return exit_code;
}
