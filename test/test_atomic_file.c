/*
 * test_atomic_file.c - every output goes through the atomic writer
 * (platform/atomic_file.h): nothing is written through a symlink planted at
 * the target or at the names the writers used to use for their temporaries
 * (PATH.tmp-PID, PATH.tmp.PID), the temporary is exclusive and
 * unpredictable, and a failed write or commit leaves the earlier file;
 * a writer killed before its commit leaves nothing (an anonymous
 * temporary), or, where the named temporary is used, the next writer of
 * the same target removes it once it is old and its writer dead, and
 * nothing else.
 */
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
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
    CHECK_EQ_I(sps__atomic_open_flags(&a, target, NULL, SPS_ATOMIC_NAMED_TEMP, err, sizeof err), 0);
    CHECK_EQ_I(sps__atomic_open_flags(&b, target, NULL, SPS_ATOMIC_NAMED_TEMP, err, sizeof err), 0);
    CHECK(!a.anonymous && !b.anonymous);
    /* beside the target, hidden, with 48 random bits: two differ */
    regex_t re;
    char pattern[900];
    snprintf(pattern, sizeof pattern, "^%s/\\.out\\.txt\\.tmp-[0-9a-f]{12}$", sub);
    CHECK(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) == 0);
    CHECK_MSG(regexec(&re, a.tmp, 0, NULL, 0) == 0, "temporary %s", a.tmp);
    regfree(&re);
    CHECK(strcmp(a.tmp, b.tmp) != 0);
    CHECK_EQ_I(entries(sub), 2);
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

/* Where O_TMPFILE works (this test's directory: tmpfs or ext4), the
 * temporary has no name until the commit; the target gets the umask's
 * mode, whether it was there before (linked to a temporary name, renamed
 * over it) or not (linked straight to its name). */
static int anonymous_works; /* set by test_anonymous_temporary */

