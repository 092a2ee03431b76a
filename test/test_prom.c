/*
 * test_prom.c - the Prometheus exposition: the text of a snapshot built
 * here, to the byte where it matters, in both formats
 * (src/render/prom_text.c), and the snapshot the live collector reads
 * from records made by child processes (src/live/prom_collect.c), with
 * one histogram rewritten so every bucket's fold into the bounds is known.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "live/prom_collect.h"
#include "record_format.h"
#include "render/prom_text.h"
#include "support.h"

/* ------------------------------------------------------------ rendering */

static struct sps__prom_series series(int kind, const char *name, int rank, int pid) {
    struct sps__prom_series s;
    memset(&s, 0, sizeof s);
    s.kind = (uint8_t)kind;
    s.rec_kind = kind == SPS_PROM_STEP ? SPS_KIND_STEP : SPS_KIND_ZONE;
    s.rank = rank;
    s.pid = pid;
    snprintf(s.name, sizeof s.name, "%s", name);
    snprintf(s.host, sizeof s.host, "node-a");
    s.value = NAN;
    return s;
}

static void snapshot(struct sps__prom_snapshot *s, struct sps__prom_series *v, size_t n,
                     struct sps__prom_process *procs, size_t nprocs) {
    memset(s, 0, sizeof *s);
    s->series = v;
    s->nseries = n;
    s->procs = procs;
    s->nprocs = nprocs;
    snprintf(s->host, sizeof s->host, "node-a");
    sps__sample_clear(&s->sample);
}

/* A snapshot of every kind of series, its sample with one host gauge, one
 * host total and one GPU. */
static void full_snapshot(struct sps__prom_snapshot *s, struct sps__prom_series v[6], struct sps__prom_process *p) {
    v[0] = series(SPS_PROM_STEP, "step", 1, 200);
    v[0].count = 5;
    v[0].sum_ns = 1500000000;
    v[0].bucket[12] = 2; /* le=0.1 */
    v[0].bucket[14] = 3; /* le=0.5 */
    v[1] = series(SPS_PROM_STEP, "step", 0, 100);
    v[1].count = 1;
    v[1].sum_ns = 250000;
    v[1].bucket[4] = 1;
    v[2] = series(SPS_PROM_ZONE, "say \"hi\"\\\n", -1, 300);
    v[2].count = 2;
    v[2].sum_ns = 3000;
    v[2].self_ns = 2000;
    v[2].bucket[0] = 2;
    v[3] = series(SPS_PROM_COUNTER, "samples", 0, 100);
    v[3].value = 64;
    v[4] = series(SPS_PROM_COUNTER, "tokens", 0, 100);
    v[4].value = 1024;
    v[5] = series(SPS_PROM_VALUE, "loss", 0, 100);
    v[5].value = 0.25;
    memset(p, 0, sizeof *p);
    *p = (struct sps__prom_process){.pid = 100, .ppid = 1, .rank = 0, .local_rank = 0, .world_size = 2};
    snprintf(p->host, sizeof p->host, "node-a");
    snapshot(s, v, 6, p, 1);
    sps__prom_sort(s);
    s->have_sample = 1;
    s->sample.host[SPS_M_SYSTEM_CPU_PERCENT] = 42.5;
    s->sample.host[SPS_M_CPU_PACKAGE_ENERGY_JOULES] = 1234;
    s->sample.ngpus = 1;
    s->sample.gpu[0].index = 0;
    snprintf(s->sample.gpu[0].name, sizeof s->sample.gpu[0].name, "NVIDIA H100 80GB HBM3");
    snprintf(s->sample.gpu[0].uuid, sizeof s->sample.gpu[0].uuid, "GPU-1234");
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
        s->sample.gpu[0].v[m] = NAN;
    s->sample.gpu[0].v[SPS_M_GPU_UTILIZATION_PERCENT] = 97;
    s->sample.gpu[0].v[SPS_M_GPU_ENERGY_JOULES] = 5000.5;
}

