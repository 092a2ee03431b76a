/* test_source_proc.c - the proc source against fixture trees (exact values
 * from known counters and times) and once against the real /proc; the
 * sampler's per-process RSS series, made from it, on fixture trees. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sampler/sampler.h"
#include "sources/source.h"
#include "support.h"

#define SEC 1000000000LL

static const struct sps__source *const src = &sps__source_proc;

/* ------------------------------------------------------------ fixtures */

static char fixture[512];

static void fixture_new(void) {
    snprintf(fixture, sizeof fixture, "%s", tmpdir_new("proc"));
    char path[600];
    snprintf(path, sizeof path, "%s/proc", fixture);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/proc/net", fixture);
    mkdir(path, 0755);
}

/* Write fixture/rel with printf-style contents. */
__attribute__((format(printf, 2, 3))) static void put(const char *rel, const char *fmt, ...) {
    char path[700], text[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/%s", fixture, rel);
    write_file(path, text, (size_t)n);
}

static void fixture_path(char *buf, size_t cap, const char *rel) {
    snprintf(buf, cap, "%s/%s", fixture, rel);
}

static void put_cpu(unsigned user, unsigned nice, unsigned system, unsigned idle, unsigned iowait, unsigned irq,
                    unsigned softirq, unsigned steal, unsigned guest) {
    put("proc/stat",
        "cpu  %u %u %u %u %u %u %u %u %u 0\n"
        "cpu0 1 2 3 4 5 6 7 8 9 0\n"
        "intr 12345 0 0 0\nctxt 99\nbtime 1700000000\nprocesses 500\nprocs_running 1\n",
        user, nice, system, idle, iowait, irq, softirq, steal, guest);
}

static void put_meminfo(unsigned total_kb, unsigned avail_kb, unsigned swap_total_kb, unsigned swap_free_kb) {
    put("proc/meminfo",
        "MemTotal:       %u kB\nMemFree:          100000 kB\nMemAvailable:   %u kB\nBuffers:           1000 kB\n"
        "Cached:           20000 kB\nSwapCached:            0 kB\nSwapTotal:      %u kB\nSwapFree:       %u kB\n",
        total_kb, avail_kb, swap_total_kb, swap_free_kb);
}

#define NETDEV_HEADER \
    "Inter-|   Receive                                                |  Transmit\n" \
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls " \
    "carrier compressed\n"
#define NETDEV_LINE "%6s: %llu 10 0 0 0 0 0 0 %llu 20 0 0 0 0 0 0\n"

static void put_netdev2(unsigned long long lo_rx, unsigned long long lo_tx, unsigned long long eth_rx,
                        unsigned long long eth_tx) {
    put("proc/net/dev", NETDEV_HEADER NETDEV_LINE NETDEV_LINE, "lo", lo_rx, lo_tx, "eth0", eth_rx, eth_tx);
}

/* A minimal system: every system file present and well formed. */
static void put_system(void) {
    put_cpu(100, 0, 50, 800, 50, 0, 0, 0, 0);
    put_meminfo(16000000, 12000000, 2000000, 2000000);
    put_netdev2(0, 0, 0, 0);
}

struct fake_pid {
    int pid, ppid;
    unsigned long long utime, stime, start;
    unsigned rss_kb, hwm_kb, threads;
    unsigned long long read_bytes, write_bytes;
    const char *name; /* its command name; NULL: an awkward one with spaces and parentheses */
    unsigned pss_kb, uss_kb; /* its smaps_rollup's Pss and Private_Clean + Private_Dirty; 0 and 0: rss_kb, all private */
};

static void put_pid_dir(const char *dir, const struct fake_pid *p) {
    char path[700], rel[300];
    fixture_path(path, sizeof path, dir);
    mkdir(path, 0755);
    /* comm with spaces and parentheses: fields count from the last ')';
     * cutime/cstime are large to show they are not added */
    char comm[64];
    if (p->name)
        snprintf(comm, sizeof comm, "%s", p->name);
    else
        snprintf(comm, sizeof comm, "evil) comm (%d) x", p->pid);
    snprintf(rel, sizeof rel, "%s/stat", dir);
    put(rel,
        "%d (%s) S %d %d %d 0 -1 4194560 1234 0 7 0 %llu %llu 90000 90000 20 0 %u 0 %llu "
        "123456789 %u 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
        p->pid, comm, p->ppid, p->pid, p->pid, p->utime, p->stime, p->threads, p->start, p->rss_kb / 4);
    snprintf(rel, sizeof rel, "%s/statm", dir);
    long page = sysconf(_SC_PAGESIZE);
    put(rel, "99999 %llu 100 10 0 500 0\n", (unsigned long long)p->rss_kb * 1024 / (unsigned long long)page);
    snprintf(rel, sizeof rel, "%s/status", dir);
    put(rel,
        "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\nPPid:\t%d\n"
        "VmPeak:\t  999999 kB\nVmSize:\t  888888 kB\nVmHWM:\t%8u kB\nVmRSS:\t%8u kB\nRssAnon:\t    1 kB\n"
        "Threads:\t%u\nSigQ:\t0/63459\n",
        p->name ? p->name : "evil) comm", p->pid, p->pid, p->ppid, p->hwm_kb, p->rss_kb, p->threads);
    /* smaps_rollup as Linux 6 writes it (Rss, Pss and its parts, then the
     * Shared/Private split; Pss_Anon and the like must not read as Pss) */
    unsigned pss = p->pss_kb || p->uss_kb ? p->pss_kb : p->rss_kb, uss = p->pss_kb || p->uss_kb ? p->uss_kb : p->rss_kb;
    unsigned dirty = uss / 3, shared = p->rss_kb > uss ? p->rss_kb - uss : 0;
    snprintf(rel, sizeof rel, "%s/smaps_rollup", dir);
    put(rel,
        "5581c2a4d000-7ffd2d9f0000 ---p 00000000 00:00 0                          [rollup]\n"
        "Rss:           %8u kB\nPss:           %8u kB\nPss_Dirty:     %8u kB\nPss_Anon:      %8u kB\n"
        "Pss_File:      %8u kB\nPss_Shmem:            0 kB\nShared_Clean:  %8u kB\nShared_Dirty:         0 kB\n"
        "Private_Clean: %8u kB\nPrivate_Dirty: %8u kB\nReferenced:    %8u kB\nAnonymous:     %8u kB\n"
        "Swap:                 0 kB\nSwapPss:              0 kB\nLocked:               0 kB\n",
        p->rss_kb, pss, dirty, dirty + 7, pss / 2 + 3, shared, uss - dirty, dirty, p->rss_kb, dirty);
    snprintf(rel, sizeof rel, "%s/io", dir);
    put(rel,
        "rchar: 99999999\nwchar: 88888888\nsyscr: 10\nsyscw: 20\nread_bytes: %llu\nwrite_bytes: %llu\n"
        "cancelled_write_bytes: 777\n",
        p->read_bytes, p->write_bytes);
}

static void put_pid(const struct fake_pid *p) {
    char dir[64];
    snprintf(dir, sizeof dir, "proc/%d", p->pid);
    put_pid_dir(dir, p);
}

static void remove_pid(int pid) {
    static const char *const files[] = {"stat", "statm", "status", "io", "smaps_rollup"};
    char path[700];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/proc/%d/%s", fixture, pid, files[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/proc/%d", fixture, pid);
    CHECK_MSG(rmdir(path) == 0, "rmdir %s: %s", path, strerror(errno));
}

/* ------------------------------------------------------------ driving */

static struct sps__source_ctx ctx_for(int tree_pid) {
    struct sps__source_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.root = fixture;
    ctx.tree_pid = tree_pid;
    return ctx;
}

static char reason[256];
static struct sps__sample sample;

static void *open_ok(const struct sps__source_ctx *ctx) {
    void *state = NULL;
    int rc = src->open(ctx, &state, reason, sizeof reason);
    CHECK_MSG(rc == 0, "open: %d (%s)", rc, reason);
    if (rc != 0) {
        fprintf(stderr, "cannot go on without the source\n");
        exit(check_report());
    }
    return state;
}

static int read_at(void *state, const struct sps__source_ctx *ctx, int64_t now_ns) {
    sps__sample_clear(&sample);
    return src->read(state, ctx, &sample, now_ns, reason, sizeof reason);
}

static double m(enum sps_host_metric id) {
    return sample.host[id];
}

#define CHECK_NAN(id) CHECK_MSG(isnan(m(id)), "%s is %g, want NAN", #id, m(id))
#define CHECK_VAL(id, want) CHECK_NEAR(m(id), (want), 1e-9 * fabs((double)(want)) + 1e-9)

