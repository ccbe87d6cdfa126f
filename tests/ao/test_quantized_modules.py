"""The quantized modules against torch's: from_float from observed float modules, outputs
(bit-exact for Linear/Conv, within torch's own rounding elsewhere), dynamic LSTM/GRU, and
state_dicts in torch's format, loaded both ways through save/load."""
import io
from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnq
import torch.ao.nn.quantized.dynamic as tnqd

import ember
import ember.ao.nn.quantized as enq
import ember.ao.nn.quantized.dynamic as enqd

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

QConfig = namedtuple("QConfig", "activation weight")  # the fields from_float reads


def _qconfig(lib, per_channel=False, dynamic=False):
    obs = lib.ao.quantization.observer
    if per_channel:
        weight = obs.PerChannelMinMaxObserver.with_args(dtype=lib.qint8,
                                                        qscheme=lib.per_channel_symmetric)
    else:
        weight = obs.MinMaxObserver.with_args(dtype=lib.qint8, qscheme=lib.per_tensor_symmetric)
    act = (obs.PlaceholderObserver.with_args(dtype=lib.quint8) if dynamic
           else obs.MinMaxObserver.with_args(reduce_range=True))
    return QConfig(act, weight)


def _copy_params(dst, src):
    dst.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                         for k, v in src.state_dict().items()})


def _ints(q):
    return q.int_repr().numpy().astype(np.int64)


def _observed(lib, mod, x, per_channel):
    """``mod`` as prepare leaves it: qconfig and an output observer that has seen ``mod(x)``.
    The output's range comes from torch's forward for both, so the qparams are the same."""
    mod.qconfig = _qconfig(lib, per_channel)
    mod.activation_post_process = lib.ao.quantization.observer.MinMaxObserver(reduce_range=True)
    return mod


def _input(lib, x):
    observer = lib.ao.quantization.observer.MinMaxObserver()
    observer(lib.from_numpy(x))
    scale, zero_point = observer.calculate_qparams()
    return lib.quantize_per_tensor(lib.from_numpy(x), float(scale), int(zero_point), lib.quint8)


@pytest.mark.parametrize("per_channel", [False, True])
def test_linear_from_float_matches_torch(per_channel):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 10)).astype(np.float32)
    tm = torch.nn.Linear(10, 5)
    em = ember.nn.Linear(10, 5)
    _copy_params(em, tm)
    y_float = tm(torch.from_numpy(x)).detach().numpy()
    results = []
    for lib, mod, nq in ((torch, tm, tnq), (ember, em, enq)):
        _observed(lib, mod, x, per_channel).activation_post_process(lib.from_numpy(y_float))
        q = nq.Linear.from_float(mod)
        y = q(_input(lib, x))
        results.append((q, y))
    (tq, ty), (eqm, ey) = results
    np.testing.assert_array_equal(_ints(eqm.weight()), _ints(tq.weight()))
    np.testing.assert_array_equal(eqm.bias().numpy(), tq.bias().detach().numpy())
    assert (eqm.scale, eqm.zero_point) == (tq.scale, tq.zero_point)
    np.testing.assert_array_equal(_ints(ey), _ints(ty))
    assert repr(eqm) == repr(tq).replace("torch.", "ember.")
    assert list(eqm.state_dict()) == list(tq.state_dict())


