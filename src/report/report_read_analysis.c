/*
 * report_read_analysis.c - report.json's "analysis" into the model
 * (report_read.h): every field each part's JSON writer writes
 * (src/analysis/<part>.c, sps__<part>_json) back into struct sps_analysis,
 * so the renderers read the answers the run was given, not new ones.
 *
 * Names come back through the parts' own name functions (verdicts, faces,
 * scopes, methods, kinds), never a second list here.  Where a part points
 * at static text (the bottleneck's why_* reasons and windows_note, the
 * overhead's unmeasured_reason) the read analysis points at copies it
 * owns (analysis.owned_text, freed by sps__analysis_free).  What the
 * writers derive rather than write comes back from what they derive it
 * from: a counter's in_a_step from its reason, an energy domain's series
 * from the machine half read before it, the leaks' tree pid from the
 * sampler's; and the watcher's facts only the analysis records (the
 * recording cost, the guard, the CPU count, the user's carbon intensity,
 * PUE and peak) back into rep->info and rep->analysis_config, so that
 * analysing the run again answers the same.  Fields no writer writes keep what the analysis gives an
 * unknown: the evidence's torch (it only words the advice, which is read
 * as text), the windows' why_* reasons (the writer lists reasons for the
 * run's evidence only) and an unavailable energy domain's source.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "model/run.h"
#include "report/report_read.h"
#include "report/report_read_values.h"
#include "sampler/sampler.h"
#include "stepscope.h"

/* rep->strings_owned slot of info.record_cost_absent_reason (0-3 are the
 * builder's, 4 the machine half's) */
#define RECORD_COST_REASON_SLOT 5

/* A copy of text the analysis owns (one copy per distinct text). */
static int own_text(struct sps_analysis *a, const char *text, const char **out) {
    for (size_t i = 0; i < a->nowned_text; i++)
        if (!strcmp(a->owned_text[i], text)) {
            *out = a->owned_text[i];
            return 0;
        }
    char **grown = realloc(a->owned_text, (a->nowned_text + 1) * sizeof *grown);
    if (!grown)
        return SPS_ENOMEM;
    a->owned_text = grown;
    if (!(grown[a->nowned_text] = strdup(text)))
        return SPS_ENOMEM;
    *out = grown[a->nowned_text++];
    return 0;
}

/* A string (or null: NULL) into text the analysis owns. */
static int read_owned(struct sps_jscan *s, const char *key, struct sps_analysis *a, const char **out) {
    int c = sps__jscan_peek(s);
    *out = NULL;
    if (c == 'n')
        return sps__jscan_skip(s);
    if (c != '"')
        return sps__jread_fail(s, "a string or null", key);
    int rc = sps__jscan_string(s);
    return rc ? rc : own_text(a, s->str, out);
}

/* A name one of a part's name functions gives, back to its value in
 * [0, count); fails naming key when none does. */
static int read_name(struct sps_jscan *s, const char *key, const char *(*name_of)(int), int count, int *out) {
    char text[64];
    int rc = sps__jread_text(s, key, text, sizeof text);
    if (rc)
        return rc;
    for (int v = 0; v < count; v++) {
        const char *name = name_of(v);
        if (name && !strcmp(name, text)) {
            *out = v;
            return 0;
        }
    }
    /* the value itself: a hand-edited or foreign file says which */
    return sps__jscan_fail(s, "\"%s\": \"%.40s\" is not a name stepscope writes", key, text);
}

static const char *bn_kind_name(int v) {
    return sps__bn_kind_name((enum sps_bn_kind)v);
}
static const char *bn_face_name(int v) {
    return sps__bn_face_name((enum sps_bn_face)v);
}
static const char *leak_verdict_name(int v) {
    return sps__leak_verdict_name((enum sps_leak_verdict)v);
}
static const char *leak_scope_name(int v) {
    return sps__leak_scope_name((enum sps_leak_scope)v);
}
static const char *leak_rule_name(int v) {
    return sps__leak_rule_name((enum sps_leak_rule)v);
}
static const char *leak_window_name(int v) {
    return sps__leak_window_name((enum sps_leak_window)v);
}
static const char *leak_axis_name(int v) {
    return sps__leak_axis_name((enum sps_leak_axis)v);
}
static const char *energy_method_name(int v) {
    return sps__energy_method_name((enum sps_energy_method)v);
}
static const char *thin_level_name(int v) {
    return sps__thin_level_name((uint32_t)v);
}

/* ------------------------------------------------------------- bottleneck */

/* The evidence's figures, by report.json key. */
static const struct {
    const char *key;
    size_t offset;
} EVIDENCE_NUMBERS[] = {
#define F(name) {#name, offsetof(struct sps_bn_evidence, name)}
    F(step_mean_seconds), F(data_loading_percent), F(top_zone_percent), F(gpu_utilization_mean_percent),
    F(gpu_utilization_p10_percent), F(gpu_utilization_p90_percent), F(gpu_throttled_percent),
    F(gpu_power_capped_percent), F(gpu_temperature_max_celsius), F(gpu_sm_clock_drop_percent),
    F(workload_cpu_mean_percent), F(workload_cpu_percent_of_machine), F(system_cpu_mean_percent),
    F(system_iowait_mean_percent), F(workload_disk_read_mean_bytes_per_second), F(system_memory_total_bytes),
    F(system_memory_available_min_percent), F(system_swap_used_max_bytes), F(system_swap_growth_bytes),
    F(workload_run_delay_mean_percent), F(workload_cpu_wait_percent), F(cpu_pressure_some_mean_percent),
#undef F
};

/* evidence.unavailable's keys whose reason is one why_* field as such (the
 * others fall back to fixed text or to another group's reason: the
 * groups' own keys carry theirs). */
