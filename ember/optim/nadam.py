"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""
from .optimizer import (Optimizer, addcdiv_, advance, array, check_betas, check_lr,
                        check_nonnegative, decayed_gradient, scalar, step_counter, update_moments,
                        zeros_state)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_lr(lr)
        check_nonnegative("epsilon value", eps)
        check_betas(betas)
        check_nonnegative("weight_decay value", weight_decay)
        check_nonnegative("momentum_decay value", momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        # A float32 running product, as PyTorch keeps it (its rounding is part of the result).
        state["mu_product"] = step_counter(1.0)
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        momentum_decay = group["momentum_decay"]
        step = advance(state["step"])
        bias_correction2 = 1 - beta2 ** step
        g = decayed_gradient(xp, p, array(grad), group, lr)

        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product_data = state["mu_product"]._data
        mu_product_data *= mu
        mu_product = mu_product_data.item()
        mu_product_next = mu_product * mu_next

        scratch = xp.empty_like(p)
        exp_avg, exp_avg_sq = update_moments(xp, state, g, beta1, beta2, scratch)

        denom = xp.divide(exp_avg_sq, bias_correction2)
        xp.sqrt(denom, out=denom)
        xp.add(denom, group["eps"], out=denom)
        addcdiv_(xp, p, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product), scratch)
        addcdiv_(xp, p, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next), scratch)
