/*
 * test_metrics.c - the machine half end to end: `stepscope run` samples
 * the workload's tree and publishes captures to it; report.json carries
 * metrics, series and sources; the figures agree with the kernel's own;
 * `stepscope snapshot` and `stepscope doctor` say what works and why not.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sysfs_tree.h"
#include "stepscope.h"
#include "support.h"

#define STEPSCOPE SPS_BIN_DIR "/stepscope"
#define WORKLOAD SPS_BIN_DIR "/test_workload"

/* "key a b c" lines written by the workload's --capture. */
static int capture_field(const char *path, const char *key, int col, double *out) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    int found = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) || line[kl] != ' ')
            continue;
        char *p = line + kl;
        for (int c = 0; c <= col; c++) {
            char *end;
            double v = strtod(p, &end);
            if (end == p)
                break;
            if (c == col) {
                *out = v;
                found = 0;
            }
            p = end;
        }
        break;
    }
    fclose(f);
    return found;
}

/* Under `stepscope run` a workload's capture copies what the CLI's
 * sampler published: no sampler of its own, the tree rooted at itself. */
static void test_capture_reads_what_run_published(void) {
    const char *dir = tmpdir_new("pub");
    char out[1024], cap[1100], err[2048];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(cap, sizeof cap, "%s/capture.txt", dir);
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "-o", out, "--", WORKLOAD, "--steps", "2",
                    "--alloc-mb", "8", "--settle-ms", "300", "--capture", cap, "--sleep-ms", "60", NULL};
    int st = run_capture(argv, err, sizeof err);
    CHECK_MSG(exit_code_of(st) == 0, "run: %s", err);
    double published = -1, tree = -1, pid = -2, rc = -1, avail = -1, rss = 0, age = -1, proc = -1;
    capture_field(cap, "rc", 0, &rc);
    capture_field(cap, "published", 0, &published);
    capture_field(cap, "tree_pid", 0, &tree);
    capture_field(cap, "pid", 0, &pid);
    capture_field(cap, "workload_rss_bytes", 0, &avail);
    capture_field(cap, "workload_rss_bytes", 1, &rss);
    capture_field(cap, "workload_rss_bytes", 2, &age);
    capture_field(cap, "proc_status", 0, &proc);
    CHECK_EQ_I(rc, 0);
    CHECK_EQ_I(published, 1);
    CHECK_EQ_I(tree, pid); /* the workload is the tree's root */
    CHECK_EQ_I(avail, 1);
    CHECK_MSG(rss >= 8.0 * 1048576, "the tree's RSS %.0f covers the 8 MiB the workload touched", rss);
    CHECK(age >= 0);
    CHECK_EQ_I(proc, 1);
}

/* Peak RSS and CPU time agree with the kernel's own accounting (rusage of
 * the reaped workload) within 2%.  CPU time comes from the process CPU
 * clock (nanoseconds); where /proc/PID/stat must serve, it counts 10 ms
 * ticks, truncated per field: two seconds of CPU keep that under 1%. */
