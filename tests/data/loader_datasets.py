"""Datasets for the DataLoader tests, in a module of their own so that workers started with
'spawn' (which import rather than inherit them) can find them."""
import os
import time

import numpy as np

import ember
from ember.utils.data import Dataset, IterableDataset, get_worker_info


class ArrayDataset:
    """Sample i: a float32 array (large enough for shared memory when batched), its index as a
    Python int, a float, a string and a dict; written once, used by Ember's and torch's
    DataLoader alike (it is a plain class, not either library's Dataset)."""

    def __init__(self, n=37, shape=(16, 64)):
        self.n, self.shape = n, shape

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = np.arange(np.prod(self.shape), dtype=np.float32).reshape(self.shape) * 0.5 + i
        return image, i, float(i) / 3, f"s{i}", {"label": np.int64(i % 5), "flag": i % 2 == 0}


class FailingDataset(Dataset):
    def __init__(self, bad_index):
        self.bad_index = bad_index

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.bad_index:
            raise ValueError(f"bad sample {i}")
        return np.float32(i)


class SlowDataset(Dataset):
    def __init__(self, delay):
        self.delay = delay

    def __len__(self):
        return 100

    def __getitem__(self, i):
        time.sleep(self.delay)
        return i


class SuicidalDataset(Dataset):
    """Kills its own worker process at sample ``fatal_index``."""

    def __init__(self, fatal_index):
        self.fatal_index = fatal_index

    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == self.fatal_index and get_worker_info() is not None:
            os.kill(os.getpid(), 9)
        return i


class ShardedRange(IterableDataset):
    """0..n-1, each worker taking every num_workers-th item."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class WorkerIdentity(Dataset):
    """Each sample reports which worker made it and what its random streams give."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        import random
        info = get_worker_info()
        return {"worker": -1 if info is None else info.id, "seed": -1 if info is None else info.seed,
                "pid": os.getpid(), "py": random.random(), "np": float(np.random.rand()),
                "ember": float(ember.rand(()).item())}


class PageFaultCounter:
    """Each batch creates (and, on return, frees) 16 samples of 256 KiB and reports how many
    pages the worker faulted in meanwhile: reused memory costs none."""

    def __len__(self):
        return 64

    def __getitems__(self, indices):
        import resource
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        samples = [np.full(64 * 1024, i, dtype=np.float32) for i in indices]
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, len(samples)
