"""``jit.fork`` workloads: two independent BLAS-bound branches forked onto the inter-op pool,
against the same two branches run one after the other.

Each branch is a chain of three 1024x1024 float32 matrix products. BLAS is limited to one thread
in both workloads, so the forked row runs the branches side by side on two cores and the serial
row runs both on one thread. Ember's goal is the forked row at least 1.6x faster than the serial
one: Ember's ``fork_two_matmul_branches`` time at most 0.625x its ``two_matmul_branches_serial``
time (the ratio of the two rows' Ember cells; the runner compares frameworks, not rows).
PyTorch's eager ``jit.fork`` runs the function synchronously (only TorchScript code forks for
real), so PyTorch's forked row is serial too: it is PyTorch's one-thread time for the same work,
not a parallel baseline."""
import numpy as np

from workloads import workload

_N, _CHAIN = 1024, 3


def _branches(lib):
    # One BLAS thread: the parallelism measured is fork's, not BLAS's own.
    lib.set_num_threads(1)
    rng = np.random.default_rng(0)
    # Weights scaled by 1/sqrt(n) keep the chain's values near unit size.
    x, wa, wb = (lib.from_numpy((rng.standard_normal((_N, _N)) / np.sqrt(_N)).astype(np.float32))
                 for _ in range(3))

    def chain(x, w):
        for _ in range(_CHAIN):
            x = lib.matmul(x, w)
        return x
    return chain, x, wa, wb


@workload("fork_two_matmul_branches", "two independent chains of three 1024x1024 float32 "
          "matmuls, each `jit.fork`ed, then both `jit.wait`ed; BLAS at one thread (PyTorch's "
          "eager fork runs them serially)", number=3, quick_number=1)
def fork_two_matmul_branches(lib):
    chain, x, wa, wb = _branches(lib)

    def step():
        fa = lib.jit.fork(chain, x, wa)
        fb = lib.jit.fork(chain, x, wb)
        return lib.jit.wait(fa), lib.jit.wait(fb)
    return step


@workload("two_matmul_branches_serial", "the two chains of `fork_two_matmul_branches` run one "
          "after the other on one thread, BLAS at one thread: the baseline of the fork goal",
          number=3, quick_number=1)
def two_matmul_branches_serial(lib):
    chain, x, wa, wb = _branches(lib)

    def step():
        return chain(x, wa), chain(x, wb)
    return step
