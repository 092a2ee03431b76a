/* test_source_sched.c - the sched source against fixture trees (CPU
 * pressure from PSI's total, present, absent and malformed; the tree's run
 * delay summed over every thread's schedstat, threads that come and go, a
 * child process, a kernel without schedstat) and once against the real
 * /proc, where a busy second thread must be counted. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sources/source.h"
#include "sources/sysfs.h"
#include "support.h"
#include "sysfs_tree.h"

#define SEC 1000000000LL

static const struct sps__source *const src = &sps__source_sched;

static char root[512];

static void fixture_new(void) {
    snprintf(root, sizeof root, "%s", tmpdir_new("sched"));
}

__attribute__((format(printf, 2, 3))) static void put(const char *rel, const char *fmt, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    tree_write(root, rel, text);
}

static void put_psi(unsigned long long some_total_us) {
    put("proc/pressure/cpu",
        "some avg10=78.12 avg60=40.00 avg300=10.00 total=%llu\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        some_total_us);
}

/* One thread's schedstat: time on the CPU, run delay (ns), timeslices. */
static void put_task(int pid, int tid, unsigned long long exec_ns, unsigned long long delay_ns) {
    char rel[128];
    snprintf(rel, sizeof rel, "proc/%d/task/%d/schedstat", pid, tid);
    put(rel, "%llu %llu 42\n", exec_ns, delay_ns);
}

static void remove_task(int pid, int tid) {
    char rel[128];
    snprintf(rel, sizeof rel, "proc/%d/task/%d/schedstat", pid, tid);
    tree_remove(root, rel);
    snprintf(rel, sizeof rel, "proc/%d/task/%d", pid, tid);
    tree_remove(root, rel);
}

static struct sps__source_ctx ctx_for(int tree_pid) {
    return (struct sps__source_ctx){.root = root, .tree_pid = tree_pid};
}

static void read_at(void *st, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t t, int want_rc) {
    char reason[256];
    sps__sample_clear(s);
    int rc = src->read(st, ctx, s, t, reason, sizeof reason);
    CHECK_MSG(rc == want_rc, "read at %lld returned %d (%s)", (long long)t, rc, reason);
}

static double host(const struct sps__sample *s, int metric) {
    return s->host[metric];
}

/* ------------------------------------------------------------ pressure */

static void test_vtable(void) {
    CHECK_EQ_I(src->id, SPS_SOURCE_SCHED);
    CHECK(!strcmp(src->name, "sched"));
    CHECK(!src->is_gpu);
    CHECK(sps__source_get(SPS_SOURCE_SCHED) == src);
    const int mine[] = {SPS_M_CPU_PRESSURE_SOME_PERCENT, SPS_M_WORKLOAD_RUN_DELAY_SECONDS,
                        SPS_M_WORKLOAD_RUN_DELAY_PERCENT};
    for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
        CHECK_EQ_I(sps__host_metric_source(mine[i]), SPS_SOURCE_SCHED);
}

/* The share comes from the growth of "some" total over the interval, not
 * from avg10 (78.12 in the fixture). */
static void test_pressure_from_total(void) {
    fixture_new();
    put_psi(5000000);
    put("proc/self/schedstat", "1 2 3\n");
    struct sps__source_ctx ctx = ctx_for(0);
    void *st;
    char reason[256];
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    CHECK_MSG(reason[0] == '\0', "no note with PSI and schedstat: %s", reason);
    struct sps__sample s;
    read_at(st, &ctx, &s, 10 * SEC, 0);
    CHECK(isnan(host(&s, SPS_M_CPU_PRESSURE_SOME_PERCENT))); /* no interval yet */
    put_psi(5000000 + 250000); /* 0.25 s of 0.5 s */
    read_at(st, &ctx, &s, 10 * SEC + SEC / 2, 0);
    CHECK_NEAR(host(&s, SPS_M_CPU_PRESSURE_SOME_PERCENT), 50.0, 1e-9);
    put_psi(5000000 + 250000); /* nobody waited */
    read_at(st, &ctx, &s, 11 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_CPU_PRESSURE_SOME_PERCENT), 0.0, 1e-12);
    put_psi(5000000 + 250000 + 1000000); /* all of it (and the clocks' jitter beyond: capped) */
    read_at(st, &ctx, &s, 12 * SEC - SEC / 100, 0);
    CHECK_NEAR(host(&s, SPS_M_CPU_PRESSURE_SOME_PERCENT), 100.0, 1e-12);
    /* no tree: no run delay, and no error for it */
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS)));
    /* a malformed file fails the read, with the reason */
    put("proc/pressure/cpu", "full avg10=0.00 total=1\n");
    sps__sample_clear(&s);
    CHECK(src->read(st, &ctx, &s, 13 * SEC, reason, sizeof reason) != 0);
    CHECK_STR_HAS(reason, "malformed");
    CHECK_STR_HAS(reason, "pressure/cpu");
    CHECK(isnan(host(&s, SPS_M_CPU_PRESSURE_SOME_PERCENT)));
    src->close(st);
}

