"""Pooling, as ``torch.nn.functional``: the argument checks and window geometry; max, average,
adaptive pooling and max unpooling are ops in ``ember.ops.pooling`` recording PyTorch's nodes
(1-d pooling runs the 2-d op on an unsqueezed view, as PyTorch does)."""
import functools
import math

from ..._tensor import _wrap, wrap_dim_no_scalar
from ..._quantized_tensor import QuantizedTensor, quantized_functional as _qF
from ... import _dtype as dt
from ...ops._dispatch import dtype_name
from ...ops import pooling as _pool
from ._conv import expand_param
from ...amp import autocast_mode as _autocast

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d"]


# No Python frame of its own: pooling's arguments expand as convolution's, with its error.
_tuple = functools.partial(
    expand_param, length_error="{name} must either be a single int, or a tuple of {n} ints")


def _pool_output_size(size, kernel, stride, pad, dilation, ceil_mode):
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    # a last window that would start inside the right padding only is dropped
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool_geometry(name, shape, n, kernel_size, stride, padding, dilation, ceil_mode):
    """Checked ``(kernel, stride, padding, dilation, out_shape, pads)`` with pads per-side, for
    an input of batched shape ``shape``."""
    kernel = _tuple(kernel_size, n, f"{name}: kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _tuple(stride, n, f"{name}: stride")
    padding = _tuple(padding, n, f"{name}: padding")
    dilation = _tuple(dilation, n, f"{name}: dilation")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    spatial = shape[2:]
    out_shape = tuple(_pool_output_size(s, k, st, p, d, ceil_mode) for s, k, st, p, d
                      in zip(spatial, kernel, stride, padding, dilation))
    if any(o < 1 for o in out_shape):
        dims = "x".join(map(str, (shape[1],) + tuple(spatial)))
        outs = "x".join(map(str, (shape[1],) + out_shape))
        raise RuntimeError(f"Given input size: ({dims}). Calculated output size: ({outs}). "
                           "Output size is too small")
    pads = tuple((p, max(p, (o - 1) * st + d * (k - 1) + 1 - s - p))
                 for s, k, st, p, d, o in zip(spatial, kernel, stride, padding, dilation, out_shape))
    return kernel, stride, padding, dilation, out_shape, pads


def _check_rank(input, n, message=None):
    """The kernels take an unbatched ``(C, *S)`` input as it is, as PyTorch's do."""
    if input.ndim not in (n + 1, n + 2) or any(s == 0 for s in input.shape[1:]):
        raise RuntimeError(message or f"non-empty {n + 1}D or {n + 2}D (batch mode) tensor "
                                      "expected for input")


def _check_1d_rank(input, name):
    """The check of PyTorch's 1-d pooling functions, before they view the input as 2-d."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {name})")


def _as_planes(input):
    """A 1-d pooling input as the 2-d kernels take it: ``(N, C, 1, L)`` or ``(C, 1, L)``."""
    return input.unsqueeze(-2)


def _batched_shape(input, n):
    """``input``'s shape with a batch dim, as the geometry reads it."""
    return (1,) + tuple(input.shape) if input.ndim == n + 1 else tuple(input.shape)


def _refuse_dtype(kernel, input):
    """PyTorch's error for a pooling kernel without this dtype (integers, bool)."""
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(input.dtype)}'")


