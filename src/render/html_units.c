/* html_units.c - human units for report.html (see html_units.h). */
#include "render/html_units.h"

#include <math.h>
#include <stdio.h>

#include "render/render.h"

struct html_unit html_duration_unit(double max_s) {
    if (!(max_s >= 1e-3))
        return (struct html_unit){1e-6, "µs"};
    if (max_s < 1)
        return (struct html_unit){1e-3, "ms"};
    return (struct html_unit){1, "s"};
}

struct html_unit html_elapsed_unit(double max_s) {
    if (max_s > 7200)
        return (struct html_unit){3600, "h"};
    if (max_s > 600)
        return (struct html_unit){60, "min"};
    return (struct html_unit){1, "s"};
}

struct html_unit html_bytes_unit(double max_bytes) {
    if (max_bytes >= 1024.0 * 1024 * 1024)
        return (struct html_unit){1024.0 * 1024 * 1024, "GiB"};
    if (max_bytes >= 1024.0 * 1024)
        return (struct html_unit){1024.0 * 1024, "MiB"};
    if (max_bytes >= 1024.0)
        return (struct html_unit){1024.0, "KiB"};
    return (struct html_unit){1, "B"};
}

/* The shared formatters take magnitudes: a negative value (memory that
 * shrank, a slope below zero) is its magnitude with a minus sign. */
typedef const char *(*magnitude_fmt)(double v, char *buf, size_t len);

static const char *fmt_signed(char *buf, size_t len, double v, magnitude_fmt fmt) {
    if (!isfinite(v)) {
        snprintf(buf, len, "–");
        return buf;
    }
    if (v >= 0 || len < 2)
        return fmt(v, buf, len);
    buf[0] = '-';
    fmt(-v, buf + 1, len - 1);
    return buf;
}

const char *html_fmt_duration(char *buf, size_t len, double seconds) {
    return fmt_signed(buf, len, seconds, sps__fmt_seconds);
}

const char *html_fmt_bytes(char *buf, size_t len, double bytes) {
    return fmt_signed(buf, len, bytes, sps__fmt_bytes);
}
