"""Gradient clipping, as ``torch.nn.utils``: by the total norm of all gradients or by value.

The gradients are scaled in place, without a host round trip: the clipping factor stays a
0-d tensor, ``min(max_norm / (total_norm + 1e-6), 1)``."""
import functools
import types
import warnings

import ember
from ..._tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with ember.no_grad():
            return fn(*args, **kwargs)
    return wrapper


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _refuse_sparse(tensors, op):
    """PyTorch has no kernel for the norm (or clamp) of a sparse COO tensor, so clipping by norm
    or value raises for sparse gradients (``clip_grads_with_norm_`` alone scales them)."""
    for t in tensors:
        if t.is_sparse:
            raise NotImplementedError(
                f"Could not run 'aten::{op}' with arguments from the "
                f"'Sparse{t.device.type.upper()}' backend: PyTorch has no {op} kernel for sparse "
                "COO tensors, so neither has Ember; clip sparse gradients with "
                "clip_grads_with_norm_ and a norm you compute")


@_no_grad
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of all ``tensors`` taken as one vector. ``foreach`` is accepted
    for compatibility: every backend computes the per-tensor norms the same way."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    _refuse_sparse(tensors, "linalg_vector_norm")
    first_device = tensors[0].device
    norms = [ember.norm(t, norm_type).to(first_device) for t in tensors]
    total_norm = ember.norm(ember.stack(norms), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


@_no_grad
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    clip_coef = ember.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
    for g in grads:
        g.mul_(clip_coef.to(g.device))


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``; returns the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`ember.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`ember.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    parameters = _as_list(parameters)
    _refuse_sparse([p.grad for p in parameters if p.grad is not None],
                   "clamp_" if foreach is False else "clamp_min_")
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
