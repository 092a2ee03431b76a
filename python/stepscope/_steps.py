"""The step structure shared by stepscope.torch.instrument and the
zero-code auto-instrumentation (stepscope._auto).

Both open a step at the first event of a training iteration, end it when
the optimizer steps, and split a step into micro-steps when the loop
accumulates gradients over several rounds (batches for instrument,
backward calls for auto).  Until the first step has ended in an optimizer
step, micro-steps are provisional: the first step's round opens one, and a
step of a single round takes it back unrecorded and decides that the loop
does not accumulate (instrument); with _decide_each_step (auto) every
step decides so for itself.  Auto also opens the next step as the
optimizer's ends (stepscope/_auto.py), which instrument does not.  A step that ends otherwise (remove(), the process's
exit, a new iter() of the loader with nothing trained) is taken back
unrecorded; the zones recorded inside it stay counted.

instrument's zones begin and end through StepStructure._begin and
StepStructure._end (a CPU zone, or a GPU zone on the current stream when
the step's parameters are on a CUDA device); auto's through the two calls
its loop's _decide_gpu chose (_Loop._zb and _Loop._ze, one frame less on
its hot path): the places to change how a zone is recorded.  On the CPU
both begin the optimizer's step as a chained phase (``phase()``), which
the step's end here (_end_step, or its micro-step's) ends.  Steps and
micro-steps begin and end here.  The calls go through
``_stepscope.instrument_face``, so the record counts them as the hooks'
and the report prices them apart (python/src/face.c).

Not thread-safe: one StepStructure belongs to the thread whose loop it
follows (zones are per thread).
"""
import sys as _sys

import torch as _torch

from ._stepscope import instrument_face as _core

#: the zone of a model call outside a step or with gradients off
FORWARD_EVAL = "forward.eval"
#: the zone of iter(loader): a DataLoader's worker start-up
DATA_START = "data.start"


