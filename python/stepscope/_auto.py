"""Zero-code auto-instrumentation of PyTorch training loops.

``install()`` patches torch, once it has been imported, so that an
unmodified training script gets the same step table as
``stepscope.torch.instrument(model, optimizer, loader)`` gives for one
known model (the rules of the step structure are shared:
stepscope/_steps.py).  ``stepscope run`` calls it from its startup hook;
``stand_aside(reason)`` undoes it (the script instruments itself).

What is timed, per thread (zones are per thread):

- steps: an optimizer's ``step()`` ends the step and opens the next at
  once, so the steps tile the loop and a step's time is the iteration's
  (the script's own work between two optimizer steps is in the step it
  precedes; a value the script records after ``step()`` lands in the next
  step).  The first step opens at the first of a DataLoader fetch, a
  training forward, a backward, a ``zero_grad()`` or an optimizer step;
  after a step was taken back, the next opens the same way.  With several
  optimizers stepping in one iteration (a GAN's discriminator and
  generator), each optimizer step ends a step: the iteration is that many
  steps, each holding the work since the last optimizer step.
- micro-steps: a round is the work up to a backward; a step of several
  rounds (gradient accumulation) has one micro-step a round, a step of one
  none: each step decides for itself (_decide_each_step), its first
  round's micro-step provisional, taken back when the step had one.
- ``data``: each ``next()`` of a DataLoader iterator; ``data.start``:
  each ``iter()`` of a DataLoader (its workers' start-up), outside the
  step unless the step already holds training work (a backward);
  ``data.fetch``: each batch's fetch inside a DataLoader worker process,
  recorded in that process (workers started by fork, Linux's default).
- ``forward``: the outermost call of a module that has parameters (a loss
  module is not a model), with gradients on; ``forward.eval`` with
  gradients off (``torch.no_grad()``, ``inference_mode()``).  Global module
  hooks make every submodule call take torch's slow path, so they are on
  only in discovery windows: from install() to the end of the first step
  that saw a training forward, after each DataLoader ``iter()`` until the
  next step ends, and after a step that ran a backward with no forward
  seen (a model made later; at most MAX_REDISCOVERIES times).  A module
  found at the outermost level gets its own hooks, which time it from then
  on; its submodules keep torch's fast path.
- ``backward``: ``torch.Tensor.backward``; the tensor it was called on is
  recorded as the value ``loss`` when it has one element and is on the
  CPU (``item()`` of a CPU tensor changes nothing).  A loss on a GPU is
  not read (reading it would synchronise the GPU with the CPU); each such
  backward adds 1 to the counter ``loss.on_device``, so the report says why
  ``loss`` is missing.  ``torch.autograd.backward`` called directly is not
  timed.
- ``optimizer``: each optimizer's ``step()``, one a step (as with
  instrument).  ``optimizer.zero_grad``: each optimizer's ``zero_grad()``,
  and ``zero_grad()`` of a model found by the forward discovery.  Inside a
  step on the CPU, ``step()``'s is a chained phase (``phase()``, as with
  instrument): the step's end, which follows at once, ends it at the same
  timestamp, one call and one clock read fewer than a zone; the step's
  closing bookkeeping (its samples, its micro-step's end) is inside it.
  On a GPU, or inside another zone of auto's, it is a zone.  No other
  boundary is shared: the script's own code runs between a fetch and the
  forward, the forward and the backward, the backward and the optimizer.
- ``h2d``: ``Tensor.to``/``Tensor.cuda`` moving a CPU tensor to another
  device; wrapped only once the process has initialised CUDA (looked at
  on install(), each DataLoader iter() and the end of the step after it:
  without CUDA nothing is paid for it), or from install() on with
  STEPSCOPE_AUTO_H2D=1 (tests: the ``meta`` device stands in for a GPU).
- ``samples``: the first dimension of a fetched batch that trains (a
  backward runs after its fetch, before the next fetch), counted when its
  step's optimizer steps.

Forward, backward, optimizer and optimizer.zero_grad are GPU zones when
the last trained model's parameters are on a CUDA device, as with
instrument.

A step that trained nothing (no backward, no optimizer step: the one the
last optimizer step opened, one of a validation loader's fetches and
forwards) is taken back, with its samples, at the next ``iter()`` of a
DataLoader and at a DataLoader iterator's end, so that the work between
epochs and around a validation loader is in no step; so is a step open at
exit or at stand_aside() (the work after the last optimizer step), and
nothing is said about it.  A crash leaves every step that ended.

In a DataLoader worker process the script's own zones (a Dataset's
__getitem__) do not make auto stand aside: they nest inside data.fetch
(stand_aside returns False there).

An exception inside these hooks never reaches the script: it turns the
auto-instrumentation off (stand_aside) with one line on stderr.  The
zones go through ``_stepscope.instrument_face``, priced apart in the
report as hooks.
"""
import atexit as _atexit
import functools as _functools
import os as _os
import sys as _sys
import threading as _threading
import time as _time
import weakref as _weakref

