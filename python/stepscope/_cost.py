"""What the Python face of stepscope costs, measured in this process.

The report prices each kind of recording at what one costs (docs/analysis.md,
"overhead").  ``stepscope run`` measures the library's begin+end itself when
the run ends; what Python adds to it (the call into the module, the ``with``
statement, the lookups; and stepscope.torch.instrument's hooks around each
zone they begin) is measured here, by the same interpreter that runs the
workload: the module's calls run as usual but with the library's part
skipped on this thread (``_stepscope._calibrate``), so nothing is recorded,
and the module writes the costs into the process's record next to its
counts of what each face recorded.

Each figure is the best of a few interleaved rounds (the least disturbed),
the same loop without the call subtracted.  A figure that comes out at zero
or below (a machine too busy to measure) is not given: the report then says
that kind was not priced.
"""
import time as _time

from . import _stepscope

_ROUNDS = 5
_CALLS = 400          # per round, for zones, values and counts: about 1 ms in all
_STEPS = 40           # per round, for instrument's hooks
_HOOK_ROUNDS = 9      # the median of their paired differences: about 10 ms in all
_PROBE = "stepscope.cost_probe"

_hooks_measured = False


def _best_per_call(loops, n):
    """The best round of each loop, in ns per iteration, interleaved."""
    best = [float("inf")] * len(loops)
    clock = _time.perf_counter_ns
    for _ in range(_ROUNDS):
        for i, loop in enumerate(loops):
            t0 = clock()
            loop(n)
            best[i] = min(best[i], (clock() - t0) / n)
    return best


def _empty(n):
    for _ in range(n):
        pass


def _zones(n, zone=_stepscope.zone):
    for _ in range(n):
        with zone(_PROBE):
            pass


def _records(n, record=_stepscope.record):
    for _ in range(n):
        record(_PROBE, 1.0)


def _counts(n, count=_stepscope.count):
    for _ in range(n):
        count(_PROBE, 1)


def measure_module():
    """Measure a zone's, a record()'s and a count()'s own work; hand them to
    the module.  Returns the dict the module now holds."""
    _stepscope._calibrate(True)
    try:
        empty, zone, record, count = _best_per_call((_empty, _zones, _records, _counts), _CALLS)
    finally:
        _stepscope._calibrate(False)
    costs = {}
    for key, ns in (("zone_ns", zone - empty), ("value_ns", record - empty), ("count_ns", count - empty)):
        if ns > 0:
            costs[key] = ns
    _stepscope._set_costs(**costs)
    return _stepscope._costs()


def measure_hooks(instrument):
    """Measure what stepscope.torch.instrument's hooks cost per zone they
    begin, once per process: a loop of steps (fetch, forward, backward,
    optimizer step) over a model that does nothing, with and without
    instrument(...), in interleaved rounds, the median of the rounds'
    differences over the zones instrument began.  Tensor.backward stays wrapped
    for those few milliseconds, as during any instrumentation.  Returns
    the cost in ns, or None when it could not be measured."""
    global _hooks_measured
    if _hooks_measured:
        return _stepscope._costs()["hook_zone_ns"]
    _hooks_measured = True
    import torch

    weight = torch.zeros(1, requires_grad=True)
    grad = torch.ones(1)
    model = torch.nn.Identity()

    class _Optimizer:
        def step(self):
            pass

    optimizer = _Optimizer()
    batches = [(torch.zeros(1),)] * _STEPS

    def loop(loader):
        for (x,) in loader:
            model(x)
            weight.backward(grad)  # a leaf's: the cheapest backward there is
            optimizer.step()

    clock = _time.perf_counter_ns
    extra = []  # per round: the instrumented loop's time less the bare one's
    zones = 0
    _stepscope._calibrate(True)
    try:
        for _ in range(_HOOK_ROUNDS):
            t0 = clock()
            loop(batches)
            bare = clock() - t0
            wrapped = instrument(model, optimizer, batches, gpu=False)
            try:
                _stepscope._calibrate(True)  # from zero: this round's zones
                t0 = clock()
                loop(wrapped)
                extra.append(clock() - t0 - bare)
                zones = _stepscope._calibrate(True)[3]
            finally:
                wrapped.remove()
    except Exception:  # a torch without what the loop needs: not measured
        return None
    finally:
        _stepscope._calibrate(False)
    extra.sort()
    median = extra[len(extra) // 2]
    if zones <= 0 or median <= 0:
        return None
    ns = median / zones
    _stepscope._set_costs(hook_zone_ns=ns)
    return ns
