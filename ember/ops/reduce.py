"""Reductions, scans and normalisers (softmax), and the covariance and correlation matrices
(``cov``, ``corrcoef``).

As in PyTorch, float16/bfloat16 accumulate in float32, integer and bool sums and products
become int64, and a reduction over an empty dim gives the operation's identity (0 for sum, 1 for
prod, NaN for mean) or, where there is none (max, amin, argmax ...), an error.
"""
import builtins
import contextlib
import math
import operator
import warnings

from .. import _dtype as dt
from .._layout import strided as _STRIDED
from ._dispatch import (Tensor, Node, needs_grad, record, record_multi, _wrap, wrap_dims,
                        wrap_dim, dtype_name, device_mismatch)
from ..autograd.grad_mode import no_grad
from .. import return_types
from ..amp import autocast_mode as _autocast

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "max", "min", "argmax",
           "argmin", "var", "std", "var_mean", "std_mean", "norm", "logsumexp", "all", "any",
           "count_nonzero", "cumsum", "cumprod", "softmax", "log_softmax",
           "aminmax", "cov", "corrcoef"]
METHODS = ["sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "max", "min", "argmax",
           "argmin", "var", "std", "norm", "logsumexp", "all", "any", "count_nonzero", "cumsum",
           "cumprod", "softmax", "log_softmax", "aminmax", "cov", "corrcoef"]
INPLACE = ["cumsum", "cumprod"]

_LOW = (dt.float16, dt.bfloat16)


# ---------------------------------------------------------------------------------------------
# Named results, like torch.return_types
# ---------------------------------------------------------------------------------------------

_max_result, _min_result = return_types.max, return_types.min
_sort_result, _topk_result = return_types.sort, return_types.topk
_aminmax_result = return_types.aminmax


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------

def _axes(input, dim):
    """Normalised reduction axes; None or an empty tuple/list reduces every dim. A 0-d tensor
    accepts dim 0 or -1 and has no axis to reduce."""
    nd = input._data.ndim
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(nd))
    axes = wrap_dims(dim, nd)
    return axes if nd else ()


