/* test_zones_disabled.c - every macro compiled with STEPSCOPE_DISABLE: they
 * must still accept (and type-check) their arguments and record nothing. */
#define STEPSCOPE_DISABLE 1
#include "stepscope.h"

void disabled_tu_exercise(void);

void disabled_tu_exercise(void) {
    double loss = 0.5;
    for (int i = 0; i < 3; i++) {
        SPS_STEP();
        SPS_MICROSTEP();
        SPS_ZONE("compiled_out");
        SPS_STEP_NAMED("named_step");
        SPS_ZONE_BEGIN(z, "compiled_out");
        SPS_ZONE_END(z);
        SPS_STEP_BEGIN(s);
        SPS_STEP_END(s);
        SPS_MICROSTEP_BEGIN(m);
        SPS_MICROSTEP_END(m);
        SPS_VALUE("loss", loss);
        SPS_COUNT("samples", 32);
        SPS_PHASE("compiled_out_phase");
        SPS_PHASE_END();
        SPS_WAIT("compiled_out_wait");
        SPS_WAIT_BEGIN(w, "compiled_out_wait");
        SPS_WAIT_END(w);
    }
}
