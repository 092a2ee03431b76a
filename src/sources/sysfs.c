/* sysfs.c - small-file reading for the sources (see sysfs.h). */
#include "sources/sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sps__path(char *buf, size_t cap, const char *root, const char *fmt, ...) {
    size_t rlen = root ? strlen(root) : 0;
    if (rlen >= cap)
        return -ENAMETOOLONG;
    memcpy(buf, root ? root : "", rlen);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + rlen, cap - rlen, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - rlen)
        return -ENAMETOOLONG;
    return 0;
}

ssize_t sps__pread_text(int fd, char *buf, size_t cap) {
    if (cap == 0)
        return -EINVAL;
    size_t len = 0;
    for (;;) {
        ssize_t n = pread(fd, buf + len, cap - 1 - len, (off_t)len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == cap - 1)
            break;
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

ssize_t sps__pread_record(int fd, char *buf, size_t cap) {
    if (cap == 0)
        return -EINVAL;
    ssize_t n;
    while ((n = pread(fd, buf, cap - 1, 0)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return n;
}

ssize_t sps__read_text(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = sps__pread_text(fd, buf, cap);
    close(fd);
    return n;
}

ssize_t sps__read_line(const char *path, char *buf, size_t cap) {
    ssize_t n = sps__read_text(path, buf, cap);
    if (n < 0)
        return n;
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    size_t len = strlen(buf);
    while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\r'))
        buf[--len] = '\0';
    return (ssize_t)len;
}

static int only_space(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return *p == '\0';
}

int sps__read_u64(const char *path, uint64_t *out) {
    char buf[64];
    ssize_t n = sps__read_text(path, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    char *p = buf, *end;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno || end == p || !only_space(end))
        return -EINVAL;
    *out = (uint64_t)v;
    return 0;
}

int sps__read_i64(const char *path, int64_t *out) {
    char buf[64];
    ssize_t n = sps__read_text(path, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf || !only_space(end))
        return -EINVAL;
    *out = (int64_t)v;
    return 0;
}

void sps__reason_errno(char *reason, size_t cap, const char *what, const char *path, int neg_errno) {
    if (!reason || cap == 0)
        return;
    int e = neg_errno < 0 ? -neg_errno : neg_errno;
    const char *why = e == EINVAL ? "not a number" : strerror(e);
    snprintf(reason, cap, "%s: %s: %s", what, path, why);
}

/* N when name is prefix + N + suffix (N as %d prints it), else -1. */
static int numbered_entry(const char *name, const char *prefix, const char *suffix) {
    size_t plen = strlen(prefix), slen = strlen(suffix), len = strlen(name);
    if (len <= plen + slen || strncmp(name, prefix, plen) != 0 || strcmp(name + len - slen, suffix) != 0)
        return -1;
    const char *digits = name + plen, *end = name + len - slen;
    if (*digits == '0' && end - digits > 1)
        return -1;
    long n = 0;
    for (const char *p = digits; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + (*p - '0');
        if (n > INT_MAX)
            return -1;
    }
    return (int)n;
}

int sps__list_numbered(const char *dir, const char *prefix, const char *suffix, int *numbers, int cap) {
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    int count = 0, kept = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int n = numbered_entry(e->d_name, prefix, suffix);
        if (n < 0)
            continue;
        count++;
        /* keep the cap smallest, sorted: insertion into a short array */
        if (kept == cap && (cap == 0 || n >= numbers[cap - 1]))
            continue;
        int at = kept < cap ? kept++ : cap - 1;
        while (at > 0 && numbers[at - 1] > n) {
            numbers[at] = numbers[at - 1];
            at--;
        }
        numbers[at] = n;
    }
    closedir(d);
    return count;
}
