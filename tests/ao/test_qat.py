"""Quantization-aware training against torch: prepare_qat's modules, forward, backward and
SGD steps on the same weights and data, for both QAT qconfig versions."""
import numpy as np
import pytest
import torch
import torch.ao.quantization as tq
import torch.ao.nn.intrinsic.qat as tnniqat

import ember
import ember.ao.quantization as eq
import ember.ao.nn.intrinsic.qat as nniqat
import ember.ao.nn.qat as nnqat
from quant_workflow_models import FUSE_LIST, assert_close, calibration_batches, twin_cnns

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _prepared(version, backend="x86"):
    t_model, e_model = twin_cnns()
    t_model = tq.fuse_modules_qat(t_model.train(), FUSE_LIST)
    e_model = eq.fuse_modules_qat(e_model.train(), FUSE_LIST)
    t_model.qconfig = tq.get_default_qat_qconfig(backend, version)
    e_model.qconfig = eq.get_default_qat_qconfig(backend, version)
    return tq.prepare_qat(t_model), eq.prepare_qat(e_model)


@pytest.mark.parametrize("version,backend", [(0, "x86"), (1, "x86"), (1, "qnnpack")])
def test_qat_training_steps_match_torch(version, backend):
    t_model, e_model = _prepared(version, backend)
    assert type(e_model.conv1) is nniqat.ConvBnReLU2d
    assert type(e_model.fc2) is nnqat.Linear
    assert [(n, type(m).__name__) for n, m in e_model.named_modules()] == \
        [(n, type(m).__name__) for n, m in t_model.named_modules()]
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.1)
    e_opt = ember.optim.SGD(e_model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for step in range(3):
        x = calibration_batches(1, seed=step)[0]
        y = rng.integers(0, 5, 8)
        t_loss = torch.nn.functional.cross_entropy(t_model(torch.tensor(x)), torch.tensor(y))
        e_loss = ember.nn.functional.cross_entropy(e_model(ember.tensor(x)), ember.tensor(y))
        assert abs(float(t_loss) - float(e_loss)) < 1e-5
        t_opt.zero_grad()
        e_opt.zero_grad()
        t_loss.backward()
        e_loss.backward()
        for (name, tp), (_, ep) in zip(t_model.named_parameters(), e_model.named_parameters()):
            assert_close(ep.grad, tp.grad, atol=1e-4, rtol=1e-3)
        t_opt.step()
        e_opt.step()
    t_sd, e_sd = t_model.state_dict(), e_model.state_dict()
    assert list(e_sd) == list(t_sd)
    for key in ("conv1.weight_fake_quant.scale", "fc1.activation_post_process.zero_point",
                "conv1.bn.running_var", "quant.activation_post_process.scale"):
        np.testing.assert_allclose(e_sd[key].numpy().astype(np.float64),
                                   t_sd[key].numpy().astype(np.float64), rtol=1e-5, atol=1e-6)


def test_freeze_bn_and_observer_switches():
    t_model, e_model = _prepared(1)
    for model, lib_qat, lib_q in ((t_model, tnniqat, tq), (e_model, nniqat, eq)):
        model.apply(lib_qat.freeze_bn_stats)
        model.apply(lib_q.disable_observer)
    assert not e_model.conv1.bn.training and e_model.conv1.freeze_bn
    e_model.train()
    assert not e_model.conv1.bn.training  # frozen BatchNorm stays in eval mode
    x = calibration_batches(1)[0]
    assert_close(e_model(ember.tensor(x)), t_model(torch.tensor(x)), atol=1e-5)
    running = e_model.conv1.bn.running_mean.clone()
    e_model(ember.tensor(x))
    assert_close(e_model.conv1.bn.running_mean, torch.tensor(running.numpy()))


@pytest.mark.parametrize("per_channel,lo,hi", [(False, -3.0, 5.0), (False, 0.0, 1e-3),
                                               (True, -1.0, 1.0), (True, -1e-4, 2e-4)])
def test_fused_fake_quant_matches_torch_kernel(per_channel, lo, hi):
    rng = np.random.default_rng(3)
    x = (rng.uniform(lo, hi, (4, 6))).astype(np.float32)
    kw = (dict(observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
               quant_max=127, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
          if per_channel else {})
    ekw = (dict(observer=eq.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                quant_max=127, dtype=eq.qint8, qscheme=eq.per_channel_symmetric)
           if per_channel else {})
    t_fq = tq.FusedMovingAvgObsFakeQuantize(**kw)
    e_fq = eq.FusedMovingAvgObsFakeQuantize(**ekw)
    for i in range(2):
        xi = x * (1 + i)
        assert_close(e_fq(ember.tensor(xi)), t_fq(torch.tensor(xi)), atol=1e-7)
    assert_close(e_fq.scale, t_fq.scale, rtol=1e-6)
    np.testing.assert_array_equal(e_fq.zero_point.numpy(), t_fq.zero_point.numpy())


def test_qat_module_errors():
    with pytest.raises(AssertionError, match="qconfig must be provided"):
        nnqat.Linear(2, 2)
    lin = ember.nn.Linear(2, 2)
    lin.qconfig = None
    with pytest.raises(AssertionError, match="valid qconfig"):
        nnqat.Linear.from_float(lin)
    with pytest.raises(AssertionError, match="only works for Linear"):
        nnqat.Linear.from_float(ember.nn.Conv2d(1, 1, 1))
    with pytest.raises(AssertionError, match="training mode"):
        eq.prepare_qat(ember.nn.Linear(2, 2).eval())


def test_to_float_folds_bn():
    _, e_model = _prepared(0)
    e_model.eval()
    x = ember.tensor(calibration_batches(1)[0])
    float_conv = e_model.conv1.to_float()
    assert type(float_conv).__name__ == "ConvReLU2d"
    e_model.apply(eq.disable_fake_quant)
    assert_close(float_conv(x), torch.tensor(e_model.conv1(x).detach().numpy()), atol=1e-5)


def test_qat_convert_matches_torch():
    t_model, e_model = _prepared(1)
    x = calibration_batches(1)[0]
    t_model(torch.tensor(x))
    e_model(ember.tensor(x))
    t_q, e_q = tq.convert(t_model.eval()), eq.convert(e_model.eval())
    assert e_q.conv1._get_name() == t_q.conv1._get_name() == "QuantizedConvReLU2d"
    assert e_q.fc1._get_name() == t_q.fc1._get_name() == "QuantizedLinearReLU"
    x = calibration_batches(1, seed=9)[0]
    assert_close(e_q(ember.tensor(x)), t_q(torch.tensor(x)), atol=t_q.fc2.scale * 1.01, rtol=0)


def test_linear_bn_qat_matches_torch():
    def build(lib, q):
        nn = lib.nn
        return nn.Sequential(q.QuantStub(), nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Linear(6, 3),
                             q.DeQuantStub())
    torch.manual_seed(0)
    t_model, e_model = build(torch, tq), build(ember, eq)
    e_model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    t_model = tq.fuse_modules_qat(t_model, [["1", "2"]])
    e_model = eq.fuse_modules_qat(e_model, [["1", "2"]])
    t_model.qconfig, e_model.qconfig = tq.get_default_qat_qconfig(), eq.get_default_qat_qconfig()
    t_prep, e_prep = tq.prepare_qat(t_model), eq.prepare_qat(e_model)
    assert type(e_prep[1]) is nniqat.LinearBn1d
    x = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
    for i in range(2):
        t_out, e_out = t_prep(torch.tensor(x * (i + 1))), e_prep(ember.tensor(x * (i + 1)))
        assert_close(e_out, t_out, atol=1e-5)
    t_out.sum().backward()
    e_out.sum().backward()
    assert_close(e_prep[1].weight.grad, t_prep[1].weight.grad, atol=1e-4, rtol=1e-3)
    t_q, e_q = tq.convert(t_prep.eval()), eq.convert(e_prep.eval())
    assert e_q[1]._get_name() == "QuantizedLinear"
    assert_close(e_q(ember.tensor(x)), t_q(torch.tensor(x)), atol=t_q[3].scale * 1.01, rtol=0)
