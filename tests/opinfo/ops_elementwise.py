"""Rows for element-wise ops: arithmetic and its Python operators (both operand orders, Python
scalars included), comparisons, logic and bitwise ops, and the unary maths functions.

Rows list every dtype; where PyTorch refuses one (``abs`` of bool, ``floor`` of bool, bitwise ops
on floats) the harness checks that Ember refuses it with the same exception type.
"""
import numpy as np

from .core import OpInfo, Sample, standard_samples, make_array, FLOAT_DTYPES, INT_DTYPES, ALL_DTYPES

UNARY_SHAPES = [((3, 4),), ((),), ((0, 3),)]
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3)), ((0, 3), (3,))]
TERNARY_SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (1, 4)), ((), (2, 3), ())]
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES

UNARY = standard_samples(*UNARY_SHAPES)
BINARY = standard_samples(*BINARY_SHAPES)
TERNARY = standard_samples(*TERNARY_SHAPES)


def _with_specials(rng, shape, dtype, index):
    """Finite values with NaN, +inf and -inf sprinkled in (floats only)."""
    arr = make_array(rng, shape, dtype)
    if dtype in FLOAT_DTYPES and arr.size:
        flat = arr.reshape(-1)
        picks = rng.integers(0, 4, size=flat.size)
        flat[picks == 1] = np.nan
        flat[picks == 2] = np.inf
        flat[picks == 3] = -np.inf
        arr = flat.reshape(shape)
    return arr


def _with_zeros(rng, shape, dtype, index):
    """Values in [-2, 2] where about a third are exactly zero (gradient conventions at 0)."""
    arr = make_array(rng, shape, dtype)
    return np.where(rng.random(shape) < 0.35, 0, arr).astype(arr.dtype)


def _shift_amounts(rng, shape, dtype, index):
    """Left operand anywhere in the dtype's small range; the shift amount in [0, 5]."""
    if index == 0 or dtype not in INT_DTYPES:
        return make_array(rng, shape, dtype)
    return rng.integers(0, 6, size=shape).astype(dtype)


def _clamp_at_bounds(rng, shape, dtype, index):
    """Inputs for ``clamp(x, -0.5, 0.5)`` that hit the bounds exactly now and then."""
    arr = make_array(rng, shape, dtype)
    if dtype in FLOAT_DTYPES:
        pick = rng.integers(0, 4, size=shape)
        arr = np.where(pick == 1, -0.5, np.where(pick == 2, 0.5, arr))
    return arr


def _distinct_bounds(rng, shape, dtype, index):
    """``x``, ``lo``, ``hi`` for tensor-bound clamp: some ``lo > hi`` crossings, no ties."""
    if dtype not in FLOAT_DTYPES:
        return make_array(rng, shape, dtype)
    centre = (0.0, -0.6, 0.6)[index]
    return centre + rng.uniform(-1.0, 1.0, size=shape)


def _pow_base(rng, shape, dtype, index):
    """Positive bases for real powers; exponents keep integer results small and non-negative."""
    if index == 0:
        return make_array(rng, shape, dtype, (0.5, 2.0))
    if dtype in FLOAT_DTYPES:
        return rng.uniform(-2.0, 2.0, size=shape)
    return rng.integers(0, 4, size=shape).astype(dtype)


def unary(name, fn=None, dtypes=ALL_DTYPES, samples=UNARY, **kwargs):
    fn = fn or (lambda lib, x, _name=name: getattr(lib, _name)(x))
    return binary(name, fn, dtypes, samples, **kwargs)


def binary(name, fn, dtypes=ALL_DTYPES, samples=BINARY, **kwargs):
    kwargs.setdefault("gradcheck", kwargs.get("grad", True))  # no gradient, nothing to check
    return OpInfo(name, fn, samples, dtypes=dtypes, **kwargs)


# For the rows of copysign ... frexp.
F32_64 = ("float32", "float64")
FEW_DTYPES = ("float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool")
SIGNED_INTS = ("int64", "int32", "int16", "int8")


