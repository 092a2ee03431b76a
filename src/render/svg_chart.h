/*
 * svg_chart.h - a small writer of inline SVG charts for report.html: one
 * plot area with titled axes, grid lines at "nice" tick values (1, 2 or 5
 * times a power of ten), a legend above the plot, and the marks drawn in
 * data coordinates (lines, filled areas, bars, horizontal and vertical
 * reference lines, shaded bands).
 *
 * The chart is written as it is drawn, straight to a stream: nothing is
 * kept but the scale.  Every string given (titles, legend labels) is
 * escaped for HTML/XML here, so callers pass raw text.  The SVG has a
 * viewBox and no fixed size, so the page scales it with CSS (width:100%).
 *
 * A struct svg_chart belongs to one thread; the functions keep no other
 * state and are otherwise thread-safe.
 */
#ifndef SPS_RENDER_SVG_CHART_H
#define SPS_RENDER_SVG_CHART_H

#include <stddef.h>
#include <stdio.h>

/* Write s with &, <, >, " and ' escaped, so that it is safe both as text
 * and inside a quoted attribute.  NULL writes nothing. */
void svg_write_escaped(FILE *out, const char *s);

/* Ticks for [lo, hi]: about target values at 1, 2 or 5 times a power of
 * ten.  *first and *last are the ticks at or just outside lo and hi,
 * *step their spacing; lo == hi is widened first.  Returns the number of
 * ticks (*last - *first) / *step + 1. */
int svg_nice_ticks(double lo, double hi, int target, double *first, double *last, double *step);

/* One legend entry: a swatch of the colour (a line when dashed or is_line,
 * else a filled square) and the label. */
struct svg_legend_item {
    const char *label;
    const char *color; /* CSS colour */
    int is_line;       /* 1: a short line, 0: a filled square */
    int dashed;
};

struct svg_chart {
    FILE *out;
    double width, height;                      /* the viewBox, px */
    double plot_left, plot_right, plot_top, plot_bottom; /* the plot area, px */
    double x_lo, x_hi, y_lo, y_hi;             /* data range mapped onto the plot area */
};

/* The axes of a chart: the data range and a title with its unit, e.g.
 * "time since start (s)".  With y_from_zero the y axis starts at 0 (or
 * below, for negative data); otherwise at a nice value below y_min.
 * x_ticks_integral puts x ticks on whole numbers only (step numbers). */
struct svg_axes {
    double x_min, x_max;
    const char *x_title;
    int x_ticks_integral;
    double y_min, y_max;
    const char *y_title;
    int y_from_zero;
};

/* Start a chart of width x height px (the viewBox) on out: <svg>, the
 * legend (nitems entries, wrapped onto as many rows as they need), grid,
 * ticks with their labels and the axis titles.  aria_label (raw text)
 * names the chart for screen readers. */
void svg_chart_begin(struct svg_chart *c, FILE *out, double width, double height, const char *aria_label,
                     const struct svg_axes *axes, const struct svg_legend_item *items, size_t nitems);

/* Data coordinates to px, clamped to the plot area. */
double svg_chart_px_x(const struct svg_chart *c, double x);
double svg_chart_px_y(const struct svg_chart *c, double y);

/* A polyline through the n points (x[i], y[i] * y_scale); points whose
 * value is not finite break the line.  dashed: a dashed stroke. */
void svg_chart_line(struct svg_chart *c, const double *x, const double *y, size_t n, double y_scale,
                    const char *color, double stroke_width, int dashed);

/* The same points filled down to y = 0 with the colour at opacity. */
void svg_chart_area(struct svg_chart *c, const double *x, const double *y, size_t n, double y_scale,
                    const char *color, double opacity);

/* A filled rectangle from (x_left, y_bottom) to (x_right, y_top), in data
 * coordinates; nothing when it would be less than 0.05 px high. */
void svg_chart_rect(struct svg_chart *c, double x_left, double x_right, double y_bottom, double y_top,
                    const char *color);

/* A horizontal line across the plot at y, labelled at its right end,
 * above the line or (label_below, for a second line close by) below it. */
void svg_chart_hline(struct svg_chart *c, double y, const char *color, int dashed, const char *label,
                     int label_below);

/* A full-height shaded band between y values, or between x values. */
void svg_chart_yband(struct svg_chart *c, double y_lo, double y_hi, const char *color, double opacity);
void svg_chart_xband(struct svg_chart *c, double x_lo, double x_hi, const char *color, double opacity);

/* A thin full-height vertical line at x (a step boundary). */
void svg_chart_vline(struct svg_chart *c, double x, const char *color, double opacity);

/* Close the plot: the axis lines on top of the marks, then </svg>. */
void svg_chart_end(struct svg_chart *c);

#endif /* SPS_RENDER_SVG_CHART_H */
