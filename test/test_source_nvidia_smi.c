/* test_source_nvidia_smi.c - the nvidia-smi source against the fake
 * test/fakes/nvidia-smi: parsing, units, [N/A] fields, CUDA_VISIBLE_DEVICES,
 * a command that hangs, fails or is missing, and that nothing (no child,
 * no descriptor) is left behind. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sources/source.h"
#include "support.h"

#ifndef FAKES_DIR
#error "FAKES_DIR must name test/fakes"
#endif
#define FAKE_SMI FAKES_DIR "/nvidia-smi"
#define MIB (1024.0 * 1024.0)

static struct sps__source_ctx ctx_for(const char *smi) {
    struct sps__source_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.root = "";
    ctx.smi_path = smi;
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

/* No child of ours is left, running or zombie. */
static void check_no_child(void) {
    errno = 0;
    pid_t r = waitpid(-1, NULL, WNOHANG);
    CHECK_MSG(r == -1 && errno == ECHILD, "waitpid(-1) = %d (errno %d): a child was left", (int)r, errno);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Open, read once into *s, close.  Returns the open's result (the read's
 * when the open worked); reason holds the failure. */
static int open_read_close(const struct sps__source_ctx *ctx, struct sps__sample *s, char *reason, size_t cap) {
    void *state = (void *)ctx;
    sps__sample_clear(s);
    int rc = sps__source_nvidia_smi.open(ctx, &state, reason, cap);
    if (rc != 0) {
        CHECK(state == NULL);
        return rc;
    }
    rc = sps__source_nvidia_smi.read(state, ctx, s, 777, reason, cap);
    sps__source_nvidia_smi.close(state);
    return rc;
}

static void test_smi_source_flags(void) {
    CHECK_EQ_I(sps__source_nvidia_smi.id, SPS_SOURCE_NVIDIA_SMI);
    CHECK(strcmp(sps__source_nvidia_smi.name, "nvidia-smi") == 0);
    CHECK_EQ_I(sps__source_nvidia_smi.is_gpu, 1);
    CHECK_EQ_I(sps__source_nvidia_smi.slow, 1);
    CHECK(sps__source_get(SPS_SOURCE_NVIDIA_SMI) == &sps__source_nvidia_smi);
}

static void test_smi_values(void) {
    unsetenv("FAKE_SMI_MODE");
    int fds = count_fds();
    struct sps__source_ctx ctx = ctx_for(FAKE_SMI);
    struct sps__sample s;
    char reason[192];
    int rc = open_read_close(&ctx, &s, reason, sizeof reason);
    CHECK_MSG(rc == 0, "nvidia-smi: %s", reason);
    CHECK_EQ_I(s.ngpus, 3);
    CHECK_EQ_I(s.read_ns[SPS_SOURCE_NVIDIA_SMI], 777);
    const struct sps__gpu_sample *g = &s.gpu[0];
    CHECK_EQ_I(g->index, 0);
    CHECK_EQ_I(g->source, SPS_SOURCE_NVIDIA_SMI);
    CHECK(strcmp(g->name, "NVIDIA H100 80GB HBM3") == 0);
    CHECK(strcmp(g->uuid, "GPU-0a1b2c3d-0000-4000-8000-000000000000") == 0);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_USED_BYTES], 1024 * MIB, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_TOTAL_BYTES], 81559 * MIB, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_UTILIZATION_PERCENT], 37, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_UTILIZATION_PERCENT], 12, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_TEMPERATURE_CELSIUS], 45, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_POWER_WATTS], 312.45, 1e-9);
    CHECK_NEAR(g->v[SPS_M_GPU_SM_CLOCK_HERTZ], 1980e6, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_CLOCK_HERTZ], 2619e6, 0);
    /* nvidia-smi's query has no energy, throttle reasons or per-process
     * memory: unavailable, not zero */
    CHECK(isnan(g->v[SPS_M_GPU_ENERGY_JOULES]));
    CHECK(isnan(g->v[SPS_M_GPU_THROTTLE_REASONS]));
    CHECK(isnan(g->v[SPS_M_GPU_WORKLOAD_MEMORY_BYTES]));
    g = &s.gpu[2];
    CHECK_EQ_I(g->index, 2);
    CHECK_NEAR(g->v[SPS_M_GPU_MEMORY_USED_BYTES], 40000 * MIB, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_UTILIZATION_PERCENT], 100, 0);
    CHECK_NEAR(g->v[SPS_M_GPU_POWER_WATTS], 699.99, 1e-9);
    CHECK_NEAR(g->v[SPS_M_GPU_SM_CLOCK_HERTZ], 1755e6, 0);
    CHECK_EQ_I(s.gpu[1].v[SPS_M_GPU_MEMORY_USED_BYTES], 0); /* a real 0 stays 0 */
    CHECK_EQ_I(count_fds(), fds);
    check_no_child();
}

