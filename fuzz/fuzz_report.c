/*
 * fuzz_report.c - the report.json reader (src/report/report_read*.c on
 * jscan.c): the input is a report.json, read by sps__report_read as
 * `stepscope report DIR` reads DIR/report.json, then rendered into every
 * file that command makes again from it.
 */
#include "fuzz.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = sps_fuzz_memfile(data, size);
    struct sps_report rep;
    char err[1024];
    if (sps__report_read(&rep, path, err, sizeof err) != 0) {
        sps_fuzz_rejected(err); /* with a reason; *rep holds nothing */
        return 0;
    }
    sps_fuzz_render(&rep);
    sps__report_free(&rep);
    return 0;
}
