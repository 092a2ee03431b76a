/* test_source_nvml.c - the nvml source against the fake NVML libraries the
 * suite builds (one per driver generation), and CUDA_VISIBLE_DEVICES as
 * visible_devices.c reads it. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gpu/visible_devices.h"
#include "sources/source.h"

#ifndef FAKE_NVML_PATH
#error "FAKE_NVML_PATH must name the fake NVML library"
#endif

#define GIB (1024.0 * 1024.0 * 1024.0)
/* what the fake's GPUs reserve for the driver: v1's used includes it */
#define RESERVED (615.0 * 1024.0 * 1024.0)

static const char *const fake_env[] = {
    "FAKE_NVML_GPUS",      "FAKE_NVML_INIT_FAIL", "FAKE_NVML_FAIL_AFTER",  "FAKE_NVML_FAIL_COUNT",
    "FAKE_NVML_FAIL_GPU",  "FAKE_NVML_PROCS",     "FAKE_NVML_UUIDS",       "FAKE_NVML_NOT_SUPPORTED",
    "FAKE_NVML_V3_STRIDE", "FAKE_NVML_V3_WITHDRAWN", "FAKE_NVML_NO_HANDLE", "FAKE_NVML_MEMORY_V2_VERSION",
};

static void reset_env(void) {
    for (size_t i = 0; i < sizeof fake_env / sizeof fake_env[0]; i++)
        unsetenv(fake_env[i]);
}

static struct sps__source_ctx ctx_for(const char *library) {
    struct sps__source_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.root = "";
    ctx.nvml_path = library;
    return ctx;
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int library_loaded(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

/* The fake's call counts, read through a handle of our own (the same
 * loaded object the source opened). */
struct fake_handle {
    void *lib;
    unsigned (*calls)(const char *name);
    void (*reset)(void);
};

static struct fake_handle fake_hold(const char *path) {
    struct fake_handle f = {dlopen(path, RTLD_NOW | RTLD_LOCAL), NULL, NULL};
    if (!f.lib) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        exit(99);
    }
    f.calls = (unsigned (*)(const char *))dlsym(f.lib, "fake_nvml_calls");
    f.reset = (void (*)(void))dlsym(f.lib, "fake_nvml_reset");
    if (!f.calls || !f.reset) {
        fprintf(stderr, "%s is not the fake NVML\n", path);
        exit(99);
    }
    f.reset();
    return f;
}

static void fake_release(struct fake_handle *f) {
    dlclose(f->lib);
}

/* Open with ctx, failing the check (and returning NULL) when it does not. */
static void *open_ok(const struct sps__source_ctx *ctx, char *reason, size_t cap) {
    void *state = NULL;
    int rc = sps__source_nvml.open(ctx, &state, reason, cap);
    CHECK_MSG(rc == 0, "nvml open failed: %s", reason);
    return rc == 0 ? state : NULL;
}

/* ------------------------------------------------- CUDA_VISIBLE_DEVICES */

static void test_visible_devices_parse(void) {
    struct sps__visible_devices vd;
    sps__visible_devices_parse(NULL, &vd);
    CHECK(vd.all == 1);
    CHECK_EQ_I(vd.count, 0);

    sps__visible_devices_parse("", &vd);
    CHECK(vd.all == 0);
    CHECK_EQ_I(vd.count, 0);
    CHECK_STR_HAS(vd.note, "empty");

    sps__visible_devices_parse("-1", &vd);
    CHECK_EQ_I(vd.count, 0);
    CHECK_STR_HAS(vd.note, "\"-1\"");

    sps__visible_devices_parse(" 3 , 0,GPU-1a2b ", &vd);
    CHECK_EQ_I(vd.count, 3);
    CHECK(vd.entry[0].kind == SPS__SELECT_INDEX && vd.entry[0].index == 3);
    CHECK(vd.entry[1].kind == SPS__SELECT_INDEX && vd.entry[1].index == 0);
    CHECK(vd.entry[2].kind == SPS__SELECT_UUID && strcmp(vd.entry[2].text, "GPU-1a2b") == 0);
    CHECK_EQ_I(vd.note[0], 0);

    /* CUDA stops at the first entry it cannot use */
    sps__visible_devices_parse("1,cuda0,2", &vd);
    CHECK_EQ_I(vd.count, 1);
    CHECK_STR_HAS(vd.note, "\"cuda0\"");
    sps__visible_devices_parse("0,,1", &vd);
    CHECK_EQ_I(vd.count, 1);
    sps__visible_devices_parse("2,MIG-GPU-5c1e/1/0,1", &vd);
    CHECK_EQ_I(vd.count, 2);
    CHECK(vd.entry[1].kind == SPS__SELECT_UNSUPPORTED);
}

static void test_visible_devices_resolve(void) {
    const struct sps__gpu_identity found[] = {
        {0, "GPU-aa11-0000"},
        {1, "GPU-ab22-1111"},
        {2, "GPU-b333-2222"},
    };
    struct sps__visible_devices vd;
    int pos[16];
    char note[128];

    sps__visible_devices_parse(NULL, &vd);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 3);
    CHECK(pos[0] == 0 && pos[1] == 1 && pos[2] == 2);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 2, note, sizeof note), 2);

    sps__visible_devices_parse("2,0", &vd);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 2);
    CHECK(pos[0] == 2 && pos[1] == 0);
    CHECK_EQ_I(note[0], 0);

    /* a unique UUID prefix, in any case */
    sps__visible_devices_parse("GPU-AB,GPU-b333-2222", &vd);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 2);
    CHECK(pos[0] == 1 && pos[1] == 2);

    sps__visible_devices_parse("2,GPU-a,0", &vd); /* two GPUs start GPU-a */
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 1);
    CHECK_STR_HAS(note, "more than one");
    sps__visible_devices_parse("GPU-c,0", &vd);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 0);
    CHECK_STR_HAS(note, "matches no GPU");

    sps__visible_devices_parse("0,7,1", &vd);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 1);
    CHECK_STR_HAS(note, "no GPU has index 7");

    sps__visible_devices_parse("1,GPU-ab22,0", &vd); /* GPU 1 twice */
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 1);
    CHECK_STR_HAS(note, "already listed");

    sps__visible_devices_parse("1,MIG-4f2e,0", &vd);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 1);
    CHECK_STR_HAS(note, "MIG");

    sps__visible_devices_parse("1,x", &vd);
    CHECK_EQ_I(sps__visible_devices_resolve(&vd, found, 3, pos, 16, note, sizeof note), 1);
    CHECK_STR_HAS(note, "\"x\"");
}

