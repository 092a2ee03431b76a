"""stepscope run --torch-profile: the deep-capture window (stepscope/_deep.py).

Each test runs a small script under `stepscope run --torch-profile SPEC`
and checks which steps torch.profiler saw (operators counted per step, so
an off-by-one window changes the counts), where the operators landed in
trace.json (inside the stepscope zones of those steps) and what
report.json's torch_profile section says.  torch here is 1.13; the
torch 2.x paths of _deep.py (fractional profiler times, the profiler's
own events at start and stop) are run on made events
(test_the_export_keeps_only_what_ran_in_the_window).
"""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import PYTHON, STEPSCOPE_BIN, script_env, write_script

torch = pytest.importorskip("torch")

INSTRUMENTED = """
    import torch, stepscope, stepscope.torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(8)]
    loader = stepscope.torch.instrument(model, opt, data)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


def run_spec(tmp_path, code, spec, extra=(), expect_rc=0):
    script = write_script(tmp_path, code)
    out = tmp_path / "out"
    args = [STEPSCOPE_BIN, "run", "-q", "-o", str(out)]
    if spec is not None:
        args += ["--torch-profile", spec]
    proc = subprocess.run(args + list(extra) + ["--", PYTHON, str(script)], cwd=str(tmp_path), env=script_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == expect_rc, proc.stderr
    return proc, out


def load(out):
    with open(out / "report.json") as f:
        report = json.load(f)
    with open(out / "trace.json") as f:
        trace = json.load(f)["traceEvents"]
    return report, trace


def captures(report):
    return report["torch_profile"]["processes"]


def ops_named(trace, name):
    return [e for e in trace if e.get("cat") == "torch_op" and e["name"] == name]


def inside(e, z):
    return z["pid"] == e["pid"] and z["tid"] == e["tid"] and z["ts"] <= e["ts"] and \
        e["ts"] + e["dur"] <= z["ts"] + z["dur"]


def steps_by_index(trace):
    return {e["args"]["index"]: e for e in trace if e.get("cat") == "step"}


def test_instrument_window_is_exactly_its_steps(tmp_path):
    proc, out = run_spec(tmp_path, INSTRUMENTED, "3:5")
    report, trace = load(out)
    (c,) = captures(report)
    assert c["captured"] and c["spec"] == "3:5"
    assert (c["first_step"], c["end_step"]) == (3, 5)
    assert c["unavailable_reason"] is None and c["note"] is None and c["malformed_lines"] == 0
    # two Linear layers: two addmm per forward, so steps 3 and 4 give four
    addmm = ops_named(trace, "aten::addmm")
    assert len(addmm) == 4
    # every operator lies between step 3's start and step 4's end
    steps = steps_by_index(trace)
    lo, hi = steps[3]["ts"], steps[4]["ts"] + steps[4]["dur"]
    ops = [e for e in trace if e.get("cat") == "torch_op"]
    assert ops and all(lo <= e["ts"] and e["ts"] + e["dur"] <= hi for e in ops)
    assert c["cpu_ops"] >= len(ops)
    # nested in the zones of those steps, on the same track
    zones = [e for e in trace if e.get("cat") == "zone"]
    for op in addmm:
        assert [z["name"] for z in zones if inside(op, z)] == ["forward"]
    (opt_step,) = [e for e in trace if e.get("cat") == "torch_op" and e["name"].startswith("Optimizer.step#")][:1]
    assert [z["name"] for z in zones if inside(opt_step, z)] == ["optimizer"]
    # report.json: the forward zone's top operators hold those four addmm
    by_zone = {z["zone"]: {o["name"]: o for o in z["ops"]} for z in c["zones"]}
    assert by_zone["forward"]["aten::addmm"]["count"] == 4
    assert by_zone["forward"]["aten::addmm"]["self_s"] > 0
    assert "aten::addmm" not in by_zone.get("backward", {})
    assert all(len(z["ops"]) <= report["torch_profile"]["top_per_zone"] for z in c["zones"])
    # the cost: the window's steps against the others, and the export
    assert c["cost"]["window_step_mean_s"] > 0 and c["cost"]["other_step_median_s"] > 0
    assert c["cost"]["export_s"] > 0 and c["cost"]["stop_s"] > 0
    assert 0 <= c["align_error_s"] < 1e-3
    # the operators file of the process
    (path,) = glob.glob(str(out / "records" / "torch-ops-*.tsv"))
    assert os.path.basename(path) == "torch-ops-%d.tsv" % c["pid"]
    # `stepscope report DIR` makes the same section and trace from report.json and the records
    again = tmp_path / "again.json"
    subprocess.run([STEPSCOPE_BIN, "report", str(out), "--format", "json", "-o", str(again)], check=True)
    assert json.loads(again.read_text())["torch_profile"] == report["torch_profile"]
    subprocess.run([STEPSCOPE_BIN, "report", str(out), "--format", "trace", "-o", str(tmp_path / "t.json")],
                   check=True)
    retrace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert len(ops_named(retrace, "aten::addmm")) == 4
    html = (out / "report.html").read_text()
    assert 'id="torch-profile"' in html and "aten::addmm" in html


class _Event:
    """What _deep reads of a torch.profiler FunctionEvent."""
    def __init__(self, name, start_ns, end_ns, device="CPU", thread=1):
        from types import SimpleNamespace
        # torch 2.x's profiler: fractional microseconds from its own start,
        # here monotonic ns + 5 ms
        self.name = name
        self.time_range = SimpleNamespace(start=(start_ns + 5e6) / 1000.0, end=(end_ns + 5e6) / 1000.0)
        self.device_type = SimpleNamespace(name=device)
        self.self_cpu_time_total = (end_ns - start_ns) / 1000.0
        self.thread = thread


def test_the_export_keeps_only_what_ran_in_the_window():
    """torch 2.x records work of its own at the profiler's start and stop
    (a cudaDeviceSynchronize at stop where CUDA is traced): the file keeps
    only what ran between the window's first step's begin and its last
    step's end, and a kernel launched inside it however late it ends."""
    from stepscope import _deep
    w = _deep._Window("1:2")
    w.captured = 1
    w.syncs = [(1_000_000, 1_002_000), (1_003_000, 1_005_000), (1_101_000, 1_103_000), (1_104_000, 1_106_000)]
    w.lo_ns, w.hi_ns = 1_010_000, 1_100_000
    syncs = [_Event("stepscope.sync", a + 500, b - 500) for a, b in w.syncs]
    events = syncs + [
        _Event("cudaGetDeviceCount", 1_006_000, 1_007_000),       # the profiler's start
        _Event("aten::addmm", 1_020_000, 1_030_000),              # the step's
        _Event("gemm_kernel", 1_025_000, 1_200_000, "CUDA"),      # launched in it, ends later
        _Event("cudaDeviceSynchronize", 1_107_000, 1_150_000),    # the profiler's stop
    ]
    head, ops = w._export(events, None)
    kept = [(line.split("\t")[6].strip(), int(line.split("\t")[1]), int(line.split("\t")[2])) for line in ops]
    assert kept == [("aten::addmm", 1_020_000, 1_030_000), ("gemm_kernel", 1_025_000, 1_200_000)]
    assert "align_error_ns\t501\n" in head  # half the 1 us bracket, plus rounding


