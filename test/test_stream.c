/*
 * test_stream.c - the live step stream (src/live/stream.c) and the line
 * it writes (src/render/step_line_json.c), on records the test makes: a
 * child process records steps through the library on the monotonic clock
 * (one tick is one nanosecond), and the test then rewrites every event's
 * times, so each line is known to the byte.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "live/stream.h"
#include "live/stream_machine.h"
#include "record_format.h"
#include "render/step_line_json.h"
#include "step_line.h"
#include "support.h"

/* Step i starts START_NS + i * PERIOD_NS after the process's record was
 * made and lasts 80 us: zone "data" [0, 10) us, zone "fwd" [10, 60) with
 * "inner" [20, 30) in it, counter "samples" += 8 at 70, and value "loss"
 * = 1/(i+1) at 90 us: after the step's end, before the next step. */
#define START_NS 1000000
#define PERIOD_NS 100000

static void record_steps(const char *dir, int steps, const char *step_events, const char *zone_events) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STEPSCOPE_RUN_DIR", dir, 1);
        setenv("STEPSCOPE_CLOCK", "monotonic", 1);
        unsetenv("RANK");
        unsetenv("LOCAL_RANK");
        unsetenv("WORLD_SIZE");
        if (step_events)
            setenv("STEPSCOPE_STEP_EVENTS", step_events, 1);
        if (zone_events)
            setenv("STEPSCOPE_RING_EVENTS", zone_events, 1);
        struct sps_site *step = sps_site_get("step", SPS_KIND_STEP);
        struct sps_site *data = sps_site_get("data", SPS_KIND_ZONE);
        struct sps_site *fwd = sps_site_get("fwd", SPS_KIND_ZONE);
        struct sps_site *inner = sps_site_get("inner", SPS_KIND_ZONE);
        struct sps_site *samples = sps_site_get("samples", SPS_KIND_COUNTER);
        struct sps_site *loss = sps_site_get("loss", SPS_KIND_VALUE);
        for (int i = 0; i < steps; i++) {
            sps_zone_t s = sps_zone_begin(step);
            sps_zone_end(sps_zone_begin(data));
            sps_zone_t f = sps_zone_begin(fwd);
            sps_zone_end(sps_zone_begin(inner));
            sps_zone_end(f);
            sps_count(samples, 8);
            sps_zone_end(s);
            sps_value(loss, 1.0 / (i + 1));
        }
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The one record in dir, mapped for writing. */
static unsigned char *map_record(const char *records, size_t *size) {
    DIR *d = opendir(records);
    struct dirent *e;
    char path[1024] = "";
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".sps"))
            snprintf(path, sizeof path, "%s/%s", records, e->d_name);
    if (d)
        closedir(d);
    int fd = open(path, O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "no record in %s\n", records);
        exit(99);
    }
    *size = (size_t)st.st_size;
    unsigned char *b = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return b;
}

static struct sps_rec_thread *thread0(unsigned char *b) {
    const struct sps_rec_header *h = (const void *)b;
    uint64_t off;
    memcpy(&off, b + h->threads_off, sizeof off);
    return (struct sps_rec_thread *)(b + off);
}

static struct sps_rec_event *ring(unsigned char *b, int r) {
    return (struct sps_rec_event *)(b + thread0(b)->ring_off[r]);
}

static void set(struct sps_rec_event *e, uint64_t t0, uint64_t start, uint64_t end, uint64_t self) {
    e->start_ticks = t0 + start;
    e->end_ticks = t0 + end;
    if (self != UINT64_MAX)
        e->a = self;
}

/* Give steps [0, n) of the record the times above (the ring holds them
 * all in the order recorded). */
