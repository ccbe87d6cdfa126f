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
* dtypes CuPy has no arrays of (object, strings: ValueError "Unsupported dtype", as CuPy),
* ``ml_dtypes.bfloat16`` wherever CuPy 14.2 has no kernel for it (below).

bfloat16 (NumPy type character "E"): CuPy 14 adds bfloat16 loops to its ufuncs and reduction
kernels when ml_dtypes is importable, and the spec records every kernel's loops. A ufunc or a
recorded kernel picks its loop the way CuPy's does (the first loop every array operand casts to
safely; Python scalars only by kind), so ``cupy.where`` on bfloat16 answers float32 (its kernel
has no "E" loop) and a ufunc no loop takes is CuPy's TypeError "Wrong type". A bfloat16 loop
computes in float32 and rounds, as CuPy's ``bf16_loop`` code does. Functions that only move
or view memory take bfloat16; every other function (matmul, sorting, linalg, fft, mean,
argmax, cumsum...: kernels that cannot be introspected without a GPU) refuses it with a
TypeError that says so: stricter than CuPy may be.

Where CuPy's behaviour is not known for certain, the namespace is stricter than CuPy:
host arrays as indices are refused, ufuncs refuse list operands, ``ascontiguousarray`` and the
other non-creation functions refuse host arrays. Deliberately not mimicked: CuPy wraps
out-of-bounds indices around where NumPy raises; reductions compute in NumPy's precision.
"""
import functools
import json
import operator
from pathlib import Path

import ml_dtypes
import numpy as np

SPEC = json.loads((Path(__file__).with_name("cupy14_api.json")).read_text())
VERSION = ".".join(SPEC["cupy_version"].split(".")[:2])
_BF16_SPEC = SPEC.get("bfloat16")
_BF16 = np.dtype(ml_dtypes.bfloat16)
_SUPPORTED_DTYPES = frozenset([np.dtype(n) for n in SPEC["dtypes"]] + (
    [_BF16] if _BF16_SPEC and _BF16_SPEC["creation"]["empty"]["accepted"] else []))
_UFUNC_KERNELS = _BF16_SPEC["ufunc_kernels"] if _BF16_SPEC else {}
_REDUCTION_KERNELS = _BF16_SPEC["reduction_kernels"] if _BF16_SPEC else {}
# CuPy's loop order within a kernel (its _ops lists them so): the first safe cast wins.
_LOOP_ORDER = "?bBhHiIlLqQeEfdFD"
# The functions (and ndarray methods) whose CuPy kernel is one of the recorded ones: bfloat16
# operands then pick a loop of that kernel, as CuPy's type resolution does.
_KERNEL_OF = {
    "sum": "cupy_sum", "nansum": "cupy_nansum", "prod": "cupy_prod", "nanprod": "cupy_nanprod",
    "max": "cupy_max", "amax": "cupy_max", "min": "cupy_min", "amin": "cupy_min",
    "nanmax": "cupy_nanmax", "nanmin": "cupy_nanmin", "all": "cupy_all", "any": "cupy_any",
    "count_nonzero": "cupy_count_nonzero",
}
_UFUNC_OF = {"where": "cupy_where", "clip": "cupy_clip", "arange": "cupy_arange",
             "linspace": "cupy_linspace", "around": "cupy_round", "round": "cupy_round",
             "round_": "cupy_round", "conj": "cupy_conjugate", "conjugate": "cupy_conjugate",
             "real": "cupy_real", "imag": "cupy_imag", "nan_to_num": "cupy_nan_to_num_",
             "isclose": "cupy_is_close"}
# Functions that only allocate, copy, move or view memory (memcpy, memset, views, CuPy's
# dtype-generic index kernels, its bfloat16 copy loop): they take bfloat16 as any dtype.
_LAYOUT_ONLY = frozenset("""
    array asarray asanyarray ascontiguousarray asfortranarray empty empty_like zeros zeros_like
    ones ones_like full full_like copy copyto astype reshape ravel flatten transpose permute_dims
    swapaxes moveaxis rollaxis expand_dims squeeze broadcast_to broadcast_arrays atleast_1d
    atleast_2d atleast_3d concatenate concat stack hstack vstack dstack column_stack split
    array_split hsplit vsplit dsplit flip fliplr flipud roll rot90 take take_along_axis
    diagonal tile repeat result_type can_cast shape ndim size may_share_memory shares_memory
    iscomplexobj isrealobj asnumpy get_array_module as_strided sliding_window_view view fill
    item tolist get set put nonzero flatnonzero argwhere compress extract unique_values meshgrid
    """.split())
# cupy.pad's modes that only allocate, fill with a constant and copy slices (cupy/_padding/pad.py).
_PAD_COPY_MODES = frozenset({"constant", "empty", "edge", "reflect", "symmetric", "wrap"})
_NDARRAY = SPEC["ndarray"]
_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
             "construct a NumPy array explicitly.")
# CuPy's creation functions copy host data to the device; every other function takes device
# arrays, Python/NumPy scalars and (outside ufuncs) sequences.
_HOST_OK = frozenset({"array", "asarray", "asanyarray"})
# Functions whose results stay on the host: not wrapped into device arrays.
_HOST_RESULT = frozenset({"asnumpy", "get_array_module", "empty_pinned"})


def _dtype_error(dtype):
    # CuPy's own words for a dtype it has no arrays of (object, strings...).
    return ValueError(f"Unsupported dtype {dtype} (CuPy {VERSION}; CuPy conformance device)")


def _wrong_type(kernel, dtypes):
    return TypeError(f"Wrong type ({tuple(dtypes)}) of arguments for {kernel} "
                     f"(CuPy {VERSION}; CuPy conformance device)")


class BFloat16NotEstablished(TypeError):
    """The stand-in refusing bfloat16 where CuPy 14.2's support is unknown (not where CuPy is
    known to refuse it: that is CuPy's own TypeError). The suite reports a test ending in it as
    skipped with this reason (tests/conftest.py), since only a GPU can decide it."""


def _bf16_refused(where):
    return BFloat16NotEstablished(f"{where}: bfloat16 is refused: CuPy {VERSION}'s kernel for it could not be "
                     f"introspected without a GPU, so whether it takes bfloat16 is not "
                     f"established (CuPy conformance device, stricter than CuPy may be)")


def _is_bf16(x):
    dtype = getattr(x, "dtype", None)
    return type(dtype) is type(_BF16) and dtype == _BF16


def _char_dtype(char, _cache={}):
    # "E" is bfloat16's type character; NumPy knows it only through ml_dtypes' dtype.
    dtype = _cache.get(char)
    if dtype is None:
        dtype = _cache[char] = _BF16 if char == "E" else np.dtype(char)
    return dtype


def _scalar_fits(value, char):
    """CuPy weighs a Python scalar by its kind only: a float needs a float or complex loop."""
    if value is None:  # clip's open bound
        return True
    kind = "f" if char == "E" else _char_dtype(char).kind  # ml_dtypes' own kind is "V"
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return kind in "iufc"
    if isinstance(value, float):
        return kind in "fc"
    if isinstance(value, complex):
        return kind == "c"
    return np.can_cast(np.asarray(value).dtype, _char_dtype(char))


def _select_loop(kernel, types, operands):
    """The loop CuPy's type resolution picks: the first whose inputs every array operand casts
    to safely (NumPy's can_cast, as CuPy uses it)."""
    for loop in types:
        ins, outs = loop.split("->")
        if len(ins) != len(operands):
            continue
        if all(_scalar_fits(x, c) if not hasattr(x, "dtype")
               else np.can_cast(x.dtype, _char_dtype(c)) for x, c in zip(operands, ins)):
            return ins, outs
    raise _wrong_type(kernel, [getattr(x, "dtype", type(x)) for x in operands])


def _compute_dtype(char):
    # CuPy's bfloat16 loops convert to float, compute, and round back.
    return np.dtype(np.float32) if char == "E" else _char_dtype(char)


def _bf16_ufunc(kernel, types, impl, operands, kwargs):
    ins, outs = _select_loop(kernel, types, operands)
    cast = [x.astype(_compute_dtype(c)) if hasattr(x, "dtype") else x
            for x, c in zip(operands, ins)]
    out = kwargs.pop("out", None)
    kwargs.pop("dtype", None)
    result = impl(*cast, **kwargs)
    results = result if isinstance(result, tuple) else (result,)
    results = tuple(np.asarray(r).astype(_char_dtype(c), copy=False)
                    for r, c in zip(results, outs))
    if out is not None:
        targets = out if isinstance(out, tuple) else (out,)
        for target, r in zip(targets, results):
            target[...] = r
        return out
    return results if isinstance(result, tuple) else results[0]


def _bf16_reduction(kernel, impl, array, args, kwargs):
    """A reduction kernel on a bfloat16 array: its "E" loop accumulates in float32 and rounds
    back; without one, the first loop bfloat16 casts to safely computes."""
    chars = _REDUCTION_KERNELS.get(kernel)
    if chars is None:
        raise _bf16_refused(kernel)
    if kwargs.get("dtype") is not None or kwargs.get("out") is not None:
        raise _bf16_refused(f"{kernel} with dtype= or out= on bfloat16")
    if "E" in chars:
        result = np.asarray(impl(array.astype(np.float32), *args, **kwargs))
        return result.astype(_BF16) if result.dtype.kind == "f" else result
    for c in _LOOP_ORDER:
        if c in chars and np.can_cast(_BF16, _char_dtype(c)):
            return impl(array.astype(_char_dtype(c)), *args, **kwargs)
    raise _wrong_type(kernel, [array.dtype])


def _host_error(where):
    return TypeError(f"{where}: a host numpy.ndarray was passed to CuPy {VERSION}, which takes "
                     f"cupy.ndarray (CuPy conformance device): use xp.asarray to copy it over")


def _wrap(result):
    t = type(result)
    if t is np.ndarray:
        if result.dtype not in _SUPPORTED_DTYPES:
            raise _dtype_error(result.dtype)
        if result.base is None and id(result) not in _rt._live:  # a new allocation
            _rt.track(result)
        return DeviceArray(result)
    if isinstance(result, np.generic):  # CuPy returns 0-d arrays where NumPy returns scalars
        if result.dtype not in _SUPPORTED_DTYPES:
            raise _dtype_error(result.dtype)
        result = np.asarray(result)
        _rt.track(result)
        return DeviceArray(result)
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


def _any_bf16(args, kwargs):
    for a in args:
        if _is_bf16(a) or (type(a) in (list, tuple) and any(_is_bf16(v) for v in a)):
            return True
    if kwargs:
        dtype = kwargs.get("dtype")
        if dtype is not None and not isinstance(dtype, str) and np.dtype(dtype) == _BF16:
            return True
        return any(_is_bf16(v) for v in kwargs.values())
    return False


def _bf16_handler(where, name, impl):
    """How a function or method treats bfloat16 operands: None to compute as for any dtype,
    else a function of (args, kwargs) that picks CuPy's loop or refuses."""
    if name in _KERNEL_OF:
        kernel = _KERNEL_OF[name]
        return lambda args, kwargs: _bf16_reduction(kernel, impl, args[0], args[1:], kwargs)
    if name in ("arange", "linspace"):
        # cupy_arange has a bfloat16 loop; linspace computes in float64 and casts.
        def fill(args, kwargs):
            dtype = kwargs.pop("dtype", None)
            return impl(*args, dtype=np.float64, **kwargs).astype(
                _BF16 if dtype is None else dtype)
        return fill
    if name in ("tril", "triu") and "cupy_where" in _UFUNC_KERNELS:
        # CuPy's tril/triu are cupy.where(mask, m, m.dtype.type(0)) (cupy/_creation/matrix.py):
        # the where kernel's loops decide the result's dtype.
        types = _UFUNC_KERNELS["cupy_where"]

        def through_where(args, kwargs):
            m, k = args[0], (args[1] if len(args) > 1 else kwargs.get("k", 0))
            rows, cols = m.shape[-2:]
            mask = np.tri(rows, cols, k=k, dtype=bool)
            if name == "triu":
                mask = ~np.tri(rows, cols, k=k - 1, dtype=bool)
            return _bf16_ufunc("cupy_where", types, np.where, [mask, m, m.dtype.type(0)], {})
        return through_where
    if name == "pad":
        def pad(args, kwargs):
            mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
            if not isinstance(mode, str) or mode not in _PAD_COPY_MODES:
                raise _bf16_refused(f"{where}(mode={mode!r})")
            return impl(*args, **kwargs)
        return pad
    if name in _UFUNC_OF and _UFUNC_OF[name] in _UFUNC_KERNELS:
        kernel = _UFUNC_OF[name]
        types = _UFUNC_KERNELS[kernel]
        nin = len(types[0].split("->")[0])

        def through_kernel(args, kwargs):
            if len(args) != nin:  # where(condition) is nonzero: an index kernel
                return impl(*args, **kwargs)
            return _bf16_ufunc(kernel, types, impl, list(args), dict(kwargs))
        return through_kernel
    if name in _LAYOUT_ONLY:
        return None

    def refuse(args, kwargs):
        raise _bf16_refused(where)
    return refuse


def _function(where, record, impl, host_ok=False):
    check = _checker(where, record)
    bf16 = _bf16_handler(where, where.rsplit(".", 1)[1], impl)

    @functools.wraps(impl)
    def call(*args, **kwargs):
        check(args, kwargs)
        host = host_ok and args and type(args[0]) is np.ndarray
        args = [a._a if type(a) is DeviceArray else _unwrap(a, where, host_ok) for a in args]
        if kwargs:
            kwargs = {k: _unwrap(v, where, host_ok) for k, v in kwargs.items()}
        if bf16 is not None and _any_bf16(args, kwargs):
            def run():
                return bf16(list(args), dict(kwargs))
        else:
            def run():
                return impl(*args, **kwargs)
        raw = run()
        if host and type(raw) is np.ndarray and np.may_share_memory(raw, args[0]):
            raw = raw.copy()  # a host array's data is copied to the device, never aliased
        result = _wrap(raw)
        if _capturing:
            _rt.record_call(run, result)
        return result
    return call


class Ufunc:
    """A CuPy ufunc: __call__, plus the methods CuPy implements for this ufunc only."""

    def __init__(self, where, record, impl):
        self._where, self._record, self._impl = where, record, impl
        self._check = _checker(where, record)
        self._methods = frozenset(record["methods"])
        self.__name__ = self.name = impl.__name__
        self.nin, self.nout = record["nin"], record["nout"]
        self._kernel = ("cupy_" if where.startswith("cupy.") else "cupyx_scipy_special_") + \
            where.rsplit(".", 1)[1]

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
        operands = self._operands(args)
        impl = self._impl
        if any(_is_bf16(x) for x in operands) or (kwargs and _any_bf16((), kwargs)):
            kernel, types = self._kernel, self._record["types"]

            def run():
                return _bf16_ufunc(kernel, types, impl, operands, dict(kwargs))
        else:
            def run():
                return impl(*operands, **kwargs)
        result = _wrap(run())
        if _capturing:
            _rt.record_call(run, result)
        return result

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
        if _capturing:
            _rt.record_call(lambda: impl(*args), None)


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


def _binary(op, ufunc, reflected=False):
    def method(self, other):
        value = _operand(other)
        if value is NotImplemented:
            return NotImplemented
        if _is_bf16(self._a) or _is_bf16(value):  # CuPy's operator is its ufunc: its loops
            return getattr(xp, ufunc)(*((other, self) if reflected else (self, other)))
        a = self._a
        result = _wrap(op(value, a) if reflected else op(a, value))
        if _capturing:
            _rt.record_call((lambda: op(value, a)) if reflected else (lambda: op(a, value)),
                            result)
        return result
    return method


def _inplace(op, ufunc):
    def method(self, other):
        value = _operand(other)
        if value is NotImplemented:
            return NotImplemented
        a = self._a
        if _is_bf16(a) or _is_bf16(value):
            def run():
                a[...] = getattr(xp, ufunc)(self, other)._a
        else:
            def run():
                op(a, value)
        run()
        if _capturing:
            _rt.record_call(run, None)
        return self
    return method


def _unary(op, ufunc):
    def method(self):
        if _is_bf16(self._a):
            return getattr(xp, ufunc)(self)
        a = self._a
        result = _wrap(op(a))
        if _capturing:
            _rt.record_call(lambda: op(a), result)
        return result
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
        if _capturing:
            _rt.refuse_host_sync()
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order)

    def set(self, arr, stream=None):
        if type(arr) is not np.ndarray:
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        self._a[...] = arr

    def item(self, *args):
        if _capturing:
            _rt.refuse_host_sync()
        return self._a.item(*args)

    def tolist(self):
        if _capturing:
            _rt.refuse_host_sync()
        return self._a.tolist()

    def __float__(self):
        if _capturing:
            _rt.refuse_host_sync()
        return float(self._a)

    def __int__(self):
        if _capturing:
            _rt.refuse_host_sync()
        return int(self._a)

    def __bool__(self):
        if _capturing:
            _rt.refuse_host_sync()
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
        return _wrap(self._a.copy())

    def __deepcopy__(self, memo):
        return _wrap(self._a.copy())

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
            key = (key if type(key) is tuple else (key,)) + (Ellipsis,)
            result = self._a[key]
        result = _wrap(result)
        if _capturing:
            a = self._a
            _rt.record_call(lambda: a[key], result)
        return result

    def __setitem__(self, key, value):
        a, key, value = self._a, _index(key), _unwrap(value, "cupy.ndarray.__setitem__")
        a[key] = value
        if _capturing:
            def run():
                a[key] = value
            _rt.record_call(run, None)

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
    bf16 = _bf16_handler(where, name, impl)

    def method(self, *args, **kwargs):
        check(args, kwargs)
        if args:
            args = [a._a if type(a) is DeviceArray else _unwrap(a, where) for a in args]
        if kwargs:
            kwargs = {k: _unwrap(v, where) for k, v in kwargs.items()}
        a = self._a
        if bf16 is not None and (_is_bf16(a) or _any_bf16(args, kwargs)):
            def run():
                return bf16([a, *args], dict(kwargs))
        else:
            def run():
                return impl(a, *args, **kwargs)
        result = _wrap(run())
        if _capturing:
            _rt.record_call(run, result)
        return result
    method.__name__ = name
    return method