static void test_accuracy_against_rusage(void) {
    const char *dir = tmpdir_new("acc");
    char err[2048];
    /* Under ASan the leak checker scans the heap at exit from a tracer
     * that shares the workload's memory (CLONE_VM): the tree would hold
     * that memory twice and the tracer's CPU time for a moment.  This
     * test measures the workload, not the sanitizer. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "-o", (char *)dir, "--", WORKLOAD, "--steps", "0",
                    "--alloc-mb", "200", "--burn-ms", "2000", "--sleep-ms", "300", NULL};
    int st = run_capture(argv, err, sizeof err);
    unsetenv("ASAN_OPTIONS");
    CHECK_MSG(exit_code_of(st) == 0, "run: %s", err);
    json_t *r = report_load(dir);
    CHECK(r != NULL);
    if (!r)
        return;
    double kernel_rss = json_num(r, "memory.peak_rss_bytes");
    double sampled_rss = json_num(r, "metrics.workload_rss_peak_bytes.max");
    double kernel_cpu = json_num(r, "timing.user_s") + json_num(r, "timing.sys_s");
    double sampled_cpu = json_num(r, "metrics.workload_cpu_seconds.last");
    CHECK_MSG(kernel_rss > 200.0 * 1048576, "kernel peak RSS %.0f", kernel_rss);
    CHECK_MSG(fabs(sampled_rss - kernel_rss) <= 0.02 * kernel_rss, "peak RSS: sampled %.0f, kernel %.0f", sampled_rss,
              kernel_rss);
    CHECK_MSG(kernel_cpu >= 1.0, "kernel CPU %.3f s", kernel_cpu);
    CHECK_MSG(fabs(sampled_cpu - kernel_cpu) <= 0.02 * kernel_cpu, "CPU time: sampled %.4f s, kernel %.4f s",
              sampled_cpu, kernel_cpu);
    double mean_rss = json_num(r, "metrics.workload_rss_bytes.mean");
    CHECK(mean_rss > 100.0 * 1048576 && mean_rss <= sampled_rss);
    json_decref(r);
}

/* Every catalogue metric is in the report: statistics, or nulls and why. */
static void test_report_metrics_shape(void) {
    const char *dir = tmpdir_new("shape");
    char err[2048];
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "-o", (char *)dir, "--", WORKLOAD, "--steps", "3",
                    "--sleep-ms", "300", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    json_t *r = report_load(dir);
    CHECK(r != NULL);
    if (!r)
        return;
    json_t *metrics = json_object_get(r, "metrics");
    CHECK_EQ_U(json_object_size(metrics), SPS_HOST_METRIC_COUNT);
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        const struct sps_metric_info *m = sps_host_metric_info(i);
        json_t *e = json_object_get(metrics, m->name);
        CHECK_MSG(e != NULL, "metrics.%s", m->name);
        if (!e)
            continue;
        CHECK(strcmp(json_string_value(json_object_get(e, "unit")), m->unit) == 0);
        json_int_t n = json_integer_value(json_object_get(e, "samples"));
        if (n > 0) {
            CHECK(json_is_number(json_object_get(e, "mean")) && json_is_number(json_object_get(e, "max")) &&
                  json_is_number(json_object_get(e, "last")));
            CHECK(json_object_get(e, "unavailable_reason") == NULL);
        } else {
            CHECK(json_is_null(json_object_get(e, "mean")) && json_is_null(json_object_get(e, "last")));
            const char *why = json_string_value(json_object_get(e, "unavailable_reason"));
            CHECK_MSG(why && *why, "%s has no reading and says why", m->name);
        }
    }
    /* this machine: the tree's memory and CPU are always readable */
    CHECK(json_num(r, "metrics.workload_rss_bytes.samples") >= 3);
    CHECK(json_num(r, "metrics.system_memory_total_bytes.last") > 0);
    CHECK(json_num(r, "metrics.workload_processes.max") >= 1);
    json_t *sources = json_object_get(r, "sources");
    CHECK_EQ_U(json_array_size(sources), SPS_SOURCE_COUNT);
    CHECK(json_is_true(json_object_get(json_array_get(sources, 0), "available")));
    if (json_array_size(json_object_get(r, "gpus")) == 0)
        CHECK(json_string_value(json_object_get(r, "gpus_unavailable_reason")) != NULL);
    json_t *series = json_object_get(json_object_get(r, "series"), "metrics");
    CHECK(json_array_size(series) > 0);
    size_t i;
    json_t *s;
    json_array_foreach(series, i, s) {
        size_t n = json_array_size(json_object_get(s, "t_s"));
        CHECK(n > 0);
        CHECK_EQ_U(json_array_size(json_object_get(s, "mean")), n);
        CHECK_EQ_U(json_array_size(json_object_get(s, "max")), n);
        double t0 = json_number_value(json_array_get(json_object_get(s, "t_s"), 0));
        CHECK_MSG(t0 >= -0.001 && t0 < 5, "series start %.3f s after the run began", t0);
        /* each series says how often it was read: the tree's CPU and memory
         * every --interval, the rest every machine interval */
        const char *name = json_string_value(json_object_get(s, "metric"));
        int every_interval = 0;
        for (int k = 0; k < SPS_HOST_METRIC_COUNT; k++)
            if (name && !strcmp(name, sps_host_metric_info(k)->name))
                every_interval = sps_host_metric_info(k)->cadence == SPS_EVERY_INTERVAL;
        CHECK_MSG(json_integer_value(json_object_get(s, "interval_ms")) == (every_interval ? 20 : 500),
                  "%s: interval_ms %lld", name ? name : "?", (long long)json_integer_value(json_object_get(s, "interval_ms")));
    }
    CHECK_EQ_I((int)json_integer_value(json_path(r, "series.interval_ms")), 20);
    CHECK_EQ_I((int)json_integer_value(json_path(r, "series.machine_interval_ms")), 500);
    CHECK(json_is_number(json_path(r, "overhead.sampler_cpu_seconds")));
    json_decref(r);
}

