#!/usr/bin/python3
"""bench_collective.py - what timing torch.distributed's collectives as
waits (stepscope/_collectives.py) costs, against the bare calls in the
same run.

One gloo rank (world size 1, on the CPU, one torch thread), so what is
measured is the call's own cost and the wrapper's, with no peer to wait
for.  Interleaved round after round:

  all_reduce bare     torch.distributed.distributed_c10d's original all_reduce of 16 floats
  all_reduce timed    torch.distributed.all_reduce with the wrapper on (a wait zone a call)
  ddp step bare       forward + backward + SGD step of a DDP model (Linear 64->64->1) made before install():
                      DDP's own C++ all-reduce, no hook
  ddp step timed      the same model shape made after install(): stepscope's hook (the default
                      reduction in Python, hand-over and completion noted) and the ddp.all_reduce wait

Timed by the wall clock, not the thread's CPU clock: part of the work is
on gloo's threads (the reduction, the hook's completion callback).
Reported: median and range over the rounds in microseconds a call, the
ratios timed / bare, each computed per round and summarised alike, and
the difference between each case's fastest round (on a busy machine, the
rounds nothing else disturbed).

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_collective.py [calls] [rounds]

Recording goes to memory; STEPSCOPE_OUT is set to "" so no report is written.
"""
import os
import socket
import sys
import time

os.environ.setdefault("STEPSCOPE_OUT", "")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed import distributed_c10d as c10d  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import stepscope  # noqa: E402
from stepscope import _collectives  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    with stepscope.zone("backward"):  # the wait's parent, as auto's backward zone
        loss.backward()
        if _collectives._dirty:
            _collectives.flush()
    opt.step()


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.manual_seed(0)
    net = lambda: torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))  # noqa: E731
    bare_model = DDP(net())
    if not _collectives.install():
        sys.exit("bench_collective: stepscope's collective timing did not install")
    timed_model = DDP(net())
    assert timed_model in _collectives._states and bare_model not in _collectives._states
    bare_opt = torch.optim.SGD(bare_model.parameters(), lr=0.01)
    timed_opt = torch.optim.SGD(timed_model.parameters(), lr=0.01)
    x, y, t = torch.randn(32, 64), torch.randn(32, 1), torch.ones(16)
    original = _collectives._original_all_reduce

    cases = {
        "all_reduce bare": lambda: original(t),
        "all_reduce timed": lambda: dist.all_reduce(t),
        "ddp step bare": lambda: ddp_step(bare_model, bare_opt, x, y),
        "ddp step timed": lambda: ddp_step(timed_model, timed_opt, x, y),
    }
    names = list(cases)
    per = {n: [] for n in names}
    with stepscope.zone("bench"):
        for name in names:  # warm up
            for _ in range(calls // 10):
                cases[name]()
        for r in range(rounds):
            for k in range(len(names)):
                name = names[(r + k) % len(names)]
                fn = cases[name]
                t0 = time.perf_counter_ns()
                for _ in range(calls):
                    fn()
                per[name].append((time.perf_counter_ns() - t0) / calls / 1e3)

    def summary(v):
        v = sorted(v)
        return v[len(v) // 2], v[0], v[-1]

    print("bench_collective: %d rounds x %d calls per case, interleaved, wall time (us a call: median, range)"
          % (rounds, calls))
    for name in names:
        print("  %-18s %8.2f us   [%.2f .. %.2f]" % ((name,) + summary(per[name])))
    for what in ("all_reduce", "ddp step"):
        ratios = [a / b for a, b in zip(per[what + " timed"], per[what + " bare"])]
        print("%s timed / bare: %.3fx   [%.3f .. %.3f]" % ((what,) + summary(ratios)))
        # on a busy machine the fastest rounds are the ones nothing else disturbed
        best_t, best_b = min(per[what + " timed"]), min(per[what + " bare"])
        print("%s fastest rounds: timed %.2f us - bare %.2f us = %+.2f us a call (%.3fx)"
              % (what, best_t, best_b, best_t - best_b, best_t / best_b))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
