/*
 * cmd_run.c - `stepscope run [-o DIR] -- CMD [ARGS...]`: run a command (no
 * shell), let every instrumented process of it record into DIR/records, and
 * when it ends write DIR/report.json, then the files made from it
 * (report.html, steps.csv, timeline.csv, trace.json), and print the
 * summary.
 *
 * While the workload runs with stderr on a terminal, a live status sits
 * in the terminal's last lines (live_view.c).
 *
 * The workload's exit status passes through (128+N when signal N killed
 * it).  The workload runs in a process group of its own, which gets the
 * terminal when stepscope has it: Ctrl-C reaches the workload (and not
 * stepscope), and every signal stepscope receives (kill, a scheduler's
 * SIGTERM, a signal to stepscope's whole group) is forwarded to the
 * workload's group exactly once.  Ctrl-Z stops the workload and then
 * stepscope, so the shell's job control works as usual.  Once the
 * workload is gone, those signals let stepscope finish the report first
 * (run_finish.h); if stepscope is killed, the workload gets SIGTERM (the
 * parent-death signal set in exec_child), and the rest of its group too
 * (the guardian, sps__platform_group_guardian).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auto_inject.h"
#include "cli.h"
#include "live_view.h"
#include "overhead_guard.h"
#include "run_dir.h"
#include "run_prom.h"
#include "run_stream.h"
#include "torch_profile_opt.h"
#include "record_cost.h"
#include "run_finish.h"
#include "clock.h"
#include "render/render.h"
#include "model/run.h"
#include "model/torch_ops.h"
#include "analysis/analysis.h"
#include "render/analysis_views.h"
#include "render/export_dir.h"
#include "render/tensorboard.h"
#include "live/stream.h"
#include "render/exporters.h"
#include "platform/platform.h"
#include "capture.h"
#include "sampler/sampler.h"

static const char run_usage[] =
    "usage: stepscope run [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND (no shell), record every process of it that uses libstepscope\n"
    "or the stepscope Python module (a Python process that imports torch is\n"
    "instrumented with no code change, unless --no-auto), write each step to\n"
    "DIR/steps.jsonl as it ends, and when COMMAND ends write DIR/report.json,\n"
    "DIR/report.html, DIR/steps.csv, DIR/timeline.csv and DIR/trace.json.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR        report directory (default: stepscope-out), made\n"
    "                          with its parents, one run at a time; an earlier\n"
    "                          run's records/, report.json, capture.bin and the\n"
    "                          files made from them are set aside in\n"
    "                          DIR/.previous until this run's report is written\n"
    "                          (a killed run's report.json is rebuilt from its\n"
    "                          records first)\n"
    "      --allow-foreign-dir\n"
    "                          use DIR (or DIR/records, --tensorboard's DIR,\n"
    "                          --prom-textfile's directory) although another user\n"
    "                          owns it or a directory above it (refused by\n"
    "                          default: its owner could replace what stepscope\n"
    "                          writes there, or DIR itself)\n"
    "  -q, --quiet             no live status and no summary\n"
    "      --no-live           no live status while COMMAND runs (it is shown\n"
    "                          only when stderr is a terminal)\n"
    "      --no-stream         do not write DIR/steps.jsonl, the live stream\n"
    "                          of one JSON line per completed step\n"
    "      --ring-events N     zone events kept per thread, 16 to 16777216\n"
    "                          (default 65536)\n"
    "      --ring-policy P     keep-latest (default) or keep-first, when a\n"
    "                          thread records more events than its ring holds\n"
    "      --interval MS       read the workload's CPU time and memory every MS\n"
    "                          milliseconds, 10 to 3600000 (default 100)\n"
    "      --machine-interval MS\n"
    "                          read the GPUs, system CPU, memory and network,\n"
    "                          temperatures, energy, and the workload's threads\n"
    "                          and disk I/O every MS milliseconds (default 500)\n"
    "      --no-sample         do not sample the machine at all\n"
    "      --trace-max-mb N    size budget of trace.json in MiB (default 100)\n"
    "      --carbon-intensity G\n"
    "                          grid carbon intensity in g CO2e per kWh for the\n"
    "                          energy analysis (default 480, the world average)\n"
    "      --pue X             data-centre power usage effectiveness, 1 to 10\n"
    "                          (default 1.0: the machine's own draw)\n"
    "      --peak-flops N      dense peak FLOP/s per GPU for MFU, e.g. 989e12\n"
    "                          (default: from the GPU's name when known)\n"
    "      --max-overhead PCT  a budget for what recording may cost the\n"
    "                          workload, in percent of its CPU time (e.g. 1%):\n"
    "                          over it, record only steps and their phases,\n"
    "                          then only steps; the report says when\n"
    "      --torch-profile STEPS\n"
    "                          turn torch.profiler on in each Python process for\n"
    "                          steps FIRST:END of its main thread (0-based as in\n"
    "                          steps.csv, END excluded: 3:5 is steps 3 and 4),\n"
    "                          or auto: the 5 steps after the first step slower\n"
    "                          than 3 times the median so far (from step 10);\n"
    "                          its operators go into trace.json and report.json\n"
    "      --gpu-peak MODE     the per-step peak of torch.cuda's memory: keep\n"
    "                          (default: torch's peak statistics are never\n"
    "                          reset; a step's peak is recorded when torch's\n"
    "                          rose in it) or step (reset at each step's begin:\n"
    "                          every step's peak is exact, and the script's own\n"
    "                          torch.cuda.max_memory_allocated() changes with it)\n"
    "      --no-auto           no auto-instrumentation: Python processes that\n"
    "                          import torch are not instrumented by stepscope\n"
    "                          (by default their steps, data, forward, backward\n"
    "                          and optimizer are timed with no code change)\n"
    "      --serve HOST:PORT   serve the job's metrics for Prometheus at\n"
    "                          http://HOST:PORT/metrics while it runs (step and\n"
    "                          zone histograms per rank, counters, machine and\n"
    "                          GPU gauges); :PORT listens on every interface;\n"
    "                          an address that cannot be served is said in one\n"
    "                          line and COMMAND runs without it\n"
    "      --prom-textfile PATH\n"
    "                          write the same metrics to PATH for node_exporter's\n"
    "                          textfile collector (name it *.prom) every 5 s and\n"
    "                          when COMMAND ends, replaced atomically; PATH's\n"
    "                          directory is checked as DIR is (another user's\n"
    "                          stops the run unless --allow-foreign-dir)\n"
    "      --tensorboard DIR   also write TensorBoard event files into DIR when\n"
    "                          COMMAND ends: per-step scalars (step time, phase\n"
    "                          self times, waits, values such as loss, machine\n"
    "                          readings) under stepscope/ tags; DIR/rank-N/ per\n"
    "                          rank; view with tensorboard --logdir DIR\n"
    "  -h, --help              this help\n"
    "\n"
    "Options end at -- or at the first argument that does not start with -.\n"
    "COMMAND runs in a process group of its own and gets the terminal; every\n"
    "signal stepscope receives is forwarded to it once, and Ctrl-Z stops both.\n"
    "Once COMMAND has ended, a signal no longer stops stepscope before the\n"
    "report is written: the first is said and the report finished, a second\n"
    "stops stepscope as soon as report.json is written. If stepscope is\n"
    "killed, COMMAND's process group gets SIGTERM, and `stepscope report DIR`\n"
    "makes the report from the records.\n"
    "\n"
    "exit status: COMMAND's own; 128+N when signal N killed it; 126 when it\n"
    "cannot be executed, 127 when it is not found; 2 for a usage error; 1 when\n"
    "DIR cannot be made or used (a link, another user's, another run's:\n"
    "COMMAND does not run then), or COMMAND succeeded but its report cannot\n"
    "be written.\n";

/* The workload's process group (its pid); 0 once it has been reaped, so a
 * late signal never reaches a recycled pid. */
