/*
 * torch_memory.c - torch.cuda's caching-allocator memory at the end of
 * each step and micro-step, recorded as values inside it.
 *
 * When the program has imported torch and torch has initialised CUDA, a
 * step's end reads the allocator's statistics for the current device the
 * way torch.cuda.memory_stats() does (torch._C._cuda_memoryStats(device):
 * host-side counters, no synchronisation) and records, before the step
 * ends, so that its row carries them:
 *
 *   torch.cuda.allocated_bytes       allocated at the step's end
 *   torch.cuda.reserved_bytes        reserved (cached) at the step's end
 *   torch.cuda.peak_allocated_bytes  the peak within the step, when known
 *   torch.cuda.peak_reserved_bytes   likewise
 *
 * Peaks.  torch keeps one peak per statistic, since the process began or
 * the script's last reset_peak_memory_stats().  Resetting it behind the
 * script's back would change what its own max_memory_allocated() says, so
 * by default it is never reset: the peak is read at the step's begin too,
 * and the step's peak is recorded only when torch's rose during the step
 * (it is then exactly the step's); otherwise it is left out of the step
 * (absent, never a guess).  A step that began before torch initialised
 * CUDA holds every allocation torch counted, so its peak is known.  With
 * STEPSCOPE_GPU_PEAK=step (stepscope.configure(gpu_peak="step"), `stepscope
 * run --gpu-peak step`) the peaks are reset at each step's begin and every
 * step's peak is exact; a micro-step's is then its step's so far, recorded
 * by the same rule as by default (when it rose during the micro-step).
 *
 * Cost.  Without torch in sys.modules: one dict lookup at a step's begin
 * and one at its end (PyImport_GetModuleDict(), no error state touched).  With a torch that has not initialised CUDA: one
 * is_initialized() call more each.  torch is never imported from here.
 *
 * Failure.  Whatever torch raises (or returns that is not the documented
 * nested dict) turns this off for the rest of the process, once, with the
 * reason kept for status(); the script's loop never sees it.
 *
 * Everything here runs with the GIL held (a step's begin and end are
 * called from Python); the begin's readings are per thread, as steps are.
 */
#include "ext.h"

#include <stdio.h>
#include <string.h>

#include "record_format.h"
#include "recorder.h"

/* The value names (docs/python.md, "GPU memory per step"). */
static const char *const value_names[SPS_PY_TORCH_MEM_VALUES] = {
    "torch.cuda.allocated_bytes",
    "torch.cuda.reserved_bytes",
    "torch.cuda.peak_allocated_bytes",
    "torch.cuda.peak_reserved_bytes",
};
enum { V_ALLOCATED, V_RESERVED, V_PEAK_ALLOCATED, V_PEAK_RESERVED };

static struct sps_site *sites[SPS_PY_TORCH_MEM_VALUES];
static PyObject *torch_key;      /* "torch" */
static PyObject *torch_module;   /* the sys.modules["torch"] the callables below are of */
static PyObject *is_initialized; /* torch.cuda.is_initialized */
static PyObject *memory_stats;   /* torch._C._cuda_memoryStats, resolved once CUDA is initialised */
static PyObject *get_device;     /* torch._C._cuda_getDevice */
static PyObject *reset_peak;     /* torch.cuda.reset_peak_memory_stats (gpu_peak="step") */
static int failed;               /* torch raised: off for the rest of the process */
static char failed_reason[300];
static int peak_per_step;        /* gpu_peak "step" */
static uint64_t steps_read, steps_peak_known; /* step (not micro-step) ends read, and those with a peak */

/* A reading: the four figures of the current device. */
struct reading {
    double v[SPS_PY_TORCH_MEM_VALUES]; /* allocated, reserved, peak allocated, peak reserved */
};

/* The peaks at the begin of the thread's open step [0] and micro-step
 * [1]; known 0: none read (no torch, or off).  last_end: the peaks the
 * thread's last step or micro-step end read (known 1), for a begin that
 * follows that end in the same call (a bare step()). */
struct peaks {
    double peak_allocated, peak_reserved;
    int known;
};
static __thread struct peaks at_begin[2] __attribute__((tls_model("initial-exec")));
static __thread struct peaks last_end[2] __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------- failure */

/* Turn reading off for good, keeping why: where (what was being done)
 * and the exception torch raised, or what (NULL: an exception is set). */
