/*
 * record_trim.c - cut the records of processes that have ended to the size
 * they used (see run.h).  A process that exits cuts its own record
 * (recorder.c); one that was killed cannot, so `stepscope run` calls this
 * once the workload is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/run.h"
#include "record_format.h"

/* 1 when a process with this pid may still be writing (it exists, or we
 * may not ask): a recycled pid only costs the cut, never a record. */
static int may_be_running(int32_t pid) {
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Cut the record name in the directory open as dfd; 1 when it was cut, 0
 * when left alone. */
static int trim_one(int dfd, const char *name) {
    /* O_NOFOLLOW: a link planted in records/ is not followed */
    int fd = openat(dfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat st;
    struct sps_rec_header h;
    int cut = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof h &&
        pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h) {
        uint64_t offset;
        /* a header the reader accepts for this file, then what it used */
        if (sps__rec_header_check(&h, (uint64_t)st.st_size, &offset, NULL, 0) == 0 && !may_be_running(h.pid)) {
            uint64_t used = sps_rec_used_size(&h);
            if (used < (uint64_t)st.st_size && ftruncate(fd, (off_t)used) == 0)
                cut = 1;
        }
    }
    close(fd);
    return cut;
}

int sps__records_trim(const char *dir) {
    /* nor is a records/ swapped for a link: its target's files are not ours to cut */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return 0;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (sps__is_record_name(e->d_name))
            n += trim_one(dirfd(d), e->d_name);
    closedir(d);
    return n;
}