import torch as _torch
import torch.nn.modules.module as _module_mod
import torch.optim.optimizer as _optim_mod
from torch.utils.data import dataloader as _dataloader
from torch.utils.data._utils import fetch as _fetch
from torch.utils.data._utils import worker as _worker

from . import _clocksync, _collectives, _cost, _stepscope
from ._stepscope import instrument_face as _core
from ._steps import DATA_START, FORWARD_EVAL, StepStructure
from ._steps import batch_size as _batch_size

__all__ = ["install", "stand_aside", "installed", "DATA_FETCH", "ZERO_GRAD", "LOSS", "LOSS_ON_DEVICE",
           "MAX_REDISCOVERIES"]

#: the zone of one batch's fetch in a DataLoader worker process
DATA_FETCH = "data.fetch"
#: the zone of a zero_grad(), an optimizer's or a model's: apart from
#: "optimizer" (the optimizer's step() alone), whose count is then the
#: number of optimizer steps, as instrument()'s is
ZERO_GRAD = "optimizer.zero_grad"
#: the value recorded from the tensor backward() was called on
LOSS = "loss"
#: the counter of backward calls whose loss was on a device and not read
LOSS_ON_DEVICE = "loss.on_device"
#: how many times a step with a backward and no forward reopens discovery
MAX_REDISCOVERIES = 8
#: the hooks are priced at exit (about 70 ms) only after this many seconds
#: of auto in the process: a shorter run is left unpriced rather than slowed
PRICE_AFTER_S = 10.0

_grad_enabled = _torch.is_grad_enabled
_Tensor = _torch.Tensor
# the loss goes through the hooks' face, as the zones do: it is the hooks'
# work, priced with them, not one of the script's record() calls
_record = _core.record
_zone_begin = _core.zone_begin
_zone_end = _core.zone_end
_SEQUENCES = (list, tuple)

_on = False              # the patches are in place and recording
_patches = []            # (owner, name, original, wrapper): attributes replaced
_handles = []            # removable hooks (torch 2.x optimizer hooks)
_models = _weakref.WeakKeyDictionary()  # module -> (handles, first parameter), or None: not a model
_global_handles = []     # the discovery window's global module hooks, when open
_discovering = False
_rediscoveries = 0
_cuda = False            # the process has initialised CUDA: GPU zones possible (_watch_cuda)
_cuda_initialized = _torch.cuda.is_initialized
_loops = []              # every thread's _Loop (_watch_cuda lets them choose GPU zones)
_aside_reason = None     # why stand_aside() ran, once it has
_installed_at = 0.0      # time.monotonic() at install()