static void fail(const char *where, const char *what) {
    failed = 1;
    if (!what && PyErr_Occurred()) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *tn = type ? PyObject_GetAttrString(type, "__name__") : NULL;
        PyObject *msg = value ? PyObject_Str(value) : NULL;
        PyErr_Clear();
        PyObject *tb8 = tn && PyUnicode_Check(tn) ? PyUnicode_AsUTF8String(tn) : NULL;
        PyErr_Clear();
        PyObject *mb8 = msg && PyUnicode_Check(msg) ? PyUnicode_AsUTF8String(msg) : NULL;
        PyErr_Clear();
        snprintf(failed_reason, sizeof failed_reason, "%s raised %s: %s", where,
                 tb8 ? PyBytes_AsString(tb8) : "an exception", mb8 ? PyBytes_AsString(mb8) : "");
        Py_XDECREF(tb8);
        Py_XDECREF(mb8);
        Py_XDECREF(tn);
        Py_XDECREF(msg);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    } else {
        snprintf(failed_reason, sizeof failed_reason, "%s: %s", where, what ? what : "failed");
    }
    PyErr_Clear();
    Py_CLEAR(torch_module);
    Py_CLEAR(is_initialized);
    Py_CLEAR(memory_stats);
    Py_CLEAR(get_device);
    Py_CLEAR(reset_peak);
}

/* ------------------------------------------------------------- reading */

/* A new reference to one of the callables above, or NULL when reading
 * is off.  Each call into torch runs Python code, during which another
 * thread may run its own step's end: if torch fails there, fail() clears
 * the callables, so a caller holds its own references across its calls. */
static PyObject *hold(PyObject *callable) {
    if (failed || !callable)
        return NULL;
    Py_INCREF(callable);
    return callable;
}

/* getattr(getattr(obj, a), b), or NULL with an exception set. */
static PyObject *attr2(PyObject *obj, const char *a, const char *b) {
    PyObject *x = PyObject_GetAttrString(obj, a);
    if (!x)
        return NULL;
    PyObject *y = PyObject_GetAttrString(x, b);
    Py_DECREF(x);
    return y;
}

/* sys.modules["torch"] (borrowed), or NULL: the one dict lookup a step of
 * a program without torch pays at its begin and its end.  The
 * interpreter's own module dict, what `import` looks in; a str key sets
 * no error. */
static PyObject *torch_loaded(void) {
    return PyDict_GetItemWithError(PyImport_GetModuleDict(), torch_key);
}

/* Whether torch has initialised CUDA: 1 yes, 0 no (or no torch), -1 off
 * (failed now, or before). */
static int cuda_ready(void) {
    if (failed)
        return -1;
    PyObject *torch = torch_loaded();
    if (!torch) {
        PyErr_Clear();
        return 0;
    }
    if (torch != torch_module) {
        /* first sight of torch (or another object now stands for it) */
        Py_CLEAR(memory_stats);
        Py_CLEAR(get_device);
        Py_CLEAR(reset_peak);
        Py_CLEAR(is_initialized);
        Py_CLEAR(torch_module);
        is_initialized = attr2(torch, "cuda", "is_initialized");
        if (!is_initialized) {
            fail("torch.cuda.is_initialized", NULL);
            return -1;
        }
        Py_INCREF(torch);
        torch_module = torch;
    }
    PyObject *fn = is_initialized;
    Py_INCREF(fn); /* held across the call, as hold() says why */
    PyObject *r = PyObject_CallObject(fn, NULL);
    Py_DECREF(fn);
    int yes = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (yes < 0) {
        fail("torch.cuda.is_initialized()", NULL);
        return -1;
    }
    if (failed || !torch_module)
        return -1; /* torch failed on another thread meanwhile */
    if (yes && !memory_stats) {
        memory_stats = attr2(torch_module, "_C", "_cuda_memoryStats");
        get_device = memory_stats ? attr2(torch_module, "_C", "_cuda_getDevice") : NULL;
        reset_peak = get_device ? attr2(torch_module, "cuda", "reset_peak_memory_stats") : NULL;
        if (!reset_peak) {
            fail("torch's memory statistics (torch._C._cuda_memoryStats, _cuda_getDevice, "
                 "torch.cuda.reset_peak_memory_stats)",
                 NULL);
            return -1;
        }
    }
    return yes;
}

/* The keys of torch's statistics read here, made once (interned str). */
enum { K_ALLOCATED_BYTES, K_RESERVED_BYTES, K_ALL, K_CURRENT, K_PEAK, NKEYS };
static const char *const key_names[NKEYS] = {"allocated_bytes", "reserved_bytes", "all", "current", "peak"};
static PyObject *keys[NKEYS];

/* d[key] when d is a dict holding it (borrowed), else NULL; no error set. */
static PyObject *item(PyObject *d, int key) {
    PyObject *v = d && PyDict_Check(d) ? PyDict_GetItemWithError(d, keys[key]) : NULL;
    if (!v)
        PyErr_Clear();
    return v;
}

/* stats[stat]["all"][field] as a double; -1 when it is not there (what is
 * then set to why). */
