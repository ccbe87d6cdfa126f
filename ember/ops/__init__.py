"""Ember's ops, by family. Importing this package also attaches them to ``Tensor`` as methods
and operators (``t.exp()``, ``a + b``, ``t.add_(x)``), so one definition serves ``ember.exp``,
``Tensor.exp`` and (later) ``nn.functional``."""
# Every family declares, next to its ops: ``__all__`` (the ops it adds to ``ember``),
# ``METHODS`` (those that are also ``Tensor`` methods, the same function: ``Tensor.mul is
# ember.ops.elementwise.mul``) and ``INPLACE`` (those whose ``name_`` method writes into self).
# So adding an op touches its family's file and its test row; nothing here. No two families
# export one name (tests/test_op_registration.py holds the tree to these rules).
from .elementwise import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .matmul import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .inplace import *  # noqa: F401,F403
from .inplace import inplace, write_result as _write_result, UFUNC_OF as _UFUNC_OF
from . import creation, indexing
from . import shape as _shape_ops
from .._tensor import Tensor
from ._dispatch import ELIDE_MIN_BYTES as _ELIDE_MIN_BYTES, reuse_temporary as _reuse_temporary
from ._dispatch import accept_numpy_keywords as _accept_numpy_keywords
import importlib as _importlib
import sys as _sys


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
    method.__qualname__ = "Tensor." + method.__name__
    method.__module__ = fn.__module__
    return method


def _bind_methods(family):
    for name in getattr(family, "METHODS", ()):
        setattr(Tensor, name, getattr(family, name))
    for name in getattr(family, "INPLACE", ()):
        setattr(Tensor, name + "_", _make_inplace(getattr(family, name)))


# Every family. Imported by name: a family's own op shadows its module's name in this
# namespace (``matmul``, ``inplace``, ``complex``).
_FAMILIES = ("elementwise", "reduce", "shape", "indexing", "matmul", "creation", "activation",
             "normalization", "dropout", "inplace", "sorting", "special", "spectral", "complex",
             "cumulative", "linalg", "quantized")
for _family_name in _FAMILIES:
    # The catalogue families (sorting onwards) are not star-imported above: they are imported
    # here, after the core methods are bound (their module-level code may use them). For the
    # core families this re-binds the names the star imports bound.
    _family = _importlib.import_module(f"{__name__}.{_family_name}")
    for _name in _family.__all__:
        globals()[_name] = getattr(_family, _name)
    _bind_methods(_family)

_UFUNC_OF.update({add: "add", sub: "subtract", mul: "multiply", div: "true_divide",
                  true_divide: "true_divide", multiply: "multiply", subtract: "subtract"})

# ---- Tensor methods whose name or signature differs from the op's ---------------------------
for _name, _dtype in creation.CAST_METHODS.items():
    setattr(Tensor, _name, creation._caster(_dtype))
Tensor.type = creation.type_
Tensor.where = lambda self, condition, other: where(condition, self, other)


def _split_method(self, split_size, dim=0):
    # torch's method names its size argument ``split_size``; torch.split says
    # ``split_size_or_sections``.
    return split(self, split_size, dim)


Tensor.split = _split_method


def _quantized_list_dispatch(shape_fn, kernel_name):
    # Quantized tensors (whose dtypes have no promotion) are joined by their own kernel; the
    # try costs the float path nothing, the frame a few tens of ns.
    import functools
    from .._quantized_tensor import QuantizedTensor
    from ..ops import quantized
    kernel = getattr(quantized, kernel_name)

    @functools.wraps(shape_fn)
    def join(tensors, dim=0, *, out=None):
        try:
            return shape_fn(tensors, dim, out=out)
        except RuntimeError:
            if (isinstance(tensors, (list, tuple)) and tensors
                    and isinstance(tensors[0], QuantizedTensor)):
                return kernel(list(tensors), dim, out=out)
            raise
    return join


cat = concat = concatenate = _quantized_list_dispatch(cat, "quantized_cat")
stack = _quantized_list_dispatch(stack, "q_stack")
# hstack, vstack, dstack... call shape.py's cat: quantized tensors join there too
_shape_ops.cat, _shape_ops.stack = cat, stack


def _quantized_method_dispatch():
    # ember.X(q, ...) of a quantized q runs its kernel, bound as the method q.X, as torch's
    # dispatcher picks the QuantizedCPU kernel of torch.X. The float path pays a frame and a
    # type check (0.1-0.2 us); the ops that already check their input's dtype (relu, sigmoid,
    # tanh, mean, cat, stack) are not wrapped.
    import functools
    from .._quantized_tensor import QuantizedTensor, SHAPE_METHODS
    from . import quantized
    names = ({*SHAPE_METHODS, *quantized.QUANTIZED_METHODS, *quantized.INTEGER_METHODS}
             - {"relu", "sigmoid", "tanh", "mean"})
    module = globals()

    def dispatching(fn, method):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if args:
                if type(args[0]) is QuantizedTensor:
                    return method(*args, **kwargs)
            elif type(kwargs.get("input")) is QuantizedTensor:
                kwargs = dict(kwargs)
                return method(kwargs.pop("input"), **kwargs)
            return fn(*args, **kwargs)  # NumPy's names (x1=, axis=) reach fn's own wrapper
        op.__quantized_dispatch__ = True  # (inspect.unwrap reaches the op through __wrapped__)
        return op

    for name in sorted(names):
        fn = module.get(name)
        if name.startswith("_") or not callable(fn) or isinstance(fn, type):
            continue
        module[name] = dispatching(fn, getattr(QuantizedTensor, name))


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
# (H and mH, the conjugate forms, are complex.py's.)


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
_quantized_method_dispatch()  # around the NumPy-keyword wrappers


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


# ---- what ``from ember.ops import *`` (ember/__init__.py) exports: the families' ``__all__`` --
# Not the family modules (``ember.linalg`` and ``ember.special`` are torch's namespaces, not
# ``ops.linalg``), nor the Tensor-only methods and backward nodes, which torch keeps off its
# namespace. (No family exports a module or a name another exports: test_op_registration.)
__all__ = [_name for _family_name in _FAMILIES
           for _name in _sys.modules[f"{__name__}.{_family_name}"].__all__]


def __getattr__(name):
    # ember.ops.<namespace>.<op> is torch.ops.<namespace>.<op>: the operators defined with
    # ember.library (custom_op, define); ember.ops.aten.<name> names Ember's own ops.
    if not name.startswith("_"):
        from ..library._custom_ops import op_namespace
        namespace = op_namespace(name)
        if namespace is not None:
            return namespace
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
