/* series.c - bounded series with exact peaks (see series.h). */
#include "sampler/series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sps__series_init(struct sps__series *s, uint32_t cap) {
    memset(s, 0, sizeof *s);
    if (cap < 2)
        cap = 2;
    s->cap = cap & ~1u;
    s->per_point = 1;
    s->min = INFINITY;
    s->max = -INFINITY;
}

/* Merge neighbours pairwise: half the points, twice the readings each. */
static void halve(struct sps__series *s) {
    uint32_t out = 0;
    for (uint32_t i = 0; i + 1 < s->count; i += 2) {
        const struct sps__series_point *a = &s->points[i], *b = &s->points[i + 1];
        struct sps__series_point m = *a;
        m.n = a->n + b->n;
        m.mean = (a->mean * a->n + b->mean * b->n) / m.n;
        m.max = a->max > b->max ? a->max : b->max;
        s->points[out++] = m;
    }
    if (s->count & 1) /* cannot happen with an even cap; kept for safety */
        s->points[out++] = s->points[s->count - 1];
    s->count = out;
    s->per_point *= 2;
}

int sps__series_add(struct sps__series *s, int64_t t_ns, double v) {
    if (isnan(v))
        return 0;
    if (s->n == 0)
        s->first_ns = t_ns;
    s->n++;
    s->sum += v;
    s->last = v;
    s->last_ns = t_ns;
    if (v < s->min)
        s->min = v;
    if (v > s->max)
        s->max = v;

    if (!s->points) {
        s->points = malloc(sizeof *s->points * s->cap);
        if (!s->points)
            return -1;
    }
    /* the newest point still has room at this resolution: fold it in */
    if (s->count > 0) {
        struct sps__series_point *p = &s->points[s->count - 1];
        if (p->n < s->per_point) {
            p->mean += (v - p->mean) / (p->n + 1);
            p->n++;
            if (v > p->max)
                p->max = v;
            return 0;
        }
    }
    if (s->count == s->cap)
        halve(s);
    s->points[s->count++] = (struct sps__series_point){.t_ns = t_ns, .mean = v, .max = v, .n = 1};
    return 0;
}

void sps__series_free(struct sps__series *s) {
    free(s->points);
    uint32_t cap = s->cap;
    sps__series_init(s, cap);
}
