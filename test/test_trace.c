/*
 * test_trace.c - trace.json (the Trace Event Format): real run directories
 * made by the CLI, exported and read back with jansson against the
 * format's rules (known phases, integer pid/tid, timestamps, metadata for
 * every track, complete events nesting per thread), plus the size budget,
 * a run without records, events that overlap and a failing write.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "render/exporters.h"
#include "render/output_file.h"
#include "render/render.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"
#define STEPS_TID_BASE 1000000000
#define MACHINE_PID 2000000000

/* ------------------------------------------------------------ helpers */

/* Load dir, export trace.json into path with max_bytes; the exporter's
 * return code (the load must succeed). */
static int export_dir(const char *dir, const char *path, uint64_t max_bytes, char *err, size_t errlen) {
    struct sps_report rep;
    char lerr[512];
    int rc = sps__report_load_dir(&rep, dir, lerr, sizeof lerr);
    CHECK_MSG(rc == 0, "load %s: %s", dir, lerr);
    if (rc != 0)
        return rc;
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) {
        sps__report_free(&rep);
        return SPS_EIO;
    }
    rc = sps__export_trace(&rep, f, max_bytes, err, errlen);
    fclose(f);
    sps__report_free(&rep);
    return rc;
}

/* Both strings, and equal. */
static int str_is(const char *a, const char *b) {
    return a && b && !strcmp(a, b);
}

static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static json_t *load_json(const char *path) {
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    CHECK_MSG(j != NULL, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    return j;
}

/* Export rep's trace.json (max_bytes) into dir and load it: NULL, with the
 * failure checked, when either fails.  rep stays the caller's. */
static json_t *export_and_load(const struct sps_report *rep, const char *dir, uint64_t max_bytes) {
    char path[700], err[512] = "";
    snprintf(path, sizeof path, "%s/trace.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    int rc = sps__export_trace(rep, f, max_bytes, err, sizeof err);
    fclose(f);
    CHECK_MSG(rc == 0, "export: %s", err);
    return rc == 0 ? load_json(path) : NULL;
}

struct span {
    long long pid, tid, start, end; /* ns: exact, the file has 3 decimals of us */
};

static int span_order(const void *pa, const void *pb) {
    const struct span *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->end > b->end ? -1 : a->end < b->end;
}

static int has_pair(const long long (*pairs)[2], size_t n, long long pid, long long tid) {
    for (size_t i = 0; i < n; i++)
        if (pairs[i][0] == pid && (tid < 0 || pairs[i][1] == tid))
            return 1;
    return 0;
}

/* What a trace holds, once it passed validate(). */
struct seen {
    size_t zones, microsteps, steps, counters, machine_counters, metadata, gpu;
};

/*
 * Check a trace against the rules of the Trace Event Format that Perfetto
 * and chrome://tracing rely on, and count what it holds.
 */
static void validate(json_t *trace, struct seen *s) {
    memset(s, 0, sizeof *s);
    CHECK(json_is_object(trace));
    json_t *events = json_object_get(trace, "traceEvents");
    CHECK(json_is_array(events));
    CHECK(json_is_string(json_object_get(trace, "displayTimeUnit")) &&
          !strcmp(json_string_value(json_object_get(trace, "displayTimeUnit")), "ms"));
    CHECK(json_is_object(json_object_get(trace, "otherData")));

    size_t n = json_array_size(events);
    struct span *spans = calloc(n + 1, sizeof *spans);
    long long(*named_threads)[2] = calloc(n + 1, sizeof *named_threads);
    long long(*named_procs)[2] = calloc(n + 1, sizeof *named_procs);
    long long(*used)[2] = calloc(n + 1, sizeof *used);
    size_t nspans = 0, nthreads = 0, nprocs = 0, nused = 0;
    int bad_event = 0;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        json_t *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid");
        json_t *ts = json_object_get(e, "ts");
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *args = json_object_get(e, "args");
        int ok = ph && json_is_integer(pid) && json_is_integer(tid) && name;
        if (ok && strcmp(ph, "M") != 0)
            ok = json_is_number(ts) && json_number_value(ts) >= 0;
        if (ok && !strcmp(ph, "X")) {
            json_t *dur = json_object_get(e, "dur");
            ok = json_is_number(dur) && json_number_value(dur) >= 0;
            if (ok) {
                long long t0 = llround(json_number_value(ts) * 1000);
                spans[nspans++] = (struct span){json_integer_value(pid), json_integer_value(tid), t0,
                                                t0 + llround(json_number_value(dur) * 1000)};
                used[nused][0] = json_integer_value(pid);
                used[nused++][1] = json_integer_value(tid);
                const char *cat = json_string_value(json_object_get(e, "cat"));
                if (cat && !strcmp(cat, "zone"))
                    s->zones++;
                else if (cat && !strcmp(cat, "microstep"))
                    s->microsteps++;
                else if (cat && !strcmp(cat, "gpu"))
                    s->gpu++; /* a GPU zone's span, on its stream's track */
                else if (cat && !strcmp(cat, "step")) {
                    /* every step slice is named "step": which one is in args */
                    s->steps++;
                    ok = !strcmp(name, "step") && json_is_integer(json_object_get(args, "index")) &&
                         json_is_number(json_object_get(args, "duration_ms"));
                } else
                    ok = 0;
            }
        } else if (ok && !strcmp(ph, "C")) {
            /* one numeric arg (Perfetto names the track "NAME KEY"), and a
             * category saying what the counter is */
            const char *cat = json_string_value(json_object_get(e, "cat"));
            ok = json_is_object(args) && json_object_size(args) == 1 && cat &&
                 (!strcmp(cat, "value") || !strcmp(cat, "counter") || !strcmp(cat, "machine"));
            ok = ok && !strcmp(cat, "machine") == (json_integer_value(pid) == MACHINE_PID);
            const char *key;
            json_t *v;
            json_object_foreach(args, key, v) ok = ok && json_is_number(v);
            used[nused][0] = json_integer_value(pid);
            used[nused++][1] = json_integer_value(tid);
            s->counters++;
            if (json_integer_value(pid) == MACHINE_PID)
                s->machine_counters++;
        } else if (ok && !strcmp(ph, "M")) {
            s->metadata++;
            if (!strcmp(name, "process_name") || !strcmp(name, "thread_name")) {
                ok = json_is_string(json_object_get(args, "name"));
                long long(*list)[2] = name[0] == 'p' ? named_procs : named_threads;
                size_t *count = name[0] == 'p' ? &nprocs : &nthreads;
                list[*count][0] = json_integer_value(pid);
                list[(*count)++][1] = json_integer_value(tid);
            } else {
                ok = (!strcmp(name, "process_sort_index") || !strcmp(name, "thread_sort_index")) &&
                     json_is_integer(json_object_get(args, "sort_index"));
            }
        } else if (ok) {
            ok = 0; /* a phase this exporter does not write */
        }
        if (!ok && bad_event++ < 3) {
            char *text = json_dumps(e, JSON_COMPACT);
            CHECK_MSG(0, "malformed event: %s", text ? text : "?");
            free(text);
        }
    }
    CHECK_EQ_I(bad_event, 0);

    /* every track named, every process named */
    int unnamed = 0;
    for (size_t k = 0; k < nused; k++) {
        if (!has_pair((const long long(*)[2])named_procs, nprocs, used[k][0], -1) ||
            !has_pair((const long long(*)[2])named_threads, nthreads, used[k][0], used[k][1]))
            if (unnamed++ < 3)
                CHECK_MSG(0, "pid %lld tid %lld has no process_name or thread_name", used[k][0], used[k][1]);
    }
    CHECK_EQ_I(unnamed, 0);

    /* complete events nest per thread: sorted by start (longer first),
     * each lies inside the innermost open one or starts after it ends */
    qsort(spans, nspans, sizeof *spans, span_order);
    size_t *stack = calloc(nspans + 1, sizeof *stack), depth = 0;
    int overlaps = 0;
    for (size_t k = 0; k < nspans; k++) {
        if (k && (spans[k].pid != spans[k - 1].pid || spans[k].tid != spans[k - 1].tid))
            depth = 0;
        while (depth && spans[stack[depth - 1]].end <= spans[k].start)
            depth--;
        if (depth && spans[k].end > spans[stack[depth - 1]].end) {
            if (overlaps++ < 3)
                CHECK_MSG(0, "pid %lld tid %lld: [%lld, %lld] ns overlaps [%lld, %lld] ns", spans[k].pid, spans[k].tid,
                          spans[k].start, spans[k].end, spans[stack[depth - 1]].start, spans[stack[depth - 1]].end);
            continue;
        }
        stack[depth++] = k;
    }
    CHECK_EQ_I(overlaps, 0);
    free(stack);
    free(spans);
    free(named_threads);
    free(named_procs);
    free(used);
}

static uint64_t other_u(json_t *trace, const char *key) {
    json_t *v = json_object_get(json_object_get(trace, "otherData"), key);
    CHECK_MSG(json_is_integer(v), "otherData.%s is an integer", key);
    return (uint64_t)json_integer_value(v);
}

/* Zone and micro-step events the rings kept, from report.json. */
static uint64_t zones_kept(json_t *report) {
    uint64_t kept = 0;
    size_t i, j;
    json_t *p, *t;
    json_array_foreach(json_object_get(report, "processes"), i, p) {
        json_array_foreach(json_object_get(p, "threads"), j, t) {
            kept += (uint64_t)json_integer_value(json_path(t, "events.zones.kept"));
        }
    }
    return kept;
}

/* The first event with this ph and name (and pid when pid >= 0). */
static json_t *find_event(json_t *trace, const char *ph, const char *name, long long pid) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *eph = json_string_value(json_object_get(e, "ph"));
        const char *ename = json_string_value(json_object_get(e, "name"));
        if (eph && ename && !strcmp(eph, ph) && !strcmp(ename, name) &&
            (pid < 0 || json_integer_value(json_object_get(e, "pid")) == pid))
            return e;
    }
    return NULL;
}

