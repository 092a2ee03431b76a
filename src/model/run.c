/*
 * run.c - joining the records of a run and deriving per-name statistics and
 * the warm-up of the step table (its rows: steps.c).  No I/O beyond listing
 * and loading the records directory.
 */
#include "model/run.h"
#include "model/run_info.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/torch_ops.h"
#include "stepscope.h"

int sps__run_add(struct sps_run *run, struct sps_process_data *p) {
    struct sps_process_data *procs = realloc(run->procs, (run->nprocs + 1) * sizeof *procs);
    if (!procs)
        return SPS_ENOMEM;
    run->procs = procs;
    run->procs[run->nprocs++] = *p;
    memset(p, 0, sizeof *p);
    return 0;
}

int sps__run_add_skipped(struct sps_run *run, const char *path, const char *error) {
    struct sps_skipped *s = realloc(run->skipped, (run->nskipped + 1) * sizeof *s);
    if (!s)
        return SPS_ENOMEM;
    run->skipped = s;
    s[run->nskipped].path = strdup(path);
    s[run->nskipped].error = strdup(error);
    if (!s[run->nskipped].path || !s[run->nskipped].error) {
        free(s[run->nskipped].path);
        free(s[run->nskipped].error);
        return SPS_ENOMEM;
    }
    run->nskipped++;
    return 0;
}

int sps__is_record_name(const char *file_name) {
    size_t len = strlen(file_name);
    return len >= 5 && strcmp(file_name + len - 4, ".sps") == 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sps__run_load_dir(struct sps_run *run, const char *dir, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return SPS_EIO;
    }
    char **files = NULL;
    size_t n = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!sps__is_record_name(e->d_name))
            continue;
        char **grown = realloc(files, (n + 1) * sizeof *files);
        if (!grown || asprintf(&grown[n], "%s/%s", dir, e->d_name) < 0) {
            files = grown ? grown : files;
            rc = SPS_ENOMEM;
            break;
        }
        files = grown;
        n++;
    }
    closedir(d);
    if (files)
        qsort(files, n, sizeof *files, by_name); /* a stable order for reports */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct sps_process_data p;
        char why[768];
        int r = sps__record_load(files[i], &p, why, sizeof why);
        if (r == 0)
            rc = sps__run_add(run, &p);
        else if (r == SPS_ENOMEM) /* one huge (or crafted) record: skip it */
            rc = sps__run_add_skipped(run, files[i], "out of memory reading this record");
        else
            rc = sps__run_add_skipped(run, files[i], why);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    if (rc == 0)
        rc = sps__run_load_torch(run, dir);
    if (rc == SPS_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", dir);
    return rc;
}

long sps__run_find(const struct sps_run *run, const char *name, uint32_t kind) {
    for (size_t i = 0; i < run->nnames; i++)
        if (run->names[i].kind == kind && strcmp(run->names[i].name, name) == 0)
            return (long)i;
    return -1;
}

static int kind_rank(uint32_t kind) {
    switch (kind) {
    case SPS_KIND_STEP: return 0;
    case SPS_KIND_MICROSTEP: return 1;
    case SPS_KIND_ZONE:
    case SPS_KIND_WAIT: return 2; /* zones and waits together, by total time */
    case SPS_KIND_VALUE: return 3;
    default: return 4;
    }
}

/* Steps first, then micro-steps, zones by total time, values, counters. */
static int summary_order(const void *pa, const void *pb) {
    const struct sps_name_summary *a = pa, *b = pb;
    if (kind_rank(a->kind) != kind_rank(b->kind))
        return kind_rank(a->kind) - kind_rank(b->kind);
    if (sps_kind_is_timed(a->kind) && a->agg.total_ns != b->agg.total_ns)
        return a->agg.total_ns > b->agg.total_ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Is (name, kind) open on some thread of the run? */
static int open_anywhere(const struct sps_run *run, const char *name, uint32_t kind) {
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        for (uint32_t ti = 0; ti < p->nthreads; ti++)
            for (uint32_t k = 0; k < p->threads[ti].nopen; k++) {
                const struct sps_open_zone *o = &p->threads[ti].open[k];
                if (o->kind == kind && o->name >= 1 && o->name <= p->nnames && !strcmp(p->names[o->name - 1].name, name))
                    return 1;
            }
    }
    return 0;
}

