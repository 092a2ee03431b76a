/*
 * leaks.c - memory growth against the step number (see leaks.h and
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

/* The 97.5% quantile of the standard normal: a two-sided 95% interval. */
#define Z_95 1.959963984540054

/* The streams a run may hold that the main one is chosen among; a run
 * with more (step names x threads x processes) is judged on the largest
 * of the first ones seen, which is still a real stream. */
#define MAX_STREAMS 256

const char *sps__leak_rule_name(enum sps_leak_rule r) {
    switch (r) {
    case SPS_LEAK_RULE_INTERVAL: return "interval";
    case SPS_LEAK_RULE_GROWTH: return "growth";
    case SPS_LEAK_RULE_PERSISTENCE: return "persistence";
    case SPS_LEAK_RULE_ALL: return "all";
    default: return NULL;
    }
}

const char *sps__leak_verdict_name(enum sps_leak_verdict v) {
    switch (v) {
    case SPS_LEAK_FOUND:
        return "leak";
    case SPS_LEAK_NONE:
        return "no leak";
    default:
        return "unknown";
    }
}

/* The median of v[0..n) without touching v; NAN when out of memory. */
static double median_of(const double *v, size_t n) {
    double *copy = malloc(n * sizeof *copy);
    if (!copy)
        return NAN;
    memcpy(copy, v, n * sizeof *copy);
    double m = sps__median_inplace(copy, n);
    free(copy);
    return m;
}

int sps__theil_sen(const double *x, const double *y, size_t n, double *slope, double *lo, double *hi) {
    *slope = *lo = *hi = NAN;
    if (n < 2)
        return -1;
    double *slopes = malloc(n * (n - 1) / 2 * sizeof *slopes);
    if (!slopes)
        return SPS_ENOMEM;
    size_t npairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (x[j] != x[i]) /* a pair at one step says nothing about the slope */
                slopes[npairs++] = (y[j] - y[i]) / (x[j] - x[i]);
    if (npairs < 2) {
        free(slopes);
        return -1;
    }
    qsort(slopes, npairs, sizeof *slopes, sps__cmp_double);
    *slope = npairs % 2 ? slopes[npairs / 2] : 0.5 * (slopes[npairs / 2 - 1] + slopes[npairs / 2]);
    /* Sen (1968): the interval's ends are order statistics of the slopes,
     * at ranks set by Kendall's S's normal approximation.  Ranks are
     * 1-based; rounding them outwards keeps the coverage at least 95%. */
    double dn = (double)n;
    double c = Z_95 * sqrt(dn * (dn - 1) * (2 * dn + 5) / 18.0);
    double rank_lo = floor(((double)npairs - c) / 2.0);
    double rank_hi = ceil(((double)npairs + c) / 2.0) + 1.0;
    if (rank_lo < 1)
        rank_lo = 1;
    if (rank_hi > (double)npairs)
        rank_hi = (double)npairs;
    *lo = slopes[(size_t)rank_lo - 1];
    *hi = slopes[(size_t)rank_hi - 1];
    free(slopes);
    return 0;
}

