/*
 * env_path.h - the one rule for reading configuration from the environment.
 *
 * A variable whose value names a file, a directory, a library to dlopen or
 * a program to run (STEPSCOPE_OUT, STEPSCOPE_RUN_DIR, STEPSCOPE_ROOT,
 * STEPSCOPE_LIBCUDA, STEPSCOPE_NVML_LIBRARY, STEPSCOPE_NVIDIA_SMI,
 * STEPSCOPE_LIBMICROHTTPD, STEPSCOPE_AUTO_DIR, NVTX_INJECTION64_PATH) is
 * read through sps__env_path(): glibc's secure_getenv, which returns NULL
 * in a process the kernel marked AT_SECURE (setuid, setgid, or given file
 * capabilities).  A program that links libstepscope and is installed
 * setuid then never loads a user's library, runs a user's program or
 * writes where a user pointed it: it records in memory and uses the
 * default libraries, as if the variable were unset.
 *
 * Knobs that only tune stepscope's own behaviour (sizes, periods, policy
 * names, STEPSCOPE_DISABLE, RANK, TERM, NO_COLOR) stay plain getenv: a
 * value out of range falls back to the default, and none of them reaches a
 * file name.  PATH and PYTHONPATH pass to the workload `stepscope run`
 * starts with the user's own rights, as any shell's would.
 *
 * Thread safety: as getenv (safe unless another thread changes the
 * environment).  The result points into the environment; do not free it.
 */
#ifndef SPS_PLATFORM_ENV_PATH_H
#define SPS_PLATFORM_ENV_PATH_H

#include <stdlib.h>

/* The value of name, or NULL when unset, empty, or the process is
 * privileged (see above). */
static inline const char *sps__env_path(const char *name) {
    const char *v = secure_getenv(name);
    return v && *v ? v : NULL;
}

#endif
