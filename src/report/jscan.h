/*
 * jscan.h - a pull scanner for JSON read from a stream through a fixed
 * buffer, for the report.json reader (src/report/report_read*.c), which
 * `stepscope report` and `stepscope compare` both use.
 *
 * A report of a million steps is over half a gigabyte of JSON; a document
 * tree of it (jansson's) took 2 GiB.  The scanner hands its caller one
 * token at a time, keeps only the string it last read, and skips the
 * values the caller does not walk itself, so memory stays at the buffer
 * plus what the caller keeps.
 * Strict where it reads (strings, numbers it is asked for, structure);
 * values it skips are checked for structure only.  Not thread-safe: one
 * scanner, one thread.
 */
#ifndef SPS_REPORT_JSCAN_H
#define SPS_REPORT_JSCAN_H

#include <stddef.h>
#include <stdio.h>

struct sps_jscan {
    FILE *f;                  /* borrowed */
    char *buf;                /* [SPS_JSCAN_BUFFER] */
    size_t len, pos;
    unsigned long line;       /* of the next character, from 1 */
    unsigned long long consumed;   /* bytes of the input before buf[0] */
    unsigned long long line_start; /* offset of the first byte of this line */
    char *str;                /* the string last read, NUL-terminated */
    size_t str_len, str_cap;
    int depth;
    int nomem;
    char err[160];            /* what went wrong, once failed: "':' expected, found '}'" */
    unsigned long err_line, err_col; /* where */
};

#define SPS_JSCAN_BUFFER (1u << 20)

/* Start scanning f.  Returns 0 or SPS_ENOMEM. */
int sps__jscan_open(struct sps_jscan *s, FILE *f);
void sps__jscan_close(struct sps_jscan *s);

/* Each call below returns 0 on success and SPS_EFORMAT (err set) or
 * SPS_ENOMEM on failure. */

/* The next non-blank character, not consumed; -1 at the end of the input. */
int sps__jscan_peek(struct sps_jscan *s);

/* Consume c (after blanks), or fail naming it. */
int sps__jscan_expect(struct sps_jscan *s, char c);

/* Read a string into s->str (escapes decoded, \u as UTF-8). */
int sps__jscan_string(struct sps_jscan *s);

/* Read a number into *out. */
int sps__jscan_number(struct sps_jscan *s, double *out);

/* Read a number that must be an integer in range into *out: digits, and
 * a '-' for a signed one, as the writer prints counts (1e3 and 1.0 are
 * refused, as are leading zeros). */
int sps__jscan_uint(struct sps_jscan *s, unsigned long long *out);
int sps__jscan_int(struct sps_jscan *s, long long *out);

/* Fail at the current position with a message of the caller's (a value of
 * the wrong type, say): sets err, err_line and err_col as the scanner's own
 * failures do.  Returns SPS_EFORMAT. */
__attribute__((format(printf, 2, 3))) int sps__jscan_fail(struct sps_jscan *s, const char *fmt, ...);

/* Skip one value of any kind (its structure is checked). */
int sps__jscan_skip(struct sps_jscan *s);

/* Walk an object: after its '{' was consumed, *more is 1 with the next
 * key in s->str and its ':' consumed, or 0 after the closing '}'.  first:
 * 1 on the first call for this object. */
int sps__jscan_member(struct sps_jscan *s, int first, int *more);

/* Nothing but blanks is left in the input. */
int sps__jscan_end(struct sps_jscan *s);

/* Walk an array likewise: *more is 1 before each element, 0 after ']'. */
int sps__jscan_element(struct sps_jscan *s, int first, int *more);

#endif /* SPS_REPORT_JSCAN_H */
