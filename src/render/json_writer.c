/* json_writer.c - see json_writer.h. */
#include "render/json_writer.h"

#include <inttypes.h>
#include <math.h>

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

void sps__jw_number(struct sps_jw *w, const char *key, double v) {
    lead(w, key);
    if (!isfinite(v)) {
        fwrite_unlocked("null", 1, 4, w->f);
    } else if (v == trunc(v) && fabs(v) < 1e15) {
        /* what %.15g writes for a whole number of at most 15 digits ("-0"
         * for negative zero), without printf's floating-point path */
        put_int(w->f, signbit(v) != 0, (uint64_t)fabs(v));
    } else {
        fprintf(w->f, "%.15g", v);
    }
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
