"""The Tensor object's own API against PyTorch: metadata, Python protocols, conversions, memory
layout (strides, views, contiguity), autograd flags and copying. Most cases are one expression
run with ``lib=torch`` and ``lib=ember`` whose results (or exception types) must agree."""
import copy
import pickle

import numpy as np
import pytest
import torch

import ember
from conftest import OTHER_DEVICES
from opinfo.core import assert_same
from torch_compare import compare_error


def _eval(expr, lib, device="cpu"):
    return eval(expr, {"lib": lib, "np": np, "dev": device if lib is ember else "cpu"})


def _normalise(value, device):
    """Results as comparable plain data: sizes as tuples, dtypes by name, devices by type (torch's
    "cpu" standing for the device under test), "torch." in strings read as "ember."."""
    if isinstance(value, (torch.Size, ember.Size)):
        return tuple(value)
    if isinstance(value, (torch.dtype, ember.dtype)):
        return str(value).split(".")[-1]
    if isinstance(value, torch.device):
        return device
    if isinstance(value, ember.device):
        return value.type
    if isinstance(value, np.ndarray):
        return value.tolist(), str(value.dtype)
    if isinstance(value, str):
        # a legacy type name says the device ("torch.cuda.FloatTensor"); torch's side is on the CPU
        return value.replace("torch.", "ember.").replace(f"ember.{device}.", "ember.")
    return value


def check(expr, device="cpu", result_device=None):
    try:
        expected = _eval(expr, torch)
    except Exception as exc:
        with pytest.raises(type(exc)):
            _eval(expr, ember, device)
        return
    got = _eval(expr, ember, device)
    if isinstance(expected, torch.Tensor):
        assert_same(got, expected, None)
        assert got.requires_grad == expected.requires_grad
        assert got.is_leaf == expected.is_leaf
        assert got.device.type == (result_device or device)
    else:
        assert _normalise(got, device) == _normalise(expected, device)
        assert type(_normalise(got, device)) is type(_normalise(expected, device))


METADATA_CASES = [
    "lib.ones(2, 3, device=dev).shape",
    "lib.ones(2, 3, device=dev).size()",
    "lib.ones(2, 3, device=dev).size(1)",
    "lib.ones(2, 3, device=dev).size(-1)",
    "lib.ones(2, 3, device=dev).size(dim=0)",
    "lib.ones(2, 3, device=dev).size(2)",
    "lib.ones(2, 3, device=dev).shape[1:]",
    "lib.ones(2, 3, device=dev).shape + (4,)",
    "lib.ones(2, 3, device=dev).shape.numel()",
    "lib.ones(2, 3, device=dev).shape == (2, 3)",
    "lib.ones(2, 3, device=dev).dim()",
    "lib.ones(2, 3, device=dev).ndim",
    "lib.ones((), device=dev).dim()",
    "lib.ones(2, 3, device=dev).ndimension()",
    "lib.ones(2, 3, device=dev).numel()",
    "lib.ones(0, 3, device=dev).numel()",
    "lib.ones(2, 3, device=dev).nelement()",
    "lib.ones(2, 3, device=dev).dtype",
    "lib.ones(2, 3, dtype=lib.int16, device=dev).dtype",
    "lib.ones(2, 3, device=dev).device",
    "lib.ones(2, 3, device=dev).element_size()",
    "lib.ones(2, 3, dtype=lib.float64, device=dev).itemsize",
    "lib.ones(2, 3, device=dev).nbytes",
    "lib.ones(2, device=dev).is_floating_point()",
    "lib.ones(2, dtype=lib.int32, device=dev).is_floating_point()",
    "lib.ones(2, device=dev).is_complex()",
    "lib.ones(2).is_cpu",
    "lib.ones(2).is_cuda",
    "lib.ones(2, device=dev).requires_grad",
    "lib.ones(2, device=dev).grad",
    "lib.ones(2, device=dev).grad_fn",
    "lib.ones(2, device=dev).is_leaf",
    "lib.ones(2, requires_grad=True, device=dev).is_leaf",
    "(lib.ones(2, requires_grad=True, device=dev) * 2).is_leaf",
    "(lib.ones(2, device=dev) * 2).is_leaf",
    "(lib.ones(2, requires_grad=True, device=dev) * 2).requires_grad",
    "(lib.ones(2, requires_grad=True, device=dev) * 2).grad_fn.name()",
    "lib.ones(2, requires_grad=True, device=dev).grad_fn",
]


