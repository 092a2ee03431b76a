/*
 * cmd_compare.c - `stepscope compare BASE NEW`: did NEW make the steps
 * faster or slower?  Argument parsing and exit codes; the work is in
 * src/compare/ (docs/compare.md).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "run_lock.h"
#include "compare/compare.h"
#include "compare/render.h"
#include "render/output_file.h"
#include "stepscope.h"

static const char compare_usage[] =
    "usage: stepscope compare BASE NEW [options]\n"
    "       stepscope compare BASE... --vs NEW... [options]\n"
    "\n"
    "Compare the step times of two sides, each a run directory or a report.json,\n"
    "or several of them (repeated runs of one command), after warm-up. The run\n"
    "is the unit: each run is summarised by its median step and by how far its\n"
    "level drifts within itself (the spread of its 8 block medians); the change\n"
    "is NEW's run level over BASE's, with a t interval from the spread between\n"
    "runs (3+ runs in all), floored by the runs' drift. The same for each\n"
    "zone's self time per step (p Holm-adjusted over the zones), for each GPU\n"
    "zone its GPU time per step (<zone>.gpu_ms, over the steps that hold one;\n"
    "p Holm-adjusted over the GPU zones), and peak memory (torch.cuda's peak\n"
    "allocated and reserved too), energy, throughput and the bottleneck where\n"
    "the runs have them. Only the step's verdict gates --fail-on.\n"
    "Runs of two ranks or more (torchrun) are compared rank by rank too: rank\n"
    "r of BASE against rank r of NEW, a line each under the pooled step line\n"
    "(p Holm-adjusted over the ranks); a rank one side lacks is said. Then\n"
    "each rank's step p90, and each phase's self time and collective wait in\n"
    "its steps compared the same way (p Holm-adjusted over ranks x phases):\n"
    "a rank's line names its changes that are slower or faster (with one run\n"
    "a side, those beyond the runs' drift), so under DDP, where every rank's\n"
    "step slows alike, the rank whose data grew is the one named.\n"
    "\n"
    "verdicts: slower / faster (p < alpha, the whole interval beyond the\n"
    "threshold, and 3 or more runs in all), same (the whole interval within\n"
    "it), inconclusive (the noise hides it: the output says how many runs a\n"
    "side would tell). One run a side is never slower or faster: a run's\n"
    "level on a shared machine moves between runs by more than its steps show.\n"
    "\n"
    "options:\n"
    "      --vs                what follows is the NEW side (before it: BASE)\n"
    "      --skip N            leave out the first N steps of each thread instead\n"
    "                          of the warm-up the reports mark (--skip 0 keeps\n"
    "                          every step)\n"
    "      --step NAME         compare steps of this name (default: step)\n"
    "      --threshold PCT     smallest change that counts; smaller is \"same\"\n"
    "                          (default 2%)\n"
    "      --alpha A           significance level (default 0.05)\n"
    "      --fail-on slower    exit 1 when the step verdict is slower\n"
    "      --fail-on PCT       exit 1 when it is slower by PCT or more\n"
    "      --format FORMAT     text (default), markdown or json; text has colour\n"
    "                          only on a terminal, never with NO_COLOR set\n"
    "  -o FILE                 write to FILE instead of standard output\n"
    "      --resamples N       accepted for older scripts and ignored (nothing\n"
    "                          is resampled: every result is deterministic)\n"
    "      --seed N            accepted for older scripts and ignored\n"
    "  -h, --help              this help\n"
    "\n"
    "exit status: 0; 1 with --fail-on when the step verdict is slower; 2 on a\n"
    "usage error or an input that cannot be read (the message names the file\n"
    "and the problem), a run directory's report.json that is another run's\n"
    "included (`stepscope report DIR` rebuilds it from the records).\n";

/* "2%", "2" or "0.5%" as a fraction (0.02); -1 when not a number >= 0. */
static double parse_percent(const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return -1;
    if (*end == '%')
        end++;
    return *end ? -1 : v / 100;
}

