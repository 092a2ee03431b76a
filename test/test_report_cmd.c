/* test_report_cmd.c - `stepscope run` leaves every report file in its
 * directory, and `stepscope report DIR` makes them again, one at a time or
 * all, refusing bad input with one line and an exit status of 1 or 2. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

static const char *const report_files[] = {"report.json", "report.html", "steps.csv", "timeline.csv", "trace.json"};
#define NFILES (sizeof report_files / sizeof report_files[0])

static int exists(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

static void rm(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

/* Files whose name holds ".tmp-": what an interrupted write would leave. */
static int temporaries(const char *dir) {
    char cmd[1100], out[64];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '\\.tmp-'", dir);
    FILE *p = popen(cmd, "r");
    int n = p && fgets(out, sizeof out, p) ? atoi(out) : -1;
    if (p)
        pclose(p);
    return n;
}

/* `stepscope report DIR --format summary` into text (out_path keeps it). */
static void summary_of(const char *dir, const char *out_path, char *text, size_t len) {
    char err[2048];
    char *argv[] = {STEPSCOPE, "report", (char *)dir, "--format", "summary", NULL};
    CHECK_MSG(exit_code_of(run_capture_to(argv, out_path, err, sizeof err)) == 0, "report --format summary: %s", err);
    read_file(out_path, text, len);
}

/* One row of the summary's zone table: what must not depend on whether
 * it was made from records or from report.json (the times may differ in
 * their last printed digit: report.json keeps 15 significant digits). */
struct zone_row {
    char name[128];
    char kind[16];
    unsigned long long count;
};

/* The rows of the zone table in text, in order; at most max. */
static size_t zone_rows(const char *text, struct zone_row *rows, size_t max) {
    const char *line = strstr(text, "\nzone ");
    size_t n = 0;
    for (line = line ? strchr(line + 1, '\n') : NULL; line && n < max; line = strchr(line, '\n')) {
        struct zone_row r;
        line++;
        /* the value and counter lines that follow have no count there */
        if (sscanf(line, "%127s %15s %llu", r.name, r.kind, &r.count) != 3)
            break;
        rows[n++] = r;
    }
    return n;
}

static const struct zone_row *row_named(const struct zone_row *rows, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name))
            return &rows[i];
    return NULL;
}

/* Every line of text that starts with prefix, in order, into out. */
static void lines_starting(const char *text, const char *prefix, char *out, size_t len) {
    size_t used = 0;
    out[0] = '\0';
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t l = strcspn(line, "\n");
        if (!strncmp(line, prefix, strlen(prefix)) && used + l + 2 <= len) {
            memcpy(out + used, line, l);
            used += l;
            out[used++] = '\n';
            out[used] = '\0';
        }
    }
}

/* One run shared by the tests: three steps with zones, and a zone with a
 * name to look for. */
static const char *run_dir(void) {
    static char dir[1024]; /* tmpdir_new's path lasts until its next call */
    if (dir[0])
        return dir;
    snprintf(dir, sizeof dir, "%s", tmpdir_new("reportcmd"));
    char err[2048];
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", (char *)dir, "--", WORKLOAD, "--steps", "3", "--tag", "tagged_zone", NULL};
    CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == 0, "run: %s", err);
    return dir;
}

static void test_run_writes_every_file(void) {
    const char *dir = run_dir();
    for (size_t i = 0; i < NFILES; i++)
        CHECK_MSG(exists(dir, report_files[i]), "%s/%s after stepscope run", dir, report_files[i]);
    CHECK_EQ_I(temporaries(dir), 0);
}

static void test_report_makes_them_again(void) {
    const char *dir = run_dir();
    for (size_t i = 1; i < NFILES; i++)
        rm(dir, report_files[i]);
    char err[2048];
    char *argv[] = {STEPSCOPE, "report", (char *)dir, NULL};
    CHECK_MSG(exit_code_of(run_capture(argv, err, sizeof err)) == 0, "report: %s", err);
    for (size_t i = 1; i < NFILES; i++)
        CHECK_MSG(exists(dir, report_files[i]), "%s/%s after stepscope report", dir, report_files[i]);
    CHECK_EQ_I(temporaries(dir), 0);
}