static volatile sig_atomic_t child_pgid;

static volatile sig_atomic_t continued;

static void note_continued(int sig) {
    (void)sig;
    continued = 1;
}

/* While the workload's group lives, sig is its; once the workload is
 * reaped (or its group is gone: a signal between the reap and child_pgid's
 * reset), it is stepscope's own, which then finishes the report before it
 * stops (run_finish.h). */
static void forward_signal(int sig) {
    int saved = errno;
    pid_t pgid = (pid_t)child_pgid;
    if (pgid <= 0 || (kill(-pgid, sig) != 0 && errno == ESRCH))
        sps_run_finish_signal(sig);
    errno = saved;
}

/* Make pgid the terminal's foreground group.  A process outside the
 * foreground group that calls tcsetpgrp gets SIGTTOU: block it meanwhile. */
static void give_terminal(int tty, pid_t pgid) {
    sigset_t ttou, saved;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &saved);
    tcsetpgrp(tty, pgid);
    sigprocmask(SIG_SETMASK, &saved, NULL);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* A percentage in (0, 100], with or without a trailing '%', as a fraction. */
static int parse_percent(const char *s, double *fraction) {
    char buf[64];
    size_t n = s ? strlen(s) : 0;
    if (!n || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n + 1);
    if (buf[n - 1] == '%')
        buf[--n] = '\0';
    char *end;
    errno = 0;
    double v = n ? strtod(buf, &end) : NAN;
    if (!n || errno || *end || !(v > 0) || v > 100)
        return -1;
    *fraction = v / 100.0;
    return 0;
}

/* A finite number in [lo, hi] ("312e12" allowed). */
static int parse_double_in(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    if (!s || !*s)
        return -1;
    *out = strtod(s, &end);
    return errno || *end || !isfinite(*out) || *out < lo || *out > hi ? -1 : 0;
}

static int parse_uint(const char *s, unsigned long *out) {
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        return -1;
    *out = strtoul(s, &end, 10);
    return errno || *end ? -1 : 0;
}

/* ------------------------------------------------------------ phase 1: parse */

/* What the command line asked for. */
struct run_options {
    const char *out_dir;
    int quiet, live, sample, stream;
    int no_auto; /* --no-auto */
    int allow_foreign_dir; /* --allow-foreign-dir */
    const char *ring_events, *ring_policy;
    unsigned long interval_ms, machine_ms, trace_mb;
    double max_overhead; /* a fraction; 0: no budget */
    const char *torch_profile; /* --torch-profile's spec, NULL: none */
    const char *gpu_peak;      /* --gpu-peak's mode, NULL: STEPSCOPE_GPU_PEAK as inherited */
    const char *serve, *prom_textfile; /* --serve, --prom-textfile; NULL: none */
    const char *tensorboard;           /* --tensorboard DIR; NULL: none */
    struct sps_analysis_config analysis;
    char **cmd; /* the workload's argv, NULL-terminated */
    int cmd_argc;
};

