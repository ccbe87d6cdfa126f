"""Issue 26's training throughput: whole training steps as users write them, Ember vs PyTorch.

Every row is ``optimizer.zero_grad()``, forward, ``nn.CrossEntropyLoss``, ``backward()`` and
``optim.SGD(momentum=0.9).step()``: unlike the ``*_train_step`` rows (hand-written SGD, the
layers alone), these include the optimizer's passes over the parameters, which issue 26's profile
found to be 18% of the MLP step. Targets are issue 26's goals for the plain install, as time
ratios (1 / the samples/s goal)."""
import numpy as np

from workloads import workload
from workloads_nn import _lenet5, _resnet_stack


def _sgd_step(lib, model, inputs, labels, forward=None):
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = lib.nn.CrossEntropyLoss()
    forward = forward or model

    def step():
        optimizer.zero_grad()
        loss = criterion(forward(inputs), labels)
        loss.backward()
        optimizer.step()
        return loss
    return step


def _data(lib, shape, classes, seed=0):
    rng = np.random.default_rng(seed)
    inputs = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32))
    labels = lib.from_numpy(rng.integers(0, classes, shape[0]))
    return inputs, labels


@workload("sgd_mlp_train", "MLP 784-512-512-10 (ReLU), batch 128: zero_grad, forward, "
          "CrossEntropyLoss, backward, SGD(momentum=0.9).step()", number=20, quick_number=3,
          target=("torch", 1 / 0.9))
def sgd_mlp_train(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    return _sgd_step(lib, model, *_data(lib, (128, 784), 10))


@workload("sgd_lenet5_train", "LeNet-5, batch 64 of 1x28x28: zero_grad, forward, "
          "CrossEntropyLoss, backward, SGD(momentum=0.9).step()", number=5, quick_number=1,
          target=("torch", 1 / 0.7))
def sgd_lenet5_train(lib):
    lib.manual_seed(0)
    return _sgd_step(lib, _lenet5(lib), *_data(lib, (64, 1, 28, 28), 10))


@workload("sgd_resnet_stack_train", "ResNet-style stem + 3 residual blocks of 64 channels, batch "
          "32 of 3x32x32: zero_grad, forward, CrossEntropyLoss, backward, SGD(momentum=0.9)",
          number=1, target=("torch", 1 / 0.6))
def sgd_resnet_stack_train(lib):
    lib.manual_seed(0)
    return _sgd_step(lib, _resnet_stack(lib), *_data(lib, (32, 3, 32, 32), 10))


@workload("sgd_transformer_train", "TransformerEncoder 2 x (d_model 256, 8 heads, ff 1024, "
          "dropout 0.1), batch 16 x 128 tokens, a 10-class head per token: zero_grad, forward, "
          "CrossEntropyLoss, backward, SGD(momentum=0.9)", number=2, quick_number=1,
          target=("torch", 1 / 0.95))
def sgd_transformer_train(lib):
    nn = lib.nn
    lib.manual_seed(0)
    layer = nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.1, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    head = nn.Linear(256, 10)
    model = nn.Sequential(encoder, head)
    inputs, labels = _data(lib, (16, 128, 256), 10)
    labels = labels.reshape(16, 1).expand(16, 128).reshape(-1)

    def forward(x):
        return model(x).reshape(-1, 10)
    return _sgd_step(lib, model, inputs, labels, forward)


@workload("sgd_lstm_train", "LSTM 128->256 (1 layer), batch 32 x 64 steps, a 10-class head on "
          "the last step: zero_grad, forward, CrossEntropyLoss, backward, SGD(momentum=0.9)",
          number=5, quick_number=1, target=("torch", 1 / 0.6))
def sgd_lstm_train(lib):
    nn = lib.nn
    lib.manual_seed(0)
    lstm = nn.LSTM(128, 256)
    head = nn.Linear(256, 10)
    model = nn.ModuleList([lstm, head])
    inputs, _ = _data(lib, (64, 32, 128), 10)
    _, labels = _data(lib, (32,), 10, seed=1)

    def forward(x):
        output, _ = lstm(x)
        return head(output[-1])
    return _sgd_step(lib, model, inputs, labels, forward)
