#!/usr/bin/python3
"""bench_auto_run.py - whole runs of examples/torch_train.py --plain under
`stepscope run`, auto-instrumented against plain, in interleaved pairs.

Each pair runs the same command twice under `stepscope run` (in random
order within the pair): once with stepscope._auto.install() called as
torch finishes importing, once without.  Both go through the same small
launcher (python -c ... runpy), so the only difference is install(): the
pair measures what the auto-instrumentation costs a whole run (patching at
start, hooks at every step, the exit), with the recording `stepscope run`
does anyway in both.  The wall time of each run is the run's own
(report.json timing.wall_s); the figure is the median of the per-pair
differences and their range, next to the medians of each side: the issue
asks that auto's cost be inside the noise of the pairs.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_auto_run.py [pairs] [epochs] [-- extra example args]

`stepscope run -- python examples/torch_train.py --plain` against
`stepscope run --no-auto -- ...` measures nearly the same, but with the
startup hook in one run only; this driver keeps everything but install()
the same on both sides.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPSCOPE = os.environ.get("STEPSCOPE_BIN") or os.path.join(ROOT, "build", "stepscope")
EXAMPLE = os.path.join(ROOT, "examples", "torch_train.py")
LAUNCH = ("import sys, runpy, torch\n"
          "if sys.argv[1] == 'auto':\n"
          "    import stepscope._auto\n"
          "    assert stepscope._auto.install()\n"
          "sys.argv = sys.argv[2:]\n"
          "runpy.run_path(sys.argv[0], run_name='__main__')\n")


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def run(mode, args, out):
    cmd = [STEPSCOPE, "run", "-q", "-o", out, "--", sys.executable, "-c", LAUNCH, mode, EXAMPLE] + args
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.exit("bench_auto_run: %s failed (%d):\n%s" % (mode, proc.returncode, proc.stderr))
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    steps = next((z["count"] for z in report["zones"] if z["name"] == "step"), 0)
    return report["timing"]["wall_s"], steps, proc.stdout


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    pairs = int(argv[0]) if argv else 10
    epochs = argv[1] if len(argv) > 1 else "10"
    args = ["--plain", "--epochs", epochs] + extra
    random.seed(0)
    walls = {"plain": [], "auto": []}
    steps = {}
    with tempfile.TemporaryDirectory() as tmp:
        run("plain", args, os.path.join(tmp, "warm"))  # warm the page cache
        for i in range(pairs):
            order = ["plain", "auto"]
            random.shuffle(order)
            outputs = {}
            for mode in order:
                wall, n, stdout = run(mode, args, os.path.join(tmp, "%s-%d" % (mode, i)))
                walls[mode].append(wall)
                steps[mode] = n
                outputs[mode] = stdout
            if outputs["plain"] != outputs["auto"]:
                sys.exit("bench_auto_run: the script printed differently under auto:\n%s\n---\n%s"
                         % (outputs["plain"], outputs["auto"]))
    diffs = [a - p for a, p in zip(walls["auto"], walls["plain"])]
    spread = [w - median(walls["plain"]) for w in walls["plain"]]
    print("examples/torch_train.py %s under stepscope run, %d interleaved pairs" % (" ".join(args), pairs))
    print("steps recorded: plain %d, auto %d; the script's output identical in every pair" % (steps["plain"],
                                                                                             steps["auto"]))
    for mode in ("plain", "auto"):
        print("%-6s wall median %.3f s  [%.3f, %.3f]" % (mode, median(walls[mode]), min(walls[mode]),
                                                        max(walls[mode])))
    print("auto - plain, per pair: median %+.3f s  [%+.3f, %+.3f]; ratio of medians %.3f" % (
        median(diffs), min(diffs), max(diffs), median(walls["auto"]) / median(walls["plain"])))
    print("noise: plain runs spread over [%+.3f, %+.3f] s around their median" % (min(spread), max(spread)))


if __name__ == "__main__":
    main()
