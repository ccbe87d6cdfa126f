"""``make_tensor``: random test inputs in torch's value ranges and layouts."""
import collections.abc
import math
import warnings

from .. import _dtype as dt

_INTEGRAL_TYPES = (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)
_FLOATING_TYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
_COMPLEX_TYPES = (dt.complex64, dt.complex128)
_BOOLEAN_OR_INTEGRAL_TYPES = (dt.bool, *_INTEGRAL_TYPES)
_FLOATING_OR_COMPLEX_TYPES = (*_FLOATING_TYPES, *_COMPLEX_TYPES)


def _uniform_(t, low, high):
    import ember
    # uniform_ needs high - low to be finite in the dtype: draw half the range and double it.
    if high - low >= ember.finfo(t.dtype).max:
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def _low_high(dtype, low, high, *, lowest_inclusive, highest_exclusive, default_low,
              default_high):
    """``[low, high)`` after torch's defaults, checks and clamping to what ``dtype`` holds."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATING_OR_COMPLEX_TYPES:
        warnings.warn("Passing `low==high` to `ember.testing.make_tensor` for floating or complex "
                      "types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`ember.full(...)` instead.", FutureWarning, stacklevel=4)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
    low = min(max(low, lowest_inclusive), highest_exclusive)
    high = min(max(high, lowest_inclusive), highest_exclusive)
    if dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    Defaults, as torch's: ``[-9, 10)`` for integers (``[0, 2)`` for bool), ``[-9, 9)`` for
    floating and complex dtypes (each of the real and imaginary parts); bounds outside what the
    dtype represents are clamped to it, and integer bounds are rounded up. ``noncontiguous``
    returns a view that skips every other element of the last dim (when there are at least two
    elements); ``memory_format`` lays the values out in that format; ``exclude_zero`` replaces
    zeros by 1 (integers, bool) or the dtype's smallest normal value (``finfo.tiny``).
    The values themselves are Ember's random draws, not torch's.
    """
    import ember
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is dt.bool:
        low, high = _low_high(dtype, low, high, lowest_inclusive=0, highest_exclusive=2,
                              default_low=0, default_high=2)
        result = ember.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL_TYPES:
        info = ember.iinfo(dtype)
        low, high = _low_high(dtype, low, high, lowest_inclusive=info.min,
                              highest_exclusive=info.max + (1 if dtype is not dt.int64 else 0),
                              default_low=-9, default_high=10)
        result = ember.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING_OR_COMPLEX_TYPES:
        info = ember.finfo(dtype)
        low, high = _low_high(dtype, low, high, lowest_inclusive=info.min,
                              highest_exclusive=info.max, default_low=-9, default_high=9)
        result = ember.empty(shape, device=device, dtype=dtype)
        _uniform_(ember.view_as_real(result) if dtype in _COMPLEX_TYPES else result, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "ember.testing.make_tensor().")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = (1 if dtype in _BOOLEAN_OR_INTEGRAL_TYPES
                               else ember.finfo(dtype).tiny)
    if dtype in _FLOATING_OR_COMPLEX_TYPES:
        result.requires_grad = requires_grad
    return result
