/* record_file.c - see record_file.h. */
#include "live/record_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/run.h"

int sps__live_pread(int fd, void *buf, size_t len, uint64_t off) {
    char *p = buf;
    while (len) {
        ssize_t got = pread(fd, p, len, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        len -= (size_t)got;
        off += (uint64_t)got;
    }
    return 0;
}

enum sps__live_rec_state sps__live_rec_header(int fd, struct sps_rec_header *h, uint64_t *size) {
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        return SPS_LIVE_REC_BAD;
    if ((uint64_t)sb.st_size < SPS_REC_HEADER_SIZE || sps__live_pread(fd, h, sizeof *h, 0) != 0)
        return SPS_LIVE_REC_PENDING;
    static const char zeros[8];
    if (memcmp(h->magic, zeros, sizeof zeros) == 0)
        return SPS_LIVE_REC_PENDING;
    uint64_t offset;
    if (sps__rec_header_check(h, (uint64_t)sb.st_size, &offset, NULL, 0) != 0)
        return SPS_LIVE_REC_BAD;
    /* the stream converts ticks with the rate, the view with the multiplier */
    if (!(h->ticks_per_second > 0) || h->ns_mult == 0)
        return SPS_LIVE_REC_BAD;
    *size = (uint64_t)sb.st_size;
    return SPS_LIVE_REC_OK;
}
