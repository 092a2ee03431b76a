"""The report prices what each face of stepscope recorded: the library's
work for every zone and value, Python's own work around the zones, values
and counts Python code made, and stepscope.torch.instrument's hooks per zone
they began.  The counts are exact; each price is the cost the process
measured (stepscope._stepscope._costs(), which the script prints) times its
count."""
import json

import pytest

CODE_PYTHON = """
    import json, stepscope
    from stepscope import _stepscope
    for i in range(40):
        with stepscope.step():
            with stepscope.zone("a"):
                with stepscope.zone("b"):
                    pass
            stepscope.record("loss", 1.0 / (i + 1))
            stepscope.count("samples", 8)
            stepscope.count("tokens", 100)
    t = stepscope.zone_begin("c")
    stepscope.zone_end(t)
    stepscope.set_enabled(False)
    with stepscope.zone("off"):  # not recorded, not counted
        stepscope.record("off", 1.0)
    stepscope.set_enabled(True)
    print(json.dumps(_stepscope._costs()))
"""


def kinds(result):
    return result.report["analysis"]["overhead"]["recording_by_kind"]


def test_python_zones_values_and_counts_are_counted_and_priced(run_under):
    r = run_under(CODE_PYTHON)
    costs = json.loads(r.stdout.strip().splitlines()[-1])
    k = kinds(r)
    # 40 steps, 40 a, 40 b and one zone_begin("c")
    assert k["zones"]["count"] == 121
    assert k["python_zones"]["count"] == 121
    assert k["python_values"]["count"] == 40
    assert k["python_counts"]["count"] == 80
    assert k["values"]["count"] == 120
    assert k["instrument_hooks"]["count"] == 0
    for key, cost in (("python_zones", "zone_ns"), ("python_values", "value_ns"), ("python_counts", "count_ns")):
        assert costs[cost] is not None and costs[cost] > 0, costs
        assert k[key]["unpriced"] == 0
        assert k[key]["cost_ns"] == pytest.approx(costs[cost], rel=1e-6)
        assert k[key]["s"] == pytest.approx(k[key]["count"] * costs[cost] * 1e-9, rel=1e-6)
    o = r.report["analysis"]["overhead"]
    assert not o["recording_partial"]
    assert o["recording_s"] == pytest.approx(sum(part["s"] for part in k.values()), rel=1e-9)
    # the library's part: the cost `stepscope run` measured warm (81 zones
    # are fewer than the 4096 between the recorder's samples of an end)
    assert o["zone_end_samples"] + o["zone_end_samples_dropped"] == 0
    assert k["zones"]["cost_ns"] == pytest.approx(o["zone_cost_ns"], rel=1e-9)
    assert k["zones"]["s"] == pytest.approx(121 * k["zones"]["cost_ns"] * 1e-9, rel=1e-6)


CODE_TORCH = """
    import json, torch, stepscope, stepscope.torch
    from stepscope import _stepscope
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(12)]
    for x, y in stepscope.torch.instrument(model, opt, data):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        with stepscope.zone("mine"):
            pass
    print(json.dumps(_stepscope._costs()))
"""


def test_instrument_hooks_are_counted_apart_and_priced(run_under):
    pytest.importorskip("torch")
    r = run_under(CODE_TORCH)
    costs = json.loads(r.stdout.strip().splitlines()[-1])
    k = kinds(r)
    hook_zones = k["instrument_hooks"]["count"]
    # every zone instrument began (12 steps and their data, forward, backward
    # and optimizer, at least) is counted as the hooks', none as the user's
    assert hook_zones >= 60
    assert k["python_zones"]["count"] == 12  # "mine"
    assert k["zones"]["count"] == hook_zones + 12
    assert k["python_counts"]["count"] == 0  # "samples" is instrument's
    assert r.counter("samples")["increments"] == 12
    assert costs["hook_zone_ns"] is not None and costs["hook_zone_ns"] > 0
    assert k["instrument_hooks"]["cost_ns"] == pytest.approx(costs["hook_zone_ns"], rel=1e-6)
    assert k["instrument_hooks"]["s"] == pytest.approx(hook_zones * costs["hook_zone_ns"] * 1e-9, rel=1e-6)
    # calibrating at instrument() left nothing in the record
    assert r.zone("stepscope.cost_probe") is None


def test_a_fork_child_counts_and_prices_its_own(run_under):
    # the child opens a record of its own: its counts start from zero and
    # the costs its parent measured at import are written into it
    r = run_under("""
        import json, os, stepscope
        from stepscope import _stepscope
        with stepscope.zone("parent"):
            pass
        pid = os.fork()
        if pid == 0:
            for i in range(7):
                with stepscope.zone("child"):
                    pass
            os._exit(0)
        os.waitpid(pid, 0)
        print(json.dumps(_stepscope._costs()))
    """)
    costs = json.loads(r.stdout.strip().splitlines()[-1])
    k = kinds(r)
    assert len(r.report["processes"]) == 2
    assert k["python_zones"]["count"] == 8
    assert k["python_zones"]["unpriced"] == 0
    assert k["python_zones"]["s"] == pytest.approx(8 * costs["zone_ns"] * 1e-9, rel=1e-6)


def test_the_summary_breaks_the_cost_down(run_under, tmp_path):
    import subprocess
    from conftest import STEPSCOPE_BIN
    r = run_under(CODE_PYTHON)
    assert r.report["analysis"]["overhead"]["sampler_percent_of_core"] >= 0
    text = subprocess.run([STEPSCOPE_BIN, "report", str(tmp_path / "out"), "--format", "summary"],
                          capture_output=True, text=True, check=True).stdout
    line = next(l for l in text.splitlines() if l.startswith("overhead"))
    assert "121 zones x " in line
    assert "Python's own work around 121 zones x " in line
    assert "Python's own work around 40 record() calls x " in line
    assert "Python's own work around 80 count() calls x " in line
    assert "sampler " in line and "% of one core" in line


def test_measuring_the_hooks_leaves_the_workload_alone(run_under):
    # instrument() measures its hooks in a loop of its own: the workload's
    # random numbers come out as without stepscope, and Tensor.backward is
    # the workload's own again once remove() is called
    pytest.importorskip("torch")
    r = run_under("""
        import json, torch, stepscope, stepscope.torch
        torch.manual_seed(3)
        want = torch.rand(4).tolist()
        torch.manual_seed(3)
        # under stepscope run's auto-instrumentation, the workload's own
        # Tensor.backward is under auto's wrapper until instrument() makes
        # it stand aside
        original = getattr(torch.Tensor.backward, "__wrapped__", torch.Tensor.backward)
        model = torch.nn.Linear(2, 1)  # draws its weights: the same draws as below
        torch.manual_seed(3)
        loader = stepscope.torch.instrument(model, torch.optim.SGD(model.parameters(), lr=0.1), [])
        got = torch.rand(4).tolist()
        loader.remove()
        print(json.dumps([want == got, torch.Tensor.backward is original]))
    """)
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [True, True]