/* Options that take a value. */
static int takes_value(const char *a) {
    static const char *const with_value[] = {"-o", "--output", "--ring-events", "--ring-policy", "--interval",
                                             "--machine-interval", "--trace-max-mb", "--carbon-intensity", "--pue",
                                             "--peak-flops", "--max-overhead", "--torch-profile",
                                             "--gpu-peak", "--serve", "--prom-textfile", "--tensorboard"};
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
        if (!strcmp(a, with_value[k]))
            return 1;
    return 0;
}

/* --gpu-peak's modes, passed to the Python module as STEPSCOPE_GPU_PEAK
 * (python/src/torch_memory.c): 0 for a good one. */
static int gpu_peak_check(const char *v) {
    return strcmp(v, "keep") && strcmp(v, "step");
}

/* One option a (with its value v when it takes one) into o.  Returns -1
 * when it is taken, else the exit status to leave with (0 for --help). */
static int parse_option(struct run_options *o, const char *a, const char *v) {
    if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
        o->out_dir = v;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
        o->quiet = 1;
    } else if (!strcmp(a, "--ring-events")) {
        unsigned long n;
        o->ring_events = v;
        if (parse_uint(v, &n) || n < 16 || n > (1ul << 24))
            return sps_cli_usage_error("run", "--ring-events: '%s' is not a number from 16 to 16777216", v);
    } else if (!strcmp(a, "--ring-policy")) {
        o->ring_policy = v;
        if (strcmp(v, "keep-latest") && strcmp(v, "keep-first"))
            return sps_cli_usage_error("run", "--ring-policy: '%s' is not keep-latest or keep-first", v);
    } else if (!strcmp(a, "--interval") || !strcmp(a, "--machine-interval")) {
        unsigned long *ms = a[2] == 'i' ? &o->interval_ms : &o->machine_ms;
        if (parse_uint(v, ms) || *ms < 10 || *ms > 3600000)
            return sps_cli_usage_error("run", "%s: '%s' is not a number of milliseconds from 10 to 3600000", a, v);
    } else if (!strcmp(a, "--trace-max-mb")) {
        if (parse_uint(v, &o->trace_mb) || o->trace_mb < 1 || o->trace_mb > (1ul << 20))
            return sps_cli_usage_error("run", "--trace-max-mb: '%s' is not a number from 1 to 1048576", v);
    } else if (!strcmp(a, "--carbon-intensity")) {
        if (parse_double_in(v, 0, 5000, &o->analysis.carbon_g_per_kwh))
            return sps_cli_usage_error("run", "--carbon-intensity: '%s' is not a number of g CO2e/kWh from 0 to 5000",
                                       v);
    } else if (!strcmp(a, "--pue")) {
        if (parse_double_in(v, 1, 10, &o->analysis.pue))
            return sps_cli_usage_error("run", "--pue: '%s' is not a number from 1 to 10", v);
    } else if (!strcmp(a, "--peak-flops")) {
        if (parse_double_in(v, 1, 1e21, &o->analysis.peak_flops))
            return sps_cli_usage_error("run", "--peak-flops: '%s' is not a number of FLOP/s from 1 to 1e21", v);
    } else if (!strcmp(a, "--max-overhead")) {
        if (parse_percent(v, &o->max_overhead))
            return sps_cli_usage_error("run", "--max-overhead: '%s' is not a percentage above 0 and at most 100", v);
    } else if (!strcmp(a, "--torch-profile")) {
        char why[160];
        if (sps_torch_profile_check(v, why, sizeof why))
            return sps_cli_usage_error("run", "--torch-profile: %s", why);
        o->torch_profile = v;
    } else if (!strcmp(a, "--gpu-peak")) {
        if (gpu_peak_check(v))
            return sps_cli_usage_error("run", "--gpu-peak: '%s' is not keep or step", v);
        o->gpu_peak = v;
    } else if (!strcmp(a, "--serve")) {
        o->serve = v; /* checked when the server starts: a bad one does not stop the job */
    } else if (!strcmp(a, "--prom-textfile")) {
        if (!*v)
            return sps_cli_usage_error("run", "--prom-textfile: the file name is empty");
        o->prom_textfile = v;
    } else if (!strcmp(a, "--tensorboard")) {
        if (!*v)
            return sps_cli_usage_error("run", "--tensorboard: the directory name is empty");
        o->tensorboard = v;
    } else if (!strcmp(a, "--no-live")) {
        o->live = 0;
    } else if (!strcmp(a, "--no-stream")) {
        o->stream = 0;
    } else if (!strcmp(a, "--no-sample")) {
        o->sample = 0;
    } else if (!strcmp(a, "--no-auto")) {
        o->no_auto = 1;
    } else if (!strcmp(a, "--allow-foreign-dir")) {
        o->allow_foreign_dir = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        fputs(run_usage, stdout);
        return 0;
    } else {
        return sps_cli_usage_error("run", "unknown option '%s'", a);
    }
    return -1;
}

