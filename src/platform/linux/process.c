/* process.c - Linux implementation of platform.h. */
#include "../platform.h"

#include <fcntl.h>
#include <pthread.h>
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
