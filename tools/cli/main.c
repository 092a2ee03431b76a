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
    "  report DIR [--format html|csv|trace|json|summary|tensorboard] [-o OUT]\n"
    "            make a run directory's report.html, steps.csv, timeline.csv and\n"
    "            trace.json again (or one of them, the summary, or TensorBoard\n"
    "            event files)\n"
    "  compare BASE NEW | BASE... --vs NEW... [--fail-on slower|PCT] [--format F]\n"
    "            did NEW make the steps faster or slower? each run's median step,\n"
    "            a t interval from the spread between runs (the run is the unit)\n"
    "            and a verdict (slower, faster, same, inconclusive), for the step\n"
    "            and each zone's self time\n"
    "  merge DIR... -o OUT [--max-clock-error MS] [--force]\n"
    "            join run directories recorded on several machines into one run\n"
    "            (every rank, its host, one timeline on rank 0's host's clock),\n"
    "            with the usual files for it; refuses when a measured clock\n"
    "            offset's error exceeds MS (default 1)\n"
    "  doctor [--json]\n"
    "            list every metric source: works or not, why not, cost of a read\n"
    "  help      this text;  stepscope help COMMAND (or COMMAND --help) for its options\n"
    "\n"
    "options:\n"
    "  -h, --help     this text\n"
    "  -V, --version  the version\n"
    "\n"
    "exit status:\n"
    "  run passes the workload's status through: its exit code, or 128+N when\n"
    "  signal N killed it; 126 (cannot execute) and 127 (not found) as a shell\n"
    "  does.  2: a usage error (bad option, missing command).  1: stepscope\n"
    "  itself failed (a file it could not write, a record it could not read).\n"
    "  snapshot: 0; 1 when no source gave a reading or --pid names no process.\n"
    "  doctor: 0 when the proc source works, else 1.\n"
    "  compare: 0; 1 with --fail-on when NEW regressed; 2 on a usage or input error.\n"
    "  merge: 0; 1 for bad input (not a run directory, damaged records, a rank of\n"
    "  one host twice, a clock error over the tolerance); 2 for a usage error.\n"
    "\n"
    "environment (read by the library in the workload):\n"
    "  STEPSCOPE_DISABLE=1         record nothing\n"
    "  STEPSCOPE_OUT=DIR           without `stepscope run`: write DIR/report.json at exit\n"
    "  STEPSCOPE_CLOCK=tsc|monotonic  force the timestamp source\n"
    "  STEPSCOPE_RING_EVENTS=N     zone events kept per thread (default 65536)\n"
    "  STEPSCOPE_RING_POLICY=keep-latest|keep-first\n"
    "  STEPSCOPE_RECORD_MB=N       size of each process's record file (default 256, sparse)\n"
    "  STEPSCOPE_HOSTNAME=NAME     the host name records carry (default: gethostname)\n"
    "  STEPSCOPE_CLOCK_SYNC=0      do not measure clock offsets to rank 0 (torch.distributed)\n"
    "  STEPSCOPE_CLOCK_SYNC_TIMEOUT_S=S  bound on each offset exchange (default 5)\n"
    "  STEPSCOPE_TEST_CLOCK_SHIFT_NS=N  tests only: add N ns to every clock stepscope reads\n"
    "\n"
    "environment (read by the sampler: run, snapshot, doctor, sps_capture):\n"
    "  STEPSCOPE_ROOT=DIR          read /proc and /sys under DIR (fixture trees)\n"
    "  STEPSCOPE_NVML_LIBRARY=PATH the NVML library to load (default libnvidia-ml.so.1)\n"
    "  STEPSCOPE_NVIDIA_SMI=PATH   the nvidia-smi to run (default: nvidia-smi on PATH)\n"
    "  CUDA_VISIBLE_DEVICES        which GPUs are sampled, numbered as CUDA does\n"
    "\n"
    "docs: README.md, docs/cli.md, docs/api.md, docs/python.md, docs/analysis.md,\n"
    "      docs/compare.md, docs/metrics.md, docs/report-format.md, docs/trace-format.md,\n"
    "      docs/csv-format.md, docs/html-report.md, docs/record-format.md,\n"
    "      docs/tensorboard.md\n";

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
        fputs(usage, stderr);
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
        static const char *const commands[] = {"run", "snapshot", "doctor", "report", "compare", "merge"};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i])) {
                char *help_argv[] = {argv[0], argv[2], "--help", NULL};
                return main(3, help_argv);
            }
        fprintf(stderr, "stepscope: help: no command '%s' (see stepscope --help)\n", argv[2]);
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
