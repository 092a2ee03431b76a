/* html_units.c - human units and report.json accessors for report.html
 * (see html_units.h). */
#include "render/html_units.h"

#include <math.h>
#include <stdio.h>

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

/* Three significant digits, without an exponent for values below 10000. */
static void fmt_scaled(char *buf, size_t len, double v, const char *unit) {
    if (fabs(v) >= 100)
        snprintf(buf, len, "%.0f %s", v, unit);
    else
        snprintf(buf, len, "%.3g %s", v, unit);
}

void html_fmt_duration(char *buf, size_t len, double seconds) {
    if (!isfinite(seconds)) {
        snprintf(buf, len, "–");
        return;
    }
    if (seconds >= 3600) {
        snprintf(buf, len, "%.0f h %02.0f min", floor(seconds / 3600), floor(fmod(seconds, 3600) / 60));
        return;
    }
    if (seconds >= 100) {
        snprintf(buf, len, "%.0f min %02.0f s", floor(seconds / 60), floor(fmod(seconds, 60)));
        return;
    }
    struct html_unit u = html_duration_unit(fabs(seconds));
    if (seconds == 0)
        u = (struct html_unit){1, "s"};
    fmt_scaled(buf, len, seconds / u.div, u.name);
}

void html_fmt_bytes(char *buf, size_t len, double bytes) {
    if (!isfinite(bytes)) {
        snprintf(buf, len, "–");
        return;
    }
    struct html_unit u = html_bytes_unit(fabs(bytes));
    if (u.div == 1)
        snprintf(buf, len, "%.0f B", bytes);
    else
        fmt_scaled(buf, len, bytes / u.div, u.name);
}

double html_num(const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *html_str(const json_t *obj, const char *key) {
    return json_string_value(json_object_get(obj, key));
}
