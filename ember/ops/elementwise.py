"""Element-wise ops: arithmetic, comparisons, logic and the unary maths functions.

Each op's forward (on backend arrays) and backward (in Ember ops, so it is differentiable again)
stand next to each other. The unary float functions are one table row each.

Binary ops take a Python scalar on either side. A scalar stays a Python number down to the
backend call: NumPy 2 treats it as weakly typed, as PyTorch treats a "wrapped number", so
``2.5 / half_tensor`` stays half.
"""
import math

from .. import _dtype as dt
from .._layout import strided as _STRIDED
from .. import return_types
from . import _dispatch
from ._dispatch import CompositeBackward, record_composite
from ..autograd import forward_ad as _forward_ad
from ._dispatch import (Tensor, Node, needs_grad, record, binary_operands, cast, _wrap,
                        as_tensor_on, to_float_dtype, dtype_name, device_mismatch)
from ._dispatch import check_same_device as _check_same_device
from ._dispatch import numpy_keyword_renames, rename_keywords
from .inplace import inplace as _inplace
from ..autograd.grad_mode import _state as _grad_state, no_grad
from ..amp import autocast_mode as _autocast

__all__ = ["add", "sub", "rsub", "mul", "div", "true_divide", "divide", "multiply", "subtract",
           "floor_divide", "remainder", "fmod", "pow", "float_power", "square", "atan2", "arctan2",
           "hypot", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge",
           "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_left_shift", "bitwise_right_shift", "bitwise_not", "isnan", "isinf",
           "isfinite", "isposinf", "isneginf", "signbit", "isclose", "allclose", "equal", "exp",
           "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "sin",
           "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
           "sigmoid", "erf", "erfc", "erfinv", "neg", "abs", "sign", "frac", "floor", "ceil",
           "trunc", "negative", "absolute", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
           "arctanh", "fix", "positive", "round", "logit", "clamp", "clip", "clamp_min",
           "clamp_max", "where", "lerp", "nan_to_num", "xlogy", "copysign", "logaddexp",
           "logaddexp2", "sgn", "heaviside", "deg2rad", "rad2deg", "gcd", "lcm", "nextafter",
           "ldexp", "frexp", "addcmul", "addcdiv", "fill", "isreal"]
METHODS = ["add", "sub", "mul", "div", "true_divide", "divide", "multiply", "subtract",
           "floor_divide", "remainder", "fmod", "pow", "float_power", "atan2", "arctan2", "hypot",
           "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "greater",
           "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or",
           "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
           "bitwise_left_shift", "bitwise_right_shift", "isnan", "isinf", "isfinite", "isposinf",
           "isneginf", "signbit", "isclose", "allclose", "equal", "negative", "absolute", "arcsin",
           "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "fix", "positive", "round",
           "logit", "clamp", "clip", "clamp_min", "clamp_max", "lerp", "nan_to_num", "xlogy",
           "square", "copysign", "logaddexp", "logaddexp2", "sgn", "heaviside", "deg2rad",
           "rad2deg", "gcd", "lcm", "nextafter", "ldexp", "frexp", "float_power_", "addcmul",
           "addcdiv", "isreal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
           "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
           "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "erfinv", "neg", "abs",
           "abs_", "absolute_", "sign", "frac", "floor", "ceil", "trunc"]
INPLACE = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
           "atan2", "hypot", "clamp", "clip", "clamp_min", "clamp_max", "lerp", "nan_to_num",
           "round", "logit", "neg", "square", "frac", "sign", "floor", "ceil", "trunc",
           "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "eq", "ne", "lt", "le", "gt", "ge", "negative",
           "multiply", "subtract", "divide", "xlogy", "arccos", "arccosh", "arcsin", "arcsinh",
           "arctan", "arctanh", "arctan2", "bitwise_left_shift", "bitwise_right_shift", "fix",
           "greater", "greater_equal", "less", "less_equal", "not_equal", "copysign", "sgn",
           "heaviside", "deg2rad", "rad2deg", "gcd", "lcm", "nextafter", "ldexp", "addcmul",
           "addcdiv", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
           "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
           "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "erfinv"]


