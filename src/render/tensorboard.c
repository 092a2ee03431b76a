/*
 * tensorboard.c - TensorBoard event files from the report model (see
 * tensorboard.h; docs/tensorboard.md is the contract).
 *
 * The scalars are steps.csv's facts (csv.c): a step's duration, its
 * phases' self times, its waits, its values' last value, its counters'
 * sum (and that sum per second of the step), and each machine series'
 * mean over the step by the rule steps.csv uses (step_series.h).  A fact
 * a step does not have is no scalar in its event, never a 0.  Times are
 * written in milliseconds, bytes in MiB: what a person reads off a chart.
 */
#define _POSIX_C_SOURCE 200809L /* lstat */
#include "render/tensorboard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/ranks.h"
#include "platform/platform.h"
#include "render/machine_series.h"
#include "render/output_file.h"
#include "render/step_series.h"
#include "render/tfevent.h"
#include "stepscope.h"

/* ------------------------------------------------------------ the tags */

enum col_what {
    COL_STEP,   /* the step's duration */
    COL_NAME,   /* by_name[idx] * scale */
    COL_RATE,   /* by_name[idx] per second of the step */
    COL_SERIES  /* series[idx]'s mean over the step * scale */
};

struct col {
    char *tag;
    size_t len;
    enum col_what what;
    size_t idx;
    double scale;
};

struct cols {
    size_t n, cap;
    struct col *c;
};

static int col_add(struct cols *cs, enum col_what what, size_t idx, double scale, const char *fmt, const char *a,
                   const char *b) {
    if (cs->n == cs->cap) {
        size_t cap = cs->cap ? 2 * cs->cap : 32;
        struct col *c = realloc(cs->c, cap * sizeof *c);
        if (!c)
            return -1;
        cs->c = c;
        cs->cap = cap;
    }
    int len = snprintf(NULL, 0, fmt, a, b);
    char *tag = malloc((size_t)len + 1);
    if (!tag)
        return -1;
    snprintf(tag, (size_t)len + 1, fmt, a, b);
    cs->c[cs->n++] = (struct col){tag, (size_t)len, what, idx, scale};
    return 0;
}

static void cols_free(struct cols *cs) {
    for (size_t i = 0; i < cs->n; i++)
        free(cs->c[i].tag);
    free(cs->c);
    memset(cs, 0, sizeof *cs);
}

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/* A machine series' tag (docs/tensorboard.md): stepscope/machine/ and the
 * catalogue name, "gpu<i>/" before a GPU's, "sensor/<label>_celsius" for
 * a temperature sensor; a name in bytes is shown in MiB ("_bytes" becomes
 * "_mib"); a name that does not end in its unit gets it. */
static int series_col(struct cols *cs, size_t idx, const struct sps__step_series *s) {
    char name[256];
    double scale = 1;
    if (s->sensor) {
        snprintf(name, sizeof name, "sensor/%s_%s", s->sensor, *s->unit ? s->unit : "celsius");
    } else {
        char prefix[32] = "";
        if (s->gpu >= 0)
            snprintf(prefix, sizeof prefix, "gpu%d/", s->gpu);
        char unit_suffix[64];
        snprintf(unit_suffix, sizeof unit_suffix, "_%s", s->unit);
        if (ends_with(s->metric, "_bytes")) {
            snprintf(name, sizeof name, "%s%.*s_mib", prefix, (int)(strlen(s->metric) - strlen("_bytes")), s->metric);
            scale = 1.0 / (1024.0 * 1024.0);
        } else if (!*s->unit || ends_with(s->metric, unit_suffix)) {
            snprintf(name, sizeof name, "%s%s", prefix, s->metric);
        } else {
            snprintf(name, sizeof name, "%s%s%s", prefix, s->metric, unit_suffix);
        }
    }
    return col_add(cs, COL_SERIES, idx, scale, "stepscope/machine/%s%s", name, "");
}

/* Every tag the run's steps can carry, in a fixed order: the step time,
 * then the run's names of each kind in the run's order (report.json's),
 * then the machine series in report.json's order. */
