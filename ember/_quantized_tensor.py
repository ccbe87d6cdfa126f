"""Quantized tensors: ``Tensor`` objects of dtype ``qint8``, ``quint8`` or ``qint32``.

A quantized tensor is an ``ember.Tensor`` (isinstance holds) whose ``_data`` is a
``QuantizedData`` record around its integer representation instead of a bare array, as a sparse
tensor's is a ``SparseData``: ``Tensor``'s shape methods read the record alike, and an op that
has no quantized kernel fails where it first touches the array, with torch's
NotImplementedError naming the op and the ``QuantizedCPU`` backend. So the dense ops carry no
check of their own. The quantization parameters live in the instance dict: ``_qscheme`` and
``_scale``/``_zero_point`` (per tensor) or ``_scales``/``_zero_points``/``_axis`` (per channel,
float64 and int64 arrays as torch returns them).

The shape ops torch runs on quantized tensors (views, ``contiguous``, ``clone``, indexing) run
the ordinary op on the integer representation and keep the parameters; for a per-channel
tensor the same op on a tensor of channel ids says where the channel axis went and which
channels are left. The maths (quantize, dequantize, the int8 kernels) is ``ember.ops.quantized``.
"""
import sys

import numpy as np

from . import _dtype as dt
from . import _qscheme as qs
from ._tensor import Tensor, _new, _wrap_with

__all__ = ["QuantizedTensor", "QuantizedData", "QuantizedOpError", "wrap_quantized"]


_GENERIC_FRAMES = {"op", "method", "wrapper", "inner", "_apply", "<lambda>", "<listcomp>",
                   "<genexpr>", "_raise"}


_OP_MODULES = ("ember.ops.", "ember.nn.functional", "ember._functional_exports", "ember.linalg",
               "ember.fft", "ember.special")


class QuantizedOpError(NotImplementedError):
    """An op without a quantized kernel was given a quantized tensor. A NotImplementedError, as
    torch raises; its own class so that an op can catch it (a ``try`` costs the float path
    nothing) and hand the tensor to its quantized form."""


# The ATen operator torch's message names where it is not the op's own name: structured ops
# fail at their ``.out`` kernel, some composites at the op they decompose to.
_ATEN_NAMES = {
    "elu": "elu.out", "celu": "elu.out", "silu": "silu.out", "add": "add.out", "mul": "mul.out",
    "multiply": "mul.out", "sub": "sub.out", "subtract": "sub.out", "div": "div.out",
    "true_divide": "div.out", "sum": "sum.IntList_out", "argmax": "argmax.out",
    "argmin": "argmin.out", "neg": "neg.out", "negative": "neg.out", "abs": "abs.out",
    "absolute": "abs.out", "exp": "exp.out", "log": "log.out", "sqrt": "sqrt.out",
    "rsqrt": "rsqrt.out", "sin": "sin.out", "cos": "cos.out", "softmax": "_softmax.out",
    "log_softmax": "_log_softmax.out", "gather": "gather.out", "tril": "tril.out",
    "triu": "triu.out", "var": "var.correction", "cumsum": "cumsum.out",
    "adaptive_max_pool2d": "adaptive_max_pool2d.out",
    "adaptive_max_pool1d": "adaptive_max_pool2d.out", "mish": "mish.out",
    "softplus": "softplus.out", "erf": "erf.out", "pow": "pow.Tensor_Scalar_out",
}


def _unsupported(device_type, fallback=None):
    # the op's name: the outermost function of Ember's op modules up the stack (the one the
    # caller called), else the NumPy function that touched the integers
    name = None
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code.co_name
        if (frame.f_globals.get("__name__", "").startswith(_OP_MODULES)
                and code not in _GENERIC_FRAMES and not code.startswith("_")):
            name = code
        frame = frame.f_back
    name = name or fallback or "unknown"
    return QuantizedOpError(
        f"Could not run 'aten::{_ATEN_NAMES.get(name, name)}' with arguments from the "
        f"'{_backend_label(device_type)}' backend. {_quantized_alternative(name)}")


