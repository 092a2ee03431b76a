/*
 * cmd_report.c - `stepscope report DIR`: make the files people look at
 * (report.html, steps.csv, timeline.csv, trace.json), the terminal summary
 * or report.json itself again from a run directory.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "report_recover.h"
#include "run_dir.h"
#include "run_lock.h"
#include "render/render.h"
#include "render/analysis_views.h"
#include "render/export_dir.h"
#include "render/exporters.h"
#include "render/output_file.h"
#include "render/tensorboard.h"
#include "report/report.h"
#include "sampler/sampler.h"
#include "stepscope.h"

static const char report_usage[] =
    "usage: stepscope report DIR [--format FORMAT] [-o OUT] [--from-records]\n"
    "                            [--trace-max-mb N] [--allow-foreign-dir]\n"
    "\n"
    "Make a run directory's files again from its report.json and records:\n"
    "with no --format, report.html, steps.csv, timeline.csv and trace.json\n"
    "in DIR (what `stepscope run` writes). DIR may also be a report file\n"
    "itself (a standalone run's report-PID.json): then --format, and -o\n"
    "for anything but the summary, say what to make and where.\n"
    "\n"
    "When DIR/report.json is missing (stepscope run was killed, or could not\n"
    "write it on a full disk) or is another run's (it lists none of the\n"
    "records in DIR/records, or one of them with another header), the\n"
    "report is rebuilt from DIR/records alone, report.json included, and\n"
    "says so: the exit status, the times, peak RSS, the machine series and\n"
    "stepscope run's options are then not known. Damaged records are\n"
    "skipped and named.\n"
    "\n"
    "options:\n"
    "      --format FORMAT     only one: html, csv (steps.csv and timeline.csv),\n"
    "                          trace, json (report.json, checked and indented),\n"
    "                          summary (the terminal summary) or tensorboard\n"
    "                          (TensorBoard event files; needs -o DIR)\n"
    "  -o, --output OUT        where: a file, - for standard output, or for csv\n"
    "                          and tensorboard a directory (default: the usual\n"
    "                          name in DIR)\n"
    "      --trace-max-mb N    size budget of trace.json in MiB (default: the\n"
    "                          run's own --trace-max-mb, else 100)\n"
    "      --from-records      rebuild from DIR/records even though report.json\n"
    "                          is there (e.g. to take in a record written after\n"
    "                          it, or the rest of a process still running\n"
    "                          when the run's report was built); report.json\n"
    "                          is replaced\n"
    "      --allow-foreign-dir\n"
    "                          write into the directory although another user\n"
    "                          owns it or a directory above it (refused by\n"
    "                          default, as by stepscope run: that user could\n"
    "                          swap it for a link while the files are written)\n"
    "  -h, --help              this help\n"
    "\n"
    "Files are replaced whole: a failure leaves the earlier file as it was.\n"
    "\n"
    "exit status: 0; 1 when DIR cannot be read (neither report.json nor\n"
    "records, no readable record, or a malformed report.json: the message\n"
    "names the file, line and column), a `stepscope run` still holds DIR or\n"
    "OUT's directory, the directory written into is another user's (without\n"
    "--allow-foreign-dir), or a file cannot be written; 2 for a usage error.\n";

void sps_cli_tensorboard_note(const char *cmd, const char *dir, size_t others) {
    if (others)
        fprintf(stderr,
                "stepscope: %s: note: %s: %zu other event file%s beside these: TensorBoard shows a directory's "
                "files as one run (give each run a directory of its own)\n",
                cmd, dir, others, others == 1 ? "" : "s");
}

static int print_summary(const struct sps_report *rep, const char *out_path, char *err, size_t errlen) {
    FILE *f = stdout;
    struct sps_out o = {0};
    if (out_path && strcmp(out_path, "-") != 0) {
        int rc = sps__out_open(&o, out_path, err, errlen);
        if (rc != 0)
            return rc;
        f = o.f;
    }
    /* without records the table comes from report.json, which holds what
     * the records said when the run ended */
    if (!rep->have_records && !rep->info.standalone_reason) /* a standalone report has none by design */
        fprintf(f, "note: %s; this summary is made from report.json\n",
                rep->records_note[0] ? rep->records_note : "no records");
    sps__summary_print(f, rep, 0);
    sps__analysis_print(f, &rep->analysis);
    if (o.f)
        return sps__out_commit(&o, err, errlen);
    if (fflush(stdout) != 0) {
        snprintf(err, errlen, "standard output: %s", strerror(errno));
        return SPS_EIO;
    }
    return 0;
}

