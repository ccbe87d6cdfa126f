"""Cumulative and windowed ops: running extrema and log-sum-exp, differences, numerical
gradients (``gradient``) and the trapezoid rule, strided windows (``unfold``, ``as_strided``) and
distances between sets of vectors.

Scans are one backend primitive each (``cumulative``: NumPy's ``maximum.accumulate``, a log-step
scan on CuPy, which has ``accumulate`` only for add and multiply); the others are
short compositions of Ember ops, so their gradients (and gradients of gradients) come from the
ops they are built of.
"""
import builtins
import math
import numbers
import operator

import numpy as np

from .. import _dtype as dt
from ._dispatch import CompositeBackward, record_composite
from .elementwise import mul_scalar, div_scalar
from ._dispatch import (Tensor, Node, needs_grad, record, _wrap, wrap_dim, wrap_dims, dtype_name,
                        device_mismatch)
from .reduce import return_types
from .shape import make_view, cat
from . import distance
from ..amp import autocast_mode as _autocast

__all__ = ["cummax", "cummin", "logcumsumexp", "diff", "cumulative_trapezoid", "trapezoid",
           "trapz", "gradient", "as_strided", "cdist", "pdist", "cosine_similarity",
           "pairwise_distance"]

METHODS = ["cummax", "cummin", "logcumsumexp", "diff", "unfold", "as_strided"]
INPLACE = []


# ---------------------------------------------------------------------------------------------
# cummax, cummin
# ---------------------------------------------------------------------------------------------

class CummaxBackward0(Node):
    """Each output's gradient goes to the input element it copied (the recorded index)."""
    __slots__ = ()

    def backward(self, grad):
        (indices,) = self.saved_tensors
        if grad.ndim == 0:
            return grad
        return grad.new_zeros(grad.shape).scatter_add(self.dim, indices, grad)

    def jvp(self, t):
        # each output copies one input element: its tangent
        (indices,) = self.saved_tensors
        return t.gather(self.dim, indices) if t.ndim else t.clone()


class CumminBackward0(CummaxBackward0):
    __slots__ = ()


def _cumulative_extremum(input, dim, is_min):
    d = wrap_dim(dim, input._data.ndim)
    backend = input._backend
    xp = backend.xp
    data = input._data
    if data.ndim == 0:
        values = data.copy()
        indices = xp.zeros((), dtype=np.int64)
    else:
        values = backend.cumulative("minimum" if is_min else "maximum", data, d)
        # PyTorch's scan moves to every later element that ties the running extremum, and to
        # every NaN: the index is the last position j <= i where x[j] equals the value at j.
        hit = data == values
        if data.dtype.kind in "fc":
            hit |= xp.isnan(data)
        shape = [1] * data.ndim
        shape[d] = data.shape[d]
        positions = xp.arange(data.shape[d], dtype=np.int64).reshape(shape)
        marked = xp.where(hit, positions, 0)
        indices = backend.cumulative("maximum", marked, d)
    values_t = _wrap(values, input._dtype, input)
    indices_t = _wrap(indices.astype(np.int64, copy=False), dt.int64, input)
    if needs_grad(input):
        record(CumminBackward0 if is_min else CummaxBackward0, (input,), values_t,
               save=(indices_t,), dim=d)
    result = return_types.cummin if is_min else return_types.cummax
    return result((values_t, indices_t))


def cummax(input, dim):
    return _cumulative_extremum(input, dim, False)


def cummin(input, dim):
    return _cumulative_extremum(input, dim, True)


# ---------------------------------------------------------------------------------------------
# logcumsumexp
# ---------------------------------------------------------------------------------------------