static int cols_build(const struct sps_run *run, const struct sps__step_series *series, size_t nseries,
                      struct cols *cs) {
    if (col_add(cs, COL_STEP, 0, 1e3, "stepscope/step_ms%s%s", "", "") != 0)
        return -1;
    static const struct {
        uint32_t kind;
        const char *fmt;
        double scale;
    } groups[] = {{SPS_KIND_ZONE, "stepscope/phase/%s_ms%s", 1e3},
                  {SPS_KIND_WAIT, "stepscope/wait/%s_ms%s", 1e3},
                  {SPS_KIND_VALUE, "stepscope/value/%s%s", 1},
                  {SPS_KIND_COUNTER, "stepscope/counter/%s%s", 1}};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
        for (size_t k = 0; k < run->nnames; k++)
            if (run->names[k].kind == groups[g].kind &&
                col_add(cs, COL_NAME, k, groups[g].scale, groups[g].fmt, run->names[k].name, "") != 0)
                return -1;
    for (size_t k = 0; k < run->nnames; k++)
        if (run->names[k].kind == SPS_KIND_COUNTER &&
            col_add(cs, COL_RATE, k, 1, "stepscope/throughput/%s_per_s%s", run->names[k].name, "") != 0)
            return -1;
    for (size_t i = 0; i < nseries; i++)
        if (series_col(cs, i, &series[i]) != 0)
            return -1;
    return 0;
}

/* --------------------------------------------------------- the streams */

/* One thread's steps of one name: one event file. */
struct stream {
    int rank;       /* -1: none */
    long name;      /* index into run.names, -1: unnamed */
    size_t process; /* index into run.procs */
    int tid;
    size_t nrows, cap;
    size_t *rows; /* indices into run.steps, in the report's order */
    int main;     /* the main stream of its rank: written into the rank's directory itself */
};

struct streams {
    size_t n, cap;
    struct stream *s;
};

static void streams_free(struct streams *ss) {
    for (size_t i = 0; i < ss->n; i++)
        free(ss->s[i].rows);
    free(ss->s);
    memset(ss, 0, sizeof *ss);
}

static struct stream *stream_of(struct streams *ss, int rank, const struct sps_step_row *row) {
    for (size_t i = ss->n; i-- > 0;) { /* most rows follow a row of their own stream */
        struct stream *s = &ss->s[i];
        if (s->rank == rank && s->name == row->name && s->process == row->process && s->tid == row->tid)
            return s;
    }
    if (ss->n == ss->cap) {
        size_t cap = ss->cap ? 2 * ss->cap : 8;
        struct stream *s = realloc(ss->s, cap * sizeof *s);
        if (!s)
            return NULL;
        ss->s = s;
        ss->cap = cap;
    }
    struct stream *s = &ss->s[ss->n++];
    *s = (struct stream){.rank = rank, .name = row->name, .process = row->process, .tid = row->tid};
    return s;
}

/* The run's step rows, stream by stream, and each rank's main stream:
 * the one with the most rows (the first of those on a tie). */
static int streams_build(const struct sps_run *run, struct streams *ss) {
    for (size_t r = 0; r < run->nsteps; r++) {
        const struct sps_step_row *row = &run->steps[r];
        int rank = row->process < run->nprocs ? sps__run_process_rank(run, row->process) : -1;
        struct stream *s = stream_of(ss, rank, row);
        if (!s)
            return -1;
        if (s->nrows == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 64;
            size_t *rows = realloc(s->rows, cap * sizeof *rows);
            if (!rows)
                return -1;
            s->rows = rows;
            s->cap = cap;
        }
        s->rows[s->nrows++] = r;
    }
    for (size_t i = 0; i < ss->n; i++) {
        size_t best = i;
        for (size_t j = 0; j < ss->n; j++)
            if (ss->s[j].rank == ss->s[i].rank && (ss->s[j].nrows > ss->s[best].nrows ||
                                                   (ss->s[j].nrows == ss->s[best].nrows && j < best)))
                best = j;
        ss->s[i].main = best == i;
    }
    return 0;
}

/* The process of stream s; a process of nothing (pid 0, no host) for a
 * row that names none of the run's. */
static const struct sps_process_data *process_of(const struct sps_run *run, const struct stream *s) {
    static const struct sps_process_data none = {.rank = -1};
    return s->process < run->nprocs ? &run->procs[s->process] : &none;
}

