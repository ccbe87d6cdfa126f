"""Registry-backed devices: a backend built from the operator registry, with a CPU fallback.

A vendor's device supplies two transfers (``upload``: a flat host array to a device buffer, its
"payload"; ``download``: back) and kernels in the registry (``_registry.PRIMITIVES``). This
module turns that into a whole Ember backend, so ops keep calling ``t._backend.xp.*`` and the
CPU/CUDA path is untouched:

* ``DeviceArray`` is the device's array: a storage (the payload, plus a host copy when one is
  current), an element offset, shape, byte strides and dtype, as NumPy's arrays are. Views
  (``reshape``, ``transpose``, slicing, ``broadcast_to``, the windows of convolution) are
  metadata only: NumPy computes them on a "phantom" array (one element, strided to look like
  the real one, never read), and the result's pointer and strides become the view's offset and
  strides. Views share the storage, so in-place writes through them are seen by the base.
* ``RegistryNamespace`` is its ``xp``: each NumPy name Ember's ops call resolves once to either
  an adapter that normalises the arguments onto a primitive's calling convention (compact,
  one dtype, reduced axes last...) and calls the device's kernel, or, for a name or an argument
  form no kernel covers, the **fallback**: the arrays' host copies are brought up to date
  (downloaded where the device holds the newer data), NumPy runs the call, and the results are
  new storages whose device copy is made when a kernel first needs it (copy in, run, copy back,
  lazily). Arguments the call writes (``out=``, ``copyto``'s destination, ``ufunc.at``'s
  target, ``__setitem__``) get their device copy marked stale.

Each fallback warns once per operator (``_registry.enter_fallback``) and raises in strict mode;
``ember.library.fallback_report()`` counts the calls and the time of each kernel and each
fallback, and the bytes moved.
"""
import functools
import math
import operator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..backends.base import Backend
from . import _registry as reg

__all__ = ["RegistryBackend", "DeviceArray", "RegistryNamespace"]

_perf = reg.perf_counter
_SCALARS = (int, float, bool)
_LOW_PRECISION = frozenset(np.dtype(n) for n in ("float16",)) | frozenset(
    [np.dtype(__import__("ml_dtypes").bfloat16)])
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


class _NoKernel(Exception):
    """A kernel a device path needs is not registered: the caller falls back."""


# ---- storage and arrays ---------------------------------------------------------------------

_NEXT_ADDRESS = [1 << 32]


class _Storage:
    """One allocation: the device payload and/or a host copy, whichever are current (at least
    one is). ``address`` is a made-up, unique address space so ``data_ptr`` answers as for
    memory (storage offsets, aliasing tests)."""
    __slots__ = ("backend", "dtype", "numel", "payload", "host", "address", "__weakref__")

    def __init__(self, backend, dtype, numel, payload=None, host=None):
        self.backend = backend
        self.dtype = dtype
        self.numel = numel
        self.payload = payload
        self.host = host
        self.address = _NEXT_ADDRESS[0]
        _NEXT_ADDRESS[0] += (numel * dtype.itemsize // 4096 + 2) * 4096


def _c_strides(shape, itemsize):
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


_DUMMIES = {}


def _phantom(arr):
    """A NumPy array with ``arr``'s shape, strides and dtype over one element: view functions
    compute on it without ever reading memory."""
    dummy = _DUMMIES.get(arr.dtype)
    if dummy is None:
        dummy = _DUMMIES[arr.dtype] = np.zeros(1, arr.dtype)
    return as_strided(dummy, arr.shape, arr.strides)


def _address(a):
    return a.__array_interface__["data"][0]


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata", "writeable")

    def __init__(self, arr):
        self.c_contiguous = arr._c_contiguous()
        self.f_contiguous = bool(_phantom(arr).flags.f_contiguous)
        self.owndata = arr._offset == 0 and arr.size == arr._storage.numel
        self.writeable = True

    def __getitem__(self, key):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous",
                              "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous",
                              "OWNDATA": "owndata", "WRITEABLE": "writeable"}[key])


