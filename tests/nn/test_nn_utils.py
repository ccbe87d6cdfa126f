"""nn.utils against PyTorch: gradient clipping, parameter/vector conversion, parametrize (with
weight_norm, spectral_norm and orthogonal) and BatchNorm fusion. Each test builds the same
module in both libraries, copies PyTorch's state into Ember and compares values, gradients,
buffers and state_dict keys."""
import copy
import math
import pickle

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

rng = np.random.default_rng(0)


def to_ember(t):
    return ember.tensor(t.detach().numpy())


def copy_state(src, dst):
    """Load torch module ``src``'s state into ember module ``dst`` (same keys)."""
    state = {k: to_ember(v) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def assert_state_same(expected_module, actual_module, **tol):
    expected = expected_module.state_dict()
    actual = actual_module.state_dict()
    assert list(actual) == list(expected)
    assert_same(dict(expected), dict(actual), **tol)


def params_with_grads(lib, shapes, scale=1.0):
    params = []
    for shape in shapes:
        p = lib.nn.Parameter(lib.tensor(rng_values[shape]))
        p.grad = lib.tensor(rng_values[shape] * scale)
        params.append(p)
    return params


rng_values = {shape: rng.standard_normal(shape).astype(np.float32)
              for shape in [(3, 4), (5,), (2, 3, 2), ()]}
SHAPES = [(3, 4), (5,), (2, 3, 2), ()]


# ---- gradient clipping ------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm(norm_type, max_norm, foreach):
    results = {}
    for lib in (torch, ember):
        params = params_with_grads(lib, SHAPES)
        total = lib.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type,
                                            foreach=foreach)
        results[lib] = (total, [p.grad for p in params])
    assert_same(results[torch], results[ember], rtol=1e-5)


def test_clip_grad_norm_inputs():
    for make in (lambda ps: ps[0], lambda ps: iter(ps), lambda ps: (p for p in ps)):
        results = {}
        for lib in (torch, ember):
            params = params_with_grads(lib, SHAPES)
            params[1].grad = None
            total = lib.nn.utils.clip_grad_norm_(make(params), 1.0)
            results[lib] = (total, [p.grad for p in params if p.grad is not None])
        assert_same(results[torch], results[ember], rtol=1e-5)
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="empty generator"):
            assert float(lib.nn.utils.clip_grad_norm_((p for p in []), 1.0)) == 0.0


def test_clip_grad_norm_nonfinite():
    def clip(lib, error):
        params = params_with_grads(lib, SHAPES)
        params[0].grad[0, 0] = float("nan")
        total = lib.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=error)
        return total, params[1].grad
    assert_same(clip(torch, False), clip(ember, False))
    compare_error(lambda lib: clip(lib, True))


def test_total_norm_and_clip_with_norm():
    results = {}
    for lib in (torch, ember):
        params = params_with_grads(lib, SHAPES)
        grads = [p.grad for p in params]
        total = lib.nn.utils.get_total_norm(grads, norm_type=3.0)
        lib.nn.utils.clip_grads_with_norm_(params, 0.7, total)
        results[lib] = (total, grads, lib.nn.utils.get_total_norm([]))
    assert_same(results[torch], results[ember], rtol=1e-5)


@pytest.mark.parametrize("clip_value", [0.3, 2])
def test_clip_grad_value(clip_value):
    results = {}
    for lib in (torch, ember):
        params = params_with_grads(lib, SHAPES, scale=2.0)
        params[2].grad = None
        assert lib.nn.utils.clip_grad_value_(params, clip_value, foreach=False) is None
        results[lib] = [p.grad for p in params if p.grad is not None]
    assert_same(results[torch], results[ember])


# ---- parameters <-> vector --------------------------------------------------------------------

def test_parameters_to_vector_and_back():
    results = {}
    for lib in (torch, ember):
        params = params_with_grads(lib, SHAPES)
        vec = lib.nn.utils.parameters_to_vector(params)
        (vec * lib.arange(vec.numel(), dtype=vec.dtype)).sum().backward()
        new = lib.arange(vec.numel(), dtype=lib.float32) / 7
        lib.nn.utils.vector_to_parameters(new, params)
        results[lib] = (vec, [p.grad for p in params], [p.detach() for p in params],
                        [p.requires_grad for p in params])
    assert_same(results[torch], results[ember])
    compare_error(lambda lib: lib.nn.utils.vector_to_parameters([1.0], []))


# ---- parametrize ------------------------------------------------------------------------------

