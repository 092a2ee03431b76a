/*
 * zone.c - zones, steps and micro-steps for Python, and values and counters.
 *
 * `with stepscope.zone("forward"):` costs one call to zone(), the `with`
 * statement's lookups of __enter__/__exit__, and the library's begin and
 * end.  Two things keep the first part small:
 *
 *  - Names are resolved once.  zone_cache maps each name (a str, hashed
 *    once by Python and cached in the str) to a Zone object that holds the
 *    library's site for it (sps_site_get), so no string is converted or
 *    interned per zone.
 *  - Zone objects are reused, and so are their bound methods.  The `with`
 *    statement looks __enter__ and __exit__ up on every use, and a method
 *    defined the usual way (PyMethodDef in tp_methods) makes a new bound
 *    method object each time: two garbage-collected allocations per zone,
 *    about a third of its cost.  A Zone instead makes its bound __enter__
 *    and __exit__ once (enter_fn, exit_fn), and the type's __enter__ and
 *    __exit__ are ZoneMethod descriptors that hand those out.  They are
 *    ordinary built-in functions, so CPython calls them without building
 *    an argument tuple.  A Zone and its two bound methods refer to each
 *    other, so Zone takes part in garbage collection.
 *
 *    A cached Zone is free when nothing but the cache and its own bound
 *    methods refer to it and nobody holds those methods (a `with` block
 *    holds the bound __exit__ until it exits).  zone() hands a free Zone
 *    out again instead of allocating one.  When the cached one is in use
 *    (nesting the same name, recursion, another thread, a caller that kept
 *    it), zone() makes a fresh Zone and caches that instead.  The GIL makes
 *    the check and the hand-out atomic.
 *
 * Tokens: the library's sps_zone_t is the zone's depth on its thread.  A
 * Zone keeps the token of its begin, so ends that do not nest (a zone
 * left open in a generator that another zone outlives) reach the library
 * as they happened and are counted there as mismatched, not silently
 * re-attributed.
 *
 * Nothing here releases the GIL: a begin or an end is tens of
 * nanoseconds, far less than a release and re-acquire.
 */
#include "ext.h"

#include "recorder.h" /* sps__zone_discard */

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ state */

/* ZoneObject is in ext.h: a GpuZone starts with one. */

/* Zone.__enter__ / Zone.__exit__ (and GpuZone's): hands out the zone's own
 * bound method. */
typedef struct {
    PyObject_HEAD
    int is_exit;
    PyTypeObject *owner; /* the type it is on (borrowed: the type holds it) */
    const char *what;    /* "stepscope.zone", "stepscope.gpu_zone" */
} ZoneMethodObject;

/* One step or micro-step; it begins when made (stepscope.step()), not at
 * __enter__, so a bare call is a boundary marker. */
typedef struct {
    PyObject_HEAD
    sps_zone_t token; /* 0: nothing recorded (recording off) */
    int micro;        /* 1: a micro-step */
    int ended;
} StepObject;

static PyTypeObject *zone_type;
static PyTypeObject *zone_method_type;
static PyTypeObject *step_type;
static PyObject *zone_cache;    /* str -> Zone (see above) */
static PyObject *wait_cache;    /* str -> Zone of a wait site (stepscope.wait) */
static PyObject *value_sites;   /* str -> int (struct sps_site *) */
static PyObject *counter_sites; /* str -> int (struct sps_site *) */
static PyObject *phase_sites;   /* str -> int (struct sps_site *) */
static struct sps_site *step_site;
static struct sps_site *microstep_site;

/* The calling thread's step and micro-step begun by step()/microstep()
 * and not yet ended: a bare call leaves them here for the next call (or
 * the exit hook) to end.  Per thread, as the library's zone stacks are. */
static __thread sps_zone_t pending_step;
static __thread sps_zone_t pending_micro;

/* ---------------------------------------------------------------- names */

/* Raise TypeError "<what> must be <want>, not <type name>".  The limited
 * API has no tp_name, so the name comes from type(obj).__name__. */
void sps_py_type_error(const char *what, const char *want, PyObject *obj) {
    PyObject *tn = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__name__");
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s must be %s, not %S", what, want, tn ? tn : Py_None);
    Py_XDECREF(tn);
}

/* The library site for a name, made on first use: name must be a
 * non-empty str without NUL characters.  Slow path only (once per name). */
