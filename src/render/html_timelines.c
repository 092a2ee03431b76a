/* html_timelines.c - report.html's charts of the machine's metrics over
 * time, drawn from the sampler's series in the report model, and of
 * stepscope.MemoryTracker's allocation timeline, drawn from the record's
 * values, with the steps marked on them (see html_charts.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/html_charts.h"
#include "render/html_units.h"
#include "render/render.h"
#include "render/svg_chart.h"
#include "sampler/sampler.h"
#include "sampler/series.h"
#include "stepscope.h"

/* At most this many step boundaries are drawn on a time chart; beyond it
 * every k-th step start is. */
#define MAX_BOUNDARIES 120
/* Processes of the tree drawn one line each on the memory chart; the rest
 * are named in its note. */
#define MAX_PROCESS_LINES 8
#define MAX_LINES 24

/* The kinds of y axis a timeline chart can have. */
enum axis_kind { AXIS_BYTES, AXIS_PERCENT, AXIS_CELSIUS, AXIS_WATTS };

struct timeline_line {
    const struct sps__series *series; /* with points */
    char label[96];
    const char *color;
    int filled; /* an area under the line as well */
};

struct timeline {
    const char *id, *title, *what, *y_name;
    enum axis_kind axis;
    struct timeline_line lines[MAX_LINES];
    size_t nlines;
    char missing[2048]; /* "label: reason; ..." for the metrics with no data */
    int peaks; /* draw each point's largest reading, not its mean: a peak must not be averaged away */
};

/* What every chart of one page shares: the sampler's result (NULL: none
 * ran), why there is none, and the time axis. */
struct timeline_ctx {
    const struct sps__sampler_result *r;
    const char *absent_reason;
    uint64_t base_ns; /* series times are seconds after it, as report.json writes them */
    double end_s;
};

static void add_missing(struct timeline *t, const char *label, const char *reason) {
    size_t len = strlen(t->missing);
    if (len + 8 >= sizeof t->missing)
        return;
    snprintf(t->missing + len, sizeof t->missing - len, "%s%s: %s", len ? "; " : "", label,
             reason ? reason : "no readings");
}

/* A line for series when it has points; else its label and why in the note. */
static void add_line(struct timeline *t, const struct sps__series *series, const char *label, const char *color,
                     int filled, const char *reason_if_missing) {
    if (!series || !series->count) {
        add_missing(t, label, reason_if_missing);
        return;
    }
    if (t->nlines == MAX_LINES)
        return;
    struct timeline_line *l = &t->lines[t->nlines++];
    l->series = series;
    snprintf(l->label, sizeof l->label, "%s", label);
    l->color = color;
    l->filled = filled;
}

/* The host metric named metric (enum sps_host_metric), or -1. */
static int host_metric(const char *metric) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        if (!strcmp(sps_host_metric_info(i)->name, metric))
            return i;
    return -1;
}

/* A host metric's line, or why it has none. */
static void add_host(struct timeline *t, const struct timeline_ctx *x, const char *metric, const char *label,
                     const char *color, int filled) {
    int m = host_metric(metric);
    if (!x->r || m < 0) {
        add_missing(t, label, x->absent_reason);
        return;
    }
    char buf[256];
    const char *why = x->r->host[m].n ? NULL : sps__metric_why_none(x->r, m, buf, sizeof buf);
    add_line(t, &x->r->host[m], label, color, filled, why);
}

/* One line per GPU for metric (enum sps_gpu_metric).  Without a GPU
 * nothing: the page says once, above the charts, that there is none. */
static void add_gpus(struct timeline *t, const struct timeline_ctx *x, int metric, const char *what,
                     size_t color_base) {
    if (!x->r)
        return;
    for (int i = 0; i < x->r->ngpus; i++) {
        const struct sps__gpu_series *g = &x->r->gpu[i];
        const struct sps__source *src = sps__source_get((enum sps_source_id)g->source);
        char label[96], why[160];
        snprintf(label, sizeof label, "GPU %d %s", g->index, what);
        snprintf(why, sizeof why, "%s does not report it for this GPU", src ? src->name : "unknown");
        add_line(t, &g->m[metric], label, html_palette(color_base + (size_t)i), 0, why);
    }
}

