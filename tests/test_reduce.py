"""Reduction behaviour the op table cannot express: gradients at ties and zeros, named-tuple
results, PyTorch's exact errors, NaN/inf handling and low-precision accumulation. Every
expected value comes from torch."""
import math
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from ember.ops import reduce as ember_reduce
from opinfo.core import to_pair, ember_to_numpy
from torch_compare import compare, compare_error


def pair(values, dtype="float64", requires_grad=False, device="cpu"):
    return to_pair(np.asarray(values), dtype, device, False, requires_grad)


def assert_matches(e, t, rtol=1e-7, atol=1e-7):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(ember_to_numpy(e), t.detach().float().numpy()
                               if t.dtype == torch.bfloat16 else t.detach().numpy(),
                               rtol=rtol, atol=atol, equal_nan=True)


def grads(fn, values, cotangent=None, dtype="float64"):
    """fn's input gradient in torch and in ember, for the same input and cotangent."""
    t, e = pair(values, dtype, requires_grad=True)
    t_out, e_out = fn(torch, t), fn(ember, e)
    if cotangent is None:
        cotangent = np.linspace(-1.0, 1.0, int(np.prod(t_out.shape))).reshape(tuple(t_out.shape))
    tc, ec = pair(cotangent, dtype)
    (tg,) = torch.autograd.grad(t_out, t, tc)
    (eg,) = ember.autograd.grad(e_out, e, ec)
    return eg, tg


TIES = [[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 2.0, -1.0, 2.0]]


# ---- gradients at ties -------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.amax(x, 1),
    lambda lib, x: lib.amin(x, 1, keepdim=True),
    lambda lib, x: lib.amax(x, (0, 1)),
    lambda lib, x: lib.amin(x, 0),
    lambda lib, x: lib.max(x),
    lambda lib, x: x.min(),
    lambda lib, x: lib.norm(x, math.inf, 1),
    lambda lib, x: lib.norm(x, -math.inf),
], ids=["amax-dim", "amin-keepdim", "amax-all", "amin-dim0", "max-all", "min-all", "norm-inf",
        "norm-neg-inf"])
def test_tied_extremes_split_the_gradient_evenly(fn):
    eg, tg = grads(fn, TIES)
    assert_matches(eg, tg)


@pytest.mark.parametrize("is_min", [False, True])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_along_dim_sends_the_gradient_to_the_chosen_index(is_min, keepdim):
    def fn(lib, x):
        return (lib.min if is_min else lib.max)(x, 1, keepdim)

    t, e = pair(TIES)
    assert_matches(fn(ember, e).indices, fn(torch, t).indices)
    cotangent = np.array([1.0, 2.0, 3.0]).reshape((3, 1) if keepdim else 3)
    eg, tg = grads(lambda lib, x: fn(lib, x).values, TIES, cotangent)
    assert_matches(eg, tg)
    assert ember_to_numpy((eg != 0).sum(1)).tolist() == [1, 1, 1]


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.argmax(x, 1), lambda lib, x: lib.argmin(x, 0),
    lambda lib, x: lib.argmax(x), lambda lib, x: lib.argmin(x, keepdim=True),
    lambda lib, x: lib.max(x.to(lib.int64), 1).indices,
    lambda lib, x: lib.min(x > 0, 1).indices,
])
def test_tied_arg_reductions_pick_the_first_occurrence(fn):
    t, e = pair(TIES)
    assert_matches(fn(ember, e), fn(torch, t))


# ---- prod with zeros ---------------------------------------------------------------------------

PROD_ZEROS = [
    [[1.5, 0.0, -2.0, 3.0], [0.0, 0.0, 2.0, 1.0], [0.5, -1.0, 2.0, 4.0]],  # one, two, no zeros
    [[0.0, 0.0, 0.0, 0.0], [2.0, 0.0, 1.0, -1.0], [1.0, 1.0, 1.0, 0.0]],
]


