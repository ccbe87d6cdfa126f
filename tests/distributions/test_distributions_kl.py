"""kl_divergence values and gradients against torch for every pair Ember registers."""
import numpy as np
import pytest
import torch

import ember
from dist_cases import _pos, _real, _simplex, _spd, _tril, _unit

R = np.random.default_rng(7)


def normal(l, a, b):
    return l.distributions.Normal(a, b)


def laplace(l, a, b):
    return l.distributions.Laplace(a, b)


def uniform(l, a, b):
    return l.distributions.Uniform(a, a + b)


def unit_uniform(l, a, b):
    # inside [0, 1] so that KL(Uniform || Beta) is finite for some entries
    return l.distributions.Uniform(a * 0.4, a * 0.4 + b * 0.5)


def exponential(l, r):
    return l.distributions.Exponential(r)


def gamma(l, c, r):
    return l.distributions.Gamma(c, r)


def beta(l, a, b):
    return l.distributions.Beta(a, b)


def dirichlet(l, c):
    return l.distributions.Dirichlet(c)


def bernoulli(l, p):
    return l.distributions.Bernoulli(p)


def poisson(l, r):
    return l.distributions.Poisson(r)


def binomial(l, p):
    return l.distributions.Binomial(5, p)


def categorical(l, p):
    return l.distributions.Categorical(p)


def onehot(l, p):
    return l.distributions.OneHotCategorical(p)


def mvn_cov(l, m, c):
    return l.distributions.MultivariateNormal(m, covariance_matrix=c)


def mvn_tril(l, m, c):
    return l.distributions.MultivariateNormal(m, scale_tril=c)


def indep_normal(l, a, b):
    return l.distributions.Independent(l.distributions.Normal(a, b), 1)


def lognormal(l, a, b):
    return l.distributions.LogNormal(a, b)


P2 = lambda: [_real(4), _pos(4)]  # noqa: E731
POS2 = lambda: [_pos(4, low=0.6), _pos(4)]  # noqa: E731
UNIT_PARAMS = lambda: [_unit(4), _unit(4)]  # noqa: E731

# (p builder, p params, q builder, q params)
PAIRS = [
    (normal, P2, normal, P2), (laplace, P2, laplace, P2), (uniform, P2, uniform, P2),
    (exponential, lambda: [_pos(4)], exponential, lambda: [_pos(4)]),
    (gamma, POS2, gamma, POS2), (beta, POS2, beta, POS2),
    (dirichlet, lambda: [_pos(3, 4, low=0.6)], dirichlet, lambda: [_pos(3, 4, low=0.6)]),
    (bernoulli, lambda: [_unit(4)], bernoulli, lambda: [_unit(4)]),
    (poisson, lambda: [_pos(4)], poisson, lambda: [_pos(4)]),
    (binomial, lambda: [_unit(4)], binomial, lambda: [_unit(4)]),
    (categorical, lambda: [_simplex(3, 4)], categorical, lambda: [_simplex(3, 4)]),
    (onehot, lambda: [_simplex(3, 4)], onehot, lambda: [_simplex(3, 4)]),
    (mvn_cov, lambda: [_real(2, 3), _spd((2,), 3)], mvn_cov, lambda: [_real(3), _spd((), 3)]),
    (mvn_tril, lambda: [_real(3), _tril((2,), 3)], mvn_cov, lambda: [_real(2, 3), _spd((2,), 3)]),
    (indep_normal, lambda: [_real(2, 3), _pos(2, 3)], indep_normal,
     lambda: [_real(2, 3), _pos(2, 3)]),
    (lognormal, P2, lognormal, P2),
    # across families
    (bernoulli, lambda: [_unit(4)], poisson, lambda: [_pos(4)]),
    (beta, POS2, exponential, lambda: [_pos(4)]),
    (beta, POS2, gamma, POS2), (beta, POS2, normal, P2),
    (beta, POS2, uniform, lambda: [R.uniform(-0.5, 0.2, 4), R.uniform(0.5, 2, 4)]),
    (exponential, lambda: [_pos(4)], beta, POS2),
    (exponential, lambda: [_pos(4)], uniform, P2),
    (exponential, lambda: [_pos(4)], gamma, POS2),
    (exponential, lambda: [_pos(4)], normal, P2),
    (gamma, POS2, beta, POS2), (gamma, POS2, uniform, P2),
    (gamma, POS2, exponential, lambda: [_pos(4)]), (gamma, POS2, normal, P2),
    (laplace, P2, beta, POS2), (laplace, P2, exponential, lambda: [_pos(4)]),
    (laplace, P2, gamma, POS2), (laplace, P2, uniform, P2), (laplace, P2, normal, P2),
    (normal, P2, beta, POS2), (normal, P2, exponential, lambda: [_pos(4)]),
    (normal, P2, gamma, POS2), (normal, P2, uniform, P2), (normal, P2, laplace, P2),
    (poisson, lambda: [_pos(4)], bernoulli, lambda: [_unit(4)]),
    (poisson, lambda: [_pos(4)], binomial, lambda: [_unit(4)]),
    (unit_uniform, UNIT_PARAMS, beta, POS2),
    (uniform, lambda: [R.uniform(-0.5, 1, 4), _pos(4)], exponential, lambda: [_pos(4)]),
    (uniform, lambda: [R.uniform(-0.5, 1, 4), _pos(4)], gamma, POS2),
    (uniform, P2, normal, P2),
]