/* ------------------------------------------------------------ system */

static void test_vtable(void) {
    CHECK(src->id == SPS_SOURCE_PROC);
    CHECK(strcmp(src->name, "proc") == 0);
    CHECK(src->what && strlen(src->what) > 0 && !strchr(src->what, '\n'));
    CHECK(src->is_gpu == 0 && src->slow == 0);
    CHECK(sps__source_get(SPS_SOURCE_PROC) == src);
    CHECK(sps__proc_tree_contains(NULL, 1) == 0);
}

static void test_system_cpu(void) {
    fixture_new();
    put_system();
    struct sps__source_ctx ctx = ctx_for(0);
    void *st = open_ok(&ctx);

    /* since open: user +30, system +10, idle +50, iowait +10 */
    put_cpu(130, 0, 60, 850, 60, 0, 0, 0, 0);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_CPU_PERCENT, 40.0);
    CHECK_VAL(SPS_M_SYSTEM_IOWAIT_PERCENT, 10.0);

    /* nice, irq, softirq and steal are busy; guest is inside user already */
    put_cpu(140, 5, 60, 925, 60, 5, 5, 5, 10);
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_CPU_PERCENT, 30.0 / 105.0 * 100.0);
    CHECK_VAL(SPS_M_SYSTEM_IOWAIT_PERCENT, 0.0);

    /* no jiffies since the last read: no reading */
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_NAN(SPS_M_SYSTEM_CPU_PERCENT);
    CHECK_NAN(SPS_M_SYSTEM_IOWAIT_PERCENT);

    /* iowait stepping back (some kernels do) is no negative time */
    put_cpu(150, 5, 60, 1015, 50, 5, 5, 5, 10);
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_CPU_PERCENT, 10.0);
    CHECK_VAL(SPS_M_SYSTEM_IOWAIT_PERCENT, 0.0);

    /* no tree: every workload reading is unavailable */
    for (int i = SPS_M_WORKLOAD_CPU_PERCENT; i <= SPS_M_WORKLOAD_DISK_WRITE_BYTES_PER_SECOND; i++)
        CHECK_MSG(isnan(sample.host[i]), "workload metric %d is %g without a tree", i, sample.host[i]);
    /* and not other sources' slots */
    CHECK(isnan(m(SPS_M_CPU_TEMPERATURE_CELSIUS)));
    CHECK(isnan(m(SPS_M_CPU_PACKAGE_ENERGY_JOULES)));
    CHECK(sps__proc_tree_contains(st, 1) == 0);
    src->close(st);
}

static void test_memory(void) {
    fixture_new();
    put_system();
    put_meminfo(16000000, 12000000, 2000000, 1500000);
    struct sps__source_ctx ctx = ctx_for(0);
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES, 16000000.0 * 1024);
    CHECK_VAL(SPS_M_SYSTEM_MEMORY_AVAILABLE_BYTES, 12000000.0 * 1024);
    CHECK_VAL(SPS_M_SYSTEM_MEMORY_USED_BYTES, 4000000.0 * 1024);
    CHECK_VAL(SPS_M_SYSTEM_SWAP_USED_BYTES, 500000.0 * 1024);

    /* a kernel before 3.14 has no MemAvailable */
    put("proc/meminfo", "MemTotal:  1000 kB\nMemFree:  500 kB\nSwapTotal:  0 kB\nSwapFree:  0 kB\n");
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES, 1000.0 * 1024);
    CHECK_NAN(SPS_M_SYSTEM_MEMORY_AVAILABLE_BYTES);
    CHECK_NAN(SPS_M_SYSTEM_MEMORY_USED_BYTES);
    CHECK_VAL(SPS_M_SYSTEM_SWAP_USED_BYTES, 0.0);
    src->close(st);
}

static void test_network(void) {
    fixture_new();
    put_system();
    put("proc/net/dev", NETDEV_HEADER NETDEV_LINE NETDEV_LINE NETDEV_LINE, "lo", 500ULL, 500ULL, "eth0", 10000ULL,
        20000ULL, "wlan0", 5000ULL, 6000ULL);
    struct sps__source_ctx ctx = ctx_for(0);
    void *st = open_ok(&ctx);

    /* lo's traffic does not count; no rate without a previous read */
    put("proc/net/dev", NETDEV_HEADER NETDEV_LINE NETDEV_LINE NETDEV_LINE, "lo", 90500ULL, 90500ULL, "eth0",
        11000ULL, 20500ULL, "wlan0", 5000ULL, 6000ULL);
    CHECK_EQ_I(read_at(st, &ctx, 10 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 1000.0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES, 500.0);
    CHECK_NAN(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND);
    CHECK_NAN(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES_PER_SECOND);

    /* wlan0 was recreated: its counters restarted (300 and 100 are new) */
    put("proc/net/dev", NETDEV_HEADER NETDEV_LINE NETDEV_LINE NETDEV_LINE, "lo", 99999ULL, 99999ULL, "eth0",
        13000ULL, 21500ULL, "wlan0", 300ULL, 100ULL);
    CHECK_EQ_I(read_at(st, &ctx, 12 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 1000.0 + 2000 + 300);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES, 500.0 + 1000 + 100);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND, 2300.0 / 2);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES_PER_SECOND, 1100.0 / 2);

    /* wlan0 goes away, docker0 appears: all its traffic is new */
    put("proc/net/dev", NETDEV_HEADER NETDEV_LINE NETDEV_LINE NETDEV_LINE, "lo", 99999ULL, 99999ULL, "docker0",
        700ULL, 70ULL, "eth0", 13000ULL, 21500ULL);
    CHECK_EQ_I(read_at(st, &ctx, 13 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 3300.0 + 700);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES, 1600.0 + 70);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND, 700.0);

    /* wlan0 comes back with small counters: they count from zero again */
    put("proc/net/dev", NETDEV_HEADER NETDEV_LINE NETDEV_LINE NETDEV_LINE NETDEV_LINE, "lo", 99999ULL, 99999ULL,
        "docker0", 700ULL, 70ULL, "eth0", 13000ULL, 21500ULL, "wlan0", 50ULL, 5ULL);
    CHECK_EQ_I(read_at(st, &ctx, 15 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 4050.0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES, 1675.0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND, 25.0);

    /* the same time again: no interval, no rate (totals stay) */
    CHECK_EQ_I(read_at(st, &ctx, 15 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 4050.0);
    CHECK_NAN(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND);
    src->close(st);
}

/* Old kernels print "eth0:123" with no space after the colon. */
static void test_network_no_space(void) {
    fixture_new();
    put_system();
    put("proc/net/dev", NETDEV_HEADER "  eth0:1000 1 0 0 0 0 0 0 2000 2 0 0 0 0 0 0\n");
    struct sps__source_ctx ctx = ctx_for(0);
    void *st = open_ok(&ctx);
    put("proc/net/dev", NETDEV_HEADER "  eth0:4294967295 1 0 0 0 0 0 0 2100 2 0 0 0 0 0 0\n");
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 4294967295.0 - 1000);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES, 100.0);
    src->close(st);
}

/* More interfaces than the first buffer holds (a host full of veths). */
static void put_many_interfaces(int n, unsigned long long add) {
    size_t cap = 200 + (size_t)n * 128, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len, NETDEV_HEADER);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "veth%d", i);
        len += (size_t)snprintf(text + len, cap - len, NETDEV_LINE, name, 1000000ULL * (unsigned)i + add,
                                2000000ULL * (unsigned)i + 2 * add);
    }
    char path[700];
    fixture_path(path, sizeof path, "proc/net/dev");
    write_file(path, text, len);
    free(text);
}

static void test_network_many_interfaces(void) {
    fixture_new();
    put_system();
    put_many_interfaces(400, 0);
    struct sps__source_ctx ctx = ctx_for(0);
    void *st = open_ok(&ctx);
    put_many_interfaces(400, 3);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 400 * 3);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES, 400 * 6);
    src->close(st);
}

/* ------------------------------------------------------------ the tree */

static double clk_tck(void) {
    return (double)sysconf(_SC_CLK_TCK);
}