@pytest.mark.parametrize("expr", METADATA_CASES)
def test_metadata(expr, device):
    check(expr, device)


TRANSPOSE_CASES = [
    "lib.arange(6, device=dev).reshape(2, 3).T",
    "lib.arange(3, device=dev).T",
    "lib.tensor(2., device=dev).T",
    "lib.arange(24, device=dev).reshape(2, 3, 4).mT",
    "lib.arange(6., device=dev).reshape(2, 3).mT",
    "lib.arange(3, device=dev).mT",
    "lib.arange(6., requires_grad=True, device=dev).reshape(2, 3).T",
]


@pytest.mark.parametrize("expr", TRANSPOSE_CASES)
def test_transposes(expr, device):
    check(expr, device)


def test_T_of_3d_reverses_dims():
    assert ember.ones(2, 3, 4).T.shape == (4, 3, 2)


CONVERSION_CASES = [
    "lib.tensor(2.5, device=dev).item()",
    "lib.tensor([2.5], device=dev).item()",
    "lib.tensor([[7]], device=dev).item()",
    "lib.tensor([1, 2], device=dev).item()",
    "lib.tensor([], device=dev).item()",
    "lib.tensor(True, device=dev).item()",
    "lib.tensor(3, dtype=lib.int8, device=dev).item()",
    "lib.tensor(0.1, device=dev).item()",
    "lib.tensor(2.5, dtype=lib.float16, device=dev).item()",
    "lib.tensor(2.7, dtype=lib.bfloat16, device=dev).item()",
    "lib.tensor([[1, 2], [3, 4]], device=dev).tolist()",
    "lib.tensor([1.1, 2.2], device=dev).tolist()",
    "lib.tensor([1.5, 2.3], dtype=lib.bfloat16, device=dev).tolist()",
    "lib.tensor([1.1, 2.2], dtype=lib.float16, device=dev).tolist()",
    "lib.tensor(2.5, device=dev).tolist()",
    "lib.tensor([True, False], device=dev).tolist()",
    "lib.zeros(2, 0, device=dev).tolist()",
    "lib.tensor([1., 2]).numpy()",
    "lib.tensor([1, 2], dtype=lib.int16).numpy()",
    "lib.tensor([1., 2], requires_grad=True).numpy()",
    "lib.tensor([1., 2], requires_grad=True).numpy(force=True)",
    "lib.tensor([1., 2], requires_grad=True).detach().numpy()",
    "np.asarray(lib.tensor([1., 2]))",
    "np.asarray(lib.tensor([1., 2]), dtype=np.int32)",
    "np.asarray(lib.tensor([1., 2], requires_grad=True))",
    "np.array(lib.tensor(3.5))",
    "len(lib.ones(3, 2, device=dev))",
    "len(lib.tensor(1, device=dev))",
    "[x.item() for x in lib.tensor([1, 2], device=dev)]",
    "[tuple(r.shape) for r in lib.ones(2, 3, device=dev)]",
    "list(lib.tensor(1, device=dev))",
    "bool(lib.tensor([1, 2], device=dev))",
    "bool(lib.tensor([], device=dev))",
    "bool(lib.tensor([0], device=dev))",
    "bool(lib.tensor(0.5, device=dev))",
    "bool(lib.tensor(float('nan'), device=dev))",
    "[10, 20, 30][lib.tensor(1, device=dev)]",
    "[10, 20, 30][lib.tensor([1], device=dev)]",
    "[10, 20, 30][lib.tensor(1.0, device=dev)]",
    "[10, 20, 30][lib.tensor([1, 2], device=dev)]",
    "[10, 20, 30][lib.tensor(True, device=dev)]",
    "range(5)[lib.tensor(3, dtype=lib.int8, device=dev)]",
    "float(lib.tensor([2.5], device=dev))",
    "float(lib.tensor(2, device=dev))",
    "float(lib.tensor([2.5, 1], device=dev))",
    "float(lib.tensor([], device=dev))",
    "int(lib.tensor(2.7, device=dev))",
    "int(lib.tensor(-2.7, device=dev))",
    "int(lib.tensor([3], device=dev))",
    "int(lib.tensor([3, 4], device=dev))",
    "complex(lib.tensor(2.5, device=dev))",
    "f'{lib.tensor(3.5, device=dev):.2f}'",
    "f'{lib.tensor(7, device=dev):>4}'",
]


