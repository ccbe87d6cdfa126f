"""Models for the jit and export tests, defined here so that a subprocess that never imports
this module proves a saved program needs no model class."""
import ember
import ember.nn as nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(ember.relu(self.fc1(x))).softmax(-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 5)
        self.bn1d = nn.BatchNorm1d(5)

    def forward(self, x):
        x = nn.functional.max_pool2d(ember.relu(self.bn(self.conv(x))), 2)
        return self.bn1d(self.fc(x.flatten(1)))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


class LSTMTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
        self.out = nn.Linear(6, 3)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.out(y), h


class DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


def build(name, seed=0):
    """(model in eval mode, example inputs)."""
    ember.manual_seed(seed)
    if name == "mlp":
        return MLP().eval(), (ember.randn(2, 4),)
    if name == "cnn":
        m = CNN()
        with ember.no_grad():  # non-trivial running statistics, so folding is really tested
            for bn in (m.bn, m.bn1d):
                bn.running_mean.uniform_(-1, 1)
                bn.running_var.uniform_(0.5, 2)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-1, 1)
        return m.eval(), (ember.randn(2, 3, 8, 8),)
    if name == "transformer":
        return Encoder().eval(), (ember.randn(2, 5, 8),)
    if name == "lstm":
        return LSTMTagger().eval(), (ember.randn(2, 3, 4),)
    raise ValueError(name)


NAMES = ["mlp", "cnn", "transformer", "lstm"]
