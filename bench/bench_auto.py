#!/usr/bin/python3
"""bench_auto.py - what the zero-code auto-instrumentation (stepscope._auto)
costs a training step.

The same small training loop (a DataLoader over a TensorDataset, batches of
32, the model, cross-entropy, loss.backward(), SGD with momentum,
zero_grad(); CPU, one torch thread) for two models:

  mlp   Linear 64->128, Tanh, Linear 128->10 (3 submodules)
  cnn   5 x (Conv2d 3x3, BatchNorm2d, ReLU), Flatten, Linear, ReLU, Linear
        on 1x8x8 inputs (20 submodules)

run four ways, round after round interleaved, each round starting with
the next variant (install() and _auto._remove() switch the patches on and
off between rounds):

  bare          the loop as written, nothing patched
  auto          stepscope._auto installed, recording (the model found in
                the first step's discovery window, its own hooks after)
  hooks only    the same, with the library's part skipped on this thread
                (stepscope._stepscope._calibrate: the hooks do all their
                Python work, nothing is recorded)
  global hooks  auto with the discovery window never closed: torch's
                global module hooks on every submodule call, the design
                auto avoids (to show what it would cost)
  pass through  no stepscope: the methods auto wraps wrapped by functions
                that only call the original, and a forward pre-hook and
                hook on the model that do nothing (the floor of any
                instrumentation made of Python wrappers and hooks)

Each part of a step (fetch, forward, loss, backward, optimizer step,
zero_grad) is timed on its own; a variant's cost per part is its median
less the bare loop's median, and its cost per step the sum over the parts
(a busy machine moves whole steps by more than the hooks cost, while the
median of each part holds still).  The first two steps of each round
(install's discovery) are left out of every variant.  Ranges are the
lowest and highest of the per-round medians.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_auto.py [steps] [rounds]

Recording goes to memory; STEPSCOPE_OUT is set to "" so no report is written.
The target (docs/python.md): at most 20 µs a step for the five zones.
"""
import os
import sys
import time

os.environ.setdefault("STEPSCOPE_OUT", "")
import torch  # noqa: E402

from stepscope import _auto, _stepscope  # noqa: E402

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
SKIP = 2
PARTS = ("data", "forward", "loss", "backward", "step", "zero_grad")


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def make_model(kind):
    if kind == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(), torch.nn.Linear(128, 10)), (64,)
    layers = []
    for i in range(5):
        layers += [torch.nn.Conv2d(1 if i == 0 else 4, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU()]
    layers += [torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)]
    return torch.nn.Sequential(*layers), (1, 8, 8)


