"""stepscope._auto: the zero-code PyTorch instrumentation.  Each script
calls install() itself (as `stepscope run`'s startup hook does) and runs
under `stepscope run`; the report's zones, step rows, values and
processes are checked exactly."""
import json

import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed")

INSTALL = """
import torch, stepscope._auto
assert stepscope._auto.install()
torch.manual_seed(0)
"""

LOOP = INSTALL + """
model = MODEL
opt = OPT(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(32, *SHAPE), torch.randn(32, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=WORKERS)
for epoch in range(2):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(repr(loss.item()))
with torch.no_grad():
    model(x)
"""

MLP = "torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))"
CNN = """torch.nn.Sequential(
    *[m for i in range(5) for m in (torch.nn.Conv2d(1 if i == 0 else 4, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                                    torch.nn.ReLU())],
    torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))"""


def loop(model=MLP, shape="4,", opt="torch.optim.SGD", workers=0):
    return (LOOP.replace("MODEL", model).replace("OPT", opt).replace("SHAPE", "(%s)" % shape)
            .replace("WORKERS", str(workers)))


def zone_counts(r):
    return {z["name"]: z["count"] for z in r.report["zones"]}


def rows(r):
    return r.report["steps"]["rows"]


def check_plain_loop(r, **more):
    """2 epochs of 4 batches: 8 steps, the five zones in each; zero_grad()
    after step() is in the next step (the epoch's last in the step taken
    back at its end)."""
    assert zone_counts(r) == dict({"step": 8, "data": 8, "forward": 8, "backward": 8, "optimizer": 8,
                                   "optimizer.zero_grad": 8, "data.start": 2, "forward.eval": 1}, **more)
    each = ["backward", "data", "forward", "optimizer"]
    assert [sorted(row["zones_self_s"]) for row in rows(r)] == ([each] + [each + ["optimizer.zero_grad"]] * 3) * 2
    assert [row.get("microsteps", 0) for row in rows(r)] == [0] * 8
    # the loss recorded in each step is the one the script computed
    printed = [float(line) for line in r.stdout.split()]
    assert [row["values"]["loss"] for row in rows(r)] == printed
    assert [row["counters"]["samples"] for row in rows(r)] == [8] * 8


@pytest.mark.parametrize("opt", ["torch.optim.SGD", "torch.optim.Adam", "torch.optim.AdamW"])
def test_a_plain_loop_with_each_optimizer(run_under, opt):
    check_plain_loop(run_under(loop(opt=opt)))


def test_a_cnn_of_twenty_submodules_is_one_forward(run_under):
    r = run_under(loop(model=CNN, shape="1, 6, 6"))
    check_plain_loop(r)


def test_the_script_computes_and_prints_the_same(run_under, run_alone):
    code = loop()
    plain = run_alone(code.replace("assert stepscope._auto.install()", "pass"))
    r = run_under(code)
    assert r.stdout == plain.stdout and len(plain.stdout.split()) == 8
    assert r.proc.stderr == ""


def test_global_hooks_only_until_the_model_is_found(run_under):
    r = run_under(INSTALL + """
        import torch.nn.modules.module as mm
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        loss_fn = torch.nn.MSELoss()  # no parameters: not a model
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        windows = []
        for i in range(3):
            windows.append(len(mm._global_forward_pre_hooks))
            loss_fn(model(x), y).backward()
            opt.step()
            opt.zero_grad()
        windows.append(len(mm._global_forward_pre_hooks))
        late = torch.nn.Linear(4, 1)          # a model made after the window closed
        opt2 = torch.optim.SGD(late.parameters(), lr=0.01)
        for i in range(3):
            loss_fn(late(x), y[:, :1]).backward()  # its first step has a backward and no forward
            opt2.step()
            opt2.zero_grad()
        print(windows, len(mm._global_forward_pre_hooks))
    """.replace("\n        ", "\n"))
    assert r.stdout.split("\n")[0] == "[1, 0, 0, 0] 0"
    counts = zone_counts(r)
    # no DataLoader: the steps open at the forward; the late model is found
    # from its second step on
    assert counts["step"] == 6 and counts["backward"] == 6 and counts["forward"] == 5
    assert "data" not in counts and "forward.eval" not in counts


