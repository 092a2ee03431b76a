/*
 * straggler.c - name the rank the others wait for (see straggler.h).
 *
 * Three phases: gather each rank's steps (one stream per rank, matched
 * across ranks by step number), measure each step's compute and excess,
 * then judge windows and the run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/straggler.h"
#include "model/run.h"
#include "stats.h"
#include "stepscope.h"


const char *sps__straggler_verdict_name(int verdict) {
    static const char *const names[SPS_STRAGGLER_VERDICTS] = {"not_distributed", "no_wait", "too_few_steps", "none",
                                                              "found"};
    return verdict >= 0 && verdict < SPS_STRAGGLER_VERDICTS ? names[verdict] : NULL;
}

/* ------------------------------------------------------ gathering steps */

/* The rows of one (process, thread, step name): a rank's candidate. */
struct stream {
    size_t process;
    int tid;
    long name;
    size_t count;
};

/* Every rank's steps, matched: row[s * nranks + r] is rank r's row of
 * judged step s. */
struct matched {
    size_t nranks;
    size_t nsteps;
    const struct sps_step_row **row;
};

static int is_step_row(const struct sps_run *run, const struct sps_step_row *row) {
    return !row->warmup && row->name >= 0 && (size_t)row->name < run->nnames &&
           run->names[row->name].kind == SPS_KIND_STEP && row->process < run->nprocs &&
           run->procs[row->process].rank >= 0;
}

/* The streams of ranked processes and how many rows each has. */
static int list_streams(const struct sps_run *run, struct stream **out, size_t *n) {
    struct stream *list = NULL;
    size_t count = 0, cap = 0;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *row = &run->steps[i];
        if (!is_step_row(run, row))
            continue;
        size_t k = 0;
        while (k < count && !(list[k].process == row->process && list[k].tid == row->tid && list[k].name == row->name))
            k++;
        if (k == count) {
            if (count == cap) {
                size_t want = cap ? 2 * cap : 16;
                struct stream *grown = realloc(list, want * sizeof *grown);
                if (!grown) {
                    free(list);
                    return SPS_ENOMEM;
                }
                list = grown;
                cap = want;
            }
            list[count++] = (struct stream){row->process, row->tid, row->name, 0};
        }
        list[k].count++;
    }
    *out = list;
    *n = count;
    return 0;
}

/* One entry per rank in s->ranks and the stream that stands for it (the
 * one with the most steps; then the lower pid): chosen[r]. */
static int choose_ranks(const struct sps_run *run, const struct stream *streams, size_t nstreams,
                        struct sps_straggler *s, const struct stream **chosen) {
    s->ranks = calloc(nstreams ? nstreams : 1, sizeof *s->ranks);
    if (!s->ranks)
        return SPS_ENOMEM;
    for (size_t k = 0; k < nstreams; k++) {
        const struct sps_process_data *p = &run->procs[streams[k].process];
        size_t r = 0;
        while (r < s->nranks && s->ranks[r].rank != p->rank)
            r++;
        if (r == s->nranks) {
            s->nranks++;
            s->ranks[r].rank = p->rank;
        } else if (chosen[r]->count > streams[k].count ||
                   (chosen[r]->count == streams[k].count && run->procs[chosen[r]->process].pid <= p->pid)) {
            continue;
        }
        chosen[r] = &streams[k];
        s->ranks[r].pid = p->pid;
        snprintf(s->ranks[r].host, sizeof s->ranks[r].host, "%s", p->hostname);
        s->ranks[r].steps = streams[k].count;
    }
    /* by rank number, chosen[] along */
    for (size_t i = 1; i < s->nranks; i++)
        for (size_t j = i; j > 0 && s->ranks[j - 1].rank > s->ranks[j].rank; j--) {
            struct sps_straggler_rank t = s->ranks[j];
            s->ranks[j] = s->ranks[j - 1];
            s->ranks[j - 1] = t;
            const struct stream *c = chosen[j];
            chosen[j] = chosen[j - 1];
            chosen[j - 1] = c;
        }
    return 0;
}

