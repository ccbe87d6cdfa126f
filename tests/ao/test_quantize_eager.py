"""Eager-mode post-training quantization against torch: qconfig propagation, observer
placement and calibrated qparams, convert and quantize_dynamic on the same weights/data."""
import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from quant_workflow_models import (FUSE_LIST, assert_close, calibration_batches, copy_weights,
                                   twin_cnns)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _observed(model):
    return {n: m.activation_post_process for n, m in model.named_modules()
            if hasattr(m, "activation_post_process")}


def _calibrated(backend="x86", fuse=True):
    t_model, e_model = twin_cnns()
    t_model.eval()
    e_model.eval()
    if fuse:
        t_model = tq.fuse_modules(t_model, FUSE_LIST)
        e_model = eq.fuse_modules(e_model, FUSE_LIST)
    t_model.qconfig = tq.get_default_qconfig(backend)
    e_model.qconfig = eq.get_default_qconfig(backend)
    t_prep, e_prep = tq.prepare(t_model), eq.prepare(e_model)
    for b in calibration_batches():
        # observers are identities: the prepared model computes the float model
        assert_close(e_prep(ember.tensor(b)), t_prep(torch.tensor(b)), atol=1e-5)
    return t_prep, e_prep


@pytest.mark.parametrize("backend,fuse", [("x86", True), ("qnnpack", False)])
def test_prepare_places_observers_and_calibrates_as_torch(backend, fuse):
    t_prep, e_prep = _calibrated(backend, fuse)
    t_obs, e_obs = _observed(t_prep), _observed(e_prep)
    assert sorted(e_obs) == sorted(t_obs)
    for name in t_obs:
        assert type(e_obs[name]).__name__ == type(t_obs[name]).__name__
        t_scale, t_zp = t_obs[name].calculate_qparams()
        e_scale, e_zp = e_obs[name].calculate_qparams()
        np.testing.assert_allclose(e_scale.numpy(), t_scale.numpy(), rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(e_zp.numpy(), t_zp.numpy())
    # the forward hook that feeds the observer comes before any user hook
    assert next(iter(e_prep.fc2._forward_hooks.values())).__name__ == "_observer_forward_hook"


def test_propagate_qconfig_priorities():
    model = ember.nn.Sequential(ember.nn.Linear(2, 2),
                                ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU()))
    model[1][1].qconfig = eq.default_per_channel_qconfig
    eq.propagate_qconfig_(model, {ember.nn.Linear: eq.default_dynamic_qconfig,
                                  "1.0": eq.float16_dynamic_qconfig, "": eq.default_qconfig})
    assert model.qconfig is eq.default_qconfig
    assert model[0].qconfig is eq.default_dynamic_qconfig          # by type
    assert model[1].qconfig is eq.default_qconfig                  # inherited
    assert model[1][0].qconfig is eq.float16_dynamic_qconfig       # a name beats a type
    assert model[1][1].qconfig is eq.default_per_channel_qconfig   # its own beats both


def test_prepare_warns_without_qconfig_and_skips_none():
    with pytest.warns(UserWarning, match="None of the submodule got qconfig applied"):
        eq.prepare(ember.nn.Sequential(ember.nn.Linear(2, 2)))
    model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Linear(2, 2))
    model.qconfig = eq.default_qconfig
    model[1].qconfig = None
    prepared = eq.prepare(model)
    assert hasattr(prepared[0], "activation_post_process")
    assert not hasattr(prepared[1], "activation_post_process")
    assert not hasattr(model[0], "activation_post_process")  # a copy unless inplace


