/*
 * leaks.c - the leak analysis of a run: each memory series put on the
 * run's axis (the main step stream's step number, or time when the run
 * recorded no step) and judged by leaks_trend.c (see leaks.h and
 * docs/analysis.md, "Memory leaks").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "model/run.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "stats.h"

/* The streams a run may hold that the main one is chosen among; a run
 * with more (step names x threads x processes) is judged on the largest
 * of the first ones seen, which is still a real stream. */
#define MAX_STREAMS 256

/* ------------------------------------------------------------ the axes */

/* What a series is judged against: the main step stream's post-warm-up
 * rows, oldest first; or a stretch of time after a warm-up share. */
struct axis {
    enum sps_leak_axis kind;
    const struct sps_step_row **rows; /* steps */
    size_t n;
    int64_t origin_ns, from_ns, to_ns; /* time: where 0 s is, and the stretch analysed */
};

/* The stream (process, thread, step name) with the most rows: the training
 * loop, not an evaluation loop or a data worker's own steps. */
static int main_stream(const struct sps_run *run, size_t *proc, int *tid, long *name) {
    struct {
        size_t proc;
        int tid;
        long name;
        size_t rows;
    } streams[MAX_STREAMS];
    size_t nstreams = 0, best = 0;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        size_t k = 0;
        while (k < nstreams && !(streams[k].proc == r->process && streams[k].tid == r->tid && streams[k].name == r->name))
            k++;
        if (k == nstreams) {
            if (nstreams == MAX_STREAMS)
                continue;
            streams[nstreams].proc = r->process;
            streams[nstreams].tid = r->tid;
            streams[nstreams].name = r->name;
            streams[nstreams].rows = 0;
            nstreams++;
        }
        if (++streams[k].rows > streams[best].rows)
            best = k;
    }
    if (nstreams == 0)
        return -1;
    *proc = streams[best].proc;
    *tid = streams[best].tid;
    *name = streams[best].name;
    return 0;
}

/*
 * The step number at monotonic time t: the steps of the axis completed by
 * then, counted from the stream's first step, with the step in progress
 * counting by the share of it done.  A reading at a step's end therefore
 * sits at that step's index + 1.  NAN outside the axis's span.
 */
