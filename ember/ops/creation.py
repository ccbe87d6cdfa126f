"""Tensor factories (``tensor``, ``zeros``, ``arange``…, ``empty_strided``, ``frombuffer``), random
sampling (``binomial``…), and conversions between dtypes and devices (``to``, ``type_as``)."""
import builtins
import math
import numbers
import operator

import numpy as np

from .. import _dtype as dt
from .. import _tensor as _tensor_mod
from .. import _device as _device_mod
from .._device import device as _device_cls
from .._random import sampler, draw_namespace
from .. import _memory_format as _mf
from .. import _type_info_and_switches as _switches
from ..backends import current_index, get_backend
from . import _dispatch
from ._dispatch import Tensor, Node, needs_grad, record, _wrap, _wrap_with, dtype_name
from ._dispatch import check_same_device as _check_same_device
from ..autograd.grad_mode import _state as _grad_state

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full",
           "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace",
           "eye", "scalar_tensor", "vander", "tril_indices", "triu_indices", "FloatTensor",
           "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
           "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor", "rand", "randn", "randint",
           "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
           "multinomial", "poisson", "binomial", "empty_strided", "empty_permuted", "frombuffer"]
METHODS = ["new", "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full", "to", "cpu",
           "cuda", "bernoulli", "multinomial", "new_empty_strided", "type_as", "as_subclass",
           "uniform_", "normal_", "bernoulli_", "exponential_", "random_", "geometric_",
           "log_normal_", "cauchy_"]
INPLACE = []


def resolve_device(device):
    """A canonical device: "cpu" has no index; "cuda" means the current CUDA device, other
    types index 0."""
    if device is None:
        return _device_mod._default_device
    if not isinstance(device, _device_cls):
        device = _device_cls(device)
    if device.type == "cpu":
        return _CPU if device.index in (None, 0) else device
    if device.index is None:
        return _device_cls(device.type, current_index(device.type))
    return device


_CPU = _device_cls("cpu")


def _finish(data, dtype, device, requires_grad):
    backend = get_backend(device)
    t = _wrap_with(data, dtype, device, backend)
    if requires_grad:
        if dtype._kind not in (2, 3):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._requires_grad = True
    return t


def _to_backend(array, device):
    if device.type == "cpu":
        return array
    backend = get_backend(device)
    backend.check_dtype(array.dtype, "creating a tensor")
    return backend.asarray(array)


def _size(args, fn_name=None):
    """A shape from ``f(*sizes)`` or ``f(sizes)``; ``fn_name`` gives PyTorch's argument errors."""
    packed = len(args) == 1 and isinstance(args[0], (tuple, list))
    if packed:
        args = tuple(args[0])
    elif len(args) == 1 and isinstance(args[0], Tensor):
        args = tuple(args[0].tolist()) if args[0].ndim else (int(args[0]),)
    out = []
    for i, s in enumerate(args):
        if isinstance(s, bool) or not isinstance(s, (numbers.Integral, Tensor)):
            raise _size_type_error(fn_name, s, i, not packed and len(args) == 1)
        s = int(s)
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(args)}")
        out.append(s)
    return tuple(out)


def _size_type_error(fn_name, value, position, single):
    kind = type(value).__name__
    if fn_name is None:
        return TypeError(f"expected a sequence of integers or a single integer, got '{kind}'")
    if single:
        return TypeError(f"{fn_name}(): argument 'size' (position 1) must be tuple of ints, not "
                         f"{kind}")
    if position == 0:
        return TypeError(f"{fn_name}(): argument 'size' (position 1) must be tuple of ints, but "
                         f"found element of type {kind} at pos 0")
    return TypeError(f"{fn_name}(): argument 'size' failed to unpack the object at pos "
                     f"{position + 1} with error \"type must be tuple of ints,but got {kind}\"")


def _size_arg(sizes, size, fn_name):
    """The shape of ``f(*sizes)``, ``f(sizes)`` or ``f(size=sizes)``."""
    if size is None:
        return _size(sizes, fn_name)
    if sizes:
        raise TypeError(f"{fn_name}() got multiple values for argument 'size'")
    return _size((size,), fn_name)


def _dtype_with_out(dtype, out, fn_name):
    """A factory's ``dtype=``, checked; given only ``out=``, the factory makes ``out``'s dtype."""
    dtype = dt.check_dtype(dtype, fn_name)
    if dtype is None and isinstance(out, Tensor):
        return out._dtype
    return dtype


def _into_out(out, result):
    """``result`` written into ``out=``, whose device it takes as torch's factories do."""
    if out is None:
        return result
    from .inplace import copy_into_out
    if isinstance(out, Tensor) and out._device is not result._device:
        result = result.to(out._device)
    return copy_into_out(out, result)


_SCALAR_DTYPES = {bool: dt.bool, int: dt.int64}


def _is_sequence(x):
    return isinstance(x, (list, tuple, range)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _leaf_dtype(x):
    """PyTorch's dtype for one element of nested data: Python scalars get the default dtypes,
    NumPy scalars and one-element tensors keep theirs."""
    t = type(x)
    d = _SCALAR_DTYPES.get(t)
    if d is not None:
        return d
    if t is float:
        return dt.get_default_dtype()
    if t is complex:
        return dt.default_complex_dtype()
    if isinstance(x, Tensor):
        return x._dtype
    if isinstance(x, (np.generic, np.ndarray)):
        return dt.from_numpy_dtype(x.dtype)
    if isinstance(x, numbers.Number):
        return dt.scalar_dtype(x)
    if x is None or isinstance(x, (set, dict, frozenset)):
        raise RuntimeError(f"Could not infer dtype of {t.__name__}")
    raise TypeError(f"new(): invalid data type '{t.__name__}'")


def _nested_sizes(data):
    """The shape of nested sequences, read along the first elements (as PyTorch does)."""
    sizes = []
    while _is_sequence(data):
        sizes.append(len(data))
        if not len(data):
            break
        data = data[0]
    return sizes


def _flatten_nested(seq, sizes, dim, leaves):
    if len(seq) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(seq)})")
    if dim + 1 == len(sizes):
        leaves.extend(seq)  # checked to be scalars by the caller, per type rather than per item
        return
    for x in seq:
        if not _is_sequence(x):
            raise TypeError("not a sequence")
        _flatten_nested(x, sizes, dim + 1, leaves)


