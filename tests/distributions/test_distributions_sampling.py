"""Sampling: Ember's random stream differs from torch's, so samples are checked by their
statistics (fixed seed, so deterministic) and reparameterised gradients against the analytic
identities."""
import numpy as np
import pytest
import scipy.special as sp
import torch

import ember
from ember.distributions import _math

E = ember.distributions
N = 20000


def _f64(x, grad=False):
    return ember.tensor(np.asarray(x, dtype=np.float64), requires_grad=grad)


STAT_CASES = {
    "Normal": lambda: E.Normal(_f64([0.5, -1.0]), _f64([1.0, 2.5])),
    "Uniform": lambda: E.Uniform(_f64([0.0, -2.0]), _f64([1.0, 3.0])),
    "Laplace": lambda: E.Laplace(_f64([0.5, -1.0]), _f64([1.0, 0.3])),
    "Exponential": lambda: E.Exponential(_f64([0.5, 3.0])),
    "Gamma": lambda: E.Gamma(_f64([0.3, 4.0]), _f64([2.0, 0.5])),
    "Beta": lambda: E.Beta(_f64([0.5, 3.0]), _f64([2.0, 1.5])),
    "Dirichlet": lambda: E.Dirichlet(_f64([[0.5, 2.0, 1.0]])),
    "Bernoulli": lambda: E.Bernoulli(_f64([0.1, 0.7])),
    "Categorical": lambda: E.Categorical(_f64([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])),
    "OneHotCategorical": lambda: E.OneHotCategorical(_f64([0.2, 0.5, 0.3])),
    "Poisson": lambda: E.Poisson(_f64([0.5, 12.0])),
    "Binomial": lambda: E.Binomial(_f64([10.0, 3.0]), _f64([0.3, 0.9])),
    "MultivariateNormal": lambda: E.MultivariateNormal(
        _f64([1.0, -1.0]), covariance_matrix=_f64([[2.0, 0.6], [0.6, 1.0]])),
    "LogNormal": lambda: E.LogNormal(_f64([0.0, 0.5]), _f64([0.5, 0.25])),
}


@pytest.mark.parametrize("name", list(STAT_CASES))
def test_sample_statistics(name):
    d = STAT_CASES[name]()
    ember.manual_seed(123)
    x = d.sample((N,)).double().numpy()
    if name == "Categorical":
        probs = d.probs.numpy()
        freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(freq, probs, atol=0.015)
        assert (x[:, 1] != 1).all()  # zero-probability category never drawn
        return
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    stderr = np.sqrt(var / N)
    assert np.all(np.abs(x.mean(0) - mean) < 5 * stderr + 1e-12), (x.mean(0), mean)
    np.testing.assert_allclose(x.var(0), var, rtol=0.08)
    if name == "MultivariateNormal":
        np.testing.assert_allclose(np.cov(x.T), d.covariance_matrix.numpy(), rtol=0.06,
                                   atol=0.03)


@pytest.mark.parametrize("name", list(STAT_CASES))
def test_seed_reproducible(name):
    d = STAT_CASES[name]()
    ember.manual_seed(7)
    a = d.sample((5,)).numpy()
    ember.manual_seed(7)
    b = d.sample((5,)).numpy()
    np.testing.assert_array_equal(a, b)
    c = d.sample((5,)).numpy()
    assert not np.array_equal(a, c)


def test_rsample_normal_laplace_identity():
    for cls in (E.Normal, E.Laplace):
        loc, scale = _f64([0.5, -1.0, 2.0], True), _f64([1.0, 2.0, 0.3], True)
        x = cls(loc, scale).rsample()
        g_loc, g_scale = ember.autograd.grad(x.sum(), [loc, scale])
        np.testing.assert_allclose(g_loc.numpy(), np.ones(3))
        np.testing.assert_allclose(g_scale.numpy(),
                                   ((x - loc) / scale).detach().numpy(), rtol=1e-12)


def test_rsample_uniform_identity():
    low, high = _f64([0.0, -2.0], True), _f64([1.0, 3.0], True)
    x = E.Uniform(low, high).rsample((4,))
    g_low, g_high = ember.autograd.grad(x.sum(), [low, high])
    u = ((x - low) / (high - low)).detach().numpy()
    np.testing.assert_allclose(g_low.numpy(), (1 - u).sum(0), rtol=1e-12)
    np.testing.assert_allclose(g_high.numpy(), u.sum(0), rtol=1e-12)


def test_rsample_exponential_identity():
    rate = _f64([0.5, 3.0], True)
    x = E.Exponential(rate).rsample()
    (g,) = ember.autograd.grad(x.sum(), [rate])
    np.testing.assert_allclose(g.numpy(), (-x / rate).detach().numpy(), rtol=1e-12)


def test_rsample_mvn_identity():
    loc = _f64([1.0, -1.0, 0.0], True)
    tril = _f64(np.linalg.cholesky(np.array([[2.0, 0.6, 0.1], [0.6, 1.0, 0.2],
                                             [0.1, 0.2, 0.5]])), True)
    x = E.MultivariateNormal(loc, scale_tril=tril).rsample()
    g_loc, g_tril = ember.autograd.grad(x.sum(), [loc, tril])
    eps = np.linalg.solve(tril.detach().numpy(), (x - loc).detach().numpy())
    np.testing.assert_allclose(g_loc.numpy(), np.ones(3))
    # x = loc + L @ eps reads every entry of L, as in torch
    np.testing.assert_allclose(g_tril.numpy(), np.outer(np.ones(3), eps), rtol=1e-10)


