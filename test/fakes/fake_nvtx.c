/*
 * fake_nvtx.c - an NVTX injection library, as Nsight Systems'
 * libToolsInjection64.so is one, for the NVTX tests: loaded by the library
 * under test through NVTX_INJECTION64_PATH, it attaches the way a real tool
 * does and writes every range it receives to the file FAKE_NVTX_LOG names,
 * one line each, in the order they arrive:
 *
 *   init <what the client's tables looked like>
 *   domain <name>                    nvtxDomainCreateA
 *   tN dpush <message>[ payload=P]   nvtxDomainRangePushEx in that domain
 *   tN dpop                          nvtxDomainRangePop
 *   tN push <message>[ payload=P]    nvtxRangePushEx
 *   tN pusha <message>               nvtxRangePushA
 *   tN pop                           nvtxRangePop
 *   tN bad <what>                    a call it could not accept
 *
 * tN numbers the calling threads in the order they first pushed (t1 is the
 * first).  FAKE_NVTX_MODE picks what it implements, as tools differ:
 * "domain" (the default: the core calls and the domain calls), "core-ex"
 * (nvtxRangePushEx and nvtxRangePop only), "core-a" (nvtxRangePushA and
 * nvtxRangePop only), "none" (attaches, implements nothing), "refuse"
 * (InitializeInjectionNvtx2 answers 0).
 *
 * It is written from NVTX 3's published tool-side interface
 * (nvtxDetail/nvtxTypes.h, nvToolsExt.h) with the numbers spelled out
 * here, not taken from src/nvtx_abi.h, so that it checks stepscope's
 * declarations rather than sharing their mistakes: export table ids
 * (NVTX_ETID_CALLBACKS 1, NVTX_ETID_VERSIONINFO 3), modules (CORE 1 ...
 * SYNC 6), callback ids (CORE RangePushEx 8, RangePushA 9, RangePop 11;
 * CORE2 DomainRangePushEx 4, DomainRangePop 5, DomainCreateA 12) and the
 * byte offsets of nvtxEventAttributes_v2's fields (48 bytes on LP64).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*fn_ptr)(void);
typedef const void *(*get_export_table_fn)(uint32_t id);

EXPORT int InitializeInjectionNvtx2(get_export_table_fn get);

static int log_fd = -1;

static void log_line(const char *fmt, ...) {
    if (log_fd < 0)
        return; /* no FAKE_NVTX_LOG: a tool that costs next to nothing (bench_nvtx) */
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    /* one write per line on an O_APPEND file: lines from threads (and
     * processes) never interleave */
    if (write(log_fd, line, (size_t)n) != n) {
        /* nothing to do: the test reads what arrived */
    }
}

/* tN: threads numbered as they first push */
static int next_thread = 1;
static __thread int thread_no;

static int me(void) {
    if (!thread_no)
        thread_no = __atomic_fetch_add(&next_thread, 1, __ATOMIC_RELAXED);
    return thread_no;
}

/* nvtxEventAttributes_v2, read by offset: version u16 @0, size u16 @2,
 * category u32 @4, colorType i32 @8, color u32 @12, payloadType i32 @16,
 * reserved0 i32 @20, payload 8 bytes @24, messageType i32 @32 (4 bytes of
 * padding), message pointer @40; 48 bytes. */
static int read_attributes(const void *attr, const char **message, char *payload, size_t cap) {
    const unsigned char *b = attr;
    uint16_t version, size;
    int32_t color_type, payload_type, message_type;
    memcpy(&version, b + 0, 2);
    memcpy(&size, b + 2, 2);
    memcpy(&color_type, b + 8, 4);
    memcpy(&payload_type, b + 16, 4);
    memcpy(&message_type, b + 32, 4);
    memcpy(message, b + 40, sizeof *message);
    payload[0] = '\0';
    if (version != 3 || size != 48 || message_type != 1 /* ASCII */ || color_type != 1 /* ARGB */) {
        log_line("t%d bad attributes version=%u size=%u colorType=%d messageType=%d", me(), version, size,
                 color_type, message_type);
        return -1;
    }
    if (payload_type == 1) { /* NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 */
        uint64_t p;
        memcpy(&p, b + 24, 8);
        snprintf(payload, cap, " payload=%llu", (unsigned long long)p);
    } else if (payload_type != 0) {
        log_line("t%d bad payloadType=%d", me(), payload_type);
        return -1;
    }
    return 0;
}

static int push_ex(const void *attr) {
    const char *message;
    char payload[48];
    if (read_attributes(attr, &message, payload, sizeof payload) == 0)
        log_line("t%d push %s%s", me(), message, payload);
    return 0;
}

