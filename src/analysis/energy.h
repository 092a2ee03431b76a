/*
 * energy.h - the energy a run used and what it emitted: per domain (each
 * GPU, the CPU packages, DRAM) from the sampler's readings, then kWh and
 * grams of CO2e from a carbon intensity and a PUE, for the run and per
 * step.
 *
 * Each domain's joules come from its energy counter when the sampler read
 * one (method "counter": last minus first reading of the running total),
 * else from integrating its power readings over time (method
 * "integrated_power"), else they are NAN with the reason.  Nothing is
 * estimated from a TDP or a utilisation: an unmeasured domain stays
 * unmeasured.  Pure functions; not thread-safe per struct.
 */
#ifndef SPS_ANALYSIS_ENERGY_H
#define SPS_ANALYSIS_ENERGY_H

#include <stddef.h>
#include <stdint.h>

#include "stepscope.h"

/* Joules in a kilowatt-hour. */
#define SPS_JOULES_PER_KWH 3.6e6

struct sps_run;
struct sps_run_info;
struct sps_analysis_config;
struct sps_jw;
struct sps__series;

/* The defaults (docs/analysis.md says where they come from). */
#define SPS_ENERGY_DEFAULT_CARBON_G_PER_KWH 480.0 /* Ember, world electricity 2023 */
#define SPS_ENERGY_DEFAULT_PUE 1.0                /* the machine's own draw, no facility overhead */

#define SPS_ENERGY_MAX_DOMAINS (SPS_CAPTURE_MAX_GPUS + 2)

enum sps_energy_method {
    SPS_ENERGY_UNAVAILABLE = 0,
    SPS_ENERGY_COUNTER = 1,          /* a running energy total: last - first */
    SPS_ENERGY_INTEGRATED_POWER = 2  /* power readings integrated over time */
};

struct sps_energy_domain {
    char domain[16];   /* "gpu", "cpu_package", "dram" */
    int gpu;           /* the GPU's index when domain is "gpu", else -1 */
    char name[64];     /* the GPU's name ("" otherwise) */
    enum sps_energy_method method;
    double joules;     /* over the readings' span; NAN when unavailable */
    double span_s;     /* seconds the readings span */
    uint64_t readings;
    char source[24];   /* the sampler source that read it ("rapl", "nvml", ...) */
    char reason[512];  /* why unavailable ("" otherwise) */
    /* the series the figure came from, for the per-step share (not owned) */
    const struct sps__series *series;
};

struct sps_energy {
    double carbon_g_per_kwh, pue;
    int carbon_is_default, pue_is_default;
    size_t ndomains;
    struct sps_energy_domain domain[SPS_ENERGY_MAX_DOMAINS];
    /* the measured domains together */
    size_t measured;
    double total_joules, total_kwh, co2e_grams; /* NAN when no domain was measured */
    char total_reason[1024];                    /* why NAN ("" otherwise) */
    /* per post-warm-up step */
    uint64_t step_count;  /* steps whose time lies inside every measured domain's readings */
    double step_span_s;   /* from the first such step's start to the last one's end */
    double step_joules, step_kwh, step_co2e_grams; /* NAN when unavailable */
    char step_reason[256];
};

/*
 * Fill *out from run's step rows and info's sampler result (info or its
 * sampler may be NULL: every domain is then unavailable with the reason).
 * cfg may be NULL (defaults); its NAN fields take the defaults.  Allocates
 * nothing: *out points into info's sampler result, which must outlive it.
 */
void sps__energy_analyze(const struct sps_run *run, const struct sps_run_info *info,
                         const struct sps_analysis_config *cfg, struct sps_energy *out);

/* "counter", "integrated_power"; NULL for SPS_ENERGY_UNAVAILABLE.  Static
 * storage. */
const char *sps__energy_method_name(enum sps_energy_method m);

/* Where the carbon intensity and the PUE came from, in words (static). */
const char *sps__energy_carbon_from(const struct sps_energy *e);
const char *sps__energy_pue_from(const struct sps_energy *e);

/* How a measured domain's joules were had, in words ("rapl: last minus
 * first of 40 energy-counter readings over 2.000 s") into buf. */
void sps__energy_domain_evidence(const struct sps_energy_domain *d, char *buf, size_t len);

/* Write "energy": {...} (docs/analysis.md lists the keys). */
void sps__energy_json(struct sps_jw *w, const struct sps_energy *e);

/*
 * Helpers, exposed for the tests.  A series keeps points whose mean
 * summarises the readings they hold: each is placed at the middle of those
 * readings, and the function through them is linear in between and flat
 * beyond.  value_at is that function at t_ns; integral is its integral over
 * [t0_ns, t1_ns] in value-seconds.  NAN for an empty series.
 */
double sps__energy_series_value_at(const struct sps__series *s, int64_t t_ns);
double sps__energy_series_integral(const struct sps__series *s, int64_t t0_ns, int64_t t1_ns);

#endif /* SPS_ANALYSIS_ENERGY_H */