def test_qconfig_defaults_match_torch():
    for backend in ("x86", "fbgemm", "qnnpack", "onednn"):
        t_qc, e_qc = tq.get_default_qconfig(backend), eq.get_default_qconfig(backend)
        t_act, e_act = t_qc.activation(), e_qc.activation()
        assert type(e_act).__name__ == type(t_act).__name__
        assert (e_act.quant_min, e_act.quant_max) == (t_act.quant_min, t_act.quant_max)
        assert type(e_qc.weight()).__name__ == type(t_qc.weight()).__name__
        for version in (0, 1):
            t_w = tq.get_default_qat_qconfig(backend, version).weight()
            e_w = eq.get_default_qat_qconfig(backend, version).weight()
            assert type(e_w).__name__ == type(t_w).__name__
            assert str(e_w.qscheme).split(".")[-1] == str(t_w.qscheme).split(".")[-1]
    with pytest.raises(AssertionError, match="not supported"):
        eq.get_default_qconfig("arm")
    with pytest.raises(ValueError, match="observer instance"):
        eq.QConfig(activation=eq.MinMaxObserver(), weight=eq.MinMaxObserver)
    assert eq.qconfig_equals(eq.get_default_qconfig(), eq.get_default_qconfig())
    assert not eq.qconfig_equals(eq.get_default_qconfig("x86"),
                                 eq.get_default_qconfig("qnnpack"))


def test_quant_wrapper_and_stubs():
    inner = ember.nn.Linear(3, 2)
    inner.qconfig = eq.default_qconfig
    wrapped = eq.QuantWrapper(inner)
    assert wrapped.quant.qconfig is eq.default_qconfig
    x = ember.randn(2, 3)
    assert_close(wrapped(x), torch.tensor(inner(x).detach().numpy()))


def _one_quantum(qmodel, name):
    return getattr(qmodel, name).scale


def test_convert_matches_torch_within_one_quantum():
    t_prep, e_prep = _calibrated("x86", fuse=True)
    t_q, e_q = tq.convert(t_prep), eq.convert(e_prep)
    assert [type(m).__name__ for m in e_q.children()] == \
        [type(m).__name__ for m in t_q.children()]
    assert not hasattr(e_q.fc2, "activation_post_process") and not hasattr(e_q, "qconfig")
    assert e_q.fc2.scale == pytest.approx(t_q.fc2.scale, rel=1e-6)
    assert e_q.fc2.zero_point == t_q.fc2.zero_point
    for b in calibration_batches(2, seed=7):
        assert_close(e_q(ember.tensor(b)), t_q(torch.tensor(b)),
                     atol=_one_quantum(t_q, "fc2") * 1.01, rtol=0)
    # the prepared model is left as it was (convert copies unless inplace)
    assert hasattr(e_prep.fc2, "activation_post_process")


def test_quantize_one_call_and_qat_convert():
    t_model, e_model = twin_cnns()
    # fused: the quantized ops run on quantized tensors; ReLU/BatchNorm stay between none
    t_model = tq.fuse_modules(t_model.eval(), FUSE_LIST)
    e_model = eq.fuse_modules(e_model.eval(), FUSE_LIST)
    data = [ember.tensor(b) for b in calibration_batches(2)]
    e_model.qconfig = eq.default_qconfig

    def calibrate(model, batches):
        for b in batches:
            model(b)
    e_q = eq.quantize(e_model, calibrate, [data])
    t_model.qconfig = tq.default_qconfig
    t_q = tq.quantize(t_model, calibrate, [[torch.tensor(b.numpy()) for b in data]])
    assert_close(e_q(data[0]), t_q(torch.tensor(data[0].numpy())),
                 atol=t_q.fc2.scale * 1.01, rtol=0)


