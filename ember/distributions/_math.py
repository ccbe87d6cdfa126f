"""What the distributions need beyond Ember's public ops: the Gamma sampler with its implicit
reparameterisation gradient (on float64 arrays, over ``igamma``'s incomplete-gamma tails), and
a positive-definiteness test that answers instead of raising. The special functions and
factorisations themselves are Ember's public ops (``ember.lgamma``, ``ember.linalg.cholesky``…),
named here once so each distribution file imports one module.
"""
import math

import numpy as np

import ember
from .._random import sampler, draw_namespace
from ..autograd.graph import Node
from ..ops._dispatch import _wrap, needs_grad, record
from ..ops.creation import _to_backend
from ..ops.special import regularized_gamma_tails

# Lanczos approximation, g = 7, n = 9 (double precision to ~1e-15), for float64 arrays.
_LANCZOS_G = 7.0
_LANCZOS_COEFFS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
                   771.32342877765313, -176.61502916214059, 12.507343278686905,
                   -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def np_lgamma(x):
    """log|Gamma(x)| on a float64 NumPy array (reflection below 0.5)."""
    x = np.asarray(x, dtype=np.float64)
    reflect = x < 0.5
    y = np.where(reflect, 1 - x, x) - 1
    series = _LANCZOS_COEFFS[0]
    for k in range(1, len(_LANCZOS_COEFFS)):
        series = series + _LANCZOS_COEFFS[k] / (y + k)
    t = y + (_LANCZOS_G + 0.5)
    right = _HALF_LOG_2PI + (y + 0.5) * np.log(t) - t + np.log(series)
    xr = np.where(reflect, x, 0.25)
    left = math.log(math.pi) - np.log(np.abs(np.sin(math.pi * xr))) - right
    return np.where(reflect, left, right)


def lgamma(x):
    return ember.lgamma(x)


def digamma(x):
    return ember.digamma(x)


def cholesky(a):
    """Lower Cholesky factor of symmetric positive-definite ``a`` (batched)."""
    return ember.linalg.cholesky(a)


def solve_triangular(a, b, *, upper):
    """X with ``A @ X = B`` for triangular ``A``."""
    return ember.linalg.solve_triangular(a, b, upper=upper)


def gammainc(a, x):
    """Regularized lower incomplete gamma P(a, x), differentiable in ``x``."""
    return ember.special.gammainc(a, x)


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
    # P where x < alpha + 1, else Q: the tail not close to one, the same on both sides of the
    # difference.
    hi = regularized_gamma_tails(np, alpha + step, x, np_lgamma(alpha + step), use_lower)
    lo = regularized_gamma_tails(np, alpha - step, x, np_lgamma(alpha - step), use_lower)
    d_cdf = np.where(use_lower, 1.0, -1.0) * (hi - lo) / (2 * step)
    log_pdf = (alpha - 1) * np.log(x) - x - np_lgamma(alpha)
    return -d_cdf / np.exp(log_pdf)


class _StandardGammaBackward(Node):
    def backward(self, grad):
        (dsample_dalpha,) = self.saved_tensors
        return grad * dsample_dalpha,


def standard_gamma(concentration):
    """Gamma(concentration, 1) draws from the default generator of ``concentration``'s device
    (drawn there), reparameterised: the gradient w.r.t. ``concentration`` is the implicit one
    (see ``standard_gamma_grad``, which computes on the host: only with a gradient to record
    do the parameters and draws travel there)."""
    backend = concentration._backend
    rng = sampler(None, concentration.device)
    xp = draw_namespace(rng)
    alpha = concentration._data if xp is not np else backend.to_numpy(concentration._data)
    alpha = alpha.astype(np.float64)
    draws = rng.standard_gamma(alpha)
    dtype = concentration.dtype
    draws = xp.maximum(draws, np.finfo(dtype.np).tiny)
    out = _wrap(_to_backend(draws.astype(dtype.np), concentration.device), dtype, concentration)
    if needs_grad(concentration):
        grad = standard_gamma_grad(backend.to_numpy(alpha), backend.to_numpy(draws))
        grad = grad.reshape(alpha.shape).astype(dtype.np)
        local = _wrap(_to_backend(grad, concentration.device), dtype, concentration)
        record(_StandardGammaBackward, (concentration,), out, save=(local,))
    return out
