/*
 * consumer.c - a program built against an installed stepscope, the way a
 * user's project builds it: only <stepscope.h> and the library, found through
 * find_package(stepscope) or pkg-config (test/c_package_test.sh).
 *
 * It records CONSUMER_STEPS steps named "consumer_step", each with the zones
 * "consumer_load" and "consumer_compute" and the value "consumer_loss"; the
 * test reads those back from the report.json `stepscope run` writes.
 */
#include <stdio.h>

#include <stepscope.h>

enum { CONSUMER_STEPS = 7 };

/* a little arithmetic for the zones to time; volatile so it is not dropped */
static double work(int n) {
    volatile double x = 1.0;
    for (int i = 0; i < n; i++)
        x = x * 1.000001 + 1e-9;
    return x;
}

int main(void) {
    double loss = 0.0;
    for (int step = 0; step < CONSUMER_STEPS; step++) {
        SPS_STEP_NAMED("consumer_step");
        {
            SPS_ZONE("consumer_load");
            work(20000);
        }
        {
            SPS_ZONE("consumer_compute");
            loss = work(50000) / (step + 1);
        }
        SPS_VALUE("consumer_loss", loss);
    }
    printf("consumer: %d steps, stepscope %s\n", CONSUMER_STEPS, SPS_VERSION_STRING);
    return 0;
}
