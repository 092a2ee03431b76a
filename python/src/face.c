/*
 * face.c - what the Python face of the library costs, for the report.
 *
 * A record says how many zones and values each thread recorded, not who
 * made the call: C code through SPS_ZONE, Python code through this module,
 * or stepscope.torch.instrument's hooks.  A Python zone costs several times
 * the library's begin+end (the call into the module, the `with` statement,
 * the lookups), and instrument's hooks cost more again, so the report
 * prices each face apart (docs/analysis.md, "overhead").  This file
 *
 *  - counts what each face recorded into the record's header (the py_* and
 *    hook_* fields, docs/record-format.md): every begin, value and count
 *    made while recording is on, whether or not the overhead guard's thin
 *    level then left the zone out (the Python work is paid either way);
 *  - keeps the costs of this module's own work that the process measured
 *    (stepscope/_cost.py: at import for zones, values and counts, at
 *    instrument() for its hooks) and writes them next to the counts, into
 *    each record the process opens (a fork child opens its own);
 *  - gives the measuring code a switch, per thread: while it is on, the
 *    module's calls on that thread do all of their own work but skip the
 *    library's (nothing is recorded, nothing is counted in the record), so
 *    timing them measures what Python adds to the library's cost, which
 *    `stepscope run` measures on its own at the run's end.
 *
 * instrument's hooks call the module through instrument_face, a second
 * module object with the same functions: the functions tell the faces
 * apart by their self.
 *
 * Everything here runs with the GIL held: the counts are plain increments.
 */
#include "ext.h"

#include <pthread.h>
#include <string.h>

#include "record_format.h"
#include "recorder.h"

int sps_py_calibration_on;
__thread int sps_py_calibrating __attribute__((tls_model("initial-exec")));
uint64_t sps_py_calibrated[SPS_PY_NOTES];
static int calibrating_threads; /* how many threads have it on */

static PyObject *main_module;   /* borrowed: the module owns the face */
static PyObject *hooks_face;    /* _stepscope.instrument_face */
static double costs[4];         /* ns: zone, value, count, hook zone; 0 not measured */
static struct sps_rec_header *costs_in; /* the header the costs were last written into */

int sps_py_face_of(PyObject *self) {
    return self == hooks_face ? SPS_PY_FACE_HOOKS : SPS_PY_FACE_USER;
}

static void write_costs(struct sps_rec_header *h) {
    h->py_zone_ns = costs[0];
    h->py_value_ns = costs[1];
    h->py_count_ns = costs[2];
    h->hook_zone_ns = costs[3];
    sps_py_auto_write(h);
    costs_in = h;
}

void sps_py_note(enum sps_py_note what) {
    struct sps_rec_header *h = sps__recorder_header();
    if (!h)
        return; /* nothing recorded: recording failed or is off */
    if (h != costs_in)
        write_costs(h);
    switch (what) {
    case SPS_PY_NOTE_ZONE: h->py_zones++; break;
    case SPS_PY_NOTE_VALUE: h->py_values++; break;
    case SPS_PY_NOTE_COUNT: h->py_counts++; break;
    case SPS_PY_NOTE_HOOK_ZONE: h->hook_zones++; break;
    case SPS_PY_NOTE_HOOK_COUNT: h->hook_counts++; break;
    default: break;
    }
}

void sps_py_unnote_zone(int face) {
    struct sps_rec_header *h = sps__recorder_header();
    if (!h)
        return;
    if (face == SPS_PY_FACE_HOOKS) {
        if (h->hook_zones)
            h->hook_zones--;
    } else if (h->py_zones) {
        h->py_zones--;
    }
}

/* A fork child's first note writes the costs into its own record. */
static void forget_header(void) {
    costs_in = NULL;
}

/* _calibrate(on) -> (zones, values, counts, hook_zones, hook_counts): turn
 * the calling thread's calibration on or off; the tuple is what the module
 * skipped since it was last turned on, on every thread that calibrated. */
static PyObject *calibrate(PyObject *self, PyObject *flag) {
    (void)self;
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
    PyObject *r = Py_BuildValue("(KKKKK)", (unsigned long long)sps_py_calibrated[SPS_PY_NOTE_ZONE],
                                (unsigned long long)sps_py_calibrated[SPS_PY_NOTE_VALUE],
                                (unsigned long long)sps_py_calibrated[SPS_PY_NOTE_COUNT],
                                (unsigned long long)sps_py_calibrated[SPS_PY_NOTE_HOOK_ZONE],
                                (unsigned long long)sps_py_calibrated[SPS_PY_NOTE_HOOK_COUNT]);
    if (on)
        memset(sps_py_calibrated, 0, sizeof sps_py_calibrated);
    if (on != sps_py_calibrating)
        calibrating_threads += on ? 1 : -1;
    sps_py_calibrating = on;
    sps_py_slow_path_update();
    return r;
}

void sps_py_slow_path_update(void) {
    sps_py_calibration_on = calibrating_threads > 0 || sps_py_auto_armed;
}

int sps_py_skip_slow(enum sps_py_note what, const struct sps_site *site) {
    if (sps_py_calibrating) {
        sps_py_calibrated[what]++;
        return 1;
    }
    /* the script's own begin (not a hooks face's): auto steps aside first */
    if (what == SPS_PY_NOTE_ZONE && sps_py_auto_armed)
        sps_py_auto_user_began(site);
    return 0;
}

/* _set_costs(zone_ns=, value_ns=, count_ns=, hook_zone_ns=): what this
 * process measured (ns, > 0; a cost not given is kept). */
