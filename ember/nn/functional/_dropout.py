"""Dropout variants, as ``torch.nn.functional``.

In training, an element (or, for the feature variants, a whole channel) is kept with
probability ``1 - p``; the survivors are rescaled so that the expectation is unchanged. The
alpha variants drop to SELU's negative saturation value instead of zero and then apply the
affine map that keeps mean 0 and variance 1. Outside training every variant returns ``input``.
"""
import math
import warnings

import ember
from ...ops.inplace import inplace as _inplace

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

# -SELU's scale * alpha: the value SELU tends to for large negative inputs.
_SELU_SATURATION = 1.7580993408473766


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, mask_shape):
    """0/1 in ``input``'s dtype, 1 with probability ``1 - p``, broadcastable to ``input``."""
    return ember.empty(mask_shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)


def _feature_mask_shape(input):
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def _dropout(input, p, mask_shape):
    if p == 1:
        return input * 0.0
    mask = _keep_mask(input, p, mask_shape)
    mask.mul_(1.0 / (1.0 - p))
    return input * mask


def _alpha_dropout(input, p, mask_shape):
    if p == 1:
        return input * 0.0
    keep = _keep_mask(input, p, mask_shape)
    a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * (1 - p))
    # Dropped entries become -saturation, then everything is scaled by a and shifted back.
    offset = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    return input * (keep * a) + offset


def _run(fn, input, p, training, inplace, mask_shape):
    _check_p(p)
    if not training or p == 0:
        return input
    if inplace:
        return _inplace(input, fn, p, mask_shape)
    return fn(input, p, mask_shape)


def dropout(input, p=0.5, training=True, inplace=False):
    return _run(_dropout, input, p, training, inplace, tuple(input.shape))


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _run(_alpha_dropout, input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if not training or p == 0:
        return input
    return _run(_alpha_dropout, input, p, training, inplace, _feature_mask_shape(input))


_SPATIAL_WORDS = {1: "1 spatial dimension", 2: "2 spatial dimensions", 3: "3 spatial dimensions"}


def _channel_dropout(name, spatial, input, p, training, inplace):
    _check_p(p)
    ndim = input.ndim
    batched, unbatched = spatial + 2, spatial + 1
    note = (f"Note that {name} exists to provide channel-wise dropout on inputs with "
            f"{_SPATIAL_WORDS[spatial]}, a channel dimension, and an optional batch dimension "
            f"(i.e. {unbatched}D or {batched}D inputs).")
    if ndim not in (unbatched, batched):
        if spatial == 1:
            raise RuntimeError(f"{name}: Expected {unbatched}D or {batched}D input, but received "
                               f"a {ndim}D input. {note}")
        warnings.warn(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence "
                      f"this warning, please use dropout instead. {note}", stacklevel=3)
    if ndim == unbatched and spatial == 2:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=3)
    elif ndim == unbatched:
        # An unbatched input: its first dimension is the channels.
        result = _channel_dropout(name, spatial, input.unsqueeze(0), p, training, inplace)
        return input if result is input else result.squeeze(0)
    if not training or p == 0:
        return input
    return _run(_dropout, input, p, training, inplace, _feature_mask_shape(input))


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout1d", 1, input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout2d", 2, input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout3d", 3, input, p, training, inplace)
