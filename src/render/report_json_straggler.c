/*
 * report_json_straggler.c - report.json's "analysis.straggler", rendered
 * from the typed verdict (src/analysis/straggler.h).  The analysis
 * computes; this file only writes what it found (docs/analysis.md
 * documents every key), and src/report/report_read_straggler.c reads it
 * back.
 */
#include <math.h>

#include "analysis/straggler.h"
#include "render/json_writer.h"

static void rank_json(struct sps_jw *w, const struct sps_straggler_rank *k) {
    sps__jw_object(w, NULL);
    sps__jw_int(w, "rank", k->rank);
    sps__jw_string(w, "host", k->host);
    sps__jw_int(w, "pid", k->pid);
    sps__jw_uint(w, "steps", k->steps);
    sps__jw_number(w, "step_ms", k->step_ms);
    sps__jw_number(w, "wait_ms", k->wait_ms);
    sps__jw_number(w, "compute_ms", k->compute_ms);
    sps__jw_number(w, "excess_ms", k->excess_ms);
    sps__jw_number(w, "threshold_ms", k->threshold_ms);
    sps__jw_uint(w, "windows_named", k->windows_named);
    sps__jw_number(w, "share", k->share);
    sps__jw_bool(w, "slow", k->slow);
    if (k->slow)
        sps__jw_string(w, "phase", k->phase);
    else
        sps__jw_null(w, "phase");
    sps__jw_number(w, "phase_excess_ms", k->phase_excess_ms);
    sps__jw_number(w, "confidence", k->confidence);
    sps__jw_end(w, '}');
}

static void window_json(struct sps_jw *w, const struct sps_straggler_window *x) {
    sps__jw_object(w, NULL);
    sps__jw_uint(w, "first_step", x->first_step);
    sps__jw_uint(w, "last_step", x->last_step);
    sps__jw_uint(w, "steps", x->steps);
    sps__jw_number(w, "step_ms", x->step_ms);
    if (x->rank >= 0)
        sps__jw_int(w, "rank", x->rank);
    else
        sps__jw_null(w, "rank");
    sps__jw_uint(w, "ranks_named", x->named);
    sps__jw_int(w, "top_rank", x->top_rank);
    sps__jw_number(w, "excess_ms", x->excess_ms);
    sps__jw_number(w, "threshold_ms", x->threshold_ms);
    if (x->rank >= 0)
        sps__jw_string(w, "phase", x->phase);
    else
        sps__jw_null(w, "phase");
    sps__jw_number(w, "phase_excess_ms", x->phase_excess_ms);
    sps__jw_end(w, '}');
}

void sps__straggler_json(struct sps_jw *w, const struct sps_straggler *s) {
    sps__jw_object(w, "straggler");
    sps__jw_string(w, "verdict", sps__straggler_verdict_name(s->verdict));
    if (s->reason[0])
        sps__jw_string(w, "reason", s->reason);
    else
        sps__jw_null(w, "reason");
    sps__jw_string(w, "method",
                   "compute = step - time waiting in collectives; excess = compute - the other ranks' median, per "
                   "step; a window names a rank whose trimmed mean excess is above its threshold and whose waits "
                   "are below the others'");
    sps__jw_uint(w, "window_steps", s->window_steps);
    sps__jw_object(w, "thresholds");
    sps__jw_number(w, "abs_ms", SPS_STRAGGLER_ABS_MS);
    sps__jw_number(w, "share_of_step", SPS_STRAGGLER_REL);
    sps__jw_number(w, "standard_errors", SPS_STRAGGLER_SE);
    sps__jw_number(w, "steady_share", SPS_STRAGGLER_STEADY);
    sps__jw_end(w, '}');
    sps__jw_uint(w, "steps_judged", s->steps_judged);
    sps__jw_number(w, "step_ms", s->step_ms);
    if (s->slowest >= 0 && (size_t)s->slowest < s->nranks)
        sps__jw_int(w, "slowest_rank", s->ranks[s->slowest].rank);
    else
        sps__jw_null(w, "slowest_rank");
    sps__jw_number(w, "cost_ms", s->cost_ms);
    sps__jw_number(w, "spread_ms", s->spread_ms);
    sps__jw_number(w, "clean_share", s->clean_share);
    sps__jw_array(w, "ranks");
    for (size_t i = 0; i < s->nranks; i++)
        rank_json(w, &s->ranks[i]);
    sps__jw_end(w, ']');
    sps__jw_array(w, "windows");
    for (size_t i = 0; i < s->nwindows; i++)
        window_json(w, &s->windows[i]);
    sps__jw_end(w, ']');
    sps__jw_end(w, '}');
}