static void retime(unsigned char *b, int n) {
    const struct sps_rec_header *h = (const void *)b;
    struct sps_rec_event *st = ring(b, SPS_RING_STEPS), *z = ring(b, SPS_RING_ZONES), *v = ring(b, SPS_RING_VALUES);
    for (int i = 0; i < n; i++) {
        uint64_t s = h->anchor0_ticks + START_NS + (uint64_t)i * PERIOD_NS;
        set(&st[i], s, 0, 80000, 80000 - 60000);
        set(&z[3 * i], s, 0, 10000, 10000);         /* data */
        set(&z[3 * i + 1], s, 20000, 30000, 10000); /* inner (ends before fwd) */
        set(&z[3 * i + 2], s, 10000, 60000, 40000); /* fwd */
        set(&v[2 * i], s, 70000, 70000, UINT64_MAX);     /* samples */
        set(&v[2 * i + 1], s, 90000, 90000, UINT64_MAX); /* loss */
    }
}

static const char *const want_lines[] = {
    "{\"step\": 0, \"name\": \"step\", \"pid\": %d, \"rank\": null, \"thread\": %d, \"start_s\": 0.001, "
    "\"end_s\": 0.00108, \"duration_s\": 8e-05, \"zones_self_s\": {\"data\": 1e-05, \"fwd\": 4e-05, \"inner\": "
    "1e-05}, \"waits_s\": {}, \"microsteps\": 0, \"values\": {\"loss\": 1}, \"counters\": {\"samples\": 8}, \"machine\": "
    "{\"workload_cpu_percent\": null, \"workload_rss_bytes\": 200, \"system_cpu_percent\": null, "
    "\"system_memory_used_bytes\": null}, \"partial\": false}\n",
    "{\"step\": 1, \"name\": \"step\", \"pid\": %d, \"rank\": null, \"thread\": %d, \"start_s\": 0.0011, "
    "\"end_s\": 0.00118, \"duration_s\": 8e-05, \"zones_self_s\": {\"data\": 1e-05, \"fwd\": 4e-05, \"inner\": "
    "1e-05}, \"waits_s\": {}, \"microsteps\": 0, \"values\": {\"loss\": 0.5}, \"counters\": {\"samples\": 8}, \"machine\": "
    "{\"workload_cpu_percent\": null, \"workload_rss_bytes\": 500, \"system_cpu_percent\": null, "
    "\"system_memory_used_bytes\": null}, \"partial\": false}\n",
    "{\"step\": 2, \"name\": \"step\", \"pid\": %d, \"rank\": null, \"thread\": %d, \"start_s\": 0.0012, "
    "\"end_s\": 0.00128, \"duration_s\": 8e-05, \"zones_self_s\": {\"data\": 1e-05, \"fwd\": 4e-05, \"inner\": "
    "1e-05}, \"waits_s\": {}, \"microsteps\": 0, \"values\": {\"loss\": 0.3333333333333333}, \"counters\": {\"samples\": 8}, "
    "\"machine\": {\"workload_cpu_percent\": null, \"workload_rss_bytes\": 500, \"system_cpu_percent\": null, "
    "\"system_memory_used_bytes\": null}, \"partial\": false}\n",
};

/* RSS readings: two inside step 0 (mean 200), none in step 1 (the
 * nearest, 20 us after its end: 500), one in step 2. */
static void feed_machine(struct sps__live_stream *st, uint64_t origin) {
    const int64_t at[] = {START_NS + 20, START_NS + 60, START_NS + 2 * PERIOD_NS};
    const double rss[] = {100, 300, 500};
    for (int k = 0; k < 3; k++) {
        struct sps__sample s;
        sps__sample_clear(&s);
        s.host[SPS_M_WORKLOAD_RSS_BYTES] = rss[k];
        s.host_read_ns[SPS_M_WORKLOAD_RSS_BYTES] = (int64_t)origin + at[k];
        sps__live_stream_sample(st, &s);
    }
}

static char *lines_of(const char *path) {
    size_t len;
    char *s = read_whole(path, &len);
    return s ? s : strdup("");
}

static void expect_lines(const char *got, int pid, int from, int to) {
    char want[8192] = "";
    for (int i = from; i < to; i++) {
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, want_lines[i], pid, pid);
    }
    CHECK_MSG(!strcmp(got, want), "got:\n%s\nwant:\n%s", got, want);
}

struct made {
    char records[600], out[600];
    unsigned char *b;
    size_t size;
    int pid;
    uint64_t origin, end_last;
};

