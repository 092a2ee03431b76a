/*
 * test_tensorboard.c - the pieces of the TensorBoard event files that can
 * be checked against published values: CRC-32C against the check value
 * of the Castagnoli polynomial ("123456789") and RFC 3720's iSCSI test
 * vectors, the slicing-by-8 path against a bit-at-a-time CRC written
 * here, TFRecord's mask, and one Event record encoded byte for byte as
 * the protobuf wire format lays it out; then the directory layout and the
 * tags of a report model made by hand (ranks, a process of no rank, a
 * second step name, a GPU, a sensor, a merged run's other host); the
 * temporary of an event file, whose name must not hold "tfevents"
 * (TensorBoard would load it), and the removal of stepscope's own earlier
 * event files.
 * tensorboard_test.py decodes whole files of real runs with protoc.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"
#include "render/crc32c.h"
#include "render/tensorboard.h"
#include "render/tfevent.h"
#include "sampler/sampler.h"
#include "stepscope.h"
#include "support.h"

/* CRC-32C one bit at a time, straight from the definition. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t len) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

static void test_crc32c_vectors(void) {
    CHECK_EQ_U(sps__crc32c("123456789", 9), 0xE3069283u); /* the check value of CRC-32C */
    CHECK_EQ_U(sps__crc32c("", 0), 0);
    /* RFC 3720 (iSCSI), appendix B.4 */
    unsigned char buf[32];
    memset(buf, 0, sizeof buf);
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x8A9136AAu);
    memset(buf, 0xFF, sizeof buf);
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x113FDB5Cu);
}

/* Every length and alignment the eight-byte loop and its tail meet. */
static void test_crc32c_slicing(void) {
    unsigned char data[300];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof data; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        data[i] = (unsigned char)x;
    }
    int mismatches = 0;
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len + off <= sizeof data; len++)
            mismatches += sps__crc32c(data + off, len) != crc32c_bitwise(data + off, len);
    CHECK_EQ_I(mismatches, 0);
}

