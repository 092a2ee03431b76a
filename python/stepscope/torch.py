"""stepscope.torch: zones for a PyTorch training loop without editing its body.

    loader = stepscope.torch.instrument(model, optimizer, loader)
    for x, y in loader:                      # "data": fetching the batch
        loss = loss_fn(model(x), y)          # "forward": the model's call
        loss.backward()                      # "backward"
        optimizer.step()                     # "optimizer"; the step ends here
        optimizer.zero_grad()

One step runs from the fetch of its first batch to the end of
``optimizer.step()``; a ``stepscope.record`` or ``stepscope.count`` after
``optimizer.step()`` (the loss, as above) still belongs to that step (the
library gives what a thread records between two steps to the step just
ended).  With gradient accumulation (several batches per optimizer step)
each batch is a micro-step: pass ``accumulation_steps=N``, or leave it to
the first step that ends in ``optimizer.step()``, which opens a micro-step
per batch and, when its optimizer step comes after a single batch, takes
its one micro-step back unrecorded and stops (a step ended otherwise, by
a peek with ``next(iter(loader))`` or a break, decides nothing).  Each
batch's size (the first dimension of its first tensor) goes to the counter
"samples" when its step's optimizer step ends: only trained batches count.

A step that holds only its fetch (a peek, a break before the forward) is
taken back unrecorded when its iterator closes, at the next iter() or at
remove().  Accumulation left over at an epoch's end goes on into the next
epoch's first step (taken back at iter() and opened again at the next
batch, so that data.start is outside every step); left over at remove()
or the process's exit it is taken back, said on stderr, and counted in
``dropped`` (batches fetched but never stepped).

What is not training is named apart:

- forward.eval: a call of ``model`` outside a step (after the loop,
  between epochs, before the first batch) or with gradients off
  (``torch.no_grad()``, ``torch.inference_mode()``): evaluation and
  inference, not the training forward.  ``model.training`` is not looked
  at: a model in ``eval()`` mode that trains (frozen batch norm) is
  training;
- data.start: each ``iter()`` of the loader, where a DataLoader with
  workers starts them (or, with persistent workers, resets them), once per
  epoch, outside the step (the first batch's wait is in that step's
  "data").

How each part is timed:

- data: the wrapped loader times each ``next()`` of the real one;
- forward: a forward pre-hook and a forward hook on ``model`` (its own
  call only, not its submodules');
- backward: ``torch.Tensor.backward`` is wrapped while the instrumentation
  is on, so the zone is on the calling thread whatever device the graph
  runs on (autograd's own hooks may run on a device thread);
- optimizer: ``optimizer.step`` is wrapped on the instance (with
  functools.wraps, bound to the optimizer, so an LR scheduler made before
  or after ``instrument`` keeps its step counter working).  Inside a step
  on the CPU it is a chained phase (``stepscope.phase``): the step's end,
  which follows at once, ends it at the same timestamp, one clock read and
  one call fewer than a zone.  The step's closing bookkeeping (counting
  its samples, ending its micro-step) is therefore inside "optimizer", a
  microsecond or so that a zone left in the step's own time.  Called
  outside a step, it is a zone.

Why only the optimizer: the other boundaries are not shared.  The loss is
computed between the model's call and ``backward()``, the caller's own code
(gradient clipping, a scaler) runs between ``backward()`` and
``optimizer.step()``, and the batch is moved to its device between a fetch
and the model's call; chaining those phases would put that code into
"forward", "backward" or "data".  Each keeps its own begin and end.

When the model's parameters are on a CUDA device (checked as each step
begins, so a model moved later is followed), forward, backward and
optimizer are GPU zones (``stepscope.gpu_zone`` on the current stream):
the report gets ``forward.gpu_ms`` and so on next to their CPU time.
``gpu=True`` or ``gpu=False`` decides instead.  A phase reads the CPU
clock only, so on the GPU "optimizer" stays a GPU zone.

``instrument`` returns the wrapped loader; ``remove()`` on it takes every
hook and wrapper away again.  One instrumentation per optimizer; the loop
must run on one thread (zones are per thread).
"""

import atexit as _atexit
import functools
import types

import torch as _torch

