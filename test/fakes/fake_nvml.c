/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1 that the nvml source
 * tests load through ctx.nvml_path.  It answers the calls the source makes
 * with fixed, per-GPU values, so the tests can assert exact readings.
 *
 * Built in several variants (compile definitions) that export the entry
 * points of different driver generations:
 *   FAKE_NVML_API=3  current: _v2 init/count/handle, memory info _v2 and v1,
 *                    processes _v3/_v2/v1, clocks-event and throttle
 *                    reasons, energy
 *   FAKE_NVML_API=2  older: _v2 init/count/handle, v1 memory info only,
 *                    processes _v2/v1,
 *                    throttle reasons only, energy
 *   FAKE_NVML_API=1  legacy: unversioned init/count/handle, v1 processes,
 *                    no energy counter, no throttle reasons
 *   FAKE_NVML_NO_MEMORY_INFO  lacks nvmlDeviceGetMemoryInfo (a required call)
 *
 * Behaviour is read from the environment at nvmlInit:
 *   FAKE_NVML_GPUS=N            number of GPUs (default 2, at most 16)
 *   FAKE_NVML_INIT_FAIL=1       nvmlInit answers NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_FAIL_AFTER=K      after K memory-info calls on a GPU, its calls
 *   FAKE_NVML_FAIL_COUNT=M      answer NVML_ERROR_GPU_IS_LOST (M of them, then
 *   FAKE_NVML_FAIL_GPU=I        it recovers; default forever), on GPU I only
 *                               (default every GPU)
 *   FAKE_NVML_PROCS="pid:bytes,..."  compute processes on every GPU
 *   FAKE_NVML_UUIDS="u0,u1,..."  UUIDs (default GPU-<i>1234567-...)
 *   FAKE_NVML_NOT_SUPPORTED="power,processes,memory_v2,..."  calls that
 *                               answer NVML_ERROR_NOT_SUPPORTED
 *   FAKE_NVML_MEMORY_V2_VERSION=V  the nvmlMemory_v2_t version _v2 accepts
 *                               (default NVML_STRUCT_VERSION(Memory, 2));
 *                               any other answers
 *                               NVML_ERROR_ARGUMENT_VERSION_MISMATCH
 *   FAKE_NVML_V3_STRIDE=32      _v3 writes 32-byte entries (some R535 drivers)
 *   FAKE_NVML_V3_WITHDRAWN=1    _v3 answers NVML_ERROR_FUNCTION_NOT_FOUND
 *   FAKE_NVML_NO_HANDLE=I       the handle of GPU I cannot be had (GPU is lost)
 *
 * Values for GPU i: memory used (i+1) GiB of 80 GiB by _v2, which reports
 * 615 MiB reserved apart; v1's used is total - free, so it counts the
 * reservation: (i+1) GiB + 615 MiB, as a real driver does; utilisation 10(i+1) %
 * and memory utilisation 5(i+1) %; 40+i degrees; 100000+i mW; energy counter
 * 1e9 + 1000 i mJ at its first call, 1500 mJ more at each later call; SM
 * clock 1410+i MHz, memory clock 2619 MHz; clock reasons 1 << i.
 */
#include "gpu/nvml_abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_NVML_API
#define FAKE_NVML_API 3
#endif

#define FAKE_EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 16
#define MAX_PROCS 256
#define GIB (1024ull * 1024ull * 1024ull)
#define RESERVED (615ull * 1024ull * 1024ull) /* an idle H200's, R580 */

/* ------------------------------------------------------------ exports */
/* the test suite's own window into the fake */
FAKE_EXPORT unsigned fake_nvml_calls(const char *name);
FAKE_EXPORT void fake_nvml_reset(void);

#if FAKE_NVML_API >= 2
FAKE_EXPORT sps_nvml_return nvmlInit_v2(void);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetCount_v2(unsigned int *count);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned int index, sps_nvml_device *device);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetTotalEnergyConsumption(sps_nvml_device device, unsigned long long *mj);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetCurrentClocksThrottleReasons(sps_nvml_device device,
                                                                      unsigned long long *reasons);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetComputeRunningProcesses_v2(sps_nvml_device device, unsigned int *count,
                                                                    struct sps_nvml_process_v2 *entries);