class _Loop(StepStructure):
    """One thread's training loop, as the patched calls see it.  Each event
    (a fetch, a forward, a backward, a zero_grad(), an optimizer step) is
    one method that begins its zone and one that ends it, with the common
    case inline: the hooks run between a step's real work, with the
    interpreter's caches cold, where each further call frame costs.

    _work here means the step trained: a backward or an optimizer step ran
    in it (a forward with gradients on alone, a validation that forgot
    no_grad(), is no training)."""

    _decide_each_step = True

    def __init__(self):
        StepStructure.__init__(self, gpu=None if _cuda else False)
        # the zone calls of this step, chosen when it opens (_decide_gpu):
        # every zone of the loop begins and ends through these two, with the
        # int token they give (GPU zones when the parameters are on CUDA)
        self._zb = _core.zone_begin
        self._ze = _core.zone_end
        self._outer = None          # the module whose outermost call is running
        self._fwd = None            # its zone
        self._after_backward = False  # a backward ended the last round
        self._optimizing = 0        # inside an optimizer's step() (LBFGS's closure runs the model there)
        self._opt_zones = []        # zones of optimizer steps begun by a pre-hook (torch 2.x)
        self._opt_frames = []       # and the frames of torch's step() wrappers that called it
        self._saw_forward = False   # a training forward ran in the open step
        self._saw_backward = False
        self._param = None          # the first parameter of the last trained model
        self._pending = 0           # samples of the last batch fetched, counted at its first backward

    def _params_on_cuda(self):
        p = self._param
        return p is not None and p.is_cuda

    def _decide_gpu(self):
        StepStructure._decide_gpu(self)
        self._zb = _core.gpu_zone_begin if self._gpu else _core.zone_begin
        self._ze = _core.gpu_zone_end if self._gpu else _core.zone_end

    def _round(self):
        """A training event with no step open, or after a backward: open the
        step when none is, and a round.  Returns 2 when the step was
        opened, 1 when only a round began, 0 when neither."""
        if self._optimizing:
            return 0
        began = 2 if self._open_step() else 1
        self._after_backward = False
        if self._micro_on or not self._decided:
            self._begin_round()
        else:  # no micro-steps: only the count (one call less a step)
            self._rounds += 1
        return began

    # -- the events --------------------------------------------------------
    #
    # The common events (a fetch, a forward, a backward, a zero_grad()) are
    # inline in their wrappers below; these are the rarer paths and the
    # optimizer's step, which torch 2.x's step hooks call as two halves.

    def fetch_found_end(self, began, zone):
        """The fetch found the iterator's end: no batch came, so its zone,
        and the round and step it began, are taken back unrecorded."""
        self._inside -= 1
        _core._zone_discard(zone)
        if began:
            if self._micro:
                _core._zone_discard(self._micro)
                self._micro = 0
            self._rounds -= 1
            self._after_backward = began == 1
        if began == 2:
            _core._zone_discard(self._step)
            self._step = 0
        self._pending = 0
        # the epoch's end: the step opened by its last optimizer step (not
        # inside another zone of ours, which must end first)
        if self._step and not self._work and not self._inside:
            self._drop_idle_step()

    def _drop_idle_step(self):
        """Take back the open step, which holds no training work (only
        fetches, forwards, a zero_grad(), the script's own code): at a
        DataLoader's iter() and its iterator's end, so that what runs
        between epochs or around a validation loader is in no step."""
        self._drop_unstepped("no training")
        self._after_backward = False
        self._saw_forward = self._saw_backward = False

    def _forget_stale_forward(self):
        """A forward that raised leaves no post-hook call on torch < 2.1:
        its zone is taken back at the next event outside a forward (a
        fetch, a backward, an optimizer call, an iter()) or the next call of
        the same model (so a model that calls itself is timed from its
        innermost call)."""
        if self._outer is not None:
            self._outer = None
            zone, self._fwd = self._fwd, None
            if zone is not None:
                self._inside -= 1
                _core._zone_discard(zone)

    def close_raised_steps(self):
        """torch 2.x's step() runs the post-hooks only when the step
        returns: one that raised left its optimizer zone open (and every
        later step in it as a nested one).  Its wrapper's frame is then off
        the stack, so at the next event it is ended here, as a step that
        raised ends under torch 1.13's wrapper (a finally): an optimizer
        step was called.  Its end is this event's time, which is later
        than the raise by the script's handling of it."""
        live = set()
        frame = _sys._getframe(1)
        while frame is not None:
            live.add(id(frame))
            frame = frame.f_back
        while self._opt_frames and id(self._opt_frames[-1]) not in live:
            self._opt_frames.pop()
            self.optimizer_end(self._opt_zones.pop())

    def optimizer_begin(self, optimizer=None):
        if self._optimizing:  # a subclass's step() calling its base's: one zone
            self._optimizing += 1
            return None
        if self._outer is not None:
            self._forget_stale_forward()
        if not self._step:
            self._open_step()
        self._optimizing += 1
        self._work = True
        self._inside += 1
        if self._gpu or self._inside > 1:  # a GPU zone; or inside a zone of ours, which would own a phase
            return self._zb("optimizer")
        # a chained phase: nothing of ours runs between the optimizer's end
        # and its step's, so the step's end ends it (one call and one clock
        # read fewer); the step's closing bookkeeping is inside it
        _core.phase("optimizer")
        return 0

    def optimizer_end(self, zone):
        """zone: optimizer_begin's (None: a nested step(); 0: the phase)."""
        self._optimizing -= 1
        if zone is None:
            return
        self._inside -= 1
        if zone:
            self._ze(zone)
        elif not self._step:  # the step was taken back inside the optimizer
            _core.phase_end()
        self._after_backward = False
        self._end_step()
        if _discovering or (self._saw_backward and not self._saw_forward):
            _after_step(self._saw_forward, self._saw_backward)
        self._saw_forward = self._saw_backward = False
        if not _on:
            self.abandon()
        elif not self._optimizing:
            # the next step opens at once: steps tile the loop, and the
            # script's own work between two optimizer steps (logging, a
            # batch built by hand, a sleep) is in the step it precedes
            self._round()

    def iter_begin(self, loader=None):
        """A DataLoader's iter(): a step that trained nothing is taken back
        (it held only fetches, forwards, a zero_grad(), or nothing but the
        script's code since the last optimizer step); one with training work
        in it stays open, and data.start is inside it.  The discovery window
        opens (a model for this loader's batches may be a new one)."""
        _open_discovery()
        if not _cuda:
            _watch_cuda()
        if self._opt_zones:
            self.close_raised_steps()
        self._forget_stale_forward()
        self._pending = 0
        if self._step and not self._work:
            self._drop_idle_step()
        self._inside += 1
        return _core.zone_begin(DATA_START)

    def cpu_zone_end(self, zone):
        """End a CPU zone (data, data.start) whatever the step's zones are."""
        self._inside -= 1
        _core.zone_end(zone)
        if not _on:
            self.abandon()

    def abandon(self):
        """Take back what is open on this thread (the exit, stand_aside).
        Inside one of its own zones, the zone's end does it."""
        if self._opt_zones:
            self.close_raised_steps()
        if self._inside:
            return False
        self._forget_stale_forward()
        self._drop_unstepped("auto")
        self._after_backward = False
        return True


