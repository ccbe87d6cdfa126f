"""Rows for indexing: ``x[key]`` in all its forms, gather/scatter, index_select/index_add, masks,
nonzero and sorting. Index tensors are built inside each row on the input's device."""
from .core import OpInfo, Sample, standard_samples, ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES
from .ops_reduce import distinct_values, with_zeros


def _on(lib, like, data, dtype=None):
    """An index (or mask) tensor with ``data`` on ``like``'s device."""
    return lib.tensor(data, device=like.device, dtype=dtype)


def _mask(lib, like, data):
    return _on(lib, like, data, lib.bool)


def _refused(name, fn, *shape_sets, **kwargs):
    """A row whose inputs PyTorch refuses: Ember must raise the same exception type."""
    return OpInfo(name, fn, [Sample(s) for s in shape_sets], grad=False, gradcheck=False, **kwargs)


S34 = ((3, 4),)
S234 = ((2, 3, 4),)
# Rows' masks and integer indices below are written for these shapes.
MASK34 = [[True, False, True, False], [False, False, False, False], [True, True, False, True]]
IDX_GATHER = [[0, 2, 1, 0], [2, 2, 0, 1]]          # (2, 4) indices into dim 0 of a (3, 4) input
IDX_SCATTER = [[0, 2, 1, 1], [2, 0, 0, 2]]         # no (row, column) written twice


def _samples(*shape_sets):
    return standard_samples(*shape_sets)


# For the rows of index_fill ... scatter_reduce.
F32 = ("float32",)
F32_64 = ("float32", "float64")
FEW_DTYPES = ("float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool")

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


def _sort_input(rng, shape, dtype, index):
    """Values without ties for float dtypes (so every sort order is unique)."""
    import numpy as np
    n = int(np.prod(shape)) if shape else 1
    if dtype in INT_DTYPES or dtype == "bool":
        from .core import make_array
        return make_array(rng, shape, dtype)
    return (rng.permutation(n).reshape(shape) / n * 4 - 2).astype(np.float64)


IDX_INDEX_REDUCE = [0, 2, 1, 0, 2]


def _index_reduce_row(reduce, include_self):
    def fn(lib, x, src):
        return x.index_reduce(0, _on(lib, x, IDX_INDEX_REDUCE), src, reduce,
                              include_self=include_self)
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


