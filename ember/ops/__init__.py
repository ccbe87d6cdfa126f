"""Ember's ops, by family. Importing this package also attaches them to ``Tensor`` as methods
and operators (``t.exp()``, ``a + b``, ``t.add_(x)``), so one definition serves ``ember.exp``,
``Tensor.exp`` and (later) ``nn.functional``."""
from .elementwise import *  # noqa: F401,F403
from .elementwise import _UNARY
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .matmul import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import dropout_, alpha_dropout_, feature_alpha_dropout_
from .inplace import copy_, fill_, zero_, inplace, write_result as _write_result, UFUNC_OF as _UFUNC_OF
from . import elementwise, reduce, shape, indexing, matmul, creation
from .._tensor import Tensor
from ._dispatch import ELIDE_MIN_BYTES as _ELIDE_MIN_BYTES, reuse_temporary as _reuse_temporary
from ._dispatch import accept_numpy_keywords as _accept_numpy_keywords
import sys as _sys

# ---- methods that are the same function as the module-level op ------------------------------
_METHODS = [
    # elementwise
    "add", "sub", "mul", "div", "true_divide", "divide", "multiply", "subtract", "floor_divide",
    "remainder", "fmod", "pow", "float_power", "atan2", "arctan2", "hypot", "maximum", "minimum",
    "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
    "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
    "isclose", "allclose", "equal", "negative", "absolute", "arcsin", "arccos", "arctan",
    "arcsinh", "arccosh", "arctanh", "fix", "positive", "round", "logit", "clamp", "clip",
    "clamp_min", "clamp_max", "lerp", "nan_to_num", "xlogy", "square", "copysign", "logaddexp",
    "logaddexp2", "sgn", "heaviside", "deg2rad", "rad2deg", "gcd", "lcm", "nextafter", "ldexp",
    "frexp", "float_power_", "addcmul", "addcdiv", "isreal",
    *_UNARY,
    # reductions
    "sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "max", "min", "argmax", "argmin",
    "var", "std", "norm", "logsumexp", "all", "any", "count_nonzero", "cumsum", "cumprod",
    "softmax", "log_softmax", "aminmax", "cov", "corrcoef",
    # shape
    "view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
    "permute", "transpose", "swapaxes", "swapdims", "t", "adjoint", "movedim", "moveaxis",
    "expand", "expand_as", "broadcast_to", "sum_to_size", "narrow", "select", "diagonal",
    "unbind", "split", "tensor_split", "chunk", "hsplit", "vsplit", "clone", "contiguous",
    "flip", "fliplr", "flipud", "roll", "repeat", "tile", "repeat_interleave", "tril", "triu",
    "diag", "diag_embed", "diagflat", "rot90", "ravel", "split_with_sizes", "unsafe_chunk",
    "unsafe_split", "unsafe_split_with_sizes", "dsplit", "resize_", "resize_as_", "resize",
    "resize_as", "t_", "transpose_", "swapaxes_", "swapdims_", "squeeze_", "unsqueeze_",
    "as_strided_",
    # indexing
    "gather", "scatter", "scatter_add", "index_select", "index_add", "index_put", "index_put_",
    "masked_fill", "masked_select", "take_along_dim", "take", "nonzero", "argwhere", "sort",
    "argsort", "msort", "topk", "scatter_reduce", "index_fill", "index_copy", "put",
    "masked_scatter", "index_reduce", "fill_diagonal_",
    # matrix products
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv",
    "baddbmm", "addbmm", "kron", "addr",
    # creation / conversion
    "new", "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full", "to", "cpu", "cuda",
    "bernoulli", "multinomial", "new_empty_strided", "type_as", "as_subclass",
    "uniform_", "normal_", "bernoulli_", "exponential_", "random_", "geometric_", "log_normal_",
    "cauchy_", "copy_", "fill_", "zero_",
    # activations
    "relu",
]
for _name in _METHODS:
    setattr(Tensor, _name, globals()[_name])
for _name, _dtype in creation.CAST_METHODS.items():
    setattr(Tensor, _name, creation._caster(_dtype))
Tensor.type = creation.type_
# Tensor methods only: torch.hardshrink and torch.prelu are the ATen forms (_functional_exports.py)
Tensor.hardshrink = activation.hardshrink  # noqa: F405 (the module, bound by its import above)
Tensor.prelu = activation.prelu  # noqa: F405
Tensor.where = lambda self, condition, other: where(condition, self, other)


def _split_method(self, split_size, dim=0):
    # torch's method names its size argument ``split_size``; torch.split says
    # ``split_size_or_sections``.
    return split(self, split_size, dim)


