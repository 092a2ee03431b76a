"""Two "nodes" on this machine, one gloo rank each, each under its own
`stepscope run` (distinct STEPSCOPE_HOSTNAME; node B's clock shifted by
+250 ms through STEPSCOPE_TEST_CLOCK_SHIFT_NS): the auto-instrumentation's
ping-pong measures the shift within its stated error, `stepscope merge`
puts both ranks on one timeline where every all-reduce overlaps on the two
ranks (it cannot end on one before it began on the other), names both
hosts, refuses a tolerance violation with one line and takes --force."""
import json
import subprocess

import pytest

from conftest import PYTHON, STEPSCOPE_BIN, free_port, script_env, write_script

torch = pytest.importorskip("torch")

SHIFT_NS = 250_000_000

WORKER = """
import torch, torch.distributed as dist
import stepscope
dist.init_process_group("gloo")
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(8):
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    t = torch.ones(1)
    with stepscope.zone("allreduce"):
        dist.all_reduce(t)
    opt.step()
dist.destroy_process_group()
"""



@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nodes")
    worker = write_script(tmp, WORKER, "worker.py")
    port = str(free_port())
    procs = []
    for rank, host, shift in ((0, "nodeA", "0"), (1, "nodeB", str(SHIFT_NS))):
        env = script_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), WORLD_SIZE="2",
                         LOCAL_RANK="0", STEPSCOPE_HOSTNAME=host, STEPSCOPE_TEST_CLOCK_SHIFT_NS=shift)
        procs.append(subprocess.Popen([STEPSCOPE_BIN, "run", "-q", "-o", str(tmp / host), "--", PYTHON,
                                       str(worker)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out
    return tmp


def merge(nodes, out, *extra):
    return subprocess.run([STEPSCOPE_BIN, "merge", str(nodes / "nodeA"), str(nodes / "nodeB"), "-o",
                           str(nodes / out), "-q", *extra], capture_output=True, text=True, timeout=300)


def rank_process(report, rank):
    return next(p for p in report["processes"] if p.get("rank") == rank)


def test_ping_pong_measures_the_shift(nodes):
    report = json.loads((nodes / "nodeB" / "report.json").read_text())
    sync = rank_process(report, 1)["clock_sync"]
    assert sync["not_measured_reason"] is None
    for when in ("start", "end"):
        m = sync[when]
        assert m is not None and m["rounds"] == 16
        # the true offset lies within the stated error: t_rank0 was read
        # between this rank's send and receive
        assert abs(m["offset_ns"] + SHIFT_NS) <= m["error_ns"], m
        assert m["error_ns"] > 0


def allreduces(trace, rank):
    pids = [e["pid"] for e in trace["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "process_name"
            and e["args"]["name"].startswith("rank %d " % rank)]
    assert len(pids) == 1
    zones = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid") == pids[0]
             and e.get("name") == "allreduce"]
    return sorted((z["ts"], z["ts"] + z["dur"]) for z in zones)


def test_merge_aligns_the_collectives(nodes):
    # a tolerance no load on this shared machine reaches: the check below
    # holds within whatever error the exchange states
    r = merge(nodes, "merged", "--max-clock-error", "1000")
    assert r.returncode == 0, r.stderr
    report = json.loads((nodes / "merged" / "report.json").read_text())
    assert report["merge"]["reference_host"] == "nodeA"
    hosts = {p["rank"]: p["hostname"] for p in report["processes"] if p.get("rank") is not None}
    assert hosts == {0: "nodeA", 1: "nodeB"}
    align = rank_process(report, 1)["clock_alignment"]
    assert align["method"] == "measured" and align["source_rank"] == 1
    assert rank_process(report, 0)["clock_alignment"]["method"] == "reference"
    error_us = align["error_ns"] / 1000 + 1  # and trace.json's rounding
    trace = json.loads((nodes / "merged" / "trace.json").read_text())
    r0, r1 = allreduces(trace, 0), allreduces(trace, 1)
    assert len(r0) == len(r1) == 8
    # an all-reduce ends on neither rank before it has begun on both:
    # aligned, the two intervals of each overlap within the stated error
    # (250 ms apart unaligned)
    for (s0, e0), (s1, e1) in zip(r0, r1):
        assert s1 <= e0 + error_us and s0 <= e1 + error_us, ((s0, e0), (s1, e1), error_us)


def test_tolerance_refused_then_forced(nodes):
    r = merge(nodes, "refused", "--max-clock-error", "0.0001")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "rank 1 on host nodeB: clock offset error" in lines[0], r.stderr
    assert "exceeds the tolerance 0.0001 ms" in lines[0]
    assert not (nodes / "refused").exists()
    r = merge(nodes, "forced", "--max-clock-error", "0.0001", "--force")
    assert r.returncode == 0, r.stderr
    report = json.loads((nodes / "forced" / "report.json").read_text())
    assert report["merge"]["forced"] is True
    assert "rank 1 on host nodeB" in report["merge"]["forced_reason"]


SYNC_SCRIPT = """
import json, sys
import torch.distributed as dist
import torch.multiprocessing as mp


def main(rank, store):
    import stepscope.torch
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
    first = stepscope.torch.sync_clocks()   # the start measurement
    second = stepscope.torch.sync_clocks()  # the end
    print(json.dumps({"rank": rank, "first": first, "second": second}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(sys.argv[1],), nprocs=2)
"""


def _json_objects(text):
    """Every JSON object in text: torchrun's --tee can join two ranks' lines
    into one when their writes cross, so lines are no unit here."""
    decoder, objects, i = json.JSONDecoder(), [], text.find("{")
    while i >= 0:
        obj, end = decoder.raw_decode(text, i)
        objects.append(obj)
        i = text.find("{", end)
    return objects


def test_sync_clocks_for_scripts_of_their_own(tmp_path):
    """stepscope.torch.sync_clocks(): a script that inits the group itself,
    without stepscope run: both measurements, the true offset (0: one
    machine, no shift) within the stated error."""
    script = write_script(tmp_path, SYNC_SCRIPT, "sync.py")
    r = subprocess.run([PYTHON, str(script), str(tmp_path / "store")], env=script_env(STEPSCOPE_OUT=""),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = {d["rank"]: d for d in _json_objects(r.stdout)}
    assert set(got) == {0, 1}
    for when in ("first", "second"):
        assert got[0][when]["measured"] and got[0][when]["offset_ns"] == 0
        m = got[1][when]
        assert m["measured"] and m["rounds"] == 16
        assert abs(m["offset_ns"]) <= m["error_ns"], m
