/*
 * test_sampler.c - bounded series, the seqlock'd published sample, and
 * sps_capture() in a process with its own sampler.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sampler/published.h"
#include "sampler/sampler.h"
#include "sampler/series.h"
#include "stepscope.h"
#include "support.h"

/* A run far longer than the cap keeps the cap, spans the whole run, and
 * keeps the exact peak, mean and last. */
static void test_series_decimation_keeps_peaks(void) {
    struct sps__series s;
    sps__series_init(&s, 8);
    const int n = 1000;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double v = (i == 617) ? 5000.0 : (double)(i % 10);
        sum += v;
        CHECK(sps__series_add(&s, (int64_t)i * 100, v) == 0);
    }
    CHECK(s.count <= 8);
    CHECK(s.count >= 4);
    CHECK_EQ_U(s.n, (uint64_t)n);
    CHECK_NEAR(s.max, 5000.0, 0);
    CHECK_NEAR(s.min, 0.0, 0);
    CHECK_NEAR(s.last, 9.0, 0);
    CHECK_NEAR(s.sum / (double)s.n, sum / n, 1e-9);
    CHECK_EQ_I(s.first_ns, 0);
    CHECK_EQ_I(s.last_ns, (int64_t)(n - 1) * 100);
    CHECK_EQ_I(s.points[0].t_ns, 0); /* still starts at the run's start */
    double pmax = -1, wsum = 0;
    uint64_t pn = 0;
    for (uint32_t i = 0; i < s.count; i++) {
        if (s.points[i].max > pmax)
            pmax = s.points[i].max;
        wsum += s.points[i].mean * s.points[i].n;
        pn += s.points[i].n;
        if (i)
            CHECK(s.points[i].t_ns > s.points[i - 1].t_ns);
    }
    CHECK_NEAR(pmax, 5000.0, 0);  /* the spike survives every halving */
    CHECK_EQ_U(pn, (uint64_t)n);  /* every reading is in some point */
    CHECK_NEAR(wsum / (double)pn, sum / n, 1e-9);
    CHECK_EQ_U(s.per_point, 128); /* 1000 readings in at most 8 points */
    sps__series_free(&s);
    CHECK_EQ_U(s.n, 0);
}

static void test_series_ignores_nan(void) {
    struct sps__series s;
    sps__series_init(&s, 4);
    sps__series_add(&s, 1, NAN);
    CHECK_EQ_U(s.n, 0);
    CHECK(s.points == NULL);
    sps__series_add(&s, 2, 3.5);
    sps__series_add(&s, 3, NAN);
    CHECK_EQ_U(s.n, 1);
    CHECK_EQ_U(s.count, 1);
    CHECK_NEAR(s.last, 3.5, 0);
    sps__series_free(&s);
}

/* A writer publishing samples whose every field encodes one number while a
 * reader copies them: the reader must never see a mix of two samples. */
static struct sps__published pub;
static volatile int writer_done;

static void *writer(void *arg) {
    (void)arg;
    static struct sps__sample s;
    for (int k = 1; k <= 20000; k++) {
        sps__sample_clear(&s);
        s.ngpus = k % 4;
        s.nsensors = k % 3;
        for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
            s.host[i] = k;
        for (int g = 0; g < s.ngpus; g++)
            for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
                s.gpu[g].v[i] = k;
        for (int j = 0; j < s.nsensors; j++)
            s.sensor[j].celsius = k;
        s.read_ns[0] = k;
        sps__published_write(&pub, &s, NULL);
    }
    __atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_published_never_torn(void) {
    sps__published_init(&pub, 77);
    struct sps__sample out;
    CHECK(sps__published_read(&pub, &out, NULL) == -1); /* nothing yet */
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    long reads = 0, torn = 0;
    double last = 0;
    int backwards = 0;
    while (!__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE) || reads == 0) {
        if (sps__published_read(&pub, &out, NULL) != 0)
            continue;
        reads++;
        double k = out.host[0];
        int ok = out.read_ns[0] == (int64_t)k && out.ngpus == (int)k % 4 && out.nsensors == (int)k % 3;
        for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
            ok &= out.host[i] == k;
        for (int g = 0; g < out.ngpus; g++)
            for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
                ok &= out.gpu[g].v[i] == k;
        for (int j = 0; j < out.nsensors; j++)
            ok &= out.sensor[j].celsius == k;
        torn += !ok;
        backwards += k < last;
        last = k;
    }
    pthread_join(t, NULL);
    CHECK(reads > 0);
    CHECK_EQ_I(torn, 0);
    CHECK_EQ_I(backwards, 0);
    CHECK(sps__published_read(&pub, &out, NULL) == 0);
    CHECK_NEAR(out.host[0], 20000, 0);
    CHECK(sps__published_valid(&pub, sizeof pub));
    CHECK(!sps__published_valid(&pub, sizeof pub - 8));
}

