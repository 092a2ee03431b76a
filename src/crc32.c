/* crc32.c - bitwise CRC-32; it runs once per record open, so a table would
 * buy nothing. */
#include "crc32.h"

uint32_t sps__crc32(const void *data, size_t len) {
    const unsigned char *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}
