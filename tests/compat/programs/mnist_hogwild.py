"""Hogwild-style training with ``torch.multiprocessing``, in the shape of pytorch/examples
``mnist_hogwild`` (``main.py`` + ``train.py``): one model in shared memory
(``model.share_memory()``), two "spawn" worker processes that each run SGD on it in place.

Deterministic: true Hogwild lets the workers race, so its losses differ from run to run on
any framework. Here the workers take turns — each waits for a token on its ``mp.Queue``, makes
one optimizer step on the shared parameters, passes the token on, and reports its loss on a
result queue — so the step order (worker 0, 1, 0, 1, ...) is fixed, while each step still
reads the weights the other process just wrote through shared memory. Data are NumPy's
(``--seed``), each worker's DataLoader reads its own fixed shard without shuffling, and
``--load-init`` replaces the initial weights.
"""
import argparse
import json

import numpy as np
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.fc1 = nn.Linear(4 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = x.view(-1, 4 * 4 * 4)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def make_dataset(seed, count):
    rng = np.random.default_rng(seed)
    templates = np.random.default_rng(0).standard_normal((3, 1, 10, 10))
    labels = rng.integers(0, 3, count)
    images = templates[labels] + 0.5 * rng.standard_normal((count, 1, 10, 10))
    return TensorDataset(torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels))


def train(rank, args, model, device, my_turn, next_turn, results):
    torch.manual_seed(args.seed + rank)
    loader = DataLoader(make_dataset(args.seed + 1 + rank, 48), batch_size=args.batch_size)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model.train()
    for epoch in range(1, args.epochs + 1):
        for batch_idx, (data, target) in enumerate(loader):
            my_turn.get(timeout=60)
            optimizer.zero_grad()
            loss = F.nll_loss(model(data.to(device)), target.to(device))
            loss.backward()
            optimizer.step()
            results.put((rank, epoch, batch_idx, loss.item()))
            next_turn.put(True)


def test(model, device, dataset):
    model.eval()
    loader = DataLoader(dataset, batch_size=32)
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data.to(device))
            test_loss += F.nll_loss(output, target.to(device), reduction="sum").item()
            correct += output.max(1)[1].eq(target.to(device)).sum().item()
    n = len(loader.dataset)
    print(f"Test set: Average loss: {test_loss / n:.4f}, Accuracy: {correct}/{n}")
    return test_loss / n, correct / n


def main():
    parser = argparse.ArgumentParser(description="Hogwild example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--num-processes", type=int, default=2)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--log", metavar="PATH")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(args.seed)
    mp.set_start_method("spawn", force=True)

    model = Net().to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init, weights_only=True))
    model.share_memory()  # gradients are allocated lazily, so they are not shared

    turns = [mp.Queue() for _ in range(args.num_processes)]
    results = mp.Queue()
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device, turns[rank],
                                           turns[(rank + 1) % args.num_processes], results))
        p.start()
        processes.append(p)
    turns[0].put(True)
    steps = args.epochs * len(range(0, 48, args.batch_size)) * args.num_processes
    # mp.Queue.put hands the item to a feeder thread and returns, so a worker's report can
    # reach the queue after the next worker's: order them by the turn they were made in
    # (epoch, batch, rank), which is the order the token went round.
    reports = [results.get(timeout=120) for _ in range(steps)]
    reports.sort(key=lambda r: (r[1], r[2], r[0]))
    for p in processes:
        p.join(timeout=60)
        if p.exitcode != 0:
            raise RuntimeError(f"worker {p.pid} exited with {p.exitcode}")

    test_loss, accuracy = test(model, device, make_dataset(args.seed + 100, 64))
    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": [loss for _, _, _, loss in reports],
                       "workers": [rank for rank, _, _, _ in reports],
                       "metrics": {"test_loss": test_loss, "accuracy": accuracy}}, f)


if __name__ == "__main__":
    main()