/* --------------------------------------------------------------- nvml */

/* What nvmlDeviceGetMemoryInfo_v2 gave, or where the library lacks it,
 * what only v1 can give (used = total - free: the reservation too). */
enum memory_call { MEMORY_V2, MEMORY_V1 };

/* The fake's readings for its GPU i (see fake_nvml.c). */
static void check_gpu_values(const struct sps__gpu_sample *g, int i, int with_energy_and_reasons,
                             enum memory_call memory) {
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_USED_BYTES], (i + 1) * GIB + (memory == MEMORY_V1 ? RESERVED : 0), 0);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_TOTAL_BYTES], 80 * GIB, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_UTILIZATION_PERCENT], 10 * (i + 1), 0);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_UTILIZATION_PERCENT], 5 * (i + 1), 0);
    CHECK_NEAR(g->v[SPS_M_GPU_TEMPERATURE_CELSIUS], 40 + i, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_POWER_WATTS], (100000 + i) / 1000.0, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_SM_CLOCK_HERTZ], (1410 + i) * 1e6, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_CLOCK_HERTZ], 2619e6, 0);
    if (with_energy_and_reasons) {
        CHECK_NEAR(g->v[SPS_M_GPU_THROTTLE_REASONS], (double)(1u << i), 0);
    } else {
        CHECK(isnan(g->v[SPS_M_GPU_ENERGY_JOULES]));
        CHECK(isnan(g->v[SPS_M_GPU_THROTTLE_REASONS]));
    }
}

