"""Special functions: gamma family, Bessel I0/I1, the normal distribution, sinc, entropy.

Every function here is a NumPy formulation on the backend's ``xp``; none needs SciPy:

* ``lgamma``: Taylor series of lgamma(1 + t) in (zeta(k) - 1) for |t| <= 1/2 around the zeros at
  1 and 2 (so the result keeps its relative accuracy there), Stirling's series after shifting the
  argument to >= 10 elsewhere, and the reflection formula for negative arguments.
* ``digamma``: the recurrence to x >= 10 plus the asymptotic series, reflection for x < 0 (the
  same scheme as PyTorch's CPU kernel, so both agree even near the root at 1.4616).
* ``polygamma(n >= 1)``: (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta function by direct
  summation up to a shift and the Euler-Maclaurin tail. For n = 1 this is closer to SciPy than
  PyTorch's own trigamma, which stops at three Bernoulli terms (~5e-10 relative).
* ``i0``: the array library's own ``i0`` (NumPy's is Cephes' Chebyshev expansion, PyTorch's too).
* ``i0e, i1, i1e``: the power series (all terms positive, no cancellation) for |x| <= 20 and
  the asymptotic expansion beyond.
* ``ndtr, log_ndtr``: erfc (a backend primitive), with the asymptotic series of log ndtr for
  x < -20, where erfc underflows. (PyTorch's ndtr is (1 + erf(x/sqrt 2))/2, which loses its
  digits below x = -5 and is 0 below -8.3; Ember's keeps them, to the underflow, whether or not
  the input requires grad — so its graph is one node where PyTorch's is that composite's four.)
* ``ndtri``: Acklam's rational approximation refined by one Halley step on erf in the centre and
  one Newton step on log_ndtr in the tails (where p may be subnormal).

* ``erfcx``: exp(x^2) erfc(x) with x^2 split exactly, the asymptotic series past 26.
* ``igamma, igammac``: the regularized incomplete gamma functions P(a, x) and Q(a, x), each tail
  from its own expansion (the series for x < a + 1, the continued fraction beyond), with a
  ``Node`` for the gradient with respect to x (PyTorch has none for a).

The only SciPy use is indirect: the backend's ``erf``/``erfc``/``erfinv`` primitives run SciPy's
vectorised kernels when SciPy is installed (``ember[fast]``) and a Python loop otherwise, so
``ndtr``, ``log_ndtr``, ``ndtri`` and ``erfcx`` are slower, but equally accurate, without SciPy.

Float32 inputs are computed in float64 and rounded once; float16/bfloat16 likewise. Integer and
bool inputs give the default float dtype, as in PyTorch.
"""
import contextlib
import math

import numpy as np  # constants only (series coefficients); array maths goes through ``xp``

from .. import _dtype as dt
from ._dispatch import CompositeBackward, record_composite
from ._dispatch import (Tensor, Node, needs_grad, record, _wrap, binary_operands, as_tensor_on,
                        dtype_name, device_mismatch)
from .elementwise import _maybe_out, _torch_broadcast_errors, where

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "i0", "sinc", "igamma", "igammac"]
METHODS = ["lgamma", "digamma", "polygamma", "polygamma_", "mvlgamma", "i0", "sinc",
           "igamma", "igammac"]
INPLACE = ["lgamma", "digamma", "mvlgamma", "i0", "sinc", "igamma", "igammac"]

_EULER_GAMMA = 0.57721566490153286061
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
_LOG_PI = math.log(math.pi)

# B_2, B_4, ..., B_24: the Bernoulli numbers of the asymptotic (Stirling, Euler-Maclaurin) series.
_BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730]


# ---------------------------------------------------------------------------------------------
# Kernels on float64 arrays
# ---------------------------------------------------------------------------------------------

def _horner(x, coefficients):
    """sum(c_k x^k) for coefficients listed from the highest power down."""
    acc = coefficients[0] + 0 * x
    for c in coefficients[1:]:
        acc = acc * x + c
    return acc


def _power(xp, x, s):
    """x ** s, by repeated squaring when s is a whole number (NumPy's generic pow is slow)."""
    if s != int(s) or s < 1:
        return x ** s
    n, result, base = int(s), None, x
    while n:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    return result


