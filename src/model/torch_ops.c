/*
 * torch_ops.c - the deep-capture window's operator files into the Run
 * model (torch_ops.h): the parser of the line-oriented format
 * (docs/record-format.md, "torch-ops files"), the loader of a records
 * directory's files, and, once the steps are built, each window's step
 * costs and its per-zone top operators.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/run.h"
#include "model/torch_ops.h"
#include "stepscope.h"

#define FORMAT_LINE "stepscope-torch-ops 1"
#define MAX_FILE_BYTES (1ull << 31)

int sps__is_torch_ops_name(const char *file_name) {
    size_t n = strlen(file_name);
    return n > 14 && !strncmp(file_name, "torch-ops-", 10) && !strcmp(file_name + n - 4, ".tsv");
}

void sps__torch_capture_free(struct sps_torch_capture *c) {
    if (!c)
        return;
    free(c->unavailable);
    free(c->short_note);
    free(c->problem);
    free(c->ops);
    for (size_t i = 0; i < c->nnames; i++)
        free(c->names[i]);
    free(c->names);
    for (size_t i = 0; i < c->ntops; i++) {
        free(c->tops[i].zone);
        free(c->tops[i].op);
    }
    free(c->tops);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------ the parser */

/* The operator names met so far, interned (open addressing over indices). */
struct name_table {
    struct sps_torch_capture *c;
    uint32_t *slots; /* name index + 1, 0 empty */
    size_t nslots, cap;
};

static uint64_t hash_of(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < n; k++)
        h = (h ^ (unsigned char)s[k]) * 1099511628211ull;
    return h;
}

static int grow_slots(struct name_table *t) {
    size_t n = t->nslots ? t->nslots * 2 : 256;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return SPS_ENOMEM;
    for (size_t i = 0; i < t->c->nnames; i++) {
        const char *s = t->c->names[i];
        size_t at = hash_of(s, strlen(s)) & (n - 1);
        while (slots[at])
            at = (at + 1) & (n - 1);
        slots[at] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

/* The index of name s (n bytes), added when new; -1 out of memory. */
static long intern(struct name_table *t, const char *s, size_t n) {
    if ((t->c->nnames + 1) * 2 > t->nslots && grow_slots(t))
        return -1;
    size_t at = hash_of(s, n) & (t->nslots - 1);
    for (; t->slots[at]; at = (at + 1) & (t->nslots - 1)) {
        const char *have = t->c->names[t->slots[at] - 1];
        if (!strncmp(have, s, n) && have[n] == '\0')
            return (long)t->slots[at] - 1;
    }
    if (t->c->nnames == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **names = realloc(t->c->names, cap * sizeof *names);
        if (!names)
            return -1;
        t->c->names = names;
        t->cap = cap;
    }
    char *copy = strndup(s, n);
    if (!copy)
        return -1;
    t->c->names[t->c->nnames] = copy;
    t->slots[at] = (uint32_t)++t->c->nnames;
    return (long)t->c->nnames - 1;
}

/* Split line (n bytes, no newline) at tabs into at most max fields; the
 * last field takes the rest of the line.  Returns the count. */
static size_t split(const char *line, size_t n, const char **f, size_t *len, size_t max) {
    size_t k = 0, from = 0;
    for (size_t i = 0; i <= n && k < max; i++) {
        if (i == n || (line[i] == '\t' && k + 1 < max)) {
            f[k] = line + from;
            len[k++] = i - from;
            from = i + 1;
        }
    }
    return k;
}

static int parse_u64(const char *s, size_t n, uint64_t *out) {
    if (n == 0 || n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k] < '0' || s[k] > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[k] - '0');
    }
    *out = v;
    return 0;
}

