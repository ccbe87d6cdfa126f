"""Element-wise ops: arithmetic, comparisons, logic and the unary maths functions.

Each op's forward (on backend arrays) and backward (in Ember ops, so it is differentiable again)
stand next to each other. The unary float functions are one table row each.
"""
import math

from .. import _dtype as dt
from ._dispatch import (Tensor, Node, needs_grad, record, binary_operands, cast, _wrap,
                        as_tensor_on, to_float_dtype, dtype_name, device_mismatch)


# ---------------------------------------------------------------------------------------------
# Binary arithmetic
# ---------------------------------------------------------------------------------------------

class AddBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        alpha = self.alpha
        return grad, (grad if alpha == 1 else grad * alpha)


def add(input, other, *, alpha=1, out=None):
    if not isinstance(input, Tensor):
        input, other = as_tensor_on(input, other), other
    a, b, rt = binary_operands(input, other)
    if alpha != 1:
        b = b * alpha
    if rt is dt.bool and alpha != 1:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    res = _wrap(input._backend.xp.add(a, b), rt, input)
    if needs_grad(input, other if isinstance(other, Tensor) else None):
        record(AddBackward0, (input, other if isinstance(other, Tensor) else None), res, alpha=alpha)
    return _maybe_out(res, out)


class SubBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        alpha = self.alpha
        return grad, (-grad if alpha == 1 else grad * -alpha)


def sub(input, other, *, alpha=1, out=None):
    if not isinstance(input, Tensor):
        input = as_tensor_on(input, other)
    a, b, rt = binary_operands(input, other)
    if rt is dt.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        b = b * alpha
    res = _wrap(input._backend.xp.subtract(a, b), rt, input)
    o = other if isinstance(other, Tensor) else None
    if needs_grad(input, o):
        record(SubBackward0, (input, o), res, alpha=alpha)
    return _maybe_out(res, out)


def rsub(input, other, *, alpha=1):
    return sub(as_tensor_on(other, input) if not isinstance(other, Tensor) else other,
               input, alpha=alpha)


class MulBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        ga = None if self.next_functions[0] is None else grad * (b if b is not None else self.scalar)
        gb = None if self.next_functions[1] is None else grad * a
        return ga, gb


def mul(input, other, *, out=None):
    if not isinstance(input, Tensor):
        input, other = other, input
    a, b, rt = binary_operands(input, other)
    res = _wrap(input._backend.xp.multiply(a, b), rt, input)
    if isinstance(other, Tensor):
        if needs_grad(input, other):
            record(MulBackward0, (input, other), res,
                   save=(input if other._requires_grad else None,
                         other if input._requires_grad else None))
    elif needs_grad(input):
        record(MulBackward0, (input, None), res, save=(None, None), scalar=other)
    return _maybe_out(res, out)


class DivBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        if b is None:
            return grad / self.scalar, None
        ga = None if self.next_functions[0] is None else grad / b
        gb = None if self.next_functions[1] is None else -grad * a / (b * b)
        return ga, gb


def div(input, other, *, rounding_mode=None, out=None):
    if not isinstance(input, Tensor):
        input = as_tensor_on(input, other)
    if rounding_mode is not None:
        if rounding_mode == "trunc":
            res = _div_rounded(input, other, "trunc")
        elif rounding_mode == "floor":
            res = floor_divide(input, other)
        else:
            raise ValueError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                             f"but found '{rounding_mode}'")
        return _maybe_out(res, out)
    a, b, rt = binary_operands(input, other)
    if rt._kind < 2:
        rt = dt.get_default_dtype()
        a, b = cast(a, rt), (cast(b, rt) if isinstance(other, Tensor) else b)
    res = _wrap(input._backend.xp.true_divide(a, b), rt, input)
    if isinstance(other, Tensor):
        if needs_grad(input, other):
            record(DivBackward0, (input, other), res,
                   save=(input if other._requires_grad else None, other))
    elif needs_grad(input):
        record(DivBackward0, (input, None), res, save=(None, None), scalar=other)
    return _maybe_out(res, out)


true_divide = divide = div
multiply = mul
subtract = sub


def _zero_division_check(xp, b, rt):
    if rt._kind <= 1:
        zero = (b == 0) if not isinstance(b, (int, bool)) else b == 0
        if bool(xp.any(zero)) if not isinstance(zero, bool) else zero:
            raise RuntimeError("ZeroDivisionError")


