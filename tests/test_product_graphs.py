"""``matmul``, ``einsum``, ``outer`` and ``kron`` record PyTorch's graph (its ATen composites
step for step) for every rank combination, every choice of operands that need a gradient and
contiguous, strided or transposed operands; values and gradients stay torch's, and the
product kernels raise PyTorch's dtype errors."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from test_graph_names import assert_same_graph
from torch_compare import assert_same, compare, compare_error

_rng = np.random.default_rng(7)


def _pair(shape, layout):
    """The same float64 values as a torch and an Ember tensor: contiguous, a strided view
    (every other element of the last dim) or the transpose of a contiguous tensor."""
    arr = _rng.standard_normal(shape)
    if layout == "strided" and arr.ndim:
        big = np.repeat(arr, 2, axis=-1)
        return torch.from_numpy(big.copy())[..., ::2], ember.tensor(big.copy())[..., ::2]
    if layout == "transposed" and arr.ndim >= 2:
        base = np.ascontiguousarray(arr.swapaxes(-1, -2))
        return (torch.from_numpy(base.copy()).transpose(-1, -2),
                ember.tensor(base.copy()).transpose(-1, -2))
    return torch.from_numpy(arr.copy()), ember.tensor(arr.copy())


def _run_both(fn, shapes, grad_of, layout="contiguous", graph=True):
    """``fn`` on both libraries; checks the graph (unless not ``graph``), the value and every
    input's gradient."""
    pairs = [_pair(s, layout) for s in shapes]
    t_in = [t.requires_grad_(i in grad_of) for i, (t, _) in enumerate(pairs)]
    e_in = [e.requires_grad_(i in grad_of) for i, (_, e) in enumerate(pairs)]
    t_out, e_out = fn(torch, *t_in), fn(ember, *e_in)
    assert_same(t_out, e_out, rtol=1e-10, atol=1e-12)
    if not grad_of:
        assert e_out.grad_fn is None
        return
    if graph:
        assert_same_graph(t_out, t_in, e_out, e_in)
    seed = _rng.standard_normal(tuple(t_out.shape))
    t_out.backward(torch.from_numpy(seed.copy()))
    e_out.backward(ember.tensor(seed.copy()))
    for t, e in zip(t_in, e_in):
        if t.requires_grad:
            assert_same(t.grad, e.grad, rtol=1e-10, atol=1e-12)


MATMUL_SHAPES = [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)), ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)), ((2, 2, 3, 4), (4,)), ((4,), (2, 2, 4, 3)),
    ((3, 4), (2, 2, 4, 3)), ((2, 2, 3, 4), (2, 4, 5)), ((0, 3, 4), (4, 2)), ((3, 0), (2, 0, 5)),
]
GRAD_PATTERNS = [(0, 1), (0,), (1,), ()]


@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed"])
@pytest.mark.parametrize("grad_of", GRAD_PATTERNS, ids=str)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_graph_value_and_gradient(shapes, grad_of, layout):
    _run_both(lambda lib, a, b: lib.matmul(a, b), shapes, grad_of, layout)


def test_matmul_operator_and_kernels_keep_their_single_node():
    """``@`` of matrices is one ``MmBackward0``; ``torch.bmm``/``mm``/``mv``/``dot`` are
    their kernel's node alone (the composite belongs to ``matmul`` only)."""
    for fn, shapes in ((lambda lib, a, b: a @ b, ((3, 4), (4, 5))),
                       (lambda lib, a, b: lib.bmm(a, b), ((2, 3, 4), (2, 4, 5))),
                       (lambda lib, a, b: lib.mm(a, b), ((3, 4), (4, 5))),
                       (lambda lib, a, b: lib.mv(a, b), ((3, 4), (4,))),
                       (lambda lib, a, b: lib.dot(a, b), ((4,), (4,)))):
        _run_both(fn, shapes, (0, 1))


def test_matmul_higher_order_gradient():
    """Second derivatives through the composite (the graph of a backward formula is not
    compared: that is each node's own business)."""
    def fn(lib, a, b):
        out = lib.matmul(a, b)
        (ga,) = lib.autograd.grad((out * out).sum(), a, create_graph=True)
        return ga
    _run_both(fn, ((2, 3, 4), (4, 5)), (0, 1), graph=False)
    _run_both(fn, ((4,), (2, 4, 5)), (0, 1), graph=False)


@pytest.mark.parametrize("shapes", [((2, 3, 4), (4, 5)), ((3, 4), (4, 5)), ((4,), (4,))],
                         ids=str)
