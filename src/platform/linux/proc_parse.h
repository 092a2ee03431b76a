/*
 * proc_parse.h - parsers of the /proc files the proc source reads: text in,
 * numbers out.  They hold no state, open nothing and allocate nothing, so
 * each can be tried on any text (a fixture's, a truncated read's).
 *
 * Every parser takes NUL-terminated text and returns 0 when the lines it
 * needs are there, -1 when they are not (the caller says which file was
 * malformed); outputs are written only on success unless a comment says
 * otherwise.  Thread safety: none needed (pure functions).
 */
#ifndef SPS_PROC_PARSE_H
#define SPS_PROC_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "sources/source.h" /* SPS_PROC_COMM_LEN */

/*
 * Parse "Key: value" lines (meminfo, status, io): for each key that
 * starts a line (keys include their ':'), its number goes to vals[i] and
 * bit i of the result is set.  Stops once every key is found.  A key whose
 * value is not a number counts as not found.  nkeys is at most 31.
 */
unsigned sps__proc_parse_keyed(const char *text, const char *const *keys, int nkeys, uint64_t *vals);

/* The "cpu " line of /proc/stat, in clock ticks: busy (user nice system irq
 * softirq steal), idle and iowait. */
struct sps__proc_cpu_times {
    uint64_t busy, idle, iowait;
};
/* -1 when the text does not start with "cpu " followed by four numbers or
 * more (older kernels stop before irq). */
int sps__proc_parse_cpu_line(const char *text, struct sps__proc_cpu_times *out);

/* /proc/meminfo's figures in KiB; has_* says which lines were there
 * (MemAvailable: Linux 3.14 and later). */
struct sps__proc_meminfo {
    uint64_t total_kb, available_kb, swap_total_kb, swap_free_kb;
    int has_total, has_available, has_swap; /* has_swap: SwapTotal and SwapFree */
};
/* Always fills out (has_* 0 for what is missing); -1 when MemTotal is
 * missing. */
int sps__proc_parse_meminfo(const char *text, struct sps__proc_meminfo *out);

/* One interface line of /proc/net/dev ("  eth0: rx_bytes packets ... |
 * tx_bytes ..."): its name (cut at cap - 1 bytes is an error: a name as
 * long as cap is refused) and its received and transmitted byte counters.
 * line may run on past its '\n'; only the first line is read. */
int sps__proc_parse_netdev_line(const char *line, char *name, size_t cap, uint64_t *rx, uint64_t *tx);

/* The fields of /proc/PID/stat the tree needs. */
struct sps__proc_pid_stat {
    int ppid;
    uint64_t cpu_ticks; /* utime + stime */
    uint64_t start_ticks;
};
/* "pid (comm) state ppid ... utime stime ... starttime ...": comm may hold
 * spaces and ')', so fields are counted from the last ')'. */
int sps__proc_parse_pid_stat(const char *text, struct sps__proc_pid_stat *out);

/* The resident set of /proc/PID/statm (its second field), in pages. */
int sps__proc_parse_statm_resident(const char *text, uint64_t *pages);

/* /proc/PID/status: the command name (its "Name:" line, which the kernel
 * cuts to 15 bytes and escapes), VmRSS, VmHWM (KiB) and Threads.  has_*
 * says which lines were there: a zombie has no memory lines.  Always fills
 * out; never fails (a status without these lines has none of them). */
struct sps__proc_status {
    char name[SPS_PROC_COMM_LEN];
    uint64_t rss_kb, hwm_kb, threads;
    int has_name, has_rss, has_hwm, has_threads;
};
void sps__proc_parse_status(const char *text, struct sps__proc_status *out);

/* /proc/PID/io's read_bytes and write_bytes (both needed). */
int sps__proc_parse_io(const char *text, uint64_t *read_bytes, uint64_t *write_bytes);

/* /proc/PID/smaps_rollup's Pss and its USS (Private_Clean + Private_Dirty),
 * in bytes (all three lines needed). */
int sps__proc_parse_smaps_rollup(const char *text, uint64_t *pss_bytes, uint64_t *uss_bytes);

/* /proc/loadavg's last field, the pid most recently given to a process or
 * thread; -1 when it is not there or not a pid. */
int64_t sps__proc_parse_last_pid(const char *loadavg);

#endif