/* The step slice of pid with this index. */
static json_t *find_step(json_t *trace, long long pid, long long index) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (cat && !strcmp(cat, "step") && json_integer_value(json_object_get(e, "pid")) == pid &&
            json_integer_value(json_path(e, "args.index")) == index)
            return e;
    }
    return NULL;
}

static size_t count_events(json_t *trace, const char *ph, const char *name) {
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *eph = json_string_value(json_object_get(e, "ph"));
        const char *ename = json_string_value(json_object_get(e, "name"));
        n += eph && ename && !strcmp(eph, ph) && !strcmp(ename, name);
    }
    return n;
}

/* The pid of the longest step event, with its span in ns; -1 if none. */
static long long slowest_step(json_t *trace, long long *start, long long *end) {
    long long pid = -1, longest = -1;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || strcmp(cat, "step") != 0)
            continue;
        long long t0 = llround(json_number_value(json_object_get(e, "ts")) * 1000);
        long long d = llround(json_number_value(json_object_get(e, "dur")) * 1000);
        if (d > longest) {
            longest = d;
            pid = json_integer_value(json_object_get(e, "pid"));
            *start = t0;
            *end = t0 + d;
        }
    }
    return pid;
}

/* A zone's or micro-step's category (counters have categories too). */
static int is_zone_cat(const char *cat) {
    return cat && (!strcmp(cat, "zone") || !strcmp(cat, "microstep"));
}

/* Zone and micro-step events of pid that start in [start, end) ns: the
 * zones a step owns. */
static size_t zones_within(json_t *trace, long long pid, long long start, long long end) {
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        long long t0 = llround(json_number_value(json_object_get(e, "ts")) * 1000);
        if (is_zone_cat(cat) && json_integer_value(json_object_get(e, "pid")) == pid && t0 >= start &&
            t0 < end)
            n++;
    }
    return n;
}