Tensor.split = _split_method
Tensor.__getitem__ = indexing.getitem
Tensor.__setitem__ = indexing.setitem


@property
def _T(self):
    return self.permute(tuple(range(self.ndim - 1, -1, -1)))


@property
def _mT(self):
    if self.ndim == 0:
        import warnings
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                      "these cases.", UserWarning, stacklevel=2)
        return self.permute(())
    if self.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return self.transpose(-2, -1)


Tensor.T = _T
Tensor.mT = _mT
Tensor.H = _T
Tensor.mH = _mT


# ---- in-place variants: one generic wrapper per out-of-place op ---------------------------------
# NumPy's keyword names (``axis=``) for the ops that take a dim, as torch accepts them.
def _takes_dim(fn):
    code = getattr(fn, "__code__", None)
    return code is not None and not {"dim", "keepdim"}.isdisjoint(
        code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])


_with_numpy_keywords = {}


def _numpy_keywords(fn):
    if fn not in _with_numpy_keywords:
        _with_numpy_keywords[fn] = _accept_numpy_keywords(fn)
    return _with_numpy_keywords[fn]


def _make_inplace(fn):
    if _takes_dim(fn):
        fn = _numpy_keywords(fn)

    def method(self, *args, **kwargs):
        return inplace(self, fn, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    return method


_INPLACE = [
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
    "atan2", "hypot", "clamp", "clip", "clamp_min", "clamp_max", "lerp", "nan_to_num", "round",
    "logit", "neg", "abs", "square", "frac", "sign", "floor", "ceil", "trunc",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "masked_fill", "scatter", "scatter_add", "index_add",
    "tril", "triu", "cumsum", "cumprod", "eq", "ne", "lt", "le", "gt", "ge", "negative",
    "multiply", "subtract", "divide", "xlogy", "relu",
    "addbmm", "addmm", "addmv", "baddbmm", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctanh", "arctan2", "bitwise_left_shift", "bitwise_right_shift", "fix", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "copysign", "sgn", "heaviside",
    "deg2rad", "rad2deg", "gcd", "lcm", "nextafter", "ldexp", "scatter_reduce", "index_fill",
    "index_copy", "put", "masked_scatter", "addcmul", "addcdiv", "addr", "index_reduce",
    *[n for n in _UNARY if n not in ("neg", "abs", "square", "frac", "sign", "floor", "ceil", "trunc")],
]
for _name in _INPLACE:
    setattr(Tensor, _name + "_", _make_inplace(globals()[_name]))
_UFUNC_OF.update({add: "add", sub: "subtract", mul: "multiply", div: "true_divide",
                              true_divide: "true_divide", multiply: "multiply",
                              subtract: "subtract"})


# ---- op families added by the op catalogue ---------------------------------------------------
# Each file lists the Tensor methods it provides in ``METHODS`` and in-place variants in
# ``INPLACE`` (bound here as ``name_``).
import importlib as _importlib  # noqa: E402

for _family in ("sorting", "special", "spectral", "complex", "cumulative", "linalg"):
    _module = _importlib.import_module(f"{__name__}.{_family}")
    for _name in getattr(_module, "__all__", ()):
        globals()[_name] = getattr(_module, _name)
    for _name in getattr(_module, "METHODS", ()):
        setattr(Tensor, _name, getattr(_module, _name))
    for _name in getattr(_module, "INPLACE", ()):
        setattr(Tensor, _name + "_", _make_inplace(getattr(_module, _name)))


# ---- NumPy's keyword names: ``x.sum(axis=0, keepdims=True)`` --------------------------------
# torch accepts them on every op it binds natively; the ones that take a dim are wrapped here,
# once for ``ember.f`` and ``Tensor.f`` alike. Ops without a dim keep their direct call: the
# wrapper's frame would cost them 10% for the rarely used ``x=``/``x2=`` spellings. torch
# writes these in Python, without the aliases:
_PYTHON_LEVEL_IN_TORCH = {"norm", "split", "unique", "unique_consecutive", "stft", "istft"}


def _accept_numpy_keywords_in(namespace, python_level=frozenset()):
    """Give the public dim-taking functions of ``namespace`` (a module or a class) NumPy's
    keyword names; ember/__init__ does the same for ember.linalg, ember.special, ember.fft."""
    for name, fn in list(vars(namespace).items()):
        if (not name.startswith("_") and name not in python_level and callable(fn)
                and _takes_dim(fn)):
            setattr(namespace, name, _numpy_keywords(fn))


_accept_numpy_keywords_in(_sys.modules[__name__], _PYTHON_LEVEL_IN_TORCH)
_accept_numpy_keywords_in(Tensor, _PYTHON_LEVEL_IN_TORCH | {"unflatten"})


# ---- Python operators ------------------------------------------------------------------------
# The builtin ``complex``: the family loop above binds ``complex`` to the op (torch.complex).
import builtins as _builtins  # noqa: E402
_OPERAND_TYPES = (Tensor, int, float, bool, _builtins.complex)


def _reflect(fn):
    def method(self, other):
        return fn(other, self)
    return method


def _binary_operator(fn, ufunc_name=None):
    """``fn`` as an operator method; with ``ufunc_name``, a large temporary left operand lends
    its buffer to the result, as in NumPy (see ``_dispatch.reuse_temporary``)."""
    def method(self, other):
        if not isinstance(other, _OPERAND_TYPES) and not hasattr(other, "dtype"):
            return NotImplemented
        if ufunc_name is not None and self._data.nbytes >= _ELIDE_MIN_BYTES:
            result = _reuse_temporary(self, other, ufunc_name)
            if result is not None:
                return result
        return fn(self, other)
    return method


Tensor.__add__ = _binary_operator(add, "add")
Tensor.__radd__ = _binary_operator(add)
Tensor.__sub__ = _binary_operator(sub, "subtract")
Tensor.__rsub__ = lambda self, other: rsub(self, other)
Tensor.__mul__ = _binary_operator(mul, "multiply")
Tensor.__rmul__ = _binary_operator(mul)
Tensor.__truediv__ = _binary_operator(div, "true_divide")
Tensor.__rtruediv__ = lambda self, other: mul(reciprocal(self), other)  # as torch computes it
Tensor.__floordiv__ = _binary_operator(floor_divide)
Tensor.__rfloordiv__ = _reflect(floor_divide)
Tensor.__mod__ = _binary_operator(remainder)
Tensor.__rmod__ = _reflect(remainder)
Tensor.__pow__ = _binary_operator(pow)
Tensor.__rpow__ = lambda self, other: pow(other, self)
Tensor.__matmul__ = lambda self, other: matmul(self, other) if isinstance(other, Tensor) else NotImplemented
Tensor.__rmatmul__ = lambda self, other: matmul(other, self) if isinstance(other, Tensor) else NotImplemented
Tensor.__neg__ = neg  # noqa: F405
Tensor.__pos__ = positive
Tensor.__abs__ = abs  # noqa: F405
Tensor.__invert__ = elementwise._invert
Tensor.__and__ = _binary_operator(bitwise_and)
Tensor.__rand__ = _binary_operator(bitwise_and)
Tensor.__or__ = _binary_operator(bitwise_or)
Tensor.__ror__ = _binary_operator(bitwise_or)
Tensor.__xor__ = _binary_operator(bitwise_xor)
Tensor.__rxor__ = _binary_operator(bitwise_xor)
Tensor.__lshift__ = _binary_operator(bitwise_left_shift)
Tensor.__rshift__ = _binary_operator(bitwise_right_shift)
Tensor.__rlshift__ = _reflect(bitwise_left_shift)
Tensor.__rrshift__ = _reflect(bitwise_right_shift)
Tensor.__eq__ = _binary_operator(eq)
Tensor.__ne__ = _binary_operator(ne)
Tensor.__lt__ = _binary_operator(lt)
Tensor.__le__ = _binary_operator(le)
Tensor.__gt__ = _binary_operator(gt)
Tensor.__ge__ = _binary_operator(ge)
Tensor.__hash__ = lambda self: id(self)

for _op, _name in [("__iadd__", "add_"), ("__isub__", "sub_"), ("__imul__", "mul_"),
                   ("__itruediv__", "div_"), ("__ifloordiv__", "floor_divide_"),
                   ("__imod__", "remainder_"), ("__ipow__", "pow_"), ("__iand__", "bitwise_and_"),
                   ("__ior__", "bitwise_or_"), ("__ixor__", "bitwise_xor_")]:
    setattr(Tensor, _op, getattr(Tensor, _name))


def _imatmul(self, other):
    return _write_result(self, matmul(self, other))


Tensor.__imatmul__ = _imatmul


# ---- what ``from ember.ops import *`` (ember/__init__.py) exports: the ops --------------------
# Not the family modules (``ember.linalg`` and ``ember.dropout`` would be ``ops.linalg`` and
# ``ops.dropout``) and not the backward node classes, which torch keeps off its namespace.
def _exported(name, value):
    return not (name.startswith("_") or isinstance(value, type(_sys))
                or (isinstance(value, type) and issubclass(value, _Node)))


from ._dispatch import Node as _Node  # noqa: E402
__all__ = [_name for _name, _value in list(globals().items()) if _exported(_name, _value)]
