/* cuda_zone.h - what the tests may ask of GPU zones (the public calls are
 * in stepscope.h; the recorder reaches the step-end resolution through the
 * hook gpu zones register, sps__recorder_set_step_end_hook). */
#ifndef SPS_GPU_CUDA_ZONE_H
#define SPS_GPU_CUDA_ZONE_H

#include <stddef.h>
#include <stdint.h>

/* sps_cuda_mem_info, with a one-line reason for an error written to why
 * (why_len bytes, NUL-terminated; untouched on success).  For the Python
 * module, which raises with it. */
int sps__cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes, char *why, size_t why_len);

/* The calling thread's current CUDA context into *ctx (NULL: none), and
 * making ctx current on the calling thread (cuCtxSetCurrent): how the
 * Python MemoryTracker's sampling thread reads the device of the thread
 * that opened the block (a context is current per thread).  0, or an
 * SPS_E* code with the reason in why (why_len > 0). */
int sps__cuda_context(void **ctx, char *why, size_t why_len);
int sps__cuda_use_context(void *ctx, char *why, size_t why_len);

/* Forget the loaded libcuda and the process totals, so the next GPU zone
 * loads it again with the current environment.  Tests only: no thread may
 * be using GPU zones, and the calling thread's pool is freed. */
void sps__cuda_reset(void);

/* Tests only: when the epoch is renewed.  cpu_age_ns: its age on the CPU
 * (UINT64_MAX: never for age); gpu_offset_ns: how far from it a span must
 * land (0 for both: the defaults, ROTATE_NS); ppm: the drift allowance of
 * a chained epoch (negative: the default, DRIFT_PPM).  Any thread, before
 * GPU zones run. */
void sps__cuda_set_rotation(uint64_t cpu_age_ns, uint64_t gpu_offset_ns, double ppm);

/* Benchmarks only: 0 makes GPU zones value-only again (no epoch event, no
 * placement, no GPU-span event: the resolve path before placement), 1
 * (the default) places them.  Before GPU zones run. */
void sps__cuda_set_placement(int on);

/* Tests only: the calling thread's current epoch in the current context:
 * its sps_clock_ns() reading (where it is placed may be later, once
 * chained) and its generation (1, 2, ...).  0, or -1
 * when the thread has none yet. */
int sps__cuda_epoch(uint64_t *cpu_ns, uint32_t *gen);

#endif
