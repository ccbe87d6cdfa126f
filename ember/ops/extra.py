"""More of PyTorch's op catalogue: element-wise functions (copysign, logaddexp, gcd, frexp ...),
shape builders (meshgrid, kron, block_diag, rot90, vander ...), index writes (index_fill,
index_copy, put, masked_scatter, scatter_reduce) and aminmax.

Each forward is one array call where NumPy has the function (``copysign``, ``logaddexp``,
``gcd``, ``frexp``, ``nextafter``, ``ufunc.at`` for scattering); shape builders compose
existing Ember ops, whose gradients they inherit.
"""
import builtins
import math
import operator
import warnings

import numpy as np

from .. import _dtype as dt
from ..autograd.grad_mode import no_grad
from ._dispatch import CompositeBackward, record_composite
from ._dispatch import (Tensor, Node, needs_grad, record, _wrap, wrap_dim, dtype_name,
                        device_mismatch, binary_operands, cast, to_float_dtype)
from .elementwise import NotImplementedBackward, _operands, _opmath, where, float_power
from .. import return_types
from .reduce import amin, amax, PairBackward, record_pair
from .shape import cat, stack, broadcast_shapes, unsafe_view
from .indexing import _check_index, _coords, _pad_to, _fill_value
from .creation import resolve_device, _finish, _to_backend

__all__ = ["copysign", "logaddexp", "logaddexp2", "sgn", "heaviside", "deg2rad", "rad2deg",
           "gcd", "lcm", "nextafter", "ldexp", "frexp", "meshgrid", "cartesian_prod",
           "combinations", "block_diag", "rot90", "kron", "vander", "tril_indices",
           "triu_indices", "ravel", "scatter_reduce", "aminmax", "index_fill", "index_copy",
           "put", "masked_scatter"]

METHODS = ["copysign", "logaddexp", "logaddexp2", "sgn", "heaviside", "deg2rad", "rad2deg",
           "gcd", "lcm", "nextafter", "ldexp", "frexp", "rot90", "kron", "ravel",
           "scatter_reduce", "aminmax", "index_fill", "index_copy", "put", "masked_scatter",
           "float_power_"]
INPLACE = ["copysign", "sgn", "heaviside", "deg2rad", "rad2deg", "gcd", "lcm", "nextafter",
           "ldexp", "scatter_reduce", "index_fill", "index_copy", "put", "masked_scatter"]


# ---------------------------------------------------------------------------------------------
# Named results (torch.return_types.frexp / aminmax)
# ---------------------------------------------------------------------------------------------

_frexp_result = return_types.frexp
_aminmax_result = return_types.aminmax


def _require_tensor(fn_name, arg_name, position, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn_name}(): argument '{arg_name}' (position {position}) must be "
                        f"Tensor, not {type(value).__name__}")


def _not_implemented(kernel, dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(dtype)}'")


# ---------------------------------------------------------------------------------------------
# Element-wise
# ---------------------------------------------------------------------------------------------

class CopysignBackward0(Node):
    """d/d input of |input| * sign(other) is result / input (0 where input is 0); the sign
    argument gets no gradient."""
    __slots__ = ()

    def backward(self, grad):
        x, result = self.saved_tensors
        zero = x == 0
        ratio = (result / x.masked_fill(zero, 1)).masked_fill(zero, 0)
        # The sign argument's gradient is zero almost everywhere: PyTorch returns zeros.
        if len(self._edges) == 1:
            return (grad * ratio,)
        g_other = grad.new_zeros(self._in_meta[1][0]) if self._edges[1] is not None else None
        return grad * ratio, g_other


class CopysignBackward1(CopysignBackward0):
    """``copysign`` with a number sign: one edge, to the input."""
    __slots__ = ()


def copysign(input, other):
    like, a, b, rt = _operands(input, other)
    rt = to_float_dtype(rt)
    xp = like._backend.xp
    data = xp.copysign(_opmath(cast(a, rt), rt), b if not hasattr(b, "dtype") else _opmath(cast(b, rt), rt))
    res = _wrap(cast(xp.asarray(data), rt), rt, like)
    if isinstance(input, Tensor) and needs_grad(input):
        if isinstance(other, Tensor):
            record(CopysignBackward0, (input, other), res, save=(input,), save_out=True)
        else:
            record(CopysignBackward1, (input,), res, save=(input,), save_out=True)
    return res


class LogaddexpBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        exp = (lambda t: t.exp2()) if self.base2 else (lambda t: t.exp())
        ga = grad / (exp(b - a) + 1) if self._edges[0] is not None else None
        gb = grad / (exp(a - b) + 1) if self._edges[1] is not None else None
        return ga, gb


class Logaddexp2Backward0(LogaddexpBackward0):
    __slots__ = ()


def _logaddexp(input, other, base2):
    name = "logaddexp2" if base2 else "logaddexp"
    _require_tensor(name, "other", 2, other)
    a, b, rt = binary_operands(input, other)
    if rt._kind < 2:
        raise _not_implemented(f"{name}_cpu", rt)
    xp = input._backend.xp
    ufunc = xp.logaddexp2 if base2 else xp.logaddexp
    res = _wrap(cast(xp.asarray(ufunc(_opmath(a, rt), _opmath(b, rt))), rt), rt, input)
    if needs_grad(input, other):
        record(Logaddexp2Backward0 if base2 else LogaddexpBackward0, (input, other), res,
               save=(input, other), base2=base2)
    return res


def logaddexp(input, other):
    return _logaddexp(input, other, False)


def logaddexp2(input, other):
    return _logaddexp(input, other, True)


class SgnBackward0(Node):
    """sgn is piecewise constant on real inputs."""
    __slots__ = ()

    def backward(self, grad):
        return grad.new_zeros(grad.shape)


def sgn(input):
    """sign for real inputs; z / |z| (0 at 0) for complex ones."""
    d = input._dtype
    data = input._data
    xp = input._backend.xp
    if d is dt.bool:
        return _wrap(data.copy(), d, input)
    if d._kind == 3:  # the complex family's sgn, which carries the complex gradient
        from .complex import sgn as complex_sgn
        return complex_sgn(input)
    res = _wrap(xp.sign(data), d, input)
    if needs_grad(input):
        record(SgnBackward0, (input,), res)
    return res


def heaviside(input, values):
    _require_tensor("heaviside", "values", 2, values)
    if values._device is not input._device:
        raise device_mismatch(input, values)
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    xp = input._backend.xp
    x = input._data
    # PyTorch's kernel: values where x == 0, else (x > 0), so NaN maps to 0 (not NaN as NumPy).
    out = xp.where(x == 0, values._data, (x > 0).astype(x.dtype))
    res = _wrap(out.astype(x.dtype, copy=False), input._dtype, input)
    if needs_grad(input, values):
        record(NotImplementedBackward, (input, values), res, op="heaviside")
    return res


class Deg2RadBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return (grad * self.factor,)


class Rad2DegBackward0(Deg2RadBackward0):
    __slots__ = ()


def _angle_units(input, factor, node):
    x = input if input._dtype._kind >= 2 else input.to(dt.get_default_dtype())
    with no_grad():
        res = x * factor
    if needs_grad(x):
        record(node, (x,), res, factor=factor)
    return res


def deg2rad(input):
    return _angle_units(input, math.pi / 180.0, Deg2RadBackward0)


def rad2deg(input):
    return _angle_units(input, 180.0 / math.pi, Rad2DegBackward0)


def _integer_binary(name, input, other):
    _require_tensor(name, "other", 2, other)
    a, b, rt = binary_operands(input, other)
    if rt._kind != 1:
        raise _not_implemented(f"{name}_cpu", rt)
    xp = input._backend.xp
    return _wrap(cast(xp.asarray(getattr(xp, name)(a, b)), rt), rt, input)


def gcd(input, other):
    return _integer_binary("gcd", input, other)


def lcm(input, other):
    return _integer_binary("lcm", input, other)


def float_power_(input, exponent):
    """In place, so only a double (or complex double) base can hold the double result."""
    if input._dtype not in (dt.float64, dt.complex128):
        raise RuntimeError(f"the base given to float_power_ has dtype {dtype_name(input._dtype)} "
                           "but the operation's result requires dtype Double")
    from .inplace import inplace
    return inplace(input, float_power, exponent)


