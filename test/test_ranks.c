/*
 * test_ranks.c - the run rank by rank (src/model/ranks.c) from a
 * hand-built Run of three ranks (one with a DataLoader worker, one on
 * another host without steps) and a process of no rank, every figure
 * checked against its known value; report.json's "ranks" written, read
 * back (the same model, the same text) and, when a report.json has none,
 * built from its rows; the summary's per-rank table.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/ranks.h"
#include "render/exporters.h"
#include "render/render.h"
#include "report/report.h"
#include "stepscope.h"
#include "support.h"

#define S(x) ((uint64_t)llround((x) * 1e9)) /* seconds to ns */
#define EXACT 1e-12

enum { STEP, FORWARD, BACKWARD, ALLREDUCE, EVAL, NNAMES };
static struct sps_name_summary names[NNAMES];
static struct sps_process_data procs[5];
static struct sps_step_row rows[16];
static double cells[16][NNAMES];
static size_t nrows;
static double clock_s;

/* One step row: process, duration, warm-up, then forward, backward and
 * all-reduce seconds inside it (NAN: not in the step). */
static void row(size_t process, long name, double dur, int warmup, double fwd, double bwd, double wait) {
    struct sps_step_row *r = &rows[nrows];
    memset(r, 0, sizeof *r);
    r->process = process;
    r->tid = procs[process].pid;
    for (size_t i = 0; i < nrows; i++) /* its ordinal on its thread */
        r->index += rows[i].process == process && rows[i].name == name;
    r->name = name;
    r->start_ns = S(clock_s);
    r->end_ns = S(clock_s + dur);
    clock_s += dur;
    r->warmup = warmup;
    r->by_name = cells[nrows];
    for (int k = 0; k < NNAMES; k++)
        cells[nrows][k] = NAN;
    cells[nrows][FORWARD] = fwd;
    cells[nrows][BACKWARD] = bwd;
    cells[nrows][ALLREDUCE] = wait;
    nrows++;
}

static void proc(size_t i, int pid, int ppid, int rank, int world, const char *host) {
    memset(&procs[i], 0, sizeof procs[i]);
    procs[i].pid = pid;
    procs[i].ppid = ppid;
    procs[i].rank = rank;
    procs[i].local_rank = rank < 0 ? -1 : rank % 2;
    procs[i].world_size = world;
    snprintf(procs[i].hostname, sizeof procs[i].hostname, "%s", host);
}

/*
 * rank 0 on host a: pid 100 and its worker 102 (no RANK of its own); four
 *   steps of 1.0 (warm-up), 0.1, 0.2, 0.3 s; forward 0.01-0.04; backward
 *   in the last three (0.05-0.07); all-reduce 0.001-0.003 in the first
 *   three; and one "eval" step (not the main step name).
 * rank 1 on host a: pid 101; steps 0.5, 0.4, 0.6; forward 0.1 each, no
 *   backward; all-reduce 0.2, 0.2, 0.3.
 * rank 2 on host b: pid 200, no steps.
 * pid 300 on host a: no rank (the launcher), two 9 s steps: no rank's.
 */
static struct sps_run three_ranks(void) {
    static const struct {
        const char *name;
        uint32_t kind;
    } made[NNAMES] = {{"step", SPS_KIND_STEP},
                      {"forward", SPS_KIND_ZONE},
                      {"backward", SPS_KIND_ZONE},
                      {"allreduce", SPS_KIND_WAIT},
                      {"eval", SPS_KIND_STEP}};
    memset(names, 0, sizeof names);
    for (int i = 0; i < NNAMES; i++) {
        snprintf(names[i].name, sizeof names[i].name, "%s", made[i].name);
        names[i].kind = names[i].agg.kind = made[i].kind;
    }
    proc(0, 100, 1, 0, 3, "a");
    proc(1, 101, 1, 1, 3, "a");
    proc(2, 102, 100, -1, -1, "a");
    proc(3, 200, 1, 2, 3, "b");
    proc(4, 300, 1, -1, -1, "a");
    nrows = 0;
    clock_s = 1;
    row(0, STEP, 1.0, 1, 0.01, NAN, 0.001);
    row(0, STEP, 0.1, 0, 0.02, 0.05, 0.002);
    row(0, STEP, 0.2, 0, 0.03, 0.06, 0.003);
    row(0, STEP, 0.3, 0, 0.04, 0.07, NAN);
    row(0, EVAL, 2.0, 0, NAN, NAN, NAN);
    row(1, STEP, 0.5, 0, 0.1, NAN, 0.2);
    row(1, STEP, 0.4, 0, 0.1, NAN, 0.2);
    row(1, STEP, 0.6, 0, 0.1, NAN, 0.3);
    row(4, STEP, 9.0, 0, NAN, NAN, NAN);
    row(4, STEP, 9.0, 0, NAN, NAN, NAN);
    struct sps_run run;
    memset(&run, 0, sizeof run);
    run.procs = procs;
    run.nprocs = 5;
    run.names = names;
    run.nnames = NNAMES;
    run.steps = rows;
    run.nsteps = nrows;
    run.steps_recorded = nrows;
    run.warmup_steps = 1;
    run.start_ns = S(1);
    return run;
}

