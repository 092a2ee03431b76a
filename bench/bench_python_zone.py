#!/usr/bin/python3
"""bench_python_zone.py - what `with stepscope.zone(...)` costs in CPython.

Times, in one run and one loop shape, ns per iteration of:

  baseline       t0 = perf_counter(); t1 = perf_counter()   (two bare clock reads)
  stepscope      `with stepscope.zone("x"):`
  kept zone      `with z:` where z = stepscope.zone("x") was made once
  recording off  `with stepscope.zone("x"):` after set_enabled(False): the
                 `with` statement and the module, without the library's work
  pure Python    `with Timer("x"):`, a class whose __enter__/__exit__ call perf_counter
  torch          `with torch.profiler.record_function("x"):` (when torch imports)

and prints the ratios.  The variants run interleaved, round after round, and
each figure is its best round (the least disturbed), the empty loop's cost
subtracted.  Run it alone on an idle machine:

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


def loop_stepscope_off(n):
    zone = stepscope.zone
    stepscope.set_enabled(False)
    for _ in range(n):
        with zone("x"):
            pass
    stepscope.set_enabled(True)


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


def timed_ns(fn, n):
    t0 = time.perf_counter_ns()
    fn(n)
    return (time.perf_counter_ns() - t0) / n


def main():
    rows = [("baseline: 2x perf_counter()", loop_baseline, N),
            ("with stepscope.zone('x')", loop_stepscope, N),
            ("with z (a kept stepscope.zone)", loop_stepscope_kept, N),
            ("with stepscope.zone, recording off", loop_stepscope_off, N),
            ("with Timer('x') (pure Python)", loop_python_timer, N)]
    try:
        import torch  # noqa: F401
        rows.append(("with torch record_function('x')", loop_torch, max(N // 20, 1000)))
    except ImportError as e:
        print("torch: not importable (%s); its row is left out" % e)
    best = {label: float("inf") for label, _, _ in rows}
    empty = float("inf")
    for _ in range(REPEATS):
        empty = min(empty, timed_ns(loop_empty, N))
        for label, fn, n in rows:
            best[label] = min(best[label], timed_ns(fn, n))
    res = {label: ns - empty for label, ns in best.items()}
    print("python %s, %d iterations, best of %d interleaved rounds, empty loop %.1f ns subtracted"
          % (sys.version.split()[0], N, REPEATS, empty))
    base = res["baseline: 2x perf_counter()"]
    ours = res["with stepscope.zone('x')"]
    for label, ns in res.items():
        print("%-36s %8.1f ns   %6.2fx baseline   %6.2fx stepscope" % (label, ns, ns / base, ns / ours))
    print("pure-Python timer / stepscope zone: %.2fx" % (res["with Timer('x') (pure Python)"] / ours))
    st = stepscope.status()
    print("events recorded %d, dropped %d (the rings keep the latest; the aggregates count them all)"
          % (st["events_recorded"], st["events_dropped"]))


if __name__ == "__main__":
    main()
