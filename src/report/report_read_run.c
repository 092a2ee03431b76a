/*
 * report_read_run.c - report.json's run half into rep->run (see
 * report_read_run.h): the typed reads of single values, the names, the
 * zones, values, counters and step rows, each read as it streams past
 * into the model's own types (the processes: report_read_procs.c); times
 * relative to the run's start become monotonic ns again through
 * started_mono_ns, which report.json writes before them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_read_run.h"
#include "stepscope.h"

/* ------------------------------------------------------------ values */

uint64_t sps__rr_mono(const struct sps_rr *rr, double s) {
    return rr->rep->run.start_ns + (uint64_t)(isfinite(s) && fabs(s) < 9e9 ? llround(s * 1e9) : 0);
}

#define OBJECT_BEGIN SPS_RR_OBJECT
#define ARRAY_BEGIN SPS_RR_ARRAY
/* The key just read is lit: its length first, so that most of the keys
 * a row is matched against are told apart without a call (a million rows
 * of a dozen keys each) */
#define KEY(lit) (s->str_len == sizeof("" lit) - 1 && !memcmp(s->str, lit, sizeof("" lit) - 1)) /* literals only */

/* ------------------------------------------------------------- names */

static uint64_t name_hash(const char *name, uint32_t kind) {
    uint64_t h = 1469598103934665603ULL ^ kind;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static int index_grow(struct sps_rr *rr) {
    size_t n = rr->nslots ? rr->nslots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return SPS_ENOMEM;
    const struct sps_run *run = &rr->rep->run;
    for (size_t i = 0; i < run->nnames; i++) {
        size_t at = name_hash(run->names[i].name, run->names[i].kind) & (n - 1);
        while (slots[at])
            at = (at + 1) & (n - 1);
        slots[at] = (uint32_t)i + 1;
    }
    free(rr->slots);
    rr->slots = slots;
    rr->nslots = n;
    return 0;
}

enum { GROUP_ZONES, GROUP_VALUES, GROUP_COUNTERS, GROUP_ROWS_ONLY };

/*
 * The index in run.names of (name, kind), added when new.  group is where
 * report.json lists it (GROUP_ROWS_ONLY: a row's cell, which places
 * nothing); a listing fixes the name's place in the final order.
 * Returns the index, or -1 with the scanner failed.
 */
static long name_at(struct sps_rr *rr, const char *name, uint32_t kind, int group) {
    struct sps_jscan *s = rr->s;
    struct sps_run *run = &rr->rep->run;
    if (strlen(name) >= SPS_REC_NAME_LEN)
        return sps__jscan_fail(s, "name \"%.40s...\" is longer than %u bytes", name, SPS_REC_NAME_LEN - 1), -1;
    if ((run->nnames + 1) * 2 > rr->nslots && index_grow(rr)) {
        s->nomem = 1;
        return -1;
    }
    size_t at = name_hash(name, kind) & (rr->nslots - 1);
    for (; rr->slots[at]; at = (at + 1) & (rr->nslots - 1)) {
        size_t i = rr->slots[at] - 1;
        if (run->names[i].kind == kind && !strcmp(run->names[i].name, name)) {
            if (group != GROUP_ROWS_ONLY)
                rr->place[i] = (uint64_t)group << 40 | rr->group_count[group]++;
            return (long)i;
        }
    }
    if (run->nnames == rr->names_cap) {
        size_t cap = rr->names_cap ? 2 * rr->names_cap : 32;
        struct sps_name_summary *names = realloc(run->names, cap * sizeof *names);
        if (names)
            run->names = names;
        uint64_t *place = names ? realloc(rr->place, cap * sizeof *place) : NULL;
        if (!place) {
            s->nomem = 1;
            return -1;
        }
        rr->place = place;
        rr->names_cap = cap;
    }
    size_t i = run->nnames++;
    struct sps_name_summary *n = &run->names[i];
    memset(n, 0, sizeof *n);
    memcpy(n->name, name, strlen(name) + 1);
    n->kind = n->agg.kind = kind;
    rr->place[i] = (uint64_t)group << 40 | rr->group_count[group]++;
    rr->slots[at] = (uint32_t)i + 1;
    return (long)i;
}

static int kind_of(struct sps_jscan *s, const char *text, uint32_t *kind) {
    static const struct {
        const char *name;
        uint32_t kind;
    } kinds[] = {{"zone", SPS_KIND_ZONE},   {"step", SPS_KIND_STEP},      {"microstep", SPS_KIND_MICROSTEP},
                 {"value", SPS_KIND_VALUE}, {"counter", SPS_KIND_COUNTER},  {"wait", SPS_KIND_WAIT}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(text, kinds[i].name)) {
            *kind = kinds[i].kind;
            return 0;
        }
    return sps__jscan_fail(s, "kind \"%.40s\" is not zone, wait, step, microstep, value or counter", text);
}

/* ------------------------------------------------- zones, values, counters */

int sps__rr_kind(struct sps_jscan *s, const char *what, uint32_t *kind) {
    char text[16];
    int rc = sps__jread_text(s, what, text, sizeof text);
    return rc ? rc : kind_of(s, text, kind);
}

/* A statistic: null (a zone that never completed) reads as 0, as the
 * model holds it. */
static int read_stat(struct sps_jscan *s, const char *what, double *out) {
    int rc = sps__jread_number(s, what, out);
    if (!rc && isnan(*out))
        *out = 0;
    return rc;
}

static uint64_t ns_of(double s) {
    return isfinite(s) && s > 0 && s < 9e9 ? (uint64_t)llround(s * 1e9) : 0;
}

/* One element of zones: a timed name's statistics. */
static int read_zone(struct sps_rr *rr) {
    struct sps_jscan *s = rr->s;
    char name[SPS_REC_NAME_LEN + 1] = "";
    uint32_t kind = SPS_KIND_ZONE;
    struct sps_stats st = {0};
    double *const fields[] = {&st.total_s, &st.self_s, &st.mean_s, &st.std_s, &st.min_s,
                              &st.max_s,   &st.p50_s,  &st.p90_s,  &st.p99_s};
    static const char *const keys[] = {"total_s", "self_s", "mean_s", "std_s", "min_s",
                                       "max_s",   "p50_s",  "p90_s",  "p99_s"};
    int rc = OBJECT_BEGIN(s, "zones[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        size_t k = 0;
        while (k < sizeof keys / sizeof keys[0] && strcmp(s->str, keys[k]) != 0)
            k++;
        if (k < sizeof keys / sizeof keys[0])
            rc = read_stat(s, keys[k], fields[k]);
        else if (KEY("name"))
            rc = sps__jread_text(s, "zones[].name", name, sizeof name);
        else if (KEY("kind"))
            rc = sps__rr_kind(s, "zones[].kind", &kind);
        else if (KEY("count"))
            rc = sps__jread_u64(s, "zones[].count", &st.count);
        else
            rc = sps__jscan_skip(s);
    }
    if (rc)
        return rc;
    if (!sps_kind_is_timed(kind))
        return sps__jscan_fail(s, "zones[]: \"%s\" is a %s, not a zone, wait, step or microstep", name,
                               kind == SPS_KIND_VALUE ? "value" : "counter");
    long i = name_at(rr, name, kind, GROUP_ZONES);
    if (i < 0)
        return s->nomem ? SPS_ENOMEM : SPS_EFORMAT;
    struct sps_name_summary *n = &rr->rep->run.names[i];
    n->stats = st;
    /* the aggregate as far as the statistics give it (no histogram) */
    n->agg.count = st.count;
    n->agg.total_ns = ns_of(st.total_s);
    n->agg.self_ns = ns_of(st.self_s);
    n->agg.min_ns = ns_of(st.min_s);
    n->agg.max_ns = ns_of(st.max_s);
    return 0;
}

/* One element of values. */
static int read_value(struct sps_rr *rr) {
    struct sps_jscan *s = rr->s;
    char name[SPS_REC_NAME_LEN + 1] = "";
    uint64_t count = 0;
    double mean = NAN, std = NAN, min = NAN, max = NAN, first_v = NAN, last = NAN;
    int rc = OBJECT_BEGIN(s, "values[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("name"))
            rc = sps__jread_text(s, "values[].name", name, sizeof name);
        else if (KEY("count"))
            rc = sps__jread_u64(s, "values[].count", &count);
        else if (KEY("mean"))
            rc = sps__jread_number(s, "values[].mean", &mean);
        else if (KEY("std"))
            rc = sps__jread_number(s, "values[].std", &std);
        else if (KEY("min"))
            rc = sps__jread_number(s, "values[].min", &min);
        else if (KEY("max"))
            rc = sps__jread_number(s, "values[].max", &max);
        else if (KEY("first"))
            rc = sps__jread_number(s, "values[].first", &first_v);
        else if (KEY("last"))
            rc = sps__jread_number(s, "values[].last", &last);
        else
            rc = sps__jscan_skip(s);
    }
    if (rc)
        return rc;
    long i = name_at(rr, name, SPS_KIND_VALUE, GROUP_VALUES);
    if (i < 0)
        return s->nomem ? SPS_ENOMEM : SPS_EFORMAT;
    struct sps_name_summary *n = &rr->rep->run.names[i];
    n->stats.count = n->agg.count = count;
    n->stats.mean_s = mean;
    n->stats.std_s = std;
    n->agg.min = min;
    n->agg.max = max;
    n->agg.first = first_v;
    n->agg.last = last;
    /* the sums as far as mean and std give them; the report's own mean
     * and std stay in stats */
    n->agg.sum = count ? mean * (double)count : 0;
    n->agg.sumsq = count ? (std * std + mean * mean) * (double)count : 0;
    return 0;
}

/* One element of counters. */
static int read_counter(struct sps_rr *rr) {
    struct sps_jscan *s = rr->s;
    char name[SPS_REC_NAME_LEN + 1] = "";
    uint64_t total = 0, increments = 0;
    int rc = OBJECT_BEGIN(s, "counters[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("name"))
            rc = sps__jread_text(s, "counters[].name", name, sizeof name);
        else if (KEY("total"))
            rc = sps__jread_u64(s, "counters[].total", &total);
        else if (KEY("increments"))
            rc = sps__jread_u64(s, "counters[].increments", &increments);
        else
            rc = sps__jscan_skip(s);
    }
    if (rc)
        return rc;
    long i = name_at(rr, name, SPS_KIND_COUNTER, GROUP_COUNTERS);
    if (i < 0)
        return s->nomem ? SPS_ENOMEM : SPS_EFORMAT;
    rr->rep->run.names[i].agg.total_ns = total; /* a counter's sum (stats.h) */
    rr->rep->run.names[i].agg.count = increments;
    return 0;
}

/* An array of objects, each read by one. */
static int read_array(struct sps_rr *rr, const char *what, int (*one)(struct sps_rr *)) {
    struct sps_jscan *s = rr->s;
    int rc = ARRAY_BEGIN(s, what), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_element(s, first, &more)) && more; first = 0)
        rc = one(rr);
    return rc;
}

