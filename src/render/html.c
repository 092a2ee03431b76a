/*
 * html.c - report.html: one self-contained page made from the report
 * model (report/report.h), whether it was built from the records or read
 * from report.json.  A header with what ran and what it cost, the
 * analysis (analysis_views.h), the charts (html_charts.c,
 * html_timelines.c), and the zone table.  The page loads nothing: no script, font or image; the styles are
 * inline and a Content-Security-Policy forbids fetching anything, so it
 * opens the same offline, from a mail attachment or a CI artifact.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */

#include <math.h>
#include <string.h>
#include <time.h>

#include "render/merge_view.h"
#include "render/analysis_views.h"
#include "render/auto_mode.h"
#include "render/exporters.h"
#include "render/render.h"
#include "sampler/sampler.h"
#include "render/html_charts.h"
#include "render/html_units.h"
#include "render/svg_chart.h"
#include "stepscope.h"

/* The zone table lists this many names; report.json has the rest. */
#define MAX_TABLE_ROWS 300

/* default-src 'none' forbids every fetch (scripts, images, fonts,
 * connections); inline styles are the only thing the page needs. */
#define CSP "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

static const char STYLE[] =
    ":root{color-scheme:light}"
    "body{margin:0;background:#f5f6f8;color:#1f2937;"
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}"
    "main{max-width:1240px;margin:0 auto;padding:20px 20px 40px}"
    "h1{font-size:20px;margin:0 0 8px}"
    "h2{font-size:16px;margin:0 0 2px}"
    ".cmd{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:13px;background:#fff;"
    "border:1px solid #e3e5e8;border-radius:6px;padding:6px 10px;margin:0 0 12px;overflow-wrap:anywhere}"
    "dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px;margin:0}"
    ".fact{background:#fff;border:1px solid #e3e5e8;border-radius:6px;padding:8px 10px}"
    ".fact dt{font-size:12px;color:#6b7280}"
    ".fact dd{margin:0;font-size:16px;font-weight:600}"
    ".fact dd small{display:block;font-size:12px;font-weight:400;color:#6b7280}"
    ".fact.bad dd{color:#b91c1c}"
    "section{background:#fff;border:1px solid #e3e5e8;border-radius:8px;padding:14px 16px;margin:16px 0;"
    "overflow-x:auto}"
    "p.what{color:#4b5563;margin:0 0 8px;font-size:13px}"
    "p.note{color:#6b7280;margin:6px 0 0;font-size:12px}"
    "p.empty{margin:8px 0;padding:20px;border:1px dashed #cfd3d9;border-radius:6px;background:#fafbfc;"
    "color:#4b5563}"
    "svg{display:block;width:100%;height:auto;max-width:1200px}"
    "table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}"
    /* cells wrap between words, never inside one, so no column narrows
     * below its longest word (white-space:nowrap on every column but the
     * first squeezed that one to a letter a line beside wide cells) */
    "th,td{padding:4px 8px;border-bottom:1px solid #eef0f2;text-align:right;vertical-align:top;"
    "white-space:normal;overflow-wrap:normal}"
    "th{background:#f8f9fa;font-weight:600;color:#374151}"
    "th:first-child,td:first-child{text-align:left}"
    /* a number with its unit stays on one line */
    "td.num{white-space:nowrap}"
    "td.label{text-align:left}"
    /* a sentence in a cell (a reason) wraps and takes the room left */
    "th.text,td.text{text-align:left;min-width:16em}"
    "td.kind{color:#6b7280}"
    "section.line{padding:8px 16px}"
    "section.line p{margin:0;color:#4b5563}"
    "footer{color:#6b7280;font-size:12px;margin-top:20px}";

static void write_fact(FILE *out, const char *term, const char *value, const char *detail, int bad) {
    fprintf(out, "<div class=\"fact%s\"><dt>", bad ? " bad" : "");
    svg_write_escaped(out, term);
    fputs("</dt><dd>", out);
    svg_write_escaped(out, value);
    if (detail && *detail) {
        fputs("<small>", out);
        svg_write_escaped(out, detail);
        fputs("</small>", out);
    }
    fputs("</dd></div>\n", out);
}