static void make(struct made *m, const char *tag, int steps, const char *step_events, const char *zone_events,
                 int retimed) {
    const char *dir = tmpdir_new(tag);
    snprintf(m->records, sizeof m->records, "%s/records", dir);
    snprintf(m->out, sizeof m->out, "%s/steps.jsonl", dir);
    mkdir(m->records, 0777);
    record_steps(dir, steps, step_events, zone_events);
    m->b = map_record(m->records, &m->size);
    const struct sps_rec_header *h = (const void *)m->b;
    m->pid = h->pid;
    m->origin = h->anchor0_mono_ns;
    if (retimed)
        retime(m->b, steps);
    m->end_last = m->origin + START_NS + (uint64_t)(steps - 1) * PERIOD_NS + 80000;
}

/* Every step, to the byte: zones' self times, a value recorded after its
 * step's end, counters, the readings of each window. */
static void test_lines_exact(void) {
    struct made m;
    make(&m, "stream", 3, NULL, NULL, 1);
    struct sps__live_stream *st = sps__live_stream_open(m.records, m.out, m.origin);
    CHECK(st != NULL);
    feed_machine(st, m.origin);
    CHECK_EQ_I(sps__live_stream_poll(st, m.end_last + 1000, 0), 3); /* the process has ended: all settled */
    CHECK_EQ_I(sps__live_stream_poll(st, m.end_last + 2000, 1), 0); /* never twice */
    struct sps__live_stream_stats stats;
    sps__live_stream_close(st, &stats);
    CHECK_EQ_U(stats.lines, 3);
    char *got = lines_of(m.out);
    expect_lines(got, m.pid, 0, 3);
    free(got);
    munmap(m.b, m.size);
}

/* A link planted at steps.jsonl (or an earlier file there) is removed,
 * never followed: its victim keeps its bytes, and the stream is a fresh
 * regular file holding only this run's lines. */
static void test_link_at_the_name_not_followed(void) {
    struct made m;
    make(&m, "stream-link", 2, NULL, NULL, 1);
    char victim[700];
    snprintf(victim, sizeof victim, "%s.victim", m.records);
    int fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0 && write(fd, "victim\n", 7) == 7);
    close(fd);
    CHECK_EQ_I(symlink(victim, m.out), 0);
    struct sps__live_stream *st = sps__live_stream_open(m.records, m.out, m.origin);
    CHECK(st != NULL);
    feed_machine(st, m.origin);
    sps__live_stream_poll(st, m.end_last + 1000, 1);
    sps__live_stream_close(st, NULL);
    char buf[64] = "";
    fd = open(victim, O_RDONLY);
    CHECK_EQ_I((int)read(fd, buf, sizeof buf), 7);
    close(fd);
    CHECK_MSG(!strcmp(buf, "victim\n"), "the victim holds \"%s\"", buf);
    struct stat sb;
    CHECK(lstat(m.out, &sb) == 0 && S_ISREG(sb.st_mode));
    char *got = lines_of(m.out);
    expect_lines(got, m.pid, 0, 2);
    free(got);
    munmap(m.b, m.size);
}

/* A FIFO (as a device or a socket would be) at the name is refused, never
 * removed: a caller that hands the stream /dev/null must not delete the
 * device (the fuzz harness once did, as root).  A FIFO stands in for the
 * device so that a regression cannot touch /dev. */
static void test_special_file_at_the_name_refused(void) {
    struct made m;
    make(&m, "stream-fifo", 1, NULL, NULL, 1);
    CHECK_EQ_I(mkfifo(m.out, 0600), 0);
    errno = 0;
    struct sps__live_stream *st = sps__live_stream_open(m.records, m.out, m.origin);
    CHECK(st == NULL);
    CHECK_EQ_I(errno, EEXIST);
    if (st)
        sps__live_stream_close(st, NULL);
    struct stat sb;
    CHECK(lstat(m.out, &sb) == 0 && S_ISFIFO(sb.st_mode));
    munmap(m.b, m.size);
}

/* While the process runs, a step's line waits until its value after the
 * end can no longer come: the next step has begun, or the grace has
 * passed; the final poll writes the rest. */
