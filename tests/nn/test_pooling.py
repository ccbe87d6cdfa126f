"""Pooling against PyTorch: max (with indices, ceil_mode, dilation, padding), average
(ceil_mode, count_include_pad, divisor_override), adaptive, Lp pooling and max unpooling;
outputs, indices, input gradients, float64 gradcheck/gradgradcheck, the layers and errors.
Ember runs on each test device ("cpu" and "testdev"), torch on the CPU."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

rng = np.random.default_rng(0)


def _array(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _tensor(lib, array, device, **kwargs):
    return lib.tensor(array, device=device if lib is ember else "cpu", **kwargs)


def _assert_on(device, results):
    """Every Ember tensor among ``results`` lives on ``device``."""
    if isinstance(results, (tuple, list)):
        for r in results:
            _assert_on(device, r)
    elif isinstance(results, ember.Tensor):
        assert results.device.type == device, f"result on {results.device}, expected {device}"


def _run(lib, fn, arrays, device="cpu"):
    tensors = [_tensor(lib, a, device, requires_grad=True) for a in arrays]
    result = fn(lib, *tensors)
    out = result[0] if isinstance(result, tuple) else result
    upstream = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(arrays[0].dtype)
    out.backward(_tensor(lib, upstream, device))
    results = [result] + [t.grad for t in tensors]
    if lib is ember:
        _assert_on(device, results)
    return results


def _compare(fn, *shapes, dtype=np.float64, device="cpu", **tol):
    arrays = [_array(*s, dtype=dtype) for s in shapes]
    assert_same(_run(torch, fn, arrays), _run(ember, fn, arrays, device), **tol)


MAX_POOL_CASES = [
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    (1, (3, 8), dict(kernel_size=2, ceil_mode=True, dilation=2, padding=1)),
    (2, (2, 3, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 8, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (2, 3, 6, 7), dict(kernel_size=(2, 3), stride=1, padding=1, dilation=2)),
    (2, (3, 5, 5), dict(kernel_size=2)),
    (3, (1, 2, 4, 5, 6), dict(kernel_size=2, stride=(1, 2, 2), ceil_mode=True)),
    (3, (2, 4, 5, 5), dict(kernel_size=3, stride=2, padding=1)),
]


@pytest.mark.parametrize("dims, shape, kwargs", MAX_POOL_CASES)
def test_max_pool_matches_torch(dims, shape, kwargs, device):
    def fn(lib, x):
        return getattr(lib.nn.functional, f"max_pool{dims}d")(x, return_indices=True, **kwargs)
    _compare(fn, shape, device=device)


def test_max_pool_with_ties_nan_and_float32(device):
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 2] = np.nan
    for arrays in ([x], [np.round(_array(2, 2, 6, 6) * 2) / 2]):
        fn = lambda lib, t: lib.nn.functional.max_pool2d(t, 2, return_indices=True)  # noqa: E731
        assert_same(_run(torch, fn, arrays), _run(ember, fn, arrays, device))
    _compare(lambda lib, t: lib.nn.functional.max_pool2d(t, 3, 1, 1), (2, 3, 5, 5),
             dtype=np.float32, device=device)


AVG_POOL_CASES = [
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    (1, (3, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                     count_include_pad=False)),
    (2, (2, 3, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 8, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (2, 3, 8, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                           count_include_pad=False)),
    (2, (2, 3, 8, 7), dict(kernel_size=(3, 2), stride=(2, 1), padding=1, divisor_override=5)),
    (3, (2, 3, 5, 5, 5), dict(kernel_size=2, ceil_mode=True)),
    (3, (3, 4, 5, 6), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
]


@pytest.mark.parametrize("dims, shape, kwargs", AVG_POOL_CASES)
def test_avg_pool_matches_torch(dims, shape, kwargs, device):
    _compare(lambda lib, x: getattr(lib.nn.functional, f"avg_pool{dims}d")(x, **kwargs), shape,
             device=device)


@pytest.mark.parametrize("dims, shape, size", [
    (1, (2, 3, 7), 4), (1, (3, 10), 3), (2, (2, 3, 7, 9), (3, 4)), (2, (2, 3, 6, 6), 3),
    (2, (3, 5, 7), (None, 2)), (3, (2, 3, 7, 9, 5), (3, None, 2)), (3, (2, 4, 4, 4), 1),
])
def test_adaptive_pools_match_torch(dims, shape, size, device):
    _compare(lambda lib, x: getattr(lib.nn.functional, f"adaptive_avg_pool{dims}d")(x, size),
             shape, device=device)
    _compare(lambda lib, x: getattr(lib.nn.functional, f"adaptive_max_pool{dims}d")(
        x, size, return_indices=True), shape, device=device)


def test_lp_pool_and_max_unpool_match_torch(device):
    _compare(lambda lib, x: lib.nn.functional.lp_pool2d(x.abs() + 0.1, 2, 3, 2), (2, 3, 7, 7),
             device=device)
    _compare(lambda lib, x: lib.nn.functional.lp_pool1d(x.abs() + 0.1, 3, 2), (2, 3, 7),
             device=device)
    _compare(lambda lib, x: lib.nn.functional.lp_pool3d(x.abs() + 0.1, 1.5, 2), (1, 2, 4, 4, 4),
             device=device)

    def unpool(dims, **kwargs):
        def fn(lib, x):
            F = lib.nn.functional
            out, indices = getattr(F, f"max_pool{dims}d")(x, 2, return_indices=True)
            return getattr(F, f"max_unpool{dims}d")(out, indices, 2, **kwargs)
        return fn
    _compare(unpool(2), (2, 3, 6, 6), device=device)
    _compare(unpool(2, output_size=(7, 7)), (2, 3, 7, 7), device=device)
    _compare(unpool(1), (2, 3, 8), device=device)
    _compare(unpool(3), (1, 2, 4, 4, 4), device=device)


def test_pool_gradcheck_and_gradgradcheck(device):
    x = ember.tensor(_array(1, 2, 5, 6), requires_grad=True, device=device)
    F = ember.nn.functional
    for fn in (lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True),
               lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False),
               lambda t: F.adaptive_avg_pool2d(t, (2, 4)),
               lambda t: F.adaptive_max_pool2d(t, (4, 4))):
        assert ember.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-6)
        assert ember.autograd.gradgradcheck(fn, (x,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, args, kwargs, shape", [
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("MaxPool2d", (3,), {"stride": 2, "ceil_mode": True}, (2, 3, 8, 8)),
    ("MaxPool3d", (2,), {}, (1, 2, 4, 4, 4)),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, (2, 3, 7, 7)),
    ("AvgPool3d", (2,), {"divisor_override": 3}, (1, 2, 4, 4, 4)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 3, 7)),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 3, 7, 7)),
    ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 5, 4, 4)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 7)),
    ("AdaptiveMaxPool2d", ((2, 3),), {}, (2, 3, 7, 7)),
    ("AdaptiveMaxPool3d", (2,), {}, (1, 2, 5, 4, 4)),
    ("LPPool1d", (2, 3), {}, (2, 3, 7)),
    ("LPPool2d", (2, 2), {"stride": 1}, (2, 3, 5, 5)),
])
def test_pool_modules_match_torch(name, args, kwargs, shape, device):
    torch_module = getattr(torch.nn, name)(*args, **kwargs)
    ember_module = getattr(ember.nn, name)(*args, **kwargs).to(device)
    assert repr(ember_module) == repr(torch_module)
    shift = 0.1 if name.startswith("LP") else 0.0
    arrays = [np.abs(_array(*shape, dtype=np.float32)) + shift if shift else
              _array(*shape, dtype=np.float32)]
    results = [_run(lib, lambda lib_, x, m=module: m(x), arrays, device)
               for lib, module in ((torch, torch_module), (ember, ember_module))]
    assert_same(*results, rtol=1e-5, atol=1e-6)
    torch_module.eval()
    ember_module.eval()
    evaluated = ember_module(ember.tensor(arrays[0], device=device))
    _assert_on(device, evaluated)
    assert_same(torch_module(torch.tensor(arrays[0])), evaluated, rtol=1e-5, atol=1e-6)


def test_max_unpool_module_matches_torch(device):
    x = _array(2, 3, 6, 6, dtype=np.float32)
    results = []
    for lib in (torch, ember):
        out, indices = lib.nn.MaxPool2d(2, return_indices=True)(_tensor(lib, x, device))
        unpool = lib.nn.MaxUnpool2d(2)
        results.append((repr(unpool), unpool(out, indices), unpool(out, indices, (7, 7))))
    _assert_on(device, results[1])
    assert_same(*results)


@pytest.mark.parametrize("fn", [
    lambda lib, d: lib.nn.functional.max_pool2d(lib.ones(2, 3, 5, 5, device=d), 3, padding=2),
    lambda lib, d: lib.nn.functional.max_pool2d(lib.ones(2, 3, 1, 1, device=d), 3),
    lambda lib, d: lib.nn.functional.max_pool2d(lib.ones(5, 5, device=d), 3),
    lambda lib, d: lib.nn.functional.max_pool2d(lib.ones(2, 3, 5, 5, device=d), 3, stride=0),
    lambda lib, d: lib.nn.functional.max_pool1d(lib.ones(5, device=d), 3),
    lambda lib, d: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 5, 5, device=d), 3, padding=2),
    lambda lib, d: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 1, 1, device=d), 3),
    lambda lib, d: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 5, 5, device=d), 2,
                                                divisor_override=0),
    lambda lib, d: lib.nn.functional.adaptive_avg_pool2d(lib.ones(5, device=d), 3),
    lambda lib, d: lib.nn.functional.adaptive_max_pool2d(lib.ones(5, device=d), 3),
    lambda lib, d: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2, device=d),
                                               lib.tensor([[[[0, 1], [2, 30]]]], device=d), 2),
])
def test_pool_errors_match_torch(fn, device):
    compare_error(lambda lib: fn(lib, device if lib is ember else "cpu"))
