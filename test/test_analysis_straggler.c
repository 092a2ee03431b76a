/*
 * test_analysis_straggler.c - the straggler verdict (src/analysis/straggler.c)
 * on hand-built multi-rank Run models with known answers: a balanced job,
 * one rank slow in one phase while an all-reduce equalises every rank's
 * wall time, a job without wait zones, and the verdict's report.json
 * round trip and words.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/straggler.h"
#include "check.h"
#include "model/run.h"
#include "render/analysis_views.h"
#include "render/json_writer.h"
#include "report/jscan.h"
#include "report/report_read.h"
#include "support.h"

enum { STEP, DATA, FORWARD, BACKWARD, ALLREDUCE, NNAMES };
#define MAX_RANKS 4
#define MAX_STEPS 64

struct job {
    struct sps_run run;
    struct sps_process_data procs[MAX_RANKS + 1];
    struct sps_name_summary names[NNAMES];
    struct sps_step_row rows[(MAX_RANKS + 1) * MAX_STEPS];
    double cells[(MAX_RANKS + 1) * MAX_STEPS][NNAMES];
};

/* What each rank computes in a step, ms; the job is built so that every
 * rank's step ends when the slowest arrives at the all-reduce plus 2 ms
 * (the collective's own time), the way DDP's all-reduce ends them. */
struct plan {
    int nranks, nsteps;
    double data, forward, backward;
    int slow_rank;     /* -1: none */
    int slow_phase;    /* DATA or FORWARD */
    double slow_ms;
    int record_waits;  /* 0: no wait zones; the wait counts in backward's self time */
    int warmup;        /* leading steps marked warm-up (3x slower on every rank) */
    int noisy_rank;    /* -1: none; else this rank's forward takes noisy_ms more on odd steps, less on even */
    double noisy_ms;
    int slow_every;    /* 0 or 1: slow_rank is slow every step; k: only on steps s % k == 0 */
    int slow_until;    /* 0: slow_rank is slow to the end; else only in steps before this */
};

/* Small deterministic noise, -0.25..+0.25 ms, different per rank and step. */
static double noise(int rank, int step, int phase) {
    unsigned x = (unsigned)(rank * 7919 + step * 104729 + phase * 1299709) * 2654435761u;
    return ((double)(x >> 16 & 0xffff) / 65535.0 - 0.5) * 0.5;
}

static void name(struct job *j, int i, const char *text, uint32_t kind) {
    snprintf(j->names[i].name, sizeof j->names[i].name, "%s", text);
    j->names[i].kind = kind;
}

