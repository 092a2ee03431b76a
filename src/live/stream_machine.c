/*
 * stream_machine.c - readings over a step's window (see stream_machine.h).
 */
#include "live/stream_machine.h"

#include <math.h>
#include <string.h>

static void keep(struct sps__reading_history *h, int64_t t, double v) {
    if (t <= 0 || isnan(v))
        return;
    if (h->n) { /* the same reading again (the source has not read since) */
        uint32_t last = (h->next + SPS_STREAM_HISTORY - 1u) % SPS_STREAM_HISTORY;
        if (h->t[last] >= t)
            return;
    }
    h->t[h->next] = t;
    h->v[h->next] = v;
    h->next = (h->next + 1u) % SPS_STREAM_HISTORY;
    if (h->n < SPS_STREAM_HISTORY)
        h->n++;
}

void sps__stream_machine_add(struct sps__stream_machine *m, const struct sps__sample *s) {
    m->have = 1;
    for (int i = 0; i < SPS_STEP_LINE_HOST_METRICS; i++) {
        int id = sps__step_line_host_metric[i];
        keep(&m->host[i], s->host_read_ns[id], s->host[id]);
    }
    for (int g = 0; g < s->ngpus && g < SPS_CAPTURE_MAX_GPUS; g++) {
        const struct sps__gpu_sample *gs = &s->gpu[g];
        int k = 0;
        while (k < m->ngpus && m->gpu_index[k] != gs->index)
            k++;
        if (k == m->ngpus) {
            if (m->ngpus == SPS_STEP_LINE_GPUS)
                continue;
            m->gpu_index[m->ngpus++] = gs->index;
        }
        int64_t t = gs->source >= 0 && gs->source < SPS_SOURCE_COUNT ? s->read_ns[gs->source] : 0;
        keep(&m->gpu_util[k], t, gs->v[SPS_M_GPU_UTILIZATION_PERCENT]);
        keep(&m->gpu_mem[k], t, gs->v[SPS_M_GPU_MEMORY_USED_BYTES]);
    }
}

/* The k-th oldest reading kept. */
static uint32_t slot(const struct sps__reading_history *h, uint32_t k) {
    return (h->next + SPS_STREAM_HISTORY - h->n + k) % SPS_STREAM_HISTORY;
}

/* The mean of the readings in [a, b], else the nearest one; NAN: none.
 * The readings are in time order: a binary search finds the window. */
static double over(const struct sps__reading_history *h, int64_t a, int64_t b) {
    if (!h->n)
        return NAN;
    uint32_t lo = 0, hi = h->n; /* the first reading at or after a */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (h->t[slot(h, mid)] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    double sum = 0;
    uint32_t k = lo;
    for (; k < h->n && h->t[slot(h, k)] <= b; k++)
        sum += h->v[slot(h, k)];
    if (k > lo)
        return sum / (k - lo);
    if (lo == h->n) /* all before the window */
        return h->v[slot(h, lo - 1)];
    if (lo == 0) /* all after it */
        return h->v[slot(h, 0)];
    return a - h->t[slot(h, lo - 1)] <= h->t[slot(h, lo)] - b ? h->v[slot(h, lo - 1)] : h->v[slot(h, lo)];
}

void sps__stream_machine_window(const struct sps__stream_machine *m, int64_t start_ns, int64_t end_ns,
                                struct sps__step_machine *out) {
    memset(out, 0, sizeof *out);
    out->have = m->have;
    for (int i = 0; i < SPS_STEP_LINE_HOST_METRICS; i++)
        out->host[i] = over(&m->host[i], start_ns, end_ns);
    out->ngpus = m->ngpus;
    for (int g = 0; g < m->ngpus; g++) {
        out->gpu_index[g] = m->gpu_index[g];
        out->gpu_utilization_percent[g] = over(&m->gpu_util[g], start_ns, end_ns);
        out->gpu_memory_used_bytes[g] = over(&m->gpu_mem[g], start_ns, end_ns);
    }
}
