"""Fake quantization (functions and QAT modules): forward and straight-through gradients
equal to torch's."""
import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq

pytestmark = pytest.mark.filterwarnings("ignore:Please use quant_min")


def _data(shape, seed=0, spread=3.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * spread).astype(np.float32)
    # exact ties (k + 0.5) * scale exercise round-half-to-even
    x.flat[:4] = np.array([0.25, 0.75, -0.25, 1.25], np.float32)
    return x


def _grad_pair(x_np):
    return (ember.tensor(x_np, requires_grad=True),
            torch.tensor(x_np, requires_grad=True))


def _check_forward_and_grad(e_fn, t_fn, x_np, seed=1):
    ex, tx = _grad_pair(x_np)
    ey, ty = e_fn(ex), t_fn(tx)
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    upstream = np.random.default_rng(seed).standard_normal(x_np.shape).astype(np.float32)
    ey.backward(ember.tensor(upstream))
    ty.backward(torch.from_numpy(upstream))
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
    return ex.grad.numpy()


@pytest.mark.parametrize("scale,zp,qmin,qmax", [(0.5, 0, 0, 255), (0.1, 3, 0, 15),
                                               (0.5, 0, -128, 127), (0.037, -5, -10, 10),
                                               (0.02, 128, 0, 255)])
def test_per_tensor_function_matches_torch(scale, zp, qmin, qmax):
    x = _data((6, 7))
    grad = _check_forward_and_grad(
        lambda t: ember.fake_quantize_per_tensor_affine(t, scale, zp, qmin, qmax),
        lambda t: torch.fake_quantize_per_tensor_affine(t, scale, zp, qmin, qmax), x)
    assert (grad == 0).any() or qmax - qmin > 200  # clamping cut somewhere in small ranges


def test_per_tensor_function_tensor_qparams_and_float64():
    x = _data((4, 5))
    s, z = ember.tensor([0.1]), ember.tensor([2], dtype=ember.int32)
    ts, tz = torch.tensor([0.1]), torch.tensor([2], dtype=torch.int32)
    _check_forward_and_grad(lambda t: eq.fake_quantize_per_tensor_affine(t, s, z, 0, 31),
                            lambda t: torch.fake_quantize_per_tensor_affine(t, ts, tz, 0, 31),
                            x)
    _check_forward_and_grad(
        lambda t: eq.fake_quantize_per_tensor_affine(t, 0.1, 2, 0, 31),
        lambda t: torch.fake_quantize_per_tensor_affine(t, 0.1, 2, 0, 31),
        x.astype(np.float64))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_per_channel_function_matches_torch(axis):
    x = _data((3, 4, 5))
    n = x.shape[axis]
    rng = np.random.default_rng(axis + 5)
    scale = (rng.random(n) * 0.3 + 0.05).astype(np.float32)
    zp = rng.integers(-3, 4, n).astype(np.int32)
    grad = _check_forward_and_grad(
        lambda t: ember.fake_quantize_per_channel_affine(
            t, ember.tensor(scale), ember.tensor(zp), axis, -8, 7),
        lambda t: torch.fake_quantize_per_channel_affine(
            t, torch.from_numpy(scale), torch.from_numpy(zp), axis, -8, 7), x)
    assert (grad == 0).any() and (grad != 0).any()


def test_per_channel_function_float_zero_point_matches_torch():
    x = _data((4, 6))
    scale = np.array([0.1, 0.2, 0.05, 0.3], np.float32)
    zp = np.array([1.5, -2.25, 0.0, 3.0], np.float32)
    _check_forward_and_grad(
        lambda t: ember.fake_quantize_per_channel_affine(
            t, ember.tensor(scale), ember.tensor(zp), 0, 0, 15),
        lambda t: torch.fake_quantize_per_channel_affine(
            t, torch.from_numpy(scale), torch.from_numpy(zp), 0, 0, 15), x)


def test_function_errors_as_torch():
    x = ember.randn(2, 3)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or equal"):
        ember.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 2)
    with pytest.raises(RuntimeError, match="`zero_point` must be between"):
        ember.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255)
    with pytest.raises(NotImplementedError, match="floating-point"):
        ember.fake_quantize_per_tensor_affine(x.to(ember.int32), 0.1, 0, 0, 255)
    ones, zeros = ember.ones(3), ember.zeros(3, dtype=ember.int32)
    with pytest.raises(RuntimeError, match="Zero-point must be Int32, Float or Half, found Long"):
        ember.fake_quantize_per_channel_affine(x, ones, zeros.to(ember.int64), 1, 0, 255)
    with pytest.raises(RuntimeError, match="not consistent with input tensor"):
        ember.fake_quantize_per_channel_affine(x, ember.ones(2), zeros[:2], 1, 0, 255)
    with pytest.raises(RuntimeError, match="need to have the same dimensions"):
        ember.fake_quantize_per_channel_affine(x, ones, zeros[:2], 1, 0, 255)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.fake_quantize_per_channel_affine(x, ones, zeros, 2, 0, 255)
    with pytest.raises(RuntimeError, match="`axis` must be between 0"):
        ember.fake_quantize_per_channel_affine(x, ones, zeros, -1, 0, 255)
    with pytest.raises(RuntimeError, match="`zero_point` must be between"):
        ember.fake_quantize_per_channel_affine(x, ones, zeros + 300, 1, 0, 255)
    with pytest.raises(RuntimeError, match="scale should be a 1-D tensor"):
        ember.fake_quantize_per_channel_affine(x, ones.reshape(3, 1), zeros, 1, 0, 255)


