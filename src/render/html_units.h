/*
 * html_units.h - what report.html needs to read report.json and to write
 * its numbers in human units (µs/ms/s, KiB/MiB/GiB, %, °C, W).
 *
 * Pure functions of their arguments; thread-safe.
 */
#ifndef SPS_RENDER_HTML_UNITS_H
#define SPS_RENDER_HTML_UNITS_H

#include <jansson.h>
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

/* One value with its unit ("12.2 µs", "1.50 GiB") into buf; "–" (unknown)
 * when v is not finite. */
void html_fmt_duration(char *buf, size_t len, double seconds);
void html_fmt_bytes(char *buf, size_t len, double bytes);

/* report.json accessors: the number at key of obj, NAN when it is absent
 * or null; the string, NULL when absent or not a string. */
double html_num(const json_t *obj, const char *key);
const char *html_str(const json_t *obj, const char *key);

#endif /* SPS_RENDER_HTML_UNITS_H */