static struct sps_site *new_site(PyObject *name, enum sps_kind kind, const char *fn) {
    if (!PyUnicode_Check(name)) {
        char what[64];
        snprintf(what, sizeof what, "stepscope.%s(): the name", fn);
        sps_py_type_error(what, "a str", name);
        return NULL;
    }
    PyObject *bytes = PyUnicode_AsUTF8String(name);
    if (!bytes)
        return NULL;
    char *s = NULL;
    Py_ssize_t len = 0;
    struct sps_site *site = NULL;
    if (PyBytes_AsStringAndSize(bytes, &s, &len) == 0) {
        if (len == 0)
            PyErr_Format(PyExc_ValueError, "stepscope.%s(): the name must not be empty", fn);
        else if ((size_t)len != strlen(s))
            PyErr_Format(PyExc_ValueError, "stepscope.%s(): the name must not contain NUL characters", fn);
        else if (!(site = sps_site_get(s, kind)))
            PyErr_NoMemory();
    }
    Py_DECREF(bytes);
    return site;
}

/* A value or counter site (or a GPU zone's) from its cache, made on first use. */
struct sps_site *sps_py_cached_site(PyObject *cache, PyObject *name, enum sps_kind kind, const char *fn) {
    PyObject *v = PyDict_GetItemWithError(cache, name); /* borrowed */
    if (v)
        return PyLong_AsVoidPtr(v);
    PyErr_Clear(); /* an unhashable name: new_site says what is wrong */
    struct sps_site *site = new_site(name, kind, fn);
    if (!site)
        return NULL;
    PyObject *p = PyLong_FromVoidPtr(site);
    if (!p || PyDict_SetItem(cache, name, p) < 0) {
        Py_XDECREF(p);
        return NULL;
    }
    Py_DECREF(p);
    return site;
}

/* ----------------------------------------------------------------- Zone */

static PyMethodDef zone_enter_def;
static PyMethodDef zone_exit_def;

static PyObject *zone_new_object(struct sps_site *site, PyObject *name) {
    ZoneObject *z = (ZoneObject *)PyType_GenericAlloc(zone_type, 0); /* tracked by the GC */
    if (!z)
        return NULL;
    z->site = site;
    Py_INCREF(name);
    z->name = name;
    z->enter_fn = PyCFunction_NewEx(&zone_enter_def, (PyObject *)z, NULL);
    z->exit_fn = PyCFunction_NewEx(&zone_exit_def, (PyObject *)z, NULL);
    if (!z->enter_fn || !z->exit_fn) {
        Py_DECREF(z);
        return NULL;
    }
    return (PyObject *)z;
}

/* Nobody but the cache uses z: the cache's reference and its own two bound
 * methods' are all it has, and nobody holds those methods. */
int sps_py_zone_is_free(const ZoneObject *z) {
    return !z->open && Py_REFCNT(z) == 3 && Py_REFCNT(z->enter_fn) == 1 && Py_REFCNT(z->exit_fn) == 1;
}

/* A Zone for name that nobody else is using (see the file comment).
 * Returns a new reference, or NULL with an exception set. */
static PyObject *zone_for_kind(PyObject *cache, PyObject *name, enum sps_kind kind, const char *fn) {
    PyObject *cached = PyDict_GetItemWithError(cache, name); /* borrowed */
    if (cached) {
        if (sps_py_zone_is_free((ZoneObject *)cached)) {
            Py_INCREF(cached);
            return cached;
        }
        /* in use: a fresh one, which becomes the cached one so that the
         * common case stays allocation-free when a caller keeps the old */
        PyObject *z = zone_new_object(((ZoneObject *)cached)->site, name);
        if (z && PyDict_SetItem(cache, name, z) < 0)
            Py_CLEAR(z);
        return z;
    }
    PyErr_Clear(); /* an unhashable name: new_site says what is wrong */
    struct sps_site *site = new_site(name, kind, fn);
    if (!site)
        return NULL;
    PyObject *z = zone_new_object(site, name);
    if (z && PyDict_SetItem(cache, name, z) < 0)
        Py_CLEAR(z);
    return z;
}

static PyObject *zone_for(PyObject *name, const char *fn) {
    return zone_for_kind(zone_cache, name, SPS_KIND_ZONE, fn);
}

/* stepscope.wait(name): a Zone whose site is a wait's (SPS_KIND_WAIT). */
PyObject *sps_py_wait(PyObject *self, PyObject *name) {
    (void)self;
    return zone_for_kind(wait_cache, name, SPS_KIND_WAIT, "wait");
}

/* wait_begin(name) -> token, ended by zone_end (or wait_end). */
PyObject *sps_py_wait_begin(PyObject *self, PyObject *name) {
    PyObject *z = zone_for_kind(wait_cache, name, SPS_KIND_WAIT, "wait_begin");
    if (!z)
        return NULL;
    sps_zone_t t = sps_py_begin(((ZoneObject *)z)->site, sps_py_face_of(self));
    Py_DECREF(z);
    return PyLong_FromUnsignedLong(t);
}

