/* torch_profile_opt.h - the --torch-profile spec of `stepscope run`
 * (torch_profile_opt.c says what it means). */
#ifndef SPS_CLI_TORCH_PROFILE_OPT_H
#define SPS_CLI_TORCH_PROFILE_OPT_H

#include <stddef.h>

/* The environment variable the spec reaches the workload in. */
#define SPS_TORCH_PROFILE_ENV "STEPSCOPE_TORCH_PROFILE"

/* 0 when spec is FIRST:END or auto; else -1 with why (one line, no
 * trailing newline) saying what is wrong.  Pure. */
int sps_torch_profile_check(const char *spec, char *why, size_t whylen);

#endif
