/* align.c - the clock arithmetic and the plan of a merge (see align.h). */
#include "model/align.h"

#include <stdio.h>
#include <string.h>

#include "stepscope.h"

/* num / den rounded to the nearest integer, halves away from zero; den > 0. */
static int64_t div_round(__int128 num, __int128 den) {
    if (num >= 0)
        return (int64_t)((num + den / 2) / den);
    return -(int64_t)((-num + den / 2) / den);
}

int64_t sps__align_offset_at(const struct sps_align *a, uint64_t t) {
    if ((int64_t)t <= a->at0_ns || a->at1_ns <= a->at0_ns)
        return a->off0_ns;
    if ((int64_t)t >= a->at1_ns)
        return a->off1_ns;
    /* in __int128: the change and the time since at0 each pass int64_t
     * at merge.tsv's widest (SPS_ALIGN_NS_MAX), their product stays
     * under 2^127 */
    __int128 num = ((__int128)a->off1_ns - a->off0_ns) * ((__int128)(int64_t)t - a->at0_ns);
    return a->off0_ns + div_round(num, (__int128)a->at1_ns - a->at0_ns);
}

uint64_t sps__align_map(const struct sps_align *a, uint64_t t) {
    if (t == 0)
        return 0;
    __int128 m = (__int128)t + sps__align_offset_at(a, t);
    return m < 0 ? 0 : m > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)m;
}

int sps__align_measured(struct sps_align *a, const struct sps_process_data *p) {
    const struct sps_clock_sync *s = &p->clock_sync[SPS_SYNC_START], *e = &p->clock_sync[SPS_SYNC_END];
    if (s->state != SPS_REC_SYNC_MEASURED)
        return -1;
    *a = (struct sps_align){.method = SPS_ALIGN_MEASURED,
                            .source_rank = p->rank,
                            .at0_ns = (int64_t)s->at_ns,
                            .off0_ns = s->offset_ns,
                            .at1_ns = (int64_t)s->at_ns,
                            .off1_ns = s->offset_ns,
                            .error_ns = s->error_ns};
    if (e->state == SPS_REC_SYNC_MEASURED && e->at_ns > s->at_ns) {
        a->at1_ns = (int64_t)e->at_ns;
        a->off1_ns = e->offset_ns;
        if (e->error_ns > a->error_ns)
            a->error_ns = e->error_ns;
    }
    return 0;
}

void sps__align_realtime(struct sps_align *a, const struct sps_process_data *p, const struct sps_process_data *ref) {
    int64_t mine = p->start_realtime_ns - (int64_t)p->start_ns;
    int64_t theirs = ref->start_realtime_ns - (int64_t)ref->start_ns;
    *a = (struct sps_align){.method = SPS_ALIGN_REALTIME, .source_rank = -1, .off0_ns = mine - theirs,
                            .off1_ns = mine - theirs};
}

void sps__process_align(struct sps_process_data *p, const struct sps_align *a) {
    p->start_ns = sps__align_map(a, p->start_ns);
    p->end_ns = sps__align_map(a, p->end_ns);
    p->thin_since_ns = sps__align_map(a, p->thin_since_ns);
    for (uint32_t ti = 0; ti < p->nthreads; ti++) {
        struct sps_thread_data *t = &p->threads[ti];
        for (int r = 0; r < SPS_RING_COUNT; r++)
            for (size_t k = 0; k < t->nevents[r]; k++) {
                struct sps_event *e = &t->events[r][k];
                e->start_ns = sps__align_map(a, e->start_ns);
                e->end_ns = sps__align_map(a, e->end_ns);
            }
        for (size_t k = 0; k < t->ngpu; k++) {
            t->gpu[k].start_ns = sps__align_map(a, t->gpu[k].start_ns);
            t->gpu[k].end_ns = sps__align_map(a, t->gpu[k].end_ns);
        }
        for (uint32_t k = 0; k < t->nopen; k++)
            t->open[k].start_ns = sps__align_map(a, t->open[k].start_ns);
    }
    p->align = *a;
}

const char *sps__align_method_name(uint32_t method) {
    switch (method) {
    case SPS_ALIGN_REFERENCE: return "reference";
    case SPS_ALIGN_MEASURED: return "measured";
    case SPS_ALIGN_REALTIME: return "realtime";
    default: return NULL;
    }
}

/* ------------------------------------------------------------------ the plan */

struct where {
    size_t run, proc;
};

/* The reference process: rank 0's (the first input's first process when
 * no input holds rank 0).  Returns 0, or -1 when no input holds one. */
static int find_reference(const struct sps_run *const *runs, size_t n, struct where *ref) {
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->nprocs; j++)
            if (runs[i]->procs[j].rank == 0) {
                *ref = (struct where){i, j};
                return 0;
            }
    for (size_t i = 0; i < n; i++)
        if (runs[i]->nprocs) {
            *ref = (struct where){i, 0};
            return 0;
        }
    return -1;
}

/* A rank of one host in two inputs: the same run given twice, or two runs
 * of one job.  Within one input a rank has several processes as a rule
 * (DataLoader workers and other children inherit RANK), so only pairs
 * across inputs are compared. */
