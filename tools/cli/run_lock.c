/* run_lock.c - the run directory's lock (see run_lock.h). */
#include "run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What the lock file holds: "PID START_UNIX_S HOST\nCOMMAND LINE\n". */
#define HOLDER_MAX 1024

/* The longest command line a refusal shows, in bytes. */
#define SHOWN_MAX 119

/* s made fit for one line of a terminal, in place: control bytes shown as
 * '?', cut to SHOWN_MAX bytes ending in "..." (s holds at least 120). */
static void one_line(char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x20 || s[n] == 0x7f)
            s[n] = '?';
    if (n > SHOWN_MAX)
        memcpy(s + SHOWN_MAX - 3, "...", 4);
}

/* The command line, its arguments joined by spaces, as one_line makes it. */
static void command_line(char **argv, int argc, char *buf, size_t len) {
    size_t n = 0;
    for (int i = 0; i < argc && n + 1 < len; i++) {
        if (i > 0)
            buf[n++] = ' ';
        for (const char *s = argv[i]; *s && n + 1 < len; s++)
            buf[n++] = *s;
    }
    buf[n] = '\0';
    one_line(buf);
}

/* The holder that fd's file names, as "stepscope run pid N (CMD),
 * started T" (T the time of day when it is today). */
static void describe_holder(int fd, char *who, size_t wholen) {
    char text[HOLDER_MAX];
    ssize_t got = pread(fd, text, sizeof text - 1, 0);
    text[got > 0 ? got : 0] = '\0';
    int pid;
    long long start;
    char host[256], here[256] = "";
    const char *nl = strchr(text, '\n');
    if (!nl || sscanf(text, "%d %lld %255s", &pid, &start, host) != 3 || pid <= 0) {
        /* taken a moment ago, its line not written yet */
        snprintf(who, wholen, "another stepscope run");
        return;
    }
    /* whatever the file says (anyone who could write it could plant
     * bytes for the terminal): one plain line */
    char cmd[HOLDER_MAX];
    snprintf(cmd, sizeof cmd, "%.*s", (int)strcspn(nl + 1, "\n"), nl + 1);
    one_line(cmd);
    one_line(host);
    time_t t = (time_t)start, now = time(NULL);
    struct tm then_tm, now_tm;
    char when[64] = "?";
    if (localtime_r(&t, &then_tm) && localtime_r(&now, &now_tm))
        strftime(when, sizeof when,
                 then_tm.tm_year == now_tm.tm_year && then_tm.tm_yday == now_tm.tm_yday ? "%H:%M:%S"
                                                                                       : "%Y-%m-%d %H:%M:%S",
                 &then_tm);
    (void)gethostname(here, sizeof here - 1);
    char on[300] = "";
    if (strcmp(host, here) != 0)
        snprintf(on, sizeof on, " on %s", host);
    snprintf(who, wholen, "stepscope run pid %d%s (%s), started %s", pid, on, cmd, when);
}

int sps_run_lock_take(int dfd, char **argv, int argc, char *why, size_t whylen) {
    /* O_NOFOLLOW: a link planted at the name is refused, never opened */
    int fd = openat(dfd, SPS_RUN_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(why, whylen, "%s: %s", SPS_RUN_LOCK_FILE,
                 errno == ELOOP ? "is a symbolic link (remove it)" : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "%s: not a regular file (remove it)", SPS_RUN_LOCK_FILE);
        close(fd);
        return -1;
    }
    /* the holder's line is written into the file in place: a hard link
     * planted at the name would have it written into a file outside DIR */
    if (st.st_nlink != 1) {
        snprintf(why, whylen, "%s: has %ju names (a hard link to a file elsewhere?): remove it", SPS_RUN_LOCK_FILE,
                 (uintmax_t)st.st_nlink);
        close(fd);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            char who[HOLDER_MAX + 128];
            describe_holder(fd, who, sizeof who);
            snprintf(why, whylen, "in use by %s", who);
        } else {
            snprintf(why, whylen, "%s: cannot lock it: %s", SPS_RUN_LOCK_FILE, strerror(errno));
        }
        close(fd);
        return -1;
    }
    char host[256] = "localhost", cmd[HOLDER_MAX - 300], text[HOLDER_MAX];
    if (gethostname(host, sizeof host - 1) != 0 || !host[0] || strpbrk(host, " \n"))
        snprintf(host, sizeof host, "localhost");
    command_line(argv, argc, cmd, sizeof cmd);
    int n = snprintf(text, sizeof text, "%d %lld %s\n%s\n", (int)getpid(), (long long)time(NULL), host, cmd);
    if (n > (int)sizeof text - 1)
        n = (int)sizeof text - 1;
    /* who holds it is a courtesy for the refused: a failure here costs
     * only the name in their message */
    if (ftruncate(fd, 0) == 0 && pwrite(fd, text, (size_t)n, 0) != n && ftruncate(fd, 0) != 0)
        return fd; /* a half line reads as "another stepscope run" */
    return fd;
}

int sps_run_lock_held(const char *dir, char *who, size_t wholen) {
    char path[4096 + 32];
    if (snprintf(path, sizeof path, "%s/%s", dir, SPS_RUN_LOCK_FILE) >= (int)sizeof path)
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int held = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        held = 1;
        describe_holder(fd, who, wholen);
    }
    close(fd); /* a shared lock taken here goes with it */
    return held;
}
