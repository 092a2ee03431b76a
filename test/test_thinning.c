/*
 * test_thinning.c - the recorder's side of the overhead guard: the thin
 * level written into the record header (as `stepscope run --max-overhead`
 * writes it, from outside) is picked up at step ends and every
 * SPS_THIN_POLL_EVENTS zones; zones deeper than it allows below their
 * innermost step are not recorded and are counted exactly; steps and
 * micro-steps always are; a fork child inherits the level; the 32-bit
 * per-thread count carries into the header.  Memory mode, read back
 * through the real reader.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "record_format.h"
#include "recorder.h"
#include "stepscope.h"
#include "support.h"

/* This process's record, writable: the guard writes the header from
 * another process through the file; in memory mode the test is that
 * other writer. */
static struct sps_rec_header *own_header(void) {
    const void *base;
    size_t size;
    char label[512];
    if (sps__recorder_snapshot(&base, &size, label, sizeof label) != 0) {
        fprintf(stderr, "this process has no record\n");
        exit(1);
    }
    return (struct sps_rec_header *)(uintptr_t)base;
}

static struct sps_rec_thread *own_segment(void) {
    struct sps_rec_header *h = own_header();
    const uint64_t *dir = (const uint64_t *)((unsigned char *)h + h->threads_off);
    return (struct sps_rec_thread *)((unsigned char *)h + dir[0]);
}

static void set_level(uint32_t level) {
    __atomic_store_n(&own_header()->thin_level, level, __ATOMIC_RELAXED);
}

/* A step with nothing in it: its end is where the thread rereads the level. */
static void empty_step(void) {
    SPS_STEP();
}

struct counts {
    uint64_t step, microstep, data, forward, layer, kernel, eval, batch, epoch, decode, top, inner;
    uint64_t thinned;
    uint32_t level;
};

static uint64_t count_of(const struct sps_run *run, const char *name, uint32_t kind) {
    long i = sps__run_find(run, name, kind);
    return i < 0 ? 0 : run->names[i].agg.count;
}

static struct counts read_counts(void) {
    struct sps_run run;
    run_of_this_process(&run);
    struct counts c = {
        .step = count_of(&run, "step", SPS_KIND_STEP),
        .microstep = count_of(&run, "microstep", SPS_KIND_MICROSTEP),
        .data = count_of(&run, "data", SPS_KIND_ZONE),
        .forward = count_of(&run, "forward", SPS_KIND_ZONE),
        .layer = count_of(&run, "layer", SPS_KIND_ZONE),
        .kernel = count_of(&run, "kernel", SPS_KIND_ZONE),
        .eval = count_of(&run, "eval", SPS_KIND_ZONE),
        .batch = count_of(&run, "batch", SPS_KIND_ZONE),
        .epoch = count_of(&run, "epoch", SPS_KIND_ZONE),
        .decode = count_of(&run, "decode", SPS_KIND_ZONE),
        .top = count_of(&run, "top", SPS_KIND_ZONE),
        .inner = count_of(&run, "inner", SPS_KIND_ZONE),
        .thinned = run.procs[0].zones_thinned,
        .level = run.procs[0].thin_level,
    };
    /* thinned children's time is their parent's self time, so the
     * parent's total still splits exactly into self + recorded children */
    long f = sps__run_find(&run, "forward", SPS_KIND_ZONE), l = sps__run_find(&run, "layer", SPS_KIND_ZONE);
    if (f >= 0 && l >= 0)
        CHECK_EQ_U(run.names[f].agg.self_ns + run.names[l].agg.total_ns, run.names[f].agg.total_ns);
    sps__run_free(&run);
    return c;
}

/* One training step: data, then forward with three layers of one kernel. */
static void training_step(void) {
    SPS_STEP();
    {
        SPS_ZONE("data");
    }
    SPS_ZONE("forward");
    for (int k = 0; k < 3; k++) {
        SPS_ZONE("layer");
        SPS_ZONE("kernel");
    }
}

static void test_nothing_thinned_by_default(void) {
    for (int i = 0; i < 2; i++)
        training_step();
    struct counts c = read_counts();
    CHECK_EQ_U(c.step, 2);
    CHECK_EQ_U(c.layer, 6);
    CHECK_EQ_U(c.kernel, 6);
    CHECK_EQ_U(c.thinned, 0);
    CHECK_EQ_U(c.level, SPS_THIN_NONE);
}