class _PerThread(_threading.local):
    def __init__(self):
        self.loop = _Loop()
        _loops.append(self.loop)


_tls = None


def _fail(exc):
    """An exception inside a hook: auto turns off, the script goes on."""
    _turn_off("an error in its hooks (%s: %s)" % (type(exc).__name__, exc), "turned itself off")


# -- the forward: outermost module calls -----------------------------------

def _adopt(module):
    """A module met at the outermost level during discovery: a model when it
    has parameters, which gets its own hooks; else remembered as not one."""
    first = next(module.parameters(), None)
    if first is None:
        _models[module] = None
        return None
    handles = (module.register_forward_pre_hook(_instance_pre), _register_post(module.register_forward_hook, _post))
    entry = (handles, first)
    _models[module] = entry
    return entry


def _wrap_getstate(original):
    """Module.__getstate__ (pickle, torch.save of a whole model, deepcopy)
    leaves auto's hooks out of the state: a model saved under auto loads
    where stepscope is not installed, and a copy is a model of its own,
    found as any other."""
    ours = (_instance_pre, _post)

    @_functools.wraps(original or object.__init__)
    def __getstate__(module):
        state = original(module) if original is not None else module.__dict__
        for key in ("_forward_pre_hooks", "_forward_hooks"):
            hooks = state.get(key)
            if hooks and any(hook in ours for hook in hooks.values()):
                if state is module.__dict__:
                    state = dict(state)
                state[key] = type(hooks)((k, h) for k, h in hooks.items() if h not in ours)
        return state
    return __getstate__


def _register_post(register, hook):
    """A forward hook that runs even when the forward raises, where torch
    allows it (always_call, torch >= 2.1)."""
    try:
        return register(hook, always_call=True)
    except TypeError:
        return register(hook)


def _instance_pre(module, inputs, discovered=False):
    """A model's own pre-hook (the discovery window's calls it with
    discovered=True): its call is outermost when no model's is running.
    The forward's zone begins here (inline: see the wrappers' note)."""
    if _on and (discovered or not _discovering):
        try:
            loop = _tls.loop
            if loop._opt_zones:
                loop.close_raised_steps()
            outer = loop._outer
            if outer is not None:
                if outer is not module:
                    return  # a call inside a model's
                loop._forget_stale_forward()
            loop._outer = module
            if _grad_enabled():
                if not loop._step or loop._after_backward:
                    loop._round()
                loop._saw_forward = True
                if _cuda:
                    entry = _models.get(module)
                    loop._param = entry[1] if entry else None
                    if loop._step and loop.gpu is None:
                        loop._decide_gpu()
                name = "forward"
            else:
                if not loop._step and loop.gpu is None:
                    loop._decide_gpu()
                name = FORWARD_EVAL
            loop._inside += 1
            loop._fwd = loop._zb(name)
        except Exception as exc:  # noqa: BLE001
            _fail(exc)


def _global_pre(module, inputs):
    """The discovery window's pre-hook, on every module call: a module
    with parameters met at the outermost level is adopted as a model."""
    if _on:
        try:
            entry = _models.get(module, False)
            if entry is False:
                if _tls.loop._outer is not None:
                    return
                entry = _adopt(module)
            if entry is not None:
                _instance_pre(module, inputs, True)
        except Exception as exc:  # noqa: BLE001
            _fail(exc)


def _post(module, inputs, output):
    """The forward hook, global and a model's own: during discovery both
    run for a model, and the second finds its call ended already."""
    if _on:
        try:
            loop = _tls.loop
            if loop._outer is module:
                loop._outer = None
                zone, loop._fwd = loop._fwd, None
                if zone is None:
                    return
                loop._inside -= 1
                if output is None and _sys.exc_info()[1] is not None:
                    # the forward raised: torch >= 2.1 calls an always_call
                    # hook from its except block, with no output.  Taken
                    # back, as torch 1.13's missing post-hook leaves it
                    _core._zone_discard(zone)
                else:
                    loop._ze(zone)
        except Exception as exc:  # noqa: BLE001
            _fail(exc)


