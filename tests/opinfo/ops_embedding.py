"""Rows for ``ember/ops/embedding.py``: ``F.embedding`` / ``torch.embedding`` (with
``padding_idx``, ``scale_grad_by_freq`` and ``max_norm``), ``F.embedding_bag`` in its sum, mean
and max modes (2-D input, or 1-D input with offsets, ``include_last_offset``, per-sample weights,
``padding_idx``), the ATen form ``torch.embedding_bag`` (whose four outputs include torch's
bookkeeping tensors) and ``F.one_hot``.

Indices and offsets are integer arrays (no gradient). Tensor arguments are (indices, weight) for
embedding and (indices, weight[, offsets[, per_sample_weights]]) for the bags.
"""
import numpy as np

from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")
ROWS = 6          # every weight has 6 rows
LENGTH = 7        # every 1-D bag input has 7 indices
# The first k of these offsets for k bags: the third bag is empty; the fifth is the end.
OFFSETS = (0, 2, 2, 5, LENGTH)


def F(lib):
    return lib.nn.functional


def _errors(name, fn, samples, **row):
    """Calls torch refuses: Ember raises the same exception type."""
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False, **row)


def lookups(rng, shape, dtype, index):
    """Indices in [0, ROWS) first, offsets into a LENGTH-long input third (clipped to an empty
    input's 0), uniform values elsewhere."""
    if index == 0:
        return rng.integers(0, ROWS, size=shape)
    if index == 2:
        k = int(np.prod(shape))
        cap = 0 if k == 1 else LENGTH
        return np.minimum(np.array(OFFSETS[:k], dtype=np.int64), cap).reshape(shape)
    return rng.uniform(-2.0, 2.0, size=shape)


def classes(rng, shape, dtype, index):
    return rng.integers(0, 5, size=shape)


def _embedding(lib, x, w, **kw):
    return F(lib).embedding(x, w, **kw)


def _bag(mode, **fixed):
    def fn(lib, x, w, offsets=None, weights=None, **kw):
        return F(lib).embedding_bag(x, w, offsets, mode=mode, per_sample_weights=weights,
                                    **fixed, **kw)
    return fn


def _aten_bag(mode):
    # torch binds include_last_offset and padding_idx by position only
    def fn(lib, w, x, offsets, include_last_offset=False, padding_idx=None):
        return lib.embedding_bag(w, x, offsets, False, mode, False, None, include_last_offset,
                                 padding_idx)
    return fn


