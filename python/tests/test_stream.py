"""The live step stream (DIR/steps.jsonl) and stepscope.last_step() /
status_line(): the stream is written while the script runs (the script
itself waits for each step's line before doing the next step), it holds
every step of report.json once, pandas reads it, and last_step() gives
the same record with the same keys."""
import json
import os
import subprocess
from pathlib import Path

import pandas as pd

import stepscope
from conftest import PYTHON, STEPSCOPE_BIN, script_env, write_script

STEPS = 6

LIVE_SCRIPT = """
    import json, os, time, stepscope
    path = os.path.join(os.environ["STEPSCOPE_RUN_DIR"], "steps.jsonl")

    def stream():
        try:
            with open(path) as f:
                return [json.loads(l) for l in f if l.endswith("\\n")]
        except FileNotFoundError:
            return []

    def wait_for(k):
        deadline = time.monotonic() + 120  # only a hang stops it
        while time.monotonic() < deadline:
            lines = stream()
            if any(l.get("step") == k for l in lines):
                return lines
            time.sleep(0.01)
        raise SystemExit("step %d never reached the stream" % k)

    before = [stepscope.last_step(), stepscope.status_line()]
    seen, mine = [], []
    for i in range(N_STEPS):
        with stepscope.step():
            with stepscope.zone("data"):
                sum(range(2000))
            with stepscope.zone("forward"):
                with stepscope.zone("inner"):
                    sum(range(1000))
            stepscope.record("loss", 1.0 / (i + 1))
            stepscope.count("samples", 4)
        mine.append(stepscope.last_step())
        # the line of step i is there before step i + 1 begins
        seen.append(len(wait_for(i)))
    print(json.dumps({"before": before, "seen": seen, "mine": mine, "status": stepscope.status_line()}))
""".replace("N_STEPS", str(STEPS))


def run_live(tmp_path, *options):
    script = write_script(tmp_path, LIVE_SCRIPT)
    out = tmp_path / "out"
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", *options, "-o", str(out), "--", PYTHON, str(script)],
                          cwd=str(tmp_path), env=script_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out / "report.json") as f:
        return json.loads(proc.stdout), json.load(f), out


def test_the_stream_is_live_and_complete(tmp_path):
    got, report, out = run_live(tmp_path)
    assert got["before"] == [None, ""]
    # each step's line was read by the workload before it did the next step
    assert got["seen"] == list(range(1, STEPS + 1))
    with open(out / "steps.jsonl") as f:
        lines = [json.loads(line) for line in f]
    rows = report["steps"]["rows"]
    assert len(lines) == len(rows) == report["steps"]["count"] == STEPS
    for line, row, mine in zip(lines, rows, got["mine"]):
        assert line["step"] == row["index"] and line["name"] == row["name"] == "step"
        assert line["pid"] == row["pid"] and line["thread"] == row["tid"] and line["rank"] is None
        # zones' self times are the events' own integers: equal to the ns
        assert line["zones_self_s"] == row["zones_self_s"]
        assert list(line["zones_self_s"]) == ["data", "forward", "inner"]  # the order they began
        assert line["values"] == row["values"] == {"loss": 1.0 / (row["index"] + 1)}
        assert line["counters"] == row["counters"] == {"samples": 4}
        assert line["microsteps"] == 0 and line["partial"] is False
        # times: the same clock, converted with the calibration known then (the
        # report refines the TSC rate over the whole run: parts per 100,000 at most)
        assert abs(line["start_s"] - row["start_s"]) < 1e-4
        assert abs(line["duration_s"] - row["duration_s"]) < 1e-6
        assert line["machine"] is None or set(line["machine"]) >= {"workload_rss_bytes", "workload_cpu_percent"}
        # last_step(): the same record, with the same keys
        assert set(mine) == set(line)
        for k in ("step", "name", "pid", "rank", "thread", "zones_self_s", "values", "counters", "microsteps",
                  "partial"):
            assert mine[k] == line[k], k
        assert abs(mine["start_s"] - line["start_s"]) < 1e-4 and abs(mine["duration_s"] - line["duration_s"]) < 1e-6
    last = got["mine"][-1]
    # the same step in words (the machine part is the latest reading, read again)
    parts = got["status"].split(" | ")
    assert parts[:3] == stepscope.status_line(last).split(" | ")[:3] and parts[2] == "loss 0.1667"
    assert parts[0].startswith("step 5 ") and parts[3].startswith("rss ")
    # pandas reads it as it is, one row per step
    df = pd.read_json(out / "steps.jsonl", lines=True)
    assert list(df["step"]) == list(range(STEPS))
    flat = pd.json_normalize(lines)
    assert list(flat["values.loss"]) == [1.0 / (i + 1) for i in range(STEPS)]
    assert (flat["zones_self_s.forward"] > 0).all()


