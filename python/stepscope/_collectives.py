"""Collective waits for torch.distributed: the time a rank spends blocked on
its peers, recorded as waits (stepscope.wait: a zone of kind "wait", so the
enclosing zone's self time excludes it).  Used by the zero-code
auto-instrumentation (stepscope._auto) and by stepscope.torch.instrument;
docs/distributed.md, "Collective wait", says what is timed and what is not.

Three parts:

- Collectives called from Python (``torch.distributed.all_reduce``,
  ``broadcast``, ``barrier``, ``all_gather`` and its tensor forms,
  ``reduce_scatter`` and its tensor forms, ``reduce``, ``gather``,
  ``scatter``, ``all_to_all`` and ``all_to_all_single``): the module
  attribute is replaced, in ``torch.distributed`` and
  ``torch.distributed.distributed_c10d``, by a wrapper that times a
  synchronous call as a wait named after the function.  With
  ``async_op=True`` the call is not timed (it does not block); the Work it
  returns is remembered (by id: a Work takes no attributes), and its
  ``wait()`` is timed as a wait of that collective's name (``Work.wait`` is
  replaced on the class; a Work of someone else's is passed through).
- DDP's gradient all-reduce runs in C++ inside ``backward()``, without
  these functions.  A DistributedDataParallel made while this is on gets a
  communication hook that does exactly DDP's default (the bucket multiplied
  by 1 / the group's size, then an asynchronous all-reduce of its sum, as
  the reducer's C++ does without a hook) and notes, on the library's
  clock, when the last bucket of a backward was handed over and when the
  last bucket's all-reduce completed.  From the hand-over on, the thread that called
  ``backward()`` has no gradient left to compute and waits for its peers;
  ``flush()``, called by the backward wrappers while their "backward" zone
  is still open, records that interval as the wait ``ddp.all_reduce``
  inside it, on the calling thread.  A hook the script registers later
  (``register_comm_hook``, once, as torch allows) replaces the default
  behind ours and is timed the same way; a second registration raises as
  torch does.  A DDP that has a hook of the script's before ours could be
  registered is not timed, and one line on stderr says so.
- GPU (NCCL): the futures complete when the work is queued, not when the
  GPU has reduced, so what is recorded is the CPU's wait, near zero; the
  GPU's wait is not measured.

An error in this module's own work turns it off (``_fail``) with one line
on stderr and never reaches the script: the collectives are called as
before, and a registered hook keeps doing the default all-reduce, untimed.
"""
import atexit as _atexit
import functools as _functools
import inspect as _inspect
import itertools as _itertools
import os as _os
import sys as _sys
import time as _time
import weakref as _weakref

import torch as _torch

from ._stepscope import instrument_face as _core

__all__ = ["install", "remove", "installed", "flush", "COLLECTIVES", "DDP_WAIT"]

#: the collectives timed when called from Python, where torch has them
COLLECTIVES = ("all_reduce", "broadcast", "barrier", "all_gather", "all_gather_into_tensor", "_all_gather_base",
               "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "reduce", "gather", "scatter",
               "all_to_all", "all_to_all_single")
#: the wait of DDP's gradient all-reduce inside backward()
DDP_WAIT = "ddp.all_reduce"
#: async Works remembered until their wait(): beyond this many never waited, the oldest are forgotten
MAX_PENDING_WORKS = 1024

_on = False           # timing (the patches may outlive it: a registered hook cannot be taken out)
_users = 0            # install() calls not yet matched by remove()
_patches = []         # (owner, name, original, wrapper): undone by the last remove()
_registers = []       # the same for DDP's two registrations: never undone (see install)
_pending_works = {}   # id(Work) -> collective name, for async_op=True calls
_states = _weakref.WeakKeyDictionary()  # DDP module -> _DDPWaits, for the DDPs that have our hook
_dirty = []           # _DDPWaits with a hand-over not yet flushed (a list: the common case is one DDP)
_clock = _core.clock_now
_ddp_completed = _core._ddp_completed
_wait_begin = _core.wait_begin
_zone_end = _core.zone_end
_dist = None          # torch.distributed, once imported
_original_all_reduce = None
_failed = None        # why _fail turned the timing off
#: how long the exit waits, at most, for gloo's threads to let go of our callbacks (_drain)
DRAIN_AT_EXIT_S = 2.0
_drain_registered = False


def installed():
    """Whether collectives are being timed."""
    return _on


def _fail(exc):
    """Turn the timing off for good in this process, with one line on stderr."""
    global _on, _failed
    if _failed is not None:
        return
    _failed = "%s: %s" % (type(exc).__name__, exc)
    _on = False
    try:
        _sys.stderr.write("stepscope: collective waits are no longer timed: an error in stepscope's wrappers (%s)\n"
                          % _failed)
    except Exception:  # noqa: BLE001
        pass