static void test_one_format(void) {
    const char *dir = run_dir();
    char other[1024];
    snprintf(other, sizeof other, "%s", tmpdir_new("reportcmd-out"));
    char err[2048], path[1024];

    /* json to stdout: report.json itself, indented */
    snprintf(path, sizeof path, "%s/copy.json", other);
    char *json_argv[] = {STEPSCOPE, "report", (char *)dir, "--format", "json", "-o", "-", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(json_argv, path, err, sizeof err)), 0);
    json_error_t jerr;
    json_t *copy = json_load_file(path, 0, &jerr);
    CHECK_MSG(copy != NULL, "%s:%d: %s", path, jerr.line, jerr.text);
    json_t *orig = report_load(dir);
    CHECK(copy && orig && json_equal(copy, orig));
    json_decref(copy);
    json_decref(orig);

    /* -o a device (here through a link to /dev/null): written into, the
     * link and the device left as they are, never replaced by a file */
    char link[1100];
    snprintf(link, sizeof link, "%s/null-link", other);
    CHECK(symlink("/dev/null", link) == 0);
    char *to_device[] = {STEPSCOPE, "report", (char *)dir, "--format", "summary", "-o", link, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(to_device, err, sizeof err)), 0);
    struct stat lst, dst;
    CHECK(lstat(link, &lst) == 0 && S_ISLNK(lst.st_mode));
    CHECK(stat("/dev/null", &dst) == 0 && S_ISCHR(dst.st_mode));

    /* html to a file of our choosing; csv into another directory */
    snprintf(path, sizeof path, "%s/page.html", other);
    char *html_argv[] = {STEPSCOPE, "report", (char *)dir, "--format", "html", "-o", path, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(html_argv, err, sizeof err)), 0);
    CHECK(exists(other, "page.html"));
    char *csv_argv[] = {STEPSCOPE, "report", (char *)dir, "--format", "csv", "-o", other, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(csv_argv, err, sizeof err)), 0);
    CHECK(exists(other, "steps.csv") && exists(other, "timeline.csv"));

    /* the summary names the workload's zones */
    snprintf(path, sizeof path, "%s/summary.txt", other);
    char text[8192];
    summary_of(dir, path, text, sizeof text);
    CHECK_STR_HAS(text, "tagged_zone");
    CHECK_STR_HAS(text, "machine");
}

/* Without records/ the summary comes from report.json: the same zone
 * table (the step row included), counters and open zones as with the
 * records, after one note line saying the records are missing. */
