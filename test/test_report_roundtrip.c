/*
 * test_report_roundtrip.c - model -> report.json -> model, on real runs:
 * the C example, a Python run with DataLoader workers, and a workload
 * killed by SIGKILL mid-run.
 *
 * For each run directory `stepscope run` wrote:
 *   1. report.json read back (sps__report_read) and written again must be
 *      the same text, byte for byte, section by section, for every
 *      top-level key;
 *   2. the model read must equal, field by field, the model built again
 *      from the run's records (what `stepscope run` built), exactly:
 *      report.json writes every double so that it reads back the same;
 *   3. the directory loaded (sps__report_load_dir) carries the records'
 *      events into the processes report.json lists.
 * Sections are listed in `sections` below; a top-level key the writer
 * adds must be listed there or in `read_elsewhere`, or the test fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "render/render.h"
#include "report/report.h"
#include "stepscope.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"

/* ------------------------------------------------------- the text half */

/* Top-level keys whose text must survive the round trip byte for byte.
 * (the machine half and the analysis included). */
static const char *const sections[] = {"schema",   "stepscope_version", "command",  "written_by", "rebuilt_from_records",
                                       "started_unix_s", "started_mono_ns", "trace_max_bytes", "exit",  "timing",
                                       "memory",   "recording", "zones",    "steps", "steps_recorded_by", "auto",
                                       "values",   "cuda",      "counters", "processes",
                                       "records_skipped", "ranks", "ranks_pooled", "metrics", "gpus", "gpus_unavailable_reason",
                                       "sensors",  "sources",   "series",   "overhead",
                                       "torch_profile", "merge", "analysis"};
/* Top-level keys read but not written back whole (none today). */
static const char *const read_elsewhere[] = {""};


/* The text of top-level key `key` (its line "  \"key\": ..." up to the next
 * top-level line); NULL if absent. */
static char *section_text(const char *doc, const char *key) {
    char head[128];
    snprintf(head, sizeof head, "\n  \"%s\":", key);
    const char *at = strstr(doc, head);
    if (!at)
        return NULL;
    at++;
    const char *end = at + 1;
    while ((end = strchr(end, '\n')) && !(end[1] == ' ' && end[2] == ' ' && end[3] == '"') && end[1] != '}')
        end++;
    size_t len = end ? (size_t)(end - at) : strlen(at);
    char *out = malloc(len + 1), *o = out;
    for (const char *line = at; line < at + len;) {
        const char *nl = memchr(line, '\n', (size_t)(at + len - line));
        size_t n = nl ? (size_t)(nl - line) + 1 : (size_t)(at + len - line);
        memcpy(o, line, n);
        o += n;
        line += n;
    }
    *o = '\0';
    return out;
}

/* Every top-level key of doc. */
static size_t top_keys(const char *doc, char keys[][64], size_t max) {
    size_t n = 0;
    for (const char *p = doc; (p = strstr(p, "\n  \"")) && n < max; p++) {
        const char *k = p + 4, *q = strchr(k, '"');
        if (q && (size_t)(q - k) < 64) {
            memcpy(keys[n], k, (size_t)(q - k));
            keys[n++][q - k] = '\0';
        }
    }
    return n;
}

static int listed(const char *key, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], key))
            return 1;
    return 0;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int same_text(const char *a, const char *b, size_t *at) {
    const char *p = a, *q = b;
    while (*p && *q) {
        if (*p != *q)
            break;
        p++, q++;
    }
    *at = (size_t)(p - a);
    return !*p && !*q;
}

/* report.json read and written again: the same text, section by section. */
static void check_text_round_trip(const char *dir, const struct sps_report *read) {
    char path[1200], again[1200], err[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    snprintf(again, sizeof again, "%s/report.again.json", dir);
    CHECK_MSG(sps__report_json_write(read, again, err, sizeof err) == 0, "write: %s", err);
    char *a = read_whole(path, NULL), *b = read_whole(again, NULL);
    CHECK(a && b);
    if (!a || !b) {
        free(a);
        free(b);
        return;
    }
    static char keys[64][64];
    size_t nkeys = top_keys(a, keys, 64);
    CHECK(nkeys > 10);
    for (size_t i = 0; i < nkeys; i++) {
        CHECK_MSG(listed(keys[i], sections, NELEM(sections)) || listed(keys[i], read_elsewhere, NELEM(read_elsewhere)),
                  "%s: top-level key \"%s\" is neither read back here nor by the machine/analysis readers", dir,
                  keys[i]);
        if (!listed(keys[i], sections, NELEM(sections)))
            continue;
        char *sa = section_text(a, keys[i]), *sb = section_text(b, keys[i]);
        size_t k = 0;
        int same = sa && sb && same_text(sa, sb, &k);
        if (!same && sa && sb) { /* say where */
            size_t from = k > 80 ? k - 80 : 0;
            CHECK_MSG(0, "%s: section \"%s\" differs after %zu bytes:\n--- written\n%.160s\n--- read and written again\n%.160s",
                      dir, keys[i], k, sa + from, sb + from);
        } else {
            CHECK_MSG(same, "%s: section \"%s\" missing after the round trip", dir, keys[i]);
        }
        free(sa);
        free(sb);
    }
    free(a);
    free(b);
    unlink(again);
}

/* ------------------------------------------------------ the model half */

/* report.json writes doubles exactly: the same bits come back. */
static int same_num(double a, double b) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b;
}

