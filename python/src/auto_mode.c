/*
 * auto_mode.c - which mode records this process's steps: stepscope's
 * auto-instrumentation (stepscope/_auto.py, installed by the startup hook
 * `stepscope run` injects), stepscope.torch.instrument(), or the script's
 * own zones; and auto-instrumentation standing aside when the script turns
 * out to instrument itself.
 *
 * _auto.install() registers a callback (_set_auto_callback).  From then
 * on, the first step or micro-step the script begins through the module's
 * own face, or zone, GPU zone or phase named as one of auto's zones (a
 * zone of another name nests in auto's and counts nothing twice; values
 * and counts do not count either), or its first
 * stepscope.torch.instrument(), calls it once, before that
 * call records anything: the callback undoes auto's patches and takes back
 * auto's open step, so nothing is counted twice; or, in a DataLoader
 * worker process, returns False and auto stays (stand_aside below).  Auto
 * records through _stepscope.instrument_face, whose calls never trigger it.
 *
 * The check costs the begins nothing: every begin already tests one flag,
 * sps_py_calibration_on, for the cost measurement's slow path (ext.h's
 * sps_py_skip); while auto is armed the flag is set too, and the slow
 * path (face.c's sps_py_skip_slow) calls sps_py_auto_user_began.  The
 * reason names where in the script its first zone began (file:line of the
 * first frame outside the stepscope package).
 *
 * The state goes into the record's header (py_auto, py_auto_reason,
 * py_instrument: docs/record-format.md), into each record the process
 * opens.  Everything here runs with the GIL held.
 */
#include "ext.h"

#include <stdio.h>
#include <string.h>

#include "record_format.h"
#include "recorder.h"

int sps_py_auto_armed;

static PyObject *callback;        /* _auto's stand_aside(reason); NULL when not armed */
static uint32_t auto_state;       /* enum sps_rec_py_auto */
static uint32_t instrument_used;  /* stepscope.torch.instrument() was called */
static char auto_reason[SPS_REC_AUTO_REASON_LEN];

void sps_py_auto_write(struct sps_rec_header *h) {
    memcpy(h->py_auto_reason, auto_reason, sizeof h->py_auto_reason);
    h->py_instrument = instrument_used;
    /* the state last, with release order: a reader that sees it sees the reason */
    __atomic_store_n(&h->py_auto, auto_state, __ATOMIC_RELEASE);
}

/* Into the open record, if there is one (else the first note writes it). */
static void publish(void) {
    struct sps_rec_header *h = sps__recorder_header();
    if (h)
        sps_py_auto_write(h);
}

/* str(exc) of the exception being raised, into buf; cleared. */
static void take_exception(char *buf, size_t len) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    PyObject *b = s ? PyUnicode_AsUTF8String(s) : NULL;
    snprintf(buf, len, "%s", b ? PyBytes_AsString(b) : "an exception");
    PyErr_Clear();
    Py_XDECREF(b);
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* Whether a frame's module is the stepscope package or one of its modules. */
static int frame_is_ours(PyObject *frame) {
    PyObject *globals = PyObject_GetAttrString(frame, "f_globals");
    PyObject *name = globals ? PyMapping_GetItemString(globals, "__name__") : NULL;
    PyObject *bytes = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8String(name) : NULL;
    const char *s = bytes ? PyBytes_AsString(bytes) : NULL;
    int ours = s && (!strcmp(s, "stepscope") || !strncmp(s, "stepscope.", 10));
    Py_XDECREF(bytes);
    Py_XDECREF(name);
    Py_XDECREF(globals);
    PyErr_Clear();
    return ours;
}

/* " at FILE:LINE" of the script's code that made the current call (the
 * first frame outside the stepscope package), into buf; "" when unknown. */
static void script_location(char *buf, size_t len) {
    buf[0] = '\0';
    PyObject *getframe = PySys_GetObject("_getframe"); /* borrowed */
    PyObject *frame = getframe ? PyObject_CallFunction(getframe, "i", 0) : NULL;
    for (int depth = 0; frame && frame != Py_None && depth < 32 && frame_is_ours(frame); depth++) {
        PyObject *back = PyObject_GetAttrString(frame, "f_back");
        Py_DECREF(frame);
        frame = back;
    }
    if (frame && frame != Py_None) {
        PyObject *code = PyObject_GetAttrString(frame, "f_code");
        PyObject *file = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
        PyObject *fbytes = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8String(file) : NULL;
        PyObject *line = PyObject_GetAttrString(frame, "f_lineno");
        long lineno = line && PyLong_Check(line) ? PyLong_AsLong(line) : -1;
        const char *path = fbytes ? PyBytes_AsString(fbytes) : NULL;
        if (path) {
            const char *base = strrchr(path, '/');
            snprintf(buf, len, lineno > 0 ? " at %s:%ld" : " in %s", base ? base + 1 : path, lineno);
        }
        Py_XDECREF(line);
        Py_XDECREF(fbytes);
        Py_XDECREF(file);
        Py_XDECREF(code);
    }
    Py_XDECREF(frame);
    PyErr_Clear();
}

/* Auto stands aside: what the script did (e.g. "records steps of its own").
 * The callback is asked first: it returns False when auto stays on in this
 * process because the script's zones cannot count anything twice there (a
 * DataLoader worker, where they nest inside auto's data.fetch); the state
 * stays active, nothing is said, and no later begin asks again.  Else it
 * has undone auto (or failed to), and the state and reason are set after
 * it returned, so a reader never sees the process stood aside while auto
 * stays. */
