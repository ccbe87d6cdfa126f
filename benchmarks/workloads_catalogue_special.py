"""Op-catalogue workloads for ``ember.special`` and for sorting/searching, Ember vs PyTorch.

One workload per family, each calling every large op of the family once on a million elements,
so the ratio is that of the family as a whole. PyTorch runs fused C++ kernels; Ember runs each
op as a handful of whole-array NumPy passes (special functions in float64, then rounded), so the
special functions run a few times slower; the sorting family, one NumPy sort or search per op,
keeps up with PyTorch."""
import numpy as np

from workloads import workload


@workload("special_family_1m", "`lgamma`, `digamma`, `polygamma(1)`, `special.i0e`, "
          "`special.i1`, `special.ndtri`, `special.log_ndtr`, `sinc` on 1M float32 elements",
          number=1, quick_number=1, target=("torch", 6.0))
def special_family_1m(lib):
    rng = np.random.default_rng(0)
    positive = lib.from_numpy(rng.uniform(0.05, 30.0, 1_000_000).astype(np.float32))
    signed = lib.from_numpy(rng.uniform(-30.0, 30.0, 1_000_000).astype(np.float32))
    unit = lib.from_numpy(rng.uniform(0.001, 0.999, 1_000_000).astype(np.float32))

    def step():
        return (lib.lgamma(positive), lib.digamma(positive), lib.polygamma(1, positive),
                lib.special.i0e(signed), lib.special.i1(signed), lib.special.ndtri(unit),
                lib.special.log_ndtr(signed), lib.sinc(signed))
    return step


@workload("sorting_family_1m", "`quantile` (3 q, dim=1), `median`, `mode`, `kthvalue` on "
          "1000x1000 float32; `unique` (inverse + counts), `searchsorted` in 4096 boundaries, "
          "`histc`, `bincount`, `isin` on 1M elements", number=1, quick_number=1,
          target=("torch", 2.0))
def sorting_family_1m(lib):
    rng = np.random.default_rng(0)
    matrix = lib.from_numpy(rng.standard_normal((1000, 1000), dtype=np.float32))
    q = lib.from_numpy(np.array([0.1, 0.5, 0.9], dtype=np.float32))
    counts = lib.from_numpy(rng.integers(0, 50, size=(1000, 1000)).astype(np.float32))
    integers = lib.from_numpy(rng.integers(0, 10_000, size=1_000_000))
    boundaries = lib.from_numpy(np.sort(rng.standard_normal(4096).astype(np.float32)))
    values = matrix.reshape(-1)
    tests = lib.from_numpy(rng.integers(0, 10_000, size=500))

    def step():
        return (lib.quantile(matrix, q, dim=1), lib.median(matrix, 1), lib.mode(counts, 1),
                lib.kthvalue(matrix, 10, 1),
                lib.unique(integers, return_inverse=True, return_counts=True),
                lib.searchsorted(boundaries, values), lib.histc(values, bins=64, min=-4, max=4),
                lib.bincount(integers), lib.isin(integers, tests))
    return step
