/*
 * gpu_zone.c - GPU zones for Python: `with stepscope.gpu_zone("forward"):`
 * times the block on the CPU, as a zone of that name, and on the GPU, by a
 * pair of CUDA events the library records on a stream and resolves later
 * without synchronising (sps_gpu_zone_begin, src/gpu/cuda_zone.c).  The GPU
 * time becomes the value series "<name>.gpu_ms".
 *
 * The stream: None (the default) means the current stream, found at each
 * __enter__ because a `with torch.cuda.stream(s):` block may change it:
 * torch.cuda.current_stream().cuda_stream when PyTorch is already imported
 * and has initialised CUDA, else 0, the legacy default stream.  torch is
 * looked up in sys.modules, never imported: a program without PyTorch pays
 * one dict lookup.  An int is a CUstream / cudaStream_t handle, and any
 * other object must have an int `cuda_stream` (torch.cuda.Stream,
 * torch.cuda.ExternalStream); both are read once, at gpu_zone().
 *
 * A GpuZone starts with a ZoneObject (ext.h), so it shares Zone's ways to
 * stay cheap: the bound __enter__/__exit__ made once and handed out by
 * ZoneMethod descriptors, and a cached object per name handed out again
 * when nobody holds it (zone.c says how).  The libcuda calls of a begin
 * and an end cost far more than that on a real GPU, but a GPU zone around
 * a small kernel launch should not pay for Python objects on top.
 *
 * Nothing here releases the GIL but cuda_status(), which may load libcuda
 * and call cuInit (slow on a real driver), gpu_wait(), which sleeps
 * between polls, and _cuda_mem_info(), a driver call (and maybe the
 * load).  The first GPU zone loads libcuda with the GIL held:
 * once per process.
 */
#include "ext.h"

#include <stdint.h>

#include "gpu/cuda_zone.h"
#include <stdio.h>
#include <string.h>

typedef struct {
    ZoneObject z;          /* site, name, open, the bound methods (zone.c) */
    sps_gpu_zone_t token;  /* of the begin in __enter__; 0 when none */
    void *stream;          /* the CUstream, when not stream_auto */
    int stream_auto;       /* stream=None: the current stream at each __enter__ */
    PyObject *stream_arg;  /* what gpu_zone() was given (None, an int, a Stream) */
} GpuZoneObject;

static PyTypeObject *gpu_zone_type;
static PyObject *gpu_zone_cache; /* str -> GpuZone, as zone.c's zone_cache */
static PyObject *gpu_sites;      /* str -> int (struct sps_site *), for gpu_zone_begin() */
/* Interned names for the lookups of every __enter__ with stream=None. */
static PyObject *s_torch, *s_cuda, *s_is_initialized, *s_current_stream;

/* --------------------------------------------------------------- streams */

#define STREAM_WANTED "None, an int (a CUstream handle) or an object with an int .cuda_stream (torch.cuda.Stream)"

/* *out from a stream argument that is not None: an int handle, or an
 * object with an int cuda_stream.  fn names the caller in errors. */
static int stream_handle(PyObject *arg, void **out, const char *fn) {
    PyObject *handle = arg;
    Py_INCREF(handle);
    if (!PyLong_Check(arg)) {
        Py_DECREF(handle);
        handle = PyObject_GetAttrString(arg, "cuda_stream");
        if (!handle) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
            char what[80];
            snprintf(what, sizeof what, "%s: stream", fn);
            sps_py_type_error(what, STREAM_WANTED, arg);
            return -1;
        }
        if (!PyLong_Check(handle) || PyBool_Check(handle)) {
            char what[80];
            snprintf(what, sizeof what, "%s: stream.cuda_stream", fn);
            sps_py_type_error(what, "an int", handle);
            Py_DECREF(handle);
            return -1;
        }
    } else if (PyBool_Check(arg)) {
        Py_DECREF(handle);
        char what[80];
        snprintf(what, sizeof what, "%s: stream", fn);
        sps_py_type_error(what, STREAM_WANTED, arg);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(handle);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: a stream handle is between 0 and 2**64-1, not %R", fn, handle);
        Py_DECREF(handle);
        return -1;
    }
    Py_DECREF(handle);
    if (sizeof(void *) < sizeof v && v > (unsigned long long)UINTPTR_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: %llu is not a pointer on this machine", fn, v);
        return -1;
    }
    *out = (void *)(uintptr_t)v;
    return 0;
}

