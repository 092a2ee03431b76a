/*
 * test_torch_ops.c - the deep-capture window's operator files
 * (src/model/torch_ops.c): the parser on good, malformed and cut-off
 * files, the directory loader, and the per-zone attribution
 * (src/model/torch_zones.c) on a run built by hand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "model/torch_ops.h"
#include "stepscope.h"
#include "support.h"

static const char good[] = "stepscope-torch-ops 1\n"
                           "pid\t4242\n"
                           "spec\tauto\n"
                           "tid\t4243\n"
                           "window\t16\t21\n"
                           "align_error_ns\t1500\n"
                           "start_cost_ns\t300000\n"
                           "stop_cost_ns\t9000000\n"
                           "trigger\t15\t4.250\n"
                           "a_later_key\twhatever\n"
                           "op\t1000\t2000\t700\t4243\tcpu\taten::addmm\n"
                           "op\t1100\t1200\t100\t-2\tcpu\tautograd::engine::evaluate_function: Add\tBackward0\n"
                           "op\t1300\t1900\t600\t0\tgpu\tvoid gemm_kernel<float>()\n"
                           "op\t2100\t2200\t50\t4243\tcpu\taten::addmm\n"
                           "export_cost_ns\t2000000\n"
                           "end\t4\n";

static int parse(const char *text, struct sps_torch_capture *c, char *err, size_t errlen) {
    err[0] = '\0';
    return sps__torch_ops_parse(text, strlen(text), "t.tsv", c, err, errlen);
}

static void test_good_file(void) {
    struct sps_torch_capture c;
    char err[256];
    CHECK_EQ_I(parse(good, &c, err, sizeof err), 0);
    CHECK_EQ_I(c.pid, 4242);
    CHECK_EQ_I(c.tid, 4243);
    CHECK(!strcmp(c.spec, "auto"));
    CHECK_EQ_U(c.first_step, 16);
    CHECK_EQ_U(c.end_step, 21);
    CHECK(c.have_trigger);
    CHECK_EQ_U(c.trigger_step, 15);
    CHECK_NEAR(c.trigger_ratio, 4.25, 1e-12);
    CHECK_NEAR(c.align_error_ns, 1500, 0);
    CHECK_NEAR(c.export_cost_ns, 2e6, 0);
    CHECK_EQ_U(c.nops, 4);
    CHECK_EQ_U(c.cpu_ops, 3);
    CHECK_EQ_U(c.gpu_ops, 1);
    CHECK_EQ_U(c.bad_lines, 0);
    CHECK(c.problem == NULL && c.unavailable == NULL);
    CHECK_EQ_U(c.nnames, 3); /* aten::addmm interned once */
    CHECK_EQ_U(c.ops[0].name, c.ops[3].name);
    CHECK(!strcmp(c.names[c.ops[1].name], "autograd::engine::evaluate_function: Add\tBackward0"));
    CHECK_EQ_I(c.ops[1].tid, -2);
    CHECK_EQ_U(c.ops[2].gpu, 1);
    CHECK_EQ_U(c.ops[0].self_ns, 700);
    sps__torch_capture_free(&c);
}

static void test_malformed_lines_are_skipped(void) {
    static const char text[] = "stepscope-torch-ops 1\n"
                               "pid\t7\n"
                               "tid\t7\n"
                               "window\t3\t5\n"
                               "op\t10\t20\t5\t7\tcpu\tgood::one\n"
                               "op\t30\tx\t5\t7\tcpu\tbad::end\n"
                               "op\t40\t30\t5\t7\tcpu\tbad::backwards\n"
                               "op\t50\t60\t5\t7\ttpu\tbad::device\n"
                               "op\t50\t60\t5\t7\tcpu\n"
                               "window\t9\n"
                               "op\t70\t80\t5\t7\tcpu\tgood::two\n"
                               "end\t6\n";
    struct sps_torch_capture c;
    char err[256];
    CHECK_EQ_I(parse(text, &c, err, sizeof err), 0);
    CHECK_EQ_U(c.nops, 2);
    CHECK(!strcmp(c.names[c.ops[0].name], "good::one"));
    CHECK(!strcmp(c.names[c.ops[1].name], "good::two"));
    CHECK_EQ_U(c.bad_lines, 5);
    CHECK(c.problem && !strcmp(c.problem, "line 6: an op's start and end are not ns with start <= end"));
    CHECK_EQ_U(c.first_step, 3); /* the bad window line kept the good one */
    CHECK_EQ_U(c.end_step, 5);
    sps__torch_capture_free(&c);
}

