"""Averaged stochastic gradient descent: SGD plus a running average ``ax`` of the iterates."""
from .. import _dtype as dt
from ..ops.creation import tensor as _tensor
from .optimizer import (Optimizer, advance, array, check_lr, check_nonnegative, gradient_for_step,
                        scalar, zeros_state)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_nonnegative("weight_decay value", weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _init_state(self, group, param, state):
        # Unlike the other optimizers' step, PyTorch puts all three on the parameter's device.
        state["step"] = _scalar_state(0.0, param)
        state["eta"] = _scalar_state(scalar(group["lr"]), param)
        state["mu"] = _scalar_state(1.0, param)
        state["ax"] = zeros_state(param)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        lr = scalar(group["lr"])
        lambd = group["lambd"]
        g = gradient_for_step(xp, p, array(grad), group["maximize"], group["weight_decay"])
        step = advance(state["step"])
        # eta and mu are float32 tensors in PyTorch; their rounded values drive the update.
        eta_data = state["eta"]._data
        mu_data = state["mu"]._data
        eta = eta_data.item()
        xp.multiply(p, 1 - lambd * eta, out=p)
        xp.add(p, xp.multiply(g, -eta), out=p)
        ax = array(state["ax"])
        if mu_data.item() != 1:
            difference = xp.subtract(p, ax)
            xp.multiply(difference, mu_data, out=difference)
            xp.add(ax, difference, out=ax)
        else:
            xp.copyto(ax, p)
        eta_data[...] = lr / ((1 + lambd * lr * step) ** group["alpha"])
        mu_data[...] = 1 / max(1, step - group["t0"])


def _scalar_state(value, param):
    """A float32 0-d state tensor on ``param``'s device."""
    return _tensor(value, dtype=dt.float32, device=param.device)
