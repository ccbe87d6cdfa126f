"""Memory formats: ``channels_last`` tensors really have NHWC strides, report ``stride()`` and
``is_contiguous()`` as torch's do, and every op computes on them as on contiguous ones."""
import io
import pickle

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

_FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


def _pair(shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(values), ember.tensor(values)


def _layout(t):
    formats = [f for f in ("contiguous_format", "channels_last", "channels_last_3d")
               if t.dim() == {"channels_last": 4, "channels_last_3d": 5}.get(f, t.dim())]
    lib = torch if isinstance(t, torch.Tensor) else ember
    return (tuple(t.stride()), t.is_contiguous(),
            tuple(t.is_contiguous(memory_format=getattr(lib, f)) for f in formats))


def test_memory_format_objects():
    for name in _FORMATS:
        fmt = getattr(ember, name)
        assert isinstance(fmt, ember.memory_format)
        assert repr(fmt) == repr(getattr(torch, name)).replace("torch", "ember")
        assert pickle.loads(pickle.dumps(fmt)) is fmt


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 4, 1),
                                   (1, 1, 1, 1)])
def test_channels_last_strides_and_contiguity_match_torch(shape):
    t, e = _pair(shape)
    tc, ec = t.to(memory_format=torch.channels_last), e.to(memory_format=ember.channels_last)
    assert _layout(ec) == _layout(tc)
    assert_same(tc, ec, rtol=0, atol=0)
    assert _layout(e.contiguous(memory_format=ember.channels_last)) == \
        _layout(t.contiguous(memory_format=torch.channels_last))
    assert _layout(ec.contiguous()) == _layout(tc.contiguous())
    assert _layout(e) == _layout(t)


def test_channels_last_3d_and_other_layouts_match_torch():
    t, e = _pair((2, 3, 4, 5, 6))
    assert _layout(e.to(memory_format=ember.channels_last_3d)) == \
        _layout(t.to(memory_format=torch.channels_last_3d))
    t4, e4 = _pair((2, 3, 4, 5))
    for make in (lambda x: x.permute(0, 2, 3, 1), lambda x: x.transpose(2, 3),
                 lambda x: x[:, :, ::2], lambda x: x.permute(0, 3, 1, 2)):
        assert _layout(make(e4)) == _layout(make(t4))
    assert e4.is_contiguous(memory_format=ember.preserve_format) is \
        t4.is_contiguous(memory_format=torch.preserve_format)


def test_to_and_contiguous_return_self_when_nothing_changes():
    t, e = _pair((2, 3, 4, 5))
    tc, ec = t.to(memory_format=torch.channels_last), e.to(memory_format=ember.channels_last)
    for lib, x, xc in ((torch, t, tc), (ember, e, ec)):
        assert x.to(memory_format=lib.contiguous_format) is x
        assert x.to(memory_format=lib.preserve_format) is x
        assert xc.to(memory_format=lib.channels_last) is xc
        assert xc.contiguous(memory_format=lib.channels_last) is xc
        assert x.contiguous(memory_format=lib.preserve_format) is x


def test_factories_and_copies_take_memory_format_as_torch():
    t, e = _pair((2, 3, 4, 5))
    tc, ec = t.to(memory_format=torch.channels_last), e.to(memory_format=ember.channels_last)
    for name in ("empty_like", "zeros_like", "ones_like"):
        for fmt in (None, "contiguous_format", "channels_last", "preserve_format"):
            kw_t = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
            kw_e = {} if fmt is None else {"memory_format": getattr(ember, fmt)}
            for a, b in ((tc, ec), (t, e), (t.transpose(1, 2), e.transpose(1, 2))):
                if fmt == "channels_last" and a.dim() != 4:
                    continue
                out_t, out_e = getattr(torch, name)(a, **kw_t), getattr(ember, name)(b, **kw_e)
                assert _layout(out_e) == _layout(out_t), (name, fmt)
                if name != "empty_like":
                    assert_same(out_t, out_e, rtol=0, atol=0)
    for fmt in ("contiguous_format", "channels_last", "preserve_format"):
        assert _layout(ec.clone(memory_format=getattr(ember, fmt))) == \
            _layout(tc.clone(memory_format=getattr(torch, fmt)))
    assert _layout(ec.clone()) == _layout(tc.clone())
    assert _layout(ember.empty(2, 3, 4, 5, memory_format=ember.channels_last)) == \
        _layout(torch.empty(2, 3, 4, 5, memory_format=torch.channels_last))
    assert _layout(ec.double()) == _layout(tc.double())
    for method in ("float", "double", "cpu", "half"):
        assert _layout(getattr(e, method)(memory_format=ember.channels_last)) == \
            _layout(getattr(t, method)(memory_format=torch.channels_last)), method
    assert _layout(ec.to(ember.float64, memory_format=ember.contiguous_format)) == \
        _layout(tc.to(torch.float64, memory_format=torch.contiguous_format))


