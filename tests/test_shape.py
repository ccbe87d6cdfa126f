"""Shape ops beyond the op table, against PyTorch: laws of combinations and rot90 (hypothesis),
meshgrid's warning and views, exceptions (types and messages), and the older shape ops
(broadcasting, atleast_*, squeeze, stacking, splitting)."""
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from torch_compare import compare, compare_error


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 6), st.integers(1, 4), st.booleans())
def test_combinations_count(n, r, with_replacement):
    out = ember.combinations(ember.arange(float(n)), r, with_replacement)
    expected = math.comb(n + r - 1, r) if with_replacement else math.comb(n, r)
    assert out.shape[0] == expected
    rows = [tuple(row) for row in out.reshape(expected, r).tolist()]
    assert rows == sorted(set(rows))  # lexicographic, no repeats


@settings(max_examples=25, deadline=None)
@given(st.integers(-9, 9), st.integers(0, 10**6))
def test_rot90_four_times_is_identity(k, seed):
    x = ember.tensor(np.random.default_rng(seed).standard_normal((2, 3, 4)))
    once = ember.rot90(x, k, (1, 2))
    assert ember.equal(ember.rot90(ember.rot90(once, 4 - k % 4, (1, 2)), 0, (1, 2)), x)


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning, match="indexing argument"):
        ember.meshgrid(ember.ones(2), ember.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.meshgrid(ember.ones(2), ember.ones(3), indexing="xy")
    compare(lambda lib: [g.shape for g in lib.meshgrid(lib.ones(2), lib.ones(3), lib.ones(4),
                                                       indexing="xy")])


def test_meshgrid_outputs_are_views():
    a = ember.arange(3.0)
    grid, _ = ember.meshgrid(a, ember.arange(2.0), indexing="ij")
    assert grid.stride() == (1, 0)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.rot90(lib.ones(3)),
    lambda lib: lib.rot90(lib.ones(2, 2), 1, [0, 0]),
    lambda lib: lib.rot90(lib.ones(2, 2, 2), 1, [0, 1, 2]),
    lambda lib: lib.combinations(lib.ones(2, 2)),
    lambda lib: lib.combinations(lib.ones(3), -1),
    lambda lib: lib.block_diag(lib.ones(2, 2, 2)),
    lambda lib: lib.meshgrid(lib.ones(2), lib.ones(2), indexing="foo"),
    lambda lib: lib.meshgrid(lib.ones(2), lib.ones(2, dtype=lib.int64), indexing="ij"),
])
def test_errors_match_torch(fn):
    compare_error(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.cartesian_prod(lib.ones(2), lib.ones(2, dtype=lib.int64)),
])
def test_more_errors_match_torch(fn):
    compare_error(fn)


# ---- shape ops older than meshgrid ... ravel, checked against PyTorch ----------------------------

A = np.random.default_rng(0).standard_normal((3, 4))
B = np.random.default_rng(1).standard_normal(4)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.broadcast_tensors(lib.tensor(A), lib.tensor(B), lib.tensor(1.0)),
    lambda lib: lib.broadcast_to(lib.tensor(B), (2, -1)),
    lambda lib: lib.atleast_2d(lib.tensor(1.0), lib.ones(3)),
    lambda lib: lib.atleast_3d((lib.ones(2), lib.ones(2, 2))),
    lambda lib: lib.atleast_1d([lib.tensor(2.0)]),
    lambda lib: lib.ones(1, 3, 1, 2).squeeze((0, 2)).shape,
    lambda lib: lib.squeeze(lib.ones(1, 3, 1, 2), [0, 1]).shape,
    lambda lib: lib.swapaxes(lib.ones(2, 3, 4), 0, 2).shape,
    lambda lib: lib.moveaxis(lib.ones(2, 3, 4), (0, 1), (2, 0)).shape,
    lambda lib: lib.column_stack([lib.tensor(B), lib.ones(4, 2, dtype=lib.float64), lib.ones(4)]),
    lambda lib: lib.dstack([lib.tensor(B), lib.tensor(B)]),
    lambda lib: lib.hsplit(lib.tensor(A), [1, 3]),
    lambda lib: lib.vsplit(lib.tensor(A), 3),
    lambda lib: lib.tensor_split(lib.tensor(A), lib.tensor(3), dim=1),
    lambda lib: lib.tensor_split(lib.tensor(A), lib.tensor([1, 2]), dim=1),
])
def test_existing_ops_match_torch(fn):
    compare(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.hsplit(lib.ones(3, 4), 3),
    lambda lib: lib.hsplit(lib.tensor(1.0), 1),
    lambda lib: lib.vsplit(lib.ones(4), 2),
    lambda lib: lib.tensor_split(lib.ones(3, 4), 0),
    lambda lib: lib.broadcast_to(lib.ones(4), (2, 3)),
    lambda lib: lib.ones(1, 3).squeeze((0, 0)),
])
def test_existing_ops_errors_match_torch(fn):
    compare_error(fn)


# ---- in-place view ops, resize_, the unsafe splits -----------------------------------------------

@pytest.mark.parametrize("op,args", [("t_", ()), ("transpose_", (0, 2)), ("swapaxes_", (1, -1)),
                                     ("swapdims_", (0, 1)), ("squeeze_", ()), ("squeeze_", (1,)),
                                     ("unsqueeze_", (-1,))])
