#!/usr/bin/python3
"""bench_auto_hook.py - what stepscope run's startup hook costs a Python
process that never imports torch.

Starts the interpreter, interleaved, round after round, as:

  baseline   python3 SCRIPT                    (no hook: PYTHONPATH unset)
  hook       python3 SCRIPT with the hook first on PYTHONPATH and
             STEPSCOPE_AUTO=1, as `stepscope run` starts it
  hook off   the same with STEPSCOPE_AUTO=0 (--no-auto's setting: it only
             chains the sitecustomize it shadows)

for two scripts: `pass`, and one that imports 40 standard-library modules
(each import passes the hook's finder once).  Prints each variant's
median and range of CPU time (user + system, what the hook adds on a busy
machine) and of wall time per start, and the medians' differences from
the baseline.  Run from the repository root after a build:

    /usr/bin/python3 bench/bench_auto_hook.py [rounds] [build dir]
"""
import os
import statistics
import subprocess
import sys
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
BUILD = sys.argv[2] if len(sys.argv) > 2 else "build"
HOOK = os.path.abspath(os.path.join(BUILD, "python", "auto"))
PYTHON = "/usr/bin/python3"

MODULES = ("json", "email.message", "http.client", "urllib.parse", "csv", "decimal", "fractions", "statistics",
           "argparse", "logging", "pathlib", "tempfile", "shutil", "glob", "fnmatch", "textwrap", "difflib",
           "heapq", "bisect", "queue", "threading", "concurrent.futures", "asyncio", "socket", "selectors",
           "ssl", "hashlib", "hmac", "secrets", "uuid", "zipfile", "tarfile", "gzip", "bz2", "lzma", "pickle",
           "copy", "pprint", "dataclasses", "typing")
SCRIPTS = {"pass": "pass", "40 imports": "import " + ", ".join(MODULES)}


def env_for(variant):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_") and k != "PYTHONPATH"}
    if variant != "baseline":
        env["PYTHONPATH"] = HOOK
        env["STEPSCOPE_AUTO"] = "1" if variant == "hook" else "0"
    return env


def start(code, env):
    """(wall, CPU) seconds of one interpreter start: CPU time (user + system,
    from wait4) is what the hook adds on a busy machine, where the wall
    time mostly measures the wait for a core."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "-c", code], env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit("bench_auto_hook.py: %s exited %d" % (code[:40], proc.returncode))
    return wall, ru.ru_utime + ru.ru_stime


def main():
    if not os.path.exists(os.path.join(HOOK, "sitecustomize.py")):
        sys.exit("bench_auto_hook.py: no %s/sitecustomize.py: build first" % HOOK)
    variants = ("baseline", "hook", "hook off")
    envs = {v: env_for(v) for v in variants}
    print("python %s, %d interleaved rounds, ms per interpreter start: CPU (user + system) and wall, "
          "median [min, max]" % (sys.version.split()[0], ROUNDS))
    for name, code in SCRIPTS.items():
        cpu = {v: [] for v in variants}
        wall = {v: [] for v in variants}
        for v in variants:  # warm the page cache
            start(code, envs[v])
        for _ in range(ROUNDS):
            for v in variants:
                w, c = start(code, envs[v])
                wall[v].append(w * 1e3)
                cpu[v].append(c * 1e3)
        for label, times in (("CPU", cpu), ("wall", wall)):
            base = statistics.median(times["baseline"])
            for v in variants:
                t = times[v]
                med = statistics.median(t)
                print("  %-11s %-4s %-9s %7.2f ms  [%6.2f, %6.2f]  %+6.2f ms vs baseline"
                      % (name, label, v, med, min(t), max(t), med - base))


if __name__ == "__main__":
    main()