/* -------------------------------------------------------------- steps */

/* A row's cells as read, before its by_name is allocated. */
struct cells {
    size_t n, cap;
    long *name;
    double *v;
};

static int cells_add(struct cells *c, long name, double v) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        long *n = realloc(c->name, cap * sizeof *n);
        if (n)
            c->name = n;
        double *vv = n ? realloc(c->v, cap * sizeof *vv) : NULL;
        if (!vv)
            return SPS_ENOMEM;
        c->v = vv;
        c->cap = cap;
    }
    c->name[c->n] = name;
    c->v[c->n++] = v;
    return 0;
}

/* zones_self_s, values or counters of a row: name -> number. */
static int read_cells(struct sps_rr *rr, struct cells *c, uint32_t kind, const char *what) {
    struct sps_jscan *s = rr->s;
    int rc = OBJECT_BEGIN(s, what), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        long i = name_at(rr, s->str, kind, GROUP_ROWS_ONLY);
        if (i < 0)
            return s->nomem ? SPS_ENOMEM : SPS_EFORMAT;
        double v;
        if (!(rc = sps__jread_number(s, what, &v)) && !isnan(v))
            rc = cells_add(c, i, v);
    }
    return rc;
}

/* The row's process until the processes are read: its pid and rank. */
static size_t pid_rank_key(int pid, int rank) {
    return (size_t)((uint64_t)(uint32_t)pid << 32 | (uint32_t)(rank + 1));
}

