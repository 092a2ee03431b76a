/*
 * sides.c - reading a run's report.json for `stepscope compare` (see
 * sides.h).  Only report.json is read: it holds every step's duration and
 * zone self times (steps.rows) and the run's analysis, and a report.json
 * copied out of its run directory still compares.  The rows are read as
 * they stream past (report/jscan.h): a million-step report is over half
 * a gigabyte of JSON, and only the durations and zone times are kept.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/jscan.h"
#include "compare/sides.h"
#include "render/render.h"
#include "stepscope.h"

/* A JSON value by dotted path ("analysis.bottleneck.verdict"); NULL
 * when absent.  Array elements are not addressed. */
static json_t *json_at(json_t *root, const char *dotted) {
    char key[256];
    const char *p = dotted;
    json_t *cur = root;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len >= sizeof key)
            return NULL;
        memcpy(key, p, len);
        key[len] = '\0';
        cur = json_object_get(cur, key);
        p = dot ? dot + 1 : p + len;
    }
    return cur;
}

/* A number at a dotted path of objects, or NAN. */
static double num_at(json_t *root, const char *dotted) {
    json_t *at = json_at(root, dotted);
    return json_is_number(at) ? json_number_value(at) : NAN;
}

static int resolve_path(const char *path, char *out, size_t outlen, char *err, size_t errlen) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SPS_EIO;
    }
    int n = S_ISDIR(sb.st_mode) ? snprintf(out, outlen, "%s/report.json", path) : snprintf(out, outlen, "%s", path);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "%s: path too long", path);
        return SPS_EINVAL;
    }
    if (S_ISDIR(sb.st_mode) && stat(out, &sb) != 0) {
        snprintf(err, errlen, "%s: no report.json in it (is it a run directory?)", path);
        return SPS_EIO;
    }
    return 0;
}

/* The kept steps' arrays grow together: step_s and every zone's self_s
 * hold cap steps. */
struct growth {
    size_t cap;
};

static struct sps_cmp_zone *zone_get(struct sps_cmp_run *run, const char *name, size_t cap_steps) {
    for (size_t i = 0; i < run->nzones; i++)
        if (!strcmp(run->zones[i].name, name))
            return &run->zones[i];
    struct sps_cmp_zone *z = realloc(run->zones, (run->nzones + 1) * sizeof *z);
    if (!z)
        return NULL;
    run->zones = z;
    z = &run->zones[run->nzones];
    z->name = strdup(name);
    z->self_s = calloc(cap_steps ? cap_steps : 1, sizeof *z->self_s);
    if (!z->name || !z->self_s) {
        free(z->name);
        free(z->self_s);
        return NULL;
    }
    run->nzones++;
    return z;
}

/* Room for one more kept step.  Returns 0 or SPS_ENOMEM. */
static int make_room(struct sps_cmp_run *run, struct growth *g) {
    if (run->nsteps < g->cap)
        return 0;
    size_t cap = g->cap ? 2 * g->cap : 1024;
    double *p = realloc(run->step_s, cap * sizeof *p);
    if (!p)
        return SPS_ENOMEM;
    run->step_s = p;
    for (size_t i = 0; i < run->nzones; i++) {
        double *z = realloc(run->zones[i].self_s, cap * sizeof *z);
        if (!z)
            return SPS_ENOMEM;
        memset(z + g->cap, 0, (cap - g->cap) * sizeof *z);
        run->zones[i].self_s = z;
    }
    g->cap = cap;
    return 0;
}

/* The steps seen so far of each stream (a thread of a process), for
 * --skip: the first N of every stream are left out. */
struct stream_count {
    double pid, tid;
    size_t seen;
};

/* The place of a (pid, tid) step in its stream, counting it; (size_t)-1
 * when out of memory. */
static size_t place_in_stream(struct stream_count **streams, size_t *n, double pid, double tid) {
    for (size_t i = 0; i < *n; i++)
        if ((*streams)[i].pid == pid && (*streams)[i].tid == tid)
            return (*streams)[i].seen++;
    struct stream_count *s = realloc(*streams, (*n + 1) * sizeof *s);
    if (!s)
        return (size_t)-1;
    *streams = s;
    s[(*n)++] = (struct stream_count){pid, tid, 1};
    return 0;
}