int sps__leak_judge(const double *x, const double *y, size_t n, size_t steps_analysed, double allowance_bytes,
                    struct sps_leak_series *out) {
    out->verdict = SPS_LEAK_UNKNOWN;
    out->rule = SPS_LEAK_RULE_OTHER;
    out->points = n;
    out->steps_analysed = steps_analysed;
    out->first_step = n ? x[0] : NAN;
    out->last_step = n ? x[n - 1] : NAN;
    out->slope_bytes_per_step = out->ci95_low = out->ci95_high = NAN;
    out->growth_bytes = out->median_bytes = out->min_growth_bytes = NAN;
    out->first_segment_median_bytes = out->last_segment_median_bytes = NAN;
    out->rising_segments = -1;
    out->allowance_bytes = allowance_bytes;
    if (steps_analysed < SPS_LEAK_MIN_STEPS) {
        snprintf(out->reason, sizeof out->reason, "only %zu steps after warm-up (the trend needs %d)", steps_analysed,
                 SPS_LEAK_MIN_STEPS);
        return 0;
    }
    if (n < SPS_LEAK_MIN_POINTS) {
        char readings[40];
        if (n == 0)
            snprintf(readings, sizeof readings, "no readings");
        else
            snprintf(readings, sizeof readings, "only %zu reading%s", n, n == 1 ? "" : "s");
        snprintf(out->reason, sizeof out->reason,
                 "%s during the %zu steps after warm-up (the trend needs %d): a longer run, or a "
                 "shorter sampling interval, gives enough",
                 readings, steps_analysed, SPS_LEAK_MIN_POINTS);
        return 0;
    }
    out->median_bytes = median_of(y, n);
    if (isnan(out->median_bytes))
        return SPS_ENOMEM;
    int rc = sps__theil_sen(x, y, n, &out->slope_bytes_per_step, &out->ci95_low, &out->ci95_high);
    if (rc == SPS_ENOMEM)
        return rc;
    if (rc != 0) {
        snprintf(out->reason, sizeof out->reason, "the readings all fall within one step: no trend against steps");
        return 0;
    }
    out->growth_bytes = out->slope_bytes_per_step * (double)steps_analysed;
    double fraction = SPS_LEAK_MIN_GROWTH_FRACTION * fabs(out->median_bytes);
    out->min_growth_bytes =
        (fraction > SPS_LEAK_MIN_GROWTH_BYTES ? fraction : SPS_LEAK_MIN_GROWTH_BYTES) + allowance_bytes;

    /* Persistence: cut the readings into consecutive segments and ask that
     * each segment's median sit above the previous one's by a fair share
     * of what the trend predicts between them.  A steady leak passes every
     * step; a sawtooth (each segment holds whole teeth), a plateau (the
     * later segments are level) or a one-off allocation (one step holds
     * the jump) fails most of them, although Theil-Sen alone can give each
     * of those a positive slope. */
    double seg_x[SPS_LEAK_SEGMENTS], seg_y[SPS_LEAK_SEGMENTS];
    double *buf = malloc(n * sizeof *buf);
    if (!buf)
        return SPS_ENOMEM;
    for (int s = 0; s < SPS_LEAK_SEGMENTS; s++) {
        size_t from = n * (size_t)s / SPS_LEAK_SEGMENTS, to = n * (size_t)(s + 1) / SPS_LEAK_SEGMENTS;
        memcpy(buf, x + from, (to - from) * sizeof *buf);
        seg_x[s] = sps__median_inplace(buf, to - from);
        memcpy(buf, y + from, (to - from) * sizeof *buf);
        seg_y[s] = sps__median_inplace(buf, to - from);
    }
    free(buf);
    out->first_segment_median_bytes = seg_y[0];
    out->last_segment_median_bytes = seg_y[SPS_LEAK_SEGMENTS - 1];
    int rising = 0;
    for (int s = 0; s + 1 < SPS_LEAK_SEGMENTS; s++) {
        double predicted = out->slope_bytes_per_step * (seg_x[s + 1] - seg_x[s]);
        if (predicted > 0 && seg_y[s + 1] - seg_y[s] >= SPS_LEAK_SEGMENT_RISE * predicted)
            rising++;
    }
    out->rising_segments = rising;

    if (!(out->ci95_low > 0)) {
        out->verdict = SPS_LEAK_NONE;
        out->rule = SPS_LEAK_RULE_INTERVAL;
        snprintf(out->reason, sizeof out->reason,
                 "the slope's 95%% interval (%.4g to %.4g bytes/step) does not exclude no growth", out->ci95_low,
                 out->ci95_high);
    } else if (out->growth_bytes < out->min_growth_bytes) {
        out->verdict = SPS_LEAK_NONE;
        out->rule = SPS_LEAK_RULE_GROWTH;
        snprintf(out->reason, sizeof out->reason,
                 "growth over the %zu steps (%.4g bytes) is under the %.4g bytes that matter (the larger of 1 MiB "
                 "and 1%% of the median level, plus %.4g bytes of stepscope's own rings)",
                 steps_analysed, out->growth_bytes, out->min_growth_bytes, allowance_bytes);
    } else if (rising < SPS_LEAK_SEGMENTS - 1) {
        out->verdict = SPS_LEAK_NONE;
        out->rule = SPS_LEAK_RULE_PERSISTENCE;
        snprintf(out->reason, sizeof out->reason,
                 "the rise does not persist: %d of %d segments rise with the trend (a sawtooth, a plateau or a "
                 "one-off allocation)",
                 rising, SPS_LEAK_SEGMENTS - 1);
    } else {
        out->verdict = SPS_LEAK_FOUND;
        out->rule = SPS_LEAK_RULE_ALL;
        snprintf(out->reason, sizeof out->reason,
                 "grows %.4g bytes/step (95%% CI %.4g to %.4g) over %zu steps, every one of %d segments higher "
                 "than the last",
                 out->slope_bytes_per_step, out->ci95_low, out->ci95_high, steps_analysed, SPS_LEAK_SEGMENTS);
    }
    return 0;
}