static int row_pid(size_t key) {
    return (int)(uint32_t)((uint64_t)key >> 32);
}

/* A row's duration: a number of seconds, never negative (the writer
 * writes end - start), and never null (a step always has its length). */
static int read_duration(struct sps_jscan *s, double *out) {
    int c = sps__jscan_peek(s);
    if (c != '-' && (c < '0' || c > '9'))
        return sps__jscan_fail(s, "steps.rows[].duration_s: a number of seconds expected");
    int rc = sps__jscan_number(s, out);
    if (!rc && !(*out >= 0))
        return sps__jscan_fail(s, "steps.rows[].duration_s: %g is negative", *out);
    return rc;
}

static int read_row(struct sps_rr *rr, struct sps_step_row *row, struct cells *c) {
    struct sps_jscan *s = rr->s;
    char name[SPS_REC_NAME_LEN + 1] = "";
    int pid = 0, rank = -1, has_name = 0;
    double start_s = 0, duration_s = 0;
    memset(row, 0, sizeof *row);
    row->name = -1;
    c->n = 0;
    int rc = OBJECT_BEGIN(s, "steps.rows[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("index")) {
            rc = sps__jread_u64(s, "steps.rows[].index", &row->index);
        } else if (KEY("name")) {
            rc = sps__jread_text(s, "steps.rows[].name", name, sizeof name);
            has_name = 1;
        } else if (KEY("pid")) {
            rc = sps__jread_i32(s, "steps.rows[].pid", 0, &pid);
        } else if (KEY("tid")) {
            rc = sps__jread_i32(s, "steps.rows[].tid", 0, &row->tid);
        } else if (KEY("rank")) {
            rc = sps__jread_i32(s, "steps.rows[].rank", 0, &rank);
        } else if (KEY("start_s")) {
            rc = sps__jread_number(s, "steps.rows[].start_s", &start_s);
        } else if (KEY("duration_s")) {
            rc = read_duration(s, &duration_s);
        } else if (KEY("warmup")) {
            rc = sps__jread_bool(s, "steps.rows[].warmup", &row->warmup);
        } else if (KEY("microsteps")) {
            uint64_t m;
            if (!(rc = sps__jread_u64(s, "steps.rows[].microsteps", &m)))
                row->microsteps = (uint32_t)m;
        } else if (KEY("zones_self_s")) {
            rc = read_cells(rr, c, SPS_KIND_ZONE, "steps.rows[].zones_self_s");
        } else if (KEY("waits_s")) {
            rc = read_cells(rr, c, SPS_KIND_WAIT, "steps.rows[].waits_s");
        } else if (KEY("values")) {
            rc = read_cells(rr, c, SPS_KIND_VALUE, "steps.rows[].values");
        } else if (KEY("counters")) {
            rc = read_cells(rr, c, SPS_KIND_COUNTER, "steps.rows[].counters");
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    if (rc)
        return rc;
    if (has_name) {
        long i = name_at(rr, name, SPS_KIND_STEP, GROUP_ROWS_ONLY); /* steps.rows are steps */
        if (i < 0)
            return s->nomem ? SPS_ENOMEM : SPS_EFORMAT;
        row->name = i;
    }
    row->process = pid_rank_key(pid, rank);
    row->start_ns = sps__rr_mono(rr, start_s);
    row->end_ns = row->start_ns + ns_of(duration_s);
    return 0;
}

/* Room for one more row.  hint: steps.rows_kept, when read. */
static int rows_room(struct sps_rr *rr, size_t hint) {
    struct sps_run *run = &rr->rep->run;
    if (run->nsteps < rr->rows_cap)
        return 0;
    size_t cap = rr->rows_cap ? 2 * rr->rows_cap : hint > 0 && hint < ((size_t)1 << 26) ? hint : 1024;
    struct sps_step_row *rows = realloc(run->steps, cap * sizeof *rows);
    if (!rows)
        return SPS_ENOMEM;
    run->steps = rows;
    rr->rows_cap = cap;
    return 0;
}

/* The row's cells into a by_name as wide as the names known now: the
 * row's own (the width noted when it grew, for sps__rr_finish), or, for
 * a row handed to a consumer, the reader's, reused from row to row. */
static int row_cells(struct sps_rr *rr, struct sps_step_row *row, const struct cells *c) {
    size_t width = rr->rep->run.nnames, nrow = rr->rep->run.nsteps;
    if (rr->sink) {
        if (width > rr->sink_cells_cap) {
            size_t cap = width > 2 * rr->sink_cells_cap ? width : 2 * rr->sink_cells_cap;
            double *cells = realloc(rr->sink_cells, cap * sizeof *cells);
            if (!cells)
                return SPS_ENOMEM;
            rr->sink_cells = cells;
            rr->sink_cells_cap = cap;
        }
        row->by_name = rr->sink_cells;
    } else {
        if (!rr->nwidths || rr->widths[rr->nwidths - 1].width != width) {
            struct sps_rr_width *w = realloc(rr->widths, (rr->nwidths + 1) * sizeof *w);
            if (!w)
                return SPS_ENOMEM;
            rr->widths = w;
            w[rr->nwidths++] = (struct sps_rr_width){nrow, width};
        }
        row->by_name = malloc((width ? width : 1) * sizeof *row->by_name);
        if (!row->by_name)
            return SPS_ENOMEM;
    }
    for (size_t k = 0; k < width; k++)
        row->by_name[k] = NAN;
    for (size_t k = 0; k < c->n; k++)
        row->by_name[c->name[k]] = c->v[k];
    return 0;
}

static int read_rows(struct sps_rr *rr, size_t hint) {
    struct sps_jscan *s = rr->s;
    struct sps_run *run = &rr->rep->run;
    struct cells c = {0};
    int rc = ARRAY_BEGIN(s, "steps.rows"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_element(s, first, &more)) && more; first = 0) {
        struct sps_step_row row;
        if ((!rr->sink && (rc = rows_room(rr, hint))) || (rc = read_row(rr, &row, &c)) ||
            (rc = row_cells(rr, &row, &c)))
            break;
        if (rr->sink) /* streamed: the consumer sees the row, the model keeps none */
            rc = rr->sink->row(rr->sink->ctx, rr->rep, &row, row_pid(row.process));
        else
            run->steps[run->nsteps++] = row;
    }
    free(c.name);
    free(c.v);
    return rc;
}