/* One line per process of the tree, when it had more than one (a lone
 * process's line would repeat the tree's). */
static void add_processes(struct timeline *t, const struct timeline_ctx *x, size_t color_base) {
    if (!x->r)
        return;
    size_t n = 0;
    for (int i = 0; i < x->r->nprocesses; i++)
        n += x->r->process[i].rss_bytes.count > 0;
    if (n < 2)
        return;
    size_t drawn = 0;
    for (int i = 0; i < x->r->nprocesses && drawn < MAX_PROCESS_LINES; i++) {
        const struct sps__process_series *p = &x->r->process[i];
        if (!p->rss_bytes.count)
            continue;
        char label[96];
        snprintf(label, sizeof label, "pid %d (%s) RSS", p->pid, p->comm);
        add_line(t, &p->rss_bytes, label, html_palette(color_base + drawn), 0, NULL);
        drawn++;
    }
    if (n > drawn) {
        char more[96];
        snprintf(more, sizeof more, "%zu more processes", n - drawn);
        add_missing(t, more, "their series are in report.json (series.processes)");
    }
}

/* The later of end and the last point of se, seconds after base_ns. */
static double later_point(double end, const struct sps__series *se, uint64_t base_ns) {
    double last = se->count ? ((double)se->points[se->count - 1].t_ns - (double)base_ns) * 1e-9 : 0;
    return last > end ? last : end;
}

/* The time the charts span: the run's wall time, or the last point of a
 * host, GPU or sensor series, or the last step's end. */
static double timeline_end_s(const struct sps_report *rep, const struct html_steps *s, uint64_t base_ns) {
    double end = rep->info.have_times ? rep->info.wall_s : 0;
    const struct sps__sampler_result *r = rep->info.sampler;
    for (int i = 0; r && i < SPS_HOST_METRIC_COUNT; i++)
        end = later_point(end, &r->host[i], base_ns);
    for (int g = 0; r && g < r->ngpus; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            end = later_point(end, &r->gpu[g].m[i], base_ns);
    for (int k = 0; r && k < r->nsensors; k++)
        end = later_point(end, &r->sensor[k].celsius, base_ns);
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->start_s[i]) && isfinite(s->duration_s[i]) && s->start_s[i] + s->duration_s[i] > end)
            end = s->start_s[i] + s->duration_s[i];
    return end > 0 ? end : 1;
}

/* A step-boundary stride of 1, 2 or 5 times a power of ten that leaves at
 * most MAX_BOUNDARIES lines. */
static size_t boundary_stride(size_t n) {
    size_t k = 1;
    while (n / k > MAX_BOUNDARIES) {
        size_t d = k;
        while (d >= 10)
            d /= 10;
        k = d == 1 ? k * 2 : d == 2 ? k / 2 * 5 : k * 2;
    }
    return k;
}

/* Warm-up first, under everything: the span of each run of consecutive
 * warm-up rows; then every stride-th step start. */
static void draw_steps(struct svg_chart *c, const struct html_steps *s, struct html_unit xu, size_t stride) {
    for (size_t i = 0; i < s->n;) {
        if (!s->warm[i] || !isfinite(s->start_s[i])) {
            i++;
            continue;
        }
        double lo = s->start_s[i], hi = lo + (isfinite(s->duration_s[i]) ? s->duration_s[i] : 0);
        size_t j = i + 1;
        for (; j < s->n && s->warm[j] && isfinite(s->start_s[j]); j++) {
            double e = s->start_s[j] + (isfinite(s->duration_s[j]) ? s->duration_s[j] : 0);
            if (s->start_s[j] < lo)
                lo = s->start_s[j];
            if (e > hi)
                hi = e;
        }
        svg_chart_xband(c, lo / xu.div, hi / xu.div, HTML_COLOR_WARMUP, 0.22);
        i = j;
    }
    for (size_t i = 0; i < s->n; i += stride)
        svg_chart_vline(c, s->start_s[i] / xu.div, HTML_COLOR_BOUNDARY, 0.35);
}

