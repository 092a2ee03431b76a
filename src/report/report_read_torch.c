/*
 * report_read_torch.c - report.json's torch_profile section (written by
 * src/render/report_json_torch.c) back into rep->run.torch: each window's
 * facts, cost and per-zone top operators.  The operator events are not in
 * report.json: sps__report_load_dir attaches them from the records.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/torch_ops.h"
#include "report/report_read_torch.h"
#include "report/report_read_values.h"
#include "stepscope.h"

static uint64_t mono_of(const struct sps_report *rep, double s) {
    return isfinite(s) && fabs(s) < 9e9 ? rep->run.start_ns + (uint64_t)llround(s * 1e9) : 0;
}

/* The file gives whole ns: seconds back to them exactly. */
static double ns_of(double s) {
    return isfinite(s) && fabs(s) < 9e9 ? (double)llround(s * 1e9) : 0; /* llround's range: 292 years */
}

static int read_cost(struct sps_jscan *s, struct sps_torch_capture *c) {
    char key[48];
    int rc = sps__jread_open(s, "torch_profile.processes[].cost", '{');
    double v;
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "window_step_mean_s"))
            rc = sps__jread_number(s, key, &c->window_step_mean_s);
        else if (!strcmp(key, "other_step_median_s"))
            rc = sps__jread_number(s, key, &c->other_step_median_s);
        else if (!strcmp(key, "start_s") || !strcmp(key, "stop_s") || !strcmp(key, "export_s")) {
            if (!(rc = sps__jread_number(s, key, &v)))
                *(key[1] == 't' && key[2] == 'a' ? &c->start_cost_ns
                  : key[1] == 't'               ? &c->stop_cost_ns
                                                : &c->export_cost_ns) = ns_of(v);
        } else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int add_top(struct sps_jscan *s, struct sps_torch_capture *c, const char *zone) {
    struct sps_torch_top *tops = realloc(c->tops, (c->ntops + 1) * sizeof *tops);
    if (!tops)
        return SPS_ENOMEM;
    c->tops = tops;
    struct sps_torch_top *t = &tops[c->ntops++];
    memset(t, 0, sizeof *t);
    if (zone && !(t->zone = strdup(zone)))
        return SPS_ENOMEM;
    char key[32];
    int rc = sps__jread_open(s, "torch_profile.processes[].zones[].ops[]", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "name"))
            rc = sps__jread_strdup(s, "ops[].name", &t->op);
        else if (!strcmp(key, "count"))
            rc = sps__jread_u64(s, "ops[].count", &t->count);
        else if (!strcmp(key, "self_s"))
            rc = sps__jread_number(s, "ops[].self_s", &t->self_s);
        else
            rc = sps__jscan_skip(s);
    }
    if (!rc && !t->op)
        rc = sps__jread_fail(s, "a name", "ops[].name");
    return rc;
}

static int read_zone(struct sps_jscan *s, struct sps_torch_capture *c) {
    char key[32], *zone = NULL;
    int rc = sps__jread_open(s, "torch_profile.processes[].zones[]", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "zone")) {
            rc = sps__jread_strdup(s, "zones[].zone", &zone);
        } else if (!strcmp(key, "ops")) { /* written after "zone" */
            rc = sps__jread_open(s, "zones[].ops", '[');
            for (int e = 0; sps__jread_element(s, &e, &rc);)
                rc = add_top(s, c, zone);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    free(zone);
    return rc;
}

static int read_trigger(struct sps_jscan *s, struct sps_torch_capture *c) {
    int is_null, rc = sps__jread_null(s, &is_null);
    if (rc || is_null)
        return rc;
    char key[32];
    rc = sps__jread_open(s, "torch_profile.processes[].trigger", '{');
    c->have_trigger = 1;
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "step"))
            rc = sps__jread_u64(s, "trigger.step", &c->trigger_step);
        else if (!strcmp(key, "ratio"))
            rc = sps__jread_number(s, "trigger.ratio", &c->trigger_ratio);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