/* The command's arguments: the watcher's, else the first process's. */
static void command_of(const struct sps_report *rep, int *argc, char *const **argv) {
    *argc = 0;
    *argv = NULL;
    if (rep->info.argv) {
        *argc = rep->info.argc;
        *argv = rep->info.argv;
    } else if (rep->run.nprocs) {
        *argc = rep->run.procs[0].argc;
        *argv = rep->run.procs[0].argv;
    }
}

/* The command, its arguments separated by spaces. */
static void write_command(FILE *out, int argc, char *const *argv) {
    if (argc <= 0) {
        fputs("(unknown command)", out);
        return;
    }
    for (int i = 0; i < argc; i++) {
        if (i)
            fputc(' ', out);
        svg_write_escaped(out, argv[i]);
    }
}

static void write_exit_fact(FILE *out, const struct sps_run_info *info) {
    char value[128], detail[256] = "";
    int bad = 0;
    if (info->have_exit && !info->exit_signal) {
        snprintf(value, sizeof value, "exited with %d", info->exit_code);
        bad = info->exit_code != 0;
    } else if (info->have_exit) {
        char sig[32];
        snprintf(value, sizeof value, "killed by %s", sps__signal_name(info->exit_signal, sig, sizeof sig));
        snprintf(detail, sizeof detail, "%s", info->core_dumped ? "core dumped" : "");
        bad = 1;
    } else {
        snprintf(value, sizeof value, "unknown");
        snprintf(detail, sizeof detail, "the process wrote this report itself, before it ended");
    }
    write_fact(out, "Exit status", value, detail, bad);
}

/* Wall and CPU time, peak RSS and (when read) the tree's peak PSS. */
static void write_cost_facts(FILE *out, const struct sps_run_info *info) {
    char value[128], detail[256];
    write_fact(out, "Wall time", html_fmt_duration(value, sizeof value, info->have_times ? info->wall_s : NAN),
               NULL, 0);
    double user = info->have_times ? info->user_s : NAN, sys = info->have_times ? info->sys_s : NAN;
    html_fmt_duration(value, sizeof value, user + sys);
    char u[32], s[32];
    snprintf(detail, sizeof detail, "user %s, system %s", html_fmt_duration(u, sizeof u, user),
             html_fmt_duration(s, sizeof s, sys));
    write_fact(out, "CPU time", value, isfinite(user + sys) ? detail : NULL, 0);
    write_fact(out, "Peak RSS",
               html_fmt_bytes(value, sizeof value, info->have_rss ? (double)info->peak_rss_bytes : NAN),
               info->rss_scope ? info->rss_scope : "largest single process of the tree (getrusage)", 0);
    const struct sps__series *pss = info->sampler ? &info->sampler->host[SPS_M_WORKLOAD_PSS_PEAK_BYTES] : NULL;
    if (pss && pss->n)
        write_fact(out, "Peak PSS", html_fmt_bytes(value, sizeof value, pss->max),
                   "the process tree, shared pages counted once", 0);
}

/* A report `stepscope report` rebuilt from the records alone says so
 * first: why, and what it lacks. */
static void write_rebuilt_note(FILE *out, const struct sps_run_info *info) {
    const char *parts[16];
    size_t n = sps__report_missing(info, parts, sizeof parts / sizeof parts[0]);
    if (!info->rebuilt_reason)
        return;
    fputs("<p class=\"note rebuilt\"><strong>Rebuilt from the records alone</strong> by stepscope report (", out);
    svg_write_escaped(out, info->rebuilt_reason);
    fputs("). Not known without the report.json stepscope run writes: ", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? "; " : "", out);
        svg_write_escaped(out, parts[i]);
    }
    fputs(".</p>\n", out);
}