/* The latest start (ns) of those zones; start when there is none. */
static long long latest_zone_start(json_t *trace, long long pid, long long start, long long end) {
    long long latest = start;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        long long t0 = llround(json_number_value(json_object_get(e, "ts")) * 1000);
        if (is_zone_cat(cat) && json_integer_value(json_object_get(e, "pid")) == pid && t0 >= start &&
            t0 < end && t0 > latest)
            latest = t0;
    }
    return latest;
}

/* ------------------------------------------------------------ tests */

static char full_dir[600];

/* Steps with micro-steps, a fork child, values and counters, a rank and
 * sampled metrics: everything in the trace, nothing left out. */
static void test_full_run(void) {
    snprintf(full_dir, sizeof full_dir, "%s", tmpdir_new("trace-full"));
    char *argv[] = {"/usr/bin/env", "RANK=3", STEPSCOPE, "run", "-q", "--interval", "20", "-o", full_dir, "--",
                    WORKLOAD, "--steps", "12", "--micro", "2", "--fork", "3", "--sleep-ms", "120", NULL};
    char err[4096] = "";
    CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == 0, "stepscope run: %s", err);
    json_t *report = report_load(full_dir);
    if (!report)
        return;
    char path[700];
    snprintf(path, sizeof path, "%s/trace.json", full_dir);
    char xerr[512] = "";
    CHECK_MSG(export_dir(full_dir, path, SPS_TRACE_DEFAULT_MAX_BYTES, xerr, sizeof xerr) == 0, "export: %s", xerr);
    json_t *trace = load_json(path);
    if (!trace) {
        json_decref(report);
        return;
    }
    struct seen s;
    validate(trace, &s);

    /* every kept zone and micro-step, and the counts agree with the exact
     * aggregates since the rings dropped nothing */
    CHECK_EQ_U(json_integer_value(json_path(report, "recording.events_dropped")), 0);
    CHECK_EQ_U(s.zones + s.microsteps, zones_kept(report));
    uint64_t aggregated = 0;
    size_t i;
    json_t *z;
    json_array_foreach(json_object_get(report, "zones"), i, z) {
        const char *kind = json_string_value(json_object_get(z, "kind"));
        if (!strcmp(kind, "zone") || !strcmp(kind, "microstep"))
            aggregated += (uint64_t)json_integer_value(json_object_get(z, "count"));
    }
    CHECK_EQ_U(s.zones + s.microsteps, aggregated);
    CHECK_EQ_U(s.microsteps, 24);
    CHECK_EQ_U(count_events(trace, "X", "child_work"), 3);
    CHECK_EQ_U(other_u(trace, "zone_events_written"), s.zones + s.microsteps);
    CHECK_EQ_U(other_u(trace, "zone_events_left_out_for_budget"), 0);
    CHECK_EQ_U(other_u(trace, "zone_events_left_out_overlapping"), 0);
    CHECK_EQ_U(other_u(trace, "budget_bytes"), SPS_TRACE_DEFAULT_MAX_BYTES);
    CHECK(json_is_true(json_path(trace, "otherData.zones_available")));

    /* steps: one per row, on the steps track, at the row's time */
    CHECK_EQ_U(s.steps, 12);
    CHECK_EQ_U(s.steps, json_integer_value(json_path(report, "steps.rows_kept")));
    json_t *row0 = json_array_get(json_path(report, "steps.rows"), 0);
    long long pid = json_integer_value(json_object_get(row0, "pid"));
    json_t *step0 = find_step(trace, pid, 0);
    CHECK(step0 != NULL);
    if (step0) {
        CHECK_EQ_I(json_integer_value(json_object_get(step0, "tid")),
                   STEPS_TID_BASE + json_integer_value(json_object_get(row0, "tid")));
        CHECK_NEAR(json_number_value(json_object_get(step0, "ts")),
                   json_number_value(json_object_get(row0, "start_s")) * 1e6, 1.0);
        CHECK_NEAR(json_number_value(json_object_get(step0, "dur")),
                   json_number_value(json_object_get(row0, "duration_s")) * 1e6, 0.01);
        CHECK(json_is_boolean(json_path(step0, "args.warmup")));
        CHECK_EQ_I(json_integer_value(json_path(step0, "args.index")), 0);
        CHECK_EQ_I(json_integer_value(json_path(step0, "args.microsteps")), 2);
        CHECK(str_is(json_string_value(json_object_get(step0, "name")), "step"));
        CHECK(str_is(json_string_value(json_path(step0, "args.step_name")),
                     json_string_value(json_object_get(row0, "name"))));
    }
    CHECK(find_step(trace, pid, 11) != NULL);
    CHECK_EQ_U(count_events(trace, "X", "step"), 12);
    json_t *steps_track = NULL;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, z) {
        if (!strcmp(json_string_value(json_object_get(z, "name")), "thread_name") &&
            json_integer_value(json_object_get(z, "pid")) == pid &&
            json_integer_value(json_object_get(z, "tid")) >= STEPS_TID_BASE)
            steps_track = z;
    }
    CHECK(steps_track && !strcmp(json_string_value(json_path(steps_track, "args.name")), "steps"));

    /* the rank labels its process and orders it */
    json_t *pname = find_event(trace, "M", "process_name", pid);
    CHECK(pname != NULL);
    if (pname) {
        char want[64];
        snprintf(want, sizeof want, "rank 3 (pid %lld) test_workload --steps 12", pid);
        CHECK_STR_HAS(json_string_value(json_path(pname, "args.name")), want);
    }
    json_t *sort = find_event(trace, "M", "process_sort_index", pid);
    CHECK(sort && json_integer_value(json_path(sort, "args.sort_index")) == 3);

    /* values and counters as counters: loss = 1/(i+1), samples += 8 */
    CHECK_EQ_U(count_events(trace, "C", "loss"), 12);
    CHECK_EQ_U(count_events(trace, "C", "samples"), 12);
    json_t *loss = find_event(trace, "C", "loss", pid);
    CHECK(loss && json_number_value(json_path(loss, "args.value")) == 1.0);
    double last_total = 0;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, z)
        if (!strcmp(json_string_value(json_object_get(z, "name")), "samples"))
            last_total = json_number_value(json_path(z, "args.total"));
    CHECK(last_total == 96.0);

    /* sampled metrics: every point of every series, the tree's processes'
     * own RSS included, on the machine process */
    size_t points = 0;
    json_array_foreach(json_path(report, "series.metrics"), i, z) {
        size_t n = json_array_size(json_object_get(z, "t_s"));
        points += json_integer_value(json_object_get(z, "readings_per_point")) > 1 ? 2 * n : n;
    }
    CHECK(json_array_size(json_path(report, "series.processes")) >= 1);
    json_array_foreach(json_path(report, "series.processes"), i, z) {
        size_t n = json_array_size(json_object_get(z, "t_s"));
        points += json_integer_value(json_object_get(z, "readings_per_point")) > 1 ? 2 * n : n;
        char track[128];
        snprintf(track, sizeof track, "process_rss_bytes pid %lld (%s)",
                 (long long)json_integer_value(json_object_get(z, "pid")),
                 json_string_value(json_object_get(z, "comm")));
        CHECK_MSG(find_event(trace, "C", track, MACHINE_PID) != NULL, "no counter %s", track);
    }
    CHECK(points > 0);
    CHECK_EQ_U(s.machine_counters, points);
    json_t *machine = find_event(trace, "M", "process_name", MACHINE_PID);
    CHECK(machine && !strcmp(json_string_value(json_path(machine, "args.name")), "machine (sampled)"));
    CHECK(find_event(trace, "C", "workload_rss_bytes", MACHINE_PID) != NULL);
    CHECK_EQ_U(other_u(trace, "counter_points_left_out_for_budget"), 0);
    CHECK_EQ_U(other_u(trace, "counter_decimation"), 1);
    CHECK(file_size(path) > 0);
    json_decref(trace);
    json_decref(report);
}

