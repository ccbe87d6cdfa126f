"""FX graph mode quantization against torch's: the prepared graph (fusion, observer nodes,
shared observers), calibrated qparams, QAT preparation, and the converted model's output."""
import numpy as np
import pytest
import torch
import torch.ao.quantization as tq
from torch.ao.quantization import quantize_fx as tfx

import ember
import ember.ao.quantization as eq
from ember.ao.quantization import quantize_fx as efx
from quant_workflow_models import assert_close

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _build(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3)
            self.bn = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(16, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            x = self.pool(self.relu(self.bn(self.conv(x))))
            x = lib.flatten(x, 1)
            y = F.relu(self.fc(x))
            y = y + y
            return self.fc2(y).sigmoid()
    return Net()


def _twins(train=False):
    torch.manual_seed(0)
    t_model = _build(torch).train(train)
    with torch.no_grad():
        t_model.bn.running_var.uniform_(0.5, 2.0)
        t_model.bn.running_mean.uniform_(-0.3, 0.3)
    e_model = _build(ember).train(train)
    e_model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    return t_model, e_model


def _data(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 1, 6, 6)).astype(np.float32) * (1 + i) for i in range(n)]


def _graph_ops(gm):
    return [(n.op, n.name) for n in gm.graph.nodes]


def _prepared():
    t_model, e_model = _twins()
    x = _data(1)[0]
    t_prep = tfx.prepare_fx(t_model, tq.get_default_qconfig_mapping(), (torch.tensor(x),))
    e_prep = efx.prepare_fx(e_model, eq.get_default_qconfig_mapping(), (ember.tensor(x),))
    for b in _data(2):
        assert_close(e_prep(ember.tensor(b)), t_prep(torch.tensor(b)), atol=1e-5)
    return t_prep, e_prep


