/*
 * sides.c - reading a run's report.json for `stepscope compare` (see
 * sides.h).  Only report.json is read: it holds every step's duration and
 * zone self times (steps.rows) and the run's analysis, and a report.json
 * copied out of its run directory still compares.  It is read by the
 * report model's one reader (report/report_read_rows.h) with the rows
 * handed over as they stream past instead of kept: a million-step report
 * is over half a gigabyte of JSON, and only the durations and zone times
 * of the compared step are kept, one double each.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/bottleneck.h"
#include "compare/sides.h"
#include "model/ranks.h"
#include "model/torch_ops.h"
#include "report/report.h"
#include "report/report_read_rows.h"
#include "sampler/sampler.h"
#include "stepscope.h"

/* path's report.json into out; records (recslen bytes) is path/records
 * when path is a directory holding one, else "". */
static int resolve_path(const char *path, char *out, size_t outlen, char *records, size_t recslen, char *err,
                        size_t errlen) {
    records[0] = '\0';
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
    int has_records = 0;
    if (S_ISDIR(sb.st_mode)) {
        struct stat rs;
        has_records = snprintf(records, recslen, "%s/records", path) < (int)recslen && stat(records, &rs) == 0 &&
                      S_ISDIR(rs.st_mode);
        if (!has_records)
            records[0] = '\0';
    }
    if (S_ISDIR(sb.st_mode) && stat(out, &sb) != 0) {
        /* records without report.json: a stepscope run killed, or out of
         * disk, before its report; `stepscope report` makes it */
        records[0] = '\0';
        if (has_records)
            snprintf(err, errlen,
                     "%s: no report.json in it, only records (a run that did not finish its report?): `stepscope "
                     "report %s` rebuilds it from them",
                     path, path);
        else
            snprintf(err, errlen, "%s: no report.json in it (is it a run directory?)", path);
        return SPS_EIO;
    }
    return 0;
}

/* A run directory's report.json that is another run's (copied in from
 * elsewhere, or left by an earlier run whose records were replaced): its
 * numbers are not this directory's, and comparing them would show the
 * other run.  Only names and header CRCs of the records are read.
 * Returns 0, or SPS_EFORMAT (SPS_ENOMEM) with err set. */
static int refuse_stale(const struct sps_report *rep, const char *dir, const char *records, char *err,
                        size_t errlen) {
    struct sps_run heads;
    char why[1024];
    int rc = sps__run_load_headers(&heads, records, why, sizeof why);
    if (rc) /* records/ unreadable: report.json is all compare reads */
        return rc == SPS_ENOMEM ? (snprintf(err, errlen, "%s", why), rc) : 0;
    if (sps__report_records_stale(&rep->run, &heads, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s; `stepscope report %s` rebuilds it from the records", dir, why, dir);
        rc = SPS_EFORMAT;
    }
    sps__run_free(&heads);
    return rc;
}

/* The kept steps' arrays grow together: step_s and every zone's self_s
 * hold cap steps. */
struct growth {
    size_t cap;
};

/* The series named name in *list (zones or GPU zones), added when new with
 * cap_steps steps of fill (0 for a zone's self time: a step that did not
 * enter it; NAN for a GPU time: a step whose row has none). */
static struct sps_cmp_zone *series_get(struct sps_cmp_zone **list, size_t *n, const char *name, size_t cap_steps,
                                       double fill) {
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*list)[i].name, name))
            return &(*list)[i];
    struct sps_cmp_zone *z = realloc(*list, (*n + 1) * sizeof *z);
    if (!z)
        return NULL;
    *list = z;
    z = &z[*n];
    memset(z, 0, sizeof *z);
    z->name = strdup(name);
    z->self_s = malloc((cap_steps ? cap_steps : 1) * sizeof *z->self_s);
    if (!z->name || !z->self_s) {
        free(z->name);
        free(z->self_s);
        return NULL;
    }
    for (size_t i = 0; i < (cap_steps ? cap_steps : 1); i++)
        z->self_s[i] = fill;
    (*n)++;
    return z;
}

