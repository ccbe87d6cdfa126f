"""The CuPy conformance device's array namespace: NumPy underneath, CuPy 14.2's API on top.

This is a conformance device, not a GPU. It lets CI prove, without CUDA, that Ember's ops ask
their backend's ``xp`` only for what CuPy 14.2 has. Every fact about CuPy comes from
``cupy14_api.json``, written by ``tools/cupy_api_spec.py`` from an installed CuPy; this module
refuses:

* a name CuPy lacks (AttributeError "CuPy 14.2 has no ..."),
* a keyword CuPy's signature lacks, and ufunc methods CuPy lacks (``multiply.at``,
  ``maximum.reduce``: NotImplementedError, as CuPy raises),
* a host ``numpy.ndarray`` mixed into device maths (TypeError, as CuPy raises), and implicit
  conversion of a device array to NumPy (``np.asarray(device_array)``),
* dtypes CuPy has no kernels for (``ml_dtypes.bfloat16``, object, strings).

Where CuPy's behaviour is not known for certain, the namespace is stricter than CuPy:
host arrays as indices are refused, ufuncs refuse list operands, ``ascontiguousarray`` and the
other non-creation functions refuse host arrays. Deliberately not mimicked: CuPy wraps
out-of-bounds indices around where NumPy raises; reductions compute in NumPy's precision.
"""
import functools
import json
import operator
from pathlib import Path

import numpy as np

SPEC = json.loads((Path(__file__).with_name("cupy14_api.json")).read_text())
VERSION = ".".join(SPEC["cupy_version"].split(".")[:2])
_SUPPORTED_DTYPES = frozenset(np.dtype(n) for n in SPEC["dtypes"])
_NDARRAY = SPEC["ndarray"]
_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
             "construct a NumPy array explicitly.")
# CuPy's creation functions copy host data to the device; every other function takes device
# arrays, Python/NumPy scalars and (outside ufuncs) sequences.
_HOST_OK = frozenset({"array", "asarray", "asanyarray"})
# Functions whose results stay on the host: not wrapped into device arrays.
_HOST_RESULT = frozenset({"asnumpy", "get_array_module"})


def _dtype_error(dtype):
    return TypeError(f"dtype {dtype} is not supported by CuPy {VERSION} (CuPy conformance device)")


def _host_error(where):
    return TypeError(f"{where}: a host numpy.ndarray was passed to CuPy {VERSION}, which takes "
                     f"cupy.ndarray (CuPy conformance device): use xp.asarray to copy it over")


def _wrap(result):
    t = type(result)
    if t is np.ndarray:
        if result.dtype not in _SUPPORTED_DTYPES:
            raise _dtype_error(result.dtype)
        return DeviceArray(result)
    if isinstance(result, np.generic):  # CuPy returns 0-d arrays where NumPy returns scalars
        if result.dtype not in _SUPPORTED_DTYPES:
            raise _dtype_error(result.dtype)
        return DeviceArray(np.asarray(result))
    if t is list:
        return [_wrap(r) for r in result]
    if isinstance(result, tuple):  # NumPy's named results (SVDResult...) are plain in CuPy
        return tuple(_wrap(r) for r in result)
    return result


def _check_dtype_like(x):
    try:
        dtype = np.dtype(x)
    except TypeError:
        return
    if dtype not in _SUPPORTED_DTYPES:
        raise _dtype_error(dtype)


def _unwrap(x, where, host_ok=False, sequences=True):
    t = type(x)
    if t is DeviceArray:
        return x._a
    if t is np.ndarray:
        if host_ok:
            return x
        raise _host_error(where)
    if t is list or t is tuple:
        if not sequences:
            raise TypeError(f"{where}: Unsupported type {t} (CuPy {VERSION} ufuncs take arrays "
                            f"and scalars; CuPy conformance device)")
        return t(_unwrap(v, where, host_ok) for v in x)
    if t is type or t is np.dtype:
        _check_dtype_like(x)
    elif isinstance(x, DeviceArray):
        return x._a
    return x


def _checker(where, record):
    """A check of one call's arguments against CuPy's signature, built once per function: the
    device runs in CI, so per-call work stays a set lookup and a length comparison."""
    params = record.get("params")
    if params == "unknown" or record.get("kwargs"):
        return lambda args, kwargs: None
    is_ufunc = record.get("kind") == "ufunc"
    allowed = frozenset(record["keywords"] if is_ufunc else params) - set(
        record.get("positional_only", ()))
    if is_ufunc:
        limit = record["nin"] + record["nout"]
    else:
        limit = 1 << 30 if record.get("varargs") else len(params)

    def check(args, kwargs):
        if len(args) > limit:
            raise TypeError(f"{where}() takes at most {limit} positional arguments in CuPy "
                            f"{VERSION}, got {len(args)}")
        if kwargs:
            for k in kwargs:
                if k not in allowed:
                    raise TypeError(f"{where}() got an unexpected keyword argument '{k}' "
                                    f"(CuPy {VERSION}'s signature: {', '.join(params)})")
            dtype = kwargs.get("dtype")
            if dtype is not None:
                _check_dtype_like(dtype)
    return check