static int parse_count(const char *s, long min, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int colour_wanted(FILE *f) {
    const char *no = getenv("NO_COLOR");
    if (no && *no)
        return 0;
    const char *term = getenv("TERM");
    return isatty(fileno(f)) && !(term && !strcmp(term, "dumb"));
}

struct options {
    const char **base, **new_side;
    size_t nbase, nnew;
    struct sps_cmp_load_options load;
    struct sps_compare_params params;
    enum sps_cmp_format format;
    int fail_on;             /* --fail-on given */
    double fail_min_change;  /* its PCT as a fraction; 0 for "slower" */
    const char *out;
};

/* Parse argv; returns -1 on success, else the exit status (0 for --help).
 * o->base and o->new_side are allocated either way: the caller frees them. */
static int parse(int argc, char **argv, struct options *o) {
    int after_vs = 0;
    o->base = calloc((size_t)argc, sizeof *o->base);
    o->new_side = calloc((size_t)argc, sizeof *o->new_side);
    if (!o->base || !o->new_side)
        return sps_cli_error("compare", "arguments", "out of memory", 2);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "--skip") || !strcmp(a, "--step") || !strcmp(a, "--threshold") ||
                          !strcmp(a, "--alpha") || !strcmp(a, "--fail-on") || !strcmp(a, "--format") ||
                          !strcmp(a, "--resamples") || !strcmp(a, "--seed") || !strcmp(a, "-o");
        if (takes_value && i + 1 >= argc)
            return sps_cli_usage_error("compare", "option '%s' needs a value", a);
        long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(compare_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--vs")) {
            if (after_vs)
                return sps_cli_usage_error("compare", "--vs given twice");
            after_vs = 1;
        } else if (!strcmp(a, "--skip")) {
            if (parse_count(argv[++i], 0, 1L << 30, &n))
                return sps_cli_usage_error("compare", "--skip: '%s' is not a whole number of steps", argv[i]);
            o->load.skip = n;
        } else if (!strcmp(a, "--step")) {
            o->load.step_name = argv[++i];
        } else if (!strcmp(a, "--threshold")) {
            o->params.threshold = parse_percent(argv[++i]);
            if (o->params.threshold < 0 || o->params.threshold >= 1)
                return sps_cli_usage_error("compare", "--threshold: '%s' is not a percentage from 0%% to 100%%",
                                           argv[i]);
        } else if (!strcmp(a, "--alpha")) {
            char *end;
            o->params.alpha = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(o->params.alpha > 0 && o->params.alpha < 1))
                return sps_cli_usage_error("compare", "--alpha: '%s' is not a number between 0 and 1", argv[i]);
        } else if (!strcmp(a, "--fail-on")) {
            o->fail_on = 1;
            const char *v = argv[++i];
            if (!strcmp(v, "slower")) {
                o->fail_min_change = 0;
            } else {
                o->fail_min_change = parse_percent(v);
                if (o->fail_min_change <= 0)
                    return sps_cli_usage_error("compare", "--fail-on: '%s' is not 'slower' or a percentage like 5%%",
                                               v);
            }
        } else if (!strcmp(a, "--format")) {
            const char *v = argv[++i];
            if (!strcmp(v, "text"))
                o->format = SPS_CMP_TEXT;
            else if (!strcmp(v, "markdown") || !strcmp(v, "md"))
                o->format = SPS_CMP_MARKDOWN;
            else if (!strcmp(v, "json"))
                o->format = SPS_CMP_JSON;
            else
                return sps_cli_usage_error("compare", "--format: '%s' is not text, markdown or json", v);
        } else if (!strcmp(a, "--resamples")) {
            if (parse_count(argv[++i], 100, 1000000, &n))
                return sps_cli_usage_error("compare", "--resamples: '%s' is not a number from 100 to 1000000",
                                           argv[i]);
            fputs("stepscope: compare: --resamples is ignored: nothing is resampled (docs/compare.md)\n", stderr);
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long seed = strtoull(argv[++i], &end, 0);
            if (*end || end == argv[i] || errno || argv[i][0] == '-')
                return sps_cli_usage_error("compare", "--seed: '%s' is not a number", argv[i]);
            (void)seed;
            fputs("stepscope: compare: --seed is ignored: nothing is random (docs/compare.md)\n", stderr);
        } else if (!strcmp(a, "-o")) {
            o->out = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            return sps_cli_usage_error("compare", "unknown option '%s' (see stepscope compare --help)", a);
        } else if (after_vs) {
            o->new_side[o->nnew++] = a;
        } else {
            o->base[o->nbase++] = a;
        }
    }
    if (!after_vs) {
        /* BASE NEW: exactly two paths, the second is NEW */
        if (o->nbase != 2)
            return sps_cli_usage_error("compare",
                                       o->nbase < 2 ? "needs BASE and NEW (stepscope compare BASE NEW)"
                                                    : "%zu paths: with more than one run a side, put --vs between "
                                                      "the sides (stepscope compare A1 A2 --vs B1 B2)",
                                       o->nbase);
        o->new_side[o->nnew++] = o->base[--o->nbase];
    }
    if (o->nbase == 0)
        return sps_cli_usage_error("compare", "no BASE runs before --vs");
    if (o->nnew == 0)
        return sps_cli_usage_error("compare", "no NEW runs after --vs");
    return -1;
}