/* One row of steps.rows as read, before it is kept or left out; its zone
 * names and values are reused from row to row. */
struct row {
    char name[128];
    int name_fits;
    int has_duration; /* duration_s is a number */
    double duration, pid, tid;
    int warmup;
    char *znames;     /* the zones' names, each NUL-terminated, back to back */
    size_t znames_len, znames_cap;
    size_t *zname_at; /* offsets into znames */
    double *zvalue;
    size_t nz, zcap;
};

static int row_add_zone(struct row *r, const char *name, size_t len, double v) {
    if (r->znames_len + len + 1 > r->znames_cap) {
        size_t cap = r->znames_cap ? r->znames_cap : 256;
        while (cap < r->znames_len + len + 1)
            cap *= 2;
        char *p = realloc(r->znames, cap);
        if (!p)
            return SPS_ENOMEM;
        r->znames = p;
        r->znames_cap = cap;
    }
    if (r->nz == r->zcap) {
        size_t cap = r->zcap ? 2 * r->zcap : 16;
        size_t *at = realloc(r->zname_at, cap * sizeof *at);
        if (!at)
            return SPS_ENOMEM;
        r->zname_at = at;
        double *val = realloc(r->zvalue, cap * sizeof *val);
        if (!val)
            return SPS_ENOMEM;
        r->zvalue = val;
        r->zcap = cap;
    }
    memcpy(r->znames + r->znames_len, name, len + 1);
    r->zname_at[r->nz] = r->znames_len;
    r->zvalue[r->nz++] = v;
    r->znames_len += len + 1;
    return 0;
}

static void row_free(struct row *r) {
    free(r->znames);
    free(r->zname_at);
    free(r->zvalue);
}

/* A value that may be a number: read when it is one, skipped when not. */
static int maybe_number(struct sps_jscan *s, int *is_number, double *v) {
    int c = sps__jscan_peek(s);
    *is_number = c == '-' || (c >= '0' && c <= '9');
    return *is_number ? sps__jscan_number(s, v) : sps__jscan_skip(s);
}

/* Read one element of steps.rows into r; a row that is not an object is
 * skipped and gets no name. */
static int read_row(struct sps_jscan *s, struct row *r, int want_stream) {
    r->name_fits = r->has_duration = r->warmup = 0;
    r->name[0] = '\0';
    r->pid = r->tid = 0;
    r->nz = r->znames_len = 0;
    if (sps__jscan_peek(s) != '{')
        return sps__jscan_skip(s);
    int rc = sps__jscan_expect(s, '{'), more = 1, num;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        const char *key = s->str;
#define KEY_IS(lit) (s->str_len == sizeof lit - 1 && !memcmp(key, lit, sizeof lit - 1))
        if (KEY_IS("name") && sps__jscan_peek(s) == '"') {
            if (!(rc = sps__jscan_string(s)) && s->str_len < sizeof r->name) {
                memcpy(r->name, s->str, s->str_len + 1);
                r->name_fits = 1;
            }
        } else if (KEY_IS("duration_s")) {
            rc = maybe_number(s, &r->has_duration, &r->duration);
        } else if (KEY_IS("warmup")) {
            r->warmup = sps__jscan_peek(s) == 't';
            rc = sps__jscan_skip(s);
        } else if (want_stream && (KEY_IS("pid") || KEY_IS("tid"))) {
            rc = maybe_number(s, &num, key[0] == 'p' ? &r->pid : &r->tid);
        } else if (KEY_IS("zones_self_s") && sps__jscan_peek(s) == '{') {
            rc = sps__jscan_expect(s, '{');
            int zmore = 1;
            for (int zfirst = 1; !rc && !(rc = sps__jscan_member(s, zfirst, &zmore)) && zmore; zfirst = 0) {
                size_t len = s->str_len;
                char name[256];
                if (len >= sizeof name) { /* a zone name that long is kept whole */
                    char *copy = strdup(s->str);
                    double v;
                    if (!copy)
                        return SPS_ENOMEM;
                    rc = maybe_number(s, &num, &v);
                    if (!rc && num)
                        rc = row_add_zone(r, copy, len, v);
                    free(copy);
                    continue;
                }
                memcpy(name, s->str, len + 1);
                double v;
                rc = maybe_number(s, &num, &v);
                if (!rc && num)
                    rc = row_add_zone(r, name, len, v);
            }
        } else {
            rc = sps__jscan_skip(s);
        }
#undef KEY_IS
    }
    return rc;
}

