/*
 * test_auto_mode.c - which mode recorded a run's steps: the model's
 * sps__run_auto (src/model/run.c) over processes built here, and the one
 * line the summary and report.html make of it (src/render/auto_mode.c).
 * report.json's keys and their round trip are test_report_roundtrip's;
 * real runs are python/tests/test_auto_inject.py's.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "render/auto_mode.h"
#include "report/report.h"

/* a and b the same string (a may be NULL: a failure, not a crash) */
#define CHECK_STR_EQ(a, b)                                                                                    \
    do {                                                                                                      \
        const char *a_ = (a), *b_ = (b);                                                                      \
        CHECK_MSG(a_ && !strcmp(a_, b_), "%s is \"%s\", not \"%s\"", #a, a_ ? a_ : "(null)", b_);             \
    } while (0)

/* A run of n processes; rows[k] is the process of step row k (nrows rows). */
struct fixture {
    struct sps_process_data procs[3];
    struct sps_step_row rows[4];
    struct sps_report rep;
};

static void fixture_init(struct fixture *f, size_t nprocs, const size_t *rows, size_t nrows, int inject) {
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < nprocs; i++)
        f->procs[i].pid = 100 + (int)i;
    for (size_t k = 0; k < nrows; k++)
        f->rows[k].process = rows[k];
    f->rep.run = (struct sps_run){.nprocs = nprocs, .procs = f->procs, .nsteps = nrows, .steps = f->rows,
                                  .steps_recorded = nrows};
    f->rep.info.auto_inject = inject;
}

static const char *state_of(const struct fixture *f, struct sps_run_auto *a) {
    sps__run_auto(&f->rep.run, f->rep.info.auto_inject, a);
    return sps__auto_state_name(a);
}

static const char *sentence(const struct fixture *f) {
    static char buf[512];
    const char *s = sps__auto_sentence(&f->rep, buf, sizeof buf);
    return s ? s : "(none)";
}

/* Standalone (stepscope run said nothing), nothing auto: no state at all. */
static void test_nothing_to_say(void) {
    struct fixture f;
    struct sps_run_auto a;
    fixture_init(&f, 0, NULL, 0, SPS_AUTO_INJECT_UNKNOWN);
    CHECK(state_of(&f, &a) == NULL);
    CHECK_EQ_I(a.steps_by, SPS_STEPS_BY_NONE);
    CHECK(sps__steps_by_name(a.steps_by) == NULL);
    CHECK_STR_EQ(sentence(&f), "(none)");
    /* injected, but nobody imported torch: a state, still no line */
    fixture_init(&f, 1, NULL, 0, SPS_AUTO_INJECT_ON);
    CHECK_STR_EQ(state_of(&f, &a), "not_installed");
    CHECK_STR_EQ(sentence(&f), "(none)");
    fixture_init(&f, 0, NULL, 0, SPS_AUTO_INJECT_MISSING);
    CHECK_STR_EQ(state_of(&f, &a), "unavailable");
}

static void test_auto_records(void) {
    struct fixture f;
    struct sps_run_auto a;
    const size_t rows[] = {0, 0};
    fixture_init(&f, 1, rows, 2, SPS_AUTO_INJECT_ON);
    f.procs[0].py_auto = SPS_REC_PY_AUTO_ACTIVE;
    CHECK_STR_EQ(state_of(&f, &a), "active");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "auto");
    CHECK_EQ_U(a.active, 1);
    CHECK(a.reason == NULL);
    CHECK_STR_EQ(sentence(&f), "steps: auto-instrumented (--no-auto to switch off)");
    /* active with no step: said so */
    fixture_init(&f, 1, NULL, 0, SPS_AUTO_INJECT_ON);
    f.procs[0].py_auto = SPS_REC_PY_AUTO_ACTIVE;
    CHECK_STR_EQ(sentence(&f), "steps: none recorded (auto-instrumentation was on, and no optimizer step() ran)");
}

/* A spawned worker kept auto; the main process stood aside and recorded
 * the steps with its own zones: the steps are the code's. */
