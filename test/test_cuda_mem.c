/*
 * test_cuda_mem.c - sps_cuda_mem_info against the fake libcuda the suite
 * builds (test/fakes/fake_cuda.c): the exact bytes the fake was given, no
 * current context, a driver error, a libcuda without cuMemGetInfo_v2 (the
 * fake built without it), no libcuda at all, and that nothing synchronises.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stepscope.h>

#include "check.h"
#include "gpu/cuda_abi.h"
#include "gpu/cuda_zone.h"

#if !defined(FAKE_CUDA_PATH) || !defined(FAKE_CUDA_NOMEM_PATH)
#error "FAKE_CUDA_PATH and FAKE_CUDA_NOMEM_PATH must name the fake libcudas"
#endif

static struct {
    void (*reset)(void);
    void (*set_context)(int);
    void (*set_mem)(unsigned long long, unsigned long long);
    void (*fail)(const char *, int, int);
    long (*calls)(const char *);
} fake;

static void load_fake(void) {
    /* the same path the library dlopens: one instance, shared state */
    void *h = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot load the fake libcuda: %s\n", dlerror());
        exit(1);
    }
    *(void **)&fake.reset = dlsym(h, "fake_cuda_reset");
    *(void **)&fake.set_context = dlsym(h, "fake_cuda_set_context");
    *(void **)&fake.set_mem = dlsym(h, "fake_cuda_set_mem");
    *(void **)&fake.fail = dlsym(h, "fake_cuda_fail");
    *(void **)&fake.calls = dlsym(h, "fake_cuda_calls");
    if (!fake.reset || !fake.set_context || !fake.set_mem || !fake.fail || !fake.calls) {
        fprintf(stderr, "the fake libcuda lacks its controls\n");
        exit(1);
    }
}

static void use(const char *path) {
    setenv("STEPSCOPE_LIBCUDA", path, 1);
    unsetenv("FAKE_CUDA_INIT_FAIL");
    sps__cuda_reset();
    fake.reset();
}

static void check_no_sync(void) {
    CHECK_EQ_I(fake.calls("cuCtxSynchronize"), 0);
    CHECK_EQ_I(fake.calls("cuStreamSynchronize"), 0);
    CHECK_EQ_I(fake.calls("cuEventSynchronize"), 0);
}

static void test_exact_values(void) {
    use(FAKE_CUDA_PATH);
    /* past 4 GiB: a 32-bit path would lose the high bits */
    const uint64_t total = 85899345920ull, free1 = 80000000000ull + 12345, free2 = 7ull;
    fake.set_mem(free1, total);
    uint64_t f = 1, t = 1;
    CHECK_EQ_I(sps_cuda_mem_info(&f, &t), 0);
    CHECK_EQ_U(f, free1);
    CHECK_EQ_U(t, total);
    fake.set_mem(free2, total); /* read again, not cached */
    CHECK_EQ_I(sps_cuda_mem_info(&f, &t), 0);
    CHECK_EQ_U(f, free2);
    CHECK_EQ_U(t, total);
    CHECK_EQ_I(fake.calls("cuMemGetInfo"), 2);
    fake.set_context(2); /* another context: answered as well */
    CHECK_EQ_I(sps_cuda_mem_info(&f, &t), 0);
    CHECK_EQ_U(f, free2);
    CHECK_EQ_I(sps_cuda_mem_info(NULL, &t), SPS_EINVAL);
    CHECK_EQ_I(sps_cuda_mem_info(&f, NULL), SPS_EINVAL);
    check_no_sync();
}

