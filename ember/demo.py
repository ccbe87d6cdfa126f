"""Ember's main demo: a small CNN learns handwritten digits, in well under a minute on a laptop.

    python -m ember.demo [--epochs 20] [--device cpu] [--out ember-demo]

It trains on the UCI optical-recognition digits that ship inside the package (1,797 8×8
images, CC BY 4.0, see ``ember/data/DIGITS.md``), so nothing is downloaded. It shows a progress
bar (tqdm) with the loss and throughput, prints the test accuracy, saves a checkpoint that
``torch.load`` can read too, and writes a PNG (matplotlib) with the loss and accuracy curves and
a grid of test digits with the predicted labels. tqdm and matplotlib come with the ``demo``
extra (``pip install 'ember[demo]'``); without them the demo still trains and says what each
would add.

The code is ordinary PyTorch: replace ``import ember as torch`` by ``import torch`` and it runs
the same.
"""
import argparse
import gzip
import os
import sys
import time
from importlib import resources

import numpy as np

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, TensorDataset

DATA_FILE = "digits.csv.gz"


def load_digits():
    """The 1,797 digits as float32 images (N, 1, 8, 8) scaled to [0, 1] and int64 labels."""
    with resources.files("ember.data").joinpath(DATA_FILE).open("rb") as raw:
        table = np.loadtxt(gzip.open(raw), delimiter=",", dtype=np.float32)
    images = (table[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    return images, table[:, 64].astype(np.int64)


def split(images, labels, test_fraction=0.2, seed=0):
    """A fixed random train/test split, the same on every run."""
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train]), (images[test], labels[test])


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2),                                     # 8x8 -> 4x4
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def _optional(module, extra_use):
    try:
        return __import__(module)
    except ImportError:
        print(f"({module} is not installed: `pip install 'ember[demo]'` adds {extra_use}.)")
        return None


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    predictions = []
    with torch.no_grad():
        for images, labels in loader:
            predicted = model(images.to(device)).argmax(1)
            correct += int((predicted == labels.to(device)).sum())
            total += len(labels)
            predictions.append(predicted.cpu().numpy())
    return correct / total, np.concatenate(predictions)


def save_plot(path, history, test_images, test_labels, predictions, matplotlib):
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(13, 5))
    grid = fig.add_gridspec(4, 12)
    loss_ax = fig.add_subplot(grid[:, 0:4])
    loss_ax.plot(range(1, len(history["loss"]) + 1), history["loss"], marker="o")
    loss_ax.set(title="training loss", xlabel="epoch", ylabel="cross-entropy")
    acc_ax = fig.add_subplot(grid[:, 4:8])
    acc_ax.plot(range(1, len(history["accuracy"]) + 1),
                [100 * a for a in history["accuracy"]], marker="o", color="tab:green")
    acc_ax.set(title="test accuracy", xlabel="epoch", ylabel="%")
    for i in range(16):
        ax = fig.add_subplot(grid[i // 4, 8 + i % 4])
        ax.imshow(test_images[i, 0], cmap="gray_r", interpolation="nearest")
        right = predictions[i] == test_labels[i]
        ax.set_title(f"{predictions[i]}" + ("" if right else f" ({test_labels[i]})"),
                     color="black" if right else "red", fontsize=9)
        ax.axis("off")
    fig.suptitle("Ember: a CNN on the UCI handwritten digits")
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ember.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default="ember-demo", help="folder for the checkpoint and PNG")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    tqdm = _optional("tqdm", "a progress bar")
    matplotlib = _optional("matplotlib", "the PNG of curves and predictions")

    (train_x, train_y), (test_x, test_y) = split(*load_digits(), seed=args.seed)
    train = DataLoader(TensorDataset(torch.from_numpy(train_x), torch.from_numpy(train_y)),
                       batch_size=args.batch_size, shuffle=True)
    test = DataLoader(TensorDataset(torch.from_numpy(test_x), torch.from_numpy(test_y)),
                      batch_size=256)
    print(f"UCI digits: {len(train_y)} training and {len(test_y)} test images of 8x8, "
          f"device {device}")

    model = DigitsCNN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    history = {"loss": [], "accuracy": []}
    started = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        batches = train if tqdm is None else tqdm.tqdm(
            train, desc=f"epoch {epoch:2d}/{args.epochs}", unit="batch", leave=False)
        total_loss, seen, epoch_start = 0.0, 0, time.perf_counter()
        for images, labels in batches:
            images, labels = images.to(device), labels.to(device)
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += float(loss) * len(labels)
            seen += len(labels)
            if tqdm is not None:
                rate = seen / (time.perf_counter() - epoch_start)
                batches.set_postfix(loss=f"{float(loss):.3f}", samples_per_s=f"{rate:,.0f}")
        scheduler.step()
        accuracy, predictions = evaluate(model, test, device)
        history["loss"].append(total_loss / seen)
        history["accuracy"].append(accuracy)
        print(f"epoch {epoch:2d}: loss {total_loss / seen:.4f}, test accuracy "
              f"{100 * accuracy:.2f}%, {seen / (time.perf_counter() - epoch_start):,.0f} "
              "samples/s")
    elapsed = time.perf_counter() - started
    print(f"test accuracy {100 * history['accuracy'][-1]:.2f}% after {args.epochs} epochs "
          f"({elapsed:.1f} s)")

    os.makedirs(args.out, exist_ok=True)
    checkpoint = os.path.join(args.out, "digits_cnn.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": args.epochs, "test_accuracy": history["accuracy"][-1]}, checkpoint)
    print(f"checkpoint: {checkpoint} (loads with ember.load or torch.load)")
    if matplotlib is not None:
        png = os.path.join(args.out, "digits_cnn.png")
        save_plot(png, history, test_x, test_y, predictions, matplotlib)
        print(f"plot: {png}")
    return history


def console_main():
    """Entry point of the ``ember-demo`` console script."""
    main()
    return 0


if __name__ == "__main__":
    sys.exit(console_main())