@pytest.mark.parametrize("values", PROD_ZEROS)
@pytest.mark.parametrize("fn", [
    lambda lib, x: x.prod(), lambda lib, x: lib.prod(x, 1), lambda lib, x: lib.prod(x, 0, True),
    lambda lib, x: x.cumprod(1), lambda lib, x: lib.cumprod(x, 0),
], ids=["prod-all", "prod-dim1", "prod-dim0-keepdim", "cumprod-dim1", "cumprod-dim0"])
def test_prod_gradient_is_exact_with_zeros(fn, values):
    eg, tg = grads(fn, values)
    assert_matches(eg, tg)


@pytest.mark.parametrize("values", PROD_ZEROS)
def test_prod_double_backward_with_zeros(values):
    t, e = pair(values, requires_grad=True)
    (tg,) = torch.autograd.grad(t.prod(1).sum(), t, create_graph=True)
    (eg,) = ember.autograd.grad(e.prod(1).sum(), e, create_graph=True)
    assert_matches(eg, tg)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), t)
    (egg,) = ember.autograd.grad((eg * eg).sum(), e)
    assert_matches(egg, tgg)


@pytest.mark.parametrize("zero_at", [None, (0, 1, 2), (1, 0, 3)])
def test_prod_backward_over_several_but_not_all_dims(zero_at):
    # torch.prod takes one dim, so the several-dims rule (reached for the whole-tensor product,
    # and by keeping two of three dims here) is compared with torch's prod over each dim in turn.
    values = np.random.default_rng(0).uniform(-2, 2, size=(2, 3, 4))
    if zero_at is not None:
        values[zero_at] = 0.0
        values[zero_at[0], 0, 0] = 0.0
    t, e = pair(values, requires_grad=True)
    cot = np.linspace(-1, 1, 3)
    (tg,) = torch.autograd.grad(t.prod(2).prod(0), t, pair(cot)[0])
    e_out = ember_reduce._result(e, e._data.prod(axis=(0, 2)), e.dtype)
    ember_reduce.record(ember_reduce.ProdBackward1, (e,), e_out, save=(e,), axes=(0, 2),
                        keepdim=False)
    assert_matches(e_out, t.prod(2).prod(0))
    (eg,) = ember.autograd.grad(e_out, e, pair(cot)[1])
    assert_matches(eg, tg)


# ---- var / std / norm edge gradients -----------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x: x.std(), lambda lib, x: lib.std(x, 1), lambda lib, x: lib.norm(x),
    lambda lib, x: lib.norm(x, 2, 1), lambda lib, x: lib.norm(x, 3), lambda lib, x: x.norm(1),
    lambda lib, x: lib.norm(x, 1.5, 0),
])
def test_gradient_at_constant_or_zero_input_is_zero_like_torch(fn):
    for values in ([[0.0, 0.0], [0.0, 0.0]], [[2.0, 2.0], [2.0, 2.0]]):
        eg, tg = grads(fn, values)
        assert_matches(eg, tg)


def test_zero_norm_passes_no_gradient():
    t, e = pair([[0.0, 1.5], [2.0, 0.0]], requires_grad=True)
    t_out, e_out = torch.norm(t, 0), ember.norm(e, 0)
    assert t_out.requires_grad and e_out.requires_grad
    assert torch.autograd.grad(t_out, t, allow_unused=True) == (None,)
    assert ember.autograd.grad(e_out, e, allow_unused=True) == (None,)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(torch.norm(t, 0), t)
    with pytest.raises(RuntimeError):
        ember.autograd.grad(ember.norm(e, 0), e)