def _nested_to_numpy(data, dtype):
    """Python data (nested sequences of scalars, NumPy arrays and scalars, one-element tensors)
    as a NumPy array of ``dtype``, or of the dtype PyTorch infers when ``dtype`` is None."""
    if isinstance(data, np.ndarray):
        return data, dtype or dt.from_numpy_dtype(data.dtype)
    if _is_sequence(data):
        sizes = _nested_sizes(data)
        leaves = []
        _flatten_nested(data, sizes, 0, leaves)
    else:
        sizes, leaves = (), [data]
    # Checks and inference go per leaf type, not per leaf: lists can hold millions of floats.
    leaf_types = set(map(type, leaves))
    if leaf_types & {list, tuple, range} or (np.ndarray in leaf_types and builtins.any(
            x.ndim for x in leaves if type(x) is np.ndarray)):
        raise TypeError("a nested sequence is deeper than its first element: expected a number")
    has_tensors = builtins.any(issubclass(tp, Tensor) for tp in leaf_types)
    if dtype is None:
        dtype = _infer_leaf_dtype(leaves, leaf_types) if leaves else dt.get_default_dtype()
    if has_tensors:
        leaves = [_tensor_scalar(x) if isinstance(x, Tensor) else x for x in leaves]
    if dtype._kind == 1 and int in leaf_types:
        _check_int_range(leaves, dtype)
    try:
        array = np.array(leaves, dtype=dtype.np)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    return array.reshape(sizes), dtype


def _infer_leaf_dtype(leaves, leaf_types):
    """The promotion of every leaf's dtype; leaves that carry their own dtype (tensors, 0-d
    arrays) are looked at one by one, Python and NumPy scalars once per type."""
    inferred = None
    for tp in leaf_types:
        if issubclass(tp, (Tensor, np.ndarray)):
            found = {_leaf_dtype(x) for x in leaves if type(x) is tp}
        else:
            found = {_leaf_dtype(next(x for x in leaves if type(x) is tp))}
        for d in found:
            inferred = d if inferred is None else dt.promote_types(inferred, d)
    return inferred


def _tensor_scalar(t):
    if t.numel() != 1:
        # PyTorch converts integer tensors through __index__ and the rest through __float__.
        if t._dtype._kind == 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        raise ValueError("only one element tensors can be converted to Python scalars")
    return t.item()


def _check_int_range(leaves, dtype):
    ints = [x for x in leaves if type(x) is int]
    lo, hi = builtins.min(ints), builtins.max(ints)
    if lo < -2 ** 63 or hi >= 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    info = np.iinfo(dtype.np)
    if lo < info.min or hi > info.max:
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (a nested list, a NumPy array, a scalar, a tensor).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]])
    tensor([[1, 2],
            [3, 4]])
    >>> ember.tensor([0.5, 2.0], dtype=ember.float64, requires_grad=True)
    tensor([0.5000, 2.0000], dtype=ember.float64, requires_grad=True)
    """
    device = resolve_device(device)
    dtype = dt.check_dtype(dtype, "tensor")
    if isinstance(data, Tensor):
        src = data.detach()
        out = src.to(device=device, dtype=dtype or src._dtype, copy=True)
        if requires_grad:
            out.requires_grad_(True)
        return out
    if not _is_sequence(data) and not isinstance(data, np.ndarray) and hasattr(data, "__array__"):
        data = np.asarray(data)
    array, d = _nested_to_numpy(data, dtype)
    array = np.array(array, dtype=d.np, copy=True)
    return _finish(_to_backend(array, device), d, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a NumPy array or tensor when dtype and device allow."""
    dtype = dt.check_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data.to(device=resolve_device(device) if device is not None else data._device,
                       dtype=dtype or data._dtype)
    device = resolve_device(device)
    if isinstance(data, np.ndarray) and device.type == "cpu":
        d = dtype or dt.from_numpy_dtype(data.dtype)
        arr = data if data.dtype == d.np else data.astype(d.np)
        return _finish(arr, d, device, False)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(ndarray):
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return _finish(ndarray, dt.from_numpy_dtype(ndarray.dtype), _CPU, False)


def _factory(fill):
    def make(*sizes, size=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False, memory_format=None):
        shape = _size_arg(sizes, size, fill)
        d = _dtype_with_out(dtype, out, fill) or dt.get_default_dtype()
        dev = resolve_device(device)
        backend = get_backend(dev)
        backend.check_dtype(d.np, fill)
        xp = backend.xp
        if memory_format is None or memory_format is _mf.contiguous_format:
            data = getattr(xp, fill)(shape, dtype=d.np)
        else:
            if memory_format is _mf.preserve_format:
                raise RuntimeError("unsupported memory format Preserve")
            _mf.check(memory_format, len(shape))
            data = _mf.empty_in(xp, shape, d.np, memory_format, fill)
        return _into_out(out, _finish(_fill_if_deterministic(data, d, fill), d, dev,
                                      requires_grad))
    make.__name__ = fill
    return make