def symmetric_class(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()
    return Symmetric


def scaled_class(lib):
    class Scaled(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", lib.tensor(2.0))

        def forward(self, X):
            return X * self.scale

        def right_inverse(self, X):
            return X / self.scale
    return Scaled


def linear_pair(in_features=4, out_features=4, bias=True):
    t = torch.nn.Linear(in_features, out_features, bias=bias)
    e = ember.nn.Linear(in_features, out_features, bias=bias)
    copy_state(t, e)
    return t, e


def forward_backward(lib, module, x, name="weight"):
    x = lib.tensor(x)
    out = module(x)
    out.pow(2).sum().backward()
    grads = {n: p.grad for n, p in module.named_parameters()}
    return out, grads, getattr(module, name)


def test_register_parametrization_chain_and_state_dict():
    t, e = linear_pair()
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for lib, m in ((torch, t), (ember, e)):
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", symmetric_class(lib)())
        P.register_parametrization(m, "weight", scaled_class(lib)())
        assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
        assert not P.is_parametrized(m, "bias")
        assert type(m).__name__ == "ParametrizedLinear"
        assert P.type_before_parametrizations(m) is lib.nn.Linear
    assert_state_same(t, e)
    assert list(dict(e.named_parameters())) == list(dict(t.named_parameters()))
    assert_same(forward_backward(torch, t, x), forward_backward(ember, e, x), rtol=1e-5)
    # Assigning to the parametrized tensor runs the right inverses.
    value = rng.standard_normal((4, 4)).astype(np.float32)
    value = value + value.T
    t.weight = torch.tensor(value)
    e.weight = ember.tensor(value)
    assert_state_same(t, e)
    assert repr(e) == repr(t)


@pytest.mark.parametrize("leave_parametrized", [True, False])
def test_remove_parametrizations(leave_parametrized):
    t, e = linear_pair()
    for lib, m in ((torch, t), (ember, e)):
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", scaled_class(lib)())
        original = m.parametrizations.weight.original
        P.remove_parametrizations(m, "weight", leave_parametrized=leave_parametrized)
        assert m.weight is original and type(m) is lib.nn.Linear
        assert not hasattr(m, "parametrizations")
    assert_state_same(t, e)
    compare_error(lambda lib: lib.nn.utils.parametrize.remove_parametrizations(
        lib.nn.Linear(2, 2), "weight"), gist="does not have a parametrization on weight")


def test_parametrize_buffer_and_cached():
    calls = {"n": 0}

    def counting(lib):
        class Counting(lib.nn.Module):
            def forward(self, X):
                calls["n"] += 1
                return X * 3
        return Counting

    m = ember.nn.Linear(3, 3)
    m.register_buffer("mask", ember.ones(3, 3))
    ember.nn.utils.parametrize.register_parametrization(m, "mask", counting(ember)())
    assert "parametrizations.mask.original" in m.state_dict()
    calls["n"] = 0
    with ember.nn.utils.parametrize.cached():
        a, b = m.mask, m.mask
    assert a is b and calls["n"] == 1
    m.mask, m.mask
    assert calls["n"] == 3
    compare_error(lambda lib: lib.nn.utils.parametrize.register_parametrization(
        lib.nn.Linear(2, 2), "nothing", counting(lib)()), gist="does not have a parameter")


def test_parametrize_checks_shape_and_dtype():
    def reshaping(lib):
        class Flat(lib.nn.Module):
            def forward(self, X):
                return X.reshape(-1)
        return Flat
    compare_error(lambda lib: lib.nn.utils.parametrize.register_parametrization(
        lib.nn.Linear(2, 2), "weight", reshaping(lib)()),
        gist="Registering a parametrization may not change the shape of the tensor")
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 2)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", reshaping(lib)(),
                                                          unsafe=True)
        assert tuple(m.weight.shape) == (4,)


# ---- weight_norm ------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_linear(dim):
    t, e = linear_pair(4, 3)
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    ember.nn.utils.parametrizations.weight_norm(e, dim=dim)
    assert_state_same(t, e)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    assert_same(forward_backward(torch, t, x), forward_backward(ember, e, x), rtol=1e-5,
                atol=1e-6)


