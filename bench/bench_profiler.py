#!/usr/bin/python3
"""bench_profiler.py - what one `with profiler.profile("x"):` block costs in a
real input loop: a torch DataLoader with 2 worker processes.

For every batch the loader yields, the loop times (perf_counter_ns around
the `with` statement, the body empty) one block of each variant, in an
order that rotates from batch to batch so that no variant always runs
first after the loader's wait:

  nothing          t0 = perf_counter_ns(); t1 = perf_counter_ns()
  zone             `with stepscope.zone("x"):`
  profile          `with prof.profile("x"):`, prof = stepscope.Profiler(),
                   the seed's defaults (track_gpu=True, memory_interval=0.5)
  profile nested   the same, inside an outer open `prof.profile("epoch")`
                   block (the sampler is already running)

Each variant is one block per batch, as a training loop's phases are.  It
prints each variant's median, its 10th-90th percentile range, its largest
and the median's ratio to the bare zone's; then the same variants in a
plain loop with no DataLoader (the cost without the workers' load).

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_profiler.py \
        [--baseline OTHER/profiler.py] [batches] [repeats]

--baseline loads another version of profiler.py (e.g. main's:
`git show main:python/stepscope/profiler.py > /tmp/main_profiler.py`)
beside this one; its blocks join the same loop, interleaved with the
others, as the "baseline profile" rows.

Recording goes to memory; STEPSCOPE_OUT is set to "" so no report is
written.  The DataLoader's dataset does a little work per item (a 64x64
matmul) so the workers are alive and busy, as in training.
"""
import importlib.util
import os
import statistics
import sys
import time

os.environ.setdefault("STEPSCOPE_OUT", "")
import stepscope  # noqa: E402


def make_loader(batches):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Work(Dataset):
        def __len__(self):
            return batches * 8

        def __getitem__(self, i):
            a = torch.full((64, 64), float(i % 7))
            return (a @ a).sum()

    return DataLoader(Work(), batch_size=8, num_workers=2)


def load_profiler_module(path):
    """profiler.py from path, as a module of the stepscope package (its
    relative import of the core works), beside the package's own."""
    spec = importlib.util.spec_from_file_location("stepscope._bench_baseline_profiler", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed_block(factory):
    pc = time.perf_counter_ns

    def block():
        t0 = pc()
        with factory("x"):
            pass
        return pc() - t0
    return block


def nothing():
    pc = time.perf_counter_ns
    t0 = pc()
    return pc() - t0


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def one_pass(loader, rows, costs, outer=()):
    """One epoch of the loader; every batch times one block of each row,
    in an order that rotates with the batch.  outer: blocks held open
    around the pass (the nested variants)."""
    for block in outer:
        block.__enter__()
    for k, _batch in enumerate(loader):
        for label, fn in rows[k % len(rows):] + rows[:k % len(rows)]:
            costs.setdefault(label, []).append(fn())
    for block in reversed(outer):
        block.__exit__(None, None, None)


def main():
    args = sys.argv[1:]
    baseline_path = None
    if args[:1] == ["--baseline"]:
        baseline_path, args = args[1], args[2:]
    batches = int(args[0]) if args else 400
    repeats = int(args[1]) if len(args) > 1 else 3
    try:
        loader = make_loader(batches)
    except ImportError as e:
        sys.exit("bench_profiler: torch is needed for its DataLoader (%s)" % e)
    profilers = [("profile", stepscope.Profiler())]
    if baseline_path:
        profilers.append(("baseline profile", load_profiler_module(baseline_path).Profiler()))
    alone = [("nothing", nothing), ("zone", timed_block(stepscope.zone))]
    alone += [(label, timed_block(p.profile)) for label, p in profilers]
    nested = [(label + " nested", timed_block(p.profile)) for label, p in profilers]
    costs = {}
    for _ in range(repeats):
        one_pass(loader, alone, costs)
        one_pass(loader, nested, costs, outer=[p.profile("epoch") for _, p in profilers])
    # the same blocks in a plain loop, no loader: the machine without the workers' load
    quiet = {}
    for _ in range(repeats):
        one_pass(range(batches), alone, quiet)
    print("python %s, torch DataLoader(num_workers=2), %d batches x %d passes (alone, then nested), one block "
          "of each variant per batch in rotating order" % (sys.version.split()[0], batches, repeats))
    print("profile: %s%s" % (stepscope.profiler.__file__,
                             "\nbaseline profile: %s" % baseline_path if baseline_path else ""))
    med = {label: statistics.median(v) for label, v in costs.items()}
    for label, values in costs.items():
        values = sorted(values)
        print("%-24s median %8.1f us   p10-p90 %8.1f - %8.1f us   max %9.1f us   %7.1fx zone   n=%d"
              % (label, med[label] / 1e3, percentile(values, 0.1) / 1e3, percentile(values, 0.9) / 1e3,
                 values[-1] / 1e3, med[label] / med["zone"], len(values)))
    for label in [label for label, _ in profilers]:
        print("%s - zone: median %.1f us alone, %.1f us nested"
              % (label, (med[label] - med["zone"]) / 1e3, (med[label + " nested"] - med["zone"]) / 1e3))
    print("without the DataLoader (a plain loop of as many blocks):")
    for label, values in quiet.items():
        values = sorted(values)
        print("  %-22s median %8.1f us   p10-p90 %8.1f - %8.1f us"
              % (label, statistics.median(values) / 1e3, percentile(values, 0.1) / 1e3,
                 percentile(values, 0.9) / 1e3))
    if baseline_path:
        print("baseline / profile: %.1fx alone, %.1fx nested"
              % (med["baseline profile"] / med["profile"], med["baseline profile nested"] / med["profile nested"]))


if __name__ == "__main__":
    main()
