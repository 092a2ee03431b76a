/*
 * report_read.c - report.json into the report model, and a run directory
 * (report.json plus its records) into it (report.h).
 *
 * One pass over the file through the pull scanner (jscan.h): each key is
 * read into the model's own types as it streams past, so memory is the
 * model plus the scanner's buffer, never a document tree.  The top level
 * and the run's facts are read here, the run's tables in
 * report_read_run.c and report_read_procs.c, the machine half and the
 * analysis in report_read_machine.c and report_read_analysis.c.  The
 * analysis is read, never computed again.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report_read_merge.h"
#include "report/report.h"
#include "report/report_read.h"
#include "report/report_read_values.h"
#include "sampler/sampler.h"
#include "report/report_read_rows.h"
#include "report/report_read_run.h"
#include "report/report_read_ranks.h"
#include "report/report_read_torch.h"
#include "stepscope.h"

#define KEY(lit) (!strcmp(s->str, lit))

static int object_begin(struct sps_jscan *s, const char *what) {
    return sps__jscan_peek(s) == '{' ? sps__jscan_expect(s, '{') : sps__jscan_fail(s, "%s: an object expected", what);
}

/* exit: null (not known), or how the command ended. */
static int read_exit(struct sps_jscan *s, struct sps_run_info *info) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc;
    info->have_exit = 1;
    rc = object_begin(s, "exit");
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("code"))
            rc = sps__jread_i32(s, "exit.code", 0, &info->exit_code);
        else if (KEY("signal"))
            rc = sps__jread_i32(s, "exit.signal", 0, &info->exit_signal);
        else if (KEY("core_dumped"))
            rc = sps__jread_bool(s, "exit.core_dumped", &info->core_dumped);
        else
            rc = sps__jscan_skip(s); /* status and signal_name say it again */
    }
    return rc;
}

static int read_timing(struct sps_jscan *s, struct sps_run_info *info) {
    info->wall_s = NAN;
    int rc = object_begin(s, "timing"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("wall_s"))
            rc = sps__jread_number(s, "timing.wall_s", &info->wall_s);
        else if (KEY("user_s"))
            rc = sps__jread_number(s, "timing.user_s", &info->user_s);
        else if (KEY("sys_s"))
            rc = sps__jread_number(s, "timing.sys_s", &info->sys_s);
        else
            rc = sps__jscan_skip(s);
    }
    /* the times are known together or not at all */
    info->have_times = !isnan(info->wall_s);
    if (!info->have_times)
        info->wall_s = info->user_s = info->sys_s = 0;
    return rc;
}

/* memory: the tree's peak RSS and what it covers; the workload_* keys
 * are the sampler's, derived from what the machine half reads. */
static int read_memory(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_run_info *info = &rep->info;
    int rc = object_begin(s, "memory"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("peak_rss_bytes")) {
            int is_null;
            if (!(rc = sps__jread_null(s, &is_null)) && !is_null) {
                info->have_rss = 1;
                rc = sps__jread_u64(s, "memory.peak_rss_bytes", &info->peak_rss_bytes);
            }
        } else if (KEY("peak_rss_scope")) {
            rc = sps__jread_strdup(s, "memory.peak_rss_scope", &rep->strings_owned[0]);
            info->rss_scope = rep->strings_owned[0];
        } else if ((rc = sps__report_read_tree_memory(s, s->str, rep)) == 1) {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

/* recording: the run's event counts (clock and processes say again what
 * processes[] holds). */
static int read_recording(struct sps_jscan *s, struct sps_run *run) {
    int rc = object_begin(s, "recording"), more = 1;
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("events_recorded"))
            rc = sps__jread_u64(s, "recording.events_recorded", &run->events_recorded);
        else if (KEY("events_dropped"))
            rc = sps__jread_u64(s, "recording.events_dropped", &run->events_dropped);
        else
            rc = sps__jscan_skip(s);
    }
    return rc;
}

/* "auto": what stepscope run did about auto-instrumentation (the rest of
 * the object is what processes[] add up to).  null: it did not say. */