/* Times relative to the run's start in seconds, written exactly: the
 * same ns come back (for runs shorter than 2^52 ns, about 52 days). */
static int same_ns(uint64_t a, uint64_t b) {
    return a == b;
}

#define SAME_U(what, a, b) CHECK_MSG((a) == (b), "%s: %s: built %llu, read %llu", ctx, what, (unsigned long long)(a), (unsigned long long)(b))
#define SAME_I(what, a, b) CHECK_MSG((a) == (b), "%s: %s: built %lld, read %lld", ctx, what, (long long)(a), (long long)(b))
#define SAME_D(what, a, b) CHECK_MSG(same_num(a, b), "%s: %s: built %.17g, read %.17g", ctx, what, (double)(a), (double)(b))
#define SAME_NS(what, a, b) CHECK_MSG(same_ns(a, b), "%s: %s: built %llu, read %llu", ctx, what, (unsigned long long)(a), (unsigned long long)(b))
#define SAME_S(what, a, b) CHECK_MSG(!strcmp((a) ? (a) : "", (b) ? (b) : ""), "%s: %s: built \"%s\", read \"%s\"", ctx, what, (a) ? (a) : "(null)", (b) ? (b) : "(null)")

static void compare_names(const char *ctx, const struct sps_run *b, const struct sps_run *r) {
    SAME_U("nnames", b->nnames, r->nnames);
    for (size_t i = 0; i < b->nnames && i < r->nnames; i++) {
        const struct sps_name_summary *x = &b->names[i], *y = &r->names[i];
        SAME_S("names[].name", x->name, y->name);
        SAME_U("names[].kind", x->kind, y->kind);
        SAME_U("names[].agg.count", x->agg.count, y->agg.count);
        if (sps_kind_is_timed(x->kind)) {
            const double *sx = &x->stats.total_s, *sy = &y->stats.total_s; /* total_s .. p99_s */
            SAME_U("names[].stats.count", x->stats.count, y->stats.count);
            for (int k = 0; k < 9; k++)
                SAME_D("names[].stats", sx[k], sy[k]);
        } else if (x->kind == SPS_KIND_VALUE) {
            SAME_D("value mean", x->stats.mean_s, y->stats.mean_s);
            SAME_D("value std", x->stats.std_s, y->stats.std_s);
            SAME_D("value min", x->agg.min, y->agg.min);
            SAME_D("value max", x->agg.max, y->agg.max);
            SAME_D("value first", x->agg.first, y->agg.first);
            SAME_D("value last", x->agg.last, y->agg.last);
        } else {
            SAME_U("counter total", x->agg.total_ns, y->agg.total_ns);
        }
    }
}

static void compare_steps(const char *ctx, const struct sps_run *b, const struct sps_run *r) {
    SAME_U("steps_recorded", b->steps_recorded, r->steps_recorded);
    SAME_U("nsteps", b->nsteps, r->nsteps);
    SAME_U("warmup_steps", b->warmup_steps, r->warmup_steps);
    size_t bad = 0;
    for (size_t i = 0; i < b->nsteps && i < r->nsteps && bad < 5; i++) {
        const struct sps_step_row *x = &b->steps[i], *y = &r->steps[i];
        int before = check_failures;
        SAME_U("row.index", x->index, y->index);
        SAME_U("row.process", x->process, y->process);
        SAME_I("row.tid", x->tid, y->tid);
        SAME_I("row.name", x->name, y->name);
        SAME_NS("row.start_ns", x->start_ns, y->start_ns);
        SAME_NS("row.end_ns", x->end_ns, y->end_ns);
        SAME_U("row.microsteps", x->microsteps, y->microsteps);
        SAME_I("row.warmup", x->warmup, y->warmup);
        for (size_t k = 0; k < b->nnames && k < r->nnames; k++)
            SAME_D(b->names[k].name, x->by_name[k], y->by_name[k]);
        bad += check_failures != before;
    }
}