EMBEDDING = [
    Sample([(3, 4), (ROWS, 3)]),
    Sample([(5,), (ROWS, 3)]),
    Sample([(2, 3, 2), (ROWS, 3)]),
    Sample([(), (ROWS, 3)]),                      # a 0-d index: one row
    Sample([(0,), (ROWS, 3)]),                    # no indices
    Sample([(2, 0), (ROWS, 3)]),
    Sample([(3, 4), (ROWS, 0)]),                  # rows of no columns
    Sample([(3, 4), (ROWS, 3)], noncontig=True),
]
# The gradient is by design not the derivative here (none for the padding row, each row's
# divided by its count), so these rows run no gradcheck, as torch's own would fail.
EMBEDDING_PADDING = [
    Sample([(3, 4), (ROWS, 3)], {"padding_idx": 0}),
    Sample([(3, 4), (ROWS, 3)], {"padding_idx": -2}),  # counted from the end
    Sample([(0,), (ROWS, 3)], {"padding_idx": 0}),
    Sample([(3, 4), (ROWS, 3)], {"padding_idx": 2}, noncontig=True),
]
EMBEDDING_SCALED = [
    Sample([(4, 5), (ROWS, 3)], {"scale_grad_by_freq": True}),
    Sample([(4, 5), (ROWS, 3)], {"scale_grad_by_freq": True, "padding_idx": 1}),
    Sample([(4, 5), (ROWS, 3)], {"scale_grad_by_freq": True}, noncontig=True),
]
# Mode-independent bag layouts: (indices, weight[, offsets]).
BAGS = [
    Sample([(3, 4), (ROWS, 3)]),                  # fixed-length bags
    Sample([(LENGTH,), (ROWS, 3), (4,)]),         # offsets, one bag empty
    Sample([(LENGTH,), (ROWS, 3), (5,)], {"include_last_offset": True}),
    Sample([(LENGTH,), (ROWS, 3), (1,)]),         # one bag of everything
    Sample([(3, 4), (ROWS, 3)], {"padding_idx": 1}),
    Sample([(LENGTH,), (ROWS, 3), (4,)], {"padding_idx": -1}),
    Sample([(0, 4), (ROWS, 3)]),                  # no bags
    Sample([(0,), (ROWS, 3), (1,)]),              # one empty bag
    Sample([(3, 4), (ROWS, 3)], noncontig=True),
    Sample([(LENGTH,), (ROWS, 3), (4,)], noncontig=True),
]
# mode="sum" only: per-sample weights, shaped like the indices.
BAGS_WEIGHTED = [
    Sample([(LENGTH,), (ROWS, 3), (4,), (LENGTH,)]),
    Sample([(LENGTH,), (ROWS, 3), (5,), (LENGTH,)], {"include_last_offset": True}),
    Sample([(LENGTH,), (ROWS, 3), (4,), (LENGTH,)], {"padding_idx": 3}),
    Sample([(LENGTH,), (ROWS, 3), (4,), (LENGTH,)], noncontig=True),
]
# The ATen form's tensors are (weight, indices, offsets).
ATEN_BAGS = [
    Sample([(ROWS, 3), (LENGTH,), (4,)]),
    Sample([(ROWS, 3), (LENGTH,), (5,)], {"include_last_offset": True}),
    Sample([(ROWS, 3), (LENGTH,), (4,)], {"padding_idx": 2}),
    Sample([(ROWS, 3), (LENGTH,), (4,)], noncontig=True),
]


def aten_lookups(rng, shape, dtype, index):
    """``lookups`` for the ATen argument order (weight, indices, offsets)."""
    return lookups(rng, shape, dtype, {0: 1, 1: 0}.get(index, index))


def weighted_lookups(rng, shape, dtype, index):
    """``lookups`` for (indices, weight, per_sample_weights), without offsets."""
    return lookups(rng, shape, dtype, 3 if index == 2 else index)


