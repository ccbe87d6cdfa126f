"""RMSprop, optionally centered and with momentum."""
from .optimizer import (Optimizer, addcdiv_, addcmul_, advance, array, check_lr, check_nonnegative,
                        gradient_for_step, lerp_, scalar, square_average_, step_counter,
                        zeros_state)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_lr(lr)
        check_nonnegative("epsilon value", eps)
        check_nonnegative("momentum value", momentum)
        check_nonnegative("weight_decay value", weight_decay)
        check_nonnegative("alpha value", alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        state["square_avg"] = zeros_state(param)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_state(param)
        if group["centered"]:
            state["grad_avg"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        alpha = group["alpha"]
        momentum = group["momentum"]
        advance(state["step"])
        g = gradient_for_step(xp, p, array(grad), group["maximize"], group["weight_decay"])
        square_avg = array(state["square_avg"])
        scratch = xp.empty_like(p)
        square_average_(xp, square_avg, g, alpha, scratch)
        avg = xp.empty_like(p)
        if group["centered"]:
            grad_avg = array(state["grad_avg"])
            lerp_(xp, grad_avg, g, 1 - alpha, scratch)
            xp.copyto(avg, square_avg)
            addcmul_(xp, avg, grad_avg, grad_avg, -1, scratch)
            xp.sqrt(avg, out=avg)
        else:
            xp.sqrt(square_avg, out=avg)
        xp.add(avg, group["eps"], out=avg)
        lr = scalar(group["lr"])
        if momentum > 0:
            buf = array(state["momentum_buffer"])
            xp.multiply(buf, momentum, out=buf)
            addcdiv_(xp, buf, g, avg, 1, scratch)
            xp.add(p, xp.multiply(buf, -lr, out=scratch), out=p)
        else:
            addcdiv_(xp, p, g, avg, -lr, scratch)