def test_weight_norm_conv_and_remove():
    if not hasattr(ember.nn, "Conv2d"):
        pytest.skip("ember.nn.Conv2d is not built yet")
    t = torch.nn.Conv2d(2, 3, 3)
    e = ember.nn.Conv2d(2, 3, 3)
    copy_state(t, e)
    for lib, m in ((torch, t), (ember, e)):
        lib.nn.utils.parametrizations.weight_norm(m, dim=2)
    assert_state_same(t, e)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    assert_same(forward_backward(torch, t, x), forward_backward(ember, e, x), rtol=1e-5,
                atol=1e-5)
    for lib, m in ((torch, t), (ember, e)):
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
    assert_state_same(t, e, rtol=1e-5, atol=1e-6)
    compare_error(lambda lib: lib.nn.utils.parametrize.remove_parametrizations(
        lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(2, 2)), "weight",
        leave_parametrized=False))


# ---- spectral_norm ----------------------------------------------------------------------------

@pytest.mark.parametrize("n_power_iterations, dim", [(1, None), (3, 1)])
def test_spectral_norm_linear(n_power_iterations, dim):
    t, e = linear_pair(5, 4)
    torch.nn.utils.parametrizations.spectral_norm(t, n_power_iterations=n_power_iterations,
                                                  dim=dim)
    ember.nn.utils.parametrizations.spectral_norm(e, n_power_iterations=n_power_iterations,
                                                  dim=dim)
    # Same keys; u and v start random, so PyTorch's are copied in.
    assert list(e.state_dict()) == list(t.state_dict())
    copy_state(t, e)
    x = rng.standard_normal((2, 5)).astype(np.float32)
    for training in (True, True, False):
        t.train(training)
        e.train(training)
        for m in (t, e):
            m.zero_grad()
        assert_same(forward_backward(torch, t, x), forward_backward(ember, e, x), rtol=1e-4,
                    atol=1e-5)
        assert_state_same(t, e, rtol=1e-5, atol=1e-6)


def test_spectral_norm_conv_transpose_and_vector():
    if not hasattr(ember.nn, "ConvTranspose2d"):
        pytest.skip("ember.nn.ConvTranspose2d is not built yet")
    t = torch.nn.ConvTranspose2d(3, 2, 3)
    e = ember.nn.ConvTranspose2d(3, 2, 3)
    copy_state(t, e)
    torch.nn.utils.parametrizations.spectral_norm(t)
    ember.nn.utils.parametrizations.spectral_norm(e)
    copy_state(t, e)
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    assert_same(forward_backward(torch, t, x), forward_backward(ember, e, x), rtol=1e-4,
                atol=1e-5)
    assert_state_same(t, e, rtol=1e-5, atol=1e-6)
    # A 1-D tensor is simply normalised.
    for lib in (torch, ember):
        lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), "bias")
    compare_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(
        lib.nn.Linear(2, 2), dim=3))


# ---- orthogonal -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, orthogonal_map", [
    ((4, 4), None), ((6, 3), None), ((3, 6), None), ((4, 4), "householder"),
    ((6, 3), "matrix_exp"), ((3, 6), "matrix_exp"), ((4, 4), "cayley"), ((6, 3), "cayley"),
    ((3, 6), "cayley")])
def test_orthogonal(shape, orthogonal_map):
    out_features, in_features = shape
    t, e = linear_pair(in_features, out_features, bias=False)
    torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map=orthogonal_map)
    ember.nn.utils.parametrizations.orthogonal(e, orthogonal_map=orthogonal_map)
    assert list(e.state_dict()) == list(t.state_dict())
    w = e.weight.detach()
    eye = ember.eye(min(shape))
    gram = w @ w.mT if shape[0] <= shape[1] else w.mT @ w
    np.testing.assert_allclose(np.asarray(gram), np.asarray(eye), atol=1e-5)
    # Completing a rectangular matrix is random: compare from PyTorch's state, after a step.
    copy_state(t, e)
    with torch.no_grad():
        t.parametrizations.weight.original.add_(
            torch.tensor(rng.standard_normal(shape).astype(np.float32)) * 0.3)
    copy_state(t, e)
    x = rng.standard_normal((2, in_features)).astype(np.float32)
    assert_same(forward_backward(torch, t, x), forward_backward(ember, e, x), rtol=1e-4,
                atol=1e-5)
    # Assigning an orthogonal matrix stores it as the new base.
    target = np.linalg.qr(rng.standard_normal((max(shape), max(shape))))[0][:shape[0], :shape[1]]
    target = target.astype(np.float32)
    if shape[0] == shape[1]:
        t.weight = torch.tensor(target)
        e.weight = ember.tensor(target)
        assert_same(t.weight, e.weight, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_orthogonal_householder_without_trivialization(shape):
    t, e = linear_pair(shape[1], shape[0], bias=False)
    for lib, m in ((torch, t), (ember, e)):
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map="householder",
                                                 use_trivialization=False)
    # No random completion here: the reflectors come from the weight's QR decomposition.
    assert_state_same(t, e, rtol=1e-5, atol=1e-6)
    x = rng.standard_normal((2, shape[1])).astype(np.float32)
    assert_same(forward_backward(torch, t, x), forward_backward(ember, e, x), rtol=1e-4,
                atol=1e-5)