OPS = [
    OpInfo("F.embedding", _embedding, EMBEDDING, dtypes=DTYPES, make_input=lookups),
    OpInfo("F.embedding_padding_idx", _embedding, EMBEDDING_PADDING, dtypes=DTYPES,
           make_input=lookups, gradcheck=False),
    OpInfo("F.embedding_scale_grad_by_freq", _embedding, EMBEDDING_SCALED, dtypes=DTYPES,
           make_input=lookups, gradcheck=False),
    # torch.embedding counts "no padding index" as -1 and takes the weight first.
    OpInfo("torch.embedding", lambda lib, w, x, *args: lib.embedding(w, x, *args),
           [Sample([(ROWS, 3), (3, 4)]), Sample([(ROWS, 3), (3, 4)], args=(-1,)),
            Sample([(ROWS, 3), (0,)])],
           dtypes=("float32", "float64"), make_input=aten_lookups),
    OpInfo("torch.embedding_padding_idx", lambda lib, w, x, *args: lib.embedding(w, x, *args),
           [Sample([(ROWS, 3), (3, 4)], args=(1,)), Sample([(ROWS, 3), (4, 5)], args=(-1, True)),
            Sample([(ROWS, 3), (4, 5)], args=(2, True))],
           dtypes=("float32", "float64"), make_input=aten_lookups, gradcheck=False),
    OpInfo("F.embedding_int32_indices", lambda lib, x, w: F(lib).embedding(x.int(), w),
           [Sample([(3, 4), (ROWS, 3)])], dtypes=("float32", "float64"), make_input=lookups),
    # max_norm renormalises the looked-up rows of the weight in place, without a gradient.
    OpInfo("F.embedding_max_norm",
           lambda lib, x, w, **kw: F(lib).embedding(x, w.clone(), max_norm=1.0, **kw),
           [Sample([(3, 4), (ROWS, 3)]), Sample([(3, 4), (ROWS, 3)], {"norm_type": 1.0})],
           dtypes=("float32", "float64"), make_input=lookups, grad=False, gradcheck=False),
    OpInfo("F.embedding_bag_sum", _bag("sum"), BAGS, dtypes=DTYPES, make_input=lookups),
    OpInfo("F.embedding_bag_mean", _bag("mean"), BAGS, dtypes=DTYPES, make_input=lookups),
    OpInfo("F.embedding_bag_max", _bag("max"), BAGS, dtypes=DTYPES, make_input=lookups),
    OpInfo("F.embedding_bag_per_sample_weights", _bag("sum"), BAGS_WEIGHTED, dtypes=DTYPES,
           make_input=lookups),
    OpInfo("F.embedding_bag_per_sample_weights_2d",
           lambda lib, x, w, weights: F(lib).embedding_bag(x, w, mode="sum",
                                                           per_sample_weights=weights),
           [Sample([(3, 4), (ROWS, 3), (3, 4)]), Sample([(0, 4), (ROWS, 3), (0, 4)]),
            Sample([(3, 4), (ROWS, 3), (3, 4)], noncontig=True)],
           dtypes=DTYPES, make_input=weighted_lookups),
    OpInfo("F.embedding_bag_scale_grad_by_freq", _bag("mean", scale_grad_by_freq=True),
           [Sample([(3, 4), (ROWS, 3)]), Sample([(LENGTH,), (ROWS, 3), (4,)])],
           dtypes=("float32", "float64"), make_input=lookups, gradcheck=False),
    OpInfo("torch.embedding_bag_sum", _aten_bag(0), ATEN_BAGS, dtypes=("float32", "float64"),
           make_input=aten_lookups),
    OpInfo("torch.embedding_bag_mean", _aten_bag(1), ATEN_BAGS, dtypes=("float32", "float64"),
           make_input=aten_lookups),
    OpInfo("torch.embedding_bag_max", _aten_bag(2), ATEN_BAGS, dtypes=("float32", "float64"),
           make_input=aten_lookups),
    OpInfo("F.one_hot", lambda lib, x, *args: F(lib).one_hot(x, *args),
           [Sample([(6,)]), Sample([(2, 3)], args=(7,)), Sample([()], args=(5,)),
            Sample([(0,)], args=(3,)), Sample([(2, 3)], noncontig=True)],
           dtypes=("int64",), make_input=classes, grad=False, gradcheck=False),
    _errors("F.one_hot_errors", lambda lib, x, *args: F(lib).one_hot(x, *args),
            [Sample([(6,)], args=(3,)), Sample([(0,)])], make_input=classes),
    _errors("F.embedding_errors", _embedding,
            [Sample([(3, 4), (ROWS,)])], make_input=lookups),
    _errors("F.embedding_bag_errors", lambda lib, x, w, offsets=None, **kw:
            F(lib).embedding_bag(x, w, offsets, **kw),
            [Sample([(LENGTH,), (ROWS, 3)]),                       # 1-D input, no offsets
             Sample([(3, 4), (ROWS, 3), (3,)]),                    # 2-D input with offsets
             Sample([(2, 3, 4), (ROWS, 3)]),                       # 3-D input
             Sample([(3, 4), (ROWS, 3)], {"mode": "prod"}),
             Sample([(3, 4), (ROWS, 3)], {"mode": "max", "scale_grad_by_freq": True})],
            make_input=lookups),
]