def batch_size(batch):
    """The first dimension of the batch's first tensor, or None."""
    if isinstance(batch, _torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else None
    if isinstance(batch, (list, tuple)):
        for item in batch:
            n = batch_size(item)
            if n is not None:
                return n
    if isinstance(batch, dict):
        for item in batch.values():
            n = batch_size(item)
            if n is not None:
                return n
    return None


class StepStructure:
    """The open step and micro-step of one training loop, and the rules
    that end them or take them back.  Subclasses say where a step's
    parameters are (_params_on_cuda) and when rounds begin."""

    #: who speaks on stderr when accumulation is left over, or None to stay quiet
    _voice = None
    #: False: the first step decides for good whether rounds accumulate
    #: (instrument); True: each step decides for itself (auto, which cannot
    #: tell a warm-up step from the loop's), its micro-step always provisional
    _decide_each_step = False

    def __init__(self, accumulation_steps=None, gpu=None):
        self._step = 0          # the open step's token, 0 when none
        self._micro = 0         # the open micro-step's token
        self._rounds = 0        # rounds (micro-step candidates) begun in the open step
        self._carried = False   # rounds of an accumulation step carried over an iter()
        self._work = False      # whether a training forward, backward or optimizer ran in the open step
        self._samples = 0       # samples of the open step's batches, counted when the optimizer steps
        self.dropped = 0        # rounds begun but never stepped (a peek, the accumulation left at the end)
        # micro-steps: on when declared; undecided, the first step opens them
        # provisionally (see _close_micro)
        self._micro_on = accumulation_steps is not None and accumulation_steps > 1
        self._decided = accumulation_steps is not None
        self.steps = 0          # optimizer steps seen
        self.gpu = gpu          # None: GPU zones when the parameters are on a CUDA device
        self._gpu = False       # this step's choice
        self._inside = 0        # zones begun by _begin and not yet ended on this structure

    # -- zones on the CPU or the GPU ------------------------------------------

    def _params_on_cuda(self):
        return False

    def _decide_gpu(self):
        self._gpu = self.gpu if self.gpu is not None else self._params_on_cuda()

    def _begin(self, name):
        """Begin a zone (a GPU zone on the current stream when this step's
        parameters are on a CUDA device); returns what _end needs."""
        self._inside += 1
        if self._gpu:
            return (_core.gpu_zone_begin(name), True)
        return (_core.zone_begin(name), False)

    def _begin_cpu(self, name):
        """Begin a zone timed on the CPU only (a fetch, a copy)."""
        self._inside += 1
        return (_core.zone_begin(name), False)

    def _end(self, zone):
        self._inside -= 1
        token, gpu = zone
        if gpu:
            _core.gpu_zone_end(token)
        else:
            _core.zone_end(token)

    def _discard(self, zone):
        """Take back the innermost open zone that _begin began, unrecorded."""
        self._inside -= 1
        _core._zone_discard(zone[0])

    # -- the step structure ------------------------------------------------

    def _open_step(self):
        """Open the step when none is; returns whether this call opened it."""
        if self._step:
            return False
        if self.gpu is None:
            self._decide_gpu()
        else:
            self._gpu = self.gpu
        self._step = _core.step_begin()
        if not self._carried:
            self._rounds = 0
        self._carried = False
        return True

    def _begin_round(self):
        """A round of the open step begins (a batch, or the work up to a
        backward): the last round's micro-step ends and this one's opens,
        while micro-steps are on or not yet decided."""
        if self._micro_on or not self._decided:
            if self._micro:  # a further round of the step: the last micro-step was one
                _core.zone_end(self._micro)
            self._micro = _core.microstep_begin()
        self._rounds += 1

    def _close_micro(self):
        """End the open micro-step.  Until the first step has shown whether
        rounds accumulate its micro-step is provisional: a step of one
        round has none, and it is taken back unrecorded."""
        if self._micro:
            if self._decided or self._rounds > 1:
                _core.zone_end(self._micro)
            else:
                _core._zone_discard(self._micro)
            self._micro = 0

    def _close_step(self):
        """End the open micro-step and step, if any (innermost first)."""
        self._close_micro()
        if self._step:
            _core.zone_end(self._step)
            self._step = 0

    def _take_back_step(self):
        """Take the open micro-step and step back unrecorded (innermost
        first); the zones already recorded inside them stay counted."""
        if self._micro:
            _core._zone_discard(self._micro)
            self._micro = 0
        if self._step:
            _core._zone_discard(self._step)
            self._step = 0

    def _forget_step(self):
        """After the open step was taken back: its rounds count as dropped."""
        self.dropped += self._rounds
        self._work = False
        self._samples = 0
        self._rounds = 0
        self._carried = False

    def _drop_unstepped(self, why):
        """The open step ends without an optimizer step (remove(), the
        process's exit): it trained nothing, so it is taken back unrecorded
        with its samples; accumulation left over is said on stderr by an
        instrumentation that has a _voice."""
        if not self._step:
            return
        if self._work and self._voice:
            _sys.stderr.write("%s: %d batch(es) after the last optimizer step were never stepped "
                              "(%s); their step is not counted\n" % (self._voice, self._rounds, why))
        self._take_back_step()
        self._forget_step()

    def _end_step(self):
        """The optimizer stepped: the step ends, with its samples.  The
        first step that ends so tells whether rounds accumulate (unless
        each step decides: _decide_each_step); one ended otherwise (a peek
        with next(iter(loader)), a break) says nothing about it."""
        self.steps += 1
        rounds = self._rounds
        if self._samples:
            _core.count("samples", self._samples)
        self._samples = 0
        self._work = False
        self._carried = False
        if self._micro:
            self._close_micro()
        if self._step:
            _core.zone_end(self._step)
            self._step = 0
        if not self._decided and rounds and not self._decide_each_step:
            self._decided = True
            self._micro_on = rounds > 1

    def _leave_step_for_iter(self):
        """A new iter() of a loader with a step open: one that holds no
        training work (a peek, a break before any forward) is taken back;
        accumulation left over from the last epoch goes on into this one
        (no optimizer step ended it), but its step is taken back here and
        opened again at the next round with its round and sample counts
        carried, so that data.start is outside every step and there is
        still one step per optimizer step."""
        if not self._step:
            return
        if not self._work:
            self._drop_unstepped("a new iter()")  # trained nothing: no stderr note
            return
        if self._micro:
            _core.zone_end(self._micro)  # the last leftover round was a micro-step
            self._micro = 0
        _core._zone_discard(self._step)
        self._step = 0
        self._carried = True