/* The current stream: PyTorch's when it is imported and has initialised
 * CUDA, else the legacy default stream (NULL).  Errors that PyTorch raises
 * propagate; a torch module without torch.cuda (being imported, or a
 * stand-in) counts as no PyTorch. */
static int current_stream(void **out) {
    *out = NULL;
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    PyObject *torch = modules ? PyDict_GetItemWithError(modules, s_torch) : NULL; /* borrowed */
    if (!torch || torch == Py_None) {
        PyErr_Clear();
        return 0;
    }
    PyObject *cuda = PyObject_GetAttr(torch, s_cuda);
    if (!cuda) {
        PyErr_Clear();
        return 0;
    }
    PyObject *init = PyObject_CallMethodObjArgs(cuda, s_is_initialized, NULL);
    int rc = 0;
    if (!init) {
        rc = PyErr_ExceptionMatches(PyExc_AttributeError) ? (PyErr_Clear(), 0) : -1;
    } else {
        int on = PyObject_IsTrue(init);
        Py_DECREF(init);
        if (on < 0) {
            rc = -1;
        } else if (on) {
            PyObject *s = PyObject_CallMethodObjArgs(cuda, s_current_stream, NULL);
            rc = s ? stream_handle(s, out, "torch.cuda.current_stream()") : -1;
            Py_XDECREF(s);
        }
    }
    Py_DECREF(cuda);
    return rc;
}

/* Read a stream argument: *is_auto for None, else *out. */
static int parse_stream(PyObject *arg, void **out, int *is_auto, const char *fn) {
    *out = NULL;
    *is_auto = !arg || arg == Py_None;
    return *is_auto ? 0 : stream_handle(arg, out, fn);
}

/* -------------------------------------------------------------- GpuZone */

static PyMethodDef gpu_enter_def;
static PyMethodDef gpu_exit_def;

static PyObject *gpu_zone_new_object(struct sps_site *site, PyObject *name) {
    GpuZoneObject *g = (GpuZoneObject *)PyType_GenericAlloc(gpu_zone_type, 0); /* tracked by the GC */
    if (!g)
        return NULL;
    g->z.site = site;
    Py_INCREF(name);
    g->z.name = name;
    Py_INCREF(Py_None);
    g->stream_arg = Py_None;
    g->stream_auto = 1;
    g->z.enter_fn = PyCFunction_NewEx(&gpu_enter_def, (PyObject *)g, NULL);
    g->z.exit_fn = PyCFunction_NewEx(&gpu_exit_def, (PyObject *)g, NULL);
    if (!g->z.enter_fn || !g->z.exit_fn) {
        Py_DECREF(g);
        return NULL;
    }
    return (PyObject *)g;
}

/* A GpuZone for name that nobody else is using, with its stream set.
 * Returns a new reference, or NULL with an exception set. */
static PyObject *gpu_zone_for(PyObject *name, PyObject *stream_arg) {
    void *stream;
    int is_auto;
    if (parse_stream(stream_arg, &stream, &is_auto, "stepscope.gpu_zone()") < 0)
        return NULL;
    PyObject *g = PyDict_GetItemWithError(gpu_zone_cache, name); /* borrowed */
    if (g && sps_py_zone_is_free((ZoneObject *)g)) {
        Py_INCREF(g);
    } else {
        struct sps_site *site = NULL;
        if (g) {
            site = ((ZoneObject *)g)->site;
        } else {
            PyErr_Clear(); /* an unhashable name: the site says what is wrong */
            site = sps_py_cached_site(gpu_sites, name, SPS_KIND_ZONE, "gpu_zone");
            if (!site)
                return NULL;
        }
        /* in use, or new: a fresh one becomes the cached one (zone.c) */
        g = gpu_zone_new_object(site, name);
        if (g && PyDict_SetItem(gpu_zone_cache, name, g) < 0)
            Py_CLEAR(g);
        if (!g)
            return NULL;
    }
    GpuZoneObject *gz = (GpuZoneObject *)g;
    PyObject *old = gz->stream_arg;
    PyObject *arg = stream_arg ? stream_arg : Py_None;
    Py_INCREF(arg);
    gz->stream_arg = arg;
    Py_DECREF(old);
    gz->stream = stream;
    gz->stream_auto = is_auto;
    return g;
}

