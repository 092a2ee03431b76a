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
import sys as _sys
import time as _time

from . import _stepscope

_ROUNDS = 5
_CALLS = 400          # per round, for zones, values and counts: about 1 ms in all
_STEPS = 20           # per round, for instrument's hooks
_HOOK_ROUNDS = 9      # about 60 ms in all
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


def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


def measure_hooks(instrument):
    """Measure what stepscope.torch.instrument's hooks cost per zone they
    begin, once per process, and hand it to the module; returns it in ns,
    or None when it could not be measured.

    Hooks run between a step's real work, which leaves the interpreter's
    caches cold for them: timed in a loop of hooks alone they cost a third
    of what they cost in a training loop (bench/bench_instrument.py).  So
    the loop here is a small real one: a two-layer model on the CPU, its
    loss, backward and an SGD step, over a list of batches; each fetch,
    forward, backward and optimizer step is timed on its own, bare and
    through instrument(...), in interleaved rounds, and the hooks' cost is
    the sum over the four of the difference of their medians (robust to a
    busy machine's interruptions), over the zones instrument began.
    Tensor.backward stays wrapped for these ~60 ms, as during any
    instrumentation."""
    global _hooks_measured
    if _hooks_measured:
        return _stepscope._costs().get("hook_zone_ns")
    _hooks_measured = True
    try:
        ns = _time_hooks(instrument)
    except Exception as exc:  # noqa: BLE001  (a torch without what the loop needs: not measured, and why)
        first = (str(exc).splitlines() or [""])[0][:160]
        try:
            _sys.stderr.write("stepscope: the hooks' cost was not measured (the report leaves them unpriced): "
                              "%s: %s\n" % (type(exc).__name__, first))
        except Exception:  # noqa: BLE001
            pass
        return None
    if ns is not None:
        _stepscope._set_costs(hook_zone_ns=ns)
    return ns


def _time_hooks(instrument):
    import torch

    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):  # the workload's random numbers stay as they would be
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights never change
    batches = [(torch.randn(16, 32, generator=gen), torch.randn(16, 1, generator=gen)) for _ in range(_STEPS)]
    loss_fn = torch.nn.functional.mse_loss
    clock = _time.perf_counter_ns

    def loop(loader, parts):
        fetch = iter(loader)
        while True:
            t0 = clock()
            try:
                x, y = next(fetch)
            except StopIteration:
                return
            t1 = clock()
            out = model(x)
            t2 = clock()
            loss = loss_fn(out, y)
            t3 = clock()
            loss.backward()
            t4 = clock()
            optimizer.step()
            t5 = clock()
            optimizer.zero_grad()
            parts[0].append(t1 - t0)
            parts[1].append(t2 - t1)
            parts[2].append(t4 - t3)
            parts[3].append(t5 - t4)

    bare, hooked = [[], [], [], []], [[], [], [], []]
    zones = 0
    _stepscope._calibrate(True)
    try:
        loop(batches, [[], [], [], []])  # warm up
        for _ in range(_HOOK_ROUNDS):
            loop(batches, bare)
            wrapped = instrument(model, optimizer, batches, gpu=False)
            try:
                _stepscope._calibrate(True)  # from zero: this round's zones
                loop(wrapped, hooked)
                zones += _stepscope._calibrate(True)[3]
            finally:
                wrapped.remove()
    finally:
        _stepscope._calibrate(False)
    per_step = sum(_median(h) - _median(b) for h, b in zip(hooked, bare))
    steps = _HOOK_ROUNDS * _STEPS
    if zones <= 0 or per_step <= 0:
        return None
    return per_step * steps / zones