static void test_no_context(void) {
    use(FAKE_CUDA_PATH);
    fake.set_mem(100, 200);
    fake.set_context(0);
    uint64_t f = 11, t = 22;
    char why[160] = "";
    CHECK_EQ_I(sps_cuda_mem_info(&f, &t), SPS_ESTATE);
    CHECK_EQ_I(sps__cuda_mem_info(&f, &t, why, sizeof why), SPS_ESTATE);
    CHECK_STR_HAS(why, "no current CUDA context");
    CHECK_EQ_U(f, 11); /* untouched on an error */
    CHECK_EQ_U(t, 22);
    /* a driver that reports the missing context itself (cuCtxGetCurrent
     * gave one, the context is gone by cuMemGetInfo) */
    fake.set_context(1);
    fake.fail("cuMemGetInfo", SPS_CUDA_ERROR_INVALID_CONTEXT, 1);
    CHECK_EQ_I(sps__cuda_mem_info(&f, &t, why, sizeof why), SPS_ESTATE);
    CHECK_STR_HAS(why, "cuMemGetInfo_v2 failed: invalid device context");
    fake.fail("cuMemGetInfo", SPS_CUDA_ERROR_LAUNCH_FAILED, 1);
    CHECK_EQ_I(sps__cuda_mem_info(&f, &t, why, sizeof why), SPS_EIO);
    CHECK_STR_HAS(why, "unspecified launch failure");
    fake.fail("cuCtxGetCurrent", SPS_CUDA_ERROR_DEINITIALIZED, 1);
    CHECK_EQ_I(sps__cuda_mem_info(&f, &t, why, sizeof why), SPS_EIO);
    CHECK_STR_HAS(why, "cuCtxGetCurrent failed");
    CHECK_EQ_U(f, 11);
    CHECK_EQ_I(sps_cuda_mem_info(&f, &t), 0); /* and it recovers */
    CHECK_EQ_U(f, 100);
    CHECK_EQ_U(t, 200);
    check_no_sync();
}

/* what the Python MemoryTracker's sampling thread uses: the context of
 * the thread that opened the block, made current on its own */
static void test_context_handover(void) {
    use(FAKE_CUDA_PATH);
    char why[160] = "";
    void *ctx = NULL, *none = (void *)1;
    fake.set_context(2);
    CHECK_EQ_I(sps__cuda_context(&ctx, why, sizeof why), 0);
    CHECK(ctx != NULL);
    fake.set_context(0);
    CHECK_EQ_I(sps__cuda_context(&none, why, sizeof why), 0);
    CHECK(none == NULL);
    CHECK_EQ_I(sps__cuda_use_context(ctx, why, sizeof why), 0);
    CHECK_EQ_I(fake.calls("cuCtxSetCurrent"), 1);
    fake.set_mem(5, 9);
    uint64_t f = 0, t = 0;
    CHECK_EQ_I(sps_cuda_mem_info(&f, &t), 0); /* the context is current again */
    CHECK_EQ_U(f, 5);
    CHECK_EQ_I(sps__cuda_use_context((void *)&why, why, sizeof why), SPS_EIO);
    CHECK_STR_HAS(why, "cuCtxSetCurrent failed: invalid device context");
}

static void test_missing_symbol(void) {
    use(FAKE_CUDA_NOMEM_PATH);
    uint64_t f = 11, t = 22;
    char why[300] = "";
    CHECK_EQ_I(sps__cuda_mem_info(&f, &t, why, sizeof why), SPS_EUNSUPPORTED);
    CHECK_STR_HAS(why, "lacks cuMemGetInfo_v2");
    CHECK_STR_HAS(why, FAKE_CUDA_NOMEM_PATH);
    CHECK_EQ_U(f, 11);
    /* not a load failure: GPU zones still work there */
    struct sps_cuda_status s;
    CHECK_EQ_I(sps_cuda_status(&s), 0);
    CHECK_EQ_I(s.available, 1);
    CHECK_STR_HAS(sps_strerror(SPS_EUNSUPPORTED), "not supported");
}

static void test_no_libcuda(void) {
    use(FAKE_CUDA_PATH);
    setenv("STEPSCOPE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    sps__cuda_reset();
    uint64_t f = 11, t = 22;
    char why[300] = "";
    CHECK_EQ_I(sps__cuda_mem_info(&f, &t, why, sizeof why), SPS_EUNSUPPORTED);
    CHECK_STR_HAS(why, "libcuda unavailable: cannot load /nonexistent/libcuda.so.1");
    CHECK_EQ_I(sps_cuda_mem_info(&f, &t), SPS_EUNSUPPORTED);
    CHECK_EQ_U(t, 22);
}

int main(void) {
    load_fake();
    RUN_TEST(test_exact_values);
    RUN_TEST(test_no_context);
    RUN_TEST(test_context_handover);
    RUN_TEST(test_missing_symbol);
    RUN_TEST(test_no_libcuda);
    sps__cuda_reset();
    return check_report();
}