static int by_index(const void *a, const void *b) {
    const struct sps_step_row *x = *(const struct sps_step_row *const *)a, *y = *(const struct sps_step_row *const *)b;
    return (x->index > y->index) - (x->index < y->index);
}

/* The rows of stream c, by step number. */
static const struct sps_step_row **rows_of(const struct sps_run *run, const struct stream *c) {
    const struct sps_step_row **rows = malloc((c->count ? c->count : 1) * sizeof *rows);
    if (!rows)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < run->nsteps && n < c->count; i++) {
        const struct sps_step_row *row = &run->steps[i];
        if (is_step_row(run, row) && row->process == c->process && row->tid == c->tid && row->name == c->name)
            rows[n++] = row;
    }
    qsort(rows, n, sizeof *rows, by_index);
    return rows;
}

static const struct sps_step_row *find_index(const struct sps_step_row **rows, size_t n, uint64_t index) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid]->index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && rows[lo]->index == index ? rows[lo] : NULL;
}

/* The steps every rank completed, by step number. */
static int match_steps(const struct sps_run *run, const struct stream **chosen, struct matched *m) {
    size_t nr = m->nranks;
    const struct sps_step_row ***rows = calloc(nr, sizeof *rows);
    int rc = rows ? 0 : SPS_ENOMEM;
    for (size_t r = 0; !rc && r < nr; r++)
        if (!(rows[r] = rows_of(run, chosen[r])))
            rc = SPS_ENOMEM;
    if (!rc && !(m->row = malloc((chosen[0]->count ? chosen[0]->count : 1) * nr * sizeof *m->row)))
        rc = SPS_ENOMEM;
    for (size_t i = 0; !rc && i < chosen[0]->count; i++) {
        const struct sps_step_row **at = &m->row[m->nsteps * nr];
        size_t r = 0;
        at[0] = rows[0][i];
        for (r = 1; r < nr && (at[r] = find_index(rows[r], chosen[r]->count, at[0]->index)); r++)
            ;
        if (r == nr)
            m->nsteps++;
    }
    for (size_t r = 0; rows && r < nr; r++)
        free(rows[r]);
    free(rows);
    return rc;
}

/* ------------------------------------------------------ per-step figures */

/* Each (judged step, rank): ms */
struct figures {
    double *step, *wait, *compute, *excess;
    size_t nwait_cells; /* cells where some rank recorded a wait */
};

static double cell_ms(const struct sps_step_row *row, size_t name) {
    double v = row->by_name[name];
    return isnan(v) ? 0.0 : v * 1e3;
}

/* The median of sorted[0..n) with one element equal to v left out. */
static double median_without(const double *sorted, size_t n, double v) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t m = n - 1;
#define AT(k) ((k) < lo ? sorted[(k)] : sorted[(k) + 1])
    return m % 2 ? AT(m / 2) : (AT(m / 2 - 1) + AT(m / 2)) / 2;
#undef AT
}

/* out[r] = x[r] - the median of the others' x, for the nr values x. */
static void excess_over_others(const double *x, size_t nr, double *sorted, double *out) {
    memcpy(sorted, x, nr * sizeof *x);
    qsort(sorted, nr, sizeof *sorted, sps__cmp_double);
    for (size_t r = 0; r < nr; r++)
        out[r] = x[r] - median_without(sorted, nr, x[r]);
}

