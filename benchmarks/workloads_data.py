"""DataLoader workloads: one epoch over a NumPy-returning dataset, Ember's DataLoader vs
PyTorch's. Workers are persistent, so a timed epoch measures loading, not process start-up."""
import numpy as np

from workloads import workload


class _CpuBound:
    """Each item costs a few milliseconds of NumPy work (a small matrix power series)."""

    def __len__(self):
        return 48

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        m = rng.standard_normal((96, 96)).astype(np.float32) / 10
        acc = np.eye(96, dtype=np.float32)
        for _ in range(40):
            acc = acc @ m + np.tanh(acc)
        return acc.sum(axis=0), i


class _Images:
    """3x224x224 float32 images: the cost is moving 38.5 MB batches out of the workers."""

    def __len__(self):
        return 64 * 6

    def __getitem__(self, i):
        return np.full((3, 224, 224), i, dtype=np.float32), i


def _epoch(dataset, batch_size, num_workers):
    def setup(lib):
        extra = dict(persistent_workers=True) if num_workers else {}
        loader = lib.utils.data.DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, **extra)

        def step():
            for _ in loader:
                pass
        return step
    return setup


workload("data_cpu_bound_w0", "one epoch, 48 items of ~3 ms NumPy work each, batch 8, num_workers=0",
         target=("torch", 1 / 0.9))(_epoch(_CpuBound(), 8, 0))
workload("data_cpu_bound_w2", "the same epoch with num_workers=2 (persistent)",
         target=("torch", 1 / 0.9))(_epoch(_CpuBound(), 8, 2))
workload("data_images_w2", "one epoch of 6 batches of 64 3x224x224 float32 images (231 MB), "
         "num_workers=2 (persistent)", target=("torch", 1 / 0.8))(_epoch(_Images(), 64, 2))