FAKE_QUANTS = ["default_fake_quant", "default_weight_fake_quant",
               "default_per_channel_weight_fake_quant", "default_embedding_fake_quant",
               "default_dynamic_fake_quant", "default_histogram_fake_quant",
               "default_fixed_qparams_range_neg1to1_fake_quant",
               "default_fixed_qparams_range_0to1_fake_quant"]


@pytest.mark.parametrize("name", FAKE_QUANTS)
def test_fake_quantize_modules_match_torch_over_batches(name):
    e_fq, t_fq = getattr(eq, name)(), getattr(tq, name)()
    assert (e_fq.quant_min, e_fq.quant_max, e_fq.ch_axis, e_fq.is_per_channel) == \
        (t_fq.quant_min, t_fq.quant_max, t_fq.ch_axis, t_fq.is_per_channel)
    for i in range(4):
        x = _data((4, 6), seed=i, spread=1 + i)
        _check_forward_and_grad(e_fq, t_fq, x, seed=10 + i)
        np.testing.assert_array_equal(e_fq.scale.numpy(), t_fq.scale.numpy())
        np.testing.assert_array_equal(e_fq.zero_point.numpy(), t_fq.zero_point.numpy())
        assert str(e_fq.zero_point.dtype).split(".")[1] == \
            str(t_fq.zero_point.dtype).split(".")[1]


def test_custom_fake_quantize_and_switches_match_torch():
    kwargs = dict(quant_min=0, quant_max=15, averaging_constant=0.5)
    e_fq = eq.FakeQuantize(observer=eq.MovingAverageMinMaxObserver, **kwargs)
    t_fq = tq.FakeQuantize(observer=tq.MovingAverageMinMaxObserver, **kwargs)
    e_model, t_model = ember.nn.Sequential(e_fq), torch.nn.Sequential(t_fq)
    steps = [None, "disable_observer", "disable_fake_quant", "enable_fake_quant",
             "enable_observer"]
    for i, step in enumerate(steps):
        if step:
            e_model.apply(getattr(eq, step))
            t_model.apply(getattr(tq, step))
        x = _data((3, 5), seed=20 + i, spread=1 + i)
        _check_forward_and_grad(e_model, t_model, x, seed=i)
        np.testing.assert_array_equal(e_fq.scale.numpy(), t_fq.scale.numpy())
        np.testing.assert_array_equal(e_fq.zero_point.numpy(), t_fq.zero_point.numpy())
    assert e_fq.observer_enabled.tolist() == [1] and e_fq.fake_quant_enabled.tolist() == [1]


def test_fake_quantize_state_dict_keys_and_load():
    e_fq = eq.default_per_channel_weight_fake_quant()
    t_fq = tq.default_per_channel_weight_fake_quant()
    x = _data((3, 4))
    e_fq(ember.tensor(x))
    t_fq(torch.from_numpy(x))
    assert list(e_fq.state_dict()) == list(t_fq.state_dict())
    fresh = eq.default_per_channel_weight_fake_quant()
    fresh.load_state_dict(e_fq.state_dict())
    fresh.disable_observer()
    np.testing.assert_array_equal(fresh(ember.tensor(x)).numpy(),
                                  t_fq(torch.from_numpy(x)).detach().numpy())


def test_fake_quantize_bad_ranges():
    with pytest.raises(AssertionError, match="quant_min must be less than or equal"):
        eq.FakeQuantize(quant_min=10, quant_max=0)
    with pytest.raises(AssertionError, match="quant_max out of bound"):
        eq.FakeQuantize(quant_min=0, quant_max=300)
    with pytest.raises(AssertionError, match="quant_min out of bound"):
        eq.FakeQuantize(quant_min=-200, quant_max=100, dtype=eq.qint8)


def test_qat_step_trains_through_fake_quant():
    # a linear layer whose weight and input pass through fake quantization still learns
    ember.manual_seed(0)
    lin = ember.nn.Linear(4, 2)
    w_fq, a_fq = eq.default_weight_fake_quant(), eq.default_fake_quant()
    opt = ember.optim.SGD(lin.parameters(), lr=0.1)
    x, target = ember.randn(16, 4), ember.randn(16, 2)
    losses = []
    for _ in range(20):
        out = ember.nn.functional.linear(a_fq(x), w_fq(lin.weight), lin.bias)
        loss = ((out - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def test_top_level_names_are_lazy():
    import subprocess
    import sys
    code = ("import sys, ember; assert 'ember.ao' not in sys.modules; "
            "f = ember.fake_quantize_per_tensor_affine; assert 'ember.ao' in sys.modules; "
            "assert f is ember.ao.quantization.fake_quantize_per_tensor_affine; "
            "assert 'fake_quantize_per_channel_affine' in dir(ember)")
    subprocess.run([sys.executable, "-c", code], check=True)