static int write_timeline(FILE *out, const struct html_steps *s, const struct timeline *t,
                          const struct timeline_ctx *x) {
    html_section_begin(out, t->id, t->title, t->what);
    if (t->nlines == 0) {
        char why[2200];
        snprintf(why, sizeof why, "No data to draw. %s", t->missing[0] ? t->missing : "No series was sampled.");
        html_write_empty(out, why);
        fputs("</section>\n", out);
        return 0;
    }
    /* the points, converted once: x in the elapsed unit, y in the metric's */
    double y_min = INFINITY, y_max = -INFINITY;
    size_t npts[MAX_LINES];
    double *xs[MAX_LINES] = {0}, *ys[MAX_LINES] = {0};
    int rc = 0;
    struct html_unit xu = html_elapsed_unit(x->end_s);
    for (size_t l = 0; l < t->nlines; l++) {
        const struct sps__series *se = t->lines[l].series;
        size_t n = se->count;
        npts[l] = n;
        xs[l] = malloc((n ? n : 1) * sizeof(double));
        ys[l] = malloc((n ? n : 1) * sizeof(double));
        if (!xs[l] || !ys[l]) {
            rc = SPS_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            xs[l][i] = ((double)se->points[i].t_ns - (double)x->base_ns) * 1e-9 / xu.div;
            ys[l][i] = t->peaks ? se->points[i].max : se->points[i].mean;
            if (isfinite(ys[l][i])) {
                y_min = fmin(y_min, ys[l][i]);
                y_max = fmax(y_max, ys[l][i]);
            }
        }
    }
    struct html_unit yu = {1, ""};
    switch (t->axis) {
    case AXIS_BYTES: yu = html_bytes_unit(y_max); break;
    case AXIS_PERCENT: yu = (struct html_unit){1, "%"}; break;
    case AXIS_CELSIUS: yu = (struct html_unit){1, "°C"}; break;
    case AXIS_WATTS: yu = (struct html_unit){1, "W"}; break;
    }
    char y_title[96], x_title[64];
    snprintf(y_title, sizeof y_title, "%s (%s)", t->y_name, yu.name);
    snprintf(x_title, sizeof x_title, "time since the run started (%s)", xu.name);

    struct svg_legend_item legend[MAX_LINES + 2];
    size_t nl = 0;
    for (size_t l = 0; l < t->nlines; l++)
        legend[nl++] = (struct svg_legend_item){t->lines[l].label, t->lines[l].color, 1, 0};
    size_t stride = boundary_stride(s->n);
    char boundary_label[64];
    if (stride == 1)
        snprintf(boundary_label, sizeof boundary_label, "step start");
    else
        snprintf(boundary_label, sizeof boundary_label, "step start (1 in %zu)", stride);
    if (s->n)
        legend[nl++] = (struct svg_legend_item){boundary_label, HTML_COLOR_BOUNDARY, 1, 0};
    if (s->nwarm)
        legend[nl++] = (struct svg_legend_item){"warm-up steps", HTML_COLOR_WARMUP, 0, 0};

    struct svg_axes axes = {0, x->end_s / xu.div, x_title, 0, y_min / yu.div, y_max / yu.div, y_title,
                            t->axis != AXIS_CELSIUS};
    struct svg_chart c;
    svg_chart_begin(&c, out, HTML_CHART_WIDTH, HTML_CHART_HEIGHT, t->title, &axes, legend, nl);
    draw_steps(&c, s, xu, stride);
    for (size_t l = 0; l < t->nlines; l++)
        if (t->lines[l].filled)
            svg_chart_area(&c, xs[l], ys[l], npts[l], 1 / yu.div, t->lines[l].color, 0.12);
    for (size_t l = 0; l < t->nlines; l++)
        svg_chart_line(&c, xs[l], ys[l], npts[l], 1 / yu.div, t->lines[l].color, 2, 0);
    svg_chart_end(&c);

    char note[2400];
    int len = snprintf(note, sizeof note, "Each line is the %s of the readings in each point of the series.",
                       t->peaks ? "largest (so that no peak is averaged away)" : "mean");
    if (s->n && stride > 1 && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len, " %zu steps: one start in %zu is marked.", s->n,
                        stride);
    if (t->missing[0] && len > 0 && (size_t)len < sizeof note)
        snprintf(note + len, sizeof note - (size_t)len, " Not shown: %s.", t->missing);
    html_write_note(out, note);
    fputs("</section>\n", out);
done:
    for (size_t l = 0; l < t->nlines; l++) {
        free(xs[l]);
        free(ys[l]);
    }
    return rc;
}