/* A step name as one path component: letters, digits, '.', '-' and '_'
 * kept, anything else '_' (a name never climbs out of DIR). */
static void path_component(const char *name, char *out, size_t len) {
    size_t n = 0;
    for (const char *p = name; *p && n + 1 < len; p++) {
        char c = *p;
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                   c == '_' || (c == '.' && n > 0);
        out[n++] = keep ? c : '_';
    }
    if (n == 0 && len > 4)
        n = (size_t)snprintf(out, len, "step");
    out[n] = '\0';
}

/* Stream s's step name as a path component. */
static void stream_component(const struct sps_run *run, const struct stream *s, char *out, size_t len) {
    path_component(s->name >= 0 && (size_t)s->name < run->nnames ? run->names[s->name].name : "", out, len);
}

/* The directory of stream i under dir: DIR, DIR/rank-N for a rank's main
 * stream, and below that the step name for any other; with its pid and
 * tid when another stream of the rank has a name that makes the same
 * component, and with its ordinal when that one is even of the same
 * thread (two names that differ only where a path cannot hold them). */
static int stream_dir(const struct sps_run *run, const struct streams *ss, size_t i, const char *dir, char *out,
                      size_t len) {
    const struct stream *s = &ss->s[i];
    int n = s->rank >= 0 ? snprintf(out, len, "%s/rank-%d", dir, s->rank) : snprintf(out, len, "%s", dir);
    if (s->main || n < 0 || (size_t)n >= len)
        return n < 0 || (size_t)n >= len ? -1 : 0;
    char comp[SPS_REC_NAME_LEN + 8], other[SPS_REC_NAME_LEN + 8];
    stream_component(run, s, comp, sizeof comp);
    int shared = 0, same_thread = 0;
    for (size_t j = 0; j < ss->n; j++) {
        const struct stream *t = &ss->s[j];
        if (j == i || t->rank != s->rank)
            continue;
        stream_component(run, t, other, sizeof other);
        if (strcmp(comp, other) == 0) {
            shared = 1;
            same_thread |= t->process == s->process && t->tid == s->tid;
        }
    }
    const struct sps_process_data *p = process_of(run, s);
    int m = !shared        ? snprintf(out + n, len - (size_t)n, "/%s", comp)
            : !same_thread ? snprintf(out + n, len - (size_t)n, "/%s-pid%d-tid%d", comp, p->pid, s->tid)
                           : snprintf(out + n, len - (size_t)n, "/%s-pid%d-tid%d-%zu", comp, p->pid, s->tid, i);
    return m < 0 || (size_t)m >= len - (size_t)n ? -1 : 0;
}

/* ----------------------------------------------------------- the files */

struct tb_writer {
    const struct sps_report *rep;
    const struct cols *cols;
    struct sps__step_series *series;
    int64_t origin_ns;
    double start_unix_s; /* the run's start on the Unix clock; 0 when unknown */
    struct sps__tfevent_buf buf;
    struct sps__tfevent_scalar *scalars; /* [cols->n] */
    size_t others; /* other event files in the directories written into */
};

/* The scalars of one step row (the machine's readings only when
 * machine is set); returns how many. */
static size_t row_scalars(struct tb_writer *w, const struct sps_step_row *row, int machine) {
    double duration_s = (double)(row->end_ns - row->start_ns) / 1e9;
    double start_s = ((double)row->start_ns - (double)w->origin_ns) / 1e9;
    size_t n = 0;
    for (size_t i = 0; i < w->cols->n; i++) {
        const struct col *c = &w->cols->c[i];
        double v = NAN;
        switch (c->what) {
        case COL_STEP:
            v = duration_s * c->scale;
            break;
        case COL_NAME:
            v = row->by_name ? row->by_name[c->idx] * c->scale : NAN;
            break;
        case COL_RATE:
            v = row->by_name && duration_s > 0 ? row->by_name[c->idx] / duration_s : NAN;
            break;
        case COL_SERIES: {
            if (!machine)
                break;
            size_t first, stop;
            double mean = NAN, max;
            sps__step_series_span(&w->series[c->idx], start_s, start_s + duration_s, &first, &stop);
            if (first != stop)
                sps__step_series_over(&w->series[c->idx], first, stop, &mean, &max);
            v = mean * c->scale;
            break;
        }
        }
        if (isfinite(v))
            w->scalars[n++] = (struct sps__tfevent_scalar){c->tag, c->len, (float)v};
    }
    return n;
}

