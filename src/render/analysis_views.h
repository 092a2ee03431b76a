/*
 * analysis_views.h - report.json's "analysis" for a person: lines under
 * the terminal summary and a section of report.html.  Both read
 * report.json (not the analysis structs), so `stepscope report` shows the
 * same answers as the run did.  Each part of the analysis has its own
 * printer in its own file (analysis_<part>.c), called from here.
 *
 * Pure functions of their arguments and the stream; thread-safe.
 */
#ifndef SPS_RENDER_ANALYSIS_VIEWS_H
#define SPS_RENDER_ANALYSIS_VIEWS_H

#include <jansson.h>
#include <stdio.h>

/* Every analysis line under the summary starts with its part's label
 * padded to this many columns, and a continuation line with as many
 * spaces, so the answers line up in one column. */
#define SPS_ANALYSIS_LABEL_WIDTH 12

/* Write label padded to SPS_ANALYSIS_LABEL_WIDTH ("" for a continuation
 * line's indent). */
void sps__analysis_label(FILE *f, const char *label);

/* The terminal lines (nothing when report has no analysis). */
void sps__analysis_print(FILE *f, const json_t *report);

/* The report.html section (nothing when report has no analysis).  Text is
 * escaped; no script. */
void sps__analysis_html(FILE *out, const json_t *report);

/* The parts' printers, given report.json's "analysis" object (nothing
 * when their part is absent). */
void sps__analysis_bottleneck_print(FILE *f, const json_t *analysis);
void sps__analysis_bottleneck_html(FILE *out, const json_t *analysis);
/* analysis.leaks (analysis_leaks.c): nothing when leaks is not an object. */
void sps__analysis_leaks_print(FILE *f, const json_t *leaks);
void sps__analysis_leaks_html(FILE *out, const json_t *leaks);
/* The parts, each given its object of "analysis" (nothing when it is not
 * an object). */
void sps__overhead_print(FILE *f, const json_t *overhead);
/* The budget's one-line account into buf (len bytes); 0 when no budget
 * was set. */
int sps__overhead_budget_text(const json_t *overhead, char *buf, size_t len);
void sps__overhead_html(FILE *out, const json_t *overhead);
/* The parts' views; each takes report.json's "analysis" object and shows
 * nothing when its part is absent. */
void sps__analysis_energy_print(FILE *f, const json_t *analysis);
void sps__analysis_energy_html(FILE *out, const json_t *analysis);
void sps__analysis_throughput_print(FILE *f, const json_t *analysis);
void sps__analysis_throughput_html(FILE *out, const json_t *analysis);

#endif /* SPS_RENDER_ANALYSIS_VIEWS_H */