/* Many zones (81 per step, and a thread recording outside the steps as
 * fast as it can) and a small budget:
 * the file stays within it, every step outline is there, and otherData
 * counts what was left out. */
static void test_budget(void) {
    const char *dir = tmpdir_new("trace-budget");
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "-o", (char *)dir, "--", WORKLOAD, "--steps", "20",
                    "--micro", "40", "--busy-thread", "--sleep-ms", "40", NULL};
    char err[4096] = "";
    CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == 0, "stepscope run: %s", err);
    json_t *report = report_load(dir);
    if (!report)
        return;
    uint64_t rows = (uint64_t)json_integer_value(json_path(report, "steps.rows_kept"));
    CHECK_EQ_U(rows, 20);

    char path[700];
    snprintf(path, sizeof path, "%s/full.json", dir);
    char xerr[512] = "";
    CHECK_MSG(export_dir(dir, path, SPS_TRACE_DEFAULT_MAX_BYTES, xerr, sizeof xerr) == 0, "export: %s", xerr);
    json_t *full = load_json(path);
    struct seen s;
    if (full) {
        validate(full, &s);
        CHECK_EQ_U(s.zones + s.microsteps, zones_kept(report));
        CHECK_EQ_U(other_u(full, "zone_events_left_out_for_budget"), 0);
        /* the precondition of the small budget below */
        CHECK_MSG(file_size(path) > 4 * 20480, "a run with many zones (%ld bytes)", file_size(path));
    }

    uint64_t kept_small = 0;
    const uint64_t budgets[] = {20480, 61440};
    for (size_t b = 0; b < 2; b++) {
        snprintf(path, sizeof path, "%s/small-%zu.json", dir, b);
        CHECK_MSG(export_dir(dir, path, budgets[b], xerr, sizeof xerr) == 0, "export: %s", xerr);
        CHECK_MSG(file_size(path) > 0 && (uint64_t)file_size(path) <= budgets[b], "%ld bytes within %" PRIu64,
                  file_size(path), budgets[b]);
        json_t *small = load_json(path);
        if (!small)
            continue;
        validate(small, &s);
        CHECK_EQ_U(s.steps, rows);
        CHECK(s.zones > 0);
        CHECK_EQ_U(other_u(small, "zone_events_written"), s.zones + s.microsteps);
        uint64_t left_out = other_u(small, "zone_events_left_out_for_budget");
        CHECK(left_out > 0);
        CHECK_EQ_U(s.zones + s.microsteps + left_out + other_u(small, "zone_events_left_out_overlapping"),
                   other_u(small, "zone_events_in_records"));
        CHECK_EQ_U(other_u(small, "zone_events_in_records"), zones_kept(report));
        CHECK_EQ_U(other_u(small, "steps_left_out_for_budget"), 0);
        CHECK_EQ_U(other_u(small, "budget_bytes"), budgets[b]);
        /* the slowest step gets zone detail first: its zones from its
         * start on, without a gap, all of them unless they do not fit */
        if (full) {
            long long start = 0, end = 0, pid = slowest_step(small, &start, &end);
            CHECK(pid > 0);
            size_t kept = zones_within(small, pid, start, end), all = zones_within(full, pid, start, end);
            long long last = latest_zone_start(small, pid, start, end);
            CHECK(kept > 0);
            CHECK_EQ_U(zones_within(small, pid, start, last), zones_within(full, pid, start, last));
            if (kept < all)
                CHECK(other_u(small, "steps_with_zones_cut_for_budget") > 0);
        }
        if (b == 0)
            kept_small = s.zones;
        else
            CHECK_MSG(s.zones > kept_small, "a larger budget keeps more zones (%zu vs %" PRIu64 ")", s.zones, kept_small);
        json_decref(small);
    }

    /* a budget below what the metadata needs is refused, not exceeded */
    snprintf(path, sizeof path, "%s/tiny.json", dir);
    xerr[0] = '\0';
    CHECK_EQ_I(export_dir(dir, path, 300, xerr, sizeof xerr), SPS_EINVAL);
    CHECK_STR_HAS(xerr, "too small");
    CHECK_EQ_I(file_size(path), 0);
    json_decref(full);
    json_decref(report);
}