def _ids():
    return [f"{p.__name__}-{q.__name__}" for p, _, q, _ in PAIRS]


@pytest.mark.parametrize("p_build,p_params,q_build,q_params", PAIRS, ids=_ids())
def test_kl_value_and_grad(p_build, p_params, q_build, q_params):
    pp, qp = p_params(), q_params()
    tp = [torch.tensor(a, requires_grad=True) for a in pp]
    tq = [torch.tensor(a, requires_grad=True) for a in qp]
    ep = [ember.tensor(a, requires_grad=True) for a in pp]
    eq = [ember.tensor(a, requires_grad=True) for a in qp]
    t = torch.distributions.kl_divergence(p_build(torch, *tp), q_build(torch, *tq))
    e = ember.distributions.kl_divergence(p_build(ember, *ep), q_build(ember, *eq))
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-9)
    finite_t = torch.isfinite(t)
    if finite_t.any() and t.requires_grad:
        t[finite_t].sum().backward()
        finite_e = ember.tensor(finite_t.numpy())
        e[finite_e].sum().backward()
        for a, b in zip(ep + eq, tp + tq):
            if b.grad is None:
                assert a.grad is None or not a.grad.numpy().any()
            else:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5,
                                           atol=1e-8)


def test_kl_not_implemented_message():
    p = ember.distributions.Categorical(ember.tensor([0.5, 0.5]))
    q = ember.distributions.Normal(0.0, 1.0)
    with pytest.raises(NotImplementedError) as te:
        torch.distributions.kl_divergence(torch.distributions.Categorical(torch.tensor([.5, .5])),
                                          torch.distributions.Normal(0.0, 1.0))
    with pytest.raises(NotImplementedError) as ee:
        ember.distributions.kl_divergence(p, q)
    assert str(ee.value) == str(te.value)


def test_kl_cross_exponential_family_raises():
    # Both are exponential families, but of different types and with no registered pair.
    with pytest.raises(NotImplementedError, match="cross KL-divergence"):
        ember.distributions.kl_divergence(ember.distributions.Bernoulli(ember.tensor([0.3])),
                                          ember.distributions.Dirichlet(ember.ones(2)))


def test_binomial_kl_total_count_errors_and_infinity():
    e = ember.distributions
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        e.kl_divergence(e.Binomial(3, ember.tensor([0.3])), e.Binomial(5, ember.tensor([0.3])))
    kl = e.kl_divergence(e.Binomial(ember.tensor([5.0, 3.0]), ember.tensor([0.3, 0.3])),
                         e.Binomial(ember.tensor([3.0, 3.0]), ember.tensor([0.4, 0.4])))
    t = torch.distributions.kl_divergence(
        torch.distributions.Binomial(torch.tensor([5.0, 3.0]), torch.tensor([0.3, 0.3])),
        torch.distributions.Binomial(torch.tensor([3.0, 3.0]), torch.tensor([0.4, 0.4])))
    np.testing.assert_allclose(kl.numpy(), t.numpy(), rtol=1e-6)


def test_register_kl_dispatch_to_subclass():
    class MyNormal(ember.distributions.Normal):
        pass

    calls = []

    @ember.distributions.register_kl(MyNormal, ember.distributions.Normal)
    def _kl(p, q):
        calls.append(1)
        return ember.zeros(())

    try:
        ember.distributions.kl_divergence(MyNormal(0.0, 1.0), ember.distributions.Normal(0.0, 1.0))
        assert calls == [1]
        # the base pair is still used for plain Normals
        kl = ember.distributions.kl_divergence(ember.distributions.Normal(0.0, 1.0),
                                               ember.distributions.Normal(1.0, 1.0))
        assert abs(kl.item() - 0.5) < 1e-6
    finally:
        from ember.distributions import kl
        del kl._KL_REGISTRY[MyNormal, ember.distributions.Normal]
        kl._KL_MEMOIZE.clear()


def test_kl_zero_probability_categories():
    p = np.array([0.0, 0.5, 0.5])
    q = np.array([0.2, 0.0, 0.8])
    for a, b in ((p, q), (q, p), (p, p)):
        t = torch.distributions.kl_divergence(torch.distributions.Categorical(torch.tensor(a)),
                                              torch.distributions.Categorical(torch.tensor(b)))
        e = ember.distributions.kl_divergence(ember.distributions.Categorical(ember.tensor(a)),
                                              ember.distributions.Categorical(ember.tensor(b)))
        np.testing.assert_allclose(e.numpy(), t.numpy())
    bp, bq = np.array([0.0, 1.0, 0.3]), np.array([0.5, 0.5, 0.0])
    t = torch.distributions.kl_divergence(torch.distributions.Bernoulli(torch.tensor(bp)),
                                          torch.distributions.Bernoulli(torch.tensor(bq)))
    e = ember.distributions.kl_divergence(ember.distributions.Bernoulli(ember.tensor(bp)),
                                          ember.distributions.Bernoulli(ember.tensor(bq)))
    np.testing.assert_allclose(e.numpy(), t.numpy())