def _refused(name, fn, *shapes, dtypes=("float32",)):
    """A row whose inputs PyTorch refuses: Ember must raise the same exception type."""
    return OpInfo(name, fn, [Sample(shapes)], dtypes=dtypes, grad=False, gradcheck=False)


def _away_from_zero(rng, shape, dtype, index):
    """Divisors kept away from zero (addcdiv's third operand)."""
    arr = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1, 1], size=shape)
    return arr if index == 2 else rng.uniform(-2, 2, size=shape)


def _binary_samples():
    return standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), (3,)), ((0, 2), (2,)))


def _with_exact_zeros(rng, shape, dtype, index):
    """Random values where about a third are exactly zero (heaviside's special case)."""
    arr = rng.uniform(-2, 2, size=shape)
    arr[rng.random(shape) < 0.33] = 0.0
    return arr if dtype in FLOAT_DTYPES else np.round(arr).astype(dtype)


def _integers(rng, shape, dtype, index):
    """Integers with common factors (and zeros and negatives where the dtype has them)."""
    low = 0 if dtype == "uint8" else -30
    return (rng.integers(low // 2, 15, size=shape) * rng.choice([1, 2, 6], size=shape)).astype(dtype)


def _exponents(rng, shape, dtype, index):
    # PyTorch's ldexp backward computes 2 ** exponent in the exponent's integer dtype, so its
    # gradient is 0 for negative exponents (Ember's is the true one): only >= 0 are compared.
    if index == 1:
        return rng.integers(0, 5, size=shape).astype(np.int64)
    return rng.uniform(-2, 2, size=shape)


OPS = [
    # ---- arithmetic and the Python operators --------------------------------------------------
    binary("add", lambda lib, x, y: x + y, gradgrad=True),
    binary("add_alpha", lambda lib, x, y: lib.add(x, y, alpha=2), dtypes=NUMERIC_DTYPES),
    binary("add_float_alpha", lambda lib, x, y: lib.add(x, y, alpha=0.5), dtypes=FLOAT_DTYPES),
    unary("add_scalar", lambda lib, x: x + 2, gradgrad=True),
    unary("radd_float", lambda lib, x: 2.5 + x),
    unary("add_bool_scalar", lambda lib, x: x + True),
    binary("sub", lambda lib, x, y: x - y, gradgrad=True),
    binary("sub_alpha", lambda lib, x, y: lib.sub(x, y, alpha=3), dtypes=NUMERIC_DTYPES),
    unary("sub_scalar", lambda lib, x: x - 1.5),
    unary("rsub_scalar", lambda lib, x: 2 - x, gradgrad=True),
    unary("rsub_float", lambda lib, x: 0.25 - x),
    binary("mul", lambda lib, x, y: lib.mul(x, y), gradgrad=True),
    binary("mul_operator", lambda lib, x, y: x * y),
    unary("mul_scalar", lambda lib, x: x * 3, gradgrad=True),
    unary("rmul_float", lambda lib, x: 2.5 * x),
    binary("div", lambda lib, x, y: x / y, gradgrad=True, domain=(0.5, 2.0)),
    unary("div_scalar", lambda lib, x: x / 4, gradgrad=True),
    unary("rdiv_scalar", lambda lib, x: 2 / x, gradgrad=True, domain=(0.5, 2.0)),
    unary("rdiv_float", lambda lib, x: 1.5 / x, domain=(0.5, 2.0)),
    binary("div_trunc", lambda lib, x, y: lib.div(x, y, rounding_mode="trunc"),
           dtypes=NUMERIC_DTYPES, domain=(0.5, 2.0)),
    binary("div_floor", lambda lib, x, y: lib.div(x, y, rounding_mode="floor"),
           dtypes=NUMERIC_DTYPES, domain=(0.5, 2.0)),
    # PyTorch records floor_divide but has no derivative for it: test_elementwise.py checks that.
    binary("floor_divide", lambda lib, x, y: x // y, dtypes=NUMERIC_DTYPES, grad=False,
           make_input=lambda rng, shape, dtype, i: make_array(
               rng, shape, dtype, (-2.0, 2.0) if i == 0 else (0.5, 2.0))),
    unary("floor_divide_scalar", lambda lib, x: x // 2, dtypes=NUMERIC_DTYPES, grad=False),
    unary("rfloor_divide_scalar", lambda lib, x: 7 // x, dtypes=NUMERIC_DTYPES, domain=(0.5, 2.0),
          grad=False),
    unary("floor_divide_negative", lambda lib, x: x // -3, dtypes=NUMERIC_DTYPES, grad=False),
    binary("remainder", lambda lib, x, y: x % y, dtypes=NUMERIC_DTYPES,
           make_input=lambda rng, shape, dtype, i: make_array(
               rng, shape, dtype, (-2.0, 2.0) if i == 0 else (0.5, 2.0))),
    unary("remainder_scalar", lambda lib, x: x % 1.5, dtypes=NUMERIC_DTYPES),
    unary("remainder_negative", lambda lib, x: x % -2, dtypes=NUMERIC_DTYPES),
    unary("rremainder_scalar", lambda lib, x: 5 % x, dtypes=NUMERIC_DTYPES, domain=(0.5, 2.0),
          grad=False),
    binary("fmod", lambda lib, x, y: lib.fmod(x, y), dtypes=NUMERIC_DTYPES,
           make_input=lambda rng, shape, dtype, i: make_array(
               rng, shape, dtype, (-2.0, 2.0) if i == 0 else (0.5, 2.0))),
    binary("pow", lambda lib, x, y: x ** y, dtypes=NUMERIC_DTYPES, gradgrad=True,
           make_input=_pow_base),
    unary("pow_square", lambda lib, x: x ** 2, gradgrad=True),
    unary("pow_cube", lambda lib, x: lib.pow(x, 3), dtypes=NUMERIC_DTYPES, gradgrad=True),
    unary("pow_float", lambda lib, x: x ** 2.5, domain=(0.5, 2.0), gradgrad=True),
    unary("pow_half", lambda lib, x: x ** 0.5, domain=(0.5, 2.0)),
    unary("pow_zero", lambda lib, x: x ** 0, dtypes=NUMERIC_DTYPES),
    unary("pow_negative", lambda lib, x: x ** -1.5, dtypes=FLOAT_DTYPES, domain=(0.5, 2.0)),
    unary("rpow_scalar", lambda lib, x: 2 ** x, gradgrad=True),
    unary("rpow_float", lambda lib, x: 0.5 ** x, dtypes=NUMERIC_DTYPES),
    unary("rpow_zero_base", lambda lib, x: 0.0 ** x, dtypes=FLOAT_DTYPES, gradcheck=False,
          make_input=lambda rng, shape, dtype, i: rng.uniform(0.5, 2.0, size=shape)),
    unary("float_power", lambda lib, x: lib.float_power(x, 2), dtypes=NUMERIC_DTYPES),
    unary("neg", lambda lib, x: -x, gradgrad=True),
    unary("neg_fn", lambda lib, x: lib.neg(x), dtypes=NUMERIC_DTYPES),
    unary("abs", lambda lib, x: abs(x), gradgrad=True),
    unary("abs_fn", lambda lib, x: lib.abs(x), dtypes=NUMERIC_DTYPES),
    unary("abs_at_zero", lambda lib, x: x.abs(), dtypes=FLOAT_DTYPES, make_input=_with_zeros,
          gradcheck=False),
    unary("sqrt_at_zero", lambda lib, x: x.sqrt(), dtypes=FLOAT_DTYPES, gradcheck=False,
          make_input=lambda rng, shape, dtype, i: np.abs(_with_zeros(rng, shape, dtype, i))),
    unary("pow_at_zero", lambda lib, x: x ** 1.5, dtypes=FLOAT_DTYPES, gradcheck=False,
          make_input=lambda rng, shape, dtype, i: np.abs(_with_zeros(rng, shape, dtype, i))),
    binary("pow_tensor_at_zero", lambda lib, x, y: x ** y, dtypes=FLOAT_DTYPES, gradcheck=False,
           make_input=lambda rng, shape, dtype, i: (
               np.abs(_with_zeros(rng, shape, dtype, i)) if i == 0 else _with_zeros(rng, shape, dtype, i))),
    # ---- comparisons, logic, bitwise ----------------------------------------------------------
    *[binary(name, fn, grad=False)
      for name, fn in [("eq", lambda lib, x, y: x == y), ("ne", lambda lib, x, y: x != y),
                       ("lt", lambda lib, x, y: x < y), ("le", lambda lib, x, y: x <= y),
                       ("gt", lambda lib, x, y: x > y), ("ge", lambda lib, x, y: x >= y)]],
    *[unary(name, fn, grad=False)
      for name, fn in [("eq_scalar", lambda lib, x: x == 1), ("ne_scalar", lambda lib, x: x != 0.5),
                       ("lt_scalar", lambda lib, x: x < 1), ("le_scalar", lambda lib, x: x <= -0.5),
                       ("gt_scalar", lambda lib, x: x > 0), ("ge_scalar", lambda lib, x: x >= 1.5),
                       ("rlt_scalar", lambda lib, x: 1 < x), ("eq_fn_scalar", lambda lib, x: lib.eq(x, 2))]],
    *[binary(name, lambda lib, x, y, _name=name: getattr(lib, _name)(x, y), grad=False)
      for name in ("logical_and", "logical_or", "logical_xor")],
    unary("logical_not", grad=False),
    unary("logical_and_scalar", lambda lib, x: lib.logical_and(x, 1.5), grad=False),
    *[binary(name, fn, grad=False)
      for name, fn in [("bitwise_and", lambda lib, x, y: x & y), ("bitwise_or", lambda lib, x, y: x | y),
                       ("bitwise_xor", lambda lib, x, y: x ^ y),
                       ("bitwise_and_fn", lambda lib, x, y: lib.bitwise_and(x, y))]],
    *[unary(name, fn, grad=False)
      for name, fn in [("bitwise_not", lambda lib, x: ~x), ("bitwise_and_scalar", lambda lib, x: x & 3),
                       ("rbitwise_or_scalar", lambda lib, x: 5 | x), ("bitwise_xor_bool", lambda lib, x: x ^ True),
                       ("lshift_scalar", lambda lib, x: x << 2), ("rshift_scalar", lambda lib, x: x >> 1),
                       ("rlshift_scalar", lambda lib, x: 3 << (x & 3)),
                       ("lshift_too_far", lambda lib, x: x << 70)]],
    binary("lshift", lambda lib, x, y: x << y, grad=False, make_input=_shift_amounts),
    binary("rshift", lambda lib, x, y: x >> y, grad=False, make_input=_shift_amounts),
    # ---- unary maths --------------------------------------------------------------------------
    unary("exp", gradgrad=True),
    unary("exp_method", lambda lib, x: x.exp(), dtypes=FLOAT_DTYPES),
    unary("exp2"),
    unary("expm1"),
    unary("log", domain=(0.5, 2.0), gradgrad=True),
    unary("log2", domain=(0.5, 2.0)),
    unary("log10", domain=(0.5, 2.0)),
    unary("log1p", domain=(-0.5, 2.0)),
    unary("sqrt", domain=(0.5, 2.0), gradgrad=True),
    unary("rsqrt", domain=(0.5, 2.0)),
    unary("square", gradgrad=True),
    unary("reciprocal", domain=(0.5, 2.0), gradgrad=True),
    unary("sin", gradgrad=True),
    unary("cos"),
    unary("tan", domain=(-1.2, 1.2)),
    unary("asin", domain=(-0.9, 0.9)),
    unary("acos", domain=(-0.9, 0.9)),
    unary("atan"),
    unary("sinh"),
    unary("cosh"),
    unary("tanh", lambda lib, x: x.tanh(), gradgrad=True),
    unary("asinh"),
    unary("acosh", domain=(1.2, 3.0)),
    unary("atanh", domain=(-0.9, 0.9)),
    unary("sigmoid", gradgrad=True),
    unary("sigmoid_large", lambda lib, x: lib.sigmoid(x * 30), dtypes=FLOAT_DTYPES),
    unary("logit", domain=(0.1, 0.9)),
    unary("logit_eps", lambda lib, x: lib.logit(x, eps=0.2), dtypes=FLOAT_DTYPES, domain=(0.05, 0.95),
          gradcheck=False),
    unary("erf"),
    unary("erfc", domain=(-3.0, 3.0)),
    unary("erfinv", domain=(-0.95, 0.95)),
    unary("erfinv_edges", lambda lib, x: lib.erfinv(x), dtypes=FLOAT_DTYPES, grad=False,
          make_input=lambda rng, shape, dtype, i: np.resize(
              [-1.0, 1.0, 0.0, 0.999999, -0.9999, 1e-8, 1.5], shape)),
    unary("floor"),
    unary("ceil"),
    unary("trunc"),
    unary("round"),
    unary("round_half_to_even", lambda lib, x: lib.round(x), dtypes=FLOAT_DTYPES, gradcheck=False,
          make_input=lambda rng, shape, dtype, i: rng.integers(-4, 4, size=shape) + 0.5),
    unary("round_decimals", lambda lib, x: lib.round(x, decimals=2), dtypes=FLOAT_DTYPES),
    unary("round_negative_decimals", lambda lib, x: lib.round(x * 100, decimals=-1),
          dtypes=("float32", "float64")),
    unary("frac"),
    unary("sign"),
    unary("sign_at_zero", lambda lib, x: lib.sign(x), dtypes=FLOAT_DTYPES, make_input=_with_zeros,
          gradcheck=False),
    unary("nan_to_num", make_input=_with_specials, gradcheck=False),
    unary("nan_to_num_values", lambda lib, x: lib.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0),
          make_input=_with_specials, gradcheck=False),
    unary("isnan", make_input=_with_specials, grad=False),
    unary("isinf", make_input=_with_specials, grad=False),
    unary("isfinite", make_input=_with_specials, grad=False),
    # ---- binary maths -------------------------------------------------------------------------
    binary("atan2", lambda lib, x, y: lib.atan2(x, y)),
    binary("hypot", lambda lib, x, y: lib.hypot(x, y), dtypes=FLOAT_DTYPES),
    binary("maximum", lambda lib, x, y: lib.maximum(x, y), gradgrad=True),
    binary("minimum", lambda lib, x, y: x.minimum(y)),
    binary("maximum_ties", lambda lib, x, y: lib.maximum(x, y), dtypes=FLOAT_DTYPES, gradcheck=False,
           make_input=lambda rng, shape, dtype, i: rng.integers(-1, 2, size=shape).astype(np.float64)),
    unary("clamp", lambda lib, x: lib.clamp(x, -0.5, 0.5), dtypes=NUMERIC_DTYPES),
    unary("clamp_at_bounds", lambda lib, x: x.clamp(-0.5, 0.5), dtypes=FLOAT_DTYPES,
          make_input=_clamp_at_bounds, gradcheck=False),
    unary("clamp_min_only", lambda lib, x: x.clamp(min=0.25), dtypes=NUMERIC_DTYPES),
    unary("clamp_max_only", lambda lib, x: lib.clamp(x, max=1), dtypes=NUMERIC_DTYPES),
    unary("clamp_int_bounds_float_input", lambda lib, x: lib.clip(x, -1, 1)),
    unary("clamp_min_above_max", lambda lib, x: lib.clamp(x, 1.0, -1.0), dtypes=NUMERIC_DTYPES),
    # Not TERNARY: PyTorch's own clamp backward fails when ``x`` broadcasts against the bounds.
    OpInfo("clamp_tensor", lambda lib, x, lo, hi: lib.clamp(x, lo, hi),
           standard_samples(((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((2, 3), (), ())),
           dtypes=NUMERIC_DTYPES, make_input=_distinct_bounds),
    binary("clamp_tensor_min", lambda lib, x, lo: lib.clamp(x, min=lo), dtypes=NUMERIC_DTYPES),
    binary("clamp_tensor_max", lambda lib, x, hi: x.clip(max=hi), dtypes=NUMERIC_DTYPES),
    binary("clamp_min_fn", lambda lib, x, lo: lib.clamp_min(x, lo), dtypes=NUMERIC_DTYPES),
    unary("clamp_max_fn", lambda lib, x: lib.clamp_max(x, 0.5), dtypes=NUMERIC_DTYPES),
    binary("where", lambda lib, x, y: lib.where(x > y, x, y)),
    binary("where_method", lambda lib, x, y: x.where(y < 0, y), dtypes=NUMERIC_DTYPES),
    unary("where_scalar_other", lambda lib, x: lib.where(x > 0, x, 0.0)),
    unary("where_scalar_input", lambda lib, x: lib.where(x > 0, 2, x)),
    binary("where_mixed_dtypes", lambda lib, x, y: lib.where(x > 0, x, y.double()), dtypes=FLOAT_DTYPES),
    binary("lerp_scalar", lambda lib, x, y: lib.lerp(x, y, 0.3), dtypes=FLOAT_DTYPES, gradgrad=True),
    binary("lerp_scalar_high", lambda lib, x, y: x.lerp(y, 0.75), dtypes=FLOAT_DTYPES),
    OpInfo("lerp_tensor", lambda lib, x, y, w: lib.lerp(x, y, w), TERNARY, dtypes=FLOAT_DTYPES,
           make_input=lambda rng, shape, dtype, i: make_array(rng, shape, dtype, (-2.0, 2.0) if i < 2 else (0.0, 1.0))),
    # ---- signs, log-sum-exp, angle units, gcd/lcm, float representation -----------------------
    OpInfo("copysign", lambda lib, a, b: lib.copysign(a, b), _binary_samples(),
           dtypes=FEW_DTYPES + ("float16",)),
    OpInfo("copysign_scalar", lambda lib, a: a.copysign(-1.5), standard_samples(((3, 4),)),
           dtypes=("float32", "float64", "int64")),
    OpInfo("copysign_", lambda lib, a, b: (a * 1).copysign_(b), [Sample(((3, 4), (4,)))],
           dtypes=F32_64),
    OpInfo("logaddexp", lambda lib, a, b: lib.logaddexp(a, b), _binary_samples(),
           dtypes=("float32", "float64", "float16", "bfloat16"), domain=(-20, 20)),
    OpInfo("logaddexp2", lambda lib, a, b: a.logaddexp2(b), _binary_samples(),
           dtypes=("float32", "float64", "float16", "bfloat16"), domain=(-20, 20)),
    _refused("logaddexp_int", lambda lib, a, b: lib.logaddexp(a, b), (3,), (3,), dtypes=("int64",)),
    _refused("logaddexp_scalar", lambda lib, a: lib.logaddexp(a, 1.0), (3,)),
    # PyTorch's gradient of sgn is a ZeroTensor the harness cannot read:
    # tests/test_elementwise.py checks Ember's zeros.
    OpInfo("sgn", lambda lib, x: lib.sgn(x), standard_samples(((3, 4),), ((),), ((0,),)),
           dtypes=ALL_DTYPES, make_input=_with_exact_zeros, grad=False, gradcheck=False),
    OpInfo("sgn_", lambda lib, x: (x * 1).sgn_(), [Sample(((3, 4),))], dtypes=F32_64, grad=False),
    OpInfo("heaviside", lambda lib, x, v: lib.heaviside(x, v), _binary_samples(),
           dtypes=("float32", "float64", "int64", "uint8", "bool"), grad=False, gradcheck=False,
           make_input=_with_exact_zeros),
    _refused("heaviside_dtypes", lambda lib, x, v: lib.heaviside(x, v.double()), (3,), (3,)),
    OpInfo("deg2rad", lambda lib, x: lib.deg2rad(x), standard_samples(((3, 4),), ((),)),
           dtypes=ALL_DTYPES, domain=(-360, 360)),
    OpInfo("rad2deg", lambda lib, x: x.rad2deg(), standard_samples(((3, 4),), ((),)),
           dtypes=ALL_DTYPES),
    OpInfo("deg2rad_", lambda lib, x: (x * 1).deg2rad_(), [Sample(((3, 4),))], dtypes=F32_64),
    OpInfo("gcd", lambda lib, a, b: lib.gcd(a, b), _binary_samples(),
           dtypes=INT_DTYPES, make_input=_integers, grad=False, gradcheck=False),
    OpInfo("lcm", lambda lib, a, b: a.lcm(b), _binary_samples(), dtypes=SIGNED_INTS,
           grad=False, gradcheck=False),
    _refused("gcd_float", lambda lib, a, b: lib.gcd(a, b), (3,), (3,)),
    OpInfo("nextafter", lambda lib, a, b: lib.nextafter(a, b), _binary_samples(),
           dtypes=("float32", "float64", "float16", "bfloat16"), gradcheck=False),
    _refused("nextafter_int", lambda lib, a, b: lib.nextafter(a, b), (3,), (3,), dtypes=("int64",)),
    OpInfo("ldexp", lambda lib, x, e: lib.ldexp(x, e),
           standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())),
           dtypes=("float32", "float64", "float16", "bfloat16"), make_input=_exponents),
    OpInfo("ldexp_ints", lambda lib, x, e: x.ldexp(e), [Sample(((3, 4), (4,)))],
           dtypes=("int64", "int32")),
    OpInfo("frexp", lambda lib, x: lib.frexp(x),
           standard_samples(((3, 4),), ((),), ((0,),)), dtypes=FLOAT_DTYPES, domain=(-50, 50)),
    OpInfo("frexp_zeros", lambda lib, x: lib.frexp(x), [Sample(((3, 4),))], dtypes=FLOAT_DTYPES,
           make_input=lambda rng, shape, dtype, index: _with_exact_zeros(rng, shape, dtype, index) * 17,
           gradcheck=False),
    OpInfo("frexp_method", lambda lib, x: x.frexp().mantissa, [Sample(((3, 4),))], dtypes=F32_64),
    _refused("frexp_int", lambda lib, x: lib.frexp(x), (3,), dtypes=("int64",)),
    # ---- addcmul, addcdiv (addr is in ops_matmul.py) ------------------------------------------
    OpInfo("addcmul", lambda lib, x, a, b: lib.addcmul(x, a, b, value=0.5),
           standard_samples(((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((), (), ()),
                            ((0, 2), (2,), (0, 2))),
           dtypes=FLOAT_DTYPES, gradgrad=True),
    OpInfo("addcmul_ints", lambda lib, x, a, b: x.addcmul(a, b, value=3),
           [Sample(((3, 4), (3, 4), (4,)))], dtypes=("int64", "int32", "uint8")),
    OpInfo("addcmul_", lambda lib, x, a, b: (x * 1).addcmul_(a, b, value=-2),
           [Sample(((3, 4), (3, 4), (4,)))], dtypes=F32_64),
    OpInfo("addcdiv", lambda lib, x, a, b: lib.addcdiv(x, a, b, value=2),
           standard_samples(((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((), (), ())),
           dtypes=FLOAT_DTYPES, make_input=_away_from_zero, gradgrad=True),
    OpInfo("addcdiv_", lambda lib, x, a, b: (x * 1).addcdiv_(a, b),
           [Sample(((3, 4), (3, 4), (4,)))], dtypes=F32_64, make_input=_away_from_zero),
    _refused("addcdiv_ints", lambda lib, x, a, b: lib.addcdiv(x, a, b), (3,), (3,), (3,),
             dtypes=("int64",)),
]
