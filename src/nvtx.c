/*
 * nvtx.c - the client side of the NVTX v3 injection protocol (nvtx_abi.h),
 * so that a tool such as Nsight Systems sees stepscope's zones, steps and
 * GPU zones as NVTX ranges on each thread's timeline.
 *
 * stepscope does what an application built with NVIDIA's header-only NVTX
 * does at its first NVTX call, with its own tables: it loads the injection
 * library, calls InitializeInjectionNvtx2 with its export-table getter,
 * answers the tool's GetModuleFunctionTable for every module NVTX 3 defines
 * (a tool fills what it implements; stepscope calls only the range calls),
 * and then pushes and pops ranges through the slots the tool filled:
 * nvtxDomainRangePushEx/Pop in a "stepscope" domain when the tool has them
 * (Nsight shows the domain as a row of its own, apart from PyTorch's and
 * the application's ranges), else nvtxRangePushEx/Pop, else
 * nvtxRangePushA/Pop.
 */
#include "nvtx.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvtx_abi.h"
#include "record_format.h"
#include "stepscope.h"
#include "platform/env_path.h"

/* The client's function-pointer slots, per module, by callback id, and the
 * tables of pointers to them that GetModuleFunctionTable hands out: entry
 * 0 and the entry after the last id stay NULL, as in nvtxImpl.h's
 * functionTable_<module>[NVTX_CBID_<module>_SIZE + 1]. */
static const unsigned module_size[SPS_NVTX_MODULE_COUNT] = {
    [SPS_NVTX_MODULE_CORE] = SPS_NVTX_CBID_CORE_SIZE,     [SPS_NVTX_MODULE_CUDA] = SPS_NVTX_CBID_CUDA_SIZE,
    [SPS_NVTX_MODULE_OPENCL] = SPS_NVTX_CBID_OPENCL_SIZE, [SPS_NVTX_MODULE_CUDART] = SPS_NVTX_CBID_CUDART_SIZE,
    [SPS_NVTX_MODULE_CORE2] = SPS_NVTX_CBID_CORE2_SIZE,   [SPS_NVTX_MODULE_SYNC] = SPS_NVTX_CBID_SYNC_SIZE,
};
static sps_nvtx_fn slots[SPS_NVTX_MODULE_COUNT][SPS_NVTX_CBID_MAX_SIZE];
static sps_nvtx_fn *tables[SPS_NVTX_MODULE_COUNT][SPS_NVTX_CBID_MAX_SIZE + 1];

static int get_module_function_table(int module, sps_nvtx_table *table, unsigned int *size) {
    if (module <= 0 || module >= SPS_NVTX_MODULE_COUNT)
        return 0; /* a module NVTX 3 does not define: not ours to answer */
    if (table)
        *table = tables[module];
    if (size)
        *size = module_size[module];
    return 1;
}

/* The version a tool reports back: nvtxImpl.h ignores it too (it is for
 * applications to refuse a known-bad tool, which stepscope has no list of). */
static void set_injection_nvtx_version(uint32_t version) {
    (void)version;
}

static const struct sps_nvtx_callbacks_table callbacks_table = {sizeof callbacks_table, get_module_function_table};
static const struct sps_nvtx_version_table version_table = {sizeof version_table, SPS_NVTX_VERSION, 0,
                                                            set_injection_nvtx_version};

static const void *get_export_table(uint32_t id) {
    switch (id) {
    case SPS_NVTX_ETID_CALLBACKS:
        return &callbacks_table;
    case SPS_NVTX_ETID_VERSIONINFO:
        return &version_table;
    default:
        return NULL;
    }
}

/* ------------------------------------------------------------------ state */

enum nvtx_api { API_NONE, API_DOMAIN, API_PUSH_EX, API_PUSH_A };

static const char *const api_names[] = {
    [API_NONE] = "none",
    [API_DOMAIN] = "nvtxDomainRangePushEx/nvtxDomainRangePop in domain \"stepscope\"",
    [API_PUSH_EX] = "nvtxRangePushEx/nvtxRangePop",
    [API_PUSH_A] = "nvtxRangePushA/nvtxRangePop",
};

/* Written once, inside pthread_once; read after it. */
static struct {
    enum nvtx_api api;
    int requested;
    char library[512];
    char reason[320];
    sps_nvtx_domain domain;
    sps_nvtx_domain_range_push_ex domain_push;
    sps_nvtx_domain_range_pop domain_pop;
    sps_nvtx_range_push_ex push_ex;
    sps_nvtx_range_push_a push_a;
    sps_nvtx_range_pop pop;
} S;

static pthread_once_t attach_once = PTHREAD_ONCE_INIT;

static sps_nvtx_fn slot(int module, int cbid) {
    return slots[module][cbid];
}

