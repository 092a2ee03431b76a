"""Fork children (multiprocessing workers, DataLoader workers) record into
records of their own under `stepscope run`."""
import importlib.util

import pytest


def test_multiprocessing_fork_workers(run_under):
    r = run_under("""
        import multiprocessing as mp, os, stepscope

        def work(i):
            with stepscope.zone("work"):
                stepscope.count("items")
            return os.getpid()

        if __name__ == "__main__":
            with stepscope.zone("parent"):
                pass
            with mp.get_context("fork").Pool(2) as pool:
                pids = set(pool.map(work, range(20), chunksize=1))
            print(len(pids))
    """)
    workers = int(r.stdout)
    assert 1 <= workers <= 2
    assert r.zone("work")["count"] == 20
    assert r.counter("items")["total"] == 20
    assert r.zone("parent")["count"] == 1
    procs = r.report["processes"]
    pids = {p["pid"] for p in procs}
    children = [p for p in procs if p["ppid"] in pids]
    assert len(children) == workers
    assert all(p["record"].endswith(".sps") for p in procs)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_dataloader_workers(run_under):
    r = run_under("""
        import torch, stepscope                 # torch first: its libraries load before ours
        from torch.utils.data import DataLoader, Dataset

        class Squares(Dataset):
            def __len__(self):
                return 16
            def __getitem__(self, i):
                with stepscope.zone("getitem"):
                    return torch.tensor([float(i * i)])

        if __name__ == "__main__":
            loader = DataLoader(Squares(), batch_size=4, num_workers=2,
                                multiprocessing_context="fork")
            total = 0.0
            for batch in loader:
                with stepscope.step():
                    with stepscope.zone("train"):
                        total += float(batch.sum())
                    stepscope.record("batch_sum", batch.sum())   # a 0-d tensor
            print(total)
    """)
    assert float(r.stdout) == sum(i * i for i in range(16))
    assert r.zone("getitem")["count"] == 16
    assert r.zone("step")["count"] == 4 and r.zone("train")["count"] == 4
    assert r.value("batch_sum")["count"] == 4
    # the workers may record before the main process does: find the main
    # process as the parent of the others, not as the first entry
    pids = {p["pid"] for p in r.report["processes"]}
    workers = [p for p in r.report["processes"] if p["ppid"] in pids]
    assert len(workers) == 2 and len(r.report["processes"]) == 3
    # each worker's getitem zones are in its own process's record
    assert all(t["mismatched_ends"] == 0 for p in r.report["processes"] for t in p["threads"])
