/*
 * test_followed.c - the records of a directory as the live readers follow
 * them (src/live/followed.c): a record appearing in the directory after
 * the first look, its header not written yet, its names published in
 * batches, an entry not published whole, its threads, and the file
 * growing.  The record is one a child process made; the test copies it
 * and plays its publication back by rewriting its header and name
 * entries in place.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "live/followed.h"
#include "record_format.h"
#include "support.h"

#define NNAMES 40
/* Longer than the live view's 48 bytes: the cache keeps it whole. */
#define LONG_NAME \
    "a-zone-name-of-one-hundred-and-ten-bytes-so-that-a-cache-of-forty-eight-bytes-would-cut-it-......-end"

static void name_of(int i, char *buf, size_t len) {
    if (i == 7)
        snprintf(buf, len, "%s", LONG_NAME);
    else
        snprintf(buf, len, "n%02d", i);
}

/* Record NNAMES zone names (in order) in a child process under dir. */
static void record_names(const char *dir) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STEPSCOPE_RUN_DIR", dir, 1);
        for (int i = 0; i < NNAMES; i++) {
            char name[128];
            name_of(i, name, sizeof name);
            struct sps_site *site = sps_site_get(name, SPS_KIND_ZONE);
            sps_zone_end(sps_zone_begin(site));
        }
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The bytes of the one record under dir/records. */
static char *the_record(const char *dir, size_t *len) {
    char records[600], path[1200];
    snprintf(records, sizeof records, "%s/records", dir);
    DIR *d = opendir(records);
    char *data = NULL;
    struct dirent *e;
    while (d && !data && (e = readdir(d)))
        if (strstr(e->d_name, ".sps")) {
            snprintf(path, sizeof path, "%s/%s", records, e->d_name);
            data = read_whole(path, len);
        }
    if (d)
        closedir(d);
    return data;
}

static void put_u32(int fd, uint64_t off, uint32_t v) {
    CHECK(pwrite(fd, &v, sizeof v, (off_t)off) == (ssize_t)sizeof v);
}

static void publish(int fd, uint32_t count) {
    put_u32(fd, offsetof(struct sps_rec_header, names_count), count);
}

/* A reader's own record struct, the followed record first. */
struct reader_rec {
    struct sps__followed r;
    uint64_t mine;
};

static int has_name(const struct sps__followed *f, uint32_t id, int i) {
    char want[128];
    name_of(i, want, sizeof want);
    return id >= 1 && id <= f->nnames && f->kind[id - 1] == SPS_KIND_ZONE && strcmp(f->name[id - 1], want) == 0;
}