static void write_header(FILE *out, const struct sps_report *rep) {
    const struct sps_run *run = &rep->run;
    const struct sps_run_info *info = &rep->info;
    int argc;
    char *const *argv;
    command_of(rep, &argc, &argv);
    const char *program = argc > 0 ? argv[0] : NULL;
    const char *base = program ? strrchr(program, '/') : NULL;
    fputs("<header>\n<h1>stepscope report", out);
    if (program) {
        fputs(": ", out);
        svg_write_escaped(out, base ? base + 1 : program);
    }
    fputs("</h1>\n<div class=\"cmd\">", out);
    write_command(out, argc, argv);
    fputs("</div>\n<dl class=\"facts\">\n", out);
    write_exit_fact(out, info);
    write_cost_facts(out, info);

    char value[128], detail[256];
    snprintf(value, sizeof value, "%llu", (unsigned long long)run->steps_recorded);
    snprintf(detail, sizeof detail, "%zu warm-up", run->warmup_steps);
    write_fact(out, "Steps", value, detail, 0);
    char mode_detail[SPS_REC_AUTO_REASON_LEN + 64];
    if (sps__auto_fact(rep, value, sizeof value, mode_detail, sizeof mode_detail))
        write_fact(out, "Steps recorded", value, mode_detail, 0);
    char merged[512];
    if (sps__merge_fact(run, value, sizeof value, merged, sizeof merged))
        write_fact(out, "Merged", value, merged, run->merge.forced);

    const struct sps__sampler_result *r = info->sampler;
    if (r) {
        double span_s = (double)r->thread_ns_total * 1e-9;
        html_fmt_duration(value, sizeof value, r->thread_cpu_seconds);
        snprintf(value + strlen(value), sizeof value - strlen(value), " CPU");
        if (span_s > 0)
            snprintf(detail, sizeof detail, "%.3g%% of one core, %llu reads", 100.0 * r->thread_cpu_seconds / span_s,
                     (unsigned long long)r->ticks);
        else
            detail[0] = '\0';
        write_fact(out, "Sampler overhead", value, detail, 0);
    } else {
        write_fact(out, "Sampler overhead", "no sampler ran", "machine metrics were not sampled", 0);
    }

    snprintf(value, sizeof value, "%llu dropped", (unsigned long long)run->events_dropped);
    snprintf(detail, sizeof detail, "of %llu recorded", (unsigned long long)run->events_recorded);
    write_fact(out, "Events", value, detail, run->events_dropped > 0);
    char running[512];
    if (sps__report_running_text(rep, NULL, running, sizeof running)) {
        /* "the report was taken while pid P (...) was still running: ..." */
        char still[64];
        const struct sps_process_data *p = NULL;
        for (size_t i = 0; !p && i < run->nprocs; i++)
            p = run->procs[i].running_at_report ? &run->procs[i] : NULL;
        snprintf(still, sizeof still, "early: pid %d still running", p ? p->pid : 0);
        write_fact(out, "Report taken", still, running, 1);
    }
    char skipped[1200];
    if (sps__report_skipped_text(rep, skipped, sizeof skipped)) {
        /* "K of N records skipped: FIRST": the count as the value, the first's error below */
        char *why = strstr(skipped, ": ");
        if (why)
            *why = '\0';
        write_fact(out, "Records", skipped, why ? why + 2 : NULL, 1);
    }

    if (info->start_realtime_ns > 0) {
        time_t t = (time_t)(info->start_realtime_ns / 1000000000);
        struct tm tm;
        if (gmtime_r(&t, &tm) && strftime(value, sizeof value, "%Y-%m-%d %H:%M:%S UTC", &tm) > 0)
            write_fact(out, "Started", value, NULL, 0);
    }
    fputs("</dl>\n", out);
    write_rebuilt_note(out, info);
    fputs("</header>\n", out);
}

static void write_cell_duration(FILE *out, double seconds) {
    char buf[48];
    fprintf(out, "<td class=\"num\">%s</td>", html_fmt_duration(buf, sizeof buf, seconds));
}

/* "zone", "step", "microstep" for a timed kind. */
static const char *kind_name(uint32_t kind) {
    return kind == SPS_KIND_STEP        ? "step"
           : kind == SPS_KIND_MICROSTEP ? "microstep"
           : kind == SPS_KIND_WAIT      ? "wait"
                                        : "zone";
}

