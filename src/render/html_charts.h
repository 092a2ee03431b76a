/*
 * html_charts.h - the chart sections of report.html, each made from the
 * report model (report/report.h): step time per step, the values the
 * workload recorded per step (the loss), the phase breakdown per step,
 * and the machine's metrics over time (memory, CPU and GPU utilisation,
 * temperatures, power) with the steps marked on them.
 *
 * Each writer prints one <section> with a title, a sentence saying what
 * the chart shows, and either an inline <svg> or, when there is nothing
 * to draw, a sentence saying why.  Not thread-safe per stream.
 */
#ifndef SPS_RENDER_HTML_CHARTS_H
#define SPS_RENDER_HTML_CHARTS_H

#include <stddef.h>
#include <stdio.h>

#include "report/report.h"

/* The step table's rows as the charts draw them (rows borrowed from the
 * report, which must outlive this). */
struct html_steps {
    size_t n;
    size_t nwarm;        /* rows marked warm-up */
    double *start_s;     /* each row's start, seconds after the run's start */
    double *duration_s;  /* each row's duration */
    unsigned char *warm; /* 1 for a warm-up row */
    const struct sps_step_row *rows;
    struct sps_step_row *owned_rows; /* rows when a copy of one rank's (html_steps_load_rank), else NULL */
};

/* Fill *s from rep's step rows; 0, or SPS_ENOMEM (then *s holds nothing). */
int html_steps_load(const struct sps_report *rep, struct html_steps *s);
void html_steps_free(struct html_steps *s);

/* The sections; each returns 0 or SPS_ENOMEM.  html_write_values writes
 * nothing when no step holds a recorded value. */
int html_write_step_time(FILE *out, const struct sps_report *rep, const struct html_steps *s);
int html_write_values(FILE *out, const struct sps_report *rep, const struct html_steps *s);
int html_write_phases(FILE *out, const struct sps_report *rep, const struct html_steps *s);
int html_write_timelines(FILE *out, const struct sps_report *rep, const struct html_steps *s);
/* torch.cuda's memory per step (html_torch_memory.c): nothing when no
 * step carries torch.cuda.allocated_bytes.  html_write_values leaves the
 * torch.cuda.* values to it. */
int html_write_torch_memory(FILE *out, const struct sps_report *rep, const struct html_steps *s);

/* A run of two ranks or more (html_ranks.c): the rank a step row is of
 * (-1: none); one rank's rows for the per-step charts (a copy: the ranks'
 * steps are not one sequence; 0 or SPS_ENOMEM); the rank they draw (the
 * lowest with steps); the step time as one line a rank; the per-rank
 * table (nothing with fewer than two ranks). */
int html_rank_of_row(const struct sps_report *rep, const struct sps_step_row *r);
int html_steps_load_rank(const struct sps_report *rep, int rank, struct html_steps *s);
int html_charted_rank(const struct sps_report *rep);
int html_write_step_time_ranks(FILE *out, const struct sps_report *rep);
void html_write_rank_table(FILE *out, const struct sps_report *rep);

/* What the chart writers share (html_charts.c): a section's opening
 * (<section>, <h2>title</h2>, a sentence saying what it shows), the
 * sentence standing in for a chart with nothing to draw, a note under a
 * chart, and the palette (one hue per series, cycling). */
void html_section_begin(FILE *out, const char *id, const char *title, const char *what);
void html_write_empty(FILE *out, const char *why);
void html_write_note(FILE *out, const char *note);
const char *html_palette(size_t i);
#define HTML_CHART_WIDTH 1200.0
#define HTML_CHART_HEIGHT 330.0
#define HTML_COLOR_WARMUP "#f28e2b"
#define HTML_COLOR_BOUNDARY "#6b7280"

#endif /* SPS_RENDER_HTML_CHARTS_H */
