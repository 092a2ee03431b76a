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

/* METH_FASTCALL, as Include/methodobject.h defines it from 3.10 on (zone.c
 * says why it is picked at run time). */
#define SPS_METH_FASTCALL 0x0080

/* A zone: the library's site and the bound __enter__/__exit__ made once
 * (zone.c says why).  A GpuZone (gpu_zone.c) begins with one, so the
 * ZoneMethod descriptors and the free check serve both types. */
typedef struct {
    PyObject_HEAD
    struct sps_site *site; /* library-owned, lives until exit */
    PyObject *name;        /* the str this zone was made for */
    sps_zone_t token;      /* of the begin in __enter__; 0 when none (Zone only) */
    int open;              /* between __enter__ and __exit__ */
    PyObject *enter_fn;    /* the bound __enter__, made once */
    PyObject *exit_fn;     /* the bound __exit__ */
} ZoneObject;

/* zone.c: the Zone and Step types, the site caches and the thread's
 * pending bare step / micro-step. */
int sps_py_zone_init(PyObject *module);
PyObject *sps_py_zone(PyObject *self, PyObject *name);
PyObject *sps_py_clock_ns(PyObject *self, PyObject *unused);
PyObject *sps_py_clock_offset_set(PyObject *self, PyObject *args);
PyObject *sps_py_step(PyObject *self, PyObject *unused);
PyObject *sps_py_microstep(PyObject *self, PyObject *unused);
PyObject *sps_py_end_pending(PyObject *self, PyObject *unused);
PyObject *sps_py_zone_begin(PyObject *self, PyObject *name);
/* waits (SPS_KIND_WAIT): stepscope.wait(), wait_begin(), wait_record(), clock_now() */
PyObject *sps_py_wait(PyObject *self, PyObject *name);
PyObject *sps_py_wait_begin(PyObject *self, PyObject *name);
PyObject *sps_py_wait_record(PyObject *self, PyObject *args);
PyObject *sps_py_clock_now(PyObject *self, PyObject *unused);
/* DDP's hook: a bucket's completion noted, its value passed on (stepscope/_collectives.py) */
PyObject *sps_py_ddp_completed(PyObject *self, PyObject *args);
PyObject *sps_py_zone_end(PyObject *self, PyObject *token);
PyObject *sps_py_step_begin(PyObject *self, PyObject *unused);
PyObject *sps_py_microstep_begin(PyObject *self, PyObject *unused);
PyObject *sps_py_zone_discard(PyObject *self, PyObject *token);
PyObject *sps_py_phase(PyObject *self, PyObject *name);
PyObject *sps_py_phase_end(PyObject *self, PyObject *unused);
PyObject *sps_py_record(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *sps_py_count(PyObject *self, PyObject *args, PyObject *kwargs);
/* What gpu_zone.c shares of zone.c: */
void sps_py_type_error(const char *what, const char *want, PyObject *obj);
struct sps_site *sps_py_cached_site(PyObject *cache, PyObject *name, enum sps_kind kind, const char *fn);
/* Put ZoneMethod descriptors for __enter__/__exit__ on type, whose
 * instances start with a ZoneObject; what names it in errors. */
int sps_py_add_zone_methods(PyTypeObject *type, const char *what);
/* Nobody but a cache and its own bound methods refer to z. */
int sps_py_zone_is_free(const ZoneObject *z);
int sps_py_zone_traverse(PyObject *self, visitproc visit, void *arg);
int sps_py_zone_clear(PyObject *self);
/* The `name` getter of every type that starts with a ZoneObject. */
PyObject *sps_py_zone_get_name(PyObject *self, void *closure);
/* A zone object's __call__ as a decorator: what is "stepscope.zone" or
 * "stepscope.gpu_zone" (for errors); stream NULL for a plain zone, else the
 * GpuZone's stream argument, passed on to stepscope._decorate. */
PyObject *sps_py_decorate(const char *what, PyObject *name, PyObject *args, PyObject *kwargs, PyObject *stream);
/* The running interpreter's (major, minor) as 0xMMmm; 0 unknown. */
int sps_py_runtime_version(void);

/* gpu_zone.c: GPU zones (CUDA events, src/gpu/cuda_zone.c), cuda_status()
 * and gpu_flush(). */
int sps_py_gpu_zone_init(PyObject *module);
PyObject *sps_py_gpu_zone(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *sps_py_gpu_zone_begin(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *sps_py_gpu_zone_end(PyObject *self, PyObject *token);
PyObject *sps_py_gpu_flush(PyObject *self, PyObject *unused);
PyObject *sps_py_cuda_status(PyObject *self, PyObject *unused);

/* face.c: counts of what each face recorded, and the measured costs of
 * the module's own work, in the record's header (see face.c). */
enum sps_py_face { SPS_PY_FACE_USER = 0, SPS_PY_FACE_HOOKS = 1 };
enum sps_py_note {
    SPS_PY_NOTE_ZONE, SPS_PY_NOTE_VALUE, SPS_PY_NOTE_COUNT, SPS_PY_NOTE_HOOK_ZONE, SPS_PY_NOTE_HOOK_COUNT,
    SPS_PY_NOTES
};
/* The token a begin returns while its thread calibrates: true, so code
 * that tests it behaves as when recording, and never given to the library. */
#define SPS_PY_STAND_IN_TOKEN 0xFFFFFFFFu
/* Whether a begin must take the slow path (a plain load on the hot path):
 * some thread calibrates, or auto-instrumentation waits for the script's
 * first zone of its own (auto_mode.c); and whether this thread calibrates
 * (initial-exec: no __tls_get_addr call, as the library's own TLS). */
extern int sps_py_calibration_on;
extern __thread int sps_py_calibrating __attribute__((tls_model("initial-exec")));
extern uint64_t sps_py_calibrated[SPS_PY_NOTES]; /* skipped while calibrating */
int sps_py_face_init(PyObject *module);
/* SPS_PY_FACE_HOOKS when a module function was called through
 * instrument_face (its self), else SPS_PY_FACE_USER. */
int sps_py_face_of(PyObject *self);
/* Count one into the process's record (nothing when none is open). */
void sps_py_note(enum sps_py_note what);
/* Take back the count of one zone of face (SPS_PY_FACE_*) that was
 * discarded unrecorded, so the counts stay those of recorded zones. */
void sps_py_unnote_zone(int face);

/* The slow path of sps_py_skip: the tally while this thread calibrates;
 * auto-instrumentation standing aside when the script begins a step of its
 * own, or a zone auto would record too (what SPS_PY_NOTE_ZONE: a begin of
 * the module's own face, on site; NULL for a begin whose site is not
 * known, which counts as the script's own steps). */
int sps_py_skip_slow(enum sps_py_note what, const struct sps_site *site);
/* sps_py_calibration_on again, from who needs the slow path (face.c). */
void sps_py_slow_path_update(void);

/* What a begin, value or count of face does: the library's work and the
 * count; while calibrating, the tally of what was skipped.  Every begin of
 * a zone, step, micro-step, GPU zone or phase goes through here, so the
 * stand-aside check costs nothing more than the calibration's flag. */
static inline int sps_py_skip_site(enum sps_py_note what, const struct sps_site *site) {
    if (!sps__enabled)
        return 1;
    if (__builtin_expect(sps_py_calibration_on, 0))
        return sps_py_skip_slow(what, site);
    return 0;
}

/* sps_py_skip_site for values, counts and the hooks' begins (no site
 * needed: they never make auto stand aside). */
static inline int sps_py_skip(enum sps_py_note what) {
    return sps_py_skip_site(what, NULL);
}

static inline sps_zone_t sps_py_begin(struct sps_site *site, int face) {
    enum sps_py_note what = face == SPS_PY_FACE_HOOKS ? SPS_PY_NOTE_HOOK_ZONE : SPS_PY_NOTE_ZONE;
    if (sps_py_skip_site(what, site))
        return sps__enabled ? SPS_PY_STAND_IN_TOKEN : 0;
    sps_zone_t t = sps_zone_begin(site);
    sps_py_note(what);
    return t;
}

/* deep.c: the deep-capture window's calls into stepscope/_deep.py, made
 * only while sps_py_deep_on (STEPSCOPE_TORCH_PROFILE set at import). */
extern int sps_py_deep_on;
/* The thread's step _deep follows (0: none). */
extern __thread sps_zone_t sps_py_deep_step __attribute__((tls_model("initial-exec")));
void sps_py_deep_init(void);
/* sps_py_begin of a step, with _deep told first. */
sps_zone_t sps_py_deep_step_begin(struct sps_site *site, int face);
/* The followed step ended (discarded: taken back unrecorded); tells _deep. */
void sps_py_deep_ended(int discarded);

/* Every step a Python face begins: off, one predictable branch more. */
static inline sps_zone_t sps_py_begin_step(struct sps_site *site, int face) {
    if (__builtin_expect(sps_py_deep_on, 0))
        return sps_py_deep_step_begin(site, face);
    return sps_py_begin(site, face);
}

static inline void sps_py_end(sps_zone_t t) {
    if (t && t != SPS_PY_STAND_IN_TOKEN) {
        sps_zone_end(t);
        if (__builtin_expect(sps_py_deep_on, 0) && t == sps_py_deep_step)
            sps_py_deep_ended(0);
    }
}

/* auto_mode.c: auto-instrumentation's state, and its standing aside when
 * the script instruments itself (see auto_mode.c). */
struct sps_rec_header;
extern int sps_py_auto_armed; /* a stand-aside callback is registered */
int sps_py_auto_init(PyObject *module);
/* The script began a zone, step, micro-step or phase of its own on site
 * while auto was armed (from sps_py_skip_slow): auto stands aside, before
 * the begin records, when the script records steps of its own (a step or
 * micro-step site, or NULL) or a zone named as one of auto's; a zone of
 * another name nests in auto's and changes nothing. */
void sps_py_auto_user_began(const struct sps_site *site);
/* The mode's fields into h (face.c, when it first writes into a record). */
void sps_py_auto_write(struct sps_rec_header *h);

/* info.c: capture(), status() and the other calls that read state. */
int sps_py_info_init(PyObject *module);
PyObject *sps_py_capture(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *sps_py_status(PyObject *self, PyObject *unused);
PyObject *sps_py_metrics(PyObject *self, PyObject *unused);
PyObject *sps_py_write_report(PyObject *self, PyObject *dir);
/* d[key] = value, dropping the reference to value; -1 when value is NULL
 * (its constructor failed) or the store fails. */
int sps_py_put(PyObject *d, const char *key, PyObject *value);

/* torch_memory.c: torch.cuda's allocator memory recorded as values at the
 * end of each step and micro-step (torch_memory.c says how and why). */
#define SPS_PY_TORCH_MEM_VALUES 4
int sps_py_torch_mem_init(PyObject *module);
/* Before a step (micro 0) or micro-step (micro 1) of the calling thread
 * begins, and before it ends (then inside it, so its row carries the
 * values).  after_end: the begin follows the end of one of the same kind
 * in the same call, with nothing run between (a bare step()): that end's
 * reading serves.  Never raise, never disturb a pending exception. */
void sps_py_torch_mem_begin(int micro, int after_end);
void sps_py_torch_mem_end(int micro);
/* What token (the calling thread's) stands for: 0 an open step, 1 an open
 * micro-step, -1 anything else. */
int sps_py_torch_mem_step_kind(sps_zone_t token);
PyObject *sps_py_torch_mem_status(PyObject *self, PyObject *unused);
PyObject *sps_py_torch_mem_capture(PyObject *self, PyObject *unused);
PyObject *sps_py_torch_mem_set_peak(PyObject *self, PyObject *mode);

/* live.c: the calling thread's last completed step, as one JSON line (str),
 * or None when it has none. */
PyObject *sps_py_last_step_json(PyObject *self, PyObject *unused);

#endif
