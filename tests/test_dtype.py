"""dtypes and type promotion against PyTorch: ``promote_types`` over every pair, ``result_type``
over dimensioned tensors, 0-d tensors and Python scalars, the default dtype's reach, dtype
attributes, and half/bfloat16 arithmetic rounding exactly as PyTorch rounds it."""
import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
SCALARS = [True, 3, -2, 2.5]


def pair(name):
    return getattr(ember, name), getattr(torch, name)


def same_dtype(e_dtype, t_dtype):
    return e_dtype is getattr(ember, str(t_dtype).split(".")[-1])


def operand(kind, name):
    """The same operand for both libraries: a tensor with dims, a 0-d tensor, or a scalar."""
    if kind == "dim":
        return ember.ones(2, dtype=pair(name)[0]), torch.ones(2, dtype=pair(name)[1])
    if kind == "zero_dim":
        return ember.tensor(1, dtype=pair(name)[0]), torch.tensor(1, dtype=pair(name)[1])
    return name, name  # a Python scalar


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promote_types_matches_torch(a, b):
    assert same_dtype(ember.promote_types(pair(a)[0], pair(b)[0]),
                      torch.promote_types(pair(a)[1], pair(b)[1]))


OPERANDS = ([("dim", d) for d in DTYPES] + [("zero_dim", d) for d in DTYPES]
            + [("scalar", s) for s in SCALARS])


@pytest.mark.parametrize("first", OPERANDS, ids=str)
def test_result_type_matches_torch(first):
    for second in OPERANDS:
        if first[0] == second[0] == "scalar":
            continue
        e1, t1 = operand(*first)
        e2, t2 = operand(*second)
        assert same_dtype(ember.result_type(e1, e2), torch.result_type(t1, t2)), (first, second)


@pytest.mark.parametrize("first", OPERANDS, ids=str)
def test_binary_op_result_dtype_is_result_type(first):
    """``a * b`` has dtype ``result_type(a, b)`` for every operand mix, as in PyTorch."""
    for second in OPERANDS:
        if first[0] == second[0] == "scalar":
            continue
        e1, t1 = operand(*first)
        e2, t2 = operand(*second)
        assert same_dtype((e1 * e2).dtype, (t1 * t2).dtype), (first, second)


@pytest.mark.parametrize("name", [d for d in DTYPES if d != "bool"])
def test_division_of_integers_gives_the_default_float(name):
    e, t = operand("dim", name)
    for e_out, t_out in [(e / e, t / t), (e / 2, t / 2), (3 / e, 3 / t), (e // e, t // t),
                         (e // 2, t // 2), (ember.div(e, e, rounding_mode="floor"),
                                            torch.div(t, t, rounding_mode="floor"))]:
        assert same_dtype(e_out.dtype, t_out.dtype)


@pytest.fixture
def float64_default():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    yield
    ember.set_default_dtype(ember.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", DTYPES)
def test_default_float64_reaches_scalars_and_division(float64_default, name):
    e, t = operand("dim", name)
    assert ember.get_default_dtype() is ember.float64
    assert ember.tensor(1.5).dtype is ember.float64
    assert same_dtype((e * 1.5).dtype, (t * 1.5).dtype)
    assert same_dtype((e / e).dtype, (t / t).dtype)
    assert same_dtype(ember.exp(e).dtype, torch.exp(t).dtype)
    assert same_dtype(ember.result_type(e, 2.5), torch.result_type(t, 2.5))


def test_default_dtype_is_restored_and_validated():
    assert ember.get_default_dtype() is ember.float32
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int64)
    assert ember.get_default_dtype() is ember.float32


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_attributes_match_torch(name):
    e, t = pair(name)
    assert e.is_floating_point == t.is_floating_point
    assert e.is_complex == t.is_complex
    assert e.is_signed == t.is_signed
    assert e.itemsize == t.itemsize
    assert repr(e) == repr(t).replace("torch", "ember")
    assert ember.ones(1, dtype=e).element_size() == torch.ones(1, dtype=t).element_size()


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_can_cast_matches_torch(a, b):
    assert ember.can_cast(pair(a)[0], pair(b)[0]) == torch.can_cast(pair(a)[1], pair(b)[1])


def _bits(t):
    """The raw bit pattern of a half/bfloat16 tensor, for exact comparisons."""
    if isinstance(t, torch.Tensor):
        return t.view(torch.int16).numpy()
    return np.asarray(t.numpy()).view(np.int16)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "neg", "sqrt", "scalar_mul",
                                "scalar_add", "exp", "tanh", "sigmoid", "pow2", "square"])