/* The state of steps.rows being read into a run. */
struct rows_reader {
    struct sps_cmp_run *run;
    const struct sps_cmp_load_options *opt;
    struct growth g;
    struct stream_count *streams;
    size_t nstreams;
    struct row row;
    char *err;
    size_t errlen;
};

/* Keep or leave out the row just read (index i of steps.rows). */
static int keep_row(struct rows_reader *rr, size_t i) {
    struct sps_cmp_run *run = rr->run;
    struct row *r = &rr->row;
    if (!r->name_fits || strcmp(r->name, run->step_name) != 0)
        return 0;
    run->rows++;
    if (!r->has_duration || !isfinite(r->duration) || r->duration < 0) {
        snprintf(rr->err, rr->errlen, "%s: malformed: steps.rows[%zu].duration_s is not a non-negative number",
                 run->path, i);
        return SPS_EFORMAT;
    }
    int warm;
    if (rr->opt->skip < 0) {
        warm = r->warmup;
    } else {
        size_t place = place_in_stream(&rr->streams, &rr->nstreams, r->pid, r->tid);
        if (place == (size_t)-1)
            return SPS_ENOMEM;
        warm = place < (size_t)rr->opt->skip;
    }
    if (warm) {
        run->skipped++;
        return 0;
    }
    if (make_room(run, &rr->g))
        return SPS_ENOMEM;
    size_t at = run->nsteps++;
    run->step_s[at] = r->duration;
    for (size_t k = 0; k < r->nz; k++) {
        struct sps_cmp_zone *z = zone_get(run, r->znames + r->zname_at[k], rr->g.cap);
        if (!z)
            return SPS_ENOMEM;
        z->self_s[at] = r->zvalue[k];
    }
    return 0;
}

/* steps.rows, one row at a time. */
static int read_rows(struct sps_jscan *s, struct rows_reader *rr) {
    int rc = sps__jscan_expect(s, '['), more = 1;
    size_t i = 0;
    for (int first = 1; !rc && !(rc = sps__jscan_element(s, first, &more)) && more; first = 0, i++) {
        rc = read_row(s, &rr->row, rr->opt->skip >= 0);
        if (!rc)
            rc = keep_row(rr, i);
    }
    return rc;
}

/* What the scan of a report found besides the rows. */
struct scanned {
    json_t *meta;     /* schema, command, started_unix_s, memory, metrics, analysis: parsed */
    int has_rows;     /* steps.rows was an array */
    double count;     /* steps.count; NAN when absent */
};

