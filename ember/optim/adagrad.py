"""Adagrad, with learning-rate decay and an initial accumulator value."""
from .optimizer import (Optimizer, addcdiv_, addcmul_, advance, array, check_lr, check_nonnegative,
                        check_not_fused, coalesced_gradient, full_state, gradient_for_step,
                        is_sparse_gradient, scalar, step_counter)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    _accepts_sparse_gradients = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_lr(lr)
        check_nonnegative("lr_decay value", lr_decay)
        check_nonnegative("weight_decay value", weight_decay)
        check_nonnegative("initial_accumulator_value value", initial_accumulator_value)
        check_nonnegative("epsilon value", eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        check_not_fused(fused)
        # PyTorch fills Adagrad's state at construction, for every parameter, from the
        # constructor's initial_accumulator_value even where a group gives its own.
        for group in self.param_groups:
            for param in group["params"]:
                self._init_state(group, param, self.state[param], initial_accumulator_value)

    def _init_state(self, group, param, state, initial=None):
        state["step"] = step_counter()
        if initial is None:
            initial = group["initial_accumulator_value"]
        if param.is_complex():
            initial = complex(initial, initial)
        state["sum"] = full_state(param, initial)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        step = advance(state["step"])
        if is_sparse_gradient(grad):
            return self._sparse_update(group, param, grad, state, step)
        g = gradient_for_step(xp, p, array(grad), group["maximize"], group["weight_decay"])
        step_size = scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        state_sum = array(state["sum"])
        scratch = xp.empty_like(p)
        addcmul_(xp, state_sum, g, g, 1, scratch)
        std = xp.sqrt(state_sum)
        xp.add(std, group["eps"], out=std)
        addcdiv_(xp, p, g, std, -step_size, scratch)

    def _sparse_update(self, group, param, grad, state, step):
        """PyTorch's rule on a sparse gradient: only the rows (entries) the coalesced gradient
        stores move, and only their accumulators grow."""
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        xp = param._backend.xp
        index, g = coalesced_gradient(grad, group["maximize"])
        step_size = scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"]._data
        state_sum[index] += g * g
        std = xp.sqrt(state_sum[index])
        std += group["eps"]
        param._data[index] += (g / std) * -step_size