/* clock_now() -> int: sps_clock_now(), for wait_record. */
PyObject *sps_py_clock_now(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong(sps_clock_now());
}

/* wait_record(name, start, end): sps_wait_record on the calling thread,
 * counted as a zone of the caller's face. */
PyObject *sps_py_wait_record(PyObject *self, PyObject *args) {
    PyObject *name, *start_obj, *end_obj;
    if (!PyArg_ParseTuple(args, "OOO:wait_record", &name, &start_obj, &end_obj))
        return NULL;
    /* ints from clock_now(): a negative or too large one is an error, not wrapped */
    unsigned long long start = PyLong_AsUnsignedLongLong(start_obj);
    if (start == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    unsigned long long end = PyLong_AsUnsignedLongLong(end_obj);
    if (end == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    PyObject *z = zone_for_kind(wait_cache, name, SPS_KIND_WAIT, "wait_record");
    if (!z)
        return NULL;
    struct sps_site *site = ((ZoneObject *)z)->site;
    Py_DECREF(z);
    int face = sps_py_face_of(self);
    enum sps_py_note what = face == SPS_PY_FACE_HOOKS ? SPS_PY_NOTE_HOOK_ZONE : SPS_PY_NOTE_ZONE;
    if (!sps_py_skip_site(what, site)) {
        sps_wait_record(site, (uint64_t)start, (uint64_t)end);
        sps_py_note(what);
    }
    Py_RETURN_NONE;
}

/* The completion time of a DDP bucket's all-reduce onto state.done, where
 * later.  Never fails: an attribute that cannot be read or written leaves
 * the completion unnoted (the wait unrecorded), never an error in DDP. */
static void ddp_note_done(PyObject *state) {
    unsigned long long now = sps_clock_now();
    PyObject *done = PyObject_GetAttrString(state, "done");
    if (done) {
        unsigned long long before = PyLong_AsUnsignedLongLong(done);
        Py_DECREF(done);
        if (!PyErr_Occurred() && now > before) {
            PyObject *value = PyLong_FromUnsignedLongLong(now);
            if (value) {
                PyObject_SetAttrString(state, "done", value);
                Py_DECREF(value);
            }
        }
    }
    PyErr_Clear();
}

/* _ddp_completed(state, unpack, fut): the callback of Future.then that
 * stepscope's DDP hook chains to a bucket's future (bound by
 * functools.partial): notes the completion on state (None: nothing), then returns
 * fut.value(), or fut.value()[0] where unpack (a Work's [tensor]).  In C so
 * that a failed all-reduce's error reaches DDP as torch raised it, with no
 * frame of stepscope's in it; it never raises an error of its own. */
PyObject *sps_py_ddp_completed(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *state, *fut;
    int unpack;
    if (!PyArg_ParseTuple(args, "OpO:_ddp_completed", &state, &unpack, &fut))
        return NULL;
    if (state != Py_None)
        ddp_note_done(state);
    PyObject *value = PyObject_CallMethod(fut, "value", NULL);
    if (!value || !unpack)
        return value;
    PyObject *first = PySequence_GetItem(value, 0);
    Py_DECREF(value);
    return first;
}

PyObject *sps_py_zone(PyObject *self, PyObject *name) {
    (void)self;
    return zone_for(name, "zone");
}

static PyObject *zone_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    ZoneObject *z = (ZoneObject *)self;
    if (z->open) {
        PyErr_Format(PyExc_RuntimeError,
                     "stepscope.zone(%R) is already open: a zone object times one block at a time "
                     "(call stepscope.zone() for each with)",
                     z->name);
        return NULL;
    }
    z->open = 1;
    z->token = sps_py_begin(z->site, SPS_PY_FACE_USER);
    Py_INCREF(self);
    return self;
}

/*
 * __exit__ is called with three arguments.  As METH_VARARGS that costs a
 * tuple per zone; METH_FASTCALL passes them as an array.  METH_FASTCALL is in the stable ABI from 3.10 only (its
 * value and convention date from 3.7, but 3.8 and 3.9 do not promise
 * them), so sps_py_zone_init picks the convention by the running
 * interpreter's version: FASTCALL from 3.10, VARARGS before.
 */
static PyObject *zone_exit_varargs(PyObject *self, PyObject *args);

static PyObject *zone_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)args; /* the exception, if any, propagates: we return None */
    (void)nargs;
    ZoneObject *z = (ZoneObject *)self;
    if (z->open) {
        sps_py_end(z->token);
        z->token = 0;
        z->open = 0;
    }
    Py_RETURN_NONE;
}