/* A kernel without PSI: the source still reads the run delay, and its note
 * (which doctor prints) says why there is no CPU pressure. */
static void test_pressure_absent(void) {
    fixture_new();
    put("proc/self/schedstat", "1 2 3\n");
    put_task(100, 100, 1000, 2000);
    struct sps__source_ctx ctx = ctx_for(100);
    void *st;
    char reason[256];
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    CHECK_STR_HAS(reason, "no CPU pressure");
    CHECK_STR_HAS(reason, "/proc/pressure/cpu");
    CHECK_STR_HAS(reason, "without PSI");
    struct sps__sample s;
    read_at(st, &ctx, &s, SEC, 0);
    CHECK(isnan(host(&s, SPS_M_CPU_PRESSURE_SOME_PERCENT)));
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 2e-6, 1e-15);
    src->close(st);

    /* neither PSI nor schedstat: unavailable, both reasons */
    fixture_new();
    tree_mkdir(root, "proc");
    ctx = ctx_for(100);
    CHECK(src->open(&ctx, &st, reason, sizeof reason) != 0);
    CHECK_STR_HAS(reason, "no CPU pressure");
    CHECK_STR_HAS(reason, "no run delay");
    CHECK_STR_HAS(reason, "without schedstat");

    /* PSI without schedstat: pressure only, the note names what is missing */
    fixture_new();
    put_psi(0);
    put_task(100, 100, 1000, 2000);
    ctx = ctx_for(100);
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    CHECK_STR_HAS(reason, "no run delay");
    read_at(st, &ctx, &s, SEC, 0);
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS)));
    src->close(st);

    /* a malformed pressure file at open: unavailable pressure, said so */
    fixture_new();
    put("proc/pressure/cpu", "some avg10=1.00\n");
    put("proc/self/schedstat", "1 2 3\n");
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    CHECK_STR_HAS(reason, "malformed");
    src->close(st);
}

/* ------------------------------------------------------------ run delay */

static int tree_pids[8];
static size_t ntree_pids;

static size_t fixed_members(void *arg, int *pids, size_t cap) {
    (void)arg;
    for (size_t i = 0; i < ntree_pids && i < cap; i++)
        pids[i] = tree_pids[i];
    return ntree_pids;
}

/* Every thread counts, not the main thread alone (which is what
 * /proc/PID/schedstat holds); a thread that exits keeps its share of the
 * total; a new one counts from its start; a child process's threads count. */
