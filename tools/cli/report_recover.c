/*
 * report_recover.c - a run directory read for `stepscope report`, rebuilt
 * from its records when its report.json is missing or another run's
 * (report_recover.h).
 */
#include "report_recover.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "render/render.h"
#include "report/report.h"
#include "run_dir.h"
#include "stepscope.h"

/* dir could not be read and has no report.json: a stepscope run killed
 * before its own report set the earlier run's outputs aside in
 * dir/.previous, which err then names (else the user takes them for lost). */
static void say_previous(const char *dir, char *err, size_t errlen) {
    char path[4200];
    struct stat st;
    size_t n = strlen(err);
    if (snprintf(path, sizeof path, "%s/%s/report.json", dir, SPS_RUN_DIR_PREVIOUS) < (int)sizeof path &&
        lstat(path, &st) == 0 && S_ISREG(st.st_mode) && n < errlen)
        snprintf(err + n, errlen - n, "; the earlier run's report is kept in %s/%s (stepscope report %s/%s)", dir,
                 SPS_RUN_DIR_PREVIOUS, dir, SPS_RUN_DIR_PREVIOUS);
}

int sps_cli_report_load(struct sps_report *rep, const char *dir, int from_records, int *rebuilt, char *err,
                        size_t errlen) {
    char path[4200];
    *rebuilt = 1; /* unless report.json is read below */
    struct stat st;
    if (!from_records) {
        if (snprintf(path, sizeof path, "%s/report.json", dir) >= (int)sizeof path) {
            snprintf(err, errlen, "%s: path too long", dir);
            return SPS_EINVAL;
        }
        int missing = lstat(path, &st) != 0 && errno == ENOENT;
        if (!missing) {
            int rc = sps__report_load_dir(rep, dir, err, errlen);
            if (rc != 0 || !rep->stale_reason[0]) {
                *rebuilt = 0;
                return rc;
            }
            char why[sizeof rep->stale_reason];
            snprintf(why, sizeof why, "%s", rep->stale_reason);
            sps__report_free(rep);
            return sps__report_rebuild_dir(rep, dir, why, err, errlen);
        }
        /* no report.json: the records, if there are any */
        snprintf(path, sizeof path, "%s/records", dir);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && stat(path, &st) != 0 && errno == ENOENT) {
            memset(rep, 0, sizeof *rep);
            *rebuilt = 0;
            snprintf(err, errlen, "%s: neither report.json nor records/ (is it a run directory?)", dir);
            say_previous(dir, err, errlen);
            return SPS_EIO;
        }
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            *rebuilt = 0;
            return sps__report_load_dir(rep, dir, err, errlen); /* its one-line error about dir */
        }
        int rc = sps__report_rebuild_dir(rep, dir, "report.json was missing", err, errlen);
        if (rc != 0)
            say_previous(dir, err, errlen);
        return rc;
    }
    return sps__report_rebuild_dir(rep, dir, "asked for with --from-records", err, errlen);
}

int sps_cli_report_json_write(const struct sps_report *rep, const char *dir, char *err, size_t errlen) {
    char path[4200];
    if (snprintf(path, sizeof path, "%s/report.json", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: path too long", dir);
        return SPS_EINVAL;
    }
    return sps__report_json_write(rep, path, err, errlen);
}

int sps_cli_report_rebuild_json(const char *dir, int *unreadable, char *err, size_t errlen) {
    struct sps_report rep;
    int rebuilt = 0;
    int rc = sps_cli_report_load(&rep, dir, 0, &rebuilt, err, errlen);
    *unreadable = rc == SPS_EIO;
    if (rc != 0)
        return rc;
    if (rebuilt) { /* else report.json appeared meanwhile, and is about these records */
        sps_cli_mark_running(&rep.run);
        rc = sps_cli_report_json_write(&rep, dir, err, errlen);
    }
    sps__report_free(&rep);
    return rc;
}

void sps_cli_report_rebuilt_note(const struct sps_report *rep) {
    const char *parts[16];
    size_t n = sps__report_missing(&rep->info, parts, sizeof parts / sizeof parts[0]);
    fprintf(stderr, "stepscope: report: note: rebuilt from the records alone (%s); not known: ",
            rep->info.rebuilt_reason);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? "; " : "", parts[i]);
    fputc('\n', stderr);
    /* damaged records: sps_cli_report_notes says how many, and the first
     * by name, as for a report that was not rebuilt; report.json's
     * records_skipped lists every one */
}
