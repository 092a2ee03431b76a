/*
 * proc_tree.c - walking the watched process tree: the table of every pid
 * in ROOT/proc, how it is listed, which processes belong to the tree, and
 * the files each tree process keeps open.
 *
 * New processes are found by listing /proc, skipped while /proc/loadavg's
 * last allocated pid has not moved (no process or thread was made
 * anywhere).  Of the processes outside the tree only those not yet
 * classified (new ones, or a pid whose /proc directory changed) have their
 * stat read, to learn their parent.  A process keeps its classification
 * while it lives (the pair pid, start time names it), so a worker orphaned
 * and reparented to the subreaper stays in the tree.
 */
#include "proc_parse.h"
#include "proc_state.h"
#include "sources/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
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

static const char *const member_file_name[MEMBER_FILES] = {"stat", "statm", "status", "io"};

static int cmp_listed(const void *a, const void *b) {
    int x = ((const struct listed_pid *)a)->pid, y = ((const struct listed_pid *)b)->pid;
    return (x > y) - (x < y);
}

struct tracked_pid *sps__proc_find_tracked(struct proc_state *st, int pid) {
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
void sps__proc_close_member_files(struct proc_state *st, struct tracked_pid *e) {
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
    sps__proc_close_member_files(st, e);
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
ssize_t sps__proc_read_pid_file(struct proc_state *st, const char *root, struct tracked_pid *e,
                                enum member_file which) {
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
        sps__proc_close_member_files(st, e);
        e->gone = n == -ESRCH; /* the descriptor's process has exited */
    }
    return n;
}

/* CPU time in /proc/PID/stat's clock ticks, in nanoseconds. */
uint64_t sps__proc_ticks_to_ns(const struct proc_state *st, uint64_t ticks) {
    return ticks * 1000000000u / (uint64_t)st->clk_tck;
}

/* Does e's CPU time come from its CPU clock?  Only while its descriptors
 * are kept: a read through them after the clock's proves the pid was still
 * e's (a pid is not reused while its process lives). */
int sps__proc_uses_cpu_clock(const struct proc_state *st, const struct tracked_pid *e) {
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
        if (e->cls == PID_MEMBER && !e->verify && (e->gone || sps__proc_uses_cpu_clock(st, e))) {
            e->alive = !e->gone; /* the clock or its kept files will tell */
            continue;
        }
        e->alive = 0;
        if (e->cls == PID_OUTSIDE && !e->verify)
            continue;
        struct sps__proc_pid_stat ps;
        if (e->verify) { /* its directory changed: read the pid afresh (its start time says whose it is) */
            sps__proc_close_member_files(st, e);
            e->gone = 0;
        }
        if (sps__proc_read_pid_file(st, root, e, FILE_STAT) < 0 || sps__proc_parse_pid_stat(st->text, &ps) != 0)
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
        e->cpu_ns = sps__proc_ticks_to_ns(st, ps.cpu_ticks);
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
    struct tracked_pid *parent = sps__proc_find_tracked(st, e->ppid);
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
int sps__proc_pid_exists(const char *root, int pid) {
    char path[512];
    struct stat sb;
    return sps__path(path, sizeof path, root, "/proc/%d", pid) == 0 && stat(path, &sb) == 0;
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
    return sps__proc_parse_last_pid(st->text);
}

int sps__proc_tree_walk(struct proc_state *st, const char *root, int now) {
    char path[512];
    if (!st->proc_dir) {
        if (sps__path(path, sizeof path, root, "/proc") != 0)
            return -ENAMETOOLONG;
        st->proc_dir = opendir(path);
        if (!st->proc_dir)
            return -errno;
        st->skip_to_pids = pids_start_at_known_position(st->proc_dir);
    }
    /* on a busy machine some pid is made between any two reads: list at
     * most every LISTING_EVERY_FULL_READS full reads (and read loadavg only
     * then) */
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
    return collect_members(st);
}

void sps__proc_tree_recheck_members(struct proc_state *st, const char *root) {
    /* members only: the rest of the table waits for the next listing */
    for (size_t k = 0; k < st->nmembers; k++) {
        struct tracked_pid *e = &st->table[st->members[k]];
        if (e->gone || sps__proc_uses_cpu_clock(st, e)) {
            e->alive = !e->gone;
            continue;
        }
        struct sps__proc_pid_stat ps;
        e->alive = 0;
        if (sps__proc_read_pid_file(st, root, e, FILE_STAT) < 0 || sps__proc_parse_pid_stat(st->text, &ps) != 0 ||
            ps.start_ticks != e->start_ticks)
            continue; /* gone, or the pid is another process's now: the next listing sorts it out */
        e->alive = 1;
        e->cpu_ns = sps__proc_ticks_to_ns(st, ps.cpu_ticks);
    }
}

int sps__proc_tree_contains(void *state, int pid) {
    struct proc_state *st = state;
    if (!st || pid <= 0 || st->tree_pid <= 0)
        return 0;
    const struct tracked_pid *e = sps__proc_find_tracked(st, pid);
    return e && e->cls == PID_MEMBER && e->alive;
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
