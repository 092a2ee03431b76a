"""stepscope.torch.instrument and examples/torch_train.py: the zones, the
step and micro-step structure, the samples counted, undoing it, and bad
arguments."""
import csv
import json
import subprocess

import pytest

from conftest import PYTHON, ROOT, STEPSCOPE_BIN, load_report, script_env

torch = pytest.importorskip("torch", reason="python3-torch is not installed")

EXAMPLE = str(ROOT / "examples" / "torch_train.py")
PHASES = ("data", "forward", "backward", "optimizer")


def run_example(tmp_path, *args):
    out = tmp_path / "out"
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", "-o", str(out), "--", PYTHON, EXAMPLE] + list(args),
                          env=script_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc, load_report(out)


def test_example_under_stepscope_run(tmp_path):
    # 2 x 1024 points in batches of 64: 32 optimizer steps an epoch (seeded)
    proc, r = run_example(tmp_path, "--epochs", "5")
    step = r.zone("step")
    assert step["kind"] == "step" and step["count"] == 160
    for name in PHASES:
        assert r.zone(name)["count"] == 160, name
    # the phases are inside the steps: their time is part of the steps'
    assert sum(r.zone(n)["total_s"] for n in PHASES) <= step["total_s"]
    assert step["self_s"] < 0.5 * step["total_s"]
    assert r.counter("samples")["total"] == 5 * 2048
    loss = r.value("loss")
    assert loss["count"] == 160 and loss["last"] < 0.5 * loss["first"]
    assert "final loss" in proc.stdout


def test_gradient_accumulation(tmp_path):
    _, r = run_example(tmp_path, "--epochs", "1", "--accumulate", "4")
    assert r.zone("step")["count"] == 8
    assert r.zone("microstep")["count"] == 32
    assert r.zone("optimizer")["count"] == 8
    assert r.zone("forward")["count"] == 32 and r.zone("data")["count"] == 32


def test_accumulation_found_from_the_first_step(run_under):
    # three batches per optimizer step, not declared: the first step is
    # whole, micro-steps from the second on
    r = run_under("""
        import torch, stepscope.torch
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.utils.data.TensorDataset(torch.randn(36, 4), torch.randn(36, 1))
        loader = stepscope.torch.instrument(model, opt, torch.utils.data.DataLoader(data, batch_size=3))
        for i, (x, y) in enumerate(loader):
            torch.nn.functional.mse_loss(model(x), y).backward()
            if i % 3 == 2:
                opt.step()
                opt.zero_grad()
        loader.remove()
    """)
    assert r.zone("step")["count"] == 4
    assert r.zone("microstep")["count"] == 12  # the first step's three too
    assert [row["microsteps"] for row in r.report["steps"]["rows"]] == [3, 3, 3, 3]
    assert r.zone("data")["count"] == 12
    assert r.counter("samples")["total"] == 36


def test_remove_undoes_everything(run_under):
    r = run_under("""
        import torch, stepscope.torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        # under stepscope run's auto-instrumentation, Tensor.backward is
        # auto's wrapper until instrument() makes it stand aside
        backward = getattr(torch.Tensor.backward, "__wrapped__", torch.Tensor.backward)
        step = opt.step
        loader = stepscope.torch.instrument(model, opt, [(torch.ones(5, 2), torch.zeros(5, 1))] * 2)
        assert torch.Tensor.backward is not backward and opt.step != step
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        loader.remove()
        assert torch.Tensor.backward is backward and "step" not in vars(opt)
        # nothing is recorded any more
        torch.nn.functional.mse_loss(model(torch.ones(1, 2)), torch.zeros(1, 1)).backward()
        opt.step()
        # a second instrumentation is allowed once the first is removed
        stepscope.torch.instrument(model, opt, []).remove()
    """)
    for name in ("step",) + PHASES:
        assert r.zone(name)["count"] == 2, name
    assert r.counter("samples")["total"] == 10


def test_break_ends_the_step(run_under):
    r = run_under("""
        import torch, stepscope.torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = stepscope.torch.instrument(model, opt, [(torch.ones(4, 2), torch.zeros(4, 1))] * 10)
        for i, (x, y) in enumerate(loader):
            torch.nn.functional.mse_loss(model(x), y).backward()
            if i == 2:
                break
            opt.step()
        loader.remove()
    """)
    assert r.zone("step")["count"] == 3  # the third ends at the break, without an optimizer step
    assert r.zone("optimizer")["count"] == 2
    assert r.zone("backward")["count"] == 3