class LogcumsumexpBackward0(Node):
    """d out_j / d x_i = exp(x_i - out_j) for i <= j, so grad_i = sum_{j >= i} g_j exp(x_i - out_j).
    The reversed sum is taken in log space, separately for the positive and negative parts of
    the gradient (as PyTorch does), so no exp over- or underflows."""
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        if x.ndim == 0:
            return grad
        d = self.dim

        def reversed_log_cumsum(t):
            return logcumsumexp(t.flip(d), d).flip(d)

        def log_of_part(part):  # log(max(part, 0)), with -inf written, not computed, at <= 0
            outside = part <= 0
            return part.masked_fill(outside, 1).log().masked_fill(outside, -math.inf)

        positive = log_of_part(grad)
        negative = log_of_part(-grad)
        up = (reversed_log_cumsum(positive - out) + x).exp()
        down = (reversed_log_cumsum(negative - out) + x).exp()
        return up - down

    def jvp(self, t):
        # out_j's tangent is sum_{i <= j} exp(x_i - out_j) t_i: a forward log-space cumulative
        # sum, again split into the tangent's positive and negative parts
        x, out = self.saved_tensors
        if x.ndim == 0:
            return t.clone()
        d = self.dim

        def log_of_part(part):
            outside = part <= 0
            return part.masked_fill(outside, 1).log().masked_fill(outside, -math.inf)

        up = (logcumsumexp(x + log_of_part(t), d) - out).exp()
        down = (logcumsumexp(x + log_of_part(-t), d) - out).exp()
        return up - down


def logcumsumexp(input, dim):
    d = wrap_dim(dim, input._data.ndim)
    if input._dtype._kind < 2:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    data = input._data
    low = input._dtype in (dt.float16, dt.bfloat16)
    work = data.astype(np.float32) if low else data
    if data.ndim == 0:
        out = work.copy()
    else:
        out = input._backend.cumulative("logaddexp", work, d)
    res = _wrap(out.astype(data.dtype, copy=False), input._dtype, input)
    if needs_grad(input):
        record(LogcumsumexpBackward0, (input,), res, save=(input,), save_out=True, dim=d)
    return res


# ---------------------------------------------------------------------------------------------
# diff, trapezoid, cumulative_trapezoid
# ---------------------------------------------------------------------------------------------

def _check_diff_operand(input, other, d, which):
    if other.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for k in range(input.ndim):
        if k != d and other.shape[k] != input.shape[k]:
            raise RuntimeError("diff expects the shape of tensor to prepend or append to match "
                               "that of input except along the differencing dimension; "
                               f"input.size({k}) = {input.shape[k]}, but got "
                               f"tensor.size({k}) = {other.shape[k]}")
    if other._device is not input._device:
        raise device_mismatch(input, other)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim)
    if prepend is not None or append is not None:
        parts = []
        for other, which in ((prepend, "prepend"), (input, None), (append, "append")):
            if other is None:
                continue
            if not isinstance(other, Tensor):
                raise TypeError(f"diff(): argument '{which}' must be Tensor, not "
                                f"{type(other).__name__}")
            if which is not None:
                _check_diff_operand(input, other, d, which)
            parts.append(other)
        input = cat(parts, d)
    for _ in range(n):
        length = input.shape[d]
        if length == 0:
            break
        later, earlier = input.narrow(d, 1, length - 1), input.narrow(d, 0, length - 1)
        input = later.logical_xor(earlier) if input._dtype is dt.bool else later - earlier
    return input


def _trapezoid_dx(x, y, d, name):
    """The spacings along ``d``: ``diff(x)`` shaped to broadcast against ``y``'s intervals."""
    if x._device is not y._device:
        raise device_mismatch(y, x)
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = x.reshape(shape)
        return diff(x, dim=d)
    return diff(x, dim=d if x.ndim == y.ndim else d - y.ndim)


def _check_trapezoid_args(y, x, name):
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(Tensor, {type(x).__name__}), but expected one of:\n"
                        " * (Tensor y, Tensor x, *, int dim = -1)\n"
                        " * (Tensor y, *, Number dx = 1, int dim = -1)\n")
    if x is not None and (y._dtype is dt.bool or x._dtype is dt.bool):
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")
    if x is None and y._dtype is dt.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")


# PyTorch's order of operations, which matters for integer samples: sums of neighbouring
# samples and differences of x are taken in their own dtype (and wrap around), and only the
# final halving makes the result floating point.
def _pair_sums(y, d):
    intervals = builtins.max(y.shape[d] - 1, 0)
    return y.narrow(d, 1 if intervals else 0, intervals) + y.narrow(d, 0, intervals)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: give `x` or "
                        "`dx`, not both")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, y.ndim)
    if y.shape[d] == 0:  # PyTorch: zeros shaped (and typed) like the sum over no samples
        return y.new_zeros(y.shape[:d] + y.shape[d + 1:])
    _check_trapezoid_args(y, x, "trapezoid")
    if x is not None:
        return div_scalar((_pair_sums(y, d) * _trapezoid_dx(x, y, d, "trapezoid")).sum(d), 2.0)
    ends = y.select(d, 0) + y.select(d, -1)
    return mul_scalar(y.sum(d) - mul_scalar(ends, 0.5), 1 if dx is None else dx)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: "
                        "give `x` or `dx`, not both")
    if y.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, y.ndim)
    _check_trapezoid_args(y, x, "cumulative_trapezoid")
    if x is not None:
        dx_t = _trapezoid_dx(x, y, d, "cumulative_trapezoid")
        return div_scalar((_pair_sums(y, d) * dx_t).cumsum(d), 2.0)
    return mul_scalar(_pair_sums(y, d), (1 if dx is None else dx) / 2.0).cumsum(d)


