/*
 * test_sites.c - names made at run time (sps_site_get) from several threads
 * at once: 200,000 distinct names each map to one site whatever thread asks
 * first, a name's id in the record is the same for every thread and stays
 * the same, and the report holds each name once with every thread's events;
 * past the record's name cap, a name is still one id, or the sink; a fork
 * child finds its parent's names under their ids.  Built
 * under ThreadSanitizer in CI (label threads).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "model/run.h"
#include "stepscope.h"
#include "support.h"

enum {
    THREADS = 8,
    MANY = 200000,   /* names through the site table only */
    RECORDED = 3000, /* names recorded, within the record's cap (4096) */
    OVER = 6000      /* names recorded after those: past the cap */
};

static char records[600];
static pthread_barrier_t start;

/* Name k of a set: "<prefix><k>". */
static void name_of(char *buf, size_t cap, const char *prefix, int k) {
    snprintf(buf, cap, "%s%d", prefix, k);
}

struct lookup_job {
    int me;
    struct sps_site **got; /* MANY, by name */
    int failures;
};

/* Every name, from this thread's own starting point, twice over: the second
 * pass must find the site the first one got. */
static void *look_up_all(void *arg) {
    struct lookup_job *job = arg;
    char name[32];
    pthread_barrier_wait(&start);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < MANY; i++) {
            int k = (i + job->me * (MANY / THREADS)) % MANY;
            name_of(name, sizeof name, "many_", k);
            struct sps_site *s = sps_site_get(name, SPS_KIND_ZONE);
            if (!s || (pass == 1 && s != job->got[k]))
                job->failures++;
            job->got[k] = s;
        }
    }
    return NULL;
}

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (struct sps_site *const *)a, y = (uintptr_t) * (struct sps_site *const *)b;
    return (x > y) - (x < y);
}

static void test_many_names_one_site_each(void) {
    struct lookup_job jobs[THREADS];
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        jobs[i].me = i;
        jobs[i].failures = 0;
        jobs[i].got = calloc(MANY, sizeof *jobs[i].got);
        pthread_create(&t[i], NULL, look_up_all, &jobs[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);

    int failures = 0, disagree = 0, wrong_name = 0;
    char name[32];
    for (int i = 0; i < THREADS; i++)
        failures += jobs[i].failures;
    for (int k = 0; k < MANY; k++) {
        for (int i = 1; i < THREADS; i++)
            disagree += jobs[i].got[k] != jobs[0].got[k];
        name_of(name, sizeof name, "many_", k);
        const struct sps_site *s = jobs[0].got[k];
        wrong_name += !s || strcmp(s->name, name) != 0 || s->kind != SPS_KIND_ZONE;
    }
    CHECK_EQ_I(failures, 0);
    CHECK_EQ_I(disagree, 0);
    CHECK_EQ_I(wrong_name, 0);
    /* distinct names, distinct sites */
    qsort(jobs[0].got, MANY, sizeof *jobs[0].got, cmp_ptr);
    int shared = 0;
    for (int k = 1; k < MANY; k++)
        shared += jobs[0].got[k] == jobs[0].got[k - 1];
    CHECK_EQ_I(shared, 0);
    /* the kind is part of the key; an existing name is found after all of them */
    struct sps_site *zone = sps_site_get("many_7", SPS_KIND_ZONE);
    struct sps_site *value = sps_site_get("many_7", SPS_KIND_VALUE);
    CHECK(zone && value && zone != value && value->kind == SPS_KIND_VALUE);
    CHECK(sps_site_get("many_7", SPS_KIND_VALUE) == value);
    for (int i = 0; i < THREADS; i++)
        free(jobs[i].got);
}

struct record_job {
    int me;
    const char *prefix;
    int count;
    uint32_t *first_id; /* count, by name: the id after this thread's first pass */
    int changed;
};

/* One value on each name of the set (a value's aggregate is small: 4096
 * zones' histograms from eight threads would fill the record), from this thread's own starting point,
 * twice over; the ids after each pass must agree. */
static void *record_all(void *arg) {
    struct record_job *job = arg;
    char name[32];
    pthread_barrier_wait(&start);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < job->count; i++) {
            int k = (i + job->me * (job->count / THREADS)) % job->count;
            name_of(name, sizeof name, job->prefix, k);
            struct sps_site *s = sps_site_get(name, SPS_KIND_VALUE);
            sps_value(s, (double)k);
            uint32_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
            if (pass == 0)
                job->first_id[k] = id;
            else if (job->first_id[k] != id)
                job->changed++;
        }
    }
    return NULL;
}

/* Each thread records a value twice on each of count names; returns the
 * ids the threads saw (count per thread, thread after thread). */