/* The step's end on the Unix clock. */
static double row_wall_time(const struct tb_writer *w, const struct sps_step_row *row) {
    return w->start_unix_s + ((double)row->end_ns - (double)w->origin_ns) / 1e9;
}

/* Whether the sampler read the machine stream s ran on: every process's
 * in a run of one machine; in a merged run (stepscope merge), whose
 * sampler is the reference host's, only that host's processes'. */
static int sampled_host(const struct sps_run *run, const struct stream *s) {
    return run->merge.ninputs == 0 || strcmp(process_of(run, s)->hostname, run->merge.reference_host) == 0;
}

static int write_stream(struct tb_writer *w, const struct stream *s, FILE *f) {
    const struct sps_run *run = &w->rep->run;
    int machine = sampled_host(run, s);
    if (sps__tfevent_file_version(&w->buf, w->start_unix_s) != 0)
        return SPS_ENOMEM;
    fwrite(w->buf.p, 1, w->buf.len, f);
    for (size_t k = 0; k < s->nrows; k++) {
        const struct sps_step_row *row = &run->steps[s->rows[k]];
        size_t n = row_scalars(w, row, machine);
        if (sps__tfevent_scalars(&w->buf, row_wall_time(w, row), (int64_t)row->index, w->scalars, n) != 0)
            return SPS_ENOMEM;
        fwrite(w->buf.p, 1, w->buf.len, f);
    }
    return 0;
}

/* The event files in dir other than name (none when dir cannot be read:
 * writing into it then fails with the reason). */
static size_t other_event_files(const char *dir, const char *name) {
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, "events.out.tfevents.", 20) == 0 && strcmp(e->d_name, name) != 0;
    if (d)
        closedir(d);
    return n;
}

/* The temporary's stem: without "tfevents" (tensorboard.h). */
#define TEMP_STEM "stepscope-events"

int sps__tensorboard_open(struct sps_out *o, const char *path, char *err, size_t errlen) {
    return sps__out_open_fresh(o, path, TEMP_STEM, err, errlen); /* a name of ours: nothing at it is followed */
}

/* Whether name is an event file stepscope writes. */
static int own_event_file(const char *name) {
    return strncmp(name, "events.out.tfevents.", 20) == 0 && ends_with(name, ".stepscope");
}

/* sps__tensorboard_move_own's walk: the event files of ours in the
 * directory open as dfd, then those of its subdirectories down to depth
 * more levels, each opened relative to its parent without following a
 * link (a directory swapped for a link between the listing and the open
 * is not entered).  A top-level directory whose name starts with skip
 * (NULL: none) is not entered.  to_dfd: the directory to move them into,
 * at the same relative place (subdirectories made as needed), or -1 to
 * remove them.
 * path names dfd in err.  Closes dfd. */
static int move_own_in(int dfd, int to_dfd, const char *path, const char *skip, int depth, char *err,
                       size_t errlen) {
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0; /* nothing readable: nothing of ours to move */
    }
    int moved = 0;
    for (struct dirent *e; moved >= 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (skip && !strncmp(e->d_name, skip, strlen(skip))))
            continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISREG(st.st_mode) && own_event_file(e->d_name)) {
            int r = to_dfd < 0 ? unlinkat(dfd, e->d_name, 0) : renameat(dfd, e->d_name, to_dfd, e->d_name);
            if (r != 0 && errno != ENOENT) {
                snprintf(err, errlen, "%s/%s: %s", path, e->d_name, strerror(errno));
                moved = -1;
            } else {
                moved++;
            }
        } else if (S_ISDIR(st.st_mode) && depth > 0) {
            int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue;
            int to_sub = -1;
            if (to_dfd >= 0) {
                (void)mkdirat(to_dfd, e->d_name, 0777);
                to_sub = openat(to_dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (to_sub < 0) {
                    snprintf(err, errlen, "%s/%s: cannot make its place to move to: %s", path, e->d_name,
                             strerror(errno));
                    close(sub);
                    moved = -1;
                    break;
                }
            }
            char subpath[4096];
            snprintf(subpath, sizeof subpath, "%s/%s", path, e->d_name);
            int n = move_own_in(sub, to_sub, subpath, NULL, depth - 1, err, errlen);
            if (to_sub >= 0) {
                close(to_sub);
                if (n == 0)
                    (void)unlinkat(to_dfd, e->d_name, AT_REMOVEDIR); /* made for nothing: only when empty */
            }
            moved = n < 0 ? -1 : moved + n;
        }
    }
    closedir(d);
    return moved;
}

