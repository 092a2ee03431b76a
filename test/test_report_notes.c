/*
 * test_report_notes.c - what a report lacks is said wherever the report
 * goes: a record the run had to skip (damaged, truncated) is one line on
 * stderr of `stepscope run -q` and of `stepscope report DIR` in every
 * format, a line of the summary, a fact of report.html and
 * report.json's records_skipped, all with how many of how many and the
 * first one's reason; a process the workload started that is still
 * running when the report is built is named as such, everywhere too.
 */
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

/* Three instrumented processes, then the first record (by name) cut to
 * 4096 bytes before the run reads them. */
static const char three_and_cut[] =
    "for i in 1 2 3; do \"$0\" --steps 3 || exit 1; done; "
    "f=$(ls \"$STEPSCOPE_RUN_DIR\"/records/*.sps | head -n 1); truncate -s 4096 \"$f\"";

/* Lines of text holding needle. */
static int lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* `stepscope run [-q] -o dir -- sh -c three_and_cut` into err; the
 * expected line's text ("1 of 3 records skipped: PATH: offset 4096:
 * truncated") into want. */
static void run_cut(const char *dir, int quiet, char *err, size_t errlen, char *want, size_t wantlen) {
    char *argv[] = {STEPSCOPE, "run", "-o", (char *)dir, quiet ? "-q" : "--no-live", "--", "sh", "-c",
                    (char *)three_and_cut, WORKLOAD, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, errlen)), 0);
    json_t *rep = report_load(dir);
    json_t *skipped = rep ? json_object_get(rep, "records_skipped") : NULL;
    CHECK_EQ_I(json_array_size(skipped), 1);
    const char *path = json_string_value(json_object_get(json_array_get(skipped, 0), "record"));
    CHECK_MSG(path && strstr(path, "/records/"), "records_skipped[0].record: %s", path ? path : "(none)");
    CHECK_EQ_I(json_array_size(json_object_get(rep, "processes")), 2);
    snprintf(want, wantlen, "1 of 3 records skipped: %s: offset 4096: truncated", path ? path : "?");
    json_decref(rep);
}

static void test_run(void) {
    char dir[1024], err[16384], want[1400], line[1500];
    /* -q: no summary, so the line */
    snprintf(dir, sizeof dir, "%s/quiet", tmpdir_new("notes-run"));
    run_cut(dir, 1, err, sizeof err, want, sizeof want);
    snprintf(line, sizeof line, "stepscope: run: warning: %s", want);
    CHECK_MSG(lines_with(err, line) == 1, "run -q's stderr:\n%s\nwithout\n%s", err, line);
    CHECK_EQ_I(count_lines(err), 1);
    /* without -q the summary says it, once */
    snprintf(dir, sizeof dir, "%s/loud", tmpdir_new("notes-run"));
    run_cut(dir, 0, err, sizeof err, want, sizeof want);
    snprintf(line, sizeof line, "\nwarning: %s", want);
    CHECK_MSG(lines_with(err, line) == 1, "run's stderr:\n%s\nwithout\n%s", err, line);
    CHECK_EQ_I(lines_with(err, "records skipped"), 1);
    /* report.html: a fact */
    char html[1100];
    snprintf(html, sizeof html, "%s/report.html", dir);
    char *page = read_whole(html, NULL);
    CHECK(page != NULL);
    if (page)
        CHECK_STR_HAS(page, "<dt>Records</dt><dd>1 of 3 records skipped<small>");
    free(page);
}

/* `stepscope report DIR ARGS...`: its exit status 0, the line once on
 * stderr; stdout into out_path. */
static void report_says(const char *dir, const char *want, char *const *args, const char *out_path) {
    char *argv[16] = {STEPSCOPE, "report", (char *)dir};
    int n = 3;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char err[8192], line[1500];
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out_path, err, sizeof err)), 0);
    snprintf(line, sizeof line, "stepscope: report: warning: %s", want);
    CHECK_MSG(lines_with(err, line) == 1, "report %s %s: stderr\n%s\nwithout\n%s", dir, args[0] ? args[0] : "",
              err, line);
}

