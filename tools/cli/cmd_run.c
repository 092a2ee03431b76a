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
 * stepscope, so the shell's job control works as usual.
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

#include "cli.h"
#include "live_view.h"
#include "overhead_guard.h"
#include "record_cost.h"
#include "clock.h"
#include "render/render.h"
#include "model/run.h"
#include "analysis/analysis.h"
#include "render/analysis_views.h"
#include "render/export_dir.h"
#include "render/exporters.h"
#include "platform/platform.h"
#include "capture.h"
#include "sampler/sampler.h"

static const char run_usage[] =
    "usage: stepscope run [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND (no shell), record every process of it that uses libstepscope\n"
    "or the stepscope Python module, and when it ends write DIR/report.json,\n"
    "DIR/report.html, DIR/steps.csv, DIR/timeline.csv and DIR/trace.json.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR        report directory (default: stepscope-out); its\n"
    "                          records/ from an earlier run are replaced\n"
    "  -q, --quiet             no live status and no summary\n"
    "      --no-live           no live status while COMMAND runs (it is shown\n"
    "                          only when stderr is a terminal)\n"
    "      --ring-events N     zone events kept per thread (default 65536)\n"
    "      --ring-policy P     keep-latest (default) or keep-first, when a\n"
    "                          thread records more events than its ring holds\n"
    "      --interval MS       read the workload's CPU time and memory every MS\n"
    "                          milliseconds (default 100)\n"
    "      --machine-interval MS\n"
    "                          read the GPUs, system CPU, memory and network,\n"
    "                          temperatures, energy, and the workload's threads\n"
    "                          and disk I/O every MS milliseconds (default 500)\n"
    "      --no-sample         do not sample the machine at all\n"
    "      --trace-max-mb N    size budget of trace.json (default 100)\n"
    "      --carbon-intensity G\n"
    "                          grid carbon intensity in g CO2e per kWh for the\n"
    "                          energy analysis (default 480, the world average)\n"
    "      --pue X             data-centre power usage effectiveness, 1 to 10\n"
    "                          (default 1.0: the machine's own draw)\n"
    "      --peak-flops N      dense peak FLOP/s per GPU for MFU, e.g. 989e12\n"
    "                          (default: from the GPU's name when known)\n"
    "      --max-overhead PCT  a budget for what recording may cost the\n"
    "                          workload, in percent of its CPU time (e.g. 1%%):\n"
    "                          over it, record only steps and their phases,\n"
    "                          then only steps; the report says when\n"
    "  -h, --help              this help\n"
    "\n"
    "COMMAND runs in a process group of its own and gets the terminal; every\n"
    "signal stepscope receives is forwarded to it once, and Ctrl-Z stops both.\n"
    "\n"
    "exit status: COMMAND's own; 128+N when signal N killed it; 126 when it\n"
    "cannot be executed, 127 when it is not found; 2 for a usage error; 1 when\n"
    "COMMAND succeeded but the report could not be written.\n";

/* The workload's process group (its pid); 0 once it has been reaped, so a
 * late signal never reaches a recycled pid. */
static volatile sig_atomic_t child_pgid;

static volatile sig_atomic_t continued;

static void note_continued(int sig) {
    (void)sig;
    continued = 1;
}

