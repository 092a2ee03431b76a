/*
 * module.c - the _stepscope module: its method table and init.  The public
 * face is the stepscope package (python/stepscope/__init__.py), which
 * re-exports these and adds what is better written in Python (the
 * decorator, configure(), the exit hook).
 */
#include "ext.h"

static PyObject *set_enabled(PyObject *self, PyObject *flag) {
    (void)self;
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
    sps_set_enabled(on);
    Py_RETURN_NONE;
}

static PyObject *is_enabled(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(sps_is_enabled());
}

static PyObject *thread_name(PyObject *self, PyObject *name) {
    (void)self;
    PyObject *bytes = PyUnicode_Check(name) ? PyUnicode_AsUTF8String(name) : NULL;
    if (!bytes) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "stepscope.thread_name(): the name must be a str");
        return NULL;
    }
    sps_thread_name(PyBytes_AsString(bytes));
    Py_DECREF(bytes);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"zone", sps_py_zone, METH_O,
     "zone(name) -> Zone: `with zone(name):` times the block; `@zone(name)` times every call."},
    {"step", sps_py_step, METH_NOARGS,
     "step() -> Step: begin a step now; it ends when the with block exits, or, called bare, at the next step()."},
    {"microstep", sps_py_microstep, METH_NOARGS, "microstep() -> Step: like step(), for a micro-step."},
    {"record", (PyCFunction)(void (*)(void))sps_py_record, METH_VARARGS | METH_KEYWORDS,
     "record(name, value, *, at_ns=None): record a number (e.g. the loss); at_ns: the time it was read, on "
     "clock_ns()'s clock (sps_value_at), for a reading taken earlier."},
    {"clock_ns", sps_py_clock_ns, METH_NOARGS,
     "clock_ns() -> int: the record's clock in ns (CLOCK_MONOTONIC), for record(..., at_ns=)."},
    {"count", (PyCFunction)(void (*)(void))sps_py_count, METH_VARARGS | METH_KEYWORDS,
     "count(name, n=1): add n (an int >= 0) to a counter."},
    {"capture", (PyCFunction)(void (*)(void))sps_py_capture, METH_VARARGS | METH_KEYWORDS,
     "capture(gpu=0, fresh=False) -> dict of the latest machine readings (None: unavailable)."},
    {"status", sps_py_status, METH_NOARGS, "status() -> dict: this process's recording state."},
    {"metrics", sps_py_metrics, METH_NOARGS, "metrics() -> list of dicts: the metric catalogue."},
    {"write_report", sps_py_write_report, METH_O, "write_report(dir): write dir/report.json for this process now."},
    {"set_enabled", set_enabled, METH_O, "set_enabled(flag): turn recording on or off for the whole process."},
    {"is_enabled", is_enabled, METH_NOARGS, "is_enabled() -> bool"},
    {"thread_name", thread_name, METH_O, "thread_name(name): name the calling thread in the record."},
    {"phase", sps_py_phase, METH_O,
     "phase(name): end the calling thread's open phase and begin `name`, at one timestamp; the end of the "
     "innermost open step, micro-step or zone ends its open phase."},
    {"phase_end", sps_py_phase_end, METH_NOARGS, "phase_end(): end the calling thread's open phase, beginning none."},
    {"zone_begin", sps_py_zone_begin, METH_O, "zone_begin(name) -> int token (0: nothing recorded)."},
    {"wait", sps_py_wait, METH_O,
     "wait(name) -> Zone: `with wait(name):` times the block as a wait (time blocked on peers: a collective); "
     "it nests like a zone, so the enclosing zone's self time excludes it."},
    {"wait_begin", sps_py_wait_begin, METH_O, "wait_begin(name) -> int token (0: nothing recorded); end it with zone_end."},
    {"wait_record", sps_py_wait_record, METH_VARARGS,
     "wait_record(name, start, end): record on the calling thread a wait that lasted from start to end "
     "(clock_now() timestamps, taken on any thread), inside the thread's innermost open zone."},
    {"clock_now", sps_py_clock_now, METH_NOARGS, "clock_now() -> int: the library's clock, in its ticks (for wait_record)."},
    {"_ddp_completed", sps_py_ddp_completed, METH_VARARGS,
     "_ddp_completed(state, unpack, fut): DDP's hook's Future.then callback: state.done = clock_now() where later, "
     "then fut.value() ([0] where unpack); a failed future's error passes through as torch raised it."},
    {"zone_end", sps_py_zone_end, METH_O, "zone_end(token): end what zone_begin/step_begin/microstep_begin began."},
    {"step_begin", sps_py_step_begin, METH_NOARGS, "step_begin() -> int token: begin a step, no pending bookkeeping."},
    {"microstep_begin", sps_py_microstep_begin, METH_NOARGS, "microstep_begin() -> int token."},
    {"_zone_discard", sps_py_zone_discard, METH_O,
     "_zone_discard(token): take back the innermost open zone/step/micro-step unrecorded."},
    {"_end_pending", sps_py_end_pending, METH_NOARGS, "End the calling thread's bare step and micro-step."},
    {"gpu_zone", (PyCFunction)(void (*)(void))sps_py_gpu_zone, METH_VARARGS | METH_KEYWORDS,
     "gpu_zone(name, stream=None) -> GpuZone: a zone timed on the CPU and, by CUDA events on stream, on the GPU "
     "(<name>.gpu_ms); None: the current stream."},
    {"gpu_zone_begin", (PyCFunction)(void (*)(void))sps_py_gpu_zone_begin, METH_VARARGS | METH_KEYWORDS,
     "gpu_zone_begin(name, stream=None) -> int token (0: nothing recorded)."},
    {"gpu_zone_end", sps_py_gpu_zone_end, METH_O, "gpu_zone_end(token): end what gpu_zone_begin began."},
    {"gpu_flush", sps_py_gpu_flush, METH_NOARGS,
     "gpu_flush() -> int: resolve the calling thread's finished GPU zones now (never waits); "
     "returns how many are still pending."},
    {"cuda_status", sps_py_cuda_status, METH_NOARGS,
     "cuda_status() -> dict: whether GPU zones can time the GPU (libcuda loads, cuInit works), why not, "
     "and the process's totals."},
    {"_last_step_json", sps_py_last_step_json, METH_NOARGS,
     "_last_step_json() -> str or None: the calling thread's last completed step as a steps.jsonl line."},
    {"_clock_ns", sps_py_clock_ns, METH_NOARGS,
     "_clock_ns() -> int: the monotonic clock as this process's record sees it (ns)."},
    {"_clock_offset_set", sps_py_clock_offset_set, METH_VARARGS,
     "_clock_offset_set(when, offset_ns, error_ns, at_ns, rounds, why=None) -> bool: store a clock-offset "
     "measurement (when 0: start, 1: end) in this process's record; False when it records nothing."},
    {"_set_gpu_peak", sps_py_torch_mem_set_peak, METH_O,
     "_set_gpu_peak(mode): \"keep\" (never reset torch's peaks) or \"step\" (reset them at each step's begin)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_stepscope",
    "The C extension behind the stepscope package (see docs/python.md).", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__stepscope(void);

PyMODINIT_FUNC PyInit__stepscope(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    if (sps_py_zone_init(m) < 0 || sps_py_gpu_zone_init(m) < 0 || sps_py_info_init(m) < 0 || sps_py_face_init(m) < 0 ||
        sps_py_auto_init(m) < 0 || sps_py_torch_mem_init(m) < 0 ||
        PyModule_AddStringConstant(m, "__version__", SPS_VERSION_STRING) < 0 ||
        PyModule_AddStringConstant(m, "LIBRARY_VERSION", SPS_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    sps_py_deep_init();
    return m;
}
