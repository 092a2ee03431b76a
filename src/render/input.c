/* input.c - an output file written whole or not at all (see input.h). */
#include "render/input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "render/render.h"
#include "stepscope.h"

int sps__out_open(struct sps_out *o, const char *path, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path) {
        snprintf(err, errlen, "%s: path too long", path);
        return SPS_EIO;
    }
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%d", path, (int)getpid());
    o->f = fopen(o->tmp, "w");
    if (!o->f) {
        snprintf(err, errlen, "%s: %s", o->tmp, strerror(errno));
        return SPS_EIO;
    }
    return 0;
}

int sps__out_commit(struct sps_out *o, char *err, size_t errlen) {
    int bad = ferror(o->f);
    int saved = errno;
    if (fflush(o->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        snprintf(err, errlen, "%s: %s", o->path, strerror(saved ? saved : EIO));
        unlink(o->tmp);
        return SPS_EIO;
    }
    return 0;
}

void sps__out_abort(struct sps_out *o) {
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
}