static int read_steps(struct sps_rr *rr) {
    struct sps_jscan *s = rr->s;
    struct sps_run *run = &rr->rep->run;
    uint64_t kept = 0, warmup = 0;
    int rc = OBJECT_BEGIN(s, "steps"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("count"))
            rc = sps__jread_u64(s, "steps.count", &run->steps_recorded);
        else if (KEY("rows_kept"))
            rc = sps__jread_u64(s, "steps.rows_kept", &kept);
        else if (KEY("warmup_steps"))
            rc = sps__jread_u64(s, "steps.warmup_steps", &warmup);
        else if (KEY("rows"))
            rc = read_rows(rr, (size_t)kept);
        else
            rc = sps__jscan_skip(s);
    }
    run->warmup_steps = (size_t)warmup;
    return rc;
}

int sps__rr_section(struct sps_rr *rr, const char *key) {
    if (!strcmp(key, "zones"))
        return read_array(rr, "zones", read_zone);
    if (!strcmp(key, "values"))
        return read_array(rr, "values", read_value);
    if (!strcmp(key, "counters"))
        return read_array(rr, "counters", read_counter);
    if (!strcmp(key, "steps"))
        return read_steps(rr);
    if (!strcmp(key, "processes"))
        return read_array(rr, "processes", sps__rr_process);
    if (!strcmp(key, "records_skipped"))
        return read_array(rr, "records_skipped", sps__rr_skipped);
    return 1;
}

