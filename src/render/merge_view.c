/* merge_view.c - see merge_view.h. */
#include "render/merge_view.h"

#include <string.h>

#include "model/align.h"

static void write_sync_slot(struct sps_jw *w, const char *key, const struct sps_clock_sync *s) {
    if (s->state != SPS_REC_SYNC_MEASURED) {
        sps__jw_null(w, key);
        return;
    }
    sps__jw_object(w, key);
    sps__jw_int(w, "offset_ns", s->offset_ns);
    sps__jw_uint(w, "error_ns", s->error_ns);
    sps__jw_uint(w, "rounds", s->rounds);
    sps__jw_end(w, '}');
}

void sps__report_json_process_clock(struct sps_jw *w, const struct sps_process_data *p) {
    const struct sps_clock_sync *s = p->clock_sync;
    if (s[0].state == SPS_REC_SYNC_NONE && s[1].state == SPS_REC_SYNC_NONE) {
        sps__jw_null(w, "clock_sync");
    } else {
        sps__jw_object(w, "clock_sync");
        write_sync_slot(w, "start", &s[SPS_SYNC_START]);
        write_sync_slot(w, "end", &s[SPS_SYNC_END]);
        if (p->clock_sync_reason[0])
            sps__jw_string(w, "not_measured_reason", p->clock_sync_reason);
        else
            sps__jw_null(w, "not_measured_reason");
        sps__jw_end(w, '}');
    }
    const struct sps_align *a = &p->align;
    const char *method = sps__align_method_name(a->method);
    if (!method) {
        sps__jw_null(w, "clock_alignment");
        return;
    }
    sps__jw_object(w, "clock_alignment");
    sps__jw_string(w, "method", method);
    if (a->source_rank >= 0)
        sps__jw_int(w, "source_rank", a->source_rank);
    else
        sps__jw_null(w, "source_rank");
    sps__jw_int(w, "offset_ns", a->off0_ns);
    sps__jw_int(w, "offset_end_ns", a->off1_ns);
    sps__jw_int(w, "local_from_ns", a->at0_ns);
    sps__jw_int(w, "local_to_ns", a->at1_ns);
    if (a->method == SPS_ALIGN_MEASURED)
        sps__jw_uint(w, "error_ns", a->error_ns);
    else /* reference: none; realtime: not stated */
        sps__jw_null(w, "error_ns");
    sps__jw_end(w, '}');
}

void sps__report_json_merge(struct sps_jw *w, const struct sps_run *run) {
    const struct sps_run_merge *m = &run->merge;
    if (!m->ninputs) {
        sps__jw_null(w, "merge");
        return;
    }
    sps__jw_object(w, "merge");
    sps__jw_array(w, "inputs");
    for (size_t i = 0; i < m->ninputs; i++)
        sps__jw_string(w, NULL, m->inputs[i]);
    sps__jw_end(w, ']');
    sps__jw_string(w, "reference_host", m->reference_host);
    if (m->reference_rank == 0)
        sps__jw_int(w, "reference_rank", 0);
    else
        sps__jw_null(w, "reference_rank");
    sps__jw_uint(w, "max_clock_error_ns", m->tolerance_ns);
    sps__jw_bool(w, "forced", m->forced);
    if (m->forced_why[0])
        sps__jw_string(w, "forced_reason", m->forced_why);
    else
        sps__jw_null(w, "forced_reason");
    sps__jw_end(w, '}');
}

/* The first process of host in run, or NULL. */
static const struct sps_process_data *first_of_host(const struct sps_run *run, const char *host, size_t before) {
    for (size_t i = 0; i < before; i++)
        if (!strcmp(run->procs[i].hostname, host))
            return &run->procs[i];
    return NULL;
}

int sps__merge_fact(const struct sps_run *run, char *value, size_t vlen, char *detail, size_t dlen) {
    const struct sps_run_merge *m = &run->merge;
    if (!m->ninputs)
        return 0;
    size_t hosts = 0, measured = 0, realtime = 0;
    uint64_t worst = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const struct sps_process_data *p = &run->procs[i];
        if (first_of_host(run, p->hostname, i))
            continue;
        hosts++;
        measured += p->align.method == SPS_ALIGN_MEASURED;
        realtime += p->align.method == SPS_ALIGN_REALTIME;
        if (p->align.method == SPS_ALIGN_MEASURED && p->align.error_ns > worst)
            worst = p->align.error_ns;
    }
    snprintf(value, vlen, "%zu run%s, %zu host%s", m->ninputs, m->ninputs == 1 ? "" : "s", hosts,
             hosts == 1 ? "" : "s");
    int n = snprintf(detail, dlen, "times on %s's clock", m->reference_host);
    if (measured && n >= 0 && (size_t)n < dlen)
        n += snprintf(detail + n, dlen - (size_t)n, "; %zu host%s by measured offsets (error <= %.3g ms)", measured,
                      measured == 1 ? "" : "s", (double)worst * 1e-6);
    if (realtime && n >= 0 && (size_t)n < dlen)
        n += snprintf(detail + n, dlen - (size_t)n, "; %zu by the realtime clocks (error unknown)", realtime);
    if (m->forced && n >= 0 && (size_t)n < dlen)
        snprintf(detail + n, dlen - (size_t)n, "; --force: %s", m->forced_why);
    return 1;
}

void sps__merge_summary_print(FILE *f, const struct sps_run *run) {
    const struct sps_run_merge *m = &run->merge;
    if (!m->ninputs)
        return;
    fprintf(f, "merged    %zu run(s); times on %s's clock (%s)\n", m->ninputs, m->reference_host,
            m->reference_rank == 0 ? "rank 0's host" : "no input held rank 0: the first input's host");
    fprintf(f, "          host %s: the reference\n", m->reference_host);
    for (size_t i = 0; i < run->nprocs; i++) {
        const struct sps_process_data *p = &run->procs[i];
        if (first_of_host(run, p->hostname, i)) /* one line per host */
            continue;
        const struct sps_align *a = &p->align;
        if (a->method == SPS_ALIGN_MEASURED)
            fprintf(f, "          host %s: offset %+.3f ms (rank %d measured it, error <= %.3f ms, tolerance %.3f ms)\n",
                    p->hostname, (double)a->off0_ns * 1e-6, a->source_rank, (double)a->error_ns * 1e-6,
                    (double)m->tolerance_ns * 1e-6);
        else if (a->method == SPS_ALIGN_REALTIME)
            fprintf(f, "          host %s: offset %+.3f ms by the realtime clocks (not measured: error unknown, as "
                       "good as the hosts' NTP)\n",
                    p->hostname, (double)a->off0_ns * 1e-6);
    }
    if (m->forced)
        fprintf(f, "          merged with --force: %s\n", m->forced_why);
}
