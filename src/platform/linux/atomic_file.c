/* atomic_file.c - the atomic, link-safe output writer (see atomic_file.h). */
#include "platform/atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stepscope.h"

/* Tries before giving up on finding a free temporary name: with 48 random
 * bits a clash means somebody planted files on purpose. */
#define NAME_TRIES 64

/* How old a named temporary must be before a writer of the same target
 * removes it as a dead writer's.  The lock says whether its writer lives;
 * the age only covers the instant between a named temporary's creation and
 * its writer's flock, when it is unlocked but alive. */
#define STALE_SECONDS 60

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

/* Length of path's directory part with its slash (0 when it has none). */
static int dir_len_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? (int)(slash - path + 1) : 0;
}

/* A fresh temporary name for a into a->tmp. */
static void draw_name(struct sps_atomic_file *a) {
    snprintf(a->tmp, sizeof a->tmp, "%.*s.%s.tmp-%012llx", dir_len_of(a->path), a->path, a->stem,
             (unsigned long long)(random_bits() & 0xFFFFFFFFFFFFull));
}

/* 1 when name is a temporary named after stem: ".STEM.tmp-" and 12 hex
 * digits, as draw_name makes them. */
static int is_temp_of(const char *name, const char *stem) {
    size_t n = strlen(stem);
    if (name[0] != '.' || strncmp(name + 1, stem, n) != 0 || strncmp(name + 1 + n, ".tmp-", 5) != 0)
        return 0;
    const char *hex = name + 1 + n + 5;
    if (strlen(hex) != 12)
        return 0;
    for (int i = 0; i < 12; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
            return 0;
    return 1;
}

/* Remove name (in dfd) if it is a dead writer's temporary: a regular file
 * of this user, unchanged for STALE_SECONDS, whose flock nobody holds (a
 * live writer holds its own until it closes the file; the kernel drops it
 * when the writer dies, SIGKILL included).  Anything else stays, and only
 * a regular file is ever opened (a device's open can act). */
static void remove_if_dead(int dfd, const char *name, time_t now) {
    struct stat st, opened, again;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_mtime > now - STALE_SECONDS)
        return;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (fstat(fd, &opened) == 0 && opened.st_dev == st.st_dev && opened.st_ino == st.st_ino &&
        flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        /* the name still the file locked: not replaced since it was opened */
        fstatat(dfd, name, &again, AT_SYMLINK_NOFOLLOW) == 0 && again.st_dev == st.st_dev &&
        again.st_ino == st.st_ino)
        (void)unlinkat(dfd, name, 0);
    close(fd); /* drops the lock */
}

/* Remove the temporaries of a's target that dead writers left (see
 * remove_if_dead): a writer killed between its open and its commit, in
 * the named fallback or in the commit's instant between link and rename.
 * Best effort: a directory that cannot be read is left as it is. */
static void remove_stale_temps(const struct sps_atomic_file *a) {
    char dir[sizeof a->path];
    dir_of(a->path, dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));)
        if (is_temp_of(e->d_name, a->stem) && (e->d_type == DT_REG || e->d_type == DT_UNKNOWN))
            remove_if_dead(dirfd(d), e->d_name, now);
    closedir(d);
}

/* 1 when /proc/self/fd names descriptors, which the commit links an
 * anonymous temporary through (linkat with AT_EMPTY_PATH instead would need
 * CAP_DAC_READ_SEARCH).  Asked once: /proc does not come and go in a run. */
static int proc_fd_works(void) {
    static int works = -1; /* -1: not asked yet */
    int w = __atomic_load_n(&works, __ATOMIC_RELAXED);
    if (w < 0) {
        w = access("/proc/self/fd/0", F_OK) == 0 || access("/proc/self/fd", X_OK) == 0;
        __atomic_store_n(&works, w, __ATOMIC_RELAXED);
    }
    return w;
}

/* An anonymous temporary in path's directory; 0, or -1 where there is no
 * O_TMPFILE (old kernel, a filesystem without it) or no /proc to name it
 * through: the caller falls back to a named one. */
static int open_anonymous(struct sps_atomic_file *a) {
    if (!proc_fd_works())
        return -1;
    char dir[sizeof a->path];
    dir_of(a->path, dir, sizeof dir);
    /* the umask applies to 0644 as for any file created */
    a->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    if (a->fd < 0)
        return -1;
    a->anonymous = 1;
    return 0;
}

