"""torch_train.py: a small classifier trained with PyTorch on the CPU,
instrumented through stepscope.torch without touching the loop body.

    stepscope run -- /usr/bin/python3 examples/torch_train.py

The data are two interleaved spirals (2-D points, two classes), made here
so the example needs no download; the model is a 2-64-64-2 MLP trained with
Adam.  Its report shows the steps, the data/forward/backward/optimizer
zones inside them, the samples counted, the loss falling (recorded after
optimizer.step(), it still belongs to the step that call ended), and the
accuracy measured after each epoch apart from training ("forward.eval").

With --plain the script makes no stepscope call at all: the loop as an
unmodified script has it, which `stepscope run`'s automatic PyTorch
instrumentation times on its own (docs/python.md, "Zero-code
auto-instrumentation"); bench/bench_auto_run.py runs it so, in pairs.
"""
import argparse
import math

import torch

import stepscope
import stepscope.torch


def spirals(n, noise, generator):
    """n points per class on two interleaved spirals, with labels."""
    t = torch.linspace(0.25, 2.0 * math.pi, n)
    xs, ys = [], []
    for label in (0, 1):
        angle = t + label * math.pi
        points = torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1) / (2.0 * math.pi)
        xs.append(points + noise * torch.randn(points.shape, generator=generator))
        ys.append(torch.full((n,), label, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--points", type=int, default=1024, help="per class")
    parser.add_argument("--accumulate", type=int, default=1, help="batches per optimizer step")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--plain", action="store_true", help="no stepscope call: leave it to auto-instrumentation")
    args = parser.parse_args()

    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    x, y = spirals(args.points, 0.02, generator)
    dataset = torch.utils.data.TensorDataset(x, y)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                         generator=generator)
    model = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    if not args.plain:
        loader = stepscope.torch.instrument(model, optimizer, loader, accumulation_steps=args.accumulate)
    record = (lambda name, value: None) if args.plain else stepscope.record
    first = last = None
    for epoch in range(args.epochs):
        for i, (xb, yb) in enumerate(loader):
            loss = loss_fn(model(xb), yb) / args.accumulate
            loss.backward()
            if (i + 1) % args.accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
            value = loss.item() * args.accumulate
            record("loss", value)
            first = value if first is None else first
            last = value
        accuracy = evaluate(model, x, y)  # instrumented as "forward.eval", not "forward"
        record("accuracy", accuracy)
        print("epoch %d loss %.4f accuracy %.3f" % (epoch, last, accuracy), flush=True)
    if not args.plain:
        loader.remove()
    accuracy = evaluate(model, x, y)
    print("final loss %.4f (first %.4f), accuracy %.3f" % (last, first, accuracy))


def evaluate(model, x, y):
    """The share of points classified right (one forward without gradients)."""
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    model.train()
    return accuracy


if __name__ == "__main__":
    main()