static PyObject *zone_exit_varargs(PyObject *self, PyObject *args) {
    (void)args;
    return zone_exit(self, NULL, 0);
}

/* @stepscope.zone("name") / @stepscope.gpu_zone("name"): the wrapper is
 * stepscope._decorate, in Python, where functools.wraps and the coroutine
 * checks are one line each. */
PyObject *sps_py_decorate(const char *what, PyObject *name, PyObject *args, PyObject *kwargs, PyObject *stream) {
    if ((kwargs && PyDict_Size(kwargs) > 0) || PyTuple_Size(args) != 1) {
        PyErr_Format(PyExc_TypeError, "a %s decorates one function: @%s(\"name\") above a def", what, what);
        return NULL;
    }
    PyObject *mod = PyImport_ImportModule("stepscope");
    if (!mod)
        return NULL;
    PyObject *decorate = PyObject_GetAttrString(mod, "_decorate");
    Py_DECREF(mod);
    if (!decorate)
        return NULL;
    /* stream NULL ends the arguments: _decorate then makes a plain zone */
    PyObject *r = PyObject_CallFunctionObjArgs(decorate, name, PyTuple_GetItem(args, 0), stream, NULL);
    Py_DECREF(decorate);
    return r;
}

static PyObject *zone_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    if (((ZoneObject *)self)->site->kind == SPS_KIND_WAIT) {
        PyErr_Format(PyExc_TypeError, "stepscope.wait(%R) times a with block around the blocking call; "
                                      "it is not a decorator", ((ZoneObject *)self)->name);
        return NULL;
    }
    return sps_py_decorate("stepscope.zone", ((ZoneObject *)self)->name, args, kwargs, NULL);
}

static PyObject *zone_repr(PyObject *self) {
    ZoneObject *z = (ZoneObject *)self;
    return PyUnicode_FromFormat("<stepscope.%s %R%s>", z->site->kind == SPS_KIND_WAIT ? "wait" : "zone", z->name,
                                z->open ? " (open)" : "");
}

PyObject *sps_py_zone_get_name(PyObject *self, void *closure) {
    (void)closure;
    ZoneObject *z = (ZoneObject *)self;
    Py_INCREF(z->name);
    return z->name;
}

static PyObject *no_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)type;
    (void)args;
    (void)kwargs;
    PyErr_SetString(PyExc_TypeError, "use stepscope.zone(name), stepscope.step() or stepscope.microstep()");
    return NULL;
}

static void plain_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_Free(self); /* PyType_GenericAlloc of a type without GC */
    Py_DECREF(tp);       /* instances of heap types own a reference to it */
}

/* Whether tp_traverse visits the instance's heap type: expected from 3.9
 * on; before 3.9 the collector did not count that reference.  Set at init. */
static int traverse_visits_type;

int sps_py_zone_traverse(PyObject *self, visitproc visit, void *arg) {
    ZoneObject *z = (ZoneObject *)self;
    Py_VISIT(z->enter_fn);
    Py_VISIT(z->exit_fn);
    if (traverse_visits_type)
        Py_VISIT((PyObject *)Py_TYPE(self));
    return 0;
}

int sps_py_zone_clear(PyObject *self) {
    ZoneObject *z = (ZoneObject *)self;
    Py_CLEAR(z->enter_fn);
    Py_CLEAR(z->exit_fn);
    return 0;
}

static void zone_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    sps_py_zone_clear(self);
    Py_XDECREF(((ZoneObject *)self)->name);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyMethodDef zone_enter_def = {"__enter__", zone_enter, METH_NOARGS, "Begin the zone on the calling thread."};
/* the convention is set by sps_py_zone_init (see zone_exit) */
static PyMethodDef zone_exit_def = {"__exit__", zone_exit_varargs, METH_VARARGS, "End the zone; exceptions propagate."};

/* ------------------------------------------------------------ ZoneMethod */

/* zone.__enter__ / zone.__exit__: the zone's own bound method.  Found on
 * the class (Zone.__enter__, as contextlib.ExitStack looks it up), the
 * descriptor itself, which calls the method of its first argument. */
