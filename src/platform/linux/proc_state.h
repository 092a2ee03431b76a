/*
 * proc_state.h - the proc source's state, shared by its files (internal to
 * the source; nothing outside src/platform/linux includes it):
 *
 *   source_proc.c   the source's vtable: open, read, close
 *   proc_parse.c    the /proc file parsers (text in, numbers out)
 *   proc_system.c   the system half: host CPU, memory, swap, network
 *   proc_tree.c     walking the tree: the table of /proc's pids, listing,
 *                   classification, each tree process's kept files
 *   proc_members.c  per-process readings of the tree and the tree's totals
 *   proc_pss.c      the tree's PSS and the budget that decides when to read it
 *
 * Calls go one way: source_proc.c calls the system half and the members;
 * the members call the tree walk and the PSS; the PSS reads the tree's
 * table and asks the walk whether a pid still exists; every file calls the
 * parsers, which call nothing.
 * The state belongs to the sampler thread that opened the source (source.h
 * says how its answers may be read from elsewhere).
 */
#ifndef SPS_PROC_STATE_H
#define SPS_PROC_STATE_H

#include "sources/source.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

/* /proc/net/dev is read into a buffer that starts at NETDEV_TEXT_MIN bytes
 * and doubles up to NETDEV_TEXT_MAX (about 30000 interfaces). */
#define NETDEV_TEXT_MIN 8192
#define NETDEV_TEXT_MAX (4u << 20)

/* Classification of one process. */
enum pid_class { PID_UNCLASSIFIED = 0, PID_MEMBER, PID_OUTSIDE };

/* The files of a tree process read on every read.  They stay open:
 * opening a /proc/PID file (a path walk that makes a new inode) costs the
 * kernel more than reading it, and a descriptor stays bound to the process
 * it was opened for, so a recycled pid cannot be misread through it (its
 * reads fail with ESRCH once the process is gone).  At most
 * MAX_OPEN_MEMBERS processes keep theirs; the rest open and close. */
enum member_file { FILE_STAT, FILE_STATM, FILE_STATUS, FILE_IO, MEMBER_FILES };
#define MAX_OPEN_MEMBERS 64

/* One process the source knows about.  The table holds every pid in /proc,
 * sorted by pid. */
struct tracked_pid {
    int pid;
    int ppid;
    uint64_t dir_ino;     /* inode of /proc/PID as listed: a new one means the pid may be reused */
    uint64_t start_ticks; /* starttime: with pid, names one process */
    uint64_t cpu_ns;      /* CPU time (all its threads) at the last successful read */
    clockid_t cpu_clock;  /* its process CPU clock, when has_clock */
    uint64_t disk_read;   /* read_bytes / write_bytes at the last successful read */
    uint64_t disk_write;
    int fd[MEMBER_FILES]; /* a tree process's files, kept open (-1: not open) */
    uint64_t hwm_bytes;   /* VmHWM at the last status read */
    uint64_t rss_bytes;   /* its resident set at the last read, when rss_read */
    /* its CPU time (from its clock) when its statm or status, its status,
     * and its io were last read: a process that has not run since cannot
     * have changed them (see proc_members.c) */
    uint64_t rss_cpu_ns, status_cpu_ns, io_cpu_ns;
    unsigned char rss_known, status_known, io_known;
    int threads;          /* Threads: at the last status read */
    char comm[SPS_PROC_COMM_LEN]; /* Name: at the last status read */
    unsigned char cls;      /* enum pid_class */
    unsigned char verify;   /* dir_ino changed: re-read stat to see whether it is another process */
    unsigned char alive;    /* its stat was read by the last scan */
    unsigned char has_stat; /* start_ticks and ppid are known */
    unsigned char has_clock; /* cpu_clock is set */
    unsigned char gone;     /* a read through its kept descriptors failed: it exited */
    unsigned char rss_read; /* the latest read of the tree read its resident set */
    unsigned char rss_reported; /* a reading of it went out through sps__proc_tree_rss */
    unsigned walk;          /* the last classification walk that passed here */
};

/* A pid listed in /proc with its directory's inode. */
struct listed_pid {
    int pid;
    uint64_t ino;
};

/* One network interface of /proc/net/dev and its counters at the last read. */
struct net_iface {
    char name[32];
    uint64_t rx, tx;
    unsigned seen; /* generation of the last parse that listed it */
};