/* A line holding a NUL byte is not text: skipped as malformed.  An op
 * name with one was interned cut at the NUL, and the second op of that
 * name read past the cut copy (found by fuzz/fuzz_torch_ops.c). */
static void test_nul_byte_in_a_line(void) {
    static const char text[] = "stepscope-torch-ops 1\n"
                               "pid\t7\n"
                               "op\t10\t20\t5\t7\tcpu\tgood::one\n"
                               "op\t30\t40\t5\t7\tcpu\taten::mm\0tail\n"
                               "op\t50\t60\t5\t7\tcpu\taten::mm\0tail\n"
                               "end\t3\n";
    struct sps_torch_capture c;
    char err[256] = "";
    CHECK_EQ_I(sps__torch_ops_parse(text, sizeof text - 1, "t.tsv", &c, err, sizeof err), 0);
    CHECK_EQ_U(c.nops, 1);
    CHECK_EQ_U(c.nnames, 1);
    CHECK_EQ_U(c.bad_lines, 2);
    CHECK(c.problem && !strcmp(c.problem, "line 4: a NUL byte in the line"));
    sps__torch_capture_free(&c);
}

static void test_bad_files(void) {
    static const struct {
        const char *text, *error;
    } cases[] = {
        {"stepscope-torch-ops 2\npid\t1\nend\t0\n", "t.tsv: line 1: not a torch-ops file (it begins \"stepscope-torch-ops 1\")"},
        {"stepscope-torch-ops 1\npid\t1\nop\t1\t2\t1\t1\tcpu\ta\n", "t.tsv: line 3: truncated (no end line)"},
        {"stepscope-torch-ops 1\npid\t1\nop\t1\t2\t1\t1\tcpu\ta", "t.tsv: line 3: truncated (no end of line)"},
        {"stepscope-torch-ops 1\ntid\t1\nend\t0\n", "t.tsv: no pid line"},
        {"stepscope-torch-ops 1\npid\t1\nop\t1\t2\t1\t1\tcpu\ta\nend\t3\n", "t.tsv: 1 op lines, the end line says 3"},
        {"stepscope-torch-ops 1\npid\t1\nend\t0\nop\t1\t2\t1\t1\tcpu\ta\n", "t.tsv: line 4: a line after the end line"},
        {"", "t.tsv: empty"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct sps_torch_capture c;
        char err[256];
        CHECK_EQ_I(parse(cases[k].text, &c, err, sizeof err), SPS_EFORMAT);
        CHECK_MSG(!strcmp(err, cases[k].error), "case %zu: \"%s\", want \"%s\"", k, err, cases[k].error);
        sps__torch_capture_free(&c);
    }
}

static void test_load_dir(void) {
    char dir[] = "/tmp/sps_torch_opsXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char a[128], b[128], other[128];
    snprintf(a, sizeof a, "%s/torch-ops-4242.tsv", dir);
    snprintf(b, sizeof b, "%s/torch-ops-99.tsv", dir);
    snprintf(other, sizeof other, "%s/torch-ops-1.tsv.tmp", dir); /* a writer's temporary: not read */
    write_file(a, good, strlen(good));
    write_file(b, "stepscope-torch-ops 1\npid\t99\n", strlen("stepscope-torch-ops 1\npid\t99\n"));
    write_file(other, "junk", strlen("junk"));
    struct sps_run run = {0};
    char err[256];
    CHECK_EQ_I(sps__run_load_dir(&run, dir, err, sizeof err), 0);
    CHECK_EQ_U(run.nprocs, 0);
    CHECK_EQ_U(run.ntorch, 1);
    CHECK(run.ntorch == 1 && run.torch[0].pid == 4242 && run.torch[0].nops == 4);
    CHECK_EQ_U(run.nskipped, 1);
    if (run.nskipped == 1) {
        CHECK_STR_HAS(run.skipped[0].path, "torch-ops-99.tsv");
        CHECK_STR_HAS(run.skipped[0].error, "torch-ops-99.tsv: line 2: truncated (no end line)");
    }
    CHECK(sps__is_torch_ops_name("torch-ops-5.tsv") && !sps__is_torch_ops_name("torch-ops-5.tsv.tmp") &&
          !sps__is_torch_ops_name("5.sps"));
    sps__run_free(&run);
    unlink(a);
    unlink(b);
    unlink(other);
    rmdir(dir);
}

/* One process (pid 100, thread 100): step 0 [500, 3000] holding forward
 * [1000, 2000]; step 1 [4000, 5000]. */
static void hand_built_run(struct sps_run *run, struct sps_process_data *p, struct sps_thread_data *t,
                           struct sps_name_info names[2], long summary_of[2], struct sps_name_summary sums[2],
                           struct sps_step_row rows[2], struct sps_event zones[1], struct sps_event steps[2]) {
    memset(run, 0, sizeof *run);
    memset(p, 0, sizeof *p);
    memset(t, 0, sizeof *t);
    memset(names, 0, 2 * sizeof *names);
    memset(sums, 0, 2 * sizeof *sums);
    strcpy(names[0].name, "step");
    names[0].kind = SPS_KIND_STEP;
    strcpy(names[1].name, "forward");
    names[1].kind = SPS_KIND_ZONE;
    sums[0] = (struct sps_name_summary){.name = "step", .kind = SPS_KIND_STEP};
    sums[1] = (struct sps_name_summary){.name = "forward", .kind = SPS_KIND_ZONE};
    summary_of[0] = 0;
    summary_of[1] = 1;
    zones[0] = (struct sps_event){.start_ns = 1000, .end_ns = 2000, .name = 2, .depth = 2, .kind = SPS_KIND_ZONE};
    steps[0] = (struct sps_event){.start_ns = 500, .end_ns = 3000, .name = 1, .depth = 1, .kind = SPS_KIND_STEP};
    steps[1] = (struct sps_event){.seq = 1, .start_ns = 4000, .end_ns = 5000, .name = 1, .depth = 1,
                                  .kind = SPS_KIND_STEP};
    t->tid = 100;
    t->events[SPS_RING_ZONES] = zones;
    t->nevents[SPS_RING_ZONES] = 1;
    t->events[SPS_RING_STEPS] = steps;
    t->nevents[SPS_RING_STEPS] = 2;
    p->pid = 100;
    p->nnames = 2;
    p->names = names;
    p->summary_of = summary_of;
    p->nthreads = 1;
    p->threads = t;
    rows[0] = (struct sps_step_row){.index = 0, .tid = 100, .name = 0, .start_ns = 500, .end_ns = 3000};
    rows[1] = (struct sps_step_row){.index = 1, .tid = 100, .name = 0, .start_ns = 4000, .end_ns = 5000};
    run->nprocs = 1;
    run->procs = p;
    run->nnames = 2;
    run->names = sums;
    run->nsteps = 2;
    run->steps = rows;
}

static void test_attribution(void) {
    static const char text[] = "stepscope-torch-ops 1\n"
                               "pid\t100\n"
                               "tid\t100\n"
                               "window\t0\t1\n"
                               "align_error_ns\t50\n"
                               "op\t1010\t1500\t400\t100\tcpu\taten::addmm\n"   /* forward */
                               "op\t980\t1990\t30\t100\tcpu\taten::linear\n"   /* forward, 20 ns early */
                               "op\t1600\t1700\t200\t100\tcpu\taten::addmm\n"  /* forward */
                               "op\t2100\t2500\t90\t100\tcpu\taten::mse_loss\n" /* the step */
                               "op\t3500\t3600\t10\t100\tcpu\taten::zero_\n"    /* between steps: no zone */
                               "op\t1100\t1200\t70\t-3\tcpu\tAddmmBackward0\n"  /* another thread: no zone */
                               "op\t1100\t1900\t800\t0\tgpu\tgemm\n"            /* a kernel: not ranked */
                               "end\t7\n";
    struct sps_run run;
    struct sps_process_data p;
    struct sps_thread_data t;
    struct sps_name_info names[2];
    long summary_of[2];
    struct sps_name_summary sums[2];
    struct sps_step_row rows[2];
    struct sps_event zones[1], steps[2];
    hand_built_run(&run, &p, &t, names, summary_of, sums, rows, zones, steps);
    struct sps_torch_capture c;
    char err[256];
    CHECK_EQ_I(parse(text, &c, err, sizeof err), 0);
    run.torch = &c;
    run.ntorch = 1;
    CHECK_EQ_I(sps__run_torch_build(&run), 0);
    CHECK_EQ_U(c.start_ns, 500);
    CHECK_EQ_U(c.end_ns, 3000);
    CHECK_NEAR(c.window_step_mean_s, 2500e-9, 1e-15);
    CHECK_NEAR(c.other_step_median_s, 1000e-9, 1e-15);
    /* the early operator was moved inside its zone */
    CHECK_EQ_U(c.ops[1].start_ns, 1000);
    CHECK_EQ_U(c.ops[1].end_ns, 1990);
    /* zones by their total: forward 630 ns, none 80, step 90 -> forward, step, none */
    CHECK_EQ_U(c.ntops, 5);
    if (c.ntops == 5) {
        CHECK(c.tops[0].zone && !strcmp(c.tops[0].zone, "forward") && !strcmp(c.tops[0].op, "aten::addmm"));
        CHECK_EQ_U(c.tops[0].count, 2);
        CHECK_NEAR(c.tops[0].self_s, 600e-9, 1e-15);
        CHECK(!strcmp(c.tops[1].op, "aten::linear") && !strcmp(c.tops[1].zone, "forward"));
        CHECK(c.tops[2].zone && !strcmp(c.tops[2].zone, "step") && !strcmp(c.tops[2].op, "aten::mse_loss"));
        CHECK(c.tops[3].zone == NULL && !strcmp(c.tops[3].op, "AddmmBackward0"));
        CHECK(c.tops[4].zone == NULL && !strcmp(c.tops[4].op, "aten::zero_"));
    }
    sps__torch_capture_free(&c);
}

/* Whether two intervals nest or lie apart: what one trace.json track
 * needs of its complete events (or it leaves one out). */
static int nest_or_apart(uint64_t s1, uint64_t e1, uint64_t s2, uint64_t e2) {
    return e1 <= s2 || e2 <= s1 || (s1 <= s2 && e2 <= e1) || (s2 <= s1 && e1 <= e2);
}

/* Every operator of the capture's thread nests with every other one on its
 * thread and with the zones and steps of the hand-built run. */
static void check_one_timeline(const struct sps_torch_capture *c, const struct sps_event *zones, size_t nzones,
                               const struct sps_event *steps, size_t nsteps) {
    for (size_t i = 0; i < c->nops; i++) {
        const struct sps_torch_op *a = &c->ops[i];
        CHECK(a->start_ns <= a->end_ns);
        for (size_t j = i + 1; j < c->nops; j++) {
            const struct sps_torch_op *b = &c->ops[j];
            if (a->tid == b->tid && !a->gpu && !b->gpu &&
                !nest_or_apart(a->start_ns, a->end_ns, b->start_ns, b->end_ns)) {
                fprintf(stderr, "ops %zu [%llu, %llu] and %zu [%llu, %llu] cross\n", i,
                        (unsigned long long)a->start_ns, (unsigned long long)a->end_ns, j,
                        (unsigned long long)b->start_ns, (unsigned long long)b->end_ns);
                CHECK(0);
            }
        }
        if (a->tid != c->tid || a->gpu)
            continue;
        for (size_t k = 0; k < nzones; k++)
            CHECK(nest_or_apart(a->start_ns, a->end_ns, zones[k].start_ns, zones[k].end_ns));
        for (size_t k = 0; k < nsteps; k++)
            CHECK(nest_or_apart(a->start_ns, a->end_ns, steps[k].start_ns, steps[k].end_ns));
    }
}

/* The top row of zone (NULL: none) for op, or NULL. */
static const struct sps_torch_top *top_row(const struct sps_torch_capture *c, const char *zone, const char *op) {
    for (size_t k = 0; k < c->ntops; k++)
        if ((zone ? c->tops[k].zone && !strcmp(c->tops[k].zone, zone) : !c->tops[k].zone) &&
            !strcmp(c->tops[k].op, op))
            return &c->tops[k];
    return NULL;
}

/* torch 1.13 ends an operator at its whole-us start plus its whole-us
 * duration, so a child can end up to 1 us after its parent: the case of a
 * loaded run's trace.json (aten::linear [703, 728] us holding aten::addmm
 * [712, 729], whose own children lie inside both), where the crossing
 * addmm was left out of the trace as overlapping.  It now ends with its
 * parent; one mostly after another begins where that one ends; both stay
 * in their zone's table. */
static void test_operators_made_to_nest(void) {
    static const char text[] = "stepscope-torch-ops 1\n"
                               "pid\t100\n"
                               "tid\t100\n"
                               "window\t0\t1\n"
                               "align_error_ns\t50\n"
                               "op\t1030\t1280\t250\t100\tcpu\taten::linear\n"
                               "op\t1120\t1290\t170\t100\tcpu\taten::addmm\n" /* past its parent by 10 */
                               "op\t1200\t1210\t10\t100\tcpu\taten::expand\n"
                               "op\t1220\t1240\t20\t100\tcpu\taten::copy_\n"
                               "op\t1400\t1600\t200\t100\tcpu\taten::relu\n"
                               "op\t1580\t1900\t320\t100\tcpu\taten::sum\n"  /* mostly after relu */
                               "op\t1580\t1590\t10\t100\tcpu\taten::empty\n" /* inside both */
                               "op\t1100\t1200\t70\t-3\tcpu\tAddmmBackward0\n"
                               "op\t1150\t1250\t70\t-3\tcpu\tMmBackward0\n"  /* another thread, crossing */
                               "end\t9\n";
    struct sps_run run;
    struct sps_process_data p;
    struct sps_thread_data t;
    struct sps_name_info names[2];
    long summary_of[2];
    struct sps_name_summary sums[2];
    struct sps_step_row rows[2];
    struct sps_event zones[1], steps[2];
    hand_built_run(&run, &p, &t, names, summary_of, sums, rows, zones, steps);
    struct sps_torch_capture c;
    char err[256];
    CHECK_EQ_I(parse(text, &c, err, sizeof err), 0);
    run.torch = &c;
    run.ntorch = 1;
    CHECK_EQ_I(sps__run_torch_build(&run), 0);
    CHECK_EQ_U(c.ops[1].start_ns, 1120);
    CHECK_EQ_U(c.ops[1].end_ns, 1280); /* ends with aten::linear */
    CHECK_EQ_U(c.ops[5].start_ns, 1600); /* begins where aten::relu ends */
    CHECK_EQ_U(c.ops[5].end_ns, 1900);
    CHECK_EQ_U(c.ops[6].start_ns, 1580); /* inside relu, left alone */
    CHECK_EQ_U(c.ops[6].end_ns, 1590);
    CHECK_EQ_U(c.ops[8].start_ns, 1150);
    CHECK_EQ_U(c.ops[8].end_ns, 1200); /* the other thread's track nests too */
    check_one_timeline(&c, zones, 1, steps, 2);
    const struct sps_torch_top *addmm = top_row(&c, "forward", "aten::addmm");
    CHECK(addmm && addmm->count == 1);
    CHECK(addmm && addmm->self_s > 169e-9 && addmm->self_s < 171e-9); /* its self time is torch's */
    CHECK(top_row(&c, "forward", "aten::sum") != NULL);
    CHECK(top_row(&c, NULL, "MmBackward0") != NULL);
    sps__torch_capture_free(&c);
}

/* Operators that cross a zone's edge by more than the alignment bound (a
 * preempted sync bracket leaves the clocks further apart than it says):
 * one mostly in forward belongs to forward (it used to go to the step
 * around it and cross forward's start in the trace); one mostly before
 * forward belongs to the step and is cut back to forward's start; one
 * between the steps that runs into step 1 belongs to no zone and is cut
 * back to the step's start. */
static void test_operators_across_a_zone_edge(void) {
    static const char text[] = "stepscope-torch-ops 1\n"
                               "pid\t100\n"
                               "tid\t100\n"
                               "window\t0\t1\n"
                               "align_error_ns\t50\n"
                               "op\t900\t1500\t600\t100\tcpu\taten::addmm\n"     /* 100 before forward, 500 in */
                               "op\t700\t1100\t400\t100\tcpu\taten::randn\n"     /* 300 before, 100 in */
                               "op\t1990\t2100\t110\t100\tcpu\taten::mse_loss\n" /* 10 in, 100 after */
                               "op\t3900\t4050\t150\t100\tcpu\taten::zero_\n"    /* between steps, 50 into step 1 */
                               "end\t4\n";
    struct sps_run run;
    struct sps_process_data p;
    struct sps_thread_data t;
    struct sps_name_info names[2];
    long summary_of[2];
    struct sps_name_summary sums[2];
    struct sps_step_row rows[2];
    struct sps_event zones[1], steps[2];
    hand_built_run(&run, &p, &t, names, summary_of, sums, rows, zones, steps);
    struct sps_torch_capture c;
    char err[256];
    CHECK_EQ_I(parse(text, &c, err, sizeof err), 0);
    run.torch = &c;
    run.ntorch = 1;
    CHECK_EQ_I(sps__run_torch_build(&run), 0);
    CHECK_EQ_U(c.ops[0].start_ns, 1000);
    CHECK_EQ_U(c.ops[0].end_ns, 1500);
    CHECK_EQ_U(c.ops[1].start_ns, 700);
    CHECK_EQ_U(c.ops[1].end_ns, 1000);
    CHECK_EQ_U(c.ops[2].start_ns, 2000);
    CHECK_EQ_U(c.ops[2].end_ns, 2100);
    CHECK_EQ_U(c.ops[3].start_ns, 3900);
    CHECK_EQ_U(c.ops[3].end_ns, 4000);
    check_one_timeline(&c, zones, 1, steps, 2);
    CHECK(top_row(&c, "forward", "aten::addmm") != NULL);
    CHECK(top_row(&c, "step", "aten::randn") != NULL);
    CHECK(top_row(&c, "step", "aten::mse_loss") != NULL);
    CHECK(top_row(&c, NULL, "aten::zero_") != NULL);
    CHECK_EQ_U(c.ntops, 4);
    sps__torch_capture_free(&c);
}

int main(void) {
    RUN_TEST(test_good_file);
    RUN_TEST(test_malformed_lines_are_skipped);
    RUN_TEST(test_nul_byte_in_a_line);
    RUN_TEST(test_bad_files);
    RUN_TEST(test_load_dir);
    RUN_TEST(test_attribution);
    RUN_TEST(test_operators_made_to_nest);
    RUN_TEST(test_operators_across_a_zone_edge);
    return check_report();
}