zeros = _factory("zeros")
ones = _factory("ones")
empty = _factory("empty")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
         pin_memory=False):
    if not isinstance(size, (tuple, list, Tensor)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    shape = _size((tuple(size),), "full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = dt.check_dtype(dtype, "full") or dt.scalar_dtype(fill_value)
    dev = resolve_device(device)
    backend = get_backend(dev)
    backend.check_dtype(d.np, "full")
    data = backend.xp.full(shape, fill_value, dtype=d.np)
    return _finish(data, d, dev, requires_grad)


def _fill_if_deterministic(data, d, fill):
    """In deterministic mode ``empty`` memory is filled (NaN, or the integer maximum), as torch's
    ``fill_uninitialized_memory`` does, so that reading it is reproducible."""
    if fill == "empty" and _switches.fills_uninitialized_memory():
        data[...] = _switches.uninitialized_fill_value(d)
    return data


def _like(fn_name):
    def make(input, *, dtype=None, device=None, requires_grad=False, layout=None,
             memory_format=None, pin_memory=False):
        fn = globals()[fn_name]
        dtype = dt.check_dtype(dtype, fn_name + "_like")
        if memory_format is not None and memory_format is not _mf.contiguous_format or (
                memory_format is None and not input._data.flags.c_contiguous):
            # A layout to keep or choose (torch's default is preserve_format).
            d = dtype or input._dtype
            dev = resolve_device(device) if device is not None else input._device
            data = _mf.like_layout(get_backend(dev).xp, input._data.shape, input.stride(),
                                   d.np, memory_format, fn_name)
            return _finish(_fill_if_deterministic(data, d, fn_name), d, dev, requires_grad)
        return fn(input._data.shape, dtype=dtype or input._dtype,
                  device=device if device is not None else input._device, requires_grad=requires_grad)
    make.__name__ = fn_name + "_like"
    return make


zeros_like = _like("zeros")
ones_like = _like("ones")
empty_like = _like("empty")


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
              memory_format=None):
    dtype = dt.check_dtype(dtype, "full_like")
    return full(input._data.shape, fill_value, dtype=dtype or input._dtype,
                device=device if device is not None else input._device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    dtype = dt.check_dtype(dtype, "new_tensor")
    return tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                  requires_grad=requires_grad)


def _new_filled(factory, name):
    def new_method(self, *sizes, size=None, dtype=None, device=None, requires_grad=False,
                   layout=None, pin_memory=False):
        return factory(_size_arg(sizes, size, name),
                       dtype=dt.check_dtype(dtype, name) or self._dtype,
                       device=device or self._device, requires_grad=requires_grad)
    new_method.__name__ = name
    return new_method


new_zeros = _new_filled(zeros, "new_zeros")
new_ones = _new_filled(ones, "new_ones")
new_empty = _new_filled(empty, "new_empty")


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False):
    return full(size, fill_value, dtype=dt.check_dtype(dtype, "new_full") or self._dtype,
                device=device or self._device, requires_grad=requires_grad)


def _num(x):
    return x.item() if isinstance(x, Tensor) else x


def arange(start=0, end=None, step=1, *, out=None, dtype=None, device=None, requires_grad=False,
           layout=None):
    """Values from ``start`` to ``end`` (exclusive) in steps of ``step``.

    >>> import ember
    >>> ember.arange(5)
    tensor([0, 1, 2, 3, 4])
    >>> ember.arange(1, 2.5, 0.5)
    tensor([1.0000, 1.5000, 2.0000])
    """
    if end is None:
        start, end = 0, start
    start, end, step = _num(start), _num(end), _num(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    for v in (start, end):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dtype = _dtype_with_out(dtype, out, "arange")
    if dtype is None:
        is_float = builtins.any(isinstance(v, float) for v in (start, end, step))
        dtype = dt.get_default_dtype() if is_float else dt.int64
    if dtype._kind <= 1:
        # PyTorch accumulates integer ranges in int64, truncating each argument first.
        int_start, int_step = int(start), int(step)
        if dtype is dt.int64:
            if int_step == 0:
                raise ValueError("step must be nonzero")
            sign = 1 if int_step > 0 else -1
            n = _trunc_div(int(end) - int_start + int_step - sign, int_step)
        else:
            n = math.ceil((end - start) / step)
        values = int_start + int_step * np.arange(builtins.max(0, n), dtype=np.int64)
    else:
        n = math.ceil((end - start) / step)
        values = start + step * np.arange(builtins.max(0, n), dtype=np.float64)
    dev = resolve_device(device)
    return _into_out(out, _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev,
                                  requires_grad))


