/*
 * test_threads.c - eight threads recording at once: every thread gets its
 * own segment and the counts are exact, per thread and merged.  Built under
 * ThreadSanitizer in CI.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "support.h"
#include "model/run.h"
#include "stepscope.h"

enum { THREADS = 8, ITERATIONS = 20000 };

static pthread_barrier_t start;

static void *worker(void *arg) {
    long me = (long)arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%ld", me);
    sps_thread_name(name);
    pthread_barrier_wait(&start);
    for (int i = 0; i < ITERATIONS; i++) {
        SPS_ZONE("thread_work");
        if (i % 4 == 0) {
            SPS_ZONE("thread_inner");
        }
        SPS_COUNT("thread_items", 1);
    }
    SPS_VALUE("thread_id", (double)me);
    return NULL;
}

static void test_eight_threads_exact_counts(void) {
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);

    struct sps_run run;
    run_of_this_process(&run);

    const struct sps_process_data *proc = &run.procs[0];
    CHECK_EQ_U(proc->nthreads, THREADS);
    int tids_distinct = 1, names_ok = 1, exited = 0;
    for (uint32_t i = 0; i < proc->nthreads; i++) {
        const struct sps_thread_data *th = &proc->threads[i];
        exited += th->exited;
        if (strncmp(th->name, "worker-", 7) != 0)
            names_ok = 0;
        for (uint32_t k = 0; k < i; k++)
            if (proc->threads[k].tid == th->tid)
                tids_distinct = 0;
        /* per thread: exactly ITERATIONS outer zones */
        for (uint32_t id = 1; id <= proc->nnames; id++) {
            if (!strcmp(proc->names[id - 1].name, "thread_work"))
                CHECK_EQ_U(th->aggs[id - 1].count, ITERATIONS);
            if (!strcmp(proc->names[id - 1].name, "thread_inner"))
                CHECK_EQ_U(th->aggs[id - 1].count, ITERATIONS / 4);
        }
        CHECK_EQ_U(th->offered[SPS_RING_ZONES], ITERATIONS + ITERATIONS / 4);
        CHECK_EQ_U(th->mismatched_ends, 0);
    }
    CHECK(tids_distinct);
    CHECK(names_ok);
    CHECK_EQ_I(exited, THREADS);
    long w = sps__run_find(&run, "thread_work", SPS_KIND_ZONE);
    long c = sps__run_find(&run, "thread_items", SPS_KIND_COUNTER);
    long v = sps__run_find(&run, "thread_id", SPS_KIND_VALUE);
    CHECK(w >= 0 && c >= 0 && v >= 0);
    if (w >= 0 && c >= 0 && v >= 0) {
        CHECK_EQ_U(run.names[w].agg.count, (uint64_t)THREADS * ITERATIONS);
        CHECK_EQ_U(run.names[c].agg.total_ns, (uint64_t)THREADS * ITERATIONS);
        CHECK_EQ_U(run.names[v].agg.count, THREADS);
        CHECK(run.names[v].agg.sum == 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7);
    }
    sps__run_free(&run);
}

/* fork() while another thread keeps taking the library's lock: every
 * child must still record (a child that inherits a held lock hangs; the
 * alarm turns a hang into a failure instead of a stuck suite). */
static int stop_churn; /* atomic */
static void *churn_sites(void *arg) {
    (void)arg;
    char name[32];
    for (unsigned i = 0; !__atomic_load_n(&stop_churn, __ATOMIC_RELAXED); i++) {
        snprintf(name, sizeof name, "churn-%u", i % 64);
        sps_site_get(name, SPS_KIND_ZONE);
    }
    return NULL;
}

static void test_fork_while_lock_is_busy(void) {
    pthread_t t;
    pthread_create(&t, NULL, churn_sites, NULL);
    int ok = 0;
    for (int i = 0; i < 40; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(30);
            SPS_ZONE("in_child");
            sps_site_get("child-site", SPS_KIND_ZONE);
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    __atomic_store_n(&stop_churn, 1, __ATOMIC_RELAXED);
    pthread_join(t, NULL);
    CHECK_EQ_I(ok, 40);
}

/* Threads that come and go (one per request, per epoch): their segments
 * are reused, so 300 of them fit and the totals stay exact. */
static void *short_lived(void *arg) {
    (void)arg;
    for (int i = 0; i < 10; i++) {
        SPS_ZONE("short_lived_work");
    }
    return NULL;
}

static void test_thread_churn_keeps_exact_totals(void) {
    for (int i = 0; i < 300; i++) {
        pthread_t t;
        pthread_create(&t, NULL, short_lived, NULL);
        pthread_join(t, NULL);
    }
    struct sps_run run;
    run_of_this_process(&run);
    long w = sps__run_find(&run, "short_lived_work", SPS_KIND_ZONE);
    CHECK(w >= 0 && run.names[w].agg.count == 3000);
    uint64_t served = 0;
    for (uint32_t i = 0; i < run.procs[0].nthreads; i++)
        served += 1 + run.procs[0].threads[i].reuses;
    /* the workers of the first test and the 300 short-lived threads (the
     * main thread has recorded nothing here); new segments only when no
     * exited thread's was free */
    CHECK_EQ_U(served, THREADS + 300);
    CHECK_EQ_U(run.procs[0].nthreads, THREADS);
    CHECK_EQ_U(run.procs[0].threads_refused, 0);
    sps__run_free(&run);
}

int main(void) {
    unsetenv("STEPSCOPE_RUN_DIR");
    unsetenv("STEPSCOPE_OUT");
    RUN_TEST(test_eight_threads_exact_counts);
    RUN_TEST(test_fork_while_lock_is_busy);
    RUN_TEST(test_thread_churn_keeps_exact_totals);
    return check_report();
}
