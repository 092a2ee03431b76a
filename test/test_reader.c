/*
 * test_reader.c - the reader rejects truncated, corrupted and wrong-version
 * records with an error naming the file and the offset, and a run keeps
 * going without the bad record.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "crc32.h"
#include "model/run.h"
#include "record_format.h"
#include "stepscope.h"
#include "support.h"

static unsigned char *good;
static size_t good_size;
static char dir[512];

static void make_good_record(void) {
    snprintf(dir, sizeof dir, "%s", tmpdir_new("reader"));
    char out[600];
    snprintf(out, sizeof out, "%s/run", dir);
    setenv("STEPSCOPE_RECORD_MB", "8", 1);
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", out, "--", SPS_BIN_DIR "/test_workload", "--steps",
                    "4", NULL};
    int st = run_capture(argv, NULL, 0);
    unsetenv("STEPSCOPE_RECORD_MB");
    if (exit_code_of(st) != 0) {
        fprintf(stderr, "workload run failed\n");
        exit(1);
    }
    char path[700];
    snprintf(path, sizeof path, "%s/run/records", dir);
    struct sps_run run = {0};
    char err[512];
    if (sps__run_load_dir(&run, path, err, sizeof err) != 0 || run.nprocs != 1) {
        fprintf(stderr, "no good record: %s\n", err);
        exit(1);
    }
    int fd = open(run.procs[0].path, O_RDONLY);
    struct stat st2;
    fstat(fd, &st2);
    good_size = (size_t)st2.st_size;
    good = malloc(good_size);
    size_t got = 0;
    while (got < good_size) {
        ssize_t n = read(fd, good + got, good_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    sps__run_free(&run);
}

/* Write a variant of the good record (size bytes of buf) and parse it. */
static int parse_variant(const char *name, const unsigned char *buf, size_t size, char *err, size_t errlen,
                         char *path_out) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s.sps", dir, name);
    write_file(path, buf, size);
    if (path_out)
        strcpy(path_out, path);
    struct sps_process_data p;
    int rc = sps__record_load(path, &p, err, errlen);
    if (rc == 0)
        sps__process_free(&p);
    return rc;
}

static unsigned char *copy_good(void) {
    unsigned char *c = malloc(good_size);
    memcpy(c, good, good_size);
    return c;
}

static const struct sps_rec_header *hdr(const unsigned char *b) {
    return (const struct sps_rec_header *)b;
}

static void expect_error(const char *name, unsigned char *buf, size_t size, int want_rc, uint64_t want_offset,
                         const char *want_text) {
    char err[1024], path[700], where[64];
    int rc = parse_variant(name, buf, size, err, sizeof err, path);
    CHECK_MSG(rc == want_rc, "%s: rc %d, expected %d (%s)", name, rc, want_rc, err);
    if (rc == 0)
        return;
    snprintf(where, sizeof where, ": offset %llu: ", (unsigned long long)want_offset);
    CHECK_STR_HAS(err, path);
    CHECK_STR_HAS(err, where);
    CHECK_STR_HAS(err, want_text);
    CHECK(strchr(err, '\n') == NULL);
}

static void test_good_record_parses(void) {
    char err[512];
    CHECK_EQ_I(parse_variant("good", good, good_size, err, sizeof err, NULL), 0);
}

static void test_truncated(void) {
    expect_error("short", good, 1000, SPS_EFORMAT, 1000, "truncated");
    size_t half = good_size / 2;
    expect_error("half", good, half, SPS_EFORMAT, half, "truncated: the record uses");
}

/* Size of the file at path (-1 when it cannot be stat'ed). */
static long long file_size_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A record is cut to the bytes it used once its process has ended: by
 * the process at exit, by `stepscope run` for one that was killed; the
 * reader takes cut records, and uncut ones (file_size long) too. */
static void test_records_are_cut_to_their_used_size(void) {
    const struct sps_rec_header *h = (const void *)good;
    uint64_t used = h->arena_off + h->arena_used;
    /* the exit handler cut it: used bytes rounded up to a page */
    CHECK_EQ_U(good_size, (used + 4095u) & ~(uint64_t)4095u);
    CHECK(good_size < h->file_size); /* 8 MiB apparent before */
    CHECK_EQ_U(h->file_size, 8u << 20);
    char err[512];
    CHECK_EQ_I(parse_variant("exact", good, (size_t)used, err, sizeof err, NULL), 0);
    expect_error("short by one", good, (size_t)used - 1, SPS_EFORMAT, used - 1, "truncated: the record uses");
    /* an uncut record, as long as its header says */
    unsigned char *full = calloc(1, h->file_size);
    if (full) {
        memcpy(full, good, good_size);
        CHECK_EQ_I(parse_variant("uncut", full, h->file_size, err, sizeof err, NULL), 0);
        free(full);
    }

    /* killed mid-step: nobody ran its exit handler, `stepscope run` cuts it */
    char out[700], records[800];
    snprintf(out, sizeof out, "%s/killed", dir);
    setenv("STEPSCOPE_RECORD_MB", "8", 1);
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", out, "--", SPS_BIN_DIR "/test_workload", "--steps",
                    "20", "--die-at", "12", NULL};
    int st = run_capture(argv, NULL, 0);
    unsetenv("STEPSCOPE_RECORD_MB");
    CHECK_EQ_I(exit_code_of(st), 128 + 9);
    snprintf(records, sizeof records, "%s/records", out);
    struct sps_run run = {0};
    CHECK_EQ_I(sps__run_load_dir(&run, records, err, sizeof err), 0);
    CHECK_EQ_U(run.nprocs, 1);
    CHECK_EQ_U(run.nskipped, 0);
    if (run.nprocs == 1) {
        CHECK(!run.procs[0].closed); /* it never closed its record */
        int fd = open(run.procs[0].path, O_RDONLY);
        struct sps_rec_header kh;
        CHECK(fd >= 0 && pread(fd, &kh, sizeof kh, 0) == (ssize_t)sizeof kh);
        if (fd >= 0)
            close(fd);
        long long size = file_size_of(run.procs[0].path);
        CHECK_EQ_U((uint64_t)size, sps_rec_used_size(&kh));
        CHECK((uint64_t)size < kh.file_size);
    }
    sps__run_free(&run);
}