/* No records: the steps and machine metrics report.json has, and otherData
 * says that zones were unavailable and why. */
static void check_without_records(const char *dir, uint64_t want_steps, int want_machine) {
    char path[700], xerr[512] = "";
    snprintf(path, sizeof path, "%s/trace.json", dir);
    CHECK_MSG(export_dir(dir, path, SPS_TRACE_DEFAULT_MAX_BYTES, xerr, sizeof xerr) == 0, "export: %s", xerr);
    json_t *trace = load_json(path);
    if (!trace)
        return;
    struct seen s;
    validate(trace, &s);
    CHECK_EQ_U(s.zones + s.microsteps, 0);
    CHECK_EQ_U(s.steps, want_steps);
    CHECK(want_machine ? s.machine_counters > 0 : s.machine_counters == 0);
    CHECK(json_is_false(json_path(trace, "otherData.zones_available")));
    CHECK_STR_HAS(json_string_value(json_path(trace, "otherData.zones_note")), "no records");
    CHECK_EQ_U(other_u(trace, "zone_events_in_records"), 0);
    json_decref(trace);
}

static void test_without_records(void) {
    /* a standalone run: the process writes its own report.json */
    const char *dir = tmpdir_new("trace-standalone");
    char env[700];
    snprintf(env, sizeof env, "STEPSCOPE_OUT=%s", dir);
    char *argv[] = {"/usr/bin/env", env, WORKLOAD, "--steps", "6", NULL};
    char err[4096] = "";
    CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == 0, "standalone workload: %s", err);
    json_t *report = report_load(dir);
    if (report) {
        CHECK_EQ_U(json_integer_value(json_path(report, "steps.rows_kept")), 6);
        check_without_records(dir, 6, 0);
        json_decref(report);
    }

    /* a CLI run's report.json alone, without its records */
    if (!full_dir[0])
        return;
    char src[700], dst[700];
    const char *copy = tmpdir_new("trace-copy");
    snprintf(src, sizeof src, "%s/report.json", full_dir);
    snprintf(dst, sizeof dst, "%s/report.json", copy);
    FILE *in = fopen(src, "rb");
    CHECK(in != NULL);
    if (!in)
        return;
    char *data = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, in)) > 0) {
        if (len + got > cap) {
            cap = (len + got) * 2;
            data = realloc(data, cap);
        }
        memcpy(data + len, chunk, got);
        len += got;
    }
    fclose(in);
    write_file(dst, data, len);
    free(data);
    check_without_records(copy, 12, 1);
}

/* A hand-made run whose thread has an event that partly overlaps another
 * (what a reused thread entry or unmatched ends can leave): it is left out
 * and counted; times are exact microseconds from the run's start. */
static struct sps_event synthetic_events[4];
static struct sps_name_info synthetic_names[3] = {
    {.kind = SPS_KIND_ZONE, .name = "outer"},
    {.kind = SPS_KIND_ZONE, .name = "inner"},
    {.kind = SPS_KIND_ZONE, .name = "straddle"},
};
static struct sps_thread_data synthetic_thread;
static struct sps_process_data synthetic_proc;

static void synthetic_input(struct sps_report *rep) {
    memset(rep, 0, sizeof *rep);
    rep->have_events = 1;
    rep->have_records = 1;
    /* by end time, as a ring holds them; ns on the monotonic clock */
    synthetic_events[0] = (struct sps_event){.start_ns = 5100, .end_ns = 5200, .name = 2, .depth = 1, .kind = SPS_KIND_ZONE};
    synthetic_events[1] = (struct sps_event){.start_ns = 5000, .end_ns = 6000, .name = 1, .kind = SPS_KIND_ZONE};
    synthetic_events[2] = (struct sps_event){.start_ns = 6000, .end_ns = 6250, .name = 2, .kind = SPS_KIND_ZONE};
    synthetic_events[3] = (struct sps_event){.start_ns = 5900, .end_ns = 6500, .name = 3, .kind = SPS_KIND_ZONE};
    memset(&synthetic_thread, 0, sizeof synthetic_thread);
    synthetic_thread.tid = 43;
    snprintf(synthetic_thread.name, sizeof synthetic_thread.name, "worker");
    synthetic_thread.nevents[SPS_RING_ZONES] = 4;
    synthetic_thread.offered[SPS_RING_ZONES] = 4;
    synthetic_thread.events[SPS_RING_ZONES] = synthetic_events;
    memset(&synthetic_proc, 0, sizeof synthetic_proc);
    synthetic_proc.pid = 42;
    synthetic_proc.rank = -1;
    synthetic_proc.start_ns = 5000;
    synthetic_proc.nnames = 3;
    synthetic_proc.names = synthetic_names;
    synthetic_proc.nthreads = 1;
    synthetic_proc.threads = &synthetic_thread;
    rep->run.nprocs = 1;
    rep->run.procs = &synthetic_proc;
    rep->run.start_ns = 5000;
}

