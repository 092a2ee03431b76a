/*
 * deep.c - the extension's side of the deep-capture window
 * (`stepscope run --torch-profile`, stepscope/_deep.py).
 *
 * Every step a Python face makes begins through sps_py_begin_step and
 * ends through sps_py_end (ext.h), whoever calls: stepscope.step(),
 * step_begin()/zone_end(), stepscope.torch.instrument and the
 * auto-instrumentation (both through instrument_face).  When
 * STEPSCOPE_TORCH_PROFILE is not set at import, sps_py_deep_on is 0 and
 * that is all a step pays: one predictable branch on a global.  When it is
 * set, _deep.step_begin() runs before the step's begin (so torch.profiler
 * starts outside the step it captures) and says whether it follows the
 * step; a followed step's token is kept per thread, and _deep.step_end()
 * runs after its end or its discard (so the profiler stops outside it).
 * Once the window is over (captured or given up), _deep says so and
 * sps_py_deep_on goes back to 0: later steps pay only the branch again.
 *
 * _deep never raises; should a call still fail, the error is printed once
 * and the window is given up, never passed to the script.  Everything
 * here runs with the GIL held.
 */
#include "ext.h"

#include <stdio.h>
#include <stdlib.h>

int sps_py_deep_on;
__thread sps_zone_t sps_py_deep_step __attribute__((tls_model("initial-exec")));

static PyObject *deep_begin, *deep_end; /* stepscope._deep's, imported at the first step */

/* Give the window up after a failure the call left set (printed once). */
static void give_up(void) {
    fputs("stepscope: --torch-profile: stepscope._deep failed; the window is given up:\n", stderr);
    PyErr_Print();
    sps_py_deep_on = 0;
}

static int import_deep(void) {
    PyObject *mod = PyImport_ImportModule("stepscope._deep");
    if (mod) {
        deep_begin = PyObject_GetAttrString(mod, "step_begin");
        deep_end = deep_begin ? PyObject_GetAttrString(mod, "step_end") : NULL;
        Py_DECREF(mod);
    }
    return deep_end ? 0 : -1;
}

sps_zone_t sps_py_deep_step_begin(struct sps_site *site, int face) {
    int follow = 0;
    if (!sps_py_deep_step) { /* a step inside a followed one is not followed */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb); /* the caller's, if any, kept as it was */
        PyObject *r = deep_begin || import_deep() == 0 ? PyObject_CallObject(deep_begin, NULL) : NULL;
        if (r == Py_None)
            sps_py_deep_on = 0; /* the window is over: steps stop calling */
        else if (r)
            follow = PyObject_IsTrue(r) > 0;
        Py_XDECREF(r);
        if (PyErr_Occurred())
            give_up();
        PyErr_Restore(type, value, tb);
    }
    sps_zone_t t = sps_py_begin(site, face);
    if (follow && t && t != SPS_PY_STAND_IN_TOKEN)
        sps_py_deep_step = t;
    else if (follow)
        sps_py_deep_ended(1); /* nothing was recorded: the step does not count */
    return t;
}

void sps_py_deep_ended(int discarded) {
    sps_py_deep_step = 0;
    if (!deep_end || !sps_py_deep_on)
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *r = PyObject_CallFunctionObjArgs(deep_end, discarded ? Py_True : Py_False, NULL);
    if (r == Py_True)
        sps_py_deep_on = 0; /* the window is over: steps stop calling */
    Py_XDECREF(r);
    if (PyErr_Occurred())
        give_up();
    PyErr_Restore(type, value, tb);
}

void sps_py_deep_init(void) {
    const char *spec = getenv("STEPSCOPE_TORCH_PROFILE");
    sps_py_deep_on = spec && *spec;
}
