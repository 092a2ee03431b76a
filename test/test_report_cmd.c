/* test_report_cmd.c - `stepscope run` leaves every report file in its
 * directory, and `stepscope report DIR` makes them again, one at a time or
 * all, refusing bad input with one line and an exit status of 1 or 2. */
#include <errno.h>
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
    char *sum_argv[] = {STEPSCOPE, "report", (char *)dir, "--format", "summary", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(sum_argv, path, err, sizeof err)), 0);
    FILE *f = fopen(path, "r");
    char text[8192] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    CHECK_STR_HAS(text, "tagged_zone");
    CHECK_STR_HAS(text, "machine");
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

    /* an output that cannot be written: nothing half-written is left */
    const char *good = run_dir();
    char *unwritable[] = {STEPSCOPE, "report", (char *)good, "--format", "trace", "-o", "/nonexistent/dir/t.json", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(unwritable, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "/nonexistent/dir/t.json");
    CHECK_EQ_I(temporaries(good), 0);
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
    CHECK_EQ_I(exit_code_of(run_capture(csv_stdout, err, sizeof err)), 1);
    char *budget[] = {STEPSCOPE, "run", "--trace-max-mb", "0", "--", WORKLOAD, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(budget, err, sizeof err)), 2);
}

int main(void) {
    RUN_TEST(test_run_writes_every_file);
    RUN_TEST(test_report_makes_them_again);
    RUN_TEST(test_one_format);
    RUN_TEST(test_bad_input);
    RUN_TEST(test_usage_errors);
    return check_report();
}
