/*
 * report_json_ranks.c - report.json's "ranks" (one object a rank) and
 * "ranks_pooled" (the same figures over every rank's steps), from the
 * report model's per-rank view (model/ranks.h; docs/report-format.md).
 */
#include <math.h>

#include "render/json_writer.h"
#include "render/render.h"

static void write_view(struct sps_jw *w, const struct sps_ranks *r, const struct sps_rank_view *v) {
    if (v->rank >= 0) {
        sps__jw_int(w, "rank", v->rank);
        if (v->local_rank >= 0)
            sps__jw_int(w, "local_rank", v->local_rank);
        else
            sps__jw_null(w, "local_rank");
        if (v->world_size >= 0)
            sps__jw_int(w, "world_size", v->world_size);
        else
            sps__jw_null(w, "world_size");
        sps__jw_string(w, "hostname", v->hostname);
        sps__jw_int(w, "pid", v->pid);
    }
    sps__jw_uint(w, "processes", v->processes);
    sps__jw_string(w, "step_name", r->step_name);
    sps__jw_uint(w, "steps", v->steps);
    sps__jw_uint(w, "warmup_steps", v->warmup_steps);
    sps__jw_number(w, "step_median_s", v->step_median_s);
    sps__jw_number(w, "step_p90_s", v->step_p90_s);
    sps__jw_number(w, "step_total_s", v->step_total_s);
    sps__jw_number(w, "wait_per_step_median_s", v->wait_median_s);
    sps__jw_number(w, "wait_total_s", v->wait_total_s);
    sps__jw_array(w, "phases");
    for (size_t i = 0; i < v->nphases; i++) {
        const struct sps_rank_phase *ph = &v->phases[i];
        sps__jw_object(w, NULL);
        sps__jw_string(w, "name", ph->name);
        sps__jw_number(w, "self_per_step_median_s", ph->self_median_s);
        sps__jw_number(w, "self_total_s", ph->self_total_s);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
}

void sps__report_json_ranks(struct sps_jw *w, const struct sps_ranks *r) {
    sps__jw_array(w, "ranks");
    for (size_t i = 0; i < r->n; i++) {
        sps__jw_object(w, NULL);
        write_view(w, r, &r->rank[i]);
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
    if (!r->have_pooled) {
        sps__jw_null(w, "ranks_pooled");
        return;
    }
    sps__jw_object(w, "ranks_pooled");
    write_view(w, r, &r->pooled);
    sps__jw_end(w, '}');
}
