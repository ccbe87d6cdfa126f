"""Adam (and, with ``decoupled_weight_decay``, AdamW), with AMSGrad."""
from .._tensor import Tensor
from .optimizer import (Optimizer, addcdiv_, advance, array, check_betas, check_lr,
                        check_nonnegative, check_not_fused, decayed_gradient, scalar, step_counter,
                        update_moments, zeros_state)

__all__ = ["Adam"]


def check_adam_betas(betas):
    check_betas(betas)
    both_floats = isinstance(betas[0], float) and isinstance(betas[1], float)
    both_tensors = isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor)
    if not (both_floats or both_tensors):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, beta in enumerate(betas):
        if isinstance(beta, Tensor) and beta.numel() != 1:
            raise ValueError(f"Tensor betas[{i}] must be 1-element")


class Adam(Optimizer):
    _sparse_gradients_error = ("Adam does not support sparse gradients, please consider "
                               "SparseAdam instead")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_lr(lr)
        check_nonnegative("epsilon value", eps)
        check_adam_betas(betas)
        check_nonnegative("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        check_not_fused(fused)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        lr = scalar(group["lr"])
        beta1, beta2 = (scalar(b) for b in group["betas"])
        step = advance(state["step"])
        g = decayed_gradient(xp, p, array(grad), group, lr)

        scratch = xp.empty_like(p)
        exp_avg, exp_avg_sq = update_moments(xp, state, g, beta1, beta2, scratch)

        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        second_moment = exp_avg_sq
        if group["amsgrad"]:
            second_moment = array(state["max_exp_avg_sq"])
            xp.maximum(second_moment, exp_avg_sq, out=second_moment)
        # param -= step_size * exp_avg / (sqrt(v) / bias_correction2_sqrt + eps), with the
        # step size folded into the denominator as PyTorch's capturable path does: one pass
        # fewer over the data than scaling the quotient.
        neg_step_size = -step_size
        denom = scratch
        xp.sqrt(second_moment, out=denom)
        if neg_step_size == 0:  # lr == 0 cannot be folded in
            xp.divide(denom, bias_correction2_sqrt, out=denom)
            xp.add(denom, group["eps"], out=denom)
            addcdiv_(xp, p, exp_avg, denom, neg_step_size, denom)
            return
        xp.multiply(denom, 1 / (bias_correction2_sqrt * neg_step_size), out=denom)
        xp.add(denom, group["eps"] / neg_step_size, out=denom)
        xp.divide(exp_avg, denom, out=denom)
        xp.add(p, denom, out=p)
