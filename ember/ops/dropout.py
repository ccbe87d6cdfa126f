"""Dropout, as products with random keep masks: ``nn.functional``'s ``dropout``,
``alpha_dropout`` and ``feature_alpha_dropout`` (and, for ``dropout1d/2d/3d``,
``feature_dropout``), also reached from ``torch.dropout_`` and its siblings. (``ember.dropout``
is the function, from _functional_exports.py: ops/__init__ exports this family's ``__all__``,
never the module.)

In training, an element (or, for the feature variants, a whole channel) is kept with
probability ``1 - p``; the survivors are rescaled so that the expectation is unchanged. The
alpha variants drop to SELU's negative saturation value instead of zero and then apply the
affine map that keeps mean 0 and variance 1. Outside training every variant returns ``input``.
The mask is a tensor and the product an ordinary op, so the gradient is autograd's. The mask
is drawn by ``bernoulli_`` where the input lives: on a device that draws on the device (CUDA),
from that device's generator, so nothing is drawn on the host and copied.

As ATen orders it: an empty input, like ``p=0``, is returned itself, and ``p=1`` multiplies by a
zero of the input's own dtype (so integers stay integers) before the feature variants check the
rank, so a 1-D or 0-D input with ``p=1`` is zeroed rather than refused.
"""
import math

from .creation import empty, zeros
from .inplace import inplace as _inplace

__all__ = ["dropout_", "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_"]

# -SELU's scale * alpha: the value SELU tends to for large negative inputs.
_SELU_SATURATION = 1.7580993408473766


def check_p(p):
    """nn.functional's check (ValueError), then ATen's, which also catches a NaN."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    check_aten_p(p)


def check_aten_p(p):
    """What ``torch.dropout`` and its siblings raise, before looking at ``train``."""
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, mask_shape):
    """0/1 in ``input``'s dtype, 1 with probability ``1 - p``, broadcastable to ``input``."""
    return empty(mask_shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)


def feature_mask_shape(input):
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def _dropout(input, p, mask_shape):
    mask = _keep_mask(input, p, mask_shape)
    mask.mul_(1.0 / (1.0 - p))
    return input * mask


def _alpha_dropout(input, p, mask_shape):
    keep = _keep_mask(input, p, mask_shape)
    a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * (1 - p))
    # Dropped entries become -saturation, then everything is scaled by a and shifted back.
    offset = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    return input * (keep * a) + offset


def _run(fn, input, p, training, inplace, feature):
    check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        zero = zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    mask_shape = feature_mask_shape(input) if feature else tuple(input.shape)
    if inplace:
        return _inplace(input, fn, p, mask_shape)
    return fn(input, p, mask_shape)


def dropout(input, p=0.5, training=True, inplace=False):
    return _run(_dropout, input, p, training, inplace, False)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _run(_alpha_dropout, input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _run(_alpha_dropout, input, p, training, inplace, True)


def feature_dropout(input, p=0.5, training=True, inplace=False):
    """Whole channels (dim 1 of an input with at least 2 dims) dropped together."""
    return _run(_dropout, input, p, training, inplace, True)


# torch's in-place spellings (``torch.dropout_``…)
def dropout_(input, p=0.5, train=True):
    check_aten_p(p)
    return dropout(input, p, train, inplace=True)


def alpha_dropout_(input, p=0.5, train=False):
    check_aten_p(p)
    return alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input, p=0.5, train=False):
    check_aten_p(p)
    return feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout_(input, p=0.5, train=True):
    check_aten_p(p)
    return feature_dropout(input, p, train, inplace=True)