/* A `stepscope run` that holds dir (the run read, NULL: a report file) or
 * where out goes (out itself when a directory, else its parent): its
 * report.json is not written yet and its records are still growing, and
 * what report writes there the run would set aside or replace.  Returns
 * -1 when none does, else 1 after one line naming the holder. */
static int refuse_live_run(const char *dir, const char *out) {
    char who[1200], parent[4096];
    if (dir && sps_run_lock_held(dir, who, sizeof who)) {
        fprintf(stderr, "stepscope: report: %s: in use by %s; run this again when it has ended\n", dir, who);
        return 1;
    }
    if (!out || !strcmp(out, "-"))
        return -1;
    const char *slash = strrchr(out, '/'); /* the directory out is in */
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else
        snprintf(parent, sizeof parent, "%.*s", slash == out ? 1 : (int)(slash - out), out);
    if (sps_run_lock_held(out, who, sizeof who) || sps_run_lock_held(parent, who, sizeof who)) {
        fprintf(stderr, "stepscope: report: %s: in use by %s; choose another -o\n", out, who);
        return 1;
    }
    return -1;
}

/* The directory report writes into (DIR, OUT's, or OUT itself for csv
 * and tensorboard), held to `stepscope run`'s rule for its directories
 * (run_dir.h): not another user's, nor inside a directory another user
 * can change, unless allow_foreign.  Nothing written (the summary on
 * standard output): nothing to check.  Returns -1 to go on, else 1 after
 * one line. */
static int refuse_foreign_target(const char *dir, int format, const char *out, int allow_foreign) {
    if (!out) {
        if (format == SPS_EXPORT_SUMMARY)
            return -1;
        return sps_dir_foreign_check("report", dir, dir, allow_foreign);
    }
    if (!strcmp(out, "-"))
        return -1;
    if (format == SPS_EXPORT_CSV || format == SPS_EXPORT_TENSORBOARD)
        return sps_dir_foreign_check("report", out, out, allow_foreign);
    return sps_file_dir_foreign_check("report", "-o", out, allow_foreign);
}