static void test_record_followed_as_it_grows(void) {
    const char *made = tmpdir_new("followed-src");
    record_names(made);
    size_t len = 0;
    char *rec = the_record(made, &len);
    CHECK(rec && len > SPS_REC_HEADER_SIZE);
    if (!rec)
        return;
    struct sps_rec_header h;
    memcpy(&h, rec, sizeof h);
    CHECK_EQ_U(h.names_count, NNAMES);

    const char *run = tmpdir_new("followed");
    char records[600], path[1200], other[1200], notes[1200];
    snprintf(records, sizeof records, "%s/records", run);
    struct sps__followed_dir d;
    CHECK(sps__followed_dir_init(&d, records, sizeof(struct reader_rec)) == 0);

    /* the directory is not there yet, then holds no record */
    sps__followed_discover(&d);
    CHECK_EQ_U(d.nrec, 0);
    CHECK(mkdir(records, 0777) == 0);
    snprintf(notes, sizeof notes, "%s/notes.txt", records);
    write_file(notes, "x", 1);
    sps__followed_discover(&d);
    CHECK_EQ_U(d.nrec, 0);

    /* a record appears, its header not written yet (magic still zero) */
    snprintf(path, sizeof path, "%s/100-0.sps", records);
    char *blank = calloc(1, len);
    write_file(path, blank, len);
    free(blank);
    sps__followed_discover(&d);
    CHECK_EQ_U(d.nrec, 1);
    if (d.nrec != 1)
        goto out;
    struct sps__followed *f = d.rec[0];
    CHECK(strcmp(f->file, "100-0.sps") == 0);
    CHECK(!sps__followed_refresh(f));
    CHECK(f->state == SPS_LIVE_REC_PENDING);
    ((struct reader_rec *)f)->mine = 42; /* the reader's part is its own */

    /* the header is written, no name published yet */
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    CHECK(pwrite(fd, rec, len, 0) == (ssize_t)len);
    publish(fd, 0);
    CHECK(sps__followed_refresh(f));
    CHECK(f->state == SPS_LIVE_REC_OK);
    CHECK_EQ_U(f->nnames, 0);
    CHECK_EQ_U(f->size, len);

    /* names published in batches: 5, then past one read's batch of 32 */
    publish(fd, 5);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->nnames, 5);
    CHECK(has_name(f, 1, 0) && has_name(f, 5, 4));
    publish(fd, 37);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->nnames, 37);
    CHECK(has_name(f, 8, 7)); /* the long name, whole */
    CHECK_EQ_U(strlen(f->name[7]), strlen(LONG_NAME));
    CHECK(has_name(f, 33, 32) && has_name(f, 37, 36));

    /* entry 39 counted but not whole: empty, then unterminated, then of no
     * known kind; caching stops before it each time */
    uint64_t e39 = h.names_off + 38u * sizeof(struct sps_rec_name);
    struct sps_rec_name saved;
    memcpy(&saved, rec + e39, sizeof saved);
    struct sps_rec_name bad = saved;
    memset(bad.name, 0, sizeof bad.name);
    CHECK(pwrite(fd, &bad, sizeof bad, (off_t)e39) == (ssize_t)sizeof bad);
    publish(fd, NNAMES);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->nnames, 38);
    memset(bad.name, 'x', sizeof bad.name);
    CHECK(pwrite(fd, &bad, sizeof bad, (off_t)e39) == (ssize_t)sizeof bad);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->nnames, 38);
    bad = saved;
    bad.kind = SPS_KIND_LAST + 1u;
    CHECK(pwrite(fd, &bad, sizeof bad, (off_t)e39) == (ssize_t)sizeof bad);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->nnames, 38);
    /* ... then written whole: the rest follows */
    CHECK(pwrite(fd, &saved, sizeof saved, (off_t)e39) == (ssize_t)sizeof saved);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->nnames, NNAMES);
    CHECK(has_name(f, 39, 38) && has_name(f, 40, 39));

    /* the child's one thread, its segment in the arena */
    CHECK_EQ_U(sps__followed_threads(f), 1);
    uint64_t seg = 0;
    CHECK(sps__followed_thread_seg(f, 0, &seg) == 0);
    CHECK(seg >= h.arena_off && seg < len);
    put_u32(fd, offsetof(struct sps_rec_header, threads_count), h.threads_cap + 1u);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(sps__followed_threads(f), 0);
    put_u32(fd, offsetof(struct sps_rec_header, threads_count), 1);
    /* more segments than the file holds with their rings (they would
     * share them, and be read once each): only as many as fit */
    CHECK_EQ_U((len - h.arena_off) / sps_rec_thread_min_bytes(&h), 1);
    put_u32(fd, offsetof(struct sps_rec_header, threads_count), 2);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(sps__followed_threads(f), 1);
    put_u32(fd, offsetof(struct sps_rec_header, threads_count), 1);

    /* a count past the table: not readable this time, the names kept */
    publish(fd, h.names_cap + 1u);
    CHECK(!sps__followed_refresh(f));
    CHECK_EQ_U(f->nnames, NNAMES);
    publish(fd, NNAMES);

    /* the file grows (a thread allocating after the exit's cut): looked
     * at again once the arena handed out reaches past the size known */
    CHECK(ftruncate(fd, (off_t)(len + 65536)) == 0);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->size, len);
    uint64_t used = len + 65536 - h.arena_off;
    CHECK(pwrite(fd, &used, sizeof used, offsetof(struct sps_rec_header, arena_used)) == (ssize_t)sizeof used);
    CHECK(sps__followed_refresh(f));
    CHECK_EQ_U(f->size, len + 65536);
    CHECK(sps__followed_in_arena(f, h.arena_off, 8));
    CHECK(sps__followed_in_arena(f, len + 65528, 8));
    CHECK(!sps__followed_in_arena(f, len + 65536, 8));
    CHECK(!sps__followed_in_arena(f, h.arena_off + 4, 8));
    CHECK(!sps__followed_in_arena(f, h.arena_off - 8, 8));
    close(fd);

    /* a second record appears later; the first is not followed twice */
    snprintf(other, sizeof other, "%s/200-0.sps", records);
    write_file(other, rec, len);
    sps__followed_discover(&d);
    sps__followed_discover(&d);
    CHECK_EQ_U(d.nrec, 2);
    CHECK(d.rec[0] == f && ((struct reader_rec *)f)->mine == 42);
    if (d.nrec == 2) {
        CHECK(strcmp(d.rec[1]->file, "200-0.sps") == 0);
        CHECK(sps__followed_refresh(d.rec[1]));
        CHECK_EQ_U(d.rec[1]->nnames, NNAMES);
        CHECK(has_name(d.rec[1], 8, 7));
    }
out:
    sps__followed_dir_close(&d);
    CHECK(d.nrec == 0 && d.rec == NULL);
    free(rec);
}

/* A file that is not a regular file is never followed again. */
static void test_not_a_record_file(void) {
    const char *run = tmpdir_new("followed-bad");
    char path[600];
    snprintf(path, sizeof path, "%s/300-0.sps", run);
    CHECK(mkfifo(path, 0644) == 0);
    struct sps__followed_dir d;
    CHECK(sps__followed_dir_init(&d, run, 0) == 0);
    CHECK_EQ_U(d.each, sizeof(struct sps__followed));
    sps__followed_discover(&d);
    CHECK_EQ_U(d.nrec, 1);
    if (d.nrec == 1) {
        CHECK(!sps__followed_refresh(d.rec[0]));
        CHECK(d.rec[0]->state == SPS_LIVE_REC_BAD);
    }
    sps__followed_dir_close(&d);
}

int main(void) {
    RUN_TEST(test_record_followed_as_it_grows);
    RUN_TEST(test_not_a_record_file);
    return check_report();
}
