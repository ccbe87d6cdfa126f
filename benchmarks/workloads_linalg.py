"""``linalg`` workloads: batched decompositions and solves, Ember vs PyTorch.

A batch of 256 matrices of 64x64 float32 goes to one batched LAPACK call in both frameworks
(NumPy's gufuncs on Ember's side), so the time is the factorisations, not per-matrix dispatch."""
import numpy as np

from workloads import workload

BATCH, N = 256, 64


def _spd_batch(lib, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, N, N)).astype(np.float32)
    return lib.from_numpy(x @ np.swapaxes(x, -1, -2) + N * np.eye(N, dtype=np.float32))


def _rhs(lib, seed=1):
    rng = np.random.default_rng(seed)
    return lib.from_numpy(rng.standard_normal((BATCH, N, 8)).astype(np.float32))


@workload("linalg_solve_256x64", "`linalg.solve` of 256 64x64 float32 systems (8 right-hand "
          "sides each)", number=10, quick_number=3, target=("torch", 2.0))
def linalg_solve(lib):
    a, b = _spd_batch(lib), _rhs(lib)

    def step():
        return lib.linalg.solve(a, b)
    return step


@workload("linalg_cholesky_256x64", "`linalg.cholesky` of 256 64x64 float32 SPD matrices",
          number=10, quick_number=3, target=("torch", 2.0))
def linalg_cholesky(lib):
    a = _spd_batch(lib)

    def step():
        return lib.linalg.cholesky(a)
    return step


@workload("linalg_svd_256x64", "`linalg.svd(full_matrices=False)` of 256 64x64 float32 matrices",
          number=3, quick_number=1, target=("torch", 2.0))
def linalg_svd(lib):
    a = _spd_batch(lib) - 10.0

    def step():
        return lib.linalg.svd(a, full_matrices=False)
    return step