class DeviceArray:
    """An array on a registry-backed device (see the module docstring). Kernels read
    ``payload`` (the vendor's buffer holding the whole storage), ``offset`` (in elements),
    ``shape``, ``strides`` (bytes, as NumPy), ``elem_strides`` and ``dtype``."""

    __slots__ = ("_storage", "_offset", "shape", "strides", "dtype")
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, storage, offset, shape, strides, dtype):
        self._storage = storage
        self._offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype

    # -- what kernels read ---------------------------------------------------------------------
    @property
    def payload(self):
        return self._storage.backend._payload(self._storage)

    @property
    def offset(self):
        return self._offset

    @property
    def elem_strides(self):
        size = self.dtype.itemsize
        return tuple(s // size for s in self.strides)

    @property
    def backend(self):
        return self._storage.backend

    def _c_contiguous(self):
        if self.size <= 1:
            return True
        return all(s == c for s, c, n in zip(self.strides, _c_strides(self.shape, self.dtype.itemsize),
                                             self.shape) if n != 1)

    @property
    def is_compact(self):
        """C-contiguous, at offset 0 and spanning its whole storage: ``payload`` is exactly
        this array's elements in order."""
        storage = self._storage
        return (self._offset == 0 and self.nbytes == storage.numel * storage.dtype.itemsize
                and self._c_contiguous())

    # -- NumPy's attributes --------------------------------------------------------------------
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    flags = property(lambda self: _Flags(self))
    device = property(lambda self: f"{self._storage.backend.device_type}:"
                                   f"{self._storage.backend.index}")
    T = property(lambda self: self._ns.transpose(self))
    mT = property(lambda self: self._ns.swapaxes(self, -1, -2))

    @property
    def _ns(self):
        return self._storage.backend.xp

    @property
    def base(self):
        return None if self.is_compact else DeviceArray(
            self._storage, 0, (self._storage.numel,), (self.dtype.itemsize,), self.dtype)

    @property
    def real(self):
        if self.dtype.kind == "c":
            return self._ns.real(self)
        return self

    @real.setter
    def real(self, value):
        self._storage.backend._assign(self.real, value)

    @property
    def imag(self):
        return self._ns.imag(self)

    @imag.setter
    def imag(self, value):
        self._storage.backend._assign(self.imag, value)

    # -- host reads (a transfer, not a fallback) -----------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        host = np.array(self.backend._host_view(self), order=order)
        if out is not None:
            out[...] = host
            return out
        return host

    def __array__(self, dtype=None, copy=None):
        host = self.backend._host_view(self)
        return np.array(host, dtype=dtype, copy=True)

    def item(self, *args):
        return self.backend._host_view(self).item(*args)

    def tolist(self):
        return self.backend._host_view(self).tolist()

    def __float__(self):
        return float(self.backend._host_view(self))

    def __int__(self):
        return int(self.backend._host_view(self))

    def __index__(self):
        return operator.index(self.backend._host_view(self)[()])

    def __bool__(self):
        return bool(self.backend._host_view(self))

    def __complex__(self):
        return complex(self.backend._host_view(self))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return (f"DeviceArray({np.array2string(self.backend._host_view(self), separator=', ')}, "
                f"dtype={self.dtype}, device='{self.device}')")

    __str__ = __repr__

    def __copy__(self):
        return self._ns.copy(self)

    def __deepcopy__(self, memo):
        return self._ns.copy(self)

    # -- indexing ------------------------------------------------------------------------------
    def __getitem__(self, key):
        return self._storage.backend._getitem(self, key)

    def __setitem__(self, key, value):
        self._storage.backend._setitem(self, key, value)

    # -- methods -------------------------------------------------------------------------------
    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return self._ns.reshape(self, shape, order=order, copy=copy)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return self._ns.transpose(self, axes or None)

    def view(self, dtype=None, type=None):  # noqa: A002  (NumPy's keyword)
        new = self.dtype if dtype is None else np.dtype(dtype)
        if type is not None or new.itemsize != self.dtype.itemsize:
            return self._storage.backend._method(self, "view", (dtype,) if type is None else
                                                 (dtype, type), {})
        # the same bytes read as another dtype of the same size (bool as int8...)
        return DeviceArray(self._storage, self._offset, self.shape, self.strides, new)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return self._ns.astype(self, dtype, copy=copy)

    def copy(self, order="C"):
        return self._ns.copy(self)

    def fill(self, value):
        self._storage.backend._assign(self, value)

    def __getattr__(self, name):
        if name.startswith("__") or not hasattr(np.ndarray, name):
            raise AttributeError(f"'DeviceArray' object has no attribute '{name}'")
        backend = self._storage.backend
        if name in _NAMESPACE_METHODS:
            return functools.partial(getattr(backend.xp, _NAMESPACE_METHODS[name]), self)
        return functools.partial(backend._method, self, name)

    # -- NumPy's protocols: answered by the device's namespace ---------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        proxy = getattr(self._storage.backend.xp, ufunc.__name__)
        return proxy(*inputs, **kwargs) if method == "__call__" else \
            getattr(proxy, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        module = func.__module__ or "numpy"
        namespace = self._storage.backend.xp
        for part in module.split(".")[1:]:
            if part.startswith("_"):
                break
            namespace = getattr(namespace, part)
        return getattr(namespace, func.__name__)(*args, **kwargs)


# ndarray methods that are the namespace function of the same meaning with self first
_NAMESPACE_METHODS = {name: name for name in (
    "sum", "mean", "prod", "argmax", "argmin", "any", "all", "var", "std", "cumsum", "cumprod",
    "clip", "round", "nonzero", "take", "repeat", "squeeze", "swapaxes", "diagonal", "trace",
    "dot", "conj", "conjugate", "argsort", "searchsorted", "ravel", "flatten", "compress",
    "ptp", "choose", "argpartition")}
_NAMESPACE_METHODS.update({"max": "amax", "min": "amin", "flatten": "copy_ravel"})

# ndarray methods that write into the array itself
_MUTATING_METHODS = frozenset({"fill", "sort", "partition", "put", "itemset", "resize",
                               "setfield", "byteswap", "setflags"})
# NumPy functions that write into an argument (by position)
_MUTATING_FUNCTIONS = {"copyto": 0, "put": 0, "place": 0, "putmask": 0, "fill_diagonal": 0,
                       "put_along_axis": 0}


def _binary_dunder(ufunc, reflected=False):
    def method(self, other):
        if not isinstance(other, (DeviceArray, np.ndarray, np.generic) + _SCALARS + (complex,)):
            return NotImplemented
        proxy = getattr(self._storage.backend.xp, ufunc)
        return proxy(other, self) if reflected else proxy(self, other)
    return method


def _inplace_dunder(ufunc):
    def method(self, other):
        getattr(self._storage.backend.xp, ufunc)(self, other, out=self)
        return self
    return method


def _unary_dunder(ufunc):
    def method(self):
        return getattr(self._storage.backend.xp, ufunc)(self)
    return method


for _short, _ufunc in {"add": "add", "sub": "subtract", "mul": "multiply",
                       "truediv": "true_divide", "floordiv": "floor_divide", "mod": "remainder",
                       "pow": "power", "matmul": "matmul", "and": "bitwise_and",
                       "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
                       "rshift": "right_shift"}.items():
    setattr(DeviceArray, f"__{_short}__", _binary_dunder(_ufunc))
    setattr(DeviceArray, f"__r{_short}__", _binary_dunder(_ufunc, reflected=True))
    if _short != "matmul":
        setattr(DeviceArray, f"__i{_short}__", _inplace_dunder(_ufunc))
for _short, _ufunc in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                       "eq": "equal", "ne": "not_equal"}.items():
    setattr(DeviceArray, f"__{_short}__", _binary_dunder(_ufunc))
for _short, _ufunc in {"neg": "negative", "pos": "positive", "abs": "absolute",
                       "invert": "invert"}.items():
    setattr(DeviceArray, f"__{_short}__", _unary_dunder(_ufunc))
del _short, _ufunc


def _is_basic_key(key):
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if not (k is None or k is Ellipsis or type(k) is slice or
                (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))):
            return False
    return True


# ---- the namespace: NumPy names mapped onto kernels -----------------------------------------

# NumPy name -> (ATen name, kind)
_UNARY = {"negative": "aten::neg", "absolute": "aten::abs", "abs": "aten::abs",
          "exp": "aten::exp", "log": "aten::log", "sqrt": "aten::sqrt", "tanh": "aten::tanh",
          "sin": "aten::sin", "cos": "aten::cos", "sign": "aten::sign", "floor": "aten::floor",
          "ceil": "aten::ceil", "log1p": "aten::log1p", "expm1": "aten::expm1",
          "reciprocal": "aten::reciprocal"}
_BINARY = {"add": "aten::add.Tensor", "subtract": "aten::sub.Tensor",
           "multiply": "aten::mul.Tensor", "true_divide": "aten::div.Tensor",
           "divide": "aten::div.Tensor", "power": "aten::pow.Tensor_Tensor",
           "maximum": "aten::maximum", "minimum": "aten::minimum", "equal": "aten::eq.Tensor",
           "not_equal": "aten::ne.Tensor", "less": "aten::lt.Tensor",
           "less_equal": "aten::le.Tensor", "greater": "aten::gt.Tensor",
           "greater_equal": "aten::ge.Tensor", "logical_and": "aten::logical_and",
           "logical_or": "aten::logical_or", "bitwise_and": "aten::bitwise_and.Tensor",
           "bitwise_or": "aten::bitwise_or.Tensor"}
_COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater",
                          "greater_equal"})
_REDUCTIONS = {"sum": "aten::sum.dim_IntList", "amax": "aten::amax", "max": "aten::amax",
               "amin": "aten::amin", "min": "aten::amin", "argmax": "aten::argmax"}
