/*
 * fuzz_compare.c - compare's side reader (src/compare/sides.c): the input
 * is a report.json given to `stepscope compare` as a side.  It is read
 * twice by sps__cmp_side_add, as BASE with the report's own warm-up marks
 * and as NEW with the first 2 steps of each stream left out (--skip 2),
 * and the two sides are compared and printed in every format, as the CLI
 * does.
 */
#include <string.h>

#include "compare/compare.h"
#include "compare/inference.h"
#include "compare/render.h"
#include "compare/sides.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = sps_fuzz_memfile(data, size);
    char err[1024];
    struct sps_cmp_side base, new_side;
    memset(&base, 0, sizeof base);
    memset(&new_side, 0, sizeof new_side);
    struct sps_cmp_load_options marks = {NULL, -1};
    struct sps_cmp_load_options skip = {NULL, 2};
    if (sps__cmp_side_add(&base, path, &marks, err, sizeof err) != 0 ||
        sps__cmp_side_add(&new_side, path, &skip, err, sizeof err) != 0)
        sps_fuzz_rejected(err);
    else {
        struct sps_compare_params params;
        sps__compare_params_default(&params);
        struct sps_cmp_result result;
        if (sps__cmp_build(&base, &new_side, &params, &result) == 0) {
            FILE *out = sps_fuzz_sink();
            (void)sps__cmp_render(out, SPS_CMP_TEXT, 1, &result, &base, &new_side);
            (void)sps__cmp_render(out, SPS_CMP_MARKDOWN, 0, &result, &base, &new_side);
            (void)sps__cmp_render(out, SPS_CMP_JSON, 0, &result, &base, &new_side);
            sps__cmp_result_free(&result);
        }
    }
    sps__cmp_side_free(&base);
    sps__cmp_side_free(&new_side);
    return 0;
}
