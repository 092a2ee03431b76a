/*
 * report_read_values.h - typed values for the report.json readers'
 * sections (report_read_machine.c, report_read_analysis.c): a number,
 * integer, boolean or string at the scanner's position, where report.json
 * writes null for "unknown" (json_writer.h writes NAN as null).  Each
 * returns 0, SPS_EFORMAT (s->err says what was expected) or SPS_ENOMEM.
 * Not thread-safe: one scanner, one thread.
 */
#ifndef SPS_REPORT_REPORT_READ_VALUES_H
#define SPS_REPORT_REPORT_READ_VALUES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/jscan.h"
#include "stepscope.h"

/* The latest CLOCK_MONOTONIC reading a report.json may hold as the run's
 * start (146 years of uptime): the renderers count in int64_t from it, and
 * a start near 2^64 overflowed them (trace.json's times). */
#define SPS_REPORT_MONO_NS_MAX ((uint64_t)1 << 62)

/* Fail naming what was expected where (the scanner's first error stays). */
static inline int sps__jread_fail(struct sps_jscan *s, const char *what, const char *key) {
    if (!s->err[0]) {
        snprintf(s->err, sizeof s->err, "\"%s\": %s expected", key ? key : "value", what);
        s->err_line = s->line;
        s->err_col = (unsigned long)(s->consumed + s->pos - s->line_start + 1);
    }
    return SPS_EFORMAT;
}

/* Name key in the scanner's own failure ("1e999 is out of range" says
 * which value, not where it sat). */
static inline int sps__jread_keyed(struct sps_jscan *s, const char *key, int rc) {
    char was[sizeof s->err];
    if (rc == SPS_EFORMAT && key && s->err[0] && s->err[0] != '"') {
        snprintf(was, sizeof was, "%s", s->err);
        snprintf(s->err, sizeof s->err, "\"%s\": %.*s", key, (int)(sizeof s->err - strlen(key) - 5), was);
    }
    return rc;
}

/* Whether the next value is null (then consumed). */
static inline int sps__jread_null(struct sps_jscan *s, int *is_null) {
    *is_null = sps__jscan_peek(s) == 'n';
    return *is_null ? sps__jscan_skip(s) : 0;
}

/* A number; null reads as NAN. */
static inline int sps__jread_number(struct sps_jscan *s, const char *key, double *out) {
    int c = sps__jscan_peek(s);
    if (c == 'n') {
        *out = NAN;
        return sps__jscan_skip(s);
    }
    if (c != '-' && !(c >= '0' && c <= '9'))
        return sps__jread_fail(s, "a number or null", key);
    return sps__jread_keyed(s, key, sps__jscan_number(s, out));
}

/* An integer that fits in [lo, hi], read exactly (not through a double);
 * null reads as dflt. */
static inline int sps__jread_int(struct sps_jscan *s, const char *key, int64_t lo, int64_t hi, int64_t dflt,
                                 int64_t *out) {
    int c = sps__jscan_peek(s);
    if (c == 'n') {
        *out = dflt;
        return sps__jscan_skip(s);
    }
    if (c != '-' && !(c >= '0' && c <= '9'))
        return sps__jread_fail(s, "an integer or null", key);
    long long v;
    int rc = sps__jscan_int(s, &v);
    if (rc)
        return sps__jread_keyed(s, key, rc);
    if (v < lo || v > hi) {
        char what[96];
        snprintf(what, sizeof what, "%lld is out of range: an integer from %lld to %lld", v, (long long)lo,
                 (long long)hi);
        return sps__jread_fail(s, what, key);
    }
    *out = (int64_t)v;
    return 0;
}

/* A count of 0 to 2^64 - 1, exactly (started_mono_ns is beyond 2^53);
 * null reads as 0. */
static inline int sps__jread_u64(struct sps_jscan *s, const char *key, uint64_t *out) {
    int c = sps__jscan_peek(s);
    if (c == 'n') {
        *out = 0;
        return sps__jscan_skip(s);
    }
    if (c == '-') { /* say which value, as for one too large */
        long long neg;
        int rc = sps__jscan_int(s, &neg);
        if (rc)
            return sps__jread_keyed(s, key, rc);
        char what[96];
        snprintf(what, sizeof what, "%lld is out of range: a count from 0 to %llu", neg,
                 (unsigned long long)UINT64_MAX);
        return sps__jread_fail(s, what, key);
    }
    if (!(c >= '0' && c <= '9'))
        return sps__jread_fail(s, "a count or null", key);
    unsigned long long v;
    int rc = sps__jscan_uint(s, &v);
    if (!rc)
        *out = v;
    return sps__jread_keyed(s, key, rc);
}