int sps_cmd_report(int argc, char **argv) {
    const char *dir = NULL, *out = NULL;
    int format = -1;
    int from_records = 0, allow_foreign = 0;
    unsigned long trace_mb = 0; /* 0: the budget the run was made with, else the default */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "--format") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
                          !strcmp(a, "--trace-max-mb");
        if (takes_value && i + 1 >= argc)
            return sps_cli_usage_error("report", "option '%s' needs a value", a);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(report_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--format")) {
            format = sps__export_format_parse(argv[++i]);
            if (format < 0)
                return sps_cli_usage_error("report", "--format: '%s' is not html, csv, trace, json, summary or tensorboard",
                                           argv[i]);
        } else if (!strcmp(a, "--from-records")) {
            from_records = 1;
        } else if (!strcmp(a, "--allow-foreign-dir")) {
            allow_foreign = 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            out = argv[++i];
        } else if (!strcmp(a, "--trace-max-mb")) {
            char *end;
            errno = 0;
            trace_mb = strtoul(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || argv[i][0] == '-' || trace_mb < 1 || trace_mb > (1ul << 20))
                return sps_cli_usage_error("report", "--trace-max-mb: '%s' is not a number from 1 to 1048576",
                                           argv[i]);
        } else if (a[0] == '-' && a[1] != '\0') {
            return sps_cli_usage_error("report", "unknown option '%s'", a);
        } else if (!dir) {
            dir = a;
        } else {
            return sps_cli_usage_error("report", "one run directory only ('%s' and '%s')", dir, a);
        }
    }
    if (!dir)
        return sps_cli_usage_error("report", "which run directory? (stepscope report DIR)");
    if (out && format < 0)
        return sps_cli_usage_error("report", "-o needs --format (without it every file goes into DIR)");
    if (format == SPS_EXPORT_TENSORBOARD && (!out || !strcmp(out, "-")))
        return sps_cli_usage_error("report", "--format tensorboard writes event files into a directory: name it "
                                             "with -o DIR (then tensorboard --logdir DIR)");
    if (out && format == SPS_EXPORT_CSV && !strcmp(out, "-"))
        return sps_cli_usage_error("report", "csv makes two files (steps.csv, timeline.csv): -o takes a directory, not -");

    /* a report file itself (a standalone run's report-<pid>.json): read
     * alone, rendered where -o says */
    struct stat st;
    int is_file = stat(dir, &st) == 0 && S_ISREG(st.st_mode);
    if (is_file && (format < 0 || (!out && format != SPS_EXPORT_SUMMARY)))
        return sps_cli_usage_error("report", "%s is a file: name what to make with --format and where with -o", dir);
    if (refuse_live_run(is_file ? NULL : dir, out) >= 0)
        return 1;
    if (refuse_foreign_target(dir, format, out, allow_foreign) >= 0)
        return 1;
    struct sps_report rep;
    char err[1024];
    if (is_file && from_records)
        return sps_cli_usage_error("report", "--from-records needs a run directory, and %s is a file", dir);
    int rebuilt = 0; /* from the records, now */
    int rc = is_file ? sps__report_read(&rep, dir, err, sizeof err)
                     : sps_cli_report_load(&rep, dir, from_records, &rebuilt, err, sizeof err);
    if (rc != 0)
        return sps_cli_error("report", "cannot read the run", err, 1);
    /* a rebuilt report is about the records as they are now: a process
     * still writing one is said to be running (stepscope run does this for
     * its own report) */
    if (rebuilt)
        sps_cli_mark_running(&rep.run);
    if (is_file)
        snprintf(rep.records_note, sizeof rep.records_note, "a report file alone: no records");
    uint64_t trace_max = trace_mb                   ? (uint64_t)trace_mb << 20
                         : rep.info.trace_max_bytes ? rep.info.trace_max_bytes
                                                    : SPS_TRACE_DEFAULT_MAX_BYTES;
    /* every file again: say what the records could not give (trace.json
     * then holds no zones) */
    if (format < 0 && !rep.have_events && rep.records_note[0] && !rep.info.standalone_reason)
        fprintf(stderr, "stepscope: report: note: %s\n", rep.records_note);
    if (rebuilt) {
        if (format != SPS_EXPORT_SUMMARY) /* the summary's own first line says it */
            sps_cli_report_rebuilt_note(&rep);
        /* every file, or DIR/report.json itself, writes the rebuilt
         * report.json; one other file alone leaves it as it is */
        if (format >= 0 && !(format == SPS_EXPORT_JSON && !out))
            fprintf(stderr, "stepscope: report: note: %s/report.json not written (stepscope report %s, with no "
                            "--format, writes it and every other file)\n",
                    dir, dir);
    }
    sps_cli_report_notes("report", dir, &rep);
    if (format == SPS_EXPORT_TENSORBOARD && rep.run.nsteps == 0)
        fprintf(stderr, "stepscope: report: note: the run made no step: no TensorBoard event file in %s\n", out);
    if (format == SPS_EXPORT_TENSORBOARD) {
        size_t others = 0;
        rc = sps__export_tensorboard(&rep, out, &others, err, sizeof err);
        sps_cli_tensorboard_note("report", out, others);
    } else if (format < 0) {
        rc = rebuilt ? sps_cli_report_json_write(&rep, dir, err, sizeof err) : 0;
        if (rc == 0)
            rc = sps__export_all(&rep, dir, trace_max, err, sizeof err);
    } else if (format == SPS_EXPORT_SUMMARY) {
        rc = print_summary(&rep, out, err, sizeof err);
    } else {
        rc = sps__export_one(&rep, dir, (enum sps_export_format)format, out, trace_max, err, sizeof err);
    }
    sps__report_free(&rep);
    if (rc != 0)
        return sps_cli_error("report", "cannot write", err, 1);
    return 0;
}