static void test_tree_discovery(void) {
    fixture_new();
    put_system();
    /* 100 the root; 101 its child; 205 a grandchild; 50 a great-grandchild
     * whose parent 300 has a higher pid (pid wraparound); 150 unrelated */
    struct fake_pid root = {100, 1, 10, 5, 1000, 1000, 1000, 2, 0, 0};
    struct fake_pid child = {101, 100, 20, 0, 1001, 2000, 2000, 1, 0, 0};
    struct fake_pid grandchild = {205, 101, 30, 10, 1002, 3000, 3000, 4, 0, 0};
    struct fake_pid upper = {300, 100, 1, 1, 1003, 400, 400, 1, 0, 0};
    struct fake_pid wrapped = {50, 300, 2, 2, 1004, 500, 500, 1, 0, 0};
    struct fake_pid stranger = {150, 1, 777, 777, 900, 99999, 99999, 9, 0, 0};
    /* 180 names 101 as parent but started before it: its real parent
     * exited and the pid was reused (a race between reading the two) */
    struct fake_pid older = {180, 101, 888, 888, 999, 99999, 99999, 9, 0, 0};
    const struct fake_pid *all[] = {&root, &child, &grandchild, &upper, &wrapped, &stranger, &older};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        put_pid(all[i]);
    put("proc/self", "not a pid directory\n");

    struct sps__source_ctx ctx = ctx_for(100);
    void *st = open_ok(&ctx);
    CHECK_MSG(reason[0] == '\0', "open notes: %s", reason);

    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 5);
    CHECK_VAL(SPS_M_WORKLOAD_THREADS, 2 + 1 + 4 + 1 + 1);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, (1000.0 + 2000 + 3000 + 400 + 500) * 1024);
    double ticks = 15 + 20 + 40 + 2 + 4;
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, ticks / clk_tck());
    CHECK_NAN(SPS_M_WORKLOAD_CPU_PERCENT); /* no previous read time */
    int members[] = {100, 101, 205, 300, 50};
    for (size_t i = 0; i < sizeof members / sizeof *members; i++)
        CHECK_MSG(sps__proc_tree_contains(st, members[i]), "pid %d in the tree", members[i]);
    CHECK(!sps__proc_tree_contains(st, 150));
    CHECK(!sps__proc_tree_contains(st, 180));
    CHECK(!sps__proc_tree_contains(st, 1));
    CHECK(!sps__proc_tree_contains(st, 4242));

    /* 101 exits: 205 is reparented to the subreaper (1 here) and stays;
     * 101's CPU time stays in the total; the root burns 100 more ticks */
    remove_pid(101);
    grandchild.ppid = 1;
    put_pid(&grandchild);
    root.utime += 100;
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 4);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, (ticks + 100) / clk_tck());
    CHECK_VAL(SPS_M_WORKLOAD_CPU_PERCENT, 100.0 / clk_tck() / 2 * 100);
    CHECK(sps__proc_tree_contains(st, 205));
    CHECK(!sps__proc_tree_contains(st, 101));

    /* a child of the orphan joins the tree too */
    struct fake_pid orphans_child = {206, 205, 3, 3, 1010, 100, 100, 1, 0, 0};
    put_pid(&orphans_child);
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK(sps__proc_tree_contains(st, 206));
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 5);
    ticks += 100 + 6;
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, ticks / clk_tck());

    /* pid 300 (a member) is reused by an unrelated process between two
     * reads: the new start time shows it; the old one's 2 ticks stay */
    struct fake_pid reused = {300, 1, 5000, 5000, 2000, 100, 100, 1, 0, 0};
    put_pid(&reused);
    CHECK_EQ_I(read_at(st, &ctx, 5 * SEC), 0);
    CHECK(!sps__proc_tree_contains(st, 300));
    CHECK(sps__proc_tree_contains(st, 50)); /* its old child stays: membership is sticky */
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 4);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, ticks / clk_tck());

    /* pid 150 (outside) is reused by a new child of the root without a read
     * seeing it gone: a new /proc directory (a new inode) shows it */
    struct fake_pid newcomer = {150, 100, 7, 0, 2100, 100, 100, 1, 0, 0};
    put_pid_dir("proc/150.new", &newcomer);
    char from[700], to[700];
    fixture_path(from, sizeof from, "proc/150");
    fixture_path(to, sizeof to, "proc/150.old");
    CHECK(rename(from, to) == 0);
    fixture_path(from, sizeof from, "proc/150.new");
    fixture_path(to, sizeof to, "proc/150");
    CHECK(rename(from, to) == 0);
    CHECK_EQ_I(read_at(st, &ctx, 6 * SEC), 0);
    CHECK(sps__proc_tree_contains(st, 150));
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 5);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, (ticks + 7) / clk_tck());

    /* a pid listed but gone before its files could be read is skipped */
    char dir[700];
    fixture_path(dir, sizeof dir, "proc/400");
    mkdir(dir, 0755);
    CHECK_EQ_I(read_at(st, &ctx, 7 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 5);
    CHECK(!sps__proc_tree_contains(st, 400));

    /* the root exits: the total holds, nothing is left */
    remove_pid(100);
    remove_pid(205);
    remove_pid(206);
    remove_pid(50);
    remove_pid(150);
    CHECK_EQ_I(read_at(st, &ctx, 8 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 0);
    CHECK_VAL(SPS_M_WORKLOAD_THREADS, 0);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 0);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, (ticks + 7) / clk_tck());
    CHECK_VAL(SPS_M_WORKLOAD_CPU_PERCENT, 0);

    /* a new process that reuses the root's pid is not the root */
    struct fake_pid impostor = {100, 1, 1, 1, 9000, 100, 100, 1, 0, 0};
    put_pid(&impostor);
    CHECK_EQ_I(read_at(st, &ctx, 9 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 0);
    CHECK(!sps__proc_tree_contains(st, 100));
    src->close(st);
}

static void test_rss_peak(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 0, 0, 100, 1000, 5000, 1, 0, 0};
    struct fake_pid child = {11, 10, 0, 0, 101, 2000, 2500, 1, 0, 0};
    put_pid(&root);
    put_pid(&child);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);

    /* the root's high-water mark beats the sum */
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 3000.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_PEAK_BYTES, 5000.0 * 1024);

    /* the sum beats every single high-water mark */
    root.rss_kb = 5000;
    child.rss_kb = child.hwm_kb = 3000;
    put_pid(&root);
    put_pid(&child);
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 8000.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_PEAK_BYTES, 8000.0 * 1024);

    /* memory goes down, the peak stays */
    root.rss_kb = 10;
    put_pid(&root);
    remove_pid(11);
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 10.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_PEAK_BYTES, 8000.0 * 1024);

    /* a zombie has no memory lines: it counts as a process with no RSS */
    put("proc/10/status", "Name:\tz\nState:\tZ (zombie)\nTgid:\t10\nPid:\t10\nPPid:\t1\nThreads:\t1\n");
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 0);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_PEAK_BYTES, 8000.0 * 1024);
    src->close(st);
}

static void test_disk(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 0, 0, 100, 1000, 1000, 1, 1000, 2000};
    put_pid(&root);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);

    /* what the tree had at open is not counted */
    root.read_bytes = 1500;
    root.write_bytes = 2600;
    put_pid(&root);
    struct fake_pid child = {11, 10, 0, 0, 101, 100, 100, 1, 100, 0};
    put_pid(&child);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES, 600.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_WRITE_BYTES, 600.0);
    CHECK_NAN(SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND);

    /* the child exits: what it did stays counted */
    child.read_bytes = 400;
    child.write_bytes = 50;
    put_pid(&child);
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES, 900.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_WRITE_BYTES, 650.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND, 150.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_WRITE_BYTES_PER_SECOND, 25.0);
    remove_pid(11);
    root.read_bytes += 1000;
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES, 1900.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_WRITE_BYTES, 650.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND, 1000.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_WRITE_BYTES_PER_SECOND, 0.0);
    src->close(st);
}

/* /proc/PID/io that cannot be read (another user's process, a hardened
 * kernel, no task I/O accounting): no disk readings, a note, the rest
 * works.  Tests may run as root, where a mode of 000 does not stop a read,
 * so the file is made a directory (EISDIR) or removed. */
static void test_disk_unreadable(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 50, 0, 100, 1000, 1000, 1, 1000, 2000};
    struct fake_pid child = {11, 10, 50, 0, 101, 1000, 1000, 1, 1000, 2000};
    put_pid(&root);
    put_pid(&child);
    char path[700];
    fixture_path(path, sizeof path, "proc/11/io");
    unlink(path);
    mkdir(path, 0755);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);
    CHECK_STR_HAS(reason, "proc/11/io");

    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_STR_HAS(reason, "disk");
    CHECK_STR_HAS(reason, "proc/11/io");
    CHECK_NAN(SPS_M_WORKLOAD_DISK_READ_BYTES);
    CHECK_NAN(SPS_M_WORKLOAD_DISK_WRITE_BYTES);
    CHECK_NAN(SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND);
    CHECK_NAN(SPS_M_WORKLOAD_DISK_WRITE_BYTES_PER_SECOND);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 2);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, 100 / clk_tck());

    /* absent (no task I/O accounting) reads the same */
    rmdir(path);
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_STR_HAS(reason, "proc/11/io");
    CHECK_NAN(SPS_M_WORKLOAD_DISK_READ_BYTES);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 2);

    /* once every io reads again, the totals count from that read */
    put_pid(&child);
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_MSG(reason[0] == '\0', "notes: %s", reason);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES, 0.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_WRITE_BYTES, 0.0);
    root.read_bytes += 10;
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES, 10.0);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND, 10.0);
    src->close(st);
}

