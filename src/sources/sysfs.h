/*
 * sysfs.h - reading the small text files of /proc and /sys, under a root
 * that tests can point at a fixture tree.  All functions are reentrant;
 * none allocates.
 */
#ifndef SPS_SOURCES_SYSFS_H
#define SPS_SOURCES_SYSFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* buf = root + the formatted path ("/proc/stat").  Returns 0, or
 * -ENAMETOOLONG when it does not fit in cap. */
int sps__path(char *buf, size_t cap, const char *root, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Read a whole (small) file into buf, NUL-terminated; at most cap - 1
 * bytes.  Returns the length, or -errno. */
ssize_t sps__read_text(const char *path, char *buf, size_t cap);

/* The same through an open descriptor, from offset 0 (pread): /proc and
 * /sys files regenerate their contents on every read from the start, so a
 * source can keep them open and save the open/close per read. */
ssize_t sps__pread_text(int fd, char *buf, size_t cap);

/* The same for a file the kernel writes as one record (the single_open
 * files of /proc: stat, meminfo, loadavg, PID/stat, statm, status, io; a
 * sysfs attribute): one pread returns all of it, so there is no second
 * read to find the end.  Not for multi-record files such as
 * /proc/net/dev, which come a page at a time. */
ssize_t sps__pread_record(int fd, char *buf, size_t cap);

/* The file's first line, trailing whitespace removed.  Returns its length
 * or -errno. */
ssize_t sps__read_line(const char *path, char *buf, size_t cap);

/* The file's contents as one unsigned/signed decimal integer (surrounding
 * whitespace allowed).  Returns 0, -errno, or -EINVAL when it is not one. */
int sps__read_u64(const char *path, uint64_t *out);
int sps__read_i64(const char *path, int64_t *out);

/* "what: strerror(-err)" style reason for a failed read of path, cut to
 * cap (for source reasons). */
void sps__reason_errno(char *reason, size_t cap, const char *what, const char *path, int neg_errno);

/*
 * The numbers N of the entries of dir named prefix + N + suffix ("hwmon3",
 * "temp2_input"), N decimal without sign or leading zero so that printing
 * N with %d names the same entry again.  The smallest min(count, cap) of
 * them go into numbers, ascending (numerically: hwmon10 after hwmon2).
 * Returns how many entries match (which may exceed cap), or -errno when
 * dir cannot be opened.
 */
int sps__list_numbered(const char *dir, const char *prefix, const char *suffix, int *numbers, int cap);

#endif /* SPS_SOURCES_SYSFS_H */
