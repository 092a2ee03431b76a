/*
 * marker_lib.c - a library that says it was loaded: its constructor
 * creates the file named by SPS_TEST_MARKER.  privileged_env_test.sh
 * names it in STEPSCOPE_LIBCUDA, STEPSCOPE_NVML_LIBRARY and
 * NVTX_INJECTION64_PATH; a privileged process must never load it.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void say_loaded(void) {
    const char *path = getenv("SPS_TEST_MARKER");
    int fd = path ? open(path, O_WRONLY | O_CREAT, 0666) : -1;
    if (fd >= 0)
        close(fd);
}
