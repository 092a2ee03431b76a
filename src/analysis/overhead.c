/*
 * overhead.c - stepscope's own cost (see overhead.h).
 */
#include <math.h>

#include "analysis/overhead.h"
#include "export/json_writer.h"
#include "export/report.h"
#include "model/run.h"
#include "record_format.h"
#include "sampler/sampler.h"

void sps__overhead_analyze(const struct sps_run *run, const struct sps_run_info *info, struct sps_overhead *out) {
    *out = (struct sps_overhead){0};
    for (size_t i = 0; i < run->nnames; i++) {
        const struct sps_name_summary *n = &run->names[i];
        if (sps_kind_is_timed(n->kind))
            out->zones_recorded += n->agg.count;
        else
            out->values_recorded += n->agg.count;
    }
    out->zone_cost_ns = out->value_cost_ns = out->recording_s = NAN;
    if (info->have_record_cost) {
        out->zone_cost_ns = info->zone_cost_ns;
        out->value_cost_ns = info->value_cost_ns;
        out->recording_s = ((double)out->zones_recorded * info->zone_cost_ns +
                            (double)out->values_recorded * info->value_cost_ns) * 1e-9;
    } else {
        out->unmeasured_reason = info->record_cost_absent_reason ? info->record_cost_absent_reason
                                                                 : "not measured: stepscope run measures it when the run ends";
    }
    out->sampler_cpu_s = info->sampler ? info->sampler->thread_cpu_seconds : NAN;
    out->live_view_cpu_s = info->have_live_view ? info->live_view_cpu_seconds : 0;
    out->total_s = (isnan(out->recording_s) ? 0 : out->recording_s) +
                   (isnan(out->sampler_cpu_s) ? 0 : out->sampler_cpu_s) + out->live_view_cpu_s;
    out->workload_cpu_s = info->have_times ? info->user_s + info->sys_s : NAN;
    out->wall_s = info->have_times ? info->wall_s : NAN;
    out->percent_of_workload_cpu = out->workload_cpu_s > 0 ? 100.0 * out->recording_s / out->workload_cpu_s : NAN;
    out->percent_of_wall = out->wall_s > 0 ? 100.0 * out->total_s / out->wall_s : NAN;
}

void sps__overhead_json(struct sps_jw *w, const struct sps_overhead *o) {
    sps__jw_object(w, "overhead");
    sps__jw_uint(w, "zones_recorded", o->zones_recorded);
    sps__jw_uint(w, "values_recorded", o->values_recorded);
    sps__jw_number(w, "zone_cost_ns", o->zone_cost_ns);
    sps__jw_number(w, "value_cost_ns", o->value_cost_ns);
    sps__jw_number(w, "recording_s", o->recording_s);
    if (o->unmeasured_reason)
        sps__jw_string(w, "recording_unmeasured_reason", o->unmeasured_reason);
    sps__jw_number(w, "sampler_cpu_s", o->sampler_cpu_s);
    sps__jw_number(w, "live_view_cpu_s", o->live_view_cpu_s);
    sps__jw_number(w, "total_s", o->total_s);
    sps__jw_number(w, "percent_of_workload_cpu", o->percent_of_workload_cpu);
    sps__jw_number(w, "percent_of_wall", o->percent_of_wall);
    sps__jw_end(w, '}');
}
