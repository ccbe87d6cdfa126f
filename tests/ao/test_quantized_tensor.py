"""Quantized tensors against torch: quantize bit-exact (int_repr), dequantize, qparams, repr,
the shape ops that keep the quantizer, the errors of ops without a quantized kernel, and
save/load in torch's checkpoint format both ways."""
import io
import pickle

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

QDTYPES = [("qint8", -3), ("quint8", 7), ("qint32", 5)]


def _data(seed, shape=(3000,), scale=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if scale is not None:  # exact ties: half-way between two steps
        flat = x.reshape(-1)
        flat[:300] = (rng.integers(-100, 100, 300) + 0.5).astype(np.float32) * np.float32(scale)
    return x


def _ints(q):
    return q.int_repr().numpy().astype(np.int64)


@pytest.mark.parametrize("scale", [0.1, 0.037, 1 / 3, 0.5, 0.0123456])
@pytest.mark.parametrize("name,zp", QDTYPES)
def test_quantize_per_tensor_bit_exact(scale, name, zp):
    x = _data(1, scale=scale)
    t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, name))
    e = ember.quantize_per_tensor(ember.from_numpy(x), scale, zp, getattr(ember, name))
    assert e.dtype is getattr(ember, name) and e.is_quantized
    np.testing.assert_array_equal(_ints(e), _ints(t))
    assert e.int_repr().dtype is {"qint8": ember.int8, "quint8": ember.uint8,
                                  "qint32": ember.int32}[name]
    assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    assert e.qscheme() is ember.per_tensor_affine
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    np.testing.assert_array_equal(ember.dequantize(e).numpy(), t.dequantize().numpy())


@pytest.mark.parametrize("name", ["qint8", "quint8", "qint32"])
def test_quantize_per_channel_bit_exact(name):
    x = _data(2, (4, 500))
    scales = np.array([0.1, 0.17, 0.03, 0.5])
    x[:, :100] = ((np.random.default_rng(3).integers(-40, 40, (4, 100)) + 0.5)
                  * scales[:, None]).astype(np.float32)
    zps = np.array([11, 8, 13, 10]) if name == "quint8" else np.array([1, -2, 3, 0])
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales),
                                   torch.from_numpy(zps), 0, getattr(torch, name))
    e = ember.quantize_per_channel(ember.from_numpy(x), ember.from_numpy(scales),
                                   ember.from_numpy(zps), 0, getattr(ember, name))
    np.testing.assert_array_equal(_ints(e), _ints(t))
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    assert e.qscheme() is ember.per_channel_affine and e.q_per_channel_axis() == 0
    assert e.q_per_channel_scales().dtype is ember.float64
    assert e.q_per_channel_zero_points().dtype is ember.int64
    np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                  t.q_per_channel_scales().numpy())


def test_other_forms_and_make_quantized():
    x = _data(4, (2, 3))
    tx, ex = torch.from_numpy(x), ember.from_numpy(x)
    # tensor scale/zero point, list of tensors, dynamic
    t = torch.quantize_per_tensor(tx, torch.tensor(0.1), torch.tensor(2), torch.quint8)
    e = ember.quantize_per_tensor(ex, ember.tensor(0.1), ember.tensor(2), ember.quint8)
    assert e.q_scale() == t.q_scale() and e.q_zero_point() == 2
    ts = torch.quantize_per_tensor([tx, tx], torch.tensor([0.1, 0.2]), torch.tensor([1, 2]),
                                   torch.quint8)
    es = ember.quantize_per_tensor([ex, ex], ember.tensor([0.1, 0.2]), ember.tensor([1, 2]),
                                   ember.quint8)
    assert isinstance(es, tuple) and len(es) == 2
    for a, b in zip(es, ts):
        np.testing.assert_array_equal(_ints(a), _ints(b))
        assert a.q_scale() == b.q_scale()
    for reduce_range in (False, True):
        for dtype in ("quint8", "qint8"):
            t = torch.quantize_per_tensor_dynamic(tx, getattr(torch, dtype), reduce_range)
            e = ember.quantize_per_tensor_dynamic(ex, getattr(ember, dtype), reduce_range)
            assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
            np.testing.assert_array_equal(_ints(e), _ints(t))
    ints = np.arange(6, dtype=np.int8).reshape(2, 3)
    t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints), 0.5, 1)
    e = ember._make_per_tensor_quantized_tensor(ember.from_numpy(ints), 0.5, 1)
    assert e.dtype is ember.qint8
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    t = torch._make_per_channel_quantized_tensor(torch.from_numpy(ints), torch.tensor([.1, .2],
                                                 dtype=torch.double), torch.tensor([0, 1]), 0)
    e = ember._make_per_channel_quantized_tensor(ember.from_numpy(ints), ember.tensor(
        [.1, .2], dtype=ember.double), ember.tensor([0, 1]), 0)
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())


