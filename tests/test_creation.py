"""Tensor factories against PyTorch: dtype inference, values, shapes, keywords, memory sharing
and the exceptions PyTorch raises. Each case is one expression evaluated with ``lib=torch`` and
``lib=ember``."""
import numpy as np
import pytest
import torch

import ember
from opinfo.core import assert_same
from torch_compare import compare, compare_error


def _eval(expr, lib, device="cpu"):
    dev = device if lib is ember else "cpu"
    return eval(expr, {"lib": lib, "np": np, "dev": dev})


def check(expr, device="cpu", tol=None):
    """``expr`` gives the same tensor (or raises the same exception type) with both libraries."""
    try:
        expected = _eval(expr, torch)
    except Exception as exc:
        with pytest.raises(type(exc)):
            _eval(expr, ember, device)
        return
    got = _eval(expr, ember, device)
    assert_same(got, expected, None, tol)
    assert got.requires_grad == expected.requires_grad
    assert got.device.type == device


TENSOR_CASES = [
    # dtype inference from Python data
    "lib.tensor([1, 2, 3], device=dev)",
    "lib.tensor([1.0, 2], device=dev)",
    "lib.tensor([True, False], device=dev)",
    "lib.tensor([True, 2], device=dev)",
    "lib.tensor([[1, 2], [3, 4.5]], device=dev)",
    "lib.tensor([[[1], [2]], [[3], [4]]], device=dev)",
    "lib.tensor((1, 2.5), device=dev)",
    "lib.tensor(range(4), device=dev)",
    "lib.tensor([1, 2.5 + 1j], device=dev)",
    # 0-d and empty
    "lib.tensor(3, device=dev)",
    "lib.tensor(3.5, device=dev)",
    "lib.tensor(True, device=dev)",
    "lib.tensor([], device=dev)",
    "lib.tensor([[], []], device=dev)",
    "lib.tensor([], dtype=lib.int64, device=dev)",
    # NumPy input keeps its dtype (float64 stays float64); NumPy scalars inside lists too
    "lib.tensor(np.array([1.5, 2.5]), device=dev)",
    "lib.tensor(np.array([1, 2], dtype=np.int32), device=dev)",
    "lib.tensor(np.array([[1, 2], [3, 4]], dtype=np.uint8), device=dev)",
    "lib.tensor(np.zeros((2, 0)), device=dev)",
    "lib.tensor(np.array(5), device=dev)",
    "lib.tensor(np.float64(2.5), device=dev)",
    "lib.tensor(np.float32(2.5), device=dev)",
    "lib.tensor([np.float64(2.5), 1], device=dev)",
    "lib.tensor([1, np.float32(2)], device=dev)",
    "lib.tensor([np.int32(2), np.int16(1)], device=dev)",
    "lib.tensor([np.int32(2), 1], device=dev)",
    "lib.tensor([np.array([1., 2]), [3, 4]], device=dev)",
    "lib.tensor(np.array([1.5, 2.5])[::2], device=dev)",
    # tensors as elements
    "lib.tensor([lib.tensor(1.), lib.tensor(2.)], device=dev)",
    "lib.tensor([lib.tensor(1, dtype=lib.int32), 2], device=dev)",
    "lib.tensor(lib.tensor([1.5, 2.5]), device=dev)",
    # explicit dtype
    "lib.tensor([1, 2], dtype=lib.float16, device=dev)",
    "lib.tensor([1.7, -2.7], dtype=lib.int64, device=dev)",
    "lib.tensor([0.5, 0], dtype=lib.bool, device=dev)",
    "lib.tensor([1.1, 2.3], dtype=lib.bfloat16, device=dev)",
    "lib.tensor(np.array([1.5, 2.5]), dtype=lib.float32, device=dev)",
    "lib.tensor(2**63 - 1, device=dev)",
    "lib.tensor(-2**63, device=dev)",
    # requires_grad
    "lib.tensor([1.5, 2], requires_grad=True, device=dev)",
    "lib.tensor(2.0, dtype=lib.float64, requires_grad=True, device=dev)",
    # refused input
    "lib.tensor([1, 2], requires_grad=True, device=dev)",
    "lib.tensor([[1, 2], [3]], device=dev)",
    "lib.tensor([[1, 2], [3, 4, 5]], device=dev)",
    "lib.tensor([[[1], [2]], [[3], [4, 5]]], device=dev)",
    "lib.tensor([[1, 2], 3], device=dev)",
    "lib.tensor([lib.tensor([1, 2]), lib.tensor([3, 4])], device=dev)",
    "lib.tensor(2**63, device=dev)",
    "lib.tensor([2**64], device=dev)",
    "lib.tensor([-1, 256], dtype=lib.uint8, device=dev)",
    "lib.tensor([300], dtype=lib.int8, device=dev)",
    "lib.tensor('abc', device=dev)",
    "lib.tensor(None, device=dev)",
    "lib.tensor({1, 2}, device=dev)",
    "lib.tensor(np.array(['a']), device=dev)",
]


