"""Rows for reductions, scans and softmax.

Inputs whose gradient (or index output) depends on ties come from ``distinct_values``: every
element differs, in every dtype, so torch and Ember cannot legitimately pick different winners.
Ties themselves are tested in tests/test_reduce.py.
"""
import math

import numpy as np

from .core import OpInfo, Sample, standard_samples, ALL_DTYPES, INT_DTYPES

BOOL_AND_INTS = INT_DTYPES + ("bool",)
# For rows that vary a main row's call (method form, dtype=, min for max): one dtype per kind.
FEW_DTYPES = ("float32", "float64", "bfloat16", "int32", "uint8", "bool")
AMINMAX_DTYPES = ("float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool")
F32_64 = ("float32", "float64")


def distinct_values(rng, shape, dtype, index):
    """A permutation of evenly spaced values, exact in every dtype (no ties, no zeros)."""
    n = int(np.prod(shape))
    perm = rng.permutation(n)
    if dtype == "bool":
        return perm.reshape(shape) % 2 == 0
    if dtype == "uint8":
        return (perm + 1).reshape(shape).astype(dtype)
    if dtype in INT_DTYPES:
        return (perm - n // 2).reshape(shape).astype(dtype)
    signs = np.where(rng.random(n) > 0.5, 1.0, -1.0)
    return ((perm + 1) * 0.25 * signs).reshape(shape)


def with_zeros(rng, shape, dtype, index):
    """Random values with some exact zeros, two in the same row where the shape allows."""
    arr = rng.uniform(-2, 2, size=shape)
    if arr.size:
        flat = arr.reshape(-1)
        flat[rng.choice(arr.size, size=min(3, arr.size), replace=False)] = 0.0
        if arr.ndim == 2 and arr.shape[1] >= 2:
            arr[0, :2] = 0.0
    return arr if dtype not in INT_DTYPES + ("bool",) else arr.round().astype(dtype)



def dim_samples(dims_and_shapes, **extra):
    """A Sample per (shape, kwargs) pair, plus a non-contiguous copy of the first."""
    out = [Sample((shape,), {**kwargs, **extra}) for shape, kwargs in dims_and_shapes]
    shape, kwargs = dims_and_shapes[0]
    out.append(Sample((shape,), {**kwargs, **extra}, noncontig=True))
    return out


# Reductions that accept dim=None, an int, a negative int or a tuple.
MULTI_DIM = [
    ((3, 4), {}),
    ((3, 4), {"dim": 1}),
    ((2, 3, 4), {"dim": -1, "keepdim": True}),
    ((2, 3, 4), {"dim": (0, 2)}),
    ((2, 3, 4), {"dim": (-1, 0), "keepdim": True}),
    ((), {}),
    ((), {"dim": 0}),
    ((), {"dim": -1, "keepdim": True}),
    ((0, 3), {}),
    ((0, 3), {"dim": 0}),
    ((0, 3), {"dim": 1, "keepdim": True}),
]
AMAX_DIMS = MULTI_DIM[:8] + [((0, 3), {"dim": 1, "keepdim": True}), ((3, 4), {"dim": ()})]
# Reductions that take one int dim (or none).
ONE_DIM = [
    ((3, 4), {}),
    ((3, 4), {"dim": 1}),
    ((2, 3, 4), {"dim": -2, "keepdim": True}),
    ((2, 3, 4), {"dim": 0}),
    ((), {}),
    ((), {"dim": 0}),
    ((), {"dim": -1, "keepdim": True}),
    ((0, 3), {}),
    ((0, 3), {"dim": 0}),
    ((0, 3), {"dim": 1, "keepdim": True}),
]
# Reductions over a dim that must exist (max/min/argmax with dim); empty dims raise.
NEEDS_DIM = [
    ((3, 4), {"dim": 1}),
    ((3, 4), {"dim": 0, "keepdim": True}),
    ((2, 3, 4), {"dim": -1}),
    ((), {"dim": 0}),
    ((), {"dim": -1, "keepdim": True}),
    ((0, 3), {"dim": 1}),
]
WHOLE = [((3, 4), {}), ((2, 3, 4), {}), ((), {}), ((1,), {})]
# Reductions without an identity refuse these (RuntimeError without dim, IndexError with one).
EMPTY_ERRORS = [((0, 3), {}), ((0, 3), {"dim": 0}), ((2, 0, 3), {"dim": (0, 1)})]
SCAN = [((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": -2}), ((), {"dim": 0}), ((), {"dim": -1}),
        ((0, 3), {"dim": 1}), ((0, 3), {"dim": 0})]
SOFTMAX = [((3, 4), {"dim": 0}), ((3, 4), {"dim": 1}), ((3, 4), {"dim": -1}),
           ((2, 3, 4), {"dim": 0}), ((2, 3, 4), {"dim": 1}), ((2, 3, 4), {"dim": -1}),
           ((), {"dim": 0}), ((0, 3), {"dim": 1}), ((0, 3), {"dim": 0})]
VAR = [
    ((3, 4), {}),
    ((3, 4), {"dim": 1}),
    ((3, 4), {"dim": 0, "correction": 0}),
    ((2, 3, 4), {"dim": (0, 2), "correction": 2, "keepdim": True}),
    ((2, 3, 4), {"dim": -1, "unbiased": False}),
    ((2, 3, 4), {"dim": (1,), "unbiased": True, "keepdim": True}),
    ((3, 4), {"correction": 2}),
    ((0, 3), {}),
    ((0, 3), {"dim": 0}),
    ((0, 3), {"dim": 1, "correction": 0}),
]
# No degrees of freedom left: the result (and gradient) is NaN or inf, so no gradcheck.
VAR_DEGENERATE = [((1, 4), {"dim": 0}), ((), {}), ((3,), {"correction": 3}),
                  ((2, 3), {"correction": 7}), ((2, 3), {"dim": 1, "correction": 3}),
                  ((2, 3), {"dim": 1, "correction": 4})]
NORM = [
    ((3, 4), {}),
    ((3, 4), {"p": "fro"}),
    ((3, 4), {"p": 2, "dim": 1}),
    ((2, 3, 4), {"p": 2, "dim": (0, 2), "keepdim": True}),
    ((3, 4), {"p": 1}),
    ((2, 3, 4), {"p": 1, "dim": -1, "keepdim": True}),
    ((3, 4), {"p": math.inf}),
    ((2, 3, 4), {"p": math.inf, "dim": (1, 2)}),
    ((3, 4), {"p": -math.inf, "dim": 0}),
    ((3, 4), {"p": 0}),
    ((3, 4), {"p": 0, "dim": 1, "keepdim": True}),
    ((3, 4), {"p": 3}),
    ((2, 3, 4), {"p": 3, "dim": 1}),
    ((), {}),
    ((), {"p": 1}),
    ((0, 3), {}),
    ((0, 3), {"p": 1, "dim": 0}),
    ((0, 3), {"p": 0, "dim": 1}),
]
NORM_ERRORS = [((0, 3), {"p": math.inf}), ((0, 3), {"p": -math.inf, "dim": 0}),
               ((0, 3), {"p": math.inf, "dim": (0, 1)}), ((2, 3), {"p": 2, "dim": (0, 0)})]


def _ties_free(name, fn, shapes, dtypes=ALL_DTYPES, **kw):
    return OpInfo(name, fn, dim_samples(shapes), dtypes=dtypes, make_input=distinct_values,
                  **kw)


def _forward_only(name, fn, shapes, dtypes=ALL_DTYPES):
    """Samples where torch raises (Ember must raise the same type) or gives NaN: forward only."""
    return OpInfo(name, fn, [Sample((shape,), kwargs) for shape, kwargs in shapes],
                  dtypes=dtypes, grad=False, gradcheck=False)


def _cov_weights(lib, x):
    fw = lib.tensor([1, 2, 0, 3, 1], device=x.device)
    aw = lib.tensor([0.5, 1.0, 2.0, 0.25, 1.5], device=x.device, dtype=x.dtype)
    return lib.cov(x, correction=2, fweights=fw, aweights=aw)


OPS = [
    OpInfo("sum", lambda lib, x, **kw: lib.sum(x, **kw), dim_samples(MULTI_DIM),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("sum_method", lambda lib, x, **kw: x.sum(**kw), dim_samples(MULTI_DIM[:4]),
           dtypes=FEW_DTYPES),
    OpInfo("sum_dtype", lambda lib, x, **kw: lib.sum(x, dtype=lib.float64, **kw),
           dim_samples(MULTI_DIM[:4]), dtypes=FEW_DTYPES),
    OpInfo("sum_dtype_int32", lambda lib, x, **kw: x.sum(dtype=lib.int32, **kw),
           dim_samples(MULTI_DIM[:4]), dtypes=BOOL_AND_INTS, grad=False, gradcheck=False),
    OpInfo("mean", lambda lib, x, **kw: lib.mean(x, **kw), dim_samples(MULTI_DIM),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("mean_dtype", lambda lib, x, **kw: x.mean(dtype=lib.float64, **kw),
           dim_samples(MULTI_DIM[:4]), dtypes=FEW_DTYPES),
    OpInfo("prod", lambda lib, x, **kw: lib.prod(x, **kw), dim_samples(ONE_DIM),
           dtypes=ALL_DTYPES, gradgrad=True, domain=(-1.5, 1.5)),
    OpInfo("prod_zeros", lambda lib, x, **kw: x.prod(**kw), dim_samples(ONE_DIM[:4]),
           make_input=with_zeros, gradgrad=True),
    OpInfo("prod_dtype", lambda lib, x, **kw: lib.prod(x, dtype=lib.float64, **kw),
           dim_samples(ONE_DIM[:4]), dtypes=FEW_DTYPES),
    _ties_free("max", lambda lib, x: lib.max(x), WHOLE),
    _ties_free("min", lambda lib, x: x.min(), WHOLE, dtypes=FEW_DTYPES),
    _forward_only("max_empty", lambda lib, x, **kw: lib.max(x, **kw), EMPTY_ERRORS[:2]),
    _forward_only("min_empty", lambda lib, x, **kw: x.min(**kw), EMPTY_ERRORS[:2]),
    _forward_only("amax_empty", lambda lib, x, **kw: lib.amax(x, **kw), EMPTY_ERRORS),
    _forward_only("amin_empty", lambda lib, x, **kw: x.amin(**kw), EMPTY_ERRORS),
    _forward_only("argmax_empty", lambda lib, x, **kw: lib.argmax(x, **kw), EMPTY_ERRORS[:2]),
    _forward_only("argmin_empty", lambda lib, x, **kw: x.argmin(**kw), EMPTY_ERRORS[:2]),
    _ties_free("max_dim", lambda lib, x, **kw: lib.max(x, **kw), NEEDS_DIM),
    _ties_free("min_dim", lambda lib, x, **kw: x.min(**kw), NEEDS_DIM, dtypes=FEW_DTYPES),
    OpInfo("max_positional_dim", lambda lib, x: lib.max(x, 1, True), [Sample(((3, 4),))],
           dtypes=FEW_DTYPES, make_input=distinct_values),
    OpInfo("max_binary", lambda lib, x, y: lib.max(x, y),
           [Sample(((3, 4), (3, 4))), Sample(((3, 1), (4,))), Sample(((), (2, 3)))],
           dtypes=ALL_DTYPES, make_input=distinct_values),
    OpInfo("min_binary", lambda lib, x, y: x.min(y), [Sample(((3, 4), (4,)))],
           dtypes=FEW_DTYPES, make_input=distinct_values),
    _ties_free("amax", lambda lib, x, **kw: lib.amax(x, **kw), AMAX_DIMS),
    _ties_free("amin", lambda lib, x, **kw: x.amin(**kw), AMAX_DIMS, dtypes=FEW_DTYPES),
    _ties_free("argmax", lambda lib, x, **kw: lib.argmax(x, **kw), ONE_DIM, grad=False,
               gradcheck=False),
    _ties_free("argmin", lambda lib, x, **kw: x.argmin(**kw), ONE_DIM, dtypes=FEW_DTYPES,
               grad=False, gradcheck=False),
    OpInfo("var", lambda lib, x, **kw: lib.var(x, **kw), dim_samples(VAR), dtypes=ALL_DTYPES,
           gradgrad=True),
    OpInfo("std", lambda lib, x, **kw: x.std(**kw), dim_samples(VAR), dtypes=ALL_DTYPES,
           gradgrad=True),
    OpInfo("var_degenerate", lambda lib, x, **kw: lib.var(x, **kw),
           [Sample((shape,), kwargs) for shape, kwargs in VAR_DEGENERATE], gradcheck=False),
    OpInfo("std_degenerate", lambda lib, x, **kw: x.std(**kw),
           [Sample((shape,), kwargs) for shape, kwargs in VAR_DEGENERATE], gradcheck=False),
    OpInfo("var_legacy_unbiased", lambda lib, x: lib.var(x, False), [Sample(((3, 4),))]),
    OpInfo("std_positional", lambda lib, x: lib.std(x, 1, False, True), [Sample(((3, 4),))]),
    OpInfo("var_mean", lambda lib, x, **kw: lib.var_mean(x, **kw), dim_samples(VAR[:7]),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("std_mean", lambda lib, x, **kw: lib.std_mean(x, **kw), dim_samples(VAR[:7]),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("norm", lambda lib, x, **kw: lib.norm(x, **kw), dim_samples(NORM),
           dtypes=ALL_DTYPES, make_input=distinct_values, gradgrad=True),
    _forward_only("norm_errors", lambda lib, x, **kw: lib.norm(x, **kw), NORM_ERRORS),
    OpInfo("norm_dtype", lambda lib, x, **kw: lib.norm(x, dtype=lib.float64, **kw),
           dim_samples(NORM[:3]), dtypes=FEW_DTYPES),
    OpInfo("norm_method", lambda lib, x, **kw: x.norm(**kw), dim_samples(NORM[:4]),
           make_input=distinct_values),
    OpInfo("logsumexp", lambda lib, x, **kw: lib.logsumexp(x, **kw),
           dim_samples([s for s in MULTI_DIM if "dim" in s[1]]), dtypes=ALL_DTYPES,
           gradgrad=True),
    OpInfo("logsumexp_nodim", lambda lib, x: lib.logsumexp(x), [Sample(((3, 4),))],
           grad=False, gradcheck=False),
    OpInfo("all", lambda lib, x, **kw: lib.all(x, **kw), dim_samples(MULTI_DIM),
           dtypes=ALL_DTYPES, make_input=with_zeros, grad=False, gradcheck=False),
    OpInfo("any", lambda lib, x, **kw: x.any(**kw), dim_samples(MULTI_DIM),
           dtypes=ALL_DTYPES, make_input=with_zeros, grad=False, gradcheck=False),
    OpInfo("count_nonzero", lambda lib, x, **kw: lib.count_nonzero(x, **kw),
           dim_samples([(s, {"dim": kw["dim"]} if "dim" in kw else {}) for s, kw in MULTI_DIM]),
           dtypes=ALL_DTYPES, make_input=with_zeros, grad=False, gradcheck=False),
    OpInfo("cumsum", lambda lib, x, **kw: lib.cumsum(x, **kw), dim_samples(SCAN),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("cumsum_dtype", lambda lib, x, **kw: x.cumsum(dtype=lib.float64, **kw),
           dim_samples(SCAN[:3]), dtypes=FEW_DTYPES),
    OpInfo("cumprod", lambda lib, x, **kw: lib.cumprod(x, **kw), dim_samples(SCAN),
           dtypes=ALL_DTYPES, domain=(0.5, 1.5), gradgrad=True),
    OpInfo("cumprod_zeros", lambda lib, x, **kw: x.cumprod(**kw),
           dim_samples(SCAN[:3]), make_input=with_zeros, gradgrad=True),
    OpInfo("cumprod_dtype", lambda lib, x, **kw: lib.cumprod(x, dtype=lib.float64, **kw),
           dim_samples(SCAN[:3]), dtypes=FEW_DTYPES),
    OpInfo("softmax", lambda lib, x, **kw: lib.softmax(x, **kw), dim_samples(SOFTMAX),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("softmax_dtype", lambda lib, x, **kw: x.softmax(dtype=lib.float64, **kw),
           dim_samples(SOFTMAX[:3]), dtypes=FEW_DTYPES),
    OpInfo("log_softmax", lambda lib, x, **kw: x.log_softmax(**kw), dim_samples(SOFTMAX),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("log_softmax_dtype", lambda lib, x, **kw: lib.log_softmax(x, dtype=lib.float32, **kw),
           dim_samples(SOFTMAX[:3]), dtypes=FEW_DTYPES, gradcheck=False),
    # ---- aminmax: amin and amax in one call -----------------------------------------------------
    OpInfo("aminmax", lambda lib, x, **kw: lib.aminmax(x, **kw),
           [Sample(((3, 4),)), Sample(((3, 4),), {"dim": 1}),
            Sample(((2, 3, 4),), {"dim": -1, "keepdim": True}),
            Sample(((3, 4),), {"keepdim": True}), Sample(((),)), Sample(((),), {"dim": 0}),
            Sample(((3, 4),), {"dim": 0}, noncontig=True)],
           dtypes=AMINMAX_DTYPES, make_input=distinct_values),
    OpInfo("aminmax_method", lambda lib, x: x.aminmax(dim=0).max, [Sample(((3, 4),))],
           dtypes=F32_64, make_input=distinct_values),
    _forward_only("aminmax_empty", lambda lib, x: lib.aminmax(x), [((0, 3), {})],
                  dtypes=("float32",)),
    _forward_only("aminmax_empty_dim", lambda lib, x: lib.aminmax(x, dim=0), [((0, 3), {})],
                  dtypes=("float32",)),
    # ---- cov, corrcoef ------------------------------------------------------------------------
    OpInfo("cov", lambda lib, x: lib.cov(x), standard_samples(((3, 5),), ((5,),), ((1, 5),)),
           dtypes=("float32", "float64", "int64"), gradgrad=True),
    OpInfo("cov_correction0", lambda lib, x: x.cov(correction=0), [Sample(((3, 5),))],
           dtypes=F32_64),
    OpInfo("cov_weights", _cov_weights, [Sample(((3, 5),)), Sample(((3, 5),), noncontig=True)],
           dtypes=F32_64),
    _forward_only("cov_3d", lambda lib, x: lib.cov(x), [((2, 3, 4), {})],
                  dtypes=("float32",)),
    OpInfo("corrcoef", lambda lib, x: lib.corrcoef(x),
           standard_samples(((3, 5),), ((5,),)), dtypes=("float32", "float64", "int64")),
]