def test_repr_matches_torch():
    x = _data(5, (2, 3))
    t = torch.quantize_per_tensor(torch.from_numpy(x), 0.1, 3, torch.quint8)
    e = ember.quantize_per_tensor(ember.from_numpy(x), 0.1, 3, ember.quint8)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.tensor([0.1, 0.2]),
                                   torch.tensor([1, 2]), 0, torch.qint8)
    e = ember.quantize_per_channel(ember.from_numpy(x), ember.tensor([0.1, 0.2]),
                                   ember.tensor([1, 2]), 0, ember.qint8)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    t = torch.quantize_per_tensor(torch.tensor(1.5), 0.1, 3, torch.qint32)
    e = ember.quantize_per_tensor(ember.tensor(1.5), 0.1, 3, ember.qint32)
    assert repr(e) == repr(t).replace("torch.", "ember.")


@pytest.mark.parametrize("op", [
    lambda q: q.view(3, 4), lambda q: q.reshape(2, 6), lambda q: q.t(),
    lambda q: q.transpose(0, 1).contiguous(), lambda q: q.permute(1, 0), lambda q: q.clone(),
    lambda q: q[1], lambda q: q[:, 1:3], lambda q: q.select(1, 2), lambda q: q.unsqueeze(0),
    lambda q: q.flatten(), lambda q: q.detach(), lambda q: q.narrow(1, 1, 2),
    lambda q: q.chunk(2, 1)[1]])
def test_shape_ops_keep_per_tensor_qparams(op):
    x = _data(6, (3, 4))
    t = op(torch.quantize_per_tensor(torch.from_numpy(x), 0.05, 4, torch.quint8))
    e = op(ember.quantize_per_tensor(ember.from_numpy(x), 0.05, 4, ember.quint8))
    assert e.is_quantized and e.dtype is ember.quint8
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert e.is_contiguous() == t.is_contiguous()
    assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    np.testing.assert_array_equal(_ints(e), _ints(t))


@pytest.mark.parametrize("op", [lambda q: q[:, 1:], lambda q: q[0], lambda q: q.unsqueeze(0),
                                lambda q: q.narrow(1, 0, 2), lambda q: q.clone()])
def test_shape_ops_track_the_channel_axis(op):
    x = _data(7, (2, 3, 4))
    args = (torch.tensor([0.1, 0.2, 0.3]), torch.tensor([1, 2, 3]), 1, torch.qint8)
    t = op(torch.quantize_per_channel(torch.from_numpy(x), *args))
    e = op(ember.quantize_per_channel(ember.from_numpy(x), ember.tensor([0.1, 0.2, 0.3]),
                                      ember.tensor([1, 2, 3]), 1, ember.qint8))
    assert e.q_per_channel_axis() == t.q_per_channel_axis()
    np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                  t.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    # where torch cannot follow the axis (permute), Ember moves it
    p = ember.quantize_per_channel(ember.from_numpy(x), ember.tensor([0.1, 0.2, 0.3]),
                                   ember.tensor([1, 2, 3]), 1, ember.qint8).permute(2, 0, 1)
    assert p.q_per_channel_axis() == 2
    with pytest.raises(RuntimeError, match="mixes the channels"):
        ember.quantize_per_channel(ember.from_numpy(x), ember.tensor([0.1, 0.2, 0.3]),
                                   ember.tensor([1, 2, 3]), 1, ember.qint8).reshape(3, 8)


