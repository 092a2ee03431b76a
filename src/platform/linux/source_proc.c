/*
 * source_proc.c - the proc source: system CPU, memory, swap and network
 * from /proc/stat, /proc/meminfo and /proc/net/dev, and the watched
 * process tree's CPU time, memory, threads and disk I/O from
 * /proc/PID/{stat,statm,status,io}.
 *
 * A read at the interval alone (ctx->interval_only) reads only the tree's
 * CPU time and resident memory: per tree process its CPU clock (the
 * kernel's nanosecond sum over its threads, one syscall, where /proc is
 * this process's own) or else its stat, and its statm.  A full read adds
 * the system files, which stay open and are re-read with pread, and looks
 * for new tree processes.
 *
 * New processes are found by listing /proc, skipped while /proc/loadavg's
 * last allocated pid has not moved (no process or thread was made
 * anywhere).  Of the processes outside the tree only those not yet
 * classified (new ones, or a pid whose /proc directory changed) have their
 * stat read, to learn their parent.  A process keeps its classification
 * while it lives (the pair pid, start time names it), so a worker orphaned
 * and reparented to the subreaper stays in the tree.
 *
 * Totals of the tree (CPU time, disk bytes) add the last values seen for
 * tree processes that have gone, so they never drop when a worker exits.
 *
 * Each read also leaves, beside the sample, each tree process's own
 * resident set (sps__proc_tree_rss): the sampler keeps a series of it per
 * process, which the published sample has no room for.
 *
 * The tree's PSS and USS come from each process's smaps_rollup on full
 * reads when due: the kernel walks every page the process maps to write
 * that file (about 20 ns per resident KiB, milliseconds with torch loaded),
 * so a read is due only when the time since the last one pays for its
 * predicted cost at SPS_PSS_CPU_SHARE of a core (pss_due), unless
 * ctx->due_now asks for one now; between reads the last PSS stands only
 * while the tree's RSS sum stays near what it was (pss_keep_current).
 */
#include "sources/source.h"
#include "sources/sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/*
 * procfs lists its own entries (cpuinfo, sys, ...) before the pids; from
 * position 256 (FIRST_PROCESS_ENTRY in fs/proc) it lists "self",
 * "thread-self", then the pids.  Seeking there saves a quarter of the
 * listing's cost.  Used only where a probe at open found "self" at that position.
 */
#define PROCFS_PIDS_POS 256
#define PROCFS_MAGIC 0x9fa0 /* PROC_SUPER_MAGIC */

/* /proc is listed (when a pid was made since the last listing) at most
 * every this many full reads: a listing, with the stat reads that classify
 * the machine's new processes, costs more than all else a read does, and on
 * a busy machine some pid is always new (measured on a busy 2-core VM: the
 * sampler's share of a core fell from 0.111% to 0.088% going from 2 to 4). */
#define LISTING_EVERY_FULL_READS 4

/* Classification of one process. */
enum pid_class { PID_UNCLASSIFIED = 0, PID_MEMBER, PID_OUTSIDE };

/* /proc/net/dev is read into a buffer that starts at NETDEV_TEXT_MIN bytes
 * and doubles up to NETDEV_TEXT_MAX (about 30000 interfaces). */
#define NETDEV_TEXT_MIN 8192
#define NETDEV_TEXT_MAX (4u << 20)

/* The files of a tree process read on every read.  They stay open:
 * opening a /proc/PID file (a path walk that makes a new inode) costs the
 * kernel more than reading it, and a descriptor stays bound to the process
 * it was opened for, so a recycled pid cannot be misread through it (its
 * reads fail with ESRCH once the process is gone).  At most
 * MAX_OPEN_MEMBERS processes keep theirs; the rest open and close. */
enum member_file { FILE_STAT, FILE_STATM, FILE_STATUS, FILE_IO, MEMBER_FILES };
static const char *const member_file_name[MEMBER_FILES] = {"stat", "statm", "status", "io"};
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
     * have changed them (see read_member) */
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
    /* the tree's PSS (pss_due decides when; see the file's head).  Full reads of this tree, open's included: `stepscope run`'s sampler
     * first reads the tree between its fork and its exec, whose PSS would
     * say nothing, so the first PSS read waits for the second */
    unsigned tree_full_reads;
    int64_t tree_seen_ns;    /* the first full read of the tree that had a time (0: none yet) */
    int64_t pss_read_ns;     /* the last PSS read (0: none yet) */
    int64_t pss_cost_ns;     /* its CPU cost */
    double pss_rss_bytes;    /* the tree's RSS sum at that read */
    int pss_current;         /* the published PSS is that read's, still current (see pss_keep_current) */
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

/* ------------------------------------------------------------ parsing */