static int read_steps_object(struct sps_jscan *s, struct rows_reader *rr, struct scanned *out) {
    if (sps__jscan_peek(s) != '{')
        return sps__jscan_skip(s);
    int rc = sps__jscan_expect(s, '{'), more = 1, num;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (!strcmp(s->str, "rows") && sps__jscan_peek(s) == '[') {
            out->has_rows = 1;
            rc = read_rows(s, rr);
        } else if (!strcmp(s->str, "count")) {
            rc = maybe_number(s, &num, &out->count);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

/* The report's top-level members: the steps read as they stream past,
 * the few small members the figures come from parsed with jansson, the
 * rest (the time series, the trace of zones) skipped. */
static int scan_report(struct sps_jscan *s, struct rows_reader *rr, struct scanned *out) {
    static const char *const parsed[] = {"schema", "command", "started_unix_s", "memory", "metrics", "analysis"};
    int rc = sps__jscan_expect(s, '{'), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (!strcmp(s->str, "steps")) {
            rc = read_steps_object(s, rr, out);
            continue;
        }
        size_t k = 0;
        while (k < sizeof parsed / sizeof *parsed && strcmp(s->str, parsed[k]))
            k++;
        if (k == sizeof parsed / sizeof *parsed) {
            rc = sps__jscan_skip(s);
            continue;
        }
        if ((rc = sps__jscan_capture(s)))
            break;
        json_error_t jerr;
        json_t *v = json_loadb(s->cap, s->cap_len, JSON_DECODE_ANY, &jerr);
        if (!v || json_object_set_new(out->meta, parsed[k], v))
            return v ? SPS_ENOMEM : SPS_EFORMAT;
    }
    return rc ? rc : sps__jscan_end(s);
}

static int read_steps(struct sps_cmp_run *run, struct sps_jscan *s, const struct sps_cmp_load_options *opt,
                      struct scanned *found, char *err, size_t errlen) {
    struct rows_reader rr;
    memset(&rr, 0, sizeof rr);
    rr.run = run;
    rr.opt = opt;
    rr.err = err;
    rr.errlen = errlen;
    found->count = NAN;
    err[0] = '\0';
    int rc = scan_report(s, &rr, found);
    free(rr.streams);
    row_free(&rr.row);
    if (rc == SPS_ENOMEM || (rc && s->nomem)) {
        snprintf(err, errlen, "%s: out of memory", run->path);
        return SPS_ENOMEM;
    }
    if (rc && !err[0])
        snprintf(err, errlen, "%s:%lu:%lu: malformed JSON: %s", run->path, s->err_line, s->err_col,
                 s->err[0] ? s->err : "a value that does not parse");
    return rc;
}

/* What the report must hold once scanned: the schema, the rows, a step. */
static int check_steps(struct sps_cmp_run *run, const struct scanned *found, const struct sps_cmp_load_options *opt,
                       char *err, size_t errlen) {
    const char *schema = json_string_value(json_object_get(found->meta, "schema"));
    if (!schema || strcmp(schema, SPS_REPORT_SCHEMA) != 0) {
        snprintf(err, errlen, "%s: not a stepscope report (schema %s%s%s, want \"%s\")", run->path,
                 schema ? "\"" : "", schema ? schema : "missing", schema ? "\"" : "", SPS_REPORT_SCHEMA);
        return SPS_EFORMAT;
    }
    if (!found->has_rows) {
        snprintf(err, errlen, "%s: malformed: steps.rows is not an array", run->path);
        return SPS_EFORMAT;
    }
    run->steps_counted = isfinite(found->count) && found->count >= 0 ? (size_t)found->count : 0;
    if (run->rows == 0) {
        snprintf(err, errlen, "%s: no \"%s\" steps recorded (mark steps with SPS_STEP or stepscope.step())",
                 run->path, run->step_name);
        return SPS_EFORMAT;
    }
    if (run->nsteps == 0) {
        snprintf(err, errlen, "%s: all %zu \"%s\" steps are warm-up (%s): nothing left to compare", run->path,
                 run->rows, run->step_name, opt->skip < 0 ? "as the report marks them; --skip 0 keeps them" : "--skip");
        return SPS_EFORMAT;
    }
    return 0;
}

static int read_figures(struct sps_cmp_run *run, json_t *report) {
    run->started_unix_s = num_at(report, "started_unix_s");
    run->peak_rss_bytes = num_at(report, "memory.peak_rss_bytes");
    run->peak_gpu_bytes = num_at(report, "metrics.gpu_memory_used_bytes.max");
    run->energy_j = num_at(report, "analysis.energy.joules");
    run->energy_per_step_j = num_at(report, "analysis.energy.per_step.joules");
    const char *verdict = json_string_value(json_at(report, "analysis.bottleneck.verdict"));
    snprintf(run->bottleneck, sizeof run->bottleneck, "%s", verdict ? verdict : "");
    size_t used = 0, k;
    json_t *arg;
    json_array_foreach(json_object_get(report, "command"), k, arg) {
        const char *a = json_string_value(arg);
        int w = a ? snprintf(run->command + used, sizeof run->command - used, "%s%s", used ? " " : "", a) : 0;
        if (w < 0 || (size_t)w >= sizeof run->command - used)
            break;
        used += (size_t)w;
    }
    json_t *counters = json_at(report, "analysis.throughput.counters");
    size_t i;
    json_t *c;
    json_array_foreach(counters, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        json_t *rate = json_object_get(c, "per_second");
        if (!name || !json_is_number(rate))
            continue;
        struct sps_cmp_rate *r = realloc(run->rates, (run->nrates + 1) * sizeof *r);
        if (!r)
            return SPS_ENOMEM;
        run->rates = r;
        if (!(r[run->nrates].name = strdup(name)))
            return SPS_ENOMEM;
        r[run->nrates++].per_second = json_number_value(rate);
    }
    return 0;
}

static void run_free(struct sps_cmp_run *run) {
    free(run->step_s);
    for (size_t i = 0; i < run->nzones; i++) {
        free(run->zones[i].name);
        free(run->zones[i].self_s);
    }
    free(run->zones);
    for (size_t i = 0; i < run->nrates; i++)
        free(run->rates[i].name);
    free(run->rates);
    memset(run, 0, sizeof *run);
}

int sps__cmp_side_add(struct sps_cmp_side *side, const char *path, const struct sps_cmp_load_options *opt,
                      char *err, size_t errlen) {
    if (!side || !path || !opt)
        return SPS_EINVAL;
    struct sps_cmp_run run;
    memset(&run, 0, sizeof run);
    int rc = resolve_path(path, run.path, sizeof run.path, err, errlen);
    if (rc)
        return rc;
    snprintf(run.step_name, sizeof run.step_name, "%s", opt->step_name ? opt->step_name : "step");
    FILE *f = fopen(run.path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", run.path, strerror(errno));
        return SPS_EIO;
    }
    struct sps_jscan scan;
    struct scanned found = {json_object(), 0, NAN};
    rc = found.meta ? sps__jscan_open(&scan, f) : SPS_ENOMEM;
    if (!rc) {
        rc = read_steps(&run, &scan, opt, &found, err, errlen);
        sps__jscan_close(&scan);
        if (!rc && ferror(f)) {
            snprintf(err, errlen, "%s: %s", run.path, strerror(errno));
            rc = SPS_EIO;
        }
    }
    fclose(f);
    if (!rc)
        rc = check_steps(&run, &found, opt, err, errlen);
    if (!rc)
        rc = read_figures(&run, found.meta);
    json_decref(found.meta);
    struct sps_cmp_run *runs = rc ? NULL : realloc(side->runs, (side->nruns + 1) * sizeof *runs);
    if (!runs) {
        if (rc == 0 || rc == SPS_ENOMEM)
            snprintf(err, errlen, "%s: out of memory", run.path);
        run_free(&run);
        return rc ? rc : SPS_ENOMEM;
    }
    side->runs = runs;
    side->runs[side->nruns++] = run;
    return 0;
}

/* One side's paths loaded in order, stopping at the first that fails. */
struct side_job {
    struct sps_cmp_side *side;
    const char *const *paths;
    size_t n;
    const struct sps_cmp_load_options *opt;
    int rc;
    char err[1024];
};

static void *load_job(void *arg) {
    struct side_job *j = arg;
    j->rc = 0;
    for (size_t i = 0; i < j->n && !j->rc; i++)
        j->rc = sps__cmp_side_add(j->side, j->paths[i], j->opt, j->err, sizeof j->err);
    return NULL;
}

int sps__cmp_sides_load(struct sps_cmp_side *base, const char *const *base_paths, size_t nbase,
                        struct sps_cmp_side *new_side, const char *const *new_paths, size_t nnew,
                        const struct sps_cmp_load_options *opt, const char **which, char *err, size_t errlen) {
    struct side_job b = {base, base_paths, nbase, opt, 0, ""}, n = {new_side, new_paths, nnew, opt, 0, ""};
    pthread_t t;
    int threaded = pthread_create(&t, NULL, load_job, &b) == 0;
    if (!threaded) /* no thread to be had: one side after the other */
        load_job(&b);
    load_job(&n);
    if (threaded)
        pthread_join(t, NULL);
    const struct side_job *failed = b.rc ? &b : n.rc ? &n : NULL;
    if (!failed)
        return 0;
    *which = failed == &b ? "BASE" : "NEW";
    snprintf(err, errlen, "%s", failed->err);
    return failed->rc;
}

void sps__cmp_side_free(struct sps_cmp_side *side) {
    for (size_t i = 0; i < side->nruns; i++)
        run_free(&side->runs[i]);
    free(side->runs);
    side->runs = NULL;
    side->nruns = 0;
}

const struct sps_cmp_zone *sps__cmp_run_zone(const struct sps_cmp_run *run, const char *name) {
    for (size_t i = 0; i < run->nzones; i++)
        if (!strcmp(run->zones[i].name, name))
            return &run->zones[i];
    return NULL;
}
