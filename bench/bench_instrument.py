#!/usr/bin/python3
"""bench_instrument.py - what stepscope.torch.instrument costs a training step.

A tiny model (Linear 32->64, ReLU, Linear 64->1, SGD, batches of 16 on the
CPU) trained over a list of batches, three ways, round after round
interleaved:

  bare          the loop as written
  instrumented  the same loop over stepscope.torch.instrument(...), recording
  hooks only    the same, with the library's part skipped on this thread
                (stepscope._stepscope._calibrate: the hooks do all their
                Python work, nothing is recorded)

Each figure is its median round, in µs per step.  instrumented - bare is
what instrument costs a step; hooks only - bare is its hooks' Python work,
which the report prices per zone instrument began at the cost the process
measured when instrument() was called (stepscope._stepscope._costs()
["hook_zone_ns"]); instrumented - hooks only is the library's recording of
those zones and counts, which `stepscope run` prices at its own measured
cost (bench/bench_zone).  The last lines compare the two.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_instrument.py [steps] [rounds]

Recording goes to memory; STEPSCOPE_OUT is set to "" so no report is written.
"""
import os
import sys
import time

os.environ.setdefault("STEPSCOPE_OUT", "")
import torch  # noqa: E402

import stepscope  # noqa: E402
import stepscope.torch  # noqa: E402
from stepscope import _stepscope  # noqa: E402

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 15


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = [(torch.randn(16, 32), torch.randn(16, 1)) for _ in range(STEPS)]
    loss_fn = torch.nn.functional.mse_loss

    def loop(loader):
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()

    def bare():
        t0 = time.thread_time_ns()
        loop(batches)
        return time.thread_time_ns() - t0, 0

    def instrumented(calibrate):
        wrapped = stepscope.torch.instrument(model, opt, batches, gpu=False)
        try:
            _stepscope._calibrate(True)  # counts the zones the hooks begin, from zero
            if not calibrate:
                _stepscope._calibrate(False)
            t0 = time.thread_time_ns()
            loop(wrapped)
            elapsed = time.thread_time_ns() - t0
            zones = _stepscope._calibrate(False)[3]
        finally:
            wrapped.remove()
        return elapsed, zones

    zone = stepscope.zone

    def loop_zoned(loader):
        for x, y in loader:
            with zone("data"):
                pass
            with zone("forward"):
                loss = loss_fn(model(x), y)
            with zone("backward"):
                loss.backward()
            with zone("optimizer"):
                opt.step()
            opt.zero_grad()

    def zoned():
        t0 = time.thread_time_ns()
        loop_zoned(batches)
        return time.thread_time_ns() - t0, 0

    variants = [("bare", bare), ("instrumented", lambda: instrumented(False)),
                ("hooks only", lambda: instrumented(True)), ("4 with zones", zoned)]
    loop(batches)  # warm up
    times = {label: [] for label, _ in variants}
    zones_per_round = 0
    for _ in range(ROUNDS):
        for label, fn in variants:
            ns, zones = fn()
            times[label].append(ns / STEPS / 1e3)
            if label == "hooks only":
                zones_per_round = zones

    def median(values):
        values = sorted(values)
        return values[len(values) // 2]

    # each variant against the bare loop of its own round: the machine's
    # load moves the rounds, less the difference within one
    diff = {label: [t - b for t, b in zip(values, times["bare"])] for label, values in times.items()}
    print("python %s, torch %s, %d steps a round, %d interleaved rounds; µs per step, median [min, max]; "
          "and the median of its difference to the same round's bare loop"
          % (sys.version.split()[0], torch.__version__, STEPS, ROUNDS))
    for label, values in times.items():
        print("%-14s %8.2f   [%.2f, %.2f]   %+7.2f" % (label, median(values), min(values), max(values),
                                                      median(diff[label])))
    zones = zones_per_round / STEPS
    hook_ns = _stepscope._costs()["hook_zone_ns"]
    bare = median(times["bare"])
    total, hooks = median(diff["instrumented"]), median(diff["hooks only"])
    print("a `with stepscope.zone` in this loop: %.0f ns (measured at import, warm: %.0f ns + the library's)"
          % (1e3 * median(diff["4 with zones"]) / 4, _stepscope._costs()["zone_ns"] or float("nan")))
    print("instrument costs a step %.2f µs (%.2f%% of the bare step): its hooks' Python work %.2f µs"
          % (total, 100 * total / bare, hooks))
    print("zones begun by the hooks: %.0f a step; hooks here: %.0f ns a zone" % (zones, 1e3 * hooks / zones))
    if hook_ns:
        print("measured by instrument() in this process: %.0f ns a zone (%.2f µs a step, %.2fx what this loop shows)"
              % (hook_ns, hook_ns * zones / 1e3, hook_ns * zones / 1e3 / hooks if hooks > 0 else float("nan")))
    else:
        print("instrument() measured no hook cost in this process")

if __name__ == "__main__":
    main()