static int measure(const struct sps_run *run, const struct matched *m, struct figures *f) {
    size_t n = m->nsteps * m->nranks;
    f->step = malloc((n ? n : 1) * sizeof *f->step);
    f->wait = malloc((n ? n : 1) * sizeof *f->wait);
    f->compute = malloc((n ? n : 1) * sizeof *f->compute);
    f->excess = malloc((n ? n : 1) * sizeof *f->excess);
    double *sorted = malloc(m->nranks * sizeof *sorted);
    if (!f->step || !f->wait || !f->compute || !f->excess || !sorted) {
        free(sorted);
        return SPS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct sps_step_row *row = m->row[i];
        double wait = 0;
        int waited = 0;
        for (size_t k = 0; k < run->nnames; k++)
            if (run->names[k].kind == SPS_KIND_WAIT && !isnan(row->by_name[k])) {
                wait += row->by_name[k] * 1e3;
                waited = 1;
            }
        f->step[i] = (double)(row->end_ns - row->start_ns) / 1e6;
        f->wait[i] = wait;
        f->compute[i] = f->step[i] - wait;
        f->nwait_cells += (size_t)waited;
    }
    for (size_t s = 0; s < m->nsteps; s++)
        excess_over_others(&f->compute[s * m->nranks], m->nranks, sorted, &f->excess[s * m->nranks]);
    free(sorted);
    return 0;
}

static void figures_free(struct figures *f) {
    free(f->step);
    free(f->wait);
    free(f->compute);
    free(f->excess);
}

/* ------------------------------------------------------------- judging */

/* Scratch for the figures of a window or of the run. */
struct scratch {
    double *a, *b, *sorted, *x, *ex;
    double *sd, *sd_sorted, *wait, *wait_sorted; /* per rank, one window */
};

/* The median of column r of v (rows [first, first + n) of nr columns). */
static double column_median(const double *v, size_t nr, size_t first, size_t n, size_t r, double *tmp) {
    for (size_t s = 0; s < n; s++)
        tmp[s] = v[(first + s) * nr + r];
    return sps__median_inplace(tmp, n);
}

/* The mean of v[0..n) less its trim smallest and trim largest values
 * (v is sorted in place). */
static double trimmed_mean(double *v, size_t n, size_t trim) {
    if (trim && n > 2 * trim)
        qsort(v, n, sizeof *v, sps__cmp_double);
    else
        trim = 0;
    double sum = 0;
    for (size_t i = trim; i < n - trim; i++)
        sum += v[i];
    return n > 2 * trim ? sum / (double)(n - 2 * trim) : NAN;
}

/* Steps a window's trimmed mean leaves out at each end: one in ten, so
 * that one step's noise (a rank descheduled once) does not count. */
static size_t window_trim(size_t n) {
    size_t t = n / SPS_STRAGGLER_TRIM_PER;
    return t ? t : (n >= SPS_STRAGGLER_MIN_STEPS ? 1 : 0);
}

/* The trimmed mean of column r of v over rows [first, first + n). */
static double column_mean(const double *v, size_t nr, size_t first, size_t n, size_t r, size_t trim, double *tmp) {
    for (size_t s = 0; s < n; s++)
        tmp[s] = v[(first + s) * nr + r];
    return trimmed_mean(tmp, n, trim);
}

/* The standard deviation of column r of v over rows [first, first + n). */
static double column_sd(const double *v, size_t nr, size_t first, size_t n, size_t r) {
    double mean = 0, ss = 0;
    for (size_t s = 0; s < n; s++)
        mean += v[(first + s) * nr + r];
    mean /= (double)n;
    for (size_t s = 0; s < n; s++) {
        double d = v[(first + s) * nr + r] - mean;
        ss += d * d;
    }
    return n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
}

/* Rank r's excess self time in zone name over the other ranks' median,
 * per step, and its mean over steps [first, first + n) less trim steps
 * at each end: ms. */
static double phase_excess(const struct sps_run *run, const struct matched *m, const struct figures *f, size_t first,
                           size_t n, size_t trim, size_t r, long name, struct scratch *sc) {
    size_t nr = m->nranks;
    for (size_t s = first; s < first + n; s++) {
        for (size_t q = 0; q < nr; q++) {
            const struct sps_step_row *row = m->row[s * nr + q];
            if (name >= 0) {
                sc->x[q] = cell_ms(row, (size_t)name);
            } else { /* outside zones: compute less every zone's self time */
                double in_zones = 0;
                for (size_t k = 0; k < run->nnames; k++)
                    if (run->names[k].kind == SPS_KIND_ZONE)
                        in_zones += cell_ms(row, k);
                sc->x[q] = f->compute[s * nr + q] - in_zones;
            }
        }
        excess_over_others(sc->x, nr, sc->sorted, sc->ex);
        sc->b[s - first] = sc->ex[r];
    }
    return trimmed_mean(sc->b, n, trim);
}