static void test_summary_without_records(void) {
    char dir[1024], err[2048], path[1100];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("reportcmd-norec"));
    /* killed inside zone "b" of step 2 (steps 0 and 1 complete): the
     * summary lists the zones left open too */
    char *run_argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", WORKLOAD, "--steps", "4", "--tag", "tagged_zone",
                        "--die-at", "2", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(run_argv, err, sizeof err)), 128 + SIGKILL);

    char with[8192], without[8192];
    snprintf(path, sizeof path, "%s/with.txt", dir);
    summary_of(dir, path, with, sizeof with);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/records'", dir);
    CHECK_EQ_I(system(cmd), 0);
    snprintf(path, sizeof path, "%s/without.txt", dir);
    summary_of(dir, path, without, sizeof without);

    struct zone_row a[16], b[16];
    size_t na = zone_rows(with, a, 16), nb = zone_rows(without, b, 16);
    /* what the workload recorded: steps 0 and 1, "a" in steps 0 to 2,
     * "b" in steps 0 and 1, the tagged zone once */
    static const struct {
        const char *name, *kind;
        unsigned long long count;
    } want[] = {{"step", "step", 2}, {"a", "zone", 3}, {"b", "zone", 2}, {"tagged_zone", "zone", 1}};
    CHECK_EQ_U(na, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct zone_row *r = row_named(a, na, want[i].name);
        CHECK_MSG(r && !strcmp(r->kind, want[i].kind) && r->count == want[i].count, "with records: %s %s %llu in\n%s",
                  want[i].name, want[i].kind, want[i].count, with);
    }
    CHECK_EQ_U(nb, na);
    for (size_t i = 0; i < na && i < nb; i++)
        CHECK_MSG(!strcmp(a[i].name, b[i].name) && !strcmp(a[i].kind, b[i].kind) && a[i].count == b[i].count,
                  "row %zu: %s %s %llu with records, %s %s %llu without", i, a[i].name, a[i].kind, a[i].count,
                  b[i].name, b[i].kind, b[i].count);

    /* counters, values and open zones: the same lines either way */
    static const char *const prefixes[] = {"counter ", "value ", "open at the end:"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        char la[2048], lb[2048];
        lines_starting(with, prefixes[i], la, sizeof la);
        lines_starting(without, prefixes[i], lb, sizeof lb);
        CHECK_MSG(la[0] && !strcmp(la, lb), "\"%s\" lines: with records\n%swithout\n%s", prefixes[i], la, lb);
    }
    CHECK_STR_HAS(with, "open at the end:");
    CHECK_STR_HAS(with, ": step > b\n");
    CHECK_STR_HAS(with, "counter samples          total 16\n");

    /* one note, only without records, naming the missing directory */
    char notes[2048];
    lines_starting(with, "note:", notes, sizeof notes);
    CHECK_EQ_I(count_lines(notes), 0);
    lines_starting(without, "note:", notes, sizeof notes);
    CHECK_EQ_I(count_lines(notes), 1);
    CHECK_STR_HAS(notes, "/records");
    CHECK_STR_HAS(notes, "report.json");
    CHECK(!strstr(without, "nothing was recorded"));

    /* a record that is not one: the note names the file once (the
     * loader's error starts with it) and says why */
    snprintf(cmd, sizeof cmd, "mkdir '%s/records' && printf 'not a record, not at all' >'%s/records/77-0.sps'", dir,
             dir);
    CHECK_EQ_I(system(cmd), 0);
    char garbled[8192];
    snprintf(path, sizeof path, "%s/garbled.txt", dir);
    summary_of(dir, path, garbled, sizeof garbled);
    lines_starting(garbled, "note:", notes, sizeof notes);
    char want_note[1400];
    snprintf(want_note, sizeof want_note, "note: 1 record(s) skipped, first: %s/records/77-0.sps: offset 24: truncated", dir);
    CHECK_STR_HAS(notes, want_note);
    const char *first = strstr(notes, "77-0.sps");
    CHECK(first && !strstr(first + 1, "77-0.sps"));
}

