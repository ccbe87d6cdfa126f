"""ember/ops/extra.py beyond the op table: laws (hypothesis), named results, in-place forms,
gradients the table cannot compare, and error messages."""
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from torch_compare import compare, compare_error

INT64 = st.integers(-10**6, 10**6)


# ---- laws -----------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(INT64, INT64), min_size=1, max_size=20))
def test_gcd_times_lcm_is_abs_product(pairs):
    a = ember.tensor([p[0] for p in pairs])
    b = ember.tensor([p[1] for p in pairs])
    g, m = ember.gcd(a, b), ember.lcm(a, b)
    assert (g * m).tolist() == (a * b).abs().tolist()
    # gcd divides both (and is 0 only for two zeros)
    safe = g.masked_fill(g == 0, 1)
    assert ((a % safe) == 0).all() and ((b % safe) == 0).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e300, 1e300, allow_nan=False), min_size=1, max_size=20))
def test_frexp_ldexp_round_trip(values):
    x = ember.tensor(values, dtype=ember.float64)
    mantissa, exponent = ember.frexp(x)
    assert exponent.dtype is ember.int32
    nonzero = mantissa != 0
    assert ((mantissa.abs() >= 0.5) & (mantissa.abs() < 1) | ~nonzero).all()
    assert ember.ldexp(mantissa, exponent).tolist() == x.tolist()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(0, 10**6))
def test_kron_mixed_product(n, m, p, q, seed):
    """(A kron B)(C kron D) = (AC) kron (BD)."""
    rng = np.random.default_rng(seed)
    A, C = ember.tensor(rng.standard_normal((n, m))), ember.tensor(rng.standard_normal((m, n)))
    B, D = ember.tensor(rng.standard_normal((p, q))), ember.tensor(rng.standard_normal((q, p)))
    left = ember.kron(A, B) @ ember.kron(C, D)
    right = ember.kron(A @ C, B @ D)
    np.testing.assert_allclose(left.numpy(), right.numpy(), rtol=1e-10, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=10), st.lists(st.floats(-50, 50), min_size=1, max_size=10))
def test_logaddexp_is_log_of_sum_of_exps(xs, ys):
    n = min(len(xs), len(ys))
    x, y = ember.tensor(xs[:n], dtype=ember.float64), ember.tensor(ys[:n], dtype=ember.float64)
    both = ember.logaddexp(x, y)
    np.testing.assert_allclose(np.exp(both.numpy()), np.exp(xs[:n]) + np.exp(ys[:n]), rtol=1e-13)
    assert ember.equal(both, ember.logaddexp(y, x)) and (both >= ember.maximum(x, y)).all()
    np.testing.assert_allclose(np.exp2(ember.logaddexp2(x, y).numpy()),
                               np.exp2(xs[:n]) + np.exp2(ys[:n]), rtol=1e-13)


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


# ---- named results, in-place forms, methods -------------------------------------------------

def test_named_results():
    m, e = ember.frexp(ember.tensor([3.0, -5.0]))
    res = ember.frexp(ember.tensor([3.0, -5.0]))
    assert res.mantissa is res[0] and res.exponent is res[1]
    assert "mantissa=" in repr(res) and type(res).__name__ == "frexp"
    mm = ember.aminmax(ember.tensor([[3.0, -5.0], [1.0, 2.0]]), dim=1)
    assert mm.min.tolist() == [-5.0, 1.0] and mm.max.tolist() == [3.0, 2.0]
    assert ember.return_types.aminmax is type(mm)


@pytest.mark.parametrize("call", [
    lambda x, y: x.copysign_(y), lambda x, y: x.heaviside_(y), lambda x, y: x.deg2rad_(),
    lambda x, y: x.rad2deg_(), lambda x, y: x.sgn_(), lambda x, y: x.nextafter_(y),
    lambda x, y: x.ldexp_(y.round()),
    lambda x, y: x.index_fill_(1, x.new_tensor([0, 2]).long(), 0.5),
    lambda x, y: x.index_copy_(0, x.new_tensor([1]).long(), y[:1]),
    lambda x, y: x.put_(x.new_tensor([0, 5]).long(), y[0, :2]),
    lambda x, y: x.put_(x.new_tensor([0, 0]).long(), y[0, :2], accumulate=True),
    lambda x, y: x.masked_scatter_(y > 0, y),
    lambda x, y: x.scatter_reduce_(0, x.new_tensor([[0, 1, 1]]).long(), y, "prod"),
])
def test_inplace_forms_write_into_self(call):
    def fn(lib):
        x = lib.tensor([[1.5, -2.0, 0.0], [3.0, 0.25, -1.0]], dtype=lib.float64)
        y = lib.tensor([[-1.0, 2.0, 0.5], [0.0, -3.0, 4.0]], dtype=lib.float64)
        ptr = x.data_ptr()
        out = call(x, y)
        assert out is x and x.data_ptr() == ptr
        return x
    compare(fn)


