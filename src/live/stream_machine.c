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

/* The mean of the readings in [a, b], else the nearest one; NAN: none. */
static double over(const struct sps__reading_history *h, int64_t a, int64_t b) {
    double sum = 0, nearest = NAN;
    uint32_t n = 0;
    int64_t best = INT64_MAX;
    for (uint32_t k = 0; k < h->n; k++) {
        uint32_t i = (h->next + SPS_STREAM_HISTORY - h->n + k) % SPS_STREAM_HISTORY;
        int64_t t = h->t[i];
        if (t >= a && t <= b) {
            sum += h->v[i];
            n++;
            continue;
        }
        int64_t d = t < a ? a - t : t - b;
        if (d < best) {
            best = d;
            nearest = h->v[i];
        }
    }
    return n ? sum / n : nearest;
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
