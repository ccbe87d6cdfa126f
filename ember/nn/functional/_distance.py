"""Distances between vectors, as ``torch.nn.functional``: the functions are
``ember.ops.distance``'s (``torch.pairwise_distance`` and the others are the same ones)."""
from ...ops.distance import pairwise_distance, cosine_similarity, pdist

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]