def _operands(input, other):
    """``(like, a, b, rt)`` for ``input <op> other`` where either may be a Python scalar: the
    arrays (or scalar) in the result dtype ``rt``, and ``like``, the tensor the result lives with."""
    if isinstance(input, Tensor):
        a, b, rt = binary_operands(input, other)
        return input, a, b, rt
    if not isinstance(other, Tensor):
        raise TypeError(f"expected a Tensor operand, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    b, a, rt = binary_operands(other, input)
    return other, a, b, rt


def _tensor_or_none(x):
    return x if isinstance(x, Tensor) else None


def _zeros_like(t):
    """Zeros shaped like ``t``: a gradient that is zero everywhere, even where ``grad`` is inf."""
    return _wrap(t._backend.xp.zeros_like(t._data), t._dtype, t)


def _conj(x):
    """``x`` conjugated where complex, else ``x`` itself: a complex input's gradient is
    ``grad * conj(derivative)`` (PyTorch's convention), which is ``grad * derivative`` for reals."""
    if isinstance(x, Tensor):
        return x.conj() if x._dtype._kind == 3 else x
    return x.conjugate() if type(x) is complex else x


def _complex_sgn(z):
    from .complex import sgn
    return sgn(z)


def _not_implemented(kernel, dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(dtype)}'")


def _opmath(data, dtype):
    """``data`` in the precision PyTorch's CPU kernels compute ``dtype`` in: half and bfloat16
    go through float32 and are rounded once at the end."""
    return data.astype(dt.float32.np) if dtype._kind == 2 and dtype._rank == 0 else data


class NotImplementedBackward(Node):
    """The history of an op PyTorch records but cannot differentiate (``floor_divide``)."""
    __slots__ = ()

    def backward(self, grad):
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")

    def jvp(self, *tangents):
        raise NotImplementedError(f"Trying to use forward AD with aten::{self.op} that does "
                                  "not support it.")


# ---------------------------------------------------------------------------------------------
# Binary arithmetic
# ---------------------------------------------------------------------------------------------

class AddBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        alpha = self.alpha
        return grad, (grad if alpha == 1 else grad * alpha)

    def jvp(self, ta, tb):
        alpha = self.alpha
        return _tangent_sum(ta, tb if tb is None or alpha == 1 else tb * alpha)


def _tangent_sum(*terms):
    """The sum of a forward derivative's terms, skipping inputs without a tangent (None)."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def pointwise_jvp(node, *tangents):
    """``jvp`` of an element-wise op of several (broadcasting) real inputs: output element k
    depends on element k of each input only, so the backward of ones gives every partial
    derivative at once, shaped like the output (the engine, not the backward, sums broadcast
    dims), and the tangent is the sum of partial times tangent. One backward, against the
    fallback's backward plus double backward."""
    shapes = []
    for meta, t in zip(node._in_meta, tangents):
        if t is not None and (t._dtype._kind == 3 or meta is None):
            return NotImplemented
        if meta is not None:
            shapes.append(meta[0])
    if node.num_outputs != 1:
        return NotImplemented
    from .shape import broadcast_shapes
    shape = tuple(broadcast_shapes(*shapes))
    first = next(t for t in tangents if t is not None)
    partials = node.backward(first.new_ones(shape))
    if not isinstance(partials, (tuple, list)):
        partials = (partials,)
    terms = []
    for partial, t in zip(partials, tangents):
        if t is None:
            continue
        if partial is None or tuple(partial.shape) != shape:
            return NotImplemented
        terms.append(partial * t)
    return _tangent_sum(*terms)


def _check_alpha(alpha, rt):
    if rt._kind < 2 and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


# Operand classes that are never sparse: the check below costs one set lookup for them, where a
# getattr with a default on a Python number would take an attribute miss on every call.
_NEVER_SPARSE = frozenset((Tensor, int, float, bool, complex))


def _sparse_operand(input, other):
    return ((input.__class__ not in _NEVER_SPARSE
             and getattr(input, "_layout", _STRIDED) is not _STRIDED)
            or (other.__class__ not in _NEVER_SPARSE
                and getattr(other, "_layout", _STRIDED) is not _STRIDED))


# The operand classes of the common call, a tensor with a tensor or a Python number: it needs
# no sparse or reflected-operand handling, so add, sub and mul take it without helper frames.
_FAST_OTHER = frozenset((Tensor, float, int))


_BOOL = dt.bool
_BF16 = dt.bfloat16


def add(input, other, *, alpha=1, out=None):
    if (other.__class__ is Tensor and input.__class__ is Tensor and alpha == 1
            and other._dtype is input._dtype):
        # the commonest call, two plain tensors of one dtype: no promotion, and NumPy's sum
        # keeps that dtype (bool, float16 and ml_dtypes' bfloat16 included)
        if other._device is not input._device:
            raise device_mismatch(input, other)
        res = _wrap(input._backend.xp.add(input._data, other._data), input._dtype, input)
        if (needs_grad(input, other) if _dispatch._dual_active else _grad_state.enabled and (
                input._requires_grad or other._requires_grad)):
            record(AddBackward0, (input, other), res, alpha=1)
        return res if out is None else _maybe_out(res, out)
    if input.__class__ is Tensor and other.__class__ in _FAST_OTHER and alpha == 1:
        d = input._dtype
        if other.__class__ is float and d._kind == 2 and d is not _BF16:
            # a weak Python float keeps a float16/32/64 tensor's dtype: no promotion to make
            res = _wrap(input._backend.xp.add(input._data, other), d, input)
        else:
            a, b, rt = binary_operands(input, other)
            data = input._backend.xp.add(a, b)
            if data.dtype != rt.np:
                data = input._backend.xp.asarray(data).astype(rt.np)
            res = _wrap(data, rt, input)
        o = other if other.__class__ is Tensor else None
        if (needs_grad(input, o) if _dispatch._dual_active else _grad_state.enabled and (
                input._requires_grad or (o is not None and o._requires_grad))):
            record(AddBackward0, (input, o), res, alpha=1)
        return res if out is None else _maybe_out(res, out)
    if _sparse_operand(input, other):
        from .sparse import add_function
        return add_function(input, other, alpha, out)
    like, a, b, rt = _operands(input, other)
    if alpha != 1:
        _check_alpha(alpha, rt)
        b = b * alpha
    res = _wrap(cast(like._backend.xp.asarray(like._backend.xp.add(a, b)), rt), rt, like)
    if needs_grad(_tensor_or_none(input), _tensor_or_none(other)):
        record(AddBackward0, (_tensor_or_none(input), _tensor_or_none(other)), res, alpha=alpha)
    return _maybe_out(res, out)


class SubBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        alpha = self.alpha
        return grad, (-grad if alpha == 1 else grad * -alpha)

    def jvp(self, ta, tb):
        return _tangent_sum(ta, None if tb is None else tb * -self.alpha)


def _is_bool_operand(x):
    return x._dtype is dt.bool if isinstance(x, Tensor) else type(x) is bool


def sub(input, other, *, alpha=1, out=None):
    if (input.__class__ is Tensor and other.__class__ in _FAST_OTHER and alpha == 1
            and input._dtype is not _BOOL
            and (other.__class__ is not Tensor or other._dtype is not _BOOL)):
        a, b, rt = binary_operands(input, other)
        res = _wrap(input._backend.xp.subtract(a, b), rt, input)
        o = other if other.__class__ is Tensor else None
        if (needs_grad(input, o) if _dispatch._dual_active else _grad_state.enabled and (
                input._requires_grad or (o is not None and o._requires_grad))):
            record(SubBackward0, (input, o), res, alpha=1)
        return res if out is None else _maybe_out(res, out)
    if _is_bool_operand(input) or _is_bool_operand(other):
        if _is_bool_operand(input) and _is_bool_operand(other):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if _sparse_operand(input, other):
        from .sparse import add_function
        return add_function(input, other, alpha, out, name="sub")
    like, a, b, rt = _operands(input, other)
    if alpha != 1:
        _check_alpha(alpha, rt)
        b = b * alpha
    res = _wrap(like._backend.xp.subtract(a, b), rt, like)
    if needs_grad(_tensor_or_none(input), _tensor_or_none(other)):
        record(SubBackward0, (_tensor_or_none(input), _tensor_or_none(other)), res, alpha=alpha)
    return _maybe_out(res, out)


class RsubBackward0(Node):
    """``other - alpha * input`` for two tensors (edges: input, other)."""
    __slots__ = ()

    def backward(self, grad):
        return (None if self._edges[0] is None else -grad * self.alpha,
                None if self._edges[1] is None else grad)


class RsubBackward1(Node):
    """``other - alpha * input`` for a number ``other``: one edge, to the input."""
    __slots__ = ()

    def backward(self, grad):
        return (-grad * self.alpha,)

    def jvp(self, t):
        return -t * self.alpha


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``: Python's ``2 - x``."""
    o = _tensor_or_none(other)
    if not (isinstance(input, Tensor) and needs_grad(input, o)):
        return sub(other, input, alpha=alpha)  # nothing to record: skip the no_grad block
    with no_grad():
        res = sub(other, input, alpha=alpha)
    if o is None:
        record(RsubBackward1, (input,), res, alpha=alpha)
    else:
        record(RsubBackward0, (input, o), res, alpha=alpha)
    return res


# The Scalar overloads (add.Scalar, mul.Scalar, div.Scalar): PyTorch's C++ composites apply
# a number through these, and their nodes have one edge. Ember's composites that mirror one
# call them; Python's ``x + 1`` stays the Tensor overload, as in PyTorch.
class AddBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad

    def jvp(self, t):
        return t


class SubBackward1(AddBackward1):  # d(input - number) = d(input + number)
    __slots__ = ()


class MulBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad * _conj_number(self.other)

    def jvp(self, t):
        return t * self.other


class DivBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad / _conj_number(self.other)

    def jvp(self, t):
        return t / self.other


def _conj_number(value):
    return value.conjugate() if isinstance(value, complex) else value


def _scalar_overload(node_cls, op, input, other):
    with no_grad():
        res = op(input, other)
    if needs_grad(input):
        record(node_cls, (input,), res, other=other)
    return res


def add_scalar(input, other):
    """``input + other`` for a number ``other``, recorded as PyTorch's ``add.Scalar``."""
    return _scalar_overload(AddBackward1, add, input, other)


def sub_scalar(input, other):
    """``input - other`` for a number ``other``, recorded as PyTorch's ``sub.Scalar``."""
    return _scalar_overload(SubBackward1, sub, input, other)


def number_minus(number, input):
    """``number - input`` as PyTorch's C++ writes it (``empty_like(input).fill_(number)
    .sub_(input)``): a ``SubBackward0`` whose first edge is the filled tensor's, none."""
    from .creation import full_like
    return full_like(input, number) - input


def mul_scalar(input, other):
    """``input * other`` for a number ``other``, recorded as PyTorch's ``mul.Scalar``."""
    return _scalar_overload(MulBackward1, mul, input, other)


def div_scalar(input, other):
    """``input / other`` for a number ``other``, recorded as PyTorch's ``div.Scalar``."""
    return _scalar_overload(DivBackward1, div, input, other)


class MulBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        ga = None if self._edges[0] is None else grad * _conj(b if b is not None else self.scalar)
        gb = None if self._edges[1] is None else grad * _conj(a)
        return ga, gb

    def jvp(self, ta, tb):
        # d(a b) = da b + a db (a's tangent needs b, saved because a has one; and vice versa)
        a, b = self.saved_tensors
        return _tangent_sum(None if ta is None else ta * (b if b is not None else self.scalar),
                            None if tb is None else a * tb)


def mul(input, other, *, out=None):
    if not isinstance(input, Tensor):
        input, other = other, input
    if not (input.__class__ is Tensor and other.__class__ in _FAST_OTHER) and _sparse_operand(
            input, other):
        from .sparse import mul_function
        return mul_function(input, other, out)
    oc = other.__class__
    d = input._dtype
    if oc is Tensor and other._dtype is d and other._device is input._device:
        a, b, rt = input._data, other._data, d  # one dtype: no promotion
    elif oc is float and d._kind == 2 and d is not _BF16 and input.__class__ is Tensor:
        a, b, rt = input._data, other, d  # a weak Python float keeps the tensor's dtype
    else:
        a, b, rt = binary_operands(input, other)
    res = _wrap(input._backend.xp.multiply(a, b), rt, input)
    # needs_grad's test written out (outside a dual level): a call per op is ~5% of a small one
    if isinstance(other, Tensor):
        if (needs_grad(input, other) if _dispatch._dual_active else _grad_state.enabled and (
                input._requires_grad or other._requires_grad)):
            record(MulBackward0, (input, other), res,
                   save=(input if other._requires_grad else None,
                         other if input._requires_grad else None))
    elif (needs_grad(input) if _dispatch._dual_active else _grad_state.enabled
            and input._requires_grad):
        record(MulBackward0, (input, None), res, save=(None, None), scalar=other)
    return res if out is None else _maybe_out(res, out)


class DivBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        if b is None:
            return grad / _conj(self.scalar), None
        b = _conj(b)
        ga = None if self._edges[0] is None else grad / b
        if self._edges[1] is None:
            return ga, None
        numerator = _conj(a if a is not None else self.scalar)
        return ga, -grad * numerator / (b * b)

    def jvp(self, ta, tb):
        # d(a / b) = da / b - a db / b^2
        a, b = self.saved_tensors
        if b is None:
            return ta / self.scalar
        return _tangent_sum(None if ta is None else ta / b,
                            None if tb is None else
                            -tb * (a if a is not None else self.scalar) / (b * b))


class DivBackward2(Node):
    """``div`` with a rounding mode: a step function, so a zero gradient for both inputs."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        zero = _zeros_like(grad)
        return zero, (zero if self._edges[1] is not None else None)


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                             f"but found '{rounding_mode}'")
        res = _div_rounded(input, other, rounding_mode)
        tensors = (_tensor_or_none(input), _tensor_or_none(other))
        if needs_grad(*tensors):
            record(DivBackward2, tensors, res)
        return _maybe_out(res, out)
    like, a, b, rt = _operands(input, other)
    if rt._kind < 2:
        rt = dt.get_default_dtype()
        a = cast(a, rt) if isinstance(input, Tensor) else a
        b = cast(b, rt) if isinstance(other, Tensor) else b
    res = _wrap(like._backend.xp.true_divide(a, b), rt, like)
    if isinstance(other, Tensor):
        tin = _tensor_or_none(input)
        if needs_grad(tin, other):
            record(DivBackward0, (tin, other), res,
                   save=(tin if other._requires_grad else None, other),
                   scalar=None if tin is not None else input)
    elif needs_grad(input):
        record(DivBackward0, (input, None), res, save=(None, None), scalar=other)
    return _maybe_out(res, out)


true_divide = divide = div
multiply = mul
subtract = sub


def _check_integer_divisor(xp, b, rt, kernel):
    if rt is dt.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if rt._kind <= 1 and (bool(xp.any(b == 0)) if hasattr(b, "shape") else b == 0):
        raise RuntimeError("ZeroDivisionError")


def _div_rounded(input, other, mode):
    like, a, b, rt = _operands(input, other)
    xp = like._backend.xp
    _check_integer_divisor(xp, b, rt, f"div_{mode}_cpu")
    if mode == "floor":
        data = xp.floor_divide(a, b)
    elif rt._kind <= 1:
        # floor -> trunc for integers: step towards zero where the signs differ and it isn't exact
        q = xp.floor_divide(a, b)
        fix = (xp.remainder(a, b) != 0) & ((xp.asarray(a) < 0) != (xp.asarray(b) < 0))
        data = q + fix.astype(q.dtype)
    else:
        data = xp.trunc(xp.true_divide(a, b))
    return _wrap(cast(xp.asarray(data), rt), rt, like)


def floor_divide(input, other, *, out=None):
    res = _div_rounded(input, other, "floor")
    tensors = (_tensor_or_none(input), _tensor_or_none(other))
    if needs_grad(*tensors):
        record(NotImplementedBackward, tensors, res, op="floor_divide")
    return _maybe_out(res, out)


class RemainderBackward1(Node):
    """``remainder``/``fmod`` of two tensors; the number-divisor forms (``...Backward0``) have
    one edge, and the gradient passes through unchanged."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        a, b = self.saved_tensors
        gb = None
        if self._edges[1] is not None:
            gb = -grad * div(a, b, rounding_mode="floor" if self.kind == "remainder" else "trunc")
        return grad, gb


class FmodBackward1(RemainderBackward1):
    __slots__ = ()


class RemainderBackward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        return (grad,)


class FmodBackward0(RemainderBackward0):
    __slots__ = ()


def _mod(input, other, xp_name, kind):
    like, a, b, rt = _operands(input, other)
    xp = like._backend.xp
    _check_integer_divisor(xp, b, rt, f"{kind}_cpu")
    res = _wrap(cast(xp.asarray(getattr(xp, xp_name)(a, b)), rt), rt, like)
    if not isinstance(input, Tensor):
        if needs_grad(other):
            record(NotImplementedBackward, (None, other), res, op=kind)
        return res
    o = _tensor_or_none(other)
    if o is None:
        if needs_grad(input):
            record(RemainderBackward0 if kind == "remainder" else FmodBackward0, (input,), res)
    elif needs_grad(input, o):
        record(RemainderBackward1 if kind == "remainder" else FmodBackward1, (input, o), res,
               save=(input, o), kind=kind)
    return res


def remainder(input, other):
    """Python's ``%``: the result has the sign of the divisor."""
    return _mod(input, other, "remainder", "remainder")


def fmod(input, other):
    """C's ``fmod``: the result has the sign of the dividend."""
    return _mod(input, other, "fmod", "fmod")


def _integer_power(xp, a, b):
    """``a ** b`` for integer arrays, where a negative exponent gives what C's integer division
    ``1 / a**-b`` gives (PyTorch's rule; NumPy refuses): 1 for a == 1, +-1 for a == -1, else 0."""
    # No shortcut for "no negative exponent": learning that would cost a device a host sync.
    negative = xp.asarray(b < 0)
    data = xp.power(a, xp.where(negative, 0, b))
    odd = xp.remainder(b, 2) != 0
    reciprocal = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
    return xp.where(negative, reciprocal, data).astype(data.dtype)


class PowBackward0(Node):
    """``tensor ** scalar``."""
    __slots__ = ()

    def backward(self, grad):
        (base,) = self.saved_tensors
        e = self.exponent
        if e == 0:
            return _zeros_like(grad)
        return grad * _conj(e * base.pow(e - 1))

    def jvp(self, t):
        (base,) = self.saved_tensors
        e = self.exponent
        if e == 0:
            return _zeros_like(t)
        return t * (e * base.pow(e - 1))


class PowBackward1(Node):
    """``tensor ** tensor``: d/db = e * b**(e-1) (0 where e == 0); d/de = b**e * ln b, taken as 0
    where b == 0 and e >= 0, as PyTorch does."""
    __slots__ = ()

    def backward(self, grad):
        base, exponent, result = self.saved_tensors
        gb = ge = None
        if self._edges[0] is not None:
            gb = where(exponent == 0, _zeros_like(grad), grad * _conj(exponent * base.pow(exponent - 1)))
        if self._edges[1] is not None:
            ln_base = where((base == 0) & (exponent >= 0), _zeros_like(result), result * base.log())
            ge = grad * _conj(ln_base)
        return gb, ge

    def jvp(self, tb, te):
        # d(b^e) = e b^(e-1) db + b^e ln(b) de, with PyTorch's zeros where e == 0 / b == 0;
        # each term is masked before it is multiplied by a tangent, so 0 * inf never happens
        base, exponent, result = self.saved_tensors
        terms = []
        if tb is not None:
            slope = where(exponent == 0, _zeros_like(result), exponent * base.pow(exponent - 1))
            terms.append(tb * slope)
        if te is not None:
            ln_base = where((base == 0) & (exponent >= 0), _zeros_like(result),
                            result * base.log())
            terms.append(te * ln_base)
        return _tangent_sum(*terms)


class PowBackward2(Node):
    """``scalar ** tensor``: d/de = s**e * ln s, with 0 where s == 0 and e >= 0."""
    __slots__ = ()

    def backward(self, grad):
        exponent, result = self.saved_tensors
        base = self.base
        ln_base = math.log(base) if base > 0 else (-math.inf if base == 0 else math.nan)
        g = grad * (result * ln_base)
        return where(exponent >= 0, _zeros_like(g), g) if base == 0 else g

    def jvp(self, t):
        exponent, result = self.saved_tensors
        base = self.base
        if base == 0:  # 0 ** e: a zero slope where e >= 0, masked before it meets the tangent
            ln_base = where(exponent >= 0, _zeros_like(result), result * -math.inf)
            return t * ln_base
        ln_base = math.log(base) if base > 0 else math.nan
        return t * (result * ln_base)


# Exponents PyTorch's pow kernel computes with cheaper, more exact functions than ``power``.
_SPECIAL_EXPONENTS = {
    2: lambda xp, x: x * x,
    3: lambda xp, x: x * x * x,
    0.5: lambda xp, x: xp.sqrt(x),
    -0.5: lambda xp, x: 1 / xp.sqrt(x),
    -1: lambda xp, x: 1 / x,
    -2: lambda xp, x: 1 / (x * x),
}


def _pow_scalar_exponent(input, exponent):
    a, e, rt = binary_operands(input, exponent)
    xp = input._backend.xp
    if rt._kind == 1 and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    special = _SPECIAL_EXPONENTS.get(e)
    if rt._kind >= 2 and special is not None:
        data = special(xp, _opmath(a, rt))
    elif rt._kind >= 2:
        data = xp.power(_opmath(a, rt), e)
    else:
        data = xp.power(a, e)
    res = _wrap(cast(xp.asarray(data), rt), rt, input)
    if needs_grad(input):
        record(PowBackward0, (input,), res, save=(input,), exponent=exponent)
    return res


def pow(input, exponent, *, out=None):
    if _autocast.active and _autocast.enabled_for(
            input if isinstance(input, Tensor) else exponent, "pow"):
        return _autocast.run(pow, "pow", input, exponent, out=out)
    if not isinstance(exponent, Tensor):
        return _maybe_out(_pow_scalar_exponent(input, exponent), out)
    like, a, b, rt = _operands(input, exponent)
    xp = like._backend.xp
    if rt is dt.bool:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if rt._kind == 1:
        data = _integer_power(xp, a, b)
    else:
        data = xp.power(a, b)
    res = _wrap(cast(xp.asarray(data), rt), rt, like)
    if not isinstance(input, Tensor):
        if needs_grad(exponent):
            record(PowBackward2, (exponent,), res, save=(exponent,), save_out=True, base=input)
    elif needs_grad(input, exponent):
        record(PowBackward1, (input, exponent), res, save=(input, exponent), save_out=True)
    return _maybe_out(res, out)


def float_power(input, exponent):
    x = input.double() if isinstance(input, Tensor) else input
    e = exponent.double() if isinstance(exponent, Tensor) else exponent
    return pow(x, e)


def square(input, *, out=None):
    """``input ** 2``, which PyTorch's ``square`` is: a bool tensor squares to int64."""
    return pow(input, 2, out=out)


class Atan2Backward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        y, x = self.saved_tensors
        denom = x * x + y * y
        return grad * x / denom, -grad * y / denom


def atan2(input, other):
    if _autocast.active and _autocast.enabled_for(input, "atan2"):
        return _autocast.run(atan2, "atan2", input, other)
    a, b, rt = binary_operands(input, other)
    rt2 = to_float_dtype(rt)
    res = _wrap(input._backend.xp.arctan2(cast(a, rt2), cast(b, rt2)), rt2, input)
    if needs_grad(input, other):
        record(Atan2Backward0, (input, other), res, save=(input, other))
    return res


arctan2 = atan2


class HypotBackward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        a, b, h = self.saved_tensors
        return grad * a / h, grad * b / h


def hypot(input, other):
    a, b, rt = binary_operands(input, other)
    if rt._kind < 2:
        raise _not_implemented("hypot_cpu", rt)
    res = _wrap(input._backend.xp.hypot(a, b), rt, input)
    if needs_grad(input, other):
        record(HypotBackward0, (input, other), res, save=(input, other), save_out=True)
    return res


class MaximumBackward0(Node):
    """Ties split the gradient evenly, as PyTorch does; a NaN sends it to both inputs."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        a, b = self.saved_tensors
        zero = _zeros_like(grad)
        shared = where(a == b, grad / 2, grad)
        a_loses, b_loses = (a > b, a < b) if self.minimum else (a < b, a > b)
        ga = where(a_loses, zero, shared) if self._edges[0] is not None else None
        gb = where(b_loses, zero, shared) if self._edges[1] is not None else None
        return ga, gb


class MinimumBackward0(MaximumBackward0):
    __slots__ = ()


def _extremum(input, other, name, is_min):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    a, b, rt = binary_operands(input, other)
    res = _wrap(getattr(input._backend.xp, name)(a, b), rt, input)
    if needs_grad(input, other):
        record(MinimumBackward0 if is_min else MaximumBackward0, (input, other), res,
               save=(input, other), minimum=is_min)
    return res


def maximum(input, other):
    return _extremum(input, other, "maximum", False)


def minimum(input, other):
    return _extremum(input, other, "minimum", True)


def fmax(input, other):
    a, b, rt = binary_operands(input, other)
    return _wrap(input._backend.xp.fmax(a, b), rt, input)


def fmin(input, other):
    a, b, rt = binary_operands(input, other)
    return _wrap(input._backend.xp.fmin(a, b), rt, input)


# ---------------------------------------------------------------------------------------------
# Comparisons, logic, bitwise (no gradient)
# ---------------------------------------------------------------------------------------------

def _compare(xp_name, torch_name):
    def op(input, other):
        like, a, b, _ = _operands(input, other)
        return _wrap(getattr(like._backend.xp, xp_name)(a, b), dt.bool, like)
    op.__name__ = op.__qualname__ = torch_name
    return op


eq = _compare("equal", "eq")
ne = _compare("not_equal", "ne")
lt = _compare("less", "lt")
le = _compare("less_equal", "le")
gt = _compare("greater", "gt")
ge = _compare("greater_equal", "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _logical(xp_name):
    def op(input, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"{xp_name}(): argument 'other' (position 2) must be Tensor, not "
                            f"{type(other).__name__}")
        if other._device is not input._device:
            raise device_mismatch(input, other)
        return _wrap(getattr(input._backend.xp, xp_name)(input._data, other._data), dt.bool, input)
    op.__name__ = op.__qualname__ = xp_name
    return op


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


def logical_not(input):
    return _wrap(input._backend.xp.logical_not(input._data), dt.bool, input)


def _bitwise(xp_name, torch_name, kernel):
    def op(input, other):
        like, a, b, rt = _operands(input, other)
        if rt._kind >= 2 or (rt is dt.bool and kernel.endswith("shift_cpu")):
            raise _not_implemented(kernel, rt)
        return _wrap(cast(like._backend.xp.asarray(getattr(like._backend.xp, xp_name)(a, b)), rt),
                     rt, like)
    op.__name__ = op.__qualname__ = torch_name
    return op


bitwise_and = _bitwise("bitwise_and", "bitwise_and", "bitwise_and_cpu")
bitwise_or = _bitwise("bitwise_or", "bitwise_or", "bitwise_or_cpu")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor", "bitwise_xor_cpu")
# NumPy's shifts, like PyTorch's, give 0 (or the sign for >>) for counts outside [0, bits).
bitwise_left_shift = _bitwise("left_shift", "bitwise_left_shift", "lshift_cpu")
bitwise_right_shift = _bitwise("right_shift", "bitwise_right_shift", "rshift_cpu")


def bitwise_not(input):
    if input._dtype._kind >= 2:
        raise _not_implemented("bitwise_not_cpu", input._dtype)
    xp = input._backend.xp
    fn = xp.logical_not if input._dtype is dt.bool else xp.invert
    return _wrap(fn(input._data), input._dtype, input)


def _invert(input):
    """Python's ``~``, which PyTorch checks before it reaches ``bitwise_not``."""
    if input._dtype._kind >= 2:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(input)


def isnan(input):
    return _wrap(input._backend.xp.isnan(input._data), dt.bool, input)


def isinf(input):
    return _wrap(input._backend.xp.isinf(input._data), dt.bool, input)


def isfinite(input):
    return _wrap(input._backend.xp.isfinite(input._data), dt.bool, input)


def isposinf(input):
    return _wrap(input._backend.xp.isposinf(input._data), dt.bool, input)


def isneginf(input):
    return _wrap(input._backend.xp.isneginf(input._data), dt.bool, input)


def signbit(input):
    return _wrap(input._backend.xp.signbit(input._data), dt.bool, input)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if isinstance(other, Tensor) and other._dtype is not input._dtype:
        raise RuntimeError(f"{dtype_name(input._dtype)} did not match {dtype_name(other._dtype)}")
    a, b, _ = binary_operands(input, other)
    return _wrap(input._backend.xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan),
                 dt.bool, input)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    return input.shape == other.shape and bool(eq(input, other).all().item())


