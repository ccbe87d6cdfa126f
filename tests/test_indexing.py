"""Indexing behaviour the op table does not reach, against PyTorch: result shapes of many mixed
keys, exact IndexError messages, accumulation over repeated indices, ``index_put_``, sorting with
ties and NaN, and the scatter/gather family's corner cases."""
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from torch_compare import compare, compare_error, compare_writing_into_self

X = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


def _np(x):
    return np.asarray(x.detach().cpu().numpy())


def _pair(array=X, requires_grad=False):
    return (torch.tensor(array, requires_grad=requires_grad),
            ember.tensor(array, requires_grad=requires_grad))


def _key(lib, key):
    """Turn the tensor placeholders of a key spec into ``lib`` tensors."""
    if isinstance(key, tuple):
        return tuple(_key(lib, k) for k in key)
    if isinstance(key, _T):
        return lib.tensor(key.data, dtype=getattr(lib, key.dtype))
    return key


class _T:
    def __init__(self, data, dtype="int64"):
        self.data, self.dtype = data, dtype

    def __repr__(self):
        return f"T({self.data})"


KEYS = [
    0, -1, (1, 2), (1, 2, 3), (slice(None), 1), (Ellipsis, 2), (None,), (None, 1, None),
    (slice(None), None, slice(1, 3)), (Ellipsis, None), (slice(None, None, 2), Ellipsis, 1),
    True, False, (None, True, 1), (1, True),
    [0, 1], [1], (slice(None), [2, 0]), ([0, 1], [2, 0]), ([1, 0], slice(None), [3, 3]),
    ([[0, 1], [1, 2]]),  # PyTorch still reads a list of lists as a tuple
    _T([1, 0, 1]), _T([[1], [0]]), _T(1), _T([-1, -2]),
    (_T([0, 1]), _T([2, 0])), (_T([0, 1]), 1, _T([2, 3])), (1, slice(None), _T([3, 0])),
    (_T([1]), slice(None), _T([0, 3])), (slice(None), _T([0, 2]), slice(1, 3)),
    (Ellipsis, _T([1, 1, 0])), (None, _T([1]), None, _T([2])), (_T([0, 1]), Ellipsis, _T([2, 0])),
    _T([True, False], "bool"), (slice(None), _T([True, False, True], "bool")),
    _T(X[..., 0] > 5, "bool"), _T(X > 10, "bool"), (_T(X[..., 0] > 5, "bool"), 1),
    (Ellipsis, _T([True, False, True, True], "bool")), _T([1, 0], "int32"), _T([1, 1], "uint8"),
    (_T(True, "bool"), 0), _T([], "int64"),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_matches_torch(key):
    t, e = _pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's deprecation notes for uint8 masks and lists
        t_out = t[_key(torch, key)]
    e_out = e[_key(ember, key)]
    assert tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_array_equal(_np(e_out), _np(t_out))
    assert e_out._is_view() == t_out._is_view()


@pytest.mark.parametrize("key", [
    3, (0, 3), (0, 0, 4), (slice(None), -4), _T([0, 2]), (slice(None), _T([3])),
    (0, slice(None), _T([-5])), _T([[True, False]], "bool"), (_T([0, 1]), _T([0, 1, 2])),
], ids=repr)
def test_index_errors_match_torch_type_and_message(key):
    t, e = _pair()
    with pytest.raises(IndexError) as t_info:
        t[_key(torch, key)]
    with pytest.raises(IndexError) as e_info:
        e[_key(ember, key)]
    # PyTorch numbers the dimension of an out-of-range *tensor* index oddly; ints are exact.
    if all(isinstance(k, (int, slice)) for k in (key if isinstance(key, tuple) else (key,))):
        assert str(e_info.value) == str(t_info.value)


def test_index_error_messages_name_dimension_and_size():
    e = ember.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        e[3]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 4"):
        e[:, 5]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        e[ember.tensor([0, 3])]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        ember.tensor(1.0)[0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        e[::-1]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        e[ember.tensor([0.0])]


@pytest.mark.parametrize("fn", [
    lambda lib, x: x[lib.tensor([1, 1, 0, 1])],
    lambda lib, x: x[:, lib.tensor([2, 2, 2])],
    lambda lib, x: x[lib.tensor([0, 0]), lib.tensor([1, 1])],
    lambda lib, x: x.index_select(1, lib.tensor([0, 0, 2])),
    lambda lib, x: x.gather(2, lib.tensor([[[0, 0, 0, 3]] * 3] * 2)),
    lambda lib, x: lib.take_along_dim(x, lib.tensor([[[1]], [[1]]]), 1),
    lambda lib, x: x.take(lib.tensor([5, 5, 23])),
    lambda lib, x: x.repeat_interleave(lib.tensor([3, 0]), dim=0),
], ids=["getitem", "getitem_dim1", "getitem_pair", "index_select", "gather", "take_along_dim",
        "take", "repeat_interleave"])
def test_repeated_indices_accumulate_gradients(fn):
    t, e = _pair(requires_grad=True)
    t_out, e_out = fn(torch, t), fn(ember, e)
    cot = np.random.default_rng(0).uniform(-1, 1, tuple(t_out.shape))
    (t_out * torch.tensor(cot)).sum().backward()
    (e_out * ember.tensor(cot)).sum().backward()
    np.testing.assert_allclose(_np(e.grad), _np(t.grad), rtol=1e-12, atol=1e-12)


def test_index_put_accumulate_and_grad():
    results = []
    for lib in (torch, ember):
        x = lib.tensor(X[0], requires_grad=True)
        v = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        y = x * 1
        idx = (lib.tensor([0, 0, 2, 0]), lib.tensor([1, 1, 3, 1]))
        y.index_put_(idx, v * v, accumulate=True)
        z = lib.index_put(y, (lib.tensor([1]),), lib.tensor(-1.0, dtype=lib.float64))
        (z * lib.arange(12.0, dtype=lib.float64).reshape(3, 4)).sum().backward()
        results.append((_np(y), _np(z), _np(x.grad), _np(v.grad)))
    for e, t in zip(results[1], results[0]):
        np.testing.assert_allclose(e, t)


def test_augmented_assignment_with_repeated_index_writes_once():
    outs = []
    for lib in (torch, ember):
        x = lib.zeros(4)
        x[lib.tensor([1, 1, 3])] += 1
        outs.append(_np(x))
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_with_ties(dtype, descending):
    data = np.array([[3, 1, 2, 1, 3, 0, 2, 2], [1, 1, 1, 0, 0, 0, 1, 0]])
    t = torch.tensor(data).to(getattr(torch, dtype))
    e = ember.tensor(data).to(getattr(ember, dtype))
    tv, ti = torch.sort(t, dim=-1, descending=descending, stable=True)
    ev, ei = ember.sort(e, dim=-1, descending=descending, stable=True)
    np.testing.assert_array_equal(_np(ev), _np(tv))
    np.testing.assert_array_equal(_np(ei), _np(ti))
    np.testing.assert_array_equal(_np(ember.argsort(e, dim=0, descending=descending, stable=True)),
                                  _np(torch.argsort(t, dim=0, descending=descending, stable=True)))


def test_sort_and_topk_put_nan_largest():
    data = [0.5, float("nan"), -1.0, 2.0]
    for descending in (False, True):
        tv, ti = torch.tensor(data).sort(descending=descending)
        ev, ei = ember.tensor(data).sort(descending=descending)
        np.testing.assert_array_equal(_np(ev), _np(tv))
        np.testing.assert_array_equal(_np(ei), _np(ti))
    tv, ti = torch.tensor(data).topk(2)
    ev, ei = ember.tensor(data).topk(2)
    np.testing.assert_array_equal(_np(ev), _np(tv))
    np.testing.assert_array_equal(_np(ei), _np(ti))


def test_sort_result_fields_and_topk_defaults():
    t, e = _pair(np.array([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]]))
    ts, es = t.sort(), e.sort()
    np.testing.assert_array_equal(_np(es.values), _np(ts.values))
    np.testing.assert_array_equal(_np(es.indices), _np(ts.indices))
    assert es.indices.dtype is ember.int64
    tk, ek = t.topk(2, largest=False, sorted=True), e.topk(2, largest=False, sorted=True)
    np.testing.assert_array_equal(_np(ek.values), _np(tk.values))
    np.testing.assert_array_equal(_np(ek.indices), _np(tk.indices))
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        e.topk(4)


def test_scatter_reduce_argument():
    index = [[0, 0], [1, 1], [2, 2]]
    outs = []
    for lib in (torch, ember):
        x = lib.arange(12.0).reshape(3, 4)
        src = lib.full((3, 2), 2.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs.append([_np(x.scatter(1, lib.tensor(index), src, reduce="multiply")),
                         _np(x.scatter(1, lib.tensor(index), src, reduce="add")),
                         _np(x.scatter(1, lib.tensor(index), 3.0, reduce="add"))])
    for e, t in zip(outs[1], outs[0]):
        np.testing.assert_array_equal(e, t)


def test_masked_select_broadcasts_input_and_mask():
    mask = np.array([[True], [False], [True]])
    t, e = _pair(np.arange(4.0), requires_grad=True)
    t_out = t.masked_select(torch.tensor(mask))
    e_out = e.masked_select(ember.tensor(mask))
    np.testing.assert_array_equal(_np(e_out), _np(t_out))
    t_out.sum().backward()
    e_out.sum().backward()
    np.testing.assert_array_equal(_np(e.grad), _np(t.grad))


def test_take_along_dim_broadcasts():
    t, e = _pair(X[0])
    t_idx, e_idx = torch.tensor([[2], [0], [3]]), ember.tensor([[2], [0], [3]])
    np.testing.assert_array_equal(_np(ember.take_along_dim(e, e_idx, dim=1)),
                                  _np(torch.take_along_dim(t, t_idx, dim=1)))
    t_idx, e_idx = torch.tensor([[0, 1, 2, 0]]), ember.tensor([[0, 1, 2, 0]])
    np.testing.assert_array_equal(_np(ember.take_along_dim(e, e_idx, dim=0)),
                                  _np(torch.take_along_dim(t, t_idx, dim=0)))


def test_nonzero_and_where_on_corner_inputs():
    for data in ([], [[0, 0], [0, 0]], 3.0, 0.0, [[1, 0, 2]]):
        t, e = torch.tensor(data), ember.tensor(data)
        np.testing.assert_array_equal(_np(e.nonzero()), _np(t.nonzero()))
        assert e.nonzero().dtype is ember.int64
        t_tuple, e_tuple = t.nonzero(as_tuple=True), e.nonzero(as_tuple=True)
        assert len(e_tuple) == len(t_tuple)
        for a, b in zip(e_tuple, t_tuple):
            np.testing.assert_array_equal(_np(a), _np(b))
        for a, b in zip(ember.where(e > 0), torch.where(t > 0)):
            np.testing.assert_array_equal(_np(a), _np(b))


def test_index_ops_need_indices_on_the_same_device():
    x = ember.zeros(3, 4)
    index = ember.tensor([0, 1], device="testdev")  # conftest registers this device
    for call in (lambda: x.index_select(0, index), lambda: x[index],
                 lambda: x.gather(0, index.reshape(1, 2))):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            call()


# ---- index_fill ... scatter_reduce: in-place forms, gradients, errors, devices -------------------

@pytest.mark.parametrize("call", [
    lambda x, y: x.index_fill_(1, x.new_tensor([0, 2]).long(), 0.5),
    lambda x, y: x.index_copy_(0, x.new_tensor([1]).long(), y[:1]),
    lambda x, y: x.put_(x.new_tensor([0, 5]).long(), y[0, :2]),
    lambda x, y: x.put_(x.new_tensor([0, 0]).long(), y[0, :2], accumulate=True),
    lambda x, y: x.masked_scatter_(y > 0, y),
    lambda x, y: x.scatter_reduce_(0, x.new_tensor([[0, 1, 1]]).long(), y, "prod"),
])
def test_inplace_forms_write_into_self(call):
    compare_writing_into_self(call)


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


@pytest.mark.parametrize("fn", [
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
    for fn in (lambda: a.index_copy(0, ember.tensor([0]), other[:1]),
               lambda: a.masked_scatter(a > 0, other),
               lambda: a.scatter_reduce(0, ember.tensor([[0]]), other, "sum")):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            fn()


@pytest.mark.parametrize("fn", [
    lambda lib: lib.index_copy(lib.ones(2, 3), 1, lib.tensor([[0]]), lib.ones(2, 1)),
    lambda lib: lib.ones(2, 3).masked_scatter(lib.ones(2, 3), lib.ones(6)),
])
def test_more_errors_match_torch(fn):
    compare_error(fn)


# ---- indexing ops older than index_fill ... scatter_reduce, checked against PyTorch --------------

A = np.random.default_rng(0).standard_normal((3, 4))


@pytest.mark.parametrize("fn", [
    lambda lib: lib.take(lib.tensor(A), lib.tensor([[0, -1], [5, 11]])),
    lambda lib: lib.tensor(A).index_put_((lib.tensor([0, 2]), lib.tensor([1, 1])),
                                         lib.tensor([5.0, 6.0], dtype=lib.float64), accumulate=True),
])
def test_existing_ops_match_torch(fn):
    compare(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.take(lib.ones(3, 4), lib.tensor([12])),
])
def test_existing_ops_errors_match_torch(fn):
    compare_error(fn)


# ---- unravel_index, fill_diagonal_ ---------------------------------------------------------------

def test_unravel_index():
    compare(lambda lib: lib.unravel_index(lib.tensor([3, -1, 6, -7, 0]), (2, 3)))
    compare(lambda lib: lib.unravel_index(lib.tensor([[1, 2], [3, 4]]), 6))
    compare(lambda lib: lib.unravel_index(lib.tensor(5, dtype=lib.int32), (2, 1, 3)))
    compare_error(lambda lib: lib.unravel_index(lib.tensor([1.0]), (2, 3)))
    compare_error(lambda lib: lib.unravel_index(lib.tensor(5), (2, -3)))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_unravel_index_inverts_ravel(shape, data):
    numel = int(np.prod(shape))
    flat = data.draw(st.lists(st.integers(0, numel - 1), min_size=1, max_size=8))
    coords = ember.unravel_index(ember.tensor(flat), tuple(shape))
    assert np.array_equal(np.ravel_multi_index([c.numpy() for c in coords], shape), flat)


def test_unravel_index_of_an_empty_shape():
    compare_error(lambda lib: lib.unravel_index(lib.tensor([1, 2]), (0, 3)))
    compare(lambda lib: lib.unravel_index(lib.tensor([], dtype=lib.int64), (0, 3)))


def test_fill_diagonal_():
    for shape, wrap in [((3, 3), False), ((7, 3), True), ((7, 3), False), ((3, 7), True),
                        ((3, 3, 3), False), ((2, 2, 2, 2), False)]:
        compare(lambda lib: lib.ones(shape).fill_diagonal_(5, wrap=wrap))
    compare_error(lambda lib: lib.ones(3).fill_diagonal_(1))
    compare_error(lambda lib: lib.ones(3, 3, 2).fill_diagonal_(1))

    def grads(lib):
        x = lib.arange(9.0).reshape(3, 3).requires_grad_()
        y = (x * 1).fill_diagonal_(-1.0)
        (y * y).sum().backward()
        return y, x.grad
    compare(grads)
    compare(lambda lib: lib.arange(16.0).reshape(4, 4)[:, ::2].fill_diagonal_(0))
