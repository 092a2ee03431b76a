/*
 * standalone_out.c - STEPSCOPE_OUT: without `stepscope run`, the process
 * writes its own report into OUT at exit.
 *
 * The recorder knows nothing of reports: this file registers two hooks
 * with it when the library is loaded (recorder.h).  The open hook runs when
 * the process opens its record (its first event), reads STEPSCOPE_OUT and
 * claims the directory; the exit hook writes the report.  Nothing happens
 * before the first event: loading the library, `import stepscope` or the
 * Python seed classes alone create no directory.
 *
 * Who writes what:
 *   - A program the owner starts (exec, system(), a shell in between)
 *     inherits the variable.  The owner leaves OUT/.owner-<pid>-<start time>
 *     while it runs, and a process with such an ancestor writes nothing
 *     (the start time keeps a crashed owner's marker from matching a later
 *     process with its pid; such stale markers are removed).  Only a
 *     marker this user's processes made counts: a regular file (never a
 *     link) owned by the effective uid.  A marker another user planted in
 *     a shared OUT, or a link at its name, neither suppresses the report
 *     nor turns it into report-<pid>.json; the owner creates its own with
 *     O_EXCL|O_NOFOLLOW, removing whatever was planted at the name first.
 *   - Two unrelated processes in one OUT both keep their reports: the one
 *     that finds another running owner's marker there, or finds OUT holding
 *     a `stepscope run`'s records (whose report.json `stepscope report`
 *     would mix with them), writes report-<pid>.json instead.
 *   - A distributed rank (RANK set, WORLD_SIZE unset or above 1: what
 *     torchrun and its peers set) writes into OUT/rank-<RANK>/, so that
 *     the ranks of one job, all started with one OUT, never overwrite
 *     each other's report (docs/distributed.md).  Its children find its
 *     marker there, as above.
 *   - One stderr line at exit says which file the report went to.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"
#include "recorder.h"
#include "render/standalone.h"
#include "platform/env_path.h"

const int sps__standalone_out_linked = 1;

/* Written by the open hook (once per process, under the recorder's lock,
 * before any event), read by the exit hook. */
static struct {
    char dir[512];
    char marker[600];
    char name[64];   /* report.json, or report-<pid>.json */
    char why[160];   /* why not report.json; "" when it is */
    char failed[640]; /* why the directory could not be made ("" when it was) */
    pid_t owner;     /* the process that writes it (a fork child does not) */
} O;

/* 1 when st is a marker this user's process made: a regular file (lstat:
 * a link planted at the name is not one) owned by the effective uid. */
static int own_marker(const struct stat *st) {
    return S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

/* 1 when one of the calling process's ancestors owns out (its marker is
 * there): then the report is that ancestor's to write. */
static int ancestor_owns(const char *out) {
    struct sps_process_id ancestors[64];
    int n = sps__platform_ancestors(ancestors, 64);
    char marker[600];
    struct stat st;
    for (int i = 0; i < n; i++) {
        snprintf(marker, sizeof marker, "%s/.owner-%d-%llu", out, ancestors[i].pid, ancestors[i].start);
        if (lstat(marker, &st) == 0 && own_marker(&st))
            return 1;
    }
    return 0;
}

/* The pid of another running owner of out (0: none); removes the markers
 * of owners that died without removing their own. */
static int other_running_owner(const char *out, struct sps_process_id self) {
    DIR *d = opendir(out);
    if (!d)
        return 0;
    int other = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct sps_process_id id;
        char tail;
        if (sscanf(e->d_name, ".owner-%d-%llu%c", &id.pid, &id.start, &tail) != 2)
            continue;
        struct stat st;
        if (id.pid == self.pid && id.start == self.start)
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !own_marker(&st))
            continue; /* planted: neither another owner nor ours to remove */
        if (sps__platform_process_running(id)) {
            other = id.pid;
        } else {
            char stale[600];
            snprintf(stale, sizeof stale, "%s/%s", out, e->d_name);
            (void)unlink(stale);
        }
    }
    closedir(d);
    return other;
}

/* A non-negative integer environment variable; -1 when unset or not one. */
static long env_count(const char *name) {
    const char *s = getenv(name);
    if (!s || !*s)
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v < 0 || v > 0x7fffffff ? -1 : v;
}

/* out, or out/rank-<RANK> for a rank of a job of more than one process,
 * into buf; NULL when it does not fit. */
static const char *out_for_rank(const char *out, char *buf, size_t len) {
    long rank = env_count("RANK"), world = env_count("WORLD_SIZE");
    if (rank < 0 || world == 0 || world == 1) /* no rank, or a job of one: as a single process */
        return strlen(out) < len ? out : NULL;
    int n = snprintf(buf, len, "%s/rank-%ld", out, rank);
    return n > 0 && (size_t)n < len ? buf : NULL;
}