def _shift_subset(xp, x, threshold):
    """The elements below ``threshold``, their mask, and the common shift N that lifts them all
    to at least ``threshold``. Shifting every one of them by the same N (rather than each by its
    own count) costs no masks, and a larger argument only helps the asymptotic series."""
    below = x < threshold
    if not below.any():
        return None, below, 0
    values = x[below]
    return values, below, int(math.ceil(threshold - float(values.min())))


def _hurwitz_zeta(xp, s, q):
    """zeta(s, q) = sum_k (q + k)^-s for a float s > 1 and an array q.

    Terms are summed directly until q + k reaches ``threshold``; Euler-Maclaurin's tail, with
    Bernoulli terms, takes the rest. A threshold that grows with s keeps the tail convergent."""
    threshold = max(10.0, 2.0 * s)
    a = q.copy()
    total = xp.zeros_like(q)
    values, below, shift = _shift_subset(xp, xp.where(xp.isfinite(q), q, threshold), threshold)
    if shift:
        partial = xp.zeros_like(values)
        for k in range(shift):
            partial += _power(xp, 1.0 / (values + k), s)
        total[below] = partial
        a[below] = values + shift
    # Tail: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) a^(-s-2j+1).
    coefficients = []
    rising, factorial = s, 2.0
    for j, b in enumerate(_BERNOULLI, start=1):
        coefficients.append(b / factorial * rising)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        factorial *= (2 * j + 1) * (2 * j + 2)
    inverse = 1.0 / a
    inverse_s = _power(xp, inverse, s)
    w = inverse * inverse
    tail = inverse_s * (a / (s - 1.0) + 0.5 + inverse * _horner(w, coefficients[::-1]))
    out = total + tail
    # Poles at the non-positive integers.
    return xp.where((q <= 0) & (q == xp.floor(q)), math.inf, out)


def _zeta_minus_one_coefficients(count):
    """(-1)^k (zeta(k) - 1) / k for k = count + 1 down to 2, for lgamma's series near 1."""
    ks = np.arange(2, count + 2, dtype=np.float64)
    zm1 = np.array([float(_hurwitz_zeta(np, float(k), np.array([2.0]))[0]) for k in ks])
    return list((((-1.0) ** ks) * zm1 / ks)[::-1])


_LGAMMA_SERIES = _zeta_minus_one_coefficients(30)  # |t| <= 1/2: the last term is ~ 4^-31
_STIRLING = [b / ((2 * k) * (2 * k - 1)) for k, b in enumerate(_BERNOULLI[:8], start=1)]


def _lgamma1p(xp, t):
    """lgamma(1 + t) for |t| <= 1/2, accurate relative to the result near t = 0."""
    return -xp.log1p(t) + t * (1.0 - _EULER_GAMMA) + t * t * _horner(t, _LGAMMA_SERIES)


def _lgamma_stirling(xp, x):
    """lgamma(x) for x >= 2.5: shift to z >= 10, then Stirling's series."""
    z = x.copy()
    log_product = xp.zeros_like(x)
    values, below, shift = _shift_subset(xp, x, 10.0)
    if shift:
        product = values.copy()
        for k in range(1, shift):
            product *= values + k
        log_product[below] = xp.log(product)
        z[below] = values + shift
    w = 1.0 / (z * z)
    series = _horner(w, _STIRLING[::-1]) / z
    return (z - 0.5) * xp.log(z) - z + _HALF_LOG_2PI + series - log_product


def _lgamma_positive(xp, x):
    out = xp.empty_like(x)
    regions = [
        (x < 0.5, lambda v: _lgamma1p(xp, v) - xp.log(v)),
        ((x >= 0.5) & (x < 1.5), lambda v: _lgamma1p(xp, v - 1.0)),
        ((x >= 1.5) & (x < 2.5), lambda v: _lgamma1p(xp, v - 2.0) + xp.log1p(v - 2.0)),
        (x >= 2.5, lambda v: _lgamma_stirling(xp, v)),
    ]
    for mask, fn in regions:
        if mask.any():
            out[mask] = fn(x[mask])
    return out


def _sinpi_abs(xp, x):
    """|sin(pi x)|, with the argument reduced exactly first."""
    return xp.abs(xp.sin(math.pi * (x - xp.round(x))))


