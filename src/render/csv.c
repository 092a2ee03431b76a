/*
 * csv.c - steps.csv and timeline.csv (see exporters.h), made from
 * report.json alone so that standalone runs, which have no records, get
 * them too.  docs/csv-format.md is the contract: column names, units,
 * empty cells and how a step's metric statistics are computed.
 *
 * Both files are RFC 4180: one header row, comma-separated, a field
 * quoted when it holds a comma, a quote or a line break (quotes inside
 * doubled), "\n" line ends.  Numbers: JSON integers exactly, others with
 * %.15g.  A cell with nothing to say is empty, never 0.
 *
 * Not thread-safe per input (jansson objects are read, never changed);
 * every allocation made here is freed before returning.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/exporters.h"
#include "stepscope.h"

/* ------------------------------------------------------------ CSV cells */

/* One field, quoted only when RFC 4180 requires it. */
static void csv_text(FILE *out, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

/* A computed number; empty when it is not finite (unknown). */
static void csv_double(FILE *out, double v) {
    if (isfinite(v))
        fprintf(out, "%.15g", v);
}

/* A number from report.json as it was written there: integers exactly
 * (pids, counts, byte sizes), reals with %.15g; anything else (null,
 * absent, not a number) is an empty cell. */
static void csv_json_number(FILE *out, const json_t *v) {
    if (json_is_integer(v))
        fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        csv_double(out, json_real_value(v));
}

/* ----------------------------------------------------------- name lists */

/* A list of names, each once, in the order first added.  Names point into
 * report.json (borrowed, valid while the report is). */
struct name_list {
    const char **names;
    size_t n, cap;
};

static int names_has(const struct name_list *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->names[i], name))
            return 1;
    return 0;
}

static int names_add(struct name_list *l, const char *name) {
    if (names_has(l, name))
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        const char **grown = realloc(l->names, cap * sizeof *grown);
        if (!grown)
            return SPS_ENOMEM;
        l->names = grown;
        l->cap = cap;
    }
    l->names[l->n++] = name;
    return 0;
}

/* The names of a report section (zones[], values[], counters[]) in its
 * order, keeping only entries of the given kind (NULL: every entry), then
 * any name that only the step rows mention under row_key, in row order,
 * so that no owned event is left without a column. */
static int names_collect(struct name_list *l, json_t *report, const char *section, const char *kind,
                         json_t *rows, const char *row_key) {
    size_t i;
    json_t *entry;
    json_array_foreach(json_object_get(report, section), i, entry) {
        const char *name = json_string_value(json_object_get(entry, "name"));
        const char *k = json_string_value(json_object_get(entry, "kind"));
        if (name && (!kind || (k && !strcmp(k, kind))) && names_add(l, name) != 0)
            return SPS_ENOMEM;
    }
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *name;
        json_t *v;
        json_object_foreach(json_object_get(row, row_key), name, v) {
            (void)v;
            if (names_add(l, name) != 0)
                return SPS_ENOMEM;
        }
    }
    return 0;
}

/* -------------------------------------------------------------- series */

/* One series of report.json's series.metrics[], its points copied to
 * doubles (NAN where report.json has no number) for the binary searches
 * of steps.csv and the merge of timeline.csv. */
struct series {
    char column[256]; /* the column stem, e.g. "gpu0:gpu_utilization_percent" */
    size_t n;         /* points */
    double *t, *mean, *max;
    double last_span_s; /* how long the last point covers: readings_per_point intervals */
};

/* The catalogue's unit for a series' metric; NULL when the catalogue does
 * not know the name (a report from a later version). */
static const char *catalogue_unit(const char *metric, int is_gpu) {
    int count = is_gpu ? SPS_GPU_METRIC_COUNT : SPS_HOST_METRIC_COUNT;
    for (int id = 0; id < count; id++) {
        const struct sps_metric_info *info = is_gpu ? sps_gpu_metric_info(id) : sps_host_metric_info(id);
        if (info && !strcmp(info->name, metric))
            return info->unit;
    }
    return NULL;
}

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/* The column stem of a series entry (docs/csv-format.md, "Metric
 * columns"): the catalogue name, which ends in its unit
 * ("workload_rss_bytes"), with "_<unit>" added where it does not
 * ("workload_processes_count"), so that every column states its unit;
 * "gpu<index>:" before a GPU's metrics; "sensor:<label>:<unit>" for a
 * temperature sensor.  Returns 0, or SPS_EFORMAT when the entry does not
 * name its metric. */