static void compare_thread(const char *ctx, const struct sps_process_data *pb, const struct sps_thread_data *x,
                           const struct sps_process_data *pr, const struct sps_thread_data *y) {
    SAME_I("thread.tid", x->tid, y->tid);
    SAME_S("thread.name", x->name, y->name);
    SAME_I("thread.exited", x->exited, y->exited);
    SAME_U("thread.reuses", x->reuses, y->reuses);
    for (int k = 0; k < SPS_RING_COUNT; k++) {
        SAME_U("thread.offered", x->offered[k], y->offered[k]);
        SAME_U("thread.dropped", x->dropped[k], y->dropped[k]);
    }
    SAME_U("thread.mismatched_ends", x->mismatched_ends, y->mismatched_ends);
    SAME_U("thread.depth_overflows", x->depth_overflows, y->depth_overflows);
    SAME_U("thread.zones_thinned", x->zones_thinned, y->zones_thinned);
    SAME_U("thread.nopen", x->nopen, y->nopen);
    for (uint32_t k = 0; k < x->nopen && k < y->nopen; k++) {
        SAME_S("open zone", pb->names[x->open[k].name - 1].name, pr->names[y->open[k].name - 1].name);
        SAME_U("open zone kind", x->open[k].kind, y->open[k].kind);
        SAME_NS("open zone start", x->open[k].start_ns, y->open[k].start_ns);
    }
}

static void compare_processes(const char *ctx, const struct sps_run *b, const struct sps_run *r) {
    SAME_U("nprocs", b->nprocs, r->nprocs);
    for (size_t i = 0; i < b->nprocs && i < r->nprocs; i++) {
        const struct sps_process_data *x = &b->procs[i], *y = &r->procs[i];
        SAME_I("pid", x->pid, y->pid);
        SAME_I("ppid", x->ppid, y->ppid);
        SAME_I("rank", x->rank, y->rank);
        SAME_I("local_rank", x->local_rank, y->local_rank);
        SAME_I("world_size", x->world_size, y->world_size);
        SAME_S("hostname", x->hostname, y->hostname);
        SAME_I("argc", x->argc, y->argc);
        for (int k = 0; k < x->argc && k < y->argc; k++)
            SAME_S("argv", x->argv[k], y->argv[k]);
        SAME_S("path", x->path, y->path);
        SAME_I("closed", x->closed, y->closed);
        SAME_NS("start_ns", x->start_ns, y->start_ns);
        SAME_U("clock_source", x->clock_source, y->clock_source);
        SAME_D("ticks_per_second", x->ticks_per_second, y->ticks_per_second);
        SAME_U("ring_policy", x->ring_policy, y->ring_policy);
        for (int k = 0; k < SPS_RING_COUNT; k++)
            SAME_U("ring_cap", x->ring_cap[k], y->ring_cap[k]);
        SAME_U("threads_refused", x->threads_refused, y->threads_refused);
        SAME_U("names_refused", x->names_refused, y->names_refused);
        SAME_S("problem", x->problem, y->problem);
        SAME_U("thin_level", x->thin_level, y->thin_level);
        SAME_NS("thin_since_ns", x->thin_since_ns, y->thin_since_ns);
        SAME_U("zones_thinned", x->zones_thinned, y->zones_thinned);
        SAME_U("cuda_state", x->cuda_state, y->cuda_state);
        SAME_I("cuda_driver_version", x->cuda_driver_version, y->cuda_driver_version);
        SAME_S("cuda_reason", x->cuda_reason, y->cuda_reason);
        SAME_U("py_auto", x->py_auto, y->py_auto);
        SAME_U("py_instrument", x->py_instrument, y->py_instrument);
        SAME_S("py_auto_reason", x->py_auto_reason, y->py_auto_reason);
        SAME_U("cuda_resolved", x->cuda_resolved, y->cuda_resolved);
        SAME_U("cuda_cpu_only", x->cuda_cpu_only, y->cuda_cpu_only);
        SAME_U("cuda_dropped", x->cuda_dropped, y->cuda_dropped);
        SAME_U("cuda_unresolved", x->cuda_unresolved, y->cuda_unresolved);
        SAME_U("nthreads", x->nthreads, y->nthreads);
        for (uint32_t t = 0; t < x->nthreads && t < y->nthreads; t++)
            compare_thread(ctx, x, &x->threads[t], y, &y->threads[t]);
    }
    SAME_U("nskipped", b->nskipped, r->nskipped);
    for (size_t i = 0; i < b->nskipped && i < r->nskipped; i++) {
        SAME_S("skipped.path", b->skipped[i].path, r->skipped[i].path);
        SAME_S("skipped.error", b->skipped[i].error, r->skipped[i].error);
    }
}

/* The run half: one comparator a section; the machine half and the
 * analysis add theirs beside these. */
