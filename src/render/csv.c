/*
 * csv.c - steps.csv and timeline.csv (see exporters.h), made from the
 * report model: its step rows and the sampler's series, which a report
 * read from report.json holds too, so standalone runs, which have no
 * records, get them as well.  docs/csv-format.md is the contract: column
 * names, units, empty cells and how a step's metric statistics are
 * computed.
 *
 * Both files are RFC 4180: one header row, comma-separated, a field
 * quoted when it holds a comma, a quote or a line break (quotes inside
 * doubled), "\n" line ends; a name that would start a spreadsheet formula
 * gets a leading ' (csv_text).  Numbers are written as
 * report.json writes them (integers exactly).  A cell with nothing to say
 * is empty, never 0.
 *
 * Reads the report, never changes it; every allocation made here is freed
 * before returning.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/ranks.h"
#include "render/exporters.h"
#include "render/json_writer.h"
#include "render/machine_series.h"
#include "render/step_series.h"
#include "stepscope.h"

/* ------------------------------------------------------------ CSV cells */

/* A text cell that a spreadsheet would take for a formula (OWASP's "CSV
 * injection" list: =, +, -, @, tab, carriage return first): a step named
 * =HYPERLINK(...) must not become a live link in whoever opens the file. */
static int formula_lead(const char *s) {
    return *s && strchr("=+-@\t\r", *s) != NULL;
}

/* One text field (a name, never a number), quoted only when RFC 4180
 * requires it, or prefixed with ' and quoted when it would start a
 * formula, as OWASP recommends. */
