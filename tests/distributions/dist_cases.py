"""Shared distribution cases: each builds the same distribution in torch and in ember from the
same NumPy parameters, with values in its support to score."""
import numpy as np
import torch

import ember

RNG = np.random.default_rng(1234)


def _pos(*shape, low=0.3, high=3.0):
    return RNG.uniform(low, high, size=shape)


def _real(*shape):
    return RNG.normal(size=shape)


def _unit(*shape):
    return RNG.uniform(0.05, 0.95, size=shape)


def _simplex(*shape):
    p = RNG.uniform(0.1, 1.0, size=shape)
    return p / p.sum(-1, keepdims=True)


def _spd(batch, n):
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(batch, n):
    c = np.linalg.cholesky(_spd(batch, n))
    return c


class Case:
    """``build(lib, *params)`` makes the distribution; ``params`` are NumPy arrays (those named
    in ``grad`` get gradients); ``values`` is a NumPy array in the support."""

    def __init__(self, name, build, params, values, grad=None, cdf=False, icdf=False,
                 entropy=True, mode=True, moments=True, rsample=False, discrete=False):
        self.name = name
        self.build = build
        self.params = params
        self.values = values
        self.grad = list(range(len(params))) if grad is None else grad
        self.cdf, self.icdf, self.entropy, self.mode = cdf, icdf, entropy, mode
        self.moments = moments
        self.rsample = rsample
        self.discrete = discrete

    def __repr__(self):
        return self.name


def D(lib):
    return lib.distributions