/* A count of 0 to max, exactly; null reads as 0.  For a count the
 * readers' users turn into a signed figure (a time in nanoseconds). */
static inline int sps__jread_u64_upto(struct sps_jscan *s, const char *key, uint64_t max, uint64_t *out) {
    int rc = sps__jread_u64(s, key, out);
    if (!rc && *out > max) {
        char what[96];
        snprintf(what, sizeof what, "%llu is out of range: a count from 0 to %llu", (unsigned long long)*out,
                 (unsigned long long)max);
        *out = 0;
        return sps__jread_fail(s, what, key);
    }
    return rc;
}

static inline int sps__jread_i32(struct sps_jscan *s, const char *key, int dflt, int *out) {
    int64_t v;
    int rc = sps__jread_int(s, key, INT32_MIN, INT32_MAX, dflt, &v);
    if (!rc)
        *out = (int)v;
    return rc;
}

/* true or false; null reads as 0. */
static inline int sps__jread_bool(struct sps_jscan *s, const char *key, int *out) {
    int c = sps__jscan_peek(s);
    if (c != 't' && c != 'f' && c != 'n')
        return sps__jread_fail(s, "true or false", key);
    *out = c == 't';
    return sps__jscan_skip(s);
}

/* A string into buf (cut to cap - 1 bytes); null reads as "". */
static inline int sps__jread_text(struct sps_jscan *s, const char *key, char *buf, size_t cap) {
    int c = sps__jscan_peek(s);
    if (c == 'n') {
        buf[0] = '\0';
        return sps__jscan_skip(s);
    }
    if (c != '"')
        return sps__jread_fail(s, "a string or null", key);
    int rc = sps__jscan_string(s);
    if (!rc)
        snprintf(buf, cap, "%s", s->str);
    return rc;
}

/* A string of its own (free it) into *out, replacing (and freeing) what
 * *out held, so *out must be NULL or owned; null reads as NULL. */
static inline int sps__jread_strdup(struct sps_jscan *s, const char *key, char **out) {
    int c = sps__jscan_peek(s);
    free(*out);
    *out = NULL;
    if (c == 'n')
        return sps__jscan_skip(s);
    if (c != '"')
        return sps__jread_fail(s, "a string or null", key);
    int rc = sps__jscan_string(s);
    if (rc)
        return rc;
    return (*out = strdup(s->str)) ? 0 : SPS_ENOMEM;
}

/*
 * Walk the object whose '{' was just consumed:
 *
 *     for (int at = 0; sps__jread_member(s, &at, key, sizeof key, &rc);)
 *         ...read the value of key, setting rc...
 *
 * Returns 1 with the next key copied into key, or 0 after the closing
 * '}', or once *rc is non-zero (a failed read in the body ends the walk;
 * a malformed object sets it).  *at counts the members so far.
 */
static inline int sps__jread_member(struct sps_jscan *s, int *at, char *key, size_t cap, int *rc) {
    int more = 0;
    if (*rc || (*rc = sps__jscan_member(s, *at == 0, &more)) || !more)
        return 0;
    ++*at;
    snprintf(key, cap, "%s", s->str);
    return 1;
}

/* The same for the array whose '[' was just consumed: 1 before each
 * element, 0 after the closing ']' or once *rc is non-zero. */
static inline int sps__jread_element(struct sps_jscan *s, int *at, int *rc) {
    int more = 0;
    if (*rc || (*rc = sps__jscan_element(s, *at == 0, &more)) || !more)
        return 0;
    ++*at;
    return 1;
}

/* Consume '{' (or '['), failing with what the key should hold. */
static inline int sps__jread_open(struct sps_jscan *s, const char *key, char opener) {
    if (sps__jscan_peek(s) != opener)
        return sps__jread_fail(s, opener == '{' ? "an object" : "an array", key);
    return sps__jscan_expect(s, opener);
}

#endif /* SPS_REPORT_REPORT_READ_VALUES_H */