static int series_column(json_t *entry, char *col, size_t len) {
    const char *metric = json_string_value(json_object_get(entry, "metric"));
    const char *sensor = json_string_value(json_object_get(entry, "sensor"));
    json_t *gpu = json_object_get(entry, "gpu");
    const char *unit = NULL;
    if (!metric)
        return SPS_EFORMAT;
    if (!sensor)
        unit = catalogue_unit(metric, gpu != NULL);
    if (!unit) /* sensors and metrics the catalogue does not list */
        unit = json_string_value(json_object_get(entry, "unit"));
    if (!unit)
        unit = "";
    char suffix[64];
    snprintf(suffix, sizeof suffix, "_%s", unit);
    int named_with_unit = !*unit || ends_with(metric, suffix);
    if (sensor)
        snprintf(col, len, "sensor:%s:%s", sensor, *unit ? unit : "celsius");
    else if (json_is_integer(gpu))
        snprintf(col, len, "gpu%" JSON_INTEGER_FORMAT ":%s%s", json_integer_value(gpu), metric,
                 named_with_unit ? "" : suffix);
    else
        snprintf(col, len, "%s%s", metric, named_with_unit ? "" : suffix);
    return 0;
}

static void series_free(struct series *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(s[i].t);
        free(s[i].mean);
        free(s[i].max);
    }
    free(s);
}

static double number_at(json_t *array, size_t i) {
    json_t *v = json_array_get(array, i);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Every entry of series.metrics[] as a struct series, in report order.
 * *out is malloc'd (free with series_free); *n may be 0. */
static int series_load(json_t *report, struct series **out, size_t *n, char *err, size_t errlen) {
    json_t *metrics = sps__json_at(report, "series.metrics");
    *out = NULL;
    *n = 0;
    if (!metrics)
        return 0; /* a report without machine metrics: no metric columns */
    if (!json_is_array(metrics)) {
        snprintf(err, errlen, "report.json: series.metrics is not an array");
        return SPS_EFORMAT;
    }
    size_t count = json_array_size(metrics);
    struct series *all = calloc(count ? count : 1, sizeof *all);
    if (!all)
        goto nomem;
    for (size_t i = 0; i < count; i++) {
        json_t *entry = json_array_get(metrics, i);
        struct series *s = &all[i];
        if (series_column(entry, s->column, sizeof s->column) != 0) {
            series_free(all, count);
            snprintf(err, errlen, "report.json: series.metrics[%zu] has no metric name", i);
            return SPS_EFORMAT;
        }
        json_t *t = json_object_get(entry, "t_s"), *mean = json_object_get(entry, "mean"),
               *max = json_object_get(entry, "max");
        /* the three arrays have the same length; should they not, the
         * points all three describe are the ones used */
        size_t pts = json_array_size(t);
        if (json_array_size(mean) < pts)
            pts = json_array_size(mean);
        if (json_array_size(max) < pts)
            pts = json_array_size(max);
        s->n = pts;
        s->t = malloc((pts ? pts : 1) * sizeof *s->t);
        s->mean = malloc((pts ? pts : 1) * sizeof *s->mean);
        s->max = malloc((pts ? pts : 1) * sizeof *s->max);
        if (!s->t || !s->mean || !s->max) {
            series_free(all, count);
            goto nomem;
        }
        for (size_t p = 0; p < pts; p++) {
            s->t[p] = number_at(t, p);
            s->mean[p] = number_at(mean, p);
            s->max[p] = number_at(max, p);
        }
        json_t *iv = json_object_get(entry, "interval_ms");
        json_t *rpp = json_object_get(entry, "readings_per_point");
        double interval_ms = json_is_number(iv) ? json_number_value(iv) : 0;
        s->last_span_s = interval_ms * 1e-3 * (json_is_number(rpp) ? json_number_value(rpp) : 1);
    }
    *out = all;
    *n = count;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory reading report.json's series");
    return SPS_ENOMEM;
}

/* The mean and max of a series over [start, end] (docs/csv-format.md,
 * "Metric columns"): every point whose span overlaps the step counts, a
 * point's span running from its t_s to the next point's t_s (the last
 * point: readings_per_point intervals).  The mean is the mean of the
 * overlapping points' means, the max the largest of their maxima; both
 * NAN when no point overlaps. */
static void series_over(const struct series *s, double start, double end, double *mean, double *max) {
    *mean = *max = NAN;
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
    size_t first = lo > 0 ? lo - 1 : 0;
    if (lo > 0 && lo == s->n && s->t[first] + s->last_span_s <= start)
        return; /* the step began after the last point's span */
    double sum = 0, top = -INFINITY;
    size_t used = 0;
    for (size_t i = first; i < s->n && s->t[i] <= end; i++) {
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

/* ----------------------------------------------------------- steps.csv */

static void header_with(FILE *out, const char *prefix, const char *name, const char *suffix) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s%s", prefix, name, suffix);
    fputc(',', out);
    csv_text(out, buf);
}

static void header_series(FILE *out, const struct series *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        header_with(out, "", s[i].column, ":mean");
        header_with(out, "", s[i].column, ":max");
    }
}

/* Whether writing to out failed; the caller's err says so. */
static int finish(FILE *out, char *err, size_t errlen, const char *what) {
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "%s: write failed: %s", what, strerror(errno ? errno : EIO));
        return SPS_EIO;
    }
    return 0;
}

