/*
 * jscan.c - a pull scanner for JSON through a fixed buffer (see jscan.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/jscan.h"
#include "stepscope.h"

/* Nesting deeper than this is refused rather than recursed into. */
#define MAX_DEPTH 256

int sps__jscan_open(struct sps_jscan *s, FILE *f) {
    memset(s, 0, sizeof *s);
    s->f = f;
    s->line = 1;
    s->buf = malloc(SPS_JSCAN_BUFFER);
    s->str_cap = 256;
    s->str = malloc(s->str_cap);
    if (!s->buf || !s->str) {
        sps__jscan_close(s);
        return SPS_ENOMEM;
    }
    s->str[0] = '\0';
    return 0;
}

void sps__jscan_close(struct sps_jscan *s) {
    free(s->buf);
    free(s->str);
    s->buf = s->str = NULL;
}

static int vfail(struct sps_jscan *s, const char *fmt, va_list ap) {
    if (s->nomem)
        return SPS_ENOMEM;
    if (!s->err[0]) {
        s->err_line = s->line;
        s->err_col = (unsigned long)(s->consumed + s->pos - s->line_start + 1);
        vsnprintf(s->err, sizeof s->err, fmt, ap);
    }
    return SPS_EFORMAT;
}

__attribute__((format(printf, 2, 3))) static int fail(struct sps_jscan *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(s, fmt, ap);
    va_end(ap);
    return rc;
}

int sps__jscan_fail(struct sps_jscan *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(s, fmt, ap);
    va_end(ap);
    return rc;
}

static int refill(struct sps_jscan *s) {
    s->consumed += s->len;
    s->len = fread(s->buf, 1, SPS_JSCAN_BUFFER, s->f);
    s->pos = 0;
    return s->len > 0;
}

/* The next character, not consumed; -1 at the end. */
static inline int look(struct sps_jscan *s) {
    if (s->pos == s->len && !refill(s))
        return -1;
    return (unsigned char)s->buf[s->pos];
}