static void csv_text(FILE *out, const char *s) {
    int formula = formula_lead(s);
    if (!formula && !strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    if (formula)
        fputc('\'', out);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

/* A number as report.json writes it (sps__jw_format_number); empty when
 * it is not finite (unknown).  -0 is written 0, as report.json's readers
 * read it. */
static void csv_double(FILE *out, double v) {
    if (isfinite(v)) {
        char buf[32];
        fwrite(buf, 1, (size_t)sps__jw_format_number(buf, sizeof buf, v + 0.0), out);
    }
}

/* -------------------------------------------------------------- series */

/* ",mean,max" of a series over a step (cells empty where unknown), from
 * the cache when the step covers the same points as the step before. */
static void series_cells(FILE *out, struct sps__step_series *s, double start, double end) {
    size_t first, stop;
    sps__step_series_span(s, start, end, &first, &stop);
    if (first == stop) {
        fputs(",,", out);
        return;
    }
    if (stop != s->cached_stop || first != s->cached_first) {
        double mean, max;
        sps__step_series_over(s, first, stop, &mean, &max);
        char *c = s->cached;
        size_t len = 0;
        c[len++] = ',';
        if (isfinite(mean))
            len += (size_t)sps__jw_format_number(c + len, 32, mean + 0.0);
        c[len++] = ',';
        if (isfinite(max))
            len += (size_t)sps__jw_format_number(c + len, 32, max + 0.0);
        s->cached_len = len;
        s->cached_first = first;
        s->cached_stop = stop;
    }
    fwrite(s->cached, 1, s->cached_len, out);
}

/* ----------------------------------------------------------- steps.csv */

static void header_with(FILE *out, const char *prefix, const char *name, const char *suffix) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s%s", prefix, name, suffix);
    fputc(',', out);
    csv_text(out, buf);
}

static void header_series(FILE *out, const struct sps__step_series *s, size_t n) {
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

/* The columns of one kind of name: the run's names of that kind, in the
 * run's order (report.json's zones[], values[], counters[]).  *cols is
 * malloc'd; returns how many, or -1 when out of memory. */
static long columns_of(const struct sps_run *run, uint32_t kind, size_t **cols) {
    size_t n = 0;
    *cols = malloc((run->nnames ? run->nnames : 1) * sizeof **cols);
    if (!*cols)
        return -1;
    for (size_t k = 0; k < run->nnames; k++)
        if (run->names[k].kind == kind)
            (*cols)[n++] = k;
    return (long)n;
}

/* One row's cells up to microsteps. */
static void row_head(FILE *out, const struct sps_run *run, const struct sps_step_row *row, double start_s,
                     double duration_s) {
    const struct sps_process_data *p = row->process < run->nprocs ? &run->procs[row->process] : NULL;
    if (p)
        fprintf(out, "%d", p->pid);
    fputc(',', out);
    int rank = p ? sps__run_process_rank(run, row->process) : -1; /* a worker's is its parent's */
    if (rank >= 0)
        fprintf(out, "%d", rank);
    fprintf(out, ",%d,", row->tid);
    csv_text(out, row->name >= 0 && (size_t)row->name < run->nnames ? run->names[row->name].name : "");
    fprintf(out, ",%" PRIu64 ",", row->index);
    csv_double(out, start_s);
    fputc(',', out);
    csv_double(out, duration_s);
    fprintf(out, ",%c,%" PRIu32, row->warmup ? '1' : '0', row->microsteps);
}

enum { NGROUPS = 4 }; /* zones, waits, values, counters: the column groups of steps.csv */

int sps__export_steps_csv(const struct sps_report *rep, FILE *out, char *err, size_t errlen) {
    const struct sps_run *run = &rep->run;
    const int64_t origin_ns = sps__report_origin_ns(rep);
    static const struct {
        uint32_t kind;
        const char *prefix, *suffix;
    } groups[NGROUPS] = {{SPS_KIND_ZONE, "zone:", ":self_s"},
                         {SPS_KIND_WAIT, "wait:", ":s"},
                         {SPS_KIND_VALUE, "value:", ":last"},
                         {SPS_KIND_COUNTER, "counter:", ":sum"}};
    size_t *cols[NGROUPS] = {NULL, NULL, NULL, NULL};
    long ncols[NGROUPS];
    struct sps__step_series *series = NULL;
    size_t nseries = 0;
    int rc = 0;
    for (int g = 0; g < NGROUPS && rc == 0; g++)
        if ((ncols[g] = columns_of(run, groups[g].kind, &cols[g])) < 0)
            rc = SPS_ENOMEM;
    if (rc != 0)
        snprintf(err, errlen, "out of memory listing the columns of steps.csv");
    else
        rc = sps__step_series_load(rep, origin_ns, &series, &nseries, err, errlen);
    if (rc != 0)
        goto done;

    fputs("pid,rank,tid,step_name,step_index,start_s,duration_s,warmup,microsteps", out);
    for (int g = 0; g < NGROUPS; g++)
        for (long i = 0; i < ncols[g]; i++)
            header_with(out, groups[g].prefix, run->names[cols[g][i]].name, groups[g].suffix);
    header_series(out, series, nseries);
    fputc('\n', out);

    for (size_t r = 0; r < run->nsteps; r++) {
        const struct sps_step_row *row = &run->steps[r];
        double start_s = ((double)row->start_ns - (double)origin_ns) / 1e9;
        double duration_s = (double)(row->end_ns - row->start_ns) / 1e9;
        row_head(out, run, row, start_s, duration_s);
        for (int g = 0; g < NGROUPS; g++)
            for (long i = 0; i < ncols[g]; i++) {
                fputc(',', out);
                csv_double(out, row->by_name ? row->by_name[cols[g][i]] : NAN);
            }
        double t0 = nseries ? start_s : NAN;
        double t1 = nseries ? t0 + duration_s : NAN;
        for (size_t i = 0; i < nseries; i++)
            series_cells(out, &series[i], t0, t1);
        fputc('\n', out);
    }
    rc = finish(out, err, errlen, "steps.csv");
done:
    for (int g = 0; g < NGROUPS; g++)
        free(cols[g]);
    sps__step_series_free(series, nseries);
    return rc;
}

/* -------------------------------------------------------- timeline.csv */

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int sps__export_timeline_csv(const struct sps_report *rep, FILE *out, char *err, size_t errlen) {
    struct sps__step_series *series = NULL;
    size_t nseries = 0;
    int rc = sps__step_series_load(rep, sps__report_origin_ns(rep), &series, &nseries, err, errlen);
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
            const struct sps__step_series *s = &series[i];
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
    sps__step_series_free(series, nseries);
    return rc;
}
