/*
 * report_read.h - the typed report.json reader's sections, each in a file
 * of its own: the top level, the run's tables and processes
 * (report_read.c), the machine half (report_read_machine.c: metrics,
 * gpus, sensors, sources, series, overhead) and the analysis
 * (report_read_analysis.c).  Each reads from a pull scanner (jscan.h)
 * positioned at the value of its key, into the report model; none keeps
 * a document tree.  Not thread-safe: one scanner, one report.
 */
#ifndef SPS_REPORT_REPORT_READ_H
#define SPS_REPORT_REPORT_READ_H

#include "report/jscan.h"
#include "report/report.h"

/*
 * Read the value of the top-level key `key` when it belongs to the
 * machine half ("metrics", "gpus", "gpus_unavailable_reason", "sensors",
 * "sources", "series", "overhead") into rep (rep->machine_owned, allocated
 * on first use, and the info fields "overhead" carries).  Returns 0 when
 * read, 1 when key is not one of these (nothing consumed), SPS_EFORMAT
 * (s->err says why) or SPS_ENOMEM.
 *
 * "series" settles what the sampler was: without its interval_ms no
 * sampler ran (info.sampler NULL again, info.sampler_absent_reason the
 * metrics' reason, in rep->strings_owned[4]); with it, its points go onto
 * the monotonic clock at series.origin_mono_ns (or, in a report.json from
 * before that key, rep->run.start_ns, so read started_mono_ns first, as
 * report.json lists it), and info.start_mono_ns, when still 0, becomes
 * that origin.
 */
int sps__report_read_machine(struct sps_jscan *s, const char *key, struct sps_report *rep);

/*
 * Read the value of the key `key` of "memory" when it is one of the
 * watched tree's (workload_*: what report_json.c's write_tree_memory
 * writes from the sampler) into rep->machine_owned.  Returns 0 when read,
 * 1 when key is not one of these (nothing consumed), SPS_EFORMAT or
 * SPS_ENOMEM.
 */
int sps__report_read_tree_memory(struct sps_jscan *s, const char *key, struct sps_report *rep);

/*
 * Read the value of "analysis" into rep->analysis (computed set; text it
 * owns in analysis.owned_text), and the watcher's facts only it records
 * into rep->info (the recording cost, or why there is none, in
 * rep->strings_owned[5]; the guard; the CPU count) and
 * rep->analysis_config (info.analysis points at it).  Some fields come
 * from sections read before it, as report.json lists them: the machine
 * half (the leaks' tree pid, the energy domains' series, the evidence's
 * why_sampler) and "timing" (the overhead's workload CPU and wall time).
 * Returns 0, SPS_EFORMAT (s->err says why) or SPS_ENOMEM.
 */
int sps__report_read_analysis(struct sps_jscan *s, struct sps_report *rep);

/* Read the value of "analysis.straggler" into *g (replacing what it
 * held; computed set).  Returns 0, SPS_EFORMAT or SPS_ENOMEM. */
int sps__report_read_straggler(struct sps_jscan *s, struct sps_straggler *g);

/* The analysis's figures before report.json gives them: a section it
 * does not carry (a report cut by hand, or written before the section)
 * leaves them unknown (NAN), as report.json's own null does, never a
 * measured 0.  Each section read sets its own. */
void sps__report_analysis_unknown(struct sps_analysis *a);

/* Every series time in r (points, first and last readings, processes'
 * first sightings) moved by delta ns: from report.json's time axis onto
 * the monotonic clock. */
void sps__report_read_shift_series(struct sps__sampler_result *r, int64_t delta);

#endif /* SPS_REPORT_REPORT_READ_H */
