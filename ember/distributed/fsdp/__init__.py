"""``ember.distributed.fsdp``, as ``torch.distributed.fsdp``: fully sharded data parallelism
with FSDP2's interface (``fully_shard``, ``FSDPModule``); see ``fully_shard.py`` for how it
works and where it differs from PyTorch's. PyTorch's older wrapper class
(``FullyShardedDataParallel``, FSDP1, with its flat parameters and state-dict configurations)
is not provided.
"""
from .fully_shard import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy,
                          UnshardHandle, fully_shard)

__all__ = ["fully_shard", "FSDPModule", "UnshardHandle", "MixedPrecisionPolicy",
           "OffloadPolicy", "CPUOffloadPolicy"]