class NextafterBackward0(Node):
    """PyTorch passes the gradient straight through to ``input`` (the step is negligible)."""
    __slots__ = ()

    def backward(self, grad):
        g_other = grad.new_zeros(self._in_meta[1][0]) if self._edges[1] is not None else None
        return grad, g_other


def nextafter(input, other):
    _require_tensor("nextafter", "other", 2, other)
    a, b, rt = binary_operands(input, other)
    if rt._kind != 2:
        raise _not_implemented("nextafter_cpu", rt)
    xp = input._backend.xp
    res = _wrap(cast(xp.asarray(xp.nextafter(a, b)), rt), rt, input)
    if needs_grad(input, other):
        record(NextafterBackward0, (input, other), res)
    return res


def ldexp(input, other):
    """``input * 2 ** other``, in the float type of the two (integers become the default float)."""
    _require_tensor("ldexp", "other", 2, other)
    rt = to_float_dtype(dt.result_type(input, other))
    return record_composite(LdexpBackward0, (input, other),
                            lambda input, other: input.to(rt) * other.to(rt).exp2())


class LdexpBackward0(CompositeBackward):
    __slots__ = ()


class FrexpBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (exponent,) = self.saved_tensors
        return grad / exponent.to(grad.dtype).exp2()


def frexp(input):
    if input._dtype._kind != 2:
        raise RuntimeError("ember.frexp() only supports floating-point dtypes")
    xp = input._backend.xp
    data = input._data
    # NumPy's frexp has no bfloat16 loop; float32 holds every bfloat16 exactly, and a mantissa
    # in [0.5, 1) keeps the input's significant bits, so rounding back is exact.
    work = data.astype(np.float32) if input._dtype is dt.bfloat16 else data
    mantissa, exponent = xp.frexp(work)
    mantissa_t = _wrap(mantissa.astype(data.dtype, copy=False), input._dtype, input)
    exponent_t = _wrap(exponent.astype(np.int32, copy=False), dt.int32, input)
    if needs_grad(input):
        record(FrexpBackward0, (input,), mantissa_t, save=(exponent_t,))
    return _frexp_result((mantissa_t, exponent_t))


# ---------------------------------------------------------------------------------------------
# Shape builders
# ---------------------------------------------------------------------------------------------

