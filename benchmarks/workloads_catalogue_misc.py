"""Op-catalogue workloads for ember/ops/cumulative.py and for the ops that were once
ember/ops/extra.py (now in elementwise, shape, indexing, matmul, creation and reduce; the
workload keeps its name ``catalogue_extra`` so its rows stay comparable): one per family, each a
handful of the family's ops on arrays large enough that the time is the array work
(each op is one NumPy call or a few), Ember vs PyTorch."""
import numpy as np

from workloads import workload


def _floats(lib, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.from_numpy(rng.standard_normal(s, dtype=np.float32)) for s in shapes]


@workload("catalogue_cumulative", "cummax, logcumsumexp, diff, unfold+sum over a 1024x1024 "
          "float32 tensor, and cdist of two 512x64 point sets (matrix-product path)",
          number=3, quick_number=1, target=("torch", 2.0))
def catalogue_cumulative(lib):
    x, a, b = _floats(lib, (1024, 1024), (512, 64), (512, 64))

    def step():
        lib.cummax(x, 1)
        lib.logcumsumexp(x, 1)
        lib.diff(x, dim=0)
        x.unfold(1, 8, 4).sum()
        return lib.cdist(a, b)
    return step


@workload("catalogue_extra", "copysign, logaddexp, kron (64x64 by 16x16), scatter_reduce "
          "amax of 1M values into 1024 bins, index_fill, masked_scatter and aminmax on 1M-element "
          "float32 tensors", number=3, quick_number=1, target=("torch", 2.0))
def catalogue_extra(lib):
    x, y, small, tile = _floats(lib, (1024, 1024), (1024, 1024), (64, 64), (16, 16))
    rng = np.random.default_rng(1)
    bins = lib.from_numpy(rng.integers(0, 1024, size=1 << 20).astype(np.int64))
    flat = x.reshape(-1)
    target = lib.zeros(1024)
    rows = lib.from_numpy(np.arange(0, 1024, 3, dtype=np.int64))
    mask = y > 0

    def step():
        lib.copysign(x, y)
        lib.logaddexp(x, y)
        lib.kron(small, tile)
        target.scatter_reduce(0, bins, flat, "amax", include_self=False)
        x.index_fill(0, rows, 0.5)
        x.masked_scatter(mask, y)
        return lib.aminmax(x, dim=1)
    return step