static double stat_of(PyObject *stats, int stat, int field, const char **what) {
    PyObject *v = item(item(item(stats, stat), K_ALL), field);
    double d = v && PyLong_Check(v) ? PyLong_AsDouble(v) : -1;
    if (d < 0 || PyErr_Occurred()) {
        PyErr_Clear();
        *what = "torch._C._cuda_memoryStats() returned no [\"allocated_bytes\"|\"reserved_bytes\"][\"all\"]"
                "[\"current\"|\"peak\"] int";
        return -1;
    }
    return d;
}

/* The current device's index as an int object, or NULL (failed). */
static PyObject *device_now(void) {
    PyObject *fn = hold(get_device);
    if (!fn)
        return NULL;
    PyObject *dev = PyObject_CallObject(fn, NULL);
    Py_DECREF(fn);
    if (!dev)
        fail("torch._C._cuda_getDevice()", NULL);
    return dev;
}

/* callable(current device), a new reference; NULL when it failed (what
 * names the call in the kept reason) or reading is off. */
static PyObject *call_on_device(PyObject *callable, const char *what) {
    PyObject *fn = hold(callable);
    if (!fn)
        return NULL;
    PyObject *dev = device_now();
    if (!dev) {
        Py_DECREF(fn);
        return NULL;
    }
    PyObject *result = PyObject_CallFunctionObjArgs(fn, dev, NULL);
    Py_DECREF(fn);
    Py_DECREF(dev);
    if (!result)
        fail(what, NULL);
    return result;
}

/* Read the current device's figures into r.  0, or -1 (failed). */
static int read_stats(struct reading *r) {
    PyObject *stats = call_on_device(memory_stats, "torch._C._cuda_memoryStats()");
    if (!stats)
        return -1;
    const char *what = NULL;
    r->v[V_ALLOCATED] = stat_of(stats, K_ALLOCATED_BYTES, K_CURRENT, &what);
    r->v[V_RESERVED] = stat_of(stats, K_RESERVED_BYTES, K_CURRENT, &what);
    r->v[V_PEAK_ALLOCATED] = stat_of(stats, K_ALLOCATED_BYTES, K_PEAK, &what);
    r->v[V_PEAK_RESERVED] = stat_of(stats, K_RESERVED_BYTES, K_PEAK, &what);
    Py_DECREF(stats);
    if (what) {
        fail("reading torch's memory statistics", what);
        return -1;
    }
    return 0;
}