/* Pick the calls ranges go through among what the tool filled. */
static enum nvtx_api choose_api(void) {
    sps_nvtx_domain_create_a create =
        (sps_nvtx_domain_create_a)slot(SPS_NVTX_MODULE_CORE2, SPS_NVTX_CBID_CORE2_DomainCreateA);
    S.domain_push = (sps_nvtx_domain_range_push_ex)slot(SPS_NVTX_MODULE_CORE2, SPS_NVTX_CBID_CORE2_DomainRangePushEx);
    S.domain_pop = (sps_nvtx_domain_range_pop)slot(SPS_NVTX_MODULE_CORE2, SPS_NVTX_CBID_CORE2_DomainRangePop);
    S.push_ex = (sps_nvtx_range_push_ex)slot(SPS_NVTX_MODULE_CORE, SPS_NVTX_CBID_CORE_RangePushEx);
    S.push_a = (sps_nvtx_range_push_a)slot(SPS_NVTX_MODULE_CORE, SPS_NVTX_CBID_CORE_RangePushA);
    S.pop = (sps_nvtx_range_pop)slot(SPS_NVTX_MODULE_CORE, SPS_NVTX_CBID_CORE_RangePop);
    if (create && S.domain_push && S.domain_pop) {
        S.domain = create("stepscope");
        return API_DOMAIN;
    }
    if (S.push_ex && S.pop)
        return API_PUSH_EX;
    if (S.push_a && S.pop)
        return API_PUSH_A;
    return API_NONE;
}

static void refuse(void *lib, const char *fmt, const char *detail) {
    snprintf(S.reason, sizeof S.reason, fmt, detail);
    if (lib)
        dlclose(lib);
    /* once per process: attach runs once */
    fprintf(stderr, "stepscope: %s=%s: %s; stepscope's zones will not show as NVTX ranges\n", SPS_NVTX_PATH_VAR,
            S.library, S.reason);
}

static void attach(void) {
    for (int m = 1; m < SPS_NVTX_MODULE_COUNT; m++)
        for (unsigned i = 1; i < module_size[m]; i++)
            tables[m][i] = &slots[m][i];
    const char *path = sps__env_path(SPS_NVTX_PATH_VAR);
    if (!path) {
        const char *set = getenv(SPS_NVTX_PATH_VAR); /* only to say why it is not used */
        snprintf(S.reason, sizeof S.reason, "%s unset%s", SPS_NVTX_PATH_VAR,
                 set && *set ? " (ignored: a privileged process)" : "");
        return;
    }
    S.requested = 1;
    snprintf(S.library, sizeof S.library, "%s", path);
    void *lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        refuse(NULL, "cannot load it (%s)", e ? e : "dlopen failed");
        return;
    }
    sps_nvtx_initialize_injection init;
    void *sym = dlsym(lib, SPS_NVTX_INIT_SYMBOL);
    memcpy(&init, &sym, sizeof init); /* object to function pointer, as POSIX allows */
    if (!init) {
        refuse(lib, "%s", "it has no InitializeInjectionNvtx2: not an NVTX injection library");
        return;
    }
    /* nvtxInit.h: the entry point answers 0 on failure */
    if (init(get_export_table) == 0) {
        refuse(lib, "%s", "its InitializeInjectionNvtx2 refused (returned 0)");
        return;
    }
    S.api = choose_api();
    if (S.api == API_NONE)
        refuse(NULL, "%s", "the tool implements no NVTX range push/pop (nvtxDomainRangePushEx, "
                           "nvtxRangePushEx or nvtxRangePushA with its pop)");
}

int sps__nvtx_attach(void) {
    pthread_once(&attach_once, attach);
    return S.api != API_NONE;
}

/* ----------------------------------------------------------------- ranges */

/* ARGB colours by kind, so steps stand apart from the zones inside them. */
static uint32_t kind_color(uint32_t kind) {
    switch (kind) {
    case SPS_KIND_STEP:
        return 0xFF2E7D32; /* green */
    case SPS_KIND_MICROSTEP:
        return 0xFF81C784; /* light green */
    case SPS_KIND_WAIT:
        return 0xFFE53935; /* red */
    default:
        return 0xFF1E88E5; /* blue */
    }
}

void sps__nvtx_push(const char *name, uint32_t kind, uint64_t step) {
    char numbered[SPS_REC_NAME_LEN + 24];
    const char *message = name;
    if (step != SPS_NVTX_NO_STEP) {
        snprintf(numbered, sizeof numbered, "%s %llu", name, (unsigned long long)step);
        message = numbered;
    }
    if (S.api == API_PUSH_A) {
        S.push_a(message);
        return;
    }
    struct sps_nvtx_event_attributes a;
    memset(&a, 0, sizeof a);
    a.version = SPS_NVTX_VERSION;
    a.size = (uint16_t)sizeof a;
    a.color_type = SPS_NVTX_COLOR_ARGB;
    a.color = kind_color(kind);
    if (step != SPS_NVTX_NO_STEP) {
        a.payload_type = SPS_NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        a.payload.u64 = step;
    }
    a.message_type = SPS_NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message;
    if (S.api == API_DOMAIN)
        S.domain_push(S.domain, &a);
    else if (S.api == API_PUSH_EX)
        S.push_ex(&a);
}

void sps__nvtx_pop(void) {
    if (S.api == API_DOMAIN)
        S.domain_pop(S.domain);
    else if (S.api != API_NONE)
        S.pop();
}

void sps__nvtx_status(struct sps__nvtx_status *out) {
    memset(out, 0, sizeof *out);
    out->attached = sps__nvtx_attach();
    out->requested = S.requested;
    snprintf(out->library, sizeof out->library, "%s", S.library);
    out->api = api_names[S.api];
    snprintf(out->reason, sizeof out->reason, "%s", S.reason);
}
