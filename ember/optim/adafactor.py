"""Adafactor, as ``torch.optim.Adafactor``: second moments factored into row and column
variances for parameters of two or more dimensions (over the last two), a full variance for
vectors and scalars; a relative step size ``min(lr, 1/sqrt(t))`` scaled by the parameter's RMS,
update clipping at RMS ``d``, and weight decay decoupled through ``lr``.

The order of operations is PyTorch's single-tensor implementation, so trajectories agree to
rounding, and the state (``step``, ``row_var``/``col_var`` or ``variance``) has PyTorch's keys
and shapes, so checkpoints move both ways.
"""
from .._tensor import Tensor, _wrap
from .._type_info_and_switches import finfo
from .optimizer import Optimizer, advance, array, lerp_, scalar, step_counter, zeros_state

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    _rejects_complex = True

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = step_counter(float(p_state["step"]))

    def _step_group(self, group):
        # PyTorch resolves a missing eps1 from the dtype of the group's first parameter with a
        # gradient and keeps that value for the rest of the group; so does Ember, to follow it
        # exactly. The rule reads it from the group it is handed.
        eps = group["eps"]
        if eps[0] is None:
            first = next((p for p in group["params"] if p.grad is not None), None)
            if first is not None:
                group = {**group, "eps": (finfo(first.dtype).eps, eps[1])}
        super()._step_group(group)

    def _init_state(self, group, param, state):
        state["step"] = step_counter()
        grad = param.grad
        if grad.dim() > 1:
            xp = grad._backend.xp
            row_shape = grad.shape[:-1] + (1,)
            col_shape = grad.shape[:-2] + (1, grad.shape[-1])
            state["row_var"] = _wrap(xp.zeros(row_shape, dtype=grad._data.dtype), grad._dtype,
                                     grad)
            state["col_var"] = _wrap(xp.zeros(col_shape, dtype=grad._data.dtype), grad._dtype,
                                     grad)
        else:
            state["variance"] = zeros_state(grad)

    def _update(self, group, param, grad, state):
        xp = param._backend.xp
        p = array(param)
        g = array(grad)
        if group["maximize"]:
            g = xp.negative(g)
        lr = scalar(group["lr"])
        eps1 = group["eps"][0]
        eps2 = group["eps"][1]
        weight_decay = group["weight_decay"]

        step = advance(state["step"])
        one_minus_beta2_t = step ** group["beta2_decay"]
        rho_t = min(lr, 1 / (step ** 0.5))
        alpha = max(eps2, float(xp.linalg.norm(p.ravel())) / (p.size ** 0.5)) * rho_t
        if weight_decay != 0:
            xp.multiply(p, 1 - lr * weight_decay, out=p)

        squared = xp.square(g)
        if grad.dim() > 1:
            row_var = array(state["row_var"])
            col_var = array(state["col_var"])
            row_mean = xp.mean(squared, axis=-1, keepdims=True)
            lerp_(xp, row_var, row_mean, one_minus_beta2_t, xp.empty_like(row_var))
            col_mean = xp.mean(squared, axis=-2, keepdims=True)
            lerp_(xp, col_var, col_mean, one_minus_beta2_t, xp.empty_like(col_var))
            # The outer product of the factors, (..., m, 1) @ (..., 1, n), over the batch.
            var_estimate = xp.matmul(row_var, col_var, out=squared)
            normaliser = xp.maximum(xp.mean(row_var, axis=-2, keepdims=True), eps1)
            xp.divide(var_estimate, normaliser, out=var_estimate)
        else:
            variance = array(state["variance"])
            lerp_(xp, variance, squared, one_minus_beta2_t, xp.empty_like(variance))
            var_estimate = squared
            var_estimate[...] = variance

        # eps1 is squared because the square root follows: it bounds sqrt(V) below by eps1.
        update = xp.maximum(var_estimate, eps1 * eps1, out=var_estimate)
        xp.sqrt(update, out=update)
        xp.divide(1, update, out=update)
        xp.multiply(update, g, out=update)
        denom = max(1.0, float(xp.linalg.norm(update.ravel())) / ((update.size ** 0.5)
                                                                  * group["d"]))
        xp.multiply(update, -alpha / denom, out=update)
        xp.add(p, update, out=p)
