"""Model classes written once against a library (``torch`` or ``ember``), so the FX tests
trace the same code with both and compare graphs, generated code and outputs."""
import numpy as np


def build(lib, name, **kw):
    nn, F = lib.nn, lib.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 4)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x)))

    class ConvBN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5, 3))

        def forward(self, x):
            return self.head(F.relu(self.bn(self.conv(x))))

    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.scale = nn.Parameter(lib.ones(4))

        def forward(self, x):
            h = F.gelu(self.fc(x)) * self.scale
            h = h.view(x.size(0), -1)
            n = x.shape[1]
            return lib.relu(h) + n, h.sum(dim=1, keepdim=True)

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(5, 5) for _ in range(2)])
            self.norm = nn.LayerNorm(5)

        def forward(self, x):
            for block in self.blocks:
                x = x + lib.tanh(block(x))
            return self.norm(x)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
            self.out = nn.Linear(8, 2)

        def forward(self, x):
            return self.out(self.layer(x).mean(dim=1))

    class ControlFlow(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    class Loop(nn.Module):
        def forward(self, x):
            total = 0
            for row in x:
                total = total + row
            return total

    class Unpack(nn.Module):
        def forward(self, x):
            a, b = x.chunk(2, dim=0)
            return a - b

    classes = {c.__name__: c for c in (MLP, ConvBN, Functional, Residual, Encoder, ControlFlow,
                                       Loop, Unpack)}
    lib.manual_seed(0)
    return classes[name](**kw)


INPUT_SHAPES = {"MLP": (3, 6), "ConvBN": (2, 3, 5, 5), "Functional": (2, 4),
                "Residual": (3, 5), "Encoder": (2, 3, 8), "Unpack": (4, 3)}


def copy_weights(torch_model, ember_model):
    import ember
    state = {k: ember.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()}
    ember_model.load_state_dict(state)


def example_input(lib, name, seed=0):
    shape = INPUT_SHAPES[name]
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return lib.tensor(data)


def target_name(node):
    """A node's target without its library: ``torch.relu`` and ``ember.relu`` both ``relu``
    (``torch._C._nn.gelu`` and ``ember.nn.functional.gelu`` both ``gelu``)."""
    if callable(node.target):
        return getattr(node.target, "__name__", repr(node.target))
    return node.target


def signature(gm):
    """(op, target, name) of every node: the graph's shape, library aside."""
    return [(n.op, target_name(n), n.name) for n in gm.graph.nodes]


def normalised_code(gm, lib_name):
    """The generated code with library-specific spellings of the same call unified."""
    code = gm.code
    for a, b in (("torch._C._nn.", "F."), ("torch.nn.functional.", "F."),
                 ("ember.nn.functional.", "F."), ("torch.", "lib."), ("ember.", "lib.")):
        code = code.replace(a, b)
    return code


def to_numpy(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


__all__ = ["build", "copy_weights", "example_input", "signature", "normalised_code",
           "to_numpy", "INPUT_SHAPES"]