def test_parametrized_module_copy_and_pickle():
    for lib in (torch, ember):
        m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))
        replica = copy.deepcopy(m)
        assert type(replica).__name__ == "ParametrizedLinear"
        assert list(replica.state_dict()) == list(m.state_dict())
        assert replica.parametrizations.weight.original0 is not m.parametrizations.weight.original0
    compare_error(lambda lib: pickle.dumps(
        lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))),
        gist="Serialization of parametrized modules is only supported through state_dict()")


def test_orthogonal_errors():
    compare_error(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2),
                                                                       "bias"))
    compare_error(lambda lib: lib.nn.utils.parametrizations.orthogonal(
        lib.nn.Linear(2, 2), orthogonal_map="exp"))


# ---- fusion -----------------------------------------------------------------------------------

def _trained_bn(lib, bn):
    bn.train()
    bn(lib.tensor(rng_bn))
    bn.eval()
    return bn


rng_bn = rng.standard_normal((4, 3, 5, 5)).astype(np.float32) * 2 + 1


@pytest.mark.parametrize("conv_bias", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(conv_bias, transpose):
    if not (hasattr(ember.nn, "Conv2d") and hasattr(ember.nn, "BatchNorm2d")):
        pytest.skip("ember.nn.Conv2d / BatchNorm2d are not built yet")
    results = {}
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    torch_conv = (torch.nn.ConvTranspose2d if transpose else torch.nn.Conv2d)(3, 3, 3,
                                                                              bias=conv_bias)
    torch_bn = _trained_bn(torch, torch.nn.BatchNorm2d(3))
    for lib in (torch, ember):
        conv = (lib.nn.ConvTranspose2d if transpose else lib.nn.Conv2d)(3, 3, 3, bias=conv_bias)
        bn = lib.nn.BatchNorm2d(3)
        if lib is torch:
            conv, bn = torch_conv, torch_bn
        else:
            copy_state(torch_conv, conv)
            copy_state(torch_bn, bn)
        conv.eval()
        bn.eval()
        fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
        xs = lib.tensor(x)
        results[lib] = (fused(xs), bn(conv(xs)), fused.weight, fused.bias,
                        fused.weight.requires_grad, fused.bias.requires_grad)
    assert_same(results[torch], results[ember], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(results[ember][0].detach()),
                               np.asarray(results[ember][1].detach()), rtol=1e-4, atol=1e-5)
    compare_error(lambda lib: lib.nn.utils.fuse_conv_bn_eval(lib.nn.Conv2d(3, 3, 1),
                                                             lib.nn.BatchNorm2d(3)))


def test_fuse_linear_bn_eval():
    if not hasattr(ember.nn, "BatchNorm1d"):
        pytest.skip("ember.nn.BatchNorm1d is not built yet")
    results = {}
    x = rng.standard_normal((5, 4)).astype(np.float32)
    t_lin = torch.nn.Linear(4, 3).eval()
    t_bn = torch.nn.BatchNorm1d(3)
    t_bn(torch.tensor(rng.standard_normal((8, 3)).astype(np.float32) * 3))
    t_bn.eval()
    for lib in (torch, ember):
        lin, bn = (t_lin, t_bn) if lib is torch else (ember.nn.Linear(4, 3).eval(),
                                                        ember.nn.BatchNorm1d(3).eval())
        if lib is ember:
            copy_state(t_lin, lin)
            copy_state(t_bn, bn)
        fused = lib.nn.utils.fusion.fuse_linear_bn_eval(lin, bn)
        results[lib] = (fused(lib.tensor(x)), fused.weight, fused.bias)
    assert_same(results[torch], results[ember], rtol=1e-5, atol=1e-6)
    compare_error(lambda lib: lib.nn.utils.fusion.fuse_linear_bn_eval(
        lib.nn.Linear(4, 3).eval(), lib.nn.BatchNorm1d(2).eval()))
