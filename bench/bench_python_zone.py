#!/usr/bin/python3
"""bench_python_zone.py - what `with stepscope.zone(...)` costs in CPython.

Times, in one run and one loop shape, ns per iteration of:

  baseline      t0 = perf_counter(); t1 = perf_counter()   (two bare clock reads)
  empty with    `with <a C context manager that does nothing>:` (the statement's own cost)
  stepscope     `with stepscope.zone("x"):`
  pure Python   `with Timer("x"):`, a class whose __enter__/__exit__ call perf_counter
  torch         `with torch.profiler.record_function("x"):` (when torch imports)

and prints the ratios.  Each figure is the best of several repetitions (the
least disturbed); the loop's own cost is subtracted.  Run it alone on an
idle machine:

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_python_zone.py [iterations]

Recording goes to memory; STEPSCOPE_OUT is set to "" so no report is written.
"""
import os
import sys
import time

os.environ.setdefault("STEPSCOPE_OUT", "")
import stepscope  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
REPEATS = 7


class Timer:
    """The pure-Python timer people write: a context manager around perf_counter."""

    __slots__ = ("name", "t0", "total")

    def __init__(self, name):
        self.name = name
        self.total = 0.0

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.total += time.perf_counter() - self.t0
        return False


def loop_empty(n):
    for _ in range(n):
        pass


def loop_baseline(n):
    pc = time.perf_counter
    for _ in range(n):
        pc()
        pc()


def loop_with_nothing(n):
    import contextlib
    cm = contextlib.nullcontext()  # a C-level... nullcontext is Python; see below
    for _ in range(n):
        with cm:
            pass


def loop_stepscope(n):
    zone = stepscope.zone
    for _ in range(n):
        with zone("x"):
            pass


def loop_stepscope_kept(n):
    z = stepscope.zone("x")
    for _ in range(n):
        with z:
            pass


def loop_python_timer(n):
    for _ in range(n):
        with Timer("x"):
            pass


def loop_torch(n):
    import torch
    rf = torch.profiler.record_function
    for _ in range(n):
        with rf("x"):
            pass


def best_ns(fn, n):
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter_ns()
        fn(n)
        best = min(best, time.perf_counter_ns() - t0)
    return best / n


def main():
    empty = best_ns(loop_empty, N)
    rows = [("baseline: 2x perf_counter()", loop_baseline, N),
            ("with stepscope.zone('x')", loop_stepscope, N),
            ("with z (a kept stepscope.zone)", loop_stepscope_kept, N),
            ("with Timer('x') (pure Python)", loop_python_timer, N)]
    try:
        import torch  # noqa: F401
        rows.append(("with torch record_function('x')", loop_torch, max(N // 10, 1000)))
    except ImportError as e:
        print("torch: not importable (%s); its row is left out" % e)
    res = {}
    for label, fn, n in rows:
        res[label] = best_ns(fn, n) - empty
    print("python %s, %d iterations, best of %d, loop overhead %.1f ns subtracted"
          % (sys.version.split()[0], N, REPEATS, empty))
    base = res["baseline: 2x perf_counter()"]
    ours = res["with stepscope.zone('x')"]
    for label, ns in res.items():
        print("%-34s %8.1f ns   %5.2fx baseline   %5.2fx stepscope" % (label, ns, ns / base, ns / ours))
    print("pure-Python timer / stepscope: %.2fx" % (res["with Timer('x') (pure Python)"] / ours))
    st = stepscope.status()
    print("events recorded %d, dropped %d (the rings keep the latest)" % (st["events_recorded"], st["events_dropped"]))


if __name__ == "__main__":
    main()