# ---------------------------------------------------------------------------------------------
# Unary maths: one row per function
# ---------------------------------------------------------------------------------------------

class UnaryBackward(Node):
    """Backward of a one-input op whose derivative is ``formula(grad, x, y)``."""
    __slots__ = ()
    formula = None
    saves = "x"
    holomorphic = True

    def backward(self, grad):
        saved = self.saved_tensors
        if saved and saved[0]._dtype._kind == 3 and self.holomorphic:
            # conj(f'(z)) == f'(conj(z)) for these real-coefficient functions
            saved = (saved[0].conj(),)
        if self.saves == "x":
            return type(self).formula(grad, saved[0], None)
        if self.saves == "y":
            return type(self).formula(grad, None, saved[0])
        return type(self).formula(grad, None, None)

    def jvp(self, t):
        # f'(x) t: the formula without the conjugation (exact for holomorphic complex inputs
        # too); abs of a complex number is not holomorphic and takes the generic path
        saved = self.saved_tensors
        if saved and saved[0]._dtype._kind == 3 and not self.holomorphic and self.saves == "x":
            # |z| (the one such op): d|z| = Re(conj(z) dz) / |z|, 0 at z = 0 as PyTorch
            z = saved[0]
            r = z.abs()
            zero = r == 0
            return ((z.real * t.real + z.imag * t.imag) / r.masked_fill(zero, 1)).masked_fill(
                zero, 0)
        if (saved and saved[0]._dtype._kind == 3 and not self.holomorphic) or (
                t._dtype._kind == 3 and not saved):
            return NotImplemented
        if self.saves == "x":
            return type(self).formula(t, saved[0], None)
        if self.saves == "y":
            return type(self).formula(t, None, saved[0])
        return type(self).formula(t, None, None)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0