static struct sps_cmp_zone *zone_get(struct sps_cmp_run *run, const char *name, size_t cap_steps) {
    return series_get(&run->zones, &run->nzones, name, cap_steps, 0);
}

/* Grow each series of list from old_cap to cap steps, the new ones fill. */
static int grow_series(struct sps_cmp_zone *list, size_t n, size_t old_cap, size_t cap, double fill) {
    for (size_t i = 0; i < n; i++) {
        double *z = realloc(list[i].self_s, cap * sizeof *z);
        if (!z)
            return SPS_ENOMEM;
        for (size_t k = old_cap; k < cap; k++)
            z[k] = fill;
        list[i].self_s = z;
    }
    return 0;
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
    if (grow_series(run->zones, run->nzones, g->cap, cap, 0) || grow_series(run->gpu, run->ngpu, g->cap, cap, NAN))
        return SPS_ENOMEM;
    g->cap = cap;
    return 0;
}

/* The steps seen so far of each stream (a thread of a process), for
 * --skip: the first N of every stream are left out. */
struct stream_count {
    int pid, tid;
    size_t seen;
};

/* The place of a (pid, tid) step in its stream, counting it; (size_t)-1
 * when out of memory. */
static size_t place_in_stream(struct stream_count **streams, size_t *n, int pid, int tid) {
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

/* The state of steps.rows being read into a run. */
struct rows_reader {
    struct sps_cmp_run *run;
    const struct sps_cmp_load_options *opt;
    struct growth g;
    struct stream_count *streams;
    size_t nstreams;
    long step_name; /* the compared step's index in the reader's names; -1 not met yet */
    /* by the reader's name index: the zone's place in run->zones + 1, 0
     * when not met in a kept row yet (the reader's names only grow while
     * the rows stream past) */
    size_t *zone_of;
    size_t zone_of_cap;
    /* likewise for the values: 0 not met yet, 1 not a "<zone>.gpu_ms"
     * name, else the GPU zone's place in run->gpu + 2 */
    size_t *gpu_of;
    size_t gpu_of_cap;
    /* each kept step's (pid, tid, index), to find a deep-capture window's
     * steps once the report's torch_profile section has been read */
    struct kept_step *kept;
};

struct kept_step {
    int pid, tid;
    uint64_t index;
};

/* Whether row is a step of the name compared. */
static int is_compared(struct rows_reader *rr, const struct sps_report *rep, const struct sps_step_row *row) {
    if (row->name < 0)
        return 0;
    if (rr->step_name >= 0)
        return row->name == rr->step_name;
    if (strcmp(rep->run.names[row->name].name, rr->run->step_name) != 0)
        return 0;
    rr->step_name = row->name; /* rows are steps: one index for the name */
    return 1;
}

/* The zone named by the reader's name k, added to the run when new;
 * NULL when out of memory. */
static struct sps_cmp_zone *zone_for(struct rows_reader *rr, const struct sps_report *rep, size_t k) {
    if (k >= rr->zone_of_cap) {
        size_t cap = rep->run.nnames > 2 * rr->zone_of_cap ? rep->run.nnames : 2 * rr->zone_of_cap;
        size_t *z = realloc(rr->zone_of, cap * sizeof *z);
        if (!z)
            return NULL;
        memset(z + rr->zone_of_cap, 0, (cap - rr->zone_of_cap) * sizeof *z);
        rr->zone_of = z;
        rr->zone_of_cap = cap;
    }
    if (!rr->zone_of[k]) {
        /* a wait is compared apart from a zone of the same text */
        char waited[sizeof rep->run.names[k].name + sizeof " (wait)"];
        const char *name = rep->run.names[k].name;
        if (rep->run.names[k].kind == SPS_KIND_WAIT) {
            snprintf(waited, sizeof waited, "%s (wait)", name);
            name = waited;
        }
        struct sps_cmp_zone *z = zone_get(rr->run, name, rr->g.cap);
        if (!z)
            return NULL;
        z->wait = rep->run.names[k].kind == SPS_KIND_WAIT;
        rr->zone_of[k] = (size_t)(z - rr->run->zones) + 1;
    }
    return &rr->run->zones[rr->zone_of[k] - 1];
}

/* Grow a by-name-index cache to hold index k (zeros for the new). */
static int cache_room(size_t **cache, size_t *cap, size_t nnames, size_t k) {
    if (k < *cap)
        return 0;
    size_t want = nnames > 2 * *cap ? nnames : 2 * *cap;
    want = want > k ? want : k + 1;
    size_t *z = realloc(*cache, want * sizeof *z);
    if (!z)
        return SPS_ENOMEM;
    memset(z + *cap, 0, (want - *cap) * sizeof *z);
    *cache = z;
    *cap = want;
    return 0;
}

#define GPU_SUFFIX ".gpu_ms"

/* The GPU zone whose "<zone>.gpu_ms" value is the reader's name k (a
 * value), added to the run when new; *none set when k is another value.
 * NULL when out of memory or *none. */
static struct sps_cmp_zone *gpu_for(struct rows_reader *rr, const struct sps_report *rep, size_t k, int *none) {
    *none = 0;
    if (cache_room(&rr->gpu_of, &rr->gpu_of_cap, rep->run.nnames, k))
        return NULL;
    if (!rr->gpu_of[k]) {
        const char *name = rep->run.names[k].name;
        size_t len = strlen(name), sl = sizeof GPU_SUFFIX - 1;
        if (len <= sl || strcmp(name + len - sl, GPU_SUFFIX)) {
            rr->gpu_of[k] = 1;
        } else {
            char zone[sizeof rep->run.names[k].name];
            snprintf(zone, sizeof zone, "%.*s", (int)(len - sl), name);
            struct sps_cmp_zone *z = series_get(&rr->run->gpu, &rr->run->ngpu, zone, rr->g.cap, NAN);
            if (!z)
                return NULL;
            rr->gpu_of[k] = (size_t)(z - rr->run->gpu) + 2;
        }
    }
    *none = rr->gpu_of[k] == 1;
    return *none ? NULL : &rr->run->gpu[rr->gpu_of[k] - 2];
}

/* Keep or leave out one row as the reader hands it over
 * (report_read_rows.h): the rows of the step compared, after warm-up,
 * their durations and their zones' self times. */
static int keep_row(void *ctx, const struct sps_report *rep, const struct sps_step_row *row, int pid) {
    struct rows_reader *rr = ctx;
    struct sps_cmp_run *run = rr->run;
    if (!is_compared(rr, rep, row))
        return 0;
    run->rows++;
    int warm;
    if (rr->opt->skip < 0) {
        warm = row->warmup;
    } else {
        size_t place = place_in_stream(&rr->streams, &rr->nstreams, pid, row->tid);
        if (place == (size_t)-1)
            return SPS_ENOMEM;
        warm = place < (size_t)rr->opt->skip;
    }
    if (warm) {
        run->skipped++;
        return 0;
    }
    size_t cap = rr->g.cap;
    if (make_room(run, &rr->g))
        return SPS_ENOMEM;
    if (rr->g.cap != cap || !rr->kept) {
        struct kept_step *k = realloc(rr->kept, rr->g.cap * sizeof *k);
        if (!k)
            return SPS_ENOMEM;
        rr->kept = k;
    }
    rr->kept[run->nsteps] = (struct kept_step){pid, row->tid, row->index};
    size_t at = run->nsteps++;
    /* as report.json writes duration_s: the same double */
    run->step_s[at] = (double)(row->end_ns - row->start_ns) / 1e9;
    for (size_t k = 0; k < rep->run.nnames; k++) {
        if (isnan(row->by_name[k]))
            continue;
        if (rep->run.names[k].kind == SPS_KIND_VALUE) {
            int none;
            struct sps_cmp_zone *z = gpu_for(rr, rep, k, &none);
            if (!z && !none)
                return SPS_ENOMEM;
            if (z) /* milliseconds in the row; seconds as the zones' */
                z->self_s[at] = row->by_name[k] / 1e3;
            continue;
        }
        if (!sps_kind_is_span(rep->run.names[k].kind))
            continue;
        struct sps_cmp_zone *z = zone_for(rr, rep, k);
        if (!z)
            return SPS_ENOMEM;
        z->self_s[at] = row->by_name[k];
    }
    return 0;
}

/* Each kept step's rank, from its pid once the report's processes have
 * been read (a row names its pid; a worker's rank is its parent's). */
static int rank_steps(struct sps_cmp_run *run, const struct sps_report *rep, const struct kept_step *kept) {
    run->step_rank = malloc((run->nsteps ? run->nsteps : 1) * sizeof *run->step_rank);
    if (!run->step_rank)
        return SPS_ENOMEM;
    int last_pid = 0, last_rank = -1;
    for (size_t i = 0; i < run->nsteps; i++) {
        if (i == 0 || kept[i].pid != last_pid) {
            last_pid = kept[i].pid;
            last_rank = -1;
            for (size_t pi = 0; pi < rep->run.nprocs; pi++)
                if (rep->run.procs[pi].pid == last_pid) {
                    last_rank = sps__run_process_rank(&rep->run, pi);
                    break;
                }
        }
        run->step_rank[i] = last_rank;
    }
    return 0;
}

/* Leave out the kept steps that ran inside a --torch-profile window (the
 * report's torch_profile section, read after the rows): torch.profiler
 * slows them on purpose, and they would pass for a change of the run. */
static void leave_out_profiled(struct sps_cmp_run *run, const struct sps_report *rep, const struct kept_step *kept) {
    if (!rep->run.ntorch || !kept)
        return;
    size_t j = 0;
    for (size_t i = 0; i < run->nsteps; i++) {
        int in_window = 0;
        for (size_t c = 0; c < rep->run.ntorch && !in_window; c++) {
            const struct sps_torch_capture *w = &rep->run.torch[c];
            in_window = !w->unavailable && w->pid == kept[i].pid && w->tid == kept[i].tid &&
                        kept[i].index >= w->first_step && kept[i].index < w->end_step;
        }
        if (in_window) {
            run->profiled++;
            continue;
        }
        run->step_s[j] = run->step_s[i];
        run->step_rank[j] = run->step_rank[i];
        for (size_t z = 0; z < run->nzones; z++)
            run->zones[z].self_s[j] = run->zones[z].self_s[i];
        for (size_t z = 0; z < run->ngpu; z++)
            run->gpu[z].self_s[j] = run->gpu[z].self_s[i];
        j++;
    }
    run->nsteps = j;
}

/* What the report must hold: steps of the name compared, not all warm-up. */
static int check_steps(struct sps_cmp_run *run, const struct sps_report *rep, const struct sps_cmp_load_options *opt,
                       char *err, size_t errlen) {
    run->steps_counted = (size_t)rep->run.steps_recorded;
    if (run->rows == 0) {
        snprintf(err, errlen,
                 "%s: no \"%s\" steps recorded (mark steps with SPS_STEP or stepscope.step(); a PyTorch script "
                 "gets them from stepscope run unless --no-auto)",
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

/* The busiest GPU's peak memory in use (gpus[].metrics.
 * gpu_memory_used_bytes.max); NAN when no GPU was read. */
static double peak_gpu_memory(const struct sps__sampler_result *machine) {
    double peak = NAN;
    for (int g = 0; machine && g < machine->ngpus; g++) {
        const struct sps__series *used = &machine->gpu[g].m[SPS_M_GPU_MEMORY_USED_BYTES];
        if (used->n && !(used->max <= peak))
            peak = used->max;
    }
    return peak;
}

/* The run-level figures, from the report model. */
static int read_figures(struct sps_cmp_run *run, const struct sps_report *rep) {
    const struct sps_run_info *info = &rep->info;
    const struct sps_analysis *a = &rep->analysis;
    /* seconds as report.json writes them (ns / 1e9): the same doubles */
    run->started_unix_s = info->start_realtime_ns ? (double)info->start_realtime_ns / 1e9 : NAN;
    run->peak_rss_bytes = info->have_rss ? (double)info->peak_rss_bytes : NAN;
    run->peak_gpu_bytes = peak_gpu_memory(info->sampler);
    run->energy_j = a->energy.total_joules;
    run->energy_per_step_j = a->energy.step_joules;
    const struct sps_torch_memory *tm = &a->torch_memory;
    run->torch_peak_allocated_bytes = tm->present ? tm->peak_allocated_bytes : NAN;
    run->torch_peak_reserved_bytes = tm->present ? tm->peak_reserved_bytes : NAN;
    snprintf(run->bottleneck, sizeof run->bottleneck, "%s",
             a->bottleneck.computed ? sps__bn_kind_name(a->bottleneck.verdict.kind) : "");
    size_t used = 0;
    for (int k = 0; k < info->argc; k++) {
        int w = snprintf(run->command + used, sizeof run->command - used, "%s%s", used ? " " : "", info->argv[k]);
        if (w < 0 || (size_t)w >= sizeof run->command - used)
            break;
        used += (size_t)w;
    }
    for (size_t i = 0; i < a->throughput.ncounters; i++) {
        const struct sps_throughput_counter *c = &a->throughput.counters[i];
        if (!isfinite(c->per_second))
            continue;
        struct sps_cmp_rate *r = realloc(run->rates, (run->nrates + 1) * sizeof *r);
        if (!r)
            return SPS_ENOMEM;
        run->rates = r;
        if (!(r[run->nrates].name = strdup(c->name)))
            return SPS_ENOMEM;
        r[run->nrates++].per_second = c->per_second;
    }
    return 0;
}

static void run_free(struct sps_cmp_run *run) {
    free(run->step_s);
    free(run->step_rank);
    for (size_t i = 0; i < run->nzones; i++) {
        free(run->zones[i].name);
        free(run->zones[i].self_s);
    }
    free(run->zones);
    for (size_t i = 0; i < run->ngpu; i++) {
        free(run->gpu[i].name);
        free(run->gpu[i].self_s);
    }
    free(run->gpu);
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
    char records[4200];
    int rc = resolve_path(path, run.path, sizeof run.path, records, sizeof records, err, errlen);
    if (rc)
        return rc;
    snprintf(run.step_name, sizeof run.step_name, "%s", opt->step_name ? opt->step_name : "step");
    struct rows_reader rr = {.run = &run, .opt = opt, .step_name = -1};
    const struct sps_report_rows sink = {keep_row, &rr};
    struct sps_report rep;
    rc = sps__report_read_rows(&rep, run.path, &sink, err, errlen);
    if (!rc && records[0])
        rc = refuse_stale(&rep, path, records, err, errlen);
    if (!rc && (rc = rank_steps(&run, &rep, rr.kept)) == SPS_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", run.path);
    if (!rc)
        leave_out_profiled(&run, &rep, rr.kept);
    free(rr.streams);
    free(rr.zone_of);
    free(rr.gpu_of);
    free(rr.kept);
    if (!rc)
        rc = check_steps(&run, &rep, opt, err, errlen);
    if (!rc)
        rc = read_figures(&run, &rep);
    sps__report_free(&rep); /* a failed read left nothing in it */
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

const struct sps_cmp_zone *sps__cmp_run_gpu_zone(const struct sps_cmp_run *run, const char *name) {
    for (size_t i = 0; i < run->ngpu; i++)
        if (!strcmp(run->gpu[i].name, name))
            return &run->gpu[i];
    return NULL;
}
