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

int sps__platform_parent_env_has(const char *name, const char *value) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    /* the initial environment: NUL-separated name=value entries */
    char *env = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            char *grown = realloc(env, cap = cap ? cap * 2 : 16384);
            if (!grown)
                break;
            env = grown;
        }
        ssize_t n = read(fd, env + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    int found = 0;
    size_t nlen = strlen(name);
    for (size_t i = 0; env && i < len; i += strlen(env + i) + 1) {
        env[len] = '\0';
        if (strncmp(env + i, name, nlen) == 0 && env[i + nlen] == '=' && strcmp(env + i + nlen + 1, value) == 0) {
            found = 1;
            break;
        }
    }
    free(env);
    return found;
}
