"""Ember's dtypes and PyTorch's type-promotion rules.

A ``dtype`` wraps the NumPy dtype that backends store it as (``ml_dtypes`` supplies bfloat16).
Promotion follows ``c10/core/ScalarType.h``: categories bool < integer < floating < complex,
and in ``result_type`` Python scalars and 0-d tensors only raise the category, never the width
("weak types").
"""
import numpy as np
import ml_dtypes

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "complex64", "cfloat", "complex128", "cdouble", "int8", "uint8", "int16", "short",
    "int32", "int", "int64", "long", "bool", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type", "can_cast", "qint8", "quint8", "qint32",
]


class dtype:
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "_kind", "_rank", "__weakref__")

    def __init__(self, name, np_dtype, kind, rank):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self._kind = kind  # 0 bool, 1 integer, 2 floating, 3 complex
        self._rank = rank  # width order inside a kind
        self.is_floating_point = kind == 2
        self.is_complex = kind == 3
        self.is_signed = name not in ("uint8", "bool", "quint8")

    def to_real(self):
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self):
        return {"float64": complex128}.get(self.name, complex64) if self._kind >= 2 else self

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


bool = dtype("bool", np.bool_, 0, 0)
uint8 = dtype("uint8", np.uint8, 1, 0)
int8 = dtype("int8", np.int8, 1, 0)
int16 = short = dtype("int16", np.int16, 1, 1)
int32 = int = dtype("int32", np.int32, 1, 2)
int64 = long = dtype("int64", np.int64, 1, 3)
float16 = half = dtype("float16", np.float16, 2, 0)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2, 0)
float32 = float = dtype("float32", np.float32, 2, 1)
float64 = double = dtype("float64", np.float64, 2, 2)
complex64 = cfloat = dtype("complex64", np.complex64, 3, 1)
complex128 = cdouble = dtype("complex128", np.complex128, 3, 2)

# The quantized dtypes (kind 4): a quantized tensor (ember/_quantized_tensor.py) stores its
# integer representation as the NumPy type named here. They take part in no promotion and are
# never inferred from a NumPy array, so they stay out of ``_ALL`` and ``_BY_NP``.
qint8 = dtype("qint8", np.int8, 4, 0)
quint8 = dtype("quint8", np.uint8, 4, 0)
qint32 = dtype("qint32", np.int32, 4, 2)
QUANTIZED = (qint8, quint8, qint32)
# the plain integer dtype each quantized dtype's int_repr() has
INT_REPR_DTYPE = {qint8: int8, quint8: uint8, qint32: int32}

_ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
        complex64, complex128)
_BY_NAME = {d.name: d for d in _ALL + QUANTIZED}
_BY_NP = {d.np: d for d in _ALL}


def _dtype_by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The Ember dtype stored as ``np_dtype``; TypeError for dtypes Ember has no equivalent of."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        pass
    np_dtype = np.dtype(np_dtype)
    if np_dtype in _BY_NP:
        return _BY_NP[np_dtype]
    if np_dtype.kind == "U" or np_dtype.kind == "O" or np_dtype.kind == "S":
        raise TypeError(f"can't convert np.ndarray of type numpy.{np_dtype}. The only supported types "
                        "are: float64, float32, float16, bfloat16, complex64, complex128, int64, "
                        "int32, int16, int8, uint8, and bool.")
    # Remaining NumPy-only widths (uint16/32/64, longdouble) map to the nearest PyTorch dtype.
    mapping = {"u": int64, "f": float64, "c": complex128, "i": int64}
    return mapping[np_dtype.kind]


def _promote_pair(a, b):
    if a is b:
        return a
    if a._kind != b._kind:
        lo, hi = (a, b) if a._kind < b._kind else (b, a)
        if hi._kind == 3 and lo._kind == 2 and lo is float64:
            return complex128
        return hi
    kind = a._kind
    if kind == 1:
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    if kind == 2 and a._rank == b._rank == 0:  # float16 with bfloat16
        return float32
    return a if a._rank > b._rank else b


_PROMOTE = {(a, b): _promote_pair(a, b) for a in _ALL for b in _ALL}