@pytest.mark.parametrize("expr", CONVERSION_CASES)
def test_conversions(expr, device):
    check(expr, device)


@pytest.mark.parametrize("expr", ["np.add(lib.tensor([1., 2]), 1)", "np.sqrt(lib.tensor(4.))",
                                  "np.greater(lib.tensor([1., 2]), 1)"])
def test_numpy_ufuncs_return_tensors(expr):
    check(expr)


def test_numpy_shares_memory():
    t = ember.zeros(3)
    arr = t.numpy()
    arr[0] = 5.0
    assert t[0].item() == 5.0
    t.add_(1)
    assert arr.tolist() == [6.0, 1.0, 1.0]
    view = ember.arange(6.0).reshape(2, 3)[:, 1]
    assert view.numpy().tolist() == [1.0, 4.0]
    assert np.shares_memory(view.numpy(), view._base.numpy())


@pytest.mark.parametrize("other", OTHER_DEVICES)
def test_numpy_refuses_other_devices(other):
    # torch: "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() ..."
    with pytest.raises(TypeError, match="to numpy"):
        ember.ones(2, device=other).numpy()


LAYOUT_CASES = [
    "lib.ones(2, 3, device=dev).stride()",
    "lib.ones(2, 3, device=dev).stride(0)",
    "lib.ones(2, 3, device=dev).stride(-1)",
    "lib.ones(2, 3, device=dev).stride(2)",
    "lib.ones(2, 3, device=dev).t().stride()",
    "lib.ones(2, 3, 4, device=dev).permute(2, 0, 1).stride()",
    "lib.ones(2, 3, device=dev)[:, 1].stride()",
    "lib.ones(4, 3, device=dev)[::2].stride()",
    "lib.ones(1, 3, device=dev).stride()",
    "lib.ones(3, 1, device=dev).stride()",
    "lib.ones(0, 3, device=dev).stride()",
    "lib.ones((), device=dev).stride()",
    "lib.ones(4, 3, device=dev)[1:].stride()",
    "lib.ones(2, 3, device=dev).expand(4, 2, 3).stride()",
    "lib.ones(3, 1, device=dev).expand(3, 4).stride()",
    "lib.ones(2, 3, device=dev).is_contiguous()",
    "lib.ones(2, 3, device=dev).t().is_contiguous()",
    "lib.ones(2, 3, device=dev).t().contiguous().is_contiguous()",
    "lib.ones(2, 3, device=dev).t().contiguous().stride()",
    "lib.ones(2, 3, device=dev)[:, :1].is_contiguous()",
    "lib.ones(3, 1, device=dev).expand(3, 4).is_contiguous()",
    "lib.ones(1, 3, device=dev).t().is_contiguous()",
    "lib.ones(2, 3, device=dev).view(-1).is_contiguous()",
    "lib.ones(4, 3, device=dev)[1:].storage_offset()",
    "lib.ones(4, 3, device=dev)[1:, 2].storage_offset()",
    "lib.ones(4, 3, device=dev)[2].storage_offset()",
    "lib.ones(4, 3, device=dev).t()[1].storage_offset()",
    "lib.ones(4, 3, device=dev).storage_offset()",
    "lib.ones(4, 3, device=dev)[1:].contiguous().storage_offset()",
    "lib.ones(4, 3, device=dev)[1:].clone().storage_offset()",
    "lib.arange(10, device=dev)[2:].view(2, 4).storage_offset()",
    "lib.ones(4, 3, device=dev)[1:].clone().stride()",
]


