import ember
from .._tensor import Size
from ..nn.functional import one_hot
from . import _math, constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


def _sample_dirichlet(concentration):
    """Normalised independent Gamma draws; the gradient flows through the implicitly
    reparameterised gammas and the normalisation (a pathwise gradient of this sampler)."""
    gammas = _math.standard_gamma(concentration)
    return gammas / gammas.sum(-1, keepdim=True)


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex with parameter ``concentration``."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        return self._finish_expand(Dirichlet, new, batch_shape, self.event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration - 1.0, value).sum(-1)
                + _math.lgamma(self.concentration.sum(-1))
                - _math.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # All concentrations below one: the density peaks at a vertex.
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = one_hot(mode.argmax(dim=-1), concentrationm1.shape[-1]).to(mode.dtype)
        return ember.where(all_below_one, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (_math.lgamma(self.concentration).sum(-1) - _math.lgamma(a0)
                - (k - a0) * _math.digamma(a0)
                - ((self.concentration - 1.0) * _math.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return _math.lgamma(x).sum(-1) - _math.lgamma(x.sum(-1))