def _zero_grad(g, x, y):
    return _zeros_like(g)


# name: (array function of (backend, x), derivative (grad, x, y), what to save, dtype policy)
# dtype policy: "float" computes integer and bool inputs in the default float dtype; "keep"
# keeps the dtype; "round" keeps integers unchanged and refuses bool; "float_only" refuses
# integers and bool.
_UNARY = {
    "exp": (lambda b, x: b.xp.exp(x), lambda g, x, y: g * y, "y", "float"),
    "exp2": (lambda b, x: b.xp.exp2(x), lambda g, x, y: g * y * _LN2, "y", "float"),
    "expm1": (lambda b, x: b.xp.expm1(x), lambda g, x, y: g * (y + 1), "y", "float"),
    "log": (lambda b, x: b.xp.log(x), lambda g, x, y: g / x, "x", "float"),
    "log2": (lambda b, x: b.xp.log2(x), lambda g, x, y: g / (x * _LN2), "x", "float"),
    "log10": (lambda b, x: b.xp.log10(x), lambda g, x, y: g / (x * _LN10), "x", "float"),
    "log1p": (lambda b, x: b.xp.log1p(x), lambda g, x, y: g / (x + 1), "x", "float"),
    "sqrt": (lambda b, x: b.xp.sqrt(x), lambda g, x, y: g / (y * 2), "y", "float"),
    "rsqrt": (lambda b, x: 1 / b.xp.sqrt(x), lambda g, x, y: g * y.pow(3) * -0.5, "y", "float"),
    "reciprocal": (lambda b, x: 1 / x, lambda g, x, y: -g * y * y, "y", "float"),
    "sin": (lambda b, x: b.xp.sin(x), lambda g, x, y: g * x.cos(), "x", "float"),
    "cos": (lambda b, x: b.xp.cos(x), lambda g, x, y: -g * x.sin(), "x", "float"),
    "tan": (lambda b, x: b.xp.tan(x), lambda g, x, y: g * (y * y + 1), "y", "float"),
    "asin": (lambda b, x: b.xp.arcsin(x), lambda g, x, y: g * (1 - x * x).rsqrt(), "x", "float"),
    "acos": (lambda b, x: b.xp.arccos(x), lambda g, x, y: -g * (1 - x * x).rsqrt(), "x", "float"),
    "atan": (lambda b, x: b.xp.arctan(x), lambda g, x, y: g / (x * x + 1), "x", "float"),
    "sinh": (lambda b, x: b.xp.sinh(x), lambda g, x, y: g * x.cosh(), "x", "float"),
    "cosh": (lambda b, x: b.xp.cosh(x), lambda g, x, y: g * x.sinh(), "x", "float"),
    "tanh": (lambda b, x: b.xp.tanh(x), lambda g, x, y: g * (1 - y * y), "y", "float"),
    "asinh": (lambda b, x: b.xp.arcsinh(x), lambda g, x, y: g * (x * x + 1).rsqrt(), "x", "float"),
    "acosh": (lambda b, x: b.xp.arccosh(x),
              lambda g, x, y: g * ((x - 1) * (x + 1)).rsqrt(), "x", "float"),
    "atanh": (lambda b, x: b.xp.arctanh(x), lambda g, x, y: g / (1 - x * x), "x", "float"),
    "sigmoid": (lambda b, x: _sigmoid(b.xp, x), lambda g, x, y: g * y * (1 - y), "y", "float"),
    "erf": (lambda b, x: b.erf(x),
            lambda g, x, y: g * _TWO_OVER_SQRT_PI * (-(x * x)).exp(), "x", "float"),
    "erfc": (lambda b, x: b.erfc(x), lambda g, x, y: g * -_TWO_OVER_SQRT_PI * (-(x * x)).exp(), "x", "float"),
    "erfinv": (lambda b, x: b.erfinv(x),
               lambda g, x, y: g * _SQRT_PI_OVER_2 * (y * y).exp(), "y", "float"),
    "neg": (lambda b, x: b.xp.negative(x), lambda g, x, y: -g, "", "keep"),
    "abs": (lambda b, x: b.xp.abs(x),
            lambda g, x, y: g * (_complex_sgn(x) if x._dtype._kind == 3 else x.sign()), "x", "keep"),
    "sign": (lambda b, x: b.xp.sign(x), _zero_grad, "", "keep"),
    "frac": (lambda b, x: x - b.xp.trunc(x), lambda g, x, y: g, "", "float_only"),
    "floor": (lambda b, x: b.xp.floor(x), _zero_grad, "", "round"),
    "ceil": (lambda b, x: b.xp.ceil(x), _zero_grad, "", "round"),
    "trunc": (lambda b, x: b.xp.trunc(x), _zero_grad, "", "round"),
}