/* The command line into o.  Returns -1 to go on, else the exit status. */
static int parse_run_options(int argc, char **argv, struct run_options *o) {
    memset(o, 0, sizeof *o);
    o->out_dir = "stepscope-out";
    o->live = o->sample = o->stream = 1;
    o->trace_mb = SPS_TRACE_DEFAULT_MAX_BYTES >> 20;
    sps__analysis_config_default(&o->analysis);
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        int with_value = takes_value(a);
        if (with_value && i + 1 >= argc)
            return sps_cli_usage_error("run", "option '%s' needs a value", a);
        /* `--prom-textfile -- train.py` forgot the value: "--" is never one */
        if (with_value && strcmp(argv[i + 1], "--") == 0)
            return sps_cli_usage_error("run", "option '%s' needs a value before '--'", a);
        int rc = parse_option(o, a, with_value ? argv[++i] : NULL);
        if (rc >= 0)
            return rc;
    }
    if (i >= argc)
        return sps_cli_usage_error("run", "no command given (usage: stepscope run [-o DIR] -- COMMAND [ARGS...])");
    if (o->max_overhead > 0 && !o->sample)
        return sps_cli_usage_error("run", "--max-overhead needs the sampler (it reads the workload's CPU time): drop "
                                          "--no-sample");
    if (!*o->out_dir)
        return sps_cli_usage_error("run", "-o: the report directory name is empty");
    /* an inherited STEPSCOPE_GPU_PEAK is refused here, not in the workload's loop */
    const char *peak_env = getenv("STEPSCOPE_GPU_PEAK");
    if (!o->gpu_peak && peak_env && *peak_env && gpu_peak_check(peak_env))
        return sps_cli_usage_error("run", "STEPSCOPE_GPU_PEAK='%s' is not keep or step", peak_env);
    o->cmd = argv + i;
    o->cmd_argc = argc - i;
    return -1;
}

/* ------------------------------------------------ phase 2: the run directory */

struct run_dir {
    struct sps_run_dir_hold hold; /* DIR open, locked, an earlier run set aside (run_dir.h) */
    char abs[PATH_MAX];           /* the report directory, absolute */
    char records[PATH_MAX];       /* its records/ */
    char capture[PATH_MAX + 32];
};

/* Take the directory (run_dir.h: opened without following a link, locked,
 * an earlier run's outputs set aside, a fresh records/), and name it in
 * the environment the workload inherits.  Returns -1 to go on, else the
 * exit status. */
static int prepare_run_dir(const struct run_options *o, struct run_dir *d) {
    int rc = sps_run_dir_take(&d->hold, o->out_dir, o->allow_foreign_dir, o->cmd, o->cmd_argc);
    if (rc >= 0)
        return rc;
    snprintf(d->abs, sizeof d->abs, "%s", d->hold.abs);
    if (snprintf(d->records, sizeof d->records, "%s/records", d->abs) >= (int)sizeof d->records) {
        sps_run_dir_end(&d->hold, 0); /* nothing ran: the earlier outputs go back */
        return sps_cli_error("run", o->out_dir, "path too long", 1);
    }
    snprintf(d->capture, sizeof d->capture, "%s/%s", d->abs, SPS_PUBLISHED_FILE);
    setenv("STEPSCOPE_RUN_DIR", d->abs, 1);
    unsetenv("STEPSCOPE_OUT"); /* the report is ours to write */
    if (o->ring_events)
        setenv("STEPSCOPE_RING_EVENTS", o->ring_events, 1);
    if (o->ring_policy)
        setenv("STEPSCOPE_RING_POLICY", o->ring_policy, 1);
    if (o->torch_profile)
        setenv(SPS_TORCH_PROFILE_ENV, o->torch_profile, 1);
    if (o->gpu_peak)
        setenv("STEPSCOPE_GPU_PEAK", o->gpu_peak, 1);
    return -1;
}

/* --tensorboard DIR before COMMAND runs, as -o's: made when missing, not a
 * link at its name, not another user's (unless allow_foreign), and
 * refused unless this process can write into it, so that a directory
 * that cannot take the event files stops the run before the job, not
 * after it.  Returns -1 to go on, else the exit status. */
static int prepare_tensorboard_dir(const char *dir, int allow_foreign) {
    char what[PATH_MAX + 32];
    snprintf(what, sizeof what, "--tensorboard %s", dir);
    int rc = sps_run_dir_check("--tensorboard", dir, allow_foreign);
    if (rc >= 0)
        return rc;
    if (access(dir, W_OK | X_OK) != 0) {
        char why[256];
        snprintf(why, sizeof why, "cannot write into it: %s", strerror(errno));
        return sps_cli_error("run", what, why, 1);
    }
    return -1;
}

/* --prom-textfile PATH's directory, before COMMAND runs: held to -o's
 * rule (run_dir.h), since the textfile is written there by name every
 * 5 s for as long as the run lasts.  Returns -1 to go on, else the exit
 * status. */
static int check_textfile_dir(const char *path, int allow_foreign) {
    return sps_file_dir_foreign_check("run", "--prom-textfile", path, allow_foreign);
}

/* The sampler opens its sources and creates DIR/capture.bin before the
 * workload starts, so the workload's first sps_capture() finds it; its
 * thread starts once the workload's pid is known.  NULL without one. */
