/*
 * standalone.c - sps_report_write(): the standalone path, where the process
 * reads its own record in place and writes DIR/report.json itself (at exit
 * when STEPSCOPE_OUT says so: standalone_out.c).
 */
#include "render/standalone.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "capture.h"
#include "clock.h"
#include "render/render.h"
#include "platform/platform.h"
#include "recorder.h"
#include "stepscope.h"

/* The files `stepscope report DIR` makes from report.json (export_dir.c).
 * A standalone run writes only report.json; these, left by an earlier run
 * in the same directory, would describe another run beside it, so they go
 * once the new report.json is in place (it regenerates them). */
static const char *const derived_outputs[] = {"report.html", "steps.csv", "timeline.csv", "trace.json"};

static void remove_derived_outputs(const char *dir) {
    char path[4096];
    for (size_t i = 0; i < sizeof derived_outputs / sizeof derived_outputs[0]; i++)
        if (snprintf(path, sizeof path, "%s/%s", dir, derived_outputs[i]) < (int)sizeof path)
            (void)unlink(path); /* absent is fine; a link is removed, never followed */
}

int sps_report_write(const char *dir, char *errbuf, size_t errlen) {
    return sps__standalone_write(dir, "report.json", errbuf, errlen);
}

int sps__standalone_write(const char *dir, const char *name, char *errbuf, size_t errlen) {
    char scratch[512];
    if (!errbuf) {
        errbuf = scratch;
        errlen = sizeof scratch;
    }
    if (!dir || !*dir) {
        snprintf(errbuf, errlen, "no report directory given");
        return SPS_EINVAL;
    }
    const void *base;
    size_t size;
    char label[512];
    if (sps__recorder_snapshot(&base, &size, label, sizeof label) != 0) {
        snprintf(errbuf, errlen, "nothing has been recorded in this process");
        return SPS_ESTATE;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(errbuf, errlen, "%s: %s", dir, strerror(errno));
        return SPS_EIO;
    }
    struct sps_run run = {0};
    struct sps_process_data p;
    /* other threads may still be recording: read it as a live record */
    int rc = sps__record_parse(base, size, label, SPS_PARSE_LIVE, &p, errbuf, errlen);
    if (rc == 0)
        rc = sps__run_add(&run, &p);
    if (rc == 0)
        rc = sps__run_build(&run);
    if (rc == 0) {
        struct sps_run_info info = {0};
        struct rusage ru;
        info.start_realtime_ns = run.procs[0].start_realtime_ns;
        info.have_times = getrusage(RUSAGE_SELF, &ru) == 0;
        info.wall_s = (double)(sps__mono_ns() - run.procs[0].start_ns) * 1e-9;
        info.user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
        info.sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
        info.have_rss = info.have_times;
        info.peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
        info.rss_scope = "this process (getrusage RUSAGE_SELF)";
        info.cpu_count = sps__platform_cpu_count();
        info.standalone_reason = "the recording process itself (sps_report_write); wall time from its first event";
        int sampling = 0;
        info.sampler = sps__capture_pause(&sampling);
        info.sampler_absent_reason = "no sampler ran in this process (sps_sampler_start() or sps_capture() starts one)";
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        struct sps_report rep;
        rc = sps__report_build(&rep, &run, &info);
        if (rc == 0) {
            rc = sps__report_json_write(&rep, path, errbuf, errlen);
            if (rc == 0 && strcmp(name, "report.json") == 0)
                remove_derived_outputs(dir);
        } else
            snprintf(errbuf, errlen, "out of memory");
        sps__report_free(&rep);
        sps__capture_resume(sampling);
    } else if (rc == SPS_ENOMEM) {
        snprintf(errbuf, errlen, "out of memory");
    }
    sps__run_free(&run);
    return rc;
}
