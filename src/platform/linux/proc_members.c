/*
 * proc_members.c - per-process readings of the watched tree and the tree's
 * totals: CPU time, resident memory, threads and disk I/O of each tree
 * process from /proc/PID/{stat,statm,status,io} (or its CPU clock), summed.
 *
 * A read at the interval alone reads only the tree's CPU time and resident
 * memory: per tree process its CPU clock (the kernel's nanosecond sum over
 * its threads, one syscall, where /proc is this process's own) or else its
 * stat, and its statm.  A full read adds status and io, and walks the tree
 * for new processes (proc_tree.c).
 *
 * Totals of the tree (CPU time, disk bytes) add the last values seen for
 * tree processes that have gone, so they never drop when a worker exits.
 *
 * Each read also leaves, beside the sample, each tree process's own
 * resident set (sps__proc_tree_rss): the sampler keeps a series of it per
 * process, which the published sample has no room for.
 */
#include "proc_parse.h"
#include "proc_state.h"
#include "sources/sysfs.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* The resident set from /proc/PID/statm (second field, in pages): a tenth
 * of what status costs the kernel to write.  -1 when unreadable. */
static int read_statm_rss(struct proc_state *st, const char *root, struct tracked_pid *e, uint64_t *bytes) {
    uint64_t resident;
    if (sps__proc_read_pid_file(st, root, e, FILE_STATM) < 0 ||
        sps__proc_parse_statm_resident(st->text, &resident) != 0)
        return -1;
    long page = sysconf(_SC_PAGESIZE);
    *bytes = resident * (uint64_t)(page > 0 ? page : 4096);
    return 0;
}

/*
 * e's resident set (and on a full read its name, high-water mark and
 * threads) into e and the scan.  clock_ok: cpu_ns is e's CPU clock, read
 * just now.  A process whose CPU clock has not moved since a file was read
 * has not run since: it cannot have mapped or touched memory, made a thread
 * or done I/O, so that file would say the same (only the kernel reclaiming
 * or swapping its pages out could lower its RSS, which the next read after
 * it runs sees).  DataLoader workers blocked on a full queue are such
 * processes most of the time.  Their last figures stand.  Returns 0, or -1
 * when the process is gone.
 */
static int read_member_memory(struct proc_state *st, const char *root, struct tracked_pid *e, struct tree_scan *scan,
                              int full, int clock_ok, uint64_t cpu_ns) {
    uint64_t rss;
    int rss_same = clock_ok && e->rss_known && e->rss_cpu_ns == cpu_ns;
    int status_same = clock_ok && e->status_known && e->status_cpu_ns == cpu_ns;
    if (rss_same && (!full || status_same)) {
        scan->rss_bytes += e->rss_bytes;
        e->rss_read = 1;
        return 0;
    }
    if (!full && read_statm_rss(st, root, e, &rss) == 0) {
        scan->rss_bytes += rss;
        e->rss_bytes = rss;
        e->rss_read = 1;
        e->rss_known = clock_ok;
        e->rss_cpu_ns = cpu_ns;
        return 0;
    }
    if (sps__proc_read_pid_file(st, root, e, FILE_STATUS) < 0)
        return -1;
    struct sps__proc_status status;
    sps__proc_parse_status(st->text, &status);
    if (status.has_name)
        memcpy(e->comm, status.name, sizeof e->comm);
    if (status.has_rss) { /* a zombie has no memory lines */
        scan->rss_bytes += status.rss_kb * 1024;
        e->rss_bytes = status.rss_kb * 1024;
        e->rss_read = 1;
    }
    if (status.has_hwm)
        e->hwm_bytes = status.hwm_kb * 1024;
    if (status.has_threads)
        e->threads = (int)status.threads;
    e->rss_known = e->status_known = clock_ok && status.has_rss;
    e->rss_cpu_ns = e->status_cpu_ns = cpu_ns;
    return 0;
}

/* A full read's disk counters of e (unless its CPU clock says it has not
 * run since they were read).  A process that cannot be read while it exists
 * leaves the tree without disk readings, with a note. */