int sps__export_steps_csv(const struct sps_report_input *in, FILE *out, char *err, size_t errlen) {
    json_t *rows = sps__json_at(in->report, "steps.rows");
    if (!json_is_array(rows)) {
        snprintf(err, errlen, "report.json: steps.rows is missing or not an array");
        return SPS_EFORMAT;
    }
    struct name_list zones = {0}, values = {0}, counters = {0};
    struct series *series = NULL;
    size_t nseries = 0;
    int rc = names_collect(&zones, in->report, "zones", "zone", rows, "zones_self_s");
    if (rc == 0)
        rc = names_collect(&values, in->report, "values", NULL, rows, "values");
    if (rc == 0)
        rc = names_collect(&counters, in->report, "counters", NULL, rows, "counters");
    if (rc != 0)
        snprintf(err, errlen, "out of memory listing the columns of steps.csv");
    else
        rc = series_load(in->report, &series, &nseries, err, errlen);
    if (rc != 0)
        goto done;

    fputs("pid,rank,tid,step_name,step_index,start_s,duration_s,warmup,microsteps", out);
    for (size_t i = 0; i < zones.n; i++)
        header_with(out, "zone:", zones.names[i], ":self_s");
    for (size_t i = 0; i < values.n; i++)
        header_with(out, "value:", values.names[i], ":last");
    for (size_t i = 0; i < counters.n; i++)
        header_with(out, "counter:", counters.names[i], ":sum");
    header_series(out, series, nseries);
    fputc('\n', out);

    size_t r;
    json_t *row;
    json_array_foreach(rows, r, row) {
        csv_json_number(out, json_object_get(row, "pid"));
        fputc(',', out);
        csv_json_number(out, json_object_get(row, "rank"));
        fputc(',', out);
        csv_json_number(out, json_object_get(row, "tid"));
        fputc(',', out);
        const char *name = json_string_value(json_object_get(row, "name"));
        csv_text(out, name ? name : "");
        fputc(',', out);
        csv_json_number(out, json_object_get(row, "index"));
        fputc(',', out);
        json_t *start = json_object_get(row, "start_s"), *duration = json_object_get(row, "duration_s");
        csv_json_number(out, start);
        fputc(',', out);
        csv_json_number(out, duration);
        fputc(',', out);
        json_t *warmup = json_object_get(row, "warmup");
        if (json_is_boolean(warmup))
            fputc(json_is_true(warmup) ? '1' : '0', out);
        fputc(',', out);
        /* report.json leaves microsteps out when there were none: 0 is
         * what it means, not a guess */
        json_t *micro = json_object_get(row, "microsteps");
        if (micro)
            csv_json_number(out, micro);
        else
            fputc('0', out);

        json_t *owned = json_object_get(row, "zones_self_s");
        for (size_t i = 0; i < zones.n; i++) {
            fputc(',', out);
            csv_json_number(out, json_object_get(owned, zones.names[i]));
        }
        owned = json_object_get(row, "values");
        for (size_t i = 0; i < values.n; i++) {
            fputc(',', out);
            csv_json_number(out, json_object_get(owned, values.names[i]));
        }
        owned = json_object_get(row, "counters");
        for (size_t i = 0; i < counters.n; i++) {
            fputc(',', out);
            csv_json_number(out, json_object_get(owned, counters.names[i]));
        }
        double t0 = json_is_number(start) ? json_number_value(start) : NAN;
        double t1 = json_is_number(duration) ? t0 + json_number_value(duration) : NAN;
        for (size_t i = 0; i < nseries; i++) {
            double mean, max;
            series_over(&series[i], t0, t1, &mean, &max);
            fputc(',', out);
            csv_double(out, mean);
            fputc(',', out);
            csv_double(out, max);
        }
        fputc('\n', out);
    }
    rc = finish(out, err, errlen, "steps.csv");
done:
    free(zones.names);
    free(values.names);
    free(counters.names);
    series_free(series, nseries);
    return rc;
}