static int read_auto(struct sps_jscan *s, struct sps_run_info *info) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc;
    info->auto_inject = SPS_AUTO_INJECT_ON;
    rc = object_begin(s, "auto");
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        if (KEY("state")) {
            char state[32];
            if (!(rc = sps__jread_text(s, "auto.state", state, sizeof state)))
                info->auto_inject = !strcmp(state, "off")           ? SPS_AUTO_INJECT_OFF
                                    : !strcmp(state, "unavailable") ? SPS_AUTO_INJECT_MISSING
                                                                    : SPS_AUTO_INJECT_ON;
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    return rc;
}

/* rebuilt_from_records: null, or why `stepscope report` rebuilt the
 * report from the records ("missing" follows from what the report lacks:
 * sps__report_missing). */
static int read_rebuilt(struct sps_jscan *s, struct sps_report *rep) {
    int is_null, rc = sps__jread_null(s, &is_null), more = 1;
    if (rc || is_null)
        return rc;
    rc = object_begin(s, "rebuilt_from_records");
    for (int first = 1; !rc && !(rc = sps__jscan_member(s, first, &more)) && more; first = 0) {
        char **reason = &rep->strings_owned[SPS_REPORT_REBUILT_REASON_SLOT];
        if (KEY("reason") && !*reason) {
            rc = sps__jread_strdup(s, "rebuilt_from_records.reason", reason);
            rep->info.rebuilt_reason = *reason;
        } else {
            rc = sps__jscan_skip(s);
        }
    }
    if (!rc && !rep->info.rebuilt_reason) /* rebuilt, reason unsaid */
        rc = sps__jscan_fail(s, "rebuilt_from_records: \"reason\" is missing");
    return rc;
}

/* A top-level key of the run's facts; 1 when key is not one of them. */
static int read_fact(struct sps_jscan *s, struct sps_report *rep) {
    struct sps_run_info *info = &rep->info;
    if (KEY("command")) {
        int rc = sps__rr_command(s, "command", &info->argc, &rep->argv_owned);
        info->argv = rep->argv_owned;
        return rc;
    }
    if (KEY("written_by")) {
        int rc = sps__jread_strdup(s, "written_by", &rep->strings_owned[1]);
        info->standalone_reason = rep->strings_owned[1];
        return rc;
    }
    if (KEY("rebuilt_from_records"))
        return read_rebuilt(s, rep);
    if (KEY("trace_max_bytes")) /* null: the default budget */
        return sps__jread_u64(s, "trace_max_bytes", &info->trace_max_bytes);
    if (KEY("started_unix_s")) {
        double t;
        int rc = sps__jread_number(s, "started_unix_s", &t);
        info->start_realtime_ns = isfinite(t) && fabs(t) < 9e9 ? (int64_t)llround(t * 1e9) : 0;
        return rc;
    }
    if (KEY("started_mono_ns")) {
        int rc = sps__jread_u64_upto(s, "started_mono_ns", SPS_REPORT_MONO_NS_MAX, &rep->run.start_ns);
        info->start_mono_ns = rep->run.start_ns;
        return rc;
    }
    if (KEY("exit"))
        return read_exit(s, info);
    if (KEY("timing"))
        return read_timing(s, info);
    if (KEY("memory"))
        return read_memory(s, rep);
    if (KEY("recording"))
        return read_recording(s, &rep->run);
    if (KEY("auto"))
        return read_auto(s, info);
    if (KEY("merge"))
        return sps__rr_merge(s, &rep->run.merge);
    if (KEY("stepscope_version") || KEY("cuda") || KEY("steps_recorded_by"))
        return sps__jscan_skip(s); /* cuda, steps_recorded_by: what processes[] and steps add up to */
    return 1;
}

/* The schema must come first (the writer puts it there): the rest is not
 * read as a report unless it is one.  A failure says where, through the
 * scanner. */
