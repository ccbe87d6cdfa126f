"""Special functions, linear algebra and samplers the distributions need before Ember's own
versions exist.

``lgamma``/``digamma`` prefer ``ember.lgamma``/``ember.digamma`` and ``cholesky`` /
``solve_triangular`` prefer ``ember.linalg``'s once those land; until then the private versions
below are used. They are compositions of Ember ops (or ops with an Ember-op backward), so
``log_prob``/``entropy`` stay differentiable to any order. Replace them by the public ops once
those are in.
"""
import math

import numpy as np

import ember
from .._random import numpy_generator
from ..autograd.graph import Node
from ..ops._dispatch import _wrap, needs_grad, record
from ..ops.creation import _to_backend

# Lanczos approximation, g = 7, n = 9 (double precision to ~1e-15).
_LANCZOS_G = 7.0
_LANCZOS_COEFFS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
                   771.32342877765313, -176.61502916214059, 12.507343278686905,
                   -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lgamma_generic(x, ns):
    """log|Gamma(x)| with ``ns`` = numpy or ember (same names: where, log, sin, abs)."""
    reflect = x < 0.5
    y = ns.where(reflect, 1 - x, x) - 1
    series = _LANCZOS_COEFFS[0]
    for k in range(1, len(_LANCZOS_COEFFS)):
        series = series + _LANCZOS_COEFFS[k] / (y + k)
    t = y + (_LANCZOS_G + 0.5)
    right = _HALF_LOG_2PI + (y + 0.5) * ns.log(t) - t + ns.log(series)
    # Reflection on a masked copy so the unused branch has finite gradients.
    xr = ns.where(reflect, x, 0.25)
    left = math.log(math.pi) - ns.log(ns.abs(ns.sin(math.pi * xr))) - right
    return ns.where(reflect, left, right)


def _digamma_generic(x, ns):
    """psi(x): recurrence up to x + 6, then the asymptotic series; reflection below 0.5."""
    reflect = x < 0.5
    y = ns.where(reflect, 1 - x, x)
    shift = 0.0
    for k in range(6):
        shift = shift + 1 / (y + k)
    z = y + 6
    inv2 = 1 / (z * z)
    tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    value = ns.log(z) - 0.5 / z - tail - shift
    xr = ns.where(reflect, x, 0.25)
    return ns.where(reflect, value - math.pi / ns.tan(math.pi * xr), value)


def _in_float64(fn, x):
    """Lanczos sums cancel badly in single precision: compute in float64, round once."""
    return fn(x.double(), ember).to(x.dtype)


def lgamma_fallback(x):
    return _in_float64(_lgamma_generic, x)


def digamma_fallback(x):
    return _in_float64(_digamma_generic, x)


def lgamma(x):
    public = getattr(ember, "lgamma", None)
    return public(x) if public is not None else lgamma_fallback(x)


def digamma(x):
    public = getattr(ember, "digamma", None)
    return public(x) if public is not None else digamma_fallback(x)


def np_lgamma(x):
    return _lgamma_generic(np.asarray(x, dtype=np.float64), np)


# ---------------------------------------------------------------------------------------------
# linear algebra
# ---------------------------------------------------------------------------------------------

def _public_linalg(name):
    return getattr(getattr(ember, "linalg", None), name, None)


class _SolveTriangularBackward(Node):
    def backward(self, grad):
        a, result = self.saved_tensors
        upper = self.upper
        grad_b = solve_triangular(a.mT, grad, upper=not upper)
        grad_a = -(grad_b @ result.mT)
        grad_a = grad_a.triu() if upper else grad_a.tril()
        return grad_a, grad_b


def solve_triangular(a, b, *, upper):
    """X with ``A @ X = B`` for triangular ``A`` (only its ``upper``/lower triangle is read)."""
    public = _public_linalg("solve_triangular")
    if public is not None:
        return public(a, b, upper=upper)
    return solve_triangular_fallback(a, b, upper=upper)


