/* step_series.c - the sampler's series over steps (see step_series.h). */
#include "render/step_series.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/machine_series.h"
#include "stepscope.h"

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/* The column stem of a series (docs/csv-format.md, "Metric columns"):
 * the catalogue name, which ends in its unit ("workload_rss_bytes"), with
 * "_<unit>" added where it does not ("workload_processes_count"), so that
 * every column states its unit; "gpu<index>:" before a GPU's metrics;
 * "sensor:<label>:<unit>" for a temperature sensor. */
static void series_column(const struct sps__machine_series *m, char *col, size_t len) {
    const char *unit = m->unit ? m->unit : "";
    char suffix[64];
    snprintf(suffix, sizeof suffix, "_%s", unit);
    int named_with_unit = !*unit || ends_with(m->metric, suffix);
    if (m->sensor)
        snprintf(col, len, "sensor:%s:%s", m->sensor, *unit ? unit : "celsius");
    else if (m->gpu >= 0)
        snprintf(col, len, "gpu%d:%s%s", m->gpu, m->metric, named_with_unit ? "" : suffix);
    else
        snprintf(col, len, "%s%s", m->metric, named_with_unit ? "" : suffix);
}

void sps__step_series_free(struct sps__step_series *s, size_t n) {
    for (size_t i = 0; s && i < n; i++) {
        free(s[i].t);
        free(s[i].mean);
        free(s[i].max);
    }
    free(s);
}

int sps__step_series_load(const struct sps_report *rep, int64_t origin_ns, struct sps__step_series **out,
                          size_t *n, char *err, size_t errlen) {
    struct sps__machine_series list[SPS_MACHINE_SERIES_MAX];
    size_t count = sps__machine_series_list(rep->info.sampler, list);
    *out = NULL;
    *n = 0;
    struct sps__step_series *all = calloc(count ? count : 1, sizeof *all);
    if (!all)
        goto nomem;
    for (size_t i = 0; i < count; i++) {
        const struct sps__series *src = list[i].s;
        struct sps__step_series *s = &all[i];
        s->metric = list[i].metric;
        s->unit = list[i].unit ? list[i].unit : "";
        s->gpu = list[i].gpu;
        s->sensor = list[i].sensor;
        series_column(&list[i], s->column, sizeof s->column);
        size_t pts = src->count;
        s->n = pts;
        s->t = malloc((pts ? pts : 1) * sizeof *s->t);
        s->mean = malloc((pts ? pts : 1) * sizeof *s->mean);
        s->max = malloc((pts ? pts : 1) * sizeof *s->max);
        if (!s->t || !s->mean || !s->max) {
            sps__step_series_free(all, count);
            goto nomem;
        }
        for (size_t p = 0; p < pts; p++) {
            s->t[p] = ((double)src->points[p].t_ns - (double)origin_ns) / 1e9;
            s->mean[p] = src->points[p].mean;
            s->max[p] = src->points[p].max;
        }
        s->last_span_s = (double)list[i].interval_ms * 1e-3 * (double)src->per_point;
    }
    *out = all;
    *n = count;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory reading the sampler's series");
    return SPS_ENOMEM;
}

/* Every point whose span overlaps the step, a point's span running from
 * its t to the next point's t (the last point: readings_per_point
 * intervals). */
void sps__step_series_span(const struct sps__step_series *s, double start, double end, size_t *first,
                           size_t *stop) {
    *first = *stop = 0;
    if (s->n == 0 || !isfinite(start) || !isfinite(end))
        return;
    /* the first point whose span ends after start: the last point with
     * t <= start, found by binary search over the increasing times */
    size_t lo = 0, hi = s->n; /* answer in [lo, hi): first index with t > start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->t[mid] <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t from = lo > 0 ? lo - 1 : 0;
    if (lo > 0 && lo == s->n && s->t[from] + s->last_span_s <= start)
        return; /* the step began after the last point's span */
    size_t to = from;
    while (to < s->n && s->t[to] <= end)
        to++;
    *first = from;
    *stop = to;
}

void sps__step_series_over(const struct sps__step_series *s, size_t first, size_t stop, double *mean,
                           double *max) {
    *mean = *max = NAN;
    double sum = 0, top = -INFINITY;
    size_t used = 0;
    for (size_t i = first; i < stop; i++) {
        if (!isfinite(s->mean[i]) || !isfinite(s->max[i]))
            continue;
        sum += s->mean[i];
        if (s->max[i] > top)
            top = s->max[i];
        used++;
    }
    if (used) {
        *mean = sum / (double)used;
        *max = top;
    }
}
