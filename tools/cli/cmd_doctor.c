/*
 * cmd_doctor.c - `stepscope doctor`: every source, whether it works here,
 * why not, what one read costs, and what the sampler would cost at its
 * default intervals.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auto_inject.h"
#include "capture.h"
#include "cli.h"
#include "clock.h"
#include "nvtx.h"
#include "prom_http.h"
#include "render/json_writer.h"
#include "render/render.h"
#include "sampler/sampler.h"
#include "stepscope.h"

static const char doctor_usage[] =
    "usage: stepscope doctor [--json]\n"
    "\n"
    "Open every metric source on its own (proc, thermal, rapl, nvml, drm,\n"
    "nvidia-smi, sched), read it a few times, and print whether it works, why\n"
    "not, what one read costs, and how many readings it gives. The GPU\n"
    "sources form a chain: the sampler uses the first one that works. sched\n"
    "reads CPU pressure (PSI) and run delay; its detail names what this\n"
    "kernel lacks (no /proc/pressure/cpu: a kernel without PSI). The cuda\n"
    "and nvtx lines are not sources: whether GPU zones can time GPU work, and\n"
    "whether an NVTX tool (nsys profile) receives stepscope's zones as ranges;\n"
    "nor is serve: whether run --serve's libmicrohttpd loads here.\n"
    "\n"
    "options:\n"
    "      --json              print the findings as JSON\n"
    "  -h, --help              this help\n"
    "\n"
    "exit status: 0 when the proc source works, 1 otherwise, 2 for a usage error.\n";

struct finding {
    int available;
    char reason[192];
    double open_s;
    double read_s;          /* mean of the timed reads (everything: a machine-interval read) */
    double interval_read_s; /* mean of timed reads at the interval alone; NAN: not read then */
    int reads, failed;
    char read_error[192];
    int readings; /* values a read gave */
};

static int count_readings(enum sps_source_id id, const struct sps__sample *s) {
    int n = 0;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        n += sps__host_metric_source(i) == id && !isnan(s->host[i]);
    if (sps__source_get(id)->is_gpu)
        for (int g = 0; g < s->ngpus; g++)
            for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
                n += !isnan(s->gpu[g].v[i]);
    if (id == SPS_SOURCE_THERMAL)
        for (int k = 0; k < s->nsensors; k++)
            n += !isnan(s->sensor[k].celsius);
    return n;
}

static void examine(enum sps_source_id id, const struct sps__source_ctx *ctx, struct finding *f) {
    const struct sps__source *src = sps__source_get(id);
    memset(f, 0, sizeof *f);
    void *state = NULL;
    uint64_t t0 = sps__mono_ns();
    int rc = src->open(ctx, &state, f->reason, sizeof f->reason);
    f->open_s = (double)(sps__mono_ns() - t0) * 1e-9;
    if (rc != 0) {
        if (!f->reason[0])
            snprintf(f->reason, sizeof f->reason, "unavailable");
        return;
    }
    f->available = 1;
    /* one untimed read (first reads find processes and sensors), then the
     * timed ones; a slow source gets one */
    int timed = src->slow ? 1 : 20;
    struct sps__sample s;
    char why[192];
    uint64_t total = 0;
    for (int k = 0; k <= timed; k++) {
        sps__sample_clear(&s);
        why[0] = '\0';
        uint64_t r0 = sps__mono_ns();
        int r = src->read(state, ctx, &s, (int64_t)r0, why, sizeof why);
        uint64_t dt = sps__mono_ns() - r0;
        if (k > 0 || src->slow) {
            total += dt;
            f->reads++;
        }
        if (r != 0) {
            f->failed++;
            snprintf(f->read_error, sizeof f->read_error, "%s", why[0] ? why : "read failed");
        }
        if (src->slow)
            break;
    }
    f->read_s = f->reads ? (double)total * 1e-9 / f->reads : NAN;
    f->readings = count_readings(id, &s);

    /* a source with metrics read every interval is also read that way */
    f->interval_read_s = NAN;
    int every_interval = 0;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        every_interval |= sps__host_metric_source(i) == id && sps_host_metric_info(i)->cadence == SPS_EVERY_INTERVAL;
    if (every_interval && !src->slow) {
        struct sps__source_ctx interval_ctx = *ctx;
        interval_ctx.interval_only = 1;
        total = 0;
        for (int k = 0; k < timed; k++) {
            sps__sample_clear(&s);
            uint64_t r0 = sps__mono_ns();
            src->read(state, &interval_ctx, &s, (int64_t)r0, why, sizeof why);
            total += sps__mono_ns() - r0;
        }
        f->interval_read_s = (double)total * 1e-9 / timed;
    }
    src->close(state);
}

static const char *fmt_cost(double s, char *buf, size_t len) {
    return sps__fmt_seconds(s, buf, len);
}