/* torch.cuda.reset_peak_memory_stats(current device).  0, or -1 (failed). */
static int reset_peaks(void) {
    PyObject *r = call_on_device(reset_peak, "torch.cuda.reset_peak_memory_stats()");
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* ----------------------------------------------------- begin and end */

void sps_py_torch_mem_begin(int micro, int after_end) {
    if (!sps__enabled)
        return;
    /* A begin in the same call as the end before it: nothing ran between
     * them, so the end's reading is the begin's (one read a step fewer:
     * torch's statistics cost about 20 us on an H100 with torch 2.11). */
    int reuse = after_end && last_end[micro].known && !(!micro && peak_per_step);
    if (reuse)
        at_begin[micro] = last_end[micro];
    last_end[micro].known = 0;
    if (reuse)
        return;
    if (!failed && !torch_loaded()) {
        /* no torch (the common case, kept to the lookup): nothing torch
         * counts has happened yet, so a peak at the end is the step's */
        at_begin[micro] = (struct peaks){0, 0, 1};
        return;
    }
    /* the error indicator is the caller's: nothing here may disturb it */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    at_begin[micro].known = 0;
    int ready = cuda_ready();
    if (ready == 0) {
        /* no allocation torch counts has happened yet: whatever peak it
         * has at the end was reached inside this step */
        at_begin[micro].peak_allocated = at_begin[micro].peak_reserved = 0;
        at_begin[micro].known = 1;
    } else if (ready > 0) {
        struct reading r;
        if (!micro && peak_per_step) {
            if (reset_peaks() == 0)
                at_begin[micro].known = 2; /* the end's peak is the step's */
        } else if (read_stats(&r) == 0) {
            at_begin[micro].peak_allocated = r.v[V_PEAK_ALLOCATED];
            at_begin[micro].peak_reserved = r.v[V_PEAK_RESERVED];
            at_begin[micro].known = 1;
        }
    }
    PyErr_Restore(type, value, tb);
}

void sps_py_torch_mem_end(int micro) {
    if (!sps__enabled)
        return;
    int known = at_begin[micro].known;
    at_begin[micro].known = 0;
    last_end[micro].known = 0;
    if (failed || !torch_loaded())
        return; /* off, or no torch: the lookup alone */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    struct reading r;
    if (cuda_ready() > 0 && read_stats(&r) == 0) {
        last_end[micro] = (struct peaks){r.v[V_PEAK_ALLOCATED], r.v[V_PEAK_RESERVED], 1};
        int peak_alloc = known == 2 || (known == 1 && r.v[V_PEAK_ALLOCATED] > at_begin[micro].peak_allocated);
        int peak_res = known == 2 || (known == 1 && r.v[V_PEAK_RESERVED] > at_begin[micro].peak_reserved);
        for (int i = 0; i < SPS_PY_TORCH_MEM_VALUES; i++)
            if (i == V_ALLOCATED || i == V_RESERVED || (i == V_PEAK_ALLOCATED && peak_alloc) ||
                (i == V_PEAK_RESERVED && peak_res))
                sps_value(sites[i], r.v[i]);
        if (!micro) {
            steps_read++;
            steps_peak_known += peak_alloc;
        }
    }
    PyErr_Restore(type, value, tb);
}

int sps_py_torch_mem_step_kind(sps_zone_t token) {
    const struct sps_rec_thread *seg = sps__recorder_thread_segment();
    if (!seg || !token || token == SPS_PY_STAND_IN_TOKEN || token > seg->depth)
        return -1;
    uint16_t kind = seg->stack[token].kind;
    return kind == SPS_KIND_STEP ? 0 : kind == SPS_KIND_MICROSTEP ? 1 : -1;
}

/* ----------------------------------------------------- state, capture */

/* _torch_memory_status() -> dict: whether step ends read torch's memory
 * statistics, why not, the peak mode and the counts (status()'s
 * "torch_cuda_memory"). */
PyObject *sps_py_torch_mem_status(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    cuda_ready(); /* as it stands now, not at the last step */
    PyErr_Restore(type, value, tb);
    const char *state = failed ? "failed" : memory_stats ? "reading" : torch_module ? "waiting for CUDA" : "no torch";
    const char *why = failed ? failed_reason
                      : memory_stats ? ""
                      : torch_module ? "torch has not initialised CUDA (torch.cuda.is_initialized() is False)"
                                     : "torch is not imported (stepscope never imports it)";
    return Py_BuildValue("{s:s,s:s,s:s,s:K,s:K}", "state", state, "reason", why, "gpu_peak",
                         peak_per_step ? "step" : "keep", "steps_read", (unsigned long long)steps_read,
                         "steps_peak_known", (unsigned long long)steps_peak_known);
}

/* _torch_memory_capture() -> dict or None: the current device's figures
 * now (capture()'s "torch_cuda"), None when torch has not initialised
 * CUDA or reading is off. */
PyObject *sps_py_torch_mem_capture(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    struct reading r;
    if (cuda_ready() <= 0)
        Py_RETURN_NONE;
    PyObject *dev = device_now();
    if (!dev || read_stats(&r) != 0) {
        Py_XDECREF(dev);
        Py_RETURN_NONE;
    }
    PyObject *d = Py_BuildValue("{s:O,s:K,s:K,s:K,s:K}", "device", dev, "allocated_bytes",
                                (unsigned long long)r.v[V_ALLOCATED], "reserved_bytes",
                                (unsigned long long)r.v[V_RESERVED], "peak_allocated_bytes",
                                (unsigned long long)r.v[V_PEAK_ALLOCATED], "peak_reserved_bytes",
                                (unsigned long long)r.v[V_PEAK_RESERVED]);
    Py_DECREF(dev);
    return d;
}

/* _set_gpu_peak(mode): "keep" (never reset torch's peaks) or "step" (reset
 * them at each step's begin).  ValueError for anything else. */
PyObject *sps_py_torch_mem_set_peak(PyObject *self, PyObject *mode) {
    (void)self;
    PyObject *b = PyUnicode_Check(mode) ? PyUnicode_AsUTF8String(mode) : NULL;
    const char *m = b ? PyBytes_AsString(b) : NULL;
    int ok = m && (!strcmp(m, "keep") || !strcmp(m, "step") || !*m);
    if (ok)
        peak_per_step = !strcmp(m, "step");
    Py_XDECREF(b);
    if (ok)
        Py_RETURN_NONE;
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "gpu_peak must be \"keep\" or \"step\", not %R", mode);
    return NULL;
}

int sps_py_torch_mem_init(PyObject *module) {
    (void)module;
    torch_key = PyUnicode_InternFromString("torch");
    if (!torch_key)
        return -1;
    for (int i = 0; i < NKEYS; i++)
        if (!(keys[i] = PyUnicode_InternFromString(key_names[i])))
            return -1;
    for (int i = 0; i < SPS_PY_TORCH_MEM_VALUES; i++)
        if (!(sites[i] = sps_site_get(value_names[i], SPS_KIND_VALUE))) {
            PyErr_NoMemory();
            return -1;
        }
    return 0;
}