def test_std_and_var_mean_give_torch_tuples():
    t, e = pair([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
    for name in ("var_mean", "std_mean"):
        t_res, e_res = getattr(torch, name)(t, 1), getattr(ember, name)(e, 1)
        assert isinstance(e_res, tuple) and len(e_res) == 2
        for e_part, t_part in zip(e_res, t_res):
            assert_matches(e_part, t_part)


# ---- named tuples --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_results_behave_like_torch_return_types(name):
    t, e = pair([[1.0, 5.0, 2.0], [7.0, -1.0, 0.0]])
    t_res, e_res = getattr(torch, name)(t, dim=1), getattr(e, name)(dim=1)
    assert type(e_res).__name__ == type(t_res).__name__ == name
    assert isinstance(e_res, tuple) and len(e_res) == 2
    values, indices = e_res
    assert values is e_res.values is e_res[0] and indices is e_res.indices is e_res[1]
    assert_matches(e_res.values, t_res.values)
    assert_matches(e_res.indices, t_res.indices)
    assert repr(e_res).startswith(f"ember.return_types.{name}(\nvalues=tensor(")
    assert type(e_res) is getattr(ember.return_types, name)
    rebuilt = getattr(ember.return_types, name)((values, indices))
    assert rebuilt == e_res or all(a is b for a, b in zip(rebuilt, e_res))
    restored = pickle.loads(pickle.dumps(e_res))
    assert type(restored) is type(e_res)
    assert_matches(restored.indices, t_res.indices)


def test_other_ops_named_results_can_be_built():
    t, e = pair([[3.0, 1.0, 2.0]])
    for name, t_res, e_res in [("sort", torch.sort(t, 1), ember.sort(e, 1)),
                               ("topk", torch.topk(t, 2), ember.topk(e, 2))]:
        assert type(e_res).__name__ == name
        assert_matches(e_res.values, t_res.values)
        assert_matches(e_res.indices, t_res.indices)


# ---- errors ----------------------------------------------------------------------------------

ERRORS = [
    lambda lib: lib.max(lib.ones(0, 3)),
    lambda lib: lib.min(lib.ones(0, 3), 0),
    lambda lib: lib.amax(lib.ones(0, 3)),
    lambda lib: lib.amin(lib.ones(2, 0), (0, 1)),
    lambda lib: lib.argmax(lib.ones(0)),
    lambda lib: lib.argmin(lib.ones(0, 2), 0),
    lambda lib: lib.argmax(lib.ones(3, dtype=lib.bool)),
    lambda lib: lib.mean(lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.var(lib.ones(3, dtype=lib.int32), 0),
    lambda lib: lib.std(lib.ones(3, dtype=lib.bool)),
    lambda lib: lib.norm(lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.norm(lib.ones(0, 3), math.inf),
    lambda lib: lib.norm(lib.ones(0, 3), -math.inf, 0),
    lambda lib: lib.softmax(lib.ones(2, 3, dtype=lib.int64), 1),
    lambda lib: lib.log_softmax(lib.ones(2, 3, dtype=lib.int32), 0),
    lambda lib: lib.sum(lib.ones(2, 3), 2),
    lambda lib: lib.amax(lib.ones(2, 3), (1, -1)),
    lambda lib: lib.cumsum(lib.ones(2, 3), -3),
    lambda lib: lib.count_nonzero(lib.ones(2), 1),
]


@pytest.mark.parametrize("fn", ERRORS)
def test_errors_match_torch_type_and_message(fn):
    with pytest.raises(Exception) as t_exc:
        fn(torch)
    with pytest.raises(type(t_exc.value)) as e_exc:
        fn(ember)
    assert str(e_exc.value) == str(t_exc.value)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.prod(lib.ones(2, 3), (0, 1)),
    lambda lib: lib.logsumexp(lib.ones(2, 3)),
])
def test_signature_errors_match_torch_type(fn):
    with pytest.raises(TypeError):
        fn(torch)
    with pytest.raises(TypeError):
        fn(ember)


def test_binary_max_needs_one_device():
    a = ember.ones(3)
    b = ember.ones(3, device="testdev")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.max(a, b)


# ---- NaN, inf and empty inputs ---------------------------------------------------------------

SPECIAL = [[1.0, math.nan, 3.0, -2.0], [math.inf, 1.0, -math.inf, 0.0],
           [-math.inf, -math.inf, -math.inf, -math.inf]]


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.max(x, 1), lambda lib, x: lib.min(x, 1), lambda lib, x: lib.amax(x, 1),
    lambda lib, x: lib.argmax(x, 1), lambda lib, x: lib.argmin(x, 1), lambda lib, x: lib.max(x),
    lambda lib, x: lib.sum(x, 1), lambda lib, x: lib.prod(x, 1), lambda lib, x: lib.mean(x, 1),
    lambda lib, x: lib.logsumexp(x, 1), lambda lib, x: lib.softmax(x, 1),
    lambda lib, x: lib.log_softmax(x, 1), lambda lib, x: lib.cumsum(x, 1),
    lambda lib, x: lib.all(x, 1), lambda lib, x: lib.any(x), lambda lib, x: lib.norm(x, 2, 1),
    lambda lib, x: lib.count_nonzero(x, 1),
])
def test_nan_and_inf_propagate_like_torch(fn):
    t, e = pair(SPECIAL)
    t_out, e_out = fn(torch, t), fn(ember, e)
    for e_part, t_part in zip(e_out if isinstance(e_out, tuple) else (e_out,),
                              t_out if isinstance(t_out, tuple) else (t_out,)):
        assert_matches(e_part, t_part)


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.sum(x), lambda lib, x: lib.prod(x), lambda lib, x: lib.mean(x, 0),
    lambda lib, x: lib.var(x, 1), lambda lib, x: lib.logsumexp(x, 0),
    lambda lib, x: lib.all(x), lambda lib, x: lib.any(x), lambda lib, x: lib.norm(x),
    lambda lib, x: lib.count_nonzero(x), lambda lib, x: lib.amax(x, 1),
    lambda lib, x: lib.max(x, 1).indices, lambda lib, x: lib.cumprod(x, 0),
])
def test_empty_reductions_give_torch_identities(fn):
    t, e = pair(np.ones((0, 3)))
    assert_matches(fn(ember, e), fn(torch, t))