static void test_overlapping_events(void) {
    struct sps_report rep;
    synthetic_input(&rep);
    json_t *trace = export_and_load(&rep, tmpdir_new("trace-overlap"), 1 << 20);
    if (!trace)
        return;
    struct seen s;
    validate(trace, &s);
    CHECK_EQ_U(s.zones, 3);
    CHECK_EQ_U(other_u(trace, "zone_events_left_out_overlapping"), 1);
    CHECK_EQ_U(other_u(trace, "zone_events_in_records"), 4);
    CHECK(find_event(trace, "X", "straddle", 42) == NULL);
    json_t *outer = find_event(trace, "X", "outer", 42);
    CHECK(outer && json_number_value(json_object_get(outer, "ts")) == 0.0 &&
          json_number_value(json_object_get(outer, "dur")) == 1.0);
    json_t *inner = find_event(trace, "X", "inner", 42);
    CHECK(inner && json_number_value(json_object_get(inner, "ts")) == 0.1 &&
          json_number_value(json_object_get(inner, "dur")) == 0.1 && json_integer_value(json_object_get(inner, "tid")) == 43);
    json_t *tname = find_event(trace, "M", "thread_name", 42);
    CHECK(tname && !strcmp(json_string_value(json_path(tname, "args.name")), "worker"));
    json_t *pname = find_event(trace, "M", "process_name", 42);
    CHECK(pname && !strncmp(json_string_value(json_path(pname, "args.name")), "pid 42", 6));
    json_decref(trace);
}

/* stepscope.MemoryTracker's allocation timeline: its values (recorded at
 * their own times, so out of order in the ring) make one counter track
 * named for what it shows, its points in time order with their values. */
static void test_torch_memory_track(void) {
    static struct sps_name_info names[1] = {{.kind = SPS_KIND_VALUE, .name = SPS_TORCH_TIMELINE_VALUE}};
    static struct sps_event ev[4];
    static const double mib[4] = {4, 20, 16, 18};
    static struct sps_thread_data th;
    static struct sps_process_data proc;
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    rep.have_events = rep.have_records = 1;
    for (int i = 0; i < 4; i++) {
        struct sps_event *e = &ev[(i + 3) % 4];
        double v = mib[i] * 1048576.0;
        *e = (struct sps_event){.start_ns = 6000 + 1000u * (unsigned)i, .end_ns = 6000 + 1000u * (unsigned)i,
                                .name = 1, .depth = 0xffff, .kind = SPS_KIND_VALUE};
        memcpy(&e->a, &v, sizeof e->a);
    }
    memset(&th, 0, sizeof th);
    th.tid = 51;
    th.nevents[SPS_RING_VALUES] = th.offered[SPS_RING_VALUES] = 4;
    th.events[SPS_RING_VALUES] = ev;
    memset(&proc, 0, sizeof proc);
    proc.pid = 50;
    proc.rank = -1;
    proc.start_ns = 5000;
    proc.nnames = 1;
    proc.names = names;
    proc.nthreads = 1;
    proc.threads = &th;
    rep.run.nprocs = 1;
    rep.run.procs = &proc;
    rep.run.start_ns = 5000;
    json_t *trace = export_and_load(&rep, tmpdir_new("trace-torch-memory"), 1 << 20);
    if (!trace)
        return;
    struct seen s;
    validate(trace, &s);
    CHECK_EQ_U(count_events(trace, "C", SPS_TORCH_TIMELINE_LABEL), 4);
    CHECK_EQ_U(count_events(trace, "C", SPS_TORCH_TIMELINE_VALUE), 0);
    size_t i, k = 0;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!name || strcmp(name, SPS_TORCH_TIMELINE_LABEL) != 0 || k >= 4)
            continue;
        CHECK(json_number_value(json_object_get(e, "ts")) == 1.0 + (double)k);
        CHECK(json_number_value(json_path(e, "args.value")) == mib[k] * 1048576.0);
        CHECK_EQ_I(json_integer_value(json_object_get(e, "pid")), 50);
        k++;
    }
    CHECK_EQ_U(k, 4);
    json_decref(trace);
}

/* Many steps on three tracks of two processes (one thread of one, two of
 * the other), values, a counter and a sampled series, all hand-made: the
 * steps tracks get exactly their names and sort indices, every step
 * slice is named "step" with its index and stream in args, and every
 * counter says its category.  With 30000 steps this is the test the
 * O(steps^2) track naming took seconds over. */
#define MANY_STEPS 30000
static const char *const many_stream[3] = {"train", "train", "eval"};