static void test_stood_aside_wins_the_state_rows_decide_the_mode(void) {
    struct fixture f;
    struct sps_run_auto a;
    const size_t rows[] = {1, 1, 1};
    fixture_init(&f, 3, rows, 3, SPS_AUTO_INJECT_ON);
    f.procs[0].py_auto = SPS_REC_PY_AUTO_ACTIVE;
    f.procs[1].py_auto = SPS_REC_PY_AUTO_STOOD_ASIDE;
    snprintf(f.procs[1].py_auto_reason, sizeof f.procs[1].py_auto_reason, "the script records zones of its own at train.py:14");
    f.procs[2].py_auto = SPS_REC_PY_AUTO_TURNED_OFF;
    snprintf(f.procs[2].py_auto_reason, sizeof f.procs[2].py_auto_reason, "an error in its hooks");
    CHECK_STR_EQ(state_of(&f, &a), "stood_aside");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "code");
    CHECK_STR_EQ(a.reason, "the script records zones of its own at train.py:14");
    CHECK_EQ_I(a.reason_pid, 101);
    CHECK_EQ_U(a.active, 1);
    CHECK_EQ_U(a.stood_aside, 1);
    CHECK_EQ_U(a.turned_off, 1);
    CHECK_STR_EQ(sentence(&f),
                 "steps: recorded by the program's own zones (auto-instrumentation stood aside: the script records "
                 "zones of its own at train.py:14)");
    /* instrument() in the process with the rows */
    f.procs[1].py_instrument = 1;
    snprintf(f.procs[1].py_auto_reason, sizeof f.procs[1].py_auto_reason, "the script calls stepscope.torch.instrument()");
    CHECK_STR_EQ(state_of(&f, &a), "stood_aside");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "instrument");
    CHECK_STR_EQ(sentence(&f), "steps: recorded by stepscope.torch.instrument() (auto-instrumentation stood aside: the "
                               "script calls stepscope.torch.instrument())");
    /* a row of the process auto stayed in: auto before instrument and code */
    f.rows[2].process = 0;
    CHECK_STR_EQ(state_of(&f, &a), "stood_aside");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "auto");
}

/* Auto turned itself off: the steps it recorded stay its own. */
static void test_turned_off_keeps_its_steps(void) {
    struct fixture f;
    struct sps_run_auto a;
    const size_t rows[] = {0};
    fixture_init(&f, 1, rows, 1, SPS_AUTO_INJECT_ON);
    f.procs[0].py_auto = SPS_REC_PY_AUTO_TURNED_OFF;
    snprintf(f.procs[0].py_auto_reason, sizeof f.procs[0].py_auto_reason, "an error in its hooks (KeyError: 3)");
    CHECK_STR_EQ(state_of(&f, &a), "turned_off");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "auto");
    CHECK_STR_EQ(a.reason, "an error in its hooks (KeyError: 3)");
    CHECK_STR_EQ(sentence(&f),
                 "steps: auto-instrumented (auto-instrumentation turned itself off: an error in its hooks (KeyError: 3))");
}

/* The program's own steps, auto never in play: no line (a C program). */
static void test_plain_code_has_no_line(void) {
    struct fixture f;
    struct sps_run_auto a;
    const size_t rows[] = {0, 0};
    fixture_init(&f, 1, rows, 2, SPS_AUTO_INJECT_ON);
    CHECK_STR_EQ(state_of(&f, &a), "not_installed");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "code");
    CHECK_STR_EQ(sentence(&f), "(none)");
}

static void test_no_auto(void) {
    struct fixture f;
    struct sps_run_auto a;
    const size_t rows[] = {0};
    fixture_init(&f, 1, rows, 1, SPS_AUTO_INJECT_OFF);
    CHECK_STR_EQ(state_of(&f, &a), "off");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "code");
    CHECK_STR_EQ(sentence(&f), "steps: recorded by the program's own zones");
    /* no steps: the line says auto was off, the cause the user may have forgotten */
    fixture_init(&f, 0, NULL, 0, SPS_AUTO_INJECT_OFF);
    CHECK_STR_EQ(sentence(&f), "steps: none recorded (auto-instrumentation was off: --no-auto)");
    /* steps counted but no row kept (every step event dropped): the code's */
    fixture_init(&f, 1, NULL, 0, SPS_AUTO_INJECT_OFF);
    f.rep.run.steps_recorded = 7;
    CHECK_STR_EQ(state_of(&f, &a), "off");
    CHECK_STR_EQ(sps__steps_by_name(a.steps_by), "code");
}

int main(void) {
    RUN_TEST(test_nothing_to_say);
    RUN_TEST(test_auto_records);
    RUN_TEST(test_stood_aside_wins_the_state_rows_decide_the_mode);
    RUN_TEST(test_turned_off_keeps_its_steps);
    RUN_TEST(test_plain_code_has_no_line);
    RUN_TEST(test_no_auto);
    return check_report();
}
