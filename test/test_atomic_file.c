/*
 * test_atomic_file.c - every output goes through the atomic writer
 * (platform/atomic_file.h): nothing is written through a symlink planted at
 * the target or at the names the writers used to use for their temporaries
 * (PATH.tmp-PID, PATH.tmp.PID), the temporary is exclusive and
 * unpredictable, and a failed write or commit leaves the earlier file.
 */
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "platform/atomic_file.h"
#include "render/output_file.h"
#include "stepscope.h"
#include "support.h"

static char dir[600];
static char victim[700]; /* outside the output directory: must stay as it is */

static const char victim_text[] = "not yours\n";

/* The file's contents ("" when unreadable). */
static const char *contents(const char *path) {
    static char buf[4096];
    if (read_file(path, buf, sizeof buf) < 0)
        buf[0] = '\0';
    return buf;
}

/* Entries of d other than . and .. */
static int entries(const char *d) {
    DIR *h = opendir(d);
    int n = 0;
    for (struct dirent *e; h && (e = readdir(h));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (h)
        closedir(h);
    return n;
}

static void plant(const char *link_path) {
    unlink(link_path);
    CHECK(symlink(victim, link_path) == 0);
}

/* Symlinks to the victim at target and at the old predictable temporary
 * names beside it. */
static void plant_all(const char *target) {
    char p[900];
    plant(target);
    snprintf(p, sizeof p, "%s.tmp-%d", target, (int)getpid());
    plant(p);
    snprintf(p, sizeof p, "%s.tmp.%d", target, (int)getpid());
    plant(p);
}

static int is_regular(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void test_writes_and_names_its_temporary(void) {
    char sub[700], target[800];
    snprintf(sub, sizeof sub, "%s/plain", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/out.txt", sub);
    mode_t old_mask = umask(022);
    struct sps_atomic_file a, b;
    char err[512];
    CHECK_EQ_I(sps__atomic_open(&a, target, err, sizeof err), 0);
    CHECK_EQ_I(sps__atomic_open(&b, target, err, sizeof err), 0);
    /* beside the target, hidden, with 48 random bits: two differ */
    regex_t re;
    char pattern[900];
    snprintf(pattern, sizeof pattern, "^%s/\\.out\\.txt\\.tmp-[0-9a-f]{12}$", sub);
    CHECK(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) == 0);
    CHECK_MSG(regexec(&re, a.tmp, 0, NULL, 0) == 0, "temporary %s", a.tmp);
    regfree(&re);
    CHECK(strcmp(a.tmp, b.tmp) != 0);
    sps__atomic_abort(&b);
    FILE *f = sps__atomic_stream(&a, err, sizeof err);
    CHECK(f != NULL);
    if (f)
        fputs("hello\n", f);
    CHECK_EQ_I(sps__atomic_commit(&a, 0, err, sizeof err), 0);
    umask(old_mask);
    CHECK(!strcmp(contents(target), "hello\n"));
    struct stat st;
    CHECK(stat(target, &st) == 0 && (st.st_mode & 0777) == 0644);
    CHECK_EQ_I(entries(sub), 1); /* no temporary left */
    sps__atomic_abort(&a);       /* after a commit: nothing to do */
    CHECK(!strcmp(contents(target), "hello\n"));
}

/* The unit: links at the target and at the old temporary names are
 * replaced or left, never written through. */
static void test_never_through_a_link(void) {
    char sub[700], target[800];
    snprintf(sub, sizeof sub, "%s/links", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/report.json", sub);
    plant_all(target);
    struct sps_atomic_file a;
    char err[512];
    CHECK_EQ_I(sps__atomic_open(&a, target, err, sizeof err), 0);
    FILE *f = sps__atomic_stream(&a, err, sizeof err);
    if (f)
        fputs("{}\n", f);
    CHECK_EQ_I(sps__atomic_commit(&a, 0, err, sizeof err), 0);
    CHECK(!strcmp(contents(victim), victim_text));
    CHECK(is_regular(target)); /* the link itself was replaced */
    CHECK(!strcmp(contents(target), "{}\n"));
}

/* The writers that use it: report.json (sps_report_write) and the
 * exporters' files (sps__out_open). */
static void test_report_and_exports_never_through_a_link(void) {
    char sub[700], target[800];
    snprintf(sub, sizeof sub, "%s/report", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/report.json", sub);
    plant_all(target);
    static struct sps_site site = {.name = "z", .kind = SPS_KIND_ZONE};
    sps_zone_end(sps_zone_begin(&site));
    char err[512];
    CHECK_EQ_I(sps_report_write(sub, err, sizeof err), 0);
    CHECK(!strcmp(contents(victim), victim_text));
    CHECK(is_regular(target));
    CHECK_STR_HAS(contents(target), "\"schema\"");

    snprintf(target, sizeof target, "%s/steps.csv", sub);
    plant_all(target);
    struct sps_out o;
    CHECK_EQ_I(sps__out_open(&o, target, err, sizeof err), 0);
    fputs("step\n", o.f);
    CHECK_EQ_I(sps__out_commit(&o, err, sizeof err), 0);
    CHECK(!strcmp(contents(victim), victim_text));
    CHECK(is_regular(target) && !strcmp(contents(target), "step\n"));
}

/* Abort and a failed commit leave the earlier file and no temporary. */
static void test_failure_leaves_the_old_file(void) {
    char sub[700], target[800];
    snprintf(sub, sizeof sub, "%s/fail", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/trace.json", sub);
    write_file(target, "old\n", 4);
    struct sps_atomic_file a;
    char err[512];
    CHECK_EQ_I(sps__atomic_open(&a, target, err, sizeof err), 0);
    FILE *f = sps__atomic_stream(&a, err, sizeof err);
    if (f)
        fputs("half a fi", f);
    sps__atomic_abort(&a);
    CHECK(!strcmp(contents(target), "old\n"));
    CHECK_EQ_I(entries(sub), 1);

    /* the rename fails (a directory is in the way): the error names it */
    char blocked[800];
    snprintf(blocked, sizeof blocked, "%s/dir.json", sub);
    mkdir(blocked, 0777);
    CHECK_EQ_I(sps__atomic_open(&a, blocked, err, sizeof err), 0);
    CHECK_EQ_I(sps__atomic_commit(&a, 0, err, sizeof err), SPS_EIO);
    CHECK_STR_HAS(err, blocked);
    CHECK_EQ_I(entries(sub), 2); /* trace.json and dir.json only */

    /* the disk fills while writing: the error says so, the old file stays */
    char mnt[700];
    snprintf(mnt, sizeof mnt, "%s/full", dir);
    mkdir(mnt, 0777);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0) {
        printf("(full-disk case skipped: cannot mount a tmpfs: %s)\n", strerror(errno));
        return;
    }
    snprintf(target, sizeof target, "%s/timeline.csv", mnt);
    write_file(target, "old\n", 4);
    CHECK_EQ_I(sps__atomic_open(&a, target, err, sizeof err), 0);
    f = sps__atomic_stream(&a, err, sizeof err);
    for (int i = 0; f && i < 4096; i++)
        fputs("0123456789abcdef0123456789abcdef\n", f); /* 132 KiB */
    CHECK_EQ_I(sps__atomic_commit(&a, 0, err, sizeof err), SPS_EIO);
    CHECK_STR_HAS(err, "No space left on device");
    CHECK(!strcmp(contents(target), "old\n"));
    CHECK_EQ_I(entries(mnt), 1);
    umount(mnt);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s", tmpdir_new("atomic"));
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_file(victim, victim_text, strlen(victim_text));
    RUN_TEST(test_writes_and_names_its_temporary);
    RUN_TEST(test_never_through_a_link);
    RUN_TEST(test_report_and_exports_never_through_a_link);
    RUN_TEST(test_failure_leaves_the_old_file);
    return check_report();
}
