"""Rows for order statistics, uniqueness, searching and counting.

Inputs whose index output depends on ties come from ``distinct_values`` (every element differs),
since PyTorch's choice among equal values is unspecified for kthvalue and median. ``mode`` needs
repeats, so its rows draw from a few small integers, where PyTorch's choice (the smallest most
frequent value, at its last position) is checked exactly.
"""
import numpy as np

from .core import OpInfo, Sample, ALL_DTYPES, INT_DTYPES, FLOAT_DTYPES
from .ops_reduce import distinct_values, dim_samples

NUMERIC = FLOAT_DTYPES + INT_DTYPES
FEW = ("float32", "float64", "int64", "uint8")
SELECT_DIMS = [
    ((3, 5), {"dim": 1}),
    ((3, 5), {}),
    ((4, 3), {"dim": 0, "keepdim": True}),
    ((2, 3, 5), {"dim": -2}),
    ((), {"dim": 0}),
    ((0, 3), {"dim": 1}),
]
EMPTY_DIM = [Sample(((0, 3),), {"dim": 0})]


def small_integers(rng, shape, dtype, index):
    """Values from {0, 1, 2, 3}: plenty of repeats and ties between counts."""
    arr = rng.integers(0, 4, size=shape)
    if dtype == "bool":
        return arr.astype(bool)
    return arr.astype(np.float64 if dtype in FLOAT_DTYPES else dtype)