static void test_nvml_values(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "2", 1);
    struct fake_handle fake = fake_hold(FAKE_NVML_PATH);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
    char reason[192];
    void *state = open_ok(&ctx, reason, sizeof reason);
    if (!state) {
        fake_release(&fake);
        return;
    }
    CHECK_EQ_I(reason[0], 0); /* every optional call present: nothing to note */
    struct sps__sample s;
    sps__sample_clear(&s);
    CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 12345, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 2);
    CHECK_EQ_I(s.read_ns[SPS_SOURCE_NVML], 12345);
    for (int i = 0; i < 2; i++) {
        const struct sps__gpu_sample *g = &s.gpu[i];
        char name[64], uuid[96];
        snprintf(name, sizeof name, "Fake NVIDIA GPU %d", i);
        snprintf(uuid, sizeof uuid, "GPU-%x1234567-89ab-4cde-8f01-23456789abc%x", i, i);
        CHECK_EQ_I(g->index, i);
        CHECK_EQ_I(g->source, SPS_SOURCE_NVML);
        CHECK_MSG(strcmp(g->name, name) == 0, "name %s", g->name);
        CHECK_MSG(strcmp(g->uuid, uuid) == 0, "uuid %s", g->uuid);
        check_gpu_values(g, i, 1, MEMORY_V2);
        /* the counter advanced 1500 mJ since the baseline open() took */
        CHECK_NEAR(g->v[SPS_M_GPU_ENERGY_JOULES], 1.5, 0);
        /* no process tree watched: nothing to attribute */
        CHECK(isnan(g->v[SPS_M_GPU_WORKLOAD_MEMORY_BYTES]));
    }
    CHECK_EQ_U(s.gpu[2].index, 0); /* untouched beyond ngpus */
    sps__sample_clear(&s);
    CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 23456, reason, sizeof reason), 0);
    CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_ENERGY_JOULES], 3.0, 0);
    CHECK_NEAR(s.gpu[1].v[SPS_M_GPU_ENERGY_JOULES], 3.0, 0);

    /* the current entry points, not their older names */
    CHECK_EQ_U(fake.calls("nvmlInit_v2"), 1);
    CHECK_EQ_U(fake.calls("nvmlInit"), 0);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetCount_v2"), 1);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetCount"), 0);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetHandleByIndex_v2"), 2);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetHandleByIndex"), 0);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetCurrentClocksEventReasons"), 4);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 0);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetMemoryInfo_v2"), 4);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetMemoryInfo"), 0);
    CHECK_EQ_U(fake.calls("nvmlShutdown"), 0);
    sps__source_nvml.close(state);
    CHECK_EQ_U(fake.calls("nvmlShutdown"), 1);
    fake_release(&fake);
    CHECK(!library_loaded(FAKE_NVML_PATH));
}

/* An R470-R510 era library: _v2 processes, throttle reasons by their old name. */
static void test_nvml_older_entry_points(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_PROCS", "4242:1000000", 1);
    struct fake_handle fake = fake_hold(FAKE_NVML_OLDER_PATH);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_OLDER_PATH);
    ctx.tree_pid = 4242;
    char reason[192];
    void *state = open_ok(&ctx, reason, sizeof reason);
    if (state) {
        CHECK_EQ_I(reason[0], 0);
        struct sps__sample s;
        sps__sample_clear(&s);
        CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
        check_gpu_values(&s.gpu[0], 0, 1, MEMORY_V1); /* no _v2 in this library */
        CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_ENERGY_JOULES], 1.5, 0);
        CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_WORKLOAD_MEMORY_BYTES], 1000000, 0);
        CHECK_EQ_U(fake.calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 1);
        CHECK_EQ_U(fake.calls("nvmlDeviceGetComputeRunningProcesses_v2"), 1);
        CHECK_EQ_U(fake.calls("nvmlDeviceGetComputeRunningProcesses"), 0);
        sps__source_nvml.close(state);
    }
    fake_release(&fake);
}

/* A library with only the unversioned entry points, no energy counter and
 * no throttle reasons: those two are NAN, everything else reads. */
