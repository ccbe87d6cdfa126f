"""Rows for ember/ops/tensor_api.py: addcmul/addcdiv/addr, statistics (cov, corrcoef, dist,
renorm, trace), gradient, igamma/igammac, index_reduce and the split aliases. Factories, in-place
view ops, resize_, predicates and error messages are in tests/test_tensor_api_extras.py."""
import numpy as np

from .core import OpInfo, Sample, standard_samples, FLOAT_DTYPES
from .ops_reduce import distinct_values

F32_64 = ("float32", "float64")
FEW_DTYPES = ("float32", "float64", "bfloat16", "int64", "int32", "uint8")


def _on(lib, like, data, dtype=None):
    return lib.tensor(data, device=like.device, dtype=dtype)


def _refused(name, fn, *shapes, dtypes=("float32",)):
    """A row whose inputs PyTorch refuses: Ember must raise the same exception type."""
    return OpInfo(name, fn, [Sample(shapes)], dtypes=dtypes, grad=False, gradcheck=False)


def _away_from_zero(rng, shape, dtype, index):
    """Divisors kept away from zero (addcdiv's third operand)."""
    arr = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1, 1], size=shape)
    return arr if index == 2 else rng.uniform(-2, 2, size=shape)


def _positive(rng, shape, dtype, index):
    """igamma's a (index 0) in (0.1, 12] and x (index 1) in (0.05, 25]: both branches
    (series for x < a + 1, continued fraction beyond) are reached."""
    if index == 0:
        return rng.uniform(0.1, 12.0, size=shape)
    return rng.uniform(0.05, 25.0, size=shape)


def _igamma_edges(rng, shape, dtype, index):
    a = np.array([0.0, 1.0, -1.0, 2.0, np.inf, 0.0, 3.0, np.nan, 0.5, 50.0, 200.0, 1e-3])
    x = np.array([1.0, 0.0, 1.0, np.inf, 2.0, 0.0, 1e-8, 1.0, 60.0, 49.0, 210.0, 1e-3])
    return a if index == 0 else x


IDX = [0, 2, 1, 0, 2]


def _index_reduce_row(reduce, include_self):
    def fn(lib, x, src):
        return x.index_reduce(0, _on(lib, x, IDX), src, reduce, include_self=include_self)
    name = f"index_reduce_{reduce}{'' if include_self else '_exclude_self'}"
    dtypes = ("float32", "float64", "int64")
    # Without self, PyTorch's amax/amin gradient still shares the gradient with self's old
    # value where it ties with the result, so PyTorch itself fails gradcheck there; Ember
    # matches PyTorch's gradient (checked against it), not the finite differences.
    exact = include_self or reduce not in ("amax", "amin")
    return OpInfo(name, fn, [Sample(((3, 4), (5, 4))), Sample(((3, 4), (5, 4)), noncontig=True)],
                  dtypes=dtypes, make_input=distinct_values, gradcheck=exact)


def _index_reduce_dim1(lib, x, src):
    return lib.index_reduce(x, 1, _on(lib, x, [3, 0, 3]), src, "amax")


def _cov_weights(lib, x):
    fw = _on(lib, x, [1, 2, 0, 3, 1])
    aw = _on(lib, x, [0.5, 1.0, 2.0, 0.25, 1.5], x.dtype)
    return lib.cov(x, correction=2, fweights=fw, aweights=aw)


