"""Rows for ember/ops/extra.py: element-wise functions (copysign ... frexp), shape builders
(meshgrid ... ravel), index writes (index_fill, index_copy, put, masked_scatter, scatter_reduce)
and aminmax. Index tensors are built inside each row on the input's device. Laws, in-place
forms and error messages are in tests/test_extra_ops.py."""
import numpy as np

from .core import OpInfo, Sample, standard_samples, ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES
from .ops_reduce import distinct_values, with_zeros

F32_64 = ("float32", "float64")
FEW_DTYPES = ("float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool")
SIGNED_INTS = ("int64", "int32", "int16", "int8")


def _on(lib, like, data, dtype=None):
    return lib.tensor(data, device=like.device, dtype=dtype)


def _refused(name, fn, *shapes, dtypes=("float32",)):
    """A row whose inputs PyTorch refuses: Ember must raise the same exception type."""
    return OpInfo(name, fn, [Sample(shapes)], dtypes=dtypes, grad=False, gradcheck=False)


def _binary_samples():
    return standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), (3,)), ((0, 2), (2,)))


def _with_exact_zeros(rng, shape, dtype, index):
    """Random values where about a third are exactly zero (heaviside's special case)."""
    arr = rng.uniform(-2, 2, size=shape)
    arr[rng.random(shape) < 0.33] = 0.0
    return arr if dtype in FLOAT_DTYPES else np.round(arr).astype(dtype)