def _numel(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _reduced_shape(shape, axes, keepdim):
    return tuple(1 if i in axes else s for i, s in enumerate(shape) if keepdim or i not in axes)


def _expand_back(grad, in_shape, axes, keepdim):
    """Broadcast a reduced gradient (or result) back to the input's shape."""
    if not keepdim and axes:
        grad = grad.reshape(_reduced_shape(in_shape, axes, True))
    return grad.expand(in_shape)


def _compute_data(input, dtype=None):
    """The input's array in ``dtype`` (default: its own), widened to float32 when low precision."""
    dtype = dtype or input._dtype
    data = input._data
    if dtype in _LOW:
        return data.astype("float32")
    return data if data.dtype == dtype.np else data.astype(dtype.np)


def _result(input, array, dtype):
    return _wrap(input._backend.xp.asarray(array, dtype=dtype.np), dtype, input)


def _quiet(xp):
    """Silence NumPy's divide/invalid warnings where PyTorch silently gives inf or NaN."""
    return xp.errstate(divide="ignore", invalid="ignore") if hasattr(xp, "errstate") \
        else contextlib.nullcontext()


def _check_nonempty(input, axes, name, dim_given):
    """PyTorch's errors for reductions without an identity (max, amin, argmax ...)."""
    shape = input._data.shape
    if not dim_given and input._data.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    for a in axes:
        if shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


def _int_sum_dtype(d):
    return dt.int64 if d._kind <= 1 else d


def _differentiable(input, out_dtype):
    return out_dtype._kind >= 2 and needs_grad(input)


# ---------------------------------------------------------------------------------------------
# sum, mean, prod
# ---------------------------------------------------------------------------------------------

class SumBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        return _expand_back(grad, self.in_shape, self.axes, self.keepdim)

    def jvp(self, t):
        return t.sum(self.axes, keepdim=self.keepdim) if self.axes else t.clone()


class SumBackward0(SumBackward1):
    """Full reduction (no dim), named as PyTorch names it."""
    __slots__ = ()


def sum(input, dim=None, keepdim=False, *, dtype=None):
    if _autocast.active and dtype is None and _autocast.enabled_for(input, "sum"):
        return _autocast.run(sum, "sum", input, dim, keepdim)
    if input._layout is not _STRIDED:
        from .sparse import sum as sparse_sum
        return sparse_sum(input, dim, keepdim, dtype=dtype)
    axes = _axes(input, dim)
    out_dt = dt.check_dtype(dtype, "sum") or _int_sum_dtype(input._dtype)
    res = _result(input, _compute_data(input, out_dt).sum(axis=axes, keepdims=keepdim), out_dt)
    if _differentiable(input, out_dt):
        record(SumBackward0 if dim is None else SumBackward1, (input,), res, in_shape=input._data.shape, axes=axes,
               keepdim=keepdim)
    return res


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    return sum(input.nan_to_num(0.0, posinf=math.inf, neginf=-math.inf)
               if input._dtype._kind >= 2 else input, dim, keepdim, dtype=dtype)


class MeanBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        return _expand_back(grad, self.in_shape, self.axes, self.keepdim) / self.count

    def jvp(self, t):
        return (t.sum(self.axes, keepdim=self.keepdim) if self.axes else t) / self.count


class MeanBackward0(MeanBackward1):
    __slots__ = ()


def mean(input, dim=None, keepdim=False, *, dtype=None):
    out_dt = dt.check_dtype(dtype, "mean") or input._dtype
    if out_dt._kind != 2:
        if out_dt._kind < 2:
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either "
                               f"a floating point or complex dtype. Got: {dtype_name(out_dt)}")
        if out_dt._kind == 4:  # a quantized tensor: its QuantizedCPU kernel
            return input.mean(dim, keepdim, dtype=dtype)
    axes = _axes(input, dim)
    count = _numel(input._data.shape, axes)
    xp = input._backend.xp
    if count == 0:
        out = xp.full(_reduced_shape(input._data.shape, axes, keepdim), math.nan)
    else:
        out = _compute_data(input, out_dt).sum(axis=axes, keepdims=keepdim) / count
    res = _result(input, out, out_dt)
    if needs_grad(input):
        record(MeanBackward0 if dim is None else MeanBackward1, (input,), res, in_shape=input._data.shape, axes=axes,
               keepdim=keepdim, count=count)
    return res


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    if input._dtype._kind < 2:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {dtype_name(input._dtype)}")
    if dtype is not None:
        input = input.to(dtype)
    valid = ~input.isnan()
    return nansum(input, dim, keepdim) / valid.sum(dim, keepdim)


class ProdBackward1(Node):
    """d prod / d x_i is the product of the other elements, computed without dividing by x_i
    so that zeros are exact."""
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        axes = self.axes
        g = _expand_back(grad, x.shape, axes, self.keepdim)
        if not axes:
            return g
        if len(axes) == 1:
            return g * _prod_others(x, axes[0])
        # Several dims: move them to the back, flatten them into one and use the one-dim rule.
        kept = [d for d in range(x.ndim) if d not in axes]
        order = kept + list(axes)
        moved = x.permute(order)
        flat = moved.reshape([x.shape[d] for d in kept] + [_numel(x.shape, axes)])
        others = _prod_others(flat, len(kept)).reshape(moved.shape)
        inverse = sorted(range(x.ndim), key=order.__getitem__)
        return g * others.permute(inverse)

    def jvp(self, t):
        # sum_i t_i * prod_{j != i} x_j, the products of the others as the backward builds them
        return _weighted_reduce_jvp(self, t, self.saved_tensors[0])


def _prod_others(x, d):
    """For each element, the product of the other elements along ``d``: the exclusive
    cumulative product from the left times the one from the right."""
    from .shape import cat
    n = x.shape[d]
    if n == 0:
        return x
    ones = _ones_slice(x, d)
    left = cat([ones, x.narrow(d, 0, n - 1)], d).cumprod(d)
    right = cat([ones, x.flip(d).narrow(d, 0, n - 1)], d).cumprod(d).flip(d)
    return left * right


def _weighted_reduce_jvp(node, t, x):
    """Forward derivative of a reduction in which each input element feeds one output only:
    the backward of ones gives each element's partial derivative, and the JVP is the
    tangent's sum over the reduced dims weighted by them (one backward, no double backward)."""
    weights = node.backward(x.new_ones(_reduced_shape(x.shape, node.axes, node.keepdim)))
    if isinstance(weights, tuple):
        weights = weights[0]
    if weights is None:  # a step function (the 0-norm): no derivative flows
        weights = t * 0
    if not node.axes:
        return t * weights
    return (t * weights).sum(node.axes, keepdim=node.keepdim)