static void test_run_delay_sums_threads(void) {
    fixture_new();
    put_psi(0);
    put("proc/self/schedstat", "1 2 3\n");
    put("proc/100/schedstat", "5 7 1\n"); /* the main thread's: not what is read */
    put_task(100, 100, 900000000ull, 100000000ull);
    put_task(100, 101, 400000000ull, 300000000ull);
    struct sps__source_ctx ctx = ctx_for(100);
    void *st;
    char reason[256];
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    struct sps__sample s;
    read_at(st, &ctx, &s, 2 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.4, 1e-12);
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT))); /* no interval yet */

    /* half a second later the run delay is not read again (at most one
     * read in RUN_DELAY_MIN_GAP_NS): no value, never a stale one */
    read_at(st, &ctx, &s, 2 * SEC + SEC / 2, 0);
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS)));
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT)));

    /* a second later: 0.1 s more on 100, 0.15 s more on 101 */
    put_task(100, 100, 1000000000ull, 200000000ull);
    put_task(100, 101, 500000000ull, 450000000ull);
    read_at(st, &ctx, &s, 3 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.65, 1e-12);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT), 25.0, 1e-9);

    /* 101 exits, 102 starts having waited 0.05 s: 0.65 + 0.05 */
    remove_task(100, 101);
    put_task(100, 102, 1000, 50000000ull);
    read_at(st, &ctx, &s, 4 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.7, 1e-12);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT), 5.0, 1e-9);

    /* the tree grows a child (pid 200) whose thread waited 0.25 s */
    put_task(200, 200, 1000, 250000000ull);
    tree_pids[0] = 100;
    tree_pids[1] = 200;
    ntree_pids = 2;
    ctx.tree_members = fixed_members;
    read_at(st, &ctx, &s, 5 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.95, 1e-12);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT), 25.0, 1e-9);

    /* the child is gone (its folder too): its threads stay in the total */
    remove_task(200, 200);
    ntree_pids = 1;
    read_at(st, &ctx, &s, 6 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.95, 1e-12);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT), 0.0, 1e-9);

    /* an empty member list (the proc source has not listed yet): the root */
    ntree_pids = 0;
    read_at(st, &ctx, &s, 7 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.95, 1e-12);

    /* a malformed thread file fails the read and names the file */
    put("proc/100/task/100/schedstat", "garbage\n");
    sps__sample_clear(&s);
    CHECK(src->read(st, &ctx, &s, 8 * SEC, reason, sizeof reason) != 0);
    CHECK_STR_HAS(reason, "malformed");
    CHECK_STR_HAS(reason, "/proc/100/task/100/schedstat");

    /* another tree starts from nothing */
    put_task(300, 300, 1, 1000000000ull);
    ctx = ctx_for(300);
    read_at(st, &ctx, &s, 9 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 1.0, 1e-12);
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT)));
    src->close(st);
}

/* A tree whose root has no task folder (it exited before the read): the
 * read fails with the path, and the rate starts again afterwards. */
static void test_run_delay_missing_tree(void) {
    fixture_new();
    put("proc/self/schedstat", "1 2 3\n");
    struct sps__source_ctx ctx = ctx_for(4242);
    void *st;
    char reason[256];
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    struct sps__sample s;
    sps__sample_clear(&s);
    CHECK(src->read(st, &ctx, &s, SEC, reason, sizeof reason) != 0);
    CHECK_STR_HAS(reason, "/proc/4242/task");
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS)));
    src->close(st);
}

/* A listing that fails for another reason than the process being gone
 * (here: its task folder is not a folder; under load: no descriptor or
 * memory left) keeps the threads known: they must not retire and then
 * count twice when the listing works again. */
static void test_run_delay_listing_fails(void) {
    fixture_new();
    put("proc/self/schedstat", "1 2 3\n");
    put_task(100, 100, 1, 300000000ull);
    put_task(100, 101, 1, 200000000ull);
    struct sps__source_ctx ctx = ctx_for(100);
    void *st;
    char reason[256];
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    struct sps__sample s;
    read_at(st, &ctx, &s, SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.5, 1e-12);
    char task_dir[700], aside[700];
    snprintf(task_dir, sizeof task_dir, "%s/proc/100/task", root);
    snprintf(aside, sizeof aside, "%s/proc/100/task.aside", root);
    CHECK(rename(task_dir, aside) == 0);
    put("proc/100/task", "not a folder\n");
    sps__sample_clear(&s);
    CHECK(src->read(st, &ctx, &s, 2 * SEC, reason, sizeof reason) != 0);
    CHECK_STR_HAS(reason, "cannot list");
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.5, 1e-12);
    CHECK(remove(task_dir) == 0);
    CHECK(rename(aside, task_dir) == 0);
    read_at(st, &ctx, &s, 3 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.5, 1e-12);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT), 0.0, 1e-12);
    src->close(st);
}

/* A tree of more threads than one read takes on (32) has them read every
 * other read here (40 threads): the read between gives no run delay
 * (never a stale one), and the next rate spans both intervals. */
