/*
 * live_view.c - draw the live status in lines taken out of the terminal's
 * scrolling region (see live_view.h).
 *
 * VT100 controls used, all in xterm, the Linux console, tmux and screen:
 *   ESC 7 / ESC 8   save / restore the cursor (and its attributes): the
 *                   workload's cursor and colours are untouched by a redraw
 *   ESC D           index: down one line, scrolling at the bottom, keeping
 *                   the column (makes room for the status lines without
 *                   moving a half-written line of the workload's)
 *   CSI n A         cursor up n lines
 *   CSI t;b r       scrolling region rows t..b (moves the cursor home,
 *                   hence the save/restore around it); CSI r resets it
 *   CSI r;c H       cursor to row r, column c
 *   CSI 2K, CSI J   erase the line, erase to the end of the screen
 *   CSI 0m          default attributes for the status text
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "live/peek.h"
#include "live/status.h"
#include "live_view.h"
#include "ticker.h"

#define REFRESH_NS 500000000ull /* at most twice a second */
/* another period, for the tests that wait on refreshes (docs/cli.md) */
#define REFRESH_ENV "STEPSCOPE_LIVE_REFRESH_MS"
/* steps/s is measured over the last RATE_WINDOW (at least 10 s, at most
 * two minutes, and five median steps when steps are slow), so a stall
 * shows as a falling rate, and one slow step does not make it jump */
#define RATE_HISTORY 256u
#define RATE_WINDOW_MIN_NS 10000000000ull
#define RATE_WINDOW_MAX_NS 120000000000ull
#define RATE_SPAN_MIN_NS 1000000000ull

struct rate_point {
    uint64_t t_ns, count;
};

struct sps_live_view {
    int fd, pgid;
    uint64_t start_ns;
    const struct sps__published *published;
    struct sps__live_peek *peek;
    struct sps_ticker *ticker;

    pthread_mutex_t lock; /* guards what follows, and every write to the terminal */
    int stopping, paused, broken;
    int reserved; /* status lines out of the scrolling region now (0: none) */
    int rows;     /* the terminal's height when they were reserved */
    uint64_t refreshes;
    double cpu_seconds;

    /* the view thread's own: steps/s over recent refreshes */
    struct rate_point rate[RATE_HISTORY];
    unsigned nrate, rate_head;
    char rate_step[SPS_LIVE_NAME_LEN];
    int rate_pid;
    struct sps__sample sample;
    struct sps__live_steps steps;
};

const char *sps_live_view_unavailable(int fd) {
    if (!isatty(fd))
        return "not a terminal";
    const char *term = getenv("TERM");
    if (term && strcmp(term, "dumb") == 0)
        return "TERM is dumb";
    return NULL;
}

/* All of buf, with SIGTTOU blocked: a process outside the terminal's
 * foreground group may write to it then even under `stty tostop`, and the
 * view only writes while the workload (our child) is in the foreground. */
static int write_all(int fd, const char *buf, size_t len) {
    sigset_t ttou, saved;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &saved);
    int rc = 0;
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        buf += w;
        len -= (size_t)w;
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return rc;
}

struct out {
    char buf[4096];
    size_t len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len = o->len + (size_t)n < sizeof o->buf ? o->len + (size_t)n : sizeof o->buf - 1;
}

/* Erase the status lines and reset the scrolling region.  Lock held. */
static void release_lines(struct sps_live_view *v) {
    if (!v->reserved)
        return;
    struct out o = {.len = 0};
    put(&o, "\0337\033[r\033[%d;1H\033[J\0338", v->rows - v->reserved + 1);
    write_all(v->fd, o.buf, o.len);
    v->reserved = 0;
}

static int terminal_size(int fd, int *rows, int *cols) {
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0)
        return -1;
    *rows = ws.ws_row;
    *cols = ws.ws_col;
    return 0;
}

/* Lines the status takes on a terminal this tall (0: too small). */
static int lines_for(int rows) {
    return rows >= 16 ? 3 : rows >= 8 ? 2 : rows >= 4 ? 1 : 0;
}

static int in_foreground(const struct sps_live_view *v) {
    return tcgetpgrp(v->fd) == v->pgid;
}

/* Draw lines[0..n) at the bottom, reserving them first.  Lock held. */
static void draw(struct sps_live_view *v, char lines[][SPS_LIVE_LINE_MAX], int n, int rows) {
    struct out o = {.len = 0};
    if (v->reserved && (v->reserved != n || v->rows != rows)) {
        /* resized: the old lines have moved; terminals mostly reset the
         * region on a resize, this makes sure */
        put(&o, "\0337\033[r\0338");
        v->reserved = 0;
    }
    if (!v->reserved) {
        for (int i = 0; i < n; i++)
            put(&o, "\033D");
        put(&o, "\033[%dA\0337\033[1;%dr\0338", n, rows - n);
    }
    put(&o, "\0337");
    for (int i = 0; i < n; i++)
        put(&o, "\033[%d;1H\033[2K\033[0m%s", rows - n + 1 + i, lines[i]);
    put(&o, "\0338");
    if (write_all(v->fd, o.buf, o.len) != 0) {
        v->broken = 1; /* the terminal went away: stay quiet */
        return;
    }
    v->reserved = n;
    v->rows = rows;
    v->refreshes++;
}