static void test_bad_magic_and_incomplete(void) {
    unsigned char *c = copy_good();
    c[0] = 'X';
    expect_error("magic", c, good_size, SPS_EFORMAT, 0, "bad magic");
    memset(c, 0, 8);
    expect_error("incomplete", c, good_size, SPS_EFORMAT, 0, "incomplete record");
    free(c);
}

static void test_wrong_version(void) {
    unsigned char *c = copy_good();
    uint32_t v = 99;
    memcpy(c + offsetof(struct sps_rec_header, version), &v, sizeof v);
    expect_error("version", c, good_size, SPS_EVERSION, offsetof(struct sps_rec_header, version),
                 "version 99; this build reads versions 1 to 2");
    free(c);
}

static void set_header_u32(unsigned char *c, size_t off, uint32_t v);

/* Version 2 only added GPU-span events: a version-1 record is read as
 * before, and one of version 0 is no record of any version. */
static void test_version_1_still_read(void) {
    unsigned char *c = copy_good();
    set_header_u32(c, offsetof(struct sps_rec_header, version), 1);
    expect_error("version1", c, good_size, 0, 0, "");
    set_header_u32(c, offsetof(struct sps_rec_header, version), 0);
    expect_error("version0", c, good_size, SPS_EVERSION, offsetof(struct sps_rec_header, version),
                 "version 0; this build reads versions 1 to 2");
    free(c);
}

static void test_corrupted_header(void) {
    unsigned char *c = copy_good();
    c[offsetof(struct sps_rec_header, hostname)] ^= 0x5a;
    expect_error("crc", c, good_size, SPS_EFORMAT, offsetof(struct sps_rec_header, header_crc), "checksum");
    free(c);
}

static void test_corrupted_thread_directory(void) {
    unsigned char *c = copy_good();
    uint64_t bogus = (uint64_t)1 << 40;
    uint64_t at = hdr(c)->threads_off;
    memcpy(c + at, &bogus, sizeof bogus);
    expect_error("threaddir", c, good_size, SPS_EFORMAT, at, "out of bounds");
    free(c);
}

static void test_corrupted_event(void) {
    unsigned char *c = copy_good();
    uint64_t seg_off;
    memcpy(&seg_off, c + hdr(c)->threads_off, sizeof seg_off);
    const struct sps_rec_thread *seg = (const void *)(c + seg_off);
    uint64_t ev_off = seg->ring_off[SPS_RING_ZONES];
    uint32_t bogus = 9999;
    memcpy(c + ev_off + offsetof(struct sps_rec_event, name), &bogus, sizeof bogus);
    expect_error("event", c, good_size, SPS_EFORMAT, ev_off, "unknown name id (name id 9999");
    /* the same event in the record of a process that did not exit cleanly
     * (killed mid-write, or still running) is dropped, not fatal */
    uint32_t live = SPS_REC_STATE_LIVE;
    memcpy(c + offsetof(struct sps_rec_header, state), &live, sizeof live);
    char err[1024];
    struct sps_process_data p;
    char path[800];
    snprintf(path, sizeof path, "%s/event-live.sps", dir);
    write_file(path, c, good_size);
    CHECK_EQ_I(sps__record_load(path, &p, err, sizeof err), 0);
    CHECK_EQ_U(p.threads[0].dropped[SPS_RING_ZONES], 1);
    CHECK_EQ_U(p.threads[0].nevents[SPS_RING_ZONES], p.threads[0].offered[SPS_RING_ZONES] - 1);
    sps__process_free(&p);
    free(c);
}

/* Change a checksummed header field and fix the checksum, as a crafted
 * file would. */
static void set_header_u32(unsigned char *c, size_t off, uint32_t v) {
    memcpy(c + off, &v, sizeof v);
    uint32_t crc = sps__crc32(c, offsetof(struct sps_rec_header, header_crc));
    memcpy(c + offsetof(struct sps_rec_header, header_crc), &crc, sizeof crc);
}