def test_the_ops_file_is_never_written_through_a_link(tmp_path):
    """records/torch-ops-PID.tsv is made under a random exclusive temporary
    relative to records/, opened without following a link: a link planted
    at the old temporary name (torch-ops-PID.tsv.tmp) or at the final name
    leaves its victim as it was, and a records/ that is a link is refused."""
    from stepscope import _deep
    victim = tmp_path / "victim"
    victim.write_text("victim\n")
    run = tmp_path / "run"
    (run / "records").mkdir(parents=True)
    name = "torch-ops-%d.tsv" % os.getpid()
    os.symlink(victim, run / "records" / (name + ".tmp"))
    os.symlink(victim, run / "records" / name)
    _deep._write_beside_records(str(run), name, "stepscope-torch-ops 1\nend\t0\n")
    assert victim.read_text() == "victim\n"
    assert not os.path.islink(run / "records" / name)
    assert (run / "records" / name).read_text() == "stepscope-torch-ops 1\nend\t0\n"
    assert sorted(os.listdir(run / "records")) == sorted([name, name + ".tmp"])  # no temporary left
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(tmp_path, linked / "records")
    with pytest.raises(OSError):
        _deep._write_beside_records(str(linked), "torch-ops-1.tsv", "x")
    assert not (tmp_path / "torch-ops-1.tsv").exists()


