/* main.c - the stepscope command: global options and subcommand dispatch. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "stepscope.h"

static const char usage[] =
    "usage: stepscope <command> [options]\n"
    "\n"
    "stepscope tells where each training or inference step's time goes.\n"
    "\n"
    "commands:\n"
    "  run [-o DIR] [-q] [--] COMMAND [ARGS...]\n"
    "            run COMMAND, record every instrumented process of it (a\n"
    "            PyTorch script with no code change), stream DIR/steps.jsonl\n"
    "            while it runs, then write DIR/report.json, report.html,\n"
    "            steps.csv, timeline.csv and trace.json (default DIR:\n"
    "            stepscope-out) and print a summary\n"
    "  snapshot [--pid PID] [--wait MS]\n"
    "            read every metric source (twice, MS apart, for rates); print\n"
    "            the readings as JSON\n"
    "  report DIR [--format FORMAT] [-o OUT]\n"
    "            make a run directory's report.html, steps.csv, timeline.csv\n"
    "            and trace.json again (or one of them, the summary, or\n"
    "            TensorBoard event files)\n"
    "  compare BASE NEW | BASE... --vs NEW... [options]\n"
    "            did NEW make the steps faster or slower? each run's median\n"
    "            step, a t interval from the spread between runs (the run is\n"
    "            the unit) and a verdict (slower, faster, same, inconclusive),\n"
    "            for the step and each zone's self time\n"
    "  merge DIR... -o OUT [--max-clock-error MS] [--force]\n"
    "            join run directories recorded on several machines into one run\n"
    "            (every rank, its host, one timeline on rank 0's host's clock),\n"
    "            with the usual files for it; refuses when a measured clock\n"
    "            offset's error exceeds MS (default 1)\n"
    "  doctor [--json]\n"
    "            list every metric source: works or not, why not, cost of a read\n"
    "  help      this text, or a command's options: stepscope help <command>\n"
    "\n"
    "options:\n"
    "  -h, --help              this text\n"
    "  -V, --version           the version\n"
    "\n"
    "exit status:\n"
    "  0 for success, 2 for a usage error (a bad option, a missing argument),\n"
    "  1 when stepscope itself failed (a file it could not read or write), and:\n"
    "  run: the workload's status: its exit code, or 128+N when signal N killed\n"
    "  it; 126 when it cannot be executed and 127 when it is not found, as a\n"
    "  shell does; 1 when DIR cannot be made or the report cannot be written.\n"
    "  compare: 1 with --fail-on when NEW regressed; 2 for an unreadable input.\n"
    "  merge: 1 for bad input (not a run directory, damaged records, a rank of\n"
    "  one host twice, a clock error over the tolerance).\n"
    "  snapshot: 1 when nothing could be read; doctor: 1 when proc does not work.\n"
    "\n"
    "environment (read by the library in the workload):\n"
    "  STEPSCOPE_DISABLE=1         record nothing\n"
    "  STEPSCOPE_OUT=DIR           without stepscope run: DIR/report.json at exit\n"
    "  STEPSCOPE_CLOCK=NAME        tsc or monotonic: force the timestamp source\n"
    "  STEPSCOPE_RING_EVENTS=N     zone events kept per thread (default 65536)\n"
    "  STEPSCOPE_RING_POLICY=P     keep-latest (default) or keep-first\n"
    "  STEPSCOPE_RECORD_MB=N       record file size in MiB (default 256, sparse)\n"
    "  STEPSCOPE_HOSTNAME=NAME     the host name records carry (default: gethostname)\n"
    "  STEPSCOPE_CLOCK_SYNC=0      no clock offsets to rank 0 (torch.distributed)\n"
    "  STEPSCOPE_CLOCK_SYNC_TIMEOUT_S=S\n"
    "                              bound on each offset exchange (default 5 s)\n"
    "  NVTX_INJECTION64_PATH=LIB   an NVTX tool (nsys profile sets it): zones,\n"
    "                              steps and GPU zones are also NVTX ranges\n"
    "\n"
    "environment (read by the sampler: run, snapshot, doctor, sps_capture):\n"
    "  STEPSCOPE_ROOT=DIR          read /proc and /sys under DIR (fixture trees)\n"
    "  STEPSCOPE_NVML_LIBRARY=LIB  the NVML library (default libnvidia-ml.so.1)\n"
    "  STEPSCOPE_NVIDIA_SMI=PATH   the nvidia-smi to run (default: the one on PATH)\n"
    "  CUDA_VISIBLE_DEVICES        which GPUs are sampled, numbered as CUDA does\n"
    "\n"
    "docs: man stepscope (every option, file and variable), README.md, and in\n"
    "      docs/: cli.md, api.md, python.md, analysis.md, compare.md,\n"
    "      metrics.md, distributed.md, prometheus.md, tensorboard.md, nvtx.md,\n"
    "      report-format.md, trace-format.md\n";

/* Bare `stepscope`: what there is and where the rest is, not the whole
 * --help (which scrolls the usage line off a terminal). */
static const char short_usage[] =
    "usage: stepscope <command> [options]\n"
    "\n"
    "  run [-o DIR] COMMAND...  run COMMAND, report where its steps' time goes\n"
    "  report DIR               make a run directory's report files again\n"
    "  compare BASE NEW         did NEW make the steps faster or slower?\n"
    "  merge DIR... -o OUT      join the run directories of several machines\n"
    "  snapshot                 read every metric source once, as JSON\n"
    "  doctor                   which metric sources work here, and why not\n"
    "\n"
    "stepscope --help: every command and option; stepscope help COMMAND: one\n"
    "command's options; man stepscope: everything\n";

int sps_cli_error(const char *cmd, const char *what, const char *why, int code) {
    fprintf(stderr, "stepscope: %s: %s: %s\n", cmd, what, why);
    return code;
}

int sps_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stepscope: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(short_usage, stderr);
        return 2;
    }
    sps__clock_shift_init(); /* a test's node: the same clock as its records */
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))
        return sps_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "snapshot"))
        return sps_cmd_snapshot(argc - 1, argv + 1);
    if (!strcmp(cmd, "doctor"))
        return sps_cmd_doctor(argc - 1, argv + 1);
    if (!strcmp(cmd, "report"))
        return sps_cmd_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare"))
        return sps_cmd_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "merge"))
        return sps_cmd_merge(argc - 1, argv + 1);
    if (!strcmp(cmd, "help") && argc > 2) { /* stepscope help run: run --help */
        const char *of = argv[2];
        if (!strcmp(of, "help") || !strcmp(of, "-h") || !strcmp(of, "--help")) {
            /* help is a command too: its own help is this text */
            fputs(usage, stdout);
            return 0;
        }
        static const char *const commands[] = {"run", "snapshot", "doctor", "report", "compare", "merge"};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(of, commands[i])) {
                char *help_argv[] = {argv[0], argv[2], "--help", NULL};
                return main(3, help_argv);
            }
        fprintf(stderr, "stepscope: help: no command '%s' (see stepscope --help)\n", of);
        return 2;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
        printf("stepscope %s\n", SPS_VERSION_STRING);
        return 0;
    }
    fprintf(stderr, "stepscope: unknown command '%s' (see stepscope --help)\n", cmd);
    return 2;
}