def promote_types(type1, type2):
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing range."""
    try:
        return _PROMOTE[(type1, type2)]
    except KeyError:
        if type1 in QUANTIZED or type2 in QUANTIZED:
            raise RuntimeError(
                "promoteTypes with quantized numbers is not handled yet; figure out what the "
                f"correct rules should be, offending types: {SCALAR_TYPE_NAMES[type1.name]} "
                f"{SCALAR_TYPE_NAMES[type2.name]}") from None
        raise


_default_dtype = float32


def get_default_dtype():
    return _default_dtype


def set_default_dtype(d):
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_dtype = d


def default_complex_dtype():
    return complex128 if _default_dtype is float64 else complex64


def scalar_dtype(value):
    """The dtype a Python scalar gets when it becomes a tensor on its own (``ember.tensor(3.)``)."""
    t = type(value)
    if t is builtins_bool or isinstance(value, (builtins_bool, np.bool_)):
        return bool
    if isinstance(value, (builtins_int, np.integer)):
        return int64
    if isinstance(value, (builtins_float, np.floating)):
        return _default_dtype
    if isinstance(value, complex):
        return default_complex_dtype()
    raise TypeError(f"expected a number, got {type(value).__name__}")


import builtins as _builtins  # noqa: E402  (dtype names above shadow the builtins)
builtins_bool, builtins_int, builtins_float = _builtins.bool, _builtins.int, _builtins.float

# torch reads Python's scalar types as dtypes, each as its widest kind: dtype=float is float64.
_PYTHON_TYPE_DTYPES = {builtins_bool: bool, builtins_int: int64, builtins_float: float64,
                       complex: complex128}


# c10's ScalarType names, which PyTorch's messages print for a dtype ("Float", "Long"); its
# legacy tensor and storage classes are named from them ("FloatTensor", "LongStorage").
SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                     "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                     "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                     "complex128": "ComplexDouble", "qint8": "QInt8", "quint8": "QUInt8",
                     "qint32": "QInt32"}

# The C++ type names (caffe2::TypeMeta) that PyTorch's messages print for a dtype.
TYPE_META_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                   "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
                   "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                   "bool": "bool", "complex64": "c10::complex<float>",
                   "complex128": "c10::complex<double>", "qint8": "c10::qint8",
                   "quint8": "c10::quint8", "qint32": "c10::qint32"}


def check_dtype(value, fn_name):
    """A ``dtype=`` argument as an Ember dtype (None stays None). Strings, NumPy types and ints
    raise PyTorch's TypeError instead of failing later inside the op."""
    if value is None or value.__class__ is dtype:
        return value
    if isinstance(value, type) and value in _PYTHON_TYPE_DTYPES:
        return _PYTHON_TYPE_DTYPES[value]
    raise TypeError(f"{fn_name}(): argument 'dtype' must be ember.dtype, not "
                    f"{type(value).__name__}")


def _combine(higher, lower):
    # c10's combine_categories: a lower-priority operand only matters if it lifts the category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._kind == 3:
        return higher
    if lower._kind == 3:
        return higher.to_complex() if higher._kind == 2 else lower
    if higher._kind == 2:
        return higher
    if higher is bool or lower._kind == 2:
        return _PROMOTE[(higher, lower)]
    return higher


def result_type(*operands):
    """PyTorch's ``result_type`` over tensors and Python scalars.

    Tensors with dimensions decide the width; 0-d tensors and then Python scalars only count when
    they belong to a higher category (``int8 tensor + 2.5`` gives the default float dtype)."""
    dim_result = zero_result = wrapped_result = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype) and hasattr(x, "_data"):
            if x.ndim:
                dim_result = d if dim_result is None else _PROMOTE[(dim_result, d)]
            else:
                zero_result = d if zero_result is None else _PROMOTE[(zero_result, d)]
        else:
            d = scalar_dtype(x)
            wrapped_result = d if wrapped_result is None else _PROMOTE[(wrapped_result, d)]
    return _combine(dim_result, _combine(zero_result, wrapped_result))


def largest_finite(d):
    """The largest finite value of floating dtype ``d`` (``finfo(d).max``)."""
    return _builtins.float(ml_dtypes.finfo(d.np).max)


def can_cast(from_, to):
    """Whether ``from_`` may be cast to ``to`` under PyTorch's same-kind rule."""
    return from_._kind <= to._kind