def _div_rounded(input, other, mode):
    a, b, rt = binary_operands(input, other)
    xp = input._backend.xp
    _zero_division_check(xp, b, rt)
    if rt._kind <= 1:
        q = xp.floor_divide(a, b)
        # floor -> trunc for integers: step towards zero where the signs differ and it isn't exact
        fix = (xp.remainder(a, b) != 0) & ((a < 0) != (xp.asarray(b) < 0))
        data = q + fix.astype(q.dtype)
    else:
        data = xp.trunc(xp.true_divide(a, b))
    return _wrap(data, rt, input)


class FloorDivideBackward(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad * 0, (grad * 0 if self.next_functions[1] is not None else None)


def floor_divide(input, other, *, out=None):
    if not isinstance(input, Tensor):
        input = as_tensor_on(input, other)
    a, b, rt = binary_operands(input, other)
    xp = input._backend.xp
    _zero_division_check(xp, b, rt)
    res = _wrap(xp.floor_divide(a, b), rt, input)
    o = other if isinstance(other, Tensor) else None
    if needs_grad(input, o):
        record(FloorDivideBackward, (input, o), res)
    return _maybe_out(res, out)


class RemainderBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        gb = None
        if self.next_functions[1] is not None:
            gb = -grad * (a / b).floor() if self.kind == "remainder" else -grad * (a / b).trunc()
        return grad, gb


def _mod(input, other, xp_name, kind):
    if not isinstance(input, Tensor):
        input = as_tensor_on(input, other)
    a, b, rt = binary_operands(input, other)
    xp = input._backend.xp
    if rt._kind <= 1:
        _zero_division_check(xp, b, rt)
    res = _wrap(getattr(xp, xp_name)(a, b), rt, input)
    o = other if isinstance(other, Tensor) else None
    if needs_grad(input, o):
        record(RemainderBackward0, (input, o), res, save=(input, o), kind=kind)
    return res


def remainder(input, other):
    """Python's ``%``: the result has the sign of the divisor."""
    return _mod(input, other, "remainder", "remainder")


def fmod(input, other):
    """C's ``fmod``: the result has the sign of the dividend."""
    return _mod(input, other, "fmod", "fmod")


class PowBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        base, exponent = self.saved_tensors
        if exponent is None:  # scalar exponent
            e = self.scalar
            if e == 0:
                return grad * 0, None
            return grad * e * base.pow(e - 1), None
        if base is None:  # scalar base: d/de b**e = b**e * ln b
            out = self.scalar ** exponent
            return None, grad * out * math.log(self.scalar) if self.scalar > 0 else grad * out * \
                (math.log(self.scalar) if self.scalar > 0 else (0.0 if self.scalar == 0 else math.nan))
        gb = ge = None
        if self.next_functions[0] is not None:
            gb = grad * exponent * base.pow(exponent - 1)
            gb = where(exponent == 0, gb * 0, gb)
        if self.next_functions[1] is not None:
            out = base.pow(exponent)
            ge = grad * out * where((base == 0) & (exponent >= 0), base * 0, base.log())
        return gb, ge


def pow(input, exponent, *, out=None):
    if not isinstance(input, Tensor):
        # scalar ** tensor
        base = input
        exp_t = exponent
        rt = dt.result_type(exp_t, base)
        xp = exp_t._backend.xp
        if rt._kind <= 1 and base != 0 and isinstance(base, int) and bool(xp.any(exp_t._data < 0)):
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        data = xp.power(cast(xp.asarray(base), rt), cast(exp_t._data, rt))
        res = _wrap(data, rt, exp_t)
        if needs_grad(exp_t):
            record(PowBackward0, (None, exp_t), res, save=(None, exp_t), scalar=base)
        return res
    a, b, rt = binary_operands(input, exponent)
    xp = input._backend.xp
    if rt._kind <= 1 and rt is not dt.bool:
        neg = (b < 0) if isinstance(exponent, Tensor) else exponent < 0
        if (bool(xp.any(neg)) if isinstance(exponent, Tensor) else neg):
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    if isinstance(exponent, Tensor):
        res = _wrap(xp.power(a, b), rt, input)
        if needs_grad(input, exponent):
            record(PowBackward0, (input, exponent), res, save=(input, exponent))
    else:
        if exponent == 2:
            data = xp.multiply(a, a)
        elif exponent == 0.5 and rt._kind >= 2:
            data = xp.sqrt(a)
        else:
            data = xp.power(a, b)
        res = _wrap(data, rt, input)
        if needs_grad(input):
            record(PowBackward0, (input, None), res, save=(input, None), scalar=exponent)
    return _maybe_out(res, out)


def float_power(input, exponent):
    x = input.double() if isinstance(input, Tensor) else input
    e = exponent.double() if isinstance(exponent, Tensor) else exponent
    return pow(x, e)


class Atan2Backward0(Node):
    __slots__ = ()

    def backward(self, grad):
        y, x = self.saved_tensors
        denom = x * x + y * y
        return grad * x / denom, -grad * y / denom


def atan2(input, other):
    a, b, rt = binary_operands(input, other)
    rt2 = to_float_dtype(rt)
    res = _wrap(input._backend.xp.arctan2(cast(a, rt2), cast(b, rt2)), rt2, input)
    if needs_grad(input, other):
        record(Atan2Backward0, (input, other), res, save=(input, other))
    return res


arctan2 = atan2


class HypotBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        h = self.saved_out()
        return grad * a / h, grad * b / h

    def saved_out(self):
        return self.saved_tensors[2]


def hypot(input, other):
    a, b, rt = binary_operands(input, other)
    res = _wrap(input._backend.xp.hypot(a, b), rt, input)
    if needs_grad(input, other):
        record(HypotBackward0, (input, other), res, save=(input, other), save_out=True)
    return res


class MaximumBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        # Ties split the gradient evenly, as PyTorch does.
        pick_a = (a > b).to(grad.dtype) + (a == b).to(grad.dtype) * 0.5
        if self.minimum:
            pick_a = (a < b).to(grad.dtype) + (a == b).to(grad.dtype) * 0.5
        return grad * pick_a, grad * (1 - pick_a)


def _extremum(input, other, name, is_min):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' must be Tensor, not {type(other).__name__}")
    a, b, rt = binary_operands(input, other)
    res = _wrap(getattr(input._backend.xp, name)(a, b), rt, input)
    if needs_grad(input, other):
        record(MaximumBackward0, (input, other), res, save=(input, other), minimum=is_min)
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

def _compare(xp_name):
    def op(input, other):
        if not isinstance(input, Tensor):
            input, other = as_tensor_on(input, other), other
        a, b, _ = binary_operands(input, other)
        return _wrap(getattr(input._backend.xp, xp_name)(a, b), dt.bool, input)
    op.__name__ = xp_name
    return op


eq = _compare("equal")
ne = _compare("not_equal")
lt = _compare("less")
le = _compare("less_equal")
gt = _compare("greater")
ge = _compare("greater_equal")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
eq.__name__, ne.__name__, lt.__name__, le.__name__, gt.__name__, ge.__name__ = \
    "eq", "ne", "lt", "le", "gt", "ge"


def _logical(xp_name):
    def op(input, other):
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(other, Tensor) and other._device is not input._device:
            raise device_mismatch(input, other)
        return _wrap(getattr(input._backend.xp, xp_name)(input._data, b), dt.bool, input)
    op.__name__ = xp_name
    return op


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


def logical_not(input):
    return _wrap(input._backend.xp.logical_not(input._data), dt.bool, input)


def _bitwise(xp_name, torch_name):
    def op(input, other):
        if not isinstance(input, Tensor):
            input, other = as_tensor_on(input, other), other
        a, b, rt = binary_operands(input, other)
        if rt._kind >= 2:
            raise RuntimeError(f"\"{torch_name}_cpu\" not implemented for '{dtype_name(rt)}'")
        return _wrap(getattr(input._backend.xp, xp_name)(a, b), rt, input)
    op.__name__ = torch_name
    return op


bitwise_and = _bitwise("bitwise_and", "bitwise_and")
bitwise_or = _bitwise("bitwise_or", "bitwise_or")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor")
bitwise_left_shift = _bitwise("left_shift", "lshift")
bitwise_right_shift = _bitwise("right_shift", "rshift")


def bitwise_not(input):
    if input._dtype._kind >= 2:
        raise RuntimeError(f"\"bitwise_not_cpu\" not implemented for '{dtype_name(input._dtype)}'")
    xp = input._backend.xp
    fn = xp.logical_not if input._dtype is dt.bool else xp.invert
    return _wrap(fn(input._data), input._dtype, input)


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

    def backward(self, grad):
        saved = self.saved_tensors
        if self.saves == "x":
            return type(self).formula(grad, saved[0], None)
        if self.saves == "y":
            return type(self).formula(grad, None, saved[0])
        if self.saves == "xy":
            return type(self).formula(grad, saved[0], saved[1])
        return type(self).formula(grad, None, None)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0

# name: (array function of (backend, x), derivative (grad, x, y), what to save, int policy)
# int policy: "float" promotes integer inputs to the default float dtype, "keep" keeps them.
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
    "erfc": (lambda b, x: 1 - b.erf(x),
             lambda g, x, y: g * -_TWO_OVER_SQRT_PI * (-(x * x)).exp(), "x", "float"),
    "erfinv": (lambda b, x: b.erfinv(x),
               lambda g, x, y: g * _SQRT_PI_OVER_2 * (y * y).exp(), "y", "float"),
    "neg": (lambda b, x: b.xp.negative(x), lambda g, x, y: -g, "", "keep"),
    "abs": (lambda b, x: b.xp.abs(x), lambda g, x, y: g * x.sign(), "x", "keep"),
    "square": (lambda b, x: x * x, lambda g, x, y: g * x * 2, "x", "keep"),
    "frac": (lambda b, x: x - b.xp.trunc(x), lambda g, x, y: g, "", "keep"),
    "sign": (lambda b, x: b.xp.sign(x), lambda g, x, y: g * 0, "", "keep"),
    "floor": (lambda b, x: b.xp.floor(x) if x.dtype.kind in "fc" else x.copy(),
              lambda g, x, y: g * 0, "", "keep"),
    "ceil": (lambda b, x: b.xp.ceil(x) if x.dtype.kind in "fc" else x.copy(),
             lambda g, x, y: g * 0, "", "keep"),
    "trunc": (lambda b, x: b.xp.trunc(x) if x.dtype.kind in "fc" else x.copy(),
              lambda g, x, y: g * 0, "", "keep"),
}