# ---------------------------------------------------------------------------------------------
# gradient
# ---------------------------------------------------------------------------------------------

def gradient(input, *, spacing=1, dim=None, edge_order=1):
    nd = input._data.ndim
    if input._dtype is dt.uint8:
        raise RuntimeError("ember.gradient does not support uint8 input.")
    if edge_order not in (1, 2):
        raise RuntimeError("ember.gradient only supports edge_order=1 and edge_order=2.")
    coordinates = isinstance(spacing, (tuple, list)) and builtins.any(
        isinstance(s, Tensor) for s in spacing)
    if input._dtype is dt.bool and not (coordinates and edge_order == 2):
        # PyTorch's differences subtract bools (its second-order formula for coordinates
        # multiplies them instead)
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if dim is None:
        dims = tuple(range(nd))
    elif isinstance(dim, numbers.Integral):
        dims = (wrap_dim(dim, nd),)
    else:
        dims = wrap_dims(tuple(dim), nd)
    if isinstance(spacing, (tuple, list)):
        if len(spacing) != len(dims) and dim is None:
            raise RuntimeError(f"ember.gradient expected spacing to be unspecified, a scalar, "
                               f"or a list of length equal to 'self.dim() = {nd}', since dim "
                               f"argument was not given, but got a list of length "
                               f"{len(spacing)}")
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.".replace("torch.", "ember."))
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input._data.shape[d] < edge_order + 1:
            raise RuntimeError("ember.gradient expected each dimension size to be at least "
                               "edge_order+1")
    values = input if input._dtype._kind >= 2 else input.to(dt.get_default_dtype())
    return tuple(_gradient_along(values, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_along(f, d, h, edge_order):
    n = f._data.shape[d]

    def part(start, stop):
        return f.narrow(d, start, stop - start)

    if isinstance(h, Tensor):
        if h._device is not f._device:
            raise device_mismatch(f, h)
        if h._data.ndim != 1 or h._data.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"as the input tensor and to have one dimension of size {n}"
                               .replace("torch.", "ember."))
        return _gradient_coordinates(f, d, h, edge_order, part, n)
    # PyTorch's composite and its arithmetic: the central difference is divided by h, then by
    # 2, and numbers apply through the Scalar overloads.
    interior = div_scalar(part(2, n) - part(0, n - 2), h)
    if edge_order == 1:
        first = div_scalar(part(1, 2) - part(0, 1), h)
        last = div_scalar(part(n - 1, n) - part(n - 2, n - 1), h)
    else:
        first = div_scalar(mul_scalar(part(0, 1), -1.5) + mul_scalar(part(1, 2), 2)
                           - mul_scalar(part(2, 3), 0.5), h)
        last = div_scalar(mul_scalar(part(n - 3, n - 2), 0.5) - mul_scalar(part(n - 2, n - 1), 2)
                          + mul_scalar(part(n - 1, n), 1.5), h)
    return cat([first, div_scalar(interior, 2), last], d)


def _gradient_coordinates(f, d, coords, edge_order, part, n):
    shape = [1] * f._data.ndim
    shape[d] = -1

    def along(t):
        return t.reshape(shape)

    # PyTorch's composite, op for op: each one-sided stencil is its three weights times the
    # three slices, summed.
    dx = coords.diff(1, 0)
    if dx._dtype._kind < 2:
        dx = dx.to(f._dtype)
    dx1, dx2 = dx.narrow(0, 0, n - 2), dx.narrow(0, 1, n - 2)
    a = along(-dx2 / (dx1 * (dx1 + dx2)))
    b = along((dx2 - dx1) / (dx1 * dx2))
    c = along(dx1 / (dx2 * (dx1 + dx2)))
    interior = a * part(0, n - 2) + b * part(1, n - 1) + c * part(2, n)
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / dx[0]
        last = (part(n - 1, n) - part(n - 2, n - 1)) / dx[-1]
    else:
        h1, h2 = dx[0], dx[1]
        a = -(mul_scalar(h1, 2.0) + h2) / (h1 * (h1 + h2))
        b = (h1 + h2) / (h1 * h2)
        c = (-h1) / (h2 * (h1 + h2))
        first = a * part(0, 1) + b * part(1, 2) + c * part(2, 3)
        h1, h2 = dx[-2], dx[-1]
        a = h2 / (h1 * (h2 + h1))
        b = -(h2 + h1) / (h2 * h1)
        c = (mul_scalar(h2, 2) + h1) / (h2 * (h2 + h1))
        last = a * part(n - 3, n - 2) + b * part(n - 2, n - 1) + c * part(n - 1, n)
    return cat([first, interior, last], d)


# ---------------------------------------------------------------------------------------------
# Strided windows: Tensor.unfold and as_strided (views)
# ---------------------------------------------------------------------------------------------

class UnfoldBackward0(Node):
    """Windows may overlap: each input element gets the sum of the gradients of every window
    position that reads it (one index_add along the unfolded dim)."""
    __slots__ = ()

    def backward(self, grad):
        d, size, step, in_shape = self.dim, self.size, self.step, self.in_shape
        if len(in_shape) == 0:
            return grad.reshape(())
        windows = grad.shape[d]
        xp = grad._backend.xp
        positions = (xp.arange(windows, dtype=np.int64)[:, None] * step
                     + xp.arange(size, dtype=np.int64)[None, :]).reshape(-1)
        index = _wrap(positions, dt.int64, grad)
        # (..., windows, ..., size) -> (..., windows * size, ...) lined up with ``positions``.
        spread = grad.movedim(-1, d + 1)
        merged_shape = list(in_shape)
        merged_shape[d] = windows * size
        spread = spread.reshape(merged_shape)
        return grad.new_zeros(in_shape).index_add(d, index, spread)


def unfold(input, dimension, size, step):
    """``Tensor.unfold``: every window of ``size`` elements along ``dimension``, ``step`` apart,
    as a new last dimension. A view of ``input``."""
    nd = input._data.ndim
    d = wrap_dim(dimension, nd)
    size, step = operator.index(size), operator.index(step)
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    arr = input._data
    length = arr.shape[d] if nd else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    itemsize = arr.itemsize
    if nd == 0:
        shape, strides = (size,), (itemsize,)
    else:
        shape = list(arr.shape)
        strides = list(arr.strides)
        shape[d] = (length - size) // step + 1
        strides[d] = arr.strides[d] * step
        shape.append(size)
        strides.append(arr.strides[d])
    xp = input._backend.xp
    data = xp.lib.stride_tricks.as_strided(arr, shape=tuple(shape), strides=tuple(strides))
    replay = lambda t: unfold(t, d, size, step)  # noqa: E731
    out = make_view(input, data, replay)
    if needs_grad(input):
        record(UnfoldBackward0, (input,), out, dim=d, size=size, step=step,
               in_shape=tuple(arr.shape))
    return out


class UnfoldBackwardBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return unfold(grad, self.dim, self.size, self.step)


def unfold_backward(grad_in, input_sizes, dim, size, step):
    """ATen's ``unfold_backward``: windows laid out as ``Tensor.unfold(dim, size, step)`` lays
    them out (``grad_in``), summed back into a tensor of ``input_sizes`` (overlap-add). Window
    ``f`` covers positions ``f * step + k``; the windows are added in ``ceil(size / step)``
    slabs, slab ``j`` holding each window's samples ``j * step ...``, which land in disjoint
    ``step``-long blocks, so each slab is one vectorised add."""
    xp = grad_in._backend.xp
    g = grad_in._data
    sizes = tuple(input_sizes)
    d = wrap_dim(dim, len(sizes))
    frames = g.shape[d]
    slabs = -(-size // step)
    lead, rest = sizes[:d], sizes[d + 1:]
    blocks = xp.zeros(lead + (frames + slabs, step) + rest, dtype=g.dtype)
    windows = xp.moveaxis(g, -1, d + 1)                       # (..., frames, size, ...)
    pick = (slice(None),) * d
    for j in range(slabs):
        width = builtins.min(step, size - j * step)
        blocks[pick + (slice(j, j + frames), slice(0, width))] += \
            windows[pick + (slice(None), slice(j * step, j * step + width))]
    flat = blocks.reshape(lead + ((frames + slabs) * step,) + rest)
    data = xp.ascontiguousarray(flat[pick + (slice(0, sizes[d]),)])
    res = _wrap(data, grad_in._dtype, grad_in)
    if needs_grad(grad_in):
        record(UnfoldBackwardBackward0, (grad_in,), res, dim=d, size=size, step=step)
    return res


def _storage_root(input):
    """The tensor whose array is the whole storage ``input`` views, and ``input``'s offset in it
    (in elements)."""
    root = input._base if input._base is not None else input
    return root, input.storage_offset()


class AsStridedBackward0(Node):
    """PyTorch's ``as_strided_backward`` for a base that does not overlap itself: the output's
    gradient is scatter-added into a flat buffer laid out like the storage, then the input's
    elements are read back from it at their own storage positions. An input whose elements
    share memory (an expanded tensor) gets each storage gradient divided by how many input
    elements share it, as PyTorch does."""
    __slots__ = ()

    def backward(self, grad):
        xp = grad._backend.xp
        out_pos = _positions(xp, self.out_geometry)
        in_pos = _positions(xp, self.in_geometry)
        extent = builtins.max(_extent(self.out_geometry), _extent(self.in_geometry))
        buffer = grad.new_zeros((extent,)).index_add(
            0, _wrap(out_pos.reshape(-1), dt.int64, grad), grad.reshape(-1))
        flat_in = in_pos.reshape(-1)
        result = buffer.index_select(0, _wrap(flat_in, dt.int64, grad))
        # Divided even where no position repeats (a count of 1 divides exactly): asking
        # whether any repeats would cost a device a host sync.
        counts = xp.bincount(flat_in, minlength=extent)[flat_in] if flat_in.size else flat_in
        if counts.size:
            result = result / _wrap(counts.astype(grad._data.dtype), grad._dtype, grad)
        return result.reshape(self.in_geometry[0])


def _extent(geometry):
    """One past the last storage position a (shape, strides, offset) view reaches, from its
    metadata (strides are never negative here), not from its positions on the device."""
    shape, strides, offset = geometry
    if 0 in tuple(shape):
        return 0
    return offset + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _positions(xp, geometry):
    """Storage position (in elements) of every element of a (shape, strides, offset) view."""
    shape, strides, offset = geometry
    pos = xp.full(tuple(shape), offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, strides)):  # one broadcast add per dimension
        axis_shape = [1] * len(shape)
        axis_shape[k] = n
        pos = pos + (xp.arange(n, dtype=np.int64) * s).reshape(axis_shape)
    return pos


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given sizes and strides (in elements), starting
    ``storage_offset`` elements into the storage (default: where ``input`` starts).

    Ember's storage is the root tensor's array (the ``_base`` every view points to), so
    offsets and strides address the same elements as in PyTorch whenever that array is one
    contiguous block, C or Fortran order: what factories and ops make. A root that is not
    (``from_numpy`` of a strided NumPy view) is refused with a RuntimeError; PyTorch would see
    the NumPy buffer's whole extent there.

    The backward is PyTorch's ``as_strided_backward`` (see ``AsStridedBackward0``): exact for
    any input geometry, including overlapping outputs and expanded inputs."""
    size = tuple(operator.index(s) for s in size)
    stride = tuple(operator.index(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if builtins.any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    root, own_offset = _storage_root(input)
    offset = own_offset if storage_offset is None else operator.index(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    root_arr = root._data
    storage_size = root_arr.size
    itemsize = root_arr.itemsize
    if 0 in size:
        needed = 0
    else:
        needed = offset + 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    if needed > storage_size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {itemsize} requiring a storage size "
                           f"of {needed * itemsize} are out of bounds for storage of size "
                           f"{storage_size * itemsize}")
    if not (root_arr.flags.c_contiguous or root_arr.flags.f_contiguous) and root_arr.size > 1:
        raise RuntimeError("as_strided: Ember needs the storage of the input (its base tensor) "
                           "to be one contiguous array")
    xp = input._backend.xp
    flat = root_arr.reshape(-1, order="A")
    if flat.size == 0:
        data = xp.lib.stride_tricks.as_strided(flat, shape=size, strides=(0,) * len(size))
    else:
        start = flat[offset:offset + 1] if offset < flat.size else flat[:0]
        data = xp.lib.stride_tricks.as_strided(start, shape=size,
                                               strides=tuple(s * itemsize for s in stride))
    replay = lambda t: as_strided(t, size, stride, storage_offset)  # noqa: E731
    out = make_view(input, data, replay)
    if needs_grad(input):
        in_strides = input.stride() if input._data.size > 1 else (0,) * input.ndim
        record(AsStridedBackward0, (input,), out, out_geometry=(size, stride, offset),
               in_geometry=(tuple(input.shape), tuple(in_strides), own_offset))
    return out


# ---------------------------------------------------------------------------------------------
# Distances
# ---------------------------------------------------------------------------------------------

_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": True,
                "donot_use_mm_for_euclid_dist": False}


def _euclidean_by_matmul(x1, x2):
    """|a - b|^2 = |a|^2 - 2 a.b + |b|^2 as one batched matrix product (what PyTorch does for
    large inputs: far less memory than the pairwise differences, at some cost in accuracy for
    nearly equal points); the tiny floor keeps sqrt's gradient finite."""
    x1_norm = (x1 * x1).sum(-1, keepdim=True)
    x2_norm = (x2 * x2).sum(-1, keepdim=True)
    ones1 = x1_norm.new_ones(x1_norm.shape)
    ones2 = x2_norm.new_ones(x2_norm.shape)
    left = cat([x1 * -2, x1_norm, ones1], -1)
    right = cat([x2, ones2, x2_norm], -1)
    return left.matmul(right.transpose(-1, -2)).clamp_min(1e-30).sqrt()


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if _autocast.active and _autocast.enabled_for(x1, "cdist"):
        return _autocast.run(cdist, "cdist", x1, x2, p, compute_mode)
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    if x1._device is not x2._device:
        raise device_mismatch(x1, x2)
    for name, t in (("X1", x1), ("X2", x2)):
        if t._dtype._kind < 2:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{dtype_name(t._dtype)}")
    if x1._dtype is not x2._dtype:
        raise RuntimeError(f"expected scalar type {dtype_name(x1._dtype)} but found "
                           f"{dtype_name(x2._dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    use_mm = _CDIST_MODES[compute_mode]
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    if use_mm is None:
        use_mm = rows1 > 25 or rows2 > 25
    batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    empty = 0 in (rows1, rows2, x1.shape[-1])
    if p == 2 and use_mm and not empty:
        if x1.ndim == x2.ndim == 2:  # PyTorch's EuclideanDistBackward0 under a view
            return record_composite(EuclideanDistBackward0, (x1, x2),
                                    _euclidean_by_matmul).view(rows1, rows2)
        return _euclidean_by_matmul(x1.expand(batch + tuple(x1.shape[-2:])),
                                    x2.expand(batch + tuple(x2.shape[-2:])))
    if x1._dtype in (dt.float16, dt.bfloat16) and not empty:
        # PyTorch's direct kernel has no half-precision loops (the matrix-product path has).
        raise NotImplementedError(f"\"cdist\" not implemented for '{dtype_name(x1._dtype)}'")
    return record_composite(CdistBackward0, (x1, x2), lambda x1, x2: _distances(x1, x2, p, batch))


class CdistBackward0(CompositeBackward):
    __slots__ = ()


class EuclideanDistBackward0(CompositeBackward):
    __slots__ = ()


def _distances(x1, x2, p, batch):
    x1 = x1.expand(batch + tuple(x1.shape[-2:]))
    x2 = x2.expand(batch + tuple(x2.shape[-2:]))
    differences = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        counts = (differences != 0).sum(-1).to(x1._dtype)
        if needs_grad(differences):
            record(CdistZeroNormBackward, (differences,), counts)
        return counts
    return differences.norm(p, -1)


class CdistZeroNormBackward(Node):
    """The "0-norm" counts differing coordinates, a step function: PyTorch's gradient is zero
    (a zero tensor, not None)."""
    __slots__ = ()

    def backward(self, grad):
        return grad.new_zeros(self._in_meta[0][0])


# ``torch.pdist``, ``torch.cosine_similarity`` and ``torch.pairwise_distance`` are
# nn.functional's functions (``F.pdist is torch.pdist``).
pdist = distance.pdist
cosine_similarity = distance.cosine_similarity
pairwise_distance = distance.pairwise_distance
