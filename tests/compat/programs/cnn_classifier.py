"""A small CNN image classifier, in the shape of pytorch/examples ``mnist/main.py``.

Synthetic 12x12 "digits": each of 4 classes is a fixed random template plus noise, drawn
with NumPy from ``--seed``. Deterministic: the data come from NumPy, the DataLoader does not
shuffle, dropout is left out, and ``--load-init`` replaces the random initial weights.
After every epoch the model, optimizer and LR-scheduler states are saved as one general
checkpoint and training resumes from a fresh model and optimizer that load it.
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def make_dataset(rng, templates, count):
    labels = rng.integers(0, len(templates), count)
    images = templates[labels] + 0.5 * rng.standard_normal((count, 1, 12, 12))
    return TensorDataset(torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels))


def train(model, device, loader, optimizer, losses):
    model.train()
    for data, target in loader:
        data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def test(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    n = len(loader.dataset)
    print(f"Test set: Average loss: {test_loss / n:.4f}, Accuracy: {correct}/{n}")
    return test_loss / n, correct / n


def main():
    parser = argparse.ArgumentParser(description="CNN classifier example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--checkpoint", metavar="PATH", default="cnn_checkpoint.pt",
                        help="general checkpoint written after every epoch and resumed from")
    parser.add_argument("--log", metavar="PATH")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    templates = rng.standard_normal((4, 1, 12, 12))
    train_loader = DataLoader(make_dataset(rng, templates, 64), batch_size=args.batch_size)
    test_loader = DataLoader(make_dataset(rng, templates, 32), batch_size=args.batch_size)

    model = Net().to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init))
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    losses = []
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, losses)
        test_loss, accuracy = test(model, device, test_loader)
        scheduler.step()
        if args.checkpoint:
            # Save a general checkpoint and resume from it, as a restarted job would: a new
            # model, optimizer and scheduler, their states loaded back.
            torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                        "optimizer_state_dict": optimizer.state_dict(),
                        "scheduler_state_dict": scheduler.state_dict()}, args.checkpoint)
            checkpoint = torch.load(args.checkpoint, map_location=device, weights_only=True)
            model = Net().to(device)
            model.load_state_dict(checkpoint["model_state_dict"])
            optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
            optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
            scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
            scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
            assert checkpoint["epoch"] == epoch

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses,
                       "metrics": {"test_loss": test_loss, "accuracy": accuracy}}, f)


if __name__ == "__main__":
    main()
