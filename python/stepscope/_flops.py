"""FLOPs of a profiled block, forward and backward, from torch's profiler.

``torch.profiler.profile(with_flops=True)`` gives each operator it has a
formula for its FLOPs (a multiply-add is 2 FLOPs; a bias is not counted):
``aten::mm``, ``addmm``, ``bmm``, ``baddbmm``, ``mul``, ``add`` and
``aten::conv2d``.  The backward of linear layers, matmul, bmm and attention
runs as ``aten::mm``/``bmm`` under autograd, so torch counts it already,
and only the gradients autograd computes.  A 2-D convolution's backward is
one ``aten::convolution_backward``, for which torch (1.13 at least) has no
formula: its FLOPs are added here by rule.

The rule: each gradient convolution_backward computes costs what the
forward did, ``2 * numel(grad_output) * Cin/groups * kh * kw`` (the
weight's shape ``[Cout, Cin/groups, kh, kw]``): one for the input's
gradient when the input requires grad, one for the weight's when the
weight does (the bias's gradient is a sum, not counted, as the forward's
bias is not).  Which gradients autograd computes is fixed when the forward
runs, so each block that counts FLOPs watches the ``torch.conv2d`` calls of
its thread (a ``TorchFunctionMode`` that notes ``requires_grad`` of the
input and the weight) and matches them to the profiler's ``aten::conv2d``
events; a backward node carries its forward's sequence number, which links
it to them, in this block or an earlier one of the same Profiler.  A
backward whose forward no block saw is taken to compute both gradients,
and the note says how many were.

Attention.  torch 2.x runs ``scaled_dot_product_attention`` (and
``nn.MultiheadAttention`` through it) as one fused operator: flash or
memory-efficient attention, on the CPU
``aten::_scaled_dot_product_flash_attention_for_cpu``.  The profiler has
no formula for these (torch 1.13 ran attention as bmm, which it counts).
The rule: the forward is its two matmuls, ``2 * B * H * Lq * Lk * (D +
Dv)`` from the query ``[B, H, Lq, D]``, key ``[B, H, Lk, D]`` and value
``[B, H, Lk, Dv]`` (a mask or causality is not subtracted, as torch's own
flop counter does not); the backward's gradients of the query, key,
value and scores cost twice that (the scores it recomputes are not
counted, as no recomputation is).  What torch counted inside the
operator, should a version count it, is taken off.

Data flows one way: the torch profiler's events in, one FlopCount out.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass

CONV2D = "aten::conv2d"
CONV_BACKWARD = "aten::convolution_backward"
#: fused attention operators (query, key, value first): the forward's FLOPs
#: times 1 (forward) or 2 (backward)
ATTENTION = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": 1,
    "aten::_scaled_dot_product_flash_attention": 1,
    "aten::_scaled_dot_product_efficient_attention": 1,
    "aten::_scaled_dot_product_cudnn_attention": 1,
    "aten::_scaled_dot_product_fused_attention_overrideable": 1,
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": 2,
    "aten::_scaled_dot_product_flash_attention_backward": 2,
    "aten::_scaled_dot_product_efficient_attention_backward": 2,
    "aten::_scaled_dot_product_cudnn_attention_backward": 2,
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": 2,
}
#: an operator under one of these ran in autograd's backward pass
BACKWARD_PREFIX = "autograd::engine::evaluate_function"
#: forward convolutions kept per Profiler while their backward is to come
PENDING_MAX = 16384

#: the flops_method values
PROFILER = "profiler"
PROFILER_AND_RULE = "profiler+backward-rule"      # convolutions' backward
PROFILER_AND_ATTENTION = "profiler+attention-rule"
PROFILER_AND_RULES = "profiler+rules"             # both


@dataclass
class FlopCount:
    """FLOPs of one block: total = forward + backward_counted + backward_rule
    + attention_forward + attention_backward."""
    forward: int             # torch's counts outside autograd's backward
    backward_counted: int    # torch's counts inside it (mm, bmm ... of linear, matmul, unfused attention)
    backward_rule: int       # added for convolution_backward by the rule
    rule_ops: int            # convolution_backward operators the rule counted
    assumed_ops: int         # ... of which no block saw the forward: both gradients assumed
    attention_forward: int = 0   # added for fused attention by its rule
    attention_backward: int = 0
    attention_ops: int = 0       # fused attention operators (either way) the rule counted

    @property
    def total(self):
        return (self.forward + self.backward_counted + self.backward_rule + self.attention_forward
                + self.attention_backward)

    @property
    def method(self):
        if self.rule_ops and self.attention_ops:
            return PROFILER_AND_RULES
        if self.attention_ops:
            return PROFILER_AND_ATTENTION
        return PROFILER_AND_RULE if self.rule_ops else PROFILER

    def note(self):
        text = ("forward %d FLOPs, backward %d: torch's profiler counted %d (mm, addmm, bmm, baddbmm, conv2d, "
                "mul, add; a multiply-add is 2 FLOPs)"
                % (self.forward + self.attention_forward,
                   self.backward_counted + self.backward_rule + self.attention_backward,
                   self.forward + self.backward_counted))
        if self.rule_ops:
            text += ("; the rule added %d for %d aten::convolution_backward, which torch does not count: each "
                     "gradient computed (input, weight) costs the forward's FLOPs"
                     % (self.backward_rule, self.rule_ops))
            if self.assumed_ops:
                text += (" (%d had their forward outside every estimate_flops block: both gradients assumed)"
                         % self.assumed_ops)
        if self.attention_ops:
            text += ("; the attention rule added %d for %d fused attention operators, which torch does not "
                     "count: the forward's two matmuls, twice that for the backward"
                     % (self.attention_forward + self.attention_backward, self.attention_ops))
        return text


class PendingConvolutions:
    """{(thread, sequence number): (input grad, weight grad)} of forward
    convolutions whose backward has not been seen, at most PENDING_MAX (the
    oldest go first: forwards never followed by a backward).  Thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._items = OrderedDict()

    def add(self, key, grads):
        with self._lock:
            self._items[key] = grads
            if len(self._items) > PENDING_MAX:
                self._items.popitem(last=False)

    def take(self, key):
        with self._lock:
            return self._items.pop(key, None)


