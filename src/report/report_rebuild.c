/*
 * report_rebuild.c - a run directory's report from its records alone, for
 * when report.json is missing (stepscope run was killed, or could not
 * write it on a full disk) or is another run's (report.h).
 *
 * report.json holds what only stepscope run knew: the exit status, the
 * times and peak RSS of the tree, the sampler's series (kept in its
 * memory; capture.bin holds only its latest reading, never a series), the
 * recording cost it measured and the options it was given.  A rebuilt
 * report leaves those out, says so (info.rebuilt_reason,
 * sps__report_missing), and has every recorded step and zone.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "report/report.h"
#include "stepscope.h"

static const char *base_name(const char *path) {
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path ? path : "";
}

int sps__report_records_stale(const struct sps_run *reported, const struct sps_run *recs, char *why,
                              size_t whylen) {
    size_t named = 0, present = 0;
    for (size_t i = 0; i < reported->nprocs; i++)
        named += reported->procs[i].path && sps__is_record_name(base_name(reported->procs[i].path));
    for (size_t k = 0; k < recs->nprocs; k++) {
        const struct sps_process_data *rec = &recs->procs[k];
        const char *name = base_name(rec->path);
        for (size_t i = 0; i < reported->nprocs; i++) {
            const struct sps_process_data *p = &reported->procs[i];
            if (!p->path || strcmp(base_name(p->path), name) != 0)
                continue;
            if (p->header_crc && rec->header_crc && p->header_crc != rec->header_crc) {
                snprintf(why, whylen,
                         "report.json is another run's: records/%s is not the record it describes (another "
                         "process's header)",
                         name);
                return 1;
            }
            present++;
            break;
        }
    }
    if (named > 0 && present == 0 && recs->nprocs > 0) {
        snprintf(why, whylen, "report.json is another run's: none of the %zu record(s) it lists is in records/, "
                              "which holds %zu other(s)",
                 named, recs->nprocs);
        return 1;
    }
    return 0;
}

size_t sps__report_missing(const struct sps_run_info *info, const char **parts, size_t cap) {
    size_t n = 0;
#define MISSING(cond, text)         \
    do {                            \
        if ((cond) && n < cap)      \
            parts[n++] = (text);    \
    } while (0)
    if (!info->rebuilt_reason)
        return 0;
    MISSING(!info->have_exit, "exit status");
    MISSING(!info->have_times, "wall/user/sys time");
    MISSING(!info->have_rss, "peak RSS");
    MISSING(!info->sampler, "machine metrics (the sampler's series)");
    MISSING(!info->have_record_cost, "recording cost");
    MISSING(1, "stepscope run's options (defaults used)");
    MISSING(1, "run start (times count from the first record)");
#undef MISSING
    return n;
}

/* A record directory's load failed, or held nothing readable: one line. */
static int no_records(const char *records, const struct sps_run *run, char *err, size_t errlen) {
    if (run->nskipped)
        snprintf(err, errlen, "%s: no readable record (%zu damaged, first: %s: %s)", records, run->nskipped,
                 run->skipped[0].path, run->skipped[0].error);
    else
        snprintf(err, errlen, "%s holds no record", records);
    return SPS_EIO;
}

int sps__report_rebuild_dir(struct sps_report *rep, const char *dir, const char *why, char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    char records[4200];
    if (snprintf(records, sizeof records, "%s/records", dir) >= (int)sizeof records) {
        snprintf(err, errlen, "%s: path too long", dir);
        return SPS_EINVAL;
    }
    struct stat st;
    if (stat(records, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: %s", records, errno && stat(records, &st) != 0 ? strerror(errno) : "not a directory");
        return SPS_EIO;
    }
    struct sps_run run = {0};
    int rc = sps__run_load_dir(&run, records, err, errlen);
    if (rc == 0 && run.nprocs == 0)
        rc = no_records(records, &run, err, errlen);
    if (rc == 0)
        rc = sps__run_build(&run);
    if (rc != 0) {
        if (rc == SPS_ENOMEM)
            snprintf(err, errlen, "%s: out of memory", records);
        sps__run_free(&run);
        return rc;
    }
    struct sps_run_info info = {0};
    info.rebuilt_reason = why;
    /* the run's start as its first record has it (run.start_ns, the
     * earliest process start; procs are in start order) */
    info.start_mono_ns = run.start_ns;
    info.start_realtime_ns = run.procs[0].start_realtime_ns;
    info.sampler_absent_reason = "rebuilt from the records: the sampler's series were in the memory of the "
                                 "stepscope run that did not write report.json";
    info.record_cost_absent_reason = "rebuilt from the records: stepscope run measures it when the run ends";
    rc = sps__report_build(rep, &run, &info);
    if (rc != 0) {
        sps__report_free(rep);
        snprintf(err, errlen, "%s: out of memory analysing the run", records);
    }
    return rc;
}