def _backend_label(device_type):
    return "QuantizedCPU" if device_type == "cpu" else f"Quantized{device_type.upper()}"


def quantized_functional():
    """``ember.ao.nn.quantized.functional``, imported on first use (it imports ``ember.nn``,
    which imports this module): the kernels a quantized input to a float function runs."""
    from .ao.nn.quantized import functional
    return functional


def _quantized_alternative(name):
    # Ember's quantized kernels are bound as tensor methods and in ember.ao.nn.quantized's
    # functional, not behind every ember.X: name the one that exists.
    qF = quantized_functional()
    where = []
    if name in QuantizedTensor.__dict__:
        where.append(f"the tensor method .{name}()")
    if callable(getattr(qF, name, None)):
        where.append(f"ember.ao.nn.quantized.functional.{name}")
    if where:
        return f"Ember's quantized kernel for it is {' or '.join(where)}."
    return ("Ember has no quantized kernel for this operator: call .dequantize() to compute in "
            "floating point, or use the quantized modules and functions of ember.ao.nn.quantized")


class QuantizedData:
    """What a quantized tensor holds where a dense one holds its array: the integer array, with
    the metadata ``Tensor``'s shape methods read. Array operations on it raise, naming the op."""
    __slots__ = ("array", "device_type")

    def __init__(self, array, device_type="cpu"):
        self.array = array
        self.device_type = device_type

    shape = property(lambda self: self.array.shape)
    ndim = property(lambda self: self.array.ndim)
    size = property(lambda self: self.array.size)
    strides = property(lambda self: self.array.strides)
    dtype = property(lambda self: self.array.dtype)
    nbytes = property(lambda self: self.array.nbytes)
    itemsize = property(lambda self: self.array.itemsize)

    def __array__(self, dtype=None, copy=None):
        raise _unsupported(self.device_type)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise _unsupported(self.device_type, ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        raise _unsupported(self.device_type, func.__name__)

    def __getattr__(self, name):
        if hasattr(np.ndarray, name):
            raise _unsupported(self.device_type)
        raise AttributeError(f"'QuantizedData' object has no attribute '{name}'")

    def _raise(self, *args, **kwargs):
        raise _unsupported(self.device_type)


# Python's operators on the record (``a._data + b._data`` in an op) raise as NumPy's functions do.
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift"):
    setattr(QuantizedData, f"__{_name}__", QuantizedData._raise)
    setattr(QuantizedData, f"__r{_name}__", QuantizedData._raise)
for _name in ("lt", "le", "gt", "ge", "neg", "pos", "abs", "invert", "getitem", "setitem",
              "float", "int", "index", "bool", "len", "iter"):
    setattr(QuantizedData, f"__{_name}__", QuantizedData._raise)
del _name


class QuantizedTensor(Tensor):
    """A tensor of a quantized dtype. ``type(q)`` is this subclass of ``ember.Tensor``."""

    @property
    def is_quantized(self):
        return True

    def _int_tensor(self):
        """The integer representation as a plain tensor sharing this tensor's memory."""
        return _wrap_with(self._data.array, dt.INT_REPR_DTYPE[self._dtype], self._device,
                          self._backend)

    def data_ptr(self):
        return self._backend.data_ptr(self._data.array)

    def storage_offset(self):
        base = self._base
        if base is None:
            return 0
        return (self.data_ptr() - base.data_ptr()) // self._dtype.itemsize

    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import quantized_repr
        return quantized_repr(self)

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild_quantized, (self._backend.to_numpy(self._data.array).copy(),
                                     self._dtype.name, str(self._device), _qparams(self)))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = self.clone()
        return memo[id(self)]

    def __copy__(self):
        return self.detach()

    def item(self):
        return self.dequantize().item()

    def _python_number(self):  # float(q), int(q): of the value it stands for
        return self.dequantize()._python_number()

    def numpy(self, *, force=False):
        raise TypeError(f"Got unsupported ScalarType {dt.SCALAR_TYPE_NAMES[self._dtype.name]}")

    __array__ = numpy

    def tolist(self):
        raise RuntimeError("tolist() of a quantized tensor: call .dequantize().tolist() or "
                           ".int_repr().tolist()")

    def requires_grad_(self, requires_grad=True):
        if requires_grad:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        return self

    def to(self, *args, non_blocking=False, copy=False, memory_format=None, **kwargs):
        from .ops.creation import _parse_to, resolve_device
        device, dtype = _parse_to(args, kwargs)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        device = resolve_device(device) if device is not None else None
        if dtype is not None and dtype is not self._dtype:
            raise RuntimeError(
                "Creation of quantized tensor requires quantized dtype like ember.quint8: a "
                f"{self._dtype} tensor converts to {dtype} by .dequantize() (or .int_repr())")
        if device is None or device == self._device:
            return self.clone() if copy else self
        moved = self._int_tensor().to(device)
        return wrap_quantized(moved._data, self._dtype, moved, _qparams(self))

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def equal(self, other):
        """True when both tensors have the same quantizer and the same integers."""
        if not isinstance(other, QuantizedTensor):
            raise RuntimeError("Quantized tensors can only be compared with quantized tensors")
        return (self._dtype is other._dtype and self.shape == other.shape
                and _same_qparams(self, other)
                and bool((self._data.array == other._data.array).all()))

    def __setitem__(self, key, value):
        raise _unsupported(self._device.type)


