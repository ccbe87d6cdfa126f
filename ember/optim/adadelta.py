"""Adadelta: step sizes from running averages of squared gradients and squared updates."""
from .optimizer import (Optimizer, advance, array, check_lr, check_nonnegative,
                        gradient_for_step, scalar, square_average_, step_counter, zeros_state)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative("epsilon value", eps)
        check_nonnegative("weight_decay value", weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        state["square_avg"] = zeros_state(param)
        state["acc_delta"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        rho = group["rho"]
        eps = group["eps"]
        advance(state["step"])
        g = gradient_for_step(xp, p, array(grad), group["maximize"], group["weight_decay"])
        square_avg = array(state["square_avg"])
        acc_delta = array(state["acc_delta"])
        scratch = xp.empty_like(p)
        square_average_(xp, square_avg, g, rho, scratch)
        std = xp.add(square_avg, eps)
        xp.sqrt(std, out=std)
        delta = xp.add(acc_delta, eps)
        xp.sqrt(delta, out=delta)
        xp.divide(delta, std, out=delta)
        xp.multiply(delta, g, out=delta)
        square_average_(xp, acc_delta, delta, rho, scratch)
        xp.add(p, xp.multiply(delta, -scalar(group["lr"]), out=delta), out=p)
