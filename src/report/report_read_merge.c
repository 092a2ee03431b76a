/* report_read_merge.c - see report_read_merge.h. */
#include "report/report_read_merge.h"

#include <stdlib.h>
#include <string.h>

#include "model/align.h"
#include "report/report_read_run.h"
#include "report/report_read_values.h"
#include "stepscope.h"

#define KEY(lit) (!strcmp(s->str, lit))

static int read_slot(struct sps_jscan *s, struct sps_clock_sync *slot) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc;
    rc = SPS_RR_OBJECT(s, "processes[].clock_sync.start/end");
    slot->state = SPS_REC_SYNC_MEASURED;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        int64_t v = 0;
        if (KEY("offset_ns")) {
            rc = sps__jread_int(s, "clock_sync.offset_ns", INT64_MIN, INT64_MAX, 0, &v);
            slot->offset_ns = v;
        } else if (KEY("error_ns")) {
            rc = sps__jread_u64(s, "clock_sync.error_ns", &slot->error_ns);
        } else if (KEY("rounds")) {
            rc = sps__jread_int(s, "clock_sync.rounds", 0, UINT32_MAX, 0, &v);
            slot->rounds = (uint32_t)v;
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

static int read_sync(struct sps_jscan *s, struct sps_process_data *p) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc;
    rc = SPS_RR_OBJECT(s, "processes[].clock_sync");
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("start"))
            rc = read_slot(s, &p->clock_sync[SPS_SYNC_START]);
        else if (KEY("end"))
            rc = read_slot(s, &p->clock_sync[SPS_SYNC_END]);
        else if (KEY("not_measured_reason"))
            rc = sps__jread_text(s, "clock_sync.not_measured_reason", p->clock_sync_reason,
                                 sizeof p->clock_sync_reason);
        else
            rc = sps__jscan_skip(s);
    }
    /* a reason with no measurement in a slot: that slot failed */
    for (int i = 0; !rc && p->clock_sync_reason[0] && i < 2; i++)
        if (p->clock_sync[i].state == SPS_REC_SYNC_NONE)
            p->clock_sync[i].state = SPS_REC_SYNC_FAILED;
    return rc;
}

static int read_alignment(struct sps_jscan *s, struct sps_align *a) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc;
    rc = SPS_RR_OBJECT(s, "processes[].clock_alignment");
    a->source_rank = -1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        int64_t v = 0;
        if (KEY("method")) {
            char m[32];
            rc = sps__jread_text(s, "clock_alignment.method", m, sizeof m);
            for (uint32_t k = SPS_ALIGN_REFERENCE; !rc && k <= SPS_ALIGN_REALTIME; k++)
                if (!strcmp(m, sps__align_method_name(k)))
                    a->method = k;
            if (!rc && !a->method)
                rc = sps__jscan_fail(s, "clock_alignment.method: \"%s\" is not one of its values", m);
        } else if (KEY("source_rank")) {
            rc = sps__jread_i32(s, "clock_alignment.source_rank", -1, &a->source_rank);
        } else if (KEY("error_ns")) {
            rc = sps__jread_u64(s, "clock_alignment.error_ns", &a->error_ns);
        } else if (KEY("offset_ns") || KEY("offset_end_ns") || KEY("local_from_ns") || KEY("local_to_ns")) {
            int64_t *to = KEY("offset_ns") ? &a->off0_ns : KEY("offset_end_ns") ? &a->off1_ns
                          : KEY("local_from_ns")                                ? &a->at0_ns
                                                                                : &a->at1_ns;
            rc = sps__jread_int(s, "clock_alignment offsets", INT64_MIN, INT64_MAX, 0, &v);
            *to = v;
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

int sps__rr_process_clock(struct sps_jscan *s, struct sps_process_data *p) {
    if (KEY("clock_sync"))
        return read_sync(s, p);
    if (KEY("clock_alignment"))
        return read_alignment(s, &p->align);
    return 1;
}

static int read_inputs(struct sps_jscan *s, struct sps_run_merge *m) {
    int rc = SPS_RR_ARRAY(s, "merge.inputs"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_element(s, first, &more)) && more; first = 0) {
        char **grown = realloc(m->inputs, (m->ninputs + 1) * sizeof *grown);
        if (!grown)
            return SPS_ENOMEM;
        m->inputs = grown;
        grown[m->ninputs] = NULL;
        rc = sps__jread_strdup(s, "merge.inputs[]", &grown[m->ninputs]);
        if (!rc && !grown[m->ninputs] && !(grown[m->ninputs] = strdup("")))
            rc = SPS_ENOMEM;
        m->ninputs += grown[m->ninputs] != NULL;
    }
    return rc;
}

int sps__rr_merge(struct sps_jscan *s, struct sps_run_merge *m) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc;
    rc = SPS_RR_OBJECT(s, "merge");
    m->reference_rank = -1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("inputs"))
            rc = read_inputs(s, m);
        else if (KEY("reference_host"))
            rc = sps__jread_text(s, "merge.reference_host", m->reference_host, sizeof m->reference_host);
        else if (KEY("reference_rank"))
            rc = sps__jread_i32(s, "merge.reference_rank", -1, &m->reference_rank);
        else if (KEY("max_clock_error_ns"))
            rc = sps__jread_u64(s, "merge.max_clock_error_ns", &m->tolerance_ns);
        else if (KEY("forced"))
            rc = sps__jread_bool(s, "merge.forced", &m->forced);
        else if (KEY("forced_reason"))
            rc = sps__jread_text(s, "merge.forced_reason", m->forced_why, sizeof m->forced_why);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}
