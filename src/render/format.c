/*
 * format.c - the one formatter for durations and the one for byte sizes
 * that every text stepscope prints uses: the terminal summary, the
 * analysis lines, report.html and the live status (render.h).
 */
#include <math.h>
#include <stdio.h>

#include "render/render.h"

/* Three significant digits in the unit that suits: "312 ms", "31.2 ms",
 * "1.25 s", "22.5 ns"; whole seconds from 1000 s on. */
const char *sps__fmt_seconds(double s, char *buf, size_t len) {
    static const struct {
        double div;
        const char *unit;
    } units[] = {{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"}};
    if (isnan(s)) {
        snprintf(buf, len, "-");
        return buf;
    }
    double a = fabs(s);
    int u = 3;
    while (u > 0 && a < units[u].div * 0.9995) /* 999.96 us is "1.00 ms" */
        u--;
    double v = s / units[u].div, av = fabs(v);
    /* what rounding to three digits would make of it decides the layout,
     * so 99.96 ms is "100 ms", not "100.0 ms" */
    snprintf(buf, len, av >= 99.95 || a == 0 ? "%.0f %s" : av >= 9.995 ? "%.1f %s" : "%.2f %s", v, units[u].unit);
    return buf;
}

const char *sps__fmt_bytes(double b, char *buf, size_t len) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (isnan(b)) {
        snprintf(buf, len, "-");
        return buf;
    }
    double a = fabs(b);
    int u = 0;
    while (a >= 1024 && u < 4) {
        a /= 1024;
        b /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, units[u]);
    return buf;
}
