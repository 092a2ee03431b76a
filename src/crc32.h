/* crc32.h - CRC-32 (IEEE 802.3, reflected, as zlib computes it), used to
 * detect a corrupted record header. */
#ifndef SPS_CRC32_H
#define SPS_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t sps__crc32(const void *data, size_t len);

#endif