static PyObject *zone_method_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    const ZoneMethodObject *m = (const ZoneMethodObject *)self;
    int is_exit = m->is_exit;
    if (!PyObject_TypeCheck(obj, m->owner)) {
        char what[64], want[64];
        snprintf(what, sizeof what, "%s.__%s__'s instance", m->what, is_exit ? "exit" : "enter");
        snprintf(want, sizeof want, "a %s", m->what);
        sps_py_type_error(what, want, obj);
        return NULL;
    }
    PyObject *fn = is_exit ? ((ZoneObject *)obj)->exit_fn : ((ZoneObject *)obj)->enter_fn;
    Py_INCREF(fn);
    return fn;
}

static PyObject *zone_method_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    Py_ssize_t n = PyTuple_Size(args);
    if (n < 1) {
        const ZoneMethodObject *m = (const ZoneMethodObject *)self;
        PyErr_Format(PyExc_TypeError, "%s.%s needs a %s as its first argument", m->what,
                     m->is_exit ? "__exit__" : "__enter__", m->what);
        return NULL;
    }
    PyObject *bound = zone_method_get(self, PyTuple_GetItem(args, 0), NULL);
    if (!bound)
        return NULL;
    PyObject *rest = PyTuple_GetSlice(args, 1, n);
    PyObject *r = rest ? PyObject_Call(bound, rest, kwargs) : NULL;
    Py_XDECREF(rest);
    Py_DECREF(bound);
    return r;
}

static PyObject *zone_method_repr(PyObject *self) {
    const ZoneMethodObject *m = (const ZoneMethodObject *)self;
    return PyUnicode_FromFormat("<method '%s' of '%s' objects>", m->is_exit ? "__exit__" : "__enter__", m->what);
}

static PyType_Slot zone_method_slots[] = {
    {Py_tp_doc, "Zone.__enter__ / Zone.__exit__: each zone's bound method, made once per zone."},
    {Py_tp_new, no_new},
    {Py_tp_dealloc, plain_dealloc},
    {Py_tp_descr_get, zone_method_get},
    {Py_tp_call, zone_method_call},
    {Py_tp_repr, zone_method_repr},
    {0, NULL},
};

static PyType_Spec zone_method_spec = {"stepscope._stepscope.ZoneMethod", sizeof(ZoneMethodObject), 0,
                                       Py_TPFLAGS_DEFAULT, zone_method_slots};

/* Put a ZoneMethod on type as name. */
static int add_zone_method(PyTypeObject *type, const char *what, const char *name, int is_exit) {
    ZoneMethodObject *m = (ZoneMethodObject *)PyType_GenericAlloc(zone_method_type, 0);
    if (!m)
        return -1;
    m->is_exit = is_exit;
    m->owner = type;
    m->what = what;
    int rc = PyObject_SetAttrString((PyObject *)type, name, (PyObject *)m);
    Py_DECREF(m);
    return rc;
}

int sps_py_add_zone_methods(PyTypeObject *type, const char *what) {
    return add_zone_method(type, what, "__enter__", 0) < 0 || add_zone_method(type, what, "__exit__", 1) < 0 ? -1 : 0;
}