def test_no_stream(tmp_path):
    script = write_script(tmp_path, "import stepscope\nwith stepscope.step():\n    pass\n")
    out = tmp_path / "out"
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", "--no-stream", "-o", str(out), "--", PYTHON, str(script)],
                          env=script_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.json").exists() and not (out / "steps.jsonl").exists()


def test_last_step_alone(run_alone):
    proc = run_alone("""
        import json, stepscope
        with stepscope.step():
            with stepscope.zone("fwd"):
                pass
            stepscope.record("loss", 0.25)
        stepscope.count("tokens", 100)   # after the step, before the next: the step's
        a = stepscope.last_step()
        with stepscope.step():
            stepscope.record("loss", 0.5)
        stepscope.step_begin()           # the next step has begun: step 1 owns nothing more
        stepscope.count("tokens", 7)
        b = stepscope.last_step()
        print(json.dumps([a, b]))
    """)
    a, b = json.loads(proc.stdout)
    assert a["step"] == 0 and b["step"] == 1 and a["pid"] == a["thread"] == b["thread"]
    assert list(a["zones_self_s"]) == ["fwd"] and a["values"] == {"loss": 0.25} and a["counters"] == {"tokens": 100}
    assert b["zones_self_s"] == {} and b["values"] == {"loss": 0.5} and b["counters"] == {}
    assert 0 <= a["start_s"] < a["end_s"] <= b["start_s"]
    # alone: the process's own resident set, nothing else
    m = a["machine"]
    assert m["workload_rss_bytes"] > 0 and m["workload_cpu_percent"] is None


def test_status_line_format():
    step = {"step": 412, "duration_s": 0.182, "zones_self_s": {"data": 0.0746, "forward": 0.04, "backward": 0.0546,
                                                              "optimizer": 0.0128},
            "values": {"loss": 0.41234, "lr": None}, "machine": {"workload_rss_bytes": 1.2 * (1 << 30),
                                                                  "gpu0_utilization_percent": 87.4,
                                                                  "gpu0_memory_used_bytes": 1e9}}
    assert stepscope.status_line(step) == (
        "step 412 182 ms | data 41% backward 30% forward 22% optimizer 7% | loss 0.4123 | rss 1.2 GiB gpu0 87%")
    assert stepscope.status_line(step, zones=1, values=0) == "step 412 182 ms | data 41% | rss 1.2 GiB gpu0 87%"
    step.update(duration_s=0.0004, machine=None, values={})
    assert stepscope.status_line(step, zones=0) == "step 412 400 µs"


def _doc_block(after):
    """The first ```python block after the line that starts with `after`
    in docs/python.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    rest = text[text.index(after):]
    start = rest.index("```python\n") + len("```python\n")
    return rest[start:rest.index("```", start)]


def test_the_tracker_examples_run(run_alone, tmp_path):
    # wandb and tensorboard stand-ins that keep what they are given, so the
    # documented five lines are run as written
    (tmp_path / "wandb.py").write_text(
        "logged = []\ndef init(**kw): pass\ndef log(d, step=None): logged.append((step, d))\n")
    tb = tmp_path / "torch" / "utils" / "tensorboard"
    tb.mkdir(parents=True)
    for d in (tmp_path / "torch", tmp_path / "torch" / "utils"):
        (d / "__init__.py").write_text("")
    (tb / "__init__.py").write_text(
        "scalars = []\nclass SummaryWriter:\n    def __init__(self, d): pass\n"
        "    def add_scalars(self, tag, d, step):\n"
        "        assert all(isinstance(v, (int, float)) for v in d.values())\n"
        "        scalars.append((tag, step, dict(d)))\n")
    prelude = ("import stepscope\nloader = range(3)\ndef train_step(b):\n    with stepscope.step():\n"
               "        with stepscope.zone('forward'):\n            pass\n"
               "        stepscope.record('loss', 1.0 / (b + 1))\n        stepscope.count('samples', 8)\n")
    code = (prelude + _doc_block("Weights & Biases, one point") + _doc_block("TensorBoard needs no code")
            + "import json, wandb, torch.utils.tensorboard as t\n"
              "print(json.dumps([wandb.logged, t.scalars]))\n")
    proc = run_alone(code, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    logged, scalars = json.loads(proc.stdout)
    assert [step for step, _ in logged] == [0, 1, 2]
    assert [d["values"]["loss"] for _, d in logged] == [1.0, 0.5, 1.0 / 3]
    assert [(tag, step) for tag, step, _ in scalars] == [(g, k) for k in range(3, 6) for g in
                                                         ("zones_self_s", "values", "counters")]
    assert scalars[1][2] == {"loss": 1.0} and scalars[2][2] == {"samples": 8} and set(scalars[0][2]) == {"forward"}
