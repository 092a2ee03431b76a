/*
 * test_live_view.c - `stepscope run`'s live status on a real terminal (a
 * pseudo-terminal this test holds the master side of, as a terminal
 * emulator would): it is drawn below a scrolling region the workload's
 * output stays in, refreshed at most twice a second, erased and the
 * region reset before the summary, given up while Ctrl-Z has the job
 * stopped, and absent with --quiet, --no-live, TERM=dumb or when stderr
 * is not a terminal.
 *
 * The test never waits for a time to pass: it waits for what the workload
 * and the view write (with a generous deadline that only a hang reaches).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "support.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPS_TEST_TSAN 1
#endif
#endif
#ifdef __SANITIZE_THREAD__
#define SPS_TEST_TSAN 1
#endif

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

#define ROWS 30
#define COLS 100
/* 30 rows: three status lines, the workload scrolls in rows 1-27 */
#define REGION "\033[1;27r"
#define DRAW "\0337\033[28;1H\033[2K\033[0mstepscope "
#define RELEASE "\0337\033[r\033[28;1H\033[J\0338"
#define DEADLINE_S 60

/* What the terminal showed: every byte the pty's master read. */
struct screen {
    char *buf;
    size_t len, cap;
    int master;
    pid_t pid; /* stepscope, the session leader */
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run argv on a new pseudo-terminal as its session's leader, with TERM
 * set to term.  keep_fd and keep_fd2 stay open in the child (-1: none). */
static int spawn_on_pty(struct screen *s, char *const argv[], const char *term, int keep_fd, int keep_fd2) {
    memset(s, 0, sizeof s[0]);
    s->cap = 1 << 20;
    s->buf = malloc(s->cap);
    s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (!s->buf || s->master < 0 || grantpt(s->master) != 0 || unlockpt(s->master) != 0)
        return -1;
    struct winsize ws = {.ws_row = ROWS, .ws_col = COLS};
    ioctl(s->master, TIOCSWINSZ, &ws);
    const char *slave = ptsname(s->master);
    s->pid = fork();
    if (s->pid == 0) {
        setsid();
        int fd = open(slave, O_RDWR);
        if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) != 0)
            _exit(120);
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2 && fd != keep_fd && fd != keep_fd2)
            close(fd);
        if (keep_fd >= 0)
            fcntl(keep_fd, F_SETFD, 0);
        if (keep_fd2 >= 0)
            fcntl(keep_fd2, F_SETFD, 0);
        setenv("TERM", term, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    return s->pid > 0 ? 0 : -1;
}

/* Read what is there, waiting up to ms.  0 at the end (every process
 * holding the terminal gone), 1 otherwise. */