static const char *skip_blanks(const char *p) {
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* An unsigned decimal at *p (after blanks); advances *p past it.  Returns
 * 0, or -1 when there are no digits. */
static int take_u64(const char **p, uint64_t *out) {
    const char *q = skip_blanks(*p);
    if (*q < '0' || *q > '9')
        return -1;
    uint64_t v = 0;
    while (*q >= '0' && *q <= '9')
        v = v * 10 + (uint64_t)(*q++ - '0');
    *p = q;
    *out = v;
    return 0;
}

/* Skip one space-separated field (which may be negative or not a number). */
static int skip_field(const char **p) {
    const char *q = skip_blanks(*p);
    if (*q == '\0' || *q == '\n')
        return -1;
    while (*q && *q != ' ' && *q != '\t' && *q != '\n')
        q++;
    *p = q;
    return 0;
}

/*
 * Parse "Key: value" lines (meminfo, status, io): for each key that
 * starts a line (keys include their ':'), its number goes to vals[i] and
 * bit i of the result is set.  Stops once every key is found.  A key whose
 * value is not a number counts as not found.
 */
static unsigned parse_keyed(const char *text, const char *const *keys, int nkeys, uint64_t *vals) {
    unsigned found = 0, all = (1u << nkeys) - 1;
    for (const char *line = text; *line && found != all;) {
        for (int i = 0; i < nkeys; i++) {
            size_t len = strlen(keys[i]);
            if (!(found & (1u << i)) && strncmp(line, keys[i], len) == 0) {
                const char *p = line + len;
                if (take_u64(&p, &vals[i]) == 0)
                    found |= 1u << i;
                break;
            }
        }
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    return found;
}

/* The "Name:" line of /proc/PID/status (its first line: the command name,
 * which the kernel cuts to 15 bytes and escapes) into out, cut to cap - 1
 * bytes.  Returns 0, or -1 (out untouched) when there is no such line. */
static int parse_status_name(const char *text, char *out, size_t cap) {
    for (const char *line = text; *line;) {
        if (strncmp(line, "Name:", 5) == 0) {
            const char *p = skip_blanks(line + 5);
            size_t len = strcspn(p, "\n");
            if (len >= cap)
                len = cap - 1;
            memcpy(out, p, len);
            out[len] = '\0';
            return 0;
        }
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    return -1;
}

/* The fields of /proc/PID/stat the tree needs. */
struct pid_stat {
    int ppid;
    uint64_t cpu_ticks; /* utime + stime */
    uint64_t start_ticks;
};

/*
 * "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
 * cmajflt utime stime cutime cstime priority nice threads itreal starttime
 * ...".  comm may hold spaces and ')', so fields are counted from the last
 * ')'.  Returns 0 or -1 when it does not parse.
 */
static int parse_pid_stat(const char *text, struct pid_stat *out) {
    const char *p = strrchr(text, ')');
    if (!p)
        return -1;
    p++;
    uint64_t ppid, utime, stime, start;
    if (skip_field(&p) != 0 || take_u64(&p, &ppid) != 0) /* state, ppid */
        return -1;
    for (int i = 0; i < 9; i++) /* pgrp .. cmajflt */
        if (skip_field(&p) != 0)
            return -1;
    if (take_u64(&p, &utime) != 0 || take_u64(&p, &stime) != 0)
        return -1;
    for (int i = 0; i < 6; i++) /* cutime .. itrealvalue */
        if (skip_field(&p) != 0)
            return -1;
    if (take_u64(&p, &start) != 0 || ppid > 0x7fffffff)
        return -1;
    out->ppid = (int)ppid;
    out->cpu_ticks = utime + stime;
    out->start_ticks = start;
    return 0;
}

/* ------------------------------------------------------------ reasons */

/* Append "; note" (or the note alone) to reason, cut to cap. */
static void add_note(char *reason, size_t cap, const char *note) {
    if (!reason || cap == 0)
        return;
    size_t len = strnlen(reason, cap - 1);
    snprintf(reason + len, cap - len, "%s%s", len ? "; " : "", note);
}

/* "what path: why" as the read's error.  The first error of a read is
 * kept: later ones would only hide its cause. */
static void set_error(char *reason, size_t cap, int *failed, const char *what, const char *path, const char *why) {
    if (!*failed && reason && cap > 0)
        snprintf(reason, cap, "%s %s: %s", what, path, why);
    *failed = 1;
}

static double rate_update(struct rate_tracker *r, double total, int64_t now_ns) {
    double rate = NAN;
    if (r->valid && now_ns > r->last_ns)
        rate = (total - r->last_total) / ((double)(now_ns - r->last_ns) / 1e9);
    r->last_total = total;
    r->last_ns = now_ns;
    r->valid = 1;
    return rate;
}

/* --------------------------------------------------------- system files */

/* (Re)open a system file kept open between reads; path receives its path
 * when it is not open yet (for the caller's messages; reads of an open one
 * build no path).  -errno when absent. */
static int open_system_file(int *fd, const char *root, const char *name, char *path, size_t path_cap) {
    if (*fd >= 0)
        return 0;
    if (sps__path(path, path_cap, root, "%s", name) != 0)
        return -ENAMETOOLONG;
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    return *fd >= 0 ? 0 : -errno;
}

struct cpu_times {
    uint64_t busy, idle, iowait;
};

/* The "cpu " line of /proc/stat.  Returns 0, -errno, or -EINVAL when
 * malformed. */
static int read_cpu_times(struct proc_state *st, struct cpu_times *out) {
    ssize_t n = sps__pread_record(st->stat_fd, st->text, sizeof st->text);
    if (n < 0)
        return (int)n;
    if (strncmp(st->text, "cpu ", 4) != 0)
        return -EINVAL;
    /* user nice system idle iowait irq softirq steal (guest, guest_nice
     * are already inside user and nice); older kernels stop earlier */
    uint64_t f[8] = {0};
    const char *p = st->text + 4;
    int nfields = 0;
    while (nfields < 8 && take_u64(&p, &f[nfields]) == 0)
        nfields++;
    if (nfields < 4)
        return -EINVAL;
    out->busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    out->idle = f[3];
    out->iowait = f[4];
    return 0;
}

/* A counter's growth; iowait (and on some kernels idle) can step back. */
static uint64_t growth(uint64_t now, uint64_t before) {
    return now > before ? now - before : 0;
}

static int read_system_cpu(struct proc_state *st, const char *root, struct sps__sample *s, char *reason, size_t cap,
                           int *failed) {
    char path[512];
    struct cpu_times now;
    int err = read_cpu_times(st, &now);
    if (err < 0)
        sps__path(path, sizeof path, root, "/proc/stat");
    if (err == -EINVAL) {
        set_error(reason, cap, failed, "malformed", path, "no \"cpu\" line with four or more numbers");
        return -1;
    }
    if (err < 0) {
        set_error(reason, cap, failed, "cannot read", path, strerror(-err));
        return -1;
    }
    uint64_t busy = growth(now.busy, st->cpu_busy), idle = growth(now.idle, st->cpu_idle),
             iowait = growth(now.iowait, st->cpu_iowait);
    uint64_t total = busy + idle + iowait;
    if (total > 0) {
        s->host[SPS_M_SYSTEM_CPU_PERCENT] = 100.0 * (double)busy / (double)total;
        s->host[SPS_M_SYSTEM_IOWAIT_PERCENT] = 100.0 * (double)iowait / (double)total;
    }
    st->cpu_busy = now.busy;
    st->cpu_idle = now.idle;
    st->cpu_iowait = now.iowait;
    return 0;
}

static void read_memory(struct proc_state *st, const char *root, struct sps__sample *s, char *reason, size_t cap,
                        int *failed) {
    char path[512];
    int err = open_system_file(&st->meminfo_fd, root, "/proc/meminfo", path, sizeof path);
    ssize_t n = err < 0 ? err : sps__pread_record(st->meminfo_fd, st->text, sizeof st->text);
    if (n < 0) {
        sps__path(path, sizeof path, root, "/proc/meminfo");
        char note[600];
        snprintf(note, sizeof note, "no memory readings: cannot read %s: %s", path, strerror((int)-n));
        add_note(reason, cap, note);
        return;
    }
    static const char *const keys[] = {"MemTotal:", "MemAvailable:", "SwapTotal:", "SwapFree:"};
    uint64_t kb[4];
    unsigned found = parse_keyed(st->text, keys, 4, kb);
    if (!(found & 1)) {
        sps__path(path, sizeof path, root, "/proc/meminfo");
        set_error(reason, cap, failed, "malformed", path, "no MemTotal");
        return;
    }
    s->host[SPS_M_SYSTEM_MEMORY_TOTAL_BYTES] = (double)kb[0] * 1024.0;
    if (found & 2) { /* MemAvailable: Linux 3.14 and later */
        uint64_t used = kb[0] > kb[1] ? kb[0] - kb[1] : 0;
        s->host[SPS_M_SYSTEM_MEMORY_AVAILABLE_BYTES] = (double)kb[1] * 1024.0;
        s->host[SPS_M_SYSTEM_MEMORY_USED_BYTES] = (double)used * 1024.0;
    }
    if ((found & 12) == 12)
        s->host[SPS_M_SYSTEM_SWAP_USED_BYTES] = (double)(kb[2] > kb[3] ? kb[2] - kb[3] : 0) * 1024.0;
}

static struct net_iface *find_iface(struct proc_state *st, const char *name, size_t hint) {
    if (hint < st->niface && strcmp(st->ifaces[hint].name, name) == 0)
        return &st->ifaces[hint];
    for (size_t i = 0; i < st->niface; i++)
        if (strcmp(st->ifaces[i].name, name) == 0)
            return &st->ifaces[i];
    if (st->niface == st->iface_cap) {
        size_t cap = st->iface_cap ? st->iface_cap * 2 : 8;
        struct net_iface *grown = realloc(st->ifaces, cap * sizeof *grown);
        if (!grown)
            return NULL;
        st->ifaces = grown;
        st->iface_cap = cap;
    }
    struct net_iface *f = &st->ifaces[st->niface++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

/*
 * Parse /proc/net/dev and add every interface's growth since the last
 * parse to the totals (all but lo).  An interface seen for the first time
 * after the baseline counts from zero; a counter that went down was reset
 * (the interface was recreated) and counts from zero again.  Returns 0,
 * -errno, or -EINVAL when malformed.
 */
static int parse_net_dev(struct proc_state *st) {
    ssize_t n;
    /* a full buffer may have cut the file short: grow until it all fits */
    while ((n = sps__pread_text(st->netdev_fd, st->netdev_text, st->netdev_cap)) == (ssize_t)st->netdev_cap - 1 &&
           st->netdev_cap < NETDEV_TEXT_MAX) {
        char *grown = realloc(st->netdev_text, st->netdev_cap * 2);
        if (!grown)
            return -ENOMEM;
        st->netdev_text = grown;
        st->netdev_cap *= 2;
    }
    if (n < 0)
        return (int)n;
    if (n == (ssize_t)st->netdev_cap - 1) { /* still cut short: drop the partial last line */
        char *last = strrchr(st->netdev_text, '\n');
        if (last)
            last[1] = '\0';
    }
    /* two header lines */
    const char *line = strchr(st->netdev_text, '\n');
    line = line ? strchr(line + 1, '\n') : NULL;
    if (!line)
        return -EINVAL;
    line++;
    if (++st->net_generation == 0) /* 0 marks an interface never seen */
        st->net_generation = 1;
    unsigned generation = st->net_generation;
    size_t index = 0;
    while (*line) {
        const char *colon = strchr(line, ':'), *nl = strchr(line, '\n');
        if (!colon || (nl && colon > nl))
            return -EINVAL;
        const char *name = skip_blanks(line);
        size_t name_len = (size_t)(colon - name);
        char ifname[32];
        if (name_len == 0 || name_len >= sizeof ifname)
            return -EINVAL;
        memcpy(ifname, name, name_len);
        ifname[name_len] = '\0';
        const char *p = colon + 1;
        uint64_t rx, tx, skipped;
        if (take_u64(&p, &rx) != 0)
            return -EINVAL;
        for (int i = 0; i < 7; i++) /* packets errs drop fifo frame compressed multicast */
            if (take_u64(&p, &skipped) != 0)
                return -EINVAL;
        if (take_u64(&p, &tx) != 0)
            return -EINVAL;
        if (strcmp(ifname, "lo") != 0) {
            struct net_iface *f = find_iface(st, ifname, index);
            if (!f)
                return -ENOMEM;
            int is_new = f->seen == 0;
            if (st->net_baseline) {
                /* a new interface appeared after the baseline: all its
                 * traffic is new (the counters of a new device start at 0) */
                st->net_rx_total += is_new || rx < f->rx ? rx : rx - f->rx;
                st->net_tx_total += is_new || tx < f->tx ? tx : tx - f->tx;
            }
            f->rx = rx;
            f->tx = tx;
            f->seen = generation;
            index++;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    /* interfaces that went away: forget them, so one that comes back is new */
    size_t kept = 0;
    for (size_t i = 0; i < st->niface; i++)
        if (st->ifaces[i].seen == generation)
            st->ifaces[kept++] = st->ifaces[i];
    st->niface = kept;
    st->net_baseline = 1;
    return 0;
}

static void read_network(struct proc_state *st, const char *root, struct sps__sample *s, int64_t now_ns,
                         char *reason, size_t cap, int *failed) {
    char path[512];
    int err = open_system_file(&st->netdev_fd, root, "/proc/net/dev", path, sizeof path);
    if (err == 0)
        err = parse_net_dev(st);
    if (err < 0) {
        sps__path(path, sizeof path, root, "/proc/net/dev");
        st->net_rx_rate.valid = st->net_tx_rate.valid = 0;
        if (err == -EINVAL) {
            set_error(reason, cap, failed, "malformed", path, "an interface line without its byte counters");
        } else {
            char note[600];
            snprintf(note, sizeof note, "no network readings: cannot read %s: %s", path, strerror(-err));
            add_note(reason, cap, note);
        }
        return;
    }
    s->host[SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES] = (double)st->net_rx_total;
    s->host[SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES] = (double)st->net_tx_total;
    s->host[SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND] =
        rate_update(&st->net_rx_rate, (double)st->net_rx_total, now_ns);
    s->host[SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES_PER_SECOND] =
        rate_update(&st->net_tx_rate, (double)st->net_tx_total, now_ns);
}

/* ------------------------------------------------------- the process tree */

static int cmp_listed(const void *a, const void *b) {
    int x = ((const struct listed_pid *)a)->pid, y = ((const struct listed_pid *)b)->pid;
    return (x > y) - (x < y);
}

static struct tracked_pid *find_tracked(struct proc_state *st, int pid) {
    size_t lo = 0, hi = st->ntable;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->table[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < st->ntable && st->table[lo].pid == pid ? &st->table[lo] : NULL;
}

/* A tree process that is gone: its last values stay in the totals. */
static void close_member_files(struct proc_state *st, struct tracked_pid *e) {
    int had = 0;
    for (int k = 0; k < MEMBER_FILES; k++)
        if (e->fd[k] >= 0) {
            close(e->fd[k]);
            e->fd[k] = -1;
            had = 1;
        }
    st->open_members -= had;
}

static void forget_files(struct tracked_pid *e) {
    for (int k = 0; k < MEMBER_FILES; k++)
        e->fd[k] = -1;
}

static void retire(struct proc_state *st, struct tracked_pid *e) {
    close_member_files(st, e);
    if (e->cls != PID_MEMBER)
        return;
    st->departed_cpu_ns += e->cpu_ns;
    st->departed_disk_read += e->disk_read;
    st->departed_disk_write += e->disk_write;
}

/* Does dir (the real /proc) list "self" at PROCFS_PIDS_POS? */
static int pids_start_at_known_position(DIR *dir) {
    struct statfs fs;
    if (fstatfs(dirfd(dir), &fs) != 0 || fs.f_type != PROCFS_MAGIC)
        return 0;
    seekdir(dir, PROCFS_PIDS_POS);
    errno = 0;
    struct dirent *d = readdir(dir);
    return d && strcmp(d->d_name, "self") == 0;
}

/* The pids in ROOT/proc now, sorted.  /proc lists them in order already;
 * a fixture directory may not. */
static int list_pids(struct proc_state *st) {
    if (st->skip_to_pids)
        seekdir(st->proc_dir, PROCFS_PIDS_POS);
    else
        rewinddir(st->proc_dir);
    st->nlisted = 0;
    int sorted = 1;
    for (;;) {
        errno = 0; /* readdir's end and its failure differ only in errno */
        struct dirent *d = readdir(st->proc_dir);
        if (!d)
            break;
        const char *c = d->d_name;
        long pid = 0;
        for (; *c >= '0' && *c <= '9' && pid <= 0x7fffffff; c++)
            pid = pid * 10 + (*c - '0');
        if (*c != '\0' || c == d->d_name || pid <= 0 || pid > 0x7fffffff)
            continue;
        if (st->nlisted == st->listed_cap) {
            size_t cap = st->listed_cap * 2;
            struct listed_pid *grown = realloc(st->listed, cap * sizeof *grown);
            if (!grown)
                return -ENOMEM;
            st->listed = grown;
            st->listed_cap = cap;
        }
        if (st->nlisted > 0 && st->listed[st->nlisted - 1].pid > (int)pid)
            sorted = 0;
        st->listed[st->nlisted].pid = (int)pid;
        st->listed[st->nlisted].ino = (uint64_t)d->d_ino;
        st->nlisted++;
    }
    if (errno)
        return -errno;
    if (!sorted)
        qsort(st->listed, st->nlisted, sizeof *st->listed, cmp_listed);
    return 0;
}

/* Make the table hold the pids just listed: keep what is known about the
 * ones still there, add the new ones unclassified, retire the gone. */
static int merge_listed(struct proc_state *st) {
    if (st->nlisted > st->table_cap) {
        size_t cap = st->table_cap;
        while (cap < st->nlisted)
            cap *= 2;
        struct tracked_pid *a = realloc(st->table, cap * sizeof *a);
        if (!a)
            return -ENOMEM;
        st->table = a;
        struct tracked_pid *b = realloc(st->spare, cap * sizeof *b);
        if (!b)
            return -ENOMEM;
        st->spare = b;
        st->table_cap = cap;
    }
    size_t old = 0, out = 0;
    for (size_t i = 0; i < st->nlisted; i++) {
        const struct listed_pid *l = &st->listed[i];
        if (i > 0 && l->pid == st->listed[i - 1].pid)
            continue;
        while (old < st->ntable && st->table[old].pid < l->pid)
            retire(st, &st->table[old++]);
        struct tracked_pid *e = &st->spare[out++];
        if (old < st->ntable && st->table[old].pid == l->pid) {
            *e = st->table[old++];
            if (e->dir_ino != l->ino) {
                e->verify = 1;
                e->dir_ino = l->ino;
            }
        } else {
            memset(e, 0, sizeof *e);
            forget_files(e);
            e->pid = l->pid;
            e->dir_ino = l->ino;
        }
    }
    while (old < st->ntable)
        retire(st, &st->table[old++]);
    struct tracked_pid *t = st->table;
    st->table = st->spare;
    st->spare = t;
    st->ntable = out;
    return 0;
}

/* Read one of a process's files into st->text: a tree process's through
 * its kept descriptor (opened on first use, while fewer than
 * MAX_OPEN_MEMBERS processes hold some), any other by path.  A read
 * through a descriptor failing with ESRCH means the process has exited: it
 * is marked gone and read no more (its pid may name another process by
 * now; the next listing sorts that out).  Any failed read closes its
 * descriptors.  Returns the length or -errno. */
static ssize_t read_pid_file(struct proc_state *st, const char *root, struct tracked_pid *e, enum member_file which) {
    if (e->gone)
        return -ESRCH; /* its pid may be another process's by now */
    if (e->fd[which] < 0) { /* the path is built only to open (or read) by it */
        char path[512];
        if (sps__path(path, sizeof path, root, "/proc/%d/%s", e->pid, member_file_name[which]) != 0)
            return -ENAMETOOLONG;
        int holds = 0;
        for (int k = 0; k < MEMBER_FILES; k++)
            holds |= e->fd[k] >= 0;
        if (e->cls != PID_MEMBER || (!holds && st->open_members >= MAX_OPEN_MEMBERS))
            return sps__read_text(path, st->text, sizeof st->text);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        e->fd[which] = fd;
        st->open_members += !holds;
    }
    ssize_t n = sps__pread_record(e->fd[which], st->text, sizeof st->text);
    if (n < 0) {
        close_member_files(st, e);
        e->gone = n == -ESRCH; /* the descriptor's process has exited */
    }
    return n;
}

/* CPU time in /proc/PID/stat's clock ticks, in nanoseconds. */
static uint64_t ticks_to_ns(const struct proc_state *st, uint64_t ticks) {
    return ticks * 1000000000u / (uint64_t)st->clk_tck;
}

/* Does e's CPU time come from its CPU clock?  Only while its descriptors
 * are kept: a read through them after the clock's proves the pid was still
 * e's (a pid is not reused while its process lives). */
static int uses_cpu_clock(const struct proc_state *st, const struct tracked_pid *e) {
    if (!st->own_proc || e->cls != PID_MEMBER || !e->has_clock || e->gone)
        return 0;
    for (int k = 0; k < MEMBER_FILES; k++)
        if (e->fd[k] >= 0)
            return 1;
    return 0;
}

/* Read the stat of every process that needs it: tree members whose CPU
 * time does not come from their CPU clock, unclassified processes (their
 * parent), and ones whose directory changed.  A changed start time means
 * the pid now names another process. */
static void read_stats(struct proc_state *st, const char *root) {
    for (size_t i = 0; i < st->ntable; i++) {
        struct tracked_pid *e = &st->table[i];
        if (e->cls == PID_MEMBER && !e->verify && (e->gone || uses_cpu_clock(st, e))) {
            e->alive = !e->gone; /* the clock or its kept files will tell */
            continue;
        }
        e->alive = 0;
        if (e->cls == PID_OUTSIDE && !e->verify)
            continue;
        struct pid_stat ps;
        if (e->verify) { /* its directory changed: read the pid afresh (its start time says whose it is) */
            close_member_files(st, e);
            e->gone = 0;
        }
        if (read_pid_file(st, root, e, FILE_STAT) < 0 || parse_pid_stat(st->text, &ps) != 0)
            continue; /* gone since the listing (or never readable): not alive */
        if (e->has_stat && ps.start_ticks != e->start_ticks) {
            retire(st, e);
            int pid = e->pid;
            uint64_t ino = e->dir_ino;
            memset(e, 0, sizeof *e);
            forget_files(e);
            e->pid = pid;
            e->dir_ino = ino;
        }
        e->verify = 0;
        e->ppid = ps.ppid;
        e->start_ticks = ps.start_ticks;
        e->has_stat = 1;
        e->alive = 1;
        e->cpu_ns = ticks_to_ns(st, ps.cpu_ticks);
    }
}

static int is_tree_root(struct proc_state *st, const struct tracked_pid *e) {
    if (e->pid != st->tree_pid)
        return 0;
    if (!st->root_start_known) {
        st->root_start_known = 1;
        st->root_start_ticks = e->start_ticks;
    }
    return e->start_ticks == st->root_start_ticks;
}

/* e's parent as far as the tree is concerned: NULL when e is the root,
 * its parent is unknown or gone, or the pid in its ppid started after it
 * (the parent exited and its pid was reused). */
static struct tracked_pid *tree_parent(struct proc_state *st, struct tracked_pid *e) {
    if (!e->has_stat || e->ppid <= 0 || is_tree_root(st, e))
        return NULL;
    struct tracked_pid *parent = find_tracked(st, e->ppid);
    if (!parent || (parent->has_stat && parent->start_ticks > e->start_ticks))
        return NULL;
    return parent;
}

/*
 * Classify e by walking up its parents to the first one already
 * classified, or the tree root; everything on the way gets that answer,
 * so parents are classified before children whatever their pids.  The
 * walk is iterative (no depth limit but the table) and marks what it
 * passes: meeting its own mark means a loop of recycled pids, outside.
 */
static void classify(struct proc_state *st, struct tracked_pid *e) {
    if (++st->walk == 0) { /* wrapped: old marks could look like this walk's */
        for (size_t i = 0; i < st->ntable; i++)
            st->table[i].walk = 0;
        st->walk = 1;
    }
    unsigned char verdict;
    for (struct tracked_pid *cur = e;;) {
        if (cur->cls != PID_UNCLASSIFIED) {
            verdict = cur->cls;
            break;
        }
        if (cur->walk == st->walk) {
            verdict = PID_OUTSIDE;
            break;
        }
        cur->walk = st->walk;
        if (cur->has_stat && is_tree_root(st, cur)) {
            verdict = PID_MEMBER;
            break;
        }
        cur = tree_parent(st, cur);
        if (!cur) {
            verdict = PID_OUTSIDE;
            break;
        }
    }
    for (struct tracked_pid *cur = e; cur && cur->cls == PID_UNCLASSIFIED;) {
        struct tracked_pid *parent = tree_parent(st, cur);
        cur->cls = verdict;
        cur = parent;
    }
}

/* ROOT/proc/PID still exists (the process did not exit since listing). */
static int pid_exists(const char *root, int pid) {
    char path[512];
    struct stat sb;
    return sps__path(path, sizeof path, root, "/proc/%d", pid) == 0 && stat(path, &sb) == 0;
}

/* The resident set from /proc/PID/statm (second field, in pages): a tenth
 * of what status costs the kernel to write.  -1 when unreadable. */
static int read_statm_rss(struct proc_state *st, const char *root, struct tracked_pid *e, uint64_t *bytes) {
    if (read_pid_file(st, root, e, FILE_STATM) < 0)
        return -1;
    const char *p = st->text;
    uint64_t size, resident;
    if (take_u64(&p, &size) != 0 || take_u64(&p, &resident) != 0)
        return -1;
    long page = sysconf(_SC_PAGESIZE);
    *bytes = resident * (uint64_t)(page > 0 ? page : 4096);
    return 0;
}

/* One tree process's CPU time (from its clock, when it has one), memory,
 * threads and io.  status (the high-water mark and the thread count) and
 * io are read by full reads; at the interval alone statm gives the resident
 * set and the rest keeps its last values.  Returns 0, or -1 when the
 * process is gone. */
static int read_member(struct proc_state *st, const char *root, struct tracked_pid *e, struct tree_scan *scan,
                       int full, char *reason, size_t cap) {
    char path[512];
    uint64_t v[3], rss;
    struct timespec cpu;
    /* the clock first: the file reads after it prove the pid was still e's */
    int clock_ok = uses_cpu_clock(st, e) && clock_gettime(e->cpu_clock, &cpu) == 0;
    uint64_t cpu_ns = clock_ok ? (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec : 0;
    /*
     * A process whose CPU clock has not moved since a file was read has not
     * run since: it cannot have mapped or touched memory, made a thread or
     * done I/O, so that file would say the same (only the kernel reclaiming
     * or swapping its pages out could lower its RSS, which the next read
     * after it runs sees).  DataLoader workers blocked on a full queue are
     * such processes most of the time.  Their last figures stand.
     */
    int rss_same = clock_ok && e->rss_known && e->rss_cpu_ns == cpu_ns;
    int status_same = clock_ok && e->status_known && e->status_cpu_ns == cpu_ns;
    if (rss_same && (!full || status_same)) {
        scan->rss_bytes += e->rss_bytes;
        e->rss_read = 1;
    } else if (!full && read_statm_rss(st, root, e, &rss) == 0) {
        scan->rss_bytes += rss;
        e->rss_bytes = rss;
        e->rss_read = 1;
        e->rss_known = clock_ok;
        e->rss_cpu_ns = cpu_ns;
    } else {
        if (read_pid_file(st, root, e, FILE_STATUS) < 0)
            return -1;
        parse_status_name(st->text, e->comm, sizeof e->comm);
        static const char *const status_keys[] = {"VmRSS:", "VmHWM:", "Threads:"};
        unsigned found = parse_keyed(st->text, status_keys, 3, v);
        if (found & 1) { /* a zombie has no memory lines */
            scan->rss_bytes += v[0] * 1024;
            e->rss_bytes = v[0] * 1024;
            e->rss_read = 1;
        }
        if (found & 2)
            e->hwm_bytes = v[1] * 1024;
        if (found & 4)
            e->threads = (int)v[2];
        e->rss_known = e->status_known = clock_ok && (found & 1);
        e->rss_cpu_ns = e->status_cpu_ns = cpu_ns;
    }
    if (clock_ok)
        e->cpu_ns = cpu_ns;
    if (!e->has_clock && st->own_proc && clock_getcpuclockid(e->pid, &e->cpu_clock) == 0)
        e->has_clock = 1; /* from the next read on (its descriptors are open now) */
    if (e->hwm_bytes > scan->hwm_bytes)
        scan->hwm_bytes = e->hwm_bytes;
    scan->threads += e->threads;
    scan->processes++;
    if (!full || (clock_ok && e->io_known && e->io_cpu_ns == cpu_ns))
        return 0; /* at the interval alone, or it has done no I/O since: its last counts stand */

    ssize_t n = read_pid_file(st, root, e, FILE_IO);
    static const char *const io_keys[] = {"read_bytes:", "write_bytes:"};
    if (n >= 0 && parse_keyed(st->text, io_keys, 2, v) == 3) {
        e->disk_read = v[0];
        e->disk_write = v[1];
        e->io_known = clock_ok;
        e->io_cpu_ns = cpu_ns;
        return 0;
    }
    if ((n == -ENOENT || n == -ESRCH) && !pid_exists(root, e->pid))
        return 0; /* exited after its status was read: keep its last values */
    if (scan->disk_ok) {
        char note[600];
        sps__path(path, sizeof path, root, "/proc/%d/io", e->pid);
        snprintf(note, sizeof note, "no workload disk readings: cannot read %s: %s", path,
                 n < 0 ? strerror((int)-n) : "no read_bytes/write_bytes");
        add_note(reason, cap, note);
    }
    scan->disk_ok = 0;
    return 0;
}

/* ------------------------------------------------------- the tree's PSS */

/* This thread's CPU time in nanoseconds; -1 when the clock fails. */
static int64_t thread_cpu_ns(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return -1;
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* One process's Pss and USS (Private_Clean + Private_Dirty) in bytes from
 * ROOT/proc/PID/smaps_rollup.  Opened for this read alone (a descriptor of
 * it holds the address space it was opened on, which an exec replaces) and
 * read with one pread: every read of the file walks the page tables again.
 * Returns 0, -errno (-ESRCH: the process has no address space any more, it
 * exited), or -EINVAL when the lines are not there. */
static int read_smaps_rollup(struct proc_state *st, const char *path, uint64_t *pss, uint64_t *uss) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = sps__pread_record(fd, st->text, sizeof st->text);
    close(fd);
    if (n < 0)
        return (int)n;
    static const char *const keys[] = {"Pss:", "Private_Clean:", "Private_Dirty:"};
    uint64_t kb[3];
    if (parse_keyed(st->text, keys, 3, kb) != 7)
        return -EINVAL;
    *pss = kb[0] * 1024;
    *uss = (kb[1] + kb[2]) * 1024;
    return 0;
}

/*
 * The tree's PSS, its peak and its USS, when due (see the top of the
 * file): each has its read time set, and a value, or none when the sum
 * could not be made, with the reason in a note (a partial sum would be too
 * low; the tree's memory is then its RSS sum).  A process that exited since
 * the scan counts nothing, as in the RSS sum.  A kernel without
 * smaps_rollup (before 4.14) is not asked again.
 */
/* The least a PSS read is predicted to cost per KiB of the tree's RSS:
 * half what bench_capture measured for python + torch with 2 DataLoader
 * workers on a 2-core VM (19 ns), about what a plain anonymous mapping
 * cost there (9 ns). */
#define PSS_MIN_NS_PER_KIB 10.0
#define PSS_CALIBRATION_KIB (16.0 * 1024)

/*
 * Is a PSS read due?  Its cost is about proportional to the pages the tree
 * maps, so the next read's is predicted as the RSS sum now times the price
 * per KiB the last read paid; it is due when the time since the last read
 * (since the tree's first full read, for the first) pays for it at
 * SPS_PSS_CPU_SHARE of a core.  The prediction keeps a tree
 * that grew (torch imported, workers forked) from being read at the cost
 * of the small tree it was.
 */
static int pss_due(const struct proc_state *st, double rss_bytes, int64_t now_ns) {
    if (st->tree_full_reads < 2) /* the first full read may come between fork and exec */
        return 0;
    /* the first read is paid for by the time since the tree was first read */
    int64_t since = st->pss_read_ns ? st->pss_read_ns : st->tree_seen_ns;
    /* the price per KiB of RSS the last read paid; a read of a small tree
     * (a process that has just started) says little about it: never less
     * than PSS_MIN_NS_PER_KIB, and that alone below PSS_CALIBRATION_KIB */
    double last_kib = st->pss_rss_bytes / 1024.0, per_kib = PSS_MIN_NS_PER_KIB;
    if (last_kib >= PSS_CALIBRATION_KIB && (double)st->pss_cost_ns / last_kib > per_kib)
        per_kib = (double)st->pss_cost_ns / last_kib;
    double predicted = per_kib * rss_bytes / 1024.0;
    return (double)(now_ns - since) * SPS_PSS_CPU_SHARE >= predicted;
}

/*
 * Between reads the last PSS stands for the tree while its RSS sum stays
 * within PSS_DRIFT of the sum at that read.  Once the tree has grown or
 * shrunk past that, the old PSS says nothing about it: the three figures
 * have no value (read now) until the next PSS read, and the tree's memory
 * is its RSS sum meanwhile.  Called on every read that read the RSS sum.
 */
#define PSS_DRIFT 0.10
static void pss_keep_current(struct proc_state *st, struct sps__sample *s, double rss_bytes, int64_t now_ns) {
    if (!st->pss_current || fabs(rss_bytes - st->pss_rss_bytes) <= PSS_DRIFT * st->pss_rss_bytes)
        return;
    st->pss_current = 0;
    static const enum sps_host_metric stale[] = {SPS_M_WORKLOAD_PSS_BYTES, SPS_M_WORKLOAD_USS_BYTES};
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        s->host[stale[i]] = NAN;
        s->host_read_ns[stale[i]] = now_ns;
    }
}

static void read_tree_pss(struct proc_state *st, const char *root, struct sps__sample *s, int due_now, double rss_bytes,
                          int64_t now_ns, char *reason, size_t cap) {
    if (!due_now && !pss_due(st, rss_bytes, now_ns))
        return;
    st->pss_current = 0;
    static const enum sps_host_metric metrics[] = {SPS_M_WORKLOAD_PSS_BYTES, SPS_M_WORKLOAD_PSS_PEAK_BYTES,
                                                   SPS_M_WORKLOAD_USS_BYTES};
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        s->host[metrics[i]] = NAN;
        s->host_read_ns[metrics[i]] = now_ns;
    }
    if (st->pss_unsupported[0]) {
        add_note(reason, cap, st->pss_unsupported);
        return;
    }
    int64_t cpu0 = thread_cpu_ns();
    uint64_t pss = 0, uss = 0;
    char failure[sizeof st->pss_unsupported] = "";
    for (size_t k = 0; k < st->nmembers && !failure[0]; k++) {
        struct tracked_pid *e = &st->table[st->members[k]];
        if (!e->alive)
            continue;
        char path[512];
        uint64_t p = 0, u = 0;
        int err = sps__path(path, sizeof path, root, "/proc/%d/smaps_rollup", e->pid);
        if (err == 0)
            err = read_smaps_rollup(st, path, &p, &u);
        if (err == 0) {
            pss += p;
            uss += u;
        } else if (err == -ESRCH || (err == -ENOENT && !pid_exists(root, e->pid))) {
            continue; /* exited (or a zombie): no memory */
        } else if (err == -ENOENT) {
            snprintf(st->pss_unsupported, sizeof st->pss_unsupported,
                     "no workload PSS: no %s (smaps_rollup needs Linux 4.14): tree memory is the RSS sum", path);
            snprintf(failure, sizeof failure, "%s", st->pss_unsupported);
        } else {
            snprintf(failure, sizeof failure, "no workload PSS: cannot read %s: %s: tree memory is the RSS sum", path,
                     err == -EINVAL ? "no Pss and Private lines" : strerror(-err));
        }
    }
    int64_t cpu1 = thread_cpu_ns();
    int64_t cost = cpu0 >= 0 && cpu1 > cpu0 ? cpu1 - cpu0 : 0;
    st->pss_read_ns = now_ns;
    st->pss_cost_ns = cost;
    st->pss_rss_bytes = rss_bytes;
    st->pss_reads++;
    st->pss_cpu_ns += (uint64_t)cost;
    if (failure[0]) {
        add_note(reason, cap, failure);
        return;
    }
    st->pss_current = 1;
    if ((double)pss > st->pss_peak_bytes)
        st->pss_peak_bytes = (double)pss;
    s->host[SPS_M_WORKLOAD_PSS_BYTES] = (double)pss;
    s->host[SPS_M_WORKLOAD_PSS_PEAK_BYTES] = st->pss_peak_bytes;
    s->host[SPS_M_WORKLOAD_USS_BYTES] = (double)uss;
}

/* Note where the tree's processes are in the table (which a listing
 * reorders), so reads at the interval alone touch only them. */
static int collect_members(struct proc_state *st) {
    st->nmembers = 0;
    for (size_t i = 0; i < st->ntable; i++) {
        if (st->table[i].cls != PID_MEMBER)
            continue;
        if (st->nmembers == st->members_cap) {
            size_t cap = st->members_cap ? st->members_cap * 2 : 16;
            size_t *grown = realloc(st->members, cap * sizeof *grown);
            if (!grown)
                return -ENOMEM;
            st->members = grown;
            st->members_cap = cap;
        }
        st->members[st->nmembers++] = i;
    }
    return 0;
}

/* /proc/loadavg's last field: the pid most recently given to a process or
 * thread.  -1 when it cannot be read or parsed (then /proc is listed every
 * LISTING_EVERY_FULL_READS full reads; every full read without the file). */
static int64_t last_pid_made(struct proc_state *st) {
    if (st->loadavg_fd < 0 || sps__pread_record(st->loadavg_fd, st->text, sizeof st->text) < 0)
        return -1;
    const char *p = strrchr(st->text, ' ');
    uint64_t pid;
    if (!p || take_u64(&p, &pid) != 0 || pid > 0x7fffffff)
        return -1;
    return (int64_t)pid;
}

/* On a full read, list /proc when a process or thread may have been made
 * since the last listing (now: whether or not LISTING_EVERY_FULL_READS
 * full reads have passed, for a fresh read); classify what is new; read the
 * tree's processes.  At the interval alone, read the processes already in
 * the tree. */
static int scan_tree(struct proc_state *st, const char *root, struct tree_scan *scan, int full, int now, char *reason,
                     size_t cap) {
    memset(scan, 0, sizeof *scan);
    scan->disk_ok = 1;
    char path[512];
    if (!st->proc_dir) {
        if (sps__path(path, sizeof path, root, "/proc") != 0)
            return -ENAMETOOLONG;
        st->proc_dir = opendir(path);
        if (!st->proc_dir)
            return -errno;
        st->skip_to_pids = pids_start_at_known_position(st->proc_dir);
    }
    full |= !st->listed_once;
    if (full) {
        /* on a busy machine some pid is made between any two reads: list
         * at most every LISTING_EVERY_FULL_READS full reads (and read
         * loadavg only then) */
        st->full_reads_unlisted++;
        int may_list = !st->listed_once || st->full_reads_unlisted >= LISTING_EVERY_FULL_READS || now ||
                       st->loadavg_fd < 0; /* no loadavg (a fixture tree): nothing tells, list */
        int64_t last_pid = may_list ? last_pid_made(st) : 0; /* before listing: a pid made during it is seen next time */
        if (may_list && (!st->listed_once || last_pid < 0 || last_pid != st->last_pid_listed)) {
            int err = list_pids(st);
            if (err == 0)
                err = merge_listed(st);
            if (err < 0)
                return err;
            st->listed_once = 1;
            st->last_pid_listed = last_pid;
            st->full_reads_unlisted = 0;
        }
        read_stats(st, root);
        for (size_t i = 0; i < st->ntable; i++)
            if (st->table[i].cls == PID_UNCLASSIFIED)
                classify(st, &st->table[i]);
        int err = collect_members(st);
        if (err < 0)
            return err;
    } else {
        /* members only: the rest of the table waits for the next listing */
        for (size_t k = 0; k < st->nmembers; k++) {
            struct tracked_pid *e = &st->table[st->members[k]];
            if (e->gone || uses_cpu_clock(st, e)) {
                e->alive = !e->gone;
                continue;
            }
            struct pid_stat ps;
            e->alive = 0;
            if (read_pid_file(st, root, e, FILE_STAT) < 0 || parse_pid_stat(st->text, &ps) != 0 ||
                ps.start_ticks != e->start_ticks)
                continue; /* gone, or the pid is another process's now: the next listing sorts it out */
            e->alive = 1;
            e->cpu_ns = ticks_to_ns(st, ps.cpu_ticks);
        }
    }
    scan->cpu_ns = st->departed_cpu_ns;
    scan->disk_read = st->departed_disk_read;
    scan->disk_write = st->departed_disk_write;
    for (size_t k = 0; k < st->nmembers; k++) {
        struct tracked_pid *e = &st->table[st->members[k]];
        e->rss_read = 0;
        if (e->alive && read_member(st, root, e, scan, full, reason, cap) != 0)
            e->alive = 0;
        /* a member gone since the listing still counts with its last values */
        scan->cpu_ns += e->cpu_ns;
        scan->disk_read += e->disk_read;
        scan->disk_write += e->disk_write;
    }
    return 0;
}

/* Each tree process whose resident set the scan just read, for
 * sps__proc_tree_rss.  Out of memory, the readings are left out (with a
 * note): the tree's sum does not need them. */
static void keep_rss_readings(struct proc_state *st, char *reason, size_t cap) {
    if (st->nmembers > st->rss_readings_cap) {
        struct sps__proc_rss *grown = realloc(st->rss_readings, st->nmembers * sizeof *grown);
        if (!grown) {
            add_note(reason, cap, "no per-process memory readings: out of memory");
            return;
        }
        st->rss_readings = grown;
        st->rss_readings_cap = st->nmembers;
    }
    for (size_t k = 0; k < st->nmembers; k++) {
        struct tracked_pid *e = &st->table[st->members[k]];
        if (!e->rss_read)
            continue;
        struct sps__proc_rss *r = &st->rss_readings[st->nrss_readings++];
        r->pid = e->pid;
        r->start_ticks = e->start_ticks;
        r->first = !e->rss_reported;
        memcpy(r->comm, e->comm, sizeof r->comm);
        r->rss_bytes = (double)e->rss_bytes;
        e->rss_reported = 1;
    }
}

/* pss_now: a fresh read: the tree's PSS, and a listing of /proc, whatever
 * their cadence says. */
static void read_workload(struct proc_state *st, const char *root, struct sps__sample *s, int full, int pss_now,
                          int64_t now_ns, char *reason, size_t cap) {
    struct tree_scan scan;
    st->nrss_readings = 0;
    int err = scan_tree(st, root, &scan, full, pss_now, reason, cap);
    if (err == 0)
        keep_rss_readings(st, reason, cap);
    if (err < 0) {
        char path[512], note[600];
        sps__path(path, sizeof path, root, "/proc");
        snprintf(note, sizeof note, "no workload readings: cannot list %s: %s", path, strerror(-err));
        add_note(reason, cap, note);
        st->cpu_rate.valid = st->disk_read_rate.valid = st->disk_write_rate.valid = 0;
        return;
    }
    double cpu_seconds = (double)scan.cpu_ns / 1e9;
    s->host[SPS_M_WORKLOAD_CPU_SECONDS] = cpu_seconds;
    s->host[SPS_M_WORKLOAD_CPU_PERCENT] = 100.0 * rate_update(&st->cpu_rate, cpu_seconds, now_ns);
    s->host[SPS_M_WORKLOAD_RSS_BYTES] = (double)scan.rss_bytes;
    double peak = (double)(scan.rss_bytes > scan.hwm_bytes ? scan.rss_bytes : scan.hwm_bytes);
    if (peak > st->rss_peak_bytes)
        st->rss_peak_bytes = peak;
    s->host[SPS_M_WORKLOAD_RSS_PEAK_BYTES] = st->rss_peak_bytes;
    s->host[SPS_M_WORKLOAD_PROCESSES] = scan.processes;
    pss_keep_current(st, s, (double)scan.rss_bytes, now_ns);
    if (!full)
        return; /* threads, disk and PSS wait for the machine interval */
    st->tree_full_reads++;
    if (!st->tree_seen_ns)
        st->tree_seen_ns = now_ns;
    read_tree_pss(st, root, s, pss_now, (double)scan.rss_bytes, now_ns, reason, cap);
    s->host[SPS_M_WORKLOAD_THREADS] = scan.threads;
    if (!scan.disk_ok) {
        st->disk_read_rate.valid = st->disk_write_rate.valid = 0;
        return;
    }
    if (!st->disk_baseline_known) { /* the tree's io was unreadable at open */
        st->disk_baseline_known = 1;
        st->disk_read_baseline = scan.disk_read;
        st->disk_write_baseline = scan.disk_write;
    }
    double disk_read = (double)growth(scan.disk_read, st->disk_read_baseline);
    double disk_write = (double)growth(scan.disk_write, st->disk_write_baseline);
    s->host[SPS_M_WORKLOAD_DISK_READ_BYTES] = disk_read;
    s->host[SPS_M_WORKLOAD_DISK_WRITE_BYTES] = disk_write;
    s->host[SPS_M_WORKLOAD_DISK_READ_BYTES_PER_SECOND] = rate_update(&st->disk_read_rate, disk_read, now_ns);
    s->host[SPS_M_WORKLOAD_DISK_WRITE_BYTES_PER_SECOND] = rate_update(&st->disk_write_rate, disk_write, now_ns);
}

/* Forget the tree: a new tree_pid starts from nothing. */
static void reset_tree(struct proc_state *st, int tree_pid) {
    for (size_t i = 0; i < st->ntable; i++)
        close_member_files(st, &st->table[i]);
    st->tree_pid = tree_pid;
    st->ntable = 0;
    st->nmembers = 0;
    st->nrss_readings = 0;
    st->listed_once = 0;
    st->last_pid_listed = -1;
    st->root_start_known = 0;
    st->departed_cpu_ns = st->departed_disk_read = st->departed_disk_write = 0;
    st->disk_baseline_known = 0;
    st->rss_peak_bytes = 0;
    st->tree_full_reads = 0;
    st->tree_seen_ns = 0;
    st->pss_read_ns = st->pss_cost_ns = 0;
    st->pss_rss_bytes = 0;
    st->pss_current = 0;
    st->pss_peak_bytes = 0;
    memset(&st->cpu_rate, 0, sizeof st->cpu_rate);
    memset(&st->disk_read_rate, 0, sizeof st->disk_read_rate);
    memset(&st->disk_write_rate, 0, sizeof st->disk_write_rate);
}

/* The tree as it is at open: what its disk counters already hold is not
 * counted. */
static void take_tree_baseline(struct proc_state *st, const char *root, char *reason, size_t cap) {
    struct tree_scan scan;
    int err = scan_tree(st, root, &scan, 1, 0, reason, cap);
    if (err < 0) {
        char path[512], note[600];
        sps__path(path, sizeof path, root, "/proc");
        snprintf(note, sizeof note, "no workload readings yet: cannot list %s: %s", path, strerror(-err));
        add_note(reason, cap, note);
        return;
    }
    st->tree_full_reads++;
    if (scan.disk_ok) {
        st->disk_baseline_known = 1;
        st->disk_read_baseline = scan.disk_read;
        st->disk_write_baseline = scan.disk_write;
    }
}

/* Is ROOT/proc the procfs of this process's pid namespace?  Then a pid
 * listed there names the same process to clock_getcpuclockid (a fixture
 * tree's pids name nothing here). */
static int proc_is_own(const char *root) {
    char path[512], target[32];
    if (sps__path(path, sizeof path, root, "/proc/self") != 0)
        return 0;
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    char self[32];
    snprintf(self, sizeof self, "%d", (int)getpid());
    return strcmp(target, self) == 0;
}

/* ------------------------------------------------------------ the vtable */

static void proc_close(void *state) {
    struct proc_state *st = state;
    if (!st)
        return;
    if (st->stat_fd >= 0)
        close(st->stat_fd);
    if (st->meminfo_fd >= 0)
        close(st->meminfo_fd);
    if (st->netdev_fd >= 0)
        close(st->netdev_fd);
    if (st->loadavg_fd >= 0)
        close(st->loadavg_fd);
    if (st->proc_dir)
        closedir(st->proc_dir);
    for (size_t i = 0; i < st->ntable; i++)
        close_member_files(st, &st->table[i]);
    free(st->ifaces);
    free(st->table);
    free(st->spare);
    free(st->listed);
    free(st->members);
    free(st->rss_readings);
    free(st->netdev_text);
    free(st);
}

static int proc_open(const struct sps__source_ctx *ctx, void **state, char *reason, size_t cap) {
    *state = NULL;
    if (reason && cap)
        reason[0] = '\0';
    const char *root = ctx->root;
    char path[512];
    struct proc_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    st->stat_fd = st->meminfo_fd = st->netdev_fd = st->loadavg_fd = -1;
    st->clk_tck = sysconf(_SC_CLK_TCK);
    if (st->clk_tck <= 0)
        st->clk_tck = 100; /* USER_HZ on every Linux architecture */
    enum { INITIAL_PIDS = 256 };
    st->table = malloc(INITIAL_PIDS * sizeof *st->table);
    st->spare = malloc(INITIAL_PIDS * sizeof *st->spare);
    st->listed = malloc(INITIAL_PIDS * sizeof *st->listed);
    st->netdev_text = malloc(NETDEV_TEXT_MIN);
    if (!st->table || !st->spare || !st->listed || !st->netdev_text) {
        proc_close(st);
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    st->table_cap = st->listed_cap = INITIAL_PIDS;
    st->netdev_cap = NETDEV_TEXT_MIN;

    int err = open_system_file(&st->stat_fd, root, "/proc/stat", path, sizeof path);
    struct cpu_times base;
    if (err == 0)
        err = read_cpu_times(st, &base);
    if (err < 0) {
        if (err == -EINVAL)
            snprintf(reason, cap, "malformed %s: no \"cpu\" line with four or more numbers", path);
        else
            snprintf(reason, cap, "cannot read %s: %s", path, strerror(-err));
        proc_close(st);
        return -1;
    }
    /* the first read's CPU percent covers the time since open */
    st->cpu_busy = base.busy;
    st->cpu_idle = base.idle;
    st->cpu_iowait = base.iowait;

    /* network totals count from open (or, when /proc/net/dev cannot be
     * parsed now, from the first read that can) */
    if (open_system_file(&st->netdev_fd, root, "/proc/net/dev", path, sizeof path) == 0 && parse_net_dev(st) != 0) {
        st->niface = 0;
        st->net_baseline = 0;
    }
    open_system_file(&st->meminfo_fd, root, "/proc/meminfo", path, sizeof path);
    open_system_file(&st->loadavg_fd, root, "/proc/loadavg", path, sizeof path);
    st->own_proc = proc_is_own(root);

    reset_tree(st, ctx->tree_pid);
    if (st->tree_pid > 0)
        take_tree_baseline(st, root, reason, cap);
    *state = st;
    return 0;
}

static int proc_read(void *state, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                     char *reason, size_t cap) {
    struct proc_state *st = state;
    if (reason && cap)
        reason[0] = '\0';
    const char *root = ctx->root;
    int failed = 0, full = !ctx->interval_only;
    if (full) {
        read_system_cpu(st, root, s, reason, cap, &failed);
        read_memory(st, root, s, reason, cap, &failed);
        read_network(st, root, s, now_ns, reason, cap, &failed);
    }
    if (ctx->tree_pid != st->tree_pid)
        reset_tree(st, ctx->tree_pid);
    if (st->tree_pid > 0)
        read_workload(st, root, s, full, ctx->due_now, now_ns, reason, cap);
    return failed ? -1 : 0;
}

const struct sps__source sps__source_proc = {
    SPS_SOURCE_PROC,
    "proc",
    "/proc: system CPU, memory, swap and network; the process tree's CPU, memory (RSS, PSS), threads and disk I/O",
    0,
    0,
    proc_open,
    proc_read,
    proc_close,
};

int sps__proc_tree_contains(void *state, int pid) {
    struct proc_state *st = state;
    if (!st || pid <= 0 || st->tree_pid <= 0)
        return 0;
    const struct tracked_pid *e = find_tracked(st, pid);
    return e && e->cls == PID_MEMBER && e->alive;
}

size_t sps__proc_tree_rss(void *state, const struct sps__proc_rss **out) {
    struct proc_state *st = state;
    *out = st ? st->rss_readings : NULL;
    return st ? st->nrss_readings : 0;
}

size_t sps__proc_tree_pids(void *state, int *pids, size_t cap) {
    struct proc_state *st = state;
    size_t n = 0;
    for (size_t k = 0; st && k < st->nmembers; k++) {
        const struct tracked_pid *e = &st->table[st->members[k]];
        if (!e->alive)
            continue;
        if (n < cap)
            pids[n] = e->pid;
        n++;
    }
    return n;
}

void sps__proc_pss_cost(void *state, uint64_t *reads, uint64_t *cpu_ns) {
    struct proc_state *st = state;
    *reads = st ? st->pss_reads : 0;
    *cpu_ns = st ? st->pss_cpu_ns : 0;
}
