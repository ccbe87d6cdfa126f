"""Linear layers, activations and their functional forms against PyTorch: outputs, input and
parameter gradients (with PyTorch's weights copied in), second derivatives, default
initialisation, ``state_dict`` keys, ``repr`` and errors."""
import math

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

rng = np.random.default_rng(0)


def _array(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _to_ember_state(module):
    return {k: ember.tensor(v.detach().numpy()) for k, v in module.state_dict().items()}


def _forward_backward(lib, module, arrays):
    inputs = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = module(*inputs)
    upstream = lib.tensor(np.linspace(-1.0, 1.5, out.numel(), dtype=np.float32)
                          .reshape(tuple(out.shape)))
    out.backward(upstream)
    grads = [t.grad for t in inputs if t.requires_grad]
    params = {name: p.grad for name, p in module.named_parameters()}
    return out, grads, params


def compare(fn, **tol):
    assert_same(fn(torch), fn(ember), **tol)


def compare_layer(make, arrays, train=True, **tol):
    """``make(lib)`` builds the layer; Ember's gets PyTorch's state, then both run forward and
    backward on the same input and agree on everything observable."""
    torch_layer, ember_layer = make(torch), make(ember)
    assert list(ember_layer.state_dict()) == list(torch_layer.state_dict())
    ember_layer.load_state_dict(_to_ember_state(torch_layer))
    torch_layer.train(train)
    ember_layer.train(train)
    expected = _forward_backward(torch, torch_layer, arrays)
    actual = _forward_backward(ember, ember_layer, arrays)
    assert_same(expected, actual, **tol)
    assert_same(dict(torch_layer.state_dict()), dict(ember_layer.state_dict()), **tol)
    assert repr(ember_layer) == repr(torch_layer)


# ---------------------------------------------------------------------------------------------
# Activations, functional
# ---------------------------------------------------------------------------------------------

ACTIVATIONS = [
    ("relu", {}), ("relu6", {}), ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}),
    ("celu", {"alpha": 2.0}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
    ("mish", {}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}),
    ("softsign", {}), ("softshrink", {}), ("softshrink", {"lambd": 1.0}), ("hardshrink", {}),
    ("tanhshrink", {}), ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
    ("hardsigmoid", {}), ("hardswish", {}), ("logsigmoid", {}), ("leaky_relu", {}),
    ("leaky_relu", {"negative_slope": 0.2}), ("tanh", {}), ("sigmoid", {}), ("glu", {}),
    ("glu", {"dim": 1}), ("softmax", {"dim": 1}), ("log_softmax", {"dim": 0}),
    ("softmin", {"dim": 1}), ("threshold", {"threshold": 0.5, "value": -2.0}),
    ("rrelu", {"training": False}),
]


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS, ids=lambda v: str(v))
def test_functional_activation(name, kwargs):
    # Values on both sides of every kink (+-3 for hard*, +-20 for softplus's threshold).
    x = np.concatenate([_array(4, 6, scale=3.0), [[-25, -3.5, -0.2, 0.3, 3.5, 25]]]) \
        .astype(np.float32)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        y = getattr(lib.nn.functional, name)(t, **kwargs)
        y.backward(lib.ones_like(y) * 0.7)
        return y, t.grad
    compare(run)


@pytest.mark.parametrize("name", ["gelu", "silu", "mish", "elu", "softplus", "logsigmoid",
                                  "hardswish"])
def test_activation_second_derivative(name):
    x = _array(3, 4, scale=2.0)

    def run(lib):
        t = lib.tensor(x.astype(np.float64), requires_grad=True)
        y = getattr(lib.nn.functional, name)(t)
        (g,) = lib.autograd.grad(y.sum(), t, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), t)
        return g, gg
    compare(run, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["relu", "relu6", "elu", "selu", "celu", "leaky_relu",
                                  "hardtanh", "silu", "mish", "hardsigmoid", "hardswish",
                                  "rrelu"])
def test_functional_inplace(name):
    x = _array(3, 5)

    def run(lib):
        leaf = lib.tensor(x, requires_grad=True)
        t = leaf * 1.0
        kwargs = {"training": False} if name == "rrelu" else {}
        y = getattr(lib.nn.functional, name)(t, inplace=True, **kwargs)
        assert y is t
        y.sum().backward()
        return t, leaf.grad
    compare(run)