def _ones_slice(x, d):
    shape = list(x.shape)
    shape[d] = 1
    return x.new_ones(shape)


class ProdBackward0(ProdBackward1):
    __slots__ = ()


def prod(input, dim=None, keepdim=False, *, dtype=None):
    if _autocast.active and _autocast.enabled_for(input, "prod"):
        return _autocast.run(prod, "prod", input, dim, keepdim, dtype=dtype)
    if dim is not None and not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    axes = _axes(input, dim)
    out_dt = dt.check_dtype(dtype, "prod") or _int_sum_dtype(input._dtype)
    res = _result(input, _compute_data(input, out_dt).prod(axis=axes, keepdims=keepdim), out_dt)
    if _differentiable(input, out_dt):
        record(ProdBackward0 if dim is None else ProdBackward1, (input,), res, save=(input,),
               axes=axes, keepdim=keepdim)
    return res


# ---------------------------------------------------------------------------------------------
# amax/amin, max/min, argmax/argmin
# ---------------------------------------------------------------------------------------------

class AmaxBackward0(Node):
    """Gradient of amax/amin (and max()/min() without dim): split evenly between ties."""
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        axes, keepdim = self.axes, self.keepdim
        mask = (x == _expand_back(out, x.shape, axes, keepdim)).to(grad.dtype)
        count = mask.sum(axes, keepdim=True)
        return _expand_back(grad, x.shape, axes, keepdim) * mask / count

    def jvp(self, t):
        # PyTorch's amax/amin forward derivative: the mean of the tangent over the ties
        return _weighted_reduce_jvp(self, t, self.saved_tensors[0])


# PyTorch's node names for the same rule, by the public function that recorded it.
_EXTREMUM_NODES = {name: type(cls_name, (AmaxBackward0,), {"__slots__": ()})
                   for name, cls_name in (("amin", "AminBackward0"), ("max", "MaxBackward1"),
                                          ("min", "MinBackward1"))}
_EXTREMUM_NODES["amax"] = AmaxBackward0


def _amax(input, dim, keepdim, is_min, name):
    dim_given = not (dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0))
    axes = _axes(input, dim)
    _check_nonempty(input, axes, name, dim_given)
    xp = input._backend.xp
    out = (xp.min if is_min else xp.max)(input._data, axis=axes, keepdims=keepdim)
    res = _result(input, out, input._dtype)
    if needs_grad(input):
        record(_EXTREMUM_NODES[name], (input,), res, save=(input,), save_out=True, axes=axes,
               keepdim=keepdim)
    return res


def amax(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, False, "amax")


def amin(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, True, "amin")


class MaxBackward0(Node):
    """Gradient of max/min along a dim: it flows to the selected index only."""
    __slots__ = ()

    def backward(self, grad, _indices_grad=None):
        (idx,) = self.saved_tensors
        if grad is None:
            return None
        if not self.in_shape:
            return grad
        d = self.dim
        if not self.keepdim:
            grad = grad.unsqueeze(d)
            idx = idx.unsqueeze(d)
        return grad.new_zeros(self.in_shape).scatter(d, idx, grad)

    def jvp(self, t):
        # the selected element's tangent
        (idx,) = self.saved_tensors
        if not self.in_shape:
            return t.clone()
        d = self.dim
        if not self.keepdim:
            return t.gather(d, idx.unsqueeze(d)).squeeze(d)
        return t.gather(d, idx)


class MinBackward0(MaxBackward0):
    __slots__ = ()


# max/min's overloads: (input), (input, other), (input, dim, keepdim=False).
_NO_DIM = object()
_MAX_MIN_OVERLOADS = (" * (Tensor input, *, Tensor out = None)\n"
                      " * (Tensor input, Tensor other, *, Tensor out = None)\n"
                      " * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = "
                      "None)\n")