OPS = [
    # ---- basic indexing: views -------------------------------------------------------------
    OpInfo("getitem_int", lambda lib, x: x[1], _samples(S34, ((5,),)), dtypes=ALL_DTYPES,
           gradgrad=True),
    OpInfo("getitem_neg_int", lambda lib, x: x[-1, -2], _samples(S34, S234)),
    OpInfo("getitem_ints_all", lambda lib, x: x[1, 2], _samples(S34), dtypes=ALL_DTYPES),
    OpInfo("getitem_slice_step", lambda lib, x: x[::2, 1:3], _samples(S34, S234),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("getitem_ellipsis", lambda lib, x: x[..., 1], _samples(S234, ((4,),))),
    OpInfo("getitem_ellipsis_middle", lambda lib, x: x[1, ..., 1:], _samples(S234)),
    OpInfo("getitem_ellipsis_only", lambda lib, x: x[...], _samples(S34, ((),))),
    OpInfo("getitem_none", lambda lib, x: x[None, :, None, 1], _samples(S34)),
    OpInfo("getitem_none_0d", lambda lib, x: x[None], _samples(((),))),
    OpInfo("getitem_0d_tensor_index", lambda lib, x: x[_on(lib, x, 2)], _samples(S34)),
    _refused("getitem_int_oob", lambda lib, x: x[3], S34),
    _refused("getitem_neg_int_oob", lambda lib, x: x[:, -5], S34),
    _refused("getitem_too_many", lambda lib, x: x[0, 0, 0], S34),
    _refused("getitem_0d_int", lambda lib, x: x[0], ((),)),
    _refused("getitem_float", lambda lib, x: x[1.5], S34),
    _refused("getitem_zero_step", lambda lib, x: x[::0], S34),
    # ---- advanced indexing: copies ---------------------------------------------------------
    OpInfo("getitem_long", lambda lib, x: x[_on(lib, x, [2, 0, 1])], _samples(S34),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("getitem_long_repeated", lambda lib, x: x[_on(lib, x, [1, 1, 0, 1])],
           _samples(S34, ((4,),)), dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("getitem_long_negative", lambda lib, x: x[_on(lib, x, [-1, 0, -3])], _samples(S34)),
    OpInfo("getitem_long_2d", lambda lib, x: x[_on(lib, x, [[0, 2], [1, 1]])], _samples(S34)),
    OpInfo("getitem_long_pair", lambda lib, x: x[_on(lib, x, [0, 2, 2]), _on(lib, x, [3, 1, 3])],
           _samples(S34), dtypes=ALL_DTYPES),
    OpInfo("getitem_long_broadcast",
           lambda lib, x: x[_on(lib, x, [[0], [2]]), _on(lib, x, [1, 1, 3])], _samples(S34)),
    OpInfo("getitem_int32_index", lambda lib, x: x[_on(lib, x, [2, 0], lib.int32)], _samples(S34)),
    OpInfo("getitem_list", lambda lib, x: x[[0, 2, 0]], _samples(S34)),
    OpInfo("getitem_empty_index", lambda lib, x: x[_on(lib, x, [], lib.int64)], _samples(S34)),
    OpInfo("getitem_slice_then_long", lambda lib, x: x[1:, _on(lib, x, [0, 3, 0])],
           _samples(S34), dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("getitem_int_then_long", lambda lib, x: x[1, :, _on(lib, x, [3, 0])], _samples(S234)),
    # Advanced indices separated by a slice: the indexed dimension moves to the front.
    OpInfo("getitem_split_advanced",
           lambda lib, x: x[_on(lib, x, [1, 0]), :, _on(lib, x, [2, 3])], _samples(S234)),
    OpInfo("getitem_none_and_long", lambda lib, x: x[None, ..., _on(lib, x, [1, 1])], _samples(S34)),
    OpInfo("getitem_ellipsis_long", lambda lib, x: x[..., _on(lib, x, [0, 3, 3])], _samples(S234)),
    OpInfo("getitem_mask", lambda lib, x: x[_mask(lib, x, MASK34)], _samples(S34),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("getitem_row_mask", lambda lib, x: x[_mask(lib, x, [True, False, True])],
           _samples(S34, ((3, 2),))),
    OpInfo("getitem_mask_then_slice", lambda lib, x: x[_mask(lib, x, [False, True, True]), 1:],
           _samples(S34)),
    OpInfo("getitem_slice_then_mask", lambda lib, x: x[:, _mask(lib, x, [True, False, False, True])],
           _samples(S34)),
    OpInfo("getitem_all_false_mask", lambda lib, x: x[_mask(lib, x, [False] * 3)], _samples(S34)),
    OpInfo("getitem_0d_mask", lambda lib, x: x[_on(lib, x, True)], _samples(S34, ((),))),
    OpInfo("getitem_uint8_mask", lambda lib, x: x[_on(lib, x, [1, 0, 1], lib.uint8)],
           [Sample(S34)], grad=False, gradcheck=False),
    _refused("getitem_long_oob", lambda lib, x: x[_on(lib, x, [0, 3])], S34),
    _refused("getitem_long_neg_oob", lambda lib, x: x[:, _on(lib, x, [-5])], S34),
    _refused("getitem_float_index", lambda lib, x: x[_on(lib, x, [0.0, 1.0])], S34),
    _refused("getitem_mask_bad_shape", lambda lib, x: x[_mask(lib, x, [True, False])], S34),
    _refused("getitem_index_mismatch",
             lambda lib, x: x[_on(lib, x, [0, 1]), _on(lib, x, [0, 1, 2])], S34),
    # ---- gather / scatter ------------------------------------------------------------------
    OpInfo("gather", lambda lib, x: x.gather(0, _on(lib, x, IDX_GATHER)), _samples(S34),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("gather_dim1", lambda lib, x: lib.gather(x, 1, _on(lib, x, [[3, 3], [0, 1], [2, 2]])),
           _samples(S34)),
    OpInfo("gather_neg_dim", lambda lib, x: x.gather(-1, _on(lib, x, [[3], [0], [2]])),
           _samples(S34)),
    OpInfo("gather_int32_index", lambda lib, x: x.gather(0, _on(lib, x, [[2, 0]], lib.int32)),
           _samples(S34)),
    _refused("gather_negative_index", lambda lib, x: x.gather(1, _on(lib, x, [[-1], [0], [1]])), S34),
    _refused("gather_int16_index", lambda lib, x: x.gather(0, _on(lib, x, [[0]], lib.int16)), S34),
    _refused("gather_index_too_big", lambda lib, x: x.gather(0, _on(lib, x, [[0] * 5])), S34),
    OpInfo("gather_1d", lambda lib, x: x.gather(0, _on(lib, x, [4, 0, 0, 2])), _samples(((5,),))),
    _refused("gather_oob", lambda lib, x: x.gather(0, _on(lib, x, [[3, 0, 0, 0]])), S34),
    _refused("gather_rank_mismatch", lambda lib, x: x.gather(0, _on(lib, x, [0, 1])), S34),
    OpInfo("scatter_src", lambda lib, x, s: x.scatter(0, _on(lib, x, IDX_SCATTER), s),
           _samples(((3, 4), (2, 4))), dtypes=ALL_DTYPES, gradgrad=True),
    # PyTorch's own backward fails when src is larger than index (it returns a gradient shaped
    # like index); Ember pads it to src's shape, which gradcheck confirms.
    OpInfo("scatter_src_larger", lambda lib, x, s: lib.scatter(x, 1, _on(lib, x, [[0, 3], [2, 1]]), s),
           _samples(((3, 4), (3, 5))), grad=False),
    OpInfo("scatter_int32_index", lambda lib, x: x.scatter(0, _on(lib, x, [[1, 2]], lib.int32), 0.5),
           _samples(S34)),
    _refused("scatter_index_larger_than_src",
             lambda lib, x, s: x.scatter(0, _on(lib, x, [[0, 1]]), s), ((3, 4), (1, 1))),
    OpInfo("scatter_value", lambda lib, x: x.scatter(0, _on(lib, x, IDX_SCATTER), 1.5),
           _samples(S34), dtypes=FLOAT_DTYPES),
    OpInfo("scatter_value_kw", lambda lib, x: lib.scatter(x, 1, _on(lib, x, [[0], [3], [1]]), value=-2),
           _samples(S34), dtypes=ALL_DTYPES[:-1]),
    OpInfo("scatter_add", lambda lib, x, s: x.scatter_add(0, _on(lib, x, [[0, 0, 1, 1], [0, 2, 1, 1]]), s),
           _samples(((3, 4), (2, 4))), dtypes=ALL_DTYPES[:-1], gradgrad=True),
    OpInfo("scatter_add_dim1", lambda lib, x, s: lib.scatter_add(x, -1, _on(lib, x, [[1, 1, 1]] * 3), s),
           _samples(((3, 4), (3, 3)))),
    _refused("scatter_oob", lambda lib, x, s: x.scatter(0, _on(lib, x, [[3, 0, 0, 0]]), s),
             ((3, 4), (1, 4))),
    _refused("scatter_dtype_mismatch",
             lambda lib, x, s: x.scatter(0, _on(lib, x, [[0]]), s.double()), ((3, 4), (1, 1))),
    # ---- index_select / index_add ----------------------------------------------------------
    OpInfo("index_select", lambda lib, x: x.index_select(0, _on(lib, x, [2, 0, 2])),
           _samples(S34), dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("index_select_dim", lambda lib, x: lib.index_select(x, -1, _on(lib, x, [3, 1])),
           _samples(S234)),
    OpInfo("index_select_int32", lambda lib, x: x.index_select(1, _on(lib, x, [3, 3], lib.int32)),
           _samples(S34)),
    OpInfo("index_select_0d_index", lambda lib, x: x.index_select(0, _on(lib, x, 1)), _samples(S34)),
    _refused("index_select_oob", lambda lib, x: x.index_select(0, _on(lib, x, [3])), S34),
    _refused("index_select_float", lambda lib, x: x.index_select(0, _on(lib, x, [0.0])), S34),
    _refused("index_select_2d", lambda lib, x: x.index_select(0, _on(lib, x, [[0]])), S34),
    _refused("index_select_negative", lambda lib, x: x.index_select(0, _on(lib, x, [-1])), S34),
    OpInfo("index_add", lambda lib, x, s: x.index_add(0, _on(lib, x, [2, 0, 2]), s),
           _samples(((3, 4), (3, 4))), dtypes=ALL_DTYPES[:-1], gradgrad=True),
    OpInfo("index_add_alpha", lambda lib, x, s: lib.index_add(x, 1, _on(lib, x, [1, 1]), s, alpha=2),
           _samples(((3, 4), (3, 2)))),
    _refused("index_add_oob", lambda lib, x, s: x.index_add(0, _on(lib, x, [5]), s), ((3, 4), (1, 4))),
    _refused("index_add_negative", lambda lib, x, s: x.index_add(0, _on(lib, x, [-1]), s),
             ((3, 4), (1, 4))),
    _refused("index_add_bad_shape", lambda lib, x, s: x.index_add(0, _on(lib, x, [0]), s),
             ((3, 4), (1, 3))),
    OpInfo("index_add_0d_index", lambda lib, x, s: x.index_add(0, _on(lib, x, 1), s),
           _samples(((3,), (1,)))),
    OpInfo("index_add_0d_self", lambda lib, x, s: x.index_add(0, _on(lib, x, [0]), s),
           _samples(((), ()))),
    _refused("index_add_rank_mismatch", lambda lib, x, s: x.index_add(1, _on(lib, x, [0]), s),
             ((2, 3), (2, 1, 1)), ((), (1,)), ((3,), ())),
    _refused("index_add_float_index", lambda lib, x, s: x.index_add(0, _on(lib, x, [0.0]), s),
             ((3, 4), (1, 4))),
    _refused("index_add_bad_count", lambda lib, x, s: x.index_add(0, _on(lib, x, [0]), s),
             ((3, 4), (2, 4))),
    _refused("index_add_dtype", lambda lib, x, s: x.index_add(0, _on(lib, x, [0]), s.double()),
             ((3, 4), (1, 4)), dtypes=("float32",)),
    # ---- masks -----------------------------------------------------------------------------
    OpInfo("masked_fill", lambda lib, x: x.masked_fill(_mask(lib, x, MASK34), -1.5),
           _samples(S34), dtypes=FLOAT_DTYPES, gradgrad=True),
    OpInfo("masked_fill_int_value", lambda lib, x: x.masked_fill(_mask(lib, x, MASK34), 3),
           _samples(S34), dtypes=ALL_DTYPES),
    OpInfo("masked_fill_broadcast", lambda lib, x: lib.masked_fill(x, _mask(lib, x, [True, False, True, True]), 0.5),
           _samples(S34, S234)),
    OpInfo("masked_fill_tensor_value", lambda lib, x, v: x.masked_fill(_mask(lib, x, MASK34), v),
           _samples(((3, 4), ())), gradgrad=True),
    _refused("masked_fill_value_not_0d", lambda lib, x, v: x.masked_fill(_mask(lib, x, MASK34), v),
             ((3, 4), (1,))),
    _refused("masked_fill_uint8_mask",
             lambda lib, x: x.masked_fill(_on(lib, x, [1, 0, 1, 1], lib.uint8), 0.0), S34),
    OpInfo("masked_select", lambda lib, x: x.masked_select(_mask(lib, x, MASK34)), _samples(S34),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("masked_select_broadcast",
           lambda lib, x: lib.masked_select(x, _mask(lib, x, [False, True, True, False])),
           _samples(S34)),
    OpInfo("take_along_dim", lambda lib, x: lib.take_along_dim(x, _on(lib, x, [[0, 2, 1, 0]]), 0),
           _samples(S34), dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("take_along_dim_argsort", lambda lib, x: x.take_along_dim(x.argsort(1), dim=1),
           _samples(S34), make_input=_sort_input),
    OpInfo("take_along_dim_flat", lambda lib, x: lib.take_along_dim(x, _on(lib, x, [11, 0, 5])),
           _samples(S34)),
    OpInfo("take", lambda lib, x: x.take(_on(lib, x, [[11, 0], [5, 5]])), _samples(S34)),
    OpInfo("nonzero", lambda lib, x: (x > 0).nonzero(), _samples(S34, ((),), ((0, 3),), S234),
           dtypes=ALL_DTYPES, grad=False, gradcheck=False),
    OpInfo("nonzero_tuple", lambda lib, x: lib.nonzero(x, as_tuple=True),
           _samples(S34, ((),), ((5,),)), dtypes=ALL_DTYPES, grad=False, gradcheck=False),
    OpInfo("argwhere", lambda lib, x: lib.argwhere(x), _samples(S34), dtypes=ALL_DTYPES,
           grad=False, gradcheck=False),
    OpInfo("where_cond", lambda lib, x: lib.where(x > 0), _samples(S34, ((),), S234),
           dtypes=ALL_DTYPES, grad=False, gradcheck=False),
    # ---- sorting ---------------------------------------------------------------------------
    OpInfo("sort", lambda lib, x: x.sort(), _samples(S34, ((),), ((5,),), ((0, 3),)),
           make_input=_sort_input, gradgrad=True),
    OpInfo("sort_stable", lambda lib, x: lib.sort(x, dim=0, stable=True), _samples(S34, ((6,),)),
           make_input=_sort_input, dtypes=ALL_DTYPES),
    OpInfo("sort_descending", lambda lib, x: x.sort(0, descending=True), _samples(S34, S234),
           make_input=_sort_input),
    OpInfo("sort_descending_stable",
           lambda lib, x: lib.sort(x, dim=1, descending=True, stable=True),
           _samples(S34), make_input=_sort_input, dtypes=ALL_DTYPES),
    OpInfo("sort_values", lambda lib, x: x.sort(-2).values * 2, _samples(S234),
           make_input=_sort_input),
    OpInfo("argsort", lambda lib, x: x.argsort(), _samples(S34, ((),)), make_input=_sort_input,
           grad=False, gradcheck=False),
    OpInfo("argsort_descending", lambda lib, x: lib.argsort(x, 0, descending=True),
           _samples(S34), make_input=_sort_input, grad=False, gradcheck=False),
    OpInfo("argsort_stable", lambda lib, x: lib.argsort(x, dim=0, stable=True),
           _samples(((8,),), S34), make_input=_sort_input, dtypes=ALL_DTYPES, grad=False,
           gradcheck=False),
    OpInfo("topk", lambda lib, x: x.topk(2), _samples(S34, ((5,),)), make_input=_sort_input,
           gradgrad=True),
    OpInfo("topk_smallest", lambda lib, x: lib.topk(x, 2, dim=0, largest=False), _samples(S34),
           make_input=_sort_input),
    OpInfo("topk_all", lambda lib, x: x.topk(4, 1), _samples(S34), make_input=_sort_input),
    OpInfo("topk_zero", lambda lib, x: x.topk(0), _samples(S34), make_input=_sort_input),
    OpInfo("topk_0d", lambda lib, x: x.topk(1), _samples(((),)), make_input=_sort_input),
    _refused("topk_too_many", lambda lib, x: x.topk(5), S34),
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
    _refused("index_fill_int32_index",
             lambda lib, x: x.index_fill(0, _on(lib, x, [0], lib.int32), 1.0),
             ((3, 4),), dtypes=F32),
    _refused("index_fill_out_of_bounds", lambda lib, x: x.index_fill(0, _on(lib, x, [3]), 1.0),
             ((3, 4),), dtypes=F32),
    _refused("index_fill_2d_index", lambda lib, x: x.index_fill(0, _on(lib, x, [[0]]), 1.0),
             ((3, 4),), dtypes=F32),
    _refused("index_fill_1d_value", lambda lib, x, v: x.index_fill(0, _on(lib, x, [0]), v),
             ((3, 4), (1,)), dtypes=F32),
    OpInfo("index_copy", lambda lib, x, s: x.index_copy(1, _on(lib, x, [3, 0]), s),
           standard_samples(((3, 4), (3, 2))), dtypes=FEW_DTYPES),
    OpInfo("index_copy_top", lambda lib, x, s: lib.index_copy(x, 0, _on(lib, x, [2, 0]), s),
           [Sample(((3, 4), (2, 4)))], dtypes=F32_64),
    OpInfo("index_copy_", lambda lib, x, s: (x * 1).index_copy_(0, _on(lib, x, [1]), s),
           [Sample(((3, 4), (1, 4)))], dtypes=F32_64),
    _refused("index_copy_count", lambda lib, x, s: x.index_copy(1, _on(lib, x, [3, 0]), s),
             ((3, 4), (3, 3)), dtypes=F32),
    _refused("index_copy_negative", lambda lib, x, s: x.index_copy(1, _on(lib, x, [-1]), s),
             ((3, 4), (3, 1)), dtypes=F32),
    _refused("index_copy_dtype", lambda lib, x, s: x.index_copy(1, _on(lib, x, [0]), s.double()),
             ((3, 4), (3, 1)), dtypes=F32),
    _refused("index_copy_slice_shape", lambda lib, x, s: x.index_copy(1, _on(lib, x, [0]), s),
             ((3, 4), (2, 1)), dtypes=F32),
    OpInfo("put", lambda lib, x, s: x.put(_on(lib, x, [[0, -1], [5, 7]]), s),
           standard_samples(((3, 4), (2, 2))), dtypes=FEW_DTYPES),
    OpInfo("put_accumulate", lambda lib, x, s: lib.put(x, _on(lib, x, [1, 1, 0, -12]), s, True),
           standard_samples(((3, 4), (4,))), dtypes=("float32", "float64", "int64")),
    OpInfo("put_", lambda lib, x, s: (x * 1).put_(_on(lib, x, [2, 3]), s),
           [Sample(((3, 4), (2,)))], dtypes=F32_64),
    _refused("put_out_of_range", lambda lib, x, s: x.put(_on(lib, x, [12]), s),
             ((3, 4), (1,)), dtypes=F32),
    _refused("put_count", lambda lib, x, s: x.put(_on(lib, x, [1, 2]), s),
             ((3, 4), (1,)), dtypes=F32),
    _refused("put_int32_index", lambda lib, x, s: x.put(_on(lib, x, [1], lib.int32), s),
             ((3, 4), (1,)), dtypes=F32),
    OpInfo("masked_scatter",
           lambda lib, x, s: x.masked_scatter(_on(lib, x, [[True, False, True, True]] * 3, lib.bool), s),
           standard_samples(((3, 4), (12,)), ((3, 4), (3, 4))), dtypes=FEW_DTYPES),
    OpInfo("masked_scatter_broadcast_mask",
           lambda lib, x, s: lib.masked_scatter(x, _on(lib, x, [False, True, True, False], lib.bool), s),
           [Sample(((3, 4), (2, 4)))], dtypes=F32_64),
    OpInfo("masked_scatter_", lambda lib, x, s: (x * 1).masked_scatter_(x > 0, s),
           [Sample(((3, 4), (12,)))], dtypes=F32_64),
    _refused("masked_scatter_short_source",
             lambda lib, x, s: x.masked_scatter(_on(lib, x, [True] * 4, lib.bool), s),
             ((3, 4), (5,)), dtypes=F32),
    _refused("masked_scatter_long_mask",
             lambda lib, x, s: x.masked_scatter(_on(lib, x, [1] * 4), s),
             ((3, 4), (12,)), dtypes=F32),
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
    _refused("scatter_reduce_unknown",
             lambda lib, x, s: x.scatter_reduce(0, _on(lib, x, [[0]]), s, "add"),
             ((3, 4), (2, 5)), dtypes=F32),
    _refused("scatter_reduce_dtype",
             lambda lib, x, s: x.scatter_reduce(0, _on(lib, x, [[0]]), s.double(), "sum"),
             ((3, 4), (2, 5)), dtypes=F32),
    _refused("scatter_reduce_out_of_bounds",
             lambda lib, x, s: x.scatter_reduce(0, _on(lib, x, [[3]]), s, "sum"),
             ((3, 4), (2, 5)), dtypes=F32),
    # ---- index_reduce ------------------------------------------------------------------------
    *[_index_reduce_row(r, s) for r in ("prod", "mean", "amax", "amin") for s in (True, False)],
    OpInfo("index_reduce_dim1", _index_reduce_dim1, [Sample(((2, 4), (2, 3)))], dtypes=F32_64,
           make_input=distinct_values),
    OpInfo("index_reduce_", lambda lib, x, s: (x * 1).index_reduce_(
               0, _on(lib, x, IDX_INDEX_REDUCE), s, "prod"),
           [Sample(((3, 4), (5, 4)))], dtypes=F32_64, make_input=distinct_values),
    _refused("index_reduce_sum",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0, 1]), s, "sum"),
             ((3, 2), (2, 2)), dtypes=F32),
    _refused("index_reduce_float_index",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0.0, 1.0]), s, "prod"),
             ((3, 2), (2, 2)), dtypes=F32),
    _refused("index_reduce_count",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0, 1, 1]), s, "prod"),
             ((3, 2), (2, 2)), dtypes=F32),
    _refused("index_reduce_out_of_range",
             lambda lib, x, s: x.index_reduce(0, _on(lib, x, [0, 3]), s, "prod"),
             ((3, 2), (2, 2)), dtypes=F32),
]
