"""``ember.nn.parallel``: ``DataParallel`` (one device, or the CPU), ``data_parallel`` and
``DistributedDataParallel`` (gradients averaged over a process group of ``ember.distributed``,
bucketed and all-reduced during backward), as ``torch.nn.parallel``."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
