import math

import numpy as np

import ember
from .._random import sampler, draw_namespace
from .._tensor import Size
from ..ops._dispatch import _wrap
from ..ops.creation import _to_backend
from . import constraints
from .distribution import Distribution, _ProbsOrLogits
from .utils import finfo

__all__ = ["Categorical"]


def _sample_categories(probs_2d, num_samples):
    """``num_samples`` category indices per row of (unnormalised) probabilities, by inverse CDF
    on the default generator's stream: shape ``(num_samples, rows)``."""
    rng = sampler(None, probs_2d.device)
    xp = draw_namespace(rng)
    rows = probs_2d.detach()._data
    if xp is np:
        rows = probs_2d._backend.to_numpy(rows)
    rows = rows.astype(np.float64)
    if not bool(xp.isfinite(rows).all() & (rows >= 0).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    cumulative = xp.cumsum(rows, axis=-1)
    if bool((cumulative[:, -1] <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    u = rng.random((num_samples, rows.shape[0]))
    # One sorted search for all rows: row r's normalised CDF is shifted into [r, r + 1].
    n_rows, n_events = rows.shape
    offsets = xp.arange(n_rows, dtype=np.float64)
    shifted_cdf = (cumulative / cumulative[:, -1:] + offsets[:, None]).ravel()
    flat = xp.searchsorted(shifted_cdf, (u + offsets).ravel(), side="right")
    picks = flat.reshape(num_samples, n_rows) - (offsets * n_events).astype(np.int64)
    # Rounding can put u at the total: never pick past the last category with mass.
    last_nonzero = n_events - 1 - xp.argmax(rows[:, ::-1] > 0, axis=1)
    picks = xp.minimum(picks, last_nonzero[None, :]).astype(np.int64)
    return _wrap(_to_backend(picks, probs_2d.device), ember.int64, probs_2d)


class Categorical(_ProbsOrLogits, Distribution):
    """Categorical distribution over ``{0, ..., K-1}`` given by ``probs`` or ``logits``."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._check_probs_or_logits(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.ndimension() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape + Size((self._num_events,)))
        new._num_events = self._num_events
        return self._finish_expand(Categorical, new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.nan, dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return ember.full(self._extended_shape(), math.nan, dtype=self.probs.dtype,
                          device=self.probs.device)

    def sample(self, sample_shape=Size()):
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = _sample_categories(probs_2d, sample_shape.numel())
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = float(finfo(self.logits.dtype).min)
        logits = ember.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = ember.arange(self._num_events, dtype=ember.long, device=self._param.device)
        return self._support_over_batch(values, expand)
