#!/usr/bin/python3
"""bench_deep.py - what the deep-capture window (--torch-profile) costs a step.

The hook is in the C extension's step begin and end (python/src/deep.c):
without STEPSCOPE_TORCH_PROFILE it is one branch on a global; with it, each
step calls into stepscope/_deep.py twice, and the window's steps run under
torch.profiler.  The environment variable is read at import, so each
variant runs in a process of its own; the variants alternate, round after
round, and the figures are the median and range over the rounds.

Variants, ns per step of a loop of `with stepscope.step(): <body>`:

  off             no STEPSCOPE_TORCH_PROFILE (the baseline)
  on, outside     STEPSCOPE_TORCH_PROFILE=1000000000:1000000001: every step
                  calls into _deep, none is in the window
  off, torch      the body is one small torch op (torch.add of two 8-float
                  tensors), no window
  window, torch   the same body, every step in the window (torch.profiler on)

and the ratios on, outside / off and window / off, torch.  With
BASELINE_PYTHONPATH naming another build's module (one without the hook),
also

  off, baseline   the empty loop with that module: what the branch costs
                  when the flag is off

Recording goes to memory (STEPSCOPE_OUT="").  Before the window each step
pays the two calls into Python; once the window is over (or given up) the
module stops calling and a step pays the branch only.

    PYTHONPATH=build/python [BASELINE_PYTHONPATH=../base/build/python] \
        /usr/bin/python3 bench/bench_deep.py [steps] [rounds]
"""
import os
import statistics
import subprocess
import sys

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7

CHILD = r"""
import os, sys, time
import stepscope
n = int(sys.argv[1])
body = sys.argv[2]
if body == "torch":
    import torch
    a, b = torch.ones(8), torch.ones(8)
    def work():
        torch.add(a, b)
else:
    def work():
        pass
for _ in range(min(n, 1000)):  # warm
    with stepscope.step():
        work()
t0 = time.perf_counter_ns()
for _ in range(n):
    with stepscope.step():
        work()
t1 = time.perf_counter_ns()
print((t1 - t0) / n)
os._exit(0)  # the window's exit hook is not what is timed
"""

BASELINE = os.environ.get("BASELINE_PYTHONPATH")
VARIANTS = [
    ("off", None, "empty", 1),
    ("on, outside", "1000000000:1000000001", "empty", 1),
    ("off, torch", None, "torch", 1),
    # torch.profiler keeps every op of the window: a tenth of the steps
    ("window, torch", "0:1000000000", "torch", 10),
] + ([("off, baseline", None, "empty", 1)] if BASELINE else [])


def run(name, spec, body, divide):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
    env["STEPSCOPE_OUT"] = ""
    if name == "off, baseline":
        env["PYTHONPATH"] = BASELINE
    if spec:
        env["STEPSCOPE_TORCH_PROFILE"] = spec
    out = subprocess.run([sys.executable, "-c", CHILD, str(max(STEPS // divide, 1000)), body], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    got = {name: [] for name, _, _, _ in VARIANTS}
    for _ in range(ROUNDS):
        for name, spec, body, divide in VARIANTS:
            got[name].append(run(name, spec, body, divide))
    for name, _, _, _ in VARIANTS:
        v = got[name]
        print("%-14s %9.1f ns/step  (range %.1f - %.1f, %d rounds)" % (name, statistics.median(v), min(v), max(v),
                                                                       len(v)))
    med = {k: statistics.median(v) for k, v in got.items()}
    print("on, outside / off:       %.2fx  (+%.0f ns a step)" % (med["on, outside"] / med["off"],
                                                                 med["on, outside"] - med["off"]))
    if BASELINE:
        print("off / off, baseline:     %.3fx  (%+.1f ns a step)" % (med["off"] / med["off, baseline"],
                                                                   med["off"] - med["off, baseline"]))
    print("window / off, torch:     %.2fx  (+%.0f ns a step with one op)" % (
        med["window, torch"] / med["off, torch"], med["window, torch"] - med["off, torch"]))


if __name__ == "__main__":
    main()