static int pump(struct screen *s, int ms) {
    struct pollfd p = {.fd = s->master, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return 1;
    if (s->len + 4096 >= s->cap) {
        s->cap *= 2;
        s->buf = realloc(s->buf, s->cap);
    }
    ssize_t got = read(s->master, s->buf + s->len, 4095);
    if (got <= 0)
        return got < 0 && errno == EINTR;
    s->len += (size_t)got;
    s->buf[s->len] = '\0';
    return 1;
}

/* Pump until needle appears after offset from, or the deadline. */
static int wait_for(struct screen *s, size_t from, const char *needle) {
    double end = now_s() + DEADLINE_S;
    while (now_s() < end) {
        if (s->len > from && strstr(s->buf + from, needle))
            return 1;
        if (!pump(s, 100))
            return s->len > from && strstr(s->buf + from, needle) != NULL;
    }
    return 0;
}

/* Pump to the end and reap stepscope: its exit code. */
static int finish(struct screen *s) {
    double end = now_s() + DEADLINE_S;
    while (now_s() < end && pump(s, 100))
        ;
    int status;
    if (waitpid(s->pid, &status, WNOHANG) == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
    }
    close(s->master);
    return exit_code_of(status);
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static const char *last_of(const char *hay, const char *needle) {
    const char *last = NULL;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        last = p;
    return last;
}

static void test_status_below_the_output(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-view"));
    /* ready: the workload's steps are done; go: the test saw them drawn */
    int ready[2], go[2];
    CHECK(pipe2(ready, O_CLOEXEC) == 0 && pipe2(go, O_CLOEXEC) == 0);
    char fd_arg[32];
    snprintf(fd_arg, sizeof fd_arg, "%d,%d", ready[1], go[0]);
    char *argv[] = {STEPSCOPE, "run", "-o", dir, "--", WORKLOAD, "--steps", "5", "--print", "--handshake", fd_arg,
                    NULL};
    struct screen s;
    double t0 = now_s();
    CHECK(spawn_on_pty(&s, argv, "xterm", ready[1], go[0]) == 0);
    close(ready[1]);
    close(go[0]);
    char b;
    CHECK(read(ready[0], &b, 1) == 1);
    close(ready[0]);
    /* the view shows the steps within a refresh or two */
    CHECK(wait_for(&s, 0, "  step 5  "));
    close(go[1]); /* the workload goes on and exits 0 */
    CHECK_EQ_I(finish(&s), 0);
    double elapsed = now_s() - t0;
    const char *out = s.buf;

    /* the region is set once, above three status lines */
    CHECK_EQ_I(count_of(out, REGION), 1);
    int draws = count_of(out, DRAW);
    CHECK(draws >= 1);
    /* at most twice a second (the first after half a second) */
    CHECK_MSG(draws <= 2 * elapsed + 1, "%d draws in %.2f s", draws, elapsed);
    CHECK_STR_HAS(out, "phases: ");
    CHECK_STR_HAS(out, "\033[29;1H\033[2K\033[0mphases: ");
    /* the workload's own lines all arrive, in order, none inside a redraw */
    const char *at = out;
    for (int i = 0; i < 5; i++) {
        char line[64];
        snprintf(line, sizeof line, "workload step %d\r\n", i);
        const char *p = strstr(at, line);
        CHECK_MSG(p != NULL, "'%s' in order", line);
        CHECK_EQ_I(count_of(out, line), 1);
        if (p) {
            /* the last cursor save before the line is restored before it */
            const char *save = NULL, *restore = NULL;
            for (const char *q = out; (q = strstr(q, "\0337")) && q < p; q++)
                save = q;
            if (save)
                restore = strstr(save, "\0338");
            CHECK(!save || (restore && restore < p));
            at = p + strlen(line);
        }
    }
    /* released after the last redraw, before the summary */
    const char *release = last_of(out, RELEASE), *last_draw = last_of(out, DRAW);
    const char *report = strstr(out, "report: ");
    CHECK(release && last_draw && release > last_draw);
    CHECK(report && release && report > release);
    CHECK_EQ_I(count_of(out, RELEASE), 1);
    /* report.json counts the same redraws */
    json_t *r = report_load(dir);
    CHECK_EQ_I(json_num(r, "overhead.live_view_refreshes"), draws);
    CHECK(json_num(r, "overhead.live_view_cpu_seconds") >= 0);
    json_decref(r);
    free(s.buf);
}

/* Ctrl-Z: the status is erased and the region reset before stepscope
 * stops, so the shell has the whole screen; fg brings it back.  (Not
 * under ThreadSanitizer, which defers the delivery of the signals this
 * relies on.) */
static void test_ctrl_z_gives_the_screen_back(void) {
#ifdef SPS_TEST_TSAN
    fprintf(stderr, "SKIP test_ctrl_z_gives_the_screen_back: ThreadSanitizer defers signal delivery\n");
    return;
#endif
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-tstp"));
    int fds[2];
    CHECK(pipe(fds) == 0);
    char fd_arg[16];
    snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
    char *argv[] = {STEPSCOPE, "run", "-o", dir, "--", WORKLOAD, "--steps", "3", "--wait-term", fd_arg, NULL};
    struct screen s;
    CHECK(spawn_on_pty(&s, argv, "xterm", fds[1], -1) == 0);
    close(fds[1]);
    char b;
    CHECK(read(fds[0], &b, 1) == 1);
    close(fds[0]);
    CHECK(wait_for(&s, 0, "  step 3  "));
    CHECK(write(s.master, "\x1a", 1) == 1); /* Ctrl-Z */
    int status = 0;
    double end = now_s() + DEADLINE_S;
    while (now_s() < end && waitpid(s.pid, &status, WUNTRACED | WNOHANG) == 0)
        pump(&s, 20);
    CHECK(WIFSTOPPED(status));
    while (pump(&s, 50) && s.len && !strstr(s.buf, RELEASE) && now_s() < end)
        ;
    const char *release = last_of(s.buf, RELEASE), *last_draw = last_of(s.buf, DRAW);
    CHECK(release && last_draw && release > last_draw);
    size_t mark = s.len;
    kill(s.pid, SIGCONT); /* fg */
    CHECK(wait_for(&s, mark, REGION)); /* the status comes back */
    CHECK(wait_for(&s, mark, DRAW));
    kill(s.pid, SIGTERM);
    CHECK_EQ_I(finish(&s), 42);
    free(s.buf);
}

/* No terminal control at all where the view is off.  The view would
 * refresh every 100 ms here (STEPSCOPE_LIVE_REFRESH_MS), so each run lasts
 * three refreshes without waiting seconds for them. */
static void test_off_without_escape_codes(void) {
    setenv("STEPSCOPE_LIVE_REFRESH_MS", "100", 1);
    struct {
        const char *option, *term;
    } cases[] = {{"-q", "xterm"}, {"--no-live", "xterm"}, {"--no-sample", "dumb"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s", tmpdir_new("live-off"));
        /* long enough for two refreshes had the view been on */
        char *argv[] = {STEPSCOPE, "run", (char *)cases[i].option, "-o", dir, "--", WORKLOAD, "--steps", "3",
                        "--print", "--sleep-ms", "300", NULL};
        struct screen s;
        CHECK(spawn_on_pty(&s, argv, cases[i].term, -1, -1) == 0);
        CHECK_EQ_I(finish(&s), 0);
        CHECK_MSG(!strchr(s.buf, '\033'), "%s TERM=%s: no escape codes", cases[i].option, cases[i].term);
        CHECK_STR_HAS(s.buf, "workload step 2\r\n");
        json_t *r = report_load(dir);
        CHECK(json_is_null(json_path(r, "overhead.live_view_refreshes")));
        json_decref(r);
        free(s.buf);
    }
    /* the control: the same run with the view on draws in that time */
    char dir[600], err[8192];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-on"));
    char *on_argv[] = {STEPSCOPE, "run", "-o", dir, "--", WORKLOAD, "--steps", "3", "--print", "--sleep-ms", "300",
                       NULL};
    struct screen on;
    CHECK(spawn_on_pty(&on, on_argv, "xterm", -1, -1) == 0);
    CHECK_EQ_I(finish(&on), 0);
    CHECK_MSG(count_of(on.buf, DRAW) >= 1, "the view on: %d draws", count_of(on.buf, DRAW));
    free(on.buf);
    /* stderr not a terminal (a pipe, as under CI or a redirect) */
    snprintf(dir, sizeof dir, "%s", tmpdir_new("live-pipe"));
    char *argv[] = {STEPSCOPE, "run", "-o", dir, "--", WORKLOAD, "--steps", "3", "--sleep-ms", "300", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    CHECK(!strchr(err, '\033'));
    CHECK_STR_HAS(err, "report: ");
    json_t *r = report_load(dir);
    CHECK(json_is_null(json_path(r, "overhead.live_view_refreshes")));
    json_decref(r);
    unsetenv("STEPSCOPE_LIVE_REFRESH_MS");
}

int main(void) {
    RUN_TEST(test_status_below_the_output);
    RUN_TEST(test_ctrl_z_gives_the_screen_back);
    RUN_TEST(test_off_without_escape_codes);
    return check_report();
}
