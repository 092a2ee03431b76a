#!/usr/bin/python3
"""bench_instrument.py - what stepscope.torch.instrument costs a training step.

A small classifier (Linear 64->128->10 with tanh, cross-entropy, SGD with
momentum, batches of 32 on the CPU, one torch thread; not the model
instrument() measures its hooks on) trained over a list of batches, four
ways, round after round interleaved:

  bare          the loop as written
  instrumented  the same loop over stepscope.torch.instrument(...), recording
  hooks only    the same, with the library's part skipped on this thread
                (stepscope._stepscope._calibrate: the hooks do all their
                Python work, nothing is recorded)
  4 with zones  the bare loop with `with stepscope.zone(...)` around its
                fetch, forward, backward and optimizer step, recording

Each of the four parts of a step (the fetch, the forward, the backward,
the optimizer step) is timed on its own, and a variant's cost is the sum
over the parts of its median less the bare loop's: a step takes hundreds
of µs and a busy machine moves whole steps by more than instrument costs,
while the median of each part holds still.  instrumented - bare is what
instrument costs a step; hooks only - bare is its hooks' Python work,
which the report prices per zone instrument began at the cost the process
measured when instrument() was called (stepscope._stepscope._costs()
["hook_zone_ns"]); instrumented - hooks only is the library's recording of
those zones and the count, priced by `stepscope run` at its own warm
measurement (bench/bench_zone) plus what the recorder's own samples of a
zone end in the run add to the same samples warm (about 30 ns here); the
process's samples are printed.  The last lines compare them.

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

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
PARTS = ("data", "forward", "backward", "optimizer")


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # not the model instrument() measures its hooks on (stepscope/_cost.py)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    batches = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(STEPS)]
    loss_fn = torch.nn.functional.cross_entropy
    clock = time.perf_counter_ns
    zone = stepscope.zone

    def loop(loader, parts, zoned=False):
        fetch = iter(loader)
        while True:
            t0 = clock()
            try:
                if zoned:
                    with zone("data"):
                        x, y = next(fetch)
                else:
                    x, y = next(fetch)
            except StopIteration:
                return
            t1 = clock()
            if zoned:
                with zone("forward"):
                    out = model(x)
            else:
                out = model(x)
            t2 = clock()
            loss = loss_fn(out, y)
            t3 = clock()
            if zoned:
                with zone("backward"):
                    loss.backward()
            else:
                loss.backward()
            t4 = clock()
            if zoned:
                with zone("optimizer"):
                    opt.step()
            else:
                opt.step()
            t5 = clock()
            opt.zero_grad()
            for p, t in zip(parts, (t1 - t0, t2 - t1, t4 - t3, t5 - t4)):
                p.append(t)

    def instrumented(parts, calibrate):
        wrapped = stepscope.torch.instrument(model, opt, batches, gpu=False)
        try:
            _stepscope._calibrate(True)  # counts the zones the hooks begin, from zero
            if not calibrate:
                _stepscope._calibrate(False)
            loop(wrapped, parts)
            return _stepscope._calibrate(False)[3]
        finally:
            wrapped.remove()

    variants = {"bare": lambda parts: loop(batches, parts),
                "instrumented": lambda parts: instrumented(parts, False),
                "hooks only": lambda parts: instrumented(parts, True),
                "4 with zones": lambda parts: loop(batches, parts, zoned=True)}
    times = {label: [[] for _ in PARTS] for label in variants}
    loop(batches, [[] for _ in PARTS])  # warm up
    zones = 0
    for _ in range(ROUNDS):
        for label, run in variants.items():
            got = run(times[label])
            if label == "hooks only":
                zones = got / STEPS
    print("python %s, torch %s, %d steps a round, %d interleaved rounds; median µs per part of a step"
          % (sys.version.split()[0], torch.__version__, STEPS, ROUNDS))
    print("%-14s %s   %8s  %8s" % ("", "  ".join("%9s" % p for p in PARTS), "sum", "- bare"))
    med = {label: [median(p) / 1e3 for p in parts] for label, parts in times.items()}
    bare = sum(med["bare"])
    cost = {}
    for label, parts in med.items():
        cost[label] = sum(parts) - bare
        print("%-14s %s   %8.2f  %+8.2f" % (label, "  ".join("%9.2f" % p for p in parts), sum(parts), cost[label]))
    costs = _stepscope._costs()
    print("a `with stepscope.zone` in this loop: %.0f ns (priced: its own work measured at import, %.0f ns, "
          "+ the library's: bench_zone's ~23 ns warm + what the end samples below add)"
          % (1e3 * cost["4 with zones"] / 4, costs["zone_ns"] or float("nan")))
    hooks = cost["hooks only"]
    print("instrument costs a step %.2f µs (%.2f%% of the parts' bare %.2f µs): its hooks' Python work %.2f µs, "
          "the library's %.2f µs" % (cost["instrumented"], 100 * cost["instrumented"] / bare, bare, hooks,
                                     cost["instrumented"] - hooks))
    print("zones begun by the hooks: %.0f a step; their hooks here: %.0f ns a zone, the library's %.0f ns a zone"
          % (zones, 1e3 * hooks / zones, 1e3 * (cost["instrumented"] - hooks) / zones))
    if costs["end_samples"]:
        print("the recorder's own samples of a zone end in this process (what `stepscope run` adds to the warm "
              "price, less the same samples warm, ~30 ns): %.0f ns over %d samples"
              % (costs["end_ns_mean"], costs["end_samples"]))
    if costs["hook_zone_ns"]:
        print("priced (measured by instrument() in this process): %.0f ns a zone, %.2f µs a step: %.2fx this loop's"
              % (costs["hook_zone_ns"], costs["hook_zone_ns"] * zones / 1e3,
                 costs["hook_zone_ns"] * zones / 1e3 / hooks if hooks > 0 else float("nan")))
    else:
        print("instrument() measured no hook cost in this process")


if __name__ == "__main__":
    main()
