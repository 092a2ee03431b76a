/*
 * crc32c.h - CRC-32C (Castagnoli: polynomial 0x1EDC6F41, reflected as
 * 0x82F63B78, initial and final value 0xFFFFFFFF), the checksum of the
 * TFRecord framing of TensorBoard event files, and the mask TFRecord
 * applies to it.  Pure functions, thread-safe.
 */
#ifndef SPS_RENDER_CRC32C_H
#define SPS_RENDER_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes ("123456789" gives 0xE3069283). */
uint32_t sps__crc32c(const void *data, size_t len);

/* TFRecord's masked CRC: rotated right by 15 bits plus 0xa282ead8
 * (a CRC stored next to the data it covers is masked so that a CRC of
 * data that itself holds CRCs stays well distributed). */
uint32_t sps__crc32c_mask(uint32_t crc);

#endif /* SPS_RENDER_CRC32C_H */