def _trunc_div(a, b):
    """C's integer division, which rounds toward zero."""
    q = builtins.abs(a) // builtins.abs(b)
    return q if (a >= 0) == (b > 0) else -q


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated ``torch.range``: like arange but includes ``end``."""
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    dtype = dt.check_dtype(dtype, "range") or dt.get_default_dtype()
    values = start + np.arange(n, dtype=np.float64) * step
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev, requires_grad)


def linspace(start, end, steps, *, out=None, dtype=None, device=None, requires_grad=False,
             layout=None):
    start, end = _num(start), _num(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = _dtype_with_out(dtype, out, "linspace") or dt.get_default_dtype()
    if dtype._kind <= 1 and not isinstance(start + end, complex):
        start, end = int(start), int(end)  # torch casts the ends to the integer dtype first
    if steps == 1:
        values = np.array([start], dtype=np.float64)
    elif dtype in (dt.float32, dt.float16, dt.bfloat16) and not isinstance(start + end, complex):
        values = _linspace_as_torch(start, end, steps, dtype.np.type)
    else:
        # PyTorch fills the two halves from opposite ends so both endpoints are exact.
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        i = np.arange(steps, dtype=np.float64)
        half = steps // 2
        values = np.where(i < half, start + step * i, end - step * (steps - 1 - i))
    if dtype._kind <= 1:
        values = np.trunc(values)
    dev = resolve_device(device)
    return _into_out(out, _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev,
                                  requires_grad))


def _linspace_as_torch(start, end, steps, np_dtype):
    """torch's values bit for bit: the ends and the step in the output's dtype, each half
    filled from its own end; float32 points are one fused multiply-add each (exact in float64,
    then rounded once), float16/bfloat16 points each product and sum rounded in the dtype."""
    s, e = np_dtype(start), np_dtype(end)
    step = np_dtype(np_dtype(e - s) / np_dtype(steps - 1))
    idx = np.arange(steps)
    first = idx < steps // 2
    if np_dtype is np.float32:
        values = np.where(first, np.float64(s) + np.float64(step) * idx,
                          np.float64(e) - np.float64(step) * (steps - 1 - idx))
        return values.astype(np.float32)
    up = (step * idx.astype(np_dtype)).astype(np_dtype)
    down = (step * idx[::-1].astype(np_dtype)).astype(np_dtype)
    return np.where(first, (s + up).astype(np_dtype), (e - down).astype(np_dtype))


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    lin = linspace(start, end, steps, dtype=dt.float64)
    dtype = dt.check_dtype(dtype, "logspace") or dt.get_default_dtype()
    values = np.power(float(base), lin._data)
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, layout=None):
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n if n < 0 else m}")
    dtype = dt.check_dtype(dtype, "eye") or dt.get_default_dtype()
    dev = resolve_device(device)
    data = get_backend(dev).xp.eye(n, n if m is None else m, dtype=dtype.np)
    return _finish(data, dtype, dev, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return tensor(s, dtype=dtype or dt.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------
# Matrices of powers and of triangle indices (vander, tril_indices, triu_indices)
# ---------------------------------------------------------------------------------------------

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
        from .shape import cat
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


# ---------------------------------------------------------------------------------------------
# dtype and device conversion
# ---------------------------------------------------------------------------------------------

class ToCopyBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        if grad._dtype._kind == 3 and self.src_dtype._kind != 3:
            grad = grad.real  # a real source gets the real part, without to()'s cast warning
        return grad.to(dtype=self.src_dtype, device=self.src_device)

    def jvp(self, t):
        return t.to(dtype=self.dst_dtype, device=self.dst_device)  # the same conversion


class PinMemoryBackward0(Node):
    """``Tensor.pin_memory()``'s node (torch's derivative: ``self: grad``)."""
    __slots__ = ()

    def backward(self, grad):
        return grad


def _parse_to(args, kwargs):
    device = kwargs.pop("device", None)
    dtype = dt.check_dtype(kwargs.pop("dtype", None), "to")
    for a in args:
        if a is None:  # to(None) and to(device, None) leave that part as it is
            continue
        if isinstance(a, dt.dtype) or (isinstance(a, type) and a in dt._PYTHON_TYPE_DTYPES):
            dtype = dt.check_dtype(a, "to")
        elif isinstance(a, Tensor):
            dtype, device = a._dtype, a._device
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got {type(a).__name__}")
    return device, dtype


def to(self, *args, non_blocking=False, copy=False, memory_format=None, **kwargs):
    device, dtype = _parse_to(args, kwargs)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    device = resolve_device(device) if device is not None else self._device
    dtype = dtype or self._dtype
    relayout = False
    if memory_format is not None and memory_format is not _mf.preserve_format:
        _mf.check(memory_format, self._data.ndim)
        # As torch: the tensor is returned as it is only if its strides suggest that format.
        relayout = _mf.suggest(self._data.shape, self.stride()) is not memory_format
    if device is self._device and dtype is self._dtype and not copy and not relayout:
        return self
    if device is self._device:
        if dtype is not self._dtype:
            self._backend.check_dtype(dtype.np, "to()")
        data = self._data.astype(dtype.np, copy=True) if copy or dtype is not self._dtype else self._data
        if relayout:
            data = _mf.arrange(self._backend.xp, data, memory_format)
        out = _wrap(data, dtype, self)
    else:
        backend = get_backend(device)
        data = _tensor_mod._transfer_array(self, device, dtype.np, non_blocking)
        if relayout:
            data = _mf.arrange(backend.xp, data, memory_format)
        out = _wrap_with(data, dtype, device, backend)
    if ((_grad_state.enabled and self._requires_grad) or _dispatch._dual_active) and (
            dtype._kind >= 2) and needs_grad(self):
        record(ToCopyBackward0, (self,), out, src_dtype=self._dtype, src_device=self._device,
               dst_dtype=out._dtype, dst_device=out._device)
    return out


_TENSOR_TYPE_NAMES = {d: name + "Tensor" for d, name in dt.SCALAR_TYPE_NAMES.items()}
_DTYPE_BY_TENSOR_TYPE = {name: dt._BY_NAME[d] for d, name in _TENSOR_TYPE_NAMES.items()}


def type_(self, dtype=None, non_blocking=False, **kwargs):
    """``t.type()`` names the legacy tensor type, with the device type for a tensor off the
    CPU as torch's 'torch.cuda.FloatTensor' has; ``t.type(dtype)`` converts, accepting a dtype
    or a type name such as "torch.FloatTensor" (a CPU tensor) or "torch.cuda.FloatTensor" (code
    written for PyTorch passes those)."""
    if dtype is None:
        where = "" if self._device.type == "cpu" else self._device.type + "."
        return "ember." + where + _TENSOR_TYPE_NAMES[self._dtype.name]
    if isinstance(dtype, str):
        parts = dtype.split(".")
        name = parts[-1]
        if name == "Tensor" and len(parts) == 2:
            dtype = dt.get_default_dtype()
        elif name not in _DTYPE_BY_TENSOR_TYPE or parts[1:-1] not in ([], ["cuda"]) or \
                len(parts) == 1:
            raise ValueError(f"invalid type: '{dtype}'")
        else:  # torch's legacy names say the device too: no "cuda." means a CPU tensor
            device = "cuda" if len(parts) == 3 else "cpu"
            return to(self, device, _DTYPE_BY_TENSOR_TYPE[name], non_blocking=non_blocking)
    elif isinstance(dtype, type):  # a legacy type (ember.FloatTensor) or Tensor itself
        if issubclass(dtype, Tensor):
            dtype = dt.get_default_dtype()
        elif isinstance(dtype, LegacyTensorType):
            dtype = dtype.dtype
        else:
            raise ValueError(f"invalid type: '{dtype.__name__}'")
    elif not isinstance(dtype, dt.dtype):
        raise TypeError("dtype must be a type, str, or dtype object")
    return to(self, dtype, non_blocking=non_blocking)


# ---------------------------------------------------------------------------------------------
# Legacy constructors: ember.FloatTensor(2, 3), ember.LongTensor([1, 2]), Tensor.new(...)
# ---------------------------------------------------------------------------------------------

class LegacyTensorType(type):
    """The type of ``ember.FloatTensor`` and its siblings. As in PyTorch they are not Tensor
    subclasses: calling one makes a plain Tensor of its dtype on the CPU, and ``isinstance``
    asks whether a tensor has that dtype and lives on the CPU."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._dtype is cls.dtype and obj._device.type == "cpu"

    def __call__(cls, *args, device=None, **kwargs):
        if device is not None and resolve_device(device).type != "cpu":
            raise RuntimeError("legacy constructor expects device type: cpu but device type: "
                               f"{resolve_device(device).type} was passed")
        return legacy_new(cls.dtype, _CPU, args, kwargs)


