/* capture.h - the library's own sampler, for the report it writes. */
#ifndef SPS_CAPTURE_H
#define SPS_CAPTURE_H

#include <stdint.h>

struct sps__sampler;
struct sps__sampler_config;
struct sps__sample;
struct sps_capture;

/* Pause this process's sampler (sps_sampler_start or the first
 * sps_capture) so its result can be read, and return the result (NULL when
 * none ever ran).  Call sps__capture_resume(*was_running) when done. */
struct sps__sampler_result;
const struct sps__sampler_result *sps__capture_pause(int *was_running);
void sps__capture_resume(int was_running);

/* Fill the source-related fields of cfg from the environment:
 * STEPSCOPE_ROOT (prefix of /proc and /sys), STEPSCOPE_NVML_LIBRARY,
 * STEPSCOPE_NVIDIA_SMI, CUDA_VISIBLE_DEVICES.  The strings are the
 * environment's. */
void sps__sampler_config_from_env(struct sps__sampler_config *cfg);

/* The public form of a sample: readings with their ages at now (the
 * monotonic clock).  Fills everything but fresh, published and tree_pid. */
void sps__capture_from_sample(struct sps_capture *out, const struct sps__sample *s, int64_t now);

/* The latest sample `stepscope run` published for this process's run
 * (DIR/capture.bin), without starting a sampler of its own: 0, or -1 when
 * the process is not under a run that samples.  O(1), a seqlock copy;
 * thread-safe. */
int sps__capture_published(struct sps__sample *out);

#endif /* SPS_CAPTURE_H */