static void test_waits_for_the_next_step_or_the_grace(void) {
    struct made m;
    make(&m, "stream-live", 3, NULL, NULL, 1);
    struct sps_rec_header *h = (void *)m.b;
    h->state = SPS_REC_STATE_LIVE; /* as if still running */
    thread0(m.b)->state = SPS_REC_THREAD_RUNNING;
    struct sps__live_stream *st = sps__live_stream_open(m.records, m.out, m.origin);
    feed_machine(st, m.origin);
    CHECK_EQ_I(sps__live_stream_poll(st, m.end_last + 1000, 0), 2);
    char *got = lines_of(m.out);
    expect_lines(got, m.pid, 0, 2);
    free(got);
    CHECK_EQ_I(sps__live_stream_poll(st, m.end_last + SPS_STREAM_GRACE_NS - 1, 0), 0);
    CHECK_EQ_I(sps__live_stream_poll(st, m.end_last + SPS_STREAM_GRACE_NS, 0), 1);
    got = lines_of(m.out);
    expect_lines(got, m.pid, 0, 3);
    free(got);
    CHECK_EQ_I(sps__live_stream_poll(st, m.end_last + SPS_STREAM_GRACE_NS, 1), 0);
    sps__live_stream_close(st, NULL);
    munmap(m.b, m.size);
}

/* Steps a 16-slot ring overwrote before the stream read them are said,
 * in their place; the 15 it kept follow. */
static void test_lost_steps_are_said(void) {
    struct made m;
    make(&m, "stream-lost", 40, "16", NULL, 0);
    struct sps__live_stream *st = sps__live_stream_open(m.records, m.out, m.origin);
    sps__live_stream_poll(st, m.end_last + SPS_STREAM_GRACE_NS, 1);
    struct sps__live_stream_stats stats;
    sps__live_stream_close(st, &stats);
    CHECK_EQ_U(stats.lines, 15);
    CHECK_EQ_U(stats.steps_lost, 25);
    char *got = lines_of(m.out);
    char want[256];
    snprintf(want, sizeof want,
             "{\"steps_lost\": 25, \"first_step\": 0, \"last_step\": 24, \"pid\": %d, \"rank\": null, "
             "\"thread\": %d}\n{\"step\": 25, ",
             m.pid, m.pid);
    CHECK_MSG(!strncmp(got, want, strlen(want)), "got: %.300s", got);
    CHECK_EQ_I(count_lines(got), 16);
    CHECK_STR_HAS(got, "{\"step\": 39, ");
    free(got);
    munmap(m.b, m.size);
}

/* A 16-slot zones ring keeps the 15 zones of the last 5 steps: the
 * steps before them, and the first of them (its first zone ended after
 * it began, and zones lost before that one could be its), say partial. */
static void test_overwritten_zones_mark_steps_partial(void) {
    struct made m;
    make(&m, "stream-partial", 40, NULL, "16", 0);
    struct sps__live_stream *st = sps__live_stream_open(m.records, m.out, m.origin);
    sps__live_stream_poll(st, m.end_last + SPS_STREAM_GRACE_NS, 1);
    sps__live_stream_close(st, NULL);
    char *got = lines_of(m.out);
    int line = 0;
    for (char *p = got; *p; line++) {
        char *nl = strchr(p, '\n');
        *nl = '\0';
        int partial = strstr(p, "\"partial\": true") != NULL;
        CHECK_MSG(partial == (line <= 35), "step %d: %s", line, p);
        p = nl + 1;
    }
    CHECK_EQ_I(line, 40);
    free(got);
    munmap(m.b, m.size);
}

static const char *names3(void *ctx, uint32_t id) {
    (void)ctx;
    static const char *const n[] = {"", "step", "say \"hi\"\n", "v", "all_reduce"};
    return id < 5 ? n[id] : NULL;
}

/* GPU readings as the sampler publishes them (by the index the workload
 * sees, read at their source's time): a window's mean, else the nearest
 * reading, under keys named by that index. */
