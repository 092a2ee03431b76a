/*
 * source_nvml.c - NVIDIA GPUs through NVML (libnvidia-ml.so.1), loaded at
 * run time so that stepscope builds and runs where no driver is installed.
 *
 * The library's entry points changed over driver generations: nvmlInit,
 * nvmlDeviceGetCount and nvmlDeviceGetHandleByIndex gained _v2 forms, and
 * the running-process query went through _v2 and _v3 with three struct
 * layouts.  Each is looked up newest first, so a current driver is called
 * the way its header says and an old one the way it still understands.
 *
 * Every visible GPU (CUDA_VISIBLE_DEVICES, see visible_devices.h) is read
 * at each read(); the workload's cuda:N is gpu[N] of the sample.
 */
#include "gpu/nvml_abi.h"
#include "gpu/visible_devices.h"
#include "sources/source.h"

#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef sps_nvml_return (*nvml_init_fn)(void);
typedef sps_nvml_return (*nvml_shutdown_fn)(void);
typedef sps_nvml_return (*nvml_count_fn)(unsigned int *count);
typedef sps_nvml_return (*nvml_handle_fn)(unsigned int index, sps_nvml_device *device);
typedef sps_nvml_return (*nvml_text_fn)(sps_nvml_device device, char *buf, unsigned int length);
typedef sps_nvml_return (*nvml_memory_fn)(sps_nvml_device device, struct sps_nvml_memory *memory);
typedef sps_nvml_return (*nvml_memory_v2_fn)(sps_nvml_device device, struct sps_nvml_memory_v2 *memory);
typedef sps_nvml_return (*nvml_utilization_fn)(sps_nvml_device device, struct sps_nvml_utilization *utilization);
/* nvmlDeviceGetTemperature and nvmlDeviceGetClockInfo take an enum (int-sized) */
typedef sps_nvml_return (*nvml_uint_of_fn)(sps_nvml_device device, int which, unsigned int *value);
typedef sps_nvml_return (*nvml_uint_fn)(sps_nvml_device device, unsigned int *value);
typedef sps_nvml_return (*nvml_ull_fn)(sps_nvml_device device, unsigned long long *value);
/* the entries' layout depends on the function and the driver: see
 * process_entry_stride() */
typedef sps_nvml_return (*nvml_processes_fn)(sps_nvml_device device, unsigned int *count, void *entries);
typedef const char *(*nvml_error_string_fn)(sps_nvml_return result);

/* GPUs enumerated at open: more than any machine has. */
#define NVML_MAX_PHYSICAL 64
/* Process-list entries read without allocating; a larger list is read once
 * more into the heap, up to NVML_MAX_PROCESSES. */
#define NVML_STACK_PROCESSES 64
#define NVML_MAX_PROCESSES 4096
/* Room per entry: the widest layout any driver has written (R535's). */
#define NVML_PROCESS_SLOT sizeof(struct sps_nvml_process_r535)
/* What the process buffer is filled with before a call, to see how far
 * the driver wrote (no layout's last byte, the top byte of a little-endian
 * id or byte count, is ever 0xA5). */
#define NVML_FILL_BYTE 0xA5

_Static_assert(offsetof(struct sps_nvml_process_v2, usedGpuMemory) ==
                       offsetof(struct sps_nvml_process_v1, usedGpuMemory) &&
                   offsetof(struct sps_nvml_process_r535, usedGpuMemory) ==
                       offsetof(struct sps_nvml_process_v1, usedGpuMemory),
               "every process layout starts with pid and usedGpuMemory");
_Static_assert(sizeof(struct sps_nvml_process_v1) == 16 && sizeof(struct sps_nvml_process_v2) == 24 &&
                   sizeof(struct sps_nvml_process_r535) == 32,
               "NVML process layouts are 16, 24 and 32 bytes");
_Static_assert(sizeof(struct sps_nvml_memory_v2) == 40 && SPS_NVML_MEMORY_V2_VERSION == 0x02000028u,
               "nvmlMemory_v2_t is 40 bytes, version NVML_STRUCT_VERSION(Memory, 2)");