PyObject *sps_py_gpu_zone(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"name", "stream", NULL};
    PyObject *name, *stream = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:gpu_zone", kwlist, &name, &stream))
        return NULL;
    return gpu_zone_for(name, stream);
}

static PyObject *gpu_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    GpuZoneObject *g = (GpuZoneObject *)self;
    if (g->z.open) {
        PyErr_Format(PyExc_RuntimeError,
                     "stepscope.gpu_zone(%R) is already open: a zone object times one block at a time "
                     "(call stepscope.gpu_zone() for each with)",
                     g->z.name);
        return NULL;
    }
    g->token = 0;
    if (!sps_py_skip_site(SPS_PY_NOTE_ZONE, g->z.site)) {
        void *stream = g->stream;
        if (g->stream_auto && current_stream(&stream) < 0)
            return NULL;
        g->token = sps_gpu_zone_begin(g->z.site, stream);
        sps_py_note(SPS_PY_NOTE_ZONE);
    }
    g->z.open = 1;
    Py_INCREF(self);
    return self;
}

/* __exit__, in both conventions (zone.c's zone_exit says why). */
static PyObject *gpu_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)args; /* the exception, if any, propagates: we return None */
    (void)nargs;
    GpuZoneObject *g = (GpuZoneObject *)self;
    if (g->z.open) {
        sps_gpu_zone_end(g->token); /* 0 is ignored */
        g->token = 0;
        g->z.open = 0;
    }
    Py_RETURN_NONE;
}

static PyObject *gpu_exit_varargs(PyObject *self, PyObject *args) {
    (void)args;
    return gpu_exit(self, NULL, 0);
}

/* @stepscope.gpu_zone("name"): stepscope._decorate makes the wrapper. */
static PyObject *gpu_zone_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    GpuZoneObject *g = (GpuZoneObject *)self;
    return sps_py_decorate("stepscope.gpu_zone", g->z.name, args, kwargs, g->stream_arg);
}

static PyObject *gpu_zone_repr(PyObject *self) {
    GpuZoneObject *g = (GpuZoneObject *)self;
    const char *open = g->z.open ? " (open)" : "";
    if (g->stream_auto)
        return PyUnicode_FromFormat("<stepscope.gpu_zone %R stream=current%s>", g->z.name, open);
    return PyUnicode_FromFormat("<stepscope.gpu_zone %R stream=%p%s>", g->z.name, g->stream, open);
}

static PyObject *gpu_zone_get_stream(PyObject *self, void *closure) {
    (void)closure;
    GpuZoneObject *g = (GpuZoneObject *)self;
    if (g->stream_auto)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)g->stream);
}

static PyObject *gpu_no_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)type;
    (void)args;
    (void)kwargs;
    PyErr_SetString(PyExc_TypeError, "use stepscope.gpu_zone(name, stream=None)");
    return NULL;
}

static int gpu_zone_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((GpuZoneObject *)self)->stream_arg); /* a Stream may refer back to anything */
    return sps_py_zone_traverse(self, visit, arg);
}

static int gpu_zone_clear(PyObject *self) {
    Py_CLEAR(((GpuZoneObject *)self)->stream_arg);
    return sps_py_zone_clear(self);
}

static void gpu_zone_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    gpu_zone_clear(self);
    Py_XDECREF(((GpuZoneObject *)self)->z.name);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyMethodDef gpu_enter_def = {"__enter__", gpu_enter, METH_NOARGS,
                                    "Begin the zone and record its start event on the stream."};
static PyMethodDef gpu_exit_def = {"__exit__", gpu_exit_varargs, METH_VARARGS,
                                   "Record the end event and end the zone; exceptions propagate."};

