"""torch.func workloads: per-sample gradients of an MLP, batched by ``vmap(grad(...))`` against
the loop over samples, Ember's ``ember.func`` against ``torch.func``.

- ``func_per_sample_grad_vmap``: ``vmap(grad(loss), in_dims=(None, 0, 0))`` over 128 samples of
  an MLP 64 -> 128 -> 128 -> 10 (ReLU, cross-entropy), parameters through ``functional_call``.
- ``func_per_sample_grad_loop``: the same gradients, one ``grad(loss)`` call per sample.

The ratio of the two rows is what batching buys (the issue asks for >= 10x); each row's
Ember/PyTorch ratio compares the two implementations of the same transform."""
import numpy as np

from workloads import workload

SAMPLES, IN, HIDDEN, OUT = 128, 64, 128, 10


def _setup(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, OUT))
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((SAMPLES, IN), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, OUT, SAMPLES))
    params = {k: v.detach() for k, v in model.named_parameters()}
    func = lib.func

    def loss(p, xi, yi):
        out = func.functional_call(model, p, (xi.unsqueeze(0),))
        return nn.functional.cross_entropy(out, yi.unsqueeze(0))
    return func, params, x, y, loss


@workload("func_per_sample_grad_vmap",
          f"per-sample gradients of an MLP {IN}-{HIDDEN}-{HIDDEN}-{OUT} over {SAMPLES} samples "
          "with vmap(grad(loss)) (functional_call, cross-entropy)", number=3, quick_number=1)
def func_per_sample_grad_vmap(lib):
    func, params, x, y, loss = _setup(lib)
    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))

    def step():
        return per_sample(params, x, y)
    return step


@workload("func_per_sample_grad_loop",
          f"per-sample gradients of an MLP {IN}-{HIDDEN}-{HIDDEN}-{OUT} over {SAMPLES} samples, "
          "one grad(loss) call per sample (the loop vmap replaces)", number=1, quick_number=1)
def func_per_sample_grad_loop(lib):
    func, params, x, y, loss = _setup(lib)
    g = func.grad(loss)

    def step():
        return [g(params, x[i], y[i]) for i in range(SAMPLES)]
    return step
