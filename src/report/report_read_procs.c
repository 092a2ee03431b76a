/*
 * report_read_procs.c - report.json's processes[] and records_skipped[]
 * into rep->run (see report_read_run.h): each process's facts, command,
 * GPU zones' state and threads with their ring counts and open zones,
 * whose names become the process's names (ids from 1), as a record's
 * are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_read_merge.h"
#include "report/report_read_run.h"
#include "stepscope.h"

#define OBJECT_BEGIN SPS_RR_OBJECT
#define ARRAY_BEGIN SPS_RR_ARRAY
#define KEY(lit) (!strcmp(s->str, lit))

/* The open zones' names are the process's names (ids from 1). */
static int add_open_zone(struct sps_rr *rr, struct sps_process_data *p, struct sps_thread_data *t) {
    struct sps_jscan *s = rr->s;
    char name[SPS_REC_NAME_LEN + 1] = "";
    uint32_t kind = SPS_KIND_ZONE;
    double start_s = 0;
    int rc = OBJECT_BEGIN(s, "open_zones[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("name"))
            rc = sps__jread_text(s, "open_zones[].name", name, sizeof name);
        else if (KEY("kind"))
            rc = sps__rr_kind(s, "open_zones[].kind", &kind);
        else if (KEY("start_s"))
            rc = sps__jread_number(s, "open_zones[].start_s", &start_s);
        else
            rc = sps__jscan_skip(s);
    }
    if (rc)
        return rc;
    if (strlen(name) >= SPS_REC_NAME_LEN)
        return sps__jscan_fail(s, "open_zones[].name is longer than %u bytes", SPS_REC_NAME_LEN - 1);
    if (t->nopen >= SPS_REC_MAX_DEPTH)
        return sps__jscan_fail(s, "more than %u open zones on one thread", SPS_REC_MAX_DEPTH);
    struct sps_name_info *names = realloc(p->names, (p->nnames + 1) * sizeof *names);
    if (!names)
        return SPS_ENOMEM;
    p->names = names;
    struct sps_name_info *ni = &names[p->nnames++];
    memset(ni, 0, sizeof *ni);
    memcpy(ni->name, name, strlen(name) + 1);
    ni->kind = kind;
    t->open[t->nopen++] = (struct sps_open_zone){.name = p->nnames, .kind = kind, .start_ns = sps__rr_mono(rr, start_s)};
    return 0;
}