/* One line, in place of a GPU chart and of a GPU line on every other
 * chart, when the sampler read no GPU: why, once. */
static void write_no_gpu(FILE *out, const struct timeline_ctx *x) {
    char why[700];
    if (x->r)
        sps__gpus_why_none(x->r, why, sizeof why);
    else
        snprintf(why, sizeof why, "%s", x->absent_reason);
    fputs("<section id=\"gpu\" class=\"line\"><p><strong>No GPU</strong> was read during the run, so the charts "
          "below have no GPU lines (",
          out);
    svg_write_escaped(out, why);
    fputs(").</p></section>\n", out);
}

static void memory_chart(struct timeline *t, const struct timeline_ctx *x) {
    *t = (struct timeline){"memory", "Memory over time",
                           "Memory of the watched process tree as its PSS (pages its processes share count once; "
                           "read as often as that read's cost allows) and as its resident memory summed over its "
                           "processes (each shared page once per process), memory in use on the whole machine, "
                           "device memory in use on each GPU, and, when the tree has several processes, each "
                           "one's own resident memory.",
                           "memory", AXIS_BYTES};
    add_host(t, x, "workload_pss_bytes", "workload PSS", html_palette(0), 1);
    add_host(t, x, "workload_rss_bytes", "workload RSS summed over processes", html_palette(6), 0);
    add_host(t, x, "system_memory_used_bytes", "system memory used", html_palette(1), 0);
    add_gpus(t, x, SPS_M_GPU_MEMORY_USED_BYTES, "memory used", 2);
    add_processes(t, x, 3);
}

static void cpu_chart(struct timeline *t, const struct timeline_ctx *x) {
    *t = (struct timeline){"cpu", "CPU utilisation over time",
                           "CPU time of the watched process tree in percent of one core (200% is two busy "
                           "cores), the time its threads were ready to run but waited for a CPU (run delay, "
                           "also in percent of one core), the busy time of the whole machine in percent of "
                           "all its cores, and CPU pressure: the share of time some task waited for a CPU.",
                           "CPU utilisation", AXIS_PERCENT};
    add_host(t, x, "workload_cpu_percent", "workload CPU (% of one core)", html_palette(0), 1);
    add_host(t, x, "workload_run_delay_percent", "workload waiting for a CPU (% of one core)", html_palette(3), 0);
    add_host(t, x, "system_cpu_percent", "system CPU (% of all cores)", html_palette(1), 0);
    add_host(t, x, "cpu_pressure_some_percent", "CPU pressure (some task waiting)", html_palette(5), 0);
    add_host(t, x, "system_iowait_percent", "system I/O wait (% of all cores)", html_palette(4), 0);
}