def test_quantize_dynamic_matches_torch():
    torch.manual_seed(0)

    def build(lib):
        nn = lib.nn
        m = nn.Module()
        m.fc1, m.lstm, m.fc2 = nn.Linear(6, 8), nn.LSTM(8, 5, batch_first=True), nn.Linear(5, 3)
        return m
    t_m = build(torch).eval()
    e_m = copy_weights(t_m, build(ember)).eval()
    x = np.random.default_rng(0).standard_normal((2, 4, 6)).astype(np.float32)

    def run(m, lib, x):
        h, _ = m.lstm(m.fc1(x))
        return m.fc2(h)
    t_q = tq.quantize_dynamic(t_m, {torch.nn.Linear, torch.nn.LSTM}, dtype=torch.qint8)
    e_q = eq.quantize_dynamic(e_m, {ember.nn.Linear, ember.nn.LSTM}, dtype=ember.qint8)
    assert type(e_q.fc1).__name__ == type(t_q.fc1).__name__
    assert type(e_q.lstm).__name__ == type(t_q.lstm).__name__
    assert isinstance(e_m.fc1, ember.nn.Linear)  # not in place
    # the int8 Linear is torch's to float rounding
    assert_close(e_q.fc1(ember.tensor(x)), t_q.fc1(torch.tensor(x)), atol=1e-6)
    # each dynamic layer quantizes its input as torch's does: the chain agrees to float rounding
    assert_close(run(e_q, ember, ember.tensor(x)), run(t_q, torch, torch.tensor(x)),
                 atol=1e-6, rtol=0)
    # a set of names is a qconfig_spec too; unknown dtypes are refused as torch refuses them
    only_fc2 = eq.quantize_dynamic(e_m, {"fc2"})
    assert only_fc2.fc2._get_name() == "DynamicQuantizedLinear"
    assert type(only_fc2.fc1) is ember.nn.Linear
    with pytest.raises(RuntimeError, match="Unknown dtype"):
        eq.quantize_dynamic(e_m, {ember.nn.Linear}, dtype=ember.int16)


def test_float_functional_add_observed_and_converted():
    def build(lib, q):
        nn = lib.nn

        class Skip(nn.Module):
            def __init__(self):
                super().__init__()
                self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
                self.fc = nn.Linear(4, 4)
                self.add = lib.ao.nn.quantized.FloatFunctional()

            def forward(self, x):
                x = self.quant(x)
                return self.dequant(self.add.add(self.fc(x), x))
        return Skip()
    torch.manual_seed(0)
    t_m = build(torch, tq).eval()
    e_m = copy_weights(t_m, build(ember, eq)).eval()
    t_m.qconfig, e_m.qconfig = tq.default_qconfig, eq.default_qconfig
    t_p, e_p = tq.prepare(t_m), eq.prepare(e_m)
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    t_p(torch.tensor(x))
    e_p(ember.tensor(x))
    assert sorted(_observed(e_p)) == sorted(_observed(t_p)) == ["add", "fc", "quant"]
    t_q, e_q = tq.convert(t_p), eq.convert(e_p)
    assert type(e_q.add).__name__ == type(t_q.add).__name__ == "QFunctional"
    assert_close(e_q(ember.tensor(x)), t_q(torch.tensor(x)), atol=e_q.add.scale * 1.01, rtol=0)


def test_allow_list_add_quant_dequant_and_aliases():
    model = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Conv2d(1, 1, 1))
    model.qconfig = eq.default_qconfig
    prepared = eq.prepare(model, allow_list={ember.nn.Linear})
    assert hasattr(prepared[0], "activation_post_process")
    assert not hasattr(prepared[1], "activation_post_process")
    eq.propagate_qconfig_(model)
    wrapped = eq.add_quant_dequant(model)
    assert type(wrapped[0]).__name__ == "QuantWrapper"
    import importlib
    nni = importlib.import_module("ember.ao.nn.intrinsic")
    assert ember.nn.intrinsic.ConvReLU2d is nni.ConvReLU2d
    assert ember.nn.qat.Linear is ember.ao.nn.qat.Linear
    assert ember.nn.intrinsic.qat.ConvBn2d is nni.qat.ConvBn2d
    with pytest.warns(UserWarning, match="QConfigDynamic is going to be deprecated"):
        eq.QConfigDynamic(weight=eq.default_weight_observer)
