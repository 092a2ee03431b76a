/* support.c - see support.h. */
#include "support.h"

#include "model/run.h"
#include "recorder.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Temporary directories are removed when the process that made them exits
 * (not its fork children), unless SPS_KEEP_TMP is set, for a post-mortem. */
static char made[16][512];
static int nmade;
static pid_t maker;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tmpdirs(void) {
    if (getpid() != maker || getenv("SPS_KEEP_TMP"))
        return;
    for (int i = 0; i < nmade; i++)
        nftw(made[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tmpdir_new(const char *tag) {
    static char path[512];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/sps-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        exit(99);
    }
    if (nmade == 0) {
        maker = getpid();
        atexit(remove_tmpdirs);
    }
    if (nmade < 16)
        snprintf(made[nmade++], sizeof made[0], "%s", path);
    return path;
}

int run_capture(char *const argv[], char *err, size_t errlen) {
    return run_capture_to(argv, NULL, err, errlen);
}

int run_capture_to(char *const argv[], const char *out_path, char *err, size_t errlen) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        if (fds[1] != 2) /* else a process the command leaves behind holds the pipe: no EOF here */
            close(fds[1]);
        int out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : open("/dev/null", O_WRONLY);
        dup2(out, 1);
        if (out > 2)
            close(out);
        execv(argv[0], argv);
        _exit(126);
    }
    close(fds[1]);
    size_t len = 0;
    char sink[4096];
    for (;;) {
        char *dst = err && len + 1 < errlen ? err + len : sink;
        size_t room = err && len + 1 < errlen ? errlen - 1 - len : sizeof sink;
        ssize_t n = read(fds[0], dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (dst != sink)
            len += (size_t)n;
    }
    close(fds[0]);
    if (err && errlen)
        err[len] = '\0';
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

int exit_code_of(int status) {
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

json_t *report_load(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        fprintf(stderr, "%s:%d:%d: %s\n", path, e.line, e.column, e.text);
    return j;
}

json_t *report_find(json_t *report, const char *array, const char *name) {
    json_t *arr = json_object_get(report, array);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strcmp(n, name) == 0)
            return v;
    }
    return NULL;
}

json_t *json_path(json_t *root, const char *path) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = root;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save)) {
        char *end;
        unsigned long index = strtoul(tok, &end, 10);
        cur = json_is_array(cur) && end != tok && !*end ? json_array_get(cur, index) : json_object_get(cur, tok);
    }
    return cur;
}

double json_num(json_t *root, const char *path) {
    json_t *v = json_path(root, path);
    return v && json_is_number(v) ? json_number_value(v) : NAN;
}

int count_lines(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '\n';
    if (*s && s[strlen(s) - 1] != '\n')
        n++;
    return n;
}

long read_file(const char *path, char *buf, size_t len) {
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return (long)n;
}

int files_named(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

char *read_whole(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
            buf[n] = '\0';
            if (len)
                *len = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

void write_file(const char *path, const void *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
        perror(path);
        exit(99);
    }
    close(fd);
}

void run_of_this_process(struct sps_run *run) {
    const void *base;
    size_t size;
    char label[512], err[512];
    memset(run, 0, sizeof *run);
    if (sps__recorder_snapshot(&base, &size, label, sizeof label) != 0) {
        fprintf(stderr, "this process has no record\n");
        exit(1);
    }
    struct sps_process_data p;
    if (sps__record_parse(base, size, label, SPS_PARSE_LIVE, &p, err, sizeof err) != 0) {
        fprintf(stderr, "its record does not parse: %s\n", err);
        exit(1);
    }
    if (sps__run_add(run, &p) != 0 || sps__run_build(run) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
}