/* Where rank r loses its time over steps [first, first + n): the phase
 * with the largest (trimmed) mean excess. */
static void losing_phase(const struct sps_run *run, const struct matched *m, const struct figures *f, size_t first,
                         size_t n, size_t trim, size_t r, struct scratch *sc, char *phase, size_t len,
                         double *excess_ms) {
    *excess_ms = phase_excess(run, m, f, first, n, trim, r, -1, sc);
    snprintf(phase, len, "%s", SPS_STRAGGLER_OUTSIDE_ZONES);
    for (size_t k = 0; k < run->nnames; k++) {
        if (run->names[k].kind != SPS_KIND_ZONE)
            continue;
        double e = phase_excess(run, m, f, first, n, trim, r, (long)k, sc);
        if (e > *excess_ms) {
            *excess_ms = e;
            snprintf(phase, len, "%s", run->names[k].name);
        }
    }
}

/* Per rank over steps [first, first + n): the standard deviation of its
 * compute from step to step (sc->sd) and its mean wait (sc->wait), each
 * also sorted, so that the others' median can leave one rank out. */
static void window_spreads(const struct figures *f, size_t nr, size_t first, size_t n, struct scratch *sc) {
    for (size_t q = 0; q < nr; q++) {
        sc->sd[q] = column_sd(f->compute, nr, first, n, q);
        sc->wait[q] = column_mean(f->wait, nr, first, n, q, 0, sc->a);
    }
    memcpy(sc->sd_sorted, sc->sd, nr * sizeof *sc->sd);
    memcpy(sc->wait_sorted, sc->wait, nr * sizeof *sc->wait);
    qsort(sc->sd_sorted, nr, sizeof *sc->sd_sorted, sps__cmp_double);
    qsort(sc->wait_sorted, nr, sizeof *sc->wait_sorted, sps__cmp_double);
}

/* Rank r's threshold in a window: the largest of the absolute floor, the
 * share of the window's median step, and SPS_STRAGGLER_SE standard
 * errors of its trimmed mean excess were it a balanced rank.  A balanced
 * rank's compute varies from step to step as much as the others' do
 * (their median standard deviation, sigma), and its excess is its
 * compute less the median of the k others: variance about
 * sigma^2 (1 + 1/k), over the kept steps. */
static double window_threshold(size_t nr, size_t kept, size_t r, double step_ms, const struct scratch *sc) {
    double sigma = median_without(sc->sd_sorted, nr, sc->sd[r]);
    double se = sigma * sqrt((1.0 + 1.0 / (double)(nr - 1)) / (double)kept);
    return fmax(SPS_STRAGGLER_ABS_MS, fmax(SPS_STRAGGLER_REL * step_ms, SPS_STRAGGLER_SE * se));
}