static const struct sps_rank_phase *phase(const struct sps_rank_view *v, const char *name) {
    for (size_t i = 0; i < v->nphases; i++)
        if (!strcmp(v->phases[i].name, name))
            return &v->phases[i];
    return NULL;
}

static void check_phase(const struct sps_rank_view *v, const char *name, double median, double total) {
    const struct sps_rank_phase *ph = phase(v, name);
    CHECK_MSG(ph, "rank %d has phase %s", v->rank, name);
    if (!ph)
        return;
    CHECK_NEAR(ph->self_median_s, median, EXACT);
    CHECK_NEAR(ph->self_total_s, total, EXACT);
}

/* Every figure of the three ranks and the pool, as worked out by hand
 * (with_wait: the waits too; rows of report.json carry them only where
 * the wait kind's own step cells are written). */
static void check_figures(const struct sps_ranks *r, int with_wait) {
    CHECK_STR_HAS(r->step_name, "step");
    CHECK(!strcmp(r->step_name, "step"));
    CHECK_EQ_U(r->n, 3);
    if (r->n != 3)
        return;
    const struct sps_rank_view *a = &r->rank[0], *b = &r->rank[1], *c = &r->rank[2], *p = &r->pooled;
    CHECK(a->rank == 0 && b->rank == 1 && c->rank == 2);
    CHECK(!strcmp(a->hostname, "a") && !strcmp(b->hostname, "a") && !strcmp(c->hostname, "b"));
    CHECK(a->pid == 100 && b->pid == 101 && c->pid == 200);
    CHECK(a->local_rank == 0 && b->local_rank == 1 && c->local_rank == 0);
    CHECK(a->world_size == 3 && b->world_size == 3 && c->world_size == 3);
    CHECK_EQ_U(a->processes, 2); /* the worker is rank 0's */
    CHECK_EQ_U(b->processes, 1);
    CHECK_EQ_U(c->processes, 1);
    /* rank 0: warm-up left out of the medians, in the totals */
    CHECK_EQ_U(a->steps, 4);
    CHECK_EQ_U(a->warmup_steps, 1);
    CHECK_NEAR(a->step_median_s, 0.2, EXACT);
    CHECK_NEAR(a->step_p90_s, 0.3, EXACT);
    CHECK_NEAR(a->step_total_s, 1.6, EXACT);
    if (with_wait)
        CHECK_NEAR(a->wait_median_s, 0.002, EXACT);
    if (with_wait)
        CHECK_NEAR(a->wait_total_s, 0.006, EXACT);
    CHECK_EQ_U(a->nphases, 2); /* the wait is not a phase */
    check_phase(a, "forward", 0.03, 0.10);
    check_phase(a, "backward", 0.06, 0.18);
    /* rank 1 */
    CHECK_EQ_U(b->steps, 3);
    CHECK_EQ_U(b->warmup_steps, 0);
    CHECK_NEAR(b->step_median_s, 0.5, EXACT);
    CHECK_NEAR(b->step_p90_s, 0.6, EXACT);
    CHECK_NEAR(b->step_total_s, 1.5, EXACT);
    if (with_wait)
        CHECK_NEAR(b->wait_median_s, 0.2, EXACT);
    if (with_wait)
        CHECK_NEAR(b->wait_total_s, 0.7, EXACT);
    CHECK_EQ_U(b->nphases, 1);
    check_phase(b, "forward", 0.1, 0.3);
    CHECK(!phase(b, "backward"));
    /* rank 2: no steps, no made-up figures */
    CHECK_EQ_U(c->steps, 0);
    CHECK(isnan(c->step_median_s) && isnan(c->step_p90_s) && isnan(c->wait_median_s));
    if (with_wait)
        CHECK_NEAR(c->wait_total_s, 0, 0);
    CHECK_NEAR(c->step_total_s, 0, 0);
    CHECK_EQ_U(c->nphases, 0);
    /* the pool: ranks 0 and 1's seven steps, not the launcher's */
    CHECK(r->have_pooled);
    CHECK_EQ_I(p->rank, -1);
    CHECK_EQ_U(p->processes, 4);
    CHECK_EQ_U(p->steps, 7);
    CHECK_EQ_U(p->warmup_steps, 1);
    CHECK_NEAR(p->step_median_s, 0.35, EXACT);
    CHECK_NEAR(p->step_p90_s, 0.6, EXACT);
    CHECK_NEAR(p->step_total_s, 3.1, EXACT);
    if (with_wait)
        CHECK_NEAR(p->wait_median_s, 0.1015, EXACT);
    if (with_wait)
        CHECK_NEAR(p->wait_total_s, 0.706, EXACT);
    check_phase(p, "forward", 0.07, 0.4);
    check_phase(p, "backward", 0.025, 0.18);
}