@pytest.mark.parametrize("expr", TENSOR_CASES)
def test_tensor(expr, device):
    check(expr, device)


def test_tensor_copies_its_input():
    arr = np.array([1.0, 2.0])
    t = ember.tensor(arr)
    arr[0] = 5.0
    assert t[0].item() == 1.0
    src = ember.ones(2)
    t = ember.tensor(src)
    src.add_(1)
    assert t.tolist() == [1.0, 1.0]


def test_tensor_respects_default_dtype():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        check("lib.tensor([1.5, 2])")
        check("lib.tensor([1 + 2j])")
        check("lib.zeros(2)")
        check("lib.arange(0.5, 3)")
        check("lib.tensor([])")
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


FACTORY_CASES = [
    "lib.zeros(2, 3, device=dev)",
    "lib.zeros((2, 3), device=dev)",
    "lib.zeros([2, 3], dtype=lib.int32, device=dev)",
    "lib.zeros((), device=dev)",
    "lib.zeros(0, device=dev)",
    "lib.zeros(lib.Size([2, 1]), device=dev)",
    "lib.zeros(-1, device=dev)",
    "lib.zeros(2.5, device=dev)",
    "lib.ones(2, dtype=lib.bool, device=dev)",
    "lib.ones(2, 3, dtype=lib.float16, device=dev)",
    "lib.ones(2, requires_grad=True, device=dev)",
    "lib.ones(2, dtype=lib.int64, requires_grad=True, device=dev)",
    "lib.full((2, 2), 3, device=dev)",
    "lib.full((2, 2), 3.5, device=dev)",
    "lib.full((2, 2), True, device=dev)",
    "lib.full((2,), 1 + 1j, device=dev)",
    "lib.full((2,), 3, dtype=lib.float32, device=dev)",
    "lib.full((2,), 3.7, dtype=lib.int32, device=dev)",
    "lib.full([], 2, device=dev)",
    "lib.full((2,), lib.tensor(2.5), device=dev)",
    "lib.full((2,), 1.5, requires_grad=True, device=dev)",
    "lib.full(2, 2, device=dev)",
    "lib.zeros_like(lib.ones(2, 3, dtype=lib.int32), device=dev)",
    "lib.ones_like(lib.ones(2, 3), dtype=lib.float64, device=dev)",
    "lib.ones_like(lib.ones(2, requires_grad=True), device=dev)",
    "lib.zeros_like(lib.ones(2), requires_grad=True, device=dev)",
    "lib.full_like(lib.ones(2, 3, dtype=lib.int32), 2.7, device=dev)",
    "lib.full_like(lib.ones(2), 7, device=dev)",
    "lib.full_like(lib.ones(2), 7, dtype=lib.int8, device=dev)",
    "lib.eye(3, device=dev)",
    "lib.eye(2, 3, device=dev)",
    "lib.eye(3, 2, dtype=lib.int32, device=dev)",
    "lib.eye(3, dtype=lib.bool, device=dev)",
    "lib.eye(0, device=dev)",
    "lib.eye(2, requires_grad=True, device=dev)",
    "lib.eye(-1, device=dev)",
    "lib.scalar_tensor(3, device=dev)",
]


@pytest.mark.parametrize("expr", FACTORY_CASES)
def test_factories(expr, device):
    check(expr, device)


@pytest.mark.parametrize("name", ["empty", "empty_like"])
def test_empty_shape_and_dtype(name, device):
    for lib in (torch, ember):
        dev = device if lib is ember else "cpu"
        if name == "empty":
            out = lib.empty(2, 3, dtype=lib.int16, device=dev)
        else:
            out = lib.empty_like(lib.ones(2, 3, dtype=lib.int16), device=dev)
        assert tuple(out.shape) == (2, 3) and str(out.dtype).endswith("int16")
    assert ember.empty((2, 0), device=device).shape == (2, 0)
    assert ember.empty(2, requires_grad=True).requires_grad


