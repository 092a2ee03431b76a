/*
 * nvml_abi.h - the part of NVML's binary interface stepscope uses, declared
 * here so that nothing of NVIDIA's is needed to build: the library is
 * loaded at run time (dlopen) where a driver is installed.
 *
 * Layouts and values follow nvml.h (checked against the NVML 12.2 header;
 * none of these has changed since the calls were introduced).  Only types
 * and constants live here; the source keeps its own function-pointer types
 * next to the dlsym() calls, and the test suite's fake library implements
 * the same calls on these types.
 */
#ifndef SPS_GPU_NVML_ABI_H
#define SPS_GPU_NVML_ABI_H

typedef int sps_nvml_return;                 /* nvmlReturn_t (a C enum: int-sized) */
typedef struct sps_nvml_device *sps_nvml_device; /* nvmlDevice_t: opaque handle */

enum {
    SPS_NVML_SUCCESS = 0,
    SPS_NVML_ERROR_UNINITIALIZED = 1,
    SPS_NVML_ERROR_INVALID_ARGUMENT = 2,
    SPS_NVML_ERROR_NOT_SUPPORTED = 3,
    SPS_NVML_ERROR_NO_PERMISSION = 4,
    SPS_NVML_ERROR_NOT_FOUND = 6,
    SPS_NVML_ERROR_INSUFFICIENT_SIZE = 7,
    SPS_NVML_ERROR_DRIVER_NOT_LOADED = 9,
    SPS_NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    SPS_NVML_ERROR_GPU_IS_LOST = 15,
    SPS_NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    SPS_NVML_ERROR_UNKNOWN = 999
};

enum { SPS_NVML_TEMPERATURE_GPU = 0 };          /* nvmlTemperatureSensors_t */
enum { SPS_NVML_CLOCK_SM = 1, SPS_NVML_CLOCK_MEM = 2 }; /* nvmlClockType_t */

/* Buffer sizes guaranteed large enough for nvmlDeviceGetName/GetUUID
 * (NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE). */
#define SPS_NVML_NAME_BUFFER_SIZE 96
#define SPS_NVML_UUID_BUFFER_SIZE 96

/* NVML_VALUE_NOT_AVAILABLE as an unsigned long long field carries it. */
#define SPS_NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFull

/* nvmlMemory_t (the v1 struct nvmlDeviceGetMemoryInfo takes), bytes.
 * Its used is total - free: it includes the memory the driver and firmware
 * reserve, hundreds of MiB on a large GPU with nothing running. */
struct sps_nvml_memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};

/* nvmlMemory_v2_t (nvmlDeviceGetMemoryInfo_v2, drivers since R510), bytes:
 * reserved is apart, and used excludes it (what nvidia-smi shows).  The
 * caller sets version to SPS_NVML_MEMORY_V2_VERSION (nvml.h's
 * NVML_STRUCT_VERSION(Memory, 2): the struct's size, 40, | 2 << 24). */
struct sps_nvml_memory_v2 {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
};
#define SPS_NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(struct sps_nvml_memory_v2) | (2u << 24)))

/* nvmlUtilization_t, percent over the driver's last sample period. */
struct sps_nvml_utilization {
    unsigned int gpu;
    unsigned int memory;
};

/* nvmlProcessInfo_v1_t: what the unversioned
 * nvmlDeviceGetComputeRunningProcesses fills (16 bytes). */
struct sps_nvml_process_v1 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};

/* nvmlProcessInfo_v2_t, which is also nvmlProcessInfo_t: what _v2 fills
 * and, in current drivers, what _v3 fills (24 bytes). */
struct sps_nvml_process_v2 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

/* The layout some R535 drivers (CUDA 12.2's first releases) filled from
 * nvmlDeviceGetComputeRunningProcesses_v3 without a version bump: v2 plus
 * usedGpuCcProtectedMemory (32 bytes).  Later drivers went back to v2 for
 * _v3, so a caller cannot know the stride from the symbol alone. */
struct sps_nvml_process_r535 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
};

#endif /* SPS_GPU_NVML_ABI_H */