static void stand_aside(const char *what) {
    PyObject *fn = callback;
    callback = NULL;
    sps_py_auto_armed = 0;
    sps_py_slow_path_update();
    /* the begin that called us has no exception of its own pending; keep
     * one anyway if it had */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    char where[SPS_REC_AUTO_REASON_LEN];
    script_location(where, sizeof where);
    char reason[SPS_REC_AUTO_REASON_LEN];
    snprintf(reason, sizeof reason, "the script %s%s", what, where);
    int stays = 0;
    if (fn) {
        PyObject *r = PyObject_CallFunction(fn, "s", reason);
        if (!r) {
            char why[256];
            take_exception(why, sizeof why);
            PySys_WriteStderr("stepscope: auto-instrumentation could not stand aside (%.200s): its patches may "
                              "stay, but record nothing\n", why);
        }
        stays = r == Py_False;
        Py_XDECREF(r);
        Py_DECREF(fn);
    }
    if (!stays) {
        auto_state = SPS_REC_PY_AUTO_STOOD_ASIDE;
        memcpy(auto_reason, reason, sizeof auto_reason);
        publish();
    }
    PyErr_Restore(type, value, tb);
}

/* The zones auto records (stepscope/_auto.py, _steps.py): the script's
 * own zone of one of these names would count that part twice. */
static const char *const auto_zone_names[] = {"data",     "data.start", "data.fetch",          "forward", "forward.eval",
                                              "backward", "optimizer",  "optimizer.zero_grad", "h2d"};

void sps_py_auto_user_began(const struct sps_site *site) {
    if (site && site->kind == SPS_KIND_WAIT)
        return; /* a wait of the script's nests inside auto's zones, as another zone does */
    if (!site || site->kind != SPS_KIND_ZONE) {
        stand_aside("records steps of its own");
        return;
    }
    for (size_t i = 0; i < sizeof auto_zone_names / sizeof auto_zone_names[0]; i++) {
        if (site->name && !strcmp(site->name, auto_zone_names[i])) {
            char what[160];
            snprintf(what, sizeof what, "records a zone auto records too (\"%.100s\")", site->name);
            stand_aside(what);
            return;
        }
    }
    /* any other zone nests inside auto's and its steps: auto stays armed */
}

/* _set_auto_callback(fn, reason=None): auto-instrumentation is installed
 * in this process and fn(reason) undoes it.  fn None: it is gone; when it
 * was active, it turned itself off (an error in its hooks), for reason
 * when given. */
static PyObject *set_auto_callback(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fn, *reason = Py_None;
    if (!PyArg_UnpackTuple(args, "_set_auto_callback", 1, 2, &fn, &reason))
        return NULL;
    if (fn != Py_None && !PyCallable_Check(fn)) {
        sps_py_type_error("stepscope._set_auto_callback(): the callback", "callable or None", fn);
        return NULL;
    }
    PyObject *reason_bytes = NULL;
    if (reason != Py_None && !(reason_bytes = PyUnicode_Check(reason) ? PyUnicode_AsUTF8String(reason) : NULL)) {
        if (!PyErr_Occurred())
            sps_py_type_error("stepscope._set_auto_callback(): the reason", "a str or None", reason);
        return NULL;
    }
    Py_CLEAR(callback);
    if (fn == Py_None) {
        sps_py_auto_armed = 0;
        sps_py_slow_path_update();
        if (auto_state == SPS_REC_PY_AUTO_ACTIVE) {
            auto_state = SPS_REC_PY_AUTO_TURNED_OFF;
            snprintf(auto_reason, sizeof auto_reason, "%s",
                     reason_bytes ? PyBytes_AsString(reason_bytes) : "auto-instrumentation turned itself off");
        }
    } else {
        Py_INCREF(fn);
        callback = fn;
        sps_py_auto_armed = 1;
        sps_py_slow_path_update();
        auto_state = SPS_REC_PY_AUTO_ACTIVE;
        auto_reason[0] = '\0';
    }
    Py_XDECREF(reason_bytes);
    publish();
    Py_RETURN_NONE;
}

/* _note_instrument(): stepscope.torch.instrument() is being called. */
static PyObject *note_instrument(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    instrument_used = 1;
    if (sps_py_auto_armed)
        stand_aside("calls stepscope.torch.instrument()");
    else
        publish();
    Py_RETURN_NONE;
}

/* _auto_state() -> (state, reason, instrument): "none", "active",
 * "stood_aside" or "turned_off"; the reason ("" when none); whether instrument() was
 * called. */
static PyObject *get_auto_state(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    static const char *const names[] = {"none", "active", "stood_aside", "turned_off"};
    return Py_BuildValue("(ssO)", names[auto_state <= SPS_REC_PY_AUTO_TURNED_OFF ? auto_state : 0], auto_reason,
                         instrument_used ? Py_True : Py_False);
}

/* A fork child inherits the state, and its first record gets it from the
 * first note (face.c forgets the header it wrote into). */

static PyMethodDef methods[] = {
    {"_set_auto_callback", set_auto_callback, METH_VARARGS,
     "_set_auto_callback(fn, reason=None): auto-instrumentation is installed; fn(reason) undoes it when the "
     "script instruments itself (None: it turned itself off, for reason)."},
    {"_note_instrument", note_instrument, METH_NOARGS,
     "_note_instrument(): stepscope.torch.instrument() is in use (auto-instrumentation stands aside)."},
    {"_auto_state", get_auto_state, METH_NOARGS,
     "_auto_state() -> (state, reason, instrument): auto-instrumentation in this process."},
    {NULL, NULL, 0, NULL},
};

int sps_py_auto_init(PyObject *module) {
    return PyModule_AddFunctions(module, methods);
}
