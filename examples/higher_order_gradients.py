"""Higher-order gradients: a Hessian-vector product (checked against the full Hessian) and a
WGAN-style gradient-penalty loss, whose backward differentiates through a gradient.

    python examples/higher_order_gradients.py [--steps 50]
"""
import argparse

import ember as torch
from ember import nn


def hessian_vector_product(f, x, v):
    """H(x) @ v without forming H: differentiate <grad f(x), v> once more."""
    x = x.detach().requires_grad_(True)
    (gradient,) = torch.autograd.grad(f(x), x, create_graph=True)
    (product,) = torch.autograd.grad(gradient, x, grad_outputs=v)
    return product


def gradient_penalty(critic, real, fake):
    """(||d critic / d input|| - 1)^2 at random interpolates of real and fake samples."""
    alpha = torch.rand(real.shape[0], 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    (gradient,) = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
    return ((gradient.norm(2, dim=1) - 1) ** 2).mean()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    def f(x):
        return (x ** 3).sum() + (x[0] * x[1]) ** 2

    x, v = torch.tensor([1.0, 2.0, -1.0]), torch.tensor([0.5, -1.0, 2.0])
    hvp = hessian_vector_product(f, x, v)
    full = torch.autograd.functional.hessian(f, x)
    print("Hessian-vector product:", [round(t, 4) for t in hvp.tolist()])
    print("matches the full Hessian:", torch.allclose(hvp, full @ v))

    critic = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(critic.parameters(), lr=1e-2)
    real = torch.randn(64, 2) + 2
    for step in range(args.steps):
        fake = torch.randn(64, 2)
        penalty = gradient_penalty(critic, real, fake)
        loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
        optimizer.zero_grad()
        loss.backward()  # differentiates through the penalty's gradient: second order
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step:3d}  critic loss {loss.item():8.4f}  penalty {penalty.item():.4f}")
    return {"hvp": hvp, "hessian": full, "penalty": penalty.item(), "loss": loss.item()}


if __name__ == "__main__":
    main()