def _max_min(input, dim, keepdim, other, is_min):
    name = "min" if is_min else "max"
    if isinstance(dim, Tensor):  # max(a, b) is maximum(a, b)
        other, dim = dim, _NO_DIM
    if other is not None and dim is _NO_DIM:
        from .elementwise import maximum, minimum
        return (minimum if is_min else maximum)(input, other)
    if dim is _NO_DIM and other is None:
        return _amax(input, None, False, is_min, name)
    if isinstance(dim, bool) or not hasattr(type(dim), "__index__") \
            or not isinstance(keepdim, bool) or other is not None:
        got = ", ".join(["Tensor"] + ([] if dim is _NO_DIM else [type(dim).__name__]))
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:\n{_MAX_MIN_OVERLOADS}")
    dim = operator.index(dim)
    data = input._data
    d = wrap_dim(dim, data.ndim)
    xp = input._backend.xp
    if data.ndim == 0:
        idx = xp.zeros((), dtype="int64")
        vals = data.copy()
    else:
        _check_nonempty(input, (d,), name, True)
        # NumPy's argmax/argmin, like PyTorch, pick the first NaN, else the first extremum.
        idx = (xp.argmin if is_min else xp.argmax)(data, axis=d, keepdims=True)
        vals = xp.take_along_axis(data, idx, axis=d)
        if not keepdim:
            idx = idx.squeeze(d)
            vals = vals.squeeze(d)
    values = _wrap(vals, input._dtype, input)
    indices = _result(input, idx, dt.int64)
    if needs_grad(input):
        record(MinBackward0 if is_min else MaxBackward0, (input,), values, save=(indices,), dim=d,
               keepdim=keepdim, in_shape=data.shape)
    return (_min_result if is_min else _max_result)((values, indices))


def max(input, dim=_NO_DIM, keepdim=False, *, other=None):
    return _max_min(input, dim, keepdim, other, False)


def min(input, dim=_NO_DIM, keepdim=False, *, other=None):
    return _max_min(input, dim, keepdim, other, True)


def _arg(input, dim, keepdim, is_min):
    name = "argmin" if is_min else "argmax"
    if input._dtype is dt.bool:
        raise RuntimeError(f"{name}(): does not support bool input")
    xp = input._backend.xp
    data = input._data
    fn = xp.argmin if is_min else xp.argmax
    if dim is None:
        if data.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        idx = xp.asarray(fn(data.reshape(-1)))
        if keepdim:
            idx = idx.reshape((1,) * data.ndim)
    else:
        d = wrap_dim(dim, data.ndim)
        if data.ndim == 0:
            idx = xp.zeros((), dtype="int64")
        else:
            _check_nonempty(input, (d,), name, True)
            idx = fn(data, axis=d, keepdims=keepdim)
    return _result(input, idx, dt.int64)


def argmax(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, False)


def argmin(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, True)


# ---------------------------------------------------------------------------------------------
# var, std, norm, logsumexp
# ---------------------------------------------------------------------------------------------

class VarBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return _var_backward(self, grad, x)

    def jvp(self, t):
        # 2 <x - mean, t> / dof over the reduced dims
        return _weighted_reduce_jvp(self, t, self.saved_tensors[0])


class StdBackward0(Node):
    """std = sqrt(var): the var gradient of grad / (2 std), taken as 0 where std is 0."""
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        return _var_backward(self, (grad / (out * 2)).masked_fill(out == 0, 0.0), x)

    def jvp(self, t):
        # var's derivative over 2 std
        return _weighted_reduce_jvp(self, t, self.saved_tensors[0])


def _var_backward(node, grad, x):
    """2 (x - mean) / dof, with PyTorch's answers where no degrees of freedom are left."""
    axes, keepdim, dof = node.axes, node.keepdim, node.dof
    g = _expand_back(grad, x.shape, axes, keepdim)
    mean = x.mean(axes, keepdim=True)
    if node.full and dof <= 0:
        # 2 / 0 is inf; times x - mean it is inf, except NaN where x equals the mean.
        return g * x.new_full(x.shape, math.inf).masked_fill(x == mean, math.nan)
    # Along dims PyTorch divides by the unclamped dof (negative when correction > n).
    return g * (x - mean) * (2.0 / dof if dof else math.inf)