/* ------------------------------------------------------- the step axis */

/* The main step stream's post-warm-up rows, oldest first. */
struct step_axis {
    const struct sps_step_row **rows;
    size_t n;
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
static double step_at(const struct step_axis *ax, int64_t t) {
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

/* Each of a series' points inside the axis as (step number, mean).  A
 * point that merged several readings stands at the middle of the time it
 * covers.  Returns the count, or (size_t)-1 when out of memory. */
static size_t series_on_steps(const struct sps__series *s, const struct step_axis *ax, double **xs, double **ys) {
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
        double x = step_at(ax, t);
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

static int judge_series(struct sps_leak_series *ls, const struct step_axis *ax, const struct sps__series *s,
                        double allowance_bytes) {
    double *xs, *ys;
    size_t n = series_on_steps(s, ax, &xs, &ys);
    if (n == (size_t)-1)
        return SPS_ENOMEM;
    int rc = sps__leak_judge(xs, ys, n, ax->n, allowance_bytes, ls);
    if (rc == 0 && n == 0 && s->n == 0)
        snprintf(ls->reason, sizeof ls->reason, "no readings: the metric was unavailable");
    free(xs);
    free(ys);
    return rc;
}

/*
 * The tree's memory: its PSS (pages its processes share copy-on-write count
 * once, so a worker that forks does not look like growth) when the sampler
 * read it SPS_LEAK_MIN_POINTS times within the analysed steps; else its RSS
 * summed over processes.  PSS is read only as often as its cost allows, so a
 * short run of a large process may have too few readings of it.  l->tree_note
 * says which and why.
 */
static int judge_tree(struct sps_leaks *l, const struct step_axis *ax, const struct sps__sampler_result *r,
                      double allowance_bytes) {
    const struct sps__series *pss = &r->host[SPS_M_WORKLOAD_PSS_BYTES];
    size_t pss_points = 0;
    if (pss->n) {
        double *xs, *ys;
        pss_points = series_on_steps(pss, ax, &xs, &ys);
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

/* A process's own RSS.  One that was in the tree for part of the analysed
 * steps only (a worker started late, or gone early) and so has too few
 * readings is unknown for that reason, which its reason says.  Whether it
 * was there all along is judged against the tree's readings (same ticks):
 * the sampler reads every machine interval, so the first and last readings
 * of a process that lived through the steps can fall inside them. */
static int judge_process(struct sps_leaks *l, const struct step_axis *ax, const struct sps__process_series *ps,
                         const struct sps__series *tree, double allowance_bytes) {
    struct sps_leak_series *ls = add_series(l, "process_rss_bytes", SPS_LEAK_SCOPE_PROCESS);
    if (!ls)
        return SPS_ENOMEM;
    ls->pid = ps->pid;
    memcpy(ls->comm, ps->comm, sizeof ls->comm);
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

int sps__leaks_analyze(const struct sps_run *run, const struct sps__sampler_result *sampler, struct sps_leaks *out) {
    memset(out, 0, sizeof *out);
    out->computed = 1;
    out->verdict = SPS_LEAK_UNKNOWN;
    out->pid = out->tid = -1;
    if (!sampler) {
        snprintf(out->reason, sizeof out->reason, "no sampler ran: no memory readings");
        return 0;
    }
    out->tree_pid = sampler->tree_pid;
    size_t proc;
    int tid;
    long name;
    if (main_stream(run, &proc, &tid, &name) != 0) {
        snprintf(out->reason, sizeof out->reason, "no steps were recorded: memory has no step axis");
        return 0;
    }
    out->pid = run->procs[proc].pid;
    out->tid = tid;
    if (name >= 0 && (size_t)name < run->nnames)
        snprintf(out->step_name, sizeof out->step_name, "%s", run->names[name].name);

    struct step_axis ax = {0};
    ax.rows = malloc(run->nsteps * sizeof *ax.rows);
    if (!ax.rows)
        return SPS_ENOMEM;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (r->process != proc || r->tid != tid || r->name != name)
            continue;
        if (r->warmup)
            out->warmup_steps++;
        else
            ax.rows[ax.n++] = r;
    }
    out->steps_analysed = ax.n;

    double all_rings = record_ring_bytes(run);
    int rc = judge_tree(out, &ax, sampler, all_rings);
    struct sps_leak_series *ls;
    for (int g = 0; rc == 0 && g < sampler->ngpus; g++) {
        /* The workload's own share of the GPU when the driver tells it;
         * else the device's used memory, which other processes may move. */
        const struct sps__gpu_series *gs = &sampler->gpu[g];
        int own = gs->m[SPS_M_GPU_WORKLOAD_MEMORY_BYTES].n > 0;
        ls = add_series(out, own ? "gpu_workload_memory_bytes" : "gpu_memory_used_bytes", SPS_LEAK_SCOPE_GPU);
        if (!ls) {
            rc = SPS_ENOMEM;
            break;
        }
        ls->gpu = gs->index;
        rc = judge_series(ls, &ax, &gs->m[own ? SPS_M_GPU_WORKLOAD_MEMORY_BYTES : SPS_M_GPU_MEMORY_USED_BYTES], 0.0);
    }
    out->processes_left_out = sampler->processes_left_out;
    for (int k = 0; rc == 0 && k < sampler->nprocesses; k++) {
        const struct sps__process_series *ps = &sampler->process[k];
        if (ps->rss_bytes.n)
            rc = judge_process(out, &ax, ps, &sampler->host[SPS_M_WORKLOAD_RSS_BYTES],
                               process_ring_bytes(run, ps->pid, all_rings));
    }
    free(ax.rows);

    /* A series that cannot be judged (a short-lived worker, a GPU read too
     * rarely) does not make the run unknown when others were judged: the
     * run's verdict rests on those, and the reason counts the rest. */
    size_t leaks = 0, clean = 0;
    for (size_t i = 0; i < out->nseries; i++) {
        leaks += out->series[i].verdict == SPS_LEAK_FOUND;
        clean += out->series[i].verdict == SPS_LEAK_NONE;
    }
    size_t unknown = out->nseries - leaks - clean;
    char unjudged[64] = "";
    if (unknown)
        snprintf(unjudged, sizeof unjudged, " (%zu could not be judged)", unknown);
    if (leaks) {
        out->verdict = SPS_LEAK_FOUND;
        snprintf(out->reason, sizeof out->reason, "%zu of %zu memory series grow with the step number%s", leaks,
                 out->nseries, unjudged);
    } else if (clean) {
        out->verdict = SPS_LEAK_NONE;
        snprintf(out->reason, sizeof out->reason, "%zu of %zu memory series judged, none grows with the step number",
                 clean, out->nseries);
    } else {
        snprintf(out->reason, sizeof out->reason, "no memory series could be judged (each series says why)");
    }
    return rc;
}

/* ----------------------------------------------------------------- JSON */

const char *sps__leak_scope_name(enum sps_leak_scope scope) {
    static const char *const scope_names[] = {
        [SPS_LEAK_SCOPE_TREE] = "workload process tree",
        [SPS_LEAK_SCOPE_GPU] = "gpu",
        [SPS_LEAK_SCOPE_PROCESS] = "process",
    };
    return (unsigned)scope < sizeof scope_names / sizeof scope_names[0] ? scope_names[scope] : "unknown";
}

void sps__leaks_free(struct sps_leaks *l) {
    free(l->series);
    memset(l, 0, sizeof *l);
}