static void test_anonymous_temporary(void) {
    char sub[700], target[800];
    snprintf(sub, sizeof sub, "%s/anon", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/report.html", sub);
    struct sps_atomic_file a;
    char err[512];
    /* does this filesystem have O_TMPFILE?  then the writer must use it */
    int probe = open(sub, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    anonymous_works = probe >= 0;
    if (probe < 0) {
        printf("(anonymous case skipped: no O_TMPFILE in %s: %s)\n", sub, strerror(errno));
        return;
    }
    close(probe);
    mode_t old_mask = umask(077);
    CHECK_EQ_I(sps__atomic_open(&a, target, err, sizeof err), 0);
    CHECK_MSG(a.anonymous, "O_TMPFILE works in %s, the writer did not use it", sub);
    CHECK_EQ_I(entries(sub), 0); /* nothing named while it is written */
    CHECK(!strcmp(a.tmp, ""));
    for (int round = 0; round < 2; round++) { /* no target yet, then one */
        if (round)
            CHECK_EQ_I(sps__atomic_open(&a, target, err, sizeof err), 0);
        FILE *f = sps__atomic_stream(&a, err, sizeof err);
        CHECK(f != NULL);
        if (f)
            fprintf(f, "round %d\n", round);
        CHECK_EQ_I(entries(sub), round);
        CHECK_EQ_I(sps__atomic_commit(&a, 0, err, sizeof err), 0);
        CHECK_EQ_I(entries(sub), 1);
        CHECK(!strcmp(contents(target), round ? "round 1\n" : "round 0\n"));
        struct stat st;
        CHECK(stat(target, &st) == 0 && (st.st_mode & 0777) == (round ? 0644 : 0600));
        umask(022);
    }
    umask(old_mask);
    /* abandoned: nothing */
    CHECK_EQ_I(sps__atomic_open(&a, target, err, sizeof err), 0);
    sps__atomic_abort(&a);
    CHECK_EQ_I(entries(sub), 1);
    CHECK(!strcmp(contents(target), "round 1\n"));
}

/* A child that opens a writer for target (named temporary or not), writes
 * and SIGKILLs itself before the commit; its temporary's name, if it had
 * one, into name. */
static void killed_writer(const char *target, unsigned flags, char *name, size_t cap) {
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        struct sps_atomic_file a;
        char err[512];
        if (sps__atomic_open_flags(&a, target, NULL, flags, err, sizeof err) != 0)
            _exit(1);
        FILE *f = sps__atomic_stream(&a, err, sizeof err);
        fputs("half a rep", f);
        fflush(f);
        const char *slash = strrchr(a.tmp, '/');
        const char *tname = slash ? slash + 1 : "";
        if (write(pipefd[1], tname, strlen(tname) + 1) < 0)
            _exit(1);
        raise(SIGKILL);
        _exit(2);
    }
    close(pipefd[1]);
    ssize_t n = read(pipefd[0], name, cap - 1);
    name[n > 0 ? n : 0] = '\0';
    close(pipefd[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer: status %#x", status);
}

/* A writer SIGKILLed between open and commit leaves nothing. */
static void test_killed_writer_leaves_nothing(void) {
    if (!anonymous_works) {
        printf("(skipped: no O_TMPFILE here)\n");
        return;
    }
    char sub[700], target[800], name[300];
    snprintf(sub, sizeof sub, "%s/killed", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/report.json", sub);
    killed_writer(target, 0, name, sizeof name);
    CHECK_MSG(!strcmp(name, ""), "the killed writer's temporary had a name: %s", name);
    CHECK_EQ_I(entries(sub), 0);
    write_file(target, "old\n", 4);
    killed_writer(target, 0, name, sizeof name);
    CHECK_EQ_I(entries(sub), 1);
    CHECK(!strcmp(contents(target), "old\n"));
}

/* Set path's modification time (not following a link) seconds back. */
static void age(const char *path, int seconds) {
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    CHECK(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW) == 0);
}

/* The named fallback: a killed writer's temporary stays, and the next
 * writer of the same target removes it once it is a minute old; never a
 * live writer's (it holds its flock), a young one, a link, a directory,
 * another user's file, another target's temporary. */
static void test_stale_named_temporaries_removed(void) {
    char sub[700], target[800], name[300], p[1100];
    snprintf(sub, sizeof sub, "%s/stale", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/steps.csv", sub);
    char dead[900], young[900], live[900], link_p[900], dir_p[900], theirs[900], other[900];
    killed_writer(target, SPS_ATOMIC_NAMED_TEMP, name, sizeof name);
    snprintf(dead, sizeof dead, "%s/%s", sub, name);
    CHECK_MSG(!strncmp(name, ".steps.csv.tmp-", 15) && is_regular(dead), "the killed writer left %s", name);
    killed_writer(target, SPS_ATOMIC_NAMED_TEMP, name, sizeof name);
    snprintf(young, sizeof young, "%s/%s", sub, name);
    CHECK(is_regular(young));
    struct sps_atomic_file w, next;
    char err[512];
    CHECK_EQ_I(sps__atomic_open_flags(&w, target, NULL, SPS_ATOMIC_NAMED_TEMP, err, sizeof err), 0);
    snprintf(live, sizeof live, "%s", w.tmp);
    snprintf(link_p, sizeof link_p, "%s/.steps.csv.tmp-00000000000a", sub);
    CHECK(symlink(victim, link_p) == 0);
    snprintf(dir_p, sizeof dir_p, "%s/.steps.csv.tmp-00000000000b", sub);
    CHECK(mkdir(dir_p, 0777) == 0);
    snprintf(theirs, sizeof theirs, "%s/.steps.csv.tmp-00000000000c", sub);
    write_file(theirs, "x", 1);
    int chowned = chown(theirs, 65534, 65534) == 0;
    snprintf(other, sizeof other, "%s/.timeline.csv.tmp-00000000000d", sub);
    write_file(other, "x", 1);
    CHECK_EQ_I(entries(sub), 7);
    const char *old_ones[] = {dead, live, link_p, dir_p, theirs, other};
    for (size_t i = 0; i < sizeof old_ones / sizeof *old_ones; i++)
        age(old_ones[i], 120);
    /* a minute and more old, unlocked: gone as the next writer opens */
    CHECK_EQ_I(sps__atomic_open(&next, target, err, sizeof err), 0);
    CHECK_MSG(!exists(dead), "a dead writer's old temporary stayed: %s", dead);
    CHECK(is_regular(young));
    CHECK(is_regular(live));
    CHECK(exists(link_p) && !strcmp(contents(victim), victim_text));
    CHECK(exists(dir_p));
    if (chowned)
        CHECK(is_regular(theirs));
    else
        printf("(another user's file not checked: chown: %s)\n", strerror(errno));
    CHECK(is_regular(other));
    /* the live writer commits as usual */
    FILE *f = sps__atomic_stream(&w, err, sizeof err);
    if (f)
        fputs("live\n", f);
    CHECK_EQ_I(sps__atomic_commit(&w, 0, err, sizeof err), 0);
    CHECK(!strcmp(contents(target), "live\n"));
    sps__atomic_abort(&next);
    CHECK(!exists(live));
    snprintf(p, sizeof p, "%s", young);
    unlink(p);
    unlink(link_p);
    rmdir(dir_p);
    unlink(theirs);
    unlink(other);
    CHECK_EQ_I(entries(sub), 1);
}

/* The unit: links at the target and at the old temporary names are
 * replaced or left, never written through. */
static void test_never_through_a_link(void) {
    char sub[700], target[800], nowhere[800];
    snprintf(sub, sizeof sub, "%s/links", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/report.json", sub);
    snprintf(nowhere, sizeof nowhere, "%s/made-through-a-link", dir);
    /* each way to the temporary; a link to the victim, then a dangling one
     * (a writer following it would create its file) */
    for (int round = 0; round < 4; round++) {
        if (round < 2) {
            plant_all(target);
        } else {
            unlink(target);
            CHECK(symlink(nowhere, target) == 0);
        }
        struct sps_atomic_file a;
        char err[512];
        unsigned flags = round % 2 ? SPS_ATOMIC_NAMED_TEMP : 0;
        CHECK_EQ_I(sps__atomic_open_flags(&a, target, NULL, flags, err, sizeof err), 0);
        FILE *f = sps__atomic_stream(&a, err, sizeof err);
        if (f)
            fputs("{}\n", f);
        CHECK_EQ_I(sps__atomic_commit(&a, 0, err, sizeof err), 0);
        CHECK(!strcmp(contents(victim), victim_text));
        CHECK(!exists(nowhere));
        CHECK(is_regular(target)); /* the link itself was replaced */
        CHECK(!strcmp(contents(target), "{}\n"));
    }
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
    RUN_TEST(test_anonymous_temporary);
    RUN_TEST(test_killed_writer_leaves_nothing);
    RUN_TEST(test_stale_named_temporaries_removed);
    RUN_TEST(test_never_through_a_link);
    RUN_TEST(test_report_and_exports_never_through_a_link);
    RUN_TEST(test_failure_leaves_the_old_file);
    return check_report();
}