static int parse_i64(const char *s, size_t n, int64_t *out) {
    uint64_t v;
    int neg = n > 0 && s[0] == '-';
    if (parse_u64(s + neg, n - (size_t)neg, &v) || v > (uint64_t)INT64_MAX)
        return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

static int parse_real(const char *s, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    *out = strtod(buf, &end);
    return errno || *end || !isfinite(*out) || *out < 0 ? -1 : 0;
}

static char *dup_field(const char *s, size_t n) {
    return strndup(s, n);
}

/* One "op" line: start end self tid device name. */
static const char *parse_op(struct name_table *t, const char **f, const size_t *len, size_t nf) {
    struct sps_torch_capture *c = t->c;
    struct sps_torch_op op = {0};
    int64_t tid;
    if (nf != 7)
        return "an op line has 6 tab-separated fields";
    if (parse_u64(f[1], len[1], &op.start_ns) || parse_u64(f[2], len[2], &op.end_ns) || op.end_ns < op.start_ns)
        return "an op's start and end are not ns with start <= end";
    if (parse_u64(f[3], len[3], &op.self_ns))
        return "an op's self time is not a number of ns";
    if (parse_i64(f[4], len[4], &tid))
        return "an op's thread is not an integer";
    op.tid = tid;
    if (len[5] == 3 && !memcmp(f[5], "cpu", 3))
        op.gpu = 0;
    else if (len[5] == 3 && !memcmp(f[5], "gpu", 3))
        op.gpu = 1;
    else
        return "an op's device is not cpu or gpu";
    if (len[6] == 0)
        return "an op has no name";
    long name = intern(t, f[6], len[6]);
    if (name < 0)
        return NULL; /* out of memory: the caller tells */
    op.name = (uint32_t)name;
    if ((c->nops & (c->nops - 1)) == 0 || c->nops == 0) { /* grow at powers of two */
        struct sps_torch_op *ops = realloc(c->ops, (c->nops ? c->nops * 2 : 64) * sizeof *ops);
        if (!ops)
            return NULL;
        c->ops = ops;
    }
    c->ops[c->nops++] = op;
    if (op.gpu)
        c->gpu_ops++;
    else
        c->cpu_ops++;
    return "";
}

/* One header line (key value...).  Returns "" when taken, an error, or
 * NULL out of memory. */
static const char *parse_header(struct sps_torch_capture *c, const char **f, const size_t *len, size_t nf,
                                int *have_pid) {
#define IS(lit) (len[0] == sizeof lit - 1 && !memcmp(f[0], lit, sizeof lit - 1))
    uint64_t u, v;
    int64_t i;
    if (IS("pid") || IS("tid")) {
        if (nf != 2 || parse_i64(f[1], len[1], &i) || i <= 0 || i > INT32_MAX)
            return "pid and tid are positive integers";
        if (IS("pid")) {
            c->pid = (int)i;
            *have_pid = 1;
        } else {
            c->tid = (int)i;
        }
    } else if (IS("spec")) {
        if (nf != 2 || len[1] == 0 || len[1] >= sizeof c->spec)
            return "spec is FIRST:END or auto";
        memcpy(c->spec, f[1], len[1]);
        c->spec[len[1]] = '\0';
    } else if (IS("window")) {
        if (nf != 3 || parse_u64(f[1], len[1], &u) || parse_u64(f[2], len[2], &v) || v < u)
            return "window is FIRST END, END >= FIRST";
        c->first_step = u;
        c->end_step = v;
    } else if (IS("trigger")) {
        if (nf != 3 || parse_u64(f[1], len[1], &u) || parse_real(f[2], len[2], &c->trigger_ratio))
            return "trigger is STEP RATIO";
        c->trigger_step = u;
        c->have_trigger = 1;
    } else if (IS("align_error_ns") || IS("start_cost_ns") || IS("stop_cost_ns") || IS("export_cost_ns")) {
        double *to = IS("align_error_ns") ? &c->align_error_ns
                     : IS("start_cost_ns") ? &c->start_cost_ns
                     : IS("stop_cost_ns")  ? &c->stop_cost_ns
                                           : &c->export_cost_ns;
        if (nf != 2 || parse_real(f[1], len[1], to))
            return "a cost or bound is a number of ns";
    } else if (IS("unavailable") || IS("short")) {
        char **to = IS("unavailable") ? &c->unavailable : &c->short_note;
        if (nf != 2 || len[1] == 0)
            return "unavailable and short give a reason";
        free(*to);
        if (!(*to = dup_field(f[1], len[1])))
            return NULL;
    }
    /* another key: a later stepscope's, ignored */
    return "";
#undef IS
}

int sps__torch_ops_parse(const char *text, size_t len, const char *label, struct sps_torch_capture *out,
                         char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    struct name_table names = {.c = out};
    int have_pid = 0, ended = 0, rc = 0;
    size_t lineno = 0, pos = 0;
    uint64_t declared = 0;
    while (pos < len && !rc) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl != NULL);
        lineno++;
        if (lineno == 1) {
            if (n != sizeof FORMAT_LINE - 1 || memcmp(line, FORMAT_LINE, n)) {
                snprintf(err, errlen, "%s: line 1: not a torch-ops file (it begins \"%s\")", label, FORMAT_LINE);
                rc = SPS_EFORMAT;
            }
            continue;
        }
        if (!nl) { /* the last line has no newline: cut off while written */
            snprintf(err, errlen, "%s: line %zu: truncated (no end of line)", label, lineno);
            rc = SPS_EFORMAT;
            break;
        }
        if (ended) {
            snprintf(err, errlen, "%s: line %zu: a line after the end line", label, lineno);
            rc = SPS_EFORMAT;
            break;
        }
        const char *f[7];
        size_t fl[7];
        size_t nf = split(line, n, f, fl, 7);
        const char *why;
        if (memchr(line, '\0', n)) {
            /* not text: a name cut at its NUL would no longer be the n
             * bytes the name table compares and hashes */
            why = "a NUL byte in the line";
        } else if (fl[0] == 2 && !memcmp(f[0], "op", 2)) {
            why = parse_op(&names, f, fl, nf);
        } else if (fl[0] == 3 && !memcmp(f[0], "end", 3)) {
            ended = 1;
            why = nf == 2 && !parse_u64(f[1], fl[1], &declared) ? "" : "end gives the number of op lines";
        } else {
            /* a name with tabs is an op's last field; a header takes 3 at most */
            nf = split(line, n, f, fl, 4);
            why = parse_header(out, f, fl, nf, &have_pid);
        }
        if (!why) {
            rc = SPS_ENOMEM;
        } else if (*why) {
            if (!out->bad_lines++) {
                char buf[160];
                snprintf(buf, sizeof buf, "line %zu: %s", lineno, why);
                if (!(out->problem = strdup(buf)))
                    rc = SPS_ENOMEM;
            }
        }
    }
    free(names.slots);
    if (rc == SPS_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", label);
    else if (!rc && lineno == 0) {
        snprintf(err, errlen, "%s: empty", label);
        rc = SPS_EFORMAT;
    } else if (!rc && !ended) {
        snprintf(err, errlen, "%s: line %zu: truncated (no end line)", label, lineno);
        rc = SPS_EFORMAT;
    } else if (!rc && !have_pid) {
        snprintf(err, errlen, "%s: no pid line", label);
        rc = SPS_EFORMAT;
    } else if (!rc && (declared < out->nops || declared > out->nops + out->bad_lines)) {
        snprintf(err, errlen, "%s: %zu op lines, the end line says %llu", label, out->nops,
                 (unsigned long long)declared);
        rc = SPS_EFORMAT;
    }
    return rc;
}