@pytest.mark.parametrize("expr", LAYOUT_CASES)
def test_layout(expr, device):
    check(expr, device)


def test_contiguous_returns_self_when_already_contiguous(device):
    t = ember.ones(2, 3, device=device)
    assert t.contiguous() is t
    nc = t.t()
    c = nc.contiguous()
    assert c is not nc and c.is_contiguous() and c.equal(nc)


AUTOGRAD_FLAG_CASES = [
    "lib.ones(2, requires_grad=True, device=dev).clone()",
    "lib.ones(2, requires_grad=True, device=dev).clone().grad_fn.name()",
    "lib.ones(2, requires_grad=True, device=dev).detach()",
    "lib.ones(2, requires_grad=True, device=dev).clone().detach_()",
    "lib.ones(2, dtype=lib.int64, device=dev).requires_grad_()",
    "lib.ones(2, device=dev).requires_grad_()",
    "lib.ones(2, device=dev).requires_grad_().requires_grad_(False)",
    "(lib.ones(2, requires_grad=True, device=dev) * 2).requires_grad_(False)",
    "(lib.ones(2, requires_grad=True, device=dev) * 2).requires_grad_()",
    "lib.ones(2, requires_grad=True, device=dev).data",
    "lib.ones(2, requires_grad=True, device=dev)._version",
]


@pytest.mark.parametrize("expr", AUTOGRAD_FLAG_CASES)
def test_autograd_flags(expr, device):
    check(expr, device)


def test_requires_grad_setter():
    t = ember.ones(2)
    t.requires_grad = True
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError):
        ember.ones(2, dtype=ember.int32).requires_grad = True


def test_grad_is_populated_on_leaves():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    (y * y).sum().backward()
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = tx * 3
    (ty * ty).sum().backward()
    assert_same(x.grad, tx.grad, None)
    assert y.grad is None and x.grad.grad_fn is None


def test_detach_shares_memory_and_version_counter(device):
    x = ember.ones(3, requires_grad=True, device=device)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    v = x._version
    d.add_(1)
    assert x._version == d._version == v + 1
    assert x.detach().tolist() == [2.0, 2.0, 2.0]
    assert d.data_ptr() == x.data_ptr()


def test_detach_in_place():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    assert y.detach_() is y
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    tx = torch.ones(2, requires_grad=True)
    view = tx[:1]
    with pytest.raises(RuntimeError):
        view.detach_()
    with pytest.raises(RuntimeError):
        ember.ones(2, requires_grad=True)[:1].detach_()


IN_PLACE_CASES = [
    "lib.ones(2, device=dev).copy_(lib.tensor([3, 4], device=dev))",
    "lib.ones(2, 3, device=dev).copy_(lib.tensor([3., 4, 5], device=dev))",
    "lib.ones(2, 3, device=dev).copy_(lib.tensor([3, 4], device=dev))",
    "lib.ones(2, dtype=lib.int32, device=dev).copy_(lib.tensor([3.7, -4.2], device=dev))",
    "lib.ones(2, device=dev).copy_(lib.tensor([1., 2]))",
    "lib.ones(2, device=dev).fill_(2.5)",
    "lib.ones(2, dtype=lib.int64, device=dev).fill_(2.5)",
    "lib.ones(2, dtype=lib.bool, device=dev).fill_(0)",
    "lib.ones(2, device=dev).fill_(lib.tensor(3.0, device=dev))",
    "lib.ones(2, device=dev).fill_(lib.tensor([3.0, 1], device=dev))",
    "lib.ones(2, device=dev).zero_()",
    "lib.ones(2, 3, dtype=lib.int8, device=dev).t().zero_()",
    "lib.ones(2, requires_grad=True, device=dev).zero_()",
    "lib.ones(2, requires_grad=True, device=dev).fill_(2)",
]


@pytest.mark.parametrize("expr", IN_PLACE_CASES)
def test_in_place(expr, device):
    check(expr, device)