static PyGetSetDef zone_getset[] = {
    {"name", sps_py_zone_get_name, NULL, "the zone's name", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot zone_slots[] = {
    {Py_tp_doc, "A named span of time: `with stepscope.zone(name):` or `@stepscope.zone(name)`."},
    {Py_tp_new, no_new},
    {Py_tp_dealloc, zone_dealloc},
    {Py_tp_traverse, sps_py_zone_traverse},
    {Py_tp_clear, sps_py_zone_clear},
    {Py_tp_getset, zone_getset},
    {Py_tp_call, zone_call},
    {Py_tp_repr, zone_repr},
    {0, NULL},
};

static PyType_Spec zone_spec = {"stepscope._stepscope.Zone", sizeof(ZoneObject), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, zone_slots};

/* ----------------------------------------------------------------- Step */

/* End a step (micro 0) or micro-step (1): torch's memory is recorded in
 * it first.  Returns whether one was recorded and ended. */
static int end_step_token(sps_zone_t t, int micro) {
    int real = t && t != SPS_PY_STAND_IN_TOKEN;
    if (real)
        sps_py_torch_mem_end(micro);
    sps_py_end(t);
    return real;
}

static int end_pending_micro(void) {
    sps_zone_t t = pending_micro;
    pending_micro = 0;
    return end_step_token(t, 1);
}

static int end_pending_step(void) {
    end_pending_micro(); /* it nests in the step: end it first */
    sps_zone_t t = pending_step;
    pending_step = 0;
    return end_step_token(t, 0);
}

/* step()/microstep(): end the thread's pending one, begin a new one now
 * and leave it pending until __enter__ says a `with` owns it. */
static PyObject *begin_step(int micro) {
    StepObject *s = (StepObject *)PyType_GenericAlloc(step_type, 0);
    if (!s)
        return NULL;
    if (micro) {
        sps_py_torch_mem_begin(1, end_pending_micro());
        pending_micro = s->token = sps_py_begin(microstep_site, SPS_PY_FACE_USER);
    } else {
        sps_py_torch_mem_begin(0, end_pending_step());
        pending_step = s->token = sps_py_begin_step(step_site, SPS_PY_FACE_USER);
    }
    s->micro = micro;
    return (PyObject *)s;
}

PyObject *sps_py_step(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return begin_step(0);
}

PyObject *sps_py_microstep(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return begin_step(1);
}

/* The exit hook (registered by stepscope/__init__.py with atexit): end the
 * calling thread's bare step and micro-step, so the last step of a loop
 * marked with bare step() calls is counted. */
PyObject *sps_py_end_pending(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    end_pending_step();
    Py_RETURN_NONE;
}

static PyObject *step_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    StepObject *s = (StepObject *)self;
    /* the with block owns it now: the next step() must not end it */
    if (s->token && !s->ended) {
        if (s->micro && pending_micro == s->token)
            pending_micro = 0;
        if (!s->micro && pending_step == s->token)
            pending_step = 0;
    }
    Py_INCREF(self);
    return self;
}

static PyObject *step_exit(PyObject *self, PyObject *args) {
    (void)args;
    StepObject *s = (StepObject *)self;
    if (s->ended || !s->token)
        Py_RETURN_NONE;
    s->ended = 1;
    /* a bare micro-step inside this step ends with it */
    if (!s->micro && pending_micro > s->token)
        end_pending_micro();
    if (s->micro && pending_micro == s->token)
        pending_micro = 0;
    if (!s->micro && pending_step == s->token)
        pending_step = 0;
    end_step_token(s->token, s->micro);
    Py_RETURN_NONE;
}

static PyObject *step_repr(PyObject *self) {
    StepObject *s = (StepObject *)self;
    return PyUnicode_FromFormat("<stepscope.%s token=%u>", s->micro ? "microstep" : "step", (unsigned)s->token);
}

static PyObject *step_get_token(PyObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(((StepObject *)self)->token);
}

static PyMethodDef step_methods[] = {
    {"__enter__", step_enter, METH_NOARGS, "Make the with block own the step begun by step()."},
    {"__exit__", step_exit, METH_VARARGS, "End the step; exceptions propagate."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef step_getset[] = {
    {"token", step_get_token, NULL, "the library's token for the step (0: nothing was recorded)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot step_slots[] = {
    {Py_tp_doc, "A step or micro-step begun by stepscope.step()/microstep(); a with block ends it at exit."},
    {Py_tp_new, no_new},
    {Py_tp_dealloc, plain_dealloc},
    {Py_tp_methods, step_methods},
    {Py_tp_getset, step_getset},
    {Py_tp_repr, step_repr},
    {0, NULL},
};

static PyType_Spec step_spec = {"stepscope._stepscope.Step", sizeof(StepObject), 0, Py_TPFLAGS_DEFAULT, step_slots};

/* ------------------------------------------------------------ low level */

PyObject *sps_py_zone_begin(PyObject *self, PyObject *name) {
    PyObject *z = zone_for(name, "zone_begin");
    if (!z)
        return NULL;
    sps_zone_t t = sps_py_begin(((ZoneObject *)z)->site, sps_py_face_of(self));
    Py_DECREF(z);
    return PyLong_FromUnsignedLong(t);
}

/* A token from zone_begin() and the like as the library's; -1 with an
 * exception set when it cannot be one.  fn names the caller
 * ("stepscope.zone_end()"). */
static long token_of(PyObject *token, const char *fn) {
    if (!PyLong_Check(token)) {
        char what[96];
        snprintf(what, sizeof what, "%s: the token", fn);
        sps_py_type_error(what, "an int", token);
        return -1;
    }
    unsigned long t = PyLong_AsUnsignedLong(token);
    if (PyErr_Occurred() || t > UINT32_MAX) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: %R is not a token from zone_begin()", fn, token);
        return -1;
    }
    return (long)t;
}

PyObject *sps_py_zone_end(PyObject *self, PyObject *token) {
    (void)self;
    long t = token_of(token, "stepscope.zone_end()");
    if (t < 0)
        return NULL;
    /* a step or micro-step (step_begin, microstep_begin: auto mode's,
     * instrument's): torch's memory is recorded in it first */
    int step_kind = sps_py_torch_mem_step_kind((sps_zone_t)t);
    if (step_kind >= 0)
        sps_py_torch_mem_end(step_kind);
    sps_py_end((sps_zone_t)t);
    Py_RETURN_NONE;
}

PyObject *sps_py_zone_discard(PyObject *self, PyObject *token) {
    (void)self;
    long t = token_of(token, "stepscope._zone_discard()");
    if (t < 0)
        return NULL;
    /* a calibration's stand-in opened nothing; a zone the library ended
     * instead of taking back stays counted, as it is recorded */
    if (t && t != SPS_PY_STAND_IN_TOKEN) {
        int taken_back = sps__zone_discard((sps_zone_t)t);
        if (taken_back)
            sps_py_unnote_zone(sps_py_face_of(self));
        if (sps_py_deep_on && (sps_zone_t)t == sps_py_deep_step)
            sps_py_deep_ended(taken_back);
    }
    Py_RETURN_NONE;
}

PyObject *sps_py_step_begin(PyObject *self, PyObject *unused) {
    (void)unused;
    sps_py_torch_mem_begin(0, 0);
    return PyLong_FromUnsignedLong(sps_py_begin_step(step_site, sps_py_face_of(self)));
}

PyObject *sps_py_microstep_begin(PyObject *self, PyObject *unused) {
    (void)unused;
    sps_py_torch_mem_begin(1, 0);
    return PyLong_FromUnsignedLong(sps_py_begin(microstep_site, sps_py_face_of(self)));
}

/* ---------------------------------------------------------------- phases */

/* phase(name): end the calling thread's open phase and begin `name`, one
 * clock read (sps_phase).  Counted as a zone of its face: the report
 * prices it as one, an upper bound (a phase is one call where a zone's
 * `with` is three). */
PyObject *sps_py_phase(PyObject *self, PyObject *name) {
    struct sps_site *site = sps_py_cached_site(phase_sites, name, SPS_KIND_ZONE, "phase");
    if (!site)
        return NULL;
    enum sps_py_note what = sps_py_face_of(self) == SPS_PY_FACE_HOOKS ? SPS_PY_NOTE_HOOK_ZONE : SPS_PY_NOTE_ZONE;
    if (sps_py_skip_site(what, site)) {
        if (!sps__enabled)
            sps_phase_end(); /* recording off: the open phase ends, none begins */
        Py_RETURN_NONE;
    }
    sps_phase(site);
    sps_py_note(what);
    Py_RETURN_NONE;
}

PyObject *sps_py_phase_end(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (!(sps_py_calibration_on && sps_py_calibrating))
        sps_phase_end();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------ values, counters */

/* The value names the script records itself while auto-instrumentation is
 * on: from the script's first "loss", auto's own "loss" (the tensor
 * backward() was called on, recorded through the hooks' face) is left out,
 * so one series holds the script's values and never a mix of the two.
 * Written and read under the GIL; a few names at most. */
#define SCRIPT_VALUE_SITES 16
static const struct sps_site *script_value_sites[SCRIPT_VALUE_SITES];
static int nscript_value_sites;

static int recorded_by_script(const struct sps_site *site) {
    for (int i = 0; i < nscript_value_sites; i++)
        if (script_value_sites[i] == site)
            return 1;
    return 0;
}

/* record()'s keyword at_ns, a non-negative int (ns of clock_ns()'s
 * clock): 1 with *at_ns set, 0 when absent or None, -1 with an error. */
static int record_at_ns(PyObject *kwargs, uint64_t *at_ns) {
    *at_ns = 0;
    PyObject *at = NULL;
    if (kwargs) {
        Py_ssize_t n = PyDict_Size(kwargs);
        at = PyDict_GetItemString(kwargs, "at_ns");
        if (n != (at ? 1 : 0)) {
            PyErr_SetString(PyExc_TypeError, "stepscope.record() takes only the keyword at_ns");
            return -1;
        }
    }
    if (!at || at == Py_None)
        return 0;
    PyObject *i = PyNumber_Index(at);
    if (!i) {
        sps_py_type_error("stepscope.record(): at_ns", "an int (ns of stepscope.clock_ns()'s clock)", at);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "stepscope.record(): at_ns must be a non-negative int below 2**64");
        return -1;
    }
    *at_ns = v;
    return 1;
}

PyObject *sps_py_record(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *name, *value;
    if (!PyArg_UnpackTuple(args, "record", 2, 2, &name, &value))
        return NULL;
    uint64_t at_ns;
    int timed = record_at_ns(kwargs, &at_ns);
    if (timed < 0)
        return NULL;
    struct sps_site *site = sps_py_cached_site(value_sites, name, SPS_KIND_VALUE, "record");
    if (!site)
        return NULL;
    /* floats, ints, numpy scalars, 0-d tensors: anything with __float__ */
    double v = PyFloat_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_TypeError))
            sps_py_type_error("stepscope.record(): the value", "a number", value);
        return NULL;
    }
    int hooks = sps_py_face_of(self) == SPS_PY_FACE_HOOKS;
    if (hooks && recorded_by_script(site))
        Py_RETURN_NONE; /* the script records this value itself */
    if (!hooks && sps_py_auto_armed && nscript_value_sites < SCRIPT_VALUE_SITES && !recorded_by_script(site))
        script_value_sites[nscript_value_sites++] = site;
    /* the hooks' values (the auto-instrumentation's loss) are part of the
     * hooks' work, priced with their zones, as their counts are */
    enum sps_py_note what = hooks ? SPS_PY_NOTE_HOOK_COUNT : SPS_PY_NOTE_VALUE;
    if (!sps_py_skip(what)) {
        if (timed)
            sps_value_at(site, v, at_ns);
        else
            sps_value(site, v);
        sps_py_note(what);
    }
    Py_RETURN_NONE;
}

