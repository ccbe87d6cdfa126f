"""Probability distributions, as ``torch.distributions``: parameterised families with
``sample``/``rsample``, ``log_prob``, ``entropy``, moments, ``cdf``/``icdf``, transforms, and
``kl_divergence``. Sampling draws from Ember's generator, so ``ember.manual_seed`` makes it
reproducible."""
from . import constraints, transforms  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .constraint_registry import biject_to, transform_to
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Dirichlet", "Distribution",
    "ExponentialFamily", "Exponential", "Gamma", "Independent", "Laplace", "LogNormal",
    "MultivariateNormal", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
    "Poisson", "TransformedDistribution", "Uniform", "biject_to", "kl_divergence", "register_kl",
    "transform_to",
]
__all__.extend(transforms.__all__)
