/* atomic_file.c - the atomic, link-safe output writer (see atomic_file.h). */
#include "platform/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "stepscope.h"

/* Tries before giving up on finding a free temporary name: with 48 random
 * bits a clash means somebody planted files on purpose. */
#define NAME_TRIES 64

/* 64 bits nobody can guess: the kernel's, else a mix of the clock, the pid
 * and a counter (getrandom fails only on kernels older than 3.17). */
static uint64_t random_bits(void) {
    uint64_t v;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v)
        return v;
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    v = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 40;
    v += __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull;
    /* splitmix64's finaliser spreads the bits */
    v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
    v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
    return v ^ (v >> 31);
}

/* path's directory part ("." when it has none) into buf. */
static void dir_of(const char *path, char *buf, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, cap, ".");
    else if (slash == path)
        snprintf(buf, cap, "/");
    else
        snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

int sps__atomic_open(struct sps_atomic_file *a, const char *path, char *err, size_t errlen) {
    return sps__atomic_open_as(a, path, NULL, err, errlen);
}

int sps__atomic_open_as(struct sps_atomic_file *a, const char *path, const char *stem, char *err, size_t errlen) {
    a->fd = -1;
    a->f = NULL;
    a->tmp[0] = '\0';
    if (!path || !*path || snprintf(a->path, sizeof a->path, "%s", path) >= (int)sizeof a->path) {
        snprintf(err, errlen, "%s: path too long or empty", path ? path : "(null)");
        return SPS_EIO;
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base) {
        snprintf(err, errlen, "%s: names a directory, not a file", path);
        return SPS_EIO;
    }
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    if (stem && *stem)
        base = stem;
    for (int i = 0; i < NAME_TRIES; i++) {
        snprintf(a->tmp, sizeof a->tmp, "%.*s.%s.tmp-%012llx", dir_len, path, base,
                 (unsigned long long)(random_bits() & 0xFFFFFFFFFFFFull));
        /* O_EXCL: never an existing file, and never through a symlink
         * (O_NOFOLLOW says so twice); the umask applies to 0644 */
        a->fd = open(a->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (a->fd >= 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    snprintf(err, errlen, "%s: cannot create a temporary beside it: %s", path, strerror(errno));
    a->tmp[0] = '\0';
    return SPS_EIO;
}

FILE *sps__atomic_stream(struct sps_atomic_file *a, char *err, size_t errlen) {
    if (a->f)
        return a->f;
    if (a->fd < 0 || !(a->f = fdopen(a->fd, "w")))
        snprintf(err, errlen, "%s: %s", a->path, a->fd < 0 ? "not open" : strerror(errno));
    return a->f;
}

/* Close what a holds; 0, or the errno of a failed flush or close. */
static int close_temp(struct sps_atomic_file *a, int sync) {
    int e = 0;
    if (a->f) {
        /* a write that failed set the stream's error and errno (ENOSPC,
         * EDQUOT...), which later buffered writes leave as they are */
        if (ferror(a->f))
            e = errno ? errno : EIO;
        if (fflush(a->f) != 0 && !e)
            e = errno ? errno : EIO;
    }
    if (a->fd >= 0 && sync && fsync(a->fd) != 0 && !e)
        e = errno;
    if (a->f) {
        if (fclose(a->f) != 0 && !e)
            e = errno ? errno : EIO;
    } else if (a->fd >= 0 && close(a->fd) != 0 && !e) {
        e = errno;
    }
    a->f = NULL;
    a->fd = -1;
    return e;
}

int sps__atomic_commit(struct sps_atomic_file *a, unsigned flags, char *err, size_t errlen) {
    int sync = !(flags & SPS_ATOMIC_NO_SYNC);
    int e = close_temp(a, sync);
    if (!e && a->tmp[0] && rename(a->tmp, a->path) != 0)
        e = errno;
    if (e || !a->tmp[0]) {
        snprintf(err, errlen, "%s: %s", a->path, strerror(e ? e : EBADF));
        if (a->tmp[0])
            unlink(a->tmp);
        a->tmp[0] = '\0';
        return SPS_EIO;
    }
    a->tmp[0] = '\0';
    if (sync) {
        /* the rename is durable only once the directory is */
        char dir[sizeof a->path];
        dir_of(a->path, dir, sizeof dir);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd); /* the file is in place; a refusal here loses nothing now */
            close(dfd);
        }
    }
    return 0;
}

void sps__atomic_abort(struct sps_atomic_file *a) {
    (void)close_temp(a, 0);
    if (a->tmp[0])
        unlink(a->tmp);
    a->tmp[0] = '\0';
}