static const struct {
    const char *key;
    size_t offset;
} EVIDENCE_REASONS[] = {
#define W(key, field) {key, offsetof(struct sps_bn_evidence, field)}
    W("step_mean_seconds", why_steps),
    W("data_loading_percent", why_data),
    W("gpu_utilization_mean_percent", why_gpu),
    W("gpu_utilization_p10_percent", why_gpu),
    W("gpu_utilization_p90_percent", why_gpu),
    W("gpu_throttled_percent", why_throttle),
    W("gpu_power_capped_percent", why_throttle),
    W("gpu_throttle_reasons_seen", why_throttle),
    W("workload_cpu_mean_percent", why_cpu),
    W("cpu_count", why_cpu_count),
    W("system_cpu_mean_percent", why_system),
    W("system_iowait_mean_percent", why_system),
    W("workload_disk_read_mean_bytes_per_second", why_disk),
    W("system_memory_total_bytes", why_memory),
    W("system_memory_available_min_percent", why_memory),
    W("system_swap_used_max_bytes", why_memory),
    W("system_swap_growth_bytes", why_memory),
    W("workload_run_delay_mean_percent", why_run_delay),
    W("cpu_pressure_some_mean_percent", why_pressure),
#undef W
};

static int read_unavailable(struct sps_jscan *s, struct sps_analysis *a, struct sps_bn_evidence *e) {
    char key[64];
    int rc = sps__jread_open(s, "unavailable", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        size_t i = 0;
        while (i < sizeof EVIDENCE_REASONS / sizeof *EVIDENCE_REASONS && strcmp(EVIDENCE_REASONS[i].key, key))
            i++;
        if (i == sizeof EVIDENCE_REASONS / sizeof *EVIDENCE_REASONS) {
            rc = sps__jscan_skip(s);
            continue;
        }
        const char **why = (const char **)((char *)e + EVIDENCE_REASONS[i].offset);
        const char *text;
        if ((rc = read_owned(s, key, a, &text)) || *why)
            continue;
        /* the writer's word for a figure with no reason: none was set */
        *why = text && strcmp(text, "not read") ? text : NULL;
    }
    return rc;
}

static int read_evidence(struct sps_jscan *s, struct sps_analysis *a, struct sps_bn_evidence *e) {
    char key[64];
    sps__bn_evidence_init(e);
    int rc = sps__jread_open(s, "evidence", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        size_t i = 0;
        while (i < sizeof EVIDENCE_NUMBERS / sizeof *EVIDENCE_NUMBERS && strcmp(EVIDENCE_NUMBERS[i].key, key))
            i++;
        if (i < sizeof EVIDENCE_NUMBERS / sizeof *EVIDENCE_NUMBERS) {
            rc = sps__jread_number(s, key, (double *)((char *)e + EVIDENCE_NUMBERS[i].offset));
        } else if (!strcmp(key, "steps")) {
            rc = sps__jread_u64(s, key, &e->steps);
        } else if (!strcmp(key, "top_zone")) {
            rc = sps__jread_text(s, key, e->top_zone, sizeof e->top_zone);
        } else if (!strcmp(key, "gpus")) {
            rc = sps__jread_i32(s, key, 0, &e->gpus);
        } else if (!strcmp(key, "gpu_throttle_reasons_seen")) {
            int64_t v;
            if (!(rc = sps__jread_int(s, key, 0, UINT32_MAX, 0, &v)))
                e->gpu_throttle_reasons_seen = (uint32_t)v;
        } else if (!strcmp(key, "cpu_count")) {
            rc = sps__jread_i32(s, key, 0, &e->cpu_count); /* null: unknown, 0 */
        } else if (!strcmp(key, "cpu_readings")) {
            rc = sps__jread_u64(s, key, &e->cpu_readings);
        } else if (!strcmp(key, "machine_readings")) {
            rc = sps__jread_u64(s, key, &e->machine_readings);
        } else if (!strcmp(key, "run_delay_readings")) {
            rc = sps__jread_u64(s, key, &e->run_delay_readings);
        } else if (!strcmp(key, "contention_from_whole_run")) {
            rc = sps__jread_bool(s, key, &e->contention_whole_run);
        } else if (!strcmp(key, "unavailable")) {
            rc = read_unavailable(s, a, e);
        } else {
            rc = sps__jscan_skip(s); /* gpu_throttle_reason_names: gpu_throttle_reasons_seen's bits */
        }
    }
    return rc;
}

/* verdict, confidence, reason, recommendation: key's value when it is one
 * of them (*taken). */
static int verdict_member(struct sps_jscan *s, const char *key, struct sps_bn_verdict *v, int *taken) {
    *taken = 1;
    if (!strcmp(key, "verdict")) {
        int kind = 0;
        int rc = read_name(s, key, bn_kind_name, SPS_BN_CONTENDED + 1, &kind);
        v->kind = (enum sps_bn_kind)kind;
        return rc;
    }
    if (!strcmp(key, "confidence"))
        return sps__jread_number(s, key, &v->confidence);
    if (!strcmp(key, "reason"))
        return sps__jread_text(s, key, v->reason, sizeof v->reason);
    if (!strcmp(key, "recommendation"))
        return sps__jread_text(s, key, v->recommendation, sizeof v->recommendation);
    *taken = 0;
    return 0;
}

