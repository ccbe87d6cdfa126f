"""The private fallbacks in ember.distributions._math (used while ember.lgamma/digamma,
ember.linalg.cholesky/solve_triangular and ember.special.gammainc are absent), against torch."""
import numpy as np
import pytest
import scipy.special as sp
import torch

import ember
from ember.distributions import _math


def _pair(x, grad=True):
    return (torch.tensor(x, requires_grad=grad), ember.tensor(x, requires_grad=grad))


X = np.array([1e-3, 0.1, 0.3, 0.5, 0.9, 1.0, 1.5, 2.0, 3.7, 10.0, 55.5, 1e3, -0.5, -2.3])


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_special_fallbacks_value_and_two_derivatives(name):
    fallback = getattr(_math, f"{name}_fallback")
    tx, ex = _pair(X)
    t, e = getattr(torch, name)(tx), fallback(ex)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-11, atol=1e-11)
    (tg,) = torch.autograd.grad(t.sum(), tx, create_graph=True)
    (eg,) = ember.autograd.grad(e.sum(), ex, create_graph=True)
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-9, atol=1e-9)
    if name == "lgamma":  # second derivative (trigamma) on the positive axis
        pos = X > 0
        (tgg,) = torch.autograd.grad(tg[pos].sum(), tx)
        (egg,) = ember.autograd.grad(eg[ember.tensor(pos)].sum(), ex)
        np.testing.assert_allclose(egg.numpy()[pos], tgg.numpy()[pos], rtol=1e-7)


def test_special_fallbacks_float32():
    x = X[X > 0].astype(np.float32)
    e = _math.lgamma_fallback(ember.tensor(x))
    assert e.dtype == ember.float32
    np.testing.assert_allclose(e.numpy(), torch.lgamma(torch.tensor(x)).numpy(), rtol=1e-5,
                               atol=1e-5)


def _spd(batch, n, rng):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_cholesky_fallback_value_and_grad():
    rng = np.random.default_rng(0)
    a = _spd((2,), 4, rng)
    w = rng.normal(size=(2, 4, 4))
    ta, ea = _pair(a)
    tl, el = torch.linalg.cholesky(ta), _math.cholesky_fallback(ea)
    np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), rtol=1e-10)
    (tl * torch.tensor(w)).sum().backward()
    (el * ember.tensor(w)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    with pytest.raises(RuntimeError, match="not positive-definite"):
        _math.cholesky_fallback(ember.tensor([[1.0, 2.0], [2.0, 1.0]]))


@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular_fallback_value_and_grad(upper):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=(1, 4, 2))
    w = rng.normal(size=(3, 4, 2))
    ta, ea = _pair(a)
    tb, eb = _pair(b)
    t = torch.linalg.solve_triangular(ta, tb, upper=upper)
    e = _math.solve_triangular_fallback(ea, eb, upper=upper)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10)
    (t * torch.tensor(w)).sum().backward()
    (e * ember.tensor(w)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_fallbacks_gradcheck():
    rng = np.random.default_rng(2)
    a = ember.tensor(_spd((), 3, rng), requires_grad=True)
    sym = lambda m: _math.cholesky_fallback((m + m.mT) / 2)  # noqa: E731
    assert ember.autograd.gradcheck(sym, (a,))
    low = ember.tensor(np.tril(rng.normal(size=(3, 3))) + 3 * np.eye(3), requires_grad=True)
    rhs = ember.tensor(rng.normal(size=(3, 2)), requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda m, r: _math.solve_triangular_fallback(m, r, upper=False), (low, rhs))
    x = ember.tensor([0.3, 1.7, 6.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(_math.digamma_fallback, (x,))
    assert ember.autograd.gradcheck(_math.lgamma_fallback, (x,))


def test_gammainc_fallback():
    rng = np.random.default_rng(3)
    a = rng.uniform(0.05, 200, size=500)
    x = rng.gamma(a) * rng.uniform(0.3, 2.0, size=500)
    x[:5] = 0.0
    e = _math.gammainc_fallback(ember.tensor(a), ember.tensor(x))
    np.testing.assert_allclose(e.numpy(), sp.gammainc(a, x), rtol=1e-10, atol=1e-14)
    ea = ember.tensor([2.0], requires_grad=True)
    y = _math.gammainc_fallback(ea, ember.tensor([1.0]))
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input'"):
        y.sum().backward()


def test_distributions_through_fallbacks(monkeypatch):
    """With the public special functions and linalg hidden, results still match torch."""
    for name in ("lgamma", "digamma"):
        monkeypatch.delattr(ember, name, raising=False)
    for name in ("cholesky", "solve_triangular"):
        monkeypatch.delattr(ember.linalg, name, raising=False)
    rng = np.random.default_rng(4)
    conc, rate = rng.uniform(0.5, 3, 4), rng.uniform(0.5, 2, 4)
    value = rng.uniform(0.1, 3, 4)
    cov = _spd((), 3, rng)
    loc = rng.normal(size=3)
    t_lib, e_lib = torch, ember
    tc, ec = _pair(conc)
    tg = t_lib.distributions.Gamma(tc, torch.tensor(rate))
    eg = e_lib.distributions.Gamma(ec, ember.tensor(rate))
    t = tg.log_prob(torch.tensor(value)) + tg.entropy()
    e = eg.log_prob(ember.tensor(value)) + eg.entropy()
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-9)
    t.sum().backward()
    e.sum().backward()
    np.testing.assert_allclose(ec.grad.numpy(), tc.grad.numpy(), rtol=1e-8)
    tm = t_lib.distributions.MultivariateNormal(torch.tensor(loc),
                                                covariance_matrix=torch.tensor(cov))
    em = e_lib.distributions.MultivariateNormal(ember.tensor(loc),
                                                covariance_matrix=ember.tensor(cov))
    v = rng.normal(size=(5, 3))
    np.testing.assert_allclose(em.log_prob(ember.tensor(v)).numpy(),
                               tm.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(em.precision_matrix.numpy(), tm.precision_matrix.numpy(),
                               rtol=1e-10)
    tq = torch.distributions.MultivariateNormal(torch.zeros(3), precision_matrix=torch.tensor(
        cov, dtype=torch.float32))
    eq = ember.distributions.MultivariateNormal(ember.zeros(3), precision_matrix=ember.tensor(
        cov, dtype=ember.float32))
    np.testing.assert_allclose(eq.scale_tril.numpy(), tq.scale_tril.numpy(), rtol=1e-5)
    tb = torch.distributions.Dirichlet(torch.tensor(conc))
    eb = ember.distributions.Dirichlet(ember.tensor(conc))
    np.testing.assert_allclose(eb.entropy().numpy(), tb.entropy().numpy(), rtol=1e-9)