def test_memory_format_errors_match_torch():
    for call in (lambda m: m.randn(2, 3, 4).to(memory_format=m.channels_last),
                 lambda m: m.randn(2, 3, 4).contiguous(memory_format=m.channels_last),
                 lambda m: m.randn(2, 3, 4, 5).to(memory_format=m.channels_last_3d),
                 lambda m: m.empty(2, 3, memory_format=m.channels_last),
                 lambda m: m.empty(2, 3, 4, 5, memory_format=m.preserve_format),
                 lambda m: m.randn(2, 3, 4).clone(memory_format=m.channels_last),
                 lambda m: m.randn(2, 3, 4, 5).transpose(1, 2).contiguous(
                     memory_format=m.preserve_format)):
        compare_error(call)
    assert ember.randn(2, 3, 4).is_contiguous(memory_format=ember.channels_last) is \
        torch.randn(2, 3, 4).is_contiguous(memory_format=torch.channels_last) is False


def test_ops_compute_correctly_on_channels_last(device):
    t, e = _pair((2, 3, 6, 5))
    e = e.to(device)
    tc, ec = t.to(memory_format=torch.channels_last), e.to(memory_format=ember.channels_last)
    ops = [lambda m, x: x * 2 + 1, lambda m, x: x.exp().sum(1), lambda m, x: x.mean((2, 3)),
           lambda m, x: x.reshape(2, -1), lambda m, x: x.flatten(1),
           lambda m, x: x.permute(0, 2, 3, 1).reshape(-1, 3), lambda m, x: x[:, 1:, ::2],
           lambda m, x: m.cat([x, x], 1), lambda m, x: x.softmax(1), lambda m, x: x.max(1).values,
           lambda m, x: m.nn.functional.max_pool2d(x, 2),
           lambda m, x: m.nn.functional.avg_pool2d(x, 2),
           lambda m, x: m.nn.functional.interpolate(x, scale_factor=2),
           lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True),
           lambda m, x: x.matmul(x.transpose(2, 3)), lambda m, x: x.cumsum(1)]
    for op in ops:
        assert_same(op(torch, tc), op(ember, ec).to("cpu"), rtol=1e-5, atol=1e-5)


def test_conv_net_on_channels_last_forward_backward_matches_torch():
    t, e = _pair((2, 3, 8, 8))
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 3, stride=2))
    em = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3, padding=1), ember.nn.BatchNorm2d(4),
                             ember.nn.ReLU(), ember.nn.Conv2d(4, 2, 3, stride=2))
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    tm = tm.to(memory_format=torch.channels_last)
    em = em.to(memory_format=ember.channels_last)
    for (name, tp), ep in zip(tm.named_parameters(), em.parameters()):
        assert type(ep) is ember.nn.Parameter
        assert tuple(ep.stride()) == tuple(tp.stride()), name
    tx = t.to(memory_format=torch.channels_last).requires_grad_()
    ex = e.to(memory_format=ember.channels_last).requires_grad_()
    out_t, out_e = tm(tx), em(ex)
    assert_same(out_t, out_e, rtol=1e-4, atol=1e-5)
    out_t.square().sum().backward()
    out_e.square().sum().backward()
    assert_same(tx.grad, ex.grad, rtol=1e-4, atol=1e-5)
    for tp, ep in zip(tm.parameters(), em.parameters()):
        assert_same(tp.grad, ep.grad, rtol=1e-4, atol=1e-4)


def test_channels_last_tensor_saves_and_loads_as_torch():
    t, e = _pair((2, 3, 4, 5))
    tc, ec = t.to(memory_format=torch.channels_last), e.to(memory_format=ember.channels_last)
    buffer = io.BytesIO()
    ember.save({"x": ec}, buffer)
    buffer.seek(0)
    loaded_by_torch = torch.load(buffer, weights_only=True)["x"]
    assert tuple(loaded_by_torch.stride()) == tuple(tc.stride())
    assert torch.equal(loaded_by_torch, tc)
    buffer = io.BytesIO()
    torch.save({"x": tc}, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer)["x"]
    assert _layout(loaded) == _layout(tc)
    assert_same(tc, loaded, rtol=0, atol=0)


def test_device_type_properties_match_torch():
    t, e = torch.ones(2), ember.ones(2)
    for name in ("is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_cuda", "is_cpu"):
        assert getattr(e, name) is getattr(t, name), name
