/*
 * test_proc_parse.c - the proc source's /proc file parsers on their own
 * (src/platform/linux/proc_parse.c): exact values from texts written the
 * way the kernel writes them, and the malformed texts each must refuse.
 * test_source_proc checks the source end to end on fixture trees.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "platform/linux/proc_parse.h"

static void test_pid_stat(void) {
    struct sps__proc_pid_stat ps;
    /* comm holds spaces and ')': fields count from the last ')' */
    const char *text = "4242 (a) (b c) S 17 4242 4242 0 -1 4194560 1234 0 5 0 300 45 0 0 20 0 3 0 987654 "
                       "123456789 512 18446744073709551615\n";
    CHECK_EQ_I(sps__proc_parse_pid_stat(text, &ps), 0);
    CHECK_EQ_I(ps.ppid, 17);
    CHECK_EQ_U(ps.cpu_ticks, 345);
    CHECK_EQ_U(ps.start_ticks, 987654);
    CHECK_EQ_I(sps__proc_parse_pid_stat("4242 (x) S 17 4242 4242 0 -1 4194560 1234 0 5 0 300\n", &ps), -1);
    CHECK_EQ_I(sps__proc_parse_pid_stat("no parenthesis here", &ps), -1);
}

static void test_cpu_line(void) {
    struct sps__proc_cpu_times t;
    CHECK_EQ_I(sps__proc_parse_cpu_line("cpu  10 20 30 400 50 6 7 8 9 10\ncpu0 1 2 3 4\n", &t), 0);
    CHECK_EQ_U(t.busy, 10 + 20 + 30 + 6 + 7 + 8);
    CHECK_EQ_U(t.idle, 400);
    CHECK_EQ_U(t.iowait, 50);
    /* an old kernel's four fields: no iowait, irq, softirq or steal */
    CHECK_EQ_I(sps__proc_parse_cpu_line("cpu 1 2 3 4\n", &t), 0);
    CHECK_EQ_U(t.busy, 6);
    CHECK_EQ_U(t.iowait, 0);
    CHECK_EQ_I(sps__proc_parse_cpu_line("cpu 1 2 3\n", &t), -1);
    CHECK_EQ_I(sps__proc_parse_cpu_line("cpu0 1 2 3 4 5\n", &t), -1);
}

static void test_meminfo(void) {
    struct sps__proc_meminfo m;
    CHECK_EQ_I(sps__proc_parse_meminfo("MemTotal:       16000 kB\nMemFree: 1 kB\nMemAvailable:    4000 kB\n"
                                       "SwapTotal: 2048 kB\nSwapFree: 1024 kB\n",
                                       &m),
               0);
    CHECK_EQ_U(m.total_kb, 16000);
    CHECK_EQ_U(m.available_kb, 4000);
    CHECK(m.has_available && m.has_swap);
    CHECK_EQ_U(m.swap_total_kb - m.swap_free_kb, 1024);
    /* before Linux 3.14: no MemAvailable; SwapFree alone is not swap */
    CHECK_EQ_I(sps__proc_parse_meminfo("MemTotal: 8 kB\nSwapFree: 1 kB\n", &m), 0);
    CHECK(!m.has_available && !m.has_swap);
    CHECK_EQ_I(sps__proc_parse_meminfo("MemFree: 8 kB\n", &m), -1);
    CHECK(!m.has_total);
}