static int check_duplicates(const struct sps_run *const *runs, const char *const *dirs, size_t n, char *err,
                            size_t errlen) {
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->nprocs; j++) {
            const struct sps_process_data *p = &runs[i]->procs[j];
            if (p->rank < 0)
                continue;
            for (size_t k = i + 1; k < n; k++)
                for (size_t l = 0; l < runs[k]->nprocs; l++) {
                    const struct sps_process_data *q = &runs[k]->procs[l];
                    if (q->rank == p->rank && !strcmp(q->hostname, p->hostname)) {
                        snprintf(err, errlen, "rank %d of host %s is in both %s and %s (the same run twice?)",
                                 p->rank, p->hostname, dirs[i], dirs[k]);
                        return SPS_EINVAL;
                    }
                }
        }
    return 0;
}

/* The best measurement of host's clock: the measured process of that
 * host with the smallest stated error.  Returns 0, or -1 when none. */
static int best_measured(const struct sps_run *const *runs, size_t n, const char *host, struct sps_align *best) {
    int found = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->nprocs; j++) {
            struct sps_align a;
            const struct sps_process_data *p = &runs[i]->procs[j];
            if (!strcmp(p->hostname, host) && sps__align_measured(&a, p) == 0 && (!found || a.error_ns < best->error_ns)) {
                *best = a;
                found = 1;
            }
        }
    return found ? 0 : -1;
}

/* Slack on top of two measurements' errors before they count as two
 * clocks: the interpolation between a start and an end measurement is
 * exact only for a clock drifting at a constant rate. */
#define SAME_CLOCK_SLACK_NS 100000

/* Processes of one host name share one clock, so their measured offsets
 * agree within their errors; ones that do not are two machines with one
 * name (containers, a copied STEPSCOPE_HOSTNAME), which no offset could
 * align.  Returns 0, or SPS_EINVAL with err saying which. */
static int check_one_clock(const struct sps_run *const *runs, size_t n, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->nprocs; j++) {
            const struct sps_process_data *p = &runs[i]->procs[j];
            struct sps_align mine, best;
            if (sps__align_measured(&mine, p) != 0 || best_measured(runs, n, p->hostname, &best) != 0)
                continue;
            int64_t apart = mine.off0_ns - sps__align_offset_at(&best, (uint64_t)mine.at0_ns);
            uint64_t gap = apart < 0 ? (uint64_t)-apart : (uint64_t)apart;
            if (gap > mine.error_ns + best.error_ns + SAME_CLOCK_SLACK_NS) {
                snprintf(err, errlen,
                         "host %s: rank %d's and rank %d's measured clock offsets are %.4g ms apart (errors %.4g and "
                         "%.4g ms): two machines with one host name? (STEPSCOPE_HOSTNAME names each)",
                         p->hostname, best.source_rank, p->rank, (double)gap * 1e-6, (double)best.error_ns * 1e-6,
                         (double)mine.error_ns * 1e-6);
                return SPS_EINVAL;
            }
        }
    return 0;
}

int sps__merge_plan(const struct sps_run *const *runs, const char *const *dirs, size_t n, uint64_t tolerance_ns,
                    int force, struct sps_align *const *aligns, struct sps_run_merge *merge, char *err,
                    size_t errlen) {
    struct where ref;
    if (find_reference(runs, n, &ref) != 0) {
        snprintf(err, errlen, "no records in any input");
        return SPS_EINVAL;
    }
    int rc = check_duplicates(runs, dirs, n, err, errlen);
    if (!rc && !force)
        rc = check_one_clock(runs, n, err, errlen);
    if (rc)
        return rc;
    const struct sps_process_data *r = &runs[ref.run]->procs[ref.proc];
    snprintf(merge->reference_host, sizeof merge->reference_host, "%s", r->hostname);
    merge->reference_rank = r->rank == 0 ? 0 : -1;
    merge->tolerance_ns = tolerance_ns;
    merge->forced = 0;
    merge->forced_why[0] = '\0';
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->nprocs; j++) {
            const struct sps_process_data *p = &runs[i]->procs[j];
            struct sps_align *a = &aligns[i][j];
            if (!strcmp(p->hostname, r->hostname)) {
                *a = (struct sps_align){.method = SPS_ALIGN_REFERENCE, .source_rank = -1};
                continue;
            }
            if (best_measured(runs, n, p->hostname, a) != 0) {
                sps__align_realtime(a, p, r);
                continue;
            }
            if (a->error_ns <= tolerance_ns || merge->forced)
                continue;
            snprintf(merge->forced_why, sizeof merge->forced_why,
                     "rank %d on host %s: clock offset error %.4g ms exceeds the tolerance %.4g ms", a->source_rank,
                     p->hostname, (double)a->error_ns * 1e-6, (double)tolerance_ns * 1e-6);
            if (!force) {
                snprintf(err, errlen, "%s (--max-clock-error MS to change it, --force to merge anyway)",
                         merge->forced_why);
                merge->forced_why[0] = '\0';
                return SPS_EINVAL;
            }
            merge->forced = 1;
        }
    return 0;
}