static void test_no_sample(void) {
    const char *dir = tmpdir_new("nosample");
    char err[2048];
    char *argv[] = {STEPSCOPE, "run", "-q", "--no-sample", "-o", (char *)dir, "--", WORKLOAD, "--steps", "1", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    json_t *r = report_load(dir);
    if (!r) {
        CHECK(r != NULL);
        return;
    }
    CHECK(json_is_null(json_path(r, "metrics.workload_rss_bytes.max")));
    CHECK_STR_HAS(json_string_value(json_path(r, "metrics.workload_rss_bytes.unavailable_reason")), "--no-sample");
    json_decref(r);
    char capfile[1024];
    snprintf(capfile, sizeof capfile, "%s/capture.bin", dir);
    CHECK(access(capfile, F_OK) != 0);
}

/* A capture.bin that cannot be made (a directory is in its place): one
 * line says so, the run goes on, and the report still has the metrics
 * (the sample is then published in memory only). */
static void test_run_without_publish_file(void) {
    const char *dir = tmpdir_new("nopub");
    char blocker[1024], err[4096];
    snprintf(blocker, sizeof blocker, "%s/capture.bin", dir);
    CHECK(mkdir(blocker, 0755) == 0);
    char *argv[] = {STEPSCOPE, "run", "-q", "--interval", "20", "-o", (char *)dir, "--", WORKLOAD, "--steps", "1",
                    "--sleep-ms", "300", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    CHECK_STR_HAS(err, "stepscope: run: sampler: ");
    CHECK_EQ_I(count_lines(err), 1);
    json_t *r = report_load(dir);
    if (!r) {
        CHECK(r != NULL);
        return;
    }
    CHECK(json_num(r, "metrics.workload_rss_bytes.samples") >= 2);
    CHECK(json_array_size(json_object_get(r, "zones")) > 0);
    json_decref(r);
}

static void test_run_interval_flags(void) {
    char err[1024];
    char *bad[] = {STEPSCOPE, "run", "--interval", "5", "--", WORKLOAD, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(bad, err, sizeof err)), 2);
    CHECK_STR_HAS(err, "--interval: '5'");
    CHECK_EQ_I(count_lines(err), 1);
    char *bad2[] = {STEPSCOPE, "run", "--machine-interval", "x", "--", WORKLOAD, NULL};
    CHECK_EQ_I(exit_code_of(run_capture(bad2, err, sizeof err)), 2);
    CHECK_STR_HAS(err, "--machine-interval");
}

static json_t *load_json_file(const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        fprintf(stderr, "%s:%d:%d: %s\n", path, e.line, e.column, e.text);
    return j;
}

static void test_snapshot(void) {
    const char *dir = tmpdir_new("snap");
    char out[1024], pid[32], err[2048];
    snprintf(out, sizeof out, "%s/snap.json", dir);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *argv[] = {STEPSCOPE, "snapshot", "--pid", pid, NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out, err, sizeof err)), 0);
    json_t *j = load_json_file(out);
    CHECK(j != NULL);
    if (j) {
        CHECK(strcmp(json_string_value(json_object_get(j, "schema")), "stepscope.snapshot/1") == 0);
        CHECK_EQ_I(json_integer_value(json_object_get(j, "tree_pid")), getpid());
        CHECK(json_num(j, "metrics.workload_rss_bytes.value") > 1e6);
        CHECK(json_num(j, "metrics.system_memory_available_bytes.value") > 0);
        CHECK(json_num(j, "metrics.workload_processes.value") >= 1);
        /* percentages need two reads; the default wait gives them */
        CHECK(json_is_number(json_path(j, "metrics.system_cpu_percent.value")));
        CHECK_EQ_U(json_array_size(json_object_get(j, "sources")), SPS_SOURCE_COUNT);
        json_decref(j);
    }
    /* Without --pid the tree metrics are null and say why; with one read
     * (--wait 0) percentages are null and say they need two.  A /proc whose
     * counters stand still makes that certain: on the real one a clock tick
     * can fall between the sampler's open and its read. */
    const char *still = tmpdir_new("still");
    tree_write(still, "proc/stat", "cpu  100 0 50 1000 10 0 0 0 0 0\n");
    tree_write(still, "proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 500 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
    tree_write(still, "proc/net/dev", "Inter-|   Receive\n face |bytes\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
    setenv("STEPSCOPE_ROOT", still, 1);
    char *nopid[] = {STEPSCOPE, "snapshot", "--wait", "0", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(nopid, out, err, sizeof err)), 0);
    unsetenv("STEPSCOPE_ROOT");
    j = load_json_file(out);
    if (j) {
        CHECK(json_is_null(json_path(j, "metrics.workload_rss_bytes.value")));
        CHECK_STR_HAS(json_string_value(json_path(j, "metrics.workload_rss_bytes.unavailable_reason")), "--pid");
        CHECK_STR_HAS(json_string_value(json_path(j, "metrics.system_cpu_percent.unavailable_reason")), "two reads");
        json_decref(j);
    }
    char *bad[] = {STEPSCOPE, "snapshot", "--pid", "0", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(bad, NULL, err, sizeof err)), 2);
    CHECK_EQ_I(count_lines(err), 1);
    char *gone[] = {STEPSCOPE, "snapshot", "--pid", "4194000", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(gone, NULL, err, sizeof err)), 1);
    CHECK_STR_HAS(err, "no such process");
}

