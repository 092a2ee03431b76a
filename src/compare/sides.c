/*
 * sides.c - reading a run's report.json for `stepscope compare` (see
 * sides.h).  Only report.json is read: it holds every step's duration and
 * zone self times (steps.rows) and the run's analysis, and a report.json
 * copied out of its run directory still compares.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare/sides.h"
#include "export/report.h"
#include "report/input.h"
#include "stepscope.h"

/* A number at a dotted path of objects, or NAN. */
static double num_at(json_t *root, const char *dotted) {
    json_t *at = sps__json_at(root, dotted);
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

/* The steps seen so far of each stream (a thread of a process), for
 * --skip: the first N of every stream are left out. */
struct stream_count {
    json_int_t pid, tid;
    size_t seen;
};

/* The place of a (pid, tid) step in its stream, counting it; (size_t)-1
 * when out of memory. */
static size_t place_in_stream(struct stream_count **streams, size_t *n, json_int_t pid, json_int_t tid) {
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

static int read_steps(struct sps_cmp_run *run, json_t *report, const struct sps_cmp_load_options *opt, char *err,
                      size_t errlen) {
    json_t *steps = json_object_get(report, "steps");
    json_t *rows = json_object_get(steps, "rows");
    if (!json_is_array(rows)) {
        snprintf(err, errlen, "%s: malformed: steps.rows is not an array", run->path);
        return SPS_EFORMAT;
    }
    run->steps_counted = (size_t)json_integer_value(json_object_get(steps, "count"));
    size_t n = json_array_size(rows);
    run->step_s = malloc((n ? n : 1) * sizeof *run->step_s);
    if (!run->step_s)
        return SPS_ENOMEM;
    struct stream_count *streams = NULL;
    size_t nstreams = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *row = json_array_get(rows, i);
        const char *name = json_string_value(json_object_get(row, "name"));
        if (!name || strcmp(name, run->step_name) != 0)
            continue;
        run->rows++;
        json_t *dur = json_object_get(row, "duration_s");
        if (!json_is_number(dur) || !isfinite(json_number_value(dur)) || json_number_value(dur) < 0) {
            snprintf(err, errlen, "%s: malformed: steps.rows[%zu].duration_s is not a non-negative number", run->path,
                     i);
            rc = SPS_EFORMAT;
            break;
        }
        int warm;
        if (opt->skip < 0) {
            warm = json_is_true(json_object_get(row, "warmup"));
        } else {
            size_t place = place_in_stream(&streams, &nstreams, json_integer_value(json_object_get(row, "pid")),
                                           json_integer_value(json_object_get(row, "tid")));
            if (place == (size_t)-1) {
                rc = SPS_ENOMEM;
                break;
            }
            warm = place < (size_t)opt->skip;
        }
        if (warm) {
            run->skipped++;
            continue;
        }
        size_t at = run->nsteps++;
        run->step_s[at] = json_number_value(dur);
        json_t *zones = json_object_get(row, "zones_self_s");
        const char *zname;
        json_t *zv;
        json_object_foreach(zones, zname, zv) {
            if (!json_is_number(zv))
                continue;
            struct sps_cmp_zone *z = zone_get(run, zname, n);
            if (!z) {
                rc = SPS_ENOMEM;
                break;
            }
            z->self_s[at] = json_number_value(zv);
        }
    }
    free(streams);
    if (rc == SPS_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", run->path);
    if (rc)
        return rc;
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
    run->peak_rss_bytes = num_at(report, "memory.peak_rss_bytes");
    run->peak_gpu_bytes = num_at(report, "metrics.gpu_memory_used_bytes.max");
    run->energy_j = num_at(report, "analysis.energy.joules");
    run->energy_per_step_j = num_at(report, "analysis.energy.per_step.joules");
    const char *verdict = json_string_value(sps__json_at(report, "analysis.bottleneck.verdict"));
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
    json_t *counters = sps__json_at(report, "analysis.throughput.counters");
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
    json_error_t jerr;
    json_t *report = json_load_file(run.path, JSON_REJECT_DUPLICATES, &jerr);
    if (!report) {
        if (jerr.line < 1)
            snprintf(err, errlen, "%s: %s", run.path, jerr.text);
        else
            snprintf(err, errlen, "%s:%d:%d: malformed JSON: %s", run.path, jerr.line, jerr.column, jerr.text);
        return SPS_EFORMAT;
    }
    const char *schema = json_string_value(json_object_get(report, "schema"));
    if (!schema || strcmp(schema, SPS_REPORT_SCHEMA) != 0) {
        snprintf(err, errlen, "%s: not a stepscope report (schema %s%s%s, want \"%s\")", run.path,
                 schema ? "\"" : "", schema ? schema : "missing", schema ? "\"" : "", SPS_REPORT_SCHEMA);
        json_decref(report);
        return SPS_EFORMAT;
    }
    rc = read_steps(&run, report, opt, err, errlen);
    if (!rc)
        rc = read_figures(&run, report);
    json_decref(report);
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