static PyObject *set_costs(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"zone_ns", "value_ns", "count_ns", "hook_zone_ns", NULL};
    double got[4] = {-1, -1, -1, -1};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|dddd:_set_costs", kwlist, &got[0], &got[1], &got[2], &got[3]))
        return NULL;
    for (int i = 0; i < 4; i++) {
        if (got[i] == -1)
            continue;
        if (!(got[i] > 0 && got[i] < 1e9)) {
            PyErr_Format(PyExc_ValueError, "stepscope._set_costs(): %s must be a positive number of ns", kwlist[i]);
            return NULL;
        }
    }
    for (int i = 0; i < 4; i++)
        if (got[i] != -1)
            costs[i] = got[i];
    struct sps_rec_header *h = sps__recorder_header();
    if (h)
        write_costs(h);
    else
        costs_in = NULL;
    Py_RETURN_NONE;
}

/* _costs() -> dict: the costs this process measured (None: not measured),
 * and the recorder's samples of a zone end's cost in this process's record
 * so far (end_samples, end_ns_mean: None without a sample). */
static PyObject *get_costs(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    static const char *keys[4] = {"zone_ns", "value_ns", "count_ns", "hook_zone_ns"};
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < 4; i++) {
        PyObject *v = costs[i] > 0 ? PyFloat_FromDouble(costs[i]) : (Py_INCREF(Py_None), Py_None);
        if (sps_py_put(d, keys[i], v) < 0)
            Py_CLEAR(d);
    }
    const struct sps_rec_header *h = sps__recorder_header();
    uint64_t n = h ? __atomic_load_n(&h->end_samples, __ATOMIC_RELAXED) : 0;
    uint64_t ns = h ? __atomic_load_n(&h->end_ns, __ATOMIC_RELAXED) : 0;
    if (d && (sps_py_put(d, "end_samples", PyLong_FromUnsignedLongLong(n)) < 0 ||
              sps_py_put(d, "end_ns_mean", n ? PyFloat_FromDouble((double)ns / (double)n)
                                             : (Py_INCREF(Py_None), Py_None)) < 0))
        Py_CLEAR(d);
    return d;
}

/* instrument_face.__getattr__: whatever the face does not define itself. */
static PyObject *face_getattr(PyObject *self, PyObject *name) {
    (void)self;
    return PyObject_GetAttr(main_module, name);
}

static PyMethodDef face_methods[] = {
    {"zone_begin", sps_py_zone_begin, METH_O, "zone_begin(name) -> int token, counted as instrument's."},
    {"zone_end", sps_py_zone_end, METH_O, "zone_end(token)"},
    {"wait_begin", sps_py_wait_begin, METH_O, "wait_begin(name) -> int token, counted as instrument's."},
    {"wait_record", sps_py_wait_record, METH_VARARGS, "wait_record(name, start, end), counted as instrument's."},
    {"phase", sps_py_phase, METH_O, "phase(name): a chained phase, counted as instrument's."},
    {"phase_end", sps_py_phase_end, METH_NOARGS, "phase_end()"},
    {"_zone_discard", sps_py_zone_discard, METH_O, "_zone_discard(token): instrument's provisional zone taken back."},
    {"step_begin", sps_py_step_begin, METH_NOARGS, "step_begin() -> int token, counted as instrument's."},
    {"microstep_begin", sps_py_microstep_begin, METH_NOARGS, "microstep_begin() -> int token, counted as instrument's."},
    {"count", (PyCFunction)(void (*)(void))sps_py_count, METH_VARARGS | METH_KEYWORDS,
     "count(name, n=1), counted as instrument's."},
    {"record", (PyCFunction)(void (*)(void))sps_py_record, METH_VARARGS | METH_KEYWORDS,
     "record(name, value, *, at_ns=None), counted as instrument's (with its counts)."},
    {"gpu_zone_begin", (PyCFunction)(void (*)(void))sps_py_gpu_zone_begin, METH_VARARGS | METH_KEYWORDS,
     "gpu_zone_begin(name, stream=None) -> int token, counted as instrument's."},
    {"gpu_zone_end", sps_py_gpu_zone_end, METH_O, "gpu_zone_end(token)"},
    {"__getattr__", face_getattr, METH_O, "The rest of _stepscope."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef face_def = {
    PyModuleDef_HEAD_INIT, "stepscope._stepscope.instrument_face",
    "_stepscope's calls as stepscope.torch.instrument makes them: the same functions, whose zones and counts the "
    "record counts as the hooks'.",
    -1, face_methods, NULL, NULL, NULL, NULL,
};

static PyMethodDef methods[] = {
    {"_calibrate", calibrate, METH_O,
     "_calibrate(on) -> tuple: skip the library's work on this thread while on (to measure the module's own)."},
    {"_set_costs", (PyCFunction)(void (*)(void))set_costs, METH_VARARGS | METH_KEYWORDS,
     "_set_costs(zone_ns=, value_ns=, count_ns=, hook_zone_ns=): the module's own costs, measured."},
    {"_costs", get_costs, METH_NOARGS, "_costs() -> dict of the module's own costs (None: not measured)."},
    {NULL, NULL, 0, NULL},
};

int sps_py_face_init(PyObject *module) {
    main_module = module;
    if (PyModule_AddFunctions(module, methods) < 0)
        return -1;
    hooks_face = PyModule_Create(&face_def);
    if (!hooks_face)
        return -1;
    if (PyModule_AddObject(module, "instrument_face", hooks_face) < 0) {
        Py_DECREF(hooks_face);
        return -1;
    }
    pthread_atfork(NULL, NULL, forget_header);
    return 0;
}