static int read_schema(struct sps_jscan *s) {
    int c = sps__jscan_peek(s), more = 0, rc = 0;
    if (c < 0)
        return sps__jscan_fail(s, "not a stepscope report: the file is empty");
    if (c != '{')
        return c > ' ' && c < 0x7f ? sps__jscan_fail(s, "not a stepscope report: a JSON object expected, found '%c'", c)
                                   : sps__jscan_fail(s, "not a stepscope report: a JSON object expected, found byte "
                                                        "0x%02x", (unsigned)c);
    rc = sps__jscan_expect(s, '{');
    if (!rc)
        rc = sps__jscan_member(s, 1, &more);
    if (rc)
        return rc;
    if (!more)
        return sps__jscan_fail(s, "not a stepscope report: schema is missing (the object is empty)");
    if (strcmp(s->str, "schema") != 0)
        return sps__jscan_fail(s,
                               "not a stepscope report: schema is missing (report.json begins with \"schema\", "
                               "this begins with \"%.40s\")",
                               s->str);
    if (sps__jscan_peek(s) != '"')
        return sps__jscan_fail(s, "not a stepscope report: schema is not a string");
    if ((rc = sps__jscan_string(s)))
        return rc;
    if (strcmp(s->str, SPS_REPORT_SCHEMA) != 0)
        return sps__jscan_fail(s, "not a stepscope report: schema is \"%.40s\", not \"%s\"", s->str,
                               SPS_REPORT_SCHEMA);
    return 0;
}

/* Every time read against 0 (rows, processes, open zones, and the series
 * when with_series) moved onto the monotonic clock at base. */
static void rebase_times(struct sps_report *rep, uint64_t base, int with_series) {
    struct sps_run *run = &rep->run;
    run->start_ns = base;
    rep->info.start_mono_ns = base;
    for (size_t i = 0; i < run->nsteps; i++) {
        run->steps[i].start_ns += base;
        run->steps[i].end_ns += base;
    }
    for (size_t i = 0; i < run->nprocs; i++) {
        struct sps_process_data *p = &run->procs[i];
        p->start_ns += base;
        if (p->thin_since_ns)
            p->thin_since_ns += base;
        for (uint32_t t = 0; t < p->nthreads; t++)
            for (uint32_t k = 0; k < p->threads[t].nopen; k++)
                p->threads[t].open[k].start_ns += base;
    }
    if (with_series && rep->machine_owned) {
        sps__report_read_shift_series(rep->machine_owned, (int64_t)base);
        if (rep->machine_owned->started_ns)
            rep->machine_owned->started_ns += (int64_t)base;
    }
}

/*
 * A report.json without started_mono_ns (written before it existed, or
 * edited): every time was read against 0.  The series' origin, when the
 * machine half had one, is the same instant on the monotonic clock, so the
 * rows, processes and open zones are moved onto it.  Without it the
 * report keeps its times relative and says it has no anchor; attaching
 * its records may still find one (attach_records).
 */
static void anchor_without_start(struct sps_report *rep) {
    if (rep->info.start_mono_ns)
        rebase_times(rep, rep->info.start_mono_ns, 0);
    else
        rep->no_time_anchor = 1;
}

