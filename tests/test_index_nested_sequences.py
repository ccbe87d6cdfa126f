"""Tuples nested inside an index key, against PyTorch. A tuple that is an element of the index
tuple is a sequence index, exactly as a list is: ``x[(0,), b]`` is ``x[[0], b]``,
``x[((0, 1), (1, 2))]`` is ``x[[0, 1], [1, 2]]``. Checked in getitem (values and gradients),
setitem (the written tensor and the gradients of both operands) and index_put_ (whose indices
must be tensors), on hand-picked keys and on keys hypothesis combines from slices, None,
Ellipsis, ints, bool masks, tensors and nested tuples."""
import builtins
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from torch_compare import assert_same

SHAPE = (3, 4, 5)
BASE = np.arange(60, dtype=np.float64).reshape(SHAPE) / 7.0


class T:
    """A tensor inside a key spec, built with the library under test."""
    def __init__(self, data):
        self.data = data

    def __repr__(self):
        return f"T({self.data!r})"


def build(lib, spec):
    """The key ``spec`` describes, with ``T(...)`` as a ``lib`` tensor."""
    if isinstance(spec, T):
        return lib.tensor(spec.data)
    if isinstance(spec, tuple):
        return tuple(build(lib, s) for s in spec)
    if isinstance(spec, list):
        return [build(lib, s) for s in spec]
    return spec


def _leaf(lib):
    return lib.tensor(BASE, requires_grad=True)


def _outcome(fn):
    """``fn(lib)`` for both libraries: the same exception type, or results to compare."""
    try:
        expected = fn(torch)
    except Exception as exc:
        with pytest.raises(type(exc)):
            fn(ember)
        return None
    return expected, fn(ember)


def check_getitem(spec):
    def fn(lib):
        x = _leaf(lib)
        out = x[build(lib, spec)]
        weights = lib.arange(out.numel(), dtype=lib.float64).reshape(out.shape) / 3.0
        (grad,) = lib.autograd.grad((out * weights).sum(), x)
        return out, grad
    pair = _outcome(fn)
    if pair is not None:
        assert_same(*pair)


def check_setitem(spec):
    try:  # a value shaped like the indexed region (or a scalar where the key is refused)
        shape = tuple(torch.empty(SHAPE)[build(torch, spec)].shape)
    except Exception:
        shape = ()
    values = 2.5 + np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)

    def fn(lib):
        x = _leaf(lib)
        target = x * 1.0
        value = lib.tensor(values, requires_grad=True)
        target[build(lib, spec)] = value
        weights = lib.arange(60, dtype=lib.float64).reshape(SHAPE)
        grads = lib.autograd.grad((target * weights).sum(), (x, value))
        return target, grads
    pair = _outcome(fn)
    if pair is not None:
        assert_same(*pair)


NESTED_KEYS = [
    ((0,), T([1, 2])),
    ((0,),),
    ((0, 1), (1, 2)),
    ((0, 1), (1, 2), (4, 0)),
    ((2, 0), slice(None), (1, 3)),
    ((0, 1), Ellipsis, (4, 0)),
    (None, (0, 2), Ellipsis, (1, 3)),
    ((1,), None, slice(1, 3)),
    ((True, False, True),),
    ((True, False, True), (0, 1)),
    (((0, 1), (1, 0)), 1),
    (((0, 1), (1, 0)),),
    ((), 1),
    ((),),
    ((0, 1), 2),
    (1, (0, 3), (2, 2)),
    (T([0, 2]), (1, 3)),
    (T([True, False, True]), (0, 1)),
    ((-1, 0), slice(None, None, 2)),
    ((0.7, 1.2),),                      # floats in a sequence truncate to int64
    ((True, 2),),                       # a bool among ints counts as 1
    ((0, (1,)),),                       # ragged: refused
    ((None,),),                         # refused: no dtype for None
    (("a",),),                          # refused: strings
    ((3,),),                            # out of range: refused
    ((0, 1), (1, 2, 3)),                # shapes that don't broadcast: refused
    ((T([1]), 0),),                     # a one-element tensor beside numbers is a number
    ((T([True]), 0),),                  # ... a bool one counts as 1
    ((T([1.0]), 0),),                   # refused: not an integer tensor
    ((T([1, 2]), 0),),                  # refused: more than one element
    ([T(1), T(2)],),                    # 0-d tensors in a list
    ([[T(1)], [0]],),
]


@pytest.mark.parametrize("spec", NESTED_KEYS, ids=[repr(k) for k in NESTED_KEYS])
def test_getitem_nested(spec):
    check_getitem(spec)