/* ------------------------------------------------------------ the loader */

static int load_file(const char *path, struct sps_torch_capture *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: %s", path, f ? "not a regular file" : strerror(errno));
        if (f)
            fclose(f);
        return SPS_EIO;
    }
    if ((unsigned long long)sb.st_size > MAX_FILE_BYTES) {
        fclose(f);
        snprintf(err, errlen, "%s: over %llu bytes", path, MAX_FILE_BYTES);
        return SPS_EFORMAT;
    }
    char *text = malloc((size_t)sb.st_size + 1);
    size_t got = text ? fread(text, 1, (size_t)sb.st_size, f) : 0;
    fclose(f);
    if (!text)
        return SPS_ENOMEM;
    int rc = sps__torch_ops_parse(text, got, path, c, err, errlen);
    free(text);
    return rc;
}

static int by_path(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sps__run_load_torch(struct sps_run *run, const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* the records' loader says why */
    char **files = NULL;
    size_t n = 0;
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (!sps__is_torch_ops_name(e->d_name))
            continue;
        char **grown = realloc(files, (n + 1) * sizeof *files);
        if (!grown || asprintf(&grown[n], "%s/%s", dir, e->d_name) < 0)
            rc = SPS_ENOMEM;
        files = grown ? grown : files;
        n += rc == 0;
    }
    closedir(d);
    if (n)
        qsort(files, n, sizeof *files, by_path);
    for (size_t i = 0; !rc && i < n; i++) {
        struct sps_torch_capture c;
        char why[512];
        int r = load_file(files[i], &c, why, sizeof why);
        if (r == SPS_ENOMEM) {
            rc = sps__run_add_skipped(run, files[i], "out of memory reading this operators file");
        } else if (r) {
            rc = sps__run_add_skipped(run, files[i], why);
        } else {
            struct sps_torch_capture *grown = realloc(run->torch, (run->ntorch + 1) * sizeof *grown);
            if (grown) {
                run->torch = grown;
                grown[run->ntorch++] = c;
                continue;
            }
            rc = SPS_ENOMEM;
        }
        sps__torch_capture_free(&c);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

void sps__torch_capture_take_events(struct sps_torch_capture *to, struct sps_torch_capture *from) {
    free(to->ops);
    for (size_t i = 0; i < to->nnames; i++)
        free(to->names[i]);
    free(to->names);
    to->ops = from->ops;
    to->nops = from->nops;
    to->names = from->names;
    to->nnames = from->nnames;
    from->ops = NULL;
    from->names = NULL;
    from->nops = from->nnames = 0;
}