static double steps_per_second(struct sps_live_view *v, uint64_t now) {
    const struct sps__live_steps *st = &v->steps;
    if (!st->have_step)
        return NAN;
    if (strcmp(v->rate_step, st->step_name) != 0 || v->rate_pid != st->pid) {
        /* another step became the busiest: its own history */
        memcpy(v->rate_step, st->step_name, sizeof v->rate_step);
        v->rate_pid = st->pid;
        v->nrate = 0;
    }
    v->rate[v->rate_head] = (struct rate_point){now, st->count};
    v->rate_head = (v->rate_head + 1) % RATE_HISTORY;
    if (v->nrate < RATE_HISTORY)
        v->nrate++;
    uint64_t window = 5 * st->median_ns;
    window = window < RATE_WINDOW_MIN_NS ? RATE_WINDOW_MIN_NS : window > RATE_WINDOW_MAX_NS ? RATE_WINDOW_MAX_NS : window;
    /* the oldest point inside the window */
    const struct rate_point *old = NULL;
    for (unsigned k = v->nrate; k >= 1; k--) {
        const struct rate_point *p = &v->rate[(v->rate_head + RATE_HISTORY - k) % RATE_HISTORY];
        if (now - p->t_ns <= window) {
            old = p;
            break;
        }
    }
    if (!old || now - old->t_ns < RATE_SPAN_MIN_NS || st->count < old->count)
        return NAN;
    return (double)(st->count - old->count) * 1e9 / (double)(now - old->t_ns);
}

/* One refresh: read, format, draw.  On the ticker's thread, without the
 * lock. */
static void refresh(void *arg) {
    struct sps_live_view *v = arg;
    pthread_mutex_lock(&v->lock);
    int idle = v->stopping || v->paused || v->broken;
    pthread_mutex_unlock(&v->lock);
    if (idle)
        return;
    int rows, cols;
    if (!in_foreground(v) || terminal_size(v->fd, &rows, &cols) != 0)
        return;
    int n = lines_for(rows);
    if (!n)
        return;
    uint64_t now = sps__mono_ns();
    sps__live_peek_read(v->peek, &v->steps);
    int have_sample = v->published && sps__published_read(v->published, &v->sample, NULL) == 0;
    struct sps__live_frame fr = {
        .elapsed_s = (double)(now - v->start_ns) * 1e-9,
        .steps = &v->steps,
        .steps_per_s = steps_per_second(v, now),
        .sample = have_sample ? &v->sample : NULL,
    };
    char lines[3][SPS_LIVE_LINE_MAX];
    sps__live_format(&fr, cols - 1 /* the last column would wrap on some terminals */, n, lines);
    pthread_mutex_lock(&v->lock);
    if (!v->stopping && !v->paused && !v->broken && in_foreground(v))
        draw(v, lines, n, rows);
    pthread_mutex_unlock(&v->lock);
}

struct sps_live_view *sps_live_view_start(int fd, const char *records_dir, const struct sps__published *published,
                                          int workload_pgid, uint64_t start_ns) {
    if (sps_live_view_unavailable(fd))
        return NULL;
    struct sps_live_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->fd = fd;
    v->pgid = workload_pgid;
    v->start_ns = start_ns;
    v->published = published;
    v->peek = sps__live_peek_open(records_dir);
    if (!v->peek || pthread_mutex_init(&v->lock, NULL) != 0) {
        sps__live_peek_close(v->peek);
        free(v);
        return NULL;
    }
    if (!(v->ticker = sps_ticker_start(sps_ticker_period_from_env(REFRESH_ENV, REFRESH_NS), 0, refresh, v))) {
        pthread_mutex_destroy(&v->lock);
        sps__live_peek_close(v->peek);
        free(v);
        return NULL;
    }
    return v;
}

void sps_live_view_pause(struct sps_live_view *v) {
    if (!v)
        return;
    pthread_mutex_lock(&v->lock);
    v->paused = 1;
    release_lines(v);
    pthread_mutex_unlock(&v->lock);
}

void sps_live_view_resume(struct sps_live_view *v) {
    if (!v)
        return;
    pthread_mutex_lock(&v->lock);
    v->paused = 0;
    pthread_mutex_unlock(&v->lock);
}

void sps_live_view_stop(struct sps_live_view *v, struct sps_live_view_cost *cost) {
    if (!v)
        return;
    pthread_mutex_lock(&v->lock);
    v->stopping = 1; /* a refresh under way draws nothing more */
    pthread_mutex_unlock(&v->lock);
    sps_ticker_stop(v->ticker, &v->cpu_seconds);
    release_lines(v);
    if (cost) {
        cost->refreshes = v->refreshes;
        cost->cpu_seconds = v->cpu_seconds;
    }
    pthread_mutex_destroy(&v->lock);
    sps__live_peek_close(v->peek);
    free(v);
}