def test_top_level_and_method_variants():
    x = _array(4, 3)

    def run(lib):
        a = lib.tensor(x)
        outs = [lib.relu(a), a.relu(), lib.selu(a), lib.celu(a, 0.5),
                lib.threshold(a, 0.1, 9.0)]
        for fn, args in [(lib.relu_, ()), (lib.selu_, ()), (lib.celu_, (2.0,)),
                         (lib.threshold_, (0.2, -1.0)), (lambda t: t.relu_(), ())]:
            b = a.clone()
            assert fn(b, *args) is b
            outs.append(b)
        return outs
    compare(run)


def test_rrelu_training_draws_slopes_between_bounds():
    x = -ember.ones(2000)
    y = ember.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y
    assert float(slopes.min()) >= 0.1 and float(slopes.max()) <= 0.3
    assert abs(float(slopes.mean()) - 0.2) < 0.01
    x = ember.tensor([-2.0, 3.0], requires_grad=True)
    y = ember.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), [float(y[0]) / -2.0, 1.0], rtol=1e-6)


def test_prelu_and_gumbel_softmax():
    x, w = _array(2, 3, 4), np.array([0.1, -0.3, 0.5], np.float32)

    def run(lib):
        t, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.prelu(t, wt)
        y.sum().backward()
        return y, t.grad, wt.grad
    compare(run)
    logits = ember.tensor(_array(5, 4))
    hard = ember.nn.functional.gumbel_softmax(logits, hard=True)
    assert_same(torch.ones(5), hard.sum(1))
    assert set(np.unique(np.asarray(hard)).tolist()) <= {0.0, 1.0}


def test_activation_errors():
    compare_error(lambda lib: lib.nn.functional.glu(lib.ones(2, 3)))
    compare_error(lambda lib: lib.nn.functional.gelu(lib.ones(2), approximate="foo"))
    compare_error(lambda lib: lib.relu(lib.tensor([True])))
    compare_error(lambda lib: lib.nn.functional.hardtanh(lib.ones(2), 2.0, 1.0))
    compare_error(lambda lib: lib.nn.functional.prelu(lib.ones(2, 3), lib.ones(2)))
    compare_error(lambda lib: lib.nn.functional.softshrink(lib.ones(2), -1.0))
    compare_error(lambda lib: lib.nn.Softmax2d()(lib.ones(2, 3)))
    compare_error(lambda lib: lib.nn.functional.leaky_relu(lib.ones(2, dtype=lib.int64)))


# ---------------------------------------------------------------------------------------------
# Activation modules
# ---------------------------------------------------------------------------------------------

ACTIVATION_MODULES = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("PReLU", ()), ("PReLU", (4,)),
    ("RReLU", (0.1, 0.2)), ("ELU", (0.7,)), ("SELU", ()), ("CELU", (1.5,)), ("GELU", ()),
    ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()), ("Softplus", (2.0, 5.0)), ("Softsign", ()),
    ("Softshrink", (0.3,)), ("Hardshrink", (0.3,)), ("Tanhshrink", ()), ("Tanh", ()),
    ("Sigmoid", ()), ("Hardtanh", (-2.0, 2.0)), ("Hardsigmoid", ()), ("Hardswish", ()),
    ("LogSigmoid", ()), ("Softmax", (1,)), ("Softmax2d", ()), ("LogSoftmax", (-1,)),
    ("Softmin", (0,)), ("Threshold", (0.1, 20.0)), ("GLU", (1,)), ("Identity", (3,)),
]


# RReLU draws random slopes in training: test_rrelu_training_draws_slopes_between_bounds.
@pytest.mark.parametrize("name,args,train", [
    (name, args, train) for name, args in ACTIVATION_MODULES for train in (True, False)
    if not (name == "RReLU" and train)], ids=lambda v: str(v))
def test_activation_module(name, args, train):
    compare_layer(lambda lib: getattr(lib.nn, name)(*args), [_array(2, 4, 3, 2, scale=2.0)],
                  train)


def test_prelu_default_init_and_state_dict():
    m = ember.nn.PReLU(3, init=0.1)
    assert list(m.state_dict()) == ["weight"]
    assert_same(torch.full((3,), 0.1), m.weight)


# ---------------------------------------------------------------------------------------------
# Linear, Bilinear, LazyLinear, Flatten, Unflatten
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    compare_layer(lambda lib: lib.nn.Linear(3, 4, bias=bias), [_array(*shape)])


def test_linear_float64_and_functional_without_grad_of_weight():
    x, w, b = _array(6, 3).astype(np.float64), _array(2, 3).astype(np.float64), _array(2)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.linear(t, lib.tensor(w), lib.tensor(b.astype(np.float64)))
        y.sum().backward()
        return y, t.grad
    compare(run)