static void test_nvml_legacy_library(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_PROCS", "100:1000,200:2000,300:4000", 1);
    struct fake_handle fake = fake_hold(FAKE_NVML_LEGACY_PATH);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_LEGACY_PATH);
    ctx.tree_pid = 300;
    char reason[192];
    void *state = open_ok(&ctx, reason, sizeof reason);
    if (state) {
        CHECK_STR_HAS(reason, "cannot read: energy, throttle reasons");
        struct sps__sample s;
        sps__sample_clear(&s);
        CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
        CHECK_EQ_I(s.ngpus, 2);
        for (int i = 0; i < 2; i++) {
            check_gpu_values(&s.gpu[i], i, 0, MEMORY_V1);
            /* 16-byte v1 entries: the third one is pid 300's */
            CHECK_NEAR(s.gpu[i].v[SPS_M_GPU_WORKLOAD_MEMORY_BYTES], 4000, 0);
        }
        CHECK_EQ_U(fake.calls("nvmlInit"), 1);
        CHECK_EQ_U(fake.calls("nvmlDeviceGetCount"), 1);
        CHECK_EQ_U(fake.calls("nvmlDeviceGetHandleByIndex"), 2);
        CHECK_EQ_U(fake.calls("nvmlDeviceGetComputeRunningProcesses"), 2);
        sps__source_nvml.close(state);
        CHECK_EQ_U(fake.calls("nvmlShutdown"), 1);
    }
    fake_release(&fake);
}

static void test_nvml_missing_required_symbol(void) {
    reset_env();
    int fds = count_fds();
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_NO_MEMORY_INFO_PATH);
    void *state = (void *)&ctx;
    char reason[192];
    CHECK(sps__source_nvml.open(&ctx, &state, reason, sizeof reason) < 0);
    CHECK(state == NULL);
    CHECK_MSG(strcmp(reason, "missing required symbol nvmlDeviceGetMemoryInfo") == 0, "reason: %s", reason);
    CHECK(!library_loaded(FAKE_NVML_NO_MEMORY_INFO_PATH));
    CHECK_EQ_I(count_fds(), fds);
}

static void test_nvml_init_failure(void) {
    reset_env();
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
    void *state = (void *)&ctx;
    char reason[192];
    CHECK(sps__source_nvml.open(&ctx, &state, reason, sizeof reason) < 0);
    CHECK(state == NULL);
    CHECK_MSG(strcmp(reason, "nvmlInit failed: Driver Not Loaded") == 0, "reason: %s", reason);
    CHECK(!library_loaded(FAKE_NVML_PATH)); /* dlclosed: nothing left behind */
    reset_env();
}

static void test_nvml_missing_library(void) {
    reset_env();
    struct sps__source_ctx ctx = ctx_for("/nonexistent/libnvidia-ml.so.1");
    void *state = NULL;
    char reason[192];
    CHECK(sps__source_nvml.open(&ctx, &state, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "cannot load /nonexistent/libnvidia-ml.so.1: ");
    CHECK(state == NULL);

    /* This machine's own NVML: on one without an NVIDIA driver the reason
     * says so; on one with a GPU, it reads. */
    ctx = ctx_for(NULL);
    ctx.cuda_visible_devices = getenv("CUDA_VISIBLE_DEVICES");
    int rc = sps__source_nvml.open(&ctx, &state, reason, sizeof reason);
    if (rc < 0) {
        CHECK(reason[0] != '\0');
        fprintf(stderr, "     (this machine: nvml unavailable: %s)\n", reason);
        if (strstr(reason, "not found"))
            CHECK_STR_HAS(reason, "libnvidia-ml.so.1 not found (no NVIDIA driver): ");
    } else {
        struct sps__sample s;
        sps__sample_clear(&s);
        int read_rc = sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason);
        CHECK_MSG(read_rc == 0, "read: %s", reason);
        CHECK(s.ngpus >= 1);
        CHECK(s.gpu[0].v[SPS_M_GPU_MEMORY_TOTAL_BYTES] > 0);
        fprintf(stderr, "     (this machine: %d GPU(s), gpu 0 %s, %.0f of %.0f bytes used)\n", s.ngpus,
                s.gpu[0].name, s.gpu[0].v[SPS_M_GPU_MEMORY_USED_BYTES], s.gpu[0].v[SPS_M_GPU_MEMORY_TOTAL_BYTES]);
        sps__source_nvml.close(state);
    }
}

