/* output_file.c - an output file written whole or not at all (see output_file.h). */
#include "render/output_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "render/render.h"
#include "stepscope.h"

int sps__out_open(struct sps_out *o, const char *path, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    if (sps__atomic_open(&o->file, path, err, errlen) != 0)
        return SPS_EIO;
    o->f = sps__atomic_stream(&o->file, err, errlen);
    if (!o->f) {
        sps__atomic_abort(&o->file);
        return SPS_EIO;
    }
    return 0;
}

int sps__out_commit(struct sps_out *o, char *err, size_t errlen) {
    o->f = NULL;
    return sps__atomic_commit(&o->file, 0, err, errlen);
}

void sps__out_abort(struct sps_out *o) {
    o->f = NULL;
    sps__atomic_abort(&o->file);
}
