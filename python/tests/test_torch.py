"""stepscope.torch.instrument and examples/torch_train.py: the zones, the
step and micro-step structure, the samples counted, undoing it, and bad
arguments."""
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
    assert r.zone("microstep")["count"] == 9
    assert r.zone("data")["count"] == 12
    assert r.counter("samples")["total"] == 36


def test_remove_undoes_everything(run_under):
    r = run_under("""
        import torch, stepscope.torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        backward, step = torch.Tensor.backward, opt.step
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
    # the CPU zones of both loops, once per call
    for name in ("step",) + PHASES:
        assert r.zone(name)["count"] == 10, name
    assert r.report["cuda"]["zones_resolved"] == 15


def test_gpu_argument():
    import stepscope.torch
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="gpu must be None, True or False"):
        stepscope.torch.instrument(model, opt, [], gpu="yes")
    loader = stepscope.torch.instrument(model, opt, [])
    assert loader._gpu is False  # CPU parameters
    loader.remove()
