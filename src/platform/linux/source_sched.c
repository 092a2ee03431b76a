/*
 * source_sched.c - the sched source: how long work waited for a CPU.
 *
 * CPU pressure comes from /proc/pressure/cpu (PSI: Linux 4.20 and later,
 * built with CONFIG_PSI and not booted with psi=0).  Its "some" line ends
 * in total=, the microseconds since boot in which at least one runnable
 * task waited for a CPU; the share of each interval is that total's growth
 * over the interval's length.  That is exact for the interval, where the
 * line's avg10 is a decaying ten-second average that lags a short run and
 * carries what came before it.
 *
 * The workload's run delay comes from each of its threads'
 * /proc/PID/task/TID/schedstat ("exec_ns run_delay_ns timeslices"): the
 * time the thread was runnable but waiting on a runqueue.
 * /proc/PID/schedstat alone would not do: the kernel fills it from the
 * task the pid names, the main thread, so a process whose work runs on
 * other threads (intra-op pools, DataLoader threads) would read as never
 * waiting.  Each read lists every tree process's task folder (about what
 * one schedstat read costs) and reads each thread through a descriptor
 * kept open while it lives: a pread of one costs about 1 us here, an
 * open, read and close about 7 us.  At most MAX_OPEN_TASKS threads keep
 * descriptors; the rest are read by path.  Every metric here is read at
 * the machine interval; a tree of more than THREADS_PER_READ threads has
 * its threads read every few machine intervals (the reads between leave
 * the run delay without a value), so the cost stays bounded.
 *
 * The total counts each thread's run delay since it started (as
 * workload_cpu_seconds counts CPU time), and a thread that exits leaves its
 * last reading in it, so it never drops; what a thread waited between its
 * last read and its exit is not seen.
 */
#include "sources/source.h"
#include "sources/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OPEN_TASKS 256 /* with the proc source's 256 at most, well below the usual 1024 */
/* tids listed and read per process (the rest are left out) */
#define MAX_TASKS_PER_PROCESS 8192
#define MAX_TREE_PIDS 4096
/* A tree of more threads is read every (threads / THREADS_PER_READ + 1)
 * reads, so a read costs about what THREADS_PER_READ threads do (about
 * 0.02% of a core at the 500 ms machine interval, measured by
 * bench_sched_source); the rate then spans the longer interval. */
#define THREADS_PER_READ 32
/* The run delay is read at most this often (a fresh read excepted), while
 * CPU pressure, one pread, is read at every machine interval: the thread
 * reads cost a sixth of the whole sampler's CPU with python+torch and two
 * DataLoader workers (76 us a read) and put it over its 0.1% of a core at
 * the 500 ms default; every other interval halves that, and the rate over
 * a second is as exact as over half of one. */
#define RUN_DELAY_MIN_GAP_NS 900000000LL

/* One thread of a tree process. */
struct task {
    int pid, tid;
    int fd;             /* its schedstat, kept open (-1: read by path) */
    uint64_t delay_ns;  /* run delay at its last good read */
    unsigned seen;      /* the generation of the last read that listed it */
};

struct sched_state {
    /* CPU pressure */
    int psi_fd;              /* -1: no PSI (psi_why says why) */
    char psi_why[160];
    uint64_t psi_total_us;   /* "some" total at the last read */
    int64_t psi_ns;          /* when it was read; -1: not yet (the first read has no share) */

    /* run delay */
    int schedstat_ok;        /* the kernel has per-task schedstat files */
    int tree_pid;
    struct task *tasks;      /* sorted by (pid, tid) */
    size_t ntasks, tasks_cap;
    int open_tasks;
    unsigned generation;
    uint64_t departed_ns;    /* run delay of threads that have exited */
    double last_total_s;
    int64_t last_ns;
    int rate_valid;
    int skip_reads;          /* reads left before the tree's threads are read again */
    int64_t delay_read_ns;   /* when they were last read (-1: never) */
    int *pids;               /* the tree's pids for one read */
    int *tids;               /* one process's listed tids */