static PyGetSetDef gpu_zone_getset[] = {
    {"name", sps_py_zone_get_name, NULL, "the zone's name", NULL},
    {"stream", gpu_zone_get_stream, NULL, "the CUstream handle (an int), or None: the current stream", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot gpu_zone_slots[] = {
    {Py_tp_doc, "A zone timed on the CPU and, by CUDA events on a stream, on the GPU: "
                "`with stepscope.gpu_zone(name):` or `@stepscope.gpu_zone(name)`."},
    {Py_tp_new, gpu_no_new},
    {Py_tp_dealloc, gpu_zone_dealloc},
    {Py_tp_traverse, gpu_zone_traverse},
    {Py_tp_clear, gpu_zone_clear},
    {Py_tp_getset, gpu_zone_getset},
    {Py_tp_call, gpu_zone_call},
    {Py_tp_repr, gpu_zone_repr},
    {0, NULL},
};

static PyType_Spec gpu_zone_spec = {"stepscope._stepscope.GpuZone", sizeof(GpuZoneObject), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, gpu_zone_slots};

/* ------------------------------------------------------------ low level */

PyObject *sps_py_gpu_zone_begin(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"name", "stream", NULL};
    PyObject *name, *arg = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:gpu_zone_begin", kwlist, &name, &arg))
        return NULL;
    struct sps_site *site = sps_py_cached_site(gpu_sites, name, SPS_KIND_ZONE, "gpu_zone_begin");
    if (!site)
        return NULL;
    void *stream;
    int is_auto;
    if (parse_stream(arg, &stream, &is_auto, "stepscope.gpu_zone_begin()") < 0)
        return NULL;
    int face = sps_py_face_of(self);
    if (sps_py_skip_site(face == SPS_PY_FACE_HOOKS ? SPS_PY_NOTE_HOOK_ZONE : SPS_PY_NOTE_ZONE, site))
        return PyLong_FromLong(0);
    if (is_auto && current_stream(&stream) < 0)
        return NULL;
    sps_gpu_zone_t t = sps_gpu_zone_begin(site, stream);
    sps_py_note(face == SPS_PY_FACE_HOOKS ? SPS_PY_NOTE_HOOK_ZONE : SPS_PY_NOTE_ZONE);
    return PyLong_FromUnsignedLongLong(t);
}

PyObject *sps_py_gpu_zone_end(PyObject *self, PyObject *token) {
    (void)self;
    if (!PyLong_Check(token)) {
        sps_py_type_error("stepscope.gpu_zone_end(): the token", "an int", token);
        return NULL;
    }
    unsigned long long t = PyLong_AsUnsignedLongLong(token);
    if (t == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "stepscope.gpu_zone_end(): %R is not a token from gpu_zone_begin()", token);
        return NULL;
    }
    sps_gpu_zone_end((sps_gpu_zone_t)t); /* 0 is ignored */
    Py_RETURN_NONE;
}

/* ------------------------------------------------------- status, flush */

PyObject *sps_py_gpu_flush(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(sps_gpu_flush());
}

static PyObject *new_none(void) {
    Py_INCREF(Py_None);
    return Py_None;
}