def with_nans(rng, shape, dtype, index):
    arr = distinct_values(rng, shape, dtype, index)
    if arr.size:
        flat = arr.reshape(-1)
        flat[rng.choice(arr.size, size=max(1, arr.size // 4), replace=False)] = np.nan
    return arr


def sorted_rows(rng, shape, dtype, index):
    """Sorted along the last dim (the boundaries of searchsorted), with repeats."""
    arr = rng.integers(-6, 7, size=shape) * 0.5
    if dtype == "uint8":  # negative values would wrap and unsort the rows
        arr = arr + 8
    return np.sort(arr, axis=-1)


def half_steps(rng, shape, dtype, index):
    """Values on a 0.5 grid: they hit boundaries exactly, so left/right differ."""
    arr = rng.integers(-8, 9, size=shape) * 0.5
    return arr + 8 if dtype == "uint8" else arr


def quantile_q(rng, shape, dtype, index):
    if index == 0:
        return distinct_values(rng, shape, dtype, index)
    return rng.uniform(0, 1, size=shape)


def values_then_edges(rng, shape, dtype, index):
    if index == 0:
        return half_steps(rng, shape, dtype, index)
    return np.sort(rng.uniform(-4, 4, size=shape))


def indices_then_weights(rng, shape, dtype, index):
    """Non-negative int64 indices, then weights in the row's dtype."""
    if index == 0:
        return rng.integers(0, 6, size=shape)
    if dtype in FLOAT_DTYPES:
        return rng.uniform(-1, 1, size=shape)
    return rng.integers(-3, 4, size=shape).astype(dtype)


def _kth(name, fn, samples, **kw):
    return OpInfo(name, fn, samples, dtypes=kw.pop("dtypes", NUMERIC), make_input=distinct_values,
                  **kw)


QUANTILE_DIMS = [
    ((3, 5), {}),
    ((3, 5), {"dim": 1}),
    ((2, 3, 5), {"dim": 0, "keepdim": True}),
    ((2, 3, 5), {"keepdim": True}),
    ((), {"dim": 0}),
]
INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]

OPS = [
    # ---- selections ---------------------------------------------------------------------------
    _kth("kthvalue", lambda lib, x, **kw: lib.kthvalue(x, 2, **kw),
         dim_samples([s for s in SELECT_DIMS if s[0] != (0, 3) and s[0] != ()])),
    _kth("kthvalue_method_k1", lambda lib, x, **kw: x.kthvalue(1, **kw),
         dim_samples(SELECT_DIMS), dtypes=FEW),
    OpInfo("kthvalue_errors", lambda lib, x, **kw: lib.kthvalue(x, **kw),
           [Sample(((0, 3),), {"k": 1, "dim": 0}), Sample(((3,),), {"k": 4}),
            Sample(((3,),), {"k": 0}), Sample(((2, 3),), {"k": 1, "dim": 2})],
           dtypes=("float32",), grad=False, gradcheck=False),
    _kth("median_dim", lambda lib, x, **kw: lib.median(x, **kw),
         dim_samples([s for s in SELECT_DIMS if "dim" in s[1]])),
    _kth("median_all", lambda lib, x: lib.median(x),
         [Sample(((3, 5),)), Sample(((4,),)), Sample(((),)), Sample(((2, 3),), noncontig=True)]),
    # Ties: the gradient is shared by the equal elements (no finite-difference check there).
    OpInfo("median_ties_all", lambda lib, x: x.median(), [Sample(((4, 6),)), Sample(((7,),))],
           dtypes=FEW, make_input=small_integers, gradcheck=False),
    OpInfo("median_nan", lambda lib, x, **kw: lib.median(x, **kw),
           [Sample(((3, 6),), {"dim": 1}), Sample(((5, 4),))],
           dtypes=("float32", "float64"), make_input=with_nans, gradcheck=False),
    OpInfo("median_empty", lambda lib, x, **kw: lib.median(x, **kw),
           [Sample(((0, 3),)), *EMPTY_DIM], dtypes=("float32",), grad=False, gradcheck=False),
    _kth("nanmedian_dim", lambda lib, x, **kw: x.nanmedian(**kw),
         dim_samples([s for s in SELECT_DIMS if "dim" in s[1]]), dtypes=("float32", "float64")),
    OpInfo("nanmedian_nan", lambda lib, x, **kw: lib.nanmedian(x, **kw),
           [Sample(((3, 6),), {"dim": 1}), Sample(((3, 6),), {"dim": 0, "keepdim": True}),
            Sample(((5, 4),))],
           dtypes=("float32", "float64"), make_input=with_nans, gradcheck=False),
    OpInfo("mode", lambda lib, x, **kw: lib.mode(x, **kw), dim_samples(SELECT_DIMS),
           dtypes=FEW + ("float16", "int8", "bool"), make_input=small_integers, gradcheck=False),
    OpInfo("mode_method", lambda lib, x, **kw: x.mode(**kw),
           [Sample(((6, 9),), {"dim": 0}), Sample(((2, 3, 8),), {"keepdim": True})],
           dtypes=FEW, make_input=small_integers, gradcheck=False),
    OpInfo("mode_distinct", lambda lib, x, **kw: lib.mode(x, **kw), dim_samples(SELECT_DIMS[:4]),
           dtypes=("float32", "float64"), make_input=distinct_values),
    OpInfo("mode_empty", lambda lib, x, **kw: lib.mode(x, **kw), EMPTY_DIM, dtypes=("int64",),
           grad=False, gradcheck=False),
    # ---- quantiles ----------------------------------------------------------------------------
    *[OpInfo(f"quantile_{mode}", lambda lib, x, _m=mode, **kw: lib.quantile(
        x, 0.37, interpolation=_m, **kw), dim_samples(QUANTILE_DIMS),
        dtypes=("float32", "float64"), make_input=distinct_values) for mode in INTERPOLATIONS],
    *[OpInfo(f"quantile_tensor_q_{mode}", lambda lib, x, q, _m=mode, **kw: lib.quantile(
        x, q, interpolation=_m, **kw),
        [Sample(((3, 7), (4,)), {"dim": 1}), Sample(((3, 7), (4,)), {}),
         Sample(((2, 3, 7), (3,)), {"dim": -1, "keepdim": True}), Sample(((5,), ()), {}),
         Sample(((3, 7), (0,)), {"dim": 0})],
        dtypes=("float32", "float64"), make_input=quantile_q, grad_inputs=(0,))
      for mode in INTERPOLATIONS],
    OpInfo("quantile_ties", lambda lib, x: x.quantile(0.5, dim=0),
           [Sample(((9, 3),))], dtypes=("float32", "float64"), make_input=small_integers,
           gradcheck=False),
    OpInfo("quantile_nan", lambda lib, x, **kw: lib.quantile(x, 0.4, **kw),
           [Sample(((4, 6),), {"dim": 1}), Sample(((4, 6),))], dtypes=("float32", "float64"),
           make_input=with_nans, grad=False, gradcheck=False),  # which NaN is "last" is unspecified
    *[OpInfo(f"nanquantile_{mode}", lambda lib, x, _m=mode, **kw: x.nanquantile(
        0.63, interpolation=_m, **kw),
        [Sample(((4, 6),), {"dim": 1}), Sample(((4, 6),)), Sample(((3, 5),), {"dim": 0})],
        dtypes=("float32", "float64"), make_input=with_nans, gradcheck=False)
      for mode in INTERPOLATIONS],
    OpInfo("quantile_errors", lambda lib, x, **kw: lib.quantile(x, **kw),
           [Sample(((3,),), {"q": 1.5}), Sample(((3,),), {"q": -0.1}),
            Sample(((0,),), {"q": 0.5}), Sample(((3,),), {"q": 0.5, "interpolation": "cubic"}),
            Sample(((3,),), {"q": 0.5, "dim": 1})],
           dtypes=("float32", "int64", "float16"), grad=False, gradcheck=False),
    # ---- unique -------------------------------------------------------------------------------
    OpInfo("unique", lambda lib, x, **kw: lib.unique(x, **kw),
           [Sample(((4, 6),)), Sample(((4, 6),), {"return_inverse": True}),
            Sample(((4, 6),), {"return_counts": True}),
            Sample(((4, 6),), {"return_inverse": True, "return_counts": True}),
            Sample(((),), {"return_inverse": True, "return_counts": True}),
            Sample(((0, 3),), {"return_inverse": True}),
            Sample(((4, 6),), {"return_inverse": True}, noncontig=True)],
           dtypes=ALL_DTYPES, make_input=small_integers, grad=False, gradcheck=False),
    OpInfo("unique_dim", lambda lib, x, **kw: x.unique(return_inverse=True,
                                                      return_counts=True, **kw),
           [Sample(((6, 3),), {"dim": 0}), Sample(((3, 6),), {"dim": 1}),
            Sample(((2, 5, 2),), {"dim": -2}), Sample(((0, 3),), {"dim": 0}),
            Sample(((0, 3),), {"dim": 1}), Sample(((4, 6),), {"dim": 2})],
           dtypes=FEW, make_input=lambda rng, shape, dtype, i: small_integers(
               rng, shape, dtype, i) % 2, grad=False, gradcheck=False),
    OpInfo("unique_consecutive", lambda lib, x, **kw: lib.unique_consecutive(
        x, return_inverse=True, return_counts=True, **kw),
           [Sample(((12,),)), Sample(((3, 4),)), Sample(((6, 2),), {"dim": 0}),
            Sample(((2, 6),), {"dim": 1}), Sample(((),)), Sample(((0, 3),)),
            Sample(((0, 3),), {"dim": 0})],
           dtypes=ALL_DTYPES, make_input=lambda rng, shape, dtype, i: small_integers(
               rng, shape, dtype, i) % 2, grad=False, gradcheck=False),
    OpInfo("unique_consecutive_method", lambda lib, x: x.unique_consecutive(),
           [Sample(((12,),))], dtypes=FEW, make_input=small_integers, grad=False,
           gradcheck=False),
    # ---- searching ----------------------------------------------------------------------------
    *[OpInfo(f"searchsorted_{side}", lambda lib, s, v, _side=side, **kw: lib.searchsorted(
        s, v, side=_side, **kw),
        [Sample(((9,), (3, 4))), Sample(((2, 3, 7), (2, 3, 5))), Sample(((5,), ())),
         Sample(((4, 6), (4, 0))), Sample(((9,), (5,)), {"out_int32": True}),
         Sample(((2, 6), (3, 4)))],
        dtypes=NUMERIC if side == "left" else FEW, make_input=lambda rng, shape, dtype, i: (
            sorted_rows if i == 0 else half_steps)(rng, shape, dtype, i),
        grad=False, gradcheck=False) for side in ("left", "right")],
    OpInfo("searchsorted_right_flag", lambda lib, s, v: lib.searchsorted(s, v, right=True),
           [Sample(((9,), (3, 4))), Sample(((3, 7), (3, 2)))], dtypes=FEW,
           make_input=lambda rng, shape, dtype, i: (
               sorted_rows if i == 0 else half_steps)(rng, shape, dtype, i),
           grad=False, gradcheck=False),
    OpInfo("bucketize", lambda lib, v, b, **kw: lib.bucketize(v, b, **kw),
           [Sample(((3, 4), (7,))), Sample(((3, 4), (7,)), {"right": True}),
            Sample(((), (5,)), {"out_int32": True}), Sample(((3,), (2, 2)))],
           dtypes=NUMERIC, make_input=lambda rng, shape, dtype, i: (
               half_steps if i == 0 else sorted_rows)(rng, shape, dtype, i),
           grad=False, gradcheck=False),
    # ---- counting -----------------------------------------------------------------------------
    OpInfo("histc", lambda lib, x, **kw: lib.histc(x, **kw),
           [Sample(((50,),), {"bins": 7}), Sample(((5, 8),), {"bins": 4, "min": -1, "max": 1}),
            Sample(((5, 8),), {"bins": 3, "min": 0.5, "max": 0.5}),
            Sample(((0,),), {"bins": 3}), Sample(((7,),), {"bins": 0}),
            Sample(((7,),), {"bins": 4, "min": 2, "max": 1})],
           dtypes=("float32", "float64", "int64"), grad=False, gradcheck=False),
    OpInfo("histc_method_grid", lambda lib, x: x.histc(bins=16, min=-4, max=4),
           [Sample(((200,),))], dtypes=("float32", "float64"), make_input=half_steps,
           grad=False, gradcheck=False),
    OpInfo("histogram", lambda lib, x, **kw: lib.histogram(x, 6, **kw),
           [Sample(((50,),)), Sample(((5, 8),), {"range": (-1.0, 1.0)}),
            Sample(((5, 8),), {"density": True}), Sample(((0,),)),
            Sample(((5, 8),), {"range": (2.0, 1.0)})],
           dtypes=("float32", "float64", "int64"), grad=False, gradcheck=False),
    OpInfo("histogram_grid", lambda lib, x: x.histogram(16, range=(-4.0, 4.0)),
           [Sample(((300,),))], dtypes=("float32", "float64"), make_input=half_steps,
           grad=False, gradcheck=False),
    OpInfo("histogram_edges", lambda lib, x, e, **kw: lib.histogram(x, e, **kw),
           [Sample(((40,), (6,))), Sample(((40,), (6,)), {"density": True})],
           dtypes=("float32", "float64"),
           make_input=values_then_edges, grad=False, gradcheck=False),
    OpInfo("histogram_weight", lambda lib, x, w: lib.histogram(x, 5, weight=w, density=True),
           [Sample(((30,), (30,))), Sample(((3, 4), (3, 4))), Sample(((30,), (29,)))],
           dtypes=("float32", "float64"), grad=False, gradcheck=False),
    OpInfo("bincount", lambda lib, x, **kw: lib.bincount(x, **kw),
           [Sample(((20,),)), Sample(((20,),), {"minlength": 9}), Sample(((0,),)),
            Sample(((0,),), {"minlength": 3}), Sample(((4, 5),)),
            Sample(((5,),), {"minlength": -1})],
           dtypes=INT_DTYPES + ("bool", "float32"), make_input=small_integers, grad=False,
           gradcheck=False),
    OpInfo("bincount_negative", lambda lib, x: x.bincount(), [Sample(((20,),))],
           dtypes=("int64", "int32"), grad=False, gradcheck=False),
    OpInfo("bincount_weights", lambda lib, x, w: lib.bincount(x, w),
           [Sample(((20,), (20,))), Sample(((20,), (19,)))],
           dtypes=FLOAT_DTYPES + ("int64",),
           make_input=indices_then_weights, grad=False, gradcheck=False),
    OpInfo("isin", lambda lib, a, b, **kw: lib.isin(a, b, **kw),
           [Sample(((3, 4), (5,))), Sample(((3, 4), (2, 3)), {"invert": True}),
            Sample(((), (5,))), Sample(((0, 3), (4,))), Sample(((6,), ())),
            Sample(((3, 4), (5,)), {"assume_unique": False}, noncontig=True)],
           dtypes=ALL_DTYPES, make_input=small_integers, grad=False, gradcheck=False),
    OpInfo("argwhere", lambda lib, x: lib.argwhere(x), [Sample(((3, 4),)), Sample(((),)),
                                                        Sample(((0, 3),))],
           dtypes=ALL_DTYPES, make_input=small_integers, grad=False, gradcheck=False),
    OpInfo("msort", lambda lib, x: lib.msort(x), [Sample(((5, 3),)), Sample(((4,),))],
           dtypes=NUMERIC, make_input=distinct_values),
]
