/*
 * fuzz_torch_ops.c - the deep-capture window's operators file
 * (src/model/torch_ops.c): the input is a torch-ops-PID.tsv, alone in a
 * records directory, which is loaded, built into a run and a report and
 * rendered as `stepscope run` and `stepscope report` do.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sps_fuzz_load_dir(sps_fuzz_dir_file("torch-ops-4242.tsv", data, size));
    return 0;
}