def _refused_inplace(name, aten):
    def method(self, *args, **kwargs):
        raise QuantizedOpError(
            f"Could not run 'aten::{aten}' with arguments from the "
            f"'{_backend_label(self._device.type)}' backend. "
            f"torch has no quantized kernel for {name}(): call .dequantize() to compute in "
            "floating point")
    method.__name__ = name
    return method


# In-place ops torch refuses on quantized tensors, by the kernel its message names (Tensor's
# generic in-place machinery would name itself instead).
for _name, _aten in {"clamp_": "clamp.out", "clip_": "clamp.out", "clamp_min_": "clamp_min.out",
                     "clamp_max_": "clamp_max.out", "sigmoid_": "sigmoid.out",
                     "tanh_": "tanh.out", "exp_": "exp.out", "neg_": "neg.out",
                     "abs_": "abs.out", "sqrt_": "sqrt.out", "add_": "add.out",
                     "mul_": "mul.out", "sub_": "sub.out", "div_": "div.out",
                     "zero_": "zero_"}.items():
    setattr(QuantizedTensor, _name, _refused_inplace(_name, _aten))
del _name, _aten


def _qparams(t):
    if t._qscheme in (qs.per_tensor_affine, qs.per_tensor_symmetric):
        return (t._qscheme, t._scale, t._zero_point)
    return (t._qscheme, t._scales, t._zero_points, t._axis)


def _same_qparams(a, b):
    pa, pb = _qparams(a), _qparams(b)
    if pa[0] is not pb[0]:
        return False
    if len(pa) == 3:
        return pa[1] == pb[1] and pa[2] == pb[2]
    return (pa[3] == pb[3] and np.array_equal(pa[1], pb[1]) and np.array_equal(pa[2], pb[2]))


def wrap_quantized(array, dtype, like, qparams):
    """A quantized tensor on ``like``'s device around the integer ``array``; ``qparams`` is
    ``(qscheme, scale, zero_point)`` or ``(qscheme, scales, zero_points, axis)``."""
    t = _new(QuantizedTensor)
    t._data = QuantizedData(array, like._device.type)
    t._dtype = dtype
    t._device = like._device
    t._backend = like._backend
    t._requires_grad = False
    t.grad_fn = None
    t._qscheme = qparams[0]
    if len(qparams) == 3:
        t._scale, t._zero_point = float(qparams[1]), int(qparams[2])
    else:
        t._scales, t._zero_points, t._axis = qparams[1], qparams[2], int(qparams[3])
    return t


def _rebuild_quantized(array, dtype_name, device_str, qparams):
    from ._device import device as _device_cls
    from .backends import get_backend
    dtype = dt._BY_NAME[dtype_name]
    dev = _device_cls(device_str)
    backend = get_backend(dev)
    like = _wrap_with(backend.asarray(array, dtype.np), dtype, dev, backend)
    return wrap_quantized(like._data, dtype, like, qparams)