def test_bad_arguments():
    import stepscope.torch
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="accumulation_steps"):
        stepscope.torch.instrument(model, opt, [], accumulation_steps=0)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        stepscope.torch.instrument(object(), opt, [])
    with pytest.raises(TypeError, match="step"):
        stepscope.torch.instrument(model, object(), [])
    first = stepscope.torch.instrument(model, opt, [])
    with pytest.raises(RuntimeError, match="remove"):
        stepscope.torch.instrument(model, opt, [])
    first.remove()


def test_gpu_zones_when_the_model_is_on_cuda(run_under):
    # No GPU here: gpu=True stands in for parameters on a CUDA device, and
    # the test suite's fake libcuda for the driver.  The model's forward
    # drives the fake GPU: it reaches everything recorded so far (this
    # forward's start event among them), then runs 2 ms, so each forward
    # takes exactly 2 ms on the GPU and backward and optimizer 0 ms.
    from test_gpu_zone import FAKE_CUDA
    r = run_under("""
        import ctypes, os, torch, stepscope.torch
        fake = ctypes.CDLL(os.environ["STEPSCOPE_LIBCUDA"])
        fake.fake_cuda_advance.argtypes = [ctypes.c_double]
        fake.fake_cuda_complete.argtypes = [ctypes.c_long]

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 1)
            def forward(self, x):
                fake.fake_cuda_complete(-1)
                fake.fake_cuda_advance(2.0)
                return self.lin(x)

        model = Model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        batches = [(torch.ones(4, 2), torch.zeros(4, 1))] * 5
        for gpu in (True, None):              # None: the parameters are on the CPU, so CPU zones
            loader = stepscope.torch.instrument(model, opt, batches, gpu=gpu)
            for x, y in loader:
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()
            with torch.no_grad():
                model(x)                      # forward.eval, a GPU zone too when gpu=True
            loader.remove()
            fake.fake_cuda_complete(-1)       # the last step's end events
            assert stepscope.gpu_flush() == 0
    """, STEPSCOPE_LIBCUDA=FAKE_CUDA)
    forward = r.value("forward.gpu_ms")
    assert (forward["count"], forward["min"], forward["max"]) == (5, 2.0, 2.0)
    for name in ("backward", "optimizer"):
        v = r.value(name + ".gpu_ms")
        assert (v["count"], v["min"], v["max"]) == (5, 0.0, 0.0), name
    assert r.value("data.gpu_ms") is None  # fetching a batch is CPU work
    evaluation = r.value("forward.eval.gpu_ms")
    assert (evaluation["count"], evaluation["min"], evaluation["max"]) == (1, 2.0, 2.0)
    assert r.zone("forward.eval")["count"] == 2
    # the CPU zones of both loops, once per call
    for name in ("step",) + PHASES:
        assert r.zone(name)["count"] == 10, name
    assert r.report["cuda"]["zones_resolved"] == 16


def test_gpu_argument():
    import stepscope.torch
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="gpu must be None, True or False"):
        stepscope.torch.instrument(model, opt, [], gpu="yes")
    loader = stepscope.torch.instrument(model, opt, [])
    assert loader._gpu is False  # CPU parameters
    loader.remove()