static void test_bad_input(void) {
    char err[2048];
    /* no such directory */
    char *missing[] = {STEPSCOPE, "report", "/nonexistent/run", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(missing, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "/nonexistent/run");
    CHECK_EQ_I(count_lines(err), 1);

    /* malformed report.json: file, line and column */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("reportcmd-bad"));
    char path[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    const char *bad = "{\n  \"schema\": \"stepscope.report/1\",\n  \"zones\": [1, 2,,]\n}\n";
    write_file(path, bad, strlen(bad));
    char *malformed[] = {STEPSCOPE, "report", dir, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(malformed, err, sizeof err)), 1);
    char want[1100];
    snprintf(want, sizeof want, "%s:3:", path);
    CHECK_STR_HAS(err, want);
    CHECK_EQ_I(count_lines(err), 1);

    /* another schema */
    const char *other = "{\"schema\": \"something.else/7\"}\n";
    write_file(path, other, strlen(other));
    CHECK_EQ_I(exit_code_of(run_capture(malformed, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "something.else/7");
    CHECK(!exists(dir, "report.html") && !exists(dir, "trace.json"));

    /* a key twice: refused, never read as the rows of both */
    const char *twice = "{\"schema\": \"stepscope.report/1\", \"zones\": [], \"zones\": []}\n";
    write_file(path, twice, strlen(twice));
    CHECK_EQ_I(exit_code_of(run_capture(malformed, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "\"zones\" appears twice");
    CHECK_EQ_I(count_lines(err), 1);

    /* report.json a FIFO (or anything not a file): refused, never waited on */
    unlink(path);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK_EQ_I(exit_code_of(run_capture(malformed, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "not a regular file");
    unlink(path);

    /* an output that cannot be written: nothing half-written is left */
    const char *good = run_dir();
    char *unwritable[] = {STEPSCOPE, "report", (char *)good, "--format", "trace", "-o", "/nonexistent/dir/t.json", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(unwritable, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "/nonexistent/dir/t.json");
    CHECK_EQ_I(temporaries(good), 0);
}

/* dir's FILE read whole (malloc'd; NULL when it cannot be read). */
static char *whole(const char *dir, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return read_whole(path, NULL);
}

/* A copy of the shared run whose report.json has its started_mono_ns line
 * taken out, or moved to the end (move_to_end), and series.origin_mono_ns
 * taken out too (without_origin); NULL on failure. */
static const char *edited_copy(const char *name, int move_to_end, int without_origin) {
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s", tmpdir_new(name));
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cp -r '%s'/. '%s'/", run_dir(), dir);
    if (system(cmd) != 0)
        return NULL;
    char *json = whole(dir, "report.json");
    if (!json)
        return NULL;
    char *line = strstr(json, "\n  \"started_mono_ns\": ");
    char *end = line ? strchr(line + 1, '\n') : NULL;
    if (!end) {
        free(json);
        return NULL;
    }
    char anchor[64];
    snprintf(anchor, sizeof anchor, "%.*s", (int)(end - line - 2), line + 3); /* "started_mono_ns": N */
    memmove(line, end, strlen(end) + 1);
    if (without_origin) { /* an older report: no series origin either */
        char *o = strstr(json, "\n    \"origin_mono_ns\": ");
        char *oe = o ? strchr(o + 1, '\n') : NULL;
        if (oe)
            memmove(o, oe, strlen(oe) + 1);
    }
    if (move_to_end) { /* before the closing brace: "..." }\n -> ...,\n  anchor\n}\n */
        char *close = strrchr(json, '}');
        size_t keep = (size_t)(close - json);
        while (keep && json[keep - 1] == '\n')
            keep--;
        char *out = malloc(keep + strlen(anchor) + 16);
        snprintf(out, keep + strlen(anchor) + 16, "%.*s,\n  %s\n}\n", (int)keep, json, anchor);
        free(json);
        json = out;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/report.json", dir);
    write_file(path, json, strlen(json));
    free(json);
    return dir;
}

/* A report.json from before started_mono_ns (the monotonic anchor) renders
 * the same files: its times take the series' origin, the same instant; one
 * with the anchor after the times that count from it is refused, never
 * rendered with times hours off. */
static void test_time_anchor(void) {
    char err[2048];
    const char *dir = run_dir();
    char *again[] = {STEPSCOPE, "report", (char *)dir, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(again, err, sizeof err)), 0);
    /* without the anchor the series' origin stands in; without either
     * (a report.json of an earlier stepscope) the records' process start
     * against report.json's start_s does */
    for (int without_origin = 0; without_origin <= 1; without_origin++) {
        const char *old = edited_copy("reportcmd-noanchor", 0, without_origin);
        CHECK(old != NULL);
        if (!old)
            return;
        char *render_old[] = {STEPSCOPE, "report", (char *)old, NULL};
        CHECK_MSG(exit_code_of(run_capture(render_old, err, sizeof err)) == 0, "%s", err);
        static const char *const same[] = {"steps.csv", "timeline.csv", "trace.json", "report.html"};
        for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
            char *a = whole(dir, same[i]), *b = whole(old, same[i]);
            CHECK_MSG(a && b && !strcmp(a, b), "%s differs without started_mono_ns%s", same[i],
                      without_origin ? " and origin_mono_ns" : "");
            free(a);
            free(b);
        }
    }
    const char *late = edited_copy("reportcmd-lateanchor", 1, 0);
    CHECK(late != NULL);
    if (!late)
        return;
    char *render_late[] = {STEPSCOPE, "report", (char *)late, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(render_late, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "started_mono_ns comes after the times that count from it");
    CHECK_EQ_I(count_lines(err), 1);
}

/* A copy of the shared run (records too) whose report.json has the value
 * of the first "KEY": after the first occurrence of `after` replaced by
 * value; NULL on failure. */
static const char *value_edited_copy(const char *after, const char *key, const char *value) {
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("reportcmd-range"));
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cp -r '%s'/. '%s'/", run_dir(), dir);
    if (system(cmd) != 0)
        return NULL;
    char *json = whole(dir, "report.json"), quoted[128];
    snprintf(quoted, sizeof quoted, "\"%s\": ", key);
    char *from = json ? strstr(json, after) : NULL;
    char *at = from ? strstr(from, quoted) : NULL;
    if (!at) {
        free(json);
        return NULL;
    }
    at += strlen(quoted);
    size_t old_len = strcspn(at, ",\n}]");
    size_t head = (size_t)(at - json), tail = strlen(at + old_len);
    char *out = malloc(head + strlen(value) + tail + 1);
    snprintf(out, head + strlen(value) + tail + 1, "%.*s%s%s", (int)head, json, value, at + old_len);
    char path[1200];
    snprintf(path, sizeof path, "%s/report.json", dir);
    write_file(path, out, strlen(out));
    free(json);
    free(out);
    return dir;
}

/* Numbers out of range anywhere in report.json: a count past what its
 * users count in is refused with one line naming the key and the value
 * (by stepscope report and by stepscope compare, which reads the rows
 * alone); a time in seconds past 9e9 s is read as the run's start, as
 * docs/report-format.md says.  Under -fsanitize=undefined a started_mono_ns
 * of 2^63 overflowed trace.json's times (trace_gather.c rel_ns). */
static void test_out_of_range_numbers(void) {
    static const struct {
        const char *after, *key, *value, *says; /* says: NULL where it is read (clamped) */
    } cases[] = {
        {"{", "started_mono_ns", "9223372036854775808",
         "\"started_mono_ns\": 9223372036854775808 is out of range: a count from 0 to 4611686018427387904"},
        {"{", "started_mono_ns", "18446744073709551615", "\"started_mono_ns\": 18446744073709551615 is out of range"},
        {"{", "started_mono_ns", "18446744073709551616", "\"started_mono_ns\": 18446744073709551616 is out of range"},
        {"{", "started_mono_ns", "-1",
         "\"started_mono_ns\": -1 is out of range: a count from 0 to 18446744073709551615"},
        {"{", "started_mono_ns", "1e300", "\"started_mono_ns\""},
        {"\"threads\"", "tid", "2147483648",
         "\"threads[].tid\": 2147483648 is out of range: an integer from -2147483648 to 2147483647"},
        {"\"threads\"", "tid", "-9223372036854775809", "\"threads[].tid\": -9223372036854775809 is out of range"},
        {"\"zones\"", "count", "18446744073709551616", "\"zones[].count\": 18446744073709551616 is out of range"},
        {"\"zones\"", "count", "-1", "\"zones[].count\": -1 is out of range"},
        {"\"steps\"", "count", "-1", "\"steps.count\": -1 is out of range"},
        {"\"steps\"", "rows_kept", "1e300", "\"steps.rows_kept\""},
        {"\"exit\"", "code", "4294967296", "\"exit.code\": 4294967296 is out of range"},
        {"\"rows\"", "start_s", "1e300", NULL},
        {"\"rows\"", "start_s", "-1e300", NULL},
        {"\"rows\"", "duration_s", "1e300", NULL},
        {"\"processes\"", "start_s", "1e300", NULL},
        {"{", "started_unix_s", "-1e300", NULL},
        {"{", "started_mono_ns", "4611686018427387904", NULL}, /* the latest start read */
        /* a thread of no record: its record's zone tables were leaked (LeakSanitizer) */
        {"\"threads\"", "tid", "-1", NULL},
    };
    char err[4096];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *dir = value_edited_copy(cases[i].after, cases[i].key, cases[i].value);
        CHECK_MSG(dir != NULL, "no \"%s\" after %s in report.json", cases[i].key, cases[i].after);
        if (!dir)
            continue;
        char *report[] = {STEPSCOPE, "report", (char *)dir, NULL};
        char *compare[] = {STEPSCOPE, "compare", (char *)run_dir(), (char *)dir, NULL};
        char *const *argvs[] = {report, compare};
        for (int c = 0; c < 2; c++) {
            int rc = exit_code_of(run_capture((char **)argvs[c], err, sizeof err));
            CHECK_MSG(!strstr(err, "runtime error") && !strstr(err, "Sanitizer"), "%s %s=%s: %s", argvs[c][1],
                      cases[i].key, cases[i].value, err);
            if (cases[i].says) {
                /* compare's exit 1 is a slower verdict: a side it cannot read is 2 */
                CHECK_MSG(rc == (c ? 2 : 1) && strstr(err, cases[i].says) && count_lines(err) == 1,
                          "%s %s=%s: rc %d: %s", argvs[c][1], cases[i].key, cases[i].value, rc, err);
            } else {
                /* compare reads both sides: its verdict on three steps is no matter here */
                CHECK_MSG(c ? rc != 2 : rc == 0, "%s %s=%s: rc %d: %s", argvs[c][1], cases[i].key, cases[i].value, rc,
                          err);
            }
        }
    }
}

/* A run made with --trace-max-mb keeps that budget in report.json, and
 * stepscope report makes trace.json again with it (unless told another). */
static void test_trace_budget_kept(void) {
    char dir[1024], err[2048];
    snprintf(dir, sizeof dir, "%s", tmpdir_new("reportcmd-budget"));
    char *run[] = {STEPSCOPE, "run", "-q", "--trace-max-mb", "3", "-o", dir, "--", WORKLOAD, "--steps", "3", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(run, err, sizeof err)), 0);
    char *json = whole(dir, "report.json");
    CHECK_STR_HAS(json, "\"trace_max_bytes\": 3145728");
    free(json);
    rm(dir, "trace.json");
    char *again[] = {STEPSCOPE, "report", dir, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(again, err, sizeof err)), 0);
    char *trace = whole(dir, "trace.json");
    CHECK_STR_HAS(trace, "\"budget_bytes\":3145728");
    free(trace);
    char *other[] = {STEPSCOPE, "report", dir, "--trace-max-mb", "2", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(other, err, sizeof err)), 0);
    trace = whole(dir, "trace.json");
    CHECK_STR_HAS(trace, "\"budget_bytes\":2097152");
    free(trace);
}

static void test_usage_errors(void) {
    char err[2048];
    char *no_dir[] = {STEPSCOPE, "report", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(no_dir, err, sizeof err)), 2);
    char *bad_format[] = {STEPSCOPE, "report", "x", "--format", "pdf", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(bad_format, err, sizeof err)), 2);
    CHECK_STR_HAS(err, "pdf");
    char *out_alone[] = {STEPSCOPE, "report", "x", "-o", "y", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(out_alone, err, sizeof err)), 2);
    char *csv_stdout[] = {STEPSCOPE, "report", (char *)run_dir(), "--format", "csv", "-o", "-", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(csv_stdout, err, sizeof err)), 2);
    CHECK_STR_HAS(err, "-o takes a directory, not -");
    char *budget[] = {STEPSCOPE, "run", "--trace-max-mb", "0", "--", WORKLOAD, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(budget, err, sizeof err)), 2);
}

int main(void) {
    RUN_TEST(test_run_writes_every_file);
    RUN_TEST(test_report_makes_them_again);
    RUN_TEST(test_one_format);
    RUN_TEST(test_summary_without_records);
    RUN_TEST(test_bad_input);
    RUN_TEST(test_time_anchor);
    RUN_TEST(test_out_of_range_numbers);
    RUN_TEST(test_trace_budget_kept);
    RUN_TEST(test_usage_errors);
    return check_report();
}