def _install_ndarray_api():
    ops = {
        "add": (operator.add, "add"), "sub": (operator.sub, "subtract"),
        "mul": (operator.mul, "multiply"), "truediv": (operator.truediv, "true_divide"),
        "floordiv": (operator.floordiv, "floor_divide"), "mod": (operator.mod, "remainder"),
        "pow": (operator.pow, "power"), "matmul": (operator.matmul, "matmul"),
        "and": (operator.and_, "bitwise_and"), "or": (operator.or_, "bitwise_or"),
        "xor": (operator.xor, "bitwise_xor"), "lshift": (operator.lshift, "left_shift"),
        "rshift": (operator.rshift, "right_shift"), "divmod": (divmod, "divmod"),
    }
    for short, (op, ufunc) in ops.items():
        setattr(DeviceArray, f"__{short}__", _binary(op, ufunc))
        setattr(DeviceArray, f"__r{short}__", _binary(op, ufunc, reflected=True))
        inplace = getattr(operator, f"i{short}", None)
        if inplace is not None and f"__i{short}__" in _NDARRAY:  # CuPy has no __imatmul__
            setattr(DeviceArray, f"__i{short}__", _inplace(inplace, ufunc))
    for short, op in {"lt": operator.lt, "le": operator.le, "gt": operator.gt,
                      "ge": operator.ge, "eq": operator.eq, "ne": operator.ne}.items():
        ufunc = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                 "eq": "equal", "ne": "not_equal"}[short]
        setattr(DeviceArray, f"__{short}__", _binary(op, ufunc))
    for short, op in {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
                      "invert": operator.invert}.items():
        ufunc = {"neg": "negative", "pos": "positive", "abs": "absolute",
                 "invert": "invert"}[short]
        setattr(DeviceArray, f"__{short}__", _unary(op, ufunc))
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


