/*
 * analysis_energy.c - the energy analysis as terminal lines and a
 * report.html section (see analysis_views.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/energy.h"
#include "render/analysis_views.h"
#include "render/html_units.h"
#include "render/svg_chart.h"

/* Joules as J, kJ or MJ. */
static const char *fmt_joules(char *buf, size_t len, double j) {
    if (!isfinite(j))
        snprintf(buf, len, "–");
    else if (fabs(j) >= 1e6)
        snprintf(buf, len, "%.3g MJ", j / 1e6);
    else if (fabs(j) >= 1e3)
        snprintf(buf, len, "%.3g kJ", j / 1e3);
    else
        snprintf(buf, len, "%.3g J", j);
    return buf;
}

/* "GPU0", "CPU package", "DRAM" */
static const char *domain_label(char *buf, size_t len, const struct sps_energy_domain *d) {
    if (!strcmp(d->domain, "gpu") && d->gpu >= 0)
        snprintf(buf, len, "GPU%d", d->gpu);
    else if (!strcmp(d->domain, "gpu"))
        snprintf(buf, len, "GPU");
    else if (!strcmp(d->domain, "cpu_package"))
        snprintf(buf, len, "CPU package");
    else if (!strcmp(d->domain, "dram"))
        snprintf(buf, len, "DRAM");
    else
        snprintf(buf, len, "%s", d->domain);
    return buf;
}

static const char *method_label(enum sps_energy_method m) {
    return m == SPS_ENERGY_COUNTER ? "counter" : m == SPS_ENERGY_INTEGRATED_POWER ? "integrated power" : "unavailable";
}

/* Why a domain is unmeasured; NULL when it is measured. */
static const char *why_unmeasured(const struct sps_energy_domain *d) {
    return d->method == SPS_ENERGY_UNAVAILABLE ? d->reason : NULL;
}

/* One line for a run with no measured domain: each domain's reason, those
 * with the same reason together (CPU package and DRAM share RAPL's), and
 * "no GPU" without the GPU chain's details, which report.json has. */
static void print_unavailable(FILE *f, const struct sps_energy *e) {
    sps__analysis_label(f, "energy");
    fputs("unavailable (", f);
    int printed = 0;
    for (size_t i = 0; i < e->ndomains; i++) {
        const char *why = why_unmeasured(&e->domain[i]);
        if (!why)
            continue;
        int earlier = 0;
        for (size_t k = 0; k < i && !earlier; k++) {
            const char *other = why_unmeasured(&e->domain[k]);
            earlier = other && !strcmp(other, why);
        }
        if (earlier)
            continue;
        fputs(printed++ ? "; " : "", f);
        if (!strncmp(why, "no GPU", 6)) {
            fputs("no GPU", f);
            continue;
        }
        char label[32];
        fputs(domain_label(label, sizeof label, &e->domain[i]), f);
        for (size_t k = i + 1; k < e->ndomains; k++) {
            const char *other = why_unmeasured(&e->domain[k]);
            if (other && !strcmp(other, why))
                fprintf(f, ", %s", domain_label(label, sizeof label, &e->domain[k]));
        }
        fprintf(f, ": %s", why);
    }
    fputs(")\n", f);
}

void sps__analysis_energy_print(FILE *f, const struct sps_energy *e) {
    if (!isfinite(e->total_kwh)) {
        print_unavailable(f, e);
        return;
    }
    sps__analysis_label(f, "energy");
    fprintf(f, "%.3g kWh (", e->total_kwh);
    for (size_t i = 0; i < e->ndomains; i++) {
        const struct sps_energy_domain *d = &e->domain[i];
        char label[32], joules[32];
        if (d->method != SPS_ENERGY_UNAVAILABLE)
            fprintf(f, "%s%s %s %s %s", i ? ", " : "", domain_label(label, sizeof label, d), d->source,
                    method_label(d->method), fmt_joules(joules, sizeof joules, d->joules));
        else
            fprintf(f, "%s%s unavailable", i ? ", " : "", domain_label(label, sizeof label, d));
    }
    fprintf(f, ") = %.3g g CO2e at %.4g g/kWh, PUE %.3g", e->co2e_grams, e->carbon_g_per_kwh, e->pue);
    if (isfinite(e->step_joules)) {
        char joules[32];
        fprintf(f, "; %s per step", fmt_joules(joules, sizeof joules, e->step_joules));
    }
    fputc('\n', f);
}

void sps__analysis_energy_html(FILE *out, const struct sps_energy *e) {
    fputs("<section id=\"energy\">\n<h2>Energy and carbon</h2>\n<p class=\"what\">Energy per domain from its energy "
          "counter (last minus first reading), else its power readings integrated over time; nothing is estimated. "
          "CO2e = kWh × PUE × carbon intensity.</p>\n",
          out);
    fputs("<table>\n<thead><tr><th>domain</th><th>energy</th><th>method</th>"
          "<th class=\"text\">evidence or reason</th></tr></thead>\n<tbody>\n",
          out);
    for (size_t i = 0; i < e->ndomains; i++) {
        const struct sps_energy_domain *d = &e->domain[i];
        char label[32], joules[32], evidence[256];
        fputs("<tr><td>", out);
        svg_write_escaped(out, domain_label(label, sizeof label, d));
        if (d->gpu >= 0 && d->name[0]) {
            fputs(" (", out);
            svg_write_escaped(out, d->name);
            fputs(")", out);
        }
        fprintf(out, "</td><td class=\"num\">%s</td><td class=\"label\">%s</td><td class=\"text\">",
                fmt_joules(joules, sizeof joules, d->joules), method_label(d->method));
        if (d->method != SPS_ENERGY_UNAVAILABLE) {
            sps__energy_domain_evidence(d, evidence, sizeof evidence);
            svg_write_escaped(out, evidence);
        } else {
            svg_write_escaped(out, d->reason);
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);
    if (isfinite(e->total_kwh)) {
        fprintf(out, "<p>Total %.4g kWh ≈ %.4g g CO2e at %.4g g/kWh (", e->total_kwh, e->co2e_grams,
                e->carbon_g_per_kwh);
        svg_write_escaped(out, sps__energy_carbon_from(e));
        fprintf(out, "), PUE %.3g (", e->pue);
        svg_write_escaped(out, sps__energy_pue_from(e));
        fputs(").", out);
        char joules[32];
        if (isfinite(e->step_joules))
            fprintf(out, " Per step: %s, %.3g g CO2e (%llu steps).", fmt_joules(joules, sizeof joules, e->step_joules),
                    e->step_co2e_grams, (unsigned long long)e->step_count);
        fputs("</p>\n", out);
    } else {
        fputs("<p class=\"empty\">Energy unavailable: ", out);
        svg_write_escaped(out, e->total_reason[0] ? e->total_reason : "no reason given");
        fputs("</p>\n", out);
    }
    fputs("</section>\n", out);
}