static void test_sorted_by_kind_name_rank(void) {
    struct sps__prom_series v[6];
    struct sps__prom_process p;
    struct sps__prom_snapshot s;
    full_snapshot(&s, v, &p);
    CHECK(s.series[0].kind == SPS_PROM_STEP && s.series[0].rank == 0);
    CHECK(s.series[1].kind == SPS_PROM_STEP && s.series[1].rank == 1);
    CHECK(s.series[2].kind == SPS_PROM_ZONE);
    CHECK(s.series[3].kind == SPS_PROM_COUNTER && !strcmp(s.series[3].name, "samples"));
    CHECK(s.series[5].kind == SPS_PROM_VALUE);
}

/* The histograms are cumulative, their +Inf is the count, labels are
 * escaped, and the families are named as each format wants. */
static void test_openmetrics_text(void) {
    struct sps__prom_series v[6];
    struct sps__prom_process p;
    struct sps__prom_snapshot s;
    full_snapshot(&s, v, &p);
    size_t len = 0;
    char *t = sps__prom_render(&s, SPS_PROM_OPENMETRICS, &len);
    CHECK(t && len == strlen(t));
    if (!t)
        return;
    CHECK_STR_HAS(t, "# TYPE stepscope_step_duration_seconds histogram\n"
                     "# UNIT stepscope_step_duration_seconds seconds\n");
    CHECK_STR_HAS(t, "stepscope_step_duration_seconds_bucket{step=\"step\",rank=\"1\",Hostname=\"node-a\","
                     "le=\"0.05\"} 0\n"
                     "stepscope_step_duration_seconds_bucket{step=\"step\",rank=\"1\",Hostname=\"node-a\","
                     "le=\"0.1\"} 2\n");
    CHECK_STR_HAS(t, "stepscope_step_duration_seconds_bucket{step=\"step\",rank=\"1\",Hostname=\"node-a\","
                     "le=\"0.5\"} 5\n");
    CHECK_STR_HAS(t, "stepscope_step_duration_seconds_bucket{step=\"step\",rank=\"1\",Hostname=\"node-a\","
                     "le=\"+Inf\"} 5\n"
                     "stepscope_step_duration_seconds_sum{step=\"step\",rank=\"1\",Hostname=\"node-a\"} 1.5\n"
                     "stepscope_step_duration_seconds_count{step=\"step\",rank=\"1\",Hostname=\"node-a\"} 5\n");
    /* rank 0 comes first: one family, ranks in order */
    CHECK(strstr(t, "rank=\"0\",Hostname=\"node-a\",le=\"1e-05\"") <
          strstr(t, "rank=\"1\",Hostname=\"node-a\",le=\"1e-05\""));
    CHECK_STR_HAS(t, "# TYPE stepscope_steps counter\n");
    CHECK_STR_HAS(t, "stepscope_steps_total{step=\"step\",rank=\"0\",Hostname=\"node-a\"} 1\n");
    /* a zone without a rank: its pid; its name escaped */
    CHECK_STR_HAS(t, "stepscope_zone_duration_seconds_count{zone=\"say \\\"hi\\\"\\\\\\n\",kind=\"zone\","
                     "pid=\"300\",Hostname=\"node-a\"} 2\n");
    CHECK_STR_HAS(t, "stepscope_zone_self_seconds_total{zone=\"say \\\"hi\\\"\\\\\\n\",kind=\"zone\",pid=\"300\","
                     "Hostname=\"node-a\"} 2e-06\n");
    CHECK_STR_HAS(t, "stepscope_samples_total{rank=\"0\",Hostname=\"node-a\"} 64\n");
    CHECK_STR_HAS(t, "stepscope_counter_total{counter=\"tokens\",rank=\"0\",Hostname=\"node-a\"} 1024\n");
    CHECK(!strstr(t, "counter=\"samples\""));
    CHECK_STR_HAS(t, "stepscope_value{value=\"loss\",rank=\"0\",Hostname=\"node-a\"} 0.25\n");
    CHECK_STR_HAS(t, "# TYPE stepscope_process info\n");
    CHECK_STR_HAS(t, "stepscope_process_info{pid=\"100\",ppid=\"1\",rank=\"0\",local_rank=\"0\",world_size=\"2\","
                     "Hostname=\"node-a\"} 1\n");
    CHECK_STR_HAS(t, "stepscope_system_cpu_percent{Hostname=\"node-a\"} 42.5\n");
    CHECK_STR_HAS(t, "# TYPE stepscope_cpu_package_energy_joules counter\n"
                     "# UNIT stepscope_cpu_package_energy_joules joules\n");
    CHECK_STR_HAS(t, "stepscope_cpu_package_energy_joules_total{Hostname=\"node-a\"} 1234\n");
    /* dcgm-exporter's labels */
    CHECK_STR_HAS(t, "stepscope_gpu_utilization_percent{gpu=\"0\",UUID=\"GPU-1234\","
                     "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\"} 97\n");
    CHECK_STR_HAS(t, "stepscope_gpu_energy_joules_total{gpu=\"0\",UUID=\"GPU-1234\","
                     "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\"} 5000.5\n");
    /* unavailable readings are absent, never 0 */
    CHECK(!strstr(t, "stepscope_gpu_power_watts"));
    CHECK(!strstr(t, "stepscope_system_memory_used_bytes"));
    CHECK(len > 6 && !strcmp(t + len - 6, "# EOF\n"));
    free(t);
}

