"""A custom ``autograd.Function``: a numerically stable log-sum-exp whose backward is the softmax,
plus a straight-through estimator, both checked with ``gradcheck``. Runs instantly.

    python examples/custom_function.py
"""
import ember as torch


class LogSumExp(torch.autograd.Function):
    """log(sum(exp(x))) along the last dim, shifted by the max so large inputs don't overflow."""

    @staticmethod
    def forward(ctx, x):
        peak = x.amax(dim=-1, keepdim=True)
        result = peak.squeeze(-1) + (x - peak).exp().sum(-1).log()
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        # d/dx logsumexp(x) = softmax(x), written with ops so it is itself differentiable
        return grad.unsqueeze(-1) * (x - result.unsqueeze(-1)).exp()


class RoundStraightThrough(torch.autograd.Function):
    """Round in the forward pass, pass the gradient through unchanged in the backward pass (how
    quantisation-aware training trains through a step function)."""

    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, grad):
        return grad


def main(argv=None):
    torch.manual_seed(0)
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    big = torch.tensor([[1000.0, 1000.0]], dtype=torch.float64)
    print("logsumexp matches torch.logsumexp:",
          torch.allclose(LogSumExp.apply(x), torch.logsumexp(x, dim=-1)))
    print("stable on large inputs:", LogSumExp.apply(big).item(), "(naive: inf)")
    first = torch.autograd.gradcheck(LogSumExp.apply, (x,))
    second = torch.autograd.gradgradcheck(LogSumExp.apply, (x,))
    print(f"gradcheck {first}, gradgradcheck {second}")

    w = torch.tensor([0.4, 1.6, -2.3], requires_grad=True)
    loss = (RoundStraightThrough.apply(w) * torch.tensor([1.0, 2.0, 3.0])).sum()
    loss.backward()
    print("straight-through gradient:", w.grad.tolist(), "(the upstream gradient, unchanged)")
    return {"gradcheck": first, "gradgradcheck": second, "straight_through_grad": w.grad}


if __name__ == "__main__":
    main()