def _sigmoid(xp, x):
    # exp(-|x|) never overflows; pick the algebraically equal form per sign.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _make_unary(name, fwd, formula, saves, int_policy):
    node_cls = type(f"{name.capitalize()}Backward0", (UnaryBackward,),
                    {"__slots__": (), "formula": staticmethod(formula), "saves": saves})

    def op(input, *, out=None):
        d = input._dtype
        if int_policy == "float" and d._kind < 2:
            d = dt.get_default_dtype()
            x = input._data.astype(d.np)
        else:
            if d is dt.bool and name in ("neg", "sign", "square", "frac") and name != "sign":
                raise RuntimeError(f"Negation, the `-` operator, on a bool tensor is not supported. "
                                   "If you are trying to invert a mask, use the `~` or "
                                   "`logical_not()` operator instead." if name == "neg" else
                                   f"\"{name}_cpu\" not implemented for 'Bool'")
            x = input._data
        data = fwd(input._backend, x)
        if data.dtype != d.np:
            data = data.astype(d.np)
        res = _wrap(data, d, input)
        if _needs(input):
            if saves == "x":
                record(node_cls, (input,), res, save=(input,))
            elif saves == "y":
                record(node_cls, (input,), res, save_out=True)
            else:
                record(node_cls, (input,), res)
        return _maybe_out(res, out)

    op.__name__ = name
    op.__qualname__ = name
    op.__doc__ = f"Element-wise ``{name}``, as ``torch.{name}``."
    return op