# The ATen names of what falls back, where there is one (the report names ops by them).
_ATEN_NAMES = {
    "mean": "aten::mean.dim", "var": "aten::var.correction", "std": "aten::std.correction",
    "prod": "aten::prod.dim_int", "any": "aten::any.dims", "all": "aten::all.dims",
    "argmin": "aten::argmin", "concatenate": "aten::cat", "concat": "aten::cat",
    "stack": "aten::stack", "take_along_axis": "aten::gather", "take": "aten::take",
    "pad": "aten::constant_pad_nd", "arange": "aten::arange", "linspace": "aten::linspace",
    "eye": "aten::eye", "cumsum": "aten::cumsum", "cumprod": "aten::cumprod",
    "sort": "aten::sort", "argsort": "aten::sort", "clip": "aten::clamp", "einsum": "aten::einsum",
    "floor_divide": "aten::floor_divide", "remainder": "aten::remainder",
    "fmod": "aten::fmod", "isnan": "aten::isnan", "isinf": "aten::isinf",
    "isfinite": "aten::isfinite", "logical_not": "aten::logical_not",
    "bitwise_xor": "aten::bitwise_xor.Tensor", "invert": "aten::bitwise_not",
    "nonzero": "aten::nonzero", "repeat": "aten::repeat_interleave.self_int",
    "tile": "aten::repeat", "flip": "aten::flip", "roll": "aten::roll", "tril": "aten::tril",
    "triu": "aten::triu", "log2": "aten::log2", "log10": "aten::log10", "square": "aten::square",
    "logaddexp": "aten::logaddexp", "copyto": "aten::copy_", "put_along_axis": "aten::scatter",
    "dot": "aten::dot", "tensordot": "aten::tensordot", "outer": "aten::outer",
    "round": "aten::round", "rint": "aten::round", "trunc": "aten::trunc",
    "sinh": "aten::sinh", "cosh": "aten::cosh", "tan": "aten::tan", "arctan": "aten::atan",
    "arcsin": "aten::asin", "arccos": "aten::acos", "arctanh": "aten::atanh",
    "arctan2": "aten::atan2", "hypot": "aten::hypot", "signbit": "aten::signbit",
    "unique": "aten::unique", "searchsorted": "aten::searchsorted", "diff": "aten::diff",
    "count_nonzero": "aten::count_nonzero", "ptp": "aten::amax/amin",
    "logical_xor": "aten::logical_xor", "fmax": "aten::fmax", "fmin": "aten::fmin",
    "copysign": "aten::copysign", "nan_to_num": "aten::nan_to_num", "positive": "aten::positive",
    "float_power": "aten::float_power", "exp2": "aten::exp2", "log2": "aten::log2",
}
# Functions that compute on metadata (shapes, dtypes): arrays go in as phantoms, never copied.
_METADATA = frozenset({"result_type", "promote_types", "can_cast", "min_scalar_type", "shape",
                       "ndim", "size", "broadcast_shapes", "iscomplexobj", "isrealobj",
                       "issubdtype", "isscalar", "common_type", "may_share_memory",
                       "shares_memory", "dtype", "finfo", "iinfo", "errstate", "geterr",
                       "seterr", "printoptions", "get_printoptions", "set_printoptions",
                       "broadcast", "ndindex", "ndenumerate", "obj2sctype", "isdtype"})
# View functions: computed on the phantom (``_view``).
_VIEWS = frozenset({"transpose", "permute_dims", "swapaxes", "moveaxis", "rollaxis",
                    "expand_dims", "squeeze", "broadcast_to", "atleast_1d", "atleast_2d",
                    "atleast_3d", "diagonal", "flip", "fliplr", "flipud", "matrix_transpose"})
# Creation functions: new arrays from a shape and a fill
_FILLS = {"zeros": 0, "ones": 1, "empty": None, "full": "value"}


class _Ufunc:
    """``xp.<ufunc>``: callable, with NumPy's ufunc methods (which fall back to the CPU)."""

    def __init__(self, ns, name, call):
        self._ns = ns
        self._np = getattr(np, name)
        self.__name__ = name
        self._call = call

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, attr):
        value = getattr(self._np, attr)
        if attr in ("reduce", "accumulate", "reduceat", "outer", "at"):
            op = f"numpy.{self.__name__}.{attr}"
            written = (0,) if attr == "at" else ()
            backend = self._ns._backend
            return lambda *a, **k: backend._fallback(op, value, a, k, written)
        return value

    def __repr__(self):
        return f"<registry ufunc '{self.__name__}'>"


class RegistryNamespace:
    """The ``xp`` of a registry-backed device (see the module docstring)."""

    def __init__(self, backend, numpy_module=np, prefix=""):
        self._backend = backend
        self._np = numpy_module
        self._prefix = prefix
        self.ndarray = DeviceArray

    def __repr__(self):
        return f"<registry namespace of {self._backend.device_type}{self._prefix}>"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        b = self._backend
        if not self._prefix and hasattr(type(b), f"_xp_{name}"):
            value = getattr(b, f"_xp_{name}")
            setattr(self, name, value)
            return value
        target = getattr(self._np, name)  # AttributeError as NumPy's
        qual = f"{self._prefix}{name}"
        if type(target).__name__ == "module":
            value = RegistryNamespace(b, target, f"{qual}.")
        elif qual == "lib.stride_tricks.as_strided":
            value = functools.partial(b._view_function, target)
        elif self._prefix:
            value = b._fallback_function(qual, target)
        elif name in _UNARY:
            value = _Ufunc(self, name, functools.partial(b._unary, name, target))
        elif name in _BINARY:
            value = _Ufunc(self, name, functools.partial(b._binary, name, target))
        elif isinstance(target, np.ufunc):
            value = _Ufunc(self, name, b._fallback_function(name, target))
        elif name in _REDUCTIONS:
            value = functools.partial(b._reduce, name, target)
        elif name in _METADATA:
            value = b._metadata_function(target)
        elif name in _VIEWS:
            value = functools.partial(b._view_function, target)
        elif name in _FILLS:
            value = functools.partial(b._fill_function, name)
        elif name in _LIKE:
            value = functools.partial(b._like_function, name)
        elif callable(target) and not isinstance(target, type):
            value = b._fallback_function(name, target)
        else:
            value = target  # dtypes, constants (newaxis, pi, inf), classes
        setattr(self, name, value)
        return value


_LIKE = {"zeros_like": 0, "ones_like": 1, "empty_like": None, "full_like": "value"}


def _py_scalar(value, dtype):
    """``value`` as the Python number a kernel gets for the computation dtype ``dtype``."""
    try:
        return dtype.type(value).item()
    except (OverflowError, ValueError, TypeError):
        raise _NoKernel("scalar") from None  # NumPy's own rules (and errors) decide


@functools.lru_cache(maxsize=4096)
def _ufunc_dtypes(name, a, b):
    """(result dtype, computation dtype) of ufunc ``name`` on operands described by ``a``/``b``
    (a NumPy dtype for an array, a Python type for a Python scalar), as NumPy decides."""
    fn = getattr(np, name)
    sample = {int: 1, float: 1.0, bool: True}
    ops = [np.ones((), x) if isinstance(x, np.dtype) else sample[x] for x in (a, b)]
    out = fn(*ops).dtype
    if name in _COMPARISONS:
        return out, np.result_type(*(x if isinstance(x, np.dtype) else sample[x] for x in (a, b)))
    if name in ("logical_and", "logical_or"):
        return out, _BOOL
    return out, out


@functools.lru_cache(maxsize=1024)
def _unary_dtype(name, dtype):
    return getattr(np, name)(np.ones((), dtype)).dtype


@functools.lru_cache(maxsize=1024)
def _reduction_dtype(name, dtype, requested):
    if name in ("argmax",):
        return _I64
    if name in ("amax", "max", "amin", "min"):
        return dtype
    return np.sum(np.ones((1,), dtype), dtype=requested).dtype