def _open_discovery():
    global _discovering
    if _discovering or not _on:
        return
    _global_handles.append(_module_mod.register_module_forward_pre_hook(_global_pre))
    _global_handles.append(_register_post(_module_mod.register_module_forward_hook, _post))
    _discovering = True


def _close_discovery():
    global _discovering
    _discovering = False
    while _global_handles:
        _global_handles.pop().remove()


def _after_step(saw_forward, saw_backward):
    """A step ended: the discovery window closes once a step has shown its
    model; a step that ran a backward with no forward seen (a model made
    after the window closed) opens it again, a bounded number of times."""
    global _rediscoveries
    if not _cuda:
        _watch_cuda()
    if _discovering:
        if saw_forward or not saw_backward:
            _close_discovery()
    elif saw_backward and not saw_forward and _rediscoveries < MAX_REDISCOVERIES:
        _rediscoveries += 1
        _open_discovery()


# -- the wrappers ------------------------------------------------------------
#
# Each wrapper calls the original alone when auto is off; otherwise its
# event's begin and end around it.  An exception of theirs turns auto off
# (_fail) and the original still runs once, with its own result or
# exception going to the script unchanged.
#
# What auto costs a step is mostly this Python work, run between the
# step's real work with the interpreter's caches cold (bench/bench_auto.py,
# docs/python.md): the wrappers of the common events (a fetch, a backward,
# a zero_grad()) and the forward's hooks hold their event's begin and end
# inline, one frame each, and call _Loop's methods only for the rest
# (opening a step or a round, a stale forward, abandon).  Measured, one
# frame instead of three to five per event is within the noise: the cost
# is the work itself, not the calls.

def _patch(owner, name, make):
    """Replace owner.name by make(original).  An attribute owner inherits
    (Tensor.to is torch._C._TensorBase's) is shadowed, and the shadow
    deleted again at _unpatch."""
    own = vars(owner).get(name)
    original = own if own is not None else getattr(owner, name, None)
    wrapper = make(original)
    setattr(owner, name, wrapper)
    _patches.append((owner, name, own, wrapper))


def _timed(begin, end):
    """make(original) for _patch: a wrapper of a method that runs
    begin(loop, owner) -> zone before it and end(loop, zone) after it (when
    it raises too), both _Loop methods (the rarer events)."""
    def make(original):
        @_functools.wraps(original)
        def timed(owner, *args, **kwargs):
            if not _on:
                return original(owner, *args, **kwargs)
            try:
                loop = _tls.loop
                zone = begin(loop, owner)
            except Exception as exc:  # noqa: BLE001
                _fail(exc)
                return original(owner, *args, **kwargs)
            try:
                return original(owner, *args, **kwargs)
            finally:
                try:
                    end(loop, zone)
                except Exception as exc:  # noqa: BLE001
                    _fail(exc)
        timed._stepscope_auto = True
        return timed
    return make


def _is_model(module):
    return bool(_models.get(module))


_wrap_optimizer_step = _timed(_Loop.optimizer_begin, _Loop.optimizer_end)
_wrap_iter = _timed(_Loop.iter_begin, _Loop.cpu_zone_end)


def _wrap_backward(original):
    """Tensor.backward: the zone "backward", the loss recorded as it begins."""
    @_functools.wraps(original)
    def backward(tensor, *args, **kwargs):
        if not _on:
            return original(tensor, *args, **kwargs)
        try:
            loop = _tls.loop
            if loop._opt_zones:
                loop.close_raised_steps()
            if loop._outer is not None:
                loop._forget_stale_forward()
            if not loop._step or loop._after_backward:
                loop._round()
            loop._work = loop._saw_backward = True
            if loop._pending:  # the batch fetched last trains: its samples count
                loop._samples += loop._pending
                loop._pending = 0
            if tensor.numel() == 1:
                if tensor.is_cpu:
                    _record(LOSS, tensor.item())
                else:
                    _core.count(LOSS_ON_DEVICE, 1)
            loop._inside += 1
            zone = loop._zb("backward")
        except Exception as exc:  # noqa: BLE001
            _fail(exc)
            return original(tensor, *args, **kwargs)
        try:
            return original(tensor, *args, **kwargs)
        finally:
            try:
                if _collectives._dirty:  # DDP's all-reduce ran: its wait, inside backward
                    _collectives.flush()
                loop._inside -= 1
                loop._ze(zone)
                if not loop._optimizing:
                    loop._after_backward = True
                if not _on:
                    loop.abandon()
            except Exception as exc:  # noqa: BLE001
                _fail(exc)
    backward._stepscope_auto = True
    return backward