static void compare_run(const char *ctx, const struct sps_run *b, const struct sps_run *r) {
    SAME_U("start_ns", b->start_ns, r->start_ns);
    SAME_U("events_recorded", b->events_recorded, r->events_recorded);
    SAME_U("events_dropped", b->events_dropped, r->events_dropped);
    compare_names(ctx, b, r);
    compare_steps(ctx, b, r);
    compare_processes(ctx, b, r);
}

/*
 * The model `stepscope run` built for dir, built again from its records
 * (the same records, closed, give the same run) with the facts only the
 * watcher knew taken from the report read.
 */
static int build_again(const char *dir, const struct sps_report *read, struct sps_report *built) {
    char records[1200], err[512];
    snprintf(records, sizeof records, "%s/records", dir);
    struct sps_run run = {0};
    int rc = sps__run_load_dir(&run, records, err, sizeof err);
    if (rc == 0)
        rc = sps__run_build(&run);
    CHECK_MSG(rc == 0, "%s: %s", records, err);
    if (rc) {
        sps__run_free(&run);
        return rc;
    }
    run.start_ns = read->run.start_ns; /* stepscope run's origin: when it started the command */
    struct sps_run_info info = read->info;
    info.sampler = NULL;
    rc = sps__report_build(built, &run, &info);
    CHECK_EQ_I(rc, 0);
    return rc;
}

/* The directory loaded: report.json's model with the records' events. */
static void check_events_attached(const char *dir, const struct sps_report *built) {
    struct sps_report loaded;
    char err[1024];
    int rc = sps__report_load_dir(&loaded, dir, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK(loaded.have_records && loaded.have_events);
    CHECK_MSG(!loaded.records_note[0], "records_note: %s", loaded.records_note);
    const struct sps_run *b = &built->run, *l = &loaded.run;
    size_t events = 0;
    for (size_t i = 0; i < b->nprocs && i < l->nprocs; i++) {
        const struct sps_process_data *x = &b->procs[i], *y = &l->procs[i];
        CHECK_EQ_U(y->nnames, x->nnames);
        for (uint32_t t = 0; t < x->nthreads && t < y->nthreads; t++)
            for (int r = 0; r < SPS_RING_COUNT; r++) {
                CHECK_EQ_U(y->threads[t].nevents[r], x->threads[t].nevents[r]);
                events += y->threads[t].nevents[r];
                /* the events' names are the record's */
                for (size_t e = 0; e < y->threads[t].nevents[r] && e < 3; e++) {
                    uint32_t id = y->threads[t].events[r][e].name;
                    CHECK(id >= 1 && id <= y->nnames);
                    if (id >= 1 && id <= y->nnames)
                        CHECK(!strcmp(y->names[id - 1].name, x->names[id - 1].name));
                }
            }
        CHECK_EQ_I(y->end_ns, x->end_ns);
    }
    CHECK(events > 0);
    /* the analysis is read, not computed from the events again: the
     * model's run is report.json's */
    compare_run(dir, b, l);
    sps__report_free(&loaded);
}

/* The whole round trip on one run directory. */
static void round_trip(const char *dir) {
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    struct sps_report read;
    int rc = sps__report_read(&read, path, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK(!read.have_events);
    check_text_round_trip(dir, &read);
    struct sps_report built;
    if (build_again(dir, &read, &built) == 0) {
        compare_run(dir, &built.run, &read.run);
        check_events_attached(dir, &built);
        sps__report_free(&built);
    }
    sps__report_free(&read);
}

/* `stepscope run -q -o DIR -- argv...`; returns DIR. */
static const char *run_under(const char *tag, char *const *cmd, int want_exit) {
    static char out[700];
    snprintf(out, sizeof out, "%s/out", tmpdir_new(tag));
    char *argv[32] = {STEPSCOPE, "run", "-q", "-o", out, "--"};
    size_t n = 6;
    for (size_t i = 0; cmd[i] && n < 31; i++)
        argv[n++] = cmd[i];
    argv[n] = NULL;
    char err[4096];
    CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == want_exit, "%s: %s", tag, err);
    return out;
}

static void test_c_example(void) {
    char *cmd[] = {SPS_BIN_DIR "/tiny_train", "--steps", "120", "--print-every", "0", NULL};
    const char *dir = run_under("roundtrip-c", cmd, 0);
    round_trip(dir);
    struct sps_report r;
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    if (sps__report_read(&r, path, err, sizeof err) == 0) {
        /* facts only report.json holds */
        CHECK(r.info.have_exit && r.info.exit_code == 0 && !r.info.exit_signal);
        CHECK(r.info.argc == 5 && !strcmp(r.info.argv[2], "120"));
        CHECK(r.info.have_times && r.info.wall_s > 0);
        CHECK(r.info.have_rss && r.info.peak_rss_bytes > 0);
        CHECK(r.info.start_realtime_ns > 1600000000LL * 1000000000LL);
        CHECK(r.run.nsteps == 120 && r.run.steps_recorded == 120);
        sps__report_free(&r);
    }
}

static void test_killed_run(void) {
    char *cmd[] = {SPS_BIN_DIR "/test_workload", "--steps", "40", "--micro", "2", "--die-at", "25", NULL};
    const char *dir = run_under("roundtrip-killed", cmd, 128 + 9);
    round_trip(dir);
    struct sps_report r;
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    if (sps__report_read(&r, path, err, sizeof err) == 0) {
        CHECK_EQ_I(r.info.exit_signal, 9);
        CHECK_EQ_U(r.run.nprocs, 1);
        if (r.run.nprocs == 1) {
            CHECK(!r.run.procs[0].closed);
            /* killed inside step 25's zone b: both still open */
            CHECK_EQ_U(r.run.procs[0].threads[0].nopen, 2);
        }
        sps__report_free(&r);
    }
}

/* A DataLoader whose 2 workers record zones of their own: 3 records. */
static const char train_py[] =
    "import torch, stepscope\n"
    "from torch.utils.data import DataLoader, Dataset\n"
    "class Squares(Dataset):\n"
    "    def __len__(self):\n"
    "        return 32\n"
    "    def __getitem__(self, i):\n"
    "        with stepscope.zone('getitem'):\n"
    "            return torch.tensor([float(i * i)])\n"
    "if __name__ == '__main__':\n"
    "    loader = DataLoader(Squares(), batch_size=4, num_workers=2, multiprocessing_context='fork')\n"
    "    for batch in loader:\n"
    "        with stepscope.step():\n"
    "            with stepscope.zone('train'):\n"
    "                total = float(batch.sum())\n"
    "            stepscope.record('batch_sum', total)\n"
    "            stepscope.count('items', 4)\n";

static void test_python_workers(void) {
    struct stat sb;
    if (stat(SPS_BIN_DIR "/python/stepscope/_stepscope.abi3.so", &sb) != 0) {
        fprintf(stderr, "SKIP test_python_workers: no Python module in this build (a sanitizer build makes none)\n");
        return;
    }
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP test_python_workers: /usr/bin/python3 has no torch\n");
        return;
    }
    setenv("PYTHONPATH", SPS_BIN_DIR "/python", 1);
    char script[700];
    snprintf(script, sizeof script, "%s/train.py", tmpdir_new("roundtrip-pyscript"));
    write_file(script, train_py, strlen(train_py));
    char *cmd[] = {"/usr/bin/python3", script, NULL};
    const char *dir = run_under("roundtrip-py", cmd, 0);
    round_trip(dir);
    struct sps_report r;
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    if (sps__report_read(&r, path, err, sizeof err) == 0) {
        CHECK_MSG(r.run.nprocs == 3, "the trainer and its 2 workers: %zu processes", r.run.nprocs);
        CHECK_EQ_U(r.run.nsteps, 8);
        long v = sps__run_find(&r.run, "batch_sum", SPS_KIND_VALUE);
        CHECK(v >= 0 && r.run.names[v].agg.count == 8);
        sps__report_free(&r);
    }
}

