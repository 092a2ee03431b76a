/*
 * analysis_views.h - the analysis (struct sps_analysis, computed once
 * into the report model) for a person: lines under the terminal summary
 * and sections of report.html.  Both read the typed analysis, so
 * `stepscope run` and `stepscope report` say the same thing about a run
 * however it was loaded.  Each part of the analysis has its own printer
 * in its own file (analysis_<part>.c), called from here.
 *
 * Pure functions of their arguments and the stream; thread-safe.
 */
#ifndef SPS_RENDER_ANALYSIS_VIEWS_H
#define SPS_RENDER_ANALYSIS_VIEWS_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/analysis.h"

/* Every analysis line under the summary starts with its part's label
 * padded to this many columns, and a continuation line with as many
 * spaces, so the answers line up in one column. */
#define SPS_ANALYSIS_LABEL_WIDTH 12

/* Write label padded to SPS_ANALYSIS_LABEL_WIDTH ("" for a continuation
 * line's indent). */
void sps__analysis_label(FILE *f, const char *label);

/* The terminal lines (nothing when the analysis was not computed). */
void sps__analysis_print(FILE *f, const struct sps_analysis *a);

/* The report.html sections (nothing when the analysis was not computed).
 * Text is escaped; no script. */
void sps__analysis_html(FILE *out, const struct sps_analysis *a);

/* The parts' printers.  The leaks' print nothing when that part was not
 * computed. */
void sps__analysis_bottleneck_print(FILE *f, const struct sps_bottleneck *b);
void sps__analysis_bottleneck_html(FILE *out, const struct sps_bottleneck *b);
void sps__analysis_leaks_print(FILE *f, const struct sps_leaks *leaks);
void sps__analysis_leaks_html(FILE *out, const struct sps_leaks *leaks);
void sps__overhead_print(FILE *f, const struct sps_overhead *o);
/* The budget's one-line account into buf (len bytes); 0 when no budget
 * was set. */
int sps__overhead_budget_text(const struct sps_overhead *o, char *buf, size_t len);
void sps__overhead_html(FILE *out, const struct sps_overhead *o);
void sps__analysis_energy_print(FILE *f, const struct sps_energy *e);
void sps__analysis_energy_html(FILE *out, const struct sps_energy *e);
void sps__analysis_throughput_print(FILE *f, const struct sps_throughput *t);
void sps__analysis_throughput_html(FILE *out, const struct sps_throughput *t);
/* The straggler verdict's i-th line (one per slow rank, or one saying
 * none or why it is unknown) into buf; 0 when there is no such line
 * (and none at all for a job of fewer than two ranks). */
int sps__straggler_text(const struct sps_straggler *s, size_t i, char *buf, size_t len);
void sps__analysis_straggler_print(FILE *f, const struct sps_straggler *s);
void sps__analysis_straggler_html(FILE *out, const struct sps_straggler *s);
/* torch.cuda's memory in one line into buf (peak, end, growth, how many
 * steps knew their peak); 0 when the run recorded none.  Its printer
 * prints nothing then; report.html shows the line over its chart. */
int sps__torch_memory_text(const struct sps_torch_memory *t, char *buf, size_t len);
void sps__analysis_torch_memory_print(FILE *f, const struct sps_torch_memory *t);

#endif /* SPS_RENDER_ANALYSIS_VIEWS_H */
