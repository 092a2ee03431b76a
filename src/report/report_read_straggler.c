/*
 * report_read_straggler.c - report.json's "analysis.straggler" back into
 * the model (struct sps_straggler): every key sps__straggler_json writes,
 * so `stepscope report DIR` words the verdict the run was given.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/straggler.h"
#include "report/report_read.h"
#include "report/report_read_values.h"
#include "stepscope.h"

/* Grow *list of *n items of size bytes by one zeroed item; NULL when out
 * of memory. */
static void *grow(void **list, size_t *n, size_t size) {
    char *grown = realloc(*list, (*n + 1) * size);
    if (!grown)
        return NULL;
    *list = grown;
    memset(grown + *n * size, 0, size);
    return grown + (*n)++ * size;
}

static int read_rank(struct sps_jscan *s, struct sps_straggler_rank *k) {
    char key[64];
    k->rank = k->pid = -1;
    k->step_ms = k->wait_ms = k->compute_ms = k->excess_ms = k->threshold_ms = NAN;
    k->share = k->phase_excess_ms = k->confidence = NAN;
    uint64_t named = 0;
    int rc = sps__jread_open(s, "straggler.ranks[]", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "rank"))
            rc = sps__jread_i32(s, key, -1, &k->rank);
        else if (!strcmp(key, "host"))
            rc = sps__jread_text(s, key, k->host, sizeof k->host);
        else if (!strcmp(key, "pid"))
            rc = sps__jread_i32(s, key, -1, &k->pid);
        else if (!strcmp(key, "steps"))
            rc = sps__jread_u64(s, key, &k->steps);
        else if (!strcmp(key, "step_ms"))
            rc = sps__jread_number(s, key, &k->step_ms);
        else if (!strcmp(key, "wait_ms"))
            rc = sps__jread_number(s, key, &k->wait_ms);
        else if (!strcmp(key, "compute_ms"))
            rc = sps__jread_number(s, key, &k->compute_ms);
        else if (!strcmp(key, "excess_ms"))
            rc = sps__jread_number(s, key, &k->excess_ms);
        else if (!strcmp(key, "threshold_ms"))
            rc = sps__jread_number(s, key, &k->threshold_ms);
        else if (!strcmp(key, "windows_named"))
            rc = sps__jread_u64(s, key, &named);
        else if (!strcmp(key, "share"))
            rc = sps__jread_number(s, key, &k->share);
        else if (!strcmp(key, "slow"))
            rc = sps__jread_bool(s, key, &k->slow);
        else if (!strcmp(key, "phase"))
            rc = sps__jread_text(s, key, k->phase, sizeof k->phase);
        else if (!strcmp(key, "phase_excess_ms"))
            rc = sps__jread_number(s, key, &k->phase_excess_ms);
        else if (!strcmp(key, "confidence"))
            rc = sps__jread_number(s, key, &k->confidence);
        else
            rc = sps__jscan_skip(s);
    }
    k->windows_named = (uint32_t)named;
    return rc;
}

static int read_window(struct sps_jscan *s, struct sps_straggler_window *x) {
    char key[64];
    uint64_t steps = 0, named = 0;
    x->rank = x->top_rank = -1;
    x->step_ms = x->excess_ms = x->threshold_ms = x->phase_excess_ms = NAN;
    int rc = sps__jread_open(s, "straggler.windows[]", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "first_step"))
            rc = sps__jread_u64(s, key, &x->first_step);
        else if (!strcmp(key, "last_step"))
            rc = sps__jread_u64(s, key, &x->last_step);
        else if (!strcmp(key, "steps"))
            rc = sps__jread_u64(s, key, &steps);
        else if (!strcmp(key, "step_ms"))
            rc = sps__jread_number(s, key, &x->step_ms);
        else if (!strcmp(key, "rank"))
            rc = sps__jread_i32(s, key, -1, &x->rank);
        else if (!strcmp(key, "ranks_named"))
            rc = sps__jread_u64(s, key, &named);
        else if (!strcmp(key, "top_rank"))
            rc = sps__jread_i32(s, key, -1, &x->top_rank);
        else if (!strcmp(key, "excess_ms"))
            rc = sps__jread_number(s, key, &x->excess_ms);
        else if (!strcmp(key, "threshold_ms"))
            rc = sps__jread_number(s, key, &x->threshold_ms);
        else if (!strcmp(key, "phase"))
            rc = sps__jread_text(s, key, x->phase, sizeof x->phase);
        else if (!strcmp(key, "phase_excess_ms"))
            rc = sps__jread_number(s, key, &x->phase_excess_ms);
        else
            rc = sps__jscan_skip(s);
    }
    x->steps = (uint32_t)steps;
    x->named = (uint32_t)named;
    return rc;
}

