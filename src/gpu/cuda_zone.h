/* cuda_zone.h - what the recorder and the tests may ask of GPU zones. */
#ifndef SPS_GPU_CUDA_ZONE_H
#define SPS_GPU_CUDA_ZONE_H

/* The calling thread ended a step: resolve its finished GPU zones (never
 * waits).  Cheap when the thread never began one. */
void sps__gpu_step_end(void);

/* Forget the loaded libcuda and the process totals, so the next GPU zone
 * loads it again with the current environment.  Tests only: no thread may
 * be using GPU zones, and the calling thread's pool is freed. */
void sps__cuda_reset(void);

#endif