static void test_crafted_headers(void) {
    unsigned char *c = copy_good();
    set_header_u32(c, offsetof(struct sps_rec_header, names_cap), 0xFFFFFFFFu);
    expect_error("names_cap", c, good_size, SPS_EFORMAT, offsetof(struct sps_rec_header, names_cap),
                 "capacity 4294967295 out of range");
    free(c);
    c = copy_good();
    set_header_u32(c, offsetof(struct sps_rec_header, ring_cap), 1u << 30);
    expect_error("ring_cap", c, good_size, SPS_EFORMAT, offsetof(struct sps_rec_header, ring_cap),
                 "not a power of two up to");
    free(c);
    c = copy_good();
    double tiny = 1e-300;
    memcpy(c + offsetof(struct sps_rec_header, ticks_per_second), &tiny, sizeof tiny);
    set_header_u32(c, offsetof(struct sps_rec_header, version), SPS_REC_VERSION);
    expect_error("rate", c, good_size, SPS_EFORMAT, offsetof(struct sps_rec_header, ticks_per_second),
                 "not plausible");
    free(c);
    /* a segment offset that is in bounds but misaligned */
    c = copy_good();
    uint64_t seg;
    uint64_t at = hdr(c)->threads_off;
    memcpy(&seg, c + at, sizeof seg);
    seg += 4;
    memcpy(c + at, &seg, sizeof seg);
    expect_error("misaligned", c, good_size, SPS_EFORMAT, at, "misaligned");
    free(c);
}

/* Thread segments that share one set of rings (a crafted or damaged
 * directory): each would copy the same events again, so a small file
 * could cost gigabytes.  More segments than the arena holds with their
 * rings is an error naming threads_count. */
static void test_threads_sharing_rings(void) {
    const struct sps_rec_header *h = hdr(good);
    uint64_t seg0;
    memcpy(&seg0, good + h->threads_off, sizeof seg0);
    uint64_t seg_len = (sizeof(struct sps_rec_thread) + 7u) & ~(uint64_t)7u;
    const uint32_t n = 3; /* the arena holds one thread's rings, not three */
    CHECK((good_size - h->arena_off) / sps_rec_thread_min_bytes(h) < n);
    size_t size = good_size + (n - 1) * seg_len;
    unsigned char *c = calloc(1, size);
    memcpy(c, good, good_size);
    for (uint32_t i = 1; i < n; i++) {
        uint64_t at = good_size + (i - 1) * seg_len;
        memcpy(c + at, good + seg0, sizeof(struct sps_rec_thread));
        memcpy(c + at + offsetof(struct sps_rec_thread, index), &i, sizeof i);
        memcpy(c + h->threads_off + i * sizeof(uint64_t), &at, sizeof at);
    }
    memcpy(c + offsetof(struct sps_rec_header, threads_count), &n, sizeof n);
    expect_error("shared-rings", c, size, SPS_EFORMAT, offsetof(struct sps_rec_header, threads_count),
                 "3 thread segments with their rings need");
    char err[1024];
    parse_variant("shared-rings", c, size, err, sizeof err, NULL);
    CHECK_STR_HAS(err, "(their rings overlap)");
    free(c);
}

static void test_missing_file(void) {
    char err[512];
    struct sps_process_data p;
    CHECK_EQ_I(sps__record_load("/nonexistent/x.sps", &p, err, sizeof err), SPS_EIO);
    CHECK_STR_HAS(err, "/nonexistent/x.sps: No such file");
}

static void test_run_skips_bad_record(void) {
    char rdir[700], path[800];
    snprintf(rdir, sizeof rdir, "%s/mixed", dir);
    mkdir(rdir, 0777);
    snprintf(path, sizeof path, "%s/1-0.sps", rdir);
    write_file(path, good, good_size);
    snprintf(path, sizeof path, "%s/2-0.sps", rdir);
    write_file(path, good, 5000); /* truncated */
    struct sps_run run = {0};
    char err[512];
    CHECK_EQ_I(sps__run_load_dir(&run, rdir, err, sizeof err), 0);
    CHECK_EQ_U(run.nprocs, 1);
    CHECK_EQ_U(run.nskipped, 1);
    if (run.nskipped)
        CHECK_STR_HAS(run.skipped[0].error, "2-0.sps: offset 5000: truncated");
    sps__run_free(&run);
}

int main(void) {
    make_good_record();
    RUN_TEST(test_good_record_parses);
    RUN_TEST(test_truncated);
    RUN_TEST(test_records_are_cut_to_their_used_size);
    RUN_TEST(test_bad_magic_and_incomplete);
    RUN_TEST(test_wrong_version);
    RUN_TEST(test_version_1_still_read);
    RUN_TEST(test_corrupted_header);
    RUN_TEST(test_corrupted_thread_directory);
    RUN_TEST(test_corrupted_event);
    RUN_TEST(test_crafted_headers);
    RUN_TEST(test_threads_sharing_rings);
    RUN_TEST(test_missing_file);
    RUN_TEST(test_run_skips_bad_record);
    free(good);
    return check_report();
}
