"""RAdam: Adam whose adaptive step is switched on once the variance estimate is tractable."""
from .optimizer import (Optimizer, advance, array, check_betas, check_lr, check_nonnegative,
                        decayed_gradient, scalar, step_counter, update_moments, zeros_state)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_lr(lr)
        check_nonnegative("epsilon value", eps)
        check_betas(betas)
        check_nonnegative("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        step = advance(state["step"])
        g = decayed_gradient(xp, p, array(grad), group, lr)

        scratch = xp.empty_like(p)
        exp_avg, exp_avg_sq = update_moments(xp, state, g, beta1, beta2, scratch)

        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        update = xp.divide(exp_avg, bias_correction1)
        xp.multiply(update, lr, out=update)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = scratch
            xp.sqrt(exp_avg_sq, out=adaptive_lr)
            xp.add(adaptive_lr, group["eps"], out=adaptive_lr)
            xp.divide(bias_correction2 ** 0.5, adaptive_lr, out=adaptive_lr)
            xp.multiply(update, adaptive_lr, out=update)
            xp.multiply(update, rect, out=update)
        xp.subtract(p, update, out=p)