static void forward_signal(int sig) {
    if (child_pgid > 0)
        kill(-(pid_t)child_pgid, sig);
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

static int mkdir_p(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* Remove the records of an earlier run in the same directory, so the
 * report joins only this run's processes.  Only *.sps files are touched. */
static int clear_old_records(const char *records) {
    DIR *d = opendir(records);
    if (!d)
        return -1;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (!sps__is_record_name(e->d_name))
            continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", records, e->d_name);
        if (unlink(path) != 0)
            rc = -1;
    }
    closedir(d);
    return rc;
}

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

int sps_cmd_run(int argc, char **argv) {
    const char *out_dir = "stepscope-out";
    int quiet = 0, live = 1;
    const char *ring_events = NULL, *ring_policy = NULL;
    unsigned long interval_ms = 0, machine_ms = 0;
    unsigned long trace_mb = SPS_TRACE_DEFAULT_MAX_BYTES >> 20;
    int sample = 1;
    double max_overhead = 0; /* a fraction; 0: no budget */
    struct sps_analysis_config analysis;
    sps__analysis_config_default(&analysis);
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        const char *needs_value = NULL;
        if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--ring-events") || !strcmp(a, "--ring-policy") ||
            !strcmp(a, "--interval") || !strcmp(a, "--machine-interval") || !strcmp(a, "--trace-max-mb") ||
            !strcmp(a, "--carbon-intensity") || !strcmp(a, "--pue") || !strcmp(a, "--peak-flops") ||
            !strcmp(a, "--max-overhead"))
            needs_value = a;
        if (needs_value && i + 1 >= argc)
            return sps_cli_usage_error("run", "option '%s' needs a value", a);
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            out_dir = argv[++i];
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--ring-events")) {
            unsigned long n;
            ring_events = argv[++i];
            if (parse_uint(ring_events, &n) || n < 16 || n > (1ul << 24))
                return sps_cli_usage_error("run", "--ring-events: '%s' is not a number from 16 to 16777216", ring_events);
        } else if (!strcmp(a, "--ring-policy")) {
            ring_policy = argv[++i];
            if (strcmp(ring_policy, "keep-latest") && strcmp(ring_policy, "keep-first"))
                return sps_cli_usage_error("run", "--ring-policy: '%s' is not keep-latest or keep-first", ring_policy);
        } else if (!strcmp(a, "--interval") || !strcmp(a, "--machine-interval")) {
            unsigned long *ms = a[2] == 'i' ? &interval_ms : &machine_ms;
            if (parse_uint(argv[++i], ms) || *ms < 10 || *ms > 3600000)
                return sps_cli_usage_error("run", "%s: '%s' is not a number of milliseconds from 10 to 3600000", a,
                                           argv[i]);
        } else if (!strcmp(a, "--trace-max-mb")) {
            if (parse_uint(argv[++i], &trace_mb) || trace_mb < 1 || trace_mb > (1ul << 20))
                return sps_cli_usage_error("run", "--trace-max-mb: '%s' is not a number from 1 to 1048576", argv[i]);
        } else if (!strcmp(a, "--carbon-intensity")) {
            if (parse_double_in(argv[++i], 0, 5000, &analysis.carbon_g_per_kwh))
                return sps_cli_usage_error("run", "--carbon-intensity: '%s' is not a number of g CO2e/kWh from 0 to 5000",
                                           argv[i]);
        } else if (!strcmp(a, "--pue")) {
            if (parse_double_in(argv[++i], 1, 10, &analysis.pue))
                return sps_cli_usage_error("run", "--pue: '%s' is not a number from 1 to 10", argv[i]);
        } else if (!strcmp(a, "--peak-flops")) {
            if (parse_double_in(argv[++i], 1, 1e21, &analysis.peak_flops))
                return sps_cli_usage_error("run", "--peak-flops: '%s' is not a number of FLOP/s from 1 to 1e21",
                                           argv[i]);
        } else if (!strcmp(a, "--max-overhead")) {
            if (parse_percent(argv[++i], &max_overhead))
                return sps_cli_usage_error("run", "--max-overhead: '%s' is not a percentage above 0 and at most 100",
                                           argv[i]);
        } else if (!strcmp(a, "--no-live")) {
            live = 0;
        } else if (!strcmp(a, "--no-sample")) {
            sample = 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(run_usage, stdout);
            return 0;
        } else {
            return sps_cli_usage_error("run", "unknown option '%s'", a);
        }
    }
    if (i >= argc)
        return sps_cli_usage_error("run", "no command given (usage: stepscope run [-o DIR] -- COMMAND [ARGS...])");
    if (max_overhead > 0 && !sample)
        return sps_cli_usage_error("run", "--max-overhead needs the sampler (it reads the workload's CPU time): drop "
                                          "--no-sample");
    if (!*out_dir)
        return sps_cli_usage_error("run", "-o: the report directory name is empty");
    char **cmd = argv + i;
    int cmd_argc = argc - i;

    char records[PATH_MAX], abs_dir[PATH_MAX];
    if (mkdir_p(out_dir) != 0)
        return sps_cli_error("run", out_dir, strerror(errno), 1);
    if (!realpath(out_dir, abs_dir))
        return sps_cli_error("run", out_dir, strerror(errno), 1);
    if (snprintf(records, sizeof records, "%s/records", abs_dir) >= (int)sizeof records)
        return sps_cli_error("run", out_dir, "path too long", 1);
    if (mkdir(records, 0777) != 0 && errno != EEXIST)
        return sps_cli_error("run", records, strerror(errno), 1);
    if (clear_old_records(records) != 0)
        return sps_cli_error("run", records, "cannot remove the records of an earlier run", 1);
    /* an earlier run's report must not pass for this run's if this one
     * cannot write its own */
    static const char *const report_files[] = {"report.json", "report.html", "steps.csv", "timeline.csv",
                                               "trace.json"};
    for (size_t k = 0; k < sizeof report_files / sizeof report_files[0]; k++) {
        char old_report[PATH_MAX + 32];
        snprintf(old_report, sizeof old_report, "%s/%s", abs_dir, report_files[k]);
        if (unlink(old_report) != 0 && errno != ENOENT)
            return sps_cli_error("run", old_report, strerror(errno), 1);
    }
    setenv("STEPSCOPE_RUN_DIR", abs_dir, 1);
    unsetenv("STEPSCOPE_OUT"); /* the report is ours to write */
    if (ring_events)
        setenv("STEPSCOPE_RING_EVENTS", ring_events, 1);
    if (ring_policy)
        setenv("STEPSCOPE_RING_POLICY", ring_policy, 1);

    /* The sampler opens its sources and creates DIR/capture.bin before the
     * workload starts, so the workload's first sps_capture() finds it;
     * its thread starts once the workload's pid is known. */
    struct sps__sampler *sampler = NULL;
    char capture_path[PATH_MAX + 32];
    snprintf(capture_path, sizeof capture_path, "%s/%s", abs_dir, SPS_PUBLISHED_FILE);
    unlink(capture_path); /* an earlier run's must not pass for this one's */
    if (sample) {
        struct sps__sampler_config scfg = {0};
        sps__sampler_config_from_env(&scfg);
        scfg.interval_ms = (int)interval_ms;
        scfg.machine_interval_ms = (int)machine_ms;
        scfg.publish_path = capture_path;
        char serr[512];
        sampler = sps__sampler_open(&scfg, serr, sizeof serr);
        if (!sampler)
            sps_cli_error("run", "sampler", serr, 0); /* the run goes on without machine metrics */
        else if (serr[0])
            sps_cli_error("run", "sampler", serr, 0);
    }

    /* The guard prices what the workload records as it goes, so it needs
     * the costs before the workload starts (measured while this process
     * has no other thread, as the measurement forks). */
    struct sps_run_info info = {0};
    info.record_cost_absent_reason = "the measuring process could not run";
    if (max_overhead > 0) {
        info.have_record_cost =
            sps_measure_record_cost(&info.zone_cost_ns, &info.value_cost_ns, &info.thinned_zone_cost_ns,
                                    &info.warm_end_ns) == 0;
        if (!sampler || !info.have_record_cost) {
            sps_cli_error("run", "--max-overhead",
                          !sampler ? "no sampler: the run goes on without a budget"
                                   : "the cost of a zone could not be measured: the run goes on without a budget",
                          0);
            max_overhead = 0;
        }
    }

    sps__platform_become_subreaper();
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) != 0)
        return sps_cli_error("run", "pipe", strerror(errno), 1);

    /* Block the forwarded signals until the handlers know the child. */
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaddset(&block, forwarded[k]);
    sigprocmask(SIG_BLOCK, &block, &old);

    /* The controlling terminal, whatever stdin is (it may be /dev/null
     * while the keyboard still sends Ctrl-Z), and whether we hold it. */
    signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap the workload for us */
    int tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    int foreground = tty >= 0 && tcgetpgrp(tty) == getpgrp();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t t0 = sps__mono_ns();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        sps__sampler_close(sampler);
        return sps_cli_error("run", "fork", strerror(errno), 1);
    }
    if (pid == 0) {
        setpgid(0, 0);
        if (foreground) /* before exec, so the workload can read the terminal at once */
            give_terminal(tty, getpid());
        if (tty >= 0)
            close(tty);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(errpipe[0]);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(errpipe[1], &e, sizeof e);
        (void)w;
        _exit(e == ENOENT ? 127 : 126);
    }
    setpgid(pid, pid); /* also here: whichever runs first */
    if (foreground)
        give_terminal(tty, pid);
    child_pgid = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaction(forwarded[k], &sa, NULL);
    /* SIGCONT (the shell's fg or bg) interrupts the wait, so a job started
     * in the background can hand the terminal over once it has it */
    struct sigaction cont;
    memset(&cont, 0, sizeof cont);
    cont.sa_handler = note_continued;
    sigemptyset(&cont.sa_mask);
    sigaction(SIGCONT, &cont, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);

    close(errpipe[1]);
    int exec_errno = 0;
    ssize_t got;
    do
        got = read(errpipe[0], &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    close(errpipe[0]);

    /* Sample from the exec on: before it, the child is a copy of stepscope
     * and its memory is not the workload's. */
    if (sampler && got == 0) {
        sps__sampler_set_tree(sampler, pid);
        if (sps__sampler_start(sampler, 0) != 0)
            sps_cli_error("run", "sampler", strerror(errno), 0);
    }
    struct sps_overhead_guard *guard = NULL;
    if (got == 0 && max_overhead > 0) {
        int sampling = sps__sampler_running(sampler);
        if (sampling)
            guard = sps_overhead_guard_start(records, sps__sampler_published(sampler), max_overhead,
                                             info.zone_cost_ns, info.value_cost_ns, info.thinned_zone_cost_ns, t0);
        if (!guard)
            sps_cli_error("run", "--max-overhead",
                          sampling ? "the guard could not start: the run goes on without a budget"
                                   : "the sampler is not running: the run goes on without a budget",
                          0);
    }
    struct sps_live_view *view = NULL;
    if (got == 0 && live && !quiet)
        view = sps_live_view_start(STDERR_FILENO, records, sampler ? sps__sampler_published(sampler) : NULL, pid, t0);

    int status = 0, reaped = 0;
    for (;;) {
        if (waitpid(pid, &status, WUNTRACED) < 0) {
            if (errno != EINTR)
                break;
            if (continued) { /* fg: we may hold the terminal now */
                continued = 0;
                if (tty >= 0 && tcgetpgrp(tty) == getpgrp())
                    give_terminal(tty, pid);
            }
            continue;
        }
        if (!WIFSTOPPED(status)) {
            reaped = 1;
            break;
        }
        /* A terminal stop (Ctrl-Z, or touching the terminal from the
         * background): take the terminal back if the workload holds it and
         * stop too, so the shell sees the job stopped; when continued,
         * hand the terminal over if we are in the foreground and continue
         * the workload.  Other stops (SIGSTOP from a debugger or a
         * scheduler) are someone else's to undo: keep waiting. */
        int sig = WSTOPSIG(status);
        if (tty < 0 || (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU))
            continue;
        if (tcgetpgrp(tty) == pid)
            give_terminal(tty, getpgrp());
        sps_live_view_pause(view); /* the shell gets the whole screen */
        continued = 0;
        raise(SIGSTOP);
        if (tcgetpgrp(tty) == getpgrp())
            give_terminal(tty, pid);
        sps_live_view_resume(view);
        kill(-pid, SIGCONT);
    }
    child_pgid = 0;
    sps_overhead_guard_stop(guard, &info.guard);
    /* the tree is gone: a later tick would only record its absence */
    sps__sampler_stop(sampler);
    /* from here on, signals mean what they usually do: stop stepscope */
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        signal(forwarded[k], SIG_DFL);
    signal(SIGCONT, SIG_DFL);
    if (tty >= 0) {
        if (tcgetpgrp(tty) == pid) /* only if the workload still held it */
            give_terminal(tty, getpgrp());
        close(tty);
    }
    /* before anything else is printed: the terminal gets its height back */
    struct sps_live_view_cost view_cost = {0};
    int had_view = view != NULL;
    sps_live_view_stop(view, &view_cost);
    if (!reaped) {
        sps_cli_error("run", "wait", strerror(errno), 0);
        sps__sampler_close(sampler);
        return 1;
    }
    uint64_t t1 = sps__mono_ns();
    /* orphans the workload left behind that have already exited */
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    if (got == (ssize_t)sizeof exec_errno) {
        sps__sampler_close(sampler);
        sps_cli_error("run", cmd[0], exec_errno == ENOENT ? "command not found" : strerror(exec_errno), 0);
        return exec_errno == ENOENT ? 127 : 126;
    }

    info.argc = cmd_argc;
    info.argv = cmd;
    info.start_realtime_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
    info.start_mono_ns = t0;
    info.sampler = sampler ? sps__sampler_result(sampler) : NULL;
    info.analysis = &analysis;
    info.sampler_absent_reason = sample ? "the sampler could not start" : "sampling was turned off (--no-sample)";
    info.have_exit = 1;
    info.cpu_count = sps__platform_cpu_count();
    info.have_live_view = had_view;
    info.live_view_refreshes = view_cost.refreshes;
    info.live_view_cpu_seconds = view_cost.cpu_seconds;
    if (WIFSIGNALED(status)) {
        info.exit_signal = WTERMSIG(status);
        info.core_dumped = WCOREDUMP(status) != 0;
    } else {
        info.exit_code = WEXITSTATUS(status);
    }
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
        info.have_times = 1;
        info.user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
        info.sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
        info.have_rss = 1;
        info.peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
    }
    info.wall_s = (double)(t1 - t0) * 1e-9;
    /* After the workload's rusage is read (the measuring child is a child
     * too), with every thread of ours stopped, so it forks cleanly; a
     * budgeted run measured before it started. */
    if (!info.have_record_cost)
        info.have_record_cost =
            sps_measure_record_cost(&info.zone_cost_ns, &info.value_cost_ns, &info.thinned_zone_cost_ns,
                                    &info.warm_end_ns) == 0;
    int exit_code = info.exit_signal ? 128 + info.exit_signal : info.exit_code;

    struct sps_run run = {0};
    char err[1024];
    int rc = sps__run_load_dir(&run, records, err, sizeof err);
    if (rc == 0)
        rc = sps__run_build(&run);
    /* one time origin for zones, steps and series: when the run began */
    if (rc == 0 && (run.nprocs == 0 || run.start_ns > t0))
        run.start_ns = t0;
    struct sps_report rep;
    int built = 0;
    if (rc == 0) {
        rc = sps__report_build(&rep, &run, &info);
        built = 1;
        if (rc == SPS_ENOMEM)
            snprintf(err, sizeof err, "out of memory while analysing the run");
    } else if (rc == SPS_ENOMEM) {
        snprintf(err, sizeof err, "out of memory while reading the records");
    }
    if (rc == 0) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/report.json", abs_dir);
        rc = sps__report_json_write(&rep, path, err, sizeof err);
    }
    sps__run_free(&run);
    /* every other file renders from the same model: nothing is read back */
    if (rc == 0) {
        rc = sps__export_all(&rep, abs_dir, (uint64_t)trace_mb << 20, err, sizeof err);
        if (!quiet && rc == 0) {
            sps__summary_print(stderr, &rep, 0);
            sps__analysis_print(stderr, &rep.analysis);
        }
    }
    if (built)
        sps__report_free(&rep);
    if (!quiet && rc == 0)
        fprintf(stderr, "report: %s/report.html (also report.json, steps.csv, timeline.csv, trace.json)\n", out_dir);
    sps__sampler_close(sampler);
    if (rc != 0) {
        sps_cli_error("run", "report", err, 0);
        return exit_code ? exit_code : 1;
    }
    return exit_code;
}
