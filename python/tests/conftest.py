"""Shared helpers for the stepscope Python tests.

Most tests write a small script and run it in a fresh interpreter, either
under `stepscope run` (the CLI built next to the module: STEPSCOPE_BIN, set
by ctest) or alone, then read the report.json it produced.  A fresh process
per script keeps each test's record, exit hook and report its own.
"""
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# The tests that import the module in pytest's own process must not leave a
# stepscope-out/ in the working directory when pytest exits.
os.environ["STEPSCOPE_OUT"] = ""
for _k in ("STEPSCOPE_RUN_DIR", "STEPSCOPE_DISABLE"):
    os.environ.pop(_k, None)

ROOT = Path(__file__).resolve().parents[2]
STEPSCOPE_BIN = os.environ.get("STEPSCOPE_BIN") or str(ROOT / "build" / "stepscope")
PYTHON = sys.executable


def pytest_collection_modifyitems(config, items):
    """SPS_PYTEST_SHARD=I/N keeps every Nth test from the Ith (1-based), so
    that ctest runs the suite as N tests side by side (python/CMakeLists.txt);
    every test lands in exactly one shard."""
    shard = os.environ.get("SPS_PYTEST_SHARD")
    if not shard:
        return
    try:
        i, n = (int(x) for x in shard.split("/"))
        if not 1 <= i <= n:
            raise ValueError
    except ValueError:
        raise pytest.UsageError("SPS_PYTEST_SHARD=%r: want I/N with 1 <= I <= N" % shard)
    config.hook.pytest_deselected(items=[t for k, t in enumerate(items) if k % n != i - 1])
    items[:] = items[i - 1::n]


# python -c EXAMPLE_LAUNCH SCRIPT ARGS...: runs SCRIPT as __main__ with
# stepscope._auto installed once torch is imported (as `stepscope run`'s
# startup hook does)
EXAMPLE_LAUNCH = ("import sys, runpy, torch, stepscope._auto\n"
                  "assert stepscope._auto.install()\n"
                  "sys.argv = sys.argv[1:]\n"
                  "runpy.run_path(sys.argv[0], run_name='__main__')\n")


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_prefix():
    """`python -m torch.distributed.run` for one node, on a rendezvous port
    of its own: --standalone's is fixed (29400), and two tests (or any other
    job on the machine) running at once collide on it.  --redirects 9:0
    --tee 9:0: Debian 12's torchrun fails without them (docs/distributed.md)."""
    return [PYTHON, "-m", "torch.distributed.run", "--redirects", "9:0", "--tee", "9:0", "--nnodes", "1",
            "--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:%d" % free_port()]


def script_env(**extra):
    """The environment for a script: ours minus every STEPSCOPE_* setting
    (each test says what it wants), plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
    env.update(extra)
    return env


def write_script(tmp_path, code, name="train.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return path


class Result:
    def __init__(self, proc, report):
        self.proc = proc
        self.report = report
        self.stdout = proc.stdout

    def zone(self, name):
        """The zones[] entry for name (any kind), or None."""
        for z in self.report["zones"]:
            if z["name"] == name:
                return z
        return None

    def value(self, name):
        return next((v for v in self.report["values"] if v["name"] == name), None)

    def counter(self, name):
        return next((c for c in self.report["counters"] if c["name"] == name), None)

    def threads(self):
        return [t for p in self.report["processes"] for t in p["threads"]]


@pytest.fixture
def run_under(tmp_path):
    """run_under(code, **env) -> Result: the script under `stepscope run`
    (with run_args, a tuple of options, before its "--")."""
    def run(code, expect_rc=0, run_args=(), **env):
        if not os.access(STEPSCOPE_BIN, os.X_OK):
            pytest.fail("no stepscope CLI at %s (set STEPSCOPE_BIN)" % STEPSCOPE_BIN)
        script = write_script(tmp_path, code)
        out = tmp_path / "out"
        proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", "-o", str(out), *run_args, "--", PYTHON, str(script)],
                              cwd=str(tmp_path), env=script_env(**env), capture_output=True, text=True, timeout=300)
        assert proc.returncode == expect_rc, "rc %d\nstdout:\n%s\nstderr:\n%s" % (
            proc.returncode, proc.stdout, proc.stderr)
        with open(out / "report.json") as f:
            return Result(proc, json.load(f))
    return run


@pytest.fixture
def run_alone(tmp_path):
    """run_alone(code, **env) -> CompletedProcess: the script without
    `stepscope run`, in tmp_path as its working directory."""
    def run(code, expect_rc=0, **env):
        script = write_script(tmp_path, code)
        proc = subprocess.run([PYTHON, str(script)], cwd=str(tmp_path), env=script_env(**env),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == expect_rc, "rc %d\nstdout:\n%s\nstderr:\n%s" % (
            proc.returncode, proc.stdout, proc.stderr)
        return proc
    return run


def load_report(directory):
    with open(Path(directory) / "report.json") as f:
        return Result(subprocess.CompletedProcess([], 0, "", ""), json.load(f))
