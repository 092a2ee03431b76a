/*
 * live.c - stepscope.last_step(): the calling thread's last completed step
 * as one line of the live stream's JSON (src/render/step_line_json.c), so
 * the dict the package parses from it has the stream's keys exactly.
 * Nothing here runs unless called.
 */
#include "ext.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "capture.h"
#include "last_step.h"
#include "render/step_line_json.h"
#include "sources/source.h"

/* Under `stepscope run`: the run's latest published readings (the
 * nearest to a step that has just ended).  Alone: this process's own
 * resident set, one read of /proc/self/statm. */
static void machine_now(struct sps__step_machine *m) {
    struct sps__sample s;
    if (sps__capture_published(&s) == 0) {
        m->have = 1;
        for (int i = 0; i < SPS_STEP_LINE_HOST_METRICS; i++)
            m->host[i] = s.host[sps__step_line_host_metric[i]];
        for (int g = 0; g < s.ngpus && g < SPS_STEP_LINE_GPUS; g++) {
            m->gpu_index[m->ngpus] = s.gpu[g].index;
            m->gpu_utilization_percent[m->ngpus] = s.gpu[g].v[SPS_M_GPU_UTILIZATION_PERCENT];
            m->gpu_memory_used_bytes[m->ngpus] = s.gpu[g].v[SPS_M_GPU_MEMORY_USED_BYTES];
            m->ngpus++;
        }
        return;
    }
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long size, resident;
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (sscanf(buf, "%lu %lu", &size, &resident) == 2) {
        m->have = 1;
        for (int i = 0; i < SPS_STEP_LINE_HOST_METRICS; i++)
            if (sps__step_line_host_metric[i] == SPS_M_WORKLOAD_RSS_BYTES)
                m->host[i] = (double)resident * (double)sysconf(_SC_PAGESIZE);
    }
}

/* The run's start, which `stepscope run` hands its workload, so times
 * count from where report.json's do; 0 (the process's own start) alone. */
static uint64_t run_origin(void) {
    const char *v = getenv("STEPSCOPE_RUN_START_NS");
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long ns = strtoull(v, &end, 10);
    return errno || *end ? 0 : (uint64_t)ns;
}

PyObject *sps_py_last_step_json(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    struct sps__step_line *l = malloc(sizeof *l);
    char *text = malloc(SPS_STEP_LINE_JSON_MAX);
    PyObject *out = NULL;
    if (!l || !text) {
        out = PyErr_NoMemory();
    } else if (sps__last_step(l, run_origin()) != 0) {
        out = Py_None;
        Py_INCREF(out);
    } else {
        machine_now(&l->machine);
        int n = sps__step_line_json(l, sps__last_step_name, NULL, text, SPS_STEP_LINE_JSON_MAX);
        if (n < 0)
            PyErr_SetString(PyExc_RuntimeError, "stepscope.last_step(): the step's line does not fit");
        else
            out = PyUnicode_FromStringAndSize(text, n);
    }
    free(text);
    free(l);
    return out;
}