static void test_nvml_cuda_visible_devices(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "3", 1);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
    struct sps__sample s;
    char reason[192];
    void *state;

    /* by index, in the variable's order: the workload's cuda:0 is GPU 2 */
    ctx.cuda_visible_devices = "2,0";
    if ((state = open_ok(&ctx, reason, sizeof reason)) != NULL) {
        sps__sample_clear(&s);
        CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
        CHECK_EQ_I(s.ngpus, 2);
        CHECK_EQ_I(s.gpu[0].index, 0);
        CHECK_STR_HAS(s.gpu[0].name, "GPU 2");
        CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_MEMORY_USED_BYTES], 3 * GIB, 0);
        CHECK_EQ_I(s.gpu[1].index, 1);
        CHECK_STR_HAS(s.gpu[1].name, "GPU 0");
        CHECK_NEAR(s.gpu[1].v[SPS_M_GPU_MEMORY_USED_BYTES], 1 * GIB, 0);
        sps__source_nvml.close(state);
    }

    /* by UUID prefix */
    ctx.cuda_visible_devices = "GPU-11234";
    if ((state = open_ok(&ctx, reason, sizeof reason)) != NULL) {
        sps__sample_clear(&s);
        CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
        CHECK_EQ_I(s.ngpus, 1);
        CHECK_EQ_I(s.gpu[0].index, 0);
        CHECK(strcmp(s.gpu[0].uuid, "GPU-11234567-89ab-4cde-8f01-23456789abc1") == 0);
        CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_MEMORY_USED_BYTES], 2 * GIB, 0);
        sps__source_nvml.close(state);
    }

    /* given UUIDs, matched in full */
    setenv("FAKE_NVML_UUIDS", "GPU-deadbeef-0,GPU-cafef00d-1,GPU-0ddba11-2", 1);
    ctx.cuda_visible_devices = "GPU-cafef00d-1,GPU-deadbeef-0";
    if ((state = open_ok(&ctx, reason, sizeof reason)) != NULL) {
        sps__sample_clear(&s);
        CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
        CHECK_EQ_I(s.ngpus, 2);
        CHECK(strcmp(s.gpu[0].uuid, "GPU-cafef00d-1") == 0);
        CHECK(strcmp(s.gpu[1].uuid, "GPU-deadbeef-0") == 0);
        sps__source_nvml.close(state);
    }
    unsetenv("FAKE_NVML_UUIDS");

    /* the list ends at an invalid entry; the open note says so */
    ctx.cuda_visible_devices = "1,bogus,0";
    if ((state = open_ok(&ctx, reason, sizeof reason)) != NULL) {
        CHECK_STR_HAS(reason, "\"bogus\"");
        sps__sample_clear(&s);
        CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
        CHECK_EQ_I(s.ngpus, 1);
        CHECK_STR_HAS(s.gpu[0].name, "GPU 1");
        sps__source_nvml.close(state);
    }

    /* nothing visible: unavailable, and the library is released */
    const char *none[] = {"", "-1", "7", "MIG-GPU-01234567/1/0"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        ctx.cuda_visible_devices = none[i];
        state = (void *)&ctx;
        CHECK(sps__source_nvml.open(&ctx, &state, reason, sizeof reason) < 0);
        CHECK(state == NULL);
        char expect[96];
        snprintf(expect, sizeof expect, "no GPU visible (CUDA_VISIBLE_DEVICES=%s)", none[i]);
        CHECK_STR_HAS(reason, expect);
        CHECK(!library_loaded(FAKE_NVML_PATH));
    }
    CHECK_STR_HAS(reason, "MIG");
}

/* A GPU lost before open: the others are read, and keep their numbers. */
static void test_nvml_gpu_lost_at_open(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NO_HANDLE", "0", 1);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
    char reason[192];
    void *state = open_ok(&ctx, reason, sizeof reason);
    if (state) {
        CHECK_MSG(strcmp(reason, "cuda:0 (NVML GPU 0) not read: GPU is lost") == 0, "reason: %s", reason);
        struct sps__sample s;
        sps__sample_clear(&s);
        CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
        CHECK_EQ_I(s.ngpus, 1);
        CHECK_EQ_I(s.gpu[0].index, 1); /* still the workload's cuda:1 */
        check_gpu_values(&s.gpu[0], 1, 1, MEMORY_V2);
        sps__source_nvml.close(state);
    }
    setenv("FAKE_NVML_GPUS", "1", 1);
    state = (void *)&ctx;
    CHECK(sps__source_nvml.open(&ctx, &state, reason, sizeof reason) < 0);
    CHECK(state == NULL);
    CHECK_MSG(strcmp(reason, "no visible GPU can be read: cuda:0 (NVML GPU 0) not read: GPU is lost") == 0,
              "reason: %s", reason);
    CHECK(!library_loaded(FAKE_NVML_PATH));
}