struct nvml_api {
    nvml_init_fn init;
    nvml_shutdown_fn shutdown;
    nvml_count_fn count;
    nvml_handle_fn handle_by_index;
    nvml_text_fn name;
    nvml_text_fn uuid;
    nvml_memory_fn memory;
    /* optional: NULL when the library lacks them */
    nvml_memory_v2_fn memory_v2; /* used without the driver's reservation */
    nvml_utilization_fn utilization;
    nvml_uint_of_fn temperature;
    nvml_uint_fn power;
    nvml_ull_fn total_energy;
    nvml_uint_of_fn clock;
    nvml_ull_fn clock_reasons;
    const char *clock_reasons_name; /* which of the two names it has */
    nvml_error_string_fn error_string;
};

/* A running-process query: the newest the library has first; one that
 * answers NVML_ERROR_FUNCTION_NOT_FOUND (exported but withdrawn, as _v3 was
 * in some R535 drivers) is dropped for the next. */
struct nvml_process_query {
    nvml_processes_fn fn;
    size_t stride; /* the entry size its header declares */
};

struct nvml_gpu {
    sps_nvml_device handle;
    int index; /* position in the visible list: the workload's cuda:N */
    char name[64];
    char uuid[96];
    /* the GPU refused nvmlDeviceGetMemoryInfo_v2 once: v1 from then on */
    int memory_v1_only;
    /* energy since open: the driver's counter counts since it loaded */
    int energy_started;
    unsigned long long energy_last_mj;
    double energy_mj;
};

struct nvml_state {
    void *lib;
    struct nvml_api api;
    struct nvml_process_query query[3];
    int nqueries;
    int ngpus;
    struct nvml_gpu gpu[SPS_CAPTURE_MAX_GPUS];
};

static const char *nvml_error(const struct nvml_api *api, sps_nvml_return r) {
    const char *text = api->error_string ? api->error_string(r) : NULL;
    if (text && *text)
        return text;
    static _Thread_local char fallback[32];
    snprintf(fallback, sizeof fallback, "NVML error %d", r);
    return fallback;
}

/* The first of the NULL-terminated names the library exports; *found (if
 * given) receives that name. */
static void *lookup(void *lib, const char *const *names, const char **found) {
    for (; *names; names++) {
        void *sym = dlsym(lib, *names);
        if (sym) {
            if (found)
                *found = *names;
            return sym;
        }
    }
    return NULL;
}

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Append text to buf after sep (no sep when buf is empty); cut to fit. */
static void append_text(char *buf, size_t cap, const char *sep, const char *text) {
    size_t len = strlen(buf);
    if (!*text || len + 1 >= cap)
        return;
    snprintf(buf + len, cap - len, "%s%s", len ? sep : "", text);
}

/* Look up every entry point.  Returns 0, or -1 with reason naming a
 * missing required one. */