def _legacy_type(name, dtype):
    return LegacyTensorType(name, (), {"dtype": dtype, "is_cuda": False, "is_sparse": False,
                                       "__module__": "ember", "__slots__": ()})


def _options(dtype, device):
    return (f"TensorOptions(dtype={dt.TYPE_META_NAMES[dtype.name]}, device={device}, "
            "layout=Strided, requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _arg_type_name(value):
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, (dt.dtype, _device_cls)):
        return f"ember.{type(value).__name__}"
    return type(value).__name__


def _invalid_arguments(fn_name, args, kwargs, overloads):
    # Worded as torch's argument parser words it: "got (list, dtype=ember.dtype)", and
    # "got (requires_grad=bool, )" when only keywords were given.
    keywords = [f"{k}={_arg_type_name(v)}" for k, v in kwargs.items()]
    positional = [_arg_type_name(a) for a in args]
    got = ", ".join(positional + keywords) if positional else "".join(k + ", " for k in keywords)
    listed = "".join(f" * {o}\n" for o in overloads)
    return TypeError(f"{fn_name}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{listed}")


def _legacy_overload_error(args, kwargs):
    return _invalid_arguments("new", args, kwargs, (
        "(*, ember.device device = None)", "(Tensor other)",
        "(tuple of ints size, *, ember.device device = None)",
        "(object data, *, ember.device device = None)"))


def legacy_new(dtype, device, args, kwargs, alias_any_dtype=False):
    """PyTorch's legacy constructor overloads: ``()`` an empty 1-D tensor, ``(*sizes)`` or
    ``(Size)`` uninitialised values, ``(sequence)`` a copy of the data, ``(tensor)`` an alias
    of it (which must already have ``dtype`` unless ``alias_any_dtype``)."""
    if kwargs:
        raise _legacy_overload_error(args, kwargs)
    if not args:
        return empty(0, dtype=dtype, device=device)
    if len(args) == 1:
        (data,) = args
        if isinstance(data, Tensor):
            if data._dtype is not dtype and not alias_any_dtype:
                raise TypeError(f"expected {_options(dtype, device)} (got "
                                f"{_options(data._dtype, data._device)})")
            return data.view(data._data.shape)
        if isinstance(data, _tensor_mod.Size):
            return empty(tuple(data), dtype=dtype, device=device)
        if _is_sequence(data) or isinstance(data, np.ndarray):
            return tensor(data, dtype=dtype, device=device)
        if isinstance(data, bool) or not isinstance(data, numbers.Integral):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    elif builtins.any(_is_sequence(a) or isinstance(a, Tensor) for a in args):
        raise _legacy_overload_error(args, kwargs)
    return empty(_size(args, "new"), dtype=dtype, device=device)


def new(self, *args, device=None, **kwargs):
    """``x.new(...)``: the legacy constructor with ``x``'s dtype and device."""
    return legacy_new(self._dtype, resolve_device(device) if device is not None else self._device,
                      args, kwargs)