static double step_at(const struct axis *ax, int64_t t) {
    if (ax->n == 0 || t < (int64_t)ax->rows[0]->start_ns || t > (int64_t)ax->rows[ax->n - 1]->end_ns)
        return NAN;
    size_t lo = 0, hi = ax->n; /* the first row ending after t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((int64_t)ax->rows[mid]->end_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == ax->n)
        return (double)ax->rows[ax->n - 1]->index + 1.0;
    const struct sps_step_row *r = ax->rows[lo];
    double frac = 0;
    if (t > (int64_t)r->start_ns && r->end_ns > r->start_ns)
        frac = (double)(t - (int64_t)r->start_ns) / (double)(r->end_ns - r->start_ns);
    return (double)r->index + frac;
}

static double seconds_since(const struct axis *ax, int64_t t) {
    return (double)(t - ax->origin_ns) * 1e-9;
}

/* Where monotonic time t lies on the axis: its step number, or its
 * seconds since the origin; NAN outside the stretch analysed. */
static double axis_at(const struct axis *ax, int64_t t) {
    if (ax->kind == SPS_LEAK_AXIS_STEPS)
        return step_at(ax, t);
    return t >= ax->from_ns && t <= ax->to_ns ? seconds_since(ax, t) : NAN;
}

/* A time axis over a series' time in the tree, [first_ns, last_ns]: the
 * first SPS_LEAK_TIME_WARMUP_FRACTION of it is start-up (imports, caches
 * and pools filling), left out. */
static struct axis time_axis(int64_t origin_ns, int64_t first_ns, int64_t last_ns) {
    struct axis ax = {.kind = SPS_LEAK_AXIS_TIME, .origin_ns = origin_ns};
    if (last_ns < first_ns)
        last_ns = first_ns;
    ax.from_ns = first_ns + (int64_t)(SPS_LEAK_TIME_WARMUP_FRACTION * (double)(last_ns - first_ns));
    ax.to_ns = last_ns;
    return ax;
}

/* The times of a memory series' first and last points that hold memory:
 * a tree or process reads 0 bytes only when it has gone (the sampler's
 * reading as the command exits), which is not a level to judge.  Returns
 * 0, or -1 when no point does. */
static int resident_span(const struct sps__series *s, int64_t *first_ns, int64_t *last_ns) {
    uint32_t a = 0, b = s->count;
    while (a < b && !(s->points[a].mean > 0))
        a++;
    while (b > a && !(s->points[b - 1].mean > 0))
        b--;
    if (a == b)
        return -1;
    *first_ns = s->points[a].t_ns;
    /* the last point's own time ends the span unless it merged readings up
     * to the series' end */
    *last_ns = b == s->count ? s->last_ns : s->points[b - 1].t_ns;
    return 0;
}

/* Each of a series' points inside the axis as (axis position, mean).  A
 * point that merged several readings stands at the middle of the time it
 * covers.  Returns the count, or (size_t)-1 when out of memory. */
static size_t series_on_axis(const struct sps__series *s, const struct axis *ax, double **xs, double **ys) {
    *xs = *ys = NULL;
    if (s->count == 0)
        return 0;
    *xs = malloc(s->count * sizeof **xs);
    *ys = malloc(s->count * sizeof **ys);
    if (!*xs || !*ys) {
        free(*xs);
        free(*ys);
        *xs = *ys = NULL;
        return (size_t)-1;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < s->count; i++) {
        const struct sps__series_point *p = &s->points[i];
        int64_t end = i + 1 < s->count ? s->points[i + 1].t_ns : s->last_ns;
        int64_t t = p->n > 1 && end > p->t_ns ? p->t_ns + (end - p->t_ns) / 2 : p->t_ns;
        double x = axis_at(ax, t);
        if (isnan(x) || isnan(p->mean))
            continue;
        (*xs)[n] = x;
        (*ys)[n] = p->mean;
        n++;
    }
    return n;
}

/* --------------------------------------------------------------- the run */

/*
 * The bytes of the records' rings the workload has written: each thread's
 * rings are mapped into its process and become resident as events fill
 * them, so a profiled loop's RSS grows by its events' size every step
 * until the rings are full (about 256 bytes a step for tiny_train, up to
 * 3 MiB a thread with the default ring sizes).  That growth is bounded and
 * is stepscope's, not the workload's: it is allowed for.
 */
static double one_record_ring_bytes(const struct sps_process_data *pd) {
    double bytes = 0;
    for (uint32_t t = 0; t < pd->nthreads; t++)
        for (int r = 0; r < SPS_RING_COUNT; r++) {
            uint64_t kept = pd->threads[t].offered[r];
            if (kept > pd->ring_cap[r])
                kept = pd->ring_cap[r];
            bytes += (double)kept * (double)sizeof(struct sps_rec_event);
        }
    return bytes;
}

/* Every record's: what the tree's sum is allowed. */
static double record_ring_bytes(const struct sps_run *run) {
    double bytes = 0;
    for (size_t p = 0; p < run->nprocs; p++)
        bytes += one_record_ring_bytes(&run->procs[p]);
    return bytes;
}

/*
 * The ring bytes of one process's records, for its own RSS series.  Each
 * record belongs to one process, so a process's share is its records'.  A
 * process with no record of its own (a worker that recorded nothing, or a
 * pid the records name in another pid namespace) may still hold rings it
 * inherited at fork, which become resident as either side touches them;
 * which of them it holds cannot be told, so it is allowed the average
 * record's share: bounded, and erring towards not flagging.
 */
static double process_ring_bytes(const struct sps_run *run, int pid, double all_rings) {
    double own = 0;
    int has_record = 0;
    for (size_t p = 0; p < run->nprocs; p++) {
        if (run->procs[p].pid != pid)
            continue;
        has_record = 1;
        own += one_record_ring_bytes(&run->procs[p]);
    }
    if (has_record)
        return own;
    return run->nprocs ? all_rings / (double)run->nprocs : 0;
}

static struct sps_leak_series *add_series(struct sps_leaks *l, const char *name, enum sps_leak_scope scope) {
    struct sps_leak_series *grown = realloc(l->series, (l->nseries + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    l->series = grown;
    struct sps_leak_series *ls = &l->series[l->nseries++];
    memset(ls, 0, sizeof *ls);
    snprintf(ls->series, sizeof ls->series, "%s", name);
    ls->scope = scope;
    ls->gpu = -1;
    ls->pid = -1;
    return ls;
}

static int judge_series(struct sps_leak_series *ls, const struct axis *ax, const struct sps__series *s,
                        double allowance_bytes) {
    double *xs, *ys;
    size_t n = series_on_axis(s, ax, &xs, &ys);
    if (n == (size_t)-1)
        return SPS_ENOMEM;
    int rc = ax->kind == SPS_LEAK_AXIS_STEPS
                 ? sps__leak_judge(xs, ys, n, ax->n, allowance_bytes, ls)
                 : sps__leak_judge_time(xs, ys, n, seconds_since(ax, ax->from_ns), seconds_since(ax, ax->to_ns),
                                        allowance_bytes, ls);
    if (rc == 0 && n == 0 && s->n == 0)
        snprintf(ls->reason, sizeof ls->reason, "no readings: the metric was unavailable");
    free(xs);
    free(ys);
    return rc;
}

/*
 * The tree's memory against steps: its PSS (pages its processes share
 * copy-on-write count once, so a worker that forks does not look like
 * growth) when the sampler read it SPS_LEAK_MIN_POINTS times within the
 * analysed steps; else its RSS summed over processes.  PSS is read only as
 * often as its cost allows, so a short run of a large process may have too
 * few readings of it.  l->tree_note says which and why.
 */
static int judge_tree_on_steps(struct sps_leaks *l, const struct axis *ax, const struct sps__sampler_result *r,
                               double allowance_bytes) {
    const struct sps__series *pss = &r->host[SPS_M_WORKLOAD_PSS_BYTES];
    size_t pss_points = 0;
    if (pss->n) {
        double *xs, *ys;
        pss_points = series_on_axis(pss, ax, &xs, &ys);
        if (pss_points == (size_t)-1)
            return SPS_ENOMEM;
        free(xs);
        free(ys);
    }
    int use_pss = pss_points >= SPS_LEAK_MIN_POINTS;
    if (use_pss)
        snprintf(l->tree_note, sizeof l->tree_note,
                 "PSS: pages the tree's processes share count once (%zu readings within the analysed steps)",
                 pss_points);
    else if (pss->n)
        snprintf(l->tree_note, sizeof l->tree_note,
                 "RSS summed over processes: PSS was read %zu times within the analysed steps (the trend needs %d; "
                 "it is read as often as its cost allows)",
                 pss_points, SPS_LEAK_MIN_POINTS);
    else
        snprintf(l->tree_note, sizeof l->tree_note,
                 "RSS summed over processes: no PSS reading (metrics.workload_pss_bytes says why)");
    struct sps_leak_series *ls =
        add_series(l, use_pss ? "workload_pss_bytes" : "workload_rss_bytes", SPS_LEAK_SCOPE_TREE);
    if (!ls)
        return SPS_ENOMEM;
    ls->pid = r->tree_pid > 0 ? r->tree_pid : -1;
    return judge_series(ls, ax, &r->host[use_pss ? SPS_M_WORKLOAD_PSS_BYTES : SPS_M_WORKLOAD_RSS_BYTES],
                        allowance_bytes);
}

/*
 * The tree's memory against time: its PSS where that series can be judged
 * on its own (enough readings, no hole: it is read as often as its cost
 * allows, every machine interval at best), else its RSS sum, read every
 * interval.  Both over the tree's stretch (ax).  l->tree_note says which
 * and why.
 */
static int judge_tree_on_time(struct sps_leaks *l, const struct axis *ax, const struct sps__sampler_result *r,
                              double allowance_bytes) {
    struct sps_leak_series *ls = add_series(l, "workload_pss_bytes", SPS_LEAK_SCOPE_TREE);
    if (!ls)
        return SPS_ENOMEM;
    ls->pid = r->tree_pid > 0 ? r->tree_pid : -1;
    const struct sps__series *pss = &r->host[SPS_M_WORKLOAD_PSS_BYTES];
    if (pss->n) {
        int rc = judge_series(ls, ax, pss, allowance_bytes);
        if (rc != 0)
            return rc;
        if (ls->verdict != SPS_LEAK_UNKNOWN) {
            snprintf(l->tree_note, sizeof l->tree_note,
                     "PSS: pages the tree's processes share count once (%zu readings after warm-up)", ls->points);
            return 0;
        }
        snprintf(l->tree_note, sizeof l->tree_note,
                 "RSS summed over processes: PSS (read as often as its cost allows) cannot be judged: %.160s",
                 ls->reason);
    } else {
        snprintf(l->tree_note, sizeof l->tree_note,
                 "RSS summed over processes: no PSS reading (metrics.workload_pss_bytes says why)");
    }
    snprintf(ls->series, sizeof ls->series, "workload_rss_bytes");
    return judge_series(ls, ax, &r->host[SPS_M_WORKLOAD_RSS_BYTES], allowance_bytes);
}

/* A process's own RSS.  One that was in the tree for part of the analysed
 * steps only (a worker started late, or gone early) and so has too few
 * readings is unknown for that reason, which its reason says.  Whether it
 * was there all along is judged against the tree's readings (same ticks):
 * the sampler reads every machine interval, so the first and last readings
 * of a process that lived through the steps can fall inside them. */
static int judge_process_on_steps(struct sps_leak_series *ls, const struct axis *ax,
                                  const struct sps__process_series *ps, const struct sps__series *tree,
                                  double allowance_bytes) {
    int rc = judge_series(ls, ax, &ps->rss_bytes, allowance_bytes);
    if (rc != 0 || ls->verdict != SPS_LEAK_UNKNOWN || ax->n < SPS_LEAK_MIN_STEPS || ls->points >= SPS_LEAK_MIN_POINTS)
        return rc;
    int64_t from = (int64_t)ax->rows[0]->start_ns, to = (int64_t)ax->rows[ax->n - 1]->end_ns;
    const struct sps__series *s = &ps->rss_bytes;
    int64_t first_possible = from, last_possible = to; /* the tree's readings nearest the steps' bounds */
    if (tree->n && tree->first_ns > first_possible)
        first_possible = tree->first_ns;
    if (tree->n && tree->last_ns < last_possible)
        last_possible = tree->last_ns;
    if (s->n && s->first_ns <= first_possible && s->last_ns >= last_possible)
        return 0; /* there all along: too few readings for another reason, already said */
    int64_t lived = s->n ? (s->last_ns < to ? s->last_ns : to) - (s->first_ns > from ? s->first_ns : from) : 0;
    char times[32];
    if (ls->points == 1)
        snprintf(times, sizeof times, "once");
    else
        snprintf(times, sizeof times, "%zu times", ls->points);
    snprintf(ls->reason, sizeof ls->reason,
             "short-lived: in the tree for %.3g s of the analysed steps' %.3g s, read %s within them (the "
             "trend needs %d)",
             lived > 0 ? (double)lived * 1e-9 : 0.0, (double)(to - from) * 1e-9, times, SPS_LEAK_MIN_POINTS);
    return 0;
}

/* A process's own RSS against time, over its own time in the tree after
 * its own start-up (a process that joins late starts up then, not with
 * the tree).  One that cannot be judged and was in the tree for less than
 * the tree's whole time (within a machine interval, when processes are
 * looked for) says so. */
static int judge_process_on_time(struct sps_leak_series *ls, const struct axis *tree_ax,
                                 const struct sps__process_series *ps, const struct sps__series *tree,
                                 int64_t slack_ns, double allowance_bytes) {
    const struct sps__series *s = &ps->rss_bytes;
    int64_t first = s->first_ns, last = s->last_ns, tree_first = tree->first_ns, tree_last = tree->last_ns;
    resident_span(s, &first, &last);
    resident_span(tree, &tree_first, &tree_last);
    struct axis ax = time_axis(tree_ax->origin_ns, first, last);
    int rc = judge_series(ls, &ax, s, allowance_bytes);
    if (rc != 0 || ls->verdict != SPS_LEAK_UNKNOWN || !tree->n)
        return rc;
    if (first <= tree_first + slack_ns && last + slack_ns >= tree_last)
        return 0; /* there all along: the reason is the tree's */
    char times[32];
    if (s->n == 1)
        snprintf(times, sizeof times, "once");
    else
        snprintf(times, sizeof times, "%llu times", (unsigned long long)s->n);
    snprintf(ls->reason, sizeof ls->reason,
             "short-lived: in the tree for %.3g s of its %.3g s, read %s (the trend needs %g s after the "
             "process's own warm-up, and %d readings)",
             (double)(last - first) * 1e-9, (double)(tree_last - tree_first) * 1e-9, times,
             SPS_LEAK_TIME_MIN_SECONDS, SPS_LEAK_TIME_MIN_POINTS);
    return 0;
}

/* Time as the run's axis.  The tree's RSS sum is read every interval from
 * the command's start to its end: its readings that hold memory bound the
 * run. */
static void run_axis_time(const struct sps__sampler_result *sampler, struct sps_leaks *out, struct axis *ax) {
    const struct sps__series *tree = &sampler->host[SPS_M_WORKLOAD_RSS_BYTES];
    int64_t first = sampler->started_ns, last = first;
    if (resident_span(tree, &first, &last) != 0 && tree->n)
        first = last = tree->first_ns;
    *ax = time_axis(sampler->started_ns ? sampler->started_ns : first, first, last);
    out->axis = SPS_LEAK_AXIS_TIME;
    out->warmup_seconds = (double)(ax->from_ns - first) * 1e-9;
    out->seconds_analysed = (double)(ax->to_ns - ax->from_ns) * 1e-9;
}

/* The run's axis: the main step stream's steps after warm-up (out's step
 * stream and counts set), or, with no step or too few for a trend
 * (SPS_LEAK_MIN_STEPS), time over the tree's readings (out's seconds set,
 * and the few steps' counts).  ax->rows is owned.  Returns 0 or SPS_ENOMEM. */
static int run_axis(const struct sps_run *run, const struct sps__sampler_result *sampler, struct sps_leaks *out,
                    struct axis *ax) {
    size_t proc;
    int tid;
    long name;
    memset(ax, 0, sizeof *ax);
    out->warmup_seconds = out->seconds_analysed = NAN;
    if (main_stream(run, &proc, &tid, &name) != 0) {
        run_axis_time(sampler, out, ax);
        return 0;
    }
    out->axis = SPS_LEAK_AXIS_STEPS;
    out->pid = run->procs[proc].pid;
    out->tid = tid;
    if (name >= 0 && (size_t)name < run->nnames)
        snprintf(out->step_name, sizeof out->step_name, "%s", run->names[name].name);
    ax->kind = SPS_LEAK_AXIS_STEPS;
    ax->rows = malloc(run->nsteps * sizeof *ax->rows);
    if (!ax->rows)
        return SPS_ENOMEM;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (r->process != proc || r->tid != tid || r->name != name)
            continue;
        if (r->warmup)
            out->warmup_steps++;
        else
            ax->rows[ax->n++] = r;
    }
    out->steps_analysed = ax->n;
    if (ax->n < SPS_LEAK_MIN_STEPS) {
        /* Too few steps for a trend against them (a run of a few long
         * steps): time, which the sampler read all along, judges instead;
         * the counts stay, to say why. */
        free(ax->rows);
        ax->rows = NULL;
        size_t warmup = out->warmup_steps, analysed = out->steps_analysed;
        out->pid = out->tid = -1;
        out->step_name[0] = '\0';
        run_axis_time(sampler, out, ax);
        out->warmup_steps = warmup;
        out->steps_analysed = analysed;
    }
    return 0;
}

/* The summary index of the value torch.cuda's allocated memory is
 * recorded as, or -1 when the run has none. */
static long torch_value_index(const struct sps_run *run) {
    for (size_t i = 0; i < run->nnames; i++)
        if (run->names[i].kind == SPS_KIND_VALUE && strcmp(run->names[i].name, SPS_LEAK_TORCH_VALUE) == 0)
            return (long)i;
    return -1;
}

/* One process's torch.cuda series on the step axis: the readings of the
 * stream (proc, tid, name)'s rows after warm-up, each at the row's index
 * + 1, where a reading at that step's end stands. */
static int judge_torch_stream(const struct sps_run *run, long idx, size_t proc, int tid, long name,
                              struct sps_leak_series *ls) {
    double *xs = malloc((run->nsteps ? run->nsteps : 1) * sizeof *xs);
    double *ys = malloc((run->nsteps ? run->nsteps : 1) * sizeof *ys);
    if (!xs || !ys) {
        free(xs);
        free(ys);
        return SPS_ENOMEM;
    }
    size_t n = 0, steps = 0;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (r->process != proc || r->tid != tid || r->name != name || r->warmup)
            continue;
        steps++;
        if (isnan(r->by_name[idx]))
            continue; /* a step that ended with nothing read (CUDA not yet initialised) */
        xs[n] = (double)r->index + 1.0;
        ys[n++] = r->by_name[idx];
    }
    int rc = sps__leak_judge(xs, ys, n, steps, 0.0, ls);
    free(xs);
    free(ys);
    return rc;
}

/*
 * torch.cuda's allocated memory, recorded at each step's end by the
 * Python module: one series per process that recorded it (a rank of a
 * distributed job has its GPU, and its leak, of its own), on that
 * process's steps: the main stream's in the main process, else the
 * stream of the first of its rows that carries a reading.  It holds no
 * byte of stepscope's (no ring allowance); the growth that matters, the
 * larger of 1 MiB and 1% of its median level, scales with the model.  On
 * the time axis (the main stream has too few steps) it is not judged, and
 * that is said.
 */
static int judge_torch(const struct sps_run *run, const struct axis *ax, struct sps_leaks *out) {
    long idx = torch_value_index(run);
    if (idx < 0)
        return 0;
    for (size_t pi = 0; pi < run->nprocs; pi++) {
        long first = -1;
        for (size_t i = 0; i < run->nsteps && first < 0; i++)
            if (run->steps[i].process == pi && !isnan(run->steps[i].by_name[idx]))
                first = (long)i;
        if (first < 0)
            continue;
        struct sps_leak_series *ls = add_series(out, SPS_LEAK_TORCH_SERIES, SPS_LEAK_SCOPE_TORCH);
        if (!ls)
            return SPS_ENOMEM;
        ls->pid = run->procs[pi].pid;
        int rc;
        if (ax->kind != SPS_LEAK_AXIS_STEPS) {
            double none = 0;
            rc = sps__leak_judge(&none, &none, 0, out->steps_analysed, 0.0, ls);
            ls->axis = SPS_LEAK_AXIS_TIME;
            snprintf(ls->reason, sizeof ls->reason,
                     "read at step ends, and the main step stream has only %zu steps after warm-up (the trend "
                     "needs %d)",
                     out->steps_analysed, SPS_LEAK_MIN_STEPS);
        } else {
            const struct sps_step_row *r = &run->steps[first];
            int main_proc = ax->n && ax->rows[0]->process == pi;
            rc = main_proc ? judge_torch_stream(run, idx, pi, ax->rows[0]->tid, ax->rows[0]->name, ls)
                           : judge_torch_stream(run, idx, pi, r->tid, r->name, ls);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The tree's series, each GPU's, torch.cuda's, then each process's. */
static int judge_all(const struct sps_run *run, const struct sps__sampler_result *sampler, const struct axis *ax,
                     struct sps_leaks *out) {
    double all_rings = record_ring_bytes(run);
    int rc = ax->kind == SPS_LEAK_AXIS_STEPS ? judge_tree_on_steps(out, ax, sampler, all_rings)
                                             : judge_tree_on_time(out, ax, sampler, all_rings);
    struct sps_leak_series *ls;
    for (int g = 0; rc == 0 && g < sampler->ngpus; g++) {
        /* The workload's own share of the GPU when the driver tells it;
         * else the device's used memory, which other processes may move. */
        const struct sps__gpu_series *gs = &sampler->gpu[g];
        int own = gs->m[SPS_M_GPU_WORKLOAD_MEMORY_BYTES].n > 0;
        ls = add_series(out, own ? "gpu_workload_memory_bytes" : "gpu_memory_used_bytes", SPS_LEAK_SCOPE_GPU);
        if (!ls)
            return SPS_ENOMEM;
        ls->gpu = gs->index;
        rc = judge_series(ls, ax, &gs->m[own ? SPS_M_GPU_WORKLOAD_MEMORY_BYTES : SPS_M_GPU_MEMORY_USED_BYTES], 0.0);
    }
    if (rc == 0)
        rc = judge_torch(run, ax, out);
    out->processes_left_out = sampler->processes_left_out;
    const struct sps__series *tree = &sampler->host[SPS_M_WORKLOAD_RSS_BYTES];
    int64_t slack_ns = (int64_t)sampler->machine_interval_ms * 1000000;
    for (int k = 0; rc == 0 && k < sampler->nprocesses; k++) {
        const struct sps__process_series *ps = &sampler->process[k];
        if (!ps->rss_bytes.n)
            continue;
        ls = add_series(out, "process_rss_bytes", SPS_LEAK_SCOPE_PROCESS);
        if (!ls)
            return SPS_ENOMEM;
        ls->pid = ps->pid;
        memcpy(ls->comm, ps->comm, sizeof ls->comm);
        double rings = process_ring_bytes(run, ps->pid, all_rings);
        rc = ax->kind == SPS_LEAK_AXIS_STEPS ? judge_process_on_steps(ls, ax, ps, tree, rings)
                                             : judge_process_on_time(ls, ax, ps, tree, slack_ns, rings);
    }
    return rc;
}

/* A series that cannot be judged (a short-lived worker, a GPU read too
 * rarely) does not make the run unknown when others were judged: the
 * run's verdict rests on those, and the reason counts the rest. */
static void run_verdict(struct sps_leaks *out) {
    size_t leaks = 0, clean = 0;
    for (size_t i = 0; i < out->nseries; i++) {
        leaks += out->series[i].verdict == SPS_LEAK_FOUND;
        clean += out->series[i].verdict == SPS_LEAK_NONE;
    }
    size_t unknown = out->nseries - leaks - clean;
    const char *against = out->axis == SPS_LEAK_AXIS_TIME ? "over time" : "with the step number";
    char unjudged[64] = "";
    if (unknown)
        snprintf(unjudged, sizeof unjudged, " (%zu could not be judged)", unknown);
    if (leaks) {
        out->verdict = SPS_LEAK_FOUND;
        snprintf(out->reason, sizeof out->reason, "%zu of %zu memory series grow %s%s", leaks, out->nseries,
                 against, unjudged);
    } else if (clean) {
        out->verdict = SPS_LEAK_NONE;
        snprintf(out->reason, sizeof out->reason, "%zu of %zu memory series judged, none grows %s", clean,
                 out->nseries, against);
    } else {
        out->verdict = SPS_LEAK_UNKNOWN;
        snprintf(out->reason, sizeof out->reason, "no memory series could be judged%s (each series says why)",
                 out->axis == SPS_LEAK_AXIS_TIME ? " against time" : "");
    }
}

int sps__leaks_analyze(const struct sps_run *run, const struct sps__sampler_result *sampler, struct sps_leaks *out) {
    memset(out, 0, sizeof *out);
    out->computed = 1;
    out->verdict = SPS_LEAK_UNKNOWN;
    out->pid = out->tid = -1;
    out->warmup_seconds = out->seconds_analysed = NAN;
    if (!sampler && torch_value_index(run) < 0) {
        snprintf(out->reason, sizeof out->reason, "no sampler ran: no memory readings");
        return 0;
    }
    /* no sampler (a process's own report): torch.cuda's memory, read at
     * step ends, is judged alone; the machine's series are said missing */
    static const struct sps__sampler_result no_sampler;
    const struct sps__sampler_result *r = sampler ? sampler : &no_sampler;
    out->tree_pid = r->tree_pid;
    struct axis ax;
    int rc = run_axis(run, r, out, &ax);
    if (rc == 0)
        rc = sampler ? judge_all(run, sampler, &ax, out) : judge_torch(run, &ax, out);
    free(ax.rows);
    run_verdict(out);
    return rc;
}

/* ----------------------------------------------------------------- JSON */

const char *sps__leak_scope_name(enum sps_leak_scope scope) {
    static const char *const scope_names[] = {
        [SPS_LEAK_SCOPE_TREE] = "workload process tree",
        [SPS_LEAK_SCOPE_GPU] = "gpu",
        [SPS_LEAK_SCOPE_PROCESS] = "process",
        [SPS_LEAK_SCOPE_TORCH] = "torch.cuda",
    };
    return (unsigned)scope < sizeof scope_names / sizeof scope_names[0] ? scope_names[scope] : "unknown";
}

void sps__leaks_free(struct sps_leaks *l) {
    free(l->series);
    memset(l, 0, sizeof *l);
}