static void test_smi_not_available_fields(void) {
    setenv("FAKE_SMI_MODE", "na", 1);
    struct sps__source_ctx ctx = ctx_for(FAKE_SMI);
    struct sps__sample s;
    char reason[192];
    CHECK_EQ_I(open_read_close(&ctx, &s, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 2);
    const double *v = s.gpu[0].v;
    CHECK_NEAR(v[SPS_M_GPU_MEMORY_USED_BYTES], 512 * MIB, 0);
    CHECK(isnan(v[SPS_M_GPU_UTILIZATION_PERCENT]));        /* [N/A] */
    CHECK(isnan(v[SPS_M_GPU_MEMORY_UTILIZATION_PERCENT])); /* [Not Supported] */
    CHECK(isnan(v[SPS_M_GPU_POWER_WATTS]));
    CHECK(isnan(v[SPS_M_GPU_MEMORY_CLOCK_HERTZ])); /* N/A */
    CHECK_NEAR(v[SPS_M_GPU_SM_CLOCK_HERTZ], 1410e6, 0);
    v = s.gpu[1].v;
    CHECK(isnan(v[SPS_M_GPU_MEMORY_USED_BYTES]));     /* empty */
    CHECK(isnan(v[SPS_M_GPU_TEMPERATURE_CELSIUS]));   /* [Unknown Error] */
    CHECK(isnan(v[SPS_M_GPU_SM_CLOCK_HERTZ]));
    CHECK_NEAR(v[SPS_M_GPU_POWER_WATTS], 61.25, 0);
    CHECK_NEAR(v[SPS_M_GPU_MEMORY_CLOCK_HERTZ], 1215e6, 0);
    unsetenv("FAKE_SMI_MODE");
    check_no_child();
}

static void test_smi_cuda_visible_devices(void) {
    unsetenv("FAKE_SMI_MODE");
    struct sps__source_ctx ctx = ctx_for(FAKE_SMI);
    struct sps__sample s;
    char reason[192];

    ctx.cuda_visible_devices = "2,0";
    CHECK_EQ_I(open_read_close(&ctx, &s, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 2);
    CHECK_EQ_I(s.gpu[0].index, 0);
    CHECK_STR_HAS(s.gpu[0].uuid, "GPU-2a1b");
    CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_MEMORY_USED_BYTES], 40000 * MIB, 0);
    CHECK_EQ_I(s.gpu[1].index, 1);
    CHECK_STR_HAS(s.gpu[1].uuid, "GPU-0a1b");

    ctx.cuda_visible_devices = "GPU-1A1B";
    CHECK_EQ_I(open_read_close(&ctx, &s, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 1);
    CHECK_EQ_I(s.gpu[0].index, 0);
    CHECK_NEAR(s.gpu[0].v[SPS_M_GPU_SM_CLOCK_HERTZ], 345e6, 0);

    ctx.cuda_visible_devices = "1,none,0";
    CHECK_EQ_I(open_read_close(&ctx, &s, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 1);
    CHECK_STR_HAS(s.gpu[0].uuid, "GPU-1a1b");

    ctx.cuda_visible_devices = "";
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "no GPU visible (CUDA_VISIBLE_DEVICES=)");
    ctx.cuda_visible_devices = "5";
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "no GPU has index 5");
    check_no_child();
}

static void test_smi_timeout(void) {
    setenv("FAKE_SMI_MODE", "sleep", 1);
    int fds = count_fds();
    struct sps__source_ctx ctx = ctx_for(FAKE_SMI);
    ctx.smi_timeout_ms = 200;
    void *state = (void *)&ctx;
    char reason[192];
    double start = now_ms();
    CHECK(sps__source_nvidia_smi.open(&ctx, &state, reason, sizeof reason) < 0);
    double took = now_ms() - start;
    CHECK(state == NULL);
    CHECK_MSG(strcmp(reason, "nvidia-smi did not answer within 200 ms") == 0, "reason: %s", reason);
    CHECK_MSG(took >= 199 && took < 2000, "took %.0f ms", took);
    check_no_child(); /* killed and reaped, by its pid */
    CHECK_EQ_I(count_fds(), fds);
    unsetenv("FAKE_SMI_MODE");
}

