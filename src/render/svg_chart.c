/* svg_chart.c - inline SVG charts for report.html (see svg_chart.h). */
#include "render/svg_chart.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Layout, in px of the viewBox.  The legend rows sit above the plot; the
 * left margin holds the y tick labels and the rotated y title. */
#define MARGIN_LEFT 78.0
#define MARGIN_RIGHT 20.0
#define MARGIN_TOP 10.0
#define MARGIN_BOTTOM 46.0
#define LEGEND_ROW 20.0
#define FONT_PX 12.0
/* A rough width of one character of the 12 px sans-serif font, used to
 * lay the legend out (SVG text cannot be measured from C). */
#define CHAR_PX 6.8

#define GRID_COLOR "#e3e5e8"
#define AXIS_COLOR "#6b7280"
#define TEXT_COLOR "#374151"

void svg_write_escaped(FILE *out, const char *s) {
    if (!s)
        return;
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* The "nice" number nearest x (round) or at or above it: 1, 2 or 5 (or
 * 10) times a power of ten. */
static double nice_number(double x, int round) {
    double exp10 = pow(10.0, floor(log10(x)));
    double f = x / exp10;
    double nf;
    if (round)
        nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else
        nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * exp10;
}

int svg_nice_ticks(double lo, double hi, int target, double *first, double *last, double *step) {
    if (!isfinite(lo) || !isfinite(hi)) {
        lo = 0;
        hi = 1;
    }
    if (hi < lo) {
        double t = lo;
        lo = hi;
        hi = t;
    }
    /* figures read from a file may span more than a double holds
     * (-1.7e308 to 1.7e308): hi - lo would be infinite and the tick count
     * NaN, outside an int */
    lo = fmin(fmax(lo, -DBL_MAX / 4), DBL_MAX / 4);
    hi = fmin(fmax(hi, -DBL_MAX / 4), DBL_MAX / 4);
    if (hi - lo < 1e-12 * (fabs(hi) + 1e-300) || hi == lo) {
        /* one value: a range around it that still reads as a number */
        double pad = lo == 0 ? 1 : fabs(lo) * 0.1;
        lo -= pad;
        hi += pad;
        if (lo < 0 && hi - pad * 2 >= 0)
            lo = 0;
    }
    if (target < 2)
        target = 2;
    double range = nice_number(hi - lo, 0);
    double d = nice_number(range / (target - 1), 1);
    *first = floor(lo / d) * d;
    *last = ceil(hi / d) * d;
    *step = d;
    double ticks = floor((*last - *first) / d + 0.5) + 1;
    return ticks >= 2 && ticks <= 1000 ? (int)ticks : 2; /* nice_number keeps it near target */
}

/* Decimals enough to tell ticks step apart (0 for whole steps). */
static int tick_decimals(double step) {
    if (step >= 1)
        return 0;
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 9 ? 9 : d;
}

static double legend_item_px(const struct svg_legend_item *it) {
    return 22.0 + CHAR_PX * (double)strlen(it->label ? it->label : "") + 18.0;
}

/* The legend, laid out left to right and wrapped; returns the rows used
 * (and writes them when out is not NULL). */
static int legend_layout(FILE *out, double width, const struct svg_legend_item *items, size_t n) {
    if (n == 0)
        return 0;
    double x = MARGIN_LEFT, avail = width - MARGIN_RIGHT;
    int row = 0;
    for (size_t i = 0; i < n; i++) {
        double w = legend_item_px(&items[i]);
        if (x > MARGIN_LEFT && x + w > avail) {
            row++;
            x = MARGIN_LEFT;
        }
        if (out) {
            double y = MARGIN_TOP + row * LEGEND_ROW + LEGEND_ROW / 2;
            if (items[i].is_line || items[i].dashed)
                fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"%s/>",
                        x, y, x + 16, y, items[i].color, items[i].dashed ? " stroke-dasharray=\"5 3\"" : "");
            else
                fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" rx=\"2\" fill=\"%s\"/>", x + 2,
                        y - 6, items[i].color);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" dominant-baseline=\"middle\">", x + 22, y + 0.5);
            svg_write_escaped(out, items[i].label);
            fputs("</text>", out);
        }
        x += w;
    }
    return row + 1;
}

