"""Tensor factories (``tensor``, ``zeros``, ``arange``…), random sampling, and conversions
between dtypes and devices (``to``)."""
import builtins
import math
import numbers

import numpy as np

from .. import _dtype as dt
from .. import _tensor as _tensor_mod
from .._device import device as _device_cls
from .._random import numpy_generator
from ..backends import get_backend
from ._dispatch import Tensor, Node, needs_grad, record, _wrap, _wrap_with, cast
from ..autograd.grad_mode import _state as _grad_state


def resolve_device(device):
    """A canonical device: "cpu" has no index; other types default to index 0."""
    if device is None:
        return _tensor_mod._default_device
    if not isinstance(device, _device_cls):
        device = _device_cls(device)
    if device.type == "cpu":
        return _CPU if device.index in (None, 0) else device
    if device.index is None:
        return _device_cls(device.type, 0)
    return device


_CPU = _device_cls("cpu")


def _finish(data, dtype, device, requires_grad):
    backend = get_backend(device)
    t = _wrap_with(data, dtype, device, backend)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _to_backend(array, device):
    backend = get_backend(device)
    return backend.asarray(array) if device.type != "cpu" else array


def _size(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    elif len(args) == 1 and isinstance(args[0], Tensor):
        args = tuple(args[0].tolist()) if args[0].ndim else (int(args[0]),)
    out = []
    for s in args:
        if isinstance(s, bool) or not isinstance(s, (numbers.Integral, Tensor)):
            raise TypeError(f"expected a sequence of integers or a single integer, got "
                            f"'{type(s).__name__}'")
        s = int(s)
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(args)}")
        out.append(s)
    return tuple(out)


def _infer_dtype(array, from_python):
    if array.dtype == object:
        raise TypeError("Could not infer dtype of object")
    d = dt.from_numpy_dtype(array.dtype)
    if from_python:
        if d is dt.float64:
            return dt.get_default_dtype()
        if d is dt.complex128:
            return dt.default_complex_dtype()
    return d


def _nested_to_numpy(data):
    """Python nested sequences (possibly holding tensors or NumPy scalars) as a NumPy array."""
    if isinstance(data, Tensor):
        return data._backend.to_numpy(data.detach()._data), False
    if isinstance(data, np.ndarray):
        return data, False
    if isinstance(data, (list, tuple)):
        if any(isinstance(x, Tensor) for x in data):
            items = [_nested_to_numpy(x)[0] for x in data]
            return np.stack(items) if items else np.zeros((0,)), False
        try:
            arr = np.array(data)
        except ValueError as exc:
            raise ValueError(f"expected sequence of equal lengths: {exc}") from None
        if arr.dtype == object:
            raise ValueError("expected sequence of equal lengths (ragged nested sequence)")
        if arr.size == 0 and arr.dtype == np.float64:
            return arr.astype(np.float32), True
        return arr, True
    if isinstance(data, (bool, numbers.Number, np.generic)):
        if isinstance(data, int) and not isinstance(data, bool) and not -2**63 <= data < 2**63:
            raise RuntimeError(f"Overflow when unpacking long: {data}")
        return np.array(data), not isinstance(data, np.generic)
    if hasattr(data, "__array__"):
        return np.asarray(data), False
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    device = resolve_device(device)
    if isinstance(data, Tensor):
        src = data.detach()
        out = src.to(device=device, dtype=dtype or src._dtype, copy=True)
        if requires_grad:
            out.requires_grad_(True)
        return out
    array, from_python = _nested_to_numpy(data)
    d = dtype or _infer_dtype(array, from_python)
    array = np.array(array, dtype=d.np, copy=True)
    return _finish(_to_backend(array, device), d, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a NumPy array or tensor when dtype and device allow."""
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
    def make(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, memory_format=None):
        shape = _size(size)
        d = dtype or dt.get_default_dtype()
        dev = resolve_device(device)
        xp = get_backend(dev).xp
        data = getattr(xp, fill)(shape, dtype=d.np)
        return _finish(data, d, dev, requires_grad)
    make.__name__ = fill
    return make


zeros = _factory("zeros")
ones = _factory("ones")
empty = _factory("empty")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
         pin_memory=False):
    shape = _size((size,) if isinstance(size, int) else (tuple(size),))
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = dtype or dt.scalar_dtype(fill_value)
    dev = resolve_device(device)
    data = get_backend(dev).xp.full(shape, fill_value, dtype=d.np)
    return _finish(data, d, dev, requires_grad)


def _like(fn_name):
    def make(input, *, dtype=None, device=None, requires_grad=False, layout=None,
             memory_format=None, pin_memory=False):
        fn = globals()[fn_name]
        return fn(input._data.shape, dtype=dtype or input._dtype,
                  device=device if device is not None else input._device, requires_grad=requires_grad)
    make.__name__ = fn_name + "_like"
    return make


zeros_like = _like("zeros")
ones_like = _like("ones")
empty_like = _like("empty")


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
              memory_format=None):
    return full(input._data.shape, fill_value, dtype=dtype or input._dtype,
                device=device if device is not None else input._device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                  requires_grad=requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return zeros(_size(size), dtype=dtype or self._dtype, device=device or self._device,
                 requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return ones(_size(size), dtype=dtype or self._dtype, device=device or self._device,
                requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return empty(_size(size), dtype=dtype or self._dtype, device=device or self._device,
                 requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self._dtype, device=device or self._device,
                requires_grad=requires_grad)


def _num(x):
    return x.item() if isinstance(x, Tensor) else x


def arange(start=0, end=None, step=1, *, out=None, dtype=None, device=None, requires_grad=False,
           layout=None):
    if end is None:
        start, end = 0, start
    start, end, step = _num(start), _num(end), _num(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    for v in (start, end):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        is_float = builtins.any(isinstance(v, float) for v in (start, end, step))
        dtype = dt.get_default_dtype() if is_float else dt.int64
    n = builtins.max(0, math.ceil((end - start) / step))
    values = start + np.arange(n, dtype=np.float64 if dtype._kind >= 2 else np.int64) * step
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev, requires_grad)


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated ``torch.range``: like arange but includes ``end``."""
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    dtype = dtype or dt.get_default_dtype()
    values = start + np.arange(n, dtype=np.float64) * step
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev, requires_grad)


