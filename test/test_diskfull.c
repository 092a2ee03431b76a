/*
 * test_diskfull.c - a run directory on a full filesystem: the workload is
 * never killed (a store into an unbacked page of the sparse record would
 * raise SIGBUS), what could not be recorded is counted, and the report
 * says why; a report that did not fit is made by `stepscope report DIR`
 * once there is room.  Needs to mount a small tmpfs (root); skipped otherwise.
 * Each case gets a fresh tmpfs: an earlier run's files stay on disk until
 * the new report is written (set aside in DIR/.previous), and would take
 * the room the case is about.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "check.h"
#include "support.h"

int main(void) {
    char mnt[600];
    snprintf(mnt, sizeof mnt, "%s", tmpdir_new("diskfull"));
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=3m") != 0) {
        printf("skipped: cannot mount a 3 MiB tmpfs (needs root): %s\n", strerror(errno));
        return 77;
    }
    char out[700];
    snprintf(out, sizeof out, "%s/out", mnt);
    /* a 32 MiB zone ring cannot fit: the thread is refused, not killed */
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", out, "--ring-events", "1000000", "--",
                    SPS_BIN_DIR "/test_workload", "--steps", "5000", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    json_t *r = report_load(out);
    CHECK(r != NULL);
    if (r) {
        json_t *proc = json_array_get(json_object_get(r, "processes"), 0);
        CHECK_EQ_I(json_num(proc, "threads_refused"), 1);
        CHECK_STR_HAS(json_string_value(json_object_get(proc, "recording_problem")), "No space left on device");
        json_decref(r);
    }
    /* with rings that fit, recording goes on as usual */
    umount(mnt);
    CHECK_EQ_I(mount("tmpfs", mnt, "tmpfs", 0, "size=3m"), 0);
    char *argv2[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", out, "--ring-events", "1024", "--",
                     SPS_BIN_DIR "/test_workload", "--steps", "200", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv2, NULL, 0)), 0);
    r = report_load(out);
    if (r) {
        CHECK_EQ_I(json_num(report_find(r, "zones", "step"), "count"), 200);
        json_decref(r);
    }
    /* a report too big for what is left: one line, exit 1 (the workload
     * succeeded), no half-written file, and the earlier run's report kept
     * in .previous, as a second line says (that run recorded nothing, so
     * its files leave the room as it was) */
    /* (--no-stream: the live stream would say in a line of its own that
     * steps.jsonl could not be written whole; test_stream checks that) */
    umount(mnt);
    CHECK_EQ_I(mount("tmpfs", mnt, "tmpfs", 0, "size=3m"), 0);
    char *earlier[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "--no-stream", "--no-sample", "-o", out, "--", "true", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(earlier, NULL, 0)), 0);
    char *argv3[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "--no-stream", "-o", out, "--ring-events", "1024", "--",
                     SPS_BIN_DIR "/test_workload", "--steps", "5000", NULL};
    char err[1024];
    CHECK_EQ_I(exit_code_of(run_capture(argv3, err, sizeof err)), 1);
    CHECK_EQ_I(count_lines(err), 2);
    CHECK_STR_HAS(err, "stepscope: run: report: ");
    CHECK_STR_HAS(err, "No space left on device");
    char kept[800];
    snprintf(kept, sizeof kept, "stepscope: run: %s/.previous: the earlier run's outputs are kept here", out);
    CHECK_STR_HAS(err, kept);
    snprintf(kept, sizeof kept, "%s/.previous/report.json", out);
    CHECK(access(kept, F_OK) == 0);
    DIR *d = opendir(out);
    int leftovers = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        leftovers += strstr(e->d_name, "report.json") != NULL; /* the temporary is .report.json.tmp-* */
    if (d)
        closedir(d);
    CHECK_EQ_I(leftovers, 0); /* the earlier report was set aside at start */
    /* the line says how to get the report once there is room, and once
     * there is, `stepscope report DIR` makes it from the records */
    char hint[800];
    snprintf(hint, sizeof hint, "the records are kept: once that is fixed, `stepscope report %s` makes the report from them", out);
    CHECK_STR_HAS(err, hint);
    CHECK(mount("tmpfs", mnt, NULL, MS_REMOUNT, "size=64m") == 0);
    char *argv4[] = {SPS_BIN_DIR "/stepscope", "report", out, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv4, err, sizeof err)), 0);
    CHECK_STR_HAS(err, "rebuilt from the records alone (report.json was missing)");
    r = report_load(out);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_I(json_num(report_find(r, "zones", "step"), "count"), 5000);
        CHECK_EQ_I(json_num(r, "steps.count"), 5000);
        json_decref(r);
    }
    umount(mnt);
    return check_report();
}
