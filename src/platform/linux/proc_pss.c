/*
 * proc_pss.c - the watched tree's PSS and USS, and the budget that says
 * when to read them.
 *
 * They come from each tree process's smaps_rollup on full reads when due:
 * the kernel walks every page the process maps to write that file (about
 * 20 ns per resident KiB, milliseconds with torch loaded), so a read is due
 * only when the time since the last one pays for its predicted cost at
 * SPS_PSS_CPU_SHARE of a core (pss_due), unless the sampler asks for one
 * now (ctx->due_now); between reads the last PSS stands only while the
 * tree's RSS sum stays near what it was (sps__proc_pss_keep_current).
 */
#include "proc_parse.h"
#include "proc_state.h"
#include "sources/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

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
    return sps__proc_parse_smaps_rollup(st->text, pss, uss) == 0 ? 0 : -EINVAL;
}

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
void sps__proc_pss_keep_current(struct proc_state *st, struct sps__sample *s, double rss_bytes, int64_t now_ns) {
    if (!st->pss_current || fabs(rss_bytes - st->pss_rss_bytes) <= PSS_DRIFT * st->pss_rss_bytes)
        return;
    st->pss_current = 0;
    static const enum sps_host_metric stale[] = {SPS_M_WORKLOAD_PSS_BYTES, SPS_M_WORKLOAD_USS_BYTES};
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        s->host[stale[i]] = NAN;
        s->host_read_ns[stale[i]] = now_ns;
    }
}

/*
 * The tree's PSS, its peak and its USS, when due (see the top of the
 * file): each has its read time set, and a value, or none when the sum
 * could not be made, with the reason in a note (a partial sum would be too
 * low; the tree's memory is then its RSS sum).  A process that exited since
 * the scan counts nothing, as in the RSS sum.  A kernel without
 * smaps_rollup (before 4.14) is not asked again.
 */
void sps__proc_pss_read(struct proc_state *st, const char *root, struct sps__sample *s, int due_now, double rss_bytes,
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
        } else if (err == -ESRCH || (err == -ENOENT && !sps__proc_pid_exists(root, e->pid))) {
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

void sps__proc_pss_cost(void *state, uint64_t *reads, uint64_t *cpu_ns) {
    struct proc_state *st = state;
    *reads = st ? st->pss_reads : 0;
    *cpu_ns = st ? st->pss_cpu_ns : 0;
}