def test_compare_leaves_the_window_out(tmp_path):
    """torch.profiler slows the window's steps on purpose: compare leaves
    them out (and says how many) instead of taking them for a change."""
    proc, out = run_spec(tmp_path, INSTRUMENTED, "3:5")
    report, _ = load(out)
    rows = report["steps"]["rows"]
    warm = sum(1 for r in rows if r["warmup"])
    result = subprocess.run([STEPSCOPE_BIN, "compare", str(out), str(out), "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (base,) = json.loads(result.stdout)["base"]
    assert base["torch_profile_left_out"] == 2
    assert base["steps"] == len(rows) - warm - 2
    text = subprocess.run([STEPSCOPE_BIN, "compare", str(out), str(out)], capture_output=True, text=True,
                          timeout=120).stdout
    assert "2 --torch-profile steps left out" in text


def test_manual_steps_one_step_window(tmp_path):
    proc, out = run_spec(tmp_path, """
        import torch, stepscope
        m = torch.nn.Linear(8, 8)
        for i in range(6):
            with stepscope.step():
                with stepscope.zone("fwd"):
                    y = m(torch.randn(4, 8))
                with stepscope.zone("bwd"):
                    y.sum().backward()
    """, "2:3")
    report, trace = load(out)
    (c,) = captures(report)
    assert (c["first_step"], c["end_step"]) == (2, 3)
    addmm = ops_named(trace, "aten::addmm")
    assert len(addmm) == 1
    zones = [e for e in trace if e.get("cat") == "zone"]
    assert [z["name"] for z in zones if inside(addmm[0], z)] == ["fwd"]
    step2 = steps_by_index(trace)[2]
    assert all(step2["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step2["ts"] + step2["dur"]
               for e in trace if e.get("cat") == "torch_op")


def test_bare_steps_window_ending_at_exit(tmp_path):
    # the last bare step() ends at the interpreter's exit: still captured
    proc, out = run_spec(tmp_path, """
        import torch, stepscope
        m = torch.nn.Linear(8, 8)
        for i in range(4):
            stepscope.step()
            m(torch.randn(4, 8))
    """, "3:4")
    report, trace = load(out)
    (c,) = captures(report)
    assert c["captured"] and (c["first_step"], c["end_step"]) == (3, 4) and c["note"] is None
    assert len(ops_named(trace, "aten::addmm")) == 1


def test_process_ends_inside_the_window(tmp_path):
    proc, out = run_spec(tmp_path, """
        import torch, stepscope
        m = torch.nn.Linear(8, 8)
        for i in range(4):
            with stepscope.step():
                m(torch.randn(4, 8))
    """, "2:10")
    (c,) = captures(load(out)[0])
    assert c["captured"] and (c["first_step"], c["end_step"]) == (2, 4)
    assert c["note"] == "the process ended after 2 of the window's 8 steps"


def test_window_never_reached(tmp_path):
    proc, out = run_spec(tmp_path, """
        import torch, stepscope
        for i in range(3):
            with stepscope.step():
                torch.ones(2) + 1
    """, "5:6")
    (c,) = captures(load(out)[0])
    assert not c["captured"]
    assert c["unavailable_reason"] == "the process ended after 3 steps, before step 5"
    assert not glob.glob(str(out / "records" / "*.tmp"))


def test_auto_captures_the_steps_after_the_slow_one(tmp_path):
    # steps of 10 ms (sleep-bound) and one of 1 s: the median is the sleep
    proc, out = run_spec(tmp_path, """
        import time, torch, stepscope
        m = torch.nn.Linear(8, 8)
        for i in range(30):
            with stepscope.step():
                with stepscope.zone("work"):
                    m(torch.randn(4, 8))
                time.sleep(1.0 if i == 15 else 0.01)
    """, "auto")
    report, trace = load(out)
    (c,) = captures(report)
    assert c["spec"] == "auto" and c["captured"]
    assert c["trigger"]["step"] == 15 and c["trigger"]["ratio"] > 3
    assert (c["first_step"], c["end_step"]) == (16, 21)
    assert len(ops_named(trace, "aten::addmm")) == 5


def test_auto_rule_in_process():
    # the rule alone, on given durations: nothing before step AUTO_MIN_STEPS,
    # then the first step above AUTO_FACTOR x the median, once
    from stepscope import _deep
    w = _deep._Window("auto")
    durations = [100] * 3 + [10] * 12 + [29, 31, 1000, 10]
    for i, d in enumerate(durations):
        if w.trigger is None:
            w._judge(i, d)
    # steps 0-2 (slow, before step 10) and 15 (29 < 3 x 10) do not trigger; 16 does
    assert w.trigger == (16, 3.1)
    assert (w.first_step, w.end_step) == (17, 17 + _deep.AUTO_STEPS)


def test_alignment_in_process():
    # the clock alignment alone, on given sync brackets (torch 1.13's whole
    # microseconds): 16 blocks at the start, 16 at the stop, each bracket
    # 300 ns wider than its block on both sides, so each bounds the offset
    # to +-1300 ns (1000 of them the profiler's rounding)
    from stepscope import _deep
    off0 = 7_000_000

    def brackets(first_us, off, preempted=()):
        prof = [(first_us + 10 * k, first_us + 10 * k + 2) for k in range(16)]
        mono = [(s * 1000 + off - 300 - (5_000_000 if k in preempted else 0), e * 1000 + off + 300)
                for k, (s, e) in enumerate(prof)]
        return mono, prof

    # a bracket preempted for 5 ms only widens its own interval: still +-1300
    w = _deep._Window("1:2")
    m0, p0 = brackets(100, off0, preempted={3})
    m1, p1 = brackets(10_000, off0, preempted={0, 15})
    w.syncs = m0 + m1
    to_ns, bound = w._align(p0 + p1, 1000, 1000)
    assert bound == 1300 and to_ns(5000) == 5000 * 1000 + off0
    # the profiler's clock ran 50 us apart over the window: the offset runs
    # from one end's to the other's, the bound is one end's (the union of
    # the two, 26.3 us, was the bound before)
    m1, p1 = brackets(10_000, off0 + 50_000)
    w.syncs = m0 + m1
    to_ns, bound = w._align(p0 + p1, 1000, 1000)
    assert bound == 1300
    assert to_ns(176) == 176 * 1000 + off0 and to_ns(10_076) == 10_076 * 1000 + off0 + 50_000
    assert to_ns(5126) == 5126 * 1000 + off0 + 25_000


@pytest.mark.parametrize("spec", ["5:3", "3:3", "x", "auto2", ":5", "3:", "-1:4", "1:99999", ""])
def test_bad_specs(tmp_path, spec):
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", "-o", str(tmp_path / "o"), "--torch-profile", spec, "--",
                           "true"], capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("stepscope: run: --torch-profile: ")


def test_script_without_torch(tmp_path):
    proc, out = run_spec(tmp_path, """
        import stepscope, sys
        for i in range(6):
            stepscope.step()
        assert "torch" not in sys.modules
    """, "2:4")
    lines = [l for l in proc.stderr.splitlines() if "torch" in l]
    assert lines == ["stepscope: --torch-profile: this process never imported torch: nothing to profile"]
    (c,) = captures(load(out)[0])
    assert not c["captured"] and "never imported torch" in c["unavailable_reason"]


def test_off_without_the_flag_and_old_files_cleared(tmp_path):
    run_spec(tmp_path, INSTRUMENTED, "1:2")
    assert glob.glob(str(tmp_path / "out" / "records" / "torch-ops-*.tsv"))
    proc, out = run_spec(tmp_path, INSTRUMENTED + """
    import sys
    assert "stepscope._deep" not in sys.modules
""", None)
    assert not glob.glob(str(out / "records" / "torch-ops-*.tsv"))
    report, trace = load(out)
    assert captures(report) == []
    assert not [e for e in trace if e.get("cat") == "torch_op"]


def test_trace_budget_counts_the_operators(tmp_path):
    # a 1 MB budget holds the whole run: the operators are counted in it
    proc, out = run_spec(tmp_path, INSTRUMENTED, "0:8", extra=["--trace-max-mb", "1"])
    with open(out / "trace.json") as f:
        t = json.load(f)
    other = t["otherData"]
    ops = [e for e in t["traceEvents"] if e.get("cat") == "torch_op"]
    zones = [e for e in t["traceEvents"] if e.get("cat") in ("zone", "microstep")]
    assert other["zone_events_written"] == len(ops) + len(zones)
    assert os.path.getsize(out / "trace.json") <= 1 << 20


def test_command_without_python_says_nothing_was_profiled(tmp_path):
    proc = subprocess.run([STEPSCOPE_BIN, "run", "--no-live", "-o", str(tmp_path / "o"), "--torch-profile", "1:2",
                           "--", "true"], capture_output=True, text=True, env=script_env())
    assert proc.returncode == 0
    assert [l for l in proc.stderr.splitlines() if "torch" in l] == [
        "torch profile  --torch-profile 1:2: no process profiled a window (only Python processes that import "
        "stepscope and make steps do)"]
    with open(tmp_path / "o" / "report.json") as f:
        assert json.load(f)["torch_profile"] == {"top_per_zone": 10, "processes": []}