static void build(struct job *j, const struct plan *p) {
    memset(j, 0, sizeof *j);
    name(j, STEP, "step", SPS_KIND_STEP);
    name(j, DATA, "data", SPS_KIND_ZONE);
    name(j, FORWARD, "forward", SPS_KIND_ZONE);
    name(j, BACKWARD, "backward", SPS_KIND_ZONE);
    name(j, ALLREDUCE, "all_reduce", SPS_KIND_WAIT);
    for (int r = 0; r < p->nranks; r++) {
        j->procs[r].pid = 1000 + r;
        j->procs[r].rank = r;
        j->procs[r].world_size = p->nranks;
        snprintf(j->procs[r].hostname, sizeof j->procs[r].hostname, "node-%c", r < 2 ? 'a' : 'b');
    }
    size_t n = 0;
    double t = 0; /* ms: every rank starts each step together */
    for (int s = 0; s < p->nsteps; s++) {
        double phase[MAX_RANKS][NNAMES] = {{0}}, arrive = 0;
        double scale = s < p->warmup ? 3.0 : 1.0;
        for (int r = 0; r < p->nranks; r++) {
            phase[r][DATA] = scale * p->data + noise(r, s, DATA);
            phase[r][FORWARD] = scale * p->forward + noise(r, s, FORWARD);
            phase[r][BACKWARD] = scale * p->backward + noise(r, s, BACKWARD);
            if (r == p->slow_rank && (p->slow_every <= 1 || s % p->slow_every == 0) &&
                (!p->slow_until || s < p->slow_until))
                phase[r][p->slow_phase] += p->slow_ms;
            if (r == p->noisy_rank)
                phase[r][FORWARD] += s % 2 ? p->noisy_ms : -p->noisy_ms;
            double c = phase[r][DATA] + phase[r][FORWARD] + phase[r][BACKWARD];
            arrive = c > arrive ? c : arrive;
        }
        double end = arrive + 2.0; /* the all-reduce ends together */
        for (int r = 0; r < p->nranks; r++, n++) {
            struct sps_step_row *row = &j->rows[n];
            double c = phase[r][DATA] + phase[r][FORWARD] + phase[r][BACKWARD];
            row->index = (uint64_t)s;
            row->process = (size_t)r;
            row->tid = 1000 + r;
            row->name = STEP;
            row->warmup = s < p->warmup;
            row->start_ns = (uint64_t)(t * 1e6);
            row->end_ns = (uint64_t)(end * 1e6 + t * 1e6);
            row->by_name = j->cells[n];
            row->by_name[STEP] = NAN;
            row->by_name[DATA] = phase[r][DATA] / 1e3;
            row->by_name[FORWARD] = phase[r][FORWARD] / 1e3;
            if (p->record_waits) {
                row->by_name[BACKWARD] = phase[r][BACKWARD] / 1e3;
                row->by_name[ALLREDUCE] = (end - c) / 1e3;
            } else { /* the wait hides in backward's self time */
                row->by_name[BACKWARD] = (phase[r][BACKWARD] + end - c) / 1e3;
                row->by_name[ALLREDUCE] = NAN;
            }
        }
        t += end;
    }
    j->run.procs = j->procs;
    j->run.nprocs = (size_t)p->nranks;
    j->run.names = j->names;
    j->run.nnames = NNAMES;
    j->run.steps = j->rows;
    j->run.nsteps = n;
}

static const struct plan BALANCED = {4, 40, 5.0, 10.0, 8.0, -1, DATA, 0, 1, 0, -1, 0, 0, 0};

static void test_balanced(void) {
    struct job *j = calloc(1, sizeof *j);
    build(j, &BALANCED);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_NONE);
    CHECK_EQ_U(s.nranks, 4);
    CHECK_EQ_U(s.steps_judged, 40);
    CHECK_EQ_U(s.nwindows, 4);
    CHECK_EQ_I(s.slowest, -1);
    CHECK_NEAR(s.clean_share, 1.0, 1e-12);
    CHECK(s.spread_ms < 0.5);
    for (size_t w = 0; w < s.nwindows; w++)
        CHECK_EQ_I(s.windows[w].rank, -1);
    for (size_t r = 0; r < s.nranks; r++) {
        CHECK_EQ_I(s.ranks[r].rank, (int)r);
        CHECK(!s.ranks[r].slow);
        CHECK_EQ_U(s.ranks[r].windows_named, 0);
        CHECK_NEAR(s.ranks[r].compute_ms, 23.0, 0.5);
    }
    char line[512];
    CHECK(sps__straggler_text(&s, 0, line, sizeof line));
    CHECK_STR_HAS(line, "none: ranks within 0.");
    CHECK_STR_HAS(line, "no rank named in 100% of 4 windows of 10 steps");
    CHECK(!sps__straggler_text(&s, 1, line, sizeof line));
    sps__straggler_free(&s);
    free(j);
}

/* Rank 2 takes 20 ms longer in slow_phase; every rank's step and
 * backward-plus-wait take the same wall time. */