# What a bool input gets from ops that keep the dtype: an error, or (sign) the input itself.
_BOOL_ERRORS = {
    "neg": RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                        "are trying to invert a mask, use the `~` or `logical_not()` operator "
                        "instead."),
    "abs": "abs_cpu", "frac": "frac_cpu", "floor": "floor_vml_cpu", "ceil": "ceil_vml_cpu",
    "trunc": "trunc_vml_cpu", "round": "round_vml_cpu",
}


def _sigmoid(xp, x):
    # exp(-|x|) never overflows; pick the algebraically equal form per sign.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _check_unary_dtype(name, d, policy):
    """Raise PyTorch's error for dtype ``d``; True when the op returns integers unchanged."""
    if d is dt.bool and name in _BOOL_ERRORS:
        error = _BOOL_ERRORS[name]
        raise error if isinstance(error, Exception) else _not_implemented(error, d)
    if d._kind == 1 and policy == "float_only":
        raise _not_implemented(_BOOL_ERRORS[name], d)
    return d._kind < 2 and policy == "round"


# PyTorch's code generator capitalises a letter after a digit.
_UNARY_NODE_NAMES = {"log1p": "Log1PBackward0"}

# The unary ops of CUDA autocast's float32 list (ATen's AT_FORALL_FP32): each asks autocast by
# its own name.
AUTOCAST_UNARY = frozenset("""acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal
    rsqrt sinh tan""".split())


def _make_unary(name, fwd, formula, saves, policy):
    node_name = _UNARY_NODE_NAMES.get(name, f"{name.capitalize()}Backward0")
    node_cls = type(node_name, (UnaryBackward,),
                    {"__slots__": (), "formula": staticmethod(formula), "saves": saves,
                     "holomorphic": name != "abs"})

    sparse_form = name == "neg"  # the one unary op PyTorch also defines on sparse tensors
    autocast_op = name if name in AUTOCAST_UNARY else None
    to_float = policy == "float"
    # the unary ops torch has QuantizedCPU kernels for: a quantized input runs the tensor's own
    quantized_kernel = name in ("sigmoid", "tanh")

    def op(input, *, out=None):
        if autocast_op is not None and _autocast.active and _autocast.enabled_for(input,
                                                                                  autocast_op):
            return _autocast.run(op, autocast_op, input, out=out)
        if sparse_form and input._layout is not _STRIDED:
            from .sparse import neg as sparse_neg
            return sparse_neg(input)
        d = input._dtype
        if to_float:  # a floating input passes _check_unary_dtype under this policy
            if d._kind == 2:
                x = input._data
            elif d._kind < 2:
                d = dt.get_default_dtype()
                x = input._data.astype(d.np)
            elif d._kind == 4 and quantized_kernel and out is None:
                return getattr(input, name)()
            else:
                x = input._data
        elif _check_unary_dtype(name, d, policy) or (name == "sign" and d is dt.bool):
            return _maybe_out(_wrap(input._data.copy(), d, input), out)
        else:
            x = input._data
        data = fwd(input._backend, x)
        if data.dtype != d.np:
            if name == "abs" and d._kind == 3:
                d = d.to_real()
            data = data.astype(d.np)
        res = _wrap(data, d, input)
        # _needs's test written out: a call per op is ~5% of a small one
        if (_dispatch.needs_grad(input) if _dispatch._dual_active
                else input._requires_grad and _grad_state.enabled):
            if saves == "x":
                record(node_cls, (input,), res, save=(input,))
            elif saves == "y":
                record(node_cls, (input,), res, save_out=True)
            else:
                record(node_cls, (input,), res)
        return res if out is None else _maybe_out(res, out)

    op.__name__ = name
    op.__qualname__ = name
    op.__doc__ = f"Element-wise ``{name}``, as ``torch.{name}``."
    return op


def _needs(t):
    if _dispatch._dual_active:  # forward AD: a tangent needs the node too
        return _dispatch.needs_grad(t)
    return t._requires_grad and _grad_state.enabled


for _name, _row in _UNARY.items():
    globals()[_name] = _make_unary(_name, *_row)

negative = neg                                                       # noqa: F821
absolute = abs                                                       # noqa: F821
arcsin, arccos, arctan = asin, acos, atan                            # noqa: F821
arcsinh, arccosh, arctanh = asinh, acosh, atanh                      # noqa: F821
fix = trunc                                                          # noqa: F821


def abs_(input):
    """``Tensor.abs_``: |z| is real, so a complex tensor cannot hold it in place."""
    if input._dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _inplace(input, abs)                                      # noqa: F821


absolute_ = abs_


def positive(input):
    return input


class RoundBackward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        return _zeros_like(grad)


class RoundBackward1(RoundBackward0):  # the ``decimals`` overload
    __slots__ = ()


def round(input, *, decimals=None):
    if decimals is not None and input._dtype._kind < 2:
        # PyTorch's ``decimals`` overload has no integer kernels, not even for decimals=0.
        raise _not_implemented("round_vml_cpu" if decimals == 0 else "round_cpu", input._dtype)
    if _check_unary_dtype("round", input._dtype, "round"):
        return input.clone()
    # NumPy rounds half to even and scales by 10**decimals first, as PyTorch does.
    data = input._backend.xp.round(input._data, decimals or 0)
    res = _wrap(data, input._dtype, input)
    if _needs(input):
        record(RoundBackward0 if decimals is None else RoundBackward1, (input,), res)
    return res


