/* run_dir.c - `stepscope run`'s hold on its directory (see run_dir.h).
 * Everything below works relative to directory descriptors opened with
 * O_NOFOLLOW, and removes with unlinkat, which never follows a link:
 * nothing outside DIR is ever written or removed, whatever was planted. */
#include "run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "live/stream.h"
#include "report_recover.h"
#include "model/align.h"
#include "model/run.h"
#include "model/torch_ops.h"
#include "platform/platform.h"
#include "render/tensorboard.h"
#include "run_lock.h"
#include "sampler/published.h"

/* DIR's files a run writes, besides records/ and the event files. */
static const char *const outputs[] = {"report.json", "report.html", "steps.csv", "timeline.csv",
                                      "trace.json",  SPS_STREAM_FILE, SPS_PUBLISHED_FILE};
#define NOUTPUTS (sizeof outputs / sizeof outputs[0])
#define RECORDS "records"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Whether dfd's name is a symbolic link (what an O_NOFOLLOW|O_DIRECTORY
 * open refused with ELOOP or ENOTDIR). */
static int is_link_at(int dfd, const char *name) {
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

static int exists_at(int dfd, const char *name) {
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Owned by neither the effective user nor root: its owner can replace
 * what stepscope writes there between two of its steps. */
static int foreign(const struct stat *st) {
    return st->st_uid != geteuid() && st->st_uid != 0;
}

static int refuse_foreign(const char *cmd, const char *what, const struct stat *st) {
    char why[512], owner[64];
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (getpwuid_r(st->st_uid, &pw, buf, sizeof buf, &found) == 0 && found)
        snprintf(owner, sizeof owner, "user %s (uid %u)", found->pw_name, (unsigned)st->st_uid);
    else
        snprintf(owner, sizeof owner, "uid %u", (unsigned)st->st_uid);
    snprintf(why, sizeof why,
             "owned by %s, not by you: its owner could change what stepscope writes there; choose a directory "
             "of your own (or pass --allow-foreign-dir)",
             owner);
    return sps_cli_error(cmd, what, why, 1);
}

/* Whether a file name is one stepscope writes into records/. */
static int record_dir_file(const char *name) {
    return sps__is_record_name(name) || sps__is_torch_ops_name(name) || !strcmp(name, SPS_MERGE_FILE);
}

/* 1 when parent's records/ (a directory, not a link) holds a record file
 * or a torch ops file of a run. */
static int holds_records(int parent) {
    int fd = openat(parent, RECORDS, DIR_FLAGS);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = sps__is_record_name(e->d_name) || sps__is_torch_ops_name(e->d_name);
    closedir(d);
    return found;
}

/* Remove parent's records/: stepscope's files in it, then the directory
 * when that left it empty (anything else stays).  A link at the name is
 * removed itself. */
static void remove_records(int parent) {
    int fd = openat(parent, RECORDS, DIR_FLAGS);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            (void)unlinkat(parent, RECORDS, 0);
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (record_dir_file(e->d_name))
            (void)unlinkat(fd, e->d_name, 0);
    closedir(d);
    (void)unlinkat(parent, RECORDS, AT_REMOVEDIR);
}

/* Remove the empty directories under dfd, depth levels down (what moving
 * the event files out left). */
static void remove_empty_dirs(int dfd, int depth) {
    int own = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = own < 0 ? NULL : fdopendir(own);
    if (!d) {
        if (own >= 0)
            close(own);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        int sub = depth > 0 ? openat(dfd, e->d_name, DIR_FLAGS) : -1;
        if (sub < 0)
            continue;
        remove_empty_dirs(sub, depth - 1);
        close(sub);
        (void)unlinkat(dfd, e->d_name, AT_REMOVEDIR); /* fails, harmlessly, unless empty */
    }
    closedir(d);
}

/* Remove DIR/name (.previous or .previous.older): only what stepscope
 * puts there.  Returns 0 when it is gone (or was never there), else -1
 * with errno set (ENOTEMPTY: it holds files of someone else's). */
static int drop_previous(int dfd, const char *name) {
    int p = openat(dfd, name, DIR_FLAGS);
    if (p < 0) {
        if (errno == ENOENT)
            return 0;
        if ((errno == ELOOP || errno == ENOTDIR) && is_link_at(dfd, name)) /* planted: the link itself goes */
            return unlinkat(dfd, name, 0);
        if (errno == ELOOP)
            errno = ENOTDIR;
        return -1; /* a file of someone's (ENOTDIR): stepscope never made it */
    }
    for (size_t i = 0; i < NOUTPUTS; i++)
        (void)unlinkat(p, outputs[i], 0);
    remove_records(p);
    char err[512];
    (void)sps__tensorboard_move_own(p, -1, SPS_RUN_DIR_PREVIOUS, NULL, err, sizeof err);
    remove_empty_dirs(p, 2);
    close(p);
    return unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Whether DIR/.previous holds a report.json (a regular file): a run that
 * reported, or whose report was rebuilt before it was set aside. */
static int previous_reported(int dfd) {
    int p = openat(dfd, SPS_RUN_DIR_PREVIOUS, DIR_FLAGS);
    if (p < 0)
        return 0;
    struct stat st;
    int yes = fstatat(p, "report.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    close(p);
    return yes;
}

/* DIR holds records and no report.json: a run killed before its report
 * (or one that could not write it).  Its report.json is rebuilt from the
 * records first, as `stepscope report DIR` would, so that the run set
 * aside in .previous has a report and none that recorded goes unreported.
 * Returns EARLIER when DIR holds the earlier run, now with its
 * report.json; LEFTOVERS when no record could be read and .previous keeps
 * a reported run: those leftovers are removed rather than that run (they
 * describe nothing, and the run they would replace has a report);
 * EARLIER when none could be read and .previous has no report either
 * (set aside as they are); else the exit status after one line (the
 * records were readable but no report could be written: nothing is set
 * aside or removed). */
#define EARLIER (-1)
#define LEFTOVERS (-2)
static int rebuild_earlier(struct sps_run_dir_hold *h) {
    char err[PATH_MAX + 600];
    int unreadable = 0;
    int rc = sps_cli_report_rebuild_json(h->abs, &unreadable, err, sizeof err);
    if (rc == 0) {
        fprintf(stderr,
                "stepscope: run: %s: the earlier run had no report (killed?): rebuilt report.json from its records "
                "before setting it aside in %s/%s\n",
                h->shown, h->shown, SPS_RUN_DIR_PREVIOUS);
        return EARLIER;
    }
    if (!unreadable) {
        char why[sizeof err + 200];
        snprintf(why, sizeof why,
                 "the earlier run had no report (killed?) and none could be rebuilt from its records: %s; "
                 "run 'stepscope report %s' once that is fixed",
                 err, h->shown);
        return sps_cli_error("run", h->shown, why, 1);
    }
    if (!previous_reported(h->dfd))
        return EARLIER;
    fprintf(stderr,
            "stepscope: run: %s: the earlier run had no report and no readable record (killed before it "
            "recorded?): %s; removed its leftovers, and %s/%s keeps the run before it, with its report\n",
            h->shown, err, h->shown, SPS_RUN_DIR_PREVIOUS);
    remove_records(h->dfd);
    return LEFTOVERS;
}

/* Set DIR's earlier outputs aside (run_dir.h).  Returns -1 to go on, else
 * the exit status after one line. */
static int set_aside(struct sps_run_dir_hold *h) {
    char where[PATH_MAX + 32], err[PATH_MAX + 600];
    snprintf(where, sizeof where, "%s/%s", h->abs, SPS_RUN_DIR_PREVIOUS);
    int earlier = exists_at(h->dfd, "report.json") || holds_records(h->dfd);
    if (earlier && !exists_at(h->dfd, "report.json")) {
        int rc = rebuild_earlier(h);
        if (rc >= 0)
            return rc;
        earlier = rc == EARLIER;
    }
    if (!earlier) {
        /* a run that recorded nothing and wrote no report: its leftovers
         * describe nothing, and an earlier .previous stays as it is */
        for (size_t i = 0; i < NOUTPUTS; i++)
            if (unlinkat(h->dfd, outputs[i], 0) != 0 && errno != ENOENT && errno != EISDIR)
                return sps_cli_error("run", outputs[i], strerror(errno), 1);
        struct stat st;
        if (fstatat(h->dfd, RECORDS, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
            (void)unlinkat(h->dfd, RECORDS, 0); /* a link or a file: removed, never followed */
        if (sps__tensorboard_move_own(h->dfd, -1, h->abs, SPS_RUN_DIR_PREVIOUS, err, sizeof err) < 0)
            return sps_cli_error("run", "cannot remove an earlier run's event file", err, 1);
        h->kept = exists_at(h->dfd, SPS_RUN_DIR_PREVIOUS);
        return -1;
    }
    /* the .previous of a run before: kept as .previous.older until this
     * run's command has started (a command not found puts everything
     * back); a stale .previous.older (a run killed meanwhile) goes */
    char older[PATH_MAX + 32];
    snprintf(older, sizeof older, "%s/%s", h->abs, SPS_RUN_DIR_OLDER);
    if (drop_previous(h->dfd, SPS_RUN_DIR_OLDER) != 0)
        return sps_cli_error("run", older,
                             errno == ENOTEMPTY ? "holds files stepscope did not put there: move them away"
                             : errno == ENOTDIR ? "not a directory stepscope made: move it away"
                                                : strerror(errno),
                             1);
    struct stat st;
    if (fstatat(h->dfd, SPS_RUN_DIR_PREVIOUS, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
        if (!S_ISLNK(st.st_mode)) /* a file of someone's: stepscope never made it */
            return sps_cli_error("run", where, "not a directory stepscope made: move it away", 1);
        (void)unlinkat(h->dfd, SPS_RUN_DIR_PREVIOUS, 0); /* planted: the link itself goes */
    }
    if (renameat(h->dfd, SPS_RUN_DIR_PREVIOUS, h->dfd, SPS_RUN_DIR_OLDER) == 0)
        h->older = 1;
    else if (errno != ENOENT)
        return sps_cli_error("run", where, strerror(errno), 1);
    if (mkdirat(h->dfd, SPS_RUN_DIR_PREVIOUS, 0777) != 0)
        return sps_cli_error("run", where, strerror(errno), 1);
    int p = openat(h->dfd, SPS_RUN_DIR_PREVIOUS, DIR_FLAGS);
    if (p < 0)
        return sps_cli_error("run", where, strerror(errno), 1);
    h->aside = 1;
    for (size_t i = 0; i <= NOUTPUTS; i++) {
        const char *name = i < NOUTPUTS ? outputs[i] : RECORDS;
        if (renameat(h->dfd, name, p, name) != 0 && errno != ENOENT) {
            snprintf(err, sizeof err, "cannot set %s aside: %s", name, strerror(errno));
            close(p);
            return sps_cli_error("run", where, err, 1);
        }
    }
    int moved = sps__tensorboard_move_own(h->dfd, p, h->abs, SPS_RUN_DIR_PREVIOUS, err, sizeof err);
    close(p);
    if (moved < 0)
        return sps_cli_error("run", "cannot set an earlier run's event file aside", err, 1);
    return -1;
}

/* A fresh DIR/records, opened without following a link. */
static int make_records(struct sps_run_dir_hold *h, int allow_foreign) {
    char what[PATH_MAX + 16];
    snprintf(what, sizeof what, "%s/%s", h->abs, RECORDS);
    if (mkdirat(h->dfd, RECORDS, 0777) != 0 && errno != EEXIST)
        return sps_cli_error("run", what, strerror(errno), 1);
    int fd = openat(h->dfd, RECORDS, DIR_FLAGS);
    if (fd < 0)
        return sps_cli_error("run", what, is_link_at(h->dfd, RECORDS) ? "is a symbolic link" : strerror(errno), 1);
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) != 0)
        rc = sps_cli_error("run", what, strerror(errno), 1);
    else if (!allow_foreign && foreign(&st))
        rc = refuse_foreign("run", what, &st);
    close(fd);
    return rc;
}

/* Whether path's directory st can be changed by another user: owned by
 * another user (root excepted), or writable by all without the sticky bit. */
static int changeable(const struct stat *st) {
    return foreign(st) || ((st->st_mode & S_IWOTH) && !(st->st_mode & S_ISVTX));
}

/* The nearest directory above path (absolute) that another user can
 * change, each ancestor taken by stat (a link among them followed, as a
 * lookup of path would).  Returns 1 with where and *st filled, else 0. */
static int changeable_ancestor(char *path, char *where, size_t len, struct stat *st) {
    for (char *slash = strrchr(path, '/'); slash; slash = strrchr(path, '/')) {
        slash[slash == path] = '\0'; /* "/a/b" -> "/a", "/a" -> "/" */
        if (stat(path, st) == 0 && changeable(st)) {
            snprintf(where, len, "%s", path);
            return 1;
        }
        if (slash == path)
            break;
    }
    return 0;
}

/* The nearest directory above name that another user can change, among
 * the ancestors of its real path (the one stepscope and the workload
 * use) and those of the name as given (a link on the way lives in one of
 * them, and whoever can change that directory can point the link
 * elsewhere).  Whoever can rename entries there can move the directory
 * away while stepscope writes into it and put a link in its place, and
 * what is then written by its name lands where the link points.  Returns
 * 1 with where and *st filled, else 0. */
static int foreign_parent(const char *name, char *where, size_t len, struct stat *st) {
    char path[PATH_MAX];
    if (realpath(name, path) && changeable_ancestor(path, where, len, st))
        return 1;
    if (name[0] == '/') {
        if (snprintf(path, sizeof path, "%s", name) >= (int)sizeof path)
            return 0;
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || snprintf(path, sizeof path, "%s/%s", cwd, name) >= (int)sizeof path)
            return 0;
    }
    return changeable_ancestor(path, where, len, st);
}

static int refuse_foreign_parent(const char *cmd, const char *what, const char *where, const struct stat *st) {
    char why[PATH_MAX + 512], who[128];
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (!foreign(st))
        snprintf(who, sizeof who, "which every user may write (no sticky bit): any of them");
    else if (getpwuid_r(st->st_uid, &pw, buf, sizeof buf, &found) == 0 && found)
        snprintf(who, sizeof who, "owned by user %s (uid %u), not by you: its owner", found->pw_name,
                 (unsigned)st->st_uid);
    else
        snprintf(who, sizeof who, "owned by uid %u, not by you: its owner", (unsigned)st->st_uid);
    snprintf(why, sizeof why,
             "inside %s, %s could move the directory away and put a link in its place while stepscope writes "
             "there; choose a directory of your own (or pass --allow-foreign-dir)",
             where, who);
    return sps_cli_error(cmd, what, why, 1);
}

/* Open name (made already; the value of option opt, shown as what in
 * messages) without following a link at its name, and check its owner.
 * Returns the descriptor, or -1 with *rc set to the exit status after one
 * line. */
static int open_checked(const char *what, const char *opt, const char *name, int allow_foreign, int *rc) {
    int fd = open(name, DIR_FLAGS);
    if (fd < 0 && is_link_at(AT_FDCWD, name)) {
        char target[PATH_MAX], why[PATH_MAX + 128];
        if (realpath(name, target))
            snprintf(why, sizeof why, "is a symbolic link: name the directory itself (%s %s)", opt, target);
        else
            snprintf(why, sizeof why, "is a symbolic link: name the directory itself");
        *rc = sps_cli_error("run", what, why, 1);
        return -1;
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        *rc = sps_cli_error("run", what, errno == ENOTDIR ? "not a directory" : strerror(errno), 1);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!allow_foreign && foreign(&st)) {
        *rc = refuse_foreign("run", what, &st);
        close(fd);
        return -1;
    }
    char where[PATH_MAX];
    if (!allow_foreign && foreign_parent(name, where, sizeof where, &st)) {
        *rc = refuse_foreign_parent("run", what, where, &st);
        close(fd);
        return -1;
    }
    return fd;
}

int sps_dir_foreign_check(const char *cmd, const char *what, const char *dir, int allow_foreign) {
    if (allow_foreign)
        return -1;
    char name[PATH_MAX];
    if (snprintf(name, sizeof name, "%s", dir) >= (int)sizeof name)
        return sps_cli_error(cmd, what, "path too long", 1);
    /* the nearest directory there is: what is missing below it stepscope
     * makes itself */
    struct stat st;
    for (size_t n = strlen(name); n > 1 && name[n - 1] == '/'; n--)
        name[n - 1] = '\0';
    while (stat(name, &st) != 0) {
        char *slash = strrchr(name, '/');
        if (!strcmp(name, ".") || !strcmp(name, "/"))
            return -1; /* nothing to check: the write says why it fails */
        if (!slash)
            snprintf(name, sizeof name, ".");
        else
            slash[slash == name] = '\0';
    }
    if (!S_ISDIR(st.st_mode))
        return -1; /* not a directory: the write says so */
    if (foreign(&st))
        return refuse_foreign(cmd, what, &st);
    char where[PATH_MAX];
    if (foreign_parent(name, where, sizeof where, &st))
        return refuse_foreign_parent(cmd, what, where, &st);
    return -1;
}

int sps_file_dir_foreign_check(const char *cmd, const char *opt, const char *path, int allow_foreign) {
    char dir[PATH_MAX], what[PATH_MAX * 2 + 64];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return sps_cli_error(cmd, path, "path too long", 1);
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
        dir[n - 1] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir] = '\0';
    snprintf(what, sizeof what, "%s %s: its directory %s", opt, path, dir);
    return sps_dir_foreign_check(cmd, what, dir, allow_foreign);
}

/* Made with its parents, the name without trailing slashes ("out/" would
 * follow a link at out) into name.  Returns -1, else the exit status. */
static int make_named(const char *what, const char *dir, char *name, size_t len) {
    if (snprintf(name, len, "%s", dir) >= (int)len)
        return sps_cli_error("run", what, "path too long", 1);
    for (size_t n = strlen(name); n > 1 && name[n - 1] == '/'; n--)
        name[n - 1] = '\0';
    if (sps__platform_mkdirs(name) != 0)
        return sps_cli_error("run", what, strerror(errno), 1);
    return -1;
}

int sps_run_dir_check(const char *opt, const char *dir, int allow_foreign) {
    char name[PATH_MAX], what[PATH_MAX + 32];
    snprintf(what, sizeof what, "%s %s", opt, dir);
    int rc = make_named(what, dir, name, sizeof name);
    if (rc >= 0)
        return rc;
    int fd = open_checked(what, opt, name, allow_foreign, &rc);
    if (fd < 0)
        return rc;
    close(fd);
    return -1;
}

/* Open dir (made with its parents) without following a link at its name
 * into h->dfd and h->abs.  Returns -1 to go on, else the exit status. */
static int open_dir(struct sps_run_dir_hold *h, const char *dir, int allow_foreign) {
    char name[PATH_MAX];
    int rc = make_named(dir, dir, name, sizeof name);
    if (rc >= 0)
        return rc;
    h->dfd = open_checked(dir, "-o", name, allow_foreign, &rc);
    if (h->dfd < 0)
        return rc;
    struct stat st, named;
    if (fstat(h->dfd, &st) != 0)
        return sps_cli_error("run", dir, strerror(errno), 1);
    /* the absolute name the workload gets must be the directory we hold */
    if (!realpath(name, h->abs) || stat(h->abs, &named) != 0)
        return sps_cli_error("run", dir, strerror(errno), 1);
    if (named.st_dev != st.st_dev || named.st_ino != st.st_ino)
        return sps_cli_error("run", dir, "was replaced while stepscope opened it", 1);
    return -1;
}

int sps_run_dir_take(struct sps_run_dir_hold *h, const char *dir, int allow_foreign, char **cmd, int argc) {
    h->dfd = h->lock_fd = -1;
    h->aside = h->older = h->kept = 0;
    h->shown = dir;
    int rc = open_dir(h, dir, allow_foreign);
    if (rc >= 0)
        return rc;
    char why[2048];
    h->lock_fd = sps_run_lock_take(h->dfd, cmd, argc, why, sizeof why);
    if (h->lock_fd < 0) {
        if (strncmp(why, "in use by ", 10) == 0)
            strcat(why, "; choose another -o");
        return sps_cli_error("run", dir, why, 1);
    }
    rc = set_aside(h);
    if (rc < 0)
        rc = make_records(h, allow_foreign);
    if (rc >= 0)
        sps_run_dir_end(h, 0); /* nothing ran: what was set aside goes back */
    return rc;
}

/* The command never ran: put the earlier outputs back where they were
 * (what this run made in their place describes nothing). */
static int put_back(struct sps_run_dir_hold *h) {
    int p = openat(h->dfd, SPS_RUN_DIR_PREVIOUS, DIR_FLAGS);
    if (p < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < NOUTPUTS; i++) {
        (void)unlinkat(h->dfd, outputs[i], 0);
        if (exists_at(p, outputs[i]) && renameat(p, outputs[i], h->dfd, outputs[i]) != 0)
            rc = -1;
    }
    if (exists_at(p, RECORDS)) {
        remove_records(h->dfd);
        if (renameat(p, RECORDS, h->dfd, RECORDS) != 0)
            rc = -1;
    }
    char err[512];
    if (sps__tensorboard_move_own(p, h->dfd, SPS_RUN_DIR_PREVIOUS, NULL, err, sizeof err) < 0)
        rc = -1;
    remove_empty_dirs(p, 2);
    close(p);
    if (rc == 0 && unlinkat(h->dfd, SPS_RUN_DIR_PREVIOUS, AT_REMOVEDIR) != 0)
        rc = -1;
    return rc;
}

void sps_run_dir_end(struct sps_run_dir_hold *h, int started) {
    if (h->dfd < 0 || (!h->aside && !h->older && !h->kept))
        return;
    char where[PATH_MAX + 32], older[PATH_MAX + 32];
    snprintf(where, sizeof where, "%s/%s", h->shown, SPS_RUN_DIR_PREVIOUS);
    snprintf(older, sizeof older, "%s/%s", h->shown, SPS_RUN_DIR_OLDER);
    if (!started) {
        if (h->aside && put_back(h) != 0)
            sps_cli_error("run", where, "the earlier run's outputs are kept here (not all could be put back)", 0);
        else if (h->older && renameat(h->dfd, SPS_RUN_DIR_OLDER, h->dfd, SPS_RUN_DIR_PREVIOUS) != 0)
            sps_cli_error("run", older, "the outputs of the run before the earlier one are kept here", 0);
    } else {
        /* the command ran: the run before the earlier one is superseded
         * (a .previous.older a killed run left too, beside a kept
         * .previous) */
        if ((h->older || (h->kept && exists_at(h->dfd, SPS_RUN_DIR_OLDER))) &&
            drop_previous(h->dfd, SPS_RUN_DIR_OLDER) != 0)
            sps_cli_error("run", older, "could not all be removed", 0);
        struct stat st;
        if (!h->aside && !h->kept) {
            /* nothing set aside */
        } else if (fstatat(h->dfd, "report.json", &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
            sps_cli_error("run", where, "the earlier run's outputs are kept here: this run wrote no report", 0);
        } else if (drop_previous(h->dfd, SPS_RUN_DIR_PREVIOUS) != 0) { /* the report is this run's */
            sps_cli_error("run", where, "the earlier run's outputs could not all be removed", 0);
        }
    }
    h->aside = h->older = h->kept = 0;
}
