"""A leak that starts mid-run (docs/analysis.md, "Memory leaks", the last
half): torch.cuda's allocated memory level for 100 steps, then 2 MiB a
step for 100 more, under up to 16 MiB of step-to-step noise, through the
fake torch (python/tests/fakes/torch) in a fresh interpreter under
`stepscope run`; report.json's series, the summary, and `stepscope report`
reading report.json back."""
import json
import os
import subprocess

from conftest import PYTHON, STEPSCOPE_BIN, script_env, write_script

FAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakes")
MiB = 1 << 20

LATE_LOOP = """
    import random, torch, stepscope
    rng = random.Random(%d)
    torch.alloc(1 << 30); held = 0
    for i in range(200):
        with stepscope.step():
            if %s and i >= 100: torch.alloc(2 << 20)  # from step 100 on, 2 MiB kept a step
            j = rng.randrange(0, 16 << 20); torch.free(held); torch.alloc(j); held = j
"""


def run_loop(tmp_path, seed, leak):
    script = write_script(tmp_path, LATE_LOOP % (seed, leak))
    out = tmp_path / "out"
    env = script_env()
    env["PYTHONPATH"] = os.pathsep.join([FAKES] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.run([STEPSCOPE_BIN, "run", "--no-auto", "-o", str(out), "--", PYTHON, str(script)],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out / "report.json") as f:
        report = json.load(f)
    leaks = report["analysis"]["leaks"]
    return proc, out, leaks, next(s for s in leaks["series"] if s["series"] == "torch_cuda_allocated_bytes")


def test_a_leak_that_starts_mid_run_is_found_since_the_last_half(tmp_path):
    proc, out, leaks, s = run_loop(tmp_path, 1, "True")
    assert s["verdict"] == "leak" and s["rule"] == "all" and leaks["verdict"] == "leak", s
    assert s["window"] == "last half"
    # warm-up leaves steps 10..199 out of 200: the last 95 of those 190,
    # from step 105 (a reading at a step's end stands at its index + 1)
    assert s["window_from_step"] == 105 and s["window_from_seconds"] is None
    assert s["steps_analysed"] == 95 and s["first_step"] == 105 and s["last_step"] == 200
    assert s["ci95_low"] <= 2 * MiB <= s["ci95_high"] and abs(s["slope_bytes_per_step"] - 2 * MiB) < 0.05 * 2 * MiB
    assert "since step 105" in s["reason"] and "the whole run: rule persistence" in s["reason"]
    # the summary (on stderr, the workload's own output on stdout)
    line = next(ln for ln in proc.stderr.splitlines() if "torch.cuda allocated" in ln)
    assert "since step 105, the run's last 95 steps" in line, proc.stderr
    # report.html says it, and `stepscope report` reads the window back
    with open(out / "report.html") as f:
        assert "since step 105, over the run&#39;s last 95 steps (its last half)" in f.read()
    again = subprocess.run([STEPSCOPE_BIN, "report", str(out / "report.json"), "--format", "summary"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert line.strip() in again.stdout, again.stdout
    rt = tmp_path / "again.json"
    subprocess.run([STEPSCOPE_BIN, "report", str(out / "report.json"), "--format", "json", "-o", str(rt)],
                   check=True, capture_output=True, timeout=120)
    with open(rt) as f:
        back = json.load(f)["analysis"]["leaks"]["series"]
    assert next(b for b in back if b["series"] == "torch_cuda_allocated_bytes") == s


def test_the_same_noise_without_the_leak_is_no_leak(tmp_path):
    _, _, _, s = run_loop(tmp_path, 1, "False")
    assert s["verdict"] == "no leak" and s["window"] == "all" and s["window_from_step"] is None, s
