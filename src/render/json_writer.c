/* json_writer.c - see json_writer.h. */
#include "render/json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sps__jw_init(struct sps_jw *w, FILE *f) {
    w->f = f;
    w->depth = 0;
    w->count[0] = 0;
    w->flat[0] = 0;
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs,
 * no surrogates, nothing above U+10FFFF), or 0 when it is not one. */
static int utf8_length(const unsigned char *p) {
    unsigned char c = p[0];
    int n;
    uint32_t min, cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, min = 0x80, cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, min = 0x800, cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, min = 0x10000, cp = c & 0x07u;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0; /* also stops at the terminating NUL */
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* Bytes that go out as they are: printable ASCII but the quote and the
 * backslash. */
static int plain(unsigned char c) {
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

void sps__json_escape(const char *s, sps__json_sink put, void *ctx) {
    put(ctx, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        if (plain(*p)) { /* a run of them in one call: keys and names are all plain */
            const unsigned char *q = p + 1;
            while (plain(*q))
                q++;
            put(ctx, (const char *)p, (size_t)(q - p));
            p = q;
            continue;
        }
        if (*p >= 0x80) {
            int n = utf8_length(p);
            if (n)
                put(ctx, (const char *)p, (size_t)n);
            else
                put(ctx, "\\ufffd", 6);
            p += n ? n : 1;
            continue;
        }
        char esc[8];
        switch (*p) {
        case '"': put(ctx, "\\\"", 2); break;
        case '\\': put(ctx, "\\\\", 2); break;
        case '\n': put(ctx, "\\n", 2); break;
        case '\r': put(ctx, "\\r", 2); break;
        case '\t': put(ctx, "\\t", 2); break;
        default: /* below 0x20: plain() took the rest */
            put(ctx, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p));
        }
        p++;
    }
    put(ctx, "\"", 1);
}

/* The writer's FILE is its own (one thread writes a report): the stdio
 * calls below skip the stream lock, which cost more than the formatting
 * itself at half a gigabyte of report.json. */
static void file_sink(void *ctx, const char *bytes, size_t n) {
    fwrite_unlocked(bytes, 1, n, ctx);
}

static void put_string(FILE *f, const char *s) {
    sps__json_escape(s, file_sink, f);
}

/* Separator, indentation and key before a value. */
/* A new line and two spaces per level. */
static void newline(struct sps_jw *w) {
    static const char spaces[2 * SPS_JW_MAX_DEPTH + 1] = "\n                                                                ";
    _Static_assert(2 * SPS_JW_MAX_DEPTH <= 64, "the spaces above cover every depth");
    fwrite_unlocked(spaces, 1, 1 + 2 * (size_t)w->depth, w->f);
}

static void lead(struct sps_jw *w, const char *key) {
    if (w->count[w->depth]++)
        fwrite_unlocked(", ", 1, w->flat[w->depth] ? 2 : 1, w->f);
    if (w->depth && !w->flat[w->depth])
        newline(w);
    if (key) {
        put_string(w->f, key);
        fwrite_unlocked(": ", 1, 2, w->f);
    }
}

static void open_level(struct sps_jw *w, const char *key, char opener, int flat) {
    lead(w, key);
    fputc_unlocked(opener, w->f);
    if (w->depth + 1 < SPS_JW_MAX_DEPTH) {
        w->count[++w->depth] = 0;
        w->flat[w->depth] = (unsigned char)flat;
    }
}

void sps__jw_object(struct sps_jw *w, const char *key) {
    open_level(w, key, '{', 0);
}

void sps__jw_array(struct sps_jw *w, const char *key) {
    open_level(w, key, '[', 0);
}

void sps__jw_array_flat(struct sps_jw *w, const char *key) {
    open_level(w, key, '[', 1);
}

void sps__jw_end(struct sps_jw *w, char closer) {
    int had = w->count[w->depth] && !w->flat[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (had)
        newline(w);
    fputc_unlocked(closer, w->f);
    if (w->depth == 0)
        fputc_unlocked('\n', w->f);
}

void sps__jw_string(struct sps_jw *w, const char *key, const char *s) {
    lead(w, key);
    put_string(w->f, s);
}

/* v's decimal digits, written backwards ending at end; returns the first. */
static char *digits(char *end, uint64_t v) {
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

static void put_int(FILE *f, int negative, uint64_t magnitude) {
    char buf[24];
    char *p = digits(buf + sizeof buf, magnitude);
    if (negative)
        *--p = '-';
    fwrite_unlocked(p, 1, (size_t)(buf + sizeof buf - p), f);
}

/*
 * The exact path of sps__format_g15.  %.15g rounds v's exact binary value
 * to 15 significant digits.  A candidate decimal d = m / 10^s (m below
 * 10^15, trailing zeros stripped, s <= 22 so 10^s is an exact double) is
 * that rounding when the double nearest d, which one IEEE division gives
 * exactly, is v or a neighbour of v: then |v - d| <= 1.5 ulp(v) < 3.4e-16
 * |v|, less than half the 15-digit spacing around v (more than 5e-16 |v|),
 * so d is the 15-digit value nearest v.  Anything else, or a candidate the
 * scaling got wrong, fails the check and goes to printf.  Returns the
 * length, or 0 for printf.
 */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* 10^0 .. 10^30 (exact to 10^27 in x86's long double; a rounded one can
 * only make a candidate fail the check) */
static const long double pow10_long[31] = {
    1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L,
    1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L, 1e28L, 1e29L, 1e30L};

static int g15_exact(char *buf, double v, int *exact) {
    double a = fabs(v);
    if (!(a >= 1e-15 && a < 1e15))
        return 0;
    int e = (int)floor(log10(a)); /* the decimal exponent, maybe one off: fixed below */
    uint64_t m = 0;
    for (int tries = 0; tries < 2; tries++) {
        if (14 - e < 0 || 14 - e > 30)
            return 0;
        long double scaled = (long double)a * pow10_long[14 - e];
        m = (uint64_t)llroundl(scaled);
        if (m >= 1000000000000000u)
            e++;
        else if (m < 100000000000000u)
            e--;
        else
            break;
    }
    if (m < 100000000000000u || m >= 1000000000000000u)
        return 0;
    int s = 14 - e; /* d = m / 10^s */
    while (s > 0 && m % 10 == 0) {
        m /= 10;
        s--;
    }
    if (s <= 0 || s > 22)
        return 0; /* a whole number (the caller's path) or beyond exact powers */
    double near = (double)m / pow10_exact[s];
    if (near != a && nextafter(near, INFINITY) != a && nextafter(near, 0.0) != a)
        return 0;
    /* d reads back as the double nearest it, which is near: v itself
     * only when near is v */
    *exact = near == a;
    /* m's digits, then %g's layout: exponent form below 1e-4 */
    char dig[24];
    char *d = digits(dig + sizeof dig, m);
    int n = (int)(dig + sizeof dig - d), x = n - 1 - s; /* d = 0.d1d2... x 10^(x+1) */
    char *o = buf;
    if (v < 0)
        *o++ = '-';
    if (x < -4) {
        *o++ = d[0];
        if (n > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)n - 1);
            o += n - 1;
        }
        int ex = -x;
        *o++ = 'e';
        *o++ = '-';
        if (ex >= 100)
            *o++ = (char)('0' + ex / 100);
        *o++ = (char)('0' + ex / 10 % 10);
        *o++ = (char)('0' + ex % 10);
    } else if (x >= 0) { /* n > x + 1: s > 0 leaves a fraction */
        memcpy(o, d, (size_t)x + 1);
        o += x + 1;
        *o++ = '.';
        memcpy(o, d + x + 1, (size_t)(n - x - 1));
        o += n - x - 1;
    } else {
        *o++ = '0';
        *o++ = '.';
        for (int z = 0; z < -x - 1; z++)
            *o++ = '0';
        memcpy(o, d, (size_t)n);
        o += n;
    }
    *o = '\0';
    return (int)(o - buf);
}

int sps__format_g15(char *buf, double v) {
    if (isfinite(v) && v == trunc(v) && fabs(v) < 1e15) {
        /* a whole number of at most 15 digits: its digits ("-0" for
         * negative zero) */
        char tmp[24];
        char *p = digits(tmp + sizeof tmp, (uint64_t)fabs(v));
        if (signbit(v))
            *--p = '-';
        int len = (int)(tmp + sizeof tmp - p);
        memcpy(buf, p, (size_t)len);
        buf[len] = '\0';
        return len;
    }
    int exact = 0;
    int len = isfinite(v) ? g15_exact(buf, v, &exact) : 0;
    return len ? len : snprintf(buf, 32, "%.15g", v);
}

int sps__jw_format_number(char *buf, size_t len, double v) {
    if (len >= 32 && isfinite(v)) {
        if (v == trunc(v) && fabs(v) < 1e15)
            return sps__format_g15(buf, v); /* a whole number: exact */
        int exact = 0;
        int n = g15_exact(buf, v, &exact);
        if (n && exact)
            return n;
    }
    /* the rest (a float widened to double, a ratio): 15, 16 or 17 digits,
     * the first that reads back */
    int n = 0;
    for (int digits = 15; digits <= 17; digits++) {
        n = snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return n;
}

void sps__jw_number(struct sps_jw *w, const char *key, double v) {
    lead(w, key);
    if (!isfinite(v)) {
        fwrite_unlocked("null", 1, 4, w->f);
        return;
    }
    char buf[32];
    int len = sps__jw_format_number(buf, sizeof buf, v);
    fwrite_unlocked(buf, 1, (size_t)len, w->f);
}

void sps__jw_int(struct sps_jw *w, const char *key, int64_t v) {
    lead(w, key);
    put_int(w->f, v < 0, v < 0 ? 0u - (uint64_t)v : (uint64_t)v);
}

void sps__jw_uint(struct sps_jw *w, const char *key, uint64_t v) {
    lead(w, key);
    put_int(w->f, 0, v);
}

void sps__jw_bool(struct sps_jw *w, const char *key, int v) {
    lead(w, key);
    fwrite_unlocked(v ? "true" : "false", 1, v ? 4 : 5, w->f);
}

void sps__jw_null(struct sps_jw *w, const char *key) {
    lead(w, key);
    fwrite_unlocked("null", 1, 4, w->f);
}