static void gpu_chart(struct timeline *t, const struct timeline_ctx *x) {
    *t = (struct timeline){"gpu", "GPU utilisation over time",
                           "The share of time a kernel was running on each GPU, over the driver's sample period.",
                           "GPU utilisation", AXIS_PERCENT};
    add_gpus(t, x, SPS_M_GPU_UTILIZATION_PERCENT, "utilisation", 0);
}

static void temperature_chart(struct timeline *t, const struct timeline_ctx *x) {
    *t = (struct timeline){"temperature", "Temperatures over time",
                           "The hottest CPU sensor, every other sensor read, and each GPU's die temperature.",
                           "temperature", AXIS_CELSIUS};
    add_host(t, x, "cpu_temperature_celsius", "CPU (hottest sensor)", html_palette(4), 0);
    for (int i = 0; x->r && i < x->r->nsensors; i++) {
        const struct sps__sensor_series *sn = &x->r->sensor[i];
        if (sn->is_cpu)
            continue; /* CPU sensors are summed up by the line above */
        add_line(t, &sn->celsius, sn->label, html_palette(1 + (size_t)i), 0, "no readings");
    }
    add_gpus(t, x, SPS_M_GPU_TEMPERATURE_CELSIUS, "temperature", 5);
}

static void power_chart(struct timeline *t, const struct timeline_ctx *x) {
    *t = (struct timeline){"power", "Power over time",
                           "Power drawn by the CPU packages and DRAM (RAPL) and by each GPU board.", "power",
                           AXIS_WATTS};
    add_host(t, x, "cpu_package_power_watts", "CPU packages", html_palette(4), 0);
    add_host(t, x, "dram_power_watts", "DRAM", html_palette(2), 0);
    add_gpus(t, x, SPS_M_GPU_POWER_WATTS, "board power", 0);
}

/* ------------------------------------------ MemoryTracker's allocation timeline */

/* At most this many points a process's line keeps (the series halves its
 * resolution beyond, keeping each point's mean and max). */
#define TORCH_MEMORY_POINTS 4096

/* The allocation timelines of a run: per process, the values named
 * SPS_TORCH_TIMELINE_VALUE (stepscope.MemoryTracker's rows, each recorded
 * at its own time), in time order. */
struct torch_memory {
    struct sps__series series[MAX_LINES];
    char label[MAX_LINES][48];
    size_t n;
};

struct timed_value {
    uint64_t t_ns;
    double v;
};

