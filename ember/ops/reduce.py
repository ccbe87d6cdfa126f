"""Reductions, scans and normalisers (softmax). Low-precision floats accumulate in float32, and
integer sums become int64, as in PyTorch."""
import builtins
import collections
import math

from .. import _dtype as dt
from ._dispatch import Tensor, Node, needs_grad, record, _wrap, wrap_dims, wrap_dim, dtype_name
from ..autograd.grad_mode import _state as _grad_state

_LOW = (dt.float16, dt.bfloat16)
values_indices = collections.namedtuple("values_indices", ["values", "indices"])
for _n in ("max", "min", "sort", "topk", "kthvalue", "mode", "median", "cummax", "cummin"):
    globals()[f"_{_n}_result"] = type(f"{_n}", (values_indices,), {"__slots__": ()})


def _needs(t):
    return t._requires_grad and _grad_state.enabled


def _axes(input, dim):
    """Normalised reduction axes: None (or an empty list) reduces everything."""
    nd = input._data.ndim
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(nd))
    return wrap_dims(dim, nd)


def _expand_back(grad, in_shape, axes, keepdim):
    """Broadcast a reduced gradient back to the input's shape."""
    if not keepdim and axes:
        shape = list(in_shape)
        for a in axes:
            shape[a] = 1
        grad = grad.reshape(shape)
    return grad.expand(in_shape)


def _acc(input):
    """The input array in its accumulation dtype."""
    data = input._data
    if input._dtype in _LOW:
        return data.astype("float32")
    return data


class SumBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        return _expand_back(grad, self.in_shape, self.axes, self.keepdim)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    if not isinstance(input, Tensor):
        return builtins.sum(input) if dim is None else builtins.sum(input, dim)
    axes = _axes(input, dim)
    d = input._dtype
    if dtype is not None:
        out_dt = dtype
    elif d._kind <= 1:
        out_dt = dt.int64
    else:
        out_dt = d
    data = input._data
    if out_dt is not d:
        data = data.astype(out_dt.np)
    if out_dt in _LOW:
        data = data.astype("float32")
    res = data.sum(axis=axes, keepdims=keepdim)
    res = _wrap(input._backend.xp.asarray(res, dtype=out_dt.np), out_dt, input)
    if _needs(input):
        record(SumBackward1, (input,), res, in_shape=input._data.shape, axes=axes, keepdim=keepdim)
    return res


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    return sum(input.nan_to_num(0.0, posinf=math.inf, neginf=-math.inf)
               if input._dtype._kind >= 2 else input, dim, keepdim, dtype=dtype)


class MeanBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        return _expand_back(grad, self.in_shape, self.axes, self.keepdim) / self.count


def mean(input, dim=None, keepdim=False, *, dtype=None):
    out_dt = dtype or input._dtype
    if out_dt._kind < 2:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {dtype_name(out_dt)}")
    axes = _axes(input, dim)
    data = input._data if out_dt is input._dtype else input._data.astype(out_dt.np)
    if out_dt in _LOW:
        data = data.astype("float32")
    res = _wrap(input._backend.xp.asarray(data.mean(axis=axes, keepdims=keepdim), dtype=out_dt.np),
                out_dt, input)
    if _needs(input):
        count = 1
        for a in axes:
            count *= input._data.shape[a]
        record(MeanBackward1, (input,), res, in_shape=input._data.shape, axes=axes,
               keepdim=keepdim, count=count)
    return res


def nanmean(input, dim=None, keepdim=False):
    valid = ~input.isnan()
    return nansum(input, dim, keepdim) / valid.sum(dim, keepdim)


class ProdBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        axes, keepdim = self.axes, self.keepdim
        g = _expand_back(grad, x.shape, axes, keepdim)
        if len(axes) != 1:
            # Products over several axes: flatten them into one and reuse the single-axis rule.
            flat = x.reshape(-1) if len(axes) == x.ndim else None
            if flat is None:
                raise NotImplementedError("prod backward over several (not all) dims")
            return g * _prod_others(flat, 0).reshape(x.shape)
        return g * _prod_others(x, axes[0])


def _prod_others(x, d):
    """For each element, the product of the other elements along ``d`` (exact with zeros)."""
    n = x.shape[d]
    if n == 0:
        return x
    ones = x.narrow(d, 0, 1) * 0 + 1
    left = cat_fn([ones, x.narrow(d, 0, n - 1)], d).cumprod(d)
    rev = x.flip(d)
    right = cat_fn([ones, rev.narrow(d, 0, n - 1)], d).cumprod(d).flip(d)
    return left * right


