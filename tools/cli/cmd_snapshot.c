/*
 * cmd_snapshot.c - `stepscope snapshot`: one capture of the machine as
 * JSON on stdout (what sps_capture() returns, with every reading's unit,
 * source and age, or null and why).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "cli.h"
#include "clock.h"
#include "render/json_writer.h"
#include "sampler/sampler.h"
#include "stepscope.h"

static const char snapshot_usage[] =
    "usage: stepscope snapshot [--pid PID] [--wait MS]\n"
    "\n"
    "Read every source twice, MS apart, and print the readings as JSON:\n"
    "system CPU, memory, swap and network; CPU temperatures and RAPL energy;\n"
    "every visible GPU's memory, utilisation, temperature, power and clocks;\n"
    "and, with --pid, the CPU, memory and disk I/O of that process and its\n"
    "descendants. A reading that cannot be had is null, with the reason.\n"
    "\n"
    "options:\n"
    "      --pid PID           also read the process tree rooted at PID\n"
    "      --wait MS           time between the two reads that percentages and\n"
    "                          rates need, 0 to 60000 (default 100; 0: one read,\n"
    "                          no percentages or rates)\n"
    "  -h, --help              this help\n"
    "\n"
    "exit status: 0; 1 when nothing could be read or PID does not exist; 2 for\n"
    "a usage error.\n";

static void write_reading(struct sps_jw *w, const struct sps_metric_info *m, const char *source,
                          const struct sps_reading *r, const char *why) {
    sps__jw_object(w, m->name);
    if (r->available)
        sps__jw_number(w, "value", r->value);
    else
        sps__jw_null(w, "value");
    sps__jw_string(w, "unit", m->unit);
    sps__jw_string(w, "source", source);
    if (r->available)
        sps__jw_number(w, "age_s", (double)r->age_ns * 1e-9);
    else
        sps__jw_string(w, "unavailable_reason", why);
    sps__jw_end(w, '}');
}

/* Why a source gave no value for a metric it owns. */
static const char *why_none(const struct sps__source_result *src, int waited) {
    if (!src->available)
        return src->reason;
    if (src->last_error[0])
        return src->last_error;
    return waited ? "not reported" : "needs two reads (use --wait)";
}

int sps_cmd_snapshot(int argc, char **argv) {
    long pid = 0, wait_ms = 100;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(snapshot_usage, stdout);
            return 0;
        }
        if (strcmp(a, "--pid") && strcmp(a, "--wait"))
            return sps_cli_usage_error("snapshot", "unknown option '%s'", a);
        if (i + 1 >= argc)
            return sps_cli_usage_error("snapshot", "option '%s' needs a value", a);
        const char *v = argv[++i];
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || !*v || *end || n < 0 || n > (a[2] == 'p' ? 4194304L : 60000L) || (a[2] == 'p' && n == 0))
            return sps_cli_usage_error("snapshot", "%s: '%s' is not %s", a, v,
                                       a[2] == 'p' ? "a process id" : "a number of milliseconds up to 60000");
        if (a[2] == 'p')
            pid = n;
        else
            wait_ms = n;
    }
    if (pid && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return sps_cli_error("snapshot", "--pid", "no such process", 1);

    struct sps__sampler_config cfg = {0};
    sps__sampler_config_from_env(&cfg);
    cfg.tree_pid = (int)pid;
    char err[512];
    struct sps__sampler *s = sps__sampler_open(&cfg, err, sizeof err);
    if (!s)
        return sps_cli_error("snapshot", "sampler", err, 1);
    sps__sampler_tick_now(s);
    if (wait_ms > 0) {
        struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        sps__sampler_tick_now(s);
    }
    struct sps__sample sample;
    static struct sps_capture cap;
    int64_t now = (int64_t)sps__mono_ns();
    if (sps__published_read(sps__sampler_published(s), &sample, NULL) != 0) {
        sps__sampler_close(s);
        return sps_cli_error("snapshot", "sampler", "no sample was taken", 1);
    }
    sps__capture_from_sample(&cap, &sample, now);
    const struct sps__sampler_result *r = sps__sampler_result(s);

    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    struct sps_jw w;
    sps__jw_init(&w, stdout);
    sps__jw_object(&w, NULL);
    sps__jw_string(&w, "schema", "stepscope.snapshot/1");
    sps__jw_string(&w, "stepscope_version", SPS_VERSION_STRING);
    sps__jw_number(&w, "time_unix_s", (double)rt.tv_sec + (double)rt.tv_nsec * 1e-9);
    if (pid)
        sps__jw_int(&w, "tree_pid", pid);
    else
        sps__jw_null(&w, "tree_pid");
    sps__jw_object(&w, "metrics");
    int available = 0;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        const struct sps_metric_info *m = sps_host_metric_info(i);
        enum sps_source_id id = sps__host_metric_source(i);
        const char *why = why_none(&r->sources[id], wait_ms > 0);
        if (!pid && strncmp(m->name, "workload_", 9) == 0 && r->sources[id].available)
            why = "no process tree (use --pid PID)";
        write_reading(&w, m, sps__source_get(id)->name, &cap.metric[i], why);
        available += cap.metric[i].available;
    }
    sps__jw_end(&w, '}');
    sps__jw_array(&w, "gpus");
    for (int g = 0; g < cap.gpu_count; g++) {
        const struct sps_capture_gpu *cg = &cap.gpu[g];
        const char *src = sps__source_get(cg->source)->name;
        sps__jw_object(&w, NULL);
        sps__jw_int(&w, "index", cg->index);
        sps__jw_string(&w, "name", cg->name);
        sps__jw_string(&w, "uuid", cg->uuid);
        sps__jw_string(&w, "source", src);
        sps__jw_object(&w, "metrics");
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++) {
            const struct sps__source_result *sr = &r->sources[cg->source];
            const char *why = sr->last_error[0] ? sr->last_error : "not reported for this GPU";
            if (i == SPS_M_GPU_WORKLOAD_MEMORY_BYTES && !pid)
                why = "no process tree (use --pid PID)";
            write_reading(&w, sps_gpu_metric_info(i), src, &cg->metric[i], why);
            available += cg->metric[i].available;
        }
        sps__jw_end(&w, '}');
        sps__jw_end(&w, '}');
    }
    sps__jw_end(&w, ']');
    sps__jw_array(&w, "sensors");
    for (int k = 0; k < cap.sensor_count; k++) {
        sps__jw_object(&w, NULL);
        sps__jw_string(&w, "label", cap.sensor[k].label);
        sps__jw_bool(&w, "is_cpu", cap.sensor[k].is_cpu);
        sps__jw_number(&w, "celsius", cap.sensor[k].celsius.value);
        sps__jw_end(&w, '}');
    }
    sps__jw_end(&w, ']');
    sps__jw_array(&w, "sources");
    for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
        const struct sps__source_result *sr = &r->sources[i];
        sps__jw_object(&w, NULL);
        sps__jw_string(&w, "name", sps__source_get(i)->name);
        sps__jw_bool(&w, "available", sr->available);
        sps__jw_bool(&w, "in_use", sr->in_use);
        sps__jw_bool(&w, "slow", sr->slow);
        if (sr->reason[0])
            sps__jw_string(&w, "reason", sr->reason);
        else
            sps__jw_null(&w, "reason");
        sps__jw_end(&w, '}');
    }
    sps__jw_end(&w, ']');
    sps__jw_end(&w, '}');
    fflush(stdout);
    sps__sampler_close(s);
    if (!available)
        return sps_cli_error("snapshot", "sources", "no source gave a reading", 1);
    return 0;
}