def test_in_place_returns_self_and_bumps_version(device):
    t = ember.zeros(3, device=device)
    for op in (lambda: t.fill_(1.0), lambda: t.zero_(),
               lambda: t.copy_(ember.ones(3, device=device))):
        before = t._version
        assert op() is t
        assert t._version == before + 1


def test_copy_into_a_view_writes_the_base(device):
    base = ember.zeros(2, 3, device=device)
    base[:, 1].copy_(ember.tensor([5.0, 6.0], device=device))
    base.t()[2].fill_(9.0)
    tb = torch.zeros(2, 3)
    tb[:, 1].copy_(torch.tensor([5.0, 6.0]))
    tb.t()[2].fill_(9.0)
    assert_same(base, tb, None)


CAST_CASES = [
    "lib.ones(2, device=dev).to(lib.float64)",
    "lib.ones(2, device=dev).to(dtype=lib.int32)",
    "lib.tensor([1.7, -2.7], device=dev).float()",
    "lib.tensor([1.7, -2.7], device=dev).half()",
    "lib.tensor([1.7, -2.7], device=dev).double()",
    "lib.tensor([1.7, -2.7], device=dev).long()",
    "lib.tensor([1.7, -2.7], device=dev).int()",
    "lib.tensor([1.7, 0], device=dev).bool()",
    "lib.tensor([1.7, 0], device=dev).bfloat16()",
    "lib.tensor([3, 300], device=dev).byte()",
    "lib.tensor([3, 300], device=dev).short()",
    "lib.tensor([3, 200], device=dev).char()",
    "lib.tensor([1.7, 0], device=dev).type()",
    "lib.tensor([1, 0], device=dev).type()",
    "lib.tensor([1, 0], dtype=lib.bool, device=dev).type()",
    "lib.tensor([1, 0], dtype=lib.float16, device=dev).type()",
    "lib.tensor([1, 0], dtype=lib.bfloat16, device=dev).type()",
    "lib.tensor([1, 0], dtype=lib.int8, device=dev).type()",
    "lib.tensor([1, 0], device=dev).type(lib.float64)",
    "lib.tensor([1, 0], device=dev).type('torch.NoSuchTensor')",
    "lib.ones(2, requires_grad=True, device=dev).to(lib.float64)",
    "lib.ones(2, requires_grad=True, device=dev).to(lib.float64).grad_fn.name()",
    "lib.ones(2, requires_grad=True, device=dev).to(lib.int64)",
    "lib.ones(2, requires_grad=True, device=dev).float()",
    "lib.ones(2, requires_grad=True, device=dev).double().is_leaf",
]


@pytest.mark.parametrize("expr", CAST_CASES)
def test_casts(expr, device):
    check(expr, device)


TO_CPU_CASES = [
    # a legacy type name without "cuda." names a CPU tensor type, so it moves the tensor there
    "lib.tensor([1.5, 0], device=dev).type(lib.__name__ + '.IntTensor')",
    "lib.tensor([1, 0], device=dev).type('torch.DoubleTensor')",
    "lib.ones(2, device=dev).to('cpu')",
    "lib.ones(2, device=dev).to('cpu', lib.float16)",
    "lib.ones(2, device=dev).to(lib.ones(1, dtype=lib.int8))",
    "lib.ones(2, device=dev).to(lib.device('cpu'))",
    "lib.ones(2, device=dev).to(device='cpu', dtype=lib.float64)",
    "lib.ones(2, device=dev).cpu()",
]


@pytest.mark.parametrize("expr", TO_CPU_CASES)
def test_to_cpu(expr, device):
    check(expr, device, result_device="cpu")


def test_to_returns_self_when_nothing_changes(device):
    t = ember.ones(2, device=device)
    assert t.to(ember.float32) is t
    assert t.to(t.device) is t
    assert t.float() is t
    copied = t.to(ember.float32, copy=True)
    assert copied is not t and copied.data_ptr() != t.data_ptr()


