"""Datasets, samplers and the DataLoader, as ``torch.utils.data``."""
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset,  # noqa: F401
                      ChainDataset, Subset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,  # noqa: F401
                      WeightedRandomSampler, BatchSampler)
from ._utils.collate import default_collate, default_convert  # noqa: F401
from ._utils.worker import get_worker_info  # noqa: F401
from .dataloader import DataLoader  # noqa: F401
from .distributed import DistributedSampler  # noqa: F401

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "default_collate", "default_convert", "get_worker_info", "DataLoader",
           "DistributedSampler"]