int sps__tensorboard_move_own(int dfd, int to_dfd, const char *path, const char *skip, char *err, size_t errlen) {
    int own = fcntl(dfd, F_DUPFD_CLOEXEC, 0); /* the walk closes its copy */
    if (own < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* DIR, DIR/rank-N or DIR/NAME, DIR/rank-N/NAME */
    return move_own_in(own, to_dfd, path, skip, 2, err, errlen);
}

int sps__tensorboard_remove_own(const char *dir, char *err, size_t errlen) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0; /* nothing there (or nothing readable): nothing of ours to remove */
    int n = move_own_in(dfd, -1, dir, NULL, 2, err, errlen);
    return n;
}

/* One stream's file: created in its directory, written, committed. */
static int write_file(struct tb_writer *w, const struct streams *ss, size_t i, const char *dir, char *err,
                      size_t errlen) {
    const struct sps_run *run = &w->rep->run;
    const struct stream *s = &ss->s[i];
    char sub[4096], path[4096 + 256];
    if (stream_dir(run, ss, i, dir, sub, sizeof sub) != 0) {
        snprintf(err, errlen, "%s: path too long", dir);
        return SPS_EINVAL;
    }
    if (sps__platform_mkdirs(sub) != 0) {
        snprintf(err, errlen, "%s: %s", sub, strerror(errno));
        return SPS_EIO;
    }
    const struct sps_process_data *p = process_of(run, s);
    char host[sizeof p->hostname];
    path_component(p->hostname[0] ? p->hostname : "localhost", host, sizeof host);
    long long secs = (long long)floor(w->start_unix_s);
    if (snprintf(path, sizeof path, "%s/events.out.tfevents.%010lld.%s.%d.%d.stepscope", sub, secs, host, p->pid,
                 s->tid) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: path too long", sub);
        return SPS_EINVAL;
    }
    w->others += other_event_files(sub, strrchr(path, '/') + 1);
    struct sps_out o;
    int rc = sps__tensorboard_open(&o, path, err, errlen);
    if (rc != 0)
        return rc;
    rc = write_stream(w, s, o.f);
    if (rc != 0) {
        sps__out_abort(&o);
        snprintf(err, errlen, "%s: out of memory", path);
        return rc;
    }
    return sps__out_commit(&o, err, errlen);
}

int sps__export_tensorboard(const struct sps_report *rep, const char *dir, size_t *others, char *err,
                            size_t errlen) {
    struct tb_writer w = {.rep = rep, .origin_ns = sps__report_origin_ns(rep)};
    w.start_unix_s = rep->info.start_realtime_ns > 0 ? (double)rep->info.start_realtime_ns / 1e9 : 0;
    struct cols cols = {0};
    struct streams ss = {0};
    size_t nseries = 0;
    int rc = sps__step_series_load(rep, w.origin_ns, &w.series, &nseries, err, errlen);
    if (rc != 0)
        return rc;
    rc = SPS_ENOMEM;
    if (cols_build(&rep->run, w.series, nseries, &cols) != 0 || streams_build(&rep->run, &ss) != 0 ||
        !(w.scalars = malloc(cols.n * sizeof *w.scalars))) {
        snprintf(err, errlen, "out of memory listing the TensorBoard scalars");
        goto done;
    }
    w.cols = &cols;
    rc = 0;
    if (sps__platform_mkdirs(dir) != 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        rc = SPS_EIO;
    }
    for (size_t i = 0; i < ss.n && rc == 0; i++)
        rc = write_file(&w, &ss, i, dir, err, errlen);
    if (others)
        *others = w.others;
done:
    free(w.scalars);
    sps__tfevent_buf_free(&w.buf);
    streams_free(&ss);
    cols_free(&cols);
    sps__step_series_free(w.series, nseries);
    return rc;
}