# -- collectives called from Python ----------------------------------------------

def _async_index(fn):
    """The position of fn's async_op parameter, or None."""
    try:
        names = list(_inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("async_op") if "async_op" in names else None


def _wrap_collective(name, original):
    at = _async_index(original)

    @_functools.wraps(original)
    def collective(*args, **kwargs):
        if not _on:
            return original(*args, **kwargs)
        if kwargs.get("async_op") or (at is not None and len(args) > at and args[at]):
            work = original(*args, **kwargs)
            if work is not None and _on:
                try:
                    if len(_pending_works) >= MAX_PENDING_WORKS:  # the oldest, never waited
                        del _pending_works[next(iter(_pending_works))]
                    _pending_works[id(work)] = name
                except Exception as exc:  # noqa: BLE001
                    _fail(exc)
            return work
        try:
            token = _wait_begin(name)
        except Exception as exc:  # noqa: BLE001
            _fail(exc)
            return original(*args, **kwargs)
        try:
            return original(*args, **kwargs)
        finally:
            _zone_end(token)
    collective._stepscope_wait = True
    return collective


def _wrap_work_wait(original):
    @_functools.wraps(original)
    def wait(work, *args, **kwargs):
        name = _pending_works.pop(id(work), None) if _pending_works else None
        if name is None or not _on:
            return original(work, *args, **kwargs)
        try:
            token = _wait_begin(name)
        except Exception as exc:  # noqa: BLE001
            _fail(exc)
            return original(work, *args, **kwargs)
        try:
            return original(work, *args, **kwargs)
        finally:
            _zone_end(token)
    wait._stepscope_wait = True
    return wait


def _patch(owner, name, wrapper, into=_patches):
    original = getattr(owner, name)
    setattr(owner, name, wrapper)
    into.append((owner, name, original, wrapper))


# -- DDP's gradient all-reduce ----------------------------------------------------

class _DDPWaits:
    """The hook's state for one DDP: its process group, whether its
    gradients are views of the buckets, the hook the script registered
    behind ours (None: DDP's default), and the clock at the last hand-over
    and the last completion of this backward's buckets."""

    __slots__ = ("group", "as_view", "user", "handed", "done", "__weakref__")

    def __init__(self, group, as_view):
        self.group = group
        self.as_view = as_view
        self.user = None
        self.handed = 0
        self.done = 0

    def __reduce__(self):
        # torch 2.x keeps (hook, state) in ddp._comm_hooks, which a pickled
        # or copied DDP carries: a process group cannot be pickled, so a
        # copy gets a fresh state on the default group
        return (_DDPWaits, (None, self.as_view))


# -- callbacks on the threads that complete the futures -----------------------------
#
# Future.then(callback) keeps the callback in a guard that, after the
# callback ran on the thread completing the future (a gloo worker), takes
# the GIL once more to release it.  That thread is not Python's: when the
# backward that waited for the future returns and the interpreter
# finalizes within the GIL's switch interval (5 ms: a rank that exits right
# after its last step), the thread still waiting for the GIL is ended by
# Python with pthread_exit, whose unwinding through that guard's noexcept
# destructor aborts the process ("terminate called without an active
# exception", SIGABRT).  So every callback of ours is a _Then, which counts
# its release, and the exit waits (GIL released) until gloo's threads have
# released them all (_drain).

_thens_made = _itertools.count()   # next() is atomic under the GIL, from any thread
_thens_gone = _itertools.count()


class _Then(_functools.partial):
    """A Future.then() callback of ours: a functools.partial of the C
    callback (_stepscope._ddp_completed), which partial's own C code calls,
    so no frame of stepscope's runs on gloo's thread and a failed
    all-reduce's error reaches DDP as torch raised it; counted when made
    and when torch releases it (_drain).  One a callback: a shared one
    would be released without being freed, uncounted."""

    __slots__ = ()

    def __new__(cls, *args):
        self = super().__new__(cls, *args)
        next(_thens_made)
        return self

    def __del__(self):
        try:
            next(_thens_gone)
        except Exception:  # noqa: BLE001  (freed while the interpreter tears the module down)
            pass


def _thens_held():
    """How many of our callbacks torch still holds (reading moves both counts by one)."""
    return next(_thens_made) - next(_thens_gone)


def _drain(limit_s=None):
    """At exit, before the interpreter finalizes (registered once a DDP has
    our hook): wait, with the GIL released, until the threads that
    completed our futures have released our callbacks (at most
    DRAIN_AT_EXIT_S: a future that never completes keeps its callback;
    nothing is left to wait for then), and a moment more for what they
    release after them (a script's hook's callback, chained under ours).
    Returns how many were still held."""
    held = _thens_held()
    deadline = _time.monotonic() + (DRAIN_AT_EXIT_S if limit_s is None else limit_s)
    while held > 0 and _time.monotonic() < deadline:
        _time.sleep(0.001)
        held = _thens_held()
    _time.sleep(0.005)  # the same callback's last releases, after the count
    return held


def _forget_thens_after_fork():
    # a forked child (a DataLoader worker) has no gloo thread: nothing of the
    # parent's is held for it
    global _thens_made, _thens_gone
    _thens_made, _thens_gone = _itertools.count(), _itertools.count()


_os.register_at_fork(after_in_child=_forget_thens_after_fork)


def _default_allreduce(st, bucket):
    """DDP's default reduction of a bucket, as a Work's future (its value
    [tensor]).  The reducer (C++) without a hook multiplies each gradient
    by 1 / world size as it copies it into the bucket, or divides it in
    place where the gradient is a view of the bucket already
    (gradient_as_bucket_view=True, from a bucket's second use on), then
    all-reduces the sum.  The same arithmetic here gives the same bits, but
    in the first use of a bucket under gradient_as_bucket_view=True (a
    division where DDP multiplies: at most the last bit, as torch's own
    allreduce_hook, which always divides)."""
    group = st.group if st.group is not None else _dist.group.WORLD
    tensor = bucket.buffer()
    if st.as_view:
        tensor.div_(group.size())
    else:
        tensor.mul_(1.0 / group.size())
    return _original_all_reduce(tensor, group=group, async_op=True).get_future()


def _builtin_allreduce(st, bucket):
    """_register_builtin_comm_hook(ALLREDUCE) behind ours: the default."""
    return _default_allreduce(st, bucket).then(_Then(_ddp_completed, None, True))


def stepscope_timed_comm_hook(st, bucket):
    """The communication hook stepscope registers on a DDP: the script's
    hook, or DDP's default all-reduce, with the hand-over and completion
    noted for the backward's wait.  One callback a bucket (C: it never
    raises an error of its own, and a failed all-reduce's error reaches DDP
    as torch raised it), on the thread that completes it."""
    # the hand-over: the default's as its all-reduce starts (read before,
    # so that its completion is never earlier); a script's hook's when it
    # returns (its own work, a compression, is the rank's, not a wait).
    # The callback: C (_stepscope._ddp_completed) bound by functools.partial,
    # so that no frame of stepscope's runs in it: a failed all-reduce's error
    # reaches DDP as torch raised it, and nothing of ours can raise.  Made a
    # bucket, not kept on st: st holding it would be a reference cycle, and
    # the collector may free a cycle on gloo's thread, in this callback
    user = st.user
    if user is None:
        handed = _clock() if _on else 0
        fut = _default_allreduce(st, bucket)
        if not _on:
            return fut.then(_Then(_ddp_completed, None, True))
        then = _Then(_ddp_completed, st, True)
    else:
        fut = user[1](user[0], bucket)
        if not _on:
            return fut
        handed = _clock()
        then = _Then(_ddp_completed, st, False)
    try:
        st.handed = handed
        if not _dirty or _dirty[-1] is not st:
            _dirty.append(st)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
    return fut.then(then)


def flush():
    """Record the DDP waits of the backward that just ran, on the calling
    thread, inside its innermost open zone (the backward wrappers call it
    before their "backward" zone ends): from the last bucket's hand-over to
    the last all-reduce's completion, where that is later."""
    while _dirty:
        st = _dirty.pop()
        handed, done = st.handed, st.done
        st.handed = st.done = 0
        if _on and done > handed:
            try:
                _core.wait_record(DDP_WAIT, handed, done)
            except Exception as exc:  # noqa: BLE001
                _fail(exc)


def _attach(ddp):
    """Give ddp our hook (DDP's default behind it); False when it cannot
    be (a hook is registered already: said on stderr)."""
    if ddp in _states:
        return True
    st = _DDPWaits(getattr(ddp, "process_group", None), bool(getattr(ddp, "gradient_as_bucket_view", False)))
    try:
        _original_register[0](ddp, st, stepscope_timed_comm_hook)
    except RuntimeError as exc:
        _sys.stderr.write("stepscope: DDP's gradient all-reduce is not timed as a wait: the model has a "
                          "communication hook of its own already (%s)\n" % (str(exc).splitlines()[0][:120],))
        return False
    _states[ddp] = st
    global _drain_registered
    if not _drain_registered:
        _drain_registered = True
        _atexit.register(_drain)
    return True


_original_register = [None, None]  # DDP.register_comm_hook, DDP._register_builtin_comm_hook


def _wrap_ddp_init(original):
    @_functools.wraps(original)
    def __init__(ddp, *args, **kwargs):
        original(ddp, *args, **kwargs)
        if _on:
            try:
                _attach(ddp)
            except Exception as exc:  # noqa: BLE001
                _fail(exc)
    return __init__


def _wrap_register(original):
    """DDP.register_comm_hook: on a DDP with our hook, the script's hook
    goes behind ours (once, as torch allows); on another, torch's own."""
    @_functools.wraps(original)
    def register_comm_hook(ddp, state, hook):
        st = _states.get(ddp)
        if st is None:
            return original(ddp, state, hook)
        if st.user is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        ddp._check_comm_hook(hook)
        logger = getattr(ddp, "logger", None)
        if logger is not None:
            logger._set_comm_hook_name(hook.__qualname__)
        st.user = (state, hook)
    return register_comm_hook


def _wrap_register_builtin(original):
    """DDP._register_builtin_comm_hook: on a DDP with our hook, the builtin's
    Python twin goes behind ours (ALLREDUCE is the default already)."""
    @_functools.wraps(original)
    def _register_builtin_comm_hook(ddp, comm_hook_type):
        st = _states.get(ddp)
        if st is None:
            return original(ddp, comm_hook_type)
        if st.user is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        kinds = _dist.BuiltinCommHookType
        if comm_hook_type == kinds.ALLREDUCE:
            st.user = (st, _builtin_allreduce)
        elif comm_hook_type == kinds.FP16_COMPRESS:
            st.user = (st.group, default_hooks.fp16_compress_hook)
        else:
            raise RuntimeError("stepscope: unknown builtin communication hook %r" % (comm_hook_type,))
    return _register_builtin_comm_hook


# -- on and off ------------------------------------------------------------------

def install():
    """Time collectives from now on (auto's install(), instrument()).  A
    call that returns True is matched by a remove(); the patches go at the
    last.  Returns whether timing is on.  Never raises."""
    global _on, _users, _dist, _original_all_reduce
    if _failed is not None:
        return False
    if _patches:
        _users += 1
        _on = True
        return True
    try:
        import torch.distributed as dist
        if not dist.is_available():
            return False
        from torch.distributed import distributed_c10d as c10d
        from torch.nn.parallel import distributed as ddp_mod
        _dist = dist
        _original_all_reduce = c10d.all_reduce
        for name in COLLECTIVES:
            original = getattr(c10d, name, None)
            if original is None or getattr(original, "_stepscope_wait", False):
                continue
            wrapper = _wrap_collective(name, original)
            _patch(c10d, name, wrapper)
            if getattr(dist, name, None) is original:
                _patch(dist, name, wrapper)
        work = _torch._C._distributed_c10d.Work
        _patch(work, "wait", _wrap_work_wait(work.wait))
        ddp = ddp_mod.DistributedDataParallel
        _patch(ddp, "__init__", _wrap_ddp_init(ddp.__init__))
        if not _registers:
            # once for the process: a DDP that has our hook keeps it (torch
            # cannot take one out), and the script's register_comm_hook must
            # reach it after remove() too; on any other DDP they call torch's
            _original_register[0] = ddp.register_comm_hook
            _original_register[1] = ddp._register_builtin_comm_hook
            _patch(ddp, "register_comm_hook", _wrap_register(ddp.register_comm_hook), _registers)
            _patch(ddp, "_register_builtin_comm_hook", _wrap_register_builtin(ddp._register_builtin_comm_hook),
                   _registers)
    except Exception as exc:  # noqa: BLE001  (a torch whose internals differ)
        _unpatch()
        _fail(exc)
        return False
    _users += 1
    _on = True
    return True


def attach(model):
    """instrument(model, ...) of a DDP made before install(): give it our
    hook now, unless it has one.  Never raises."""
    if not _on:
        return False
    try:
        from torch.nn.parallel import DistributedDataParallel
        return isinstance(model, DistributedDataParallel) and _attach(model)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return False


def _unpatch():
    while _patches:
        owner, name, original, wrapper = _patches.pop()
        if vars(owner).get(name) is wrapper:
            setattr(owner, name, original)
        # else wrapped again over ours: ours stays and passes calls through


def remove():
    """Undo one install(): at the last, the collectives are called untimed
    again.  A DDP that has our hook keeps it (torch cannot take one out):
    it keeps doing DDP's default all-reduce (or the script's hook), untimed,
    and a script's register_comm_hook still reaches it."""
    global _on, _users
    if _users > 0:
        _users -= 1
    if _users:
        return
    _on = False
    _pending_works.clear()
    del _dirty[:]
    _unpatch()
