"""Normalisation layers against PyTorch: with PyTorch's state copied in, the same inputs give the
same outputs, input and parameter gradients and updated running statistics, over several
training steps and in evaluation; second derivatives through the fused ops; and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

rng = np.random.default_rng(0)


def _array(*shape, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(np.float32)


def _to_ember_state(module):
    return {k: ember.tensor(v.detach().numpy()) for k, v in module.state_dict().items()}


def _randomize_affine(module):
    """Non-trivial weights and biases, so that their gradients and effect are tested."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape))


def _step(lib, module, x):
    t = lib.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = module(t)
    upstream = lib.tensor(np.linspace(-1.0, 2.0, out.numel(), dtype=np.float32)
                          .reshape(tuple(out.shape)))
    (out * upstream).sum().backward()
    grads = {name: p.grad for name, p in module.named_parameters()}
    module.zero_grad()
    return out, t.grad, grads, dict(module.state_dict())


def compare_norm_layer(make, shape, modes=(True, True, False), **tol):
    """Run ``make(lib)`` on a fresh batch per step, in the given train/eval sequence."""
    torch_layer, ember_layer = make(torch), make(ember)
    _randomize_affine(torch_layer)
    assert list(ember_layer.state_dict()) == list(torch_layer.state_dict())
    ember_layer.load_state_dict(_to_ember_state(torch_layer))
    assert repr(ember_layer) == repr(torch_layer)
    for train in modes:
        x = _array(*shape, scale=2.0, shift=0.5)
        torch_layer.train(train)
        ember_layer.train(train)
        assert_same(_step(torch, torch_layer, x), _step(ember, ember_layer, x),
                    **({"rtol": 1e-4, "atol": 1e-5} | tol))


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)),
                                       ("BatchNorm2d", (2, 3, 4, 3)),
                                       ("BatchNorm3d", (2, 3, 2, 3, 2))])
@pytest.mark.parametrize("options", [{}, {"momentum": None}, {"momentum": 0.3, "eps": 1e-3},
                                     {"affine": False}, {"track_running_stats": False},
                                     {"bias": False}],
                         ids=str)
def test_batch_norm(cls, shape, options):
    compare_norm_layer(lambda lib: getattr(lib.nn, cls)(3, **options), shape)


def test_batch_norm_cumulative_average_over_many_batches():
    compare_norm_layer(lambda lib: lib.nn.BatchNorm1d(3, momentum=None), (5, 3),
                       modes=(True,) * 4 + (False,))


def test_batch_norm_eval_without_running_stats_uses_batch_statistics():
    compare_norm_layer(lambda lib: lib.nn.BatchNorm2d(3, track_running_stats=False),
                       (2, 3, 2, 2), modes=(False,))


def test_functional_batch_norm_updates_given_buffers():
    x = _array(8, 4)

    def run(lib):
        mean, var = lib.zeros(4), lib.ones(4)
        out = lib.nn.functional.batch_norm(lib.tensor(x), mean, var, training=True,
                                           momentum=0.25)
        return out, mean, var
    assert_same(run(torch), run(ember), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", ["batch_norm", "layer_norm", "instance_norm", "group_norm"])
def test_fused_norm_second_derivative(fn):
    x, w, b = _array(4, 3, 5).astype(np.float64), _array(3), _array(3)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w.astype(np.float64), requires_grad=True)
        bt = lib.tensor(b.astype(np.float64), requires_grad=True)
        F = lib.nn.functional
        if fn == "batch_norm":
            y = F.batch_norm(t, None, None, wt, bt, training=True)
        elif fn == "instance_norm":
            y = F.instance_norm(t, weight=wt, bias=bt)
        elif fn == "group_norm":
            y = F.group_norm(t, 3, wt, bt)
        else:
            y = F.layer_norm(t.transpose(1, 2), (3,), wt, bt)
        g = lib.autograd.grad((y * y * y).sum(), (t, wt, bt), create_graph=True)
        gg = lib.autograd.grad(sum((gi * gi).sum() for gi in g), (t, wt))
        return g, gg
    assert_same(run(torch), run(ember), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.LayerNorm(5), (4, 5)),
    (lambda lib: lib.nn.LayerNorm([3, 5], eps=1e-3), (2, 3, 5)),
    (lambda lib: lib.nn.LayerNorm(5, elementwise_affine=False), (2, 3, 5)),
    (lambda lib: lib.nn.LayerNorm(5, bias=False), (2, 3, 5)),
    (lambda lib: lib.nn.GroupNorm(2, 4), (3, 4, 5)),
    (lambda lib: lib.nn.GroupNorm(4, 4, affine=False), (3, 4, 2, 2)),
    (lambda lib: lib.nn.GroupNorm(1, 4, bias=False), (3, 4)),
    (lambda lib: lib.nn.RMSNorm(5), (4, 5)),
    (lambda lib: lib.nn.RMSNorm([3, 5], eps=1e-3), (2, 3, 5)),
    (lambda lib: lib.nn.RMSNorm(5, elementwise_affine=False), (2, 5)),
    (lambda lib: lib.nn.LocalResponseNorm(3), (2, 5, 4)),
    (lambda lib: lib.nn.LocalResponseNorm(2, 1e-2, 0.5, 2.0), (2, 6, 3, 2)),
    (lambda lib: lib.nn.LocalResponseNorm(4), (1, 3, 2, 2, 2)),
], ids=lambda v: "" if callable(v) else str(v))
def test_other_norms(make, shape):
    compare_norm_layer(make, shape)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 6)), ("InstanceNorm1d", (3, 6)),
                                       ("InstanceNorm2d", (2, 3, 4, 3)),
                                       ("InstanceNorm3d", (2, 3, 2, 3, 2))])
