"""stepscope.gpu_zone, gpu_flush and cuda_status against the test suite's
fake libcuda (test/fakes/fake_cuda.c, built as build/fakes/libfake_cuda.so):
the scripts load the same file with ctypes to drive its clock and event
queue, so each GPU time is known exactly.  Without a libcuda the zones
still record their CPU time and say why."""
import json
import os
import textwrap
from pathlib import Path

import pytest

from conftest import STEPSCOPE_BIN, load_report

FAKE_CUDA = str(Path(STEPSCOPE_BIN).resolve().parent / "fakes" / "libfake_cuda.so")
NO_CUDA = "/nonexistent/libcuda.so.1"

# The top of every script: the fake's controls (the library dlopens the
# same path, so both see one fake GPU).
FAKE = """
    import ctypes, json, os, sys
    import stepscope
    fake = ctypes.CDLL(os.environ["STEPSCOPE_LIBCUDA"])
    fake.fake_cuda_advance.argtypes = [ctypes.c_double]
    fake.fake_cuda_complete.argtypes = [ctypes.c_long]
    fake.fake_cuda_last_stream.restype = ctypes.c_void_p
    fake.fake_cuda_calls.argtypes = [ctypes.c_char_p]
    fake.fake_cuda_calls.restype = ctypes.c_long
    def synchronising_calls():
        return sum(fake.fake_cuda_calls(n) for n in (b"cuCtxSynchronize", b"cuStreamSynchronize",
                                                     b"cuEventSynchronize"))
"""


def with_fake(code):
    """FAKE, then code (each dedented on its own)."""
    return textwrap.dedent(FAKE) + textwrap.dedent(code)


@pytest.fixture(scope="module")
def fake_cuda():
    if not os.path.exists(FAKE_CUDA):
        pytest.fail("no fake libcuda at %s: build the tree (cmake --build build)" % FAKE_CUDA)
    return FAKE_CUDA


