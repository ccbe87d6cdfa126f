"""``ember.functional``, as ``torch.functional``: the module where torch defines these tensor
functions in Python. In Ember they live with their op families in ``ember/ops/``; this module
only names them, so ``from torch.functional import einsum`` works unchanged."""
from .ops import (atleast_1d, atleast_2d, atleast_3d, broadcast_shapes, broadcast_tensors,  # noqa: F401
                  cartesian_prod, block_diag, cdist, chain_matmul, einsum, istft, lu, norm,
                  meshgrid, split, stft, tensordot, unique, unique_consecutive, unravel_index)

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu",
           "norm", "meshgrid", "split", "stft", "tensordot", "unique", "unique_consecutive",
           "unravel_index"]