/* GPU 1 is lost at the second read, and back at the third. */
static void test_nvml_error_mid_run(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_FAIL_AFTER", "1", 1);
    setenv("FAKE_NVML_FAIL_COUNT", "1", 1);
    setenv("FAKE_NVML_FAIL_GPU", "1", 1);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
    char reason[192];
    void *state = open_ok(&ctx, reason, sizeof reason);
    if (!state)
        return;
    struct sps__sample s;
    sps__sample_clear(&s);
    CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
    check_gpu_values(&s.gpu[1], 1, 1, MEMORY_V2);

    sps__sample_clear(&s);
    reason[0] = '\0';
    CHECK(sps__source_nvml.read(state, &ctx, &s, 2, reason, sizeof reason) < 0);
    CHECK_MSG(strcmp(reason, "GPU 1 (GPU-11234567-89ab-4cde-8f01-23456789abc1): nvmlDeviceGetMemoryInfo_v2: GPU is lost") ==
                  0,
              "reason: %s", reason);
    CHECK_EQ_I(s.ngpus, 2);
    CHECK_EQ_I(s.read_ns[SPS_SOURCE_NVML], 2); /* GPU 0 was read */
    check_gpu_values(&s.gpu[0], 0, 1, MEMORY_V2);
    CHECK_EQ_I(s.gpu[1].index, 1);
    CHECK_STR_HAS(s.gpu[1].name, "GPU 1");
    int nan_slots = 0;
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++)
        nan_slots += isnan(s.gpu[1].v[m]) != 0;
    CHECK_EQ_I(nan_slots, SPS_GPU_METRIC_COUNT);

    /* the next read tries again, and the GPU is back */
    sps__sample_clear(&s);
    CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 3, reason, sizeof reason), 0);
    check_gpu_values(&s.gpu[1], 1, 1, MEMORY_V2);
    /* energy counts on from the last good reading: two more calls' worth */
    CHECK_NEAR(s.gpu[1].v[SPS_M_GPU_ENERGY_JOULES], 3.0, 0);
    sps__source_nvml.close(state);

    /* every GPU lost from the start: each read fails and says how many */
    setenv("FAKE_NVML_FAIL_AFTER", "0", 1);
    unsetenv("FAKE_NVML_FAIL_COUNT");
    unsetenv("FAKE_NVML_FAIL_GPU");
    if ((state = open_ok(&ctx, reason, sizeof reason)) != NULL) {
        for (int r = 0; r < 2; r++) {
            sps__sample_clear(&s);
            CHECK(sps__source_nvml.read(state, &ctx, &s, 5, reason, sizeof reason) < 0);
            CHECK_STR_HAS(reason, "GPU 0 (");
            CHECK_STR_HAS(reason, "GPU is lost (and 1 more GPUs failed)");
            CHECK_EQ_I(s.read_ns[SPS_SOURCE_NVML], 0);
            CHECK(isnan(s.gpu[0].v[SPS_M_GPU_MEMORY_TOTAL_BYTES]));
        }
        sps__source_nvml.close(state);
    }
}

static int tree_of_100_and_300(void *arg, int pid) {
    (*(int *)arg)++;
    return pid == 100 || pid == 300;
}

static int odd_pids(void *arg, int pid) {
    (void)arg;
    return pid % 2 == 1;
}

static double read_workload_memory(const struct sps__source_ctx *ctx, int gpu) {
    char reason[192];
    void *state = open_ok(ctx, reason, sizeof reason);
    if (!state)
        return -1;
    struct sps__sample s;
    sps__sample_clear(&s);
    int rc = sps__source_nvml.read(state, ctx, &s, 1, reason, sizeof reason);
    CHECK_MSG(rc == 0, "read: %s", reason);
    sps__source_nvml.close(state);
    return s.gpu[gpu].v[SPS_M_GPU_WORKLOAD_MEMORY_BYTES];
}