static int push_a(const char *message) {
    log_line("t%d pusha %s", me(), message);
    return 0;
}

static int pop(void) {
    log_line("t%d pop", me());
    return 0;
}

static char the_domain[64];

static void *domain_create_a(const char *name) {
    snprintf(the_domain, sizeof the_domain, "%s", name);
    log_line("domain %s", name);
    return the_domain;
}

static int domain_push_ex(void *domain, const void *attr) {
    const char *message;
    char payload[48];
    if (domain != the_domain)
        log_line("t%d bad domain", me());
    else if (read_attributes(attr, &message, payload, sizeof payload) == 0)
        log_line("t%d dpush %s%s", me(), message, payload);
    return 0;
}

static int domain_pop(void *domain) {
    if (domain != the_domain)
        log_line("t%d bad domain", me());
    else
        log_line("t%d dpop", me());
    return 0;
}

/* GetModuleFunctionTable(module, &table, &size) */
typedef int (*get_module_fn)(int module, fn_ptr ***table, unsigned int *size);

static void fill(fn_ptr **table, unsigned size, unsigned cbid, fn_ptr impl) {
    if (cbid < size && table[cbid])
        *table[cbid] = impl;
}

/* Ask for every module as a real tool does, note what the client answered,
 * and fill the slots the mode implements. */
static int attach(get_export_table_fn get, const char *mode) {
    struct callbacks {
        size_t struct_size;
        get_module_fn get_module;
    };
    struct version_info {
        size_t struct_size;
        uint32_t version;
        uint32_t reserved0;
        void (*set_injection_version)(uint32_t);
    };
    const struct callbacks *cb = get(1);
    const struct version_info *vi = get(3);
    if (!cb || cb->struct_size < sizeof *cb || !cb->get_module) {
        log_line("init bad callbacks table");
        return 0;
    }
    char seen[256];
    int at = snprintf(seen, sizeof seen, "init");
    if (vi && vi->struct_size >= sizeof *vi) {
        at += snprintf(seen + at, sizeof seen - (size_t)at, " version=%u", vi->version);
        if (vi->set_injection_version)
            vi->set_injection_version(3);
    } else {
        at += snprintf(seen + at, sizeof seen - (size_t)at, " version=?");
    }
    static const char *const names[] = {"", "core", "cuda", "opencl", "cudart", "core2", "sync"};
    fn_ptr **tables[7] = {0};
    unsigned sizes[7] = {0};
    for (int m = 1; m <= 6; m++) {
        if (!cb->get_module(m, &tables[m], &sizes[m]) || !tables[m]) {
            at += snprintf(seen + at, sizeof seen - (size_t)at, " %s=refused", names[m]);
            continue;
        }
        /* entry 0 and the entry at size are NULL */
        int ends_ok = tables[m][0] == NULL && tables[m][sizes[m]] == NULL;
        at += snprintf(seen + at, sizeof seen - (size_t)at, " %s=%u%s", names[m], sizes[m],
                       ends_ok ? "" : "(bad ends)");
    }
    fn_ptr **unknown = NULL;
    unsigned unknown_size = 0;
    at += snprintf(seen + at, sizeof seen - (size_t)at, " module7=%s",
                   cb->get_module(7, &unknown, &unknown_size) ? "answered" : "refused");
    snprintf(seen + at, sizeof seen - (size_t)at, " etid2=%s", get(2) ? "answered" : "null");
    log_line("%s", seen);

    if (strcmp(mode, "none") == 0)
        return 1;
    fn_ptr **core = tables[1], **core2 = tables[5];
    if (core && strcmp(mode, "core-a") != 0)
        fill(core, sizes[1], 8, (fn_ptr)push_ex);
    if (core && strcmp(mode, "core-ex") != 0)
        fill(core, sizes[1], 9, (fn_ptr)push_a);
    if (core)
        fill(core, sizes[1], 11, (fn_ptr)pop);
    if (core2 && strcmp(mode, "domain") == 0) {
        fill(core2, sizes[5], 4, (fn_ptr)domain_push_ex);
        fill(core2, sizes[5], 5, (fn_ptr)domain_pop);
        fill(core2, sizes[5], 12, (fn_ptr)domain_create_a);
    }
    return 1;
}

int InitializeInjectionNvtx2(get_export_table_fn get) {
    const char *path = getenv("FAKE_NVTX_LOG");
    if (path && *path)
        log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const char *mode = getenv("FAKE_NVTX_MODE");
    if (!mode || !*mode)
        mode = "domain";
    if (strcmp(mode, "refuse") == 0) {
        log_line("init refused");
        return 0;
    }
    return attach(get, mode);
}