@pytest.mark.parametrize("options", [{}, {"affine": True}, {"track_running_stats": True},
                                     {"affine": True, "track_running_stats": True,
                                      "momentum": 0.5}],
                         ids=str)
def test_instance_norm(cls, shape, options):
    compare_norm_layer(lambda lib: getattr(lib.nn, cls)(3, **options), shape)


def test_functional_normalize():
    x = _array(3, 4, 2)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        outs = [lib.nn.functional.normalize(t), lib.nn.functional.normalize(t, 1.0, -1),
                lib.nn.functional.normalize(t * 0, dim=0)]
        sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
        return outs, t.grad
    assert_same(run(torch), run(ember))


def test_normalization_errors():
    compare_error(lambda lib: lib.nn.BatchNorm1d(3)(lib.ones(2, 4)))
    compare_error(lambda lib: lib.nn.BatchNorm1d(3)(lib.ones(2, 3, 4, 5)))
    compare_error(lambda lib: lib.nn.BatchNorm2d(3)(lib.ones(2, 3, 4)))
    compare_error(lambda lib: lib.nn.BatchNorm3d(3)(lib.ones(2, 3, 4, 4)))
    compare_error(lambda lib: lib.nn.BatchNorm1d(4)(lib.ones(1, 4)), gist="Expected more than "
                  "1 value per channel when training")
    compare_error(lambda lib: lib.nn.functional.batch_norm(lib.ones(2, 4, 5), lib.zeros(3),
                                                           lib.ones(3)))
    compare_error(lambda lib: lib.nn.LayerNorm(5)(lib.ones(2, 3, 4)))
    compare_error(lambda lib: lib.nn.LayerNorm([3, 4])(lib.ones(2, 4, 4)))
    compare_error(lambda lib: lib.nn.functional.group_norm(lib.ones(2, 5, 3), 2))
    compare_error(lambda lib: lib.nn.GroupNorm(2, 5))
    compare_error(lambda lib: lib.nn.InstanceNorm1d(3, affine=True)(lib.ones(2, 4, 5)))
    compare_error(lambda lib: lib.nn.InstanceNorm2d(3)(lib.ones(2, 3)))
    compare_error(lambda lib: lib.nn.InstanceNorm1d(3)(lib.ones(1, 3, 1)),
                  gist="Expected more than 1 spatial element when training")
    compare_error(lambda lib: lib.nn.functional.local_response_norm(lib.ones(2, 5), 2))
    compare_error(lambda lib: lib.nn.RMSNorm(4)(lib.ones(2, 3)))


def test_instance_norm_warns_on_feature_mismatch_without_affine():
    with pytest.warns(UserWarning, match="does not match num_features"):
        ember.nn.InstanceNorm1d(3)(ember.randn(2, 4, 5))


def test_batch_norm_state_dict_matches_pytorch_layout():
    for cls in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
        t, e = getattr(torch.nn, cls)(4), getattr(ember.nn, cls)(4)
        assert_same(dict(t.state_dict()), dict(e.state_dict()))
        assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    layer = ember.nn.BatchNorm1d(2)
    layer(ember.randn(4, 2))
    assert layer.num_batches_tracked.item() == 1
    assert layer.num_batches_tracked.dtype is ember.int64
