/*
 * info.c - what the module reads rather than records: capture(), status(),
 * the metric catalogue and writing a report.  None of it is on a hot path,
 * so it favours plain dicts over speed.
 */
#include "ext.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A reading as Python sees it: None when unavailable; an int for metrics
 * counted in whole units (bytes, count, bitmask), else a float. */
static PyObject *reading_object(const struct sps_reading *r, const struct sps_metric_info *info) {
    if (!r->available || isnan(r->value))
        Py_RETURN_NONE;
    const char *u = info->unit;
    if ((strcmp(u, "bytes") == 0 || strcmp(u, "count") == 0 || strcmp(u, "bitmask") == 0) && isfinite(r->value))
        return PyLong_FromDouble(r->value);
    return PyFloat_FromDouble(r->value);
}

/* Set d[key] = value and drop the reference to value; -1 on error. */
int sps_py_put(PyObject *d, const char *key, PyObject *value) {
    if (!value)
        return -1;
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *reading_or_none(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key); /* borrowed, never raises */
    if (!v)
        v = Py_None;
    Py_INCREF(v);
    return v;
}

static const char *source_name(enum sps_source_id id) {
    switch (id) {
    case SPS_SOURCE_NVML:
        return "nvml";
    case SPS_SOURCE_DRM:
        return "drm";
    case SPS_SOURCE_NVIDIA_SMI:
        return "nvidia-smi";
    default:
        return "unknown";
    }
}