static void test_process_rank(void) {
    struct sps_run run = three_ranks();
    CHECK_EQ_I(sps__run_process_rank(&run, 0), 0);
    CHECK_EQ_I(sps__run_process_rank(&run, 2), 0); /* the worker, through its parent */
    CHECK_EQ_I(sps__run_process_rank(&run, 3), 2);
    CHECK_EQ_I(sps__run_process_rank(&run, 4), -1);
    /* a parent on another host is not a parent */
    snprintf(procs[2].hostname, sizeof procs[2].hostname, "b");
    CHECK_EQ_I(sps__run_process_rank(&run, 2), -1);
    /* a ppid cycle ends */
    procs[2].ppid = 300;
    snprintf(procs[2].hostname, sizeof procs[2].hostname, "a");
    procs[4].ppid = 102;
    CHECK_EQ_I(sps__run_process_rank(&run, 2), -1);
}

static void test_figures(void) {
    struct sps_run run = three_ranks();
    struct sps_ranks r;
    CHECK_EQ_I(sps__ranks_build(&run, &r), 0);
    check_figures(&r, 1);
    sps__ranks_free(&r);
    /* a run that recorded no wait: unknown, not 0 */
    names[ALLREDUCE].kind = SPS_KIND_COUNTER;
    CHECK_EQ_I(sps__ranks_build(&run, &r), 0);
    CHECK(r.n == 3 && isnan(r.rank[1].wait_median_s) && isnan(r.rank[1].wait_total_s));
    CHECK(isnan(r.pooled.wait_median_s) && isnan(r.pooled.wait_total_s));
    CHECK_NEAR(r.rank[1].step_median_s, 0.5, EXACT);
    sps__ranks_free(&r);
    names[ALLREDUCE].kind = SPS_KIND_WAIT;
    /* one process of no rank: no ranks, no pool */
    run.nprocs = 1;
    procs[0].rank = -1;
    for (size_t i = 0; i < run.nsteps; i++)
        rows[i].process = 0;
    CHECK_EQ_I(sps__ranks_build(&run, &r), 0);
    CHECK_EQ_U(r.n, 0);
    CHECK(!r.have_pooled);
    sps__ranks_free(&r);
}

/* A report of the hand-built run (its analysis not computed), borrowed:
 * free only its ranks. */
static void report_of(struct sps_report *rep, struct sps_run *run) {
    memset(rep, 0, sizeof *rep);
    rep->run = *run;
    sps__analysis_config_default(&rep->analysis_config);
    rep->info.analysis = &rep->analysis_config;
    CHECK_EQ_I(sps__ranks_build(&rep->run, &rep->ranks), 0);
}

static char *json_of(const struct sps_report *rep) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sps__report_json_print(f, rep);
    fclose(f);
    return buf;
}

