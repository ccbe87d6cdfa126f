"""Helpers shared by the distributions, as ``torch.distributions.utils``."""
import numbers
from functools import update_wrapper

import numpy as np

import ember
from .._tensor import Tensor

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler–Mascheroni constant


def finfo(dtype):
    """NumPy's float info for an Ember dtype (Ember has no ``finfo`` of its own yet)."""
    return np.finfo(dtype.np)


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers become tensors of the first tensor's dtype
    and device (or the default dtype when all are numbers)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, ember.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        options = dict(dtype=ember.get_default_dtype())
        for value in values:
            if isinstance(value, Tensor):
                options = dict(dtype=value.dtype, device=value.device)
                break
        values = [v if isinstance(v, Tensor) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp into the open interval ``(0, 1)`` by the dtype's machine epsilon."""
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed once on first access (with gradients recorded), then stored on the
    instance; distributions use it for the parameterisation they were not given."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What ``lazy_property`` looks like on the class, so that documentation tools see a
    property."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (from diagonal ``diag``) of the last two dims, row by row."""
    n = mat.shape[-1]
    if not mat.shape[-2] == n:
        raise ValueError(f"Expected a square matrix, got shape {tuple(mat.shape)}")
    rows, cols = np.tril_indices(n, k=diag)
    flat_index = ember.tensor(rows * n + cols, device=mat.device)
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,))[..., flat_index]


def vec_to_tril_matrix(vec, diag=0):
    """Inverse of ``tril_matrix_to_vec``: fill a lower-triangular matrix from its entries."""
    import math
    n = (-(1 + 2 * diag) + math.sqrt((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag)
                                     * (diag + 1))) / 2
    eps = float(finfo(vec.dtype).eps)
    if not round(n) - n < eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n.item()) if isinstance(n, Tensor) else round(n)
    rows, cols = np.tril_indices(n, k=diag)
    flat_index = ember.tensor(rows * n + cols, device=vec.device)
    batch = tuple(vec.shape[:-1])
    flat = ember.zeros(batch + (n * n,), dtype=vec.dtype, device=vec.device)
    flat = flat.index_add(-1, flat_index, vec)
    return flat.reshape(batch + (n, n))
