"""SparseAdam: Adam's update applied only where a sparse gradient stores values.

For the gradients ``nn.Embedding(sparse=True)`` makes: each step touches the moments and the
parameter at the gradient's (coalesced) positions alone, so a step costs what the looked-up
rows cost, not what the whole table does. The moments stay dense tensors, as PyTorch's.
"""
import math

from .._tensor import Tensor
from .optimizer import Optimizer, coalesced_gradient, is_sparse_gradient, scalar, zeros_state

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    _accepts_sparse_gradients = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)

        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, param in enumerate(group["params"]):
                if param.is_sparse:
                    sparse_params.append([index, d_index])
                if param.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

    def _check_gradient_layouts(self, group):
        for param in group["params"]:
            if param.grad is not None and not is_sparse_gradient(param.grad):
                raise RuntimeError("SparseAdam does not support dense gradients, please consider "
                                   "Adam instead")

    def _init_state(self, group, param, state):
        state["step"] = 0  # a Python int, as PyTorch keeps it for SparseAdam
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        state["step"] += 1  # counted even when the gradient stores nothing, as in PyTorch
        index, g = coalesced_gradient(grad, group.get("maximize", False))
        if g.size == 0:
            return
        xp = param._backend.xp
        beta1, beta2 = group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data

        # old <- b * old + (1 - b) * new, written as old += (1 - b) * (new - old) at the stored
        # positions; PyTorch's order of operations, so the results agree to rounding.
        old_exp_avg = exp_avg[index]
        exp_avg_update = (g - old_exp_avg) * (1 - beta1)
        exp_avg[index] = old_exp_avg + exp_avg_update
        old_exp_avg_sq = exp_avg_sq[index]
        exp_avg_sq_update = (g * g - old_exp_avg_sq) * (1 - beta2)
        exp_avg_sq[index] = old_exp_avg_sq + exp_avg_sq_update

        numer = exp_avg_update + old_exp_avg
        denom = xp.sqrt(exp_avg_sq_update + old_exp_avg_sq)
        denom += group["eps"]

        step = state["step"]
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = scalar(group["lr"]) * math.sqrt(bias_correction2) / bias_correction1
        param._data[index] += (numer / denom) * -step_size
