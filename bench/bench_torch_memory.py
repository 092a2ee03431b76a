#!/usr/bin/python3
"""bench_torch_memory.py - what reading torch.cuda's memory at each step's
end adds to a step (python/src/torch_memory.c).

Times `with stepscope.step(): pass`, interleaved round after round (median
and range of ROUNDS rounds, us per step), with sys.modules["torch"]:

  no torch       absent: the baseline, one dict lookup at the begin and
                 one at the end
  torch, no CUDA a torch whose cuda.is_initialized() is False: one call
                 more each
  torch + CUDA   a torch with CUDA initialised: at the begin the peaks,
                 at the end all four figures read through
                 torch._C._cuda_memoryStats(device) and recorded as values
  + gpu_peak=step the same, the peaks reset at each begin instead of read

The torch here is a fake whose memoryStats returns a prebuilt dict shaped
as torch's (every stat, three pools): what is timed is stepscope's work and
the Python calls it makes, not torch's own cost of building that dict
(20.5 us a call on an H100 with torch 2.11; a `with` step makes two, a
bare step() one, docs/python.md).
Prints each case / no torch.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_torch_memory.py
"""
import os
import statistics
import sys
import timeit
import types

os.environ.setdefault("STEPSCOPE_OUT", "")
import stepscope  # noqa: E402

ROUNDS = 11
STEPS = 5000
STATS = ("allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes",
         "allocation", "segment", "active", "inactive_split", "oversize_allocations", "oversize_segments")


def fake_torch(initialized):
    stats = {name: {pool: {"current": 1 << 30, "peak": 2 << 30, "allocated": 0, "freed": 0}
                    for pool in ("all", "small_pool", "large_pool")} for name in STATS}
    stats["num_alloc_retries"] = 0
    torch = types.ModuleType("torch")
    torch._C = types.SimpleNamespace(_cuda_memoryStats=lambda device: stats, _cuda_getDevice=lambda: 0)
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: initialized,
                                       reset_peak_memory_stats=lambda device=None: None)
    return torch


def step():
    with stepscope.step():
        pass


def per_step_us():
    return timeit.timeit(step, number=STEPS) / STEPS * 1e6


cases = [("no torch", None, "keep"), ("torch, no CUDA", fake_torch(False), "keep"),
         ("torch + CUDA", fake_torch(True), "keep"), ("+ gpu_peak=step", fake_torch(True), "step")]
got = {name: [] for name, _, _ in cases}
for _ in range(ROUNDS):
    for name, torch, peak in cases:
        if torch is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = torch
        stepscope.configure(gpu_peak=peak)
        got[name].append(per_step_us())
sys.modules.pop("torch", None)
base = statistics.median(got["no torch"])
print("us per step (`with stepscope.step(): pass`), %d rounds of %d steps, interleaved:" % (ROUNDS, STEPS))
for name, v in got.items():
    m = statistics.median(v)
    print("  %-16s median %6.2f us  (range %.2f-%.2f)  x%.2f of no torch" % (name, m, min(v), max(v), m / base))
print("  the read alone: +%.2f us a step" % (statistics.median(got["torch + CUDA"]) - base))