static void test_workload_cpu_percent(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 100, 100, 100, 1000, 1000, 1, 0, 0};
    put_pid(&root);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 5 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, 200 / clk_tck());
    CHECK_NAN(SPS_M_WORKLOAD_CPU_PERCENT);
    /* two cores' worth of ticks over half a second */
    root.utime += (unsigned long long)clk_tck();
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 5 * SEC + SEC / 2), 0);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_PERCENT, 200.0);
    src->close(st);
}

/* A tree_pid that changes between reads starts a new tree. */
static void test_tree_pid_change(void) {
    fixture_new();
    put_system();
    struct fake_pid a = {10, 1, 100, 0, 100, 1000, 1000, 1, 0, 0};
    struct fake_pid b = {20, 1, 300, 0, 100, 2000, 2000, 3, 0, 0};
    put_pid(&a);
    put_pid(&b);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_THREADS, 1);
    ctx.tree_pid = 20;
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_THREADS, 3);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, 300 / clk_tck());
    CHECK(sps__proc_tree_contains(st, 20) && !sps__proc_tree_contains(st, 10));
    ctx.tree_pid = 0;
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_NAN(SPS_M_WORKLOAD_THREADS);
    CHECK(!sps__proc_tree_contains(st, 20));
    src->close(st);
}

/* Enough processes to make every table grow several times. */
static void test_many_processes(void) {
    fixture_new();
    put_system();
    enum { N = 600 };
    /* a chain: 2 the root, each next pid the child of the one before;
     * listed in whatever order the fixture directory gives */
    for (int pid = 2; pid < 2 + N; pid++) {
        struct fake_pid p = {pid, pid == 2 ? 1 : pid - 1, 1, 0, (unsigned long long)pid, 4, 4, 1, 0, 0};
        put_pid(&p);
    }
    struct sps__source_ctx ctx = ctx_for(2);
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, N);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, N / clk_tck());
    CHECK(sps__proc_tree_contains(st, 1 + N));
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, N);
    src->close(st);

    /* the same chain the other way round: every child has a lower pid than
     * its parent, so each walks all the way up to the root */
    fixture_new();
    put_system();
    for (int pid = 2; pid < 2 + N; pid++) {
        struct fake_pid p = {pid, pid == 1 + N ? 1 : pid + 1, 1, 0, (unsigned long long)(2 + N - pid), 4, 4, 1, 0, 0};
        put_pid(&p);
    }
    /* and a loop of two recycled pids that claim each other as parent */
    struct fake_pid loop_a = {5000, 5001, 1, 0, 7000, 4, 4, 1, 0, 0}, loop_b = {5001, 5000, 1, 0, 7000, 4, 4, 1, 0, 0};
    put_pid(&loop_a);
    put_pid(&loop_b);
    ctx = ctx_for(1 + N);
    st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, N);
    CHECK(sps__proc_tree_contains(st, 2));
    CHECK(!sps__proc_tree_contains(st, 5000) && !sps__proc_tree_contains(st, 5001));
    src->close(st);
}

/* ------------------------------------------------ per-process memory */

/* The readings of the latest read, as the sampler takes them. */
static size_t rss_readings(void *st, const struct sps__proc_rss **rd) {
    return sps__proc_tree_rss(st, rd);
}

/* Each tree process's own resident set goes out beside the sample, from
 * full reads (status) and reads at the interval alone (statm); a process
 * new to the tree is marked first once; its name follows renames. */
static void test_tree_rss_readings(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 0, 0, 100, 1000, 1000, 1, 0, 0, "trainer"};
    struct fake_pid worker = {11, 10, 0, 0, 101, 2000, 2000, 1, 0, 0, "pt_worker"};
    struct fake_pid stranger = {12, 1, 0, 0, 102, 4000, 4000, 1, 0, 0, "stranger"};
    put_pid(&root);
    put_pid(&worker);
    put_pid(&stranger);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);
    const struct sps__proc_rss *rd;
    CHECK_EQ_U(rss_readings(st, &rd), 0); /* open's baseline is not a read */

    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_EQ_U(rss_readings(st, &rd), 2);
    CHECK_EQ_I(rd[0].pid, 10);
    CHECK_EQ_I(strcmp(rd[0].comm, "trainer"), 0);
    CHECK_NEAR(rd[0].rss_bytes, 1000.0 * 1024, 0);
    CHECK_EQ_I(rd[0].first, 1);
    CHECK_EQ_U(rd[0].start_ticks, 100);
    CHECK_EQ_I(rd[1].pid, 11);
    CHECK_EQ_I(strcmp(rd[1].comm, "pt_worker"), 0);
    CHECK_NEAR(rd[1].rss_bytes, 2000.0 * 1024, 0);
    CHECK_EQ_I(rd[1].first, 1);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, rd[0].rss_bytes + rd[1].rss_bytes);

    /* at the interval alone the resident set comes from statm */
    worker.rss_kb = 3000;
    put_pid(&worker);
    ctx.interval_only = 1;
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    ctx.interval_only = 0;
    CHECK_EQ_U(rss_readings(st, &rd), 2);
    CHECK_NEAR(rd[1].rss_bytes, 3000.0 * 1024, 0);
    CHECK_EQ_I(rd[0].first, 0);
    CHECK_EQ_I(rd[1].first, 0);

    /* a rename shows at the next full read, cut to the kernel's 15 bytes */
    worker.name = "pt_data_worker_0";
    put_pid(&worker);
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_EQ_U(rss_readings(st, &rd), 2);
    CHECK_EQ_I(strcmp(rd[1].comm, "pt_data_worker_"), 0);

    /* the worker exits and another starts: it has no reading, the new one
     * is first */
    remove_pid(11);
    struct fake_pid second = {13, 10, 0, 0, 105, 500, 500, 1, 0, 0, "pt_worker"};
    put_pid(&second);
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK_EQ_U(rss_readings(st, &rd), 2);
    CHECK_EQ_I(rd[0].pid, 10);
    CHECK_EQ_I(rd[0].first, 0);
    CHECK_EQ_I(rd[1].pid, 13);
    CHECK_EQ_I(rd[1].first, 1);
    CHECK_NEAR(rd[1].rss_bytes, 500.0 * 1024, 0);

    /* no tree, no readings */
    ctx.tree_pid = 0;
    CHECK_EQ_I(read_at(st, &ctx, 5 * SEC), 0);
    CHECK_EQ_U(rss_readings(st, &rd), 0);
    src->close(st);
    CHECK_EQ_U(sps__proc_tree_rss(NULL, &rd), 0);
}

/* A sampler over the fixture tree: no GPU library or nvidia-smi to find. */
static struct sps__sampler *fixture_sampler(int tree_pid) {
    struct sps__sampler_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.root = fixture;
    cfg.tree_pid = tree_pid;
    cfg.nvml_path = "/nonexistent-stepscope/libnvidia-ml.so.1";
    cfg.smi_path = "/nonexistent-stepscope/nvidia-smi";
    char err[256];
    struct sps__sampler *s = sps__sampler_open(&cfg, err, sizeof err);
    CHECK_MSG(s != NULL, "sampler: %s", err);
    if (!s)
        exit(check_report());
    return s;
}

/* The sampler keeps a series per tree process, read at the tree sum's
 * times; a process that exits keeps its series. */