CASES = [
    Case("Normal", lambda l, m, s: D(l).Normal(m, s), [_real(3), _pos(3)], _real(4, 3),
         cdf=True, icdf=True, rsample=True),
    Case("Normal-broadcast", lambda l, m, s: D(l).Normal(m, s), [_real(2, 1), _pos(3)],
         _real(2, 3), cdf=True, icdf=True, rsample=True),
    Case("Normal-0d", lambda l, m, s: D(l).Normal(m, s), [_real(), _pos()], _real(5),
         cdf=True, icdf=True, rsample=True),
    Case("Uniform", lambda l, a, b: D(l).Uniform(a, a + b), [_real(3), _pos(3)], None,
         cdf=True, icdf=True, rsample=True, mode=False),
    Case("Laplace", lambda l, m, s: D(l).Laplace(m, s), [_real(2, 3), _pos(2, 3)], _real(2, 3),
         cdf=True, icdf=True, rsample=True),
    Case("Exponential", lambda l, r: D(l).Exponential(r), [_pos(4)], _pos(3, 4),
         cdf=True, icdf=True, rsample=True),
    Case("Gamma", lambda l, c, r: D(l).Gamma(c, r), [_pos(4, low=0.5), _pos(4)], _pos(2, 4),
         cdf=True, grad=[1], rsample=True),
    Case("Gamma-grad-both", lambda l, c, r: D(l).Gamma(c, r), [_pos(4, low=0.5), _pos(4)],
         _pos(2, 4)),
    Case("Beta", lambda l, a, b: D(l).Beta(a, b), [_pos(3, low=1.2), _pos(3, low=1.2)],
         _unit(2, 3), rsample=True),
    Case("Dirichlet", lambda l, c: D(l).Dirichlet(c), [_pos(2, 4, low=1.1)], _simplex(3, 2, 4),
         rsample=True),
    Case("Bernoulli-probs", lambda l, p: D(l).Bernoulli(probs=p), [_unit(5)],
         RNG.integers(0, 2, size=(3, 5)).astype(float), discrete=True, mode=True),
    Case("Bernoulli-logits", lambda l, z: D(l).Bernoulli(logits=z), [_real(5)],
         RNG.integers(0, 2, size=(3, 5)).astype(float), discrete=True),
    Case("Categorical-probs", lambda l, p: D(l).Categorical(probs=p), [_simplex(3, 4)],
         RNG.integers(0, 4, size=(2, 3)), discrete=True, moments=False),
    Case("Categorical-logits", lambda l, z: D(l).Categorical(logits=z), [_real(3, 4)],
         RNG.integers(0, 4, size=(2, 3)), discrete=True, moments=False),
    Case("OneHotCategorical", lambda l, p: D(l).OneHotCategorical(probs=p), [_simplex(3, 4)],
         np.eye(4)[RNG.integers(0, 4, size=(2, 3))], discrete=True),
    Case("Poisson", lambda l, r: D(l).Poisson(r), [_pos(4)],
         RNG.integers(0, 6, size=(3, 4)).astype(float), discrete=True, entropy=False),
    Case("Binomial-probs", lambda l, p: D(l).Binomial(7, probs=p), [_unit(4)],
         RNG.integers(0, 8, size=(3, 4)).astype(float), discrete=True),
    Case("Binomial-logits", lambda l, z: D(l).Binomial(5, logits=z), [_real(4)],
         RNG.integers(0, 6, size=(3, 4)).astype(float), discrete=True),
    Case("MVN-cov", lambda l, m, c: D(l).MultivariateNormal(m, covariance_matrix=c),
         [_real(2, 3), _spd((2,), 3)], _real(4, 2, 3), rsample=True),
    Case("MVN-tril", lambda l, m, c: D(l).MultivariateNormal(m, scale_tril=c),
         [_real(3), _tril((2,), 3)], _real(4, 2, 3), rsample=True),
    Case("MVN-precision", lambda l, m, c: D(l).MultivariateNormal(m, precision_matrix=c),
         [_real(3), _spd((), 3)], _real(5, 3), rsample=True),
    Case("Independent-Normal", lambda l, m, s: D(l).Independent(D(l).Normal(m, s), 1),
         [_real(2, 3), _pos(2, 3)], _real(4, 2, 3), rsample=True),
    Case("LogNormal", lambda l, m, s: D(l).LogNormal(m, s), [_real(3), _pos(3)], _pos(2, 3),
         cdf=True, icdf=True, rsample=True),
    Case("Transformed-Affine-Sigmoid",
         lambda l, m, s: D(l).TransformedDistribution(
             D(l).Normal(m, s), [D(l).AffineTransform(0.5, 2.0), D(l).SigmoidTransform()]),
         [_real(3), _pos(3)], _unit(2, 3), cdf=True, icdf=True, entropy=False, mode=False,
         moments=False, rsample=True),
    Case("Transformed-Tanh-Exp",
         lambda l, m, s: D(l).TransformedDistribution(
             D(l).Normal(m, s), [D(l).ExpTransform(), D(l).ExpTransform().inv,
                                 D(l).TanhTransform()]),
         [_real(3), _pos(3)], _unit(2, 3), entropy=False, mode=False, moments=False),
    Case("Transformed-StickBreaking",
         lambda l, m, s: D(l).TransformedDistribution(
             D(l).Normal(m, s), D(l).StickBreakingTransform()),
         [_real(2, 3), _pos(2, 3)], _simplex(2, 4), entropy=False, mode=False, moments=False),
]

# Uniform scores points strictly inside its interval.
_u = CASES[3]
_u.values = _u.params[0] + _u.params[1] * RNG.uniform(0.05, 0.95, size=(4, 3))


def as_torch(x, requires_grad=False, dtype=torch.float64):
    t = torch.tensor(np.asarray(x), dtype=dtype)
    return t.requires_grad_(requires_grad)


def as_ember(x, requires_grad=False, dtype=ember.float64):
    t = ember.tensor(np.asarray(x), dtype=dtype)
    return t.requires_grad_(requires_grad)


def value_tensors(case, dtype_t=torch.float64, dtype_e=ember.float64):
    if case.name.startswith("Categorical"):
        return torch.tensor(case.values), ember.tensor(case.values)
    return as_torch(case.values, dtype=dtype_t), as_ember(case.values, dtype=dtype_e)


def build_pair(case, requires_grad=False, dtype_t=torch.float64, dtype_e=ember.float64):
    tp = [as_torch(p, requires_grad and i in case.grad, dtype_t) for i, p in enumerate(case.params)]
    ep = [as_ember(p, requires_grad and i in case.grad, dtype_e) for i, p in enumerate(case.params)]
    return case.build(torch, *tp), case.build(ember, *ep), tp, ep


def to_np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.detach().numpy()