static void test_doctor(void) {
    const char *dir = tmpdir_new("doc");
    char out[1024], err[2048];
    snprintf(out, sizeof out, "%s/doctor.json", dir);
    char *argv[] = {STEPSCOPE, "doctor", "--json", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out, err, sizeof err)), 0);
    json_t *j = load_json_file(out);
    CHECK(j != NULL);
    if (j) {
        json_t *sources = json_object_get(j, "sources");
        CHECK_EQ_U(json_array_size(sources), SPS_SOURCE_COUNT);
        size_t i;
        json_t *s;
        json_array_foreach(sources, i, s) {
            const char *name = json_string_value(json_object_get(s, "name"));
            if (json_is_true(json_object_get(s, "available")))
                CHECK_MSG(json_number_value(json_object_get(s, "read_s")) > 0, "%s has a read cost", name);
            else
                CHECK_MSG(json_string_value(json_object_get(s, "reason")) != NULL, "%s says why not", name);
        }
        CHECK(json_is_true(json_object_get(json_array_get(sources, 0), "available")));
        CHECK(json_number_value(json_object_get(j, "sampler_cpu_percent_of_one_core")) > 0);
        json_decref(j);
    }
    /* the text form names every source */
    snprintf(out, sizeof out, "%s/doctor.txt", dir);
    char *text[] = {STEPSCOPE, "doctor", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(text, out, err, sizeof err)), 0);
    char buf[8192];
    read_file(out, buf, sizeof buf);
    const char *names[] = {"proc", "thermal", "rapl", "nvml", "drm", "nvidia-smi", "sched"};
    for (int k = 0; k < 7; k++)
        CHECK_STR_HAS(buf, names[k]);
    /* a root without /proc: proc unavailable, exit 1, the reason names it */
    setenv("STEPSCOPE_ROOT", dir, 1);
    CHECK_EQ_I(exit_code_of(run_capture_to(text, out, err, sizeof err)), 1);
    unsetenv("STEPSCOPE_ROOT");
    read_file(out, buf, sizeof buf);
    CHECK_STR_HAS(buf, "/proc/stat");
    /* a kernel without PSI (or schedstat): the sched line says so */
    CHECK_STR_HAS(buf, "no CPU pressure: ");
    CHECK_STR_HAS(buf, "/proc/pressure/cpu: No such file or directory (a kernel without PSI)");
    char *bad[] = {STEPSCOPE, "doctor", "--bogus", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(bad, NULL, err, sizeof err)), 2);

    /* where `stepscope run` takes the Python startup hook from: the
     * directory STEPSCOPE_AUTO_DIR names when it holds one, else none */
    char hook_dir[1024], hook[1100], real[PATH_MAX];
    snprintf(hook_dir, sizeof hook_dir, "%s/hook", dir);
    CHECK_EQ_I(mkdir(hook_dir, 0700), 0);
    snprintf(hook, sizeof hook, "%s/sitecustomize.py", hook_dir);
    write_file(hook, "", 0);
    CHECK(realpath(hook_dir, real) != NULL);
    setenv("STEPSCOPE_AUTO_DIR", hook_dir, 1);
    snprintf(out, sizeof out, "%s/doctor.json", dir);
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out, err, sizeof err)), 0);
    j = load_json_file(out);
    CHECK(j && json_string_value(json_object_get(j, "auto_hook_dir")) &&
          !strcmp(json_string_value(json_object_get(j, "auto_hook_dir")), real));
    json_decref(j);
    setenv("STEPSCOPE_AUTO_DIR", dir, 1); /* no hook there */
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out, err, sizeof err)), 0);
    j = load_json_file(out);
    CHECK(j && json_is_null(json_object_get(j, "auto_hook_dir")));
    json_decref(j);
    snprintf(out, sizeof out, "%s/doctor.txt", dir);
    CHECK_EQ_I(exit_code_of(run_capture_to(text, out, err, sizeof err)), 0);
    read_file(out, buf, sizeof buf);
    CHECK_STR_HAS(buf, "auto        unavailable           -         -  no startup hook");
    unsetenv("STEPSCOPE_AUTO_DIR");
}