def solve_triangular_fallback(a, b, *, upper):
    xp = a._backend.xp
    tri = xp.triu(a._data) if upper else xp.tril(a._data)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    tri = xp.broadcast_to(tri, batch + tuple(a.shape[-2:]))
    rhs = xp.broadcast_to(b._data, batch + tuple(b.shape[-2:]))
    out = _wrap(xp.linalg.solve(tri, rhs), a.dtype, a)
    if needs_grad(a, b):
        record(_SolveTriangularBackward, (a, b), out, save=(a,), save_out=True, upper=upper)
    return out


class _CholeskyBackward(Node):
    def backward(self, grad):
        (lower,) = self.saved_tensors
        # A = L L^T: grad_A = sym(L^-T Phi(L^T grad_L) L^-1), Phi = lower triangle, half diagonal.
        phi = (lower.mT @ grad.tril()).tril()
        phi = phi - 0.5 * ember.diag_embed(phi.diagonal(dim1=-2, dim2=-1))
        eye = ember.eye(lower.shape[-1], dtype=lower.dtype, device=lower.device)
        lower_inv = solve_triangular(lower, eye, upper=False)
        grad_a = lower_inv.mT @ phi @ lower_inv
        return 0.5 * (grad_a + grad_a.mT),


def cholesky(a):
    """Lower Cholesky factor of symmetric positive-definite ``a`` (batched)."""
    public = _public_linalg("cholesky")
    return public(a) if public is not None else cholesky_fallback(a)


def cholesky_fallback(a):
    xp = a._backend.xp
    try:
        factor = xp.linalg.cholesky(a._data)
    except np.linalg.LinAlgError:
        raise RuntimeError("linalg.cholesky: The factorization could not be completed because "
                           "the input is not positive-definite.") from None
    out = _wrap(factor, a.dtype, a)
    if needs_grad(a):
        record(_CholeskyBackward, (a,), out, save_out=True)
    return out


def is_positive_definite(a):
    """Per-matrix bool tensor: symmetric with a Cholesky factor (no error for a bad one)."""
    xp = a._backend.xp
    data = a._data
    symmetric = xp.all(xp.isclose(data, xp.swapaxes(data, -1, -2), atol=1e-6), axis=(-2, -1))
    finite = xp.all(xp.isfinite(data), axis=(-2, -1))
    safe = xp.where((symmetric & finite)[..., None, None], data,
                    xp.broadcast_to(xp.eye(data.shape[-1], dtype=data.dtype), data.shape))
    eigenvalues = xp.linalg.eigvalsh(safe)
    return _wrap(symmetric & finite & xp.all(eigenvalues > 0, axis=-1), ember.bool, a)


# ---------------------------------------------------------------------------------------------
# Gamma sampling with implicit reparameterisation gradients
# ---------------------------------------------------------------------------------------------

def _regularized_lower_series(a, x, xp):
    """P(a, x) by its power series; converges fast for x < a + 1."""
    term = 1.0 / a
    total = term.copy()
    n = 0
    active = xp.ones(a.shape, dtype=bool)
    while active.any() and n < 5000:
        n += 1
        term = xp.where(active, term * x / (a + n), 0.0)
        total = total + term
        active = xp.abs(term) > xp.abs(total) * 1e-17
    return total * xp.exp(a * xp.log(x) - x - _lgamma_generic(a, xp))