static struct sps__sampler *open_sampler(const struct run_options *o, const struct run_dir *d) {
    if (!o->sample)
        return NULL;
    struct sps__sampler_config scfg = {0};
    sps__sampler_config_from_env(&scfg);
    scfg.interval_ms = (int)o->interval_ms;
    scfg.machine_interval_ms = (int)o->machine_ms;
    scfg.publish_path = d->capture;
    char serr[512];
    struct sps__sampler *sampler = sps__sampler_open(&scfg, serr, sizeof serr);
    if (!sampler)
        sps_cli_error("run", "sampler", serr, 0); /* the run goes on without machine metrics */
    else if (serr[0])
        sps_cli_error("run", "sampler", serr, 0);
    return sampler;
}

/* The guard prices what the workload records as it goes, so it needs the
 * costs before the workload starts (measured while this process has no
 * other thread, as the measurement forks).  Returns the budget to keep
 * (0 when there is none or it cannot be kept). */
static double measure_budget_costs(double max_overhead, int have_sampler, struct sps_run_info *info) {
    if (max_overhead <= 0)
        return 0;
    info->have_record_cost = sps_measure_record_cost(&info->zone_cost_ns, &info->value_cost_ns,
                                                     &info->thinned_zone_cost_ns, &info->warm_end_ns) == 0;
    if (!have_sampler || !info->have_record_cost) {
        sps_cli_error("run", "--max-overhead",
                      !have_sampler ? "no sampler: the run goes on without a budget"
                                    : "the cost of a zone could not be measured: the run goes on without a budget",
                      0);
        return 0;
    }
    return max_overhead;
}

/* ------------------------------------------- phase 3: the workload and watchers */

/* The workload while it runs, and what the watchers made of it. */
struct workload {
    pid_t pid;
    int tty;        /* the controlling terminal, -1 without one */
    int foreground; /* we held the terminal when it started */
    sigset_t old_mask;
    int64_t start_rt_ns; /* CLOCK_REALTIME (sps__realtime_ns) */
    uint64_t t0, t1;          /* its start and end on the monotonic clock */
    int exec_ok;              /* the exec is known to have worked */
    int exec_failed;          /* it failed, and exec_errno says why */
    int exec_errno;
    int status, reaped;       /* from waitpid */
    int guardian;             /* the group's guardian (sps__platform_group_guardian), -1: none */
    struct sps__sampler *sampler;
    struct sps_overhead_guard *guard;
    struct sps_live_view *view;
    struct sps_run_stream *stream;
    struct sps_run_prom *prom;
};

/* The forked child: SIGTERM when stepscope dies (a SIGKILL leaves no one
 * to forward signals or write the report: the workload must not run on
 * orphaned; only the workload itself gets it, its group gets it from the
 * guardian), its
 * own process group (with the terminal when we hold it), then exec; errno
 * goes up errpipe when exec fails.  parent: stepscope's pid. */
static void exec_child(const struct workload *w, char **cmd, int errpipe[2], pid_t parent) {
    /* stepscope forks from its main thread, which lives until it exits:
     * the parent-death signal, sent when the forking thread dies, is
     * stepscope's death */
    if (sps__platform_die_with_parent(parent, SIGTERM) == 1)
        _exit(128 + SIGTERM); /* stepscope is already gone */
    setpgid(0, 0);
    if (w->foreground) /* before exec, so the workload can read the terminal at once */
        give_terminal(w->tty, getpid());
    if (w->tty >= 0)
        close(w->tty);
    sigprocmask(SIG_SETMASK, &w->old_mask, NULL);
    close(errpipe[0]);
    execvp(cmd[0], cmd);
    int e = errno;
    ssize_t n = write(errpipe[1], &e, sizeof e);
    (void)n;
    _exit(e == ENOENT ? 127 : 126);
}

/* Forward stepscope's signals to the workload's group; SIGCONT (the
 * shell's fg or bg) interrupts the wait, so a job started in the
 * background can hand the terminal over once it has it. */
static void install_forwarding(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask); /* one handler at a time: run_finish counts them */
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaddset(&sa.sa_mask, forwarded[k]);
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaction(forwarded[k], &sa, NULL);
    struct sigaction cont;
    memset(&cont, 0, sizeof cont);
    cont.sa_handler = note_continued;
    sigemptyset(&cont.sa_mask);
    sigaction(SIGCONT, &cont, NULL);
}

/* Fork and exec the workload in a group of its own, and learn whether the
 * exec worked (exec_ok, exec_failed).  Returns -1 to go on, else the exit
 * status (no workload was started). */