#endif
#if FAKE_NVML_API >= 3
FAKE_EXPORT sps_nvml_return nvmlDeviceGetCurrentClocksEventReasons(sps_nvml_device device,
                                                                   unsigned long long *reasons);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetComputeRunningProcesses_v3(sps_nvml_device device, unsigned int *count,
                                                                    struct sps_nvml_process_v2 *entries);
#endif
FAKE_EXPORT sps_nvml_return nvmlInit(void);
FAKE_EXPORT sps_nvml_return nvmlShutdown(void);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetCount(unsigned int *count);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetHandleByIndex(unsigned int index, sps_nvml_device *device);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetName(sps_nvml_device device, char *name, unsigned int length);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetUUID(sps_nvml_device device, char *uuid, unsigned int length);
#ifndef FAKE_NVML_NO_MEMORY_INFO
FAKE_EXPORT sps_nvml_return nvmlDeviceGetMemoryInfo(sps_nvml_device device, struct sps_nvml_memory *memory);
#endif
#if FAKE_NVML_API >= 3
FAKE_EXPORT sps_nvml_return nvmlDeviceGetMemoryInfo_v2(sps_nvml_device device, struct sps_nvml_memory_v2 *memory);
#endif
FAKE_EXPORT sps_nvml_return nvmlDeviceGetUtilizationRates(sps_nvml_device device,
                                                          struct sps_nvml_utilization *utilization);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetTemperature(sps_nvml_device device, int sensor, unsigned int *celsius);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetPowerUsage(sps_nvml_device device, unsigned int *milliwatts);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetClockInfo(sps_nvml_device device, int type, unsigned int *mhz);
FAKE_EXPORT sps_nvml_return nvmlDeviceGetComputeRunningProcesses(sps_nvml_device device, unsigned int *count,
                                                                 struct sps_nvml_process_v1 *entries);
FAKE_EXPORT const char *nvmlErrorString(sps_nvml_return result);

/* -------------------------------------------------------------- state */
struct fake_gpu {
    char uuid[96];
    unsigned memory_calls; /* nvmlDeviceGetMemoryInfo calls so far */
    unsigned energy_calls;
};

static struct {
    int initialised; /* nvmlInit count not yet shut down */
    int ngpus;
    struct fake_gpu gpu[MAX_GPUS];
    unsigned fail_after, fail_count;
    int fail_gpu; /* -1: every GPU */
    int nprocs;
    unsigned proc_pid[MAX_PROCS];
    unsigned long long proc_bytes[MAX_PROCS];
    char not_supported[256];
    int v3_stride, v3_withdrawn;
    unsigned memory_v2_version;
} fake;

/* Calls counted by name, for the tests to see which entry points the
 * source chose. */
static struct {
    const char *name;
    unsigned calls;
} counted[64];

static void count_call(const char *name) {
    for (int i = 0; i < 64; i++) {
        if (!counted[i].name)
            counted[i].name = name;
        if (counted[i].name == name || strcmp(counted[i].name, name) == 0) {
            counted[i].calls++;
            return;
        }
    }
}

unsigned fake_nvml_calls(const char *name) {
    for (int i = 0; i < 64 && counted[i].name; i++)
        if (strcmp(counted[i].name, name) == 0)
            return counted[i].calls;
    return 0;
}

void fake_nvml_reset(void) {
    memset(counted, 0, sizeof counted);
}

static unsigned env_unsigned(const char *name, unsigned fallback) {
    const char *v = getenv(name);
    return v && *v ? (unsigned)strtoul(v, NULL, 10) : fallback;
}