def _device_copy(name):
    impl = getattr(np, name)

    def copy(*args, blocking=False, **kwargs):  # CuPy's keyword; every copy here is finished
        return impl(*args, **kwargs)
    copy.__name__ = name
    return copy


def _asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if _capturing:
        _rt.refuse_host_sync()
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


from . import strict_cuda_runtime as _rt  # noqa: E402 - it builds on DeviceArray above

_capturing = _rt._capturing  # the same list: a call checks it with one global lookup


class _ComputeTypes:
    """``cupy._core``'s cuBLAS compute types per dtype (TF32 for float32...): recorded and
    answered; the conformance device's products always compute in NumPy's precision."""

    def __init__(self):
        self._types = {}
        self._routines_linalg = Namespace("cupy._core._routines_linalg", None, extras={
            n: SPEC_CONSTANT for n, SPEC_CONSTANT in _COMPUTE_CONSTANTS.items()})

    @staticmethod
    def _index(dtype):
        char = np.dtype(dtype).char
        if char not in "efdFD":
            raise TypeError(f"dtype is not supported: {np.dtype(dtype)}")
        return {"e": 0, "f": 1, "F": 1, "d": 2, "D": 2}[char]

    def set_compute_type(self, dtype, compute_type):
        if compute_type not in _COMPUTE_CONSTANTS.values():
            raise ValueError(f"Unknown compute type: {compute_type}")
        self._types[self._index(dtype)] = compute_type

    def get_compute_type(self, dtype):
        return self._types.get(self._index(dtype), _COMPUTE_CONSTANTS["COMPUTE_TYPE_DEFAULT"])