static void test_text_004(void) {
    struct sps__prom_series v[6];
    struct sps__prom_process p;
    struct sps__prom_snapshot s;
    full_snapshot(&s, v, &p);
    s.sample.host[SPS_M_CPU_PRESSURE_SOME_PERCENT] = 3;
    char *t = sps__prom_render(&s, SPS_PROM_TEXT_004, NULL);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK_STR_HAS(t, "# TYPE stepscope_steps_total counter\n# HELP stepscope_steps_total ");
    CHECK_STR_HAS(t, "# TYPE stepscope_process_info gauge\n");
    CHECK_STR_HAS(t, "# TYPE stepscope_cpu_package_energy_joules_total counter\n");
    CHECK(!strstr(t, "# UNIT") && !strstr(t, "# EOF"));
    CHECK_STR_HAS(t, "/proc/pressure/cpu \"some\" total");
    free(t);
    s.sample.host[SPS_M_CPU_PRESSURE_SOME_PERCENT] = 3;
    t = sps__prom_render(&s, SPS_PROM_OPENMETRICS, NULL);
    CHECK_STR_HAS(t, "/proc/pressure/cpu \\\"some\\\" total");
    free(t);
}

static void test_empty_snapshot(void) {
    struct sps__prom_snapshot s;
    snapshot(&s, NULL, 0, NULL, 0);
    char *t = sps__prom_render(&s, SPS_PROM_OPENMETRICS, NULL);
    CHECK(t && !strcmp(t, "# EOF\n"));
    free(t);
    t = sps__prom_render(&s, SPS_PROM_TEXT_004, NULL);
    CHECK(t && !strcmp(t, ""));
    free(t);
}

static void test_negotiate(void) {
    CHECK(sps__prom_negotiate(NULL) == SPS_PROM_TEXT_004);
    CHECK(sps__prom_negotiate("") == SPS_PROM_TEXT_004);
    CHECK(sps__prom_negotiate("text/plain;version=0.0.4;q=0.5,*/*;q=0.1") == SPS_PROM_TEXT_004);
    /* what Prometheus 2.x sends */
    CHECK(sps__prom_negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                              "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1") ==
          SPS_PROM_OPENMETRICS);
    CHECK_STR_HAS(sps__prom_content_type(SPS_PROM_OPENMETRICS), "application/openmetrics-text; version=1.0.0");
    CHECK_STR_HAS(sps__prom_content_type(SPS_PROM_TEXT_004), "text/plain; version=0.0.4");
}

/* ------------------------------------------------------------ collecting */

/* Record in a child process: steps named "step" (each with one zone
 * "fwd"), a counter "samples" += 8 and a value "loss" a step, with rank
 * as RANK (-1: unset).  With worker, the child then runs test_workload
 * --steps 2 (steps named "step" too) without RANK in its environment, as
 * a launcher's worker started afresh. */
