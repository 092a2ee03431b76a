/*
 * ext.h - what the files of the _stepscope extension share.
 *
 * The extension is built for the stable ABI (Py_LIMITED_API 0x03080000, set
 * by the build): one _stepscope.abi3.so serves CPython 3.8 and later.  That
 * rules out vectorcall slots, and METH_FASTCALL before 3.10, so the hot
 * entry points are METH_O / METH_NOARGS functions and a Zone's bound
 * __enter__/__exit__, made once per Zone (zone.c says why).
 *
 * State is process-global (single-phase init): the library's recorder is
 * per process, so a second interpreter would share it anyway.  Every
 * function here runs with the GIL held, which also guards the caches.
 */
#ifndef SPS_PY_EXT_H
#define SPS_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stepscope.h>

/* zone.c: the Zone and Step types, the site caches and the thread's
 * pending bare step / micro-step. */
int sps_py_zone_init(PyObject *module);
PyObject *sps_py_zone(PyObject *self, PyObject *name);
PyObject *sps_py_step(PyObject *self, PyObject *unused);
PyObject *sps_py_microstep(PyObject *self, PyObject *unused);
PyObject *sps_py_end_pending(PyObject *self, PyObject *unused);
PyObject *sps_py_zone_begin(PyObject *self, PyObject *name);
PyObject *sps_py_zone_end(PyObject *self, PyObject *token);
PyObject *sps_py_step_begin(PyObject *self, PyObject *unused);
PyObject *sps_py_microstep_begin(PyObject *self, PyObject *unused);
PyObject *sps_py_record(PyObject *self, PyObject *args);
PyObject *sps_py_count(PyObject *self, PyObject *args, PyObject *kwargs);

/* info.c: capture(), status() and the other calls that read state. */
int sps_py_info_init(PyObject *module);
PyObject *sps_py_capture(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *sps_py_status(PyObject *self, PyObject *unused);
PyObject *sps_py_metrics(PyObject *self, PyObject *unused);
PyObject *sps_py_write_report(PyObject *self, PyObject *dir);

#endif