static void test_phases_level(void) {
    struct counts before = read_counts();
    set_level(SPS_THIN_PHASES);
    empty_step(); /* the thread sees the level from this step's end on */
    for (int i = 0; i < 10; i++)
        training_step();
    /* outside any step: the outermost zone stays, its child goes */
    for (int i = 0; i < 4; i++) {
        SPS_ZONE("eval");
        SPS_ZONE("batch");
    }
    /* a step inside a zone: depth counts from the step */
    {
        SPS_ZONE("epoch");
        for (int i = 0; i < 5; i++) {
            SPS_STEP();
            SPS_ZONE("data");
            SPS_ZONE("decode");
        }
    }
    struct counts c = read_counts();
    CHECK_EQ_U(c.level, SPS_THIN_PHASES);
    CHECK_EQ_U(c.step - before.step, 1 + 10 + 5);
    CHECK_EQ_U(c.data - before.data, 10 + 5);
    CHECK_EQ_U(c.forward - before.forward, 10);
    CHECK_EQ_U(c.layer - before.layer, 0);
    CHECK_EQ_U(c.kernel - before.kernel, 0);
    CHECK_EQ_U(c.eval, 4);
    CHECK_EQ_U(c.batch, 0);
    CHECK_EQ_U(c.epoch, 1);
    CHECK_EQ_U(c.decode, 0);
    /* exactly what was left out: 10 x (3 layers + 3 kernels), 4 batches, 5 decodes */
    CHECK_EQ_U(c.thinned - before.thinned, 60 + 4 + 5);
}

static void test_steps_level(void) {
    struct counts before = read_counts();
    set_level(SPS_THIN_STEPS);
    empty_step();
    for (int i = 0; i < 3; i++) {
        SPS_STEP();
        for (int m = 0; m < 2; m++) {
            SPS_MICROSTEP();
            SPS_ZONE("data");
        }
    }
    {
        SPS_ZONE("eval"); /* outermost, but not a step */
    }
    struct counts c = read_counts();
    CHECK_EQ_U(c.level, SPS_THIN_STEPS);
    CHECK_EQ_U(c.step - before.step, 1 + 3);
    CHECK_EQ_U(c.microstep - before.microstep, 6);
    CHECK_EQ_U(c.data - before.data, 0);
    CHECK_EQ_U(c.eval - before.eval, 0);
    CHECK_EQ_U(c.thinned - before.thinned, 6 + 1);
}

static void test_back_to_none(void) {
    struct counts before = read_counts();
    set_level(SPS_THIN_NONE);
    empty_step();
    training_step();
    struct counts c = read_counts();
    CHECK_EQ_U(c.layer - before.layer, 3);
    CHECK_EQ_U(c.kernel - before.kernel, 3);
    CHECK_EQ_U(c.thinned, before.thinned);
}

/* A thread that marks no steps rereads the level every
 * SPS_THIN_POLL_EVENTS zones of a ring. */
static void test_poll_without_steps(void) {
    struct counts before = read_counts();
    set_level(SPS_THIN_PHASES);
    for (unsigned i = 0; i < SPS_THIN_POLL_EVENTS; i++) {
        SPS_ZONE("top");
    }
    for (int i = 0; i < 7; i++) {
        SPS_ZONE("top");
        SPS_ZONE("inner");
    }
    struct counts c = read_counts();
    CHECK_EQ_U(c.top - before.top, SPS_THIN_POLL_EVENTS + 7);
    CHECK_EQ_U(c.inner - before.inner, 0);
    CHECK_EQ_U(c.thinned - before.thinned, 7);
}

/* The per-thread 32-bit count carries into the header's 64-bit one
 * before it wraps; the reader adds both. */
static void test_count_carries(void) {
    struct counts before = read_counts();
    struct sps_rec_thread *seg = own_segment();
    uint64_t header_before = own_header()->zones_thinned;
    uint32_t seg_before = seg->zones_thinned;
    seg->zones_thinned = (1u << 31) - 2; /* as if 2^31 - 2 had been thinned */
    uint64_t added = (uint64_t)(1u << 31) - 2 - seg_before;
    for (int i = 0; i < 3; i++) {
        SPS_ZONE("top");
        SPS_ZONE("inner");
    }
    CHECK_EQ_U(own_header()->zones_thinned, header_before + (1u << 31));
    CHECK_EQ_U(seg->zones_thinned, 1);
    struct counts c = read_counts();
    CHECK_EQ_U(c.thinned, before.thinned + added + 3);
}

/* A worker forked while the guard thins starts thinning at once. */
static void test_fork_child_inherits(void) {
    set_level(SPS_THIN_STEPS);
    own_header()->thin_since_mono_ns = 12345;
    empty_step();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        {
            SPS_ZONE("child_zone");
        }
        empty_step();
        struct sps_run run;
        run_of_this_process(&run);
        int ok = run.procs[0].thin_level == SPS_THIN_STEPS && run.procs[0].thin_since_ns == 12345 &&
                 count_of(&run, "child_zone", SPS_KIND_ZONE) == 0 && count_of(&run, "step", SPS_KIND_STEP) == 1 &&
                 run.procs[0].zones_thinned == 1;
        sps__run_free(&run);
        _exit(ok ? 0 : 3);
    }
    CHECK(pid > 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

int main(void) {
    unsetenv("STEPSCOPE_RUN_DIR");
    unsetenv("STEPSCOPE_OUT");
    unsetenv("STEPSCOPE_DISABLE");
    RUN_TEST(test_nothing_thinned_by_default);
    RUN_TEST(test_phases_level);
    RUN_TEST(test_steps_level);
    RUN_TEST(test_back_to_none);
    RUN_TEST(test_poll_without_steps);
    RUN_TEST(test_count_carries);
    RUN_TEST(test_fork_child_inherits);
    return check_report();
}
