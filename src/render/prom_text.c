/*
 * prom_text.c - the Prometheus exposition of a snapshot (see prom_text.h
 * and docs/prometheus.md for the names and labels).
 *
 * The two formats differ only in a few places: OpenMetrics names a
 * counter's family without its _total suffix, has UNIT lines and the info
 * type, and ends with "# EOF"; the 0.0.4 text names the family as its
 * sample and has neither.  Everything else is one code path.
 */
#include "render/prom_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepscope.h"

const double sps__prom_bound_s[SPS_PROM_BOUNDS] = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                                    5e-3, 0.01,   0.025, 0.05, 0.1,    0.25, 0.5,  1,
                                                    2.5,  5,      10,    25,   50,     100};

/* The bounds as le label values, in the form Prometheus's own clients
 * write (Go's float formatting): a scrape of a series keeps one le text. */
static const char *const bound_text[SPS_PROM_BOUNDS] = {
    "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05",  "0.1",     "0.25",  "0.5",    "1.0",     "2.5",    "5.0",   "10.0",   "25.0",  "50.0", "100.0"};

/* ------------------------------------------------------------- buffer */

struct out {
    char *p;
    size_t n, cap;
    int oom;
};

static int reserve(struct out *o, size_t more) {
    if (o->oom)
        return -1;
    if (o->n + more + 1 <= o->cap)
        return 0;
    size_t want = o->cap ? o->cap : 16384;
    while (want < o->n + more + 1)
        want *= 2;
    char *grown = realloc(o->p, want);
    if (!grown) {
        o->oom = 1;
        return -1;
    }
    o->p = grown;
    o->cap = want;
    return 0;
}

static void put(struct out *o, const char *s, size_t len) {
    if (reserve(o, len) == 0) {
        memcpy(o->p + o->n, s, len);
        o->n += len;
        o->p[o->n] = '\0';
    }
}

static void puts_(struct out *o, const char *s) {
    put(o, s, strlen(s));
}

static void printf_(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_(struct out *o, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len < sizeof tmp) {
        put(o, tmp, (size_t)len);
        return;
    }
    if (reserve(o, (size_t)len) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(o->p + o->n, (size_t)len + 1, fmt, ap);
    va_end(ap);
    o->n += (size_t)len;
}

static void put_u64(struct out *o, uint64_t v) {
    char tmp[24];
    int i = (int)sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(o, tmp + i, sizeof tmp - (size_t)i);
}

/* A number as a sample value: integers exactly, others to 15 digits. */
static void put_num(struct out *o, double v) {
    if (v == floor(v) && fabs(v) < 9e15)
        printf_(o, "%.0f", v);
    else
        printf_(o, "%.15g", v);
}

/* A label value, escaped as both formats require (\\, \", \n). */
static void put_label_value(struct out *o, const char *s) {
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (!esc)
            continue;
        put(o, run, (size_t)(s - run));
        puts_(o, esc);
        run = s + 1;
    }
    put(o, run, (size_t)(s - run));
}

static void put_label(struct out *o, int first, const char *name, const char *value) {
    if (!first)
        put(o, ",", 1);
    puts_(o, name);
    put(o, "=\"", 2);
    put_label_value(o, value);
    put(o, "\"", 1);
}

/* ----------------------------------------------------------- families */

/* A metric family's metadata.  name is the family's name in OpenMetrics
 * (a counter's without _total); unit is "" or its UNIT (the name's
 * suffix). */
static void family(struct out *o, enum sps__prom_format f, const char *name, const char *type, const char *unit,
                   const char *help) {
    int counter = !strcmp(type, "counter");
    int info = !strcmp(type, "info");
    const char *suffix = f == SPS_PROM_TEXT_004 && counter ? "_total" : f == SPS_PROM_TEXT_004 && info ? "_info" : "";
    const char *t = f == SPS_PROM_TEXT_004 && info ? "gauge" : type;
    printf_(o, "# TYPE %s%s %s\n", name, suffix, t);
    if (f == SPS_PROM_OPENMETRICS && *unit)
        printf_(o, "# UNIT %s %s\n", name, unit);
    printf_(o, "# HELP %s%s ", name, suffix);
    /* \\ and \n in both; OpenMetrics escapes a double quote too */
    const char *run = help;
    for (const char *c = help; *c; c++) {
        const char *esc = *c == '\\' ? "\\\\" : *c == '\n' ? "\\n" : *c == '"' && f == SPS_PROM_OPENMETRICS ? "\\\"" : NULL;
        if (!esc)
            continue;
        put(o, run, (size_t)(c - run));
        puts_(o, esc);
        run = c + 1;
    }
    puts_(o, run);
    put(o, "\n", 1);
}