static void record_steps_worker(const char *dir, int steps, int rank, int worker) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STEPSCOPE_RUN_DIR", dir, 1);
        unsetenv("LOCAL_RANK");
        unsetenv("WORLD_SIZE");
        if (rank >= 0) {
            char r[16];
            snprintf(r, sizeof r, "%d", rank);
            setenv("RANK", r, 1);
        } else {
            unsetenv("RANK");
        }
        struct sps_site *step = sps_site_get("step", SPS_KIND_STEP);
        struct sps_site *fwd = sps_site_get("fwd", SPS_KIND_ZONE);
        struct sps_site *samples = sps_site_get("samples", SPS_KIND_COUNTER);
        struct sps_site *loss = sps_site_get("loss", SPS_KIND_VALUE);
        for (int i = 0; i < steps; i++) {
            sps_zone_t s = sps_zone_begin(step);
            sps_zone_end(sps_zone_begin(fwd));
            sps_count(samples, 8);
            sps_value(loss, 1.0 / (i + 1));
            sps_zone_end(s);
        }
        if (worker) {
            pid_t w = fork();
            if (w == 0) {
                unsetenv("RANK");
                execl(SPS_BIN_DIR "/test_workload", "test_workload", "--steps", "2", (char *)NULL);
                _exit(127);
            }
            int st;
            if (waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                exit(3);
        }
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void record_steps(const char *dir, int steps, int rank) {
    record_steps_worker(dir, steps, rank, 0);
}

static const struct sps__prom_series *find(const struct sps__prom_snapshot *s, int kind, const char *name,
                                           int rank, int pid) {
    for (size_t i = 0; i < s->nseries; i++) {
        const struct sps__prom_series *x = &s->series[i];
        if (x->kind == kind && !strcmp(x->name, name) && x->rank == rank && (rank >= 0 || x->pid == pid))
            return x;
    }
    return NULL;
}

static int only_record_pid(const char *records) {
    DIR *d = opendir(records);
    struct dirent *e;
    int pid = -1;
    while (d && (e = readdir(d))) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", records, e->d_name);
        struct sps_rec_header h;
        int fd = open(path, O_RDONLY);
        if (fd >= 0 && read(fd, &h, sizeof h) == (ssize_t)sizeof h && h.rank < 0 && h.ppid == getpid())
            pid = h.pid;
        if (fd >= 0)
            close(fd);
    }
    if (d)
        closedir(d);
    return pid;
}

/* Two processes of rank 3 and a worker one of them started without RANK
 * make one series; a process without a rank (and no ranked parent) makes
 * its own, named by its pid. */
static void test_ranks_group_processes(void) {
    const char *dir = tmpdir_new("prom-ranks");
    char records[1024];
    snprintf(records, sizeof records, "%s/records", dir);
    mkdir(records, 0777);
    record_steps(dir, 2, 3);
    record_steps_worker(dir, 3, 3, 1);
    record_steps(dir, 4, -1);
    int lone = only_record_pid(records);
    struct sps__prom_collect *c = sps__prom_collect_open(records);
    struct sps__prom_snapshot s;
    memset(&s, 0, sizeof s);
    CHECK(c && sps__prom_collect_read(c, &s) == 0);
    CHECK(s.nprocs >= 4); /* the worker's fork child may keep a record of its own before its exec */
    const struct sps__prom_series *r3 = find(&s, SPS_PROM_STEP, "step", 3, 0);
    const struct sps__prom_series *p = find(&s, SPS_PROM_STEP, "step", -1, lone);
    CHECK(r3 && p);
    if (r3 && p) {
        CHECK_EQ_U(r3->count, 7);
        CHECK_EQ_U(p->count, 4);
        uint64_t in = 0;
        for (int i = 0; i < SPS_PROM_BOUNDS; i++)
            in += r3->bucket[i];
        CHECK(in <= r3->count); /* the rest are above 100 s: none */
        CHECK_EQ_U(in, 7);
        CHECK(r3->sum_ns > 0);
    }
    const struct sps__prom_series *fwd = find(&s, SPS_PROM_ZONE, "fwd", 3, 0);
    CHECK(fwd && fwd->count == 5 && fwd->rec_kind == SPS_KIND_ZONE);
    const struct sps__prom_series *smp = find(&s, SPS_PROM_COUNTER, "samples", 3, 0);
    CHECK(smp && smp->value == 40 + 16); /* test_workload counts 8 a step */
    for (size_t i = 0; i < s.nseries; i++) /* no series of the worker's own */
        CHECK(s.series[i].rank == 3 || s.series[i].pid == lone);
    const struct sps__prom_series *loss = find(&s, SPS_PROM_VALUE, "loss", -1, lone);
    CHECK(loss && loss->value == 0.25);
    /* a second read, with nothing new, gives the same (the cached histograms) */
    struct sps__prom_snapshot again;
    memset(&again, 0, sizeof again);
    CHECK(sps__prom_collect_read(c, &again) == 0);
    CHECK_EQ_U(again.nseries, s.nseries);
    for (size_t i = 0; i < s.nseries && i < again.nseries; i++)
        CHECK(!memcmp(&s.series[i], &again.series[i], sizeof s.series[i]));
    sps__prom_snapshot_free(&s);
    sps__prom_snapshot_free(&again);
    sps__prom_collect_close(c);
}