@pytest.mark.parametrize("spec", NESTED_KEYS, ids=[repr(k) for k in NESTED_KEYS])
def test_setitem_nested(spec):
    check_setitem(spec)


@pytest.mark.parametrize("spec", [((0, 1), (1, 2)), ((0,),), ((True, False, True),)])
def test_setitem_scalar_value(spec):
    def fn(lib):
        x = lib.tensor(BASE)
        x[build(lib, spec)] = -1.0
        return x
    assert_same(fn(torch), fn(ember))


def test_same_as_list_key():
    """The defining property: a tuple element reads exactly as the list with its elements."""
    x = ember.tensor(BASE)
    for tuple_key, list_key in [(((0, 1), (1, 2)), ([0, 1], [1, 2])),
                                (((0,), slice(None), (4, 0)), ([0], slice(None), [4, 0]))]:
        np.testing.assert_array_equal(x[tuple_key].numpy(), x[list_key].numpy())


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_takes_tensors_only(accumulate):
    """index_put_'s indices are tensors: a nested tuple there is PyTorch's TypeError, and the
    same indices as tensors write (and differentiate) as in PyTorch."""
    def refused(lib):
        return lib.zeros(SHAPE).index_put_(((0, 1), (1, 2)), lib.tensor(1.0), accumulate)
    with pytest.raises(TypeError) as torch_error:
        refused(torch)
    with pytest.raises(TypeError) as ember_error:
        refused(ember)
    assert str(torch_error.value) == str(ember_error.value)

    def fn(lib):
        x = _leaf(lib)
        value = lib.tensor([1.5, -2.0], dtype=lib.float64, requires_grad=True)
        index = tuple(lib.tensor(i) for i in ((0, 0), (1, 1), (2, 2)))  # one element, twice
        out = (x * 1.0).index_put_(index, value, accumulate)
        grads = lib.autograd.grad((out * out).sum(), (x, value))
        return out, grads
    assert_same(fn(torch), fn(ember))


# ---- hypothesis: random keys mixing every kind of index element -------------------------------

def _sequence(size):
    return st.lists(st.integers(-size, size - 1), min_size=0, max_size=3).map(tuple)


_element = st.one_of(
    st.integers(-3, 2),
    st.slices(4),
    st.none(),
    st.just(Ellipsis),
    _sequence(3),                                                   # a nested tuple
    st.lists(_sequence(3).filter(len), min_size=1, max_size=2).map(
        lambda rows: tuple(r[:min(map(len, rows))] for r in rows)),  # a tuple of tuples (2-D)
    st.lists(st.booleans(), min_size=3, max_size=3).map(tuple),     # a bool mask as a tuple
    _sequence(3).map(lambda s: T(list(s))),                         # an index tensor
    st.lists(st.booleans(), min_size=4, max_size=4).map(lambda s: T(s)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_element, min_size=1, max_size=4).map(tuple))
def test_random_keys_getitem(spec):
    check_getitem(spec)


@settings(max_examples=80, deadline=None)
@given(st.lists(_element, min_size=1, max_size=4).map(tuple))
def test_random_keys_setitem(spec):
    check_setitem(spec)


# ---- several Ellipses in one key ---------------------------------------------------------------
# PyTorch moves its dim counter past the dims the key leaves out at every Ellipsis, so what
# follows a later one can land past the last dim: a slice there from 0 with step 1 whose stop
# reaches the size PyTorch reads for that dim is skipped, anything else fails.

def test_two_ellipses_then_an_empty_slice():
    """The example hypothesis found: ``x[..., ..., 0:0]`` is all of a 3-D x, read and written."""
    for lib in (torch, ember):
        assert tuple(lib.zeros(2, 3, 4)[..., ..., 0:0].shape) == (2, 3, 4)
    check_getitem((Ellipsis, Ellipsis, slice(0, 0)))
    check_setitem((Ellipsis, Ellipsis, slice(0, 0)))