FloatTensor = _legacy_type("FloatTensor", dt.float32)
DoubleTensor = _legacy_type("DoubleTensor", dt.float64)
HalfTensor = _legacy_type("HalfTensor", dt.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", dt.bfloat16)
LongTensor = _legacy_type("LongTensor", dt.int64)
IntTensor = _legacy_type("IntTensor", dt.int32)
ShortTensor = _legacy_type("ShortTensor", dt.int16)
CharTensor = _legacy_type("CharTensor", dt.int8)
ByteTensor = _legacy_type("ByteTensor", dt.uint8)
BoolTensor = _legacy_type("BoolTensor", dt.bool)


def cpu(self, memory_format=None):
    return to(self, _CPU, memory_format=memory_format)


def cuda(self, device=None, non_blocking=False, memory_format=None):
    # device=None: the current CUDA device (resolve_device asks).
    dev = _device_cls("cuda", device) if isinstance(device, int) or device is None else device
    return to(self, dev, non_blocking=non_blocking, memory_format=memory_format)


def _caster(d):
    def cast_method(self, memory_format=None):
        return to(self, d, memory_format=memory_format)
    return cast_method


# Tensor.float(), .double() …: attached as methods by ops/__init__, never exported as functions
# (the names belong to the dtypes in the ember namespace).
CAST_METHODS = {"float": dt.float32, "double": dt.float64, "half": dt.float16,
                "bfloat16": dt.bfloat16, "long": dt.int64, "int": dt.int32, "short": dt.int16,
                "char": dt.int8, "byte": dt.uint8, "bool": dt.bool, "cfloat": dt.complex64,
                "cdouble": dt.complex128}


# ---------------------------------------------------------------------------------------------
# random sampling: ``sampler(generator, device)`` is what a draw comes from: on the
# CPU (and host-drawing devices) a CPU generator's NumPy stream, then moved to the device; on a
# device that draws on the device (CUDA), the device generator's Philox draws, made there. The
# arithmetic after a draw uses the draw's namespace (``draw_namespace``), so nothing is copied.
# ---------------------------------------------------------------------------------------------

def _not_implemented(kernel, dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(dtype)}'")


def _check_floating(dtype, kernel):
    if not (dtype.is_floating_point or dtype.is_complex):
        raise _not_implemented(kernel, dtype)


def _float_sample(draw, size, dtype, device, requires_grad, generator, kernel,
                  complex_scale=1.0, kernel_name="rand"):
    """A tensor of ``draw(rng, shape, work_dtype)`` values; complex dtypes draw both parts."""
    dtype = dt.check_dtype(dtype, kernel_name) or dt.get_default_dtype()
    _check_floating(dtype, kernel)
    dev = resolve_device(device)
    rng = sampler(generator, dev)
    shape = _size(size, kernel_name)
    work = np.float64 if dtype in (dt.float64, dt.complex128) else np.float32
    if dtype.is_complex:
        values = (draw(rng, shape, work) + 1j * draw(rng, shape, work)) * complex_scale
    else:
        values = draw(rng, shape, work)
    return _finish(_to_backend(values.astype(dtype.np, copy=False), dev), dtype, dev,
                   requires_grad)


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """Uniform on [0, 1)."""
    return _into_out(out, _float_sample(
        lambda rng, s, w: rng.random(s, dtype=w), (_size_arg(sizes, size, "rand"),),
        _dtype_with_out(dtype, out, "rand"), device, requires_grad, generator,
        "check_uniform_bounds", kernel_name="rand"))


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    """Standard normal; a complex sample splits the unit variance over its two parts."""
    return _into_out(out, _float_sample(
        lambda rng, s, w: rng.standard_normal(s, dtype=w), (_size_arg(sizes, size, "randn"),),
        _dtype_with_out(dtype, out, "randn"), device, requires_grad, generator,
        "normal_kernel_cpu", math.sqrt(0.5), kernel_name="randn"))


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False, layout=None, out=None, pin_memory=False):
    """Integers uniform on [low, high)."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=size)
        low, high = 0, low
    if high is None or size is None:
        raise TypeError("randint() missing required arguments 'high' and 'size'")
    if not isinstance(size, (tuple, list, Tensor)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not "
                        f"{type(size).__name__}")
    low, high = _as_int(low, "low"), _as_int(high, "high")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    dtype = _dtype_with_out(dtype, out, "randint") or dt.int64
    if dtype._kind <= 1:
        info = np.iinfo(dtype.np) if dtype is not dt.bool else np.iinfo(np.uint8)
        hi_limit = 1 if dtype is dt.bool else info.max
        if low < info.min:
            raise RuntimeError(f"from is out of bounds for {dt.TYPE_META_NAMES[dtype.name]}")
        if high - 1 > hi_limit:
            raise RuntimeError(f"to - 1 is out of bounds for {dt.TYPE_META_NAMES[dtype.name]}")
    dev = resolve_device(device)
    values = sampler(generator, dev).integers(low, high, size=_size((tuple(size),)),
                                              dtype=np.int64)
    return _into_out(out, _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev,
                                  requires_grad))


def _as_int(value, name):
    if isinstance(value, (float, complex)) or isinstance(value, bool):
        raise TypeError(f"randint(): argument '{name}' must be int, not {type(value).__name__}")
    value = int(value)
    if not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    return value


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, layout=None,
             out=None, pin_memory=False):
    """A random permutation of ``0 .. n-1``."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = _dtype_with_out(dtype, out, "randperm") or dt.int64
    dev = resolve_device(device)
    values = sampler(generator, dev).permutation(n).astype(dtype.np)
    return _into_out(out, _finish(_to_backend(values, dev), dtype, dev, requires_grad))


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, **_):
    dtype = dt.check_dtype(dtype, "rand_like")
    return rand(input._data.shape, dtype=dtype or input._dtype, device=device or input._device,
                requires_grad=requires_grad, generator=generator)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, **_):
    dtype = dt.check_dtype(dtype, "randn_like")
    return randn(input._data.shape, dtype=dtype or input._dtype, device=device or input._device,
                 requires_grad=requires_grad, generator=generator)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False,
                 generator=None, **_):
    if high is None:
        low, high = 0, low
    dtype = dt.check_dtype(dtype, "randint_like")
    return randint(low, high, input._data.shape, dtype=dtype or input._dtype,
                   device=device or input._device, requires_grad=requires_grad,
                   generator=generator)


