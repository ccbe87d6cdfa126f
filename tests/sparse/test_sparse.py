"""Sparse COO and CSR tensors (``ember.sparse``) against PyTorch: construction, invariants,
reprs, conversions, the ops and their gradients, and a two-layer GCN."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare, compare_error

# torch's notices that CSR is in beta and that it skips invariant checks by default
pytestmark = pytest.mark.filterwarnings("ignore:.*[Ss]parse.*:UserWarning")

LIBS = (torch, ember)


def _rng(seed=0):
    return np.random.default_rng(seed)


def random_coo(rng, shape, nnz, sparse_dim=None):
    """Index and value arrays with repeats (nnz draws from a small index space)."""
    sparse_dim = len(shape) if sparse_dim is None else sparse_dim
    idx = np.stack([rng.integers(0, s, nnz) for s in shape[:sparse_dim]]).reshape(sparse_dim, nnz)
    vals = rng.standard_normal((nnz,) + tuple(shape[sparse_dim:]))
    return idx.astype(np.int64), vals


def coo(lib, idx, vals, shape, dtype="float64", device="cpu", **kw):
    dev = {"device": device} if lib is ember else {}
    return lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals, dtype=getattr(lib, dtype)),
                                 shape, **dev, **kw)


def dense(lib, array, dtype="float64", device="cpu", **kw):
    dev = {"device": device} if lib is ember else {}
    return lib.tensor(array, dtype=getattr(lib, dtype), **dev, **kw)


def assert_sparse_same(expected, actual, exact_pattern=True, rtol=1e-6, atol=1e-8):
    """Same layout, shape, dtype, nnz and (with ``exact_pattern``) the same stored arrays."""
    assert isinstance(actual, ember.Tensor)
    assert str(actual.layout).split(".")[-1] == str(expected.layout).split(".")[-1]
    assert tuple(actual.shape) == tuple(expected.shape)
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    if exact_pattern:
        assert actual._nnz() == expected._nnz()
        if expected.layout is torch.sparse_coo:
            assert actual.is_coalesced() == expected.is_coalesced()
            np.testing.assert_array_equal(np.asarray(actual._indices()),
                                          expected._indices().numpy())
            assert_same(expected._values(), actual._values(), rtol, atol)
        else:
            np.testing.assert_array_equal(np.asarray(actual.crow_indices()),
                                          expected.crow_indices().numpy())
            np.testing.assert_array_equal(np.asarray(actual.col_indices()),
                                          expected.col_indices().numpy())
            assert_same(expected.values(), actual.values(), rtol, atol)
    assert_same(expected.detach().to_dense(), actual.detach().to_dense(), rtol, atol)


# ---- layouts ------------------------------------------------------------------------------------
def test_layout_objects():
    for name in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        assert repr(getattr(ember, name)) == repr(getattr(torch, name)).replace("torch", "ember")
        assert isinstance(getattr(ember, name), ember.layout)
    assert type(torch.strided).__name__ == type(ember.strided).__name__ == "layout"


def test_layout_attributes():
    for lib in LIBS:
        d = lib.ones(2, 3)
        s, c = d.to_sparse(), d.to_sparse_csr()
        got = [(str(x.layout).split(".")[1], x.is_sparse, x.is_sparse_csr) for x in (d, s, c)]
        if lib is torch:
            expected = got
    assert got == expected == [("strided", False, False), ("sparse_coo", True, False),
                               ("sparse_csr", False, True)]
    assert isinstance(s, ember.Tensor)
    d = ember.ones(2)
    assert d.to_dense() is d  # as torch: a strided tensor is its own dense form
    assert torch.ones(2).sparse_dim() == d.sparse_dim() == 0
    assert torch.ones(2).dense_dim() == d.dense_dim() == 1


def test_unsupported_layouts_raise_clearly():
    with pytest.raises(NotImplementedError, match="sparse_csc is not supported"):
        ember.ones(2, 3).to_sparse(layout=ember.sparse_csc)


# ---- construction and repr ----------------------------------------------------------------------
REPR_CASES = [
    "lib.sparse_coo_tensor([[0, 1, 1, 0], [2, 0, 2, 2]], [3., 4., 5., 6.], (2, 3))",
    "lib.sparse_coo_tensor([[0, 1, 1, 0], [2, 0, 2, 2]], [3., 4., 5., 6.])",
    "lib.sparse_coo_tensor([[0, 1, 1, 0], [2, 0, 2, 2]], [3., 4., 5., 6.], (2, 3)).coalesce()",
    "lib.sparse_coo_tensor([[0, 1], [1, 1]], [1, 2])",
    "lib.sparse_coo_tensor([[0, 1], [1, 1]], [1., 2.], dtype=lib.float64, requires_grad=True)",
    "lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.long), lib.zeros(0), (2, 3))",
    "lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.long), lib.zeros(0))",
    "lib.sparse_coo_tensor([[0, 1, 1]], lib.ones(3, 2))",
    "lib.tensor([[0., 1., 0.], [2., 0., 3.]]).to_sparse()",
    "lib.tensor([[0., 1., 0.], [2., 0., 3.]]).to_sparse(1)",
    "lib.tensor([[0., 1., 0.], [2., 0., 3.]]).to_sparse_csr()",
    "lib.tensor([[0., 1., 0.], [2., 0., 3.]], dtype=lib.float64).to_sparse_csr()",
    "lib.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [1., 2., 3.])",
    "lib.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [1., 2., 3.], (2, 4), requires_grad=True)",
    "lib.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], (2, 2), requires_grad=True) * 2",
    "lib.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], (2, 2)).double()",
]


@pytest.mark.parametrize("expr", REPR_CASES)
def test_repr(expr):
    expected = repr(eval(expr, {"lib": torch})).replace("torch.", "ember.")
    assert repr(eval(expr, {"lib": ember})) == expected


@pytest.mark.parametrize("expr", REPR_CASES)
def test_construction_metadata(expr):
    t, e = eval(expr, {"lib": torch}), eval(expr, {"lib": ember})
    assert e.sparse_dim() == t.sparse_dim() and e.dense_dim() == t.dense_dim()
    assert e._nnz() == t._nnz() and e.requires_grad == t.requires_grad
    assert e.is_leaf == t.is_leaf and e.numel() == t.numel() and e.dim() == t.dim()
    assert_sparse_same(t, e)


def test_construction_dtype_device(device):
    e = ember.sparse_coo_tensor([[0, 1]], [1, 2], (3,), dtype=ember.float64, device=device)
    assert e.dtype is ember.float64 and e.device.type == device
    assert e._values().device == e._indices().device == e.device
    c = ember.sparse_csr_tensor([0, 1, 2], [1, 0], [1., 2.], device=device)
    assert c.device.type == device and tuple(c.shape) == (2, 2)


INVARIANT_ERRORS = [
    lambda lib: lib.sparse_coo_tensor([[0, 1, 1, 0], [2, 0, 2, 2]], [3., 4., 5., 6.], (1, 3),
                                      check_invariants=True),
    lambda lib: lib.sparse_coo_tensor([[0, -1], [2, 0]], [3., 4.], (2, 3),
                                      check_invariants=True),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4., 5.], (2, 3)),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [2, 0]], lib.tensor(1.), (2, 3)),
    lambda lib: lib.sparse_coo_tensor([0, 1, 1], lib.ones(3)),
    lambda lib: lib.sparse_coo_tensor([[[0, 1]]], lib.ones(2)),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (2,)),
    lambda lib: lib.sparse_coo_tensor([[0, 1]], lib.ones(2, 3), (2, 4)),
    lambda lib: lib.sparse_coo_tensor([[0, 1]], lib.ones(2, 3), (2, 3, 4)),
    lambda lib: lib.sparse_csr_tensor([0, 1, 3], [1, 0, 5], [1., 2, 3], (2, 3),
                                      check_invariants=True),
    lambda lib: lib.sparse_csr_tensor([0, 1, 4], [1, 0, 2], [1., 2, 3], (2, 3),
                                      check_invariants=True),
    lambda lib: lib.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [1., 2, 3], (3, 3),
                                      check_invariants=True),
    lambda lib: lib.sparse_csr_tensor([1, 1, 3], [1, 0, 2], [1., 2, 3], (2, 3),
                                      check_invariants=True),
    lambda lib: lib.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [1., 2], (2, 3),
                                      check_invariants=True),
    lambda lib: lib.sparse_csr_tensor([0, 1, 3], [1, 2, 2], [1., 2, 3], (2, 3),
                                      check_invariants=True),
]


@pytest.mark.parametrize("fn", INVARIANT_ERRORS)
def test_invariant_errors(fn):
    compare_error(fn)


def test_invariants_are_always_checked():
    # torch skips the checks unless asked (and then reads out of bounds); Ember always checks
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size "
                                           "is 1 but found index 1"):
        ember.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (1, 3))


ACCESSOR_ERRORS = [
    lambda lib: lib.ones(2, 3).indices(),
    lambda lib: lib.ones(2, 3).values(),
    lambda lib: lib.ones(2, 3).coalesce(),
    lambda lib: lib.ones(2, 3).is_coalesced(),
    lambda lib: lib.ones(2, 3).crow_indices(),
    lambda lib: lib.ones(2, 3).to_sparse_csr().indices(),
    lambda lib: lib.ones(2, 3).to_sparse().crow_indices(),
    lambda lib: lib.ones(2, 3).to_sparse().col_indices(),
    lambda lib: lib.sparse_coo_tensor([[0, 0], [1, 1]], [1., 2.]).indices(),
    lambda lib: lib.sparse_coo_tensor([[0, 0], [1, 1]], [1., 2.]).values(),
    lambda lib: lib.ones(2, 3).to_sparse().numpy(),
    lambda lib: lib.ones(2, 3).to_sparse().data_ptr(),
    lambda lib: lib.ones(2, 3).to_sparse().to_sparse(1),
    lambda lib: lib.ones(2, 3).to_sparse(3),
    lambda lib: lib.sparse_coo_tensor([[0, 1]], lib.ones(2, 3)).to_sparse_csr(),
    lambda lib: lib.ones(2, 3).to_sparse() + lib.ones(2, 3),
    lambda lib: lib.ones(2, 3).to_sparse() + lib.ones(3, 3).to_sparse(),
]


@pytest.mark.parametrize("fn", ACCESSOR_ERRORS)
def test_accessor_errors(fn):
    compare_error(fn)


@pytest.mark.parametrize("name", ["_nnz", "_indices", "_values"])
def test_sparse_only_accessors_of_strided_raise(name):
    for lib in LIBS:
        with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{name}'"):
            getattr(lib.ones(2), name)()


def test_dense_op_on_sparse_raises_clearly():
    s = ember.ones(2, 3).to_sparse()
    with pytest.raises(RuntimeError, match="not supported on tensors of layout "
                                           "ember.sparse_coo.*to_dense"):
        ember.exp(s)
    assert not hasattr(s._data, "reshape")  # hasattr sees only AttributeError


# ---- coalesce and conversions -------------------------------------------------------------------
@pytest.mark.parametrize("shape, nnz, sparse_dim", [((4, 5), 30, None), ((3, 7), 0, None),
                                                    ((2, 3, 4), 25, None), ((6, 3), 12, 1),
                                                    ((5, 4, 2), 20, 2), ((1, 1), 5, None)])
def test_coalesce(shape, nnz, sparse_dim, device):
    idx, vals = random_coo(_rng(), shape, nnz, sparse_dim)
    t = coo(torch, idx, vals, shape)
    e = coo(ember, idx, vals, shape, device=device)
    assert_sparse_same(t, e)
    assert_sparse_same(t.coalesce(), e.coalesce())
    assert e.coalesce().is_coalesced() and e.coalesce().coalesce().is_coalesced()
    assert_same(t.coalesce().indices(), e.coalesce().indices())
    assert_same(t.coalesce().values(), e.coalesce().values())


@pytest.mark.parametrize("shape, sparse_dim", [((4, 5), None), ((4, 5), 1), ((3, 2, 4), 2),
                                               ((3, 2, 4), None), ((0, 3), None)])
def test_dense_to_sparse_and_back(shape, sparse_dim, device):
    array = _rng(1).standard_normal(shape) * (_rng(2).random(shape) < 0.4)
    args = () if sparse_dim is None else (sparse_dim,)
    t = dense(torch, array).to_sparse(*args)
    e = dense(ember, array, device=device).to_sparse(*args)
    assert_sparse_same(t, e)
    assert_sparse_same(dense(torch, array).to_sparse_coo(), dense(ember, array).to_sparse_coo())


@pytest.mark.parametrize("shape, nnz", [((4, 5), 9), ((3, 3), 0), ((1, 6), 4), ((6, 2), 30)])
def test_csr_conversions(shape, nnz, device):
    idx, vals = random_coo(_rng(3), shape, nnz)
    t, e = coo(torch, idx, vals, shape), coo(ember, idx, vals, shape, device=device)
    assert_sparse_same(t.to_sparse_csr(), e.to_sparse_csr())
    assert_sparse_same(t.to_sparse_csr().to_sparse(), e.to_sparse_csr().to_sparse())
    assert_sparse_same(t.to_sparse(layout=torch.sparse_csr),
                       e.to_sparse(layout=ember.sparse_csr))
    array = t.to_dense().numpy()
    assert_sparse_same(dense(torch, array).to_sparse_csr(),
                       dense(ember, array, device=device).to_sparse_csr())
    csr_t = torch.sparse_csr_tensor(t.to_sparse_csr().crow_indices(),
                                    t.to_sparse_csr().col_indices(), t.to_sparse_csr().values(),
                                    shape)
    e_csr = e.to_sparse_csr()
    csr_e = ember.sparse_csr_tensor(e_csr.crow_indices(), e_csr.col_indices(), e_csr.values(),
                                    shape)
    assert_sparse_same(csr_t, csr_e)


def test_to_dense_with_duplicates_sums_them(device):
    idx, vals = random_coo(_rng(4), (3, 3), 40)
    assert_same(coo(torch, idx, vals, (3, 3)).to_dense(),
                coo(ember, idx, vals, (3, 3), device=device).to_dense())


# ---- element-wise, shape and dtype ops ----------------------------------------------------------
ELEMENTWISE = [
    lambda lib, s, s2: s * 2.5,
    lambda lib, s, s2: 3 * s,
    lambda lib, s, s2: s * lib.tensor(2.),
    lambda lib, s, s2: s / 4,
    lambda lib, s, s2: -s,
    lambda lib, s, s2: s.mul(0.5),
    lambda lib, s, s2: s + s,
    lambda lib, s, s2: s.coalesce() + s2.coalesce(),
    lambda lib, s, s2: s.coalesce() - s2.coalesce(),
    lambda lib, s, s2: s.coalesce().add(s2.coalesce(), alpha=2),
    lambda lib, s, s2: s.t(),
    lambda lib, s, s2: s.coalesce().t(),
    lambda lib, s, s2: s.transpose(0, 1),
    lambda lib, s, s2: s.transpose(-1, 0),
    lambda lib, s, s2: s.double(),
    lambda lib, s, s2: s.float(),
    lambda lib, s, s2: s.to(lib.float32),
    lambda lib, s, s2: s.detach(),
    lambda lib, s, s2: s.clone(),
    lambda lib, s, s2: s.coalesce().clone(),
    lambda lib, s, s2: s.long() * 2.5,
    lambda lib, s, s2: s.long() / 2,
]


@pytest.mark.parametrize("fn", ELEMENTWISE)
def test_elementwise_and_shape(fn, device):
    rng = _rng(5)
    (i1, v1), (i2, v2) = random_coo(rng, (4, 3), 10), random_coo(rng, (4, 3), 6)
    t = fn(torch, coo(torch, i1, v1, (4, 3)), coo(torch, i2, v2, (4, 3)))
    e = fn(ember, coo(ember, i1, v1, (4, 3), device=device),
           coo(ember, i2, v2, (4, 3), device=device))
    assert_sparse_same(t, e)


def test_add_of_uncoalesced_operands_equals_torch():
    rng = _rng(6)
    (i1, v1), (i2, v2) = random_coo(rng, (4, 3), 10), random_coo(rng, (4, 3), 6)
    t = coo(torch, i1, v1, (4, 3)) + coo(torch, i2, v2, (4, 3))
    e = coo(ember, i1, v1, (4, 3)) + coo(ember, i2, v2, (4, 3))
    # torch merges the operands' lists in an order of its own; the tensor is the same
    assert_sparse_same(t, e, exact_pattern=False)
    assert_sparse_same(t.coalesce(), e.coalesce())
    assert e.is_coalesced() == t.is_coalesced()


def test_scaling_by_a_tensor_that_requires_grad_raises():
    s = ember.ones(2, 2).to_sparse()
    with pytest.raises(NotImplementedError, match="0-d tensor factor"):
        s * ember.tensor(2., requires_grad=True)


SHAPE_ERRORS = [
    lambda lib: lib.ones(2, 3, 4).to_sparse().t(),
    lambda lib: lib.sparse_coo_tensor([[0, 1]], lib.ones(2, 3)).t(),
    lambda lib: lib.ones(2, 3).to_sparse().transpose(0, 5),
]


@pytest.mark.parametrize("fn", SHAPE_ERRORS)
def test_shape_errors(fn):
    compare_error(fn)


# ---- reductions ---------------------------------------------------------------------------------
SUMS = [
    lambda lib, s: s.sum(),
    lambda lib, s: s.sum(dtype=lib.float32),
    lambda lib, s: lib.sparse.sum(s),
    lambda lib, s: lib.sparse.sum(s, 0),
    lambda lib, s: lib.sparse.sum(s, 1),
    lambda lib, s: lib.sparse.sum(s, (0, 1)),
    lambda lib, s: lib.sparse.sum(s, -1),
    lambda lib, s: lib.sparse.sum(s, dtype=lib.float32),
    lambda lib, s: s.sum(0),
]


@pytest.mark.parametrize("fn", SUMS)
@pytest.mark.parametrize("shape, nnz, sparse_dim", [((4, 3), 12, None), ((4, 3), 0, None),
                                                    ((5, 3, 2), 9, 2), ((5, 3), 7, 1)])
def test_sums(fn, shape, nnz, sparse_dim, device):
    idx, vals = random_coo(_rng(7), shape, nnz, sparse_dim)
    t = fn(torch, coo(torch, idx, vals, shape))
    e = fn(ember, coo(ember, idx, vals, shape, device=device))
    if t.layout is torch.strided:
        assert e.layout is ember.strided
        assert_same(t, e)
    else:
        assert_sparse_same(t, e)


@pytest.mark.parametrize("dims", [(2,), (0, 2), (1, 2)])
def test_sparse_sum_over_dense_dims(dims):
    idx, vals = random_coo(_rng(8), (4, 3, 5), 9, 2)
    t = torch.sparse.sum(coo(torch, idx, vals, (4, 3, 5)), dims)
    e = ember.sparse.sum(coo(ember, idx, vals, (4, 3, 5)), dims)
    assert_sparse_same(t, e)


def test_sparse_sum_of_dense_raises():
    compare_error(lambda lib: lib.sparse.sum(lib.ones(2, 3)))


# ---- products -----------------------------------------------------------------------------------
PRODUCTS = [
    lambda lib, s, d: lib.sparse.mm(s, d),
    lambda lib, s, d: lib.mm(s, d),
    lambda lib, s, d: lib.matmul(s, d),
    lambda lib, s, d: s @ d,
    lambda lib, s, d: s.mm(d),
    lambda lib, s, d: s.matmul(d),
    lambda lib, s, d: s @ d[:, 0],
    lambda lib, s, d: lib.sparse.addmm(d.new_ones(s.shape[0], d.shape[1]), s, d),
    lambda lib, s, d: lib.sparse.addmm(d.new_ones(s.shape[0], d.shape[1]), s, d,
                                       beta=0.5, alpha=2.0),
    lambda lib, s, d: lib.addmm(d.new_ones(s.shape[0], d.shape[1]), s, d),
    lambda lib, s, d: lib.smm(s, d),
    lambda lib, s, d: d.t() @ s.t().to_dense().t().to_sparse().t(),
]


# torch.smm and to_sparse of a transposed COO matrix have no CSR form
PRODUCT_CASES = [(fn, layout) for i, fn in enumerate(PRODUCTS) for layout in ("coo", "csr")
                 if layout == "coo" or i < 10]


@pytest.mark.parametrize("fn, layout", PRODUCT_CASES)
@pytest.mark.parametrize("shape, nnz", [((5, 4), 12), ((3, 7), 0), ((6, 2), 20), ((1, 1), 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products(fn, layout, shape, nnz, dtype, device):
    rng = _rng(9)
    idx, vals = random_coo(rng, shape, nnz)
    d = rng.standard_normal((shape[1], 3))
    t_s, e_s = coo(torch, idx, vals, shape, dtype), coo(ember, idx, vals, shape, dtype, device)
    if layout == "csr":
        t_s, e_s = t_s.to_sparse_csr(), e_s.to_sparse_csr()
    t = fn(torch, t_s, dense(torch, d, dtype))
    e = fn(ember, e_s, dense(ember, d, dtype, device))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else {}
    if t.layout is torch.strided:
        assert_same(t, e, **tol)
    else:
        assert_sparse_same(t, e, **tol)


def test_smm_of_a_dense_tensor_raises():
    compare_error(lambda lib: lib.smm(lib.ones(2, 2), lib.ones(2, 2)))


@pytest.mark.parametrize("entry", ["ember.smm(ember.ones(2, 2).to_sparse(), ember.ones(2, 2))",
                                   "ember.ones(2, 2).to_sparse() @ ember.ones(2, 2)",
                                   "ember.sparse.mm(ember.ones(2, 2), ember.ones(2, 2))",
                                   "ember.sparse_csr_tensor([0, 1], [0], [1.]).to_dense()"])
def test_each_entry_point_works_in_a_fresh_process(entry):
    subprocess.run([sys.executable, "-c", f"import ember; {entry}"], check=True)


def test_sparse_mm_of_dense_operands_is_the_dense_product():
    compare(lambda lib: lib.sparse.mm(lib.ones(2, 3), lib.arange(6.).reshape(3, 2)))


def test_dense_times_sparse(device):
    rng = _rng(10)
    idx, vals = random_coo(rng, (4, 5), 9)
    d = rng.standard_normal((3, 4))
    assert_same(dense(torch, d) @ coo(torch, idx, vals, (4, 5)),
                dense(ember, d, device=device) @ coo(ember, idx, vals, (4, 5), device=device))
    assert_same(torch.mm(dense(torch, d), coo(torch, idx, vals, (4, 5))),
                ember.mm(dense(ember, d), coo(ember, idx, vals, (4, 5))))


PRODUCT_ERRORS = [
    lambda lib: lib.sparse.mm(lib.ones(2, 3).to_sparse(), lib.ones(2, 2)),
    lambda lib: lib.mm(lib.ones(2, 3).to_sparse(), lib.ones(2, 2)),
    lambda lib: lib.mm(lib.ones(2, 3).to_sparse(), lib.ones(3, 2).double()),
    lambda lib: lib.mm(lib.ones(2, 3).to_sparse(), lib.ones(3)),
]


@pytest.mark.parametrize("fn", PRODUCT_ERRORS)
def test_product_errors(fn):
    compare_error(fn)


# ---- softmax ------------------------------------------------------------------------------------
def _sparse_softmax_grad(lib, name, dim, idx, vals, weights, device="cpu"):
    kw = {"device": device} if lib is ember else {}
    s = lib.sparse_coo_tensor(lib.tensor(idx, **kw), lib.tensor(vals, **kw), (5, 4),
                              requires_grad=True)
    (getattr(lib.sparse, name)(s, dim).to_dense() * lib.tensor(weights, **kw)).sum().backward()
    return s.grad.coalesce()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_sparse_softmax_negative_dim(name):
    # torch's backward does not wrap a negative dim (its softmax gradients then do not sum to
    # zero along the slice); Ember's dim=-1 is exactly its dim=1
    idx, vals = random_coo(_rng(11), (5, 4), 14)
    weights = _rng(12).standard_normal((5, 4))
    last = _sparse_softmax_grad(ember, name, -1, idx, vals, weights)
    assert_sparse_same(_sparse_softmax_grad(torch, name, 1, idx, vals, weights), last)
    forward = [getattr(lib.sparse, name)(coo(lib, idx, vals, (5, 4)), -1) for lib in LIBS]
    assert_sparse_same(*forward)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax(name, dim, device):
    idx, vals = random_coo(_rng(11), (5, 4), 14)
    t_s = coo(torch, idx, vals, (5, 4), requires_grad=True)
    e_s = coo(ember, idx, vals, (5, 4), device=device, requires_grad=True)
    t, e = getattr(torch.sparse, name)(t_s, dim), getattr(ember.sparse, name)(e_s, dim)
    assert_sparse_same(t.detach(), e.detach())
    weights = _rng(12).standard_normal((5, 4))
    (t.to_dense() * dense(torch, weights)).sum().backward()
    (e.to_dense() * dense(ember, weights, device=device)).sum().backward()
    assert_sparse_same(t_s.grad.coalesce(), e_s.grad.coalesce())


# ---- gradients ----------------------------------------------------------------------------------
def _leaves(lib, idx, vals, shape, d, device="cpu", layout="coo"):
    s = coo(lib, idx, vals, shape, device=device)
    if layout == "csr":
        s = s.to_sparse_csr()
    s.requires_grad_(True)
    return s, dense(lib, d, device=device, requires_grad=True)


GRADIENT_CASES = [
    # (forward, layouts it applies to)
    (lambda lib, s, d: lib.sparse.mm(s, d).sum(), ("coo", "csr")),
    (lambda lib, s, d: (lib.sparse.mm(s, d) ** 2).sum(), ("coo", "csr")),
    (lambda lib, s, d: lib.mm(s, d).sum(), ("coo", "csr")),
    (lambda lib, s, d: (s @ d).tanh().sum(), ("coo", "csr")),
    (lambda lib, s, d: lib.sparse.addmm(d[:1, :1].expand(s.shape[0], d.shape[1]) * 1.0, s, d,
                                        beta=0.5, alpha=1.5).sum(), ("coo",)),
    (lambda lib, s, d: (s.to_dense() * lib.arange(s.numel(), dtype=s.dtype).to(d.device)
                        .reshape(s.shape)).sum(), ("coo", "csr")),
    (lambda lib, s, d: lib.sparse.sum(s), ("coo",)),
    (lambda lib, s, d: (lib.sparse.sum(s, 1).to_dense() ** 2).sum(), ("coo",)),
    (lambda lib, s, d: s.sum(), ("coo",)),
    (lambda lib, s, d: (s * 3).to_dense().pow(2).sum(), ("coo",)),
    (lambda lib, s, d: lib.sparse.mm(s.t(), d[:s.shape[0]].t().t()).sum(), ("coo",)),
    (lambda lib, s, d: (s + s).to_dense().sum(), ("coo",)),
    (lambda lib, s, d: (s.coalesce() + s.coalesce().detach() * 2).to_dense().pow(2).sum(),
     ("coo",)),
    (lambda lib, s, d: s.coalesce().values().pow(2).sum(), ("coo",)),
    (lambda lib, s, d: s.double().clone().to_dense().sum(), ("coo",)),
    (lambda lib, s, d: lib.sparse.mm(s, d).sum() + lib.sparse.sum(s) * 2, ("coo",)),
]


@pytest.mark.parametrize("case, layout", [(i, layout) for i, (_, layouts) in
                                           enumerate(GRADIENT_CASES) for layout in layouts])
@pytest.mark.parametrize("shape, nnz", [((5, 4), 12), ((4, 4), 0), ((3, 6), 15)])
def test_gradients(case, layout, shape, nnz, device):
    fn, _ = GRADIENT_CASES[case]
    rng = _rng(13)
    idx, vals = random_coo(rng, shape, nnz)
    d = rng.standard_normal((shape[1], 3)) if case != 10 else rng.standard_normal((6, 6))
    t_s, t_d = _leaves(torch, idx, vals, shape, d, layout=layout)
    e_s, e_d = _leaves(ember, idx, vals, shape, d, device, layout)
    t_out, e_out = fn(torch, t_s, t_d), fn(ember, e_s, e_d)
    assert_same(t_out, e_out)
    t_out.backward()
    e_out.backward()
    for t_leaf, e_leaf in ((t_s, e_s), (t_d, e_d)):
        if t_leaf.grad is None:
            assert e_leaf.grad is None
        elif t_leaf.grad.layout is torch.strided:
            assert e_leaf.grad.layout is ember.strided
            assert_same(t_leaf.grad, e_leaf.grad)
        elif t_leaf.grad.layout is torch.sparse_csr:
            assert_sparse_same(t_leaf.grad, e_leaf.grad)
        else:
            assert_sparse_same(t_leaf.grad, e_leaf.grad, exact_pattern=False)
            assert_sparse_same(t_leaf.grad.coalesce(), e_leaf.grad.coalesce())


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_to_dense_masked_grad_false_gives_the_whole_gradient(layout):
    idx, vals = random_coo(_rng(22), (4, 3), 6)
    weights = np.arange(12.).reshape(4, 3)  # a zero weight: that entry stays unstored
    grads = []
    for lib in LIBS:
        s = coo(lib, idx, vals, (4, 3))
        s = (s.to_sparse_csr() if layout == "csr" else s).requires_grad_()
        (s.to_dense(masked_grad=False) * dense(lib, weights)).sum().backward()
        grads.append(s.grad)
    assert_sparse_same(*grads)


def test_type_names():
    s = [lib.ones(2, 2).to_sparse() for lib in LIBS]
    assert s[1].type() == s[0].type().replace("torch", "ember")
    compare_error(lambda lib: lib.ones(2, 2).to_sparse_csr().type())


def test_sparse_gradient_has_the_inputs_pattern():
    idx, vals = random_coo(_rng(14), (4, 3), 10)
    d = _rng(15).standard_normal((3, 2))
    t_s, t_d = _leaves(torch, idx, vals, (4, 3), d)
    e_s, e_d = _leaves(ember, idx, vals, (4, 3), d)
    torch.sparse.mm(t_s, t_d).sum().backward()
    ember.sparse.mm(e_s, e_d).sum().backward()
    assert_sparse_same(t_s.grad, e_s.grad)  # indices, values and the coalesced flag


def test_gradients_accumulate_over_backward_calls():
    idx, vals = random_coo(_rng(16), (4, 3), 8)
    d = _rng(17).standard_normal((3, 2))
    grads = []
    for lib in LIBS:
        s, dd = _leaves(lib, idx, vals, (4, 3), d)
        for _ in range(2):
            lib.sparse.mm(s, dd).pow(2).sum().backward()
        grads.append(s.grad)
    assert_sparse_same(grads[0].coalesce(), grads[1].coalesce())


@pytest.mark.parametrize("through", ["sparse.mm", "mm", "to_dense", "sparse.sum"])
def test_gradient_to_values(through, device):
    idx, vals = random_coo(_rng(18), (4, 5), 14)  # duplicates: each copy gets the gradient
    d = _rng(19).standard_normal((5, 3))
    grads = []
    for lib in LIBS:
        kw = {"device": device} if lib is ember else {}
        v = lib.tensor(vals, requires_grad=True, **kw)
        s = lib.sparse_coo_tensor(lib.tensor(idx, **kw), v, (4, 5))
        assert s.requires_grad and not s.is_leaf
        dd = lib.tensor(d, **kw)
        out = {"sparse.mm": lambda: lib.sparse.mm(s, dd).pow(2).sum(),
               "mm": lambda: lib.mm(s, dd).pow(2).sum(),
               "to_dense": lambda: s.to_dense().pow(3).sum(),
               "sparse.sum": lambda: lib.sparse.sum(s, 0).to_dense().pow(2).sum()}[through]()
        out.backward()
        grads.append(v.grad)
    assert_same(*grads)


def test_csr_values_gradient():
    grads = []
    for lib in LIBS:
        v = lib.tensor([1., 2., 3.], dtype=lib.float64, requires_grad=True)
        c = lib.sparse_csr_tensor([0, 1, 3], [1, 0, 2], v, (2, 3))
        lib.sparse.mm(c, lib.ones(3, 2, dtype=lib.float64)).pow(2).sum().backward()
        grads.append(v.grad)
    assert_same(*grads)


def test_gradcheck_float64():
    rng = _rng(20)
    idx, vals = random_coo(rng, (4, 5), 11)
    i = ember.tensor(idx)
    v = ember.tensor(vals, requires_grad=True)
    d = ember.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda v, d: ember.sparse.mm(ember.sparse_coo_tensor(i, v, (4, 5)), d), (v, d))
    assert ember.autograd.gradcheck(
        lambda v, d: ember.sparse_coo_tensor(i, v, (4, 5)) @ d, (v, d))
    assert ember.autograd.gradcheck(
        lambda v: ember.sparse.sum(ember.sparse_coo_tensor(i, v, (4, 5)), 1).to_dense(), (v,))
    assert ember.autograd.gradcheck(
        lambda v: ember.sparse.softmax(ember.sparse_coo_tensor(i, v, (4, 5)), 1).to_dense(),
        (v,))
    assert ember.autograd.gradcheck(
        lambda v, d: ember.sparse.addmm(d[:4, :3], ember.sparse_coo_tensor(i, v, (4, 5)), d,
                                        beta=0.3, alpha=2.0), (v, d))


def test_double_backward_raises_clearly():
    s = ember.ones(2, 2).to_sparse().requires_grad_()
    out = ember.sparse.mm(s, ember.ones(2, 2)).sum()
    with pytest.raises(NotImplementedError, match="double backward through sparse ops"):
        ember.autograd.grad(out, s, create_graph=True)


# ---- GCN ----------------------------------------------------------------------------------------
def _normalized_adjacency(rng, n, edges):
    src, dst = rng.integers(0, n, edges), rng.integers(0, n, edges)
    a = np.zeros((n, n))
    a[src, dst] = a[dst, src] = 1.0
    a += np.eye(n)
    inv_sqrt = 1.0 / np.sqrt(a.sum(1))
    a = a * inv_sqrt[:, None] * inv_sqrt[None, :]
    idx = np.stack(np.nonzero(a))
    return idx, a[tuple(idx)]


@pytest.mark.parametrize("product", ["sparse.mm", "matmul", "csr"])
def test_two_layer_gcn_matches_torch(product):
    rng = _rng(21)
    n, f, hidden, classes = 30, 8, 16, 4
    idx, vals = _normalized_adjacency(rng, n, 60)
    x = rng.standard_normal((n, f))
    w1 = rng.standard_normal((f, hidden)) * 0.3
    w2 = rng.standard_normal((hidden, classes)) * 0.3
    labels = rng.integers(0, classes, n)
    results = []
    for lib in LIBS:
        adj = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals, dtype=lib.float32),
                                    (n, n)).coalesce()
        if product == "csr":
            adj = adj.to_sparse_csr()
        mul = lib.sparse.mm if product != "matmul" else lib.matmul
        W1 = lib.nn.Parameter(lib.tensor(w1, dtype=lib.float32))
        W2 = lib.nn.Parameter(lib.tensor(w2, dtype=lib.float32))
        X = lib.tensor(x, dtype=lib.float32)
        h = lib.relu(mul(adj, X @ W1))
        logits = mul(adj, h @ W2)
        loss = lib.nn.functional.cross_entropy(logits, lib.tensor(labels))
        loss.backward()
        results.append((logits, loss, W1.grad, W2.grad))
    assert_same(*results, rtol=1e-4, atol=1e-5)


# ---- the SciPy extra and lazy imports -----------------------------------------------------------
def test_missing_scipy_names_the_extra(monkeypatch):
    s = ember.ones(2, 2).to_sparse()  # building and converting needs no SciPy
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    with pytest.raises(ImportError, match=r"pip install 'ember\[sparse\]'"):
        s @ ember.ones(2, 2)
    assert_same(torch.ones(2, 2), s.to_dense())


def test_import_ember_loads_neither_scipy_nor_ember_sparse():
    code = ("import sys, ember\n"
            "assert 'ember.sparse' not in sys.modules and 'scipy.sparse' not in sys.modules\n"
            "s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], (2, 2)).coalesce()\n"
            "s.to_dense(); repr(s)\n"
            "assert 'scipy.sparse' not in sys.modules\n"
            "ember.sparse.mm(s, ember.ones(2, 2))\n"
            "assert 'scipy.sparse' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_spmm_of_dense_operands():
    compare(lambda lib: lib.spmm(lib.arange(6.0).reshape(2, 3), lib.ones(3, 2)))