def _regularized_upper_fraction(a, x, xp):
    """Q(a, x) by Legendre's continued fraction (modified Lentz); for x >= a + 1."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = xp.full(a.shape, 1.0 / tiny)
    d = 1.0 / b
    h = d.copy()
    i = 0
    active = xp.ones(a.shape, dtype=bool)
    while active.any() and i < 5000:
        i += 1
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = xp.where(xp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        delta = xp.where(active, d * c, 1.0)
        h = h * delta
        active = xp.abs(delta - 1.0) > 1e-16
    return xp.exp(a * xp.log(x) - x - _lgamma_generic(a, xp)) * h


def _regularized_gamma_tail(a, x, use_lower, xp=np):
    """P(a, x) where ``use_lower``, else Q(a, x): whichever is not close to one."""
    out = xp.empty(a.shape)
    if use_lower.any():
        out[use_lower] = _regularized_lower_series(a[use_lower], x[use_lower], xp)
    upper = ~use_lower
    if upper.any():
        out[upper] = _regularized_upper_fraction(a[upper], x[upper], xp)
    return out


def standard_gamma_grad(alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1) held at fixed CDF value (implicit
    reparameterisation): -dP(alpha, x)/dalpha / pdf(x; alpha), the alpha-derivative by a central
    difference of the regularized incomplete gamma function in float64."""
    alpha = np.asarray(alpha, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    alpha, x = np.broadcast_arrays(alpha, x)
    alpha, x = alpha.ravel(), x.ravel()
    use_lower = x < alpha + 1
    step = 1e-5 * alpha
    hi = _regularized_gamma_tail(alpha + step, x, use_lower)
    lo = _regularized_gamma_tail(alpha - step, x, use_lower)
    d_cdf = np.where(use_lower, 1.0, -1.0) * (hi - lo) / (2 * step)
    log_pdf = (alpha - 1) * np.log(x) - x - np_lgamma(alpha)
    return -d_cdf / np.exp(log_pdf)


class _StandardGammaBackward(Node):
    def backward(self, grad):
        (dsample_dalpha,) = self.saved_tensors
        return grad * dsample_dalpha,


def standard_gamma(concentration):
    """Gamma(concentration, 1) draws from Ember's default generator, reparameterised: the
    gradient w.r.t. ``concentration`` is the implicit one (see ``standard_gamma_grad``)."""
    backend = concentration._backend
    alpha = backend.to_numpy(concentration._data).astype(np.float64)
    draws = numpy_generator(None).standard_gamma(alpha)
    dtype = concentration.dtype
    draws = np.maximum(draws, np.finfo(dtype.np).tiny)
    out = _wrap(_to_backend(draws.astype(dtype.np), concentration.device), dtype, concentration)
    if needs_grad(concentration):
        grad = standard_gamma_grad(alpha, draws).reshape(alpha.shape).astype(dtype.np)
        local = _wrap(_to_backend(grad, concentration.device), dtype, concentration)
        record(_StandardGammaBackward, (concentration,), out, save=(local,))
    return out


def _regularized_gamma_lower(a, x, xp):
    """P(a, x) on float64 arrays of one shape (x >= 0)."""
    a, x = a.ravel(), x.ravel()
    out = xp.zeros(a.shape)
    positive = x > 0
    use_lower = positive & (x < a + 1)
    tail = _regularized_gamma_tail(a[positive], x[positive], use_lower[positive], xp)
    out[positive] = xp.where(use_lower[positive], tail, 1.0 - tail)
    return out


class _GammaincBackward(Node):
    def backward(self, grad):
        a, x = self.saved_tensors
        if self.needs_a_grad:
            raise NotImplementedError("the derivative for 'igamma: input' is not implemented.")
        density = ember.exp((a - 1) * ember.log(x) - x - lgamma(a))
        return None, grad * density


def gammainc(a, x):
    """Regularized lower incomplete gamma P(a, x), differentiable in ``x``."""
    public = getattr(getattr(ember, "special", None), "gammainc", None)
    return public(a, x) if public is not None else gammainc_fallback(a, x)


def gammainc_fallback(a, x):
    a, x = ember.broadcast_tensors(a, x)
    xp = a._backend.xp
    a64 = a._data.astype(xp.float64)
    x64 = x._data.astype(xp.float64)
    values = _regularized_gamma_lower(a64, x64, xp).reshape(a64.shape)
    out = _wrap(values.astype(a.dtype.np), a.dtype, a)
    if needs_grad(a, x):
        record(_GammaincBackward, (a, x), out, save=(a, x), needs_a_grad=needs_grad(a))
    return out
