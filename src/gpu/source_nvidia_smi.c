/*
 * source_nvidia_smi.c - NVIDIA GPUs through the nvidia-smi command: the last
 * resort when NVML cannot be loaded (a container with the tool but not the
 * library on the loader path, say).  One read runs the command once, which
 * costs tens to hundreds of milliseconds, so the source is flagged slow.
 *
 * The command is started with posix_spawn (safe in a multithreaded
 * process: no fork of the whole address space, no code between fork and
 * exec), its output read through close-on-exec pipes under a deadline, and
 * the child reaped by its pid only: the program stepscope runs inside may
 * reap its own children by pid too, and must not lose one to us.
 */
#include "gpu/visible_devices.h"
#include "sources/source.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SMI_QUERY                                                                                              \
    "--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu,utilization.memory,temperature.gpu," \
    "power.draw,clocks.sm,clocks.mem"
#define SMI_FORMAT "--format=csv,noheader,nounits"
/* The numeric columns, in the query's order after index, uuid and name. */
static const enum sps_gpu_metric smi_columns[] = {
    SPS_M_GPU_MEMORY_USED_BYTES,   SPS_M_GPU_MEMORY_TOTAL_BYTES, SPS_M_GPU_UTILIZATION_PERCENT,
    SPS_M_GPU_MEMORY_UTILIZATION_PERCENT, SPS_M_GPU_TEMPERATURE_CELSIUS, SPS_M_GPU_POWER_WATTS,
    SPS_M_GPU_SM_CLOCK_HERTZ,      SPS_M_GPU_MEMORY_CLOCK_HERTZ,
};
#define SMI_NUMERIC_COLUMNS ((int)(sizeof smi_columns / sizeof smi_columns[0]))
#define SMI_COLUMNS (3 + SMI_NUMERIC_COLUMNS)

#define SMI_DEFAULT_TIMEOUT_MS 2000
/* One row is about 150 bytes: room for far more GPUs than a machine has. */
#define SMI_OUTPUT_MAX 65536
#define SMI_MAX_ROWS 64

struct smi_row {
    int index; /* nvidia-smi's (NVML's) index */
    char uuid[96];
    char name[64];
    double v[SPS_GPU_METRIC_COUNT];
};

struct smi_state {
    char output[SMI_OUTPUT_MAX];
    struct smi_row rows[SMI_MAX_ROWS];
};

static int64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The first line of text (up to cap - 1 bytes), trailing space removed. */
static void first_line(const char *text, char *line, size_t cap) {
    while (*text == '\n' || *text == '\r' || *text == ' ')
        text++;
    size_t len = strcspn(text, "\r\n");
    if (len >= cap)
        len = cap - 1;
    memcpy(line, text, len);
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    line[len] = '\0';
}

/* Read what is there from fd into buf[*len..cap-1) (the rest is drained
 * and dropped).  Returns 1 while the fd stays open, 0 at end of file. */
