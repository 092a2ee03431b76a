/*
 * html_charts.h - the chart sections of report.html, each made from
 * report.json alone: step time per step, the phase breakdown per step, and
 * the machine's metrics over time (memory, CPU and GPU utilisation,
 * temperatures, power) with the steps marked on them.
 *
 * Each writer prints one <section> with a title, a sentence saying what
 * the chart shows, and either an inline <svg> or, when there is nothing
 * to draw, a sentence saying why.  Not thread-safe per stream.
 */
#ifndef SPS_RENDER_HTML_CHARTS_H
#define SPS_RENDER_HTML_CHARTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The step table's rows, as arrays (borrowed from report.json: rows[i]
 * points into it, so the report must outlive this). */
struct html_steps {
    size_t n;
    size_t nwarm;        /* rows marked warm-up */
    double *start_s;     /* each row's start_s (NAN when absent) */
    double *duration_s;  /* each row's duration_s */
    unsigned char *warm; /* 1 for a warm-up row */
    json_t **rows;       /* the row objects */
};

/* Fill *s from report.steps.rows; 0, or SPS_ENOMEM (then *s holds nothing). */
int html_steps_load(const json_t *report, struct html_steps *s);
void html_steps_free(struct html_steps *s);

/* The sections; each returns 0 or SPS_ENOMEM. */
int html_write_step_time(FILE *out, const json_t *report, const struct html_steps *s);
int html_write_phases(FILE *out, const json_t *report, const struct html_steps *s);
int html_write_timelines(FILE *out, const json_t *report, const struct html_steps *s);

#endif /* SPS_RENDER_HTML_CHARTS_H */