def test_reduced_precision_arithmetic_rounds_like_torch(name, op):
    rng = np.random.default_rng(0)
    x64, y64 = rng.uniform(0.1, 4, 512), rng.uniform(0.1, 4, 512)
    et, tt = pair(name)
    ex, tx = ember.tensor(x64).to(et), torch.tensor(x64).to(tt)
    ey, ty = ember.tensor(y64).to(et), torch.tensor(y64).to(tt)
    fns = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
        "div": lambda x, y: x / y, "neg": lambda x, y: -x, "sqrt": lambda x, y: x.sqrt(),
        "scalar_mul": lambda x, y: x * 0.1, "scalar_add": lambda x, y: x + 1 / 3,
        "exp": lambda x, y: x.exp(), "tanh": lambda x, y: x.tanh(), "sigmoid": lambda x, y: x.sigmoid(),
        "pow2": lambda x, y: x ** 2, "square": lambda x, y: x.square(),
    }
    e_out, t_out = fns[op](ex, ey), fns[op](tx, ty)
    assert same_dtype(e_out.dtype, t_out.dtype)
    # Basic arithmetic is correctly rounded in both; transcendental kernels may differ by 1 ulp.
    ulps = np.abs(_bits(e_out).astype(np.int32) - _bits(t_out).astype(np.int32))
    assert ulps.max() <= (0 if op in ("add", "sub", "mul", "div", "neg", "sqrt", "pow2", "square")
                          else 1)


# ---- properties -----------------------------------------------------------------------------

dtype_names = st.sampled_from(DTYPES)


@given(dtype_names, dtype_names)
def test_promote_types_is_commutative(a, b):
    assert ember.promote_types(pair(a)[0], pair(b)[0]) is ember.promote_types(pair(b)[0], pair(a)[0])


@given(dtype_names, dtype_names)
def test_promoted_type_absorbs_both_operands(a, b):
    """``promote_types(a, b)`` is an upper bound: promoting it with either input changes nothing."""
    ea, eb = pair(a)[0], pair(b)[0]
    both = ember.promote_types(ea, eb)
    assert ember.promote_types(both, ea) is both
    assert ember.promote_types(eb, both) is both
    assert ember.promote_types(ea, ea) is ea


small_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def broadcastable_shapes(draw):
    base = draw(small_shapes)
    other = tuple(1 if draw(st.booleans()) else s for s in base)
    drop = draw(st.integers(0, len(other)))
    return base, other[drop:]


@settings(max_examples=60, deadline=None)
@given(broadcastable_shapes(), dtype_names, dtype_names, st.booleans())
def test_addition_commutes_bitwise_and_broadcasts(shapes, a, b, swap):
    shape_a, shape_b = shapes if not swap else shapes[::-1]
    rng = np.random.default_rng(len(shape_a) * 7 + len(shape_b))
    x = ember.tensor(rng.uniform(-3, 3, shape_a)).to(pair(a)[0])
    y = ember.tensor(rng.uniform(-3, 3, shape_b)).to(pair(b)[0])
    if x.dtype is ember.bool and y.dtype is ember.bool:
        return
    left, right = x + y, y + x
    assert left.dtype is right.dtype is ember.result_type(x, y)
    assert tuple(left.shape) == tuple(ember.broadcast_shapes(x.shape, y.shape))
    assert np.array_equal(np.asarray(left.to(ember.float64).numpy()),
                          np.asarray(right.to(ember.float64).numpy()), equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(broadcastable_shapes())
def test_broadcast_shapes_matches_torch(shapes):
    assert tuple(ember.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))


@settings(max_examples=80, deadline=None)
@given(dtype_names, st.sampled_from(["dim", "zero_dim"]),
       st.one_of(st.booleans(), st.integers(-300, 300), st.floats(-1e3, 1e3, allow_nan=False)))
def test_result_type_with_any_scalar_matches_torch(name, kind, scalar):
    e, t = operand(kind, name)
    assert same_dtype(ember.result_type(e, scalar), torch.result_type(t, scalar))
    assert same_dtype(ember.result_type(scalar, e), torch.result_type(scalar, t))