def test_gradient_accumulation_makes_micro_steps(run_under):
    r = run_under(INSTALL + """
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(36, 4), torch.randn(36, 1)),
                                             batch_size=3)
        for i, (x, y) in enumerate(loader):
            (torch.nn.functional.mse_loss(model(x), y) / 3).backward()
            if i % 3 == 2:
                opt.step()
                opt.zero_grad()
    """.replace("\n        ", "\n"))
    counts = zone_counts(r)
    assert counts["step"] == 4 and counts["microstep"] == 12
    assert [row.get("microsteps", 0) for row in rows(r)] == [3, 3, 3, 3]
    assert counts["data"] == 12 and counts["forward"] == 12 and counts["backward"] == 12
    assert [row["counters"]["samples"] for row in rows(r)] == [9] * 4


def _trace_spans(out, name):
    with open(out / "trace.json") as f:
        trace = json.load(f)
    return sorted(((e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
                   if e.get("ph") == "X" and e["name"] == name))


def test_the_optimizer_step_is_a_phase_that_its_step_ends(run_under, tmp_path):
    # On the CPU the optimizer's step() is a chained phase: it ends at its
    # step's own end, one timestamp (the trace's times are microseconds, to
    # the ns); zero_grad()'s "optimizer.zero_grad", in the next step
    # (opened as this one ended), is a zone of its own.  Both are ordinary
    # zones in every output.
    r = run_under(loop())
    check_plain_loop(r)
    out = tmp_path / "out"
    steps, opts = _trace_spans(out, "step"), _trace_spans(out, "optimizer")
    zeros = _trace_spans(out, "optimizer.zero_grad")
    assert len(steps) == len(opts) == len(zeros) == 8
    for (s0, s1), (o0, o1) in zip(steps, opts):
        assert s0 <= o0 and o1 == pytest.approx(s1, abs=0.002)
    assert not any(z1 == pytest.approx(s1, abs=0.002) for z0, z1 in zeros for s0, s1 in steps)
    assert r.zone("optimizer")["kind"] == r.zone("optimizer.zero_grad")["kind"] == "zone"
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_with_accumulation_the_optimizer_phase_ends_with_the_last_micro_step(run_under, tmp_path):
    r = run_under(INSTALL + """
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(12):
            (model(torch.randn(3, 4)).sum() / 3).backward()
            if i % 3 == 2:
                opt.step()
                opt.zero_grad()
    """.replace("\n        ", "\n"))
    out = tmp_path / "out"
    micros, opts = _trace_spans(out, "microstep"), _trace_spans(out, "optimizer")
    assert len(micros) == 12 and len(opts) == 4
    step_opts = [o for o in opts if any(o[1] == pytest.approx(m1, abs=0.002) for m0, m1 in micros)]
    assert [o1 for o0, o1 in step_opts] == pytest.approx([m1 for m0, m1 in micros[2::3]], abs=0.002)
    assert zone_counts(r)["step"] == 4
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_a_gan_steps_once_per_optimizer(run_under):
    # D then G each iteration: each optimizer step ends a step, so an
    # iteration is two steps (the docs say so)
    r = run_under(INSTALL + """
        D = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        G = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
        opt_g = torch.optim.SGD(G.parameters(), lr=1e-3)
        bce = torch.nn.BCEWithLogitsLoss()
        loader = torch.utils.data.DataLoader(torch.randn(20, 2), batch_size=5)
        for real in loader:
            fake = G(torch.randn(5, 3))
            d_loss = bce(D(real), torch.ones(5, 1)) + bce(D(fake.detach()), torch.zeros(5, 1))
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = bce(D(fake), torch.ones(5, 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            print(repr(d_loss.item()), repr(g_loss.item()))
    """.replace("\n        ", "\n"))
    counts = zone_counts(r)
    assert counts["step"] == 8 and counts["backward"] == 8 and counts["data"] == 4
    assert counts["forward"] == 4 * 4 and counts["optimizer"] == counts["optimizer.zero_grad"] == 8
    printed = [float(v) for v in r.stdout.split()]
    assert [row["values"]["loss"] for row in rows(r)] == printed
    assert [sorted(row["zones_self_s"]) for row in rows(r)] == [
        ["backward", "data", "forward", "optimizer", "optimizer.zero_grad"],
        ["backward", "forward", "optimizer", "optimizer.zero_grad"]] * 4


# An unmodified script (no install(): `stepscope run`'s startup hook does
# it): 2 epochs of 5 batches, zero_grad() at the top of each iteration.
UNMODIFIED = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = OPT(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(40, 4), torch.randn(40, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=WORKERS)
for epoch in range(2):
    for x, y in loader:
        ZERO_GRAD
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
"""


@pytest.mark.parametrize("opt,workers,zero_grad,zero_grads", [
    ("torch.optim.SGD", 0, "opt.zero_grad(set_to_none=True)", 10),
    ("torch.optim.SGD", 2, "opt.zero_grad(set_to_none=False)", 10),
    ("torch.optim.Adam", 2, "opt.zero_grad(set_to_none=True)", 10),
    ("torch.optim.Adam", 0, "opt.zero_grad()", 10),
    # a model's zero_grad() is timed once the forward found the model: the
    # first, before the first forward, is not
    ("torch.optim.SGD", 2, "model.zero_grad()", 9),
    ("torch.optim.Adam", 0, "pass", 0),
])
def test_optimizer_counts_one_a_step_and_zero_grad_apart(run_under, opt, workers, zero_grad, zero_grads):
    # "optimizer" is the optimizer's step() alone, one a step (as with
    # instrument), whatever the optimizer, the loader's workers (forked:
    # they record their fetches, no optimizer) and the zero_grad() done;
    # zero_grad() is "optimizer.zero_grad", counted on its own
    r = run_under(UNMODIFIED.replace("OPT", opt).replace("WORKERS", str(workers)).replace("ZERO_GRAD", zero_grad))
    counts = zone_counts(r)
    assert r.report["auto"]["state"] == "active"
    assert r.report["steps"]["count"] == counts["step"] == 10
    assert counts["optimizer"] == 10
    assert counts.get("optimizer.zero_grad", 0) == zero_grads
    assert counts.get("data.fetch", 0) == (10 if workers else 0)
    assert len(r.report["processes"]) == 1 + (4 if workers else 0)  # two workers an epoch
    assert ["optimizer" in row["zones_self_s"] for row in rows(r)] == [True] * 10


def test_worker_processes_record_their_fetches(run_under):
    r = run_under(loop(workers=2))
    check_plain_loop(r, **{"data.fetch": 8})  # 4 batches x 2 epochs, each fetched once by a worker
    main_pid = rows(r)[0]["pid"]
    workers = [p for p in r.report["processes"] if p["pid"] != main_pid]
    assert len(workers) == 4  # two per epoch, each fetching every other batch
    assert [sum(t["events"]["zones"]["recorded"] for t in p["threads"]) for p in workers] == [2] * 4
    assert {p["ppid"] for p in workers} == {main_pid}


def test_ddp_world_size_one(run_under, tmp_path):
    r = run_under(INSTALL + """
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method="file://%s", rank=0, world_size=1)
        inner = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        model = torch.nn.parallel.DistributedDataParallel(inner)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(24, 4), torch.randn(24, 1)),
                                             batch_size=8)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        with torch.no_grad():
            inner(x)  # the wrapped module alone is a model of its own
        dist.destroy_process_group()
    """.replace("\n        ", "\n") % (tmp_path / "store"))
    # DDP's gradient all-reduce: a wait inside each backward (docs/distributed.md)
    assert zone_counts(r) == {"step": 3, "data": 3, "forward": 3, "backward": 3, "optimizer": 3,
                              "optimizer.zero_grad": 3, "data.start": 1, "ddp.all_reduce": 3}
    assert r.zone("ddp.all_reduce")["kind"] == "wait"
    # one rank: no clock offset to measure, and no failure to report
    assert [p["clock_sync"] for p in r.report["processes"]] == [None]


def test_evaluation_is_named_apart(run_under):
    r = run_under(INSTALL + """
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 1)),
                                            batch_size=4)
        val = torch.utils.data.DataLoader(torch.randn(12, 4), batch_size=4)
        for epoch in range(2):
            for x, y in train:
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                opt.zero_grad()
            with torch.no_grad():
                for x in val:
                    model(x)
        with torch.inference_mode():
            model(x)
    """.replace("\n        ", "\n"))
    counts = zone_counts(r)
    assert counts["step"] == 8 and counts["forward"] == 8
    assert counts["forward.eval"] == 2 * 3 + 1
    assert counts["data"] == 8 + 6 and counts["data.start"] == 4
    assert all(row["counters"]["samples"] == 4 for row in rows(r))


def test_a_crash_leaves_the_steps_that_ended(run_under):
    r = run_under(INSTALL + """
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(10):
            loss = model(torch.randn(2, 4)).sum()
            if i == 3:
                raise SystemExit("boom")
            loss.backward()
            opt.step()
    """.replace("\n        ", "\n"), expect_rc=1)
    assert "boom" in r.proc.stderr
    counts = zone_counts(r)
    assert counts["step"] == 3 and counts["backward"] == 3 and counts["forward"] == 4


def test_the_script_instrumenting_itself_makes_auto_stand_aside(run_under):
    r = run_under(INSTALL + """
        import stepscope.torch
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        backward = torch.Tensor.backward
        data = [(torch.randn(2, 4), torch.randn(2, 1))] * 3
        model(data[0][0]).sum().backward()   # auto's step, taken back when it stands aside
        loader = stepscope.torch.instrument(model, opt, data)
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        loader.remove()
        assert torch.Tensor.backward is backward.__wrapped__
        assert not stepscope._auto.installed() and not stepscope._auto.install()
    """.replace("\n        ", "\n"))
    assert r.proc.stderr == ("stepscope: auto-instrumentation stands aside: "
                             "the script calls stepscope.torch.instrument() at train.py:12\n")
    counts = zone_counts(r)
    assert counts["step"] == 3 and counts["forward"] == 4 and counts["backward"] == 4


def test_an_error_in_a_hook_turns_auto_off_and_never_reaches_the_script(run_under):
    r = run_under(INSTALL + """
        def broken(name, value):  # the loss's record() in the backward hook
            raise ValueError("on purpose")
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(4):
            if i == 2:
                stepscope._auto._record = broken
            loss = model(torch.ones(2, 4)).sum()
            loss.backward()
            opt.step()
            # before zero_grad(), which empties grads to None on torch >= 2.0
            print(model.weight.grad is None, repr(loss.item()))
            opt.zero_grad()
        print(stepscope._auto.installed())
    """.replace("\n        ", "\n"))
    assert r.proc.stderr == ("stepscope: auto-instrumentation turned itself off: "
                             "an error in its hooks (ValueError: on purpose)\n")
    lines = r.stdout.split("\n")
    assert [line.split()[0] for line in lines[:4]] == ["False"] * 4 and lines[4] == "False"
    counts = zone_counts(r)
    assert counts["step"] == 2 and counts["backward"] == 2 and counts["forward"] == 3


def test_host_to_device_copies_and_a_loss_on_a_device(run_under):
    # the meta device stands in for a GPU: STEPSCOPE_AUTO_H2D=1 forces the
    # copy wrappers on a machine without CUDA
    r = run_under(INSTALL + """
        x = torch.randn(8, 4)
        a = x.to("meta")
        b = x.to(torch.float64)          # not a copy to a device
        c = x.to(device="meta", dtype=torch.float16)
        d = a.to("meta")                 # already on the device
        w = torch.randn(4, 1, device="meta", requires_grad=True)
        (a @ w).sum().backward()
        print(a.device, b.device, c.dtype)
    """.replace("\n        ", "\n"), STEPSCOPE_AUTO_H2D="1")
    assert r.stdout == "meta cpu torch.float16\n"
    counts = zone_counts(r)
    assert counts["h2d"] == 2 and counts["backward"] == 1
    assert r.value("loss") is None and r.counter("loss.on_device")["total"] == 1


# torch 2.x's global optimizer step hooks, as its step() wrapper calls
# them (torch.optim.Optimizer.profile_hook_step, put on an optimizer's
# class at its first instance): the post-hooks run only when step()
# returns.  On a torch without them (1.13) the test installs them so,
# before auto looks for them (under --no-auto, so that the script's
# install() is the one); on torch 2.x they are torch's own.
TORCH2_STEP_HOOKS = """
import collections, functools, torch.optim.optimizer as _om
if not hasattr(_om, "register_optimizer_step_pre_hook"):
    _pre, _post = collections.OrderedDict(), collections.OrderedDict()
    class _Handle:
        def __init__(self, hooks, hook):
            self.hooks, self.key = hooks, object()
            hooks[self.key] = hook
        def remove(self):
            self.hooks.pop(self.key, None)
    _om.register_optimizer_step_pre_hook = lambda hook: _Handle(_pre, hook)
    _om.register_optimizer_step_post_hook = lambda hook: _Handle(_post, hook)
    def _hooked(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            for hook in list(_pre.values()):
                hook(self, args, kwargs)
            out = func(*args, **kwargs)
            for hook in list(_post.values()):
                hook(self, args, kwargs)
            return out
        wrapper.hooked = True   # torch 1.13's own profile wrapper then stays off
        return wrapper
    _init = torch.optim.Optimizer.__init__
    def _patch_step_function(self, *args, **kwargs):
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked(cls.step)
        _init(self, *args, **kwargs)
    torch.optim.Optimizer.__init__ = _patch_step_function
"""
HOOKS = pytest.mark.parametrize("hooks", ["", TORCH2_STEP_HOOKS], ids=["this torch", "torch 2.x step hooks"])


@HOOKS
def test_an_exception_of_the_script_goes_through_unchanged(run_under, hooks):
    # a forward that raises (torch 1.13 runs no forward hook then; 2.1 and
    # later run the always_call one from its except block) and an optimizer
    # step that raises (torch 2.x then runs no post-hook): the script
    # catches both, as it would without auto, and the steps after them are
    # whole
    run_args = ("--no-auto",) if hooks else ()
    r = run_under("import torch\n" + hooks + INSTALL + """
        class Flaky(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 1)
                self.calls = 0
            def forward(self, x):
                self.calls += 1
                if self.calls == 2:
                    raise ValueError("forward %d" % self.calls)
                return self.lin(x)
        model = Flaky()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(4):
            try:
                loss = model(torch.ones(2, 4)).sum()
            except ValueError as e:
                print(e)
                continue
            loss.backward()
            try:
                opt.step(closure=1) if i == 2 else opt.step()
            except TypeError as e:
                print(type(e).__name__)
            opt.zero_grad()
    """.replace("\n        ", "\n"), run_args=run_args)
    assert r.stdout == "forward 2\nTypeError\n"
    assert r.proc.stderr == ""
    counts = zone_counts(r)
    # steps 0, 2 (its step() raised: still an optimizer step called) and 3;
    # three steps and three zero_grad()s
    assert counts["step"] == 3 and counts["backward"] == 3 and counts["forward"] == 3
    assert counts["optimizer"] == counts["optimizer.zero_grad"] == 3


def test_threads_each_have_their_steps(run_under):
    # two threads train a model each: forward is the outermost call per
    # thread, and each thread's optimizer steps end that thread's steps.
    # Both first forwards come before either step ends, in the discovery
    # window (a model first called after it closed would be found by the
    # rediscovery after its first step: one forward fewer)
    r = run_under(INSTALL + """
        import threading
        first = threading.Barrier(2)
        def train(n):
            model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            for i in range(n):
                out = model(torch.ones(2, 4))
                if i == 0:
                    first.wait()
                out.sum().backward()
                opt.step()
                opt.zero_grad()
        threads = [threading.Thread(target=train, args=(n,)) for n in (3, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    """.replace("\n        ", "\n"))
    counts = zone_counts(r)
    assert counts["step"] == 8 and counts["forward"] == 8 and counts["backward"] == 8
    per_thread = {}
    for row in rows(r):
        per_thread[row["tid"]] = per_thread.get(row["tid"], 0) + 1
    assert sorted(per_thread.values()) == [3, 5]


@pytest.mark.parametrize("workers", [0, 2])
def test_the_example_as_an_unmodified_script(tmp_path, workers):
    # examples/torch_train.py --plain makes no stepscope call; install()
    # comes from a launcher, as stepscope run's startup hook calls it
    import subprocess
    from conftest import EXAMPLE_LAUNCH, PYTHON, ROOT, STEPSCOPE_BIN, load_report, script_env
    out = tmp_path / "out"
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", "-o", str(out), "--", PYTHON, "-c", EXAMPLE_LAUNCH,
                           str(ROOT / "examples" / "torch_train.py"), "--plain", "--epochs", "2",
                           "--workers", str(workers)],
                          env=script_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    r = load_report(out)
    counts = zone_counts(r)
    # 2 x 1024 points in batches of 64: 32 optimizer steps an epoch; the
    # evaluation after each epoch and at the end is forward.eval
    expected = {"step": 64, "data": 64, "forward": 64, "backward": 64, "optimizer": 64, "optimizer.zero_grad": 64,
                "data.start": 2, "forward.eval": 3}
    if workers:
        expected["data.fetch"] = 64
    assert counts == expected
    assert r.counter("samples")["total"] == 2 * 2048
    lines = proc.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [["epoch", "0"], ["epoch", "1"], ["final", "loss"]]
    # the last epoch's last loss, printed with 4 digits, is the last recorded
    last = float(proc.stdout.splitlines()[1].split()[3])
    assert round(rows(r)[-1]["values"]["loss"], 4) == last


def test_a_model_saved_or_copied_carries_no_hook_of_auto(run_under, tmp_path):
    import subprocess
    from conftest import PYTHON, script_env
    saved = tmp_path / "model.pt"
    r = run_under(INSTALL + """
        import copy
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(2):
            model(torch.ones(2, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
        assert len(model._forward_pre_hooks) == 1 and len(model._forward_hooks) == 1  # auto's
        torch.save(model, %r)
        ema = copy.deepcopy(model)
        print(len(ema._forward_pre_hooks), len(ema._forward_hooks), len(model._forward_pre_hooks))
        with torch.no_grad():
            ema(torch.ones(2, 4))  # not found: the window closed with the first step
    """.replace("\n        ", "\n") % str(saved))
    assert r.stdout == "0 0 1\n"
    counts = zone_counts(r)
    assert counts["step"] == 2 and counts["forward"] == 2 and "forward.eval" not in counts
    # loaded where stepscope cannot be imported; a whole module needs the
    # full unpickler, which torch 2.6 and later keep behind weights_only=False
    env = {k: v for k, v in script_env().items() if k != "PYTHONPATH"}
    load = ("import inspect, torch\n"
            "full = {'weights_only': False} if 'weights_only' in inspect.signature(torch.load).parameters else {}\n"
            "m = torch.load(%r, **full)\n"
            "print(len(m._forward_pre_hooks), m(torch.ones(1, 4)).shape)" % str(saved))
    proc = subprocess.run([PYTHON, "-c", load], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "0 torch.Size([1, 1])\n"


def test_copies_are_wrapped_once_cuda_is_in_use(run_under):
    # torch.cuda.is_initialized() stands in for a script that moved its
    # model to a GPU: from the next DataLoader iter() on, copies to a device
    # are timed (the meta device in a GPU's place); before, nothing is
    # wrapped, and torch.cuda.is_available() is never called
    r = run_under(INSTALL + """
        to = torch.Tensor.to
        torch.cuda.is_available = lambda: 1 / 0
        loader = torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=4)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        def epoch():
            for x in loader:
                x.to("meta")
                model(x).sum().backward()
                opt.step()
        epoch()
        print(torch.Tensor.to is to)
        stepscope._auto._cuda_initialized = lambda: True
        epoch()
        print(torch.Tensor.to is to, [loop.gpu for loop in stepscope._auto._loops])
    """.replace("\n        ", "\n"))
    assert r.stdout == "True\nFalse [None]\n"
    counts = zone_counts(r)
    assert counts["h2d"] == 2 and counts["step"] == 4


@HOOKS
def test_an_optimizer_class_defined_after_install(run_under, hooks):
    # torch 1.13: each optimizer class has its own step(); one the script
    # defines is wrapped at its first instance, its base's stays as it was.
    # torch 2.x: its step hooks run for the subclass's step() and, when
    # the base's was wrapped too, for the base's inside it: one zone
    r = run_under("import torch\n" + hooks + INSTALL + """
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)  # the base's step() wrapped first
        class Halved(torch.optim.SGD):
            def step(self, closure=None):
                for group in self.param_groups:
                    group["lr"] = group["lr"] / 2
                return super().step(closure)
        model = torch.nn.Linear(4, 1)
        opt = Halved(model.parameters(), lr=0.1)
        for i in range(3):
            model(torch.ones(2, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
        print(opt.param_groups[0]["lr"])
    """.replace("\n        ", "\n"), run_args=("--no-auto",) if hooks else ())
    assert r.stdout == "0.0125\n"
    counts = zone_counts(r)
    # Halved.step calls SGD.step: one optimizer zone, the outer call's,
    # which ends the step; zero_grad() has its own
    assert counts["step"] == 3 and counts["forward"] == 3
    assert counts["optimizer"] == counts["optimizer.zero_grad"] == 3


def test_a_closure_runs_inside_its_optimizer_step(run_under):
    # LBFGS calls the closure (a forward and a backward) inside step(): its
    # work is in the step the optimizer ends, and with torch 2.x's step
    # hooks no event inside step() takes the optimizer for one that raised
    code = INSTALL + """
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=4)
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss
        for i in range(3):
            opt.step(closure)
    """.replace("\n        ", "\n")
    counts = [zone_counts(run_under("import torch\n" + hooks + code, run_args=("--no-auto",) if hooks else ()))
              for hooks in ("", TORCH2_STEP_HOOKS)]
    assert counts[0] == counts[1]
    assert counts[0]["step"] == 3 and counts[0]["forward"] >= 3 and counts[0]["backward"] == counts[0]["forward"]


def test_the_hooks_are_counted_apart_and_priced_at_exit(run_under):
    # auto's zones are the hooks' in the record; at the exit of a process in
    # which auto ended a step it prices them (as instrument() prices its
    # own), and the measurement records nothing and leaves the steps alone
    r = run_under(loop().replace("torch.manual_seed(0)", "stepscope._auto.PRICE_AFTER_S = 0\ntorch.manual_seed(0)"))
    check_plain_loop(r)
    k = r.report["analysis"]["overhead"]["recording_by_kind"]
    # 8 steps, 8 x data, forward, backward, 16 optimizer, 2 data.start and
    # 1 forward.eval; what was taken back (the fetches that found the end,
    # the steps the last zero_grad() of each epoch opened) is not counted
    assert k["instrument_hooks"]["count"] == 8 * 4 + 16 + 2 + 1
    assert k["python_zones"]["count"] == 0
    # auto's loss values are the hooks' work too: not priced as the script's record() calls
    assert k["values"]["count"] == 8 + 8 and k["python_values"]["count"] == 0  # 8 losses, 8 sample counts
    assert k["instrument_hooks"]["cost_ns"] > 0
    assert r.zone("stepscope.cost_probe") is None
    # a run shorter than PRICE_AFTER_S is left unpriced rather than slowed
    short = run_under(loop())
    assert short.report["analysis"]["overhead"]["recording_by_kind"]["instrument_hooks"]["cost_ns"] is None


def test_the_pricing_bare_rounds_run_no_hook_under_torch2_step_hooks(run_under):
    # torch 2.x's global optimizer step hooks stay registered while auto is
    # off; the pricing's bare rounds (auto off) must be bare there too, or
    # their optimizer steps pay for auto's step bookkeeping and the hooks'
    # price comes out at zero or below (unpriced: torch 2.11 on an H200).
    # Only the hooked rounds' optimizer steps may reach auto's step hooks.
    from stepscope import _cost
    r = run_under("import torch\n" + TORCH2_STEP_HOOKS + INSTALL + """
        import stepscope._cost
        calls = [0]
        begin = stepscope._auto._Loop.optimizer_begin
        def counted(loop, *args, **kwargs):
            calls[0] += 1
            return begin(loop, *args, **kwargs)
        stepscope._auto._Loop.optimizer_begin = counted
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
        before = calls[0]
        stepscope._auto._price_hooks()
        print(before, calls[0] - before, stepscope._cost._hooks_measured)
    """.replace("\n        ", "\n"), run_args=("--no-auto",))
    assert r.stdout.split() == ["1", str(_cost._HOOK_ROUNDS * _cost._STEPS), "True"]


def test_steps_tile_a_loop_without_a_dataloader(run_under, tmp_path):
    # The optimizer's step() ends a step and opens the next at once: the
    # script's own work between two optimizer steps (a batch built by hand,
    # a sleep standing for a read from disk) is in the step it precedes, so
    # a step is an iteration, and a value the script records after step()
    # belongs to the next step.  The step open at exit is taken back.
    r = run_under(INSTALL + """
        import time, stepscope
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(5):
            x = torch.randn(8, 4)
            time.sleep(0.02)
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            stepscope.record("after_step", i)
    """.replace("\n        ", "\n"))
    assert r.proc.stderr == ""
    assert zone_counts(r)["step"] == 5
    # the last, recorded after the last step (the open step is taken back at
    # exit), falls between steps: the library gives it to the step just ended
    assert [row["values"].get("after_step") for row in rows(r)] == [None, 0, 1, 2, 4]
    steps = _trace_spans(tmp_path / "out", "step")
    assert len(steps) == 5
    # contiguous: the values above show each step open from the last
    # one's end; the steps follow each other, and each after the first
    # holds the sleep (at least 20 ms: trace times are microseconds)
    assert all(a1 <= b0 for (a0, a1), (b0, b1) in zip(steps, steps[1:]))
    assert all(s1 - s0 >= 20000 for s0, s1 in steps[1:])
    # every zone of auto's after the first step began is inside a step
    for name in ("forward", "backward", "optimizer"):
        for z0, z1 in _trace_spans(tmp_path / "out", name):
            assert any(s0 <= z0 and z1 <= s1 + 0.002 for s0, s1 in steps), (name, z0, z1)


@pytest.mark.parametrize("grad", ["torch.no_grad()", "contextlib.nullcontext()"])
def test_samples_and_steps_with_a_validation_loader_mid_epoch(run_under, grad):
    # Validation every 2 steps, over a loader of its own: its iter() and
    # its iterator's end take back the step that holds no training work
    # (with gradients on too: a forward is no training), so the rows are the
    # trained steps only and the samples are the trained batches'.
    r = run_under(INSTALL + """
        import contextlib
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(24, 4), torch.randn(24, 1)),
                                            batch_size=4)
        val = torch.utils.data.DataLoader(torch.randn(20, 4), batch_size=5)
        for epoch in range(2):
            for i, (x, y) in enumerate(train):
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                opt.zero_grad()
                if i % 2 == 1:
                    model.eval()
                    with GRAD:
                        for v in val:
                            model(v)
                    model.train()
    """.replace("\n        ", "\n").replace("GRAD", grad))
    counts = zone_counts(r)
    assert counts["step"] == 12
    assert counts["data"] == 12 + 6 * 4 and counts["data.start"] == 2 + 6
    assert [row["counters"]["samples"] for row in rows(r)] == [4] * 12
    assert r.counter("samples")["total"] == 2 * 24
    evaluated = "forward.eval" if grad == "torch.no_grad()" else "forward"
    assert counts[evaluated] == 6 * 4 + (12 if evaluated == "forward" else 0)
    # zero_grad() after step() is in the next step's row, but after an odd
    # batch in the step that the validation loader's iter() takes back
    each = ["backward", "data", "forward", "optimizer"]
    assert [sorted(row["zones_self_s"]) for row in rows(r)] == [each, each + ["optimizer.zero_grad"]] * 6


def test_micro_steps_are_decided_by_each_step(run_under):
    # a warm-up step of one backward, then steps of 4, 1 and 2 backwards:
    # a step of one round has no micro-step, a step of several one a round
    r = run_under(INSTALL + """
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for rounds in [1, 4, 4, 1, 2, 4]:
            for k in range(rounds):
                (model(torch.randn(3, 4)).sum() / rounds).backward()
            opt.step()
            opt.zero_grad()
    """.replace("\n        ", "\n"))
    assert [row.get("microsteps", 0) for row in rows(r)] == [0, 4, 4, 0, 2, 4]
    counts = zone_counts(r)
    assert counts["step"] == 6 and counts["microstep"] == 14 and counts["backward"] == 16
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_a_datasets_own_zones_in_workers_keep_auto_on(run_under):
    # In a DataLoader worker the script's zones nest inside auto's
    # data.fetch and count nothing twice: auto stays on there, silently.
    r = run_under(INSTALL + """
        import stepscope
        class Data(torch.utils.data.Dataset):
            def __len__(self):
                return 16
            def __getitem__(self, i):
                with stepscope.zone("decode"):
                    return torch.randn(4), torch.randn(1)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loader = torch.utils.data.DataLoader(Data(), batch_size=4, num_workers=2)
        for epoch in range(2):
            for x, y in loader:
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                opt.zero_grad()
    """.replace("\n        ", "\n"))
    assert r.proc.stderr == ""
    counts = zone_counts(r)
    assert counts["step"] == 8 and counts["decode"] == 2 * 16 and counts["data.fetch"] == 8
    assert r.report["steps_recorded_by"] == "auto"
    assert r.report["auto"]["state"] == "active" and r.report["auto"]["processes_stood_aside"] == 0
    assert all(p["auto"] == {"state": "active", "reason": None} for p in r.report["processes"])


def test_a_loss_the_script_records_replaces_autos(run_under):
    """From the script's own first record("loss"), auto's loss (the tensor
    backward() was called on, here half of it) is left out: the series
    holds auto's first value and then only the script's, never a mix."""
    r = run_under(INSTALL + """
        model = torch.nn.Linear(10, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(5):
            raw = model(torch.randn(16, 10)).pow(2).mean()
            (raw * 0.5).backward()
            opt.step()
            opt.zero_grad()
            stepscope.record("loss", raw.item())
            print(raw.item())
    """.replace("\n        ", "\n"))
    printed = [float(v) for v in r.stdout.split()]
    (loss,) = [v for v in r.report["values"] if v["name"] == "loss"]
    assert loss["count"] == 1 + 5
    assert abs(loss["max"] - max(printed)) < 1e-6 * max(printed)
    assert r.proc.stderr == ""


def test_a_skipped_batch_counts_no_samples(run_under):
    # a batch counts when a backward runs after its fetch, before the next:
    # the loop skips every third batch, fetched into the step that follows
    r = run_under(INSTALL + """
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(24, 4), torch.randn(24, 1)),
                                             batch_size=4)
        for i, (x, y) in enumerate(loader):
            if i % 3 == 2:
                continue
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    """.replace("\n        ", "\n"))
    assert zone_counts(r)["data"] == 6
    assert [row["counters"]["samples"] for row in rows(r)] == [4] * 4
    assert [row.get("microsteps", 0) for row in rows(r)] == [0] * 4
