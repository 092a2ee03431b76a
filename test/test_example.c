/* test_example.c - the bundled tiny_train under `stepscope run`: the
 * phases are all there, every step is recorded and the loss falls. */
#include <string.h>

#include "check.h"
#include "support.h"

static void test_tiny_train_profile(void) {
    char out[600];
    snprintf(out, sizeof out, "%s/out", tmpdir_new("example"));
    char *argv[] = {SPS_BIN_DIR "/stepscope", "run", "-q", "-o", out, "--", SPS_BIN_DIR "/tiny_train", "--steps",
                    "200", "--print-every", "0", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, NULL, 0)), 0);
    json_t *r = report_load(out);
    CHECK(r != NULL);
    if (!r)
        return;
    static const char *phases[] = {"data", "forward", "backward", "optimizer"};
    double phase_total = 0;
    for (size_t i = 0; i < 4; i++) {
        json_t *z = report_find(r, "zones", phases[i]);
        CHECK_MSG(z != NULL, "zone %s missing", phases[i]);
        CHECK_EQ_I(json_num(z, "count"), 200);
        phase_total += json_num(z, "total_s");
    }
    json_t *step = report_find(r, "zones", "step");
    CHECK_EQ_I(json_num(step, "count"), 200);
    CHECK(phase_total <= json_num(step, "total_s"));
    CHECK_EQ_I(json_num(r, "steps.count"), 200);
    CHECK_EQ_I(json_num(report_find(r, "counters", "samples"), "total"), 200 * 64);
    /* the loss falls: last well under half the first, and the mean of the
     * last 20 steps' losses under half the mean of the first 20 */
    json_t *loss = report_find(r, "values", "loss");
    CHECK_EQ_I(json_num(loss, "count"), 200);
    CHECK(json_num(loss, "last") < 0.5 * json_num(loss, "first"));
    json_t *rows = json_path(r, "steps.rows");
    CHECK_EQ_I(json_array_size(rows), 200);
    double head = 0, tail = 0;
    for (size_t i = 0; i < 20; i++) {
        head += json_num(json_array_get(rows, i), "values.loss");
        tail += json_num(json_array_get(rows, 180 + i), "values.loss");
    }
    CHECK_MSG(tail < 0.5 * head, "loss head %g tail %g", head / 20, tail / 20);
    json_decref(r);
}

int main(void) {
    RUN_TEST(test_tiny_train_profile);
    return check_report();
}