def test_integer_inplace_forms():
    compare(lambda lib: lib.tensor([12, 18, -4]).gcd_(lib.tensor([8, 27, 6])))
    compare(lambda lib: lib.tensor([12, 18, -4]).lcm_(lib.tensor([8, 27, 6])))


def test_inplace_records_gradient():
    def fn(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        src = lib.tensor([[5.0, 6.0]], dtype=lib.float64, requires_grad=True)
        y = x * 2
        y.index_copy_(0, lib.tensor([1]), src)
        y.index_fill_(1, lib.tensor([0]), 0.0)
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)).sum().backward()
        return x.grad, src.grad
    compare(fn)


# ---- gradients the table does not compare ---------------------------------------------------

def test_sgn_gradient_is_zero():
    x = ember.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    ember.sgn(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_heaviside_backward_not_implemented():
    compare_error(lambda lib: lib.heaviside(lib.tensor([1.0, -1.0], requires_grad=True),
                                            lib.tensor([0.5, 0.5])).sum().backward())


def test_vander_gradient_matches_powers():
    """PyTorch's own vander backward fails; the gradient equals that of stacked powers."""
    x = ember.tensor([0.5, -1.5, 2.0, 0.0], dtype=ember.float64, requires_grad=True)
    ember.vander(x, 4).sum().backward()
    t = torch.tensor([0.5, -1.5, 2.0, 0.0], dtype=torch.float64, requires_grad=True)
    torch.stack([t ** k for k in (3, 2, 1, 0)], 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_ldexp_negative_exponents():
    """Forward agrees with PyTorch; the gradient is the true 2 ** e (PyTorch's is 0 for e < 0,
    as it computes 2 ** e in integers)."""
    compare(lambda lib: lib.ldexp(lib.tensor([1.0, 3.0, -5.0]), lib.tensor([-3, 0, 4])))
    x = ember.tensor([1.0, 3.0], requires_grad=True)
    ember.ldexp(x, ember.tensor([-2, 3])).sum().backward()
    assert x.grad.tolist() == [0.25, 8.0]


def test_scatter_reduce_prod_gradient_with_zeros():
    def fn(lib):
        x = lib.tensor([2.0, 0.0, 3.0], dtype=lib.float64, requires_grad=True)
        src = lib.tensor([0.0, 4.0, 5.0, 0.0, 0.0], dtype=lib.float64, requires_grad=True)
        index = lib.tensor([0, 0, 1, 2, 2])
        x.scatter_reduce(0, index, src, "prod").sum().backward()
        return x.grad, src.grad
    compare(fn)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_ties_and_integers(reduce, include_self):
    compare(lambda lib: lib.tensor([[1, 5], [2, 2], [0, -3]]).scatter_reduce(
        0, lib.tensor([[2, 0], [2, 0], [0, 1]]), lib.tensor([[4, 4], [4, -1], [7, 2]]), reduce,
        include_self=include_self))

    def grads(lib):
        x = lib.tensor([1.0, 2.0, 2.0], dtype=lib.float64, requires_grad=True)
        src = lib.tensor([2.0, 2.0, 1.0, 3.0], dtype=lib.float64, requires_grad=True)
        x.scatter_reduce(0, lib.tensor([1, 1, 0, 2]), src, reduce,
                         include_self=include_self).sum().backward()
        return x.grad, src.grad
    compare(grads)


def test_scatter_reduce_max_alias():
    compare(lambda lib: lib.zeros(3).scatter_reduce(0, lib.tensor([0, 0, 1]),
                                                    lib.tensor([1.0, 5.0, 2.0]), "max"))


# ---- meshgrid and friends --------------------------------------------------------------------

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


def test_tril_triu_indices_match_numpy_order():
    compare(lambda lib: lib.tril_indices(4, 5, -1))
    compare(lambda lib: lib.triu_indices(5, 3, 1, dtype=lib.int32))


# ---- error messages --------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib: lib.frexp(lib.tensor([1, 2])),
    lambda lib: lib.gcd(lib.tensor([1.0]), lib.tensor([2.0])),
    lambda lib: lib.logaddexp(lib.tensor([1]), lib.tensor([2])),
    lambda lib: lib.heaviside(lib.tensor([1.0]), lib.tensor([1.0], dtype=lib.float64)),
    lambda lib: lib.vander(lib.ones(2, 2)),
    lambda lib: lib.vander(lib.ones(2), -1),
    lambda lib: lib.rot90(lib.ones(3)),
    lambda lib: lib.rot90(lib.ones(2, 2), 1, [0, 0]),
    lambda lib: lib.rot90(lib.ones(2, 2, 2), 1, [0, 1, 2]),
    lambda lib: lib.combinations(lib.ones(2, 2)),
    lambda lib: lib.combinations(lib.ones(3), -1),
    lambda lib: lib.block_diag(lib.ones(2, 2, 2)),
    lambda lib: lib.meshgrid(lib.ones(2), lib.ones(2), indexing="foo"),
    lambda lib: lib.meshgrid(lib.ones(2), lib.ones(2, dtype=lib.int64), indexing="ij"),
    lambda lib: lib.tril_indices(-1, 3),
    lambda lib: lib.aminmax(lib.zeros(0)),
    lambda lib: lib.aminmax(lib.zeros(0, 2), dim=0),
    lambda lib: lib.ones(2, 3).index_fill(0, lib.tensor([5]), 1.0),
    lambda lib: lib.ones(2, 3).index_fill(0, lib.tensor([0], dtype=lib.int32), 1.0),
    lambda lib: lib.ones(2, 3).index_fill(1, lib.tensor([0]), lib.tensor([1.0])),
    lambda lib: lib.ones(2, 3).index_copy(1, lib.tensor([3, 0]), lib.ones(2, 2)),
    lambda lib: lib.ones(2, 3).index_copy(1, lib.tensor([2, 0]), lib.ones(2, 3)),
    lambda lib: lib.ones(2, 3).index_copy(1, lib.tensor([0.0]), lib.ones(2, 1)),
    lambda lib: lib.ones(2, 3).index_copy(1, lib.tensor([0]), lib.ones(2, 1, dtype=lib.float64)),
    lambda lib: lib.ones(2, 3).index_copy(1, lib.tensor([0]), lib.ones(1)),
    lambda lib: lib.ones(2, 3).put(lib.tensor([6]), lib.tensor([9.0])),
    lambda lib: lib.ones(2, 3).put(lib.tensor([1, 2]), lib.tensor([9.0])),
    lambda lib: lib.ones(2, 3).put(lib.tensor([1]), lib.tensor([9])),
    lambda lib: lib.ones(2, 3).masked_scatter(lib.ones(2, 3) > 0, lib.arange(2.0)),
    lambda lib: lib.ones(2, 3).masked_scatter(lib.ones(2, 3) > 0, lib.arange(6)),
    lambda lib: lib.ones(2, 3).scatter_reduce(0, lib.tensor([[0]]), lib.ones(1, 1), "foo"),
    lambda lib: lib.ones(2, 3).scatter_reduce(0, lib.tensor([[2]]), lib.ones(1, 1), "sum"),
])
def test_errors_match_torch(fn):
    compare_error(fn)


