"""Exponential families: entropy from the log-normaliser by Bregman's identity."""
import ember
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions with density ``exp(<t(x), theta> - F(theta) + k(x))``; subclasses give the
    natural parameters ``theta``, the log-normaliser ``F`` and the carrier measure's mean."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for param, grad in zip(nparams, gradients):
            result = result - (param * grad).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