class LogitBackward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        (x,) = self.saved_tensors
        g = grad / (x * (1 - x))
        if self.eps is not None:
            g = where((x < self.eps) | (x > 1 - self.eps), _zeros_like(g), g)
        return g


def logit(input, eps=None):
    d = to_float_dtype(input._dtype)
    xp = input._backend.xp
    x = cast(input._data, d)
    if eps is not None:
        x = xp.clip(x, eps, 1 - eps)
    res = _wrap(xp.log(x / (1 - x)), d, input)
    if _needs(input):
        record(LogitBackward0, (input,), res, save=(input,), eps=eps)
    return res


# ---------------------------------------------------------------------------------------------
# clamp, where, lerp, nan_to_num
# ---------------------------------------------------------------------------------------------

class ClampBackward1(Node):
    """``clamp`` with number bounds: the gradient passes where ``min <= x <= max``."""
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        lo, hi = self.min, self.max
        inside = x >= lo if hi is None else (x <= hi if lo is None else (x >= lo) & (x <= hi))
        return where(inside, grad, _zeros_like(grad))

    jvp = _forward_ad.elementwise_jvp


class ClampBackward0(Node):
    """``clamp`` with tensor bounds. When ``min > max`` every element is ``max``, so only
    ``max`` gets the gradient (PyTorch's ``clamp_backward_min_max``)."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        x, lo, hi = self.saved_tensors
        zero = _zeros_like(grad)
        if lo is not None and hi is not None:
            gx = where((x >= lo) & (x <= hi), grad, zero)
            glo = where((x < lo) & (lo < hi), grad, zero)
            ghi = where((x > hi) | (hi < lo), grad, zero)
        elif lo is not None:
            gx, glo, ghi = where(x >= lo, grad, zero), where(x < lo, grad, zero), None
        else:
            gx, glo, ghi = where(x <= hi, grad, zero), None, where(x > hi, grad, zero)
        return (gx if self._edges[0] is not None else None,
                glo if self._edges[1] is not None else None,
                ghi if self._edges[2] is not None else None)


def _clamped(input, min, max):
    """``clamp``'s forward, shared by ``clamp_min``/``clamp_max``, which record their own
    nodes."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    bounds = [v for v in (min, max) if v is not None]
    for bound in bounds:
        if isinstance(bound, Tensor) and bound._device is not input._device:
            raise device_mismatch(input, bound)
    xp = input._backend.xp
    rt = dt.result_type(input, *bounds)
    if rt is dt.bool:
        _refuse_bool_clamp(min, max)
    x = cast(input._data, rt)
    data = x
    if min is not None:
        data = xp.maximum(data, cast(xp.asarray(min._data if isinstance(min, Tensor) else min), rt))
    if max is not None:
        data = xp.minimum(data, cast(xp.asarray(max._data if isinstance(max, Tensor) else max), rt))
    if rt._kind >= 2:  # NaN propagates from the input, as in PyTorch
        data = xp.where(xp.isnan(x), x, data)
    return _wrap(cast(xp.asarray(data), rt), rt, input)


def _refuse_bool_clamp(min, max):
    """PyTorch clamps bools only against one tensor bound (its maximum/minimum kernels)."""
    tensors = [isinstance(v, Tensor) for v in (min, max) if v is not None]
    if all(tensors) and len(tensors) == 2:
        raise _not_implemented("clamp_cpu", dt.bool)
    if not any(tensors):
        kernel = ("clamp_scalar_cpu" if len(tensors) == 2 else
                  "clamp_min_scalar_cpu" if min is not None else "clamp_max_scalar_cpu")
        raise _not_implemented(kernel, dt.bool)


def clamp(input, min=None, max=None, *, out=None):
    res = _clamped(input, min, max)
    tmin, tmax = _tensor_or_none(min), _tensor_or_none(max)
    if tmin is None and tmax is None:
        if _needs(input):
            record(ClampBackward1, (input,), res, save=(input,), min=min, max=max)
    elif needs_grad(input, tmin, tmax):
        record(ClampBackward0, (input, tmin, tmax), res, save=(input, tmin, tmax))
    return _maybe_out(res, out)


clip = clamp


# PyTorch's one-sided clamps have their own nodes: 0 for a number bound (like ClampBackward1),
# 1 for a tensor bound, with an edge to it.
class ClampMinBackward0(ClampBackward1):
    __slots__ = ()


class ClampMaxBackward0(ClampBackward1):
    __slots__ = ()


