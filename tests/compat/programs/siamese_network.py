"""A siamese embedding network trained with a triplet loss (and a contrastive term), in the
shape of pytorch/examples ``siamese_network/main.py``.

Ten classes of 10x10 images (fixed NumPy templates plus noise). A Dataset returns
(anchor, positive, negative) triplets; one shared CNN embeds all three; the loss is
``nn.TripletMarginLoss`` plus a contrastive loss on the anchor/negative pair. Evaluation:
pair verification accuracy on held-out pairs with a distance threshold.
Deterministic: images and triplet choice are drawn from a NumPy generator seeded per index
(``np.random.default_rng(seed + index)``), so the two DataLoader worker processes give the
same batches in the same order as one process would; the DataLoader does not shuffle, and
``--load-init`` replaces the initial weights.
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES, SIZE = 10, 10


class TripletDataset(Dataset):
    def __init__(self, templates, length, seed):
        self.templates, self.length, self.seed = templates, length, seed

    def __len__(self):
        return self.length

    def _image(self, rng, label):
        image = self.templates[label] + 0.6 * rng.standard_normal((1, SIZE, SIZE))
        return torch.from_numpy(image.astype(np.float32))

    def __getitem__(self, index):
        rng = np.random.default_rng(self.seed + index)
        label = int(rng.integers(NUM_CLASSES))
        other = int((label + rng.integers(1, NUM_CLASSES)) % NUM_CLASSES)
        return self._image(rng, label), self._image(rng, label), self._image(rng, other)


class EmbeddingNet(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(16, 32), nn.PReLU(), nn.Linear(32, dim))

    def forward(self, x):
        return F.normalize(self.fc(self.conv(x)), dim=1)


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = EmbeddingNet()

    def forward(self, anchor, positive, negative):
        # One batched pass of the shared network over all three inputs.
        out = self.embedding(torch.cat((anchor, positive, negative), dim=0))
        return torch.chunk(out, 3, dim=0)


def contrastive_loss(x1, x2, same, margin=1.0):
    distance = F.pairwise_distance(x1, x2)
    return torch.mean(same * distance.pow(2)
                      + (1 - same) * torch.clamp(margin - distance, min=0.0).pow(2))


@torch.no_grad()
def test(model, device, test_loader, threshold=0.7):
    model.eval()
    correct, total = 0, 0
    for anchor, positive, negative in test_loader:
        a, p, n = model(anchor.to(device), positive.to(device), negative.to(device))
        correct += (F.pairwise_distance(a, p) < threshold).sum().item()
        correct += (F.pairwise_distance(a, n) >= threshold).sum().item()
        total += 2 * len(a)
    print(f"Test set: pair accuracy {correct}/{total}")
    return correct / total


def main():
    parser = argparse.ArgumentParser(description="Siamese network example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--num-workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--log", metavar="PATH")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(args.seed)
    templates = np.random.default_rng(args.seed).standard_normal((NUM_CLASSES, 1, SIZE, SIZE))
    loader_kwargs = {"num_workers": args.num_workers, "pin_memory": use_accel}
    train_loader = DataLoader(TripletDataset(templates, 64, seed=1000),
                              batch_size=args.batch_size, **loader_kwargs)
    test_loader = DataLoader(TripletDataset(templates, 32, seed=5000), batch_size=args.batch_size)

    model = SiameseNetwork().to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init, map_location=device))
    triplet = nn.TripletMarginLoss(margin=0.5, p=2)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)

    losses = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        for anchor, positive, negative in train_loader:
            anchor, positive, negative = anchor.to(device), positive.to(device), negative.to(device)
            optimizer.zero_grad()
            a, p, n = model(anchor, positive, negative)
            same = torch.ones(len(a), device=device)
            loss = triplet(a, p, n) + 0.5 * contrastive_loss(a, n, 1 - same)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    accuracy = test(model, device, test_loader)

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses, "metrics": {"pair_accuracy": accuracy}}, f)


if __name__ == "__main__":
    main()