def _zero_grad_wrapper(admit):
    """make(original) for a zero_grad(): the zone ZERO_GRAD; admit(owner)
    false (a module that is not a model): not timed."""
    def make(original):
        @_functools.wraps(original)
        def zero_grad(owner, *args, **kwargs):
            if not _on or (admit is not None and not admit(owner)):
                return original(owner, *args, **kwargs)
            try:
                loop = _tls.loop
                if loop._opt_zones:
                    loop.close_raised_steps()
                if loop._outer is not None:
                    loop._forget_stale_forward()
                if not loop._step or loop._after_backward:
                    loop._round()
                loop._inside += 1
                zone = loop._zb(ZERO_GRAD)
            except Exception as exc:  # noqa: BLE001
                _fail(exc)
                return original(owner, *args, **kwargs)
            try:
                return original(owner, *args, **kwargs)
            finally:
                try:
                    loop._inside -= 1
                    loop._ze(zone)
                    if not _on:
                        loop.abandon()
                except Exception as exc:  # noqa: BLE001
                    _fail(exc)
        zero_grad._stepscope_auto = True
        return zero_grad
    return make


_wrap_zero_grad = _zero_grad_wrapper(None)
_wrap_model_zero_grad = _zero_grad_wrapper(_is_model)


def _wrap_next(original):
    """A DataLoader iterator's __next__: the zone "data" (a CPU zone), and
    the batch's samples counted."""
    @_functools.wraps(original)
    def __next__(iterator):
        if not _on:
            return original(iterator)
        try:
            loop = _tls.loop
            if loop._opt_zones:
                loop.close_raised_steps()
            if loop._outer is not None:
                loop._forget_stale_forward()
            began = loop._round() if not loop._step or loop._after_backward else 0
            loop._inside += 1
            zone = _zone_begin("data")
        except Exception as exc:  # noqa: BLE001
            _fail(exc)
            return original(iterator)
        try:
            batch = original(iterator)
        except StopIteration:
            try:
                loop.fetch_found_end(began, zone)
            except Exception as exc:  # noqa: BLE001
                _fail(exc)
            raise
        except BaseException:
            try:
                loop.cpu_zone_end(zone)
            except Exception as exc:  # noqa: BLE001
                _fail(exc)
            raise
        try:
            loop._inside -= 1
            _zone_end(zone)
            if type(batch) in _SEQUENCES and batch and type(batch[0]) is _Tensor:  # (inputs, targets)
                shape = batch[0].shape
                n = shape[0] if shape else None
            else:
                n = _batch_size(batch)
            loop._pending = n or 0  # counted when a backward runs before the next fetch
            if not _on:
                loop.abandon()
        except Exception as exc:  # noqa: BLE001
            _fail(exc)
        return batch
    return __next__


def _wrap_fetch(original):
    @_functools.wraps(original)
    def fetch(fetcher, *args, **kwargs):
        # only in a worker process: in the loop's own process the fetch is
        # inside "data" already
        if not _on or _worker._worker_info is None:
            return original(fetcher, *args, **kwargs)
        token = _core.zone_begin(DATA_FETCH)
        try:
            return original(fetcher, *args, **kwargs)
        finally:
            _core.zone_end(token)
    return fetch


def _wrap_copy(original):
    @_functools.wraps(original)
    def copy(tensor, *args, **kwargs):
        if not _on or not tensor.is_cpu:
            return original(tensor, *args, **kwargs)
        token = _core.zone_begin("h2d")
        try:
            out = original(tensor, *args, **kwargs)
        except BaseException:
            _core._zone_discard(token)
            raise
        try:
            if out.is_cpu:  # a change of dtype, or no change: not a copy to a device
                _core._zone_discard(token)
            else:
                _core.zone_end(token)
        except Exception as exc:  # noqa: BLE001
            _fail(exc)
        return out
    return copy


# -- optimizers ----------------------------------------------------------------

def _optimizer_classes():
    seen, todo = [], [_torch.optim.Optimizer]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


def _wrap_class(cls):
    """Wrap the step() and zero_grad() that cls defines itself (torch 1.13:
    every optimizer class defines its own step)."""
    own = vars(cls)
    if "step" in own and not getattr(own["step"], "_stepscope_auto", False) and cls is not _torch.optim.Optimizer:
        _patch(cls, "step", _wrap_optimizer_step)
    if "zero_grad" in own and not getattr(own["zero_grad"], "_stepscope_auto", False):
        _patch(cls, "zero_grad", _wrap_zero_grad)


def _wrap_init(original):
    @_functools.wraps(original)
    def __init__(optimizer, *args, **kwargs):
        if _on:
            try:
                for cls in type(optimizer).__mro__:
                    if isinstance(cls, type) and issubclass(cls, _torch.optim.Optimizer):
                        _wrap_class(cls)
            except Exception as exc:  # noqa: BLE001
                _fail(exc)
        return original(optimizer, *args, **kwargs)
    return __init__


