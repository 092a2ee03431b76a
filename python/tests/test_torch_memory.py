"""GPU memory per step (docs/python.md, "GPU memory per step"): torch.cuda's
caching-allocator figures recorded as values at each step's and
micro-step's end, through a fake torch (python/tests/fakes/torch) whose
allocator the script moves by exact amounts, in a fresh interpreter."""
import json
import os
import subprocess

import pytest

from conftest import PYTHON, STEPSCOPE_BIN, script_env, write_script

FAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakes")
ALLOC = "torch.cuda.allocated_bytes"
RESERVED = "torch.cuda.reserved_bytes"
PEAK = "torch.cuda.peak_allocated_bytes"
PEAK_RESERVED = "torch.cuda.peak_reserved_bytes"
NAMES = (ALLOC, RESERVED, PEAK, PEAK_RESERVED)


def fake_env(**extra):
    env = script_env(**extra)
    env["PYTHONPATH"] = os.pathsep.join([FAKES] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_script(tmp_path, code, under_run=True, run_args=(), expect_rc=0, **env):
    """Run code with the fake torch first on the path; returns (proc, the
    steps.jsonl rows under `stepscope run`, else None, report.json)."""
    script = write_script(tmp_path, code)
    out = tmp_path / "out"
    if under_run:
        cmd = [STEPSCOPE_BIN, "run", "-q", "--no-auto", "-o", str(out), *run_args, "--", PYTHON, str(script)]
    else:
        cmd = [PYTHON, str(script)]
        env.setdefault("STEPSCOPE_OUT", str(out))
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=fake_env(**env), capture_output=True, text=True, timeout=300)
    assert proc.returncode == expect_rc, "rc %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout,
                                                                              proc.stderr)
    rows = None
    if under_run:
        with open(out / "steps.jsonl") as f:
            rows = [json.loads(line) for line in f]
    with open(out / "report.json") as f:
        report = json.load(f)
    return proc, rows, report


def torch_values(values):
    return {k: v for k, v in values.items() if k.startswith("torch.cuda.")}


# Each step moves the fake allocator by exact amounts: before the loop
# 1000 bytes are allocated (peak 1000) and 4096 reserved.
LOOP = """
    import json, sys, torch, stepscope
    torch.alloc(1000); torch.reserve(4096)
    plan = [  # (alloc, free, reserve) inside each step
        (500, 500, 0),     # step 0: peak 1500 > 1000: known
        (200, 200, 0),     # step 1: peak stays 1500: unknown
        (2000, 0, 4096),   # step 2: peak 3000 (reserved peak 8192): known
        (0, 2000, 0),      # step 3: nothing rises: unknown
        (2200, 100, 0),    # step 4: 3200 > 3000: known
    ]
    for a, f, r in plan:
        with stepscope.step():
            torch.alloc(a); torch.free(f); torch.reserve(r)
    print(json.dumps({"status": stepscope.status()["torch_cuda_memory"], "calls": torch.calls,
                      "max_allocated": torch.cuda.max_memory_allocated()}))
"""

# what each step's row carries by default (peaks only where torch's rose)
KEEP = [
    {ALLOC: 1000, RESERVED: 4096, PEAK: 1500},
    {ALLOC: 1000, RESERVED: 4096},
    {ALLOC: 3000, RESERVED: 8192, PEAK: 3000, PEAK_RESERVED: 8192},
    {ALLOC: 1000, RESERVED: 8192},
    {ALLOC: 3100, RESERVED: 8192, PEAK: 3200},
]


