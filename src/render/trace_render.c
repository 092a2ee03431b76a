/*
 * trace_render.c - trace.json's text (trace_parts.h): each item's size
 * (a zone's counted, the rest rendered once to measure them), then the
 * chosen ones written, each checked against its size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "render/json_writer.h"
#include "render/trace_parts.h"
#include "stepscope.h"

/* ------------------------------------------------------------ text */

static int tb_reserve(struct tbuf *b, size_t more) {
    if (b->failed)
        return -1;
    if (b->len + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static void tb_put(struct tbuf *b, const char *s, size_t n) {
    if (tb_reserve(b, n) != 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void tb_puts(struct tbuf *b, const char *s) {
    tb_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void tb_printf(struct tbuf *b, const char *fmt, ...) {
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        tb_put(b, small, (size_t)n);
        return;
    }
    if (tb_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void tbuf_sink(void *ctx, const char *bytes, size_t n) {
    tb_put(ctx, bytes, n);
}

/* A JSON string, escaped as in report.json. */
static void tb_string(struct tbuf *b, const char *s) {
    sps__json_escape(s, tbuf_sink, b);
}

/* v / 10^digits written exactly with `digits` decimals (v >= 0). */
static void tb_fixed(struct tbuf *b, int64_t v, int digits) {
    int64_t scale = 1;
    for (int i = 0; i < digits; i++)
        scale *= 10;
    tb_printf(b, "%" PRId64 ".%0*" PRId64, v / scale, digits, v % scale);
}

/* ------------------------------------------------------------ rendering */

static void render_meta(struct tbuf *b, const struct meta *m) {
    static const char *const names[] = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"};
    tb_printf(b, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{", names[m->what], m->pid, m->tid);
    if (m->what == META_PROCESS_NAME || m->what == META_THREAD_NAME) {
        tb_puts(b, "\"name\":");
        tb_string(b, m->label);
    } else {
        tb_printf(b, "\"sort_index\":%" PRId64, m->sort);
    }
    tb_puts(b, "}}");
}

/* Steps are all named "step" (so viewers aggregate them as one kind of
 * slice); which step it is, and its stream's name, are in args. */
static void render_x(struct tbuf *b, const struct trace *t, const struct x_item *x) {
    static const char *const cats[] = {"zone", "microstep", "step", "torch_op", "wait", "gpu"};
    const struct trace_step *s = x->kind == X_STEP ? &t->steps[x->step] : NULL;
    tb_printf(b, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cats[x->kind]);
    tb_string(b, s ? "step" : x->name);
    tb_printf(b, ",\"pid\":%d,\"tid\":%d,\"ts\":", x->pid, x->tid);
    tb_fixed(b, x->start, 3);
    tb_puts(b, ",\"dur\":");
    tb_fixed(b, x->end - x->start, 3);
    if (s) {
        tb_printf(b, ",\"args\":{\"index\":%" PRIu64 ",\"duration_ms\":", s->index);
        tb_fixed(b, s->end - s->start, 6);
        tb_printf(b, ",\"warmup\":%s,\"microsteps\":%" PRIu32, s->warmup ? "true" : "false", s->microsteps);
        if (s->name) {
            tb_puts(b, ",\"step_name\":");
            tb_string(b, s->name);
        }
        tb_puts(b, "}");
    }
    tb_puts(b, "}");
}

static void render_point(struct tbuf *b, const struct trace *t, const struct c_point *pt) {
    static const char *const cats[] = {"value", "counter", "machine"};
    const struct c_track *tr = &t->tracks[pt->track];
    tb_printf(b, "{\"ph\":\"C\",\"cat\":\"%s\",\"name\":", cats[tr->category]);
    tb_string(b, tr->name);
    tb_printf(b, ",\"pid\":%d,\"tid\":%d,\"ts\":", tr->pid, tr->tid);
    tb_fixed(b, pt->t, 3);
    tb_puts(b, ",\"args\":{");
    tb_string(b, tr->key);
    char num[32];
    sps__jw_format_number(num, sizeof num, pt->v);
    tb_printf(b, ":%s}}", num);
}

static void render_other_data(struct tbuf *b, const struct trace *t, uint64_t max_bytes, const struct trace_counts *n) {
    const struct sps_report *rep = t->rep;
    tb_puts(b, "\"otherData\":{\"format\":\"" TRACE_FORMAT "\",\"generator\":\"stepscope " SPS_VERSION_STRING "\"");
    tb_puts(b, ",\"time_origin\":\"the run's start (start_s 0 in report.json); ts and dur in microseconds\"");
    char started[32];
    sps__jw_format_number(started, sizeof started, (double)rep->info.start_realtime_ns / 1e9);
    tb_printf(b, ",\"started_unix_s\":%s", started);
    tb_printf(b, ",\"budget_bytes\":%" PRIu64 ",\"budget_policy\":\"" TRACE_POLICY "\"", max_bytes);
    tb_printf(b, ",\"zones_available\":%s,\"zones_note\":", rep->have_events ? "true" : "false");
    tb_string(b, rep->records_note);
    static const char *const keys[] = {
        "zone_events_recorded", "zone_events_dropped_by_rings", "zone_events_in_records", "zone_events_written",
        "zone_events_left_out_for_budget", "zone_events_left_out_overlapping", "steps_with_zones_cut_for_budget",
        "steps_with_zones_left_out_for_budget", "steps_in_input", "steps_written", "steps_left_out_for_budget",
        "steps_left_out_overlapping", "counter_points_in_input", "counter_points_written",
        "counter_points_left_out_for_budget", "counter_decimation", "values_not_finite_left_out"};
    const uint64_t vals[] = {n->zones_recorded,  n->zones_dropped_by_rings, n->zones_in_input,
                             n->zones_written,   n->zones_budget,           n->zones_overlap,
                             n->buckets_partial, n->buckets_left_out,       n->steps_in_input,
                             n->steps_written,   n->steps_budget,           n->steps_overlap,
                             n->points_in_input, n->points_written,     n->points_budget,
                             n->decimation,      n->values_not_finite};
    _Static_assert(sizeof keys / sizeof keys[0] == sizeof vals / sizeof vals[0], "a value per key");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        tb_printf(b, ",\"%s\":%" PRIu64, keys[i], vals[i]);
    tb_puts(b, "}");
}

static const char TRACE_HEAD[] = "{\"traceEvents\":[";

static void render_tail(struct tbuf *b, const struct trace *t, uint64_t max_bytes, const struct trace_counts *n) {
    tb_puts(b, "\n],\"displayTimeUnit\":\"ms\",");
    render_other_data(b, t, max_bytes, n);
    tb_puts(b, "}\n");
}

/* Each event's bytes: ",\n" before it, then the event. */
static uint32_t measured(struct trace *t) {
    if (t->scratch.failed)
        t->oom = 1;
    size_t len = t->scratch.len + 2;
    t->scratch.len = 0;
    return len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
}

/* ------------------------------------------------------------ sizes */

/* Characters of v written with %d / PRId64 (v >= 0). */
static size_t digits_of(uint64_t v) {
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static size_t int_width(int64_t v) {
    return v < 0 ? 1 + digits_of(0u - (uint64_t)v) : digits_of((uint64_t)v);
}

static void count_sink(void *ctx, const char *bytes, size_t n) {
    (void)bytes;
    *(size_t *)ctx += n;
}

/* The escaped length of a zone's name, remembered by its address (a
 * run has few names and millions of zones). */
#define NAME_CACHE 64
struct name_widths {
    const char *name[NAME_CACHE];
    size_t width[NAME_CACHE];
};

static size_t name_width(struct name_widths *c, const char *name) {
    size_t slot = ((uintptr_t)name >> 3) % NAME_CACHE;
    if (c->name[slot] != name || !name) {
        size_t n = 0;
        sps__json_escape(name, count_sink, &n);
        c->name[slot] = name;
        c->width[slot] = n;
    }
    return c->width[slot];
}

/* A zone's or micro-step's bytes as render_x writes them, separator
 * included, counted instead of formatted: measuring every zone of a
 * big run by rendering it took longer than everything else in the
 * trace.  0 where the count does not apply (a step, a negative time),
 * which the caller then renders.  sps__trace_write checks every kept
 * item against its size. */
static size_t x_counted(struct name_widths *c, const struct x_item *x) {
    static const size_t cats[] = {sizeof "zone" - 1, sizeof "microstep" - 1, 0, sizeof "torch_op" - 1,
                                  sizeof "wait" - 1, sizeof "gpu" - 1};
    if (x->kind == X_STEP || x->start < 0 || x->end < x->start)
        return 0;
    return sizeof "{\"ph\":\"X\",\"cat\":\"\",\"name\":" - 1 + cats[x->kind] + name_width(c, x->name) +
           sizeof ",\"pid\":,\"tid\":,\"ts\":" - 1 + int_width(x->pid) + int_width(x->tid) +
           digits_of((uint64_t)x->start / 1000) + 4 + sizeof ",\"dur\":" - 1 +
           digits_of((uint64_t)(x->end - x->start) / 1000) + 4 + sizeof "}" - 1 + 2;
}

void sps__trace_measure(struct trace *t) {
    for (size_t i = 0; i < t->nmeta; i++) {
        render_meta(&t->scratch, &t->meta[i]);
        t->meta[i].size = measured(t);
    }
    struct name_widths widths;
    memset(&widths, 0, sizeof widths);
    for (size_t i = 0; i < t->nx; i++) {
        size_t n = x_counted(&widths, &t->x[i]);
        if (n) {
            t->x[i].size = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
            continue;
        }
        render_x(&t->scratch, t, &t->x[i]);
        t->x[i].size = measured(t);
    }
    for (size_t i = 0; i < t->npoints; i++) {
        render_point(&t->scratch, t, &t->points[i]);
        t->points[i].size = measured(t);
    }
}

/* ------------------------------------------------------------ output */

struct sink {
    FILE *f;
    uint64_t written;
    size_t events;
    int failed;
};

/* Events are separated by ",\n" (the first by "\n"): measured() counted
 * two bytes for each. */
static void emit(struct sink *s, struct tbuf *b, int is_event) {
    if (is_event) {
        const char *sep = s->events++ ? ",\n" : "\n";
        size_t n = strlen(sep);
        if (fwrite(sep, 1, n, s->f) != n)
            s->failed = 1;
        s->written += n;
    }
    if (b->len && fwrite(b->p, 1, b->len, s->f) != b->len)
        s->failed = 1;
    s->written += b->len;
    b->len = 0;
}

int sps__trace_write(struct trace *t, FILE *out, uint64_t max_bytes, char *err, size_t errlen) {
    struct sink s = {.f = out};
    struct tbuf *b = &t->scratch;
    int mismatched = 0; /* an event whose bytes are not the size the budget counted */
    tb_puts(b, TRACE_HEAD);
    emit(&s, b, 0);
    for (size_t i = 0; i < t->nmeta; i++) {
        render_meta(b, &t->meta[i]);
        emit(&s, b, 1);
    }
    for (size_t i = 0; i < t->nx; i++) {
        if (t->x[i].state != ITEM_KEPT)
            continue;
        render_x(b, t, &t->x[i]);
        if (b->len + 2 != t->x[i].size)
            mismatched = 1;
        emit(&s, b, 1);
        if (t->x[i].kind == X_STEP)
            t->n.steps_written++;
        else
            t->n.zones_written++;
    }
    for (size_t i = 0; i < t->npoints; i++) {
        if (t->points[i].state != ITEM_KEPT)
            continue;
        render_point(b, t, &t->points[i]);
        emit(&s, b, 1);
        t->n.points_written++;
    }
    render_tail(b, t, max_bytes, &t->n);
    emit(&s, b, 0);
    if (b->failed)
        return SPS_ENOMEM;
    if (fflush(out) != 0 || ferror(out))
        s.failed = 1;
    if (s.failed) {
        snprintf(err, errlen, "trace.json: write failed: %s", strerror(errno ? errno : EIO));
        return SPS_EIO;
    }
    /* the sizes were measured or counted from the same rendering: this
     * cannot fail unless they disagree, and then the caller must not
     * keep the file */
    if (mismatched && !b->failed) {
        snprintf(err, errlen, "trace.json: an event's size differs from the size its budget counted (a bug)");
        return SPS_EIO;
    }
    if (s.written > max_bytes) {
        snprintf(err, errlen, "trace.json: %" PRIu64 " bytes written over a budget of %" PRIu64 " (a bug)", s.written,
                 max_bytes);
        return SPS_EIO;
    }
    return 0;
}


uint64_t sps__trace_fixed_bytes(struct trace *t, uint64_t max_bytes) {
    struct trace_counts widest;
    memset(&widest, 0xff, sizeof widest); /* every count at its widest */
    render_tail(&t->scratch, t, max_bytes, &widest);
    uint64_t fixed = sizeof TRACE_HEAD - 1 + t->scratch.len;
    t->scratch.len = 0;
    if (t->scratch.failed) {
        t->oom = 1;
        return 0;
    }
    return fixed;
}