def last_json_line(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def test_gpu_times_are_the_fake_gpus(run_under, fake_cuda):
    r = run_under(with_fake("""
        for ms in (1.5, 2.25, 4.0):
            with stepscope.step():
                with stepscope.gpu_zone("fwd"):
                    fake.fake_cuda_complete(-1)   # the GPU reaches the start event now
                    fake.fake_cuda_advance(ms)    # and spends ms on the block's kernels
                fake.fake_cuda_complete(-1)       # it reaches the end event; the step end resolves it
        print(json.dumps({"status": stepscope.cuda_status(), "stream": fake.fake_cuda_last_stream(),
                          "sync": synchronising_calls(), "pending": stepscope.gpu_flush()}))
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    out = last_json_line(r.stdout)
    assert out["status"] == {"available": True, "driver_version": 12040, "reason": None, "resolved": 3,
                             "cpu_only": 0, "dropped": 0, "unresolved": 0}
    assert out["stream"] is None  # stream=None without PyTorch: the legacy default stream, 0
    assert out["sync"] == 0 and out["pending"] == 0
    v = r.value("fwd.gpu_ms")
    assert (v["count"], v["first"], v["last"], v["min"], v["max"]) == (3, 1.5, 4.0, 1.5, 4.0)
    assert v["mean"] == pytest.approx(7.75 / 3, rel=1e-12)
    # the CPU side is one ordinary zone per block, inside its step
    assert r.zone("fwd")["kind"] == "zone" and r.zone("fwd")["count"] == 3
    assert r.zone("step")["count"] == 3
    assert r.counter("cuda.gpu_zones_cpu_only") is None
    cuda = r.report["cuda"]
    assert (cuda["used"], cuda["available"], cuda["driver_version"], cuda["reason"]) == (True, True, 12040, None)
    assert (cuda["processes"], cuda["zones_resolved"], cuda["zones_cpu_only"]) == (1, 3, 0)
    assert r.report["processes"][0]["cuda"]["zones_resolved"] == 3


def test_streams_reach_the_driver(run_under, fake_cuda):
    # which stream each event was recorded on, as the fake saw it
    r = run_under(with_fake("""
        import types
        seen = {}
        def probe(key, zone):
            with zone:
                start = fake.fake_cuda_last_stream()
            seen[key] = [start, fake.fake_cuda_last_stream()]

        class Stream:                      # what torch.cuda.Stream offers
            cuda_stream = 0x5678

        probe("int", stepscope.gpu_zone("a", 0x1234))
        probe("object", stepscope.gpu_zone("a", Stream()))
        probe("zero", stepscope.gpu_zone("a", 0))

        # stream=None with PyTorch imported: its current stream, once it has
        # initialised CUDA (a stand-in for torch, which has no GPU here)
        current = types.SimpleNamespace(cuda_stream=0x9ABC)
        state = {"init": False}
        sys.modules["torch"] = types.SimpleNamespace(cuda=types.SimpleNamespace(
            is_initialized=lambda: state["init"], current_stream=lambda: current))
        probe("torch, not initialised", stepscope.gpu_zone("a"))
        state["init"] = True
        probe("torch current", stepscope.gpu_zone("a"))
        current = types.SimpleNamespace(cuda_stream=0xDEF0)   # found again at each enter
        z = stepscope.gpu_zone("a")
        probe("torch current, changed", z)
        del sys.modules["torch"]
        probe("no torch", z)

        @stepscope.gpu_zone("decorated", 0x42)
        def work(x):
            seen["decorated"] = [fake.fake_cuda_last_stream()]
            return x * 2
        assert work(21) == 42 and work.__name__ == "work"

        token = stepscope.gpu_zone_begin("low", stream=0x77)
        seen["low level"] = [fake.fake_cuda_last_stream()]
        stepscope.gpu_zone_end(token)
        fake.fake_cuda_complete(-1)
        print(json.dumps({"seen": seen, "pending": stepscope.gpu_flush(), "status": stepscope.cuda_status(),
                          "repr": [repr(stepscope.gpu_zone("a", 0x1234)), repr(stepscope.gpu_zone("a"))]}))
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    out = last_json_line(r.stdout)
    assert out["seen"] == {
        "int": [0x1234, 0x1234], "object": [0x5678, 0x5678], "zero": [None, None],
        "torch, not initialised": [None, None], "torch current": [0x9ABC, 0x9ABC],
        "torch current, changed": [0xDEF0, 0xDEF0], "no torch": [None, None],
        "decorated": [0x42], "low level": [0x77]}
    assert out["pending"] == 0
    assert out["status"]["resolved"] == 9 and out["status"]["cpu_only"] == 0
    assert out["repr"] == ["<stepscope.gpu_zone 'a' stream=0x1234>", "<stepscope.gpu_zone 'a' stream=current>"]
    assert r.value("a.gpu_ms")["count"] == 7
    assert r.value("decorated.gpu_ms")["count"] == 1 and r.value("low.gpu_ms")["count"] == 1
    assert r.zone("a")["count"] == 7 and r.zone("decorated")["count"] == 1


def test_without_libcuda_zones_are_cpu_zones(run_under):
    r = run_under("""
        import json, stepscope
        for i in range(3):
            with stepscope.step():
                with stepscope.gpu_zone("fwd", 0x1234):
                    pass
        print(json.dumps(stepscope.cuda_status()))
    """, STEPSCOPE_LIBCUDA=NO_CUDA)
    status = last_json_line(r.stdout)
    assert status["available"] is False and status["driver_version"] is None
    assert status["reason"].startswith("cannot load %s: " % NO_CUDA)
    assert (status["cpu_only"], status["resolved"]) == (3, 0)
    assert r.zone("fwd")["count"] == 3  # the CPU time is there
    assert r.value("fwd.gpu_ms") is None
    assert r.counter("cuda.gpu_zones_cpu_only")["total"] == 3
    cuda = r.report["cuda"]
    assert (cuda["used"], cuda["available"], cuda["reason"]) == (True, False, status["reason"])
    assert (cuda["zones_cpu_only"], cuda["zones_resolved"]) == (3, 0)


def test_standalone_report_has_the_cuda_status(run_alone, tmp_path, fake_cuda):
    # a finished pair that no step end resolved: the exit hook flushes it
    run_alone(with_fake("""
        with stepscope.gpu_zone("solo"):
            fake.fake_cuda_complete(-1)
            fake.fake_cuda_advance(0.5)
        fake.fake_cuda_complete(-1)
    """), STEPSCOPE_LIBCUDA=fake_cuda, STEPSCOPE_OUT=str(tmp_path / "out"))
    r = load_report(tmp_path / "out")
    assert r.value("solo.gpu_ms")["count"] == 1 and r.value("solo.gpu_ms")["last"] == 0.5
    assert r.report["cuda"]["available"] is True and r.report["cuda"]["zones_resolved"] == 1


def test_no_zones_no_libcuda_load(run_under):
    # a process that never begins a GPU zone does not load libcuda, and the
    # report says that no GPU zone was used
    r = run_under("""
        import stepscope
        with stepscope.zone("cpu"):
            pass
        stepscope.gpu_zone("never", 0x10)   # made, never entered
    """, STEPSCOPE_LIBCUDA=NO_CUDA)
    cuda = r.report["cuda"]
    assert cuda["used"] is False and cuda["available"] is None and cuda["processes"] == 0
    assert cuda["reason"].startswith("no process began a GPU zone")
    assert r.report["processes"][0]["cuda"] is None
    assert r.zone("never") is None


def test_bad_arguments():
    import stepscope

    class NoInt:
        cuda_stream = "0x10"

    for bad in ("0", 1.5, True, object(), [1]):
        with pytest.raises(TypeError, match=r"stepscope.gpu_zone\(\): stream must be None, an int"):
            stepscope.gpu_zone("x", bad)
    with pytest.raises(TypeError, match=r"stream.cuda_stream must be an int, not str"):
        stepscope.gpu_zone("x", NoInt())
    for bad in (-1, 2 ** 64):
        with pytest.raises(ValueError, match="between 0 and 2\\*\\*64-1"):
            stepscope.gpu_zone("x", bad)
    with pytest.raises(ValueError, match="must not be empty"):
        stepscope.gpu_zone("")
    with pytest.raises(TypeError, match="name must be a str"):
        stepscope.gpu_zone(5)
    with pytest.raises(TypeError, match="stream must be None"):
        stepscope.gpu_zone_begin("x", "s")
    with pytest.raises(TypeError, match="token must be an int"):
        stepscope.gpu_zone_end("t")
    with pytest.raises(ValueError, match="not a token"):
        stepscope.gpu_zone_end(-1)
    with pytest.raises(TypeError, match="use stepscope.gpu_zone"):
        stepscope.GpuZone()
    with pytest.raises(TypeError, match=r'a stepscope.gpu_zone decorates one function: @stepscope.gpu_zone\("name"\) above'):
        stepscope.gpu_zone("x")(len, len)
    with pytest.raises(TypeError, match="cannot time a generator"):
        @stepscope.gpu_zone("gen")
        def gen():
            yield 1
    assert stepscope.gpu_zone("x", 0x10).stream == 0x10 and stepscope.gpu_zone("x").stream is None


def test_a_gpu_zone_times_one_block_at_a_time(run_alone):
    proc = run_alone("""
        import stepscope
        z = stepscope.gpu_zone("x", 0)
        with z:
            try:
                with z:
                    pass
            except RuntimeError as e:
                print(e)
        with z:   # usable again once closed
            pass
    """, STEPSCOPE_LIBCUDA=NO_CUDA, STEPSCOPE_OUT="")
    assert "stepscope.gpu_zone('x') is already open" in proc.stdout


def test_fork_child_times_on_the_cpu(run_under, fake_cuda):
    # CUDA must not be used in a fork child: its GPU zones are CPU zones,
    # with the reason, in its own record; the parent's still resolve
    r = run_under(with_fake("""
        with stepscope.gpu_zone("parent"):
            fake.fake_cuda_complete(-1)
            fake.fake_cuda_advance(1.25)
        pid = os.fork()
        if pid == 0:
            for i in range(4):
                with stepscope.gpu_zone("child"):
                    pass
            stepscope.gpu_flush()
            # the parent's three records (its epoch and pair), none of the child's
            os._exit(0 if synchronising_calls() == 0 and fake.fake_cuda_calls(b"cuEventRecord") == 3 else 1)
        assert os.waitpid(pid, 0)[1] == 0
        fake.fake_cuda_complete(-1)
        assert stepscope.gpu_flush() == 0
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    procs = {p["pid"]: p for p in r.report["processes"]}
    assert len(procs) == 2
    child = next(p for p in procs.values() if p["ppid"] in procs)
    parent = procs[child["ppid"]]
    assert parent["cuda"]["available"] is True and parent["cuda"]["zones_resolved"] == 1
    assert child["cuda"]["available"] is False and child["cuda"]["zones_cpu_only"] == 4
    assert child["cuda"]["reason"].startswith("forked from a process that had loaded libcuda")
    assert r.value("parent.gpu_ms")["count"] == 1 and r.value("parent.gpu_ms")["last"] == 1.25
    assert r.value("child.gpu_ms") is None and r.zone("child")["count"] == 4
    cuda = r.report["cuda"]
    assert (cuda["processes"], cuda["available"], cuda["zones_resolved"], cuda["zones_cpu_only"]) == (2, True, 1, 4)
    assert cuda["reason"] == child["cuda"]["reason"] and cuda["reason_pid"] == child["pid"]



def test_fork_child_of_a_process_whose_torch_loaded_libcuda(run_alone, fake_cuda):
    # PyTorch loaded libcuda (and initialised the driver) before the fork,
    # stepscope had begun no GPU zone yet (the DataLoader's workers start
    # at the loop's first batch, before its first forward): the child
    # still must not call the driver
    proc = run_alone(with_fake("""
        pid = os.fork()                   # `fake` above: the library loaded, as torch's import does
        if pid == 0:
            with stepscope.gpu_zone("child"):
                pass
            status = stepscope.cuda_status()
            calls = sum(fake.fake_cuda_calls(n) for n in (b"cuInit", b"cuCtxGetCurrent", b"cuEventCreate",
                                                          b"cuEventRecord"))
            print(json.dumps({"status": status, "calls": calls}), flush=True)
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
    """), STEPSCOPE_LIBCUDA=fake_cuda, STEPSCOPE_OUT="")
    out = last_json_line(proc.stdout)
    assert out["calls"] == 0
    assert out["status"]["available"] is False
    assert out["status"]["reason"] == ("forked from a process that had loaded libcuda: CUDA must not be used in a "
                                       "fork child before exec")
    # a child of a process without libcuda loads it itself, after its fork
    # (CUDA first used in a worker): its own to use, GPU zones work there
    proc = run_alone("""
        import ctypes, json, os, stepscope
        pid = os.fork()
        if pid == 0:
            fake = ctypes.CDLL(os.environ["STEPSCOPE_LIBCUDA"])
            with stepscope.gpu_zone("child"):
                pass
            print(json.dumps(stepscope.cuda_status()), flush=True)
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
    """, STEPSCOPE_LIBCUDA=fake_cuda, STEPSCOPE_OUT="")
    status = last_json_line(proc.stdout)
    assert status["available"] is True and status["reason"] is None

SPANS = """
    import threading, time
    from stepscope import _stepscope
    fake.fake_cuda_stream_advance.argtypes = [ctypes.c_void_p, ctypes.c_double]
    fake.fake_cuda_stream_complete.argtypes = [ctypes.c_void_p, ctypes.c_long]
    fake.fake_cuda_stream_complete.restype = ctypes.c_long
    A, B = 0xA000, 0xB000
"""


def with_spans(code):
    """FAKE, SPANS (the stream controls), then code."""
    return with_fake(SPANS) + textwrap.dedent(code)


def test_gpu_spans_are_placed_per_stream(run_alone, fake_cuda):
    # stream A busy [0, 10) ms after the epoch, B [5, 12), the default
    # stream [12, 15): _gpu_spans gives each where the fake GPU ran it
    proc = run_alone(with_spans("""
        t0 = _stepscope._clock_ns()
        with stepscope.gpu_zone("a", A):
            pass
        t1 = _stepscope._clock_ns()
        with stepscope.gpu_zone("b", B):
            pass
        with stepscope.gpu_zone("d", 0):
            pass
        pending = stepscope.gpu_flush()
        fake.fake_cuda_stream_complete(A, 2)          # the thread's epoch and a's start, at 0
        fake.fake_cuda_stream_advance(B, 5.0)
        fake.fake_cuda_stream_complete(B, 1)
        fake.fake_cuda_stream_advance(A, 10.0)
        fake.fake_cuda_stream_complete(A, 1)
        fake.fake_cuda_stream_advance(B, 7.0)
        fake.fake_cuda_stream_complete(B, 1)
        fake.fake_cuda_stream_advance(None, 12.0)
        fake.fake_cuda_stream_complete(None, 1)
        fake.fake_cuda_stream_advance(None, 3.0)
        fake.fake_cuda_stream_complete(None, 1)
        left = stepscope.gpu_wait(5)
        spans = _stepscope._gpu_spans()
        print(json.dumps({"t0": t0, "t1": t1, "pending": pending, "left": left, "spans": spans,
                          "after_first": _stepscope._gpu_spans(since=spans[0][0]),
                          "after_last": _stepscope._gpu_spans(spans[-1][0]), "sync": synchronising_calls()}))
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    out = last_json_line(proc.stdout)
    assert (out["pending"], out["left"], out["sync"]) == (3, 0, 0)
    spans = out["spans"]
    assert [(s[0], s[1], s[2], s[5]) for s in spans] == [(1, "a", 0xA000, 10.0), (2, "b", 0xB000, 7.0),
                                                          (3, "d", 0, 3.0)]
    a0 = spans[0][3]
    assert out["t0"] <= a0 <= out["t1"]  # the epoch: read at the first begin's record
    assert [(s[3] - a0, s[4] - a0) for s in spans] == [(0, 10000000), (5000000, 12000000), (12000000, 15000000)]
    assert out["after_first"] == spans[1:] and out["after_last"] == []


def test_gpu_wait_releases_the_gil_and_times_out(run_alone, fake_cuda):
    # a Python thread finishes the GPU's work once the wait has polled a
    # few times: it can only run if gpu_wait lets go of the GIL
    proc = run_alone(with_spans("""
        with stepscope.gpu_zone("w", A):
            pass
        q0 = fake.fake_cuda_calls(b"cuEventQuery")
        def finish():
            while fake.fake_cuda_calls(b"cuEventQuery") < q0 + 3:
                time.sleep(0.0005)
            fake.fake_cuda_stream_advance(A, 2.0)
            fake.fake_cuda_stream_complete(A, -1)
        t = threading.Thread(target=finish)
        t.start()
        waited = stepscope.gpu_wait(timeout=60)
        t.join()
        with stepscope.gpu_zone("never", B):
            pass
        errors = []
        for bad in (-1, float("nan"), "1", True):
            try:
                stepscope.gpu_wait(bad)
            except (TypeError, ValueError) as e:
                errors.append("%s: %s" % (type(e).__name__, e))
        for bad in (-1, 1.5, True):
            try:
                _stepscope._gpu_spans(bad)
            except (TypeError, ValueError) as e:
                errors.append("%s: %s" % (type(e).__name__, e))
        print(json.dumps({"waited": waited, "timed_out": stepscope.gpu_wait(0.01), "poll": stepscope.gpu_wait(0),
                          "spans": [s[1] for s in _stepscope._gpu_spans()], "errors": errors,
                          "sync": synchronising_calls()}))
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    out = last_json_line(proc.stdout)
    assert (out["waited"], out["timed_out"], out["poll"], out["sync"]) == (0, 1, 1, 0)
    assert out["spans"] == ["w"]
    assert out["errors"] == [
        "ValueError: stepscope.gpu_wait(): timeout must be >= 0 seconds or None, not -1",
        "ValueError: stepscope.gpu_wait(): timeout must be >= 0 seconds or None, not nan",
        "TypeError: stepscope.gpu_wait(): timeout must be None or a number of seconds, not str",
        "TypeError: stepscope.gpu_wait(): timeout must be None or a number of seconds, not bool",
        "ValueError: stepscope._gpu_spans(): since must be a seq >= 0, not -1",
        "TypeError: stepscope._gpu_spans(): since must be an int (a span's seq, 0 for all), not float",
        "TypeError: stepscope._gpu_spans(): since must be an int (a span's seq, 0 for all), not bool",
    ]


def test_gpu_wait_without_libcuda(run_alone):
    proc = run_alone("""
        import stepscope
        from stepscope import _stepscope
        with stepscope.gpu_zone("x"):
            pass
        print(stepscope.gpu_wait(), stepscope.gpu_wait(None), _stepscope._gpu_spans())
    """, STEPSCOPE_LIBCUDA=NO_CUDA)
    assert proc.stdout.split("\n")[-2] == "0 0 []"


def test_last_step_reads_past_gpu_spans(run_alone, fake_cuda):
    # a span resolved in step 2 is placed back in step 1, where the GPU ran
    # it: last_step() walks past it to the values of step 2 before it
    proc = run_alone(with_fake("""
        with stepscope.step():
            with stepscope.gpu_zone("g", 0):
                pass
            fake.fake_cuda_complete(2)  # the epoch and the start; the end not yet: pending at the step end
        with stepscope.step():
            stepscope.record("loss", 2.5)
            fake.fake_cuda_advance(1.5)
            fake.fake_cuda_complete(-1)
            assert stepscope.gpu_flush() == 0
            stepscope.record("lr", 0.125)
        print(json.dumps(stepscope.last_step()["values"]))
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    assert last_json_line(proc.stdout) == {"loss": 2.5, "g.gpu_ms": 1.5, "lr": 0.125}
