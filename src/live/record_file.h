/*
 * record_file.h - reading a record another process is still writing, by
 * pread: what the live readers (followed.c and the readers on it) share.
 * The checks mirror src/model/reader.c's for the header; a header the
 * writer has not finished is "pending", never an error.
 */
#ifndef SPS_LIVE_RECORD_FILE_H
#define SPS_LIVE_RECORD_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"

enum sps__live_rec_state {
    SPS_LIVE_REC_PENDING, /* not a whole header yet: look again at the next read */
    SPS_LIVE_REC_OK,
    SPS_LIVE_REC_BAD      /* not a record this build can follow: never looked at again */
};

/* Read exactly len bytes at off (retrying short reads and EINTR).
 * Returns 0, or -1 at end of file or on an error. */
int sps__live_pread(int fd, void *buf, size_t len, uint64_t off);

/*
 * Read and check the header of the record open on fd into *h, and the
 * file's size into *size.  PENDING while the file is shorter than a header
 * or its magic is still zero; BAD when it is not a regular file, the
 * header fails sps__rec_header_check, or its clock cannot convert ticks
 * (no rate or no multiplier).  *h and *size are meaningful only when OK.
 */
enum sps__live_rec_state sps__live_rec_header(int fd, struct sps_rec_header *h, uint64_t *size);

#endif /* SPS_LIVE_RECORD_FILE_H */
