/* json_writer.c - see json_writer.h. */
#include "render/json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

void sps__json_escape(const char *s, sps__json_sink put, void *ctx) {
    put(ctx, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
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
        default:
            if (*p < 0x20)
                put(ctx, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p));
            else
                put(ctx, (const char *)p, 1);
        }
        p++;
    }
    put(ctx, "\"", 1);
}

static void file_sink(void *ctx, const char *bytes, size_t n) {
    fwrite(bytes, 1, n, ctx);
}

static void put_string(FILE *f, const char *s) {
    sps__json_escape(s, file_sink, f);
}

/* Separator, indentation and key before a value. */
static void lead(struct sps_jw *w, const char *key) {
    if (w->count[w->depth]++)
        fputs(w->flat[w->depth] ? ", " : ",", w->f);
    if (w->depth && !w->flat[w->depth]) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    if (key) {
        put_string(w->f, key);
        fputs(": ", w->f);
    }
}

static void open_level(struct sps_jw *w, const char *key, char opener, int flat) {
    lead(w, key);
    fputc(opener, w->f);
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
    if (had) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    fputc(closer, w->f);
    if (w->depth == 0)
        fputc('\n', w->f);
}

void sps__jw_string(struct sps_jw *w, const char *key, const char *s) {
    lead(w, key);
    put_string(w->f, s);
}

int sps__jw_format_number(char *buf, size_t len, double v) {
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
    if (isfinite(v)) {
        char buf[32];
        fwrite(buf, 1, (size_t)sps__jw_format_number(buf, sizeof buf, v), w->f);
    } else {
        fputs("null", w->f);
    }
}

void sps__jw_int(struct sps_jw *w, const char *key, int64_t v) {
    lead(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void sps__jw_uint(struct sps_jw *w, const char *key, uint64_t v) {
    lead(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void sps__jw_bool(struct sps_jw *w, const char *key, int v) {
    lead(w, key);
    fputs(v ? "true" : "false", w->f);
}

void sps__jw_null(struct sps_jw *w, const char *key) {
    lead(w, key);
    fputs("null", w->f);
}