/* ------------------------------------------------------------- finish */

static int by_place(const void *a, const void *b, void *places) {
    uint64_t pa = ((const uint64_t *)places)[*(const size_t *)a], pb = ((const uint64_t *)places)[*(const size_t *)b];
    return pa < pb ? -1 : pa > pb;
}

/* Sort idx[0..n) by place[idx[]] (insertion sort merged in runs: n is the
 * names, a few hundred at most). */
static void sort_by_place(size_t *idx, size_t n, const uint64_t *place) {
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && by_place(&idx[j - 1], &v, (void *)place) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

/* The names in report.json's order (zones, values, counters, then names
 * only rows mentioned); each row's by_name follows them. */
static int order_names(struct sps_rr *rr) {
    struct sps_run *run = &rr->rep->run;
    size_t n = run->nnames;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), *to = malloc((n ? n : 1) * sizeof *to);
    struct sps_name_summary *names = malloc((n ? n : 1) * sizeof *names);
    int rc = idx && to && names ? 0 : SPS_ENOMEM;
    int identity = 1;
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        sort_by_place(idx, n, rr->place);
        for (size_t i = 0; i < n; i++) {
            to[idx[i]] = i;
            names[i] = run->names[idx[i]];
            identity &= idx[i] == i;
        }
    }
    size_t w = 0;
    for (size_t r = 0; !rc && r < run->nsteps; r++) {
        struct sps_step_row *row = &run->steps[r];
        while (w + 1 < rr->nwidths && rr->widths[w + 1].from <= r)
            w++;
        size_t width = rr->nwidths ? rr->widths[w].width : 0;
        if (row->name >= 0)
            row->name = (long)to[row->name];
        if (identity && width == n)
            continue;
        double *cells = malloc((n ? n : 1) * sizeof *cells);
        if (!cells) {
            rc = SPS_ENOMEM;
            break;
        }
        for (size_t k = 0; k < n; k++)
            cells[k] = NAN;
        for (size_t k = 0; k < width; k++)
            cells[to[k]] = row->by_name[k];
        free(row->by_name);
        row->by_name = cells;
    }
    if (!rc && !identity)
        memcpy(run->names, names, n * sizeof *names);
    free(idx);
    free(to);
    free(names);
    return rc;
}

