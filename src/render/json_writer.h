/*
 * json_writer.h - a small streaming JSON writer.  Keys are given with each
 * value (NULL inside arrays); commas and indentation are its business.
 * Non-finite numbers are written as null, since JSON has no NaN.  Strings
 * are escaped per RFC 8259; bytes >= 0x80 pass through (names are UTF-8).
 */
#ifndef SPS_JSON_WRITER_H
#define SPS_JSON_WRITER_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#define SPS_JW_MAX_DEPTH 32

struct sps_jw {
    FILE *f;
    int depth;
    int count[SPS_JW_MAX_DEPTH]; /* values written at each level */
    unsigned char flat[SPS_JW_MAX_DEPTH]; /* level written on one line */
};

void sps__jw_init(struct sps_jw *w, FILE *f);
void sps__jw_object(struct sps_jw *w, const char *key);
void sps__jw_array(struct sps_jw *w, const char *key);
/* An array written on one line ([1, 2, 3]): for long lists of numbers. */
void sps__jw_array_flat(struct sps_jw *w, const char *key);
void sps__jw_end(struct sps_jw *w, char closer); /* '}' or ']' */
void sps__jw_string(struct sps_jw *w, const char *key, const char *s);
void sps__jw_number(struct sps_jw *w, const char *key, double v);
void sps__jw_int(struct sps_jw *w, const char *key, int64_t v);
void sps__jw_uint(struct sps_jw *w, const char *key, uint64_t v);
void sps__jw_bool(struct sps_jw *w, const char *key, int v);
void sps__jw_null(struct sps_jw *w, const char *key);

/* v as printf's "%.15g" writes it, into buf (at least 32 bytes, NUL
 * ended); returns the length.  Most numbers a report holds (times of whole
 * nanoseconds in seconds, counts, ratios) take an exact path in integers
 * that is several times faster than printf's; the others go to printf.
 * Non-finite v: "nan"/"inf" as printf writes them.  Pure; thread-safe. */
int sps__format_g15(char *buf, double v);

/* s as a JSON string literal (quotes included), handed to put in pieces.
 * Names and command lines are bytes from the workload and may be cut
 * anywhere: a byte that starts no well-formed UTF-8 sequence becomes
 * U+FFFD.  NULL is "".  Used by every JSON the project writes. */
typedef void (*sps__json_sink)(void *ctx, const char *bytes, size_t n);
void sps__json_escape(const char *s, sps__json_sink put, void *ctx);

/*
 * A finite number as every stepscope output writes it: the fewest
 * significant digits (15 to 17) that read back as exactly v, so
 * report.json loads back into the same model it was written from, and
 * short where 15 digits say it all.  buf should hold 32 bytes; returns
 * the length written.  Pure; thread-safe.
 */
int sps__jw_format_number(char *buf, size_t len, double v);

#endif /* SPS_JSON_WRITER_H */
