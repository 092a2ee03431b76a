/*
 * fuzz_merge.c - `stepscope merge`'s note of what it did, records/merge.tsv
 * (src/model/merge_file.c): the input is a merge.tsv in a records
 * directory that also holds one real record, fuzz.sps (a rank of the seed
 * runs, SPS_FUZZ_MERGE_RECORD), which its "record fuzz.sps ..." lines
 * align; the directory is loaded, built into a run and a report and
 * rendered, as `stepscope report` does for a merged run.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"

static char record_path[4200];

static void remove_record(void) {
    unlink(record_path);
}

/* Copy the seed record into dir as fuzz.sps, once. */
static void put_record(const char *dir) {
    if (record_path[0])
        return;
    snprintf(record_path, sizeof record_path, "%s/fuzz.sps", dir);
    int in = open(SPS_FUZZ_MERGE_RECORD, O_RDONLY | O_CLOEXEC);
    int out = open(record_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (in < 0 || out < 0) {
        perror(in < 0 ? SPS_FUZZ_MERGE_RECORD : record_path);
        abort();
    }
    atexit(remove_record); /* before the directory's own removal */
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n) {
            perror(record_path);
            abort();
        }
    close(in);
    close(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = sps_fuzz_dir_file("merge.tsv", data, size);
    put_record(dir);
    sps_fuzz_load_dir(dir);
    return 0;
}