class ClampMinBackward1(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        x, bound = self.saved_tensors
        zero = _zeros_like(grad)
        return (where(x >= bound, grad, zero) if self._edges[0] is not None else None,
                where(x < bound, grad, zero) if self._edges[1] is not None else None)


class ClampMaxBackward1(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        x, bound = self.saved_tensors
        zero = _zeros_like(grad)
        return (where(x <= bound, grad, zero) if self._edges[0] is not None else None,
                where(x > bound, grad, zero) if self._edges[1] is not None else None)


def _one_sided_clamp(input, bound, is_min, number_node, tensor_node, out):
    res = _clamped(input, bound if is_min else None, None if is_min else bound)
    tbound = _tensor_or_none(bound)
    if tbound is None:
        if _needs(input):
            record(number_node, (input,), res, save=(input,), min=bound if is_min else None,
                   max=None if is_min else bound)
    elif needs_grad(input, tbound):
        record(tensor_node, (input, tbound), res, save=(input, tbound))
    return _maybe_out(res, out)


def clamp_min(input, min, *, out=None):
    return _one_sided_clamp(input, min, True, ClampMinBackward0, ClampMinBackward1, out)


def clamp_max(input, max, *, out=None):
    return _one_sided_clamp(input, max, False, ClampMaxBackward0, ClampMaxBackward1, out)


class WhereBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (cond,) = self.saved_tensors
        zero = _zeros_like(grad)
        gx = where(cond, grad, zero) if self._edges[0] is not None else None
        gy = where(cond, zero, grad) if self._edges[1] is not None else None
        return gx, gy

    def jvp(self, tx, ty):
        (cond,) = self.saved_tensors
        if tx is None and ty is None:
            return None
        like = tx if tx is not None else ty
        return where(cond, tx if tx is not None else _zeros_like(like),
                     ty if ty is not None else _zeros_like(like))


def where(condition, input=None, other=None):
    """Elements of ``input`` where ``condition`` holds, of ``other`` elsewhere (broadcast together).

    >>> import ember
    >>> x = ember.tensor([-1.0, 2.0, -3.0])
    >>> ember.where(x > 0, x, 0.0)
    tensor([0., 2., 0.])
    """
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    tin, toth = _tensor_or_none(input), _tensor_or_none(other)
    for t in (tin, toth):
        if t is not None and t._device is not condition._device:
            raise device_mismatch(condition, t)
    rt = dt.result_type(input, other)
    xp = condition._backend.xp
    c = condition._data
    if c.dtype != dt.bool.np:
        if condition._dtype is not dt.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                               f"with dtype {dtype_name(condition._dtype)}")
        c = c.astype(bool)
    a = cast(tin._data, rt) if tin is not None else _scalar_array(xp, input, rt)
    b = cast(toth._data, rt) if toth is not None else _scalar_array(xp, other, rt)
    res = _wrap(xp.where(c, a, b), rt, condition)
    if needs_grad(tin, toth):
        record(WhereBackward0, (tin, toth), res, save=(condition,))
    return res


def _scalar_array(xp, value, dtype):
    if dtype._kind == 1 and not isinstance(value, float):
        info = xp.iinfo(dtype.np)
        if not info.min <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {dtype.name}_t without overflow")
    return xp.asarray(value, dtype=dtype.np)


class LerpBackward0(Node):
    """``lerp`` with a number weight."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        w = self.weight
        return grad * (1 - w), grad * w


class LerpBackward1(Node):
    """``lerp`` with a tensor weight."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        start, end, weight = self.saved_tensors
        return (grad * (1 - weight), grad * weight,
                grad * (end - start) if self._edges[2] is not None else None)


def lerp(input, end, weight):
    """``input + weight * (end - input)``, computed from the nearer end as PyTorch does, so
    ``weight == 1`` gives exactly ``end``."""
    d = input._dtype
    tensors = [input, end] + ([weight] if isinstance(weight, Tensor) else [])
    for t in tensors[1:]:
        if t._device is not input._device:
            raise device_mismatch(input, t)
        if t._dtype is not d:
            raise RuntimeError(f"expected dtype {dt.TYPE_META_NAMES[d.name]} for "
                               f"`{'end' if t is end else 'weight'}` but got dtype "
                               f"{dt.TYPE_META_NAMES[t._dtype.name]}")
    if d._kind < 2:
        raise _not_implemented("lerp_kernel_scalar" if len(tensors) == 2 else "lerp_kernel_tensor", d)
    xp = input._backend.xp
    start, stop = _opmath(input._data, d), _opmath(end._data, d)
    diff = stop - start
    if isinstance(weight, Tensor):
        w = _opmath(weight._data, d)
        data = xp.where(xp.abs(w) < 0.5, start + w * diff, stop - diff * (1 - w))
    elif -0.5 < weight < 0.5:
        data = start + weight * diff
    else:
        data = stop - diff * (1 - weight)
    res = _wrap(cast(xp.asarray(data), d), d, input)
    if needs_grad(*tensors):
        if isinstance(weight, Tensor):
            record(LerpBackward1, tuple(tensors), res, save=tuple(tensors))
        else:
            record(LerpBackward0, (input, end), res, weight=weight)
    return res


class NanToNumBackward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        (x,) = self.saved_tensors
        return where(x.isfinite(), grad, _zeros_like(grad))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    d = input._dtype
    if d._kind < 2:
        return input.clone()
    xp = input._backend.xp
    largest = dt.largest_finite(d)
    x = input._data
    data = xp.where(xp.isnan(x), nan, x)
    data = xp.where(x == math.inf, largest if posinf is None else posinf, data)
    data = xp.where(x == -math.inf, -largest if neginf is None else neginf, data)
    res = _wrap(cast(xp.asarray(data), d), d, input)
    if _needs(input):
        record(NanToNumBackward0, (input,), res, save=(input,))
    return res


class XlogyBackward0(Node):
    """``x * log(y)`` (0 where ``x`` is 0) of two tensors; a number ``x`` (``XlogyBackward1``)
    or ``y`` (``XlogyBackward2``) leaves one edge, to the tensor operand."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input
    operands = (0, 1)  # which of (x, y) have an edge, in order

    def backward(self, grad):
        x, y = self.saved_tensors
        grads = []
        if 0 in self.operands:
            # PyTorch's formula: log(y) even where x is 0, unless y <= 0 there too
            grads.append(xlogy(grad, y).masked_fill((x == 0) & (y <= 0), 0.0))
        if 1 in self.operands:
            grads.append(grad * x / y)
        return tuple(g if e is not None else None for g, e in zip(grads, self._edges))


class XlogyBackward1(XlogyBackward0):
    __slots__ = ()
    operands = (1,)


class XlogyBackward2(XlogyBackward0):
    __slots__ = ()
    operands = (0,)


def xlogy(input, other):
    if _autocast.active and _autocast.enabled_for(input if isinstance(input, Tensor) else other,
                                                  "xlogy"):
        return _autocast.run(xlogy, "xlogy", input, other)
    x = input if isinstance(input, Tensor) else as_tensor_on(input, other)
    y = other if isinstance(other, Tensor) else as_tensor_on(other, x)
    with no_grad():
        res = where(x == 0, x * 0, x * (other.log() if isinstance(other, Tensor)
                                        else math.log(other)))
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        if needs_grad(input, other):
            record(XlogyBackward0, (input, other), res, save=(x, y))
    elif isinstance(input, Tensor):
        if needs_grad(input):
            record(XlogyBackward2, (input,), res, save=(x, y))
    elif needs_grad(other):
        record(XlogyBackward1, (other,), res, save=(x, y))
    return res


def _maybe_out(res, out):
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


# ---------------------------------------------------------------------------------------------
# Signs, log-sum-exp, angle units, gcd/lcm and float representation (nextafter, ldexp, frexp)
# ---------------------------------------------------------------------------------------------

_frexp_result = return_types.frexp


def _require_tensor(fn_name, arg_name, position, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn_name}(): argument '{arg_name}' (position {position}) must be "
                        f"Tensor, not {type(value).__name__}")



class CopysignBackward0(Node):
    """d/d input of |input| * sign(other) is result / input (0 where input is 0); the sign
    argument gets no gradient."""
    __slots__ = ()

    def backward(self, grad):
        x, result = self.saved_tensors
        zero = x == 0
        ratio = (result / x.masked_fill(zero, 1)).masked_fill(zero, 0)
        # The sign argument's gradient is zero almost everywhere: PyTorch returns zeros.
        if len(self._edges) == 1:
            return (grad * ratio,)
        g_other = grad.new_zeros(self._in_meta[1][0]) if self._edges[1] is not None else None
        return grad * ratio, g_other

    def jvp(self, t_input, t_other=None):
        # the sign argument moves nothing (almost everywhere)
        x, result = self.saved_tensors
        if t_input is None:
            return result.new_zeros(result.shape)
        zero = x == 0
        return t_input * (result / x.masked_fill(zero, 1)).masked_fill(zero, 0)


class CopysignBackward1(CopysignBackward0):
    """``copysign`` with a number sign: one edge, to the input."""
    __slots__ = ()


def copysign(input, other):
    like, a, b, rt = _operands(input, other)
    rt = to_float_dtype(rt)
    xp = like._backend.xp
    data = xp.copysign(_opmath(cast(a, rt), rt), b if not hasattr(b, "dtype") else _opmath(cast(b, rt), rt))
    res = _wrap(cast(xp.asarray(data), rt), rt, like)
    if isinstance(input, Tensor) and needs_grad(input):
        if isinstance(other, Tensor):
            record(CopysignBackward0, (input, other), res, save=(input,), save_out=True)
        else:
            record(CopysignBackward1, (input,), res, save=(input,), save_out=True)
    return res


class LogaddexpBackward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        a, b = self.saved_tensors
        exp = (lambda t: t.exp2()) if self.base2 else (lambda t: t.exp())
        ga = grad / (exp(b - a) + 1) if self._edges[0] is not None else None
        gb = grad / (exp(a - b) + 1) if self._edges[1] is not None else None
        return ga, gb


class Logaddexp2Backward0(LogaddexpBackward0):
    __slots__ = ()


def _logaddexp(input, other, base2):
    name = "logaddexp2" if base2 else "logaddexp"
    _require_tensor(name, "other", 2, other)
    a, b, rt = binary_operands(input, other)
    if rt._kind < 2:
        raise _not_implemented(f"{name}_cpu", rt)
    xp = input._backend.xp
    ufunc = xp.logaddexp2 if base2 else xp.logaddexp
    res = _wrap(cast(xp.asarray(ufunc(_opmath(a, rt), _opmath(b, rt))), rt), rt, input)
    if needs_grad(input, other):
        record(Logaddexp2Backward0 if base2 else LogaddexpBackward0, (input, other), res,
               save=(input, other), base2=base2)
    return res


def logaddexp(input, other):
    return _logaddexp(input, other, False)


def logaddexp2(input, other):
    return _logaddexp(input, other, True)


class SgnBackward0(Node):
    """sgn is piecewise constant on real inputs."""
    __slots__ = ()

    def backward(self, grad):
        return grad.new_zeros(grad.shape)


def sgn(input):
    """sign for real inputs; z / |z| (0 at 0) for complex ones."""
    d = input._dtype
    data = input._data
    xp = input._backend.xp
    if d is dt.bool:
        return _wrap(data.copy(), d, input)
    if d._kind == 3:  # the complex family's sgn, which carries the complex gradient
        return _complex_sgn(input)
    res = _wrap(xp.sign(data), d, input)
    if needs_grad(input):
        record(SgnBackward0, (input,), res)
    return res


def heaviside(input, values):
    _require_tensor("heaviside", "values", 2, values)
    if values._device is not input._device:
        raise device_mismatch(input, values)
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    xp = input._backend.xp
    x = input._data
    # PyTorch's kernel: values where x == 0, else (x > 0), so NaN maps to 0 (not NaN as NumPy).
    out = xp.where(x == 0, values._data, (x > 0).astype(x.dtype))
    res = _wrap(out.astype(x.dtype, copy=False), input._dtype, input)
    if needs_grad(input, values):
        record(NotImplementedBackward, (input, values), res, op="heaviside")
    return res


class Deg2RadBackward0(Node):
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        return (grad * self.factor,)


class Rad2DegBackward0(Deg2RadBackward0):
    __slots__ = ()


def _angle_units(input, factor, node):
    x = input if input._dtype._kind >= 2 else input.to(dt.get_default_dtype())
    with no_grad():
        res = x * factor
    if needs_grad(x):
        record(node, (x,), res, factor=factor)
    return res


def deg2rad(input):
    return _angle_units(input, math.pi / 180.0, Deg2RadBackward0)


def rad2deg(input):
    return _angle_units(input, 180.0 / math.pi, Rad2DegBackward0)


def _integer_binary(name, input, other):
    _require_tensor(name, "other", 2, other)
    a, b, rt = binary_operands(input, other)
    if rt._kind != 1:
        raise _not_implemented(f"{name}_cpu", rt)
    xp = input._backend.xp
    return _wrap(cast(xp.asarray(getattr(xp, name)(a, b)), rt), rt, input)


def gcd(input, other):
    return _integer_binary("gcd", input, other)


def lcm(input, other):
    return _integer_binary("lcm", input, other)


def float_power_(input, exponent):
    """In place, so only a double (or complex double) base can hold the double result."""
    if input._dtype not in (dt.float64, dt.complex128):
        raise RuntimeError(f"the base given to float_power_ has dtype {dtype_name(input._dtype)} "
                           "but the operation's result requires dtype Double")
    return _inplace(input, float_power, exponent)


class NextafterBackward0(Node):
    """PyTorch passes the gradient straight through to ``input`` (the step is negligible)."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        g_other = grad.new_zeros(self._in_meta[1][0]) if self._edges[1] is not None else None
        return grad, g_other


def nextafter(input, other):
    _require_tensor("nextafter", "other", 2, other)
    a, b, rt = binary_operands(input, other)
    if rt._kind != 2:
        raise _not_implemented("nextafter_cpu", rt)
    xp = input._backend.xp
    res = _wrap(cast(xp.asarray(xp.nextafter(a, b)), rt), rt, input)
    if needs_grad(input, other):
        record(NextafterBackward0, (input, other), res)
    return res


def ldexp(input, other):
    """``input * 2 ** other``, in the float type of the two (integers become the default float)."""
    _require_tensor("ldexp", "other", 2, other)
    rt = to_float_dtype(dt.result_type(input, other))
    return record_composite(LdexpBackward0, (input, other),
                            lambda input, other: input.to(rt) * other.to(rt).exp2())


class LdexpBackward0(CompositeBackward):
    __slots__ = ()


class FrexpBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (exponent,) = self.saved_tensors
        return grad / exponent.to(grad.dtype).exp2()


def frexp(input):
    if input._dtype._kind != 2:
        raise RuntimeError("ember.frexp() only supports floating-point dtypes")
    xp = input._backend.xp
    data = input._data
    # NumPy's frexp has no bfloat16 loop; float32 holds every bfloat16 exactly, and a mantissa
    # in [0.5, 1) keeps the input's significant bits, so rounding back is exact.
    work = data.astype(dt.float32.np) if input._dtype is dt.bfloat16 else data
    mantissa, exponent = xp.frexp(work)
    mantissa_t = _wrap(mantissa.astype(data.dtype, copy=False), input._dtype, input)
    exponent_t = _wrap(exponent.astype(dt.int32.np, copy=False), dt.int32, input)
    if needs_grad(input):
        record(FrexpBackward0, (input,), mantissa_t, save=(exponent_t,))
    return _frexp_result((mantissa_t, exponent_t))



# ---------------------------------------------------------------------------------------------
# Fused multiply-adds: addcmul, addcdiv (addr is matmul.py's)
# ---------------------------------------------------------------------------------------------

def _scaled(product, value):
    return product if (type(value) is int and value == 1) else product * value


class AddcmulBackward0(Node):
    """``input + value * tensor1 * tensor2`` (edges: input, tensor1, tensor2)."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        t1, t2 = self.saved_tensors
        scaled = _scaled(grad, self.value)
        return (grad if self._edges[0] is not None else None,
                scaled * t2 if self._edges[1] is not None else None,
                scaled * t1 if self._edges[2] is not None else None)


class AddcdivBackward0(Node):
    """``input + value * tensor1 / tensor2`` (edges: input, tensor1, tensor2)."""
    __slots__ = ()
    jvp = pointwise_jvp  # a diagonal Jacobian per input

    def backward(self, grad):
        t1, t2 = self.saved_tensors
        scaled = _scaled(grad, self.value)
        return (grad if self._edges[0] is not None else None,
                scaled / t2 if self._edges[1] is not None else None,
                -scaled * t1 / (t2 * t2) if self._edges[2] is not None else None)


def _pointwise_product(node, input, tensor1, tensor2, value, product):
    with no_grad():
        res = input + _scaled(product(tensor1, tensor2), value)
    if needs_grad(input, tensor1, tensor2):
        record(node, (input, tensor1, tensor2), res, save=(tensor1, tensor2), value=value)
    return res


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    if _autocast.active and _autocast.enabled_for(input, "addcmul"):
        return _autocast.run(addcmul, "addcmul", input, tensor1, tensor2, value=value, out=out)
    _check_same_device(input, tensor1, tensor2)
    rt = dt.promote_types(dt.promote_types(input._dtype, tensor1._dtype), tensor2._dtype)
    if rt is dt.bool:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    if rt._kind == 1 and isinstance(value, float):
        value = int(value)
    res = _pointwise_product(AddcmulBackward0, input, tensor1, tensor2, value, lambda a, b: a * b)
    return _maybe_out(res, out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    if _autocast.active and _autocast.enabled_for(input, "addcdiv"):
        return _autocast.run(addcdiv, "addcdiv", input, tensor1, tensor2, value=value, out=out)
    _check_same_device(input, tensor1, tensor2)
    if tensor1._dtype._kind <= 1 and tensor2._dtype._kind <= 1:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes."
            .replace("torch.", "ember."))
    res = _pointwise_product(AddcdivBackward0, input, tensor1, tensor2, value, lambda a, b: a / b)
    return _maybe_out(res, out)


def fill(input, value):
    """A new tensor like ``input`` filled with ``value`` (``torch.fill``, the out-of-place
    ``fill_``); ``input``'s history gets a zero gradient, a tensor ``value`` the sum."""
    return input.clone().fill_(value)


def isreal(input):
    if input._dtype._kind == 3:
        return input.imag == 0
    from .creation import ones_like
    return ones_like(input, dtype=dt.bool)


# ---------------------------------------------------------------------------------------------
# PyTorch's error for operands that don't broadcast
# ---------------------------------------------------------------------------------------------

def broadcast_error(shape_a, shape_b):
    """PyTorch's RuntimeError for two shapes that don't broadcast, naming the first clash from
    the right (its dimension counted in the broadcast result)."""
    ndim = max(len(shape_a), len(shape_b))
    for i in range(1, ndim + 1):
        a = shape_a[-i] if i <= len(shape_a) else 1
        b = shape_b[-i] if i <= len(shape_b) else 1
        if a != b and a != 1 and b != 1:
            return RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) "
                                f"at non-singleton dimension {ndim - i}")
    return None