def test_prepare_fx_graph_and_qparams_match_torch():
    t_prep, e_prep = _prepared()
    assert _graph_ops(e_prep) == _graph_ops(t_prep)
    assert type(e_prep.conv).__name__ == "ConvReLU2d" and type(e_prep.fc).__name__ == "LinearReLU"
    for name, t_obs in t_prep.named_modules(remove_duplicate=False):
        if not name.startswith("activation_post_process"):
            continue
        e_obs = e_prep.get_submodule(name)
        assert type(e_obs).__name__ == type(t_obs).__name__
        t_scale, t_zp = t_obs.calculate_qparams()
        e_scale, e_zp = e_obs.calculate_qparams()
        np.testing.assert_allclose(e_scale.numpy(), t_scale.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(e_zp.numpy(), t_zp.numpy())
    # max pooling and flatten keep their input's qparams: the very same observer
    assert e_prep.activation_post_process_2 is e_prep.activation_post_process_1
    assert e_prep.activation_post_process_3 is e_prep.activation_post_process_1


def test_qconfig_mapping_by_name_and_type():
    _, e_model = _twins()
    mapping = (eq.QConfigMapping().set_global(eq.get_default_qconfig())
               .set_module_name("fc2", None).set_object_type(ember.nn.Linear, eq.default_qconfig))
    prep = efx.prepare_fx(e_model, mapping, (ember.tensor(_data(1)[0]),))
    assert prep._node_name_to_qconfig["fc2"] is None
    assert prep._node_name_to_qconfig["fc"] is eq.default_qconfig  # fused: its Linear's type
    assert prep._node_name_to_qconfig["pool"] is mapping.global_qconfig
    legacy = efx.prepare_fx(_twins()[1], {"": eq.get_default_qconfig()},
                            (ember.tensor(_data(1)[0]),))
    assert sum(n.target.startswith("activation_post_process")
               for n in legacy.graph.nodes if n.op == "call_module") == 8


def test_prepare_qat_fx_matches_torch():
    t_model, e_model = _twins(train=True)
    x = _data(1)[0]
    t_prep = tfx.prepare_qat_fx(t_model, tq.get_default_qat_qconfig_mapping(),
                                (torch.tensor(x),))
    e_prep = efx.prepare_qat_fx(e_model, eq.get_default_qat_qconfig_mapping(),
                                (ember.tensor(x),))
    assert _graph_ops(e_prep) == _graph_ops(t_prep)
    assert type(e_prep.conv).__name__ == type(t_prep.conv).__name__ == "ConvBnReLU2d"
    t_out = t_prep(torch.tensor(x))
    e_out = e_prep(ember.tensor(x))
    assert_close(e_out, t_out, atol=1e-5)
    t_out.sum().backward()
    e_out.sum().backward()
    assert_close(e_prep.conv.weight.grad, t_prep.conv.weight.grad, atol=1e-4, rtol=1e-3)


def test_fuse_fx_and_errors():
    _, e_model = _twins()
    fused = efx.fuse_fx(e_model)
    assert type(fused.conv).__name__ == "ConvReLU2d" and not hasattr(fused, "bn")
    x = ember.tensor(_data(1)[0])
    assert_close(fused(x), torch.tensor(e_model(x).detach().numpy()), atol=1e-5)
    with pytest.raises(ValueError, match="example_inputs"):
        efx.prepare_fx(e_model, eq.get_default_qconfig_mapping(), None)
    with pytest.raises(AssertionError, match="eval mode"):
        efx.prepare_fx(e_model.train(), eq.get_default_qconfig_mapping(), (x,))
    with pytest.raises(AssertionError, match="prepare_fx"):
        efx.convert_fx(fused)


def test_convert_fx_matches_torch():
    t_prep, e_prep = _prepared()
    t_q, e_q = tfx.convert_fx(t_prep), efx.convert_fx(e_prep)
    assert e_q.conv._get_name() == t_q.conv._get_name() == "QuantizedConvReLU2d"
    assert e_q.fc._get_name() == t_q.fc._get_name() == "QuantizedLinearReLU"
    assert not any(n.target.startswith("activation_post_process") for n in e_q.graph.nodes
                   if n.op == "call_module")
    for b in _data(2, seed=5):
        # the sigmoid's output grid is 1/256
        assert_close(e_q(ember.tensor(b)), t_q(torch.tensor(b)), atol=1 / 256 + 1e-6, rtol=0)


def test_qat_fx_convert_and_dynamic_fx():
    t_model, e_model = _twins(train=True)
    x = _data(1)[0]
    t_prep = tfx.prepare_qat_fx(t_model, tq.get_default_qat_qconfig_mapping(),
                                (torch.tensor(x),))
    e_prep = efx.prepare_qat_fx(e_model, eq.get_default_qat_qconfig_mapping(),
                                (ember.tensor(x),))
    t_prep(torch.tensor(x))
    e_prep(ember.tensor(x))
    t_q, e_q = tfx.convert_fx(t_prep.eval()), efx.convert_fx(e_prep.eval())
    assert e_q.conv._get_name() == t_q.conv._get_name()
    x2 = _data(1, seed=3)[0]
    assert_close(e_q(ember.tensor(x2)), t_q(torch.tensor(x2)), atol=1 / 256 + 1e-6, rtol=0)
    # a dynamic qconfig: weighted modules become dynamically quantized, no observer nodes
    _, e_model = _twins()
    mapping = eq.QConfigMapping().set_object_type(ember.nn.Linear, eq.default_dynamic_qconfig)
    prep = efx.prepare_fx(e_model, mapping, (ember.tensor(x),))
    assert not any(n.op == "call_module" and n.target.startswith("activation_post_process")
                   for n in prep.graph.nodes)
    dyn = efx.convert_fx(prep)
    assert dyn.fc2._get_name() == "DynamicQuantizedLinear"
    assert_close(dyn(ember.tensor(x)), torch.tensor(e_model(ember.tensor(x)).detach().numpy()),
                 atol=0.05)


def test_float_ops_cat_mul_and_fixed_qparams_convert_as_torch():
    def build(lib):
        nn = lib.nn

        class Mixed(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc, self.fc2, self.ln = nn.Linear(4, 4), nn.Linear(4, 4), nn.LayerNorm(4)

            def forward(self, x):
                y = lib.relu(self.fc(x))           # not fused: a shared-qparams op
                z = y.mean(dim=1, keepdim=True)    # a float op: dequantized around it
                w = lib.cat([self.fc2(y) * z, y], 1)
                return w.reshape(-1, 2, 4), self.ln(x).tanh()
        return Mixed()
    torch.manual_seed(0)
    t_model, e_model = build(torch).eval(), build(ember).eval()
    e_model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    t_prep = tfx.prepare_fx(t_model, tq.get_default_qconfig_mapping(), (torch.tensor(x),))
    e_prep = efx.prepare_fx(e_model, eq.get_default_qconfig_mapping(), (ember.tensor(x),))
    t_prep(torch.tensor(x))
    e_prep(ember.tensor(x))
    t_out = tfx.convert_fx(t_prep)(torch.tensor(x))
    e_out = efx.convert_fx(e_prep)(ember.tensor(x))
    for e, t in zip(e_out, t_out):
        assert_close(e, t, atol=0.01, rtol=0)