static void test_mask(void) {
    CHECK_EQ_U(sps__crc32c_mask(0), 0xA282EAD8u);
    CHECK_EQ_U(sps__crc32c_mask(1), (1u << 17) + 0xA282EAD8u);       /* rotated right by 15 */
    CHECK_EQ_U(sps__crc32c_mask(1u << 15), 1u + 0xA282EAD8u);
    CHECK_EQ_U(sps__crc32c_mask(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xA282EAD8u);
    CHECK_EQ_U(sps__crc32c_mask(0xFFFFFFFFu), 0xFFFFFFFFu + 0xA282EAD8u); /* wraps */
}

/* TFRecord's mask, written out here: rotate right by 15, add the constant. */
static uint32_t mask_here(uint32_t c) {
    return (uint32_t)(((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

static uint64_t le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The framing around data: length, its masked CRC, data, its masked CRC. */
static void check_frame(const struct sps__tfevent_buf *b, const unsigned char *data, size_t len) {
    CHECK_EQ_U(b->len, 12 + len + 4);
    CHECK_EQ_U(le(b->p, 8), len);
    CHECK_EQ_U(le(b->p + 8, 4), mask_here(crc32c_bitwise(b->p, 8)));
    CHECK(memcmp(b->p + 12, data, len) == 0);
    CHECK_EQ_U(le(b->p + 12 + len, 4), mask_here(crc32c_bitwise(data, len)));
}

static void test_event_bytes(void) {
    struct sps__tfevent_buf b = {0};
    /* Event{wall_time: 2.0, step: 300, summary: {value: [{tag: "a", simple_value: 1.0},
     * {tag: "bc", simple_value: -2.5}]}} */
    struct sps__tfevent_scalar v[2] = {{"a", 1, 1.0f}, {"bc", 2, -2.5f}};
    CHECK(sps__tfevent_scalars(&b, 2.0, 300, v, 2) == 0);
    static const unsigned char want[] = {
        0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, /* 1: double 2.0 */
        0x10, 0xAC, 0x02,                /* 2: varint 300 */
        0x2A, 0x15,                      /* 5: Summary, 21 bytes */
        0x0A, 0x08, 0x0A, 0x01, 'a', 0x15, 0x00, 0x00, 0x80, 0x3F,        /* value: "a", 1.0f */
        0x0A, 0x09, 0x0A, 0x02, 'b', 'c', 0x15, 0x00, 0x00, 0x20, 0xC0}; /* value: "bc", -2.5f */
    check_frame(&b, want, sizeof want);

    CHECK(sps__tfevent_file_version(&b, 0.5) == 0);
    static const unsigned char version[] = {0x09, 0, 0, 0, 0, 0, 0, 0xE0, 0x3F, /* 1: double 0.5 */
                                            0x1A, 13, 'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2'};
    check_frame(&b, version, sizeof version);

    /* a long tag: a two-byte length; step 0 and no scalars */
    char tag[200];
    memset(tag, 'x', sizeof tag);
    struct sps__tfevent_scalar big = {tag, sizeof tag, 0.0f};
    CHECK(sps__tfevent_scalars(&b, 0, 0, &big, 1) == 0);
    /* wall_time +0.0 and step 0 are their defaults: left out, as protoc's serializers do */
    CHECK_EQ_U(b.len, 12 + (1 + 2 + (1 + 2 + (1 + 2 + 200 + 5))) + 4);
    CHECK_EQ_U(b.p[12], 0x2A);
    CHECK_EQ_U(b.p[12 + 1], 0x80 | ((1 + 2 + 208) & 0x7F)); /* the summary's length, varint */
    CHECK_EQ_U(b.p[12 + 2], (1 + 2 + 208) >> 7);
    CHECK(sps__tfevent_scalars(&b, -0.0, -1, NULL, 0) == 0);
    static const unsigned char empty[] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0x80, /* -0.0 is not the default */
                                          0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, /* -1 */
                                          0x2A, 0x00};
    check_frame(&b, empty, sizeof empty);
    sps__tfevent_buf_free(&b);
}

/* ------------------------------------------------------------ layout */

#define ORIGIN_NS 1000000000ull
#define AT(s) (ORIGIN_NS + (uint64_t)llround((s) * 1e9))
#define START_UNIX_NS 1700000000123456789ll

struct model {
    struct sps_report rep;
    struct sps_name_summary names[6];
    struct sps_process_data procs[2];
    struct sps_step_row rows[6];
    double cells[6][6];
    struct sps__sampler_result sampler;
    struct sps__series_point rss[3], util[3], temp[3];
};

static int metric_index(int gpu, const char *name) {
    for (int i = 0; i < (gpu ? SPS_GPU_METRIC_COUNT : SPS_HOST_METRIC_COUNT); i++)
        if (!strcmp((gpu ? sps_gpu_metric_info(i) : sps_host_metric_info(i))->name, name))
            return i;
    return 0;
}

static struct sps__series series3(struct sps__series_point *p, double v) {
    for (int i = 0; i < 3; i++)
        p[i] = (struct sps__series_point){.t_ns = (int64_t)AT(0.1 * i), .mean = v * (i + 1), .max = v * (i + 1), .n = 1};
    return (struct sps__series){.points = p, .count = 3, .cap = 3, .per_point = 1, .n = 3};
}

/* Process 0 (pid 100, rank 2, host "a"): three steps "train", one step
 * "eval" on the same thread.  Process 1 (pid 200, no rank, host "b"): two
 * steps "train".  Zone "fwd", value "loss", counter "samples". */
static void model_build(struct model *m) {
    memset(m, 0, sizeof *m);
    static const struct {
        const char *name;
        uint32_t kind;
    } names[6] = {{"train", SPS_KIND_STEP}, {"eval/x", SPS_KIND_STEP}, {"fwd", SPS_KIND_ZONE},
                  {"loss", SPS_KIND_VALUE}, {"samples", SPS_KIND_COUNTER}, {"all_reduce", SPS_KIND_WAIT}};
    for (int i = 0; i < 6; i++) {
        snprintf(m->names[i].name, sizeof m->names[i].name, "%s", names[i].name);
        m->names[i].kind = names[i].kind;
    }
    m->procs[0] = (struct sps_process_data){.pid = 100, .rank = 2, .hostname = "a"};
    m->procs[1] = (struct sps_process_data){.pid = 200, .rank = -1, .hostname = "b"};
    static const struct {
        size_t process;
        int tid;
        long name;
        uint64_t index;
    } rows[6] = {{0, 101, 0, 0}, {0, 101, 0, 1}, {0, 101, 1, 0}, {0, 101, 0, 2}, {1, 201, 0, 0}, {1, 201, 0, 1}};
    for (int r = 0; r < 6; r++) {
        for (int k = 0; k < 6; k++)
            m->cells[r][k] = NAN;
        m->cells[r][2] = 0.001 * (r + 1);
        if (r != 1)
            m->cells[r][3] = 1.0 / (r + 1); /* row 1 has no loss */
        m->cells[r][4] = 8;
        m->rows[r] = (struct sps_step_row){.index = rows[r].index, .process = rows[r].process, .tid = rows[r].tid,
                                           .name = rows[r].name, .start_ns = AT(0.04 * r),
                                           .end_ns = AT(0.04 * r + 0.02), .by_name = m->cells[r]};
    }
    m->rep.run = (struct sps_run){.nprocs = 2, .procs = m->procs, .nnames = 6, .names = m->names, .nsteps = 6,
                                  .steps = m->rows, .start_ns = ORIGIN_NS};
    m->rep.info.start_realtime_ns = START_UNIX_NS;
    struct sps__sampler_result *s = &m->sampler;
    s->interval_ms = 100;
    s->machine_interval_ms = 100;
    s->host[metric_index(0, "workload_rss_bytes")] = series3(m->rss, 1048576.0);
    s->ngpus = 1;
    s->gpu[0].index = 0;
    s->gpu[0].m[metric_index(1, "gpu_utilization_percent")] = series3(m->util, 10);
    s->nsensors = 1;
    snprintf(s->sensor[0].label, sizeof s->sensor[0].label, "k10temp Tctl");
    s->sensor[0].celsius = series3(m->temp, 40);
    m->rep.info.sampler = s;
}

static char file_buf[1 << 16];

/* The one event file in dir (not below it): its size, its bytes in
 * file_buf; -1 when there is not exactly one. */
static long only_event_file(const char *dir, char *name, size_t len) {
    DIR *d = opendir(dir);
    int n = 0;
    long size = -1;
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "events.out.tfevents.", 20)) {
            n++;
            snprintf(name, len, "%s", e->d_name);
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            size = read_file(path, file_buf, sizeof file_buf);
        }
    if (d)
        closedir(d);
    CHECK_MSG(n == 1, "%s: %d event files", dir, n);
    return n == 1 ? size : -1;
}

static int has(long size, const char *s) {
    return size > 0 && memmem(file_buf, (size_t)size, s, strlen(s)) != NULL;
}

/* The records' step fields, in order (step 0 has none: proto3's default). */
static int count_records(long size) {
    int n = 0;
    for (long off = 0; off + 16 <= size; n++) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | (unsigned char)file_buf[off + i];
        off += 16 + (long)len;
    }
    return n;
}

static void test_layout_and_tags(void) {
    struct model m;
    model_build(&m);
    const char *dir = tmpdir_new("tblayout");
    char out[1024], sub[1200], name[512];
    snprintf(out, sizeof out, "%s/tb/new", dir); /* made with its parent */
    char err[512] = "";
    int rc = sps__export_tensorboard(&m.rep, out, NULL, err, sizeof err);
    CHECK_MSG(rc == 0, "export: %s", err);

    /* rank 2's main stream: "train", three steps */
    snprintf(sub, sizeof sub, "%s/rank-2", out);
    long size = only_event_file(sub, name, sizeof name);
    CHECK_STR_HAS(name, "events.out.tfevents.1700000000.a.100.101.stepscope");
    CHECK_EQ_I(count_records(size), 1 + 3);
    CHECK(has(size, "brain.Event:2"));
    CHECK(has(size, "stepscope/step_ms") && has(size, "stepscope/phase/fwd_ms") &&
          has(size, "stepscope/value/loss") && has(size, "stepscope/counter/samples") &&
          has(size, "stepscope/throughput/samples_per_s"));
    CHECK(!has(size, "stepscope/wait/all_reduce_ms")); /* no step waited: nothing written */
    CHECK(has(size, "stepscope/machine/workload_rss_mib"));
    CHECK(has(size, "stepscope/machine/gpu0/gpu_utilization_percent"));
    CHECK(has(size, "stepscope/machine/sensor/k10temp Tctl_celsius"));
    CHECK(!has(size, "_bytes"));
    /* its other step name, one step, in a directory named after it */
    snprintf(sub, sizeof sub, "%s/rank-2/eval_x", out);
    CHECK_EQ_I(count_records(only_event_file(sub, name, sizeof name)), 1 + 1);
    /* the process of no rank: in DIR itself */
    size = only_event_file(out, name, sizeof name);
    CHECK_STR_HAS(name, ".b.200.201.stepscope");
    CHECK_EQ_I(count_records(size), 1 + 2);
    CHECK(has(size, "stepscope/machine/workload_rss_mib"));

    /* merged from hosts a and b, a the reference: b's steps get no machine readings */
    m.rep.run.merge.ninputs = 2;
    snprintf(m.rep.run.merge.reference_host, sizeof m.rep.run.merge.reference_host, "a");
    snprintf(out, sizeof out, "%s/merged", dir);
    CHECK(sps__export_tensorboard(&m.rep, out, NULL, err, sizeof err) == 0);
    size = only_event_file(out, name, sizeof name);
    CHECK(has(size, "stepscope/step_ms") && !has(size, "stepscope/machine/"));
    snprintf(sub, sizeof sub, "%s/rank-2", out);
    CHECK(has(only_event_file(sub, name, sizeof name), "stepscope/machine/workload_rss_mib"));

    /* a second thread with steps of the main name: named by pid and tid */
    m.rep.run.merge.ninputs = 0;
    m.rows[2].name = 0, m.rows[2].tid = 102;
    snprintf(out, sizeof out, "%s/threads", dir);
    CHECK(sps__export_tensorboard(&m.rep, out, NULL, err, sizeof err) == 0);
    snprintf(sub, sizeof sub, "%s/rank-2/train-pid100-tid102", out);
    CHECK_EQ_I(count_records(only_event_file(sub, name, sizeof name)), 1 + 1);

    /* two names of one thread that make the same directory name: apart */
    m.rows[2].tid = 101, m.rows[2].name = 1;                   /* "eval/x", one step */
    m.rows[3].name = 5, m.names[5].kind = SPS_KIND_STEP;       /* and a step row "all_reduce"... */
    snprintf(m.names[5].name, sizeof m.names[5].name, "eval_x"); /* ...named "eval_x" */
    snprintf(out, sizeof out, "%s/clash", dir);
    CHECK(sps__export_tensorboard(&m.rep, out, NULL, err, sizeof err) == 0);
    snprintf(sub, sizeof sub, "%s/rank-2/eval_x-pid100-tid101-1", out);
    CHECK_EQ_I(count_records(only_event_file(sub, name, sizeof name)), 1 + 1);
    snprintf(sub, sizeof sub, "%s/rank-2/eval_x-pid100-tid101-2", out);
    CHECK_EQ_I(count_records(only_event_file(sub, name, sizeof name)), 1 + 1);

    /* a file where the directory should be: one line, an error */
    snprintf(out, sizeof out, "%s/tb/new/rank-2/events.out.tfevents.1700000000.a.100.101.stepscope", dir);
    rc = sps__export_tensorboard(&m.rep, out, NULL, err, sizeof err);
    CHECK(rc != 0 && strchr(err, '\n') == NULL && strstr(err, "events.out.tfevents"));
}

/* The entries of dir other than . and .., names joined by '|' into out;
 * returns how many. */
static int dir_entries(const char *dir, char *out, size_t len) {
    DIR *d = opendir(dir);
    int n = 0;
    size_t used = 0;
    out[0] = '\0';
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        int w = snprintf(out + used, len - used, "%s%s", n ? "|" : "", e->d_name);
        if (w > 0 && (size_t)w < len - used)
            used += (size_t)w;
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* While an event file is written, its temporary must not be a name
 * TensorBoard loads ("tfevents" anywhere in it: io_wrapper's
 * IsTensorFlowEventsFile): a TensorBoard watching the directory would read
 * the temporary and then the committed file, every step twice. */
static void test_temporary_name(void) {
    const char *dir = tmpdir_new("tb-temp");
    char path[4096], names[1024], want[4200];
    snprintf(path, sizeof path, "%s/events.out.tfevents.0000000001.host.12.34.stepscope", dir);
    char err[512] = "";
    struct sps_out o;
    /* written and abandoned: the temporary alone, then nothing */
    CHECK_EQ_I(sps__tensorboard_open(&o, path, err, sizeof err), 0);
    fputs("partial", o.f);
    /* any name the temporary gets (where there is no O_TMPFILE, or for the
     * instant before the commit's rename) is made from this stem */
    CHECK_MSG(!strcmp(o.file.stem, "stepscope-events"), "the temporaries' stem: %s", o.file.stem);
    CHECK_EQ_I(dir_entries(dir, names, sizeof names), o.file.anonymous ? 0 : 1);
    CHECK_MSG(!strstr(names, "tfevents"), "the temporary's name holds tfevents: %s", names);
    if (!o.file.anonymous)
        CHECK_MSG(!strncmp(names, ".stepscope-events.tmp-", 22), "the temporary: %s", names);
    sps__out_abort(&o);
    CHECK_EQ_I(dir_entries(dir, names, sizeof names), 0);
    /* written and committed: the final name alone */
    CHECK_EQ_I(sps__tensorboard_open(&o, path, err, sizeof err), 0);
    fputs("whole", o.f);
    CHECK_EQ_I(dir_entries(dir, names, sizeof names), o.file.anonymous ? 0 : 1);
    CHECK_MSG(!strstr(names, "tfevents"), "the temporary's name holds tfevents: %s", names);
    CHECK_EQ_I(sps__out_commit(&o, err, sizeof err), 0);
    CHECK_EQ_I(dir_entries(dir, names, sizeof names), 1);
    snprintf(want, sizeof want, "%s", strrchr(path, '/') + 1);
    CHECK_MSG(!strcmp(names, want), "after the commit: %s", names);
    char buf[16];
    CHECK_EQ_I(read_file(path, buf, sizeof buf), 5);
}

/* `stepscope run -o DIR` removes the event files an earlier run of its own
 * left in DIR and in the directories the layout makes (rank-N/, a step
 * name's below it), never another writer's, never through a symlink. */
static void test_remove_own(void) {
    const char *tmp = tmpdir_new("tb-remove");
    char dir[4096], p[4200];
    snprintf(dir, sizeof dir, "%s", tmp);
    static const char *const ours[] = {"events.out.tfevents.0000000001.h.1.1.stepscope",
                                       "rank-0/events.out.tfevents.0000000001.h.2.2.stepscope",
                                       "rank-0/loader/events.out.tfevents.0000000001.h.2.3.stepscope"};
    static const char *const theirs[] = {"events.out.tfevents.1700000000.h.99.0",       /* a SummaryWriter's */
                                         "rank-0/events.out.tfevents.1700000000.h.98.0.v2",
                                         "notes.stepscope", "rank-0/a/b/events.out.tfevents.1.h.1.1.stepscope"};
    snprintf(p, sizeof p, "%s/rank-0/loader", dir);
    CHECK_EQ_I(sps__platform_mkdirs(p), 0);
    snprintf(p, sizeof p, "%s/rank-0/a/b", dir);
    CHECK_EQ_I(sps__platform_mkdirs(p), 0);
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, ours[i]);
        write_file(p, "x", 1);
    }
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, theirs[i]);
        write_file(p, "x", 1);
    }
    /* a link named like ours, to a file elsewhere: neither removed nor followed */
    char target[4200], link[4200];
    snprintf(target, sizeof target, "%s/rank-0/a/target", dir);
    write_file(target, "keep", 4);
    snprintf(link, sizeof link, "%s/events.out.tfevents.0000000002.h.1.1.stepscope", dir);
    CHECK_EQ_I(symlink(target, link), 0);
    char err[512] = "";
    CHECK_EQ_I(sps__tensorboard_remove_own(dir, err, sizeof err), 3);
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, ours[i]);
        CHECK_MSG(access(p, F_OK) != 0, "%s is still there", ours[i]);
    }
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, theirs[i]);
        CHECK_MSG(access(p, F_OK) == 0, "%s was removed", theirs[i]);
    }
    char buf[8];
    CHECK_EQ_I(read_file(target, buf, sizeof buf), 4);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    /* nothing of ours left: 0; a directory that does not exist: 0 */
    CHECK_EQ_I(sps__tensorboard_remove_own(dir, err, sizeof err), 0);
    snprintf(p, sizeof p, "%s/none", dir);
    CHECK_EQ_I(sps__tensorboard_remove_own(p, err, sizeof err), 0);
}

int main(void) {
    RUN_TEST(test_crc32c_vectors);
    RUN_TEST(test_crc32c_slicing);
    RUN_TEST(test_mask);
    RUN_TEST(test_event_bytes);
    RUN_TEST(test_layout_and_tags);
    RUN_TEST(test_temporary_name);
    RUN_TEST(test_remove_own);
    return check_report();
}