static void load_environment(void) {
    memset(&fake.gpu, 0, sizeof fake.gpu);
    fake.ngpus = (int)env_unsigned("FAKE_NVML_GPUS", 2);
    if (fake.ngpus > MAX_GPUS)
        fake.ngpus = MAX_GPUS;
    fake.fail_after = env_unsigned("FAKE_NVML_FAIL_AFTER", ~0u);
    fake.fail_count = env_unsigned("FAKE_NVML_FAIL_COUNT", ~0u);
    fake.fail_gpu = getenv("FAKE_NVML_FAIL_GPU") ? (int)env_unsigned("FAKE_NVML_FAIL_GPU", 0) : -1;
    fake.v3_stride = (int)env_unsigned("FAKE_NVML_V3_STRIDE", sizeof(struct sps_nvml_process_v2));
    fake.v3_withdrawn = (int)env_unsigned("FAKE_NVML_V3_WITHDRAWN", 0);
    fake.memory_v2_version = env_unsigned("FAKE_NVML_MEMORY_V2_VERSION", SPS_NVML_MEMORY_V2_VERSION);
    const char *ns = getenv("FAKE_NVML_NOT_SUPPORTED");
    snprintf(fake.not_supported, sizeof fake.not_supported, ",%s,", ns ? ns : "");

    const char *uuids = getenv("FAKE_NVML_UUIDS");
    for (int i = 0; i < fake.ngpus; i++) {
        char *dst = fake.gpu[i].uuid;
        size_t cap = sizeof fake.gpu[i].uuid;
        if (uuids && *uuids) {
            size_t len = strcspn(uuids, ",");
            snprintf(dst, cap, "%.*s", (int)len, uuids);
            uuids += len + (uuids[len] == ',');
        } else {
            snprintf(dst, cap, "GPU-%x1234567-89ab-4cde-8f01-23456789abc%x", i, i);
        }
    }

    fake.nprocs = 0;
    const char *procs = getenv("FAKE_NVML_PROCS");
    while (procs && *procs && fake.nprocs < MAX_PROCS) {
        char *end;
        unsigned long pid = strtoul(procs, &end, 10);
        if (*end != ':')
            break;
        unsigned long long bytes = strtoull(end + 1, &end, 10);
        fake.proc_pid[fake.nprocs] = (unsigned)pid;
        fake.proc_bytes[fake.nprocs] = bytes;
        fake.nprocs++;
        procs = *end == ',' ? end + 1 : end;
    }
}

static int not_supported(const char *call) {
    char key[64];
    snprintf(key, sizeof key, ",%s,", call);
    return strstr(fake.not_supported, key) != NULL;
}

/* The GPU a handle points at, or -1. */
static int gpu_of(sps_nvml_device device) {
    struct fake_gpu *g = (struct fake_gpu *)(void *)device;
    if (!fake.initialised || g < fake.gpu || g >= fake.gpu + fake.ngpus)
        return -1;
    return (int)(g - fake.gpu);
}

/* Is GPU i lost right now?  Decided at its memory-info calls, which the
 * source makes first in every read. */
static int lost(int i) {
    if (fake.fail_gpu >= 0 && fake.fail_gpu != i)
        return 0;
    unsigned calls = fake.gpu[i].memory_calls;
    return calls > fake.fail_after && calls - fake.fail_after <= fake.fail_count;
}

/* ---------------------------------------------------------- the calls */
static sps_nvml_return init(const char *name) {
    count_call(name);
    if (getenv("FAKE_NVML_INIT_FAIL") && atoi(getenv("FAKE_NVML_INIT_FAIL")))
        return SPS_NVML_ERROR_DRIVER_NOT_LOADED;
    if (fake.initialised++ == 0)
        load_environment();
    return SPS_NVML_SUCCESS;
}

static sps_nvml_return count(const char *name, unsigned int *n) {
    count_call(name);
    if (!fake.initialised)
        return SPS_NVML_ERROR_UNINITIALIZED;
    *n = (unsigned)fake.ngpus;
    return SPS_NVML_SUCCESS;
}

static sps_nvml_return handle(const char *name, unsigned int index, sps_nvml_device *device) {
    count_call(name);
    if (!fake.initialised)
        return SPS_NVML_ERROR_UNINITIALIZED;
    if (index >= (unsigned)fake.ngpus)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    const char *no_handle = getenv("FAKE_NVML_NO_HANDLE");
    if (no_handle && *no_handle && (unsigned)atoi(no_handle) == index)
        return SPS_NVML_ERROR_GPU_IS_LOST;
    *device = (sps_nvml_device)(void *)&fake.gpu[index];
    return SPS_NVML_SUCCESS;
}

/* Write the compute processes as entries of stride bytes (the first bytes
 * of the widest layout are every narrower one). */
