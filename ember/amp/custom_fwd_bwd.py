"""``custom_fwd`` and ``custom_bwd``: autocast for ``autograd.Function``, as ``torch.amp``'s.

A custom Function's ``backward`` runs inside the engine, outside whatever autocast region its
``forward`` ran in, so ops there would see a different precision policy than in ``forward``.
``custom_fwd`` records on ``ctx`` whether autocast was on (and its dtype) when ``forward`` ran,
optionally casting the inputs and running ``forward`` with autocast off; ``custom_bwd`` replays
that state around ``backward``. (PyTorch keeps these two in ``torch/amp/autocast_mode.py``; here
they are their own file, over ``autocast_mode``.)
"""
import collections.abc
import functools

import numpy as np

from .._tensor import Tensor
from .. import _dtype as dt

__all__ = ["custom_fwd", "custom_bwd"]


def _cast(value, device_type, dtype):
    """``value`` with every floating tensor on ``device_type`` (float64 excepted) cast to
    ``dtype``, through lists, tuples, mappings and other iterables, as PyTorch's ``_cast``."""
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not dt.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        if isinstance(value, (list, tuple)):
            return type(value)(iterable)
        return iterable
    return value


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorates a custom Function's ``forward``. With ``cast_inputs=None`` it runs in the
    current autocast state; with a dtype, inside an autocast-enabled region, its floating
    inputs on ``device_type`` are cast to that dtype and it runs with autocast disabled.
    Outside an autocast region it is a plain call."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorates a custom Function's ``backward`` so it runs with the autocast state (enabled
    or not, and dtype) that its ``custom_fwd``-decorated ``forward`` ran with."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        from .autocast_mode import autocast
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
