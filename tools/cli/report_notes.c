/*
 * report_notes.c - the lines on stderr that say what a report lacks, for
 * `stepscope run -q` (whose summary, which says it otherwise, is not
 * printed) and `stepscope report DIR` (whatever it makes: its files, or a
 * summary on stdout or into a file); and which of a run's processes
 * were still running when its report was built.
 */
#include <stdio.h>

#include "cli.h"
#include "clock.h"
#include "model/run.h"
#include "platform/platform.h"
#include "report/report.h"

void sps_cli_report_notes(const char *cmd, const char *dir, const struct sps_report *rep) {
    char text[1200];
    if (sps__report_running_text(rep, dir, text, sizeof text))
        fprintf(stderr, "stepscope: %s: warning: %s\n", cmd, text);
    if (sps__report_skipped_text(rep, text, sizeof text))
        fprintf(stderr, "stepscope: %s: warning: %s\n", cmd, text);
}

/* The monotonic time, on the records' clock, at which a process that was
 * created age_ns ago started. */
static uint64_t created_at(uint64_t age_ns) {
    uint64_t now = sps__mono_ns();
    return now > age_ns ? now - age_ns : 0;
}

void sps_cli_mark_running(struct sps_run *run) {
    for (size_t i = 0; i < run->nprocs; i++) {
        struct sps_process_data *p = &run->procs[i];
        uint64_t age;
        /* the process that wrote this record, not a recycled pid nor one
         * of another pid namespace: created before its record began (to a
         * clock tick: 10 ms, 20 allowed) and mapping it still (an image
         * that called exec has let it go) */
        p->running_at_report = !p->closed && p->path && sps__platform_running_age(p->pid, &age) &&
                               created_at(age) <= p->start_ns + 20000000u && sps__platform_maps_file(p->pid, p->path);
    }
}