/* -------------------------------------------------------- timeline.csv */

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int sps__export_timeline_csv(const struct sps_report_input *in, FILE *out, char *err, size_t errlen) {
    struct series *series = NULL;
    size_t nseries = 0;
    int rc = series_load(in->report, &series, &nseries, err, errlen);
    if (rc != 0)
        return rc;

    /* the rows: the union of every series' times, each once, increasing */
    size_t total = 0;
    for (size_t i = 0; i < nseries; i++)
        total += series[i].n;
    double *times = malloc((total ? total : 1) * sizeof *times);
    size_t *cursor = calloc(nseries ? nseries : 1, sizeof *cursor);
    if (!times || !cursor) {
        snprintf(err, errlen, "out of memory merging the series for timeline.csv");
        rc = SPS_ENOMEM;
        goto done;
    }
    size_t ntimes = 0;
    for (size_t i = 0; i < nseries; i++)
        for (size_t p = 0; p < series[i].n; p++)
            if (isfinite(series[i].t[p]))
                times[ntimes++] = series[i].t[p];
    qsort(times, ntimes, sizeof *times, compare_doubles);
    size_t unique = 0;
    for (size_t k = 0; k < ntimes; k++)
        if (unique == 0 || times[k] != times[unique - 1])
            times[unique++] = times[k];

    fputs("t_s", out);
    header_series(out, series, nseries);
    fputc('\n', out);
    for (size_t k = 0; k < unique; k++) {
        csv_double(out, times[k]);
        for (size_t i = 0; i < nseries; i++) {
            /* each series' times increase, so one cursor per series walks
             * it once over the whole file; a time it lacks is two empty
             * cells */
            const struct series *s = &series[i];
            while (cursor[i] < s->n && !(s->t[cursor[i]] >= times[k]))
                cursor[i]++;
            if (cursor[i] < s->n && s->t[cursor[i]] == times[k]) {
                fputc(',', out);
                csv_double(out, s->mean[cursor[i]]);
                fputc(',', out);
                csv_double(out, s->max[cursor[i]]);
                cursor[i]++;
            } else {
                fputs(",,", out);
            }
        }
        fputc('\n', out);
    }
    rc = finish(out, err, errlen, "timeline.csv");
done:
    free(times);
    free(cursor);
    series_free(series, nseries);
    return rc;
}
