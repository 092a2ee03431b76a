#!/usr/bin/python3
"""bench_gpu_tools.py - what CUDATimer.measure and StreamProfiler's
arithmetic cost, against what they are built on.

With STEPSCOPE_LIBCUDA pointing at the test suite's fake libcuda
(build/fakes/libfake_cuda.so), times ns per block of, in one loop shape
(batches of 64 blocks, then the fake GPU reaches every event and
gpu_flush() resolves them):

  zone              `with stepscope.zone("g"):`
  gpu_zone          `with stepscope.gpu_zone("g", 0):`, the baseline: a GPU
                    zone without the timer
  CUDATimer         `with timer.measure("g"):` (stream=0, synchronize=False):
                    the same GPU zone plus the timer's bookkeeping and its
                    read of the span ring at each block's start
  CUDATimer + read  the same, then get_elapsed() of the batch's last block

and, with no GPU involved, stream_figures() over 1024 spans on 4 streams
(StreamProfiler's arithmetic at a block's end) against sorted() of the same
intervals (the sort it cannot do without).  The fake's calls take a mutex
and a few stores; the real driver's cost is its own (scripts/gpu-check.sh
prints it on a GPU).  The variants run interleaved, round after round; each
figure is the median of the rounds, with their range, and the ratios are
of the medians:

    STEPSCOPE_LIBCUDA=build/fakes/libfake_cuda.so PYTHONPATH=build/python \\
        /usr/bin/python3 bench/bench_gpu_tools.py [blocks]
"""
import ctypes
import os
import statistics
import sys
import time

os.environ.setdefault("STEPSCOPE_OUT", "")
import stepscope  # noqa: E402
from stepscope.gpu_tools import stream_figures  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 64 * 1000
ROUNDS = 9
BATCH = 64


def main():
    lib = os.environ.get("STEPSCOPE_LIBCUDA", "")
    if "fake" not in os.path.basename(lib):
        print("bench_gpu_tools: set STEPSCOPE_LIBCUDA to the fake libcuda (build/fakes/libfake_cuda.so)")
        return 2
    fake = ctypes.CDLL(lib)
    fake.fake_cuda_complete.argtypes = [ctypes.c_long]
    complete, flush = fake.fake_cuda_complete, stepscope.gpu_flush
    zone, gz = stepscope.zone, stepscope.gpu_zone
    timer = stepscope.CUDATimer(stream=0, synchronize=False)

    def batched(body):
        def loop():
            for _ in range(N // BATCH):
                body()
                complete(-1)
                flush()
        return loop

    def b_zone():
        for _ in range(BATCH):
            with zone("g"):
                pass

    def b_gpu_zone():
        for _ in range(BATCH):
            with gz("g", 0):
                pass

    def b_timer():
        for _ in range(BATCH):
            with timer.measure("g"):
                pass

    def b_timer_read():
        b_timer()
        complete(-1)
        if timer.get_elapsed("g") is None:
            raise SystemExit("bench_gpu_tools: the fake GPU's block was not resolved")

    spans = [(k + 1, "z", k % 4, k * 1000, k * 1000 + 3500, 3.5e-3) for k in range(1024)]
    FIG = 200

    def figures():
        for _ in range(FIG):
            stream_figures(spans, 4)

    def sort_only():
        for _ in range(FIG):
            sorted((s[3], s[4]) for s in spans)

    rows = [("zone", batched(b_zone), N), ("gpu_zone (baseline)", batched(b_gpu_zone), N),
            ("CUDATimer.measure", batched(b_timer), N),
            ("CUDATimer.measure + get_elapsed/64", batched(b_timer_read), N),
            ("stream_figures, 1024 spans", figures, FIG), ("sorted(), 1024 intervals", sort_only, FIG)]
    got = {label: [] for label, _, _ in rows}
    for _ in range(ROUNDS):
        for label, fn, n in rows:
            t0 = time.perf_counter_ns()
            fn()
            got[label].append((time.perf_counter_ns() - t0) / n)
            timer.reset()
    med = {label: statistics.median(v) for label, v in got.items()}
    print("python %s, %d blocks a round, %d interleaved rounds: median (range) per block, or per call for the "
          "figures" % (sys.version.split()[0], N, ROUNDS))
    for label, v in got.items():
        print("%-36s %10.1f ns  (%.1f-%.1f)" % (label, med[label], min(v), max(v)))
    print("CUDATimer.measure / gpu_zone: %.2fx (+%.1f ns a block); with a get_elapsed every 64: %.2fx"
          % (med["CUDATimer.measure"] / med["gpu_zone (baseline)"],
             med["CUDATimer.measure"] - med["gpu_zone (baseline)"],
             med["CUDATimer.measure + get_elapsed/64"] / med["gpu_zone (baseline)"]))
    print("stream_figures / sorted(): %.2fx (%.1f us for 1024 spans)"
          % (med["stream_figures, 1024 spans"] / med["sorted(), 1024 intervals"],
             med["stream_figures, 1024 spans"] / 1e3))
    print("cuda_status: %s" % stepscope.cuda_status())
    return 0


if __name__ == "__main__":
    sys.exit(main())
