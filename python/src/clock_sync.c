/*
 * clock_sync.c - the module's face of clock-offset measurement: the
 * record's clock (sps_clock_ns) for the ping-pong's timestamps, and
 * sps_clock_offset_set to store what it found
 * (python/stepscope/_clocksync.py does the exchange).
 */
#include "ext.h"

PyObject *sps_py_clock_ns(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong(sps_clock_ns());
}

PyObject *sps_py_clock_offset_set(PyObject *self, PyObject *args) {
    (void)self;
    int when;
    long long offset;
    unsigned long long error, at;
    unsigned int rounds;
    const char *why = NULL;
    if (!PyArg_ParseTuple(args, "iLKKI|z", &when, &offset, &error, &at, &rounds, &why))
        return NULL;
    int rc = sps_clock_offset_set((enum sps_sync_when)when, offset, error, at, rounds, why);
    if (rc == SPS_EINVAL) {
        PyErr_SetString(PyExc_ValueError, "_clock_offset_set(): when is 0 (start) or 1 (end)");
        return NULL;
    }
    return PyBool_FromLong(rc == 0);
}