/* A writer that died holding the lock (odd seq) must not hang readers. */
static void test_published_dead_writer(void) {
    static struct sps__published p;
    sps__published_init(&p, 1);
    p.seq = 3;
    struct sps__sample out;
    CHECK(sps__published_read(&p, &out, NULL) == -1);
}

/* Without `stepscope run`, the first capture starts this process's
 * sampler, which watches this process. */
static void test_capture_own_sampler(void) {
    static struct sps_capture c;
    CHECK_EQ_I(sps_capture(NULL, 0), SPS_EINVAL);
    struct sps_source_status st;
    CHECK_EQ_I(sps_source_status(SPS_SOURCE_PROC, &st), SPS_ESTATE); /* nothing runs yet */
    CHECK_EQ_I(sps_capture(&c, 0), SPS_OK);
    CHECK_EQ_I(c.fresh, 1); /* the sampler's first tick is this call's */
    CHECK_EQ_I(c.published, 0);
    CHECK_EQ_I(c.tree_pid, getpid());
    CHECK(c.time_ns > 0);
    CHECK_EQ_I(sps_sampler_start(NULL), SPS_ESTATE); /* already running */
    CHECK_EQ_I(sps_source_status(SPS_SOURCE_PROC, &st), SPS_OK);
    CHECK_EQ_I(st.id, SPS_SOURCE_PROC);
    CHECK(strcmp(st.name, "proc") == 0);
    CHECK_EQ_I(sps_source_status(SPS_SOURCE_COUNT, &st), SPS_EINVAL);
    /* every reading either has a value and an age, or neither */
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        const struct sps_reading *r = &c.metric[i];
        CHECK_MSG(r->available ? (!isnan(r->value) && r->age_ns >= 0) : (isnan(r->value) && r->age_ns == -1),
                  "%s: available %d value %g age %lld", sps_host_metric_info(i)->name, r->available, r->value,
                  (long long)r->age_ns);
    }
    CHECK_EQ_I(sps_capture(&c, 0), SPS_OK);
    CHECK_EQ_I(c.fresh, 0); /* the latest sample, copied */
    CHECK_EQ_I(sps_capture(&c, SPS_CAPTURE_FRESH), SPS_OK);
    CHECK_EQ_I(c.fresh, 1);
    sps_sampler_stop();
    CHECK_EQ_I(sps_capture(&c, 0), SPS_OK); /* the last sample stays readable */
    CHECK_EQ_I(c.fresh, 0);
    CHECK_EQ_I(sps_capture(&c, SPS_CAPTURE_FRESH), SPS_OK); /* read now, on this thread */
    CHECK_EQ_I(c.fresh, 1);
    CHECK_EQ_I(sps_sampler_start(NULL), SPS_OK); /* a fresh read did not restart it */
    sps_sampler_stop();
    CHECK_EQ_I(sps_sampler_start(NULL), SPS_OK); /* and the sampler resumes */
    CHECK_EQ_I(sps_sampler_start(NULL), SPS_ESTATE);
    struct sps_sampler_config bad = {.interval_ms = -1};
    CHECK_EQ_I(sps_sampler_start(&bad), SPS_EINVAL);

    /* a fork child has no sampler thread: its first capture starts its own */
    pid_t pid = fork();
    if (pid == 0) {
        static struct sps_capture cc;
        int ok = sps_capture(&cc, 0) == SPS_OK && cc.tree_pid == getpid() && cc.fresh == 1;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sps_sampler_stop();
}