RANGE_CASES = [
    "lib.arange(5, device=dev)",
    "lib.arange(1, 4, device=dev)",
    "lib.arange(1, 2.5, 0.5, device=dev)",
    "lib.arange(5, 0, -1, device=dev)",
    "lib.arange(10, 0, -3, device=dev)",
    "lib.arange(5.0, device=dev)",
    "lib.arange(0, 1, 0.1, device=dev)",
    "lib.arange(-1.5, 1.5, 0.3, device=dev)",
    "lib.arange(1, 10, 3, dtype=lib.float32, device=dev)",
    "lib.arange(0, 5, dtype=lib.float64, device=dev)",
    "lib.arange(0, 1, 0.1, dtype=lib.float16, device=dev)",
    "lib.arange(0, 5, 1.5, dtype=lib.bfloat16, device=dev)",
    "lib.arange(0, 2.5, dtype=lib.int64, device=dev)",
    "lib.arange(0, 2.5, dtype=lib.int32, device=dev)",
    "lib.arange(-2.5, 2.5, 1.5, dtype=lib.int64, device=dev)",
    "lib.arange(1, 2, 0.3, dtype=lib.int32, device=dev)",
    "lib.arange(0.5, 4, dtype=lib.uint8, device=dev)",
    "lib.arange(lib.tensor(3), device=dev)",
    "lib.arange(True, device=dev)",
    "lib.arange(0, 0, device=dev)",
    "lib.arange(0., 3, requires_grad=True, device=dev)",
    "lib.arange(0, 3, requires_grad=True, device=dev)",
    "lib.arange(0, 5, 0, device=dev)",
    "lib.arange(5, 0, device=dev)",
    "lib.arange(0, 5, -1, device=dev)",
    "lib.arange(float('inf'), device=dev)",
    "lib.arange(1, 2, 0.3, dtype=lib.int64, device=dev)",
    "lib.linspace(0, 1, 5, device=dev)",
    "lib.linspace(-3, 7, 11, device=dev)",
    "lib.linspace(1, 0, 6, device=dev)",
    "lib.linspace(0, 1, 1, device=dev)",
    "lib.linspace(0, 1, 0, device=dev)",
    "lib.linspace(0, 10, 4, dtype=lib.int64, device=dev)",
    "lib.linspace(0, 1, 7, dtype=lib.float64, device=dev)",
    "lib.linspace(lib.tensor(0.), lib.tensor(2.), 5, device=dev)",
    "lib.linspace(0, 1, 5, requires_grad=True, device=dev)",
    "lib.linspace(0, 1, -1, device=dev)",
    "lib.logspace(0, 2, 3, device=dev)",
    "lib.logspace(0, 3, 4, base=2, device=dev)",
    "lib.logspace(-1, 1, 5, dtype=lib.float64, device=dev)",
    "lib.logspace(0, 2, 3, dtype=lib.int64, device=dev)",
]


@pytest.mark.parametrize("expr", RANGE_CASES)
def test_ranges(expr, device):
    check(expr, device)


NEW_CASES = [
    "lib.ones(2, 3, dtype=lib.int32, device=dev).new_zeros(2)",
    "lib.ones(2, 3, dtype=lib.int32, device=dev).new_zeros((2, 2))",
    "lib.ones(2, 3, device=dev).new_ones(3, dtype=lib.float64)",
    "lib.ones(2, 3, device=dev).new_ones(2, requires_grad=True)",
    "lib.ones(2, 3, dtype=lib.float16, device=dev).new_full((2,), 3)",
    "lib.ones(2, 3, dtype=lib.int32, device=dev).new_full((2,), 3.7)",
    "lib.ones(2, 3, device=dev).new_tensor([1, 2])",
    "lib.ones(2, 3, dtype=lib.int32, device=dev).new_tensor([1.5, 2])",
    "lib.ones(2, 3, device=dev).new_tensor([1, 2], dtype=lib.int64)",
    "lib.ones(2, 3, device=dev).new_tensor([1., 2], requires_grad=True)",
    "lib.ones(2, 3, device=dev).new_zeros(2, requires_grad=True)",
]


@pytest.mark.parametrize("expr", NEW_CASES)
def test_new_methods(expr, device):
    check(expr, device)


def test_new_methods_inherit_device(device):
    base = ember.ones(2, dtype=ember.float64, device=device)
    for out in (base.new_zeros(3), base.new_ones(3), base.new_full((3,), 2.0), base.new_empty(3),
                base.new_tensor([1.0, 2.0])):
        assert out.device == base.device and out.dtype is ember.float64 and not out.requires_grad