def steps_csv(tmp_path):
    with open(tmp_path / "out" / "steps.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_loss_after_the_optimizer_is_in_every_row(run_under, tmp_path):
    # the usual loop: the step ends inside opt.step(), and the loss and a
    # count come after it; both belong to the step just ended
    r = run_under("""
        import json, torch, stepscope, stepscope.torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        data = torch.utils.data.TensorDataset(torch.randn(40, 3), torch.randn(40, 1))
        loader = stepscope.torch.instrument(model, opt, torch.utils.data.DataLoader(data, batch_size=5))
        losses = []
        for epoch in range(2):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                stepscope.record("loss", loss.item())
                stepscope.count("tokens", 7)
                losses.append(loss.item())
        loader.remove()
        print(json.dumps(losses))
    """)
    losses = json.loads(r.stdout)
    rows = r.report["steps"]["rows"]
    assert len(losses) == len(rows) == 16
    assert [row["values"]["loss"] for row in rows] == pytest.approx(losses, rel=1e-14, abs=0)
    assert [row["counters"]["tokens"] for row in rows] == [7] * 16
    csv_rows = steps_csv(tmp_path)
    assert [float(row["value:loss:last"]) for row in csv_rows] == pytest.approx(losses, rel=1e-14, abs=0)
    assert [row["counter:tokens:sum"] for row in csv_rows] == ["7"] * 16
    tokens = next(c for c in r.report["analysis"]["throughput"]["counters"] if c["name"] == "tokens")
    assert tokens["per_second"] > 0 and tokens["in_steps"] == 7 * tokens["steps"]


def test_example_loss_in_every_row(tmp_path):
    # the example records the loss after optimizer.step(): every row has it
    _, r = run_example(tmp_path, "--epochs", "2")
    rows = r.report["steps"]["rows"]
    assert len(rows) == 64 and all(row["values"]["loss"] > 0 for row in rows)
    assert rows[-1]["values"]["loss"] == pytest.approx(r.value("loss")["last"], rel=1e-14)
    assert all(float(row["value:loss:last"]) > 0 for row in steps_csv(tmp_path))
    # its evaluation after each epoch is not training
    assert r.zone("forward")["count"] == 64 and r.zone("forward.eval")["count"] == 2  # one an epoch
    assert r.zone("data.start")["count"] == 2


TRAIN_AND_EVAL = """
    import torch, stepscope.torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    train = torch.utils.data.TensorDataset(torch.randn(48, 4), torch.randn(48, 1))
    val = torch.utils.data.TensorDataset(torch.randn(24, 4), torch.randn(24, 1))
    loader = torch.utils.data.DataLoader(train, batch_size=4, num_workers={workers})
    val_loader = torch.utils.data.DataLoader(val, batch_size=6, num_workers={workers})
    loader = stepscope.torch.instrument(model, opt, loader, accumulation_steps={accumulate})
    with torch.no_grad():
        model(torch.zeros(1, 4))                   # a check before training: eval
    model(torch.zeros(1, 4))                       # outside a step, gradients on: eval too
    for epoch in range({epochs}):
        model.train()
        for i, (x, y) in enumerate(loader):
            torch.nn.functional.mse_loss(model(x), y).backward()
            with torch.no_grad():
                model(x)                           # inside the step, no gradients: eval
            if (i + 1) % {every} == 0:
                opt.step()
                opt.zero_grad()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:                # 4 validation batches an epoch
                model(x)
    loader.remove()
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_evaluation_and_worker_start_are_named_apart(run_under, workers):
    epochs = 3
    r = run_under(TRAIN_AND_EVAL.format(workers=workers, accumulate=1, every=1, epochs=epochs))
    batches = epochs * 12
    assert r.zone("step")["count"] == batches
    assert r.zone("forward")["count"] == batches              # the training forwards only
    assert r.zone("forward.eval")["count"] == 2 + batches + epochs * 4
    assert r.zone("backward")["count"] == batches
    assert r.zone("data")["count"] == batches
    assert r.zone("data.start")["count"] == epochs            # one iter() an epoch
    assert r.zone("microstep") is None                        # one batch a step: no micro-steps
    # the evaluation inside a step stays in it, apart from the forward
    rows = r.report["steps"]["rows"]
    assert all("forward" in row["zones_self_s"] and "forward.eval" in row["zones_self_s"] for row in rows)
    assert not any("data.start" in row["zones_self_s"] for row in rows)  # it happens between steps


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("declared", [False, True])
def test_every_micro_step_is_counted(run_under, workers, declared):
    epochs = 2
    r = run_under(TRAIN_AND_EVAL.format(workers=workers, accumulate=4 if declared else None, every=4,
                                        epochs=epochs))
    batches = epochs * 12
    assert r.zone("backward")["count"] == batches
    assert r.zone("microstep")["count"] == batches            # one per backward, the first step's too
    assert r.zone("step")["count"] == r.zone("optimizer")["count"] == batches // 4
    assert [row["microsteps"] for row in r.report["steps"]["rows"]] == [4] * (batches // 4)
    assert r.zone("forward")["count"] == batches
    assert r.zone("data.start")["count"] == epochs


STREAM = """
    import torch, stepscope.torch

    class Stream(torch.utils.data.IterableDataset):   # no len(): only the end of the data says when to stop
        def __iter__(self):                            # 12 batches, split between the workers
            info = torch.utils.data.get_worker_info()
            for i in range(12) if info is None else range(info.id, 12, info.num_workers):
                g = torch.Generator().manual_seed(i)
                yield torch.randn(3, 4, generator=g), torch.randn(3, 1, generator=g)

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(Stream(), batch_size=None, num_workers={workers})
    loader = stepscope.torch.instrument(model, opt, loader, accumulation_steps={accumulate})
    for epoch in range(2):
        for i, (x, y) in enumerate(loader):
            torch.nn.functional.mse_loss(model(x), y).backward()
            if (i + 1) % {every} == 0:
                opt.step()
                opt.zero_grad()
    loader.remove()
"""


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("every", [1, 4])
def test_a_loader_without_len_counts_no_empty_step(run_under, workers, every):
    # the fetch that finds the end of an epoch opens no step: it was
    # counted as a step of its own, with a data zone and nothing else
    r = run_under(STREAM.format(workers=workers, every=every, accumulate=every))
    batches = 2 * 12
    assert r.zone("step")["count"] == r.zone("optimizer")["count"] == batches // every
    assert r.zone("data")["count"] == r.zone("forward")["count"] == batches
    rows = r.report["steps"]["rows"]
    assert all(row["zones_self_s"].keys() >= {"data", "forward", "backward", "optimizer"} for row in rows)
    assert r.counter("samples")["total"] == 3 * batches
    if every > 1:
        assert r.zone("microstep")["count"] == batches
        assert [row["microsteps"] for row in rows] == [every] * (batches // every)
    threads = [t for p in r.report["processes"] for t in p["threads"]]
    assert not any(t["open_zones"] for t in threads)
    assert not any(t["mismatched_ends"] for t in threads)


def test_a_scheduler_made_after_instrument(run_under):
    # torch's LR schedulers wrap optimizer.step through its __func__ (and
    # 1.13's its __self__): made after instrument(), one raised
    # AttributeError on a plain function; now it wraps the instrumented
    # step and sees it called, and remove() leaves its wrapper working
    # (ours passes calls through).  What a scheduler notes of the
    # optimizer's steps is private to torch (_step_count in 1.13,
    # _opt_called in 2.x): the scheduler's own warning, an error here,
    # says whether it saw them (at a scheduler's first step), and its
    # learning rates say it stepped.
    r = run_under("""
        import warnings
        import torch, stepscope.torch
        warnings.simplefilter("error")               # the scheduler warns when it sees no optimizer step
        StepLR = torch.optim.lr_scheduler.StepLR
        def lr(sched):
            return sched.get_last_lr()[0]
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = stepscope.torch.instrument(model, opt, [(torch.ones(8, 4), torch.zeros(8, 1))] * 6)
        sched = StepLR(opt, step_size=2, gamma=0.5)
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            sched.step()
        assert abs(lr(sched) - 0.1 * 0.5 ** 3) < 1e-12, lr(sched)
        loader.remove()
        opt.step()                                    # after remove(): through both wrappers, nothing recorded
        sched.step()
        sched.step()
        assert abs(lr(sched) - 0.1 * 0.5 ** 4) < 1e-12, lr(sched)
        later = StepLR(opt, step_size=1, gamma=0.5)   # made after remove(): sees the step through ours
        opt.step()
        later.step()
        # a scheduler made before instrument() sees its steps through it
        opt2 = torch.optim.SGD(model.parameters(), lr=0.1)
        sched2 = StepLR(opt2, step_size=1, gamma=0.5)
        wrapper = vars(opt2)["step"]                  # the scheduler's
        loader = stepscope.torch.instrument(model, opt2, [(torch.ones(8, 4), torch.zeros(8, 1))] * 2)
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt2.step()
            sched2.step()
        assert abs(lr(sched2) - 0.1 * 0.5 ** 2) < 1e-12, lr(sched2)
        loader.remove()
        assert vars(opt2)["step"] is wrapper          # the scheduler's wrapper, restored
    """)
    assert r.zone("step")["count"] == r.zone("optimizer")["count"] == 8
    assert r.zone("forward")["count"] == 8


def test_a_peek_at_the_loader_does_not_decide_accumulation(run_under):
    # next(iter(loader)) for the shapes before training: its generator is
    # closed at once, ending a step of one batch with no optimizer step;
    # that used to decide "no accumulation" for the whole run
    r = run_under("""
        import torch, stepscope.torch
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = stepscope.torch.instrument(model, opt, torch.utils.data.DataLoader(data, batch_size=4))
        x0, _ = next(iter(loader))
        assert tuple(x0.shape) == (4, 4)
        for i, (x, y) in enumerate(loader):
            torch.nn.functional.mse_loss(model(x), y).backward()
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
        loader.remove()
    """)
    assert r.zone("optimizer")["count"] == 4
    assert r.zone("microstep")["count"] == 16                 # every training batch, the first step's too
    # the peek's step held only its fetch: taken back, and its batch's samples with it
    assert r.zone("step")["count"] == 4
    assert [row.get("microsteps", 0) for row in r.report["steps"]["rows"]] == [4, 4, 4, 4]
    assert r.counter("samples")["total"] == 64
    assert r.zone("data")["count"] == 17  # the peek's fetch is still a fetch


def test_a_break_before_any_forward_leaves_no_step(run_under):
    r = run_under("""
        import torch, stepscope.torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = stepscope.torch.instrument(model, opt, [(torch.ones(4, 2), torch.zeros(4, 1))] * 10)
        for i, (x, y) in enumerate(loader):
            if i == 3:
                break
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        for x, y in loader:  # a second epoch, so the break's iterator is closed before it
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        loader.remove()
    """)
    assert r.zone("step")["count"] == r.zone("optimizer")["count"] == 13
    assert r.counter("samples")["total"] == 13 * 4
    assert r.zone("data")["count"] == 14


LEFTOVER = """
    import torch, stepscope, stepscope.torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(80, 4), torch.randn(80, 1))
    loader = stepscope.torch.instrument(model, opt, torch.utils.data.DataLoader(data, batch_size=8),
                                        accumulation_steps=4)
    for epoch in range(3):
        for i, (x, y) in enumerate(loader):
            torch.nn.functional.mse_loss(model(x), y).backward()
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
    ENDING
    print("dropped", loader.dropped)