static int read_ring(struct sps_jscan *s, struct sps_process_data *p, struct sps_thread_data *t, int ring) {
    int rc = OBJECT_BEGIN(s, "threads[].events.*"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        uint64_t cap;
        if (KEY("recorded"))
            rc = sps__jread_u64(s, "events.recorded", &t->offered[ring]);
        else if (KEY("dropped"))
            rc = sps__jread_u64(s, "events.dropped", &t->dropped[ring]);
        else if (KEY("capacity")) {
            if (!(rc = sps__jread_u64(s, "events.capacity", &cap)))
                p->ring_cap[ring] = (uint32_t)cap;
        } else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

static int read_events(struct sps_jscan *s, struct sps_process_data *p, struct sps_thread_data *t) {
    static const char *const rings[SPS_RING_COUNT] = {"zones", "steps", "values"};
    int rc = OBJECT_BEGIN(s, "threads[].events"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        int r = 0;
        while (r < SPS_RING_COUNT && !KEY(rings[r]))
            r++;
        rc = r < SPS_RING_COUNT ? read_ring(s, p, t, r) : sps__jscan_skip(s);
    }
    return rc;
}

static int read_thread(struct sps_rr *rr, struct sps_process_data *p) {
    struct sps_jscan *s = rr->s;
    struct sps_thread_data *threads = realloc(p->threads, (p->nthreads + 1) * sizeof *threads);
    if (!threads)
        return SPS_ENOMEM;
    p->threads = threads;
    struct sps_thread_data *t = &threads[p->nthreads++];
    memset(t, 0, sizeof *t);
    int rc = OBJECT_BEGIN(s, "threads[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        uint64_t u;
        if (KEY("tid")) {
            rc = sps__jread_i32(s, "threads[].tid", 0, &t->tid);
        } else if (KEY("name")) {
            rc = sps__jread_text(s, "threads[].name", t->name, sizeof t->name);
        } else if (KEY("exited")) {
            rc = sps__jread_bool(s, "threads[].exited", &t->exited);
        } else if (KEY("earlier_threads")) {
            if (!(rc = sps__jread_u64(s, "threads[].earlier_threads", &u)))
                t->reuses = (uint32_t)u;
        } else if (KEY("events")) {
            rc = read_events(s, p, t);
        } else if (KEY("mismatched_ends")) {
            rc = sps__jread_u64(s, "threads[].mismatched_ends", &t->mismatched_ends);
        } else if (KEY("depth_overflows")) {
            rc = sps__jread_u64(s, "threads[].depth_overflows", &t->depth_overflows);
        } else if (KEY("zones_thinned")) {
            if (!(rc = sps__jread_u64(s, "threads[].zones_thinned", &u)))
                t->zones_thinned = (uint32_t)u;
        } else if (KEY("open_zones")) {
            rc = ARRAY_BEGIN(s, "threads[].open_zones");
            int zmore = 1;
            for (int zfirst = 1; !rc && !(rc = sps__jscan_element(s, zfirst, &zmore)) && zmore; zfirst = 0)
                rc = add_open_zone(rr, p, t);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

static int read_process_cuda(struct sps_jscan *s, struct sps_process_data *p) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc; /* no GPU zone: SPS_REC_CUDA_UNUSED */
    p->cuda_state = SPS_REC_CUDA_UNAVAILABLE;
    rc = OBJECT_BEGIN(s, "processes[].cuda");
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        int available = 0;
        if (KEY("available")) {
            if (!(rc = sps__jread_bool(s, "cuda.available", &available)))
                p->cuda_state = available ? SPS_REC_CUDA_AVAILABLE : SPS_REC_CUDA_UNAVAILABLE;
        } else if (KEY("driver_version")) {
            int null_version, v = 0;
            if (!(rc = sps__jread_null(s, &null_version)) && !null_version)
                rc = sps__jread_i32(s, "cuda.driver_version", 0, &v);
            p->cuda_driver_version = v;
        } else if (KEY("reason")) {
            rc = sps__jread_text(s, "cuda.reason", p->cuda_reason, sizeof p->cuda_reason);
        } else if (KEY("zones_resolved")) {
            rc = sps__jread_u64(s, "cuda.zones_resolved", &p->cuda_resolved);
        } else if (KEY("zones_cpu_only")) {
            rc = sps__jread_u64(s, "cuda.zones_cpu_only", &p->cuda_cpu_only);
        } else if (KEY("zones_dropped")) {
            rc = sps__jread_u64(s, "cuda.zones_dropped", &p->cuda_dropped);
        } else if (KEY("zones_unresolved")) {
            rc = sps__jread_u64(s, "cuda.zones_unresolved", &p->cuda_unresolved);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

int sps__rr_command(struct sps_jscan *s, const char *what, int *argc, char ***argv) {
    int rc = ARRAY_BEGIN(s, what), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_element(s, first, &more)) && more; first = 0) {
        char **grown = realloc(*argv, ((size_t)*argc + 2) * sizeof *grown);
        if (!grown)
            return SPS_ENOMEM;
        *argv = grown;
        grown[*argc] = grown[*argc + 1] = NULL;
        if ((rc = sps__jread_strdup(s, what, &grown[*argc])))
            break;
        if (!grown[*argc] && !(grown[*argc] = strdup("")))
            return SPS_ENOMEM;
        (*argc)++;
    }
    return rc;
}

static int read_enum(struct sps_jscan *s, const char *what, const char *const *names, size_t n, uint32_t *out) {
    char text[32];
    int rc = sps__jread_text(s, what, text, sizeof text);
    for (size_t i = 0; !rc && i < n; i++)
        if (names[i] && !strcmp(text, names[i])) {
            *out = (uint32_t)i;
            return 0;
        }
    return rc ? rc : sps__jscan_fail(s, "%s: \"%s\" is not one of its values", what, text);
}

/* processes[].auto: null, or the state auto-instrumentation ended in. */
static int read_process_auto(struct sps_jscan *s, struct sps_process_data *p) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc; /* never installed: SPS_REC_PY_AUTO_NONE */
    rc = OBJECT_BEGIN(s, "processes[].auto");
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("state")) {
            static const char *const states[] = {"none", "active", "stood_aside", "turned_off"};
            rc = read_enum(s, "processes[].auto.state", states, 4, &p->py_auto);
        } else if (KEY("reason")) { /* null reads as "" */
            rc = sps__jread_text(s, "processes[].auto.reason", p->py_auto_reason, sizeof p->py_auto_reason);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

/* The keys of a process that are plain facts (the rest: read_process). */
static int read_process_fact(struct sps_rr *rr, struct sps_process_data *p) {
    struct sps_jscan *s = rr->s;
    static const char *const clocks[] = {NULL, "tsc", "monotonic"};
    static const char *const policies[] = {NULL, "keep-latest", "keep-first"};
    static const char *const thin[] = {"none", "phases", "steps"};
    double t;
    if (KEY("pid"))
        return sps__jread_i32(s, "processes[].pid", 0, &p->pid);
    if (KEY("ppid"))
        return sps__jread_i32(s, "processes[].ppid", 0, &p->ppid);
    if (KEY("rank"))
        return sps__jread_i32(s, "processes[].rank", 0, &p->rank);
    if (KEY("local_rank"))
        return sps__jread_i32(s, "processes[].local_rank", 0, &p->local_rank);
    if (KEY("world_size"))
        return sps__jread_i32(s, "processes[].world_size", 0, &p->world_size);
    if (KEY("hostname"))
        return sps__jread_text(s, "processes[].hostname", p->hostname, sizeof p->hostname);
    if (KEY("record"))
        return sps__jread_strdup(s, "processes[].record", &p->path);
    if (KEY("record_header_crc")) { /* null: not known */
        int is_null, rc = sps__jread_null(s, &is_null);
        uint64_t crc = 0;
        if (!rc && !is_null && !(rc = sps__jread_u64_upto(s, "processes[].record_header_crc", UINT32_MAX, &crc)))
            p->header_crc = (uint32_t)crc;
        return rc;
    }
    if (KEY("ended")) {
        char ended[64];
        int rc = sps__jread_text(s, "processes[].ended", ended, sizeof ended);
        p->closed = !strcmp(ended, "exit");
        return rc;
    }
    if (KEY("running_at_report"))
        return sps__jread_bool(s, "processes[].running_at_report", &p->running_at_report);
    if (KEY("start_s")) {
        int rc = sps__jread_number(s, "processes[].start_s", &t);
        p->start_ns = sps__rr_mono(rr, isnan(t) ? 0 : t);
        return rc;
    }
    if (KEY("clock"))
        return read_enum(s, "processes[].clock", clocks, 3, &p->clock_source);
    if (KEY("clock_ticks_per_second"))
        return sps__jread_number(s, "processes[].clock_ticks_per_second", &p->ticks_per_second);
    if (KEY("ring_policy"))
        return read_enum(s, "processes[].ring_policy", policies, 3, &p->ring_policy);
    if (KEY("threads_refused"))
        return sps__jread_u64(s, "processes[].threads_refused", &p->threads_refused);
    if (KEY("names_refused"))
        return sps__jread_u64(s, "processes[].names_refused", &p->names_refused);
    if (KEY("recording_problem"))
        return sps__jread_text(s, "processes[].recording_problem", p->problem, sizeof p->problem);
    if (KEY("thin_level"))
        return read_enum(s, "processes[].thin_level", thin, 3, &p->thin_level);
    if (KEY("thinned_since_s")) {
        int rc = sps__jread_number(s, "processes[].thinned_since_s", &t);
        p->thin_since_ns = isnan(t) ? 0 : sps__rr_mono(rr, t);
        return rc;
    }
    if (KEY("zones_thinned"))
        return sps__jread_u64(s, "processes[].zones_thinned", &p->zones_thinned);
    return 1;
}

int sps__rr_process(struct sps_rr *rr) {
    struct sps_jscan *s = rr->s;
    struct sps_run *run = &rr->rep->run;
    struct sps_process_data *procs = realloc(run->procs, (run->nprocs + 1) * sizeof *procs);
    if (!procs)
        return SPS_ENOMEM;
    run->procs = procs;
    struct sps_process_data *p = &procs[run->nprocs++];
    memset(p, 0, sizeof *p);
    p->rank = p->local_rank = p->world_size = -1; /* absent: not set */
    p->align.source_rank = -1;
    int rc = OBJECT_BEGIN(s, "processes[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if ((rc = read_process_fact(rr, p)) != 1 || (rc = sps__rr_process_clock(s, p)) != 1)
            continue;
        if (KEY("command")) {
            rc = sps__rr_command(s, "processes[].command", &p->argc, &p->argv);
        } else if (KEY("cuda")) {
            rc = read_process_cuda(s, p);
        } else if (KEY("auto")) {
            rc = read_process_auto(s, p);
        } else if (KEY("instrument")) {
            int used = 0;
            rc = sps__jread_bool(s, "processes[].instrument", &used);
            p->py_instrument = used != 0;
        } else if (KEY("threads")) {
            rc = ARRAY_BEGIN(s, "processes[].threads");
            int tmore = 1;
            for (int tfirst = 1; !rc && !(rc = sps__jscan_element(s, tfirst, &tmore)) && tmore; tfirst = 0)
                rc = read_thread(rr, p);
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    if (!rc && !p->path && !(p->path = strdup("")))
        rc = SPS_ENOMEM;
    return rc;
}

int sps__rr_skipped(struct sps_rr *rr) {
    struct sps_jscan *s = rr->s;
    struct sps_run *run = &rr->rep->run;
    struct sps_skipped *sk = realloc(run->skipped, (run->nskipped + 1) * sizeof *sk);
    if (!sk)
        return SPS_ENOMEM;
    run->skipped = sk;
    struct sps_skipped *e = &sk[run->nskipped++];
    memset(e, 0, sizeof *e);
    int rc = OBJECT_BEGIN(s, "records_skipped[]"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("record"))
            rc = sps__jread_strdup(s, "records_skipped[].record", &e->path);
        else if (KEY("error"))
            rc = sps__jread_strdup(s, "records_skipped[].error", &e->error);
        else
            rc = sps__jscan_skip(s);
    }
    if (!rc && ((!e->path && !(e->path = strdup(""))) || (!e->error && !(e->error = strdup("")))))
        rc = SPS_ENOMEM;
    return rc;
}
