"""Cumulative and windowed ops beyond the op table: ties and NaN in cummax/cummin, memory
sharing of unfold/as_strided views, numerical range of logcumsumexp, the two cdist paths,
error messages, and laws (hypothesis)."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from torch_compare import compare, compare_error, assert_same


def _pair(values, dtype="float32"):
    arr = np.asarray(values)
    return torch.tensor(arr).to(getattr(torch, dtype)), ember.tensor(arr).to(getattr(ember, dtype))


# ---- cummax / cummin -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cumulative_extremum_ties_and_nan(name):
    values = [1.0, 3.0, 3.0, 2.0, math.nan, 5.0, math.nan, -1.0, -1.0]
    t, e = _pair(values)
    t_out, e_out = getattr(torch, name)(t, 0), getattr(ember, name)(e, 0)
    np.testing.assert_array_equal(e_out.indices.numpy(), t_out.indices.numpy())
    np.testing.assert_array_equal(e_out.values.numpy(), t_out.values.numpy())
    assert type(e_out).__name__ == name


@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8"])
def test_cumulative_extremum_integer_ties(dtype):
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 3, size=(4, 6))
    t, e = _pair(arr, dtype)
    for name in ("cummax", "cummin"):
        for dim in (0, 1):
            t_out, e_out = getattr(t, name)(dim), getattr(e, name)(dim)
            np.testing.assert_array_equal(e_out[1].numpy(), t_out[1].numpy())
            np.testing.assert_array_equal(e_out[0].numpy(), t_out[0].numpy())


def test_cummax_gradient_goes_to_the_recorded_index():
    values = [2.0, 1.0, 2.0, 0.5, 3.0]
    t, e = _pair(values, "float64")
    t.requires_grad_(True)
    e.requires_grad_(True)
    torch.cummax(t, 0).values.sum().backward()
    ember.cummax(e, 0).values.sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_cummax_errors():
    compare_error(lambda lib: lib.cummax(lib.ones(2, 3), 2))


# ---- logcumsumexp ----------------------------------------------------------------------------

def test_logcumsumexp_large_and_infinite_values():
    values = [1000.0, 1000.0, -math.inf, 0.0, 2000.0, -1000.0]
    t, e = _pair(values, "float64")
    assert_same(torch.logcumsumexp(t, 0), ember.logcumsumexp(e, 0), rtol=1e-12, atol=0)
    t.requires_grad_(True)
    e.requires_grad_(True)
    g = [0.5, -2.0, 1.0, 3.0, -1.0, 0.25]
    torch.logcumsumexp(t, 0).backward(torch.tensor(g, dtype=torch.float64))
    ember.logcumsumexp(e, 0).backward(ember.tensor(g, dtype=ember.float64))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_logcumsumexp_int_refused():
    compare_error(lambda lib: lib.logcumsumexp(lib.tensor([1, 2]), 0))


# ---- diff, trapezoid ------------------------------------------------------------------------

def test_diff_errors_name_the_problem():
    compare_error(lambda lib: lib.diff(lib.tensor(1.0)))
    compare_error(lambda lib: lib.diff(lib.ones(3), -1))
    compare_error(lambda lib: lib.diff(lib.ones(2, 3), dim=0, prepend=lib.ones(3, 4)))


def test_trapezoid_errors():
    compare_error(lambda lib: lib.trapezoid(lib.ones(3, 4), lib.arange(3.0)))
    compare_error(lambda lib: lib.trapezoid(lib.tensor(1.0)))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=1, max_size=12), st.integers(1, 3))
def test_diff_undoes_cumsum(values, n):
    x = ember.tensor(values, dtype=ember.float64)
    # diff(cumsum(x)) is x without its first element; n-fold, it is diff(x, n - 1) likewise.
    np.testing.assert_allclose(ember.diff(x.cumsum(0)).numpy(), x[1:].numpy(), rtol=1e-9, atol=1e-9)
    again = x
    for _ in range(n):
        again = ember.diff(again)
    np.testing.assert_allclose(ember.diff(x, n).numpy(), again.numpy())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=1, max_size=12), st.floats(0.01, 10))
def test_cumulative_trapezoid_ends_at_trapezoid(values, dx):
    y = ember.tensor(values, dtype=ember.float64)
    total = ember.trapezoid(y, dx=dx)
    running = ember.cumulative_trapezoid(y, dx=dx)
    if len(values) > 1:
        np.testing.assert_allclose(running[-1].item(), total.item(), rtol=1e-9, atol=1e-9)
    else:
        assert running.shape == (0,) and total.item() == 0


# ---- unfold, as_strided: views -------------------------------------------------------------

def test_unfold_is_a_view_sharing_memory():
    base = ember.arange(12.0).reshape(3, 4)
    windows = base.unfold(1, 2, 1)
    assert windows._base is base._base and windows.stride() == (4, 1, 1)
    base[0, 1] = 100.0
    assert windows[0, 0, 1].item() == 100.0 and windows[0, 1, 0].item() == 100.0
    windows[2, 2, 1] = -5.0
    assert base[2, 3].item() == -5.0


def test_unfold_matches_torch_strides_and_errors():
    compare(lambda lib: lib.arange(24.0).reshape(2, 3, 4).unfold(2, 3, 1).stride())
    compare(lambda lib: lib.arange(24.0).reshape(2, 3, 4).transpose(0, 2).unfold(0, 2, 2).stride())
    compare_error(lambda lib: lib.ones(3, 4).unfold(1, 5, 1))
    compare_error(lambda lib: lib.ones(3, 4).unfold(1, 2, 0))
    compare_error(lambda lib: lib.ones(3, 4).unfold(1, -1, 1))


def test_as_strided_is_a_view_of_the_storage():
    base = ember.arange(12.0)
    view = base[2:].as_strided((2, 3), (3, 1))           # starts where base[2:] starts
    assert view._base is base and view.storage_offset() == 2
    assert view.tolist() == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    view[0, 0] = -1.0
    assert base[2].item() == -1.0
    from_start = ember.as_strided(base[5:], (2,), (1,), 0)  # an explicit offset is absolute
    assert from_start.tolist() == [0.0, 1.0]


def test_as_strided_gradient_overlapping_windows():
    def fn(lib):
        x = lib.arange(10.0, dtype=lib.float64).requires_grad_(True)
        y = lib.as_strided(x[1:], (3, 4), (2, 1))        # overlapping rows
        (y * lib.arange(12.0, dtype=lib.float64).reshape(3, 4)).sum().backward()
        return x.grad
    compare(fn)


def test_as_strided_gradient_of_expanded_input():
    def fn(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64).requires_grad_(True)
        wide = x.unsqueeze(0).expand(3, 2)                # elements share memory
        out = lib.as_strided(wide, (2,), (1,))
        (out * lib.tensor([3.0, 5.0], dtype=lib.float64)).sum().backward()
        return x.grad
    compare(fn)


def test_as_strided_errors():
    compare_error(lambda lib: lib.as_strided(lib.ones(3, 4), (2, 2), (1, 20)))
    compare_error(lambda lib: lib.as_strided(lib.ones(3, 4), (2, 2), (-1, 1)))
    compare_error(lambda lib: lib.as_strided(lib.ones(3, 4), (2, 2), (1,)))


# ---- distances ------------------------------------------------------------------------------

def test_cdist_matrix_product_path_agrees_with_direct_path():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((40, 8)), rng.standard_normal((30, 8))
    ea, eb = ember.tensor(a), ember.tensor(b)
    direct = ember.cdist(ea, eb, compute_mode="donot_use_mm_for_euclid_dist")
    by_mm = ember.cdist(ea, eb)
    np.testing.assert_allclose(by_mm.numpy(), direct.numpy(), rtol=1e-10)
    expected = torch.cdist(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(by_mm.numpy(), expected.numpy(), rtol=1e-10)


def test_cdist_gradient_at_zero_distance():
    def fn(lib):
        a = lib.tensor([[0.0, 1.0], [2.0, 2.0]], dtype=lib.float64).requires_grad_(True)
        b = lib.tensor([[0.0, 1.0], [1.0, 1.0]], dtype=lib.float64)
        lib.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist").sum().backward()
        return a.grad
    compare(fn)


def test_cdist_errors():
    compare_error(lambda lib: lib.cdist(lib.ones(3), lib.ones(2, 3)))
    compare_error(lambda lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 4)))
    compare_error(lambda lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 3), p=-1))
    compare_error(lambda lib: lib.cdist(lib.ones(2, 3, dtype=lib.int64), lib.ones(2, 3, dtype=lib.int64)))
    compare_error(lambda lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 3, dtype=lib.float64)))
    compare_error(lambda lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 3), compute_mode="fast"))


def test_pdist_errors_and_reexports():
    compare_error(lambda lib: lib.pdist(lib.ones(3)))
    compare_error(lambda lib: lib.pdist(lib.ones(2, 3), -1))
    compare_error(lambda lib: lib.pdist(lib.ones(2, 3, dtype=lib.int64)))
    compare(lambda lib: lib.pairwise_distance(lib.ones(2, 3), lib.zeros(2, 3)))
    compare(lambda lib: lib.cosine_similarity(lib.ones(2, 3), lib.arange(6.0).reshape(2, 3)))


def test_cosine_similarity_is_torch_composite():
    """PyTorch's composite: integer operands converted, inputs expanded only when their shapes
    differ, norms clamped in place without a record (so a vector shorter than eps gets the
    unclamped norm's gradient), PyTorch's dtype/eps/broadcast errors."""
    from test_graph_names import graph_of
    x = np.random.default_rng(0).standard_normal((4, 3))
    x[0] = 1e-10  # its norm is clamped to eps
    for a, b, kw in ((x, x[::-1].copy(), {}), (x, x[1:2], {"dim": -1}), (x, x[1:2] * 0, {})):
        outs, graphs = [], []
        for lib in (torch, ember):
            ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
            out = lib.nn.functional.cosine_similarity(ta, tb, **kw)
            graphs.append(graph_of([out], [ta, tb]))
            out.backward(lib.arange(1.0, 5.0, dtype=lib.float64))
            outs.append([out, ta.grad, tb.grad])
        assert_same(*outs, rtol=1e-12, atol=1e-14)
        assert graphs[1] == graphs[0]
    compare(lambda lib: lib.cosine_similarity(lib.arange(6).reshape(2, 3),
                                              lib.ones(2, 3, dtype=lib.float64)))
    compare_error(lambda lib: lib.cosine_similarity(lib.ones(2, 3, dtype=lib.int64),
                                                    lib.ones(2, 3, dtype=lib.int32)))
    compare_error(lambda lib: lib.cosine_similarity(lib.ones(2, 3), lib.ones(2, 3), eps=-1.0))
    compare_error(lambda lib: lib.nn.functional.cosine_similarity(lib.ones(2, 5),
                                                                  lib.ones(2, 4)))


def test_distance_ops_mix_devices_error():
    a = ember.ones(2, 3)
    b = ember.ones(2, 3, device="testdev")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.cdist(a, b)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.logcumsumexp(lib.ones(2, 3), 2),
    lambda lib: lib.cummin(lib.ones(2, 3), -3),
    lambda lib: lib.diff(lib.ones(2, 3), dim=2),
    lambda lib: lib.cumulative_trapezoid(lib.ones(3, 4), lib.arange(3.0)),
    lambda lib: lib.cumulative_trapezoid(lib.tensor(1.0)),
    lambda lib: lib.trapezoid(lib.ones(3), 0.5),
    lambda lib: lib.tensor(1.0).unfold(0, 2, 1),
    lambda lib: lib.as_strided(lib.ones(3), (2, -1), (1, 1)),
])
def test_more_errors_match_torch(fn):
    compare_error(fn)


# ---- gradient ------------------------------------------------------------------------------

def test_gradient_tensor_spacing_int_and_errors():
    compare(lambda lib: lib.gradient(lib.arange(6.0).reshape(2, 3) ** 2, spacing=2))
    compare(lambda lib: lib.gradient(lib.tensor([1, 4, 9, 16]), edge_order=2))
    compare_error(lambda lib: lib.gradient(lib.ones(3, 3), spacing=[1.0, 2.0, 3.0]))
    compare_error(lambda lib: lib.gradient(lib.ones(3, 3), spacing=[1.0, 2.0, 3.0], dim=0))
    compare_error(lambda lib: lib.gradient(lib.ones(3, 3), edge_order=3))