static void test_many_steps_named(void) {
    static struct sps_name_summary run_names[2] = {{.name = "train", .kind = SPS_KIND_STEP},
                                                   {.name = "eval", .kind = SPS_KIND_STEP}};
    static struct sps_name_info proc_names[2] = {{.kind = SPS_KIND_VALUE, .name = "loss"},
                                                 {.kind = SPS_KIND_COUNTER, .name = "samples"}};
    static struct sps_thread_data threads_a[1], threads_b[2];
    static struct sps_process_data procs[2];
    struct sps_event values[3];
    double loss = 1.5;
    memset(values, 0, sizeof values);
    values[0] = (struct sps_event){.start_ns = 1000100, .name = 1, .kind = SPS_KIND_VALUE};
    memcpy(&values[0].a, &loss, sizeof loss);
    values[1] = (struct sps_event){.start_ns = 1000200, .a = 8, .name = 2, .kind = SPS_KIND_COUNTER};
    values[2] = (struct sps_event){.start_ns = 1000300, .a = 8, .name = 2, .kind = SPS_KIND_COUNTER};
    memset(threads_a, 0, sizeof threads_a);
    memset(threads_b, 0, sizeof threads_b);
    memset(procs, 0, sizeof procs);
    threads_a[0].tid = 11;
    threads_a[0].nevents[SPS_RING_VALUES] = 3;
    threads_a[0].events[SPS_RING_VALUES] = values;
    threads_b[0].tid = 21;
    threads_b[1].tid = 22;
    procs[0] = (struct sps_process_data){.pid = 10, .rank = -1, .nnames = 2, .names = proc_names, .nthreads = 1,
                                         .threads = threads_a};
    procs[1] = (struct sps_process_data){.pid = 20, .rank = -1, .nthreads = 2, .threads = threads_b};

    struct sps_step_row *rows = calloc(MANY_STEPS, sizeof *rows);
    struct sps__sampler_result *sampler = calloc(1, sizeof *sampler);
    struct sps__series_point points[2] = {{.t_ns = 1000000, .mean = 100, .max = 100, .n = 1},
                                          {.t_ns = 2000000, .mean = 200, .max = 200, .n = 1}};
    CHECK(rows && sampler);
    if (!rows || !sampler) {
        free(rows);
        free(sampler);
        return;
    }
    int rss = -1;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        if (!strcmp(sps_host_metric_info(i)->name, "workload_rss_bytes"))
            rss = i;
    CHECK(rss >= 0);
    if (rss >= 0)
        sampler->host[rss] = (struct sps__series){.points = points, .count = 2, .cap = 2, .per_point = 1, .n = 2};
    /* three streams interleaved in time: pid 10 tid 11, pid 20 tid 21
     * (both "train") and pid 20 tid 22 ("eval") */
    for (size_t r = 0; r < MANY_STEPS; r++)
        rows[r] = (struct sps_step_row){.index = r / 3, .process = r % 3 ? 1 : 0, .tid = r % 3 == 0 ? 11 : 20 + (int)(r % 3),
                                        .name = r % 3 == 2 ? 1 : 0, .start_ns = 1000000 + r * 1000,
                                        .end_ns = 1000000 + r * 1000 + 900, .warmup = r < 6};
    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    rep.have_events = rep.have_records = 1;
    rep.run = (struct sps_run){.nprocs = 2, .procs = procs, .nnames = 2, .names = run_names, .nsteps = MANY_STEPS,
                               .steps = rows, .start_ns = 1000000};
    rep.info.sampler = sampler;

    const char *dir = tmpdir_new("trace-many");
    char path[700], err[512] = "";
    snprintf(path, sizeof path, "%s/trace.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        CHECK_MSG(sps__export_trace(&rep, f, 1u << 30, err, sizeof err) == 0, "export: %s", err);
        fclose(f);
    }
    free(rows);
    free(sampler);
    json_t *trace = f ? load_json(path) : NULL;
    if (!trace)
        return;
    struct seen s;
    validate(trace, &s);
    CHECK_EQ_U(s.steps, MANY_STEPS);
    CHECK_EQ_U(count_events(trace, "X", "step"), MANY_STEPS);
    CHECK(str_is(json_string_value(json_path(trace, "otherData.format")), "stepscope.trace/2"));

    /* the steps tracks: exactly these three, named so, sorted first */
    static const struct {
        long long pid, tid;
        const char *name;
    } want[3] = {{10, STEPS_TID_BASE + 11, "steps"},
                 {20, STEPS_TID_BASE + 21, "steps (tid 21)"},
                 {20, STEPS_TID_BASE + 22, "steps (tid 22)"}};
    size_t named = 0, sorted = 0, found[3] = {0, 0, 0}, i;
    json_t *e;
    long long next_index[3] = {0, 0, 0};
    size_t misnamed = 0;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        long long pid = json_integer_value(json_object_get(e, "pid")), tid = json_integer_value(json_object_get(e, "tid"));
        if (tid < STEPS_TID_BASE || pid == MACHINE_PID)
            continue;
        int k = pid == 10 ? 0 : tid == STEPS_TID_BASE + 21 ? 1 : 2;
        if (!strcmp(name, "thread_name")) {
            named++;
            found[k] += pid == want[k].pid && tid == want[k].tid && str_is(json_string_value(json_path(e, "args.name")), want[k].name);
        } else if (!strcmp(name, "thread_sort_index")) {
            sorted += json_integer_value(json_path(e, "args.sort_index")) == -1;
        } else {
            /* each track's steps in order, each with its index and stream */
            if (json_integer_value(json_path(e, "args.index")) != next_index[k]++ ||
                !str_is(json_string_value(json_path(e, "args.step_name")), many_stream[k]) ||
                !str_is(json_string_value(json_object_get(e, "cat")), "step") ||
                json_is_true(json_path(e, "args.warmup")) != (next_index[k] <= 2))
                misnamed++;
        }
    }
    CHECK_EQ_U(named, 3);
    CHECK_EQ_U(sorted, 3);
    CHECK(found[0] == 1 && found[1] == 1 && found[2] == 1);
    CHECK_EQ_U(misnamed, 0);
    CHECK(next_index[0] == MANY_STEPS / 3 && next_index[1] == MANY_STEPS / 3 && next_index[2] == MANY_STEPS / 3);

    /* counters: a value, a count's running total, a sampled metric */
    json_t *c = find_event(trace, "C", "loss", 10);
    CHECK(c && str_is(json_string_value(json_object_get(c, "cat")), "value") &&
          json_number_value(json_path(c, "args.value")) == 1.5);
    CHECK_EQ_U(count_events(trace, "C", "samples"), 2);
    double total = 0;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e)
        if (str_is(json_string_value(json_object_get(e, "name")), "samples")) {
            CHECK(str_is(json_string_value(json_object_get(e, "cat")), "counter"));
            total = json_number_value(json_path(e, "args.total"));
        }
    CHECK(total == 16.0);
    c = find_event(trace, "C", "workload_rss_bytes", MACHINE_PID);
    CHECK(c && str_is(json_string_value(json_object_get(c, "cat")), "machine") &&
          json_number_value(json_path(c, "args.bytes")) == 100 && json_number_value(json_object_get(c, "ts")) == 0.0);
    CHECK_EQ_U(count_events(trace, "C", "workload_rss_bytes"), 2);
    json_decref(trace);
}

/* A write that fails is SPS_EIO with a message, not a crash. */
static void test_write_failure(void) {
    FILE *f = fopen("/dev/full", "w");
    if (!f) {
        fprintf(stderr, "skip test_write_failure: no /dev/full\n");
        return;
    }
    struct sps_report rep;
    synthetic_input(&rep);
    char err[512] = "";
    CHECK_EQ_I(sps__export_trace(&rep, f, 1 << 20, err, sizeof err), SPS_EIO);
    CHECK_STR_HAS(err, "write failed");
    fclose(f);
}