PyObject *sps_py_count(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"name", "n", NULL};
    PyObject *name, *n = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:count", kwlist, &name, &n))
        return NULL;
    struct sps_site *site = sps_py_cached_site(counter_sites, name, SPS_KIND_COUNTER, "count");
    if (!site)
        return NULL;
    unsigned long long add = 1;
    if (n) {
        /* ints and anything with __index__ (numpy ints); not floats */
        PyObject *i = PyNumber_Index(n);
        if (!i) {
            sps_py_type_error("stepscope.count(): n", "an int", n);
            return NULL;
        }
        add = PyLong_AsUnsignedLongLong(i);
        if (add == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "stepscope.count(): n must be between 0 and 2**64-1, not %R", i);
            Py_DECREF(i);
            return NULL;
        }
        Py_DECREF(i);
    }
    enum sps_py_note what = sps_py_face_of(self) == SPS_PY_FACE_HOOKS ? SPS_PY_NOTE_HOOK_COUNT : SPS_PY_NOTE_COUNT;
    if (!sps_py_skip(what)) {
        sps_count(site, (uint64_t)add);
        sps_py_note(what);
    }
    Py_RETURN_NONE;
}

/* ----------------------------------------------------------------- init */

/* The running interpreter's (major, minor) as 0xMMmm, from Py_GetVersion(),
 * which the stable ABI has on every version ("3.11.2 (main, ...").  0 when
 * it cannot be read. */
