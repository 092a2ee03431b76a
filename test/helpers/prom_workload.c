/*
 * prom_workload.c - a job for the Prometheus tests (test/prom_test.py) to
 * scrape: steps at a steady pace until told to stop.
 *
 *   prom_workload STOPFILE [MAX_STEPS]
 *
 * Each step: zone "forward" (2 ms asleep), zone "backward" (3 ms asleep),
 * value "loss", counter "samples" += 4.  It stops before a step when
 * STOPFILE exists, or after MAX_STEPS steps (default 100000), and prints
 * the steps it made on stdout.  Every step sleeps at least 5 ms, so no
 * rate of its steps can exceed 200 a second, however idle the machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "stepscope.h"

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: prom_workload STOPFILE [MAX_STEPS]\n");
        return 2;
    }
    long max = argc > 2 ? atol(argv[2]) : 100000;
    long i = 0;
    for (; i < max && access(argv[1], F_OK) != 0; i++) {
        SPS_STEP();
        {
            SPS_ZONE("forward");
            sleep_ms(2);
        }
        {
            SPS_ZONE("backward");
            sleep_ms(3);
        }
        SPS_VALUE("loss", 1.0 / (double)(i + 1));
        SPS_COUNT("samples", 4);
    }
    printf("%ld\n", i);
    return 0;
}