def test_matmul_out_with_grad_raises_as_torch(shapes):
    compare_error(lambda lib: lib.matmul(lib.ones(shapes[0], requires_grad=True),
                                         lib.ones(shapes[1]), out=lib.empty(0)))
    def no_grad_out(lib):
        out = lib.empty(0)
        lib.matmul(lib.ones(shapes[0]), lib.ones(shapes[1]), out=out)
        return out
    assert_same(no_grad_out(torch), no_grad_out(ember))


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((4,), (4, 5)), ((2, 3, 4), (4, 5)),
                                    ((4,), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)), ((4,), (4,))],
                         ids=str)
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("bool", "bool")], ids=str)
def test_matmul_dtype_errors_name_the_kernel(shapes, dtypes):
    """The error comes from the kernel the composite reaches: addmv, mm, bmm or dot."""
    compare_error(lambda lib: lib.matmul(lib.ones(shapes[0], dtype=getattr(lib, dtypes[0])),
                                         lib.ones(shapes[1], dtype=getattr(lib, dtypes[1]))))


def test_bmm_dtype_error_as_torch():
    compare_error(lambda lib: lib.bmm(lib.ones(1, 3, 4), lib.ones(1, 4, 5, dtype=lib.float64)))
    compare_error(lambda lib: lib.bmm(lib.ones(1, 3, 4, dtype=lib.bool),
                                      lib.ones(1, 4, 5, dtype=lib.bool)))


EINSUMS = [
    ("ij,jk->ik", ((3, 4), (4, 5))), ("ij,jk", ((3, 1), (4, 5))), ("ij,jk->ik", ((3, 4), (1, 5))),
    ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))), ("bij,bjk->bik", ((1, 3, 4), (2, 4, 5))),
    ("ii->i", ((3, 3),)), ("ii", ((3, 3),)), ("iij->j", ((3, 3, 2),)), ("iji->j", ((3, 2, 3),)),
    ("jii->ij", ((2, 3, 3),)), ("iiii->i", ((2, 2, 2, 2),)),
    ("i,j->ij", ((3,), (4,))), ("i,i->", ((5,), (5,))), ("i,i->i", ((5,), (5,))),
    ("...ij,...jk->...ik", ((2, 1, 3, 4), (5, 4, 2))), ("...ij,...jk", ((3, 4), (2, 4, 5))),
    ("...ij->...", ((2, 3, 4),)), ("i...->...", ((2, 3, 4),)), ("...ii->...i", ((2, 3, 3),)),
    ("ij->", ((3, 4),)), ("ij->ji", ((3, 4),)), ("ba,ac", ((3, 4), (4, 5))),
    ("bA,Ac->cb", ((3, 4), (4, 5))), ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 5))),
    ("bi,bj,bk->bij", ((2, 3), (2, 4), (2, 5))), ("ij,jk,ki->", ((2, 3), (3, 4), (4, 2))),
    ("abc,cd,bd->a", ((2, 3, 4), (4, 5), (3, 5))), ("ijk,k,j->i", ((2, 3, 4), (4,), (3,))),
    ("i,jk,k->ij", ((2,), (3, 4), (4,))), ("ij,kl->ijkl", ((2, 3), (1, 4))),
]


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_graph_value_and_gradient(equation, shapes, layout):
    _run_both(lambda lib, *ops: lib.einsum(equation, *ops), shapes, tuple(range(len(shapes))),
              layout)


@pytest.mark.parametrize("equation,shapes", EINSUMS[:12], ids=[e for e, _ in EINSUMS[:12]])
def test_einsum_first_operand_only_needs_grad(equation, shapes):
    _run_both(lambda lib, *ops: lib.einsum(equation, *ops), shapes, (0,))


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "float16"])
@pytest.mark.parametrize("equation,shapes", [("ij,jk->ik", ((3, 4), (4, 5))),
                                             ("ij,jk->ik", ((3, 1), (4, 5))),
                                             ("i,j->ij", ((3,), (4,))), ("ij->", ((3, 4),)),
                                             ("ii->i", ((3, 3),)),
                                             ("ij,jkl->ik", ((3, 4), (4, 5, 2)))], ids=str)
def test_einsum_dtypes_and_their_errors(equation, shapes, dtype):
    """Result dtypes as torch's (an integer operand summed on its own becomes int64), and
    where torch's kernels refuse the dtypes (bool ``bmm``, int32 against int64) Ember does."""
    arrays = [_rng.integers(0, 3, s) for s in shapes]

    def fn(lib):
        return lib.einsum(equation, *[lib.tensor(a).to(getattr(lib, dtype)) for a in arrays])
    try:
        expected = fn(torch)
    except Exception:
        compare_error(fn)
        return
    assert_same(expected, fn(ember))


def test_einsum_ellipsis_error_names_the_operand_dim():
    compare_error(lambda lib: lib.einsum("...ij,...jk", lib.ones(2, 3, 4), lib.ones(3, 4, 5)))
    compare_error(lambda lib: lib.einsum("i...j,...jk", lib.ones(2, 3, 2, 4),
                                         lib.ones(5, 4, 5)))
    compare_error(lambda lib: lib.einsum("ij,jk", lib.ones(2, 3), lib.ones(4, 5)))


