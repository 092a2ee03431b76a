/* record_clock.c - see record_clock.h. */
#include "record_clock.h"

#include <math.h>

#include "record_format.h"

void sps__rec_clock_setup(struct sps__rec_clock *c, const struct sps_rec_header *h) {
    c->anchor_ticks = h->anchor0_ticks;
    c->anchor_ns = h->anchor0_mono_ns;
    long double hz = h->ticks_per_second;
    uint32_t seq0 = __atomic_load_n(&h->anchor_seq, __ATOMIC_ACQUIRE);
    uint64_t t1 = __atomic_load_n(&h->anchor1_ticks, __ATOMIC_RELAXED);
    uint64_t m1 = __atomic_load_n(&h->anchor1_mono_ns, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint32_t seq1 = __atomic_load_n(&h->anchor_seq, __ATOMIC_RELAXED);
    /* Refine the calibrated rate with the latest anchor when it spans long
     * enough for its jitter not to matter, and was not being rewritten
     * while we read it (the writer may be alive: a seqlock). */
    if (h->clock_source == SPS_CLOCK_TSC && seq0 == seq1 && (seq0 & 1u) == 0 &&
        m1 > h->anchor0_mono_ns + 200000000u && t1 > h->anchor0_ticks) {
        long double refined = (long double)(t1 - h->anchor0_ticks) * 1e9L / (long double)(m1 - h->anchor0_mono_ns);
        /* a refinement, not a replacement: a rate far from the calibrated
         * one means a damaged anchor */
        if (fabsl(refined - hz) < hz * 0.01L)
            hz = refined;
    }
    c->ticks_per_second = hz;
    c->ns_per_tick = 1e9L / hz;
}
