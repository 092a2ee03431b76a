"""torch_loader_workload.py: a python+torch training loop fed by a
DataLoader with worker processes, for a fixed wall time: the workload
bench_sampler_share.sh measures the sampler's own CPU share under.

    stepscope run -- /usr/bin/python3 bench/torch_loader_workload.py [SECONDS] [WORKERS]

The workers share the parent's torch pages copy-on-write, as every
DataLoader's do.  One intra-op thread, a small MLP and a short sleep a step
keep the loop at about half a core, so the run is the same shape on a busy
machine as on an idle one.
"""
import sys
import time

import torch

import stepscope


class Synthetic(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(256, generator=g), i % 10


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(Synthetic(), batch_size=32, num_workers=workers,
                                         persistent_workers=workers > 0)
    end = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < end:
        for x, y in loader:
            with stepscope.step():
                with stepscope.zone("forward"):
                    loss = loss_fn(model(x), y)
                with stepscope.zone("backward"):
                    loss.backward()
                with stepscope.zone("optimizer"):
                    opt.step()
                    opt.zero_grad()
            stepscope.record("loss", loss.item())
            steps += 1
            time.sleep(0.01)
            if time.monotonic() >= end:
                break
    print("steps", steps)


if __name__ == "__main__":
    main()
