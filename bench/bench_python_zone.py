#!/usr/bin/python3
"""bench_python_zone.py - what `with stepscope.zone(...)` costs in CPython.

Times, in one run and one loop shape, ns per iteration of:

  baseline       t0 = perf_counter(); t1 = perf_counter()   (two bare clock reads)
  stepscope      `with stepscope.zone("x"):`
  kept zone      `with z:` where z = stepscope.zone("x") was made once
  recording off  `with stepscope.zone("x"):` after set_enabled(False): the
                 `with` statement and the module, without the library's work
  pure Python    `with Timer("x"):`, a class whose __enter__/__exit__ call perf_counter
  phase          `stepscope.phase("x")`: a chained phase, which ends the one
                 before it (one call and one clock read per phase)
  step + 4       a step holding four zones, and one holding four chained
                 phases (the step's end ends the last), per step
  torch          `with torch.profiler.record_function("x"):` (when torch imports)

With STEPSCOPE_LIBCUDA pointing at the test suite's fake libcuda
(build/fakes/libfake_cuda.so), also `with stepscope.gpu_zone("g", 0):` and
`with stepscope.gpu_zone("g"):` (the current stream: torch looked up in
sys.modules), next to a plain zone in the same loop shape: 64 zones, then
the fake GPU reaches every event and gpu_flush() resolves them.  The fake's
calls take a mutex and a few stores; the real driver's cost is its own.

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


def loop_phase(n):
    phase = stepscope.phase
    for _ in range(n):
        phase("x")
    stepscope.phase_end()


def loop_step_zones(n):
    zone, step = stepscope.zone, stepscope.step
    for _ in range(n):
        with step():
            with zone("data"):
                pass
            with zone("forward"):
                pass
            with zone("backward"):
                pass
            with zone("optimizer"):
                pass


def loop_step_phases(n):
    phase, step = stepscope.phase, stepscope.step
    for _ in range(n):
        with step():
            phase("data")
            phase("forward")
            phase("backward")
            phase("optimizer")


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


FAKE = None  # the fake libcuda's controls, when STEPSCOPE_LIBCUDA names it
BATCH = 64


def batched(body):
    def loop(n):
        complete, flush = FAKE.fake_cuda_complete, stepscope.gpu_flush
        for _ in range(n // BATCH):
            body()
            complete(-1)
            flush()
    return loop


def body_zone():
    zone = stepscope.zone
    for _ in range(BATCH):
        with zone("g"):
            pass


def body_gpu_zone():
    gz = stepscope.gpu_zone
    for _ in range(BATCH):
        with gz("g", 0):
            pass


def body_gpu_zone_current():
    gz = stepscope.gpu_zone
    for _ in range(BATCH):
        with gz("g"):
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
            ("stepscope.phase('x') (chained)", loop_phase, N),
            ("step + 4 zones (per step)", loop_step_zones, N // 4),
            ("step + 4 phases (per step)", loop_step_phases, N // 4),
            ("with Timer('x') (pure Python)", loop_python_timer, N)]
    try:
        import torch  # noqa: F401
        rows.append(("with torch record_function('x')", loop_torch, max(N // 20, 1000)))
    except ImportError as e:
        print("torch: not importable (%s); its row is left out" % e)
    global FAKE
    lib = os.environ.get("STEPSCOPE_LIBCUDA", "")
    if "fake" in os.path.basename(lib):
        import ctypes
        FAKE = ctypes.CDLL(lib)
        FAKE.fake_cuda_complete.argtypes = [ctypes.c_long]
        rows += [("zone, batches of 64 + flush", batched(body_zone), N),
                 ("gpu_zone('g', 0), same (fake libcuda)", batched(body_gpu_zone), N),
                 ("gpu_zone('g'), current stream, same", batched(body_gpu_zone_current), N)]
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
    print("phase / zone: %.2fx; a step of four phases / a step of four zones: %.2fx"
          % (res["stepscope.phase('x') (chained)"] / ours,
             res["step + 4 phases (per step)"] / res["step + 4 zones (per step)"]))
    if FAKE is not None:
        status = stepscope.cuda_status()
        print("gpu_zone - zone in the same loop: %.1f ns (stream 0), %.1f ns (current stream); cuda_status: %s"
              % (res["gpu_zone('g', 0), same (fake libcuda)"] - res["zone, batches of 64 + flush"],
                 res["gpu_zone('g'), current stream, same"] - res["zone, batches of 64 + flush"], status))
    costs = stepscope._stepscope._costs()
    print("the report prices a Python zone at its own work, measured at import: %.1f ns (this run's recording off: "
          "%.1f ns), plus the library's begin+end (this run: zone - recording off = %.1f ns)"
          % (costs["zone_ns"] or float("nan"), res["with stepscope.zone, recording off"],
             ours - res["with stepscope.zone, recording off"]))
    st = stepscope.status()
    print("events recorded %d, dropped %d (the rings keep the latest; the aggregates count them all)"
          % (st["events_recorded"], st["events_dropped"]))


if __name__ == "__main__":
    main()
