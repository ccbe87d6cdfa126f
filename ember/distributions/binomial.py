import numpy as np

import ember
from .._random import sampler, draw_namespace
from .._tensor import Size
from ..ops._dispatch import _wrap
from ..ops.creation import _to_backend
from . import _math, constraints
from .distribution import Distribution, _ProbsOrLogits
from .utils import broadcast_all

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # max(x, 0) with gradient 1/2 at 0, as torch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _binomial_draws(total_count, probs):
    """Binomial counts (as floats of ``probs``' dtype) from the default generator of
    ``probs``' device, drawn there."""
    backend = probs._backend
    rng = sampler(None, probs.device)
    n, p = total_count.detach()._data, probs.detach()._data
    if draw_namespace(rng) is np:
        n, p = backend.to_numpy(n), backend.to_numpy(p)
    counts = rng.binomial(n.astype(np.int64), p.astype(np.float64)).astype(probs.dtype.np)
    return _wrap(_to_backend(counts, probs.device), probs.dtype, probs)


class Binomial(_ProbsOrLogits, Distribution):
    """Number of successes in ``total_count`` Bernoulli trials of probability ``probs``."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._check_probs_or_logits(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        return self._finish_expand(Binomial, new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return _binomial_draws(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = _math.lgamma(self.total_count + 1)
        log_factorial_k = _math.lgamma(value + 1)
        log_factorial_nmk = _math.lgamma(self.total_count - value + 1)
        # Written to stay finite for logits of either sign and for probs of exactly 0 or 1.
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * ember.log1p(ember.exp(-ember.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = ember.arange(1 + total_count, dtype=self._param.dtype,
                              device=self._param.device)
        return self._support_over_batch(values, expand)