/* ------------------------------------------------------------ GPU streams */

#define GPU_SA ((void *)(uintptr_t)0xa000)
#define GPU_SB ((void *)(uintptr_t)0xb000)

/* A process whose GPU zones ran on two streams and the default one, over
 * the fake libcuda: stream A busy [0, 10) ms after the epoch, B [5, 12),
 * the default stream [12, 15).  Its record is closed at exit. */
static void gpu_child(const char *dir) {
    setenv("STEPSCOPE_RUN_DIR", dir, 1);
    setenv("STEPSCOPE_LIBCUDA", FAKE_CUDA_PATH, 1);
    setenv("STEPSCOPE_CLOCK", "monotonic", 1);
    void *h = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        _exit(2);
    void (*advance)(void *, double);
    long (*complete)(void *, long);
    *(void **)&advance = dlsym(h, "fake_cuda_stream_advance");
    *(void **)&complete = dlsym(h, "fake_cuda_stream_complete");
    if (!advance || !complete)
        _exit(2);
    struct sps_site *step = sps_site_get("gpu_step", SPS_KIND_STEP);
    struct sps_site *fwd = sps_site_get("fwd", SPS_KIND_ZONE), *copy = sps_site_get("copy", SPS_KIND_ZONE),
                    *opt = sps_site_get("opt", SPS_KIND_ZONE);
    sps_zone_t st = sps_zone_begin(step);
    sps_gpu_zone_end(sps_gpu_zone_begin(fwd, GPU_SA));
    sps_gpu_zone_end(sps_gpu_zone_begin(copy, GPU_SB));
    sps_gpu_zone_end(sps_gpu_zone_begin(opt, NULL));
    sps_zone_end(st);
    complete(GPU_SA, 2); /* the epoch and fwd's start at 0 */
    advance(GPU_SB, 5);
    complete(GPU_SB, 1);
    advance(GPU_SA, 10);
    complete(GPU_SA, 1);
    advance(GPU_SB, 7);
    complete(GPU_SB, 1);
    advance(NULL, 12);
    complete(NULL, 1);
    advance(NULL, 3);
    complete(NULL, 1);
    exit(sps_gpu_wait(60) == 0 ? 0 : 3);
}

/* The X event of this cat and name. */
static json_t *find_x(json_t *trace, const char *cat, const char *name) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        if (str_is(json_string_value(json_object_get(e, "ph")), "X") &&
            str_is(json_string_value(json_object_get(e, "cat")), cat) &&
            str_is(json_string_value(json_object_get(e, "name")), name))
            return e;
    }
    return NULL;
}

/* The tid of the thread_name metadata naming label, or -1. */
static long long track_named(json_t *trace, const char *label) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        if (str_is(json_string_value(json_object_get(e, "ph")), "M") &&
            str_is(json_string_value(json_object_get(e, "name")), "thread_name") &&
            str_is(json_string_value(json_path(e, "args.name")), label))
            return json_integer_value(json_object_get(e, "tid"));
    }
    return -1;
}

/* Records -> model -> trace.json: each GPU zone's span on its stream's
 * track, at the exact places the fake GPU ran them. */
static void test_gpu_tracks(void) {
    const char *dir = tmpdir_new("trace-gpu");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        gpu_child(dir);
    int st = 0;
    CHECK_EQ_I(waitpid(pid, &st, 0), pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the GPU child: status %d", st);
    struct sps_report rep;
    char err[512] = "";
    int rc = sps__report_rebuild_dir(&rep, dir, "test", err, sizeof err);
    CHECK_MSG(rc == 0, "rebuild %s: %s", dir, err);
    if (rc != 0)
        return;
    json_t *trace = export_and_load(&rep, dir, SPS_TRACE_DEFAULT_MAX_BYTES);
    sps__report_free(&rep);
    if (!trace)
        return;
    struct seen s;
    validate(trace, &s);
    CHECK_EQ_U(s.gpu, 3);
    long long ta = track_named(trace, "GPU stream 0xa000"), tb = track_named(trace, "GPU stream 0xb000"),
              td = track_named(trace, "GPU default stream");
    CHECK(ta >= 0 && tb >= 0 && td >= 0 && ta != tb && tb != td && ta != td);
    json_t *a = find_x(trace, "gpu", "fwd"), *b = find_x(trace, "gpu", "copy"), *d = find_x(trace, "gpu", "opt");
    CHECK(a && b && d);
    if (a && b && d) {
        CHECK_EQ_I(json_integer_value(json_object_get(a, "tid")), ta);
        CHECK_EQ_I(json_integer_value(json_object_get(b, "tid")), tb);
        CHECK_EQ_I(json_integer_value(json_object_get(d, "tid")), td);
        double a0 = json_number_value(json_object_get(a, "ts"));
        CHECK_NEAR(json_number_value(json_object_get(a, "dur")), 10000, 0.0005); /* us */
        CHECK_NEAR(json_number_value(json_object_get(b, "ts")) - a0, 5000, 0.0015);
        CHECK_NEAR(json_number_value(json_object_get(b, "dur")), 7000, 0.0005);
        CHECK_NEAR(json_number_value(json_object_get(d, "ts")) - a0, 12000, 0.0015);
        CHECK_NEAR(json_number_value(json_object_get(d, "dur")), 3000, 0.0005);
        /* the CPU zones are there too, on the thread's track */
        CHECK(find_x(trace, "zone", "fwd") != NULL);
    }
    json_decref(trace);
}

int main(void) {
    RUN_TEST(test_full_run);
    RUN_TEST(test_budget);
    RUN_TEST(test_without_records);
    RUN_TEST(test_overlapping_events);
    RUN_TEST(test_torch_memory_track);
    RUN_TEST(test_many_steps_named);
    RUN_TEST(test_write_failure);
    RUN_TEST(test_gpu_tracks);
    return check_report();
}
