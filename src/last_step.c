/*
 * last_step.c - the calling thread's last step, from its own rings (see
 * last_step.h).  Only the calling thread writes its segment, so what is
 * read here is stable while it is read.
 */
#include "last_step.h"

#include "record_clock.h"
#include "record_format.h"
#include "recorder.h"

/* The ring's kept events are [*lo, *hi); returns whether events the
 * thread offered to it are missing (overwritten, or refused). */
static int kept_range(const struct sps_rec_header *h, const struct sps_rec_thread *seg, int ring, uint64_t *lo,
                      uint64_t *hi) {
    uint64_t head = seg->head[ring], cap = h->ring_cap[ring];
    if (h->ring_policy == SPS_POLICY_KEEP_FIRST) {
        *lo = 0;
        *hi = head < cap ? head : cap;
        if (*hi > seg->limit[ring])
            *hi = seg->limit[ring];
    } else {
        *lo = head - sps_rec_ring_kept(head, cap, h->ring_policy);
        *hi = head;
    }
    return *lo > 0 || *hi < head;
}

static const struct sps_rec_event *event(const struct sps_rec_header *h, const struct sps_rec_thread *seg,
                                         int ring, uint64_t i) {
    const struct sps_rec_event *ev = (const void *)((const unsigned char *)h + seg->ring_off[ring]);
    return &ev[i & (h->ring_cap[ring] - 1u)];
}

static int real(const struct sps_rec_header *h, const struct sps_rec_event *e) {
    return e->name >= 1 && e->name <= h->names_count;
}

/* The zones and micro-steps of [start, end): those that ended after the
 * step began (the ring is in end order: found walking back from its
 * head).
 * Whether some may be missing. */
static int add_zones(struct sps__step_line *l, const struct sps_rec_header *h, const struct sps_rec_thread *seg,
                     uint64_t start, uint64_t end) {
    uint64_t lo, hi;
    int missing = kept_range(h, seg, SPS_RING_ZONES, &lo, &hi);
    uint64_t first = hi;
    while (first > lo && event(h, seg, SPS_RING_ZONES, first - 1)->end_ticks >= start)
        first--;
    for (uint64_t i = first; i < hi; i++) {
        const struct sps_rec_event *e = event(h, seg, SPS_RING_ZONES, i);
        if (!real(h, e) || e->start_ticks < start || e->start_ticks >= end)
            continue;
        if (e->kind == SPS_KIND_MICROSTEP)
            l->microsteps++;
        else if (e->kind == SPS_KIND_ZONE)
            sps__step_line_zone(l, e->name, (int64_t)e->start_ticks, e->a);
        else if (e->kind == SPS_KIND_WAIT)
            sps__step_line_wait(l, e->name, (int64_t)e->start_ticks, e->a);
    }
    return missing && (first == lo || hi < seg->head[SPS_RING_ZONES]);
}

/* The values and increments at [start, until), in the order recorded. */
static int add_values(struct sps__step_line *l, const struct sps_rec_header *h, const struct sps_rec_thread *seg,
                      uint64_t start, uint64_t until) {
    uint64_t lo, hi;
    int missing = kept_range(h, seg, SPS_RING_VALUES, &lo, &hi);
    uint64_t first = hi;
    /* GPU spans are placed where the GPU ran them, earlier than the ring's
     * order: walked past, never stopped at */
    const struct sps_rec_event *w;
    while (first > lo && ((w = event(h, seg, SPS_RING_VALUES, first - 1))->kind == SPS_REC_KIND_GPU_SPAN ||
                          w->start_ticks >= start))
        first--;
    for (uint64_t i = first; i < hi; i++) {
        const struct sps_rec_event *e = event(h, seg, SPS_RING_VALUES, i);
        if (!real(h, e) || e->start_ticks >= until)
            continue;
        if (e->kind == SPS_KIND_VALUE) {
            double v;
            __builtin_memcpy(&v, &e->a, sizeof v);
            sps__step_line_value(l, e->name, v);
        } else if (e->kind == SPS_KIND_COUNTER) {
            sps__step_line_count(l, e->name, e->a);
        }
    }
    return missing && (first == lo || hi < seg->head[SPS_RING_VALUES]);
}

int sps__last_step(struct sps__step_line *l, uint64_t origin_mono_ns) {
    const struct sps_rec_header *h = sps__recorder_header();
    const struct sps_rec_thread *seg = sps__recorder_thread_segment();
    if (!h || !seg)
        return -1;
    uint64_t lo, hi;
    kept_range(h, seg, SPS_RING_STEPS, &lo, &hi);
    if (hi == lo || hi < seg->head[SPS_RING_STEPS])
        return -1; /* none yet, or the latest was refused */
    const struct sps_rec_event *s = event(h, seg, SPS_RING_STEPS, hi - 1);
    if (!real(h, s) || s->kind != SPS_KIND_STEP || s->end_ticks < s->start_ticks)
        return -1;
    /* the next step, when it has begun, ends what this one owns */
    uint64_t until = UINT64_MAX;
    for (uint32_t k = 1; k <= seg->depth && k <= SPS_REC_MAX_DEPTH; k++)
        if (seg->stack[k].kind == SPS_KIND_STEP && seg->stack[k].start_ticks >= s->end_ticks)
            until = seg->stack[k].start_ticks;
    struct sps__rec_clock clock;
    sps__rec_clock_setup(&clock, h);
    int64_t origin = origin_mono_ns ? (int64_t)origin_mono_ns : (int64_t)h->anchor0_mono_ns;
    sps__step_line_init(l, hi - 1, s->name, h->pid, h->rank, seg->tid,
                        sps__rec_clock_ns(&clock, s->start_ticks) - origin,
                        sps__rec_clock_ns(&clock, s->end_ticks) - origin);
    int missing = add_zones(l, h, seg, s->start_ticks, s->end_ticks);
    missing |= add_values(l, h, seg, s->start_ticks, until);
    l->partial = missing;
    return 0;
}

const char *sps__last_step_name(void *ctx, uint32_t id) {
    (void)ctx;
    const struct sps_rec_header *h = sps__recorder_header();
    if (!h || id < 1 || id > __atomic_load_n(&h->names_count, __ATOMIC_ACQUIRE))
        return NULL;
    const struct sps_rec_name *n = (const void *)((const unsigned char *)h + h->names_off);
    return n[id - 1].name;
}