def test_steps_carry_torch_memory_under_run(tmp_path):
    proc, rows, report = run_script(tmp_path, LOOP)
    assert [torch_values(r["values"]) for r in rows] == KEEP
    assert [torch_values(r["values"]) for r in report["steps"]["rows"]] == KEEP
    got = json.loads(proc.stdout)
    assert got["status"]["state"] == "reading" and got["status"]["gpu_peak"] == "keep"
    assert got["status"]["steps_read"] == 5 and got["status"]["steps_peak_known"] == 3
    # each `with` step reads at its begin (the peak) and at its end
    assert got["calls"]["memoryStats"] == 10
    # never reset: the script's own peak is torch's since the start
    assert got["calls"]["reset_peak_memory_stats"] == 0 and got["max_allocated"] == 3200
    summary = {"processes": 1, "steps": 5, "steps_read": 5, "peak_known_steps": 3, "peak_allocated_bytes": 3200,
               "peak_reserved_bytes": 8192, "end_allocated_bytes": 3100, "end_reserved_bytes": 8192,
               "growth_bytes_per_step": None, "leak_verdict": "unknown"}
    t = report["analysis"]["torch_cuda_memory"]
    assert {k: v for k, v in t.items() if k not in ("pid", "tid")} == summary
    assert t["pid"] == rows[0]["pid"] and t["tid"] == rows[0]["thread"]
    # read back from report.json by `stepscope report`, and said in one line
    again = tmp_path / "again.json"
    subprocess.run([STEPSCOPE_BIN, "report", str(tmp_path / "out"), "--format", "json", "-o", str(again)], check=True)
    assert json.loads(again.read_text())["analysis"]["torch_cuda_memory"] == t
    text = subprocess.run([STEPSCOPE_BIN, "report", str(tmp_path / "out"), "--format", "summary"], check=True,
                          capture_output=True, text=True).stdout
    assert ("torch.cuda  peak 3.1 KiB allocated, 8.0 KiB reserved; at the end 3.0 KiB allocated, 8.0 KiB "
            "reserved; growth per step not judged (see leaks); peak within the step known for 3 of 5 steps\n") in text
    # the values' own lines print sizes as sizes
    assert ("value   torch.cuda.allocated_bytes first 1000 B  last 3.0 KiB  min 1000 B  max 3.0 KiB  (5 samples)\n"
            in text)
    html = (tmp_path / "out" / "report.html").read_text()
    assert '<section id="torch-memory">' in html and "peak within the step known for 3 of 5 steps" in html


def test_steps_carry_torch_memory_alone(tmp_path):
    proc, rows, report = run_script(tmp_path, LOOP, under_run=False)
    assert [torch_values(r["values"]) for r in report["steps"]["rows"]] == KEEP


def test_gpu_peak_step_resets_at_each_step_and_every_peak_is_exact(tmp_path):
    proc, rows, report = run_script(tmp_path, LOOP, run_args=("--gpu-peak", "step"))
    assert [torch_values(r["values"]) for r in rows] == [
        {ALLOC: 1000, RESERVED: 4096, PEAK: 1500, PEAK_RESERVED: 4096},
        {ALLOC: 1000, RESERVED: 4096, PEAK: 1200, PEAK_RESERVED: 4096},
        {ALLOC: 3000, RESERVED: 8192, PEAK: 3000, PEAK_RESERVED: 8192},
        {ALLOC: 1000, RESERVED: 8192, PEAK: 3000, PEAK_RESERVED: 8192},
        {ALLOC: 3100, RESERVED: 8192, PEAK: 3200, PEAK_RESERVED: 8192},
    ]
    got = json.loads(proc.stdout)
    assert got["status"]["gpu_peak"] == "step" and got["status"]["steps_peak_known"] == 5
    # the documented price: the script's own peak is the last step's
    assert got["calls"]["reset_peak_memory_stats"] == 5


def test_configure_gpu_peak_step_alone(tmp_path):
    code = LOOP.replace("import json, sys, torch, stepscope",
                        "import json, sys, torch, stepscope\n    stepscope.configure(gpu_peak='step')")
    proc, _, report = run_script(tmp_path, code, under_run=False)
    assert [torch_values(r["values"]).get(PEAK) for r in report["steps"]["rows"]] == [1500, 1200, 3000, 3000, 3200]


