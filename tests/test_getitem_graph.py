"""``x[key]`` records PyTorch's graph: one select/slice/unsqueeze view per basic entry of a key,
left to right (a tuple's whole-dim slices skipped, an alias when nothing is left), then one
index node for the advanced entries. Each key is checked against torch for the graph, values,
strides, the gradient, and, for basic keys, a write through the resulting view."""
import numpy as np
import pytest
import torch

import ember
from test_graph_names import graph_of
from torch_compare import compare_error


class T:
    """A tensor placeholder in a key, built in each library."""

    def __init__(self, data, dtype="int64"):
        self.data, self.dtype = data, dtype

    def __repr__(self):
        return f"T({self.data!r}, {self.dtype})"


def _key(lib, key):
    if isinstance(key, tuple):
        return tuple(_key(lib, k) for k in key)
    if isinstance(key, T):
        return lib.tensor(key.data, dtype=getattr(lib, key.dtype))
    return key


S = slice
BASIC = [
    ((3, 4), (0, S(1, 3))),
    ((3, 4), (S(None), S(None))),
    ((3, 4), (S(None),)),
    ((3, 4), (S(1, 3),)),
    ((3, 4), S(None)),
    ((3, 4), (S(0, 3), 1)),
    ((3, 4), (S(0, 100), 1)),
    ((3, 4), (S(-3, None), 1)),
    ((3, 4), (S(0, None, 2), 1)),
    ((3, 4), (S(None), Ellipsis)),
    ((3, 4), (Ellipsis, S(None))),
    ((3, 4), (Ellipsis, None)),
    ((3, 4), (S(None), S(None, None, 2), None)),
    ((3, 4), (0, None)),
    ((3, 4), (None, 1, None)),
    ((3, 4), (T(0), S(1, None))),
    ((2, 3, 4), (1, Ellipsis, None, S(1, None))),
    ((2, 3, 4), (S(None), 0, S(None, None, 2))),
    ((2, 3, 4), (-1, -2, S(1, 3))),
    ((), Ellipsis),
    ((), (None, Ellipsis)),
]
ADVANCED = [
    ((3, 4), (S(1, None), T([0, 3, 0]))),
    ((3, 4), (T([0, 2]), S(1, None))),
    ((3, 4), (S(None), T([0, 1]))),
    ((3, 4), (None, T([0, 1]))),
    ((3, 4), (True, T([2, 0]))),
    ((3, 4), (False, S(1, None))),
    ((3, 4), True),
    ((3, 4), (S(None), T(True, "bool"))),
    ((3, 4), T(1, "uint8")),
    ((3, 4), (1, [0, 1])),
    ((2, 3, 4), (T([[True, False, True], [False, True, True]], "bool"), S(1, None))),
    ((2, 3, 4), (S(1, None), S(None), T([0, 1]))),
    ((), T(True, "bool")),
]


def _run(lib, shape, key):
    x = lib.tensor(np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape),
                   dtype=lib.float64, requires_grad=True)
    out = x[_key(lib, key)]
    w = lib.tensor(np.linspace(-1.0, 2.0, out.numel()).reshape(tuple(out.shape)),
                   dtype=lib.float64)
    (out * w).sum().backward()
    return x, out


@pytest.mark.parametrize("shape,key", BASIC + ADVANCED, ids=repr)
def test_graph_values_and_gradient_as_torch(shape, key):
    tx, tout = _run(torch, shape, key)
    ex, eout = _run(ember, shape, key)
    assert graph_of([eout], [ex]) == graph_of([tout], [tx])
    assert tuple(eout.shape) == tuple(tout.shape)
    if (shape, key) in BASIC:  # an advanced index's result is a new tensor of its own layout
        assert eout.stride() == tout.stride()
    np.testing.assert_array_equal(eout.detach().numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("shape,key", BASIC, ids=repr)
def test_basic_key_is_a_view_written_through(shape, key):
    """The chain's last view still shares the input's memory: a write through it reaches the
    input, and the gradient flows through the write as in torch."""
    results = []
    for lib in (torch, ember):
        leaf = lib.tensor(np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape),
                          dtype=lib.float64, requires_grad=True)
        x = leaf * 1
        v = x[_key(lib, key)]
        assert v.storage_offset() >= 0 and v._base is x
        v.mul_(3)
        (x * x).sum().backward()
        results.append((x.detach().numpy().copy(), leaf.grad.numpy().copy(),
                        v.storage_offset()))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])
    assert results[1][2] == results[0][2]


def test_zero_dim_uint8_index_is_a_mask():
    """A 0-d uint8 tensor indexes as a mask (a new dim of size 1 or 0), not as an integer."""
    for value in (0, 1, 2):
        results = []
        for lib in (torch, ember):
            x = lib.arange(12.0).reshape(3, 4)
            shape = tuple(x[lib.tensor(value, dtype=lib.uint8)].shape)
            x[lib.tensor(value, dtype=lib.uint8)] = -1.0
            results.append((shape, x.numpy().tolist()))
        assert results[1] == results[0]


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("key", [
    (Ellipsis, 9), (0, Ellipsis, 9), (None, None, 5), (S(None), None, 7), (5,), 5, (0, 0, -9),
    (None, 0, 9), (None, -5, S(1, None)), (0, 9, [0]), (S(1, None), 9, [0]), (None, 0, 9, [1]),
], ids=repr)
def test_out_of_range_int_names_its_place_in_the_key(key, requires_grad):
    """PyTorch names the dimension of an out-of-range int by the int's place in the key."""
    compare_error(lambda lib: lib.zeros(2, 3, 4, requires_grad=requires_grad)[key])