/* A TOTAL's rate over the interval between two consecutive good reads. */
struct rate_tracker {
    double last_total;
    int64_t last_ns;
    int valid;
};

/* What one scan of the tree found. */
struct tree_scan {
    uint64_t cpu_ns;     /* live + departed */
    uint64_t disk_read;  /* live + departed */
    uint64_t disk_write;
    uint64_t rss_bytes;  /* sum of VmRSS */
    uint64_t hwm_bytes;  /* largest VmHWM */
    int processes;
    int threads;
    int disk_ok;         /* every live tree process's io was read */
};

struct proc_state {
    int stat_fd, meminfo_fd, netdev_fd, loadavg_fd;
    long clk_tck;
    int own_proc; /* ROOT/proc is this process's own: pids there are pids here */

    /* system CPU: the "cpu " line's fields at the previous read */
    uint64_t cpu_busy, cpu_idle, cpu_iowait;

    /* network */
    struct net_iface *ifaces;
    size_t niface, iface_cap;
    unsigned net_generation;
    int net_baseline; /* counters seen once: later reads add deltas */
    uint64_t net_rx_total, net_tx_total;
    struct rate_tracker net_rx_rate, net_tx_rate;

    /* the process tree */
    int tree_pid;
    DIR *proc_dir;
    int skip_to_pids; /* proc_dir is procfs and PROCFS_PIDS_POS works there */
    struct tracked_pid *table, *spare; /* spare: where the next merge writes */
    size_t ntable, table_cap;
    struct listed_pid *listed;
    size_t nlisted, listed_cap;
    size_t *members; /* indices of the tree's processes in table, found by the last full read */
    size_t nmembers, members_cap;
    unsigned walk;          /* numbers classification walks */
    int listed_once;
    int open_members; /* tracked processes holding descriptors */
    int64_t last_pid_listed; /* /proc/loadavg's last pid when /proc was last listed; -1: unknown */
    unsigned full_reads_unlisted; /* full reads since /proc was last listed */
    int root_start_known;
    uint64_t root_start_ticks;
    uint64_t departed_cpu_ns, departed_disk_read, departed_disk_write;
    int disk_baseline_known;
    uint64_t disk_read_baseline, disk_write_baseline;
    double rss_peak_bytes;
    struct rate_tracker cpu_rate, disk_read_rate, disk_write_rate;
    /* the tree's PSS (pss_due in proc_pss.c decides when).  Full reads of
     * this tree, open's included: `stepscope run`'s sampler first reads the
     * tree between its fork and its exec, whose PSS would say nothing, so
     * the first PSS read waits for the second */
    unsigned tree_full_reads;
    int64_t tree_seen_ns;    /* the first full read of the tree that had a time (0: none yet) */
    int64_t pss_read_ns;     /* the last PSS read (0: none yet) */
    int64_t pss_cost_ns;     /* its CPU cost */
    double pss_rss_bytes;    /* the tree's RSS sum at that read */
    int pss_current;         /* the published PSS is that read's, still current (see sps__proc_pss_keep_current) */
    double pss_peak_bytes;   /* the largest sum read */
    uint64_t pss_reads, pss_cpu_ns; /* every PSS read so far and their CPU cost */
    char pss_unsupported[200]; /* why it cannot be read (no smaps_rollup, denied); "" while it can */
    /* each tree process's resident set at the latest read, in pid order */
    struct sps__proc_rss *rss_readings;
    size_t nrss_readings, rss_readings_cap;

    char text[8192]; /* the file being parsed (all but /proc/net/dev are small) */
    char *netdev_text; /* /proc/net/dev: one line per interface, so it grows */
    size_t netdev_cap;
};

/* ------------------------------------------------ reasons, rates, counters */

/* Append "; note" (or the note alone) to reason, cut to cap. */
static inline void add_note(char *reason, size_t cap, const char *note) {
    if (!reason || cap == 0)
        return;
    size_t len = strnlen(reason, cap - 1);
    snprintf(reason + len, cap - len, "%s%s", len ? "; " : "", note);
}

/* "what path: why" as the read's error.  The first error of a read is
 * kept: later ones would only hide its cause. */