from . import _collectives, _cost
# instrument's calls are counted apart in the record, to be priced as hooks
from ._stepscope import _note_instrument
from ._stepscope import instrument_face as _core
from ._steps import DATA_START, FORWARD_EVAL, StepStructure
from ._steps import batch_size as _batch_size

__all__ = ["instrument", "Instrumented", "FORWARD_EVAL", "DATA_START"]

_grad_enabled = _torch.is_grad_enabled


class Instrumented(StepStructure):
    """The wrapped loader (iterate it as the original) and the hooks.  The
    step structure's rules are StepStructure's (stepscope/_steps.py); a
    round is a batch."""

    # Only one wrapper of Tensor.backward at a time: the innermost would
    # otherwise see the outer's zones and the outer never unwrap cleanly.
    _backward_owner = None
    _voice = "stepscope.torch"

    def __init__(self, model, optimizer, loader, accumulation_steps=None, gpu=None):
        if accumulation_steps is not None and (not isinstance(accumulation_steps, int) or accumulation_steps < 1):
            raise ValueError("accumulation_steps must be a positive int, not %r" % (accumulation_steps,))
        if gpu is not None and not isinstance(gpu, bool):
            raise TypeError("instrument: gpu must be None, True or False, not %r" % (gpu,))
        if not isinstance(model, _torch.nn.Module):
            raise TypeError("instrument: model must be a torch.nn.Module, not %s" % type(model).__name__)
        if not callable(getattr(optimizer, "step", None)):
            raise TypeError("instrument: optimizer has no step() to time")
        if Instrumented._backward_owner is not None:
            raise RuntimeError("instrument: another instrumentation is active; remove() it first")
        StepStructure.__init__(self, accumulation_steps, gpu)
        self.model = model
        self.optimizer = optimizer
        self.loader = loader
        self.accumulation_steps = accumulation_steps
        self._forward = []      # tokens of forward calls in progress (re-entrant models)
        self._decide_gpu()

        self._pre = model.register_forward_pre_hook(self._forward_begin)
        self._post = model.register_forward_hook(self._forward_end)
        self._original_backward = _torch.Tensor.backward
        original_backward = self._original_backward

        @functools.wraps(original_backward)
        def backward(tensor, *args, **kwargs):
            self._work = self._work or bool(self._step)
            zone = self._begin("backward")
            try:
                return original_backward(tensor, *args, **kwargs)
            finally:
                if _collectives._dirty:  # DDP's all-reduce ran: its wait, inside backward
                    _collectives.flush()
                self._end(zone)

        _torch.Tensor.backward = backward
        Instrumented._backward_owner = self
        # collectives as waits; a DDP model gets the hook that times its
        # gradient all-reduce (stepscope/_collectives.py)
        self._collectives = _collectives.install()
        _collectives.attach(model)
        self._original_step = optimizer.step
        self._step_was_own = "step" in vars(optimizer)  # an instance attribute already (a scheduler's wrapper)
        self._removed = False
        self._done = False      # remove() ran
        _atexit.register(self._at_exit)
        original_step = self._original_step

        @functools.wraps(original_step)
        def step(_optimizer, *args, **kwargs):
            if self._removed:  # wrapped by someone after us, so left in place by remove()
                return original_step(*args, **kwargs)
            self._work = self._work or bool(self._step)
            if self._step and not self._gpu:
                # a chained phase: nothing of ours runs between the end of
                # the optimizer and the end of its step, so the step's end
                # (in _end_step) ends it, at the step's own timestamp
                _core.phase("optimizer")
                try:
                    return original_step(*args, **kwargs)
                finally:
                    self._end_step()
            zone = self._begin("optimizer")
            try:
                return original_step(*args, **kwargs)
            finally:
                self._end(zone)
                self._end_step()

        # A method bound to the optimizer, as the one it replaces: an LR
        # scheduler made after instrument() wraps optimizer.step through its
        # __self__ and __func__ (torch's with_counter), which a plain
        # function lacks.
        self._step_function = step
        optimizer.step = types.MethodType(step, optimizer)

    def _params_on_cuda(self):
        first = next(self.model.parameters(), None)
        return first is not None and first.is_cuda

    # -- the step structure ------------------------------------------------

    def _begin_batch(self):
        """Open the step (when none is) and the batch's micro-step; returns
        whether this batch opened the step."""
        opened = self._open_step()
        self._begin_round()
        return opened

    def _take_back_batch(self, data, opened):
        """The fetch that found the end of a loader without len(): no batch
        came, so its data zone, the micro-step it began and, when it opened
        the step, the step are taken back unrecorded (innermost first): no
        empty step is counted per epoch.  A step that earlier batches
        opened (accumulation left over at an epoch's end) stays open, as
        with a loader that has a length."""
        _core._zone_discard(data)
        if self._micro:
            _core._zone_discard(self._micro)
            self._micro = 0
        self._rounds -= 1
        if opened:
            _core._zone_discard(self._step)
            self._step = 0

    # -- hooks ---------------------------------------------------------------

    def _forward_begin(self, module, inputs):
        if self._step and _grad_enabled():
            self._work = True
            self._forward.append(self._begin("forward"))
            return
        if not self._step:  # no step looked at the parameters' device for it
            self._decide_gpu()
        self._forward.append(self._begin(FORWARD_EVAL))

    def _forward_end(self, module, inputs, output):
        if self._forward:
            self._end(self._forward.pop())

    # -- the loader ----------------------------------------------------------

    def __iter__(self):
        self._leave_step_for_iter()
        # a zone of its own, outside any step: with workers this is their
        # start-up, which no step or "data" would otherwise hold
        token = _core.zone_begin(DATA_START)
        try:
            iterator = iter(self.loader)
        finally:
            _core.zone_end(token)
        # With a length, the fetch that can only find the end is made
        # outside any step, so no empty step is counted per epoch.
        try:
            length = len(self.loader)
        except TypeError:
            length = None
        fetched = 0
        while True:
            if length is not None and fetched >= length:
                for batch in iterator:  # a loader longer than its len(): go on as usual
                    raise RuntimeError("instrument: the loader gave more batches than its len()")
                return
            fetched += 1
            opened = self._begin_batch()
            token = _core.zone_begin("data")
            try:
                batch = next(iterator)
            except StopIteration:
                self._take_back_batch(token, opened)  # the fetch that found the end belongs to no step
                return
            _core.zone_end(token)
            n = _batch_size(batch)
            if n is not None:
                self._samples += n
            try:
                yield batch
            except GeneratorExit:  # the loop broke out (or a peek's iterator was dropped)
                if self._work:     # its last step ends here
                    self._close_step()
                    self._work = False
                    self._samples = 0
                else:              # a step that holds only its fetch trained nothing
                    self._take_back_step()
                    self._forget_step()
                raise

    def _at_exit(self):
        # Python's exit, before the record is closed: no step is left open
        # to read like a crash
        self._drop_unstepped("the process exited")

    def __len__(self):
        return len(self.loader)

    def remove(self):
        """Take the hooks and wrappers away; an open step, which no
        optimizer step ended, is taken back unrecorded (see
        _drop_unstepped)."""
        if self._done:
            return
        self._done = True
        _atexit.unregister(self._at_exit)
        self._drop_unstepped("remove()")
        self._pre.remove()
        self._post.remove()
        if self._collectives:
            _collectives.remove()
        if Instrumented._backward_owner is self:
            _torch.Tensor.backward = self._original_backward
            Instrumented._backward_owner = None
        current = vars(self.optimizer).get("step")
        if getattr(current, "__func__", None) is not self._step_function:
            # wrapped again after us (an LR scheduler made later): taking our
            # layer out would take theirs too, so ours passes calls through
            self._removed = True
        elif self._step_was_own:
            self.optimizer.step = self._original_step
        else:
            vars(self.optimizer).pop("step", None)  # the class's method shows through again


def instrument(model, optimizer, loader, accumulation_steps=None, gpu=None):
    """Time data, forward, backward and optimizer of a loop over loader.

    Returns the loader to iterate instead of ``loader`` (see the module's
    docstring); ``.remove()`` on it undoes everything.  gpu: None times
    forward, backward and optimizer on the GPU too (GPU zones) when the
    model's parameters are on a CUDA device; True or False decides."""
    # before anything is recorded: stepscope run's auto-instrumentation,
    # if this process has it, stands aside (it would count the same steps)
    _note_instrument()
    if Instrumented._backward_owner is None:  # else the constructor says why not
        _cost.measure_hooks(Instrumented)  # once per process, for the report
    return Instrumented(model, optimizer, loader, accumulation_steps, gpu)
