"""ember.distributions._math: the float64 helpers behind the Gamma sampler's implicit gradient,
the positive-definiteness test, and the public ops the distributions reach through it."""
import numpy as np
import pytest
import scipy.special as sp
import torch

import ember
from ember.distributions import _math

X = np.array([1e-3, 0.1, 0.3, 0.5, 0.9, 1.0, 1.5, 2.0, 3.7, 10.0, 55.5, 1e3, -0.5, -2.3])


def test_np_lgamma_matches_scipy():
    np.testing.assert_allclose(_math.np_lgamma(X), sp.gammaln(X), rtol=1e-13, atol=1e-13)


def test_standard_gamma_grad_is_the_implicit_derivative():
    # d x / d alpha at fixed CDF: compare with the derivative of SciPy's inverse CDF.
    alpha = np.array([0.3, 1.0, 2.5, 40.0])
    q = np.array([0.2, 0.5, 0.7, 0.9])
    x = sp.gammaincinv(alpha, q)
    step = 1e-6 * alpha
    expected = (sp.gammaincinv(alpha + step, q) - sp.gammaincinv(alpha - step, q)) / (2 * step)
    np.testing.assert_allclose(_math.standard_gamma_grad(alpha, x), expected, rtol=1e-5)


def test_gammainc_through_the_public_op():
    a, x = np.array([0.5, 2.0, 7.0]), np.array([0.3, 2.5, 4.0])
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    e, t = _math.gammainc(ember.tensor(a), ex), torch.special.gammainc(torch.tensor(a), tx)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10)
    e.sum().backward()
    t.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-8)


def test_is_positive_definite():
    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    not_symmetric = np.array([[2.0, 0.5], [0.0, 1.0]])
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    with_nan = np.array([[np.nan, 0.0], [0.0, 1.0]])
    result = _math.is_positive_definite(ember.tensor(np.stack([good, not_symmetric, indefinite,
                                                                 with_nan])))
    assert result.tolist() == [True, False, False, False]


@pytest.mark.parametrize("concentration", [0.4, 3.0])
def test_gamma_rsample_gradient_flows(concentration):
    ember.manual_seed(0)
    alpha = ember.tensor([concentration] * 2000, dtype=ember.float64, requires_grad=True)
    sample = ember.distributions.Gamma(alpha, ember.ones(2000, dtype=ember.float64)).rsample()
    sample.sum().backward()
    # E[x] = alpha, so the mean of d x / d alpha over many draws is close to 1
    assert abs(alpha.grad.mean().item() - 1.0) < 0.1
