/*
 * merge_file.c - records/merge.tsv of a merged run: how each record's
 * times map onto the reference clock (see align.h), written by `stepscope
 * merge` and applied by every reader of the directory.
 *
 *   stepscope-merge  1
 *   input            DIR                       (one line per input, in order)
 *   reference        HOST  RANK
 *   tolerance_ns     N
 *   forced           0|1   WHY
 *   record           FILE  METHOD  SOURCE_RANK  AT0_NS  OFF0_NS  AT1_NS  OFF1_NS  ERROR_NS
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/align.h"
#include "stepscope.h"

int sps__merge_file_begin(FILE *f, const struct sps_run_merge *merge) {
    fprintf(f, "stepscope-merge\t1\n");
    for (size_t i = 0; i < merge->ninputs; i++)
        fprintf(f, "input\t%s\n", merge->inputs[i]);
    fprintf(f, "reference\t%s\t%d\n", merge->reference_host, merge->reference_rank);
    fprintf(f, "tolerance_ns\t%" PRIu64 "\n", merge->tolerance_ns);
    fprintf(f, "forced\t%d\t%s\n", merge->forced, merge->forced_why);
    return ferror(f) ? SPS_EIO : 0;
}

int sps__merge_file_record(FILE *f, const char *file, const struct sps_align *a) {
    const char *m = sps__align_method_name(a->method);
    fprintf(f, "record\t%s\t%s\t%d\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRIu64 "\n", file,
            m ? m : "none", a->source_rank, a->at0_ns, a->off0_ns, a->at1_ns, a->off1_ns, a->error_ns);
    return ferror(f) ? SPS_EIO : 0;
}

void sps__run_merge_free(struct sps_run_merge *merge) {
    for (size_t i = 0; i < merge->ninputs; i++)
        free(merge->inputs[i]);
    free(merge->inputs);
    memset(merge, 0, sizeof *merge);
}

struct parse {
    const char *path;
    unsigned line;
    char *err;
    size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int bad(struct parse *ps, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(ps->err, ps->errlen, "%s: line %u: %s", ps->path, ps->line, what);
    return SPS_EFORMAT;
}

/* Split line at tabs into at most max fields (line is modified). */
static int split(char *line, char **f, int max) {
    int n = 0;
    for (char *s = line; n < max;) {
        f[n++] = s;
        char *t = strchr(s, '\t');
        if (!t)
            break;
        *t = '\0';
        s = t + 1;
    }
    return n;
}

static int to_i64(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int method_of(const char *s, uint32_t *m) {
    for (uint32_t k = SPS_ALIGN_REFERENCE; k <= SPS_ALIGN_REALTIME; k++)
        if (!strcmp(s, sps__align_method_name(k))) {
            *m = k;
            return 0;
        }
    return -1;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A record line: align the process whose record file it names. */
static int apply_record(struct parse *ps, struct sps_run *run, char **f, int n) {
    struct sps_align a = {0};
    int64_t v[6];
    if (n != 9 || method_of(f[2], &a.method) != 0)
        return bad(ps, "a record line has 9 fields: record FILE METHOD SOURCE_RANK AT0 OFF0 AT1 OFF1 ERROR");
    for (int k = 0; k < 6; k++)
        if (to_i64(f[3 + k], &v[k]) != 0)
            return bad(ps, "'%s' is not an integer", f[3 + k]);
    if (v[0] < -1 || v[0] > INT32_MAX)
        return bad(ps, "source rank '%s' is out of range (-1 to %d)", f[3], INT32_MAX);
    for (int k = 1; k < 6; k++) /* times and offsets either way, the error from 0 */
        if (v[k] > SPS_ALIGN_NS_MAX || v[k] < (k == 5 ? 0 : -SPS_ALIGN_NS_MAX))
            return bad(ps, "'%s' is out of range (%s%" PRId64 " to %" PRId64 " ns)", f[3 + k], k == 5 ? "" : "-",
                       k == 5 ? (int64_t)0 : SPS_ALIGN_NS_MAX, SPS_ALIGN_NS_MAX);
    a.source_rank = (int)v[0];
    a.at0_ns = v[1];
    a.off0_ns = v[2];
    a.at1_ns = v[3];
    a.off1_ns = v[4];
    a.error_ns = (uint64_t)v[5];
    for (size_t i = 0; i < run->nprocs; i++) {
        struct sps_process_data *p = &run->procs[i];
        if (p->path && !strcmp(base_name(p->path), f[1]) && p->align.method == SPS_ALIGN_NONE) {
            sps__process_align(p, &a);
            return 0;
        }
    }
    return 0; /* a record that did not load: the run lists it as skipped */
}

static int apply_line(struct parse *ps, struct sps_run *run, char *line) {
    char *f[10];
    int n = split(line, f, 10);
    int64_t v;
    if (!strcmp(f[0], "record"))
        return apply_record(ps, run, f, n);
    if (!strcmp(f[0], "input") && n == 2) {
        char **grown = realloc(run->merge.inputs, (run->merge.ninputs + 1) * sizeof *grown);
        if (!grown)
            return SPS_ENOMEM;
        run->merge.inputs = grown;
        if (!(grown[run->merge.ninputs] = strdup(f[1])))
            return SPS_ENOMEM;
        run->merge.ninputs++;
        return 0;
    }
    if (!strcmp(f[0], "reference") && n == 3 && to_i64(f[2], &v) == 0) {
        snprintf(run->merge.reference_host, sizeof run->merge.reference_host, "%s", f[1]);
        run->merge.reference_rank = v == 0 ? 0 : -1;
        return 0;
    }
    if (!strcmp(f[0], "tolerance_ns") && n == 2 && to_i64(f[1], &v) == 0 && v >= 0) {
        run->merge.tolerance_ns = (uint64_t)v;
        return 0;
    }
    if (!strcmp(f[0], "forced") && n == 3 && to_i64(f[1], &v) == 0) {
        run->merge.forced = v != 0;
        snprintf(run->merge.forced_why, sizeof run->merge.forced_why, "%s", f[2]);
        return 0;
    }
    return bad(ps, "unknown line '%.40s'", f[0]);
}

int sps__merge_file_apply(struct sps_run *run, const char *dir, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, SPS_MERGE_FILE);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SPS_EIO;
    }
    struct parse ps = {path, 0, err, errlen};
    char line[8192];
    int rc = 0;
    while (!rc && fgets(line, sizeof line, fp)) {
        ps.line++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        else if (!feof(fp))
            rc = bad(&ps, "line too long");
        if (!rc && ps.line == 1 && strcmp(line, "stepscope-merge\t1") != 0)
            rc = bad(&ps, "not a stepscope merge file of version 1");
        else if (!rc && ps.line > 1)
            rc = apply_line(&ps, run, line);
    }
    fclose(fp);
    if (rc == SPS_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    if (!rc && run->merge.ninputs == 0)
        rc = bad(&ps, "no input line: not written by stepscope merge");
    return rc;
}
