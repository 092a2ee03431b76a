/* cuda_zone.h - what the tests may ask of GPU zones (the public calls are
 * in stepscope.h; the recorder reaches the step-end resolution through the
 * hook gpu zones register, sps__recorder_set_step_end_hook). */
#ifndef SPS_GPU_CUDA_ZONE_H
#define SPS_GPU_CUDA_ZONE_H

/* Forget the loaded libcuda and the process totals, so the next GPU zone
 * loads it again with the current environment.  Tests only: no thread may
 * be using GPU zones, and the calling thread's pool is freed. */
void sps__cuda_reset(void);

#endif
