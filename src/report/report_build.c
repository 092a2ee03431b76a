/*
 * report_build.c - the report model from a run's records and the
 * watcher's facts: the Run is moved in, the facts copied, and the
 * analysis run once (report.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "sampler/sampler.h"
#include "stepscope.h"

/* A copy the report owns of one of info's strings, in slot. */
static const char *own_string(struct sps_report *rep, size_t slot, const char *s, int *nomem) {
    if (!s)
        return NULL;
    char *copy = strdup(s);
    if (!copy) {
        *nomem = 1;
        return NULL;
    }
    rep->strings_owned[slot] = copy;
    return copy;
}

static int own_argv(struct sps_report *rep, int argc, char *const *argv) {
    if (!argv || argc <= 0)
        return 0;
    rep->argv_owned = calloc((size_t)argc + 1, sizeof *rep->argv_owned);
    if (!rep->argv_owned)
        return -1;
    for (int i = 0; i < argc; i++)
        if (!(rep->argv_owned[i] = strdup(argv[i] ? argv[i] : "")))
            return -1;
    return 0;
}

/* The note on skipped records: how many, and the first one's error.  A
 * format or system error names its file already; "out of memory reading
 * this record" does not (report-format.md), so the file is put before it. */
void sps__report_note_skipped(struct sps_report *rep, const struct sps_run *run) {
    if (run->nskipped == 0)
        return;
    const char *path = run->skipped[0].path, *error = run->skipped[0].error;
    int named = strncmp(error, path, strlen(path)) == 0;
    snprintf(rep->records_note, sizeof rep->records_note, "%zu record(s) skipped, first: %s%s%s", run->nskipped,
             named ? "" : path, named ? "" : ": ", error);
}

/* The file name part of path. */
static const char *file_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int sps__report_merge_skipped(struct sps_report *rep, struct sps_run *recs) {
    rep->records_total = recs->nprocs + recs->nskipped;
    struct sps_run *run = &rep->run;
    for (size_t i = 0; i < recs->nskipped; i++) {
        struct sps_skipped *s = &recs->skipped[i];
        int listed = 0;
        for (size_t j = 0; j < run->nskipped && !listed; j++)
            listed = !strcmp(file_name(run->skipped[j].path), file_name(s->path));
        if (listed)
            continue;
        struct sps_skipped *grown = realloc(run->skipped, (run->nskipped + 1) * sizeof *grown);
        if (!grown)
            return SPS_ENOMEM;
        run->skipped = grown;
        run->skipped[run->nskipped++] = *s; /* moved: recs keeps an empty entry */
        s->path = s->error = NULL;
    }
    return 0;
}

int sps__report_skipped_text(const struct sps_report *rep, char *buf, size_t len) {
    const struct sps_run *run = &rep->run;
    if (len)
        buf[0] = '\0';
    if (run->nskipped == 0)
        return 0;
    size_t total = rep->records_total ? rep->records_total : run->nprocs + run->nskipped;
    if (total < run->nskipped) /* a skipped record gone from DIR/records since */
        total = run->nskipped;
    const char *path = run->skipped[0].path, *error = run->skipped[0].error;
    int named = strncmp(error, path, strlen(path)) == 0; /* as sps__report_note_skipped */
    snprintf(buf, len, "%zu of %zu record%s skipped: %s%s%s", run->nskipped, total, total == 1 ? "" : "s",
             named ? "" : path, named ? "" : ": ", error);
    return 1;
}

int sps__report_running_text(const struct sps_report *rep, const char *dir, char *buf, size_t len) {
    const struct sps_run *run = &rep->run;
    const struct sps_process_data *first = NULL;
    size_t n = 0;
    for (size_t i = 0; i < run->nprocs; i++)
        if (run->procs[i].running_at_report && n++ == 0)
            first = &run->procs[i];
    if (len)
        buf[0] = '\0';
    if (!first)
        return 0;
    char cmd[96] = "";
    size_t used = 0;
    for (int i = 0; i < first->argc && used + 1 < sizeof cmd; i++) {
        int w = snprintf(cmd + used, sizeof cmd - used, "%s%s", i ? " " : "", first->argv[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used >= sizeof cmd - 1) /* cut: say so */
        memcpy(cmd + sizeof cmd - 4, "...", 4);
    char others[64] = "";
    if (n > 1)
        snprintf(others, sizeof others, " and %zu other process%s", n - 1, n == 2 ? "" : "es");
    snprintf(buf, len,
             "the report was taken while pid %d (%s)%s %s still running: %s numbers stop at that moment; run "
             "`stepscope report --from-records%s%s`%s once %s exited for the whole run",
             first->pid, cmd[0] ? cmd : "command unknown", others, n > 1 ? "were" : "was", n > 1 ? "their" : "its",
             dir ? " " : "", dir ? dir : "", dir ? "" : " on this run directory", n > 1 ? "they have" : "it has");
    return 1;
}

int sps__report_build(struct sps_report *rep, struct sps_run *run, const struct sps_run_info *info) {
    memset(rep, 0, sizeof *rep);
    rep->run = *run;
    memset(run, 0, sizeof *run);
    rep->have_events = 1;
    rep->have_records = rep->run.nprocs > 0;
    rep->records_total = rep->run.nprocs + rep->run.nskipped;
    sps__report_note_skipped(rep, &rep->run);
    rep->info = *info;
    int nomem = 0;
    rep->info.argv = NULL;
    rep->info.argc = 0;
    if (own_argv(rep, info->argc, info->argv) != 0)
        nomem = 1;
    else if (rep->argv_owned) {
        rep->info.argv = rep->argv_owned;
        rep->info.argc = info->argc;
    }
    rep->info.rss_scope = own_string(rep, 0, info->rss_scope, &nomem);
    rep->info.standalone_reason = own_string(rep, 1, info->standalone_reason, &nomem);
    rep->info.sampler_absent_reason = own_string(rep, 2, info->sampler_absent_reason, &nomem);
    rep->info.record_cost_absent_reason = own_string(rep, 3, info->record_cost_absent_reason, &nomem);
    rep->info.rebuilt_reason = own_string(rep, SPS_REPORT_REBUILT_REASON_SLOT, info->rebuilt_reason, &nomem);
    if (info->analysis)
        rep->analysis_config = *info->analysis;
    else
        sps__analysis_config_default(&rep->analysis_config);
    rep->info.analysis = &rep->analysis_config;
    if (sps__analyze(&rep->run, &rep->info, &rep->analysis_config, &rep->analysis) != 0)
        nomem = 1; /* partial: still rendered */
    if (sps__ranks_build(&rep->run, &rep->ranks) != 0)
        nomem = 1; /* no per-rank view: the pooled one stands */
    return nomem ? SPS_ENOMEM : 0;
}

void sps__report_free(struct sps_report *rep) {
    if (!rep)
        return;
    sps__run_free(&rep->run);
    sps__analysis_free(&rep->analysis);
    sps__ranks_free(&rep->ranks);
    if (rep->argv_owned) {
        for (size_t i = 0; rep->argv_owned[i]; i++)
            free(rep->argv_owned[i]);
        free(rep->argv_owned);
    }
    for (size_t i = 0; i < sizeof rep->strings_owned / sizeof rep->strings_owned[0]; i++)
        free(rep->strings_owned[i]);
    sps__sampler_result_free(rep->machine_owned);
    memset(rep, 0, sizeof *rep);
}