def test_rsample_mvn_covariance_gradient_flows_through_cholesky():
    cov_np = np.array([[2.0, 0.6], [0.6, 1.0]])
    cov = _f64(cov_np, True)
    ember.manual_seed(0)
    x = E.MultivariateNormal(_f64([0.0, 0.0]), covariance_matrix=cov).rsample()
    (g,) = ember.autograd.grad(x.sum(), [cov])
    # the same x as a function of the covariance: x = chol(cov) @ eps, eps held fixed
    tcov = torch.tensor(cov_np, requires_grad=True)
    eps = torch.linalg.solve_triangular(torch.linalg.cholesky(tcov).detach(),
                                        torch.tensor(x.detach().numpy())[:, None],
                                        upper=False)
    (torch.linalg.cholesky(tcov) @ eps).sum().backward()
    np.testing.assert_allclose(g.numpy(), tcov.grad.numpy(), rtol=1e-10)


def test_rsample_gamma_implicit_gradient():
    conc, rate = _f64([0.2, 1.0, 3.5, 40.0], True), _f64([2.0, 0.5, 1.0, 3.0], True)
    ember.manual_seed(1)
    x = E.Gamma(conc, rate).rsample((50,))
    g_conc, g_rate = ember.autograd.grad(x.sum(), [conc, rate])
    xs, a, r = x.detach().numpy(), conc.detach().numpy(), rate.detach().numpy()
    np.testing.assert_allclose(g_rate.numpy(), (-xs / r).sum(0), rtol=1e-10)
    # torch's own (approximate) implicit gradient at the same standard-gamma draws
    t = torch._standard_gamma_grad(torch.tensor(np.broadcast_to(a, xs.shape).copy()),
                                   torch.tensor(xs * r)).numpy() / r
    np.testing.assert_allclose(g_conc.numpy(), t.sum(0), rtol=2e-3)
    # and the exact one: d/da of the inverse CDF at fixed CDF value, through SciPy
    u = sp.gammainc(a, xs * r)
    h = 1e-6 * a
    exact = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h) / r
    np.testing.assert_allclose(g_conc.numpy(), exact.sum(0), rtol=1e-5)


def test_standard_gamma_grad_accuracy_over_range():
    rng = np.random.default_rng(0)
    for alpha in (0.01, 0.3, 1.0, 7.0, 150.0, 3000.0):
        a = np.full(300, alpha)
        x = np.maximum(rng.standard_gamma(a), 1e-300)
        mine = _math.standard_gamma_grad(a, x)
        u = sp.gammainc(a, x)
        ok = (u > 1e-10) & (u < 1 - 1e-10)
        h = 1e-6 * a
        exact = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)
        np.testing.assert_allclose(mine[ok], exact[ok], rtol=1e-5)


def _beta_first(a, b, shape):
    return E.Beta(a, b).rsample(shape)


def _dirichlet_first(a, b, shape):
    return E.Dirichlet(ember.stack([a, b], -1)).rsample(shape)[..., 0]


@pytest.mark.parametrize("draw", [_beta_first, _dirichlet_first], ids=["Beta", "Dirichlet"])
def test_rsample_beta_dirichlet_pathwise_gradient_is_unbiased(draw):
    # d E[x] / d(a, b) for x ~ Beta(a, b): E[x] = a / (a + b)
    a, b = _f64([0.7, 2.0, 5.0], True), _f64([1.5, 0.4, 5.0], True)
    ember.manual_seed(3)
    x = draw(a, b, (N,))
    g_a, g_b = ember.autograd.grad(x.mean(0).sum(), [a, b])
    an, bn = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(g_a.numpy(), bn / (an + bn) ** 2, rtol=0.05, atol=2e-3)
    np.testing.assert_allclose(g_b.numpy(), -an / (an + bn) ** 2, rtol=0.05, atol=2e-3)


def test_dirichlet_samples_on_simplex_and_grad_of_sum_is_zero():
    c = _f64([[0.3, 1.0, 4.0]], True)
    x = E.Dirichlet(c).rsample((100,))
    np.testing.assert_allclose(x.sum(-1).detach().numpy(), 1.0, rtol=1e-12)
    (g,) = ember.autograd.grad(x.sum(), [c])
    np.testing.assert_allclose(g.numpy(), 0.0, atol=1e-8)


def test_sample_has_no_grad_and_rsample_has():
    loc = _f64([0.0], True)
    d = E.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    g = E.Gamma(_f64([2.0], True), 1.0)
    assert not g.sample().requires_grad and g.rsample().requires_grad
    with pytest.raises(NotImplementedError):
        E.Bernoulli(_f64([0.3])).rsample()


def test_straight_through_onehot():
    p = _f64([0.2, 0.5, 0.3], True)
    d = E.OneHotCategoricalStraightThrough(p)
    s = d.rsample((4,))
    assert set(np.unique(s.detach().numpy())) <= {0.0, 1.0}
    (g,) = ember.autograd.grad((s * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum(),
                               [p])
    # gradient of 4 * <w, probs> through the probs/p normalisation
    w = np.array([1.0, 2.0, 3.0])
    pn = p.detach().numpy()
    expected = 4 * (w - (w * pn).sum()) / pn.sum()
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-10)


def test_gamma_cdf_gradient_in_value():
    x = _f64([0.3, 1.0, 2.5], True)
    c, r = np.array([0.5, 2.0, 3.0]), np.array([1.0, 2.0, 0.5])
    y = E.Gamma(_f64(c), _f64(r)).cdf(x)
    (g,) = ember.autograd.grad(y.sum(), [x])
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    torch.distributions.Gamma(torch.tensor(c), torch.tensor(r)).cdf(tx).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), sp.gammainc(c, r * x.detach().numpy()),
                               rtol=1e-10)
    np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), rtol=1e-8)