static uint32_t *record_from_threads(const char *prefix, int count) {
    struct record_job jobs[THREADS];
    pthread_t t[THREADS];
    uint32_t *ids = calloc((size_t)THREADS * (size_t)count, sizeof *ids);
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (struct record_job){i, prefix, count, ids + (size_t)i * (size_t)count, 0};
        pthread_create(&t[i], NULL, record_all, &jobs[i]);
    }
    int changed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        changed += jobs[i].changed;
    }
    pthread_barrier_destroy(&start);
    CHECK_EQ_I(changed, 0);
    return ids;
}

/* How many of run's names are name (kind value), and the count of the last. */
static int occurrences(const struct sps_run *run, const char *name, uint64_t *count) {
    int n = 0;
    for (size_t i = 0; i < run->nnames; i++)
        if (run->names[i].kind == SPS_KIND_VALUE && strcmp(run->names[i].name, name) == 0) {
            n++;
            *count = run->names[i].agg.count;
        }
    return n;
}

static void test_ids_stable_and_report_exact(void) {
    uint32_t *ids = record_from_threads("rec_", RECORDED);
    /* every thread saw the same id for a name; names have distinct ids */
    int disagree = 0, out_of_range = 0;
    char *seen = calloc(4096 + 2, 1);
    int reused = 0;
    for (int k = 0; k < RECORDED; k++) {
        uint32_t id = ids[k];
        for (int i = 1; i < THREADS; i++)
            disagree += ids[(size_t)i * RECORDED + (size_t)k] != id;
        if (id < 1 || id > 4096) {
            out_of_range++;
            continue;
        }
        reused += seen[id];
        seen[id] = 1;
    }
    CHECK_EQ_I(disagree, 0);
    CHECK_EQ_I(out_of_range, 0);
    CHECK_EQ_I(reused, 0);
    free(seen);
    free(ids);

    /* past the cap: a name is one id (all its events in one place) or the
     * sink (none reported), never two */
    free(record_from_threads("over_", OVER));

    /* another site of a recorded name (a static one, say) gets its id */
    struct sps_site *rec_5 = sps_site_get("rec_5", SPS_KIND_VALUE);
    struct sps_site again = {.name = "rec_5", .file = "", .func = "", .kind = SPS_KIND_VALUE};
    sps_value(&again, 5.0);
    CHECK(again.id != 0 && again.id == rec_5->id);

    struct sps_run run = {0};
    char err[512];
    CHECK(sps__run_load_dir(&run, records, err, sizeof err) == 0);
    CHECK(sps__run_build(&run) == 0);
    CHECK_EQ_U(run.nprocs, 1);
    char name[32];
    int wrong = 0, kept_over = 0, wrong_over = 0;
    for (int k = 0; k < RECORDED; k++) {
        uint64_t count = 0;
        name_of(name, sizeof name, "rec_", k);
        int n = occurrences(&run, name, &count);
        wrong += n != 1 || count != 2 * THREADS + (k == 5);
    }
    for (int k = 0; k < OVER; k++) {
        uint64_t count = 0;
        name_of(name, sizeof name, "over_", k);
        int n = occurrences(&run, name, &count);
        kept_over += n == 1;
        wrong_over += n > 1 || (n == 1 && count != 2 * THREADS);
    }
    CHECK_EQ_I(wrong, 0);
    CHECK_EQ_I(wrong_over, 0);
    /* the record's names are full: 4096 less the RECORDED ones */
    CHECK_EQ_I(kept_over, 4096 - RECORDED);
    CHECK(run.nprocs == 1 && run.procs[0].names_refused > 0);
    sps__run_free(&run);
}

/* A fork child's record starts with its parent's names under the same ids:
 * a site the child makes for one of them finds it there. */
static void test_fork_child_keeps_ids(void) {
    struct sps_site *rec_9 = sps_site_get("rec_9", SPS_KIND_VALUE);
    uint32_t parent_id = rec_9->id;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct sps_site fresh = {.name = "rec_9", .file = "", .func = "", .kind = SPS_KIND_VALUE};
        sps_value(&fresh, 9.0);
        _exit(fresh.id == parent_id && sps_site_get("rec_9", SPS_KIND_VALUE) == rec_9 ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(parent_id >= 1 && parent_id <= 4096);
}

int main(void) {
    const char *dir = tmpdir_new("sites");
    snprintf(records, sizeof records, "%s/records", dir);
    setenv("STEPSCOPE_RUN_DIR", dir, 1);
    RUN_TEST(test_many_names_one_site_each);
    RUN_TEST(test_ids_stable_and_report_exact);
    RUN_TEST(test_fork_child_keeps_ids);
    return check_report();
}
