/*
 * record_clock.h - a record's ticks as CLOCK_MONOTONIC ns: the calibrated
 * rate, refined by the header's latest anchor when it spans over 200 ms,
 * is within 1% of the calibration and was not being rewritten (anchor_seq
 * even).  One conversion for the model's reader (src/model/reader.c), the
 * live stream and last_step(), so their times agree.
 */
#ifndef SPS_RECORD_CLOCK_H
#define SPS_RECORD_CLOCK_H

#include <stdint.h>

struct sps_rec_header;

struct sps__rec_clock {
    uint64_t anchor_ticks, anchor_ns;
    long double ticks_per_second; /* the rate used: calibrated, or refined */
    long double ns_per_tick;
};

/* Set c up from h, whose writer may still be running (the anchor is read
 * as a seqlock).  Any thread; c is the caller's. */
void sps__rec_clock_setup(struct sps__rec_clock *c, const struct sps_rec_header *h);

static inline int64_t sps__rec_clock_ns(const struct sps__rec_clock *c, uint64_t ticks) {
    long double d = (long double)(int64_t)(ticks - c->anchor_ticks) * c->ns_per_tick;
    return (int64_t)((long double)c->anchor_ns + d + 0.5L);
}

#endif /* SPS_RECORD_CLOCK_H */
