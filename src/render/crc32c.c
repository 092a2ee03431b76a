/* crc32c.c - CRC-32C and TFRecord's mask (see crc32c.h).
 *
 * Slicing by 8: eight tables of 256 entries, made once from the
 * polynomial (no constants copied in), take eight bytes per step; an
 * event record of a few hundred bytes is checksummed in well under a
 * microsecond. */
#include "render/crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

uint32_t sps__crc32c(const void *data, size_t len) {
    pthread_once(&table_once, make_table);
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (; len >= 8; len -= 8, p += 8) {
        /* the low four bytes fold into the running CRC, little-endian */
        uint32_t lo = ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24) ^ c;
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
            table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^ table[0][p[7]];
    }
    while (len--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    return c ^ 0xFFFFFFFFu;
}

uint32_t sps__crc32c_mask(uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