PyObject *sps_py_cuda_status(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    struct sps_cuda_status s;
    Py_BEGIN_ALLOW_THREADS /* the first call loads libcuda and calls cuInit */
    (void)sps_cuda_status(&s);
    Py_END_ALLOW_THREADS
    PyObject *d = PyDict_New();
    if (!d || sps_py_put(d, "available", PyBool_FromLong(s.available)) < 0 ||
        sps_py_put(d, "driver_version", s.driver_version ? PyLong_FromLong(s.driver_version) : new_none()) < 0 ||
        sps_py_put(d, "reason", s.reason[0] ? PyUnicode_DecodeUTF8(s.reason, (Py_ssize_t)strlen(s.reason), "replace")
                                     : new_none()) < 0 ||
        sps_py_put(d, "resolved", PyLong_FromUnsignedLongLong(s.resolved)) < 0 ||
        sps_py_put(d, "cpu_only", PyLong_FromUnsignedLongLong(s.cpu_only)) < 0 ||
        sps_py_put(d, "dropped", PyLong_FromUnsignedLongLong(s.dropped)) < 0 ||
        sps_py_put(d, "unresolved", PyLong_FromUnsignedLongLong(s.unresolved)) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* ------------------------------------------------- spans, waiting flush */

/* _gpu_spans(since=0) -> [(seq, name, stream, start_ns, end_ns, gpu_ms)]:
 * the calling thread's resolved GPU spans after seq `since`, oldest first
 * (sps_gpu_spans_since: the latest 1024 are kept, a gap in seq is a loss;
 * start_ns/end_ns on _clock_ns()'s clock, 0 and 0 when not placed); stream
 * the CUstream handle, 0 the legacy default stream.  For CUDATimer and
 * StreamProfiler (python/stepscope/gpu_tools.py). */
static PyObject *py_gpu_spans(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"since", NULL};
    PyObject *arg = NULL;
    unsigned long long since = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:_gpu_spans", kwlist, &arg))
        return NULL;
    if (arg) {
        if (!PyLong_Check(arg) || PyBool_Check(arg)) {
            sps_py_type_error("stepscope._gpu_spans(): since", "an int (a span's seq, 0 for all)", arg);
            return NULL;
        }
        since = PyLong_AsUnsignedLongLong(arg);
        if (since == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "stepscope._gpu_spans(): since must be a seq >= 0, not %R", arg);
            return NULL;
        }
    }
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    struct sps_gpu_span chunk[64];
    size_t n;
    do {
        n = sps_gpu_spans_since(since, chunk, sizeof chunk / sizeof chunk[0]);
        for (size_t i = 0; i < n; i++) {
            const struct sps_gpu_span *g = &chunk[i];
            const char *name = g->site && g->site->name ? g->site->name : "";
            PyObject *t = Py_BuildValue("(KNKKKd)", (unsigned long long)g->seq,
                                        PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace"),
                                        (unsigned long long)(uintptr_t)g->stream, (unsigned long long)g->start_ns,
                                        (unsigned long long)g->end_ns, g->gpu_ms);
            if (!t || PyList_Append(list, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(list);
                return NULL;
            }
            Py_DECREF(t);
            since = g->seq;
        }
    } while (n == sizeof chunk / sizeof chunk[0]);
    return list;
}

/* The longest gpu_wait(): timeout=None waits this long at most. */
#define GPU_WAIT_MAX_S 86400.0
/* Each slice of the wait releases the GIL; signals are checked between
 * them, so Ctrl-C interrupts a long wait. */
#define GPU_WAIT_SLICE_S 0.1

/* gpu_wait(timeout=None) -> int: resolve the calling thread's pending GPU
 * zones, polling without synchronising, until none is pending or timeout
 * seconds pass (None: up to a day); how many are still pending. */
static PyObject *py_gpu_wait(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"timeout", NULL};
    PyObject *arg = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:gpu_wait", kwlist, &arg))
        return NULL;
    double timeout = GPU_WAIT_MAX_S;
    if (arg != Py_None) {
        if (PyBool_Check(arg) || !(PyLong_Check(arg) || PyFloat_Check(arg))) {
            sps_py_type_error("stepscope.gpu_wait(): timeout", "None or a number of seconds", arg);
            return NULL;
        }
        timeout = PyFloat_AsDouble(arg);
        if (timeout == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(timeout >= 0)) {
            PyErr_Format(PyExc_ValueError, "stepscope.gpu_wait(): timeout must be >= 0 seconds or None, not %R", arg);
            return NULL;
        }
        if (timeout > GPU_WAIT_MAX_S)
            timeout = GPU_WAIT_MAX_S;
    }
    double left = timeout;
    int pending;
    for (;;) {
        double slice = left < GPU_WAIT_SLICE_S ? left : GPU_WAIT_SLICE_S;
        Py_BEGIN_ALLOW_THREADS
        pending = sps_gpu_wait(slice);
        Py_END_ALLOW_THREADS
        left -= slice;
        if (!pending || left <= 0)
            break;
        if (PyErr_CheckSignals() < 0)
            return NULL;
    }
    return PyLong_FromLong(pending);
}

/* _cuda_mem_info() -> (free, total) bytes of the current CUDA context's
 * device (sps_cuda_mem_info), or RuntimeError with the library's reason. */
static PyObject *py_cuda_mem_info(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    uint64_t free_b = 0, total_b = 0;
    char why[256] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = sps__cuda_mem_info(&free_b, &total_b, why, sizeof why);
    Py_END_ALLOW_THREADS
    if (rc) {
        PyErr_Format(PyExc_RuntimeError, "CUDA device memory unavailable: %s", why);
        return NULL;
    }
    return Py_BuildValue("(KK)", (unsigned long long)free_b, (unsigned long long)total_b);
}