def _step_pre_hook(optimizer, args, kwargs):
    # torch 2.x's global step hooks stay registered while auto is off (the
    # bare rounds of _price_hooks, a stand_aside): off, an optimizer step is
    # the script's alone, as torch 1.13's class wrappers pass it through
    if not _on:
        return
    try:
        loop = _tls.loop
        if loop._opt_zones:
            loop.close_raised_steps()
        zone = loop.optimizer_begin(optimizer)
        loop._opt_zones.append(zone)
        loop._opt_frames.append(_sys._getframe(1))  # torch's wrapper: on the stack until step() ends
    except Exception as exc:  # noqa: BLE001
        _fail(exc)


def _step_post_hook(optimizer, args, kwargs):
    try:
        loop = _tls.loop
        frames = loop._opt_frames
        if frames and frames[-1] is not _sys._getframe(1):
            loop.close_raised_steps()  # a nested step() that raised, inside this one
        if loop._opt_zones:
            loop._opt_frames.pop()
            loop.optimizer_end(loop._opt_zones.pop())
    except Exception as exc:  # noqa: BLE001
        _fail(exc)


def _patch_optimizers():
    optim = _optim_mod
    pre = getattr(optim, "register_optimizer_step_pre_hook", None)
    post = getattr(optim, "register_optimizer_step_post_hook", None)
    if pre is not None and post is not None:  # torch >= 2.0: global step hooks
        _handles.append(pre(_step_pre_hook))
        _handles.append(post(_step_post_hook))
        _patch(_torch.optim.Optimizer, "zero_grad", _wrap_zero_grad)
        return
    for cls in _optimizer_classes():
        _wrap_class(cls)
    _patch(_torch.optim.Optimizer, "__init__", _wrap_init)  # classes defined later


# -- install and stand aside -------------------------------------------------------

def installed():
    """Whether the auto-instrumentation is on in this process."""
    return _on


def _h2d_forced():
    """STEPSCOPE_AUTO_H2D: "1" wraps the copies from install() on, "0"
    never; else (None) once CUDA is in use."""
    force = _os.environ.get("STEPSCOPE_AUTO_H2D", "")
    return force == "1" if force in ("0", "1") else None


def _watch_cuda():
    """Once the process has initialised CUDA (the script moved a model or a
    tensor to a GPU): GPU zones become possible and the copies to a device
    are wrapped.  Looked at on install(), at each DataLoader iter() and at
    the end of a step in a discovery window (the first step after each
    iter(), so no cost a step); torch.cuda.is_available() is never called (on a GPU
    machine it starts the driver, at a cost, in every process that imports
    torch, and before a fork)."""
    global _cuda
    if _cuda or not _cuda_initialized():
        return
    _cuda = True
    for loop in _loops:
        if loop.gpu is False:
            loop.gpu = None
    if _h2d_forced() is None:
        _wrap_copies()


def _wrap_copies():
    _patch(_Tensor, "to", _wrap_copy)
    _patch(_Tensor, "cuda", _wrap_copy)


def install():
    """Patch torch (imported already) for the zero-code instrumentation.
    Returns True when it is on afterwards; False when it was stood aside
    in this process, or stepscope.torch.instrument is active.  Idempotent.
    Call it with the GIL held from the main thread, before the training
    loop starts (stepscope run's startup hook does)."""
    global _on, _tls, _cuda, _installed_at
    _clocksync.install()  # its own patches: they stay when auto stands aside
    if _on:
        return True
    if _aside_reason is not None:
        return False
    from . import torch as _instrument
    if _instrument.Instrumented._backward_owner is not None:
        return False
    _cuda = False
    _installed_at = _time.monotonic()
    del _loops[:]
    _tls = _PerThread()
    _on = True
    try:
        _patch(_Tensor, "backward", _wrap_backward)
        _patch_optimizers()
        _patch(_torch.nn.Module, "zero_grad", _wrap_model_zero_grad)
        _patch(_torch.nn.Module, "__getstate__", _wrap_getstate)
        _patch(_dataloader.DataLoader, "__iter__", _wrap_iter)
        _patch(_dataloader._BaseDataLoaderIter, "__next__", _wrap_next)
        for fetcher in (_fetch._MapDatasetFetcher, _fetch._IterableDatasetFetcher):
            _patch(fetcher, "fetch", _wrap_fetch)
        if _h2d_forced():
            _wrap_copies()
        _watch_cuda()
        _open_discovery()
        _collectives.install()  # never raises: an error there turns only the collectives' timing off
    except Exception as exc:  # noqa: BLE001  (a torch whose internals differ)
        _fail(exc)
        return False
    _atexit.register(_at_exit)
    register = getattr(_stepscope, "_set_auto_callback", None)
    if register is not None:
        register(stand_aside)
    return True