static void test_sampler_process_series(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 0, 0, 100, 1000, 1000, 1, 0, 0, "trainer"};
    struct fake_pid worker = {11, 10, 0, 0, 101, 2000, 2000, 1, 0, 0, "pt_worker"};
    put_pid(&root);
    put_pid(&worker);
    struct sps__sampler *s = fixture_sampler(10);
    /* the worker grows, then exits; the root grows after it has gone */
    sps__sampler_tick(s, 1, 1);
    worker.rss_kb = 3000;
    put_pid(&worker);
    sps__sampler_tick(s, 1, 0);
    worker.rss_kb = 5000;
    put_pid(&worker);
    sps__sampler_tick(s, 1, 0);
    remove_pid(11);
    sps__sampler_tick(s, 1, 1);
    root.rss_kb = 1200;
    put_pid(&root);
    sps__sampler_tick(s, 1, 0);

    const struct sps__sampler_result *r = sps__sampler_result(s);
    const struct sps__series *tree = &r->host[SPS_M_WORKLOAD_RSS_BYTES];
    CHECK_EQ_I(r->nprocesses, 2);
    CHECK_EQ_U(r->processes_left_out, 0);
    CHECK_EQ_U(tree->count, 5);
    const struct sps__process_series *p0 = &r->process[0], *p1 = &r->process[1];
    CHECK_EQ_I(p0->pid, 10);
    CHECK_EQ_I(strcmp(p0->comm, "trainer"), 0);
    CHECK_EQ_U(p0->start_ticks, 100);
    CHECK_EQ_I(p1->pid, 11);
    CHECK_EQ_I(strcmp(p1->comm, "pt_worker"), 0);
    const double root_kb[] = {1000, 1000, 1000, 1000, 1200}, worker_kb[] = {2000, 3000, 5000};
    CHECK_EQ_U(p0->rss_bytes.count, 5);
    CHECK_EQ_U(p1->rss_bytes.count, 3); /* the worker's series ends when it exits, and stays */
    for (uint32_t k = 0; k < p0->rss_bytes.count && k < tree->count; k++) {
        CHECK_NEAR(p0->rss_bytes.points[k].mean, root_kb[k] * 1024, 0);
        CHECK_EQ_I(p0->rss_bytes.points[k].t_ns, tree->points[k].t_ns); /* one time axis */
        double worker_bytes = k < 3 ? worker_kb[k] * 1024 : 0;
        CHECK_NEAR(tree->points[k].mean, root_kb[k] * 1024 + worker_bytes, 0);
    }
    for (uint32_t k = 0; k < p1->rss_bytes.count; k++) {
        CHECK_NEAR(p1->rss_bytes.points[k].mean, worker_kb[k] * 1024, 0);
        CHECK_EQ_I(p1->rss_bytes.points[k].t_ns, tree->points[k].t_ns);
    }
    CHECK_EQ_I(p0->first_seen_ns, tree->points[0].t_ns);
    CHECK_EQ_I(p1->first_seen_ns, tree->points[0].t_ns);
    CHECK_NEAR(p1->rss_bytes.max, 5000.0 * 1024, 0);
    CHECK_NEAR(p1->rss_bytes.last, 5000.0 * 1024, 0);
    sps__sampler_close(s);
}

/* At most SPS_SAMPLER_MAX_PROCESSES series, to the first processes seen;
 * the others are counted once each, and still count in the tree's sum. */
static void test_sampler_process_cap(void) {
    fixture_new();
    put_system();
    enum { N = SPS_SAMPLER_MAX_PROCESSES + 6 };
    double sum_kb = 0;
    /* 2 the root, 3 .. N+1 its children, each with its own size */
    for (int pid = 2; pid < 2 + N; pid++) {
        struct fake_pid p = {pid, pid == 2 ? 1 : 2, 1, 0, (unsigned long long)pid, 4u * (unsigned)pid, 4, 1, 0, 0,
                             "worker"};
        put_pid(&p);
        sum_kb += 4.0 * pid;
    }
    struct sps__sampler *s = fixture_sampler(2);
    sps__sampler_tick(s, 1, 1);
    sps__sampler_tick(s, 1, 0);
    sps__sampler_tick(s, 1, 1);
    const struct sps__sampler_result *r = sps__sampler_result(s);
    CHECK_EQ_I(r->nprocesses, SPS_SAMPLER_MAX_PROCESSES);
    CHECK_EQ_U(r->processes_left_out, 6); /* counted once, however often read */
    for (int k = 0; k < r->nprocesses; k++) {
        CHECK_EQ_I(r->process[k].pid, 2 + k);
        CHECK_EQ_U(r->process[k].rss_bytes.n, 3);
        CHECK_NEAR(r->process[k].rss_bytes.last, 4.0 * (2 + k) * 1024, 0);
    }
    CHECK_NEAR(r->host[SPS_M_WORKLOAD_RSS_BYTES].last, sum_kb * 1024, 0);

    /* a newcomer is left out too; one with a series exits and keeps it,
     * its place is not given to another */
    struct fake_pid late = {500, 2, 1, 0, 500, 64, 64, 1, 0, 0, "late"};
    put_pid(&late);
    remove_pid(3);
    sps__sampler_tick(s, 1, 1);
    sps__sampler_tick(s, 1, 1);
    CHECK_EQ_I(r->nprocesses, SPS_SAMPLER_MAX_PROCESSES);
    CHECK_EQ_U(r->processes_left_out, 7);
    CHECK_EQ_I(r->process[1].pid, 3);
    CHECK_EQ_U(r->process[1].rss_bytes.n, 3);
    CHECK_EQ_U(r->process[0].rss_bytes.n, 5);
    sps__sampler_close(s);
}

/* ------------------------------------------------------------ failures */

static void test_missing_stat(void) {
    fixture_new();
    put_meminfo(1000, 500, 0, 0);
    struct sps__source_ctx ctx = ctx_for(0);
    void *state = (void *)&ctx;
    reason[0] = '\0';
    int rc = src->open(&ctx, &state, reason, sizeof reason);
    CHECK(rc < 0);
    CHECK(state == NULL);
    CHECK_STR_HAS(reason, "cannot read ");
    CHECK_STR_HAS(reason, "/proc/stat: ");
    CHECK_STR_HAS(reason, strerror(ENOENT));
    CHECK(!strchr(reason, '\n'));

    /* a root with nothing in it */
    ctx.root = "/nonexistent-stepscope-root";
    rc = src->open(&ctx, &state, reason, sizeof reason);
    CHECK(rc < 0);
    CHECK_STR_HAS(reason, "/nonexistent-stepscope-root/proc/stat");

    /* malformed at open: no baseline, not available */
    put("proc/stat", "intr 1 2 3\n");
    ctx.root = fixture;
    rc = src->open(&ctx, &state, reason, sizeof reason);
    CHECK(rc < 0);
    CHECK_STR_HAS(reason, "malformed");
    CHECK_STR_HAS(reason, "proc/stat");
}

static void test_malformed_files(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 100, 0, 100, 1000, 1000, 1, 0, 0};
    put_pid(&root);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);

    static const char *const bad_stat[] = {"", "cpu\n", "cpu  1 2 3\n", "cpu  x y z w\n", "cpux 1 2 3 4\n",
                                           "\ncpu  1 2 3 4 5\n"};
    for (size_t i = 0; i < sizeof bad_stat / sizeof *bad_stat; i++) {
        put("proc/stat", "%s", bad_stat[i]);
        CHECK_MSG(read_at(st, &ctx, (int64_t)(i + 1) * SEC) < 0, "stat \"%s\" accepted", bad_stat[i]);
        CHECK_STR_HAS(reason, "proc/stat");
        CHECK_NAN(SPS_M_SYSTEM_CPU_PERCENT);
        /* the other files still read */
        CHECK(!isnan(m(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES)));
        CHECK(!isnan(m(SPS_M_WORKLOAD_RSS_BYTES)));
    }
    put_cpu(1, 0, 0, 1, 0, 0, 0, 0, 0);
    CHECK_EQ_I(read_at(st, &ctx, 10 * SEC), 0);

    put("proc/meminfo", "MemFree: 10 kB\n");
    CHECK(read_at(st, &ctx, 11 * SEC) < 0);
    CHECK_STR_HAS(reason, "proc/meminfo");
    CHECK_NAN(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES);
    put("proc/meminfo", "MemTotal: lots\n");
    CHECK(read_at(st, &ctx, 12 * SEC) < 0);
    CHECK_STR_HAS(reason, "proc/meminfo");
    put_meminfo(1000, 500, 0, 0);

    static const char *const bad_netdev[] = {
        "", "only one line\n", NETDEV_HEADER "eth0 1 2 3\n", NETDEV_HEADER "eth0: 1 2 3\n",
        NETDEV_HEADER "eth0: a b c d e f g h i j k l m n o p\n", NETDEV_HEADER ": 1 2 3 4 5 6 7 8 9\n"};
    for (size_t i = 0; i < sizeof bad_netdev / sizeof *bad_netdev; i++) {
        put("proc/net/dev", "%s", bad_netdev[i]);
        CHECK_MSG(read_at(st, &ctx, (int64_t)(20 + i) * SEC) < 0, "net/dev \"%s\" accepted", bad_netdev[i]);
        CHECK_STR_HAS(reason, "proc/net/dev");
        CHECK_NAN(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES);
    }
    put_netdev2(0, 0, 0, 0);
    CHECK_EQ_I(read_at(st, &ctx, 30 * SEC), 0);

    /* per-process files that do not parse: that process is skipped */
    put("proc/10/stat", "10 (no fields after the name)");
    CHECK_EQ_I(read_at(st, &ctx, 31 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 0);
    put("proc/10/stat", "garbage without a closing parenthesis");
    CHECK_EQ_I(read_at(st, &ctx, 32 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 0);
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 33 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1);
    src->close(st);
}