/* The line of doctor's text output that starts with word, or "". */
static void doctor_line(const char *text, const char *word, char *line, size_t len) {
    line[0] = '\0';
    size_t wl = strlen(word);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > wl && strncmp(p, word, wl) == 0 && p[wl] == ' ') {
            snprintf(line, len, "%.*s", (int)n, p);
            return;
        }
        p += n + (end != NULL);
    }
}

/* doctor's cuda line: whether GPU zones can time the GPU here, and why
 * not, with the fake libcuda, without any, and with a cuInit that fails. */
static void test_doctor_cuda(void) {
    const char *dir = tmpdir_new("doccuda");
    char out[1024], err[2048], buf[8192], line[512];
    snprintf(out, sizeof out, "%s/doctor.txt", dir);
    char *text[] = {STEPSCOPE, "doctor", NULL};
    char *json[] = {STEPSCOPE, "doctor", "--json", NULL};

    setenv("STEPSCOPE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    CHECK_EQ_I(exit_code_of(run_capture_to(text, out, err, sizeof err)), 0); /* proc decides the status */
    read_file(out, buf, sizeof buf);
    doctor_line(buf, "cuda", line, sizeof line);
    CHECK_STR_HAS(line, " unavailable ");
    CHECK_STR_HAS(line, "GPU zones are CPU zones only: cannot load /nonexistent/libcuda.so.1: ");
    CHECK_STR_HAS(line, "No such file or directory");
    CHECK_EQ_I(exit_code_of(run_capture_to(json, out, err, sizeof err)), 0);
    json_t *j = load_json_file(out);
    CHECK(j != NULL);
    CHECK(json_is_false(json_path(j, "cuda.available")));
    CHECK_STR_HAS(json_string_value(json_path(j, "cuda.reason")), "cannot load /nonexistent/libcuda.so.1");
    json_decref(j);

    setenv("STEPSCOPE_LIBCUDA", FAKE_CUDA_PATH, 1);
    CHECK_EQ_I(exit_code_of(run_capture_to(text, out, err, sizeof err)), 0);
    read_file(out, buf, sizeof buf);
    doctor_line(buf, "cuda", line, sizeof line);
    CHECK_STR_HAS(line, " ok ");
    CHECK_STR_HAS(line, "libcuda loads (driver 12.4): GPU zones time their work with CUDA events");
    CHECK(strstr(line, "unavailable") == NULL);
    CHECK_EQ_I(exit_code_of(run_capture_to(json, out, err, sizeof err)), 0);
    j = load_json_file(out);
    CHECK(j != NULL);
    CHECK(json_is_true(json_path(j, "cuda.available")));
    CHECK_NEAR(json_num(j, "cuda.driver_version"), 12040, 0);
    CHECK(json_is_null(json_path(j, "cuda.reason")));
    json_decref(j);

    setenv("FAKE_CUDA_INIT_FAIL", "1", 1); /* a driver without a device */
    CHECK_EQ_I(exit_code_of(run_capture_to(text, out, err, sizeof err)), 0);
    read_file(out, buf, sizeof buf);
    doctor_line(buf, "cuda", line, sizeof line);
    CHECK_STR_HAS(line, " unavailable ");
    CHECK_STR_HAS(line, "cuInit failed: no CUDA-capable device is detected");
    unsetenv("FAKE_CUDA_INIT_FAIL");
    unsetenv("STEPSCOPE_LIBCUDA");
}

/* A machine made of fixtures: a k10temp sensor, a RAPL package and an
 * amdgpu card under STEPSCOPE_ROOT, with the real /proc linked in. */
static const char *fixture_machine(void) {
    const char *root = tmpdir_new("machine");
    tree_symlink(root, "proc", "/proc");
    tree_write(root, "sys/class/hwmon/hwmon0/name", "k10temp\n");
    tree_write(root, "sys/class/hwmon/hwmon0/temp1_input", "55250\n");
    tree_write(root, "sys/class/hwmon/hwmon0/temp1_label", "Tctl\n");
    tree_write(root, "sys/class/powercap/intel-rapl:0/name", "package-0\n");
    tree_write(root, "sys/class/powercap/intel-rapl:0/energy_uj", "1000000\n");
    tree_write(root, "sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    tree_write(root, "sys/class/drm/card0/device/vendor", "0x1002\n");
    tree_write(root, "sys/class/drm/card0/device/device", "0x73bf\n");
    tree_write(root, "sys/class/drm/card0/device/gpu_busy_percent", "87\n");
    tree_write(root, "sys/class/drm/card0/device/mem_info_vram_used", "4294967296\n");
    tree_write(root, "sys/class/drm/card0/device/mem_info_vram_total", "17163091968\n");
    return root;
}

static void test_snapshot_of_fixture_machine(void) {
    const char *root = fixture_machine();
    char out[1024], err[2048];
    snprintf(out, sizeof out, "%s/snap.json", root);
    setenv("STEPSCOPE_ROOT", root, 1);
    setenv("STEPSCOPE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    char *argv[] = {STEPSCOPE, "snapshot", "--wait", "0", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out, err, sizeof err)), 0);
    unsetenv("STEPSCOPE_ROOT");
    unsetenv("STEPSCOPE_NVML_LIBRARY");
    json_t *j = load_json_file(out);
    CHECK(j != NULL);
    if (!j)
        return;
    CHECK_NEAR(json_num(j, "metrics.cpu_temperature_celsius.value"), 55.25, 1e-9);
    CHECK(strcmp(json_string_value(json_path(j, "metrics.cpu_temperature_celsius.source")), "thermal") == 0);
    json_t *sensor = json_array_get(json_object_get(j, "sensors"), 0);
    CHECK(sensor && strcmp(json_string_value(json_object_get(sensor, "label")), "k10temp Tctl") == 0);
    CHECK_NEAR(json_num(j, "metrics.cpu_package_energy_joules.value"), 0, 0); /* a total since the sampler opened */
    json_t *gpu = json_array_get(json_object_get(j, "gpus"), 0);
    CHECK(gpu != NULL);
    if (gpu) {
        CHECK(strcmp(json_string_value(json_object_get(gpu, "source")), "drm") == 0);
        CHECK_NEAR(json_num(gpu, "metrics.gpu_utilization_percent.value"), 87, 0);
        CHECK_NEAR(json_num(gpu, "metrics.gpu_memory_used_bytes.value"), 4294967296.0, 0);
        CHECK(json_is_null(json_path(gpu, "metrics.gpu_throttle_reasons.value")));
        CHECK(json_string_value(json_path(gpu, "metrics.gpu_throttle_reasons.unavailable_reason")) != NULL);
    }
    /* nvml was tried first and says why it could not serve */
    json_t *nvml = json_array_get(json_object_get(j, "sources"), SPS_SOURCE_NVML);
    CHECK(json_is_false(json_object_get(nvml, "available")));
    CHECK_STR_HAS(json_string_value(json_object_get(nvml, "reason")), "/nonexistent/libnvidia-ml.so.1");
    json_decref(j);
}

/* The same machine under `stepscope run`: the report and the summary
 * carry the fixture's sensor and GPU. */
static void test_run_on_fixture_machine(void) {
    const char *root = fixture_machine();
    char out[1024], err[8192];
    snprintf(out, sizeof out, "%s/out", root);
    setenv("STEPSCOPE_ROOT", root, 1);
    setenv("STEPSCOPE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    char *argv[] = {STEPSCOPE, "run", "--interval", "20", "--machine-interval", "20", "-o", out, "--", WORKLOAD,
                    "--steps", "1", "--sleep-ms", "300", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(argv, err, sizeof err)), 0);
    unsetenv("STEPSCOPE_ROOT");
    unsetenv("STEPSCOPE_NVML_LIBRARY");
    CHECK_STR_HAS(err, "CPU temperature 55 C mean / 55 C max");
    CHECK_STR_HAS(err, "util 87% mean / 87% max");
    json_t *r = report_load(out);
    if (!r) {
        CHECK(r != NULL);
        return;
    }
    CHECK_NEAR(json_num(r, "metrics.cpu_temperature_celsius.max"), 55.25, 1e-9);
    json_t *gpu = json_array_get(json_object_get(r, "gpus"), 0);
    CHECK(gpu && strcmp(json_string_value(json_object_get(gpu, "source")), "drm") == 0);
    CHECK_NEAR(json_num(gpu, "metrics.gpu_memory_used_bytes.max"), 4294967296.0, 0);
    CHECK(json_num(gpu, "metrics.gpu_memory_used_bytes.samples") >= 2);
    CHECK(json_num(r, "metrics.workload_rss_bytes.samples") >= 2); /* the real /proc, linked in */
    json_decref(r);
}

/* The NVML path end to end, through the fake library: two GPUs, and the
 * workload's own device memory found by pid. */
static void test_snapshot_with_fake_nvml(void) {
    const char *dir = tmpdir_new("nvml");
    char out[1024], err[2048], pid[32], procs[64];
    snprintf(out, sizeof out, "%s/snap.json", dir);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(procs, sizeof procs, "%d:1048576,1:999", (int)getpid());
    setenv("STEPSCOPE_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_PROCS", procs, 1);
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    char *argv[] = {STEPSCOPE, "snapshot", "--pid", pid, "--wait", "0", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out, err, sizeof err)), 0);
    unsetenv("CUDA_VISIBLE_DEVICES");
    json_t *j = load_json_file(out);
    if (j) {
        json_t *gpus = json_object_get(j, "gpus");
        CHECK_EQ_U(json_array_size(gpus), 1); /* only the visible one, numbered as CUDA does */
        json_t *g = json_array_get(gpus, 0);
        CHECK_EQ_I(json_integer_value(json_object_get(g, "index")), 0);
        CHECK(strcmp(json_string_value(json_object_get(g, "source")), "nvml") == 0);
        CHECK_NEAR(json_num(g, "metrics.gpu_memory_used_bytes.value"), 2.0 * 1073741824, 0); /* NVML GPU 1 */
        CHECK_NEAR(json_num(g, "metrics.gpu_temperature_celsius.value"), 41, 0);
        CHECK_NEAR(json_num(g, "metrics.gpu_workload_memory_bytes.value"), 1048576, 0); /* pid 1 is not ours */
        json_decref(j);
    }
    /* all GPUs, and the process under `stepscope run`'s summary */
    char run_out[1024], serr[8192];
    snprintf(run_out, sizeof run_out, "%s/out", dir);
    char *run[] = {STEPSCOPE, "run", "--machine-interval", "20", "-o", run_out, "--", WORKLOAD, "--steps", "1",
                   "--sleep-ms", "300", NULL};
    CHECK_EQ_I(exit_code_of(run_capture(run, serr, sizeof serr)), 0);
    CHECK_STR_HAS(serr, "GPU 0");
    CHECK_STR_HAS(serr, "GPU 1");
    json_t *r = report_load(run_out);
    if (r) {
        CHECK_EQ_U(json_array_size(json_object_get(r, "gpus")), 2);
        json_t *g1 = json_array_get(json_object_get(r, "gpus"), 1);
        CHECK_NEAR(json_num(g1, "metrics.gpu_power_watts.max"), 100.001, 1e-9);
        CHECK(json_num(g1, "metrics.gpu_power_watts.samples") >= 2);
        json_decref(r);
    }
    unsetenv("STEPSCOPE_NVML_LIBRARY");
    unsetenv("FAKE_NVML_GPUS");
    unsetenv("FAKE_NVML_PROCS");
}

