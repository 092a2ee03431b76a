/*
 * torch_profile_opt.c - `stepscope run --torch-profile STEPS`: the deep-
 * capture window's spec, checked here and passed to the workload in
 * STEPSCOPE_TORCH_PROFILE, where the Python module (stepscope/_deep.py)
 * turns torch.profiler on for those steps.
 *
 * STEPS is FIRST:END, step indices as steps.csv's step_index counts them
 * (0-based, per thread) and END exclusive, as a Python slice: 3:5 captures
 * steps 3 and 4.  "auto" captures the steps after the first slow one
 * (docs/cli.md gives the rule).  The same spec goes to every process; each
 * captures its own main thread's steps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torch_profile_opt.h"

/* The longest window: torch.profiler keeps every operator in memory until
 * the window ends. */
#define MAX_WINDOW_STEPS 10000ul

static int parse_index(const char *s, size_t n, unsigned long *out) {
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    for (size_t k = 0; k < n; k++)
        if (buf[k] < '0' || buf[k] > '9')
            return -1;
    errno = 0;
    *out = strtoul(buf, NULL, 10);
    return errno || *out > (1ul << 40) ? -1 : 0;
}

int sps_torch_profile_check(const char *spec, char *why, size_t whylen) {
    if (!spec || !*spec) {
        snprintf(why, whylen, "an empty spec");
        return -1;
    }
    if (!strcmp(spec, "auto"))
        return 0;
    const char *colon = strchr(spec, ':');
    unsigned long first, end;
    if (!colon || parse_index(spec, (size_t)(colon - spec), &first) ||
        parse_index(colon + 1, strlen(colon + 1), &end)) {
        snprintf(why, whylen, "'%s' is not FIRST:END (0-based step indices, END excluded, e.g. 50:55) or auto",
                 spec);
        return -1;
    }
    if (end <= first) {
        snprintf(why, whylen, "'%s' captures no step: END must be above FIRST (3:5 is steps 3 and 4)", spec);
        return -1;
    }
    if (end - first > MAX_WINDOW_STEPS) {
        snprintf(why, whylen, "'%s' is %lu steps: a window holds at most %lu", spec, end - first,
                 MAX_WINDOW_STEPS);
        return -1;
    }
    return 0;
}