static PyObject *gpu_dict(const struct sps_capture_gpu *g) {
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    if (sps_py_put(d, "index", PyLong_FromLong(g->index)) < 0 ||
        sps_py_put(d, "name", PyUnicode_DecodeUTF8(g->name, (Py_ssize_t)strnlen(g->name, sizeof g->name), "replace")) < 0 ||
        sps_py_put(d, "uuid", PyUnicode_DecodeUTF8(g->uuid, (Py_ssize_t)strnlen(g->uuid, sizeof g->uuid), "replace")) < 0 ||
        sps_py_put(d, "source", PyUnicode_FromString(source_name(g->source))) < 0)
        goto fail;
    for (int m = 0; m < SPS_GPU_METRIC_COUNT; m++) {
        const struct sps_metric_info *info = sps_gpu_metric_info(m);
        if (sps_py_put(d, info->name, reading_object(&g->metric[m], info)) < 0)
            goto fail;
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/*
 * capture(gpu=0, fresh=False) -> dict.  The four summary keys the first
 * seed asked for (cpu_memory is the tree's memory: its PSS, else its RSS
 * sum, as cpu_memory_metric names), then every host metric by catalogue name, then the GPU
 * metrics of GPU `gpu` (its workload index, cuda:N) by catalogue name, then
 * `gpus`: every GPU's readings.  None wherever there is no reading.
 */
PyObject *sps_py_capture(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"gpu", "fresh", NULL};
    int gpu = 0, fresh = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ip:capture", kwlist, &gpu, &fresh))
        return NULL;
    if (gpu < 0) {
        PyErr_Format(PyExc_ValueError, "stepscope.capture(): gpu must be >= 0, not %d", gpu);
        return NULL;
    }
    /* 9 KiB: on the heap, not on a Python thread's stack */
    struct sps_capture *c = malloc(sizeof *c);
    if (!c)
        return PyErr_NoMemory();
    int rc;
    /* a fresh read, or the first capture (it starts the sampler), reads
     * files and may load NVML: let other threads run meanwhile */
    Py_BEGIN_ALLOW_THREADS
    rc = sps_capture(c, fresh ? SPS_CAPTURE_FRESH : 0);
    Py_END_ALLOW_THREADS
    PyObject *d = PyDict_New(), *gpus = PyList_New(0);
    if (!d || !gpus)
        goto fail;
    if (rc != 0 && rc != SPS_EINVAL) {
        /* no sampler could start: every reading is unavailable, as
         * documented; say why where a test or a user can see it */
        if (sps_py_put(d, "error", PyUnicode_FromString(sps_strerror(rc))) < 0)
            goto fail;
    }
    const struct sps_capture_gpu *sel = NULL;
    for (int g = 0; g < c->gpu_count && g < SPS_CAPTURE_MAX_GPUS; g++) {
        if (c->gpu[g].index == gpu)
            sel = &c->gpu[g];
        PyObject *gd = gpu_dict(&c->gpu[g]);
        if (!gd || PyList_Append(gpus, gd) < 0) {
            Py_XDECREF(gd);
            goto fail;
        }
        Py_DECREF(gd);
    }
    PyObject *host = PyDict_New();
    if (!host)
        goto fail;
    for (int m = 0; m < SPS_HOST_METRIC_COUNT; m++) {
        const struct sps_metric_info *info = sps_host_metric_info(m);
        if (sps_py_put(host, info->name, reading_object(&c->metric[m], info)) < 0) {
            Py_DECREF(host);
            goto fail;
        }
    }
    PyObject *gd = NULL;
    if (sel) {
        gd = gpu_dict(sel);
        if (!gd) {
            Py_DECREF(host);
            goto fail;
        }
    }
    /* the seed's four first, so they lead the dict's order */
    int bad = sps_py_put(d, "gpu_memory",
                         gd ? reading_or_none(gd, "gpu_memory_used_bytes") : (Py_INCREF(Py_None), Py_None)) < 0 ||
              sps_py_put(d, "gpu_temperature",
                         gd ? reading_or_none(gd, "gpu_temperature_celsius") : (Py_INCREF(Py_None), Py_None)) < 0 ||
              sps_py_put(d, "cpu_memory",
                         reading_object(&c->tree_memory, sps_host_metric_info(c->tree_memory_metric))) < 0 ||
              sps_py_put(d, "cpu_temperature", reading_or_none(host, "cpu_temperature_celsius")) < 0 ||
              sps_py_put(d, "cpu_memory_metric",
                         PyUnicode_FromString(sps_host_metric_info(c->tree_memory_metric)->name)) < 0 ||
              PyDict_Update(d, host) < 0;
    Py_DECREF(host);
    for (int m = 0; !bad && m < SPS_GPU_METRIC_COUNT; m++) {
        const char *name = sps_gpu_metric_info(m)->name;
        bad = sps_py_put(d, name, gd ? reading_or_none(gd, name) : (Py_INCREF(Py_None), Py_None)) < 0;
    }
    Py_XDECREF(gd);
    if (bad || sps_py_put(d, "gpus", gpus) < 0) {
        gpus = NULL; /* put dropped it */
        goto fail;
    }
    gpus = NULL;
    /* torch.cuda's allocator on the current device, read now (None: torch
     * has not initialised CUDA, or reading it failed: status() says why) */
    if (sps_py_put(d, "torch_cuda", sps_py_torch_mem_capture(NULL, NULL)) < 0 ||
        sps_py_put(d, "time_ns", PyLong_FromLongLong(c->time_ns)) < 0 ||
        sps_py_put(d, "published", PyBool_FromLong(c->published)) < 0 ||
        sps_py_put(d, "fresh", PyBool_FromLong(c->fresh)) < 0)
        goto fail;
    free(c);
    return d;
fail:
    free(c);
    Py_XDECREF(gpus);
    Py_XDECREF(d);
    return NULL;
}

PyObject *sps_py_status(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    struct sps_status st;
    sps_status(&st);
    static const char *modes[] = {"uninitialised", "file", "memory", "failed"};
    const char *mode = (unsigned)st.mode < 4 ? modes[st.mode] : "unknown";
    const char *clock = st.clock == SPS_CLOCK_TSC ? "tsc" : st.clock == SPS_CLOCK_MONOTONIC ? "monotonic" : "unknown";
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    if (sps_py_put(d, "mode", PyUnicode_FromString(mode)) < 0 ||
        sps_py_put(d, "clock", PyUnicode_FromString(clock)) < 0 ||
        sps_py_put(d, "ticks_per_second", PyFloat_FromDouble(st.ticks_per_second)) < 0 ||
        sps_py_put(d, "record_path", PyUnicode_DecodeFSDefault(st.record_path)) < 0 ||
        sps_py_put(d, "reason", PyUnicode_DecodeUTF8(st.reason, (Py_ssize_t)strlen(st.reason), "replace")) < 0 ||
        sps_py_put(d, "events_recorded", PyLong_FromUnsignedLongLong(st.events_recorded)) < 0 ||
        sps_py_put(d, "events_dropped", PyLong_FromUnsignedLongLong(st.events_dropped)) < 0 ||
        sps_py_put(d, "threads_recording", PyLong_FromUnsignedLongLong(st.threads_recording)) < 0 ||
        sps_py_put(d, "enabled", PyBool_FromLong(sps_is_enabled())) < 0 ||
        sps_py_put(d, "torch_cuda_memory", sps_py_torch_mem_status(NULL, NULL)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* metrics() -> list of dicts: the catalogue (host rows, then GPU rows). */
PyObject *sps_py_metrics(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int m = 0;; m++) {
            const struct sps_metric_info *i = pass ? sps_gpu_metric_info(m) : sps_host_metric_info(m);
            if (!i)
                break;
            PyObject *d = Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:O}", "name", i->name, "unit", i->unit, "source",
                                        i->source, "kind", i->kind == SPS_TOTAL ? "total" : "gauge", "description",
                                        i->description, "per_gpu", pass ? Py_True : Py_False);
            if (!d || PyList_Append(list, d) < 0) {
                Py_XDECREF(d);
                Py_DECREF(list);
                return NULL;
            }
            Py_DECREF(d);
        }
    }
    return list;
}

/* write_report(dir): sps_report_write; OSError with its one-line reason. */
PyObject *sps_py_write_report(PyObject *self, PyObject *dir) {
    (void)self;
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(dir, &bytes))
        return NULL;
    char err[512] = "";
    int rc;
    const char *path = PyBytes_AsString(bytes);
    Py_BEGIN_ALLOW_THREADS
    rc = sps_report_write(path, err, sizeof err);
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    if (rc != 0) {
        PyErr_Format(PyExc_OSError, "stepscope.write_report(): %s", err[0] ? err : sps_strerror(rc));
        return NULL;
    }
    Py_RETURN_NONE;
}

int sps_py_info_init(PyObject *module) {
    (void)module;
    return 0;
}
