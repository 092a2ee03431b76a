/*
 * report_json_torch.c - report.json's torch_profile section: each
 * process's deep-capture window (`stepscope run --torch-profile`), its
 * cost, and per stepscope zone the operators that spent the most self time
 * in it (docs/report-format.md, "torch_profile").  The operator events
 * themselves stay in the records (records/torch-ops-<pid>.tsv) and go to
 * trace.json.
 */
#include <math.h>
#include <string.h>

#include "model/torch_ops.h"
#include "render/json_writer.h"
#include "render/render.h"

static double rel_s(const struct sps_run *run, uint64_t ns) {
    return ns ? ((double)ns - (double)run->start_ns) / 1e9 : NAN;
}

static void write_cost(struct sps_jw *w, const struct sps_torch_capture *c) {
    sps__jw_object(w, "cost");
    sps__jw_number(w, "window_step_mean_s", c->window_step_mean_s);
    sps__jw_number(w, "other_step_median_s", c->other_step_median_s);
    sps__jw_number(w, "step_ratio", c->window_step_mean_s / c->other_step_median_s);
    sps__jw_number(w, "start_s", c->start_cost_ns * 1e-9);
    sps__jw_number(w, "stop_s", c->stop_cost_ns * 1e-9);
    sps__jw_number(w, "export_s", c->export_cost_ns * 1e-9);
    sps__jw_end(w, '}');
}

/* tops are grouped by zone, zones in order: one object per run of rows. */
static void write_zones(struct sps_jw *w, const struct sps_torch_capture *c) {
    sps__jw_array(w, "zones");
    for (size_t i = 0; i < c->ntops;) {
        const char *zone = c->tops[i].zone;
        sps__jw_object(w, NULL);
        if (zone)
            sps__jw_string(w, "zone", zone);
        else
            sps__jw_null(w, "zone");
        sps__jw_array(w, "ops");
        for (; i < c->ntops && (zone ? c->tops[i].zone && !strcmp(c->tops[i].zone, zone) : !c->tops[i].zone); i++) {
            sps__jw_object(w, NULL);
            sps__jw_string(w, "name", c->tops[i].op);
            sps__jw_uint(w, "count", c->tops[i].count);
            sps__jw_number(w, "self_s", c->tops[i].self_s);
            sps__jw_end(w, '}');
        }
        sps__jw_end(w, ']');
        sps__jw_end(w, '}');
    }
    sps__jw_end(w, ']');
}

static void write_capture(struct sps_jw *w, const struct sps_run *run, const struct sps_torch_capture *c) {
    sps__jw_object(w, NULL);
    sps__jw_int(w, "pid", c->pid);
    sps__jw_int(w, "tid", c->tid);
    sps__jw_string(w, "spec", c->spec);
    sps__jw_bool(w, "captured", !c->unavailable);
    if (c->unavailable)
        sps__jw_string(w, "unavailable_reason", c->unavailable);
    else
        sps__jw_null(w, "unavailable_reason");
    if (c->unavailable) {
        sps__jw_null(w, "first_step");
        sps__jw_null(w, "end_step");
    } else {
        sps__jw_uint(w, "first_step", c->first_step);
        sps__jw_uint(w, "end_step", c->end_step);
    }
    if (c->short_note)
        sps__jw_string(w, "note", c->short_note);
    else
        sps__jw_null(w, "note");
    if (c->have_trigger) {
        sps__jw_object(w, "trigger");
        sps__jw_uint(w, "step", c->trigger_step);
        sps__jw_number(w, "ratio", c->trigger_ratio);
        sps__jw_end(w, '}');
    } else {
        sps__jw_null(w, "trigger");
    }
    sps__jw_number(w, "start_s", rel_s(run, c->start_ns));
    sps__jw_number(w, "end_s", rel_s(run, c->end_ns));
    sps__jw_number(w, "align_error_s", c->unavailable ? NAN : c->align_error_ns * 1e-9);
    sps__jw_uint(w, "cpu_ops", c->cpu_ops);
    sps__jw_uint(w, "gpu_ops", c->gpu_ops);
    sps__jw_uint(w, "malformed_lines", c->bad_lines);
    if (c->problem)
        sps__jw_string(w, "malformed_first", c->problem);
    else
        sps__jw_null(w, "malformed_first");
    write_cost(w, c);
    write_zones(w, c);
    sps__jw_end(w, '}');
}

void sps__report_json_torch(struct sps_jw *w, const struct sps_run *run) {
    sps__jw_object(w, "torch_profile");
    sps__jw_uint(w, "top_per_zone", SPS_TORCH_TOP_PER_ZONE);
    sps__jw_array(w, "processes");
    for (size_t i = 0; i < run->ntorch; i++)
        write_capture(w, run, &run->torch[i]);
    sps__jw_end(w, ']');
    sps__jw_end(w, '}');
}