def _shape_of(x):
    return tuple(x._data.shape) if isinstance(x, Tensor) else ()


def _cpu_scalars_moved(exc, args, kwargs):
    """``(args, kwargs)`` with each 0-d CPU tensor copied to the one device the other tensors
    are on, when ``exc`` is the device-mismatch error that mix raised; else None. torch's
    element-wise ops take a 0-d CPU tensor beside device tensors as they take a number
    (``x_cuda * torch.tensor(0.5)``); the copy is differentiable, so its gradient comes back
    to the CPU."""
    if not str(exc).startswith("Expected all tensors to be on the same device"):
        return None
    values = list(args) + list(kwargs.values())
    tensors = [v for v in values if isinstance(v, Tensor)]
    scalars = [t for t in tensors if t._device.type == "cpu" and not t._data.ndim]
    devices = {t._device for t in tensors if not any(t is s for s in scalars)}
    if not scalars or len(devices) != 1:
        return None
    (target,) = devices
    if target.type == "cpu":
        return None

    def move(v):
        return v.to(target) if any(v is s for s in scalars) else v
    return [move(a) for a in args], {k: move(v) for k, v in kwargs.items()}


def _torch_broadcast_errors(fn):
    """NumPy reports operands that don't broadcast as a ValueError; PyTorch as a RuntimeError
    naming the sizes. A try block costs nothing until it fires, so this stays off the hot path.
    The same frame gives the binary ops torch's NumPy keyword names (``add(x1=a, x2=b)``)
    and their CPU-scalar operands (``_cpu_scalars_moved``): only a call that fails is fixed
    and made again, so the usual call pays nothing more (a frame of its own would cost ~15%
    of a small op)."""
    renames, position = numpy_keyword_renames(fn)

    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError:
            # Binding failed before ``fn`` ran (an alias is never one of its parameters).
            if not kwargs or renames.keys().isdisjoint(kwargs):
                raise
            return op(*args, **rename_keywords(fn.__name__, renames, position, len(args),
                                               kwargs))
        except RuntimeError as exc:
            moved = _cpu_scalars_moved(exc, args, kwargs)
            if moved is None:
                raise
            return op(*moved[0], **moved[1])
        except ValueError as exc:
            if "broadcast" not in str(exc):
                raise
            shapes = [_shape_of(a) for a in args if isinstance(a, Tensor)]
            error = broadcast_error(shapes[0], shapes[1]) if len(shapes) >= 2 else None
            if error is None and len(shapes) >= 3:
                error = broadcast_error(shapes[1], shapes[2])
            if error is None:
                raise
            raise error from None
    op.__name__ = fn.__name__
    op.__qualname__ = fn.__qualname__
    op.__doc__ = fn.__doc__
    op.__wrapped__ = fn
    return op


def _wrap_broadcasting_ops():
    names = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2",
             "hypot", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge",
             "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
             "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "where", "lerp",
             "clamp", "xlogy", "isclose"]
    module = globals()
    wrapped = {}
    for name in names:
        original = module[name]
        wrapped[id(original)] = _torch_broadcast_errors(original)
    # Aliases (multiply = mul, greater = gt, ...) must get the same wrapped function.
    for name, value in list(module.items()):
        if callable(value) and id(value) in wrapped:
            module[name] = wrapped[id(value)]


_wrap_broadcasting_ops()