def test_as_tensor_shares_numpy_memory():
    arr = np.array([1.0, 2.0, 3.0])
    t = ember.as_tensor(arr)
    assert t.dtype is ember.float64
    arr[0] = 10.0
    assert t[0].item() == 10.0
    t[1] = 20.0
    assert arr[1] == 20.0
    # a different dtype must copy
    converted = ember.as_tensor(arr, dtype=ember.float32)
    arr[2] = 30.0
    assert converted[2].item() == 3.0
    assert_same(converted, torch.as_tensor(np.array([10.0, 20.0, 3.0]), dtype=torch.float32), None)


def test_as_tensor_of_a_tensor():
    src = ember.ones(3)
    assert ember.as_tensor(src) is src
    assert ember.as_tensor(src, dtype=ember.float32) is src
    converted = ember.as_tensor(src, dtype=ember.int64)
    assert converted.dtype is ember.int64
    check("lib.as_tensor([1, 2.5])")
    check("lib.as_tensor(np.array([1, 2]), dtype=lib.float32)")


def test_as_tensor_to_another_device_copies(device):
    arr = np.array([1.0, 2.0])
    t = ember.as_tensor(arr, device=device)
    assert t.device.type == device
    if device != "cpu":
        arr[0] = 5.0
        assert t[0].item() == 1.0


def test_from_numpy_shares_memory_both_ways():
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ember.from_numpy(arr)
    assert t.dtype is ember.int32 and t.shape == (2, 3)
    arr[0, 0] = 100
    assert t[0, 0].item() == 100
    t[1, 2] = -7
    assert arr[1, 2] == -7
    t.add_(1)
    assert arr[0, 0] == 101
    assert np.shares_memory(t.numpy(), arr)


def test_from_numpy_keeps_strides_and_dtypes():
    arr = np.arange(12.0).reshape(3, 4)[:, ::2]
    t = ember.from_numpy(arr)
    expected = torch.from_numpy(arr)
    assert t.stride() == expected.stride()
    assert_same(t, expected, None)
    for dtype in (np.float16, np.float32, np.int8, np.uint8, np.int16, np.int64, np.bool_,
                  np.complex64):
        arr = np.zeros(3, dtype=dtype)
        assert str(ember.from_numpy(arr).dtype)[6:] == str(torch.from_numpy(arr).dtype)[6:]


def test_from_numpy_rejects_non_arrays():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.from_numpy([1, 2])


def test_factory_keywords_place_tensors(device):
    for make in (lambda: ember.zeros(2, device=device), lambda: ember.ones(2, device=device),
                 lambda: ember.full((2,), 1.0, device=device), lambda: ember.eye(2, device=device),
                 lambda: ember.arange(3, device=device),
                 lambda: ember.linspace(0, 1, 3, device=device),
                 lambda: ember.tensor([1, 2], device=device),
                 lambda: ember.empty(2, device=device)):
        out = make()
        assert out.device == ember.device(device if device == "cpu" else f"{device}:0")
    assert ember.zeros(2, device=ember.device("cpu")).device == ember.device("cpu")
    assert ember.zeros(2, device="cpu:0").device == ember.device("cpu")


# ---- vander, tril_indices, triu_indices beyond the op table --------------------------------------

def test_vander_gradient_matches_powers():
    """PyTorch's own vander backward fails; the gradient equals that of stacked powers."""
    x = ember.tensor([0.5, -1.5, 2.0, 0.0], dtype=ember.float64, requires_grad=True)
    ember.vander(x, 4).sum().backward()
    t = torch.tensor([0.5, -1.5, 2.0, 0.0], dtype=torch.float64, requires_grad=True)
    torch.stack([t ** k for k in (3, 2, 1, 0)], 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_tril_triu_indices_match_numpy_order():
    compare(lambda lib: lib.tril_indices(4, 5, -1))
    compare(lambda lib: lib.triu_indices(5, 3, 1, dtype=lib.int32))


@pytest.mark.parametrize("fn", [
    lambda lib: lib.vander(lib.ones(2, 2)),
    lambda lib: lib.vander(lib.ones(2), -1),
    lambda lib: lib.tril_indices(-1, 3),
])
def test_errors_match_torch(fn):
    compare_error(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.triu_indices(3, -2),
])
def test_more_errors_match_torch(fn):
    compare_error(fn)


# ---- binomial, strided and permuted factories, frombuffer, type_as -------------------------------