@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_linear_matches_torch(per_channel):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 12)).astype(np.float32)
    tm = torch.nn.Linear(12, 7)
    em = ember.nn.Linear(12, 7)
    _copy_params(em, tm)
    tm.qconfig = _qconfig(torch, per_channel, dynamic=True)
    em.qconfig = _qconfig(ember, per_channel, dynamic=True)
    tq, eqm = tnqd.Linear.from_float(tm), enqd.Linear.from_float(em)
    t, e = tq(torch.from_numpy(x)).numpy(), eqm(ember.from_numpy(x)).numpy()
    np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
    # and within torch's own quantization error of the float layer
    assert np.abs(e - tm(torch.from_numpy(x)).detach().numpy()).max() < 0.05
    assert repr(eqm) == repr(tq).replace("torch.", "ember.")


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv2d_from_float_matches_torch(per_channel):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    tm = torch.nn.Conv2d(4, 6, 3, stride=1, padding=1, groups=2)
    em = ember.nn.Conv2d(4, 6, 3, stride=1, padding=1, groups=2)
    _copy_params(em, tm)
    y_float = tm(torch.from_numpy(x)).detach().numpy()
    outs = []
    for lib, mod, nq in ((torch, tm, tnq), (ember, em, enq)):
        _observed(lib, mod, x, per_channel).activation_post_process(lib.from_numpy(y_float))
        q = nq.Conv2d.from_float(mod)
        outs.append((q, _ints(q(_input(lib, x)))))
    np.testing.assert_array_equal(outs[1][1], outs[0][1])
    assert repr(outs[1][0]) == repr(outs[0][0])
    assert list(outs[1][0].state_dict()) == list(outs[0][0].state_dict())


@pytest.mark.filterwarnings("ignore:The current implementation")
@pytest.mark.parametrize("dims, padding_mode, per_channel", [
    (1, "zeros", False), (2, "zeros", True), (2, "reflect", False), (3, "zeros", False)])
def test_dynamic_conv_matches_torch(dims, padding_mode, per_channel):
    # FBGEMM's dynamic convolution requantizes to the input's qparams, then dequantizes: the
    # float outputs are the same numbers as torch's
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4) + (6,) * dims).astype(np.float32) * 1.5
    name = f"Conv{dims}d"
    tm = getattr(torch.nn, name)(4, 6, 3, stride=2, padding=1, groups=2, padding_mode=padding_mode)
    em = getattr(ember.nn, name)(4, 6, 3, stride=2, padding=1, groups=2, padding_mode=padding_mode)
    _copy_params(em, tm)
    tm.qconfig = _qconfig(torch, per_channel, dynamic=True)
    em.qconfig = _qconfig(ember, per_channel, dynamic=True)
    tq, eqm = getattr(tnqd, name).from_float(tm), getattr(enqd, name).from_float(em)
    for reduce_range in (True, False):
        t = tq(torch.from_numpy(x), reduce_range=reduce_range).numpy()
        e = eqm(ember.from_numpy(x), reduce_range=reduce_range).numpy()
        assert e.dtype == np.float32 and e.shape == t.shape
        np.testing.assert_array_equal(e, t)
    assert repr(eqm) == repr(tq).replace("torch.", "ember.")
    assert list(eqm.state_dict()) == list(tq.state_dict())
    with pytest.raises(ValueError, match="Input shape must be"):
        eqm(ember.zeros(4, *(6,) * dims))
    if padding_mode == "zeros":  # (reflect pads first: the pad names its own kernel)
        with pytest.raises(RuntimeError, match="should be a float tensor"):
            eqm(ember.quantize_per_tensor(ember.from_numpy(x), 0.1, 128, ember.quint8))


def test_dynamic_conv_warns_and_converts_through_a_mapping():
    em = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 3), ember.nn.Flatten(), ember.nn.Linear(8, 3))
    with pytest.warns(UserWarning, match="DynamicQuantizedConv2d module has poor numerical"):
        q = ember.ao.quantization.quantize_dynamic(
            em, {ember.nn.Conv2d, ember.nn.Linear},
            mapping={ember.nn.Conv2d: enqd.Conv2d, ember.nn.Linear: enqd.Linear})
    assert type(q[0]) is enqd.Conv2d and type(q[2]) is enqd.Linear
    # the default mapping has no convolution, as torch's: the set alone leaves it float
    assert type(ember.ao.quantization.quantize_dynamic(em, {ember.nn.Conv2d})[0]) is \
        ember.nn.Conv2d
    x = ember.randn(2, 1, 4, 4)
    assert (q(x) - em(x)).abs().max() < 0.1


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_dynamic_rnn_matches_torch(kind, bidirectional):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    tm = getattr(torch.nn, kind)(4, 6, num_layers=2, bidirectional=bidirectional)
    em = getattr(ember.nn, kind)(4, 6, num_layers=2, bidirectional=bidirectional)
    _copy_params(em, tm)
    tm.qconfig = _qconfig(torch, dynamic=True)
    em.qconfig = _qconfig(ember, dynamic=True)
    tq, eqm = getattr(tnqd, kind).from_float(tm), getattr(enqd, kind).from_float(em)
    ty, th = tq(torch.from_numpy(x))
    ey, eh = eqm(ember.from_numpy(x))
    np.testing.assert_allclose(ey.numpy(), ty.numpy(), atol=1e-6)
    pairs = zip(eh, th) if kind == "LSTM" else [(eh, th)]
    for e, t in pairs:
        np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-6)
    weights = eqm.get_weight()
    assert set(weights) == set(tq.get_weight())
    for name, w in tq.get_weight().items():
        np.testing.assert_array_equal(_ints(weights[name]), _ints(w))