def test_inplace_view_ops(op, args):
    shape = (3, 4) if op == "t_" else (2, 1, 3)

    def fn(lib):
        x = lib.arange(float(np.prod(shape))).reshape(shape).requires_grad_()
        y = x * 2
        out = getattr(y, op)(*args)
        assert out is y and y._version == 1
        (y * lib.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return y, y.stride(), x.grad
    compare(fn)


def test_inplace_view_op_on_leaf_and_views():
    compare_error(lambda lib: lib.ones(2, 3, requires_grad=True).t_(),
                  "a leaf Variable that requires grad is being used in an in-place operation.")
    compare_error(lambda lib: lib.ones(2, 3, requires_grad=True).unsqueeze_(0))

    def under_no_grad(lib):
        x = lib.ones(2, 3, requires_grad=True)
        with lib.no_grad():
            x.t_()
        return tuple(x.shape), x.is_leaf, x.requires_grad
    compare(under_no_grad)

    def view_then_inplace(lib):
        base = lib.arange(12.0).reshape(3, 4)
        v = base[1:]
        v.t_()
        v[0, 1] = -1.0  # writes through the transposed view into base
        return base, v, v.stride(), v.storage_offset()
    compare(view_then_inplace)

    def grad_fn_name(lib):
        y = lib.ones(2, 3, requires_grad=True) * 2
        y.t_()
        return type(y.grad_fn).__name__.rstrip("0123456789")
    assert grad_fn_name(ember) == grad_fn_name(torch)


def test_as_strided_():
    def fn(lib):
        x = lib.arange(12.0)
        y = x[2:]
        y.as_strided_((2, 2), (3, 1), 1)
        return y, y.stride(), y.storage_offset()
    compare(fn)

    def on_root(lib):
        x = lib.arange(6.0)
        x.as_strided_((2, 2), (1, 2), 1)
        x[0, 0] = -1.0
        return x, x.stride(), x.storage_offset(), x.as_strided((6,), (1,), 0)
    compare(on_root)


def test_resize_():
    def shrink(lib):
        x = lib.arange(6.0)
        x.resize_(2, 2)
        return x, x.stride()
    compare(shrink)

    def shrink_keeps_storage(lib):
        x = lib.arange(6.0)
        x.resize_(2, 2)
        x[1, 1] = -1.0
        return x, x.as_strided((6,), (1,), 0)
    compare(shrink_keeps_storage)

    def same_numel_with_view(lib):
        x = lib.arange(6.0)
        row = x[:3]
        x.resize_(3, 2)
        row.add_(10)
        return x, row
    compare(same_numel_with_view)

    def grow(lib):
        x = lib.arange(6.0)
        x.resize_((3, 3))
        return x[:2], tuple(x.shape), x.stride()
    compare(grow)

    def as_(lib):
        x = lib.arange(6.0).reshape(2, 3)
        return x.resize_as_(lib.ones(3, 2)), x.stride()
    compare(as_)
    compare_error(lambda lib: lib.ones(2, requires_grad=True).resize_(3))
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        compare(lambda lib: lib.arange(6.0).resize(3, 2))


def test_inplace_view_op_then_write_through_view():
    def fn(lib):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        base = x * 2
        v = base[1:]
        v.t_()
        v.mul_(lib.arange(8.0).reshape(4, 2))
        (base * base).sum().backward()
        return base, v, x.grad
    compare(fn)

    def unsqueeze_then_squeeze(lib, make=lambda x: x * 3):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        y = make(x)
        y.unsqueeze_(1).squeeze_(1).transpose_(0, 1)
        (y * lib.arange(6.0).reshape(3, 2)).sum().backward()
        return y, x.grad
    compare(unsqueeze_then_squeeze)
    # In-place view ops bump the version: exp's saved output is then stale, as in PyTorch.
    compare_error(lambda lib: unsqueeze_then_squeeze(lib, lambda x: x.exp()),
                  "modified by an inplace operation")


def test_views_taken_before_an_inplace_view_op_on_their_base():
    def transposed(lib):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        base = x * 2
        row = base[0]
        base.t_()
        row.mul_(10)
        base.sum().backward()
        return base, row, x.grad

    def reshaped(lib):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        base = x * 2
        cols = base[:, 1:]
        base.unsqueeze_(0).transpose_(1, 2)
        cols.mul_(lib.arange(4.0).reshape(2, 2))
        (base * lib.arange(6.0).reshape(1, 3, 2)).sum().backward()
        return base, cols, x.grad

    def restrided(lib):
        x = lib.arange(6.0).requires_grad_()
        base = x * 2
        head = base[:2]
        base.as_strided_((2, 2), (1, 2))
        head.add_(100)
        (base * lib.arange(4.0).reshape(2, 2)).sum().backward()
        return base, head, x.grad
    for fn in (transposed, reshaped, restrided):
        compare(fn)


def test_t__refuses_more_than_two_dims():
    compare_error(lambda lib: lib.ones(2, 3, 4).t_())


def test_unsafe_split_pieces_share_memory_and_allow_inplace():
    def fn(lib):
        x = lib.arange(6.0).requires_grad_()
        y = x * 2
        a, b = lib.unsafe_split(y, 3)
        b.mul_(10)  # a split's views refuse this; unsafe_split's pieces allow it
        (a.sum() + b.sum()).backward()
        return y.detach(), a, b, x.grad
    compare(fn)
    compare_error(lambda lib: (lib.arange(6.0, requires_grad=True) * 2).split(3)[1].mul_(10),
                  "is a view and is being modified inplace")
    x = ember.arange(6.0)
    ember.unsafe_chunk(x, 2)[0][0] = -1.0
    assert x[0].item() == -1.0
