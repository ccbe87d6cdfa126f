"""Rows for cumulative and windowed ops: cummax/cummin, logcumsumexp, diff, the trapezoid rule,
``Tensor.unfold``, ``as_strided``, distances (cdist, pdist, cosine_similarity,
pairwise_distance) and numerical gradients (``gradient``). Ties, NaN, memory sharing and error
messages are in tests/test_cumulative.py.
"""
import math

import numpy as np

from .core import OpInfo, Sample, standard_samples
from .ops_reduce import distinct_values

F32_64 = ("float32", "float64")
SCAN_DTYPES = ("float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool")


def _scan_samples(**extra):
    return [Sample(((3, 4),), {"dim": 1, **extra}), Sample(((2, 3, 4),), {"dim": 0, **extra}),
            Sample(((2, 3, 4),), {"dim": -1, **extra}), Sample(((),), {"dim": 0, **extra}),
            Sample(((0, 3),), {"dim": 0, **extra}), Sample(((3, 4),), {"dim": 1, **extra}, noncontig=True)]


def _refused(name, fn, *shapes, dtypes=("float32",)):
    """A row whose inputs PyTorch refuses: Ember must raise the same exception type."""
    return OpInfo(name, fn, [Sample(shapes)], dtypes=dtypes, grad=False, gradcheck=False)


def _cumulative_extremum(name, method):
    fn = (lambda lib, x, dim: getattr(x, name)(dim)) if method else \
        (lambda lib, x, dim: getattr(lib, name)(x, dim))
    return OpInfo(f"{name}{'_method' if method else ''}", fn, _scan_samples(),
                  dtypes=SCAN_DTYPES if not method else F32_64, make_input=distinct_values)


def _samples_and_increasing_x(rng, shape, dtype, index):
    """Inputs for trapezoid rows: samples ``y``, then sample points ``x`` increasing along the
    last dim."""
    if index == 1:
        return np.cumsum(rng.uniform(0.1, 1.0, size=shape), axis=-1)
    return rng.uniform(-2, 2, size=shape)


