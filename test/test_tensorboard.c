/*
 * test_tensorboard.c - the pieces of the TensorBoard event files that can
 * be checked against published values: CRC-32C against the check value
 * of the Castagnoli polynomial ("123456789") and RFC 3720's iSCSI test
 * vectors, the slicing-by-8 path against a bit-at-a-time CRC written
 * here, TFRecord's mask, and one Event record encoded byte for byte as
 * the protobuf wire format lays it out.  tensorboard_test.py decodes
 * whole files with protoc.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "render/crc32c.h"
#include "render/tfevent.h"

/* CRC-32C one bit at a time, straight from the definition. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t len) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

static void test_crc32c_vectors(void) {
    CHECK_EQ_U(sps__crc32c("123456789", 9), 0xE3069283u); /* the check value of CRC-32C */
    CHECK_EQ_U(sps__crc32c("", 0), 0);
    /* RFC 3720 (iSCSI), appendix B.4 */
    unsigned char buf[32];
    memset(buf, 0, sizeof buf);
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x8A9136AAu);
    memset(buf, 0xFF, sizeof buf);
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    CHECK_EQ_U(sps__crc32c(buf, 32), 0x113FDB5Cu);
}

/* Every length and alignment the eight-byte loop and its tail meet. */
static void test_crc32c_slicing(void) {
    unsigned char data[300];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof data; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        data[i] = (unsigned char)x;
    }
    int mismatches = 0;
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len + off <= sizeof data; len++)
            mismatches += sps__crc32c(data + off, len) != crc32c_bitwise(data + off, len);
    CHECK_EQ_I(mismatches, 0);
}

static void test_mask(void) {
    CHECK_EQ_U(sps__crc32c_mask(0), 0xA282EAD8u);
    CHECK_EQ_U(sps__crc32c_mask(1), (1u << 17) + 0xA282EAD8u);       /* rotated right by 15 */
    CHECK_EQ_U(sps__crc32c_mask(1u << 15), 1u + 0xA282EAD8u);
    CHECK_EQ_U(sps__crc32c_mask(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xA282EAD8u);
    CHECK_EQ_U(sps__crc32c_mask(0xFFFFFFFFu), 0xFFFFFFFFu + 0xA282EAD8u); /* wraps */
}

/* TFRecord's mask, written out here: rotate right by 15, add the constant. */
static uint32_t mask_here(uint32_t c) {
    return (uint32_t)(((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

static uint64_t le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The framing around data: length, its masked CRC, data, its masked CRC. */
static void check_frame(const struct sps__tfevent_buf *b, const unsigned char *data, size_t len) {
    CHECK_EQ_U(b->len, 12 + len + 4);
    CHECK_EQ_U(le(b->p, 8), len);
    CHECK_EQ_U(le(b->p + 8, 4), mask_here(crc32c_bitwise(b->p, 8)));
    CHECK(memcmp(b->p + 12, data, len) == 0);
    CHECK_EQ_U(le(b->p + 12 + len, 4), mask_here(crc32c_bitwise(data, len)));
}

static void test_event_bytes(void) {
    struct sps__tfevent_buf b = {0};
    /* Event{wall_time: 2.0, step: 300, summary: {value: [{tag: "a", simple_value: 1.0},
     * {tag: "bc", simple_value: -2.5}]}} */
    struct sps__tfevent_scalar v[2] = {{"a", 1, 1.0f}, {"bc", 2, -2.5f}};
    CHECK(sps__tfevent_scalars(&b, 2.0, 300, v, 2) == 0);
    static const unsigned char want[] = {
        0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, /* 1: double 2.0 */
        0x10, 0xAC, 0x02,                /* 2: varint 300 */
        0x2A, 0x15,                      /* 5: Summary, 21 bytes */
        0x0A, 0x08, 0x0A, 0x01, 'a', 0x15, 0x00, 0x00, 0x80, 0x3F,        /* value: "a", 1.0f */
        0x0A, 0x09, 0x0A, 0x02, 'b', 'c', 0x15, 0x00, 0x00, 0x20, 0xC0}; /* value: "bc", -2.5f */
    check_frame(&b, want, sizeof want);

    CHECK(sps__tfevent_file_version(&b, 0.5) == 0);
    static const unsigned char version[] = {0x09, 0, 0, 0, 0, 0, 0, 0xE0, 0x3F, /* 1: double 0.5 */
                                            0x1A, 13, 'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2'};
    check_frame(&b, version, sizeof version);

    /* a long tag: a two-byte length; step 0 and no scalars */
    char tag[200];
    memset(tag, 'x', sizeof tag);
    struct sps__tfevent_scalar big = {tag, sizeof tag, 0.0f};
    CHECK(sps__tfevent_scalars(&b, 0, 0, &big, 1) == 0);
    /* wall_time +0.0 and step 0 are their defaults: left out, as protoc's serializers do */
    CHECK_EQ_U(b.len, 12 + (1 + 2 + (1 + 2 + (1 + 2 + 200 + 5))) + 4);
    CHECK_EQ_U(b.p[12], 0x2A);
    CHECK_EQ_U(b.p[12 + 1], 0x80 | ((1 + 2 + 208) & 0x7F)); /* the summary's length, varint */
    CHECK_EQ_U(b.p[12 + 2], (1 + 2 + 208) >> 7);
    CHECK(sps__tfevent_scalars(&b, -0.0, -1, NULL, 0) == 0);
    static const unsigned char empty[] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0x80, /* -0.0 is not the default */
                                          0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, /* -1 */
                                          0x2A, 0x00};
    check_frame(&b, empty, sizeof empty);
    sps__tfevent_buf_free(&b);
}

int main(void) {
    RUN_TEST(test_crc32c_vectors);
    RUN_TEST(test_crc32c_slicing);
    RUN_TEST(test_mask);
    RUN_TEST(test_event_bytes);
    return check_report();
}
