"""validate_args: the errors torch raises, with the same type and text (``torch.`` reads
``ember.``)."""
import numpy as np
import pytest
import torch

import ember


def _same_error(build, exc=ValueError):
    with pytest.raises(exc) as te:
        build(torch)
    with pytest.raises(exc) as ee:
        build(ember)
    assert str(ee.value) == str(te.value).replace("torch.", "ember."), (str(ee.value),
                                                                         str(te.value))


BAD_PARAMS = {
    "normal-scale": lambda l: l.distributions.Normal(l.tensor([0., 1., 2.]),
                                                     l.tensor([1., -2., 3.])),
    "normal-nan-loc": lambda l: l.distributions.Normal(l.tensor([float("nan"), 0.]), 1.0),
    "normal-scalar": lambda l: l.distributions.Normal(0.0, -1.0),
    "laplace": lambda l: l.distributions.Laplace(l.tensor([0.]), l.tensor([0.])),
    "uniform": lambda l: l.distributions.Uniform(l.tensor([0., 2.]), l.tensor([1., 1.])),
    "exponential": lambda l: l.distributions.Exponential(l.tensor([-1.0, 2.0])),
    "gamma": lambda l: l.distributions.Gamma(l.tensor([1.0, -2.0]), l.tensor([1.0, 1.0])),
    "beta": lambda l: l.distributions.Beta(l.tensor([1.0, 0.0]), l.tensor([1.0, 1.0])),
    "dirichlet": lambda l: l.distributions.Dirichlet(l.tensor([[1.0, -1.0], [1.0, 2.0]])),
    "bernoulli": lambda l: l.distributions.Bernoulli(probs=l.tensor([0.5, 1.5])),
    "categorical": lambda l: l.distributions.Categorical(probs=l.tensor([0.5, -0.5, 1.0])),
    "onehot": lambda l: l.distributions.OneHotCategorical(probs=l.tensor([[0.5, -0.5, 1.0]])),
    "poisson": lambda l: l.distributions.Poisson(l.tensor([-1.0])),
    "binomial-count": lambda l: l.distributions.Binomial(l.tensor([2.5]), l.tensor([0.3])),
    "binomial-probs": lambda l: l.distributions.Binomial(3, l.tensor([1.3])),
    "mvn-cov": lambda l: l.distributions.MultivariateNormal(
        l.zeros(2), covariance_matrix=l.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "mvn-tril": lambda l: l.distributions.MultivariateNormal(
        l.zeros(2), scale_tril=l.tensor([[1.0, 0.0], [2.0, -1.0]])),
    "mvn-nonsym": lambda l: l.distributions.MultivariateNormal(
        l.zeros(2), precision_matrix=l.tensor([[1.0, 0.5], [0.0, 1.0]])),
    "lognormal": lambda l: l.distributions.LogNormal(l.tensor([0.0]), l.tensor([-1.0])),
}


@pytest.mark.parametrize("name", list(BAD_PARAMS))
def test_bad_parameter_message(name):
    _same_error(BAD_PARAMS[name])


BAD_VALUES = {
    "normal-shape": (lambda l: l.distributions.Normal(l.zeros(3), l.ones(3)),
                     lambda l: l.zeros(2)),
    "normal-not-tensor": (lambda l: l.distributions.Normal(l.zeros(3), l.ones(3)),
                          lambda l: 0.5),
    "exponential-support": (lambda l: l.distributions.Exponential(l.ones(2)),
                            lambda l: l.tensor([1.0, -1.0])),
    "gamma-support": (lambda l: l.distributions.Gamma(l.ones(2), l.ones(2)),
                      lambda l: l.tensor([1.0, -1.0])),
    "beta-support": (lambda l: l.distributions.Beta(l.ones(2), l.ones(2)),
                     lambda l: l.tensor([0.5, 1.5])),
    "uniform-support": (lambda l: l.distributions.Uniform(l.zeros(2), l.ones(2)),
                        lambda l: l.tensor([0.5, 1.5])),
    "bernoulli-support": (lambda l: l.distributions.Bernoulli(l.tensor([0.3, 0.4])),
                          lambda l: l.tensor([0.5, 1.0])),
    "categorical-support": (lambda l: l.distributions.Categorical(l.ones(3) / 3),
                            lambda l: l.tensor([3])),
    "onehot-support": (lambda l: l.distributions.OneHotCategorical(l.ones(3) / 3),
                       lambda l: l.tensor([1.0, 1.0, 0.0])),
    "dirichlet-support": (lambda l: l.distributions.Dirichlet(l.ones(3)),
                          lambda l: l.tensor([0.5, 0.6, 0.1])),
    "dirichlet-event-shape": (lambda l: l.distributions.Dirichlet(l.ones(3)),
                              lambda l: l.tensor([0.5, 0.5])),
    "poisson-support": (lambda l: l.distributions.Poisson(l.ones(2)),
                        lambda l: l.tensor([1.5, 2.0])),
    "binomial-support": (lambda l: l.distributions.Binomial(3, l.tensor([0.3, 0.4])),
                         lambda l: l.tensor([4.0, 2.0])),
    "mvn-broadcast": (lambda l: l.distributions.MultivariateNormal(
        l.zeros(2, 3), covariance_matrix=l.eye(3)), lambda l: l.zeros(4, 3)),
    "lognormal-support": (lambda l: l.distributions.LogNormal(l.zeros(2), l.ones(2)),
                          lambda l: l.tensor([1.0, -1.0])),
    "independent-shape": (lambda l: l.distributions.Independent(
        l.distributions.Normal(l.zeros(2, 3), l.ones(2, 3)), 1), lambda l: l.zeros(2, 4)),
}


@pytest.mark.parametrize("name", list(BAD_VALUES))
def test_value_outside_support_raises(name):
    make, value = BAD_VALUES[name]
    _same_error(lambda l: make(l).log_prob(value(l)))


@pytest.mark.parametrize("name", ["exponential", "normal", "laplace", "uniform", "gamma"])
def test_cdf_validates(name):
    makes = {"exponential": lambda l: l.distributions.Exponential(l.ones(2)),
             "normal": lambda l: l.distributions.Normal(l.zeros(2), l.ones(2)),
             "laplace": lambda l: l.distributions.Laplace(l.zeros(2), l.ones(2)),
             "uniform": lambda l: l.distributions.Uniform(l.zeros(2), l.ones(2)),
             "gamma": lambda l: l.distributions.Gamma(l.ones(2), l.ones(2))}
    _same_error(lambda l: makes[name](l).cdf(l.zeros(3)))


CONSTRUCTION = {
    "bernoulli-both": lambda l: l.distributions.Bernoulli(probs=l.tensor([0.3]),
                                                          logits=l.tensor([0.3])),
    "bernoulli-none": lambda l: l.distributions.Bernoulli(),
    "categorical-0d": lambda l: l.distributions.Categorical(probs=l.tensor(0.3)),
    "categorical-logits-0d": lambda l: l.distributions.Categorical(logits=l.tensor(0.3)),
    "binomial-none": lambda l: l.distributions.Binomial(3),
    "dirichlet-0d": lambda l: l.distributions.Dirichlet(l.tensor(1.0)),
    "mvn-loc-0d": lambda l: l.distributions.MultivariateNormal(l.tensor(0.0),
                                                               covariance_matrix=l.eye(1)),
    "mvn-two": lambda l: l.distributions.MultivariateNormal(
        l.zeros(2), covariance_matrix=l.eye(2), scale_tril=l.eye(2)),
    "mvn-none": lambda l: l.distributions.MultivariateNormal(l.zeros(2)),
    "mvn-cov-1d": lambda l: l.distributions.MultivariateNormal(l.zeros(2),
                                                               covariance_matrix=l.ones(2)),
    "mvn-tril-1d": lambda l: l.distributions.MultivariateNormal(l.zeros(2),
                                                                scale_tril=l.ones(2)),
    "mvn-prec-1d": lambda l: l.distributions.MultivariateNormal(l.zeros(2),
                                                                precision_matrix=l.ones(2)),
    "independent-ndims": lambda l: l.distributions.Independent(
        l.distributions.Normal(l.zeros(2), l.ones(2)), 2),
    "transformed-bad": lambda l: l.distributions.TransformedDistribution(
        l.distributions.Normal(0.0, 1.0), [l.distributions.ExpTransform(), 3]),
    "broadcast-all": lambda l: l.distributions.Normal("a", 1.0),
    "set-default": lambda l: l.distributions.Distribution.set_default_validate_args(3),
}


@pytest.mark.parametrize("name", list(CONSTRUCTION))
def test_construction_errors(name):
    _same_error(CONSTRUCTION[name])


def test_transforms_type_error_text():
    _same_error(lambda l: l.distributions.TransformedDistribution(
        l.distributions.Normal(0.0, 1.0), "exp"))


def test_validation_off():
    d = ember.distributions.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)
    t = torch.distributions.Normal(torch.tensor([0.0]), torch.tensor([-1.0]), validate_args=False)
    np.testing.assert_allclose(d.log_prob(ember.tensor([0.3])).numpy(),
                               t.log_prob(torch.tensor([0.3])).numpy(), equal_nan=True)
    e = ember.distributions.Exponential(ember.ones(2), validate_args=False)
    assert e.log_prob(ember.tensor([-1.0, 1.0])).shape == (2,)