def _integers(rng, shape, dtype, index):
    """Integers with common factors (and zeros and negatives where the dtype has them)."""
    low = 0 if dtype == "uint8" else -30
    return (rng.integers(low // 2, 15, size=shape) * rng.choice([1, 2, 6], size=shape)).astype(dtype)


def _exponents(rng, shape, dtype, index):
    # PyTorch's ldexp backward computes 2 ** exponent in the exponent's integer dtype, so its
    # gradient is 0 for negative exponents (Ember's is the true one): only >= 0 are compared.
    if index == 1:
        return rng.integers(0, 5, size=shape).astype(np.int64)
    return rng.uniform(-2, 2, size=shape)


# Scatter rows: (3, 4) self, (2, 4) index into dim 0 (repeated targets), (2, 5) src.
IDX_REDUCE = [[0, 2, 1, 0], [0, 2, 2, 1]]


def _scatter_reduce_row(reduce, include_self, make_input=distinct_values):
    def fn(lib, x, src):
        return x.scatter_reduce(0, _on(lib, x, IDX_REDUCE), src, reduce, include_self=include_self)
    name = f"scatter_reduce_{reduce}{'' if include_self else '_exclude_self'}"
    dtypes = ("float32", "float64", "int64", "float16") if reduce != "mean" else \
        ("float32", "float64", "int64", "int32")
    # src as large as index: PyTorch's backward refuses a larger src (tested forward-only below).
    return OpInfo(name, fn, [Sample(((3, 4), (2, 4))), Sample(((3, 4), (2, 4)), noncontig=True)],
                  dtypes=dtypes, make_input=make_input)


OPS = [
    # ---- element-wise ---------------------------------------------------------------------------
    OpInfo("copysign", lambda lib, a, b: lib.copysign(a, b), _binary_samples(),
           dtypes=FEW_DTYPES + ("float16",)),
    OpInfo("copysign_scalar", lambda lib, a: a.copysign(-1.5), standard_samples(((3, 4),)),
           dtypes=("float32", "float64", "int64")),
    OpInfo("copysign_", lambda lib, a, b: (a * 1).copysign_(b), [Sample(((3, 4), (4,)))],
           dtypes=F32_64),
    OpInfo("logaddexp", lambda lib, a, b: lib.logaddexp(a, b), _binary_samples(),
           dtypes=("float32", "float64", "float16", "bfloat16"), domain=(-20, 20)),
    OpInfo("logaddexp2", lambda lib, a, b: a.logaddexp2(b), _binary_samples(),
           dtypes=("float32", "float64", "float16", "bfloat16"), domain=(-20, 20)),
    _refused("logaddexp_int", lambda lib, a, b: lib.logaddexp(a, b), (3,), (3,), dtypes=("int64",)),
    _refused("logaddexp_scalar", lambda lib, a: lib.logaddexp(a, 1.0), (3,)),
    # PyTorch's gradient of sgn is a ZeroTensor the harness cannot read: tests/test_extra_ops.py
    # checks Ember's zeros.
    OpInfo("sgn", lambda lib, x: lib.sgn(x), standard_samples(((3, 4),), ((),), ((0,),)),
           dtypes=ALL_DTYPES, make_input=_with_exact_zeros, grad=False, gradcheck=False),
    OpInfo("sgn_", lambda lib, x: (x * 1).sgn_(), [Sample(((3, 4),))], dtypes=F32_64, grad=False),
    OpInfo("heaviside", lambda lib, x, v: lib.heaviside(x, v), _binary_samples(),
           dtypes=("float32", "float64", "int64", "uint8", "bool"), grad=False, gradcheck=False,
           make_input=_with_exact_zeros),
    _refused("heaviside_dtypes", lambda lib, x, v: lib.heaviside(x, v.double()), (3,), (3,)),
    OpInfo("deg2rad", lambda lib, x: lib.deg2rad(x), standard_samples(((3, 4),), ((),)),
           dtypes=ALL_DTYPES, domain=(-360, 360)),
    OpInfo("rad2deg", lambda lib, x: x.rad2deg(), standard_samples(((3, 4),), ((),)),
           dtypes=ALL_DTYPES),
    OpInfo("deg2rad_", lambda lib, x: (x * 1).deg2rad_(), [Sample(((3, 4),))], dtypes=F32_64),
    OpInfo("gcd", lambda lib, a, b: lib.gcd(a, b), _binary_samples(),
           dtypes=INT_DTYPES, make_input=_integers, grad=False, gradcheck=False),
    OpInfo("lcm", lambda lib, a, b: a.lcm(b), _binary_samples(), dtypes=SIGNED_INTS,
           grad=False, gradcheck=False),
    _refused("gcd_float", lambda lib, a, b: lib.gcd(a, b), (3,), (3,)),
    OpInfo("nextafter", lambda lib, a, b: lib.nextafter(a, b), _binary_samples(),
           dtypes=("float32", "float64", "float16", "bfloat16"), gradcheck=False),
    _refused("nextafter_int", lambda lib, a, b: lib.nextafter(a, b), (3,), (3,), dtypes=("int64",)),
    OpInfo("ldexp", lambda lib, x, e: lib.ldexp(x, e),
           standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())),
           dtypes=("float32", "float64", "float16", "bfloat16"), make_input=_exponents),
    OpInfo("ldexp_ints", lambda lib, x, e: x.ldexp(e), [Sample(((3, 4), (4,)))],
           dtypes=("int64", "int32")),
    OpInfo("frexp", lambda lib, x: lib.frexp(x),
           standard_samples(((3, 4),), ((),), ((0,),)), dtypes=FLOAT_DTYPES, domain=(-50, 50)),
    OpInfo("frexp_zeros", lambda lib, x: lib.frexp(x), [Sample(((3, 4),))], dtypes=FLOAT_DTYPES,
           make_input=lambda rng, shape, dtype, index: _with_exact_zeros(rng, shape, dtype, index) * 17,
           gradcheck=False),
    OpInfo("frexp_method", lambda lib, x: x.frexp().mantissa, [Sample(((3, 4),))], dtypes=F32_64),
    _refused("frexp_int", lambda lib, x: lib.frexp(x), (3,), dtypes=("int64",)),
    # ---- shape builders -------------------------------------------------------------------------
    OpInfo("meshgrid_ij", lambda lib, a, b: lib.meshgrid(a, b, indexing="ij"),
           standard_samples(((3,), (4,)), ((), (4,)), ((0,), (2,))), dtypes=FEW_DTYPES,
           gradgrad=True),
    OpInfo("meshgrid_xy", lambda lib, a, b, c: lib.meshgrid([a, b, c], indexing="xy"),
           standard_samples(((3,), (4,), (2,))), dtypes=F32_64),
    _refused("meshgrid_2d", lambda lib, a, b: lib.meshgrid(a, b, indexing="ij"), (2, 2), (3,)),
    _refused("meshgrid_dtypes", lambda lib, a, b: lib.meshgrid(a, b.double(), indexing="ij"), (2,), (3,)),
    _refused("meshgrid_indexing", lambda lib, a, b: lib.meshgrid(a, b, indexing="yx"), (2,), (3,)),
    OpInfo("cartesian_prod", lambda lib, *ts: lib.cartesian_prod(*ts),
           standard_samples(((3,), (2,)), ((3,), (2,), (2,)), ((4,),), ((0,), (2,))),
           dtypes=FEW_DTYPES),
    _refused("cartesian_prod_2d", lambda lib, a: lib.cartesian_prod(a, a), (2, 2)),
    OpInfo("combinations", lambda lib, x, **kw: lib.combinations(x, **kw),
           [Sample(((5,),)), Sample(((5,),), {"r": 3}), Sample(((4,),), {"with_replacement": True}),
            Sample(((4,),), {"r": 3, "with_replacement": True}), Sample(((4,),), {"r": 1}),
            Sample(((4,),), {"r": 0}), Sample(((3,),), {"r": 4}), Sample(((0,),)),
            Sample(((6,),), noncontig=True)],
           dtypes=FEW_DTYPES),
    _refused("combinations_2d", lambda lib, x: lib.combinations(x), (2, 2)),
    _refused("combinations_negative_r", lambda lib, x: lib.combinations(x, -1), (3,)),
    OpInfo("block_diag", lambda lib, *ts: lib.block_diag(*ts),
           standard_samples(((2, 3), (1,), (), (2, 2)), ((3, 3),), ((0, 2), (2, 0), (1, 1))),
           dtypes=FEW_DTYPES),
    OpInfo("block_diag_mixed_dtypes", lambda lib, a, b: lib.block_diag(a, b.to(lib.int32)),
           [Sample(((2, 2), (1, 3)))], dtypes=("float32", "int64", "bool"), grad_inputs=(0,)),
    _refused("block_diag_3d", lambda lib, a: lib.block_diag(a), (2, 2, 2)),
    OpInfo("rot90", lambda lib, x, *a: lib.rot90(x, *a),
           [Sample(((3, 4),)), Sample(((3, 4),), args=(2,)), Sample(((3, 4),), args=(3,)),
            Sample(((3, 4),), args=(-1,)), Sample(((3, 4),), args=(4,)),
            Sample(((2, 3, 4),), args=(1, [1, 2])), Sample(((2, 3, 4),), args=(1, [-1, 0])),
            Sample(((3, 4),), noncontig=True)],
           dtypes=FEW_DTYPES),
    OpInfo("rot90_method", lambda lib, x: x.rot90(1, (1, 0)), [Sample(((3, 4),))], dtypes=F32_64),
    _refused("rot90_1d", lambda lib, x: lib.rot90(x), (3,)),
    _refused("rot90_three_dims", lambda lib, x: lib.rot90(x, 1, [0, 1, 2]), (2, 2, 2)),
    _refused("rot90_same_dims", lambda lib, x: lib.rot90(x, 1, [0, 0]), (2, 2)),
    _refused("rot90_dim_range", lambda lib, x: lib.rot90(x, 1, [0, 3]), (2, 2)),
    OpInfo("kron", lambda lib, a, b: lib.kron(a, b),
           standard_samples(((2, 3), (3, 2)), ((2,), (3, 4)), ((), (3,)), ((2, 1, 2), (3, 2)),
                            ((0, 2), (2, 2))),
           dtypes=FEW_DTYPES, gradgrad=True),
    OpInfo("kron_method_mixed", lambda lib, a, b: a.kron(b.to(lib.int64)),
           [Sample(((2, 2), (2, 3)))], dtypes=F32_64, grad_inputs=(0,)),
    OpInfo("vander", lambda lib, x, **kw: lib.vander(x, **kw),
           [Sample(((4,),)), Sample(((4,),), {"N": 3, "increasing": True}),
            Sample(((3,),), {"N": 1}), Sample(((3,),), {"N": 0}), Sample(((0,),)),
            Sample(((4,),), noncontig=True)],
           # PyTorch's own backward of vander fails (it writes into a saved view); Ember's
           # gradient is checked by gradcheck here and against torch.pow in test_extra_ops.py.
           dtypes=("float32", "float64", "float16", "int64", "int32", "bool"), grad=False),
    _refused("vander_2d", lambda lib, x: lib.vander(x), (2, 2)),
    _refused("vander_negative_n", lambda lib, x: lib.vander(x, -1), (3,)),
    # Factories: the one tensor argument only names the device to build on.
    OpInfo("tril_indices", lambda lib, like, *a, **kw: lib.tril_indices(*a, **kw, device=like.device),
           [Sample(((1,),), args=(3, 4)), Sample(((1,),), args=(4, 3, 1)),
            Sample(((1,),), args=(4, 3, -2)), Sample(((1,),), args=(0, 3)),
            Sample(((1,),), args=(5, 2, 7))],
           dtypes=("float32",), grad=False, gradcheck=False),
    OpInfo("triu_indices", lambda lib, like, *a, **kw: lib.triu_indices(*a, **kw, device=like.device),
           [Sample(((1,),), args=(3, 4)), Sample(((1,),), args=(4, 3, 1)),
            Sample(((1,),), args=(4, 3, -2)), Sample(((1,),), args=(3, 0)),
            Sample(((1,),), args=(5, 2, -7))],
           dtypes=("float32",), grad=False, gradcheck=False),
    OpInfo("tril_indices_int32", lambda lib, like: lib.tril_indices(3, 3, dtype=lib.int32, device=like.device),
           [Sample(((1,),))], dtypes=("float32",), grad=False, gradcheck=False),
    _refused("tril_indices_negative", lambda lib: lib.tril_indices(-1, 3)),
    _refused("triu_indices_float", lambda lib: lib.triu_indices(3, 3, dtype=lib.float32)),
    OpInfo("ravel", lambda lib, x: lib.ravel(x), standard_samples(((3, 4),), ((),), ((2, 0),)),
           dtypes=FEW_DTYPES),
    OpInfo("ravel_method", lambda lib, x: x.ravel(), [Sample(((2, 3, 4),), noncontig=True)],
           dtypes=F32_64),
    # ---- index writes ---------------------------------------------------------------------------
    OpInfo("index_fill", lambda lib, x: x.index_fill(1, _on(lib, x, [2, 0, -1]), -1.5),
           standard_samples(((3, 4),)), dtypes=FEW_DTYPES),
    OpInfo("index_fill_tensor_value",
           lambda lib, x, v: lib.index_fill(x, 0, _on(lib, x, [1, 1]), v),
           [Sample(((3, 4), ())), Sample(((3, 4), ()), noncontig=True)], dtypes=F32_64),
    OpInfo("index_fill_0d", lambda lib, x: x.index_fill(0, _on(lib, x, [0]), 2.0),
           [Sample(((),))], dtypes=F32_64),
    OpInfo("index_fill_", lambda lib, x: (x * 1).index_fill_(0, _on(lib, x, [2]), 0.5),
           [Sample(((3, 4),))], dtypes=F32_64),
    _refused("index_fill_int32_index", lambda lib, x: x.index_fill(0, _on(lib, x, [0], lib.int32), 1.0), (3, 4)),
    _refused("index_fill_out_of_bounds", lambda lib, x: x.index_fill(0, _on(lib, x, [3]), 1.0), (3, 4)),
    _refused("index_fill_2d_index", lambda lib, x: x.index_fill(0, _on(lib, x, [[0]]), 1.0), (3, 4)),
    _refused("index_fill_1d_value", lambda lib, x, v: x.index_fill(0, _on(lib, x, [0]), v), (3, 4), (1,)),
    OpInfo("index_copy", lambda lib, x, s: x.index_copy(1, _on(lib, x, [3, 0]), s),
           standard_samples(((3, 4), (3, 2))), dtypes=FEW_DTYPES),
    OpInfo("index_copy_top", lambda lib, x, s: lib.index_copy(x, 0, _on(lib, x, [2, 0]), s),
           [Sample(((3, 4), (2, 4)))], dtypes=F32_64),
    OpInfo("index_copy_", lambda lib, x, s: (x * 1).index_copy_(0, _on(lib, x, [1]), s),
           [Sample(((3, 4), (1, 4)))], dtypes=F32_64),
    _refused("index_copy_count", lambda lib, x, s: x.index_copy(1, _on(lib, x, [3, 0]), s), (3, 4), (3, 3)),
    _refused("index_copy_negative", lambda lib, x, s: x.index_copy(1, _on(lib, x, [-1]), s), (3, 4), (3, 1)),
    _refused("index_copy_dtype", lambda lib, x, s: x.index_copy(1, _on(lib, x, [0]), s.double()), (3, 4), (3, 1)),
    _refused("index_copy_slice_shape", lambda lib, x, s: x.index_copy(1, _on(lib, x, [0]), s), (3, 4), (2, 1)),
    OpInfo("put", lambda lib, x, s: x.put(_on(lib, x, [[0, -1], [5, 7]]), s),
           standard_samples(((3, 4), (2, 2))), dtypes=FEW_DTYPES),
    OpInfo("put_accumulate", lambda lib, x, s: lib.put(x, _on(lib, x, [1, 1, 0, -12]), s, True),
           standard_samples(((3, 4), (4,))), dtypes=("float32", "float64", "int64")),
    OpInfo("put_", lambda lib, x, s: (x * 1).put_(_on(lib, x, [2, 3]), s),
           [Sample(((3, 4), (2,)))], dtypes=F32_64),
    _refused("put_out_of_range", lambda lib, x, s: x.put(_on(lib, x, [12]), s), (3, 4), (1,)),
    _refused("put_count", lambda lib, x, s: x.put(_on(lib, x, [1, 2]), s), (3, 4), (1,)),
    _refused("put_int32_index", lambda lib, x, s: x.put(_on(lib, x, [1], lib.int32), s), (3, 4), (1,)),
    OpInfo("masked_scatter",
           lambda lib, x, s: x.masked_scatter(_on(lib, x, [[True, False, True, True]] * 3, lib.bool), s),
           standard_samples(((3, 4), (12,)), ((3, 4), (3, 4))), dtypes=FEW_DTYPES),
    OpInfo("masked_scatter_broadcast_mask",
           lambda lib, x, s: lib.masked_scatter(x, _on(lib, x, [False, True, True, False], lib.bool), s),
           [Sample(((3, 4), (2, 4)))], dtypes=F32_64),
    OpInfo("masked_scatter_", lambda lib, x, s: (x * 1).masked_scatter_(x > 0, s),
           [Sample(((3, 4), (12,)))], dtypes=F32_64),
    _refused("masked_scatter_short_source",
             lambda lib, x, s: x.masked_scatter(_on(lib, x, [True] * 4, lib.bool), s), (3, 4), (5,)),
    _refused("masked_scatter_long_mask",
             lambda lib, x, s: x.masked_scatter(_on(lib, x, [1] * 4), s), (3, 4), (12,)),
    *[_scatter_reduce_row(r, inc) for r in ("sum", "prod", "mean", "amax", "amin")
      for inc in (True, False)],
    _scatter_reduce_row("prod", True, make_input=with_zeros),
    OpInfo("scatter_reduce_larger_src", lambda lib, x, s: x.scatter_reduce(
        1, _on(lib, x, [[0, 0], [1, 3], [2, 2]]), s, "amin", include_self=False),
           [Sample(((3, 4), (4, 5)))], dtypes=("float32", "int64"), grad=False, gradcheck=False),
    OpInfo("scatter_reduce_0d", lambda lib, x, s: lib.scatter_reduce(x, 0, _on(lib, x, 0), s, "amax"),
           [Sample(((), ()))], dtypes=F32_64),
    OpInfo("scatter_reduce_", lambda lib, x, s: (x * 1).scatter_reduce_(
        1, _on(lib, x, [[0, 0], [1, 0], [2, 2]]), s, "mean", include_self=False),
           [Sample(((3, 4), (3, 2)))], dtypes=F32_64),
    _refused("scatter_reduce_unknown", lambda lib, x, s: x.scatter_reduce(0, _on(lib, x, [[0]]), s, "add"),
             (3, 4), (2, 5)),
    _refused("scatter_reduce_dtype",
             lambda lib, x, s: x.scatter_reduce(0, _on(lib, x, [[0]]), s.double(), "sum"), (3, 4), (2, 5)),
    _refused("scatter_reduce_out_of_bounds",
             lambda lib, x, s: x.scatter_reduce(0, _on(lib, x, [[3]]), s, "sum"), (3, 4), (2, 5)),
    # ---- aminmax --------------------------------------------------------------------------------
    OpInfo("aminmax", lambda lib, x, **kw: lib.aminmax(x, **kw),
           [Sample(((3, 4),)), Sample(((3, 4),), {"dim": 1}), Sample(((2, 3, 4),), {"dim": -1, "keepdim": True}),
            Sample(((3, 4),), {"keepdim": True}), Sample(((),)), Sample(((),), {"dim": 0}),
            Sample(((3, 4),), {"dim": 0}, noncontig=True)],
           dtypes=FEW_DTYPES, make_input=distinct_values),
    OpInfo("aminmax_method", lambda lib, x: x.aminmax(dim=0).max, [Sample(((3, 4),))],
           dtypes=F32_64, make_input=distinct_values),
    _refused("aminmax_empty", lambda lib, x: lib.aminmax(x), (0, 3)),
    _refused("aminmax_empty_dim", lambda lib, x: lib.aminmax(x, dim=0), (0, 3)),
]