void svg_chart_begin(struct svg_chart *c, FILE *out, double width, double height, const char *aria_label,
                     const struct svg_axes *axes, const struct svg_legend_item *items, size_t nitems) {
    memset(c, 0, sizeof *c);
    c->out = out;
    c->width = width;
    c->height = height;
    int legend_rows = legend_layout(NULL, width, items, nitems);
    c->plot_left = MARGIN_LEFT;
    c->plot_right = width - MARGIN_RIGHT;
    c->plot_top = MARGIN_TOP + legend_rows * LEGEND_ROW + (legend_rows ? 8 : 4);
    c->plot_bottom = height - MARGIN_BOTTOM;

    double y_min = axes->y_min, y_max = axes->y_max;
    if (!isfinite(y_min) || !isfinite(y_max)) {
        y_min = 0;
        y_max = 1;
    }
    if (axes->y_from_zero && y_min > 0)
        y_min = 0;
    double yf, yl, ys;
    int ny = svg_nice_ticks(y_min, y_max, 6, &yf, &yl, &ys);
    c->y_lo = yf;
    c->y_hi = yl;

    c->x_lo = axes->x_min;
    c->x_hi = axes->x_max;
    if (!isfinite(c->x_lo) || !isfinite(c->x_hi) || c->x_hi <= c->x_lo) {
        c->x_lo = isfinite(axes->x_min) ? axes->x_min : 0;
        c->x_hi = c->x_lo + 1;
    }
    double xf, xl, xs;
    int nx = svg_nice_ticks(c->x_lo, c->x_hi, 10, &xf, &xl, &xs);
    if (axes->x_ticks_integral && xs < 1) {
        xs = 1;
        xf = ceil(c->x_lo);
        nx = (int)floor(c->x_hi - xf) + 1;
    }

    fprintf(out,
            "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
            "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif\" "
            "font-size=\"%.0f\" fill=\"%s\" aria-label=\"",
            width, height, FONT_PX, TEXT_COLOR);
    svg_write_escaped(out, aria_label);
    fputs("\">\n", out);
    legend_layout(out, width, items, nitems);
    fputc('\n', out);

    /* y grid and tick labels */
    int yd = tick_decimals(ys);
    for (int i = 0; i < ny; i++) {
        double v = yf + i * ys;
        double py = svg_chart_px_y(c, v);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", c->plot_left, py,
                c->plot_right, py, GRID_COLOR);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">%.*f</text>\n",
                c->plot_left - 6, py, yd, fabs(v) < ys * 1e-6 ? 0.0 : v);
    }
    /* x grid and tick labels: only ticks inside the data range */
    int xd = tick_decimals(xs);
    for (int i = 0; i < nx; i++) {
        double v = xf + i * xs;
        if (v < c->x_lo - xs * 1e-6 || v > c->x_hi + xs * 1e-6)
            continue;
        double px = svg_chart_px_x(c, v);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", px, c->plot_top, px,
                c->plot_bottom, GRID_COLOR);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n", px, c->plot_bottom + 16, xd,
                fabs(v) < xs * 1e-6 ? 0.0 : v);
    }
    /* axis titles */
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\" class=\"axis-title\">",
            (c->plot_left + c->plot_right) / 2, height - 8);
    svg_write_escaped(out, axes->x_title);
    fputs("</text>\n", out);
    double cy = (c->plot_top + c->plot_bottom) / 2;
    fprintf(out,
            "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\" class=\"axis-title\" "
            "transform=\"rotate(-90 16 %.1f)\">",
            cy, cy);
    svg_write_escaped(out, axes->y_title);
    fputs("</text>\n", out);
}

double svg_chart_px_x(const struct svg_chart *c, double x) {
    double f = (x - c->x_lo) / (c->x_hi - c->x_lo);
    if (!(f >= 0))
        f = 0;
    if (f > 1)
        f = 1;
    return c->plot_left + f * (c->plot_right - c->plot_left);
}

double svg_chart_px_y(const struct svg_chart *c, double y) {
    double f = (y - c->y_lo) / (c->y_hi - c->y_lo);
    if (!(f >= 0))
        f = 0;
    if (f > 1)
        f = 1;
    return c->plot_bottom - f * (c->plot_bottom - c->plot_top);
}