static int read_report(struct sps_jscan *s, struct sps_report *rep, const struct sps_report_rows *rows,
                       const char *path, char *err, size_t errlen) {
    struct sps_rr rr = {.s = s, .rep = rep, .sink = rows};
    int rc = read_schema(s), more = 1;
    int anchored = 0, timed = 0; /* started_mono_ns read; a section of times read */
    int ranks_read = 0;          /* "ranks" read (a report.json from before it has none) */
    char seen[64][40] = {"schema"}; /* the top-level keys read: each once */
    size_t nseen = 1;
    for (int first = 0; !rc && !(rc = sps__jscan_member(s, first, &more)) && more;) {
        for (size_t k = 0; k < nseen; k++)
            if (!strncmp(seen[k], s->str, sizeof seen[k] - 1)) {
                rc = sps__jscan_fail(s, "\"%.40s\" appears twice (a report holds each key once)", s->str);
                break;
            }
        if (rc)
            break;
        if (nseen < sizeof seen / sizeof seen[0])
            snprintf(seen[nseen++], sizeof seen[0], "%s", s->str);
        if (KEY("started_mono_ns")) {
            /* the times already read counted from 0: refuse rather than
             * place them hours away from the records' events */
            if (timed) {
                rc = sps__jscan_fail(s, "started_mono_ns comes after the times that count from it (report.json "
                                        "writes it before \"steps\" and \"processes\")");
                break;
            }
            if (sps__jscan_peek(s) == 'n') { /* null: written without an anchor */
                rc = sps__jscan_skip(s);
                continue;
            }
            anchored = 1;
        } else if (KEY("steps") || KEY("processes")) {
            timed = 1;
        }
        if ((rc = read_fact(s, rep)) != 1)
            continue;
        if ((rc = sps__rr_section(&rr, s->str)) != 1)
            continue;
        ranks_read |= KEY("ranks");
        if ((rc = sps__report_read_ranks(s, s->str, rep)) != 1)
            continue;
        if (KEY("analysis"))
            rc = sps__report_read_analysis(s, rep);
        else if (KEY("torch_profile"))
            rc = sps__report_read_torch(s, rep);
        else if ((rc = sps__report_read_machine(s, s->str, rep)) == 1)
            rc = sps__jscan_skip(s); /* a key of a later stepscope */
    }
    if (!rc)
        rc = sps__jscan_end(s);
    if (!rc)
        rc = sps__rr_finish(&rr);
    if (!rc && !anchored)
        anchor_without_start(rep);
    if (!rc && !ranks_read && !rows) { /* from the rows it holds, as stepscope run would have */
        sps__ranks_free(&rep->ranks);  /* a "ranks_pooled" without "ranks": made again with them */
        rc = sps__ranks_build(&rep->run, &rep->ranks);
    }
    sps__rr_free(&rr);
    if (rc == SPS_ENOMEM || (rc && s->nomem)) {
        snprintf(err, errlen, "%s: out of memory", path);
        return SPS_ENOMEM;
    }
    if (rc)
        snprintf(err, errlen, "%s:%lu:%lu: %s", path, s->err_line, s->err_col,
                 s->err[0] ? s->err : "a value that does not parse");
    return rc;
}

int sps__report_read(struct sps_report *rep, const char *path, char *err, size_t errlen) {
    return sps__report_read_rows(rep, path, NULL, err, errlen);
}

int sps__report_read_rows(struct sps_report *rep, const char *path, const struct sps_report_rows *rows, char *err,
                          size_t errlen) {
    memset(rep, 0, sizeof *rep);
    /* not blocking on a FIFO, not reading a directory or a device */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return SPS_EIO;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return SPS_EIO;
    }
    sps__analysis_config_default(&rep->analysis_config);
    rep->info.analysis = &rep->analysis_config;
    sps__report_analysis_unknown(&rep->analysis);
    struct sps_jscan s;
    int rc = sps__jscan_open(&s, f);
    if (rc)
        snprintf(err, errlen, "%s: out of memory", path);
    else {
        rc = read_report(&s, rep, rows, path, err, errlen);
        if (!rc && ferror(f)) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
            rc = SPS_EIO;
        }
        sps__jscan_close(&s);
    }
    fclose(f);
    if (rc) {
        sps__report_free(rep);
        return rc;
    }
    rep->info.sampler = rep->machine_owned;
    if (!rep->info.sampler && !rep->info.sampler_absent_reason)
        rep->info.sampler_absent_reason = "no machine metrics in report.json";
    return 0;
}

/* --------------------------------------------------------- the records */

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The report's process that rec is: the same pid and record file name
 * (the directory may have moved since).  NULL when none is. */
static struct sps_process_data *process_of(struct sps_run *run, const struct sps_process_data *rec) {
    for (size_t i = 0; i < run->nprocs; i++) {
        struct sps_process_data *p = &run->procs[i];
        if (p->pid == rec->pid && p->path && rec->path && !strcmp(base_name(p->path), base_name(rec->path)))
            return p;
    }
    return NULL;
}

/* The report's open zone's name id among rec's names (its own when the
 * record has no such name). */
static uint32_t name_id_in(const struct sps_process_data *rec, const struct sps_name_info *ni) {
    for (uint32_t id = 1; id <= rec->nnames; id++)
        if (rec->names[id - 1].kind == ni->kind && !strcmp(rec->names[id - 1].name, ni->name))
            return id;
    return 0;
}