def test_cat_keeps_or_requantizes_like_torch():
    x, y = _data(8, (2, 3)), _data(9, (2, 3))
    tq = [torch.quantize_per_tensor(torch.from_numpy(x), 0.1, 3, torch.quint8),
          torch.quantize_per_tensor(torch.from_numpy(y), 0.1, 3, torch.quint8)]
    eq = [ember.quantize_per_tensor(ember.from_numpy(x), 0.1, 3, ember.quint8),
          ember.quantize_per_tensor(ember.from_numpy(y), 0.1, 3, ember.quint8)]
    np.testing.assert_array_equal(_ints(ember.cat(eq, 1)), _ints(torch.cat(tq, 1)))
    tq[1] = torch.quantize_per_tensor(torch.from_numpy(y), 0.2, 5, torch.quint8)
    eq[1] = ember.quantize_per_tensor(ember.from_numpy(y), 0.2, 5, ember.quint8)
    with pytest.warns(UserWarning, match="same quantization parameters"):
        e = ember.cat(eq)
    t = torch.cat(tq)
    assert e.q_scale() == t.q_scale()
    assert np.abs(_ints(e) - _ints(t)).max() <= 1


def test_unsupported_ops_raise_not_implemented():
    q = ember.quantize_per_tensor(ember.randn(3), 0.1, 3, ember.quint8)
    # torch's messages name the failing kernel: add.out, exp.out, sum.IntList_out
    for fn, name in [(lambda: q + q, r"add\.out"), (lambda: ember.exp(q), r"exp\.out"),
                     (lambda: q.sum(), r"sum\.IntList_out"), (lambda: q @ q, "matmul")]:
        with pytest.raises(NotImplementedError, match=f"'aten::{name}'.*'QuantizedCPU'"):
            fn()
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):
        q[0] = 1.0
    with pytest.raises(RuntimeError, match="quantized"):
        q.to(ember.float32)
    with pytest.raises(RuntimeError, match="floating point"):
        q.requires_grad_()
    x = ember.randn(3)
    assert x.dequantize() is x and not x.is_quantized
    with pytest.raises(NotImplementedError, match="'aten::int_repr'.*'CPU'"):
        x.int_repr()
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        ember.quantize_per_channel(ember.randn(2, 2), ember.tensor([.1, .2]),
                                   ember.tensor([0, 0]), 0, ember.qint8).q_scale()
    with pytest.raises(RuntimeError, match="float"):
        ember.quantize_per_tensor(ember.arange(3), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="promoteTypes with quantized"):
        ember.promote_types(ember.qint8, ember.float32)


def test_dtypes_are_top_level_and_pickle():
    assert ember.ao.quantization.qint8 is ember.qint8
    assert ember.qint8.itemsize == 1 and not ember.qint8.is_floating_point
    assert ember.iinfo(ember.quint8).max == 255
    assert pickle.loads(pickle.dumps(ember.per_channel_affine)) is ember.per_channel_affine
    q = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([.1, .2]),
                                   ember.tensor([0, 1]), 0, ember.qint8)
    back = pickle.loads(pickle.dumps(q))
    assert back.equal(q)
    import copy
    assert copy.deepcopy(q).equal(q)


def _round_trip_with_torch(obj_torch, obj_ember):
    buf = io.BytesIO()
    torch.save(obj_torch, buf)
    from_torch = ember.load(io.BytesIO(buf.getvalue()))
    buf = io.BytesIO()
    ember.save(obj_ember, buf)
    from_ember = torch.load(io.BytesIO(buf.getvalue()))
    return from_torch, from_ember


def test_save_load_quantized_tensors_both_ways():
    x = _data(10, (4, 3))
    args = ((0.07, 9, "quint8"), (0.02, -1, "qint8"), (0.001, 4, "qint32"))
    for scale, zp, name in args:
        t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, name))
        e = ember.quantize_per_tensor(ember.from_numpy(x), scale, zp, getattr(ember, name))
        from_torch, from_ember = _round_trip_with_torch({"q": t, "v": t[1:]},
                                                        {"q": e, "v": e[1:]})
        assert from_torch["q"].equal(e) and from_torch["v"].equal(e[1:])
        assert torch.equal(from_ember["q"], t) and torch.equal(from_ember["v"], t[1:])
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.tensor([.1, .2, .3, .4],
                                   dtype=torch.double), torch.tensor([0, 1, 2, 3]), 0,
                                   torch.qint8)
    e = ember.quantize_per_channel(ember.from_numpy(x), ember.tensor([.1, .2, .3, .4],
                                   dtype=ember.double), ember.tensor([0, 1, 2, 3]), 0,
                                   ember.qint8)
    from_torch, from_ember = _round_trip_with_torch(t, e)
    assert from_torch.equal(e) and from_torch.qscheme() is ember.per_channel_affine
    assert torch.equal(from_ember, t)
    buf = io.BytesIO()
    ember.save(e, buf)
    assert ember.load(io.BytesIO(buf.getvalue())).equal(e)