def test_set_default_validate_args():
    Dist = ember.distributions.Distribution
    try:
        Dist.set_default_validate_args(False)
        d = ember.distributions.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
        assert not d._validate_args
        # an explicit validate_args wins over the default
        with pytest.raises(ValueError):
            ember.distributions.Normal(ember.tensor([0.0]), ember.tensor([-1.0]),
                                       validate_args=True)
    finally:
        Dist.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ember.distributions.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))


def test_expanded_distribution_keeps_validation():
    d = ember.distributions.Exponential(ember.ones(2)).expand((3, 2))
    with pytest.raises(ValueError, match="within the support"):
        d.log_prob(ember.tensor([-1.0, 1.0]))


@pytest.mark.parametrize("name", ["real", "positive", "nonnegative", "unit_interval",
                                  "simplex", "boolean", "nonnegative_integer", "lower_cholesky",
                                  "positive_definite", "real_vector", "lower_triangular",
                                  "symmetric", "positive_semidefinite", "one_hot", "square"])
def test_constraints_check_and_repr(name):
    rng = np.random.default_rng(5)
    tc = getattr(torch.distributions.constraints, name)
    ec = getattr(ember.distributions.constraints, name)
    assert repr(ec) == repr(tc)
    assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete
    samples = [rng.normal(size=(4, 3, 3)), rng.uniform(0, 1, size=(4, 3, 3)),
               np.round(rng.uniform(-1, 2, size=(4, 3, 3))),
               np.linalg.cholesky(np.eye(3) * 2 + 0.1)[None].repeat(2, 0),
               np.stack([np.eye(3) * 2 + 0.1, -np.eye(3)]),
               np.eye(3)[None], np.full((2, 3), 1 / 3), np.array([[0.2, 0.3, 0.5, 0.1]])]
    for s in samples:
        np.testing.assert_array_equal(ec.check(ember.tensor(s)).numpy(),
                                      tc.check(torch.tensor(s)).numpy())


def test_parametrised_constraints_repr():
    c, t = ember.distributions.constraints, torch.distributions.constraints
    for name, args in [("interval", (0.0, 2.0)), ("greater_than", (1.0,)),
                       ("greater_than_eq", (1.0,)), ("less_than", (3.0,)),
                       ("integer_interval", (0, 4)), ("half_open_interval", (0.0, 1.0))]:
        assert repr(getattr(c, name)(*args)) == repr(getattr(t, name)(*args))
        x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0])
        np.testing.assert_array_equal(getattr(c, name)(*args).check(ember.tensor(x)).numpy(),
                                      getattr(t, name)(*args).check(torch.tensor(x)).numpy())
    assert repr(c.independent(c.positive, 2)) == repr(t.independent(t.positive, 2))
    assert c.is_dependent(c.dependent) and not c.is_dependent(c.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        c.dependent.check(ember.zeros(2))