static int start_workload(struct workload *w, char **cmd) {
    sps__platform_become_subreaper();
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) != 0)
        return sps_cli_error("run", "pipe", strerror(errno), 1);

    /* Block the forwarded signals until the handlers know the child. */
    sigset_t block;
    sigemptyset(&block);
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaddset(&block, forwarded[k]);
    sigprocmask(SIG_BLOCK, &block, &w->old_mask);

    /* The controlling terminal, whatever stdin is (it may be /dev/null
     * while the keyboard still sends Ctrl-Z), and whether we hold it. */
    signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap the workload for us */
    w->tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    w->foreground = w->tty >= 0 && tcgetpgrp(w->tty) == getpgrp();
    w->start_rt_ns = sps__realtime_ns();
    w->t0 = sps__mono_ns();
    /* the run's time origin, for stepscope.last_step() in the workload */
    char t0[32];
    snprintf(t0, sizeof t0, "%llu", (unsigned long long)w->t0);
    setenv("STEPSCOPE_RUN_START_NS", t0, 1);
    fflush(NULL);
    pid_t parent = getpid();
    w->pid = fork();
    if (w->pid < 0) {
        sigprocmask(SIG_SETMASK, &w->old_mask, NULL);
        return sps_cli_error("run", "fork", strerror(errno), 1);
    }
    if (w->pid == 0)
        exec_child(w, cmd, errpipe, parent);
    setpgid(w->pid, w->pid); /* also here: whichever runs first */
    /* the workload's parent-death signal reaches it alone: the guardian
     * takes SIGTERM to the rest of its group (a script's children) if
     * stepscope is killed */
    w->guardian = sps__platform_group_guardian(w->pid);
    if (w->foreground)
        give_terminal(w->tty, w->pid);
    child_pgid = w->pid;
    install_forwarding();
    sigprocmask(SIG_SETMASK, &w->old_mask, NULL);

    close(errpipe[1]);
    ssize_t got;
    do
        got = read(errpipe[0], &w->exec_errno, sizeof w->exec_errno);
    while (got < 0 && errno == EINTR);
    close(errpipe[0]);
    /* EOF: the exec closed the pipe.  Anything else but a whole errno
     * (a read error) leaves the outcome unknown: nothing is watched, and
     * the run is reported once the child is reaped. */
    w->exec_ok = got == 0;
    w->exec_failed = got == (ssize_t)sizeof w->exec_errno;
    return -1;
}

/* The sampler's thread, the overhead guard and the live view, once the
 * workload runs (before exec, the child is a copy of stepscope and its
 * memory is not the workload's). */
static void start_watchers(struct workload *w, const struct run_options *o, const struct run_dir *d,
                           double max_overhead, const struct sps_run_info *info) {
    if (!w->exec_ok)
        return;
    if (w->sampler) {
        sps__sampler_set_tree(w->sampler, w->pid);
        if (sps__sampler_start(w->sampler, 0) != 0)
            sps_cli_error("run", "sampler", strerror(errno), 0);
    }
    if (max_overhead > 0) {
        int sampling = sps__sampler_running(w->sampler);
        if (sampling)
            w->guard = sps_overhead_guard_start(d->records, sps__sampler_published(w->sampler), max_overhead,
                                                info->zone_cost_ns, info->value_cost_ns, info->thinned_zone_cost_ns,
                                                w->t0);
        if (!w->guard)
            sps_cli_error("run", "--max-overhead",
                          sampling ? "the guard could not start: the run goes on without a budget"
                                   : "the sampler is not running: the run goes on without a budget",
                          0);
    }
    if (o->stream) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", d->abs, SPS_STREAM_FILE);
        w->stream = sps_run_stream_start(path, d->records, w->sampler ? sps__sampler_published(w->sampler) : NULL,
                                         w->t0);
    }
    if (o->serve || o->prom_textfile) {
        struct sps_run_prom_config pc = {
            .serve = o->serve,
            .textfile = o->prom_textfile,
            .records_dir = d->records,
            .published = w->sampler ? sps__sampler_published(w->sampler) : NULL,
            .start_unix_s = (double)w->start_rt_ns * 1e-9,
            .quiet = o->quiet,
        };
        w->prom = sps_run_prom_start(&pc);
    }
    if (o->live && !o->quiet)
        w->view = sps_live_view_start(STDERR_FILENO, d->records, w->sampler ? sps__sampler_published(w->sampler) : NULL,
                                      w->pid, w->t0);
}

/* ------------------------------------------------------------- phase 4: wait */

/* A terminal stop (Ctrl-Z, or touching the terminal from the background):
 * take the terminal back if the workload holds it and stop too, so the
 * shell sees the job stopped; when continued, hand the terminal over if we
 * are in the foreground and continue the workload.  Other stops (SIGSTOP
 * from a debugger or a scheduler) are someone else's to undo. */
static void follow_stop(struct workload *w, int sig) {
    if (w->tty < 0 || (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU))
        return;
    if (tcgetpgrp(w->tty) == w->pid)
        give_terminal(w->tty, getpgrp());
    sps_live_view_pause(w->view); /* the shell gets the whole screen */
    continued = 0;
    raise(SIGSTOP);
    if (tcgetpgrp(w->tty) == getpgrp())
        give_terminal(w->tty, w->pid);
    sps_live_view_resume(w->view);
    kill(-w->pid, SIGCONT);
}

/* Wait for the workload to end, following its terminal stops. */
static void wait_workload(struct workload *w) {
    for (;;) {
        if (waitpid(w->pid, &w->status, WUNTRACED) < 0) {
            if (errno != EINTR)
                break;
            if (continued) { /* fg: we may hold the terminal now */
                continued = 0;
                if (w->tty >= 0 && tcgetpgrp(w->tty) == getpgrp())
                    give_terminal(w->tty, w->pid);
            }
            continue;
        }
        if (!WIFSTOPPED(w->status)) {
            w->reaped = 1;
            break;
        }
        follow_stop(w, WSTOPSIG(w->status));
    }
    child_pgid = 0;
    /* what of the group outlives the workload is left as it is (the report
     * says it was still running) */
    if (w->guardian > 0) {
        kill(w->guardian, SIGKILL);
        while (waitpid(w->guardian, NULL, 0) < 0 && errno == EINTR)
            ;
        w->guardian = -1;
    }
}