int sps_cmd_doctor(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(doctor_usage, stdout);
            return 0;
        } else
            return sps_cli_usage_error("doctor", "unknown option '%s'", argv[i]);
    }
    struct sps__sampler_config cfg = {0};
    sps__sampler_config_from_env(&cfg);
    struct sps__source_ctx ctx = {
        .root = cfg.root ? cfg.root : "",
        .tree_pid = (int)getpid(), /* the proc source reads a tree: this one */
        .nvml_path = cfg.nvml_path,
        .smi_path = cfg.smi_path,
        .cuda_visible_devices = cfg.cuda_visible_devices,
    };
    struct finding found[SPS_SOURCE_COUNT];
    for (int i = 0; i < SPS_SOURCE_COUNT; i++)
        examine((enum sps_source_id)i, &ctx, &found[i]);

    /* the GPU chain: the first working source serves the GPUs */
    int gpu_source = -1;
    for (int id = 0; id < SPS_SOURCE_COUNT && gpu_source < 0; id++)
        if (sps__source_get(id)->is_gpu && found[id].available)
            gpu_source = id;
    /* per machine interval: every source read in full once, and the
     * sources with interval metrics read that way at the other intervals */
    double machine_cost = 0, interval_cost = 0;
    for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
        if (!found[i].available || isnan(found[i].read_s))
            continue;
        if (!sps__source_get(i)->is_gpu || i == gpu_source)
            machine_cost += found[i].read_s;
        if (!isnan(found[i].interval_read_s))
            interval_cost += found[i].interval_read_s;
    }
    double per_machine = (double)SPS_SAMPLER_DEFAULT_MACHINE_MS / SPS_SAMPLER_DEFAULT_INTERVAL_MS;
    double core_percent = 100.0 * (machine_cost + interval_cost * (per_machine - 1)) /
                          (SPS_SAMPLER_DEFAULT_MACHINE_MS * 1e-3);

    /* the cuda source serves GPU zones, not the sampler: it has no read
     * cost, only whether libcuda loads and initialises here */
    struct sps_cuda_status cuda;
    (void)sps_cuda_status(&cuda);
    /* an NVTX tool (nsys profile sets NVTX_INJECTION64_PATH): loaded here
     * as a workload's first zone would load it */
    struct sps__nvtx_status nvtx;
    sps__nvtx_status(&nvtx);
    /* where `stepscope run` takes the Python startup hook from */
    char hook[PATH_MAX];
    int have_hook = sps_auto_hook_dir(hook);
    /* the library `stepscope run --serve` loads, loaded as it would be */
    char serve[PATH_MAX + 512];
    int have_serve = sps_prom_http_library(serve, sizeof serve);

    if (json) {
        struct sps_jw w;
        sps__jw_init(&w, stdout);
        sps__jw_object(&w, NULL);
        sps__jw_string(&w, "schema", "stepscope.doctor/1");
        sps__jw_array(&w, "sources");
        for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
            const struct sps__source *src = sps__source_get(i);
            const struct finding *f = &found[i];
            sps__jw_object(&w, NULL);
            sps__jw_string(&w, "name", src->name);
            sps__jw_string(&w, "what", src->what);
            sps__jw_bool(&w, "available", f->available);
            sps__jw_bool(&w, "gpu", src->is_gpu);
            sps__jw_bool(&w, "slow", src->slow);
            sps__jw_bool(&w, "used_by_sampler", f->available && (!src->is_gpu || i == gpu_source));
            if (f->reason[0])
                sps__jw_string(&w, "reason", f->reason);
            else
                sps__jw_null(&w, "reason");
            sps__jw_number(&w, "open_s", f->open_s);
            sps__jw_number(&w, "read_s", f->available ? f->read_s : NAN);
            sps__jw_number(&w, "interval_read_s", f->available ? f->interval_read_s : NAN);
            sps__jw_int(&w, "readings", f->readings);
            if (f->read_error[0])
                sps__jw_string(&w, "read_error", f->read_error);
            else
                sps__jw_null(&w, "read_error");
            sps__jw_end(&w, '}');
        }
        sps__jw_end(&w, ']');
        sps__jw_object(&w, "cuda");
        sps__jw_bool(&w, "available", cuda.available);
        sps__jw_int(&w, "driver_version", cuda.driver_version);
        if (cuda.reason[0])
            sps__jw_string(&w, "reason", cuda.reason);
        else
            sps__jw_null(&w, "reason");
        sps__jw_end(&w, '}');
        sps__jw_object(&w, "nvtx");
        sps__jw_bool(&w, "requested", nvtx.requested);
        sps__jw_bool(&w, "attached", nvtx.attached);
        if (nvtx.requested)
            sps__jw_string(&w, "library", nvtx.library);
        else
            sps__jw_null(&w, "library");
        if (nvtx.attached)
            sps__jw_string(&w, "calls", nvtx.api);
        else
            sps__jw_null(&w, "calls");
        if (nvtx.attached)
            sps__jw_null(&w, "reason");
        else
            sps__jw_string(&w, "reason", nvtx.reason);
        sps__jw_end(&w, '}');
        if (have_hook)
            sps__jw_string(&w, "auto_hook_dir", hook);
        else
            sps__jw_null(&w, "auto_hook_dir");
        sps__jw_object(&w, "serve");
        sps__jw_bool(&w, "available", have_serve);
        if (have_serve) {
            sps__jw_string(&w, "library", serve);
            sps__jw_null(&w, "reason");
        } else {
            sps__jw_null(&w, "library");
            sps__jw_string(&w, "reason", serve);
        }
        sps__jw_end(&w, '}');
        /* warm reads only: the thread's wake-ups and cold caches come on top */
        sps__jw_number(&w, "sampler_cpu_percent_of_one_core", core_percent);
        sps__jw_end(&w, '}');
    } else {
        printf("%-11s %-12s %10s %9s  %s\n", "source", "status", "read cost", "readings", "detail");
        for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
            const struct sps__source *src = sps__source_get(i);
            const struct finding *f = &found[i];
            char cost[32] = "-", detail[400];
            const char *status = "unavailable";
            if (f->available) {
                fmt_cost(f->read_s, cost, sizeof cost);
                status = f->failed ? "read errors" : src->is_gpu && i != gpu_source ? "ok (spare)" : "ok";
                snprintf(detail, sizeof detail, "%s%s%s%s", src->what, f->reason[0] ? "; " : "", f->reason,
                         src->slow ? " (slow: used only when nothing faster works)" : "");
                if (f->read_error[0])
                    snprintf(detail, sizeof detail, "%s", f->read_error);
            } else {
                snprintf(detail, sizeof detail, "%s", f->reason);
            }
            printf("%-11s %-12s %10s %9d  %s\n", src->name, status, cost, f->readings, detail);
        }
        /* not a sampled source: GPU zones in the workload use it */
        char cuda_detail[300];
        if (cuda.available)
            snprintf(cuda_detail, sizeof cuda_detail,
                     "libcuda loads (driver %d.%d): GPU zones time their work with CUDA events%s%s",
                     cuda.driver_version / 1000, cuda.driver_version % 1000 / 10, cuda.reason[0] ? "; " : "",
                     cuda.reason);
        else
            snprintf(cuda_detail, sizeof cuda_detail, "GPU zones are CPU zones only: %s", cuda.reason);
        printf("%-11s %-12s %10s %9s  %s\n", "cuda", cuda.available ? "ok" : "unavailable", "-", "-", cuda_detail);
        /* not a source either: where zones go besides the record */
        char nvtx_detail[1024];
        if (nvtx.attached)
            snprintf(nvtx_detail, sizeof nvtx_detail,
                     "tool %s loaded: zones, steps and GPU zones show as NVTX ranges (%s)", nvtx.library, nvtx.api);
        else if (nvtx.requested)
            snprintf(nvtx_detail, sizeof nvtx_detail, "tool %s not used: %s", nvtx.library, nvtx.reason);
        else
            snprintf(nvtx_detail, sizeof nvtx_detail,
                     "no NVTX tool injected (NVTX_INJECTION64_PATH unset); run under nsys profile to see "
                     "stepscope's zones in Nsight");
        printf("%-11s %-12s %10s %9s  %s\n", "nvtx", nvtx.attached ? "ok" : nvtx.requested ? "unavailable" : "off", "-",
               "-", nvtx_detail);
        char auto_detail[PATH_MAX + 128];
        if (have_hook)
            snprintf(auto_detail, sizeof auto_detail,
                     "stepscope run auto-instruments PyTorch scripts with the startup hook in %s", hook);
        else
            snprintf(auto_detail, sizeof auto_detail,
                     "no startup hook (%s): Python scripts run uninstrumented unless they use stepscope "
                     "themselves",
                     sps_auto_hook_places);
        printf("%-11s %-12s %10s %9s  %s\n", "auto", have_hook ? "ok" : "unavailable", "-", "-", auto_detail);
        if (have_serve)
            printf("%-11s %-12s %10s %9s  stepscope run --serve answers /metrics with %s\n", "serve", "ok", "-", "-",
                   serve);
        else
            printf("%-11s %-12s %10s %9s  %s; --prom-textfile FILE writes the same metrics\n", "serve", "unavailable",
                   "-", "-", serve);
        printf("\nGPUs: %s\n", gpu_source >= 0 ? sps__source_get(gpu_source)->name : "none of nvml, drm, nvidia-smi works here");
        if (found[SPS_SOURCE_PROC].available && !isnan(found[SPS_SOURCE_PROC].interval_read_s)) {
            char cost[32];
            printf("proc at the interval alone (the tree's CPU time and memory): %s a read\n",
                   fmt_cost(found[SPS_SOURCE_PROC].interval_read_s, cost, sizeof cost));
        }
        printf("reads at the default intervals (%d ms, machine %d ms): about %.3f%% of one core, with warm\n"
               "caches; the sampler thread's wake-ups and cold caches add to it (bench_capture measures the whole)\n",
               SPS_SAMPLER_DEFAULT_INTERVAL_MS, SPS_SAMPLER_DEFAULT_MACHINE_MS, core_percent);
    }
    return found[SPS_SOURCE_PROC].available ? 0 : 1;
}
