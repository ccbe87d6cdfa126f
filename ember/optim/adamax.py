"""Adamax: Adam with the infinity norm in place of the second moment."""
from .optimizer import (Optimizer, addcdiv_, advance, array, check_betas, check_lr,
                        check_nonnegative, gradient_for_step, lerp_, scalar, step_counter,
                        zeros_state)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_nonnegative("epsilon value", eps)
        check_betas(betas)
        check_nonnegative("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        state["exp_avg"] = zeros_state(param)
        state["exp_inf"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        beta1, beta2 = group["betas"]
        step = advance(state["step"])
        g = gradient_for_step(xp, p, array(grad), group["maximize"], group["weight_decay"])
        exp_avg = array(state["exp_avg"])
        exp_inf = array(state["exp_inf"])
        scratch = xp.empty_like(p)
        lerp_(xp, exp_avg, g, 1 - beta1, scratch)
        xp.multiply(exp_inf, beta2, out=exp_inf)
        xp.abs(g, out=scratch)
        xp.add(scratch, group["eps"], out=scratch)
        xp.maximum(exp_inf, scratch, out=exp_inf)
        step_size = scalar(group["lr"]) / (1 - beta1 ** step)
        addcdiv_(xp, p, exp_avg, exp_inf, -step_size, scratch)