/*
 * A model made by hand with every field the run half carries set to a
 * value of its own (real runs leave many at 0: mismatched ends, refused
 * threads, CUDA counts...), written and read back.
 */
static void test_every_field(void) {
    static struct sps_name_summary names[6];
    static const struct {
        const char *name;
        uint32_t kind;
    } made[] = {{"step", SPS_KIND_STEP}, {"micro", SPS_KIND_MICROSTEP}, {"a", SPS_KIND_ZONE},
                {"loss", SPS_KIND_VALUE}, {"unset", SPS_KIND_VALUE}, {"samples", SPS_KIND_COUNTER}};
    for (int i = 0; i < 6; i++) {
        snprintf(names[i].name, sizeof names[i].name, "%s", made[i].name);
        names[i].kind = names[i].agg.kind = made[i].kind;
    }
    for (int i = 0; i < 2; i++) { /* a step and a micro-step that completed */
        double *st = &names[i].stats.total_s;
        for (int k = 0; k < 9; k++)
            st[k] = 0.001 * (i + 1) * (k + 1) + 1e-7 * k;
        names[i].stats.count = names[i].agg.count = 3 + (uint64_t)i;
    }
    /* names[2]: a zone that never completed (null statistics) */
    names[3].agg.count = names[3].stats.count = 3;
    names[3].stats.mean_s = 0.25;
    names[3].stats.std_s = 1.5e-9; /* far below the mean: lost if rebuilt from sums */
    names[3].agg.min = 0.2, names[3].agg.max = 0.3, names[3].agg.first = 0.3, names[3].agg.last = 0.2;
    names[4].stats.mean_s = names[4].stats.std_s = NAN;
    names[4].agg.min = names[4].agg.max = names[4].agg.first = names[4].agg.last = NAN;
    names[5].agg.count = 4, names[5].agg.total_ns = 18446744073709551000ull;

    const uint64_t t0 = 987654321012345ull;
    static double cells[3][6];
    static struct sps_step_row rows[3];
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 6; k++)
            cells[r][k] = NAN;
        rows[r] = (struct sps_step_row){.index = (uint64_t)r * 7, .process = (size_t)(r == 1), .tid = r == 1 ? 201 : 101,
                                        .name = r == 2 ? -1 : 0, .start_ns = t0 + 1000 + (uint64_t)r * 123456789,
                                        .end_ns = t0 + 1000 + (uint64_t)r * 123456789 + 98765, .microsteps = r == 0 ? 2u : 0u,
                                        .warmup = r == 0, .by_name = cells[r]};
    }
    cells[0][2] = 0.5, cells[0][3] = -1e-300, cells[0][5] = 64;
    cells[1][3] = 42;

    static struct sps_thread_data threads0[2], threads1[1];
    threads0[0] = (struct sps_thread_data){.tid = 101, .exited = 1, .reuses = 2, .offered = {10, 11, 12},
                                           .dropped = {1, 2, 3}, .mismatched_ends = 5, .depth_overflows = 6,
                                           .zones_thinned = 8, .nopen = 2};
    snprintf(threads0[0].name, sizeof threads0[0].name, "main");
    threads0[0].open[0] = (struct sps_open_zone){1, SPS_KIND_STEP, t0 + 500};
    threads0[0].open[1] = (struct sps_open_zone){2, SPS_KIND_ZONE, t0 + 700};
    threads0[1] = (struct sps_thread_data){.tid = 102};
    threads1[0] = (struct sps_thread_data){.tid = 201, .offered = {1, 0, 0}};
    static struct sps_name_info pnames[2] = {{.kind = SPS_KIND_STEP, .name = "step"}, {.kind = SPS_KIND_ZONE, .name = "a"}};
    static char *argv0[] = {"python", "train.py", "--lr", "3 e", NULL}, *argv1[] = {"worker", NULL};
    static struct sps_process_data procs[2];
    procs[0] = (struct sps_process_data){.path = "/r/records/100-0.sps", .pid = 100, .ppid = 1, .rank = 0, .local_rank = 0,
                                         .world_size = 2, .argc = 4, .argv = argv0, .clock_source = SPS_CLOCK_TSC,
                                         .ticks_per_second = 2899999999.5, .ring_policy = SPS_POLICY_KEEP_FIRST,
                                         .ring_cap = {65536, 4096, 8192}, .start_ns = t0 + 10, .closed = 1,
                                         .threads_refused = 3, .names_refused = 4, .thin_level = SPS_THIN_PHASES,
                                         .thin_since_ns = t0 + 5000000000ull, .zones_thinned = 9,
                                         .cuda_state = SPS_REC_CUDA_AVAILABLE, .cuda_driver_version = 12040,
                                         .cuda_resolved = 1, .cuda_cpu_only = 2, .cuda_dropped = 3, .cuda_unresolved = 4,
                                         .nnames = 2, .names = pnames, .nthreads = 2, .threads = threads0};
    snprintf(procs[0].hostname, sizeof procs[0].hostname, "node-1");
    snprintf(procs[0].problem, sizeof procs[0].problem, "the name table is full (\"quoted\")");
    procs[1] = (struct sps_process_data){.path = "/r/records/101-0.sps", .pid = 101, .ppid = 100, .rank = -1,
                                         .local_rank = -1, .world_size = -1, .argc = 1, .argv = argv1,
                                         .clock_source = SPS_CLOCK_MONOTONIC, .ticks_per_second = 1e9,
                                         .ring_policy = SPS_POLICY_KEEP_LATEST, .ring_cap = {1, 2, 3},
                                         .start_ns = t0 + 20, .cuda_state = SPS_REC_CUDA_UNAVAILABLE,
                                         .nthreads = 1, .threads = threads1};
    snprintf(procs[1].cuda_reason, sizeof procs[1].cuda_reason, "libcuda.so.1: not found");
    /* auto-instrumentation active in one process, stood aside in the other */
    procs[0].py_auto = SPS_REC_PY_AUTO_ACTIVE;
    procs[1].py_auto = SPS_REC_PY_AUTO_STOOD_ASIDE;
    procs[1].py_instrument = 1;
    snprintf(procs[1].py_auto_reason, sizeof procs[1].py_auto_reason, "the script calls stepscope.step()");
    /* a merged run: the reference host's process, and one measured at
     * start, not at the end, aligned by a rank of its host */
    procs[0].align = (struct sps_align){.method = SPS_ALIGN_REFERENCE, .source_rank = -1};
    procs[1].clock_sync[0] = (struct sps_clock_sync){SPS_REC_SYNC_MEASURED, 16, -250000123, 61234, 0};
    procs[1].clock_sync[1].state = SPS_REC_SYNC_FAILED;
    snprintf(procs[1].clock_sync_reason, sizeof procs[1].clock_sync_reason, "exchange failed: \"timeout\"");
    procs[1].align = (struct sps_align){.method = SPS_ALIGN_MEASURED, .source_rank = 3, .at0_ns = 5,
                                        .off0_ns = -250000123, .at1_ns = 99, .off1_ns = INT64_MIN + 1,
                                        .error_ns = 61234};
    static char *inputs[] = {"runs/node0", "runs/\"node1\""};
    static struct sps_skipped skipped[1] = {{"/r/records/9-0.sps", "offset 24: truncated"}};

    struct sps_report rep;
    memset(&rep, 0, sizeof rep);
    rep.run = (struct sps_run){.nprocs = 2, .procs = procs, .nskipped = 1, .skipped = skipped, .nnames = 6,
                               .names = names, .nsteps = 3, .steps = rows, .steps_recorded = 9, .warmup_steps = 1,
                               .start_ns = t0, .events_recorded = 77, .events_dropped = 6,
                               .merge = {.ninputs = 2, .inputs = inputs, .reference_host = "node-1",
                                         .reference_rank = 0, .tolerance_ns = 1000000, .forced = 1,
                                         .forced_why = "rank 3 on host node-2: clock offset error 0.06 ms"}};
    static char *cmd[] = {"stepscope-test", "--x", NULL};
    rep.info = (struct sps_run_info){.argc = 2, .argv = cmd, .have_exit = 1, .exit_signal = 9, .core_dumped = 1,
                                     .have_times = 1, .wall_s = 12.5, .user_s = 3.25, .sys_s = 0.125, .have_rss = 1,
                                     .peak_rss_bytes = 123456789, .rss_scope = "a scope of its own",
                                     .start_realtime_ns = 1795240121034010000LL, .start_mono_ns = t0,
                                     .standalone_reason = "written by the library itself",
                                     .auto_inject = SPS_AUTO_INJECT_ON};
    const char *dir = tmpdir_new("roundtrip-fields");
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    CHECK_MSG(sps__report_json_write(&rep, path, err, sizeof err) == 0, "%s", err);
    struct sps_report read;
    int rc = sps__report_read(&read, path, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    compare_run("every field", &rep.run, &read.run);
    const char *ctx = "every field";
    /* the clock facts (their text is compared below too) */
    SAME_U("merge.ninputs", rep.run.merge.ninputs, read.run.merge.ninputs);
    for (size_t i = 0; i < rep.run.merge.ninputs && i < read.run.merge.ninputs; i++)
        SAME_S("merge.inputs", rep.run.merge.inputs[i], read.run.merge.inputs[i]);
    SAME_S("merge.reference_host", rep.run.merge.reference_host, read.run.merge.reference_host);
    SAME_I("merge.forced", rep.run.merge.forced, read.run.merge.forced);
    SAME_U("merge.tolerance_ns", rep.run.merge.tolerance_ns, read.run.merge.tolerance_ns);
    for (size_t pi = 0; pi < 2 && read.run.nprocs == 2; pi++) {
        const struct sps_process_data *a = &procs[pi], *b = &read.run.procs[pi];
        SAME_U("clock_sync[0].state", a->clock_sync[0].state, b->clock_sync[0].state);
        SAME_U("clock_sync[1].state", a->clock_sync[1].state, b->clock_sync[1].state);
        SAME_I("clock_sync[0].offset_ns", a->clock_sync[0].offset_ns, b->clock_sync[0].offset_ns);
        SAME_U("clock_sync[0].error_ns", a->clock_sync[0].error_ns, b->clock_sync[0].error_ns);
        SAME_S("clock_sync_reason", a->clock_sync_reason, b->clock_sync_reason);
        SAME_U("align.method", a->align.method, b->align.method);
        SAME_I("align.source_rank", a->align.source_rank, b->align.source_rank);
        SAME_I("align.off1_ns", a->align.off1_ns, b->align.off1_ns);
        SAME_I("align.at1_ns", a->align.at1_ns, b->align.at1_ns);
        SAME_U("align.error_ns", a->align.error_ns, b->align.error_ns);
    }
    const struct sps_run_info *x = &rep.info, *y = &read.info;
    SAME_I("argc", x->argc, y->argc);
    for (int i = 0; i < x->argc && i < y->argc; i++)
        SAME_S("argv", x->argv[i], y->argv[i]);
    SAME_I("have_exit", x->have_exit, y->have_exit);
    SAME_I("exit_signal", x->exit_signal, y->exit_signal);
    SAME_I("core_dumped", x->core_dumped, y->core_dumped);
    SAME_I("have_times", x->have_times, y->have_times);
    SAME_D("wall_s", x->wall_s, y->wall_s);
    SAME_D("user_s", x->user_s, y->user_s);
    SAME_D("sys_s", x->sys_s, y->sys_s);
    SAME_I("have_rss", x->have_rss, y->have_rss);
    SAME_U("peak_rss_bytes", x->peak_rss_bytes, y->peak_rss_bytes);
    SAME_S("rss_scope", x->rss_scope, y->rss_scope);
    CHECK(llabs(x->start_realtime_ns - y->start_realtime_ns) < 20000); /* 15 digits of seconds since 1970 */
    SAME_U("start_mono_ns", x->start_mono_ns, y->start_mono_ns);
    SAME_S("standalone_reason", x->standalone_reason, y->standalone_reason);
    SAME_I("auto_inject", x->auto_inject, y->auto_inject);
    check_text_round_trip(dir, &read);
    sps__report_free(&read);
}

