"""Embedding lookups and ``one_hot``, as ``torch.nn.functional``; the ops (the row gather with
its scatter-add backward, the per-bag reductions) are ``ember.ops.embedding``."""
from ...ops import embedding as _ops
from ...ops.embedding import one_hot

__all__ = ["embedding", "embedding_bag", "one_hot"]


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    _ops.check_indices(input, "embedding")
    num_embeddings, _ = weight.shape
    padding_idx = _ops.padding_index(padding_idx, num_embeddings)
    return _ops.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                          sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    return _ops.embedding_bags(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq,
                               mode, sparse, per_sample_weights, include_last_offset,
                               padding_idx)