static void test_gpu_readings_of_a_window(void) {
    static struct sps__stream_machine m; /* large: not on the stack */
    memset(&m, 0, sizeof m);
    const int64_t at[] = {1000, 2000, 3000, 9000};
    const double util[] = {10, 20, 90, 40};
    for (int k = 0; k < 4; k++) {
        struct sps__sample s;
        sps__sample_clear(&s);
        s.ngpus = 1;
        s.gpu[0].index = 2;
        s.gpu[0].source = SPS_SOURCE_NVML;
        for (int v = 0; v < SPS_GPU_METRIC_COUNT; v++)
            s.gpu[0].v[v] = NAN;
        s.gpu[0].v[SPS_M_GPU_UTILIZATION_PERCENT] = util[k];
        s.gpu[0].v[SPS_M_GPU_MEMORY_USED_BYTES] = 1e9 * (k + 1);
        s.read_ns[SPS_SOURCE_NVML] = at[k];
        sps__stream_machine_add(&m, &s);
        sps__stream_machine_add(&m, &s); /* the same reading again is not a new one */
    }
    struct sps__step_line l;
    sps__step_line_init(&l, 0, 1, 10, -1, 10, 0, 1000);
    sps__stream_machine_window(&m, 1500, 3500, &l.machine);
    char buf[2048];
    sps__step_line_json(&l, names3, NULL, buf, sizeof buf);
    CHECK_STR_HAS(buf, "\"machine\": {\"workload_cpu_percent\": null, \"workload_rss_bytes\": null, "
                       "\"system_cpu_percent\": null, \"system_memory_used_bytes\": null, "
                       "\"gpu2_utilization_percent\": 55, \"gpu2_memory_used_bytes\": 2500000000}");
    sps__stream_machine_window(&m, 6000, 7000, &l.machine); /* none inside: 9000 is nearer than 3000 */
    CHECK(l.machine.gpu_utilization_percent[0] == 40);
    sps__stream_machine_window(&m, 0, 500, &l.machine); /* before them all */
    CHECK(l.machine.gpu_utilization_percent[0] == 10);
}


/* Names are escaped, a value that is not a number is null, a line
 * without readings says "machine": null, and waits are summed apart from
 * the zones. */
static void test_json_escapes_and_nulls(void) {
    struct sps__step_line l;
    sps__step_line_init(&l, 7, 1, 10, 3, 11, 1000000000, 1500000000);
    sps__step_line_zone(&l, 2, 5, 250000000);
    sps__step_line_zone(&l, 2, 3, 250000000);
    sps__step_line_wait(&l, 4, 4, 100000000);
    sps__step_line_wait(&l, 4, 6, 25000000);
    sps__step_line_value(&l, 3, NAN);
    char buf[1024];
    int n = sps__step_line_json(&l, names3, NULL, buf, sizeof buf);
    const char *want = "{\"step\": 7, \"name\": \"step\", \"pid\": 10, \"rank\": 3, \"thread\": 11, \"start_s\": 1, "
                       "\"end_s\": 1.5, \"duration_s\": 0.5, \"zones_self_s\": {\"say \\\"hi\\\"\\n\": 0.5}, "
                       "\"waits_s\": {\"all_reduce\": 0.125}, \"microsteps\": 0, \"values\": {\"v\": null}, \"counters\": {}, \"machine\": null, "
                       "\"partial\": false}\n";
    CHECK_MSG(n == (int)strlen(want) && !strcmp(buf, want), "got %s", buf);
    CHECK_EQ_I(sps__step_line_json(&l, names3, NULL, buf, 40), -1);
}

int main(void) {
    RUN_TEST(test_lines_exact);
    RUN_TEST(test_link_at_the_name_not_followed);
    RUN_TEST(test_special_file_at_the_name_refused);
    RUN_TEST(test_waits_for_the_next_step_or_the_grace);
    RUN_TEST(test_lost_steps_are_said);
    RUN_TEST(test_overwritten_zones_mark_steps_partial);
    RUN_TEST(test_json_escapes_and_nulls);
    RUN_TEST(test_gpu_readings_of_a_window);
    return check_report();
}