def _lgamma(xp, x):
    out = xp.full_like(x, math.inf)  # poles: 0, the negative integers, and +-inf
    positive = (x > 0) & xp.isfinite(x)
    out[positive] = _lgamma_positive(xp, x[positive])
    negative = (x < 0) & (x != xp.floor(x)) & xp.isfinite(x)
    if negative.any():
        v = x[negative]
        out[negative] = (_LOG_PI - xp.log(_sinpi_abs(xp, v))
                         - _lgamma_positive(xp, 1.0 - v))
    out[xp.isnan(x)] = math.nan
    return out


_PSI_ASYMPTOTIC = [1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12]


def _digamma_positive(xp, x):
    acc = xp.zeros_like(x)
    z = x.copy()
    values, below, shift = _shift_subset(xp, x, 10.0)
    if shift:
        # Each element stops as soon as it reaches 10 (not a common shift): near the root at
        # 1.4616 the result is a small difference, and this way its rounding is PyTorch's.
        partial = xp.zeros_like(values)
        for _ in range(shift):
            step = values < 10.0
            partial -= xp.where(step, 1.0 / values, 0.0)
            values = xp.where(step, values + 1.0, values)
        acc[below] = partial
        z[below] = values
    w = 1.0 / (z * z)
    return acc + xp.log(z) - 0.5 / z - w * _horner(w, _PSI_ASYMPTOTIC[::-1])


def _digamma(xp, x):
    negative = x < 0
    frac = x - xp.trunc(x)
    reflected = xp.where(negative, 1.0 - x, x)
    out = _digamma_positive(xp, reflected)
    out = xp.where(negative, out - math.pi / xp.tan(math.pi * frac), out)
    out = xp.where(negative & (frac == 0), math.nan, out)  # poles and -inf
    out = xp.where(x == 0, xp.copysign(math.inf, -x), out)
    out = xp.where(x == math.inf, math.inf, out)
    return out


def _polygamma(xp, n, x):
    if n == 0:
        return _digamma(xp, x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.factorial(n) * _hurwitz_zeta(xp, float(n + 1), x)


def _bessel_series(order, count):
    """Coefficients of I_order(x) / (x/2)^order as a polynomial in y = x^2/4, highest first."""
    return [1.0 / (math.factorial(k) * math.factorial(k + order)) for k in range(count)][::-1]


def _bessel_asymptotic(order, count):
    """Coefficients of sqrt(2 pi x) e^-x I_order(x) as a polynomial in 1/x, highest first."""
    mu = 4.0 * order * order
    coefficients, term = [1.0], 1.0
    for k in range(1, count):
        term *= -(mu - (2 * k - 1) ** 2) / (k * 8.0)
        coefficients.append(term)
    return coefficients[::-1]


# At |x| = 20 the series needs 35 terms and the expansion 27 to reach 1e-17 of the result;
# each only gets better on its own side.
_SERIES_LIMIT = 20.0
_I_SERIES = {0: _bessel_series(0, 38), 1: _bessel_series(1, 38)}
_I_ASYMPTOTIC = {0: _bessel_asymptotic(0, 30), 1: _bessel_asymptotic(1, 30)}


def _bessel_i(xp, x, order, scaled):
    """I0 / I1 of x, times exp(-|x|) when ``scaled``."""
    ax = xp.abs(x)
    out = xp.empty_like(x)
    small = ax <= _SERIES_LIMIT
    if small.any():
        v = ax[small]
        y = v * v * 0.25
        value = _horner(y, _I_SERIES[order])
        if order:
            value = value * v * 0.5
        out[small] = value * xp.exp(-v) if scaled else value
    large = ~small
    if large.any():
        v = ax[large]
        # sqrt(2 pi) sqrt(v), not sqrt(2 pi v), which overflows for v near the float max.
        value = _horner(1.0 / v, _I_ASYMPTOTIC[order]) / (_SQRT_2PI * xp.sqrt(v))
        out[large] = value if scaled else value * xp.exp(v)
    if order:
        out = xp.where(x < 0, -out, out)
    return out


def _ndtr(backend, x):
    return 0.5 * backend.erfc(-x * _SQRT_HALF)


def _log_ndtr(backend, x):
    xp = backend.xp
    out = xp.empty_like(x)
    upper = x >= -1.0
    if upper.any():
        out[upper] = xp.log1p(-0.5 * backend.erfc(x[upper] * _SQRT_HALF))
    middle = (x < -1.0) & (x >= -20.0)
    if middle.any():
        out[middle] = xp.log(0.5 * backend.erfc(-x[middle] * _SQRT_HALF))
    tail = x < -20.0
    if tail.any():
        # ndtr(x) = pdf(x)/|x| (1 - 1/x^2 + 3/x^4 - 15/x^6 ...): erfc has underflowed here.
        v = x[tail]
        w = 1.0 / (v * v)
        terms, term, series = 12, 1.0, xp.ones_like(v)
        for k in range(1, terms):
            term = -term * (2 * k - 1)
            series = series + term * w ** k
        out[tail] = -0.5 * v * v - xp.log(-v) - _HALF_LOG_2PI + xp.log(series)
    out[xp.isnan(x)] = math.nan
    return out


# Acklam's approximation of the normal quantile (relative error 1.15e-9 before refinement).
_ACKLAM_A = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00]
_ACKLAM_B = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
             6.680131188771972e+01, -1.328068155288572e+01, 1.0]