static int grow(char **p, size_t *cap, size_t need) {
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    char *q = realloc(*p, c);
    if (!q)
        return SPS_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* Consume the character look() returned. */
static inline void take(struct sps_jscan *s, int c) {
    s->pos++;
    if (c == '\n') {
        s->line++;
        s->line_start = s->consumed + s->pos;
    }
}

static inline int blank(int c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline int number_char(int c) {
    return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

static int peek_past_blanks(struct sps_jscan *s) {
    for (;;) {
        /* indentation is most of a report: skip it inside the buffer */
        size_t i = s->pos;
        const char *b = s->buf;
        uint64_t spaces = 0x2020202020202020ULL, word;
        for (;;) {
            /* eight spaces of indentation at a time */
            while (i + 8 <= s->len && (memcpy(&word, b + i, 8), word == spaces))
                i += 8;
            if (i >= s->len || b[i] != ' ')
                break;
            i++;
        }
        for (; i < s->len; i++) {
            if (b[i] == ' ')
                continue;
            if (b[i] == '\n') {
                s->line++;
                s->line_start = s->consumed + i + 1;
            } else if (b[i] != '\t' && b[i] != '\r') {
                break;
            }
        }
        s->pos = i;
        int c = look(s);
        if (!blank(c))
            return c;
        take(s, c);
    }
}

int sps__jscan_peek(struct sps_jscan *s) {
    if (s->pos < s->len && (unsigned char)s->buf[s->pos] > ' ')
        return (unsigned char)s->buf[s->pos]; /* most tokens follow another directly */
    return peek_past_blanks(s);
}

int sps__jscan_expect(struct sps_jscan *s, char want) {
    int c = sps__jscan_peek(s);
    if (c != (unsigned char)want)
        return c < 0 ? fail(s, "unexpected end of file, '%c' expected", want)
                     : fail(s, "'%c' expected, found '%c'", want, c);
    take(s, c);
    return 0;
}

static int put(struct sps_jscan *s, char c) {
    if (grow(&s->str, &s->str_cap, s->str_len + 2)) {
        s->nomem = 1;
        return SPS_ENOMEM;
    }
    s->str[s->str_len++] = c;
    return 0;
}

static int hex4(struct sps_jscan *s, unsigned *out) {
    *out = 0;
    for (int i = 0; i < 4; i++) {
        int c = look(s);
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0)
            return fail(s, "bad \\u escape in a string");
        take(s, c);
        *out = *out * 16 + (unsigned)v;
    }
    return 0;
}

/* A \u escape (and the low half of a surrogate pair) as UTF-8. */
static int unicode_escape(struct sps_jscan *s) {
    unsigned cp;
    int rc = hex4(s, &cp);
    if (rc)
        return rc;
    if (cp >= 0xd800 && cp < 0xdc00) {
        unsigned lo;
        if (look(s) != '\\')
            return fail(s, "lone surrogate in a string");
        take(s, '\\');
        if (look(s) != 'u')
            return fail(s, "lone surrogate in a string");
        take(s, 'u');
        if ((rc = hex4(s, &lo)))
            return rc;
        if (lo < 0xdc00 || lo >= 0xe000)
            return fail(s, "bad surrogate pair in a string");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (cp < 0x80)
        return put(s, (char)cp);
    if (cp < 0x800)
        return put(s, (char)(0xc0 | cp >> 6)) || put(s, (char)(0x80 | (cp & 0x3f))) ? SPS_ENOMEM : 0;
    if (cp < 0x10000)
        return put(s, (char)(0xe0 | cp >> 12)) || put(s, (char)(0x80 | ((cp >> 6) & 0x3f))) ||
                       put(s, (char)(0x80 | (cp & 0x3f)))
                   ? SPS_ENOMEM
                   : 0;
    return put(s, (char)(0xf0 | cp >> 18)) || put(s, (char)(0x80 | ((cp >> 12) & 0x3f))) ||
                   put(s, (char)(0x80 | ((cp >> 6) & 0x3f))) || put(s, (char)(0x80 | (cp & 0x3f)))
               ? SPS_ENOMEM
               : 0;
}

int sps__jscan_string(struct sps_jscan *s) {
    int rc = sps__jscan_expect(s, '"');
    if (rc)
        return rc;
    s->str_len = 0;
    for (;;) {
        /* the common case: a run of plain characters inside the buffer */
        if (s->pos < s->len) {
            size_t i = s->pos;
            while (i < s->len && s->buf[i] != '"' && s->buf[i] != '\\' && (unsigned char)s->buf[i] >= 0x20)
                i++;
            size_t n = i - s->pos;
            if (n) {
                if (grow(&s->str, &s->str_cap, s->str_len + n + 1)) {
                    s->nomem = 1;
                    return SPS_ENOMEM;
                }
                memcpy(s->str + s->str_len, s->buf + s->pos, n);
                s->str_len += n;
                s->pos = i;
            }
        }
        int c = look(s);
        if (c < 0)
            return fail(s, "unexpected end of file in a string");
        if (c < 0x20)
            return fail(s, "control character in a string");
        take(s, c);
        if (c == '"')
            break;
        if (c != '\\') {
            if (put(s, (char)c))
                return SPS_ENOMEM;
            continue;
        }
        int e = look(s);
        if (e < 0)
            return fail(s, "unexpected end of file in a string");
        take(s, e);
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *at = e ? strchr(from, e) : NULL;
        if (at)
            rc = put(s, to[at - from]);
        else if (e == 'u')
            rc = unicode_escape(s);
        else
            return fail(s, "bad escape '\\%c' in a string", e);
        if (rc)
            return rc;
    }
    s->str[s->str_len] = '\0';
    return s->nomem ? SPS_ENOMEM : 0;
}

/*
 * Clinger's fast path: a decimal of at most 15 significant digits and a
 * power of ten within 22 is an integer and a power of ten both exact in a
 * double, so one multiplication or division rounds it correctly, as strtod
 * would.  Returns 0 (the caller uses strtod) for anything else.
 */
static int fast_decimal(const char *t, double *out) {
    static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int neg = *t == '-';
    t += neg;
    if (!(*t >= '0' && *t <= '9') || (t[0] == '0' && t[1] >= '0' && t[1] <= '9'))
        return 0; /* JSON: a digit first, no leading zeros */
    uint64_t m = 0;
    int digits = 0, exp10 = 0;
    for (; *t >= '0' && *t <= '9'; t++) {
        if (m || *t != '0')
            digits++;
        m = m * 10 + (uint64_t)(*t - '0');
        if (digits > 15)
            return 0;
    }
    if (*t == '.') {
        t++;
        if (!(*t >= '0' && *t <= '9'))
            return 0;
        for (; *t >= '0' && *t <= '9'; t++) {
            if (m || *t != '0')
                digits++;
            m = m * 10 + (uint64_t)(*t - '0');
            exp10--;
            if (digits > 15)
                return 0;
        }
    }
    if (*t == 'e' || *t == 'E') {
        t++;
        int eneg = *t == '-';
        if (*t == '-' || *t == '+')
            t++;
        if (!(*t >= '0' && *t <= '9'))
            return 0;
        int e = 0;
        for (; *t >= '0' && *t <= '9' && e < 10000; t++)
            e = e * 10 + (*t - '0');
        exp10 += eneg ? -e : e;
    }
    if (*t || exp10 < -22 || exp10 > 22)
        return 0;
    double v = (double)m;
    v = exp10 < 0 ? v / pow10[-exp10] : v * pow10[exp10];
    *out = neg ? -v : v;
    return 1;
}

int sps__jscan_number(struct sps_jscan *s, double *out) {
    char text[64];
    size_t n = 0;
    int c = sps__jscan_peek(s);
    /* the run of number characters inside the buffer at once */
    size_t i = s->pos;
    while (i < s->len && i - s->pos < sizeof text - 1 && number_char((unsigned char)s->buf[i]))
        i++;
    if (i < s->len) { /* it ends inside the buffer: all of it is here */
        n = i - s->pos;
        memcpy(text, s->buf + s->pos, n);
        s->pos = i;
        c = look(s);
    }
    while (c >= 0 && number_char(c)) {
        if (n + 1 >= sizeof text)
            return fail(s, "number too long");
        text[n++] = (char)c;
        take(s, c);
        c = look(s);
    }
    text[n] = '\0';
    if (fast_decimal(text, out))
        return 0;
    char *end;
    *out = strtod(text, &end);
    if (n == 0 || *end || text[0] == '+' || text[0] == '.')
        return fail(s, n ? "malformed number '%s'" : "a number expected%s", text);
    return 0;
}

/* An integer's digits (after an optional '-') into text, consumed. */
static int integer_text(struct sps_jscan *s, char *text, size_t len, size_t *n) {
    int c = sps__jscan_peek(s);
    *n = 0;
    while (c >= 0 && number_char(c)) {
        if (*n + 1 >= len)
            return fail(s, "integer too long");
        text[(*n)++] = (char)c;
        take(s, c);
        c = look(s);
    }
    text[*n] = '\0';
    const char *d = text + (text[0] == '-');
    if (!*d || (d[0] == '0' && d[1]) || strspn(d, "0123456789") != strlen(d))
        return fail(s, *n ? "'%s' is not an integer" : "an integer expected%s", text);
    return 0;
}

int sps__jscan_uint(struct sps_jscan *s, unsigned long long *out) {
    char text[32];
    size_t n;
    int rc = integer_text(s, text, sizeof text, &n);
    if (rc)
        return rc;
    errno = 0;
    *out = strtoull(text, NULL, 10);
    if (text[0] == '-' || errno == ERANGE)
        return fail(s, "%s is out of range (a count from 0 to 2^64-1 expected)", text);
    return 0;
}

int sps__jscan_int(struct sps_jscan *s, long long *out) {
    char text[32];
    size_t n;
    int rc = integer_text(s, text, sizeof text, &n);
    if (rc)
        return rc;
    errno = 0;
    *out = strtoll(text, NULL, 10);
    if (errno == ERANGE)
        return fail(s, "%s is out of range", text);
    return 0;
}

/* A number's characters, consumed without converting them: most numbers
 * in a report (indices, start times, values) are not read. */
static int skip_number(struct sps_jscan *s) {
    int c = look(s);
    if (c != '-' && !(c >= '0' && c <= '9'))
        return fail(s, "invalid token '%c'", c);
    while (c >= 0 && number_char(c)) {
        take(s, c);
        c = look(s);
    }
    return 0;
}

static int literal(struct sps_jscan *s, const char *word) {
    for (const char *w = word; *w; w++) {
        int c = look(s);
        if (c != (unsigned char)*w)
            return fail(s, "invalid token (expected %s)", word);
        take(s, c);
    }
    return 0;
}

int sps__jscan_member(struct sps_jscan *s, int first, int *more) {
    int c = sps__jscan_peek(s);
    if (c == '}') {
        take(s, c);
        *more = 0;
        return 0;
    }
    int rc = 0;
    if (!first && (rc = sps__jscan_expect(s, ',')))
        return rc;
    if ((c = sps__jscan_peek(s)) != '"') {
        if (c < 0) /* a file cut short: said as every other end of file is */
            return fail(s, first ? "unexpected end of file, a key or '}' expected"
                                 : "unexpected end of file, a key expected");
        return fail(s, first ? "a key or '}' expected" : "a key expected");
    }
    if ((rc = sps__jscan_string(s)) || (rc = sps__jscan_expect(s, ':')))
        return rc;
    *more = 1;
    return 0;
}

int sps__jscan_element(struct sps_jscan *s, int first, int *more) {
    int c = sps__jscan_peek(s);
    if (c == ']') {
        take(s, c);
        *more = 0;
        return 0;
    }
    int rc = 0;
    if (!first && (rc = sps__jscan_expect(s, ',')))
        return rc;
    *more = 1;
    return 0;
}

int sps__jscan_skip(struct sps_jscan *s) {
    int c = sps__jscan_peek(s), rc = 0, more = 1;
    if (c < 0)
        return fail(s, "unexpected end of file, a value expected");
    if (c == '{' || c == '[') {
        if (++s->depth > MAX_DEPTH)
            return fail(s, "nested deeper than %d", MAX_DEPTH);
        take(s, c);
        for (int first = 1; !rc; first = 0) {
            rc = c == '{' ? sps__jscan_member(s, first, &more) : sps__jscan_element(s, first, &more);
            if (rc || !more)
                break;
            rc = sps__jscan_skip(s);
        }
        s->depth--;
        return rc;
    }
    if (c == '"')
        return sps__jscan_string(s);
    if (c == 't')
        return literal(s, "true");
    if (c == 'f')
        return literal(s, "false");
    if (c == 'n')
        return literal(s, "null");
    return skip_number(s);
}

int sps__jscan_end(struct sps_jscan *s) {
    return sps__jscan_peek(s) < 0 ? 0 : fail(s, "end of file expected after the report");
}