static void test_report(void) {
    char dir[1024], err[16384], want[1400], out[1100], sub[1100];
    const char *base = tmpdir_new("notes-report");
    snprintf(dir, sizeof dir, "%s/run", base);
    run_cut(dir, 1, err, sizeof err, want, sizeof want);
    snprintf(out, sizeof out, "%s/stdout", base);
    snprintf(sub, sizeof sub, "%s/elsewhere", base);
    mkdir(sub, 0777);
    char f_html[1200], f_trace[1200], f_json[1200], f_summary[1200], f_tb[1200];
    snprintf(f_html, sizeof f_html, "%s/r.html", sub);
    snprintf(f_trace, sizeof f_trace, "%s/t.json", sub);
    snprintf(f_json, sizeof f_json, "%s/r.json", sub);
    snprintf(f_summary, sizeof f_summary, "%s/summary.txt", sub);
    snprintf(f_tb, sizeof f_tb, "%s/tb", sub);
    char *every[] = {NULL};
    char *html[] = {"--format", "html", "-o", f_html, NULL};
    char *csv[] = {"--format", "csv", "-o", sub, NULL};
    char *trace[] = {"--format", "trace", "-o", f_trace, NULL};
    char *json[] = {"--format", "json", "-o", f_json, NULL};
    char *summary[] = {"--format", "summary", NULL};
    char *summary_file[] = {"--format", "summary", "-o", f_summary, NULL};
    char *tb[] = {"--format", "tensorboard", "-o", f_tb, NULL};
    char *const *all[] = {every, html, csv, trace, json, summary_file, tb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        report_says(dir, want, all[i], out);
    /* the summary on stdout says it too */
    report_says(dir, want, summary, out);
    char *text = read_whole(out, NULL);
    char line[1500];
    snprintf(line, sizeof line, "\nwarning: %s", want);
    CHECK_MSG(text && lines_with(text, line) == 1, "the summary:\n%s\nwithout\n%s", text ? text : "", line);
    free(text);
    text = read_whole(f_summary, NULL);
    CHECK(text && lines_with(text, line) == 1);
    free(text);
    /* the files made again carry it */
    text = read_whole(f_html, NULL);
    CHECK(text && strstr(text, "<dt>Records</dt><dd>1 of 3 records skipped<small>"));
    free(text);
    json_error_t jerr;
    json_t *again = json_load_file(f_json, 0, &jerr);
    CHECK(again && json_array_size(json_object_get(again, "records_skipped")) == 1);
    json_decref(again);
}

/* A record damaged after the run (report.json skipped none): `report DIR`
 * reads it again and says so, with report.json's other records counted. */
static void test_damaged_later(void) {
    char dir[1024], err[16384], cmd[2400];
    snprintf(dir, sizeof dir, "%s/run", tmpdir_new("notes-later"));
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", "sh", "-c",
                    "for i in 1 2; do \"$0\" --steps 3 || exit 1; done", WORKLOAD, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    CHECK_EQ_I(count_lines(err), 0);
    snprintf(cmd, sizeof cmd, "f=$(ls '%s'/records/*.sps | tail -n 1); truncate -s 100 \"$f\"", dir);
    CHECK_EQ_I(system(cmd), 0);
    char *report[] = {STEPSCOPE, "report", dir, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(report, err, sizeof err)), 0);
    CHECK_STR_HAS(err, "stepscope: report: warning: 1 of 2 records skipped: ");
    CHECK_STR_HAS(err, "/records/");
}

/* The workload (sh) starts a recording child and exits once the child has
 * made its steps (it writes a byte to the pipe head reads); the child then
 * waits for a SIGTERM only this test sends, after the report is made: it
 * is running while `stepscope run` builds the report, whatever the load. */
static const char outlive[] =
    "( \"$0\" --steps 3 --wait-term 3 3>&1 >/dev/null 2>&1 & ) | head -c 1 >/dev/null";