OPS = [
    # ---- running extrema ----------------------------------------------------------------------
    _cumulative_extremum("cummax", False),
    _cumulative_extremum("cummin", False),
    _cumulative_extremum("cummax", True),
    _cumulative_extremum("cummin", True),
    _refused("cummax_dim", lambda lib, x: lib.cummax(x, 2), (3, 4)),
    # ---- logcumsumexp ---------------------------------------------------------------------------
    OpInfo("logcumsumexp", lambda lib, x, dim: lib.logcumsumexp(x, dim), _scan_samples(),
           dtypes=("float32", "float64", "float16", "bfloat16", "int64"), domain=(-30, 30)),
    OpInfo("logcumsumexp_method", lambda lib, x, dim: x.logcumsumexp(dim), _scan_samples()[:2],
           dtypes=F32_64),
    # ---- diff -----------------------------------------------------------------------------------
    OpInfo("diff", lambda lib, x, **kw: lib.diff(x, **kw),
           [Sample(((3, 5),)), Sample(((3, 5),), {"n": 2, "dim": 1}),
            Sample(((4, 3),), {"dim": 0}), Sample(((6,),), {"n": 3}),
            Sample(((3, 2),), {"n": 4}), Sample(((0, 4),)), Sample(((3, 5),), noncontig=True)],
           dtypes=("float32", "float64", "int64", "uint8", "bool"), gradgrad=True),
    _refused("diff_0d", lambda lib, x: lib.diff(x), ()),
    _refused("diff_negative_order", lambda lib, x: lib.diff(x, -1), (3,)),
    OpInfo("diff_prepend_append", lambda lib, x, p, a: x.diff(1, 0, prepend=p, append=a),
           [Sample(((3, 4), (2, 4), (1, 4))), Sample(((3, 4), (2, 4), (1, 4)), noncontig=True)],
           dtypes=("float32", "float64", "int64")),
    _refused("diff_prepend_mismatch", lambda lib, x, p: x.diff(1, 0, prepend=p), (3, 4), (2, 5)),
    _refused("diff_scalar_prepend", lambda lib, x: lib.diff(x, prepend=1.5), (3, 4)),
    # ---- trapezoid rule -------------------------------------------------------------------------
    OpInfo("trapezoid", lambda lib, y, **kw: lib.trapezoid(y, **kw),
           [Sample(((3, 5),)), Sample(((3, 5),), {"dx": 0.5, "dim": 0}), Sample(((4,),)),
            Sample(((3, 1),)), Sample(((3, 5),), noncontig=True)],
           dtypes=("float32", "float64", "int64")),
    OpInfo("trapezoid_empty", lambda lib, y: lib.trapezoid(y), [Sample(((3, 0),))],
           dtypes=("float32", "int64"), grad=False, gradcheck=False),
    _refused("trapezoid_0d", lambda lib, y: lib.trapezoid(y), ()),
    OpInfo("trapezoid_x", lambda lib, y, x: lib.trapezoid(y, x),
           [Sample(((3, 5), (5,))), Sample(((3, 5), (3, 5)))],
           dtypes=F32_64, make_input=_samples_and_increasing_x),
    _refused("trapezoid_x_length", lambda lib, y, x: lib.trapezoid(y, x), (3, 5), (4,)),
    OpInfo("trapz", lambda lib, y, x: lib.trapz(y, x, dim=0), [Sample(((4, 2), (4,)))],
           dtypes=F32_64, make_input=_samples_and_increasing_x),
    OpInfo("cumulative_trapezoid", lambda lib, y, **kw: lib.cumulative_trapezoid(y, **kw),
           [Sample(((3, 5),)), Sample(((3, 5),), {"dx": 2.0, "dim": 0}), Sample(((3, 0),)),
            Sample(((3, 5),), noncontig=True)],
           dtypes=("float32", "float64", "int64")),
    OpInfo("cumulative_trapezoid_x", lambda lib, y, x: lib.cumulative_trapezoid(y, x),
           [Sample(((3, 5), (5,))), Sample(((3, 5), (1, 5)))], dtypes=F32_64,
           make_input=_samples_and_increasing_x),
    # ---- strided windows (views) ----------------------------------------------------------------
    OpInfo("unfold", lambda lib, x, *a: x.unfold(*a),
           [Sample(((3, 7),), args=(1, 3, 1)), Sample(((3, 7),), args=(1, 2, 2)),
            Sample(((6, 2, 3),), args=(0, 4, 3)), Sample(((3, 7),), args=(-1, 7, 1)),
            Sample(((3, 7),), args=(1, 0, 1)), Sample(((),), args=(0, 1, 1)),
            Sample(((3, 8),), args=(1, 3, 2), noncontig=True)],
           dtypes=("float32", "float64", "int64", "bool"), gradgrad=True),
    _refused("unfold_too_big", lambda lib, x: x.unfold(1, 5, 1), (3, 4)),
    _refused("unfold_step", lambda lib, x: x.unfold(1, 2, 0), (3, 4)),
    _refused("unfold_dim", lambda lib, x: x.unfold(2, 2, 1), (3, 4)),
    OpInfo("as_strided", lambda lib, x, size, stride, *off: lib.as_strided(x, size, stride, *off),
           [Sample(((3, 4),), args=((2, 2), (1, 2))),       # overlapping reads
            Sample(((3, 4),), args=((3, 3), (4, 1), 1)),    # explicit storage offset
            Sample(((3, 4),), args=((4, 3), (1, 4))),       # a transpose
            Sample(((12,),), args=((2, 3, 2), (6, 2, 1))),
            Sample(((3, 4),), args=((0, 2), (1, 1))),
            Sample(((3, 4),), args=((2, 2), (1, 2)), noncontig=True)],
           dtypes=("float32", "float64", "int32"), gradgrad=True),
    OpInfo("as_strided_of_view", lambda lib, x: x[1:].as_strided((2, 3), (1, 2)),
           [Sample(((3, 4),))], dtypes=F32_64),
    _refused("as_strided_out_of_bounds", lambda lib, x: lib.as_strided(x, (2, 2), (1, 20)), (3, 4)),
    _refused("as_strided_negative_stride", lambda lib, x: lib.as_strided(x, (2, 2), (-1, 1)), (3, 4)),
    _refused("as_strided_rank", lambda lib, x: lib.as_strided(x, (2, 2), (1,)), (3, 4)),
    # ---- distances ------------------------------------------------------------------------------
    OpInfo("cdist", lambda lib, a, b, **kw: lib.cdist(a, b, **kw),
           [Sample(((4, 3), (5, 3))), Sample(((4, 3), (5, 3)), {"p": 1.0}),
            Sample(((4, 3), (5, 3)), {"p": 3.0}), Sample(((4, 3), (5, 3)), {"p": math.inf}),
            Sample(((4, 3), (5, 3)), {"p": 0.0}),
            Sample(((2, 1, 4, 3), (3, 5, 3))),
            Sample(((4, 3), (5, 3)), {"compute_mode": "use_mm_for_euclid_dist"}),
            Sample(((30, 3), (6, 3))),                             # the matrix-product path
            Sample(((30, 3), (6, 3)), {"compute_mode": "donot_use_mm_for_euclid_dist"}),
            Sample(((0, 3), (5, 3))),
            Sample(((4, 3), (5, 3)), noncontig=True)],
           dtypes=F32_64),
    OpInfo("cdist_half", lambda lib, a, b: lib.cdist(a, b),
           [Sample(((30, 3), (6, 3))), Sample(((4, 3), (5, 3)))], dtypes=("float16",),
           grad=False, gradcheck=False),
    _refused("cdist_columns", lambda lib, a, b: lib.cdist(a, b), (4, 3), (5, 4)),
    _refused("cdist_1d", lambda lib, a, b: lib.cdist(a, b), (3,), (5, 3)),
    _refused("cdist_negative_p", lambda lib, a, b: lib.cdist(a, b, -1.0), (4, 3), (5, 3)),
    _refused("cdist_mode", lambda lib, a, b: lib.cdist(a, b, compute_mode="fast"), (4, 3), (5, 3)),
    OpInfo("pdist", lambda lib, x, *a: lib.pdist(x, *a),
           [Sample(((5, 3),)), Sample(((5, 3),), args=(1,)), Sample(((5, 3),), args=(3.0,)),
            Sample(((1, 3),)), Sample(((5, 3),), noncontig=True)],
           dtypes=F32_64 + ("int64",)),
    _refused("pdist_1d", lambda lib, x: lib.pdist(x), (5,)),
    _refused("pdist_negative_p", lambda lib, x: lib.pdist(x, -1.0), (5, 3)),
    OpInfo("cosine_similarity", lambda lib, a, b, **kw: lib.cosine_similarity(a, b, **kw),
           [Sample(((4, 3), (4, 3))), Sample(((4, 3), (1, 3)), {"dim": -1}),
            Sample(((2, 4, 3), (2, 4, 3)), {"dim": 1})], dtypes=F32_64),
    OpInfo("pairwise_distance", lambda lib, a, b, **kw: lib.pairwise_distance(a, b, **kw),
           [Sample(((4, 3), (4, 3))), Sample(((4, 3), (1, 3)), {"p": 1.0, "keepdim": True})],
           dtypes=F32_64),
    # ---- gradient -------------------------------------------------------------------------------
    OpInfo("gradient", lambda lib, x: lib.gradient(x),
           standard_samples(((5, 4),), ((6,),)), dtypes=("float32", "float64", "int64")),
    OpInfo("gradient_spacing", lambda lib, x: lib.gradient(x, spacing=0.5, dim=1, edge_order=2),
           standard_samples(((3, 5),)), dtypes=F32_64),
    OpInfo("gradient_spacings", lambda lib, x: lib.gradient(x, spacing=[2.0, 0.25], dim=[1, 0]),
           [Sample(((4, 5),))], dtypes=F32_64),
    OpInfo("gradient_coordinates",
           lambda lib, x: lib.gradient(x, spacing=(lib.tensor([0.0, 0.5, 1.5, 1.75, 3.0],
                                                             device=x.device),), dim=0),
           [Sample(((5, 3),))], dtypes=F32_64),
    OpInfo("gradient_coordinates_order2",
           lambda lib, x: lib.gradient(x, spacing=(lib.tensor([0.0, 0.5, 1.5, 1.75, 3.0],
                                                             device=x.device),),
                                       dim=-1, edge_order=2),
           [Sample(((2, 5),))], dtypes=F32_64),
    _refused("gradient_too_short", lambda lib, x: lib.gradient(x, edge_order=2), (2, 4)),
]
