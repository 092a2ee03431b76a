/*
 * test_fork.c - a fork child gets a record of its own in the run directory
 * (names carried over, the zone open across the fork ended in the child
 * counted in the child), and the parent's record is untouched by it.
 */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "stepscope.h"
#include "support.h"

static uint64_t proc_count(const struct sps_process_data *p, const char *name) {
    uint64_t n = 0;
    for (uint32_t id = 1; id <= p->nnames; id++)
        if (!strcmp(p->names[id - 1].name, name))
            for (uint32_t t = 0; t < p->nthreads; t++)
                n += p->threads[t].aggs[id - 1].count;
    return n;
}

/* One run directory for the whole binary: this process's record is
 * created once, on its first event. */
static char records[600];

static void test_fork_child_recorded_separately(void) {

    for (int i = 0; i < 5; i++) {
        SPS_ZONE("parent_work");
    }
    SPS_ZONE_BEGIN(around, "around_fork");
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 7; i++) {
            SPS_ZONE("child_work");
        }
        SPS_ZONE_END(around); /* begun in the parent, ended in the child */
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    SPS_ZONE_END(around);

    struct sps_run run = {0};
    char err[512];
    CHECK(sps__run_load_dir(&run, records, err, sizeof err) == 0);
    CHECK(sps__run_build(&run) == 0);
    CHECK_EQ_U(run.nprocs, 2); /* this process and its first child */
    CHECK_EQ_U(run.nskipped, 0);
    for (size_t i = 0; i < run.nskipped; i++)
        fprintf(stderr, "skipped: %s\n", run.skipped[i].error);
    const struct sps_process_data *parent = NULL, *child = NULL;
    for (size_t i = 0; i < run.nprocs; i++) {
        if (run.procs[i].pid == getpid())
            parent = &run.procs[i];
        if (run.procs[i].pid == pid)
            child = &run.procs[i];
    }
    CHECK(parent && child);
    if (parent && child) {
        CHECK_EQ_I(child->ppid, getpid());
        CHECK_EQ_U(proc_count(parent, "parent_work"), 5);
        CHECK_EQ_U(proc_count(parent, "child_work"), 0);
        CHECK_EQ_U(proc_count(parent, "around_fork"), 1);
        CHECK_EQ_U(proc_count(child, "child_work"), 7);
        CHECK_EQ_U(proc_count(child, "parent_work"), 0);
        /* the zone open across the fork is the parent's: the child ends it
         * (its end matches) but does not count it a second time */
        CHECK_EQ_U(proc_count(child, "around_fork"), 0);
        CHECK(child->closed); /* exit() ran the handler */
        CHECK_EQ_U(child->threads[0].mismatched_ends, 0);
        CHECK_EQ_U(child->threads[0].dropped[SPS_RING_ZONES], 0);
        CHECK_EQ_U(child->threads[0].nevents[SPS_RING_ZONES], 7);
    }
    long cw = sps__run_find(&run, "child_work", SPS_KIND_ZONE);
    CHECK(cw >= 0 && run.names[cw].agg.count == 7);
    long af = sps__run_find(&run, "around_fork", SPS_KIND_ZONE);
    CHECK(af >= 0 && run.names[af].agg.count == 1);
    sps__run_free(&run);
}

/* A step open across fork(): counted once (by the parent), and the child's
 * own steps are numbered from 0. */
static void test_step_open_across_fork(void) {
    pid_t pid;
    {
        SPS_STEP();
        pid = fork();
        if (pid == 0) {
            for (int i = 0; i < 3; i++) {
                SPS_STEP_NAMED("child_step");
            }
        }
    } /* the child ends the inherited step here too */
    if (pid == 0)
        exit(0);
    int status;
    waitpid(pid, &status, 0);
    struct sps_run run = {0};
    char err[512];
    CHECK(sps__run_load_dir(&run, records, err, sizeof err) == 0);
    CHECK(sps__run_build(&run) == 0);
    long step = sps__run_find(&run, "step", SPS_KIND_STEP);
    long child_step = sps__run_find(&run, "child_step", SPS_KIND_STEP);
    CHECK(step >= 0 && run.names[step].agg.count == 1);
    CHECK(child_step >= 0 && run.names[child_step].agg.count == 3);
    CHECK_EQ_U(run.nsteps, 4);
    int child_rows = 0;
    for (size_t i = 0; i < run.nsteps; i++) {
        if (run.steps[i].name != child_step)
            continue;
        CHECK_EQ_U(run.steps[i].index, (uint64_t)child_rows);
        child_rows++;
    }
    CHECK_EQ_I(child_rows, 3);
    for (size_t i = 0; i < run.nprocs; i++)
        if (run.procs[i].pid == pid) {
            CHECK_EQ_U(run.procs[i].threads[0].dropped[SPS_RING_STEPS], 0);
            CHECK_EQ_U(run.procs[i].threads[0].nopen, 0);
        }
    sps__run_free(&run);
}

/* Programs that close every descriptor (daemons, some launchers) and then
 * open files of their own must never have those files touched by the
 * recorder, which keeps its record file open. */
static void test_closed_descriptors_are_left_alone(void) {
    const char *victim_dir = tmpdir_new("victim");
    char victim[700];
    snprintf(victim, sizeof victim, "%s/victim.dat", victim_dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* in a fork child: its first event opens a record of its own */
        { SPS_ZONE("before_close"); }
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (write(fd, "0123456789", 10) != 10)
            _exit(3);
        /* new names make the recorder reserve more of its file */
        static const char *names[] = {"after_close_1", "after_close_2", "after_close_3"};
        for (int i = 0; i < 3; i++)
            sps_zone_end(sps_zone_begin(sps_site_get(names[i], SPS_KIND_ZONE)));
        close(fd);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat st;
    CHECK(stat(victim, &st) == 0 && st.st_size == 10);
    struct sps_run run = {0};
    char err[512];
    CHECK(sps__run_load_dir(&run, records, err, sizeof err) == 0);
    CHECK(sps__run_build(&run) == 0);
    CHECK_EQ_U(run.nskipped, 0);
    long a3 = sps__run_find(&run, "after_close_3", SPS_KIND_ZONE);
    CHECK(a3 >= 0 && run.names[a3].agg.count == 1);
    sps__run_free(&run);
}

int main(void) {
    const char *dir = tmpdir_new("fork");
    snprintf(records, sizeof records, "%s/records", dir);
    setenv("STEPSCOPE_RUN_DIR", dir, 1);
    RUN_TEST(test_fork_child_recorded_separately);
    RUN_TEST(test_step_open_across_fork);
    RUN_TEST(test_closed_descriptors_are_left_alone);
    return check_report();
}