/* The workload is gone: stop the watchers (into info), give signals and
 * the terminal back.  The live view stops last, before anything else is
 * printed: the terminal gets its height back. */
static void stop_watchers(struct workload *w, struct sps_run_info *info) {
    sps_overhead_guard_stop(w->guard, &info->guard);
    /* the tree is gone: a later tick would only record its absence */
    sps__sampler_stop(w->sampler);
    sps_run_stream_stop(w->stream); /* every step left, before the records are trimmed */
    w->stream = NULL;
    sps_run_prom_stop(w->prom); /* the textfile's last write: every step the workload made */
    w->prom = NULL;
    /* the forwarded signals keep their handler: with the workload gone it
     * has stepscope finish the report before stopping (run_finish.h) */
    signal(SIGCONT, SIG_DFL);
    if (w->tty >= 0) {
        if (tcgetpgrp(w->tty) == w->pid) /* only if the workload still held it */
            give_terminal(w->tty, getpgrp());
        close(w->tty);
    }
    struct sps_live_view_cost view_cost = {0};
    info->have_live_view = w->view != NULL;
    sps_live_view_stop(w->view, &view_cost);
    w->view = NULL;
    info->live_view_refreshes = view_cost.refreshes;
    info->live_view_cpu_seconds = view_cost.cpu_seconds;
}

/* What the run's facts are, for the report: the command, its exit, times
 * and memory, the sampler's result. */
static void fill_run_info(struct sps_run_info *info, const struct run_options *o, const struct workload *w) {
    if (o->trace_mb != SPS_TRACE_DEFAULT_MAX_BYTES >> 20)
        info->trace_max_bytes = (uint64_t)o->trace_mb << 20; /* for `stepscope report` to make it again */
    info->argc = o->cmd_argc;
    info->argv = o->cmd;
    info->start_realtime_ns = w->start_rt_ns;
    info->start_mono_ns = w->t0;
    info->sampler = w->sampler ? sps__sampler_result(w->sampler) : NULL;
    info->analysis = &o->analysis;
    info->sampler_absent_reason = o->sample ? "the sampler could not start" : "sampling was turned off (--no-sample)";
    info->have_exit = 1;
    info->cpu_count = sps__platform_cpu_count();
    if (WIFSIGNALED(w->status)) {
        info->exit_signal = WTERMSIG(w->status);
        info->core_dumped = WCOREDUMP(w->status) != 0;
    } else {
        info->exit_code = WEXITSTATUS(w->status);
    }
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
        info->have_times = 1;
        info->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
        info->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
        info->have_rss = 1;
        info->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
    }
    info->wall_s = (double)(w->t1 - w->t0) * 1e-9;
    /* After the workload's rusage is read (the measuring child is a child
     * too), with every thread of ours stopped, so it forks cleanly; a
     * budgeted run measured before it started. */
    if (!info->have_record_cost)
        info->have_record_cost = sps_measure_record_cost(&info->zone_cost_ns, &info->value_cost_ns,
                                                         &info->thinned_zone_cost_ns, &info->warm_end_ns) == 0;
}

/* ----------------------------------------------- phase 5: the model, rendered */

/* --tensorboard's event files (render/tensorboard.h), with a note when
 * the run made no step to write or when other event files share their
 * directories.  Returns 0, or an SPS_E* code with err set. */
static int write_tensorboard(const struct run_options *o, const struct sps_report *rep, char *err, size_t errlen) {
    if (rep->run.nsteps == 0)
        fprintf(stderr, "stepscope: run: note: --tensorboard: the run made no step: no event file in %s\n",
                o->tensorboard);
    size_t others = 0;
    int rc = sps__export_tensorboard(rep, o->tensorboard, &others, err, errlen);
    sps_cli_tensorboard_note("run", o->tensorboard, others);
    return rc;
}

/* Build the model once from the records and the run's facts, write
 * report.json from it, then the other files and the summary.  Returns 0,
 * or an SPS_E* code with err set. */