def linspace(start, end, steps, *, out=None, dtype=None, device=None, requires_grad=False,
             layout=None):
    start, end = _num(start), _num(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype or dt.get_default_dtype()
    if steps == 1:
        values = np.array([start], dtype=np.float64)
    else:
        # PyTorch fills the two halves from opposite ends so both endpoints are exact.
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        i = np.arange(steps, dtype=np.float64)
        half = steps // 2
        values = np.where(i < half, start + step * i, end - step * (steps - 1 - i))
    if dtype._kind <= 1:
        values = np.trunc(values)
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    lin = linspace(start, end, steps, dtype=dt.float64)
    dtype = dtype or dt.get_default_dtype()
    values = np.power(float(base), lin._data)
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, layout=None):
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n if n < 0 else m}")
    dtype = dtype or dt.get_default_dtype()
    dev = resolve_device(device)
    data = get_backend(dev).xp.eye(n, n if m is None else m, dtype=dtype.np)
    return _finish(data, dtype, dev, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return tensor(s, dtype=dtype or dt.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------
# dtype and device conversion
# ---------------------------------------------------------------------------------------------

class ToCopyBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.to(dtype=self.src_dtype, device=self.src_device)


def _parse_to(args, kwargs):
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    for a in args:
        if isinstance(a, dt.dtype):
            dtype = a
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
    if device is self._device and dtype is self._dtype and not copy:
        return self
    if device is self._device:
        data = self._data.astype(dtype.np, copy=True) if copy or dtype is not self._dtype else self._data
        out = _wrap(data, dtype, self)
    else:
        host = self._backend.to_numpy(self._data)
        backend = get_backend(device)
        data = backend.asarray(host, dtype.np, copy=True)
        out = _wrap_with(data, dtype, device, backend)
    if _grad_state.enabled and self._requires_grad and (dtype._kind >= 2):
        record(ToCopyBackward0, (self,), out, src_dtype=self._dtype, src_device=self._device)
    return out


def type_(self, dtype=None, non_blocking=False):
    if dtype is None:
        return "ember." + {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
                           "int32": "IntTensor", "bool": "BoolTensor", "float16": "HalfTensor",
                           "bfloat16": "BFloat16Tensor", "uint8": "ByteTensor", "int8": "CharTensor",
                           "int16": "ShortTensor"}.get(self._dtype.name, self._dtype.name)
    if isinstance(dtype, str):
        raise TypeError("type(str) is not supported; pass an ember dtype")
    return to(self, dtype)


def cpu(self, memory_format=None):
    return to(self, _CPU)


def cuda(self, device=None, non_blocking=False, memory_format=None):
    dev = _device_cls("cuda", device) if isinstance(device, int) or device is None else device
    return to(self, dev)


def _caster(d):
    def cast_method(self, memory_format=None):
        return to(self, d)
    return cast_method


# Tensor.float(), .double() …: attached as methods by ops/__init__, never exported as functions
# (the names belong to the dtypes in the ember namespace).
CAST_METHODS = {"float": dt.float32, "double": dt.float64, "half": dt.float16,
                "bfloat16": dt.bfloat16, "long": dt.int64, "int": dt.int32, "short": dt.int16,
                "char": dt.int8, "byte": dt.uint8, "bool": dt.bool}


# ---------------------------------------------------------------------------------------------
# random sampling
# ---------------------------------------------------------------------------------------------

def _float_sample(draw, shape, dtype, device, requires_grad, generator):
    dtype = dtype or dt.get_default_dtype()
    if dtype._kind < 2:
        raise RuntimeError(f"\"check_uniform_bounds\" not implemented for '{dtype.name}'")
    rng = numpy_generator(generator)
    work = np.float64 if dtype is dt.float64 else np.float32
    values = draw(rng, shape, work)
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np, copy=False), dev), dtype, dev, requires_grad)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    return _float_sample(lambda r, s, w: r.random(s, dtype=w), _size(size), dtype, device,
                         requires_grad, generator)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    return _float_sample(lambda r, s, w: r.standard_normal(s, dtype=w), _size(size), dtype, device,
                         requires_grad, generator)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False, layout=None):
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint() missing required arguments 'high' and 'size'")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dtype = dtype or dt.int64
    rng = numpy_generator(generator)
    values = rng.integers(low, high, size=_size((tuple(size),)), dtype=np.int64)
    dev = resolve_device(device)
    return _finish(_to_backend(values.astype(dtype.np), dev), dtype, dev, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, layout=None):
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    dtype = dtype or dt.int64
    values = numpy_generator(generator).permutation(n).astype(dtype.np)
    dev = resolve_device(device)
    return _finish(_to_backend(values, dev), dtype, dev, requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, **_):
    return rand(input._data.shape, dtype=dtype or input._dtype, device=device or input._device,
                requires_grad=requires_grad, generator=generator)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, **_):
    return randn(input._data.shape, dtype=dtype or input._dtype, device=device or input._device,
                 requires_grad=requires_grad, generator=generator)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False,
                 generator=None):
    if high is None:
        low, high = 0, low
    return randint(low, high, input._data.shape, dtype=dtype or input._dtype,
                   device=device or input._device, generator=generator)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False):
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        m = mean if isinstance(mean, Tensor) else ref.new_full((), mean)
        s = std if isinstance(std, Tensor) else ref.new_full((), std)
        if (s < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape = np.broadcast_shapes(m.shape, s.shape)
        z = randn(shape, dtype=ref._dtype, device=ref._device, generator=generator)
        return (m + s * z).detach()
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    z = randn(_size((tuple(size),)) if size is not None else (), dtype=dtype, device=device,
              generator=generator)
    out = z * std + mean
    out = out.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out


def bernoulli(input, p=None, *, generator=None):
    prob = input._data if p is None else p
    if p is None and bool(((input._data < 0) | (input._data > 1)).any()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    rng = numpy_generator(generator)
    draws = rng.random(input._data.shape)
    host = input._backend.to_numpy(prob) if p is None else prob
    values = (draws < np.asarray(host, dtype=np.float64)).astype(input._dtype.np)
    return _wrap(_to_backend(values, input._device), input._dtype, input)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    probs = np.asarray(input._backend.to_numpy(input.detach()._data), dtype=np.float64)
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if (probs < 0).any() or not np.isfinite(probs).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = probs.reshape(-1, probs.shape[-1])
    if not replacement and num_samples > rows.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rng = numpy_generator(generator)
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for i, row in enumerate(rows):
        total = row.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and np.count_nonzero(row) < num_samples:
            raise RuntimeError("invalid multinomial distribution (with replacement=False, not "
                               "enough non-negative category to sample)")
        out[i] = rng.choice(row.shape[0], size=num_samples, replace=replacement, p=row / total)
    out = out.reshape(probs.shape[:-1] + (num_samples,))
    return _wrap(_to_backend(out, input._device), dt.int64, input)


def poisson(input, generator=None):
    rng = numpy_generator(generator)
    values = rng.poisson(input._backend.to_numpy(input._data)).astype(input._dtype.np)
    return _wrap(_to_backend(values, input._device), input._dtype, input)


# in-place samplers (nn.init uses these under no_grad)

def _fill_random(self, values):
    from .inplace import check_inplace
    check_inplace(self)
    self._data[...] = _to_backend(values.astype(self._dtype.np, copy=False), self._device)
    self._bump_version()
    return self


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    from_ = kw.pop("a", kw.pop("from", from_))
    rng = numpy_generator(generator)
    return _fill_random(self, rng.random(self._data.shape) * (to - from_) + from_)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    rng = numpy_generator(generator)
    return _fill_random(self, rng.standard_normal(self._data.shape) * std + mean)


def bernoulli_(self, p=0.5, *, generator=None):
    rng = numpy_generator(generator)
    pv = p._backend.to_numpy(p._data) if isinstance(p, Tensor) else p
    return _fill_random(self, rng.random(self._data.shape) < pv)


def exponential_(self, lambd=1.0, *, generator=None):
    rng = numpy_generator(generator)
    return _fill_random(self, rng.exponential(1.0 / lambd, self._data.shape))


def random_(self, from_=0, to=None, *, generator=None):
    rng = numpy_generator(generator)
    if to is None:
        from_, to = 0, from_ if from_ else 2 ** min(self._dtype.itemsize * 8 - 1, 53)
    return _fill_random(self, rng.integers(from_, to, self._data.shape))


def geometric_(self, p, *, generator=None):
    rng = numpy_generator(generator)
    return _fill_random(self, rng.geometric(p, self._data.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    rng = numpy_generator(generator)
    return _fill_random(self, rng.lognormal(mean, std, self._data.shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    rng = numpy_generator(generator)
    return _fill_random(self, median + sigma * rng.standard_cauchy(self._data.shape))