int sps_cmd_compare(int argc, char **argv) {
    struct options o;
    memset(&o, 0, sizeof o);
    o.load.skip = -1;
    sps__compare_params_default(&o.params);
    int status = parse(argc, argv, &o);
    struct sps_cmp_side base = {0}, new_side = {0};
    if (status >= 0) { /* --help or a usage error */
        free(o.base);
        free(o.new_side);
        return status;
    }
    char err[1024];
    const char *which = "";
    /* a run still writing an input has no report.json of its own yet */
    for (size_t i = 0; status < 0 && i < o.nbase + o.nnew; i++) {
        const char *dir = i < o.nbase ? o.base[i] : o.new_side[i - o.nbase];
        char who[1200];
        if (sps_run_lock_held(dir, who, sizeof who)) {
            fprintf(stderr, "stepscope: compare: %s: in use by %s; compare it when that run has ended\n", dir, who);
            status = 2;
        }
    }
    if (status >= 0) {
        /* said above */
    } else if (sps__cmp_sides_load(&base, o.base, o.nbase, &new_side, o.new_side, o.nnew, &o.load, &which, err,
                            sizeof err) != 0) {
        fprintf(stderr, "stepscope: compare: %s: %s\n", which, err);
        status = 2;
    } else {
        status = 0;
    }
    free(o.base);
    free(o.new_side);
    if (status != 0) { /* an input that cannot be read */
        sps__cmp_side_free(&base);
        sps__cmp_side_free(&new_side);
        return status;
    }
    struct sps_cmp_result result;
    int rc = sps__cmp_build(&base, &new_side, &o.params, &result);
    if (rc) {
        sps__cmp_side_free(&base);
        sps__cmp_side_free(&new_side);
        return sps_cli_error("compare", "cannot compare", sps_strerror(rc), 2);
    }
    /* -o FILE: the output writer every command's -o uses (nothing
     * half-written, never through a link planted beside FILE; a device or
     * a pipe named by FILE is written into, not replaced) */
    FILE *f = stdout;
    struct sps_out out = {0};
    char werr[512];
    if (o.out && sps__out_open(&out, o.out, werr, sizeof werr) != 0) {
        status = sps_cli_error("compare", "-o", werr, 2);
    } else {
        if (o.out)
            f = out.f;
        rc = sps__cmp_render(f, o.format, o.format == SPS_CMP_TEXT && !o.out && colour_wanted(f), &result, &base,
                             &new_side);
        if (o.out && rc)
            sps__out_abort(&out);
        else if (o.out && sps__out_commit(&out, werr, sizeof werr) != 0)
            rc = SPS_EIO;
        if (rc)
            status = sps_cli_error("compare", o.out ? o.out : "standard output", "cannot write", 2);
        else
            status = o.fail_on && sps__cmp_regressed(&result, o.fail_min_change) ? 1 : 0;
    }
    sps__cmp_result_free(&result);
    sps__cmp_side_free(&base);
    sps__cmp_side_free(&new_side);
    return status;
}