/* _cuda_context() -> int: the calling thread's current CUDA context (0:
 * none); _cuda_use_context(handle): make it current on the calling thread.
 * RuntimeError with the reason when libcuda (or the call) is missing. */
static PyObject *py_cuda_context(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    void *ctx = NULL;
    char why[256] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = sps__cuda_context(&ctx, why, sizeof why);
    Py_END_ALLOW_THREADS
    if (rc) {
        PyErr_SetString(PyExc_RuntimeError, why);
        return NULL;
    }
    return PyLong_FromVoidPtr(ctx);
}

static PyObject *py_cuda_use_context(PyObject *self, PyObject *arg) {
    (void)self;
    void *ctx = PyLong_AsVoidPtr(arg);
    if (!ctx && PyErr_Occurred())
        return NULL;
    char why[256] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = sps__cuda_use_context(ctx, why, sizeof why);
    Py_END_ALLOW_THREADS
    if (rc) {
        PyErr_Format(PyExc_RuntimeError, "cannot make the CUDA context current: %s", why);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef gpu_span_methods[] = {
    {"_cuda_context", py_cuda_context, METH_NOARGS,
     "_cuda_context() -> int: the calling thread's current CUDA context handle (0: none)."},
    {"_cuda_use_context", py_cuda_use_context, METH_O,
     "_cuda_use_context(handle): make the CUDA context handle (from _cuda_context()) current on the calling thread."},
    {"_cuda_mem_info", py_cuda_mem_info, METH_NOARGS,
     "_cuda_mem_info() -> (free, total): bytes of the device of the calling thread's current CUDA context "
     "(cuMemGetInfo_v2; used = total - free counts every process on the device); RuntimeError with the reason "
     "when libcuda, the call or a current context is missing.  Never synchronises."},
    {"_gpu_spans", (PyCFunction)(void (*)(void))py_gpu_spans, METH_VARARGS | METH_KEYWORDS,
     "_gpu_spans(since=0) -> list of (seq, name, stream, start_ns, end_ns, gpu_ms): the calling thread's resolved "
     "GPU zones after seq since, placed on the GPU's timeline (ns on _clock_ns()'s clock; stream 0: the legacy "
     "default stream), oldest first; the latest 1024 are kept."},
    {"gpu_wait", (PyCFunction)(void (*)(void))py_gpu_wait, METH_VARARGS | METH_KEYWORDS,
     "gpu_wait(timeout=None) -> int: resolve the calling thread's GPU zones, polling (never synchronising) until "
     "none is pending or timeout seconds pass (None: up to a day); how many are still pending."},
    {NULL, NULL, 0, NULL},
};

/* ----------------------------------------------------------------- init */

int sps_py_gpu_zone_init(PyObject *module) {
    if (sps_py_runtime_version() >= 0x030a) {
        gpu_exit_def.ml_meth = (PyCFunction)(void (*)(void))gpu_exit;
        gpu_exit_def.ml_flags = SPS_METH_FASTCALL;
    }
    gpu_zone_type = (PyTypeObject *)PyType_FromSpec(&gpu_zone_spec);
    if (!gpu_zone_type || sps_py_add_zone_methods(gpu_zone_type, "stepscope.gpu_zone") < 0)
        return -1;
    gpu_zone_cache = PyDict_New();
    gpu_sites = PyDict_New();
    s_torch = PyUnicode_InternFromString("torch");
    s_cuda = PyUnicode_InternFromString("cuda");
    s_is_initialized = PyUnicode_InternFromString("is_initialized");
    s_current_stream = PyUnicode_InternFromString("current_stream");
    if (!gpu_zone_cache || !gpu_sites || !s_torch || !s_cuda || !s_is_initialized || !s_current_stream)
        return -1;
    if (PyModule_AddFunctions(module, gpu_span_methods) < 0)
        return -1;
    Py_INCREF(gpu_zone_type);
    if (PyModule_AddObject(module, "GpuZone", (PyObject *)gpu_zone_type) < 0) {
        Py_DECREF(gpu_zone_type);
        return -1;
    }
    return 0;
}
