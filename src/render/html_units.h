/*
 * html_units.h - numbers in human units for report.html: axis units
 * (µs/ms/s, KiB/MiB/GiB) and single values written by the formatters
 * every renderer shares (sps__fmt_seconds, sps__fmt_bytes in
 * render/render.h), so the page and the terminal summary read alike.
 *
 * Pure functions of their arguments; thread-safe.
 */
#ifndef SPS_RENDER_HTML_UNITS_H
#define SPS_RENDER_HTML_UNITS_H

#include <stddef.h>

/* A display unit: a value v in base units (s, bytes) reads v / div name. */
struct html_unit {
    double div;
    const char *name;
};

/* The unit in which the largest of some durations (seconds) reads best:
 * µs below 1 ms, ms below 1 s, else s. */
struct html_unit html_duration_unit(double max_s);
/* For an elapsed time axis: s, or min beyond 10 minutes, or h beyond 2 hours. */
struct html_unit html_elapsed_unit(double max_s);
/* For sizes: B, KiB, MiB or GiB, the largest that keeps max_bytes >= 1. */
struct html_unit html_bytes_unit(double max_bytes);

/* One value with its unit ("12.30 ms", "1.5 GiB", "-3.0 MiB") into buf,
 * as the summary writes it; "–" (unknown) when v is not finite.  Returns
 * buf. */
const char *html_fmt_duration(char *buf, size_t len, double seconds);
const char *html_fmt_bytes(char *buf, size_t len, double bytes);

#endif /* SPS_RENDER_HTML_UNITS_H */