static void check_slow(int phase, const char *phase_name) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.slow_rank = 2;
    p.slow_phase = phase;
    p.slow_ms = 20.0;
    build(j, &p);
    /* the trap: wall times are equal on every rank */
    for (size_t i = 0; i < 4; i++)
        CHECK_EQ_U(j->rows[i].end_ns - j->rows[i].start_ns, j->rows[0].end_ns - j->rows[0].start_ns);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_FOUND);
    CHECK_EQ_I(s.slowest, 2);
    CHECK_EQ_I(s.ranks[2].rank, 2);
    CHECK(s.ranks[2].slow);
    CHECK_EQ_U(s.ranks[2].windows_named, 4);
    CHECK_NEAR(s.ranks[2].share, 1.0, 1e-12);
    CHECK_NEAR(s.ranks[2].excess_ms, 20.0, 0.5);
    CHECK_NEAR(s.cost_ms, 20.0, 0.5);
    CHECK_NEAR(s.ranks[2].phase_excess_ms, 20.0, 0.5);
    CHECK_MSG(!strcmp(s.ranks[2].phase, phase_name), "phase %s, not %s", s.ranks[2].phase, phase_name);
    CHECK_NEAR(s.ranks[2].confidence, 1.0, 1e-12);
    CHECK_NEAR(s.ranks[2].wait_ms, 2.0, 0.5); /* it arrives last */
    CHECK_NEAR(s.ranks[0].wait_ms, 22.0, 0.6); /* the others wait for it */
    for (size_t r = 0; r < s.nranks; r++)
        CHECK_EQ_I(s.ranks[r].slow, r == 2);
    for (size_t w = 0; w < s.nwindows; w++) {
        CHECK_EQ_I(s.windows[w].rank, 2);
        CHECK_EQ_U(s.windows[w].named, 1);
        CHECK(!strcmp(s.windows[w].phase, phase_name));
    }
    char line[512];
    CHECK(sps__straggler_text(&s, 0, line, sizeof line));
    char want[128];
    snprintf(want, sizeof want, "rank 2 (node-b) loses 2");
    CHECK_STR_HAS(line, want);
    snprintf(want, sizeof want, " ms a step in %s (in 100%% of windows, confidence 1.0); the job waits 2", phase_name);
    CHECK_STR_HAS(line, want);
    CHECK(!sps__straggler_text(&s, 1, line, sizeof line));
    sps__straggler_free(&s);
    free(j);
}

static void test_slow_in_data(void) {
    check_slow(DATA, "data");
}

static void test_slow_in_forward(void) {
    check_slow(FORWARD, "forward");
}

/* Rank 1's forward is 8 ms longer on odd steps and 8 ms shorter on even
 * ones: noisy, but not slower on the whole, so nobody waits for it on
 * the whole; it is not named, and each window names rank 2, steadily
 * 20 ms slow. */
static void test_noisy_rank_is_not_named(void) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.slow_rank = 2;
    p.slow_ms = 20.0;
    p.noisy_rank = 1;
    p.noisy_ms = 8.0;
    build(j, &p);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_FOUND);
    CHECK_EQ_I(s.slowest, 2);
    CHECK(!s.ranks[1].slow);
    CHECK_EQ_U(s.ranks[1].windows_named, 0);
    CHECK(fabs(s.ranks[1].excess_ms) < 1.0);
    for (size_t w = 0; w < s.nwindows; w++) {
        CHECK_EQ_I(s.windows[w].rank, 2);
        CHECK_EQ_I(s.windows[w].top_rank, 2);
        CHECK_EQ_U(s.windows[w].named, 1);
        CHECK_NEAR(s.windows[w].excess_ms, 20.0, 0.5);
    }
    sps__straggler_free(&s);
    free(j);
}

/* Rank 2 is 20 ms slow in forward on every 4th step only: its median
 * excess in every window is about 0, but the job waits for it 5 ms a
 * step on average (20 ms on a quarter of the steps), and every window
 * holds two or three of its slow steps. */
static void test_intermittent_rank_is_named(void) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.slow_rank = 2;
    p.slow_phase = FORWARD;
    p.slow_ms = 20.0;
    p.slow_every = 4;
    build(j, &p);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_FOUND);
    CHECK_EQ_I(s.slowest, 2);
    CHECK_NEAR(s.cost_ms, 5.0, 0.3);
    CHECK_NEAR(s.ranks[2].excess_ms, 5.0, 0.3);
    CHECK_NEAR(s.ranks[2].phase_excess_ms, 5.0, 0.3);
    CHECK(!strcmp(s.ranks[2].phase, "forward"));
    CHECK_EQ_U(s.ranks[2].windows_named, 4);
    for (size_t r = 0; r < s.nranks; r++)
        CHECK_EQ_I(s.ranks[r].slow, r == 2);
    for (size_t w = 0; w < s.nwindows; w++) {
        CHECK_EQ_I(s.windows[w].rank, 2);
        CHECK(!strcmp(s.windows[w].phase, "forward"));
    }
    char line[512];
    CHECK(sps__straggler_text(&s, 0, line, sizeof line));
    CHECK_STR_HAS(line, "rank 2 (node-b) loses 5.");
    CHECK_STR_HAS(line, " ms a step in forward (in 100% of windows");
    sps__straggler_free(&s);
    free(j);
}