/* Judge steps [first, first + n) as one window. */
static void judge_window(const struct sps_run *run, const struct matched *m, const struct figures *f, size_t first,
                         size_t n, struct sps_straggler *s, struct scratch *sc, double *thresholds) {
    size_t nr = m->nranks;
    struct sps_straggler_window *w = &s->windows[s->nwindows];
    memset(w, 0, sizeof *w);
    w->first_step = m->row[first * nr]->index;
    w->last_step = m->row[(first + n - 1) * nr]->index;
    w->steps = (uint32_t)n;
    for (size_t i = 0; i < n * nr; i++)
        sc->a[i] = f->step[first * nr + i];
    w->step_ms = sps__median_inplace(sc->a, n * nr);
    w->rank = w->top_rank = -1;
    w->excess_ms = w->threshold_ms = w->phase_excess_ms = NAN;
    /* the named rank with the largest excess; failing that, the largest
     * excess of any (a noisy rank's can be larger than a named one's) */
    long named = -1;
    size_t trim = window_trim(n);
    window_spreads(f, nr, first, n, sc);
    for (size_t r = 0; r < nr; r++) {
        double mean = column_mean(f->excess, nr, first, n, r, trim, sc->a);
        double threshold = window_threshold(nr, n - 2 * trim, r, w->step_ms, sc);
        thresholds[s->nwindows * nr + r] = threshold;
        /* corroborated by the waits: the others wait longer than it does */
        int waited_for = sc->wait[r] < median_without(sc->wait_sorted, nr, sc->wait[r]);
        int slow = mean > threshold && waited_for;
        if (slow) {
            w->named++;
            s->ranks[r].windows_named++;
        }
        int better = slow ? named < 0 || mean > w->excess_ms : named < 0 && (w->top_rank < 0 || mean > w->excess_ms);
        if (better) {
            w->top_rank = s->ranks[r].rank;
            w->excess_ms = mean;
            w->threshold_ms = threshold;
            if (slow)
                named = (long)r;
        }
    }
    if (named >= 0) {
        w->rank = s->ranks[named].rank;
        losing_phase(run, m, f, first, n, trim, (size_t)named, sc, w->phase, sizeof w->phase, &w->phase_excess_ms);
    }
    s->nwindows++;
}

/* The run's figures per rank, and the verdict. */
static void judge_run(const struct sps_run *run, const struct matched *m, const struct figures *f,
                      struct sps_straggler *s, struct scratch *sc, double *thresholds) {
    size_t nr = m->nranks, ns = m->nsteps;
    for (size_t i = 0; i < ns * nr; i++)
        sc->a[i] = f->step[i];
    s->step_ms = sps__median_inplace(sc->a, ns * nr);
    s->slowest = -1;
    s->spread_ms = 0;
    uint32_t clean = 0;
    for (size_t w = 0; w < s->nwindows; w++)
        clean += s->windows[w].rank < 0;
    s->clean_share = s->nwindows ? (double)clean / (double)s->nwindows : NAN;
    for (size_t r = 0; r < nr; r++) {
        struct sps_straggler_rank *k = &s->ranks[r];
        k->step_ms = column_median(f->step, nr, 0, ns, r, sc->a);
        k->wait_ms = column_mean(f->wait, nr, 0, ns, r, 0, sc->a);
        k->compute_ms = column_mean(f->compute, nr, 0, ns, r, 0, sc->a);
        k->excess_ms = column_mean(f->excess, nr, 0, ns, r, 0, sc->a);
        for (size_t w = 0; w < s->nwindows; w++)
            sc->a[w] = thresholds[w * nr + r];
        k->threshold_ms = sps__median_inplace(sc->a, s->nwindows);
        k->share = (double)k->windows_named / (double)s->nwindows;
        k->phase_excess_ms = k->confidence = NAN;
        k->slow = k->share >= SPS_STRAGGLER_STEADY && k->excess_ms > 0;
        if (fabs(k->excess_ms) > s->spread_ms)
            s->spread_ms = fabs(k->excess_ms);
        if (!k->slow)
            continue;
        losing_phase(run, m, f, 0, ns, 0, r, sc, k->phase, sizeof k->phase, &k->phase_excess_ms);
        k->confidence = k->share * fmin(1.0, k->excess_ms / (2.0 * k->threshold_ms));
        if (s->slowest < 0 || k->excess_ms > s->ranks[s->slowest].excess_ms)
            s->slowest = (long)r;
    }
    s->verdict = s->slowest >= 0 ? SPS_STRAGGLER_FOUND : SPS_STRAGGLER_NONE;
    s->cost_ms = s->slowest >= 0 ? s->ranks[s->slowest].excess_ms : 0.0;
}