OPS = [
    # ---- addcmul, addcdiv, addr -----------------------------------------------------------------
    OpInfo("addcmul", lambda lib, x, a, b: lib.addcmul(x, a, b, value=0.5),
           standard_samples(((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((), (), ()),
                            ((0, 2), (2,), (0, 2))),
           dtypes=FLOAT_DTYPES, gradgrad=True),
    OpInfo("addcmul_ints", lambda lib, x, a, b: x.addcmul(a, b, value=3),
           [Sample(((3, 4), (3, 4), (4,)))], dtypes=("int64", "int32", "uint8")),
    OpInfo("addcmul_", lambda lib, x, a, b: (x * 1).addcmul_(a, b, value=-2),
           [Sample(((3, 4), (3, 4), (4,)))], dtypes=F32_64),
    OpInfo("addcdiv", lambda lib, x, a, b: lib.addcdiv(x, a, b, value=2),
           standard_samples(((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((), (), ())),
           dtypes=FLOAT_DTYPES, make_input=_away_from_zero, gradgrad=True),
    OpInfo("addcdiv_", lambda lib, x, a, b: (x * 1).addcdiv_(a, b),
           [Sample(((3, 4), (3, 4), (4,)))], dtypes=F32_64, make_input=_away_from_zero),
    _refused("addcdiv_ints", lambda lib, x, a, b: lib.addcdiv(x, a, b), (3,), (3,), (3,),
             dtypes=("int64",)),
    OpInfo("addr", lambda lib, m, u, v: lib.addr(m, u, v, beta=0.5, alpha=-2),
           standard_samples(((3, 4), (3,), (4,)), ((4,), (3,), (4,)), ((), (3,), (4,)),
                            ((0, 4), (0,), (4,))),
           dtypes=FLOAT_DTYPES, gradgrad=True),
    OpInfo("addr_default", lambda lib, m, u, v: m.addr(u, v), [Sample(((3, 4), (3,), (4,)))],
           dtypes=FEW_DTYPES + ("bool",)),
    # m / 0 has infinite derivatives: compared with PyTorch's gradient, not gradchecked.
    OpInfo("addr_beta0_nan", lambda lib, m, u, v: lib.addr(m / 0, u, v, beta=0),
           [Sample(((3, 4), (3,), (4,)))], dtypes=F32_64, gradcheck=False),
    OpInfo("addr_", lambda lib, m, u, v: (m * 1).addr_(u, v, alpha=3),
           [Sample(((3, 4), (3,), (4,)))], dtypes=F32_64),
    _refused("addr_matrix_vec", lambda lib, m, u, v: lib.addr(m, u, v), (3, 4), (3, 1), (4,)),
    _refused("addr_bad_input", lambda lib, m, u, v: lib.addr(m, u, v), (3, 5), (3,), (4,)),
    # ---- statistics -----------------------------------------------------------------------------
    OpInfo("cov", lambda lib, x: lib.cov(x), standard_samples(((3, 5),), ((5,),), ((1, 5),)),
           dtypes=("float32", "float64", "int64"), gradgrad=True),
    OpInfo("cov_correction0", lambda lib, x: x.cov(correction=0), [Sample(((3, 5),))],
           dtypes=F32_64),
    OpInfo("cov_weights", _cov_weights, [Sample(((3, 5),)), Sample(((3, 5),), noncontig=True)],
           dtypes=F32_64),
    _refused("cov_3d", lambda lib, x: lib.cov(x), (2, 3, 4)),
    OpInfo("corrcoef", lambda lib, x: lib.corrcoef(x),
           standard_samples(((3, 5),), ((5,),)), dtypes=("float32", "float64", "int64")),
    OpInfo("dist", lambda lib, a, b: lib.dist(a, b),
           standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())), dtypes=FLOAT_DTYPES),
    OpInfo("dist_p", lambda lib, a, b: a.dist(b, 3.5), [Sample(((3, 4), (4,)))], dtypes=F32_64),
    OpInfo("dist_p1", lambda lib, a, b: a.dist(b, 1), [Sample(((3, 4), (4,)))], dtypes=F32_64),
    OpInfo("dist_inf", lambda lib, a, b: a.dist(b, float("inf")), [Sample(((3, 4), (3, 4)))],
           dtypes=F32_64, make_input=distinct_values),
    OpInfo("dist_p0", lambda lib, a, b: a.dist(b, 0), [Sample(((3, 4), (3, 4)))],
           dtypes=F32_64, grad=False, gradcheck=False),
    _refused("dist_ints", lambda lib, a, b: lib.dist(a, b), (3,), (3,), dtypes=("int64",)),
    OpInfo("renorm", lambda lib, x: lib.renorm(x, 2, 0, 1.5),
           standard_samples(((3, 4),), ((2, 3, 4),)), dtypes=FLOAT_DTYPES),
    OpInfo("renorm_dim1_p1", lambda lib, x: x.renorm(1, -1, 2.0), [Sample(((4, 3, 2),))],
           dtypes=F32_64),
    OpInfo("renorm_", lambda lib, x: (x * 1).renorm_(3, 1, 1.0), [Sample(((4, 3),))],
           dtypes=F32_64),
    _refused("renorm_p0", lambda lib, x: lib.renorm(x, 0, 0, 1.0), (3, 4)),
    _refused("renorm_ints", lambda lib, x: lib.renorm(x, 2, 0, 1.0), (3, 4), dtypes=("int64",)),
    OpInfo("trace", lambda lib, x: lib.trace(x),
           standard_samples(((3, 4),), ((4, 3),), ((0, 3),)),
           dtypes=("float32", "float64", "bfloat16", "int64", "int32", "uint8")),
    _refused("trace_3d", lambda lib, x: lib.trace(x), (2, 2, 2)),
    _refused("trace_bool", lambda lib, x: x.trace(), (2, 2), dtypes=("bool",)),
    # ---- gradient -------------------------------------------------------------------------------
    OpInfo("gradient", lambda lib, x: lib.gradient(x),
           standard_samples(((5, 4),), ((6,),)), dtypes=("float32", "float64", "int64")),
    OpInfo("gradient_spacing", lambda lib, x: lib.gradient(x, spacing=0.5, dim=1, edge_order=2),
           standard_samples(((3, 5),)), dtypes=F32_64),
    OpInfo("gradient_spacings", lambda lib, x: lib.gradient(x, spacing=[2.0, 0.25], dim=[1, 0]),
           [Sample(((4, 5),))], dtypes=F32_64),
    OpInfo("gradient_coordinates",
           lambda lib, x: lib.gradient(x, spacing=(_on(lib, x, [0.0, 0.5, 1.5, 1.75, 3.0]),),
                                       dim=0),
           [Sample(((5, 3),))], dtypes=F32_64),
    OpInfo("gradient_coordinates_order2",
           lambda lib, x: lib.gradient(x, spacing=(_on(lib, x, [0.0, 0.5, 1.5, 1.75, 3.0]),),
                                       dim=-1, edge_order=2),
           [Sample(((2, 5),))], dtypes=F32_64),
    _refused("gradient_too_short", lambda lib, x: lib.gradient(x, edge_order=2), (2, 4)),
    # ---- igamma, igammac ------------------------------------------------------------------------
    OpInfo("igamma", lambda lib, a, x: lib.igamma(a, x),
           standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((0,), (0,))),
           dtypes=F32_64, make_input=_positive, grad_inputs=(1,)),
    OpInfo("igammac", lambda lib, a, x: a.igammac(x),
           standard_samples(((3, 4), (3, 4)), ((40,), (40,))),
           dtypes=F32_64, make_input=_positive, grad_inputs=(1,)),
    OpInfo("igamma_edges", lambda lib, a, x: (lib.igamma(a, x), lib.igammac(a, x)),
           [Sample(((12,), (12,)))], dtypes=F32_64, make_input=_igamma_edges, grad=False,
           gradcheck=False),
    OpInfo("igamma_", lambda lib, a, x: (a * 1).igamma_(x), [Sample(((3, 4), (4,)))],
           dtypes=F32_64, make_input=_positive, grad_inputs=(1,)),
    _refused("igamma_ints", lambda lib, a, x: lib.igamma(a, x), (3,), (3,), dtypes=("int64",)),
    # ---- index_reduce ---------------------------------------------------------------------------
    *[_index_reduce_row(r, s) for r in ("prod", "mean", "amax", "amin") for s in (True, False)],
    OpInfo("index_reduce_dim1", _index_reduce_dim1, [Sample(((2, 4), (2, 3)))], dtypes=F32_64,
           make_input=distinct_values),
    OpInfo("index_reduce_", lambda lib, x, s: (x * 1).index_reduce_(0, _on(lib, x, IDX), s,
                                                                    "prod"),
           [Sample(((3, 4), (5, 4)))], dtypes=F32_64, make_input=distinct_values),
    _refused("index_reduce_sum",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0, 1]), s, "sum"), (3, 2), (2, 2)),
    _refused("index_reduce_float_index",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0.0, 1.0]), s, "prod"), (3, 2),
             (2, 2)),
    _refused("index_reduce_count",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0, 1, 1]), s, "prod"), (3, 2),
             (2, 2)),
    _refused("index_reduce_out_of_range",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0, 3]), s, "prod"), (3, 2), (2, 2)),
    # ---- geqrf, orgqr, ormqr ---------------------------------------------------------------------
    OpInfo("geqrf", lambda lib, a: tuple(lib.geqrf(a)),
           [Sample(((5, 3),)), Sample(((3, 5),)), Sample(((2, 4, 4),)), Sample(((0, 3),)),
            Sample(((5, 3),), noncontig=True)], dtypes=F32_64, grad=False, gradcheck=False),
    _refused("geqrf_1d", lambda lib, a: lib.geqrf(a), (3,)),
    _refused("geqrf_half", lambda lib, a: lib.geqrf(a), (3, 3), dtypes=("float16",)),
    OpInfo("orgqr", lambda lib, a, tau: lib.orgqr(a, tau),
           [Sample(((5, 3), (3,))), Sample(((5, 3), (2,))), Sample(((2, 4, 4), (2, 4))),
            Sample(((4, 3), (3,)), noncontig=True)], dtypes=F32_64, gradgrad=True),
    OpInfo("orgqr_zero_tau", lambda lib, a, tau: a.orgqr(tau * lib.tensor([1.0, 0.0, 1.0],
                                                                            device=a.device)),
           [Sample(((4, 3), (3,)))], dtypes=F32_64),
    _refused("orgqr_wide", lambda lib, a, tau: lib.orgqr(a, tau), (3, 4), (2,)),
    _refused("orgqr_long_tau", lambda lib, a, tau: lib.orgqr(a, tau), (4, 3), (4,)),
    *[OpInfo(f"ormqr_{'left' if left else 'right'}{'_t' if tr else ''}",
             lambda lib, a, tau, c, left=left, tr=tr: lib.ormqr(a, tau, c, left, tr),
             [Sample(((4, 3), (3,), (4, 2) if left else (2, 4))),
              Sample(((2, 3, 4), (2, 3), (2, 3, 5) if left else (2, 5, 3)))],
             dtypes=F32_64)
      for left in (True, False) for tr in (False, True)],
    _refused("ormqr_bad_other", lambda lib, a, tau, c: lib.ormqr(a, tau, c), (4, 3), (3,),
             (5, 2)),
    # ---- stft, istft ------------------------------------------------------------------------------
    OpInfo("stft", lambda lib, x: lib.stft(x, 8, return_complex=True),
           [Sample(((20,),)), Sample(((2, 20),)), Sample(((2, 20),), noncontig=True)],
           dtypes=F32_64),
    OpInfo("stft_window", lambda lib, x, w: lib.stft(x, 8, hop_length=3, win_length=6, window=w,
                                                     normalized=True, return_complex=True),
           [Sample(((2, 21), (6,)))], dtypes=F32_64),
    OpInfo("stft_twosided_constant", lambda lib, x: lib.stft(x, 7, onesided=False,
                                                             pad_mode="constant",
                                                             return_complex=True),
           [Sample(((15,),))], dtypes=F32_64),
    OpInfo("stft_not_centered_real", lambda lib, x: lib.stft(x, 6, 2, center=False,
                                                             return_complex=False),
           [Sample(((2, 16),))], dtypes=F32_64),
    # Complex-input rows are compared with PyTorch's gradients; the harness gradchecks real
    # float64 inputs only, so istft's gradcheck is the stft round trip below.
    OpInfo("istft", lambda lib, z: lib.istft(z, 8), [Sample(((5, 11),)), Sample(((2, 5, 11),))],
           dtypes=("complex64", "complex128"), gradcheck=False),
    OpInfo("stft_istft_round_trip",
           lambda lib, x, w: lib.istft(lib.stft(x, 8, 2, window=w, return_complex=True), 8, 2,
                                       window=w, length=21),
           [Sample(((2, 21), (8,)))], dtypes=F32_64, domain=(0.5, 1.5)),
    OpInfo("istft_twosided", lambda lib, z: lib.istft(z, 6, 2, onesided=False, center=False,
                                                      return_complex=True),
           [Sample(((6, 5),))], dtypes=("complex128",), gradcheck=False),
    _refused("stft_no_return_complex", lambda lib, x: lib.stft(x, 4), (12,)),
    _refused("stft_3d", lambda lib, x: lib.stft(x, 4, return_complex=True), (2, 2, 12)),
    _refused("stft_bad_window", lambda lib, x, w: lib.stft(x, 4, window=w, return_complex=True),
             (12,), (3,)),
    _refused("istft_real", lambda lib, x: lib.istft(x, 4), (3, 13)),
    # ---- splits ---------------------------------------------------------------------------------
    OpInfo("split_with_sizes", lambda lib, x: x.split_with_sizes([1, 3, 0, 1], 1),
           standard_samples(((3, 5),)), dtypes=("float32", "float64", "int64")),
    OpInfo("unsafe_split", lambda lib, x: lib.unsafe_split(x, 2, -1),
           standard_samples(((3, 5),)), dtypes=F32_64),
    OpInfo("unsafe_split_with_sizes", lambda lib, x: x.unsafe_split_with_sizes([2, 1]),
           standard_samples(((3, 5),)), dtypes=F32_64),
    OpInfo("unsafe_chunk", lambda lib, x: lib.unsafe_chunk(x, 2, 1),
           standard_samples(((3, 5),)), dtypes=F32_64),
    OpInfo("dsplit", lambda lib, x: lib.dsplit(x, 2), standard_samples(((2, 3, 4),)),
           dtypes=F32_64),
    OpInfo("dsplit_indices", lambda lib, x: x.dsplit([1, 3]), [Sample(((2, 3, 4),))],
           dtypes=F32_64),
    _refused("dsplit_2d", lambda lib, x: lib.dsplit(x, 2), (2, 4)),
    _refused("dsplit_uneven", lambda lib, x: lib.dsplit(x, 3), (2, 3, 4)),
    OpInfo("row_stack", lambda lib, a, b: lib.row_stack((a, b)),
           standard_samples(((3,), (3,)), ((2, 3), (1, 3))), dtypes=F32_64),
]