@pytest.mark.parametrize("fn", [lambda lib, x: lib.all(x, 1), lambda lib, x: lib.any(x),
                                lambda lib, x: x.all(), lambda lib, x: lib.any(x, (0, 1))])
@pytest.mark.parametrize("dtype", ["uint8", "bool", "int32"])
def test_all_any_keep_uint8(fn, dtype):
    t, e = pair([[0, 1, 2], [3, 4, 5]], dtype)
    assert_matches(fn(ember, e), fn(torch, t))


def test_all_any_with_empty_dim_list_reduce_nothing():
    t, e = pair([[0.0, 1.0], [2.0, 0.0]])
    assert_matches(ember.all(e, ()), torch.all(t, ()))
    assert_matches(ember.any(e, []), torch.any(t, []))
    assert_matches(ember.count_nonzero(e, ()), torch.count_nonzero(t, ()))
    assert_matches(ember.sum(e, []), torch.sum(t, []))


# ---- dtypes and accumulation -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fn", [
    lambda lib, x: x.sum(), lambda lib, x: x.mean(), lambda lib, x: lib.sum(x, 0),
    lambda lib, x: x.var(), lambda lib, x: x.norm(), lambda lib, x: lib.logsumexp(x, 0),
    lambda lib, x: lib.softmax(x, 0)[:5], lambda lib, x: lib.cumsum(x, 0)[-3:],
])
def test_low_precision_accumulates_in_float32(fn, dtype):
    # 4096 values of 0.1: accumulating in float16 itself would stall far below the true sum.
    values = np.full(4096, 0.1) + np.linspace(0, 0.01, 4096)
    t, e = pair(values, dtype)
    t_out, e_out = fn(torch, t), fn(ember, e)
    assert_matches(e_out, t_out, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32"])
@pytest.mark.parametrize("fn", [lambda lib, x: x.sum(), lambda lib, x: lib.prod(x, 0),
                                lambda lib, x: lib.cumsum(x, 0), lambda lib, x: x.cumprod(0),
                                lambda lib, x: lib.sum(x, 0, dtype=lib.int16)])
def test_integer_reductions_widen_to_int64(fn, dtype):
    t, e = pair(np.arange(1, 9) % 4 + (dtype == "bool"), dtype)
    assert_matches(fn(ember, e), fn(torch, t))


def test_reduction_into_wider_dtype_gives_gradient_in_input_dtype():
    for fn in (lambda lib, x: lib.sum(x, 1, dtype=lib.float64),
               lambda lib, x: lib.softmax(x, 0, dtype=lib.float64),
               lambda lib, x: lib.cumsum(x, 1, dtype=lib.float64)):
        eg, tg = grads(fn, [[1.0, 2.0], [3.0, 4.0]], dtype="float32")
        assert_matches(eg, tg, rtol=1e-6)


def test_legacy_var_signatures():
    t, e = pair([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
    assert_matches(ember.var(e, False), torch.var(t, False))
    assert_matches(ember.std(e, 1, False, True), torch.std(t, 1, False, True))
    assert_matches(ember.var(e, 0, unbiased=True), torch.var(t, 0, unbiased=True))
    assert_matches(ember.std(e, (0, 1), correction=0), torch.std(t, (0, 1), correction=0))


# ---- aminmax, nansum, nanmean --------------------------------------------------------------------

def test_aminmax_named_result():
    mm = ember.aminmax(ember.tensor([[3.0, -5.0], [1.0, 2.0]]), dim=1)
    assert mm.min.tolist() == [-5.0, 1.0] and mm.max.tolist() == [3.0, 2.0]
    assert ember.return_types.aminmax is type(mm)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.aminmax(lib.zeros(0)),
    lambda lib: lib.aminmax(lib.zeros(0, 2), dim=0),
])
def test_errors_match_torch(fn):
    compare_error(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nansum(lib.tensor([[1.0, math.nan], [2, 3]]), 1),
    lambda lib: lib.nanmean(lib.tensor([[1.0, math.nan], [2, 3]]), 1, keepdim=True),
    lambda lib: lib.nanmean(lib.tensor([1.0, math.nan, 2.0]), dtype=lib.float64),
])
def test_existing_ops_match_torch(fn):
    compare(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nanmean(lib.tensor([1, 2])),
])
def test_existing_ops_errors_match_torch(fn):
    compare_error(fn)