def _conv_call_recorder(torch):
    """A TorchFunctionMode noting, for every torch.conv2d call on its
    thread: (input shape, weight shape, input requires grad, weight
    requires grad).  Every other call passes straight through."""
    conv2d = torch.conv2d

    class ConvCalls(torch.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is conv2d:
                named = kwargs or {}
                x = args[0] if args else named.get("input")
                w = args[1] if len(args) > 1 else named.get("weight")
                if x is not None and w is not None:
                    self.calls.append((list(x.shape), list(w.shape), x.requires_grad, w.requires_grad))
            return func(*args, **(kwargs or {}))

    return ConvCalls()


def _in_backward(event):
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(BACKWARD_PREFIX):
            return True
        parent = parent.cpu_parent
    return False


def _subtree_flops(event):
    return sum((child.flops or 0) + _subtree_flops(child) for child in event.cpu_children)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _record_forward_convolutions(events, calls, pending):
    """Pair the block's forward aten::conv2d events with the mode's calls,
    in order and by shapes (an event with no call, a convolution run from
    C++, is skipped), and remember the gradients of those that made a
    backward node (sequence number >= 0) for their backward."""
    k = 0
    for e in events:
        if k == len(calls):
            break
        if e.name != CONV2D or _in_backward(e):
            continue
        x_shape, w_shape, x_grad, w_grad = calls[k]
        shapes = e.input_shapes
        if len(shapes) < 2 or shapes[0] != x_shape or shapes[1] != w_shape:
            continue
        k += 1
        if e.sequence_nr >= 0 and (x_grad or w_grad):
            pending.add((e.thread, e.sequence_nr), (x_grad, w_grad))


def _rule_flops(event, pending):
    """(FLOPs, assumed) the rule gives one aten::convolution_backward, or
    (0, False) for one it does not cover: not 2-D, or transposed (torch
    counts neither's forward)."""
    shapes = event.input_shapes
    if len(shapes) < 3 or len(shapes[0]) != 4 or len(shapes[2]) != 4:
        return 0, False
    grad_output, weight = shapes[0], shapes[2]
    node = event.cpu_parent
    grads = pending.take((node.fwd_thread, node.sequence_nr)) if node is not None else None
    assumed = grads is None
    if assumed:
        if weight[0] != grad_output[1]:  # weight [Cin, Cout/groups, ...]: a transposed convolution
            return 0, False
        grads = (True, True)
    per_gradient = 2 * _numel(grad_output) * _numel(weight[1:])
    flops = per_gradient * (int(grads[0]) + int(grads[1]))
    # never on top of what torch counted inside it (no version does yet)
    return max(0, flops - _subtree_flops(event)), assumed


def _attention_flops(event, times):
    """The FLOPs the attention rule gives one fused attention operator,
    less what torch counted in it; 0 when its inputs are not 4-D."""
    shapes = event.input_shapes
    first = 1 if times == 2 else 0  # a backward's first input is the output's gradient
    if len(shapes) < first + 3:
        return 0
    query, key, value = shapes[first:first + 3]
    if len(query) != 4 or len(key) != 4 or len(value) != 4:
        return 0
    b, h, lq, d = query
    lk, dv = key[2], value[3]
    flops = times * 2 * b * h * lq * lk * (d + dv)
    return max(0, flops - (event.flops or 0) - _subtree_flops(event))


def count(events, calls, pending):
    """The FlopCount of a block: events from torch's profiler
    (prof.events()), calls from its conv call recorder, pending the
    Profiler's PendingConvolutions."""
    _record_forward_convolutions(events, calls, pending)
    forward = backward_counted = backward_rule = rule_ops = assumed_ops = 0
    attention = [0, 0]  # forward, backward
    attention_ops = 0
    for e in events:
        if e.flops:
            if _in_backward(e):
                backward_counted += e.flops
            else:
                forward += e.flops
        if e.name == CONV_BACKWARD:
            flops, assumed = _rule_flops(e, pending)
            if flops:
                backward_rule += flops
                rule_ops += 1
                assumed_ops += assumed
        times = ATTENTION.get(e.name)
        if times is not None:
            flops = _attention_flops(e, times)
            if flops:
                attention[times - 1] += flops
                attention_ops += 1
    return FlopCount(forward, backward_counted, backward_rule, rule_ops, assumed_ops, attention[0], attention[1],
                     attention_ops)


def _profiler_running(torch):
    """Is a torch profiler on: on this thread (every torch since 1.8), or
    anywhere in the process (torch >= 2.1 keeps a flag)?"""
    if getattr(torch.autograd.profiler, "_is_profiler_enabled", False):
        return True
    enabled = getattr(torch._C._autograd, "_profiler_enabled", None)
    return bool(enabled and enabled())


class BlockCounter:
    """torch's profiler and the conv call recorder around one block."""

    def __init__(self, torch, pending):
        self._torch = torch
        self._pending = pending
        self._prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True)
        self._recorder = _conv_call_recorder(torch)

    def start(self):
        """Raises RuntimeError when torch's profiler is already running in
        this process (and then starts nothing)."""
        if _profiler_running(self._torch):
            # torch 2.x's Kineto takes a second profiler's start for a
            # request of higher priority and cancels the running one: the
            # user's (or the enclosing block's) profile would end broken
            raise RuntimeError("a torch profiler is running in this process")
        self._prof.__enter__()
        self._recorder.__enter__()

    def stop(self):
        """The block's FlopCount."""
        self._recorder.__exit__(None, None, None)
        self._prof.__exit__(None, None, None)
        return count(self._prof.events(), self._recorder.calls, self._pending)
