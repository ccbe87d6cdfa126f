"""torch's linear-algebra front ends, as Ember mirrors them node for node
(``tests/test_graph_names.py`` compares the graphs): the values, first and second derivatives
of the reshaped compositions agree with torch's, and so do the edge cases the composites decide
(vecdot's conjugate and its vector kernel, a vector right-hand side with ``left=False``, the
identity power, logdet's NaN)."""
import math

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare, compare_error

_rng = np.random.default_rng(7)
A = _rng.standard_normal((3, 3)) + 3 * np.eye(3)
B = _rng.standard_normal((2, 3))


def _derivatives(fn):
    """``fn(lib, a, b)``, its gradient and its second derivative, for ``lib``."""
    def run(lib):
        a = lib.tensor(A, requires_grad=True)
        b = lib.tensor(B, requires_grad=True)
        out = fn(lib, a, b)
        grads = lib.autograd.grad((out ** 2).sum(), (a, b), create_graph=True,
                                  allow_unused=True)
        grads = [g if g is not None else lib.zeros((), dtype=a.dtype) for g in grads]
        second = lib.autograd.grad(sum((g ** 2).sum() for g in grads), (a, b),
                                   allow_unused=True)
        second = [g if g is not None else lib.zeros((), dtype=a.dtype) for g in second]
        return [out, *grads, *second]
    return run


CASES = {
    "solve_right": lambda lib, a, b: lib.linalg.solve(a, b, left=False),
    "solve_triangular_right_upper":
        lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True, left=False),
    "solve_triangular_right_lower_unit": lambda lib, a, b: lib.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True),
    "lu_solve_adjoint": lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b.mT,
                                                              adjoint=True),
    "lu_solve_right": lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b,
                                                            left=False),
    "lu_solve_deprecated": lambda lib, a, b: lib.lu_solve(b.mT, *lib.linalg.lu_factor(a)),
    "lstsq": lambda lib, a, b: lib.linalg.lstsq(a, b.mT)[0],
    "lstsq_residuals": lambda lib, a, b: lib.linalg.lstsq(
        lib.cat([a, b]), lib.cat([a, b]) ** 2, driver="gelsd")[1],
    "lu_unpack": lambda lib, a, b: lib.lu_unpack(*lib.linalg.lu_factor(a))[1] * 2
        + lib.lu_unpack(*lib.linalg.lu_factor(a))[2],
    "logdet": lambda lib, a, b: lib.logdet(a @ a.mT),
    "matrix_power_3_and_0": lambda lib, a, b: lib.linalg.matrix_power(a, 3)
        + lib.linalg.matrix_power(a, 0),
    "vecdot_vectors": lambda lib, a, b: lib.linalg.vecdot(a[0], b[1]),
    "multi_dot": lambda lib, a, b: lib.linalg.multi_dot([a[0], a, b.mT]),
    "chain_matmul": lambda lib, a, b: lib.chain_matmul(b, a, a),
    "matrix_norms": lambda lib, a, b: lib.linalg.matrix_norm(a, 1)
        + lib.linalg.matrix_norm(a, -math.inf)
        + lib.linalg.matrix_norm(a, "nuc", keepdim=True).sum()
        + lib.linalg.matrix_norm(a, 2, keepdim=True).sum(),
}


@pytest.mark.parametrize("name", CASES)
def test_values_and_two_derivatives_match_torch(name):
    run = _derivatives(CASES[name])
    assert_same(run(torch), run(ember), rtol=1e-8, atol=1e-8)


def test_identity_power_leaves_the_input_alone():
    """matrix_power(A, 0) overwrites a contiguous copy of A: the copy must really be one."""
    a = ember.tensor(A, requires_grad=True)
    ember.linalg.matrix_power(a, 0)
    np.testing.assert_array_equal(a.detach().numpy(), A)


