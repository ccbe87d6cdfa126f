"""Logistic regression on two Gaussian blobs: ``nn.Linear`` + ``BCEWithLogitsLoss`` trained with
``optim.LBFGS``, the classic full-batch solver for convex problems. Offline, about a second.

    python examples/logistic_regression.py [--iterations 20]
"""
import argparse

import ember as torch
from ember import nn


def make_blobs(n=400, seed=0):
    generator = torch.Generator().manual_seed(seed)
    labels = (torch.rand(n, generator=generator) < 0.5).float()
    centers = torch.stack([labels * 2 - 1, 1 - labels * 2], dim=1) * 1.2
    points = centers + torch.randn(n, 2, generator=generator)
    return points, labels


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    points, labels = make_blobs()
    train, test = slice(0, 300), slice(300, None)
    model = nn.Linear(2, 1)
    loss_fn = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=args.iterations,
                                  line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(model(points[train]).squeeze(1), labels[train])
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    with torch.no_grad():
        predicted = (model(points[test]).squeeze(1) > 0).float()
        accuracy = (predicted == labels[test]).float().mean().item()
    print(f"training loss {loss.item():.4f}, test accuracy {100 * accuracy:.1f}%")
    print(f"decision boundary: {model.weight.detach().flatten().tolist()} . x + "
          f"{model.bias.item():.3f} = 0")
    return {"loss": loss.item(), "accuracy": accuracy}


if __name__ == "__main__":
    main()
