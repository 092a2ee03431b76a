/*
 * status.c - the live view's lines (see status.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render.h"
#include "live/status.h"

/* One line being filled with whole items. */
struct line {
    char *buf;
    int width, len, full;
};

static void add(struct line *l, const char *item) {
    if (l->full || !item[0])
        return;
    int n = (int)strlen(item), sep = l->len ? 2 : 0;
    if (l->len + sep + n > l->width) {
        l->full = 1; /* later items would read out of order */
        return;
    }
    if (sep) {
        memcpy(l->buf + l->len, "  ", 2);
        l->len += 2;
    }
    memcpy(l->buf + l->len, item, (size_t)n);
    l->len += n;
    l->buf[l->len] = '\0';
}

static void fmt_elapsed(char *buf, size_t len, double s) {
    long t = s > 0 ? (long)s : 0;
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void progress(const struct sps__live_frame *fr, struct line *l) {
    char item[96], v[48];
    fmt_elapsed(v, sizeof v, fr->elapsed_s);
    snprintf(item, sizeof item, "stepscope %s", v);
    add(l, item);
    const struct sps__live_steps *st = fr->steps;
    if (!st || !st->have_step) {
        add(l, "no step recorded yet");
        return;
    }
    snprintf(item, sizeof item, "%s %llu", st->step_name, (unsigned long long)st->count);
    add(l, item);
    if (isfinite(fr->steps_per_s)) {
        double r = fr->steps_per_s;
        snprintf(item, sizeof item, r >= 100 ? "%.0f steps/s" : r >= 10 ? "%.1f steps/s" : "%.2f steps/s", r);
        add(l, item);
    }
    if (st->last_ns) {
        sps__fmt_seconds((double)st->last_ns / 1e9, v, sizeof v);
        snprintf(item, sizeof item, "last %s", v);
        add(l, item);
    }
    if (st->median_ns) {
        sps__fmt_seconds((double)st->median_ns / 1e9, v, sizeof v);
        snprintf(item, sizeof item, "median %s", v);
        add(l, item);
    }
    if (st->nranks >= 2 && st->slowest_rank >= 0) {
        /* the rank the others wait for: its compute a step over theirs */
        snprintf(item, sizeof item, "slowest rank %d %+.1f ms", st->slowest_rank, st->slowest_excess_ms);
        add(l, item);
    }
}

static void phases(const struct sps__live_frame *fr, struct line *l) {
    const struct sps__live_steps *st = fr->steps;
    if (!st || !st->have_step || !st->phase_total_ns || !st->nphases)
        return;
    for (int i = 0; i < st->nphases; i++) {
        char item[96];
        double pct = 100.0 * (double)st->phase[i].self_ns / (double)st->phase_total_ns;
        char share[16];
        if (pct > 0 && pct < 0.5)
            snprintf(share, sizeof share, "<1%%"); /* there, but "0%" would say it is not */
        else
            snprintf(share, sizeof share, "%.0f%%", pct);
        /* long zone names are cut so one of them cannot hide the rest */
        snprintf(item, sizeof item, "%s%.20s %s", i ? "" : "phases: ", st->phase[i].name, share);
        add(l, item);
    }
}

/* used/total in the unit that suits total: "31.2/80.0 GiB". */
static void fmt_used_of(char *buf, size_t len, double used, double total) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double div = 1;
    while (total / div >= 1024 && u < 4) {
        div *= 1024;
        u++;
    }
    snprintf(buf, len, "%.1f/%.1f %s", used / div, total / div, units[u]);
}

static void machine(const struct sps__live_frame *fr, struct line *l) {
    const struct sps__sample *s = fr->sample;
    if (!s)
        return;
    char item[96], v[48];
    double cpu = s->host[SPS_M_WORKLOAD_CPU_PERCENT], rss = s->host[SPS_M_WORKLOAD_RSS_BYTES];
    if (isfinite(cpu)) {
        snprintf(item, sizeof item, "CPU %.0f%%", cpu);
        add(l, item);
    }
    if (isfinite(rss)) {
        snprintf(item, sizeof item, "RSS %s", sps__fmt_bytes(rss, v, sizeof v));
        add(l, item);
    }
    int n = s->ngpus;
    if (n <= 0)
        return;
    /* one GPU in full; several as their mean utilisation, summed memory
     * and hottest temperature */
    double util = 0, used = 0, total = 0, temp = -INFINITY;
    int nutil = 0, nmem = 0, ntotal = 0;
    for (int g = 0; g < n; g++) {
        const double *m = s->gpu[g].v;
        if (isfinite(m[SPS_M_GPU_UTILIZATION_PERCENT]))
            util += m[SPS_M_GPU_UTILIZATION_PERCENT], nutil++;
        if (isfinite(m[SPS_M_GPU_MEMORY_USED_BYTES]))
            used += m[SPS_M_GPU_MEMORY_USED_BYTES], nmem++;
        if (isfinite(m[SPS_M_GPU_MEMORY_TOTAL_BYTES]))
            total += m[SPS_M_GPU_MEMORY_TOTAL_BYTES], ntotal++;
        if (isfinite(m[SPS_M_GPU_TEMPERATURE_CELSIUS]) && m[SPS_M_GPU_TEMPERATURE_CELSIUS] > temp)
            temp = m[SPS_M_GPU_TEMPERATURE_CELSIUS];
    }
    char who[32];
    if (n == 1)
        snprintf(who, sizeof who, "GPU%d", s->gpu[0].index);
    else
        snprintf(who, sizeof who, "%d GPUs", n);
    if (nutil == n)
        snprintf(item, sizeof item, "%s %.0f%%", who, util / n);
    else
        snprintf(item, sizeof item, "%s", who);
    add(l, item);
    if (nmem == n && ntotal == n && total > 0) {
        fmt_used_of(v, sizeof v, used, total);
        snprintf(item, sizeof item, "mem %s", v);
        add(l, item);
    } else if (nmem == n) {
        snprintf(item, sizeof item, "mem %s", sps__fmt_bytes(used, v, sizeof v));
        add(l, item);
    }
    if (isfinite(temp)) {
        snprintf(item, sizeof item, n == 1 ? "%.0fC" : "max %.0fC", temp);
        add(l, item);
    }
}

void sps__live_format(const struct sps__live_frame *fr, int width, int nlines, char lines[][SPS_LIVE_LINE_MAX]) {
    if (width < 20)
        width = 20;
    if (width > SPS_LIVE_LINE_MAX - 1)
        width = SPS_LIVE_LINE_MAX - 1;
    if (nlines < 1)
        nlines = 1;
    if (nlines > 3)
        nlines = 3;
    struct line l[3];
    for (int i = 0; i < nlines; i++) {
        lines[i][0] = '\0';
        l[i] = (struct line){.buf = lines[i], .width = width};
    }
    progress(fr, &l[0]);
    if (nlines == 3) {
        phases(fr, &l[1]);
        machine(fr, &l[2]);
    } else if (nlines == 2) {
        machine(fr, &l[0]);
        phases(fr, &l[1]);
    } else {
        machine(fr, &l[0]);
        phases(fr, &l[0]);
    }
}
