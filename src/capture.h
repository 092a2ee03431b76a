/* capture.h - the library's own sampler, for the report it writes. */
#ifndef SPS_CAPTURE_H
#define SPS_CAPTURE_H

#include <stdint.h>

struct sps__sampler;
struct sps__sampler_config;
struct sps__sample;
struct sps_capture;

/* This process's sampler (sps_sampler_start or the first sps_capture), or
 * NULL.  It lives until the process exits. */
const struct sps__sampler *sps__capture_own_sampler(void);

/* Fill the source-related fields of cfg from the environment:
 * STEPSCOPE_ROOT (prefix of /proc and /sys), STEPSCOPE_NVML_LIBRARY,
 * STEPSCOPE_NVIDIA_SMI, CUDA_VISIBLE_DEVICES.  The strings are the
 * environment's. */
void sps__sampler_config_from_env(struct sps__sampler_config *cfg);

/* The public form of a sample: readings with their ages at now (the
 * monotonic clock).  Fills everything but fresh, published and tree_pid. */
void sps__capture_from_sample(struct sps_capture *out, const struct sps__sample *s, int64_t now);

#endif /* SPS_CAPTURE_H */
