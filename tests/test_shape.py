"""Shape ops beyond the op table, against PyTorch: laws of combinations and rot90 (hypothesis),
meshgrid's warning and views, exceptions (types and messages), and the older shape ops
(broadcasting, atleast_*, squeeze, stacking, splitting)."""
import math
import warnings

import numpy as np
import pytest
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
