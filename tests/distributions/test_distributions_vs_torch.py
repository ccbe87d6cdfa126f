"""Every distribution against torch.distributions with the same parameters: shapes, moments,
log_prob, entropy, cdf/icdf, gradients, expand, sample shapes and dtypes."""
import numpy as np
import pytest
import torch

import ember
from dist_cases import CASES, build_pair, to_np, value_tensors

IDS = [c.name for c in CASES]


def close(e, t, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(to_np(e), to_np(t), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_shapes_and_repr(case):
    td, ed, _, _ = build_pair(case)
    assert tuple(ed.batch_shape) == tuple(td.batch_shape)
    assert tuple(ed.event_shape) == tuple(td.event_shape)
    assert isinstance(ed.batch_shape, ember.Size)
    assert repr(ed) == repr(td).replace("torch.", "ember.")
    assert ed.has_rsample == td.has_rsample
    assert ed.has_enumerate_support == td.has_enumerate_support


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob(case):
    td, ed, _, _ = build_pair(case)
    tv, ev = value_tensors(case)
    t, e = td.log_prob(tv), ed.log_prob(ev)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype == ember.float64
    close(e, t, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_moments(case):
    td, ed, _, _ = build_pair(case)
    names = []
    if case.moments:
        names += ["mean", "variance", "stddev"]
    if case.mode:
        names.append("mode")
    for name in names:
        t, e = getattr(td, name), getattr(ed, name)
        assert tuple(e.shape) == tuple(t.shape), name
        close(e, t, rtol=1e-7)
    if case.entropy:
        t, e = td.entropy(), ed.entropy()
        assert tuple(e.shape) == tuple(t.shape)
        close(e, t, rtol=1e-6, atol=1e-8)
        close(ed.perplexity(), td.perplexity(), rtol=1e-6)


@pytest.mark.parametrize("case", [c for c in CASES if c.cdf or c.icdf],
                         ids=[c.name for c in CASES if c.cdf or c.icdf])
def test_cdf_icdf(case):
    td, ed, _, _ = build_pair(case)
    tv, ev = value_tensors(case)
    if case.cdf:
        close(ed.cdf(ev), td.cdf(tv), rtol=1e-6, atol=1e-10)
    if case.icdf:
        q = np.random.default_rng(0).uniform(0.05, 0.95, size=tuple(td.batch_shape))
        close(ed.icdf(ember.tensor(q)), td.icdf(torch.tensor(q)), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients(case):
    td, ed, tp, ep = build_pair(case, requires_grad=True)
    tv, ev = value_tensors(case)
    t_obj = td.log_prob(tv).sum()
    e_obj = ed.log_prob(ev).sum()
    if case.entropy:
        t_obj = t_obj + td.entropy().sum()
        e_obj = e_obj + ed.entropy().sum()
    if case.moments:
        t_obj = t_obj + (td.mean * td.variance).sum()
        e_obj = e_obj + (ed.mean * ed.variance).sum()
    t_obj.backward()
    e_obj.backward()
    for i in case.grad:
        close(ep[i].grad, tp[i].grad, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_expand(case):
    td, ed, _, _ = build_pair(case)
    new_batch = (2,) + tuple(td.batch_shape)
    te, ee = td.expand(new_batch), ed.expand(ember.Size(new_batch))
    assert tuple(ee.batch_shape) == tuple(te.batch_shape)
    assert tuple(ee.event_shape) == tuple(te.event_shape)
    assert type(ee) is type(ed)
    tv = te.sample()
    ev = ember.tensor(tv.numpy())
    close(ee.log_prob(ev), te.log_prob(tv), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sample_shape_and_dtype(case, dtype):
    td, ed, _, _ = build_pair(case, dtype_t=getattr(torch, dtype), dtype_e=getattr(ember, dtype))
    for sample_shape in [(), (5,), (2, 3)]:
        t, e = td.sample(sample_shape), ed.sample(sample_shape)
        assert tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        assert not e.requires_grad
        assert bool(ed.support.check(e).all())
        if case.rsample:
            r = ed.rsample(sample_shape)
            assert tuple(r.shape) == tuple(t.shape)
            assert r.dtype == e.dtype


@pytest.mark.parametrize("case", [c for c in CASES if c.discrete and c.name[:3] not in ("One", "Poi")],
                         ids=[c.name for c in CASES if c.discrete and c.name[:3] not in ("One", "Poi")])
def test_enumerate_support(case):
    td, ed, _, _ = build_pair(case)
    for expand in (True, False):
        t, e = td.enumerate_support(expand), ed.enumerate_support(expand)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(to_np(e), to_np(t))


def test_onehot_enumerate_support():
    p = np.full((2, 3), 1 / 3)
    t = torch.distributions.OneHotCategorical(torch.tensor(p)).enumerate_support()
    e = ember.distributions.OneHotCategorical(ember.tensor(p)).enumerate_support()
    np.testing.assert_array_equal(to_np(e), to_np(t))


def test_float32_log_prob_matches():
    for case in CASES:
        td, ed, _, _ = build_pair(case, dtype_t=torch.float32, dtype_e=ember.float32)
        tv, ev = value_tensors(case, torch.float32, ember.float32)
        e = ed.log_prob(ev)
        assert e.dtype == ember.float32, case.name
        close(e, td.log_prob(tv), rtol=2e-4, atol=2e-4)


def test_scalar_parameters_give_empty_batch_shape():
    for name, args in [("Normal", (0.0, 1.0)), ("Laplace", (0.0, 1.0)), ("Uniform", (0.0, 2.0)),
                       ("Gamma", (2.0, 1.0)), ("Exponential", (1.5,)), ("Poisson", (2.0,)),
                       ("Beta", (2.0, 3.0))]:
        t = getattr(torch.distributions, name)(*args)
        e = getattr(ember.distributions, name)(*args)
        assert tuple(e.batch_shape) == tuple(t.batch_shape) == (), name
        assert e.mean.dtype == ember.float32
        close(e.mean, t.mean, rtol=1e-6)
        assert tuple(e.sample((4,)).shape) == (4,)


def test_lazy_parameterisations_match():
    logits = np.array([0.3, -1.2, 2.0])
    t = torch.distributions.Bernoulli(logits=torch.tensor(logits))
    e = ember.distributions.Bernoulli(logits=ember.tensor(logits))
    assert "probs" not in e.__dict__
    close(e.probs, t.probs)
    assert "probs" in e.__dict__
    p = np.array([[0.2, 0.3, 0.5]])
    t = torch.distributions.Categorical(probs=torch.tensor(p))
    e = ember.distributions.Categorical(probs=ember.tensor(p))
    close(e.logits, t.logits)
    assert tuple(e.param_shape) == tuple(t.param_shape)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    t = torch.distributions.MultivariateNormal(torch.zeros(2, dtype=torch.float64),
                                               covariance_matrix=torch.tensor(cov))
    e = ember.distributions.MultivariateNormal(ember.zeros(2, dtype=ember.float64),
                                               covariance_matrix=ember.tensor(cov))
    close(e.scale_tril, t.scale_tril)
    close(e.precision_matrix, t.precision_matrix)
    close(e.covariance_matrix, t.covariance_matrix)


def test_special_values_match_torch():
    # Bernoulli mode at exactly 1/2, Dirichlet mode with all concentrations below one,
    # Gamma mode clamped at zero, Binomial mode at the boundary.
    t = torch.distributions.Bernoulli(torch.tensor([0.5, 0.7, 0.2]))
    e = ember.distributions.Bernoulli(ember.tensor([0.5, 0.7, 0.2]))
    close(e.mode, t.mode)
    c = np.array([[0.5, 0.7, 0.3], [2.0, 3.0, 1.5]])
    close(ember.distributions.Dirichlet(ember.tensor(c)).mode,
          torch.distributions.Dirichlet(torch.tensor(c)).mode)
    close(ember.distributions.Gamma(ember.tensor([0.5, 3.0]), ember.tensor([1.0, 2.0])).mode,
          torch.distributions.Gamma(torch.tensor([0.5, 3.0]), torch.tensor([1.0, 2.0])).mode)
    close(ember.distributions.Binomial(3, ember.tensor([1.0, 0.0, 0.6])).mode,
          torch.distributions.Binomial(3, torch.tensor([1.0, 0.0, 0.6])).mode)
    close(ember.distributions.Uniform(ember.tensor([0.0]), ember.tensor([1.0])).mode,
          torch.distributions.Uniform(torch.tensor([0.0]), torch.tensor([1.0])).mode)
    # Bernoulli/Binomial log_prob at the boundary probabilities stays finite as in torch.
    for p in ([0.0, 1.0, 0.3],):
        for v in ([0.0, 1.0, 1.0], [1.0, 0.0, 0.0]):
            close(ember.distributions.Bernoulli(ember.tensor(p)).log_prob(ember.tensor(v)),
                  torch.distributions.Bernoulli(torch.tensor(p)).log_prob(torch.tensor(v)))
    # Uniform log_prob outside the interval is -inf (with validation off).
    close(ember.distributions.Uniform(0.0, 1.0, validate_args=False).log_prob(
        ember.tensor([-0.5, 0.5, 1.0])),
        torch.distributions.Uniform(0.0, 1.0, validate_args=False).log_prob(
        torch.tensor([-0.5, 0.5, 1.0])))


def test_binomial_inhomogeneous_entropy_raises():
    e = ember.distributions.Binomial(ember.tensor([2.0, 3.0]), ember.tensor([0.3, 0.4]))
    t = torch.distributions.Binomial(torch.tensor([2.0, 3.0]), torch.tensor([0.3, 0.4]))
    with pytest.raises(NotImplementedError) as te:
        t.entropy()
    with pytest.raises(NotImplementedError, match=str(te.value)):
        e.entropy()


def test_poisson_entropy_not_implemented_as_torch():
    with pytest.raises(NotImplementedError):
        torch.distributions.Poisson(torch.tensor([1.0])).entropy()
    with pytest.raises(NotImplementedError):
        ember.distributions.Poisson(ember.tensor([1.0])).entropy()


def test_exponential_family_bregman_entropy_matches_closed_form():
    from ember.distributions import ExponentialFamily
    rng = np.random.default_rng(3)
    for build in (lambda: ember.distributions.Normal(ember.tensor(rng.normal(size=3)),
                                                     ember.tensor(rng.uniform(0.5, 2, 3))),
                  lambda: ember.distributions.Gamma(ember.tensor(rng.uniform(1, 3, 3)),
                                                    ember.tensor(rng.uniform(0.5, 2, 3))),
                  lambda: ember.distributions.Exponential(ember.tensor(rng.uniform(0.5, 2, 3)))):
        d = build()
        close(ExponentialFamily.entropy(d), d.entropy(), rtol=1e-10)


@pytest.mark.parametrize("device", ["cpu", "testdev"])
def test_runs_on_another_backend(device):
    loc = ember.tensor([0.0, 1.0], device=device, requires_grad=True)
    scale = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    d = ember.distributions.Normal(loc, scale)
    x = d.rsample((3,))
    assert x.device .type == device
    (d.log_prob(x) + d.entropy()).sum().backward()
    assert loc.grad.device .type == device
    g = ember.distributions.Gamma(ember.tensor([2.0], device=device, requires_grad=True), 1.0)
    assert g.rsample((4,)).device .type == device
    c = ember.distributions.Categorical(logits=ember.zeros(3, 4, device=device))
    assert c.sample((2,)).device .type == device
    cov = ember.eye(2, device=device) * 2
    m = ember.distributions.MultivariateNormal(ember.zeros(2, device=device),
                                               covariance_matrix=cov)
    assert m.log_prob(m.sample((3,))).device .type == device


GRADCHECK = [c for c in CASES if not c.discrete]


@pytest.mark.parametrize("case", GRADCHECK, ids=[c.name for c in GRADCHECK])
def test_gradcheck_log_prob_and_entropy(case):
    params = [ember.tensor(p, requires_grad=i in case.grad) for i, p in enumerate(case.params)]
    value = ember.tensor(case.values)

    def objective(*ps):
        if case.name in ("MVN-cov", "MVN-precision"):
            # a symmetric matrix's gradient is symmetrised, as torch's: perturb symmetrically
            ps = (ps[0], (ps[1] + ps[1].mT) / 2)
        if case.name == "MVN-tril":
            ps = (ps[0], ps[1].tril())
        d = case.build(ember, *ps)
        out = d.log_prob(value).sum()
        if case.entropy:
            out = out + d.entropy().sum()
        return out

    assert ember.autograd.gradcheck(objective, tuple(params))


def test_empty_batch_and_noncontiguous_parameters():
    loc = np.random.default_rng(0).normal(size=(4, 3))
    scale = np.random.default_rng(1).uniform(0.5, 2, size=(3, 4))
    t = torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale).T)
    e = ember.distributions.Normal(ember.tensor(loc), ember.tensor(scale).T)
    v = np.random.default_rng(2).normal(size=(4, 3))
    close(e.log_prob(ember.tensor(v)), t.log_prob(torch.tensor(v)))
    close(e.entropy(), t.entropy())
    for name, make in [("Normal", lambda l: l.distributions.Normal(l.zeros(0), l.ones(0))),
                       ("Gamma", lambda l: l.distributions.Gamma(l.ones(0), l.ones(0))),
                       ("Categorical", lambda l: l.distributions.Categorical(l.ones(0, 3)))]:
        td, ed = make(torch), make(ember)
        assert tuple(ed.batch_shape) == tuple(td.batch_shape), name
        assert tuple(ed.sample((2,)).shape) == tuple(td.sample((2,)).shape), name
        assert tuple(ed.entropy().shape) == tuple(td.entropy().shape), name

    # torch's own independent-constraint check cannot reshape an empty batch; neither can ours
    with pytest.raises(RuntimeError) as te:
        torch.distributions.Dirichlet(torch.ones(0, 3))
    with pytest.raises(RuntimeError) as ee:
        ember.distributions.Dirichlet(ember.ones(0, 3))
    assert str(ee.value) == str(te.value)
