/*
 * source_proc.c - the proc source: system CPU, memory, swap and network
 * from /proc/stat, /proc/meminfo and /proc/net/dev, and the watched
 * process tree's CPU time, memory (RSS, PSS), threads and disk I/O from
 * /proc/PID/{stat,statm,status,io,smaps_rollup}.
 *
 * This file is the source's vtable: open, read, close.  The work is in its
 * phases (proc_state.h lists the files):
 *
 *   parsing       proc_parse.c    the /proc file formats, text in, numbers out
 *   system        proc_system.c   host CPU, memory, swap, network
 *   process tree  proc_tree.c     walking the tree: listing /proc, classifying
 *                 proc_members.c  per-process readings and the tree's totals
 *                 proc_pss.c      the tree's PSS and the budget of its reads
 *
 * A read at the interval alone (ctx->interval_only) reads only the tree's
 * CPU time and resident memory; a full read adds the system files, the
 * tree's threads, disk I/O and (when due) PSS, and looks for new tree
 * processes.
 */
#include "proc_state.h"
#include "sources/sysfs.h"

#include <stdlib.h>
#include <unistd.h>

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
        sps__proc_close_member_files(st, &st->table[i]);
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

    if (sps__proc_system_open(st, root, reason, cap) != 0) {
        proc_close(st);
        return -1;
    }
    st->own_proc = proc_is_own(root);

    sps__proc_reset_tree(st, ctx->tree_pid);
    if (st->tree_pid > 0)
        sps__proc_take_tree_baseline(st, root, reason, cap);
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
    if (full)
        sps__proc_system_read(st, root, s, now_ns, reason, cap, &failed);
    if (ctx->tree_pid != st->tree_pid)
        sps__proc_reset_tree(st, ctx->tree_pid);
    if (st->tree_pid > 0)
        sps__proc_workload_read(st, root, s, full, ctx->due_now, now_ns, reason, cap);
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