class RegistryBackend(Backend):
    """A backend whose maths comes from the operator registry (module docstring).

    A subclass sets ``device_type`` (and ``supported_dtypes`` where the device lacks some) and
    implements ``upload``/``download``; its kernels are registered with
    ``ember.library.impl(name, device_type)``. Register the class as any backend:
    ``ember.backends.register_backend("mydev", MyBackend)``."""

    def __init__(self, index=0):
        super().__init__(index)
        self.xp = RegistryNamespace(self)

    # -- the vendor's contract -----------------------------------------------------------------
    def upload(self, host):
        """A device payload holding the flat, C-contiguous NumPy array ``host``."""
        raise NotImplementedError(f"{type(self).__name__}.upload")

    def download(self, payload, dtype, numel):
        """A flat NumPy array of ``numel`` elements of ``dtype`` with the payload's contents."""
        raise NotImplementedError(f"{type(self).__name__}.download")

    # -- storages ------------------------------------------------------------------------------
    def _host(self, storage):
        host = storage.host
        if host is None:
            start = _perf()
            host = self.download(storage.payload, storage.dtype, storage.numel)
            host = np.asarray(host, dtype=storage.dtype, order="C").reshape(-1)
            storage.host = host
            reg.count_transfer(self.device_type, "download", host.nbytes, _perf() - start)
        return host

    def _payload(self, storage):
        payload = storage.payload
        if payload is None:
            start = _perf()
            payload = storage.payload = self.upload(storage.host)
            reg.count_transfer(self.device_type, "upload", storage.host.nbytes, _perf() - start)
        return payload

    def _host_view(self, arr):
        host = self._host(arr._storage)
        if host.dtype != arr.dtype:
            # another dtype's view of the bytes (a complex array's .real, bool as int8): the
            # offset counts elements of the view's own dtype
            return np.ndarray(arr.shape, arr.dtype, buffer=host,
                              offset=arr._offset * arr.dtype.itemsize, strides=arr.strides)
        return as_strided(host[arr._offset:], arr.shape, arr.strides)

    def _new(self, payload, shape, dtype):
        """A compact array over a kernel's result."""
        shape = tuple(shape)
        storage = _Storage(self, dtype, math.prod(shape), payload=payload)
        return DeviceArray(storage, 0, shape, _c_strides(shape, dtype.itemsize), dtype)

    def _from_numpy(self, host, copy=True):
        """A device array whose storage is a host copy of ``host`` (uploaded on first use);
        without ``copy``, ``host`` itself where it is C-contiguous (a fallback's own result)."""
        host = np.array(host, copy=True, order="C") if copy else np.asarray(host, order="C")
        storage = _Storage(self, host.dtype, host.size, host=host.reshape(-1))
        return DeviceArray(storage, 0, host.shape, _c_strides(host.shape, host.itemsize),
                           host.dtype)

    # -- the fallback --------------------------------------------------------------------------
    def _to_host(self, x, storages):
        t = type(x)
        if t is DeviceArray:
            storages.append(x._storage)
            return self._host_view(x)
        if t is list or t is tuple:
            return t(self._to_host(v, storages) for v in x)
        return x

    def _from_host(self, result, storages):
        t = type(result)
        if t is np.ndarray:
            if result.size:
                address = _address(result)
                for storage in storages:
                    host = storage.host
                    low = _address(host)
                    if low <= address < low + host.nbytes and \
                            (address - low) % result.itemsize == 0:
                        # the offset counts elements of the view's own dtype (a complex
                        # array's .imag starts half an element in)
                        return DeviceArray(storage, (address - low) // result.itemsize,
                                           result.shape, result.strides, result.dtype)
            return self._from_numpy(result, copy=result.base is not None)
        if isinstance(result, np.generic):
            return self._from_numpy(np.asarray(result))
        if isinstance(result, (list, tuple)):
            return type(result)(self._from_host(r, storages) for r in result) \
                if type(result) in (list, tuple) else tuple(self._from_host(r, storages)
                                                            for r in result)
        return result

    def _fallback(self, op, fn, args, kwargs, written=()):
        reg.enter_fallback(self.device_type, op)
        start = _perf()
        storages = []
        host_args = [self._to_host(a, storages) for a in args]
        host_kwargs = {k: self._to_host(v, storages) for k, v in kwargs.items()}
        result = fn(*host_args, **host_kwargs)
        # what the call wrote now lives on the host only
        for target in [args[i] for i in written if i < len(args)] + [kwargs.get("out")]:
            for arr in (target if isinstance(target, tuple) else (target,)):
                if type(arr) is DeviceArray:
                    arr._storage.payload = None
        result = self._from_host(result, storages)
        reg.count_fallback(self.device_type, op, _perf() - start)
        return result

    def _fallback_function(self, name, fn):
        op = _ATEN_NAMES.get(name, f"numpy.{name}")
        written = (_MUTATING_FUNCTIONS[name],) if name in _MUTATING_FUNCTIONS else ()

        def call(*args, **kwargs):
            return self._fallback(op, fn, args, kwargs, written)
        call.__name__ = name
        return call

    def _method(self, arr, name, args, kwargs):
        op = _ATEN_NAMES.get(name, f"numpy.ndarray.{name}")
        return self._fallback(op, lambda a, *r, **k: getattr(a, name)(*r, **k), (arr, *args),
                              kwargs, (0,) if name in _MUTATING_METHODS else ())

    def _metadata_function(self, fn):
        def call(*args, **kwargs):
            args = [_phantom(a) if type(a) is DeviceArray else a for a in args]
            return fn(*args, **kwargs)
        return call

    # -- kernels -------------------------------------------------------------------------------
    def _kernel(self, name, *args):
        kernel = reg._KERNELS.get((name, self.device_type))
        if kernel is None:
            raise _NoKernel(name)
        start = _perf()
        result = kernel(*args)
        if result is NotImplemented:  # the kernel declines these arguments (a dtype, a rank)
            raise _NoKernel(name)
        reg.count_device(self.device_type, name, _perf() - start)
        return result

    def _run(self, op, numpy_fn, device_path, args, kwargs, written=()):
        """``device_path(*args, **kwargs)``; where it needs a kernel the device lacks, the
        whole call runs on the CPU instead (nothing has been written by then)."""
        try:
            return device_path(*args, **kwargs)
        except _NoKernel:
            return self._fallback(op, numpy_fn, args, kwargs, written)

    def _compact(self, x):
        return x if x.is_compact else self._new(self._kernel("aten::clone", x), x.shape, x.dtype)

    def _cast(self, x, dtype):
        """``x`` compact and of ``dtype``."""
        x = self._compact(x)
        if x.dtype == dtype:
            return x
        return self._new(self._kernel("aten::_to_copy", x, dtype), x.shape, dtype)

    def _operand(self, x, dtype, shape):
        """A kernel operand: a Python scalar stays one; an array becomes compact, of
        ``dtype`` and of ``shape`` (broadcast and copied)."""
        if type(x) is not DeviceArray:
            return _py_scalar(x, dtype)
        x = self._cast(x, dtype) if x.dtype != dtype else x
        if x.shape != shape:
            x = self._view(x, lambda p: np.broadcast_to(p, shape))
        return self._compact(x)

    def _full(self, shape, value, dtype):
        shape = tuple(shape)
        return self._new(self._kernel("aten::full", shape, _py_scalar(value, dtype), dtype),
                         shape, dtype)

    def _empty(self, shape, dtype):
        shape = tuple(shape)
        try:
            return self._new(self._kernel("aten::empty.memory_format", shape, dtype), shape,
                             dtype)
        except _NoKernel:
            return self._full(shape, 0, dtype)

    def _assign(self, dst, value, fresh=False):
        """``dst[...] = value`` on the device: a fresh result (``fresh``: an array nothing else
        holds) spanning ``dst``'s whole storage replaces its payload; otherwise ``aten::copy_``
        writes into the view."""
        try:
            if type(value) is DeviceArray:
                if value._storage is dst._storage:
                    if (value._offset, value.shape, value.strides) == \
                            (dst._offset, dst.shape, dst.strides):
                        return
                    value = self._compact_copy(value)  # overlapping source and destination
                src = self._operand(value, dst.dtype, dst.shape)
            elif isinstance(value, _SCALARS + (np.generic,)):
                src = self._full(dst.shape, value, dst.dtype)
            else:
                value = self._from_numpy(np.asarray(value, dtype=dst.dtype))
                src = self._operand(value, dst.dtype, dst.shape)
            if dst.is_compact and (fresh or src is not value):
                storage = dst._storage
                storage.payload, storage.host = src.payload, None
                return
            self._kernel("aten::copy_", dst, src)
            dst._storage.host = None
        except _NoKernel:
            def write(d, v):
                d[...] = v
            self._fallback("aten::copy_", write, (dst, value), {}, (0,))

    # -- views ---------------------------------------------------------------------------------
    def _view(self, arr, fn):
        phantom = _phantom(arr)
        result = fn(phantom)
        if type(result) is not np.ndarray:
            result = np.asarray(result)
        delta = _address(result) - _address(phantom) if result.size else 0
        return DeviceArray(arr._storage, arr._offset + delta // arr.dtype.itemsize, result.shape,
                           result.strides, arr.dtype)

    def _view_function(self, fn, arr, *args, **kwargs):
        if type(arr) is not DeviceArray:
            return self._fallback(f"numpy.{fn.__name__}", fn, (arr, *args), kwargs)
        return self._view(arr, lambda p: fn(p, *args, **kwargs))

    def _xp_reshape(self, a, shape, order="C", copy=None):
        if type(a) is not DeviceArray or order != "C":
            return self._fallback("aten::reshape", np.reshape, (a, shape),
                                  {"order": order, "copy": copy})
        if copy:
            a = self._xp_copy(a)
        try:
            return self._view(a, lambda p: np.reshape(p, shape, copy=False))
        except ValueError:
            if copy is False:
                raise  # NumPy's "Unable to avoid creating a copy while reshaping."
            # not expressible as a view: copy first, as NumPy does
        return self._run("aten::reshape", np.reshape,
                         lambda a, s: self._view(self._compact(a), lambda p: np.reshape(p, s)),
                         (a, shape), {})

    def _xp_ravel(self, a, order="C"):
        return self._xp_reshape(a, (-1,), order)

    def _xp_copy_ravel(self, a, order="C"):
        return self._xp_reshape(self._xp_copy(a), (-1,), order)

    def _xp_ascontiguousarray(self, a, dtype=None):
        if type(a) is not DeviceArray:
            return self._xp_asarray(a, dtype)
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return self._xp_astype(a, dtype)
        if a._c_contiguous():
            return a
        return self._run("aten::clone", np.ascontiguousarray, self._compact_copy, (a,), {})

    def _compact_copy(self, a):
        return self._new(self._kernel("aten::clone", a), a.shape, a.dtype)

    def _xp_copy(self, a, order="K", subok=False):
        if type(a) is not DeviceArray:
            return self._from_numpy(np.asarray(a))
        return self._run("aten::clone", np.copy, self._compact_copy, (a,), {})

    def _xp_astype(self, a, dtype, copy=True, **kwargs):
        dtype = np.dtype(dtype)
        if a.dtype == dtype and not copy:
            return a
        if a.dtype == dtype:
            return self._xp_copy(a)
        return self._run("aten::_to_copy", lambda x, d: x.astype(d),
                         lambda x, d: self._cast(x, d), (a, dtype), {})

    def _xp_asarray(self, obj, dtype=None, order=None, copy=None, **kwargs):
        if type(obj) is DeviceArray:
            if dtype is not None and np.dtype(dtype) != obj.dtype:
                return self._xp_astype(obj, dtype)
            return self._xp_copy(obj) if copy else obj
        if isinstance(obj, (list, tuple)) and any(type(v) is DeviceArray for v in obj):
            return self._fallback("aten::stack", np.asarray, (obj,), {"dtype": dtype})
        return self._from_numpy(np.asarray(obj, dtype=dtype))

    def _xp_array(self, obj, dtype=None, copy=True, order="K", ndmin=0, **kwargs):
        result = self._xp_asarray(obj, dtype, copy=copy)
        if ndmin and result.ndim < ndmin:
            result = self._view(result, lambda p: np.array(p, copy=False, ndmin=ndmin))
        return result

    def _xp_copyto(self, dst, src, casting="same_kind", where=True):
        if where is not True or type(dst) is not DeviceArray:
            return self._fallback("aten::copy_", np.copyto, (dst, src),
                                  {"casting": casting, "where": where}, (0,))
        self._assign(dst, src)

    def _getitem(self, arr, key):
        if _is_basic_key(key):
            if not isinstance(key, tuple):
                key = (key,)
            return self._view(arr, lambda p: p[key + (Ellipsis,)] if Ellipsis not in key
                              else p[key])
        return self._run("aten::index.Tensor", operator.getitem, self._index_device, (arr, key),
                         {})

    def _setitem(self, arr, key, value):
        if _is_basic_key(key):
            self._assign(self._getitem(arr, key), value)
        else:
            self._run("aten::index_put_", operator.setitem, self._index_put_device,
                      (arr, key, value), {}, (0,))

    # -- element-wise --------------------------------------------------------------------------
    def _unary(self, name, fn, x, out=None, **kwargs):
        op = _UNARY[name]
        if type(x) is not DeviceArray or kwargs:
            return self._fallback(op, fn, (x,), dict(kwargs, out=out) if out is not None
                                  else kwargs)

        def device(x, out=None):
            dtype = _unary_dtype(name, x.dtype)
            x = self._cast(x, dtype)
            result = self._new(self._kernel(op, x), x.shape, dtype)
            if out is not None:
                self._assign(out, result, fresh=True)
                return out
            return result
        return self._run(op, fn, device, (x,), {} if out is None else {"out": out})

    def _binary(self, name, fn, a, b, out=None, **kwargs):
        op = _BINARY[name]
        kinds = []
        for x in (a, b):
            if type(x) is DeviceArray:
                kinds.append(x.dtype)
            elif type(x) in _SCALARS:
                kinds.append(type(x))
            elif isinstance(x, np.generic) and x.dtype.kind in "biuf":
                kinds.append(x.dtype)
            else:
                kinds = None
                break
        if kinds is None or kwargs or (type(a) is not DeviceArray and type(b) is not DeviceArray):
            return self._fallback(op, fn, (a, b), dict(kwargs, out=out) if out is not None
                                  else kwargs)

        def device(a, b, out=None):
            out_dtype, dtype = _ufunc_dtypes(name, *kinds)
            shape = np.broadcast_shapes(*(x.shape for x in (a, b) if type(x) is DeviceArray))
            result = self._new(self._kernel(op, self._operand(a, dtype, shape),
                                            self._operand(b, dtype, shape)), shape, out_dtype)
            if out is not None:
                self._assign(out, result, fresh=True)
                return out
            return result
        return self._run(op, fn, device, (a, b), {} if out is None else {"out": out})

    def _xp_where(self, cond, *values):
        if len(values) != 2 or type(cond) is not DeviceArray or not all(
                type(v) is DeviceArray or type(v) in _SCALARS for v in values):
            return self._fallback("aten::where.self" if values else "aten::nonzero", np.where,
                                  (cond, *values), {})

        def device(cond, a, b):
            dtype = np.result_type(*(v.dtype if type(v) is DeviceArray else v for v in (a, b)))
            shape = np.broadcast_shapes(cond.shape, *(v.shape for v in (a, b)
                                                      if type(v) is DeviceArray))
            return self._new(self._kernel("aten::where.self", self._operand(cond, _BOOL, shape),
                                          self._operand(a, dtype, shape),
                                          self._operand(b, dtype, shape)), shape, dtype)
        return self._run("aten::where.self", np.where, device, (cond, *values), {})

    # -- reductions ----------------------------------------------------------------------------
    def _reduce(self, name, fn, a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        op = _REDUCTIONS[name]
        call_kwargs = dict(kwargs, axis=axis, keepdims=keepdims)
        if dtype is not None:
            call_kwargs["dtype"] = dtype
        if out is not None:
            call_kwargs["out"] = out
        if type(a) is not DeviceArray or kwargs or (name == "argmax" and axis is None
                                                    and a.ndim > 1):
            return self._fallback(op, fn, (a,), call_kwargs)

        def device(a, axis=None, dtype=None, out=None, keepdims=False):
            ndim = a.ndim
            axes = tuple(range(ndim)) if axis is None else tuple(
                ax % ndim if ndim else ax for ax in ((axis,) if isinstance(axis, int) else axis))
            if ndim == 0:
                axes = ()
            kept = [i for i in range(ndim) if i not in axes]
            rows = math.prod(a.shape[i] for i in kept)
            length = math.prod(a.shape[i] for i in axes)
            if rows == 0 or length == 0:
                raise _NoKernel(op)  # empty reductions: NumPy's identities and errors
            result_dtype = _reduction_dtype(name, a.dtype, None if dtype is None else
                                            np.dtype(dtype))
            x = a if name in ("argmax", "amax", "max", "amin", "min") else \
                (self._cast(a, result_dtype) if a.dtype != result_dtype else a)
            x = self._compact(self._view(x, lambda p: np.transpose(p, kept + list(axes))))
            x = self._view(x, lambda p: p.reshape(rows, length))
            shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape)) if keepdims \
                else tuple(a.shape[i] for i in kept)
            result = self._new(self._kernel(op, x), shape, result_dtype)
            if out is not None:
                self._assign(out, result, fresh=True)
                return out
            return result
        return self._run(op, fn, device, (a,), call_kwargs)

    def _xp_mean(self, a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if type(a) is not DeviceArray or kwargs or out is not None or a.dtype.kind not in "f":
            return self._fallback("aten::mean.dim", np.mean, (a,),
                                  dict(kwargs, axis=axis, dtype=dtype, out=out,
                                       keepdims=keepdims))
        axes = tuple(range(a.ndim)) if axis is None else (
            (axis,) if isinstance(axis, int) else tuple(axis))
        count = math.prod(a.shape[ax] for ax in axes)
        total = self._reduce("sum", np.sum, a, axis=axis, dtype=dtype, keepdims=keepdims)
        return self.xp.true_divide(total, count)

    # -- matrix products -----------------------------------------------------------------------
    def matmul(self, a, b):
        if type(a) is not DeviceArray or type(b) is not DeviceArray or a.ndim == 0 or b.ndim == 0:
            return self._fallback("aten::matmul", np.matmul, (a, b), {})
        return self._run("aten::mm" if a.ndim <= 2 and b.ndim <= 2 else "aten::bmm", np.matmul,
                         self._matmul_device, (a, b), {})

    _xp_matmul = matmul

    def _matmul_device(self, a, b):
        dtype = np.result_type(a.dtype, b.dtype)
        compute = _F32 if dtype in _LOW_PRECISION else dtype
        squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
        if squeeze_a:
            a = self._view(a, lambda p: p[None, :])
        if squeeze_b:
            b = self._view(b, lambda p: p[:, None])
        m, k = a.shape[-2:]
        n = b.shape[-1]
        if a.ndim > 2 and b.ndim == 2:
            # a stack of rows times one matrix is one matrix product
            lead = a.shape[:-2]
            a2 = self._cast(a, compute)
            a2 = self._view(a2, lambda p: p.reshape(-1, k))
            out = self._new(self._kernel("aten::mm", a2, self._cast(b, compute)),
                            (a2.shape[0], n), compute)
            out = self._view(out, lambda p: p.reshape(lead + (m, n)))
        elif a.ndim == 2 and b.ndim == 2:
            out = self._new(self._kernel("aten::mm", self._cast(a, compute),
                                         self._cast(b, compute)), (m, n), compute)
        else:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            count = math.prod(batch)
            a3 = self._operand(a, compute, batch + (m, k))
            b3 = self._operand(b, compute, batch + (k, n))
            a3 = self._view(a3, lambda p: p.reshape(count, m, k))
            b3 = self._view(b3, lambda p: p.reshape(count, k, n))
            out = self._new(self._kernel("aten::bmm", a3, b3), (count, m, n), compute)
            out = self._view(out, lambda p: p.reshape(batch + (m, n)))
        if compute != dtype:
            out = self._cast(out, dtype)
        if squeeze_a:
            out = self._view(out, lambda p: p[..., 0, :])
        if squeeze_b:
            out = self._view(out, lambda p: p[..., 0])
        return out

    # -- gather --------------------------------------------------------------------------------
    def _xp_take_along_axis(self, a, indices, axis):
        if type(a) is not DeviceArray or type(indices) is not DeviceArray or axis is None or \
                a.ndim != indices.ndim:
            return self._fallback("aten::gather", np.take_along_axis, (a, indices, axis), {})

        def device(a, indices, axis):
            axis %= a.ndim
            if any(n != m for i, (n, m) in enumerate(zip(a.shape, indices.shape)) if i != axis):
                raise _NoKernel("aten::gather")  # NumPy broadcasts here; the kernel does not
            order = [i for i in range(a.ndim) if i != axis] + [axis]
            x = self._compact(self._view(a, lambda p: np.transpose(p, order)))
            idx = self._cast(self._view(indices, lambda p: np.transpose(p, order)), _I64)
            rows, length, picks = math.prod(x.shape[:-1]), x.shape[-1], idx.shape[-1]
            if rows == 0 or length == 0 or picks == 0:
                raise _NoKernel("aten::gather")
            x2 = self._view(x, lambda p: p.reshape(rows, length))
            i2 = self._view(idx, lambda p: p.reshape(rows, picks))
            out = self._new(self._kernel("aten::gather", x2, i2), idx.shape, a.dtype)
            return self._view(out, lambda p: np.moveaxis(p, -1, axis))
        return self._run("aten::gather", np.take_along_axis, device, (a, indices, axis), {})

    def _xp_put_along_axis(self, arr, indices, values, axis):
        if type(arr) is not DeviceArray or type(indices) is not DeviceArray or axis is None or \
                arr.ndim != indices.ndim or not (type(values) is DeviceArray or
                                                 type(values) in _SCALARS):
            return self._fallback("aten::scatter.src", np.put_along_axis,
                                  (arr, indices, values, axis), {}, (0,))

        def device(arr, indices, values, axis):
            axis %= arr.ndim
            if any(n != m for i, (n, m) in enumerate(zip(arr.shape, indices.shape))
                   if i != axis):
                raise _NoKernel("aten::scatter.src")
            order = [i for i in range(arr.ndim) if i != axis] + [axis]
            x = self._compact(self._view(arr, lambda p: np.transpose(p, order)))
            idx = self._cast(self._view(indices, lambda p: np.transpose(p, order)), _I64)
            src = self._operand(values, arr.dtype, indices.shape)
            src = self._compact(self._view(src, lambda p: np.transpose(p, order)))
            rows, length, picks = math.prod(x.shape[:-1]), x.shape[-1], idx.shape[-1]
            if rows == 0 or length == 0 or picks == 0:
                raise _NoKernel("aten::scatter.src")
            reshape = (lambda n: lambda p: p.reshape(rows, n))
            out = self._new(self._kernel("aten::scatter.src", self._view(x, reshape(length)),
                                         self._view(idx, reshape(picks)),
                                         self._view(src, reshape(picks))), x.shape, arr.dtype)
            self._assign(arr, self._view(out, lambda p: np.moveaxis(p, -1, axis)),
                         fresh=True)
        return self._run("aten::scatter.src", np.put_along_axis, device,
                         (arr, indices, values, axis), {}, (0,))

    # -- composites: written on the primitives -------------------------------------------------
    def _xp_any(self, a, axis=None, out=None, keepdims=False, **kwargs):
        return self._logical_reduction("any", "amax", a, axis, out, keepdims, kwargs)

    def _xp_all(self, a, axis=None, out=None, keepdims=False, **kwargs):
        return self._logical_reduction("all", "amin", a, axis, out, keepdims, kwargs)

    def _logical_reduction(self, name, via, a, axis, out, keepdims, kwargs):
        # any/all are the max/min of the array as bools
        if type(a) is not DeviceArray or out is not None or kwargs or a.size == 0:
            return self._fallback(f"aten::{name}.dims", getattr(np, name), (a,),
                                  dict(kwargs, axis=axis, out=out, keepdims=keepdims))
        return self._run(f"aten::{name}.dims", getattr(np, name),
                         lambda a, axis, keepdims: self._reduce(
                             via, getattr(np, via), self._cast(a, _BOOL), axis=axis,
                             keepdims=keepdims), (a,), {"axis": axis, "keepdims": keepdims})

    def _xp_arange(self, start, stop=None, step=1, dtype=None, **kwargs):
        if stop is None:
            start, stop = 0, start
        if kwargs or not all(isinstance(v, _SCALARS + (np.generic,)) for v in (start, stop, step)):
            return self._fallback("aten::arange", np.arange, (start, stop, step),
                                  dict(kwargs, dtype=dtype))
        # NumPy's length and dtype, taken from a one-element arange
        np_dtype = np.arange(start, start + step, step, dtype=dtype).dtype
        count = max(0, math.ceil((stop - start) / step)) if step else 0

        def device(start, stop, step):
            if count == 0:
                raise _NoKernel("aten::arange")
            return self._new(self._kernel("aten::arange", start, step, count, np_dtype),
                             (count,), np_dtype)
        return self._run("aten::arange", lambda *a: np.arange(*a, dtype=np_dtype), device,
                         (start, stop, step), {})

    def _xp_einsum(self, subscripts, *operands, **kwargs):
        # the one form Ember's ops use on hot paths ("ncl,ncl->c": a sum of products) is a
        # multiply and a sum; every other form runs on the CPU
        pattern = subscripts.replace(" ", "")
        inputs, _, output = pattern.partition("->")
        terms = inputs.split(",")
        if kwargs or len(operands) != 2 or len(terms) != 2 or terms[0] != terms[1] or \
                "." in pattern or len(set(terms[0])) != len(terms[0]) or \
                not set(output) <= set(terms[0]) or not all(
                    type(x) is DeviceArray and x.ndim == len(terms[0]) for x in operands):
            return self._fallback("aten::einsum", np.einsum, (subscripts, *operands), kwargs)
        letters = terms[0]
        summed = tuple(i for i, c in enumerate(letters) if c not in output)
        kept = [c for c in letters if c in output]
        product = self.xp.multiply(*operands)
        total = self._reduce("sum", np.sum, product, axis=summed) if summed else product
        order = [kept.index(c) for c in output]
        return self._view(total, lambda p: np.transpose(p, order)) if order != sorted(order) \
            else total

    def _linear_index(self, arr, key):
        """For a key of integer arrays over ``arr``'s leading dimensions: ``arr`` compact as
        (rows, row length), one int64 row number per indexed position, and the result's
        shape; None where the key has another form."""
        items = key if isinstance(key, tuple) else (key,)
        if not items or len(items) > arr.ndim or not all(
                type(k) is DeviceArray and k.dtype.kind in "iu" for k in items):
            return None
        try:
            shape = np.broadcast_shapes(*(k.shape for k in items))
        except ValueError:
            return None  # NumPy raises its IndexError in the fallback
        lead = arr.shape[:len(items)]
        row = math.prod(arr.shape[len(items):])
        linear = None
        for k, n, step in zip(items, lead, _c_strides(lead, 1)):
            k = self._operand(k, _I64, shape)
            # negative indices count from the end, as NumPy's
            k = self.xp.where(self.xp.less(k, 0), self.xp.add(k, n), k)
            k = self.xp.multiply(k, step) if step != 1 else k
            linear = k if linear is None else self.xp.add(linear, k)
        linear = self._view(self._compact(linear), lambda p: p.reshape(-1))
        x = self._view(self._compact(arr), lambda p: p.reshape(math.prod(lead), row))
        return x, linear, shape + arr.shape[len(items):]

    def _index_device(self, arr, key):
        found = self._linear_index(arr, key)
        if found is None:
            raise _NoKernel("aten::index.Tensor")
        x, linear, shape = found
        if linear.size == 0 or x.size == 0:
            raise _NoKernel("aten::index.Tensor")
        return self._new(self._kernel("aten::index_select", x, linear), shape, arr.dtype)

    def _index_put_device(self, arr, key, value):
        found = self._linear_index(arr, key)
        if found is None or not (type(value) is DeviceArray or type(value) in _SCALARS):
            raise _NoKernel("aten::index_put_")
        x, linear, shape = found
        if linear.size == 0 or x.size == 0:
            raise _NoKernel("aten::index_put_")
        rows = (self._operand(value, arr.dtype, shape) if type(value) is DeviceArray
                else self._full(shape, value, arr.dtype))  # the kernel takes rows, not a scalar
        rows = self._view(rows, lambda p: p.reshape(linear.size, x.shape[1]))
        out = self._new(self._kernel("aten::index_put_", x, linear, rows), arr.shape, arr.dtype)
        self._assign(arr, out, fresh=True)
    def _xp_pad(self, array, pad_width, mode="constant", **kwargs):
        value = kwargs.get("constant_values", 0)
        if type(array) is not DeviceArray or mode != "constant" or set(kwargs) - {
                "constant_values"} or not isinstance(value, _SCALARS + (np.generic,)):
            return self._fallback("aten::constant_pad_nd", np.pad, (array, pad_width),
                                  dict(kwargs, mode=mode))

        def device(array, pad_width):
            widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
            if (widths < 0).any():
                raise _NoKernel("aten::constant_pad_nd")
            shape = tuple(int(n + lo + hi) for n, (lo, hi) in zip(array.shape, widths))
            out = self._full(shape, value, array.dtype)
            inner = tuple(slice(int(lo), int(lo) + n) for n, (lo, _) in zip(array.shape, widths))
            self._assign(self._getitem(out, inner), array)
            return out
        return self._run("aten::constant_pad_nd", lambda a, w: np.pad(a, w, mode, **kwargs),
                         device, (array, pad_width), {})

    def _xp_concatenate(self, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
        arrays = list(arrays)
        if out is not None or axis is None or not arrays or \
                not all(type(a) is DeviceArray for a in arrays):
            return self._fallback("aten::cat", np.concatenate, (arrays,),
                                  {"axis": axis, "out": out, "dtype": dtype, "casting": casting})

        def device(arrays, axis=0, dtype=None):
            result_dtype = np.dtype(dtype) if dtype is not None else np.result_type(
                *(a.dtype for a in arrays))
            ndim = arrays[0].ndim
            if ndim == 0 or any(a.ndim != ndim for a in arrays):
                raise _NoKernel("aten::cat")  # NumPy's errors
            ax = axis % ndim
            shape = list(arrays[0].shape)
            shape[ax] = sum(a.shape[ax] for a in arrays)
            result = self._empty(shape, result_dtype)
            start = 0
            for a in arrays:
                key = (slice(None),) * ax + (slice(start, start + a.shape[ax]),)
                start += a.shape[ax]
                if a.size:
                    self._assign(self._getitem(result, key), a)
            return result
        return self._run("aten::cat", np.concatenate, device, (arrays,),
                         {"axis": axis, "dtype": dtype})

    _xp_concat = _xp_concatenate

    def _xp_stack(self, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
        arrays = list(arrays)
        if out is not None or not arrays or not all(type(a) is DeviceArray for a in arrays) or \
                len({a.shape for a in arrays}) != 1:
            return self._fallback("aten::stack", np.stack, (arrays,),
                                  {"axis": axis, "out": out, "dtype": dtype, "casting": casting})
        ax = axis % (arrays[0].ndim + 1)
        return self._xp_concatenate([self._view(a, lambda p: np.expand_dims(p, ax))
                                     for a in arrays], axis=ax, dtype=dtype)

    # -- creation ------------------------------------------------------------------------------
    def _fill_function(self, name, shape, fill_value=None, dtype=None, order="C", **kwargs):
        if name != "full":
            if fill_value is not None:
                dtype = fill_value
            fill_value = _FILLS[name]
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        np_dtype = np.dtype(dtype) if dtype is not None else (
            np.asarray(fill_value).dtype if name == "full" else np.dtype(np.float64))
        numpy_fn = getattr(np, name)
        args = (shape, fill_value) if name == "full" else (shape,)

        def device(*_):
            if fill_value is None:
                return self._empty(shape, np_dtype)
            if isinstance(fill_value, DeviceArray):
                raise _NoKernel("aten::full")
            return self._full(shape, fill_value, np_dtype)
        return self._run("aten::full" if fill_value is not None else "aten::empty.memory_format",
                         lambda *a, **k: numpy_fn(*a, dtype=np_dtype, **k), device, args, {})

    def _like_function(self, name, a, fill_value=None, dtype=None, order="K", subok=True,
                       shape=None):
        fill = fill_value if name == "full_like" else _LIKE[name]
        target_shape = a.shape if shape is None else shape
        target_dtype = a.dtype if dtype is None else np.dtype(dtype)
        if name == "empty_like":
            return self._fill_function("empty", target_shape, target_dtype)
        return self._fill_function("full", target_shape, fill, target_dtype)

    # -- the rest of the Backend contract ------------------------------------------------------
    def asarray(self, data, np_dtype=None, copy=None):
        return self._xp_asarray(data, np_dtype, copy=copy)

    def to_numpy(self, array):
        if type(array) is not DeviceArray:
            return np.asarray(array)
        return np.array(self._host_view(array), copy=True)

    def to_host(self, array, non_blocking=False):
        return self.to_numpy(array)

    def from_host(self, host, np_dtype, non_blocking=False):
        return self._from_numpy(np.asarray(host, dtype=np_dtype))

    def data_ptr(self, array):
        return array._storage.address + array._offset * array.dtype.itemsize

    def index_add(self, target, index, values):
        def add_at(t, i, v):
            np.add.at(t, i, v)
        self._fallback("aten::index_put_(accumulate=True)", add_at, (target, index, values), {},
                       (0,))

    def scatter_reduce(self, target, index, values, reduce):
        from ..backends.numpy_backend import _SCATTER_UFUNC

        def reduce_at(t, i, v):
            _SCATTER_UFUNC[reduce, t.dtype == np.bool_].at(t, i, v)
        self._fallback(f"aten::scatter_reduce.two({reduce})", reduce_at, (target, index, values),
                       {}, (0,))

    def sliding_view(self, array, shape, strides):
        return self._view(array, lambda p: as_strided(p, shape=shape, strides=strides))

    def cumulative(self, name, array, axis):
        op = {"add": "aten::cumsum", "multiply": "aten::cumprod", "maximum": "aten::cummax",
              "minimum": "aten::cummin", "logaddexp": "aten::logcumsumexp"}[name]
        ufunc = getattr(np, name)
        return self._fallback(op, lambda a: a.copy() if a.size == 0 else ufunc.accumulate(
            a, axis=axis), (array,), {})

    def _special(self, name):
        from ..backends.numpy_backend import NumpyBackend
        return getattr(NumpyBackend, name)

    def erf(self, x):
        if type(x) is DeviceArray and reg.has_kernel("aten::erf", self.device_type) and \
                x.dtype.kind == "f":
            return self._new(self._kernel("aten::erf", self._compact(x)), x.shape, x.dtype)
        return self._fallback("aten::erf", lambda a: self._special("erf")(None, a), (x,), {})

    def erfc(self, x):
        return self._fallback("aten::erfc", lambda a: self._special("erfc")(None, a), (x,), {})

    def erfinv(self, x):
        return self._fallback("aten::erfinv", lambda a: self._special("erfinv")(None, a),
                              (x,), {})

    def sparse(self):
        raise NotImplementedError(f"sparse tensors are not supported on the registry-backed "
                                  f"device '{self.device_type}' (no sparse-matrix namespace)")