_ACKLAM_C = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00]
_ACKLAM_D = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
             3.754408661907416e+00, 1.0]
_ACKLAM_LOW = 0.02425


def _ndtri(backend, p):
    xp = backend.xp
    # The lower half only: 1 - p is exact for p >= 1/2, and ndtri(p) = -ndtri(1 - p).
    q = xp.where(p > 0.5, 1.0 - p, p)
    x = xp.full_like(q, math.nan)
    central = q >= _ACKLAM_LOW
    if central.any():
        v = q[central]
        c = v - 0.5
        c2 = c * c
        guess = c * _horner(c2, _ACKLAM_A) / _horner(c2, _ACKLAM_B)
        # One Halley step on ndtr(x) = v, written as erf(x/sqrt 2)/2 = v - 1/2 so that it keeps
        # its relative accuracy near v = 1/2 (x = 0).
        u = (0.5 * backend.erf(guess * _SQRT_HALF) - c) * _SQRT_2PI * xp.exp(0.5 * guess * guess)
        x[central] = guess - u / (1.0 + 0.5 * guess * u)
    tail = (q > 0) & (q < _ACKLAM_LOW)
    if tail.any():
        v = q[tail]
        r = xp.sqrt(-2.0 * xp.log(v))
        guess = _horner(r, _ACKLAM_C) / _horner(r, _ACKLAM_D)
        # v may be subnormal, where erfc has few digits left: one Newton step on
        # log ndtr(x) = log v instead, whose tail is an asymptotic series.
        log_cdf = _log_ndtr(backend, guess)
        slope = xp.exp(-0.5 * guess * guess - log_cdf) / _SQRT_2PI
        x[tail] = guess - (log_cdf - xp.log(v)) / slope
    x[q == 0] = -math.inf
    x = xp.where(p > 0.5, -x, x)
    return xp.where((p < 0) | (p > 1), math.nan, x)


def _erfcx(backend, x):
    """exp(x^2) erfc(x). For 0 <= x < 26, x^2 is split exactly into hi + lo (Dekker) so that
    exp(hi) (1 + lo) carries no error from rounding x^2; past 26 erfc underflows and the
    asymptotic series takes over; for x < 0, 2 exp(x^2) - erfcx(-x)."""
    xp = backend.xp
    ax = xp.abs(x)
    out = xp.empty_like(x)
    middle = ax < 26.0
    if middle.any():
        v = ax[middle]
        high = v * v
        v_high, v_low = _split_double(v)
        low = ((v_high * v_high - high) + 2.0 * v_high * v_low) + v_low * v_low
        out[middle] = xp.exp(high) * (1.0 + low) * backend.erfc(v)
    tail = ~middle
    if tail.any():
        v = ax[tail]
        w = 1.0 / (2.0 * v * v)
        series, term = xp.ones_like(v), xp.ones_like(v)
        for k in range(1, 12):
            term = -term * (2 * k - 1) * w
            series = series + term
        out[tail] = series / (v * math.sqrt(math.pi))
    negative = x < 0
    if negative.any():
        v = x[negative]
        v_high, v_low = _split_double(v)
        high = v * v
        low = ((v_high * v_high - high) + 2.0 * v_high * v_low) + v_low * v_low
        out[negative] = 2.0 * xp.exp(high) * (1.0 + low) - out[negative]
    out[x == -math.inf] = math.inf
    out[xp.isnan(x)] = math.nan
    return out