/* The labels that say whose a series is: rank (or pid) and Hostname. */
static void owner_labels(struct out *o, const struct sps__prom_series *s, int first) {
    char num[16];
    snprintf(num, sizeof num, "%d", s->rank >= 0 ? s->rank : s->pid);
    put_label(o, first, s->rank >= 0 ? "rank" : "pid", num);
    put_label(o, 0, "Hostname", s->host);
}

static const char *zone_kind_name(uint32_t kind) {
    return kind == SPS_KIND_MICROSTEP ? "microstep" : kind == SPS_KIND_WAIT ? "wait" : "zone";
}

/* The labels of a series: its name's label, then its owner's. */
static void series_labels(struct out *o, const struct sps__prom_series *s, const char *name_label) {
    put_label(o, 1, name_label, s->name);
    if (s->kind == SPS_PROM_ZONE)
        put_label(o, 0, "kind", zone_kind_name(s->rec_kind));
    owner_labels(o, s, 0);
}

/* One histogram series.  Its labels are written once and copied into
 * each of its 25 lines (the bulk of a large exposition). */
static void histogram_series(struct out *o, const char *metric, const struct sps__prom_series *s,
                             const char *name_label) {
    struct out labels = {0};
    series_labels(&labels, s, name_label);
    if (labels.oom) {
        o->oom = 1;
        return;
    }
    size_t mlen = strlen(metric);
    uint64_t cum = 0;
    for (int i = 0; i <= SPS_PROM_BOUNDS; i++) {
        cum = i < SPS_PROM_BOUNDS ? cum + s->bucket[i] : s->count;
        put(o, metric, mlen);
        put(o, "_bucket{", 8);
        put(o, labels.p, labels.n);
        put(o, ",le=\"", 5);
        puts_(o, i < SPS_PROM_BOUNDS ? bound_text[i] : "+Inf");
        put(o, "\"} ", 3);
        put_u64(o, cum);
        put(o, "\n", 1);
    }
    put(o, metric, mlen);
    put(o, "_sum{", 5);
    put(o, labels.p, labels.n);
    put(o, "} ", 2);
    put_num(o, (double)s->sum_ns * 1e-9);
    put(o, "\n", 1);
    put(o, metric, mlen);
    put(o, "_count{", 7);
    put(o, labels.p, labels.n);
    put(o, "} ", 2);
    put_u64(o, s->count);
    put(o, "\n", 1);
    free(labels.p);
}

/* The series of one kind, [*first, end of that kind); *first moves past them. */
static size_t kind_end(const struct sps__prom_snapshot *s, size_t first, int kind) {
    size_t i = first;
    while (i < s->nseries && s->series[i].kind == kind)
        i++;
    return i;
}

static size_t kind_begin(const struct sps__prom_snapshot *s, int kind) {
    size_t i = 0;
    while (i < s->nseries && s->series[i].kind < kind)
        i++;
    return i;
}

static void steps(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    size_t a = kind_begin(s, SPS_PROM_STEP), b = kind_end(s, a, SPS_PROM_STEP);
    if (a == b)
        return;
    family(o, f, "stepscope_step_duration_seconds", "histogram", "seconds",
           "duration of the workload's steps, per rank (or per process without one)");
    for (size_t i = a; i < b; i++)
        histogram_series(o, "stepscope_step_duration_seconds", &s->series[i], "step");
    family(o, f, "stepscope_steps", "counter", "", "steps completed, per rank (or per process without one)");
    for (size_t i = a; i < b; i++) {
        puts_(o, "stepscope_steps_total{");
        series_labels(o, &s->series[i], "step");
        put(o, "} ", 2);
        put_u64(o, s->series[i].count);
        put(o, "\n", 1);
    }
}

static void zones(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    size_t a = kind_begin(s, SPS_PROM_ZONE), b = kind_end(s, a, SPS_PROM_ZONE);
    if (a == b)
        return;
    family(o, f, "stepscope_zone_duration_seconds", "histogram", "seconds",
           "duration of the workload's zones (phases) and micro-steps, per rank (or per process without one)");
    for (size_t i = a; i < b; i++)
        histogram_series(o, "stepscope_zone_duration_seconds", &s->series[i], "zone");
    family(o, f, "stepscope_zone_self_seconds", "counter", "seconds",
           "time in a zone and in no zone nested in it, per rank (or per process without one)");
    for (size_t i = a; i < b; i++) {
        puts_(o, "stepscope_zone_self_seconds_total{");
        series_labels(o, &s->series[i], "zone");
        put(o, "} ", 2);
        put_num(o, (double)s->series[i].self_ns * 1e-9);
        put(o, "\n", 1);
    }
}