static void test_run_delay_large_tree(void) {
    fixture_new();
    put("proc/self/schedstat", "1 2 3\n");
    for (int tid = 500; tid < 540; tid++)
        put_task(500, tid, 1, 10000000ull); /* 10 ms each: 0.4 s */
    struct sps__source_ctx ctx = ctx_for(500);
    void *st;
    char reason[256];
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    struct sps__sample s;
    read_at(st, &ctx, &s, SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.4, 1e-12);
    for (int tid = 500; tid < 540; tid++)
        put_task(500, tid, 1, 15000000ull); /* +5 ms each: +0.2 s */
    read_at(st, &ctx, &s, SEC + SEC / 2, 0);
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS)));
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT)));
    read_at(st, &ctx, &s, 2 * SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.6, 1e-12);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT), 20.0, 1e-9); /* 0.2 s over 1 s */
    read_at(st, &ctx, &s, 2 * SEC + SEC / 2, 0);
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS)));
    src->close(st);
}

/* A fresh read (a capture or snapshot asks for one) reads the run delay
 * however soon after the last read it comes. */
static void test_run_delay_fresh_read_is_never_too_soon(void) {
    fixture_new();
    put("proc/self/schedstat", "1 2 3\n");
    put_task(100, 100, 1, 300000000ull);
    struct sps__source_ctx ctx = ctx_for(100);
    void *st;
    char reason[256];
    CHECK_EQ_I(src->open(&ctx, &st, reason, sizeof reason), 0);
    struct sps__sample s;
    read_at(st, &ctx, &s, SEC, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.3, 1e-12);
    put_task(100, 100, 1, 400000000ull);
    read_at(st, &ctx, &s, SEC + SEC / 5, 0);
    CHECK(isnan(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS)));
    ctx.due_now = 1;
    read_at(st, &ctx, &s, SEC + SEC / 4, 0);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS), 0.4, 1e-12);
    CHECK_NEAR(host(&s, SPS_M_WORKLOAD_RUN_DELAY_PERCENT), 40.0, 1e-9); /* 0.1 s over 0.25 s */
    src->close(st);
}

/* ------------------------------------------------------------ the real /proc */

static volatile int spin_stop;

static void *spin(void *arg) {
    (void)arg;
    volatile unsigned long n = 0;
    while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
        n++;
    return NULL;
}

static uint64_t thread_delay_ns(int tid) {
    char path[128], text[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    if (read_file(path, text, sizeof text) < 0)
        return 0;
    unsigned long long exec, delay;
    return sscanf(text, "%llu %llu", &exec, &delay) == 2 ? delay : 0;
}

/* This process with a second thread: the total covers both threads, so
 * it is at least what the second thread alone had waited before the
 * read (and the main thread's file is not all of it). */
static void test_real_proc(void) {
    snprintf(root, sizeof root, "%s", "");
    struct sps__source_ctx ctx = {.root = "", .tree_pid = (int)getpid()};
    void *st;
    char reason[256];
    if (src->open(&ctx, &st, reason, sizeof reason) != 0) {
        printf("  (skipped: %s)\n", reason);
        return;
    }
    pthread_t t;
    spin_stop = 0;
    CHECK(pthread_create(&t, NULL, spin, NULL) == 0);
    /* let it run and be preempted a little */
    for (volatile unsigned long i = 0; i < 50000000ul; i++)
        ;
    int tids[64];
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)getpid());
    int n = sps__list_numbered(dir, "", "", tids, 64);
    uint64_t before = 0;
    for (int i = 0; i < n && i < 64; i++)
        before += thread_delay_ns(tids[i]);
    struct sps__sample s;
    sps__sample_clear(&s);
    CHECK_EQ_I(src->read(st, &ctx, &s, 1, reason, sizeof reason), 0);
    double total = host(&s, SPS_M_WORKLOAD_RUN_DELAY_SECONDS);
    CHECK(!isnan(total));
    CHECK_MSG(total * 1e9 >= (double)before - 1, "total %.9f s covers the threads' %.9f s", total,
              (double)before * 1e-9);
    __atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
    pthread_join(t, NULL);
    src->close(st);
}

int main(void) {
    RUN_TEST(test_vtable);
    RUN_TEST(test_pressure_from_total);
    RUN_TEST(test_pressure_absent);
    RUN_TEST(test_run_delay_sums_threads);
    RUN_TEST(test_run_delay_missing_tree);
    RUN_TEST(test_run_delay_listing_fails);
    RUN_TEST(test_run_delay_large_tree);
    RUN_TEST(test_run_delay_fresh_read_is_never_too_soon);
    RUN_TEST(test_real_proc);
    return check_report();
}
