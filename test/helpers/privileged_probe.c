/*
 * privileged_probe.c - a program linking libstepscope that reaches every
 * place the library loads a library from a path in the environment: a
 * zone (the NVTX tool, NVTX_INJECTION64_PATH), a GPU zone (libcuda,
 * STEPSCOPE_LIBCUDA) and sps_capture (NVML, STEPSCOPE_NVML_LIBRARY).
 * Its exit writes the report STEPSCOPE_OUT asks for.  It prints
 * "secure N": the kernel's AT_SECURE for this process, so that
 * privileged_env_test.sh knows the setgid copy really was privileged.
 */
#include <stdio.h>
#include <sys/auxv.h>

#include "stepscope.h"

/* In a sanitizer build: a setgid process is not dumpable, so its
 * /proc/self/environ is unreadable (ASAN_OPTIONS with it) and
 * LeakSanitizer cannot inspect it and aborts.  The leak check is off in
 * this probe only; AddressSanitizer's other checks stay. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "detect_leaks=0";
}

int main(void) {
    printf("secure %lu\n", getauxval(AT_SECURE));
    fflush(stdout);
    struct sps_site *step = sps_site_get("probe_step", SPS_KIND_STEP);
    struct sps_site *gpu = sps_site_get("probe_gpu", SPS_KIND_ZONE);
    sps_zone_end(sps_zone_begin(step));
    sps_gpu_zone_end(sps_gpu_zone_begin(gpu, NULL));
    static struct sps_capture c;
    (void)sps_capture(&c, 0);
    return 0;
}