/* A micro-step name with no micro-step recorded and none open was interned
 * for a micro-step taken back unrecorded (sps__zone_discard: stepscope.torch
 * opens one in its first step before it knows whether batches accumulate):
 * there is nothing to list. */
static void drop_taken_back(struct sps_run *run) {
    size_t kept = 0;
    for (size_t i = 0; i < run->nnames; i++) {
        struct sps_name_summary *n = &run->names[i];
        if (n->kind == SPS_KIND_MICROSTEP && n->agg.count == 0 && !open_anywhere(run, n->name, n->kind)) {
            sps__agg_free(&n->agg);
            continue;
        }
        run->names[kept++] = *n;
    }
    run->nnames = kept;
}

static int build_names(struct sps_run *run) {
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        struct sps_process_data *p = &run->procs[pi];
        for (uint32_t id = 1; id <= p->nnames; id++) {
            const struct sps_name_info *ni = &p->names[id - 1];
            long s = sps__run_find(run, ni->name, ni->kind);
            if (s < 0) {
                struct sps_name_summary *grown = realloc(run->names, (run->nnames + 1) * sizeof *grown);
                if (!grown)
                    return SPS_ENOMEM;
                run->names = grown;
                s = (long)run->nnames++;
                memset(&run->names[s], 0, sizeof run->names[s]);
                memcpy(run->names[s].name, ni->name, sizeof ni->name);
                run->names[s].kind = ni->kind;
                run->names[s].agg.kind = ni->kind;
            }
            for (uint32_t ti = 0; ti < p->nthreads; ti++)
                if (sps__agg_merge(&run->names[s].agg, &p->threads[ti].aggs[id - 1]) != 0)
                    return SPS_ENOMEM;
        }
    }
    drop_taken_back(run);
    if (run->nnames)
        qsort(run->names, run->nnames, sizeof *run->names, summary_order);
    for (size_t i = 0; i < run->nnames; i++)
        if (sps_kind_is_timed(run->names[i].kind))
            sps__stats_compute(&run->names[i].agg, &run->names[i].stats);
        else if (run->names[i].kind == SPS_KIND_VALUE)
            sps__value_stats(&run->names[i].agg, &run->names[i].stats);
    /* each process's name ids -> summaries, once, so that events need no
     * search by name */
    return sps__run_map_process_names(run);
}