static int read_window(struct sps_jscan *s, struct sps_analysis *a, struct sps_bn_window *win) {
    char key[64];
    int taken;
    sps__bn_evidence_init(&win->evidence);
    int rc = sps__jread_open(s, "windows", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if ((rc = verdict_member(s, key, &win->verdict, &taken)) || taken)
            continue;
        if (!strcmp(key, "first_step"))
            rc = sps__jread_u64(s, key, &win->first_step);
        else if (!strcmp(key, "last_step"))
            rc = sps__jread_u64(s, key, &win->last_step);
        else if (!strcmp(key, "start_seconds"))
            rc = sps__jread_number(s, key, &win->start_seconds);
        else if (!strcmp(key, "end_seconds"))
            rc = sps__jread_number(s, key, &win->end_seconds);
        else if (!strcmp(key, "evidence"))
            rc = read_evidence(s, a, &win->evidence);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_windows(struct sps_jscan *s, struct sps_analysis *a, struct sps_bottleneck *b) {
    int rc = sps__jread_open(s, "windows", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (b->nwindows == SPS_BN_MAX_WINDOWS)
            return sps__jread_fail(s, "at most 10 windows", "windows");
        rc = read_window(s, a, &b->windows[b->nwindows++]);
    }
    return rc;
}

static int read_data_zones(struct sps_jscan *s, struct sps_bottleneck *b) {
    int rc = sps__jread_open(s, "data_loading_zones", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (b->ndata_zones == SPS_BN_MAX_DATA_ZONES)
            return sps__jread_fail(s, "at most 8 zones", "data_loading_zones");
        rc = sps__jread_text(s, "data_loading_zones", b->data_zones[b->ndata_zones++], sizeof b->data_zones[0]);
    }
    return rc;
}

static int read_bottleneck(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_analysis *a = &rep->analysis;
    struct sps_bottleneck *b = &a->bottleneck;
    char key[64];
    int taken, face = 0;
    memset(b, 0, sizeof *b);
    sps__bn_evidence_init(&b->evidence);
    b->computed = 1;
    int rc = sps__jread_open(s, "bottleneck", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if ((rc = verdict_member(s, key, &b->verdict, &taken)) || taken)
            continue;
        if (!strcmp(key, "advice_for")) {
            rc = read_name(s, key, bn_face_name, SPS_BN_FACE_PYTHON + 1, &face);
        } else if (!strcmp(key, "main_step")) {
            rc = sps__jread_text(s, key, b->main_step, sizeof b->main_step);
        } else if (!strcmp(key, "data_loading_zones")) {
            rc = read_data_zones(s, b);
        } else if (!strcmp(key, "evidence")) {
            rc = read_evidence(s, a, &b->evidence);
        } else if (!strcmp(key, "windows")) {
            rc = read_windows(s, a, b);
        } else if (!strcmp(key, "windows_note")) {
            rc = read_owned(s, key, a, &b->windows_note);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    if (rc)
        return rc;
    /* what the analysis gives every evidence of the run (bottleneck.c) */
    b->face = (enum sps_bn_face)face;
    b->evidence.face = b->face;
    for (size_t i = 0; i < b->nwindows; i++)
        b->windows[i].evidence.face = b->face;
    if (!rep->info.sampler) {
        const char *why = rep->info.sampler_absent_reason ? rep->info.sampler_absent_reason : "no sampler ran";
        if ((rc = own_text(a, why, &b->evidence.why_sampler)))
            return rc;
        for (size_t i = 0; i < b->nwindows; i++)
            b->windows[i].evidence.why_sampler = b->evidence.why_sampler;
    }
    return 0;
}

/* ------------------------------------------------------------------ leaks */

static int read_leak_series(struct sps_jscan *s, struct sps_leak_series *ls) {
    static const struct {
        const char *key;
        size_t offset;
    } numbers[] = {
#define F(name) {#name, offsetof(struct sps_leak_series, name)}
        F(seconds_analysed), F(ci95_low),        F(ci95_high),       F(growth_bytes),
        F(min_growth_bytes), F(allowance_bytes), F(median_bytes),    F(first_segment_median_bytes),
        F(last_segment_median_bytes),
#undef F
        /* each axis's name for the same figure; the other axis's is null */
        {"first_step", offsetof(struct sps_leak_series, first_at)},
        {"first_seconds", offsetof(struct sps_leak_series, first_at)},
        {"last_step", offsetof(struct sps_leak_series, last_at)},
        {"last_seconds", offsetof(struct sps_leak_series, last_at)},
        {"slope_bytes_per_step", offsetof(struct sps_leak_series, slope)},
        {"slope_bytes_per_second", offsetof(struct sps_leak_series, slope)},
        {"window_from_step", offsetof(struct sps_leak_series, window_from)},
        {"window_from_seconds", offsetof(struct sps_leak_series, window_from)},
    };
    char key[64];
    int v = 0;
    memset(ls, 0, sizeof *ls);
    ls->seconds_analysed = ls->first_at = ls->last_at = ls->slope = ls->window_from = NAN;
    int rc = sps__jread_open(s, "leaks.series", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        size_t i = 0;
        while (i < sizeof numbers / sizeof *numbers && strcmp(numbers[i].key, key))
            i++;
        if (i < sizeof numbers / sizeof *numbers) {
            double x;
            double *field = (double *)((char *)ls + numbers[i].offset);
            rc = sps__jread_number(s, key, &x);
            /* a key shared by both axes is taken as written; of a pair,
             * the one that is not null */
            if (!rc && (!isnan(x) || (field != &ls->first_at && field != &ls->last_at && field != &ls->slope &&
                                      field != &ls->window_from)))
                *field = x;
        } else if (!strcmp(key, "series")) {
            rc = sps__jread_text(s, key, ls->series, sizeof ls->series);
        } else if (!strcmp(key, "scope")) {
            rc = read_name(s, key, leak_scope_name, SPS_LEAK_SCOPE_COUNT, &v);
            ls->scope = (enum sps_leak_scope)v;
        } else if (!strcmp(key, "pid")) {
            rc = sps__jread_i32(s, key, -1, &ls->pid);
        } else if (!strcmp(key, "comm")) {
            rc = sps__jread_text(s, key, ls->comm, sizeof ls->comm);
        } else if (!strcmp(key, "gpu")) {
            rc = sps__jread_i32(s, key, -1, &ls->gpu);
        } else if (!strcmp(key, "verdict")) {
            rc = read_name(s, key, leak_verdict_name, SPS_LEAK_FOUND + 1, &v);
            ls->verdict = (enum sps_leak_verdict)v;
        } else if (!strcmp(key, "reason")) {
            rc = sps__jread_text(s, key, ls->reason, sizeof ls->reason);
        } else if (!strcmp(key, "rule")) {
            /* null: not judged (SPS_LEAK_RULE_OTHER) */
            if (sps__jscan_peek(s) == 'n') {
                rc = sps__jscan_skip(s);
            } else {
                rc = read_name(s, key, leak_rule_name, SPS_LEAK_RULE_ALL + 1, &v);
                ls->rule = (enum sps_leak_rule)v;
            }
        } else if (!strcmp(key, "points") || !strcmp(key, "steps_analysed")) {
            uint64_t n;
            if (!(rc = sps__jread_u64(s, key, &n)))
                *(key[0] == 'p' ? &ls->points : &ls->steps_analysed) = (size_t)n;
        } else if (!strcmp(key, "window")) {
            /* absent in a report written before the last half was judged:
             * the whole run (0) */
            rc = read_name(s, key, leak_window_name, SPS_LEAK_WINDOW_COUNT, &v);
            ls->window = (enum sps_leak_window)v;
        } else if (!strcmp(key, "rising_segments")) {
            rc = sps__jread_i32(s, key, -1, &ls->rising_segments);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

static int read_leak_series_array(struct sps_jscan *s, struct sps_leaks *l) {
    size_t cap = l->nseries; /* a repeated key appends: grow at once */
    int rc = sps__jread_open(s, "leaks.series", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (l->nseries == cap) {
            size_t grown_cap = cap ? 2 * cap : 8;
            struct sps_leak_series *grown = realloc(l->series, grown_cap * sizeof *grown);
            if (!grown)
                return SPS_ENOMEM;
            l->series = grown;
            cap = grown_cap;
        }
        rc = read_leak_series(s, &l->series[l->nseries++]);
    }
    return rc;
}

static int read_step_stream(struct sps_jscan *s, struct sps_leaks *l) {
    char key[64];
    l->pid = l->tid = -1;
    if (sps__jscan_peek(s) == 'n')
        return sps__jscan_skip(s); /* no step stream */
    int rc = sps__jread_open(s, "step_stream", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "name"))
            rc = sps__jread_text(s, key, l->step_name, sizeof l->step_name);
        else if (!strcmp(key, "pid"))
            rc = sps__jread_i32(s, key, -1, &l->pid);
        else if (!strcmp(key, "tid"))
            rc = sps__jread_i32(s, key, -1, &l->tid);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_leaks(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_leaks *l = &rep->analysis.leaks;
    char key[64];
    int v = 0;
    sps__leaks_free(l);
    l->computed = 1;
    l->pid = l->tid = -1;
    l->axis = SPS_LEAK_AXIS_STEPS; /* a report.json from before the time axis judged steps only */
    l->warmup_seconds = l->seconds_analysed = NAN;
    /* the tree the tree series covers: the sampler's (read before) */
    l->tree_pid = rep->info.sampler && rep->info.sampler->tree_pid > 0 ? rep->info.sampler->tree_pid : 0;
    int rc = sps__jread_open(s, "leaks", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "verdict")) {
            rc = read_name(s, key, leak_verdict_name, SPS_LEAK_FOUND + 1, &v);
            l->verdict = (enum sps_leak_verdict)v;
        } else if (!strcmp(key, "reason")) {
            rc = sps__jread_text(s, key, l->reason, sizeof l->reason);
        } else if (!strcmp(key, "axis")) {
            rc = read_name(s, key, leak_axis_name, SPS_LEAK_AXIS_COUNT, &v);
            l->axis = (enum sps_leak_axis)v;
        } else if (!strcmp(key, "warmup_seconds")) {
            rc = sps__jread_number(s, key, &l->warmup_seconds);
        } else if (!strcmp(key, "seconds_analysed")) {
            rc = sps__jread_number(s, key, &l->seconds_analysed);
        } else if (!strcmp(key, "step_stream")) {
            rc = read_step_stream(s, l);
        } else if (!strcmp(key, "tree_memory")) {
            rc = sps__jread_text(s, key, l->tree_note, sizeof l->tree_note);
        } else if (!strcmp(key, "warmup_steps") || !strcmp(key, "steps_analysed")) {
            uint64_t n;
            if (!(rc = sps__jread_u64(s, key, &n)))
                *(key[0] == 'w' ? &l->warmup_steps : &l->steps_analysed) = (size_t)n;
        } else if (!strcmp(key, "processes_left_out")) {
            rc = sps__jread_u64(s, key, &l->processes_left_out);
        } else if (!strcmp(key, "series")) {
            rc = read_leak_series_array(s, l);
        } else {
            rc = sps__jscan_skip(s); /* processes_max, thresholds: the constants in leaks.h */
        }
    }
    for (size_t i = 0; i < l->nseries; i++) /* the run's axis is each series' */
        l->series[i].axis = l->axis;
    return rc;
}

/* ----------------------------------------------------------------- energy */

/* The series a measured domain's figure came from (energy.c, measure). */
static const struct sps__series *domain_series(const struct sps__sampler_result *r,
                                               const struct sps_energy_domain *d) {
    int counter = d->method == SPS_ENERGY_COUNTER;
    if (!r || d->method == SPS_ENERGY_UNAVAILABLE)
        return NULL;
    if (!strcmp(d->domain, "gpu")) {
        for (int g = 0; g < r->ngpus; g++)
            if (r->gpu[g].index == d->gpu)
                return &r->gpu[g].m[counter ? SPS_M_GPU_ENERGY_JOULES : SPS_M_GPU_POWER_WATTS];
        return NULL;
    }
    if (!strcmp(d->domain, "cpu_package"))
        return &r->host[counter ? SPS_M_CPU_PACKAGE_ENERGY_JOULES : SPS_M_CPU_PACKAGE_POWER_WATTS];
    if (!strcmp(d->domain, "dram"))
        return &r->host[counter ? SPS_M_DRAM_ENERGY_JOULES : SPS_M_DRAM_POWER_WATTS];
    return NULL;
}

static int read_domain(struct sps_jscan *s, struct sps_energy_domain *d) {
    char key[64];
    int v = 0;
    memset(d, 0, sizeof *d);
    d->gpu = -1;
    d->joules = d->span_s = NAN;
    int rc = sps__jread_open(s, "energy.domains", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "domain")) {
            rc = sps__jread_text(s, key, d->domain, sizeof d->domain);
        } else if (!strcmp(key, "gpu")) {
            rc = sps__jread_i32(s, key, -1, &d->gpu);
        } else if (!strcmp(key, "name")) {
            rc = sps__jread_text(s, key, d->name, sizeof d->name);
        } else if (!strcmp(key, "joules")) {
            rc = sps__jread_number(s, key, &d->joules);
        } else if (!strcmp(key, "method")) {
            if (sps__jscan_peek(s) == 'n') {
                rc = sps__jscan_skip(s);
            } else {
                rc = read_name(s, key, energy_method_name, SPS_ENERGY_INTEGRATED_POWER + 1, &v);
                d->method = (enum sps_energy_method)v;
            }
        } else if (!strcmp(key, "unavailable_reason")) {
            rc = sps__jread_text(s, key, d->reason, sizeof d->reason);
        } else if (!strcmp(key, "source")) {
            rc = sps__jread_text(s, key, d->source, sizeof d->source);
        } else if (!strcmp(key, "span_s")) {
            rc = sps__jread_number(s, key, &d->span_s);
        } else if (!strcmp(key, "readings")) {
            rc = sps__jread_u64(s, key, &d->readings);
        } else {
            rc = sps__jscan_skip(s); /* kwh: joules'; evidence: words over source, readings and span_s */
        }
    }
    return rc;
}

static int read_domains(struct sps_jscan *s, struct sps_energy *e, const struct sps__sampler_result *sampler) {
    int rc = sps__jread_open(s, "energy.domains", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (e->ndomains == SPS_ENERGY_MAX_DOMAINS)
            return sps__jread_fail(s, "fewer domains", "energy.domains");
        struct sps_energy_domain *d = &e->domain[e->ndomains++];
        if (!(rc = read_domain(s, d)))
            d->series = domain_series(sampler, d);
    }
    return rc;
}

static int read_per_step(struct sps_jscan *s, struct sps_energy *e) {
    char key[64];
    int rc = sps__jread_open(s, "per_step", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "steps"))
            rc = sps__jread_u64(s, key, &e->step_count);
        else if (!strcmp(key, "span_s"))
            rc = sps__jread_number(s, key, &e->step_span_s);
        else if (!strcmp(key, "joules"))
            rc = sps__jread_number(s, key, &e->step_joules);
        else if (!strcmp(key, "kwh"))
            rc = sps__jread_number(s, key, &e->step_kwh);
        else if (!strcmp(key, "co2e_grams"))
            rc = sps__jread_number(s, key, &e->step_co2e_grams);
        else if (!strcmp(key, "unavailable_reason"))
            rc = sps__jread_text(s, key, e->step_reason, sizeof e->step_reason);
        else
            rc = sps__jscan_skip(s); /* method: fixed text */
    }
    return rc;
}

static int read_energy(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_energy *e = &rep->analysis.energy;
    char key[64], from[64];
    memset(e, 0, sizeof *e);
    e->total_joules = e->total_kwh = e->co2e_grams = NAN;
    e->step_span_s = e->step_joules = e->step_kwh = e->step_co2e_grams = NAN;
    int rc = sps__jread_open(s, "energy", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "carbon_intensity_g_per_kwh")) {
            rc = sps__jread_number(s, key, &e->carbon_g_per_kwh);
        } else if (!strcmp(key, "carbon_intensity_from")) {
            /* the flag's name when the user gave it, a default's words otherwise */
            if (!(rc = sps__jread_text(s, key, from, sizeof from)))
                e->carbon_is_default = strcmp(from, "--carbon-intensity") != 0;
        } else if (!strcmp(key, "pue")) {
            rc = sps__jread_number(s, key, &e->pue);
        } else if (!strcmp(key, "pue_from")) {
            if (!(rc = sps__jread_text(s, key, from, sizeof from)))
                e->pue_is_default = strcmp(from, "--pue") != 0;
        } else if (!strcmp(key, "domains")) {
            rc = read_domains(s, e, rep->info.sampler);
        } else if (!strcmp(key, "domains_measured")) {
            uint64_t n;
            if (!(rc = sps__jread_u64(s, key, &n)))
                e->measured = (size_t)n;
        } else if (!strcmp(key, "joules")) {
            rc = sps__jread_number(s, key, &e->total_joules);
        } else if (!strcmp(key, "kwh")) {
            rc = sps__jread_number(s, key, &e->total_kwh);
        } else if (!strcmp(key, "co2e_grams")) {
            rc = sps__jread_number(s, key, &e->co2e_grams);
        } else if (!strcmp(key, "unavailable_reason")) {
            rc = sps__jread_text(s, key, e->total_reason, sizeof e->total_reason);
        } else if (!strcmp(key, "per_step")) {
            rc = read_per_step(s, e);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

/* ------------------------------------------------------------- throughput */

/* per_step_per_second: the rates over the used steps' own rates. */
static int read_step_rates(struct sps_jscan *s, struct sps_throughput_counter *c) {
    char key[64];
    int rc = sps__jread_open(s, "per_step_per_second", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "mean"))
            rc = sps__jread_number(s, key, &c->step_rate_mean);
        else if (!strcmp(key, "median"))
            rc = sps__jread_number(s, key, &c->step_rate_median);
        else if (!strcmp(key, "min"))
            rc = sps__jread_number(s, key, &c->step_rate_min);
        else if (!strcmp(key, "max"))
            rc = sps__jread_number(s, key, &c->step_rate_max);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_counter(struct sps_jscan *s, struct sps_throughput_counter *c) {
    static const struct {
        const char *key;
        size_t offset;
    } numbers[] = {
#define F(key, name) {key, offsetof(struct sps_throughput_counter, name)}
        F("total", total), F("in_steps", in_steps), F("step_seconds", step_seconds), F("per_second", per_second),
#undef F
    };
    char key[64], why[320] = "";
    memset(c, 0, sizeof *c);
    int rc = sps__jread_open(s, "throughput.counters", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        size_t i = 0;
        while (i < sizeof numbers / sizeof *numbers && strcmp(numbers[i].key, key))
            i++;
        if (i < sizeof numbers / sizeof *numbers) {
            rc = sps__jread_number(s, key, (double *)((char *)c + numbers[i].offset));
        } else if (!strcmp(key, "per_step_per_second")) {
            rc = read_step_rates(s, c);
        } else if (!strcmp(key, "name")) {
            rc = sps__jread_text(s, key, c->name, sizeof c->name);
        } else if (!strcmp(key, "steps")) {
            rc = sps__jread_u64(s, key, &c->steps);
        } else if (!strcmp(key, "threads")) {
            rc = sps__jread_u64(s, key, &c->threads);
        } else if (!strcmp(key, "is_flops")) {
            rc = sps__jread_bool(s, key, &c->is_flops);
        } else if (!strcmp(key, "unavailable_reason")) {
            rc = sps__jread_text(s, key, why, sizeof why);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    /* a step owns some of its counts when it has a rate, or when the
     * reason says only warm-up steps did (sps__throughput_counter_why) */
    struct sps_throughput_counter warmup_only = {.in_a_step = 1};
    c->in_a_step = c->steps > 0 || !strcmp(why, sps__throughput_counter_why(&warmup_only));
    return rc;
}

static int read_counters(struct sps_jscan *s, struct sps_throughput *t) {
    size_t cap = t->ncounters; /* a repeated key appends: grow at once */
    int rc = sps__jread_open(s, "throughput.counters", '[');
    for (int at = 0; sps__jread_element(s, &at, &rc);) {
        if (t->ncounters == cap) {
            size_t grown_cap = cap ? 2 * cap : 8;
            struct sps_throughput_counter *grown = realloc(t->counters, grown_cap * sizeof *grown);
            if (!grown)
                return SPS_ENOMEM;
            t->counters = grown;
            cap = grown_cap;
        }
        rc = read_counter(s, &t->counters[t->ncounters++]);
    }
    return rc;
}

static int read_flops(struct sps_jscan *s, struct sps_throughput *t, char *counter, size_t cap) {
    char key[64];
    int rc = sps__jread_open(s, "flops", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "counter"))
            rc = sps__jread_text(s, key, counter, cap);
        else if (!strcmp(key, "per_second"))
            rc = sps__jread_number(s, key, &t->flops_per_second);
        else if (!strcmp(key, "unavailable_reason"))
            rc = sps__jread_text(s, key, t->flops_reason, sizeof t->flops_reason);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_mfu(struct sps_jscan *s, struct sps_throughput *t) {
    char key[64];
    int rc = sps__jread_open(s, "mfu", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "value"))
            rc = sps__jread_number(s, key, &t->mfu);
        else if (!strcmp(key, "peak_flops"))
            rc = sps__jread_number(s, key, &t->peak_flops_total);
        else if (!strcmp(key, "gpus"))
            rc = sps__jread_i32(s, key, 0, &t->gpus);
        else if (!strcmp(key, "peak_from"))
            rc = sps__jread_text(s, key, t->peak_from, sizeof t->peak_from);
        else if (!strcmp(key, "unavailable_reason"))
            rc = sps__jread_text(s, key, t->mfu_reason, sizeof t->mfu_reason);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_throughput(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_throughput *t = &rep->analysis.throughput;
    char key[64], flops_counter[SPS_REC_NAME_LEN] = "";
    sps__throughput_free(t);
    memset(t, 0, sizeof *t);
    t->flops = -1;
    t->flops_per_second = t->mfu = t->peak_flops_total = NAN;
    int rc = sps__jread_open(s, "throughput", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "warmup_steps_excluded")) {
            rc = sps__jread_u64(s, key, &t->warmup_steps);
        } else if (!strcmp(key, "counters")) {
            rc = read_counters(s, t);
        } else if (!strcmp(key, "unavailable_reason")) {
            rc = sps__jread_text(s, key, t->reason, sizeof t->reason);
        } else if (!strcmp(key, "flops")) {
            rc = read_flops(s, t, flops_counter, sizeof flops_counter);
        } else if (!strcmp(key, "mfu")) {
            rc = read_mfu(s, t);
        } else {
            rc = sps__jscan_skip(s); /* method: fixed text */
        }
    }
    /* the FLOP counter by name: the first of that name, as the writer
     * names counters[flops] */
    for (size_t i = 0; !rc && flops_counter[0] && i < t->ncounters && t->flops < 0; i++)
        if (!strcmp(t->counters[i].name, flops_counter))
            t->flops = (long)i;
    if (!rc && flops_counter[0] && t->flops < 0)
        return sps__jread_fail(s, "a counter that \"counters\" lists", "flops.counter");
    return rc;
}

/* --------------------------------------------------------------- overhead */

static int read_budget(struct sps_jscan *s, struct sps_overhead *o) {
    char key[64];
    int v = 0;
    if (sps__jscan_peek(s) == 'n')
        return sps__jscan_skip(s); /* no budget was set */
    o->budget_on = 1;
    int rc = sps__jread_open(s, "budget", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "max_percent_of_workload_cpu")) {
            rc = sps__jread_number(s, key, &o->budget_percent);
        } else if (!strcmp(key, "exceeded")) {
            rc = sps__jread_bool(s, key, &o->exceeded);
        } else if (!strcmp(key, "first_exceeded_s")) {
            rc = sps__jread_number(s, key, &o->first_exceeded_s);
        } else if (!strcmp(key, "thin_level")) {
            rc = read_name(s, key, thin_level_name, SPS_THIN_STEPS + 1, &v);
            o->thin_level = (uint32_t)v;
        } else if (!strcmp(key, "thinned_since_s")) {
            rc = sps__jread_number(s, key, &o->thinned_since_s);
        } else if (!strcmp(key, "windows_judged")) {
            rc = sps__jread_u64(s, key, &o->windows);
        } else if (!strcmp(key, "windows_over")) {
            rc = sps__jread_u64(s, key, &o->windows_over);
        } else if (!strcmp(key, "peak_window_percent")) {
            rc = sps__jread_number(s, key, &o->peak_window_percent);
        } else if (!strcmp(key, "last_window_percent")) {
            rc = sps__jread_number(s, key, &o->last_window_percent);
        } else if (!strcmp(key, "over_with_steps_only")) {
            rc = sps__jread_bool(s, key, &o->over_with_steps_only);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

static int read_part(struct sps_jscan *s, const char *kind, struct sps_overhead_part *part) {
    char key[64];
    int rc = sps__jread_open(s, kind, '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "count"))
            rc = sps__jread_u64(s, key, &part->count);
        else if (!strcmp(key, "unpriced"))
            rc = sps__jread_u64(s, key, &part->unpriced);
        else if (!strcmp(key, "cost_ns"))
            rc = sps__jread_number(s, key, &part->cost_ns);
        else if (!strcmp(key, "s"))
            rc = sps__jread_number(s, key, &part->s);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_parts(struct sps_jscan *s, struct sps_overhead *o) {
    char key[64];
    int rc = sps__jread_open(s, "recording_by_kind", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        int k = 0;
        while (k < SPS_OH_KINDS && strcmp(sps__overhead_kind_name((enum sps_overhead_kind)k), key))
            k++;
        if (k == SPS_OH_KINDS) {
            rc = sps__jscan_skip(s); /* a kind a newer stepscope prices */
            continue;
        }
        rc = read_part(s, key, &o->part[k]);
    }
    return rc;
}

static int read_overhead(struct sps_jscan *s, struct sps_report *rep) {
    static const struct {
        const char *key;
        size_t offset;
    } numbers[] = {
#define F(key, name) {key, offsetof(struct sps_overhead, name)}
        F("zone_cost_ns", zone_cost_ns),
        F("value_cost_ns", value_cost_ns),
        F("zone_end_in_run_ns", zone_end_in_run_ns),
        F("zone_end_warm_ns", zone_end_warm_ns),
        F("recording_s", recording_s),
        F("thinned_zone_cost_ns", thinned_zone_cost_ns),
        F("sampler_cpu_s", sampler_cpu_s),
        F("sampler_percent_of_core", sampler_percent_of_core),
        F("live_view_cpu_s", live_view_cpu_s),
        F("live_view_percent_of_core", live_view_percent_of_core),
        F("guard_cpu_s", guard_cpu_s),
        F("guard_percent_of_core", guard_percent_of_core),
        F("total_s", total_s),
        F("percent_of_workload_cpu", percent_of_workload_cpu),
        F("percent_of_wall", percent_of_wall),
#undef F
    };
    static const struct {
        const char *key;
        size_t offset;
    } counts[] = {
#define C(name) {#name, offsetof(struct sps_overhead, name)}
        C(zones_recorded), C(values_recorded), C(zone_end_samples), C(zone_end_samples_dropped), C(zones_thinned),
#undef C
    };
    struct sps_overhead *o = &rep->analysis.overhead;
    struct sps_analysis *a = &rep->analysis;
    char key[64];
    memset(o, 0, sizeof *o);
    o->budget_percent = o->first_exceeded_s = o->thinned_since_s = NAN;
    o->peak_window_percent = o->last_window_percent = NAN;
    int rc = sps__jread_open(s, "overhead", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        size_t i = 0, k = 0;
        while (i < sizeof numbers / sizeof *numbers && strcmp(numbers[i].key, key))
            i++;
        while (k < sizeof counts / sizeof *counts && strcmp(counts[k].key, key))
            k++;
        if (i < sizeof numbers / sizeof *numbers)
            rc = sps__jread_number(s, key, (double *)((char *)o + numbers[i].offset));
        else if (k < sizeof counts / sizeof *counts)
            rc = sps__jread_u64(s, key, (uint64_t *)((char *)o + counts[k].offset));
        else if (!strcmp(key, "recording_unmeasured_reason"))
            rc = read_owned(s, key, a, &o->unmeasured_reason);
        else if (!strcmp(key, "recording_partial"))
            rc = sps__jread_bool(s, key, &o->recording_partial);
        else if (!strcmp(key, "recording_by_kind"))
            rc = read_parts(s, o);
        else if (!strcmp(key, "budget"))
            rc = read_budget(s, o);
        else
            rc = sps__jscan_skip(s);
    }
    /* written under "timing", as the analysis took them (overhead.c) */
    o->workload_cpu_s = rep->info.have_times ? rep->info.user_s + rep->info.sys_s : NAN;
    o->wall_s = rep->info.have_times ? rep->info.wall_s : NAN;
    return rc;
}

/* ------------------------------------------ the watcher's facts, back */

/*
 * What the watcher knew that report.json keeps only inside the analysis,
 * back into rep->info and rep->analysis_config as the analysis took it
 * (overhead.c, bottleneck.c, energy.c, throughput.c): the measured
 * recording cost (or why there is none), the --max-overhead guard's
 * report, the CPU count, and what the user told the analysis (a carbon
 * intensity, a PUE, a peak: each part names the flag it came from).
 * Analysing the run again with them gives the same answers.
 */
static int info_from_analysis(struct sps_report *rep) {
    const struct sps_analysis *a = &rep->analysis;
    const struct sps_overhead *o = &a->overhead;
    struct sps_run_info *info = &rep->info;
    info->have_record_cost = !o->unmeasured_reason && isfinite(o->zone_cost_ns);
    if (info->have_record_cost) {
        info->zone_cost_ns = o->zone_cost_ns;
        info->value_cost_ns = o->value_cost_ns;
        info->thinned_zone_cost_ns = isfinite(o->thinned_zone_cost_ns) ? o->thinned_zone_cost_ns : 0;
        info->warm_end_ns = isfinite(o->zone_end_warm_ns) ? o->zone_end_warm_ns : 0;
    } else if (o->unmeasured_reason) {
        char **why = &rep->strings_owned[RECORD_COST_REASON_SLOT];
        free(*why);
        if (!(*why = strdup(o->unmeasured_reason)))
            return SPS_ENOMEM;
        info->record_cost_absent_reason = *why;
    }
    struct sps_guard_report *g = &info->guard;
    memset(g, 0, sizeof *g);
    g->on = o->budget_on;
    if (g->on) {
        g->budget = o->budget_percent / 100.0;
        g->first_over_s = o->first_exceeded_s;
        g->windows = o->windows;
        g->windows_over = o->windows_over;
        g->peak_share = o->windows ? o->peak_window_percent / 100.0 : 0;
        g->last_share = o->windows ? o->last_window_percent / 100.0 : NAN;
        g->over_at_steps = o->over_with_steps_only;
        g->cpu_seconds = o->guard_cpu_s;
    }
    if (a->bottleneck.computed)
        info->cpu_count = a->bottleneck.evidence.cpu_count;
    struct sps_analysis_config *cfg = &rep->analysis_config;
    sps__analysis_config_default(cfg);
    if (a->energy.ndomains && !a->energy.carbon_is_default)
        cfg->carbon_g_per_kwh = a->energy.carbon_g_per_kwh;
    if (a->energy.ndomains && !a->energy.pue_is_default)
        cfg->pue = a->energy.pue;
    const struct sps_throughput *t = &a->throughput;
    if (!strncmp(t->peak_from, "--peak-flops", strlen("--peak-flops")) && isfinite(t->peak_flops_total))
        cfg->peak_flops = t->peak_flops_total / (t->gpus > 0 ? t->gpus : 1);
    info->analysis = cfg;
    return 0;
}

/* ------------------------------------------------------------ entry point */

void sps__report_analysis_unknown(struct sps_analysis *a) {
    struct sps_energy *e = &a->energy;
    e->total_joules = e->total_kwh = e->co2e_grams = NAN;
    e->step_span_s = e->step_joules = e->step_kwh = e->step_co2e_grams = NAN;
    a->throughput.flops = -1;
    a->throughput.flops_per_second = a->throughput.mfu = a->throughput.peak_flops_total = NAN;
}

/* ------------------------------------------------------- torch.cuda memory */

static int read_torch_memory(struct sps_jscan *s, struct sps_torch_memory *t) {
    static const struct {
        const char *key;
        size_t offset;
    } numbers[] = {
#define F(name) {#name, offsetof(struct sps_torch_memory, name)}
        F(peak_allocated_bytes), F(peak_reserved_bytes), F(end_allocated_bytes), F(end_reserved_bytes),
        F(growth_bytes_per_step),
#undef F
    };
    char key[64];
    int v = 0;
    int rc = sps__jread_open(s, "torch_cuda_memory", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        size_t i = 0;
        while (i < sizeof numbers / sizeof *numbers && strcmp(numbers[i].key, key))
            i++;
        if (i < sizeof numbers / sizeof *numbers) {
            rc = sps__jread_number(s, key, (double *)((char *)t + numbers[i].offset));
        } else if (!strcmp(key, "pid") || !strcmp(key, "tid")) {
            rc = sps__jread_i32(s, key, -1, key[0] == 'p' ? &t->pid : &t->tid);
        } else if (!strcmp(key, "steps") || !strcmp(key, "steps_read") || !strcmp(key, "peak_known_steps") ||
                   !strcmp(key, "processes")) {
            uint64_t n;
            size_t *field = !strcmp(key, "steps")        ? &t->steps
                            : !strcmp(key, "steps_read") ? &t->steps_read
                            : !strcmp(key, "processes")  ? &t->processes
                                                         : &t->peak_known;
            if (!(rc = sps__jread_u64(s, key, &n)))
                *field = (size_t)n;
        } else if (!strcmp(key, "leak_verdict")) {
            rc = read_name(s, key, leak_verdict_name, SPS_LEAK_FOUND + 1, &v);
            t->verdict = (enum sps_leak_verdict)v;
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    if (!rc)
        t->present = 1;
    return rc;
}

int sps__report_read_analysis(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_analysis *a = &rep->analysis;
    char key[64];
    sps__analysis_free(a);
    sps__report_analysis_unknown(a);
    int rc = sps__jread_open(s, "analysis", '{');
    for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);) {
        if (!strcmp(key, "bottleneck"))
            rc = read_bottleneck(s, rep);
        else if (!strcmp(key, "leaks"))
            rc = read_leaks(s, rep);
        else if (!strcmp(key, "energy"))
            rc = read_energy(s, rep);
        else if (!strcmp(key, "throughput"))
            rc = read_throughput(s, rep);
        else if (!strcmp(key, "overhead"))
            rc = read_overhead(s, rep);
        else if (!strcmp(key, "straggler"))
            rc = sps__report_read_straggler(s, &a->straggler);
        else if (!strcmp(key, "torch_cuda_memory"))
            rc = read_torch_memory(s, &a->torch_memory);
        else
            rc = sps__jscan_skip(s); /* a part a newer stepscope answers */
    }
    if (!rc)
        rc = info_from_analysis(rep);
    if (!rc)
        a->computed = 1;
    return rc;
}