static int drain(int fd, char *buf, size_t cap, size_t *len) {
    char sink[4096];
    for (;;) {
        char *dst = *len + 1 < cap ? buf + *len : sink;
        size_t room = *len + 1 < cap ? cap - 1 - *len : sizeof sink;
        ssize_t n = read(fd, dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : 0;
        if (n == 0)
            return 0;
        if (dst != sink) {
            *len += (size_t)n;
            buf[*len] = '\0';
        }
        return 1;
    }
}

static void reap(pid_t pid, int *status) {
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

/*
 * Run nvidia-smi with the query; its stdout lands in out (NUL-terminated).
 * Returns 0 when it exited with status 0, else -1 with a one-line reason.
 * The child is always reaped and every descriptor closed before return.
 */
static int run_smi(const struct sps__source_ctx *ctx, char *out, size_t cap, char *reason, size_t rcap) {
    int timeout_ms = ctx->smi_timeout_ms > 0 ? ctx->smi_timeout_ms : SMI_DEFAULT_TIMEOUT_MS;
    int out_pipe[2], err_pipe[2];
    out[0] = '\0';
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
        snprintf(reason, rcap, "cannot run nvidia-smi: pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        snprintf(reason, rcap, "cannot run nvidia-smi: pipe: %s", strerror(errno));
        close(out_pipe[0]);
        close(out_pipe[1]);
        return -1;
    }

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    /* dup2 clears close-on-exec on the copy; the originals close at exec */
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    posix_spawnattr_init(&attr);
    /* the calling thread (a sampler) may block every signal; nvidia-smi
     * should start with none blocked and SIGPIPE at its default */
    sigset_t none, pipe_default;
    sigemptyset(&none);
    sigemptyset(&pipe_default);
    sigaddset(&pipe_default, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &pipe_default);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    char arg0[] = "nvidia-smi", arg1[] = SMI_QUERY, arg2[] = SMI_FORMAT;
    char *argv[] = {arg0, arg1, arg2, NULL};
    pid_t pid;
    int err = ctx->smi_path ? posix_spawn(&pid, ctx->smi_path, &actions, &attr, argv, environ)
                            : posix_spawnp(&pid, "nvidia-smi", &actions, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (err != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        if (err == ENOENT && ctx->smi_path)
            snprintf(reason, rcap, "%s not found", ctx->smi_path);
        else if (err == ENOENT)
            snprintf(reason, rcap, "nvidia-smi not found on PATH");
        else
            snprintf(reason, rcap, "cannot run %s: %s", ctx->smi_path ? ctx->smi_path : "nvidia-smi", strerror(err));
        return -1;
    }

    char errors[256] = "";
    size_t out_len = 0, err_len = 0;
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2, status = 0, timed_out = 0, poll_errno = 0;
    int64_t deadline = monotonic_ms() + timeout_ms;
    while (open_fds > 0) {
        int64_t left = deadline - monotonic_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        int n = poll(fds, 2, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            timed_out = n == 0;
            poll_errno = errno;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !fds[i].revents)
                continue;
            int still_open = i == 0 ? drain(fds[i].fd, out, cap, &out_len)
                                    : drain(fds[i].fd, errors, sizeof errors, &err_len);
            if (!still_open) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    /* Both pipes closed: it is exiting.  Wait for that within the same
     * deadline without blocking (a child that closed its output and hung
     * must not hang the sampler). */
    int exited = 0;
    while (!timed_out && open_fds == 0) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            exited = 1;
            break;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            /* ECHILD: the program ignores SIGCHLD, so the kernel reaped it
             * and its status is gone; judge by the output */
            exited = 1;
            status = 0;
            break;
        }
        if (monotonic_ms() >= deadline) {
            timed_out = 1;
            break;
        }
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    if (!exited) {
        kill(pid, SIGKILL);
        reap(pid, &status);
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    if (!exited) {
        if (timed_out)
            snprintf(reason, rcap, "nvidia-smi did not answer within %d ms", timeout_ms);
        else
            snprintf(reason, rcap, "nvidia-smi: poll: %s", strerror(poll_errno));
        return -1;
    }
    if (WIFSIGNALED(status)) {
        snprintf(reason, rcap, "nvidia-smi was killed by signal %d", WTERMSIG(status));
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out_len == 0 && err_len == 0) {
        /* glibc before 2.24 reports a failed exec only as the child's
         * silent exit 127 */
        if (ctx->smi_path)
            snprintf(reason, rcap, "%s not found", ctx->smi_path);
        else
            snprintf(reason, rcap, "nvidia-smi not found on PATH");
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        /* nvidia-smi reports a missing driver on stdout, others on stderr */
        char line[160];
        first_line(*errors ? errors : out, line, sizeof line);
        snprintf(reason, rcap, "nvidia-smi failed (exit status %d)%s%s", WEXITSTATUS(status), *line ? ": " : "",
                 line);
        return -1;
    }
    return 0;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        s[--len] = '\0';
    return s;
}

/* A numeric field, or NAN for what nvidia-smi prints when it has no value:
 * "[N/A]", "[Not Supported]", "N/A", "[Unknown Error]", "". */
static double field_number(const char *text) {
    if (!((*text >= '0' && *text <= '9') || *text == '.' || *text == '-'))
        return NAN;
    char *end;
    double v = strtod(text, &end);
    return *end == '\0' ? v : NAN;
}

/* What one unit of each column is in the metric's unit. */
static double column_scale(enum sps_gpu_metric m) {
    switch (m) {
    case SPS_M_GPU_MEMORY_USED_BYTES:
    case SPS_M_GPU_MEMORY_TOTAL_BYTES:
        return 1024.0 * 1024.0; /* MiB */
    case SPS_M_GPU_SM_CLOCK_HERTZ:
    case SPS_M_GPU_MEMORY_CLOCK_HERTZ:
        return 1e6; /* MHz */
    default:
        return 1.0; /* percent, celsius, watts */
    }
}

/* Parse one CSV row (modified in place).  Returns 0, or -1 when it is not
 * a GPU row.  The name is whatever lies between the uuid and the numeric
 * columns, so a name with a comma in it still parses. */
static int parse_row(char *line, struct smi_row *row) {
    char *field[SMI_COLUMNS + 16];
    int n = 0;
    for (char *p = line;;) {
        if (n == (int)(sizeof field / sizeof field[0]))
            return -1;
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        field[n++] = trim(p);
        if (!comma)
            break;
        p = comma + 1;
    }
    if (n < SMI_COLUMNS)
        return -1;
    const char *index = field[0];
    if (!*index || strspn(index, "0123456789") != strlen(index) || strlen(index) > 6)
        return -1;
    row->index = atoi(index);
    snprintf(row->uuid, sizeof row->uuid, "%s", field[1]);
    row->name[0] = '\0';
    int name_end = n - SMI_NUMERIC_COLUMNS;
    for (int i = 2; i < name_end; i++) {
        size_t len = strlen(row->name);
        snprintf(row->name + len, sizeof row->name - len, "%s%s", i > 2 ? ", " : "", field[i]);
    }
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
        row->v[m] = NAN;
    for (int c = 0; c < SMI_NUMERIC_COLUMNS; c++)
        row->v[smi_columns[c]] = field_number(field[name_end + c]) * column_scale(smi_columns[c]);
    return 0;
}

/* Parse the whole output into rows.  Returns how many. */
static int parse_output(char *text, struct smi_row *rows, int cap) {
    int count = 0;
    for (char *line = text; line && *line && count < cap;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (parse_row(line, &rows[count]) == 0)
            count++;
        line = nl ? nl + 1 : NULL;
    }
    return count;
}

/*
 * Run, parse and keep the visible GPUs into s (NULL at open, which only
 * checks there is one).  Returns the number of visible GPUs, or -1 with a
 * reason.  note receives why CUDA_VISIBLE_DEVICES was cut short.
 */
static int query(struct smi_state *st, const struct sps__source_ctx *ctx, struct sps__sample *s, char *reason,
                 size_t cap, char *note, size_t note_cap) {
    if (run_smi(ctx, st->output, sizeof st->output, reason, cap) != 0)
        return -1;
    char head[120];
    first_line(st->output, head, sizeof head);
    int nrows = parse_output(st->output, st->rows, SMI_MAX_ROWS);
    if (nrows == 0) {
        snprintf(reason, cap, "nvidia-smi listed no GPU%s%s", *head ? ": " : "", head);
        return -1;
    }
    struct sps__gpu_identity found[SMI_MAX_ROWS];
    for (int i = 0; i < nrows; i++)
        found[i] = (struct sps__gpu_identity){st->rows[i].index, st->rows[i].uuid};
    struct sps__visible_devices visible;
    sps__visible_devices_parse(ctx->cuda_visible_devices, &visible);
    int position[SPS_CAPTURE_MAX_GPUS];
    int nvisible =
        sps__visible_devices_resolve(&visible, found, nrows, position, SPS_CAPTURE_MAX_GPUS, note, note_cap);
    if (nvisible == 0) {
        snprintf(reason, cap, "no GPU visible (CUDA_VISIBLE_DEVICES=%.40s)%s%s",
                 ctx->cuda_visible_devices ? ctx->cuda_visible_devices : "", *note ? ": " : "", note);
        return -1;
    }
    if (s) {
        s->ngpus = nvisible;
        for (int k = 0; k < nvisible; k++) {
            const struct smi_row *row = &st->rows[position[k]];
            struct sps__gpu_sample *out = &s->gpu[k];
            out->index = k;
            out->source = SPS_SOURCE_NVIDIA_SMI;
            snprintf(out->name, sizeof out->name, "%s", row->name);
            snprintf(out->uuid, sizeof out->uuid, "%s", row->uuid);
            memcpy(out->v, row->v, sizeof out->v);
        }
    }
    return nvisible;
}

static int smi_open(const struct sps__source_ctx *ctx, void **state, char *reason, size_t cap) {
    *state = NULL;
    reason[0] = '\0';
    struct smi_state *st = malloc(sizeof *st);
    if (!st) {
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    char note[128];
    if (query(st, ctx, NULL, reason, cap, note, sizeof note) < 0) {
        free(st);
        return -1;
    }
    snprintf(reason, cap, "%s", note);
    *state = st;
    return 0;
}

static int smi_read(void *state, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                    char *reason, size_t cap) {
    char note[128];
    if (query(state, ctx, s, reason, cap, note, sizeof note) < 0)
        return -1;
    s->read_ns[SPS_SOURCE_NVIDIA_SMI] = now_ns;
    return 0;
}

static void smi_close(void *state) {
    free(state);
}

const struct sps__source sps__source_nvidia_smi = {
    SPS_SOURCE_NVIDIA_SMI, "nvidia-smi", "NVIDIA GPUs through the nvidia-smi command (slow: one run per read)",
    1, 1, smi_open, smi_read, smi_close,
};