"""


@pytest.mark.parametrize("ending", ["loader.remove()", "pass  # no remove(): the process's exit"])
def test_accumulation_left_over_at_the_end(tmp_path, ending):
    # 10 batches an epoch, an optimizer step every 4 of an epoch's batches:
    # 2 batches carry into the next epoch's first step (6 batches), and 2
    # are left over at the end, never stepped
    import textwrap
    script = tmp_path / "leftover.py"
    script.write_text(textwrap.dedent(LEFTOVER.replace("ENDING", ending)))
    out = tmp_path / "out"
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-o", str(out), "--", PYTHON, str(script)],
                          cwd=str(tmp_path), env=script_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "open at the end" not in proc.stderr + proc.stdout
    assert "2 batch(es) after the last optimizer step were never stepped" in proc.stderr
    assert ("dropped 2" if ending.startswith("loader") else "dropped 0") in proc.stdout  # at exit: after the print
    r = load_report(out)
    assert r.zone("step")["count"] == r.zone("optimizer")["count"] == 6
    assert r.counter("samples")["total"] == 28 * 8  # the trained batches only
    assert r.zone("data.start")["count"] == 3
    with open(out / "steps.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6
    assert all(not row["zone:data.start:self_s"] for row in rows)  # never inside a step
    assert [int(row["counter:samples:sum"]) for row in rows] == [32, 32, 48, 32, 48, 32]


def _trace_spans(out, name):
    with open(out / "trace.json") as f:
        trace = json.load(f)
    return sorted(((e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
                   if e.get("ph") == "X" and e["name"] == name))


def test_optimizer_is_a_phase_that_its_step_ends(run_under, tmp_path):
    # On the CPU "optimizer" is a chained phase: it ends at its step's own
    # end, one timestamp (the trace's times are microseconds, to the ns);
    # accumulating, at the end of the step's last micro-step.  It is still
    # an ordinary zone everywhere, once per step.
    r = run_under("""
        import torch, stepscope.torch
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(6)]
        for x, y in stepscope.torch.instrument(model, opt, data):
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    """)
    steps, opts = _trace_spans(tmp_path / "out", "step"), _trace_spans(tmp_path / "out", "optimizer")
    assert len(steps) == len(opts) == 6
    for (s0, s1), (o0, o1) in zip(steps, opts):
        assert s0 < o0 < o1 and o1 == pytest.approx(s1, abs=0.002)
    assert r.zone("optimizer")["count"] == 6 and r.zone("optimizer")["kind"] == "zone"
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_optimizer_phase_with_accumulation(run_under, tmp_path):
    r = run_under("""
        import torch, stepscope.torch
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(12)]
        loader = stepscope.torch.instrument(model, opt, data, accumulation_steps=3)
        for i, (x, y) in enumerate(loader):
            torch.nn.functional.mse_loss(model(x), y).backward()
            if i % 3 == 2:
                opt.step()
                opt.zero_grad()
        loader.remove()
    """)
    out = tmp_path / "out"
    micros, opts = _trace_spans(out, "microstep"), _trace_spans(out, "optimizer")
    assert len(micros) == 12 and len(opts) == 4
    last_micro_ends = [m1 for i, (m0, m1) in enumerate(micros) if i % 3 == 2]
    for (o0, o1), m1 in zip(opts, last_micro_ends):
        assert o1 == pytest.approx(m1, abs=0.002)
    assert r.zone("step")["count"] == 4
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())