E = Ellipsis
MULTI_ELLIPSIS_KEYS = [
    (E, E), (E, E, E), (E, E, E, E, slice(None)),
    (E, E, slice(0, 0)), (E, E, slice(0, 1)), (E, E, slice(0, 100)), (E, E, slice(None)),
    (E, E, slice(0, None)), (E, E, slice(1, 2)), (E, E, slice(0, -1)), (E, E, slice(-100, 100)),
    (E, E, slice(None, None, 2)), (E, E, slice(None, None, -1)), (E, E, slice(0, 0, 2)),
    (E, E, slice(0, 0), slice(0, 0)), (E, E, slice(1, 3), slice(0, 0)),
    (E, E, E, slice(0, 4)), (E, E, E, slice(0, 3)), (E, E, E, 3), (E, E, E, 4), (E, E, E, -5),
    (E, E, 0), (E, E, -1), (E, E, 0, 0), (E, 0, E, 0), (0, E, E, 0), (0, E, E, 9), (0, E, 9, E),
    (0, E, E), (E, 0, E), (slice(0, 1), E, E), (E, slice(0, 1), E),
    (E, slice(1, 2), slice(0, 1), E),
    (0, E, E, slice(0, 0)), (0, 1, E, E, 2), (0, E, 1, E, 2), (0, 0, E, E, 0),
    (E, None, E), (None, E, E), (E, E, None), (E, E, slice(0, 0), None), (E, E, True),
    (E, E, False), (E, True, E), (E, E, T([0])), (E, E, T([0]), T([0])), (T([0]), E, E, T([1])),
    (E, T([1]), E), (T([1]), E, E, slice(0, 0)), (E, E, slice(1, 2), T([0])), (E, E, [0]),
    (E, E, [True, False]), (E, E, T(0)), (E, T([True, False]), E), (E, E, slice(0, 0), T([0.5])),
    (E, E, 1.5),
]
MULTI_ELLIPSIS_SHAPES = [(), (2,), (2, 3), (2, 3, 4), (2, 3, 4, 5), (2, 1, 2, 1, 2),
                         (2, 1, 2, 1, 2, 1)]


def _read_and_write(lib, shape, spec):
    """``x[key]`` (its shape and values) and x after ``x[key] = -1``, or the exception."""
    def attempt(fn):
        try:
            return fn()
        except Exception as exc:
            return type(exc), str(exc).replace("torch", "ember")

    def write():
        x = lib.arange(float(np.prod(shape)), dtype=lib.float64).reshape(shape)
        x[build(lib, spec)] = -1.0
        return x
    x = lib.arange(float(np.prod(shape)), dtype=lib.float64).reshape(shape)
    read = attempt(lambda: x[build(lib, spec)])
    return read, attempt(write)


def _read_stays_in_torch_storage(spec, shape):
    """Past the last dim a slice or an int has PyTorch read a size from behind the view's
    sizes. For a view of up to five dims and a dim below five that read is one of the zeros of
    its inline storage, which Ember follows; anywhere else it is a stride or memory beyond
    (undefined, and it can crash torch), so keys that read there are left out."""
    named = builtins.sum(1 for e in spec if e is not E and e is not None
                         and not isinstance(e, bool))
    d, n = 0, len(shape)
    for e in spec:
        if e is E:
            d += len(shape) - named
        elif e is None or isinstance(e, bool):
            d, n = d + 1, n + 1
        elif isinstance(e, (int, slice)) or (isinstance(e, T) and np.ndim(e.data) == 0):
            if d >= n and not (n <= 5 and d < 5):
                return False
            if isinstance(e, int):
                n -= 1
            else:
                d += 1
        else:
            d += 1
    return True


@pytest.mark.parametrize("spec,shape", [
    pytest.param(spec, shape, id=f"{spec!r}-{shape}")
    for spec in MULTI_ELLIPSIS_KEYS for shape in MULTI_ELLIPSIS_SHAPES
    if _read_stays_in_torch_storage(spec, shape)])
def test_several_ellipses_against_torch(spec, shape):
    """The same view (shape, values) and the same written tensor as PyTorch, or the same
    exception type and message. (The index kernel's own messages, for a mask or an index that
    does not fit the view, are Ember's for any key: only their type is compared.)"""
    for expected, actual in zip(_read_and_write(torch, shape, spec),
                                _read_and_write(ember, shape, spec)):
        if isinstance(expected, tuple):
            assert actual[0] is expected[0]
            advanced = any(isinstance(e, (T, list)) for e in spec)
            if not (advanced and re.search(r"shape of the mask|out of bounds for dimension 0 ",
                                           expected[1])):
                assert actual[1] == expected[1]
        else:
            assert_same(expected, actual, rtol=0, atol=0)


@pytest.mark.parametrize("spec", [(E, E, slice(0, 0)), (0, E, E), (E, slice(1, 3), E),
                                  (E, E, slice(1, 3), slice(0, 0)), (E, None, E),
                                  (E, T([2, 0]), E), (E, E, E, slice(0, 20))], ids=repr)
def test_several_ellipses_differentiate_as_torch(spec):
    """Values and gradients through getitem and setitem on the 3-D leaf, and torch's nodes."""
    check_getitem(spec)
    check_setitem(spec)
    names = [type(lib.tensor(BASE, requires_grad=True)[build(lib, spec)].grad_fn).__name__
             for lib in (torch, ember)]
    assert names[0] == names[1]