/* Bad input: one line naming the file, and where. */
static void test_bad_report(void) {
    const char *dir = tmpdir_new("roundtrip-bad");
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    struct sps_report r;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\n  \"schema\": \"stepscope.report/1\",\n  \"zones\": [1, 2,,]\n}\n", ":3:"},
        {"{\"schema\": \"something.else/7\"}", "schema is \"something.else/7\""},
        {"{\"steps\": {}}", "schema is missing"},
        {"{\"schema\": \"stepscope.report/1\", \"steps\": {\"count\": -3}}", ":1:"},
        {"{\"schema\": \"stepscope.report/1\", \"exit\": {\"code\": \"0\"}}", "\"exit.code\": an integer or null expected"},
        {"{\"schema\": \"stepscope.report/1\"} x", "end of file expected"},
        /* past 2^62 ns (146 years of uptime) a start time only overflows
         * the trace's arithmetic: refused, naming the key and the value */
        {"{\"schema\": \"stepscope.report/1\", \"started_mono_ns\": 18446744073709551615}",
         "\"started_mono_ns\": 18446744073709551615 is out of range"},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        write_file(path, cases[i].text, strlen(cases[i].text));
        int rc = sps__report_read(&r, path, err, sizeof err);
        CHECK_MSG(rc == SPS_EFORMAT, "case %zu: rc %d", i, rc);
        CHECK_STR_HAS(err, path);
        CHECK_STR_HAS(err, cases[i].want);
        CHECK(!strchr(err, '\n'));
    }
    /* a good one with what a later stepscope may add */
    const char *later = "{\"schema\": \"stepscope.report/1\", \"new_key\": {\"a\": [1]}, \"started_mono_ns\": 4611686018427387904}";
    write_file(path, later, strlen(later));
    CHECK_EQ_I(sps__report_read(&r, path, err, sizeof err), 0);
    CHECK_EQ_U(r.run.start_ns, (uint64_t)1 << 62); /* the largest accepted */
    sps__report_free(&r);
    /* a row of a process processes[] does not list: it gets one */
    const char *cut = "{\"schema\": \"stepscope.report/1\", \"steps\": {\"rows\": [{\"pid\": 7, \"rank\": 2}]}}";
    write_file(path, cut, strlen(cut));
    CHECK_EQ_I(sps__report_read(&r, path, err, sizeof err), 0);
    CHECK(r.run.nprocs == 1 && r.run.nsteps == 1 && r.run.steps[0].process == 0);
    if (r.run.nprocs == 1)
        CHECK(r.run.procs[0].pid == 7 && r.run.procs[0].rank == 2 && r.run.procs[0].path);
    sps__report_free(&r);
    /* the directory's errors */
    CHECK_EQ_I(sps__report_load_dir(&r, "/nonexistent/run", err, sizeof err), SPS_EIO);
    CHECK_STR_HAS(err, "/nonexistent/run");
    unlink(path);
    CHECK_EQ_I(sps__report_load_dir(&r, dir, err, sizeof err), SPS_EIO);
    CHECK_STR_HAS(err, "a run directory?");
}

int main(void) {
    RUN_TEST(test_bad_report);
    RUN_TEST(test_every_field);
    RUN_TEST(test_c_example);
    RUN_TEST(test_killed_run);
    RUN_TEST(test_python_workers);
    return check_report();
}
