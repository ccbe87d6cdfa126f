"""``scaled_dot_product_attention`` on inputs that are not all 4-D, which PyTorch's CPU build
computes by its math fallback (``_scaled_dot_product_attention_math``) and Ember by the same
ops in the same order: values and gradients as PyTorch's, and the same autograd graph (node
names, edges, leaves) for every rank, mask kind, ``is_causal``, ``scale``, dropout and half
types; 4-D inputs keep Ember's fused op."""
import numpy as np
import pytest
import torch

import ember
from test_graph_names import graph_of, _first_difference
from torch_compare import assert_same


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    """PyTorch's worker threads spin on a loaded 2-core machine; the oracle runs single-threaded
    here and gets its setting back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


rng = np.random.default_rng(5)

CASES = {
    # name: (q shape, k shape, v shape, mask: None / "bool" / "float" / "float_grad", kwargs)
    "2d": ((4, 8), (5, 8), (5, 3), None, {}),
    "3d": ((2, 3, 4), (2, 5, 4), (2, 5, 4), None, {}),
    "3d_causal": ((2, 3, 4), (2, 3, 4), (2, 3, 4), None, {"is_causal": True}),
    "3d_causal_more_queries": ((2, 5, 4), (2, 3, 4), (2, 3, 4), None, {"is_causal": True}),
    "3d_scale": ((2, 3, 4), (2, 5, 4), (2, 5, 6), None, {"scale": 2.0}),
    "3d_negative_scale": ((2, 3, 4), (2, 5, 4), (2, 5, 4), None, {"scale": -0.3}),
    "3d_bool_mask": ((2, 3, 4), (2, 5, 4), (2, 5, 4), "bool", {}),
    "3d_float_mask": ((2, 3, 4), (2, 5, 4), (2, 5, 4), "float", {}),
    "3d_float_mask_grad": ((2, 3, 4), (2, 5, 4), (2, 5, 4), "float_grad", {}),
    "3d_gqa": ((4, 3, 4), (2, 5, 4), (2, 5, 4), None, {"enable_gqa": True}),
    "5d": ((2, 1, 2, 3, 4), (2, 1, 2, 5, 4), (2, 1, 2, 5, 4), None, {}),
    "3d_query_4d_key": ((2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), None, {}),
}


def _inputs(case):
    q_shape, k_shape, v_shape, mask_kind, kw = case
    arrays = [rng.standard_normal(s) for s in (q_shape, k_shape, v_shape)]
    mask = None
    if mask_kind == "bool":
        mask = rng.random((q_shape[-2], k_shape[-2])) > 0.4
        mask[:, 0] = True
    elif mask_kind is not None:
        mask = rng.standard_normal((q_shape[-2], k_shape[-2]))
    return arrays, mask, mask_kind == "float_grad", kw


def _run(lib, arrays, mask, mask_grad, kw, dtype="float64", backward=True):
    d = getattr(lib, dtype)
    q, k, v = (lib.tensor(a).to(d).requires_grad_() for a in arrays)
    m = None
    if mask is not None:
        m = lib.tensor(mask)
        if m.dtype is not lib.bool:
            m = m.to(d).requires_grad_(mask_grad)
    out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    leaves = [q, k, v] + ([m] if m is not None else [])
    if not backward:
        return out, leaves
    upstream = np.random.default_rng(1).standard_normal(tuple(out.shape))
    out.backward(lib.tensor(upstream).to(d))
    return [out, q.grad, k.grad, v.grad] + ([m.grad] if mask_grad else [])


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    arrays, mask, mask_grad, kw = _inputs(CASES[name])
    # The same ops in the same order: float64 agrees to the last few digits.
    assert_same(_run(torch, arrays, mask, mask_grad, kw), _run(ember, arrays, mask, mask_grad, kw),
                rtol=1e-12, atol=1e-14)
    assert_same(_run(torch, arrays, mask, mask_grad, kw, "float32"),
                _run(ember, arrays, mask, mask_grad, kw, "float32"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["3d", "3d_float_mask_grad", "3d_causal"])
def test_half_types_are_computed_in_float32_as_torch(name, dtype):
    arrays, mask, mask_grad, kw = _inputs(CASES[name])
    expected = _run(torch, arrays, mask, mask_grad, kw, dtype)
    actual = _run(ember, arrays, mask, mask_grad, kw, dtype)
    assert [t.dtype for t in actual] == [getattr(ember, dtype)] * len(actual)
    assert_same([t.float() for t in expected], [t.float() for t in actual], rtol=1e-2,
                atol=1e-2)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", list(CASES) + ["3d_dropout"])
def test_graph_is_torch_math_fallback(name, dtype):
    if name == "3d_dropout":
        arrays, mask, mask_grad, kw = _inputs(CASES["3d"])
        kw = {"dropout_p": 0.4}
    else:
        arrays, mask, mask_grad, kw = _inputs(CASES[name])
    graphs = []
    for lib in (torch, ember):
        out, leaves = _run(lib, arrays, mask, mask_grad, kw, dtype, backward=False)
        graphs.append(graph_of([out], leaves)[0])
    assert graphs[1] == graphs[0], _first_difference(*graphs)
    root = graphs[1][0]
    assert root in ("UnsafeViewBackward0", "MmBackward0", "ToCopyBackward0"), root


def test_four_d_inputs_keep_the_fused_op():
    q, k, v = (ember.randn(2, 2, 3, 4, requires_grad=True) for _ in range(3))
    out = ember.nn.functional.scaled_dot_product_attention(q, k, v)
    assert type(out.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"


def test_fully_masked_rows_are_zero_with_zero_gradient():
    arrays = [rng.standard_normal(s) for s in ((2, 4, 8), (2, 5, 8), (2, 5, 8))]
    bool_mask = rng.random((4, 5)) > 0.3
    bool_mask[1] = False
    for mask in (bool_mask, np.where(bool_mask, 0.0, -np.inf)):
        expected = _run(torch, arrays, mask, False, {})
        actual = _run(ember, arrays, mask, False, {})
        assert_same(expected, actual, rtol=1e-12, atol=1e-14)
        assert np.all(np.asarray(actual[0].detach())[:, 1] == 0)
        assert np.all(np.asarray(actual[1])[:, 1] == 0)


def test_without_keys_or_queries():
    for shapes in (((2, 3, 4), (2, 0, 4), (2, 0, 4)), ((2, 0, 4), (2, 5, 4), (2, 5, 4))):
        arrays = [rng.standard_normal(s) for s in shapes]
        assert_same(_run(torch, arrays, None, False, {}), _run(ember, arrays, None, False, {}))


def test_without_grad_gives_the_same_values():
    arrays, mask, _, kw = _inputs(CASES["3d_bool_mask"])
    q, k, v = (ember.tensor(a) for a in arrays)
    with ember.no_grad():
        plain = ember.nn.functional.scaled_dot_product_attention(q, k, v, ember.tensor(mask))
    recorded = _run(ember, arrays, mask, False, kw)[0]
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(recorded.detach()))


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": True}])
def test_gradcheck_and_gradgradcheck(kw):
    kw = dict(kw)
    inputs = [ember.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
              for _ in range(3)]
    if kw.pop("mask", False):
        inputs.append(ember.tensor(rng.standard_normal((3, 3)), requires_grad=True))

    def fn(q, k, v, *mask):
        return ember.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask[0] if mask else None, **kw)
    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_dropout_is_reproducible_and_differentiable():
    q, k, v = (ember.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
               for _ in range(3))

    def fn(q, k, v):
        ember.manual_seed(7)  # the same dropped pattern on every evaluation
        return ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    assert ember.equal(fn(q, k, v), fn(q, k, v))
    assert not ember.equal(fn(q, k, v),
                           ember.nn.functional.scaled_dot_product_attention(q, k, v))
    assert ember.autograd.gradcheck(fn, [q, k, v])
    zero = ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert np.all(np.asarray(zero.detach()) == 0)