def test_to_moves_between_devices():
    t = ember.arange(4.0, requires_grad=True)
    moved = t.to("testdev")
    assert moved.device == ember.device("testdev:0") and moved.tolist() == t.tolist()
    back = moved.to("cpu")
    assert back.device == ember.device("cpu")
    back.sum().backward()
    assert t.grad.device == t.device and t.grad.tolist() == [1.0] * 4


def test_cast_gradient_flows_back_in_the_source_dtype():
    x = ember.ones(3, requires_grad=True)
    (x.double() * 2).sum().backward()
    tx = torch.ones(3, requires_grad=True)
    (tx.double() * 2).sum().backward()
    assert_same(x.grad, tx.grad, None)


COPY_CASES = [
    "lib.ones(2, requires_grad=True, device=dev).clone()",
    "lib.arange(6., device=dev).reshape(2, 3).t().clone()",
    "lib.arange(6, device=dev).clone()",
]


@pytest.mark.parametrize("expr", COPY_CASES)
def test_clone(expr, device):
    check(expr, device)


def test_clone_owns_its_memory(device):
    t = ember.ones(3, device=device)
    c = t.clone()
    c.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8",
                                   "uint8", "bool"])
def test_pickle_round_trip(dtype, device):
    t = ember.arange(6, device=device).reshape(2, 3).to(getattr(ember, dtype))
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype is t.dtype and back.device == t.device and back.equal(t)
    view = t.t()
    back = pickle.loads(pickle.dumps(view))
    assert back.equal(view) and back.shape == (3, 2)


def test_pickle_and_deepcopy_keep_requires_grad():
    t = ember.tensor([1.0, 2.0], requires_grad=True)
    t.grad = ember.tensor([0.5, 0.5])
    back = pickle.loads(pickle.dumps(t))
    assert back.requires_grad and back.is_leaf and back.equal(t.detach())
    d = copy.deepcopy(t)
    assert d.requires_grad and d.is_leaf and d.equal(t.detach()) and d.data_ptr() != t.data_ptr()
    assert d.grad.equal(t.grad) and d.grad.data_ptr() != t.grad.data_ptr()
    nested = copy.deepcopy({"a": t, "b": [t]})
    assert nested["a"] is nested["b"][0]
    with pytest.raises(RuntimeError):
        copy.deepcopy(t * 2)
    with pytest.raises(RuntimeError):
        copy.deepcopy(torch.ones(1, requires_grad=True) * 2)


def test_shallow_copy_shares_memory():
    for lib in (torch, ember):
        t = lib.ones(2, requires_grad=True)
        c = copy.copy(t)
        assert c is not t and c.requires_grad and c.is_leaf
        with lib.no_grad():
            c.add_(1)
        assert t.tolist() == [2.0, 2.0]


def test_hash_and_identity():
    a = ember.ones(2)
    b = ember.ones(2)
    assert len({a, b, a}) == 2
    assert {a: 1}[a] == 1


# ---- metadata methods and their torch.* spellings ------------------------------------------------

def test_predicates_and_metadata():
    for lib in (torch, ember):
        x = lib.ones(2, 3)
        assert lib.is_same_size(x, lib.zeros(2, 3)) and not x.is_same_size(lib.zeros(3, 2))
        assert lib.is_signed(x) and not lib.ones(1, dtype=lib.uint8).is_signed()
        assert lib.get_device(x) == -1 and x.get_device() == -1
        assert not lib.is_inference(x) and not x.is_inference()
        assert not lib.is_storage(x)
        assert x.output_nr == 0 and not x.is_meta and not x.is_mps
        assert x.const_data_ptr() == x.data_ptr()
        assert x.name is None
    assert ember.ones(2).layout is ember.strided and repr(ember.strided) == "ember.strided"
    assert ember.ones(1, device="testdev").get_device() == 0
    a, b = ember.ones(4, requires_grad=True).split(2)
    assert (a.output_nr, b.output_nr) == (0, 1)


def test_volatile_and_reinforce():
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert ember.ones(1).volatile is False
    compare_error(lambda lib: lib.ones(1).reinforce(1.0), "reinforce() was removed.")


def test_detach_function():
    x = ember.ones(2, requires_grad=True)
    assert not ember.detach(x * 2).requires_grad