/* Absent meminfo and net/dev: those readings are unavailable with a note,
 * the read succeeds; once they appear they read. */
static void test_missing_optional_files(void) {
    fixture_new();
    put_cpu(1, 0, 0, 1, 0, 0, 0, 0, 0);
    struct sps__source_ctx ctx = ctx_for(0);
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_STR_HAS(reason, "proc/meminfo");
    CHECK_STR_HAS(reason, "proc/net/dev");
    CHECK_NAN(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES);
    CHECK_NAN(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES);
    put_meminfo(1000, 500, 0, 0);
    put_netdev2(5, 5, 1000, 2000);
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_MSG(reason[0] == '\0', "notes: %s", reason);
    CHECK_VAL(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES, 1000.0 * 1024);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 0); /* counts from the first read that saw it */
    put_netdev2(5, 5, 1500, 2000);
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES, 500);
    CHECK_VAL(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND, 500);
    src->close(st);
}

/* ------------------------------------------------------ the tree's PSS */

#define CHECK_PSS_READ_AT(t) \
    CHECK_MSG(sample.host_read_ns[SPS_M_WORKLOAD_PSS_BYTES] == (t) && \
                  sample.host_read_ns[SPS_M_WORKLOAD_USS_BYTES] == (t) && \
                  sample.host_read_ns[SPS_M_WORKLOAD_PSS_PEAK_BYTES] == (t), \
              "PSS read at %lld, want %lld", (long long)sample.host_read_ns[SPS_M_WORKLOAD_PSS_BYTES], (long long)(t))

/* PSS and USS are the sums of the tree's smaps_rollup lines (Pss, and
 * Private_Clean + Private_Dirty), read on full reads when due; the peak is
 * the largest sum read. */
static void test_tree_pss(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 0, 0, 100, 3000, 3000, 1, 0, 0, "trainer", 1200, 900};
    struct fake_pid worker = {11, 10, 0, 0, 101, 2800, 2800, 1, 0, 0, "pt_worker", 1000, 100};
    struct fake_pid stranger = {12, 1, 0, 0, 102, 9000, 9000, 1, 0, 0, "other", 4000, 4000};
    put_pid(&root);
    put_pid(&worker);
    put_pid(&stranger);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);

    /* the first full read does not pay for a PSS read (and may come
     * between the workload's fork and exec) */
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_PSS_READ_AT(0);
    /* at 0.01% of a core, 1 s pays for 100 us: at 10 ns per KiB (the least
     * a read is predicted to cost), 5800 KiB is 58 us */
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_MSG(reason[0] == '\0', "notes: %s", reason);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 5800.0 * 1024); /* the sum counts shared pages in each */
    CHECK_VAL(SPS_M_WORKLOAD_PSS_BYTES, 2200.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_USS_BYTES, 1000.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_PSS_PEAK_BYTES, 2200.0 * 1024);
    CHECK_PSS_READ_AT(2 * SEC);

    /* right after it the read's cost is not paid off: not read (the slots
     * stay as the sampler left them) */
    root.pss_kb = 2000;
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC + 1), 0);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_PSS_READ_AT(0);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 5800.0 * 1024);

    /* unless asked for now (a fresh capture) */
    ctx.due_now = 1;
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC + 2), 0);
    ctx.due_now = 0;
    CHECK_VAL(SPS_M_WORKLOAD_PSS_BYTES, 3000.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_PSS_PEAK_BYTES, 3000.0 * 1024);
    CHECK_PSS_READ_AT(2 * SEC + 2);

    /* never at the interval alone */
    ctx.interval_only = 1;
    ctx.due_now = 1;
    CHECK_EQ_I(read_at(st, &ctx, 500 * SEC), 0);
    ctx.interval_only = 0;
    ctx.due_now = 0;
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_PSS_READ_AT(0);

    /* long after, due again: memory went down, the peak stays */
    root.pss_kb = 100;
    root.uss_kb = 50;
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 1000 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PSS_BYTES, 1100.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_USS_BYTES, 150.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_PSS_PEAK_BYTES, 3000.0 * 1024);
    CHECK_PSS_READ_AT(1000 * SEC);

    /* the tree's RSS sum drifts by 10%: the last PSS still stands for it
     * (not read again: the slots stay as the sampler left them) */
    root.rss_kb = 3580;
    put_pid(&root);
    ctx.interval_only = 1;
    CHECK_EQ_I(read_at(st, &ctx, 1000 * SEC + 1), 0);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 6380.0 * 1024);
    CHECK_PSS_READ_AT(0);
    /* past that, it no longer does: PSS and USS have no value, read now */
    root.rss_kb = 3600;
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 1000 * SEC + 2), 0);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_NAN(SPS_M_WORKLOAD_USS_BYTES);
    CHECK_EQ_I(sample.host_read_ns[SPS_M_WORKLOAD_PSS_BYTES], 1000 * SEC + 2);
    CHECK_EQ_I(sample.host_read_ns[SPS_M_WORKLOAD_USS_BYTES], 1000 * SEC + 2);
    CHECK_EQ_I(sample.host_read_ns[SPS_M_WORKLOAD_PSS_PEAK_BYTES], 0); /* the peak read stays */
    /* once, until the next PSS read */
    CHECK_EQ_I(read_at(st, &ctx, 1000 * SEC + 3), 0);
    CHECK_PSS_READ_AT(0);
    ctx.interval_only = 0;
    ctx.due_now = 1;
    CHECK_EQ_I(read_at(st, &ctx, 1000 * SEC + 4), 0);
    ctx.due_now = 0;
    CHECK_VAL(SPS_M_WORKLOAD_PSS_BYTES, 1100.0 * 1024);
    CHECK_PSS_READ_AT(1000 * SEC + 4);
    uint64_t reads, cpu_ns;
    sps__proc_pss_cost(st, &reads, &cpu_ns);
    CHECK_EQ_U(reads, 4);
    CHECK(cpu_ns > 0);
    src->close(st);
}

/* A PSS that cannot be summed over every live tree process is no PSS (a
 * partial sum would be too low), with the reason; never a made-up figure. */
static void test_tree_pss_unreadable(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 0, 0, 100, 3000, 3000, 1, 0, 0, "trainer", 1200, 900};
    struct fake_pid worker = {11, 10, 0, 0, 101, 2800, 2800, 1, 0, 0, "pt_worker", 1000, 100};
    put_pid(&root);
    put_pid(&worker);
    struct sps__source_ctx ctx = ctx_for(10);
    ctx.due_now = 1;
    void *st = open_ok(&ctx);

    /* one that does not parse */
    put("proc/11/smaps_rollup", "00400000-7ffd62a00000 ---p 00000000 00:00 0 [rollup]\nRss: 2800 kB\n");
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_NAN(SPS_M_WORKLOAD_USS_BYTES);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_PEAK_BYTES);
    CHECK_PSS_READ_AT(1 * SEC); /* read, and unavailable */
    CHECK_STR_HAS(reason, "no workload PSS: cannot read ");
    CHECK_STR_HAS(reason, "/proc/11/smaps_rollup: no Pss and Private lines");
    CHECK_STR_HAS(reason, "RSS sum");
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 5800.0 * 1024); /* RSS is still there */

    /* one that cannot be read (permission, here a directory) */
    char path[700];
    fixture_path(path, sizeof path, "proc/11/smaps_rollup");
    unlink(path);
    mkdir(path, 0755);
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_STR_HAS(reason, "/proc/11/smaps_rollup: ");
    CHECK_STR_HAS(reason, strerror(EISDIR));
    rmdir(path);

    /* readable again: read again */
    put_pid(&worker);
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PSS_BYTES, 2200.0 * 1024);
    CHECK_MSG(reason[0] == '\0', "notes: %s", reason);

    /* a kernel before 4.14 has no smaps_rollup: said, and not asked again */
    fixture_path(path, sizeof path, "proc/10/smaps_rollup");
    unlink(path);
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_PSS_READ_AT(4 * SEC);
    CHECK_STR_HAS(reason, "/proc/10/smaps_rollup (smaps_rollup needs Linux 4.14)");
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 5800.0 * 1024);
    put_pid(&root);
    CHECK_EQ_I(read_at(st, &ctx, 5 * SEC), 0);
    CHECK_NAN(SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_STR_HAS(reason, "smaps_rollup needs Linux 4.14");
    src->close(st);
}