def _std_error(std):
    return RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False, layout=None, pin_memory=False):
    """Normal samples; with tensor ``mean``/``std`` one sample per broadcast element, and the
    result differentiable in them (``mean + std * noise``)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        # These overloads take no size or tensor options: the tensors decide them.
        given = {k: v for k, v in (("size", size), ("dtype", dtype), ("device", device),
                                   ("layout", layout)) if v is not None}
        if requires_grad:
            given["requires_grad"] = requires_grad
        if given:
            raise _invalid_arguments("normal", (mean, std), given, _NORMAL_OVERLOADS)
        ref = mean if isinstance(mean, Tensor) else std
        for t in (mean, std):
            if isinstance(t, Tensor):
                _check_floating(t._dtype, "normal_kernel_cpu")
        if isinstance(std, Tensor):
            if bool((std.detach() < 0).any()):
                raise RuntimeError("normal expects all elements of std >= 0.0")
        elif std < 0:
            raise _std_error(std)
        from .shape import broadcast_shapes
        shape = broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor)))
        noise = randn(shape, dtype=ref._dtype, device=ref._device, generator=generator)
        result = mean + (std.to(ref._dtype) if isinstance(std, Tensor) else std) * noise
    else:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, "
                            "float), but expected (float mean, float std, tuple of ints size)")
        if std < 0:
            raise _std_error(std)
        noise = randn(_size((tuple(size),), "normal"), dtype=_dtype_with_out(dtype, out, "normal"),
                      device=device, generator=generator)
        result = _finish(noise._data * std + mean, noise._dtype, noise._device, requires_grad)
    return _into_out(out, result)


_NORMAL_OVERLOADS = (
    "(Tensor mean, Tensor std, *, ember.Generator generator = None, Tensor out = None)",
    "(Tensor mean, float std = 1, *, ember.Generator generator = None, Tensor out = None)",
    "(float mean, Tensor std, *, ember.Generator generator = None, Tensor out = None)",
    "(float mean, float std, tuple of ints size, *, ember.Generator generator = None, "
    "Tensor out = None, ember.dtype dtype = None, ember.layout layout = None, "
    "ember.device device = None, bool pin_memory = False, bool requires_grad = False)")


class BernoulliBackward0(Node):
    """Samples do not vary smoothly with their probabilities: the gradient is zero."""
    __slots__ = ()

    def backward(self, grad):
        return zeros_like(grad),


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with probabilities ``input`` (or the scalar ``p``), in ``input``'s dtype."""
    rng = sampler(generator, input._device)
    xp = draw_namespace(rng)
    if p is None:
        _check_floating(input._dtype, "bernoulli_tensor_cpu_p_")
        probs = input._data if xp is not np else input._backend.to_numpy(input._data)
        if bool(((probs < 0) | (probs > 1)).any()):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                               "(Could this error message be improved?  If so, please report an "
                               "enhancement request to PyTorch.)")
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        probs = p
    draws = rng.random(input._data.shape)
    threshold = probs.astype(np.float64) if p is None else float(p)
    values = (draws < threshold).astype(input._dtype.np)
    res = _wrap(_to_backend(values, input._device), input._dtype, input)
    if needs_grad(input):
        record(BernoulliBackward0, (input,), res)
    return res


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Category indices drawn from each row of (unnormalised) probabilities ``input``."""
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{dtype_name(input._dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_categories = input.shape[-1]
    if not replacement and num_samples > n_categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rng = sampler(generator, input._device)
    if draw_namespace(rng) is not np:
        samples = _multinomial_on_device(rng, input._data, num_samples, replacement)
        return _wrap(samples, dt.int64, input)
    rows = input._backend.to_numpy(input._data).astype(np.float64).reshape(-1, n_categories)
    if not replacement or num_samples == 1:
        if not bool((rows.min() >= 0) & (rows.max() < math.inf)) or np.isnan(rows).any():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool((rows.sum(1) == 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # PyTorch's sampler: the top-k of p / q with q ~ Exp(1) is a draw without replacement
        # (the Gumbel-max trick); zero-probability categories come last.
        keys = rows / rng.exponential(size=rows.shape)
        samples = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    else:
        samples = np.empty((rows.shape[0], num_samples), dtype=np.int64)
        for i, row in enumerate(rows):
            if (row < 0).any():
                raise RuntimeError("invalid multinomial distribution (encountering probability "
                                   "entry < 0)")
            if not np.isfinite(row).all():
                raise RuntimeError("invalid multinomial distribution (encountering probability "
                                   "entry = infinity or NaN)")
            cumulative = np.cumsum(row)
            if cumulative[-1] <= 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            u = rng.random(num_samples) * cumulative[-1]
            picks = np.searchsorted(cumulative, u, side="right")
            # Rounding can push u to the total; never pick past the last possible category.
            samples[i] = np.minimum(picks, np.flatnonzero(row)[-1])
    samples = samples.reshape(input.shape[:-1] + (num_samples,)).astype(np.int64)
    return _wrap(_to_backend(samples, input._device), dt.int64, input)


def _multinomial_on_device(rng, probs, num_samples, replacement):
    """``multinomial`` with every step on the device: the checks read back one flag each,
    without replacement the Gumbel-max trick as on the CPU, with replacement one sorted search
    of all rows' CDFs shifted apart (row ``r`` into ``[2r, 2r + 1]``)."""
    xp = rng.xp
    n_categories = probs.shape[-1]
    rows = probs.astype(xp.float64).reshape(-1, n_categories)
    finite = bool(xp.isfinite(rows).all())
    if not replacement or num_samples == 1:
        if not finite or bool((rows < 0).any()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    else:
        if bool((rows < 0).any()):
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not finite:
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
    totals = rows.sum(1)
    if bool((totals <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement or num_samples == 1:
        keys = rows / rng.exponential(size=rows.shape)
        samples = xp.argsort(-keys, axis=1)[:, :num_samples]
    else:
        n_rows = rows.shape[0]
        shift = 2.0 * xp.arange(n_rows, dtype=xp.float64)
        cdf = (xp.cumsum(rows, axis=1) / totals[:, None] + shift[:, None]).reshape(-1)
        u = rng.random((n_rows, num_samples)) + shift[:, None]
        flat = xp.searchsorted(cdf, u.reshape(-1), side="right").reshape(n_rows, num_samples)
        picks = flat - (xp.arange(n_rows, dtype=xp.int64) * n_categories)[:, None]
        # Rounding can push u to the total: never pick past the last category with mass.
        last = n_categories - 1 - xp.argmax(rows[:, ::-1] > 0, axis=1)
        samples = xp.minimum(picks, last[:, None])
    return samples.astype(xp.int64).reshape(probs.shape[:-1] + (num_samples,))


def poisson(input, generator=None):
    rng = sampler(generator, input._device)
    lam = input._data if draw_namespace(rng) is not np else input._backend.to_numpy(input._data)
    values = rng.poisson(lam).astype(input._dtype.np)
    return _wrap(_to_backend(values, input._device), input._dtype, input)


# in-place samplers (nn.init uses these under no_grad)

def _fill_random(self, values):
    from .inplace import check_inplace
    check_inplace(self)
    self._data[...] = _to_backend(values.astype(self._dtype.np, copy=False), self._device)
    self._bump_version()
    return self


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    from_ = kw.pop("from", from_)
    if kw:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kw))}'")
    _check_floating(self._dtype, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_:g} > to={to:g}")
    rng = sampler(generator, self._device)
    u = rng.random(self._data.shape)
    digits = _MANTISSA_DIGITS.get(self._dtype)
    if digits is not None:
        # As torch: u keeps only the dtype's mantissa digits, so rounding the result to the
        # dtype cannot reach ``to`` (a float16/bfloat16 draw could otherwise round up onto it).
        u = draw_namespace(rng).floor(u * 2.0 ** digits) / 2.0 ** digits
    return _fill_random(self, u * (to - from_) + from_)