int sps_py_runtime_version(void) {
    int major = 0, minor = 0;
    if (sscanf(Py_GetVersion(), "%d.%d", &major, &minor) != 2)
        return 0;
    return major << 8 | minor;
}

int sps_py_zone_init(PyObject *module) {
    int version = sps_py_runtime_version();
    if (version >= 0x030a) {
        zone_exit_def.ml_meth = (PyCFunction)(void (*)(void))zone_exit;
        zone_exit_def.ml_flags = SPS_METH_FASTCALL;
    }
    traverse_visits_type = version >= 0x0309;
    zone_type = (PyTypeObject *)PyType_FromSpec(&zone_spec);
    zone_method_type = (PyTypeObject *)PyType_FromSpec(&zone_method_spec);
    if (!zone_type || !zone_method_type || sps_py_add_zone_methods(zone_type, "stepscope.zone") < 0)
        return -1;
    step_type = (PyTypeObject *)PyType_FromSpec(&step_spec);
    zone_cache = PyDict_New();
    wait_cache = PyDict_New();
    value_sites = PyDict_New();
    counter_sites = PyDict_New();
    phase_sites = PyDict_New();
    if (!zone_type || !step_type || !zone_cache || !wait_cache || !value_sites || !counter_sites || !phase_sites)
        return -1;
    step_site = sps_site_get("step", SPS_KIND_STEP);
    microstep_site = sps_site_get("microstep", SPS_KIND_MICROSTEP);
    if (!step_site || !microstep_site) {
        PyErr_NoMemory();
        return -1;
    }
    /* the module keeps the types: PyModule_AddObject steals on success */
    Py_INCREF(zone_type);
    if (PyModule_AddObject(module, "Zone", (PyObject *)zone_type) < 0) {
        Py_DECREF(zone_type);
        return -1;
    }
    Py_INCREF(step_type);
    if (PyModule_AddObject(module, "Step", (PyObject *)step_type) < 0) {
        Py_DECREF(step_type);
        return -1;
    }
    return 0;
}
