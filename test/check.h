/*
 * check.h - the test suite's assertions.  A failed check prints where and
 * what, and the test binary exits non-zero at the end; every test binary
 * ends with a "N passed, N failed" line.
 */
#ifndef SPS_TEST_CHECK_H
#define SPS_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int check_failures, check_passes;

#define CHECK_AT(cond, file, line, ...) \
    do { \
        if (cond) { \
            check_passes++; \
        } else { \
            check_failures++; \
            fprintf(stderr, "%s:%d: check failed: ", file, line); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
        } \
    } while (0)

#define CHECK(cond) CHECK_AT((cond), __FILE__, __LINE__, "%s", #cond)
#define CHECK_MSG(cond, ...) CHECK_AT((cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ_U(a, b) \
    do { \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b); \
        CHECK_AT(a_ == b_, __FILE__, __LINE__, "%s == %s (%" PRIu64 " vs %" PRIu64 ")", #a, #b, a_, b_); \
    } while (0)
#define CHECK_EQ_I(a, b) \
    do { \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b); \
        CHECK_AT(a_ == b_, __FILE__, __LINE__, "%s == %s (%" PRId64 " vs %" PRId64 ")", #a, #b, a_, b_); \
    } while (0)
#define CHECK_NEAR(a, b, tol) \
    do { \
        double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol); \
        CHECK_AT(fabs(a_ - b_) <= t_, __FILE__, __LINE__, "%s ~ %s (%.12g vs %.12g, tolerance %g)", #a, #b, a_, b_, \
                 t_); \
    } while (0)
#define CHECK_STR_HAS(hay, needle) \
    do { \
        const char *h_ = (hay), *n_ = (needle); \
        CHECK_AT(h_ && strstr(h_, n_), __FILE__, __LINE__, "\"%s\" contains \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

/* Each test's own wall time follows its name, so that a slow one is found
 * in the ctest log without a profiler. */
static inline double check_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define RUN_TEST(fn) \
    do { \
        int before_ = check_failures; \
        double start_ = check_now_s(); \
        fn(); \
        fprintf(stderr, "%s %-40s %7.2f s\n", check_failures == before_ ? "ok  " : "FAIL", #fn, \
                check_now_s() - start_); \
    } while (0)

static inline int check_report(void) {
    printf("%d passed, %d failed\n", check_passes, check_failures);
    return check_failures ? 1 : 0;
}

#endif