# ---- cov, corrcoef -------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(st.integers(2, 5), st.integers(3, 8), st.integers(0, 1000))
def test_corrcoef_is_normalised_cov(rows, cols, seed):
    x = ember.tensor(np.random.default_rng(seed).normal(size=(rows, cols)))
    c, r = ember.cov(x), ember.corrcoef(x)
    d = ember.sqrt(ember.diagonal(c))
    np.testing.assert_allclose(r.numpy(), (c / d[:, None] / d[None, :]).clamp(-1, 1).numpy(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.numpy(), np.cov(x.numpy()), rtol=1e-12, atol=1e-12)


def test_cov_weight_errors():
    compare_error(lambda lib: lib.cov(lib.ones(2, 3), fweights=lib.ones(3)))
    compare_error(lambda lib: lib.cov(lib.ones(2, 3), aweights=lib.ones(3, dtype=lib.int64)))
    compare_error(lambda lib: lib.cov(lib.ones(2, 3), fweights=lib.tensor([1, -1, 1])))
    compare_error(lambda lib: lib.cov(lib.ones(2, 3), aweights=lib.ones(4)))
    compare_error(lambda lib: lib.cov(lib.ones(2, 3), fweights=lib.ones(3, dtype=lib.bool)))


def test_cov_refuses_weights_that_sum_to_zero():
    compare_error(lambda lib: lib.cov(lib.ones(2, 3, dtype=lib.float64),
                                      aweights=lib.zeros(3, dtype=lib.float64)))


def test_cov_with_no_degrees_of_freedom_warns_and_divides_by_zero():
    """torch's norm_factor.zero_(): with correction >= the weight total the covariance is
    divided by zero (inf/nan), after the warning."""
    x = np.random.default_rng(0).standard_normal((3, 4))
    for kwargs in ({"correction": 4}, {"correction": 9, "fweights": [1, 2, 1, 1]}):
        results = []
        for lib in (torch, ember):
            args = dict(kwargs)
            if "fweights" in args:
                args["fweights"] = lib.tensor(args["fweights"])
            with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
                results.append(lib.cov(lib.tensor(x), **args))
        np.testing.assert_array_equal(results[1].numpy(), results[0].numpy())