static int resolve_api(struct nvml_state *st, char *reason, size_t cap) {
    enum { INIT, SHUTDOWN, COUNT, HANDLE_BY_INDEX, NAME, UUID, MEMORY, NREQUIRED };
    const char *const *const required[NREQUIRED] = {
        [INIT] = NAMES("nvmlInit_v2", "nvmlInit"),
        [SHUTDOWN] = NAMES("nvmlShutdown"),
        [COUNT] = NAMES("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
        [HANDLE_BY_INDEX] = NAMES("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
        [NAME] = NAMES("nvmlDeviceGetName"),
        [UUID] = NAMES("nvmlDeviceGetUUID"),
        [MEMORY] = NAMES("nvmlDeviceGetMemoryInfo"),
    };
    void *sym[NREQUIRED];
    for (int i = 0; i < NREQUIRED; i++) {
        sym[i] = lookup(st->lib, required[i], NULL);
        if (!sym[i]) {
            /* name the unversioned form: the one every NVML had */
            const char *const *last = required[i];
            while (last[1])
                last++;
            snprintf(reason, cap, "missing required symbol %s", *last);
            return -1;
        }
    }
    struct nvml_api *api = &st->api;
    api->init = (nvml_init_fn)sym[INIT];
    api->shutdown = (nvml_shutdown_fn)sym[SHUTDOWN];
    api->count = (nvml_count_fn)sym[COUNT];
    api->handle_by_index = (nvml_handle_fn)sym[HANDLE_BY_INDEX];
    api->name = (nvml_text_fn)sym[NAME];
    api->uuid = (nvml_text_fn)sym[UUID];
    api->memory = (nvml_memory_fn)sym[MEMORY];

    api->memory_v2 = (nvml_memory_v2_fn)dlsym(st->lib, "nvmlDeviceGetMemoryInfo_v2");
    api->utilization = (nvml_utilization_fn)dlsym(st->lib, "nvmlDeviceGetUtilizationRates");
    api->temperature = (nvml_uint_of_fn)dlsym(st->lib, "nvmlDeviceGetTemperature");
    api->power = (nvml_uint_fn)dlsym(st->lib, "nvmlDeviceGetPowerUsage");
    api->total_energy = (nvml_ull_fn)dlsym(st->lib, "nvmlDeviceGetTotalEnergyConsumption");
    api->clock = (nvml_uint_of_fn)dlsym(st->lib, "nvmlDeviceGetClockInfo");
    /* renamed in R535; the old name stays exported by newer drivers */
    api->clock_reasons = (nvml_ull_fn)lookup(
        st->lib, NAMES("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
        &api->clock_reasons_name);
    api->error_string = (nvml_error_string_fn)dlsym(st->lib, "nvmlErrorString");

    static const struct {
        const char *name;
        size_t stride;
    } process_queries[] = {
        {"nvmlDeviceGetComputeRunningProcesses_v3", sizeof(struct sps_nvml_process_v2)},
        {"nvmlDeviceGetComputeRunningProcesses_v2", sizeof(struct sps_nvml_process_v2)},
        {"nvmlDeviceGetComputeRunningProcesses", sizeof(struct sps_nvml_process_v1)},
    };
    st->nqueries = 0;
    for (size_t i = 0; i < sizeof process_queries / sizeof process_queries[0]; i++) {
        nvml_processes_fn fn = (nvml_processes_fn)dlsym(st->lib, process_queries[i].name);
        if (fn)
            st->query[st->nqueries++] = (struct nvml_process_query){fn, process_queries[i].stride};
    }
    return 0;
}

/* The optional calls this library lacks, for the open note. */
static void note_missing_optional(const struct nvml_state *st, char *reason, size_t cap) {
    char missing[128] = "";
    const struct {
        int present;
        const char *what;
    } optional[] = {
        {st->api.utilization != NULL, "utilisation"},
        {st->api.temperature != NULL, "temperature"},
        {st->api.power != NULL, "power"},
        {st->api.total_energy != NULL, "energy"},
        {st->api.clock != NULL, "clocks"},
        {st->api.clock_reasons != NULL, "throttle reasons"},
        {st->nqueries > 0, "per-process memory"},
    };
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        if (!optional[i].present)
            append_text(missing, sizeof missing, ", ", optional[i].what);
    if (*missing) {
        char note[160];
        snprintf(note, sizeof note, "this NVML cannot read: %s", missing);
        append_text(reason, cap, "; ", note);
    }
}

/* Calls that fail this way leave one metric unavailable; the GPU itself
 * is fine and the other metrics are read. */
static int metric_unavailable(sps_nvml_return r) {
    return r == SPS_NVML_ERROR_NOT_SUPPORTED || r == SPS_NVML_ERROR_NO_PERMISSION ||
           r == SPS_NVML_ERROR_FUNCTION_NOT_FOUND;
}

/* A GPU's read so far: the first error that makes the GPU unreadable. */
struct gpu_read {
    sps_nvml_return error;
    const char *call;
};

/* Did call succeed?  Records a GPU-level error in rd. */
static int answered(struct gpu_read *rd, sps_nvml_return r, const char *call) {
    if (r == SPS_NVML_SUCCESS)
        return 1;
    if (!metric_unavailable(r) && rd->error == SPS_NVML_SUCCESS) {
        rd->error = r;
        rd->call = call;
    }
    return 0;
}

/*
 * The entry size the driver used: the bytes it wrote end where its last
 * entry ends (no layout ends in a fill byte), so the one stride for which
 * count entries end exactly there is it.  The answer settles R535 drivers
 * whose _v3 wrote 32-byte entries where the header says 24.  When the
 * driver wrote past its entries (a shim clearing the whole buffer), trust
 * the header.
 */
static size_t process_entry_stride(const unsigned char *buf, size_t cap_bytes, unsigned count, size_t declared) {
    size_t written = cap_bytes;
    while (written > 0 && buf[written - 1] == NVML_FILL_BYTE)
        written--;
    static const size_t strides[] = {sizeof(struct sps_nvml_process_v1), sizeof(struct sps_nvml_process_v2),
                                     sizeof(struct sps_nvml_process_r535)};
    for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
        if (written == (size_t)count * strides[i])
            return strides[i];
    return declared;
}

static int in_tree(const struct sps__source_ctx *ctx, unsigned pid) {
    if (ctx->in_tree)
        return ctx->in_tree(ctx->in_tree_arg, (int)pid);
    return ctx->tree_pid > 0 && (unsigned)ctx->tree_pid == pid;
}

/* Device memory of the watched tree's processes on one GPU into *bytes
 * (NAN when unknown).  Returns an NVML error only when the GPU failed. */
static sps_nvml_return workload_memory(struct nvml_state *st, sps_nvml_device device,
                                       const struct sps__source_ctx *ctx, double *bytes) {
    *bytes = NAN;
    if (ctx->tree_pid <= 0)
        return SPS_NVML_SUCCESS; /* no tree is watched */
    _Alignas(8) unsigned char stack_entries[NVML_STACK_PROCESSES * NVML_PROCESS_SLOT];
    while (st->nqueries > 0) {
        const struct nvml_process_query *q = &st->query[0];
        unsigned char *entries = stack_entries;
        unsigned capacity = NVML_STACK_PROCESSES;
        memset(entries, NVML_FILL_BYTE, sizeof stack_entries);
        unsigned count = capacity;
        sps_nvml_return r = q->fn(device, &count, entries);
        if (r == SPS_NVML_ERROR_INSUFFICIENT_SIZE && count > capacity && count <= NVML_MAX_PROCESSES) {
            /* room for processes that start between the two calls */
            capacity = count + 16;
            entries = malloc((size_t)capacity * NVML_PROCESS_SLOT);
            if (!entries)
                return SPS_NVML_SUCCESS;
            memset(entries, NVML_FILL_BYTE, (size_t)capacity * NVML_PROCESS_SLOT);
            count = capacity;
            r = q->fn(device, &count, entries);
        }
        if (r == SPS_NVML_ERROR_FUNCTION_NOT_FOUND) {
            if (entries != stack_entries)
                free(entries);
            memmove(&st->query[0], &st->query[1], (size_t)(st->nqueries - 1) * sizeof st->query[0]);
            st->nqueries--;
            continue;
        }
        if (r == SPS_NVML_SUCCESS && count <= capacity) {
            size_t stride = process_entry_stride(entries, (size_t)capacity * NVML_PROCESS_SLOT, count, q->stride);
            double sum = 0;
            for (unsigned i = 0; i < count; i++) {
                struct sps_nvml_process_v1 entry;
                memcpy(&entry, entries + (size_t)i * stride, sizeof entry);
                if (!in_tree(ctx, entry.pid))
                    continue;
                if (entry.usedGpuMemory == SPS_NVML_VALUE_NOT_AVAILABLE_ULL) {
                    sum = NAN; /* the driver does not know: neither do we */
                    break;
                }
                sum += (double)entry.usedGpuMemory;
            }
            *bytes = sum;
        }
        if (entries != stack_entries)
            free(entries);
        /* a list that outgrew the retry, or one the device cannot give,
         * leaves the metric unknown; anything else is the GPU's failure */
        if (r == SPS_NVML_SUCCESS || r == SPS_NVML_ERROR_INSUFFICIENT_SIZE || metric_unavailable(r))
            return SPS_NVML_SUCCESS;
        return r;
    }
    return SPS_NVML_SUCCESS;
}

/*
 * Memory used and total of one GPU into v.  Used is the memory processes
 * allocated, as nvidia-smi shows it: _v2's used, which leaves out what the
 * driver and firmware reserve (615 MiB on an idle H200).  v1's used is
 * total - free and counts that reservation as used, so it serves only
 * where the library lacks _v2 or the GPU refuses it (NOT_SUPPORTED, a
 * version it does not know): then, for this GPU, from that read on.
 */
static void read_memory(const struct nvml_api *api, struct nvml_gpu *g, struct gpu_read *rd,
                        double v[SPS_GPU_METRIC_COUNT]) {
    if (api->memory_v2 && !g->memory_v1_only) {
        struct sps_nvml_memory_v2 memory = {.version = SPS_NVML_MEMORY_V2_VERSION};
        sps_nvml_return r = api->memory_v2(g->handle, &memory);
        if (r == SPS_NVML_SUCCESS) {
            v[SPS_M_GPU_MEMORY_USED_BYTES] = (double)memory.used;
            v[SPS_M_GPU_MEMORY_TOTAL_BYTES] = (double)memory.total;
            return;
        }
        if (r != SPS_NVML_ERROR_NOT_SUPPORTED && r != SPS_NVML_ERROR_ARGUMENT_VERSION_MISMATCH &&
            r != SPS_NVML_ERROR_FUNCTION_NOT_FOUND) {
            answered(rd, r, "nvmlDeviceGetMemoryInfo_v2");
            return;
        }
        g->memory_v1_only = 1;
    }
    struct sps_nvml_memory memory;
    if (answered(rd, api->memory(g->handle, &memory), "nvmlDeviceGetMemoryInfo")) {
        v[SPS_M_GPU_MEMORY_USED_BYTES] = (double)memory.used;
        v[SPS_M_GPU_MEMORY_TOTAL_BYTES] = (double)memory.total;
    }
}

/* Every metric of one GPU into v (NAN where unavailable).  Returns the
 * GPU-level failure, if any (then v must not be used). */
static struct gpu_read read_gpu(struct nvml_state *st, struct nvml_gpu *g, const struct sps__source_ctx *ctx,
                                double v[SPS_GPU_METRIC_COUNT]) {
    const struct nvml_api *api = &st->api;
    struct gpu_read rd = {SPS_NVML_SUCCESS, NULL};
    for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
        v[i] = NAN;

    read_memory(api, g, &rd, v);
    struct sps_nvml_utilization utilization;
    if (!rd.error && api->utilization &&
        answered(&rd, api->utilization(g->handle, &utilization), "nvmlDeviceGetUtilizationRates")) {
        v[SPS_M_GPU_UTILIZATION_PERCENT] = utilization.gpu;
        v[SPS_M_GPU_MEMORY_UTILIZATION_PERCENT] = utilization.memory;
    }
    unsigned int value;
    if (!rd.error && api->temperature &&
        answered(&rd, api->temperature(g->handle, SPS_NVML_TEMPERATURE_GPU, &value), "nvmlDeviceGetTemperature"))
        v[SPS_M_GPU_TEMPERATURE_CELSIUS] = value;
    if (!rd.error && api->power && answered(&rd, api->power(g->handle, &value), "nvmlDeviceGetPowerUsage"))
        v[SPS_M_GPU_POWER_WATTS] = value / 1000.0; /* milliwatts */
    unsigned long long energy_mj;
    if (!rd.error && api->total_energy &&
        answered(&rd, api->total_energy(g->handle, &energy_mj), "nvmlDeviceGetTotalEnergyConsumption")) {
        if (!g->energy_started) {
            g->energy_started = 1;
        } else if (energy_mj >= g->energy_last_mj) {
            g->energy_mj += (double)(energy_mj - g->energy_last_mj);
        } /* a counter that went back (driver reloaded) counts on from its new value */
        g->energy_last_mj = energy_mj;
        v[SPS_M_GPU_ENERGY_JOULES] = g->energy_mj / 1000.0;
    }
    if (!rd.error && api->clock &&
        answered(&rd, api->clock(g->handle, SPS_NVML_CLOCK_SM, &value), "nvmlDeviceGetClockInfo"))
        v[SPS_M_GPU_SM_CLOCK_HERTZ] = value * 1e6; /* MHz */
    if (!rd.error && api->clock &&
        answered(&rd, api->clock(g->handle, SPS_NVML_CLOCK_MEM, &value), "nvmlDeviceGetClockInfo"))
        v[SPS_M_GPU_MEMORY_CLOCK_HERTZ] = value * 1e6;
    unsigned long long reasons;
    if (!rd.error && api->clock_reasons &&
        answered(&rd, api->clock_reasons(g->handle, &reasons), api->clock_reasons_name))
        v[SPS_M_GPU_THROTTLE_REASONS] = (double)reasons; /* the defined bits are far below 2^53 */
    if (!rd.error) {
        double bytes;
        sps_nvml_return r = workload_memory(st, g->handle, ctx, &bytes);
        if (answered(&rd, r, "nvmlDeviceGetComputeRunningProcesses"))
            v[SPS_M_GPU_WORKLOAD_MEMORY_BYTES] = bytes;
    }
    return rd;
}

static void close_library(struct nvml_state *st, int initialised) {
    if (initialised)
        st->api.shutdown();
    dlclose(st->lib);
    free(st);
}

static int nvml_open(const struct sps__source_ctx *ctx, void **state, char *reason, size_t cap) {
    *state = NULL;
    reason[0] = '\0';
    const char *path = ctx->nvml_path ? ctx->nvml_path : "libnvidia-ml.so.1";
    struct nvml_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    dlerror();
    st->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!st->lib) {
        const char *why = dlerror();
        if (ctx->nvml_path)
            snprintf(reason, cap, "cannot load %s: %s", path, why ? why : "unknown error");
        else
            snprintf(reason, cap, "%s not found (no NVIDIA driver): %s", path, why ? why : "unknown error");
        free(st);
        return -1;
    }
    if (resolve_api(st, reason, cap) != 0) {
        close_library(st, 0);
        return -1;
    }
    const struct nvml_api *api = &st->api;
    sps_nvml_return r = api->init();
    if (r != SPS_NVML_SUCCESS) {
        snprintf(reason, cap, "nvmlInit failed: %s", nvml_error(api, r));
        close_library(st, 0);
        return -1;
    }
    unsigned int physical = 0;
    r = api->count(&physical);
    if (r != SPS_NVML_SUCCESS) {
        snprintf(reason, cap, "nvmlDeviceGetCount failed: %s", nvml_error(api, r));
        close_library(st, 1);
        return -1;
    }
    if (physical == 0) {
        snprintf(reason, cap, "NVML finds no GPU");
        close_library(st, 1);
        return -1;
    }
    if (physical > NVML_MAX_PHYSICAL)
        physical = NVML_MAX_PHYSICAL;

    /* Every GPU's handle and UUID first: CUDA_VISIBLE_DEVICES may name
     * GPUs by UUID.  A GPU whose handle cannot be had keeps its place in
     * the numbering (its index) but is not read. */
    sps_nvml_device handles[NVML_MAX_PHYSICAL];
    sps_nvml_return handle_error[NVML_MAX_PHYSICAL];
    char uuids[NVML_MAX_PHYSICAL][SPS_NVML_UUID_BUFFER_SIZE];
    struct sps__gpu_identity found[NVML_MAX_PHYSICAL];
    for (unsigned i = 0; i < physical; i++) {
        uuids[i][0] = '\0';
        handles[i] = NULL;
        handle_error[i] = api->handle_by_index(i, &handles[i]);
        if (handle_error[i] == SPS_NVML_SUCCESS && api->uuid(handles[i], uuids[i], sizeof uuids[i]) != SPS_NVML_SUCCESS)
            uuids[i][0] = '\0';
        uuids[i][sizeof uuids[i] - 1] = '\0';
        found[i] = (struct sps__gpu_identity){(int)i, uuids[i]};
    }

    struct sps__visible_devices visible;
    sps__visible_devices_parse(ctx->cuda_visible_devices, &visible);
    int position[SPS_CAPTURE_MAX_GPUS];
    char note[128];
    int nvisible =
        sps__visible_devices_resolve(&visible, found, (int)physical, position, SPS_CAPTURE_MAX_GPUS, note, sizeof note);
    if (nvisible == 0) {
        snprintf(reason, cap, "no GPU visible (CUDA_VISIBLE_DEVICES=%.40s)%s%s",
                 ctx->cuda_visible_devices ? ctx->cuda_visible_devices : "",
                 *note ? ": " : "", note);
        close_library(st, 1);
        return -1;
    }
    append_text(reason, cap, "; ", note);

    for (int k = 0; k < nvisible; k++) {
        int p = position[k];
        if (handle_error[p] != SPS_NVML_SUCCESS) {
            char skipped[128];
            snprintf(skipped, sizeof skipped, "cuda:%d (NVML GPU %d) not read: %s", k, p,
                     nvml_error(api, handle_error[p]));
            append_text(reason, cap, "; ", skipped);
            continue;
        }
        struct nvml_gpu *g = &st->gpu[st->ngpus++];
        g->handle = handles[p];
        g->index = k;
        snprintf(g->uuid, sizeof g->uuid, "%s", uuids[p]);
        char name[SPS_NVML_NAME_BUFFER_SIZE] = "";
        if (api->name(g->handle, name, sizeof name) == SPS_NVML_SUCCESS) {
            name[sizeof name - 1] = '\0';
            snprintf(g->name, sizeof g->name, "%s", name);
        }
        /* the energy baseline: energy counts from open */
        unsigned long long energy_mj;
        if (api->total_energy && api->total_energy(g->handle, &energy_mj) == SPS_NVML_SUCCESS) {
            g->energy_started = 1;
            g->energy_last_mj = energy_mj;
        }
    }
    if (st->ngpus == 0) {
        char why[192];
        snprintf(why, sizeof why, "no visible GPU can be read: %s", reason);
        snprintf(reason, cap, "%s", why);
        close_library(st, 1);
        return -1;
    }
    note_missing_optional(st, reason, cap);
    *state = st;
    return 0;
}

static int nvml_read(void *state, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                     char *reason, size_t cap) {
    struct nvml_state *st = state;
    int failed = 0, read_any = 0;
    if (cap)
        reason[0] = '\0';
    s->ngpus = st->ngpus;
    for (int i = 0; i < st->ngpus; i++) {
        struct nvml_gpu *g = &st->gpu[i];
        struct sps__gpu_sample *out = &s->gpu[i];
        out->index = g->index;
        out->source = SPS_SOURCE_NVML;
        snprintf(out->name, sizeof out->name, "%s", g->name);
        snprintf(out->uuid, sizeof out->uuid, "%s", g->uuid);
        double v[SPS_GPU_METRIC_COUNT];
        struct gpu_read rd = read_gpu(st, g, ctx, v);
        if (rd.error != SPS_NVML_SUCCESS) {
            for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
                out->v[m] = NAN;
            if (!failed && cap)
                snprintf(reason, cap, "GPU %d (%s): %s: %s", g->index, g->uuid[0] ? g->uuid : g->name, rd.call,
                         nvml_error(&st->api, rd.error));
            failed++;
            continue;
        }
        memcpy(out->v, v, sizeof out->v);
        read_any = 1;
    }
    if (read_any)
        s->read_ns[SPS_SOURCE_NVML] = now_ns;
    if (failed > 1 && cap) {
        size_t len = strlen(reason);
        snprintf(reason + len, cap - len, " (and %d more GPUs failed)", failed - 1);
    }
    return failed ? -1 : 0;
}

static void nvml_close(void *state) {
    if (state)
        close_library(state, 1);
}

const struct sps__source sps__source_nvml = {
    SPS_SOURCE_NVML, "nvml", "NVIDIA GPUs through NVML (libnvidia-ml.so.1)", 1, 0, nvml_open, nvml_read, nvml_close,
};