/*
 * rec's events into p, the same process as report.json has it: the
 * names (the events' ids index them) with each thread's events and
 * aggregates, the thread matched by its place and tid.  What report.json
 * says of the process and its threads stays; the record's facts that
 * report.json does not carry (the Python module's costs, the realtime
 * start, the end) are copied.  Returns 0 or SPS_ENOMEM.
 */
static int attach_process(struct sps_run *run, struct sps_process_data *p, struct sps_process_data *rec) {
    /* the open zones' ids, re-pointed into the record's names */
    for (uint32_t ti = 0; ti < p->nthreads; ti++) {
        struct sps_thread_data *t = &p->threads[ti];
        uint32_t kept = 0;
        for (uint32_t k = 0; k < t->nopen; k++) {
            uint32_t id = name_id_in(rec, &p->names[t->open[k].name - 1]);
            if (id)
                t->open[kept++] = (struct sps_open_zone){id, t->open[k].kind, t->open[k].start_ns};
        }
        t->nopen = kept;
    }
    free(p->names);
    free(p->summary_of);
    p->names = rec->names;
    p->nnames = rec->nnames;
    rec->names = NULL; /* rec->nnames stays: its threads' aggs not taken below are freed by it */
    p->summary_of = malloc((p->nnames ? p->nnames : 1) * sizeof *p->summary_of);
    if (!p->summary_of)
        return SPS_ENOMEM;
    for (uint32_t id = 1; id <= p->nnames; id++)
        p->summary_of[id - 1] = sps__run_find(run, p->names[id - 1].name, p->names[id - 1].kind);
    for (uint32_t ti = 0; ti < p->nthreads; ti++) {
        struct sps_thread_data *t = &p->threads[ti], *from = NULL;
        if (ti < rec->nthreads && rec->threads[ti].tid == t->tid)
            from = &rec->threads[ti];
        for (uint32_t k = 0; !from && k < rec->nthreads; k++)
            if (rec->threads[k].tid == t->tid && rec->threads[k].aggs)
                from = &rec->threads[k];
        if (from && from->aggs) {
            t->aggs = from->aggs;
            from->aggs = NULL;
            for (int r = 0; r < SPS_RING_COUNT; r++) {
                t->events[r] = from->events[r];
                t->nevents[r] = from->nevents[r];
                from->events[r] = NULL;
                from->nevents[r] = 0;
            }
            t->gpu = from->gpu;
            t->ngpu = from->ngpu;
            from->gpu = NULL;
            from->ngpu = 0;
        } else if (p->nnames && !(t->aggs = calloc(p->nnames, sizeof *t->aggs))) {
            return SPS_ENOMEM;
        }
    }
    p->start_realtime_ns = rec->start_realtime_ns;
    p->end_ns = rec->end_ns;
    p->py_zones = rec->py_zones;
    p->py_values = rec->py_values;
    p->py_counts = rec->py_counts;
    p->hook_zones = rec->hook_zones;
    p->hook_counts = rec->hook_counts;
    p->py_zone_ns = rec->py_zone_ns;
    p->py_value_ns = rec->py_value_ns;
    p->py_count_ns = rec->py_count_ns;
    p->hook_zone_ns = rec->hook_zone_ns;
    p->end_samples = rec->end_samples;
    p->end_sample_ns = rec->end_sample_ns;
    p->end_samples_dropped = rec->end_samples_dropped;
    /* the measurements with their times (report.json leaves those out), and
     * the alignment the reader applied to the record's events */
    memcpy(p->clock_sync, rec->clock_sync, sizeof p->clock_sync);
    if (rec->align.method != SPS_ALIGN_NONE)
        p->align = rec->align;
    return 0;
}

/* An older report.json (no monotonic anchor) whose records hold one of
 * its processes: the process's start on the monotonic clock (its record)
 * less its start_s (report.json) is the run's start, the anchor every
 * time is moved onto.  Returns 1 when found. */
