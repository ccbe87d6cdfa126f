"""Linear regression three ways: closed form (least squares), an ``nn.Linear`` trained with SGD,
and the two compared. Offline, a second on a laptop.

    python examples/linear_regression.py [--steps 300]
"""
import argparse

import ember as torch
from ember import nn


def make_data(n=256, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=generator)
    true_w, true_b = torch.tensor([[1.5], [-2.0], [0.5]]), 0.7
    y = x @ true_w + true_b + 0.05 * torch.randn(n, 1, generator=generator)
    return x, y, true_w, true_b


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    x, y, true_w, true_b = make_data()

    # Closed form: append a column of ones and solve the normal equations.
    design = torch.cat([x, torch.ones(len(x), 1)], dim=1)
    closed = (design.T @ design).inverse() @ design.T @ y

    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(args.steps):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step:4d}  mse {loss.item():.5f}")
    learned = torch.cat([model.weight.detach().flatten(), model.bias.detach()])
    print("true        ", [round(v, 3) for v in true_w.flatten().tolist() + [true_b]])
    print("closed form ", [round(v, 3) for v in closed.flatten().tolist()])
    print("SGD         ", [round(v, 3) for v in learned.tolist()])
    return {"loss": loss.item(), "sgd": learned, "closed_form": closed.flatten()}


if __name__ == "__main__":
    main()