    char text[256];
};

/* ------------------------------------------------------------ parsing */

/* The "some" line's total= (microseconds).  Returns 0, or -EINVAL. */
static int parse_psi_some_total(const char *text, uint64_t *total_us) {
    if (strncmp(text, "some ", 5) != 0)
        return -EINVAL;
    const char *nl = strchr(text, '\n');
    const char *t = strstr(text, " total=");
    if (!t || (nl && t > nl))
        return -EINVAL;
    t += 7;
    if (*t < '0' || *t > '9')
        return -EINVAL;
    uint64_t v = 0;
    while (*t >= '0' && *t <= '9')
        v = v * 10 + (uint64_t)(*t++ - '0');
    *total_us = v;
    return 0;
}

/* schedstat's second field, the run delay in ns.  Returns 0, or -EINVAL. */
static int parse_run_delay(const char *text, uint64_t *delay_ns) {
    char *end;
    errno = 0;
    (void)strtoull(text, &end, 10); /* time on the CPU */
    if (end == text || errno || *end != ' ')
        return -EINVAL;
    const char *p = end + 1;
    if (*p < '0' || *p > '9')
        return -EINVAL;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno)
        return -EINVAL;
    *delay_ns = v;
    return 0;
}

/* ------------------------------------------------------------ pressure */

/* Open /proc/pressure/cpu and check that it parses (the first read's
 * share needs a second read).  On failure psi_why says why and psi_fd
 * stays -1. */