def cat_fn(tensors, d):
    from .shape import cat
    return cat(tensors, d)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    if dim is not None and not isinstance(dim, int):
        raise TypeError("prod(): argument 'dim' must be int")
    axes = _axes(input, dim)
    d = input._dtype
    out_dt = dtype or (dt.int64 if d._kind <= 1 else d)
    data = _acc(input) if out_dt is d else input._data.astype(out_dt.np)
    res = _wrap(input._backend.xp.asarray(data.prod(axis=axes, keepdims=keepdim), dtype=out_dt.np),
                out_dt, input)
    if _needs(input):
        record(ProdBackward1, (input,), res, save=(input,), axes=axes if dim is not None else
               tuple(range(input.ndim)), keepdim=keepdim)
    return res


class AmaxBackward0(Node):
    """Gradient of amax/amin (and max()/min() without dim): split evenly between ties."""
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        axes, keepdim = self.axes, self.keepdim
        out_b = _expand_back(out, x.shape, axes, keepdim)
        mask = (x == out_b).to(grad.dtype)
        count = mask.sum(axes, keepdim=True)
        return _expand_back(grad, x.shape, axes, keepdim) * mask / count


def _amax(input, dim, keepdim, is_min, name):
    axes = _axes(input, dim)
    data = input._data
    for a in axes:
        if data.shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")
    if data.size == 0 and not axes:
        pass
    xp = input._backend.xp
    fn = xp.min if is_min else xp.max
    res = _wrap(xp.asarray(fn(data, axis=axes, keepdims=keepdim)), input._dtype, input)
    if _needs(input):
        record(AmaxBackward0, (input,), res, save=(input,), save_out=True, axes=axes,
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
        d = self.dim
        if not self.keepdim:
            grad = grad.unsqueeze(d)
            idx = idx.unsqueeze(d)
        zeros = grad.new_zeros(self.in_shape)
        return zeros.scatter(d, idx, grad)


def _max_min(input, dim, keepdim, other, is_min):
    name = "min" if is_min else "max"
    if isinstance(dim, Tensor):  # max(a, b) is maximum(a, b)
        other, dim = dim, None
    if other is not None:
        from .elementwise import maximum, minimum
        return (minimum if is_min else maximum)(input, other)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                               "== 0. Specify the reduction dim with the 'dim' argument.")
        return _amax(input, None, False, is_min, name)
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    data = input._data
    if data.ndim and data.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    xp = input._backend.xp
    if data.ndim == 0:
        idx = xp.zeros((), dtype="int64")
        vals = data.copy()
    else:
        idx = (xp.argmin if is_min else xp.argmax)(_nan_first(xp, data, is_min), axis=d, keepdims=True)
        vals = xp.take_along_axis(data, idx, axis=d)
        if not keepdim:
            idx = idx.squeeze(d)
            vals = vals.squeeze(d)
    values = _wrap(vals, input._dtype, input)
    indices = _wrap(idx.astype("int64"), dt.int64, input)
    if _needs(input):
        record(MaxBackward0, (input,), values, save=(indices,), dim=d, keepdim=keepdim,
               in_shape=input._data.shape)
    return (_min_result if is_min else _max_result)((values, indices))  # noqa: F821


def _nan_first(xp, data, is_min):
    # PyTorch's max/min propagate NaN: make NaN win the arg-reduction.
    if data.dtype.kind == "f" and bool(xp.isnan(data).any()):
        fill = -math.inf if is_min else math.inf
        return xp.where(xp.isnan(data), fill, data)
    return data


def max(input, dim=None, keepdim=False, *, other=None):
    return _max_min(input, dim, keepdim, other, False)


def min(input, dim=None, keepdim=False, *, other=None):
    return _max_min(input, dim, keepdim, other, True)


def _arg(input, dim, keepdim, is_min):
    xp = input._backend.xp
    data = _nan_first(xp, input._data, is_min)
    fn = xp.argmin if is_min else xp.argmax
    if data.size == 0 and dim is None:
        raise RuntimeError(f"{'argmin' if is_min else 'argmax'}(): Expected reduction dim to be "
                           "specified for input.numel() == 0.")
    if dim is None:
        idx = fn(data.reshape(-1))
        if keepdim:
            idx = xp.asarray(idx).reshape((1,) * data.ndim)
    else:
        d = wrap_dim(dim, data.ndim)
        idx = fn(data, axis=d, keepdims=keepdim) if data.ndim else xp.zeros((), "int64")
    return _wrap(xp.asarray(idx).astype("int64"), dt.int64, input)


def argmax(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, False)


def argmin(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, True)


class VarBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        axes, keepdim = self.axes, self.keepdim
        centered = x - x.mean(axes, keepdim=True)
        g = _expand_back(grad, x.shape, axes, keepdim)
        return g * centered * (2.0 / self.denom)


class StdBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        axes, keepdim = self.axes, self.keepdim
        centered = x - x.mean(axes, keepdim=True)
        g = _expand_back(grad / out, x.shape, axes, keepdim)
        return g * centered / self.denom


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def _var_std(input, dim, unbiased, keepdim, correction, is_std):
    if isinstance(dim, bool):  # var(x, True) is the old var(x, unbiased)
        unbiased, dim = dim, None
    if input._dtype._kind < 2:
        raise RuntimeError(f"std and var only support floating point and complex dtypes")
    c = _correction(unbiased, correction)
    axes = _axes(input, dim)
    n = 1
    for a in axes:
        n *= input._data.shape[a]
    data = _acc(input)
    xp = input._backend.xp
    denom = builtins.max(n - c, 0)
    with_err = xp.errstate(divide="ignore", invalid="ignore") if hasattr(xp, "errstate") else None
    if with_err is not None:
        with with_err:
            var = data.var(axis=axes, keepdims=keepdim, ddof=c) if n else \
                xp.full(_reduced_shape(data.shape, axes, keepdim), math.nan)
    else:
        var = data.var(axis=axes, keepdims=keepdim, ddof=c)
    out = xp.sqrt(var) if is_std else var
    res = _wrap(xp.asarray(out, dtype=input._dtype.np), input._dtype, input)
    if _needs(input):
        if is_std:
            record(StdBackward0, (input,), res, save=(input,), save_out=True, axes=axes,
                   keepdim=keepdim, denom=denom)
        else:
            record(VarBackward0, (input,), res, save=(input,), axes=axes, keepdim=keepdim,
                   denom=denom)
    return res


def _reduced_shape(shape, axes, keepdim):
    return tuple(1 if i in axes else s for i, s in enumerate(shape) if keepdim or i not in axes)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std(input, dim, unbiased, keepdim, correction, False)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std(input, dim, unbiased, keepdim, correction, True)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


class NormBackward1(Node):
    """Gradient of the 2-norm, zero where the norm is zero (as PyTorch, not NaN)."""
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        out_b = _expand_back(out, x.shape, self.axes, self.keepdim)
        g = _expand_back(grad, x.shape, self.axes, self.keepdim)
        safe = out_b.masked_fill(out_b == 0, 1.0)
        return (g * x / safe).masked_fill(out_b == 0, 0.0)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if input._dtype._kind < 2:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {dtype_name(input._dtype)}")
    if p in ("fro", 2, 2.0, None):
        axes = _axes(input, dim)
        data = _acc(input)
        xp = input._backend.xp
        out = xp.sqrt((data * data).sum(axis=axes, keepdims=keepdim))
        res = _wrap(xp.asarray(out, dtype=input._dtype.np), input._dtype, input)
        if _needs(input):
            record(NormBackward1, (input,), res, save=(input,), save_out=True, axes=axes,
                   keepdim=keepdim)
        return res
    if p == "nuc":
        raise NotImplementedError("nuclear norm lives in ember.linalg")
    a = input.abs()
    if p in (math.inf, "inf"):
        return amax(a, dim if dim is not None else (), keepdim)
    if p in (-math.inf, "-inf"):
        return amin(a, dim if dim is not None else (), keepdim)
    if p == 0:
        return (a != 0).to(input._dtype).sum(dim, keepdim)
    if p == 1:
        return a.sum(dim, keepdim)
    return a.pow(p).sum(dim, keepdim).pow(1.0 / p)


class LogsumexpBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        out_b = _expand_back(out, x.shape, self.axes, self.keepdim)
        return _expand_back(grad, x.shape, self.axes, self.keepdim) * (x - out_b).exp()


def logsumexp(input, dim=None, keepdim=False):
    if dim is None:
        dim = tuple(range(input.ndim))
    axes = _axes(input, dim)
    if input._dtype._kind < 2:
        input = input.to(dt.get_default_dtype())
    xp = input._backend.xp
    data = _acc(input)
    if data.size:
        m = data.max(axis=axes, keepdims=True)
        m = xp.where(xp.isinf(m), 0, m)
        with xp.errstate(divide="ignore"):
            out = xp.log(xp.exp(data - m).sum(axis=axes, keepdims=True)) + m
    else:
        with xp.errstate(divide="ignore"):
            out = xp.log(xp.exp(data).sum(axis=axes, keepdims=True))
    if not keepdim:
        out = out.reshape(_reduced_shape(data.shape, axes, False))
    res = _wrap(xp.asarray(out, dtype=input._dtype.np), input._dtype, input)
    if _needs(input):
        record(LogsumexpBackward0, (input,), res, save=(input,), save_out=True, axes=axes,
               keepdim=keepdim)
    return res