int sps__run_map_process_names(struct sps_run *run) {
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        struct sps_process_data *p = &run->procs[pi];
        free(p->summary_of);
        p->summary_of = malloc((p->nnames ? p->nnames : 1) * sizeof *p->summary_of);
        if (!p->summary_of)
            return SPS_ENOMEM;
        for (uint32_t id = 1; id <= p->nnames; id++)
            p->summary_of[id - 1] = sps__run_find(run, p->names[id - 1].name, p->names[id - 1].kind);
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n) { /* sorts v */
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

size_t sps__warmup_length(const double *durations, size_t n) {
    if (n < 5)
        return 0;
    size_t cap = n / 5;
    /* the typical step: steps after the longest possible warm-up */
    size_t m = n - cap;
    double *rest = malloc(m * sizeof *rest);
    if (!rest)
        return 0;
    memcpy(rest, durations + cap, m * sizeof *rest);
    double med = median_of(rest, m);
    for (size_t i = 0; i < m; i++)
        rest[i] = fabs(rest[i] - med);
    double mad = median_of(rest, m) * 1.4826; /* a normal's sigma */
    free(rest);
    double limit = med + fmax(3.0 * mad, 0.1 * med);
    size_t w = 0;
    while (w < cap && durations[w] > limit)
        w++;
    return w;
}

/* One stream's rows (at[0..n), in row order): its warm-up marked. */
static void mark_stream(struct sps_run *run, const size_t *at, size_t n, double *d) {
    for (size_t q = 0; q < n; q++)
        d[q] = (double)(run->steps[at[q]].end_ns - run->steps[at[q]].start_ns);
    size_t w = sps__warmup_length(d, n);
    for (size_t q = 0; q < w; q++)
        run->steps[at[q]].warmup = 1;
    run->warmup_steps += w;
}

/*
 * Mark the warm-up of every stream: the steps of one name on one thread.
 * A stream whose first kept step is not its thread's first step (a wrapped
 * keep-latest ring) has lost its warm-up and gets none.  Linear in the
 * rows: each thread's rows are grouped by name with a counting pass (row
 * order kept within a name), then each group is one stream.
 */
static int mark_warmup(struct sps_run *run) {
    size_t rows = run->nsteps ? run->nsteps : 1, names = run->nnames ? run->nnames : 1;
    double *d = malloc(rows * sizeof *d);
    size_t *at = malloc(rows * sizeof *at);
    size_t *first = calloc(names + 1, sizeof *first); /* a name's group starts at at[first[name]] */
    if (!d || !at || !first) {
        free(d);
        free(at);
        free(first);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < run->nsteps;) {
        size_t j = i; /* [i, j): one thread's rows */
        while (j < run->nsteps && run->steps[j].process == run->steps[i].process && run->steps[j].tid == run->steps[i].tid)
            j++;
        if (run->steps[i].index != 0) { /* the thread's first steps were not kept: no warm-up to find */
            i = j;
            continue;
        }
        /* counts, then where each name's group begins (names the thread
         * does not use get empty groups), then the rows in place */
        for (size_t k = i; k < j; k++)
            first[run->steps[k].name + 1]++;
        for (size_t nm = 1; nm <= run->nnames; nm++)
            first[nm] += first[nm - 1];
        for (size_t k = i; k < j; k++)
            at[first[run->steps[k].name]++] = k;
        /* first[name] is now where the group ends, the next one's start */
        size_t begin = 0;
        for (size_t nm = 0; nm < run->nnames; nm++) {
            if (first[nm] > begin)
                mark_stream(run, at + begin, first[nm] - begin, d);
            begin = first[nm];
        }
        memset(first, 0, (names + 1) * sizeof *first);
        i = j;
    }
    free(d);
    free(at);
    free(first);
    return 0;
}

static int by_process_start(const void *pa, const void *pb) {
    const struct sps_process_data *a = pa, *b = pb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return a->pid - b->pid;
}

int sps__run_build(struct sps_run *run) {
    /* processes in the order they started: merged values' first and last
     * then come from the first and last recording process */
    if (run->nprocs > 1)
        qsort(run->procs, run->nprocs, sizeof *run->procs, by_process_start);
    run->start_ns = UINT64_MAX;
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        const struct sps_process_data *p = &run->procs[pi];
        if (p->start_ns < run->start_ns)
            run->start_ns = p->start_ns;
        for (uint32_t t = 0; t < p->nthreads; t++)
            for (int r = 0; r < SPS_RING_COUNT; r++) {
                run->events_recorded += p->threads[t].offered[r];
                run->events_dropped += p->threads[t].dropped[r];
            }
    }
    if (run->start_ns == UINT64_MAX)
        run->start_ns = 0;
    int rc = build_names(run);
    if (rc == 0)
        rc = sps__run_build_steps(run);
    if (rc == 0)
        rc = mark_warmup(run);
    return rc ? rc : sps__run_torch_build(run);
}

void sps__run_free(struct sps_run *run) {
    for (size_t i = 0; i < run->nprocs; i++)
        sps__process_free(&run->procs[i]);
    free(run->procs);
    for (size_t i = 0; i < run->nskipped; i++) {
        free(run->skipped[i].path);
        free(run->skipped[i].error);
    }
    free(run->skipped);
    for (size_t i = 0; i < run->nnames; i++)
        sps__agg_free(&run->names[i].agg);
    free(run->names);
    for (size_t i = 0; i < run->nsteps; i++)
        free(run->steps[i].by_name);
    free(run->steps);
    for (size_t i = 0; i < run->ntorch; i++)
        sps__torch_capture_free(&run->torch[i]);
    free(run->torch);
    memset(run, 0, sizeof *run);
}

