/*
 * report_read_ranks.c - "ranks" and "ranks_pooled" (report_json_ranks.c
 * writes them; docs/report-format.md) into struct sps_ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report_read_ranks.h"
#include "report/report_read_values.h"

static int read_phase(struct sps_jscan *s, struct sps_rank_phase *ph) {
    int rc = sps__jread_open(s, "ranks[].phases[]", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "name"))
            rc = sps__jread_text(s, "ranks[].phases[].name", ph->name, sizeof ph->name);
        else if (!strcmp(key, "self_per_step_median_s"))
            rc = sps__jread_number(s, "ranks[].phases[].self_per_step_median_s", &ph->self_median_s);
        else if (!strcmp(key, "self_total_s"))
            rc = sps__jread_number(s, "ranks[].phases[].self_total_s", &ph->self_total_s);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_phases(struct sps_jscan *s, struct sps_rank_view *v) {
    int rc = sps__jread_open(s, "ranks[].phases", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        struct sps_rank_phase *grown = realloc(v->phases, (v->nphases + 1) * sizeof *grown);
        if (!grown)
            return SPS_ENOMEM;
        v->phases = grown;
        memset(&grown[v->nphases], 0, sizeof *grown);
        rc = read_phase(s, &grown[v->nphases++]);
    }
    return rc;
}

static int read_view_member(struct sps_jscan *s, const char *key, struct sps_ranks *r, struct sps_rank_view *v) {
    int64_t n = 0;
    int rc;
    if (!strcmp(key, "rank"))
        return sps__jread_i32(s, "ranks[].rank", -1, &v->rank);
    if (!strcmp(key, "local_rank"))
        return sps__jread_i32(s, "ranks[].local_rank", -1, &v->local_rank);
    if (!strcmp(key, "world_size"))
        return sps__jread_i32(s, "ranks[].world_size", -1, &v->world_size);
    if (!strcmp(key, "hostname"))
        return sps__jread_text(s, "ranks[].hostname", v->hostname, sizeof v->hostname);
    if (!strcmp(key, "pid"))
        return sps__jread_i32(s, "ranks[].pid", 0, &v->pid);
    if (!strcmp(key, "processes")) {
        rc = sps__jread_int(s, "ranks[].processes", 0, UINT32_MAX, 0, &n);
        v->processes = (uint32_t)n;
        return rc;
    }
    if (!strcmp(key, "step_name"))
        return sps__jread_text(s, "ranks[].step_name", r->step_name, sizeof r->step_name);
    if (!strcmp(key, "steps"))
        return sps__jread_u64(s, "ranks[].steps", &v->steps);
    if (!strcmp(key, "warmup_steps"))
        return sps__jread_u64(s, "ranks[].warmup_steps", &v->warmup_steps);
    if (!strcmp(key, "step_median_s"))
        return sps__jread_number(s, "ranks[].step_median_s", &v->step_median_s);
    if (!strcmp(key, "step_p90_s"))
        return sps__jread_number(s, "ranks[].step_p90_s", &v->step_p90_s);
    if (!strcmp(key, "step_total_s"))
        return sps__jread_number(s, "ranks[].step_total_s", &v->step_total_s);
    if (!strcmp(key, "wait_per_step_median_s"))
        return sps__jread_number(s, "ranks[].wait_per_step_median_s", &v->wait_median_s);
    if (!strcmp(key, "wait_total_s"))
        return sps__jread_number(s, "ranks[].wait_total_s", &v->wait_total_s);
    if (!strcmp(key, "phases"))
        return read_phases(s, v);
    return sps__jscan_skip(s); /* a key of a later stepscope */
}

static int read_view(struct sps_jscan *s, struct sps_ranks *r, struct sps_rank_view *v) {
    v->rank = v->local_rank = v->world_size = -1;
    int rc = sps__jread_open(s, "ranks[]", '{');
    char key[64];
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);)
        rc = read_view_member(s, key, r, v);
    return rc;
}

int sps__report_read_ranks(struct sps_jscan *s, const char *key, struct sps_report *rep) {
    struct sps_ranks *r = &rep->ranks;
    if (!strcmp(key, "ranks_pooled")) {
        int is_null, rc = sps__jread_null(s, &is_null);
        if (rc || is_null)
            return rc;
        r->have_pooled = 1;
        return read_view(s, r, &r->pooled);
    }
    if (strcmp(key, "ranks") != 0)
        return 1;
    int rc = sps__jread_open(s, "ranks", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        struct sps_rank_view *grown = realloc(r->rank, (r->n + 1) * sizeof *grown);
        if (!grown)
            return SPS_ENOMEM;
        r->rank = grown;
        memset(&grown[r->n], 0, sizeof *grown);
        rc = read_view(s, r, &grown[r->n++]);
    }
    return rc;
}
