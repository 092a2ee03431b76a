/*
 * record_headers.c - a run directory's records by name and header CRC
 * only (see run.h: sps__run_load_headers): what tells whether a
 * report.json describes them (report.h: sps__report_records_stale)
 * without reading their events, for readers of report.json alone
 * (compare) that must not take another run's report for this one's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/run.h"
#include "record_format.h"
#include "stepscope.h"

/* dir/name's header CRC when it is a regular file whose header is whole
 * and valid; 0 otherwise (a damaged or foreign file tells nothing). */
static uint32_t header_crc_of(int dfd, const char *name) {
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct sps_rec_header h;
    struct stat st;
    uint32_t crc = 0;
    char what[128];
    uint64_t off;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
        sps__rec_header_check(&h, (uint64_t)st.st_size, &off, what, sizeof what) == 0)
        crc = h.header_crc;
    close(fd);
    return crc;
}

int sps__run_load_headers(struct sps_run *run, const char *dir, char *err, size_t errlen) {
    memset(run, 0, sizeof *run);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return SPS_EIO;
    }
    size_t cap = 0;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (!sps__is_record_name(e->d_name))
            continue;
        uint32_t crc = header_crc_of(dfd, e->d_name);
        if (!crc)
            continue;
        if (run->nprocs == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct sps_process_data *p = realloc(run->procs, ncap * sizeof *p);
            if (!p) {
                rc = SPS_ENOMEM;
                break;
            }
            run->procs = p;
            cap = ncap;
        }
        struct sps_process_data *p = &run->procs[run->nprocs];
        memset(p, 0, sizeof *p);
        p->header_crc = crc;
        if (!(p->path = malloc(strlen(dir) + strlen(e->d_name) + 2))) {
            rc = SPS_ENOMEM;
            break;
        }
        sprintf(p->path, "%s/%s", dir, e->d_name);
        run->nprocs++;
    }
    closedir(d);
    if (rc) {
        snprintf(err, errlen, "%s: out of memory", dir);
        sps__run_free(run);
    }
    return rc;
}
