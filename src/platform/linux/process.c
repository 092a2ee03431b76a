/* process.c - Linux implementation of platform.h. */
#include "../platform.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int sps__platform_tid(void) {
    return (int)syscall(SYS_gettid);
}

size_t sps__platform_cmdline(char *buf, size_t cap) {
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    /* the kernel ends the last argument with NUL; drop it so len counts
     * separators only, as the record format documents */
    if (len > 0 && buf[len - 1] == '\0')
        len--;
    return len;
}

void sps__platform_thread_name(char *buf, size_t cap) {
    if (cap == 0)
        return;
    buf[0] = '\0';
    char name[16];
    if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) {
        size_t i = 0;
        for (; i + 1 < cap && name[i]; i++)
            buf[i] = name[i];
        buf[i] = '\0';
    }
}

int sps__platform_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : -1;
}

int sps__platform_die_with_parent(int parent_pid, int sig) {
    if (prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0)
        return -1;
    /* the parent may have died between fork and prctl: then nothing
     * will be sent, and the child has been reparented already */
    return getppid() == (pid_t)parent_pid ? 0 : 1;
}

int sps__platform_group_guardian(int pgid) {
    pid_t parent = getpid();
    sigset_t all, saved;
    sigfillset(&all);
    /* blocked across the fork: the guardian never runs the caller's
     * handlers, and a Ctrl-C sent to the caller's group stays pending in
     * it, unseen */
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    pid_t g = fork();
    if (g != 0) {
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        return g < 0 ? -1 : (int)g;
    }
    /* no descriptor: a pipe whose reader waits for EOF, a lock or a record
     * must not stay open for the guardian's sake */
    (void)close_range(0, ~0u, 0);
    int r = sps__platform_die_with_parent(parent, SIGUSR1);
    if (r < 0)
        _exit(0);
    sigset_t death;
    sigemptyset(&death);
    sigaddset(&death, SIGUSR1);
    while (r == 0) {
        int sig;
        if (sigwait(&death, &sig) == 0 && getppid() != parent)
            break; /* a SIGUSR1 from anyone else, with the parent alive, is not its death */
    }
    kill(-(pid_t)pgid, SIGTERM);
    _exit(0);
}

/* pid's state letter, parent and start time from /proc/<pid>/stat; -1
 * when unreadable. */
static int read_stat_state(int pid, char *state, int *ppid, unsigned long long *start) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    /* "pid (comm) state ppid ... starttime(22nd) ...": comm may hold
     * spaces and parentheses, so parse from the last ')' */
    char *p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     state, ppid, start) != 3)
        return -1;
    return 0;
}

static int read_stat(int pid, int *ppid, unsigned long long *start) {
    char state;
    return read_stat_state(pid, &state, ppid, start);
}

int sps__platform_process_running(struct sps_process_id id) {
    char state;
    int ppid;
    unsigned long long start;
    if (id.pid <= 0 || read_stat_state(id.pid, &state, &ppid, &start) != 0)
        return 0;
    /* a zombie has exited (its exit handlers ran); only its parent's
     * wait is missing */
    return start == id.start && state != 'Z' && state != 'X';
}

int sps__platform_running_age(int pid, uint64_t *age_ns) {
    char state;
    int ppid;
    unsigned long long start;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec now;
    if (pid <= 0 || hz <= 0 || read_stat_state(pid, &state, &ppid, &start) != 0 || state == 'Z' || state == 'X' ||
        clock_gettime(CLOCK_BOOTTIME, &now) != 0) /* starttime counts clock ticks since boot */
        return 0;
    uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    uint64_t start_ns = start / (unsigned long long)hz * 1000000000u +
                        start % (unsigned long long)hz * 1000000000u / (unsigned long long)hz;
    *age_ns = now_ns > start_ns ? now_ns - start_ns : 0;
    return 1;
}

/* The rest of a line fgets cut short. */
static void skip_line(FILE *f) {
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n')
        ;
}

int sps__platform_maps_file(int pid, const char *path) {
    char real[PATH_MAX], maps[64], line[PATH_MAX + 128];
    struct stat st;
    if (pid <= 0 || !realpath(path, real) || stat(real, &st) != 0)
        return 0;
    snprintf(maps, sizeof maps, "/proc/%d/maps", pid);
    FILE *f = fopen(maps, "re");
    if (!f)
        return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        int whole = len > 0 && line[len - 1] == '\n';
        if (whole)
            line[--len] = '\0';
        else
            skip_line(f);
        /* "start-end perms offset major:minor inode   pathname" */
        unsigned major_no, minor_no;
        unsigned long long inode;
        int at = 0;
        if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &major_no, &minor_no, &inode, &at) < 3 || inode == 0)
            continue;
        found = (inode == (unsigned long long)st.st_ino && major_no == major(st.st_dev) &&
                 minor_no == minor(st.st_dev)) ||
                (whole && at > 0 && !strcmp(line + at, real));
    }
    fclose(f);
    return found;
}

struct sps_process_id sps__platform_self(void) {
    struct sps_process_id id = {(int)getpid(), 0};
    int ppid;
    read_stat(id.pid, &ppid, &id.start);
    return id;
}

int sps__platform_ancestors(struct sps_process_id *ids, int max) {
    int n = 0;
    int pid = (int)getppid();
    while (pid > 1 && n < max) {
        int ppid;
        unsigned long long start;
        if (read_stat(pid, &ppid, &start) != 0)
            break;
        ids[n].pid = pid;
        ids[n].start = start;
        n++;
        pid = ppid;
    }
    return n;
}

int sps__platform_cpu_count(void) {
    /* taskset and cgroup cpusets narrow the affinity mask: those are the
     * CPUs the workload can keep busy, not the machine's */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 1000000 ? (int)n : 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif

int sps__platform_prefault(void *addr, size_t len) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    /* madvise takes whole pages: from the page that holds addr */
    uintptr_t from = (uintptr_t)addr & ~((uintptr_t)page - 1), to = (uintptr_t)addr + len;
    if (madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0)
        return 0;
    if (errno != EINVAL)
        return -1; /* the kernel knows the advice and could not: do not insist */
    /* an older kernel: write every page ourselves, adding 0 to a byte of it
     * (one write fault each, and what the page holds stays as it is) */
    for (uintptr_t p = from < (uintptr_t)addr ? from + (uintptr_t)page : from; p < to; p += (uintptr_t)page)
        __atomic_fetch_add((unsigned char *)p, 0, __ATOMIC_RELAXED);
    if (from < (uintptr_t)addr)
        __atomic_fetch_add((unsigned char *)addr, 0, __ATOMIC_RELAXED);
    return 0;
}

void sps__platform_release(void *addr, size_t len) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    uintptr_t mask = (uintptr_t)page - 1;
    uintptr_t from = ((uintptr_t)addr + mask) & ~mask, to = ((uintptr_t)addr + len) & ~mask;
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_DONTNEED);
}

int sps__platform_mkdirs(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}
