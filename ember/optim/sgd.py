"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from .optimizer import (Optimizer, array, check_lr, check_not_fused, gradient_for_step,
                        is_sparse_gradient, scalar, state_from)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (Nesterov's too) and weight decay.

    >>> import ember
    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> optimizer = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> (w ** 2).sum().backward()
    >>> optimizer.step()
    >>> w
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        check_not_fused(fused)

    _accepts_sparse_gradients = True

    def _keeps_state(self, group):
        return group["momentum"] != 0

    def _init_state(self, group, param, state):
        # The momentum buffer starts as the first step's gradient, made in _update.
        pass

    def _update(self, group, param, grad, state):
        if is_sparse_gradient(grad):
            return self._sparse_update(group, param, grad, state)
        backend = param._backend
        xp = backend.xp
        p = array(param)
        g = gradient_for_step(xp, p, array(grad), group["maximize"], group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            buf_tensor = state.get("momentum_buffer")
            if buf_tensor is None:
                buf_tensor = state["momentum_buffer"] = state_from(g, grad)
                buf = array(buf_tensor)
            else:
                # buf.mul_(momentum).add_(g, alpha=1 - dampening), in one pass
                buf = array(buf_tensor)
                backend.axpby(buf, 1 - group["dampening"], g, momentum)
            if group["nesterov"]:
                g = xp.add(g, xp.multiply(buf, momentum))
            else:
                g = buf
        backend.axpby(p, -scalar(group["lr"]), g)

    def _sparse_update(self, group, param, grad, state):
        """PyTorch's rule on a sparse gradient, in sparse arithmetic: the momentum buffer is a
        sparse tensor too. Weight decay would add the dense parameter to the sparse gradient,
        which raises PyTorch's error."""
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            else:
                # buf.mul_(momentum).add_(grad, alpha=1 - dampening), keeping buf's identity
                buf.data = (buf * momentum).add(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        param.add_(grad, alpha=-scalar(group["lr"]))  # a scatter-add of the stored rows