static int judge(const struct sps_run *run, const struct matched *m, const struct figures *f, struct sps_straggler *s) {
    size_t nr = m->nranks, ns = m->nsteps;
    size_t nw = ns / SPS_STRAGGLER_WINDOW;
    if (ns - nw * SPS_STRAGGLER_WINDOW >= SPS_STRAGGLER_MIN_STEPS || nw == 0)
        nw++;
    struct scratch sc = {0};
    sc.a = malloc(ns * nr * sizeof *sc.a);
    sc.b = malloc(ns * sizeof *sc.b);
    sc.sorted = malloc(nr * sizeof *sc.sorted);
    sc.x = malloc(nr * sizeof *sc.x);
    sc.ex = malloc(nr * sizeof *sc.ex);
    double *per_rank = malloc(4 * nr * sizeof *per_rank);
    if (per_rank) {
        sc.sd = per_rank;
        sc.sd_sorted = per_rank + nr;
        sc.wait = per_rank + 2 * nr;
        sc.wait_sorted = per_rank + 3 * nr;
    }
    double *thresholds = malloc(nw * nr * sizeof *thresholds);
    s->windows = calloc(nw, sizeof *s->windows);
    int rc = sc.a && sc.b && sc.sorted && sc.x && sc.ex && per_rank && thresholds && s->windows ? 0 : SPS_ENOMEM;
    for (size_t w = 0; !rc && w < nw; w++) {
        size_t first = w * SPS_STRAGGLER_WINDOW;
        size_t n = w + 1 == nw ? ns - first : SPS_STRAGGLER_WINDOW; /* the last takes a short tail */
        judge_window(run, m, f, first, n, s, &sc, thresholds);
    }
    if (!rc)
        judge_run(run, m, f, s, &sc, thresholds);
    free(sc.a);
    free(sc.b);
    free(sc.sorted);
    free(sc.x);
    free(sc.ex);
    free(per_rank);
    free(thresholds);
    return rc;
}

/* ---------------------------------------------------------- entry point */

static void not_judged(struct sps_straggler *s, int verdict, const char *why) {
    s->verdict = verdict;
    snprintf(s->reason, sizeof s->reason, "%s", why);
}

int sps__straggler_analyze(const struct sps_run *run, struct sps_straggler *out) {
    memset(out, 0, sizeof *out);
    out->computed = 1;
    out->window_steps = SPS_STRAGGLER_WINDOW;
    out->slowest = -1;
    out->cost_ms = out->spread_ms = out->step_ms = out->clean_share = NAN;
    struct stream *streams = NULL;
    size_t nstreams = 0;
    int rc = list_streams(run, &streams, &nstreams);
    const struct stream **chosen = rc ? NULL : calloc(nstreams ? nstreams : 1, sizeof *chosen);
    if (!rc && !chosen)
        rc = SPS_ENOMEM;
    if (!rc)
        rc = choose_ranks(run, streams, nstreams, out, chosen);
    struct matched m = {.nranks = out->nranks};
    struct figures f = {0};
    if (!rc && out->nranks < 2) {
        not_judged(out, SPS_STRAGGLER_NOT_DISTRIBUTED, "fewer than two ranks recorded steps");
    } else if (!rc && !(rc = match_steps(run, chosen, &m)) && !(rc = measure(run, &m, &f))) {
        out->steps_judged = m.nsteps;
        if (m.nsteps < SPS_STRAGGLER_MIN_STEPS)
            not_judged(out, SPS_STRAGGLER_TOO_FEW_STEPS, "fewer than 5 steps that every rank completed after warm-up");
        else if (!f.nwait_cells)
            not_judged(out, SPS_STRAGGLER_NO_WAIT,
                       "no rank recorded time waiting in collectives (zones of kind wait): a collective equalises "
                       "the ranks' wall times, so they cannot name a straggler");
        else
            rc = judge(run, &m, &f, out);
    }
    figures_free(&f);
    free(m.row);
    free(chosen);
    free(streams);
    if (rc) {
        sps__straggler_free(out);
        out->computed = 0;
    }
    return rc;
}

void sps__straggler_free(struct sps_straggler *s) {
    free(s->ranks);
    free(s->windows);
    s->ranks = NULL;
    s->windows = NULL;
    s->nranks = s->nwindows = 0;
}
