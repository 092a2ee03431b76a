"""Ranks are first-class: 4 gloo DDP ranks on the CPU under torchrun, with
`stepscope run` (one report, each rank's figures beside the pooled ones)
and without it (each rank writes its own report into a directory of its
own).  Debian 12's torchrun (torch 1.13, Python 3.11) needs
`--redirects 9:0 --tee 9:0` (docs/distributed.md)."""
import json
import subprocess

import pytest

from conftest import STEPSCOPE_BIN, script_env, torchrun_prefix, write_script

torch = pytest.importorskip("torch")
pd = pytest.importorskip("pandas")

RANKS = 4
STEPS = 5

# A tiny DDP loop; the steps are the script's own when alone (no
# auto-instrumentation there), auto-instrumented under `stepscope run`.
DDP = """
import os, sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
own_steps = os.environ.get("OWN_STEPS") == "1"
if own_steps:
    import stepscope
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 8), torch.randn(16, 4)
for i in range(%d):
    if own_steps:
        s = stepscope.step()
        s.__enter__()
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    if own_steps:
        s.__exit__(None, None, None)
dist.destroy_process_group()
""" % STEPS



def torchrun(script):
    # --standalone's rendezvous port is fixed (29400): other jobs on this
    # machine may hold it, so a free one of its own, as a user running two
    # jobs side by side would (docs/distributed.md)
    return torchrun_prefix() + ["--nproc_per_node", str(RANKS), str(script)]


def check(proc):
    assert proc.returncode == 0, "rc %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout, proc.stderr)


def test_four_ranks_under_stepscope_run(tmp_path):
    script = write_script(tmp_path, DDP)
    out = tmp_path / "out"
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-o", str(out), "--"] + torchrun(script), cwd=str(tmp_path),
                          env=script_env(OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300)
    check(proc)
    report = json.loads((out / "report.json").read_text())
    ranks = report["ranks"]
    assert [r["rank"] for r in ranks] == list(range(RANKS))
    pids = {p["rank"]: p["pid"] for p in report["processes"] if "rank" in p}
    for r in ranks:
        assert r["steps"] == STEPS, r  # the script's steps, per rank
        assert r["world_size"] == RANKS and r["local_rank"] == r["rank"]
        assert r["pid"] == pids[r["rank"]]
        assert r["hostname"]
        assert r["step_name"] == "step"
        assert 0 < r["step_median_s"] <= r["step_p90_s"]
        assert {"forward", "backward"} <= {ph["name"] for ph in r["phases"]}
    # the wait in collectives: measured where the run recorded waits (auto
    # times DDP's all-reduce as one where the wait recording is in), else
    # unknown (null), never a made-up 0
    waits = any(z["kind"] == "wait" for z in report["zones"])
    for r in ranks:
        if waits:
            assert r["wait_per_step_median_s"] > 0 and r["wait_total_s"] > 0, r
        else:
            assert r["wait_per_step_median_s"] is None and r["wait_total_s"] is None, r
    pooled = report["ranks_pooled"]
    assert pooled["steps"] == RANKS * STEPS
    assert "rank" not in pooled
    # the summary: the per-rank table, the zone table labelled as pooled
    assert "zones: all %d ranks pooled" % RANKS in proc.stderr
    assert "ranks: %d, \"step\" steps" % RANKS in proc.stderr
    for r in range(RANKS):
        assert any(line.split()[:1] == [str(r)] for line in proc.stderr.splitlines()), proc.stdout
    # report.html: one series a rank, the per-rank table
    html = (out / "report.html").read_text()
    assert "Step time per step, rank by rank" in html
    for r in range(RANKS):
        assert ">rank %d</text>" % r in html
    assert '<section id="ranks">' in html
    # steps.csv: each rank's own steps, each counted from 0
    steps = pd.read_csv(out / "steps.csv")
    assert sorted(steps["rank"].unique()) == list(range(RANKS))
    for r, g in steps.groupby("rank"):
        assert len(g) == STEPS
        assert sorted(g["step_index"]) == list(range(STEPS))
        assert g["pid"].nunique() == 1 and g["pid"].iloc[0] == pids[r]
    # stepscope report renders the same from report.json
    (out / "report.html").unlink()
    again = subprocess.run([STEPSCOPE_BIN, "report", str(out)], capture_output=True, text=True, timeout=120)
    check(again)
    assert (out / "report.html").read_text() == html
    summary = subprocess.run([STEPSCOPE_BIN, "report", str(out), "--format", "summary"], capture_output=True,
                             text=True, timeout=120)
    check(summary)
    assert "ranks: %d, \"step\" steps" % RANKS in summary.stdout + summary.stderr


def test_four_standalone_ranks_write_four_reports(tmp_path):
    script = write_script(tmp_path, DDP)
    proc = subprocess.run(torchrun(script), cwd=str(tmp_path), env=script_env(OWN_STEPS="1", OMP_NUM_THREADS="1"),
                          capture_output=True, text=True, timeout=300)
    check(proc)
    out = tmp_path / "stepscope-out"
    assert not (out / "report.json").exists()  # no rank wrote over another
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["rank-%d" % r for r in range(RANKS)]
    for r in range(RANKS):
        report = json.loads((out / ("rank-%d" % r) / "report.json").read_text())
        assert [p["rank"] for p in report["processes"]] == [r]
        assert report["steps"]["count"] == STEPS
        assert [v["rank"] for v in report["ranks"]] == [r]
        assert report["ranks"][0]["steps"] == STEPS
        assert ("report written to %s/rank-%d/report.json" % (out, r)) in proc.stderr
    # the ranks' own files only: no report-<pid>.json beside them
    assert not [p for p in out.rglob("report-*.json")]


def test_out_dir_names_the_rank_directory(run_alone, tmp_path):
    code = "import stepscope\nprint(stepscope.out_dir())\n"
    out = tmp_path / "stepscope-out"
    assert run_alone(code, RANK="2", WORLD_SIZE="4").stdout.strip() == str(out / "rank-2")
    assert run_alone(code, RANK="3").stdout.strip() == str(out / "rank-3")
    # a job of one process, or no rank: as before
    assert run_alone(code, RANK="0", WORLD_SIZE="1").stdout.strip() == str(out)
    assert run_alone(code).stdout.strip() == str(out)
    assert run_alone(code, RANK="x", WORLD_SIZE="4").stdout.strip() == str(out)
    # and the report goes where out_dir() says
    run_alone("import stepscope\nwith stepscope.zone('z'):\n    pass\n", RANK="1", WORLD_SIZE="2")
    assert json.loads((out / "rank-1" / "report.json").read_text())["processes"][0]["rank"] == 1