/* A read that times out after a good open: negative, the next read works. */
static void test_smi_read_failure_then_recovery(void) {
    unsetenv("FAKE_SMI_MODE");
    struct sps__source_ctx ctx = ctx_for(FAKE_SMI);
    ctx.smi_timeout_ms = 150;
    void *state = NULL;
    char reason[192];
    if (sps__source_nvidia_smi.open(&ctx, &state, reason, sizeof reason) != 0) {
        CHECK_MSG(0, "open: %s", reason);
        return;
    }
    struct sps__sample s;
    setenv("FAKE_SMI_MODE", "sleep", 1);
    sps__sample_clear(&s);
    CHECK(sps__source_nvidia_smi.read(state, &ctx, &s, 1, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "within 150 ms");
    CHECK_EQ_I(s.read_ns[SPS_SOURCE_NVIDIA_SMI], 0);
    unsetenv("FAKE_SMI_MODE");
    sps__sample_clear(&s);
    CHECK_EQ_I(sps__source_nvidia_smi.read(state, &ctx, &s, 2, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 3);
    sps__source_nvidia_smi.close(state);
    check_no_child();
}

static void test_smi_failure(void) {
    setenv("FAKE_SMI_MODE", "fail", 1);
    int fds = count_fds();
    struct sps__source_ctx ctx = ctx_for(FAKE_SMI);
    struct sps__sample s;
    char reason[192];
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_MSG(strcmp(reason, "nvidia-smi failed (exit status 9): NVIDIA-SMI has failed because it couldn't "
                             "communicate with the NVIDIA driver.") == 0,
              "reason: %s", reason);

    setenv("FAKE_SMI_MODE", "empty", 1);
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_MSG(strcmp(reason, "nvidia-smi listed no GPU") == 0, "reason: %s", reason);
    setenv("FAKE_SMI_MODE", "garbage", 1);
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_MSG(strcmp(reason, "nvidia-smi listed no GPU: No devices were found") == 0, "reason: %s", reason);
    setenv("FAKE_SMI_MODE", "exec127", 1);
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_MSG(strcmp(reason, FAKE_SMI " not found") == 0, "reason: %s", reason);
    unsetenv("FAKE_SMI_MODE");
    CHECK_EQ_I(count_fds(), fds);
    check_no_child();
}

static void test_smi_not_found(void) {
    char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    struct sps__source_ctx ctx = ctx_for("/nonexistent/nvidia-smi");
    struct sps__sample s;
    char reason[192];
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_MSG(strcmp(reason, "/nonexistent/nvidia-smi not found") == 0, "reason: %s", reason);

    setenv("PATH", tmpdir_new("empty-path"), 1);
    ctx = ctx_for(NULL);
    CHECK(open_read_close(&ctx, &s, reason, sizeof reason) < 0);
    CHECK_MSG(strcmp(reason, "nvidia-smi not found on PATH") == 0, "reason: %s", reason);

    /* found on PATH, as the sampler finds the real one */
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", FAKES_DIR, saved ? saved : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    unsetenv("FAKE_SMI_MODE");
    int rc = open_read_close(&ctx, &s, reason, sizeof reason);
    CHECK_MSG(rc == 0, "nvidia-smi on PATH: %s", reason);
    CHECK_EQ_I(s.ngpus, 3);
    CHECK_NEAR(s.gpu[1].v[SPS_M_GPU_POWER_WATTS], 71.2, 1e-9);

    if (saved) {
        setenv("PATH", saved, 1);
        free(saved);
    } else {
        unsetenv("PATH");
    }
    check_no_child();
}

/* This machine's own nvidia-smi: without an NVIDIA driver the reason says
 * why; with one, it reads. */
static void test_smi_this_machine(void) {
    unsetenv("FAKE_SMI_MODE");
    struct sps__source_ctx ctx = ctx_for(NULL);
    ctx.cuda_visible_devices = getenv("CUDA_VISIBLE_DEVICES");
    struct sps__sample s;
    char reason[192];
    int rc = open_read_close(&ctx, &s, reason, sizeof reason);
    if (rc < 0) {
        CHECK(reason[0] != '\0');
        CHECK_STR_HAS(reason, "nvidia-smi");
        fprintf(stderr, "     (this machine: nvidia-smi unavailable: %s)\n", reason);
    } else {
        CHECK(s.ngpus >= 1);
        CHECK(s.gpu[0].v[SPS_M_GPU_MEMORY_TOTAL_BYTES] > 0);
        fprintf(stderr, "     (this machine: %d GPU(s), gpu 0 %s)\n", s.ngpus, s.gpu[0].name);
    }
    check_no_child();
}

int main(void) {
    RUN_TEST(test_smi_source_flags);
    RUN_TEST(test_smi_values);
    RUN_TEST(test_smi_not_available_fields);
    RUN_TEST(test_smi_cuda_visible_devices);
    RUN_TEST(test_smi_timeout);
    RUN_TEST(test_smi_read_failure_then_recovery);
    RUN_TEST(test_smi_failure);
    RUN_TEST(test_smi_not_found);
    RUN_TEST(test_smi_this_machine);
    return check_report();
}
