"""fuse_modules / fuse_modules_qat and the fused modules against torch on the same weights."""
import numpy as np
import pytest
import torch
import torch.ao.quantization as tq
import torch.ao.nn.intrinsic as tnni

import ember
import ember.ao.quantization as eq
import ember.ao.nn.intrinsic as nni
from quant_workflow_models import FUSE_LIST, assert_close, calibration_batches, twin_cnns


def test_eval_fusion_matches_torch_structure_and_output():
    t_model, e_model = twin_cnns()
    t_model.eval()
    e_model.eval()
    t_fused = tq.fuse_modules(t_model, FUSE_LIST)
    e_fused = eq.fuse_modules(e_model, FUSE_LIST)
    assert ([type(m).__name__ for m in e_fused.children()]
            == [type(m).__name__ for m in t_fused.children()])
    assert isinstance(e_fused.conv1, nni.ConvReLU2d) and isinstance(e_fused.bn1, ember.nn.Identity)
    # BatchNorm folded into the convolution as torch folds it: same fused weights
    assert_close(e_fused.conv1[0].weight, t_fused.conv1[0].weight, atol=1e-6)
    assert_close(e_fused.conv1[0].bias, t_fused.conv1[0].bias, atol=1e-6)
    for b in calibration_batches(2):
        assert_close(e_fused(ember.tensor(b)), t_fused(torch.tensor(b)), atol=1e-5)
        assert_close(e_fused(ember.tensor(b)), e_model(ember.tensor(b)), atol=1e-5)
    # not in place by default
    assert isinstance(e_model.bn1, ember.nn.BatchNorm2d)


def test_qat_fusion_keeps_batchnorm():
    t_model, e_model = twin_cnns()
    t_fused = tq.fuse_modules_qat(t_model, FUSE_LIST)
    e_fused = eq.fuse_modules_qat(e_model, FUSE_LIST, inplace=True)
    assert e_fused is e_model
    assert type(e_fused.conv1) is nni.ConvBnReLU2d and type(t_fused.conv1) is tnni.ConvBnReLU2d
    assert isinstance(e_fused.conv1[1], ember.nn.BatchNorm2d)
    assert e_fused.bn1.training  # the Identities take the first module's mode


@pytest.mark.parametrize("names,kind", [
    (["conv", "bn"], ember.nn.Conv2d), (["lin", "bn1d"], ember.nn.Linear),
    (["bn", "relu"], nni.BNReLU2d), (["lin", "relu"], nni.LinearReLU)])
def test_pairs(names, kind):
    torch.manual_seed(0)

    def build(lib):
        nn = lib.nn
        m = nn.Module()
        m.conv, m.bn, m.relu = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.ReLU()
        m.lin, m.bn1d = nn.Linear(3, 3), nn.BatchNorm1d(3)
        return m
    t_m = build(torch).eval()
    with torch.no_grad():
        t_m.bn.running_var.uniform_(0.5, 2)
        t_m.bn1d.running_mean.uniform_(-1, 1)
    e_m = build(ember).eval()
    e_m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_m.state_dict().items()})
    t_f = tq.fuse_modules(t_m, names)
    e_f = eq.fuse_modules(e_m, names)
    e_mod, t_mod = getattr(e_f, names[0]), getattr(t_f, names[0])
    assert type(e_mod) is kind and type(e_mod).__name__ == type(t_mod).__name__
    x = np.random.default_rng(0).standard_normal((4, 2, 3, 3) if names[0] == "conv"
                                                  else (4, 3, 3, 3) if names[0] == "bn"
                                                  else (4, 3)).astype(np.float32)
    assert_close(e_mod(ember.tensor(x)), t_mod(torch.tensor(x)), atol=1e-5)


def test_hooks_move_to_fused_module():
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
    seen = []
    m[0].register_forward_pre_hook(lambda mod, args: seen.append("pre"))
    m[1].register_forward_hook(lambda mod, args, out: seen.append("post"))
    fused = eq.fuse_modules(m, ["0", "1"])
    fused(ember.randn(1, 2))
    assert seen == ["pre", "post"]


def test_errors_match_torch():
    m = ember.nn.Sequential(ember.nn.ReLU(), ember.nn.Linear(2, 2))
    with pytest.raises(AssertionError, match="did not find fuser method"):
        eq.fuse_modules(m, ["0", "1"])
    m = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 1), ember.nn.BatchNorm2d(2))
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        eq.fuse_modules(m, ["0", "1"])
    m[1].eval()
    with pytest.raises(AssertionError, match="same mode"):
        eq.fuse_modules_qat(m, ["0", "1"])
    with pytest.raises(AssertionError, match="Incorrect types"):
        nni.ConvReLU2d(ember.nn.Linear(1, 1), ember.nn.ReLU())