static void same_view(const struct sps_rank_view *x, const struct sps_rank_view *y) {
    CHECK_EQ_I(x->rank, y->rank);
    CHECK_EQ_I(x->local_rank, y->local_rank);
    CHECK_EQ_I(x->world_size, y->world_size);
    CHECK(!strcmp(x->hostname, y->hostname));
    CHECK_EQ_I(x->pid, y->pid);
    CHECK_EQ_U(x->processes, y->processes);
    CHECK_EQ_U(x->steps, y->steps);
    CHECK_EQ_U(x->warmup_steps, y->warmup_steps);
    const double xs[] = {x->step_median_s, x->step_p90_s, x->step_total_s, x->wait_median_s, x->wait_total_s};
    const double ys[] = {y->step_median_s, y->step_p90_s, y->step_total_s, y->wait_median_s, y->wait_total_s};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        CHECK_MSG((isnan(xs[i]) && isnan(ys[i])) || xs[i] == ys[i], "rank %d figure %zu: %.17g vs %.17g", x->rank,
                  i, xs[i], ys[i]);
    CHECK_EQ_U(x->nphases, y->nphases);
    for (size_t i = 0; i < x->nphases && i < y->nphases; i++) {
        CHECK(!strcmp(x->phases[i].name, y->phases[i].name));
        CHECK(x->phases[i].self_median_s == y->phases[i].self_median_s);
        CHECK(x->phases[i].self_total_s == y->phases[i].self_total_s);
    }
}

static void same_ranks(const struct sps_ranks *x, const struct sps_ranks *y) {
    CHECK(!strcmp(x->step_name, y->step_name));
    CHECK_EQ_U(x->n, y->n);
    for (size_t i = 0; i < x->n && i < y->n; i++)
        same_view(&x->rank[i], &y->rank[i]);
    CHECK_EQ_I(x->have_pooled, y->have_pooled);
    same_view(&x->pooled, &y->pooled);
}

/* report.json's ranks: written, read back into the same model and the
 * same text; a report.json without them gets them from its rows. */
static void test_report_json_round_trip(void) {
    struct sps_run run = three_ranks();
    struct sps_report rep;
    report_of(&rep, &run);
    char *text = json_of(&rep);
    json_t *doc = json_loads(text, 0, NULL);
    CHECK(doc);
    CHECK_EQ_U(json_array_size(json_object_get(doc, "ranks")), 3);
    CHECK_EQ_I(json_integer_value(json_path(doc, "ranks.1.rank")), 1);
    CHECK_NEAR(json_num(doc, "ranks.0.step_p90_s"), 0.3, EXACT);
    CHECK(!strcmp(json_string_value(json_path(doc, "ranks.2.hostname")), "b"));
    CHECK(json_is_null(json_path(doc, "ranks.2.step_median_s")));
    CHECK_NEAR(json_num(doc, "ranks_pooled.wait_per_step_median_s"), 0.1015, EXACT);
    CHECK(!json_object_get(json_object_get(doc, "ranks_pooled"), "rank"));

    const char *dir = tmpdir_new("ranks-json");
    char path[1200], err[512];
    snprintf(path, sizeof path, "%s/report.json", dir);
    write_file(path, text, strlen(text));
    struct sps_report read;
    int rc = sps__report_read(&read, path, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        same_ranks(&rep.ranks, &read.ranks);
        char *again = json_of(&read);
        const char *r0 = strstr(text, "\n  \"ranks\":"), *r1 = strstr(again, "\n  \"ranks\":");
        const char *e0 = r0 ? strstr(r0, "\n  \"metrics\"") : NULL, *e1 = r1 ? strstr(r1, "\n  \"metrics\"") : NULL;
        CHECK(r0 && r1 && e0 && e1 && e0 - r0 == e1 - r1 && !memcmp(r0, r1, (size_t)(e0 - r0)));
        free(again);
        sps__report_free(&read);
    }
    /* without "ranks": built from the rows report.json holds, also over
     * a "ranks_pooled" read before (its phases were leaked; found by
     * fuzz/fuzz_report.c) */
    json_object_del(doc, "ranks");
    for (int pooled = 1; pooled >= 0; pooled--) {
        if (!pooled)
            json_object_del(doc, "ranks_pooled");
        CHECK_EQ_I(json_dump_file(doc, path, 0), 0);
        rc = sps__report_read(&read, path, err, sizeof err);
        CHECK_MSG(rc == 0, "%s", err);
        if (rc == 0) {
            check_figures(&read.ranks, 0);
            sps__report_free(&read);
        }
    }
    /* bad input: one line naming the file and the key */
    const char *bad = "{\"schema\": \"stepscope.report/1\", \"ranks\": [{\"steps\": \"many\"}]}";
    write_file(path, bad, strlen(bad));
    CHECK_EQ_I(sps__report_read(&read, path, err, sizeof err), SPS_EFORMAT);
    CHECK_STR_HAS(err, "ranks[].steps");
    CHECK(!strchr(err, '\n'));
    json_decref(doc);
    free(text);
    sps__ranks_free(&rep.ranks);
}