static void test_catalogue(void) {
    CHECK(sps_host_metric_info(-1) == NULL);
    CHECK(sps_host_metric_info(SPS_HOST_METRIC_COUNT) == NULL);
    CHECK(sps_gpu_metric_info(SPS_GPU_METRIC_COUNT) == NULL);
    CHECK(strcmp(sps_host_metric_info(SPS_M_WORKLOAD_RSS_BYTES)->name, "workload_rss_bytes") == 0);
    CHECK(strcmp(sps_gpu_metric_info(SPS_M_GPU_POWER_WATTS)->unit, "watts") == 0);
    /* names are unique and end with their unit, as the catalogue promises
     * (dimensionless units, count and bitmask, as in Prometheus, are not
     * spelled out) */
    for (int i = 0; i < SPS_HOST_METRIC_COUNT + SPS_GPU_METRIC_COUNT; i++) {
        const struct sps_metric_info *m =
            i < SPS_HOST_METRIC_COUNT ? sps_host_metric_info(i) : sps_gpu_metric_info(i - SPS_HOST_METRIC_COUNT);
        size_t nl = strlen(m->name), ul = strlen(m->unit);
        int dimensionless = !strcmp(m->unit, "count") || !strcmp(m->unit, "bitmask");
        CHECK_MSG(dimensionless || (nl > ul && strcmp(m->name + nl - ul, m->unit) == 0 && m->name[nl - ul - 1] == '_'),
                  "%s ends with _%s", m->name, m->unit);
        CHECK(m->description && *m->description);
        CHECK(m->kind == SPS_GAUGE || m->kind == SPS_TOTAL);
        for (int j = 0; j < i; j++) {
            const struct sps_metric_info *o =
                j < SPS_HOST_METRIC_COUNT ? sps_host_metric_info(j) : sps_gpu_metric_info(j - SPS_HOST_METRIC_COUNT);
            CHECK_MSG(strcmp(m->name, o->name) != 0, "duplicate %s", m->name);
        }
    }
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        const char *src = sps_host_metric_info(i)->source;
        CHECK(!strcmp(src, "proc") || !strcmp(src, "thermal") || !strcmp(src, "rapl") || !strcmp(src, "sched"));
    }
}

/* Docs move with the code: docs/metrics.md lists every catalogue metric
 * with its unit, source, kind and cadence. */
static void test_catalogue_documented(void) {
    static char doc[65536];
    long got = read_file(SPS_SOURCE_DIR "/docs/metrics.md", doc, sizeof doc);
    CHECK(got >= 0);
    if (got < 0)
        return;
    char key[192];
    for (int k = 0; k < SPS_HOST_METRIC_COUNT + SPS_GPU_METRIC_COUNT; k++) {
        const struct sps_metric_info *m =
            k < SPS_HOST_METRIC_COUNT ? sps_host_metric_info(k) : sps_gpu_metric_info(k - SPS_HOST_METRIC_COUNT);
        snprintf(key, sizeof key, "| `%s` | %s | %s | %s | %s |", m->name, m->unit, m->source,
                 m->kind == SPS_TOTAL ? "total" : "gauge",
                 m->cadence == SPS_EVERY_INTERVAL ? "interval"
                 : m->cadence == SPS_WHEN_DUE    ? "when due"
                                                 : "machine interval");
        CHECK_STR_HAS(doc, key);
    }
}

int main(void) {
    RUN_TEST(test_catalogue);
    RUN_TEST(test_catalogue_documented);
    RUN_TEST(test_series_decimation_keeps_peaks);
    RUN_TEST(test_series_ignores_nan);
    RUN_TEST(test_published_never_torn);
    RUN_TEST(test_published_dead_writer);
    RUN_TEST(test_capture_own_sampler);
    return check_report();
}
