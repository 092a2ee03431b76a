/*
 * tfevent.h - TensorBoard's event records, encoded by hand: the
 * protobuf messages Event, Summary and Summary.Value (only the fields
 * stepscope writes) inside TFRecord framing.
 *
 * The field numbers are TensorBoard's own, as declared in
 * tensorflow/tensorboard's tensorboard/compat/proto/event.proto
 * (Event: double wall_time = 1; int64 step = 2; string file_version = 3;
 * Summary summary = 5) and summary.proto (Summary: repeated Value
 * value = 1; Value: string tag = 1; float simple_value = 2), which are
 * TensorFlow's tensorflow/core/util/event.proto and
 * core/framework/summary.proto.
 *
 * A TFRecord is: uint64 length (little-endian), uint32 masked CRC-32C
 * of those 8 bytes, the data, uint32 masked CRC-32C of the data
 * (crc32c.h).
 *
 * One struct sps__tfevent_buf holds one record at a time; it grows as
 * needed.  Not thread-safe per buffer.
 */
#ifndef SPS_RENDER_TFEVENT_H
#define SPS_RENDER_TFEVENT_H

#include <stddef.h>
#include <stdint.h>

/* The file_version of the first record of every event file. */
#define SPS_TFEVENT_FILE_VERSION "brain.Event:2"

struct sps__tfevent_buf {
    unsigned char *p; /* the record: framing and data */
    size_t len, cap;
};

/* One scalar of a summary: a tag (tag_len bytes, no NUL needed) and its
 * value, stored as a float (what TensorBoard's simple_value holds). */
struct sps__tfevent_scalar {
    const char *tag;
    size_t tag_len;
    float value;
};

/* The record of the event file's first event: wall_time and
 * file_version "brain.Event:2".  Returns 0, or -1 when out of memory. */
int sps__tfevent_file_version(struct sps__tfevent_buf *b, double wall_time);

/* The record of one event with a summary of n scalars (n may be 0: an
 * empty summary) at step.  Returns 0, or -1 when out of memory. */
int sps__tfevent_scalars(struct sps__tfevent_buf *b, double wall_time, int64_t step,
                         const struct sps__tfevent_scalar *v, size_t n);

void sps__tfevent_buf_free(struct sps__tfevent_buf *b);

#endif /* SPS_RENDER_TFEVENT_H */