def _split_double(a):
    """Veltkamp's split: a = high + low with high holding 26 bits, so high * high is exact."""
    c = a * 134217729.0  # 2**27 + 1
    high = c - (c - a)
    return high, a - high


def _sinc(xp, x):
    # PyTorch's form: sin(pi x) / (pi x), with the removable singularity filled in.
    product = math.pi * x
    return xp.where(x == 0, 1.0, xp.sin(product) / product)


def _entr(xp, x):
    out = xp.where(x > 0, -x * xp.log(x), xp.where(x == 0, 0.0, -math.inf))
    return xp.where(xp.isnan(x), math.nan, out)


# ---------------------------------------------------------------------------------------------
# Unary ops: forward on float64, backward in Ember ops
# ---------------------------------------------------------------------------------------------

def _float_result_dtype(d):
    return d if d._kind >= 2 else dt.get_default_dtype()


def _unary(input, kernel, node_cls=None, save_out=False, out=None, **attrs):
    """``kernel(backend, float64 array)`` as an op: integers give the default float dtype and
    the result is rounded once to the input's float dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor as input, got {type(input).__name__}")
    if input._dtype._kind > 2:
        raise NotImplementedError(f"special functions do not support {dtype_name(input._dtype)}")
    res_dt = _float_result_dtype(input._dtype)
    x = input._data.astype("float64")
    data = kernel(input._backend, x)
    res = _wrap(input._backend.xp.asarray(data).astype(res_dt.np, copy=False), res_dt, input)
    if node_cls is not None and needs_grad(input):
        record(node_cls, (input,), res, save=(input,), save_out=save_out, **attrs)
    return _maybe_out(res, out)


class LgammaBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * digamma(x)


def lgamma(input, *, out=None):
    return _unary(input, lambda b, x: _lgamma(b.xp, x), LgammaBackward0, out=out)


class DigammaBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * polygamma(1, x)


def digamma(input, *, out=None):
    return _unary(input, lambda b, x: _digamma(b.xp, x), DigammaBackward0, out=out)


class PolygammaBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * polygamma(self.n + 1, x)

    def jvp(self, t):
        return t * polygamma(self.n + 1, self.saved_tensors[0])


def polygamma(n, input=None, *, out=None):
    # ``Tensor.polygamma(n)`` and ``Tensor.polygamma_(n)`` call this with the tensor first.
    if isinstance(n, Tensor) and not isinstance(input, Tensor):
        n, input = input, n
    n = _polygamma_order(n)
    return _unary(input, lambda b, x: _polygamma(b.xp, n, x), PolygammaBackward0, out=out, n=n)


def _polygamma_order(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return int(n)


class PolygammaBackward1(PolygammaBackward0):
    """``Tensor.polygamma_(n)``: PyTorch's in-place overload has its own node (same formula)."""
    __slots__ = ()


def _polygamma_self_first(input, n):
    n = _polygamma_order(n)
    return _unary(input, lambda b, x: _polygamma(b.xp, n, x), PolygammaBackward1, n=n)


def polygamma_(self, n):
    from .inplace import inplace
    return inplace(self, _polygamma_self_first, n)


def mvlgamma(input, p):
    """log of the multivariate gamma function of dimension p, summed from lgamma in Ember ops so
    that its gradient is lgamma's."""
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if input._dtype is dt.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    res_dt = _float_result_dtype(input._dtype)
    x = input if input._dtype is res_dt else input.to(res_dt)
    offsets = _wrap(input._backend.xp.arange(p, dtype=res_dt.np) * -0.5, res_dt, input)

    def composition(x):
        return lgamma(x.unsqueeze(-1) + offsets).sum(-1) + p * (p - 1) * 0.25 * _LOG_PI
    return record_composite(MvlgammaBackward0, (x,), composition)


class MvlgammaBackward0(CompositeBackward):
    __slots__ = ()


def multigammaln(input, p):
    return mvlgamma(input, p)


class I0Backward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * i1(x)


def _i0(backend, x):
    xp = backend.xp
    if hasattr(xp, "i0"):  # NumPy's (and CuPy's) own, on the same Cephes coefficients as PyTorch
        # Its warnings come from NumPy's module, outside the filter on Ember's own modules.
        with xp.errstate(all="ignore") if hasattr(xp, "errstate") else contextlib.nullcontext():
            return xp.i0(x)
    return _bessel_i(xp, x, 0, False)