/* A named temporary beside the target; 0, or -1 with errno set. */
static int open_named(struct sps_atomic_file *a) {
    for (int i = 0; i < NAME_TRIES; i++) {
        draw_name(a);
        /* O_EXCL: never an existing file, and never through a symlink
         * (O_NOFOLLOW says so twice); the umask applies to 0644 */
        a->fd = open(a->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (a->fd >= 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    a->tmp[0] = '\0';
    return -1;
}

int sps__atomic_open(struct sps_atomic_file *a, const char *path, char *err, size_t errlen) {
    return sps__atomic_open_flags(a, path, NULL, 0, err, errlen);
}

int sps__atomic_open_as(struct sps_atomic_file *a, const char *path, const char *stem, char *err, size_t errlen) {
    return sps__atomic_open_flags(a, path, stem, 0, err, errlen);
}

int sps__atomic_open_flags(struct sps_atomic_file *a, const char *path, const char *stem, unsigned flags, char *err,
                           size_t errlen) {
    a->fd = -1;
    a->f = NULL;
    a->anonymous = 0;
    a->tmp[0] = '\0';
    if (!path || !*path || snprintf(a->path, sizeof a->path, "%s", path) >= (int)sizeof a->path) {
        snprintf(err, errlen, "%s: path too long or empty", path ? path : "(null)");
        return SPS_EIO;
    }
    const char *base = path + dir_len_of(path);
    if (!*base) {
        snprintf(err, errlen, "%s: names a directory, not a file", path);
        return SPS_EIO;
    }
    if (snprintf(a->stem, sizeof a->stem, "%s", stem && *stem ? stem : base) >= (int)sizeof a->stem) {
        snprintf(err, errlen, "%s: file name too long", path);
        return SPS_EIO;
    }
    remove_stale_temps(a);
    if (((flags & SPS_ATOMIC_NAMED_TEMP) || open_anonymous(a) != 0) && open_named(a) != 0) {
        snprintf(err, errlen, "%s: cannot create a temporary beside it: %s", path, strerror(errno));
        return SPS_EIO;
    }
    /* held until the file is closed: says to remove_stale_temps that its
     * writer lives (where flock is refused, nobody removes it) */
    (void)flock(a->fd, LOCK_EX | LOCK_NB);
    return 0;
}

FILE *sps__atomic_stream(struct sps_atomic_file *a, char *err, size_t errlen) {
    if (a->f)
        return a->f;
    if (a->fd < 0 || !(a->f = fdopen(a->fd, "w")))
        snprintf(err, errlen, "%s: %s", a->path, a->fd < 0 ? "not open" : strerror(errno));
    return a->f;
}

/* Write out what a holds (the stream's buffer, then fsync when sync); 0,
 * or the errno of a failed write, flush or fsync. */
static int flush_temp(struct sps_atomic_file *a, int sync) {
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
    return e;
}

/* Close what a holds; 0, or the errno of a failed close. */
static int close_temp(struct sps_atomic_file *a) {
    int e = 0;
    if (a->f) {
        if (fclose(a->f) != 0)
            e = errno ? errno : EIO;
    } else if (a->fd >= 0 && close(a->fd) != 0) {
        e = errno;
    }
    a->f = NULL;
    a->fd = -1;
    return e;
}

/* Give a's anonymous temporary a name: the target's own when there is
 * nothing there (no rename needed), else a fresh exclusive temporary name
 * left in a->tmp for the rename.  linkat never replaces nor follows what is
 * at the new name (EEXIST).  0, or an errno. */
static int name_anonymous(struct sps_atomic_file *a) {
    char fd_path[64];
    snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", a->fd);
    if (linkat(AT_FDCWD, fd_path, AT_FDCWD, a->path, AT_SYMLINK_FOLLOW) == 0)
        return 0;
    if (errno != EEXIST)
        return errno;
    for (int i = 0; i < NAME_TRIES; i++) {
        draw_name(a);
        if (linkat(AT_FDCWD, fd_path, AT_FDCWD, a->tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    a->tmp[0] = '\0';
    return errno;
}

int sps__atomic_commit(struct sps_atomic_file *a, unsigned flags, char *err, size_t errlen) {
    int sync = !(flags & SPS_ATOMIC_NO_SYNC);
    int was_open = a->fd >= 0;
    int e = was_open ? flush_temp(a, sync) : EBADF;
    if (!e && a->anonymous)
        e = name_anonymous(a);
    int closed = close_temp(a); /* the lock goes with it */
    if (!e)
        e = closed;
    if (!e && a->tmp[0] && rename(a->tmp, a->path) != 0)
        e = errno;
    if (e) {
        snprintf(err, errlen, "%s: %s", a->path, strerror(e));
        if (a->tmp[0])
            unlink(a->tmp);
        else if (a->anonymous && was_open && closed)
            unlink(a->path); /* linked straight to the target, then the close failed */
        a->tmp[0] = '\0';
        a->anonymous = 0;
        return SPS_EIO;
    }
    a->tmp[0] = '\0';
    a->anonymous = 0;
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
    (void)close_temp(a); /* an anonymous temporary goes with its descriptor */
    if (a->tmp[0])
        unlink(a->tmp);
    a->tmp[0] = '\0';
    a->anonymous = 0;
}