static void test_netdev_line(void) {
    char name[32];
    uint64_t rx = 0, tx = 0;
    CHECK_EQ_I(sps__proc_parse_netdev_line("  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n  lo: 1 2", name,
                                           sizeof name, &rx, &tx),
               0);
    CHECK(strcmp(name, "eth0") == 0);
    CHECK_EQ_U(rx, 1000);
    CHECK_EQ_U(tx, 2000);
    /* a name of 31 bytes fits 32; one of 32 does not */
    const char *long31 = "abcdefghijklmnopqrstuvwxyz01234: 1 0 0 0 0 0 0 0 2 0\n";
    const char *long32 = "abcdefghijklmnopqrstuvwxyz012345: 1 0 0 0 0 0 0 0 2 0\n";
    CHECK_EQ_I(sps__proc_parse_netdev_line(long31, name, sizeof name, &rx, &tx), 0);
    CHECK_EQ_U(strlen(name), 31);
    CHECK_EQ_I(sps__proc_parse_netdev_line(long32, name, sizeof name, &rx, &tx), -1);
    /* the transmit counter missing; the colon on the next line only */
    CHECK_EQ_I(sps__proc_parse_netdev_line("eth0: 1 0 0 0 0 0 0 0\n", name, sizeof name, &rx, &tx), -1);
    CHECK_EQ_I(sps__proc_parse_netdev_line("eth0 1 2\nx: 1", name, sizeof name, &rx, &tx), -1);
    CHECK_EQ_I(sps__proc_parse_netdev_line(": 1 0 0 0 0 0 0 0 2\n", name, sizeof name, &rx, &tx), -1);
}

static void test_status(void) {
    struct sps__proc_status st;
    sps__proc_parse_status("Name:\tpt_data_worker_long\nUmask:\t0022\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"
                           "Threads:\t7\n",
                           &st);
    CHECK(st.has_name && st.has_rss && st.has_hwm && st.has_threads);
    CHECK_MSG(strcmp(st.name, "pt_data_worker_") == 0, "name %s", st.name); /* cut to 15 bytes */
    CHECK_EQ_U(st.rss_kb, 1024);
    CHECK_EQ_U(st.hwm_kb, 2048);
    CHECK_EQ_U(st.threads, 7);
    /* a zombie: no memory lines */
    sps__proc_parse_status("Name:\tz\nState:\tZ (zombie)\nThreads:\t1\n", &st);
    CHECK(st.has_name && !st.has_rss && !st.has_hwm && st.has_threads);
}

static void test_small_files(void) {
    uint64_t a = 0, b = 0;
    CHECK_EQ_I(sps__proc_parse_io("rchar: 9\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n", &a, &b),
               0);
    CHECK_EQ_U(a, 4096);
    CHECK_EQ_U(b, 8192);
    CHECK_EQ_I(sps__proc_parse_io("read_bytes: 4096\n", &a, &b), -1);
    CHECK_EQ_I(sps__proc_parse_smaps_rollup("00400000-7ffd [rollup]\nRss: 900 kB\nPss: 500 kB\n"
                                            "Private_Clean: 100 kB\nPrivate_Dirty: 200 kB\n",
                                            &a, &b),
               0);
    CHECK_EQ_U(a, 500 * 1024);
    CHECK_EQ_U(b, 300 * 1024);
    CHECK_EQ_I(sps__proc_parse_smaps_rollup("Pss: 500 kB\nPrivate_Clean: 100 kB\n", &a, &b), -1);
    CHECK_EQ_I(sps__proc_parse_statm_resident("2000 350 100 1 0 50 0\n", &a), 0);
    CHECK_EQ_U(a, 350);
    CHECK_EQ_I(sps__proc_parse_statm_resident("2000\n", &a), -1);
    CHECK_EQ_I(sps__proc_parse_last_pid("0.52 0.58 0.59 3/467 123456\n"), 123456);
    CHECK_EQ_I(sps__proc_parse_last_pid("0.52 0.58 0.59 3/467 x\n"), -1);
    CHECK_EQ_I(sps__proc_parse_last_pid("0.52 0.58 0.59 3/467 4294967296\n"), -1);
}

int main(void) {
    RUN_TEST(test_pid_stat);
    RUN_TEST(test_cpu_line);
    RUN_TEST(test_meminfo);
    RUN_TEST(test_netdev_line);
    RUN_TEST(test_status);
    RUN_TEST(test_small_files);
    return check_report();
}