/* The aggregate of name on the record's first thread. */
static struct sps_rec_agg *agg_of(unsigned char *b, const char *name) {
    const struct sps_rec_header *h = (const void *)b;
    uint64_t seg_off;
    memcpy(&seg_off, b + h->threads_off, sizeof seg_off);
    const struct sps_rec_thread *seg = (const void *)(b + seg_off);
    const struct sps_rec_name *names = (const void *)(b + h->names_off);
    for (uint32_t i = 0; i < h->names_count; i++) {
        if (strcmp(names[i].name, name))
            continue;
        uint32_t off;
        memcpy(&off, b + seg->agg_index_off + (i + 1) * sizeof off, sizeof off);
        return off ? (struct sps_rec_agg *)(b + off) : NULL;
    }
    return NULL;
}

/* Each recorder bucket lands in the first bound at or above every value
 * it holds: a bucket that straddles a bound counts in the next one. */
static void test_histogram_folds_into_bounds(void) {
    const char *dir = tmpdir_new("prom-fold");
    char records[1024], path[1100] = "";
    snprintf(records, sizeof records, "%s/records", dir);
    mkdir(records, 0777);
    record_steps(dir, 1, 5);
    DIR *d = opendir(records);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".sps"))
            snprintf(path, sizeof path, "%s/%s", records, e->d_name);
    if (d)
        closedir(d);
    int fd = open(path, O_RDWR);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0);
    if (fd < 0)
        return;
    unsigned char *b = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    struct sps_rec_agg *a = agg_of(b, "step");
    CHECK(a != NULL);
    if (!a)
        return;
    /* durations, in ns, and the bound each must land in */
    static const struct {
        uint64_t ns;
        int bound; /* SPS_PROM_BOUNDS: +Inf only */
    } d_[] = {
        {100, 0},           /* exact buckets below 256 ns */
        {9900, 0},          /* [9856, 9920) is below 10 us */
        {10000, 1},         /* [9984, 10048) straddles 10 us */
        {995000, 6},        /* [991232, 995328) is below 1 ms */
        {1000000, 7},       /* [999424, 1003520) straddles 1 ms */
        {2400000000, 16},   /* [2399141888, 2415919104) is below 2.5 s */
        {200000000000, SPS_PROM_BOUNDS}, /* 200 s: above every bound */
    };
    uint64_t *hist = (uint64_t *)(a + 1);
    memset(hist, 0, SPS_HIST_BUCKETS * sizeof *hist);
    uint64_t total = 0, min = UINT64_MAX, max = 0;
    size_t n = sizeof d_ / sizeof d_[0];
    for (size_t i = 0; i < n; i++) {
        hist[sps_hist_bucket(d_[i].ns)]++;
        total += d_[i].ns;
        min = d_[i].ns < min ? d_[i].ns : min;
        max = d_[i].ns > max ? d_[i].ns : max;
    }
    a->count = n;
    a->u.z.total_ns = total;
    a->u.z.min_ns = min;
    a->u.z.max_ns = max;
    /* nothing pending: every duration is in the histogram */
    const struct sps_rec_header *h = (const void *)b;
    uint64_t seg_off;
    memcpy(&seg_off, b + h->threads_off, sizeof seg_off);
    ((struct sps_rec_thread *)(b + seg_off))->pending_agg_off = 0;
    munmap(b, (size_t)st.st_size);

    struct sps__prom_collect *c = sps__prom_collect_open(records);
    struct sps__prom_snapshot s;
    memset(&s, 0, sizeof s);
    CHECK(c && sps__prom_collect_read(c, &s) == 0);
    const struct sps__prom_series *x = find(&s, SPS_PROM_STEP, "step", 5, 0);
    CHECK(x != NULL);
    if (x) {
        uint64_t want[SPS_PROM_BOUNDS] = {0};
        for (size_t i = 0; i < n; i++) {
            if (d_[i].bound < SPS_PROM_BOUNDS)
                want[d_[i].bound]++;
        }
        for (int i = 0; i < SPS_PROM_BOUNDS; i++)
            CHECK_MSG(x->bucket[i] == want[i], "bound %d (%g s): %llu, want %llu", i, sps__prom_bound_s[i],
                      (unsigned long long)x->bucket[i], (unsigned long long)want[i]);
        CHECK_EQ_U(x->count, n); /* the +Inf bucket */
        CHECK_EQ_U(x->sum_ns, total);
    }
    sps__prom_snapshot_free(&s);
    sps__prom_collect_close(c);
}

