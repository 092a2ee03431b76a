"""Chained phases from Python (stepscope.phase, stepscope.phase_end): zones
whose boundaries are one timestamp, as report.json, steps.csv and
trace.json show them when the script runs under `stepscope run`."""
import csv
import json

import pytest


def test_phases_are_zones_that_share_their_boundaries(run_under, tmp_path):
    r = run_under("""
        import time, stepscope
        for i in range(5):
            with stepscope.step():
                stepscope.phase("data")
                time.sleep(0.001)
                stepscope.phase("forward")
                with stepscope.zone("inner"):
                    time.sleep(0.001)
                stepscope.phase("backward")
                stepscope.phase("optimizer")
                time.sleep(0.001)
            # the step's end ended "optimizer"
    """)
    step = r.zone("step")
    assert step["count"] == 5
    for name in ("data", "forward", "backward", "optimizer", "inner"):
        z = r.zone(name)
        assert z["kind"] == "zone" and z["count"] == 5, z
    fwd, inner = r.zone("forward"), r.zone("inner")
    assert abs(fwd["self_s"] + inner["total_s"] - fwd["total_s"]) < 1e-8
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())
    rows = r.report["steps"]["rows"]
    assert len(rows) == 5
    for row in rows:
        assert set(row["zones_self_s"]) == {"data", "forward", "backward", "optimizer", "inner"}
        assert row["zones_self_s"]["optimizer"] >= 0.001

    # trace.json: each phase ends where the next begins, and the last where
    # its step ends (the trace's times are microseconds)
    with open(tmp_path / "out" / "trace.json") as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e["name"] == "step"), key=lambda e: e["ts"])
    assert len(steps) == 5
    by_name = {n: sorted((e for e in events if e["name"] == n), key=lambda e: e["ts"])
               for n in ("data", "forward", "backward", "optimizer")}
    for i, s in enumerate(steps):
        d, f_, b, o = (by_name[n][i] for n in ("data", "forward", "backward", "optimizer"))
        assert d["ts"] + d["dur"] == pytest.approx(f_["ts"], abs=0.002)
        assert f_["ts"] + f_["dur"] == pytest.approx(b["ts"], abs=0.002)
        assert b["ts"] + b["dur"] == pytest.approx(o["ts"], abs=0.002)
        assert o["ts"] + o["dur"] == pytest.approx(s["ts"] + s["dur"], abs=0.002)

    # steps.csv: a column per phase, as for any zone
    with open(tmp_path / "out" / "steps.csv") as f:
        header = next(csv.reader(f))
    for name in ("data", "forward", "backward", "optimizer"):
        assert any(name in col for col in header), header


def test_phase_end_root_phases_threads_and_exit(run_under):
    r = run_under("""
        import threading, time, stepscope
        stepscope.phase("setup")           # the thread's own: no step is open
        time.sleep(0.002)
        stepscope.phase_end()
        stepscope.phase_end()              # nothing open: nothing
        with stepscope.step():
            stepscope.phase("a")
            stepscope.phase_end()
            time.sleep(0.002)              # in no phase: the step's own time
        def worker():
            stepscope.phase("worker")      # ended when the thread exits
            time.sleep(0.001)
        t = threading.Thread(target=worker)
        t.start(); t.join()
        stepscope.phase("teardown")       # ended at the process's exit
        time.sleep(0.001)
    """)
    for name in ("setup", "a", "worker", "teardown"):
        assert r.zone(name)["count"] == 1, name
    assert r.zone("setup")["total_s"] >= 0.002
    assert r.zone("teardown")["total_s"] >= 0.001
    step = r.zone("step")
    assert step["self_s"] >= 0.002 and step["self_s"] > r.zone("a")["total_s"]
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_recording_off_ends_the_open_phase(run_under):
    r = run_under("""
        import time, stepscope
        with stepscope.step():
            stepscope.phase("on")
            stepscope.set_enabled(False)
            stepscope.phase("off")          # ends "on", begins nothing
            time.sleep(0.005)
            stepscope.set_enabled(True)
    """)
    assert r.zone("on")["count"] == 1
    assert r.zone("on")["total_s"] < 0.005
    assert r.zone("off") is None
    assert r.zone("step")["self_s"] >= 0.005


def test_phases_are_counted_by_face(run_under):
    r = run_under("""
        import stepscope
        from stepscope import _stepscope
        face = _stepscope.instrument_face
        for i in range(10):
            with stepscope.step():
                stepscope.phase("mine")
                face.phase("hooks")
                face.phase_end()
    """)
    k = r.report["analysis"]["overhead"]["recording_by_kind"]
    assert k["python_zones"]["count"] == 20  # 10 steps, 10 "mine"
    assert k["instrument_hooks"]["count"] == 10
    assert r.zone("hooks")["count"] == 10 and r.zone("mine")["count"] == 10


def test_bad_names(run_alone):
    proc = run_alone("""
        import stepscope
        for bad, exc in ((3, TypeError), ("", ValueError), ("a\\0b", ValueError), (None, TypeError)):
            try:
                stepscope.phase(bad)
            except exc as e:
                print(type(e).__name__, e)
            else:
                raise SystemExit("no error for %r" % (bad,))
    """, STEPSCOPE_OUT="")
    lines = proc.stdout.splitlines()
    assert lines[0] == "TypeError stepscope.phase(): the name must be a str, not int"
    assert lines[1] == "ValueError stepscope.phase(): the name must not be empty"
    assert lines[2] == "ValueError stepscope.phase(): the name must not contain NUL characters"
    assert lines[3] == "TypeError stepscope.phase(): the name must be a str, not NoneType"
