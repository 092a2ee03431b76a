/*
 * report_notes.c - the lines on stderr that say what a report lacks, for
 * `stepscope run -q` (whose summary, which says it otherwise, is not
 * printed) and `stepscope report DIR` (whatever it makes: its files, or a
 * summary on stdout or into a file).
 */
#include <stdio.h>

#include "cli.h"
#include "report/report.h"

void sps_cli_report_notes(const char *cmd, const struct sps_report *rep) {
    char text[1200];
    if (sps__report_skipped_text(rep, text, sizeof text))
        fprintf(stderr, "stepscope: %s: warning: %s\n", cmd, text);
}
