"""NVTX ranges from Python: the module's zones, steps, phases and GPU zones
go through the C core, so a tool injected through NVTX_INJECTION64_PATH
(as `nsys profile` does) receives them as ranges.  The tool is the test
suite's fake (test/fakes/fake_nvtx.c, built as build/fakes/libfake_nvtx.so),
which writes every range it receives to FAKE_NVTX_LOG; test_nvtx.c checks
the C side and the protocol itself."""
import os
from pathlib import Path

import pytest

from conftest import STEPSCOPE_BIN

FAKES = Path(STEPSCOPE_BIN).resolve().parent / "fakes"
FAKE_NVTX = str(FAKES / "libfake_nvtx.so")
FAKE_CUDA = str(FAKES / "libfake_cuda.so")

SCRIPT = """
    import threading
    import stepscope

    for i in range(2):
        with stepscope.step():
            with stepscope.zone("forward"):
                with stepscope.zone("attention"):
                    pass
            stepscope.phase("backward")
            stepscope.phase("optimizer")

    with stepscope.gpu_zone("gpu_matmul"):
        pass
    print("cuda", stepscope.cuda_status()["available"])

    def worker():
        with stepscope.zone("worker"):
            pass

    t = threading.Thread(target=worker)
    t.start()
    t.join()
"""

STEP = ["dpush step {n} payload={n}", "dpush forward", "dpush attention", "dpop", "dpop",
        "dpush backward", "dpop", "dpush optimizer", "dpop", "dpop"]


@pytest.fixture(scope="module")
def fake_nvtx():
    for f in (FAKE_NVTX, FAKE_CUDA):
        if not os.path.exists(f):
            pytest.fail("no %s: build the tree (cmake --build build)" % f)
    return FAKE_NVTX


def test_python_zones_reach_the_tool(run_under, fake_nvtx, tmp_path):
    log = tmp_path / "ranges.txt"
    r = run_under(SCRIPT, run_args=("--no-auto",), NVTX_INJECTION64_PATH=fake_nvtx, FAKE_NVTX_LOG=str(log),
                  STEPSCOPE_LIBCUDA=FAKE_CUDA)
    assert "cuda True" in r.stdout  # the GPU zone went through the fake libcuda
    got = log.read_text().splitlines()
    want = ["init version=3 core=16 cuda=9 opencl=15 cudart=7 core2=16 sync=7 module7=refused etid2=null",
            "domain stepscope"]
    for n in range(2):
        want += ["t1 " + s.format(n=n) for s in STEP]
    want += ["t1 dpush gpu_matmul", "t1 dpop", "t2 dpush worker", "t2 dpop"]
    assert got == want
    assert "NVTX" not in r.proc.stderr
    # recorded as without a tool
    assert r.zone("forward")["count"] == 2
    assert r.zone("optimizer")["count"] == 2
    assert r.zone("worker")["count"] == 1
    assert r.report["steps"]["count"] == 2


def test_python_without_a_tool(run_under, fake_nvtx, tmp_path, monkeypatch):
    log = tmp_path / "ranges.txt"
    monkeypatch.delenv("NVTX_INJECTION64_PATH", raising=False)
    r = run_under(SCRIPT, run_args=("--no-auto",), FAKE_NVTX_LOG=str(log), STEPSCOPE_LIBCUDA=FAKE_CUDA)
    assert not log.exists()  # nothing loaded the fake
    assert "NVTX" not in r.proc.stderr
    assert r.zone("forward")["count"] == 2


def test_python_with_a_bad_tool(run_under, tmp_path):
    r = run_under(SCRIPT, run_args=("--no-auto",), NVTX_INJECTION64_PATH="/nonexistent/libnvtx.so")
    lines = [l for l in r.proc.stderr.splitlines() if "NVTX" in l]
    assert len(lines) == 1, r.proc.stderr
    assert lines[0].startswith("stepscope: NVTX_INJECTION64_PATH=/nonexistent/libnvtx.so: cannot load it (")
    assert lines[0].endswith("; stepscope's zones will not show as NVTX ranges")
    assert r.zone("forward")["count"] == 2
    assert r.report["steps"]["count"] == 2