def _unpatch():
    global _on
    _on = False
    _collectives.remove()
    _close_discovery()
    while _handles:
        _handles.pop().remove()
    while _patches:
        owner, name, original, wrapper = _patches.pop()
        if vars(owner).get(name) is wrapper:
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        # else wrapped again over ours (torch's own profile hook on an
        # optimizer class): ours stays and passes every call through
    for module, entry in list(_models.items()):
        if entry is not None:
            for handle in entry[0]:
                handle.remove()
    _models.clear()


def _remove():
    """Undo install() without standing aside (install() may run again):
    bench/bench_auto.py switches the instrumentation on and off this way
    between its interleaved rounds.  The calling thread's open step is
    taken back."""
    global _rediscoveries
    if not _on:
        return
    _unpatch()
    _atexit.unregister(_at_exit)
    _rediscoveries = 0
    _tls.loop.abandon()


def stand_aside(reason):
    """Turn the auto-instrumentation off for good in this process (the
    script instruments its steps itself: the extension calls this when the
    script begins its first step or micro-step, or a zone named as one of
    auto's, stepscope.torch.instrument() too): every
    patch is undone, the calling thread's open step is taken back
    unrecorded (once the zone of a patched call in progress ends, when one
    is), and one line goes to stderr (when it was on).  Returns True: auto
    is off afterwards; or False in a DataLoader worker process, where auto
    stays on and nothing is said: there the script's zones (a Dataset's
    __getitem__) run inside auto's data.fetch and count nothing twice, and
    the extension, told False, stops asking in that process.  Never
    raises."""
    if _on and _worker._worker_info is not None:
        return False
    _turn_off(reason, "stands aside")
    return True


def _turn_off(reason, how):
    global _aside_reason
    if not _on:
        return False
    _aside_reason = str(reason)
    try:
        _unpatch()
    except Exception:  # noqa: BLE001
        pass
    try:
        _atexit.unregister(_at_exit)
        register = getattr(_stepscope, "_set_auto_callback", None)
        # the record says why auto recorded no more; when it stands aside,
        # the extension, which called us, disarmed itself and says why
        # once we return
        if register is not None and how != "stands aside":
            register(None, _aside_reason)
    except Exception:  # noqa: BLE001
        pass
    try:
        _tls.loop.abandon()
    except Exception:  # noqa: BLE001
        pass
    try:
        _sys.stderr.write("stepscope: auto-instrumentation %s: %s\n" % (how, _aside_reason))
    except Exception:  # noqa: BLE001
        pass
    return True


def _at_exit():
    # before the record is closed: the work after the last optimizer step
    # is no step, and nothing is left open to read like a crash; then the
    # hooks are priced for the report
    if _on:
        try:
            _tls.loop._inside = 0
            _tls.loop.abandon()
            if any(loop.steps for loop in _loops) and _time.monotonic() - _installed_at >= PRICE_AFTER_S:
                _price_hooks()
        except Exception:  # noqa: BLE001
            pass


class _Priced:
    """What stepscope._cost.measure_hooks times (as it times instrument):
    a small loop over batches with auto's hooks on, the model adopted as a
    model, on a loop state of its own; remove() switches the hooks off again
    for the next bare round."""

    def __init__(self, model, optimizer, batches, gpu=False):
        global _on
        self._batches = batches
        self._model = model
        _tls.loop = _Loop()
        _adopt(model)
        _on = True

    def __iter__(self):
        return iter(self._batches)

    def remove(self):
        global _on
        _on = False
        entry = _models.pop(self._model, None)
        for handle in entry[0] if entry else ():
            handle.remove()


def _price_hooks():
    """What auto's hooks cost a zone they begin, for the report's overhead
    (the record's hook_zone_ns, as instrument() prices its own): measured
    once, at the exit of a process in which auto ended a step and ran for
    PRICE_AFTER_S at least, unless instrument() measured its hooks already;
    about 70 ms, in a small loop
    of the same measurement (stepscope/_cost.py), the library's part
    skipped, auto's state left as it was."""
    global _on
    if _cost._hooks_measured:
        return
    loop, discovering = _tls.loop, _discovering
    _close_discovery()
    _on = False
    try:
        _cost.measure_hooks(_Priced)
    finally:
        _on = True
        _tls.loop = loop
        if discovering:
            _open_discovery()


def _forget_after_fork():
    # a fork child (a DataLoader worker) starts with no step open: the
    # parent's tokens mean nothing to the child's record
    global _tls
    if _on:
        del _loops[:]
        _tls = _PerThread()


_os.register_at_fork(after_in_child=_forget_after_fork)
