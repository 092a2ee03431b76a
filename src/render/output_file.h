/*
 * output_file.h - an output file written whole or not at all, for the
 * renderers' files (report.html, steps.csv, timeline.csv, trace.json) and
 * the summary written to a file.  Not thread-safe per struct sps_out.
 */
#ifndef SPS_RENDER_OUTPUT_FILE_H
#define SPS_RENDER_OUTPUT_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "platform/atomic_file.h"

/*
 * Writing an output file with nothing half-written: a thin stdio face on
 * the atomic writer (platform/atomic_file.h: an exclusive, unpredictably
 * named temporary beside path, never followed through a link; commit
 * flushes, fsyncs and renames over path; abort removes it).  A failed
 * commit leaves any earlier path untouched.  A path that names a device,
 * a FIFO or a socket (-o /dev/stdout) is written straight into instead:
 * nothing is renamed over it.  A directory is an error.
 */
struct sps_out {
    FILE *f; /* write here between open and commit/abort */
    struct sps_atomic_file file;
    int direct;              /* path is a device, FIFO or socket: written into, not replaced */
    char direct_path[4096];
};

/* Returns 0, or SPS_EIO with err set ("PATH: reason"). */
int sps__out_open(struct sps_out *o, const char *path, char *err, size_t errlen);

/* As sps__out_open, the temporary named after stem, not after path's own
 * name (sps__atomic_open_as). */
int sps__out_open_as(struct sps_out *o, const char *path, const char *stem, char *err, size_t errlen);

/* As sps__out_open_as (stem NULL: path's own name), for a file whose name
 * stepscope chose in a directory (DIR/report.html, an event file): never
 * written straight into, whatever is at the name: a device, FIFO or socket
 * there, or a link to one (planted by whoever can write into the
 * directory), is replaced by the new file, never followed. */
int sps__out_open_fresh(struct sps_out *o, const char *path, const char *stem, char *err, size_t errlen);

/* Returns 0, or SPS_EIO with err set; o is closed either way. */
int sps__out_commit(struct sps_out *o, char *err, size_t errlen);

void sps__out_abort(struct sps_out *o);

#endif /* SPS_RENDER_OUTPUT_FILE_H */