def _tensor_list(tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def meshgrid(*tensors, indexing=None):
    tensors = _tensor_list(tensors)
    if indexing is None:
        warnings.warn("ember.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError("ember.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {list(t.shape)}")
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t._device is not tensors[0]._device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing not in ("xy", "ij"):
        raise RuntimeError(f"ember.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    sizes = [t.numel() for t in tensors]
    grids = []
    for k, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[k] = sizes[k]
        grids.append(t.view(shape).expand(sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    tensors = _tensor_list(tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    r = operator.index(r)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    n = input.shape[0]
    xp = input._backend.xp
    # PyTorch's composite: the r-fold meshgrid of the input, each grid masked to the r-tuples
    # of positions that increase (do not decrease, with replacement), stacked as columns.
    positions = xp.indices((n,) * r, dtype=np.int64)
    keep = xp.ones((n,) * r, dtype=bool)
    for k in range(r - 1):
        keep &= ((positions[k] <= positions[k + 1]) if with_replacement
                 else (positions[k] < positions[k + 1]))
    mask = _wrap(keep, dt.bool, input)
    columns = [grid.masked_select(mask) for grid in meshgrid([input] * r, indexing="ij")]
    return stack(columns, 1)


def block_diag(*tensors):
    tensors = list(tensors)
    matrices = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError("ember.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.ndim} dimensions")
        if t._device is not tensors[0]._device:
            raise device_mismatch(tensors[0], t)
        matrices.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not matrices:
        from .creation import empty
        return empty((1, 0))
    result_dtype = matrices[0]._dtype
    for m in matrices[1:]:
        result_dtype = dt.promote_types(result_dtype, m._dtype)
    total_cols = builtins.sum(m.shape[1] for m in matrices)

    def composition(*tensors):
        rows, left = [], 0
        for t in tensors:
            m = (t.reshape(1, -1) if t.ndim < 2 else t).to(result_dtype)
            cols = m.shape[1]
            pieces = [m.new_zeros((m.shape[0], left)), m,
                      m.new_zeros((m.shape[0], total_cols - left - cols))]
            rows.append(cat(pieces, 1))
            left += cols
        return cat(rows, 0)
    return record_composite(BlockDiagBackward0, tuple(tensors), composition)


class BlockDiagBackward0(CompositeBackward):
    __slots__ = ()


def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or builtins.abs(dims[0] - dims[1]) == nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    d0, d1 = wrap_dim(dims[0], nd), wrap_dim(dims[1], nd)
    k = operator.index(k) % 4
    with no_grad():
        if k == 1:
            res = input.flip(d1).transpose(d0, d1)
        elif k == 2:
            res = input.flip(d0, d1)
        elif k == 3:
            res = input.flip(d0).transpose(d0, d1)
        else:
            res = input.clone()
        if res._base is not None:  # a transposed view of the flipped copy: not a view of input
            res = _wrap(res._data, res._dtype, res)
    if needs_grad(input):
        record(Rot90Backward0, (input,), res, k=k, dims=(d0, d1))
    return res


class Rot90Backward0(Node):
    """A rotation's adjoint is the opposite rotation."""
    __slots__ = ()

    def backward(self, grad):
        return (rot90(grad, -self.k, self.dims),)


def kron(input, other):
    if input._device is not other._device:
        raise device_mismatch(input, other)
    nd = builtins.max(input.ndim, other.ndim)
    a_shape = (1,) * (nd - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (nd - other.ndim) + tuple(other.shape)
    # a[i1, i2, ...] * b[j1, j2, ...] laid out as (i1, j1, i2, j2, ...): one broadcast product,
    # between ATen's _unsafe_view reshapes (its graph).
    a = unsafe_view(input, tuple(x for s in a_shape for x in (s, 1)))
    b = unsafe_view(other, tuple(x for s in b_shape for x in (1, s)))
    product = a * b
    return unsafe_view(product, tuple(p * q for p, q in zip(a_shape, b_shape)))


def vander(x, N=None, increasing=False):
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    result_dtype = dt.promote_types(x._dtype, dt.int64)
    rows = x.shape[0]
    ones = x.new_ones((rows, builtins.min(n, 1)), dtype=result_dtype)
    if n > 1:
        # Powers as a running product, as PyTorch builds them (the same rounding and a
        # gradient that is defined at 0).
        powers = x.to(result_dtype).unsqueeze(1).expand(rows, n - 1).cumprod(1)
        result = cat([ones, powers], 1)
    else:
        result = ones
    return result if increasing else result.flip(1)


def _tri_indices(name, row, col, offset, dtype, device, lower):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = dt.int64 if dtype is None else dt.check_dtype(dtype, name)
    if dtype not in (dt.int64, dt.int32):
        raise _not_implemented(name, dtype)
    maker = np.tril_indices if lower else np.triu_indices
    rows, cols = maker(row, offset, col)
    values = np.stack([rows, cols]).astype(dtype.np) if row and col else np.zeros((2, 0), dtype.np)
    dev = resolve_device(device)
    return _finish(_to_backend(values, dev), dtype, dev, False)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False):
    return _tri_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False):
    return _tri_indices("triu_indices", row, col, offset, dtype, device, False)


def ravel(input):
    return input.contiguous().view(-1)


# ---------------------------------------------------------------------------------------------
# Index writes: index_fill, index_copy, put, masked_scatter, scatter_reduce
# ---------------------------------------------------------------------------------------------

def _dim_slices(d, index):
    return (slice(None),) * d + (index,)


def _dim_index(input, dim, index, name, expected_error, wrap_negative):
    """``dim`` wrapped and ``index``'s array checked as PyTorch's index_fill/index_copy do."""
    if index._device is not input._device:
        raise device_mismatch(input, index)
    if index._dtype is not dt.int64:
        raise expected_error
    if index.ndim > 1:
        if name == "index_fill_":
            raise RuntimeError("Index has to be a vector/scalar")
        raise IndexError(f"{name}(): Index should have dimension 1 or 0 (got {index.ndim})")
    nd = input.ndim
    d = wrap_dim(dim, nd)
    size = input.shape[d] if nd else 1
    idx = index._data.reshape(-1)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        bad = hi if hi >= size else (lo if lo < (-size if wrap_negative else 0) else None)
        if bad is not None:
            prefix = "" if name == "index_fill_" else f"{name}(): "
            raise IndexError(f"{prefix}index {bad} is out of bounds for dimension {d} with size "
                             f"{size}")
    if wrap_negative:
        idx = input._backend.xp.where(idx < 0, idx + size, idx)
    return d, idx


class IndexFillBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        d = self.dim
        g_self = grad.index_fill(d, index, 0) if self._edges[0] is not None else None
        g_value = None
        if len(self._edges) > 1 and self._edges[1] is not None:
            # A position listed twice is filled once: it counts once towards the value's grad.
            unique = _wrap(grad._backend.xp.unique(index._data), dt.int64, index)
            g_value = grad.index_select(d, unique).sum() if grad.ndim else grad.sum()
        return (g_self, g_value)[:len(self._edges)]


class IndexFillBackward1(IndexFillBackward0):
    """``index_fill`` with a 0-d tensor value (edges: input, value); filling a number has
    the one edge to the input."""
    __slots__ = ()


def index_fill(input, dim, index, value):
    d, idx = _dim_index(input, dim, index, "index_fill_",
                        IndexError("index_fill_(): Expected dtype int64 for index."), True)
    vt = value if isinstance(value, Tensor) else None
    if vt is not None:
        if vt.ndim != 0:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {vt.ndim} dimension(s).")
        if vt._device is not input._device:
            raise device_mismatch(input, vt)
        fill = vt._data.astype(input._data.dtype)
    else:
        fill = _fill_value(input._backend.xp, value, input._data.dtype)
    data = input._data.copy()
    if data.ndim == 0:
        if idx.size:
            data[...] = fill
    else:
        data[_dim_slices(d, idx)] = fill
    res = _wrap(data, input._dtype, input)
    if needs_grad(input, vt):
        node, inputs = ((IndexFillBackward0, (input,)) if vt is None
                        else (IndexFillBackward1, (input, vt)))
        record(node, inputs, res, save=(_wrap(idx, dt.int64, index),), dim=d)
    return res


class IndexCopyBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        d = self.dim
        g_self = grad.index_fill(d, index, 0) if self._edges[0] is not None else None
        g_source = None
        if self._edges[1] is not None:
            g_source = (grad.index_select(d, index) if grad.ndim else grad).reshape(self.source_shape)
        return g_self, g_source


def index_copy(input, dim, index, source):
    d, idx = _dim_index(input, dim, index, "index_copy_", RuntimeError(
        f"index_copy_(): Expected a long tensor for index, but got {dtype_name(index._dtype)}"),
        False)
    if source._device is not input._device:
        raise device_mismatch(input, source)
    if source._dtype is not input._dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {dtype_name(input._dtype)} and (source) "
                           f"{dtype_name(source._dtype)}")
    if source.ndim != input.ndim and source.ndim and input.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({input.ndim})")
    source_len = source.shape[d] if source.ndim else 1
    if idx.size != source_len:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({source_len})")
    for k in range(input.ndim):
        if k != d and source.ndim and source.shape[k] != input.shape[k]:
            raise RuntimeError("index_copy_(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {input.shape[k]} at dimension "
                               f"{k} and source slice shape: {source.shape[k]} at dimension {k}.")
    data = input._data.copy()
    if data.ndim == 0:
        data[...] = source._data.reshape(())
    else:
        data[_dim_slices(d, idx)] = source._data.reshape(
            tuple(source.shape) if source.ndim else (1,) * data.ndim)
    res = _wrap(data, input._dtype, input)
    if needs_grad(input, source):
        record(IndexCopyBackward0, (input, source), res, save=(_wrap(idx, dt.int64, index),),
               dim=d, source_shape=tuple(source.shape))
    return res


class PutBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        g_self = g_source = None
        if self._edges[0] is not None:
            g_self = grad if self.accumulate else grad.put(
                index, grad.new_zeros(tuple(index.shape)))
        if self._edges[1] is not None:
            g_source = grad.reshape(-1).index_select(0, index.reshape(-1)).reshape(self.source_shape)
        return g_self, g_source


def put(input, index, source, accumulate=False):
    if index._dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{dtype_name(index._dtype)}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {dtype_name(input._dtype)} and source.dtype = "
                           f"{dtype_name(source._dtype)}")
    for t in (index, source):
        if t._device is not input._device:
            raise device_mismatch(input, t)
    if source.numel() != index.numel():
        raise IndexError("put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                         f"{index.numel()}")
    numel = input.numel()
    idx = index._data.reshape(-1)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if hi >= numel or lo < -numel:
            bad = hi if hi >= numel else lo
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {numel} "
                             "elements.")
    xp = input._backend.xp
    idx = xp.where(idx < 0, idx + numel, idx)
    flat = input._data.reshape(-1).copy()
    values = source._data.reshape(-1)
    if accumulate:
        input._backend.index_add(flat, (idx,), values)
    else:
        flat[idx] = values
    res = _wrap(flat.reshape(input._data.shape), input._dtype, input)
    if needs_grad(input, source):
        record(PutBackward0, (input, source), res, save=(_wrap(idx, dt.int64, index),),
               accumulate=accumulate, source_shape=tuple(source.shape))
    return res


class MaskedScatterBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (mask,) = self.saved_tensors
        g_self = grad.masked_fill(mask, 0) if self._edges[0] is not None else None
        g_source = None
        if self._edges[1] is not None:
            taken = grad.masked_select(mask)
            numel = math.prod(self.source_shape)
            if taken.numel() < numel:
                taken = cat([taken, taken.new_zeros((numel - taken.numel(),))])
            g_source = taken.reshape(self.source_shape)
        return g_self, g_source


def masked_scatter(input, mask, source):
    if mask._dtype is not dt.bool:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{dtype_name(mask._dtype)}")
    if source._dtype is not input._dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{dtype_name(input._dtype)} and {dtype_name(source._dtype)}")
    for t in (mask, source):
        if t._device is not input._device:
            raise device_mismatch(input, t)
    xp = input._backend.xp
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    data = xp.broadcast_to(input._data, shape).copy()
    m = xp.broadcast_to(mask._data, shape)
    count = int(m.sum())
    if count > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    data[m] = source._data.reshape(-1)[:count]
    res = _wrap(data, input._dtype, input)
    if needs_grad(input, source):
        record(MaskedScatterBackward0, (input, source), res,
               save=(_wrap(m, dt.bool, mask),), source_shape=tuple(source.shape))
    return res


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_REDUCTION_ALIASES = {"max": "amax", "min": "amin"}  # accepted by PyTorch, though undocumented


def _identity(reduce, np_dtype):
    """What an element starts from when ``include_self=False`` (overwritten by the reduction)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if np_dtype.kind == "b":
        return reduce == "amin"
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return info.min if reduce == "amax" else info.max
    return -math.inf if reduce == "amax" else math.inf


class ScatterReduceBackward0(Node):
    """PyTorch's ``scatter_reduce_backward``, rule for rule."""
    __slots__ = ()

    def backward(self, grad):
        x, index, src, result = self.saved_tensors
        d, reduce, include_self = self.dim, self.reduce, self.include_self
        if reduce == "sum":
            g_self, g_src = grad, grad.gather(d, index)
        elif reduce == "mean":
            counts = (x.new_ones(x.shape) if include_self else x.new_zeros(x.shape))
            counts = counts.scatter_add(d, index, src.new_ones(src.shape))
            counts = counts.masked_fill(counts == 0, 1)
            g_self = grad / counts
            g_src = g_self.gather(d, index)
        elif reduce == "prod":
            self_zero = x == 0
            masked_self = x.masked_fill(self_zero, 1)
            masked_self_result = masked_self.scatter_reduce(d, index, src, reduce,
                                                            include_self=include_self)
            g_self = grad * masked_self_result / masked_self
            src_zero = src == 0
            zeros_per_target = x.new_zeros(x.shape).scatter_add(d, index, src_zero.to(x.dtype))
            single_zero = src_zero & (zeros_per_target.gather(d, index) == 1)
            masked_src_result = x.scatter_reduce(d, index, src.masked_fill(single_zero, 1), reduce,
                                                 include_self=include_self)
            g_src = where(single_zero, (grad * masked_src_result).gather(d, index),
                          (grad * result).gather(d, index) / src.masked_fill(src_zero, 1))
        else:  # amax, amin: split evenly between every element equal to the result
            value = result.gather(d, index)
            self_is_result = (x == result).to(grad.dtype)
            src_is_result = (src == value).to(grad.dtype)
            shares = self_is_result.scatter_add(d, index, src_is_result)
            distributed = grad / shares
            g_self = self_is_result * distributed
            g_src = src_is_result * distributed.gather(d, index)
        if not include_self:
            g_self = g_self.scatter(d, index, 0)
        if self._edges[0] is None:
            g_self = None
        g_src = _pad_to(g_src, self.src_shape) if self._edges[1] is not None else None
        return g_self, g_src


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    reduce = _REDUCTION_ALIASES.get(reduce, reduce)
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    _require_tensor("scatter_reduce", "src", 4, src)
    d = _check_index(input, dim, index, "scatter")
    if src._device is not input._device:
        raise device_mismatch(input, src)
    if src._dtype is not input._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce == "mean" and input._dtype is dt.bool:
        raise _not_implemented("scatter_gather_tensor_cpu_reduce_mean", dt.bool)
    xp = input._backend.xp
    data = input._data.copy()
    idx = index._data
    if data.ndim:
        for k in range(idx.ndim):
            if (k != d and idx.shape[k] > data.shape[k]) or (src.ndim and idx.shape[k] > src.shape[k]):
                raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self "
                                   f"{list(data.shape)} apart from dimension {d} and to be no "
                                   f"larger size than src {list(src.shape)}")
    region = tuple(slice(0, n) for n in idx.shape)
    src_region = src[region] if src.ndim else src
    values = src_region._data
    coords = _coords(xp, idx, d) if data.ndim else ()
    if data.ndim == 0:
        values = values.reshape(())
        idx = idx.reshape(())
    low = input._dtype in (dt.float16, dt.bfloat16)
    work = data.astype(np.float32) if low else data
    vals = values.astype(np.float32) if low else values
    if not include_self:
        work[coords] = _identity(reduce, work.dtype)
    if reduce in ("sum", "mean"):
        if work.dtype == bool:
            xp.logical_or.at(work, coords, vals)
        else:
            input._backend.index_add(work, coords, vals)
    elif reduce == "prod":
        (xp.logical_and if work.dtype == bool else xp.multiply).at(work, coords, vals)
    else:
        (xp.maximum if reduce == "amax" else xp.minimum).at(work, coords, vals)
    if reduce == "mean":
        counts = xp.ones(work.shape, dtype=np.int64) if include_self else \
            xp.zeros(work.shape, dtype=np.int64)
        input._backend.index_add(counts, coords, xp.ones(idx.shape, dtype=np.int64))
        counts = xp.where(counts == 0, 1, counts)
        if work.dtype.kind in "iub":
            work = xp.floor_divide(work, counts).astype(work.dtype)
        else:
            work = (work / counts).astype(work.dtype)
    res = _wrap(work.astype(data.dtype, copy=False), input._dtype, input)
    if needs_grad(input, src):
        record(ScatterReduceBackward0, (input, src), res,
               save=(input, _wrap(idx, index._dtype, index), src_region), save_out=True, dim=d,
               reduce=reduce, include_self=include_self, src_shape=tuple(src.shape))
    return res


# ---------------------------------------------------------------------------------------------
# aminmax
# ---------------------------------------------------------------------------------------------

def aminmax(input, *, dim=None, keepdim=False):
    if dim is not None:
        d = wrap_dim(dim, input.ndim)
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    elif input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None:
        if keepdim:
            axes = tuple(range(input.ndim))
            pair = amin(input, axes, True), amax(input, axes, True)
        else:
            pair = amin(input), amax(input)
    else:
        pair = amin(input, dim, keepdim), amax(input, dim, keepdim)
    return _aminmax_result(record_pair(AminmaxBackward0, input, *pair))


class AminmaxBackward0(PairBackward):
    __slots__ = ()