def test_dynamic_cells_match_torch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for kind in ("LSTMCell", "GRUCell", "RNNCell"):
        tm, em = getattr(torch.nn, kind)(4, 5), getattr(ember.nn, kind)(4, 5)
        _copy_params(em, tm)
        tm.qconfig, em.qconfig = _qconfig(torch, dynamic=True), _qconfig(ember, dynamic=True)
        t = getattr(tnqd, kind).from_float(tm)(torch.from_numpy(x))
        e = getattr(enqd, kind).from_float(em)(ember.from_numpy(x))
        for a, b in zip(e if kind == "LSTMCell" else [e], t if kind == "LSTMCell" else [t]):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), atol=1e-6)


def _via_checkpoint(state, save, load):
    buf = io.BytesIO()
    save(state, buf)
    return load(io.BytesIO(buf.getvalue()))


@pytest.mark.parametrize("make", [
    lambda nq, nqd: nq.Linear(6, 4), lambda nq, nqd: nqd.Linear(6, 4),
    lambda nq, nqd: nq.Conv2d(3, 4, 3, padding=1), lambda nq, nqd: nq.Conv1d(3, 2, 2)])
def test_state_dicts_load_both_ways(make):
    rng = np.random.default_rng(5)
    tmod = make(tnq, tnqd)
    w = tmod.weight()
    qw = torch.quantize_per_tensor(torch.from_numpy(rng.standard_normal(tuple(w.shape)).astype(
        np.float32)), 0.02, 0, torch.qint8)
    tmod.set_weight_bias(qw, torch.from_numpy(rng.standard_normal(w.shape[0]).astype(
        np.float32)))
    tmod.scale, tmod.zero_point = 0.3, 5
    emod = make(enq, enqd)
    emod.load_state_dict(_via_checkpoint(tmod.state_dict(), torch.save, ember.load))
    np.testing.assert_array_equal(_ints(emod.weight()), _ints(tmod.weight()))
    np.testing.assert_array_equal(emod.bias().numpy(), tmod.bias().detach().numpy())
    scale = float(np.float32(0.3))  # a float32 tensor in the state_dict, as torch's
    assert (emod.scale, emod.zero_point) == (scale, 5)
    back = make(tnq, tnqd)
    back.load_state_dict(_via_checkpoint(emod.state_dict(), ember.save, torch.load))
    np.testing.assert_array_equal(_ints(back.weight()), _ints(tmod.weight()))
    assert (back.scale, back.zero_point) == (scale, 5)


