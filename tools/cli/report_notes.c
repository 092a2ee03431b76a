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
        if (p->closed)
            continue;
        /* a later image of the pid (it called exec) is the one that may run */
        int later = 0;
        for (size_t j = 0; j < run->nprocs && !later; j++)
            later = j != i && run->procs[j].pid == p->pid && run->procs[j].start_ns > p->start_ns;
        uint64_t age;
        /* the same process, not a recycled pid: created before its record
         * began (to a clock tick: 10 ms, 20 allowed) */
        p->running_at_report = !later && sps__platform_running_age(p->pid, &age) &&
                               created_at(age) <= p->start_ns + 20000000u;
    }
}