def test_ops_refuse_mixed_devices():
    a = ember.ones(2, 3)
    other = ember.ones(2, 3, device="testdev")
    for fn in (lambda: ember.copysign(a, other), lambda: ember.logaddexp(a, other),
               lambda: ember.kron(a, other), lambda: a.index_copy(0, ember.tensor([0]), other[:1]),
               lambda: a.masked_scatter(a > 0, other),
               lambda: a.scatter_reduce(0, ember.tensor([[0]]), other, "sum")):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            fn()


# ---- ops that existed before this catalogue, checked against PyTorch --------------------------

A = np.random.default_rng(0).standard_normal((3, 4))
B = np.random.default_rng(1).standard_normal(4)
INTS = np.array([[5, -3, 7], [-8, 9, 0]])


@pytest.mark.parametrize("fn", [
    lambda lib: lib.clamp_min(lib.tensor(A), lib.tensor(B)),
    lambda lib: lib.clamp_min(lib.tensor(INTS), 0.5),
    lambda lib: lib.tensor(A).clamp_max_(0.1),
    lambda lib: lib.fmod(lib.tensor(INTS), -3),
    lambda lib: lib.remainder(lib.tensor(A), lib.tensor(B)),
    lambda lib: lib.remainder(5, lib.tensor(INTS) + 20),
    lambda lib: lib.float_power(lib.tensor(INTS), 2),
    lambda lib: lib.float_power(2, lib.tensor(INTS)),
    lambda lib: lib.tensor(np.abs(A)).float_power_(lib.tensor(B)),
    lambda lib: lib.signbit(lib.tensor([-0.0, 0.0, -1.0, math.nan])),
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
    lambda lib: lib.take(lib.tensor(A), lib.tensor([[0, -1], [5, 11]])),
    lambda lib: lib.tensor(A).index_put_((lib.tensor([0, 2]), lib.tensor([1, 1])),
                                         lib.tensor([5.0, 6.0], dtype=lib.float64), accumulate=True),
    lambda lib: lib.nansum(lib.tensor([[1.0, math.nan], [2, 3]]), 1),
    lambda lib: lib.nanmean(lib.tensor([[1.0, math.nan], [2, 3]]), 1, keepdim=True),
    lambda lib: lib.nanmean(lib.tensor([1.0, math.nan, 2.0]), dtype=lib.float64),
    lambda lib: lib.isclose(lib.tensor([1.0, math.nan, math.inf]),
                            lib.tensor([1.0 + 1e-9, math.nan, math.inf]), equal_nan=True),
    lambda lib: lib.allclose(lib.tensor(A), lib.tensor(A) + 1e-7),
    lambda lib: lib.equal(lib.tensor(A), lib.tensor(B)),
])
def test_existing_ops_match_torch(fn):
    compare(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.ones(2).float_power_(2),
    lambda lib: lib.hsplit(lib.ones(3, 4), 3),
    lambda lib: lib.hsplit(lib.tensor(1.0), 1),
    lambda lib: lib.vsplit(lib.ones(4), 2),
    lambda lib: lib.tensor_split(lib.ones(3, 4), 0),
    lambda lib: lib.nanmean(lib.tensor([1, 2])),
    lambda lib: lib.isclose(lib.ones(2), lib.ones(2, dtype=lib.float64)),
    lambda lib: lib.take(lib.ones(3, 4), lib.tensor([12])),
    lambda lib: lib.broadcast_to(lib.ones(4), (2, 3)),
    lambda lib: lib.ones(1, 3).squeeze((0, 0)),
])
def test_existing_ops_errors_match_torch(fn):
    compare_error(fn)