static void test_outlived(void) {
    char dir[1024], err[16384], line[2048], out[1100];
    const char *base = tmpdir_new("notes-outlive");
    snprintf(dir, sizeof dir, "%s/run", base);
    snprintf(out, sizeof out, "%s/summary.txt", base);
    char *argv[] = {STEPSCOPE, "run", "-q", "-o", dir, "--", "sh", "-c", (char *)outlive, WORKLOAD, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    json_t *rep = report_load(dir);
    json_t *procs = rep ? json_object_get(rep, "processes") : NULL;
    CHECK_EQ_I(json_array_size(procs), 1);
    json_t *p = json_array_get(procs, 0);
    int pid = (int)json_integer_value(json_object_get(p, "pid"));
    CHECK(pid > 0);
    CHECK(json_is_true(json_object_get(p, "running_at_report")));
    const char *ended = json_string_value(json_object_get(p, "ended"));
    CHECK_MSG(ended && !strcmp(ended, "still running when the report was taken"), "ended: %s", ended ? ended : "");
    json_decref(rep);
    /* -q: one line, naming it, its command and what to do */
    snprintf(line, sizeof line,
             "stepscope: run: warning: the report was taken while pid %d (%s --steps 3 --wait-term 3) was still "
             "running: its numbers stop at that moment; run `stepscope report --from-records %s` once it has exited "
             "for the whole run\n",
             pid, WORKLOAD, dir);
    CHECK_MSG(!strcmp(err, line), "run -q's stderr:\n%s\nnot\n%s", err, line);
    /* report DIR says it again, and so do its summary and report.html */
    char *summary[] = {STEPSCOPE, "report", dir, "--format", "summary", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(summary, out, err, sizeof err)), 0);
    snprintf(line, sizeof line, "stepscope: report: warning: the report was taken while pid %d (", pid);
    CHECK_STR_HAS(err, line);
    char *text = read_whole(out, NULL);
    snprintf(line, sizeof line,
             "\nwarning: the report was taken while pid %d (%s --steps 3 --wait-term 3) was still running: its numbers "
             "stop at that moment; run `stepscope report --from-records` on this run directory once it has exited "
             "for the whole run\n",
             pid, WORKLOAD);
    CHECK_MSG(text && strstr(text, line), "the summary:\n%s\nwithout\n%s", text ? text : "", line);
    free(text);
    snprintf(out, sizeof out, "%s/report.html", dir);
    text = read_whole(out, NULL);
    snprintf(line, sizeof line, "<dt>Report taken</dt><dd>early: pid %d still running<small>the report was taken", pid);
    CHECK_MSG(text && strstr(text, line), "report.html without %s", line);
    free(text);
    if (pid > 0)
        kill(pid, SIGTERM);
    /* what the line says to run, once the process has exited, takes in
     * the rest of it: a plain `report DIR` reads report.json again, whose
     * numbers stop at the report, and still says it was running */
    glob_t g;
    snprintf(line, sizeof line, "%s/records/*.sps", dir);
    CHECK_EQ_I(glob(line, 0, NULL, &g), 0);
    CHECK_EQ_I(g.gl_pathc, 1);
    for (int i = 0; pid > 0 && g.gl_pathc == 1 && i < 3000 && sps__platform_maps_file(pid, g.gl_pathv[0]) == 1; i++)
        usleep(10000); /* exits at once on SIGTERM: a cap against a hang, not a timing */
    CHECK_EQ_I(g.gl_pathc == 1 ? sps__platform_maps_file(pid, g.gl_pathv[0]) : -1, 0);
    globfree(&g);
    char *plain[] = {STEPSCOPE, "report", dir, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(plain, err, sizeof err)), 0);
    CHECK_STR_HAS(err, "was still running");
    char *rebuild[] = {STEPSCOPE, "report", "--from-records", dir, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(rebuild, err, sizeof err)), 0);
    CHECK_MSG(!strstr(err, "still running"), "report --from-records after the exit:\n%s", err);
    rep = report_load(dir);
    procs = rep ? json_object_get(rep, "processes") : NULL;
    CHECK_EQ_I(json_array_size(procs), 1);
    p = json_array_get(procs, 0);
    CHECK(json_is_false(json_object_get(p, "running_at_report")));
    ended = json_string_value(json_object_get(p, "ended"));
    CHECK_MSG(ended && !strcmp(ended, "exit"), "ended after the exit: %s", ended ? ended : "");
    json_decref(rep);
}

/* What tells the process that wrote a record from a recycled pid: it maps
 * the record; by another path to the same file too; not once unmapped. */
static void test_maps_file(void) {
    const char *dir = tmpdir_new("notes-maps");
    char path[600], other[600], link_path[600];
    snprintf(path, sizeof path, "%s/1-0.sps", dir);
    snprintf(other, sizeof other, "%s/2-0.sps", dir);
    snprintf(link_path, sizeof link_path, "%s/link.sps", dir);
    write_file(path, "0123456789abcdef", 16);
    write_file(other, "0123456789abcdef", 16);
    CHECK(symlink(path, link_path) == 0);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    void *m = fd >= 0 ? mmap(NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    CHECK(m != MAP_FAILED);
    if (fd >= 0)
        close(fd); /* a daemon closes every descriptor: the mapping stays */
    CHECK_EQ_I(sps__platform_maps_file(getpid(), path), 1);
    CHECK_EQ_I(sps__platform_maps_file(getpid(), link_path), 1);
    CHECK_EQ_I(sps__platform_maps_file(getpid(), other), 0);
    CHECK_EQ_I(sps__platform_maps_file(getppid(), path), 0);
    if (m != MAP_FAILED)
        munmap(m, 16);
    CHECK_EQ_I(sps__platform_maps_file(getpid(), path), 0);
    CHECK_EQ_I(sps__platform_maps_file(getpid(), "/nonexistent/3-0.sps"), 0);
}

int main(void) {
    RUN_TEST(test_run);
    RUN_TEST(test_report);
    RUN_TEST(test_damaged_later);
    RUN_TEST(test_outlived);
    RUN_TEST(test_maps_file);
    return check_report();
}