static void write_zone_table(FILE *out, const struct sps_report *rep) {
    const struct sps_run *run = &rep->run;
    fputs("<section id=\"zones\">\n<h2>Zones</h2>\n<p class=\"what\">Every step, micro-step and zone name, merged "
          "over threads and processes. Total time includes nested zones; self time does not. Share of run is the "
          "total over the wall time (it can exceed 100% when a name runs on several threads at once). "
          "– means unknown.</p>\n",
          out);
    size_t n = 0;
    for (size_t i = 0; i < run->nnames; i++)
        n += sps_kind_is_timed(run->names[i].kind) != 0;
    if (n == 0) {
        fputs("<p class=\"empty\">No zone, step or micro-step was recorded.</p>\n</section>\n", out);
        return;
    }
    fputs("<table>\n<thead><tr><th>name</th><th>kind</th><th>count</th><th>total</th><th>self</th><th>mean</th>"
          "<th>p50</th><th>p90</th><th>p99</th><th>share of run</th></tr></thead>\n<tbody>\n",
          out);
    double wall = rep->info.have_times ? rep->info.wall_s : NAN;
    size_t shown = 0;
    for (size_t i = 0; i < run->nnames && shown < MAX_TABLE_ROWS; i++) {
        const struct sps_name_summary *z = &run->names[i];
        if (!sps_kind_is_timed(z->kind))
            continue;
        shown++;
        /* a zone that never completed has no mean or percentiles */
        double none = z->stats.count ? 0.0 : NAN;
        fputs("<tr><td>", out);
        svg_write_escaped(out, z->name);
        fprintf(out, "</td><td class=\"kind\">%s</td><td class=\"num\">%llu</td>", kind_name(z->kind),
                (unsigned long long)z->stats.count);
        write_cell_duration(out, z->stats.total_s);
        write_cell_duration(out, z->stats.self_s);
        write_cell_duration(out, z->stats.mean_s + none);
        write_cell_duration(out, z->stats.p50_s + none);
        write_cell_duration(out, z->stats.p90_s + none);
        write_cell_duration(out, z->stats.p99_s + none);
        if (wall > 0)
            fprintf(out, "<td class=\"num\">%.3g%%</td></tr>\n", z->stats.total_s / wall * 100);
        else
            fputs("<td class=\"num\">–</td></tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);
    if (shown < n)
        fprintf(out, "<p class=\"note\">%zu more names, with the least total time, are in report.json.</p>\n",
                n - shown);
    fputs("</section>\n", out);
}

int sps__export_html(const struct sps_report *rep, FILE *out, char *err, size_t errlen) {
    struct html_steps steps;
    /* two ranks or more: the per-step charts draw one rank's steps */
    int ranked = rep->ranks.n >= 2;
    if ((ranked ? html_steps_load_rank(rep, html_charted_rank(rep), &steps) : html_steps_load(rep, &steps)) != 0) {
        snprintf(err, errlen, "report.html: out of memory reading the step table");
        return SPS_ENOMEM;
    }
    int argc;
    char *const *argv;
    command_of(rep, &argc, &argv);
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"" CSP "\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>stepscope: ",
          out);
    svg_write_escaped(out, argc > 0 ? argv[0] : "report");
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", STYLE);
    write_header(out, rep);
    sps__analysis_html(out, &rep->analysis);

    int rc = ranked ? html_write_step_time_ranks(out, rep) : html_write_step_time(out, rep, &steps);
    if (!rc && ranked)
        html_write_rank_table(out, rep);
    if (!rc)
        rc = html_write_values(out, rep, &steps);
    if (!rc)
        rc = html_write_torch_memory(out, rep, &steps);
    if (!rc)
        rc = html_write_phases(out, rep, &steps);
    if (!rc)
        rc = html_write_timelines(out, rep, &steps);
    html_steps_free(&steps);
    if (rc) {
        snprintf(err, errlen, "report.html: out of memory drawing the charts");
        return rc;
    }
    write_zone_table(out, rep);
    sps__html_torch(out, &rep->run);

    fputs("<footer>Made by stepscope " SPS_VERSION_STRING, out);
    if (rep->info.standalone_reason) {
        fputs(" (report written by ", out);
        svg_write_escaped(out, rep->info.standalone_reason);
        fputc(')', out);
    }
    fputs(". This page is self-contained: it loads nothing from the network.</footer>\n</main>\n</body>\n</html>\n",
          out);
    if (ferror(out)) {
        snprintf(err, errlen, "report.html: write error");
        return SPS_EIO;
    }
    return 0;
}
