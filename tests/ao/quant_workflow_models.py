"""Twin models for the quantization workflow tests: the same architecture built from torch
and from ember (``lib`` is ``torch`` or ``ember``), with torch's weights copied into ember's."""
import numpy as np


def to_ember(t):
    import ember
    return ember.tensor(t.detach().numpy())


def copy_weights(t_model, e_model):
    """Load ``t_model``'s state_dict into ``e_model`` (keys must match)."""
    e_model.load_state_dict({k: to_ember(v) for k, v in t_model.state_dict().items()})
    return e_model


def assert_close(e, t, atol=1e-5, rtol=1e-5):
    e = e.detach().numpy() if hasattr(e, "detach") else np.asarray(e)
    np.testing.assert_allclose(e, t.detach().numpy(), atol=atol, rtol=rtol)


def small_cnn(lib, quantization, stubs=True):
    """quant -> conv-bn-relu -> conv-relu -> flatten -> linear-relu -> linear -> dequant."""
    nn = lib.nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = quantization.QuantStub() if stubs else nn.Identity()
            self.conv1 = nn.Conv2d(1, 4, 3)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu1 = nn.ReLU()
            self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
            self.relu2 = nn.ReLU()
            self.flatten = nn.Flatten()
            self.fc1 = nn.Linear(4 * 4 * 4, 16)
            self.relu3 = nn.ReLU()
            self.fc2 = nn.Linear(16, 5)
            self.dequant = quantization.DeQuantStub() if stubs else nn.Identity()

        def forward(self, x):
            x = self.quant(x)
            x = self.relu1(self.bn1(self.conv1(x)))
            x = self.relu2(self.conv2(x))
            x = self.relu3(self.fc1(self.flatten(x)))
            return self.dequant(self.fc2(x))

    return SmallCNN()


FUSE_LIST = [["conv1", "bn1", "relu1"], ["conv2", "relu2"], ["fc1", "relu3"]]


def twin_cnns(seed=0, stubs=True):
    import torch
    import torch.ao.quantization as tq
    import ember
    import ember.ao.quantization as eq
    torch.manual_seed(seed)
    t_model = small_cnn(torch, tq, stubs)
    # non-trivial BatchNorm statistics, so that folding them changes the weights
    with torch.no_grad():
        t_model.bn1.running_mean.uniform_(-0.5, 0.5)
        t_model.bn1.running_var.uniform_(0.5, 2.0)
        t_model.bn1.weight.uniform_(0.5, 1.5)
        t_model.bn1.bias.uniform_(-0.2, 0.2)
    e_model = copy_weights(t_model, small_cnn(ember, eq, stubs))
    return t_model, e_model


def calibration_batches(n=3, shape=(8, 1, 6, 6), seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]