static void test_nvml_workload_memory(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_PROCS", "100:1000,200:20000,300:300000", 1);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);

    /* only the tree's own processes count, on every GPU */
    int asked = 0;
    ctx.tree_pid = 100;
    ctx.in_tree = tree_of_100_and_300;
    ctx.in_tree_arg = &asked;
    CHECK_NEAR(read_workload_memory(&ctx, 0), 301000, 0);
    CHECK_NEAR(read_workload_memory(&ctx, 1), 301000, 0);
    CHECK(asked >= 6);

    /* no callback: the tree's root alone */
    ctx.in_tree = NULL;
    ctx.tree_pid = 200;
    CHECK_NEAR(read_workload_memory(&ctx, 0), 20000, 0);
    ctx.tree_pid = 999;
    CHECK_NEAR(read_workload_memory(&ctx, 0), 0, 0);
    /* no tree at all: unknown, not 0 */
    ctx.tree_pid = 0;
    ctx.in_tree = tree_of_100_and_300;
    CHECK(isnan(read_workload_memory(&ctx, 0)));
    ctx.in_tree = NULL;

    /* the R535 drivers whose _v3 wrote 32-byte entries */
    setenv("FAKE_NVML_V3_STRIDE", "32", 1);
    ctx.tree_pid = 300;
    CHECK_NEAR(read_workload_memory(&ctx, 1), 300000, 0);
    unsetenv("FAKE_NVML_V3_STRIDE");

    /* a _v3 that is exported but withdrawn: _v2 answers instead */
    setenv("FAKE_NVML_V3_WITHDRAWN", "1", 1);
    struct fake_handle fake = fake_hold(FAKE_NVML_PATH);
    CHECK_NEAR(read_workload_memory(&ctx, 0), 300000, 0);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 1);
    CHECK_EQ_U(fake.calls("nvmlDeviceGetComputeRunningProcesses_v2"), 2);
    fake_release(&fake);
    unsetenv("FAKE_NVML_V3_WITHDRAWN");

    /* more processes than the first buffer holds (64): one retry with
     * room for them all, and an exact sum */
    char procs[4096] = "";
    double odd_bytes = 0;
    for (int p = 1; p <= 100; p++) {
        size_t len = strlen(procs);
        snprintf(procs + len, sizeof procs - len, "%s%d:%d", p > 1 ? "," : "", 1000 + p, p * 1000);
        if (p % 2)
            odd_bytes += p * 1000;
    }
    setenv("FAKE_NVML_PROCS", procs, 1);
    ctx.in_tree = odd_pids;
    ctx.in_tree_arg = NULL;
    fake = fake_hold(FAKE_NVML_PATH);
    CHECK_NEAR(read_workload_memory(&ctx, 1), odd_bytes, 0);
    /* per GPU: one call answered "insufficient size", one with the list */
    CHECK_EQ_U(fake.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 4);
    fake_release(&fake);
    ctx.in_tree = NULL;

    /* the driver cannot attribute memory (NVML_VALUE_NOT_AVAILABLE) */
    setenv("FAKE_NVML_PROCS", "100:18446744073709551615,300:5", 1);
    ctx.tree_pid = 100;
    CHECK(isnan(read_workload_memory(&ctx, 0)));
    ctx.tree_pid = 300;
    CHECK_NEAR(read_workload_memory(&ctx, 0), 5, 0);

    /* no process query on this device */
    setenv("FAKE_NVML_NOT_SUPPORTED", "processes", 1);
    CHECK(isnan(read_workload_memory(&ctx, 0)));

    /* no tree watched at all */
    unsetenv("FAKE_NVML_NOT_SUPPORTED");
    ctx.tree_pid = 0;
    CHECK(isnan(read_workload_memory(&ctx, 0)));
}

/* Calls the device answers with NVML_ERROR_NOT_SUPPORTED leave their metric
 * NAN; the read still succeeds. */
static void test_nvml_not_supported(void) {
    reset_env();
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_NOT_SUPPORTED", "power,temperature,energy,reasons", 1);
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
    char reason[192];
    void *state = open_ok(&ctx, reason, sizeof reason);
    if (!state)
        return;
    struct sps__sample s;
    sps__sample_clear(&s);
    CHECK_EQ_I(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason), 0);
    const double *v = s.gpu[0].v;
    CHECK(isnan(v[SPS_M_GPU_POWER_WATTS]));
    CHECK(isnan(v[SPS_M_GPU_TEMPERATURE_CELSIUS]));
    CHECK(isnan(v[SPS_M_GPU_ENERGY_JOULES]));
    CHECK(isnan(v[SPS_M_GPU_THROTTLE_REASONS]));
    CHECK_NEAR(v[SPS_M_GPU_MEMORY_USED_BYTES], GIB, 0);
    CHECK_NEAR(v[SPS_M_GPU_UTILIZATION_PERCENT], 10, 0);
    CHECK_NEAR(v[SPS_M_GPU_SM_CLOCK_HERTZ], 1410e6, 0);
    sps__source_nvml.close(state);
}

