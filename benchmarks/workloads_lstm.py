"""Recurrent workload: an LSTM training step, Ember vs PyTorch.

One layer, hidden 256, 64 steps, batch 32: the time is the input projection (one matrix product
over all steps), 64 small hidden-projection products forward and 64 backward, and the weight
gradients (one product each). Ember runs the recurrence as one op with an analytic backward, so
its per-step overhead is a few NumPy calls; the target is at least 0.5x PyTorch's samples/s."""
import numpy as np

from workloads import workload


@workload("lstm_train_step", "LSTM 256->256 (1 layer) + Linear head training step, 64 steps, "
          "batch 32, float32: forward, MSE on the last step, backward, hand-written SGD",
          number=5, quick_number=2, target=("torch", 2.0))  # 1 / 0.5: at least 0.5x samples/s
def lstm_train_step(lib):
    nn = lib.nn
    lib.manual_seed(0)
    lstm = nn.LSTM(256, 256)
    head = nn.Linear(256, 1)
    rng = np.random.default_rng(0)
    inputs = lib.from_numpy(rng.standard_normal((64, 32, 256), dtype=np.float32))
    targets = lib.from_numpy(rng.standard_normal((32, 1), dtype=np.float32))
    params = list(lstm.parameters()) + list(head.parameters())
    lr = 0.01

    def step():
        for p in params:
            p.grad = None
        output, _ = lstm(inputs)
        loss = nn.functional.mse_loss(head(output[-1]), targets)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= lr * p.grad
        return loss
    return step
