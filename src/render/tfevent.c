/* tfevent.c - TensorBoard event records encoded by hand (see tfevent.h).
 *
 * Protocol buffer wire format: a field is a key varint (field number << 3
 * | wire type) and its payload: wire type 0 a varint, 1 eight
 * little-endian bytes (double), 2 a length varint and that many bytes
 * (string, nested message), 5 four little-endian bytes (float).  A
 * nested message's length is needed before its bytes, so each message's
 * size is computed first and the bytes written once, in order.
 *
 * The encoding is canonical proto3, as protoc's own serializers write it:
 * fields in number order, a wall_time of +0.0 and a step of 0 (their
 * defaults) left out; simple_value, a member of a oneof, always written. */
#include "render/tfevent.h"

#include <stdlib.h>
#include <string.h>

#include "render/crc32c.h"

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };

/* the fields written (tfevent.h cites where they are declared) */
enum {
    EVENT_WALL_TIME = 1,
    EVENT_STEP = 2,
    EVENT_FILE_VERSION = 3,
    EVENT_SUMMARY = 5,
    SUMMARY_VALUE = 1,
    VALUE_TAG = 1,
    VALUE_SIMPLE_VALUE = 2
};

#define KEY(field, wire) ((unsigned char)((field) << 3 | (wire)))

enum { FRAME_HEAD = 12, FRAME_TAIL = 4 }; /* length + its CRC; the data's CRC */

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static unsigned char *put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        *p++ = (unsigned char)(v >> (8 * i));
    return p;
}

static unsigned char *put_double(unsigned char *p, double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return put_le(p, bits, 8);
}

static unsigned char *put_float(unsigned char *p, float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return put_le(p, bits, 4);
}

static unsigned char *put_bytes(unsigned char *p, int field, const void *s, size_t len) {
    *p++ = KEY(field, WIRE_BYTES);
    p = put_varint(p, len);
    memcpy(p, s, len);
    return p + len;
}

/* wall_time's field: none for +0.0, its default. */
static size_t wall_time_size(double wall_time) {
    uint64_t bits;
    memcpy(&bits, &wall_time, sizeof bits);
    return bits ? 1 + 8 : 0;
}

static unsigned char *put_wall_time(unsigned char *p, double wall_time) {
    if (!wall_time_size(wall_time))
        return p;
    *p++ = KEY(EVENT_WALL_TIME, WIRE_FIXED64);
    return put_double(p, wall_time);
}

/* Room for a record of data_len bytes of data; the data starts at
 * b->p + FRAME_HEAD.  Returns 0 or -1. */
static int reserve(struct sps__tfevent_buf *b, size_t data_len) {
    size_t need = FRAME_HEAD + data_len + FRAME_TAIL;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    b->len = need;
    return 0;
}

/* The framing around the data_len bytes of data at b->p + FRAME_HEAD. */
static void frame(struct sps__tfevent_buf *b, size_t data_len) {
    unsigned char *p = put_le(b->p, data_len, 8);
    put_le(p, sps__crc32c_mask(sps__crc32c(b->p, 8)), 4);
    put_le(b->p + FRAME_HEAD + data_len, sps__crc32c_mask(sps__crc32c(b->p + FRAME_HEAD, data_len)), 4);
}

int sps__tfevent_file_version(struct sps__tfevent_buf *b, double wall_time) {
    static const char version[] = SPS_TFEVENT_FILE_VERSION;
    size_t vlen = sizeof version - 1;
    size_t data_len = wall_time_size(wall_time) + 1 + varint_size(vlen) + vlen;
    if (reserve(b, data_len) != 0)
        return -1;
    unsigned char *p = put_wall_time(b->p + FRAME_HEAD, wall_time);
    put_bytes(p, EVENT_FILE_VERSION, version, vlen);
    frame(b, data_len);
    return 0;
}

/* The size of one encoded Summary.Value: tag and simple_value. */
static size_t value_size(const struct sps__tfevent_scalar *v) {
    return 1 + varint_size(v->tag_len) + v->tag_len + 1 + 4;
}

int sps__tfevent_scalars(struct sps__tfevent_buf *b, double wall_time, int64_t step,
                         const struct sps__tfevent_scalar *v, size_t n) {
    size_t summary_len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t vs = value_size(&v[i]);
        summary_len += 1 + varint_size(vs) + vs;
    }
    size_t step_size = step ? 1 + varint_size((uint64_t)step) : 0;
    size_t data_len = wall_time_size(wall_time) + step_size + 1 + varint_size(summary_len) + summary_len;
    if (reserve(b, data_len) != 0)
        return -1;
    unsigned char *p = put_wall_time(b->p + FRAME_HEAD, wall_time);
    if (step) {
        *p++ = KEY(EVENT_STEP, WIRE_VARINT);
        p = put_varint(p, (uint64_t)step); /* int64: a negative step is ten bytes, two's complement */
    }
    *p++ = KEY(EVENT_SUMMARY, WIRE_BYTES);
    p = put_varint(p, summary_len);
    for (size_t i = 0; i < n; i++) {
        *p++ = KEY(SUMMARY_VALUE, WIRE_BYTES);
        p = put_varint(p, value_size(&v[i]));
        p = put_bytes(p, VALUE_TAG, v[i].tag, v[i].tag_len);
        *p++ = KEY(VALUE_SIMPLE_VALUE, WIRE_FIXED32);
        p = put_float(p, v[i].value);
    }
    frame(b, data_len);
    return 0;
}

void sps__tfevent_buf_free(struct sps__tfevent_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