def i0(input, *, out=None):
    return _unary(input, _i0, I0Backward0, out=out)


class SpecialI0EBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, y = self.saved_tensors
        return grad * (i1e(x) - x.sign() * y)


def i0e(input, *, out=None):
    return _unary(input, lambda b, x: _bessel_i(b.xp, x, 0, True), SpecialI0EBackward0,
                  save_out=True, out=out)


class SpecialI1Backward0(Node):
    """I1'(x) = I0(x) - I1(x)/x, which is 1/2 at 0."""
    __slots__ = ()

    def backward(self, grad):
        x, y = self.saved_tensors
        zero = x == 0
        safe = x.masked_fill(zero, 1.0)
        return grad * where(zero, x.new_full((), 0.5), i0(x) - y / safe)


def i1(input, *, out=None):
    return _unary(input, lambda b, x: _bessel_i(b.xp, x, 1, False), SpecialI1Backward0,
                  save_out=True, out=out)


class SpecialI1EBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, y = self.saved_tensors
        zero = x == 0
        safe = x.masked_fill(zero, 1.0)
        return grad * where(zero, x.new_full((), 0.5), i0e(x) - y * (x.sign() + 1.0 / safe))


def i1e(input, *, out=None):
    return _unary(input, lambda b, x: _bessel_i(b.xp, x, 1, True), SpecialI1EBackward0,
                  save_out=True, out=out)


class SpecialNdtrBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * (x * x * -0.5).exp() / _SQRT_2PI


def ndtr(input, *, out=None):
    return _unary(input, _ndtr, SpecialNdtrBackward0, out=out)


class SpecialLogNdtrBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, y = self.saved_tensors
        return grad * (x * x * -0.5 - y).exp() / _SQRT_2PI


def log_ndtr(input, *, out=None):
    return _unary(input, _log_ndtr, SpecialLogNdtrBackward0, save_out=True, out=out)


class SpecialNdtriBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        _, y = self.saved_tensors
        return grad * (y * y * 0.5).exp() * _SQRT_2PI


def ndtri(input, *, out=None):
    return _unary(input, _ndtri, SpecialNdtriBackward0, save_out=True, out=out)


class SpecialErfcxBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, y = self.saved_tensors
        return grad * (2.0 * x * y - 2.0 / math.sqrt(math.pi))


def erfcx(input, *, out=None):
    return _unary(input, _erfcx, SpecialErfcxBackward0, save_out=True, out=out)


class SincBackward0(Node):
    """sinc'(x) = (cos(pi x) - sinc(x)) / x, which is 0 at 0."""
    __slots__ = ()

    def backward(self, grad):
        x, y = self.saved_tensors
        zero = x == 0
        safe = x.masked_fill(zero, 1.0)
        return grad * ((x * math.pi).cos() - y) / safe * (~zero)


def sinc(input, *, out=None):
    return _unary(input, lambda b, x: _sinc(b.xp, x), SincBackward0, save_out=True, out=out)


class SpecialEntrBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * -(x.log() + 1)


def entr(input, *, out=None):
    return _unary(input, lambda b, x: _entr(b.xp, x), SpecialEntrBackward0, out=out)


# ---------------------------------------------------------------------------------------------
# xlog1py
# ---------------------------------------------------------------------------------------------

class SpecialXlog1PyBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, y = self.saved_tensors
        gx = gy = None
        wants_x, wants_y = self.wants
        if wants_x:
            gx = xlog1py(grad, y).masked_fill((x == 0) & (y <= -1), 0.0)
        if wants_y:
            gy = grad * x / (y + 1)
        return tuple(g for g, wanted in ((gx, 0 in self.operands), (gy, 1 in self.operands))
                     if wanted)

    def jvp(self, *tangents):
        # d(x log1p(y)) = log1p(y) dx + x / (1 + y) dy
        x, y = self.saved_tensors
        tx, ty = dict(zip(self.operands, tangents)).get(0), dict(zip(self.operands, tangents)).get(1)
        out = None
        if tx is not None:
            out = xlog1py(tx, y).masked_fill((x == 0) & (y <= -1), 0.0)
        if ty is not None:
            term = ty * x / (y + 1)
            out = term if out is None else out + term
        return out

    operands = (0, 1)  # which of (x, y) have an edge, in order

    @property
    def wants(self):
        edges = dict(zip(self.operands, self._edges))
        return (edges.get(0) is not None, edges.get(1) is not None)


