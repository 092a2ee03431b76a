/* output_file.c - an output file written whole or not at all (see output_file.h). */
#define _POSIX_C_SOURCE 200809L /* fdopen, O_CLOEXEC */
#include "render/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "render/render.h"
#include "stepscope.h"

int sps__out_open(struct sps_out *o, const char *path, char *err, size_t errlen) {
    return sps__out_open_as(o, path, NULL, err, errlen);
}

/* direct: a device, FIFO or socket at path (followed) is written into. */
static int out_open(struct sps_out *o, const char *path, const char *stem, int direct, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    struct stat st;
    if (!direct) {
        /* a name stepscope chose: whatever is there is replaced, a link
         * (to a device or anything else) never followed */
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: is a directory", path);
            return SPS_EIO;
        }
    } else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a device, a FIFO or a socket (-o /dev/null, -o /dev/stdout, a
         * pipe by name) is written into: renaming a file over it would
         * replace it */
        if (S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: is a directory", path);
            return SPS_EIO;
        }
        int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return SPS_EIO;
        }
        o->direct = 1;
        snprintf(o->direct_path, sizeof o->direct_path, "%s", path);
        return 0;
    }
    if (sps__atomic_open_as(&o->file, path, stem, err, errlen) != 0)
        return SPS_EIO;
    o->f = sps__atomic_stream(&o->file, err, errlen);
    if (!o->f) {
        sps__atomic_abort(&o->file);
        return SPS_EIO;
    }
    return 0;
}

int sps__out_open_as(struct sps_out *o, const char *path, const char *stem, char *err, size_t errlen) {
    return out_open(o, path, stem, 1, err, errlen);
}

int sps__out_open_fresh(struct sps_out *o, const char *path, const char *stem, char *err, size_t errlen) {
    return out_open(o, path, stem, 0, err, errlen);
}

int sps__out_commit(struct sps_out *o, char *err, size_t errlen) {
    if (o->direct) {
        int bad = ferror(o->f) | (fflush(o->f) != 0);
        int saved = errno;
        bad |= fclose(o->f) != 0;
        o->f = NULL;
        if (bad) {
            snprintf(err, errlen, "%s: %s", o->direct_path, strerror(saved ? saved : EIO));
            return SPS_EIO;
        }
        return 0;
    }
    o->f = NULL;
    return sps__atomic_commit(&o->file, 0, err, errlen);
}

void sps__out_abort(struct sps_out *o) {
    if (o->direct) {
        if (o->f)
            fclose(o->f);
        o->f = NULL;
        return;
    }
    o->f = NULL;
    sps__atomic_abort(&o->file);
}
