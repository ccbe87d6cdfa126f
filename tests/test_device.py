"""``ember.device`` parsing and comparison against ``torch.device``, tensors on the registered
"testdev" device, the same-device rule for ops, moving data between devices, and the error for
CUDA when CuPy is missing."""
import importlib.util
import pickle

import pytest
import torch

import ember
from ember.backends import BackendUnavailableError


def _same(e, t):
    assert e.type == t.type and e.index == t.index
    assert repr(e) == repr(t) and str(e) == str(t)


PARSE_CASES = [
    ("cpu",), ("cuda",), ("cuda:1",), ("cuda:0",), ("cuda:12",), ("cpu:0",), ("cuda", 1),
    ("cuda", 0), ("cpu", 0),
]


@pytest.mark.parametrize("args", PARSE_CASES)
def test_parse_like_torch(args):
    _same(ember.device(*args), torch.device(*args))


def test_keywords_and_copies():
    _same(ember.device(type="cuda", index=2), torch.device(type="cuda", index=2))
    d = ember.device("cuda:3")
    assert ember.device(d) is d
    _same(ember.device(d), torch.device(torch.device("cuda:3")))
    assert pickle.loads(pickle.dumps(d)) == d


INVALID_CASES = [
    ("gpu",), ("CPU",), ("",), (" cpu",), ("cuda:",), ("cuda:-1",), ("cuda:x",), ("cuda:1:2",),
    ("cuda:01",), ("cuda:1", 1), ("cuda", -1), ("cuda", "1"), (1.5,), (None,),
]


@pytest.mark.parametrize("args", INVALID_CASES)
def test_invalid_devices_raise_like_torch(args):
    with pytest.raises(Exception) as expected:
        torch.device(*args)
    with pytest.raises(expected.type):
        ember.device(*args)


def test_integer_means_first_accelerator():
    assert ember.device(0) == ember.device("cuda:0")
    assert ember.device(2).index == 2


EQUALITY_PAIRS = [
    (("cuda:1",), ("cuda", 1)),
    (("cuda",), ("cuda:0",)),
    (("cpu",), ("cpu:0",)),
    (("cuda:1",), ("cuda:2",)),
    (("cpu",), ("cuda",)),
    (("cpu",), ("cpu",)),
]


@pytest.mark.parametrize("a,b", EQUALITY_PAIRS)
def test_equality_and_hash_like_torch(a, b):
    t_eq = torch.device(*a) == torch.device(*b)
    assert (ember.device(*a) == ember.device(*b)) == t_eq
    assert (ember.device(*a) != ember.device(*b)) == (not t_eq)
    if t_eq:
        assert hash(ember.device(*a)) == hash(ember.device(*b))


def test_device_never_equals_a_string():
    assert (torch.device("cpu") == "cpu") is False
    assert (ember.device("cpu") == "cpu") is False
    assert ember.device("cpu") != 3
    assert {ember.device("cuda", 1): "x"}[ember.device("cuda:1")] == "x"


def test_tensors_report_their_device():
    for spec in ("testdev", "testdev:0", ember.device("testdev")):
        t = ember.zeros(2, device=spec)
        assert t.device == ember.device("testdev:0")
        assert t.device.type == "testdev" and t.device.index == 0
        assert not t.is_cpu and not t.is_cuda
    assert ember.ones(2).device == ember.device("cpu")
    assert ember.ones(2).device.index is None and torch.ones(2).device.index is None


MIXED_OPS = [
    lambda a, b: a + b,
    lambda a, b: a * b,
    lambda a, b: ember.where(b > 0, a, b),
    lambda a, b: a @ b,
    lambda a, b: ember.mm(a.reshape(2, 2), b.reshape(2, 2)),
    lambda a, b: ember.dot(a, b),
    lambda a, b: ember.outer(a, b),
    lambda a, b: ember.addmm(a.reshape(2, 2), b.reshape(2, 2), b.reshape(2, 2)),
    lambda a, b: ember.einsum("i,i->", a, b),
    lambda a, b: ember.tensordot(a, b, 1),
    lambda a, b: ember.cat([a, b]),
    lambda a, b: ember.normal(a, b),
]


@pytest.mark.parametrize("op", MIXED_OPS)
@pytest.mark.parametrize("order", ["cpu_first", "testdev_first"])
def test_mixing_devices_raises(op, order):
    cpu = ember.ones(4)
    dev = ember.ones(4, device="testdev")
    a, b = (cpu, dev) if order == "cpu_first" else (dev, cpu)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        op(a, b)


def test_to_moves_data_and_keeps_values():
    src = ember.arange(6.0).reshape(2, 3)
    moved = src.to("testdev")
    assert moved.device == ember.device("testdev:0") and moved.dtype is src.dtype
    assert moved.cpu().equal(src) and moved.data_ptr() != src.data_ptr()
    # the copy is independent
    moved.add_(1)
    assert src[0, 0].item() == 0.0
    both = src.to("testdev", ember.float64)
    assert both.device.type == "testdev" and both.dtype is ember.float64
    assert src.to(moved).device == moved.device
    assert moved.to("testdev") is moved
    assert ember.tensor([1, 2], device="testdev").cpu().tolist() == [1, 2]


def test_ops_on_testdev_stay_there():
    a = ember.randn(3, 3, device="testdev")
    for out in (a + 1, a @ a, a.sum(), a.exp(), ember.einsum("ij->j", a), a.t().contiguous(),
                ember.zeros_like(a), a.new_ones(2), ember.rand_like(a)):
        assert out.device == a.device


def test_gradient_flows_back_across_devices():
    x = ember.ones(3, requires_grad=True)
    y = (x.to("testdev") * 2).sum()
    y.backward()
    assert x.grad.device == x.device and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_unknown_device_index_rejected_for_cpu():
    with pytest.raises(RuntimeError):
        ember.zeros(2, device="cpu:1")


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_cuda_without_cupy_names_the_missing_extra():
    makes = (lambda lib: lib.zeros(2, device="cuda"), lambda lib: lib.tensor([1.0], device="cuda:0"),
             lambda lib: lib.ones(2).to("cuda"), lambda lib: lib.ones(2).cuda())
    for make in makes:
        # torch's CPU build raises AssertionError("Torch not compiled with CUDA enabled")
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
            make(torch)
        with pytest.raises(BackendUnavailableError, match=r"ember\[cuda\]") as info:
            make(ember)
        assert isinstance(info.value, AssertionError)
        assert str(info.value).startswith("Torch not compiled with CUDA enabled")
        assert "CuPy" in str(info.value)
