"""``nn`` workload: an MLP training step, Ember vs PyTorch.

At batch 128 the time is the six matrix products of the three ``Linear`` layers (forward and
backward), so Ember should match PyTorch nearly: the target is at least 0.9x its samples/s."""
import numpy as np

from workloads import workload


@workload("mlp_train_step", "MLP 784-512-512-10 (ReLU) training step, batch 128, float32: "
          "forward, cross-entropy, backward, hand-written SGD", number=20, quick_number=3,
          target=("torch", 1.11))  # 1 / 0.9: at least 0.9x the samples/s
def mlp_train_step(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    rng = np.random.default_rng(0)
    images = lib.from_numpy(rng.standard_normal((128, 784), dtype=np.float32))
    labels = lib.from_numpy(rng.integers(0, 10, 128))
    params = list(model.parameters())
    lr = 0.01

    def step():
        for p in params:
            p.grad = None
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= lr * p.grad
        return loss
    return step