def bench(kind):
    torch.manual_seed(0)
    model, shape = make_model(kind)
    submodules = sum(1 for _ in model.modules()) - 1
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    data = torch.utils.data.TensorDataset(torch.randn(32 * STEPS, *shape), torch.randint(0, 10, (32 * STEPS,)))
    loader = torch.utils.data.DataLoader(data, batch_size=32)
    loss_fn = torch.nn.CrossEntropyLoss()
    clock = time.perf_counter_ns

    def loop(parts):
        fetch = iter(loader)
        i = 0
        while True:
            t0 = clock()
            try:
                x, y = next(fetch)
            except StopIteration:
                return
            t1 = clock()
            out = model(x)
            t2 = clock()
            loss = loss_fn(out, y)
            t3 = clock()
            loss.backward()
            t4 = clock()
            opt.step()
            t5 = clock()
            opt.zero_grad()
            t6 = clock()
            if i >= SKIP:
                for p, t in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
                    p.append(t)
            i += 1

    def auto(parts, calibrate=False, global_hooks=False):
        assert _auto.install()
        close = _auto._close_discovery
        if global_hooks:
            _auto._close_discovery = lambda: None
        try:
            _stepscope._calibrate(True)  # counts what the hooks begin, from zero
            if not calibrate:
                _stepscope._calibrate(False)
            loop(parts)
            return _stepscope._calibrate(False)[3]
        finally:
            _auto._close_discovery = close
            _auto._remove()

    def pass_through(parts):
        wrapped = []

        def wrap(owner, name):
            original = vars(owner)[name]

            def call(*args, **kwargs):
                return original(*args, **kwargs)
            setattr(owner, name, call)
            wrapped.append((owner, name, original))

        wrap(torch.Tensor, "backward")
        wrap(type(opt), "step")
        wrap(torch.optim.Optimizer, "zero_grad")
        wrap(torch.utils.data.dataloader._BaseDataLoaderIter, "__next__")
        hooks = [model.register_forward_pre_hook(lambda module, inputs: None),
                 model.register_forward_hook(lambda module, inputs, output: None)]
        try:
            loop(parts)
        finally:
            for owner, name, original in wrapped:
                setattr(owner, name, original)
            for hook in hooks:
                hook.remove()

    variants = {"bare": loop,
                "auto": auto,
                "hooks only": lambda parts: auto(parts, calibrate=True),
                "global hooks": lambda parts: auto(parts, global_hooks=True),
                "pass through": pass_through}
    # per variant, per round, per part: the samples
    times = {label: [] for label in variants}
    zones = 0
    loop([[] for _ in PARTS])  # warm up
    labels = list(variants)
    for r in range(ROUNDS):
        # each round starts with the next variant: none is always first
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:
            run = variants[label]
            parts = [[] for _ in PARTS]
            got = run(parts)
            times[label].append(parts)
            if label == "hooks only":
                zones = got / STEPS

    print("\n%s (%d submodules): %d steps a round, %d interleaved rounds; median µs per part of a step "
          "(all rounds' steps), [range of the per-round medians]" % (kind, submodules, STEPS, ROUNDS))
    print("%-13s %s %9s %9s  %s" % ("", " ".join("%9s" % p for p in PARTS), "sum", "- bare", "range - bare"))

    def pooled(label, k):
        return median([t for rnd in times[label] for t in rnd[k]]) / 1e3

    def per_round_sums(label):
        return [sum(median(rnd[k]) for k in range(len(PARTS))) / 1e3 for rnd in times[label]]

    bare_parts = [pooled("bare", k) for k in range(len(PARTS))]
    bare = sum(bare_parts)
    bare_rounds = per_round_sums("bare")
    cost = {}
    for label in variants:
        parts = [pooled(label, k) for k in range(len(PARTS))]
        cost[label] = sum(parts) - bare
        diffs = [a - b for a, b in zip(per_round_sums(label), bare_rounds)]
        print("%-13s %s %9.2f %+9.2f  [%+.2f, %+.2f]" % (label, " ".join("%9.2f" % p for p in parts), sum(parts),
                                                          cost[label], min(diffs), max(diffs)))
    per_zone = {p: pooled("auto", k) - bare_parts[k] for k, p in enumerate(PARTS)}
    print("auto per part (median - bare's): " + ", ".join("%s %+.2f" % kv for kv in per_zone.items()) + " µs")
    print("auto costs a step %.2f µs (%.2f%% of the bare step's %.2f µs; ratio auto/bare %.3f): hooks' Python "
          "work %.2f µs, the library's %.2f µs; %.0f zones, steps and micro-steps begun by the hooks a step"
          % (cost["auto"], 100 * cost["auto"] / bare, bare, (bare + cost["auto"]) / bare, cost["hooks only"],
             cost["auto"] - cost["hooks only"], zones))
    print("global module hooks on every submodule call instead would cost %.2f µs a step (%.1fx auto's)"
          % (cost["global hooks"], cost["global hooks"] / cost["auto"] if cost["auto"] > 0 else float("nan")))
    print("wrappers and hooks that only pass the calls through cost %.2f µs a step" % cost["pass through"])
    return cost["auto"]


def main():
    torch.set_num_threads(1)
    print("python %s, torch %s" % (sys.version.split()[0], torch.__version__))
    costs = [bench(kind) for kind in ("mlp", "cnn")]
    print("\ntarget: at most 20 µs a step for the five zones: mlp %.2f µs, cnn %.2f µs" % tuple(costs))


if __name__ == "__main__":
    main()