static inline void set_error(char *reason, size_t cap, int *failed, const char *what, const char *path,
                             const char *why) {
    if (!*failed && reason && cap > 0)
        snprintf(reason, cap, "%s %s: %s", what, path, why);
    *failed = 1;
}

static inline double rate_update(struct rate_tracker *r, double total, int64_t now_ns) {
    double rate = NAN;
    if (r->valid && now_ns > r->last_ns)
        rate = (total - r->last_total) / ((double)(now_ns - r->last_ns) / 1e9);
    r->last_total = total;
    r->last_ns = now_ns;
    r->valid = 1;
    return rate;
}

/* A counter's growth; iowait (and on some kernels idle) can step back. */
static inline uint64_t growth(uint64_t now, uint64_t before) {
    return now > before ? now - before : 0;
}

/* ------------------------------------------------------- the system half */

/* At open: open the system files, take the CPU times and the network
 * counters the first read measures from.  Returns 0, or -1 with the reason
 * in reason (/proc/stat unreadable or malformed: the source cannot open). */
int sps__proc_system_open(struct proc_state *st, const char *root, char *reason, size_t cap);

/* A full read's host CPU, memory, swap and network into s.  A malformed
 * file sets *failed and the reason; an unreadable one adds a note. */
void sps__proc_system_read(struct proc_state *st, const char *root, struct sps__sample *s, int64_t now_ns,
                           char *reason, size_t cap, int *failed);

/* ------------------------------------------------------- the tree walk */

/* The table's entry for pid, or NULL. */
struct tracked_pid *sps__proc_find_tracked(struct proc_state *st, int pid);

/* Close a tracked process's kept files (it is gone, or the table is
 * dropped). */
void sps__proc_close_member_files(struct proc_state *st, struct tracked_pid *e);

/* Read one of a process's files into st->text (see proc_tree.c).  Returns
 * the length or -errno. */
ssize_t sps__proc_read_pid_file(struct proc_state *st, const char *root, struct tracked_pid *e,
                                enum member_file which);

/* CPU time in /proc/PID/stat's clock ticks, in nanoseconds. */
uint64_t sps__proc_ticks_to_ns(const struct proc_state *st, uint64_t ticks);

/* Does e's CPU time come from its CPU clock? */
int sps__proc_uses_cpu_clock(const struct proc_state *st, const struct tracked_pid *e);

/* ROOT/proc/PID still exists (the process did not exit since listing). */
int sps__proc_pid_exists(const char *root, int pid);

/* A full read's walk: open ROOT/proc, list it when a process may have been
 * made (now: whatever the cadence says), read the stats that classification
 * needs, classify what is new and note the tree's members.  Returns 0 or
 * -errno (ROOT/proc cannot be listed, out of memory). */
int sps__proc_tree_walk(struct proc_state *st, const char *root, int now);

/* A read at the interval alone: the members' CPU time (from their stat
 * where no CPU clock gives it) and whether they are still alive. */
void sps__proc_tree_recheck_members(struct proc_state *st, const char *root);

/* ------------------------------------------------------- the members */

/* Read the tree into s: totals, the per-process readings, and on a full
 * read threads, disk and (when due, or pss_now) PSS. */
void sps__proc_workload_read(struct proc_state *st, const char *root, struct sps__sample *s, int full, int pss_now,
                             int64_t now_ns, char *reason, size_t cap);

/* Forget the tree: a new tree_pid starts from nothing. */
void sps__proc_reset_tree(struct proc_state *st, int tree_pid);

/* The tree as it is at open: what its disk counters already hold is not
 * counted. */
void sps__proc_take_tree_baseline(struct proc_state *st, const char *root, char *reason, size_t cap);

/* ------------------------------------------------------- the tree's PSS */

/* On a full read: when due (or due_now), every live member's smaps_rollup,
 * summed into the PSS, its peak and the USS. */
void sps__proc_pss_read(struct proc_state *st, const char *root, struct sps__sample *s, int due_now, double rss_bytes,
                        int64_t now_ns, char *reason, size_t cap);

/* On every read that read the RSS sum: the last PSS stands while the sum
 * stays near the one it was read at. */
void sps__proc_pss_keep_current(struct proc_state *st, struct sps__sample *s, double rss_bytes, int64_t now_ns);

#endif