/* Two ranks; rank 1's DataLoader workers are slow, and its prefetch
 * hides that on every other step: its data phase takes 14.5 ms more on
 * even steps and nothing more on odd ones.  Its own step-to-step spread
 * is large, but rank 0 is steady: the noise to judge it against is how
 * much balanced ranks differ, not how much it differs from itself. */
static void test_alternating_prefetch_rank_is_named(void) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.nranks = 2;
    p.slow_rank = 1;
    p.slow_phase = DATA;
    p.slow_ms = 14.5;
    p.slow_every = 2;
    build(j, &p);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_FOUND);
    CHECK_EQ_I(s.slowest, 1);
    CHECK_NEAR(s.cost_ms, 7.25, 0.3);
    CHECK(!strcmp(s.ranks[1].phase, "data"));
    CHECK_EQ_U(s.ranks[1].windows_named, 4);
    CHECK(!s.ranks[0].slow);
    for (size_t w = 0; w < s.nwindows; w++)
        CHECK_EQ_I(s.windows[w].rank, 1);
    sps__straggler_free(&s);
    free(j);
}

/* Rank 2 is 20 ms slow for the first 10 of 40 steps only: named in one
 * window of four, not steadily, so no straggler; the sentence says what
 * it saw (5 ms a step on average is not "within" anything small). */
static void test_brief_slowdown_is_said_not_named(void) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.slow_rank = 2;
    p.slow_ms = 20.0;
    p.slow_until = 10;
    build(j, &p);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_NONE);
    CHECK_EQ_U(s.ranks[2].windows_named, 1);
    CHECK_EQ_I(s.windows[0].rank, 2);
    CHECK_NEAR(s.ranks[2].excess_ms, 5.0, 0.3);
    char line[512];
    CHECK(sps__straggler_text(&s, 0, line, sizeof line));
    CHECK_MSG(!strstr(line, "within"), "%s", line);
    CHECK_STR_HAS(line, "none: rank 2 (node-b) computes 5.");
    CHECK_STR_HAS(line, "named in only 25% of windows");
    CHECK_STR_HAS(line, "no rank named in 75% of 4 windows of 10 steps");
    sps__straggler_free(&s);
    free(j);
}

/* Without wait zones the collective's time is in every rank's
 * backward: nothing tells the ranks apart, and the verdict says why. */
static void test_no_waits(void) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.slow_rank = 2;
    p.slow_ms = 20.0;
    p.record_waits = 0;
    build(j, &p);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_NO_WAIT);
    CHECK_STR_HAS(s.reason, "no rank recorded time waiting in collectives");
    CHECK_EQ_U(s.nwindows, 0);
    char line[512];
    CHECK(sps__straggler_text(&s, 0, line, sizeof line));
    CHECK_STR_HAS(line, "unknown: no rank recorded");
    sps__straggler_free(&s);
    free(j);
}

