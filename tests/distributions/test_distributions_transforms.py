"""Transforms and TransformedDistribution against torch.distributions.transforms."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(11)


def _t(lib):
    return lib.distributions.transforms


TRANSFORMS = {
    "Exp": (lambda l: _t(l).ExpTransform(), lambda: RNG.normal(size=(3, 4))),
    "ExpInv": (lambda l: _t(l).ExpTransform().inv, lambda: RNG.uniform(0.2, 3, size=(3, 4))),
    "Power": (lambda l: _t(l).PowerTransform(l.tensor(2.5, dtype=l.float64)),
              lambda: RNG.uniform(0.2, 3, size=(3, 4))),
    "Sigmoid": (lambda l: _t(l).SigmoidTransform(), lambda: RNG.normal(size=(3, 4))),
    "SigmoidInv": (lambda l: _t(l).SigmoidTransform().inv,
                   lambda: RNG.uniform(0.05, 0.95, size=(3, 4))),
    "Tanh": (lambda l: _t(l).TanhTransform(), lambda: RNG.normal(size=(3, 4))),
    "Abs": (lambda l: _t(l).AbsTransform(), lambda: RNG.normal(size=(3, 4))),
    "Affine-scalar": (lambda l: _t(l).AffineTransform(1.5, -2.0), lambda: RNG.normal(size=(3, 4))),
    "Affine-tensor": (lambda l: _t(l).AffineTransform(
        l.tensor([0.5, 1.0, -1.0, 2.0], dtype=l.float64),
        l.tensor([2.0, -0.5, 1.5, 3.0], dtype=l.float64), event_dim=1),
        lambda: RNG.normal(size=(3, 4))),
    "Softmax": (lambda l: _t(l).SoftmaxTransform(), lambda: RNG.normal(size=(3, 4))),
    "StickBreaking": (lambda l: _t(l).StickBreakingTransform(), lambda: RNG.normal(size=(3, 4))),
    "Compose": (lambda l: _t(l).ComposeTransform([_t(l).AffineTransform(0.5, 3.0),
                                                  _t(l).TanhTransform()]),
                lambda: RNG.normal(size=(3, 4)) * 0.3),
    "Independent": (lambda l: _t(l).IndependentTransform(_t(l).ExpTransform(), 1),
                    lambda: RNG.normal(size=(3, 4))),
    "Identity": (lambda l: _t(l).identity_transform, lambda: RNG.normal(size=(3, 4))),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_matches_torch(name):
    make, data = TRANSFORMS[name]
    x = data()
    tt, et = make(torch), make(ember)
    tx = torch.tensor(x, requires_grad=True)
    ex = ember.tensor(x, requires_grad=True)
    ty, ey = tt(tx), et(ex)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-10)
    assert repr(et) == repr(tt)
    assert repr(et.domain) == repr(tt.domain) and repr(et.codomain) == repr(tt.codomain)
    assert et.bijective == tt.bijective
    assert tuple(et.forward_shape(ember.Size(x.shape))) == tuple(tt.forward_shape(x.shape))
    assert tuple(et.inverse_shape(ember.Size(ey.shape))) == tuple(tt.inverse_shape(ty.shape))
    if name != "Abs":
        np.testing.assert_allclose(et.inv(ey).detach().numpy(), tt.inv(ty).detach().numpy(),
                                   rtol=1e-8, atol=1e-10)
    if tt.bijective:
        tl, el = tt.log_abs_det_jacobian(tx, ty), et.log_abs_det_jacobian(ex, ey)
        assert tuple(el.shape) == tuple(tl.shape)
        np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), rtol=1e-8,
                                   atol=1e-12)
        (tl.sum() + ty.sum()).backward()
        (el.sum() + ey.sum()).backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-12)
        try:
            sign_t = tt.sign
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                et.sign
            return
        sign_e = et.sign
        if isinstance(sign_t, torch.Tensor):
            np.testing.assert_array_equal(sign_e.numpy(), sign_t.numpy())
        else:
            assert sign_e == sign_t


def test_transform_caching_and_equality():
    T = ember.distributions.transforms
    t = T.ExpTransform(cache_size=1)
    x = ember.tensor([0.5, 1.0])
    y = t(x)
    assert t.inv(y) is x  # cached: exact inverse of a value it produced
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.TanhTransform()
    assert T.ExpTransform().inv == T.ExpTransform().inv
    assert t.inv.inv is t
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)


@pytest.mark.parametrize("scale", [2.0, -2.0])
def test_transformed_distribution_cdf_monotonized(scale):
    def build(l):
        return l.distributions.TransformedDistribution(
            l.distributions.Normal(l.tensor([0.3, -0.2], dtype=l.float64),
                                   l.tensor([1.0, 2.0], dtype=l.float64)),
            [l.distributions.AffineTransform(1.0, scale)])
    v = np.array([0.5, -1.5])
    td, ed = build(torch), build(ember)
    np.testing.assert_allclose(ed.cdf(ember.tensor(v)).numpy(), td.cdf(torch.tensor(v)).numpy(),
                               rtol=1e-10)
    q = np.array([0.2, 0.9])
    np.testing.assert_allclose(ed.icdf(ember.tensor(q)).numpy(),
                               td.icdf(torch.tensor(q)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(ed.log_prob(ember.tensor(v)).numpy(),
                               td.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)


def test_transformed_distribution_event_dims():
    # An event-dim-1 transform over a univariate base reinterprets one batch dim.
    def build(l):
        base = l.distributions.Normal(l.zeros(2, 3, dtype=l.float64),
                                      l.ones(2, 3, dtype=l.float64))
        return l.distributions.TransformedDistribution(
            base, [l.distributions.AffineTransform(l.zeros(3, dtype=l.float64),
                                                   l.tensor([1.0, 2.0, 3.0], dtype=l.float64),
                                                   event_dim=1)])
    td, ed = build(torch), build(ember)
    assert tuple(ed.batch_shape) == tuple(td.batch_shape) == (2,)
    assert tuple(ed.event_shape) == tuple(td.event_shape) == (3,)
    assert type(ed.base_dist).__name__ == type(td.base_dist).__name__ == "Independent"
    v = RNG.normal(size=(4, 2, 3))
    np.testing.assert_allclose(ed.log_prob(ember.tensor(v)).numpy(),
                               td.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
    assert repr(ed.support) == repr(td.support)
    # broadcasting transform parameters expand the base distribution
    def build2(l):
        base = l.distributions.Normal(l.tensor(0.0, dtype=l.float64),
                                      l.tensor(1.0, dtype=l.float64))
        return l.distributions.TransformedDistribution(
            base, [l.distributions.AffineTransform(l.zeros(4, dtype=l.float64), 2.0)])
    assert tuple(build2(ember).batch_shape) == tuple(build2(torch).batch_shape) == (4,)


def test_transformed_distribution_kl_requires_equal_transforms():
    D = ember.distributions
    p = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()])
    q = D.TransformedDistribution(D.Normal(0.5, 2.0), [D.ExpTransform()])
    r = D.TransformedDistribution(D.Normal(0.5, 2.0), [D.TanhTransform()])
    t = torch.distributions
    expected = t.kl_divergence(t.Normal(0.0, 1.0), t.Normal(0.5, 2.0))
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), expected.numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(p, r)


REGISTRY_CONSTRAINTS = {
    "real": lambda c: c.real, "positive": lambda c: c.positive,
    "nonnegative": lambda c: c.nonnegative, "greater_than": lambda c: c.greater_than(1.5),
    "greater_than_eq": lambda c: c.greater_than_eq(-1.0), "less_than": lambda c: c.less_than(2.0),
    "interval": lambda c: c.interval(-1.0, 3.0), "unit_interval": lambda c: c.unit_interval,
    "half_open_interval": lambda c: c.half_open_interval(0.0, 2.0),
    "simplex": lambda c: c.simplex, "real_vector": lambda c: c.real_vector,
    "independent-positive": lambda c: c.independent(c.positive, 1),
}


@pytest.mark.parametrize("name", list(REGISTRY_CONSTRAINTS))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(name, registry):
    tc = REGISTRY_CONSTRAINTS[name](torch.distributions.constraints)
    ec = REGISTRY_CONSTRAINTS[name](ember.distributions.constraints)
    tt = getattr(torch.distributions, registry)(tc)
    et = getattr(ember.distributions, registry)(ec)
    assert repr(et) == repr(tt)
    x = RNG.normal(size=(3, 4))
    y = et(ember.tensor(x))
    np.testing.assert_allclose(y.numpy(), tt(torch.tensor(x)).numpy(), rtol=1e-10)
    assert bool(ec.check(y).all())


def test_constraint_registry_matrix_transforms_and_errors():
    x = RNG.normal(size=(2, 3, 3))
    for name in ("lower_cholesky", "positive_definite"):
        tt = torch.distributions.transform_to(getattr(torch.distributions.constraints, name))
        et = ember.distributions.transform_to(getattr(ember.distributions.constraints, name))
        ty, ey = tt(torch.tensor(x)), et(ember.tensor(x))
        np.testing.assert_allclose(ey.numpy(), ty.numpy(), rtol=1e-10)
        np.testing.assert_allclose(et.inv(ey).numpy(), tt.inv(ty).numpy(), rtol=1e-8, atol=1e-10)
    with pytest.raises(NotImplementedError) as te:
        torch.distributions.biject_to(torch.distributions.constraints.lower_cholesky)
    with pytest.raises(NotImplementedError) as ee:
        ember.distributions.biject_to(ember.distributions.constraints.lower_cholesky)
    assert str(ee.value) == str(te.value)
    with pytest.raises(TypeError, match="Expected constraint to be either"):
        ember.distributions.biject_to.register(3, lambda c: None)