/* The sampler adds a PSS point only when the source read it; the tree's
 * memory is PSS then, and the RSS sum where PSS was never read. */
static void test_sampler_pss_series(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 0, 0, 100, 3000, 3000, 1, 0, 0, "trainer", 1200, 900};
    struct fake_pid worker = {11, 10, 0, 0, 101, 2800, 2800, 1, 0, 0, "pt_worker", 1000, 100};
    put_pid(&root);
    put_pid(&worker);
    struct sps__sampler *s = fixture_sampler(10);
    sps__sampler_tick_now(s); /* a fresh read: PSS whatever its budget says */
    sps__sampler_tick(s, 1, 0); /* never at the interval alone */
    root.pss_kb = 2200;
    put_pid(&root);
    sps__sampler_tick_now(s);
    sps__sampler_tick(s, 1, 0);
    const struct sps__sampler_result *r = sps__sampler_result(s);
    const struct sps__series *pss = &r->host[SPS_M_WORKLOAD_PSS_BYTES];
    CHECK_EQ_U(r->host[SPS_M_WORKLOAD_RSS_BYTES].n, 4);
    CHECK_EQ_U(pss->n, 2);
    CHECK_EQ_U(r->host[SPS_M_WORKLOAD_USS_BYTES].n, 2);
    CHECK_NEAR(pss->min, 2200.0 * 1024, 0);
    CHECK_NEAR(pss->max, 3200.0 * 1024, 0);
    CHECK_NEAR(r->host[SPS_M_WORKLOAD_PSS_PEAK_BYTES].max, 3200.0 * 1024, 0);
    CHECK_EQ_I(sps__tree_memory_metric(r), SPS_M_WORKLOAD_PSS_BYTES);
    CHECK_EQ_I(sps__tree_memory_peak_metric(r), SPS_M_WORKLOAD_PSS_PEAK_BYTES);
    CHECK_EQ_U(r->pss_reads, 2);
    CHECK(r->pss_cpu_seconds > 0);
    CHECK_NEAR(r->rss_sum_max_pss_current, 5800.0 * 1024, 0);
    /* the published sample keeps the last PSS through interval ticks, aged */
    struct sps__sample got;
    CHECK_EQ_I(sps__published_read(sps__sampler_published(s), &got, NULL), 0);
    CHECK_NEAR(got.host[SPS_M_WORKLOAD_PSS_BYTES], 3200.0 * 1024, 0);
    CHECK(got.host_read_ns[SPS_M_WORKLOAD_PSS_BYTES] < got.host_read_ns[SPS_M_WORKLOAD_RSS_BYTES]);

    /* the tree then doubles (more workers, a bigger model) before PSS could
     * be read again: the PSS peak no longer covers the tree's largest
     * moment, so the tree's memory is its RSS sum */
    root.rss_kb = 9000;
    put_pid(&root);
    sps__sampler_tick(s, 1, 0);
    CHECK_EQ_U(pss->n, 2);
    CHECK_NEAR(r->rss_sum_max_pss_current, 5800.0 * 1024, 0);
    CHECK_EQ_I(sps__tree_memory_metric(r), SPS_M_WORKLOAD_RSS_BYTES);
    CHECK_EQ_I(sps__tree_memory_peak_metric(r), SPS_M_WORKLOAD_RSS_PEAK_BYTES);
    CHECK_EQ_I(sps__published_read(sps__sampler_published(s), &got, NULL), 0);
    CHECK(isnan(got.host[SPS_M_WORKLOAD_PSS_BYTES])); /* a capture now says the RSS sum */
    sps__sampler_close(s);

    /* no smaps_rollup anywhere: the tree's memory is the RSS sum */
    char path[700];
    fixture_path(path, sizeof path, "proc/10/smaps_rollup");
    unlink(path);
    s = fixture_sampler(10);
    sps__sampler_tick_now(s);
    r = sps__sampler_result(s);
    CHECK_EQ_U(r->host[SPS_M_WORKLOAD_PSS_BYTES].n, 0);
    CHECK_EQ_I(sps__tree_memory_metric(r), SPS_M_WORKLOAD_RSS_BYTES);
    CHECK_EQ_I(sps__tree_memory_peak_metric(r), SPS_M_WORKLOAD_RSS_PEAK_BYTES);
    CHECK_STR_HAS(r->sources[SPS_SOURCE_PROC].note, "smaps_rollup needs Linux 4.14");
    sps__sampler_close(s);
}

/* ------------------------------------------------------ the two cadences */

/* At the interval alone a read gives the tree's CPU time and memory and
 * nothing else (the rest keeps its last values in the sampler); new
 * processes wait for the next full read. */
static void test_interval_only_reads(void) {
    fixture_new();
    put_system();
    struct fake_pid root = {10, 1, 50, 30, 100, 2000, 3000, 4, 100, 200};
    put_pid(&root);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1);
    CHECK_VAL(SPS_M_WORKLOAD_THREADS, 4);

    root.utime += 100;
    root.rss_kb = 4000;
    root.threads = 9;
    root.read_bytes += 50;
    put_pid(&root);
    struct fake_pid child = {11, 10, 5, 5, 101, 1000, 1000, 1, 0, 0};
    put_pid(&child);
    put_cpu(200, 0, 50, 900, 50, 0, 0, 0, 0);
    ctx.interval_only = 1;
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, 180 / clk_tck());
    CHECK_VAL(SPS_M_WORKLOAD_CPU_PERCENT, 100.0 * 100 / clk_tck());
    CHECK_VAL(SPS_M_WORKLOAD_RSS_BYTES, 4000.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_RSS_PEAK_BYTES, 4000.0 * 1024);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1); /* the child waits for a listing */
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        if (sps_host_metric_info(i)->cadence != SPS_EVERY_INTERVAL)
            CHECK_MSG(isnan(m((enum sps_host_metric)i)), "%s read at the interval alone",
                      sps_host_metric_info(i)->name);

    ctx.interval_only = 0;
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 2);
    CHECK_VAL(SPS_M_WORKLOAD_THREADS, 10);
    CHECK_VAL(SPS_M_WORKLOAD_DISK_READ_BYTES, 50.0);
    CHECK_VAL(SPS_M_WORKLOAD_CPU_SECONDS, 190 / clk_tck());
    CHECK_VAL(SPS_M_SYSTEM_CPU_PERCENT, 100.0 * 100 / 200); /* since the full read at 1 s */
    CHECK(m(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES) > 0);
    src->close(st);
}

/* /proc is listed again only when /proc/loadavg's last pid has moved, at
 * most every 4th full read; a loadavg that does not parse lists every 4th
 * full read (and a tree without the file, every full read). */