/* One rank is not a distributed job; warm-up steps are not judged. */
static void test_not_judged(void) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.nranks = 1;
    build(j, &p);
    struct sps_straggler s;
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_NOT_DISTRIBUTED);
    char line[512];
    CHECK(!sps__straggler_text(&s, 0, line, sizeof line));
    sps__straggler_free(&s);

    p = BALANCED;
    p.nsteps = 8;
    p.warmup = 4;
    build(j, &p);
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_I(s.verdict, SPS_STRAGGLER_TOO_FEW_STEPS);
    CHECK_EQ_U(s.steps_judged, 4);
    sps__straggler_free(&s);

    /* a rank missing a step: only the steps every rank completed count,
     * and a tail of 3 steps joins the last window */
    p = BALANCED;
    p.nsteps = 23;
    p.slow_rank = 1;
    p.slow_ms = 20.0;
    build(j, &p);
    j->rows[5 * 4 + 3].warmup = 1; /* rank 3's step 5 left out */
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    CHECK_EQ_U(s.steps_judged, 22);
    CHECK_EQ_U(s.nwindows, 2);
    CHECK_EQ_U(s.windows[0].first_step, 0);
    CHECK_EQ_U(s.windows[0].last_step, 10);
    CHECK_EQ_U(s.windows[1].first_step, 11);
    CHECK_EQ_U(s.windows[1].last_step, 22);
    CHECK_EQ_U(s.windows[1].steps, 12);
    CHECK_EQ_I(s.slowest, 1);
    sps__straggler_free(&s);
    free(j);
}

/* report.json's "straggler" and its reader give the same verdict and
 * the same words. */
static void test_json_round_trip(void) {
    struct job *j = calloc(1, sizeof *j);
    struct plan p = BALANCED;
    p.slow_rank = 3;
    p.slow_ms = 20.0;
    build(j, &p);
    struct sps_straggler s, back;
    memset(&back, 0, sizeof back);
    CHECK_EQ_I(sps__straggler_analyze(&j->run, &s), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct sps_jw w;
    sps__jw_init(&w, f);
    sps__jw_object(&w, NULL);
    sps__straggler_json(&w, &s);
    sps__jw_end(&w, '}');
    fclose(f);

    json_error_t jerr;
    json_t *doc = json_loads(buf, 0, &jerr);
    json_t *g = json_object_get(doc, "straggler");
    CHECK(!strcmp(json_string_value(json_object_get(g, "verdict")), "found"));
    CHECK_EQ_I(json_integer_value(json_object_get(g, "slowest_rank")), 3);
    CHECK_EQ_U(json_array_size(json_object_get(g, "ranks")), 4);
    CHECK_EQ_U(json_array_size(json_object_get(g, "windows")), 4);
    json_t *w0 = json_array_get(json_object_get(g, "windows"), 0);
    CHECK_EQ_I(json_integer_value(json_object_get(w0, "rank")), 3);
    CHECK(!strcmp(json_string_value(json_object_get(w0, "phase")), "data"));
    json_decref(doc);

    f = fmemopen(buf, len, "r");
    struct sps_jscan sc;
    CHECK_EQ_I(sps__jscan_open(&sc, f), 0);
    CHECK_EQ_I(sps__jscan_expect(&sc, '{'), 0);
    CHECK_EQ_I(sps__jscan_string(&sc), 0);
    CHECK_EQ_I(sps__jscan_expect(&sc, ':'), 0);
    CHECK_EQ_I(sps__report_read_straggler(&sc, &back), 0);
    sps__jscan_close(&sc);
    fclose(f);
    CHECK_EQ_I(back.verdict, s.verdict);
    CHECK_EQ_U(back.nranks, s.nranks);
    CHECK_EQ_U(back.nwindows, s.nwindows);
    CHECK_EQ_I(back.slowest, s.slowest);
    char a[512], b[512];
    CHECK(sps__straggler_text(&s, 0, a, sizeof a) && sps__straggler_text(&back, 0, b, sizeof b));
    CHECK_MSG(!strcmp(a, b), "\"%s\" vs \"%s\"", a, b);
    CHECK_STR_HAS(b, "rank 3 (node-b)");
    free(buf);
    sps__straggler_free(&s);
    sps__straggler_free(&back);
    free(j);
}

int main(void) {
    RUN_TEST(test_balanced);
    RUN_TEST(test_slow_in_data);
    RUN_TEST(test_slow_in_forward);
    RUN_TEST(test_noisy_rank_is_not_named);
    RUN_TEST(test_intermittent_rank_is_named);
    RUN_TEST(test_alternating_prefetch_rank_is_named);
    RUN_TEST(test_brief_slowdown_is_said_not_named);
    RUN_TEST(test_no_waits);
    RUN_TEST(test_not_judged);
    RUN_TEST(test_json_round_trip);
    return check_report();
}