static void test_summary_table(void) {
    struct sps_run run = three_ranks();
    struct sps_report rep;
    report_of(&rep, &run);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    sps__summary_ranks(f, &rep);
    sps__summary_pooled_note(f, &rep);
    fclose(f);
    CHECK_STR_HAS(out, "ranks: 3, \"step\" steps");
    CHECK_STR_HAS(out, "zones: all 3 ranks pooled");
    /* rank 1's row: host, pid, steps, median, p90, wait, forward */
    CHECK_STR_HAS(out, "\n1      a                     101       3     500 ms     600 ms     200 ms     100 ms");
    CHECK_STR_HAS(out, "\n2      b                     200       0          -          -          -          -");
    CHECK_STR_HAS(out, "\npooled                                 7     350 ms     600 ms");
    free(out);
    /* one rank: no table, no note */
    rep.ranks.n = 1;
    out = NULL;
    f = open_memstream(&out, &len);
    sps__summary_ranks(f, &rep);
    sps__summary_pooled_note(f, &rep);
    fclose(f);
    CHECK_EQ_U(len, 0);
    free(out);
    rep.ranks.n = 3;
    sps__ranks_free(&rep.ranks);
}

static char *rendered(const struct sps_report *rep, int html) {
    char *out = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    int rc = html ? sps__export_html(rep, f, err, sizeof err) : sps__export_steps_csv(rep, f, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    fclose(f);
    return out;
}

/* report.html: one line a rank (never the ranks' steps strung together),
 * the per-rank table; steps.csv: the worker's rank is its parent's, each
 * rank's step_index its own. */
static void test_html_and_csv(void) {
    struct sps_run run = three_ranks();
    rows[1].process = 2; /* a step the worker recorded: rank 0's */
    rows[1].tid = 102;
    struct sps_report rep;
    report_of(&rep, &run);
    char *html = rendered(&rep, 1);
    CHECK_STR_HAS(html, "Step time per step, rank by rank");
    CHECK(!strstr(html, "<h2>Step time per step</h2>"));
    /* ranks 0 and 1 have steps: two lines; rank 2 none */
    const char *chart = strstr(html, "id=\"step-time\""), *end = chart ? strstr(chart, "</section>") : NULL;
    int lines = 0;
    for (const char *p = chart; p && end && (p = strstr(p, "<polyline")) && p < end; p++)
        lines++;
    CHECK_EQ_I(lines, 2);
    CHECK_STR_HAS(html, ">rank 2</text>");
    CHECK_STR_HAS(html, "<section id=\"ranks\">");
    CHECK_STR_HAS(html, "<tr><td class=\"num\">2</td><td>b</td><td class=\"num\">200</td>");
    CHECK_STR_HAS(html, "<tr class=\"pooled\"><td>pooled</td>");
    CHECK_STR_HAS(html, "draw rank 0's steps");
    /* the phases of each rank side by side, the waits among them */
    const char *bars = strstr(html, "aria-label=\"each rank&#39;s phases per step\"");
    CHECK(bars != NULL);
    CHECK(bars && strstr(bars, ">wait (collectives)</text>"));
    free(html);
    char *csv = rendered(&rep, 0);
    CHECK_STR_HAS(csv, "\n102,0,102,step,1,"); /* the worker's step: rank 0's */
    CHECK_STR_HAS(csv, "\n300,,300,step,1,");  /* the launcher: no rank */
    CHECK_STR_HAS(csv, "\n101,1,101,step,2,"); /* rank 1's third step */
    free(csv);
    sps__ranks_free(&rep.ranks);
}

int main(void) {
    RUN_TEST(test_process_rank);
    RUN_TEST(test_figures);
    RUN_TEST(test_report_json_round_trip);
    RUN_TEST(test_summary_table);
    RUN_TEST(test_html_and_csv);
    return check_report();
}