static void counters(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    size_t a = kind_begin(s, SPS_PROM_COUNTER), b = kind_end(s, a, SPS_PROM_COUNTER);
    int samples = 0, others = 0;
    for (size_t i = a; i < b; i++) {
        if (!strcmp(s->series[i].name, "samples"))
            samples++;
        else
            others++;
    }
    if (samples) {
        family(o, f, "stepscope_samples", "counter", "",
               "samples trained (the workload's counter named samples), per rank (or per process without one)");
        for (size_t i = a; i < b; i++) {
            if (strcmp(s->series[i].name, "samples"))
                continue;
            puts_(o, "stepscope_samples_total{");
            owner_labels(o, &s->series[i], 1);
            put(o, "} ", 2);
            put_num(o, s->series[i].value);
            put(o, "\n", 1);
        }
    }
    if (others) {
        family(o, f, "stepscope_counter", "counter", "",
               "the workload's other counters (tokens, FLOPs, ...), per rank (or per process without one)");
        for (size_t i = a; i < b; i++) {
            if (!strcmp(s->series[i].name, "samples"))
                continue;
            puts_(o, "stepscope_counter_total{");
            series_labels(o, &s->series[i], "counter");
            put(o, "} ", 2);
            put_num(o, s->series[i].value);
            put(o, "\n", 1);
        }
    }
}

static void values(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    size_t a = kind_begin(s, SPS_PROM_VALUE), b = kind_end(s, a, SPS_PROM_VALUE);
    if (a == b)
        return;
    family(o, f, "stepscope_value", "gauge", "",
           "the latest of each value the workload records (loss, learning rate, ...), per rank (or per process "
           "without one)");
    for (size_t i = a; i < b; i++) {
        if (!isfinite(s->series[i].value))
            continue;
        puts_(o, "stepscope_value{");
        series_labels(o, &s->series[i], "value");
        put(o, "} ", 2);
        put_num(o, s->series[i].value);
        put(o, "\n", 1);
    }
}

static void processes(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    if (!s->nprocs)
        return;
    family(o, f, "stepscope_process", "info", "",
           "one recording process of the job: its pid, parent, rank, local rank and world size (-1: not set)");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct sps__prom_process *p = &s->procs[i];
        char v[5][16];
        snprintf(v[0], sizeof v[0], "%d", p->pid);
        snprintf(v[1], sizeof v[1], "%d", p->ppid);
        snprintf(v[2], sizeof v[2], "%d", p->rank);
        snprintf(v[3], sizeof v[3], "%d", p->local_rank);
        snprintf(v[4], sizeof v[4], "%d", p->world_size);
        puts_(o, "stepscope_process_info{");
        put_label(o, 1, "pid", v[0]);
        put_label(o, 0, "ppid", v[1]);
        put_label(o, 0, "rank", v[2]);
        put_label(o, 0, "local_rank", v[3]);
        put_label(o, 0, "world_size", v[4]);
        put_label(o, 0, "Hostname", p->host);
        puts_(o, "} 1\n");
    }
}

/* ------------------------------------------------------------- machine */

/* A catalogue row's unit, when the metric's name ends with it (OpenMetrics
 * requires that of a UNIT). */
static const char *unit_of(const struct sps_metric_info *m) {
    size_t n = strlen(m->name), u = strlen(m->unit);
    return n > u + 1 && m->name[n - u - 1] == '_' && !strcmp(m->name + n - u, m->unit) ? m->unit : "";
}

static void host_metrics(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++) {
        const struct sps_metric_info *info = sps_host_metric_info(m);
        double v = s->sample.host[m];
        if (!isfinite(v))
            continue;
        int total = info->kind == SPS_TOTAL;
        char name[96];
        snprintf(name, sizeof name, "stepscope_%s", info->name);
        family(o, f, name, total ? "counter" : "gauge", unit_of(info), info->description);
        printf_(o, "%s%s{", name, total ? "_total" : "");
        put_label(o, 1, "Hostname", s->host);
        put(o, "} ", 2);
        put_num(o, v);
        put(o, "\n", 1);
    }
}

/* dcgm-exporter's GPU labels: gpu, UUID, modelName, Hostname. */
static void gpu_labels(struct out *o, const struct sps__prom_snapshot *s, const struct sps__gpu_sample *g) {
    char idx[16];
    snprintf(idx, sizeof idx, "%d", g->index);
    put_label(o, 1, "gpu", idx);
    put_label(o, 0, "UUID", g->uuid);
    put_label(o, 0, "modelName", g->name);
    put_label(o, 0, "Hostname", s->host);
}