def _function(where, record, impl, host_ok=False):
    check = _checker(where, record)

    @functools.wraps(impl)
    def call(*args, **kwargs):
        check(args, kwargs)
        args = [a._a if type(a) is DeviceArray else _unwrap(a, where, host_ok) for a in args]
        if kwargs:
            kwargs = {k: _unwrap(v, where, host_ok) for k, v in kwargs.items()}
        return _wrap(impl(*args, **kwargs))
    return call


class Ufunc:
    """A CuPy ufunc: __call__, plus the methods CuPy implements for this ufunc only."""

    def __init__(self, where, record, impl):
        self._where, self._record, self._impl = where, record, impl
        self._check = _checker(where, record)
        self._methods = frozenset(record["methods"])
        self.__name__ = self.name = impl.__name__
        self.nin, self.nout = record["nin"], record["nout"]

    def __repr__(self):
        return f"<conformance ufunc '{self._where}'>"

    def _operands(self, args):
        where = self._where
        return [a._a if type(a) is DeviceArray else _unwrap(a, where, sequences=False)
                for a in args]

    def __call__(self, *args, **kwargs):
        self._check(args, kwargs)
        if kwargs and "out" in kwargs:
            kwargs["out"] = _unwrap(kwargs["out"], self._where)
        return _wrap(self._impl(*self._operands(args), **kwargs))

    def _method(self, method):
        if method not in self._methods:
            raise NotImplementedError(f"`cupy_{self.name}.{method}` is not supported yet "
                                      f"(CuPy {VERSION}; CuPy conformance device)")
        return getattr(self._impl, method)

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        impl = self._method("reduce")
        return _wrap(impl(_unwrap(array, self._where), axis=axis, dtype=dtype,
                          out=None if out is None else _unwrap(out, self._where),
                          keepdims=keepdims))

    def accumulate(self, array, axis=0, dtype=None, out=None):
        impl = self._method("accumulate")
        return _wrap(impl(_unwrap(array, self._where), axis=axis, dtype=dtype,
                          out=None if out is None else _unwrap(out, self._where)))

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        impl = self._method("reduceat")
        return _wrap(impl(_unwrap(array, self._where), _unwrap(indices, self._where), axis=axis,
                          dtype=dtype, out=None if out is None else _unwrap(out, self._where)))

    def outer(self, A, B, **kwargs):
        impl = self._method("outer")
        return _wrap(impl(*self._operands((A, B)), **kwargs))

    def at(self, a, indices, b=None):
        impl = self._method("at")
        if type(a) is not DeviceArray:
            raise TypeError(f"{self._where}.at: the target must be a device array, got {type(a)}")
        args = (a._a, _unwrap(indices, self._where)) + (() if b is None else
                                                          (_unwrap(b, self._where),))
        impl(*args)


class Namespace:
    """One CuPy module: its names resolve on first use, then are cached on the instance."""

    def __init__(self, qualname, numpy_module, extras=None):
        self._qualname = qualname
        self._record = SPEC["modules"][qualname]
        self._numpy = numpy_module
        self._extras = extras or {}

    def __repr__(self):
        return f"<CuPy {VERSION} conformance namespace '{self._qualname}'>"

    def __dir__(self):
        return sorted(self._record)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        where = f"{self._qualname}.{name}"
        record = self._record.get(name)
        if record is None:
            raise AttributeError(f"CuPy {VERSION} has no {where} (CuPy conformance device)")
        if name in self._extras:
            value = self._extras[name]
            if callable(value) and record["kind"] == "function" and name not in _HOST_RESULT:
                value = _function(where, record, value, host_ok=name in _HOST_OK)
        else:
            impl = getattr(self._numpy, name, None)
            if impl is None:
                raise AttributeError(f"{where} exists in CuPy {VERSION} but the CuPy conformance "
                                     f"device does not emulate it")
            kind = record["kind"]
            if kind == "ufunc":
                value = Ufunc(where, record, impl)
            elif kind == "function":
                value = _function(where, record, impl, host_ok=name in _HOST_OK)
            else:
                value = impl
        setattr(self, name, value)
        return value


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, flags):
        self.c_contiguous, self.f_contiguous = flags.c_contiguous, flags.f_contiguous
        self.owndata = flags.owndata

    def __getitem__(self, key):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "OWNDATA": "owndata"}[key])


