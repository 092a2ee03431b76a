#!/usr/bin/python3
"""bench_last_step.py - what stepscope.last_step() and status_line() cost.

last_step() reads the calling thread's last step from its own record (no
hot-path work for it): the call alone pays.  This times, interleaved round
after round (median and range of ROUNDS rounds, us per call), after a step
of ZONES zones, a value and a counter:

  baseline     json.loads() of that step's line: the dict the call returns,
               built from its text, with no record read
  last_step    stepscope.last_step()
  status_line  stepscope.status_line() (last_step() and the string)

for steps of 5 and 50 zones, and prints last_step / baseline.  Alone (no
`stepscope run`), the machine part is one read of /proc/self/statm.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_last_step.py
"""
import json
import os
import statistics
import timeit

os.environ.setdefault("STEPSCOPE_OUT", "")
import stepscope  # noqa: E402

ROUNDS = 9
CALLS = 2000


def one_step(zones):
    with stepscope.step():
        for k in range(zones):
            with stepscope.zone("zone%d" % (k % 5)):
                pass
        stepscope.record("loss", 0.5)
        stepscope.count("samples", 32)


def per_call_us(fn):
    return timeit.timeit(fn, number=CALLS) / CALLS * 1e6


for zones in (5, 50):
    one_step(zones)
    line = json.dumps(stepscope.last_step())
    cases = {"baseline": lambda: json.loads(line), "last_step": stepscope.last_step,
             "status_line": stepscope.status_line}
    got = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, fn in cases.items():
            got[name].append(per_call_us(fn))
    print("step of %d zones:" % zones)
    for name, v in got.items():
        print("  %-12s median %6.1f us  (range %.1f-%.1f)" % (name, statistics.median(v), min(v), max(v)))
    print("  last_step / baseline  %.2f" % (statistics.median(got["last_step"]) / statistics.median(got["baseline"])))