static int build_and_render(const struct run_options *o, const struct run_dir *d, const struct sps_run_info *info,
                            char *err, size_t errlen) {
    /* the killed processes' records, cut to what they used (the others
     * cut their own at exit) */
    (void)sps__records_trim(d->records);
    uint64_t t0 = info->start_mono_ns;
    struct sps_run run = {0};
    int rc = sps__run_load_dir(&run, d->records, err, errlen);
    if (rc == 0)
        sps_cli_mark_running(&run); /* a process the workload started that outlived it */
    if (rc == 0)
        rc = sps__run_build(&run);
    /* one time origin for zones, steps and series: when the run began */
    if (rc == 0 && (run.nprocs == 0 || run.start_ns > t0))
        run.start_ns = t0;
    struct sps_report rep;
    int built = 0;
    if (rc == 0) {
        rc = sps__report_build(&rep, &run, info);
        built = 1;
        if (rc == SPS_ENOMEM)
            snprintf(err, errlen, "out of memory while analysing the run");
    } else if (rc == SPS_ENOMEM) {
        snprintf(err, errlen, "out of memory while reading the records");
    }
    if (rc == 0) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/report.json", d->abs);
        rc = sps__report_json_write(&rep, path, err, errlen);
        if (rc == 0)
            sps_run_finish_written(); /* a second signal may stop stepscope now */
    }
    sps__run_free(&run);
    /* every other file renders from the same model: nothing is read back;
     * the event files before trace.json, which takes the rows' cells, and
     * a failure of theirs stops none of the others */
    char tb_err[1024] = "";
    int tb_rc = rc == 0 && o->tensorboard ? write_tensorboard(o, &rep, tb_err, sizeof tb_err) : 0;
    if (rc == 0) {
        rc = sps__export_all(&rep, d->abs, (uint64_t)o->trace_mb << 20, err, errlen);
        if (!o->quiet && rc == 0) {
            sps__summary_print(stderr, &rep, 0);
            sps__analysis_print(stderr, &rep.analysis);
            if (o->torch_profile && rep.run.ntorch == 0) /* asked for, and nobody could say why not */
                fprintf(stderr, "torch profile  --torch-profile %s: no process profiled a window (only Python "
                                "processes that import stepscope and make steps do)\n",
                        o->torch_profile);
        }
        if (o->quiet && rc == 0)
            sps_cli_report_notes("run", o->out_dir, &rep); /* what the summary says of what the report lacks */
    }
    if (built)
        sps__report_free(&rep);
    if (!o->quiet && rc == 0)
        fprintf(stderr, "report: %s/report.html (also report.json, steps.csv, timeline.csv, trace.json)\n", o->out_dir);
    if (!o->quiet && rc == 0 && o->tensorboard && tb_rc == 0)
        fprintf(stderr, "tensorboard: %s (tensorboard --logdir %s)\n", o->tensorboard, o->tensorboard);
    if (rc == 0 && tb_rc != 0) {
        snprintf(err, errlen, "--tensorboard: %s", tb_err);
        rc = tb_rc;
    }
    return rc;
}

/* The line for a report that could not be written (err), with the way to
 * make it once the cause (a full disk, say) is gone: the records stay, and
 * `stepscope report` makes what is missing from them. */
static void report_failed(const struct run_options *o, const struct run_dir *d, const char *err) {
    char json[PATH_MAX + 32], why[1024 + 2 * PATH_MAX + 160];
    struct stat st;
    snprintf(json, sizeof json, "%s/report.json", d->abs);
    if (!strncmp(err, "--tensorboard: ", 15))
        snprintf(why, sizeof why, "%s (once that is fixed, `stepscope report %s --format tensorboard -o %s` writes them)",
                 err, o->out_dir, o->tensorboard);
    else if (lstat(json, &st) == 0)
        snprintf(why, sizeof why, "%s (report.json is written: once that is fixed, `stepscope report %s` makes the "
                                  "other files)",
                 err, o->out_dir);
    else
        snprintf(why, sizeof why, "%s (the records are kept: once that is fixed, `stepscope report %s` makes the "
                                  "report from them)",
                 err, o->out_dir);
    sps_cli_error("run", "report", why, 0);
}

/* ---------------------------------------------------------------- the command */

int sps_cmd_run(int argc, char **argv) {
    struct run_options o;
    int rc = parse_run_options(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.tensorboard && (rc = prepare_tensorboard_dir(o.tensorboard, o.allow_foreign_dir)) >= 0)
        return rc;
    if (o.prom_textfile && (rc = check_textfile_dir(o.prom_textfile, o.allow_foreign_dir)) >= 0)
        return rc;
    struct run_dir d;
    rc = prepare_run_dir(&o, &d);
    if (rc >= 0)
        return rc;

    sps_run_finish_prepare(o.out_dir);
    struct workload w = {.tty = -1};
    struct sps_run_info info = {0};
    info.record_cost_absent_reason = "the measuring process could not run";
    info.auto_inject = sps_auto_inject_env(o.no_auto, o.cmd);
    w.sampler = open_sampler(&o, &d);
    double max_overhead = measure_budget_costs(o.max_overhead, w.sampler != NULL, &info);
    rc = start_workload(&w, o.cmd);
    if (rc >= 0) {
        sps__sampler_close(w.sampler);
        sps_run_dir_end(&d.hold, 0);
        return rc;
    }
    start_watchers(&w, &o, &d, max_overhead, &info);
    wait_workload(&w);
    stop_watchers(&w, &info);
    if (!w.reaped) {
        sps_cli_error("run", "wait", strerror(errno), 0);
        sps__sampler_close(w.sampler);
        sps_run_dir_end(&d.hold, 1);
        return 1;
    }
    w.t1 = sps__mono_ns();
    /* orphans the workload left behind that have already exited */
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    if (w.exec_failed) {
        sps__sampler_close(w.sampler);
        sps_run_dir_end(&d.hold, 0);
        sps_cli_error("run", o.cmd[0], w.exec_errno == ENOENT ? "command not found" : strerror(w.exec_errno), 0);
        return w.exec_errno == ENOENT ? 127 : 126;
    }

    fill_run_info(&info, &o, &w);
    int exit_code = info.exit_signal ? 128 + info.exit_signal : info.exit_code;
    char err[1024];
    rc = build_and_render(&o, &d, &info, err, sizeof err);
    sps__sampler_close(w.sampler);
    if (rc != 0)
        report_failed(&o, &d, err);
    sps_run_dir_end(&d.hold, 1); /* after the reason: where the earlier outputs are */
    if (rc != 0)
        return exit_code ? exit_code : 1;
    return exit_code;
}