def test_complex_sgn_and_subnormal_frexp():
    compare(lambda lib: lib.sgn(lib.tensor([1 + 1j, 0j, -2j])))
    compare(lambda lib: lib.frexp(lib.tensor([3.0, 1e-7, -6e-8, 65504.0]).half()))
    compare(lambda lib: [part.float() for part in
                         lib.frexp(lib.tensor([3.0, 1e-40, -1e-39]).bfloat16())])


@pytest.mark.parametrize("fn", [
    lambda lib: lib.ldexp(lib.ones(2), 2),
    lambda lib: lib.nextafter(lib.tensor([1, 2]), lib.tensor([1, 2])),
    lambda lib: lib.lcm(lib.ones(2), lib.ones(2)),
    lambda lib: lib.triu_indices(3, -2),
    lambda lib: lib.cartesian_prod(lib.ones(2), lib.ones(2, dtype=lib.int64)),
    lambda lib: lib.index_copy(lib.ones(2, 3), 1, lib.tensor([[0]]), lib.ones(2, 1)),
    lambda lib: lib.ones(2, 3).masked_scatter(lib.ones(2, 3), lib.ones(6)),
])
def test_more_errors_match_torch(fn):
    compare_error(fn)


def test_complex_sgn_gradient():
    def fn(lib):
        z = lib.tensor([1 + 1j, 0j, -2j, 3 - 4j], requires_grad=True)
        return lib.autograd.grad(lib.sgn(z), z, lib.tensor([0.5 + 1j, 1, 2j, -1]))[0]
    compare(fn)