def test_einsum_mixed_devices_raise(device):
    other = "testdev" if device == "cpu" else "cpu"
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.einsum("i,i->", ember.ones(3, device=device), ember.ones(3, device=other))


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("grad_of", [(0, 1), (0,), (1,)], ids=str)
@pytest.mark.parametrize("shapes", [((3,), (4,)), ((0,), (2,))], ids=str)
def test_outer_graph(shapes, grad_of, layout):
    _run_both(lambda lib, a, b: lib.outer(a, b), shapes, grad_of, layout)


_KRON_SHAPES = [((2, 3), (3, 2)), ((2,), (3, 4)), ((), (3,)), ((2, 1, 2), (3, 2)),
                ((0, 2), (2, 2)), ((2, 3), ())]


@pytest.mark.parametrize("grad_of", [(0, 1), (1,)], ids=str)
@pytest.mark.parametrize("shapes,layout", [
    (shapes, layout) for shapes in _KRON_SHAPES for layout in ("contiguous", "strided",
                                                               "transposed")
    if layout == "contiguous" or () not in shapes],  # a 0-d operand has one layout
    ids=str)
def test_kron_graph(shapes, grad_of, layout):
    if layout == "transposed" and len(shapes[0]) != len(shapes[1]):
        # torch 2.13's _unsafe_view refuses the padded view of a transposed operand ("view
        # size is not compatible"); Ember computes it, so compare with a contiguous copy.
        def fn(lib, a, b):
            return lib.kron(a, b) if lib is ember else lib.kron(a.contiguous(), b.contiguous())
        _run_both(fn, shapes, grad_of, layout, graph=False)
        return
    _run_both(lambda lib, a, b: lib.kron(a, b), shapes, grad_of, layout)


def test_matmul_result_on_the_operands_device(device):
    a = ember.ones(2, 3, 4, device=device, requires_grad=True)
    b = ember.ones(4, device=device, requires_grad=True)
    out = a @ b
    out.sum().backward()
    assert out.device.type == device and a.grad.device.type == device
    np.testing.assert_array_equal(a.grad.cpu().numpy(), np.ones((2, 3, 4)))
    np.testing.assert_array_equal(b.grad.cpu().numpy(), np.full(4, 6.0))


# ---- kron: the mixed-product law, devices --------------------------------------------------------

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


def test_ops_refuse_mixed_devices():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.kron(ember.ones(2, 3), ember.ones(2, 3, device="testdev"))


# ---- addr and the in-place products --------------------------------------------------------------

def test_addr_mixed_devices():
    with pytest.raises(RuntimeError, match="same device"):
        ember.addr(ember.zeros(2, 3), ember.ones(2, device="testdev"), ember.ones(3))


def test_integer_scalars_of_addr():
    compare(lambda lib: lib.addr(lib.ones(2, 2), lib.arange(2), lib.arange(2), beta=2, alpha=2.5))
    compare_error(lambda lib: lib.addr(lib.zeros(2, 2, dtype=lib.int64), lib.arange(2),
                                       lib.arange(2), beta=0.5))
    compare_error(lambda lib: lib.addr(lib.zeros(2, 2, dtype=lib.int64), lib.arange(2),
                                       lib.arange(2), alpha=2.5))


def test_inplace_matrix_ops_and_shifts():
    rng = np.random.default_rng(0)
    m, a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 5)), rng.normal(size=(5, 4))
    ba, bb = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 5, 4))
    v = rng.normal(size=5)
    compare(lambda lib: lib.tensor(m).addmm_(lib.tensor(a), lib.tensor(b), beta=0.5))
    compare(lambda lib: lib.tensor(m).addbmm_(lib.tensor(ba), lib.tensor(bb)))
    compare(lambda lib: lib.tensor(m).expand(2, 3, 4).clone().baddbmm_(lib.tensor(ba), lib.tensor(bb)))
    compare(lambda lib: lib.tensor(m[:, 0]).addmv_(lib.tensor(a), lib.tensor(v), alpha=2))
    compare(lambda lib: lib.addmv_(lib.tensor(m[:, 0]), lib.tensor(a), lib.tensor(v)))
    compare(lambda lib: lib.tensor([1, 2, 3]).bitwise_left_shift_(2))
    compare(lambda lib: lib.tensor([8, 16, 3]).bitwise_right_shift_(lib.tensor([1, 2, 0])))
    compare(lambda lib: lib.arccos_(lib.tensor([0.5, -0.2])))
    compare(lambda lib: lib.fix_(lib.tensor([1.5, -2.7])))
