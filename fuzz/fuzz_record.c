/*
 * fuzz_record.c - the record reader (src/model/reader.c): the input is a
 * record file (*.sps, docs/record-format.md), loaded by sps__record_load,
 * as `stepscope run` and `stepscope report` load DIR/records/ (mapped,
 * its pages released as the parse goes), then built into a run and a
 * report and rendered, as `stepscope run` does after the workload; with
 * a header checksum that does not match, also with it made right (fuzz.h).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "model/run.h"
#include "model/run_info.h"
#include "report/report.h"

static void load(const uint8_t *data, size_t size) {
    const char *path = sps_fuzz_memfile(data, size);
    struct sps_process_data p;
    char err[1024];
    if (sps__record_load(path, &p, err, sizeof err) != 0) {
        sps_fuzz_rejected(err); /* with a reason: what a bad record should get */
        return;
    }
    struct sps_run run;
    memset(&run, 0, sizeof run);
    if (sps__run_add(&run, &p) != 0)
        sps__process_free(&p);
    else if (sps__run_build(&run) == 0) {
        struct sps_run_info info;
        memset(&info, 0, sizeof info);
        info.start_realtime_ns = run.procs[0].start_realtime_ns;
        info.start_mono_ns = run.start_ns;
        struct sps_report rep;
        if (sps__report_build(&rep, &run, &info) == 0)
            sps_fuzz_render(&rep);
        sps__report_free(&rep);
    }
    sps__run_free(&run);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load(data, size);
    uint8_t *fixed = sps_fuzz_header_crc_fixed(data, size);
    if (fixed) {
        load(fixed, size);
        free(fixed);
    }
    return 0;
}