/* No records yet (the directory may not exist): an empty snapshot. */
static void test_no_records(void) {
    struct sps__prom_collect *c = sps__prom_collect_open("/nonexistent/stepscope/records");
    struct sps__prom_snapshot s;
    memset(&s, 0, sizeof s);
    CHECK(c && sps__prom_collect_read(c, &s) == 0);
    CHECK_EQ_U(s.nseries, 0);
    CHECK_EQ_U(s.nprocs, 0);
    sps__prom_snapshot_free(&s);
    sps__prom_collect_close(c);
}

/* A tree total that drops (a process left) serves on from where it was. */
static void test_totals_never_go_down(void) {
    struct sps__prom_totals t;
    sps__prom_totals_init(&t);
    static const double readings[] = {10, 15, 12, 14, NAN, 20};
    static const double served[] = {10, 15, 15, 17, NAN, 23};
    struct sps__sample s;
    for (size_t i = 0; i < sizeof readings / sizeof readings[0]; i++) {
        sps__sample_clear(&s);
        s.host[SPS_M_WORKLOAD_CPU_SECONDS] = readings[i];
        s.host[SPS_M_WORKLOAD_CPU_PERCENT] = readings[i]; /* a gauge: as read */
        s.ngpus = 1;
        s.gpu[0].v[SPS_M_GPU_ENERGY_JOULES] = 100 - readings[i];
        sps__prom_totals_apply(&t, &s);
        if (isnan(served[i])) {
            CHECK(isnan(s.host[SPS_M_WORKLOAD_CPU_SECONDS]));
            continue;
        }
        CHECK_NEAR(s.host[SPS_M_WORKLOAD_CPU_SECONDS], served[i], 1e-12);
        CHECK_NEAR(s.host[SPS_M_WORKLOAD_CPU_PERCENT], readings[i], 1e-12);
    }
    /* energy 90, 85, 88, 86, -, 80: rises only once, by 3 */
    CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_ENERGY_JOULES], 93, 1e-12);
}

int main(void) {
    RUN_TEST(test_sorted_by_kind_name_rank);
    RUN_TEST(test_openmetrics_text);
    RUN_TEST(test_text_004);
    RUN_TEST(test_empty_snapshot);
    RUN_TEST(test_negotiate);
    RUN_TEST(test_ranks_group_processes);
    RUN_TEST(test_histogram_folds_into_bounds);
    RUN_TEST(test_no_records);
    RUN_TEST(test_totals_never_go_down);
    return check_report();
}