def all(input, dim=None, keepdim=False):
    axes = _axes(input, dim)
    xp = input._backend.xp
    return _wrap(xp.asarray(xp.all(input._data, axis=axes, keepdims=keepdim)), dt.bool, input)


def any(input, dim=None, keepdim=False):
    axes = _axes(input, dim)
    xp = input._backend.xp
    return _wrap(xp.asarray(xp.any(input._data, axis=axes, keepdims=keepdim)), dt.bool, input)


def count_nonzero(input, dim=None):
    axes = _axes(input, dim)
    xp = input._backend.xp
    return _wrap(xp.asarray(xp.count_nonzero(input._data, axis=axes)).astype("int64"), dt.int64, input)


class CumsumBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        d = self.dim
        return grad.flip(d).cumsum(d).flip(d)


def cumsum(input, dim, *, dtype=None):
    d = wrap_dim(dim, input._data.ndim)
    out_dt = dtype or (dt.int64 if input._dtype._kind <= 1 else input._dtype)
    data = input._data.astype(out_dt.np) if out_dt is not input._dtype else _acc(input)
    xp = input._backend.xp
    out = xp.cumsum(data, axis=d) if data.ndim else data.copy()
    res = _wrap(xp.asarray(out, dtype=out_dt.np), out_dt, input)
    if _needs(input):
        record(CumsumBackward0, (input,), res, dim=d)
    return res


class CumprodBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        d = self.dim
        if not bool((x == 0).any()):
            return (grad * out).flip(d).cumsum(d).flip(d) / x
        # With zeros, sum_{j>=i} g_j * prod_{k<=j, k!=i} x_k, computed per position.
        n = x.shape[d]
        cols = []
        for i in range(n):
            left = x.narrow(d, 0, i).prod(d, keepdim=True) if i else x.narrow(d, 0, 1) * 0 + 1
            rest = x.narrow(d, i + 1, n - i - 1)
            ones = x.narrow(d, 0, 1) * 0 + 1
            from .shape import cat
            tail = cat([ones, rest], d).cumprod(d) * left
            cols.append((grad.narrow(d, i, n - i) * tail).sum(d, keepdim=True))
        from .shape import cat
        return cat(cols, d)


def cumprod(input, dim, *, dtype=None):
    d = wrap_dim(dim, input._data.ndim)
    out_dt = dtype or (dt.int64 if input._dtype._kind <= 1 else input._dtype)
    data = input._data.astype(out_dt.np) if out_dt is not input._dtype else _acc(input)
    xp = input._backend.xp
    out = xp.cumprod(data, axis=d) if data.ndim else data.copy()
    res = _wrap(xp.asarray(out, dtype=out_dt.np), out_dt, input)
    if _needs(input):
        record(CumprodBackward0, (input,), res, save=(input,), save_out=True, dim=d)
    return res


class SoftmaxBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (y,) = self.saved_tensors
        d = self.dim
        return y * (grad - (grad * y).sum(d, keepdim=True))


class LogSoftmaxBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (y,) = self.saved_tensors
        d = self.dim
        return grad - y.exp() * grad.sum(d, keepdim=True)


def _softmax_common(input, dim, dtype, log):
    if dtype is not None:
        input = input.to(dtype)
    if input._dtype._kind < 2:
        raise RuntimeError(f"\"{'log_softmax' if log else 'softmax'}_lastdim_kernel_impl\" not "
                           f"implemented for '{dtype_name(input._dtype)}'")
    nd = input._data.ndim
    d = wrap_dim(dim, nd) if dim is not None else _legacy_softmax_dim(nd)
    xp = input._backend.xp
    data = _acc(input)
    if data.ndim == 0:
        out = xp.zeros_like(data) if log else xp.ones_like(data)
    else:
        m = data.max(axis=d, keepdims=True) if data.size else data
        m = xp.where(xp.isfinite(m), m, 0)
        shifted = data - m
        e = xp.exp(shifted)
        s = e.sum(axis=d, keepdims=True)
        out = shifted - xp.log(s) if log else e / s
    res = _wrap(xp.asarray(out, dtype=input._dtype.np), input._dtype, input)
    if _needs(input):
        record(LogSoftmaxBackward0 if log else SoftmaxBackward0, (input,), res, save_out=True,
               dim=d if nd else 0)
    return res


def _legacy_softmax_dim(nd):
    return 0 if nd in (0, 1, 3) else 1


def softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    return _softmax_common(input, dim, dtype, False)


def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    return _softmax_common(input, dim, dtype, True)
