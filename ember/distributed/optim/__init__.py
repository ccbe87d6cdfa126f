"""``ember.distributed.optim``, as ``torch.distributed.optim``: optimizers that work across
ranks. ``ZeroRedundancyOptimizer`` shards optimizer state over a process group.

PyTorch's ``DistributedOptimizer`` (RPC remote references), ``PostLocalSGDOptimizer`` and the
functional optimizers are not here: Ember has no RPC framework, no model averagers and no
functional optimizer API for them to build on.
"""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