static int anchor_from_records(struct sps_report *rep, const struct sps_run *recs) {
    for (size_t i = 0; i < recs->nprocs; i++) {
        const struct sps_process_data *p = process_of(&rep->run, &recs->procs[i]);
        if (p && recs->procs[i].start_ns >= p->start_ns) {
            rebase_times(rep, recs->procs[i].start_ns - p->start_ns, 1);
            rep->no_time_anchor = 0;
            return 1;
        }
    }
    return 0;
}

/*
 * DIR/records' events into the report read from DIR/report.json.  No
 * record is an error here: records_note says what was missing or skipped,
 * and the report keeps what report.json said.  Returns 0 or SPS_ENOMEM.
 */
static int attach_records(struct sps_report *rep, const char *dir) {
    char records[4200];
    struct stat sb;
    snprintf(records, sizeof records, "%s/records", dir);
    if (stat(records, &sb) != 0) {
        snprintf(rep->records_note, sizeof rep->records_note,
                 "no records (%s: %s): zones are summarised in report.json only", records, strerror(errno));
        return 0;
    }
    struct sps_run recs = {0};
    char rerr[512];
    int rc = sps__run_load_dir(&recs, records, rerr, sizeof rerr);
    if (rc != 0) {
        sps__run_free(&recs);
        if (rc == SPS_ENOMEM)
            return rc;
        snprintf(rep->records_note, sizeof rep->records_note, "records unreadable: %s", rerr);
        return 0;
    }
    /* another run's report.json: the caller rebuilds from the records
     * (sps__report_rebuild_dir) rather than mix the two */
    if (sps__report_records_stale(&rep->run, &recs, rep->stale_reason, sizeof rep->stale_reason)) {
        sps__run_free(&recs);
        return 0;
    }
    if (rep->no_time_anchor && !anchor_from_records(rep, &recs)) {
        snprintf(rep->records_note, sizeof rep->records_note,
                 "records left out: report.json has no started_mono_ns (an older stepscope wrote it) and no "
                 "process of its records, so their events cannot be placed on the run's time axis; zones are "
                 "summarised in report.json only");
        sps__run_free(&recs);
        return 0;
    }
    size_t matched = 0;
    for (size_t i = 0; !rc && i < recs.nprocs; i++) {
        struct sps_process_data *p = process_of(&rep->run, &recs.procs[i]);
        if (p && !(rc = attach_process(&rep->run, p, &recs.procs[i])))
            matched++;
    }
    if (!rc)
        rc = sps__report_attach_torch(rep, &recs);
    if (!rc && !rep->run.merge.ninputs && recs.merge.ninputs) { /* a report.json older than the merge */
        rep->run.merge = recs.merge;
        memset(&recs.merge, 0, sizeof recs.merge);
    }
    rep->have_records = recs.nprocs > 0;
    rep->have_events = matched > 0;
    if (recs.nskipped > 0)
        sps__report_note_skipped(rep, &recs);
    else if (!recs.nprocs)
        snprintf(rep->records_note, sizeof rep->records_note, "%s holds no record", records);
    else if (matched < recs.nprocs)
        snprintf(rep->records_note, sizeof rep->records_note,
                 "%zu of %zu record(s) in %s are not in report.json (written after it?): left out "
                 "(stepscope report --from-records takes them in)",
                 recs.nprocs - matched, recs.nprocs, records);
    if (!rc)
        rc = sps__report_merge_skipped(rep, &recs); /* after the note: it moves recs' entries out */
    sps__run_free(&recs);
    return rc;
}

int sps__report_load_dir(struct sps_report *rep, const char *dir, char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    char path[4200];
    struct stat sb;
    if (snprintf(path, sizeof path, "%s/report.json", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: path too long", dir);
        return SPS_EINVAL;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: %s", dir, errno && stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
        return SPS_EIO;
    }
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s (is %s a run directory?)", path, strerror(errno), dir);
        return SPS_EIO;
    }
    int rc = sps__report_read(rep, path, err, errlen);
    if (rc)
        return rc;
    if ((rc = attach_records(rep, dir)) != 0) {
        sps__report_free(rep);
        snprintf(err, errlen, "%s/records: out of memory", dir);
    }
    return rc;
}
