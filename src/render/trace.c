/*
 * trace.c - trace.json in the Trace Event Format (its JSON object form),
 * for Perfetto UI and chrome://tracing, made from the report model.
 * docs/trace-format.md describes the file: tracks, units, the size budget
 * and what otherData reports.  The phases live in trace_gather.c,
 * trace_budget.c and trace_render.c (trace_parts.h).
 */
#include <stdlib.h>
#include <string.h>

#include "render/exporters.h"
#include "render/trace_parts.h"
#include "stepscope.h"

static void trace_free(struct trace *t) {
    free(t->x);
    free(t->steps);
    free(t->tracks);
    free(t->points);
    free(t->meta);
    free(t->scratch.p);
    free(t->pids);
}

static int export_trace(const struct sps_report *rep, struct sps_report *taking, FILE *out, uint64_t max_bytes,
                        char *err, size_t errlen) {
    struct trace t;
    memset(&t, 0, sizeof t);
    t.rep = rep;
    t.taking = taking;
    int rc = 0;
    sps__trace_gather(&t);
    sps__trace_name_step_tracks(&t);
    if (!t.oom && sps__trace_arrange(&t) != 0)
        t.oom = 1;
    if (!t.oom)
        sps__trace_measure(&t);
    if (!t.oom) {
        rc = sps__trace_choose(&t, max_bytes, err, errlen);
        if (rc == 0)
            rc = sps__trace_write(&t, out, max_bytes, err, errlen);
        if (rc == SPS_ENOMEM)
            t.oom = 1;
    }
    if (t.oom) {
        snprintf(err, errlen, "trace.json: out of memory");
        rc = SPS_ENOMEM;
    }
    trace_free(&t);
    return rc;
}

int sps__export_trace(const struct sps_report *rep, FILE *out, uint64_t max_bytes, char *err, size_t errlen) {
    return export_trace(rep, NULL, out, max_bytes, err, errlen);
}

int sps__export_trace_taking_events(struct sps_report *rep, FILE *out, uint64_t max_bytes, char *err,
                                    size_t errlen) {
    /* the step rows' cells (steps.csv's and report.html's) are not the
     * trace's: they go first */
    for (size_t i = 0; i < rep->run.nsteps; i++) {
        free(rep->run.steps[i].by_name);
        rep->run.steps[i].by_name = NULL;
    }
    int rc = export_trace(rep, rep, out, max_bytes, err, errlen);
    rep->have_events = 0; /* its zone events are gone, whatever happened */
    return rc;
}