# The constants' values are not in the spec (it records kinds): CuPy's enum, as cupy/_core/
# _routines_linalg.pxd declares it, is checked against the names the spec lists.
_COMPUTE_CONSTANTS = {"COMPUTE_TYPE_TBD": 0, "COMPUTE_TYPE_DEFAULT": 1,
                      "COMPUTE_TYPE_PEDANTIC": 2, "COMPUTE_TYPE_FP16": 3, "COMPUTE_TYPE_FP32": 4,
                      "COMPUTE_TYPE_FP64": 5, "COMPUTE_TYPE_BF16": 6, "COMPUTE_TYPE_TF32": 7}
assert set(_COMPUTE_CONSTANTS) == {n for n in SPEC["modules"]["cupy._core._routines_linalg"]
                                   if n.startswith("COMPUTE_TYPE_")}

xp = Namespace("cupy", np, extras={"asnumpy": _asnumpy, "ndarray": DeviceArray, "cuda": _rt.cuda,
                                   "get_array_module": lambda *args: xp,
                                   "get_default_memory_pool": _rt.get_default_memory_pool,
                                   "get_default_pinned_memory_pool":
                                       _rt.get_default_pinned_memory_pool,
                                   "array": _device_copy("array"),
                                   "asarray": _device_copy("asarray")})
xp.linalg = Namespace("cupy.linalg", np.linalg)
xp.fft = Namespace("cupy.fft", np.fft)
xp.random = _rt.random
xp._core = _ComputeTypes()


class _Lib:
    stride_tricks = Namespace("cupy.lib.stride_tricks", np.lib.stride_tricks)


xp.lib = _Lib()
cupyx = Namespace("cupyx", np, extras={"scatter_add": _scatter_add, "scatter_max": _scatter_max,
                                       "scatter_min": _scatter_min,
                                       "empty_pinned": _rt.empty_pinned,
                                       "zeros_pinned": _rt.zeros_pinned,
                                       "empty_like_pinned": _rt.empty_like_pinned,
                                       "zeros_like_pinned": _rt.zeros_like_pinned})
cupyx.scipy = _Lazy()
_NAMESPACES = {"cupy": xp, "cupy.linalg": xp.linalg, "cupy.fft": xp.fft}