/* 0 when path (made already) is a directory this process may write its
 * report into: not a symbolic link at its name (never followed: a link
 * planted there would have the report written, and the derived files
 * removed, wherever it points), and owned by the effective user or root,
 * unless STEPSCOPE_ALLOW_FOREIGN_DIR=1 (another user who owns it could
 * replace what is written there).  Else -1 with why set. */
static int usable_dir(const char *path, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        snprintf(why, whylen, "%s: %s", path,
                 lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? "is a symbolic link (not followed)" : strerror(e));
        return -1;
    }
    int rc = fstat(fd, &st);
    close(fd);
    if (rc != 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return -1;
    }
    const char *allow = sps__env_path("STEPSCOPE_ALLOW_FOREIGN_DIR"); /* never in a setuid process */
    if (st.st_uid != geteuid() && st.st_uid != 0 && !(allow && !strcmp(allow, "1"))) {
        snprintf(why, whylen, "%s: owned by uid %u, not by this user (STEPSCOPE_ALLOW_FOREIGN_DIR=1 allows it)",
                 path, (unsigned)st.st_uid);
        return -1;
    }
    return 0;
}

/* Make STEPSCOPE_OUT (base) and, for a rank, out = base/rank-N, each
 * checked as usable_dir says.  Returns 0, or -1 with why set. */
static int make_out_dir(const char *base, const char *out, char *why, size_t whylen) {
    if (sps__platform_mkdirs(base) != 0) {
        snprintf(why, whylen, "%s: %s", base, strerror(errno));
        return -1;
    }
    if (usable_dir(base, why, whylen) != 0)
        return -1;
    if (out == base)
        return 0;
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        snprintf(why, whylen, "%s: %s", out, strerror(errno));
        return -1;
    }
    return usable_dir(out, why, whylen);
}

/* The recorder's open hook: claim STEPSCOPE_OUT for this process. */
static void claim_out_dir(void) {
    const char *base = sps__env_path("STEPSCOPE_OUT"), *out;
    if (!base || sps__env_path("STEPSCOPE_RUN_DIR"))
        return; /* no report asked for, or `stepscope run` writes it */
    char ranked[sizeof O.dir];
    if (!(out = out_for_rank(base, ranked, sizeof ranked)) || ancestor_owns(out))
        return;
    if (make_out_dir(base, out, O.failed, sizeof O.failed) != 0) { /* said at exit: the run goes on */
        O.owner = getpid();
        return;
    }
    /* absolute now: a relative STEPSCOPE_OUT and a chdir later (Hydra
     * does one) must not split the run across two directories */
    char abs[PATH_MAX];
    if (realpath(out, abs) && strlen(abs) < sizeof O.dir)
        out = abs;
    struct sps_process_id self = sps__platform_self();
    snprintf(O.dir, sizeof O.dir, "%s", out);
    O.owner = getpid();
    snprintf(O.marker, sizeof O.marker, "%s/.owner-%d-%llu", out, self.pid, self.start);
    /* O_EXCL|O_NOFOLLOW: never through a link planted at the name; what
     * was planted there before this process started is not its marker */
    int fd = open(O.marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST && unlink(O.marker) == 0)
        fd = open(O.marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    snprintf(O.name, sizeof O.name, "report.json");
    O.why[0] = '\0';
    char records[600];
    struct stat st;
    snprintf(records, sizeof records, "%s/records", out);
    int other = other_running_owner(out, self);
    if (other)
        snprintf(O.why, sizeof O.why, "another running process (pid %d) reports into this directory too", other);
    else if (stat(records, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(O.why, sizeof O.why, "its report.json belongs to the `stepscope run` whose records/ are there");
    if (O.why[0])
        snprintf(O.name, sizeof O.name, "report-%d.json", (int)O.owner);
}

/* The recorder's exit hook: write the report and say where it went. */
static void write_at_exit(void) {
    if (O.failed[0] && O.owner == getpid()) {
        fprintf(stderr, "stepscope: report not written: cannot use STEPSCOPE_OUT %s\n", O.failed);
        return;
    }
    if (!O.dir[0] || O.owner != getpid())
        return; /* not asked for, or a fork child of the owner */
    char err[512];
    if (sps__standalone_write(O.dir, O.name, err, sizeof err) != 0)
        fprintf(stderr, "stepscope: report not written: %s\n", err);
    else if (O.why[0])
        fprintf(stderr, "stepscope: report written to %s/%s, not report.json: %s\n", O.dir, O.name, O.why);
    else
        fprintf(stderr, "stepscope: report written to %s/%s (`stepscope report %s` makes HTML, CSV and a trace)\n",
                O.dir, O.name, O.dir);
    (void)unlink(O.marker);
}

/* At load: the shared library, the Python module and (through the
 * --undefined reference) every program linking the static library. */
__attribute__((constructor)) static void register_hooks(void) {
    sps__recorder_set_open_hook(claim_out_dir);
    sps__recorder_set_exit_hook(write_at_exit);
}