class _MemoryPointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


def _operand(other):
    t = type(other)
    if t is DeviceArray:
        return other._a
    if t is np.ndarray:
        raise _host_error("cupy.ndarray operator")
    if t in (int, float, bool, complex) or isinstance(other, np.generic):
        return other
    return NotImplemented


def _binary(op, reflected=False):
    def method(self, other):
        value = _operand(other)
        if value is NotImplemented:
            return NotImplemented
        return _wrap(op(value, self._a) if reflected else op(self._a, value))
    return method


def _inplace(op):
    def method(self, other):
        value = _operand(other)
        if value is NotImplemented:
            return NotImplemented
        op(self._a, value)
        return self
    return method


def _index(key):
    t = type(key)
    if t is DeviceArray:
        return key._a
    if t is tuple:
        return tuple(_index(k) for k in key)
    if t is np.ndarray:
        # CuPy's handling of host index arrays is not pinned down here: refuse (stricter).
        raise _host_error("cupy.ndarray indexing")
    if t is list:
        return [_index(k) for k in key]
    return key


class DeviceArray:
    """A CuPy 14.2 ``ndarray`` look-alike holding a NumPy array; never a NumPy array itself."""

    __slots__ = ("_a",)
    __array_priority__ = 100

    def __init__(self, array):
        self._a = array

    # -- host transfer (explicit only, as in CuPy) ---------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def get(self, stream=None, order="C", out=None, blocking=True):
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order)

    def set(self, arr, stream=None):
        if type(arr) is not np.ndarray:
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        self._a[...] = arr

    def item(self, *args):
        return self._a.item(*args)

    def tolist(self):
        return self._a.tolist()

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __bool__(self):
        return bool(self._a)

    def __complex__(self):
        return complex(self._a)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._a)))

    def __repr__(self):
        return repr(self._a).replace("array(", "conformance_array(", 1)

    def __str__(self):
        return str(self._a)

    def __copy__(self):
        return DeviceArray(self._a.copy())

    def __deepcopy__(self, memo):
        return DeviceArray(self._a.copy())

    def __reduce__(self):
        return (DeviceArray, (self._a,))

    # -- attributes --------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: DeviceArray(self._a.T))
    mT = property(lambda self: DeviceArray(np.swapaxes(self._a, -1, -2)))
    flags = property(lambda self: _Flags(self._a.flags))
    data = property(lambda self: _MemoryPointer(self._a.__array_interface__["data"][0]))
    device = property(lambda self: "cupyconf")

    @property
    def base(self):
        base = self._a.base
        return DeviceArray(base) if type(base) is np.ndarray else None

    @property
    def real(self):
        return DeviceArray(self._a.real)

    @real.setter
    def real(self, value):
        self._a.real = _operand(value)

    @property
    def imag(self):
        return DeviceArray(self._a.imag)

    @imag.setter
    def imag(self, value):
        self._a.imag = _operand(value)

    def scatter_add(self, slices, value):
        np.add.at(self._a, _index(slices), _unwrap(value, "cupy.ndarray.scatter_add"))

    def scatter_max(self, slices, value):
        np.maximum.at(self._a, _index(slices), _unwrap(value, "cupy.ndarray.scatter_max"))

    def scatter_min(self, slices, value):
        np.minimum.at(self._a, _index(slices), _unwrap(value, "cupy.ndarray.scatter_min"))

    def ptp(self, axis=None, out=None, keepdims=False):
        return _wrap(np.ptp(self._a, axis=axis, out=None if out is None else out._a,
                            keepdims=keepdims))

    def __getattr__(self, name):
        if name in _NDARRAY:
            raise AttributeError(f"cupy.ndarray.{name} exists in CuPy {VERSION} but the CuPy "
                                 f"conformance device does not emulate it")
        raise AttributeError(f"CuPy {VERSION}'s ndarray has no attribute '{name}' "
                             f"(CuPy conformance device)")

    # -- indexing ----------------------------------------------------------------------------
    def __getitem__(self, key):
        key = _index(key)
        result = self._a[key]
        if type(result) is not np.ndarray:
            # NumPy gives a scalar copy where every dim takes an int; CuPy a 0-d view (which
            # writes through). A trailing ... makes NumPy's view.
            result = self._a[(key if type(key) is tuple else (key,)) + (Ellipsis,)]
        return _wrap(result)

    def __setitem__(self, key, value):
        self._a[_index(key)] = _unwrap(value, "cupy.ndarray.__setitem__")

    # -- NumPy's protocols, answered the way CuPy answers them --------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        target = getattr(xp, ufunc.__name__, None) if ufunc.__name__ in xp._record else None
        if not isinstance(target, Ufunc):
            return NotImplemented
        if method == "__call__":
            return target(*inputs, **kwargs)
        return getattr(target, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        module = func.__module__ or "numpy"
        qualname = "cupy" + module[len("numpy"):] if module.startswith("numpy") else None
        namespace = _NAMESPACES.get(qualname)
        if namespace is None or func.__name__ not in namespace._record:
            return NotImplemented
        return getattr(namespace, func.__name__)(*args, **kwargs)


def _method(name, record):
    impl = getattr(np.ndarray, name)
    where = f"cupy.ndarray.{name}"

    check = _checker(where, record)

    def method(self, *args, **kwargs):
        check(args, kwargs)
        if args:
            args = [a._a if type(a) is DeviceArray else _unwrap(a, where) for a in args]
        if kwargs:
            kwargs = {k: _unwrap(v, where) for k, v in kwargs.items()}
        return _wrap(impl(self._a, *args, **kwargs))
    method.__name__ = name
    return method


def _install_ndarray_api():
    ops = {
        "add": operator.add, "sub": operator.sub, "mul": operator.mul,
        "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
        "pow": operator.pow, "matmul": operator.matmul, "and": operator.and_,
        "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
        "rshift": operator.rshift, "divmod": divmod,
    }
    for short, op in ops.items():
        setattr(DeviceArray, f"__{short}__", _binary(op))
        setattr(DeviceArray, f"__r{short}__", _binary(op, reflected=True))
        inplace = getattr(operator, f"i{short}", None)
        if inplace is not None and f"__i{short}__" in _NDARRAY:  # CuPy has no __imatmul__
            setattr(DeviceArray, f"__i{short}__", _inplace(inplace))
    for short, op in {"lt": operator.lt, "le": operator.le, "gt": operator.gt,
                      "ge": operator.ge, "eq": operator.eq, "ne": operator.ne}.items():
        setattr(DeviceArray, f"__{short}__", _binary(op))
    for short, op in {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
                      "invert": operator.invert}.items():
        setattr(DeviceArray, f"__{short}__", (lambda f: lambda self: _wrap(f(self._a)))(op))
    DeviceArray.__hash__ = None
    own = set(vars(DeviceArray))
    for name, record in _NDARRAY.items():
        if name.startswith("_") or name in own or record["kind"] != "method":
            continue
        if hasattr(np.ndarray, name):
            setattr(DeviceArray, name, _method(name, record))


_install_ndarray_api()


def _scatter_add(a, slices, value):
    np.add.at(a, slices, value)


def _scatter_max(a, slices, value):
    np.maximum.at(a, slices, value)


def _scatter_min(a, slices, value):
    np.minimum.at(a, slices, value)


class _Device:
    """``cupy.cuda.Device``: one device, always current, nothing to wait for."""

    def __init__(self, index=0):
        self.id = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1


class _Cuda:
    Device = _Device
    runtime = _Runtime


def _asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if isinstance(a, DeviceArray):
        return a.get(order=order, out=out)
    return np.asarray(a, order=order) if out is None else np.copyto(out, a) or out


def _special_namespace():
    import scipy.special
    return Namespace("cupyx.scipy.special", scipy.special)


class _Lazy:
    """``cupyx.scipy`` and ``cupyx.scipy.special``, built (SciPy imported) on first use."""

    def __getattr__(self, name):
        if name != "special":
            raise AttributeError(f"the CuPy conformance device has no cupyx.scipy.{name}")
        self.special = _special_namespace()
        return self.special


xp = Namespace("cupy", np, extras={"asnumpy": _asnumpy, "ndarray": DeviceArray, "cuda": _Cuda,
                                   "get_array_module": lambda *args: xp})
xp.linalg = Namespace("cupy.linalg", np.linalg)
xp.fft = Namespace("cupy.fft", np.fft)
xp.random = Namespace("cupy.random", np.random)


class _Lib:
    stride_tricks = Namespace("cupy.lib.stride_tricks", np.lib.stride_tricks)


xp.lib = _Lib()
cupyx = Namespace("cupyx", np, extras={"scatter_add": _scatter_add, "scatter_max": _scatter_max,
                                       "scatter_min": _scatter_min})
cupyx.scipy = _Lazy()
_NAMESPACES = {"cupy": xp, "cupy.linalg": xp.linalg, "cupy.fft": xp.fft,
               "cupy.random": xp.random}
