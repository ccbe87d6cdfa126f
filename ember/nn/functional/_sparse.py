"""Embedding lookups and ``one_hot``, as ``torch.nn.functional``; the ops (the row gather with
its scatter-add backward, the per-bag reductions) are ``ember.ops.embedding``."""
from ...ops import embedding as _ops
from ...ops.embedding import one_hot

__all__ = ["embedding", "embedding_bag", "one_hot"]


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    # torch reads the row count only for a nonzero padding_idx, so a weight of any other
    # dimension reaches the lookup's own checks
    padding_idx = _ops.padding_index(padding_idx, weight.size(0) if padding_idx else 0)
    return _ops.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                          sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    return _ops.embedding_bags(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq,
                               mode, sparse, per_sample_weights, include_last_offset,
                               padding_idx)