def _max_pool(n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    name = f"max_pool{n}d"
    if n == 1 and return_indices:
        _check_1d_rank(input, name)
    message = (f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
               f"for input, but got:{list(input.shape)}") if n == 1 else None
    _check_rank(input, n, message)
    kernel, stride, _, dilation, out_shape, pads = _pool_geometry(
        name, _batched_shape(input, n), n, kernel_size, stride, padding, dilation, ceil_mode)
    if input.dtype is dt.bool:
        _refuse_dtype("max_pool3d" if n == 3 else "max_pool2d", input)
    if n == 1 and not return_indices and input.dtype._kind == 1:
        _refuse_dtype("max_pool1d_impl", input)  # (with indices it is the 2-d kernel's)
    if n == 1:
        # As PyTorch: the 2-d kernel over a (N, C, 1, L) view, so the graph and indices match.
        values, indices = _pool.max_pool_nd(_as_planes(input), (1,) + kernel, (1,) + stride,
                                            ((0, 0),) + pads, (1,) + dilation,
                                            (1,) + out_shape, return_indices)
        values = values.squeeze(-2)
        indices = None if indices is None else indices.squeeze(-2)
    else:
        values, indices = _pool.max_pool_nd(input, kernel, stride, pads, dilation, out_shape,
                                            return_indices)
    return (values, indices) if return_indices else values


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if input.__class__ is QuantizedTensor:
        return _qF().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if input.__class__ is QuantizedTensor:
        return _qF().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if _autocast.active and not return_indices and _autocast.enabled_for(input, "max_pool3d"):
        return _autocast.run(max_pool3d, "max_pool3d", input, kernel_size, stride, padding,
                             dilation, ceil_mode, return_indices)
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _divisors(xp, spatial, kernel, stride, padding, out_shape, count_include_pad):
    """Per output position, how many elements PyTorch divides the window sum by."""
    divisor = xp.ones((), dtype=xp.float64)
    for size, k, s, p, o in zip(spatial, kernel, stride, padding, out_shape):
        start = xp.arange(o) * s - p
        end = xp.minimum(start + k, size + p)
        count = end - start if count_include_pad else \
            xp.minimum(end, size) - xp.maximum(start, 0)
        divisor = divisor[..., None] * count
    return divisor


def _avg_pool(n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    name = f"avg_pool{n}d"
    if n == 1:
        _check_1d_rank(input, name)
    if n == 2:
        wrap_dim_no_scalar(-3, input.ndim)  # PyTorch's kernel reads size(-3) first
        if input.ndim > 4:
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                               f"size for input, but got:{list(input.shape)}")
    _check_rank(input, n)
    shape = _batched_shape(input, n)
    kernel, stride, padding, _, out_shape, pads = _pool_geometry(
        name, shape, n, kernel_size, stride, padding, 1, ceil_mode)
    if input.dtype._kind < 2 and input.dtype is not dt.int64:
        _refuse_dtype("avg_pool3d_out_frame" if n == 3 else "avg_pool2d", input)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if divisor_override is not None:
        divisor = divisor_override
    else:
        xp = input._backend.xp
        divisor = _divisors(xp, shape[2:], kernel, stride, padding, out_shape,
                            count_include_pad)
        divisor = _wrap(xp.asarray(divisor, dtype=input._dtype.np), input._dtype, input)
    if n == 1:  # as PyTorch: the 2-d kernel over a (N, C, 1, L) view
        return _pool.avg_pool_nd(_as_planes(input), (1,) + kernel, (1,) + stride,
                                 ((0, 0),) + pads, (1,) + out_shape, divisor).squeeze(-2)
    return _pool.avg_pool_nd(input, kernel, stride, pads, out_shape, divisor)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    if input.__class__ is QuantizedTensor:
        return _qF()._avg_pool1d(input, kernel_size, stride, padding, ceil_mode,
                                 count_include_pad)
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if input.__class__ is QuantizedTensor:
        return _qF().avg_pool2d(input, kernel_size, stride, padding, ceil_mode,
                                count_include_pad, divisor_override)
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if _autocast.active and _autocast.enabled_for(input, "avg_pool3d"):
        return _autocast.run(avg_pool3d, "avg_pool3d", input, kernel_size, stride, padding,
                             ceil_mode, count_include_pad, divisor_override)
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_sizes(input, output_size, n):
    """PyTorch's ``_list_with_default``: a sequence's ``None`` entries take the input's size."""
    if isinstance(output_size, int):
        return (output_size,) * n
    sizes = tuple(output_size)
    if n > 1 and input.ndim <= len(sizes):
        raise ValueError(f"Input dimension should be at least {len(sizes) + 1}")
    sizes = _tuple(sizes, n, "output_size")
    return tuple(input.shape[-n + i] if s is None else s for i, s in enumerate(sizes))


def _check_adaptive_input(name, input, n, colon="", checked=None):
    """Rank and empty-size checks of PyTorch's adaptive kernels; ``checked`` are the dims that
    must be non-empty (every non-batch dim unless given)."""
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got{colon} "
                           f"{list(input.shape)}")
    for dim in (range(1, input.ndim) if checked is None else checked):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {dim} being empty")


