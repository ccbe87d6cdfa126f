"""Ember in one screen: tensors, autograd and a few steps of gradient descent.

Fits y = 3x - 2 + noise with a linear model written with raw tensors, then prints a
Hessian-vector product to show higher-order gradients. Runs in well under a second.
"""
import ember as torch

torch.manual_seed(0)
x = torch.linspace(-1, 1, 64).unsqueeze(1)
y = 3 * x - 2 + 0.1 * torch.randn(64, 1)

w = torch.zeros(1, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(200):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
    w.grad = None
    b.grad = None
    if step % 50 == 0:
        print(f"step {step:3d}  loss {loss.item():.4f}")
print(f"learned w={w.item():.3f} b={b.item():.3f} (true 3, -2)")

# Higher-order gradients: the Hessian of f(v) = sum(v**3) times a vector, via create_graph.
v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
(g,) = torch.autograd.grad((v ** 3).sum(), v, create_graph=True)
(hvp,) = torch.autograd.grad(g, v, torch.ones(3))
print("Hessian-vector product of sum(v**3) at [1,2,3] with ones:", hvp)
