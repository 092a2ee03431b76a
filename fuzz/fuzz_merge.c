/*
 * fuzz_merge.c - `stepscope merge`'s note of what it did, records/merge.tsv
 * (src/model/merge_file.c): the input is a merge.tsv, alone in a records
 * directory, which is loaded, built into a run and a report and rendered
 * as `stepscope report` does for a merged run.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sps_fuzz_load_dir(sps_fuzz_dir_file("merge.tsv", data, size));
    return 0;
}