static int by_time(const void *pa, const void *pb) {
    const struct timed_value *a = pa, *b = pb;
    return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

/* Process p's timeline into series (empty when it recorded none). */
static int torch_memory_of(const struct sps_process_data *p, struct sps__series *series) {
    uint32_t id = 0;
    for (uint32_t i = 0; i < p->nnames && !id; i++)
        if (p->names[i].kind == SPS_KIND_VALUE && !strcmp(p->names[i].name, SPS_TORCH_TIMELINE_VALUE))
            id = i + 1;
    size_t n = 0;
    for (uint32_t ti = 0; id && ti < p->nthreads; ti++)
        for (size_t i = 0; i < p->threads[ti].nevents[SPS_RING_VALUES]; i++)
            n += p->threads[ti].events[SPS_RING_VALUES][i].name == id;
    if (!n)
        return 0;
    struct timed_value *tv = malloc(n * sizeof *tv);
    if (!tv)
        return SPS_ENOMEM;
    size_t k = 0;
    for (uint32_t ti = 0; ti < p->nthreads; ti++)
        for (size_t i = 0; i < p->threads[ti].nevents[SPS_RING_VALUES]; i++) {
            const struct sps_event *e = &p->threads[ti].events[SPS_RING_VALUES][i];
            if (e->name != id)
                continue;
            tv[k].t_ns = e->start_ns;
            memcpy(&tv[k].v, &e->a, sizeof tv[k].v);
            k++;
        }
    qsort(tv, n, sizeof *tv, by_time);
    sps__series_init(series, TORCH_MEMORY_POINTS);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        if (isfinite(tv[i].v))
            rc = sps__series_add(series, (int64_t)tv[i].t_ns, tv[i].v) ? SPS_ENOMEM : 0;
    free(tv);
    return rc;
}

static void torch_memory_free(struct torch_memory *m) {
    for (size_t i = 0; i < m->n; i++)
        sps__series_free(&m->series[i]);
    m->n = 0;
}

static int torch_memory_load(const struct sps_report *rep, struct torch_memory *m) {
    m->n = 0;
    for (size_t pi = 0; pi < rep->run.nprocs && m->n < MAX_LINES; pi++) {
        const struct sps_process_data *p = &rep->run.procs[pi];
        struct sps__series *se = &m->series[m->n];
        memset(se, 0, sizeof *se);
        int rc = torch_memory_of(p, se);
        if (rc) {
            sps__series_free(se);
            torch_memory_free(m);
            return rc;
        }
        if (!se->count)
            continue;
        if (p->world_size > 1)
            snprintf(m->label[m->n], sizeof m->label[m->n], "rank %d (pid %d)", p->rank, p->pid);
        else
            snprintf(m->label[m->n], sizeof m->label[m->n], "pid %d", p->pid);
        m->n++;
    }
    return 0;
}

static void torch_memory_chart(struct timeline *t, const struct torch_memory *m) {
    *t = (struct timeline){"torch-memory-timeline", "GPU memory allocated by torch over time",
                           "Bytes torch's caching allocator had allocated on the GPU after each allocation and "
                           "free inside the blocks of stepscope.MemoryTracker (its allocation timeline, from "
                           "torch's allocation history; sampled every interval ms where torch keeps none), one "
                           "line per process. The allocator's reserved memory and the driver's view (device "
                           "memory used, on the memory chart above) are larger.",
                           "allocated", AXIS_BYTES};
    t->peaks = 1; /* the timeline's rows keep every peak (MemoryTracker's thinning): so does its line */
    for (size_t i = 0; i < m->n; i++)
        add_line(t, &m->series[i], m->label[i], html_palette(2 + i), i == 0, NULL);
}

int html_write_timelines(FILE *out, const struct sps_report *rep, const struct html_steps *s) {
    const struct sps_run_info *info = &rep->info;
    struct timeline_ctx x = {info->sampler, info->sampler_absent_reason ? info->sampler_absent_reason
                                                                        : "no sampler ran",
                             0, 0};
    /* report.json's series base: the run's start as the watcher saw it */
    x.base_ns = info->start_mono_ns ? info->start_mono_ns : rep->run.nprocs ? rep->run.start_ns : 0;
    if (!x.base_ns && x.r)
        x.base_ns = (uint64_t)x.r->started_ns;
    x.end_s = timeline_end_s(rep, s, x.base_ns);
    int gpus = x.r && x.r->ngpus > 0;
    if (!gpus)
        write_no_gpu(out, &x);
    struct timeline *t = calloc(1, sizeof *t);
    if (!t)
        return SPS_ENOMEM;
    void (*const charts[])(struct timeline *, const struct timeline_ctx *) = {memory_chart, cpu_chart, gpu_chart,
                                                                              temperature_chart, power_chart};
    struct torch_memory *tm = calloc(1, sizeof *tm);
    int rc = tm ? torch_memory_load(rep, tm) : SPS_ENOMEM;
    for (size_t i = 0; i < sizeof charts / sizeof charts[0] && !rc; i++) {
        if (charts[i] == gpu_chart && !gpus)
            continue;
        charts[i](t, &x);
        rc = write_timeline(out, s, t, &x);
        if (!rc && charts[i] == memory_chart && tm->n) { /* only where a MemoryTracker recorded one */
            torch_memory_chart(t, tm);
            rc = write_timeline(out, s, t, &x);
        }
    }
    if (tm)
        torch_memory_free(tm);
    free(tm);
    free(t);
    return rc;
}