def _needs(t):
    return t._requires_grad and _grad_state.enabled


from ..autograd.grad_mode import _state as _grad_state  # noqa: E402

for _name, _row in _UNARY.items():
    globals()[_name] = _make_unary(_name, *_row)

negative = neg                                                       # noqa: F821
absolute = abs                                                       # noqa: F821
arcsin, arccos, arctan = asin, acos, atan                            # noqa: F821
arcsinh, arccosh, arctanh = asinh, acosh, atanh                      # noqa: F821
fix = trunc                                                          # noqa: F821


def positive(input):
    return input


class RoundBackward(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad * 0


def round(input, *, decimals=0):
    xp = input._backend.xp
    if input._dtype._kind < 2:
        return input.clone()
    data = xp.round(input._data, decimals)  # NumPy rounds half to even, as PyTorch does
    res = _wrap(data, input._dtype, input)
    if _needs(input):
        record(RoundBackward, (input,), res)
    return res


class LogitBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        g = grad / (x * (1 - x))
        if self.eps is not None:
            g = where((x < self.eps) | (x > 1 - self.eps), g * 0, g)
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


class ClampBackward1(Node):
    __slots__ = ()

    def backward(self, grad):
        x, lo, hi = self.saved_tensors
        lo = self.min if lo is None else lo
        hi = self.max if hi is None else hi
        mask = None
        if lo is not None:
            mask = x >= lo
        if hi is not None:
            m = x <= hi
            mask = m if mask is None else mask & m
        gx = grad * mask.to(grad.dtype)
        glo = ghi = None
        if self.next_functions[1] is not None:
            glo = grad * (x < lo).to(grad.dtype)
        if self.next_functions[2] is not None:
            ghi = grad * (x > hi).to(grad.dtype)
            if lo is not None:
                ghi = ghi * (x >= lo).to(grad.dtype)
        if glo is not None and hi is not None:
            glo = glo * (x <= hi).to(grad.dtype) if not isinstance(hi, Tensor) else glo
        return gx, glo, ghi


def clamp(input, min=None, max=None, *, out=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    xp = input._backend.xp
    rt = dt.result_type(input, *(v for v in (min, max) if v is not None))
    x = cast(input._data, rt)
    data = x
    lo = min._data if isinstance(min, Tensor) else min
    hi = max._data if isinstance(max, Tensor) else max
    if lo is not None:
        data = xp.maximum(data, cast(xp.asarray(lo), rt))
    if hi is not None:
        data = xp.minimum(data, cast(xp.asarray(hi), rt))
    # NaN propagates from the input, as in PyTorch
    if rt._kind >= 2:
        data = xp.where(xp.isnan(x), x, data)
    res = _wrap(data, rt, input)
    tmin = min if isinstance(min, Tensor) else None
    tmax = max if isinstance(max, Tensor) else None
    if needs_grad(input, tmin, tmax):
        record(ClampBackward1, (input, tmin, tmax), res, save=(input, tmin, tmax),
               min=None if tmin is not None else min, max=None if tmax is not None else max)
    return _maybe_out(res, out)


clip = clamp


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


class WhereBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (cond,) = self.saved_tensors
        zero = grad * 0
        gx = where(cond, grad, zero) if self.next_functions[0] is not None else None
        gy = where(cond, zero, grad) if self.next_functions[1] is not None else None
        return gx, gy


def where(condition, input=None, other=None):
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    ref = condition
    tin = input if isinstance(input, Tensor) else None
    toth = other if isinstance(other, Tensor) else None
    for t in (tin, toth):
        if t is not None and t._device is not ref._device:
            raise device_mismatch(ref, t)
    rt = dt.result_type(*(v for v in (input, other)))
    xp = condition._backend.xp
    c = condition._data
    if c.dtype != dt.bool.np:
        if condition._dtype is not dt.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                               f"with dtype {dtype_name(condition._dtype)}")
        c = c.astype(bool)
    a = cast(tin._data, rt) if tin is not None else xp.asarray(input, dtype=rt.np)
    b = cast(toth._data, rt) if toth is not None else xp.asarray(other, dtype=rt.np)
    res = _wrap(xp.where(c, a, b), rt, tin if tin is not None else (toth or condition))
    if needs_grad(tin, toth):
        record(WhereBackward0, (tin, toth), res, save=(condition,))
    return res


def lerp(input, end, weight):
    return input + (end - input) * weight


class NanToNumBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * x.isfinite().to(grad.dtype)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    if input._dtype._kind < 2:
        return input.clone()
    xp = input._backend.xp
    data = xp.nan_to_num(input._data, nan=nan, posinf=posinf, neginf=neginf)
    res = _wrap(data, input._dtype, input)
    if _needs(input):
        record(NanToNumBackward0, (input,), res, save=(input,))
    return res


def xlogy(input, other):
    x = input if isinstance(input, Tensor) else as_tensor_on(input, other)
    return where(x == 0, x * 0, x * (other.log() if isinstance(other, Tensor) else math.log(other)))


def _maybe_out(res, out):
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)
