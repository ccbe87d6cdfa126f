"""Polynomial regression, in the shape of pytorch/examples ``regression/main.py``: fit
``y = w . (x, x^2, x^3, x^4) + b`` with one ``nn.Linear`` and a smooth L1 loss, updating the
parameters by hand (``param.add_(-lr * param.grad)``) until the loss drops below 1e-3, or
for at most ``--max-steps`` batches. Its default, 100, stops short of that (about 500
batches): later the loss of this ill-conditioned quartic fit is a small difference of large
terms, and two correct float32 runs then differ in it by far more than 1e-4 relative (5%
near batch 430), so a step-by-step comparison would measure only rounding.

Deterministic: the target polynomial and every batch's ``x`` are drawn from a seeded NumPy
generator (the example uses ``torch.randn``), and ``--load-init`` replaces the initial weights.
"""
import argparse
import json

import numpy as np
import torch
import torch.nn.functional as F

POLY_DEGREE = 4


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def poly_desc(W, b):
    result = "y = "
    for i, w in enumerate(W):
        result += f"{w:+.2f} x^{i + 1} "
    return result + f"{b[0]:+.2f}"


def main():
    parser = argparse.ArgumentParser(description="Polynomial regression")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
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
    rng = np.random.default_rng(args.seed)
    W_target = rng.standard_normal((POLY_DEGREE, 1)).astype(np.float32) * 5
    W_target = torch.from_numpy(W_target).to(device)
    b_target = torch.from_numpy(rng.standard_normal(1).astype(np.float32) * 5).to(device)

    def f(x):
        return x.mm(W_target) + b_target.item()

    def get_batch(batch_size):
        random = torch.from_numpy(rng.standard_normal(batch_size).astype(np.float32)).to(device)
        x = make_features(random)
        return x, f(x)

    fc = torch.nn.Linear(W_target.size(0), 1).to(device)
    if args.save_init:
        torch.save(fc.state_dict(), args.save_init)
    if args.load_init:
        fc.load_state_dict(torch.load(args.load_init, weights_only=True))

    losses = []
    for batch_idx in range(1, args.max_steps + 1):
        batch_x, batch_y = get_batch(args.batch_size)
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-args.lr * param.grad)
        losses.append(loss)
        if loss < 1e-3:
            break

    print(f"Loss: {loss:.6f} after {batch_idx} batches")
    print("==> Learned function:\t" + poly_desc(fc.weight.view(-1).tolist(), fc.bias.tolist()))
    print("==> Actual function:\t" + poly_desc(W_target.view(-1).tolist(), b_target.tolist()))
    with torch.no_grad():
        test_x, test_y = get_batch(256)
        test_loss = F.mse_loss(fc(test_x), test_y).item()

    if args.save_model:
        torch.save(fc.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f_log:
            json.dump({"losses": losses,
                       "metrics": {"test_mse": test_loss, "batches": batch_idx}}, f_log)


if __name__ == "__main__":
    main()