/* One field of a capture that is a plain value; 1 when key is none. */
static int read_fact(struct sps_jscan *s, const struct sps_report *rep, const char *key,
                     struct sps_torch_capture *c) {
    double v;
    int rc;
    if (!strcmp(key, "pid"))
        return sps__jread_i32(s, key, 0, &c->pid);
    if (!strcmp(key, "tid"))
        return sps__jread_i32(s, key, 0, &c->tid);
    if (!strcmp(key, "spec"))
        return sps__jread_text(s, key, c->spec, sizeof c->spec);
    if (!strcmp(key, "unavailable_reason"))
        return sps__jread_strdup(s, key, &c->unavailable);
    if (!strcmp(key, "note"))
        return sps__jread_strdup(s, key, &c->short_note);
    if (!strcmp(key, "malformed_first"))
        return sps__jread_strdup(s, key, &c->problem);
    if (!strcmp(key, "first_step"))
        return sps__jread_u64(s, key, &c->first_step);
    if (!strcmp(key, "end_step"))
        return sps__jread_u64(s, key, &c->end_step);
    if (!strcmp(key, "cpu_ops"))
        return sps__jread_u64(s, key, &c->cpu_ops);
    if (!strcmp(key, "gpu_ops"))
        return sps__jread_u64(s, key, &c->gpu_ops);
    if (!strcmp(key, "malformed_lines"))
        return sps__jread_u64(s, key, &c->bad_lines);
    if (!strcmp(key, "align_error_s")) {
        if (!(rc = sps__jread_number(s, key, &v)))
            c->align_error_ns = ns_of(v);
        return rc;
    }
    if (!strcmp(key, "start_s") || !strcmp(key, "end_s")) {
        if (!(rc = sps__jread_number(s, key, &v)))
            *(key[0] == 's' ? &c->start_ns : &c->end_ns) = mono_of(rep, v);
        return rc;
    }
    return 1;
}

static int read_capture(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_torch_capture *grown = realloc(rep->run.torch, (rep->run.ntorch + 1) * sizeof *grown);
    if (!grown)
        return SPS_ENOMEM;
    rep->run.torch = grown;
    struct sps_torch_capture *c = &grown[rep->run.ntorch++];
    memset(c, 0, sizeof *c);
    c->window_step_mean_s = c->other_step_median_s = NAN;
    char key[48];
    int rc = sps__jread_open(s, "torch_profile.processes[]", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if ((rc = read_fact(s, rep, key, c)) != 1)
            continue;
        if (!strcmp(key, "trigger"))
            rc = read_trigger(s, c);
        else if (!strcmp(key, "cost"))
            rc = read_cost(s, c);
        else if (!strcmp(key, "zones")) {
            rc = sps__jread_open(s, "torch_profile.processes[].zones", '[');
            for (int e = 0; sps__jread_element(s, &e, &rc);)
                rc = read_zone(s, c);
        } else
            rc = sps__jscan_skip(s);
    }
    if (!rc && c->pid <= 0)
        rc = sps__jread_fail(s, "a pid", "torch_profile.processes[].pid");
    return rc;
}

int sps__report_read_torch(struct sps_jscan *s, struct sps_report *rep) {
    char key[32];
    int rc = sps__jread_open(s, "torch_profile", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "processes")) {
            rc = sps__jread_open(s, "torch_profile.processes", '[');
            for (int e = 0; sps__jread_element(s, &e, &rc);)
                rc = read_capture(s, rep);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

int sps__report_attach_torch(struct sps_report *rep, struct sps_run *recs) {
    for (size_t i = 0; i < recs->ntorch; i++)
        for (size_t k = 0; k < rep->run.ntorch; k++)
            if (rep->run.torch[k].pid == recs->torch[i].pid) {
                sps__torch_capture_take_events(&rep->run.torch[k], &recs->torch[i]);
                int rc = sps__torch_place_ops(&rep->run, &rep->run.torch[k]);
                if (rc)
                    return rc;
                break;
            }
    return 0;
}
