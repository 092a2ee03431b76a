/*
 * auto_mode.c - which mode recorded a run's steps, in report.json and in
 * one sentence (auto_mode.h).
 */
#include "render/auto_mode.h"

#include <stdio.h>

#include "report/report.h"

void sps__report_json_auto(struct sps_jw *w, const struct sps_report *rep) {
    struct sps_run_auto a;
    sps__run_auto(&rep->run, rep->info.auto_inject, &a);
    const char *by = sps__steps_by_name(a.steps_by);
    if (by)
        sps__jw_string(w, "steps_recorded_by", by);
    else
        sps__jw_null(w, "steps_recorded_by");
    const char *state = sps__auto_state_name(&a);
    if (!state) {
        sps__jw_null(w, "auto");
        return;
    }
    sps__jw_object(w, "auto");
    sps__jw_string(w, "state", state);
    if (a.inject == SPS_AUTO_INJECT_OFF)
        sps__jw_string(w, "reason", "stepscope run --no-auto");
    else if (a.inject == SPS_AUTO_INJECT_MISSING)
        sps__jw_string(w, "reason", "stepscope's Python startup hook (sitecustomize.py) was not found");
    else if (a.reason)
        sps__jw_string(w, "reason", a.reason);
    else if (!a.active && !a.stood_aside && !a.turned_off)
        sps__jw_string(w, "reason", "no Python process of the run imported torch");
    else
        sps__jw_null(w, "reason");
    if (a.reason)
        sps__jw_int(w, "reason_pid", a.reason_pid);
    else
        sps__jw_null(w, "reason_pid");
    sps__jw_uint(w, "processes_active", a.active);
    sps__jw_uint(w, "processes_stood_aside", a.stood_aside);
    sps__jw_uint(w, "processes_turned_off", a.turned_off);
    sps__jw_end(w, '}');
}

void sps__report_json_process_auto(struct sps_jw *w, const struct sps_process_data *p) {
    if (p->py_auto == SPS_REC_PY_AUTO_NONE) {
        sps__jw_null(w, "auto");
    } else {
        sps__jw_object(w, "auto");
        static const char *const states[] = {"none", "active", "stood_aside", "turned_off"};
        sps__jw_string(w, "state", states[p->py_auto <= SPS_REC_PY_AUTO_TURNED_OFF ? p->py_auto : 0]);
        if (p->py_auto_reason[0])
            sps__jw_string(w, "reason", p->py_auto_reason);
        else
            sps__jw_null(w, "reason");
        sps__jw_end(w, '}');
    }
    sps__jw_bool(w, "instrument", p->py_instrument != 0);
}

int sps__auto_fact(const struct sps_report *rep, char *what, size_t wlen, char *detail, size_t dlen) {
    struct sps_run_auto a;
    sps__run_auto(&rep->run, rep->info.auto_inject, &a);
    detail[0] = '\0';
    if (a.stood_aside || a.turned_off)
        snprintf(detail, dlen, "auto-instrumentation %s: %s", a.stood_aside ? "stood aside" : "turned itself off",
                 a.reason ? a.reason : "");
    switch (a.steps_by) {
    case SPS_STEPS_BY_AUTO:
        snprintf(what, wlen, "auto-instrumented");
        if (!detail[0])
            snprintf(detail, dlen, "--no-auto to switch off");
        return 1;
    case SPS_STEPS_BY_INSTRUMENT:
        snprintf(what, wlen, "recorded by stepscope.torch.instrument()");
        return 1;
    case SPS_STEPS_BY_CODE:
        /* said only where auto was in play: a C program's run needs no such line */
        if (!a.stood_aside && !a.turned_off && !a.active && a.inject != SPS_AUTO_INJECT_OFF)
            return 0;
        snprintf(what, wlen, "recorded by the program's own zones");
        return 1;
    }
    if (a.stood_aside || a.turned_off) {
        snprintf(what, wlen, "none recorded");
        return 1;
    }
    if (a.active) {
        snprintf(what, wlen, "none recorded");
        snprintf(detail, dlen, "auto-instrumentation was on, and no optimizer step() ran");
        return 1;
    }
    if (a.inject == SPS_AUTO_INJECT_OFF) {
        snprintf(what, wlen, "none recorded");
        snprintf(detail, dlen, "auto-instrumentation was off: --no-auto");
        return 1;
    }
    return 0;
}

const char *sps__auto_sentence(const struct sps_report *rep, char *buf, size_t len) {
    char what[64], detail[SPS_REC_AUTO_REASON_LEN + 64];
    if (!sps__auto_fact(rep, what, sizeof what, detail, sizeof detail))
        return NULL;
    snprintf(buf, len, detail[0] ? "steps: %s (%s)" : "steps: %s", what, detail);
    return buf;
}