static int read_list(struct sps_jscan *s, const char *what, struct sps_straggler *g, int windows) {
    int rc = sps__jread_open(s, what, '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        void *item = windows ? grow((void **)&g->windows, &g->nwindows, sizeof *g->windows)
                             : grow((void **)&g->ranks, &g->nranks, sizeof *g->ranks);
        if (!item)
            return SPS_ENOMEM;
        rc = windows ? read_window(s, item) : read_rank(s, item);
    }
    return rc;
}

/* The verdict's word back to its value. */
static int read_verdict(struct sps_jscan *s, int *out) {
    char text[32];
    int rc = sps__jread_text(s, "straggler.verdict", text, sizeof text);
    for (int v = 0; !rc && v < SPS_STRAGGLER_VERDICTS; v++)
        if (!strcmp(sps__straggler_verdict_name(v), text)) {
            *out = v;
            return 0;
        }
    return rc ? rc : sps__jread_fail(s, "a verdict stepscope names", "straggler.verdict");
}

int sps__report_read_straggler(struct sps_jscan *s, struct sps_straggler *g) {
    char key[64];
    int slowest = -1;
    sps__straggler_free(g);
    memset(g, 0, sizeof *g);
    g->slowest = -1;
    g->step_ms = g->cost_ms = g->spread_ms = g->clean_share = NAN;
    int rc = sps__jread_open(s, "straggler", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "verdict"))
            rc = read_verdict(s, &g->verdict);
        else if (!strcmp(key, "reason"))
            rc = sps__jread_text(s, key, g->reason, sizeof g->reason);
        else if (!strcmp(key, "window_steps"))
            rc = sps__jread_i32(s, key, 0, (int *)&g->window_steps);
        else if (!strcmp(key, "steps_judged"))
            rc = sps__jread_u64(s, key, &g->steps_judged);
        else if (!strcmp(key, "step_ms"))
            rc = sps__jread_number(s, key, &g->step_ms);
        else if (!strcmp(key, "slowest_rank"))
            rc = sps__jread_i32(s, key, -1, &slowest);
        else if (!strcmp(key, "cost_ms"))
            rc = sps__jread_number(s, key, &g->cost_ms);
        else if (!strcmp(key, "spread_ms"))
            rc = sps__jread_number(s, key, &g->spread_ms);
        else if (!strcmp(key, "clean_share"))
            rc = sps__jread_number(s, key, &g->clean_share);
        else if (!strcmp(key, "ranks"))
            rc = read_list(s, "straggler.ranks", g, 0);
        else if (!strcmp(key, "windows"))
            rc = read_list(s, "straggler.windows", g, 1);
        else
            rc = sps__jscan_skip(s); /* method, thresholds: the constants of the stepscope that wrote it */
    }
    for (size_t i = 0; !rc && slowest >= 0 && i < g->nranks; i++)
        if (g->ranks[i].rank == slowest)
            g->slowest = (long)i;
    if (!rc && slowest >= 0 && g->slowest < 0)
        return sps__jread_fail(s, "a rank that \"ranks\" lists", "straggler.slowest_rank");
    if (!rc)
        g->computed = 1;
    return rc;
}
