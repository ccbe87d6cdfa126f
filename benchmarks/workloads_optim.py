"""``optim`` workloads: optimizer steps over many large parameters, Ember vs PyTorch.

The gradients are set once, untimed, so the time is the update rule's arithmetic. PyTorch runs
its default implementation: on the CPU that is the single-tensor loop (``foreach`` and ``fused``
default to off for CPU tensors), one parameter at a time, as Ember's."""
import numpy as np

from workloads import workload


def _parameters_with_grads(lib, count, size, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for _ in range(count):
        p = lib.from_numpy(rng.standard_normal(size, dtype=np.float32))
        p.requires_grad_(True)
        p.grad = lib.from_numpy(rng.standard_normal(size, dtype=np.float32))
        params.append(p)
    return params


@workload("adam_step_10m", "one `optim.Adam` step over 10M float32 parameters in 100 tensors "
          "(gradients pre-set)", number=3, quick_number=1, target=("torch", 2.0))
def adam_step_10m(lib):
    params = _parameters_with_grads(lib, 100, 100_000)
    optimizer = lib.optim.Adam(params, lr=1e-3)
    optimizer.step()  # creates the state, so the timed steps are steady-state steps

    def step():
        optimizer.step()
    return step
