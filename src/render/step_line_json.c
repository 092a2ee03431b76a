/*
 * step_line_json.c - a step as one JSON line (see step_line_json.h).
 */
#include "render/step_line_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/json_writer.h"
#include "stepscope.h"

struct out {
    char *buf;
    size_t cap, len;
    int full;
};

static void put(void *ctx, const char *bytes, size_t n) {
    struct out *o = ctx;
    if (o->full || n >= o->cap - o->len) {
        o->full = 1;
        return;
    }
    memcpy(o->buf + o->len, bytes, n);
    o->len += n;
}

static void puts_(struct out *o, const char *s) {
    put(o, s, strlen(s));
}

static void key(struct out *o, const char *k) {
    sps__json_escape(k, put, o);
    put(o, ": ", 2);
}

/* A number, or null when it is not finite. */
static void number(struct out *o, double v) {
    char b[40];
    if (!isfinite(v)) {
        puts_(o, "null");
        return;
    }
    put(o, b, (size_t)sps__jw_format_number(b, sizeof b, v));
}

static void seconds(struct out *o, int64_t ns) {
    number(o, (double)ns / 1e9);
}

static void integer(struct out *o, int64_t v) {
    char b[32];
    put(o, b, (size_t)snprintf(b, sizeof b, "%" PRId64, v));
}

static void rank(struct out *o, int r) {
    if (r < 0)
        puts_(o, "null");
    else
        integer(o, r);
}

static const char *name_or_unknown(sps__step_name_fn name_of, void *ctx, uint32_t id) {
    const char *n = name_of ? name_of(ctx, id) : NULL;
    return n && *n ? n : "?";
}

enum named_kind { ZONES, VALUES, COUNTERS };

static void named(struct out *o, const char *k, const struct sps__step_named *a, uint32_t n, enum named_kind kind,
                  sps__step_name_fn name_of, void *ctx) {
    /* zones in the order they first began, whatever order they were
     * gathered in (a ring holds them in end order) */
    uint32_t order[SPS_STEP_LINE_NAMES];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i;
        for (; kind == ZONES && j > 0 && a[order[j - 1]].first > a[i].first; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    key(o, k);
    put(o, "{", 1);
    for (uint32_t k2 = 0; k2 < n; k2++) {
        uint32_t i = order[k2];
        if (k2)
            put(o, ", ", 2);
        key(o, name_or_unknown(name_of, ctx, a[i].name));
        if (kind == ZONES)
            seconds(o, (int64_t)a[i].ns);
        else if (kind == VALUES)
            number(o, a[i].last);
        else
            integer(o, (int64_t)a[i].ns);
    }
    put(o, "}", 1);
}

static void machine(struct out *o, const struct sps__step_machine *m) {
    key(o, "machine");
    if (!m->have) {
        puts_(o, "null");
        return;
    }
    put(o, "{", 1);
    for (int i = 0; i < SPS_STEP_LINE_HOST_METRICS; i++) {
        if (i)
            put(o, ", ", 2);
        key(o, sps_host_metric_info(sps__step_line_host_metric[i])->name);
        number(o, m->host[i]);
    }
    for (int g = 0; g < m->ngpus && g < SPS_STEP_LINE_GPUS; g++) {
        char k[64];
        snprintf(k, sizeof k, ", \"gpu%d_utilization_percent\": ", m->gpu_index[g]);
        puts_(o, k);
        number(o, m->gpu_utilization_percent[g]);
        snprintf(k, sizeof k, ", \"gpu%d_memory_used_bytes\": ", m->gpu_index[g]);
        puts_(o, k);
        number(o, m->gpu_memory_used_bytes[g]);
    }
    put(o, "}", 1);
}

static int finish(struct out *o) {
    put(o, "\n", 1);
    if (o->full || o->len >= o->cap)
        return -1;
    o->buf[o->len] = '\0';
    return (int)o->len;
}

int sps__step_line_json(const struct sps__step_line *l, sps__step_name_fn name_of, void *ctx, char *buf, size_t cap) {
    if (cap == 0)
        return -1;
    struct out o = {buf, cap, 0, 0};
    puts_(&o, "{\"step\": ");
    integer(&o, (int64_t)l->index);
    puts_(&o, ", \"name\": ");
    sps__json_escape(name_or_unknown(name_of, ctx, l->name), put, &o);
    puts_(&o, ", \"pid\": ");
    integer(&o, l->pid);
    puts_(&o, ", \"rank\": ");
    rank(&o, l->rank);
    puts_(&o, ", \"thread\": ");
    integer(&o, l->tid);
    puts_(&o, ", \"start_s\": ");
    seconds(&o, l->start_ns);
    puts_(&o, ", \"end_s\": ");
    seconds(&o, l->end_ns);
    puts_(&o, ", \"duration_s\": ");
    seconds(&o, l->end_ns - l->start_ns);
    put(&o, ", ", 2);
    named(&o, "zones_self_s", l->zone, l->nzones, ZONES, name_of, ctx);
    put(&o, ", ", 2);
    named(&o, "waits_s", l->wait, l->nwaits, ZONES, name_of, ctx);
    puts_(&o, ", \"microsteps\": ");
    integer(&o, (int64_t)l->microsteps);
    put(&o, ", ", 2);
    named(&o, "values", l->value, l->nvalues, VALUES, name_of, ctx);
    put(&o, ", ", 2);
    named(&o, "counters", l->counter, l->ncounters, COUNTERS, name_of, ctx);
    put(&o, ", ", 2);
    machine(&o, &l->machine);
    puts_(&o, l->partial ? ", \"partial\": true" : ", \"partial\": false");
    if (l->names_left_out) {
        puts_(&o, ", \"names_left_out\": ");
        integer(&o, l->names_left_out);
    }
    put(&o, "}", 1);
    return finish(&o);
}

int sps__steps_lost_json(uint64_t count, uint64_t first, int pid, int rank_, int tid, char *buf, size_t cap) {
    if (cap == 0)
        return -1;
    struct out o = {buf, cap, 0, 0};
    puts_(&o, "{\"steps_lost\": ");
    integer(&o, (int64_t)count);
    puts_(&o, ", \"first_step\": ");
    integer(&o, (int64_t)first);
    puts_(&o, ", \"last_step\": ");
    integer(&o, (int64_t)(first + count - 1));
    puts_(&o, ", \"pid\": ");
    integer(&o, pid);
    puts_(&o, ", \"rank\": ");
    rank(&o, rank_);
    puts_(&o, ", \"thread\": ");
    integer(&o, tid);
    put(&o, "}", 1);
    return finish(&o);
}
