/*
 * nvtx_abi.h - the part of the NVTX v3 injection interface stepscope uses,
 * declared here so that nothing of NVIDIA's is needed to build: a tool
 * (Nsight Systems' libToolsInjection64.so, or any NVTX injection library)
 * names itself in NVTX_INJECTION64_PATH and is loaded at run time.
 *
 * This is the *client* side of the protocol, the side that NVTX's
 * header-only implementation (nvtxDetail/nvtxImpl.h, nvtxInit.h) plays in
 * an application that includes nvToolsExt.h:
 *
 *  1. dlopen the library named by NVTX_INJECTION64_PATH and call its
 *     `int InitializeInjectionNvtx2(get_export_table)`; 0 means the tool
 *     refused (nvtxInit.h unloads it then), anything else success;
 *  2. the tool calls get_export_table(NVTX_ETID_CALLBACKS) and, through the
 *     callbacks table's GetModuleFunctionTable(module, &table, &size), gets
 *     for each module an array of pointers to the client's function-pointer
 *     slots, indexed by callback id (entry 0 and the entry at `size` are
 *     NULL; size is the module's NVTX_CBID_*_SIZE);
 *  3. the tool stores its implementations into the slots it supports; the
 *     client calls what was stored and treats a slot left NULL as "not
 *     supported".
 *
 * Values and layouts follow NVTX 3's nvtxDetail/nvtxTypes.h (NvtxCallbackModule,
 * NvtxCallbackIdCore, NvtxCallbackIdCore2, NvtxExportTableID,
 * NvtxExportTableCallbacks, NvtxExportTableVersionInfo) and nvToolsExt.h
 * (NVTX_VERSION 3, nvtxEventAttributes_v2, nvtxColorType_t,
 * nvtxMessageType_t, nvtxPayloadType_t), as published in NVIDIA's NVTX
 * repository and vendored by e.g. JuliaLang/julia src/nvtx3/; enum values
 * there are never renumbered ("new constants must only be added directly
 * above this line").  Only types and constants live here.
 */
#ifndef SPS_NVTX_ABI_H
#define SPS_NVTX_ABI_H

#include <stddef.h>
#include <stdint.h>

/* NVTX_VERSION (nvToolsExt.h) */
#define SPS_NVTX_VERSION 3u

/* the injection library's entry point and the environment variable that
 * names it on a 64-bit process (nvtxInit.h) */
#define SPS_NVTX_INIT_SYMBOL "InitializeInjectionNvtx2"
#define SPS_NVTX_PATH_VAR "NVTX_INJECTION64_PATH"

/* NvtxExportTableID */
enum { SPS_NVTX_ETID_CALLBACKS = 1, SPS_NVTX_ETID_RESERVED0 = 2, SPS_NVTX_ETID_VERSIONINFO = 3 };

/* NvtxCallbackModule, and each module's NVTX_CBID_<module>_SIZE (one past
 * its last callback id) */
enum {
    SPS_NVTX_MODULE_CORE = 1,
    SPS_NVTX_MODULE_CUDA = 2,
    SPS_NVTX_MODULE_OPENCL = 3,
    SPS_NVTX_MODULE_CUDART = 4,
    SPS_NVTX_MODULE_CORE2 = 5,
    SPS_NVTX_MODULE_SYNC = 6,
    SPS_NVTX_MODULE_COUNT = 7 /* NVTX_CB_MODULE_SIZE */
};
enum {
    SPS_NVTX_CBID_CORE_SIZE = 16,
    SPS_NVTX_CBID_CUDA_SIZE = 9,
    SPS_NVTX_CBID_OPENCL_SIZE = 15,
    SPS_NVTX_CBID_CUDART_SIZE = 7,
    SPS_NVTX_CBID_CORE2_SIZE = 16,
    SPS_NVTX_CBID_SYNC_SIZE = 7,
    SPS_NVTX_CBID_MAX_SIZE = 16
};

/* NvtxCallbackIdCore: the slots stepscope calls */
enum {
    SPS_NVTX_CBID_CORE_RangePushEx = 8,
    SPS_NVTX_CBID_CORE_RangePushA = 9,
    SPS_NVTX_CBID_CORE_RangePop = 11
};

/* NvtxCallbackIdCore2: the slots stepscope calls */
enum {
    SPS_NVTX_CBID_CORE2_DomainRangePushEx = 4,
    SPS_NVTX_CBID_CORE2_DomainRangePop = 5,
    SPS_NVTX_CBID_CORE2_DomainCreateA = 12
};

/* nvtxColorType_t, nvtxMessageType_t, nvtxPayloadType_t */
enum { SPS_NVTX_COLOR_ARGB = 1 };
enum { SPS_NVTX_MESSAGE_TYPE_ASCII = 1 };
enum { SPS_NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 = 1 };

/* nvtxEventAttributes_v2 (nvtxEventAttributes_t): 48 bytes on LP64; its
 * size goes in `size` (NVTX_EVENT_ATTRIB_STRUCT_SIZE). */
struct sps_nvtx_event_attributes {
    uint16_t version;     /* SPS_NVTX_VERSION */
    uint16_t size;        /* sizeof this struct */
    uint32_t category;
    int32_t color_type;   /* nvtxColorType_t */
    uint32_t color;       /* ARGB */
    int32_t payload_type; /* nvtxPayloadType_t */
    int32_t reserved0;
    union {
        uint64_t u64;
        int64_t i64;
        double d;
    } payload;
    int32_t message_type; /* nvtxMessageType_t */
    union {
        const char *ascii;
        const void *other; /* wchar_t* or a registered string handle */
    } message;
};

/* An opaque domain handle (nvtxDomainHandle_t). */
typedef struct sps_nvtx_domain_st *sps_nvtx_domain;

/* NvtxFunctionPointer and NvtxFunctionTable: a module's table is an array
 * of pointers to the client's slots, each a generic function pointer the
 * tool overwrites with its implementation. */
typedef void (*sps_nvtx_fn)(void);
typedef sps_nvtx_fn **sps_nvtx_table;

/* The implementations' types, for the slots stepscope calls. */
typedef int (*sps_nvtx_range_push_a)(const char *message);
typedef int (*sps_nvtx_range_push_ex)(const struct sps_nvtx_event_attributes *attr);
typedef int (*sps_nvtx_range_pop)(void);
typedef sps_nvtx_domain (*sps_nvtx_domain_create_a)(const char *name);
typedef int (*sps_nvtx_domain_range_push_ex)(sps_nvtx_domain domain, const struct sps_nvtx_event_attributes *attr);
typedef int (*sps_nvtx_domain_range_pop)(sps_nvtx_domain domain);

/* NvtxExportTableCallbacks: GetModuleFunctionTable answers 1 and fills
 * *table and *size for a module the client has, 0 for one it does not. */
struct sps_nvtx_callbacks_table {
    size_t struct_size;
    int (*get_module_function_table)(int module, sps_nvtx_table *table, unsigned int *size);
};

/* NvtxExportTableVersionInfo */
struct sps_nvtx_version_table {
    size_t struct_size;
    uint32_t version; /* SPS_NVTX_VERSION: the client's NVTX API version */
    uint32_t reserved0;
    void (*set_injection_nvtx_version)(uint32_t version);
};

typedef const void *(*sps_nvtx_get_export_table)(uint32_t id);
typedef int (*sps_nvtx_initialize_injection)(sps_nvtx_get_export_table get);

#endif /* SPS_NVTX_ABI_H */
