/*
 * report_read_machine.c - report.json's machine half into the model
 * (report_read.h).  PLACEHOLDER until the typed reader lands (issue 16):
 * skips its keys.
 */
#include <string.h>

#include "report/report_read.h"

int sps__report_read_machine(struct sps_jscan *s, const char *key, struct sps_report *rep) {
    static const char *const keys[] = {"metrics", "gpus", "gpus_unavailable_reason", "sensors",
                                       "sources", "series", "overhead"};
    (void)rep;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(key, keys[i]))
            return sps__jscan_skip(s);
    return 1;
}