def test_activation_and_norm_modules():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    tq = torch.quantize_per_tensor(torch.from_numpy(x), 0.05, 110, torch.quint8)
    e = ember.quantize_per_tensor(ember.from_numpy(x), 0.05, 110, ember.quint8)
    tln, eln = torch.nn.LayerNorm(4), ember.nn.LayerNorm(4)
    tbn, ebn = torch.nn.BatchNorm2d(3).eval(), ember.nn.BatchNorm2d(3).eval()
    tbn.running_mean.uniform_(-0.5, 0.5)
    tbn.running_var.uniform_(0.5, 1.5)
    _copy_params(ebn, tbn)
    pairs = [(tnq.ReLU6(), enq.ReLU6()), (tnq.Hardswish(0.03, 90), enq.Hardswish(0.03, 90)),
             (tnq.ELU(0.04, 60), enq.ELU(0.04, 60)),
             (tnq.LeakyReLU(0.05, 100, 0.1), enq.LeakyReLU(0.05, 100, 0.1)),
             (tnq.Sigmoid(1 / 256, 0), enq.Sigmoid(1 / 256, 0)),
             (tnq.LayerNorm(4, tln.weight, tln.bias, 0.03, 128),
              enq.LayerNorm(4, eln.weight, eln.bias, 0.03, 128))]
    bn = tnq.BatchNorm2d(3)
    bn.load_state_dict(tbn.state_dict(), strict=False)
    bn.scale, bn.zero_point = torch.tensor(0.04), torch.tensor(120)
    ebn_q = enq.BatchNorm2d(3)
    _copy_params(ebn_q, bn)
    pairs.append((bn, ebn_q))
    for t_mod, e_mod in pairs:
        t, got = t_mod(tq), e_mod(e)
        assert got.q_scale() == t.q_scale() and got.q_zero_point() == t.q_zero_point()
        assert np.abs(_ints(got) - _ints(t)).max() <= 1, type(e_mod).__name__


def test_functional_modules_quantize_dequantize():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((2, 5)).astype(np.float32), rng.standard_normal((2, 5)).astype(
        np.float32)
    outs = []
    for lib, nq in ((torch, tnq), (ember, enq)):
        ff = nq.FloatFunctional()
        ff.activation_post_process = lib.ao.quantization.observer.MinMaxObserver()
        ff.add(lib.from_numpy(a), lib.from_numpy(b))
        qf = nq.QFunctional.from_float(ff)
        quant = nq.Quantize(0.02, 128, lib.quint8)
        qa, qb = quant(lib.from_numpy(a)), quant(lib.from_numpy(b))
        r = [qf.add(qa, qb), qf.add_relu(qa, qb), qf.mul(qa, qb), qf.cat([qa, qb], 1),
             qf.add_scalar(qa, 0.5), qf.mul_scalar(qa, 2.0)]
        outs.append(([_ints(q) for q in r], nq.DeQuantize()(r[0]).numpy(),
                     sorted(qf.state_dict())))
    for t, e in zip(outs[0][0], outs[1][0]):
        assert np.abs(t - e).max() <= 1
    np.testing.assert_allclose(outs[1][1], outs[0][1], atol=0.03)
    assert outs[0][2] == outs[1][2]
    with pytest.raises(RuntimeError, match="not intended"):
        enq.FloatFunctional()(ember.ones(1))


def test_nn_quantized_aliases():
    assert ember.nn.quantized.Linear is enq.Linear
    assert ember.nn.quantized.dynamic.LSTM is enqd.LSTM
    assert ember.ao.nn.quantized.functional.linear is not None
    with pytest.raises(RuntimeError, match="quint8"):
        enq.Linear(3, 2)(ember.randn(1, 3))


def test_dynamic_rnn_state_dict_round_trip():
    em = ember.nn.LSTM(4, 5, bidirectional=True)
    em.qconfig = _qconfig(ember, dynamic=True)
    q = enqd.LSTM.from_float(em)
    state = _via_checkpoint(q.state_dict(), ember.save, ember.load)  # weights_only
    fresh = enqd.LSTM(4, 5, bidirectional=True)
    fresh.load_state_dict(state)
    x = ember.randn(3, 2, 4)
    np.testing.assert_array_equal(fresh(x)[0].numpy(), q(x)[0].numpy())
    cell = enqd.GRUCell.from_float(_with_qconfig(ember.nn.GRUCell(4, 3)))
    fresh_cell = enqd.GRUCell(4, 3)
    fresh_cell.load_state_dict(_via_checkpoint(cell.state_dict(), ember.save, ember.load))
    np.testing.assert_array_equal(fresh_cell(x[0]).numpy(), cell(x[0]).numpy())


def _with_qconfig(mod):
    mod.qconfig = _qconfig(ember, dynamic=True)
    return mod