def test_binomial_shape_dtype_and_moments():
    count = ember.full((20000,), 10.0)
    prob = ember.full((20000,), 0.3)
    draws = ember.binomial(count, prob)
    assert draws.dtype is ember.float32 and tuple(draws.shape) == (20000,)
    values = draws.numpy()
    assert np.all(values == np.round(values)) and values.min() >= 0 and values.max() <= 10
    assert abs(values.mean() - 3.0) < 0.05 and abs(values.var() - 2.1) < 0.1
    ember.manual_seed(3)
    first = ember.binomial(count[:5], prob[:5])
    ember.manual_seed(3)
    assert ember.equal(first, ember.binomial(count[:5], prob[:5]))
    edges = ember.binomial(ember.tensor([0.0, 5.0, 7.0]), ember.tensor([0.5, 0.0, 1.0]))
    assert edges.tolist() == [0.0, 0.0, 7.0]


def test_binomial_errors():
    compare_error(lambda lib: lib.binomial(lib.ones(2, dtype=lib.int64), lib.ones(2, dtype=lib.int64)))
    compare_error(lambda lib: lib.binomial(lib.ones(2), lib.ones(2, dtype=lib.float64)))


@pytest.mark.parametrize("size,stride", [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((4,), (2,)),
                                         ((2, 0, 3), (3, 3, 1)), ((), ()), ((3, 2), (0, 1))])
def test_empty_strided(size, stride):
    e = ember.empty_strided(size, stride, dtype=ember.float64)
    t = torch.empty_strided(size, stride, dtype=torch.float64)
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert e.dtype is ember.float64
    n = ember.zeros(2).new_empty_strided(size, stride)
    assert n.stride() == t.stride() and n.dtype is ember.float32


def test_empty_strided_writes_land_in_storage():
    e = ember.empty_strided((2, 3), (1, 2))
    e.copy_(ember.arange(6.0).reshape(2, 3))
    assert e.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert not e.is_contiguous() and e.t().is_contiguous()


def test_empty_strided_errors():
    compare_error(lambda lib: lib.empty_strided((2, 3), (1, 2, 3)))


@pytest.mark.parametrize("size,layout", [((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 0, 1)),
                                         ((5,), (0,))])
def test_empty_permuted(size, layout):
    e = ember.empty_permuted(size, layout)
    t = torch.empty_permuted(size, layout)
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()


def test_empty_permuted_errors():
    compare_error(lambda lib: lib.empty_permuted((2, 3), (0,)))
    compare_error(lambda lib: lib.empty_permuted((2, 3), (0, 2)))
    compare_error(lambda lib: lib.empty_permuted((2, 3), (0, 0)))


def test_frombuffer_shares_memory():
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    compare(lambda lib: lib.frombuffer(bytearray(buf), dtype=lib.float32, count=3, offset=4))
    e = ember.frombuffer(buf, dtype=ember.float32)
    e[0] = 10.0
    assert np.frombuffer(buf, dtype=np.float32)[0] == 10.0
    with pytest.warns(UserWarning, match="not writable"):
        ember.frombuffer(b"1234", dtype=ember.int8)
    compare_error(lambda lib: lib.frombuffer(bytearray(b"12345"), dtype=lib.int32))


def test_type_as_and_as_subclass():
    compare(lambda lib: lib.arange(3.5).type_as(lib.ones(1, dtype=lib.int32)))

    class Sub(ember.Tensor):
        pass
    x = ember.ones(2, requires_grad=True)
    y = (x * 2).as_subclass(Sub)
    assert type(y) is Sub and y.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_linspace_bit_for_bit_as_torch(dtype):
    # torch computes the ends and the step in the output dtype and fills each half from its
    # own end (float32 points one fused multiply-add each); observers' histogram bins rely on it
    rng = np.random.default_rng(3)
    cases = [(0.0, 1.0, 11), (-3.7, 2.2, 100), (0.1, 0.9, 7), (5.0, -2.0, 33), (2.0, 2.0, 5)]
    cases += [(float(rng.normal() * 10), float(rng.normal() * 10), int(rng.integers(2, 2000)))
              for _ in range(40)]
    for start, end, steps in cases:
        expected = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).float().numpy()
        got = ember.linspace(start, end, steps, dtype=getattr(ember, dtype)).float().numpy()
        np.testing.assert_array_equal(got, expected, err_msg=str((start, end, steps)))


def test_linspace_integer_dtype_truncates_the_ends_first():
    for start, end, steps in [(-3.7, 2.2, 100), (0.5, 9.7, 7), (10, -3, 20), (-5.5, -1.2, 9)]:
        expected = torch.linspace(start, end, steps, dtype=torch.int64).numpy()
        got = ember.linspace(start, end, steps, dtype=ember.int64).numpy()
        np.testing.assert_array_equal(got, expected)