/* A process a row names that processes[] does not list (a report.json
 * written by hand, or cut): one of its own, known by pid and rank only. */
static int add_unlisted(struct sps_run *run, size_t key) {
    struct sps_process_data *procs = realloc(run->procs, (run->nprocs + 1) * sizeof *procs);
    if (!procs)
        return SPS_ENOMEM;
    run->procs = procs;
    struct sps_process_data *p = &procs[run->nprocs];
    memset(p, 0, sizeof *p);
    p->pid = row_pid(key);
    p->rank = (int)(uint32_t)key - 1;
    p->local_rank = p->world_size = -1;
    if (!(p->path = strdup("")))
        return SPS_ENOMEM;
    run->nprocs++;
    return 0;
}

/* Each row's process from its pid and rank. */
static int place_rows(struct sps_rr *rr) {
    struct sps_run *run = &rr->rep->run;
    size_t last = 0;
    for (size_t r = 0; r < run->nsteps; r++) {
        struct sps_step_row *row = &run->steps[r];
        size_t key = row->process, k = last;
        if (!(last < run->nprocs && pid_rank_key(run->procs[last].pid, run->procs[last].rank) == key))
            for (k = 0; k < run->nprocs; k++)
                if (pid_rank_key(run->procs[k].pid, run->procs[k].rank) == key)
                    break;
        if (k == run->nprocs && add_unlisted(run, key))
            return SPS_ENOMEM;
        row->process = last = k;
    }
    return 0;
}

int sps__rr_finish(struct sps_rr *rr) {
    int rc = order_names(rr);
    if (!rc)
        rc = place_rows(rr);
    if (!rc)
        rc = sps__run_map_process_names(&rr->rep->run); /* the open zones' names */
    return rc;
}

void sps__rr_free(struct sps_rr *rr) {
    free(rr->sink_cells);
    free(rr->place);
    free(rr->slots);
    free(rr->widths);
    memset(rr, 0, sizeof *rr);
}