def test_bad_gpu_peak_is_refused_before_the_loop(tmp_path):
    script = write_script(tmp_path, "import stepscope\nprint('imported')\n")
    proc = subprocess.run([PYTHON, str(script)], env=fake_env(STEPSCOPE_GPU_PEAK="Step", STEPSCOPE_OUT=""),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "imported" not in proc.stdout
    assert "ValueError: stepscope: STEPSCOPE_GPU_PEAK='Step': must be \"keep\"" in proc.stderr
    code = ("import stepscope\ntry:\n    stepscope.configure(gpu_peak='always')\nexcept ValueError as e:\n"
            "    print(e)\n")
    script = write_script(tmp_path, code, "conf.py")
    proc = subprocess.run([PYTHON, str(script)], env=fake_env(STEPSCOPE_OUT=""), capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout == "stepscope.configure(): gpu_peak must be \"keep\" or \"step\", not 'always'\n"
    for args, env, line in ((["--gpu-peak", "steps"], {}, "stepscope: run: --gpu-peak: 'steps' is not keep or step"),
                            ([], {"STEPSCOPE_GPU_PEAK": "1"}, "stepscope: run: STEPSCOPE_GPU_PEAK='1' is not keep "
                                                             "or step")):
        proc = subprocess.run([STEPSCOPE_BIN, "run", "-o", str(tmp_path / "o"), *args, "--", "true"],
                              env=script_env(**env), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stderr.splitlines()[0] == line


MICRO = """
    import torch, stepscope
    torch.alloc(1000)
    for s in range(2):
        with stepscope.step():
            for m in range(2):
                with stepscope.microstep():
                    torch.alloc(100 * (2 * s + m + 1))
            torch.free(50)
"""


def test_microsteps_record_at_their_ends_and_the_step_at_its_own(tmp_path):
    _, rows, report = run_script(tmp_path, MICRO)
    # the row holds the step's end: after its micro-steps and the free
    assert [torch_values(r["values"]) for r in rows] == [
        {ALLOC: 1250, RESERVED: 0, PEAK: 1300},
        {ALLOC: 1900, RESERVED: 0, PEAK: 1950},
    ]
    values = {v["name"]: v for v in report["values"]}
    # 4 micro-step ends and 2 step ends; each micro-step's allocation rose
    assert values[ALLOC]["count"] == 6 and values[PEAK]["count"] == 6
    assert values[ALLOC]["min"] == 1100 and values[ALLOC]["max"] == 1950
    assert PEAK_RESERVED not in values  # reserved never rose: never known


def test_step_begin_and_zone_end_tokens_go_the_same_way(tmp_path):
    code = """
        import torch, stepscope
        torch.alloc(1000)
        for s in range(2):
            t = stepscope.step_begin()
            for m in range(2):
                u = stepscope.microstep_begin()
                torch.alloc(100 * (2 * s + m + 1))
                stepscope.zone_end(u)
            torch.free(50)
            stepscope.zone_end(t)
    """
    _, rows, _ = run_script(tmp_path, code)
    assert [torch_values(r["values"]) for r in rows] == [
        {ALLOC: 1250, RESERVED: 0, PEAK: 1300},
        {ALLOC: 1900, RESERVED: 0, PEAK: 1950},
    ]


def test_bare_steps_record_at_the_next_step_and_at_exit(tmp_path):
    code = """
        import atexit, json, torch
        # registered first, so it runs after stepscope's exit hook ends the last step
        atexit.register(lambda: print(json.dumps(torch.calls)))
        import stepscope
        for i in range(3):
            stepscope.step()
            torch.alloc(10)
    """
    proc, rows, _ = run_script(tmp_path, code)
    assert [torch_values(r["values"]) for r in rows] == [
        {ALLOC: 10, RESERVED: 0, PEAK: 10}, {ALLOC: 20, RESERVED: 0, PEAK: 20}, {ALLOC: 30, RESERVED: 0, PEAK: 30}]
    # a bare step() begins where the last one ended, in one call: that end's
    # reading is the begin's (the first begin and each end read: 4, not 6)
    assert json.loads(proc.stdout)["memoryStats"] == 4


def test_cuda_initialised_inside_a_step_gives_its_peak(tmp_path):
    code = """
        import torch, stepscope
        torch.state["initialized"] = False
        for i in range(3):
            with stepscope.step():
                if i == 1:
                    torch.state["initialized"] = True
                torch.alloc(10)
    """
    _, rows, _ = run_script(tmp_path, code)
    # step 0: no CUDA, nothing read; step 1 began before CUDA: all torch
    # counted is inside it
    assert [torch_values(r["values"]) for r in rows] == [
        {}, {ALLOC: 20, RESERVED: 0, PEAK: 20}, {ALLOC: 30, RESERVED: 0, PEAK: 30}]


@pytest.mark.parametrize("fails,where", [
    ("memoryStats:4", "torch._C._cuda_memoryStats() raised RuntimeError: fake torch: memoryStats failed"),
    ("is_initialized:3", "torch.cuda.is_initialized() raised RuntimeError: fake torch: is_initialized failed"),
    ("getDevice:4", "torch._C._cuda_getDevice() raised RuntimeError: fake torch: getDevice failed"),
])
def test_a_torch_that_raises_turns_it_off_once_and_the_loop_goes_on(tmp_path, fails, where):
    proc, rows, _ = run_script(tmp_path, LOOP, FAKE_TORCH_RAISE=fails)
    assert len(rows) == 5
    assert torch_values(rows[0]["values"]) == KEEP[0]
    assert [torch_values(r["values"]) for r in rows[1:]] == [{}] * 4
    got = json.loads(proc.stdout)
    assert got["status"]["state"] == "failed" and got["status"]["reason"] == where
    assert got["status"]["steps_read"] == 1
    # off for good: torch is not called again after the failure
    name = fails.split(":")[0]
    assert got["calls"][name] == int(fails.split(":")[1])


def test_torch_failing_on_one_thread_while_another_reads(tmp_path):
    # thread A's step end is inside torch._C._cuda_getDevice() (Python
    # code: the GIL can pass) when thread B's step finds torch's statistics
    # raising, which turns reading off: A's read must go on with what it
    # holds, not call what B's failure cleared (it crashed the process)
    code = """
        import json, threading, torch, stepscope
        inside_a, b_done, a_ending = threading.Event(), threading.Event(), threading.Event()
        get_device, memory_stats = torch._C._cuda_getDevice, torch._C._cuda_memoryStats
        def getDevice():
            if threading.current_thread().name == "A" and a_ending.is_set() and not inside_a.is_set():
                inside_a.set()
                assert b_done.wait(60), "thread B never ran its step"
            return get_device()
        def memoryStats(device):
            if threading.current_thread().name == "B":
                raise RuntimeError("fake torch: a CUDA error")
            return memory_stats(device)
        torch._C._cuda_getDevice, torch._C._cuda_memoryStats = getDevice, memoryStats
        def a():
            with stepscope.step():
                torch.alloc(1000)
                a_ending.set()  # the step's end is next
        def b():
            inside_a.wait()
            with stepscope.step():
                pass
            b_done.set()
        threads = [threading.Thread(target=a, name="A"), threading.Thread(target=b, name="B")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(json.dumps(stepscope.status()["torch_cuda_memory"]))
    """
    proc, _, report = run_script(tmp_path, code)
    status = json.loads(proc.stdout)
    assert status["state"] == "failed"
    assert status["reason"] == "torch._C._cuda_memoryStats() raised RuntimeError: fake torch: a CUDA error"
    # A's step end read what A's own references gave: 1000 bytes
    assert next(v for v in report["values"] if v["name"] == ALLOC)["last"] == 1000


def test_statistics_without_the_documented_keys_turn_it_off(tmp_path):
    proc, rows, _ = run_script(tmp_path, LOOP, FAKE_TORCH_STATS="empty")
    got = json.loads(proc.stdout)
    assert got["status"]["state"] == "failed" and got["status"]["reason"] == (
        "reading torch's memory statistics: torch._C._cuda_memoryStats() returned no "
        "[\"allocated_bytes\"|\"reserved_bytes\"][\"all\"][\"current\"|\"peak\"] int")
    assert len(rows) == 5 and not any(torch_values(r["values"]) for r in rows)
    assert got["calls"]["memoryStats"] == 1


def test_a_failing_reset_in_gpu_peak_step_is_kept_too(tmp_path):
    proc, rows, _ = run_script(tmp_path, LOOP, run_args=("--gpu-peak", "step"),
                               FAKE_TORCH_RAISE="reset_peak_memory_stats:2")
    got = json.loads(proc.stdout)
    assert got["status"]["reason"] == ("torch.cuda.reset_peak_memory_stats() raised RuntimeError: fake torch: "
                                       "reset_peak_memory_stats failed")
    assert len(rows) == 5 and [bool(torch_values(r["values"])) for r in rows] == [True, False, False, False, False]


def test_without_torch_or_without_cuda_no_values(tmp_path):
    code = """
        import json, sys, stepscope
        for i in range(3):
            with stepscope.step():
                pass
        print(json.dumps(stepscope.status()["torch_cuda_memory"]))
        print(json.dumps(stepscope.capture()["torch_cuda"]))
    """
    proc, rows, report = run_script(tmp_path, code)
    assert [torch_values(r["values"]) for r in rows] == [{}] * 3
    assert not any(v["name"].startswith("torch.cuda.") for v in report["values"])
    assert "torch_cuda_memory" not in report["analysis"]
    assert not any(s["series"].startswith("torch") for s in report["analysis"]["leaks"]["series"])
    status, capture = (json.loads(line) for line in proc.stdout.splitlines())
    assert status["state"] == "no torch" and status["steps_read"] == 0 and capture is None
    assert "torch" not in proc.stderr
    code = code.replace("import json, sys, stepscope", "import json, sys, torch, stepscope\n"
                        "        torch.state['initialized'] = False")
    proc, rows, _ = run_script(tmp_path, code)
    assert [torch_values(r["values"]) for r in rows] == [{}] * 3
    status, capture = (json.loads(line) for line in proc.stdout.splitlines())
    assert status["state"] == "waiting for CUDA" and capture is None


def test_capture_includes_torch_cuda(tmp_path):
    code = """
        import json, torch, stepscope
        torch.alloc(700); torch.reserve(2048); torch.free(200)
        print(json.dumps(stepscope.capture()["torch_cuda"]))
    """
    proc, _, _ = run_script(tmp_path, code)
    assert json.loads(proc.stdout) == {"device": 0, "allocated_bytes": 500, "reserved_bytes": 2048,
                                       "peak_allocated_bytes": 700, "peak_reserved_bytes": 2048}


def test_auto_mode_steps_carry_it(tmp_path):
    # the real torch (CPU), its allocator statistics scripted as a GPU's:
    # auto mode's steps end through the same path
    code = """
        import torch, stepscope
        allocated = [0]
        def stats(device):
            a = {"current": allocated[0], "peak": allocated[0]}
            return {"allocated_bytes": {"all": a}, "reserved_bytes": {"all": {"current": 4096, "peak": 4096}}}
        torch._C._cuda_memoryStats = stats
        torch._C._cuda_getDevice = lambda: 0
        torch.cuda.is_initialized = lambda: True
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 1)),
                                           batch_size=4)
        for x, y in data:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            allocated[0] += 1000
            opt.step()
    """
    script = write_script(tmp_path, code)
    out = tmp_path / "out"
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", "-o", str(out), "--", PYTHON, str(script)],
                          cwd=str(tmp_path), env=script_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out / "report.json") as f:
        report = json.load(f)
    rows = report["steps"]["rows"]
    assert [torch_values(r["values"]) for r in rows] == [
        {ALLOC: 1000 * (i + 1), RESERVED: 4096, PEAK: 1000 * (i + 1)} for i in range(4)]


MiB = 1 << 20
# 60 steps; the allocator's figure at each step's end moves by the test's
# pattern plus noise (a seeded draw of up to +-512 KiB kept until the next
# step), so the trend has to be found through it
LEAK_LOOP = """
    import random, torch, stepscope
    rng = random.Random(21)
    torch.alloc(1 << 30)
    noise = 0
    for i in range(60):
        with stepscope.step():
            torch.free(noise)
            torch.alloc(%s)
            torch.alloc(%s); torch.free(%s)  # a spike inside the step
            noise = rng.randrange(0, 1 << 20)
            torch.alloc(noise)
"""


def torch_leak_series(report):
    leaks = report["analysis"]["leaks"]
    return leaks, next(s for s in leaks["series"] if s["series"] == "torch_cuda_allocated_bytes")


def test_a_gpu_leak_is_found_with_its_slope(tmp_path):
    _, _, report = run_script(tmp_path, LEAK_LOOP % ("3 << 20", "0", "0"))
    leaks, s = torch_leak_series(report)
    assert s["scope"] == "torch.cuda" and s["verdict"] == "leak" and s["rule"] == "all"
    # within 1% of the 3 MiB a step, through noise of up to 1 MiB
    assert abs(s["slope_bytes_per_step"] - 3 * MiB) < 0.01 * 3 * MiB and s["ci95_low"] > 2.9 * MiB
    assert s["points"] == s["steps_analysed"] and s["allowance_bytes"] == 0
    assert leaks["verdict"] == "leak"
    t = report["analysis"]["torch_cuda_memory"]
    assert t["leak_verdict"] == "leak" and t["growth_bytes_per_step"] == s["slope_bytes_per_step"]


@pytest.mark.parametrize("end,spike", [
    ("0", "0"),  # flat
    ("0", "512 << 20"),  # 512 MiB allocated and freed inside each step
    ("(8 << 20) if i % 10 else -(72 << 20)", "0"),  # a sawtooth: grows 9 steps, gives it back at the 10th
])
def test_flat_and_sawtooth_gpu_memory_is_no_leak(tmp_path, end, spike):
    _, _, report = run_script(tmp_path, LEAK_LOOP % (end, spike, spike))
    _, s = torch_leak_series(report)
    assert s["verdict"] == "no leak", s


def test_the_gpu_leak_is_judged_in_a_process_s_own_report(tmp_path):
    # no sampler alone: torch's series is judged all the same
    _, _, report = run_script(tmp_path, LEAK_LOOP % ("3 << 20", "0", "0"), under_run=False)
    leaks, s = torch_leak_series(report)
    assert s["verdict"] == "leak" and abs(s["slope_bytes_per_step"] - 3 * MiB) < 0.01 * 3 * MiB
    assert leaks["verdict"] == "leak"


def test_each_process_gpu_memory_is_judged_on_its_own_steps(tmp_path):
    # two processes, each with its own (fake) GPU allocator, as two ranks
    # are: the one that leaks is named by its pid
    write_script(tmp_path, LEAK_LOOP % ("3 << 20", "0", "0") + "    import os; print(os.getpid())\n", "child.py")
    code = LEAK_LOOP % ("0", "0", "0") + """
    import os, subprocess
    child = subprocess.run([sys.executable, %r], check=True, capture_output=True, text=True).stdout
    print(os.getpid(), child.strip())
""" % str(tmp_path / "child.py")
    code = code.replace("import random, torch, stepscope", "import random, sys, torch, stepscope")
    proc, _, report = run_script(tmp_path, code)
    parent, child = (int(p) for p in proc.stdout.split())
    series = {s["pid"]: s for s in report["analysis"]["leaks"]["series"] if s["scope"] == "torch.cuda"}
    assert set(series) == {parent, child}
    assert series[parent]["verdict"] == "no leak" and series[child]["verdict"] == "leak"
    assert abs(series[child]["slope_bytes_per_step"] - 3 * MiB) < 0.01 * 3 * MiB
    assert report["analysis"]["leaks"]["verdict"] == "leak"
    t = report["analysis"]["torch_cuda_memory"]
    assert t["processes"] == 2 and t["pid"] in (parent, child)
