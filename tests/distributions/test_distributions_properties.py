"""Laws every distribution obeys, checked on random parameters with hypothesis."""
import numpy as np
from hypothesis import given, settings, strategies as st

import ember

E = ember.distributions
finite = st.floats(-5, 5, allow_nan=False)
positive = st.floats(0.2, 5, allow_nan=False)
unit = st.floats(0.02, 0.98, allow_nan=False)


def _t(x):
    return ember.tensor([x], dtype=ember.float64)


@settings(max_examples=30, deadline=None)
@given(loc=finite, scale=positive, q=unit)
def test_cdf_inverts_icdf(loc, scale, q):
    for d in (E.Normal(_t(loc), _t(scale)), E.Laplace(_t(loc), _t(scale)),
              E.Uniform(_t(loc), _t(loc + scale)), E.Exponential(_t(scale)),
              E.LogNormal(_t(loc / 5), _t(scale / 5))):
        np.testing.assert_allclose(d.cdf(d.icdf(_t(q))).numpy(), [q], rtol=1e-9, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(a=finite, b=positive, c=finite, d=positive)
def test_kl_is_nonnegative_and_zero_on_itself(a, b, c, d):
    for make, args_p, args_q in [(E.Normal, (a, b), (c, d)), (E.Laplace, (a, b), (c, d)),
                                 (E.Gamma, (b, d), (d, b)), (E.Beta, (b, d), (d, b)),
                                 (E.Exponential, (b,), (d,)), (E.Poisson, (b,), (d,))]:
        p = make(*map(_t, args_p))
        q = make(*map(_t, args_q))
        assert E.kl_divergence(p, q).item() >= -1e-10
        assert abs(E.kl_divergence(p, p).item()) < 1e-9


@settings(max_examples=20, deadline=None)
@given(logits=st.lists(finite, min_size=2, max_size=6))
def test_categorical_probabilities_sum_to_one(logits):
    d = E.Categorical(logits=ember.tensor(logits, dtype=ember.float64))
    support = d.enumerate_support()
    total = d.log_prob(support).exp().sum()
    np.testing.assert_allclose(total.item(), 1.0, rtol=1e-12)
    assert d.entropy().item() >= -1e-12


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 12), p=unit)
def test_binomial_pmf_sums_to_one_and_matches_moments(n, p):
    d = E.Binomial(n, _t(p))
    k = d.enumerate_support()
    pmf = d.log_prob(k).exp()
    np.testing.assert_allclose(pmf.sum().item(), 1.0, rtol=1e-10)
    np.testing.assert_allclose((pmf * k).sum().item(), d.mean.item(), rtol=1e-9, atol=1e-12)