def test_linear_default_init_matches_pytorch_distribution():
    layer = ember.nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = np.asarray(layer.weight.detach()), np.asarray(layer.bias.detach())
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # U(-bound, bound) has standard deviation bound / sqrt(3).
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(w.mean()) < 0.01 * bound
    assert layer.weight.requires_grad and isinstance(layer.weight, ember.nn.Parameter)


def test_bilinear():
    compare_layer(lambda lib: lib.nn.Bilinear(3, 2, 4), [_array(5, 3), _array(5, 2)])
    compare_layer(lambda lib: lib.nn.Bilinear(3, 2, 4, bias=False),
                  [_array(2, 5, 3), _array(2, 5, 2)])
    layer = ember.nn.Bilinear(20, 5, 10)
    assert np.abs(np.asarray(layer.weight.detach())).max() <= 1 / math.sqrt(20)
    compare_error(lambda lib: lib.nn.functional.bilinear(lib.ones(3, 2), lib.ones(3, 4),
                                                         lib.ones(5, 2, 3)))
    compare_error(lambda lib: lib.nn.functional.bilinear(lib.ones(3, 2), lib.ones(2, 4),
                                                         lib.ones(5, 2, 4)))


def test_lazy_linear_infers_in_features():
    layer = ember.nn.LazyLinear(4)
    assert layer.has_uninitialized_params()
    out = layer(ember.randn(2, 7))
    assert type(layer) is ember.nn.Linear and tuple(out.shape) == (2, 4)
    assert tuple(layer.weight.shape) == (4, 7) and layer.in_features == 7
    assert np.abs(np.asarray(layer.weight.detach())).max() <= 1 / math.sqrt(7)


def test_flatten_unflatten():
    compare_layer(lambda lib: lib.nn.Flatten(), [_array(2, 3, 4)])
    compare_layer(lambda lib: lib.nn.Flatten(0, 1), [_array(2, 3, 4)])
    compare_layer(lambda lib: lib.nn.Unflatten(1, (3, 2)), [_array(2, 6)])
    compare_error(lambda lib: lib.nn.Unflatten(1, 6))
    compare_error(lambda lib: lib.nn.Unflatten(1, (2, 3.0)))


def test_linear_errors():
    compare_error(lambda lib: lib.nn.functional.linear(lib.ones(4, 3), lib.ones(2, 5)))
    compare_error(lambda lib: lib.nn.functional.linear(lib.ones(2, 4, 3), lib.ones(2, 5)))
    compare_error(lambda lib: lib.nn.Linear(3, 2)(lib.ones(4, 5)))
    compare_error(lambda lib: lib.nn.functional.linear(lib.ones(4, 3, dtype=lib.float64),
                                                       lib.ones(2, 3)))


def test_mlp_trains_like_pytorch():
    x, target = _array(16, 8), rng.integers(0, 3, 16)

    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 3))
        return model

    torch_model, ember_model = run(torch), run(ember)
    ember_model.load_state_dict(_to_ember_state(torch_model))
    for lib, model in ((torch, torch_model), (ember, ember_model)):
        for _ in range(3):
            logits = model(lib.tensor(x))
            loss = -logits.log_softmax(1).gather(1, lib.tensor(target).unsqueeze(1)).mean()
            model.zero_grad()
            loss.backward()
            with lib.no_grad():
                for p in model.parameters():
                    p.sub_(p.grad * 0.1)
    assert_same(dict(torch_model.state_dict()), dict(ember_model.state_dict()), atol=1e-5)



def test_relu_double_backward_matches_torch():
    """relu's gradient stays connected to the graph under create_graph, as in PyTorch: alone it
    has a zero second derivative (not an error), through a product a non-zero one."""
    rng = np.random.default_rng(3)
    xs, ws = rng.standard_normal(6), rng.standard_normal(6)
    results = []
    for lib in (torch, ember):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(ws, requires_grad=True)
        (g,) = lib.autograd.grad(lib.relu(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        (gx,) = lib.autograd.grad((lib.relu(x * w) ** 2).sum(), x, create_graph=True)
        (gw,) = lib.autograd.grad(gx.sum(), w)
        results.append((gg, gw))
    assert_same(*results)


def test_hardshrink_prelu_methods():
    values = np.linspace(-1, 1, 7)
    t, e = torch.tensor(values), ember.tensor(values)
    assert_same(t.hardshrink(0.3), e.hardshrink(0.3))
    weight = np.asarray([0.25])
    tw, ew = torch.tensor(weight), ember.tensor(weight)
    assert_same(t.prelu(tw), e.prelu(ew))