/* Memory used as nvidia-smi shows it: _v2's used, without the driver's
 * reservation (on an H200 v1 said 1588 MiB where nvidia-smi said 973).
 * A GPU that refuses _v2 (not supported, or a struct version this driver
 * does not know) is read with v1 from then on, and that is no error. */
static void test_nvml_memory_v2_and_its_fallback(void) {
    static const struct {
        const char *var, *value;
        enum memory_call expect;
        unsigned v2_calls, v1_calls; /* over two reads of one GPU */
    } cases[] = {
        {NULL, NULL, MEMORY_V2, 2, 0},
        {"FAKE_NVML_NOT_SUPPORTED", "memory_v2", MEMORY_V1, 1, 2},
        {"FAKE_NVML_MEMORY_V2_VERSION", "33554472" /* 40 bytes | 2 << 24: the one we send */, MEMORY_V2, 2, 0},
        {"FAKE_NVML_MEMORY_V2_VERSION", "50331696" /* 48 bytes | 3 << 24: a driver that knows only v3 */,
         MEMORY_V1, 1, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        reset_env();
        setenv("FAKE_NVML_GPUS", "1", 1);
        if (cases[c].var)
            setenv(cases[c].var, cases[c].value, 1);
        struct fake_handle fake = fake_hold(FAKE_NVML_PATH);
        struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
        char reason[192];
        void *state = open_ok(&ctx, reason, sizeof reason);
        if (!state) {
            fake_release(&fake);
            continue;
        }
        for (int read = 0; read < 2; read++) {
            struct sps__sample s;
            sps__sample_clear(&s);
            CHECK_MSG(sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason) == 0, "case %zu: %s", c,
                      reason);
            check_gpu_values(&s.gpu[0], 0, 1, cases[c].expect);
        }
        CHECK_MSG(fake.calls("nvmlDeviceGetMemoryInfo_v2") == cases[c].v2_calls, "case %zu: %u _v2 calls", c,
                  fake.calls("nvmlDeviceGetMemoryInfo_v2"));
        CHECK_MSG(fake.calls("nvmlDeviceGetMemoryInfo") == cases[c].v1_calls, "case %zu: %u v1 calls", c,
                  fake.calls("nvmlDeviceGetMemoryInfo"));
        sps__source_nvml.close(state);
        fake_release(&fake);
    }
}

/* Open and close many times: no descriptor, mapping or init count left. */
static void test_nvml_open_close_cycles(void) {
    reset_env();
    int fds = count_fds();
    struct sps__source_ctx ctx = ctx_for(FAKE_NVML_PATH);
    char reason[192];
    for (int i = 0; i < 20; i++) {
        void *state = open_ok(&ctx, reason, sizeof reason);
        if (!state)
            return;
        struct sps__sample s;
        sps__sample_clear(&s);
        sps__source_nvml.read(state, &ctx, &s, 1, reason, sizeof reason);
        sps__source_nvml.close(state);
    }
    CHECK_EQ_I(count_fds(), fds);
    CHECK(!library_loaded(FAKE_NVML_PATH));
}

int main(void) {
    RUN_TEST(test_visible_devices_parse);
    RUN_TEST(test_visible_devices_resolve);
    RUN_TEST(test_nvml_values);
    RUN_TEST(test_nvml_older_entry_points);
    RUN_TEST(test_nvml_legacy_library);
    RUN_TEST(test_nvml_missing_required_symbol);
    RUN_TEST(test_nvml_init_failure);
    RUN_TEST(test_nvml_missing_library);
    RUN_TEST(test_nvml_cuda_visible_devices);
    RUN_TEST(test_nvml_gpu_lost_at_open);
    RUN_TEST(test_nvml_error_mid_run);
    RUN_TEST(test_nvml_workload_memory);
    RUN_TEST(test_nvml_not_supported);
    RUN_TEST(test_nvml_memory_v2_and_its_fallback);
    RUN_TEST(test_nvml_open_close_cycles);
    return check_report();
}