static void read_member_io(struct proc_state *st, const char *root, struct tracked_pid *e, struct tree_scan *scan,
                           int clock_ok, uint64_t cpu_ns, char *reason, size_t cap) {
    if (clock_ok && e->io_known && e->io_cpu_ns == cpu_ns)
        return; /* it has done no I/O since: its last counts stand */
    ssize_t n = sps__proc_read_pid_file(st, root, e, FILE_IO);
    uint64_t read_bytes, write_bytes;
    if (n >= 0 && sps__proc_parse_io(st->text, &read_bytes, &write_bytes) == 0) {
        e->disk_read = read_bytes;
        e->disk_write = write_bytes;
        e->io_known = clock_ok;
        e->io_cpu_ns = cpu_ns;
        return;
    }
    if ((n == -ENOENT || n == -ESRCH) && !sps__proc_pid_exists(root, e->pid))
        return; /* exited after its status was read: keep its last values */
    if (scan->disk_ok) {
        char path[512], note[600];
        sps__path(path, sizeof path, root, "/proc/%d/io", e->pid);
        snprintf(note, sizeof note, "no workload disk readings: cannot read %s: %s", path,
                 n < 0 ? strerror((int)-n) : "no read_bytes/write_bytes");
        add_note(reason, cap, note);
    }
    scan->disk_ok = 0;
}

/* One tree process's CPU time (from its clock, when it has one), memory,
 * threads and io.  status (the high-water mark and the thread count) and
 * io are read by full reads; at the interval alone statm gives the resident
 * set and the rest keeps its last values.  Returns 0, or -1 when the
 * process is gone. */
static int read_member(struct proc_state *st, const char *root, struct tracked_pid *e, struct tree_scan *scan,
                       int full, char *reason, size_t cap) {
    struct timespec cpu;
    /* the clock first: the file reads after it prove the pid was still e's */
    int clock_ok = sps__proc_uses_cpu_clock(st, e) && clock_gettime(e->cpu_clock, &cpu) == 0;
    uint64_t cpu_ns = clock_ok ? (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec : 0;
    if (read_member_memory(st, root, e, scan, full, clock_ok, cpu_ns) != 0)
        return -1;
    if (clock_ok)
        e->cpu_ns = cpu_ns;
    if (!e->has_clock && st->own_proc && clock_getcpuclockid(e->pid, &e->cpu_clock) == 0)
        e->has_clock = 1; /* from the next read on (its descriptors are open now) */
    if (e->hwm_bytes > scan->hwm_bytes)
        scan->hwm_bytes = e->hwm_bytes;
    scan->threads += e->threads;
    scan->processes++;
    if (full)
        read_member_io(st, root, e, scan, clock_ok, cpu_ns, reason, cap);
    return 0;
}

/* Walk the tree on a full read (proc_tree.c), or recheck its members at the
 * interval alone; then read each member.  A tree never listed is walked
 * whatever the read. */
static int scan_tree(struct proc_state *st, const char *root, struct tree_scan *scan, int full, int now, char *reason,
                     size_t cap) {
    memset(scan, 0, sizeof *scan);
    scan->disk_ok = 1;
    full |= !st->listed_once;
    if (full) {
        int err = sps__proc_tree_walk(st, root, now);
        if (err < 0)
            return err;
    } else {
        sps__proc_tree_recheck_members(st, root);
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
void sps__proc_workload_read(struct proc_state *st, const char *root, struct sps__sample *s, int full, int pss_now,
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
    sps__proc_pss_keep_current(st, s, (double)scan.rss_bytes, now_ns);
    if (!full)
        return; /* threads, disk and PSS wait for the machine interval */
    st->tree_full_reads++;
    if (!st->tree_seen_ns)
        st->tree_seen_ns = now_ns;
    sps__proc_pss_read(st, root, s, pss_now, (double)scan.rss_bytes, now_ns, reason, cap);
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
void sps__proc_reset_tree(struct proc_state *st, int tree_pid) {
    for (size_t i = 0; i < st->ntable; i++)
        sps__proc_close_member_files(st, &st->table[i]);
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
void sps__proc_take_tree_baseline(struct proc_state *st, const char *root, char *reason, size_t cap) {
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

size_t sps__proc_tree_rss(void *state, const struct sps__proc_rss **out) {
    struct proc_state *st = state;
    *out = st ? st->rss_readings : NULL;
    return st ? st->nrss_readings : 0;
}