_MANTISSA_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24}


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _check_floating(self._dtype, "normal_kernel_cpu")
    if std < 0:
        raise _std_error(std)
    rng = sampler(generator, self._device)
    return _fill_random(self, rng.standard_normal(self._data.shape) * std + mean)


def bernoulli_(self, p=0.5, *, generator=None):
    rng = sampler(generator, self._device)
    on_device = draw_namespace(rng) is not np
    if isinstance(p, Tensor):
        if on_device:
            _check_same_device(self, p)
        pv = p._data if on_device else p._backend.to_numpy(p._data)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        pv = p
    # On a device, a float32 draw (one word per element) serves every dtype but float64: this
    # is dropout's mask.
    work = np.float32 if on_device and self._dtype is not dt.float64 else np.float64
    return _fill_random(self, rng.random(self._data.shape, dtype=work) < pv)


def exponential_(self, lambd=1.0, *, generator=None):
    rng = sampler(generator, self._device)
    return _fill_random(self, rng.exponential(1.0 / lambd, self._data.shape))


def random_(self, from_=0, to=None, *, generator=None):
    rng = sampler(generator, self._device)
    if to is None:
        from_, to = 0, from_ if from_ else 2 ** min(self._dtype.itemsize * 8 - 1, 53)
    return _fill_random(self, rng.integers(from_, to, self._data.shape))


def geometric_(self, p, *, generator=None):
    rng = sampler(generator, self._device)
    return _fill_random(self, rng.geometric(p, self._data.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    rng = sampler(generator, self._device)
    return _fill_random(self, rng.lognormal(mean, std, self._data.shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    rng = sampler(generator, self._device)
    return _fill_random(self, median + sigma * rng.standard_cauchy(self._data.shape))


# ---------------------------------------------------------------------------------------------
# Sampling, strided and permuted factories, frombuffer, type_as, as_subclass
# ---------------------------------------------------------------------------------------------

def binomial(count, prob, generator=None):
    _check_same_device(count, prob)
    if count._dtype._kind != 2:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{dtype_name(count._dtype)}")
    if count._dtype is not prob._dtype:
        raise RuntimeError(f"Found dtype {dtype_name(prob._dtype)} but expected "
                           f"{dtype_name(count._dtype)}")
    backend = count._backend
    rng = sampler(generator, count._device)
    xp = draw_namespace(rng)
    n, p = ((count._data, prob._data) if xp is not np
            else (backend.to_numpy(count._data), backend.to_numpy(prob._data)))
    n, p = xp.broadcast_arrays(n, p)
    # PyTorch draws nothing for a negative count and saturates probabilities outside [0, 1].
    draws = rng.binomial(xp.clip(n, 0, None).astype(np.int64), xp.clip(p.astype(np.float64), 0, 1))
    return _wrap(backend.asarray(draws.astype(count._dtype.np)), count._dtype, count)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    size = tuple(operator.index(s) for s in size)
    stride = tuple(operator.index(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    if builtins.any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    d = dtype or dt.get_default_dtype()
    dev = resolve_device(device)
    xp = get_backend(dev).xp
    needed = 0 if 0 in size else 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    storage = _fill_if_deterministic(
        xp.empty((builtins.max(needed, 1),), dtype=d.np), d, "empty")
    data = xp.lib.stride_tricks.as_strided(storage, shape=size,
                                           strides=tuple(s * d.itemsize for s in stride))
    return _finish(data, d, dev, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    size = tuple(operator.index(s) for s in size)
    order = tuple(operator.index(p) for p in physical_layout)
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    for i, p in enumerate(order):
        if not 0 <= p < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {p} at index {i}).  NB: negative dims "
                               "not currently supported; file an issue if you want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    d = dtype or dt.get_default_dtype()
    dev = resolve_device(device)
    xp = get_backend(dev).xp
    physical = _fill_if_deterministic(
        xp.empty(tuple(size[p] for p in order), dtype=d.np), d, "empty")
    inverse = [0] * len(order)
    for i, p in enumerate(order):
        inverse[p] = i
    return _finish(physical.transpose(inverse), d, dev, requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad=False, pin_memory=False):
    return empty_strided(size, stride, dtype=dtype or self._dtype,
                         device=device if device is not None else self._device,
                         requires_grad=requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    view = memoryview(buffer)
    length = view.nbytes
    if length <= 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count <= 0 and (length - offset) % dtype.itemsize:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({dtype.itemsize})")
    if view.readonly:
        import warnings
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of "
                      "this program.", UserWarning, stacklevel=2)
    # Shares the buffer's memory, as PyTorch's does; the array stays read-only where the
    # buffer is (NumPy refuses to write through it rather than corrupting a bytes object).
    data = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    dev = resolve_device("cpu")
    return _finish(data, dtype, dev, requires_grad)


def as_subclass(self, cls):
    """``self`` as an instance of ``cls`` (a Tensor subclass) sharing its data and history."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): expected a Tensor subclass, got {cls!r}")
    from .._tensor import _as_subclass
    out = _as_subclass(self, cls)
    if self._output_nr:
        out._output_nr = self._output_nr
    if self._base is not None:
        out._base = self._base
        out._view_fn = self._view_fn
    return out


def type_as(self, other):
    return self.to(dtype=other._dtype, device=other._device)