void sps__run_cuda(const struct sps_run *run, struct sps_run_cuda *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < run->nprocs; i++) {
        const struct sps_process_data *p = &run->procs[i];
        if (p->cuda_state == SPS_REC_CUDA_UNUSED)
            continue;
        out->processes++;
        out->available += p->cuda_state == SPS_REC_CUDA_AVAILABLE;
        if (!out->driver_version)
            out->driver_version = p->cuda_driver_version;
        if (!out->reason && p->cuda_reason[0]) {
            out->reason = p->cuda_reason;
            out->reason_pid = p->pid;
        }
        out->resolved += p->cuda_resolved;
        out->cpu_only += p->cuda_cpu_only;
        out->dropped += p->cuda_dropped;
        out->unresolved += p->cuda_unresolved;
    }
}

/* Who recorded the steps of process p (enum sps_steps_by). */
static int process_steps_by(const struct sps_process_data *p) {
    if (p->py_auto == SPS_REC_PY_AUTO_ACTIVE || p->py_auto == SPS_REC_PY_AUTO_TURNED_OFF)
        return SPS_STEPS_BY_AUTO;
    return p->py_instrument ? SPS_STEPS_BY_INSTRUMENT : SPS_STEPS_BY_CODE;
}

void sps__run_auto(const struct sps_run *run, int inject, struct sps_run_auto *out) {
    memset(out, 0, sizeof *out);
    out->inject = inject;
    const struct sps_process_data *turned_off_first = NULL;
    for (size_t i = 0; i < run->nprocs; i++) {
        const struct sps_process_data *p = &run->procs[i];
        out->active += p->py_auto == SPS_REC_PY_AUTO_ACTIVE;
        out->stood_aside += p->py_auto == SPS_REC_PY_AUTO_STOOD_ASIDE;
        out->turned_off += p->py_auto == SPS_REC_PY_AUTO_TURNED_OFF;
        if (!p->py_auto_reason[0])
            continue;
        if (p->py_auto == SPS_REC_PY_AUTO_STOOD_ASIDE && !out->reason) {
            out->reason = p->py_auto_reason;
            out->reason_pid = p->pid;
        } else if (p->py_auto == SPS_REC_PY_AUTO_TURNED_OFF && !turned_off_first) {
            turned_off_first = p;
        }
    }
    if (!out->reason && turned_off_first) {
        out->reason = turned_off_first->py_auto_reason;
        out->reason_pid = turned_off_first->pid;
    }
    /* the larger enum value wins: auto, then instrument, then code */
    for (size_t i = 0; i < run->nsteps; i++) {
        size_t proc = run->steps[i].process;
        int by = proc < run->nprocs ? process_steps_by(&run->procs[proc]) : SPS_STEPS_BY_CODE;
        if (by > out->steps_by)
            out->steps_by = by;
    }
    if (!out->steps_by && run->steps_recorded)
        out->steps_by = SPS_STEPS_BY_CODE; /* steps counted, no row kept: nobody to ask */
}

const char *sps__steps_by_name(int steps_by) {
    switch (steps_by) {
    case SPS_STEPS_BY_CODE:
        return "code";
    case SPS_STEPS_BY_INSTRUMENT:
        return "instrument";
    case SPS_STEPS_BY_AUTO:
        return "auto";
    }
    return NULL;
}

const char *sps__auto_state_name(const struct sps_run_auto *a) {
    if (a->inject == SPS_AUTO_INJECT_OFF)
        return "off";
    if (a->inject == SPS_AUTO_INJECT_MISSING)
        return "unavailable";
    if (a->stood_aside)
        return "stood_aside";
    if (a->turned_off)
        return "turned_off";
    if (a->active)
        return "active";
    return a->inject == SPS_AUTO_INJECT_ON ? "not_installed" : NULL;
}

const char *sps__thin_level_name(uint32_t level) {
    switch (level) {
    case SPS_THIN_NONE:
        return "none";
    case SPS_THIN_PHASES:
        return "phases";
    case SPS_THIN_STEPS:
        return "steps";
    }
    return "unknown";
}