class SpecialXlog1PyBackward1(SpecialXlog1PyBackward0):  # a number x: the edge is to y
    __slots__ = ()
    operands = (1,)


class SpecialXlog1PyBackward2(SpecialXlog1PyBackward0):  # a number y: the edge is to x
    __slots__ = ()
    operands = (0,)


def xlog1py(input, other, *, out=None):
    """x * log1p(y), 0 where x is 0 (unless y is NaN)."""
    input_is_tensor = isinstance(input, Tensor)
    if not input_is_tensor:
        # A Python number takes the tensor's dtype, as PyTorch's wrapped scalars do.
        b, a, rt = binary_operands(other, input)
        input = as_tensor_on(input, other, rt)
    else:
        a, b, rt = binary_operands(input, other)
    if rt._kind < 2:
        rt = dt.get_default_dtype()
    xp = input._backend.xp
    a = xp.asarray(a, dtype="float64")
    b = xp.asarray(b, dtype="float64")
    data = xp.where(xp.isnan(b), math.nan, xp.where(a == 0, 0.0, a * xp.log1p(b)))
    res = _wrap(xp.asarray(data).astype(rt.np, copy=False), rt, input)
    other_t = other if isinstance(other, Tensor) else None
    if needs_grad(input, other_t):
        y = other_t if other_t is not None else as_tensor_on(other, input, rt)
        if other_t is None:
            record(SpecialXlog1PyBackward2, (input,), res, save=(input, y))
        elif not input_is_tensor:
            record(SpecialXlog1PyBackward1, (other_t,), res, save=(input, y))
        else:
            record(SpecialXlog1PyBackward0, (input, other_t), res, save=(input, y))
    return _maybe_out(res, out)


xlog1py = _torch_broadcast_errors(xlog1py)


# ---------------------------------------------------------------------------------------------
# igamma, igammac: the regularized lower and upper incomplete gamma functions
# ---------------------------------------------------------------------------------------------

# Near x = a the series needs about 9 sqrt(a) terms to reach float64 precision: 5000 covers
# a up to ~3e5, Gamma draws' implicit gradients (ember.distributions) included.
_MAX_TERMS = 5000
_EPS = float(np.finfo(np.float64).eps)


def _log_prefactor(xp, lgamma_a, a, x):
    """log(x^a e^-x / Gamma(a))."""
    return a * xp.log(x) - x - lgamma_a


def _lower_series(xp, a, x):
    """sum_n x^n / (a (a+1) ... (a+n)); converges for all x, fastest for x < a + 1."""
    term = 1.0 / a
    total = term.copy()
    denom = a.copy()
    for _ in range(_MAX_TERMS):
        denom += 1
        term = term * (x / denom)
        total += term
        if not xp.any(xp.abs(term) > xp.abs(total) * _EPS):
            break
    return total


