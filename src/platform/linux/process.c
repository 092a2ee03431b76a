/* process.c - Linux implementation of platform.h. */
#include "../platform.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

int sps__platform_ancestors(int *pids, int max) {
    int n = 0;
    int pid = (int)getppid();
    while (pid > 1 && n < max) {
        pids[n++] = pid;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            break;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0)
            break;
        buf[len] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parens */
        char *close_paren = strrchr(buf, ')');
        int ppid;
        if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
            break;
        pid = ppid;
    }
    return n;
}
