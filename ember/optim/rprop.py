"""Rprop: per-element step sizes grown or shrunk by the sign agreement of successive gradients."""
from .optimizer import (Optimizer, advance, array, check_lr, full_state, scalar, step_counter,
                        zeros_state)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        state["prev"] = zeros_state(param)
        lr = scalar(group["lr"])
        state["step_size"] = full_state(param, complex(lr, lr) if param.is_complex() else lr)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        advance(state["step"])
        g = array(grad)
        g = xp.negative(g) if group["maximize"] else g.copy()
        prev = array(state["prev"])
        step_size = array(state["step_size"])

        factor = xp.multiply(g, prev)
        xp.sign(factor, out=factor)
        shrink = factor < 0
        keep = factor == 0
        factor[factor > 0] = etaplus
        factor[shrink] = etaminus
        factor[keep] = 1
        xp.multiply(step_size, factor, out=step_size)
        xp.clip(step_size, step_size_min, step_size_max, out=step_size)

        # A gradient whose sign flipped is skipped this step and forgotten for the next.
        g[shrink] = 0
        direction = xp.sign(g, out=factor)
        xp.negative(direction, out=direction)
        xp.multiply(direction, step_size, out=direction)
        xp.add(p, direction, out=p)
        xp.copyto(prev, g)
