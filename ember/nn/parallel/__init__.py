"""``ember.nn.parallel``: ``DataParallel`` (one device, or the CPU), ``data_parallel`` and
``DistributedDataParallel`` (which needs a process group, which Ember cannot create yet), as
``torch.nn.parallel``."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