static void gpu_metrics(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    int ngpus = s->sample.ngpus < SPS_CAPTURE_MAX_GPUS ? s->sample.ngpus : SPS_CAPTURE_MAX_GPUS;
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++) {
        const struct sps_metric_info *info = sps_gpu_metric_info(m);
        int any = 0;
        for (int g = 0; g < ngpus; g++)
            any |= isfinite(s->sample.gpu[g].v[m]);
        if (!any)
            continue;
        int total = info->kind == SPS_TOTAL;
        char name[96];
        snprintf(name, sizeof name, "stepscope_%s", info->name);
        family(o, f, name, total ? "counter" : "gauge", unit_of(info), info->description);
        for (int g = 0; g < ngpus; g++) {
            if (!isfinite(s->sample.gpu[g].v[m]))
                continue;
            printf_(o, "%s%s{", name, total ? "_total" : "");
            gpu_labels(o, s, &s->sample.gpu[g]);
            put(o, "} ", 2);
            put_num(o, s->sample.gpu[g].v[m]);
            put(o, "\n", 1);
        }
    }
}

static void sensors(struct out *o, enum sps__prom_format f, const struct sps__prom_snapshot *s) {
    int n = s->sample.nsensors < SPS_CAPTURE_MAX_SENSORS ? s->sample.nsensors : SPS_CAPTURE_MAX_SENSORS;
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= isfinite(s->sample.sensor[i].celsius);
    if (!any)
        return;
    family(o, f, "stepscope_sensor_temperature_celsius", "gauge", "celsius",
           "each temperature sensor the thermal source reads (hwmon, thermal zones)");
    for (int i = 0; i < n; i++) {
        const struct sps__sensor_sample *t = &s->sample.sensor[i];
        if (!isfinite(t->celsius))
            continue;
        puts_(o, "stepscope_sensor_temperature_celsius{");
        put_label(o, 1, "sensor", t->label);
        put_label(o, 0, "cpu", t->is_cpu ? "1" : "0");
        put_label(o, 0, "Hostname", s->host);
        put(o, "} ", 2);
        put_num(o, t->celsius);
        put(o, "\n", 1);
    }
}

/* -------------------------------------------------------------- public */

const char *sps__prom_content_type(enum sps__prom_format f) {
    return f == SPS_PROM_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                     : "text/plain; version=0.0.4; charset=utf-8";
}

enum sps__prom_format sps__prom_negotiate(const char *accept) {
    return accept && strstr(accept, "application/openmetrics-text") ? SPS_PROM_OPENMETRICS : SPS_PROM_TEXT_004;
}

char *sps__prom_render(const struct sps__prom_snapshot *s, enum sps__prom_format f, size_t *len) {
    struct out o = {0};
    if (s->run_start_unix_s > 0) {
        family(&o, f, "stepscope_run_start_time_seconds", "gauge", "seconds",
               "when the job began, seconds since the Unix epoch");
        puts_(&o, "stepscope_run_start_time_seconds{");
        put_label(&o, 1, "Hostname", s->host);
        put(&o, "} ", 2);
        put_num(&o, s->run_start_unix_s);
        put(&o, "\n", 1);
    }
    processes(&o, f, s);
    steps(&o, f, s);
    zones(&o, f, s);
    counters(&o, f, s);
    values(&o, f, s);
    if (s->have_sample) {
        host_metrics(&o, f, s);
        gpu_metrics(&o, f, s);
        sensors(&o, f, s);
    }
    if (f == SPS_PROM_OPENMETRICS)
        puts_(&o, "# EOF\n");
    if (reserve(&o, 0) != 0) {
        free(o.p);
        return NULL;
    }
    o.p[o.n] = '\0'; /* nothing was put: an empty text */
    if (len)
        *len = o.n;
    return o.p;
}

static int by_order(const void *a, const void *b) {
    const struct sps__prom_series *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    if (x->rank != y->rank) /* ranks in order, processes without one after them */
        return (uint32_t)x->rank < (uint32_t)y->rank ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void sps__prom_sort(struct sps__prom_snapshot *s) {
    if (s->nseries > 1)
        qsort(s->series, s->nseries, sizeof *s->series, by_order);
}

void sps__prom_snapshot_free(struct sps__prom_snapshot *s) {
    if (!s)
        return;
    free(s->series);
    free(s->procs);
    s->series = NULL;
    s->procs = NULL;
    s->nseries = s->nprocs = 0;
}
