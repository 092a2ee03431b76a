/*
 * auto_mode.h - which mode recorded a run's steps (stepscope run's
 * auto-instrumentation, stepscope.torch.instrument, or the program's own
 * zones), as report.json, the terminal summary and report.html say it.
 * The facts are the model's (sps__run_auto, src/model/run.h).
 */
#ifndef SPS_RENDER_AUTO_MODE_H
#define SPS_RENDER_AUTO_MODE_H

#include <stddef.h>

#include "model/run.h"
#include "render/json_writer.h"

struct sps_report;

/* report.json's top-level "steps_recorded_by" and "auto" (docs/report-format.md). */
void sps__report_json_auto(struct sps_jw *w, const struct sps_report *rep);

/* A processes[] entry's "auto" and "instrument". */
void sps__report_json_process_auto(struct sps_jw *w, const struct sps_process_data *p);

/*
 * The one line the summary and report.html give it ("steps: auto-
 * instrumented (--no-auto to switch off)"), into buf; NULL when there is
 * nothing to say: no steps and auto never installed, or steps of the
 * program's own zones with auto never installed and not switched off
 * (a C program, a Python script without torch).
 */
const char *sps__auto_sentence(const struct sps_report *rep, char *buf, size_t len);

/* The same in two parts, for report.html's facts: what (e.g. "auto-
 * instrumented") and its detail ("--no-auto to switch off", or "");
 * returns 0 when there is nothing to say. */
int sps__auto_fact(const struct sps_report *rep, char *what, size_t wlen, char *detail, size_t dlen);

#endif