static void test_listing_waits_for_a_new_pid(void) {
    fixture_new();
    put_system();
    put("proc/loadavg", "0.10 0.20 0.30 1/120 500\n");
    struct fake_pid root = {10, 1, 50, 0, 100, 1000, 1000, 1, 0, 0};
    put_pid(&root);
    struct sps__source_ctx ctx = ctx_for(10);
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, 1 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1);

    struct fake_pid child = {11, 10, 5, 5, 101, 1000, 1000, 1, 0, 0};
    put_pid(&child);
    CHECK_EQ_I(read_at(st, &ctx, 2 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1); /* no pid made since the listing */

    /* a pid was made: /proc is listed, but at most every 4th full read
     * (open listed it; the reads at 1, 2 and 3 s were the 1st to 3rd since) */
    put("proc/loadavg", "0.10 0.20 0.30 1/121 501\n");
    CHECK_EQ_I(read_at(st, &ctx, 3 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1);
    CHECK_EQ_I(read_at(st, &ctx, 4 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 2);

    struct fake_pid grandchild = {12, 11, 5, 5, 102, 1000, 1000, 1, 0, 0};
    put_pid(&grandchild);
    put("proc/loadavg", "no pid here\n"); /* cannot tell: every 4th full read lists */
    for (int t = 5; t < 8; t++) {
        CHECK_EQ_I(read_at(st, &ctx, t * SEC), 0);
        CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 2);
    }
    CHECK_EQ_I(read_at(st, &ctx, 8 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 3);

    /* a fresh read (a capture asked for now) lists whenever a pid was made */
    struct fake_pid another = {13, 10, 5, 5, 103, 1000, 1000, 1, 0, 0};
    put_pid(&another);
    put("proc/loadavg", "0.10 0.20 0.30 1/122 502\n");
    CHECK_EQ_I(read_at(st, &ctx, 9 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 3);
    ctx.due_now = 1;
    CHECK_EQ_I(read_at(st, &ctx, 10 * SEC), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 4);
    src->close(st);
}

/* ------------------------------------------------------------ real /proc */

static volatile double burn_sink;

static int open_descriptors(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* A tree process's files stay open between reads and are all closed with
 * the source; reads through them see the same process as reads by path. */
static void test_kept_descriptors(void) {
    int before = open_descriptors();
    struct sps__source_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.root = "";
    ctx.tree_pid = (int)getpid();
    void *st = open_ok(&ctx);
    for (int i = 1; i <= 12; i++) { /* listing reads and reads between them */
        CHECK_EQ_I(read_at(st, &ctx, (int64_t)i * SEC / 4), 0);
        CHECK_NEAR(sample.host[SPS_M_WORKLOAD_PROCESSES], 1, 0);
        CHECK(sample.host[SPS_M_WORKLOAD_RSS_BYTES] > 0);
        CHECK(sample.host[SPS_M_WORKLOAD_THREADS] >= 1);
    }
    CHECK(open_descriptors() > before); /* kept, not reopened per read */
    sps__source_proc.close(st);
    CHECK_EQ_I(open_descriptors(), before);
}

static void test_real_proc(void) {
    struct sps__source_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.root = "";
    ctx.tree_pid = (int)getpid();
    void *st = open_ok(&ctx);

    /* burn CPU until the kernel has charged at least a tick to this process */
    struct timespec t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (;;) {
        for (int i = 0; i < 1000000; i++)
            burn_sink += sqrt((double)i);
        struct timespec t;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        if ((t.tv_sec - t0.tv_sec) * 1e9 + (t.tv_nsec - t0.tv_nsec) > 1e8)
            break;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    CHECK_EQ_I(read_at(st, &ctx, (int64_t)now.tv_sec * SEC + now.tv_nsec), 0);
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1);
    CHECK(m(SPS_M_WORKLOAD_THREADS) >= 1);
    CHECK(m(SPS_M_WORKLOAD_RSS_BYTES) > 0);
    CHECK(m(SPS_M_WORKLOAD_RSS_PEAK_BYTES) >= m(SPS_M_WORKLOAD_RSS_BYTES));
    CHECK(m(SPS_M_WORKLOAD_CPU_SECONDS) > 0);
    CHECK(m(SPS_M_SYSTEM_MEMORY_TOTAL_BYTES) > 0);
    CHECK(m(SPS_M_SYSTEM_MEMORY_USED_BYTES) > 0);
    CHECK(m(SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES) >= 0);
    CHECK(sps__proc_tree_contains(st, (int)getpid()));
    CHECK(!sps__proc_tree_contains(st, 1));
    if (reason[0])
        fprintf(stderr, "  note: %s\n", reason);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_I(read_at(st, &ctx, (int64_t)now.tv_sec * SEC + now.tv_nsec + (i + 1) * SEC / 10), 0);
    CHECK(m(SPS_M_WORKLOAD_CPU_PERCENT) >= 0);
    src->close(st);
}

static int64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * SEC + t.tv_nsec;
}

/*
 * On the real /proc the tree's CPU time comes from each process's CPU
 * clock: nanoseconds, where /proc/PID/stat counts 10 ms ticks (and
 * truncates utime and stime apiece).  A child burns CPU and stops itself;
 * the source's figure then matches the scheduler's count in
 * /proc/PID/schedstat to within a millisecond (stat's could be off by up
 * to 20).
 */
static void test_real_cpu_time_is_exact(void) {
    pid_t c = fork();
    if (c == 0) {
        struct timespec t0, t;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        do {
            for (int i = 0; i < 100000; i++)
                burn_sink += sqrt((double)i);
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1e9 + (t.tv_nsec - t0.tv_nsec) < 2.37e8);
        raise(SIGSTOP);
        _exit(0);
    }
    int status;
    CHECK(waitpid(c, &status, WUNTRACED) == c && WIFSTOPPED(status));
    struct sps__source_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.root = "";
    ctx.tree_pid = (int)c;
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, mono_ns()), 0);
    ctx.interval_only = 1; /* the clock is read from the second read on */
    CHECK_EQ_I(read_at(st, &ctx, mono_ns() + SEC / 10), 0);
    double sampled = m(SPS_M_WORKLOAD_CPU_SECONDS);
    src->close(st);
    /* the scheduler's own count for the stopped child, in ns (the first
     * field of schedstat); rusage after reaping would also count the
     * kernel tearing the process down, a millisecond or more under ASan */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)c);
    FILE *f = fopen(path, "r");
    unsigned long long run_ns = 0;
    CHECK(f && fscanf(f, "%llu", &run_ns) == 1);
    if (f)
        fclose(f);
    double kernel = (double)run_ns * 1e-9;
    kill(c, SIGKILL);
    CHECK(waitpid(c, &status, 0) == c);
    CHECK_NEAR(sampled, kernel, 1e-3);
    CHECK(sampled >= 0.237);
}

/*
 * A real tree: this process (a subreaper, like `stepscope run`) starts C,
 * the tree's root; C starts G and exits; G, reparented to this process,
 * stays in the tree.  Pipes order every step, so nothing depends on timing.
 */
static void test_real_tree(void) {
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
    int ready[2], go[2];
    int64_t listings = 0;
    if (pipe(ready) != 0 || pipe(go) != 0) {
        perror("pipe");
        exit(99);
    }
    pid_t c = fork();
    if (c == 0) {
        pid_t g = fork();
        if (g == 0) {
            pid_t self = getpid();
            if (write(ready[1], &self, sizeof self) != (ssize_t)sizeof self)
                _exit(1);
            for (;;)
                pause();
        }
        char byte;
        if (read(go[0], &byte, 1) != 1) /* stay until the test has seen G */
            _exit(1);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    pid_t g = 0;
    CHECK(read(ready[0], &g, sizeof g) == (ssize_t)sizeof g);

    struct sps__source_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.root = "";
    ctx.tree_pid = (int)c;
    void *st = open_ok(&ctx);
    CHECK_EQ_I(read_at(st, &ctx, mono_ns() + (++listings) * SEC), 0); /* apart enough to list /proc */
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 2);
    CHECK(sps__proc_tree_contains(st, (int)c));
    CHECK(sps__proc_tree_contains(st, (int)g));
    CHECK(!sps__proc_tree_contains(st, (int)getpid()));

    /* C exits and is reaped: G now has this process as its parent */
    CHECK(write(go[1], "x", 1) == 1);
    int status;
    CHECK(waitpid(c, &status, 0) == c);
    CHECK_EQ_I(read_at(st, &ctx, mono_ns() + (++listings) * SEC), 0); /* apart enough to list /proc */
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 1);
    CHECK(!sps__proc_tree_contains(st, (int)c));
    CHECK(sps__proc_tree_contains(st, (int)g));

    kill(g, SIGKILL);
    CHECK(waitpid(g, &status, 0) == g);
    CHECK_EQ_I(read_at(st, &ctx, mono_ns() + (++listings) * SEC), 0); /* apart enough to list /proc */
    CHECK_VAL(SPS_M_WORKLOAD_PROCESSES, 0);
    CHECK(!sps__proc_tree_contains(st, (int)g));
    CHECK(m(SPS_M_WORKLOAD_CPU_SECONDS) >= 0);
    src->close(st);
    close(ready[0]);
    close(go[1]);
}

int main(void) {
    RUN_TEST(test_vtable);
    RUN_TEST(test_system_cpu);
    RUN_TEST(test_memory);
    RUN_TEST(test_network);
    RUN_TEST(test_network_no_space);
    RUN_TEST(test_network_many_interfaces);
    RUN_TEST(test_tree_discovery);
    RUN_TEST(test_rss_peak);
    RUN_TEST(test_disk);
    RUN_TEST(test_disk_unreadable);
    RUN_TEST(test_workload_cpu_percent);
    RUN_TEST(test_tree_pid_change);
    RUN_TEST(test_many_processes);
    RUN_TEST(test_tree_rss_readings);
    RUN_TEST(test_sampler_process_series);
    RUN_TEST(test_sampler_process_cap);
    RUN_TEST(test_missing_stat);
    RUN_TEST(test_malformed_files);
    RUN_TEST(test_missing_optional_files);
    RUN_TEST(test_tree_pss);
    RUN_TEST(test_tree_pss_unreadable);
    RUN_TEST(test_sampler_pss_series);
    RUN_TEST(test_interval_only_reads);
    RUN_TEST(test_listing_waits_for_a_new_pid);
    RUN_TEST(test_real_proc);
    RUN_TEST(test_real_cpu_time_is_exact);
    RUN_TEST(test_real_tree);
    RUN_TEST(test_kept_descriptors);
    return check_report();
}