# ---- shape ops: the ordinary op on the integers, the quantizer carried over ------------------
# view -> reshape on the channel ids: they are a fresh contiguous array, so any view of the
# integers (whatever their strides) is a reshape of the ids.
_ON_IDS = {"view": "reshape", "view_as": "reshape_as"}


def _channel_ids(t):
    xp = t._backend.xp
    shape = [1] * t.ndim
    shape[t._axis] = t.shape[t._axis]
    ids = xp.broadcast_to(xp.arange(t.shape[t._axis], dtype=xp.int64).reshape(shape), t.shape)
    return _wrap_with(xp.ascontiguousarray(ids), dt.int64, t._device, t._backend)


def _new_channel_axis(src, ids):
    """Where the channels went: the one dim of ``ids`` along which the channel id varies (it
    is constant along every other dim), and the channels in order along it."""
    arr = ids._data
    if arr.ndim == 0:
        return None
    candidates = []
    for d in range(arr.ndim):
        line = arr[tuple(slice(None) if k == d else slice(0, 1) for k in range(arr.ndim))]
        if (arr == line).all():
            candidates.append((d, line.reshape(-1)))
    if not candidates:
        raise RuntimeError(
            f"this shape change mixes the channels of a per-channel quantized tensor (channel "
            f"axis {src._axis} of size {src.shape[src._axis]}): the result has no single "
            "channel axis. Dequantize first, or keep the channel dim whole")
    varying = [c for c in candidates if arr.shape[c[0]] > 1]
    return (varying or candidates)[0]


def _rewrap(src, out, ids):
    if src._qscheme in (qs.per_tensor_affine, qs.per_tensor_symmetric):
        q = wrap_quantized(out._data, src._dtype, out, _qparams(src))
    else:
        found = _new_channel_axis(src, ids)
        single = found is None or (src.shape[src._axis] > 1 and found[1].size > 0
                                   and bool((ids._data == ids._data.flat[0]).all()))
        if single and ids._data.size:  # one channel picked out: its qparams, per tensor
            channel = int(ids._data.flat[0])
            q = wrap_quantized(out._data, src._dtype, out,
                               (qs.per_tensor_affine, src._scales[channel],
                                src._zero_points[channel]))
        else:
            axis, channels = found
            channels = src._backend.to_numpy(channels)
            q = wrap_quantized(out._data, src._dtype, out,
                               (src._qscheme, src._scales[channels], src._zero_points[channels],
                                axis))
    if out._base is not None:  # a view: of the root quantized tensor
        q._base = src._base if src._base is not None else src
    return q


def _shape_method(name):
    ids_name = _ON_IDS.get(name, name)

    def method(self, *args, **kwargs):
        # Tensor's op looked up at the call: ember.ops binds (and re-binds) them at import
        out = getattr(Tensor, name)(self._int_tensor(), *args, **kwargs)
        per_channel = self._qscheme not in (qs.per_tensor_affine, qs.per_tensor_symmetric)
        ids = None
        if per_channel:
            ids = getattr(Tensor, ids_name)(_channel_ids(self), *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return type(out)(_rewrap(self, o, i) for o, i in
                             zip(out, ids if per_channel else [None] * len(out)))
        return _rewrap(self, out, ids)
    method.__name__ = name
    method.__qualname__ = f"QuantizedTensor.{name}"
    method.__doc__ = f"``Tensor.{name}`` on the integer representation; keeps the quantizer."
    return method


# Bound by ember/ops/quantized.py on import.
SHAPE_METHODS = ("view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t",
                 "contiguous", "clone", "select", "__getitem__", "squeeze", "unsqueeze",
                 "flatten", "narrow", "chunk", "split", "unbind", "expand", "expand_as", "detach",
                 "movedim", "swapaxes", "swapdims", "unflatten", "tensor_split", "hsplit",
                 "vsplit", "dsplit")


def bind_shape_methods():
    for name in SHAPE_METHODS:
        setattr(QuantizedTensor, name, _shape_method(name))