def _var_args(dim, unbiased, correction):
    """(dim, correction) from PyTorch's overloads: var(x, unbiased), var(x, dim, unbiased) and
    var(x, dim, correction=c)."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var_std(input, dim, correction, keepdim, is_std):
    if input._dtype._kind < 2:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    axes = _axes(input, dim)
    dof = _numel(input._data.shape, axes) - correction
    if dof <= 0:
        warnings.warn(f"{'std' if is_std else 'var'}(): degrees of freedom is <= 0. Correction "
                      "should be strictly less than the reduction factor (input numel divided by "
                      "output numel).", UserWarning, stacklevel=3)
    xp = input._backend.xp
    data = _compute_data(input)
    if data.size:
        with _quiet(xp):
            centered = data - data.mean(axis=axes, keepdims=True)
            out = (centered * centered).sum(axis=axes, keepdims=keepdim) / builtins.max(dof, 0)
            if is_std:
                out = xp.sqrt(out)
    else:
        out = xp.full(_reduced_shape(data.shape, axes, keepdim), math.nan)
    res = _result(input, out, input._dtype)
    if needs_grad(input):
        node = StdBackward0 if is_std else VarBackward0
        record(node, (input,), res, save=(input,), save_out=is_std, axes=axes, keepdim=keepdim,
               dof=dof, full=dim is None or data.ndim == 0)
    return res


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _var_args(dim, unbiased, correction)
    return _var_std(input, dim, correction, keepdim, False)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _var_args(dim, unbiased, correction)
    return _var_std(input, dim, correction, keepdim, True)


class PairBackward(Node):
    """One node for two reductions of one input returned together (``var_mean``, ``aminmax``):
    the input's gradient is the sum of what each result's own node gives."""
    __slots__ = ()
    num_outputs = 2

    def backward(self, grad_first, grad_second):
        total = None
        for part, grad in zip(self.parts, (grad_first, grad_second)):
            if grad is not None:
                g = part.backward(grad)
                g = g[0] if isinstance(g, tuple) else g
                total = g if total is None else total + g
        return total

    def jvp(self, t):
        # each result's own forward derivative
        parts = tuple(getattr(part, "jvp", None) for part in self.parts)
        if any(j is None for j in parts):
            return NotImplemented
        results = tuple(j(t) for j in parts)
        return NotImplemented if any(r is NotImplemented for r in results) else results

    def release(self):
        super().release()
        for part in self.parts:
            part.release()


class VarMeanBackward0(PairBackward):
    __slots__ = ()


class StdMeanBackward0(PairBackward):
    __slots__ = ()


def record_pair(node_cls, input, first, second):
    """Make ``first`` and ``second`` (two results computed from ``input``, each with its own
    node) the two outputs of one ``node_cls`` node."""
    if first.grad_fn is not None and second.grad_fn is not None:
        record_multi(node_cls, (input,), (first, second), parts=(first.grad_fn, second.grad_fn))
    return first, second


def _spread_mean(input, dim, correction, keepdim, is_std):
    spread = _var_std(input, dim, correction, keepdim, is_std)
    centre = mean(input, dim, keepdim)
    return record_pair(StdMeanBackward0 if is_std else VarMeanBackward0, input, spread, centre)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _var_args(dim, unbiased, correction)
    return _spread_mean(input, dim, correction, keepdim, False)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _var_args(dim, unbiased, correction)
    return _spread_mean(input, dim, correction, keepdim, True)


class LinalgVectorNormBackward0(Node):
    """Gradient of the p-norm, sign(x) |x|^(p-1) / norm^(p-1), taken as zero where the norm is
    zero (as PyTorch, not NaN); for p = 1 it is sign(x), for p = +-inf the gradient is shared
    evenly by the elements whose |x| is the norm."""
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        p = self.p
        if p == 0:  # a step function: like PyTorch, no gradient flows
            return None
        out_b = _expand_back(out, x.shape, self.axes, self.keepdim)
        g = _expand_back(grad, x.shape, self.axes, self.keepdim)
        if p == 1:
            return g * x.sign()
        if p in (math.inf, -math.inf):
            hit = (x.abs() == out_b).to(x.dtype)
            return g * x.sign() * hit / hit.sum(self.axes, keepdim=True)
        zero = out_b == 0
        safe = out_b.masked_fill(zero, 1.0)
        if p == 2:
            return (g * x / safe).masked_fill(zero, 0.0)
        return (g * x.sign() * x.abs().pow(p - 1) / safe.pow(p - 1)).masked_fill(zero, 0.0)

    def jvp(self, t):
        x = self.saved_tensors[0]
        if x._dtype._kind == 3:  # a complex input's norm is not holomorphic: no weights
            return NotImplemented
        return _weighted_reduce_jvp(self, t, x)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if _autocast.active and dtype is None and _autocast.enabled_for(input, "norm"):
        return _autocast.run(norm, "norm", input, p, dim, keepdim)
    if input._dtype._kind < 2:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {dtype_name(input._dtype)}")
    if dtype is not None:
        input = input.to(dtype)
    if p == "nuc":  # the sum of singular values: a matrix norm, from the linalg family
        from .linalg import matrix_norm
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)
    if p in ("fro", None):
        p = 2
    axes = _axes(input, dim)
    if p in (math.inf, -math.inf, 0, 1):
        if p in (math.inf, -math.inf):
            _check_norm_nonempty(input, axes, p, dim)
        with no_grad():
            if p == 0:
                res = (input != 0).sum(axes, keepdim).to(input._dtype)
            elif p == 1:
                res = input.abs().sum(axes, keepdim)
            else:
                a = input.abs()
                res = amax(a, axes, keepdim) if p > 0 else amin(a, axes, keepdim)
        if needs_grad(input):
            record(LinalgVectorNormBackward0, (input,), res, save=(input,), save_out=True,
                   axes=axes, keepdim=keepdim, p=p)
        return res
    xp = input._backend.xp
    data = _compute_data(input)
    if p == 2:
        out = xp.sqrt((data * data).sum(axis=axes, keepdims=keepdim))
    else:
        out = (xp.abs(data) ** p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)
    res = _result(input, out, input._dtype)
    if needs_grad(input):
        record(LinalgVectorNormBackward0, (input,), res, save=(input,), save_out=True,
               axes=axes, keepdim=keepdim, p=p)
    return res


def _check_norm_nonempty(input, axes, p, dim):
    which = "inf" if p > 0 else "-inf"
    if dim is None and input._data.size == 0:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {which} norm on an empty "
                           "tensor because the operation does not have an identity")
    for a in axes:
        if input._data.shape[a] == 0:
            # (sic) PyTorch's message has no space before "because".
            raise RuntimeError(f"linalg.vector_norm cannot compute the {which} norm on the "
                               f"dimension {a}because this dimension is empty and the operation "
                               "does not have an identity")


class LogsumexpBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        out_b = _expand_back(out, x.shape, self.axes, self.keepdim)
        return _expand_back(grad, x.shape, self.axes, self.keepdim) * (x - out_b).exp()

    def jvp(self, t):
        # the softmax-weighted sum of the tangent
        x, out = self.saved_tensors
        weights = (x - _expand_back(out, x.shape, self.axes, self.keepdim)).exp()
        return (weights * t).sum(self.axes, keepdim=self.keepdim)


def logsumexp(input, dim, keepdim=False):
    if _autocast.active and _autocast.enabled_for(input, "logsumexp"):
        return _autocast.run(logsumexp, "logsumexp", input, dim, keepdim)
    axes = _axes(input, dim)
    if input._dtype._kind < 2:
        input = input.to(dt.get_default_dtype())
    xp = input._backend.xp
    data = _compute_data(input)
    with _quiet(xp):
        if data.size:
            # Shift by the (finite) maximum so that exp cannot overflow.
            m = data.max(axis=axes, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)
        else:
            m = xp.zeros(_reduced_shape(data.shape, axes, True), dtype=data.dtype)
        out = xp.log(xp.exp(data - m).sum(axis=axes, keepdims=True)) + m
    if not keepdim:
        out = out.reshape(_reduced_shape(data.shape, axes, False))
    res = _result(input, out, input._dtype)
    if needs_grad(input):
        record(LogsumexpBackward0, (input,), res, save=(input,), save_out=True, axes=axes,
               keepdim=keepdim)
    return res


# ---------------------------------------------------------------------------------------------
# cov, corrcoef
# ---------------------------------------------------------------------------------------------

def cov(input, *, correction=1, fweights=None, aweights=None):
    from .. import ops
    from .elementwise import mul_scalar
    if input._data.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input._data.ndim} dimensions")
    if input._dtype is dt.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    observations = input if input._data.ndim == 2 else input.reshape(1, -1)
    n_obs = observations._data.shape[1]
    weights = None
    if fweights is not None:
        _check_cov_weights(input, fweights, "fweights", n_obs, floating=False)
        weights = fweights
    if aweights is not None:
        _check_cov_weights(input, aweights, "aweights", n_obs, floating=True)
        weights = aweights if weights is None else weights * aweights
    if observations._dtype._kind <= 1:
        observations = observations.to(dt.get_default_dtype())

    # PyTorch's composite, op for op: sums divided by the weight total (a 0-d int64 tensor
    # without weights), the centred observations multiplied by their own (weighted) transpose.
    if weights is None:
        w_sum = _wrap(input._backend.xp.asarray(n_obs, dtype=dt.int64.np), dt.int64, input)
        avg = observations.sum(1) / w_sum
    else:
        w_sum = weights.sum()
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (observations * weights).sum(1) / w_sum
    if weights is not None and aweights is not None and correction != 0:
        norm = w_sum - mul_scalar((weights * aweights).sum(), correction) / w_sum
    elif weights is not None and correction == 0:
        norm = w_sum
    else:
        norm = w_sum - correction
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm.zero_()
    centered = observations - avg.unsqueeze(1)
    scaled = centered if weights is None else centered * weights
    return (ops.mm(centered, scaled.t().conj()) / norm).squeeze()


def _check_cov_weights(input, weights, name, n_obs, floating):
    """PyTorch's checks of cov's ``fweights`` (integral) or ``aweights`` (``floating``)."""
    if weights._device is not input._device:
        raise device_mismatch(input, weights)
    if weights._data.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {weights._data.ndim} dimensions")
    wrong_kind = weights._dtype._kind != (2 if floating else 1)
    if wrong_kind:
        kind = "floating point" if floating else "integral"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{dtype_name(weights._dtype)} dtype")
    if weights.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {weights.numel()} != {n_obs}")
    if weights.numel() and float(weights.min()) < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")


def corrcoef(input):
    from .. import ops
    if input._data.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input._data.ndim} dimensions")
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    d = ops.diagonal(c)
    stddev = ops.sqrt(ops.real(d) if d._dtype._kind == 3 else d)
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c._dtype._kind == 3:
        # As NumPy: the real and imaginary parts clipped separately.
        return ops.complex(ops.clip(ops.real(c), -1, 1), ops.clip(ops.imag(c), -1, 1))
    return ops.clip(c, -1, 1)


# ---------------------------------------------------------------------------------------------
# all, any, count_nonzero
# ---------------------------------------------------------------------------------------------

def _all_any(input, dim, keepdim, fn):
    # An explicit empty dim list reduces nothing here (unlike sum): each element becomes a bool.
    axes = () if isinstance(dim, (tuple, list)) and not dim else _axes(input, dim)
    # uint8 stays uint8, for compatibility with the days before torch.bool.
    out_dt = dt.uint8 if input._dtype is dt.uint8 else dt.bool
    return _result(input, fn(input._data, axis=axes, keepdims=keepdim), out_dt)


def all(input, dim=None, keepdim=False):
    return _all_any(input, dim, keepdim, input._backend.xp.all)


def any(input, dim=None, keepdim=False):
    return _all_any(input, dim, keepdim, input._backend.xp.any)


def count_nonzero(input, dim=None):
    axes = _axes(input, dim)
    xp = input._backend.xp
    return _result(input, xp.count_nonzero(input._data, axis=axes), dt.int64)


# ---------------------------------------------------------------------------------------------
# cumsum, cumprod
# ---------------------------------------------------------------------------------------------

class CumsumBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        if grad.ndim == 0:
            return grad
        d = self.dim
        return grad.flip(d).cumsum(d).flip(d)

    def jvp(self, t):
        return t.cumsum(self.dim) if t.ndim else t.clone()  # linear


def _scan(input, dim, dtype, fn, node_cls, save):
    d = wrap_dim(dim, input._data.ndim)
    out_dt = dt.check_dtype(dtype, fn.__name__) or _int_sum_dtype(input._dtype)
    data = _compute_data(input, out_dt)
    out = fn(data, axis=d) if data.ndim else data.copy()
    res = _result(input, out, out_dt)
    if _differentiable(input, out_dt):
        record(node_cls, (input,), res, save=(input,) if save else (), save_out=save, dim=d)
    return res


def cumsum(input, dim, *, dtype=None):
    if _autocast.active and dtype is None and _autocast.enabled_for(input, "cumsum"):
        return _autocast.run(cumsum, "cumsum", input, dim, dtype=dtype)
    return _scan(input, dim, dtype, input._backend.xp.cumsum, CumsumBackward0, False)


class CumprodBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        if x.ndim == 0:
            return grad
        d = self.dim
        if not bool((x == 0).any()):
            return (grad * out).flip(d).cumsum(d).flip(d) / x
        # With zeros, dividing by x is not possible: for each i, sum over j >= i of
        # grad_j * prod_{k <= j, k != i} x_k, built from the prefix product before i.
        from .shape import cat
        n = x.shape[d]
        ones = _ones_slice(x, d)
        cols = []
        for i in range(n):
            before = x.narrow(d, 0, i).prod(d, keepdim=True) if i else ones
            after = cat([ones, x.narrow(d, i + 1, n - i - 1)], d).cumprod(d)
            cols.append((grad.narrow(d, i, n - i) * after * before).sum(d, keepdim=True))
        return cat(cols, d)

    def jvp(self, t):
        # d out_j = out_j * sum_{k <= j} t_k / x_k; with a zero in x that ratio does not exist
        x, out = self.saved_tensors
        if x.ndim == 0:
            return t.clone()
        if bool((x == 0).any()):
            return NotImplemented
        return out * (t / x).cumsum(self.dim)


def cumprod(input, dim, *, dtype=None):
    if _autocast.active and dtype is None and _autocast.enabled_for(input, "cumprod"):
        return _autocast.run(cumprod, "cumprod", input, dim, dtype=dtype)
    return _scan(input, dim, dtype, input._backend.xp.cumprod, CumprodBackward0, True)


# ---------------------------------------------------------------------------------------------
# softmax, log_softmax
# ---------------------------------------------------------------------------------------------

class SoftmaxBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (y,) = self.saved_tensors
        return y * (grad - (grad * y).sum(self.dim, keepdim=True))

    def jvp(self, t):
        # the softmax Jacobian is symmetric: the same formula on the tangent
        return self.backward(t)


class LogSoftmaxBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (y,) = self.saved_tensors
        return grad - y.exp() * grad.sum(self.dim, keepdim=True)

    def jvp(self, t):
        (y,) = self.saved_tensors
        return t - (y.exp() * t).sum(self.dim, keepdim=True)


def _softmax_common(input, dim, dtype, log):
    if dtype is not None:
        input = input.to(dtype)
    nd = input._data.ndim
    d = wrap_dim(dim, nd) if dim is not None else _legacy_softmax_dim(nd)
    if input._data.size == 0 and input._dtype._kind < 2:  # no kernel runs to refuse the dtype
        return _wrap(input._data.copy(), input._dtype, input)
    if input._dtype._kind < 2:
        kernel = ("log_" if log else "") + "softmax" + ("_lastdim" if d == builtins.max(nd, 1) - 1
                                                        else "") + "_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(input._dtype)}'")
    xp = input._backend.xp
    data = _compute_data(input)
    if data.ndim == 0:
        out = xp.zeros_like(data) if log else xp.ones_like(data)
    else:
        with _quiet(xp):
            # Shift by the maximum, even an infinite one: PyTorch's rows holding inf become NaN.
            shifted = data - data.max(axis=d, keepdims=True) if data.size else data
            e = xp.exp(shifted)
            s = e.sum(axis=d, keepdims=True)
            out = shifted - xp.log(s) if log else e / s
    res = _result(input, out, input._dtype)
    if needs_grad(input):
        record(LogSoftmaxBackward0 if log else SoftmaxBackward0, (input,), res, save_out=True,
               dim=d)
    return res


def _legacy_softmax_dim(nd):
    # PyTorch's implicit choice when dim is omitted (deprecated there too).
    return 0 if nd in (0, 1, 3) else 1


def softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    if _autocast.active and dtype is None and _autocast.enabled_for(input, "softmax"):
        return _autocast.run(softmax, "softmax", input, dim, dtype, _stacklevel=_stacklevel)
    return _softmax_common(input, dim, dtype, False)


def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    if _autocast.active and dtype is None and _autocast.enabled_for(input, "log_softmax"):
        return _autocast.run(log_softmax, "log_softmax", input, dim, dtype, _stacklevel=_stacklevel)
    return _softmax_common(input, dim, dtype, True)


# ---------------------------------------------------------------------------------------------
# aminmax: amin and amax in one call
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