def _upper_fraction(xp, a, x):
    """Continued fraction for Gamma(a, x) e^x x^-a (modified Lentz), for x >= a + 1."""
    tiny = 1e-300
    b = x + 1 - a
    c = xp.full_like(x, 1 / tiny)
    d = 1 / xp.where(xp.abs(b) < tiny, tiny, b)
    h = d.copy()
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = xp.where(xp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        # delta settles within a rounding or two of 1, not below a fixed 1e-16.
        if not xp.any(xp.abs(delta - 1) > 4 * _EPS):
            break
    return h


def regularized_gamma_tails(xp, a, x, lgamma_a, lower):
    """P(a, x) where ``lower``, Q(a, x) elsewhere, for positive finite float64 arrays of one
    shape (``lgamma_a`` is lgamma(a)). Each tail comes from its own expansion, never as 1 minus
    the other, so a tail near 0 keeps its relative precision; the series converges fastest
    for x < a + 1, the continued fraction beyond, which is where callers choose them."""
    out = xp.empty(a.shape)
    for tail, where in ((_lower_series, lower), (_upper_fraction, ~lower)):
        if xp.any(where):
            av, xv = a[where], x[where]
            out[where] = tail(xp, av, xv) * xp.exp(_log_prefactor(xp, lgamma_a[where], av, xv))
    return out


def _igamma_arrays(xp, a, x, lgamma_a, upper):
    """P(a, x) (or Q(a, x) when ``upper``) for float64 arrays of one shape."""
    out = xp.full(a.shape, math.nan)
    valid = (a >= 0) & (x >= 0) & ~(xp.isnan(a) | xp.isnan(x))
    lower_val, upper_val = (0.0, 1.0)
    # Edge cases by PyTorch's rules: a == 0 (x > 0) and x == inf give P = 1; a == inf or
    # x == 0 (a > 0) give P = 0; a == x == 0 is NaN.
    edge_one = valid & (((a == 0) & (x > 0)) | (xp.isinf(x) & ~xp.isinf(a)))
    edge_zero = valid & ((xp.isinf(a) & ~xp.isinf(x)) | ((x == 0) & (a > 0)))
    regular = valid & ~edge_one & ~edge_zero & (a > 0) & (x > 0) & ~xp.isinf(x) & ~xp.isinf(a)
    out[edge_one] = lower_val if upper else upper_val
    out[edge_zero] = upper_val if upper else lower_val
    if xp.any(regular):
        av, xv = a[regular], x[regular]
        lower = xv < av + 1
        tails = regularized_gamma_tails(xp, av, xv, lgamma_a[regular], lower)
        # ``tails`` holds P where ``lower``, Q elsewhere; the function asked for is the other's
        # complement where it is not the one computed.
        out[regular] = xp.where(lower != upper, tails, 1 - tails)
    return out


class IgammaBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        if self._edges[0] is not None:
            raise NotImplementedError(f"the derivative for '{self.fn_name}: input' is not "
                                      "implemented.")
        a, x = self.saved_tensors
        from .. import ops
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); Q = 1 - P.
        density = ops.exp(ops.xlogy(a - 1, x) - x - ops.lgamma(a))
        return None, grad * (-density if self.upper else density)

    def jvp(self, t_a, t_x):
        if t_a is not None:  # as PyTorch, no derivative in a: the fallback raises its error
            return NotImplemented
        a, x = self.saved_tensors
        from .. import ops
        density = ops.exp(ops.xlogy(a - 1, x) - x - ops.lgamma(a))
        return t_x * (-density if self.upper else density)


class IgammacBackward0(IgammaBackward0):
    __slots__ = ()


def _igamma(input, other, upper, out):
    name = "igammac" if upper else "igamma"
    for position, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")
    if other._device is not input._device:
        raise device_mismatch(input, other)
    rt = dt.result_type(input, other)
    if rt._kind != 2:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dtype_name(rt)}'")
    xp = input._backend.xp
    a, x = xp.broadcast_arrays(input._data.astype("float64"), other._data.astype("float64"))
    shape = a.shape
    a, x = a.reshape(-1), x.reshape(-1)  # flat: boolean-mask assignment needs 1-D arrays
    lgamma_a = lgamma(_wrap(xp.ascontiguousarray(a), dt.float64, input))._data
    values = _igamma_arrays(xp, a, x, lgamma_a, upper).reshape(shape)
    res = _wrap(values.astype(rt.np), rt, input)
    if needs_grad(input, other):
        a_t = input if input._dtype is rt else input.to(rt)
        x_t = other if other._dtype is rt else other.to(rt)
        record(IgammacBackward0 if upper else IgammaBackward0, (input, other), res,
               save=(a_t, x_t), upper=upper, fn_name=name)
    return _maybe_out(res, out)


def igamma(input, other, *, out=None):
    return _igamma(input, other, False, out)


def igammac(input, other, *, out=None):
    return _igamma(input, other, True, out)


# One-input element-wise functions: a diagonal Jacobian, so the backward applied to the tangent
# is the forward derivative (ember/autograd/forward_ad.py: elementwise_jvp).
def _forward_derivatives():
    from ..autograd.forward_ad import elementwise_jvp
    for cls in (LgammaBackward0, DigammaBackward0, I0Backward0, SpecialI0EBackward0, SpecialI1Backward0, SpecialI1EBackward0, SpecialNdtrBackward0, SpecialLogNdtrBackward0, SpecialNdtriBackward0, SpecialErfcxBackward0, SincBackward0, SpecialEntrBackward0):
        cls.jvp = elementwise_jvp


_forward_derivatives()