static void open_pressure(struct sched_state *st, const char *root) {
    char path[512];
    st->psi_fd = -1;
    if (sps__path(path, sizeof path, root, "/proc/pressure/cpu") != 0) {
        snprintf(st->psi_why, sizeof st->psi_why, "no CPU pressure: path too long");
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -errno : sps__pread_record(fd, st->text, sizeof st->text);
    if (n < 0) {
        const char *hint = n == -ENOENT ? " (a kernel without PSI)" : n == -EOPNOTSUPP ? " (PSI off: boot psi=1)" : "";
        snprintf(st->psi_why, sizeof st->psi_why, "no CPU pressure: %s: %s%s", path, strerror((int)-n), hint);
    } else if (parse_psi_some_total(st->text, &st->psi_total_us) != 0) {
        snprintf(st->psi_why, sizeof st->psi_why, "no CPU pressure: malformed %s: no \"some ... total=N\" line",
                 path);
        n = -EINVAL;
    }
    if (n < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    st->psi_fd = fd;
}

static int read_pressure(struct sched_state *st, struct sps__sample *s, int64_t now_ns, char *reason, size_t cap) {
    uint64_t total;
    ssize_t n = sps__pread_record(st->psi_fd, st->text, sizeof st->text);
    if (n < 0 || parse_psi_some_total(st->text, &total) != 0) {
        snprintf(reason, cap, "%s /proc/pressure/cpu: %s", n < 0 ? "cannot read" : "malformed",
                 n < 0 ? strerror((int)-n) : "no \"some ... total=N\" line");
        return -1;
    }
    if (st->psi_ns >= 0 && now_ns > st->psi_ns && total >= st->psi_total_us) {
        double share = 100.0 * (double)(total - st->psi_total_us) * 1e3 / (double)(now_ns - st->psi_ns);
        s->host[SPS_M_CPU_PRESSURE_SOME_PERCENT] = share > 100 ? 100 : share; /* the two clocks' jitter */
    }
    st->psi_total_us = total;
    st->psi_ns = now_ns;
    return 0;
}

/* ------------------------------------------------------------ run delay */

static int cmp_task(const void *a, const void *b) {
    const struct task *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->tid > y->tid) - (x->tid < y->tid);
}

static void close_task(struct sched_state *st, struct task *t) {
    if (t->fd >= 0) {
        close(t->fd);
        t->fd = -1;
        st->open_tasks--;
    }
}

/* A thread is gone: its last reading stays in the total. */
static void retire_task(struct sched_state *st, struct task *t) {
    st->departed_ns += t->delay_ns;
    close_task(st, t);
    t->pid = 0; /* dropped by the next compaction */
}

/* Read one thread's schedstat into st->text: through its kept descriptor,
 * opened on first use while fewer than MAX_OPEN_TASKS are open, or else by
 * path.  Returns the length or -errno. */
static ssize_t read_task_file(struct sched_state *st, const char *root, struct task *t) {
    if (t->fd >= 0)
        return sps__pread_record(t->fd, st->text, sizeof st->text);
    char path[512];
    if (sps__path(path, sizeof path, root, "/proc/%d/task/%d/schedstat", t->pid, t->tid) != 0)
        return -ENAMETOOLONG;
    if (st->open_tasks >= MAX_OPEN_TASKS)
        return sps__read_text(path, st->text, sizeof st->text);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    t->fd = fd;
    st->open_tasks++;
    return sps__pread_record(fd, st->text, sizeof st->text);
}

/* Read one thread's run delay into t.  Returns 0, or -errno (-ESRCH or
 * -ENOENT: it has exited; -EINVAL: malformed). */
static int read_task(struct sched_state *st, const char *root, struct task *t) {
    ssize_t n = read_task_file(st, root, t);
    if (n < 0)
        return (int)n;
    uint64_t delay;
    if (parse_run_delay(st->text, &delay) != 0)
        return -EINVAL;
    if (delay >= t->delay_ns) /* a thread's run delay only grows */
        t->delay_ns = delay;
    return 0;
}

/* Add the threads listed for pid that are not yet known (unsorted at the
 * end; the caller sorts), and mark the known ones seen.  Returns how many
 * tids are listed, or -errno when the folder cannot be listed. */
static int list_threads(struct sched_state *st, const char *root, int pid, size_t known_end) {
    char dir[512];
    if (sps__path(dir, sizeof dir, root, "/proc/%d/task", pid) != 0)
        return -ENAMETOOLONG;
    int n = sps__list_numbered(dir, "", "", st->tids, MAX_TASKS_PER_PROCESS);
    if (n < 0)
        return n;
    int listed = n < MAX_TASKS_PER_PROCESS ? n : MAX_TASKS_PER_PROCESS;
    for (int i = 0; i < listed; i++) {
        struct task key = {.pid = pid, .tid = st->tids[i]};
        struct task *t = known_end ? bsearch(&key, st->tasks, known_end, sizeof *st->tasks, cmp_task) : NULL;
        if (t) {
            t->seen = st->generation;
            continue;
        }
        if (st->ntasks == st->tasks_cap) {
            size_t cap = st->tasks_cap ? st->tasks_cap * 2 : 64;
            struct task *grown = realloc(st->tasks, cap * sizeof *grown);
            if (!grown)
                return -ENOMEM;
            st->tasks = grown;
            st->tasks_cap = cap;
        }
        st->tasks[st->ntasks++] = (struct task){pid, st->tids[i], -1, 0, st->generation};
    }
    return n;
}

/* Drop the retired threads (the rest stay in order). */
static void compact_tasks(struct sched_state *st) {
    size_t kept = 0;
    for (size_t i = 0; i < st->ntasks; i++)
        if (st->tasks[i].pid != 0)
            st->tasks[kept++] = st->tasks[i];
    st->ntasks = kept;
}

static void reset_tree(struct sched_state *st, int tree_pid) {
    for (size_t i = 0; i < st->ntasks; i++)
        close_task(st, &st->tasks[i]);
    st->ntasks = 0;
    st->skip_reads = 0;
    st->delay_read_ns = -1;
    st->tree_pid = tree_pid;
    st->departed_ns = 0;
    st->rate_valid = 0;
}

/* Every thread of the tree's processes: listed, read, the gone retired.
 * Returns 0, or -1 with reason set when a listing or a read failed (the
 * values are set all the same when some thread was listed or read). */
static int read_run_delay(struct sched_state *st, const struct sps__source_ctx *ctx, struct sps__sample *s,
                          int64_t now_ns, char *reason, size_t cap) {
    size_t npids = ctx->tree_members ? ctx->tree_members(ctx->in_tree_arg, st->pids, MAX_TREE_PIDS) : 0;
    if (npids > MAX_TREE_PIDS)
        npids = MAX_TREE_PIDS;
    if (npids == 0) { /* no list (or none yet): the root alone */
        st->pids[0] = st->tree_pid;
        npids = 1;
    }
    if (++st->generation == 0)
        st->generation = 1;
    size_t known_end = st->ntasks;
    int listed_any = 0, failed = 0;
    for (size_t k = 0; k < npids; k++) {
        int n = list_threads(st, ctx->root, st->pids[k], known_end);
        listed_any |= n >= 0;
        if (n >= 0 || n == -ENOENT || n == -ESRCH)
            continue; /* listed, or the process has exited: its threads retire below */
        /* a listing that failed for want of memory or descriptors: the
         * process's known threads stay (read through their descriptors),
         * or they would retire now and count twice when listed again */
        for (size_t i = 0; i < known_end; i++)
            if (st->tasks[i].pid == st->pids[k])
                st->tasks[i].seen = st->generation;
        if (!failed) {
            char dir[512];
            sps__path(dir, sizeof dir, ctx->root, "/proc/%d/task", st->pids[k]);
            snprintf(reason, cap, "run delay: cannot list %s: %s", dir, strerror(-n));
            failed = 1;
        }
    }
    if (st->ntasks > known_end) /* new threads were appended; the known ones stay in order */
        qsort(st->tasks, st->ntasks, sizeof *st->tasks, cmp_task);
    uint64_t live = 0;
    int read_any = 0;
    for (size_t i = 0; i < st->ntasks; i++) {
        struct task *t = &st->tasks[i];
        if (t->seen != st->generation) { /* not listed: exited, or its process left the tree */
            retire_task(st, t);
            continue;
        }
        int err = read_task(st, ctx->root, t);
        if (err == -ESRCH || err == -ENOENT) {
            retire_task(st, t);
            continue;
        }
        if (err < 0 && !failed) {
            char path[512];
            sps__path(path, sizeof path, ctx->root, "/proc/%d/task/%d/schedstat", t->pid, t->tid);
            snprintf(reason, cap, "run delay: %s %s: %s", err == -EINVAL ? "malformed" : "cannot read", path,
                     err == -EINVAL ? "no \"exec_ns run_delay_ns ...\" line" : strerror(-err));
            failed = 1;
        }
        read_any |= err == 0;
        live += t->delay_ns;
    }
    compact_tasks(st);
    if (!listed_any && !read_any) { /* nothing of the tree could be seen */
        if (!failed) {
            char path[512];
            sps__path(path, sizeof path, ctx->root, "/proc/%d/task", st->tree_pid);
            snprintf(reason, cap, "run delay: cannot list %s", path);
        }
        st->rate_valid = 0;
        return -1;
    }
    double total_s = (double)(live + st->departed_ns) * 1e-9;
    s->host[SPS_M_WORKLOAD_RUN_DELAY_SECONDS] = total_s;
    if (st->rate_valid && now_ns > st->last_ns) {
        double wall_s = (double)(now_ns - st->last_ns) * 1e-9;
        s->host[SPS_M_WORKLOAD_RUN_DELAY_PERCENT] = 100.0 * (total_s - st->last_total_s) / wall_s;
    }
    st->last_total_s = total_s;
    st->last_ns = now_ns;
    st->rate_valid = 1;
    return failed ? -1 : 0;
}

/* ------------------------------------------------------------ the vtable */

static void sched_close(void *state) {
    struct sched_state *st = state;
    if (!st)
        return;
    if (st->psi_fd >= 0)
        close(st->psi_fd);
    for (size_t i = 0; i < st->ntasks; i++)
        close_task(st, &st->tasks[i]);
    free(st->tasks);
    free(st->pids);
    free(st->tids);
    free(st);
}

static int sched_open(const struct sps__source_ctx *ctx, void **state, char *reason, size_t cap) {
    *state = NULL;
    if (reason && cap)
        reason[0] = '\0';
    struct sched_state *st = calloc(1, sizeof *st);
    if (st) {
        st->pids = malloc(MAX_TREE_PIDS * sizeof *st->pids);
        st->tids = malloc(MAX_TASKS_PER_PROCESS * sizeof *st->tids);
    }
    if (!st || !st->pids || !st->tids) {
        if (st)
            st->psi_fd = -1;
        sched_close(st);
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    open_pressure(st, ctx->root);
    /* per-task schedstat (CONFIG_SCHED_INFO): this process's own says
     * whether the kernel keeps it */
    char path[512], why[240] = "";
    ssize_t n = sps__path(path, sizeof path, ctx->root, "/proc/self/schedstat") == 0
                    ? sps__read_text(path, st->text, sizeof st->text)
                    : -ENAMETOOLONG;
    uint64_t delay;
    if (n >= 0 && parse_run_delay(st->text, &delay) == 0)
        st->schedstat_ok = 1;
    else if (n >= 0)
        snprintf(why, sizeof why, "no run delay: malformed %s", path);
    else
        snprintf(why, sizeof why, "no run delay: %s: %s%s", path, strerror((int)-n),
                 n == -ENOENT ? " (a kernel without schedstat)" : "");
    if (st->psi_fd < 0 && !st->schedstat_ok) {
        snprintf(reason, cap, "%s; %s", st->psi_why, why);
        sched_close(st);
        return -1;
    }
    /* the note says what is missing; doctor and report.json show it */
    snprintf(reason, cap, "%s%s%s", st->psi_fd < 0 ? st->psi_why : "", st->psi_fd < 0 && why[0] ? "; " : "", why);
    st->psi_ns = -1;
    reset_tree(st, ctx->tree_pid);
    *state = st;
    return 0;
}

static int sched_read(void *state, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                      char *reason, size_t cap) {
    struct sched_state *st = state;
    if (reason && cap)
        reason[0] = '\0';
    char psi_error[160] = "", delay_error[240] = "";
    int failed = 0;
    if (st->psi_fd >= 0)
        failed |= read_pressure(st, s, now_ns, psi_error, sizeof psi_error) != 0;
    if (ctx->tree_pid != st->tree_pid)
        reset_tree(st, ctx->tree_pid);
    int too_soon = !ctx->due_now && st->delay_read_ns >= 0 && now_ns - st->delay_read_ns < RUN_DELAY_MIN_GAP_NS;
    if (st->schedstat_ok && st->tree_pid > 0 && st->skip_reads > 0) {
        st->skip_reads--; /* a large tree: this read leaves the run delay without a value */
    } else if (st->schedstat_ok && st->tree_pid > 0 && !too_soon) {
        failed |= read_run_delay(st, ctx, s, now_ns, delay_error, sizeof delay_error) != 0;
        st->skip_reads = (int)(st->ntasks / THREADS_PER_READ);
        st->delay_read_ns = now_ns;
    }
    if (reason && cap)
        snprintf(reason, cap, "%s%s%s", psi_error, psi_error[0] && delay_error[0] ? "; " : "", delay_error);
    return failed ? -1 : 0;
}

const struct sps__source sps__source_sched = {
    SPS_SOURCE_SCHED,
    "sched",
    "CPU pressure (/proc/pressure/cpu) and the process tree's run delay (/proc/PID/task/TID/schedstat)",
    0,
    0,
    sched_open,
    sched_read,
    sched_close,
};
