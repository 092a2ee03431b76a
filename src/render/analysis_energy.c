/*
 * analysis_energy.c - report.json's analysis.energy as terminal lines and
 * a report.html section (see analysis_views.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

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
static const char *domain_label(char *buf, size_t len, const json_t *d) {
    const char *domain = html_str(d, "domain");
    const json_t *gpu = json_object_get(d, "gpu");
    if (domain && !strcmp(domain, "gpu") && json_is_integer(gpu))
        snprintf(buf, len, "GPU%lld", (long long)json_integer_value(gpu));
    else if (domain && !strcmp(domain, "gpu"))
        snprintf(buf, len, "GPU");
    else if (domain && !strcmp(domain, "cpu_package"))
        snprintf(buf, len, "CPU package");
    else if (domain && !strcmp(domain, "dram"))
        snprintf(buf, len, "DRAM");
    else
        snprintf(buf, len, "%s", domain ? domain : "?");
    return buf;
}

static const char *method_label(const char *method) {
    if (!method)
        return "unavailable";
    return !strcmp(method, "counter") ? "counter" : !strcmp(method, "integrated_power") ? "integrated power" : method;
}

/* One line for a run with no measured domain: each domain's reason, those
 * with the same reason together (CPU package and DRAM share RAPL's), and
 * "no GPU" without the GPU chain's details, which report.json has. */
static void print_unavailable(FILE *f, const json_t *domains) {
    sps__analysis_label(f, "energy");
    fputs("unavailable (", f);
    size_t n = json_array_size(domains);
    int printed = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *d = json_array_get(domains, i);
        const char *why = html_str(d, "unavailable_reason");
        if (!why)
            continue;
        int earlier = 0;
        for (size_t k = 0; k < i && !earlier; k++) {
            const char *other = html_str(json_array_get(domains, k), "unavailable_reason");
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
        fputs(domain_label(label, sizeof label, d), f);
        for (size_t k = i + 1; k < n; k++) {
            const json_t *later = json_array_get(domains, k);
            const char *other = html_str(later, "unavailable_reason");
            if (other && !strcmp(other, why))
                fprintf(f, ", %s", domain_label(label, sizeof label, later));
        }
        fprintf(f, ": %s", why);
    }
    fputs(")\n", f);
}

void sps__analysis_energy_print(FILE *f, const json_t *analysis) {
    const json_t *e = json_object_get(analysis, "energy");
    if (!json_is_object(e))
        return;
    const json_t *domains = json_object_get(e, "domains");
    double kwh = html_num(e, "kwh");
    if (!isfinite(kwh)) {
        print_unavailable(f, domains);
        return;
    }
    sps__analysis_label(f, "energy");
    fprintf(f, "%.3g kWh (", kwh);
    size_t i;
    json_t *d;
    int first = 1;
    json_array_foreach(domains, i, d) {
        char label[32], joules[32];
        const char *method = html_str(d, "method");
        const char *source = html_str(d, "source");
        if (method)
            fprintf(f, "%s%s %s %s %s", first ? "" : ", ", domain_label(label, sizeof label, d),
                    source ? source : "", method_label(method), fmt_joules(joules, sizeof joules, html_num(d, "joules")));
        else
            fprintf(f, "%s%s unavailable", first ? "" : ", ", domain_label(label, sizeof label, d));
        first = 0;
    }
    fprintf(f, ") = %.3g g CO2e at %.4g g/kWh, PUE %.3g", html_num(e, "co2e_grams"),
            html_num(e, "carbon_intensity_g_per_kwh"), html_num(e, "pue"));
    const json_t *step = json_object_get(e, "per_step");
    double step_j = html_num(step, "joules");
    if (isfinite(step_j)) {
        char joules[32];
        fprintf(f, "; %s per step", fmt_joules(joules, sizeof joules, step_j));
    }
    fputc('\n', f);
}

void sps__analysis_energy_html(FILE *out, const json_t *analysis) {
    const json_t *e = json_object_get(analysis, "energy");
    if (!json_is_object(e))
        return;
    fputs("<section id=\"energy\">\n<h2>Energy and carbon</h2>\n<p class=\"what\">Energy per domain from its energy "
          "counter (last minus first reading), else its power readings integrated over time; nothing is estimated. "
          "CO2e = kWh × PUE × carbon intensity.</p>\n",
          out);
    fputs("<table>\n<thead><tr><th>domain</th><th>energy</th><th>method</th><th class=\"text\">evidence or reason</th></tr>"
          "</thead>\n<tbody>\n",
          out);
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(e, "domains"), i, d) {
        char label[32], joules[32];
        const char *method = html_str(d, "method");
        const char *name = html_str(d, "name");
        fputs("<tr><td>", out);
        svg_write_escaped(out, domain_label(label, sizeof label, d));
        if (name && *name) {
            fputs(" (", out);
            svg_write_escaped(out, name);
            fputs(")", out);
        }
        fprintf(out, "</td><td>%s</td><td>%s</td><td class=\"text\">", fmt_joules(joules, sizeof joules, html_num(d, "joules")),
                method_label(method));
        const char *why = method ? html_str(d, "evidence") : html_str(d, "unavailable_reason");
        svg_write_escaped(out, why ? why : "");
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);
    double kwh = html_num(e, "kwh");
    if (isfinite(kwh)) {
        fprintf(out, "<p>Total %.4g kWh ≈ %.4g g CO2e at %.4g g/kWh (", kwh, html_num(e, "co2e_grams"),
                html_num(e, "carbon_intensity_g_per_kwh"));
        svg_write_escaped(out, html_str(e, "carbon_intensity_from"));
        fprintf(out, "), PUE %.3g (", html_num(e, "pue"));
        svg_write_escaped(out, html_str(e, "pue_from"));
        fputs(").", out);
        const json_t *step = json_object_get(e, "per_step");
        double step_j = html_num(step, "joules");
        char joules[32];
        if (isfinite(step_j))
            fprintf(out, " Per step: %s, %.3g g CO2e (%.0f steps).", fmt_joules(joules, sizeof joules, step_j),
                    html_num(step, "co2e_grams"), html_num(step, "steps"));
        fputs("</p>\n", out);
    } else {
        fputs("<p class=\"empty\">Energy unavailable: ", out);
        const char *why = html_str(e, "unavailable_reason");
        svg_write_escaped(out, why ? why : "no reason given");
        fputs("</p>\n", out);
    }
    fputs("</section>\n", out);
}