void svg_chart_line(struct svg_chart *c, const double *x, const double *y, size_t n, double y_scale,
                    const char *color, double stroke_width, int dashed) {
    size_t i = 0;
    while (i < n) {
        while (i < n && !(isfinite(x[i]) && isfinite(y[i])))
            i++;
        if (i >= n)
            break;
        /* one polyline per run of finite points; a lone point is a dot */
        size_t j = i;
        while (j < n && isfinite(x[j]) && isfinite(y[j]))
            j++;
        if (j - i == 1) {
            fprintf(c->out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", svg_chart_px_x(c, x[i]),
                    svg_chart_px_y(c, y[i] * y_scale), color);
        } else {
            fprintf(c->out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-linejoin=\"round\"%s points=\"",
                    color, stroke_width, dashed ? " stroke-dasharray=\"5 3\"" : "");
            for (size_t k = i; k < j; k++)
                fprintf(c->out, "%s%.1f,%.1f", k > i ? " " : "", svg_chart_px_x(c, x[k]),
                        svg_chart_px_y(c, y[k] * y_scale));
            fputs("\"/>\n", c->out);
        }
        i = j;
    }
}

void svg_chart_area(struct svg_chart *c, const double *x, const double *y, size_t n, double y_scale,
                    const char *color, double opacity) {
    size_t i = 0;
    while (i < n) {
        while (i < n && !(isfinite(x[i]) && isfinite(y[i])))
            i++;
        size_t j = i;
        while (j < n && isfinite(x[j]) && isfinite(y[j]))
            j++;
        if (j - i >= 2) {
            double base = svg_chart_px_y(c, 0 > c->y_lo ? 0 : c->y_lo);
            fprintf(c->out, "<path fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"none\" d=\"M%.1f,%.1f", color, opacity,
                    svg_chart_px_x(c, x[i]), base);
            for (size_t k = i; k < j; k++)
                fprintf(c->out, "L%.1f,%.1f", svg_chart_px_x(c, x[k]), svg_chart_px_y(c, y[k] * y_scale));
            fprintf(c->out, "L%.1f,%.1fZ\"/>\n", svg_chart_px_x(c, x[j - 1]), base);
        }
        i = j;
    }
}

void svg_chart_rect(struct svg_chart *c, double x_left, double x_right, double y_bottom, double y_top,
                    const char *color) {
    double px0 = svg_chart_px_x(c, x_left), px1 = svg_chart_px_x(c, x_right);
    double py0 = svg_chart_px_y(c, y_top), py1 = svg_chart_px_y(c, y_bottom);
    if (py1 - py0 < 0.05 || px1 <= px0)
        return;
    fprintf(c->out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", px0, py0,
            px1 - px0, py1 - py0, color);
}

void svg_chart_hline(struct svg_chart *c, double y, const char *color, int dashed, const char *label,
                     int label_below) {
    if (!isfinite(y))
        return;
    double py = svg_chart_px_y(c, y);
    fprintf(c->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\"%s/>\n",
            c->plot_left, py, c->plot_right, py, color, dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (label && *label) {
        /* a white halo keeps the label legible over bars */
        fprintf(c->out,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\" font-weight=\"600\" stroke=\"#fff\" "
                "stroke-width=\"3\" paint-order=\"stroke\">",
                c->plot_right - 4, label_below ? py + 14 : py - 5, color);
        svg_write_escaped(c->out, label);
        fputs("</text>\n", c->out);
    }
}

void svg_chart_yband(struct svg_chart *c, double y_lo, double y_hi, const char *color, double opacity) {
    if (!isfinite(y_lo) || !isfinite(y_hi))
        return;
    double top = svg_chart_px_y(c, y_hi), bottom = svg_chart_px_y(c, y_lo);
    fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"%.2f\"/>\n",
            c->plot_left, top, c->plot_right - c->plot_left, bottom - top, color, opacity);
}

void svg_chart_xband(struct svg_chart *c, double x_lo, double x_hi, const char *color, double opacity) {
    if (!isfinite(x_lo) || !isfinite(x_hi))
        return;
    double left = svg_chart_px_x(c, x_lo), right = svg_chart_px_x(c, x_hi);
    if (right - left < 1)
        right = left + 1; /* a band narrower than a pixel still shows */
    fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"%.2f\"/>\n",
            left, c->plot_top, right - left, c->plot_bottom - c->plot_top, color, opacity);
}

void svg_chart_vline(struct svg_chart *c, double x, const char *color, double opacity) {
    if (!isfinite(x))
        return;
    double px = svg_chart_px_x(c, x);
    fprintf(c->out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-opacity=\"%.2f\" "
            "stroke-width=\"1\"/>\n",
            px, c->plot_top, px, c->plot_bottom, color, opacity);
}

void svg_chart_end(struct svg_chart *c) {
    fprintf(c->out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n</svg>\n",
            c->plot_left, c->plot_top, c->plot_left, c->plot_bottom, AXIS_COLOR, c->plot_left, c->plot_bottom,
            c->plot_right, c->plot_bottom, AXIS_COLOR);
}