static sps_nvml_return processes(const char *name, sps_nvml_device device, unsigned int *n, void *entries,
                                 size_t stride) {
    count_call(name);
    int i = gpu_of(device);
    if (i < 0 || !n)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("processes"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    if (*n < (unsigned)fake.nprocs) {
        *n = (unsigned)fake.nprocs;
        return SPS_NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int p = 0; p < fake.nprocs; p++) {
        struct sps_nvml_process_r535 entry;
        memset(&entry, 0, sizeof entry);
        entry.pid = fake.proc_pid[p];
        entry.usedGpuMemory = fake.proc_bytes[p];
        entry.gpuInstanceId = 0xFFFFFFFFu; /* MIG off */
        entry.computeInstanceId = 0xFFFFFFFFu;
        entry.usedGpuCcProtectedMemory = 0;
        memcpy((char *)entries + (size_t)p * stride, &entry, stride);
    }
    *n = (unsigned)fake.nprocs;
    return SPS_NVML_SUCCESS;
}

#if FAKE_NVML_API >= 2
static sps_nvml_return reasons(const char *name, sps_nvml_device device, unsigned long long *bits) {
    count_call(name);
    int i = gpu_of(device);
    if (i < 0 || !bits)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("reasons"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    *bits = 1ull << i;
    return SPS_NVML_SUCCESS;
}
#endif

#if FAKE_NVML_API >= 2
sps_nvml_return nvmlInit_v2(void) {
    return init("nvmlInit_v2");
}
sps_nvml_return nvmlDeviceGetCount_v2(unsigned int *n) {
    return count("nvmlDeviceGetCount_v2", n);
}
sps_nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned int index, sps_nvml_device *device) {
    return handle("nvmlDeviceGetHandleByIndex_v2", index, device);
}
sps_nvml_return nvmlDeviceGetTotalEnergyConsumption(sps_nvml_device device, unsigned long long *mj) {
    count_call("nvmlDeviceGetTotalEnergyConsumption");
    int i = gpu_of(device);
    if (i < 0 || !mj)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("energy"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    *mj = 1000000000ull + 1000ull * (unsigned)i + 1500ull * fake.gpu[i].energy_calls++;
    return SPS_NVML_SUCCESS;
}
sps_nvml_return nvmlDeviceGetCurrentClocksThrottleReasons(sps_nvml_device device, unsigned long long *bits) {
    return reasons("nvmlDeviceGetCurrentClocksThrottleReasons", device, bits);
}
sps_nvml_return nvmlDeviceGetComputeRunningProcesses_v2(sps_nvml_device device, unsigned int *n,
                                                        struct sps_nvml_process_v2 *entries) {
    return processes("nvmlDeviceGetComputeRunningProcesses_v2", device, n, entries,
                     sizeof(struct sps_nvml_process_v2));
}
#endif

#if FAKE_NVML_API >= 3
sps_nvml_return nvmlDeviceGetCurrentClocksEventReasons(sps_nvml_device device, unsigned long long *bits) {
    return reasons("nvmlDeviceGetCurrentClocksEventReasons", device, bits);
}
sps_nvml_return nvmlDeviceGetComputeRunningProcesses_v3(sps_nvml_device device, unsigned int *n,
                                                        struct sps_nvml_process_v2 *entries) {
    if (fake.v3_withdrawn) {
        count_call("nvmlDeviceGetComputeRunningProcesses_v3");
        return SPS_NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    return processes("nvmlDeviceGetComputeRunningProcesses_v3", device, n, entries, (size_t)fake.v3_stride);
}
#endif

sps_nvml_return nvmlInit(void) {
    return init("nvmlInit");
}

sps_nvml_return nvmlShutdown(void) {
    count_call("nvmlShutdown");
    if (!fake.initialised)
        return SPS_NVML_ERROR_UNINITIALIZED;
    fake.initialised--;
    return SPS_NVML_SUCCESS;
}

sps_nvml_return nvmlDeviceGetCount(unsigned int *n) {
    return count("nvmlDeviceGetCount", n);
}

sps_nvml_return nvmlDeviceGetHandleByIndex(unsigned int index, sps_nvml_device *device) {
    return handle("nvmlDeviceGetHandleByIndex", index, device);
}

sps_nvml_return nvmlDeviceGetName(sps_nvml_device device, char *name, unsigned int length) {
    count_call("nvmlDeviceGetName");
    int i = gpu_of(device);
    if (i < 0 || !name)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    int needed = snprintf(name, length, "Fake NVIDIA GPU %d", i);
    return needed < 0 || (unsigned)needed >= length ? SPS_NVML_ERROR_INSUFFICIENT_SIZE : SPS_NVML_SUCCESS;
}

sps_nvml_return nvmlDeviceGetUUID(sps_nvml_device device, char *uuid, unsigned int length) {
    count_call("nvmlDeviceGetUUID");
    int i = gpu_of(device);
    if (i < 0 || !uuid)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    int needed = snprintf(uuid, length, "%s", fake.gpu[i].uuid);
    return needed < 0 || (unsigned)needed >= length ? SPS_NVML_ERROR_INSUFFICIENT_SIZE : SPS_NVML_SUCCESS;
}

#ifndef FAKE_NVML_NO_MEMORY_INFO
sps_nvml_return nvmlDeviceGetMemoryInfo(sps_nvml_device device, struct sps_nvml_memory *memory) {
    count_call("nvmlDeviceGetMemoryInfo");
    int i = gpu_of(device);
    if (i < 0 || !memory)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    fake.gpu[i].memory_calls++;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    memory->total = 80 * GIB;
    memory->used = (unsigned long long)(i + 1) * GIB + RESERVED;
    memory->free = memory->total - memory->used;
    return SPS_NVML_SUCCESS;
}
#endif

#if FAKE_NVML_API >= 3
sps_nvml_return nvmlDeviceGetMemoryInfo_v2(sps_nvml_device device, struct sps_nvml_memory_v2 *memory) {
    count_call("nvmlDeviceGetMemoryInfo_v2");
    int i = gpu_of(device);
    if (i < 0 || !memory)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != fake.memory_v2_version)
        return SPS_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    fake.gpu[i].memory_calls++;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("memory_v2"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    memory->total = 80 * GIB;
    memory->reserved = RESERVED;
    memory->used = (unsigned long long)(i + 1) * GIB;
    memory->free = memory->total - memory->reserved - memory->used;
    return SPS_NVML_SUCCESS;
}
#endif

sps_nvml_return nvmlDeviceGetUtilizationRates(sps_nvml_device device, struct sps_nvml_utilization *utilization) {
    count_call("nvmlDeviceGetUtilizationRates");
    int i = gpu_of(device);
    if (i < 0 || !utilization)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("utilization"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = 10u * (unsigned)(i + 1);
    utilization->memory = 5u * (unsigned)(i + 1);
    return SPS_NVML_SUCCESS;
}

sps_nvml_return nvmlDeviceGetTemperature(sps_nvml_device device, int sensor, unsigned int *celsius) {
    count_call("nvmlDeviceGetTemperature");
    int i = gpu_of(device);
    if (i < 0 || !celsius || sensor != SPS_NVML_TEMPERATURE_GPU)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("temperature"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    *celsius = 40u + (unsigned)i;
    return SPS_NVML_SUCCESS;
}

sps_nvml_return nvmlDeviceGetPowerUsage(sps_nvml_device device, unsigned int *milliwatts) {
    count_call("nvmlDeviceGetPowerUsage");
    int i = gpu_of(device);
    if (i < 0 || !milliwatts)
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("power"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    *milliwatts = 100000u + (unsigned)i;
    return SPS_NVML_SUCCESS;
}

sps_nvml_return nvmlDeviceGetClockInfo(sps_nvml_device device, int type, unsigned int *mhz) {
    count_call("nvmlDeviceGetClockInfo");
    int i = gpu_of(device);
    if (i < 0 || !mhz || (type != SPS_NVML_CLOCK_SM && type != SPS_NVML_CLOCK_MEM))
        return SPS_NVML_ERROR_INVALID_ARGUMENT;
    if (lost(i))
        return SPS_NVML_ERROR_GPU_IS_LOST;
    if (not_supported("clocks"))
        return SPS_NVML_ERROR_NOT_SUPPORTED;
    *mhz = type == SPS_NVML_CLOCK_SM ? 1410u + (unsigned)i : 2619u;
    return SPS_NVML_SUCCESS;
}

sps_nvml_return nvmlDeviceGetComputeRunningProcesses(sps_nvml_device device, unsigned int *n,
                                                     struct sps_nvml_process_v1 *entries) {
    return processes("nvmlDeviceGetComputeRunningProcesses", device, n, entries, sizeof(struct sps_nvml_process_v1));
}

const char *nvmlErrorString(sps_nvml_return result) {
    switch (result) {
    case SPS_NVML_SUCCESS:
        return "Success";
    case SPS_NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case SPS_NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case SPS_NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case SPS_NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case SPS_NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case SPS_NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    case SPS_NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case SPS_NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument Version Mismatch";
    default:
        return "Unknown Error";
    }
}