/* No NVML, no drm card: the chain's last link, nvidia-smi, serves. */
static void test_snapshot_falls_back_to_nvidia_smi(void) {
    const char *root = tmpdir_new("smi");
    tree_symlink(root, "proc", "/proc");
    tree_mkdir(root, "sys/class/drm");
    char out[1024], err[2048];
    snprintf(out, sizeof out, "%s/snap.json", root);
    setenv("STEPSCOPE_ROOT", root, 1);
    setenv("STEPSCOPE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("STEPSCOPE_NVIDIA_SMI", FAKES_DIR "/nvidia-smi", 1);
    char *argv[] = {STEPSCOPE, "snapshot", "--wait", "0", NULL};
    CHECK_EQ_I(exit_code_of(run_capture_to(argv, out, err, sizeof err)), 0);
    unsetenv("STEPSCOPE_ROOT");
    unsetenv("STEPSCOPE_NVML_LIBRARY");
    unsetenv("STEPSCOPE_NVIDIA_SMI");
    json_t *j = load_json_file(out);
    if (!j) {
        CHECK(j != NULL);
        return;
    }
    json_t *g = json_array_get(json_object_get(j, "gpus"), 0);
    CHECK(g && strcmp(json_string_value(json_object_get(g, "source")), "nvidia-smi") == 0);
    CHECK(json_is_number(json_path(g, "metrics.gpu_memory_used_bytes.value")));
    json_t *smi = json_array_get(json_object_get(j, "sources"), SPS_SOURCE_NVIDIA_SMI);
    CHECK(json_is_true(json_object_get(smi, "slow")));
    CHECK(json_is_true(json_object_get(smi, "in_use")));
    json_decref(j);
}

int main(void) {
    RUN_TEST(test_capture_reads_what_run_published);
    RUN_TEST(test_accuracy_against_rusage);
    RUN_TEST(test_report_metrics_shape);
    RUN_TEST(test_no_sample);
    RUN_TEST(test_run_interval_flags);
    RUN_TEST(test_run_without_publish_file);
    RUN_TEST(test_snapshot);
    RUN_TEST(test_doctor);
    RUN_TEST(test_doctor_cuda);
    RUN_TEST(test_snapshot_of_fixture_machine);
    RUN_TEST(test_run_on_fixture_machine);
    RUN_TEST(test_snapshot_with_fake_nvml);
    RUN_TEST(test_snapshot_falls_back_to_nvidia_smi);
    return check_report();
}