def _averaging_matrix(input, size, out):
    """``(out, size)`` matrix averaging PyTorch's adaptive window for each output position."""
    xp = input._backend.xp
    positions = xp.arange(out)
    starts = (positions * size) // out
    ends = -((-(positions + 1) * size) // out)
    column = xp.arange(size)[None, :]
    inside = (column >= starts[:, None]) & (column < ends[:, None])
    matrix = inside / (ends - starts)[:, None]
    return _wrap(xp.asarray(matrix, dtype=input._dtype.np), input._dtype, input)


def _adaptive_avg(n, input, output_size):
    if n == 1:  # as PyTorch: the 2-d pool over a (N, C, 1, L) view
        _check_1d_rank(input, "adaptive_avg_pool1d")
        sizes = _adaptive_sizes(input, output_size, 1)
        return _adaptive_avg(2, _as_planes(input), (1,) + sizes).squeeze(-2)
    sizes = _adaptive_sizes(input, output_size, n)
    if all(s == 1 for s in sizes):
        # PyTorch's global-pooling shortcut, taken before any check of the rank
        return input.mean(tuple(range(-1, -n - 1, -1)), keepdim=True)
    name = f"adaptive_avg_pool{n}d"
    # the 2-d kernel checks the spatial dims, the 3-d one every non-batch dim
    _check_adaptive_input(name, input, n,
                          checked=(input.ndim - 2, input.ndim - 1) if n == 2 else None)
    if input.dtype._kind < 2:
        if n == 2 and not input.numel():
            # the 2-d kernel returns an empty result before it dispatches on the dtype
            return input.new_zeros(tuple(input.shape[:input.ndim - n]) + sizes)
        _refuse_dtype("adaptive_avg_pool3d_cpu" if n == 3 else "adaptive_avg_pool2d", input)
    spatial = input.shape[input.ndim - n:]
    matrices = [_averaging_matrix(input, s, o) for s, o in zip(spatial, sizes)]
    return _pool.adaptive_avg_pool_nd(input, matrices)


def adaptive_avg_pool1d(input, output_size):
    if input.__class__ is QuantizedTensor:
        return _qF()._adaptive_avg_pool1d(input, output_size)
    return _adaptive_avg(1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    if input.__class__ is QuantizedTensor:
        return _qF().adaptive_avg_pool2d(input, output_size)
    return _adaptive_avg(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    if _autocast.active and _autocast.enabled_for(input, "adaptive_avg_pool3d"):
        return _autocast.run(adaptive_avg_pool3d, "adaptive_avg_pool3d", input, output_size)
    return _adaptive_avg(3, input, output_size)


def _adaptive_max(n, input, output_size, return_indices):
    name = f"adaptive_max_pool{n}d"
    if n == 1:
        _check_1d_rank(input, name)
    sizes = _adaptive_sizes(input, output_size, n)
    _check_adaptive_input(name, input, n, ":")
    if input.dtype._kind < 2:
        _refuse_dtype("adaptive_max_pool3d_cpu" if n == 3 else "adaptive_max_pool2d", input)
    if n == 1:  # as PyTorch: the 2-d kernel over a (N, C, 1, L) view
        values, indices = _pool.adaptive_max_pool_nd(_as_planes(input), (1,) + sizes)
        result = values.squeeze(-2), indices.squeeze(-2)
    else:
        result = _pool.adaptive_max_pool_nd(input, sizes)
    return result if return_indices else result[0]


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    if _autocast.active and _autocast.enabled_for(input, "adaptive_max_pool3d"):
        return _autocast.run(adaptive_max_pool3d, "adaptive_max_pool3d", input, output_size,
                             return_indices)
    return _adaptive_max(3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(1, input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(2, input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(3, input, output_size, True)


def _max_unpool(n, input, indices, kernel_size, stride, padding, output_size):
    kernel = _tuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None else _tuple(stride, n, "stride")
    padding = _tuple(padding, n, "padding")
    default = tuple((i - 1) * s + k - 2 * p for i, s, k, p
                    in zip(input.shape[-n:], stride, kernel, padding))
    if output_size is None:
        out_shape = default
    else:
        out_shape = tuple(output_size)[-n:]
        for dim, (size, d, s) in enumerate(zip(out_shape, default, stride)):
            if not d - s < size < d + s:
                raise ValueError(f"invalid output_size \"{list(out_shape)}\" (dim {dim} must be "
                                 f"between {d - s} and {d + s})")
    if n == 1:  # as PyTorch: the 2-d kernel on (..., L, 1) views
        out = _max_unpool(2, input.unsqueeze(-1), indices.unsqueeze(-1), kernel + (1,),
                          stride + (1,), padding + (0,), out_shape + (1,))
        return out.squeeze(-1)
    if input.dtype._kind < 2:
        _refuse_dtype(f"max_unpool{n}d", input)
    return _pool.max_unpool_nd(input, indices, out_shape)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    if _autocast.active and _autocast.enabled_for(input, "max_unpool2d"):
        return _autocast.run(max_unpool2d, "max_unpool2d", input, indices, kernel_size, stride,
                             padding, output_size)
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    if _autocast.active and _autocast.enabled_for(input, "max_unpool3d"):
        return _autocast.run(max_unpool3d, "max_unpool3d", input, indices, kernel_size, stride,
                             padding, output_size)
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode):
    kernel = _tuple(kernel_size, n, "kernel_size")
    avg = _avg_pool(n, input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None)
    return (avg.sign() * avg.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)