@pytest.mark.parametrize("shape", [(), (2, 2), (2, 3)])
def test_clone_to_contiguous_format_copies(device, shape):
    def fn(lib):
        t = lib.ones(shape, device=device if lib is ember else "cpu")
        t = t.mT if len(shape) == 2 and shape[0] != shape[1] else t
        c = t.clone(memory_format=lib.contiguous_format)
        c.add_(1)
        return t, c, c.is_contiguous()
    compare(fn)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((2, 1, 3), (4, 3))])
def test_vecdot_conjugates_x(device, shapes):
    xs = [_rng.standard_normal(s) + 1j * _rng.standard_normal(s) for s in shapes]

    def fn(lib):
        dev = device if lib is ember else "cpu"
        x, y = (lib.tensor(v, device=dev, requires_grad=True) for v in xs)
        out = lib.linalg.vecdot(x, y)
        out.abs().sum().backward()
        # torch's gradient of x may carry the conjugate bit: compare the values
        return out, x.grad.resolve_conj(), y.grad.resolve_conj()
    compare(fn, rtol=1e-10, atol=1e-12)


def test_vecdot_of_two_vectors_reads_no_dim():
    compare(lambda lib: lib.linalg.vecdot(lib.arange(3.0), lib.arange(3.0) + 1, dim=5))


@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((1, 1), (1,)), ((2, 3, 3), (2, 3))])
def test_solve_right_refuses_a_vector(shapes):
    compare_error(lambda lib: lib.linalg.solve(lib.ones(shapes[0]) + lib.eye(shapes[0][-1]),
                                               lib.ones(shapes[1]), left=False))


def test_logdet_nan_for_negative_and_minus_inf_for_singular():
    """NaN (and a zero gradient) where the determinant is negative, -inf where it is 0."""
    def fn(lib):
        a = lib.tensor([[[2.0, 0.0], [0.0, -3.0]], [[2.0, 1.0], [1.0, 3.0]]],
                       dtype=lib.float64, requires_grad=True)
        out = lib.logdet(a)
        out.sum().backward()
        return out, a.grad, lib.logdet(lib.tensor([[1.0, 2.0], [2.0, 4.0]]))
    compare(fn)


@pytest.mark.parametrize("ord", [1, -1, math.inf, -math.inf, "nuc", 2, -2])
@pytest.mark.parametrize("dim", [(0, 2), (2, 0), (1, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_dims(ord, dim, keepdim):
    x = _rng.standard_normal((2, 3, 4))

    def fn(lib):
        t = lib.tensor(x, requires_grad=True)
        out = lib.linalg.matrix_norm(t, ord, dim, keepdim)
        out.sum().backward()
        return out, t.grad
    compare(fn, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 5), (4, 2)])
@pytest.mark.parametrize("unpack_pivots", [True, False])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_lu_unpack_without_data_returns_empty_l_and_u(device, shape, unpack_pivots,
                                                      requires_grad):
    """``unpack_data=False``: L and U are empty 1-D tensors of LU's dtype, which still require
    grad (torch records LuUnpackBackward0 over them); P is as with the data unpacked."""
    a = _rng.standard_normal(shape)

    def fn(lib):
        dev = device if lib is ember else "cpu"
        x = lib.tensor(a, device=dev, requires_grad=requires_grad)
        P, L, U = lib.lu_unpack(*lib.linalg.lu_factor(x), unpack_data=False,
                                unpack_pivots=unpack_pivots)
        return [(t, t.requires_grad, type(t.grad_fn).__name__, t.device.type == dev)
                for t in (P, L, U)]
    compare(fn)


@pytest.mark.parametrize("outputs", ["L", "U", "LU"])
def test_lu_unpack_without_data_backward_fails_as_torch(outputs):
    """torch's formula takes tril/triu of the empty gradients, which refuse a 1-D tensor."""
    def fn(lib):
        x = lib.tensor(A, requires_grad=True)
        _, L, U = lib.lu_unpack(*lib.linalg.lu_factor(x), unpack_data=False)
        picked = {"L": [L], "U": [U], "LU": [L, U]}[outputs]
        lib.autograd.grad(sum(t.sum() for t in picked), x)
    compare_error(fn)
